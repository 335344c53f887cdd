/* check_it_conn.c -- connection handling of a real keel-server: 1,000
 * concurrent connections each doing PING/SET/GET; clients that disconnect in
 * the middle of a request (half a multibulk, half a big bulk), in the middle
 * of a big reply, inside MULTI, while WATCHing, or with a reset (RST) — and
 * the server keeps serving everyone else and releases their memory; rapid
 * connect/disconnect churn; many clients incrementing one counter;
 * client-query-buffer-limit counting big bulks read straight into their
 * value and commands queued by MULTI. */
#include "harness.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MB (1024 * 1024)

static long long connected_clients(void) {
    return it_info_int(C, "clients", "connected_clients");
}

static long long used_memory(void) {
    return it_info_int(C, "memory", "used_memory");
}

/* Waits until the server counts n connected clients (10 s). */
static void wait_clients(long long n) {
    long long deadline = it_mstime() + 10000, got;
    while ((got = connected_clients()) != n && it_mstime() < deadline)
        it_sleep_ms(5);
    ck_assert_msg(got == n, "connected_clients is %lld, expected %lld (10 s after the disconnects)",
                  got, n);
}

/* Reads one reply from c and compares its rendering. */
static void read_expect(redisContext *c, const char *want, int conn) {
    redisReply *r = NULL;
    ck_assert_msg(redisGetReply(c, (void **)&r) == REDIS_OK, "connection %d: %s", conn, c->errstr);
    char got[200];
    it_render(r, got, sizeof(got));
    freeReplyObject(r);
    ck_assert_msg(!strcmp(got, want), "connection %d: expected %s, got %s", conn, want, got);
}

START_TEST(test_1000_concurrent_connections) {
    enum { N = 1000 };
    redisContext **cs = it_alloc(N * sizeof(*cs));
    for (int i = 0; i < N; i++)
        cs[i] = it_connect(S);
    /* Everyone sends before anyone reads. */
    for (int i = 0; i < N; i++) {
        redisAppendCommand(cs[i], "PING");
        redisAppendCommand(cs[i], "SET conn:%d %d", i, i);
        redisAppendCommand(cs[i], "GET conn:%d", i);
        int done = 0;
        while (!done)
            ck_assert_int_eq(redisBufferWrite(cs[i], &done), REDIS_OK);
    }
    for (int i = N - 1; i >= 0; i--) {
        read_expect(cs[i], "+PONG", i);
        read_expect(cs[i], "+OK", i);
        read_expect(cs[i], it_fmt("\"%d\"", i), i);
    }
    ck_assert_int_eq(connected_clients(), N + 1);
    expect_int(C, N, "DBSIZE");
    for (int i = 0; i < N; i++)
        it_disconnect(cs[i]);
    wait_clients(1);
    expect_bulk(C, "999", "GET conn:999");
}
END_TEST

