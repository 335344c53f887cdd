/* client.h -- a connected client: its query buffer, parsed arguments, reply
 * chain, transaction state and flags.
 *
 * Request path: the connection's read handler reads into the query buffer
 * (or, for big arguments, straight into the buffer that becomes the value),
 * the RESP parser cuts complete requests into argument slices, and
 * client_execute() runs each through the command table. Replies accumulate in
 * a chain of blocks; a block is either bytes or a reference to a value
 * object, so a large GET is sent with writev straight from the object.
 * Clients with pending replies are written in the before-sleep hook, and only
 * wait for writability when the socket is full.
 *
 * Threads: the main thread owns clients. The read step (read, then parse
 * the first request) and the write step (writev from the reply chain) may
 * run on an I/O thread as a job (core/io); while one is in flight (io_job
 * set) the job owns the input fields (query buffer, parser, big argument)
 * and the io_* results, reads the reply chain, and the main thread touches
 * none of them. The step's effects on shared state (statistics, freeing
 * sent reply blocks, running commands) happen when the main thread
 * finishes the job. */
#ifndef KEEL_CLIENT_H
#define KEEL_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/common.h"
#include "common/metrics.h"
#include "keyspace/db.h"
#include "net/conn.h"
#include "protocol/resp_parse.h"
#include "session/command.h"

/* client-output-buffer-limit for one class of clients; 0 = no limit. */
typedef struct client_buffer_limit {
    unsigned long long hard;
    unsigned long long soft;
    long long soft_seconds;
} client_buffer_limit;

#define SESSION_PERCENTILES_MAX 64

/* One command log's threshold (-1: off) and length (slowlog.h). */
typedef struct commandlog_options {
    long long threshold;
    long long max_len;
} commandlog_options;

/* The session layer's options (clients, replies, the slow log, latency):
 * config directives point into this struct, read live. */
typedef struct session_options {
    int maxidletime; /* timeout, seconds; 0: none */
    int tcp_keepalive;
    long long proto_max_bulk_len;
    long long client_max_querybuf_len;
    client_buffer_limit obuf_limit_normal;
    client_buffer_limit obuf_limit_replica; /* kept for CONFIG GET: no replicas yet */
    client_buffer_limit obuf_limit_pubsub;  /* clients with a subscription */
    kbytes requirepass; /* binary-safe: any byte, NUL included */
    commandlog_options commandlog[3];                    /* slow, large-request, large-reply */
    long long latency_monitor_threshold;                 /* ms; 0: the latency monitor is off */
    int latency_tracking;                                /* per-command latency histograms */
    double latency_percentiles[SESSION_PERCENTILES_MAX]; /* INFO latencystats */
    int latency_percentiles_count;
} session_options;

/* The session layer's counters, named as their INFO stats fields. */
#define SESSION_METRICS(X, T)                                                                      \
    X(T, total_connections_received)                                                               \
    X(T, total_commands_processed)                                                                 \
    X(T, total_net_input_bytes)                                                                    \
    X(T, total_net_output_bytes)                                                                   \
    X(T, rejected_connections)                                                                     \
    X(T, evicted_clients)                                                                          \
    X(T, total_error_replies)                                                                      \
    X(T, unexpected_error_replies)                                                                 \
    X(T, client_query_buffer_limit_disconnections)                                                 \
    X(T, client_output_buffer_limit_disconnections)                                                \
    X(T, total_reads_processed)                                                                    \
    X(T, total_writes_processed)
METRICS_STRUCT(session_metrics, SESSION_METRICS);
extern const metric_desc session_metric_descs[];
extern const size_t session_metric_descs_count;

