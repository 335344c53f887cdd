/* check_resp_tree.c -- unit tests for protocol/resp_tree.c: every RESP2 and
 * RESP3 type, nesting, attributes, the consumed length, binary strings, and
 * truncated or garbage input (every prefix of a valid reply is refused). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/resp_tree.h"

static resp_node *parse(const char *s) {
    size_t used = 0;
    resp_node *t = resp_tree_parse(s, strlen(s), &used);
    if (t) ck_assert_uint_eq(used, strlen(s));
    return t;
}

static void expect_str(const resp_node *n, resp_tree_type type, const char *s) {
    ck_assert_int_eq(n->type, type);
    ck_assert_uint_eq(n->len, strlen(s));
    ck_assert_str_eq(n->v.str, s);
}

START_TEST(test_scalars) {
    resp_node *t = parse("+OK\r\n");
    expect_str(t, RESP_TREE_STATUS, "OK");
    resp_tree_free(t);
    t = parse("-ERR no such key\r\n");
    expect_str(t, RESP_TREE_ERROR, "ERR no such key");
    resp_tree_free(t);
    t = parse(":-42\r\n");
    ck_assert_int_eq(t->type, RESP_TREE_INTEGER);
    ck_assert_int_eq(t->v.ll, -42);
    resp_tree_free(t);
    t = parse("$5\r\nhello\r\n");
    expect_str(t, RESP_TREE_STRING, "hello");
    resp_tree_free(t);
    t = parse("$0\r\n\r\n");
    expect_str(t, RESP_TREE_STRING, "");
    resp_tree_free(t);
    t = parse("$-1\r\n");
    ck_assert_int_eq(t->type, RESP_TREE_NULL);
    resp_tree_free(t);
    t = parse("*-1\r\n");
    ck_assert_int_eq(t->type, RESP_TREE_NULL);
    resp_tree_free(t);
}
END_TEST

START_TEST(test_resp3_scalars) {
    resp_node *t = parse("_\r\n");
    ck_assert_int_eq(t->type, RESP_TREE_NULL);
    resp_tree_free(t);
    t = parse(",3.25\r\n");
    ck_assert_int_eq(t->type, RESP_TREE_DOUBLE);
    ck_assert(t->v.d == 3.25);
    resp_tree_free(t);
    t = parse(",-inf\r\n");
    ck_assert(isinf(t->v.d) && t->v.d < 0);
    resp_tree_free(t);
    t = parse(",nan\r\n");
    ck_assert(isnan(t->v.d));
    resp_tree_free(t);
    t = parse("#t\r\n");
    ck_assert_int_eq(t->type, RESP_TREE_BOOL);
    ck_assert_int_eq(t->v.ll, 1);
    resp_tree_free(t);
    t = parse("#f\r\n");
    ck_assert_int_eq(t->v.ll, 0);
    resp_tree_free(t);
    t = parse("(-1234567890123456789012345678901234567890\r\n");
    expect_str(t, RESP_TREE_BIGNUM, "-1234567890123456789012345678901234567890");
    resp_tree_free(t);
    t = parse("=9\r\nmkd:hello\r\n");
    expect_str(t, RESP_TREE_VERBATIM, "hello");
    ck_assert_str_eq(t->format, "mkd");
    resp_tree_free(t);
    t = parse("!11\r\nERR bad\r\nxy\r\n");
    ck_assert_int_eq(t->type, RESP_TREE_ERROR);
    ck_assert_uint_eq(t->len, 11);
    ck_assert(!memcmp(t->v.str, "ERR bad\r\nxy", 11));
    resp_tree_free(t);
}
END_TEST

START_TEST(test_binary_string) {
    const char raw[] = "$3\r\na\0b\r\n";
    resp_node *t = resp_tree_parse(raw, sizeof(raw) - 1, NULL);
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->len, 3);
    ck_assert(!memcmp(t->v.str, "a\0b", 3));
    ck_assert_int_eq(t->v.str[3], '\0');
    resp_tree_free(t);
}
END_TEST

START_TEST(test_aggregates) {
    resp_node *t = parse("*3\r\n:1\r\n$1\r\na\r\n*2\r\n+x\r\n*0\r\n");
    ck_assert_int_eq(t->type, RESP_TREE_ARRAY);
    ck_assert_uint_eq(t->len, 3);
    ck_assert_int_eq(t->v.elems[0].v.ll, 1);
    expect_str(&t->v.elems[1], RESP_TREE_STRING, "a");
    const resp_node *inner = &t->v.elems[2];
    ck_assert_int_eq(inner->type, RESP_TREE_ARRAY);
    ck_assert_uint_eq(inner->len, 2);
    expect_str(&inner->v.elems[0], RESP_TREE_STATUS, "x");
    ck_assert_int_eq(inner->v.elems[1].type, RESP_TREE_ARRAY);
    ck_assert_uint_eq(inner->v.elems[1].len, 0);
    resp_tree_free(t);

    t = parse("%2\r\n$1\r\nk\r\n:1\r\n+m\r\n~2\r\n#t\r\n_\r\n");
    ck_assert_int_eq(t->type, RESP_TREE_MAP);
    ck_assert_uint_eq(t->len, 2);
    expect_str(&t->v.elems[0], RESP_TREE_STRING, "k");
    ck_assert_int_eq(t->v.elems[1].v.ll, 1);
    expect_str(&t->v.elems[2], RESP_TREE_STATUS, "m");
    const resp_node *set = &t->v.elems[3];
    ck_assert_int_eq(set->type, RESP_TREE_SET);
    ck_assert_uint_eq(set->len, 2);
    ck_assert_int_eq(set->v.elems[0].type, RESP_TREE_BOOL);
    ck_assert_int_eq(set->v.elems[1].type, RESP_TREE_NULL);
    resp_tree_free(t);

    t = parse(">2\r\n$7\r\nmessage\r\n:3\r\n");
    ck_assert_int_eq(t->type, RESP_TREE_ARRAY);
    ck_assert_uint_eq(t->len, 2);
    resp_tree_free(t);
}
END_TEST

START_TEST(test_attribute_skipped) {
    resp_node *t = parse("|1\r\n+key\r\n*1\r\n$3\r\nabc\r\n:7\r\n");
    ck_assert_int_eq(t->type, RESP_TREE_INTEGER);
    ck_assert_int_eq(t->v.ll, 7);
    resp_tree_free(t);
    t = parse("*1\r\n|1\r\n+a\r\n+b\r\n+c\r\n");
    ck_assert_uint_eq(t->len, 1);
    expect_str(&t->v.elems[0], RESP_TREE_STATUS, "c");
    resp_tree_free(t);
}
END_TEST

START_TEST(test_consumed_first_value) {
    const char *two = ":1\r\n:2\r\n";
    size_t used = 0;
    resp_node *t = resp_tree_parse(two, strlen(two), &used);
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(used, 4);
    ck_assert_int_eq(t->v.ll, 1);
    resp_tree_free(t);
}
END_TEST

START_TEST(test_deep_nesting) {
    char buf[8 * (RESP_TREE_MAX_DEPTH + 2) + 8];
    size_t n = 0;
    for (int i = 0; i < RESP_TREE_MAX_DEPTH; i++)
        n += (size_t)sprintf(buf + n, "*1\r\n");
    n += (size_t)sprintf(buf + n, ":5\r\n");
    resp_node *t = resp_tree_parse(buf, n, NULL);
    ck_assert_ptr_nonnull(t);
    const resp_node *p = t;
    for (int i = 0; i < RESP_TREE_MAX_DEPTH; i++)
        p = &p->v.elems[0];
    ck_assert_int_eq(p->v.ll, 5);
    resp_tree_free(t);
    /* One level more is refused. */
    memmove(buf + 4, buf, n);
    memcpy(buf, "*1\r\n", 4);
    ck_assert_ptr_null(resp_tree_parse(buf, n + 4, NULL));
}
END_TEST

