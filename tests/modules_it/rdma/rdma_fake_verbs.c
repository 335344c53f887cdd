/* rdma_fake_verbs.c -- the fake's verbs: the device and its context,
 * protection domains, memory regions (keys and bounds), completion queues
 * and channels, queue pairs and what the NIC thread does with their work
 * requests (transmit, deliver, acknowledge, flush). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "rdma_fake_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define FAKE_MAX_SGE 30
#define FAKE_MAX_QP_WR 16384
#define FAKE_MAX_CQE 4194303
#define FAKE_MAX_INLINE 256
#define FAKE_COMP_VECTORS 4

static struct ibv_device fake_device = {
    .node_type = IBV_NODE_CA,
    .transport_type = IBV_TRANSPORT_IB,
    .name = "keel_fake0",
    .dev_name = "uverbs_fake0",
};

struct ibv_context fake_context = {
    .device = &fake_device,
    .cmd_fd = -1,
    .async_fd = -1,
    .num_comp_vectors = FAKE_COMP_VECTORS,
    /* what verbs.h's inline ibv_post_send & co jump through */
    .ops = {.poll_cq = fake_poll_cq,
            .req_notify_cq = fake_req_notify_cq,
            .post_send = fake_post_send,
            .post_recv = fake_post_recv},
};

static fake_mr *fake_mrs;
static uint32_t fake_next_key, fake_next_qpn, fake_next_handle;

/* ---- devices ---- */

struct ibv_device **fake_get_device_list(int *num) {
    if (num) *num = 0;
    if (fake_no_device()) {
        errno = ENOSYS;
        return NULL;
    }
    struct ibv_device **list = calloc(2, sizeof(*list));
    if (!list) return NULL;
    list[0] = &fake_device;
    if (num) *num = 1;
    return list;
}

void fake_free_device_list(struct ibv_device **list) {
    free(list);
}

int fake_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr) {
    if (ctx != &fake_context) return EINVAL;
    memset(attr, 0, sizeof(*attr));
    snprintf(attr->fw_ver, sizeof(attr->fw_ver), "keel-fake");
    attr->max_mr_size = UINT64_MAX;
    attr->page_size_cap = 4096;
    attr->max_qp = 65536;
    attr->max_qp_wr = FAKE_MAX_QP_WR;
    attr->max_sge = FAKE_MAX_SGE;
    attr->max_cq = 65536;
    attr->max_cqe = FAKE_MAX_CQE;
    attr->max_mr = 1 << 20;
    attr->max_pd = 65536;
    attr->max_qp_rd_atom = 16;
    attr->max_qp_init_rd_atom = 16;
    attr->phys_port_cnt = 1;
    return 0;
}

int fake_fork_init(void) {
    return 0;
}

/* ---- protection domains and memory regions ---- */

struct ibv_pd *fake_alloc_pd(struct ibv_context *ctx) {
    if (ctx != &fake_context) {
        errno = EINVAL;
        return NULL;
    }
    fake_pd *pd = calloc(1, sizeof(*pd));
    if (!pd) return NULL;
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    pd->pub.context = ctx;
    pd->pub.handle = ++fake_next_handle;
    fake_reg_add(pd, FAKE_PD);
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
    return &pd->pub;
}

int fake_dealloc_pd(struct ibv_pd *ibpd) {
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    fake_pd *pd = (fake_pd *)ibpd;
    fake_reg_check(pd, FAKE_PD, "dealloc_pd of a pd not alive");
    int rc = pd->refs ? EBUSY : 0;
    if (!rc) {
        fake_reg_del(pd, FAKE_PD, "dealloc_pd of a pd not alive");
        free(pd);
    }
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
    return rc;
}

