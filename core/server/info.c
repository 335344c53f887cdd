/* info.c -- INFO sections: server, clients, memory, stats, keyspace,
 * commandstats, errorstats, and sections added by modules. */
#include "server/info.h"

#include "session/command.h"
#include "commands/commands.h"
#include "commands/memory.h"
#include "commands/multi.h"
#include "common/common.h"
#include "common/kmem.h"
#include "io/io_threads.h"
#include "keyspace/db.h"
#include "keyspace/lazyfree.h"
#include "module/module.h"
#include "session/latency.h"
#include "session/pause.h"
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

/* A module's own section, or (in_builtin) fields it appends to one of the
 * server's sections, named by name. */
typedef struct info_extra {
    char *name;
    info_section_fn fn;
    void *priv;
    void *owner;
    int in_builtin;
} info_extra;

static info_extra *extras;
static int extras_count;

static void info_extra_add(const char *name, info_section_fn fn, void *priv, void *owner,
                           int in_builtin) {
    extras = km_realloc(extras, sizeof(info_extra) * (size_t)(extras_count + 1));
    extras[extras_count++] = (info_extra){km_strdup(name), fn, priv, owner, in_builtin};
}

int info_add_section(const char *name, info_section_fn fn, void *priv, void *owner) {
    for (int i = 0; i < extras_count; i++)
        if (!extras[i].in_builtin && !strcasecmp(extras[i].name, name)) return K_ERR;
    info_extra_add(name, fn, priv, owner, 0);
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
        long long cycles = srv.stats.eventloop_cycles - srv.inst_last_el_cycles;
        long long awake = srv.stats.eventloop_duration_sum - srv.inst_last_el_duration;
        srv.inst_el_cycles_samples[i] = cycles * 1000000 / (long long)dt;
        srv.inst_el_duration_samples[i] = cycles ? awake / cycles : 0; /* µs per iteration */
        srv.inst_idx = (i + 1) % INST_SAMPLES;
    }
    srv.inst_last_us = now;
    srv.inst_last_ops = srv.session_stats.total_commands_processed;
    srv.inst_last_in = srv.session_stats.total_net_input_bytes;
    srv.inst_last_out = srv.session_stats.total_net_output_bytes;
    srv.inst_last_el_cycles = srv.stats.eventloop_cycles;
    srv.inst_last_el_duration = srv.stats.eventloop_duration_sum;
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
    {"maxmemory", NULL, stat_maxmemory}, /* first: a script's memory check reads them */
    {"used_memory", NULL, stat_used_memory},
    {"io_threaded_reads_processed", &io_stats.reads, NULL},
    {"io_threaded_writes_processed", &io_stats.writes, NULL},
    {"connected_clients", NULL, stat_connected_clients},
    {"blocked_clients", &srv.blocking_stats.blocked_clients, NULL},
    {"clients_in_timeout_table", &srv.blocking_stats.clients_in_timeout_table, NULL},
    {"total_blocking_keys", &srv.blocking_stats.total_blocking_keys, NULL},
    {"total_blocking_keys_on_nokey", &srv.blocking_stats.total_blocking_keys_on_nokey, NULL},
    {"tracking_clients", &srv.tracking_stats.tracking_clients, NULL},
    {"tracking_total_keys", &srv.tracking_stats.tracking_total_keys, NULL},
    {"tracking_total_items", &srv.tracking_stats.tracking_total_items, NULL},
    {"tracking_total_prefixes", &srv.tracking_stats.tracking_total_prefixes, NULL},
    {"pubsub_clients", &srv.pubsub_stats.pubsub_clients, NULL},
    {"pubsub_channels", &srv.pubsub_stats.pubsub_channels, NULL},
    {"pubsub_patterns", &srv.pubsub_stats.pubsub_patterns, NULL},
    {"pubsubshard_channels", &srv.pubsub_stats.pubsubshard_channels, NULL},
    {"uptime_in_seconds", NULL, stat_uptime},
    {"db_keys", NULL, stat_db_keys}, /* keys in all databases (Keel's own) */
};

