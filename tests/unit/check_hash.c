/* check_hash.c -- unit tests for core/types/hash.c: both encodings, each
 * conversion boundary (entries, field and value length, a TTL), 100k random
 * operations against a simple model, field expiry (lazy and active, and
 * the keyspace hook that finds volatile hashes under new names), the
 * type's operations (copy, MEMORY USAGE, free effort). */
#include "types/hash.h"

#include "common/common.h"
#include "common/kmem.h"
#include "event/event.h"
#include "keyspace/db.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyspace_fixture.h"

static db_options opts;
static db_metrics stats;
static types_metrics tmetrics;

static void setup(void) {
    keyspace_fixture_setup(&opts, &stats, 16, 0);
    tmetrics = (types_metrics){0};
    opts.types.hash_max_listpack_entries = 128;
    opts.types.hash_max_listpack_value = 64;
    hash_type_setup(&tmetrics);
}

static void teardown(void) {
    hash_type_teardown();
    db_teardown();
}

static int set_s(kobj *o, const char *f, const char *v) {
    return hash_set(o, f, strlen(f), v, strlen(v), 0, HASH_NO_EXPIRE);
}

static int value_is(kobj *o, const char *f, const char *v) {
    hash_str s;
    if (!hash_get(o, f, strlen(f), &s)) return v == NULL;
    return v && s.len == strlen(v) && memcmp(s.s, v, s.len) == 0;
}

START_TEST(test_listpack_basics) {
    kobj *o = hash_new();
    EXPECT(hash_is_listpack(o) && hash_length(o) == 0);
    EXPECT(set_s(o, "a", "1") == 1);
    EXPECT(set_s(o, "b", "two") == 1);
    EXPECT(set_s(o, "a", "uno") == 0);
    EXPECT(hash_length(o) == 2);
    EXPECT(value_is(o, "a", "uno") && value_is(o, "b", "two") && value_is(o, "c", NULL));
    EXPECT(set_s(o, "n", "12345") == 1 && value_is(o, "n", "12345"));
    EXPECT(hash_delete(o, "b", 1) == 1 && hash_delete(o, "b", 1) == 0);
    EXPECT(hash_length(o) == 2 && hash_is_listpack(o));
    EXPECT(strcmp(obj_encoding_name(o), "listpack") == 0);
    EXPECT(strcmp(obj_type_name(o), "hash") == 0);
    EXPECT(obj_type_of(o)->free_effort(o) == 1);
    obj_decref(o);
}
END_TEST

START_TEST(test_entries_boundary) {
    kobj *o = hash_new();
    char f[32];
    for (int i = 0; i < 128; i++) {
        snprintf(f, sizeof(f), "f%d", i);
        set_s(o, f, "v");
    }
    EXPECT(hash_is_listpack(o) && hash_length(o) == 128);
    set_s(o, "f0", "updated"); /* an update adds no entry */
    EXPECT(hash_is_listpack(o));
    set_s(o, "f128", "v");
    EXPECT(!hash_is_listpack(o) && hash_length(o) == 129);
    EXPECT(strcmp(obj_encoding_name(o), "hashtable") == 0);
    EXPECT(value_is(o, "f0", "updated") && value_is(o, "f127", "v"));
    EXPECT(obj_type_of(o)->free_effort(o) == 129);
    /* never back */
    for (int i = 0; i < 129; i++) {
        snprintf(f, sizeof(f), "f%d", i);
        EXPECT(hash_delete(o, f, strlen(f)));
    }
    EXPECT(hash_length(o) == 0 && !hash_is_listpack(o));
    obj_decref(o);
}
END_TEST

