/* pm_hist.c -- bucket bounds, names and quantiles (see pm_hist.h). */
#include "pm_hist.h"

#include <stdio.h>

unsigned char pm_small_bucket[PM_SMALL_MAX / 16 + 1];

void pm_hist_init(void) {
    for (unsigned k = 0; k <= PM_SMALL_MAX / 16; k++)
        pm_small_bucket[k] = (unsigned char)pm_bucket_calc((uint64_t)k * 16);
}

uint64_t pm_bucket_upper(unsigned i) {
    if (i == 0) return 1u << PM_MIN_LOG2;
    if (i >= PM_OVERFLOW) return UINT64_MAX;
    unsigned octave = (i - 1) / PM_SUBS, sub = (i - 1) % PM_SUBS;
    /* 2^(PM_MIN_LOG2 + octave) * (PM_SUBS + sub + 1) / PM_SUBS */
    return ((uint64_t)(PM_SUBS + sub + 1)) << (PM_MIN_LOG2 + octave - PM_SUB_BITS);
}

uint64_t pm_bucket_lower(unsigned i) {
    return i == 0 ? 0 : pm_bucket_upper(i - 1);
}

int pm_bucket_coarse(unsigned i) {
    return i == 0 || i >= PM_OVERFLOW || (i - 1) % PM_SUBS == PM_SUBS - 1;
}

void pm_size_name(uint64_t v, char *buf, size_t len) {
    if (v >= (1u << 20) && v % (1u << 20) == 0)
        snprintf(buf, len, "%llumb", (unsigned long long)(v >> 20));
    else if (v >= (1u << 10) && v % (1u << 10) == 0)
        snprintf(buf, len, "%llukb", (unsigned long long)(v >> 10));
    else
        snprintf(buf, len, "%llub", (unsigned long long)v);
}

void pm_bucket_name(unsigned i, char *buf, size_t len) {
    char size[32];
    if (i >= PM_OVERFLOW) {
        pm_size_name(pm_bucket_lower(PM_OVERFLOW), size, sizeof(size));
        snprintf(buf, len, "gt_%s", size);
    } else {
        pm_size_name(pm_bucket_upper(i), size, sizeof(size));
        snprintf(buf, len, "le_%s", size);
    }
}

uint64_t pm_hist_count(const pm_hist *h) {
    uint64_t n = 0;
    for (unsigned i = 0; i < PM_NBUCKETS; i++)
        n += h->b[i];
    return n;
}

uint64_t pm_hist_quantile(const pm_hist *h, double q) {
    uint64_t count = pm_hist_count(h);
    if (count == 0) return 0;
    if (q <= 0) q = 1e-9;
    if (q > 1) q = 1;
    double r = q * (double)count; /* rank = ceil(r), without libm */
    uint64_t rank = (uint64_t)r;
    if ((double)rank < r) rank++;
    if (rank < 1) rank = 1;
    uint64_t before = 0;
    for (unsigned i = 0; i < PM_NBUCKETS; i++) {
        uint64_t n = h->b[i];
        if (before + n < rank) {
            before += n;
            continue;
        }
        uint64_t lo = pm_bucket_lower(i);
        if (i >= PM_OVERFLOW) return lo;
        double hi = (double)pm_bucket_upper(i);
        double frac = (double)(rank - before) / (double)n;
        return (uint64_t)((double)lo + (hi - (double)lo) * frac + 0.5);
    }
    return pm_bucket_lower(PM_OVERFLOW); /* not reached */
}

void pm_hist_sub(pm_hist *out, const pm_hist *a, const pm_hist *b) {
    out->sum = a->sum >= b->sum ? a->sum - b->sum : 0;
    for (unsigned i = 0; i < PM_NBUCKETS; i++)
        out->b[i] = a->b[i] >= b->b[i] ? a->b[i] - b->b[i] : 0;
}

void pm_hist_add(pm_hist *acc, const pm_hist *h) {
    acc->sum += h->sum;
    for (unsigned i = 0; i < PM_NBUCKETS; i++)
        acc->b[i] += h->b[i];
}
