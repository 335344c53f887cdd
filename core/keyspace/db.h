/* db.h -- the keyspace: numbered databases of keys, expiry, WATCH signals.
 *
 * A key lives in a db_entry (key bytes embedded, value reference, absolute
 * expiry time, LRU/LFU clock). Each database keeps two hash tables over the
 * same entries: `keys` holds every key, `expires` only those with a TTL, so
 * the active expire cycle samples only keys that can expire.
 *
 * Lookups for reading and writing apply lazy expiry: an expired key is
 * deleted on access and never returned.
 *
 * The keyspace knows no client: every modification is announced to the
 * hooks registered with db_add_hook (WATCH, the change counter, and later
 * keyspace notifications, client tracking, blocked-client wake-ups and
 * module keyspace events), once per key it touches. Each announcement
 * carries the changes Valkey counts in server.dirty: one per key set,
 * deleted or given or stripped of a TTL, one for a compound change (SET
 * with a TTL, RENAME, MOVE, COPY, SWAPDB), one per key a flush removes,
 * none for keys that expire or are evicted.
 *
 * Options and counters are the caller's (db_setup): the keyspace reads
 * them live, so CONFIG SET takes effect on the next operation.
 *
 * Threads: main thread only. */
#ifndef KEEL_DB_H
#define KEEL_DB_H

#include <stddef.h>
#include <stdint.h>

#include "common/metrics.h"
#include "ds/hashtable.h"
#include "keyspace/object.h"

typedef struct db_entry {
    kobj *val;
    int64_t expire; /* unix ms, -1 = no expiry */
    uint32_t lru;   /* LRU clock (seconds) or LFU: minutes<<8 | log counter */
    uint32_t keylen;
    char key[];
} db_entry;

typedef struct db {
    int id;
    hashtable *keys;
    hashtable *expires;
    long long avg_ttl; /* estimate, from the active expire cycle */
    size_t expire_cursor;
} db;

#define DB_SET_KEEPTTL (1 << 0)

#define MAXMEMORY_NOEVICTION 0
#define MAXMEMORY_ALLKEYS_LRU 1
#define MAXMEMORY_ALLKEYS_LFU 2
#define MAXMEMORY_ALLKEYS_RANDOM 3
#define MAXMEMORY_VOLATILE_LRU 4
#define MAXMEMORY_VOLATILE_LFU 5
#define MAXMEMORY_VOLATILE_RANDOM 6
#define MAXMEMORY_VOLATILE_TTL 7

/* The keyspace's options (db.c and evict.c): config directives point into
 * this struct. */
/* The encoding thresholds of the aggregate types (Valkey's
 * hash-max-listpack-entries and the like, with their ziplist aliases).
 * CONFIG GET/SET/REWRITE keep them (server/server_config_compat.c) with
 * Valkey 8.0.1's defaults and bounds; NOTHING READS THEM YET: the hash,
 * list, set, sorted set, stream and HyperLogLog types will, when they come,
 * through db_opts()->types. */
typedef struct type_options {
    int list_max_listpack_size;
    int list_compress_depth;
    long long stream_node_max_entries;
    long long hash_max_listpack_entries;
    long long set_max_intset_entries;
    long long set_max_listpack_entries;
    long long set_max_listpack_value;
    long long zset_max_listpack_entries;
    unsigned long long hash_max_listpack_value;
    unsigned long long stream_node_max_bytes;
    unsigned long long zset_max_listpack_value;
    unsigned long long hll_sparse_max_bytes;
} type_options;

typedef struct db_options {
    int databases;                /* start-up only */
    unsigned long long maxmemory; /* 0: no limit */
    int maxmemory_policy;         /* MAXMEMORY_* */
    int maxmemory_samples;
    int lfu_log_factor;
    int lfu_decay_time;       /* minutes */
    int active_expire_effort; /* 1..10 */
    type_options types;       /* not read yet: see type_options */
    /* Bytes the allocator still counts that another thread is about to
     * free (the I/O threads' large buffers): the memory check subtracts
     * them. NULL: none. */
    size_t (*pending_free)(void);
} db_options;

/* 1 when maxmemory-policy is an LFU one. */
static inline int db_policy_is_lfu(int policy) {
    return policy == MAXMEMORY_ALLKEYS_LFU || policy == MAXMEMORY_VOLATILE_LFU;
}

/* The keyspace's counters, each an INFO stats field of the same name:
 * declared once here, the struct and its descriptor table are built from
 * the list (see common/metrics.h). */
#define DB_METRICS(X, T)                                                                           \
    X(T, expired_keys)                                                                             \
    X(T, expired_time_cap_reached_count)                                                           \
    X(T, evicted_keys)                                                                             \
    X(T, keyspace_hits)                                                                            \
    X(T, keyspace_misses)
METRICS_STRUCT(db_metrics, DB_METRICS);
extern const metric_desc db_metric_descs[];
extern const size_t db_metric_descs_count;

