/* check_it_commandlog.c -- COMMANDLOG (Valkey 8.1) against a real
 * keel-server: the three logs and their thresholds (slow, large-request,
 * large-reply), -1 and max-len 0 turning a log off, max-len trimming, GET's
 * count, entries (id per log, time, measure, trimmed arguments, address,
 * name), EXEC's commands logged instead of EXEC, SLOWLOG as the slow log's
 * alias (and the slowlog-* directives as aliases), and the errors. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void all_logs(redisContext *c, const char *threshold, const char *max_len) {
    expect_ok(c, "CONFIG SET commandlog-execution-slower-than %s", threshold);
    expect_ok(c, "CONFIG SET commandlog-request-larger-than %s", threshold);
    expect_ok(c, "CONFIG SET commandlog-reply-larger-than %s", threshold);
    expect_ok(c, "CONFIG SET commandlog-slow-execution-max-len %s", max_len);
    expect_ok(c, "CONFIG SET commandlog-large-request-max-len %s", max_len);
    expect_ok(c, "CONFIG SET commandlog-large-reply-max-len %s", max_len);
    expect_ok(c, "COMMANDLOG RESET slow");
    expect_ok(c, "COMMANDLOG RESET large-request");
    expect_ok(c, "COMMANDLOG RESET large-reply");
}

START_TEST(test_defaults_and_aliases) {
    expect_reply(C, "[\"commandlog-execution-slower-than\",\"10000\"]",
                 "CONFIG GET commandlog-execution-slower-than");
    expect_reply(C, "[\"commandlog-request-larger-than\",\"1048576\"]",
                 "CONFIG GET commandlog-request-larger-than");
    expect_reply(C, "[\"commandlog-reply-larger-than\",\"1048576\"]",
                 "CONFIG GET commandlog-reply-larger-than");
    expect_reply(C, "[\"commandlog-large-reply-max-len\",\"128\"]",
                 "CONFIG GET commandlog-large-reply-max-len");
    expect_ok(C, "CONFIG SET slowlog-max-len 7");
    expect_reply(C, "[\"commandlog-slow-execution-max-len\",\"7\"]",
                 "CONFIG GET commandlog-slow-execution-max-len");
    expect_ok(C, "CONFIG SET slowlog-max-len 128");
    expect_error_prefix(C, "ERR CONFIG SET failed", "CONFIG SET commandlog-reply-larger-than -2");
    expect_int(C, 0, "COMMANDLOG LEN slow");
    expect_int(C, 0, "COMMANDLOG LEN large-request");
    expect_int(C, 0, "COMMANDLOG LEN large-reply");
}
END_TEST

START_TEST(test_thresholds) {
    all_logs(C, "-1", "128");
    expect_ok(C, "CONFIG SET commandlog-request-larger-than 1024");
    expect_ok(C, "CONFIG SET commandlog-reply-larger-than 1024");
    expect_status(C, "PONG", "PING");
    expect_int(C, 0, "COMMANDLOG LEN large-request");
    char *big = it_alloc(1024);
    memset(big, 'A', 1024);
    expect_ok(C, "SET testkey %b", big, (size_t)1024);
    expect_int(C, 1, "COMMANDLOG LEN large-request");
    expect_int(C, 0, "COMMANDLOG LEN large-reply");
    expect_bulk_len(C, big, 1024, "GET testkey");
    expect_int(C, 1, "COMMANDLOG LEN large-reply");
    expect_ok(C, "CLIENT SETNAME foobar");
    expect_bulk_len(C, big, 1024, "GET testkey");
    redisReply *r = it_cmd(C, "COMMANDLOG GET -1 large-reply");
    ck_assert_int_eq(r->elements, 2);
    redisReply *e = r->element[0];
    ck_assert_int_eq(e->elements, 6);
    ck_assert_int_eq(e->element[0]->integer, 1); /* ids count per log */
    ck_assert_int_ge(e->element[2]->integer, 1024 + 7);
    ck_assert_int_eq(e->element[3]->elements, 2);
    ck_assert_str_eq(e->element[3]->element[0]->str, "GET");
    ck_assert_msg(strncmp(e->element[4]->str, "127.0.0.1:", 10) == 0, "%s", e->element[4]->str);
    ck_assert_str_eq(e->element[5]->str, "foobar");
    r = it_cmd(C, "COMMANDLOG GET -1 large-request");
    e = r->element[0];
    ck_assert_int_eq(e->element[0]->integer, 0);
    ck_assert_int_gt(e->element[2]->integer, 1024);
    ck_assert_str_eq(e->element[3]->element[2]->str, it_fmt("%.128s... (896 more bytes)", big));
    /* The slow log stayed off. */
    expect_int(C, 0, "COMMANDLOG LEN slow");
}
END_TEST