START_TEST(test_disconnect_in_half_multibulk) {
    it_raw *r = it_raw_connect(S);
    it_raw_sendstr(r, "*3\r\n$3\r\nSET\r\n$1\r\n");
    wait_clients(2);
    it_raw_close(r);
    wait_clients(1);
    r = it_raw_connect(S);
    it_raw_sendstr(r, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhel");
    it_raw_close(r);
    wait_clients(1);
    expect_status(C, "PONG", "PING");
    expect_int(C, 0, "EXISTS k");
    expect_int(C, 0, "DBSIZE");
}
END_TEST

START_TEST(test_disconnect_in_half_big_bulk) {
    long long before = used_memory();
    it_raw *r = it_raw_connect(S);
    it_raw_sendstr(r, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$10000000\r\n");
    char *half = it_random_bytes(5 * MB, 1);
    ck_assert_int_eq(it_raw_send(r, half, 5 * MB), 0);
    /* The server buffers the half bulk... */
    it_wait_until(used_memory() >= before + 4 * MB, 10000);
    it_raw_close(r);
    /* ...and frees it with the client. */
    wait_clients(1);
    it_wait_until(used_memory() < before + MB, 10000);
    expect_int(C, 0, "EXISTS big");
    expect_ok(C, "SET after ok");
    expect_bulk(C, "ok", "GET after");
}
END_TEST

START_TEST(test_disconnect_during_big_reply) {
    size_t len = 16 * MB;
    char *val = it_random_bytes(len, 2);
    expect_ok(C, "SET big %b", val, len);
    long long before = used_memory();
    for (int round = 0; round < 3; round++) {
        it_raw *r = it_raw_connect(S);
        for (int i = 0; i < 4; i++)
            it_raw_cmd(r, "GET", "big", NULL);
        it_sleep_ms(50);
        it_raw_close(r); /* with up to 64 MB of replies unread */
    }
    wait_clients(1);
    it_wait_until(used_memory() < before + 4 * MB, 10000);
    expect_bulk_len(C, val, len, "GET big");
}
END_TEST

START_TEST(test_disconnect_inside_multi) {
    it_raw *r = it_raw_connect(S);
    it_raw_cmd(r, "MULTI", NULL);
    expect_raw(r, "+OK");
    it_raw_cmd(r, "SET", "a", "1", NULL);
    expect_raw(r, "+QUEUED");
    it_raw_close(r);
    wait_clients(1);
    expect_int(C, 0, "EXISTS a");
}
END_TEST

START_TEST(test_disconnect_while_watching) {
    for (int i = 0; i < 20; i++) {
        it_raw *r = it_raw_connect(S);
        it_raw_cmd(r, "WATCH", "k", "k2", it_fmt("k%d", i), NULL);
        expect_raw(r, "+OK");
        it_raw_close(r);
    }
    wait_clients(1);
    /* Touching keys the dead clients watched must not touch freed memory. */
    expect_ok(C, "SET k v");
    expect_ok(C, "SET k2 v");
    expect_ok(C, "FLUSHALL");
    expect_ok(C, "WATCH k");
    expect_ok(C, "SET k w");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_nil(C, "EXEC");
}
END_TEST

START_TEST(test_reset_connection_mid_request) {
    for (int i = 0; i < 20; i++) {
        it_raw *r = it_raw_connect(S);
        it_raw_sendstr(r, "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$100\r\nabc");
        struct linger lg = {1, 0};
        setsockopt(r->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        it_raw_close(r); /* RST */
    }
    wait_clients(1);
    expect_status(C, "PONG", "PING");
    expect_int(C, 0, "EXISTS x");
}
END_TEST

START_TEST(test_connect_disconnect_churn) {
    long long before = it_info_int(C, "stats", "total_connections_received");
    for (int i = 0; i < 500; i++) {
        it_raw *r = it_raw_connect(S);
        if (i % 2) it_raw_cmd(r, "PING", NULL); /* and leave without reading */
        it_raw_close(r);
    }
    wait_clients(1);
    ck_assert_int_ge(it_info_int(C, "stats", "total_connections_received"), before + 500);
    expect_status(C, "PONG", "PING");
}
END_TEST

START_TEST(test_many_clients_one_counter) {
    enum { N = 50, PER = 200 };
    redisContext *cs[N];
    for (int i = 0; i < N; i++)
        cs[i] = it_connect(S);
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < PER; j++)
            redisAppendCommand(cs[i], "INCR counter");
        int done = 0;
        while (!done)
            ck_assert_int_eq(redisBufferWrite(cs[i], &done), REDIS_OK);
    }
    for (int i = 0; i < N; i++) {
        long long last = 0;
        for (int j = 0; j < PER; j++) {
            redisReply *r;
            ck_assert_int_eq(redisGetReply(cs[i], (void **)&r), REDIS_OK);
            ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
            ck_assert_int_gt(r->integer, last); /* each client sees its increments in order */
            last = r->integer;
            freeReplyObject(r);
        }
    }
    expect_bulk(C, "10000", "GET counter");
}
END_TEST

START_TEST(test_client_list_many) {
    enum { N = 200 };
    for (int i = 0; i < N; i++)
        expect_ok(it_connect(S), "CLIENT SETNAME c%d", i);
    redisReply *r = it_cmd(C, "CLIENT LIST");
    int lines = 0;
    for (const char *p = r->str; *p; p++)
        lines += *p == '\n';
    ck_assert_int_eq(lines, N + 1);
    ck_assert_ptr_nonnull(strstr(r->str, " name=c199 "));
}
END_TEST

/* ---- client-query-buffer-limit ---- */

/* Sends len bytes in 64 KB pieces until the server closes the connection;
 * returns the bytes that went out. */
static size_t send_until_closed(it_raw *r, size_t len) {
    static char piece[64 * 1024];
    memset(piece, 'x', sizeof(piece));
    size_t sent = 0;
    while (sent < len && it_raw_send(r, piece, sizeof(piece)) == 0)
        sent += sizeof(piece);
    return sent;
}

START_TEST(test_qbuf_limit_counts_big_bulk) {
    /* A 500 MB bulk that is never finished: its bytes go straight into the
     * value's buffer, and still count against the 1 MB limit. */
    it_server *s = it_start("--client-query-buffer-limit", "1mb", NULL);
    redisContext *c = it_connect(s);
    it_raw *r = it_raw_connect(s);
    it_raw_sendstr(r, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$500000000\r\n");
    send_until_closed(r, 16 * MB);
    ck_assert_msg(it_raw_wait_closed(r, 10000),
                  "a 500 MB bulk past the 1 MB limit kept its connection");
    ck_assert_int_eq(it_info_int(c, "stats", "client_query_buffer_limit_disconnections"), 1);
    expect_int(c, 0, "EXISTS k");
    /* Values under the limit still take the copy-free path and work, in a
     * pipeline too. */
    char *v = it_random_bytes(900 * 1024, 3);
    redisAppendCommand(c, "SET a %b", v, (size_t)900 * 1024);
    redisAppendCommand(c, "SET b %b", v, (size_t)900 * 1024);
    read_expect(c, "+OK", 0);
    read_expect(c, "+OK", 0);
    expect_bulk_len(c, v, 900 * 1024, "GET b");
    ck_assert_int_eq(it_info_int(c, "stats", "client_query_buffer_limit_disconnections"), 1);
}
END_TEST

START_TEST(test_qbuf_limit_counts_multi_queue) {
    /* Queued commands have not run: they are query buffer too. */
    it_server *s = it_start("--client-query-buffer-limit", "1mb", NULL);
    redisContext *c = it_connect(s);
    redisContext *m = it_connect(s);
    char *v = it_random_bytes(300 * 1024, 4);
    expect_ok(m, "MULTI");
    int queued = 0;
    for (int i = 0; i < 20; i++) {
        redisReply *rep = it_try_cmd(m, "SET k%d %b", i, v, (size_t)300 * 1024);
        if (!rep || rep->type != REDIS_REPLY_STATUS) break;
        queued++;
    }
    ck_assert_msg(queued >= 3 && queued <= 4, "%d SETs of 300 KB queued under a 1 MB limit",
                  queued);
    ck_assert_int_eq(it_info_int(c, "stats", "client_query_buffer_limit_disconnections"), 1);
    expect_int(c, 0, "DBSIZE"); /* nothing ran */
    /* the limit is per transaction: a new one starts from zero */
    redisContext *m2 = it_connect(s);
    expect_ok(m2, "MULTI");
    for (int i = 0; i < 3; i++)
        expect_status(m2, "QUEUED", "SET k%d %b", i, v, (size_t)300 * 1024);
    expect_reply(m2, "[+OK,+OK,+OK]", "EXEC");
    expect_ok(m2, "MULTI");
    for (int i = 0; i < 3; i++)
        expect_status(m2, "QUEUED", "SET k%d %b", i, v, (size_t)300 * 1024);
    expect_ok(m2, "DISCARD");
    expect_int(c, 3, "DBSIZE");
}
END_TEST

static Suite *conn_suite(void) {
    Suite *s = suite_create("conn");
    TCase *tc = it_tcase(s, "conn");
    tcase_add_test(tc, test_1000_concurrent_connections);
    tcase_add_test(tc, test_disconnect_in_half_multibulk);
    tcase_add_test(tc, test_disconnect_in_half_big_bulk);
    tcase_add_test(tc, test_disconnect_during_big_reply);
    tcase_add_test(tc, test_disconnect_inside_multi);
    tcase_add_test(tc, test_disconnect_while_watching);
    tcase_add_test(tc, test_reset_connection_mid_request);
    tcase_add_test(tc, test_connect_disconnect_churn);
    tcase_add_test(tc, test_many_clients_one_counter);
    tcase_add_test(tc, test_client_list_many);
    TCase *limits = it_tcase_bare(s, "limits");
    tcase_add_test(limits, test_qbuf_limit_counts_big_bulk);
    tcase_add_test(limits, test_qbuf_limit_counts_multi_queue);
    return s;
}

int main(void) {
    return it_run(conn_suite());
}
