/* check_it_info.c -- INFO's sections and fields as Valkey 8.0.1 prints them
 * (their presence, order of sections, and the sanity of the values Keel
 * measures: memory accounting, allocator and RSS figures, CPU times, read
 * and write counts, the event loop), and MEMORY: STATS (every field, the
 * per-database maps, RESP2 and RESP3), USAGE with SAMPLES, DOCTOR,
 * MALLOC-STATS, PURGE, HELP and the errors for wrong arity. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The INFO text of one section (tracked). */
static char *info_text(const char *section) {
    redisReply *r = it_cmd(C, "INFO %s", section);
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    return it_fmt("%s", r->str);
}

/* 1 if text has a line "field:..." */
static int has_field(const char *text, const char *field) {
    size_t n = strlen(field);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, field, n) == 0 && p[n] == ':') return 1;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return 0;
}

/* The integer value of field in an INFO text. */
static long long field_ll(const char *text, const char *field) {
    size_t n = strlen(field);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, field, n) == 0 && p[n] == ':') return strtoll(p + n + 1, NULL, 10);
        p = strchr(p, '\n');
        if (p) p++;
    }
    ck_abort_msg("no field %s", field);
    return 0;
}

static double info_double(const char *section, const char *field) {
    char *s = it_info_str(C, section, field);
    ck_assert_msg(s != NULL, "INFO %s has no %s", section, field);
    return strtod(s, NULL);
}

static void expect_fields(const char *section, const char *const *fields, size_t n) {
    char *text = info_text(section);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(has_field(text, fields[i]), "INFO %s lacks %s", section, fields[i]);
}

#define EXPECT_FIELDS(section, ...)                                                                \
    do {                                                                                           \
        static const char *const f_[] = {__VA_ARGS__};                                             \
        expect_fields(section, f_, sizeof(f_) / sizeof(f_[0]));                                    \
    } while (0)

/* ---- INFO ---- */

START_TEST(test_info_server_fields) {
    EXPECT_FIELDS("server", "redis_version", "server_name", "valkey_version", "redis_git_sha1",
                  "redis_git_dirty", "redis_build_id", "redis_mode", "os", "arch_bits",
                  "monotonic_clock", "multiplexing_api", "gcc_version", "process_id",
                  "process_supervised", "run_id", "tcp_port", "server_time_usec",
                  "uptime_in_seconds", "uptime_in_days", "hz", "configured_hz", "lru_clock",
                  "executable", "config_file", "io_threads_active", "availability_zone",
                  "listener0");
    char *l = it_info_str(C, "server", "listener0");
    ck_assert_ptr_nonnull(strstr(l, "name=tcp"));
    ck_assert_ptr_nonnull(strstr(l, it_fmt("port=%d", S->port)));
}
END_TEST

START_TEST(test_info_clients_fields) {
    EXPECT_FIELDS("clients", "connected_clients", "cluster_connections", "maxclients",
                  "client_recent_max_input_buffer", "client_recent_max_output_buffer",
                  "blocked_clients", "tracking_clients", "pubsub_clients", "watching_clients",
                  "clients_in_timeout_table", "total_watched_keys", "total_blocking_keys",
                  "total_blocking_keys_on_nokey");
}
END_TEST

