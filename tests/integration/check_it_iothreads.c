/* check_it_iothreads.c -- I/O threads against a real keel-server started
 * with io-threads 4 and events-per-io-thread 0 (every read and write goes
 * to a thread): a large GET racing DEL and SET of its key, many clients
 * pipelining across threads, clients closing while their replies are being
 * written, io-threads changed at run time under load, a module transport
 * whose handshake, reads and writes run on the threads, and the INFO
 * fields.
 * The same file runs under ThreadSanitizer in CI. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MB (1024 * 1024)

static it_server *start_threaded(void) {
    return it_start("--io-threads", "4", "--events-per-io-thread", "0", NULL);
}

/* SET key to len copies of byte fill over a raw connection. */
static void raw_set_fill(it_raw *r, const char *key, char fill, size_t len) {
    char *val = it_alloc(len);
    memset(val, fill, len);
    char *head = it_fmt("*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%zu\r\n", strlen(key), key, len);
    ck_assert_int_eq(it_raw_send(r, head, strlen(head)), 0);
    ck_assert_int_eq(it_raw_send(r, val, len), 0);
    ck_assert_int_eq(it_raw_send(r, "\r\n", 2), 0);
}

/* A reply to GET of a key that only ever held len copies of one of the
 * bytes in `fills`: nil, or exactly such a value (never a mix, never cut). */
static void expect_whole_value(const it_value *v, size_t len, const char *fills) {
    ck_assert_msg(v != NULL, "connection closed before the reply");
    if (v->type == '$' && v->is_null) return;
    ck_assert_msg(v->type == '$', "expected a bulk reply, got type %c", v->type);
    ck_assert_msg(v->len == len, "expected %zu bytes, got %zu", len, v->len);
    ck_assert_msg(strchr(fills, v->str[0]) != NULL, "unexpected fill byte %d", v->str[0]);
    size_t i = 1;
    while (i < len && v->str[i] == v->str[0]) i++; /* one ck_assert, not one per byte */
    ck_assert_msg(i == len, "value mixes bytes at offset %zu", i);
}

START_TEST(test_large_get_races_del_and_set) {
    it_server *s = start_threaded();
    redisContext *c = it_connect(s);
    size_t len = 4 * MB;
    it_raw *setter = it_raw_connect(s), *getter = it_raw_connect(s);
    raw_set_fill(setter, "big", 'a', len);
    expect_raw(setter, "+OK");
    /* The getter's replies pile up unread while the setter replaces and
     * deletes the value under them. */
    for (int i = 0; i < 8; i++) it_raw_cmd(getter, "GET", "big", NULL);
    for (int round = 0; round < 3; round++) {
        raw_set_fill(setter, "big", (char)('b' + round), len);
        it_raw_cmd(setter, "DEL", "big", NULL);
        it_raw_cmd(getter, "GET", "big", NULL);
        raw_set_fill(setter, "big", (char)('e' + round), len);
        it_raw_cmd(getter, "GET", "big", NULL);
    }
    for (int round = 0; round < 3; round++) {
        expect_raw(setter, "+OK");
        expect_raw(setter, ":1");
        expect_raw(setter, "+OK");
    }
    for (int i = 0; i < 8 + 6; i++) expect_whole_value(it_raw_read(getter), len, "abcdefg");
    expect_reply(c, "+PONG", "PING");
    ck_assert_int_gt(it_info_int(c, "stats", "io_threaded_writes_processed"), 0);
}
END_TEST

START_TEST(test_many_clients_pipelining) {
    it_server *s = start_threaded();
    redisContext *c = it_connect(s);
    enum { CLIENTS = 48, DEPTH = 200 };
    it_raw *r[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) r[i] = it_raw_connect(s);
    /* Everything is sent before anything is read: the threads see full
     * pipelines from every client at once. */
    for (int i = 0; i < CLIENTS; i++) {
        char *key = it_fmt("counter:%d", i);
        for (int n = 0; n < DEPTH; n++) it_raw_cmd(r[i], "INCR", key, NULL);
        it_raw_cmd(r[i], "SET", it_fmt("k:%d", i), it_fmt("v:%d", i), NULL);
        it_raw_cmd(r[i], "GET", it_fmt("k:%d", i), NULL);
    }
    for (int i = 0; i < CLIENTS; i++) {
        for (int n = 1; n <= DEPTH; n++) expect_raw(r[i], it_fmt(":%d", n));
        expect_raw(r[i], "+OK");
        expect_raw(r[i], it_fmt("\"v:%d\"", i));
    }
    expect_int(c, 2 * CLIENTS, "DBSIZE");
    ck_assert_int_gt(it_info_int(c, "stats", "io_threaded_reads_processed"), CLIENTS);
}
END_TEST

