/* server_config.c -- the server's directive table: the config engine's
 * rows for the options the server composes (its own, the keyspace's, the
 * session layer's, the log's), with the directives that need parsing by
 * hand and the hooks that apply a run-time change. */
#include "server/server_config.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/log.h"
#include "config/config.h"
#include "keyspace/evict.h"
#include "keyspace/notify.h"
#include "module/module.h"
#include "server/server.h"
#include "server/server_compat.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- enums ---- */

static const config_enum enum_loglevel[] = {{"debug", LL_DEBUG},
                                            {"verbose", LL_VERBOSE},
                                            {"notice", LL_NOTICE},
                                            {"warning", LL_WARNING},
                                            {NULL, 0}};
static const config_enum enum_policy[] = {{"volatile-lru", MAXMEMORY_VOLATILE_LRU},
                                          {"volatile-lfu", MAXMEMORY_VOLATILE_LFU},
                                          {"volatile-random", MAXMEMORY_VOLATILE_RANDOM},
                                          {"volatile-ttl", MAXMEMORY_VOLATILE_TTL},
                                          {"allkeys-lru", MAXMEMORY_ALLKEYS_LRU},
                                          {"allkeys-lfu", MAXMEMORY_ALLKEYS_LFU},
                                          {"allkeys-random", MAXMEMORY_ALLKEYS_RANDOM},
                                          {"noeviction", MAXMEMORY_NOEVICTION},
                                          {NULL, 0}};
static const config_enum enum_debug_cmd[] = {{"no", 0}, {"yes", 1}, {"local", 2}, {NULL, 0}};

/* ---- special directives ---- */

/* ---- latency-tracking-info-percentiles: numbers in 0..100 ---- */

static int set_percentiles(const config_def *d, int argc, char **argv, const char **err) {
    double v[SESSION_PERCENTILES_MAX];
    int n = 0;
    if (!(argc == 1 && argv[0][0] == '\0')) { /* "" is the empty list */
        if (argc > SESSION_PERCENTILES_MAX) {
            *err = "Invalid latency-tracking-info-percentiles parameters";
            return K_ERR;
        }
        for (; n < argc; n++) {
            char *end;
            errno = 0;
            v[n] = strtod(argv[n], &end);
            if (*end || end == argv[n] || errno || v[n] != v[n]) {
                *err = "Invalid latency-tracking-info-percentiles parameters";
                return K_ERR;
            }
            if (v[n] < 0.0 || v[n] > 100.0) {
                *err =
                    "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]";
                return K_ERR;
            }
        }
    }
    memcpy(srv.session.latency_percentiles, v, sizeof(double) * (size_t)n);
    srv.session.latency_percentiles_count = n;
    return K_OK;
}

/* "%f" with the trailing zeros (and a bare point) taken off: 99.9, 50. */
static void get_percentiles(const config_def *d, config_out *o) {
    for (int i = 0; i < srv.session.latency_percentiles_count; i++) {
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "%f", srv.session.latency_percentiles[i]);
        if (strchr(buf, '.')) {
            while (n > 0 && buf[n - 1] == '0')
                n--;
            if (n > 0 && buf[n - 1] == '.') n--;
        }
        if (i) config_out_put(o, " ", 1);
        config_out_put(o, buf, (size_t)n);
    }
}

static int set_bind(const config_def *d, int argc, char **argv, const char **err) {
    if (argc > CONN_MAX_BINDS) {
        *err = "Too many bind addresses specified.";
        return K_ERR;
    }
    if (argc == 1 && argv[0][0] == '\0') argc = 0; /* bind "": the default addresses */
    for (int i = 0; i < srv.bindaddr_count; i++)
        km_free(srv.bindaddr[i]);
    for (int i = 0; i < argc; i++)
        srv.bindaddr[i] = km_strdup(argv[i]);
    srv.bindaddr_count = argc;
    return K_OK;
}

