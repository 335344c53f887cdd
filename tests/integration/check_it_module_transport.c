/* check_it_module_transport.c -- ABI 1.3's transport members against the
 * real server, through the tests/modules/bufmod.c fixture (plain TCP shaped
 * like TLS): bytes the transport buffers (has_pending) are read without a
 * socket event, a read that needs writability and a write that needs
 * readability (conn_wait) are retried in that direction, a handshake that
 * never completes is closed after the timeout, listeners open and close at
 * run time and follow CONFIG SET bind, `port 0` with only a module
 * listener, and outgoing connections (connect) with MODULE UNLOAD refusing
 * while one is open. Runs with and without I/O threads. */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUFMOD KEEL_TEST_MODULE_DIR "/bufmod.so"

/* A server with bufmod listening on *tport (handshake timeout in ms, NULL
 * for the default), with `iothreads` I/O threads taking every event (NULL:
 * none, unless KEEL_TEST_IO_THREADS asks). */
static it_server *start_bufmod(int *tport, const char *timeout_ms, const char *iothreads) {
    *tport = it_free_port();
    char *port = it_fmt("%d", *tport);
    const char *t = iothreads ? "--io-threads" : NULL;
    if (timeout_ms)
        return it_start("--enable-module-command", "yes", "--loadmodule", BUFMOD, port, timeout_ms,
                        t, iothreads, "--events-per-io-thread", "0", NULL);
    return it_start("--enable-module-command", "yes", "--loadmodule", BUFMOD, port, t, iothreads,
                    "--events-per-io-thread", "0", NULL);
}

static it_raw *raw_via(it_server *s, int port) {
    it_server via = *s;
    via.port = port;
    return it_raw_connect(&via);
}

/* 1 if something accepts a TCP connection on addr:port. */
static int accepts(const char *addr, int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, addr, &a.sin_addr);
    int ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    return ok;
}

/* ---- buffered bytes and conn_wait ---- */

static void pipeline_pings(it_raw *r, int n) {
    char *buf = it_alloc((size_t)n * 14);
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        memcpy(buf + len, "PING\r\n", 6);
        len += 6;
    }
    ck_assert_int_eq(it_raw_send(r, buf, len), 0);
    for (int i = 0; i < n; i++)
        expect_raw(r, "+PONG");
}

static void check_buffered(const char *iothreads) {
    int tport;
    it_server *s = start_bufmod(&tport, NULL, iothreads);
    it_raw *r = raw_via(s, tport);
    /* one burst far longer than what a read step takes from the buffer */
    pipeline_pings(r, 500);
    /* a value that arrives in many pieces */
    char *value = it_random_bytes(200000, 7);
    char *hdr = it_fmt("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$200000\r\n");
    ck_assert_int_eq(it_raw_send(r, hdr, strlen(hdr)), 0);
    ck_assert_int_eq(it_raw_send(r, value, 200000), 0);
    ck_assert_int_eq(it_raw_send(r, "\r\n", 2), 0);
    expect_raw(r, "+OK");
    redisContext *c = it_connect(s);
    redisReply *got = it_cmd(c, "GET k");
    ck_assert_int_eq(got->len, 200000);
    ck_assert(memcmp(got->str, value, 200000) == 0);
}

START_TEST(test_buffered_bytes_are_read) {
    check_buffered(NULL);
}
END_TEST

START_TEST(test_buffered_bytes_are_read_io_threads) {
    check_buffered("4");
}
END_TEST

