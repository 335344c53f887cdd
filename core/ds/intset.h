/* intset.h -- a sorted array of distinct 64-bit integers, each stored in
 * the smallest width that fits every member (2, 4 or 8 bytes).
 *
 * The set of small integer-only sets (OBJECT ENCODING "intset"): a lookup
 * is a binary search, an insert shifts the tail, and a value that does not
 * fit the current width widens every member once (never narrowed back, as
 * in Valkey). One allocation: an 8-byte header (width, count) and the
 * members in host byte order. Valkey's intset has the same two 32-bit
 * header fields and little-endian members, so converting one to the other
 * (RDB) is one linear copy on little-endian hosts.
 *
 * Functions that modify the set return the set to use from then on (it may
 * have moved), as realloc does.
 *
 * Threads: plain memory; one thread at a time. */
#ifndef KEEL_INTSET_H
#define KEEL_INTSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct intset {
    uint32_t width; /* bytes per member: 2, 4 or 8 */
    uint32_t count;
    unsigned char data[];
} intset;

/* An empty set of 2-byte width. Never fails (allocation failure aborts). */
intset *intset_new(void);
void intset_free(intset *s);
intset *intset_dup(const intset *s);

static inline size_t intset_count(const intset *s) {
    return s->count;
}

/* Bytes of the set's layout (header and members). */
size_t intset_bytes(const intset *s);

/* The i-th smallest member (i < count). */
int64_t intset_get(const intset *s, size_t i);
int64_t intset_min(const intset *s); /* count > 0 */
int64_t intset_max(const intset *s); /* count > 0 */

/* 1 if v is a member. */
int intset_contains(const intset *s, int64_t v);

/* Adds v; *added is 1 if it was not a member (0: the set is unchanged). */
intset *intset_add(intset *s, int64_t v, int *added);
/* Removes v; *removed is 1 if it was a member. */
intset *intset_remove(intset *s, int64_t v, int *removed);

/* Checks an untrusted buffer of `size` bytes (RESTORE, RDB): 1 if it is a
 * well-formed intset (known width, size matching the count, members
 * strictly ascending). */
int intset_validate(const unsigned char *buf, size_t size);

#endif
