/* rdma_conn.c -- one RDMA connection: its resources (PD, completion
 * channel, CQ, QP, the command slots, the RX buffer the peer writes into,
 * the TX staging copy of the peer's buffer), the protocol over them
 * (control messages, RDMA_WRITE_WITH_IMM data, re-registration when the
 * RX buffer is used up) and the transport hooks the server calls (accept,
 * handshake, read, writev, has_pending, close, addr).
 *
 * Completions are polled by whoever runs the connection next: its
 * handshake, read or writev on the I/O thread that owns it. The main
 * thread also touches the QP (keepalives, the RegisterXferMemory sent on
 * ESTABLISHED) and the flags (CM events), so everything below runs under
 * the connection's lock; the lock is never held across a call into the
 * server. A broken peer (a corrupt message, a length past the buffer, an
 * error completion) marks the connection failed: its next hook returns an
 * error and the server closes it, and no one else. */
#include "rdma.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* wr_id: the kind in bits 62-63, a command slot in bits 48-59, a send's
 * sequence number in bits 0-47 (2^48 sends outlast any connection). */
#define WR_RECV 1ULL
#define WR_SEND 2ULL
#define WR_WRITE 3ULL
#define WR_ID(kind, slot, seq) (((kind) << 62) | ((uint64_t)(slot) << 48) | (seq))
#define WR_KIND(id) ((id) >> 62)
#define WR_SLOT(id) ((int)(((id) >> 48) & 0xfff))
#define WR_SEQ(id) ((id)&0xffffffffffffULL)
#define POLL_BATCH 16

/* ---- big-endian fields of a control message ---- */