START_TEST(test_value_length_boundary) {
    char big[66];
    memset(big, 'x', sizeof(big));
    kobj *o = hash_new();
    hash_set(o, "f", 1, big, 64, 0, HASH_NO_EXPIRE);
    hash_set(o, big, 64, "v", 1, 0, HASH_NO_EXPIRE);
    EXPECT(hash_is_listpack(o));
    hash_set(o, "g", 1, big, 65, 0, HASH_NO_EXPIRE);
    EXPECT(!hash_is_listpack(o));
    obj_decref(o);
    o = hash_new();
    hash_set(o, big, 65, "v", 1, 0, HASH_NO_EXPIRE);
    EXPECT(!hash_is_listpack(o));
    hash_str s;
    EXPECT(hash_get(o, big, 65, &s) && s.len == 1);
    obj_decref(o);
    /* the directives are read live */
    opts.types.hash_max_listpack_entries = 1;
    o = hash_new();
    set_s(o, "a", "1");
    EXPECT(hash_is_listpack(o));
    set_s(o, "b", "1");
    EXPECT(!hash_is_listpack(o));
    obj_decref(o);
}
END_TEST

/* The model: fields f0..f(U-1), a value per present field. */
#define U 300
typedef struct model {
    int present[U];
    char val[U][80];
    size_t n;
} model;

static void check_against(kobj *o, const model *m) {
    EXPECT(hash_length(o) == m->n);
    size_t seen = 0;
    hash_iter it;
    hash_str f, v;
    hash_iter_init(&it, o);
    while (hash_iter_next(&it, &f, &v)) {
        char key[16];
        snprintf(key, sizeof(key), "%.*s", (int)f.len, f.s);
        int i = atoi(key + 1);
        ck_assert(i >= 0 && i < U && m->present[i]);
        ck_assert(v.len == strlen(m->val[i]) && memcmp(v.s, m->val[i], v.len) == 0);
        seen++;
    }
    hash_iter_reset(&it);
    EXPECT(seen == m->n);
}

static void random_ops(int universe, int maxlen) {
    static model m;
    memset(&m, 0, sizeof(m));
    kobj *o = hash_new();
    srandom(42);
    int converted_at = -1;
    for (int op = 0; op < 100000; op++) {
        int i = (int)(random() % universe);
        char f[16];
        snprintf(f, sizeof(f), "f%d", i);
        int r = (int)(random() % 10);
        if (r < 5) {
            char v[80];
            int len = (int)(random() % (maxlen + 1));
            if (random() % 3 == 0)
                len = snprintf(v, sizeof(v), "%ld", random() - RAND_MAX / 2);
            else {
                for (int k = 0; k < len; k++)
                    v[k] = (char)('a' + random() % 26);
                v[len] = 0;
            }
            int created = hash_set(o, f, strlen(f), v, (size_t)len, 0, HASH_NO_EXPIRE);
            ck_assert_int_eq(created, !m.present[i]);
            if (!m.present[i]) m.n++;
            m.present[i] = 1;
            strcpy(m.val[i], v);
        } else if (r < 8) {
            ck_assert_int_eq(hash_delete(o, f, strlen(f)), m.present[i]);
            if (m.present[i]) m.n--;
            m.present[i] = 0;
        } else {
            EXPECT(value_is(o, f, m.present[i] ? m.val[i] : NULL));
        }
        if (converted_at < 0 && !hash_is_listpack(o)) converted_at = op;
        if (op % 5000 == 0) check_against(o, &m);
        if (m.n && op % 97 == 0) {
            hash_str rf, rv;
            hash_random(o, &rf, &rv);
            char key[16];
            snprintf(key, sizeof(key), "%.*s", (int)rf.len, rf.s);
            ck_assert(m.present[atoi(key + 1)]);
        }
    }
    check_against(o, &m);
    if (universe > 128 || maxlen > 64)
        EXPECT(converted_at >= 0);
    else
        EXPECT(hash_is_listpack(o));
    obj_decref(o);
}

START_TEST(test_random_ops_listpack) {
    random_ops(100, 60);
}
END_TEST

START_TEST(test_random_ops_converting) {
    random_ops(U, 70);
}
END_TEST

static int scan_seen[1000];

static void scan_mark(void *priv, const hash_str *f, const hash_str *v) {
    char key[16];
    snprintf(key, sizeof(key), "%.*s", (int)f->len, f->s);
    scan_seen[atoi(key + 1)]++;
    (*(int *)priv)++;
    ck_assert(v->len == 1 && v->s[0] == 'v');
}