/* What a hook hears. For a key event, key/len name the key (valid during
 * the call only); FLUSHED is announced before the keys go, SWAPPED before
 * d and other trade contents. `changes` is the count for server.dirty. */
typedef enum db_event {
    DB_EV_MODIFIED, /* set, overwritten, changed in place, TTL given or removed */
    DB_EV_DELETED,
    DB_EV_EXPIRED,
    DB_EV_EVICTED,
    DB_EV_FLUSHED,
    DB_EV_SWAPPED,
} db_event;

typedef struct db_change {
    db_event event;
    db *d;
    const char *key;
    size_t len;
    db *other; /* DB_EV_SWAPPED: the database swapped with d */
    long long changes;
} db_change;

typedef void (*db_hook_fn)(const db_change *ch, void *priv);

/* Borrows opts and metrics until db_teardown. */
void db_setup(const db_options *opts, db_metrics *metrics);
void db_teardown(void);
db *db_get(int id);
int db_num(void);
const db_options *db_opts(void);
db_metrics *db_stats(void);

/* Hooks run in the order added; a hook must not modify the keyspace, nor
 * add or remove hooks.
 * Returns K_OK, or K_ERR for a hook already added with the same priv. */
int db_add_hook(db_hook_fn fn, void *priv);
void db_remove_hook(db_hook_fn fn, void *priv);

/* Lookup applying lazy expiry; updates the access clock unless `notouch`.
 * Counts hits and misses when `count` is set. */
db_entry *db_lookup(db *d, const char *key, size_t len, int count);
/* Lookup without touching clocks or counting (for TYPE, TTL, scans). */
db_entry *db_lookup_quiet(db *d, const char *key, size_t len);
/* Whether the lookups that follow (db_lookup, db_value_writable) update
 * the access clock: off while a CLIENT NO-TOUCH client's command runs. A
 * value that is replaced still gets a fresh clock, as in Valkey. Returns
 * the previous setting. */
int db_set_access_touch(int on);

/* Sets key to val (takes the caller's reference). Keeps the TTL with
 * DB_SET_KEEPTTL, otherwise clears it. Returns the entry. */
db_entry *db_set(db *d, const char *key, size_t len, kobj *val, int flags);
/* db_set with the TTL when_ms (absolute unix ms, -1: none) in the same
 * change. */
db_entry *db_set_with_expire(db *d, const char *key, size_t len, kobj *val, int64_t when_ms);
/* Stores val under key as a fresh entry (new access clock) with the TTL
 * when_ms (-1: none), replacing the key if it exists: one change (COPY). */
db_entry *db_put(db *d, const char *key, size_t len, kobj *val, int64_t when_ms);
/* Moves e's value, TTL and access clock to key in `to` (which may be
 * `from`), replacing the key there if it exists: one change (RENAME,
 * MOVE). e is freed; returns the new entry. */
db_entry *db_move(db *from, db_entry *e, db *to, const char *key, size_t len);
/* Replaces the value of an existing entry (takes the caller's reference). */
void db_replace_value(db *d, db_entry *e, kobj *val);
/* Makes e's string value writable in place with room for need bytes
 * (copying it only if it is shared or not RAW) and returns it. */
kobj *db_value_writable(db *d, db_entry *e, size_t need);
/* Adds a key that does not exist. Returns NULL if it exists. */
db_entry *db_add(db *d, const char *key, size_t len, kobj *val);
int db_delete(db *d, const char *key, size_t len);
/* db_delete for the evictor: watchers are signalled, no change counted. */
int db_evict(db *d, const char *key, size_t len);

void db_set_expire(db *d, db_entry *e, int64_t when_ms);
/* Removes e's TTL; returns 1 if it had one (and signals WATCH then). */
int db_persist(db *d, db_entry *e);
/* 1 if e is logically expired now. */
int db_is_expired(const db_entry *e);

size_t db_size(const db *d);
size_t db_expires_count(const db *d);
/* Empties one database, returns keys removed (each counts a change). */
size_t db_flush(db *d);
size_t db_flush_all(void);
void db_swap(int a, int b);

/* Announces one change to key made in place by the caller. */
void db_signal_modified(db *d, const char *key, size_t len);

/* Active expiry: runs for at most budget_us. Returns keys expired. */
size_t db_active_expire_cycle(uint64_t budget_us);

/* Rehash/shrink the tables a little (cron). */
void db_cron(void);

/* The clock used for LRU (seconds, 24 bits) and LFU access updates. */
uint32_t db_lru_clock(void);
void db_touch(db_entry *e);
/* Idle seconds since last access (LRU) for OBJECT IDLETIME. */
uint64_t db_idle_seconds(const db_entry *e);
/* LFU counter for OBJECT FREQ, decayed to now. */
unsigned db_lfu_freq(db_entry *e);

/* hashtable callbacks for tables of db_entry. */
extern const hashtable_type db_keys_type;
extern const hashtable_type db_expires_type;

#endif
