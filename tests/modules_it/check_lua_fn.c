/* check_lua_fn.c -- unit tests of FUNCTION's text and payload rules
 * (modules/lua/fn_meta.c, fn_dump.c) compiled alone: the shebang parser
 * with Valkey's messages, the name rule, the LIBRARYNAME glob, and the
 * FUNCTION DUMP payload: round trips, the CRC-64 check value, and refusal
 * of every truncation, bit flip and forged length. */
#include "fn_dump.h"
#include "fn_meta.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static char scratch[4096], err[256];
static fn_meta meta;

static int parse(const char *code) {
    return fn_meta_parse(code, strlen(code), &meta, scratch, err, sizeof err);
}

static void expect_meta_error(const char *code, const char *want) {
    ck_assert_msg(!parse(code), "%s parsed", code);
    ck_assert_str_eq(err, want);
}

START_TEST(test_meta_ok) {
    ck_assert(parse("#!lua name=mylib\nreturn 1"));
    ck_assert_int_eq((int)meta.engine_len, 3);
    ck_assert(memcmp(meta.engine, "lua", 3) == 0);
    ck_assert_int_eq((int)meta.name_len, 5);
    ck_assert(memcmp(meta.name, "mylib", 5) == 0);
    ck_assert_str_eq(meta.body, "\nreturn 1");
    ck_assert(parse("#!LUA   NAME=\"foo\"  \n"));
    ck_assert(memcmp(meta.name, "foo", 3) == 0 && meta.name_len == 3);
    ck_assert(parse("#!lua name='a\\'b'\nx"));
    ck_assert(meta.name_len == 3 && memcmp(meta.name, "a'b", 3) == 0);
    ck_assert(parse("#!lua name=\"\\x41\\n\"\nx"));
    ck_assert(meta.name_len == 2 && memcmp(meta.name, "A\n", 2) == 0);
    ck_assert(parse("#! name=test\nx"));
    ck_assert_int_eq((int)meta.engine_len, 0);
}
END_TEST

START_TEST(test_meta_errors) {
    expect_meta_error("return 1", "Missing library metadata");
    expect_meta_error("#", "Missing library metadata");
    expect_meta_error("#!lua name=x", "Invalid library metadata");
    expect_meta_error("#!lua name=\"x\n", "Invalid library metadata");
    expect_meta_error("#!lua name=\"x\"y\n", "Invalid library metadata");
    expect_meta_error("#!lua\nreturn 1", "Library name was not given");
    expect_meta_error("#!lua name=test foo=bar\n", "Invalid metadata value given: foo=bar");
    expect_meta_error("#!lua name=foo name=bar\n",
                      "Invalid metadata value, name argument was given multiple times");
    /* A NUL before the newline ends the code for Valkey: no newline. */
    char nul[] = "#!lua name=a\0b\nreturn 1";
    ck_assert(!fn_meta_parse(nul, sizeof nul - 1, &meta, scratch, err, sizeof err));
    ck_assert_str_eq(err, "Invalid library metadata");
}
END_TEST

START_TEST(test_names) {
    ck_assert(fn_name_valid("abc_09XY", 8));
    ck_assert(!fn_name_valid("", 0));
    ck_assert(!fn_name_valid("a-b", 3));
    ck_assert(!fn_name_valid("bad\\0format", 11));
    ck_assert(!fn_name_valid("a\0b", 3));
}
END_TEST

static int glob(const char *p, const char *s) {
    return fn_glob_match(p, strlen(p), s, strlen(s));
}

START_TEST(test_glob) {
    ck_assert(glob("library*", "library1"));
    ck_assert(!glob("library*", "lib1"));
    ck_assert(glob("*", ""));
    ck_assert(glob("LIB?", "lib1"));
    ck_assert(glob("l[a-i]b", "lib"));
    ck_assert(!glob("l[^a-i]b", "lib"));
    ck_assert(glob("l[^a-h]b", "lib"));
    ck_assert(glob("a\\*b", "a*b"));
    ck_assert(!glob("a\\*b", "axb"));
    ck_assert(glob("*a*b*c", "xxaxxbxxc"));
    ck_assert(!glob("*a*b*c", "xxaxxbxx"));
    ck_assert(glob("[abc", "b"));
    /* A pattern that is exponential for naive backtracking stays fast. */
    char s[4001];
    memset(s, 'a', 4000);
    s[4000] = '\0';
    ck_assert(!glob("*a*a*a*a*a*a*a*a*a*a*a*a*b", s));
}
END_TEST

/* ---- FUNCTION DUMP payload ---- */

START_TEST(test_crc64_check_value) {
    /* The check value of CRC-64/Jones as Valkey uses it. */
    ck_assert(fn_dump_crc64(0, (const unsigned char *)"123456789", 9) == 0xe9c6d914c4b8d9caULL);
}
END_TEST

static unsigned char *make(const char *const *codes, size_t n, size_t *len) {
    size_t lens[8];
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(codes[i]);
    *len = fn_dump_size(lens, n);
    ck_assert(*len > 0);
    unsigned char *p = malloc(*len);
    fn_dump_write(p, codes, lens, n);
    return p;
}

