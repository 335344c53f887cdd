/* config.c -- the directive table and CONFIG GET/SET/RESETSTAT/REWRITE.
 *
 * Values are bytes, not C strings: a binary-safe directive (requirepass)
 * keeps every byte it was given, NUL included; every other directive refuses
 * a NUL byte instead of silently cutting the value there. CONFIG GET and
 * CONFIG REWRITE format into growable buffers, so no value is cut at a fixed
 * length.
 *
 * CONFIG REWRITE writes each value on one line, escaped the way the reader
 * unescapes it (\n \r \t \a \b \\ \" and \xHH inside double quotes), so a
 * value read back is exactly the bytes that were set and a newline in a
 * value can never become a directive of its own after a restart. Lines the
 * rewrite can regenerate (known directives, loadmodule) are regenerated,
 * never copied. */
#include "config/config.h"

#include "commands/commands.h"
#include "common/common.h"
#include "ds/glob.h"
#include "common/kmem.h"
#include "config/config_file.h"
#include "io/io_threads.h"
#include "module/module.h"
#include "session/reply.h"
#include "server/server.h"
#include "session/slowlog.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef enum config_kind {
    CFG_BOOL,
    CFG_INT,
    CFG_LL,
    CFG_MEMORY,
    CFG_ENUM,
    CFG_STRING, /* a C string (paths): NUL bytes are refused */
    CFG_BYTES,  /* binary-safe (kbytes): secrets may hold any byte */
    CFG_SPECIAL,
} config_kind;

/* A growable output buffer for formatted values; always NUL-terminated. */
typedef struct cfg_out {
    char *ptr;
    size_t len, cap;
} cfg_out;

#define CFG_IMMUTABLE (1 << 0) /* start-up only */
#define CFG_OUT_OF_RANGE (-3)  /* parse result: a number outside min..max */

typedef struct config_enum {
    const char *name;
    int value;
} config_enum;

typedef struct config_def config_def;
struct config_def {
    const char *name;
    const char *alias;
    config_kind kind;
    int flags;
    void *value;
    const char *dflt;
    long long min, max;
    /* Numbers: out-of-range values up to max are accepted and clamped to
     * this range (Valkey treats hz as a hint this way); 0,0 for none. */
    long long clamp_min, clamp_max;
    const config_enum *enums;
    /* CFG_SPECIAL: parse and format by hand. */
    int (*set)(const config_def *d, int argc, char **argv, const char **err);
    void (*get)(const config_def *d, cfg_out *o);
    /* Runs after a successful run-time change. */
    void (*apply)(void);
};

/* ---- output buffers ---- */

static void out_put(cfg_out *o, const char *p, size_t n) {
    if (o->cap - o->len < n + 1) {
        size_t cap = o->cap ? o->cap : 64;
        while (cap - o->len < n + 1)
            cap *= 2;
        o->ptr = km_realloc(o->ptr, cap);
        o->cap = cap;
    }
    if (n) memcpy(o->ptr + o->len, p, n);
    o->len += n;
    o->ptr[o->len] = '\0';
}

__attribute__((format(printf, 2, 3))) static void out_printf(cfg_out *o, const char *fmt, ...) {
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof(buf)) {
        out_put(o, buf, (size_t)n);
        return;
    }
    char *big = km_alloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    out_put(o, big, (size_t)n);
    km_free(big);
}

static void out_cstr(cfg_out *o, const char *s) {
    out_put(o, s, strlen(s));
}

/* ---- enums ---- */

static const config_enum enum_loglevel[] = {
    {"debug", LL_DEBUG}, {"verbose", LL_VERBOSE}, {"notice", LL_NOTICE}, {"warning", LL_WARNING}, {NULL, 0}};
static const config_enum enum_policy[] = {
    {"volatile-lru", MAXMEMORY_VOLATILE_LRU},   {"volatile-lfu", MAXMEMORY_VOLATILE_LFU},
    {"volatile-random", MAXMEMORY_VOLATILE_RANDOM}, {"volatile-ttl", MAXMEMORY_VOLATILE_TTL},
    {"allkeys-lru", MAXMEMORY_ALLKEYS_LRU},     {"allkeys-lfu", MAXMEMORY_ALLKEYS_LFU},
    {"allkeys-random", MAXMEMORY_ALLKEYS_RANDOM}, {"noeviction", MAXMEMORY_NOEVICTION}, {NULL, 0}};
static const config_enum enum_debug_cmd[] = {{"no", 0}, {"yes", 1}, {"local", 2}, {NULL, 0}};

/* ---- special directives ---- */

static int set_bind(const config_def *d, int argc, char **argv, const char **err) {
    if (argc > CONN_MAX_BINDS) {
        *err = "Too many bind addresses specified.";
        return K_ERR;
    }
    for (int i = 0; i < srv.bindaddr_count; i++) km_free(srv.bindaddr[i]);
    for (int i = 0; i < argc; i++) srv.bindaddr[i] = km_strdup(argv[i]);
    srv.bindaddr_count = argc;
    return K_OK;
}

