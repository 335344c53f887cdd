/* check_glob.c -- unit tests for ds/glob.c (Valkey's stringmatchlen
 * rules, including its quirks, on non-NUL-terminated slices). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ds/glob.h"

static int gm(const char *pat, const char *s) {
    return glob_match(pat, strlen(pat), s, strlen(s), 0);
}

static int gm_nocase(const char *pat, const char *s) {
    return glob_match(pat, strlen(pat), s, strlen(s), 1);
}

#define MATCH(p, s) ck_assert_msg(gm(p, s), "'%s' should match '%s'", p, s)
#define NOMATCH(p, s) ck_assert_msg(!gm(p, s), "'%s' should not match '%s'", p, s)

START_TEST(test_literals) {
    MATCH("", "");
    MATCH("hello", "hello");
    NOMATCH("hello", "hell");
    NOMATCH("hell", "hello");
    NOMATCH("hello", "Hello");
    NOMATCH("", "a");
    NOMATCH("a", "");
}
END_TEST

START_TEST(test_star) {
    MATCH("*", "anything");
    MATCH("h*o", "hello");
    MATCH("h*o", "ho");
    MATCH("h*", "h");
    MATCH("*o", "hello");
    MATCH("*ll*", "hello");
    MATCH("a*b*c", "aXXbYYc");
    MATCH("a**b", "aXb");
    MATCH("a*", "a");
    MATCH("a***", "a");
    NOMATCH("h*x", "hello");
    NOMATCH("a*b*c", "aXXbYY");
    /* Valkey quirk: an empty subject only matches an empty pattern; KEYS
     * and SCAN short-cut the lone "*" before calling the matcher. */
    NOMATCH("*", "");
    NOMATCH("**", "");
}
END_TEST

START_TEST(test_question) {
    MATCH("h?llo", "hello");
    MATCH("h?llo", "hallo");
    MATCH("???", "abc");
    NOMATCH("???", "ab");
    NOMATCH("???", "abcd");
    NOMATCH("h?llo", "hllo");
    MATCH("?*", "a");
    NOMATCH("?*", "");
}
END_TEST

START_TEST(test_classes) {
    MATCH("h[ae]llo", "hello");
    MATCH("h[ae]llo", "hallo");
    NOMATCH("h[ae]llo", "hillo");
    MATCH("h[^e]llo", "hallo");
    NOMATCH("h[^e]llo", "hello");
    MATCH("h[a-c]llo", "hbllo");
    NOMATCH("h[a-c]llo", "hdllo");
    MATCH("[0-9][0-9]", "42");
    NOMATCH("[0-9]", "x");
    MATCH("[^0-9]", "x");
    /* A reversed range is the same range. */
    MATCH("[c-a]", "b");
    MATCH("[z-a]x", "mx");
    NOMATCH("[c-a]", "d");
    /* "]" right after "[" closes an empty class that matches nothing. */
    NOMATCH("[]", "a");
    NOMATCH("[]a]", "a");
    /* A '-' before the closing ']' makes ']' the end of a range, and the
     * class then runs to the end of the pattern (Valkey quirk). */
    MATCH("[a-]", "a");
    MATCH("[a-]", "]");
    NOMATCH("[ab-]", "-");
    MATCH("[ab-]", "]");
    /* Unterminated classes run to the end of the pattern. */
    MATCH("[abc", "b");
    NOMATCH("[abc", "d");
    NOMATCH("[", "a");
    MATCH("[^", "a");
    MATCH("x[^", "xz");
    /* Several ranges and literals in one class. */
    MATCH("[a-cx-z_]", "y");
    MATCH("[a-cx-z_]", "_");
    NOMATCH("[a-cx-z_]", "m");
}
END_TEST

START_TEST(test_escapes) {
    MATCH("\\*", "*");
    NOMATCH("\\*", "a");
    MATCH("\\?", "?");
    NOMATCH("\\?", "x");
    MATCH("a\\[b", "a[b");
    MATCH("\\\\", "\\");
    /* A trailing backslash is a literal backslash. */
    MATCH("a\\", "a\\");
    /* Inside a class, \ makes the next byte literal. */
    MATCH("[\\]]", "]");
    MATCH("[\\-a]", "-");
    MATCH("[\\^]", "^");
    MATCH("[a\\-z]", "-");
    NOMATCH("[a\\-z]", "m");
    MATCH("*\\*", "abc*");
}
END_TEST