struct ibv_mr *fake_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length, int access) {
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    fake_pd *pd = (fake_pd *)ibpd;
    fake_reg_check(pd, FAKE_PD, "reg_mr on a pd not alive");
    fake_mr *mr = NULL;
    int err = 0;
    if (fake_fault_hit(&fake_faults.fail_reg_mr))
        err = ENOMEM;
    else if ((!addr && length) ||
             ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
              !(access & IBV_ACCESS_LOCAL_WRITE)))
        err = EINVAL; /* as the kernel: remote write needs local write */
    else if (!(mr = calloc(1, sizeof(*mr))))
        err = ENOMEM;
    if (mr) {
        if (!fake_next_key) fake_next_key = ((uint32_t)getpid() & 0xffffu) << 12;
        fake_next_key += 2;
        mr->pub.context = &fake_context;
        mr->pub.pd = ibpd;
        mr->pub.addr = addr;
        mr->pub.length = length;
        mr->pub.handle = ++fake_next_handle;
        mr->pub.lkey = fake_next_key;
        mr->pub.rkey = fake_next_key + 1;
        mr->access = access;
        mr->next = fake_mrs;
        if (fake_mrs) fake_mrs->prev = mr;
        fake_mrs = mr;
        pd->refs++;
        fake_reg_add(mr, FAKE_MR);
    }
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
    if (err) errno = err;
    return mr ? &mr->pub : NULL;
}

int fake_dereg_mr(struct ibv_mr *ibmr) {
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    fake_mr *mr = (fake_mr *)ibmr;
    fake_reg_del(mr, FAKE_MR, "dereg_mr of an mr not alive");
    if (mr->prev)
        mr->prev->next = mr->next;
    else
        fake_mrs = mr->next;
    if (mr->next) mr->next->prev = mr->prev;
    ((fake_pd *)mr->pub.pd)->refs--;
    free(mr);
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
    return 0;
}

/* The MR of pd whose lkey (or rkey) is key, covering [addr, addr+len) with
 * the access needed; NULL when there is none. */
static fake_mr *fake_mr_find(struct ibv_pd *pd, uint32_t key, int remote, uint64_t addr,
                             uint64_t len, int access) {
    for (fake_mr *mr = fake_mrs; mr; mr = mr->next) {
        if (mr->pub.pd != pd || (remote ? mr->pub.rkey : mr->pub.lkey) != key) continue;
        uint64_t lo = (uint64_t)(uintptr_t)mr->pub.addr;
        if (addr < lo || len > mr->pub.length || addr - lo > mr->pub.length - len) return NULL;
        return (mr->access & access) == access ? mr : NULL;
    }
    return NULL;
}

/* Checks local sges against their lkeys: 0 and their total, or -1. */
static int fake_sge_check(struct ibv_pd *pd, const struct ibv_sge *sge, int n, int access,
                          uint64_t *total) {
    *total = 0;
    for (int i = 0; i < n; i++) {
        if (sge[i].length && !fake_mr_find(pd, sge[i].lkey, 0, sge[i].addr, sge[i].length, access))
            return -1;
        *total += sge[i].length;
    }
    return 0;
}

/* ---- completion channels and queues ---- */

struct ibv_comp_channel *fake_create_comp_channel(struct ibv_context *ctx) {
    if (ctx != &fake_context) {
        errno = EINVAL;
        return NULL;
    }
    fake_comp *ch = calloc(1, sizeof(*ch));
    if (!ch) return NULL;
    ch->pub.fd = eventfd(0, EFD_CLOEXEC);
    if (ch->pub.fd < 0) {
        free(ch);
        return NULL;
    }
    ch->pub.context = ctx;
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    fake_reg_add(ch, FAKE_COMP);
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
    return &ch->pub;
}

int fake_destroy_comp_channel(struct ibv_comp_channel *ibch) {
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    fake_comp *ch = (fake_comp *)ibch;
    fake_reg_check(ch, FAKE_COMP, "destroy_comp_channel of a channel not alive");
    int rc = ch->cqs ? EBUSY : 0;
    if (!rc) {
        fake_reg_del(ch, FAKE_COMP, "destroy_comp_channel of a channel not alive");
        close(ch->pub.fd);
        free(ch->events);
        free(ch);
    }
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
    return rc;
}

