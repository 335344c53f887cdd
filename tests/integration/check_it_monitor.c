/* check_it_monitor.c -- MONITOR against a real keel-server: Valkey's line
 * format and escaping, the database and the unix-socket origin, redacted
 * AUTH and HELLO passwords, MULTI/EXEC ordering, admin commands left out, a
 * blocked command shown once, CLIENT LIST flag O, MONITOR refused inside
 * MULTI, a monitor kept out of the keyspace until RESET, and a monitor that
 * never reads closed at the output buffer limit. */
#include "harness.h"

#include <hiredis/hiredis.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static it_raw *monitor_start(it_server *s) {
    it_raw *m = it_raw_connect(s);
    it_raw_cmd(m, "MONITOR", NULL);
    expect_raw(m, "+OK");
    return m;
}

/* The next monitor line without its timestamp: "[db addr] args". */
static const char *monitor_next(it_raw *m) {
    it_value *v = it_raw_read(m);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(v->type, '+');
    regex_t re;
    ck_assert_int_eq(regcomp(&re, "^[0-9]+\\.[0-9]{6} \\[", REG_EXTENDED), 0);
    int ok = regexec(&re, v->str, 0, NULL, 0) == 0;
    regfree(&re);
    ck_assert_msg(ok, "bad monitor line: %s", v->str);
    return strchr(v->str, '[');
}

/* The next line's arguments (after "] "). */
static const char *monitor_args(it_raw *m) {
    const char *line = monitor_next(m);
    return strstr(line, "] ") + 2;
}

START_TEST(test_format_and_origin) {
    it_raw *m = monitor_start(S);
    expect_ok(C, "SET foo bar");
    expect_bulk(C, "bar", "GET foo");
    const char *line = monitor_next(m);
    ck_assert_msg(strncmp(line, "[0 127.0.0.1:", 13) == 0, "%s", line);
    ck_assert_str_eq(strstr(line, "] ") + 2, "\"SET\" \"foo\" \"bar\"");
    ck_assert_str_eq(monitor_args(m), "\"GET\" \"foo\"");
    expect_ok(C, "SELECT 3");
    expect_ok(C, "SET k v");
    ck_assert_str_eq(strstr(monitor_next(m), "] ") + 2, "\"SELECT\" \"3\"");
    line = monitor_next(m);
    ck_assert_msg(strncmp(line, "[3 ", 3) == 0, "%s", line);
    expect_ok(C, "SELECT 0");
    monitor_next(m);
}
END_TEST

START_TEST(test_escaping) {
    it_raw *m = monitor_start(S);
    const char val[] = "a\"b\\c\n\r\t\x01\xff z";
    expect_ok(C, "SET %b %b", "k", (size_t)1, val, sizeof(val) - 1);
    ck_assert_str_eq(monitor_args(m), "\"SET\" \"k\" \"a\\\"b\\\\c\\n\\r\\t\\x01\\xff z\"");
}
END_TEST

START_TEST(test_redaction) {
    it_raw *m = monitor_start(S);
    /* No requirepass: the answers do not matter, the lines do. */
    it_cmd(C, "AUTH not-real");
    it_cmd(C, "AUTH default not-a-password");
    it_cmd(C, "HELLO 2 AUTH default not-a-password");
    ck_assert_str_eq(monitor_args(m), "\"AUTH\" \"(redacted)\"");
    ck_assert_str_eq(monitor_args(m), "\"AUTH\" \"(redacted)\" \"(redacted)\"");
    ck_assert_str_eq(monitor_args(m), "\"HELLO\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\"");
}
END_TEST

START_TEST(test_multi_exec_and_admin) {
    it_raw *m = monitor_start(S);
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET foo bar");
    expect_reply(C, "[+OK]", "EXEC");
    expect_ok(C, "MULTI");
    expect_error_prefix(C, "ERR unknown command", "NOSUCH cmd");
    expect_error_prefix(C, "EXECABORT", "EXEC");
    /* Admin commands are left out; the PING after them is shown. */
    it_cmd(C, "CONFIG GET maxmemory");
    it_cmd(C, "CLIENT LIST");
    expect_status(C, "PONG", "PING");
    ck_assert_str_eq(monitor_args(m), "\"MULTI\"");
    ck_assert_str_eq(monitor_args(m), "\"SET\" \"foo\" \"bar\"");
    ck_assert_str_eq(monitor_args(m), "\"EXEC\"");
    ck_assert_str_eq(monitor_args(m), "\"MULTI\"");
    ck_assert_str_eq(monitor_args(m), "\"EXEC\"");
    ck_assert_str_eq(monitor_args(m), "\"PING\"");
}
END_TEST

START_TEST(test_blocked_shown_once) {
    it_raw *m = monitor_start(S);
    it_raw *b = it_raw_connect(S);
    it_raw_cmd(b, "BLPOP", "l", "0", NULL);
    it_wait_until(it_info_int(C, "clients", "blocked_clients") == 1, 5000);
    expect_int(C, 1, "LPUSH l 1");
    expect_raw(b, "[\"l\",\"1\"]");
    expect_int(C, 1, "LPUSH l 2");
    /* The INFO polls waiting for the block may come before it. */
    const char *a;
    while (strstr(a = monitor_args(m), "\"INFO\""))
        continue;
    ck_assert_str_eq(a, "\"BLPOP\" \"l\" \"0\"");
    while (strstr(a = monitor_args(m), "\"INFO\""))
        continue;
    ck_assert_str_eq(a, "\"LPUSH\" \"l\" \"1\"");
    while (strstr(a = monitor_args(m), "\"INFO\""))
        continue;
    ck_assert_str_eq(a, "\"LPUSH\" \"l\" \"2\"");
}
END_TEST

