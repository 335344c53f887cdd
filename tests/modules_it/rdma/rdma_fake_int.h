/* rdma_fake_int.h -- the fake RDMA device's private parts, shared by its
 * files: the objects behind the libraries' structs, the one lock, the
 * registry, the wire's framing and the NIC thread's entry points.
 *
 *   rdma_fake_core.c   registry, lock, faults, counts, NIC thread lifecycle
 *   rdma_fake_cm.c     the connection manager and the wire (frames, sockets)
 *   rdma_fake_verbs.c  devices, PDs, MRs, CQs, channels, QPs, posting
 *
 * Locking: one mutex (fake_lock) guards every object of the fake; the NIC
 * thread takes it for each batch of socket events. Object creation and
 * destruction from users also hold fake_life, taken before fake_lock, so
 * that the NIC thread is started before the first object exists and joined
 * after the last one is gone. */
#ifndef KEEL_RDMA_FAKE_INT_H
#define KEEL_RDMA_FAKE_INT_H

#include "rdma_fake.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef enum fake_kind {
    FAKE_CHANNEL,
    FAKE_ID,
    FAKE_PD,
    FAKE_CQ,
    FAKE_COMP,
    FAKE_QP,
    FAKE_MR,
    FAKE_NKINDS
} fake_kind;

typedef struct fake_sock fake_sock;
typedef struct fake_qp fake_qp;

typedef struct fake_cm_event {
    struct rdma_cm_event pub; /* first: the pointer users see */
    struct fake_cm_event *next;
    struct fake_id *owner;
    uint8_t pdata[256];
} fake_cm_event;

typedef struct fake_channel {
    struct rdma_event_channel pub;
    fake_cm_event *head, *tail; /* queued, not yet fetched */
    int signalled;              /* pub.fd holds a count */
    long ids;                   /* ids reporting on it */
} fake_channel;

typedef enum fake_id_state {
    ID_IDLE,
    ID_ADDR,       /* address resolved */
    ID_ROUTE,      /* route resolved */
    ID_BOUND,      /* bind_addr done */
    ID_LISTEN,     /* listening */
    ID_CONNECTING, /* active: CONNECT sent */
    ID_REQUEST,    /* passive: request received, not answered */
    ID_ACCEPTED,   /* passive: ACCEPT sent, RTU awaited */
    ID_ESTABLISHED,
    ID_CLOSED /* disconnected, rejected or cut */
} fake_id_state;

typedef struct fake_id {
    struct rdma_cm_id pub;
    fake_id_state state;
    fake_sock *sock; /* the wire (connected) or the listening socket */
    long unacked;    /* events fetched and not acked */
    int peer_qp_num;
    int rnr_retry;     /* this side's QP rnr_retry_count */
    int reported_down; /* DISCONNECTED queued once */
} fake_id;

typedef struct fake_pd {
    struct ibv_pd pub;
    long refs; /* MRs and QPs on it */
} fake_pd;

typedef struct fake_mr {
    struct ibv_mr pub;
    int access;
    struct fake_mr *next, *prev; /* all MRs, for the key lookups */
} fake_mr;

typedef struct fake_comp {
    struct ibv_comp_channel pub;
    struct fake_cq **events; /* ring of CQs with an event queued */
    size_t ev_head, ev_len, ev_cap;
    int signalled;
    long cqs;
} fake_comp;

typedef struct fake_cq {
    struct ibv_cq pub;
    struct ibv_wc *wc; /* ring of pub.cqe entries */
    size_t head, len;
    int armed;
    int overrun;              /* a completion found it full: poll_cq fails from then on */
    unsigned long got, acked; /* events fetched / acked */
    long qps;
} fake_cq;

typedef struct fake_swr {
    uint64_t wr_id, seq;
    enum ibv_wr_opcode opcode;
    unsigned int flags;
    uint32_t imm;
    uint64_t raddr;
    uint32_t rkey;
    int num_sge;
    struct ibv_sge *sge;  /* max_send_sge of them */
    uint8_t *inline_data; /* IBV_SEND_INLINE: copied at post time */
    uint32_t inline_len;
} fake_swr;

typedef struct fake_rwr {
    uint64_t wr_id;
    int num_sge;
    struct ibv_sge *sge; /* max_recv_sge of them */
} fake_rwr;

struct fake_qp {
    struct ibv_qp pub;
    fake_id *id;
    struct ibv_qp_cap cap;
    int sig_all;
    /* The send ring: [shead, stail) posted and not acknowledged, [shead,
     * stx) of them sent. [sfree, shead) acknowledged but unsignalled: as on
     * hardware, their slots stay taken until a later WR's completion is
     * generated, the only way the application learns of them. */
    fake_swr *swr;
    uint64_t sfree, shead, stx, stail, next_seq;
    fake_rwr *rwr; /* ring: [rhead, rtail) */
    uint64_t rhead, rtail;
};

/* ---- the wire ---- */

#define FAKE_FRAME_MAGIC 0x4b524631u /* "KRF1" */
#define FAKE_FRAME_MAX (64u << 20)   /* a larger length is a corrupt frame */
/* The largest message post_send takes (hardware allows 2 GiB; the module
 * moves at most rdma-rx-size, 16 MiB, at once). */
#define FAKE_MSG_MAX (FAKE_FRAME_MAX - 64u)

typedef enum fake_frame_type {
    FR_CONNECT = 1,
    FR_ACCEPT,
    FR_REJECT,
    FR_RTU,
    FR_DATA,
    FR_ACK,
    FR_DISCONNECT
} fake_frame_type;

