/* check_it_sort.c -- SORT and SORT_RO over sets, lists and sorted sets
 * against a real
 * keel-server: numeric and ALPHA order, DESC, LIMIT's clamping, BY a key
 * or a hash field or a constant, GET patterns, bad numbers, STORE (an
 * empty result deletes, another becomes a list), the errors, and the keys
 * COMMAND GETKEYS finds. */
#include "harness.h"

#include <string.h>

START_TEST(test_sort_basic) {
    expect_int(C, 5, "SADD s 3 1 2 10 -5");
    expect_reply(C, "[\"-5\",\"1\",\"2\",\"3\",\"10\"]", "SORT s");
    expect_reply(C, "[\"10\",\"3\",\"2\",\"1\",\"-5\"]", "SORT s DESC");
    expect_reply(C, "[\"-5\",\"1\",\"10\",\"2\",\"3\"]", "SORT s ALPHA");
    expect_reply(C, "[\"3\",\"2\",\"10\",\"1\",\"-5\"]", "SORT s ALPHA DESC");
    expect_reply(C, "[\"1\",\"2\"]", "SORT s LIMIT 1 2");
    expect_reply(C, "[\"-5\",\"1\"]", "SORT s LIMIT -10 2");
    expect_reply(C, "[\"3\",\"10\"]", "SORT s LIMIT 3 -1");
    expect_reply(C, "[]", "SORT s LIMIT 5 1");
    expect_reply(C, "[]", "SORT s LIMIT 1 0");
    expect_reply(C, "[\"10\"]", "SORT s LIMIT 4 9223372036854775807");
    expect_reply(C, "[\"-5\",\"1\",\"2\",\"3\",\"10\"]", "SORT_RO s");
    expect_reply(C, "[]", "SORT nokey");
    expect_reply(C, "[]", "SORT nokey BY x GET #");
    /* Equal scores are ordered by the element's bytes. */
    expect_int(C, 3, "SADD f 1.5 b a");
    expect_error(C, "ERR One or more scores can't be converted into double", "SORT f");
    expect_reply(C, "[\"1.5\",\"a\",\"b\"]", "SORT f BY nokey_*");
    /* strtod's forms count as numbers, as in Valkey; NaN does not. */
    expect_int(C, 3, "SADD g 1e2 0x10 -inf");
    expect_reply(C, "[\"-inf\",\"0x10\",\"1e2\"]", "SORT g");
    expect_int(C, 1, "SADD g nan");
    expect_error(C, "ERR One or more scores can't be converted into double", "SORT g");
}
END_TEST

START_TEST(test_sort_by_and_get) {
    expect_int(C, 3, "SADD s 1 2 3");
    expect_ok(C, "MSET w_1 30 w_2 10 w_3 20 n_1 one n_2 two n_3 three");
    expect_reply(C, "[\"2\",\"3\",\"1\"]", "SORT s BY w_*");
    expect_reply(C, "[\"1\",\"3\",\"2\"]", "SORT s BY w_* DESC");
    expect_reply(C, "[\"1\",\"3\",\"2\"]", "SORT s BY n_* ALPHA");
    expect_reply(C, "[\"two\",\"2\",\"10\",\"three\",\"3\",\"20\",\"one\",\"1\",\"30\"]",
                 "SORT s BY w_* GET n_* GET # GET w_*");
    expect_reply(C, "[nil,nil,nil]", "SORT s BY w_* GET const");
    expect_reply(C, "[nil,nil,nil]", "SORT s BY w_* GET missing_*");
    /* Hash fields: BY and GET with ->. */
    expect_int(C, 1, "HSET h_1 f 3");
    expect_int(C, 1, "HSET h_2 f 1");
    expect_int(C, 1, "HSET h_3 f 2");
    expect_reply(C, "[\"2\",\"3\",\"1\"]", "SORT s BY h_*->f");
    expect_reply(C, "[\"1\",\"2\",\"3\"]", "SORT s BY w_* GET h_*->f");
    expect_reply(C, "[nil,nil,nil]", "SORT s BY w_* GET h_*->nofield");
    /* A pattern ending with "->" names a key, not a field. */
    expect_ok(C, "SET x_1-> k");
    expect_reply(C, "[\"k\",nil,nil]", "SORT s GET x_*->");
    /* A string BY key when a hash field is asked for, and back: nil. */
    expect_reply(C, "[nil,nil,nil]", "SORT s GET w_*->f");
    expect_reply(C, "[nil,nil,nil]", "SORT s GET h_*");
    /* BY a constant: no sorting (the set's own order), LIMIT still
     * applies. */
    redisReply *r = it_cmd(C, "SORT s BY nosort");
    ck_assert_int_eq(r->elements, 3);
    r = it_cmd(C, "SORT s BY nosort LIMIT 0 2");
    ck_assert_int_eq(r->elements, 2);
}
END_TEST