/* A listpack hash comes back whole with cursor 0; a hashtable by steps
 * that together return every field. */
START_TEST(test_scan) {
    for (int big = 0; big < 2; big++) {
        kobj *o = hash_new();
        int n = big ? 1000 : 50;
        char f[16];
        for (int i = 0; i < n; i++) {
            snprintf(f, sizeof(f), "f%d", i);
            set_s(o, f, "v");
        }
        memset(scan_seen, 0, sizeof(scan_seen));
        int calls = 0, steps = 0;
        size_t cursor = 0;
        do {
            cursor = hash_scan(o, cursor, scan_mark, &calls);
            steps++;
        } while (cursor);
        EXPECT(big ? steps > 1 : steps == 1);
        for (int i = 0; i < n; i++)
            ck_assert(scan_seen[i] >= 1);
        EXPECT(calls >= n);
        obj_decref(o);
    }
}
END_TEST

/* ---- field expiry ---- */

START_TEST(test_field_expiry) {
    kobj *o = hash_new();
    set_s(o, "a", "1");
    set_s(o, "b", "2");
    set_s(o, "c", "3");
    EXPECT(hash_get_expire(o, "a", 1) == HASH_NO_EXPIRE);
    EXPECT(hash_get_expire(o, "z", 1) == -2);
    EXPECT(hash_set_expire(o, "z", 1, T0 + 100, 0) == -2);
    EXPECT(hash_is_listpack(o));
    /* a condition refused on a listpack hash leaves it alone */
    EXPECT(hash_set_expire(o, "a", 1, T0 + 100, HASH_EXP_XX) == 0);
    EXPECT(hash_set_expire(o, "a", 1, T0 + 100, HASH_EXP_GT) == 0);
    EXPECT(hash_is_listpack(o));
    EXPECT(hash_set_expire(o, "a", 1, T0 + 100, HASH_EXP_NX) == 1);
    EXPECT(!hash_is_listpack(o) && hash_volatile_count(o) == 1);
    EXPECT(hash_get_expire(o, "a", 1) == T0 + 100);
    EXPECT(hash_set_expire(o, "a", 1, T0 + 50, HASH_EXP_NX) == 0);
    EXPECT(hash_set_expire(o, "a", 1, T0 + 50, HASH_EXP_GT) == 0);
    EXPECT(hash_set_expire(o, "a", 1, T0 + 200, HASH_EXP_LT) == 0);
    EXPECT(hash_set_expire(o, "a", 1, T0 + 50, HASH_EXP_LT) == 1);
    EXPECT(hash_set_expire(o, "a", 1, T0 + 300, HASH_EXP_GT | HASH_EXP_XX) == 1);
    EXPECT(hash_set_expire(o, "b", 1, T0 + 100, HASH_EXP_LT) == 1); /* no TTL = infinite */
    EXPECT(hash_volatile_count(o) == 2 && value_is(o, "a", "1"));
    /* HSET clears a TTL, KEEPTTL keeps it */
    hash_set(o, "b", 1, "22", 2, HASH_SET_KEEPTTL, HASH_NO_EXPIRE);
    EXPECT(hash_get_expire(o, "b", 1) == T0 + 100 && value_is(o, "b", "22"));
    set_s(o, "b", "222");
    EXPECT(hash_get_expire(o, "b", 1) == HASH_NO_EXPIRE && hash_volatile_count(o) == 1);
    EXPECT(hash_persist(o, "b", 1) == -1 && hash_persist(o, "z", 1) == -2);
    EXPECT(hash_persist(o, "a", 1) == 1 && hash_volatile_count(o) == 0);
    /* expiry of due fields only */
    hash_set(o, "d", 1, "4", 1, 0, T0 + 10);
    hash_set_expire(o, "c", 1, T0 + 20, 0);
    EXPECT(hash_volatile_count(o) == 2 && hash_length(o) == 4);
    EXPECT(hash_expire_due(o, T0 + 9) == 0);
    EXPECT(hash_expire_due(o, T0 + 10) == 1);
    EXPECT(value_is(o, "d", NULL) && value_is(o, "c", "3") && hash_length(o) == 3);
    kobj *copy = obj_copy(o);
    EXPECT(hash_get_expire(copy, "c", 1) == T0 + 20 && hash_length(copy) == 3);
    EXPECT(hash_expire_due(o, T0 + 25) == 1 && hash_length(o) == 2);
    EXPECT(hash_volatile_count(o) == 0 && hash_volatile_count(copy) == 1);
    /* deleting a volatile field forgets its TTL */
    EXPECT(hash_delete(copy, "c", 1) && hash_volatile_count(copy) == 0);
    obj_decref(copy);
    obj_decref(o);
}
END_TEST

