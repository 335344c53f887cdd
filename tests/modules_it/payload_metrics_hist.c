/* payload_metrics_hist.c -- the payload-metrics histogram alone (no server):
 * bucket edges, the small-size table against the computed path, names,
 * quantiles and subtraction. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pm_hist.h"

#define MB (1024ull * 1024)

static void setup(void) {
    pm_hist_init();
}

START_TEST(test_edges) {
    ck_assert_uint_eq(pm_bucket(0), 0);
    ck_assert_uint_eq(pm_bucket(1), 0);
    ck_assert_uint_eq(pm_bucket(64), 0);
    ck_assert_uint_eq(pm_bucket(65), 1);
    ck_assert_uint_eq(pm_bucket(80), 1);
    ck_assert_uint_eq(pm_bucket(81), 2);
    ck_assert_uint_eq(pm_bucket(128), 4);
    ck_assert_uint_eq(pm_bucket(129), 5);
    ck_assert_uint_eq(pm_bucket(512 * MB), PM_LAST_FINITE);
    ck_assert_uint_eq(pm_bucket(512 * MB + 1), PM_OVERFLOW);
    ck_assert_uint_eq(pm_bucket(UINT64_MAX), PM_OVERFLOW);
    ck_assert_uint_eq(PM_NBUCKETS, 94);
}
END_TEST

/* Every bucket is (lower, upper]: upper maps to i, upper + 1 to i + 1; the
 * bounds grow by at most 25%. */
START_TEST(test_bounds_consistent) {
    for (unsigned i = 0; i < PM_OVERFLOW; i++) {
        uint64_t lo = pm_bucket_lower(i), hi = pm_bucket_upper(i);
        ck_assert_uint_lt(lo, hi);
        ck_assert_uint_eq(pm_bucket(hi), i);
        ck_assert_uint_eq(pm_bucket(hi + 1), i + 1);
        if (i > 0) {
            ck_assert_uint_eq(pm_bucket(lo + 1), i);
            ck_assert_uint_le((hi - lo) * 4, lo);
        }
    }
    ck_assert_uint_eq(pm_bucket_upper(PM_OVERFLOW), UINT64_MAX);
}
END_TEST

START_TEST(test_small_table_matches) {
    for (uint64_t v = 0; v <= PM_SMALL_MAX + 64; v++)
        ck_assert_uint_eq(pm_bucket(v), pm_bucket_calc(v));
}
END_TEST

START_TEST(test_random_values_in_their_bucket) {
    srand(7);
    for (int n = 0; n < 200000; n++) {
        uint64_t v = ((uint64_t)rand() << 31 | (uint64_t)rand()) >> (rand() % 40);
        unsigned b = pm_bucket(v);
        ck_assert(v <= pm_bucket_upper(b));
        ck_assert(b == 0 ? 1 : v > pm_bucket_lower(b));
    }
}
END_TEST

START_TEST(test_coarse) {
    int n = 0;
    for (unsigned i = 0; i < PM_NBUCKETS; i++) {
        if (!pm_bucket_coarse(i)) continue;
        n++;
        uint64_t hi = pm_bucket_upper(i);
        ck_assert(i == PM_OVERFLOW || (hi & (hi - 1)) == 0); /* a power of two */
    }
    ck_assert_int_eq(n, 25); /* 64 B ... 512 MB, and +Inf */
}
END_TEST

START_TEST(test_names) {
    char buf[32], prev[32] = "";
    struct {
        uint64_t size; /* a size in the bucket */
        const char *name;
    } want[] = {
        {0, "le_64b"},      {80, "le_80b"},     {1024, "le_1kb"},       {1056, "le_1280b"},
        {40960, "le_40kb"}, {40993, "le_48kb"}, {512 * MB, "le_512mb"}, {512 * MB + 1, "gt_512mb"}};
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        pm_bucket_name(pm_bucket(want[k].size), buf, sizeof(buf));
        ck_assert_str_eq(buf, want[k].name);
    }
    for (unsigned i = 0; i < PM_NBUCKETS; i++) { /* unique, INFO-safe */
        pm_bucket_name(i, buf, sizeof(buf));
        ck_assert_str_ne(buf, prev);
        ck_assert_uint_eq(strspn(buf, "abcdefghijklmnopqrstuvwxyz0123456789_"), strlen(buf));
        snprintf(prev, sizeof(prev), "%s", buf);
    }
}
END_TEST

static void record(pm_hist *h, uint64_t v, int times) {
    for (int i = 0; i < times; i++)
        pm_hist_record(h, pm_bucket(v), v);
}

START_TEST(test_quantiles) {
    pm_hist h;
    memset(&h, 0, sizeof(h));
    ck_assert_uint_eq(pm_hist_quantile(&h, 0.5), 0);
    record(&h, 1056, 100); /* a SET of a 1 KB value */
    ck_assert_uint_eq(pm_hist_count(&h), 100);
    ck_assert_uint_eq(h.sum, 105600);
    uint64_t p50 = pm_hist_quantile(&h, 0.5);
    ck_assert(p50 > 1024 && p50 <= 1280);
    /* The median moves from 1 KB to 40 KB once 40 KB requests dominate. */
    record(&h, 40993, 101);
    p50 = pm_hist_quantile(&h, 0.5);
    ck_assert(p50 > 40960 && p50 <= 49152);
    uint64_t p99 = pm_hist_quantile(&h, 0.99);
    ck_assert(p99 > 40960 && p99 <= 49152);
    /* Overflow reports its lower bound. */
    memset(&h, 0, sizeof(h));
    record(&h, 600 * MB, 3);
    ck_assert_uint_eq(pm_hist_quantile(&h, 0.99), 512 * MB);
}
END_TEST

START_TEST(test_sub_add) {
    pm_hist a, b, d;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    record(&a, 100, 5);
    record(&b, 100, 2);
    record(&b, 5000, 1); /* b has a bucket a lacks: clamps to 0 */
    pm_hist_sub(&d, &a, &b);
    ck_assert_uint_eq(d.b[pm_bucket(100)], 3);
    ck_assert_uint_eq(d.b[pm_bucket(5000)], 0);
    ck_assert_uint_eq(d.sum, 0); /* 500 - 5200 clamps */
    pm_hist_add(&d, &b);
    ck_assert_uint_eq(pm_hist_count(&d), 6);
}
END_TEST

int main(void) {
    Suite *s = suite_create("payload_metrics_hist");
    TCase *tc = tcase_create("hist");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_edges);
    tcase_add_test(tc, test_bounds_consistent);
    tcase_add_test(tc, test_small_table_matches);
    tcase_add_test(tc, test_random_values_in_their_bucket);
    tcase_add_test(tc, test_coarse);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_quantiles);
    tcase_add_test(tc, test_sub_add);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
