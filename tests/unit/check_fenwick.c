/* check_fenwick.c -- unit tests for core/ds/fenwick.c: prefix sums and rank
 * lookups against a plain array, over 16384 counters (the per-slot layout)
 * and small sizes that are not powers of two. */
#include "ds/fenwick.h"

#include <check.h>
#include <stdlib.h>

/* The naive answers. */
static long long naive_prefix(const long long *c, size_t i) {
    long long s = 0;
    for (size_t j = 0; j <= i; j++) s += c[j];
    return s;
}

static size_t naive_find(const long long *c, size_t n, long long k) {
    long long s = 0;
    for (size_t i = 0; i < n; i++) {
        s += c[i];
        if (s > k) return i;
    }
    return n;
}

static void check_against_naive(size_t n, int rounds) {
    fenwick *t = fenwick_create(n);
    long long *c = calloc(n, sizeof(*c));
    srand(12345 + (unsigned)n);
    for (int r = 0; r < rounds; r++) {
        size_t i = (size_t)rand() % n;
        long long d = rand() % 5;
        if (c[i] > 0 && rand() % 3 == 0) d = -1 - rand() % (int)c[i]; /* removes, never below 0 */
        fenwick_add(t, i, d);
        c[i] += d;
        size_t q = (size_t)rand() % n;
        ck_assert_int_eq(fenwick_prefix(t, q), naive_prefix(c, q));
        long long total = naive_prefix(c, n - 1);
        ck_assert_int_eq(fenwick_total(t), total);
        if (total > 0) {
            long long k = rand() % total;
            ck_assert_uint_eq(fenwick_find(t, k), naive_find(c, n, k));
        }
    }
    ck_assert_uint_eq(fenwick_find(t, fenwick_total(t)), n); /* past the end */
    ck_assert_uint_eq(fenwick_find(t, -1), n);
    free(c);
    fenwick_release(t);
}

START_TEST(test_small_sizes) {
    for (size_t n = 1; n <= 33; n++) check_against_naive(n, 300);
}
END_TEST

START_TEST(test_slots) {
    check_against_naive(16384, 3000);
}
END_TEST

/* Drawing ranks uniformly picks each counter in proportion to its count:
 * the fairness the keyspace's sampling relies on. */
START_TEST(test_find_is_proportional) {
    fenwick *t = fenwick_create(4);
    fenwick_add(t, 0, 1);
    fenwick_add(t, 2, 3);
    size_t hits[5] = {0};
    for (long long k = 0; k < 4; k++) hits[fenwick_find(t, k)]++;
    ck_assert_uint_eq(hits[0], 1);
    ck_assert_uint_eq(hits[1], 0);
    ck_assert_uint_eq(hits[2], 3);
    ck_assert_uint_eq(hits[3], 0);
    fenwick_release(t);
    ck_assert_ptr_null(fenwick_create(0));
}
END_TEST

/* The kvstore reports the tree in its memory usage. */
START_TEST(test_mem_usage) {
    ck_assert_uint_eq(fenwick_mem_usage(NULL), 0);
    fenwick *small = fenwick_create(1), *slots = fenwick_create(16384);
    ck_assert_uint_ge(fenwick_mem_usage(small), 2 * sizeof(long long));
    ck_assert_uint_ge(fenwick_mem_usage(slots), 16385 * sizeof(long long));
    ck_assert_uint_lt(fenwick_mem_usage(slots), 16385 * sizeof(long long) + 256);
    fenwick_release(small);
    fenwick_release(slots);
}
END_TEST

static Suite *fenwick_suite(void) {
    Suite *s = suite_create("fenwick");
    TCase *tc = tcase_create("fenwick");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_small_sizes);
    tcase_add_test(tc, test_slots);
    tcase_add_test(tc, test_find_is_proportional);
    tcase_add_test(tc, test_mem_usage);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(fenwick_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
