/* server_config_compat.c -- the rows of every Valkey 8.0.1 directive Keel
 * has no feature for yet, so CONFIG GET/SET/REWRITE know each one a
 * valkey.conf or a client may use: Valkey's type, default, bounds, aliases
 * and flags (immutable, hidden from patterns, secret, protected).
 *
 * - The encoding thresholds of the aggregate types live in the keyspace's
 *   type_options (keyspace/db.h), for the types that will read them.
 * - The rest live in srv.compat (server/server_compat.h) and have no effect
 *   (CFG_NO_EFFECT: a start-up file setting another value than the default
 *   is warned about; CONFIG SET stores silently).
 * - Directives that protect the server and whose feature Keel lacks keep
 *   only the value that asks for nothing (config_set_refused: cluster-enabled
 *   no, maxmemory-clients 0, ...); replicaof answers "" as a primary does.
 * - The tls-* directives are not here: they are the TLS module's (a
 *   reserved config family, module/module_family.c).
 * - dir has its effect (the working directory), guarded like Valkey's by
 *   enable-protected-configs. */
#include "server/server_compat.h"

#include "common/common.h"
#include "config/config.h"
#include "server/server.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- enums (Valkey's names; the numbers are Keel's own) ---- */

static const config_enum enum_supervised[] = {
    {"upstart", 1}, {"systemd", 2}, {"auto", 3}, {"no", 0}, {NULL, 0}};
static const config_enum enum_syslog_facility[] = {
    {"user", 8},    {"local0", 0}, {"local1", 1}, {"local2", 2}, {"local3", 3},
    {"local4", 4},  {"local5", 5}, {"local6", 6}, {"local7", 7}, {NULL, 0}};
static const config_enum enum_repl_diskless_load[] = {
    {"disabled", 0}, {"on-empty-db", 1}, {"swapdb", 2}, {NULL, 0}};
static const config_enum enum_appendfsync[] = {
    {"everysec", 0}, {"always", 1}, {"no", 2}, {NULL, 0}};
static const config_enum enum_oom_score_adj[] = {
    {"no", 0}, {"yes", 1}, {"relative", 1}, {"absolute", 2}, {NULL, 0}};
static const config_enum enum_acl_pubsub_default[] = {
    {"allchannels", 1}, {"resetchannels", 0}, {NULL, 0}};
static const config_enum enum_sanitize_dump_payload[] = {
    {"no", 0}, {"yes", 1}, {"clients", 2}, {NULL, 0}};
static const config_enum enum_enable_protected_configs[] = {
    {"no", 0}, {"yes", 1}, {"local", 2}, {NULL, 0}};
static const config_enum enum_cluster_preferred_endpoint_type[] = {
    {"ip", 0}, {"hostname", 1}, {"unknown-endpoint", 2}, {NULL, 0}};
static const config_enum enum_propagation_error_behavior[] = {
    {"ignore", 0}, {"panic", 1}, {"panic-on-replicas", 2}, {NULL, 0}};

/* ---- dir: the working directory ---- */

static int set_dir(const config_def *d, int argc, char **argv, const char **err) {
    if (argc != 1) {
        *err = "wrong number of arguments";
        return K_ERR;
    }
    if (argv[0][0] == '\0') {
        *err = "dir can't be empty";
        return K_ERR;
    }
    if (chdir(argv[0]) == -1) {
        *err = strerror(errno);
        return K_ERR;
    }
    return K_OK;
}

static void get_dir(const config_def *d, config_out *o) {
    char buf[4096];
    config_out_cstr(o, getcwd(buf, sizeof(buf)) ? buf : "");
}

/* ---- oom-score-adj-values: three scores ---- */