struct ibv_cq *fake_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
                              struct ibv_comp_channel *ibch, int vector) {
    if (ctx != &fake_context || cqe < 1 || cqe > FAKE_MAX_CQE || vector < 0 ||
        vector >= FAKE_COMP_VECTORS) {
        errno = EINVAL;
        return NULL;
    }
    fake_cq *cq = calloc(1, sizeof(*cq));
    struct ibv_wc *wc = calloc((size_t)cqe, sizeof(*wc));
    if (!cq || !wc) {
        free(cq);
        free(wc);
        errno = ENOMEM;
        return NULL;
    }
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    if (ibch) {
        fake_reg_check(ibch, FAKE_COMP, "create_cq on a completion channel not alive");
        ((fake_comp *)ibch)->cqs++;
        ibch->refcnt++;
    }
    cq->pub.context = ctx;
    cq->pub.channel = ibch;
    cq->pub.cq_context = cq_context;
    cq->pub.handle = ++fake_next_handle;
    cq->pub.cqe = cqe;
    cq->wc = wc;
    fake_reg_add(cq, FAKE_CQ);
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
    return &cq->pub;
}

int fake_destroy_cq(struct ibv_cq *ibcq) {
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    fake_cq *cq = (fake_cq *)ibcq;
    fake_reg_check(cq, FAKE_CQ, "destroy_cq of a cq not alive");
    int rc = cq->qps || cq->got != cq->acked ? EBUSY : 0;
    if (!rc) {
        fake_comp *ch = (fake_comp *)cq->pub.channel;
        if (ch) { /* its events not yet fetched go with it */
            size_t kept = 0;
            for (size_t i = 0; i < ch->ev_len; i++) {
                fake_cq *e = ch->events[(ch->ev_head + i) % ch->ev_cap];
                if (e != cq) ch->events[(ch->ev_head + kept++) % ch->ev_cap] = e;
            }
            ch->ev_len = kept;
            fake_eventfd_set(ch->pub.fd, &ch->signalled, kept > 0);
            ch->cqs--;
            ch->pub.refcnt--;
        }
        fake_reg_del(cq, FAKE_CQ, "destroy_cq of a cq not alive");
        free(cq->wc);
        free(cq);
    }
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
    return rc;
}

static void fake_comp_push(fake_comp *ch, fake_cq *cq) {
    if (ch->ev_len == ch->ev_cap) {
        size_t cap = ch->ev_cap ? ch->ev_cap * 2 : 16;
        fake_cq **ev = malloc(cap * sizeof(*ev));
        if (!ev) fake_die("out of memory");
        for (size_t i = 0; i < ch->ev_len; i++)
            ev[i] = ch->events[(ch->ev_head + i) % ch->ev_cap];
        free(ch->events);
        ch->events = ev;
        ch->ev_cap = cap;
        ch->ev_head = 0;
    }
    ch->events[(ch->ev_head + ch->ev_len++) % ch->ev_cap] = cq;
    fake_eventfd_set(ch->pub.fd, &ch->signalled, 1);
}

static void fake_cq_push(fake_cq *cq, const struct ibv_wc *wc) {
    if (cq->len == (size_t)cq->pub.cqe) {
        /* as hardware: the CQ is in error (IBV_EVENT_CQ_ERR), the CQE lost */
        if (!cq->overrun) fprintf(stderr, "rdma_fake: CQ overrun (cqe %d)\n", cq->pub.cqe);
        cq->overrun = 1;
        return;
    }
    cq->wc[(cq->head + cq->len++) % (size_t)cq->pub.cqe] = *wc;
    if (cq->armed && cq->pub.channel) {
        cq->armed = 0;
        fake_comp_push((fake_comp *)cq->pub.channel, cq);
    }
}

int fake_req_notify_cq(struct ibv_cq *ibcq, int solicited_only) {
    (void)solicited_only;
    pthread_mutex_lock(&fake_lock);
    fake_cq *cq = (fake_cq *)ibcq;
    fake_reg_check(cq, FAKE_CQ, "req_notify_cq on a cq not alive");
    cq->armed = 1;
    pthread_mutex_unlock(&fake_lock);
    return 0;
}

