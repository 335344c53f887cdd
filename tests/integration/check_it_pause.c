/* check_it_pause.c -- CLIENT PAUSE and CLIENT UNPAUSE against a real
 * keel-server: WRITE holds writes but not reads, ALL holds everything,
 * held clients count as blocked (flag b) and keep their pipeline, the
 * deadline releases them, a longer pause extends and a shorter one does
 * not shorten, WRITE after ALL keeps ALL, EXEC held when its queue writes,
 * errors answered at once, expiry deferred while paused, a held client
 * that disconnects, and the argument errors. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long long blocked(void) {
    return it_info_int(C, "clients", "blocked_clients");
}

#define wait_blocked(n) it_wait_until(blocked() == (n), 5000)

START_TEST(test_write_pause_holds_writes) {
    expect_ok(C, "SET foo bar");
    expect_ok(C, "CLIENT PAUSE 100000 WRITE");
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "GET", "foo", NULL);
    expect_raw(rd, "\"bar\"");
    it_raw_cmd(rd, "PING", NULL);
    expect_raw(rd, "+PONG");
    ck_assert_int_eq(blocked(), 0);
    /* A SET and the PING pipelined behind it wait. */
    it_raw_sendstr(rd, "*3\r\n$3\r\nSET\r\n$3\r\nfoo\r\n$3\r\nnew\r\n*1\r\n$4\r\nPING\r\n");
    wait_blocked(1);
    redisReply *r = it_cmd(C, "CLIENT LIST");
    ck_assert_msg(strstr(r->str, " flags=b "), "%s", r->str);
    it_sleep_ms(50);
    expect_bulk(C, "bar", "GET foo");
    expect_ok(C, "CLIENT UNPAUSE");
    expect_raw(rd, "+OK");
    expect_raw(rd, "+PONG");
    ck_assert_int_eq(blocked(), 0);
    expect_bulk(C, "new", "GET foo");
}
END_TEST

START_TEST(test_all_pause_times_out) {
    it_raw *rd = it_raw_connect(S);
    long long start = it_mstime();
    expect_ok(C, "CLIENT PAUSE 300 ALL");
    it_raw_cmd(rd, "PING", NULL);
    expect_raw(rd, "+PONG"); /* held until the deadline, then served */
    ck_assert_int_ge(it_mstime() - start, 250);
}
END_TEST

START_TEST(test_longer_wins) {
    expect_ok(C, "CLIENT PAUSE 60000 WRITE");
    expect_ok(C, "CLIENT PAUSE 10 WRITE");
    it_sleep_ms(100);
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "SET", "a", "1", NULL);
    wait_blocked(1);
    expect_ok(C, "CLIENT UNPAUSE");
    expect_raw(rd, "+OK");
    /* WRITE after ALL keeps ALL (until ALL's deadline). */
    it_raw *rd2 = it_raw_connect(S);
    long long start = it_mstime();
    expect_ok(C, "CLIENT PAUSE 300 ALL");
    it_raw_cmd(rd2, "CLIENT", "PAUSE", "10", "WRITE", NULL);
    it_sleep_ms(50);
    it_raw_cmd(rd, "GET", "a", NULL);
    expect_raw(rd2, "+OK");
    expect_raw(rd, "\"1\"");
    ck_assert_int_ge(it_mstime() - start, 250);
}
END_TEST

START_TEST(test_exec) {
    expect_ok(C, "SET foo bar");
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "MULTI", NULL);
    expect_raw(rd, "+OK");
    it_raw_cmd(rd, "SET", "foo", "x", NULL);
    expect_raw(rd, "+QUEUED");
    expect_ok(C, "CLIENT PAUSE 60000 WRITE");
    /* A read-only transaction runs. */
    redisContext *c2 = it_connect(S);
    expect_ok(c2, "MULTI");
    expect_status(c2, "QUEUED", "GET foo");
    expect_reply(c2, "[\"bar\"]", "EXEC");
    it_raw_cmd(rd, "EXEC", NULL);
    wait_blocked(1);
    /* A bad command gets its error at once. */
    expect_error(c2, "ERR wrong number of arguments for 'set' command", "SET foo");
    expect_ok(C, "CLIENT UNPAUSE");
    expect_raw(rd, "[+OK]");
}
END_TEST

