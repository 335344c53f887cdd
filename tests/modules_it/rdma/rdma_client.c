/* rdma_client.c -- the test client of Valkey's RDMA protocol (see
 * rdma_client.h): the connection stages, the resources, the control
 * messages, data in and out of the registered buffers, and the waits.
 *
 * Every work request it posts is signalled, so the send queue's use is
 * known exactly (a fault test may need to fill it) and every buffer is
 * reused only after its completion. */
#include "rdma_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RC_SLOT_LEN 64 /* room for raw control messages longer than 32 bytes */
#define RC_DEFAULT_RX (1024 * 1024)
#define RC_DEFAULT_SLOTS 1024
#define RC_DEFAULT_TIMEOUT_MS 10000
/* Work request ids: the kind in the high half, the slot in the low half. */
#define RC_WR_RECV (1ULL << 32)
#define RC_WR_SEND (2ULL << 32)
#define RC_WR_DATA (3ULL << 32)
#define RC_WR_KIND(id) ((id) & ~0xffffffffULL)
#define RC_WR_SLOT(id) ((uint32_t)((id)&0xffffffffULL))

struct rdma_client {
    rdma_client_opts o;
    rdma_client_stage stage;
    char err[256];
    int broken;       /* a protocol or local error: nothing more is tried */
    int disconnected; /* DISCONNECTED seen, or a failed completion */
    int consume;
    int need_register;               /* own RX consumed to the end: re-advertise */
    unsigned cm_seen;                /* bit per rdma_cm_event_type seen */
    enum rdma_cm_event_type cm_want; /* what rc_wait_cm waits for */
    int cm_status;                   /* status of the last REJECTED/error event */

    struct rdma_event_channel *ch;
    struct rdma_cm_id *id;
    struct ibv_pd *pd;
    struct ibv_comp_channel *cc;
    struct ibv_cq *cq;
    int qp_made;

    char *slots; /* recv_slots receive slots, then send_slots send slots */
    struct ibv_mr *slots_mr;
    unsigned char *send_busy;
    int send_cap; /* the QP's max_send_wr */
    int outstanding;

    char *rx; /* own RX buffer */
    struct ibv_mr *rx_mr;
    uint32_t rx_off, rx_pos; /* written by the server / consumed here */
    uint32_t rx_adv;         /* the length advertised (rx_size unless a test shrank it) */

    char *tx; /* staging, as large as the server's RX buffer */
    struct ibv_mr *tx_mr;
    uint32_t tx_len;

    int peer_known;
    uint64_t peer_addr;
    uint32_t peer_len, peer_rkey, peer_off;

    redisReader *rd;
    rdma_client_stats st;
};

static long long rc_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int rc_fail(rdma_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rc_fail(rdma_client *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof(c->err), fmt, ap);
    va_end(ap);
    return -1;
}

/* A protocol violation by the server or a local failure: the connection is
 * not used any further. */
static int rc_break(rdma_client *c, const char *what) {
    if (!c->broken && what) rc_fail(c, "%s", what);
    c->broken = 1;
    return -1;
}

static void *rc_page_alloc(size_t len) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t rounded = (len + page - 1) / page * page;
    void *p = NULL;
    if (posix_memalign(&p, page, rounded)) return NULL;
    memset(p, 0, rounded);
    return p;
}

static int rc_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -1 : 0;
}

rdma_client *rdma_client_new(const rdma_client_opts *opts) {
    rdma_client *c = calloc(1, sizeof(*c));
    if (!c) return NULL;
    c->o = *opts;
    if (!c->o.rx_size) c->o.rx_size = RC_DEFAULT_RX;
    c->rx_adv = c->o.rx_size;
    if (c->o.recv_slots <= 0) c->o.recv_slots = RC_DEFAULT_SLOTS;
    if (c->o.send_slots <= 0) c->o.send_slots = RC_DEFAULT_SLOTS;
    if (c->o.timeout_ms <= 0) c->o.timeout_ms = RC_DEFAULT_TIMEOUT_MS;
    c->consume = 1;
    c->rd = redisReaderCreate();
    if (!c->rd) {
        free(c);
        return NULL;
    }
    return c;
}

/* ---- work requests ---- */

