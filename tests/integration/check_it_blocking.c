/* check_it_blocking.c -- blocking commands against a real keel-server
 * (the machinery of core/session/blocking.c, driven through BLPOP, BRPOP,
 * BLMOVE, BLMPOP): serving and FIFO order, pipelined requests held while
 * blocked, pushes inside MULTI waking after EXEC, blocking commands inside
 * MULTI answering at once, keys renamed/moved/swapped into place, a key set
 * to another type leaving its waiters blocked, cascades, fractional
 * timeouts, CLIENT UNBLOCK, CLIENT LIST flags, INFO gauges, commandstats
 * counting a blocked command once, disconnects, the idle timeout, and the
 * same with I/O threads taking every read and write. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long long blocked(void) {
    return it_info_int(C, "clients", "blocked_clients");
}

#define wait_blocked(n) it_wait_until(blocked() == (n), 5000)

static long long client_id(it_raw *r) {
    it_raw_cmd(r, "CLIENT", "ID", NULL);
    it_value *v = it_raw_read(r);
    ck_assert_ptr_nonnull(v);
    return v->integer;
}

static const char *client_line(long long id) {
    redisReply *rep = it_cmd(C, "CLIENT LIST ID %lld", id);
    ck_assert_int_eq(rep->type, REDIS_REPLY_STRING);
    /* LIST ID filters are ignored (commands.md): find the line. */
    char *line = it_fmt("%s", rep->str);
    for (char *p = line; (p = strstr(p, "id=")); p++) {
        if ((p == line || p[-1] == '\n') && atoll(p + 3) == id) {
            char *nl = strchr(p, '\n');
            if (nl) *nl = '\0';
            return p;
        }
    }
    return "";
}

START_TEST(test_blpop_serves_and_flags) {
    it_raw *rd = it_raw_connect(S);
    long long id = client_id(rd);
    it_raw_cmd(rd, "BLPOP", "l", "0", NULL);
    wait_blocked(1);
    const char *line = client_line(id);
    ck_assert_msg(strstr(line, " flags=b ") && strstr(line, " cmd=blpop "), "%s", line);
    expect_int(C, 1, "LPUSH l a");
    expect_raw(rd, "[\"l\",\"a\"]");
    ck_assert_int_eq(blocked(), 0);
    expect_int(C, 0, "EXISTS l");
    ck_assert_int_eq(it_info_int(C, "clients", "total_blocking_keys"), 0);
}
END_TEST

START_TEST(test_pipeline_waits) {
    it_raw *rd = it_raw_connect(S);
    it_raw_sendstr(rd, "*3\r\n$5\r\nBLPOP\r\n$1\r\nl\r\n$1\r\n0\r\n*1\r\n$4\r\nPING\r\n"
                       "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\n1\r\n");
    wait_blocked(1);
    it_sleep_ms(50);
    expect_nil(C, "GET x"); /* the SET behind the BLPOP has not run */
    expect_int(C, 1, "RPUSH l a");
    expect_raw(rd, "[\"l\",\"a\"]");
    expect_raw(rd, "+PONG");
    expect_raw(rd, "+OK");
    expect_bulk(C, "1", "GET x");
}
END_TEST

START_TEST(test_fifo) {
    it_raw *rd[3];
    for (int i = 0; i < 3; i++) {
        rd[i] = it_raw_connect(S);
        it_raw_cmd(rd[i], "BLPOP", "l", "0", NULL);
        wait_blocked(i + 1);
    }
    ck_assert_int_eq(it_info_int(C, "clients", "total_blocking_keys"), 1);
    expect_int(C, 3, "RPUSH l a b c");
    expect_raw(rd[0], "[\"l\",\"a\"]");
    expect_raw(rd[1], "[\"l\",\"b\"]");
    expect_raw(rd[2], "[\"l\",\"c\"]");
    /* Fairness while pipelining (Valkey's test): the waiter is served by the
     * push before the pusher's own BLPOP blocks. */
    it_raw_cmd(rd[0], "BLPOP", "l", "0", NULL);
    wait_blocked(1);
    it_raw_sendstr(
        rd[1],
        "*3\r\n$5\r\nLPUSH\r\n$1\r\nl\r\n$1\r\n1\r\n*3\r\n$5\r\nBLPOP\r\n$1\r\nl\r\n$1\r\n0\r\n");
    expect_raw(rd[0], "[\"l\",\"1\"]");
    expect_raw(rd[1], ":1");
    wait_blocked(1);
    expect_int(C, 1, "LPUSH l 2");
    expect_raw(rd[1], "[\"l\",\"2\"]");
}
END_TEST

