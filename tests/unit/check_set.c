/* check_set.c -- unit tests for core/types/set.c: each encoding and each
 * conversion boundary with Valkey 8.0.1's defaults (intset entries,
 * listpack entries and member length, a non-integer into an intset), the
 * creation hints, SINTERSTORE's return to an intset, copies, random
 * members and samples, SSCAN's coverage, and 100k random operations
 * against a model under default and tiny thresholds. */
#include "types/set.h"

#include "keyspace_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static db_options opts;
static db_metrics metrics;

static void setup(void) {
    keyspace_fixture_setup(&opts, &metrics, 1, 0);
    opts.types.set_max_intset_entries = 512;
    opts.types.set_max_listpack_entries = 128;
    opts.types.set_max_listpack_value = 64;
    set_type_setup();
}

static void teardown(void) {
    db_teardown();
}

static const char *enc(const kobj *o) {
    return obj_encoding_name(o);
}

static int add_str(kobj *o, const char *s) {
    return set_add(o, s, strlen(s));
}

static int add_int(kobj *o, long long v) {
    char buf[24];
    int n = snprintf(buf, sizeof(buf), "%lld", v);
    return set_add(o, buf, (size_t)n);
}

/* The members iterated, each a member and each once (collected into a
 * table: a set cannot be looked up while it is being iterated). */
static size_t count_iter(const kobj *o) {
    set_iter it;
    set_member m;
    size_t n = 0;
    kobj *got = set_create_table();
    set_iter_init(&it, o);
    while (set_iter_next(&it, &m)) {
        EXPECT(set_add_member(got, &m) == 1);
        n++;
    }
    set_iter_reset(&it);
    set_iter_init(&it, got);
    while (set_iter_next(&it, &m))
        EXPECT(set_contains_member(o, &m));
    set_iter_reset(&it);
    obj_decref(got);
    return n;
}

START_TEST(test_intset_to_table_by_count) {
    kobj *o = set_create("1", 1, 1);
    ck_assert_str_eq(enc(o), "intset");
    ck_assert_str_eq(obj_type_name(o), "set");
    for (int i = 0; i < 512; i++)
        ck_assert_int_eq(add_int(o, i * 7 - 1000), 1);
    ck_assert_int_eq(add_int(o, 7 - 1000), 0);
    ck_assert_str_eq(enc(o), "intset");
    ck_assert_int_eq(add_int(o, 1LL << 62), 1); /* the 513th */
    ck_assert_str_eq(enc(o), "hashtable");
    ck_assert_uint_eq(set_size(o), 513);
    ck_assert_uint_eq(count_iter(o), 513);
    ck_assert(set_contains(o, "-1000", 5));
    ck_assert_uint_eq(obj_type_of(o)->free_effort(o), 513);
    obj_decref(o);
}
END_TEST

START_TEST(test_intset_non_integer) {
    /* Small intset + a short string: listpack. */
    kobj *o = set_create("1", 1, 1);
    for (int i = 0; i < 127; i++)
        add_int(o, i);
    ck_assert_int_eq(add_str(o, "a"), 1);
    ck_assert_str_eq(enc(o), "listpack");
    ck_assert_uint_eq(set_size(o), 128);
    ck_assert(set_contains(o, "126", 3) && set_contains(o, "a", 1));
    ck_assert_int_eq(add_str(o, "b"), 1); /* the 129th */
    ck_assert_str_eq(enc(o), "hashtable");
    obj_decref(o);
    /* 128 integers already: no room in a listpack. */
    o = set_create("1", 1, 1);
    for (int i = 0; i < 128; i++)
        add_int(o, i);
    ck_assert_int_eq(add_str(o, "a"), 1);
    ck_assert_str_eq(enc(o), "hashtable");
    ck_assert_uint_eq(set_size(o), 129);
    obj_decref(o);
    /* A member longer than set-max-listpack-value. */
    char longer[66];
    memset(longer, 'x', 65);
    longer[65] = 0;
    o = set_create("1", 1, 1);
    add_int(o, 5);
    ck_assert_int_eq(add_str(o, longer), 1);
    ck_assert_str_eq(enc(o), "hashtable");
    obj_decref(o);
    /* Not canonical integers are strings. */
    o = set_create("1", 1, 1);
    add_int(o, 1);
    ck_assert_int_eq(add_str(o, "01"), 1);
    ck_assert_str_eq(enc(o), "listpack");
    ck_assert_int_eq(add_str(o, "1"), 0);
    ck_assert_uint_eq(set_size(o), 2);
    obj_decref(o);
    /* A value beyond 64 bits is a string. */
    o = set_create("1", 1, 1);
    add_int(o, 1);
    ck_assert_int_eq(add_str(o, "18446744073709551616"), 1);
    ck_assert_str_eq(enc(o), "listpack");
    obj_decref(o);
}
END_TEST

