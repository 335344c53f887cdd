/* check_object.c -- unit tests for core/keyspace/object.c: string encodings
 * (INT / EMBSTR / RAW), reference counts, obj_make_writable, obj_get_int and
 * the number helpers str_to_ll, ll_to_str, str_to_ld and ld_to_str (whose
 * output must match Valkey's INCRBYFLOAT "human" formatting, see Valkey's
 * tests/unit/type/incr.tcl and ld2string(LD_STR_HUMAN) in src/util.c).
 *
 * Leaks and use-after-free in the refcount paths are caught by building with
 * -DKEEL_SANITIZE=ON (ASan + LeakSanitizer fail the executable at exit). */
#include "keyspace/object.h"

#include "common/kmem.h"

#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ----------------------------------------------------------- */

static kobj *mkstr(const char *s) {
    return obj_string(s, strlen(s));
}

/* Asserts o holds exactly the bytes of want (any encoding). */
static void expect_bytes(const kobj *o, const char *want) {
    char buf[32];
    size_t len = 0;
    const char *s = obj_str(o, buf, &len);
    ck_assert_uint_eq(len, strlen(want));
    ck_assert_uint_eq(obj_strlen(o), strlen(want));
    ck_assert_mem_eq(s, want, len);
}

static void expect_encoding(const char *s, int enc, const char *enc_name) {
    kobj *o = mkstr(s);
    int got = o->encoding;
    const char *got_name = obj_encoding_name(o);
    char buf[32];
    size_t len;
    const char *bytes = obj_str(o, buf, &len);
    int same = len == strlen(s) && memcmp(bytes, s, len) == 0;
    obj_decref(o);
    ck_assert_msg(got == enc, "obj_string(\"%s\"): encoding %d, want %d", s, got, enc);
    ck_assert_str_eq(got_name, enc_name);
    ck_assert_msg(same, "obj_string(\"%s\") does not give back its bytes", s);
}

static void expect_ld(long double v, const char *want) {
    char buf[5500];
    size_t n = ld_to_str(buf, sizeof(buf), v);
    ck_assert_msg(strcmp(buf, want) == 0, "ld_to_str(%.21Lg) = \"%s\", want \"%s\"", v, buf, want);
    ck_assert_uint_eq(n, strlen(want));
}

/* Parses a and b with str_to_ld, adds them as INCRBYFLOAT does and checks the
 * formatted result. */
static void expect_incrbyfloat(const char *a, const char *b, const char *want) {
    long double x, y;
    ck_assert_msg(str_to_ld(a, strlen(a), &x), "str_to_ld(\"%s\") failed", a);
    ck_assert_msg(str_to_ld(b, strlen(b), &y), "str_to_ld(\"%s\") failed", b);
    expect_ld(x + y, want);
}

static int ll_ok(const char *s, long long *out) {
    return str_to_ll(s, strlen(s), out);
}

/* ---- encodings ------------------------------------------------------------ */

START_TEST(test_int_encoding) {
    const struct {
        const char *s;
        int64_t v;
    } cases[] = {
        {"123", 123},
        {"-5", -5},
        {"0", 0},
        {"9223372036854775807", INT64_MAX},
        {"-9223372036854775808", INT64_MIN},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kobj *o = mkstr(cases[i].s);
        ck_assert_msg(o->encoding == OBJ_ENC_INT, "\"%s\" should be INT", cases[i].s);
        ck_assert_int_eq(o->type, OBJ_STRING);
        /* 0..9999 are the shared objects, the others are private */
        int small = cases[i].v >= 0 && cases[i].v < OBJ_SHARED_INTEGERS;
        ck_assert_uint_eq(o->refcount, small ? OBJ_SHARED_REFCOUNT : 1);
        ck_assert(o->v.ival == cases[i].v);
        ck_assert_str_eq(obj_encoding_name(o), "int");
        expect_bytes(o, cases[i].s);
        obj_decref(o);
    }
}
END_TEST