START_TEST(test_multi_exec) {
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "BLPOP", "l", "0", NULL);
    wait_blocked(1);
    /* A push and its removal inside one transaction wake no one. */
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "LPUSH l a");
    expect_status(C, "QUEUED", "DEL l");
    expect_reply(C, "[:1,:1]", "EXEC");
    it_sleep_ms(50);
    ck_assert_int_eq(blocked(), 1);
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "LPUSH l a");
    expect_status(C, "QUEUED", "LPUSH l b");
    expect_reply(C, "[:1,:2]", "EXEC");
    expect_raw(rd, "[\"l\",\"b\"]");
    /* A blocking command inside MULTI answers at once. */
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "BLPOP nothing 0");
    expect_status(C, "QUEUED", "BLMOVE nothing dst LEFT LEFT 0");
    expect_reply(C, "[nil,nil]", "EXEC");
    ck_assert_int_eq(blocked(), 0);
}
END_TEST

START_TEST(test_type_changes_and_moves) {
    it_raw *rd = it_raw_connect(S);
    long long id = client_id(rd);
    it_raw_cmd(rd, "BLPOP", "k", "0", NULL);
    wait_blocked(1);
    expect_ok(C, "SET k str"); /* not a list: still waiting, no WRONGTYPE */
    it_sleep_ms(50);
    ck_assert_msg(strstr(client_line(id), " flags=b "), "not blocked");
    expect_int(C, 1, "DEL k");
    /* RENAME into place */
    expect_int(C, 3, "LPUSH bob abc def hij");
    expect_ok(C, "RENAME bob k");
    expect_raw(rd, "[\"k\",\"hij\"]");
    expect_int(C, 1, "DEL k");
    /* MOVE into place from another database */
    it_raw_cmd(rd, "BRPOP", "k", "0", NULL);
    wait_blocked(1);
    expect_ok(C, "SELECT 1");
    expect_int(C, 1, "RPUSH k moved");
    expect_int(C, 1, "MOVE k 0");
    expect_raw(rd, "[\"k\",\"moved\"]");
    /* SWAPDB: the waiter in db 9 gets db 1's list */
    it_raw_cmd(rd, "SELECT", "9", NULL);
    expect_raw(rd, "+OK");
    it_raw_cmd(rd, "BRPOP", "k", "5", NULL);
    wait_blocked(1);
    expect_int(C, 1, "RPUSH k hello");
    expect_ok(C, "SWAPDB 1 9");
    expect_raw(rd, "[\"k\",\"hello\"]");
    expect_ok(C, "SELECT 0");
}
END_TEST

START_TEST(test_cascade) {
    it_raw *a = it_raw_connect(S), *b = it_raw_connect(S), *p = it_raw_connect(S);
    it_raw_cmd(a, "BLMOVE", "src", "dst", "LEFT", "RIGHT", "0", NULL);
    wait_blocked(1);
    it_raw_cmd(b, "BLMPOP", "0", "2", "other", "dst", "LEFT", "COUNT", "5", NULL);
    wait_blocked(2);
    /* b is served by a's push before p's next request runs. */
    it_raw_sendstr(
        p, "*3\r\n$5\r\nLPUSH\r\n$3\r\nsrc\r\n$1\r\nv\r\n*2\r\n$6\r\nEXISTS\r\n$3\r\ndst\r\n");
    expect_raw(p, ":1");
    expect_raw(p, ":0");
    expect_raw(a, "\"v\"");
    expect_raw(b, "[\"dst\",[\"v\"]]");
    /* Self-referential and circular moves. */
    it_raw_cmd(a, "BRPOPLPUSH", "s", "s", "0", NULL);
    wait_blocked(1);
    expect_int(C, 3, "RPUSH s a b c");
    expect_raw(a, "\"c\"");
    expect_reply(C, "[\"c\",\"a\",\"b\"]", "LRANGE s 0 -1");
}
END_TEST