START_TEST(test_listpack_boundaries) {
    char m[65];
    memset(m, 'm', 64);
    m[64] = 0;
    kobj *o = set_create("a", 1, 1);
    ck_assert_str_eq(enc(o), "listpack");
    ck_assert_int_eq(add_str(o, m), 1); /* exactly 64 bytes */
    ck_assert_str_eq(enc(o), "listpack");
    for (int i = 0; i < 127; i++) {
        char buf[16];
        snprintf(buf, sizeof(buf), "k%d", i);
        ck_assert_int_eq(add_str(o, buf), 1);
    }
    ck_assert_str_eq(enc(o), "listpack");
    ck_assert_uint_eq(set_size(o), 128);
    ck_assert_int_eq(add_str(o, "k0"), 0);
    ck_assert_int_eq(add_str(o, "last"), 1);
    ck_assert_str_eq(enc(o), "hashtable");
    ck_assert_uint_eq(count_iter(o), 129);
    obj_decref(o);
    /* A 65-byte member converts a small listpack. */
    o = set_create("a", 1, 1);
    add_str(o, "a");
    char m65[66];
    memset(m65, 'z', 65);
    m65[65] = 0;
    add_str(o, m65);
    ck_assert_str_eq(enc(o), "hashtable");
    ck_assert(set_contains(o, m65, 65) && set_contains(o, "a", 1));
    /* Never back: removing leaves it a table. */
    ck_assert_int_eq(set_remove(o, m65, 65), 1);
    ck_assert_str_eq(enc(o), "hashtable");
    obj_decref(o);
}
END_TEST

START_TEST(test_create_hints) {
    kobj *o = set_create("5", 1, 512);
    ck_assert_str_eq(enc(o), "intset");
    obj_decref(o);
    o = set_create("5", 1, 513);
    ck_assert_str_eq(enc(o), "hashtable");
    obj_decref(o);
    o = set_create("x", 1, 128);
    ck_assert_str_eq(enc(o), "listpack");
    obj_decref(o);
    o = set_create("x", 1, 129);
    ck_assert_str_eq(enc(o), "hashtable");
    obj_decref(o);
    o = set_create("x", 1, 1);
    set_reserve(o, 128);
    ck_assert_str_eq(enc(o), "listpack");
    set_reserve(o, 129);
    ck_assert_str_eq(enc(o), "hashtable");
    obj_decref(o);
    o = set_create("1", 1, 1);
    set_reserve(o, 512);
    ck_assert_str_eq(enc(o), "intset");
    set_reserve(o, 513);
    ck_assert_str_eq(enc(o), "hashtable");
    obj_decref(o);
    /* Live thresholds: CONFIG SET applies to the next write. */
    opts.types.set_max_intset_entries = 2;
    o = set_create("1", 1, 1);
    add_int(o, 1);
    add_int(o, 2);
    ck_assert_str_eq(enc(o), "intset");
    add_int(o, 3);
    ck_assert_str_eq(enc(o), "hashtable");
    obj_decref(o);
}
END_TEST

START_TEST(test_try_intset) {
    kobj *o = set_create_pack();
    for (int i = 0; i < 10; i++)
        add_int(o, i);
    ck_assert_str_eq(enc(o), "listpack");
    set_try_intset(o);
    ck_assert_str_eq(enc(o), "intset");
    ck_assert_uint_eq(set_size(o), 10);
    obj_decref(o);
    o = set_create_table();
    for (int i = 0; i < 200; i++)
        add_int(o, i);
    set_try_intset(o);
    ck_assert_str_eq(enc(o), "intset");
    ck_assert_uint_eq(count_iter(o), 200);
    obj_decref(o);
    o = set_create_pack();
    add_int(o, 1);
    add_str(o, "x");
    set_try_intset(o);
    ck_assert_str_eq(enc(o), "listpack");
    obj_decref(o);
    o = set_create_table();
    for (int i = 0; i < 600; i++)
        add_int(o, i);
    set_try_intset(o); /* too many for an intset */
    ck_assert_str_eq(enc(o), "hashtable");
    obj_decref(o);
}
END_TEST

