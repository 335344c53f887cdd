/* info.c -- INFO sections: server, clients, memory, stats, keyspace,
 * commandstats, errorstats, and sections added by modules. */
#include "server/info.h"

#include "session/command.h"
#include "commands/commands.h"
#include "commands/multi.h"
#include "common/common.h"
#include "common/kmem.h"
#include "io/io_threads.h"
#include "keyspace/db.h"
#include "module/module.h"
#include "session/reply.h"
#include "server/server.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#define INST_SAMPLES 16

/* ---- module sections ---- */

typedef struct info_extra {
    char *name;
    info_section_fn fn;
    void *priv;
    void *owner;
} info_extra;

static info_extra *extras;
static int extras_count;

int info_add_section(const char *name, info_section_fn fn, void *priv, void *owner) {
    for (int i = 0; i < extras_count; i++)
        if (!strcasecmp(extras[i].name, name)) return K_ERR;
    extras = km_realloc(extras, sizeof(info_extra) * (size_t)(extras_count + 1));
    extras[extras_count++] = (info_extra){km_strdup(name), fn, priv, owner};
    return K_OK;
}

void info_remove_owner(void *owner) {
    int j = 0;
    for (int i = 0; i < extras_count; i++) {
        if (extras[i].owner == owner) km_free(extras[i].name);
        else extras[j++] = extras[i];
    }
    extras_count = j;
}

void info_teardown(void) {
    for (int i = 0; i < extras_count; i++) km_free(extras[i].name);
    km_free(extras);
    extras = NULL;
    extras_count = 0;
}

/* ---- helpers ---- */

static void bytes_human(char *buf, size_t len, unsigned long long n) {
    const char *units = "BKMGTP";
    double d = (double)n;
    int u = 0;
    while (d >= 1024 && u < 5) d /= 1024, u++;
    if (u == 0) snprintf(buf, len, "%lluB", n);
    else snprintf(buf, len, "%.2f%c", d, units[u]);
}

static long long inst_avg(const long long *samples) {
    long long sum = 0;
    for (int i = 0; i < INST_SAMPLES; i++) sum += samples[i];
    return sum / INST_SAMPLES;
}

void info_track_instantaneous(void) {
    uint64_t now = event_mono_us();
    uint64_t dt = now - srv.inst_last_us;
    if (srv.inst_last_us && dt < 100000) return; /* one sample per 100 ms */
    if (srv.inst_last_us && dt > 0) {
        int i = srv.inst_idx;
        srv.inst_ops_samples[i] = (srv.session_stats.total_commands_processed - srv.inst_last_ops) *
                                  1000000 / (long long)dt;
        srv.inst_in_samples[i] =
            (srv.session_stats.total_net_input_bytes - srv.inst_last_in) * 1000000 / (long long)dt;
        srv.inst_out_samples[i] = (srv.session_stats.total_net_output_bytes - srv.inst_last_out) *
                                  1000000 / (long long)dt;
        srv.inst_idx = (i + 1) % INST_SAMPLES;
    }
    srv.inst_last_us = now;
    srv.inst_last_ops = srv.session_stats.total_commands_processed;
    srv.inst_last_in = srv.session_stats.total_net_input_bytes;
    srv.inst_last_out = srv.session_stats.total_net_output_bytes;
}

/* ---- single fields (the module API's stat_get) ---- */

static long long stat_connected_clients(void) {
    return (long long)client_count();
}
static long long stat_used_memory(void) {
    return (long long)km_used_memory();
}
static long long stat_maxmemory(void) {
    return (long long)srv.db.maxmemory;
}
static long long stat_uptime(void) {
    return (long long)((event_mono_us() - srv.start_us) / 1000000);
}
static long long stat_db_keys(void) {
    long long n = 0;
    for (int i = 0; i < srv.db.databases; i++)
        n += (long long)db_size(db_get(i));
    return n;
}

typedef struct info_stat {
    const char *name;
    const long long *counter;  /* a counter outside the metric groups, or */
    long long (*get)(void);    /* a computed value */
} info_stat;

static const info_stat info_fields[] = {
    {"io_threaded_reads_processed", &io_stats.reads, NULL},
    {"io_threaded_writes_processed", &io_stats.writes, NULL},
    {"connected_clients", NULL, stat_connected_clients},
    {"used_memory", NULL, stat_used_memory},
    {"maxmemory", NULL, stat_maxmemory},
    {"uptime_in_seconds", NULL, stat_uptime},
    {"db_keys", NULL, stat_db_keys}, /* keys in all databases (Keel's own) */
};

