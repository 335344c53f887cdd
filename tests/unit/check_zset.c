/* check_zset.c -- unit tests for core/types/zset.c and zset_skiplist.c:
 * score formatting and parsing as Valkey's d2string/string2d, each
 * conversion boundary between the listpack and skiplist encodings, and
 * 100k random operations in each encoding checked against a sorted array
 * of (score, member) pairs. */
#include "types/zset.h"

#include "keyspace_fixture.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static db_options opts;
static db_metrics stats;

static void setup(void) {
    keyspace_fixture_setup(&opts, &stats, 1, 0);
    opts.types.zset_max_listpack_entries = 128;
    opts.types.zset_max_listpack_value = 64;
    zset_type_setup();
}

static void teardown(void) {
    db_teardown();
}

/* ---- scores ---- */

static void expect_format(double v, const char *want) {
    char buf[DOUBLE_STR_MAX];
    size_t n = double_to_str(buf, v);
    ck_assert_msg(n == strlen(want) && memcmp(buf, want, n) == 0, "%.17g: got %.*s, want %s", v,
                  (int)n, buf, want);
}

START_TEST(test_double_format) {
    expect_format(0, "0");
    expect_format(-0.0, "-0");
    expect_format(1.5, "1.5");
    expect_format(-2.25, "-2.25");
    expect_format(3, "3");
    expect_format(0.1, "0.1");
    expect_format(1.1, "1.1");
    expect_format(1.0 / 3, "0.3333333333333333");
    expect_format(1e15, "1000000000000000");
    expect_format(4611686018427387904.0, "4611686018427387904"); /* LLONG_MAX/2 + 1 */
    expect_format(1e20, "1e+20");
    expect_format(1.5e20, "1.5e+20");
    expect_format(1e100, "1e+100");
    expect_format(1e-6, "0.000001");
    expect_format(1e-7, "1e-7");
    expect_format(-1.5e-7, "-1.5e-7");
    expect_format(0.001234, "0.001234");
    expect_format(123.456, "123.456");
    expect_format(1.7976931348623157e308, "1.7976931348623157e+308");
    expect_format(5e-324, "5e-324");
    expect_format(INFINITY, "inf");
    expect_format(-INFINITY, "-inf");
    expect_format(NAN, "nan");
}
END_TEST

/* Every formatted double reads back as itself. */
START_TEST(test_double_round_trip) {
    srand(7);
    char buf[DOUBLE_STR_MAX];
    for (int i = 0; i < 100000; i++) {
        uint64_t bits = ((uint64_t)rand() << 33) ^ ((uint64_t)rand() << 11) ^ (uint64_t)rand();
        double v;
        memcpy(&v, &bits, sizeof(v));
        if (isnan(v) || isinf(v)) continue;
        size_t n = double_to_str(buf, v);
        double back;
        ck_assert(str_to_double(buf, n, &back));
        ck_assert(back == v);
    }
}
END_TEST

static int parses(const char *s, double *v) {
    return str_to_double(s, strlen(s), v);
}

START_TEST(test_double_parse) {
    double v;
    ck_assert(parses("inf", &v) && isinf(v) && v > 0);
    ck_assert(parses("+inf", &v) && isinf(v) && v > 0);
    ck_assert(parses("-inf", &v) && isinf(v) && v < 0);
    ck_assert(parses("1e3", &v) && v == 1000);
    ck_assert(parses("-1.5E-2", &v) && v == -0.015);
    ck_assert(parses("0x10", &v) && v == 16);
    ck_assert(parses("1e-320", &v) && v > 0); /* a denormal is fine */
    ck_assert(!parses("", &v));
    ck_assert(!parses(" 1", &v));
    ck_assert(!parses("1 ", &v));
    ck_assert(!parses("1x", &v));
    ck_assert(!parses("nan", &v));
    ck_assert(!parses("-nan", &v));
    ck_assert(!parses("1e400", &v)); /* overflow */
    ck_assert(!parses("-1e400", &v));
    ck_assert(!parses("1e-400", &v)); /* underflow to zero */
}
END_TEST