START_TEST(test_flags_multi_keyspace_reset) {
    it_raw *m = monitor_start(S);
    redisReply *r = it_cmd(C, "CLIENT LIST");
    ck_assert_msg(strstr(r->str, " flags=O "), "%s", r->str);
    /* A second MONITOR answers nothing: the PING's reply comes next. */
    it_raw_cmd(m, "MONITOR", NULL);
    it_raw_cmd(m, "PING", NULL);
    expect_raw(m, "+PONG");
    ck_assert_str_eq(monitor_args(m), "\"PING\""); /* its own commands too */
    it_raw_cmd(m, "GET", "x", NULL);
    expect_raw(m, "-ERR Replica can't interact with the keyspace");
    it_raw_cmd(m, "PUBLISH", "ch", "x", NULL); /* may replicate: refused too */
    expect_raw(m, "-ERR Replica can't interact with the keyspace");
    it_raw_cmd(m, "RESET", NULL);
    expect_raw(m, "+RESET");
    it_raw_cmd(m, "GET", "x", NULL);
    expect_raw(m, "nil");
    r = it_cmd(C, "CLIENT LIST");
    ck_assert_msg(!strstr(r->str, " flags=O "), "%s", r->str);
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "MONITOR");
    expect_reply(C, "[-ERR MONITOR isn't allowed for DENY BLOCKING client]", "EXEC");
}
END_TEST

START_TEST(test_output_limit) {
    it_raw *m = monitor_start(S);
    expect_ok(C, "CONFIG SET client-output-buffer-limit %s", "normal 1mb 0 0");
    char *val = it_alloc(8192);
    memset(val, 'x', 8192);
    /* The monitor never reads: its buffer passes 1 MB and it is closed,
     * while the writer goes on. */
    for (int i = 0;
         i < 2000 && it_info_int(C, "stats", "client_output_buffer_limit_disconnections") == 0; i++)
        expect_ok(C, "SET k %b", val, (size_t)8192);
    ck_assert_int_ge(it_info_int(C, "stats", "client_output_buffer_limit_disconnections"), 1);
    ck_assert(it_raw_wait_closed(m, 5000));
    expect_ok(C, "CONFIG SET client-output-buffer-limit %s", "normal 0 0 0");
    expect_int(C, 1, "EXISTS k");
}
END_TEST

START_TEST(test_unix_socket_origin) {
    char path[96];
    snprintf(path, sizeof(path), "/tmp/keel-it-monitor-%d.sock", (int)getpid());
    it_server *s = it_start("--unixsocket", path, NULL);
    it_raw *m = monitor_start(s);
    redisContext *u = redisConnectUnix(path);
    ck_assert_msg(u && !u->err, "unix connect failed");
    redisReply *r = redisCommand(u, "PING");
    ck_assert_ptr_nonnull(r);
    freeReplyObject(r);
    redisFree(u);
    const char *line = monitor_next(m);
    char *want = it_fmt("[0 unix:%s] \"PING\"", path);
    ck_assert_str_eq(line, want);
}
END_TEST

/* With I/O threads taking every read and write, monitors get every line
 * of many writers, in each writer's order. */
START_TEST(test_io_threads) {
    it_server *s = it_start("--io-threads", "4", "--events-per-io-thread", "0", NULL);
    enum { M = 3, W = 6, ROUNDS = 50 };
    it_raw *mon[M], *w[W];
    for (int i = 0; i < M; i++)
        mon[i] = monitor_start(s);
    for (int i = 0; i < W; i++)
        w[i] = it_raw_connect(s);
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < W; i++)
            it_raw_cmd(w[i], "SET", it_fmt("k%d", i), it_fmt("%d", r), NULL);
    for (int i = 0; i < W; i++)
        for (int r = 0; r < ROUNDS; r++)
            expect_raw(w[i], "+OK");
    for (int m = 0; m < M; m++) {
        int next[W] = {0};
        for (int n = 0; n < W * ROUNDS; n++) {
            int k, v;
            ck_assert_int_eq(sscanf(monitor_args(mon[m]), "\"SET\" \"k%d\" \"%d\"", &k, &v), 2);
            ck_assert_int_eq(v, next[k]++);
        }
    }
}
END_TEST

static Suite *monitor_suite(void) {
    Suite *s = suite_create("monitor");
    TCase *tc = it_tcase(s, "monitor");
    tcase_add_test(tc, test_format_and_origin);
    tcase_add_test(tc, test_escaping);
    tcase_add_test(tc, test_redaction);
    tcase_add_test(tc, test_multi_exec_and_admin);
    tcase_add_test(tc, test_blocked_shown_once);
    tcase_add_test(tc, test_flags_multi_keyspace_reset);
    tcase_add_test(tc, test_output_limit);
    tc = it_tcase_bare(s, "unix");
    tcase_add_test(tc, test_unix_socket_origin);
    tcase_add_test(tc, test_io_threads);
    return s;
}

int main(void) {
    return it_run(monitor_suite());
}