START_TEST(test_nocase) {
    ck_assert(gm_nocase("HELLO", "hello"));
    ck_assert(gm_nocase("h*O", "HeLLo"));
    ck_assert(gm_nocase("[A-C]x", "bX"));
    ck_assert(gm_nocase("[a-c]", "B"));
    ck_assert(gm_nocase("[xyZ]", "z"));
    ck_assert(!gm_nocase("[^B]", "b"));
    ck_assert(!gm_nocase("hello", "hellp"));
    /* Escapes inside a class compare exactly, as in Valkey. */
    ck_assert(!gm_nocase("[\\A]", "a"));
    ck_assert(gm_nocase("\\A", "a"));
}
END_TEST

START_TEST(test_slices) {
    /* Lengths are honoured: nothing past them is read as part of the input. */
    ck_assert(glob_match("abcXYZ", 3, "abc", 3, 0));
    ck_assert(glob_match("a*", 2, "abcdef", 3, 0));
    ck_assert(glob_match("a*c", 3, "abcd", 3, 1));
    ck_assert(!glob_match("a*c", 3, "abcd", 4, 1));
    /* Embedded NUL bytes are ordinary bytes. */
    ck_assert(glob_match("a\0b", 3, "a\0b", 3, 0));
    ck_assert(glob_match("a?b", 3, "a\0b", 3, 0));
    ck_assert(!glob_match("a\0b", 3, "a\0c", 3, 0));
    /* High bytes: literal and ? matching. */
    ck_assert(glob_match("\xff?", 2, "\xff\x80", 2, 0));
    ck_assert(glob_match("[\x80-\xff]", 5, "\x90", 1, 0));
    /* Range bounds compare as signed chars, as Valkey on x86: "a-\xff" is
     * the range -1..'a', which does not hold 'b' or \x80. */
    ck_assert(!glob_match("[a-\xff]", 5, "b", 1, 0));
    ck_assert(!glob_match("[a-\xff]", 5, "\x80", 1, 0));
    ck_assert(glob_match("[a-\xff]", 5, "A", 1, 0));
}
END_TEST

static double elapsed_since(const struct timespec *t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

START_TEST(test_pathological) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);

    /* "a*a*a*...a*b" against a long run of a's is exponential without the
     * give-up rule. */
    char pat[4096], subj[8192];
    size_t n = 0;
    for (int i = 0; i < 30; i++) {
        pat[n++] = 'a';
        pat[n++] = '*';
    }
    pat[n++] = 'b';
    memset(subj, 'a', sizeof(subj));
    ck_assert(!glob_match(pat, n, subj, sizeof(subj), 0));
    ck_assert(!glob_match(pat, n, subj, sizeof(subj), 1));

    /* Thousands of consecutive stars collapse into one. */
    memset(pat, '*', sizeof(pat));
    pat[sizeof(pat) - 1] = 'b';
    ck_assert(!glob_match(pat, sizeof(pat), subj, sizeof(subj), 0));
    subj[sizeof(subj) - 1] = 'b';
    ck_assert(glob_match(pat, sizeof(pat), subj, sizeof(subj), 0));

    /* "*?*?*?..." forms: many stars separated by other tokens. */
    n = 0;
    for (int i = 0; i < 500; i++) {
        pat[n++] = '*';
        pat[n++] = '?';
    }
    pat[n++] = 'x';
    memset(subj, 'a', sizeof(subj));
    ck_assert(!glob_match(pat, n, subj, sizeof(subj), 0));

    /* More than 1000 nested stars: bounded recursion gives up (no match),
     * exactly like Valkey, instead of overflowing the stack. */
    n = 0;
    for (int i = 0; i < 1500; i++) {
        pat[n++] = '*';
        pat[n++] = 'a';
    }
    ck_assert(!glob_match(pat, n, subj, sizeof(subj), 0));

    ck_assert_msg(elapsed_since(&t0) < 2.0, "pathological patterns took %.2fs", elapsed_since(&t0));
}
END_TEST

static Suite *glob_suite(void) {
    Suite *s = suite_create("glob");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_literals);
    tcase_add_test(tc, test_star);
    tcase_add_test(tc, test_question);
    tcase_add_test(tc, test_classes);
    tcase_add_test(tc, test_escapes);
    tcase_add_test(tc, test_nocase);
    tcase_add_test(tc, test_slices);
    tcase_add_test(tc, test_pathological);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(glob_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