int fake_get_cq_event(struct ibv_comp_channel *ibch, struct ibv_cq **out, void **cq_context) {
    for (;;) {
        pthread_mutex_lock(&fake_lock);
        fake_comp *ch = (fake_comp *)ibch;
        fake_reg_check(ch, FAKE_COMP, "get_cq_event on a channel not alive");
        if (ch->ev_len) {
            fake_cq *cq = ch->events[ch->ev_head];
            ch->ev_head = (ch->ev_head + 1) % ch->ev_cap;
            ch->ev_len--;
            fake_eventfd_set(ch->pub.fd, &ch->signalled, ch->ev_len > 0);
            cq->got++;
            pthread_mutex_unlock(&fake_lock);
            *out = &cq->pub;
            *cq_context = cq->pub.cq_context;
            return 0;
        }
        int fd = ch->pub.fd;
        pthread_mutex_unlock(&fake_lock);
        if (fake_fd_wait(fd) < 0) return -1;
    }
}

void fake_ack_cq_events(struct ibv_cq *ibcq, unsigned int n) {
    pthread_mutex_lock(&fake_lock);
    fake_cq *cq = (fake_cq *)ibcq;
    fake_reg_check(cq, FAKE_CQ, "ack_cq_events on a cq not alive");
    cq->acked += n;
    cq->pub.comp_events_completed += n;
    if (cq->acked > cq->got) fake_die("ack_cq_events acks more events than get_cq_event gave");
    pthread_mutex_unlock(&fake_lock);
}

int fake_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc) {
    pthread_mutex_lock(&fake_lock);
    fake_cq *cq = (fake_cq *)ibcq;
    fake_reg_check(cq, FAKE_CQ, "poll_cq on a cq not alive");
    int got = cq->overrun ? -EOVERFLOW : 0;
    while (got >= 0 && got < n && cq->len) {
        wc[got++] = cq->wc[cq->head];
        cq->head = (cq->head + 1) % (size_t)cq->pub.cqe;
        cq->len--;
    }
    pthread_mutex_unlock(&fake_lock);
    return n < 0 ? -EINVAL : got;
}

/* ---- queue pairs ---- */

static int fake_cap_grant(uint32_t *want, int fault_cap, uint32_t max) {
    if (*want > max) return -1;
    if (!*want) *want = 1;
    if (fault_cap > 0 && *want > (uint32_t)fault_cap) *want = (uint32_t)fault_cap;
    return 0;
}

static int fake_qp_check_attr(struct ibv_pd *pd, struct ibv_qp_init_attr *attr) {
    fake_reg_check(pd, FAKE_PD, "create_qp on a pd not alive");
    fake_reg_check(attr->send_cq, FAKE_CQ, "create_qp with a send cq not alive");
    fake_reg_check(attr->recv_cq, FAKE_CQ, "create_qp with a recv cq not alive");
    if (attr->qp_type != IBV_QPT_RC || attr->srq) return EINVAL; /* RC only, no SRQ */
    if (fake_cap_grant(&attr->cap.max_send_wr, fake_faults.max_send_wr, FAKE_MAX_QP_WR) ||
        fake_cap_grant(&attr->cap.max_recv_wr, fake_faults.max_recv_wr, FAKE_MAX_QP_WR) ||
        fake_cap_grant(&attr->cap.max_send_sge, 0, FAKE_MAX_SGE) ||
        fake_cap_grant(&attr->cap.max_recv_sge, 0, FAKE_MAX_SGE) ||
        attr->cap.max_inline_data > FAKE_MAX_INLINE)
        return EINVAL;
    return fake_fault_hit(&fake_faults.fail_create_qp) ? ENOMEM : 0;
}

static fake_qp *fake_qp_new(const struct ibv_qp_cap *cap) {
    fake_qp *qp = calloc(1, sizeof(*qp));
    if (!qp) fake_die("out of memory");
    qp->cap = *cap;
    qp->swr = calloc(cap->max_send_wr, sizeof(*qp->swr));
    qp->rwr = calloc(cap->max_recv_wr, sizeof(*qp->rwr));
    if (!qp->swr || !qp->rwr) fake_die("out of memory");
    for (uint32_t i = 0; i < cap->max_send_wr; i++) {
        qp->swr[i].sge = calloc(cap->max_send_sge, sizeof(struct ibv_sge));
        if (!qp->swr[i].sge) fake_die("out of memory");
    }
    for (uint32_t i = 0; i < cap->max_recv_wr; i++) {
        qp->rwr[i].sge = calloc(cap->max_recv_sge, sizeof(struct ibv_sge));
        if (!qp->rwr[i].sge) fake_die("out of memory");
    }
    return qp;
}

