/* check_db_block.c -- unit tests for the key blocks of core/keyspace/db.c:
 * one allocation per key holding the key, a short value and the expiry
 * only when there is one.
 *
 * Covered: every length around the embedded form's limit and around each
 * size class a block lands in (the block is exactly the allocator's class
 * for its bytes), the encodings OBJECT ENCODING reports, a TTL given,
 * changed, removed and given again on every encoding, APPEND/SETRANGE
 * (db_string_resize) and INCR (db_replace_str) growing a value across the
 * block's room and out of the block, long keys, and a value object held by
 * a reply while its key is overwritten, grown and deleted. */
#include "keyspace/db.h"

#include "common/common.h"
#include "common/kmem.h"
#include "event/event.h"

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyspace_fixture.h"

static db_options opts;
static db_metrics stats;

static void setup(void) {
    keyspace_fixture_setup(&opts, &stats, 2, keyspace_slot_bits);
}

KEYSPACE_LAYOUT_FIXTURES(setup)

static void teardown(void) {
    db_teardown();
}

/* The allocator's class for n bytes. */
static size_t size_class(size_t n) {
    void *p = km_alloc(n);
    size_t usable = km_usable(p);
    km_free(p);
    return usable;
}

static void fill(char *buf, size_t len, char c) {
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)(c + (char)(i % 23));
}