static int set_oom_values(const config_def *d, int argc, char **argv, const char **err) {
    int v[3];
    if (argc != 3) {
        *err = "wrong number of arguments";
        return K_ERR;
    }
    for (int i = 0; i < 3; i++) {
        char *end;
        errno = 0;
        long long n = strtoll(argv[i], &end, 10);
        if (*end || end == argv[i] || errno || n < -2000 || n > 2000) {
            *err = "Invalid oom-score-adj-values, elements must be between -2000 and 2000.";
            return K_ERR;
        }
        v[i] = (int)n;
    }
    memcpy(srv.compat.oom_score_adj_values, v, sizeof(v));
    return K_OK;
}

static void get_oom_values(const config_def *d, config_out *o) {
    const int *v = srv.compat.oom_score_adj_values;
    config_out_printf(o, "%d %d %d", v[0], v[1], v[2]);
}

/* ---- shutdown-on-sigint / sigterm: flags ---- */

static const config_enum shutdown_flags[] = {
    {"force", 8}, {"now", 4}, {"nosave", 2}, {"save", 1}, {NULL, 0}};

static int set_shutdown_flags(const config_def *d, int argc, char **argv, const char **err) {
    int flags = 0;
    for (int i = 0; i < argc; i++) {
        int bit = -1;
        if (!strcasecmp(argv[i], "default")) bit = 0;
        for (const config_enum *e = shutdown_flags; bit < 0 && e->name; e++)
            if (!strcasecmp(argv[i], e->name)) bit = e->value;
        if (bit < 0) {
            *err = "argument(s) must be one of the following: default, save, nosave, now, force";
            return K_ERR;
        }
        flags |= bit;
    }
    if ((flags & 1) && (flags & 2)) {
        *err = "shutdown options SAVE and NOSAVE can't be used simultaneously";
        return K_ERR;
    }
    *(int *)d->value = flags;
    return K_OK;
}

/* Valkey's order: the most significant flag first. */
static void get_shutdown_flags(const config_def *d, config_out *o) {
    int flags = *(int *)d->value;
    if (!flags) config_out_cstr(o, "default");
    for (const config_enum *e = shutdown_flags; e->name; e++)
        if (flags & e->value) {
            if (o->len) config_out_put(o, " ", 1);
            config_out_cstr(o, e->name);
        }
}

/* ---- the table ---- */

// clang-format off
#define NE CFG_NO_EFFECT
#define IMM CFG_IMMUTABLE
#define CP_(n, a, f, k, field, d) .name = n, .alias = a, .kind = k, .flags = f, .value = &srv.compat.field, .dflt = d
#define CPB(n, a, f, field, d) {CP_(n, a, f, CFG_BOOL, field, d)}
#define CPS(n, a, f, field, d) {CP_(n, a, f, CFG_STRING, field, d)}
#define CPBY(n, a, f, field, d) {CP_(n, a, f, CFG_BYTES, field, d)}
#define CPE(n, a, f, field, d, tbl) {CP_(n, a, f, CFG_ENUM, field, d), .enums = tbl}
#define CPI(n, a, f, field, d, lo, hi) {CP_(n, a, f, CFG_INT, field, d), .min = lo, .max = hi}
#define CPL(n, a, f, field, d, lo, hi) {CP_(n, a, f, CFG_LL, field, d), .min = lo, .max = hi}
#define CPM(n, a, f, field, d, lo, hi) {CP_(n, a, f, CFG_MEMORY, field, d), .min = lo, .max = hi}
#define TY_(n, a, f, k, field, d) .name = n, .alias = a, .kind = k, .flags = f, .value = &srv.db.types.field, .dflt = d
#define TYI(n, a, f, field, d, lo, hi) {TY_(n, a, f, CFG_INT, field, d), .min = lo, .max = hi}
#define TYL(n, a, f, field, d, lo, hi) {TY_(n, a, f, CFG_LL, field, d), .min = lo, .max = hi}
#define TYM(n, a, f, field, d, lo, hi) {TY_(n, a, f, CFG_MEMORY, field, d), .min = lo, .max = hi}
#define SP(n, a, f, v, d, s, g)                                                                    \
    {.name = n, .alias = a, .kind = CFG_SPECIAL, .flags = f, .value = v, .dflt = d, .set = s, .get = g}