static void get_bind(const config_def *d, cfg_out *o) {
    for (int i = 0; i < srv.bindaddr_count; i++) {
        if (i) out_put(o, " ", 1);
        out_cstr(o, srv.bindaddr[i]);
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

static void get_octal(const config_def *d, cfg_out *o) {
    out_printf(o, "%o", *(unsigned int *)d->value);
}

/* "class hard soft seconds" groups; all are validated before any applies. */
static int set_obuf_limit(const config_def *d, int argc, char **argv, const char **err) {
    client_buffer_limit normal = srv.obuf_limit_normal;
    if (argc % 4 != 0) {
        *err = "Wrong number of arguments in buffer limit configuration.";
        return K_ERR;
    }
    for (int i = 0; i < argc; i += 4) {
        unsigned long long hard, soft;
        char *end;
        errno = 0;
        long long secs = strtoll(argv[i + 3], &end, 10);
        /* Valkey keeps soft seconds in an int; a bigger value would overflow
         * the millisecond arithmetic of the limit check. */
        if (config_parse_memory(argv[i + 1], &hard) != K_OK ||
            config_parse_memory(argv[i + 2], &soft) != K_OK || *end || end == argv[i + 3] ||
            errno || secs < 0 || secs > INT_MAX) {
            *err = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
            return K_ERR;
        }
        if (strcasecmp(argv[i], "normal") == 0)
            normal = (client_buffer_limit){hard, soft, secs};
        else if (strcasecmp(argv[i], "replica") && strcasecmp(argv[i], "slave") && strcasecmp(argv[i], "pubsub")) {
            *err = "Invalid client class specified in buffer limit configuration.";
            return K_ERR;
        }
    }
    srv.obuf_limit_normal = normal;
    return K_OK;
}

static void get_obuf_limit(const config_def *d, cfg_out *o) {
    const client_buffer_limit *l = &srv.obuf_limit_normal;
    out_printf(o, "normal %llu %llu %lld replica 268435456 67108864 60 pubsub 33554432 8388608 60",
               l->hard, l->soft, l->soft_seconds);
}

static config_module_line *module_lines;
static config_module_line **module_lines_tail = &module_lines;
static const char *current_file;
static int current_line;

static int set_loadmodule(const config_def *d, int argc, char **argv, const char **err) {
    config_module_line *m = km_calloc(1, sizeof(*m));
    m->path = km_strdup(argv[0]);
    m->argc = argc - 1;
    m->argv = km_calloc((size_t)(argc ? argc : 1), sizeof(char *));
    for (int i = 1; i < argc; i++) m->argv[i - 1] = km_strdup(argv[i]);
    m->file = km_strdup(current_file ? current_file : "(command line)");
    m->line = current_line;
    *module_lines_tail = m;
    module_lines_tail = &m->next;
    return K_OK;
}

/* rename-command is applied by the server once the command table exists;
 * like loadmodule, the lines are kept with their place in the file. */
static config_rename_line *rename_lines;
static config_rename_line **rename_lines_tail = &rename_lines;

static int set_rename(const config_def *d, int argc, char **argv, const char **err) {
    if (argc != 2) {
        *err = "wrong number of arguments";
        return K_ERR;
    }
    config_rename_line *r = km_calloc(1, sizeof(*r));
    r->from = km_strdup(argv[0]);
    r->to = km_strdup(argv[1]);
    r->file = km_strdup(current_file ? current_file : "(command line)");
    r->line = current_line;
    *rename_lines_tail = r;
    rename_lines_tail = &r->next;
    return K_OK;
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

static void get_no(const config_def *d, cfg_out *o) {
    out_cstr(o, "no");
}

static void get_empty(const config_def *d, cfg_out *o) {
    out_put(o, "", 0);
}

/* ---- apply hooks ---- */

static void apply_maxclients(void) {
    if (srv.el) server_adjust_open_files();
    int want = srv.maxclients + 128;
    if (srv.el && want > event_loop_setsize(srv.el)) event_loop_resize(srv.el, want);
}

static void apply_maxmemory(void) {
    if (srv.maxmemory) server_check_maxmemory();
}


/* ---- the table ---- */

#define B(n, f, field, d) {.name = n, .kind = CFG_BOOL, .flags = f, .value = &srv.field, .dflt = d}
#define I(n, f, field, d, lo, hi, ap) \
    {.name = n, .kind = CFG_INT, .flags = f, .value = &srv.field, .dflt = d, .min = lo, .max = hi, .apply = ap}
#define L(n, f, field, d, lo, hi) \
    {.name = n, .kind = CFG_LL, .flags = f, .value = &srv.field, .dflt = d, .min = lo, .max = hi}
#define M(n, f, field, d, lo, hi, ap) \
    {.name = n, .kind = CFG_MEMORY, .flags = f, .value = &srv.field, .dflt = d, .min = lo, .max = hi, .apply = ap}
/* An int accepted in lo..hi and clamped to clo..chi. */
#define IC(n, f, field, d, lo, hi, clo, chi) \
    {.name = n, .kind = CFG_INT, .flags = f, .value = &srv.field, .dflt = d, .min = lo, .max = hi, \
     .clamp_min = clo, .clamp_max = chi}
#define E(n, f, field, d, tbl) {.name = n, .kind = CFG_ENUM, .flags = f, .value = &srv.field, .dflt = d, .enums = tbl}
#define S(n, f, field, d) {.name = n, .kind = CFG_STRING, .flags = f, .value = &srv.field, .dflt = d}
#define BY(n, f, field, d) {.name = n, .kind = CFG_BYTES, .flags = f, .value = &srv.field, .dflt = d}
#define MB (1024LL * 1024)
#define X(n, f, field, d, s, g) \
    {.name = n, .kind = CFG_SPECIAL, .flags = f, .value = field, .dflt = d, .set = s, .get = g}

static const config_def config_table[] = {
    X("bind", CFG_IMMUTABLE, NULL, "* -::*", set_bind, get_bind),
    I("port", CFG_IMMUTABLE, port, "6379", 0, 65535, NULL),
    S("unixsocket", CFG_IMMUTABLE, unixsocket, ""),
    X("unixsocketperm", CFG_IMMUTABLE, &srv.unixsocketperm, "0", set_octal, get_octal),
    I("tcp-backlog", CFG_IMMUTABLE, tcp_backlog, "511", 0, INT_MAX, NULL),
    I("maxclients", 0, maxclients, "10000", 1, INT_MAX - 256, apply_maxclients),
    I("timeout", 0, maxidletime, "0", 0, INT_MAX, NULL),
    I("tcp-keepalive", 0, tcp_keepalive, "300", 0, INT_MAX, NULL),
    B("protected-mode", 0, protected_mode, "yes"),
    BY("requirepass", 0, requirepass, ""),
    I("databases", CFG_IMMUTABLE, databases, "16", 1, INT_MAX, NULL),
    IC("hz", 0, hz, "10", 0, INT_MAX, 1, 500),
    /* Below 1mb every ordinary client would be refused or closed. */
    M("proto-max-bulk-len", 0, proto_max_bulk_len, "512mb", MB, LONG_MAX, NULL),
    M("client-query-buffer-limit", 0, client_max_querybuf_len, "1gb", MB, LONG_MAX, NULL),
    X("client-output-buffer-limit", 0, NULL,
      "normal 0 0 0 replica 268435456 67108864 60 pubsub 33554432 8388608 60", set_obuf_limit,
      get_obuf_limit),
    M("maxmemory", 0, maxmemory, "0", 0, LLONG_MAX, apply_maxmemory),
    E("maxmemory-policy", 0, maxmemory_policy, "noeviction", enum_policy),
    I("maxmemory-samples", 0, maxmemory_samples, "5", 1, 64, NULL),
    I("lfu-log-factor", 0, lfu_log_factor, "10", 0, INT_MAX, NULL),
    I("lfu-decay-time", 0, lfu_decay_time, "1", 0, INT_MAX, NULL),
    L("slowlog-log-slower-than", 0, slowlog_log_slower_than, "10000", -1, LLONG_MAX),
    L("slowlog-max-len", 0, slowlog_max_len, "128", 0, LONG_MAX),
    E("loglevel", 0, log.verbosity, "notice", enum_loglevel),
    S("logfile", CFG_IMMUTABLE, log.logfile, ""),
    S("pidfile", CFG_IMMUTABLE, pidfile, ""),
    B("daemonize", CFG_IMMUTABLE, daemonize, "no"),
    I("io-threads", 0, io_threads_num, "1", 1, 256, NULL),
    I("events-per-io-thread", 0, events_per_io_thread, "2", 0, INT_MAX, NULL),
    B("io-threads-do-reads", 0, io_threads_do_reads, "no"),
    I("active-expire-effort", 0, active_expire_effort, "1", 1, 10, NULL),
    B("lazyfree-lazy-user-del", 0, lazyfree_lazy_user_del, "no"),
    B("lazyfree-lazy-user-flush", 0, lazyfree_lazy_user_flush, "no"),
    E("enable-debug-command", CFG_IMMUTABLE, enable_debug_cmd, "no", enum_debug_cmd),
    E("enable-module-command", CFG_IMMUTABLE, enable_module_cmd, "no", enum_debug_cmd),
    X("loadmodule", CFG_IMMUTABLE, NULL, NULL, set_loadmodule, get_empty),
    X("rename-command", CFG_IMMUTABLE, NULL, NULL, set_rename, get_empty),
    X("save", 0, NULL, "", set_save, get_empty),
    X("appendonly", 0, NULL, "no", set_appendonly, get_no),
};

/* Valkey directives Keel accepts but does not implement (a file using them
 * starts with a warning naming each). */
// clang-format off
static const char *const valkey_known[] = {
     "acl-pubsub-default", "acllog-max-len", "active-defrag-cycle-max", "active-defrag-cycle-min",
    "active-defrag-ignore-bytes", "active-defrag-max-scan-fields", "active-defrag-threshold-lower",
    "active-defrag-threshold-upper", "activedefrag", "activerehashing", "always-show-logo",
    "aof-disable-auto-gc", "aof-load-truncated", "aof-rewrite-incremental-fsync", "aof-timestamp-enabled",
    "aof-use-rdb-preamble", "appenddirname", "appendfilename", "appendfsync",
    "auto-aof-rewrite-min-size", "auto-aof-rewrite-percentage", "availability-zone", "bind-source-addr",
    "busy-reply-threshold", "client-default-resp", "cluster-allow-pubsubshard-when-down",
    "cluster-allow-reads-when-down", "cluster-allow-replica-migration", "cluster-announce-bus-port",
    "cluster-announce-client-ipv4", "cluster-announce-client-ipv6", "cluster-announce-hostname",
    "cluster-announce-human-nodename", "cluster-announce-ip", "cluster-announce-port",
    "cluster-announce-tls-port", "cluster-blacklist-ttl", "cluster-config-file",
    "cluster-link-sendbuf-limit", "cluster-migration-barrier", "cluster-node-timeout", "cluster-ping-interval",
    "cluster-port", "cluster-preferred-endpoint-type", "cluster-replica-no-failover",
    "cluster-replica-validity-factor", "cluster-require-full-coverage", "cluster-slave-no-failover",
    "cluster-slave-validity-factor", "cluster-slot-stats-enabled", "crash-log-enabled", "crash-memcheck-enabled",
    "dbfilename", "debug-context", "dir", "disable-thp", "dual-channel-replication-enabled", "dynamic-hz",
    "enable-debug-assert", "enable-protected-configs",
    "extended-redis-compatibility", "hash-max-listpack-entries", "hash-max-listpack-value",
    "hash-max-ziplist-entries", "hash-max-ziplist-value", "hide-user-data-from-log", "hll-sparse-max-bytes",
    "ignore-warnings", "jemalloc-bg-thread", "key-load-delay", "latency-monitor-threshold", "latency-tracking",
    "latency-tracking-info-percentiles", "lazyfree-lazy-eviction", "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del", "list-compress-depth", "list-max-listpack-size", "list-max-ziplist-size",
    "loading-process-events-interval-bytes", "locale-collate", "log-format", "log-timestamp-format",
    "lua-time-limit", "masterauth", "masteruser", "max-new-connections-per-cycle",
    "max-new-tls-connections-per-cycle", "maxmemory-eviction-tenacity",
    "min-replicas-max-lag", "min-slaves-max-lag",
    "no-appendfsync-on-rewrite", "notify-keyspace-events", "oom-score-adj", "oom-score-adj-values",
    "prefetch-batch-max-size", "primaryauth", "primaryuser", "proc-title-template", "propagation-error-behavior",
    "rdb-del-sync-files", "rdb-key-save-delay", "rdb-save-incremental-fsync", "rdbchecksum", "rdbcompression",
    "repl-backlog-size", "repl-backlog-ttl", "repl-disable-tcp-nodelay", "repl-diskless-load",
    "repl-diskless-sync", "repl-diskless-sync-delay", "repl-diskless-sync-max-replicas",
    "repl-ping-replica-period", "repl-ping-slave-period", "repl-timeout", "replica-announce-ip",
    "replica-announce-port", "replica-announced", "replica-ignore-disk-write-errors", "replica-ignore-maxmemory",
    "replica-lazy-flush", "replica-priority", "replica-read-only", "replica-serve-stale-data",
    "req-res-logfile", "sanitize-dump-payload", "set-max-intset-entries", "set-max-listpack-entries",
    "set-max-listpack-value", "set-proc-title", "shutdown-on-sigint", "shutdown-on-sigterm", "shutdown-timeout",
    "slave-announce-ip", "slave-announce-port", "slave-ignore-maxmemory", "slave-lazy-flush", "slave-priority",
    "slave-read-only", "slave-serve-stale-data", "socket-mark-id", "stop-writes-on-bgsave-error",
    "stream-node-max-bytes", "stream-node-max-entries", "supervised", "syslog-enabled", "syslog-facility",
    "syslog-ident", "tls-auth-clients", "tls-ca-cert-dir", "tls-ca-cert-file", "tls-cert-file", "tls-ciphers",
    "tls-ciphersuites", "tls-client-cert-file", "tls-client-key-file", "tls-client-key-file-pass",
    "tls-dh-params-file", "tls-key-file", "tls-key-file-pass", "tls-prefer-server-ciphers",
    "tls-protocols", "tls-session-cache-size", "tls-session-cache-timeout",
    "tls-session-caching", "tracking-table-max-keys", "use-exit-on-panic",
    "watchdog-period", "zset-max-listpack-entries", "zset-max-listpack-value", "zset-max-ziplist-entries",
    "zset-max-ziplist-value",
};
// clang-format on

/* Valkey directives that protect the server or its data and that Keel does
 * not implement yet. Ignoring one would start a server less safe than the
 * operator asked for (`user default off` letting everyone in), so a file
 * using one is refused at start-up, unless its value is the one that asks
 * for nothing (harmless, NULL when there is none). */
typedef struct config_refused {
    const char *name;
    const char *harmless;
    const char *why;
} config_refused;

#define NO_ACL                                                                                     \
    "Keel has no ACL users yet, so its access rules cannot be enforced (requirepass sets the "     \
    "default user's password)"
#define NO_REPL "replication is not available in Keel yet"
#define NO_TLS "TLS is not available in Keel yet, so the connections would not be encrypted"

static const config_refused config_refused_table[] = {
    {"user", NULL, NO_ACL},
    {"aclfile", NULL, NO_ACL},
    {"replicaof", NULL, NO_REPL ": this server would run as a writable primary"},
    {"slaveof", NULL, NO_REPL ": this server would run as a writable primary"},
    {"min-replicas-to-write", "0", NO_REPL ": writes would not wait for replicas"},
    {"min-slaves-to-write", "0", NO_REPL ": writes would not wait for replicas"},
    {"cluster-enabled", "no", "cluster mode is not available in Keel yet"},
    {"tls-port", "0", NO_TLS},
    {"tls-replication", "no", NO_TLS},
    {"tls-cluster", "no", NO_TLS},
    {"maxmemory-clients", "0",
     "client eviction is not available in Keel yet, so client memory would not be limited"},
    {"unixsocketgroup", NULL,
     "Keel cannot set the unix socket's group yet, so the socket would be open to another group "
     "than asked"},
    {"sentinel", NULL, "Keel does not run as a Sentinel"},
};

static const config_refused *config_refused_find(const char *name) {
    for (size_t i = 0; i < K_ARRAY_LEN(config_refused_table); i++)
        if (!strcasecmp(config_refused_table[i].name, name)) return &config_refused_table[i];
    return NULL;
}

static const config_def *config_find(const char *name) {
    for (size_t i = 0; i < K_ARRAY_LEN(config_table); i++) {
        const config_def *d = &config_table[i];
        if (!strcasecmp(d->name, name) || (d->alias && !strcasecmp(d->alias, name))) return d;
    }
    return NULL;
}

static int config_valkey_known(const char *name) {
    for (size_t i = 0; i < K_ARRAY_LEN(valkey_known); i++)
        if (!strcasecmp(valkey_known[i], name)) return 1;
    return 0;
}

/* ---- value parsing ---- */

int config_parse_memory(const char *s, unsigned long long *out) {
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)*s)) return K_ERR; /* no sign, no spaces */
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return K_ERR;
    static const struct {
        const char *unit;
        unsigned long long mul;
    } units[] = {{"", 1}, {"b", 1}, {"k", 1000}, {"kb", 1024}, {"m", 1000000}, {"mb", 1024 * 1024},
                 {"g", 1000000000ULL}, {"gb", 1024ULL * 1024 * 1024}};
    for (size_t i = 0; i < K_ARRAY_LEN(units); i++) {
        if (strcasecmp(end, units[i].unit) == 0) {
            if (v > ULLONG_MAX / units[i].mul) return K_ERR;
            *out = v * units[i].mul;
            return K_OK;
        }
    }
    return K_ERR;
}

