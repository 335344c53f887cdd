/* check_vec.c -- unit tests for core/common/vec.c: items keep their
 * values and order across growth, for item sizes that are not powers of
 * two, and vec_free leaves an empty vector that can be reused. */
#include "common/vec.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

typedef struct odd_item {
    char tag[7];
    long long n;
} odd_item;

START_TEST(test_push_keeps_order_across_growth) {
    vec v = {0};
    for (long long i = 0; i < 10000; i++) {
        odd_item *it = vec_push(&v, sizeof(*it));
        memset(it->tag, (int)('a' + i % 26), sizeof(it->tag));
        it->n = i * 3;
    }
    ck_assert_uint_eq(v.count, 10000);
    ck_assert_uint_ge(v.cap, v.count);
    const odd_item *items = v.items;
    for (long long i = 0; i < 10000; i++) {
        ck_assert_int_eq(items[i].n, i * 3);
        ck_assert_int_eq(items[i].tag[6], 'a' + i % 26);
    }
    vec_free(&v);
}
END_TEST

START_TEST(test_free_empties_and_allows_reuse) {
    vec v = {0};
    vec_free(&v); /* an empty vector frees nothing */
    *(int *)vec_push(&v, sizeof(int)) = 7;
    vec_free(&v);
    ck_assert_ptr_null(v.items);
    ck_assert_uint_eq(v.count, 0);
    ck_assert_uint_eq(v.cap, 0);
    *(int *)vec_push(&v, sizeof(int)) = 9;
    ck_assert_uint_eq(v.count, 1);
    ck_assert_int_eq(((int *)v.items)[0], 9);
    vec_free(&v);
}
END_TEST

static Suite *vec_suite(void) {
    Suite *s = suite_create("vec");
    TCase *tc = tcase_create("vec");
    tcase_add_test(tc, test_push_keeps_order_across_growth);
    tcase_add_test(tc, test_free_empties_and_allows_reuse);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(vec_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