START_TEST(test_timeouts) {
    it_raw *rd = it_raw_connect(S);
    long long t0 = it_mstime();
    it_raw_cmd(rd, "BLPOP", "l", "0.1", NULL);
    expect_raw(rd, "*nil");
    long long took = it_mstime() - t0;
    ck_assert_msg(took >= 95 && took < 400, "0.1 s timeout took %lld ms", took);
    t0 = it_mstime();
    it_raw_cmd(rd, "BLMOVE", "l", "d", "LEFT", "LEFT", "0.05", NULL);
    expect_raw(rd, "nil");
    took = it_mstime() - t0;
    ck_assert_msg(took >= 45 && took < 350, "0.05 s timeout took %lld ms", took);
    it_raw_cmd(rd, "HELLO", "3", NULL);
    ck_assert_ptr_nonnull(it_raw_read(rd));
    it_raw_cmd(rd, "BRPOP", "l", "0.01", NULL);
    expect_raw(rd, "_");
    it_raw_cmd(rd, "BRPOPLPUSH", "l", "d", "0.01", NULL);
    expect_raw(rd, "_");
    /* Errors */
    expect_error(C, "ERR timeout is negative", "BLPOP l -1");
    expect_error(C, "ERR timeout is not a float or out of range", "BLPOP l abc");
    expect_error_prefix(C, "ERR timeout is out of range", "BLPOP l 0x7FFFFFFFFFFFFF");
    /* Many clients with staggered deadlines, all on time. */
    it_raw *many[8];
    t0 = it_mstime();
    for (int i = 0; i < 8; i++) {
        many[i] = it_raw_connect(S);
        it_raw_cmd(many[i], "BLPOP", "l", it_fmt("0.%d", 8 - i), NULL);
    }
    for (int i = 7; i >= 0; i--)
        expect_raw(many[i], "*nil");
    took = it_mstime() - t0;
    ck_assert_msg(took >= 790 && took < 1300, "0.8 s took %lld ms", took);
    ck_assert_int_eq(blocked(), 0);
    ck_assert_int_eq(it_info_int(C, "clients", "clients_in_timeout_table"), 0);
}
END_TEST

START_TEST(test_client_unblock) {
    it_raw *rd = it_raw_connect(S);
    long long id = client_id(rd);
    it_raw_cmd(rd, "BLPOP", "l", "0", NULL);
    wait_blocked(1);
    expect_int(C, 1, "CLIENT UNBLOCK %lld", id);
    expect_raw(rd, "*nil");
    it_raw_cmd(rd, "BLMOVE", "l", "d", "LEFT", "LEFT", "0", NULL);
    wait_blocked(1);
    expect_int(C, 1, "CLIENT UNBLOCK %lld TIMEOUT", id);
    expect_raw(rd, "nil");
    it_raw_cmd(rd, "BLPOP", "l", "0", NULL);
    wait_blocked(1);
    expect_int(C, 1, "CLIENT UNBLOCK %lld ERROR", id);
    expect_raw(rd, "-UNBLOCKED client unblocked via CLIENT UNBLOCK");
    expect_int(C, 0, "CLIENT UNBLOCK %lld", id);
    redisReply *me = it_cmd(C, "CLIENT ID");
    expect_int(C, 0, "CLIENT UNBLOCK %lld", me->integer);
    expect_error(C, "ERR value is not an integer or out of range", "CLIENT UNBLOCK asd");
    expect_error(C, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR", "CLIENT UNBLOCK %lld x",
                 id);
    /* Still functional */
    it_raw_cmd(rd, "BLPOP", "l", "0", NULL);
    wait_blocked(1);
    expect_int(C, 1, "LPUSH l foo");
    expect_raw(rd, "[\"l\",\"foo\"]");
}
END_TEST