START_TEST(test_range_parse) {
    zset_score_range r;
    ck_assert(zset_parse_score_range("(1", 2, "+inf", 4, &r));
    ck_assert(r.minex && r.min == 1 && !r.maxex && isinf(r.max));
    ck_assert(zset_parse_score_range("-inf", 4, "(2.5", 4, &r) && r.maxex && r.max == 2.5);
    ck_assert(!zset_parse_score_range("(", 1, "1", 1, &r));
    ck_assert(!zset_parse_score_range("a", 1, "1", 1, &r));
    ck_assert(!zset_parse_score_range("nan", 3, "1", 1, &r));
    zset_lex_range l;
    ck_assert(zset_parse_lex_range("-", 1, "+", 1, &l));
    ck_assert(l.min.kind == ZLEX_NEG_INF && l.max.kind == ZLEX_POS_INF);
    ck_assert(zset_parse_lex_range("[a", 2, "(b", 2, &l));
    ck_assert(l.min.kind == ZLEX_INCL && l.min.len == 1 && l.max.kind == ZLEX_EXCL);
    ck_assert(zset_parse_lex_range("[", 1, "(", 1, &l) && l.min.len == 0);
    ck_assert(!zset_parse_lex_range("a", 1, "+", 1, &l));
    ck_assert(!zset_parse_lex_range("-a", 2, "+", 1, &l));
    ck_assert(!zset_parse_lex_range("", 0, "+", 1, &l));
}
END_TEST

/* ---- conversions ---- */

static const char *enc(const kobj *o) {
    return obj_encoding_name(o);
}

static void add(kobj *o, double score, const char *m) {
    int out;
    ck_assert(zset_add(o, score, m, strlen(m), 0, &out, NULL));
}

START_TEST(test_convert_on_count) {
    kobj *o = zset_create(1, 1);
    char m[16];
    for (int i = 0; i < 128; i++) {
        snprintf(m, sizeof(m), "m%d", i);
        add(o, i, m);
    }
    ck_assert_str_eq(enc(o), "listpack");
    ck_assert_uint_eq(zset_len(o), 128);
    add(o, 0, "m0"); /* an update does not grow it */
    ck_assert_str_eq(enc(o), "listpack");
    add(o, 500, "last");
    ck_assert_str_eq(enc(o), "skiplist");
    ck_assert_uint_eq(zset_len(o), 129);
    /* Deletes never convert back; only a store result shrinks. */
    for (int i = 0; i < 120; i++) {
        snprintf(m, sizeof(m), "m%d", i);
        ck_assert(zset_del(o, m, strlen(m)));
    }
    ck_assert_str_eq(enc(o), "skiplist");
    zset_shrink_if_fits(o);
    ck_assert_str_eq(enc(o), "listpack");
    ck_assert_uint_eq(zset_len(o), 9);
    zset_elem e;
    zset_at(o, 8, &e);
    ck_assert(e.len == 4 && memcmp(e.m, "last", 4) == 0 && e.score == 500);
    obj_decref(o);
}
END_TEST

START_TEST(test_convert_on_length) {
    char m[70];
    memset(m, 'x', sizeof(m));
    kobj *o = zset_create(1, 1);
    int out;
    ck_assert(zset_add(o, 1, m, 64, 0, &out, NULL));
    ck_assert_str_eq(enc(o), "listpack");
    ck_assert(zset_add(o, 1, m, 65, 0, &out, NULL));
    ck_assert_str_eq(enc(o), "skiplist");
    ck_assert_uint_eq(zset_len(o), 2);
    obj_decref(o);
    /* The creation hints pick the encoding (ZADD's bulk path). */
    o = zset_create(128, 64);
    ck_assert_str_eq(enc(o), "listpack");
    zset_maybe_convert(o, 129, 1);
    ck_assert_str_eq(enc(o), "skiplist");
    obj_decref(o);
    o = zset_create(1, 65);
    ck_assert_str_eq(enc(o), "skiplist");
    obj_decref(o);
    /* A long member keeps a store result in the skiplist. */
    o = zset_create_skiplist();
    ck_assert(zset_add(o, 1, m, 65, 0, &out, NULL));
    zset_shrink_if_fits(o);
    ck_assert_str_eq(enc(o), "skiplist");
    obj_decref(o);
}
END_TEST