static void put16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static void put32(unsigned char *p, uint32_t v) {
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

static void put64(unsigned char *p, uint64_t v) {
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static uint16_t get16(const unsigned char *p) {
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const unsigned char *p) {
    return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint64_t get64(const unsigned char *p) {
    return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* ---- registered buffers ---- */

/* Page-aligned and zeroed: a registered region pins whole pages (and with
 * ibv_fork_init marks them DONTFORK), so it must not share a page with
 * other data. Allocated outside the server's allocator, as the pages are
 * the device's while registered. */
static int buf_make(rdma_conn *c, rdma_buf *b, size_t len, int access) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t alen = (len + page - 1) & ~(page - 1);
    void *p = NULL;
    if (posix_memalign(&p, page, alen) != 0) return KEEL_ERR;
    memset(p, 0, alen);
    b->mr = rdma.ops->reg_mr(c->pd, p, len, access);
    if (!b->mr) {
        free(p);
        return KEEL_ERR;
    }
    b->addr = p;
    b->len = len;
    return KEEL_OK;
}

static void buf_drop(rdma_buf *b) {
    if (b->mr) rdma.ops->dereg_mr(b->mr);
    free(b->addr);
    memset(b, 0, sizeof(*b));
}

/* ---- logging and failure ---- */

static void conn_log(int level, rdma_conn *c, const char *what) {
    rdma.api->core->log(rdma.ctx, level, "RDMA: %s: %s", c->peer[0] ? c->peer : "?", what);
}

/* A peer that broke the protocol: counted, logged, closed. */
static int conn_protocol_error(rdma_conn *c, const char *what) {
    atomic_fetch_add_explicit(&rdma.stats.protocol_errors, 1, memory_order_relaxed);
    conn_log(KEEL_LOG_WARNING, c, what);
    c->failed = 1;
    return KEEL_ERR;
}

static int conn_fail(rdma_conn *c, const char *what, int err) {
    char line[160];
    snprintf(line, sizeof(line), "%s (%s)", what, strerror(err));
    conn_log(KEEL_LOG_WARNING, c, line);
    c->failed = 1;
    return KEEL_ERR;
}

/* ---- posting ---- */

static int post_recv(rdma_conn *c, int slot) {
    struct ibv_sge sge = {.addr = (uintptr_t)(c->cmds.addr + (size_t)slot * RDMA_CMD_LEN),
                          .length = RDMA_CMD_LEN,
                          .lkey = c->cmds.mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = WR_ID(WR_RECV, slot, 0), .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad = NULL;
    int r = rdma.ops->post_recv(c->id->qp, &wr, &bad);
    return r ? conn_fail(c, "posting a receive failed", r) : KEEL_OK;
}

static uint64_t sq_outstanding(const rdma_conn *c) {
    return c->sq_posted - c->sq_done;
}

/* Posts one send WR as sequence number sq_posted + 1. A full queue or a
 * post that reports ENOMEM while WRs are outstanding is EAGAIN (their
 * completion wakes the connection); any other failure fails it. */
static int post_send(rdma_conn *c, struct ibv_send_wr *wr) {
    struct ibv_send_wr *bad = NULL;
    int r = rdma.ops->post_send(c->id->qp, wr, &bad);
    if (r == 0) {
        c->sq_posted++;
        return KEEL_OK;
    }
    if (r == ENOMEM && sq_outstanding(c) > 0) {
        errno = EAGAIN;
        return KEEL_ERR;
    }
    conn_fail(c, "posting a send failed", r);
    errno = EIO;
    return KEEL_ERR;
}

static int send_slot_find(const rdma_conn *c) {
    for (int i = 0; i < RDMA_MAX_WQE; i++)
        if (!c->send_busy[i]) return i;
    return -1;
}

/* Sends a control message. EAGAIN (and nothing sent) when no command slot
 * or send queue entry is free. */
static int send_cmd(rdma_conn *c, const unsigned char *msg) {
    int slot = send_slot_find(c);
    if (slot < 0 || sq_outstanding(c) >= c->sq_cap) {
        errno = EAGAIN;
        return KEEL_ERR;
    }
    unsigned char *p = c->cmds.addr + (size_t)(RDMA_MAX_WQE + slot) * RDMA_CMD_LEN;
    memcpy(p, msg, RDMA_CMD_LEN);
    struct ibv_sge sge = {.addr = (uintptr_t)p, .length = RDMA_CMD_LEN, .lkey = c->cmds.mr->lkey};
    struct ibv_send_wr wr = {.wr_id = WR_ID(WR_SEND, slot, c->sq_posted + 1),
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED};
    if (post_send(c, &wr) != KEEL_OK) return KEEL_ERR;
    c->send_busy[slot] = 1;
    return KEEL_OK;
}

/* Advertises the RX buffer from its start. With no slot free now it is
 * sent by the next poll (reg_due). */
static int rx_register(rdma_conn *c) {
    unsigned char msg[RDMA_CMD_LEN] = {0};
    put16(msg, RDMA_OP_REGISTER_XFER_MEMORY);
    put64(msg + 16, (uintptr_t)c->rx.addr);
    put32(msg + 24, (uint32_t)c->rx.len);
    put32(msg + 28, c->rx.mr->rkey);
    c->rx_off = c->rx_pos = 0;
    if (c->disconnected) return KEEL_OK; /* no one to tell, nothing more comes */
    c->reg_due = 1;
    if (send_cmd(c, msg) == KEEL_OK) {
        c->reg_due = 0;
        return KEEL_OK;
    }
    return errno == EAGAIN ? KEEL_OK : KEEL_ERR;
}

/* ---- control messages and data from the peer ---- */

/* Sends the GetServerFeature replies owed (the select echoed, no feature
 * bits) while send slots are free; the rest go from a later poll, when a
 * send's completion has freed one. */
static int feature_replies(rdma_conn *c) {
    unsigned char reply[RDMA_CMD_LEN] = {0};
    put16(reply, RDMA_OP_GET_SERVER_FEATURE);
    put16(reply + 2, c->feature_select);
    put64(reply + 24, 0);
    for (; c->feature_due > 0; c->feature_due--)
        if (send_cmd(c, reply) != KEEL_OK) return errno == EAGAIN ? KEEL_OK : KEEL_ERR;
    return KEEL_OK;
}

static int on_get_feature(rdma_conn *c, const unsigned char *msg) {
    /* More owed than there are receives: a peer that does not wait for
     * its answers. */
    if (++c->feature_due > RDMA_MAX_WQE)
        return conn_protocol_error(c, "GetServerFeature requests faster than their replies");
    c->feature_select = get16(msg + 2);
    return feature_replies(c);
}

/* The peer's buffer: our writes go there from its start, staged in a
 * buffer of its size. */
static int on_register(rdma_conn *c, const unsigned char *msg) {
    uint32_t len = get32(msg + 24);
    if (len == 0 || len > RDMA_PEER_BUF_MAX)
        return conn_protocol_error(c, "RegisterXferMemory with a length of 0 or over 16 MiB");
    if (c->tx.len != len) {
        buf_drop(&c->tx);
        if (buf_make(c, &c->tx, len, IBV_ACCESS_LOCAL_WRITE) != KEEL_OK)
            return conn_fail(c, "registering the TX staging buffer failed", errno ? errno : ENOMEM);
    }
    c->peer_addr = get64(msg + 16);
    c->peer_len = len;
    c->peer_rkey = get32(msg + 28);
    c->peer_off = 0;
    c->peer_known = 1;
    return KEEL_OK;
}

static int on_cmd(rdma_conn *c, int slot, uint32_t byte_len) {
    if (slot >= c->recv_slots) return conn_protocol_error(c, "a receive completion of no slot");
    if (byte_len != RDMA_CMD_LEN)
        return conn_protocol_error(c, "a control message that is not 32 bytes long");
    unsigned char msg[RDMA_CMD_LEN];
    memcpy(msg, c->cmds.addr + (size_t)slot * RDMA_CMD_LEN, RDMA_CMD_LEN);
    int rv = KEEL_OK;
    switch (get16(msg)) {
    case RDMA_OP_GET_SERVER_FEATURE:
        rv = on_get_feature(c, msg);
        break;
    case RDMA_OP_SET_CLIENT_FEATURE:
        if (get64(msg + 24) != 0)
            rv = conn_protocol_error(c, "SetClientFeature asked for features");
        break;
    case RDMA_OP_KEEPALIVE:
        break;
    case RDMA_OP_REGISTER_XFER_MEMORY:
        rv = on_register(c, msg);
        break;
    default:
        rv = conn_protocol_error(c, "a control message with an unknown opcode");
    }
    return rv == KEEL_OK ? post_recv(c, slot) : KEEL_ERR;
}

static int on_data(rdma_conn *c, int slot, uint32_t len) {
    if (slot >= c->recv_slots) return conn_protocol_error(c, "a receive completion of no slot");
    if (len > c->rx.len - c->rx_off)
        return conn_protocol_error(c, "a write past the end of the RX buffer");
    c->rx_off += len;
    atomic_fetch_add_explicit(&rdma.stats.bytes_in, len, memory_order_relaxed);
    return post_recv(c, slot);
}

static void on_send_done(rdma_conn *c, uint64_t wr_id) {
    if (WR_KIND(wr_id) == WR_SEND) c->send_busy[WR_SLOT(wr_id)] = 0;
    if (WR_SEQ(wr_id) > c->sq_done) c->sq_done = WR_SEQ(wr_id);
}

static int on_completion(rdma_conn *c, const struct ibv_wc *wc) {
    if (wc->status != IBV_WC_SUCCESS) {
        /* A QP in the error state flushes every posted WR: after a
         * disconnect (whose CM event may come later, on the other channel)
         * that is the end of the connection, not an error, and what the
         * peer wrote before it is still read, then end of stream. An error
         * that moved the QP there completes first, with its own status. */
        if (c->disconnected || wc->status == IBV_WC_WR_FLUSH_ERR) {
            c->disconnected = 1;
            return KEEL_OK;
        }
        atomic_fetch_add_explicit(&rdma.stats.completion_errors, 1, memory_order_relaxed);
        char line[128];
        snprintf(line, sizeof(line), "work completion error: %s",
                 rdma.ops->wc_status_str(wc->status));
        conn_log(KEEL_LOG_WARNING, c, line);
        c->failed = 1;
        return KEEL_ERR;
    }
    switch (wc->opcode) {
    case IBV_WC_RECV:
        return on_cmd(c, WR_SLOT(wc->wr_id), wc->byte_len);
    case IBV_WC_RECV_RDMA_WITH_IMM:
        return on_data(c, WR_SLOT(wc->wr_id), ntohl(wc->imm_data));
    case IBV_WC_SEND:
    case IBV_WC_RDMA_WRITE:
        on_send_done(c, wc->wr_id);
        return KEEL_OK;
    default:
        return conn_protocol_error(c, "an unexpected work completion");
    }
}

/* Takes the channel's events (re-arming the CQ after each), then every
 * completion. Caller holds the lock. */
static int conn_poll(rdma_conn *c) {
    if (c->failed) return KEEL_ERR;
    const rdma_ops *ops = rdma.ops;
    int events = 0;
    struct ibv_cq *ecq;
    void *ectx;
    while (ops->get_cq_event(c->cc, &ecq, &ectx) == 0) {
        ops->ack_cq_events(ecq, 1);
        events++;
    }
    if (errno != EAGAIN) return conn_fail(c, "reading the completion channel failed", errno);
    if (events && ops->req_notify_cq(c->cq, 0) != 0)
        return conn_fail(c, "arming the CQ failed", errno ? errno : EIO);
    struct ibv_wc wc[POLL_BATCH];
    int n;
    while ((n = ops->poll_cq(c->cq, POLL_BATCH, wc)) > 0)
        for (int i = 0; i < n; i++)
            if (on_completion(c, &wc[i]) != KEEL_OK) return KEEL_ERR;
    if (n < 0) return conn_fail(c, "polling the CQ failed", EIO);
    if (c->disconnected) return KEEL_OK; /* what is owed can no longer be sent */
    if (c->feature_due && feature_replies(c) != KEEL_OK) return KEEL_ERR;
    if (c->reg_due && c->established) return rx_register(c);
    return KEEL_OK;
}

/* ---- resources ---- */

static int comp_vector_pick(struct rdma_cm_id *id) {
    int n = id->verbs ? id->verbs->num_comp_vectors : 0;
    if (n <= 0) return 0;
    if (rdma.cfg.comp_vector >= 0) return (int)(rdma.cfg.comp_vector % n);
    return (int)(rdma.next_vector++ % (unsigned)n);
}

static int conn_make_queues(rdma_conn *c) {
    const rdma_ops *ops = rdma.ops;
    struct ibv_context *verbs = c->id->verbs;
    c->pd = ops->alloc_pd(verbs);
    if (!c->pd) return KEEL_ERR;
    c->cc = ops->create_comp_channel(verbs);
    if (!c->cc) return KEEL_ERR;
    int fl = fcntl(c->cc->fd, F_GETFL);
    if (fl < 0 || fcntl(c->cc->fd, F_SETFL, fl | O_NONBLOCK) < 0) return KEEL_ERR;
    c->cq = ops->create_cq(verbs, RDMA_MAX_WQE * 2, c, c->cc, comp_vector_pick(c->id));
    if (!c->cq || ops->req_notify_cq(c->cq, 0) != 0) return KEEL_ERR;
    struct ibv_qp_init_attr attr = {.send_cq = c->cq,
                                    .recv_cq = c->cq,
                                    .qp_type = IBV_QPT_RC,
                                    .cap = {.max_send_wr = RDMA_MAX_WQE,
                                            .max_recv_wr = RDMA_MAX_WQE,
                                            .max_send_sge = 1,
                                            .max_recv_sge = 1}};
    if (ops->create_qp(c->id, c->pd, &attr) != 0) return KEEL_ERR;
    c->qp_made = 1;
    c->sq_cap = attr.cap.max_send_wr < RDMA_MAX_WQE ? attr.cap.max_send_wr : RDMA_MAX_WQE;
    c->recv_slots = attr.cap.max_recv_wr < RDMA_MAX_WQE ? (int)attr.cap.max_recv_wr : RDMA_MAX_WQE;
    return c->sq_cap > 0 && c->recv_slots > 0 ? KEEL_OK : KEEL_ERR;
}

static int conn_make_buffers(rdma_conn *c) {
    if (buf_make(c, &c->cmds, (size_t)RDMA_CMD_LEN * RDMA_MAX_WQE * 2, IBV_ACCESS_LOCAL_WRITE) !=
        KEEL_OK)
        return KEEL_ERR;
    for (int i = 0; i < c->recv_slots; i++)
        if (post_recv(c, i) != KEEL_OK) return KEEL_ERR;
    return buf_make(c, &c->rx, (size_t)rdma.cfg.rx_size,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}

static void conn_release(rdma_conn *c) {
    const rdma_ops *ops = rdma.ops;
    if (c->qp_made) ops->destroy_qp(c->id);
    c->qp_made = 0;
    buf_drop(&c->cmds);
    buf_drop(&c->rx);
    buf_drop(&c->tx);
    if (c->cq) ops->destroy_cq(c->cq);
    if (c->cc) ops->destroy_comp_channel(c->cc);
    if (c->pd) ops->dealloc_pd(c->pd);
    c->cq = NULL;
    c->cc = NULL;
    c->pd = NULL;
}

/* "ip:port" or "[ip6]:port"; "" when the family is neither. */
static void addr_format(const struct sockaddr *sa, char *buf, size_t len) {
    char ip[INET6_ADDRSTRLEN];
    buf[0] = 0;
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
        if (inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip)))
            snprintf(buf, len, "%s:%d", ip, ntohs(s->sin_port));
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
        if (inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip)))
            snprintf(buf, len, "[%s]:%d", ip, ntohs(s->sin6_port));
    }
}