static int config_parse_bool(const char *s, int *out) {
    if (!strcasecmp(s, "yes")) *out = 1;
    else if (!strcasecmp(s, "no")) *out = 0;
    else return K_ERR;
    return K_OK;
}

static int config_parse_ll(const char *s, long long min, long long max, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) {
        unsigned long long m; /* "1k" style values are accepted for numbers too */
        if (config_parse_memory(s, &m) != K_OK || m > LLONG_MAX) return K_ERR;
        v = (long long)m;
    }
    if (v < min || v > max) return CFG_OUT_OF_RANGE;
    *out = v;
    return K_OK;
}

static int config_set_enum(const config_def *d, const char *s, const char **err) {
    static char msg[512];
    for (const config_enum *e = d->enums; e->name; e++) {
        if (!strcasecmp(e->name, s)) {
            *(int *)d->value = e->value;
            return K_OK;
        }
    }
    /* Valkey lists the accepted values in the error. */
    size_t off = (size_t)snprintf(msg, sizeof(msg), "argument(s) must be one of the following: ");
    for (const config_enum *e = d->enums; e->name && off < sizeof(msg); e++)
        off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s%s", e->name, e[1].name ? ", " : "");
    *err = msg;
    return K_ERR;
}

static int config_set_number(const config_def *d, const char *s, const char **err) {
    long long v;
    int rv = config_parse_ll(s, d->min, d->max, &v);
    if (rv == K_ERR) {
        *err = "argument couldn't be parsed into an integer";
        return K_ERR;
    }
    if (rv == CFG_OUT_OF_RANGE) {
        static char msg[128];
        snprintf(msg, sizeof(msg), "argument must be between %lld and %lld inclusive", d->min, d->max);
        *err = msg;
        return K_ERR;
    }
    if (d->clamp_max) v = v < d->clamp_min ? d->clamp_min : v > d->clamp_max ? d->clamp_max : v;
    if (d->kind == CFG_INT) *(int *)d->value = (int)v;
    else *(long long *)d->value = v;
    return K_OK;
}