START_TEST(test_add_flags) {
    for (int skip = 0; skip < 2; skip++) {
        kobj *o = skip ? zset_create_skiplist() : zset_create(0, 0);
        int out;
        double ns;
        ck_assert(zset_add(o, 5, "a", 1, 0, &out, &ns) && out == ZSET_OUT_ADDED);
        ck_assert(zset_add(o, 6, "a", 1, ZSET_IN_NX, &out, &ns) && out == ZSET_OUT_NOP);
        ck_assert(zset_add(o, 6, "b", 1, ZSET_IN_XX, &out, &ns) && out == ZSET_OUT_NOP);
        ck_assert(zset_add(o, 4, "a", 1, ZSET_IN_GT, &out, &ns) && out == ZSET_OUT_NOP);
        ck_assert(zset_add(o, 7, "a", 1, ZSET_IN_GT, &out, &ns) && out == ZSET_OUT_UPDATED);
        ck_assert(zset_add(o, 8, "a", 1, ZSET_IN_LT, &out, &ns) && out == ZSET_OUT_NOP);
        ck_assert(zset_add(o, 1.5, "a", 1, ZSET_IN_INCR, &out, &ns) && ns == 8.5);
        ck_assert(zset_add(o, INFINITY, "a", 1, ZSET_IN_INCR, &out, &ns) && isinf(ns));
        ck_assert(!zset_add(o, -INFINITY, "a", 1, ZSET_IN_INCR, &out, &ns));
        ck_assert(out & ZSET_OUT_NAN);
        ck_assert(!zset_add(o, NAN, "c", 1, 0, &out, &ns));
        double s;
        ck_assert(zset_score(o, "a", 1, &s) && isinf(s));
        ck_assert(zset_add(o, -0.0, "z", 1, 0, &out, &ns));
        ck_assert(zset_score(o, "z", 1, &s) && s == 0);
        ck_assert_uint_eq(zset_len(o), 2);
        obj_decref(o);
    }
}
END_TEST

/* ---- random operations against a model ---- */

typedef struct mentry {
    double score;
    char m[24];
    size_t len;
} mentry;

typedef struct model {
    mentry *e;
    size_t n;
} model;

static int mcmp(double s1, const char *m1, size_t l1, double s2, const char *m2, size_t l2) {
    if (s1 != s2) return s1 < s2 ? -1 : 1;
    size_t min = l1 < l2 ? l1 : l2;
    int c = memcmp(m1, m2, min);
    if (c) return c;
    return l1 < l2 ? -1 : (l1 > l2 ? 1 : 0);
}

static long model_find(const model *md, const char *m, size_t len) {
    for (size_t i = 0; i < md->n; i++)
        if (md->e[i].len == len && memcmp(md->e[i].m, m, len) == 0) return (long)i;
    return -1;
}

static void model_del_at(model *md, size_t i) {
    memmove(md->e + i, md->e + i + 1, (md->n - i - 1) * sizeof(mentry));
    md->n--;
}

static void model_set(model *md, double score, const char *m, size_t len) {
    long f = model_find(md, m, len);
    if (f >= 0) model_del_at(md, (size_t)f);
    size_t i = 0;
    while (i < md->n && mcmp(md->e[i].score, md->e[i].m, md->e[i].len, score, m, len) < 0)
        i++;
    memmove(md->e + i + 1, md->e + i, (md->n - i) * sizeof(mentry));
    md->e[i].score = score;
    memcpy(md->e[i].m, m, len);
    md->e[i].len = len;
    md->n++;
}