/* Attributes before a value count as nesting: a short chain parses, one as
 * long as the depth limit is refused, and a huge one (it overflowed the
 * stack) is refused as well. */
START_TEST(test_attribute_chain) {
    resp_node *t = parse("|0\r\n|0\r\n|0\r\n:9\r\n");
    ck_assert_int_eq(t->type, RESP_TREE_INTEGER);
    ck_assert_int_eq(t->v.ll, 9);
    resp_tree_free(t);
    size_t repeats = 3000000;
    size_t len = 4 * repeats + 4;
    char *buf = malloc(len);
    for (size_t i = 0; i < repeats; i++)
        memcpy(buf + 4 * i, "|0\r\n", 4);
    memcpy(buf + 4 * repeats, ":1\r\n", 4);
    ck_assert_ptr_null(resp_tree_parse(buf, len, NULL));
    ck_assert_ptr_null(resp_tree_parse(buf + 4 * (repeats - RESP_TREE_MAX_DEPTH - 1),
                                       4 * (RESP_TREE_MAX_DEPTH + 2), NULL));
    free(buf);
}
END_TEST

/* Every proper prefix of a valid reply is incomplete, so refused. */
START_TEST(test_truncated) {
    static const char *const valid[] = {
        "+OK\r\n",
        ":12\r\n",
        "$5\r\nhello\r\n",
        "*2\r\n:1\r\n$1\r\nx\r\n",
        "%1\r\n+a\r\n_\r\n",
        "=7\r\ntxt:abc\r\n",
        ",1.5\r\n",
        "#t\r\n",
        "(123\r\n",
        "~1\r\n:1\r\n",
        "|1\r\n+a\r\n+b\r\n:1\r\n",
    };
    for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
        size_t len = strlen(valid[i]);
        resp_node *t = resp_tree_parse(valid[i], len, NULL);
        ck_assert_msg(t != NULL, "valid %s", valid[i]);
        resp_tree_free(t);
        for (size_t cut = 0; cut < len; cut++)
            ck_assert_msg(resp_tree_parse(valid[i], cut, NULL) == NULL, "%s cut at %zu", valid[i],
                          cut);
    }
}
END_TEST