START_TEST(test_not_int_encoding) {
    /* Non-canonical or out-of-range integers must keep their exact bytes. */
    const char *not_int[] = {"007", "+1", " 1", "1 ", "-0", "00", "-", "",
                             "9223372036854775808", "-9223372036854775809",
                             "18446744073709551616", "12a", "1.0", "0x10"};
    for (size_t i = 0; i < sizeof(not_int) / sizeof(not_int[0]); i++)
        expect_encoding(not_int[i], OBJ_ENC_EMBSTR, "embstr");
}
END_TEST

START_TEST(test_embstr_raw_boundary) {
    char s[200];
    memset(s, 'x', sizeof(s));

    kobj *e = obj_string(s, OBJ_EMBSTR_MAX);
    ck_assert_int_eq(e->encoding, OBJ_ENC_EMBSTR);
    ck_assert_uint_eq(e->len, OBJ_EMBSTR_MAX);
    ck_assert_int_eq(e->v.ptr[OBJ_EMBSTR_MAX], '\0');
    /* embedded: the bytes follow the short header in the same allocation */
    ck_assert_ptr_eq(e->v.ptr, (char *)e + OBJ_SHORT_HEADER);
    ck_assert_mem_eq(e->v.ptr, s, OBJ_EMBSTR_MAX);

    kobj *r = obj_string(s, OBJ_EMBSTR_MAX + 1);
    ck_assert_int_eq(r->encoding, OBJ_ENC_RAW);
    ck_assert_str_eq(obj_encoding_name(r), "raw");
    ck_assert_uint_eq(r->len, OBJ_EMBSTR_MAX + 1);
    ck_assert_uint_ge(r->cap, OBJ_EMBSTR_MAX + 1);
    ck_assert_ptr_ne(r->v.ptr, (char *)(r + 1));
    ck_assert_mem_eq(r->v.ptr, s, OBJ_EMBSTR_MAX + 1);
    ck_assert_int_eq(r->v.ptr[OBJ_EMBSTR_MAX + 1], '\0');

    /* A numeric string too long to be an integer is a plain string. */
    kobj *digits = mkstr("123456789012345678901234567890");
    ck_assert_int_eq(digits->encoding, OBJ_ENC_EMBSTR);
    expect_bytes(digits, "123456789012345678901234567890");

    /* Binary bytes, including NUL, are kept. */
    kobj *bin = obj_string("a\0b", 3);
    ck_assert_int_eq(bin->encoding, OBJ_ENC_EMBSTR);
    ck_assert_uint_eq(bin->len, 3);
    ck_assert_mem_eq(bin->v.ptr, "a\0b", 3);

    obj_decref(e);
    obj_decref(r);
    obj_decref(digits);
    obj_decref(bin);
}
END_TEST

START_TEST(test_raw_constructors) {
    kobj *o = obj_string_raw("123", 3); /* no integer detection */
    ck_assert_int_eq(o->encoding, OBJ_ENC_RAW);
    expect_bytes(o, "123");
    obj_decref(o);

    kobj *a = obj_string_alloc(100);
    ck_assert_int_eq(a->encoding, OBJ_ENC_RAW);
    ck_assert_uint_eq(a->len, 0);
    ck_assert_uint_eq(a->cap, 100);
    memset(a->v.ptr, 'z', 100); /* the whole capacity is writable */
    a->v.ptr[100] = '\0';
    a->len = 100;
    ck_assert_uint_eq(obj_strlen(a), 100);
    obj_decref(a);

    char *buf = km_alloc(65);
    memcpy(buf, "adopted", 7);
    kobj *ad = obj_string_adopt(buf, 7, 64);
    ck_assert_ptr_eq(ad->v.ptr, buf);
    ck_assert_int_eq(ad->encoding, OBJ_ENC_RAW);
    ck_assert_uint_eq(ad->cap, 64);
    ck_assert_int_eq(buf[7], '\0');
    expect_bytes(ad, "adopted");
    obj_decref(ad); /* frees buf too (LeakSanitizer checks) */
}
END_TEST

