/* evict.c -- maxmemory eviction (see evict.h). */
#include "keyspace/evict.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/metrics.h"

#include <stdlib.h>
#include <string.h>

static evict_pool pool;
/* Used memory read from the allocator at most once per event-loop
 * iteration: refreshing its statistics costs microseconds, too much per
 * command. */
static size_t used_memory_cache;
static int used_memory_fresh;

static int evict_volatile(int policy) {
    return policy == MAXMEMORY_VOLATILE_LRU || policy == MAXMEMORY_VOLATILE_LFU ||
           policy == MAXMEMORY_VOLATILE_RANDOM || policy == MAXMEMORY_VOLATILE_TTL;
}

uint64_t evict_score(db_entry *e, int policy) {
    switch (policy) {
    case MAXMEMORY_ALLKEYS_LFU:
    case MAXMEMORY_VOLATILE_LFU: return 255 - db_lfu_freq(e);
    case MAXMEMORY_VOLATILE_TTL:
        return UINT64_MAX - (uint64_t)db_entry_expire(e);
    default: return db_idle_seconds(e);
    }
}

void evict_pool_insert(evict_pool *p, uint64_t score, int dbid, const char *key, size_t len) {
    int i = 0;
    while (i < p->count && p->items[i].score < score) i++;
    if (i == 0 && p->count == EVPOOL_SIZE) return; /* worse than everything kept */
    for (int j = 0; j < p->count; j++) /* already a candidate: keep the fresher score */
        if (p->items[j].dbid == dbid && p->items[j].keylen == len && memcmp(p->items[j].key, key, len) == 0)
            return;
    if (p->count == EVPOOL_SIZE) {
        /* Drop the worst (index 0) to make room; the slot shifts down. */
        km_free(p->items[0].key);
        memmove(&p->items[0], &p->items[1], sizeof(evict_candidate) * (size_t)(i - 1));
        i--;
    } else {
        memmove(&p->items[i + 1], &p->items[i], sizeof(evict_candidate) * (size_t)(p->count - i));
        p->count++;
    }
    p->items[i] = (evict_candidate){.score = score, .dbid = dbid, .keylen = len, .key = km_strndup(key, len)};
}

int evict_pool_pop(evict_pool *p, evict_candidate *out) {
    if (p->count == 0) return 0;
    *out = p->items[--p->count];
    return 1;
}

void evict_pool_clear(evict_pool *p) {
    for (int i = 0; i < p->count; i++) km_free(p->items[i].key);
    p->count = 0;
}

void evict_teardown(void) {
    evict_pool_clear(&pool);
}

static size_t evict_entry_size(const db_entry *e) {
    return db_entry_mem_usage(e) + 2 * sizeof(void *); /* with its slots in the two tables */
}

static void evict_fill_pool(int policy) {
    db_entry *sample[64];
    size_t want = db_opts()->maxmemory_samples > 64 ? 64 : (size_t)db_opts()->maxmemory_samples;
    for (int i = 0; i < db_num(); i++) {
        size_t n = db_sample(db_get(i), evict_volatile(policy), sample, want);
        for (size_t j = 0; j < n; j++) {
            size_t len;
            const char *key = db_entry_key(sample[j], &len);
            evict_pool_insert(&pool, evict_score(sample[j], policy), i, key, len);
        }
    }
}

/* Picks and deletes one key; returns the bytes it used, 0 if none. */
static size_t evict_one(int policy) {
    if (policy == MAXMEMORY_ALLKEYS_RANDOM || policy == MAXMEMORY_VOLATILE_RANDOM) {
        /* Visit every database once, starting at a random one, so a key
         * anywhere is found whenever one exists. */
        int start = rand() % db_num();
        for (int n = 0; n < db_num(); n++) {
            db *d = db_get((start + n) % db_num());
            db_entry *e = db_random_entry(d, policy != MAXMEMORY_ALLKEYS_RANDOM);
            if (!e) continue;
            size_t sz = evict_entry_size(e), len;
            const char *key = db_entry_key(e, &len);
            db_evict(d, key, len);
            return sz;
        }
        return 0;
    }
    for (int round = 0; round < 4; round++) {
        evict_fill_pool(policy);
        evict_candidate cand;
        while (evict_pool_pop(&pool, &cand)) {
            db *d = db_get(cand.dbid);
            db_entry *e = db_find(d, cand.key, cand.keylen);
            km_free(cand.key);
            if (!e || (evict_volatile(policy) && db_entry_expire(e) == -1)) continue; /* stale */
            size_t sz = evict_entry_size(e), len;
            const char *key = db_entry_key(e, &len);
            db_evict(d, key, len);
            return sz;
        }
    }
    return 0;
}

size_t evict_free_memory(size_t need) {
    size_t freed = 0;
    while (freed < need) {
        size_t n = evict_one(db_opts()->maxmemory_policy);
        if (n == 0) break;
        freed += n;
        db_stats()->evicted_keys++;
    }
    return freed;
}

static void evict_refresh_used_memory(void) {
    if (used_memory_fresh) return;
    /* Large buffers an I/O thread is about to free, and values on the
     * lazy-free thread's queue, still count in the allocator's total:
     * evicting for them again would evict too much. */
    size_t used = km_used_memory(), pending = db_pending_free();
    used_memory_cache = used > pending ? used - pending : 0;
    used_memory_fresh = 1;
}

int evict_over_maxmemory(void) {
    const db_options *o = db_opts();
    if (!o->maxmemory) return 0;
    evict_refresh_used_memory();
    return used_memory_cache > o->maxmemory;
}

int evict_check_maxmemory(void) {
    const db_options *o = db_opts();
    /* Deferred removals (CLIENT PAUSE): writes are held anyway, and those
     * that run (a transaction's) may use the memory. */
    if (!o->maxmemory || db_removals_deferred()) return K_OK;
    evict_refresh_used_memory();
    if (used_memory_cache <= o->maxmemory) return K_OK;
    if (o->maxmemory_policy == MAXMEMORY_NOEVICTION) return K_ERR;
    size_t need = used_memory_cache - o->maxmemory;
    size_t freed = evict_free_memory(need);
    used_memory_cache = freed > used_memory_cache ? 0 : used_memory_cache - freed;
    return freed >= need ? K_OK : K_ERR;
}

void evict_invalidate_used_memory(void) {
    used_memory_fresh = 0;
}