static void fake_qp_free(fake_qp *qp) {
    for (uint32_t i = 0; i < qp->cap.max_send_wr; i++) {
        free(qp->swr[i].sge);
        free(qp->swr[i].inline_data);
    }
    for (uint32_t i = 0; i < qp->cap.max_recv_wr; i++)
        free(qp->rwr[i].sge);
    free(qp->swr);
    free(qp->rwr);
    free(qp);
}

int fake_create_qp(struct rdma_cm_id *cm_id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr) {
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    fake_id *id = (fake_id *)cm_id;
    fake_reg_check(id, FAKE_ID, "create_qp on an id not alive");
    int err = id->pub.qp ? EINVAL : fake_qp_check_attr(pd, attr);
    if (!err) {
        fake_qp *qp = fake_qp_new(&attr->cap);
        qp->id = id;
        qp->sig_all = attr->sq_sig_all;
        qp->pub.context = &fake_context;
        qp->pub.qp_context = attr->qp_context;
        qp->pub.pd = pd;
        qp->pub.send_cq = attr->send_cq;
        qp->pub.recv_cq = attr->recv_cq;
        qp->pub.handle = ++fake_next_handle;
        qp->pub.qp_num = ((uint32_t)getpid() << 8 ^ ++fake_next_qpn) & 0xffffffu;
        qp->pub.qp_type = IBV_QPT_RC;
        /* librdmacm moves the QP of a resolved or requested id to INIT (RTS
         * if the connection is up already) */
        qp->pub.state = id->state == ID_ESTABLISHED ? IBV_QPS_RTS : IBV_QPS_INIT;
        ((fake_pd *)pd)->refs++;
        ((fake_cq *)attr->send_cq)->qps++;
        ((fake_cq *)attr->recv_cq)->qps++;
        id->pub.qp = &qp->pub;
        id->pub.pd = pd;
        id->pub.send_cq = attr->send_cq;
        id->pub.recv_cq = attr->recv_cq;
        id->pub.send_cq_channel = attr->send_cq->channel;
        id->pub.recv_cq_channel = attr->recv_cq->channel;
        fake_reg_add(qp, FAKE_QP);
    }
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
    if (err) errno = err;
    return err ? -1 : 0;
}

void fake_destroy_qp(struct rdma_cm_id *cm_id) {
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    fake_id *id = (fake_id *)cm_id;
    fake_reg_check(id, FAKE_ID, "destroy_qp on an id not alive");
    fake_qp *qp = (fake_qp *)id->pub.qp;
    fake_reg_del(qp, FAKE_QP, "destroy_qp of an id without a QP");
    ((fake_pd *)qp->pub.pd)->refs--;
    ((fake_cq *)qp->pub.send_cq)->qps--;
    ((fake_cq *)qp->pub.recv_cq)->qps--;
    id->pub.qp = NULL;
    id->pub.send_cq = id->pub.recv_cq = NULL;
    id->pub.send_cq_channel = id->pub.recv_cq_channel = NULL;
    fake_qp_free(qp);
    if (id->sock && id->sock->parked) fake_nic_kick(); /* parked DATA now fails */
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
}

static enum ibv_wc_opcode fake_wc_opcode(enum ibv_wr_opcode op) {
    return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ? IBV_WC_SEND : IBV_WC_RDMA_WRITE;
}

static void fake_complete_send(fake_qp *qp, const fake_swr *w, enum ibv_wc_status status,
                               uint32_t byte_len) {
    struct ibv_wc wc = {0};
    wc.wr_id = w->wr_id;
    wc.status = status;
    wc.opcode = fake_wc_opcode(w->opcode);
    wc.byte_len = byte_len;
    wc.qp_num = qp->pub.qp_num;
    if (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM || w->opcode == IBV_WR_SEND_WITH_IMM)
        wc.wc_flags = IBV_WC_WITH_IMM;
    fake_cq_push((fake_cq *)qp->pub.send_cq, &wc);
}