START_TEST(test_info_memory_fields) {
    EXPECT_FIELDS("memory", "used_memory", "used_memory_human", "used_memory_rss",
                  "used_memory_rss_human", "used_memory_peak", "used_memory_peak_human",
                  "used_memory_peak_time", "used_memory_peak_perc", "used_memory_overhead",
                  "used_memory_startup", "used_memory_dataset", "used_memory_dataset_perc",
                  "allocator_allocated", "allocator_active", "allocator_resident",
                  "allocator_muzzy", "total_system_memory", "total_system_memory_human",
                  "used_memory_lua", "used_memory_vm_eval", "used_memory_lua_human",
                  "used_memory_scripts_eval", "number_of_cached_scripts", "number_of_functions",
                  "number_of_libraries", "used_memory_vm_functions", "used_memory_vm_total",
                  "used_memory_vm_total_human", "used_memory_functions", "used_memory_scripts",
                  "used_memory_scripts_human", "maxmemory", "maxmemory_human", "maxmemory_policy",
                  "allocator_frag_ratio", "allocator_frag_bytes", "allocator_rss_ratio",
                  "allocator_rss_bytes", "rss_overhead_ratio", "rss_overhead_bytes",
                  "mem_fragmentation_ratio", "mem_fragmentation_bytes", "mem_not_counted_for_evict",
                  "mem_replication_backlog", "mem_total_replication_buffers", "mem_clients_slaves",
                  "mem_clients_normal", "mem_cluster_links", "mem_aof_buffer", "mem_allocator",
                  "mem_overhead_db_hashtable_rehashing", "active_defrag_running",
                  "lazyfree_pending_objects", "lazyfreed_objects");
}
END_TEST

/* The accounting adds up: peak >= used, dataset + overhead = used (both
 * from one snapshot, as long as the overhead does not exceed used), the
 * start-up memory is part of the overhead, the machine has memory, the
 * allocator and the process hold at least what is allocated. */
START_TEST(test_info_memory_sane) {
    for (int i = 0; i < 200; i++)
        it_cmd(C, "SET key:%d %0128d", i, i);
    long long used = it_info_int(C, "memory", "used_memory");
    ck_assert_int_gt(used, 0);
    ck_assert_int_ge(it_info_int(C, "memory", "used_memory_peak"), used);
    long long u = it_info_int(C, "memory", "used_memory");
    long long overhead = it_info_int(C, "memory", "used_memory_overhead");
    long long dataset = it_info_int(C, "memory", "used_memory_dataset");
    long long startup = it_info_int(C, "memory", "used_memory_startup");
    /* Each it_info_int is its own INFO: allow the few KB one INFO moves. */
    ck_assert_int_lt(llabs(dataset + overhead - u), 64 * 1024);
    ck_assert_int_gt(dataset, 200 * 128);
    ck_assert_int_gt(startup, 0);
    ck_assert_int_ge(overhead, startup);
    ck_assert_int_gt(it_info_int(C, "memory", "total_system_memory"), 0);
    ck_assert_int_gt(it_info_int(C, "memory", "mem_clients_normal"), 0);
    ck_assert_int_ge(it_info_int(C, "memory", "used_memory_rss"), u);
    char *mem = info_text("memory"); /* one snapshot */
    ck_assert_int_ge(field_ll(mem, "allocator_resident"), field_ll(mem, "allocator_active"));
    ck_assert_int_eq(field_ll(mem, "used_memory_overhead") + field_ll(mem, "used_memory_dataset"),
                     field_ll(mem, "used_memory"));
    ck_assert_int_gt(it_info_int(C, "memory", "allocator_allocated"), 0);
    double peak_perc = info_double("memory", "used_memory_peak_perc");
    ck_assert(peak_perc > 0 && peak_perc <= 100.0);
    double ds_perc = info_double("memory", "used_memory_dataset_perc");
    ck_assert(ds_perc > 0 && ds_perc <= 100.0);
    ck_assert(info_double("memory", "mem_fragmentation_ratio") > 0);
    ck_assert(info_double("memory", "allocator_frag_ratio") >= 1.0);
    ck_assert_int_eq(it_info_int(C, "memory", "used_memory_lua"), 0);
    ck_assert_int_eq(it_info_int(C, "memory", "active_defrag_running"), 0);
    char *alloc = it_info_str(C, "memory", "mem_allocator");
    ck_assert(strncmp(alloc, "jemalloc-", 9) == 0 || strcmp(alloc, "libc") == 0);
    ck_assert(strchr(it_info_str(C, "memory", "used_memory_peak_perc"), '%') != NULL);
}
END_TEST

