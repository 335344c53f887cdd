/* check_pack.c -- unit tests for core/ds/pack.c: each entry encoding at its
 * boundaries, walks in both directions, and 100k random operations checked
 * against a plain array of strings, with a deep validation after each. */
#include "ds/pack.h"

#include "common/strconv.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The model: an array of byte strings. */
typedef struct model {
    char **s;
    size_t *len;
    size_t n, cap;
} model;

static void model_insert(model *m, size_t at, const char *s, size_t len) {
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 16;
        m->s = realloc(m->s, m->cap * sizeof(*m->s));
        m->len = realloc(m->len, m->cap * sizeof(*m->len));
    }
    memmove(m->s + at + 1, m->s + at, (m->n - at) * sizeof(*m->s));
    memmove(m->len + at + 1, m->len + at, (m->n - at) * sizeof(*m->len));
    m->s[at] = malloc(len + 1);
    memcpy(m->s[at], s, len);
    m->len[at] = len;
    m->n++;
}

static void model_delete(model *m, size_t at, size_t k) {
    for (size_t i = at; i < at + k; i++)
        free(m->s[i]);
    memmove(m->s + at, m->s + at + k, (m->n - at - k) * sizeof(*m->s));
    memmove(m->len + at, m->len + at + k, (m->n - at - k) * sizeof(*m->len));
    m->n -= k;
}

static void model_free(model *m) {
    for (size_t i = 0; i < m->n; i++)
        free(m->s[i]);
    free(m->s);
    free(m->len);
}

/* The entry at pos as bytes (integers formatted). */
static size_t entry_bytes(const pack *p, size_t pos, char *buf, const char **out) {
    pack_val v;
    pack_get(p, pos, &v);
    if (v.s) {
        *out = (const char *)v.s;
        return v.len;
    }
    *out = buf;
    return ll_to_str(buf, v.v);
}

static void check_equal(const pack *p, const model *m) {
    ck_assert(pack_validate(p, pack_bytes(p), 1));
    ck_assert_uint_eq(pack_count(p), m->n);
    char buf[24];
    const char *s;
    size_t pos = pack_first(p), i = 0;
    for (; pos; pos = pack_next(p, pos), i++) {
        ck_assert_uint_lt(i, m->n);
        size_t len = entry_bytes(p, pos, buf, &s);
        ck_assert_uint_eq(len, m->len[i]);
        ck_assert(memcmp(s, m->s[i], len) == 0);
    }
    ck_assert_uint_eq(i, m->n);
    /* Backwards. */
    pos = pack_last(p);
    for (i = m->n; pos; pos = pack_prev(p, pos)) {
        i--;
        size_t len = entry_bytes(p, pos, buf, &s);
        ck_assert_uint_eq(len, m->len[i]);
        ck_assert(memcmp(s, m->s[i], len) == 0);
    }
    ck_assert_uint_eq(i, 0);
}

/* A random value: integers of every width (as digits), integer-like
 * strings that are not canonical, and strings around each length limit. */
static size_t random_value(char *buf) {
    static const long long edges[] = {0,
                                      127,
                                      128,
                                      -1,
                                      4095,
                                      4096,
                                      -4096,
                                      -4097,
                                      32767,
                                      -32768,
                                      32768,
                                      8388607,
                                      -8388608,
                                      8388608,
                                      2147483647,
                                      -2147483648LL,
                                      2147483648LL,
                                      9223372036854775807LL,
                                      (-9223372036854775807LL - 1)};
    static const size_t lens[] = {0, 1, 63, 64, 65, 4095, 4096, 4097, 20000};
    switch (rand() % 6) {
    case 0:
        return ll_to_str(buf, edges[rand() % (int)(sizeof(edges) / sizeof(edges[0]))]);
    case 1:
        return ll_to_str(buf, (long long)rand() - RAND_MAX / 2);
    case 2:
        return (size_t)snprintf(buf, 32, "0%d", rand() % 100); /* not canonical */
    case 3: {
        size_t n = lens[rand() % (int)(sizeof(lens) / sizeof(lens[0]))];
        for (size_t i = 0; i < n; i++)
            buf[i] = (char)('a' + rand() % 26);
        return n;
    }
    default: {
        size_t n = (size_t)(rand() % 12);
        for (size_t i = 0; i < n; i++)
            buf[i] = (char)(rand() & 0xff);
        return n;
    }
    }
}

