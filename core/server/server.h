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
#include "net/conn.h"

#define KEEL_REDIS_COMPAT_VERSION "7.2.4"
#define KEEL_VALKEY_COMPAT_VERSION "8.0.1"

#define MAXMEMORY_NOEVICTION 0
#define MAXMEMORY_ALLKEYS_LRU 1
#define MAXMEMORY_ALLKEYS_LFU 2
#define MAXMEMORY_ALLKEYS_RANDOM 3
#define MAXMEMORY_VOLATILE_LRU 4
#define MAXMEMORY_VOLATILE_LFU 5
#define MAXMEMORY_VOLATILE_RANDOM 6
#define MAXMEMORY_VOLATILE_TTL 7

typedef struct client client;

typedef struct client_buffer_limit {
    unsigned long long hard;
    unsigned long long soft;
    long long soft_seconds;
} client_buffer_limit;

typedef struct server {
    /* Configuration (see config.c for the directive table). */
    char *bindaddr[CONN_MAX_BINDS];
    int bindaddr_count;
    int port;
    char *unixsocket;
    unsigned int unixsocketperm;
    int tcp_backlog;
    int maxclients;
    int maxidletime; /* timeout */
    int tcp_keepalive;
    int protected_mode;
    kbytes requirepass; /* binary-safe: any byte, NUL included */
    int databases;
    int hz;
    long long proto_max_bulk_len;
    long long client_max_querybuf_len;
    client_buffer_limit obuf_limit_normal;
    unsigned long long maxmemory;
    int maxmemory_policy;
    int maxmemory_samples;
    int lfu_log_factor;
    int lfu_decay_time;
    long long slowlog_log_slower_than;
    unsigned long slowlog_max_len;
    log_options log;
    char *pidfile;
    int daemonize;
    int io_threads_num;
    int io_threads_do_reads; /* accepted for compatibility: reads always go to threads */
    int events_per_io_thread;
    int active_expire_effort;
    int lazyfree_lazy_user_del;
    int lazyfree_lazy_user_flush;
    int enable_debug_cmd;  /* 0 no, 1 yes, 2 local */
    int enable_module_cmd; /* 0 no, 1 yes, 2 local */
    int active_expire_enabled;
    char *configfile; /* absolute path, NULL without a file */
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
    uint64_t next_client_id;
    client *clients_head; /* all clients, doubly linked */
    unsigned long connected_clients;
    client *current_client;
    uint64_t lruclock;

    /* Statistics (INFO stats). */
    long long stat_numcommands;
    long long stat_numconnections;
    long long stat_rejected_conn;
    long long stat_expiredkeys;
    long long stat_evictedkeys;
    long long stat_keyspace_hits;
    long long stat_keyspace_misses;
    long long stat_net_input_bytes;
    long long stat_net_output_bytes;
    long long stat_total_error_replies;
    long long stat_unexpected_error_replies;
    long long stat_client_qbuf_limit_disconnections;
    long long stat_client_outbuf_limit_disconnections;
    long long stat_expired_time_cap_reached_count;
    long long stat_evictedclients;
    uint64_t stat_peak_memory;
    /* Instantaneous metrics: samples per cron second. */
    long long inst_ops_samples[16];
    long long inst_in_samples[16];
    long long inst_out_samples[16];
    int inst_idx;
    long long inst_last_ops, inst_last_in, inst_last_out;
    uint64_t inst_last_us;
} server;

extern server srv;

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

/* Raises RLIMIT_NOFILE for maxclients, or lowers maxclients to fit. */
void server_adjust_open_files(void);
/* 1 for unix sockets and loopback peers (protected mode, DEBUG local). */
int server_is_loopback(conn *cn);

/* Runs the memory limit; returns 0 if the write may proceed. */
int server_check_maxmemory(void);
/* Makes the next server_check_maxmemory read the allocator again, as
 * before-sleep does once per event-loop iteration; for callers without an
 * event loop (the fuzz targets, between two reads). */
void server_invalidate_used_memory(void);

#endif