static int config_set_memory(const config_def *d, const char *s, const char **err) {
    unsigned long long v;
    if (config_parse_memory(s, &v) != K_OK || v > LLONG_MAX) {
        *err = "argument must be a memory value";
        return K_ERR;
    }
    if ((long long)v < d->min || (long long)v > d->max) {
        static char msg[128];
        snprintf(msg, sizeof(msg), "argument must be between %lld and %lld inclusive", d->min,
                 d->max);
        *err = msg;
        return K_ERR;
    }
    *(unsigned long long *)d->value = v;
    return K_OK;
}

static void config_set_bytes_value(const config_def *d, const char *s, size_t len) {
    kbytes *b = d->value;
    km_free(b->ptr);
    *b = (kbytes){len ? km_strndup(s, len) : NULL, len};
}

/* Only binary-safe directives may hold a NUL byte: anywhere else it would
 * silently cut the value (a port "80\0junk" would read as 80). */
static int config_args_have_nul(int argc, char **argv, const size_t *argl) {
    for (int i = 0; argl && i < argc; i++)
        if (memchr(argv[i], '\0', argl[i])) return 1;
    return 0;
}

/* Applies argv (argl[i] bytes each; NULL argl: C strings) to d. Returns
 * K_OK or K_ERR with *err a static reason. */
