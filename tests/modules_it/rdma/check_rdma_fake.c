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
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
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
    uint8_t *buf; /* NRECV receive slots of BUFSZ, a region for writes, NRECV send slots */
    unsigned txn; /* sends posted: which send slot is next */
} peer;

static int cq_size_override; /* > 0: the next CQs' size */

static void peer_resources(peer *p, uint32_t send_wr) {
    p->pd = ops->alloc_pd(p->id->verbs);
    ck_assert_ptr_nonnull(p->pd);
    p->comp = ops->create_comp_channel(p->id->verbs);
    ck_assert_ptr_nonnull(p->comp);
    int cqe = cq_size_override ? cq_size_override : 4 * NRECV + 2 * (int)send_wr;
    p->cq = ops->create_cq(p->id->verbs, cqe, p, p->comp, 0);
    ck_assert_ptr_nonnull(p->cq);
    struct ibv_qp_init_attr a = {.send_cq = p->cq, .recv_cq = p->cq, .qp_type = IBV_QPT_RC};
    a.cap.max_send_wr = send_wr;
    a.cap.max_recv_wr = NRECV;
    a.cap.max_send_sge = 2;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = 64;
    ck_assert_int_eq(ops->create_qp(p->id, p->pd, &a), 0);
    ck_assert_uint_eq(a.cap.max_inline_data, 64);
    ck_assert_ptr_nonnull(p->id->qp);
    p->buf = aligned_alloc(4096, 3 * NRECV * BUFSZ);
    memset(p->buf, 0, 3 * NRECV * BUFSZ);
    p->mr = ops->reg_mr(p->pd, p->buf, 3 * NRECV * BUFSZ,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ck_assert_ptr_nonnull(p->mr);
    ck_assert_uint_ne(p->mr->lkey, p->mr->rkey);
}

static void post_recv(peer *p, int slot) {
    struct ibv_sge sge = {(uintptr_t)(p->buf + slot * BUFSZ), BUFSZ, p->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 100 + (uint64_t)slot, .sg_list = &sge, .num_sge = 1}, *bad;
    ck_assert_int_eq(ops->post_recv(p->id->qp, &wr, &bad), 0);
}

static int post_flags(peer *p, enum ibv_wr_opcode op, uint64_t wr_id, const void *src, uint32_t len,
                      uint64_t raddr, uint32_t rkey, uint32_t imm, unsigned int flags) {
    /* a slot of its own: the NIC reads it after post_send returns */
    uint8_t *slot = p->buf + (2 * NRECV + p->txn++ % NRECV) * BUFSZ;
    memcpy(slot, src, len);
    struct ibv_sge sge = {(uintptr_t)slot, len, p->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = wr_id,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = op,
                             .send_flags = flags,
                             .imm_data = imm},
                       *bad = NULL;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    int rc = ops->post_send(p->id->qp, &wr, &bad);
    if (rc) ck_assert_ptr_eq(bad, &wr);
    return rc;
}

static int post(peer *p, enum ibv_wr_opcode op, uint64_t wr_id, const void *src, uint32_t len,
                uint64_t raddr, uint32_t rkey, uint32_t imm) {
    return post_flags(p, op, wr_id, src, len, raddr, rkey, imm, IBV_SEND_SIGNALED);
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

static void listener_open_at(listener *l, uint32_t ip) {
    l->ch = ops->create_event_channel();
    ck_assert_ptr_nonnull(l->ch);
    nonblock(l->ch->fd);
    ck_assert_int_eq(ops->create_id(l->ch, &l->id, l, RDMA_PS_TCP), 0);
    memset(&l->addr, 0, sizeof(l->addr));
    l->addr.sin_family = AF_INET;
    l->addr.sin_addr.s_addr = htonl(ip);
    ck_assert_int_eq(ops->bind_addr(l->id, (struct sockaddr *)&l->addr), 0);
    ck_assert_int_eq(ops->listen(l->id, 0), 0);
    memcpy(&l->addr, ops->get_local_addr(l->id), sizeof(l->addr));
    ck_assert_int_ne(l->addr.sin_port, 0);
    /* as librdmacm: an id bound to the wildcard has no device yet */
    ck_assert(ip == INADDR_ANY ? !l->id->verbs : l->id->verbs != NULL);
    if (ip == INADDR_ANY) l->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* dial that */
}

static void listener_open(listener *l) {
    listener_open_at(l, INADDR_LOOPBACK);
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

START_TEST(test_wildcard_listener) {
    listener l, l2;
    peer c, s;
    listener_open_at(&l, INADDR_ANY);
    l2.ch = ops->create_event_channel();
    ck_assert_int_eq(ops->create_id(l2.ch, &l2.id, NULL, RDMA_PS_TCP), 0);
    struct sockaddr_in same = {.sin_family = AF_INET, .sin_port = l.addr.sin_port};
    ck_assert_int_eq(ops->bind_addr(l2.id, (struct sockaddr *)&same), -1);
    ck_assert_int_eq(errno, EADDRINUSE);
    listener_close(&l2);
    connect_pair(&l, &c, &s, 8, 7, NRECV);
    ck_assert_ptr_nonnull(s.id->verbs);
    struct sockaddr_in *local = (struct sockaddr_in *)ops->get_local_addr(s.id);
    ck_assert_uint_eq(ntohl(local->sin_addr.s_addr), INADDR_LOOPBACK);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}
END_TEST

/* destroy_id of a listener frees its address before it returns, as the
 * real CM does: binding the same ip:port right after never finds it in use,
 * and the new listener takes connections. */
START_TEST(test_rebind_after_destroy) {
    listener l;
    listener_open(&l);
    struct sockaddr_in same = l.addr;
    for (int i = 0; i < 200; i++) {
        ck_assert_int_eq(ops->destroy_id(l.id), 0);
        ck_assert_int_eq(ops->create_id(l.ch, &l.id, &l, RDMA_PS_TCP), 0);
        ck_assert_msg(ops->bind_addr(l.id, (struct sockaddr *)&same) == 0,
                      "rebind %d after destroy_id: %s", i, strerror(errno));
        ck_assert_int_eq(ops->listen(l.id, 0), 0);
    }
    peer c, s;
    connect_pair(&l, &c, &s, 8, 7, NRECV);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}
END_TEST

/* Writes far beyond what a socket buffers: the NIC queues them and resumes
 * when the wire drains (post_send never blocks on it). */
START_TEST(test_bulk_writes) {
    enum { CHUNK = 4 << 20, NWR = 16 };
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, NWR + 1, 7, NRECV);
    uint8_t *src = malloc(CHUNK), *dst = calloc(1, CHUNK);
    for (int i = 0; i < CHUNK; i++)
        src[i] = (uint8_t)(i * 7);
    struct ibv_mr *smr = ops->reg_mr(c.pd, src, CHUNK, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *dmr =
        ops->reg_mr(s.pd, dst, CHUNK, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    struct ibv_sge sge = {(uintptr_t)src, CHUNK, smr->lkey};
    for (int i = 0; i < NWR; i++) {
        struct ibv_send_wr wr = {.wr_id = (uint64_t)i,
                                 .sg_list = &sge,
                                 .num_sge = 1,
                                 .opcode =
                                     i == NWR - 1 ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE},
                           *bad;
        wr.wr.rdma.remote_addr = (uintptr_t)dst;
        wr.wr.rdma.rkey = dmr->rkey;
        wr.imm_data = htonl(CHUNK);
        ck_assert_int_eq(ops->post_send(c.id->qp, &wr, &bad), 0);
    }
    struct ibv_wc wc;
    cq_expect(s.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    ck_assert_uint_eq(wc.byte_len, CHUNK);
    ck_assert_int_eq(memcmp(src, dst, CHUNK), 0);
    ck_assert_int_eq(ops->poll_cq(c.cq, 1, &wc), 0); /* none signalled */
    ck_assert_int_eq(ops->dereg_mr(smr), 0);
    ck_assert_int_eq(ops->dereg_mr(dmr), 0);
    free(src);
    free(dst);
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

/* A WR with bad local memory behind one in flight: the first completes,
 * then the bad one with LOC_PROT_ERR, each once and in order. */
START_TEST(test_local_error_in_order) {
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, 8, 7, NRECV);
    uint64_t region = (uintptr_t)(s.buf + NRECV * BUFSZ);
    struct ibv_sge good = {(uintptr_t)c.buf, 8, c.mr->lkey};
    struct ibv_sge outside = {(uintptr_t)(c.buf + 3 * NRECV * BUFSZ), 1, c.mr->lkey};
    struct ibv_send_wr w2 = {.wr_id = 2,
                             .sg_list = &outside,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED};
    struct ibv_send_wr w1 = {.wr_id = 1,
                             .next = &w2,
                             .sg_list = &good,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad = NULL;
    w1.wr.rdma.remote_addr = w2.wr.rdma.remote_addr = region;
    w1.wr.rdma.rkey = w2.wr.rdma.rkey = s.mr->rkey;
    ck_assert_int_eq(ops->post_send(c.id->qp, &w1, &bad), 0); /* one post: sent together */
    struct ibv_wc wc;
    cq_expect(c.cq, &wc);
    ck_assert_uint_eq(wc.wr_id, 1);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    cq_expect(c.cq, &wc);
    ck_assert_uint_eq(wc.wr_id, 2);
    ck_assert_int_eq(wc.status, IBV_WC_LOC_PROT_ERR);
    for (int i = 0; i < NRECV / 2; i++) { /* then only the receives, flushed */
        cq_expect(c.cq, &wc);
        ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
        ck_assert_uint_ge(wc.wr_id, 100);
    }
    ck_assert_int_eq(ops->poll_cq(c.cq, 1, &wc), 0);
    ck_assert_int_eq(c.id->qp->state, IBV_QPS_ERR);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}
END_TEST

/* SEND_WITH_IMM, an inline SEND (its source reusable at once), and a local
 * sge outside its lkey's region: LOC_PROT_ERR and the QP in error. */
START_TEST(test_imm_inline_local_error) {
    listener l;
    peer c, s;
    listener_open(&l);
    client_start(&c, &l.addr, 8, 7);
    server_accept(&s, &l, 8, 7, NRECV);
    cm_expect(c.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    cm_expect(l.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    ck_assert_int_eq(post(&c, IBV_WR_SEND_WITH_IMM, 1, "imm", 4, 0, 0, htonl(42)), 0);
    struct ibv_wc wc;
    cq_expect(s.cq, &wc);
    ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
    ck_assert_int_ne(wc.wc_flags & IBV_WC_WITH_IMM, 0);
    ck_assert_uint_eq(ntohl(wc.imm_data), 42);
    ck_assert_str_eq((char *)s.buf, "imm");
    cq_expect(c.cq, &wc);

    char stack_msg[] = "inline"; /* not registered: inline needs no lkey */
    struct ibv_sge sge = {(uintptr_t)stack_msg, sizeof(stack_msg), 0};
    struct ibv_send_wr wr = {.wr_id = 2,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE},
                       *bad;
    ck_assert_int_eq(ops->post_send(c.id->qp, &wr, &bad), 0);
    memset(stack_msg, 'X', sizeof(stack_msg)); /* inline: taken at post time */
    cq_expect(s.cq, &wc);
    ck_assert_str_eq((char *)s.buf + BUFSZ, "inline");
    cq_expect(c.cq, &wc);
    ck_assert_uint_eq(wc.wr_id, 2);
    static char big[65];
    sge.addr = (uintptr_t)big;
    sge.length = sizeof(big);
    ck_assert_int_eq(ops->post_send(c.id->qp, &wr, &bad), EINVAL); /* > max_inline_data */
    ck_assert_ptr_eq(bad, &wr);
    sge.addr = (uintptr_t)stack_msg;
    sge.length = sizeof(stack_msg);
    teardown_pair(&l, &c, &s);

    client_start(&c, &l.addr, 8, 7);
    server_accept(&s, &l, 8, 7, NRECV);
    cm_expect(c.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    cm_expect(l.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    sge.lkey = c.mr->lkey; /* a registered key, but not covering the stack */
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr_id = 3;
    ck_assert_int_eq(ops->post_send(c.id->qp, &wr, &bad), 0);
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_LOC_PROT_ERR);
    ck_assert_uint_eq(wc.wr_id, 3);
    ck_assert_int_eq(c.id->qp->state, IBV_QPS_ERR);
    ck_assert_int_eq(ops->disconnect(c.id), 0);
    cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    cm_expect(l.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
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
    uint64_t raddr = wrong_key ? region : region + 2 * NRECV * BUFSZ - 4; /* past the end */
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

    rdma_fake_set_faults(&(rdma_fake_faults){.rnr_retry = 2}); /* overrides the 7 asked */
    connect_pair(&l, &c, &s, 8, 7, 0);
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 3, "x", 1, 0, 0, 0), 0);
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
    rdma_fake_set_faults(&(rdma_fake_faults){0});
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

/* Unsignalled WRs keep their send queue slots after they are acknowledged,
 * until a later signalled WR completes: the application cannot know of them
 * sooner, so neither may the queue. */
START_TEST(test_unsignalled_slots) {
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, 4, 7, 1); /* one receive: for the third write's immediate */
    uint64_t region = (uintptr_t)(s.buf + NRECV * BUFSZ);
    for (int i = 1; i <= 2; i++)
        ck_assert_int_eq(post_flags(&c, IBV_WR_RDMA_WRITE, (uint64_t)i, "u", 1,
                                    region + (uint64_t)i, s.mr->rkey, 0, 0),
                         0);
    ck_assert_int_eq(
        post_flags(&c, IBV_WR_RDMA_WRITE_WITH_IMM, 3, "u", 1, region + 3, s.mr->rkey, 3, 0), 0);
    struct ibv_wc wc;
    cq_expect(s.cq, &wc); /* the third write arrived: all three are acknowledged ... */
    ck_assert_int_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    /* ... and their ACKs precede this SEND on the wire back to c */
    ck_assert_int_eq(post(&s, IBV_WR_SEND, 50, "k", 1, 0, 0, 0), 0);
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
    ck_assert_int_eq(ops->poll_cq(c.cq, 1, &wc), 0); /* nothing for the unsignalled three */
    /* one slot left of four, though the three are done; a SEND with no
     * receive posted there stays outstanding in it */
    ck_assert_int_eq(post(&c, IBV_WR_SEND, 4, "s", 1, 0, 0, 0), 0);
    ck_assert_int_eq(post(&c, IBV_WR_RDMA_WRITE, 5, "s", 1, region + 5, s.mr->rkey, 0), ENOMEM);
    post_recv(&s, 1);
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    ck_assert_uint_eq(wc.wr_id, 4);
    /* its completion frees its slot and those of the three before it */
    for (int i = 6; i < 10; i++)
        ck_assert_int_eq(
            post(&c, IBV_WR_RDMA_WRITE, (uint64_t)i, "s", 1, region + (uint64_t)i, s.mr->rkey, 0),
            0);
    for (int i = 6; i < 10; i++) {
        cq_expect(c.cq, &wc);
        ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
        ck_assert_uint_eq(wc.wr_id, (uint64_t)i);
    }
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}
END_TEST

/* Unsignalled WRs still outstanding when the QP fails are flushed, and the
 * flush frees every slot. */
START_TEST(test_unsignalled_flushed) {
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, 2, 7, NRECV);
    uint64_t region = (uintptr_t)(s.buf + NRECV * BUFSZ);
    ck_assert_int_eq(post_flags(&c, IBV_WR_RDMA_WRITE, 1, "u", 1, region, s.mr->rkey, 0, 0), 0);
    ck_assert_int_eq(post_flags(&c, IBV_WR_RDMA_WRITE, 2, "u", 1, region, s.mr->rkey, 0, 0), 0);
    ck_assert_int_eq(post(&c, IBV_WR_RDMA_WRITE, 3, "u", 1, region, s.mr->rkey, 0), ENOMEM);
    ck_assert_int_eq(ops->disconnect(c.id), 0);
    cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    cm_expect(l.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    ck_assert_int_eq(c.id->qp->state, IBV_QPS_ERR);
    /* in error a post completes at once (flushed): it needs a free slot all the same */
    ck_assert_int_eq(post(&c, IBV_WR_RDMA_WRITE, 4, "u", 1, region, s.mr->rkey, 0), 0);
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

/* More completions than the CQ holds: an error of that CQ, not a crash. */
START_TEST(test_cq_overrun) {
    listener l;
    peer c, s;
    listener_open(&l);
    client_start(&c, &l.addr, 8, 7);
    cq_size_override = 2;
    server_accept(&s, &l, 8, 7, 3);
    cq_size_override = 0;
    cm_expect(c.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    cm_expect(l.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    struct ibv_wc wc;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(post(&c, IBV_WR_SEND, (uint64_t)i, "a", 1, 0, 0, 0), 0);
        cq_expect(c.cq, &wc); /* so the server's three completions are in */
    }
    ck_assert_int_lt(ops->poll_cq(s.cq, 1, &wc), 0);
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
    /* an address bound and not listening: nobody else can listen there */
    struct rdma_cm_id *idle;
    ck_assert_int_eq(ops->create_id(l.ch, &idle, NULL, RDMA_PS_TCP), 0);
    struct sockaddr_in nobody = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(ops->bind_addr(idle, (struct sockaddr *)&nobody), 0);
    memcpy(&nobody, ops->get_local_addr(idle), sizeof(nobody));
    client_start(&c, &nobody, 4, 7);
    struct rdma_cm_event *ev = cm_expect(c.ch, RDMA_CM_EVENT_REJECTED, 1);
    ck_assert_int_eq(ev->status, ECONNREFUSED);
    ck_assert_int_eq(ops->ack_cm_event(ev), 0);
    peer_free(&c, 1);
    ck_assert_int_eq(ops->destroy_id(idle), 0);

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

/* IPv6 addresses, and the CM alone (no QP on either side). */
START_TEST(test_ipv6_cm_only) {
    struct rdma_event_channel *lch = ops->create_event_channel(),
                              *cch = ops->create_event_channel();
    nonblock(lch->fd);
    nonblock(cch->fd);
    struct rdma_cm_id *lid, *cid;
    ck_assert_int_eq(ops->create_id(lch, &lid, NULL, RDMA_PS_TCP), 0);
    ck_assert_int_eq(ops->create_id(cch, &cid, NULL, RDMA_PS_TCP), 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    ck_assert_int_eq(ops->bind_addr(lid, (struct sockaddr *)&a), 0);
    ck_assert_int_eq(ops->listen(lid, 4), 0);
    memcpy(&a, ops->get_local_addr(lid), sizeof(a));
    ck_assert_int_ne(a.sin6_port, 0);
    ck_assert_int_eq(ops->resolve_addr(cid, NULL, (struct sockaddr *)&a, 100), 0);
    cm_expect(cch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
    ck_assert_int_eq(ops->get_local_addr(cid)->sa_family, AF_INET6);
    ck_assert_int_eq(ops->connect(cid, NULL), -1); /* the route is not resolved */
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(ops->resolve_route(cid, 100), 0);
    cm_expect(cch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
    ck_assert_int_eq(ops->connect(cid, NULL), 0);
    struct rdma_cm_event *ev = cm_expect(lch, RDMA_CM_EVENT_CONNECT_REQUEST, 1);
    struct rdma_cm_id *child = ev->id;
    ck_assert_int_eq(child->route.addr.dst_addr.sa_family, AF_INET6);
    ck_assert_int_eq(ops->ack_cm_event(ev), 0);
    ck_assert_int_eq(ops->accept(child, NULL), 0);
    cm_expect(cch, RDMA_CM_EVENT_ESTABLISHED, 0);
    cm_expect(lch, RDMA_CM_EVENT_ESTABLISHED, 0);
    ck_assert_int_eq(ops->disconnect(child), 0);
    cm_expect(lch, RDMA_CM_EVENT_DISCONNECTED, 0);
    cm_expect(cch, RDMA_CM_EVENT_DISCONNECTED, 0);
    ck_assert_int_eq(ops->disconnect(lid), -1); /* a listener is not connected */
    ck_assert_int_eq(ops->destroy_id(child), 0);
    ck_assert_int_eq(ops->destroy_id(cid), 0);
    ck_assert_int_eq(ops->destroy_id(lid), 0);
    ops->destroy_event_channel(lch);
    ops->destroy_event_channel(cch);
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

enum { SINK_SIZE = 4 << 20, SINK_WR = 16 };

/* A server that advertises a SINK_SIZE region by a SEND (address, rkey),
 * then only waits for the disconnect. */
static int child_sink(int port_fd) {
    listener l;
    peer s;
    listener_open(&l);
    if (write(port_fd, &l.addr, sizeof(l.addr)) != sizeof(l.addr)) return 1;
    server_accept(&s, &l, 8, 7, NRECV);
    cm_expect(l.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    uint8_t *sink = malloc(SINK_SIZE);
    struct ibv_mr *mr =
        ops->reg_mr(s.pd, sink, SINK_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    uint8_t msg[12];
    uint64_t addr = (uintptr_t)sink;
    memcpy(msg, &addr, 8);
    memcpy(msg + 8, &mr->rkey, 4);
    if (post(&s, IBV_WR_SEND, 1, msg, sizeof(msg), 0, 0, 0)) return 2;
    cm_expect(l.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    struct ibv_wc wc;
    while (ops->poll_cq(s.cq, 1, &wc) > 0) {
    }
    ops->dereg_mr(mr);
    free(sink);
    peer_free(&s, 0);
    listener_close(&l);
    counts_zero();
    return 0;
}

START_TEST(test_child_sink) {
    ck_assert_int_eq(child_sink(child_fd), 0);
}
END_TEST

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

/* A peer that stops reading (its process is stopped): post_send queues in
 * the NIC and returns, ENOMEM past max_send_wr, and everything completes
 * once the peer reads again. */
START_TEST(test_stopped_peer) {
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = spawn_self("sink", p[1]);
    ck_assert_int_ge(pid, 0);
    close(p[1]);
    struct sockaddr_in addr;
    ck_assert_int_eq(read(p[0], &addr, sizeof(addr)), (ssize_t)sizeof(addr));
    close(p[0]);
    peer c;
    client_start(&c, &addr, SINK_WR, 7);
    cm_expect(c.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
    struct ibv_wc wc;
    cq_expect(c.cq, &wc);
    ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
    uint64_t raddr;
    uint32_t rkey;
    memcpy(&raddr, c.buf + (wc.wr_id - 100) * BUFSZ, 8);
    memcpy(&rkey, c.buf + (wc.wr_id - 100) * BUFSZ + 8, 4);
    uint8_t *src = calloc(1, SINK_SIZE);
    struct ibv_mr *smr = ops->reg_mr(c.pd, src, SINK_SIZE, IBV_ACCESS_LOCAL_WRITE);
    ck_assert_int_eq(kill(pid, SIGSTOP), 0);
    struct ibv_sge sge = {(uintptr_t)src, SINK_SIZE, smr->lkey};
    struct ibv_send_wr wr = {.sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    for (int i = 0; i < SINK_WR; i++) {
        wr.wr_id = (uint64_t)i;
        ck_assert_int_eq(ops->post_send(c.id->qp, &wr, &bad), 0);
    }
    ck_assert_int_eq(ops->post_send(c.id->qp, &wr, &bad), ENOMEM);
    ck_assert_int_eq(kill(pid, SIGCONT), 0);
    for (int i = 0; i < SINK_WR; i++) {
        cq_expect(c.cq, &wc);
        ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
        ck_assert_uint_eq(wc.wr_id, (uint64_t)i);
    }
    ck_assert_int_eq(ops->disconnect(c.id), 0);
    cm_expect(c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    while (ops->poll_cq(c.cq, 1, &wc) > 0) {
    }
    ck_assert_int_eq(ops->dereg_mr(smr), 0);
    free(src);
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

/* Objects made and destroyed from several threads at once, so that the NIC
 * thread starts and stops under them (TSan watches). No ck_assert in the
 * threads: check's marks are not thread-safe. */
static void *churn(void *arg) {
    long bad = 0;
    static char mem[256];
    for (int i = 0; i < 200; i++) {
        struct rdma_event_channel *ch = ops->create_event_channel();
        struct rdma_cm_id *id;
        struct rdma_cm_event *ev;
        struct sockaddr_in dst = {
            .sin_family = AF_INET, .sin_port = htons(9), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        bad += !ch || ops->create_id(ch, &id, arg, RDMA_PS_TCP);
        bad += ops->resolve_addr(id, NULL, (struct sockaddr *)&dst, 100) != 0;
        bad += ops->get_cm_event(ch, &ev) != 0 || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED;
        bad += ops->ack_cm_event(ev) != 0;
        struct ibv_pd *pd = ops->alloc_pd(id->verbs);
        struct ibv_mr *mr = ops->reg_mr(pd, mem, sizeof(mem), IBV_ACCESS_LOCAL_WRITE);
        bad += !mr || ops->dereg_mr(mr) != 0;
        bad += ops->dealloc_pd(pd) != 0;
        bad += ops->destroy_id(id) != 0;
        ops->destroy_event_channel(ch);
    }
    return (void *)bad;
}

/* A sender thread keeps up to 8 SENDs in flight, each from its own slot,
 * reusing a slot only after its completion. */
enum { STREAM_N = 3000, STREAM_DEPTH = 8 };

static void *stream_sender(void *arg) {
    peer *c = arg;
    long bad = 0;
    uint32_t done = 0;
    for (uint32_t seq = 0; seq < STREAM_N || done < STREAM_N;) {
        if (seq < STREAM_N && seq - done < STREAM_DEPTH) {
            uint8_t *slot = c->buf + (2 * NRECV + seq % STREAM_DEPTH) * BUFSZ;
            memcpy(slot, &seq, sizeof(seq));
            struct ibv_sge sge = {(uintptr_t)slot, sizeof(seq), c->mr->lkey};
            struct ibv_send_wr wr = {.wr_id = seq,
                                     .sg_list = &sge,
                                     .num_sge = 1,
                                     .opcode = IBV_WR_SEND,
                                     .send_flags = IBV_SEND_SIGNALED},
                               *bw;
            bad += ops->post_send(c->id->qp, &wr, &bw) != 0;
            seq++;
            continue;
        }
        struct ibv_wc wc;
        int n = ops->poll_cq(c->cq, 1, &wc);
        if (n == 1) {
            bad += wc.status != IBV_WC_SUCCESS || wc.wr_id != done;
            done++;
        } else if (n < 0 || bad) {
            break;
        }
    }
    return (void *)bad;
}

START_TEST(test_stream_threads) {
    listener l;
    peer c, s;
    listener_open(&l);
    connect_pair(&l, &c, &s, STREAM_DEPTH, 7, NRECV);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, stream_sender, &c), 0);
    for (uint32_t want = 0; want < STREAM_N; want++) {
        struct ibv_wc wc;
        cq_expect(s.cq, &wc);
        ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
        uint32_t got;
        memcpy(&got, s.buf + (wc.wr_id - 100) * BUFSZ, sizeof(got));
        ck_assert_uint_eq(got, want); /* in order, intact */
        post_recv(&s, (int)(wc.wr_id - 100));
    }
    void *bad;
    pthread_join(t, &bad);
    ck_assert_ptr_null(bad);
    teardown_pair(&l, &c, &s);
    listener_close(&l);
    counts_zero();
}
END_TEST

START_TEST(test_threads) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, churn, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *bad;
        pthread_join(t[i], &bad);
        ck_assert_ptr_null(bad);
    }
    counts_zero();
}
END_TEST

static int run_self_asan(const char *mode, const char *env, const char *asan);

static int thread_count(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "Threads:", 8)) n = atoi(line + 8);
    if (f) fclose(f);
    return n;
}

/* The fake inside a dlclose()d object: its destructor joins the NIC thread
 * even with an object left alive. In a child of its own (probe-dlclose),
 * where leak detection is off: the object left alive is the point. */
static int dlclose_probe(void) {
    int before = thread_count();
    void *so = dlopen(FAKE_DL_PROBE, RTLD_NOW | RTLD_LOCAL);
    if (!so) return 10;
    int (*start)(void) = (int (*)(void))dlsym(so, "fake_dl_probe_start");
    if (!start || start() != 0) return 11;
    int during = thread_count(); /* TSan may have started a thread of its own too */
    if (during <= before) return 12;
    if (dlclose(so) != 0) return 13;
    return thread_count() == during - 1 ? 0 : 14;
}

START_TEST(test_dlclose) {
    ck_assert_int_eq(run_self_asan("probe-dlclose", "", "detect_leaks=0"), 0);
}
END_TEST

/* KEEL_RDMA_FAKE, read by a fresh copy of this program (see main). */
/* Runs this program in mode with KEEL_RDMA_FAKE=env (and ASAN_OPTIONS=asan
 * if not NULL): its exit status, or 128 + the signal that ended it. */
static int run_self_asan(const char *mode, const char *env, const char *asan) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv("KEEL_RDMA_FAKE", env, 1);
        if (asan) setenv("ASAN_OPTIONS", asan, 1);
        execl("/proc/self/exe", "check_rdma_fake", mode, (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

static int run_self(const char *mode, const char *env) {
    return run_self_asan(mode, env, NULL);
}

START_TEST(test_env) {
    ck_assert_int_eq(run_self("probe-no-device", "no_device=1"), 0);
    ck_assert_int_eq(run_self("probe-no-device", "max_send_wr=3"), 1);
    ck_assert_int_eq(run_self("probe-caps", "leak_check=1,max_send_wr=3,max_recv_wr=2"), 0);
    ck_assert_int_eq(run_self("probe-leak", "leak_check=1"), 3);
    ck_assert_int_eq(run_self("probe-leak", "leak_check=0"), 0);
    ck_assert_int_eq(run_self("probe-no-device", "bogus=1"), 128 + 6); /* SIGABRT */
    ck_assert_int_eq(run_self("probe-double-destroy", ""), 128 + 6);
    ck_assert_int_eq(run_self("probe-use-after-destroy", ""), 128 + 6);
}
END_TEST

static int probe(const char *mode) {
    ops = rdma_ops_get();
    if (!strcmp(mode, "probe-no-device")) {
        int n;
        struct ibv_device **list = ops->get_device_list(&n);
        if (!list) return errno == ENOSYS ? 0 : 2;
        ops->free_device_list(list);
        return 1;
    }
    if (!strcmp(mode, "probe-double-destroy") || !strcmp(mode, "probe-use-after-destroy")) {
        struct rdma_event_channel *ch = ops->create_event_channel();
        struct rdma_event_channel *keep = ops->create_event_channel(); /* not reused */
        (void)keep;
        ops->destroy_event_channel(ch);
        struct rdma_cm_id *id;
        if (!strcmp(mode, "probe-double-destroy"))
            ops->destroy_event_channel(ch);
        else
            ops->create_id(ch, &id, NULL, RDMA_PS_TCP);
        return 0; /* not reached */
    }
    if (!strcmp(mode, "probe-dlclose")) return dlclose_probe();
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
        tcase_add_test(tc, !strcmp(argv[1], "server") ? test_child_server
                           : !strcmp(argv[1], "sink") ? test_child_sink
                                                      : test_child_dies);
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
    tcase_add_test(tc, test_wildcard_listener);
    tcase_add_test(tc, test_rebind_after_destroy);
    tcase_add_test(tc, test_write_imm);
    tcase_add_test(tc, test_bulk_writes);
    tcase_add_test(tc, test_imm_inline_local_error);
    tcase_add_test(tc, test_local_error_in_order);
    tcase_add_test(tc, test_write_out_of_bounds);
    tcase_add_test(tc, test_write_wrong_rkey);
    tcase_add_test(tc, test_rnr);
    tcase_add_test(tc, test_max_send_wr);
    tcase_add_test(tc, test_unsignalled_slots);
    tcase_add_test(tc, test_unsignalled_flushed);
    tcase_add_test(tc, test_create_qp_caps);
    tcase_add_test(tc, test_cq_events);
    tcase_add_test(tc, test_cq_overrun);
    tcase_add_test(tc, test_destroy_id_drops_events);
    tcase_add_test(tc, test_disconnect);
    tcase_add_test(tc, test_qp_error);
    tcase_add_test(tc, test_vanish);
    tcase_add_test(tc, test_flush_sends);
    tcase_add_test(tc, test_no_listener_and_reject);
    tcase_add_test(tc, test_ipv6_cm_only);
    tcase_add_test(tc, test_corrupt_frames);
    tcase_add_test(tc, test_faults);
    tcase_add_test(tc, test_fork);
    tcase_add_test(tc, test_stopped_peer);
    tcase_add_test(tc, test_peer_process_dies);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_stream_threads);
    tcase_add_test(tc, test_dlclose);
    tcase_add_test(tc, test_env);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