int info_stat_get(const char *name, long long *value) {
    /* The subsystems' counters first, by the names they declare. */
    size_t groups;
    const metric_group *g = server_metric_groups(&groups);
    for (size_t i = 0; i < groups; i++) {
        for (size_t j = 0; j < g[i].count; j++) {
            if (strcmp(g[i].descs[j].name, name) != 0) continue;
            *value = metric_get(g[i].metrics, &g[i].descs[j]);
            return K_OK;
        }
    }
    for (size_t i = 0; i < K_ARRAY_LEN(info_fields); i++) {
        if (strcmp(info_fields[i].name, name) != 0) continue;
        *value = info_fields[i].counter ? *info_fields[i].counter : info_fields[i].get();
        return K_OK;
    }
    return K_ERR;
}

/* ---- sections ---- */

static void info_server(sbuf *b) {
    struct utsname u;
    uname(&u);
    uint64_t uptime = (event_mono_us() - srv.start_us) / 1000000;
    sbuf_appendf(
        b,
        "# "
        "Server\r\nredis_version:%s\r\nvalkey_version:%s\r\nkeel_version:%s\r\nserver_name:keel\r\n"
        "redis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nserver_mode:"
        "standalone\r\n"
        "redis_mode:standalone\r\nos:%s %s %s\r\narch_bits:%d\r\nmonotonic_clock:POSIX "
        "clock_gettime\r\n"
        "multiplexing_api:epoll\r\ngcc_version:%d.%d.%d\r\nprocess_id:%d\r\nrun_id:%s\r\n"
        "tcp_port:%d\r\nserver_time_usec:%llu\r\nuptime_in_seconds:%llu\r\nuptime_in_days:%llu\r\n"
        "hz:%d\r\nconfigured_hz:%d\r\nlru_clock:%u\r\nexecutable:%s\r\nconfig_file:%s\r\n"
        "io_threads_active:%d\r\n",
        KEEL_REDIS_COMPAT_VERSION, KEEL_VALKEY_COMPAT_VERSION, KEEL_VERSION, u.sysname, u.release,
        u.machine, (int)sizeof(long) * 8, __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__,
        (int)srv.pid, srv.runid, srv.port, (unsigned long long)event_now_us(),
        (unsigned long long)uptime, (unsigned long long)uptime / 86400, srv.hz, srv.hz,
        db_lru_clock(), srv.executable ? srv.executable : "", srv.configfile ? srv.configfile : "",
        io_threads_active() > 0);
}

static void info_clients(sbuf *b) {
    size_t max_qbuf, max_obuf;
    long long watching, watched_keys;
    client_buffer_stats(&max_qbuf, &max_obuf);
    multi_watch_stats(&watching, &watched_keys);
    sbuf_appendf(
        b,
        "# Clients\r\nconnected_clients:%lu\r\ncluster_connections:0\r\nmaxclients:%d\r\n"
        "client_recent_max_input_buffer:%zu\r\nclient_recent_max_output_buffer:%zu\r\n"
        "blocked_clients:0\r\ntracking_clients:0\r\npubsub_clients:0\r\nwatching_clients:%lld\r\n"
        "clients_in_timeout_table:0\r\ntotal_watched_keys:%lld\r\ntotal_blocking_keys:0\r\n"
        "total_blocking_keys_on_nokey:0\r\n",
        client_count(), srv.maxclients, max_qbuf, max_obuf, watching, watched_keys);
}

static void info_memory(sbuf *b) {
    size_t used = km_used_memory(), rss = km_resident_memory(), peak = km_peak_memory();
    char h_used[32], h_peak[32], h_rss[32], h_max[32];
    bytes_human(h_used, sizeof(h_used), used);
    bytes_human(h_peak, sizeof(h_peak), peak);
    bytes_human(h_rss, sizeof(h_rss), rss);
    bytes_human(h_max, sizeof(h_max), srv.db.maxmemory);
    const char *policy = "noeviction";
    static const char *names[] = {"noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
                                  "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"};
    if (srv.db.maxmemory_policy >= 0 && srv.db.maxmemory_policy < 8)
        policy = names[srv.db.maxmemory_policy];
    sbuf_appendf(
        b,
        "# Memory\r\nused_memory:%zu\r\nused_memory_human:%s\r\nused_memory_rss:%zu\r\n"
        "used_memory_rss_human:%s\r\nused_memory_peak:%llu\r\nused_memory_peak_human:%s\r\n"
        "maxmemory:%llu\r\nmaxmemory_human:%s\r\nmaxmemory_policy:%s\r\n"
        "mem_fragmentation_ratio:%.2f\r\nmem_allocator:%s\r\nlazyfree_pending_objects:0\r\n",
        used, h_used, rss, h_rss, (unsigned long long)peak, h_peak, srv.db.maxmemory, h_max, policy,
        used ? (double)rss / (double)used : 0.0,
#ifdef KEEL_HAVE_JEMALLOC
        "jemalloc"
#else
        "libc"
#endif
    );
}