/* The peak follows growth and CONFIG RESETSTAT starts it again. */
START_TEST(test_info_memory_peak) {
    long long before = it_info_int(C, "memory", "used_memory_peak");
    it_cmd(C, "SET big %b", it_random_bytes(4 << 20, 1), (size_t)(4 << 20));
    ck_assert_int_ge(it_info_int(C, "memory", "used_memory_peak"), before + (4 << 20));
    it_cmd(C, "DEL big");
    long long used = it_info_int(C, "memory", "used_memory");
    ck_assert_int_gt(it_info_int(C, "memory", "used_memory_peak"), used + (3 << 20));
    long long peak_time = it_info_int(C, "memory", "used_memory_peak_time");
    ck_assert_int_le(llabs(peak_time - (long long)time(NULL)), 5);
    expect_status(C, "OK", "CONFIG RESETSTAT");
    ck_assert_int_lt(it_info_int(C, "memory", "used_memory_peak"), used + (1 << 20));
}
END_TEST

START_TEST(test_info_persistence_replication_fields) {
    EXPECT_FIELDS("persistence", "loading", "async_loading", "current_cow_peak", "current_cow_size",
                  "current_cow_size_age", "current_fork_perc", "current_save_keys_processed",
                  "current_save_keys_total", "rdb_changes_since_last_save",
                  "rdb_bgsave_in_progress", "rdb_last_save_time", "rdb_last_bgsave_status",
                  "rdb_last_bgsave_time_sec", "rdb_current_bgsave_time_sec", "rdb_saves",
                  "rdb_last_cow_size", "rdb_last_load_keys_expired", "rdb_last_load_keys_loaded",
                  "aof_enabled", "aof_rewrite_in_progress", "aof_rewrite_scheduled",
                  "aof_last_rewrite_time_sec", "aof_current_rewrite_time_sec",
                  "aof_last_bgrewrite_status", "aof_rewrites", "aof_rewrites_consecutive_failures",
                  "aof_last_write_status", "aof_last_cow_size", "module_fork_in_progress",
                  "module_fork_last_cow_size");
    EXPECT_FIELDS("replication", "role", "connected_slaves", "replicas_waiting_psync",
                  "master_failover_state", "master_replid", "master_replid2", "master_repl_offset",
                  "second_repl_offset", "repl_backlog_active", "repl_backlog_size",
                  "repl_backlog_first_byte_offset", "repl_backlog_histlen");
}
END_TEST

START_TEST(test_info_stats_fields) {
    EXPECT_FIELDS(
        "stats", "total_connections_received", "total_commands_processed",
        "instantaneous_ops_per_sec", "total_net_input_bytes", "total_net_output_bytes",
        "total_net_repl_input_bytes", "total_net_repl_output_bytes", "instantaneous_input_kbps",
        "instantaneous_output_kbps", "instantaneous_input_repl_kbps",
        "instantaneous_output_repl_kbps", "rejected_connections", "sync_full", "sync_partial_ok",
        "sync_partial_err", "expired_keys", "expired_stale_perc", "expired_time_cap_reached_count",
        "expire_cycle_cpu_milliseconds", "evicted_keys", "evicted_clients", "evicted_scripts",
        "total_eviction_exceeded_time", "current_eviction_exceeded_time", "keyspace_hits",
        "keyspace_misses", "pubsub_channels", "pubsub_patterns", "pubsubshard_channels",
        "latest_fork_usec", "total_forks", "migrate_cached_sockets", "slave_expires_tracked_keys",
        "active_defrag_hits", "active_defrag_misses", "active_defrag_key_hits",
        "active_defrag_key_misses", "total_active_defrag_time", "current_active_defrag_time",
        "tracking_total_keys", "tracking_total_items", "tracking_total_prefixes",
        "unexpected_error_replies", "total_error_replies", "dump_payload_sanitizations",
        "total_reads_processed", "total_writes_processed", "io_threaded_reads_processed",
        "io_threaded_writes_processed", "io_threaded_freed_objects", "io_threaded_poll_processed",
        "io_threaded_total_prefetch_batches", "io_threaded_total_prefetch_entries",
        "client_query_buffer_limit_disconnections", "client_output_buffer_limit_disconnections",
        "reply_buffer_shrinks", "reply_buffer_expands", "eventloop_cycles",
        "eventloop_duration_sum", "eventloop_duration_cmd_sum",
        "instantaneous_eventloop_cycles_per_sec", "instantaneous_eventloop_duration_usec",
        "acl_access_denied_auth", "acl_access_denied_cmd", "acl_access_denied_key",
        "acl_access_denied_channel");
}
END_TEST