#define CLIENT_CLOSE_AFTER_REPLY (1u << 0)
#define CLIENT_CLOSE_ASAP (1u << 1)
#define CLIENT_MULTI (1u << 2)
#define CLIENT_DIRTY_CAS (1u << 3)  /* a watched key changed: EXEC fails */
#define CLIENT_DIRTY_EXEC (1u << 4) /* a queued command was refused */
#define CLIENT_AUTHENTICATED (1u << 5)
#define CLIENT_PENDING_WRITE (1u << 6)
#define CLIENT_PROTECTED (1u << 7) /* being executed: free later */
#define CLIENT_NO_EVICT (1u << 8)
#define CLIENT_READONLY (1u << 9) /* READONLY: cluster replica reads (no cluster yet) */
/* CLIENT REPLY: OFF drops every reply; SKIP drops the next command's (the
 * SKIP_NEXT flag becomes SKIP once CLIENT REPLY SKIP itself is done). */
#define CLIENT_REPLY_OFF (1u << 10)
#define CLIENT_REPLY_SKIP (1u << 11)
#define CLIENT_REPLY_SKIP_NEXT (1u << 12)
#define CLIENT_NO_TOUCH (1u << 13) /* commands leave access clocks alone (but TOUCH) */
/* A blocking command that finds nothing replies at once instead of
 * waiting: set while EXEC runs its queue and on capture runs (modules,
 * scripts). */
#define CLIENT_DENY_BLOCKING (1u << 14)
/* Unblocked, its pipelined requests not run yet (blocking.c's queue;
 * CLIENT LIST flag u). */
#define CLIENT_UNBLOCKED (1u << 15)
/* client_resume_input found an I/O job in flight: the job's finish runs
 * the pending requests. */
#define CLIENT_RESUME_INPUT (1u << 16)
/* Subscribed to a channel, pattern or shard channel: in RESP2 only the
 * pub/sub commands, PING, QUIT and RESET may run (CLIENT LIST flag P). */
#define CLIENT_PUBSUB (1u << 17)
/* CLIENT TRACKING (session/tracking.h): on (CLIENT LIST flag t), its
 * redirect client gone (R), broadcast mode (B), OPTIN or OPTOUT, and
 * CLIENT CACHING given for the next command. */
#define CLIENT_TRACKING (1u << 18)
#define CLIENT_TRACKING_BROKEN_REDIR (1u << 19)
#define CLIENT_TRACKING_BCAST (1u << 20)
#define CLIENT_TRACKING_OPTIN (1u << 21)
#define CLIENT_TRACKING_OPTOUT (1u << 22)
#define CLIENT_TRACKING_CACHING (1u << 23)
/* A capture client running a script's call (KEEL_CALL_SCRIPT): the
 * commands whose output Valkey orders for scripts (SORT BY a constant on
 * a set) do so. */
#define CLIENT_SCRIPT (1u << 26)

#define CLIENT_IOBUF_LEN (16 * 1024)
#define CLIENT_REPLY_CHUNK (16 * 1024)
/* Values at least this big are sent by reference, not copied. */
#define CLIENT_REPLY_REF_MIN (16 * 1024)

/* One argument of the command being executed. */
typedef struct karg {
    const char *ptr;
    size_t len;
    kobj *obj; /* set for big arguments: the value object they became */
} karg;

/* Case-insensitive comparison of an argument with a literal (arguments are
 * slices of the query buffer, not NUL-terminated). */
static inline int karg_eq(const karg *a, const char *lit) {
    size_t n = 0;
    while (lit[n]) n++;
    if (a->len != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char x = a->ptr[i], y = lit[i];
        if (x >= 'A' && x <= 'Z') x = (char)(x + 32);
        if (y >= 'A' && y <= 'Z') y = (char)(y + 32);
        if (x != y) return 0;
    }
    return 1;
}

/* While a command runs, a block may hold a reserved range for an aggregate
 * header whose length is not known yet (reply_deferred_array and friends);
 * the range is filled and closed up before the command returns, so the write
 * path, which runs only between commands, never sees one. */
typedef struct reply_block {
    struct reply_block *next;
    kobj *obj;   /* non-NULL: this block sends obj's bytes */
    size_t size; /* capacity of buf */
    size_t used;
    size_t sent;
    char buf[];
} reply_block;

typedef struct multi_cmd {
    command *cmd;
    uint32_t flags; /* the call's flags when it was queued */
    int argc;
    karg *argv; /* owned copies */
} multi_cmd;