static void check_waits(const char *iothreads) {
    int tport;
    it_server *s = start_bufmod(&tport, NULL, iothreads);
    redisContext *c = it_connect(s);
    it_raw *r = raw_via(s, tport);
    /* the read that pulled PING asks for writability before it serves it:
     * no readable event will ever come for those bytes */
    it_raw_cmd(r, "BUFMOD.READWAIT", NULL);
    expect_raw(r, "+OK");
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+PONG");
    expect_reply(c, it_fmt("[:0,:1,:%d,:0]", tport), "BUFMOD.STATS");
    /* the reply to WRITEWAIT needs readability: it goes once PING arrives,
     * and is not retried meanwhile on writability */
    it_raw_cmd(r, "BUFMOD.WRITEWAIT", NULL);
    it_sleep_ms(100); /* room for wrong retries to show */
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+OK");
    expect_raw(r, "+PONG");
    expect_reply(c, it_fmt("[:0,:1,:%d,:0]", tport), "BUFMOD.STATS");
    /* a large reply waiting the same way is retried with no fewer bytes */
    char *big = it_random_bytes(3000000, 3);
    redisReply *set = it_cmd(c, "SET big %b", big, (size_t)3000000);
    ck_assert_int_eq(set->type, REDIS_REPLY_STATUS);
    it_raw_cmd(r, "BUFMOD.WRITEWAIT", NULL);
    it_raw_cmd(r, "GET", "big", NULL);
    it_sleep_ms(100);
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+OK");
    it_value *v = it_raw_read(r);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(v->len, 3000000);
    ck_assert(memcmp(v->str, big, 3000000) == 0);
    expect_raw(r, "+PONG");
    expect_reply(c, it_fmt("[:0,:1,:%d,:0]", tport), "BUFMOD.STATS");
}

START_TEST(test_conn_wait_retries_in_that_direction) {
    check_waits(NULL);
}
END_TEST

START_TEST(test_conn_wait_retries_in_that_direction_io_threads) {
    check_waits("4");
}
END_TEST

/* ---- handshake timeout ---- */

START_TEST(test_handshake_timeout) {
    int tport;
    it_server *s = start_bufmod(&tport, "300", NULL);
    it_raw *done = raw_via(s, tport);
    it_raw_cmd(done, "PING", NULL);
    expect_raw(done, "+PONG");
    /* connects and never sends: its handshake waits for a first byte */
    it_raw *silent = raw_via(s, tport);
    ck_assert_msg(it_raw_wait_closed(silent, 10000), "a stalled handshake was not closed");
    char *log = it_read_file(s->log);
    ck_assert_msg(strstr(log, "transport 'bufmod': handshake with 127.0.0.1:") &&
                      strstr(log, "timed out after 300 ms"),
                  "log:\n%s", it_log_tail(s));
    /* a finished handshake is not timed: that client still works */
    it_raw_cmd(done, "PING", NULL);
    expect_raw(done, "+PONG");
}
END_TEST

/* ---- listeners ---- */

START_TEST(test_listener_open_close) {
    int tport;
    it_server *s = start_bufmod(&tport, NULL, NULL);
    redisContext *c = it_connect(s);
    it_raw *before = raw_via(s, tport);
    int next = it_free_port();
    expect_ok(c, "BUFMOD.LISTEN %d", next);
    ck_assert_msg(!accepts("127.0.0.1", tport), "the closed listener still accepts");
    it_raw *after = raw_via(s, next);
    it_raw_cmd(after, "PING", NULL);
    expect_raw(after, "+PONG");
    expect_reply(c, it_fmt("[:0,:0,:%d,:0]", next), "BUFMOD.STATS");
    /* what the closed listener accepted stays open */
    it_raw_cmd(before, "PING", NULL);
    expect_raw(before, "+PONG");
    /* a port in use is refused and the listener is kept */
    expect_error(c, "ERR cannot listen", "BUFMOD.LISTEN %d", s->port);
    ck_assert(accepts("127.0.0.1", next));
    expect_ok(c, "BUFMOD.UNLISTEN");
    ck_assert(!accepts("127.0.0.1", next));
}
END_TEST