int info_stat_get(const char *name, long long *value) {
    /* The gauges first (maxmemory and used_memory at their head): a
     * module asks for those on its hot paths, a script's memory check. */
    for (size_t i = 0; i < K_ARRAY_LEN(info_fields); i++) {
        if (strcmp(info_fields[i].name, name) != 0) continue;
        *value = info_fields[i].counter ? *info_fields[i].counter : info_fields[i].get();
        return K_OK;
    }
    /* Then the subsystems' counters, by the names they declare. */
    size_t groups;
    const metric_group *g = server_metric_groups(&groups);
    for (size_t i = 0; i < groups; i++) {
        for (size_t j = 0; j < g[i].count; j++) {
            if (strcmp(g[i].descs[j].name, name) != 0) continue;
            *value = metric_get(g[i].metrics, &g[i].descs[j]);
            return K_OK;
        }
    }
    return K_ERR;
}

/* ---- sections ---- */

static void info_listeners(sbuf *b) {
    const conn_listener *tcp = &srv.listeners[0], *unx = &srv.listeners[1];
    if (tcp->type && tcp->port) {
        sbuf_appendf(b, "listener0:name=%s", tcp->type->name);
        for (int i = 0; i < tcp->bindaddr_count; i++) sbuf_appendf(b, ",bind=%s", tcp->bindaddr[i]);
        sbuf_appendf(b, ",port=%d\r\n", tcp->port);
    }
    if (unx->type && unx->path) sbuf_appendf(b, "listener1:name=%s,bind=%s\r\n", unx->type->name, unx->path);
}

/* Valkey's fields in Valkey's order, keel_version added. Keel is never
 * supervised (process_supervised:no) and has no availability zone set. */
static void info_server(sbuf *b) {
    static struct utsname u;
    static int have_uname;
    if (!have_uname) uname(&u), have_uname = 1; /* it never changes */
    uint64_t uptime = (event_mono_us() - srv.start_us) / 1000000;
    sbuf_appendf(b, "# Server\r\n");
    sbuf_appendf(b, "redis_version:%s\r\nserver_name:keel\r\nvalkey_version:%s\r\nkeel_version:%s\r\n",
                 KEEL_REDIS_COMPAT_VERSION, KEEL_VALKEY_COMPAT_VERSION, KEEL_VERSION);
    sbuf_appendf(b, "redis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\n");
    sbuf_appendf(b, "redis_mode:standalone\r\nos:%s %s %s\r\narch_bits:%d\r\n", u.sysname, u.release, u.machine,
                 (int)sizeof(long) * 8);
    sbuf_appendf(b, "monotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\n");
    sbuf_appendf(b, "gcc_version:%d.%d.%d\r\nprocess_id:%d\r\nprocess_supervised:no\r\nrun_id:%s\r\n", __GNUC__,
                 __GNUC_MINOR__, __GNUC_PATCHLEVEL__, (int)srv.pid, srv.runid);
    sbuf_appendf(b, "tcp_port:%d\r\nserver_time_usec:%llu\r\nuptime_in_seconds:%llu\r\nuptime_in_days:%llu\r\n",
                 srv.port, (unsigned long long)event_now_us(), (unsigned long long)uptime,
                 (unsigned long long)uptime / 86400);
    sbuf_appendf(b, "hz:%d\r\nconfigured_hz:%d\r\nlru_clock:%u\r\n", srv.hz, srv.hz, db_lru_clock());
    sbuf_appendf(b, "executable:%s\r\nconfig_file:%s\r\nio_threads_active:%d\r\navailability_zone:\r\n",
                 srv.executable ? srv.executable : "", srv.configfile ? srv.configfile : "",
                 io_threads_active() > 0);
    /* server_mode (Valkey's name when extended-redis-compatibility is off)
     * is printed as redis_mode only: Valkey prints one of the two. */
    info_listeners(b);
}

static void info_clients(sbuf *b) {
    size_t max_qbuf, max_obuf;
    long long watching, watched_keys;
    const blocking_metrics *bs = &srv.blocking_stats;
    client_buffer_stats(&max_qbuf, &max_obuf);
    pause_status ps;
    pause_get_status(&ps);
    multi_watch_stats(&watching, &watched_keys);
    sbuf_appendf(
        b,
        "# Clients\r\nconnected_clients:%lu\r\ncluster_connections:0\r\nmaxclients:%d\r\n"
        "client_recent_max_input_buffer:%zu\r\nclient_recent_max_output_buffer:%zu\r\n"
        "blocked_clients:%lld\r\ntracking_clients:%lld\r\npubsub_clients:%lld\r\n"
        "watching_clients:%lld\r\n"
        "clients_in_timeout_table:%lld\r\ntotal_watched_keys:%lld\r\ntotal_blocking_keys:%lld\r\n"
        "total_blocking_keys_on_nokey:%lld\r\npaused_reason:%s\r\npaused_actions:%s\r\n"
        "paused_timeout_milliseconds:%lld\r\n",
        client_count(), srv.maxclients, max_qbuf, max_obuf, bs->blocked_clients,
        srv.tracking_stats.tracking_clients, srv.pubsub_stats.pubsub_clients, watching,
        bs->clients_in_timeout_table, watched_keys, bs->total_blocking_keys,
        bs->total_blocking_keys_on_nokey, ps.reason, ps.actions, ps.remaining_ms);
}