/* Builds a set of n members in the encoding named. */
static kobj *make(const char *encoding, int n) {
    kobj *o;
    if (!strcmp(encoding, "intset")) {
        o = set_create_intset();
        for (int i = 0; i < n; i++)
            add_int(o, i * 3);
    } else {
        o = !strcmp(encoding, "listpack") ? set_create_pack() : set_create_table();
        for (int i = 0; i < n; i++) {
            char buf[16];
            snprintf(buf, sizeof(buf), i % 2 ? "m%d" : "%d", i);
            add_str(o, buf);
        }
    }
    ck_assert_str_eq(enc(o), encoding);
    return o;
}

static const char *const encodings[] = {"intset", "listpack", "hashtable"};

START_TEST(test_copy_and_usage) {
    for (int e = 0; e < 3; e++) {
        kobj *o = make(encodings[e], 100);
        kobj *c = obj_copy(o);
        ck_assert_str_eq(enc(c), encodings[e]);
        ck_assert_uint_eq(set_size(c), 100);
        set_iter it;
        set_member m;
        set_iter_init(&it, o);
        while (set_iter_next(&it, &m))
            EXPECT(set_contains_member(c, &m));
        set_iter_reset(&it);
        ck_assert_uint_gt(obj_mem_usage(o), 100);
        add_str(c, "only-in-copy");
        ck_assert(!set_contains(o, "only-in-copy", 12));
        obj_decref(c);
        obj_decref(o);
    }
}
END_TEST

typedef struct seen {
    kobj *set;
    kobj *got; /* a set of what fn received */
    size_t calls;
} seen;

static void seen_cb(void *priv, const set_member *m) {
    seen *s = priv;
    EXPECT(set_contains_member(s->set, m));
    set_add_member(s->got, m);
    s->calls++;
}

/* A table's members are estimated from `samples` of them: one member much
 * bigger than the others makes any one-member estimate wrong, a sample of
 * all of them is exact, and the default is OBJ_MEM_SAMPLES. */
START_TEST(test_usage_samples) {
    kobj *o = set_create_table();
    char buf[16];
    for (int i = 0; i < 200; i++) {
        snprintf(buf, sizeof(buf), "m%03d", i);
        add_str(o, buf);
    }
    char *big = malloc(10000);
    memset(big, 'b', 10000);
    set_add(o, big, 10000);
    size_t all = obj_mem_usage_sampled(o, OBJ_MEM_ALL_SAMPLES);
    ck_assert_uint_gt(all, 10000 + 200 * 3);
    ck_assert_uint_lt(all, 10000 + 200 * 64);
    ck_assert_uint_eq(obj_mem_usage_sampled(o, 201), all);
    ck_assert_uint_ne(obj_mem_usage_sampled(o, 1), all);
    ck_assert_uint_eq(obj_mem_usage(o), obj_mem_usage_sampled(o, OBJ_MEM_SAMPLES));
    /* Members of one length: any sample gives the exact figure. */
    set_remove(o, big, 10000);
    ck_assert_uint_eq(obj_mem_usage_sampled(o, 1), obj_mem_usage_sampled(o, OBJ_MEM_ALL_SAMPLES));
    free(big);
    obj_decref(o);
}
END_TEST

START_TEST(test_sample_and_scan) {
    for (int e = 0; e < 3; e++) {
        kobj *o = make(encodings[e], e == 2 ? 1000 : 100);
        size_t n = set_size(o);
        size_t counts[] = {1, 5, n / 3, n / 2, n - 1};
        for (size_t k = 0; k < 5; k++) {
            seen s = {o, set_create_table(), 0};
            set_sample(o, counts[k], seen_cb, &s);
            ck_assert_uint_eq(s.calls, counts[k]);
            ck_assert_uint_eq(set_size(s.got), counts[k]); /* distinct */
            obj_decref(s.got);
        }
        seen s = {o, set_create_table(), 0};
        size_t cursor = 0;
        int rounds = 0;
        do {
            cursor = set_scan(o, cursor, 10, seen_cb, &s);
            rounds++;
        } while (cursor);
        ck_assert_uint_eq(set_size(s.got), n);
        if (e < 2) ck_assert_int_eq(rounds, 1); /* compact: all at once */
        obj_decref(s.got);
        for (int i = 0; i < 100; i++) {
            set_member m;
            set_random(o, &m);
            EXPECT(set_contains_member(o, &m));
        }
        obj_decref(o);
    }
}
END_TEST

/* Draws from a 10-member table land evenly (the SRANDMEMBER histogram
 * test's chi-square bound). */
