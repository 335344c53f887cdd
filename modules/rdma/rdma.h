/* rdma.h -- what the parts of the RDMA module share: the protocol's
 * constants (Valkey's RDMA protocol), the configured values (rdma_cfg), the
 * module's state (rdma_state: the CM event channel, the listening ids, the
 * list of connections, statistics), one connection's resources and
 * protocol state (rdma_conn), and each file's entry points.
 *
 * Threads: rdma_state is the main thread's (the CM channel's handler, the
 * keepalive timer, CONFIG SET, INFO), except the statistics, which the
 * I/O threads bump (relaxed atomics). An rdma_conn's protocol state is
 * guarded by its lock: its read and writev run on the I/O thread that owns
 * the connection while the main thread sends keepalives and handles CM
 * events for it. */
#ifndef KEEL_MODULES_RDMA_H
#define KEEL_MODULES_RDMA_H

#include <keel/keel_module.h>

#include "rdma_ops.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* ---- the protocol (facts from Valkey's RDMA transport) ---- */
#define RDMA_CMD_LEN 32 /* every control message, big-endian */
#define RDMA_OP_GET_SERVER_FEATURE 0
#define RDMA_OP_SET_CLIENT_FEATURE 1
#define RDMA_OP_KEEPALIVE 2
#define RDMA_OP_REGISTER_XFER_MEMORY 3
#define RDMA_MAX_WQE 1024 /* receives posted, and send slots, per connection */
#define RDMA_KEEPALIVE_MS 3000
#define RDMA_RX_SIZE_DEFAULT (1024 * 1024)
#define RDMA_RX_SIZE_MIN (64 * 1024)
#define RDMA_RX_SIZE_MAX (16 * 1024 * 1024)
/* The largest buffer a peer may advertise: as large as our own RX buffer may
 * be. A bigger one (or 0) is a corrupt RegisterXferMemory. */
#define RDMA_PEER_BUF_MAX RDMA_RX_SIZE_MAX
#define RDMA_COMP_VECTOR_MAX 1024
#define RDMA_MAX_BIND 16 /* as the bind directive */

/* The values of the rdma-* directives. */
typedef struct rdma_cfg {
    long long port;
    char *bind; /* owned; NULL: "*" and "-::*" */
    long long rx_size;
    long long comp_vector; /* -1: spread over the device's vectors */
} rdma_cfg;

/* Counters (any thread: relaxed atomics). */
typedef struct rdma_stats {
    atomic_llong accepted;
    atomic_llong current;
    atomic_llong refused; /* requests rejected: no resources */
    atomic_llong bytes_in;
    atomic_llong bytes_out;
    atomic_llong protocol_errors;   /* corrupt control messages or lengths */
    atomic_llong completion_errors; /* work completions with an error status */
    atomic_llong keepalives_sent;
    atomic_llong write_stalls; /* writev found no room in the peer's buffer or queue */
} rdma_stats;

typedef struct rdma_conn rdma_conn;

/* The listening CM ids of one rdma-port and rdma-bind, one per address. */
typedef struct rdma_listen_set {
    struct rdma_cm_id *ids[RDMA_MAX_BIND];
    int n;
} rdma_listen_set;

typedef struct rdma_state {
    keel_ctx *ctx;
    const keel_api *api;
    const rdma_ops *ops;
    keel_transport *transport;
    rdma_cfg cfg;
    /* Listening: one CM id per bind address, all on one event channel that
     * also carries the events of every accepted connection's id (they
     * inherit their listener's channel), so it lives until unload. */
    struct rdma_event_channel *channel;
    keel_fd_watch *watch;
    rdma_listen_set listen;
    int listen_port;   /* what listen listens on; 0: not listening */
    char *listen_bind; /* the bind string they were opened with (owned) */
    keel_timer *keepalive;
    rdma_conn *conns; /* every connection from its request to its close */
    unsigned next_vector;
    char last_error[256];
    rdma_stats stats;
} rdma_state;

extern rdma_state rdma;

/* One registered buffer. */
typedef struct rdma_buf {
    unsigned char *addr; /* page-aligned, zeroed */
    size_t len;
    struct ibv_mr *mr;
} rdma_buf;

struct rdma_conn {
    pthread_mutex_t lock;
    keel_conn *kc; /* set by the accept hook; NULL before */
    struct rdma_cm_id *id;
    struct ibv_pd *pd;
    struct ibv_comp_channel *cc;
    struct ibv_cq *cq;
    int qp_made;
    /* Command slots: RDMA_MAX_WQE receives, then RDMA_MAX_WQE sends. */
    rdma_buf cmds;
    uint8_t send_busy[RDMA_MAX_WQE];
    int recv_slots; /* receives posted (the QP's capacity, at most RDMA_MAX_WQE) */
    /* The send queue: WRs posted and known complete (a signalled WR's
     * completion completes every WR posted before it). */
    uint64_t sq_posted, sq_done;
    uint32_t sq_cap;
    /* RX: the peer writes at rx_off, we read from rx_pos. */
    rdma_buf rx;
    uint32_t rx_off, rx_pos;
    /* TX: the peer's buffer (from its RegisterXferMemory) and our staging
     * copy of it. */
    rdma_buf tx;
    uint64_t peer_addr;
    uint32_t peer_rkey, peer_len, peer_off;
    int peer_known;
    int reg_due;     /* our RegisterXferMemory waits for a free send slot */
    int feature_due; /* GetServerFeature replies owed (no send slot yet) */
    uint16_t feature_select;
    int accepted;             /* rdma_accept succeeded */
    int established;          /* ESTABLISHED seen */
    int disconnected;         /* gone: the CM said so, or the QP flushed */
    int cm_gone;              /* the CM said so: no rdma_disconnect at close */
    int failed;               /* a protocol or completion error: close it */
    char peer[64], local[64]; /* fixed at the request (the addr hook) */
    rdma_conn *next, *prev;   /* rdma.conns (main thread) */
};

/* rdma_conn.c */
/* Resources for a CONNECT_REQUEST's id and rdma_accept; NULL after
 * rejecting it (the id is then still the caller's to destroy). */
rdma_conn *rdma_conn_from_request(struct rdma_cm_id *id);
/* Releases every resource and the id, exactly once (the close hook, or a
 * connection the server never adopted). */
void rdma_conn_free(rdma_conn *c);
void rdma_conn_established(rdma_conn *c);
void rdma_conn_gone(rdma_conn *c, const char *why);
void rdma_conn_keepalive(rdma_conn *c);
void rdma_transport_def_fill(keel_transport_def *def);

/* rdma_listener.c */
/* Opens, moves or closes the listening ids to match rdma-port and
 * rdma-bind; KEEL_ERR with the reason in rdma.last_error. */
int rdma_listener_sync(void);
void rdma_listener_teardown(void);

/* rdma_module.c */
void rdma_info_section(keel_info *info, void *priv);

#endif