START_TEST(test_pause_inside_exec_lets_it_finish) {
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET a 1");
    expect_status(C, "QUEUED", "CLIENT PAUSE 60000 WRITE");
    expect_status(C, "QUEUED", "SET b 2");
    expect_reply(C, "[+OK,+OK,+OK]", "EXEC");
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "SET", "c", "3", NULL);
    wait_blocked(1);
    expect_bulk(C, "2", "GET b");
    expect_nil(C, "GET c");
    expect_ok(C, "CLIENT UNPAUSE");
    expect_raw(rd, "+OK");
}
END_TEST

START_TEST(test_expiry_deferred) {
    long long expired = it_info_int(C, "stats", "expired_keys");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET foo bar PX 20");
    expect_status(C, "QUEUED", "SET bar foo PX 20");
    expect_status(C, "QUEUED", "CLIENT PAUSE 50000 WRITE");
    expect_reply(C, "[+OK,+OK,+OK]", "EXEC");
    it_sleep_ms(300); /* several active expire cycles */
    expect_nil(C, "GET foo");
    expect_nil(C, "GET bar");
    expect_int(C, 2, "DBSIZE"); /* still stored */
    ck_assert_int_eq(it_info_int(C, "stats", "expired_keys"), expired);
    /* Only expired keys: RANDOMKEY answers one of them instead of looping. */
    redisReply *r = it_cmd(C, "RANDOMKEY");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    ck_assert_int_eq(it_cmd(C, "KEYS *")->elements, 0);
    ck_assert_int_eq(it_cmd(C, "SCAN 0")->element[1]->elements, 0);
    expect_ok(C, "CLIENT UNPAUSE");
    expect_nil(C, "GET foo");
    expect_nil(C, "GET bar");
    ck_assert_int_eq(it_info_int(C, "stats", "expired_keys"), expired + 2);
}
END_TEST

START_TEST(test_held_client_disconnects) {
    expect_ok(C, "CLIENT PAUSE 60000 WRITE");
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "SET", "x", "1", NULL);
    wait_blocked(1);
    it_raw_close(rd);
    wait_blocked(0);
    expect_ok(C, "CLIENT UNPAUSE");
    expect_nil(C, "GET x");
}
END_TEST

START_TEST(test_errors) {
    expect_error(C, "ERR timeout is not an integer or out of range", "CLIENT PAUSE abc");
    expect_error(C, "ERR timeout is negative", "CLIENT PAUSE -1");
    expect_error(C, "ERR CLIENT PAUSE mode must be WRITE or ALL", "CLIENT PAUSE 10 READ");
    expect_error_prefix(C, "ERR unknown subcommand or wrong number of arguments",
                        "CLIENT PAUSE 10 ALL x");
    expect_error(C, "ERR wrong number of arguments for 'client|unpause' command",
                 "CLIENT UNPAUSE x");
    expect_ok(C, "CLIENT PAUSE 0");
    expect_ok(C, "SET x 1"); /* a zero pause is over at once */
}
END_TEST

/* With I/O threads taking every read and write: held clients, their
 * pipelines and more input arriving while held. */
START_TEST(test_io_threads) {
    it_server *s = it_start("--io-threads", "4", "--events-per-io-thread", "0", NULL);
    redisContext *c = it_connect(s);
    enum { N = 12, ROUNDS = 10 };
    it_raw *rd[N];
    for (int i = 0; i < N; i++)
        rd[i] = it_raw_connect(s);
    for (int round = 0; round < ROUNDS; round++) {
        expect_ok(c, "CLIENT PAUSE 60000 WRITE");
        for (int i = 0; i < N; i++)
            it_raw_sendstr(rd[i],
                           it_fmt("*2\r\n$4\r\nINCR\r\n$3\r\nn%02d\r\n*1\r\n$4\r\nPING\r\n", i));
        it_wait_until(it_info_int(c, "clients", "blocked_clients") == N, 5000);
        for (int i = 0; i < N; i++)
            it_raw_sendstr(rd[i], "*1\r\n$4\r\nPING\r\n");
        expect_ok(c, "CLIENT UNPAUSE");
        for (int i = 0; i < N; i++) {
            expect_raw(rd[i], it_fmt(":%d", round + 1));
            expect_raw(rd[i], "+PONG");
            expect_raw(rd[i], "+PONG");
        }
    }
}
END_TEST

