/* histogram.c -- the log-linear histogram (see histogram.h). */
#include "ds/histogram.h"

#include <math.h>

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

void hist_add(histogram *h, uint64_t value) {
    h->counts[hist_bucket_of(value)]++;
    h->total++;
}

uint64_t hist_percentile(const histogram *h, double p) {
    if (!h->total) return 0;
    if (p < 0) p = 0;
    if (p > 100) p = 100;
    double want = ceil(p / 100.0 * (double)h->total);
    uint64_t rank = want < 1 ? 1 : (uint64_t)want;
    if (rank > h->total) rank = h->total;
    uint64_t seen = 0;
    for (int b = 0; b < HIST_BUCKETS; b++) {
        seen += h->counts[b];
        if (seen >= rank) return hist_bucket_high(b);
    }
    return HIST_MAX_VALUE;
}

uint64_t hist_count_below(const histogram *h, uint64_t limit) {
    uint64_t n = 0;
    for (int b = 0; b < HIST_BUCKETS && hist_bucket_low(b) < limit; b++)
        n += h->counts[b];
    return n;
}