START_TEST(test_max_len_and_get) {
    all_logs(C, "0", "0");
    for (int i = 0; i < 20; i++)
        expect_status(C, "PONG", "PING");
    expect_int(C, 0, "COMMANDLOG LEN slow");
    expect_int(C, 0, "COMMANDLOG LEN large-request");
    expect_int(C, 0, "COMMANDLOG LEN large-reply");
    all_logs(C, "0", "10");
    for (int i = 0; i < 100; i++)
        expect_status(C, "PONG", "PING");
    const char *types[] = {"slow", "large-request", "large-reply"};
    for (int t = 0; t < 3; t++) {
        expect_int(C, 10, "COMMANDLOG LEN %s", types[t]);
        ck_assert_int_eq(it_cmd(C, "COMMANDLOG GET 5 %s", types[t])->elements, 5);
        ck_assert_int_eq(it_cmd(C, "COMMANDLOG GET -1 %s", types[t])->elements, 10);
        ck_assert_int_eq(it_cmd(C, "COMMANDLOG GET 20 %s", types[t])->elements, 10);
        ck_assert_int_eq(it_cmd(C, "COMMANDLOG GET 0 %s", types[t])->elements, 0);
    }
    /* SLOWLOG is the slow log. */
    expect_int(C, 10, "SLOWLOG LEN");
    expect_ok(C, "SLOWLOG RESET");
    expect_int(C, 1, "COMMANDLOG LEN slow"); /* the RESET itself */
    expect_int(C, 10, "COMMANDLOG LEN large-reply");
}
END_TEST

START_TEST(test_exec_and_trimming) {
    all_logs(C, "0", "128");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET a 1");
    expect_reply(C, "[+OK]", "EXEC");
    redisReply *r = it_cmd(C, "COMMANDLOG GET -1 slow");
    /* Newest first: the MULTI-EXEC's SET, after MULTI; no EXEC. */
    ck_assert_str_eq(r->element[0]->element[3]->element[0]->str, "SET");
    ck_assert_str_eq(r->element[1]->element[3]->element[0]->str, "MULTI");
    expect_ok(C, "COMMANDLOG RESET slow");
    const char *argv[33];
    size_t lens[33];
    argv[0] = "SADD";
    argv[1] = "set";
    for (int i = 2; i < 33; i++)
        argv[i] = it_fmt("%d", i + 1);
    for (int i = 0; i < 33; i++)
        lens[i] = strlen(argv[i]);
    ck_assert_int_eq(it_cmd_argv(C, 33, argv, lens)->integer, 31);
    r = it_cmd(C, "COMMANDLOG GET 1 slow");
    redisReply *args = r->element[0]->element[3];
    ck_assert_int_eq(args->elements, 32);
    ck_assert_str_eq(args->element[31]->str, "... (2 more arguments)");
}
END_TEST

START_TEST(test_errors) {
    expect_error(C, "ERR count should be greater than or equal to -1", "COMMANDLOG GET -2 slow");
    expect_error(C, "ERR count should be greater than or equal to -1", "COMMANDLOG GET x slow");
    expect_error(C, "ERR type should be one of the following: slow, large-request, large-reply",
                 "COMMANDLOG GET 1 fast");
    expect_error(C, "ERR type should be one of the following: slow, large-request, large-reply",
                 "COMMANDLOG LEN nope");
    expect_error(C, "ERR wrong number of arguments for 'commandlog|get' command",
                 "COMMANDLOG GET 1");
    expect_error(C, "ERR wrong number of arguments for 'commandlog|reset' command",
                 "COMMANDLOG RESET");
    redisReply *r = it_cmd(C, "COMMANDLOG HELP");
    ck_assert_int_gt(r->elements, 10);
}
END_TEST

static Suite *commandlog_suite(void) {
    Suite *s = suite_create("commandlog");
    TCase *tc = it_tcase(s, "commandlog");
    tcase_add_test(tc, test_defaults_and_aliases);
    tcase_add_test(tc, test_thresholds);
    tcase_add_test(tc, test_max_len_and_get);
    tcase_add_test(tc, test_exec_and_trimming);
    tcase_add_test(tc, test_errors);
    return s;
}

int main(void) {
    return it_run(commandlog_suite());
}