static int rc_post_recv(rdma_client *c, uint32_t slot) {
    struct ibv_sge sge = {.addr = (uintptr_t)(c->slots + (size_t)slot * RC_SLOT_LEN),
                          .length = RDMA_CLIENT_CMD_LEN,
                          .lkey = c->slots_mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = RC_WR_RECV | slot, .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad = NULL;
    int rc = c->o.ops->post_recv(c->id->qp, &wr, &bad);
    if (rc) return rc_fail(c, "post_recv: %s", strerror(rc));
    return 0;
}

static int rc_post_send(rdma_client *c, struct ibv_send_wr *wr) {
    struct ibv_send_wr *bad = NULL;
    wr->send_flags |= IBV_SEND_SIGNALED;
    int rc = c->o.ops->post_send(c->id->qp, wr, &bad);
    if (rc) return rc_fail(c, "post_send: %s", strerror(rc));
    c->outstanding++;
    return 0;
}

/* ---- what comes in ---- */

static uint16_t rc_get16(const unsigned char *p) {
    return (uint16_t)(p[0] << 8 | p[1]);
}
static uint32_t rc_get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint64_t rc_get64(const unsigned char *p) {
    return (uint64_t)rc_get32(p) << 32 | rc_get32(p + 4);
}

/* The server's RX buffer, (re-)advertised: the staging buffer follows its
 * size, and writing starts over at its beginning. */
static int rc_peer_registered(rdma_client *c, const unsigned char *m) {
    uint64_t addr = rc_get64(m + 16);
    uint32_t len = rc_get32(m + 24), rkey = rc_get32(m + 28);
    if (!len) return rc_break(c, "the server advertised an empty RX buffer");
    if (len != c->tx_len) {
        if (c->tx_mr) c->o.ops->dereg_mr(c->tx_mr);
        free(c->tx);
        c->tx_mr = NULL;
        c->tx_len = 0;
        c->tx = rc_page_alloc(len);
        if (!c->tx) return rc_break(c, "out of memory for the TX staging buffer");
        c->tx_mr = c->o.ops->reg_mr(c->pd, c->tx, len, IBV_ACCESS_LOCAL_WRITE);
        if (!c->tx_mr) return rc_break(c, "reg_mr of the TX staging buffer failed");
        c->tx_len = len;
    }
    c->peer_known = 1;
    c->peer_addr = addr;
    c->peer_len = len;
    c->peer_rkey = rkey;
    c->peer_off = 0;
    c->st.server_registers++;
    return 0;
}

static int rc_on_ctrl(rdma_client *c, uint32_t slot, uint32_t byte_len) {
    const unsigned char *m = (const unsigned char *)c->slots + (size_t)slot * RC_SLOT_LEN;
    if (byte_len != RDMA_CLIENT_CMD_LEN) return rc_break(c, "control message of a wrong length");
    switch (rc_get16(m)) {
    case RDMA_OP_GET_SERVER_FEATURE:
        c->st.feature_replies++;
        c->st.server_features = rc_get64(m + 24);
        break;
    case RDMA_OP_KEEPALIVE:
        c->st.keepalives++;
        break;
    case RDMA_OP_REGISTER_XFER_MEMORY:
        if (rc_peer_registered(c, m)) return -1;
        break;
    default:
        return rc_break(c, "unexpected control message from the server");
    }
    return rc_post_recv(c, slot) ? rc_break(c, NULL) : 0;
}

static int rc_on_data(rdma_client *c, uint32_t slot, uint32_t imm_be) {
    uint32_t len = ntohl(imm_be);
    if (len > c->rx_adv - c->rx_off) return rc_break(c, "the server wrote past the RX buffer");
    c->rx_off += len;
    c->st.bytes_in += len;
    return rc_post_recv(c, slot) ? rc_break(c, NULL) : 0;
}

static int rc_on_wc(rdma_client *c, const struct ibv_wc *wc) {
    uint64_t kind = RC_WR_KIND(wc->wr_id);
    if (kind != RC_WR_RECV) {
        c->outstanding--;
        if (kind == RC_WR_SEND) c->send_busy[RC_WR_SLOT(wc->wr_id)] = 0;
    }
    if (wc->status != IBV_WC_SUCCESS) {
        if (!c->st.last_wc_status) c->st.last_wc_status = wc->status;
        c->disconnected = 1;
        return 0;
    }
    if (kind != RC_WR_RECV) return 0;
    if (wc->opcode == IBV_WC_RECV) return rc_on_ctrl(c, RC_WR_SLOT(wc->wr_id), wc->byte_len);
    if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
        return rc_on_data(c, RC_WR_SLOT(wc->wr_id), wc->imm_data);
    return rc_break(c, "unexpected receive completion");
}

static int rc_drain_cq(rdma_client *c) {
    struct ibv_wc wc[16];
    int n;
    while ((n = c->o.ops->poll_cq(c->cq, 16, wc)) > 0)
        for (int i = 0; i < n; i++)
            if (rc_on_wc(c, &wc[i])) return -1;
    return n < 0 ? rc_break(c, "poll_cq failed") : 0;
}

static void rc_on_cm(rdma_client *c, struct rdma_cm_event *ev) {
    if ((unsigned)ev->event < 32) c->cm_seen |= 1u << ev->event;
    switch (ev->event) {
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
        c->disconnected = 1;
        break;
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
        c->cm_status = ev->status;
        c->disconnected = 1;
        break;
    default:
        break;
    }
}

static int rc_drain_cm(rdma_client *c) {
    struct rdma_cm_event *ev;
    while (c->o.ops->get_cm_event(c->ch, &ev) == 0) {
        rc_on_cm(c, ev);
        c->o.ops->ack_cm_event(ev);
    }
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : rc_break(c, "get_cm_event failed");
}

static int rc_free_send_slot(rdma_client *c) {
    if (c->outstanding >= c->send_cap) return -1;
    for (int j = 0; j < c->o.send_slots; j++)
        if (!c->send_busy[j]) return j;
    return -1;
}

static int rc_send_slot(rdma_client *c, int j, const void *msg, uint32_t len) {
    char *buf = c->slots + (size_t)(c->o.recv_slots + j) * RC_SLOT_LEN;
    memcpy(buf, msg, len);
    struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = c->slots_mr->lkey};
    struct ibv_send_wr wr = {
        .wr_id = RC_WR_SEND | (uint32_t)j, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};
    if (rc_post_send(c, &wr)) return -1;
    c->send_busy[j] = 1;
    return 0;
}