/* Reads and writes are counted per read and write, the event loop per
 * iteration, and RESETSTAT clears them. */
START_TEST(test_info_stats_counters) {
    long long reads = it_info_int(C, "stats", "total_reads_processed");
    long long writes = it_info_int(C, "stats", "total_writes_processed");
    long long cycles = it_info_int(C, "stats", "eventloop_cycles");
    for (int i = 0; i < 10; i++)
        expect_status(C, "PONG", "PING");
    ck_assert_int_ge(it_info_int(C, "stats", "total_reads_processed"), reads + 10);
    ck_assert_int_ge(it_info_int(C, "stats", "total_writes_processed"), writes + 10);
    ck_assert_int_ge(it_info_int(C, "stats", "eventloop_cycles"), cycles + 10);
    ck_assert_int_gt(it_info_int(C, "stats", "eventloop_duration_sum"), 0);
    ck_assert_int_gt(it_info_int(C, "stats", "eventloop_duration_cmd_sum"), 0);
    /* Enough iterations that a reset shows whatever the I/O threads add
     * (their completions wake the loop too) between RESETSTAT and INFO. */
    for (int i = 0; i < 1000; i++)
        expect_status(C, "PONG", "PING");
    long long before = it_info_int(C, "stats", "eventloop_cycles");
    ck_assert_int_ge(before, 1000);
    expect_status(C, "OK", "CONFIG RESETSTAT");
    ck_assert_int_le(it_info_int(C, "stats", "total_reads_processed"), 2);
    ck_assert_int_lt(it_info_int(C, "stats", "eventloop_cycles"), before / 2);
}
END_TEST

/* CPU times come from getrusage and grow with work. */
START_TEST(test_info_cpu) {
    EXPECT_FIELDS("cpu", "used_cpu_sys", "used_cpu_user", "used_cpu_sys_children",
                  "used_cpu_user_children", "used_cpu_sys_main_thread",
                  "used_cpu_user_main_thread");
    double before = info_double("cpu", "used_cpu_user") + info_double("cpu", "used_cpu_sys");
    double thread_before = info_double("cpu", "used_cpu_user_main_thread");
    long long until = it_mstime() + 5000;
    while (info_double("cpu", "used_cpu_user") + info_double("cpu", "used_cpu_sys") <=
               before + 0.02 &&
           it_mstime() < until) {
        for (int i = 0; i < 200; i++)
            it_cmd(C, "INFO everything");
    }
    ck_assert(info_double("cpu", "used_cpu_user") + info_double("cpu", "used_cpu_sys") >
              before + 0.02);
    ck_assert(info_double("cpu", "used_cpu_user_main_thread") >= thread_before);
    ck_assert(info_double("cpu", "used_cpu_user_children") == 0.0);
}
END_TEST

/* Valkey's section order and default set: latencystats and commandstats
 * only when asked for; "module_list" names the modules section. */