/* A table field's header is short (two one-byte lengths) for a field under
 * 128 bytes with a value under 256 and no TTL, long otherwise: each length
 * at and past each boundary, with a TTL added (long) and removed (short
 * again), reads back the same. */
START_TEST(test_field_headers) {
    static const size_t flens[] = {0, 1, 127, 128, 300};
    static const size_t vlens[] = {0, 1, 255, 256, 300};
    opts.types.hash_max_listpack_entries = 0;
    kobj *o = hash_new();
    char f[400], v[400];
    size_t n = 0;
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 5; j++) {
            memset(f, '0' + (int)i, flens[i]);
            if (flens[i]) f[0] = (char)('a' + j);
            for (size_t k = 0; k < vlens[j]; k++)
                v[k] = (char)('A' + (k + i + j) % 26);
            if (flens[i] == 0 && j > 0) continue; /* one empty field */
            EXPECT(hash_set(o, f, flens[i], v, vlens[j], 0, HASH_NO_EXPIRE) == 1);
            n++;
            EXPECT(!hash_is_listpack(o));
            for (int round = 0; round < 3; round++) {
                if (round == 1) EXPECT(hash_set_expire(o, f, flens[i], T0 + 1000, 0) == 1);
                if (round == 2) EXPECT(hash_persist(o, f, flens[i]) == 1);
                hash_str got;
                EXPECT(hash_get(o, f, flens[i], &got));
                EXPECT(got.len == vlens[j] && (got.len == 0 || memcmp(got.s, v, got.len) == 0));
                EXPECT(hash_get_expire(o, f, flens[i]) ==
                       (round == 1 ? T0 + 1000 : HASH_NO_EXPIRE));
            }
        }
    EXPECT(hash_length(o) == n);
    size_t seen = 0;
    hash_iter it;
    hash_str fs, vs;
    hash_iter_init(&it, o);
    while (hash_iter_next(&it, &fs, &vs))
        seen++;
    hash_iter_reset(&it);
    EXPECT(seen == n);
    obj_decref(o);
}
END_TEST

/* Memory of a TTL: Valkey 9.0 pays about 16-29 bytes per volatile field. */
START_TEST(test_ttl_memory) {
    kobj *o = hash_new();
    char f[16];
    for (int i = 0; i < 10000; i++) {
        snprintf(f, sizeof(f), "field:%d", i);
        set_s(o, f, "value");
    }
    size_t before = obj_mem_usage(o);
    for (int i = 0; i < 10000; i++) {
        snprintf(f, sizeof(f), "field:%d", i);
        hash_set_expire(o, f, strlen(f), T0 + 1000 + i, 0);
    }
    size_t after = obj_mem_usage(o);
    size_t per = (after - before) / 10000;
    ck_assert_msg(per <= 32, "%zu bytes per TTL", per);
    obj_decref(o);
}
END_TEST