static void free_bind(const config_def *d) {
    for (int i = 0; i < srv.bindaddr_count; i++)
        km_free(srv.bindaddr[i]);
    srv.bindaddr_count = 0;
}

static void get_bind(const config_def *d, config_out *o) {
    for (int i = 0; i < srv.bindaddr_count; i++) {
        if (i) config_out_put(o, " ", 1);
        config_out_cstr(o, srv.bindaddr[i]);
    }
}

static int set_octal(const config_def *d, int argc, char **argv, const char **err) {
    char *end;
    errno = 0;
    long v = strtol(argv[0], &end, 8);
    if (argc != 1 || *end || errno || v < 0 || v > 0777) {
        *err = "Invalid socket file permissions";
        return K_ERR;
    }
    *(unsigned int *)d->value = (unsigned int)v;
    return K_OK;
}

static void get_octal(const config_def *d, config_out *o) {
    config_out_printf(o, "%o", *(unsigned int *)d->value);
}

/* "class hard soft seconds" groups, classes normal, replica (or slave)
 * and pubsub as Valkey's parser takes them; all are validated before any
 * applies. */
static int set_obuf_limit(const config_def *d, int argc, char **argv, const char **err) {
    client_buffer_limit normal = srv.session.obuf_limit_normal;
    client_buffer_limit replica = srv.session.obuf_limit_replica;
    client_buffer_limit pubsub = srv.session.obuf_limit_pubsub;
    if (argc % 4 != 0) {
        *err = "Wrong number of arguments in buffer limit configuration.";
        return K_ERR;
    }
    for (int i = 0; i < argc; i += 4) {
        unsigned long long hard, soft;
        char *end;
        errno = 0;
        long long secs = strtoll(argv[i + 3], &end, 10);
        client_buffer_limit *cls = !strcasecmp(argv[i], "normal")    ? &normal
                                   : !strcasecmp(argv[i], "replica") ? &replica
                                   : !strcasecmp(argv[i], "slave")   ? &replica
                                   : !strcasecmp(argv[i], "pubsub")  ? &pubsub
                                                                     : NULL;
        if (!cls) {
            *err = "Invalid client class specified in buffer limit configuration.";
            return K_ERR;
        }
        /* Valkey keeps soft seconds in an int; a bigger value would overflow
         * the millisecond arithmetic of the limit check. */
        if (config_parse_memory(argv[i + 1], &hard) != K_OK ||
            config_parse_memory(argv[i + 2], &soft) != K_OK || *end || end == argv[i + 3] ||
            errno || secs < 0 || secs > INT_MAX) {
            *err = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
            return K_ERR;
        }
        *cls = (client_buffer_limit){hard, soft, secs};
    }
    srv.session.obuf_limit_normal = normal;
    srv.session.obuf_limit_replica = replica;
    srv.session.obuf_limit_pubsub = pubsub;
    return K_OK;
}

static void get_obuf_limit(const config_def *d, config_out *o) {
    const client_buffer_limit *n = &srv.session.obuf_limit_normal;
    const client_buffer_limit *r = &srv.session.obuf_limit_replica;
    const client_buffer_limit *p = &srv.session.obuf_limit_pubsub;
    config_out_printf(o, "normal %llu %llu %lld slave %llu %llu %lld pubsub %llu %llu %lld",
                      n->hard, n->soft, n->soft_seconds, r->hard, r->soft, r->soft_seconds, p->hard,
                      p->soft, p->soft_seconds);
}

/* Keel keeps no persistence: `save ""` and `appendonly no` are the only
 * values it can honour; anything else is refused rather than ignored, so
 * an operator never believes data is being written to disk. */
static int set_save(const config_def *d, int argc, char **argv, const char **err) {
    if (argc == 1 && argv[0][0] == '\0') return K_OK;
    *err = "Keel has no persistence: only save \"\" is supported";
    return K_ERR;
}