START_TEST(test_client_closes_while_reply_is_written) {
    it_server *s = start_threaded();
    redisContext *c = it_connect(s);
    it_raw *setter = it_raw_connect(s);
    raw_set_fill(setter, "big", 'x', 8 * MB);
    expect_raw(setter, "+OK");
    for (int i = 0; i < 16; i++) {
        it_raw *r = it_raw_connect(s);
        for (int n = 0; n < 4; n++) it_raw_cmd(r, "GET", "big", NULL);
        if (i % 2) { /* wait until the reply started to flow, then leave */
            char buf[4096];
            ck_assert_int_gt(read(r->fd, buf, sizeof(buf)), 0);
        }
        it_raw_close(r);
    }
    /* The server dropped those clients and still serves everyone else. */
    expect_reply(c, "+PONG", "PING");
    it_wait_until(it_info_int(c, "clients", "connected_clients") == 2, 10000);
    it_raw_cmd(setter, "STRLEN", "big", NULL);
    expect_raw(setter, it_fmt(":%d", 8 * MB));
}
END_TEST

START_TEST(test_change_io_threads_under_load) {
    it_server *s = start_threaded();
    redisContext *c = it_connect(s);
    enum { CLIENTS = 16, DEPTH = 50, ROUNDS = 12 };
    static const char *const counts[] = {"1", "3", "2", "4", "1", "4"};
    it_raw *r[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) r[i] = it_raw_connect(s);
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < CLIENTS; i++)
            for (int n = 0; n < DEPTH; n++) it_raw_cmd(r[i], "INCR", it_fmt("n:%d", i), NULL);
        /* Changed while those pipelines are in flight. */
        expect_ok(c, "CONFIG SET io-threads %s", counts[round % 6]);
        for (int i = 0; i < CLIENTS; i++)
            for (int n = 1; n <= DEPTH; n++) expect_raw(r[i], it_fmt(":%d", round * DEPTH + n));
    }
    expect_reply(c, "[\"io-threads\",\"4\"]", "CONFIG GET io-threads");
    expect_ok(c, "CONFIG SET io-threads 1");
    /* Applied before the next command runs. */
    expect_int(c, 0, "EXISTS nothing");
    ck_assert_int_eq(it_info_int(c, "server", "io_threads_active"), 0);
}
END_TEST

START_TEST(test_info_and_config) {
    it_server *s = start_threaded();
    redisContext *c = it_connect(s);
    expect_reply(c, "[\"io-threads\",\"4\"]", "CONFIG GET io-threads");
    expect_reply(c, "[\"events-per-io-thread\",\"0\"]", "CONFIG GET events-per-io-thread");
    expect_error_prefix(c, "ERR CONFIG SET failed", "CONFIG SET io-threads 257");
    expect_ok(c, "CONFIG SET io-threads-do-reads yes");
    ck_assert_int_eq(it_info_int(c, "server", "io_threads_active"), 1);
    /* The last reference to a large value is dropped by an I/O thread. */
    it_raw *r = it_raw_connect(s);
    raw_set_fill(r, "big", 'z', 2 * MB);
    expect_raw(r, "+OK");
    long long freed = it_info_int(c, "stats", "io_threaded_freed_objects");
    expect_int(c, 1, "DEL big");
    ck_assert_int_eq(it_info_int(c, "stats", "io_threaded_freed_objects"), freed + 1);
}
END_TEST

/* tests/modules/tcpmod.c: plain TCP through the transport API, with a
 * handshake step that waits for the client's first bytes. */
START_TEST(test_module_transport_on_threads) {
    int tport = it_free_port();
    char *port = it_fmt("%d", tport);
    it_server *s = it_start("--io-threads", "4", "--events-per-io-thread", "0", "--loadmodule",
                            KEEL_TEST_MODULE_DIR "/tcpmod.so", port, NULL);
    redisContext *c = it_connect(s);
    it_server via = *s;
    via.port = tport;
    enum { CLIENTS = 8 };
    it_raw *r[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) r[i] = it_raw_connect(&via);
    for (int i = 0; i < CLIENTS; i++)
        for (int n = 0; n < 50; n++) it_raw_cmd(r[i], "INCR", it_fmt("t:%d", i), NULL);
    for (int i = 0; i < CLIENTS; i++)
        for (int n = 1; n <= 50; n++) expect_raw(r[i], it_fmt(":%d", n));
    ck_assert_int_eq(it_info_int(c, "clients", "connected_clients"), CLIENTS + 1);
}
END_TEST

static Suite *iothreads_suite(void) {
    Suite *s = suite_create("iothreads");
    TCase *tc = it_tcase_bare(s, "iothreads");
    tcase_add_test(tc, test_large_get_races_del_and_set);
    tcase_add_test(tc, test_many_clients_pipelining);
    tcase_add_test(tc, test_client_closes_while_reply_is_written);
    tcase_add_test(tc, test_change_io_threads_under_load);
    tcase_add_test(tc, test_info_and_config);
    tcase_add_test(tc, test_module_transport_on_threads);
    return s;
}

int main(void) {
    return it_run(iothreads_suite());
}