static void rc_put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}
static void rc_put64(unsigned char *p, uint64_t v) {
    rc_put32(p, (uint32_t)(v >> 32));
    rc_put32(p + 4, (uint32_t)v);
}

static void rc_register_msg(unsigned char *m, uint64_t addr, uint32_t length, uint32_t rkey) {
    memset(m, 0, RDMA_CLIENT_CMD_LEN);
    m[1] = RDMA_OP_REGISTER_XFER_MEMORY;
    rc_put64(m + 16, addr);
    rc_put32(m + 24, length);
    rc_put32(m + 28, rkey);
}

/* Advertises the own RX buffer once a send slot is free (from the pump:
 * consuming may happen while the send queue is full). */
static int rc_flush_register(rdma_client *c) {
    if (!c->need_register) return 0;
    int j = rc_free_send_slot(c);
    if (j < 0) return 0;
    unsigned char m[RDMA_CLIENT_CMD_LEN];
    rc_register_msg(m, (uintptr_t)c->rx, c->rx_adv, c->rx_mr->rkey);
    c->rx_off = c->rx_pos = 0;
    c->need_register = 0;
    c->st.own_registers++;
    return rc_send_slot(c, j, m, sizeof(m)) ? rc_break(c, NULL) : 0;
}

/* Feeds what the server wrote to the reply parser; a buffer consumed to its
 * end is re-advertised. */
static int rc_absorb(rdma_client *c) {
    if (!c->consume || c->rx_pos == c->rx_off) return 0;
    if (redisReaderFeed(c->rd, c->rx + c->rx_pos, c->rx_off - c->rx_pos) != REDIS_OK)
        return rc_break(c, "hiredis reader refused the data");
    c->rx_pos = c->rx_off;
    if (c->rx_pos == c->rx_adv) c->need_register = 1;
    return rc_flush_register(c);
}

/* One round: completions and CM events already there, then a wait of up to
 * ms for more. 1 if something was ready, 0 on timeout, -1 on error. */