static int set_appendonly(const config_def *d, int argc, char **argv, const char **err) {
    if (argc == 1 && !strcasecmp(argv[0], "no")) return K_OK;
    *err = "Keel has no persistence: only appendonly no is supported";
    return K_ERR;
}

static void get_no(const config_def *d, config_out *o) {
    config_out_cstr(o, "no");
}

/* notify-keyspace-events: Valkey's class letters, read back in its
 * canonical order. */
static int set_notify(const config_def *d, int argc, char **argv, const char **err) {
    if (argc != 1) {
        *err = "wrong number of arguments";
        return K_ERR;
    }
    int classes = notify_parse_classes(argv[0]);
    if (classes < 0) {
        *err = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";
        return K_ERR;
    }
    srv.notify_keyspace_events = classes;
    return K_OK;
}

static void get_notify(const config_def *d, config_out *o) {
    char buf[NOTIFY_CLASSES_MAX];
    config_out_put(o, buf, notify_format_classes(srv.notify_keyspace_events, buf));
}

/* ---- apply hooks ---- */

static int apply_maxclients(const char **err) {
    if (srv.el) server_adjust_open_files();
    int want = srv.maxclients + 128;
    if (srv.el && want > event_loop_setsize(srv.el)) event_loop_resize(srv.el, want);
    return K_OK;
}

static int apply_maxmemory(const char **err) {
    if (srv.db.maxmemory && db_opts()) evict_check_maxmemory(); /* not before the keyspace exists */
    return K_OK;
}

/* Valkey's texts for a rebind that failed (the log says why). */
static int apply_port(const char **err) {
    if (server_rebind() == K_OK) return K_OK;
    *err = "Unable to listen on this port. Check server logs.";
    return K_ERR;
}

/* Every listener goes back to the addresses the TCP listener still holds
 * (the previous bind): srv.bindaddr names them for the rebinds, then the
 * new value again, which the config engine then restores. */
static void bind_restore(char *const *prev, int nprev) {
    char *cur[CONN_MAX_BINDS];
    int ncur = srv.bindaddr_count;
    memcpy(cur, srv.bindaddr, sizeof(cur));
    memcpy(srv.bindaddr, prev, sizeof(char *) * (size_t)nprev);
    srv.bindaddr_count = nprev;
    if (server_rebind() != K_OK || module_transport_rebind() != K_OK)
        log_write(LL_WARNING, "CONFIG SET bind: could not listen again on the previous addresses");
    memcpy(srv.bindaddr, cur, sizeof(cur));
    srv.bindaddr_count = ncur;
}

/* All listeners or none, as Valkey: when a transport listener cannot move
 * to the new addresses, the TCP listener and the transport listeners that
 * moved go back to the old ones. */
static int apply_bind(const char **err) {
    *err = "Failed to bind to specified addresses.";
    const conn_listener *tcp = &srv.listeners[0];
    char *prev[CONN_MAX_BINDS];
    int nprev = tcp->type ? tcp->bindaddr_count : 0;
    for (int i = 0; i < nprev; i++)
        prev[i] = km_strdup(tcp->bindaddr[i]);
    int rv = server_rebind();
    if (rv == K_OK && module_transport_rebind() != K_OK) {
        if (nprev) bind_restore(prev, nprev);
        rv = K_ERR;
    }
    for (int i = 0; i < nprev; i++)
        km_free(prev[i]);
    return rv;
}

/* ---- the table ---- */

#define B(n, f, field, d)                                                                          \
    { .name = n, .kind = CFG_BOOL, .flags = f, .value = &srv.field, .dflt = d }
#define I(n, f, field, d, lo, hi, ap)                                                              \
    {                                                                                              \
        .name = n, .kind = CFG_INT, .flags = f, .value = &srv.field, .dflt = d, .min = lo,         \
        .max = hi, .apply = ap                                                                     \
    }
