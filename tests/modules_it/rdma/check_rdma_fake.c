/* check_rdma_fake.c -- unit tests of the fake RDMA device (rdma_fake.h),
 * through its rdma_ops table as the module calls it: both peers in this
 * process, and a server peer in a fork()ed child; the environment knobs
 * through a re-executed copy of this program.
 *
 * Waits are bounded by a generous guard (GUARD_MS) only so that a broken
 * fake fails instead of hanging; no test depends on how fast anything is. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "rdma_fake.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GUARD_MS 20000
#define NRECV 16
#define BUFSZ 4096

static const rdma_ops *ops;

static void nonblock(int fd) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int readable(int fd, int ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Next CM event of ch, which must be of type want; acked unless keep. */
static struct rdma_cm_event *cm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
                                       int keep) {
    struct rdma_cm_event *ev = NULL;
    ck_assert_msg(readable(ch->fd, GUARD_MS), "no CM event (wanted %d)", want);
    ck_assert_int_eq(ops->get_cm_event(ch, &ev), 0);
    ck_assert_msg(ev->event == want, "CM event %d, wanted %d", ev->event, want);
    if (!keep) {
        ck_assert_int_eq(ops->ack_cm_event(ev), 0);
        return NULL;
    }
    return ev;
}

/* Polls one completion off cq (guarded). */
static void cq_expect(struct ibv_cq *cq, struct ibv_wc *wc) {
    for (int waited = 0; waited < GUARD_MS; waited++) {
        int n = ops->poll_cq(cq, 1, wc);
        ck_assert_int_ge(n, 0);
        if (n == 1) return;
        sleep_ms(1);
    }
    ck_abort_msg("no completion");
}

static void counts_zero(void) {
    rdma_fake_counts c;
    for (int waited = 0; waited < 100; waited++) {
        rdma_fake_live(&c);
        if (!c.channels && !c.ids && !c.pds && !c.cqs && !c.comp_channels && !c.qps && !c.mrs)
            return;
        sleep_ms(1);
    }
    ck_abort_msg("objects alive: ch %ld id %ld pd %ld cq %ld comp %ld qp %ld mr %ld", c.channels,
                 c.ids, c.pds, c.cqs, c.comp_channels, c.qps, c.mrs);
}

/* One side of a connection and its resources. */
typedef struct peer {
    struct rdma_event_channel *ch; /* own channel (client); the listener's (server) */
    struct rdma_cm_id *id;
    struct ibv_pd *pd;
    struct ibv_comp_channel *comp;
    struct ibv_cq *cq;
    struct ibv_mr *mr;
    uint8_t *buf; /* NRECV receive slots of BUFSZ, then a region for writes */
} peer;