static const char *info_policy_name(void) {
    static const char *names[] = {"noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
                                  "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"};
    if (srv.db.maxmemory_policy >= 0 && srv.db.maxmemory_policy < 8) return names[srv.db.maxmemory_policy];
    return "noeviction";
}

/* A byte count and its human form, as Valkey prints most memory fields. */
static void info_bytes(sbuf *b, const char *name, unsigned long long n) {
    char h[32];
    bytes_human(h, sizeof(h), n);
    sbuf_appendf(b, "%s:%llu\r\n%s_human:%s\r\n", name, n, name, h);
}

/* Valkey's fields in Valkey's order. Keel has no scripting, replication,
 * AOF, cluster or active defragmentation: their memory reads 0. */
static void info_memory(sbuf *b) {
    mem_overhead mh;
    mem_overhead_get(&mh);
    char h[32];
    sbuf_appendf(b, "# Memory\r\n");
    info_bytes(b, "used_memory", mh.total_allocated);
    info_bytes(b, "used_memory_rss", mh.process_rss);
    info_bytes(b, "used_memory_peak", mh.peak_allocated);
    /* Not in Valkey 8.0.1 (later Valkeys print it): unix seconds of the peak. */
    sbuf_appendf(b, "used_memory_peak_time:%lld\r\n", km_peak_memory_time() / 1000);
    sbuf_appendf(b, "used_memory_peak_perc:%.2f%%\r\n", mh.peak_perc);
    sbuf_appendf(b, "used_memory_overhead:%zu\r\nused_memory_startup:%zu\r\n", mh.overhead_total,
                 mh.startup_allocated);
    sbuf_appendf(b, "used_memory_dataset:%zu\r\nused_memory_dataset_perc:%.2f%%\r\n", mh.dataset,
                 mh.dataset_perc);
    sbuf_appendf(b, "allocator_allocated:%zu\r\nallocator_active:%zu\r\nallocator_resident:%zu\r\n",
                 mh.alloc.allocated, mh.alloc.active, mh.alloc.resident);
    sbuf_appendf(b, "allocator_muzzy:%zu\r\n", mh.alloc.muzzy);
    info_bytes(b, "total_system_memory", km_system_memory());
    bytes_human(h, sizeof(h), 0);
    sbuf_appendf(b,
                 "used_memory_lua:0\r\nused_memory_vm_eval:0\r\nused_memory_lua_human:%s\r\n"
                 "used_memory_scripts_eval:0\r\nnumber_of_cached_scripts:0\r\nnumber_of_functions:0\r\n"
                 "number_of_libraries:0\r\nused_memory_vm_functions:0\r\nused_memory_vm_total:0\r\n"
                 "used_memory_vm_total_human:%s\r\nused_memory_functions:0\r\nused_memory_scripts:0\r\n"
                 "used_memory_scripts_human:%s\r\n",
                 h, h, h);
    info_bytes(b, "maxmemory", srv.db.maxmemory);
    sbuf_appendf(b, "maxmemory_policy:%s\r\n", info_policy_name());
    sbuf_appendf(b, "allocator_frag_ratio:%.2f\r\nallocator_frag_bytes:%lld\r\n", mh.allocator_frag,
                 mh.allocator_frag_bytes);
    sbuf_appendf(b, "allocator_rss_ratio:%.2f\r\nallocator_rss_bytes:%lld\r\n", mh.allocator_rss,
                 mh.allocator_rss_bytes);
    sbuf_appendf(b, "rss_overhead_ratio:%.2f\r\nrss_overhead_bytes:%lld\r\n", mh.rss_extra, mh.rss_extra_bytes);
    sbuf_appendf(b, "mem_fragmentation_ratio:%.2f\r\nmem_fragmentation_bytes:%lld\r\n", mh.total_frag,
                 mh.total_frag_bytes);
    /* Eviction counts everything allocated but the values being freed on
     * I/O threads, which it does not count for evict either. */
    sbuf_appendf(b, "mem_not_counted_for_evict:0\r\nmem_replication_backlog:%zu\r\n", mh.repl_backlog);
    sbuf_appendf(b, "mem_total_replication_buffers:0\r\nmem_clients_slaves:%zu\r\nmem_clients_normal:%zu\r\n",
                 mh.clients_replicas, mh.clients_normal);
    sbuf_appendf(b, "mem_cluster_links:%zu\r\nmem_aof_buffer:%zu\r\nmem_allocator:%s\r\n", mh.cluster_links,
                 mh.aof_buffer, km_allocator_name());
    sbuf_appendf(b, "mem_overhead_db_hashtable_rehashing:%zu\r\nactive_defrag_running:0\r\n",
                 mh.overhead_db_hashtable_rehashing);
    sbuf_appendf(b, "lazyfree_pending_objects:%zu\r\nlazyfreed_objects:%zu\r\n", lazyfree_pending_objects(),
                 lazyfree_freed_objects());
    mem_overhead_release(&mh);
}

