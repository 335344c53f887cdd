/* histogram.h -- a compact log-linear histogram of non-negative integers
 * (command latencies in nanoseconds), for percentiles and cumulative
 * counts.
 *
 * Values below 8 get a bucket each; above, every power of two [2^e,
 * 2^(e+1)) is cut into 8 equal buckets, so a bucket is at most 1/8 of its
 * values wide (12.5% relative error) and every power of two from 8 up is a
 * bucket boundary. Values from 2^30 (about 1.07 s in nanoseconds) up share
 * the last range's buckets: they are clamped to 2^30 - 1, as Valkey's
 * latency histograms clamp at one second.
 *
 * Buckets come in groups of 8 (one power of two each, the values below 8
 * being the first group), and only the groups from the lowest to the
 * highest value seen are allocated: a command whose latencies span 1 to
 * 100 microseconds holds 8 groups, 512 bytes, where all 28 would take
 * 1.8 KB. Every command that runs has one, and their memory counts
 * against maxmemory.
 *
 * A percentile is answered as the highest value of the bucket holding the
 * sample of that rank, so it is never below the exact sample and at most
 * one bucket width above it.
 *
 * Threads: one writer; no locking. */
#ifndef KEEL_HISTOGRAM_H
#define KEEL_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define HIST_SUB_BITS 3
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_MAX_BITS 30
#define HIST_MAX_VALUE ((1ull << HIST_MAX_BITS) - 1)
#define HIST_GROUPS (HIST_MAX_BITS - HIST_SUB_BITS + 1)
#define HIST_BUCKETS ((int)(HIST_GROUPS * HIST_SUB))

/* Zero-initialise; hist_release frees the buckets. */
typedef struct histogram {
    uint64_t total;
    uint64_t *counts; /* groups first_group.. (count of them), HIST_SUB each */
    int first_group;
    int groups;
} histogram;

void hist_add(histogram *h, uint64_t value);
void hist_release(histogram *h);
/* The bucket value falls in, and a bucket's lowest and highest values. */
int hist_bucket_of(uint64_t value);
uint64_t hist_bucket_low(int bucket);
uint64_t hist_bucket_high(int bucket);
/* The value at percentile p (0..100): the highest value of the bucket
 * holding the sample of rank ceil(p% of total) (at least the first); 0 for
 * an empty histogram. */
uint64_t hist_percentile(const histogram *h, double p);
/* How many samples are below limit; exact when limit is a bucket boundary
 * (a power of two from 8 up, or anything up to 8). */
uint64_t hist_count_below(const histogram *h, uint64_t limit);
/* Bytes held for the buckets. */
size_t hist_mem_usage(const histogram *h);

#endif
