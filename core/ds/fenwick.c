/* fenwick.c -- the binary indexed tree (see fenwick.h). Node j (1-based)
 * holds the sum of the counters (j - lowbit(j), j]; walking down by lowbit
 * sums a prefix, walking up updates every node covering a counter, and a
 * descent by powers of two finds a rank. */
#include "ds/fenwick.h"

#include "common/kmem.h"

struct fenwick {
    size_t n;
    size_t top; /* the largest power of two <= n */
    long long total;
    long long node[]; /* 1-based: node[0] unused */
};

fenwick *fenwick_create(size_t n) {
    if (n == 0) return NULL;
    fenwick *t = km_calloc(1, sizeof(*t) + sizeof(long long) * (n + 1));
    t->n = n;
    t->top = 1;
    while (t->top * 2 <= n)
        t->top *= 2;
    return t;
}

void fenwick_release(fenwick *t) {
    km_free(t);
}

void fenwick_add(fenwick *t, size_t i, long long delta) {
    for (size_t j = i + 1; j <= t->n; j += j & (~j + 1))
        t->node[j] += delta;
    t->total += delta;
}

long long fenwick_prefix(const fenwick *t, size_t i) {
    long long sum = 0;
    for (size_t j = i + 1 > t->n ? t->n : i + 1; j > 0; j -= j & (~j + 1))
        sum += t->node[j];
    return sum;
}

long long fenwick_total(const fenwick *t) {
    return t->total;
}

size_t fenwick_mem_usage(const fenwick *t) {
    return t ? sizeof(*t) + sizeof(long long) * (t->n + 1) : 0;
}

size_t fenwick_find(const fenwick *t, long long k) {
    if (k < 0 || k >= t->total) return t->n;
    size_t pos = 0;
    for (size_t step = t->top; step > 0; step /= 2) {
        if (pos + step <= t->n && t->node[pos + step] <= k) {
            pos += step;
            k -= t->node[pos];
        }
    }
    return pos; /* counters 0..pos-1 hold at most the original k units */
}
