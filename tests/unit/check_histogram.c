/* check_histogram.c -- unit tests for core/ds/histogram.c: the buckets tile
 * the value range without gaps, each at most 1/8 of its values wide;
 * percentiles checked against sorted samples (never below the exact
 * sample, at most one bucket width above it) for several distributions;
 * cumulative counts exact at powers of two; clamping; empty histograms;
 * only the groups between the lowest and highest value allocated. */
#include "ds/histogram.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

START_TEST(test_buckets_tile) {
    ck_assert_uint_eq(hist_bucket_low(0), 0);
    for (int b = 0; b < HIST_BUCKETS; b++) {
        uint64_t lo = hist_bucket_low(b), hi = hist_bucket_high(b);
        ck_assert_uint_ge(hi, lo);
        ck_assert_int_eq(hist_bucket_of(lo), b);
        ck_assert_int_eq(hist_bucket_of(hi), b);
        if (b + 1 < HIST_BUCKETS) ck_assert_uint_eq(hist_bucket_low(b + 1), hi + 1);
        /* Relative width: 1/8 of the bucket's lowest value at most. */
        if (lo >= HIST_SUB) ck_assert_uint_le((hi - lo + 1) * HIST_SUB, lo);
    }
    ck_assert_uint_eq(hist_bucket_high(HIST_BUCKETS - 1), HIST_MAX_VALUE);
    ck_assert_int_eq(hist_bucket_of(UINT64_MAX), HIST_BUCKETS - 1);
    for (int k = HIST_SUB_BITS; k < HIST_MAX_BITS; k++)
        ck_assert_uint_eq(hist_bucket_low(hist_bucket_of(1ull << k)), 1ull << k);
}
END_TEST

/* Every percentile of interest against the sorted samples. */
static void check_percentiles(uint64_t *v, size_t n) {
    histogram *h = calloc(1, sizeof(*h));
    for (size_t i = 0; i < n; i++)
        hist_add(h, v[i]);
    qsort(v, n, sizeof(*v), cmp_u64);
    static const double ps[] = {0, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        size_t rank = (size_t)((ps[i] / 100.0) * (double)n + 0.999999999);
        if (rank < 1) rank = 1;
        if (rank > n) rank = n;
        uint64_t exact = v[rank - 1] > HIST_MAX_VALUE ? HIST_MAX_VALUE : v[rank - 1];
        uint64_t got = hist_percentile(h, ps[i]);
        int b = hist_bucket_of(exact);
        uint64_t width = hist_bucket_high(b) - hist_bucket_low(b) + 1;
        ck_assert_msg(got >= exact && got - exact < width, "p%g: got %llu, exact %llu, width %llu",
                      ps[i], (unsigned long long)got, (unsigned long long)exact,
                      (unsigned long long)width);
    }
    for (int k = HIST_SUB_BITS; k <= HIST_MAX_BITS; k++) {
        uint64_t limit = 1ull << k, below = 0;
        while (below < n && (v[below] > HIST_MAX_VALUE ? HIST_MAX_VALUE : v[below]) < limit)
            below++;
        ck_assert_uint_eq(hist_count_below(h, limit), below);
    }
    ck_assert_uint_eq(h->total, n);
    hist_release(h);
    ck_assert_ptr_null(h->counts);
    free(h);
}

START_TEST(test_percentiles_against_sorted) {
    enum { N = 20000 };
    uint64_t *v = malloc(N * sizeof(*v));
    srand(4242);
    for (int dist = 0; dist < 4; dist++) {
        for (size_t i = 0; i < N; i++) {
            uint64_t r = (uint64_t)rand();
            switch (dist) {
            case 0:
                v[i] = r % 100000;
                break; /* uniform */
            case 1:
                v[i] = 1000 * (1 + r % 50);
                break; /* whole microseconds */
            case 2:
                v[i] = (1ull << (r % 34)) + r % 977;
                break; /* log-spread, past the clamp */
            default:
                v[i] = i % 100 == 0 ? 500000000 + r % 1000 : r % 20; /* a rare slow tail */
            }
        }
        check_percentiles(v, N);
    }
    free(v);
}
END_TEST

START_TEST(test_small_and_empty) {
    histogram h;
    memset(&h, 0, sizeof(h));
    ck_assert_uint_eq(hist_percentile(&h, 50), 0);
    ck_assert_uint_eq(hist_count_below(&h, 1024), 0);
    hist_add(&h, 7);
    ck_assert_uint_eq(hist_percentile(&h, 0), 7);
    ck_assert_uint_eq(hist_percentile(&h, 100), 7);
    hist_add(&h, 1000);
    hist_add(&h, 1000);
    ck_assert_uint_eq(hist_percentile(&h, 50), hist_bucket_high(hist_bucket_of(1000)));
    ck_assert_uint_eq(hist_count_below(&h, 1024), 3);
    ck_assert_uint_eq(hist_count_below(&h, 8), 1);
    hist_release(&h);
}
END_TEST

/* Only the groups between the lowest and highest value are held; a new
 * low or high value widens them and keeps the counts. */
START_TEST(test_sparse_groups) {
    histogram h;
    memset(&h, 0, sizeof(h));
    ck_assert_uint_eq(hist_mem_usage(&h), 0);
    for (uint64_t v = 1000; v < 2000; v++)
        hist_add(&h, v); /* 2^9 .. 2^10: two groups */
    ck_assert_int_eq(h.groups, 2);
    ck_assert_uint_le(hist_mem_usage(&h), 2 * HIST_SUB * sizeof(uint64_t) + 32);
    hist_add(&h, 3);
    hist_add(&h, 100000);
    ck_assert_int_eq(h.first_group, 0);
    ck_assert_int_eq(h.groups, hist_bucket_of(100000) / (int)HIST_SUB + 1);
    ck_assert_uint_eq(hist_count_below(&h, 1024), 1 + 24);
    ck_assert_uint_eq(hist_count_below(&h, 2048), 1 + 1000);
    ck_assert_uint_eq(hist_percentile(&h, 100), hist_bucket_high(hist_bucket_of(100000)));
    ck_assert_uint_eq(hist_percentile(&h, 0), 3);
    hist_release(&h);
}
END_TEST

static Suite *histogram_suite(void) {
    Suite *s = suite_create("histogram");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_buckets_tile);
    tcase_add_test(tc, test_percentiles_against_sorted);
    tcase_add_test(tc, test_small_and_empty);
    tcase_add_test(tc, test_sparse_groups);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(histogram_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