static int config_apply_args(const config_def *d, int argc, char **argv, const size_t *argl,
                             const char **err) {
    if (d->kind != CFG_BYTES && config_args_have_nul(argc, argv, argl)) {
        *err = "argument must not contain NUL bytes";
        return K_ERR;
    }
    if (d->kind == CFG_SPECIAL) return d->set(d, argc, argv, err);
    if (argc != 1) {
        *err = "wrong number of arguments";
        return K_ERR;
    }
    const char *s = argv[0];
    switch (d->kind) {
    case CFG_BOOL:
        if (config_parse_bool(s, (int *)d->value) == K_OK) return K_OK;
        *err = "argument must be 'yes' or 'no'";
        return K_ERR;
    case CFG_INT:
    case CFG_LL: return config_set_number(d, s, err);
    case CFG_MEMORY:
        return config_set_memory(d, s, err);
    case CFG_ENUM: return config_set_enum(d, s, err);
    case CFG_STRING: {
        char **slot = d->value;
        km_free(*slot);
        *slot = s[0] ? km_strdup(s) : NULL;
        return K_OK;
    }
    case CFG_BYTES:
        config_set_bytes_value(d, s, argl ? argl[0] : strlen(s));
        return K_OK;
    default: return K_ERR;
    }
}

/* Appends d's current value to o. */
static void config_format(const config_def *d, cfg_out *o) {
    switch (d->kind) {
    case CFG_BOOL:
        out_cstr(o, *(int *)d->value ? "yes" : "no");
        break;
    case CFG_INT:
        out_printf(o, "%d", *(int *)d->value);
        break;
    case CFG_LL:
        out_printf(o, "%lld", *(long long *)d->value);
        break;
    case CFG_MEMORY:
        out_printf(o, "%llu", *(unsigned long long *)d->value);
        break;
    case CFG_ENUM:
        for (const config_enum *e = d->enums; e->name; e++)
            if (e->value == *(int *)d->value) {
                out_cstr(o, e->name);
                break;
            }
        break;
    case CFG_STRING:
        out_cstr(o, *(char **)d->value ? *(char **)d->value : "");
        break;
    case CFG_BYTES:
        out_put(o, ((kbytes *)d->value)->ptr, ((kbytes *)d->value)->len);
        break;
    case CFG_SPECIAL:
        d->get(d, o);
        break;
    }
    if (!o->ptr) out_put(o, "", 0);
}

/* ---- defaults and loading ---- */

/* Splits a default like "* -::*" and applies it. */
static void config_apply_default(const config_def *d) {
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", d->dflt);
    char *argv[16];
    int argc = 0;
    for (char *tok = strtok(buf, " "); tok && argc < 16; tok = strtok(NULL, " ")) argv[argc++] = tok;
    if (argc == 0) argv[argc++] = buf;
    const char *err;
    config_apply_args(d, argc, argv, NULL, &err);
}

void config_set_defaults(void) {
    for (size_t i = 0; i < K_ARRAY_LEN(config_table); i++)
        if (config_table[i].dflt) config_apply_default(&config_table[i]);
    srv.active_expire_enabled = 1;
}

static char *config_errf(const char *fmt, const char *a, const char *b) {
    char buf[512];
    snprintf(buf, sizeof(buf), fmt, a, b);
    return km_strdup(buf);
}

/* `<module>.<name> value`: modules load after the file is read, so the
 * module layer keeps the value until the parameter is registered. Module
 * parameters cross the ABI as C strings, so a NUL byte is refused. */
static int config_module_param_line(const char *file, int line, int argc, char **argv,
                                    const size_t *argl, char **err) {
    char *reason = NULL;
    if (argc != 2) {
        *err = config_errf("wrong number of arguments for '%s'%s", argv[0], "");
        return -1;
    }
    if (config_args_have_nul(1, argv + 1, argl + 1)) {
        *err = config_errf("'%s': %s", argv[0], "argument must not contain NUL bytes");
        return -1;
    }
    if (module_config_file_value(argv[0], argv[1], file, line, &reason) == K_OK) return 0;
    *err = config_errf("'%s': %s", argv[0], reason);
    km_free(reason);
    return -1;
}

/* A Valkey directive Keel does not implement: ignored with a warning, or
 * refused when ignoring it would leave the server less protected. */
static int config_unimplemented_line(const char *file, int line, int argc, char **argv,
                                     char **err) {
    const config_refused *r = config_refused_find(argv[0]);
    if (r && !(r->harmless && argc == 2 && !strcasecmp(argv[1], r->harmless))) {
        *err = config_errf("'%s' is not supported: %s", argv[0], r->why);
        return -1;
    }
    if (r || config_valkey_known(argv[0])) {
        log_write(LL_WARNING, "%s:%d: directive '%s' has no effect in Keel and is ignored", file,
                  line, argv[0]);
        return 0;
    }
    *err = config_errf("Bad directive or wrong number of arguments: '%s'%s", argv[0], "");
    return -1;
}

static int config_line(void *priv, const char *file, int line, int argc, char **argv,
                       const size_t *argl, char **err) {
    current_file = file;
    current_line = line;
    const config_def *d = config_find(argv[0]);
    if (!d && strchr(argv[0], '.'))
        return config_module_param_line(file, line, argc, argv, argl, err);
    if (!d) return config_unimplemented_line(file, line, argc, argv, err);
    const char *reason;
    if (argc < 2 && d->kind != CFG_STRING && d->kind != CFG_BYTES) {
        *err = config_errf("wrong number of arguments for '%s'%s", argv[0], "");
        return -1;
    }
    char *empty = "";
    size_t zero = 0;
    int rv = argc > 1 ? config_apply_args(d, argc - 1, argv + 1, argl + 1, &reason)
                      : config_apply_args(d, 1, &empty, &zero, &reason);
    if (rv != K_OK) {
        *err = config_errf("'%s': %s", argv[0], reason);
        return -1;
    }
    return 0;
}

int config_load(const char *path, const char *overrides, char **err) {
    if (path && config_file_load(path, config_line, NULL, err) != 0) return K_ERR;
    if (overrides && config_text_load(overrides, strlen(overrides), "(command line)", config_line, NULL, err) != 0)
        return K_ERR;
    current_file = NULL;
    return K_OK;
}

/* A special directive's value is words separated by spaces (Valkey splits
 * CONFIG SET values of multi-argument directives the same way). */