static int rc_wait_events(rdma_client *c, int ms) {
    if (c->cq && rc_drain_cq(c)) return -1;
    if (rc_absorb(c) || rc_flush_register(c)) return -1;
    struct pollfd p[2] = {{.fd = c->ch->fd, .events = POLLIN}, {.fd = -1, .events = POLLIN}};
    if (c->cc) p[1].fd = c->cc->fd;
    int n = poll(p, 2, ms < 0 ? 0 : ms);
    if (n < 0) return errno == EINTR ? 1 : rc_fail(c, "poll: %s", strerror(errno));
    if (n == 0) return 0;
    if ((p[0].revents & POLLIN) && rc_drain_cm(c)) return -1;
    if (p[1].revents & POLLIN) {
        struct ibv_cq *cq;
        void *ctx;
        if (c->o.ops->get_cq_event(c->cc, &cq, &ctx) == 0) {
            c->o.ops->ack_cq_events(cq, 1);
            if (c->o.ops->req_notify_cq(cq, 0)) return rc_break(c, "req_notify_cq failed");
        } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return rc_break(c, "get_cq_event failed");
        }
        if (rc_drain_cq(c)) return -1;
    }
    if (rc_absorb(c) || rc_flush_register(c)) return -1;
    return 1;
}

int rdma_client_pump(rdma_client *c, int ms) {
    long long end = rc_now_ms() + ms;
    long long left;
    while ((left = end - rc_now_ms()) > 0)
        if (rc_wait_events(c, (int)left) < 0) return -1;
    return 0;
}

/* Waits until cond holds, failing after the client's timeout or as soon as
 * the connection is broken or gone. */
static int rc_wait_for(rdma_client *c, int (*cond)(rdma_client *), const char *what) {
    long long end = rc_now_ms() + c->o.timeout_ms;
    for (;;) {
        if (c->broken) return -1;
        if (cond(c)) return 0;
        if (c->disconnected)
            return rc_fail(c, "disconnected while waiting for %s (status %d)", what,
                           c->st.last_wc_status ? c->st.last_wc_status : c->cm_status);
        long long left = end - rc_now_ms();
        if (left <= 0) return rc_fail(c, "timed out waiting for %s", what);
        if (rc_wait_events(c, (int)left) < 0) return -1;
    }
}

/* ---- the stages ---- */

static int rc_cm_seen(rdma_client *c) {
    return (c->cm_seen >> c->cm_want) & 1;
}

static int rc_wait_cm(rdma_client *c, enum rdma_cm_event_type ev, const char *what) {
    c->cm_want = ev;
    return rc_wait_for(c, rc_cm_seen, what);
}

static int rc_resolve(rdma_client *c) {
    const rdma_ops *op = c->o.ops;
    c->ch = op->create_event_channel();
    if (!c->ch) return rc_fail(c, "create_event_channel: %s", strerror(errno));
    if (rc_nonblock(c->ch->fd)) return rc_fail(c, "event channel: %s", strerror(errno));
    if (op->create_id(c->ch, &c->id, c, RDMA_PS_TCP))
        return rc_fail(c, "create_id: %s", strerror(errno));
    char port[16];
    snprintf(port, sizeof(port), "%d", c->o.port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int gai = getaddrinfo(c->o.host, port, &hints, &ai);
    if (gai) return rc_fail(c, "getaddrinfo %s: %s", c->o.host, gai_strerror(gai));
    int rc = op->resolve_addr(c->id, NULL, ai->ai_addr, c->o.timeout_ms);
    freeaddrinfo(ai);
    if (rc) return rc_fail(c, "resolve_addr: %s", strerror(errno));
    if (rc_wait_cm(c, RDMA_CM_EVENT_ADDR_RESOLVED, "ADDR_RESOLVED")) return -1;
    if (op->resolve_route(c->id, c->o.timeout_ms))
        return rc_fail(c, "resolve_route: %s", strerror(errno));
    return rc_wait_cm(c, RDMA_CM_EVENT_ROUTE_RESOLVED, "ROUTE_RESOLVED");
}

static int rc_make_qp(rdma_client *c) {
    const rdma_ops *op = c->o.ops;
    struct ibv_context *v = c->id->verbs;
    c->pd = op->alloc_pd(v);
    if (!c->pd) return rc_fail(c, "alloc_pd: %s", strerror(errno));
    c->cc = op->create_comp_channel(v);
    if (!c->cc) return rc_fail(c, "create_comp_channel: %s", strerror(errno));
    if (rc_nonblock(c->cc->fd)) return rc_fail(c, "completion channel: %s", strerror(errno));
    int cqe = c->o.recv_slots + c->o.send_slots;
    c->cq = op->create_cq(v, cqe, c, c->cc, 0);
    if (!c->cq) return rc_fail(c, "create_cq: %s", strerror(errno));
    if (op->req_notify_cq(c->cq, 0)) return rc_fail(c, "req_notify_cq failed");
    struct ibv_qp_init_attr qa = {.send_cq = c->cq,
                                  .recv_cq = c->cq,
                                  .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = (uint32_t)c->o.send_slots,
                                          .max_recv_wr = (uint32_t)c->o.recv_slots,
                                          .max_send_sge = 1,
                                          .max_recv_sge = 1}};
    if (op->create_qp(c->id, c->pd, &qa)) return rc_fail(c, "create_qp: %s", strerror(errno));
    c->qp_made = 1;
    c->send_cap =
        (int)qa.cap.max_send_wr < c->o.send_slots ? (int)qa.cap.max_send_wr : c->o.send_slots;
    if (c->send_cap <= 0) c->send_cap = c->o.send_slots;
    return 0;
}