START_TEST(test_active_expire) {
    db *d = db_get(0);
    kobj *o = hash_new();
    set_s(o, "keep", "1");
    hash_set(o, "gone", 4, "2", 1, 0, T0 + 100);
    db_add(d, "h1", 2, o, 1);
    hash_track_volatile(0, "h1", 2);
    kobj *p = hash_new();
    hash_set(p, "x", 1, "1", 1, 0, T0 + 100);
    hash_set(p, "y", 1, "1", 1, 0, T0 + 200);
    db_add(d, "h2", 2, p, 1);
    hash_track_volatile(0, "h2", 2);
    hash_track_volatile(0, "h2", 2);
    hash_track_volatile(0, "nokey", 5);
    EXPECT(hash_tracked_count() == 3);
    EXPECT(hash_active_expire(T0 + 50, 1000) == 0);
    EXPECT(hash_tracked_count() == 2); /* the missing key was dropped */
    EXPECT(hash_active_expire(T0 + 150, 1000) == 2);
    EXPECT(hash_length(o) == 1 && hash_tracked_count() == 1);
    EXPECT(db_find(d, "h2", 2) != NULL && hash_length(p) == 1);
    EXPECT(hash_active_expire(T0 + 250, 1000) == 1);
    EXPECT(db_find(d, "h2", 2) == NULL && hash_tracked_count() == 0);
    EXPECT(db_find(d, "h1", 2) != NULL);
}
END_TEST

/* A hash in db 0 at key with fields "a" (TTL T0 + 100) and "b" (none),
 * announced as a command would announce it. */
static kobj *add_volatile(const char *key) {
    kobj *o = hash_new();
    set_s(o, "b", "2");
    db_add(db_get(0), key, strlen(key), o, 1);
    hash_set(o, "a", 1, "1", 1, 0, T0 + 100);
    db_signal_modified(db_get(0), key, strlen(key), 1);
    return o;
}

/* The keyspace hook registers a volatile hash under any new name: the
 * cron then expires it with no command touching it. */
START_TEST(test_track_new_names) {
    db *d0 = db_get(0), *d1 = db_get(1);
    EXPECT(hash_volatile_hashes() == 0);
    kobj *o = add_volatile("h");
    EXPECT(hash_tracked_count() == 1 && hash_volatile_hashes() == 1);
    /* RENAME h r, then MOVE r 1 */
    db_move(d0, db_find(d0, "h", 1), d0, "r", 1);
    db_move(d0, db_find(d0, "r", 1), d1, "m", 1);
    /* COPY m c (db 1) */
    db_put(d1, "c", 1, obj_copy(o), -1);
    EXPECT(hash_volatile_hashes() == 2);
    EXPECT(hash_tracked_count() == 4); /* h, r, m, c: stale names go on the next visit */
    EXPECT(hash_active_expire(T0 + 150, 1000) == 2);
    EXPECT(hash_tracked_count() == 0);
    EXPECT(hash_length(o) == 1 && !hash_exists(o, "a", 1));
    kobj *c = db_entry_obj(db_find(d1, "c", 1));
    EXPECT(hash_length(c) == 1 && !hash_exists(c, "a", 1));
    EXPECT(tmetrics.expired_fields == 2);
    EXPECT(hash_volatile_hashes() == 0);
}
END_TEST

/* SWAPDB trades the ids of the names registered in the two databases. */
START_TEST(test_track_swapdb) {
    kobj *o = add_volatile("s");
    kobj *p = hash_new();
    hash_set(p, "x", 1, "1", 1, 0, T0 + 100);
    db_add(db_get(2), "t", 1, p, 1);
    EXPECT(hash_tracked_count() == 2);
    db_swap(0, 2);
    EXPECT(db_find(db_get(2), "s", 1) && db_find(db_get(0), "t", 1));
    EXPECT(hash_active_expire(T0 + 150, 1000) == 2);
    EXPECT(hash_length(o) == 1 && db_find(db_get(0), "t", 1) == NULL);
    EXPECT(hash_tracked_count() == 0);
    /* a database swapped with itself keeps its names */
    add_volatile("u");
    db_swap(0, 0);
    EXPECT(hash_active_expire(T0 + 150, 1000) == 1);
}
END_TEST