START_TEST(test_info_sections) {
    redisReply *r = it_cmd(C, "INFO");
    const char *order[] = {"# Server",     "# Clients",     "# Memory",  "# Persistence",
                           "# Stats",      "# Replication", "# CPU",     "# Modules",
                           "# Errorstats", "# Cluster",     "# Keyspace"};
    const char *last = r->str;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        const char *p = strstr(r->str, order[i]);
        ck_assert_msg(p != NULL, "default INFO lacks %s", order[i]);
        ck_assert_msg(p >= last, "%s out of order", order[i]);
        last = p;
    }
    ck_assert_ptr_null(strstr(r->str, "# Latencystats"));
    ck_assert_ptr_null(strstr(r->str, "# Commandstats"));
    r = it_cmd(C, "INFO all");
    ck_assert_ptr_nonnull(strstr(r->str, "# Latencystats"));
    ck_assert_ptr_nonnull(strstr(r->str, "# Commandstats"));
    ck_assert(strstr(r->str, "# Commandstats") < strstr(r->str, "# Errorstats"));
    ck_assert(strstr(r->str, "# Cluster") < strstr(r->str, "# Keyspace"));
    ck_assert_int_eq(it_info_int(C, "cluster", "cluster_enabled"), 0);
    r = it_cmd(C, "INFO module_list");
    ck_assert_ptr_nonnull(strstr(r->str, "# Modules"));
}
END_TEST

/* ---- MEMORY ---- */

static const char *const stats_fields[] = {
    "peak.allocated",
    "total.allocated",
    "startup.allocated",
    "replication.backlog",
    "clients.slaves",
    "clients.normal",
    "cluster.links",
    "aof.buffer",
    "lua.caches",
    "functions.caches",
    "overhead.db.hashtable.lut",
    "overhead.db.hashtable.rehashing",
    "overhead.total",
    "db.dict.rehashing.count",
    "keys.count",
    "keys.bytes-per-key",
    "dataset.bytes",
    "dataset.percentage",
    "peak.percentage",
    "allocator.allocated",
    "allocator.active",
    "allocator.resident",
    "allocator.muzzy",
    "allocator-fragmentation.ratio",
    "allocator-fragmentation.bytes",
    "allocator-rss.ratio",
    "allocator-rss.bytes",
    "rss-overhead.ratio",
    "rss-overhead.bytes",
    "fragmentation",
    "fragmentation.bytes",
};

static const redisReply *stats_get(const redisReply *r, const char *name) {
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (!strcmp(r->element[i]->str, name)) return r->element[i + 1];
    return NULL;
}

/* RESP2: a flat array of 31 pairs plus one per database with keys, each
 * "db.N" a map of its two table overheads. */
START_TEST(test_memory_stats_resp2) {
    it_cmd(C, "FLUSHALL");
    it_cmd(C, "SET a 1");
    it_cmd(C, "SELECT 3");
    it_cmd(C, "SET b 2");
    it_cmd(C, "EXPIRE b 100");
    redisReply *r = it_cmd(C, "MEMORY STATS");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2 * (31 + 2));
    for (size_t i = 0; i < sizeof(stats_fields) / sizeof(stats_fields[0]); i++)
        ck_assert_msg(stats_get(r, stats_fields[i]) != NULL, "MEMORY STATS lacks %s",
                      stats_fields[i]);
    const redisReply *db3 = stats_get(r, "db.3");
    ck_assert_ptr_nonnull(db3);
    ck_assert_ptr_nonnull(stats_get(r, "db.0"));
    ck_assert_ptr_null(stats_get(r, "db.1"));
    ck_assert_int_eq(db3->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(db3->elements, 4);
    ck_assert_str_eq(db3->element[0]->str, "overhead.hashtable.main");
    ck_assert_int_gt(db3->element[1]->integer, 0);
    ck_assert_str_eq(db3->element[2]->str, "overhead.hashtable.expires");
    ck_assert_int_gt(db3->element[3]->integer, 0);
    ck_assert_int_eq(stats_get(r, "keys.count")->integer, 2);
    long long total = stats_get(r, "total.allocated")->integer;
    ck_assert_int_ge(stats_get(r, "peak.allocated")->integer, total);
    ck_assert_int_eq(
        stats_get(r, "overhead.total")->integer + stats_get(r, "dataset.bytes")->integer, total);
    ck_assert_int_gt(stats_get(r, "startup.allocated")->integer, 0);
    ck_assert_int_gt(stats_get(r, "clients.normal")->integer, 0);
    ck_assert_int_eq(stats_get(r, "lua.caches")->integer, 0);
    /* Doubles are bulk strings in RESP2. */
    ck_assert_int_eq(stats_get(r, "fragmentation")->type, REDIS_REPLY_STRING);
    ck_assert(strtod(stats_get(r, "peak.percentage")->str, NULL) <= 100.0);
    it_cmd(C, "SELECT 0");
}
END_TEST