/* Returns the word count, or -1 past max (a word is never dropped). */
static int config_split_words(char *copy, char **argv, size_t *argl, int max) {
    int argc = 0;
    for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
        if (argc == max) return -1;
        argl[argc] = strlen(tok);
        argv[argc++] = tok;
    }
    return argc;
}

/* A module parameter: a C string crosses the ABI, so NUL is refused. */
static int config_set_module(const char *name, const char *value, size_t len, char **err) {
    if (memchr(value, '\0', len)) {
        *err = km_strdup("argument must not contain NUL bytes");
        return K_ERR;
    }
    char *copy = km_strndup(value, len);
    int rv = module_config_set(name, copy, err);
    km_free(copy);
    return rv;
}

int config_set_bytes(const char *name, const char *value, size_t len, char **err) {
    const config_def *d = config_find(name);
    if (!d && strchr(name, '.')) return config_set_module(name, value, len, err);
    if (!d || (d->flags & CFG_IMMUTABLE)) {
        *err = d ? km_strdup("can't set immutable config") : config_errf("Unknown option '%s'%s", name, "");
        return K_ERR;
    }
    const char *reason;
    char *argv[64];
    size_t argl[64];
    int argc = 0;
    char *copy = km_strndup(value, len);
    if (d->kind == CFG_SPECIAL && !memchr(value, '\0', len))
        argc = config_split_words(copy, argv, argl, 64);
    if (argc < 0) {
        km_free(copy);
        *err = km_strdup("too many arguments (max 64)");
        return K_ERR;
    }
    if (argc == 0) { /* one value; or an empty one, e.g. save "" */
        argv[0] = copy;
        argl[0] = len;
        argc = 1;
    }
    int rv = config_apply_args(d, argc, argv, argl, &reason);
    km_free(copy);
    if (rv != K_OK) {
        *err = km_strdup(reason);
        return K_ERR;
    }
    if (d->apply) d->apply();
    return K_OK;
}

int config_set(const char *name, const char *value, char **err) {
    return config_set_bytes(name, value, strlen(value), err);
}

char *config_get_value(const char *name, size_t *len) {
    const config_def *d = config_find(name);
    if (!d) {
        char *v = module_config_value(name);
        if (v) *len = strlen(v);
        return v;
    }
    cfg_out o = {0};
    config_format(d, &o);
    *len = o.len;
    return o.ptr;
}

int config_get(const char *name, char *buf, size_t len) {
    size_t n;
    char *v = config_get_value(name, &n);
    if (!v) return K_ERR;
    if (len) snprintf(buf, len, "%s", v);
    km_free(v);
    return K_OK;
}

config_module_line *config_module_lines(void) {
    return module_lines;
}

size_t config_names(const char **out, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < K_ARRAY_LEN(config_table); i++)
        if (config_table[i].get != get_empty && n < max) out[n++] = config_table[i].name;
    return n;
}

config_rename_line *config_rename_lines(void) {
    return rename_lines;
}

static void config_free_lines(void) {
    while (module_lines) {
        config_module_line *m = module_lines;
        module_lines = m->next;
        for (int i = 0; i < m->argc; i++) km_free(m->argv[i]);
        km_free(m->argv);
        km_free(m->path);
        km_free(m->file);
        km_free(m);
    }
    module_lines_tail = &module_lines;
    while (rename_lines) {
        config_rename_line *r = rename_lines;
        rename_lines = r->next;
        km_free(r->from);
        km_free(r->to);
        km_free(r->file);
        km_free(r);
    }
    rename_lines_tail = &rename_lines;
}

void config_free(void) {
    config_free_lines();
    for (size_t i = 0; i < K_ARRAY_LEN(config_table); i++) {
        const config_def *d = &config_table[i];
        if (d->kind == CFG_STRING) {
            km_free(*(char **)d->value);
            *(char **)d->value = NULL;
        } else if (d->kind == CFG_BYTES) {
            config_set_bytes_value(d, NULL, 0);
        }
    }
    for (int i = 0; i < srv.bindaddr_count; i++) km_free(srv.bindaddr[i]);
    srv.bindaddr_count = 0;
}

/* ---- CONFIG command ---- */

/* Module parameters matching CONFIG GET's patterns: counted first (the map
 * length comes first), then emitted. */
typedef struct config_get_modules {
    client *c;
    int count;
    int emit;
} config_get_modules;

static void config_get_module_param(const char *name, const char *value, int is_default, void *priv) {
    config_get_modules *g = priv;
    for (int a = 2; a < g->c->argc; a++) {
        if (!glob_match(g->c->argv[a].ptr, g->c->argv[a].len, name, strlen(name), 1)) continue;
        g->count++;
        if (g->emit) {
            reply_bulk_cstr(g->c, name);
            reply_bulk_cstr(g->c, value);
        }
        return;
    }
}

void config_get_command(client *c) {
    const config_def *hits[K_ARRAY_LEN(config_table)];
    int n = 0;
    config_get_modules mods = {.c = c};
    module_config_foreach(config_get_module_param, &mods);
    for (size_t i = 0; i < K_ARRAY_LEN(config_table); i++) {
        const config_def *d = &config_table[i];
        for (int a = 2; a < c->argc; a++) {
            if (glob_match(c->argv[a].ptr, c->argv[a].len, d->name, strlen(d->name), 1)) {
                hits[n++] = d;
                break;
            }
        }
    }
    reply_map(c, n + mods.count);
    for (int i = 0; i < n; i++) {
        cfg_out o = {0};
        config_format(hits[i], &o);
        reply_bulk_cstr(c, hits[i]->name);
        reply_bulk(c, o.ptr, o.len);
        km_free(o.ptr);
    }
    mods.emit = 1;
    module_config_foreach(config_get_module_param, &mods);
}

/* The name CONFIG SET reports and restores: a directive's own name (not an
 * alias), or a module parameter's; NULL if neither exists. */
static char *config_canonical_name(const char *name) {
    const config_def *d = config_find(name);
    if (d) return km_strdup(d->name);
    char *value = strchr(name, '.') ? module_config_value(name) : NULL;
    if (!value) return NULL;
    km_free(value);
    char *lower = km_strdup(name);
    for (char *p = lower; *p; p++) *p = (char)tolower((unsigned char)*p);
    return lower;
}

/* Directives whose values are secrets, hidden from the slow log. */
static int defs_redact(const char *name) {
    return !strcasecmp(name, "requirepass") || !strcasecmp(name, "masterauth");
}

/* Applies name/value pairs all or nothing: on a failure the values set so
 * far are put back. */