typedef struct client {
    uint64_t id;
    conn *conn;
    db *db;
    int resp;
    uint32_t flags;
    char *name;
    char *lib_name; /* CLIENT SETINFO lib-name / lib-ver; NULL if unset */
    char *lib_ver;
    int64_t ctime;            /* ms */
    int64_t last_interaction; /* ms */
    struct client *prev, *next;         /* server list */
    struct client *pw_prev, *pw_next;   /* pending-write list */

    /* Input. */
    char *qbuf;
    size_t qbuf_len;  /* bytes held */
    size_t qbuf_cap;
    size_t qbuf_pos;  /* start of the request being parsed */
    size_t qbuf_peak;
    resp_parser parser;
    kobj *big;         /* a big argument being read */
    size_t big_filled;
    size_t big_taken;
    size_t big_direct; /* bytes of this request read straight into big values */

    /* The command being executed. */
    int argc;
    karg *argv;
    int argv_cap;
    command *cmd;
    uint32_t cmd_flags; /* cmd's flags for this call (command_call_flags) */
    /* A detached client's origin as MONITOR shows it ("[0 lua]"): the name
     * of the module whose call runs on it; NULL otherwise. */
    const char *origin;
    command *lastcmd;
    uint64_t cmd_start_us;
    long long cmd_errors; /* error replies during this command */
    int cmd_rejected;     /* this command was refused before it ran (client_reject) */
    uint64_t redacted;    /* bit i: argv[i] is secret (slow log shows "(redacted)") */

    /* Output. */
    reply_block *reply_head;
    reply_block *reply_tail;
    size_t reply_bytes; /* not yet sent */
    /* Deferred aggregate headers reserved and not yet filled (reply.c);
     * NULL outside a command that uses them. */
    struct reply_deferred_state *reply_deferred;
    int64_t obuf_soft_limit_since;
    long long net_in, net_out;
    long long commands_processed; /* CLIENT LIST tot-cmds */

    /* I/O job in flight (IO_JOB_READ/WRITE, 0 if none; main thread's view)
     * and the results of the last read or write step, written by whichever
     * thread ran it. */
    int io_job;
    int io_parsed;       /* the step parsed a request: io_status holds it */
    resp_status io_status;
    ssize_t io_nread;    /* bytes read, 0 at end of stream, -1 on error */
    int io_errno;
    size_t io_write_max; /* most bytes the write step may send */
    size_t io_written;   /* bytes sent by the write step */
    int io_write_failed; /* the connection broke */
    /* Bytes the last writev offered when it found the socket full (EAGAIN):
     * the next write step offers at least those, from the same byte (a TLS
     * write must be retried with the same data). 0 after a write went. */
    size_t io_write_again;

    /* MULTI/EXEC. */
    multi_cmd *mcmds;
    int mcount;
    int mcap;
    size_t mbytes; /* memory of the queued arguments: part of the query buffer limit */
    struct watched_key *watched; /* singly linked */

    /* The blocking command c waits in (blocking.c), NULL if none. */
    struct blocking_state *bstate;

    /* Subscriptions (pubsub.c), NULL until the first. */
    struct pubsub_state *pubsub;
    /* The command a CLIENT PAUSE holds (pause.c), NULL if none. */
    struct pause_hold *pause_hold;

    /* CLIENT TRACKING's redirect, NOLOOP and prefixes (tracking.c); NULL
     * until tracking is first turned on. */
    struct tracking_state *tracking;
} client;

/* Borrows opts and metrics until session_teardown (client.c). */
void session_setup(const session_options *opts, session_metrics *metrics);
void session_teardown(void);
/* The options and counters session_setup was handed. Exposed only so the
 * accessors below inline: the request path reads them on every command. */
extern const session_options *session_opts_in_use;
extern session_metrics *session_stats_in_use;
static inline const session_options *session_opts(void) {
    return session_opts_in_use;
}
static inline session_metrics *session_stats(void) {
    return session_stats_in_use;
}