static long long info_cmd_usec_sum;

static void info_sum_cmd_usec(command *cmd, void *priv) {
    info_cmd_usec_sum += cmd->usec;
}

/* Valkey's fields in Valkey's order; those of features Keel lacks
 * (replication, pub/sub, forks, defragmentation, scripts,
 * ACL users, key prefetching, reply-buffer resizing) read 0. */
static void info_stats(sbuf *b) {
    const session_metrics *ss = &srv.session_stats;
    const db_metrics *ds = &srv.db_stats;
    info_cmd_usec_sum = 0;
    command_foreach_all(info_sum_cmd_usec, NULL);
    sbuf_appendf(b, "# Stats\r\n");
    sbuf_appendf(b, "total_connections_received:%lld\r\ntotal_commands_processed:%lld\r\n",
                 ss->total_connections_received, ss->total_commands_processed);
    sbuf_appendf(b, "instantaneous_ops_per_sec:%lld\r\n", inst_avg(srv.inst_ops_samples));
    sbuf_appendf(b, "total_net_input_bytes:%lld\r\ntotal_net_output_bytes:%lld\r\n", ss->total_net_input_bytes,
                 ss->total_net_output_bytes);
    sbuf_appendf(b, "total_net_repl_input_bytes:0\r\ntotal_net_repl_output_bytes:0\r\n");
    sbuf_appendf(b, "instantaneous_input_kbps:%.2f\r\ninstantaneous_output_kbps:%.2f\r\n",
                 inst_avg(srv.inst_in_samples) / 1024.0, inst_avg(srv.inst_out_samples) / 1024.0);
    sbuf_appendf(b, "instantaneous_input_repl_kbps:0.00\r\ninstantaneous_output_repl_kbps:0.00\r\n");
    sbuf_appendf(b, "rejected_connections:%lld\r\nsync_full:0\r\nsync_partial_ok:0\r\nsync_partial_err:0\r\n",
                 ss->rejected_connections);
    sbuf_appendf(b, "expired_keys:%lld\r\nexpired_fields:%lld\r\n", ds->expired_keys,
                 srv.types_stats.expired_fields);
    sbuf_appendf(b, "expired_stale_perc:0.00\r\nexpired_time_cap_reached_count:%lld\r\n",
                 ds->expired_time_cap_reached_count);
    sbuf_appendf(b, "expire_cycle_cpu_milliseconds:0\r\nevicted_keys:%lld\r\nevicted_clients:%lld\r\n",
                 ds->evicted_keys, ss->evicted_clients);
    sbuf_appendf(b, "evicted_scripts:0\r\ntotal_eviction_exceeded_time:0\r\ncurrent_eviction_exceeded_time:0\r\n");
    sbuf_appendf(b, "keyspace_hits:%lld\r\nkeyspace_misses:%lld\r\n", ds->keyspace_hits, ds->keyspace_misses);
    sbuf_appendf(b, "pubsub_channels:%lld\r\npubsub_patterns:%lld\r\npubsubshard_channels:%lld\r\n",
                 srv.pubsub_stats.pubsub_channels, srv.pubsub_stats.pubsub_patterns,
                 srv.pubsub_stats.pubsubshard_channels);
    sbuf_appendf(
        b,
        "latest_fork_usec:0\r\ntotal_forks:0\r\nmigrate_cached_sockets:0\r\n"
        "slave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\nactive_defrag_misses:0\r\n"
        "active_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\ntotal_active_defrag_time:0\r\n"
        "current_active_defrag_time:0\r\n");
    sbuf_appendf(b, "tracking_total_keys:%lld\r\ntracking_total_items:%lld\r\ntracking_total_prefixes:%lld\r\n",
                 srv.tracking_stats.tracking_total_keys, srv.tracking_stats.tracking_total_items,
                 srv.tracking_stats.tracking_total_prefixes);
    sbuf_appendf(b, "unexpected_error_replies:%lld\r\ntotal_error_replies:%lld\r\n", ss->unexpected_error_replies,
                 ss->total_error_replies);
    sbuf_appendf(b, "dump_payload_sanitizations:0\r\ntotal_reads_processed:%lld\r\ntotal_writes_processed:%lld\r\n",
                 ss->total_reads_processed, ss->total_writes_processed);
    sbuf_appendf(b,
                 "io_threaded_reads_processed:%lld\r\nio_threaded_writes_processed:%lld\r\n"
                 "io_threaded_freed_objects:%lld\r\nio_threaded_poll_processed:0\r\n"
                 "io_threaded_total_prefetch_batches:0\r\nio_threaded_total_prefetch_entries:0\r\n",
                 io_stats.reads, io_stats.writes, io_stats.frees);
    sbuf_appendf(b,
                 "client_query_buffer_limit_disconnections:%lld\r\nclient_output_buffer_limit_disconnections:%lld\r\n",
                 ss->client_query_buffer_limit_disconnections, ss->client_output_buffer_limit_disconnections);
    sbuf_appendf(b, "reply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\n");
    sbuf_appendf(b, "eventloop_cycles:%lld\r\neventloop_duration_sum:%lld\r\neventloop_duration_cmd_sum:%lld\r\n",
                 srv.stats.eventloop_cycles, srv.stats.eventloop_duration_sum, info_cmd_usec_sum);
    sbuf_appendf(b, "instantaneous_eventloop_cycles_per_sec:%lld\r\ninstantaneous_eventloop_duration_usec:%lld\r\n",
                 inst_avg(srv.inst_el_cycles_samples), inst_avg(srv.inst_el_duration_samples));
    sbuf_appendf(b, "acl_access_denied_auth:0\r\nacl_access_denied_cmd:0\r\nacl_access_denied_key:0\r\n"
                    "acl_access_denied_channel:0\r\n");
}