static long long cmdstat_calls(const char *cmd) {
    char *v = it_info_str(C, "commandstats", it_fmt("cmdstat_%s", cmd));
    return v ? it_kv_get(v, "calls") : 0;
}

START_TEST(test_counted_once) {
    it_raw *rd = it_raw_connect(S);
    long long id = client_id(rd);
    expect_ok(C, "CONFIG RESETSTAT");
    it_raw_cmd(rd, "BLPOP", "l", "0", NULL);
    wait_blocked(1);
    expect_ok(C, "SET l notalist"); /* nothing offered: no rerun counted */
    expect_int(C, 1, "DEL l");
    ck_assert_int_eq(cmdstat_calls("blpop"), 0);
    expect_int(C, 1, "LPUSH l 1");
    expect_raw(rd, "[\"l\",\"1\"]");
    ck_assert_int_eq(cmdstat_calls("blpop"), 1);
    it_raw_cmd(rd, "BLPOP", "l", "0", NULL);
    wait_blocked(1);
    expect_int(C, 1, "CLIENT UNBLOCK %lld TIMEOUT", id);
    expect_raw(rd, "*nil");
    ck_assert_int_eq(cmdstat_calls("blpop"), 2);
    const char *line = client_line(id);
    ck_assert_msg(strstr(line, " tot-cmds=3"), "%s", line); /* CLIENT ID and two BLPOP */
}
END_TEST

START_TEST(test_gauges_and_disconnect) {
    it_raw *a = it_raw_connect(S), *b = it_raw_connect(S);
    it_raw_cmd(a, "BLPOP", "k1", "k2", "k1", "0", NULL);
    it_raw_cmd(b, "BLPOP", "k2", "k3", "100", NULL);
    wait_blocked(2);
    ck_assert_int_eq(it_info_int(C, "clients", "total_blocking_keys"), 3);
    ck_assert_int_eq(it_info_int(C, "clients", "clients_in_timeout_table"), 1);
    ck_assert_int_eq(it_info_int(C, "clients", "total_blocking_keys_on_nokey"), 0);
    it_raw_close(a);
    wait_blocked(1);
    ck_assert_int_eq(it_info_int(C, "clients", "total_blocking_keys"), 2);
    it_raw_close(b);
    wait_blocked(0);
    ck_assert_int_eq(it_info_int(C, "clients", "total_blocking_keys"), 0);
    ck_assert_int_eq(it_info_int(C, "clients", "clients_in_timeout_table"), 0);
    expect_int(C, 1, "LPUSH k2 x"); /* nobody left to serve */
    expect_int(C, 1, "LLEN k2");
}
END_TEST

START_TEST(test_idle_timeout_spares_blocked) {
    expect_ok(C, "CONFIG SET timeout 1");
    it_raw *idle = it_raw_connect(S), *rd = it_raw_connect(S);
    it_raw_cmd(idle, "PING", NULL);
    expect_raw(idle, "+PONG");
    it_raw_cmd(rd, "BLPOP", "l", "0", NULL);
    wait_blocked(1);
    ck_assert(it_raw_wait_closed(idle, 5000));
    redisContext *c = it_connect(S); /* C was idle too */
    ck_assert_int_eq(it_info_int(c, "clients", "blocked_clients"), 1);
    expect_ok(c, "CONFIG SET timeout 0");
    expect_int(c, 1, "LPUSH l a");
    expect_raw(rd, "[\"l\",\"a\"]");
}
END_TEST

/* Every read and write on an I/O thread: blocked clients are served,
 * timed out and resumed while their jobs come and go. */