START_TEST(test_random_fair) {
    kobj *o = set_create_table();
    for (int i = 0; i < 10; i++)
        add_int(o, i);
    int hits[10] = {0};
    for (int i = 0; i < 10000; i++) {
        set_member m;
        set_random(o, &m);
        long long v;
        ck_assert(str_to_ll(m.s, m.len, &v));
        hits[v]++;
    }
    double chi = 0;
    for (int i = 0; i < 10; i++)
        chi += (hits[i] - 1000.0) * (hits[i] - 1000.0) / 1000.0;
    ck_assert_msg(chi < 40, "chi-square %f", chi);
    obj_decref(o);
}
END_TEST

START_TEST(test_pop) {
    for (int e = 0; e < 3; e++) {
        int n = e == 1 ? 100 : 300;
        kobj *o = make(encodings[e], n);
        kobj *got = set_create_table();
        while (set_size(o)) {
            kobj *m = set_pop_random(o);
            char buf[24];
            size_t len;
            const char *s = obj_str(m, buf, &len);
            EXPECT(set_add(got, s, len) == 1);
            EXPECT(!set_contains(o, s, len));
            obj_decref(m);
        }
        ck_assert_uint_eq(set_size(got), (size_t)n);
        obj_decref(got);
        obj_decref(o);
    }
}
END_TEST

/* The model: a flag per pool member. Members are integers of every width,
 * short strings and long ones, so every conversion happens. */
#define POOL 700

static const char *pool_member(int i, char *buf, size_t *len) {
    if (i < 400)
        *len =
            (size_t)snprintf(buf, 100, "%lld", (long long)(i - 200) * (i % 3 ? 1 : 100000000007LL));
    else if (i < 690)
        *len = (size_t)snprintf(buf, 100, "s%d", i);
    else
        *len = (size_t)snprintf(buf, 100, "%0*d", 70, i); /* too long for a listpack */
    return buf;
}

static void random_model(unsigned seed) {
    unsigned char in[POOL] = {0};
    size_t count = 0;
    kobj *o = set_create("0", 1, 1);
    srand(seed);
    int converted[3] = {0};
    for (int op = 0; op < 100000; op++) {
        int i = rand() % 400; /* integers most of the time */
        if (rand() % 10 == 0) i = rand() % POOL;
        char buf[100];
        size_t len;
        const char *s = pool_member(i, buf, &len);
        int r = rand() % 4;
        if (r == 0) {
            EXPECT(set_contains(o, s, len) == in[i]);
        } else if (r == 1 || r == 2) {
            EXPECT(set_add(o, s, len) == !in[i]);
            count += !in[i];
            in[i] = 1;
        } else {
            EXPECT(set_remove(o, s, len) == in[i]);
            count -= in[i];
            in[i] = 0;
        }
        EXPECT(set_size(o) == count);
        if (count == 0) {
            /* An empty set is never kept: start over, as a key would. */
            obj_decref(o);
            o = set_create(s, len, 1);
        }
        converted[o->encoding == OBJ_ENC_INTSET ? 0 : o->encoding == OBJ_ENC_LISTPACK ? 1 : 2] = 1;
        if (op % 5000 == 0) {
            EXPECT(count_iter(o) == count);
            if (count) {
                set_member m;
                set_random(o, &m);
                EXPECT(set_contains_member(o, &m));
            }
        }
    }
    for (int i = 0; i < POOL; i++) {
        char buf[100];
        size_t len;
        const char *s = pool_member(i, buf, &len);
        EXPECT(set_contains(o, s, len) == in[i]);
    }
    ck_assert(converted[0] && converted[2]);
    obj_decref(o);
}

START_TEST(test_random_model_defaults) {
    random_model(7);
}
END_TEST

START_TEST(test_random_model_tiny) {
    opts.types.set_max_intset_entries = 8;
    opts.types.set_max_listpack_entries = 8;
    opts.types.set_max_listpack_value = 4;
    random_model(8);
}
END_TEST

static Suite *set_suite(void) {
    Suite *s = suite_create("set");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_intset_to_table_by_count);
    tcase_add_test(tc, test_intset_non_integer);
    tcase_add_test(tc, test_listpack_boundaries);
    tcase_add_test(tc, test_create_hints);
    tcase_add_test(tc, test_try_intset);
    tcase_add_test(tc, test_copy_and_usage);
    tcase_add_test(tc, test_usage_samples);
    tcase_add_test(tc, test_sample_and_scan);
    tcase_add_test(tc, test_random_fair);
    tcase_add_test(tc, test_pop);
    tcase_add_test(tc, test_random_model_defaults);
    tcase_add_test(tc, test_random_model_tiny);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(set_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