static int rc_make_buffers(rdma_client *c) {
    const rdma_ops *op = c->o.ops;
    size_t slots_len = (size_t)(c->o.recv_slots + c->o.send_slots) * RC_SLOT_LEN;
    c->slots = rc_page_alloc(slots_len);
    c->send_busy = calloc((size_t)c->o.send_slots, 1);
    c->rx = rc_page_alloc(c->o.rx_size);
    if (!c->slots || !c->send_busy || !c->rx) return rc_fail(c, "out of memory");
    c->slots_mr = op->reg_mr(c->pd, c->slots, slots_len, IBV_ACCESS_LOCAL_WRITE);
    if (!c->slots_mr) return rc_fail(c, "reg_mr (slots): %s", strerror(errno));
    c->rx_mr =
        op->reg_mr(c->pd, c->rx, c->o.rx_size,
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (!c->rx_mr) return rc_fail(c, "reg_mr (rx): %s", strerror(errno));
    for (int i = 0; i < c->o.recv_slots; i++)
        if (rc_post_recv(c, (uint32_t)i)) return -1;
    return 0;
}

static int rc_start_connect(rdma_client *c) {
    if (rc_make_qp(c) || rc_make_buffers(c)) return -1;
    struct rdma_conn_param cp = {
        .responder_resources = 1, .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7};
    if (c->o.ops->connect(c->id, &cp)) return rc_fail(c, "connect: %s", strerror(errno));
    return 0;
}

static int rc_established(rdma_client *c) {
    if (rc_wait_cm(c, RDMA_CM_EVENT_ESTABLISHED, "ESTABLISHED") == 0) return 0;
    if (c->cm_seen & (1u << RDMA_CM_EVENT_REJECTED))
        return rc_fail(c, "rejected (status %d)", c->cm_status);
    return -1;
}

static int rc_peer_known(rdma_client *c) {
    return c->peer_known;
}
static int rc_got_feature(rdma_client *c) {
    return c->st.feature_replies > 0;
}

static int rc_send_msg(rdma_client *c, const void *m, uint32_t len);

static int rc_register_both(rdma_client *c) {
    unsigned char m[RDMA_CLIENT_CMD_LEN];
    rc_register_msg(m, (uintptr_t)c->rx, c->o.rx_size, c->rx_mr->rkey);
    if (rc_send_msg(c, m, sizeof(m))) return -1;
    c->st.own_registers++;
    return rc_wait_for(c, rc_peer_known, "the server's RegisterXferMemory");
}

static int rc_features(rdma_client *c) {
    if (c->o.no_feature) return 0;
    if (rdma_client_send_ctrl(c, RDMA_OP_GET_SERVER_FEATURE, 0, 0)) return -1;
    if (rc_wait_for(c, rc_got_feature, "the GetServerFeature answer")) return -1;
    return rdma_client_send_ctrl(c, RDMA_OP_SET_CLIENT_FEATURE, 0, 0);
}

static int rc_step(rdma_client *c) {
    switch (c->stage) {
    case RDMA_CLIENT_NEW:
        return rc_resolve(c);
    case RDMA_CLIENT_RESOLVED:
        return rc_start_connect(c);
    case RDMA_CLIENT_CONNECTING:
        return rc_established(c);
    case RDMA_CLIENT_ESTABLISHED:
        return rc_register_both(c);
    case RDMA_CLIENT_REGISTERED:
        return rc_features(c);
    case RDMA_CLIENT_READY:
        return 0;
    }
    return rc_fail(c, "bad stage");
}

int rdma_client_connect(rdma_client *c, rdma_client_stage upto) {
    while (c->stage < upto) {
        if (c->broken) return -1;
        if (rc_step(c)) return -1;
        c->stage++;
    }
    return 0;
}

const char *rdma_client_error(const rdma_client *c) {
    return c->err;
}
struct rdma_cm_id *rdma_client_cm_id(rdma_client *c) {
    return c->id;
}

/* ---- what goes out ---- */

static int rc_can_send(rdma_client *c) {
    return rc_free_send_slot(c) >= 0;
}

static int rc_send_msg(rdma_client *c, const void *m, uint32_t len) {
    if (!c->qp_made) return rc_fail(c, "not connected");
    if (len > RC_SLOT_LEN) return rc_fail(c, "control message too long");
    if (rc_wait_for(c, rc_can_send, "a free send slot")) return -1;
    return rc_send_slot(c, rc_free_send_slot(c), m, len);
}

int rdma_client_send_raw_ctrl(rdma_client *c, const void *msg, uint32_t len) {
    return rc_send_msg(c, msg, len);
}

int rdma_client_send_ctrl(rdma_client *c, uint16_t opcode, uint16_t select, uint64_t features) {
    unsigned char m[RDMA_CLIENT_CMD_LEN] = {0};
    m[0] = (unsigned char)(opcode >> 8);
    m[1] = (unsigned char)opcode;
    m[2] = (unsigned char)(select >> 8);
    m[3] = (unsigned char)select;
    rc_put64(m + 24, features);
    return rc_send_msg(c, m, sizeof(m));
}

int rdma_client_advertise(rdma_client *c, uint32_t length) {
    if (length == 0 || length > c->o.rx_size) return rc_fail(c, "advertise: bad length");
    if (c->rx_pos != c->rx_off) return rc_fail(c, "advertise: unread data in the RX buffer");
    unsigned char m[RDMA_CLIENT_CMD_LEN];
    rc_register_msg(m, (uintptr_t)c->rx, length, c->rx_mr->rkey);
    c->rx_adv = length;
    c->rx_off = c->rx_pos = 0;
    c->need_register = 0;
    c->st.own_registers++;
    return rc_send_msg(c, m, sizeof(m));
}

int rdma_client_send_register(rdma_client *c, uint64_t addr, uint32_t length, uint32_t rkey) {
    unsigned char m[RDMA_CLIENT_CMD_LEN];
    rc_register_msg(m, addr, length, rkey);
    return rc_send_msg(c, m, sizeof(m));
}

static int rc_post_write(rdma_client *c, uint32_t local_off, uint64_t raddr, uint32_t rkey,
                         uint32_t len, uint32_t imm) {
    struct ibv_sge sge = {
        .addr = (uintptr_t)(c->tx + local_off), .length = len, .lkey = c->tx_mr->lkey};
    struct ibv_send_wr wr = {.wr_id = RC_WR_DATA,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                             .imm_data = htonl(imm)};
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    return rc_post_send(c, &wr);
}

static int rc_can_write(rdma_client *c) {
    return c->peer_known && c->peer_off < c->peer_len && c->outstanding < c->send_cap;
}

int rdma_client_write(rdma_client *c, const void *buf, size_t len, size_t max_chunk) {
    const char *p = buf;
    while (len > 0) {
        if (rc_wait_for(c, rc_can_write, "room in the server's RX buffer")) return -1;
        size_t n = c->peer_len - c->peer_off;
        if (n > len) n = len;
        if (max_chunk && n > max_chunk) n = max_chunk;
        memcpy(c->tx + c->peer_off, p, n);
        if (rc_post_write(c, c->peer_off, c->peer_addr + c->peer_off, c->peer_rkey, (uint32_t)n,
                          (uint32_t)n))
            return -1;
        c->peer_off += (uint32_t)n;
        p += n;
        len -= n;
    }
    return 0;
}

int rdma_client_write_raw(rdma_client *c, uint64_t remote_addr, uint32_t rkey, const void *data,
                          uint32_t len, uint32_t imm) {
    if (!c->tx_mr) return rc_fail(c, "no TX staging buffer (the server never registered)");
    if (len > c->tx_len) return rc_fail(c, "raw write longer than the staging buffer");
    if (rc_wait_for(c, rc_can_send, "a free send slot")) return -1;
    memcpy(c->tx, data, len);
    return rc_post_write(c, 0, remote_addr, rkey, len, imm);
}

/* ---- replies ---- */

int rdma_client_read_reply(rdma_client *c, redisReply **out) {
    long long end = rc_now_ms() + c->o.timeout_ms;
    *out = NULL;
    for (;;) {
        if (c->broken) return -1;
        if (rc_absorb(c)) return -1;
        void *r = NULL;
        if (redisReaderGetReply(c->rd, &r) != REDIS_OK)
            return rc_break(c, c->rd->errstr[0] ? c->rd->errstr : "protocol error");
        if (r) {
            *out = r;
            return 0;
        }
        if (c->disconnected) return rc_fail(c, "disconnected");
        long before = c->st.bytes_in;
        long long left = end - rc_now_ms();
        if (left <= 0) return rc_fail(c, "timed out waiting for a reply");
        if (rc_wait_events(c, (int)left) < 0) return -1;
        if (c->st.bytes_in != before) end = rc_now_ms() + c->o.timeout_ms;
    }
}

static redisReply *rc_send_formatted(rdma_client *c, char *cmd, int len) {
    if (len < 0) {
        rc_fail(c, "cannot format the command");
        return NULL;
    }
    int rc = rdma_client_write(c, cmd, (size_t)len, 0);
    free(cmd);
    redisReply *r = NULL;
    if (rc || rdma_client_read_reply(c, &r)) return NULL;
    return r;
}

redisReply *rdma_client_cmd(rdma_client *c, const char *fmt, ...) {
    char *cmd = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    return rc_send_formatted(c, cmd, len);
}

redisReply *rdma_client_cmd_argv(rdma_client *c, int argc, const char **argv, const size_t *lens) {
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    return rc_send_formatted(c, cmd, len);
}

void rdma_client_set_consume(rdma_client *c, int on) {
    c->consume = on;
}

int rdma_client_wait_disconnected(rdma_client *c, int ms) {
    long long end = rc_now_ms() + ms;
    while (!c->disconnected && !c->broken) {
        long long left = end - rc_now_ms();
        if (left <= 0) break;
        if (rc_wait_events(c, (int)left) < 0) break;
    }
    return c->disconnected;
}

int rdma_client_is_disconnected(const rdma_client *c) {
    return c->disconnected;
}

void rdma_client_get_stats(const rdma_client *c, rdma_client_stats *out) {
    *out = c->st;
    out->server_rx_addr = c->peer_addr;
    out->server_rx_len = c->peer_len;
    out->server_rx_rkey = c->peer_rkey;
    out->server_rx_offset = c->peer_off;
}

/* ---- teardown ---- */

void rdma_client_free(rdma_client *c) {
    if (!c) return;
    const rdma_ops *op = c->o.ops;
    if (c->stage >= RDMA_CLIENT_CONNECTING && !c->disconnected) op->disconnect(c->id);
    if (c->cq) {
        struct ibv_wc wc[16];
        while (op->poll_cq(c->cq, 16, wc) > 0) {
        }
    }
    if (c->qp_made) op->destroy_qp(c->id);
    if (c->slots_mr) op->dereg_mr(c->slots_mr);
    if (c->rx_mr) op->dereg_mr(c->rx_mr);
    if (c->tx_mr) op->dereg_mr(c->tx_mr);
    if (c->cq) op->destroy_cq(c->cq);
    if (c->cc) op->destroy_comp_channel(c->cc);
    if (c->pd) op->dealloc_pd(c->pd);
    if (c->id) op->destroy_id(c->id);
    if (c->ch) op->destroy_event_channel(c->ch);
    free(c->slots);
    free(c->send_busy);
    free(c->rx);
    free(c->tx);
    redisReaderFree(c->rd);
    free(c);
}