typedef struct collect {
    mentry *e;
    size_t n;
} collect;

static void collect_fn(void *priv, const zset_elem *e) {
    collect *c = priv;
    ck_assert(e->len < sizeof(c->e[0].m));
    c->e[c->n].score = e->score;
    memcpy(c->e[c->n].m, e->m, e->len);
    c->e[c->n].len = e->len;
    c->n++;
}

static void expect_same(const mentry *a, const mentry *b) {
    ck_assert(a->score == b->score && a->len == b->len && memcmp(a->m, b->m, a->len) == 0);
}

static void check_all(const kobj *o, const model *md, collect *buf) {
    ck_assert_uint_eq(zset_len(o), md->n);
    buf->n = 0;
    if (md->n) zset_range_rank(o, 0, md->n - 1, 0, collect_fn, buf);
    ck_assert_uint_eq(buf->n, md->n);
    for (size_t i = 0; i < md->n; i++)
        expect_same(&buf->e[i], &md->e[i]);
}

static int in_score(const zset_score_range *r, double s) {
    return (r->minex ? s > r->min : s >= r->min) && (r->maxex ? s < r->max : s <= r->max);
}

static double rand_score(void) {
    switch (rand() % 6) {
    case 0:
        return (rand() % 2001 - 1000) / 8.0;
    case 1:
        return rand() % 2 ? INFINITY : -INFINITY;
    default:
        return rand() % 50; /* ties, ordered by member */
    }
}

static void rand_member(char *m, size_t *len) {
    int k = rand() % 300;
    /* Integer-looking members take the pack's integer entries. */
    *len = (size_t)(k % 3 ? snprintf(m, 24, "m%d", k) : snprintf(m, 24, "%d", k - 150));
}

/* One random range check: by rank (both directions), by score (both
 * directions, with offset and limit), counts. */
static void check_ranges(const kobj *o, const model *md, collect *buf) {
    size_t n = md->n;
    if (!n) return;
    size_t s = (size_t)rand() % n, e = s + (size_t)rand() % (n - s);
    int rev = rand() % 2;
    buf->n = 0;
    zset_range_rank(o, s, e, rev, collect_fn, buf);
    ck_assert_uint_eq(buf->n, e - s + 1);
    for (size_t i = 0; i < buf->n; i++)
        expect_same(&buf->e[i], &md->e[rev ? n - 1 - (s + i) : s + i]);
    zset_score_range r = {rand_score(), rand_score(), rand() % 2, rand() % 2};
    long long offset = rand() % 4 ? 0 : rand() % 5, limit = rand() % 3 ? -1 : rand() % 10;
    buf->n = 0;
    size_t got = zset_range_score(o, &r, rev, offset, limit, collect_fn, buf);
    ck_assert_uint_eq(got, buf->n);
    size_t want = 0, skipped = 0, count = 0;
    for (size_t k = 0; k < n; k++) {
        const mentry *me = &md->e[rev ? n - 1 - k : k];
        if (!in_score(&r, me->score)) continue;
        count++;
        if (skipped < (size_t)offset) {
            skipped++;
            continue;
        }
        if (limit >= 0 && want >= (size_t)limit) continue;
        ck_assert(want < buf->n);
        expect_same(&buf->e[want++], me);
    }
    ck_assert_uint_eq(want, buf->n);
    ck_assert_uint_eq(zset_count_score(o, &r), count);
}