START_TEST(test_dump_round_trip) {
    const char *codes[] = {"#!lua name=a\nx", "", "#!lua name=b\ny"};
    size_t len;
    unsigned char *p = make(codes, 3, &len);
    ck_assert_int_eq((int)len, 6 + 1 + 4 + 3 * 4 + 14 + 0 + 14 + 8);
    fn_dump_iter it;
    ck_assert_int_eq(fn_dump_check(p, len, &it), FN_DUMP_OK);
    const char *code;
    size_t clen;
    for (int i = 0; i < 3; i++) {
        ck_assert(fn_dump_next(&it, &code, &clen));
        ck_assert_int_eq((int)clen, (int)strlen(codes[i]));
        ck_assert(memcmp(code, codes[i], clen) == 0);
    }
    ck_assert(!fn_dump_next(&it, &code, &clen));
    free(p);
    p = make(codes, 0, &len);
    ck_assert_int_eq(fn_dump_check(p, len, &it), FN_DUMP_OK);
    ck_assert(!fn_dump_next(&it, &code, &clen));
    free(p);
}
END_TEST

START_TEST(test_dump_refuses_garbage) {
    fn_dump_iter it;
    ck_assert_int_eq(fn_dump_check((const unsigned char *)"bad_payload", 11, &it),
                     FN_DUMP_BAD_ENVELOPE);
    ck_assert_int_eq(fn_dump_check((const unsigned char *)"", 0, &it), FN_DUMP_BAD_ENVELOPE);
    const char *codes[] = {"#!lua name=a\nx", "#!lua name=b\nyy"};
    size_t len;
    unsigned char *p = make(codes, 2, &len);
    /* Every truncation and every single-bit flip is refused. */
    for (size_t cut = 0; cut < len; cut++)
        ck_assert_int_ne(fn_dump_check(p, cut, &it), FN_DUMP_OK);
    for (size_t i = 0; i < len; i++)
        for (int b = 0; b < 8; b++) {
            p[i] ^= (unsigned char)(1u << b);
            ck_assert_int_ne(fn_dump_check(p, len, &it), FN_DUMP_OK);
            p[i] ^= (unsigned char)(1u << b);
        }
    /* A wrong version is the envelope's error even with a valid CRC. */
    p[6] = 2;
    uint64_t crc = fn_dump_crc64(0, p, len - 8);
    for (int i = 0; i < 8; i++)
        p[len - 8 + i] = (unsigned char)(crc >> (8 * i));
    ck_assert_int_eq(fn_dump_check(p, len, &it), FN_DUMP_BAD_ENVELOPE);
    free(p);
}
END_TEST

/* Re-seals a payload after an edit, as a forger would. */
static void reseal(unsigned char *p, size_t len) {
    uint64_t crc = fn_dump_crc64(0, p, len - 8);
    for (int i = 0; i < 8; i++)
        p[len - 8 + i] = (unsigned char)(crc >> (8 * i));
}

START_TEST(test_dump_forged_lengths) {
    const char *codes[] = {"#!lua name=a\nx"};
    size_t len;
    fn_dump_iter it;
    unsigned char *p = make(codes, 1, &len);
    /* count 0xffffffff, a huge entry length, a short one, an extra count */
    static const struct {
        size_t at;
        unsigned char v[4];
    } forgeries[] = {
        {7, {0xff, 0xff, 0xff, 0xff}},
        {7, {2, 0, 0, 0}},
        {7, {0, 0, 0, 0}},
        {11, {0xff, 0xff, 0xff, 0xff}},
        {11, {0xf0, 0xff, 0xff, 0xff}},
        {11, {1, 0, 0, 0}},
    };
    for (size_t f = 0; f < sizeof forgeries / sizeof forgeries[0]; f++) {
        unsigned char *q = malloc(len);
        memcpy(q, p, len);
        memcpy(q + forgeries[f].at, forgeries[f].v, 4);
        reseal(q, len);
        ck_assert_int_eq(fn_dump_check(q, len, &it), FN_DUMP_MALFORMED);
        free(q);
    }
    free(p);
    size_t lens[] = {(size_t)UINT32_MAX + 1};
    ck_assert_int_eq((int)fn_dump_size(lens, 1), 0);
}
END_TEST

static Suite *fn_suite(void) {
    Suite *s = suite_create("lua_fn");
    TCase *m = tcase_create("meta");
    tcase_add_test(m, test_meta_ok);
    tcase_add_test(m, test_meta_errors);
    tcase_add_test(m, test_names);
    tcase_add_test(m, test_glob);
    suite_add_tcase(s, m);
    TCase *d = tcase_create("dump");
    tcase_add_test(d, test_crc64_check_value);
    tcase_add_test(d, test_dump_round_trip);
    tcase_add_test(d, test_dump_refuses_garbage);
    tcase_add_test(d, test_dump_forged_lengths);
    suite_add_tcase(s, d);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(fn_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
