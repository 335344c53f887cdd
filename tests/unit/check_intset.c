/* check_intset.c -- unit tests for core/ds/intset.c: each width and the
 * widening between them (a wider value lands first or last), removal,
 * lookups of values wider than the set, validation of bad buffers, and
 * 100k random operations against a model. */
#include "ds/intset.h"

#include "common/kmem.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) ck_assert_msg(0, "expected: %s", #cond);                                      \
    } while (0)

static intset *add(intset *s, int64_t v, int want) {
    int added;
    s = intset_add(s, v, &added);
    ck_assert_int_eq(added, want);
    return s;
}

/* Members are strictly ascending. */
static void check_sorted(const intset *s) {
    for (size_t i = 1; i < intset_count(s); i++)
        EXPECT(intset_get(s, i - 1) < intset_get(s, i));
}

START_TEST(test_empty) {
    intset *s = intset_new();
    ck_assert_uint_eq(intset_count(s), 0);
    ck_assert_uint_eq(s->width, 2);
    ck_assert_uint_eq(intset_bytes(s), 8);
    ck_assert(!intset_contains(s, 0));
    int removed;
    s = intset_remove(s, 5, &removed);
    ck_assert_int_eq(removed, 0);
    intset_free(s);
}
END_TEST

START_TEST(test_widths) {
    intset *s = intset_new();
    s = add(s, 32767, 1);
    s = add(s, -32768, 1);
    ck_assert_uint_eq(s->width, 2);
    s = add(s, 32768, 1); /* needs 4 bytes: last */
    ck_assert_uint_eq(s->width, 4);
    ck_assert_int_eq(intset_max(s), 32768);
    s = add(s, INT32_MIN, 1);
    ck_assert_uint_eq(s->width, 4);
    s = add(s, (int64_t)INT32_MIN - 1, 1); /* needs 8 bytes: first */
    ck_assert_uint_eq(s->width, 8);
    ck_assert_int_eq(intset_min(s), (int64_t)INT32_MIN - 1);
    s = add(s, INT64_MAX, 1);
    s = add(s, INT64_MIN, 1);
    s = add(s, INT64_MIN, 0);
    ck_assert_uint_eq(intset_count(s), 7);
    ck_assert_uint_eq(intset_bytes(s), 8 + 7 * 8);
    check_sorted(s);
    ck_assert_int_eq(intset_get(s, 0), INT64_MIN);
    ck_assert_int_eq(intset_get(s, 6), INT64_MAX);
    ck_assert(intset_contains(s, -32768) && intset_contains(s, 32767));
    /* Removing the wide members keeps the width (never narrowed). */
    int removed;
    s = intset_remove(s, INT64_MAX, &removed);
    ck_assert_int_eq(removed, 1);
    s = intset_remove(s, INT64_MIN, &removed);
    ck_assert_uint_eq(s->width, 8);
    ck_assert_uint_eq(intset_count(s), 5);
    check_sorted(s);
    intset_free(s);
}
END_TEST

START_TEST(test_wider_lookup) {
    intset *s = intset_new();
    for (int i = -100; i < 100; i++)
        s = add(s, i * 3, 1);
    ck_assert_uint_eq(s->width, 2);
    ck_assert(!intset_contains(s, 1LL << 40));
    ck_assert(!intset_contains(s, -(1LL << 40)));
    ck_assert(!intset_contains(s, 1));
    ck_assert(intset_contains(s, 297));
    int removed;
    s = intset_remove(s, 1LL << 40, &removed);
    ck_assert_int_eq(removed, 0);
    intset *d = intset_dup(s);
    ck_assert_uint_eq(intset_bytes(d), intset_bytes(s));
    ck_assert(memcmp(d, s, intset_bytes(s)) == 0);
    intset_free(d);
    intset_free(s);
}
END_TEST

START_TEST(test_validate) {
    intset *s = intset_new();
    for (int i = 0; i < 10; i++)
        s = add(s, i * 1000, 1);
    unsigned char *buf = (unsigned char *)s;
    size_t n = intset_bytes(s);
    ck_assert(intset_validate(buf, n));
    ck_assert(!intset_validate(buf, n - 1));
    ck_assert(!intset_validate(buf, 4));
    unsigned char *bad = km_alloc(n);
    memcpy(bad, buf, n);
    bad[0] = 3; /* unknown width */
    ck_assert(!intset_validate(bad, n));
    memcpy(bad, buf, n);
    memcpy(bad + 8, bad + 10, 2); /* two equal members */
    ck_assert(!intset_validate(bad, n));
    km_free(bad);
    intset_free(s);
}
END_TEST

/* Values of every width, so random operations widen the set at any time. */
static int64_t pool_value(size_t i) {
    static const int64_t base[] = {0, 1000, 40000, -70000, 3000000000LL, -5000000000LL};
    return base[i % 6] + (int64_t)(i / 6) * ((i & 1) ? -1 : 1);
}

START_TEST(test_random_model) {
    enum { POOL = 3000, OPS = 100000 };
    unsigned char *in = calloc(POOL, 1);
    size_t count = 0;
    intset *s = intset_new();
    srand(12345);
    for (int op = 0; op < OPS; op++) {
        size_t i = (size_t)rand() % POOL;
        int64_t v = pool_value(i);
        int r = rand() % 3, done;
        if (r == 0) {
            EXPECT(intset_contains(s, v) == in[i]);
        } else if (r == 1) {
            s = intset_add(s, v, &done);
            EXPECT(done == !in[i]);
            count += !in[i];
            in[i] = 1;
        } else {
            s = intset_remove(s, v, &done);
            EXPECT(done == in[i]);
            count -= in[i];
            in[i] = 0;
        }
        EXPECT(intset_count(s) == count);
        if (op % 10000 == 0) {
            check_sorted(s);
            EXPECT(intset_validate((unsigned char *)s, intset_bytes(s)));
        }
    }
    for (size_t i = 0; i < POOL; i++)
        EXPECT(intset_contains(s, pool_value(i)) == in[i]);
    check_sorted(s);
    free(in);
    intset_free(s);
}
END_TEST

static Suite *intset_suite(void) {
    Suite *s = suite_create("intset");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_widths);
    tcase_add_test(tc, test_wider_lookup);
    tcase_add_test(tc, test_validate);
    tcase_add_test(tc, test_random_model);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(intset_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