START_TEST(test_obj_str_int) {
    char buf[32];
    size_t len;
    kobj *mn = obj_int(INT64_MIN);
    const char *s = obj_str(mn, buf, &len);
    ck_assert_uint_eq(len, 20);
    ck_assert_str_eq(s, "-9223372036854775808");
    ck_assert_uint_eq(obj_strlen(mn), 20);
    obj_decref(mn);

    kobj *mx = obj_int(INT64_MAX);
    s = obj_str(mx, buf, &len);
    ck_assert_str_eq(s, "9223372036854775807");
    ck_assert_uint_eq(obj_strlen(mx), 19);
    obj_decref(mx);

    const int64_t vals[] = {0, -1, 1, 9, 10, -10, 1000000, -999999999};
    const char *want[] = {"0", "-1", "1", "9", "10", "-10", "1000000", "-999999999"};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        kobj *o = obj_int(vals[i]);
        ck_assert_int_eq(o->encoding, OBJ_ENC_INT);
        expect_bytes(o, want[i]);
        obj_decref(o);
    }
}
END_TEST

/* ---- reference counts ---------------------------------------------------- */

START_TEST(test_refcount) {
    kobj *objs[3] = {mkstr("42000"), mkstr("short"), obj_string_raw("a longer raw string value", 25)};
    for (int i = 0; i < 3; i++) {
        kobj *o = objs[i];
        ck_assert_uint_eq(o->refcount, 1);
        ck_assert_ptr_eq(obj_incref(o), o);
        ck_assert_ptr_eq(obj_incref(o), o);
        ck_assert_uint_eq(o->refcount, 3);
        obj_decref(o);
        obj_decref(o);
        ck_assert_uint_eq(o->refcount, 1);
        /* still readable after the other references went away */
        char buf[32];
        size_t len;
        const char *s = obj_str(o, buf, &len);
        ck_assert_uint_gt(len, 0);
        ck_assert_uint_eq(len, obj_strlen(o));
        (void)s;
        obj_decref(o); /* last reference: freed (LeakSanitizer/ASan check) */
    }
}
END_TEST

/* INT and EMBSTR objects are allocated without the RAW/module fields, so
 * they land in smaller size classes: a 16-byte string in 48 bytes, an
 * unshared integer in 32 (jemalloc's classes; other allocators round
 * differently). */
START_TEST(test_short_headers) {
    char s[17] = "0123456789abcdef";
    kobj *e = obj_string(s, 16);
    kobj *i = obj_int(123456789);
    ck_assert_int_eq(e->encoding, OBJ_ENC_EMBSTR);
    ck_assert_int_eq(i->encoding, OBJ_ENC_INT);
    ck_assert_uint_eq(OBJ_SHORT_HEADER, 24);
    ck_assert_mem_eq(e->v.ptr, s, 17);
#ifdef KEEL_HAVE_JEMALLOC
    ck_assert_uint_le(obj_mem_usage(e), 48);
    ck_assert_uint_le(obj_mem_usage(i), 32);
#endif
    /* still fully usable: grows into a RAW copy, copies stay short */
    kobj *w = obj_make_writable(obj_incref(e), 100);
    ck_assert_int_eq(w->encoding, OBJ_ENC_RAW);
    ck_assert_uint_ge(w->cap, 100);
    ck_assert_mem_eq(w->v.ptr, s, 16);
    kobj *c = obj_copy(e);
    ck_assert_int_eq(c->encoding, OBJ_ENC_EMBSTR);
    ck_assert_mem_eq(c->v.ptr, s, 17);
    obj_decref(w);
    obj_decref(c);
    obj_decref(e);
    obj_decref(i);
}
END_TEST

START_TEST(test_mem_usage) {
    kobj *e = mkstr("abc");
    kobj *r = obj_string_raw("abc", 3);
    kobj *big = obj_string_alloc(4096);
    ck_assert_uint_ge(obj_mem_usage(e), OBJ_SHORT_HEADER + 4);
    /* RAW counts its separate buffer too */
    ck_assert_uint_ge(obj_mem_usage(big), sizeof(kobj) + 4096);
    ck_assert_uint_gt(obj_mem_usage(big), obj_mem_usage(r));
    obj_decref(e);
    obj_decref(r);
    obj_decref(big);
}
END_TEST

/* ---- obj_make_writable ---------------------------------------------------- */