void config_set_command(client *c) {
    int pairs = (c->argc - 2) / 2;
    if ((c->argc - 2) % 2) { /* a name without its value */
        reply_syntax_error(c);
        return;
    }
    kbytes *old = km_calloc((size_t)pairs, sizeof(kbytes));
    char **names = km_calloc((size_t)pairs, sizeof(char *));
    int done = 0;
    char *err = NULL;
    const char *failed = NULL;
    for (int i = 0; i < pairs && !failed; i++) {
        char name[128];
        const karg *n = &c->argv[2 + 2 * i], *v = &c->argv[3 + 2 * i];
        snprintf(name, sizeof(name), "%.*s", (int)n->len, n->ptr);
        if (defs_redact(name)) client_redact_arg(c, 3 + 2 * i);
        /* a name cut by the buffer or by a NUL byte names nothing */
        names[i] = strlen(name) == n->len ? config_canonical_name(name) : NULL;
        if (!names[i]) {
            reply_errorf(c, "ERR Unknown option or number of arguments for CONFIG SET - '%s'", name);
            break;
        }
        for (int j = 0; j < i && !err; j++)
            if (!strcmp(names[j], names[i])) err = km_strdup("duplicate parameter");
        if (!err) {
            old[i].ptr = config_get_value(names[i], &old[i].len);
            if (config_set_bytes(names[i], v->ptr, v->len, &err) == K_OK) done++;
        }
        if (err) failed = names[i];
    }
    if (failed) {
        reply_errorf(c, "ERR CONFIG SET failed (possibly related to argument '%s') - %s", failed, err);
    } else if (done == pairs) {
        reply_ok(c);
    }
    if (done < pairs) {
        for (int i = 0; i < done; i++) {
            char *ignore = NULL;
            config_set_bytes(names[i], old[i].ptr, old[i].len, &ignore);
            km_free(ignore);
        }
    }
    for (int i = 0; i < pairs; i++) {
        km_free(old[i].ptr);
        km_free(names[i]);
    }
    km_free(old);
    km_free(names);
    km_free(err);
}

void config_resetstat_command(client *c) {
    long long *zero[] = {
        &srv.stat_numcommands, &srv.stat_numconnections, &srv.stat_rejected_conn, &srv.stat_expiredkeys,
        &srv.stat_evictedkeys, &srv.stat_keyspace_hits, &srv.stat_keyspace_misses, &srv.stat_net_input_bytes,
        &srv.stat_net_output_bytes, &srv.stat_total_error_replies, &srv.stat_unexpected_error_replies,
        &srv.stat_client_qbuf_limit_disconnections,
        &srv.stat_client_outbuf_limit_disconnections, &srv.stat_expired_time_cap_reached_count,
        &srv.stat_evictedclients,
    };
    for (size_t i = 0; i < K_ARRAY_LEN(zero); i++) *zero[i] = 0;
    srv.stat_peak_memory = 0;
    io_stats = (io_threads_stats){0};
    command_reset_stats();
    reply_errorstats_reset();
    reply_ok(c);
}

/* ---- CONFIG REWRITE ---- */

/* A byte written as is inside double quotes: printable ASCII other than the
 * quote and the backslash. Everything else is escaped. */
static int config_plain_byte(unsigned char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

/* Writes len bytes so that the reader (splitargs) gives them back exactly,
 * whatever they are: double-quoted, with \n \r \t \a \b \\ \" and \xHH
 * escapes, as Valkey's sdscatrepr writes them. Nothing here can end the
 * line. */
static void config_write_quoted(FILE *f, const char *p, size_t len) {
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        const char *esc = c == '\n'   ? "\\n"
                          : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t"
                          : c == '\a' ? "\\a"
                          : c == '\b' ? "\\b"
                          : c == '"'  ? "\\\""
                          : c == '\\' ? "\\\\"
                                      : NULL;
        if (esc)
            fputs(esc, f);
        else if (config_plain_byte(c))
            fputc(c, f);
        else
            fprintf(f, "\\x%02x", c);
    }
    fputc('"', f);
}

/* A word of a number, an enum or a special directive: written bare when
 * that reads back the same, quoted otherwise. */
static void config_write_word(FILE *f, const char *p, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (!config_plain_byte((unsigned char)p[i]) || p[i] == ' ' || p[i] == '\'') {
            config_write_quoted(f, p, len);
            return;
        }
    if (len == 0)
        config_write_quoted(f, p, len);
    else
        fwrite(p, 1, len, f);
}

/* Memory values are written back in the largest exact unit ("5mb"), as
 * Valkey's CONFIG REWRITE does. */
static void config_format_memory_human(const config_def *d, cfg_out *o) {
    unsigned long long v = *(unsigned long long *)d->value;
    static const struct {
        const char *unit;
        unsigned long long mul;
    } units[] = {{"gb", 1024ULL * 1024 * 1024}, {"mb", 1024 * 1024}, {"kb", 1024}};
    for (size_t i = 0; i < K_ARRAY_LEN(units); i++) {
        if (v && v % units[i].mul == 0) {
            out_printf(o, "%llu%s", v / units[i].mul, units[i].unit);
            return;
        }
    }
    out_printf(o, "%llu", v);
}

static void config_write_directive(FILE *f, const config_def *d) {
    cfg_out o = {0};
    if (d->kind == CFG_MEMORY)
        config_format_memory_human(d, &o);
    else
        config_format(d, &o);
    fputs(d->name, f);
    if (d->kind == CFG_STRING || d->kind == CFG_BYTES) {
        fputc(' ', f);
        config_write_quoted(f, o.ptr, o.len);
    } else if (d->kind == CFG_SPECIAL) { /* space-separated words, e.g. bind */
        const char *p = o.ptr, *end = o.ptr + o.len;
        do {
            const char *sp = memchr(p, ' ', (size_t)(end - p));
            size_t n = sp ? (size_t)(sp - p) : (size_t)(end - p);
            fputc(' ', f);
            config_write_word(f, p, n);
            p += n + 1;
        } while (p < end);
    } else {
        fputc(' ', f);
        config_write_word(f, o.ptr, o.len);
    }
    fputc('\n', f);
    km_free(o.ptr);
}

static void config_write_pair(FILE *f, const char *name, const char *value) {
    fputs(name, f);
    fputc(' ', f);
    config_write_word(f, value, strlen(value));
    fputc('\n', f);
}

/* Module parameters written so far by CONFIG REWRITE. */
typedef struct config_rewrite_modules {
    FILE *out;
    char **names;
    int count;
} config_rewrite_modules;