static void peer_resources(peer *p, uint32_t send_wr) {
    p->pd = ops->alloc_pd(p->id->verbs);
    ck_assert_ptr_nonnull(p->pd);
    p->comp = ops->create_comp_channel(p->id->verbs);
    ck_assert_ptr_nonnull(p->comp);
    p->cq = ops->create_cq(p->id->verbs, 4 * NRECV + 2 * (int)send_wr, p, p->comp, 0);
    ck_assert_ptr_nonnull(p->cq);
    struct ibv_qp_init_attr a = {.send_cq = p->cq, .recv_cq = p->cq, .qp_type = IBV_QPT_RC};
    a.cap.max_send_wr = send_wr;
    a.cap.max_recv_wr = NRECV;
    a.cap.max_send_sge = 2;
    a.cap.max_recv_sge = 1;
    ck_assert_int_eq(ops->create_qp(p->id, p->pd, &a), 0);
    ck_assert_ptr_nonnull(p->id->qp);
    p->buf = aligned_alloc(4096, 2 * NRECV * BUFSZ);
    memset(p->buf, 0, 2 * NRECV * BUFSZ);
    p->mr = ops->reg_mr(p->pd, p->buf, 2 * NRECV * BUFSZ,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ck_assert_ptr_nonnull(p->mr);
    ck_assert_uint_ne(p->mr->lkey, p->mr->rkey);
}

static void post_recv(peer *p, int slot) {
    struct ibv_sge sge = {(uintptr_t)(p->buf + slot * BUFSZ), BUFSZ, p->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 100 + (uint64_t)slot, .sg_list = &sge, .num_sge = 1}, *bad;
    ck_assert_int_eq(ops->post_recv(p->id->qp, &wr, &bad), 0);
}

static int post(peer *p, enum ibv_wr_opcode op, uint64_t wr_id, const void *src, uint32_t len,
                uint64_t raddr, uint32_t rkey, uint32_t imm) {
    memcpy(p->buf + NRECV * BUFSZ, src, len); /* the source lies in the region */
    struct ibv_sge sge = {(uintptr_t)(p->buf + NRECV * BUFSZ), len, p->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = wr_id,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = op,
                             .send_flags = IBV_SEND_SIGNALED,
                             .imm_data = imm},
                       *bad = NULL;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    int rc = ops->post_send(p->id->qp, &wr, &bad);
    if (rc) ck_assert_ptr_eq(bad, &wr);
    return rc;
}

static void peer_free(peer *p, int own_channel) {
    if (p->id->qp) ops->destroy_qp(p->id);
    ck_assert_int_eq(ops->dereg_mr(p->mr), 0);
    ck_assert_int_eq(ops->destroy_cq(p->cq), 0);
    ck_assert_int_eq(ops->destroy_comp_channel(p->comp), 0);
    ck_assert_int_eq(ops->dealloc_pd(p->pd), 0);
    ck_assert_int_eq(ops->destroy_id(p->id), 0);
    if (own_channel) ops->destroy_event_channel(p->ch);
    free(p->buf);
}

typedef struct listener {
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id;
    struct sockaddr_in addr;
} listener;

static void listener_open(listener *l) {
    l->ch = ops->create_event_channel();
    ck_assert_ptr_nonnull(l->ch);
    nonblock(l->ch->fd);
    ck_assert_int_eq(ops->create_id(l->ch, &l->id, l, RDMA_PS_TCP), 0);
    memset(&l->addr, 0, sizeof(l->addr));
    l->addr.sin_family = AF_INET;
    l->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(ops->bind_addr(l->id, (struct sockaddr *)&l->addr), 0);
    ck_assert_int_eq(ops->listen(l->id, 0), 0);
    memcpy(&l->addr, ops->get_local_addr(l->id), sizeof(l->addr));
    ck_assert_int_ne(l->addr.sin_port, 0);
}

static void listener_close(listener *l) {
    ck_assert_int_eq(ops->destroy_id(l->id), 0);
    ops->destroy_event_channel(l->ch);
}

/* The client's half up to connect(). */
static void client_start(peer *c, const struct sockaddr_in *dst, uint32_t send_wr, int rnr) {
    memset(c, 0, sizeof(*c));
    c->ch = ops->create_event_channel();
    ck_assert_ptr_nonnull(c->ch);
    nonblock(c->ch->fd);
    ck_assert_int_eq(ops->create_id(c->ch, &c->id, c, RDMA_PS_TCP), 0);
    ck_assert_int_eq(ops->resolve_addr(c->id, NULL, (struct sockaddr *)dst, 100), 0);
    cm_expect(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
    ck_assert_ptr_nonnull(c->id->verbs);
    ck_assert_int_eq(ops->resolve_route(c->id, 100), 0);
    cm_expect(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
    peer_resources(c, send_wr);
    for (int i = 0; i < NRECV / 2; i++)
        post_recv(c, i);
    static const char hello[] = "hello";
    struct rdma_conn_param cp = {.private_data = hello,
                                 .private_data_len = sizeof(hello),
                                 .responder_resources = 1,
                                 .initiator_depth = 1,
                                 .retry_count = 7,
                                 .rnr_retry_count = (uint8_t)rnr};
    ck_assert_int_eq(ops->connect(c->id, &cp), 0);
}

/* The server's half: request, resources, accept. */
static void server_accept(peer *s, listener *l, uint32_t send_wr, int rnr, int recvs) {
    memset(s, 0, sizeof(*s));
    struct rdma_cm_event *ev = cm_expect(l->ch, RDMA_CM_EVENT_CONNECT_REQUEST, 1);
    ck_assert_ptr_eq(ev->listen_id, l->id);
    ck_assert_ptr_nonnull(ev->id);
    ck_assert_ptr_eq(ev->id->context, l); /* inherited from the listener */
    ck_assert_int_eq(ev->param.conn.private_data_len, 6);
    ck_assert_str_eq(ev->param.conn.private_data, "hello");
    ck_assert_int_eq(ev->param.conn.rnr_retry_count, rnr);
    ck_assert_int_ne(ev->param.conn.qp_num, 0);
    ck_assert_int_eq(ev->id->route.addr.dst_addr.sa_family, AF_INET);
    s->id = ev->id;
    s->ch = l->ch;
    ck_assert_int_eq(ops->ack_cm_event(ev), 0);
    peer_resources(s, send_wr);
    for (int i = 0; i < recvs; i++)
        post_recv(s, i);
    struct rdma_conn_param cp = {
        .responder_resources = 1, .initiator_depth = 1, .rnr_retry_count = (uint8_t)rnr};
    ck_assert_int_eq(ops->accept(s->id, &cp), 0);
}

static void connect_pair(listener *l, peer *c, peer *s, uint32_t send_wr, int rnr, int recvs) {
    client_start(c, &l->addr, send_wr, rnr);
    server_accept(s, l, send_wr, rnr, recvs);
    struct rdma_cm_event *ev = cm_expect(c->ch, RDMA_CM_EVENT_ESTABLISHED, 1);
    ck_assert_int_eq(ev->param.conn.qp_num, s->id->qp->qp_num);
    ck_assert_int_eq(ops->ack_cm_event(ev), 0);
    cm_expect(l->ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    ck_assert_int_eq(c->id->qp->state, IBV_QPS_RTS);
    ck_assert_int_eq(s->id->qp->state, IBV_QPS_RTS);
}

/* Disconnects c and drains both sides' DISCONNECTED, then frees all. */
static void teardown_pair(listener *l, peer *c, peer *s) {
    if (c->id->qp && c->id->qp->state != IBV_QPS_ERR) {
        ck_assert_int_eq(ops->disconnect(c->id), 0);
        cm_expect(c->ch, RDMA_CM_EVENT_DISCONNECTED, 0);
        cm_expect(l->ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    }
    ck_assert_int_eq(ops->disconnect(s->id), 0); /* a second one is harmless */
    struct ibv_wc wc;
    while (ops->poll_cq(c->cq, 1, &wc) > 0) {
    }
    while (ops->poll_cq(s->cq, 1, &wc) > 0) {
    }
    peer_free(c, 1);
    peer_free(s, 0);
}

START_TEST(test_connect_send_recv) {
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, 8, 7, NRECV);
    ck_assert_int_eq(((struct sockaddr_in *)ops->get_peer_addr(c.id))->sin_port, l.addr.sin_port);
    ck_assert_int_eq(ops->get_peer_addr(s.id)->sa_family, AF_INET);

    const char msg[] = "PING over a fake wire";
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 7, msg, sizeof(msg), 0, 0, 0), 0);
    struct ibv_wc wc;
    cq_expect(s.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
    ck_assert_uint_eq(wc.wr_id, 100);
    ck_assert_uint_eq(wc.byte_len, sizeof(msg));
    ck_assert_uint_eq(wc.qp_num, s.id->qp->qp_num);
    ck_assert_str_eq((char *)s.buf, msg);
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    ck_assert_int_eq(wc.opcode, IBV_WC_SEND);
    ck_assert_uint_eq(wc.wr_id, 7);

    /* a message longer than the receive: LOC_LEN_ERR there, REM_INV_REQ_ERR here */
    static uint8_t big[BUFSZ + 1];
    ck_assert_int_eq(post(&s, IBV_WR_SEND, 8, big, sizeof(big), 0, 0, 0), 0);
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_LOC_LEN_ERR);
    ck_assert_uint_eq(wc.wr_id, 100);
    cq_expect(s.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_REM_INV_REQ_ERR);
    ck_assert_uint_eq(wc.wr_id, 8);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}
END_TEST

START_TEST(test_write_imm) {
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, 8, 7, NRECV);
    uint64_t region = (uintptr_t)(s.buf + NRECV * BUFSZ);
    const char a[] = "plain write", b[] = "write with immediate";
    ck_assert_int_eq(post(&c, IBV_WR_RDMA_WRITE, 1, a, sizeof(a), region + 100, s.mr->rkey, 0), 0);
    struct ibv_wc wc;
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    ck_assert_int_eq(wc.opcode, IBV_WC_RDMA_WRITE);
    ck_assert_int_eq(post(&c, IBV_WR_RDMA_WRITE_WITH_IMM, 2, b, sizeof(b), region + 200, s.mr->rkey,
                          htonl(sizeof(b))),
                     0);
    cq_expect(s.cq, &wc); /* the plain write completed nothing here: this is the second */
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    ck_assert_int_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    ck_assert_int_ne(wc.wc_flags & IBV_WC_WITH_IMM, 0);
    ck_assert_uint_eq(ntohl(wc.imm_data), sizeof(b));
    ck_assert_uint_eq(wc.byte_len, sizeof(b));
    ck_assert_uint_eq(wc.wr_id, 100);
    ck_assert_str_eq((char *)s.buf + NRECV * BUFSZ + 100, a);
    ck_assert_str_eq((char *)s.buf + NRECV * BUFSZ + 200, b);
    ck_assert_int_eq(ops->poll_cq(s.cq, 1, &wc), 0);
    cq_expect(c.cq, &wc);
    ck_assert_uint_eq(wc.wr_id, 2);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}
END_TEST

/* A remote write that its rkey does not allow: REM_ACCESS_ERR, both QPs in
 * error, what was posted flushed with its wr_id. */
static void bad_write(int wrong_key) {
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, 8, 7, 2);
    uint64_t region = (uintptr_t)(s.buf + NRECV * BUFSZ);
    uint64_t raddr = wrong_key ? region : region + NRECV * BUFSZ - 4;
    uint32_t rkey = wrong_key ? s.mr->rkey + 2 : s.mr->rkey;
    ck_assert_int_eq(post(&c, IBV_WR_RDMA_WRITE_WITH_IMM, 5, "12345678", 8, raddr, rkey, 1), 0);
    struct ibv_wc wc;
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
    ck_assert_uint_eq(wc.wr_id, 5);
    ck_assert_int_eq(c.id->qp->state, IBV_QPS_ERR);
    for (int i = 0; i < NRECV / 2; i++) { /* the client's receives flushed */
        cq_expect(c.cq, &wc);
        ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
        ck_assert_uint_eq(wc.wr_id, 100 + (uint64_t)i);
    }
    for (int i = 0; i < 2; i++) { /* the server's too: its QP is in error */
        cq_expect(s.cq, &wc);
        ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
        ck_assert_uint_eq(wc.wr_id, 100 + (uint64_t)i);
    }
    ck_assert_int_eq(s.id->qp->state, IBV_QPS_ERR);
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 6, "x", 1, 0, 0, 0), 0); /* posted in error: flushed */
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
    ck_assert_uint_eq(wc.wr_id, 6);
    ck_assert_int_eq(ops->disconnect(c.id), 0);
    cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    cm_expect(l.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}