/* Keel has no replication: it reports itself as a primary with no replicas,
 * which is what monitoring tools expect to read from a standalone server. */
static void info_replication(sbuf *b) {
    sbuf_appendf(
        b,
        "# "
        "Replication\r\nrole:master\r\nconnected_slaves:0\r\nreplicas_waiting_psync:0\r\n"
        "master_failover_state:no-failover\r\n"
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
    sbuf_appendf(b,
                 "# Persistence\r\nloading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\n"
                 "current_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\n"
                 "current_save_keys_total:0\r\nrdb_changes_since_last_save:%lld\r\nrdb_bgsave_in_progress:0\r\n"
                 "rdb_last_save_time:%lld\r\nrdb_last_bgsave_status:ok\r\nrdb_last_bgsave_time_sec:-1\r\n"
                 "rdb_current_bgsave_time_sec:-1\r\nrdb_saves:0\r\nrdb_last_cow_size:0\r\n"
                 "rdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:0\r\naof_enabled:0\r\n"
                 "aof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\naof_last_rewrite_time_sec:-1\r\n"
                 "aof_current_rewrite_time_sec:-1\r\naof_last_bgrewrite_status:ok\r\naof_rewrites:0\r\n"
                 "aof_rewrites_consecutive_failures:0\r\naof_last_write_status:ok\r\naof_last_cow_size:0\r\n"
                 "module_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
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

static void info_rusage(sbuf *b, const char *suffix, int who) {
    struct rusage ru;
    getrusage(who, &ru);
    sbuf_appendf(b, "used_cpu_sys%s:%ld.%06ld\r\nused_cpu_user%s:%ld.%06ld\r\n", suffix, (long)ru.ru_stime.tv_sec,
                 (long)ru.ru_stime.tv_usec, suffix, (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
}

/* The process (every thread), its children (Keel forks none), and the main
 * thread alone (INFO runs on it). */
static void info_cpu(sbuf *b) {
    sbuf_appendf(b, "# CPU\r\n");
    info_rusage(b, "", RUSAGE_SELF);
    info_rusage(b, "_children", RUSAGE_CHILDREN);
    info_rusage(b, "_main_thread", RUSAGE_THREAD);
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

static void info_latencystats(sbuf *b) {
    sbuf_appendf(b, "# Latencystats\r\n");
    latency_info(b);
}

/* Keel runs no cluster. */
static void info_cluster(sbuf *b) {
    sbuf_appendf(b, "# Cluster\r\ncluster_enabled:0\r\n");
}

/* Valkey's sections in Valkey's order, and its default set. */
static const info_section sections[] = {
    {"server", info_server, 1},
    {"clients", info_clients, 1},
    {"memory", info_memory, 1},
    {"persistence", info_persistence, 1},
    {"stats", info_stats, 1},
    {"replication", info_replication, 1},
    {"cpu", info_cpu, 1},
    {"modules", info_modules, 1},
    {"commandstats", info_commandstats, 0},
    {"errorstats", info_errorstats, 1},
    {"latencystats", info_latencystats, 0},
    {"cluster", info_cluster, 1},
    {"keyspace", info_keyspace, 1},
};

static int info_wanted(const char *name, int in_default, int argc, const karg *argv) {
    if (argc == 0) return in_default;
    for (int i = 0; i < argc; i++) {
        if (karg_eq(&argv[i], name) || karg_eq(&argv[i], "all") || karg_eq(&argv[i], "everything")) return 1;
        if (karg_eq(&argv[i], "default") && in_default) return 1;
        if (!strcmp(name, "modules") && karg_eq(&argv[i], "module_list")) return 1; /* Valkey's alias */
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

int info_add_fields(const char *section, info_section_fn fn, void *priv, void *owner) {
    for (size_t i = 0; i < K_ARRAY_LEN(sections); i++) {
        if (strcmp(sections[i].name, section) != 0) continue;
        info_extra_add(section, fn, priv, owner, 1);
        return K_OK;
    }
    return K_ERR;
}

/* Where the line "name:..." of b starts (at or after from), or -1. */
static long info_find_field(const sbuf *b, size_t from, const char *name, size_t len) {
    for (size_t p = from; p + len < b->len;) {
        if (!memcmp(b->data + p, name, len) && b->data[p + len] == ':') return (long)p;
        const char *nl = memchr(b->data + p, '\n', b->len - p);
        if (!nl) break;
        p = (size_t)(nl - b->data) + 1;
    }
    return -1;
}

/* One module line: a field the section already shows (a placeholder such
 * as used_memory_lua:0 for a feature a module provides) takes the module's
 * value in its place, so Valkey's order holds; any other is appended. */
static void info_merge_line(sbuf *b, size_t from, const char *line, size_t len) {
    const char *colon = memchr(line, ':', len);
    long at = colon ? info_find_field(b, from, line, (size_t)(colon - line)) : -1;
    if (at < 0) {
        sbuf_append(b, line, len);
        return;
    }
    const char *end = memchr(b->data + at, '\n', b->len - (size_t)at);
    size_t tail = end ? (size_t)(end + 1 - b->data) : b->len;
    sbuf out = {0};
    sbuf_append(&out, b->data, (size_t)at);
    sbuf_append(&out, line, len);
    sbuf_append(&out, b->data + tail, b->len - tail);
    km_free(b->data);
    *b = out;
}

/* The modules' fields of a built-in section (which starts at from). */
static void info_builtin_extras(sbuf *b, size_t from, const char *section) {
    for (int i = 0; i < extras_count; i++) {
        if (!extras[i].in_builtin || strcmp(extras[i].name, section)) continue;
        sbuf add = {0};
        extras[i].fn(&add, extras[i].priv);
        for (size_t p = 0; p < add.len;) {
            const char *nl = memchr(add.data + p, '\n', add.len - p);
            size_t next = nl ? (size_t)(nl - add.data) + 1 : add.len;
            info_merge_line(b, from, add.data + p, next - p);
            p = next;
        }
        km_free(add.data);
    }
}

void info_generate(sbuf *b, int argc, const karg *argv) {
    for (size_t i = 0; i < K_ARRAY_LEN(sections); i++) {
        if (!info_wanted(sections[i].name, sections[i].in_default, argc, argv)) continue;
        if (b->len) sbuf_appendf(b, "\r\n");
        size_t from = b->len;
        sections[i].fn(b);
        if (K_UNLIKELY(extras_count)) info_builtin_extras(b, from, sections[i].name);
    }
    for (int i = 0; i < extras_count; i++) {
        if (extras[i].in_builtin || !info_module_section_wanted(extras[i].name, argc, argv))
            continue;
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
