/* histogram.c -- the log-linear histogram (see histogram.h). */
#include "ds/histogram.h"

#include "common/kmem.h"

#include <math.h>
#include <string.h>

int hist_bucket_of(uint64_t value) {
    if (value > HIST_MAX_VALUE) value = HIST_MAX_VALUE;
    if (value < HIST_SUB) return (int)value;
    int e = 63 - __builtin_clzll(value); /* value's power of two, >= HIST_SUB_BITS */
    int sub = (int)((value >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1));
    return ((e - HIST_SUB_BITS + 1) << HIST_SUB_BITS) + sub;
}

uint64_t hist_bucket_low(int bucket) {
    if (bucket < (int)HIST_SUB) return (uint64_t)bucket;
    int e = (bucket >> HIST_SUB_BITS) + HIST_SUB_BITS - 1;
    uint64_t sub = (uint64_t)(bucket & (HIST_SUB - 1));
    return (HIST_SUB + sub) << (e - HIST_SUB_BITS);
}

uint64_t hist_bucket_high(int bucket) {
    if (bucket < (int)HIST_SUB) return (uint64_t)bucket;
    int e = (bucket >> HIST_SUB_BITS) + HIST_SUB_BITS - 1;
    return hist_bucket_low(bucket) + (1ull << (e - HIST_SUB_BITS)) - 1;
}

/* Widens the allocated groups to take in group g. */
static void hist_cover(histogram *h, int g) {
    if (!h->groups) {
        h->counts = km_calloc(HIST_SUB, sizeof(uint64_t));
        h->first_group = g;
        h->groups = 1;
        return;
    }
    int lo = g < h->first_group ? g : h->first_group;
    int last = h->first_group + h->groups - 1;
    int hi = g > last ? g : last;
    int n = hi - lo + 1, shift = h->first_group - lo;
    uint64_t *c = km_calloc((size_t)n * HIST_SUB, sizeof(uint64_t));
    memcpy(c + (size_t)shift * HIST_SUB, h->counts,
           (size_t)h->groups * HIST_SUB * sizeof(uint64_t));
    km_free(h->counts);
    h->counts = c;
    h->first_group = lo;
    h->groups = n;
}

void hist_add(histogram *h, uint64_t value) {
    int b = hist_bucket_of(value), g = b >> HIST_SUB_BITS;
    if (g < h->first_group || g >= h->first_group + h->groups) hist_cover(h, g);
    h->counts[b - h->first_group * (int)HIST_SUB]++;
    h->total++;
}

void hist_release(histogram *h) {
    km_free(h->counts);
    memset(h, 0, sizeof(*h));
}

uint64_t hist_percentile(const histogram *h, double p) {
    if (!h->total) return 0;
    if (p < 0) p = 0;
    if (p > 100) p = 100;
    double want = ceil(p / 100.0 * (double)h->total);
    uint64_t rank = want < 1 ? 1 : (uint64_t)want;
    if (rank > h->total) rank = h->total;
    uint64_t seen = 0;
    int first = h->first_group * (int)HIST_SUB, n = h->groups * (int)HIST_SUB;
    for (int i = 0; i < n; i++) {
        seen += h->counts[i];
        if (seen >= rank) return hist_bucket_high(first + i);
    }
    return HIST_MAX_VALUE;
}

uint64_t hist_count_below(const histogram *h, uint64_t limit) {
    uint64_t below = 0;
    int first = h->first_group * (int)HIST_SUB, n = h->groups * (int)HIST_SUB;
    for (int i = 0; i < n && hist_bucket_low(first + i) < limit; i++)
        below += h->counts[i];
    return below;
}

size_t hist_mem_usage(const histogram *h) {
    return h->counts ? km_usable(h->counts) : 0;
}