START_TEST(test_write_out_of_bounds) {
    bad_write(0);
}
END_TEST

START_TEST(test_write_wrong_rkey) {
    bad_write(1);
}
END_TEST

START_TEST(test_rnr) {
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, 8, 7, 0); /* server posts no receive */
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 1, "wait", 5, 0, 0, 0), 0);
    sleep_ms(50);
    struct ibv_wc wc;
    ck_assert_int_eq(ops->poll_cq(c.cq, 1, &wc), 0); /* retry 7 waits for the receive */
    ck_assert_int_eq(ops->poll_cq(s.cq, 1, &wc), 0);
    post_recv(&s, 3);
    cq_expect(s.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    ck_assert_uint_eq(wc.wr_id, 103);
    ck_assert_str_eq((char *)s.buf + 3 * BUFSZ, "wait");
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    teardown_pair(&l, &c, &s);

    connect_pair(&l, &c, &s, 8, 1, 0); /* retry 1: gives up */
    ck_assert_int_eq(post(&c, IBV_WR_RDMA_WRITE_WITH_IMM, 2, "x", 1,
                          (uintptr_t)(s.buf + NRECV * BUFSZ), s.mr->rkey, 0),
                     0);
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
    ck_assert_uint_eq(wc.wr_id, 2);
    ck_assert_int_eq(c.id->qp->state, IBV_QPS_ERR);
    ck_assert_str_eq(ops->wc_status_str(wc.status), "RNR retry counter exceeded");
    ck_assert_int_eq(ops->disconnect(c.id), 0);
    cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    cm_expect(l.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}
END_TEST

START_TEST(test_max_send_wr) {
    rdma_fake_set_faults(&(rdma_fake_faults){.max_send_wr = 4});
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, 64, 7, 0); /* no receive: sends stay outstanding */
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(post(&c, IBV_WR_SEND, i, "a", 1, 0, 0, 0), 0);
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 9, "a", 1, 0, 0, 0), ENOMEM);
    for (int i = 0; i < 4; i++)
        post_recv(&s, i);
    struct ibv_wc wc;
    for (int i = 0; i < 4; i++) {
        cq_expect(c.cq, &wc);
        ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
        ck_assert_uint_eq(wc.wr_id, (uint64_t)i);
    }
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 10, "a", 1, 0, 0, 0), 0); /* room again */
    post_recv(&s, 4);
    cq_expect(c.cq, &wc);
    ck_assert_uint_eq(wc.wr_id, 10);

    rdma_fake_set_faults(&(rdma_fake_faults){.fail_post_send = 2});
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 11, "a", 1, 0, 0, 0), 0);
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 12, "a", 1, 0, 0, 0), ENOMEM);
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 13, "a", 1, 0, 0, 0), 0);
    rdma_fake_set_faults(&(rdma_fake_faults){0});
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}
END_TEST

