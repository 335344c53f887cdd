/* kvstore.h -- a set of hash tables indexed by hash slot.
 *
 * Owns: the tables (one per slot, created on demand and, with
 * KVSTORE_FREE_EMPTY_TABLES, freed when they become empty), a binary indexed
 * tree of per-slot entry counts, the queue of tables that are rehashing, and
 * the cron's shrink cursor. It does NOT own the entries: as with a hashtable,
 * the type's entry_key gives an entry's key and entry_free (if set) is called
 * on entries deleted without `popped`, emptied or released.
 *
 * Layout. slot_bits 0 is the standalone layout: one table (slot 0). slot_bits
 * 14 is the cluster layout: SLOT_COUNT (16384) tables and the caller routes a
 * key with kvstore_slot() (slot_of_key: CRC16 and {hash tags}). Any value in
 * 0..16 works; slots are then the low slot_bits bits of slot_of_key().
 *
 * Standalone tables: with slot_bits 0 the one table, once created, stays
 * allocated until kvstore_release() even with KVSTORE_FREE_EMPTY_TABLES (an
 * empty hashtable holds no buckets, only its small header, and a database
 * that keeps going between 0 and 1 key should not allocate every time).
 *
 * Per-key calls take the slot, which the caller computes once per key with
 * kvstore_slot(); passing another slot than the key's is a caller bug (the
 * key would be looked for in the wrong table).
 *
 * Counts. With slot_bits > 0 the store keeps keys-per-slot in a fenwick tree,
 * so a random entry is drawn fairly across slots (each entry equally likely,
 * not each slot), and SCAN, the iterator and the shrink cursor jump to the
 * next non-empty slot in O(log slots) without visiting empty ones. Only
 * kvstore_add and kvstore_delete change counts: kvstore_table() hands out a
 * slot's table for lookups and for storing a different entry with the SAME
 * key only; adding or deleting through it would bypass the counts (and the
 * freeing of empty tables and the rehash queue).
 *
 * SCAN cursors: (table cursor << slot_bits) | slot, as Valkey lays them out.
 * A scan visits slots in increasing order; a slot's table is scanned with the
 * hashtable's guarantees (an entry present for the whole scan is returned at
 * least once), so this holds across slots, rehashes and tables freed and
 * created between calls.
 *
 * Deleting during a scan or safe iteration: the scan callback may delete the
 * entry it is given (kvstore_delete, same or other slot), and a safe
 * iterator's user the entry just returned; a table emptied this way is freed
 * when the scan step returns or the iterator leaves the slot, never while it
 * is being walked.
 *
 * Threads: main thread only; nothing here is thread safe. */
#ifndef KEEL_KVSTORE_H
#define KEEL_KVSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "ds/hashtable.h"

/* Tables are created by the first add to their slot (otherwise all are
 * created by kvstore_create). */
#define KVSTORE_ALLOCATE_TABLES_ON_DEMAND (1 << 0)
/* A table left empty by a delete is freed (slot_bits > 0 only, see above). */
#define KVSTORE_FREE_EMPTY_TABLES (1 << 1)

/* slot_bits for the cluster layout: one table per hash slot. */
#define KVSTORE_CLUSTER_SLOT_BITS 14

typedef struct kvstore kvstore;

/* A store of 2^slot_bits tables of this type (the type must outlive the
 * store). NULL if slot_bits is outside 0..16. */
kvstore *kvstore_create(const hashtable_type *type, int slot_bits, int flags);
/* Frees every table (entry_free on every entry) and the store. */
void kvstore_release(kvstore *kvs);

/* Called by kvstore_empty on each entry before the type's entry_free; it
 * must not modify the store. */
typedef void (*kvstore_entry_fn)(void *priv, void *entry);
/* Removes every entry of every table (fn, if not NULL, then entry_free on
 * each); tables are freed under KVSTORE_FREE_EMPTY_TABLES, emptied
 * otherwise. Not while a scan step or safe iterator is running. */
void kvstore_empty(kvstore *kvs, kvstore_entry_fn fn, void *priv);

/* 2^slot_bits. */
int kvstore_num_slots(const kvstore *kvs);
/* What the inline lookups below read; the rest of the store is private. */
typedef struct kvstore_head {
    int slot_bits;
    int num_slots;
    hashtable **tables; /* num_slots of them, NULL where a slot has none */
} kvstore_head;

int kvstore_slot_of_key(const kvstore *kvs, const void *key, size_t len);

/* The slot of a key: 0 with slot_bits 0, slot_of_key() otherwise. Inline:
 * every keyspace lookup starts here. */
static inline int kvstore_slot(const kvstore *kvs, const void *key, size_t len) {
    return ((const kvstore_head *)kvs)->slot_bits ? kvstore_slot_of_key(kvs, key, len) : 0;
}