START_TEST(test_listener_follows_bind) {
    int tport;
    it_server *s = start_bufmod(&tport, NULL, NULL);
    redisContext *c = it_connect(s);
    ck_assert(accepts("127.0.0.1", tport));
    ck_assert(!accepts("127.0.0.2", tport));
    expect_ok(c, "CONFIG SET bind %s", "127.0.0.1 127.0.0.2");
    ck_assert_msg(accepts("127.0.0.2", tport), "the listener did not follow bind");
    ck_assert(accepts("127.0.0.1", tport));
    expect_ok(c, "CONFIG SET bind 127.0.0.2");
    ck_assert_msg(!accepts("127.0.0.1", tport), "the old bind address still accepts");
    ck_assert(accepts("127.0.0.2", tport));
}
END_TEST

/* A socket listening on addr:port (the test's, to make a bind fail). */
static int occupy(const char *addr, int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, addr, &a.sin_addr);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(fd, 1), 0);
    return fd;
}

/* CONFIG SET bind is all listeners or none (as Valkey's applyBind): when
 * the transport listener cannot move, the command fails and the TCP
 * listener goes back to the old addresses too. */
START_TEST(test_bind_rolls_back_all_listeners) {
    int tport;
    it_server *s = start_bufmod(&tport, NULL, NULL);
    redisContext *c = it_connect(s);
    int fd = occupy("127.0.0.2", tport);
    redisReply *r = it_cmd(c, "CONFIG SET bind %s", "127.0.0.1 127.0.0.2");
    ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
    ck_assert_msg(strstr(r->str, "Failed to bind to specified addresses"), "%s", r->str);
    close(fd);
    expect_reply(c, "[\"bind\",\"127.0.0.1\"]", "CONFIG GET bind");
    ck_assert_msg(!accepts("127.0.0.2", s->port), "the TCP listener kept the refused address");
    ck_assert_msg(accepts("127.0.0.1", tport), "the transport listener lost its old address");
    ck_assert(accepts("127.0.0.1", s->port));
    ck_assert(!accepts("127.0.0.2", tport));
    /* an address that is not on this machine fails the same way */
    r = it_cmd(c, "CONFIG SET bind %s", "127.0.0.1 192.0.2.1");
    ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
    ck_assert(accepts("127.0.0.1", tport));
    ck_assert(accepts("127.0.0.1", s->port));
    expect_status(it_connect(s), "PONG", "PING");
}
END_TEST

START_TEST(test_port_zero_with_module_listener) {
    int tport;
    it_server *s = start_bufmod(&tport, NULL, NULL);
    redisContext *c = it_connect(s);
    /* the module's listener is one: the plain port may close */
    expect_ok(c, "CONFIG SET port 0");
    ck_assert(!accepts("127.0.0.1", s->port));
    it_raw *r = raw_via(s, tport);
    it_raw_cmd(r, "CONFIG", "GET", "port", NULL);
    expect_raw(r, "[\"port\",\"0\"]");
    /* without it the server listens nowhere: allowed (as Valkey), the
     * connection stays */
    it_raw_cmd(r, "BUFMOD.UNLISTEN", NULL);
    expect_raw(r, "+OK");
    it_raw_cmd(r, "CONFIG", "SET", "port", "0", NULL);
    expect_raw(r, "+OK");
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+PONG");
}
END_TEST

/* Starting with `port 0` and only the module's port: the harness cannot
 * PING a plain port, so the server is run here. */
START_TEST(test_start_with_port_zero) {
    int tport = it_free_port();
    const char *server = getenv("KEEL_SERVER");
    ck_assert_ptr_nonnull(server);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        execl(server, server, "--port", "0", "--bind", "127.0.0.1", "--loadmodule", BUFMOD,
              it_fmt("%d", tport), (char *)NULL);
        _exit(127);
    }
    it_server via = {.pid = pid, .port = tport};
    redisContext *c = NULL;
    for (int i = 0; i < 1000 && !c; i++) {
        c = it_try_connect(&via);
        if (!c) it_sleep_ms(10);
    }
    ck_assert_msg(c, "no answer on the module's port");
    expect_status(c, "PONG", "PING");
    expect_reply(c, "[\"port\",\"0\"]", "CONFIG GET port");
    kill(pid, SIGTERM);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exit status %d", status);
    /* without the module, port 0 listens nowhere and is refused */
    char *out = it_start_refused(NULL, "--port", "0", NULL);
    ck_assert_msg(strstr(out, "Configured to not listen anywhere"), "log:\n%s", out);
}
END_TEST