static void fake_complete_recv(fake_qp *qp, uint64_t wr_id, enum ibv_wc_status status,
                               enum ibv_wc_opcode op, uint32_t byte_len, uint32_t imm,
                               int with_imm) {
    struct ibv_wc wc = {0};
    wc.wr_id = wr_id;
    wc.status = status;
    wc.opcode = op;
    wc.byte_len = byte_len;
    wc.imm_data = imm;
    wc.wc_flags = with_imm ? IBV_WC_WITH_IMM : 0;
    wc.qp_num = qp->pub.qp_num;
    wc.src_qp = qp->id ? (uint32_t)qp->id->peer_qp_num : 0;
    fake_cq_push((fake_cq *)qp->pub.recv_cq, &wc);
}

/* The QP goes to the error state: every WR posted completes with
 * IBV_WC_WR_FLUSH_ERR, signalled or not, as hardware flushes. */
void fake_qp_set_error(fake_qp *qp) {
    qp->pub.state = IBV_QPS_ERR;
    for (; qp->shead < qp->stail; qp->shead++)
        fake_complete_send(qp, &qp->swr[qp->shead % qp->cap.max_send_wr], IBV_WC_WR_FLUSH_ERR, 0);
    qp->stx = qp->sfree = qp->stail;
    for (; qp->rhead < qp->rtail; qp->rhead++)
        fake_complete_recv(qp, qp->rwr[qp->rhead % qp->cap.max_recv_wr].wr_id, IBV_WC_WR_FLUSH_ERR,
                           IBV_WC_RECV, 0, 0, 0);
}

static int fake_swr_fill(fake_qp *qp, fake_swr *w, const struct ibv_send_wr *wr) {
    if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM &&
        wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM)
        return EINVAL;
    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge) return EINVAL;
    w->wr_id = wr->wr_id;
    w->opcode = wr->opcode;
    w->flags = wr->send_flags;
    w->imm = wr->imm_data;
    w->raddr = wr->wr.rdma.remote_addr;
    w->rkey = wr->wr.rdma.rkey;
    w->num_sge = wr->num_sge;
    w->inline_len = 0;
    if (wr->num_sge) memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*w->sge));
    if (!(wr->send_flags & IBV_SEND_INLINE)) return 0;
    uint64_t total = 0;
    for (int i = 0; i < wr->num_sge; i++)
        total += wr->sg_list[i].length;
    if (total > qp->cap.max_inline_data) return EINVAL;
    if (!w->inline_data && !(w->inline_data = malloc(FAKE_MAX_INLINE))) return ENOMEM;
    for (int i = 0; i < wr->num_sge; i++) { /* inline: the data is taken now */
        memcpy(w->inline_data + w->inline_len, (void *)(uintptr_t)wr->sg_list[i].addr,
               wr->sg_list[i].length);
        w->inline_len += wr->sg_list[i].length;
    }
    return 0;
}

static int fake_post_send_one(fake_qp *qp, struct ibv_send_wr *wr) {
    if (fake_fault_hit(&fake_faults.fail_post_send)) return ENOMEM;
    if (qp->pub.state != IBV_QPS_RTS && qp->pub.state != IBV_QPS_ERR) return EINVAL;
    if (qp->stail - qp->sfree >= qp->cap.max_send_wr) return ENOMEM;
    fake_swr *w = &qp->swr[qp->stail % qp->cap.max_send_wr];
    int err = fake_swr_fill(qp, w, wr);
    if (err) return err;
    if (qp->pub.state == IBV_QPS_ERR) { /* posted in error: flushed at once */
        fake_complete_send(qp, w, IBV_WC_WR_FLUSH_ERR, 0);
        return 0;
    }
    w->seq = qp->next_seq++;
    qp->stail++;
    return 0;
}

int fake_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
    pthread_mutex_lock(&fake_lock);
    fake_qp *qp = (fake_qp *)ibqp;
    fake_reg_check(qp, FAKE_QP, "post_send on a qp not alive");
    int err = 0;
    for (; wr; wr = wr->next)
        if ((err = fake_post_send_one(qp, wr))) break;
    if (err) *bad = wr;
    fake_nic_kick();
    pthread_mutex_unlock(&fake_lock);
    return err;
}

