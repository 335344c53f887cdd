/* db.h -- the keyspace: numbered databases of keys, expiry, WATCH signals.
 *
 * A key is one block (db_entry): a header, the key bytes, the value's bytes
 * when it is a short string, and the expiry time only when the key has
 * one. Longer strings and other types are objects of their own (kobj) that
 * the block points at. Each database keeps two hash tables over the same
 * blocks: `keys` holds every key, `expires` only those with a TTL, so the
 * active expire cycle samples only keys that can expire.
 *
 * A block may move when its value or TTL changes (db_set_expire,
 * db_replace_*, db_string_resize): those return the entry to use from then
 * on, and a db_entry pointer is valid only until the next call that
 * modifies the keyspace. Bytes of an embedded value are never referenced
 * by a reply (replies copy them); an object value is reference counted, so
 * a reply may hold it after its key was overwritten or deleted.
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
 * none for keys that expire or are evicted. The collection commands count
 * per element as Valkey's do (RPUSH of three counts three, LMOVE one): they
 * pass their count to db_add, db_replace_value and db_signal_modified.
 *
 * Options and counters are the caller's (db_setup): the keyspace reads
 * them live, so CONFIG SET takes effect on the next operation.
 *
 * Threads: main thread only. */
#ifndef KEEL_DB_H
#define KEEL_DB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/common.h"
#include "common/metrics.h"
#include "ds/hashtable.h"
#include "keyspace/kvstore.h"
#include "keyspace/object.h"

/* A key's block. The 8-byte header is followed by, in order:
 *   kobj *val          unless the value is embedded (DB_ENTRY_EMBED)
 *   uint32_t keylen    only for keys of DB_KEYLEN_LONG bytes or more
 *   the key bytes      (no terminating NUL)
 *   the value bytes    when embedded (vlen of them, no NUL)
 *   int64_t expire     only with DB_ENTRY_EXPIRE, unaligned, at the end
 * The expiry comes last so that giving a key a TTL appends 8 bytes, which
 * often fit the slack of the block's size class, and never moves the key
 * or the value. For a 16-byte key and value the block is 40 bytes (48
 * with a TTL): one 48-byte jemalloc class either way. */
typedef struct db_entry {
    uint32_t lru : 24;    /* LRU clock (seconds) or LFU: minutes<<8 | log counter */
    uint32_t flags : 8;   /* DB_ENTRY_* */
    uint32_t keylen : 24; /* DB_KEYLEN_LONG: the uint32_t before the key holds it */
    uint32_t vlen : 8;    /* embedded value bytes */
    unsigned char data[];
} db_entry;

#define DB_ENTRY_EMBED 0x01   /* the value's bytes are in the block */
#define DB_ENTRY_INT 0x02     /* embedded bytes are a canonical integer ("int") */
#define DB_ENTRY_RAWNAME 0x04 /* embedded, but OBJECT ENCODING says "raw" as Valkey would */
#define DB_ENTRY_EXPIRE 0x08  /* the block ends with the expiry time */
#define DB_ENTRY_LONGKEY 0x10 /* the key's length is stored before it */
#define DB_ENTRY_PRIVATE 0x20 /* an integer Valkey would hold unshared (COPY's) */

#define DB_KEYLEN_LONG 0xffffffu
/* Strings up to this length are embedded in the key's block. */
#define DB_EMBED_MAX 255
/* Valkey's embstr limit: longer embedded strings are reported as "raw". */
#define DB_EMBSTR_NAME_MAX 44

static inline size_t db_entry_key_offset(const db_entry *e) {
    return (e->flags & DB_ENTRY_EMBED ? 0 : sizeof(kobj *)) +
           (e->flags & DB_ENTRY_LONGKEY ? sizeof(uint32_t) : 0);
}

static inline size_t db_entry_keylen(const db_entry *e) {
    if (K_LIKELY(!(e->flags & DB_ENTRY_LONGKEY))) return e->keylen;
    uint32_t n;
    memcpy(&n, e->data + (e->flags & DB_ENTRY_EMBED ? 0 : sizeof(kobj *)), sizeof(n));
    return n;
}

/* The key's bytes (not NUL-terminated). */
static inline const char *db_entry_key(const db_entry *e, size_t *len) {
    *len = db_entry_keylen(e);
    return (const char *)e->data + db_entry_key_offset(e);
}

/* The value object, or NULL when the value is embedded in the block. */
static inline kobj *db_entry_obj(const db_entry *e) {
    if (e->flags & DB_ENTRY_EMBED) return NULL;
    kobj *o;
    memcpy(&o, e->data, sizeof(o));
    return o;
}

/* The block forgets its value object, which the lazy-free thread has freed
 * or handed back: freeing the block then leaves the value alone. */
static inline void db_entry_forget_obj(db_entry *e) {
    kobj *none = NULL;
    memcpy(e->data, &none, sizeof(none));
}

/* OBJ_STRING or the value object's type. */
static inline int db_entry_type(const db_entry *e) {
    return e->flags & DB_ENTRY_EMBED ? OBJ_STRING : db_entry_obj(e)->type;
}