/* ---- outgoing connections ---- */

START_TEST(test_dial_own_listener) {
    int tport;
    it_server *s = start_bufmod(&tport, NULL, NULL);
    redisContext *c = it_connect(s);
    /* several replies: the fixture reads once per readable callback, so
     * the rest it buffered must bring it back (has_pending) */
    expect_bulk(c, "127.0.0.1:+PONG\r\n+PONG\r\n+PONG\r\n", "BUFMOD.DIAL 127.0.0.1 %d 3", tport);
    expect_bulk(c, "localhost:+PONG\r\n", "BUFMOD.DIAL localhost %d 1", tport);
    /* the server's accepted side saw the listener's port */
    expect_reply(c, it_fmt("[:0,:0,:%d,:0]", tport), "BUFMOD.STATS");
    /* nobody listening, and a name that does not resolve */
    expect_error(c, "ERR connect failed", "BUFMOD.DIAL 127.0.0.1 %d 1", it_free_port());
    expect_error(c, "ERR cannot connect", "BUFMOD.DIAL no-such-host.invalid %d 1", tport);
    char *log = it_read_file(s->log);
    ck_assert_msg(strstr(log, "transport 'bufmod': connection to 127.0.0.1:"), "log:\n%s",
                  it_log_tail(s));
}
END_TEST

START_TEST(test_dial_io_threads) {
    int tport;
    it_server *s = start_bufmod(&tport, NULL, "4");
    redisContext *c = it_connect(s);
    for (int i = 0; i < 20; i++)
        expect_bulk(c, "127.0.0.1:+PONG\r\n+PONG\r\n", "BUFMOD.DIAL 127.0.0.1 %d 2", tport);
}
END_TEST

START_TEST(test_unload_refused_while_dialled) {
    int tport;
    it_server *s = start_bufmod(&tport, NULL, NULL);
    redisContext *c = it_connect(s);
    expect_ok(c, "BUFMOD.HOLD 127.0.0.1 %d", tport);
    expect_error_prefix(c, "ERR Error unloading module: 'bufmod' still has ",
                        "MODULE UNLOAD bufmod");
    expect_ok(c, "BUFMOD.DROP");
    /* the accepted end closes once it sees the end of stream */
    redisReply *r = NULL;
    for (int i = 0; i < 1000; i++) {
        r = it_cmd(c, "MODULE UNLOAD bufmod");
        if (r->type == REDIS_REPLY_STATUS) break;
        it_sleep_ms(10);
    }
    ck_assert_int_eq(r->type, REDIS_REPLY_STATUS);
}
END_TEST

static Suite *transport_suite(void) {
    Suite *s = suite_create("module_transport");
    TCase *tc = it_tcase_bare(s, "module_transport");
    tcase_add_test(tc, test_buffered_bytes_are_read);
    tcase_add_test(tc, test_buffered_bytes_are_read_io_threads);
    tcase_add_test(tc, test_conn_wait_retries_in_that_direction);
    tcase_add_test(tc, test_conn_wait_retries_in_that_direction_io_threads);
    tcase_add_test(tc, test_handshake_timeout);
    tcase_add_test(tc, test_listener_open_close);
    tcase_add_test(tc, test_listener_follows_bind);
    tcase_add_test(tc, test_bind_rolls_back_all_listeners);
    tcase_add_test(tc, test_port_zero_with_module_listener);
    tcase_add_test(tc, test_start_with_port_zero);
    tcase_add_test(tc, test_dial_own_listener);
    tcase_add_test(tc, test_dial_io_threads);
    tcase_add_test(tc, test_unload_refused_while_dialled);
    return s;
}

int main(void) {
    return it_run(transport_suite());
}