START_TEST(test_writable_shared_copies) {
    kobj *o = obj_string_raw("shared", 6);
    obj_incref(o); /* e.g. a reply still references it */
    kobj *w = obj_make_writable(o, 10);
    ck_assert_ptr_ne(w, o);
    ck_assert_int_eq(w->encoding, OBJ_ENC_RAW);
    ck_assert_uint_eq(w->refcount, 1);
    ck_assert_uint_ge(w->cap, 10);
    expect_bytes(w, "shared");
    ck_assert_int_eq(w->v.ptr[6], '\0');
    /* the caller's reference was consumed; the other holder's remains */
    ck_assert_uint_eq(o->refcount, 1);
    /* writing the copy leaves the shared value alone */
    memcpy(w->v.ptr + 6, "-new", 5);
    w->len = 10;
    expect_bytes(w, "shared-new");
    expect_bytes(o, "shared");
    obj_decref(o);
    obj_decref(w);
}
END_TEST

START_TEST(test_writable_grows_in_place) {
    kobj *o = obj_string_raw("abc", 3);
    ck_assert_uint_eq(o->cap, 3);
    kobj *w = obj_make_writable(o, 1000);
    ck_assert_ptr_eq(w, o); /* same object, buffer grown */
    ck_assert_uint_ge(w->cap, 1000);
    expect_bytes(w, "abc");
    memset(w->v.ptr + 3, 'q', 997); /* ASan: the capacity must be real */
    w->v.ptr[1000] = '\0';
    w->len = 1000;

    /* enough room already: no reallocation */
    char *before = w->v.ptr;
    size_t cap = w->cap;
    kobj *w2 = obj_make_writable(w, 10);
    ck_assert_ptr_eq(w2, w);
    ck_assert_ptr_eq(w2->v.ptr, before);
    ck_assert_uint_eq(w2->cap, cap);
    ck_assert_uint_eq(w2->len, 1000);
    obj_decref(w2);
}
END_TEST

START_TEST(test_writable_from_embstr_and_int) {
    kobj *e = mkstr("emb");
    ck_assert_int_eq(e->encoding, OBJ_ENC_EMBSTR);
    kobj *w = obj_make_writable(e, 5); /* e is consumed (freed) */
    ck_assert_int_eq(w->encoding, OBJ_ENC_RAW);
    ck_assert_uint_eq(w->refcount, 1);
    ck_assert_uint_ge(w->cap, 5);
    expect_bytes(w, "emb");
    obj_decref(w);

    kobj *i = mkstr("-12345");
    ck_assert_int_eq(i->encoding, OBJ_ENC_INT);
    kobj *wi = obj_make_writable(i, 0);
    ck_assert_int_eq(wi->encoding, OBJ_ENC_RAW);
    ck_assert_uint_ge(wi->cap, 6);
    expect_bytes(wi, "-12345");
    int64_t v = 0;
    ck_assert(obj_get_int(wi, &v));
    ck_assert(v == -12345);
    obj_decref(wi);
}
END_TEST

/* ---- obj_get_int ---------------------------------------------------------- */

START_TEST(test_get_int) {
    int64_t v = 7;
    kobj *i = obj_int(-77);
    ck_assert(obj_get_int(i, &v));
    ck_assert(v == -77);
    obj_decref(i);

    kobj *r = obj_string_raw("123", 3);
    v = 0;
    ck_assert(obj_get_int(r, &v));
    ck_assert(v == 123);
    obj_decref(r);

    kobj *mn = obj_string_raw("-9223372036854775808", 20);
    ck_assert(obj_get_int(mn, &v));
    ck_assert(v == INT64_MIN);
    obj_decref(mn);

    const char *bad[] = {"12a", "007", " 1", "+1", "", "9223372036854775808", "1.5", "abc"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        kobj *o = obj_string_raw(bad[k], strlen(bad[k]));
        v = 99;
        int ok = obj_get_int(o, &v);
        obj_decref(o);
        ck_assert_msg(!ok, "obj_get_int(\"%s\") accepted", bad[k]);
        ck_assert_msg(v == 99, "obj_get_int(\"%s\") wrote *out on failure", bad[k]);
    }

    kobj *e = mkstr("hello");
    ck_assert(!obj_get_int(e, &v));
    obj_decref(e);
}
END_TEST

