/* evict.h -- maxmemory eviction with an eviction pool.
 *
 * Approximated LRU/LFU/TTL as in Valkey: sample maxmemory-samples keys per
 * database, keep the best candidates seen so far in a small pool sorted by
 * score (idle time, inverse frequency or nearness of expiry), and evict the
 * best one; repeat until enough memory is freed. The pool survives across
 * calls so candidates accumulate quality over time.
 *
 * Threads: main thread. */
#ifndef KEEL_EVICT_H
#define KEEL_EVICT_H

#include <stddef.h>
#include <stdint.h>

#include "keyspace/db.h"

#define EVPOOL_SIZE 16

typedef struct evict_candidate {
    uint64_t score; /* higher = better to evict */
    int dbid;
    size_t keylen;
    char *key; /* owned copy; the entry may go away before eviction */
} evict_candidate;

typedef struct evict_pool {
    evict_candidate items[EVPOOL_SIZE];
    int count;
} evict_pool;

/* Score of an entry under policy (exposed for the unit tests). */
uint64_t evict_score(db_entry *e, int policy);
/* Inserts a candidate keeping the pool sorted, best last; a candidate worse
 * than all of a full pool is dropped. */
void evict_pool_insert(evict_pool *pool, uint64_t score, int dbid, const char *key, size_t len);
/* Removes and returns the best candidate's key into out (owned by caller). */
int evict_pool_pop(evict_pool *pool, evict_candidate *out);
void evict_pool_clear(evict_pool *pool);

/* Evicts until estimated `need` bytes are freed. Returns bytes freed (an
 * estimate) or 0 when nothing could be evicted. */
size_t evict_free_memory(size_t need);

/* Runs the memory limit (maxmemory, maxmemory-policy); returns K_OK if a
 * write may proceed. */
int evict_check_maxmemory(void);
/* Makes the next evict_check_maxmemory read the allocator again, as
 * before-sleep does once per event-loop iteration; for callers without an
 * event loop (the fuzz targets, between two reads). */
void evict_invalidate_used_memory(void);
/* 1 if used memory is over maxmemory (0 without a limit), evicting
 * nothing: a module's call refusing deny-oom commands. */
int evict_over_maxmemory(void);

void evict_teardown(void);

#endif