static int config_rewrite_module_seen(const config_rewrite_modules *r, const char *name) {
    for (int i = 0; i < r->count; i++)
        if (!strcasecmp(r->names[i], name)) return 1;
    return 0;
}

/* A file line naming a loaded module's parameter gets its current value
 * (first occurrence; later ones are dropped). Returns 0 for other lines. */
static int config_rewrite_module_line(config_rewrite_modules *r, const char *name) {
    char *value = strchr(name, '.') ? module_config_value(name) : NULL;
    if (!value) return 0;
    if (!config_rewrite_module_seen(r, name)) {
        r->names = km_realloc(r->names, sizeof(char *) * (size_t)(r->count + 1));
        r->names[r->count++] = km_strdup(name);
        config_write_pair(r->out, name, value);
    }
    km_free(value);
    return 1;
}

/* Changed module parameters the file lacked are appended. */
static void config_rewrite_module_rest(const char *name, const char *value, int is_default, void *priv) {
    config_rewrite_modules *r = priv;
    if (!is_default && !config_rewrite_module_seen(r, name)) config_write_pair(r->out, name, value);
}

/* One `loadmodule path args...` line per loaded module, as Valkey writes
 * them: the file's own loadmodule lines are never copied. */
static void config_rewrite_loadmodule(const char *name, uint32_t version, const char *path,
                                      int argc, char *const *argv, void *priv) {
    FILE *f = priv;
    fputs("loadmodule ", f);
    config_write_quoted(f, path, strlen(path));
    for (int i = 0; i < argc; i++) {
        fputc(' ', f);
        config_write_quoted(f, argv[i], strlen(argv[i]));
    }
    fputc('\n', f);
}

static int config_is_default(const config_def *d) {
    cfg_out o = {0};
    config_format(d, &o);
    int same;
    if (d->kind == CFG_MEMORY || d->kind == CFG_INT || d->kind == CFG_LL) {
        unsigned long long dv;
        config_parse_memory(d->dflt, &dv);
        same = strtoull(o.ptr, NULL, 10) == dv;
    } else {
        same = d->dflt && strlen(o.ptr) == o.len && strcmp(o.ptr, d->dflt) == 0;
    }
    km_free(o.ptr);
    return same;
}

/* The directive a file line starts with (lowercase not needed: lookups are
 * case-insensitive); "" for blank and comment lines. */
static void config_line_name(const char *line, char *name, size_t size) {
    while (*line == ' ' || *line == '\t')
        line++;
    size_t n = strcspn(line, " \t\r\n");
    if (*line == '#' || n >= size) n = 0;
    memcpy(name, line, n);
    name[n] = '\0';
}

typedef struct config_rewrite_state {
    FILE *out;
    char seen[K_ARRAY_LEN(config_table)];
    int modules_written;
    config_rewrite_modules mods;
} config_rewrite_state;

/* Lines of known directives get their current value (first occurrence;
 * later ones are dropped), loadmodule lines become the loaded modules, every
 * other line (comments, include, rename-command, ignored Valkey directives)
 * is kept as it was. Lines are read whole, however long: a line cut in two
 * would turn its tail into a line of its own. */
static void config_rewrite_line(config_rewrite_state *st, const char *line, size_t len) {
    char name[128];
    config_line_name(line, name, sizeof(name));
    if (!strcasecmp(name, "loadmodule")) {
        if (!st->modules_written++) module_foreach(config_rewrite_loadmodule, st->out);
        return;
    }
    const config_def *d = name[0] ? config_find(name) : NULL;
    if (!d && name[0] && config_rewrite_module_line(&st->mods, name)) return;
    if (!d || d->get == get_empty) {
        fwrite(line, 1, len, st->out);
        if (line[len - 1] != '\n') fputc('\n', st->out); /* a last line without its end */
        return;
    }
    size_t idx = (size_t)(d - config_table);
    if (!st->seen[idx]) config_write_directive(st->out, d);
    st->seen[idx] = 1;
}

static void config_rewrite_rest(config_rewrite_state *st) {
    for (size_t i = 0; i < K_ARRAY_LEN(config_table); i++) {
        const config_def *d = &config_table[i];
        if (!st->seen[i] && d->get != get_empty && !config_is_default(d))
            config_write_directive(st->out, d);
    }
    if (!st->modules_written) module_foreach(config_rewrite_loadmodule, st->out);
    module_config_foreach(config_rewrite_module_rest, &st->mods);
    for (int i = 0; i < st->mods.count; i++)
        km_free(st->mods.names[i]);
    km_free(st->mods.names);
}

int config_rewrite_file(const char *path, char **err) {
    FILE *in = fopen(path, "r");
    if (!in) {
        *err = config_errf("Rewriting config file: %s%s", strerror(errno), "");
        return K_ERR;
    }
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp-%d", path, (int)getpid());
    FILE *out = fopen(tmp, "w");
    if (!out) {
        fclose(in);
        *err = config_errf("Rewriting config file: %s%s", strerror(errno), "");
        return K_ERR;
    }
    config_rewrite_state *st = km_calloc(1, sizeof(*st));
    st->out = st->mods.out = out;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) > 0)
        config_rewrite_line(st, line, (size_t)n);
    free(line); /* getline's buffer comes from libc's malloc */
    fclose(in);
    config_rewrite_rest(st);
    km_free(st);
    int failed = fflush(out) != 0 || fsync(fileno(out)) != 0;
    failed |= fclose(out) != 0;
    if (failed || rename(tmp, path) != 0) {
        unlink(tmp);
        *err = config_errf("Rewriting config file: %s%s", strerror(errno), "");
        return K_ERR;
    }
    return K_OK;
}

void config_rewrite_command(client *c) {
    char *err = NULL;
    if (!srv.configfile) {
        reply_error(c, "ERR The server is running without a config file");
    } else if (config_rewrite_file(srv.configfile, &err) != K_OK) {
        log_write(LL_WARNING, "CONFIG REWRITE failed: %s", err);
        reply_errorf(c, "ERR %s", err);
        km_free(err);
    } else {
        log_write(LL_NOTICE, "CONFIG REWRITE executed with success.");
        reply_ok(c);
    }
}

void config_help_command(client *c) {
    static const char *help[] = {
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>", "    Set the configuration <directive> to <value>.",
        "RESETSTAT", "    Reset statistics reported by the INFO command.",
        "REWRITE", "    Rewrite the configuration file.",
        "HELP", "    Print this help.",
    };
    reply_array(c, (long long)K_ARRAY_LEN(help));
    for (size_t i = 0; i < K_ARRAY_LEN(help); i++) reply_simple(c, help[i]);
}

