/* server.h -- the server's global state: configuration values, listeners,
 * clients, statistics. Subsystems keep their own state in their own files;
 * what lives here is what INFO reports and CONFIG sets across subsystems.
 *
 * Threads: main thread only, unless a field says otherwise. */
#ifndef KEEL_SERVER_H
#define KEEL_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/log.h"
#include "event/event.h"
#include "keyspace/db.h"
#include "net/conn.h"
#include "server/server_compat.h"
#include "session/blocking.h"
#include "session/busy.h"
#include "session/client.h"
#include "session/tracking.h"
#include "session/pubsub.h"
#include "types/types.h"

/* The event loop's own counters, named as their INFO stats fields:
 * iterations, and the microseconds spent awake (from the wake-up to the
 * end of before-sleep). */
#define SERVER_METRICS(X, T)                                                                       \
    X(T, eventloop_cycles)                                                                         \
    X(T, eventloop_duration_sum)
METRICS_STRUCT(server_metrics, SERVER_METRICS);
extern const metric_desc server_metric_descs[];
extern const size_t server_metric_descs_count;

/* The server composes the subsystems: it owns each one's options and
 * counters (the config directive table points into them, INFO prints them)
 * and hands them in at setup. What is left here is the orchestrator's own
 * state: listeners, the process, start-up settings. */
typedef struct server {
    /* Subsystems' options and counters. */
    log_options log;
    db_options db;
    db_metrics db_stats;
    types_metrics types_stats;
    session_options session;
    session_metrics session_stats;
    blocking_metrics blocking_stats; /* gauges: RESETSTAT leaves them */
    busy_options busy;
    tracking_options tracking;
    tracking_metrics tracking_stats; /* gauges too */
    pubsub_metrics pubsub_stats;     /* gauges too */
    int notify_keyspace_events;      /* keyspace/notify.h NOTIFY_* classes */
    server_compat_options compat; /* Valkey directives without a feature yet */
    server_metrics stats; /* the event loop's */

    /* The server's own configuration (see server_config.c). */
    char *bindaddr[CONN_MAX_BINDS];
    int bindaddr_count;
    int port;
    char *unixsocket;
    unsigned int unixsocketperm;
    int tcp_backlog;
    int maxclients;
    long long max_new_conns_per_cycle;     /* accepts per event, plain listeners */
    long long max_new_tls_conns_per_cycle; /* and listeners of handshaking transports */
    int protected_mode;
    int hz;
    char *pidfile;
    int daemonize;
    int io_threads_num;
    int io_threads_do_reads; /* accepted for compatibility: reads always go to threads */
    int events_per_io_thread;
    int enable_debug_cmd;  /* 0 no, 1 yes, 2 local */
    int enable_module_cmd; /* 0 no, 1 yes, 2 local */
    int active_expire_enabled;
    int cron_paused;  /* DEBUG PAUSE-CRON: the cron does nothing (tests) */
    int disable_deny_scripts; /* DEBUG SET-DISABLE-DENY-SCRIPTS (tests) */
    char *configfile; /* absolute path, NULL without a file */
    const uint8_t *fixed_hash_seed; /* 16 bytes, or NULL for a random seed (fuzzing replays) */
    char *executable;

    /* Runtime. */
    event_loop *el;
    conn_listener listeners[2]; /* [0] tcp, [1] unix */
    pid_t pid;
    uint64_t start_us;
    long long lastsave; /* unix s of the last save: start-up, as Keel never saves (LASTSAVE) */
    long long cronloops;
    int shutdown_asap;
    char runid[41];
    long long dirty; /* changes since the last save (the keyspace's change hook) */

    /* Instantaneous metrics: samples per cron second. */
    long long inst_ops_samples[16];
    long long inst_in_samples[16];
    long long inst_out_samples[16];
    int inst_idx;
    long long inst_last_ops, inst_last_in, inst_last_out;
    uint64_t inst_last_us;
    long long inst_el_cycles_samples[16];
    long long inst_el_duration_samples[16];
    long long inst_last_el_cycles, inst_last_el_duration;
    uint64_t el_awake_us; /* when the loop last woke up (0: not yet) */
} server;

extern server srv;

/* The subsystems' counter groups, for INFO and CONFIG RESETSTAT. */
const metric_group *server_metric_groups(size_t *count);

/* Start-up in two steps: the core alone (event loop, databases, command
 * table: what the fuzzer and embedded tests need), then listeners, modules,
 * the cron and signals. Each returns 0, or -1 with *err (km_free it). */
int server_init_core(char **err);
int server_setup(char **err);
void server_run(void);
/* Frees everything so leak checkers see a clean exit. */
void server_teardown(void);

/* The accept path of every listener, built-in or a module transport's:
 * admission (maxclients, protected mode), then the transport's accept. */
void server_on_accept(conn *cn, void *priv);

/* CONFIG SET bind / port: listens on srv.bindaddr at srv.port. A new port
 * is opened before the old sockets close; the same port (a bind change)
 * closes the old sockets first, as the addresses would collide, and opens
 * them again when the new ones fail. Either way the clients connected stay,
 * and on failure the old listeners are in force and K_ERR is returned (the
 * reason is logged). Port 0 closes TCP listening, refused unless the unix
 * socket listens. Before the server listens, nothing to do. */
int server_rebind(void);

/* Raises RLIMIT_NOFILE for maxclients, or lowers maxclients to fit. */
void server_adjust_open_files(void);

#endif