static void conn_link(rdma_conn *c) {
    c->next = rdma.conns;
    if (rdma.conns) rdma.conns->prev = c;
    rdma.conns = c;
}

static void conn_unlink(rdma_conn *c) {
    if (c->prev)
        c->prev->next = c->next;
    else if (rdma.conns == c)
        rdma.conns = c->next;
    if (c->next) c->next->prev = c->prev;
    c->next = c->prev = NULL;
}

rdma_conn *rdma_conn_from_request(struct rdma_cm_id *id) {
    const keel_api *api = rdma.api;
    rdma_conn *c = api->core->calloc(1, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    c->id = id;
    id->context = c;
    addr_format(rdma.ops->get_peer_addr(id), c->peer, sizeof(c->peer));
    addr_format(rdma.ops->get_local_addr(id), c->local, sizeof(c->local));
    /* Valkey's server side asks for one outstanding RDMA read each way
     * (none is used) and 5 transport retries; the RNR retries are
     * infinite (7) here, where Valkey's accept leaves them at 0: a write
     * that meets a peer with no receive posted waits rather than fails. */
    struct rdma_conn_param param = {
        .responder_resources = 1, .initiator_depth = 1, .retry_count = 5, .rnr_retry_count = 7};
    int ok = conn_make_queues(c) == KEEL_OK && conn_make_buffers(c) == KEEL_OK;
    if (!ok || rdma.ops->accept(id, &param) != 0) {
        conn_log(KEEL_LOG_WARNING, c,
                 ok ? "rdma_accept failed" : "cannot set up the connection's resources");
        rdma.ops->reject(id, NULL, 0);
        atomic_fetch_add_explicit(&rdma.stats.refused, 1, memory_order_relaxed);
        conn_release(c);
        id->context = NULL;
        pthread_mutex_destroy(&c->lock);
        api->core->free(c);
        return NULL;
    }
    c->accepted = 1;
    conn_link(c);
    return c;
}

void rdma_conn_free(rdma_conn *c) {
    conn_unlink(c);
    /* The peer learns of a close it did not start. */
    if (c->accepted && !c->cm_gone) rdma.ops->disconnect(c->id);
    conn_release(c);
    rdma.ops->destroy_id(c->id);
    pthread_mutex_destroy(&c->lock);
    rdma.api->core->free(c);
}

/* ---- events from the main thread ---- */

static void conn_wake(rdma_conn *c) {
    if (c->kc) rdma.api->transport->conn_wake(c->kc);
}

void rdma_conn_established(rdma_conn *c) {
    pthread_mutex_lock(&c->lock);
    c->established = 1;
    if (!c->failed) rx_register(c);
    pthread_mutex_unlock(&c->lock);
    conn_wake(c);
}

void rdma_conn_gone(rdma_conn *c, const char *why) {
    pthread_mutex_lock(&c->lock);
    c->disconnected = 1;
    c->cm_gone = 1;
    pthread_mutex_unlock(&c->lock);
    conn_log(KEEL_LOG_VERBOSE, c, why);
    conn_wake(c);
}

/* RDMA has no transport keepalive of its own: every few seconds a
 * Keepalive message, skipped while the queue is full (the connection is
 * busy, hence alive). */
void rdma_conn_keepalive(rdma_conn *c) {
    unsigned char msg[RDMA_CMD_LEN] = {0};
    put16(msg, RDMA_OP_KEEPALIVE);
    int broke = 0;
    pthread_mutex_lock(&c->lock);
    if (c->established && !c->failed && !c->disconnected) {
        if (send_cmd(c, msg) == KEEL_OK)
            atomic_fetch_add_explicit(&rdma.stats.keepalives_sent, 1, memory_order_relaxed);
        else
            broke = errno != EAGAIN;
    }
    pthread_mutex_unlock(&c->lock);
    if (broke) conn_wake(c);
}

/* ---- the transport hooks ---- */

static rdma_conn *conn_of(keel_conn *kc) {
    return rdma.api->transport->conn_get_data(kc);
}

static int hook_accept(keel_conn *kc, void *priv) {
    (void)priv;
    rdma_conn *c = conn_of(kc);
    c->kc = kc;
    atomic_fetch_add_explicit(&rdma.stats.accepted, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&rdma.stats.current, 1, memory_order_relaxed);
    return KEEL_OK;
}

/* Until ESTABLISHED (on the CM channel: conn_wake brings us back). */
static int hook_handshake(keel_conn *kc, void *priv) {
    (void)priv;
    rdma_conn *c = conn_of(kc);
    pthread_mutex_lock(&c->lock);
    conn_poll(c);
    int rv = c->failed || c->disconnected ? KEEL_ERR
             : c->established             ? KEEL_OK
                                          : KEEL_CONN_WANT_READ;
    pthread_mutex_unlock(&c->lock);
    return rv;
}

/* The peer's bytes from the RX buffer; once a full buffer is consumed it is
 * advertised again from its start. */
static ssize_t conn_read_locked(rdma_conn *c, void *buf, size_t len) {
    conn_poll(c);
    size_t avail = c->rx_off - c->rx_pos;
    if (c->failed) {
        errno = ECONNRESET;
        return -1;
    }
    if (!avail) {
        if (c->disconnected) return 0;
        errno = EAGAIN;
        return -1;
    }
    size_t n = avail < len ? avail : len;
    memcpy(buf, c->rx.addr + c->rx_pos, n);
    c->rx_pos += (uint32_t)n;
    if (c->rx_pos == c->rx.len && rx_register(c) != KEEL_OK) {
        errno = ECONNRESET;
        return -1;
    }
    return (ssize_t)n;
}

static ssize_t hook_read(keel_conn *kc, void *buf, size_t len, void *priv) {
    (void)priv;
    rdma_conn *c = conn_of(kc);
    pthread_mutex_lock(&c->lock);
    ssize_t rv = conn_read_locked(c, buf, len);
    int saved = errno;
    pthread_mutex_unlock(&c->lock);
    errno = saved;
    return rv;
}

/* Copies what fits (at most max bytes) from iov into dst. */
static size_t gather(unsigned char *dst, const struct iovec *iov, int iovcnt, size_t max) {
    size_t n = 0;
    for (int i = 0; i < iovcnt && n < max; i++) {
        size_t take = iov[i].iov_len < max - n ? iov[i].iov_len : max - n;
        memcpy(dst + n, iov[i].iov_base, take);
        n += take;
    }
    return n;
}

/* One RDMA_WRITE_WITH_IMM of n staged bytes at the peer's offset. Signalled
 * every half queue, and always when it fills the queue, so a full queue
 * always holds a WR whose completion frees it. */
static int write_post(rdma_conn *c, size_t n) {
    uint64_t seq = c->sq_posted + 1;
    uint32_t every = c->sq_cap / 2 ? c->sq_cap / 2 : 1;
    int signal = seq % every == 0 || sq_outstanding(c) + 1 >= c->sq_cap;
    struct ibv_sge sge = {.addr = (uintptr_t)(c->tx.addr + c->peer_off),
                          .length = (uint32_t)n,
                          .lkey = c->tx.mr->lkey};
    struct ibv_send_wr wr = {.wr_id = WR_ID(WR_WRITE, 0, seq),
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                             .send_flags = signal ? IBV_SEND_SIGNALED : 0,
                             .imm_data = htonl((uint32_t)n)};
    wr.wr.rdma.remote_addr = c->peer_addr + c->peer_off;
    wr.wr.rdma.rkey = c->peer_rkey;
    return post_send(c, &wr);
}

static ssize_t conn_write_locked(rdma_conn *c, const struct iovec *iov, int iovcnt) {
    conn_poll(c);
    if (c->failed || c->disconnected) {
        errno = c->failed ? EIO : EPIPE;
        return -1;
    }
    if (!c->peer_known || c->peer_off == c->peer_len || sq_outstanding(c) >= c->sq_cap) {
        /* Retried on the completion that frees room (a RegisterXferMemory,
         * a signalled write). */
        atomic_fetch_add_explicit(&rdma.stats.write_stalls, 1, memory_order_relaxed);
        errno = EAGAIN;
        return -1;
    }
    size_t n = gather(c->tx.addr + c->peer_off, iov, iovcnt, c->peer_len - c->peer_off);
    if (n == 0) return 0;
    if (write_post(c, n) != KEEL_OK) return -1;
    c->peer_off += (uint32_t)n;
    atomic_fetch_add_explicit(&rdma.stats.bytes_out, (long long)n, memory_order_relaxed);
    return (ssize_t)n;
}

static ssize_t hook_writev(keel_conn *kc, const struct iovec *iov, int iovcnt, void *priv) {
    (void)priv;
    rdma_conn *c = conn_of(kc);
    pthread_mutex_lock(&c->lock);
    ssize_t rv = conn_write_locked(c, iov, iovcnt);
    int saved = errno;
    pthread_mutex_unlock(&c->lock);
    errno = saved;
    return rv;
}

static int hook_has_pending(keel_conn *kc, void *priv) {
    (void)priv;
    rdma_conn *c = conn_of(kc);
    if (!c) return 0;
    pthread_mutex_lock(&c->lock);
    int r = c->rx_off > c->rx_pos;
    pthread_mutex_unlock(&c->lock);
    return r;
}

static void hook_close(keel_conn *kc, void *priv) {
    (void)priv;
    rdma_conn *c = conn_of(kc);
    if (!c) return;
    if (c->kc) atomic_fetch_sub_explicit(&rdma.stats.current, 1, memory_order_relaxed);
    rdma_conn_free(c);
    rdma.api->transport->conn_set_data(kc, NULL);
}

/* Fixed at the request: safe beside an I/O thread's read. */
static int hook_addr(keel_conn *kc, char *buf, size_t len, int remote, void *priv) {
    (void)priv;
    rdma_conn *c = conn_of(kc);
    const char *a = c ? (remote ? c->peer : c->local) : "";
    if (!a[0] || !len) return KEEL_ERR;
    snprintf(buf, len, "%s", a);
    return KEEL_OK;
}

void rdma_transport_def_fill(keel_transport_def *def) {
    memset(def, 0, sizeof(*def));
    def->size = sizeof(*def);
    def->name = "rdma";
    def->accept = hook_accept;
    def->handshake = hook_handshake;
    def->read = hook_read;
    def->writev = hook_writev;
    def->has_pending = hook_has_pending;
    def->close = hook_close;
    def->handshake_timeout_ms = 10000;
    def->flags = KEEL_TRANSPORT_OWN_FD;
    def->addr = hook_addr;
}