typedef struct fake_frame_hdr {
    uint32_t magic, type, len, rsv;
} fake_frame_hdr;

typedef struct fake_frame {
    struct fake_frame *next;
    fake_frame_hdr hdr;
    uint8_t payload[]; /* hdr.len bytes */
} fake_frame;

struct fake_sock {
    fake_sock *next; /* all sockets, for the NIC thread */
    int fd;
    int listening;
    int dead;          /* to be closed by the NIC thread once flushed */
    int linger;        /* dead but flush the output first */
    fake_id *id;       /* NULL once its id is gone */
    fake_id *listener; /* accepted, CONNECT not read yet */
    uint8_t *in;       /* partial input */
    size_t in_len, in_cap;
    uint8_t *out; /* pending output */
    size_t out_off, out_len, out_cap;
    int want_out;
    fake_frame *parked, *parked_tail; /* DATA waiting for a receive */
    uint64_t rnr_deadline_ms;         /* 0: waits forever */
};

/* ---- core (rdma_fake_core.c) ---- */
extern pthread_mutex_t fake_lock;
extern rdma_fake_faults fake_faults;

_Noreturn void fake_die(const char *what);
void fake_init_once(void);
/* Begin/end of a create or destroy from a user thread: see the top. */
void fake_life_begin(void);
void fake_life_end(void);
void fake_reg_add(void *obj, fake_kind kind);
void fake_reg_del(void *obj, fake_kind kind, const char *what);
void fake_reg_check(const void *obj, fake_kind kind, const char *what);
/* Wakes the NIC thread (post_send, post_recv, a socket to close). */
void fake_nic_kick(void);
void fake_nic_add_fd(fake_sock *s);
void fake_nic_want_out(fake_sock *s, int on);
/* Takes s off the NIC's watch, so that its fd can be closed at once. */
void fake_nic_del_fd(fake_sock *s);
uint64_t fake_now_ms(void);
/* Takes one from a fail_* counter: 1 when this call is to fail. */
int fake_fault_hit(long *counter);
/* The no_device fault (reads the environment first). */
int fake_no_device(void);
void fake_eventfd_set(int fd, int *signalled, int on);
/* For get_cm_event/get_cq_event on an empty channel: waits until its fd is
 * readable and returns 0 (try again), or -1 with EAGAIN if it is
 * non-blocking. Called without fake_lock. */
int fake_fd_wait(int fd);

/* ---- CM and wire (rdma_fake_cm.c), under fake_lock ---- */
void fake_cm_queue(fake_id *id, fake_id *listen_id, enum rdma_cm_event_type type, int status,
                   const struct rdma_conn_param *param);
void fake_sock_send(fake_sock *s, fake_frame_type type, const void *p1, size_t n1, const void *p2,
                    size_t n2);
/* Appends a DATA frame of len payload bytes and returns the payload. */
uint8_t *fake_sock_data_frame(fake_sock *s, size_t len);
int fake_sock_has_room(const fake_sock *s);
void fake_sock_ack(fake_sock *s, uint64_t seq, int status);
void fake_conn_down(fake_id *id, int tell_peer);
void fake_nic_sock_event(fake_sock *s, uint32_t events);
void fake_nic_pass(void);
uint64_t fake_nic_next_deadline(void);
void fake_sock_free(fake_sock *s);
/* What is still unsent, written once without waiting (the NIC is stopping). */
void fake_sock_final_flush(fake_sock *s);
extern fake_sock *fake_socks;

/* ---- verbs (rdma_fake_verbs.c), under fake_lock ---- */
extern struct ibv_context fake_context;
void fake_qp_set_error(fake_qp *qp);
/* 1: stopped on a bad WR until those before it are acknowledged. */
int fake_qp_transmit(fake_qp *qp);
/* An ACK of the oldest WR sent: 0, or -1 when there is no such WR. */
int fake_qp_on_ack(fake_qp *qp, uint64_t seq, int status);

/* The DATA frame's header (payload follows). */
typedef struct fake_data_hdr {
    uint64_t seq, raddr;
    uint32_t opcode, imm, rkey, len, rnr_retry, rsv;
} fake_data_hdr;

typedef struct fake_ack {
    uint64_t seq;
    uint32_t status, rsv;
} fake_ack;

/* Receives one parked or arriving DATA frame on qp: 1 done (acked), 0 no
 * receive posted (park it). */
int fake_qp_deliver(fake_qp *qp, fake_sock *s, const fake_data_hdr *h, const uint8_t *data);

/* The table's verbs members (rdma_fake_verbs.c). */
struct ibv_device **fake_get_device_list(int *num);
void fake_free_device_list(struct ibv_device **list);
int fake_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr);
int fake_fork_init(void);
int fake_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
void fake_destroy_qp(struct rdma_cm_id *id);
struct ibv_pd *fake_alloc_pd(struct ibv_context *ctx);
int fake_dealloc_pd(struct ibv_pd *pd);
struct ibv_comp_channel *fake_create_comp_channel(struct ibv_context *ctx);
int fake_destroy_comp_channel(struct ibv_comp_channel *ch);
struct ibv_cq *fake_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
                              struct ibv_comp_channel *ch, int vector);
int fake_destroy_cq(struct ibv_cq *cq);
int fake_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int fake_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context);
void fake_ack_cq_events(struct ibv_cq *cq, unsigned int n);
int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
struct ibv_mr *fake_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access);
int fake_dereg_mr(struct ibv_mr *mr);
int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
const char *fake_wc_status_str(enum ibv_wc_status status);

#endif