static void info_stats(sbuf *b) {
    sbuf_appendf(
        b,
        "# Stats\r\ntotal_connections_received:%lld\r\ntotal_commands_processed:%lld\r\n"
        "instantaneous_ops_per_sec:%lld\r\ntotal_net_input_bytes:%lld\r\ntotal_net_output_bytes:%"
        "lld\r\n"
        "instantaneous_input_kbps:%.2f\r\ninstantaneous_output_kbps:%.2f\r\n"
        "rejected_connections:%lld\r\nexpired_keys:%lld\r\nexpired_time_cap_reached_count:%lld\r\n"
        "evicted_keys:%lld\r\nevicted_clients:%lld\r\nkeyspace_hits:%lld\r\nkeyspace_misses:%"
        "lld\r\n"
        "pubsub_channels:0\r\npubsub_patterns:0\r\nclient_query_buffer_limit_disconnections:%"
        "lld\r\n"
        "client_output_buffer_limit_disconnections:%lld\r\ntotal_error_replies:%lld\r\n"
        "unexpected_error_replies:%lld\r\nio_threaded_reads_processed:%lld\r\n"
        "io_threaded_writes_processed:%lld\r\nio_threaded_freed_objects:%lld\r\n",
        srv.session_stats.total_connections_received, srv.session_stats.total_commands_processed,
        inst_avg(srv.inst_ops_samples), srv.session_stats.total_net_input_bytes,
        srv.session_stats.total_net_output_bytes, inst_avg(srv.inst_in_samples) / 1024.0,
        inst_avg(srv.inst_out_samples) / 1024.0, srv.session_stats.rejected_connections,
        srv.db_stats.expired_keys, srv.db_stats.expired_time_cap_reached_count,
        srv.db_stats.evicted_keys, srv.session_stats.evicted_clients, srv.db_stats.keyspace_hits,
        srv.db_stats.keyspace_misses, srv.session_stats.client_query_buffer_limit_disconnections,
        srv.session_stats.client_output_buffer_limit_disconnections,
        srv.session_stats.total_error_replies, srv.session_stats.unexpected_error_replies,
        io_stats.reads, io_stats.writes, io_stats.frees);
}

/* Keel has no replication: it reports itself as a primary with no replicas,
 * which is what monitoring tools expect to read from a standalone server. */
static void info_replication(sbuf *b) {
    sbuf_appendf(
        b,
        "# "
        "Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n"
        "master_replid:%s\r\nmaster_replid2:0000000000000000000000000000000000000000\r\n"
        "master_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\n"
        "repl_backlog_size:0\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n",
        srv.runid);
}

/* Keel has no persistence, and reports it the way Valkey reports a server
 * that has not saved yet: the last save is the start-up (an empty dataset),
 * no save ran or failed (rdb_saves:0, status ok, time -1), and every change
 * since then is at risk (rdb_changes_since_last_save), which is what
 * monitoring alerts on. */
static void info_persistence(sbuf *b) {
    sbuf_appendf(
        b,
        "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:%lld\r\n"
        "rdb_bgsave_in_progress:0\r\nrdb_last_save_time:%lld\r\nrdb_last_bgsave_status:ok\r\n"
        "rdb_last_bgsave_time_sec:-1\r\nrdb_current_bgsave_time_sec:-1\r\nrdb_saves:0\r\n"
        "aof_enabled:0\r\naof_rewrite_in_progress:0\r\n",
        srv.dirty, srv.lastsave);
}

static void info_module_line(const char *name, uint32_t version, const char *path, int argc,
                             char *const *argv, void *priv) {
    sbuf_appendf(priv, "module:name=%s,ver=%u,api=1,filters=0,usedby=[],using=[],options=[]\r\n",
                 name, version);
}

static void info_modules(sbuf *b) {
    sbuf_appendf(b, "# Modules\r\n");
    module_foreach(info_module_line, b);
}

