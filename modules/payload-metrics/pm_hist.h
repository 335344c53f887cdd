/* pm_hist.h -- log-scale byte-size histograms of the payload-metrics module.
 *
 * Buckets are half-open on the left, (lo, hi], so that every upper bound is
 * a round number and doubles as a Prometheus `le` value:
 *
 *   bucket 0        (0, 64]          (and 0 itself)
 *   buckets 1..92   23 powers of two from 64 B to 512 MB, each cut into 4
 *                   equal sub-buckets: (64, 80], (80, 96], (96, 112],
 *                   (112, 128], (128, 160], ..., (448 MB, 512 MB]
 *   bucket 93       (512 MB, +Inf)
 *
 * Four sub-buckets per power of two keep the relative width of a bucket at
 * 25% or less, so a median that moves from 1 KB to 40 KB crosses 16 of
 * them. Finding the bucket is a count-leading-zeros and two shifts.
 *
 * Everything here is pure (no server calls), so the unit test links it
 * directly. */
#ifndef PM_HIST_H
#define PM_HIST_H

#include <stddef.h>
#include <stdint.h>

#define PM_SUB_BITS 2
#define PM_SUBS (1u << PM_SUB_BITS) /* sub-buckets per power of two */
#define PM_MIN_LOG2 6               /* 64 B: top of bucket 0 */
#define PM_MAX_LOG2 29              /* 512 MB: top of the last finite bucket */
#define PM_OCTAVES (PM_MAX_LOG2 - PM_MIN_LOG2)
#define PM_NBUCKETS (PM_OCTAVES * PM_SUBS + 2) /* 94 */
#define PM_LAST_FINITE (PM_NBUCKETS - 2)       /* 92: (448 MB, 512 MB] */
#define PM_OVERFLOW (PM_NBUCKETS - 1)          /* 93: over 512 MB */

/* One histogram: the bucket counts and the sum of the sizes recorded. The
 * count is the sum of the buckets (one increment less on the hot path). */
typedef struct pm_hist {
    uint64_t sum;
    uint64_t b[PM_NBUCKETS];
} pm_hist;

/* Every bucket bound up to 4 KB is a multiple of 16, so for v <= 4 KB the
 * bucket is a function of ceil(v / 16): pm_small_bucket[(v + 15) >> 4],
 * one load instead of a clz and shifts (filled by pm_hist_init). */
#define PM_SMALL_MAX 4096
extern unsigned char pm_small_bucket[PM_SMALL_MAX / 16 + 1];
void pm_hist_init(void);

/* The bucket of a size in bytes, computed. */
static inline unsigned pm_bucket_calc(uint64_t v) {
    if (v <= (1u << PM_MIN_LOG2)) return 0;
    uint64_t w = v - 1; /* (lo, hi] becomes [lo, hi) */
    if (w >> PM_MAX_LOG2) return PM_OVERFLOW;
    unsigned lg = 63u - (unsigned)__builtin_clzll(w); /* PM_MIN_LOG2..PM_MAX_LOG2-1 */
    unsigned sub = (unsigned)(w >> (lg - PM_SUB_BITS)) & (PM_SUBS - 1);
    return 1 + (lg - PM_MIN_LOG2) * PM_SUBS + sub;
}

/* The bucket of a size in bytes. */
static inline unsigned pm_bucket(uint64_t v) {
    if (v <= PM_SMALL_MAX) return pm_small_bucket[(v + 15) >> 4];
    return pm_bucket_calc(v);
}

static inline void pm_hist_record(pm_hist *h, unsigned bucket, uint64_t v) {
    h->b[bucket]++;
    h->sum += v;
}

/* Bounds of bucket i: values v with lower < v <= upper. The overflow
 * bucket's upper bound is UINT64_MAX (+Inf). */
uint64_t pm_bucket_lower(unsigned i);
uint64_t pm_bucket_upper(unsigned i);
/* True for the buckets whose upper bound is a power of two (64 B, 128 B,
 * ..., 512 MB) and for the overflow bucket: the coarse view. */
int pm_bucket_coarse(unsigned i);
/* A readable name for bucket i: "le_64b", "le_80b", "le_1kb", "le_1280b",
 * "le_40kb", "le_512mb", "gt_512mb". The size is written in the largest of
 * b, kb, mb (1024-based) that divides it exactly. */
void pm_bucket_name(unsigned i, char *buf, size_t len);
/* A size as the names write it: 1280 -> "1280b", 40960 -> "40kb". */
void pm_size_name(uint64_t v, char *buf, size_t len);

uint64_t pm_hist_count(const pm_hist *h);
/* The q-quantile (0 < q <= 1), interpolated linearly inside its bucket; 0
 * for an empty histogram. The overflow bucket reports its lower bound. */
uint64_t pm_hist_quantile(const pm_hist *h, double q);
/* out = a - b, bucket by bucket (a counter that went backwards, e.g. after
 * a reset, gives 0). out may be a or b. */
void pm_hist_sub(pm_hist *out, const pm_hist *a, const pm_hist *b);
void pm_hist_add(pm_hist *acc, const pm_hist *h);

#endif