static void expect_value(db *d, const char *key, size_t klen, const char *want, size_t wlen) {
    db_entry *e = db_find(d, key, klen);
    ck_assert_ptr_nonnull(e);
    size_t len;
    const char *s = db_entry_str(e, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(len, wlen);
    if (wlen) ck_assert_mem_eq(s, want, wlen);
    size_t kl;
    const char *k = db_entry_key(e, &kl);
    ck_assert_uint_eq(kl, klen);
    ck_assert_mem_eq(k, key, klen);
}

/* ---- the embedded form and size classes --------------------------------- */

/* Every value length from 0 to past the embedded limit, with and without a
 * TTL: the value reads back, it is embedded exactly up to DB_EMBED_MAX, and
 * the block is the allocator's class for header + key + value (+ 8). */
START_TEST(test_embed_boundaries) {
    db *d = db_get(0);
    const char *key = "key:000000000001"; /* 16 bytes, as bench/memory.sh */
    char val[DB_EMBED_MAX + 8];
    for (size_t len = 0; len <= DB_EMBED_MAX + 4; len++) {
        for (int ttl = 0; ttl <= 1; ttl++) {
            fill(val, len, 'a');
            db_entry *e = db_set_str(d, key, 16, val, len, 0, ttl ? T0 + 1000 : -1);
            expect_value(d, key, 16, val, len);
            ck_assert_int_eq(db_entry_expire(e), ttl ? T0 + 1000 : -1);
            if (len <= DB_EMBED_MAX) {
                EXPECT(db_entry_obj(e) == NULL);
                size_t bytes = sizeof(db_entry) + 16 + len + (ttl ? 8 : 0);
                /* In place updates may leave a block bigger than needed;
                 * a fresh key shows the exact layout. */
                db_delete(d, key, 16);
                e = db_set_str(d, key, 16, val, len, 0, ttl ? T0 + 1000 : -1);
                ck_assert_uint_eq(db_entry_mem_usage(e), size_class(bytes));
                ck_assert_str_eq(db_entry_encoding(e), len > DB_EMBSTR_NAME_MAX ? "raw" : "embstr");
            } else {
                EXPECT(db_entry_obj(e) != NULL);
                ck_assert_str_eq(db_entry_encoding(e), "raw");
            }
            ck_assert_uint_eq(db_expires_count(d), (size_t)ttl);
        }
    }
    /* the headline layout: a 16-byte key and value fit 48 bytes, TTL or not */
    fill(val, 16, 'x');
    db_delete(d, key, 16);
    db_entry *e = db_set_str(d, key, 16, val, 16, 0, -1);
    ck_assert_uint_eq(sizeof(db_entry) + 16 + 16, 40);
    ck_assert_uint_eq(db_entry_mem_usage(e), size_class(40));
    size_t room = km_usable(e); /* exact under ASan, a 48-byte class with jemalloc */
    db_entry *t = db_set_expire(d, e, T0 + 5000);
    if (room >= 48) ck_assert_ptr_eq(t, e); /* the TTL used the slack */
    expect_value(d, key, 16, val, 16);
    ck_assert_int_eq(db_entry_expire(t), T0 + 5000);
}
END_TEST

START_TEST(test_encodings) {
    db *d = db_get(0);
    db_set_str(d, "i", 1, "12345", 5, 0, -1);
    ck_assert_str_eq(db_entry_encoding(db_find(d, "i", 1)), "int");
    db_set_str(d, "n", 1, "-9223372036854775808", 20, 0, -1);
    ck_assert_str_eq(db_entry_encoding(db_find(d, "n", 1)), "int");
    db_set_str(d, "z", 1, "012", 3, 0, -1); /* not canonical */
    ck_assert_str_eq(db_entry_encoding(db_find(d, "z", 1)), "embstr");
    char v44[44], v45[45];
    fill(v44, 44, 'a');
    fill(v45, 45, 'a');
    db_set_str(d, "a", 1, v44, 44, 0, -1);
    db_set_str(d, "b", 1, v45, 45, 0, -1);
    ck_assert_str_eq(db_entry_encoding(db_find(d, "a", 1)), "embstr");
    ck_assert_str_eq(db_entry_encoding(db_find(d, "b", 1)), "raw");
    /* an object handed in keeps its encoding's name */
    db_set(d, "o", 1, obj_string_raw("ab", 2), 0);
    ck_assert_str_eq(db_entry_encoding(db_find(d, "o", 1)), "raw");
    db_set(d, "s", 1, obj_int(7), 0);
    ck_assert_str_eq(db_entry_encoding(db_find(d, "s", 1)), "int");
    /* Valkey shares 0..9999: OBJECT REFCOUNT says so; a copy is private */
    ck_assert_int_eq(db_entry_refcount(db_find(d, "s", 1)), OBJ_SHARED_REFCOUNT);
    db_put(d, "c", 1, db_entry_value_copy(db_find(d, "s", 1)), -1);
    ck_assert_int_eq(db_entry_refcount(db_find(d, "c", 1)), 1);
    ck_assert_int_eq(db_entry_refcount(db_find(d, "i", 1)), 1);
    ck_assert_str_eq(db_entry_type_name(db_find(d, "i", 1)), "string");
}
END_TEST

/* ---- TTLs on every encoding ---------------------------------------------- */

START_TEST(test_ttl_every_encoding) {
    db *d = db_get(0);
    char big[600];
    fill(big, sizeof(big), 'q');
    struct {
        const char *val;
        size_t len;
        const char *enc;
    } cases[] = {
        {"42", 2, "int"},  {"hello", 5, "embstr"}, {big, 100, "raw"}, {big, 255, "raw"},
        {big, 256, "raw"}, {big, 600, "raw"},      {"", 0, "embstr"},
    };
    for (size_t i = 0; i < K_ARRAY_LEN(cases); i++) {
        char key[32];
        int kl =
            snprintf(key, sizeof(key), "ttl:%zu:%s", i, i % 2 ? "a-longer-key-name-here" : "k");
        db_entry *e = db_set_str(d, key, (size_t)kl, cases[i].val, cases[i].len, 0, -1);
        ck_assert_str_eq(db_entry_encoding(e), cases[i].enc);
        for (int round = 0; round < 3; round++) {
            e = db_set_expire(d, e, T0 + 1000 + round);
            ck_assert_int_eq(db_entry_expire(e), T0 + 1000 + round);
            expect_value(d, key, (size_t)kl, cases[i].val, cases[i].len);
            ck_assert_ptr_eq(db_lookup(d, key, (size_t)kl, 0), e);
            e = db_set_expire(d, e, T0 + 2000 + round); /* changed in place */
            ck_assert_int_eq(db_entry_expire(db_find(d, key, (size_t)kl)), T0 + 2000 + round);
            ck_assert_int_eq(db_persist(d, e), 1);
            ck_assert_int_eq(db_entry_expire(e), -1);
            ck_assert_int_eq(db_persist(d, e), 0);
            expect_value(d, key, (size_t)kl, cases[i].val, cases[i].len);
            ck_assert_str_eq(db_entry_encoding(e), cases[i].enc);
        }
        e = db_set_expire(d, e, T0 + 10);
        ck_assert_uint_eq(db_expires_count(d), i + 1);
    }
    /* the expires table holds the current blocks: they all expire */
    event_set_cached_ms(T0 + 100);
    ck_assert_uint_eq(db_active_expire_cycle(100000), K_ARRAY_LEN(cases));
    ck_assert_uint_eq(db_size(d), 0);
    ck_assert_uint_eq(db_expires_count(d), 0);
}
END_TEST

/* db_set_expire with -1 removes the TTL, from the expires table too. */
START_TEST(test_set_expire_none) {
    db *d = db_get(0);
    db_entry *e = db_set_str(d, "k", 1, "v", 1, 0, T0 + 100);
    ck_assert_uint_eq(db_expires_count(d), 1);
    e = db_set_expire(d, e, -1);
    ck_assert_int_eq(db_entry_expire(e), -1);
    ck_assert_uint_eq(db_expires_count(d), 0);
    e = db_set_expire(d, e, -1); /* none to remove */
    ck_assert_uint_eq(db_expires_count(d), 0);
    expect_value(d, "k", 1, "v", 1);
}
END_TEST

/* A key of DB_KEYLEN_LONG bytes or more stores its length before it. */
START_TEST(test_long_key) {
    db *d = db_get(0);
    size_t klen = DB_KEYLEN_LONG + 5;
    char *key = km_alloc(klen);
    fill(key, klen, 'k');
    db_entry *e = db_set_str(d, key, klen, "v", 1, 0, -1);
    EXPECT(e->flags & DB_ENTRY_LONGKEY);
    expect_value(d, key, klen, "v", 1);
    e = db_set_expire(d, e, T0 + 100);
    ck_assert_int_eq(db_entry_expire(e), T0 + 100);
    char *p = db_string_resize(d, &e, 300); /* out of the block */
    memset(p + 1, 'w', 299);
    EXPECT(db_entry_obj(e) != NULL);
    ck_assert_int_eq(db_entry_expire(e), T0 + 100);
    size_t kl;
    db_entry_key(e, &kl);
    ck_assert_uint_eq(kl, klen);
    ck_assert_int_eq(db_delete(d, key, klen), 1);
    km_free(key);
}
END_TEST

/* ---- growth ---------------------------------------------------------------- */

/* APPEND one byte at a time from 0 to past the embedded limit, with a TTL
 * kept all along: the bytes are right after every step, the value is
 * "raw", and it leaves the block exactly when it passes DB_EMBED_MAX. */
START_TEST(test_append_crossing) {
    db *d = db_get(0);
    char want[DB_EMBED_MAX + 40];
    db_entry *e = db_set_str(d, "g", 1, "", 0, 0, T0 + 9000);
    for (size_t len = 1; len < sizeof(want); len++) {
        char *p = db_string_resize(d, &e, len);
        p[len - 1] = want[len - 1] = (char)('a' + len % 26);
        expect_value(d, "g", 1, want, len);
        ck_assert_int_eq(db_entry_expire(e), T0 + 9000);
        ck_assert_str_eq(db_entry_encoding(e), "raw");
        EXPECT((db_entry_obj(e) == NULL) == (len <= DB_EMBED_MAX));
    }
    ck_assert_uint_eq(db_expires_count(d), 1);
    /* shrinking through SETRANGE's path is not a thing: same length kept */
    char *p = db_string_resize(d, &e, sizeof(want) - 1);
    p[0] = 'Z';
    want[0] = 'Z';
    expect_value(d, "g", 1, want, sizeof(want) - 1);
}
END_TEST

/* SETRANGE-style growth far past the block, from an embedded value. */
START_TEST(test_setrange_crossing) {
    db *d = db_get(0);
    db_entry *e = db_set_str(d, "s", 1, "abc", 3, 0, -1);
    char *p = db_string_resize(d, &e, 5000);
    memset(p + 3, 0, 4997);
    memcpy(p + 4990, "0123456789", 10);
    size_t len;
    const char *s = db_entry_str(e, &len);
    ck_assert_uint_eq(len, 5000);
    ck_assert_mem_eq(s, "abc\0\0", 5);
    ck_assert_mem_eq(s + 4990, "0123456789", 10);
    EXPECT(db_entry_obj(e) != NULL);
}
END_TEST

/* INCR's digits grow in the block, and grow it when it lacks room. */
START_TEST(test_incr_crossing) {
    db *d = db_get(0);
    char key[200];
    fill(key, sizeof(key), 'k');
    /* a key length that leaves no slack in its class for one more digit */
    for (size_t klen = 1; klen < sizeof(key); klen += 7) {
        db_entry *e = db_set_str(d, key, klen, "9", 1, 0, T0 + 77);
        long long v = 9;
        for (int step = 0; step < 19; step++) {
            v = v * 10 + 9;
            char digits[24];
            size_t n = ll_to_str(digits, v);
            e = db_replace_str(d, e, digits, n);
            expect_value(d, key, klen, digits, n);
            ck_assert_str_eq(db_entry_encoding(e), "int");
            ck_assert_int_eq(db_entry_expire(e), T0 + 77);
            int64_t got;
            EXPECT(db_entry_get_int(e, &got) && got == v);
            if (v > LLONG_MAX / 10 - 9) break;
        }
        ck_assert_int_eq(db_delete(d, key, klen), 1);
    }
    ck_assert_uint_eq(db_expires_count(d), 0);
}
END_TEST

/* Switching between an embedded value and an object, both ways, with and
 * without a TTL, through every write. */
START_TEST(test_form_switches) {
    db *d = db_get(0);
    char big[1000];
    fill(big, sizeof(big), 'b');
    db_entry *e = db_set_str(d, "f", 1, "small", 5, 0, T0 + 50);
    e = db_replace_str(d, e, big, sizeof(big));
    EXPECT(db_entry_obj(e) != NULL);
    ck_assert_int_eq(db_entry_expire(e), T0 + 50);
    e = db_replace_str(d, e, "tiny", 4);
    EXPECT(db_entry_obj(e) == NULL);
    ck_assert_int_eq(db_entry_expire(e), T0 + 50);
    e = db_set(d, "f", 1, obj_string_raw(big, sizeof(big)), DB_SET_KEEPTTL);
    EXPECT(db_entry_obj(e) != NULL);
    ck_assert_int_eq(db_entry_expire(e), T0 + 50);
    e = db_set_str(d, "f", 1, "x", 1, 0, -1); /* SET clears the TTL */
    ck_assert_int_eq(db_entry_expire(e), -1);
    ck_assert_uint_eq(db_expires_count(d), 0);
    expect_value(d, "f", 1, "x", 1);
    /* RENAME and MOVE carry the embedded value, TTL and clock */
    e = db_set_expire(d, e, T0 + 60);
    e->lru = 12345;
    db_entry *m = db_move(d, e, db_get(1), "g", 1);
    ck_assert_int_eq(db_entry_expire(m), T0 + 60);
    ck_assert_uint_eq(m->lru, 12345);
    expect_value(db_get(1), "g", 1, "x", 1);
    ck_assert_ptr_null(db_find(d, "f", 1));
    ck_assert_uint_eq(db_expires_count(db_get(1)), 1);
}
END_TEST

/* ---- values held by replies ------------------------------------------------ */

/* A reply holds a reference to a value object (as reply_bulk_obj does for
 * big values): overwriting, growing and deleting the key never changes or
 * frees what the reply holds. */
START_TEST(test_reply_reference) {
    db *d = db_get(0);
    char big[4096];
    fill(big, sizeof(big), 'r');
    db_entry *e = db_set_str(d, "r", 1, big, sizeof(big), 0, -1);
    kobj *held = obj_incref(db_entry_obj(e));
    ck_assert_uint_eq(held->refcount, 2);

    /* APPEND copies the value the reply holds instead of writing into it */
    char *p = db_string_resize(d, &e, sizeof(big) + 3);
    memcpy(p + sizeof(big), "end", 3);
    EXPECT(db_entry_obj(e) != held);
    ck_assert_uint_eq(held->refcount, 1);
    ck_assert_uint_eq(obj_strlen(held), sizeof(big));
    ck_assert_mem_eq(held->v.ptr, big, sizeof(big));

    /* overwrite and delete: the held object lives on */
    kobj *held2 = obj_incref(db_entry_obj(e));
    db_set_str(d, "r", 1, "short", 5, 0, -1);
    ck_assert_uint_eq(held2->refcount, 1);
    ck_assert_mem_eq(held2->v.ptr + sizeof(big), "end", 3);
    e = db_set_str(d, "r", 1, big, 1000, 0, -1);
    kobj *held3 = obj_incref(db_entry_obj(e));
    ck_assert_int_eq(db_delete(d, "r", 1), 1);
    ck_assert_uint_eq(held3->refcount, 1);
    ck_assert_mem_eq(held3->v.ptr, big, 1000);
    obj_decref(held);
    obj_decref(held2);
    obj_decref(held3);

    /* an object no one else holds grows in place */
    e = db_set_str(d, "r", 1, big, 1000, 0, -1);
    kobj *own = db_entry_obj(e);
    db_string_resize(d, &e, 1001);
    ck_assert_ptr_eq(db_entry_obj(e), own);
}
END_TEST

static void add_block_tests(TCase *tc) {
    tcase_add_test(tc, test_embed_boundaries);
    tcase_add_test(tc, test_encodings);
    tcase_add_test(tc, test_ttl_every_encoding);
    tcase_add_test(tc, test_set_expire_none);
    tcase_add_test(tc, test_long_key);
    tcase_add_test(tc, test_append_crossing);
    tcase_add_test(tc, test_setrange_crossing);
    tcase_add_test(tc, test_incr_crossing);
    tcase_add_test(tc, test_form_switches);
    tcase_add_test(tc, test_reply_reference);
}

static Suite *db_block_suite(void) {
    Suite *s = suite_create("db_block");
    TCase *tc = tcase_create("block");
    tcase_add_checked_fixture(tc, setup_standalone, teardown);
    tcase_set_timeout(tc, 60);
    add_block_tests(tc);
    suite_add_tcase(s, tc);
    TCase *cl = tcase_create("block-16384-slots");
    tcase_add_checked_fixture(cl, setup_cluster_layout, teardown);
    tcase_set_timeout(cl, 60);
    add_block_tests(cl);
    suite_add_tcase(s, cl);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(db_block_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