/* The output buffer limit of c's class: a subscribed client is in the
 * pubsub class, as in Valkey (no replica clients yet). */
static inline const client_buffer_limit *client_obuf_limit(const client *c) {
    return (c->flags & CLIENT_PUBSUB) ? &session_opts_in_use->obuf_limit_pubsub
                                      : &session_opts_in_use->obuf_limit_normal;
}

/* Every client, doubly linked through next/prev; their number; the one
 * whose command runs now (NULL between commands). */
client *client_list_head(void);
unsigned long client_count(void);
client *client_current(void);
/* The client whose request runs now: client_current(), except inside a
 * module's call, where it is the calling client (whose reply the call's
 * invalidations and messages to itself must follow, and whom NOLOOP
 * spares). NULL between commands. */
client *client_serving(void);

/* The transaction code's part in dispatch (commands/multi.c sets it): the
 * dispatcher queues commands inside MULTI through `queue`, aborts a
 * refused EXEC's transaction through `abort`, and CLIENT LIST reads
 * `watch_count`. Borrowed until set again (NULL: no transactions). */
typedef struct client_txn_ops {
    void (*queue)(client *c);
    void (*abort)(client *c);
    int (*watch_count)(const client *c);
} client_txn_ops;
void client_set_txn_ops(const client_txn_ops *ops);
int client_watch_count(const client *c);

client *client_create(conn *cn);
/* A connection-less client that is on no list (CLIENT LIST, INFO
 * connected_clients and CLIENT KILL never see it): a module's calls run on
 * one. Freed with client_free. */
client *client_create_detached(void);
/* Frees now, or at the end of the current command when the client is busy. */
void client_free(client *c);
void client_free_async(client *c);
void client_set_db(client *c, int id);

/* Event-loop glue (server.c calls these). */
void client_setup(void);
void client_read_handler(conn *cn);
void client_handle_pending_writes(void);
void client_free_closed(void);
/* Closes idle clients and enforces buffer limits (cron). */
void client_cron(void);
/* Queues c for writing in before-sleep (the reply layer calls it once per
 * client with new replies). */
void client_schedule_write(client *c);
/* Closes c (asynchronously) if its pending replies exceed the hard limit. */
void client_check_obuf_now(client *c);

/* Feeds bytes as if read from the connection (fuzzing, fake clients). */
void client_feed_input(client *c, const char *buf, size_t len);

/* Runs one parsed command; used by the read path and EXEC. */
void client_execute(client *c);

/* Runs c->cmd with c->argv again, with c as the current client: a blocked
 * client's rerun (blocking.c). No checks: the command passed them once. */
void client_rerun(client *c);

/* Work done on c's behalf outside a request of its own (a module's
 * callback for c's blocked command): c is the current and serving client,
 * so a call made meanwhile is nested in c's command (it neither evicts nor
 * serves ready keys), and c is not freed under it. client_leave restores
 * what client_enter saved. */
typedef struct client_scope {
    client *current, *serving;
    uint32_t had_protected;
} client_scope;
client_scope client_enter(client *c);
void client_leave(client *c, client_scope s);

/* Runs the requests waiting in c's query buffer: after c was unblocked,
 * outside the read path (blocking.c). With an I/O job in flight, the job's
 * finish does it. */
void client_resume_input(client *c);

/* Hides argument i of the running command from the slow log (passwords). */
static inline void client_redact_arg(client *c, int i) {
    if (i < 64) c->redacted |= 1ull << i;
}

/* Makes c->argv own copies of its arguments (MULTI queueing). */
karg *client_copy_args(int argc, const karg *argv);
void client_free_args(int argc, karg *argv);

/* CLIENT LIST/INFO line. */
size_t client_info_line(client *c, char *buf, size_t len);

/* For INFO clients. */
void client_buffer_stats(size_t *max_qbuf, size_t *max_obuf);
/* Memory held by all clients (the sum of CLIENT LIST's tot-mem): INFO
 * mem_clients_normal, MEMORY STATS clients.normal. */
size_t client_memory_total(void);
client *client_by_id(uint64_t id);

#endif