/* The bytes of a string value, embedded or not; NULL for another type.
 * Valid until the keyspace is next modified. */
static inline const char *db_entry_str(const db_entry *e, size_t *len) {
    if (e->flags & DB_ENTRY_EMBED) {
        *len = e->vlen;
        return (const char *)e->data + db_entry_key_offset(e) + db_entry_keylen(e);
    }
    kobj *o = db_entry_obj(e);
    if (o->type != OBJ_STRING) return NULL;
    return obj_str(o, NULL, len); /* stored strings out of the block are RAW */
}

/* The absolute expiry time in unix ms, -1 when the key has none. */
static inline int64_t db_entry_expire(const db_entry *e) {
    if (!(e->flags & DB_ENTRY_EXPIRE)) return -1;
    size_t klen = db_entry_keylen(e);
    const unsigned char *end =
        e->data + db_entry_key_offset(e) + klen + (e->flags & DB_ENTRY_EMBED ? e->vlen : 0);
    int64_t t;
    memcpy(&t, end, sizeof(t));
    return t;
}

/* The length of a string value (0 for another type). */
size_t db_entry_strlen(const db_entry *e);
/* 1 and *out if the value is a string holding a valid 64-bit integer. */
int db_entry_get_int(const db_entry *e, int64_t *out);
/* A new reference to an object holding the value (an embedded value gets
 * an object made for it): for callers that need a kobj. */
kobj *db_entry_value_obj(const db_entry *e);
/* A new object with a copy of the value (COPY), or NULL when its type
 * cannot be copied. */
kobj *db_entry_value_copy(const db_entry *e);
/* OBJECT ENCODING's and TYPE's answers. */
const char *db_entry_encoding(const db_entry *e);
const char *db_entry_type_name(const db_entry *e);
/* OBJECT REFCOUNT's answer: an embedded value has one owner, except that
 * the integers Valkey shares (0..OBJ_SHARED_INTEGERS-1) report the shared
 * refcount, as they do there. */
long long db_entry_refcount(const db_entry *e);
/* Bytes the key costs: its block and what its value owns (MEMORY USAGE),
 * an aggregate's elements estimated from OBJ_MEM_SAMPLES of them. */
size_t db_entry_mem_usage(const db_entry *e);
/* The same from `samples` elements (OBJ_MEM_ALL_SAMPLES: all). */
size_t db_entry_mem_usage_sampled(const db_entry *e, size_t samples);

/* A database: its keys in per-slot tables (one table in standalone mode,
 * 16384 in the cluster layout; see keyspace/kvstore.h), and the keys with a
 * TTL in a second set laid out the same way. */