START_TEST(test_encodings_round_trip) {
    char buf[20001];
    srand(7);
    for (int round = 0; round < 2000; round++) {
        size_t len = random_value(buf);
        pack *p = pack_new();
        p = pack_append(p, buf, len);
        ck_assert_uint_eq(pack_bytes(p), 8 + pack_entry_size(buf, len));
        char tmp[24];
        const char *s;
        size_t got = entry_bytes(p, pack_first(p), tmp, &s);
        ck_assert_uint_eq(got, len);
        ck_assert(memcmp(s, buf, len) == 0);
        ck_assert(pack_eq(p, pack_first(p), buf, len));
        ck_assert_uint_eq(pack_find(p, pack_first(p), buf, len, 0), pack_first(p));
        pack_free(p);
    }
}
END_TEST

/* Integers take 1-9 bytes, strings their length plus 2-9. */
START_TEST(test_entry_sizes) {
    ck_assert_uint_eq(pack_entry_size("5", 1), 2);
    ck_assert_uint_eq(pack_entry_size("-4096", 5), 3);
    ck_assert_uint_eq(pack_entry_size("-4097", 5), 4);
    ck_assert_uint_eq(pack_entry_size("9223372036854775807", 19), 10);
    ck_assert_uint_eq(pack_entry_size("abc", 3), 5);
    ck_assert_uint_eq(pack_entry_size("007", 3), 5); /* not canonical: a string */
    char big[200] = {0};
    ck_assert_uint_eq(pack_entry_size(big, 126), 130); /* body 128: two back-length bytes */
}
END_TEST

START_TEST(test_seek_and_find_with_skip) {
    pack *p = pack_new();
    char k[16];
    for (int i = 0; i < 50; i++) {
        int n = snprintf(k, sizeof(k), "f%d", i);
        p = pack_append(p, k, (size_t)n);
        p = pack_append_int(p, i);
    }
    ck_assert_uint_eq(pack_count(p), 100);
    ck_assert(pack_eq(p, pack_seek(p, -1), "49", 2));
    ck_assert(pack_eq(p, pack_seek(p, 0), "f0", 2));
    ck_assert(pack_eq(p, pack_seek(p, 61), "30", 2));
    ck_assert_uint_eq(pack_seek(p, 100), 0);
    ck_assert_uint_eq(pack_seek(p, -101), 0);
    /* Fields only: value "7" must not be found as a field. */
    ck_assert_uint_eq(pack_find(p, pack_first(p), "7", 1, 1), 0);
    size_t pos = pack_find(p, pack_first(p), "f7", 2, 1);
    ck_assert_uint_eq(pos, pack_seek(p, 14));
    ck_assert(pack_eq(p, pack_next(p, pos), "7", 1));
    p = pack_delete_range(p, 10, 1000);
    ck_assert_uint_eq(pack_count(p), 10);
    ck_assert(pack_validate(p, pack_bytes(p), 1));
    pack_free(p);
}
END_TEST

/* A replacement whose bytes come from the pack itself (moving a value
 * inside one collection) must not read freed memory. */
START_TEST(test_self_referencing_insert) {
    pack *p = pack_new();
    char big[5000];
    memset(big, 'x', sizeof(big));
    p = pack_append(p, big, sizeof(big));
    p = pack_append(p, "b", 1);
    pack_val v;
    pack_get(p, pack_first(p), &v);
    size_t pos = pack_last(p);
    p = pack_replace(p, &pos, (const char *)v.s, v.len);
    pack_get(p, pack_last(p), &v);
    ck_assert_uint_eq(v.len, sizeof(big));
    ck_assert(memcmp(v.s, big, sizeof(big)) == 0);
    pack_free(p);
}
END_TEST