static int fake_post_recv_one(fake_qp *qp, const struct ibv_recv_wr *wr) {
    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge) return EINVAL;
    if (qp->pub.state == IBV_QPS_ERR) {
        fake_complete_recv(qp, wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0, 0);
        return 0;
    }
    if (qp->rtail - qp->rhead >= qp->cap.max_recv_wr) return ENOMEM;
    fake_rwr *r = &qp->rwr[qp->rtail % qp->cap.max_recv_wr];
    r->wr_id = wr->wr_id;
    r->num_sge = wr->num_sge;
    if (wr->num_sge) memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*r->sge));
    qp->rtail++;
    return 0;
}

int fake_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
    pthread_mutex_lock(&fake_lock);
    fake_qp *qp = (fake_qp *)ibqp;
    fake_reg_check(qp, FAKE_QP, "post_recv on a qp not alive");
    int err = 0;
    for (; wr; wr = wr->next)
        if ((err = fake_post_recv_one(qp, wr))) break;
    if (err) *bad = wr;
    if (qp->id && qp->id->sock && qp->id->sock->parked) fake_nic_kick();
    pthread_mutex_unlock(&fake_lock);
    return err;
}

/* ---- the NIC thread's work on QPs, under fake_lock ---- */

/* Sends what was posted, reading the source memory now. A WR whose local
 * memory is bad fails with LOC_PROT_ERR in its turn, after the WRs sent
 * before it are acknowledged (completions come in order): 1 while it waits
 * for them, else 0. */
int fake_qp_transmit(fake_qp *qp) {
    fake_sock *s = qp->id->sock;
    while (s && qp->stx < qp->stail && fake_sock_has_room(s)) {
        fake_swr *w = &qp->swr[qp->stx % qp->cap.max_send_wr];
        uint64_t total = w->inline_len;
        if (!(w->flags & IBV_SEND_INLINE) &&
            fake_sge_check(qp->pub.pd, w->sge, w->num_sge, 0, &total) < 0) {
            if (qp->shead != qp->stx) return 1;
            fake_complete_send(qp, w, IBV_WC_LOC_PROT_ERR, 0);
            qp->shead++;
            qp->stx++;
            fake_qp_set_error(qp);
            return 0;
        }
        fake_data_hdr h = {w->seq,
                           w->raddr,
                           w->opcode,
                           w->imm,
                           w->rkey,
                           (uint32_t)total,
                           (uint32_t)qp->id->rnr_retry,
                           0};
        uint8_t *p = fake_sock_data_frame(s, sizeof(h) + total);
        memcpy(p, &h, sizeof(h));
        p += sizeof(h);
        if (w->flags & IBV_SEND_INLINE) {
            memcpy(p, w->inline_data, w->inline_len);
        } else {
            for (int i = 0; i < w->num_sge; i++) {
                memcpy(p, (void *)(uintptr_t)w->sge[i].addr, w->sge[i].length);
                p += w->sge[i].length;
            }
        }
        qp->stx++;
    }
    return 0;
}

int fake_qp_on_ack(fake_qp *qp, uint64_t seq, int status) {
    if (qp->pub.state == IBV_QPS_ERR) return 0; /* flushed already */
    if (qp->shead == qp->stx) return -1;
    fake_swr *w = &qp->swr[qp->shead % qp->cap.max_send_wr];
    if (w->seq != seq) return -1;
    uint32_t len = w->inline_len;
    for (int i = 0; !(w->flags & IBV_SEND_INLINE) && i < w->num_sge; i++)
        len += w->sge[i].length;
    if (status != IBV_WC_SUCCESS) {
        fake_complete_send(qp, w, (enum ibv_wc_status)status, 0);
        qp->shead++;
        fake_qp_set_error(qp);
        return 0;
    }
    qp->shead++;
    if (qp->sig_all || (w->flags & IBV_SEND_SIGNALED)) {
        fake_complete_send(qp, w, IBV_WC_SUCCESS, len);
        qp->sfree = qp->shead; /* this WR's slot and the unsignalled ones before it */
    }
    return 0;
}

