/* idmap.h -- an ordered map from 128-bit keys (two unsigned 64-bit halves,
 * compared high half first) to pointers: a B+tree whose leaves are linked
 * both ways.
 *
 * Made for the stream consumer groups' pending entries lists (keyed by
 * stream ID): they may hold millions of entries, grow at the end, and
 * lose entries anywhere (XACK), so insertion, deletion and seeking are
 * O(log n) and a walk goes either way from any point. Nodes hold up to
 * IDMAP_FANOUT keys and are kept at least half full (deletions borrow
 * from or merge with a sibling), so an entry costs about 24 to 48 bytes.
 *
 * Values are caller-owned pointers and never NULL (NULL answers "absent").
 * Any insertion or deletion invalidates the iterators of the map.
 *
 * Threads: none of its own; a map is used by one thread at a time. */
#ifndef KEEL_IDMAP_H
#define KEEL_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct idmap_key {
    uint64_t hi, lo;
} idmap_key;

static inline int idmap_key_cmp(idmap_key a, idmap_key b) {
    if (a.hi != b.hi) return a.hi < b.hi ? -1 : 1;
    if (a.lo != b.lo) return a.lo < b.lo ? -1 : 1;
    return 0;
}

typedef struct idmap_node idmap_node;

/* Zero-initialised (or idmap_init) it is an empty map. */
typedef struct idmap {
    idmap_node *root;
    size_t count;
    size_t nodes;
} idmap;

void idmap_init(idmap *m);
/* Frees the nodes, calling free_val (when not NULL) on every value; the
 * map is empty after. */
void idmap_clear(idmap *m, void (*free_val)(void *));

static inline size_t idmap_count(const idmap *m) {
    return m->count;
}
/* Bytes the nodes take (MEMORY USAGE), the values not counted. */
size_t idmap_mem_usage(const idmap *m);

/* The value at k, or NULL. */
void *idmap_find(const idmap *m, idmap_key k);
/* Adds k -> val (val not NULL). K_OK, or K_ERR (map unchanged) when k is
 * present already. */
int idmap_insert(idmap *m, idmap_key k, void *val);
/* Removes k; returns its value, or NULL when absent. */
void *idmap_delete(idmap *m, idmap_key k);

/* A position in the map: an entry, or past either end (not valid). */
typedef struct idmap_iter {
    idmap_node *leaf;
    int pos;
} idmap_iter;

/* Positions at the first entry whose key is >= k (seek_ge) or the last
 * whose key is <= k (seek_le); at the first or the last entry. */
void idmap_seek_ge(idmap_iter *it, const idmap *m, idmap_key k);
void idmap_seek_le(idmap_iter *it, const idmap *m, idmap_key k);
void idmap_seek_first(idmap_iter *it, const idmap *m);
void idmap_seek_last(idmap_iter *it, const idmap *m);

static inline int idmap_iter_valid(const idmap_iter *it) {
    return it->leaf != NULL;
}
/* The entry at a valid position. */
idmap_key idmap_iter_key(const idmap_iter *it);
void *idmap_iter_val(const idmap_iter *it);
/* Moves to the next (previous) entry; past the end the position is no
 * longer valid. */
void idmap_iter_next(idmap_iter *it);
void idmap_iter_prev(idmap_iter *it);

#endif
