/* memory.h -- the memory accounting that MEMORY STATS and DOCTOR report and
 * INFO memory prints: what the allocator holds, split into the server's
 * overhead (start-up allocations, clients, the keyspace's tables) and the
 * dataset, with the allocator's and the process's fragmentation figures.
 * The fields are Valkey's (MEMORY STATS names them); replication, AOF,
 * cluster links and scripting have no memory in Keel and read 0. */
#ifndef KEEL_MEMORY_H
#define KEEL_MEMORY_H

#include <stddef.h>

#include "common/kmem.h"

typedef struct mem_overhead_db {
    int id;
    size_t ht_main;    /* the key table and the entries' headers */
    size_t ht_expires; /* the table of keys with a TTL */
} mem_overhead_db;

typedef struct mem_overhead {
    size_t total_allocated;
    size_t startup_allocated;
    size_t peak_allocated;
    size_t process_rss;
    km_allocator_stats alloc;
    size_t repl_backlog;
    size_t clients_replicas;
    size_t clients_normal;
    size_t cluster_links;
    size_t aof_buffer;
    size_t lua_caches;
    size_t functions_caches;
    size_t overhead_db_hashtable_lut;
    size_t overhead_db_hashtable_rehashing;
    size_t db_dict_rehashing_count;
    size_t overhead_total;
    size_t dataset;
    size_t total_keys;
    size_t bytes_per_key;
    double dataset_perc;
    double peak_perc;
    double total_frag; /* process RSS / used memory */
    long long total_frag_bytes;
    double allocator_frag; /* (allocated + free small regions) / allocated */
    long long allocator_frag_bytes;
    double allocator_rss; /* allocator resident / active */
    long long allocator_rss_bytes;
    double rss_extra; /* process RSS / allocator resident */
    long long rss_extra_bytes;
    int num_dbs; /* the databases holding keys */
    mem_overhead_db *db;
} mem_overhead;

/* Fills mh (free it with mem_overhead_release). Main thread; it walks the
 * clients and the databases' tables, not the keys. */
void mem_overhead_get(mem_overhead *mh);
void mem_overhead_release(mem_overhead *mh);

#endif