static void random_ops(long long max_entries, int ops) {
    opts.types.zset_max_listpack_entries = max_entries;
    model md = {calloc(400, sizeof(mentry)), 0};
    collect buf = {calloc(400, sizeof(mentry)), 0};
    kobj *o = zset_create(0, 0);
    char m[24];
    size_t len;
    for (int i = 0; i < ops; i++) {
        rand_member(m, &len);
        int op = rand() % 100;
        if (op < 45) {
            double s = rand_score();
            int out;
            double ns;
            int incr = rand() % 5 == 0;
            long f = model_find(&md, m, len);
            int ok = zset_add(o, s, m, len, incr ? ZSET_IN_INCR : 0, &out, &ns);
            double want = incr && f >= 0 ? md.e[f].score + s : s;
            if (isnan(want)) {
                ck_assert(!ok);
            } else {
                ck_assert(ok && ns == want);
                model_set(&md, want, m, len);
            }
        } else if (op < 60) {
            long f = model_find(&md, m, len);
            ck_assert_int_eq(zset_del(o, m, len), f >= 0);
            if (f >= 0) model_del_at(&md, (size_t)f);
        } else if (op < 75) {
            long f = model_find(&md, m, len);
            double s;
            int rev = rand() % 2;
            long long r = zset_rank(o, m, len, rev, &s);
            ck_assert_int_eq(r, f < 0 ? -1 : (rev ? (long)md.n - 1 - f : f));
            if (f >= 0) ck_assert(s == md.e[f].score);
        } else if (op < 90) {
            check_ranges(o, &md, &buf);
        } else if (op < 93 && md.n) {
            zset_score_range r = {rand_score(), rand_score(), rand() % 2, rand() % 2};
            size_t want = 0;
            for (size_t k = md.n; k-- > 0;)
                if (in_score(&r, md.e[k].score)) {
                    model_del_at(&md, k);
                    want++;
                }
            ck_assert_uint_eq(zset_delete_score(o, &r), want);
        } else if (op < 95 && md.n) {
            size_t s = (size_t)rand() % md.n, e = s + (size_t)rand() % ((md.n - s + 3) / 4);
            ck_assert_uint_eq(zset_delete_rank(o, s, e), e - s + 1);
            for (size_t k = e + 1; k-- > s;)
                model_del_at(&md, k);
        } else if (op < 98 && md.n) {
            int max = rand() % 2;
            size_t cnt = 1 + (size_t)rand() % 3;
            buf.n = 0;
            size_t got = zset_pop(o, max, cnt, collect_fn, &buf);
            ck_assert_uint_eq(got, cnt < md.n ? cnt : md.n);
            for (size_t k = 0; k < got; k++) {
                expect_same(&buf.e[k], &md.e[max ? md.n - 1 : 0]);
                model_del_at(&md, max ? md.n - 1 : 0);
            }
        } else if (md.n) {
            zset_elem e;
            zset_random(o, &e);
            ck_assert(model_find(&md, e.m, e.len) >= 0);
        }
        if (i % 97 == 0) check_all(o, &md, &buf);
    }
    check_all(o, &md, &buf);
    kobj *copy = obj_copy(o);
    check_all(copy, &md, &buf);
    ck_assert_str_eq(enc(copy), enc(o));
    obj_decref(copy);
    obj_decref(o);
    free(md.e);
    free(buf.e);
}

START_TEST(test_random_converting) {
    srand(11);
    random_ops(128, 40000); /* converts to a skiplist once it passes 128 */
}
END_TEST

START_TEST(test_random_skiplist) {
    srand(12);
    random_ops(0, 30000);
}
END_TEST

START_TEST(test_random_listpack) {
    srand(13);
    random_ops(1000, 30000);
}
END_TEST

