/* hashtable.h -- the keyspace's hash table: open addressing over 64-byte
 * cache-line buckets.
 *
 * Design: a bucket is one cache line of 8 slots; a slot holds an entry
 * pointer in its low 48 bits and a 16-bit tag (4 bits of displacement from
 * the entry's home bucket, 12 bits of secondary hash) on top. Entries are
 * placed by bucketized linear probing at most 15 buckets past their home and
 * removed by backward shifting (no tombstones), so a lookup touches one cache
 * line, rarely two, and normally compares one key. The table has any number
 * of buckets (no powers of two), grows at 90% fill to the next allocator
 * size class (72-79% full) and uses every byte of its allocation: about 9-11
 * bytes per entry; it shrinks below 25% fill. Two tables exist
 * while resizing; every operation moves one home group from the old table to
 * the new one (incremental rehash), and the cron may move more with
 * hashtable_rehash_micros(). See hashtable.c for the details.
 *
 * Entries are opaque non-NULL pointers owned by the caller; the table learns
 * an entry's key through the type's entry_key callback. Entry pointers must
 * fit in 48 bits, as user-space pointers do on x86-64 and aarch64 with 48-bit
 * virtual addresses (checked with an assert when stored); 57-bit (5-level
 * paging) addresses are only handed out to processes that ask for them.
 *
 * Threads: a table is not thread safe. All calls for one table come from one
 * thread at a time. */
#ifndef KEEL_HASHTABLE_H
#define KEEL_HASHTABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct hashtable hashtable;

typedef struct hashtable_type {
    /* Required: the key bytes of an entry. */
    const void *(*entry_key)(const void *entry, size_t *len);
    /* Optional: called on entries removed by hashtable_delete() and on every
     * entry left when the table is released or emptied. */
    void (*entry_free)(void *entry);
    /* Optional: the bytes a growth may allocate now (the room under a
     * memory limit; SIZE_MAX: no limit). A table that would double past it
     * grows by one allocator size class instead. Called only when a table
     * grows. */
    size_t (*grow_budget)(void);
    /* Optional: the fill (percent, 1-89) an add that passes 90% grows the
     * table to; 0: 45, a doubling. Doubling moves each entry about once on
     * a bulk load, and suits tables the cron compacts once they stop
     * growing (the keyspace's). A table nothing compacts (a collection's)
     * asks for more, HASHTABLE_GROW_FILL_TIGHT: growths of 1.5x, about one more move per
     * entry, and the table stays 60-90% full instead of 45-90%. */
    unsigned grow_fill;
} hashtable_type;

/* grow_fill for tables nothing compacts (the aggregate types'). */
#define HASHTABLE_GROW_FILL_TIGHT 60

/* The keyed hash (SipHash-1-2) used for buckets; the seed is process-wide. */
void hashtable_set_seed(const uint8_t seed[16]);
uint64_t hashtable_hash(const void *key, size_t len);

hashtable *hashtable_create(const hashtable_type *type);
/* Frees the table, calling entry_free on every entry. */
void hashtable_release(hashtable *ht);
/* Removes all entries (entry_free on each) and shrinks to the empty state. */
void hashtable_empty(hashtable *ht);

size_t hashtable_size(const hashtable *ht);
/* Bytes used by the table itself (the struct and its bucket arrays as
 * allocated), not by entries. */
size_t hashtable_mem_usage(const hashtable *ht);
/* Buckets allocated (home and tail buckets of both tables while rehashing). */
size_t hashtable_buckets(const hashtable *ht);
int hashtable_is_rehashing(const hashtable *ht);

/* Returns the entry whose key equals key, or NULL. */
void *hashtable_find(hashtable *ht, const void *key, size_t len);

/* Where an entry is stored, from hashtable_find_pos(). */
typedef struct hashtable_pos {
    void *slot;
    int table;
} hashtable_pos;

/* Finds key like hashtable_find and fills *pos with where it is; the
 * position is valid until the next call that modifies the table. */
void *hashtable_find_pos(hashtable *ht, const void *key, size_t len, hashtable_pos *pos);
/* Stores entry (which must have the same key as the entry at pos) at pos,
 * keeping its tag: overwrites a value without a second lookup. */
void hashtable_store_at(hashtable *ht, const hashtable_pos *pos, void *entry);

/* Adds entry. Returns 1 on success, 0 if an entry with the same key exists
 * (the table is unchanged then and *existing, if not NULL, is set to it). */
int hashtable_add(hashtable *ht, void *entry, void **existing);

/* Removes the entry with this key. Returns 1 if found. If popped is not NULL
 * the entry is handed back to the caller and entry_free is NOT called;
 * otherwise entry_free is called (if set). */
int hashtable_delete(hashtable *ht, const void *key, size_t len, void **popped);

/* Fills out with up to count entries found near a random position, for
 * eviction and expiry sampling; entries may repeat when the table is small.
 * Returns the number written (0 only when the table is empty). */
size_t hashtable_sample(hashtable *ht, void **out, size_t count);
/* One uniformly random-ish entry, or NULL when empty. */
void *hashtable_random(hashtable *ht);
/* One entry, every entry equally likely (SRANDMEMBER, SPOP: their
 * distribution is tested), or NULL when empty; a few random probes. */
void *hashtable_fair_random(hashtable *ht);

/* Stateless cursor scan with Redis SCAN guarantees: an entry present for the
 * whole scan is returned at least once; entries may be returned twice. Call
 * with cursor 0 first; the returned cursor is 0 when the scan is complete.
 * The callback may delete the entry it is given (rehashing and shrinking are
 * paused during a call). The cursor is a position in the hash space below
 * 2^32; larger cursors end the scan (0). */
typedef void (*hashtable_scan_fn)(void *priv, void *entry);
size_t hashtable_scan(hashtable *ht, size_t cursor, hashtable_scan_fn fn, void *priv);

/* Iterator over every entry. A safe iterator pauses rehashing so entries may
 * be deleted while iterating (only the one just returned); an unsafe one
 * forbids any modification and is faster. */
typedef struct hashtable_iter {
    hashtable *ht;
    void *last; /* the entry returned last (a safe iterator's user may delete it) */
    size_t index;
    uint64_t fingerprint;
    uint64_t epoch;
    int table;
    int slot;
    int safe;
} hashtable_iter;
void hashtable_iter_init(hashtable_iter *it, hashtable *ht, int safe);
/* Returns 1 and sets *entry, or 0 when done. */
int hashtable_iter_next(hashtable_iter *it, void **entry);
void hashtable_iter_reset(hashtable_iter *it);

/* Rehashes for at most about `us` microseconds. Returns 1 if rehashing is
 * still in progress. For the cron. */
int hashtable_rehash_micros(hashtable *ht, uint64_t us);

/* Shrinks the table if it is oversized for its entry count (the cron calls
 * this; deletions also shrink automatically unless paused). */
void hashtable_shrink_if_needed(hashtable *ht);
/* For the cron: a table that grew (adds double it, so a load moves each
 * entry about once) and then stopped growing for a second is resized to
 * its tight size (80% full, 9-11 bytes per entry), incrementally. The new
 * array is held beside the old one while entries move: nothing is done
 * when it would take more than `budget` bytes (the room left under
 * maxmemory; SIZE_MAX for no limit). */
void hashtable_compact_if_idle(hashtable *ht, size_t budget);
/* The same without waiting for the table to be idle (tests, tools). */
void hashtable_compact(hashtable *ht, size_t budget);

#endif
