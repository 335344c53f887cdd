/* check_idmap.c -- unit tests for core/ds/idmap.c: the edge cases of an
 * empty and a one-entry map, then random insertions, deletions, lookups
 * and seeks in both directions checked against a sorted array, with the
 * whole map walked both ways after each batch, in a small key space (many
 * duplicates and misses) and a wide one. */
#include "ds/idmap.h"

#include "common/common.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The model: sorted keys; key k maps to the value k.lo * 2 + 1 (never NULL). */
typedef struct model {
    idmap_key *keys;
    size_t n;
} model;

static void *val_of(idmap_key k) {
    return (void *)(uintptr_t)(k.hi * 1000003u + k.lo * 2 + 1);
}

static size_t model_lower(const model *md, idmap_key k) {
    size_t lo = 0, hi = md->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (idmap_key_cmp(md->keys[mid], k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int model_has(const model *md, idmap_key k) {
    size_t p = model_lower(md, k);
    return p < md->n && idmap_key_cmp(md->keys[p], k) == 0;
}

static void model_insert(model *md, idmap_key k) {
    size_t p = model_lower(md, k);
    memmove(&md->keys[p + 1], &md->keys[p], (md->n - p) * sizeof(idmap_key));
    md->keys[p] = k;
    md->n++;
}

static void model_delete(model *md, idmap_key k) {
    size_t p = model_lower(md, k);
    memmove(&md->keys[p], &md->keys[p + 1], (md->n - p - 1) * sizeof(idmap_key));
    md->n--;
}

static void check_walks(const idmap *m, const model *md) {
    ck_assert_uint_eq(idmap_count(m), md->n);
    idmap_iter it;
    size_t i = 0;
    for (idmap_seek_first(&it, m); idmap_iter_valid(&it); idmap_iter_next(&it), i++) {
        ck_assert_uint_lt(i, md->n);
        ck_assert_int_eq(idmap_key_cmp(idmap_iter_key(&it), md->keys[i]), 0);
        ck_assert_ptr_eq(idmap_iter_val(&it), val_of(md->keys[i]));
    }
    ck_assert_uint_eq(i, md->n);
    for (idmap_seek_last(&it, m); idmap_iter_valid(&it); idmap_iter_prev(&it)) {
        ck_assert_uint_gt(i, 0);
        i--;
        ck_assert_int_eq(idmap_key_cmp(idmap_iter_key(&it), md->keys[i]), 0);
    }
    ck_assert_uint_eq(i, 0);
}

static void check_seeks(const idmap *m, const model *md, idmap_key k) {
    idmap_iter it;
    size_t p = model_lower(md, k);
    idmap_seek_ge(&it, m, k);
    if (p == md->n) {
        ck_assert(!idmap_iter_valid(&it));
    } else {
        ck_assert(idmap_iter_valid(&it));
        ck_assert_int_eq(idmap_key_cmp(idmap_iter_key(&it), md->keys[p]), 0);
    }
    /* The last key <= k: at p when k is present, else before p. */
    size_t le = p < md->n && idmap_key_cmp(md->keys[p], k) == 0 ? p + 1 : p;
    idmap_seek_le(&it, m, k);
    if (le == 0) {
        ck_assert(!idmap_iter_valid(&it));
    } else {
        ck_assert(idmap_iter_valid(&it));
        ck_assert_int_eq(idmap_key_cmp(idmap_iter_key(&it), md->keys[le - 1]), 0);
    }
}

static idmap_key rand_key(uint64_t space) {
    uint64_t r = (uint64_t)rand() * RAND_MAX + (uint64_t)rand();
    r %= space;
    return (idmap_key){r / 16, r % 16};
}

/* ops random operations over keys drawn from [0, space); inserts weigh
 * insert_pct percent. */
static void run_random(unsigned seed, uint64_t space, int ops, int insert_pct) {
    srand(seed);
    idmap m;
    idmap_init(&m);
    model md = {calloc((size_t)ops + 1, sizeof(idmap_key)), 0};
    for (int op = 0; op < ops; op++) {
        idmap_key k = rand_key(space);
        int r = rand() % 100;
        if (r < insert_pct) {
            int has = model_has(&md, k);
            ck_assert_int_eq(idmap_insert(&m, k, val_of(k)), has ? K_ERR : K_OK);
            if (!has) model_insert(&md, k);
        } else if (r < 90) {
            int has = model_has(&md, k);
            void *v = idmap_delete(&m, k);
            ck_assert_ptr_eq(v, has ? val_of(k) : NULL);
            if (has) model_delete(&md, k);
        } else {
            ck_assert_ptr_eq(idmap_find(&m, k), model_has(&md, k) ? val_of(k) : NULL);
            check_seeks(&m, &md, k);
        }
        if (op % 5000 == 0) check_walks(&m, &md);
    }
    check_walks(&m, &md);
    /* Drain it in random order: every node goes. */
    while (md.n) {
        idmap_key k = md.keys[(size_t)rand() % md.n];
        ck_assert_ptr_eq(idmap_delete(&m, k), val_of(k));
        model_delete(&md, k);
        if (md.n % 4000 == 0) check_walks(&m, &md);
    }
    ck_assert_uint_eq(idmap_mem_usage(&m), 0);
    ck_assert_ptr_null(m.root);
    idmap_clear(&m, NULL);
    free(md.keys);
}

START_TEST(test_empty) {
    idmap m;
    idmap_init(&m);
    idmap_iter it;
    idmap_seek_first(&it, &m);
    ck_assert(!idmap_iter_valid(&it));
    idmap_seek_ge(&it, &m, (idmap_key){1, 1});
    ck_assert(!idmap_iter_valid(&it));
    idmap_seek_le(&it, &m, (idmap_key){1, 1});
    ck_assert(!idmap_iter_valid(&it));
    ck_assert_ptr_null(idmap_delete(&m, (idmap_key){1, 1}));
    ck_assert_ptr_null(idmap_find(&m, (idmap_key){1, 1}));
    ck_assert_int_eq(idmap_insert(&m, (idmap_key){UINT64_MAX, UINT64_MAX}, &m), K_OK);
    ck_assert_int_eq(idmap_insert(&m, (idmap_key){UINT64_MAX, UINT64_MAX}, &m), K_ERR);
    idmap_seek_le(&it, &m, (idmap_key){UINT64_MAX, UINT64_MAX - 1});
    ck_assert(!idmap_iter_valid(&it));
    idmap_seek_ge(&it, &m, (idmap_key){0, 0});
    ck_assert(idmap_iter_valid(&it));
    ck_assert_ptr_eq(idmap_iter_val(&it), &m);
    idmap_iter_next(&it);
    ck_assert(!idmap_iter_valid(&it));
    ck_assert_uint_gt(idmap_mem_usage(&m), 0);
    ck_assert_ptr_eq(idmap_delete(&m, (idmap_key){UINT64_MAX, UINT64_MAX}), &m);
    ck_assert_uint_eq(idmap_count(&m), 0);
    ck_assert_uint_eq(idmap_mem_usage(&m), 0);
}
END_TEST

static int freed;
static void count_free(void *v) {
    K_UNUSED(v);
    freed++;
}

START_TEST(test_sequential_and_clear) {
    idmap m;
    idmap_init(&m);
    for (uint64_t i = 0; i < 100000; i++)
        ck_assert_int_eq(idmap_insert(&m, (idmap_key){i, 0}, (void *)(uintptr_t)(i + 1)), K_OK);
    /* Appends fill the nodes: about 25 bytes an entry (a full leaf's
     * 32 keys and values), half full would be 50. */
    ck_assert_uint_le(idmap_mem_usage(&m) / idmap_count(&m), 28);
    /* Acknowledging from the front, as consumers usually do. */
    for (uint64_t i = 0; i < 50000; i++)
        ck_assert_ptr_eq(idmap_delete(&m, (idmap_key){i, 0}), (void *)(uintptr_t)(i + 1));
    idmap_iter it;
    idmap_seek_first(&it, &m);
    ck_assert_uint_eq(idmap_iter_key(&it).hi, 50000);
    freed = 0;
    idmap_clear(&m, count_free);
    ck_assert_int_eq(freed, 50000);
    ck_assert_uint_eq(idmap_count(&m), 0);
}
END_TEST

START_TEST(test_random_small_space) {
    run_random(1, 600, 100000, 55);
}
END_TEST

START_TEST(test_random_wide_space) {
    run_random(2, 1u << 30, 20000, 70);
}
END_TEST

static Suite *idmap_suite(void) {
    Suite *s = suite_create("idmap");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_sequential_and_clear);
    tcase_add_test(tc, test_random_small_space);
    tcase_add_test(tc, test_random_wide_space);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(idmap_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
