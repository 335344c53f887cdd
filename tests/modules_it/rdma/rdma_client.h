/* rdma_client.h -- a test client of Valkey's RDMA protocol, written against
 * an rdma_ops table: the fake device (tests/modules_it/rdma/rdma_fake.h)
 * in the fake-device suite, the real librdmacm/libibverbs in the hardware
 * tier.
 *
 * It owns one RDMA CM connection and its resources: an event channel and
 * id, a protection domain, a completion channel and CQ, an RC queue pair,
 * command slots (receives pre-posted, sends tracked until their completion),
 * a page-aligned RX buffer registered for remote write and advertised with
 * RegisterXferMemory, and a TX staging buffer mirroring the server's RX
 * buffer. Data goes out as RDMA_WRITE_WITH_IMM (immediate = length, big
 * endian) at the current offset of the server's buffer, waiting for the
 * server's re-registration when that buffer is full; data comes in as
 * WRITE_WITH_IMM completions and the client re-advertises its own buffer
 * once it consumed all of it. Replies are parsed with hiredis's reader.
 *
 * For fault tests it can stop after each stage of the connection, stop
 * consuming what the server writes, send raw control messages of any
 * length and content, and post WRITE_WITH_IMM with any address, rkey,
 * length and immediate; its CM id is exposed for rdma_fake_qp_error and
 * rdma_fake_vanish.
 *
 * Every wait polls the channels' descriptors with a deadline. Return codes:
 * 0 or a non-negative count on success, -1 on failure with the reason in
 * rdma_client_error(). A client is used by one thread at a time. */
#ifndef KEEL_RDMA_CLIENT_H
#define KEEL_RDMA_CLIENT_H

#include "rdma_ops.h"

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

/* The protocol's facts (Valkey's src/rdma.c): 32-byte big-endian control
 * messages sent with IBV_WR_SEND. */
#define RDMA_CLIENT_CMD_LEN 32
enum {
    RDMA_OP_GET_SERVER_FEATURE = 0,
    RDMA_OP_SET_CLIENT_FEATURE = 1,
    RDMA_OP_KEEPALIVE = 2,
    RDMA_OP_REGISTER_XFER_MEMORY = 3,
};

/* How far rdma_client_connect goes. Each stage includes the ones before. */
typedef enum rdma_client_stage {
    RDMA_CLIENT_NEW = 0,     /* nothing yet */
    RDMA_CLIENT_RESOLVED,    /* address and route resolved, no resources */
    RDMA_CLIENT_CONNECTING,  /* resources made, rdma_connect sent, not yet ESTABLISHED */
    RDMA_CLIENT_ESTABLISHED, /* ESTABLISHED seen, nothing sent (before the handshake) */
    RDMA_CLIENT_REGISTERED,  /* own RX advertised and the server's RX known */
    RDMA_CLIENT_READY,       /* feature handshake done (if asked): ready for commands */
} rdma_client_stage;

typedef struct rdma_client_opts {
    const rdma_ops *ops;
    const char *host; /* the server's RDMA address, e.g. "127.0.0.1" */
    int port;
    uint32_t rx_size; /* own RX buffer (bytes); 0: 1 MiB */
    int recv_slots;   /* pre-posted receives; 0: 1024 (Valkey's) */
    int send_slots;   /* max_send_wr asked; 0: 1024 */
    int timeout_ms;   /* every wait; 0: 10000 */
    int no_feature;   /* 1: skip GetServerFeature/SetClientFeature (as libvalkey) */
} rdma_client_opts;

typedef struct rdma_client rdma_client;

/* A client that has done nothing yet (no device objects). NULL only when
 * out of memory. Free it with rdma_client_free. */
rdma_client *rdma_client_new(const rdma_client_opts *opts);
/* Tears everything down (a polite rdma_disconnect first when connected and
 * not vanished), each object exactly once. NULL is fine. */
void rdma_client_free(rdma_client *c);

/* Advances the connection up to stage `upto` (from wherever it is). */
int rdma_client_connect(rdma_client *c, rdma_client_stage upto);
const char *rdma_client_error(const rdma_client *c);
struct rdma_cm_id *rdma_client_cm_id(rdma_client *c);

/* Writes all of buf as WRITE_WITH_IMM into the server's RX buffer, in
 * chunks of at most max_chunk bytes (0: as large as the buffer allows),
 * waiting for re-registration when it is full. */
int rdma_client_write(rdma_client *c, const void *buf, size_t len, size_t max_chunk);
/* Sends a command (hiredis format / argv) and reads its reply. The reply
 * is the caller's (freeReplyObject). NULL on failure. */
redisReply *rdma_client_cmd(rdma_client *c, const char *fmt, ...);
redisReply *rdma_client_cmd_argv(rdma_client *c, int argc, const char **argv, const size_t *lens);
/* Reads the next reply; 0 with *out set, -1 on timeout, protocol error or
 * disconnect. */
int rdma_client_read_reply(rdma_client *c, redisReply **out);

/* 0: stop consuming what the server writes (its data stays in the RX
 * buffer, which is not re-advertised), 1: consume again (the default). */
void rdma_client_set_consume(rdma_client *c, int on);
/* Handles events for ms milliseconds (completions, CM events, keepalives). */
int rdma_client_pump(rdma_client *c, int ms);
/* 1 once the server disconnected or the QP failed, waiting up to ms. */
int rdma_client_wait_disconnected(rdma_client *c, int ms);
int rdma_client_is_disconnected(const rdma_client *c);

/* Fault injection. A control message of len bytes (up to 64) as an
 * IBV_WR_SEND. */
int rdma_client_send_raw_ctrl(rdma_client *c, const void *msg, uint32_t len);
/* A well-formed control message: opcode, select, features (the feature
 * layout) or, for RegisterXferMemory, addr/length/rkey. */
int rdma_client_send_ctrl(rdma_client *c, uint16_t opcode, uint16_t select, uint64_t features);
int rdma_client_send_register(rdma_client *c, uint64_t addr, uint32_t length, uint32_t rkey);
/* Re-advertises the own RX buffer from its start with length bytes (1 to
 * rx_size), from now on also after each time it is consumed: a peer whose
 * buffer shrinks or grows. Only with nothing unread in it. */
int rdma_client_advertise(rdma_client *c, uint32_t length);
/* WRITE_WITH_IMM of len bytes from the staging buffer to remote_addr/rkey
 * with immediate imm (host order; sent big endian), bypassing every check;
 * the client's notion of the server's offset does not move. */
int rdma_client_write_raw(rdma_client *c, uint64_t remote_addr, uint32_t rkey, const void *data,
                          uint32_t len, uint32_t imm);

/* What the client saw. */
typedef struct rdma_client_stats {
    long keepalives;          /* Keepalive messages received */
    long feature_replies;     /* GetServerFeature answers received */
    uint64_t server_features; /* the last answer's feature bits */
    long server_registers;    /* RegisterXferMemory received */
    long own_registers;       /* RegisterXferMemory sent (first one included) */
    long bytes_in;            /* data bytes received */
    uint64_t server_rx_addr;  /* the server's advertised buffer */
    uint32_t server_rx_len, server_rx_rkey, server_rx_offset;
    int last_wc_status; /* the first failed completion's status, or 0 */
} rdma_client_stats;
void rdma_client_get_stats(const rdma_client *c, rdma_client_stats *out);

#endif