/* PUBLISH may replicate: a WRITE pause holds it, as Valkey does. */
START_TEST(test_write_pause_holds_publish) {
    expect_ok(C, "CLIENT PAUSE 100000 WRITE");
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "PUBLISH", "ch", "x", NULL);
    wait_blocked(1);
    expect_ok(C, "CLIENT UNPAUSE");
    expect_raw(rd, ":0");
}
END_TEST

/* CLIENT REPLY SKIP and CLIENT CACHING belong to the next command that
 * runs: a command the pause holds keeps them until it does. */
START_TEST(test_held_command_keeps_per_command_state) {
    expect_ok(C, "SET k v1");
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "CLIENT", "REPLY", "SKIP", NULL);
    expect_ok(C, "CLIENT PAUSE 100000 WRITE");
    it_raw_cmd(rd, "SET", "k", "v2", NULL); /* held, its reply skipped */
    it_raw_cmd(rd, "PING", NULL);
    wait_blocked(1);
    expect_ok(C, "CLIENT UNPAUSE");
    expect_raw(rd, "+PONG");
    expect_bulk(C, "v2", "GET k");

    it_raw *tr = it_raw_connect_resp3(S);
    it_raw_cmd(tr, "CLIENT", "TRACKING", "ON", "OPTIN", NULL);
    expect_raw(tr, "+OK");
    it_raw_cmd(tr, "CLIENT", "CACHING", "YES", NULL);
    expect_raw(tr, "+OK");
    /* ALL holds CLIENT UNPAUSE too: this pause ends at its deadline. */
    expect_ok(C, "CLIENT PAUSE 300 ALL");
    it_raw_cmd(tr, "GET", "k", NULL); /* held: tracked when it runs */
    expect_raw(tr, "\"v2\"");
    expect_ok(C, "SET k v3");
    expect_raw(tr, ">[\"invalidate\",[\"k\"]]");
}
END_TEST

/* INFO clients' paused_* fields (Valkey 8.1): none, then the reason,
 * the actions and the time left while a pause runs. */
START_TEST(test_info_paused_fields) {
    ck_assert_str_eq(it_info_str(C, "clients", "paused_reason"), "none");
    ck_assert_str_eq(it_info_str(C, "clients", "paused_actions"), "none");
    ck_assert_int_eq(it_info_int(C, "clients", "paused_timeout_milliseconds"), 0);
    expect_ok(C, "CLIENT PAUSE 10000 WRITE");
    ck_assert_str_eq(it_info_str(C, "clients", "paused_reason"), "client_pause");
    ck_assert_str_eq(it_info_str(C, "clients", "paused_actions"), "write");
    long long left = it_info_int(C, "clients", "paused_timeout_milliseconds");
    ck_assert_msg(left > 9000 && left <= 10000, "paused_timeout_milliseconds %lld", left);
    expect_ok(C, "CLIENT UNPAUSE");
    /* Inside MULTI, an ALL pause started by the transaction shows in its
     * own INFO (the rest of the transaction runs). */
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "CLIENT PAUSE 1000 ALL");
    expect_status(C, "QUEUED", "INFO clients");
    redisReply *r = it_cmd(C, "EXEC");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_msg(strstr(r->element[1]->str, "paused_actions:all\r\n"), "%s", r->element[1]->str);
    it_sleep_ms(1100); /* ALL holds UNPAUSE too: let the deadline end it */
    ck_assert_str_eq(it_info_str(C, "clients", "paused_actions"), "none");
}
END_TEST

static Suite *pause_suite(void) {
    Suite *s = suite_create("pause");
    TCase *tc = it_tcase(s, "pause");
    tcase_add_test(tc, test_write_pause_holds_writes);
    tcase_add_test(tc, test_all_pause_times_out);
    tcase_add_test(tc, test_longer_wins);
    tcase_add_test(tc, test_exec);
    tcase_add_test(tc, test_pause_inside_exec_lets_it_finish);
    tcase_add_test(tc, test_expiry_deferred);
    tcase_add_test(tc, test_held_client_disconnects);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_write_pause_holds_publish);
    tcase_add_test(tc, test_held_command_keeps_per_command_state);
    tcase_add_test(tc, test_info_paused_fields);
    tc = it_tcase_bare(s, "io-threads");
    tcase_add_test(tc, test_io_threads);
    return s;
}

int main(void) {
    return it_run(pause_suite());
}
