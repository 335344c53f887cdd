/* fenwick.h -- a binary indexed tree of counts: n counters with O(log n)
 * add, prefix sum, and "which counter holds the k-th unit". The keyspace
 * keeps one over its per-slot tables (keys per slot), so a random key can
 * be drawn fairly across slots (RANDOMKEY, eviction and expiry sampling) and
 * SCAN can skip empty slots without visiting them.
 *
 * Threads: one thread at a time per tree. */
#ifndef KEEL_FENWICK_H
#define KEEL_FENWICK_H

#include <stddef.h>
#include <stdint.h>

typedef struct fenwick fenwick;

/* A tree of n counters, all 0. NULL if n is 0. */
fenwick *fenwick_create(size_t n);
void fenwick_release(fenwick *t);
/* Adds delta to counter i (0-based); a counter never goes below 0 in use. */
void fenwick_add(fenwick *t, size_t i, long long delta);
/* Sum of counters 0..i inclusive. */
long long fenwick_prefix(const fenwick *t, size_t i);
long long fenwick_total(const fenwick *t);
/* Bytes the tree occupies. */
size_t fenwick_mem_usage(const fenwick *t);
/* The counter holding the k-th unit (0-based rank, k < total): the
 * smallest i with prefix(i) > k. Returns n when k is out of range. */
size_t fenwick_find(const fenwick *t, long long k);

#endif
