/* check_splitargs.c -- unit tests for ds/splitargs.c (sdssplitargs rules,
 * in place). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ds/splitargs.h"

#define MAXA 64

/* Splits a copy of src (n bytes) and joins the arguments as "[a][b]..." so a
 * whole result is compared with one string. Returns the count. */
static long split_join(const char *src, size_t n, char *out, size_t outcap) {
    char *line = malloc(n + 1);
    memcpy(line, src, n);
    splitarg a[MAXA];
    long argc = splitargs_inplace(line, n, a, MAXA);
    size_t o = 0;
    out[0] = '\0';
    for (long i = 0; i < argc && i < MAXA; i++) {
        ck_assert_uint_le(a[i].off + a[i].len, n);
        ck_assert_uint_lt(o + a[i].len + 3, outcap);
        out[o++] = '[';
        memcpy(out + o, line + a[i].off, a[i].len);
        o += a[i].len;
        out[o++] = ']';
        out[o] = '\0';
    }
    free(line);
    return argc;
}

static void check_split(const char *src, long want_argc, const char *want) {
    char got[1024];
    long argc = split_join(src, strlen(src), got, sizeof(got));
    ck_assert_msg(argc == want_argc, "'%s': argc %ld, want %ld", src, argc, want_argc);
    if (want) ck_assert_msg(strcmp(got, want) == 0, "'%s': got %s, want %s", src, got, want);
}

START_TEST(test_plain) {
    check_split("", 0, "");
    check_split("   \t \r\n", 0, "");
    check_split("set foo bar", 3, "[set][foo][bar]");
    check_split("  set\t\tfoo  \r\n", 2, "[set][foo]");
    check_split("a\nb\rc\td", 4, "[a][b][c][d]");
    /* \v and \f are blanks between arguments but do not end one. */
    check_split("\v\fa\vb", 1, "[a\vb]");
    check_split("x", 1, "[x]");
}
END_TEST

START_TEST(test_double_quotes) {
    check_split("set \"hello world\"", 2, "[set][hello world]");
    check_split("\"\"", 1, "[]");
    check_split("\"\" \"\"", 2, "[][]");
    check_split("\"a\\nb\\r\\t\\b\\a\"", 1, "[a\nb\r\t\b\a]");
    check_split("\"\\x41\\x7a\\xFf\"", 1, "[Az\xff]");
    check_split("\"\\\"q\\\" \\\\ \\q\"", 1, "[\"q\" \\ q]");
    /* \x without two hex digits is the escape of 'x'. */
    check_split("\"\\x4g\"", 1, "[x4g]");
    check_split("\"\\x4\"", 1, "[x4]");
    check_split("\"\\x\"", 1, "[x]");
    check_split("\"it's\"", 1, "[it's]");
    /* A quote opens anywhere in an argument and a closing one ends it. */
    check_split("foo\"bar baz\" next", 2, "[foobar baz][next]");
    check_split("\"a\"\tb", 2, "[a][b]");
    check_split("\"a\"\vb", 2, "[a][b]");
}
END_TEST

START_TEST(test_single_quotes) {
    check_split("'hello world'", 1, "[hello world]");
    check_split("'it\\'s'", 1, "[it's]");
    check_split("'a\\nb'", 1, "[a\\nb]");
    check_split("'a\\b'", 1, "[a\\b]");
    /* \\' is a literal backslash, then an escaped quote: still open. */
    check_split("'\\\\'", -1, NULL);
    check_split("'say \"hi\"'", 1, "[say \"hi\"]");
    check_split("''", 1, "[]");
}
END_TEST

START_TEST(test_unbalanced) {
    check_split("\"abc", -1, NULL);
    check_split("'abc", -1, NULL);
    check_split("set \"a\"b", -1, NULL);
    check_split("set 'a'b", -1, NULL);
    check_split("\"a\"\"b\"", -1, NULL);
    check_split("\"a\\\"", -1, NULL); /* the escaped quote does not close */
    check_split("\"a\\", -1, NULL);   /* trailing backslash inside quotes */
    check_split("'a\\'", -1, NULL);
    check_split("set foo 'b'a'r", -1, NULL);    /* protocol.tcl */
    check_split("set foo \"b\"a\"r", -1, NULL); /* protocol.tcl */
}
END_TEST