/* RESP3: a map, doubles as doubles, the database entries nested maps. */
START_TEST(test_memory_stats_resp3) {
    it_cmd(C, "SET a 1");
    it_raw *raw = it_raw_connect(S);
    it_raw_cmd(raw, "HELLO", "3", NULL);
    it_value *v = it_raw_read(raw);
    it_raw_cmd(raw, "MEMORY", "STATS", NULL);
    v = it_raw_read(raw);
    ck_assert_int_eq(v->type, '%');
    ck_assert_int_eq(it_map_get(v, "fragmentation")->type, ',');
    ck_assert_int_eq(it_map_get(v, "allocator-rss.ratio")->type, ',');
    ck_assert_int_eq(it_map_get(v, "total.allocated")->type, ':');
    it_value *db0 = it_map_get(v, "db.0");
    ck_assert_ptr_nonnull(db0);
    ck_assert_int_eq(db0->type, '%');
    ck_assert_ptr_nonnull(it_map_get(db0, "overhead.hashtable.main"));
    ck_assert_ptr_nonnull(it_map_get(db0, "overhead.hashtable.expires"));
}
END_TEST

START_TEST(test_memory_usage) {
    it_cmd(C, "SET k %0100d", 7);
    redisReply *r = it_cmd(C, "MEMORY USAGE k");
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    ck_assert_int_ge(r->integer, 100);
    long long plain = r->integer;
    r = it_cmd(C, "MEMORY USAGE k SAMPLES 0");
    ck_assert_int_eq(r->integer, plain);
    r = it_cmd(C, "MEMORY usage k samples 10");
    ck_assert_int_eq(r->integer, plain);
    expect_reply(C, "nil", "MEMORY USAGE nokey");
    expect_reply(C, "-ERR syntax error", "MEMORY USAGE k SAMPLES -1");
    expect_reply(C, "-ERR syntax error", "MEMORY USAGE k SAMPLES");
    expect_reply(C, "-ERR syntax error", "MEMORY USAGE k FOO 1");
    expect_reply(C, "-ERR value is not an integer or out of range", "MEMORY USAGE k SAMPLES x");
}
END_TEST

START_TEST(test_memory_doctor) {
    /* A nearly empty server: the one-line answer. */
    redisReply *r = it_cmd(C, "MEMORY DOCTOR");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    ck_assert_ptr_nonnull(strstr(r->str, "very little data"));
    /* With a dataset, and once a peak far above it: the peak is a finding. */
    for (int i = 0; i < 8; i++)
        it_cmd(C, "SET big:%d %b", i, it_random_bytes(1 << 20, (unsigned)i), (size_t)(1 << 20));
    r = it_cmd(C, "MEMORY DOCTOR");
    ck_assert_ptr_null(strstr(r->str, "very little data"));
    ck_assert_ptr_null(strstr(r->str, "Memory peak"));
    for (int i = 0; i < 20; i++)
        it_cmd(C, "SET peak:%d %b", i, it_random_bytes(1 << 20, (unsigned)i + 100),
               (size_t)(1 << 20));
    it_cmd(C, "INFO memory"); /* samples the new peak */
    for (int i = 0; i < 20; i++)
        it_cmd(C, "DEL peak:%d", i);
    r = it_cmd(C, "MEMORY DOCTOR");
    ck_assert_msg(strstr(r->str, "Memory peak") != NULL, "no peak finding: %s", r->str);
    ck_assert_ptr_nonnull(strstr(r->str, "finding"));
    it_cmd(C, "FLUSHALL");
}
END_TEST