START_TEST(test_create_qp_caps) {
    rdma_fake_set_faults(&(rdma_fake_faults){.max_send_wr = 3, .max_recv_wr = 5});
    struct rdma_event_channel *ch = ops->create_event_channel();
    struct rdma_cm_id *id;
    ck_assert_int_eq(ops->create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
    struct sockaddr_in dst = {
        .sin_family = AF_INET, .sin_port = htons(1), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(ops->resolve_addr(id, NULL, (struct sockaddr *)&dst, 100), 0);
    struct ibv_device_attr da;
    ck_assert_int_eq(ops->query_device(id->verbs, &da), 0);
    ck_assert_int_gt(da.max_sge, 1);
    ck_assert_int_gt(da.max_qp_wr, 64);
    ck_assert_int_gt(da.max_cqe, 64);
    ck_assert_int_gt(id->verbs->num_comp_vectors, 0);
    struct ibv_pd *pd = ops->alloc_pd(id->verbs);
    struct ibv_cq *cq = ops->create_cq(id->verbs, 16, NULL, NULL, 0);
    struct ibv_qp_init_attr a = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC};
    a.cap.max_send_wr = 10;
    a.cap.max_recv_wr = 10;
    a.cap.max_send_sge = (uint32_t)da.max_sge + 1;
    ck_assert_int_eq(ops->create_qp(id, pd, &a), -1);
    ck_assert_int_eq(errno, EINVAL);
    a.cap.max_send_sge = (uint32_t)da.max_sge;
    rdma_fake_set_faults(
        &(rdma_fake_faults){.max_send_wr = 3, .max_recv_wr = 5, .fail_create_qp = 1});
    ck_assert_int_eq(ops->create_qp(id, pd, &a), -1);
    ck_assert_int_eq(errno, ENOMEM);
    ck_assert_int_eq(ops->create_qp(id, pd, &a), 0);
    ck_assert_uint_eq(a.cap.max_send_wr, 3);
    ck_assert_uint_eq(a.cap.max_recv_wr, 5);
    ck_assert_int_eq(id->qp->state, IBV_QPS_INIT);
    ck_assert_ptr_eq(id->qp->send_cq, cq);
    ck_assert_int_eq(ops->destroy_cq(cq), EBUSY); /* the QP uses it */
    ck_assert_int_eq(ops->dealloc_pd(pd), EBUSY);
    struct ibv_send_wr wr = {.opcode = IBV_WR_SEND}, *bad;
    ck_assert_int_eq(ops->post_send(id->qp, &wr, &bad), EINVAL); /* not connected */
    ops->destroy_qp(id);
    ck_assert_int_eq(ops->destroy_cq(cq), 0);
    ck_assert_int_eq(ops->dealloc_pd(pd), 0);
    struct rdma_cm_event *ev;
    ck_assert_int_eq(ops->get_cm_event(ch, &ev), 0); /* ADDR_RESOLVED */
    ck_assert_int_eq(ops->destroy_id(id), -1);       /* an event not acked */
    ck_assert_int_eq(errno, EBUSY);
    ck_assert_int_eq(ops->ack_cm_event(ev), 0);
    ck_assert_int_eq(ops->destroy_id(id), 0);
    ops->destroy_event_channel(ch);
    rdma_fake_set_faults(&(rdma_fake_faults){0});
    counts_zero();
}
END_TEST

START_TEST(test_cq_events) {
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, 8, 7, NRECV);
    nonblock(s.comp->fd);
    struct ibv_cq *ecq;
    void *ectx;
    struct ibv_wc wc;
    ck_assert_int_eq(ops->get_cq_event(s.comp, &ecq, &ectx), -1);
    ck_assert_int_eq(errno, EAGAIN);
    /* not armed: a completion raises no event */
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 1, "a", 1, 0, 0, 0), 0);
    cq_expect(s.cq, &wc);
    ck_assert(!readable(s.comp->fd, 0));
    /* armed: one event, however many completions */
    ck_assert_int_eq(ops->req_notify_cq(s.cq, 0), 0);
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 2, "b", 1, 0, 0, 0), 0);
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 3, "c", 1, 0, 0, 0), 0);
    ck_assert(readable(s.comp->fd, GUARD_MS));
    ck_assert_int_eq(ops->get_cq_event(s.comp, &ecq, &ectx), 0);
    ck_assert_ptr_eq(ecq, s.cq);
    ck_assert_ptr_eq(ectx, &s);
    ops->ack_cq_events(s.cq, 1);
    cq_expect(s.cq, &wc);
    cq_expect(s.cq, &wc);
    ck_assert_uint_eq(wc.wr_id, 102);
    ck_assert(!readable(s.comp->fd, 0));
    ck_assert_int_eq(ops->get_cq_event(s.comp, &ecq, &ectx), -1);
    ck_assert_int_eq(errno, EAGAIN);
    /* two armings, two events: both must be acked before destroy_cq */
    ck_assert_int_eq(ops->req_notify_cq(s.cq, 0), 0);
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 4, "d", 1, 0, 0, 0), 0);
    ck_assert(readable(s.comp->fd, GUARD_MS));
    ck_assert_int_eq(ops->get_cq_event(s.comp, &ecq, &ectx), 0);
    ops->ack_cq_events(s.cq, 1);
    ck_assert_int_eq(ops->req_notify_cq(s.cq, 0), 0);
    ck_assert_int_eq(ops->disconnect(c.id), 0); /* flushes arrive: an event */
    cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    cm_expect(l.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    ck_assert(readable(s.comp->fd, GUARD_MS));
    ck_assert_int_eq(ops->get_cq_event(s.comp, &ecq, &ectx), 0);
    ops->destroy_qp(s.id);
    ck_assert_int_eq(ops->destroy_cq(s.cq), EBUSY); /* one event not acked */
    ops->ack_cq_events(s.cq, 1);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}