static void info_cpu(sbuf *b) {
    struct rusage self;
    getrusage(RUSAGE_SELF, &self);
    sbuf_appendf(b, "# CPU\r\nused_cpu_sys:%ld.%06ld\r\nused_cpu_user:%ld.%06ld\r\n",
                 (long)self.ru_stime.tv_sec, (long)self.ru_stime.tv_usec,
                 (long)self.ru_utime.tv_sec, (long)self.ru_utime.tv_usec);
}

static void info_keyspace(sbuf *b) {
    sbuf_appendf(b, "# Keyspace\r\n");
    for (int i = 0; i < srv.db.databases; i++) {
        db *d = db_get(i);
        if (!db_size(d)) continue;
        sbuf_appendf(b, "db%d:keys=%zu,expires=%zu,avg_ttl=%lld\r\n", i, db_size(d),
                     db_expires_count(d), d->avg_ttl);
    }
}

static void info_cmdstat(command *cmd, void *priv) {
    if (!cmd->calls && !cmd->failed_calls && !cmd->rejected_calls) return;
    sbuf_appendf(priv,
                 "cmdstat_%s:calls=%lld,usec=%lld,usec_per_call=%.2f,rejected_calls=%lld,failed_"
                 "calls=%lld\r\n",
                 cmd->fullname, cmd->calls, cmd->usec,
                 cmd->calls ? (double)cmd->usec / (double)cmd->calls : 0.0, cmd->rejected_calls,
                 cmd->failed_calls);
}

static void info_commandstats(sbuf *b) {
    sbuf_appendf(b, "# Commandstats\r\n");
    command_foreach_all(info_cmdstat, b);
}

static void info_errstat(const char *prefix, long long count, void *priv) {
    sbuf_appendf(priv, "errorstat_%s:count=%lld\r\n", prefix, count);
}

static void info_errorstats(sbuf *b) {
    sbuf_appendf(b, "# Errorstats\r\n");
    reply_errorstats_foreach(info_errstat, b);
}

typedef struct info_section {
    const char *name;
    void (*fn)(sbuf *b);
    int in_default;
} info_section;

static const info_section sections[] = {
    {"server", info_server, 1},   {"clients", info_clients, 1},         {"memory", info_memory, 1},
    {"persistence", info_persistence, 1}, {"stats", info_stats, 1}, {"replication", info_replication, 1},
    {"cpu", info_cpu, 1},         {"modules", info_modules, 1}, {"keyspace", info_keyspace, 1},
    {"commandstats", info_commandstats, 0}, {"errorstats", info_errorstats, 1},
};

static int info_wanted(const char *name, int in_default, int argc, const karg *argv) {
    if (argc == 0) return in_default;
    for (int i = 0; i < argc; i++) {
        if (karg_eq(&argv[i], name) || karg_eq(&argv[i], "all") || karg_eq(&argv[i], "everything")) return 1;
        if (karg_eq(&argv[i], "default") && in_default) return 1;
    }
    return 0;
}

/* Module sections: by name, or with "modules"/"everything" (not "all" or
 * the default, as in Valkey). */
static int info_module_section_wanted(const char *name, int argc, const karg *argv) {
    for (int i = 0; i < argc; i++)
        if (karg_eq(&argv[i], name) || karg_eq(&argv[i], "modules") || karg_eq(&argv[i], "everything")) return 1;
    return 0;
}

void info_generate(sbuf *b, int argc, const karg *argv) {
    for (size_t i = 0; i < K_ARRAY_LEN(sections); i++) {
        if (!info_wanted(sections[i].name, sections[i].in_default, argc, argv)) continue;
        if (b->len) sbuf_appendf(b, "\r\n");
        sections[i].fn(b);
    }
    for (int i = 0; i < extras_count; i++) {
        if (!info_module_section_wanted(extras[i].name, argc, argv)) continue;
        if (b->len) sbuf_appendf(b, "\r\n");
        sbuf_appendf(b, "# %s\r\n", extras[i].name);
        extras[i].fn(b, extras[i].priv);
    }
}

void info_command(client *c) {
    sbuf b = {0};
    info_generate(&b, c->argc - 1, c->argv + 1);
    reply_verbatim(c, b.data ? b.data : "", b.len, "txt");
    km_free(b.data);
}

/* INFO is the server's own command: only the server sees every subsystem. */
static command info_commands[] = {
    {.name = "info",
     .proc = info_command,
     .arity = -1,
     .flags = CMD_LOADING | CMD_STALE,
     .group = "server",
     .summary = "Returns information and statistics about the server.",
     .since = "1.0.0"},
};

void info_setup(void) {
    for (size_t i = 0; i < K_ARRAY_LEN(info_commands); i++)
        commands_register(&info_commands[i]);
}