START_TEST(test_io_threads) {
    it_server *s = it_start("--io-threads", "4", "--events-per-io-thread", "0", NULL);
    redisContext *c = it_connect(s);
    enum { N = 16, ROUNDS = 20 };
    it_raw *rd[N];
    for (int i = 0; i < N; i++)
        rd[i] = it_raw_connect(s);
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < N; i++) {
            /* BLPOP, then pipelined requests that must wait for it */
            it_raw_sendstr(rd[i], it_fmt("*3\r\n$5\r\nBLPOP\r\n$2\r\nq%d\r\n$1\r\n0\r\n"
                                         "*2\r\n$4\r\nINCR\r\n$3\r\nn%02d\r\n*1\r\n$4\r\nPING\r\n",
                                         i % 4, i));
        }
        it_wait_until(it_info_int(c, "clients", "blocked_clients") == N, 5000);
        /* more input while blocked: read jobs in flight as they are served */
        for (int i = 0; i < N; i++)
            it_raw_sendstr(rd[i], "*1\r\n$4\r\nPING\r\n");
        for (int q = 0; q < 4; q++) {
            redisReply *r = it_cmd(c, "RPUSH q%d %d %d %d %d", q, round, round, round, round);
            ck_assert_int_eq(r->integer, 4);
        }
        for (int i = 0; i < N; i++) {
            expect_raw(rd[i], it_fmt("[\"q%d\",\"%d\"]", i % 4, round));
            expect_raw(rd[i], it_fmt(":%d", round + 1));
            expect_raw(rd[i], "+PONG");
            expect_raw(rd[i], "+PONG");
        }
        /* and a timeout with a pipelined request behind it */
        it_raw_sendstr(rd[round % N],
                       "*3\r\n$5\r\nBLPOP\r\n$1\r\nz\r\n$4\r\n0.02\r\n*1\r\n$4\r\nPING\r\n");
        expect_raw(rd[round % N], "*nil");
        expect_raw(rd[round % N], "+PONG");
    }
    ck_assert_int_eq(it_info_int(c, "clients", "blocked_clients"), 0);
}
END_TEST

/* Without a blocked client: CLIENT UNBLOCK answers 0, its errors, and
 * the INFO gauges at 0. */
START_TEST(test_unblock_not_blocked_and_gauges) {
    redisReply *me = it_cmd(C, "CLIENT ID");
    expect_int(C, 0, "CLIENT UNBLOCK %lld", me->integer);
    expect_int(C, 0, "CLIENT UNBLOCK %lld ERROR", me->integer);
    expect_int(C, 0, "CLIENT UNBLOCK 987654");
    expect_error(C, "ERR value is not an integer or out of range", "CLIENT UNBLOCK asd");
    expect_error(C, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR", "CLIENT UNBLOCK 1 x");
    expect_error(
        C, "ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.",
        "CLIENT UNBLOCK 1 TIMEOUT x");
    expect_error(C, "ERR wrong number of arguments for 'client|unblock' command", "CLIENT UNBLOCK");
    const char *fields[] = {"blocked_clients", "clients_in_timeout_table", "total_blocking_keys",
                            "total_blocking_keys_on_nokey"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        ck_assert_int_eq(it_info_int(C, "clients", fields[i]), 0);
    redisReply *help = it_cmd(C, "CLIENT HELP");
    int found = 0;
    for (size_t i = 0; i < help->elements; i++)
        found |= strncmp(help->element[i]->str, "UNBLOCK", 7) == 0;
    ck_assert(found);
}
END_TEST

static Suite *blocking_suite(void) {
    Suite *s = suite_create("blocking");
    TCase *tc = it_tcase(s, "blocking");
    tcase_add_test(tc, test_unblock_not_blocked_and_gauges);
    tcase_add_test(tc, test_blpop_serves_and_flags);
    tcase_add_test(tc, test_pipeline_waits);
    tcase_add_test(tc, test_fifo);
    tcase_add_test(tc, test_multi_exec);
    tcase_add_test(tc, test_type_changes_and_moves);
    tcase_add_test(tc, test_cascade);
    tcase_add_test(tc, test_timeouts);
    tcase_add_test(tc, test_client_unblock);
    tcase_add_test(tc, test_counted_once);
    tcase_add_test(tc, test_gauges_and_disconnect);
    tcase_add_test(tc, test_idle_timeout_spares_blocked);
    tc = it_tcase_bare(s, "io-threads");
    tcase_add_test(tc, test_io_threads);
    return s;
}

int main(void) {
    return it_run(blocking_suite());
}