END_TEST

START_TEST(test_destroy_id_drops_events) {
    struct rdma_event_channel *ch = ops->create_event_channel();
    struct rdma_cm_id *id;
    ck_assert_int_eq(ops->create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
    ck_assert_ptr_null(ops->alloc_pd(&(struct ibv_context){0})); /* not the fake's */
    struct sockaddr_in dst = {
        .sin_family = AF_INET, .sin_port = htons(1), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(ops->resolve_addr(id, NULL, (struct sockaddr *)&dst, 100), 0);
    ck_assert_int_eq(ops->resolve_route(id, 100), 0);
    ck_assert(readable(ch->fd, 0));
    ck_assert_int_eq(ops->destroy_id(id), 0); /* drops ADDR_ and ROUTE_RESOLVED */
    ck_assert(!readable(ch->fd, 0));
    nonblock(ch->fd);
    struct rdma_cm_event *ev;
    ck_assert_int_eq(ops->get_cm_event(ch, &ev), -1);
    ck_assert_int_eq(errno, EAGAIN);
    ops->destroy_event_channel(ch);
    counts_zero();
}
END_TEST

/* Each way a connection ends: both sides get DISCONNECTED and every posted
 * WR comes back flushed with its wr_id. how: 0 disconnect, 1 qp_error,
 * 2 vanish. */
static void end_connection(int how) {
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, 8, 7, 3);
    /* the server has 3 receives; the client sends with none posted there
     * beyond them, so one of its sends stays outstanding */
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(post(&c, IBV_WR_SEND, i, "a", 1, 0, 0, 0), 0);
    struct ibv_wc wc;
    for (int i = 0; i < 3; i++) {
        cq_expect(c.cq, &wc);
        ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
        cq_expect(s.cq, &wc);
        ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    }
    post_recv(&s, 10); /* and gets it: now every posted receive is used */
    cq_expect(s.cq, &wc);
    cq_expect(c.cq, &wc);
    post_recv(&s, 11);
    post_recv(&s, 12);
    int rc = how == 0   ? ops->disconnect(s.id)
             : how == 1 ? rdma_fake_qp_error(s.id)
                        : rdma_fake_vanish(s.id);
    ck_assert_int_eq(rc, 0);
    cm_expect(l.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    for (int i = 11; i <= 12; i++) {
        cq_expect(s.cq, &wc);
        ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
        ck_assert_uint_eq(wc.wr_id, 100 + (uint64_t)i);
        ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
    }
    for (int i = 0; i < NRECV / 2; i++) {
        cq_expect(c.cq, &wc);
        ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
        ck_assert_uint_eq(wc.wr_id, 100 + (uint64_t)i);
    }
    ck_assert_int_eq(c.id->qp->state, IBV_QPS_ERR);
    ck_assert_int_eq(s.id->qp->state, IBV_QPS_ERR);
    ck_assert_int_eq(rdma_fake_qp_error(s.id), -1); /* not connected any more */
    ck_assert_int_eq(errno, EINVAL);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}

START_TEST(test_disconnect) {
    end_connection(0);
}
END_TEST

START_TEST(test_qp_error) {
    end_connection(1);
}
END_TEST

START_TEST(test_vanish) {
    end_connection(2);
}
END_TEST

START_TEST(test_flush_sends) {
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, 8, 7, 0);
    /* unsignalled too: flushes always complete */
    struct ibv_sge sge = {(uintptr_t)(c.buf + NRECV * BUFSZ), 1, c.mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 40, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND},
                       *bad;
    ck_assert_int_eq(ops->post_send(c.id->qp, &wr, &bad), 0);
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 41, "b", 1, 0, 0, 0), 0);
    ck_assert_int_eq(ops->disconnect(c.id), 0);
    struct ibv_wc wc;
    int seen[2] = {0}; /* the send queue's flushes, in order, among the receive queue's */
    uint64_t next_send = 40;
    for (int i = 0; i < NRECV / 2 + 2; i++) {
        cq_expect(c.cq, &wc);
        ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
        if (wc.wr_id >= 100) continue;
        ck_assert_uint_eq(wc.wr_id, next_send);
        seen[next_send++ - 40] = 1;
    }
    ck_assert(seen[0] && seen[1]);
    cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    cm_expect(l.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}
