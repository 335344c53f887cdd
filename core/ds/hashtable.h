/* hashtable.h -- the keyspace's hash table: 64-byte cache-line buckets.
 *
 * Design (after Valkey 8.1's hashtable, written anew): a bucket is exactly one
 * cache line holding up to 7 entry pointers, a presence bitmap, and one byte
 * of secondary hash per entry, so a lookup touches one line and compares at
 * most one or two keys. A full bucket chains a child bucket. Two tables exist
 * while resizing; every operation moves a bucket from the old table to the new
 * one (incremental rehash), and the cron may move more with
 * hashtable_rehash_micros().
 *
 * Entries are opaque pointers owned by the caller; the table learns an
 * entry's key through the type's entry_key callback. Entries must be at least
 * 2-byte aligned (heap pointers are).
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
} hashtable_type;

/* The keyed hash (SipHash-1-2) used for buckets; the seed is process-wide. */
void hashtable_set_seed(const uint8_t seed[16]);
uint64_t hashtable_hash(const void *key, size_t len);

hashtable *hashtable_create(const hashtable_type *type);
/* Frees the table, calling entry_free on every entry. */
void hashtable_release(hashtable *ht);
/* Removes all entries (entry_free on each) and shrinks to the empty state. */
void hashtable_empty(hashtable *ht);

size_t hashtable_size(const hashtable *ht);
/* Bytes used by the table itself (buckets), not by entries. */
size_t hashtable_mem_usage(const hashtable *ht);
int hashtable_is_rehashing(const hashtable *ht);

/* Returns the entry whose key equals key, or NULL. */
void *hashtable_find(hashtable *ht, const void *key, size_t len);

/* Returns the address of the slot holding the entry with this key, or NULL.
 * The caller may store a different entry with the SAME key through it (used
 * to overwrite a value without a second lookup). Valid until the next call
 * that modifies the table. */
void **hashtable_find_ref(hashtable *ht, const void *key, size_t len);

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

/* Stateless cursor scan with Redis SCAN guarantees: an entry present for the
 * whole scan is returned at least once; entries may be returned twice. Call
 * with cursor 0 first; the returned cursor is 0 when the scan is complete.
 * The callback may delete the entry it is given (rehashing and shrinking are
 * paused while a bucket chain is being visited). */
typedef void (*hashtable_scan_fn)(void *priv, void *entry);
size_t hashtable_scan(hashtable *ht, size_t cursor, hashtable_scan_fn fn, void *priv);

/* Iterator over every entry. A safe iterator pauses rehashing so entries may
 * be deleted while iterating (only the one just returned); an unsafe one
 * forbids any modification and is faster. */
typedef struct hashtable_iter {
    hashtable *ht;
    void *bucket;
    size_t index;
    int table;
    int pos;
    int safe;
    uint64_t fingerprint;
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

#endif