START_TEST(test_random_against_model) {
    model m = {0};
    pack *p = pack_new();
    char buf[20001];
    srand(12345);
    for (int op = 0; op < 100000; op++) {
        int r = rand() % 10;
        if (m.n > 200) r = 9; /* keep it small enough to check often */
        size_t len;
        if (r < 4) {
            len = random_value(buf);
            size_t at = m.n ? (size_t)rand() % (m.n + 1) : 0;
            size_t pos = at == m.n ? 0 : pack_seek(p, (long long)at);
            p = pack_insert(p, &pos, buf, len);
            model_insert(&m, at, buf, len);
            ck_assert_uint_eq(pos, pack_seek(p, (long long)at));
        } else if (r < 6 && m.n) {
            len = random_value(buf);
            size_t at = (size_t)rand() % m.n;
            size_t pos = pack_seek(p, -(long long)(m.n - at));
            p = pack_replace(p, &pos, buf, len);
            model_delete(&m, at, 1);
            model_insert(&m, at, buf, len);
        } else if (r < 7) {
            long long v = (long long)rand() * (rand() % 2 ? 1 : -65536);
            char d[24];
            size_t at = m.n ? (size_t)rand() % (m.n + 1) : 0;
            size_t pos = at == m.n ? 0 : pack_seek(p, (long long)at);
            p = pack_insert_int(p, &pos, v);
            model_insert(&m, at, d, ll_to_str(d, v));
        } else if (r < 8 && m.n) {
            size_t at = (size_t)rand() % m.n;
            const char *s = m.s[at];
            size_t pos = pack_find(p, pack_first(p), s, m.len[at], 0);
            ck_assert(pos);
            ck_assert(pack_eq(p, pos, s, m.len[at]));
        } else if (m.n) {
            size_t at = (size_t)rand() % m.n;
            size_t k = 1 + (size_t)rand() % 4;
            if (k > m.n - at) k = m.n - at;
            if (rand() % 2) {
                size_t pos = pack_seek(p, (long long)at);
                p = pack_delete(p, &pos, k);
                ck_assert_uint_eq(pos, at + k < m.n ? pack_seek(p, (long long)at) : 0);
            } else {
                p = pack_delete_range(p, (long long)at, k);
            }
            model_delete(&m, at, k);
        }
        if (op % 10 == 0) check_equal(p, &m);
    }
    check_equal(p, &m);
    /* Merging two packs is their concatenation. */
    pack *q = pack_new();
    q = pack_append(q, "tail", 4);
    q = pack_append_int(q, -5);
    p = pack_merge(p, q);
    model_insert(&m, m.n, "tail", 4);
    model_insert(&m, m.n, "-5", 2);
    check_equal(p, &m);
    pack_free(q);
    pack_free(p);
    model_free(&m);
}
END_TEST

/* Truncated and corrupted buffers are refused, never read out of bounds. */
START_TEST(test_validate_rejects_garbage) {
    pack *p = pack_new();
    p = pack_append(p, "hello", 5);
    p = pack_append_int(p, 123456789);
    char big[300];
    memset(big, 'z', sizeof(big));
    p = pack_append(p, big, sizeof(big));
    size_t n = pack_bytes(p);
    ck_assert(pack_validate(p, n, 1));
    ck_assert(!pack_validate(p, n - 1, 1));
    ck_assert(!pack_validate(p, 7, 0));
    unsigned char *c = malloc(n);
    srand(99);
    for (int round = 0; round < 20000; round++) {
        memcpy(c, p, n);
        size_t at = 8 + (size_t)rand() % (n - 8);
        c[at] = (unsigned char)rand();
        pack_validate(c, n, 1); /* must not crash (ASan watches) */
        /* Shrink the claimed size too. */
        size_t cut = 8 + (size_t)rand() % (n - 8);
        c[0] = (unsigned char)cut;
        c[1] = (unsigned char)(cut >> 8);
        c[2] = c[3] = 0;
        ck_assert(!pack_validate(c, n, 1));
        pack_validate(c, cut, 1);
    }
    free(c);
    pack_free(p);
}
END_TEST

static Suite *pack_suite(void) {
    Suite *s = suite_create("pack");
    TCase *tc = tcase_create("pack");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_encodings_round_trip);
    tcase_add_test(tc, test_entry_sizes);
    tcase_add_test(tc, test_seek_and_find_with_skip);
    tcase_add_test(tc, test_self_referencing_insert);
    tcase_add_test(tc, test_random_against_model);
    tcase_add_test(tc, test_validate_rejects_garbage);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(pack_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