/* Writes to other values, and to hashes without TTLs, register nothing;
 * the counter follows TTLs given and taken away and values freed. */
START_TEST(test_track_counter) {
    db *d = db_get(0);
    db_set_str(d, "str", 3, "v", 1, 0, -1);
    kobj *o = hash_new();
    set_s(o, "a", "1");
    db_add(d, "plain", 5, o, 1);
    EXPECT(hash_tracked_count() == 0 && hash_volatile_hashes() == 0);
    set_s(o, "b", "2");
    hash_set_expire(o, "a", 1, T0 + 10, 0);
    hash_set_expire(o, "b", 1, T0 + 10, 0);
    EXPECT(hash_volatile_hashes() == 1);
    EXPECT(hash_persist(o, "a", 1) == 1 && hash_volatile_hashes() == 1);
    EXPECT(hash_persist(o, "b", 1) == 1 && hash_volatile_hashes() == 0);
    hash_set_expire(o, "a", 1, T0 + 10, 0);
    EXPECT(hash_volatile_hashes() == 1);
    db_delete(d, "plain", 5);
    EXPECT(hash_volatile_hashes() == 0);
}
END_TEST

/* A past time with HASH_EXP_DELETE removes the field once the condition
 * lets it: XX and GT refuse a field without a TTL. */
START_TEST(test_expire_delete) {
    kobj *o = hash_new();
    set_s(o, "a", "1");
    set_s(o, "b", "2");
    EXPECT(hash_set_expire(o, "a", 1, T0 - 1, HASH_EXP_DELETE | HASH_EXP_XX) == 0);
    EXPECT(hash_set_expire(o, "a", 1, T0 - 1, HASH_EXP_DELETE | HASH_EXP_GT) == 0);
    EXPECT(hash_set_expire(o, "a", 1, T0 - 1, HASH_EXP_DELETE | HASH_EXP_LT) == 2);
    EXPECT(hash_set_expire(o, "zz", 2, T0 - 1, HASH_EXP_DELETE) == -2);
    EXPECT(hash_length(o) == 1 && !hash_exists(o, "a", 1) && hash_is_listpack(o));
    obj_decref(o);
}
END_TEST

START_TEST(test_mem_usage_and_copy) {
    kobj *o = hash_new();
    set_s(o, "a", "1");
    size_t lp = obj_mem_usage(o);
    EXPECT(lp > 0);
    kobj *c = obj_copy(o);
    EXPECT(hash_is_listpack(c) && value_is(c, "a", "1"));
    obj_decref(c);
    char f[16];
    for (int i = 0; i < 200; i++) {
        snprintf(f, sizeof(f), "f%d", i);
        set_s(o, f, "v");
    }
    size_t ht = obj_mem_usage(o);
    EXPECT(ht > lp + 200 * 10);
    c = obj_copy(o);
    EXPECT(!hash_is_listpack(c) && hash_length(c) == 201 && value_is(c, "f199", "v"));
    set_s(c, "a", "changed");
    EXPECT(value_is(o, "a", "1"));
    obj_decref(c);
    obj_decref(o);
}
END_TEST

static Suite *hash_suite(void) {
    Suite *s = suite_create("hash");
    TCase *tc = tcase_create("hash");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_listpack_basics);
    tcase_add_test(tc, test_entries_boundary);
    tcase_add_test(tc, test_value_length_boundary);
    tcase_add_test(tc, test_random_ops_listpack);
    tcase_add_test(tc, test_random_ops_converting);
    tcase_add_test(tc, test_scan);
    tcase_add_test(tc, test_field_expiry);
    tcase_add_test(tc, test_field_headers);
    tcase_add_test(tc, test_ttl_memory);
    tcase_add_test(tc, test_active_expire);
    tcase_add_test(tc, test_track_new_names);
    tcase_add_test(tc, test_track_swapdb);
    tcase_add_test(tc, test_track_counter);
    tcase_add_test(tc, test_expire_delete);
    tcase_add_test(tc, test_mem_usage_and_copy);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(hash_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