/* Lex ranges over members of equal score, in both encodings. */
START_TEST(test_lex_ranges) {
    const char *names[] = {"", "a", "aa", "ab", "b", "ba", "c", "d", "e\xff", "f"};
    size_t nn = sizeof(names) / sizeof(names[0]);
    for (int skip = 0; skip < 2; skip++) {
        kobj *o = skip ? zset_create_skiplist() : zset_create(0, 0);
        for (size_t i = 0; i < nn; i++)
            add(o, 0, names[i]);
        const char *bounds[] = {"-", "+", "[", "(", "[a", "(a", "[ab", "(b", "[c", "(zz", "[e\xff"};
        size_t nb = sizeof(bounds) / sizeof(bounds[0]);
        for (size_t i = 0; i < nb; i++) {
            for (size_t j = 0; j < nb; j++) {
                zset_lex_range r;
                ck_assert(zset_parse_lex_range(bounds[i], strlen(bounds[i]), bounds[j],
                                               strlen(bounds[j]), &r));
                size_t want = 0;
                for (size_t k = 0; k < nn; k++) {
                    zset_elem e = {.m = names[k], .len = strlen(names[k])};
                    const zset_lex_bound *lo = &r.min, *hi = &r.max;
                    int c1 = lo->kind >= ZLEX_INCL ? strcmp(e.m, lo->s) : 0;
                    int c2 = hi->kind >= ZLEX_INCL ? strcmp(e.m, hi->s) : 0;
                    int above = lo->kind == ZLEX_NEG_INF || (lo->kind == ZLEX_INCL && c1 >= 0) ||
                                (lo->kind == ZLEX_EXCL && c1 > 0);
                    int below = hi->kind == ZLEX_POS_INF || (hi->kind == ZLEX_INCL && c2 <= 0) ||
                                (hi->kind == ZLEX_EXCL && c2 < 0);
                    want += above && below;
                }
                ck_assert_uint_eq(zset_count_lex(o, &r), want);
                mentry got[16];
                collect c = {got, 0};
                ck_assert_uint_eq(zset_range_lex(o, &r, 1, 0, -1, collect_fn, &c), want);
                for (size_t k = 1; k < c.n; k++) /* reversed: descending bytes */
                    ck_assert(mcmp(0, got[k - 1].m, got[k - 1].len, 0, got[k].m, got[k].len) > 0);
            }
        }
        zset_lex_range r;
        ck_assert(zset_parse_lex_range("(a", 2, "[c", 2, &r));
        ck_assert_uint_eq(zset_delete_lex(o, &r), 5); /* aa ab b ba c */
        ck_assert_uint_eq(zset_len(o), nn - 5);
        obj_decref(o);
    }
}
END_TEST

/* A scan of a skiplist set returns every member at least once. */
typedef struct seen {
    unsigned char *hit;
} seen;

static void scan_fn(void *priv, const zset_elem *e) {
    seen *s = priv;
    int k = 0; /* members are not NUL-terminated */
    for (size_t i = 1; i < e->len; i++)
        k = k * 10 + (e->m[i] - '0');
    ck_assert_int_lt(k, 5000);
    s->hit[k] = 1;
}

START_TEST(test_scan) {
    kobj *o = zset_create_skiplist();
    char m[16];
    for (int i = 0; i < 5000; i++) {
        snprintf(m, sizeof(m), "m%d", i);
        add(o, i % 7, m);
    }
    seen s = {calloc(5000, 1)};
    unsigned long long cur = 0;
    do {
        cur = zset_scan(o, cur, scan_fn, &s);
    } while (cur);
    for (int i = 0; i < 5000; i++)
        ck_assert(s.hit[i]);
    free(s.hit);
    ck_assert_uint_gt(obj_mem_usage(o), 5000 * 24);
    obj_decref(o);
}
END_TEST

static Suite *zset_suite(void) {
    Suite *s = suite_create("zset");
    TCase *tc = tcase_create("zset");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_double_format);
    tcase_add_test(tc, test_double_round_trip);
    tcase_add_test(tc, test_double_parse);
    tcase_add_test(tc, test_range_parse);
    tcase_add_test(tc, test_convert_on_count);
    tcase_add_test(tc, test_convert_on_length);
    tcase_add_test(tc, test_add_flags);
    tcase_add_test(tc, test_random_converting);
    tcase_add_test(tc, test_random_skiplist);
    tcase_add_test(tc, test_random_listpack);
    tcase_add_test(tc, test_lex_ranges);
    tcase_add_test(tc, test_scan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(zset_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