/* ---- str_to_ll / ll_to_str -------------------------------------------------- */

START_TEST(test_str_to_ll) {
    long long v = 0;
    ck_assert(ll_ok("0", &v) && v == 0);
    ck_assert(ll_ok("123", &v) && v == 123);
    ck_assert(ll_ok("-5", &v) && v == -5);
    ck_assert(ll_ok("9223372036854775807", &v) && v == LLONG_MAX);
    ck_assert(ll_ok("-9223372036854775808", &v) && v == LLONG_MIN);

    const char *bad[] = {"",      "-",     "+1",   " 1",  "1 ",   "01",   "-0", "-01",
                         "00",    "1a",    "a1",   "1.0", "1e3",  "0x1",  "--1",
                         "9223372036854775808", "-9223372036854775809",
                         "18446744073709551615", "18446744073709551616",
                         "99999999999999999999", "-99999999999999999999",
                         "123456789012345678901"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = 4242;
        int ok = ll_ok(bad[i], &v);
        ck_assert_msg(!ok, "str_to_ll(\"%s\") accepted (%lld)", bad[i], v);
        ck_assert_msg(v == 4242, "str_to_ll(\"%s\") wrote *out on failure", bad[i]);
    }
    /* the length bounds the parse: "12" out of "123" */
    ck_assert(str_to_ll("123", 2, &v) && v == 12);
    /* an embedded NUL is not a digit */
    ck_assert(!str_to_ll("1\0" "2", 3, &v));
}
END_TEST

START_TEST(test_ll_to_str) {
    char buf[32];
    const long long vals[] = {0, 1, -1, 42, -42, 1000, LLONG_MAX, LLONG_MIN, LLONG_MIN + 1};
    const char *want[] = {"0",  "1",    "-1", "42", "-42", "1000", "9223372036854775807",
                          "-9223372036854775808", "-9223372036854775807"};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        memset(buf, 'X', sizeof(buf));
        size_t n = ll_to_str(buf, vals[i]);
        ck_assert_str_eq(buf, want[i]);
        ck_assert_uint_eq(n, strlen(want[i]));
        /* round trip */
        long long back;
        ck_assert(str_to_ll(buf, n, &back) && back == vals[i]);
    }
}
END_TEST

/* ---- str_to_ld / ld_to_str ---------------------------------------------------- */

START_TEST(test_ld_to_str_basic) {
    expect_ld(10.5L, "10.5");
    expect_ld(3.0L, "3");
    expect_ld(-3.0L, "-3");
    expect_ld(0.0L, "0");
    expect_ld(-0.0L, "0"); /* no negative zero */
    expect_ld(-1e-20L, "0"); /* rounds to "-0.000..." -> "0" */
    expect_ld(1e-20L, "0");
    expect_ld(0.25L, "0.25");
    expect_ld(-2.5L, "-2.5");
    expect_ld(1e-5L, "0.00001");
    expect_ld(100.0L, "100"); /* zeros before the dot are not trimmed */
    expect_ld(1e17L, "100000000000000000");
    expect_ld(-1e17L, "-100000000000000000");
    expect_ld(12345678901234567890.0L, "12345678901234567890"); /* long double precision */
    expect_ld(INFINITY, "inf");
    expect_ld(-INFINITY, "-inf");
}
END_TEST

/* The expected strings of Valkey's tests/unit/type/incr.tcl. */
START_TEST(test_ld_incrbyfloat_like_valkey) {
    expect_incrbyfloat("0", "1", "1");
    expect_incrbyfloat("1", "0.25", "1.25");
    expect_incrbyfloat("1.5", "1.5", "3");
    expect_incrbyfloat("17179869184", "1.5", "17179869185.5");
    expect_incrbyfloat("17179869184", "17179869184", "34359738368");
    expect_incrbyfloat("1", "-1.1", "-0.1");
    expect_incrbyfloat("10.5", "0.1", "10.6");
    expect_incrbyfloat("0.1", "0.2", "0.3");
    expect_incrbyfloat("5.0e3", "2.0e2", "5200");
    expect_incrbyfloat("1e17", "0", "100000000000000000");

    /* "No negative zero": 1/41 then -1/41 */
    long double v = 1.0L / 41 + (-1.0L / 41);
    expect_ld(v, "0");
}
END_TEST