START_TEST(test_garbage) {
    static const char *const bad[] = {
        "hello\r\n",        ":abc\r\n",       ":1\n",
        "$3\r\nab\r\n",     "$3\r\nabcd\r\n", "$-2\r\n",
        "*-2\r\n",          "%-1\r\n",        "#x\r\n",
        "#tt\r\n",          ",\r\n",          ",1.5x\r\n",
        "_x\r\n",           "=2\r\nab\r\n",   "=5\r\ntxt-a\r\n",
        "*99999999999\r\n", "*3\r\n:1\r\n",   "$9999999999999999999\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(resp_tree_parse(bad[i], strlen(bad[i]), NULL) == NULL, "%s", bad[i]);
    ck_assert_ptr_null(resp_tree_parse(NULL, 0, NULL));
    static const char nul_in_double[] = ",1\0x\r\n";
    ck_assert_ptr_null(resp_tree_parse(nul_in_double, sizeof(nul_in_double) - 1, NULL));
}
END_TEST

/* Every byte of valid replies changed to every value: a tree or NULL, never
 * a read past the input (the sanitizer builds check that). */
START_TEST(test_mutations) {
    static const char *const valid[] = {
        "*2\r\n:1\r\n$3\r\nabc\r\n",
        "%1\r\n+a\r\n~1\r\n,1.5\r\n",
        "=7\r\ntxt:abc\r\n",
        "|1\r\n+a\r\n*1\r\n_\r\n:1\r\n",
        "!3\r\nERR\r\n",
        ">1\r\n#t\r\n",
    };
    for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
        size_t len = strlen(valid[i]);
        for (size_t at = 0; at < len; at++) {
            for (int v = 0; v < 256; v++) {
                char *buf = malloc(len);
                memcpy(buf, valid[i], len);
                buf[at] = (char)v;
                size_t used = 0;
                resp_node *t = resp_tree_parse(buf, len, &used);
                if (t) ck_assert_uint_le(used, len);
                resp_tree_free(t);
                free(buf);
            }
        }
    }
}
END_TEST

START_TEST(test_line) {
    resp_node *t = resp_tree_line(RESP_TREE_ERROR, "ERR nope", 8);
    expect_str(t, RESP_TREE_ERROR, "ERR nope");
    resp_tree_free(t);
    resp_tree_free(NULL);
}
END_TEST

static Suite *resp_tree_suite(void) {
    Suite *s = suite_create("resp_tree");
    TCase *tc = tcase_create("types");
    tcase_add_test(tc, test_scalars);
    tcase_add_test(tc, test_resp3_scalars);
    tcase_add_test(tc, test_binary_string);
    tcase_add_test(tc, test_aggregates);
    tcase_add_test(tc, test_attribute_skipped);
    tcase_add_test(tc, test_consumed_first_value);
    tcase_add_test(tc, test_deep_nesting);
    tcase_add_test(tc, test_attribute_chain);
    tcase_add_test(tc, test_line);
    suite_add_tcase(s, tc);
    tc = tcase_create("malformed");
    tcase_add_test(tc, test_truncated);
    tcase_add_test(tc, test_garbage);
    tcase_add_test(tc, test_mutations);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(resp_tree_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