/* Scatters a SEND into the oldest receive. */
static void fake_deliver_send(fake_qp *qp, fake_sock *s, const fake_data_hdr *h,
                              const uint8_t *data) {
    fake_rwr *r = &qp->rwr[qp->rhead++ % qp->cap.max_recv_wr];
    uint64_t room;
    int with_imm = h->opcode == IBV_WR_SEND_WITH_IMM;
    if (fake_sge_check(qp->pub.pd, r->sge, r->num_sge, IBV_ACCESS_LOCAL_WRITE, &room) < 0) {
        fake_complete_recv(qp, r->wr_id, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0);
        fake_sock_ack(s, h->seq, IBV_WC_REM_OP_ERR);
        fake_qp_set_error(qp);
        return;
    }
    if (h->len > room) {
        fake_complete_recv(qp, r->wr_id, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0);
        fake_sock_ack(s, h->seq, IBV_WC_REM_INV_REQ_ERR);
        fake_qp_set_error(qp);
        return;
    }
    uint32_t left = h->len;
    for (int i = 0; i < r->num_sge && left; i++) {
        uint32_t n = r->sge[i].length < left ? r->sge[i].length : left;
        memcpy((void *)(uintptr_t)r->sge[i].addr, data, n);
        data += n;
        left -= n;
    }
    fake_complete_recv(qp, r->wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, h->len, h->imm, with_imm);
    fake_sock_ack(s, h->seq, IBV_WC_SUCCESS);
}

int fake_qp_deliver(fake_qp *qp, fake_sock *s, const fake_data_hdr *h, const uint8_t *data) {
    if (!qp || qp->pub.state == IBV_QPS_ERR) { /* no responder: the sender times out */
        fake_sock_ack(s, h->seq, IBV_WC_RETRY_EXC_ERR);
        return 1;
    }
    int is_write = h->opcode == IBV_WR_RDMA_WRITE || h->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    if (is_write && h->len &&
        !fake_mr_find(qp->pub.pd, h->rkey, 1, h->raddr, h->len, IBV_ACCESS_REMOTE_WRITE)) {
        fake_sock_ack(s, h->seq, IBV_WC_REM_ACCESS_ERR);
        fake_qp_set_error(qp);
        return 1;
    }
    if (h->opcode != IBV_WR_RDMA_WRITE && qp->rhead == qp->rtail) return 0;
    if (!is_write) {
        fake_deliver_send(qp, s, h, data);
        return 1;
    }
    if (h->len) memcpy((void *)(uintptr_t)h->raddr, data, h->len);
    if (h->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
        fake_rwr *r = &qp->rwr[qp->rhead++ % qp->cap.max_recv_wr];
        fake_complete_recv(qp, r->wr_id, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, h->len, h->imm,
                           1);
    }
    fake_sock_ack(s, h->seq, IBV_WC_SUCCESS);
    return 1;
}

/* The strings of libibverbs' ibv_wc_status_str. */
const char *fake_wc_status_str(enum ibv_wc_status status) {
    static const char *const str[] = {
        [IBV_WC_SUCCESS] = "success",
        [IBV_WC_LOC_LEN_ERR] = "local length error",
        [IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
        [IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
        [IBV_WC_LOC_PROT_ERR] = "local protection error",
        [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
        [IBV_WC_MW_BIND_ERR] = "memory management operation error",
        [IBV_WC_BAD_RESP_ERR] = "bad response error",
        [IBV_WC_LOC_ACCESS_ERR] = "local access error",
        [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
        [IBV_WC_REM_ACCESS_ERR] = "remote access error",
        [IBV_WC_REM_OP_ERR] = "remote operation error",
        [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
        [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
        [IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
        [IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
        [IBV_WC_REM_ABORT_ERR] = "aborted error",
        [IBV_WC_INV_EECN_ERR] = "invalid EE context number",
        [IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
        [IBV_WC_FATAL_ERR] = "fatal error",
        [IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
        [IBV_WC_GENERAL_ERR] = "general error",
    };
    if ((unsigned)status < sizeof(str) / sizeof(str[0]) && str[status]) return str[status];
    return "unknown";
}