START_TEST(test_memory_malloc_stats_purge) {
    redisReply *r = it_cmd(C, "MEMORY MALLOC-STATS");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    if (strstr(r->str, "not supported") == NULL) { /* builds without jemalloc */
        ck_assert_int_gt(r->len, 100);
        ck_assert_ptr_nonnull(strstr(r->str, "jemalloc"));
    }
    expect_status(C, "OK", "MEMORY PURGE");
    /* RESP3: verbatim text. */
    it_raw *raw = it_raw_connect(S);
    it_raw_cmd(raw, "HELLO", "3", NULL);
    it_raw_read(raw);
    it_raw_cmd(raw, "MEMORY", "DOCTOR", NULL);
    ck_assert_int_eq(it_raw_read(raw)->type, '=');
}
END_TEST

START_TEST(test_memory_help_and_errors) {
    redisReply *r = it_cmd(C, "MEMORY HELP");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 14);
    ck_assert_str_eq(r->element[0]->str,
                     "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    ck_assert_str_eq(r->element[1]->str, "DOCTOR");
    ck_assert_str_eq(r->element[3]->str, "MALLOC-STATS");
    ck_assert_str_eq(r->element[5]->str, "PURGE");
    expect_reply(C, "-ERR wrong number of arguments for 'memory|stats' command", "MEMORY STATS x");
    expect_reply(C, "-ERR wrong number of arguments for 'memory|doctor' command",
                 "MEMORY DOCTOR x");
    expect_reply(C, "-ERR wrong number of arguments for 'memory|purge' command", "MEMORY PURGE x");
    expect_reply(C, "-ERR wrong number of arguments for 'memory|malloc-stats' command",
                 "MEMORY MALLOC-STATS x");
    expect_reply(C, "-ERR wrong number of arguments for 'memory|usage' command", "MEMORY USAGE");
    expect_reply(C, "-ERR wrong number of arguments for 'memory' command", "MEMORY");
    expect_error_prefix(C, "ERR unknown subcommand 'FOO'", "MEMORY FOO");
    r = it_cmd(C, "COMMAND INFO memory");
    ck_assert_int_eq(r->element[0]->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->element[0]->element[9]->elements, 6); /* subcommands */
}
END_TEST

static Suite *info_suite(void) {
    Suite *s = suite_create("info");
    TCase *tc = it_tcase(s, "info");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_info_server_fields);
    tcase_add_test(tc, test_info_clients_fields);
    tcase_add_test(tc, test_info_memory_fields);
    tcase_add_test(tc, test_info_memory_sane);
    tcase_add_test(tc, test_info_memory_peak);
    tcase_add_test(tc, test_info_persistence_replication_fields);
    tcase_add_test(tc, test_info_stats_fields);
    tcase_add_test(tc, test_info_stats_counters);
    tcase_add_test(tc, test_info_cpu);
    tcase_add_test(tc, test_info_sections);
    tc = it_tcase(s, "memory");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_memory_stats_resp2);
    tcase_add_test(tc, test_memory_stats_resp3);
    tcase_add_test(tc, test_memory_usage);
    tcase_add_test(tc, test_memory_doctor);
    tcase_add_test(tc, test_memory_malloc_stats_purge);
    tcase_add_test(tc, test_memory_help_and_errors);
    return s;
}

int main(void) {
    return it_run(info_suite());
}
