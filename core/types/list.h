/* list.h -- the list value type and its two encodings.
 *
 * A small list is one pack (ds/pack.h; OBJECT ENCODING "listpack"). A list
 * that outgrows list-max-listpack-size becomes a "quicklist": a doubly
 * linked chain of packs, each node under the same limit (negative -1..-5:
 * 4/8/16/32/64 KiB per node; positive: entries per node, with 8 KiB as a
 * byte ceiling), as Valkey 8 does. An element too big for a node (over the
 * node's byte limit, or 8 KiB under a count limit, or DEBUG
 * QUICKLIST-PACKED-THRESHOLD's size when set) lives alone in a "plain"
 * node that nothing is ever merged into. A quicklist goes back to one pack
 * when it is a single node at most half the limit (the hysteresis keeps a
 * list at the boundary from converting on every push and pop).
 *
 * list-compress-depth d > 0 keeps a quicklist's inner nodes (all but d at
 * each end) LZF-compressed where that saves memory, as Valkey does; it is
 * read live too and applies to the nodes each operation touches.
 *
 * The limit is read live from db_opts()->types, so CONFIG SET applies to
 * the next write of every list. The commands work through this API only
 * and never see a node.
 *
 * Indexes are 0-based from the head; callers normalise negative ones.
 * An element read (pack_val) points into the list: from list_index and
 * list_peek it is valid until the list is next used (read or modified),
 * from an iterator until its next list_iter_next call.
 *
 * Threads: main thread; a list no key references may be freed anywhere. */
#ifndef KEEL_LIST_H
#define KEEL_LIST_H

#include <stddef.h>

#include "ds/pack.h"
#include "keyspace/object.h"

#define LIST_HEAD 0
#define LIST_TAIL 1

/* Registers the list type's operations (types_setup). */
void list_type_setup(void);

/* A new empty list (listpack encoded), refcount 1. */
kobj *list_new(void);
size_t list_len(const kobj *o);
/* Nodes of a quicklist, 1 for a listpack (lazy free's effort). */
size_t list_node_count(const kobj *o);

void list_push(kobj *o, int where, const char *s, size_t len);
/* Reads the head or tail element; 0 when the list is empty. */
int list_peek(const kobj *o, int where, pack_val *out);
/* Removes up to n elements from the head or tail. */
void list_pop(kobj *o, int where, size_t n);

/* The element at index (0 <= index); 0 when out of range. */
int list_index(const kobj *o, long long index, pack_val *out);
/* Replaces the element at index; 0 when out of range. */
int list_set(kobj *o, long long index, const char *s, size_t len);
/* Inserts s before (after = 0) or after the first element equal to pivot;
 * 1 if inserted, 0 if the pivot is not in the list. */
int list_insert(kobj *o, const char *pivot, size_t plen, int after, const char *s, size_t len);
/* Deletes n elements from index start on (fewer if the list ends). */
void list_delete_range(kobj *o, long long start, long long n);
/* Removes elements equal to s: count > 0 the first count from the head,
 * count < 0 the first -count from the tail, 0 all. Returns how many. */
size_t list_remove(kobj *o, const char *s, size_t len, long long count);

/* Whether an element read from a list equals s[0..len). */
int list_val_eq(const pack_val *v, const char *s, size_t len);

/* Walks the elements from index (0 <= index < len) towards the tail
 * (LIST_TAIL) or the head (LIST_HEAD). The list must not change while the
 * iterator is in use. */
typedef struct list_iter {
    const void *ql;   /* the quicklist; NULL for a listpack */
    const void *node; /* the quicklist node; NULL for a listpack */
    const pack *p;
    size_t pos;
    int dir;
} list_iter;

void list_iter_init(list_iter *it, const kobj *o, long long index, int dir);
int list_iter_next(list_iter *it, pack_val *out);

/* Checks the structure against the node limits of fill (the unit tests):
 * links and counts agree, no node is empty, a plain node holds one
 * element, a packed node of several elements is within the limit, and a
 * listpack is within it too; every node is raw or compressed, none still
 * queued after the settle this check begins with. 1 if all hold. */
int list_verify(const kobj *o, int fill);
/* Checks compression against depth (the unit tests): the depth nodes at
 * each end are raw, and an inner node is compressed exactly when it
 * qualifies (big enough and worth it). 1 if so. */
int list_verify_compression(const kobj *o, size_t depth);

/* A quicklist's shape for DEBUG OBJECT (walks every node). */
typedef struct list_ql_info {
    size_t nodes, count;
    size_t raw_bytes;        /* the nodes' bytes uncompressed */
    size_t compressed_nodes; /* nodes now compressed */
} list_ql_info;

/* Fills *out for a quicklist; 0 for a listpack. */
int list_quicklist_info(const kobj *o, list_ql_info *out);

/* DEBUG QUICKLIST-PACKED-THRESHOLD: elements of at least sz bytes go to
 * plain nodes (0: the node limits decide). Returns 0 for a size Valkey
 * refuses (4 GiB - 1 MiB and above). */
int list_set_packed_threshold(unsigned long long sz);

#endif