#define RF(n, a, f, d) SP(n, a, f, NULL, d, config_set_refused, config_get_refused)

static const config_def compat_config_table[] = {
    /* Encoding thresholds: the keyspace's type_options. */
    TYI("list-max-listpack-size", "list-max-ziplist-size", 0, list_max_listpack_size, "-2", INT_MIN, INT_MAX),
    TYI("list-compress-depth", NULL, 0, list_compress_depth, "0", 0, INT_MAX),
    TYL("stream-node-max-entries", NULL, 0, stream_node_max_entries, "100", 0, LLONG_MAX),
    TYL("hash-max-listpack-entries", "hash-max-ziplist-entries", 0, hash_max_listpack_entries, "512", 0, LONG_MAX),
    TYL("set-max-intset-entries", NULL, 0, set_max_intset_entries, "512", 0, LONG_MAX),
    TYL("set-max-listpack-entries", NULL, 0, set_max_listpack_entries, "128", 0, LONG_MAX),
    TYL("set-max-listpack-value", NULL, 0, set_max_listpack_value, "64", 0, LONG_MAX),
    TYL("zset-max-listpack-entries", "zset-max-ziplist-entries", 0, zset_max_listpack_entries, "128", 0, LONG_MAX),
    TYM("hash-max-listpack-value", "hash-max-ziplist-value", 0, hash_max_listpack_value, "64", 0, LONG_MAX),
    TYM("stream-node-max-bytes", NULL, 0, stream_node_max_bytes, "4096", 0, LONG_MAX),
    TYM("zset-max-listpack-value", "zset-max-ziplist-value", 0, zset_max_listpack_value, "64", 0, LONG_MAX),
    TYM("hll-sparse-max-bytes", NULL, 0, hll_sparse_max_bytes, "3000", 0, LONG_MAX),

    /* Stored, no effect yet. */
    CPB("rdbchecksum", NULL, IMM | NE, rdbchecksum, "yes"),
    CPB("always-show-logo", NULL, IMM | NE, always_show_logo, "no"),
    CPB("rdbcompression", NULL, NE, rdbcompression, "yes"),
    CPB("rdb-del-sync-files", NULL, NE, rdb_del_sync_files, "no"),
    CPB("activerehashing", NULL, NE, activerehashing, "yes"),
    CPB("stop-writes-on-bgsave-error", NULL, NE, stop_writes_on_bgsave_error, "yes"),
    CPB("set-proc-title", NULL, IMM | NE, set_proc_title, "yes"),
    CPB("dynamic-hz", NULL, NE, dynamic_hz, "yes"),
    CPB("repl-disable-tcp-nodelay", NULL, NE, repl_disable_tcp_nodelay, "no"),
    CPB("repl-diskless-sync", NULL, NE, repl_diskless_sync, "yes"),
    CPB("dual-channel-replication-enabled", NULL, NE, dual_channel_replication_enabled, "no"),
    CPB("aof-rewrite-incremental-fsync", NULL, NE, aof_rewrite_incremental_fsync, "yes"),
    CPB("no-appendfsync-on-rewrite", NULL, NE, no_appendfsync_on_rewrite, "no"),
    CPB("cluster-require-full-coverage", NULL, NE, cluster_require_full_coverage, "yes"),
    CPB("rdb-save-incremental-fsync", NULL, NE, rdb_save_incremental_fsync, "yes"),
    CPB("aof-load-truncated", NULL, NE, aof_load_truncated, "yes"),
    CPB("aof-use-rdb-preamble", NULL, NE, aof_use_rdb_preamble, "yes"),
    CPB("aof-timestamp-enabled", NULL, NE, aof_timestamp_enabled, "no"),
    CPB("cluster-replica-no-failover", "cluster-slave-no-failover", NE, cluster_replica_no_failover, "no"),
    CPB("replica-lazy-flush", "slave-lazy-flush", NE, replica_lazy_flush, "yes"),
    CPB("replica-serve-stale-data", "slave-serve-stale-data", NE, replica_serve_stale_data, "yes"),
    CPB("replica-read-only", "slave-read-only", NE, replica_read_only, "yes"),
    CPB("replica-ignore-maxmemory", "slave-ignore-maxmemory", NE, replica_ignore_maxmemory, "yes"),
    CPB("jemalloc-bg-thread", NULL, NE, jemalloc_bg_thread, "yes"),
    CPB("activedefrag", NULL, NE, activedefrag, "no"),
    CPB("syslog-enabled", NULL, IMM | NE, syslog_enabled, "no"),
    CPB("cluster-allow-reads-when-down", NULL, NE, cluster_allow_reads_when_down, "no"),
    CPB("cluster-allow-pubsubshard-when-down", NULL, NE, cluster_allow_pubsubshard_when_down, "yes"),
    CPB("crash-log-enabled", NULL, NE, crash_log_enabled, "yes"),
    CPB("crash-memcheck-enabled", NULL, NE, crash_memcheck_enabled, "yes"),
    CPB("use-exit-on-panic", NULL, CFG_HIDDEN | NE, use_exit_on_panic, "no"),
    CPB("disable-thp", NULL, IMM | NE, disable_thp, "yes"),
    CPB("cluster-allow-replica-migration", NULL, NE, cluster_allow_replica_migration, "yes"),
    CPB("replica-announced", NULL, NE, replica_announced, "yes"),
    CPB("aof-disable-auto-gc", NULL, CFG_HIDDEN | NE, aof_disable_auto_gc, "no"),
    CPB("replica-ignore-disk-write-errors", NULL, NE, replica_ignore_disk_write_errors, "no"),
    CPB("extended-redis-compatibility", NULL, NE, extended_redis_compatibility, "no"),
    CPB("enable-debug-assert", NULL, IMM | CFG_HIDDEN | NE, enable_debug_assert, "no"),
    CPB("cluster-slot-stats-enabled", NULL, NE, cluster_slot_stats_enabled, "no"),
    CPB("hide-user-data-from-log", NULL, NE, hide_user_data_from_log, "yes"),
    CPS("replica-announce-ip", "slave-announce-ip", NE, replica_announce_ip, ""),
    CPS("primaryuser", "masteruser", CFG_SECRET | NE, primaryuser, ""),
    CPS("cluster-announce-ip", NULL, NE, cluster_announce_ip, ""),
    CPS("cluster-announce-client-ipv4", NULL, NE, cluster_announce_client_ipv4, ""),
    CPS("cluster-announce-client-ipv6", NULL, NE, cluster_announce_client_ipv6, ""),
    CPS("cluster-config-file", NULL, IMM | NE, cluster_config_file, "nodes.conf"),
    CPS("cluster-announce-hostname", NULL, NE, cluster_announce_hostname, ""),
    CPS("cluster-announce-human-nodename", NULL, NE, cluster_announce_human_nodename, ""),
    CPS("syslog-ident", NULL, IMM | NE, syslog_ident, "valkey"),
    CPS("dbfilename", NULL, CFG_PROTECTED | NE, dbfilename, "dump.rdb"),
    CPS("appendfilename", NULL, IMM | NE, appendfilename, "appendonly.aof"),
    CPS("appenddirname", NULL, IMM | NE, appenddirname, "appendonlydir"),
    CPS("server-cpulist", "server_cpulist", IMM | NE, server_cpulist, ""),
    CPS("bio-cpulist", "bio_cpulist", IMM | NE, bio_cpulist, ""),
    CPS("aof-rewrite-cpulist", "aof_rewrite_cpulist", IMM | NE, aof_rewrite_cpulist, ""),
    CPS("bgsave-cpulist", "bgsave_cpulist", IMM | NE, bgsave_cpulist, ""),
    CPS("ignore-warnings", NULL, NE, ignore_warnings, ""),
    CPS("proc-title-template", NULL, NE, proc_title_template, "{title} {listen-addr} {server-mode}"),
    CPS("bind-source-addr", NULL, NE, bind_source_addr, ""),
    CPS("locale-collate", NULL, NE, locale_collate, ""),
    CPS("debug-context", NULL, CFG_HIDDEN | NE, debug_context, ""),
    CPBY("primaryauth", "masterauth", CFG_SECRET | NE, primaryauth, ""),
    CPBY("availability-zone", NULL, NE, availability_zone, ""),
    CPE("supervised", NULL, IMM | NE, supervised, "no", enum_supervised),
    CPE("syslog-facility", NULL, IMM | NE, syslog_facility, "local0", enum_syslog_facility),
    CPE("repl-diskless-load", NULL, NE, repl_diskless_load, "disabled", enum_repl_diskless_load),
    CPE("appendfsync", NULL, NE, appendfsync, "everysec", enum_appendfsync),
    CPE("oom-score-adj", NULL, NE, oom_score_adj, "no", enum_oom_score_adj),
    CPE("acl-pubsub-default", NULL, NE, acl_pubsub_default, "resetchannels", enum_acl_pubsub_default),
    CPE("sanitize-dump-payload", NULL, NE, sanitize_dump_payload, "no", enum_sanitize_dump_payload),
    CPE("enable-protected-configs", NULL, IMM, enable_protected_configs, "no", enum_enable_protected_configs),
    CPE("cluster-preferred-endpoint-type", NULL, NE,
        cluster_preferred_endpoint_type, "ip", enum_cluster_preferred_endpoint_type),
    CPE("propagation-error-behavior", NULL, NE,
        propagation_error_behavior, "ignore", enum_propagation_error_behavior),
    CPI("prefetch-batch-max-size", NULL, NE, prefetch_batch_max_size, "16", 0, 128),
    CPI("auto-aof-rewrite-percentage", NULL, NE, auto_aof_rewrite_percentage, "100", 0, INT_MAX),
    CPI("cluster-replica-validity-factor", "cluster-slave-validity-factor", NE,
        cluster_replica_validity_factor, "10", 0, INT_MAX),
    CPI("cluster-migration-barrier", NULL, NE, cluster_migration_barrier, "1", 0, INT_MAX),
    CPI("active-defrag-cycle-min", NULL, NE, active_defrag_cycle_min, "1", 1, 99),
    CPI("active-defrag-cycle-max", NULL, NE, active_defrag_cycle_max, "25", 1, 99),
    CPI("active-defrag-threshold-lower", NULL, NE, active_defrag_threshold_lower, "10", 0, 1000),
    CPI("active-defrag-threshold-upper", NULL, NE, active_defrag_threshold_upper, "100", 0, 1000),
    CPI("replica-priority", "slave-priority", NE, replica_priority, "100", 0, INT_MAX),
    CPI("repl-diskless-sync-delay", NULL, NE, repl_diskless_sync_delay, "5", 0, INT_MAX),
    CPI("maxmemory-eviction-tenacity", NULL, NE, maxmemory_eviction_tenacity, "10", 0, 100),
    CPI("replica-announce-port", "slave-announce-port", NE, replica_announce_port, "0", 0, 65535),
    CPI("cluster-port", NULL, IMM | NE, cluster_port, "0", 0, 65535),
    CPI("cluster-announce-bus-port", NULL, NE, cluster_announce_bus_port, "0", 0, 65535),
    CPI("cluster-announce-port", NULL, NE, cluster_announce_port, "0", 0, 65535),
    CPI("cluster-announce-tls-port", NULL, NE, cluster_announce_tls_port, "0", 0, 65535),
    CPI("repl-timeout", NULL, NE, repl_timeout, "60", 1, INT_MAX),
    CPI("repl-ping-replica-period", "repl-ping-slave-period", NE, repl_ping_replica_period, "10", 1, INT_MAX),
    CPI("rdb-key-save-delay", NULL, CFG_HIDDEN | NE, rdb_key_save_delay, "0", INT_MIN, INT_MAX),
    CPI("key-load-delay", NULL, CFG_HIDDEN | NE, key_load_delay, "0", INT_MIN, INT_MAX),
    CPI("min-replicas-max-lag", "min-slaves-max-lag", NE, min_replicas_max_lag, "10", 0, INT_MAX),
    CPI("watchdog-period", NULL, CFG_HIDDEN | NE, watchdog_period, "0", 0, INT_MAX),
    CPI("shutdown-timeout", NULL, NE, shutdown_timeout, "10", 0, INT_MAX),
    CPI("repl-diskless-sync-max-replicas", NULL, NE, repl_diskless_sync_max_replicas, "0", 0, INT_MAX),
    CPL("socket-mark-id", NULL, IMM | NE, socket_mark_id, "0", 0, UINT_MAX),
    CPL("max-new-connections-per-cycle", NULL, NE, max_new_connections_per_cycle, "10", 1, 1000),
    CPL("max-new-tls-connections-per-cycle", NULL, NE, max_new_tls_connections_per_cycle, "1", 1, 1000),
    CPL("active-defrag-max-scan-fields", NULL, NE, active_defrag_max_scan_fields, "1000", 1, LONG_MAX),
    CPL("acllog-max-len", NULL, NE, acllog_max_len, "128", 0, LONG_MAX),
    CPL("cluster-blacklist-ttl", NULL, NE, cluster_blacklist_ttl, "60", 0, LLONG_MAX),
    CPL("cluster-node-timeout", NULL, NE, cluster_node_timeout, "15000", 0, LLONG_MAX),
    CPL("cluster-ping-interval", NULL, CFG_HIDDEN | NE, cluster_ping_interval, "0", 0, LLONG_MAX),
    CPM("repl-backlog-size", NULL, NE, repl_backlog_size, "10485760", 1, LLONG_MAX),
    CPM("cluster-link-sendbuf-limit", NULL, NE, cluster_link_sendbuf_limit, "0", 0, LLONG_MAX),
    CPM("active-defrag-ignore-bytes", NULL, NE, active_defrag_ignore_bytes, "104857600", 1, LLONG_MAX),
    CPL("repl-backlog-ttl", NULL, NE, repl_backlog_ttl, "3600", 0, LONG_MAX),
    CPM("auto-aof-rewrite-min-size", NULL, NE, auto_aof_rewrite_min_size, "67108864", 0, LLONG_MAX),
    CPL("loading-process-events-interval-bytes", NULL, CFG_HIDDEN | NE,
        loading_process_events_interval_bytes, "2097152", 1024, INT_MAX),
    SP("oom-score-adj-values", NULL, NE, NULL, "0 200 800", set_oom_values, get_oom_values),
    SP("shutdown-on-sigint", NULL, NE, &srv.compat.shutdown_on_sigint, "default", set_shutdown_flags,
       get_shutdown_flags),
    SP("shutdown-on-sigterm", NULL, NE, &srv.compat.shutdown_on_sigterm, "default", set_shutdown_flags,
       get_shutdown_flags),

    /* With effect. */
    SP("dir", NULL, CFG_PROTECTED, NULL, NULL, set_dir, get_dir),

    /* Refused but for the value that asks for nothing (config.c's refused
     * list gives the reasons). */
    RF("replicaof", "slaveof", IMM, NULL),
    RF("aclfile", NULL, IMM, NULL),
    RF("unixsocketgroup", NULL, IMM, NULL),
    RF("cluster-enabled", NULL, IMM, "no"),
    RF("maxmemory-clients", NULL, 0, "0"),
    RF("min-replicas-to-write", "min-slaves-to-write", 0, "0"),
};
// clang-format on

void server_config_compat_init(void) {
    config_register(compat_config_table, K_ARRAY_LEN(compat_config_table));
}