START_TEST(test_ld_to_str_small_buffer) {
    /* Valkey's ld2string returns 0 when the text does not fit; a formatter
     * must never write past buflen. The canary after the first 8 bytes must
     * stay untouched. */
    char buf[64];
    memset(buf, 'C', sizeof(buf));
    size_t n = ld_to_str(buf, 8, 123456789.5L);
    int canary_ok = 1;
    for (size_t i = 8; i < sizeof(buf); i++)
        if (buf[i] != 'C') canary_ok = 0;
    ck_assert_msg(canary_ok, "ld_to_str(buf, 8, 123456789.5) wrote past buflen");
    ck_assert_msg(n < 8, "ld_to_str returned %zu for an 8-byte buffer", n);
}
END_TEST

START_TEST(test_str_to_ld) {
    long double v = 0;
    ck_assert(str_to_ld("10.5", 4, &v) && v == 10.5L);
    ck_assert(str_to_ld("-1.1", 4, &v) && v == -1.1L);
    ck_assert(str_to_ld("1e3", 3, &v) && v == 1000.0L);
    ck_assert(str_to_ld("0", 1, &v) && v == 0.0L);
    ck_assert(str_to_ld("17179869184", 11, &v) && v == 17179869184.0L);

    const char *bad[] = {"", " 1", "1 ", " 11 ", "    11", "nan", "NaN", "-nan", "abc",
                         "1.5x", "1,5", "1e99999", "-1e99999", "\t1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = 7.0L;
        int ok = str_to_ld(bad[i], strlen(bad[i]), &v);
        ck_assert_msg(!ok, "str_to_ld(\"%s\") accepted", bad[i]);
    }
    /* "string to double with null terminator": 1\0 2 */
    ck_assert(!str_to_ld("1\0" "2", 3, &v));
    /* the length bounds the parse */
    ck_assert(str_to_ld("2.5junk", 3, &v) && v == 2.5L);

    double d = 0;
    ck_assert(str_to_double("0.5", 3, &d) && d == 0.5);
    ck_assert(!str_to_double(" 0.5", 4, &d));
}
END_TEST

/* ---- shared integers ------------------------------------------------------ */

START_TEST(test_shared_ints_are_shared) {
    kobj *a = mkstr("42"), *b = obj_int(42), *z = obj_string("0", 1), *top = obj_int(OBJ_SHARED_INTEGERS - 1);
    ck_assert_ptr_eq(a, b);
    ck_assert_uint_eq(a->refcount, OBJ_SHARED_REFCOUNT);
    ck_assert_uint_eq(OBJ_SHARED_REFCOUNT, 2147483647u); /* what OBJECT REFCOUNT reports, as Valkey */
    ck_assert(obj_is_shared(a) && obj_is_shared(z) && obj_is_shared(top));
    ck_assert_int_eq(a->encoding, OBJ_ENC_INT);
    ck_assert(z->v.ival == 0 && top->v.ival == OBJ_SHARED_INTEGERS - 1);
    ck_assert_uint_eq(obj_strlen(top), 4);
    ck_assert_uint_eq(obj_strlen(z), 1);
    expect_bytes(a, "42");
    ck_assert_str_eq(obj_encoding_name(a), "int");
    ck_assert_uint_eq(obj_mem_usage(a), sizeof(kobj));
    /* just outside the range: private objects */
    kobj *neg = obj_int(-1), *big = obj_int(OBJ_SHARED_INTEGERS);
    ck_assert(!obj_is_shared(neg) && !obj_is_shared(big));
    ck_assert_uint_eq(neg->refcount, 1);
    ck_assert_uint_eq(big->refcount, 1);
    kobj *big2 = obj_int(OBJ_SHARED_INTEGERS);
    ck_assert_ptr_ne(big2, big);
    obj_decref(big2);
    obj_decref(neg);
    obj_decref(big);
    obj_decref(a);
    obj_decref(b);
    obj_decref(z);
    obj_decref(top);
}
END_TEST