#define L(n, f, field, d, lo, hi)                                                                  \
    { .name = n, .kind = CFG_LL, .flags = f, .value = &srv.field, .dflt = d, .min = lo, .max = hi }
#define LA(n, a, field, d, lo, hi)                                                                 \
    { .name = n, .alias = a, .kind = CFG_LL, .value = &srv.field, .dflt = d, .min = lo, .max = hi }
#define M(n, f, field, d, lo, hi, ap)                                                              \
    {                                                                                              \
        .name = n, .kind = CFG_MEMORY, .flags = f, .value = &srv.field, .dflt = d, .min = lo,      \
        .max = hi, .apply = ap                                                                     \
    }
/* An int accepted in lo..hi and clamped to clo..chi. */
#define IC(n, f, field, d, lo, hi, clo, chi)                                                       \
    {                                                                                              \
        .name = n, .kind = CFG_INT, .flags = f, .value = &srv.field, .dflt = d, .min = lo,         \
        .max = hi, .clamp_min = clo, .clamp_max = chi                                              \
    }
#define E(n, f, field, d, tbl)                                                                     \
    { .name = n, .kind = CFG_ENUM, .flags = f, .value = &srv.field, .dflt = d, .enums = tbl }
#define S(n, f, field, d)                                                                          \
    { .name = n, .kind = CFG_STRING, .flags = f, .value = &srv.field, .dflt = d }
#define MB (1024LL * 1024)
#define X(n, f, field, d, s, g)                                                                    \
    { .name = n, .kind = CFG_SPECIAL, .flags = f, .value = field, .dflt = d, .set = s, .get = g }