END_TEST

START_TEST(test_no_listener_and_reject) {
    listener l;
    peer c, s;
    listener_open(&l);
    struct sockaddr_in nobody = l.addr;
    nobody.sin_port = htons((uint16_t)(ntohs(l.addr.sin_port) ^ 1));
    client_start(&c, &nobody, 4, 7);
    struct rdma_cm_event *ev = cm_expect(c.ch, RDMA_CM_EVENT_REJECTED, 1);
    ck_assert_int_eq(ev->status, ECONNREFUSED);
    ck_assert_int_eq(ops->ack_cm_event(ev), 0);
    peer_free(&c, 1);

    client_start(&c, &l.addr, 4, 7);
    ev = cm_expect(l.ch, RDMA_CM_EVENT_CONNECT_REQUEST, 1);
    struct rdma_cm_id *child = ev->id;
    ck_assert_int_eq(ops->ack_cm_event(ev), 0);
    ck_assert_int_eq(ops->reject(child, "no", 3), 0);
    ev = cm_expect(c.ch, RDMA_CM_EVENT_REJECTED, 1);
    ck_assert_int_eq(ev->param.conn.private_data_len, 3);
    ck_assert_str_eq(ev->param.conn.private_data, "no");
    ck_assert_int_eq(ops->ack_cm_event(ev), 0);
    ck_assert_int_eq(ops->destroy_id(child), 0);
    peer_free(&c, 1);

    /* a request whose client gives up before the answer */
    client_start(&c, &l.addr, 4, 7);
    ev = cm_expect(l.ch, RDMA_CM_EVENT_CONNECT_REQUEST, 1);
    child = ev->id;
    ck_assert_int_eq(ops->ack_cm_event(ev), 0);
    peer_free(&c, 1);
    memset(&s, 0, sizeof(s));
    s.id = child;
    s.ch = l.ch;
    peer_resources(&s, 4);
    /* depending on whether the client's goodbye came first: an error either way */
    ck_assert_int_eq(ops->accept(child, NULL), 0);
    ck_assert(readable(l.ch->fd, GUARD_MS));
    ck_assert_int_eq(ops->get_cm_event(l.ch, &ev), 0);
    ck_assert(ev->event == RDMA_CM_EVENT_CONNECT_ERROR || ev->event == RDMA_CM_EVENT_DISCONNECTED);
    ck_assert_ptr_eq(ev->id, child);
    ck_assert_int_eq(ops->ack_cm_event(ev), 0);
    peer_free(&s, 0);
    listener_close(&l);
    counts_zero();
}
END_TEST

/* Garbage on the listener's socket: that connection is cut, the listener
 * keeps serving. */
static int dial_raw(const struct sockaddr_in *a) {
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
    int n = snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1, "keel-rdma-fake/%s:%d", ip,
                     ntohs(a->sin_port));
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&un,
                             (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)),
                     0);
    return fd;
}

START_TEST(test_corrupt_frames) {
    listener l;
    peer c, s;
    listener_open(&l);
    static const uint8_t junk[][16] = {
        {0xde, 0xad, 0xbe, 0xef},                                     /* bad magic */
        {0x31, 0x46, 0x52, 0x4b, 5},                                  /* DATA before CONNECT */
        {0x31, 0x46, 0x52, 0x4b, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f}, /* huge length */
    };
    for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
        int fd = dial_raw(&l.addr);
        ck_assert_int_eq(write(fd, junk[i], sizeof(junk[i])), (ssize_t)sizeof(junk[i]));
        char b;
        ck_assert(readable(fd, GUARD_MS));
        ck_assert_int_eq(read(fd, &b, 1), 0); /* closed by the fake */
        close(fd);
    }
    ck_assert(!readable(l.ch->fd, 0)); /* no request came of it */
    connect_pair(&l, &c, &s, 8, 7, NRECV);
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 1, "ok", 3, 0, 0, 0), 0);
    struct ibv_wc wc;
    cq_expect(s.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}