START_TEST(test_shared_refcount_never_moves) {
    kobj *o = obj_int(7);
    /* far more drops than takes: never freed (ASan would see a bad free) */
    for (int i = 0; i < 100000; i++) obj_decref(o);
    ck_assert_uint_eq(o->refcount, OBJ_SHARED_REFCOUNT);
    /* and takes never overflow it */
    for (int i = 0; i < 100000; i++) ck_assert_ptr_eq(obj_incref(o), o);
    ck_assert_uint_eq(o->refcount, OBJ_SHARED_REFCOUNT);
    ck_assert(o->v.ival == 7);
    expect_bytes(o, "7");
    /* a private object just below the mark is counted as usual */
    kobj *p = obj_int(123456);
    obj_incref(p);
    ck_assert_uint_eq(p->refcount, 2);
    obj_decref(p);
    obj_decref(p);
}
END_TEST

START_TEST(test_shared_writable_copies) {
    kobj *o = obj_int(99);
    kobj *w = obj_make_writable(o, 8);
    ck_assert_ptr_ne(w, o);
    ck_assert_int_eq(w->encoding, OBJ_ENC_RAW);
    ck_assert_uint_eq(w->refcount, 1);
    expect_bytes(w, "99");
    memcpy(w->v.ptr + 2, "xx", 3);
    w->len = 4;
    expect_bytes(w, "99xx");
    /* the shared object is untouched and still shared */
    ck_assert_ptr_eq(obj_int(99), o);
    ck_assert_uint_eq(o->refcount, OBJ_SHARED_REFCOUNT);
    ck_assert(o->v.ival == 99);
    expect_bytes(o, "99");
    obj_decref(w);
}
END_TEST

START_TEST(test_shared_copy_is_private) {
    kobj *o = obj_int(5);
    kobj *c = obj_copy(o);
    ck_assert_ptr_ne(c, o);
    ck_assert_uint_eq(c->refcount, 1);
    ck_assert_int_eq(c->encoding, OBJ_ENC_INT);
    ck_assert(c->v.ival == 5);
    obj_decref(c);
}
END_TEST

static Suite *object_suite(void) {
    Suite *s = suite_create("object");
    TCase *enc = tcase_create("encodings");
    tcase_add_test(enc, test_int_encoding);
    tcase_add_test(enc, test_not_int_encoding);
    tcase_add_test(enc, test_embstr_raw_boundary);
    tcase_add_test(enc, test_raw_constructors);
    tcase_add_test(enc, test_obj_str_int);
    suite_add_tcase(s, enc);

    TCase *ref = tcase_create("refcount");
    tcase_add_test(ref, test_refcount);
    tcase_add_test(ref, test_mem_usage);
    tcase_add_test(ref, test_short_headers);
    tcase_add_test(ref, test_writable_shared_copies);
    tcase_add_test(ref, test_writable_grows_in_place);
    tcase_add_test(ref, test_writable_from_embstr_and_int);
    tcase_add_test(ref, test_get_int);
    suite_add_tcase(s, ref);

    TCase *shared = tcase_create("shared");
    tcase_add_test(shared, test_shared_ints_are_shared);
    tcase_add_test(shared, test_shared_refcount_never_moves);
    tcase_add_test(shared, test_shared_writable_copies);
    tcase_add_test(shared, test_shared_copy_is_private);
    suite_add_tcase(s, shared);

    TCase *num = tcase_create("numbers");
    tcase_add_test(num, test_str_to_ll);
    tcase_add_test(num, test_ll_to_str);
    tcase_add_test(num, test_ld_to_str_basic);
    tcase_add_test(num, test_ld_incrbyfloat_like_valkey);
    tcase_add_test(num, test_ld_to_str_small_buffer);
    tcase_add_test(num, test_str_to_ld);
    suite_add_tcase(s, num);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(object_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