/* Lists sort like sets; BY nosort keeps the list's order, stored too. */
START_TEST(test_sort_list) {
    expect_int(C, 4, "RPUSH l 3 10 1 2");
    expect_reply(C, "[\"1\",\"2\",\"3\",\"10\"]", "SORT l");
    expect_reply(C, "[\"1\",\"10\",\"2\",\"3\"]", "SORT l ALPHA");
    expect_reply(C, "[\"10\",\"3\"]", "SORT_RO l DESC LIMIT 0 2");
    expect_reply(C, "[\"3\",\"10\",\"1\",\"2\"]", "SORT l BY nosort");
    expect_reply(C, "[\"2\",\"1\",\"10\"]", "SORT l BY nosort DESC LIMIT 0 3");
    expect_int(C, 3, "SORT l BY nosort LIMIT 1 3 STORE l");
    expect_reply(C, "[\"10\",\"1\",\"2\"]", "LRANGE l 0 -1");
}
END_TEST

/* A sorted set sorts by its members' values; BY nosort keeps score order
 * (DESC from the highest), also when stored. */
START_TEST(test_sort_zset) {
    expect_int(C, 5, "ZADD z 1 a 5 b 2 c 10 d 3 e");
    expect_reply(C, "[\"e\",\"d\",\"c\",\"b\",\"a\"]", "SORT z ALPHA DESC");
    expect_reply(C, "[\"a\",\"c\",\"e\",\"b\",\"d\"]", "SORT z BY nosort");
    expect_reply(C, "[\"d\",\"b\",\"e\",\"c\",\"a\"]", "SORT_RO z BY nosort DESC");
    expect_reply(C, "[\"d\",\"b\"]", "SORT z BY nosort DESC LIMIT 0 2");
    expect_reply(C, "[]", "SORT z BY nosort LIMIT 5 10");
    expect_int(C, 3, "ZADD n 1 10 2 3 3 -1");
    expect_reply(C, "[\"-1\",\"3\",\"10\"]", "SORT n");
    expect_int(C, 3, "SORT n BY nosort STORE dst");
    expect_reply(C, "[\"10\",\"3\",\"-1\"]", "LRANGE dst 0 -1");
}
END_TEST

START_TEST(test_sort_store_and_errors) {
    expect_int(C, 2, "SADD s 1 2");
    expect_ok(C, "SET dst v");
    expect_int(C, 0, "SORT nokey STORE dst");
    expect_int(C, 0, "EXISTS dst");
    expect_int(C, 0, "SORT s LIMIT 5 5 STORE dst");
    /* A non-empty result is stored as a list, replacing any type. */
    expect_ok(C, "SET dst v");
    expect_int(C, 2, "SORT s DESC STORE dst");
    expect_reply(C, "[\"2\",\"1\"]", "LRANGE dst 0 -1");
    expect_int(C, 4, "SORT s STORE dst GET # GET nokey_*");
    expect_reply(C, "[\"1\",\"\",\"2\",\"\"]", "LRANGE dst 0 -1");
    expect_error(C, "ERR syntax error", "SORT_RO s STORE dst");
    expect_error(C, "ERR syntax error", "SORT s FOO");
    expect_error(C, "ERR syntax error", "SORT s LIMIT 1");
    expect_error(C, "ERR syntax error", "SORT s BY");
    expect_error(C, "ERR value is not an integer or out of range", "SORT s LIMIT x 1");
    expect_ok(C, "SET str v");
    expect_error_prefix(C, "WRONGTYPE", "SORT str");
    expect_int(C, 1, "HSET h f v");
    expect_error_prefix(C, "WRONGTYPE", "SORT h");
    expect_error(C, "ERR wrong number of arguments for 'sort' command", "SORT");
}
END_TEST

START_TEST(test_sort_getkeys) {
    expect_reply(C, "[\"abc\"]", "COMMAND GETKEYS SORT abc");
    expect_reply(C, "[\"abc\",\"def\"]", "COMMAND GETKEYS SORT abc STORE def");
    expect_reply(C, "[\"abc\",\"d2\"]", "COMMAND GETKEYS SORT abc STORE d1 STORE d2");
    /* GET's and BY's patterns are values, even one spelled "store". */
    expect_reply(C, "[\"abc\"]", "COMMAND GETKEYS SORT abc GET store BY store");
    expect_reply(C, "[\"abc\"]", "COMMAND GETKEYS SORT_RO abc GET #");
    redisReply *r = it_cmd(C, "COMMAND INFO sort");
    ck_assert_int_eq(r->element[0]->elements, 10);
    /* The movablekeys flag: STORE's key is found by SORT's own lookup. */
    char *flags = it_sorted_join(r->element[0]->element[2]);
    ck_assert_msg(strstr(flags, "movablekeys") != NULL, "flags: %s", flags);
    ck_assert_int_eq(r->element[0]->element[8]->elements, 3); /* three key specs */
    /* BY/GET's keys: begin_search {type: unknown, spec: {}} (flat in RESP2). */
    redisReply *bs = r->element[0]->element[8]->element[1]->element[3];
    ck_assert_str_eq(bs->element[1]->str, "unknown");
    ck_assert_int_eq(bs->element[3]->elements, 0);
}
END_TEST

static Suite *sort_suite(void) {
    Suite *s = suite_create("sort");
    TCase *tc = it_tcase(s, "sort");
    tcase_add_test(tc, test_sort_basic);
    tcase_add_test(tc, test_sort_by_and_get);
    tcase_add_test(tc, test_sort_list);
    tcase_add_test(tc, test_sort_zset);
    tcase_add_test(tc, test_sort_store_and_errors);
    tcase_add_test(tc, test_sort_getkeys);
    return s;
}

int main(void) {
    return it_run(sort_suite());
}