START_TEST(test_binary_and_lengths) {
    /* NUL is an ordinary byte: the length is explicit. */
    char got[64];
    long argc = split_join("a\0b c", 5, got, sizeof(got));
    ck_assert_int_eq(argc, 2);
    ck_assert_mem_eq(got, "[a\0b][c]", 8);
    /* Only len bytes are looked at. */
    argc = split_join("ab cd", 4, got, sizeof(got));
    ck_assert_int_eq(argc, 2);
    ck_assert_str_eq(got, "[ab][c]");
    /* A quote closing at the very end of the given length is fine. */
    argc = split_join("\"ab\"xyz", 4, got, sizeof(got));
    ck_assert_int_eq(argc, 1);
    ck_assert_str_eq(got, "[ab]");
}
END_TEST

START_TEST(test_too_many_leaves_line_intact) {
    char line[] = "\"a b\" 'c' d\\x e";
    char copy[sizeof(line)];
    memcpy(copy, line, sizeof(line));
    splitarg a[4];
    ck_assert_int_eq(splitargs_inplace(line, strlen(line), a, 2), 4);
    ck_assert_str_eq(line, copy); /* unmodified: calling again works */
    ck_assert_int_eq(splitargs_inplace(line, strlen(line), a, 4), 4);
    ck_assert_int_eq(a[0].len, 3);
    ck_assert_mem_eq(line + a[0].off, "a b", 3);
    ck_assert_mem_eq(line + a[1].off, "c", 1);
    ck_assert_mem_eq(line + a[2].off, "d\\x", 3);
    ck_assert_mem_eq(line + a[3].off, "e", 1);
    /* max 0 only counts. */
    char l2[] = "x y z";
    ck_assert_int_eq(splitargs_inplace(l2, 5, NULL, 0), 3);
    ck_assert_str_eq(l2, "x y z");
    /* Unbalanced leaves it intact too. */
    char l3[] = "\"a\\n\" \"b";
    ck_assert_int_eq(splitargs_inplace(l3, strlen(l3), a, 4), -1);
    ck_assert_str_eq(l3, "\"a\\n\" \"b");
}
END_TEST

/* The byte after each argument belongs to no argument, so callers can
 * NUL-terminate in place (the config reader does). */
START_TEST(test_nul_terminate_in_place) {
    const char *cases[] = {
        "a b c", "\"x\\x41y\" 'q\\'r' plain", "'' \"\" x", "k\"v w\" tail", "\"\\n\" \"\" ",
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        size_t n = strlen(cases[c]);
        char *line = malloc(n + 1);
        memcpy(line, cases[c], n + 1);
        splitarg a[8];
        long argc = splitargs_inplace(line, n, a, 8);
        if (argc < 0) {
            free(line);
            continue;
        }
        char saved[8][32];
        for (long i = 0; i < argc; i++) {
            memcpy(saved[i], line + a[i].off, a[i].len);
            saved[i][a[i].len] = '\0';
        }
        for (long i = 0; i < argc; i++)
            line[a[i].off + a[i].len] = '\0';
        for (long i = 0; i < argc; i++)
            ck_assert_str_eq(line + a[i].off, saved[i]);
        free(line);
    }
}
END_TEST

START_TEST(test_next_iterator) {
    char line[] = "  one \"two 2\"   'three'  ";
    size_t pos = 0;
    splitarg a;
    const char *want[] = {"one", "two 2", "three"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(splitargs_next(line, strlen(line), &pos, &a), 1);
        ck_assert_uint_eq(a.len, strlen(want[i]));
        ck_assert_mem_eq(line + a.off, want[i], a.len);
    }
    ck_assert_int_eq(splitargs_next(line, strlen(line), &pos, &a), 0);
    ck_assert_int_eq(splitargs_next(line, strlen(line), &pos, &a), 0);

    char bad[] = "ok \"open";
    pos = 0;
    ck_assert_int_eq(splitargs_next(bad, strlen(bad), &pos, &a), 1);
    ck_assert_int_eq(splitargs_next(bad, strlen(bad), &pos, &a), -1);
}
END_TEST

static Suite *splitargs_suite(void) {
    Suite *s = suite_create("splitargs");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_plain);
    tcase_add_test(tc, test_double_quotes);
    tcase_add_test(tc, test_single_quotes);
    tcase_add_test(tc, test_unbalanced);
    tcase_add_test(tc, test_binary_and_lengths);
    tcase_add_test(tc, test_too_many_leaves_line_intact);
    tcase_add_test(tc, test_nul_terminate_in_place);
    tcase_add_test(tc, test_next_iterator);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(splitargs_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