/* Entries in all tables; in one slot's table. */
size_t kvstore_size(const kvstore *kvs);
size_t kvstore_slot_size(const kvstore *kvs, int slot);
/* Slots holding at least one entry; tables allocated. */
int kvstore_non_empty_slots(const kvstore *kvs);
int kvstore_allocated_tables(const kvstore *kvs);
/* The first non-empty slot >= slot, or -1 when there is none. */
int kvstore_next_slot(const kvstore *kvs, int slot);

/* Bytes used by the store's own arrays, tree and queue plus every table's
 * buckets, not by entries (MEMORY STATS' hash table overhead). Visits the
 * table array: O(slots). */
size_t kvstore_mem_usage(const kvstore *kvs);
/* Tables still rehashing (drops finished ones from the queue first); and
 * whether there is any. */
size_t kvstore_rehashing_count(kvstore *kvs);
int kvstore_is_rehashing(kvstore *kvs);

/* The slot's table, or NULL when it has none. For lookups and same-key
 * replacement only (see Counts above). Valid until the next add, delete,
 * scan, iterator step or cron call on the store. */
static inline hashtable *kvstore_table(kvstore *kvs, int slot) {
    return ((kvstore_head *)kvs)->tables[slot];
}

/* The entry with this key in the slot's table, or NULL. */
static inline void *kvstore_find(kvstore *kvs, int slot, const void *key, size_t len) {
    hashtable *ht = kvstore_table(kvs, slot);
    return ht ? hashtable_find(ht, key, len) : NULL;
}
/* Adds entry to the slot's table (creating it if needed). Returns 1, or 0 if
 * an entry with the same key exists (*existing, if not NULL, is set to it). */
int kvstore_add(kvstore *kvs, int slot, void *entry, void **existing);
/* Removes the entry with this key from the slot's table. Returns 1 if found.
 * With popped the entry is handed back and entry_free is not called. */
int kvstore_delete(kvstore *kvs, int slot, const void *key, size_t len, void **popped);

/* A slot drawn with probability proportional to its entry count, or -1
 * when the store is empty. */
int kvstore_fair_slot(kvstore *kvs);
/* A random entry of a fairly drawn slot, or NULL when empty. */
void *kvstore_random_entry(kvstore *kvs);
/* Fills out with up to count entries sampled from one fairly drawn slot's
 * table (for eviction and expiry sampling; entries may repeat). Returns the
 * number written, 0 only when the store is empty. */
size_t kvstore_sample(kvstore *kvs, void **out, size_t count);

/* One SCAN step: scans one step of the cursor's slot's table with fn; when
 * that table is done, the returned cursor names the next non-empty slot
 * (table cursor 0); 0 when the last slot is done. Start with cursor 0. A
 * cursor naming an empty slot (its table emptied since) scans the next
 * non-empty slot from its start. fn may delete the entry it is given. */
size_t kvstore_scan(kvstore *kvs, size_t cursor, hashtable_scan_fn fn, void *priv);
/* The same restricted to one slot: the cursor is that table's own cursor
 * (no slot bits); returns 0 when the slot is done or empty. */
size_t kvstore_scan_slot(kvstore *kvs, int slot, size_t cursor, hashtable_scan_fn fn, void *priv);
/* The slot a kvstore_scan cursor names. */
int kvstore_cursor_slot(const kvstore *kvs, size_t cursor);

/* Iterator over every entry of every table, slot by slot. A safe iterator
 * lets its user delete the entry just returned (kvstore_delete); an unsafe
 * one forbids any change to the store while it is on a table. Call
 * kvstore_iter_reset when stopping early (harmless after the end). Fields
 * are private. */
typedef struct kvstore_pin {
    int slot;
    struct kvstore_pin *next;
} kvstore_pin;
typedef struct kvstore_iter {
    kvstore *kvs;
    hashtable_iter hit;
    kvstore_pin pin; /* the current slot; linked into the store when safe */
    int safe;
    int state; /* 0: not started, 1: on a table, 2: done */
} kvstore_iter;
void kvstore_iter_init(kvstore_iter *it, kvstore *kvs, int safe);
/* Returns 1 and sets *entry, or 0 when every table has been visited. */
int kvstore_iter_next(kvstore_iter *it, void **entry);
/* The slot of the entry last returned. */
int kvstore_iter_slot(const kvstore_iter *it);
void kvstore_iter_reset(kvstore_iter *it);

/* Cron: rehashes the queued rehashing tables for about `us` microseconds in
 * all, each table at most once per call (round robin). Never visits tables
 * that are not rehashing. Returns 1 if some table may still be rehashing. */
int kvstore_rehash_micros(kvstore *kvs, uint64_t us);
/* Cron: shrinks oversized tables and compacts idle grown ones (see
 * hashtable_compact_if_idle; compact_budget bounds the new array), visiting
 * at most `limit` non-empty slots from where the previous call stopped
 * (wrapping once per call). */
void kvstore_shrink_if_needed(kvstore *kvs, int limit, size_t compact_budget);

#endif