typedef struct db {
    int id;
    kvstore *keys;
    kvstore *expires;
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

/* Valkey's lazyfree-lazy-* directives: which deletions hand a value too
 * costly to free inline to the lazy-free thread (keyspace/lazyfree.h).
 * UNLINK and FLUSHALL/FLUSHDB ASYNC always do. */
typedef struct lazyfree_options {
    int eviction;   /* lazyfree-lazy-eviction: keys the evictor removes */
    int expire;     /* lazyfree-lazy-expire: keys that expire */
    int server_del; /* lazyfree-lazy-server-del: overwrites, RENAME's target, server deletes */
    int user_del;   /* lazyfree-lazy-user-del: DEL */
    int user_flush; /* lazyfree-lazy-user-flush: FLUSHALL/FLUSHDB without SYNC or ASYNC */
} lazyfree_options;

typedef struct db_options {
    int databases;                /* start-up only */
    /* log2 of the slots per database, start-up only: 0 (standalone, one
     * table) or KVSTORE_CLUSTER_SLOT_BITS (the cluster layout; cluster
     * mode itself is not built yet, the unit tests run the keyspace on it). */
    int slot_bits;
    unsigned long long maxmemory; /* 0: no limit */
    int maxmemory_policy;         /* MAXMEMORY_* */
    int maxmemory_samples;
    int lfu_log_factor;
    int lfu_decay_time;       /* minutes */
    int active_expire_effort; /* 1..10 */
    type_options types;       /* not read yet: see type_options */
    lazyfree_options lazyfree;
    /* Bytes the allocator still counts that another thread is about to
     * free (the I/O threads' large buffers): the memory check subtracts
     * them. NULL: none. */
    size_t (*pending_free)(void);
} db_options;

/* Bytes the allocator still counts that are about to be freed: the
 * caller's pending_free and the lazy-free thread's queue. */
size_t db_pending_free(void);

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
    /* Changes counted for server.dirty that no reader of the key sees (a
     * stream's consumer-group bookkeeping): WATCH, client tracking and
     * blocked clients ignore it, as Valkey, which counts these without
     * signalModifiedKey. */
    DB_EV_COUNTED,
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
/* Whether the lookups that follow (db_lookup, db_string_resize) update
 * the access clock: off while a CLIENT NO-TOUCH client's command runs. A
 * value that is replaced still gets a fresh clock, as in Valkey. Returns
 * the previous setting. */
int db_set_access_touch(int on);
/* While on (CLIENT PAUSE: the session layer sets it), a logically expired
 * key reads as missing but stays stored: neither lookups nor the active
 * expire cycle remove it, and the evictor removes nothing. A write to such
 * a key still replaces it. */
void db_defer_removals(int on);
int db_removals_deferred(void);

/* The writes. Each takes the caller's reference to val; a short string
 * value is copied into the key's block and the object released. The
 * returned entry is the key's (its block may have moved). */

/* Sets key to val. Keeps the TTL with DB_SET_KEEPTTL, otherwise clears
 * it. */
db_entry *db_set(db *d, const char *key, size_t len, kobj *val, int flags);
/* db_set of the bytes s[0..slen) (no object needed: SET's path), with the
 * TTL when_ms (absolute unix ms; -1: none) unless DB_SET_KEEPTTL. One
 * change. */
db_entry *db_set_str(db *d, const char *key, size_t len, const char *s, size_t slen, int flags,
                     int64_t when_ms);
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
/* Replaces the value of an existing entry, keeping its TTL, counting
 * `changes` (as db_add). */
db_entry *db_replace_value(db *d, db_entry *e, kobj *val, long long changes);
/* db_replace_value with the bytes s[0..slen) (INCR and friends). */
db_entry *db_replace_str(db *d, db_entry *e, const char *s, size_t slen);
/* Makes *e's string value newlen bytes long and returns its bytes for
 * the caller to write: the first min(old, newlen) are kept, the rest are
 * undefined. A short value grows in the block while it fits and moves to
 * an object of its own when it no longer does; an object a reply still
 * references is copied first. Updates *e (the block may move) and
 * announces the change. The bytes are valid until the next keyspace
 * call. (APPEND, SETRANGE.) */
char *db_string_resize(db *d, db_entry **e, size_t newlen);
/* Adds a key that does not exist, counting `changes` (1 for a plain
 * value; a collection command counts what it put in, 0 when another key's
 * announcement counts the command, as for LMOVE's destination: its source
 * counts the move). Returns NULL if it exists. */
db_entry *db_add(db *d, const char *key, size_t len, kobj *val, long long changes);
/* A server-side delete (lazy under lazyfree-lazy-server-del). */
int db_delete(db *d, const char *key, size_t len);
/* The user's DEL (lazy under lazyfree-lazy-user-del) or, with `unlink`,
 * UNLINK (always lazy). */
int db_delete_user(db *d, const char *key, size_t len, int unlink);
/* db_delete for the evictor: watchers are signalled, no change counted. */
int db_evict(db *d, const char *key, size_t len);

/* Gives e the TTL when_ms; returns the entry (the block may grow and
 * move). */
db_entry *db_set_expire(db *d, db_entry *e, int64_t when_ms);
/* Removes e's TTL; returns 1 if it had one (and signals WATCH then). The
 * block stays where it is. */
int db_persist(db *d, db_entry *e);
/* 1 if e is logically expired now. */
int db_is_expired(const db_entry *e);

/* The entry of key as stored: no lazy expiry, no clock, no counting
 * (WATCH, MEMORY USAGE, the evictor's second look). */
db_entry *db_find(db *d, const char *key, size_t len);
/* One random entry (it may be logically expired), or NULL when d is
 * empty; from the keys with a TTL only when `volatile_only`. */
db_entry *db_random_entry(db *d, int volatile_only);
/* Up to count entries sampled near a random place (eviction). */
size_t db_sample(db *d, int volatile_only, db_entry **out, size_t count);
/* SCAN: one step over d's keys (see hashtable_scan for the guarantees);
 * the callback gets each db_entry and may delete it. */
size_t db_scan(db *d, size_t cursor, hashtable_scan_fn fn, void *priv);
/* Iterator over every key of d. Unsafe: nothing may change the keyspace
 * until db_iter_reset. */
typedef struct db_iter {
    kvstore_iter it;
} db_iter;
void db_iter_init(db_iter *it, db *d);
int db_iter_next(db_iter *it, db_entry **e);
void db_iter_reset(db_iter *it);

/* The tables' own bytes (MEMORY STATS overhead), and whether one is being
 * rehashed. */
size_t db_keys_mem_usage(const db *d);
size_t db_expires_mem_usage(const db *d);
int db_tables_rehashing(const db *d);

size_t db_size(const db *d);
size_t db_expires_count(const db *d);
/* Empties one database, returns keys removed (each counts a change). */
size_t db_flush(db *d);
size_t db_flush_all(void);
/* db_flush, the keys freed on the lazy-free thread: the database gets new
 * empty tables at once and the old ones go to the thread. */
size_t db_flush_async(db *d);
size_t db_flush_all_async(void);
void db_swap(int a, int b);

/* Announces a change to key made in place by the caller, counting
 * `changes` (1 for a plain value, the elements added, removed or updated
 * for a collection; 0 announces without counting). A collection emptied
 * by a command is deleted: db_delete counts one, so the command announces
 * the rest of its count here first. */
void db_signal_modified(db *d, const char *key, size_t len, long long changes);
/* Counts `changes` made to key's value that readers of the key do not see
 * (DB_EV_COUNTED): a consumer group's cursor or pending entries. */
void db_count_changes(db *d, const char *key, size_t len, long long changes);

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

#endif