END_TEST

START_TEST(test_faults) {
    rdma_fake_set_faults(&(rdma_fake_faults){.no_device = 1});
    int n = 5;
    errno = 0;
    ck_assert_ptr_null(ops->get_device_list(&n));
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(errno, ENOSYS);
    ck_assert_ptr_null(ops->create_event_channel());
    ck_assert_int_eq(errno, ENODEV);
    rdma_fake_set_faults(&(rdma_fake_faults){.fail_reg_mr = 3});
    struct ibv_device **list = ops->get_device_list(&n);
    ck_assert_ptr_nonnull(list);
    ck_assert_int_eq(n, 1);
    ck_assert_ptr_null(list[1]);
    ops->free_device_list(list);
    ck_assert_int_eq(ops->fork_init(), 0);

    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, 8, 7, NRECV); /* the client's and the server's reg_mr */
    static char more[64];
    ck_assert_ptr_null(ops->reg_mr(c.pd, more, sizeof(more), IBV_ACCESS_LOCAL_WRITE));
    ck_assert_int_eq(errno, ENOMEM);
    struct ibv_mr *mr = ops->reg_mr(c.pd, more, sizeof(more), IBV_ACCESS_LOCAL_WRITE);
    ck_assert_ptr_nonnull(mr);
    ck_assert_ptr_null(ops->reg_mr(c.pd, more, sizeof(more), IBV_ACCESS_REMOTE_WRITE));
    ck_assert_int_eq(errno, EINVAL); /* remote write without local write */
    ck_assert_int_eq(ops->dereg_mr(mr), 0);
    rdma_fake_counts cnt;
    rdma_fake_live(&cnt);
    ck_assert_int_eq(cnt.ids, 3);
    ck_assert_int_eq(cnt.qps, 2);
    ck_assert_int_eq(cnt.mrs, 2);
    ck_assert_int_eq(cnt.channels, 2);
    ck_assert_int_eq(cnt.cqs, 2);
    ck_assert_int_eq(cnt.comp_channels, 2);
    ck_assert_int_eq(cnt.pds, 2);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    rdma_fake_set_faults(&(rdma_fake_faults){0});
    counts_zero();
}
END_TEST

/* The server side in a child process (this program re-executed, see main):
 * it answers a SEND carrying an address and an rkey with a WRITE_WITH_IMM
 * there, then waits for the disconnect. */
static int child_server(int port_fd) {
    listener l;
    peer s;
    listener_open(&l);
    if (write(port_fd, &l.addr, sizeof(l.addr)) != sizeof(l.addr)) return 1;
    server_accept(&s, &l, 8, 7, NRECV);
    cm_expect(l.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    struct ibv_wc wc;
    cq_expect(s.cq, &wc);
    if (wc.status != IBV_WC_SUCCESS || wc.byte_len != 12) return 2;
    uint64_t raddr;
    uint32_t rkey;
    memcpy(&raddr, s.buf, 8);
    memcpy(&rkey, s.buf + 8, 4);
    const char reply[] = "from the child";
    if (post(&s, IBV_WR_RDMA_WRITE_WITH_IMM, 1, reply, sizeof(reply), raddr, rkey, htonl(77)))
        return 3;
    cq_expect(s.cq, &wc);
    if (wc.status != IBV_WC_SUCCESS) return 4;
    cm_expect(l.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    while (ops->poll_cq(s.cq, 1, &wc) > 0) {
    }
    peer_free(&s, 0);
    listener_close(&l);
    counts_zero();
    return 0;
}

static int child_fd;

START_TEST(test_child_server) {
    ck_assert_int_eq(child_server(child_fd), 0);
}
END_TEST

static pid_t spawn_self(const char *mode, int fd) {
    char arg[16];
    snprintf(arg, sizeof(arg), "%d", fd);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "check_rdma_fake", mode, arg, (char *)NULL);
        _exit(127);
    }
    return pid;
}

START_TEST(test_fork) {
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = spawn_self("server", p[1]);
    ck_assert_int_ge(pid, 0);
    close(p[1]);
    struct sockaddr_in addr;
    ck_assert_int_eq(read(p[0], &addr, sizeof(addr)), (ssize_t)sizeof(addr));
    close(p[0]);
    peer c;
    client_start(&c, &addr, 8, 7);
    cm_expect(c.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    uint8_t msg[12];
    uint64_t raddr = (uintptr_t)(c.buf + NRECV * BUFSZ + 512);
    memcpy(msg, &raddr, 8);
    memcpy(msg + 8, &c.mr->rkey, 4);
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 1, msg, sizeof(msg), 0, 0, 0), 0);
    struct ibv_wc wc;
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.opcode, IBV_WC_SEND);
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    ck_assert_uint_eq(ntohl(wc.imm_data), 77);
    ck_assert_str_eq((char *)c.buf + NRECV * BUFSZ + 512, "from the child");
    ck_assert_int_eq(ops->disconnect(c.id), 0);
    cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    while (ops->poll_cq(c.cq, 1, &wc) > 0) {
    }
    peer_free(&c, 1);
    counts_zero();
}
END_TEST

