/* server_compat.h -- the values of Valkey directives Keel keeps but has no
 * feature for yet (persistence, replication, cluster, TLS, ACL, defrag,
 * process settings): CONFIG GET shows them, CONFIG SET validates and stores
 * them, CONFIG REWRITE writes them, and nothing else reads them (see
 * docs/configuration.md). Their rows, with Valkey 8.0.1's defaults and
 * bounds, are in server_config_compat.c. A feature that comes moves its
 * options to its own subsystem. The exceptions, which do have an effect:
 * enable_protected_configs (CONFIG SET of dir and dbfilename).
 *
 * Threads: main thread. */
#ifndef KEEL_SERVER_COMPAT_H
#define KEEL_SERVER_COMPAT_H

#include "common/common.h"

typedef struct server_compat_options {
    int rdbchecksum;
    int always_show_logo;
    int rdbcompression;
    int rdb_del_sync_files;
    int activerehashing;
    int stop_writes_on_bgsave_error;
    int set_proc_title;
    int dynamic_hz;
    int repl_disable_tcp_nodelay;
    int repl_diskless_sync;
    int dual_channel_replication_enabled;
    int aof_rewrite_incremental_fsync;
    int no_appendfsync_on_rewrite;
    int cluster_require_full_coverage;
    int rdb_save_incremental_fsync;
    int aof_load_truncated;
    int aof_use_rdb_preamble;
    int aof_timestamp_enabled;
    int cluster_replica_no_failover;
    int replica_lazy_flush;
    int replica_serve_stale_data;
    int replica_read_only;
    int replica_ignore_maxmemory;
    int jemalloc_bg_thread;
    int activedefrag;
    int syslog_enabled;
    int cluster_allow_reads_when_down;
    int cluster_allow_pubsubshard_when_down;
    int crash_log_enabled;
    int crash_memcheck_enabled;
    int use_exit_on_panic;
    int disable_thp;
    int cluster_allow_replica_migration;
    int replica_announced;
    int aof_disable_auto_gc;
    int replica_ignore_disk_write_errors;
    int extended_redis_compatibility;
    int enable_debug_assert;
    int cluster_slot_stats_enabled;
    int hide_user_data_from_log;
    char *replica_announce_ip;
    char *primaryuser;
    char *cluster_announce_ip;
    char *cluster_announce_client_ipv4;
    char *cluster_announce_client_ipv6;
    char *cluster_config_file;
    char *cluster_announce_hostname;
    char *cluster_announce_human_nodename;
    char *syslog_ident;
    char *dbfilename;
    char *appendfilename;
    char *appenddirname;
    char *server_cpulist;
    char *bio_cpulist;
    char *aof_rewrite_cpulist;
    char *bgsave_cpulist;
    char *ignore_warnings;
    char *proc_title_template;
    char *bind_source_addr;
    char *locale_collate;
    char *debug_context;
    kbytes primaryauth;
    kbytes availability_zone;
    int supervised;
    int syslog_facility;
    int repl_diskless_load;
    int appendfsync;
    int oom_score_adj;
    int acl_pubsub_default;
    int sanitize_dump_payload;
    int enable_protected_configs;
    int cluster_preferred_endpoint_type;
    int propagation_error_behavior;
    int prefetch_batch_max_size;
    int auto_aof_rewrite_percentage;
    int cluster_replica_validity_factor;
    int cluster_migration_barrier;
    int active_defrag_cycle_min;
    int active_defrag_cycle_max;
    int active_defrag_threshold_lower;
    int active_defrag_threshold_upper;
    int replica_priority;
    int repl_diskless_sync_delay;
    int maxmemory_eviction_tenacity;
    int replica_announce_port;
    int cluster_port;
    int cluster_announce_bus_port;
    int cluster_announce_port;
    int cluster_announce_tls_port;
    int repl_timeout;
    int repl_ping_replica_period;
    int rdb_key_save_delay;
    int key_load_delay;
    int min_replicas_max_lag;
    int watchdog_period;
    int shutdown_timeout;
    int repl_diskless_sync_max_replicas;
    long long socket_mark_id;
    long long max_new_connections_per_cycle;
    long long max_new_tls_connections_per_cycle;
    long long active_defrag_max_scan_fields;
    long long acllog_max_len;
    long long cluster_blacklist_ttl;
    long long cluster_node_timeout;
    long long cluster_ping_interval;
    unsigned long long repl_backlog_size;
    unsigned long long cluster_link_sendbuf_limit;
    unsigned long long active_defrag_ignore_bytes;
    long long repl_backlog_ttl;
    unsigned long long auto_aof_rewrite_min_size;
    long long loading_process_events_interval_bytes;
    /* Hand-parsed ones. */
    int oom_score_adj_values[3];
    int shutdown_on_sigint; /* bits of save, nosave, now, force; 0 default */
    int shutdown_on_sigterm;
} server_compat_options;

/* Registers the compatibility table (server_config_init calls it). */
void server_config_compat_init(void);

#endif