static const config_def server_config_table[] = {
    {.name = "bind",
     .kind = CFG_SPECIAL,
     .dflt = "* -::*",
     .set = set_bind,
     .get = get_bind,
     .apply = apply_bind,
     .free = free_bind},
    I("port", 0, port, "6379", 0, 65535, apply_port),
    S("unixsocket", CFG_IMMUTABLE, unixsocket, ""),
    X("unixsocketperm", CFG_IMMUTABLE, &srv.unixsocketperm, "0", set_octal, get_octal),
    I("tcp-backlog", CFG_IMMUTABLE, tcp_backlog, "511", 0, INT_MAX, NULL),
    I("maxclients", 0, maxclients, "10000", 1, INT_MAX - 256, apply_maxclients),
    L("max-new-connections-per-cycle", 0, max_new_conns_per_cycle, "10", 1, 1000),
    L("max-new-tls-connections-per-cycle", 0, max_new_tls_conns_per_cycle, "1", 1, 1000),
    I("timeout", 0, session.maxidletime, "0", 0, INT_MAX, NULL),
    I("tcp-keepalive", 0, session.tcp_keepalive, "300", 0, INT_MAX, NULL),
    B("protected-mode", 0, protected_mode, "yes"),
    {.name = "requirepass",
     .kind = CFG_BYTES,
     .flags = CFG_SECRET,
     .value = &srv.session.requirepass,
     .dflt = ""},
    I("databases", CFG_IMMUTABLE, db.databases, "16", 1, INT_MAX, NULL),
    IC("hz", 0, hz, "10", 0, INT_MAX, 1, 500),
    /* Below 1mb every ordinary client would be refused or closed. */
    M("proto-max-bulk-len", 0, session.proto_max_bulk_len, "512mb", MB, LONG_MAX, NULL),
    M("client-query-buffer-limit", 0, session.client_max_querybuf_len, "1gb", MB, LONG_MAX, NULL),
    X("client-output-buffer-limit", 0, NULL,
      "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", set_obuf_limit,
      get_obuf_limit),
    M("maxmemory", 0, db.maxmemory, "0", 0, LLONG_MAX, apply_maxmemory),
    E("maxmemory-policy", 0, db.maxmemory_policy, "noeviction", enum_policy),
    I("maxmemory-samples", 0, db.maxmemory_samples, "5", 1, 64, NULL),
    I("lfu-log-factor", 0, db.lfu_log_factor, "10", 0, INT_MAX, NULL),
    I("lfu-decay-time", 0, db.lfu_decay_time, "1", 0, INT_MAX, NULL),
    /* The command log (Valkey 8.1); the slow log's keep their slowlog-*
     * names as aliases. */
    LA("commandlog-execution-slower-than", "slowlog-log-slower-than",
       session.commandlog[0].threshold, "10000", -1, LLONG_MAX),
    LA("commandlog-slow-execution-max-len", "slowlog-max-len", session.commandlog[0].max_len, "128",
       0, LONG_MAX),
    LA("commandlog-request-larger-than", NULL, session.commandlog[1].threshold, "1048576", -1,
       LLONG_MAX),
    LA("commandlog-large-request-max-len", NULL, session.commandlog[1].max_len, "128", 0, LONG_MAX),
    LA("commandlog-reply-larger-than", NULL, session.commandlog[2].threshold, "1048576", -1,
       LLONG_MAX),
    LA("commandlog-large-reply-max-len", NULL, session.commandlog[2].max_len, "128", 0, LONG_MAX),
    /* How long a command runs before the other clients are answered with
     * its busy error (session/busy.h). */
    LA("busy-reply-threshold", "lua-time-limit", busy.reply_threshold_ms, "5000", 0, LONG_MAX),
    L("latency-monitor-threshold", 0, session.latency_monitor_threshold, "0", 0, LLONG_MAX),
    B("latency-tracking", 0, session.latency_tracking, "yes"),
    X("latency-tracking-info-percentiles", 0, NULL, "50 99 99.9", set_percentiles, get_percentiles),
    L("tracking-table-max-keys", 0, tracking.table_max_keys, "1000000", 0, LONG_MAX),
    E("loglevel", 0, log.verbosity, "notice", enum_loglevel),
    S("logfile", CFG_IMMUTABLE, log.logfile, ""),
    S("pidfile", CFG_IMMUTABLE, pidfile, ""),
    B("daemonize", CFG_IMMUTABLE, daemonize, "no"),
    I("io-threads", 0, io_threads_num, "1", 1, 256, NULL),
    I("events-per-io-thread", 0, events_per_io_thread, "2", 0, INT_MAX, NULL),
    B("io-threads-do-reads", 0, io_threads_do_reads, "no"),
    I("active-expire-effort", 0, db.active_expire_effort, "1", 1, 10, NULL),
    /* Valkey 8.0's defaults: every deletion may free lazily. */
    B("lazyfree-lazy-eviction", 0, db.lazyfree.eviction, "yes"),
    B("lazyfree-lazy-expire", 0, db.lazyfree.expire, "yes"),
    B("lazyfree-lazy-server-del", 0, db.lazyfree.server_del, "yes"),
    B("lazyfree-lazy-user-del", 0, db.lazyfree.user_del, "yes"),
    B("lazyfree-lazy-user-flush", 0, db.lazyfree.user_flush, "yes"),
    E("enable-debug-command", CFG_IMMUTABLE, enable_debug_cmd, "no", enum_debug_cmd),
    E("enable-module-command", CFG_IMMUTABLE, enable_module_cmd, "no", enum_debug_cmd),
    X("loadmodule", CFG_IMMUTABLE, NULL, NULL, config_set_loadmodule, config_get_empty),
    X("rename-command", CFG_IMMUTABLE, NULL, NULL, config_set_rename, config_get_empty),
    X("save", 0, NULL, "", set_save, config_get_empty),
    X("appendonly", 0, NULL, "no", set_appendonly, get_no),
    X("notify-keyspace-events", 0, NULL, "", set_notify, get_notify),
};

void server_config_init(void) {
    config_register(server_config_table, K_ARRAY_LEN(server_config_table));
    server_config_compat_init();
    module_config_setup();
    config_set_defaults();
    srv.active_expire_enabled = 1;
}