/* A peer process that dies: the survivor sees DISCONNECTED and flushes. */
static int child_dies(int port_fd) {
    listener l;
    peer s;
    listener_open(&l);
    if (write(port_fd, &l.addr, sizeof(l.addr)) != sizeof(l.addr)) return 1;
    server_accept(&s, &l, 8, 7, NRECV);
    cm_expect(l.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    _exit(0); /* no goodbye, nothing freed */
}

START_TEST(test_child_dies) {
    child_dies(child_fd);
}
END_TEST

START_TEST(test_peer_process_dies) {
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = spawn_self("die", p[1]);
    ck_assert_int_ge(pid, 0);
    close(p[1]);
    struct sockaddr_in addr;
    ck_assert_int_eq(read(p[0], &addr, sizeof(addr)), (ssize_t)sizeof(addr));
    close(p[0]);
    peer c;
    client_start(&c, &addr, 8, 7);
    cm_expect(c.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    struct ibv_wc wc;
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    while (ops->poll_cq(c.cq, 1, &wc) > 0) {
    }
    peer_free(&c, 1);
    counts_zero();
}
END_TEST

/* KEEL_RDMA_FAKE, read by a fresh copy of this program (see main). */
static int run_self(const char *mode, const char *env) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv("KEEL_RDMA_FAKE", env, 1);
        execl("/proc/self/exe", "check_rdma_fake", mode, (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

START_TEST(test_env) {
    ck_assert_int_eq(run_self("probe-no-device", "no_device=1"), 0);
    ck_assert_int_eq(run_self("probe-no-device", "max_send_wr=3"), 1);
    ck_assert_int_eq(run_self("probe-caps", "leak_check=1,max_send_wr=3,max_recv_wr=2"), 0);
    ck_assert_int_eq(run_self("probe-leak", "leak_check=1"), 3);
    ck_assert_int_eq(run_self("probe-leak", "leak_check=0"), 0);
    ck_assert_int_eq(run_self("probe-no-device", "bogus=1"), 128 + 6); /* SIGABRT */
}
END_TEST

static int probe(const char *mode) {
    ops = rdma_ops_get();
    if (!strcmp(mode, "probe-no-device")) {
        int n;
        return ops->get_device_list(&n) == NULL && errno == ENOSYS ? 0 : 1;
    }
    if (!strcmp(mode, "probe-leak")) {
        ops->create_event_channel();
        return 0;
    }
    struct rdma_event_channel *ch = ops->create_event_channel();
    struct rdma_cm_id *id;
    struct sockaddr_in dst = {
        .sin_family = AF_INET, .sin_port = htons(1), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ops->create_id(ch, &id, NULL, RDMA_PS_TCP);
    ops->resolve_addr(id, NULL, (struct sockaddr *)&dst, 100);
    struct ibv_pd *pd = ops->alloc_pd(id->verbs);
    struct ibv_cq *cq = ops->create_cq(id->verbs, 16, NULL, NULL, 0);
    struct ibv_qp_init_attr a = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC};
    a.cap.max_send_wr = a.cap.max_recv_wr = 10;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    int rc = ops->create_qp(id, pd, &a) || a.cap.max_send_wr != 3 || a.cap.max_recv_wr != 2;
    ops->destroy_qp(id);
    ops->destroy_cq(cq);
    ops->dealloc_pd(pd);
    struct rdma_cm_event *ev;
    ops->get_cm_event(ch, &ev);
    ops->ack_cm_event(ev);
    ops->destroy_id(id);
    ops->destroy_event_channel(ch);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 2) return probe(argv[1]);
    if (argc == 3) { /* a child peer, in a suite of its own so that ck_assert works */
        ops = rdma_ops_get();
        child_fd = atoi(argv[2]);
        Suite *su = suite_create("rdma_fake_child");
        TCase *tc = tcase_create("child");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, !strcmp(argv[1], "server") ? test_child_server : test_child_dies);
        suite_add_tcase(su, tc);
        SRunner *sr = srunner_create(su);
        srunner_set_fork_status(sr, CK_NOFORK);
        srunner_run_all(sr, CK_SILENT);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
    }
    ops = rdma_ops_get();
    if (ops != rdma_fake_ops()) return 1;
    Suite *su = suite_create("rdma_fake");
    TCase *tc = tcase_create("fake");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_connect_send_recv);
    tcase_add_test(tc, test_write_imm);
    tcase_add_test(tc, test_write_out_of_bounds);
    tcase_add_test(tc, test_write_wrong_rkey);
    tcase_add_test(tc, test_rnr);
    tcase_add_test(tc, test_max_send_wr);
    tcase_add_test(tc, test_create_qp_caps);
    tcase_add_test(tc, test_cq_events);
    tcase_add_test(tc, test_destroy_id_drops_events);
    tcase_add_test(tc, test_disconnect);
    tcase_add_test(tc, test_qp_error);
    tcase_add_test(tc, test_vanish);
    tcase_add_test(tc, test_flush_sends);
    tcase_add_test(tc, test_no_listener_and_reject);
    tcase_add_test(tc, test_corrupt_frames);
    tcase_add_test(tc, test_faults);
    tcase_add_test(tc, test_fork);
    tcase_add_test(tc, test_peer_process_dies);
    tcase_add_test(tc, test_env);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
