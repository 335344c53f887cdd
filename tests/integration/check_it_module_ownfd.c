/* check_it_module_ownfd.c -- ABI 1.4's module-owned connection descriptors
 * (KEEL_TRANSPORT_OWN_FD, fd_watch, conn_adopt, conn_wake) against the real
 * server, through the tests/modules/fdpipe.c fixture: a transport shaped
 * like RDMA whose connections the server sees only as an eventfd (never a
 * socket), reached by the test over a unix socket the module listens on
 * itself. Each connection's writer stops after a window of bytes until the
 * peer sends again, so every reply longer than the window exercises the
 * server's wait-for-readability retries.
 *
 * Covered: requests, pipelines and replies many windows long; a handshake
 * whose KEEL_CONN_WANT_WRITE waits for readability; CLIENT LIST's addr,
 * laddr and fd from the addr hook and the descriptor; CLIENT KILL, timeout,
 * client-output-buffer-limit, maxclients and protected mode (refused without a reply), each running
 * the close hook once; the peer closing, seen only by the module and passed on with conn_wake (also
 * mid-handshake and under pipelined load); MODULE UNLOAD refused while connections are open and
 * fine after, the watch it left removed; fd_unwatch inside its own callback; listen, connect and
 * register_transport refusing what they must. Runs with the I/O threads CI
 * asks for (KEEL_TEST_IO_THREADS) like every integration suite. */
#include "harness.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FDPIPE KEEL_TEST_MODULE_DIR "/fdpipe.so"
#define WINDOW 4096
#define LOCAL_PORT "4242"
#define FP_GRANT "\x06" /* fdpipe.c: a window grant, not data */

enum { ST_ACCEPTED, ST_CLOSES, ST_HS_STEPS, ST_LAST_EFD, ST_ONESHOT, ST_WAKES };

static char *sock_path(void) {
    static int n;
    return it_fmt("/tmp/keel-fdpipe-%d-%d.sock", (int)getpid(), ++n);
}

/* A server with fdpipe listening on path; up to four more arguments for
 * the server (NULL ends them). */
static it_server *start_fdpipe(const char *path, const char *a1, const char *a2, const char *a3,
                               const char *a4) {
    return it_start("--enable-module-command", "yes", "--loadmodule", FDPIPE, path,
                    it_fmt("%d", WINDOW), LOCAL_PORT, a1, a2, a3, a4, NULL);
}

static long long stat_of(redisContext *c, int i) {
    redisReply *r = it_cmd(c, "FDPIPE.STATS");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 6);
    return r->element[i]->integer;
}

/* ---- the test's peer: a unix socket to the module ---- */

/* since: bytes received since the module's writer was last granted a
 * window. It stops after WINDOW of them until the peer sends something;
 * bytes sent while part of the window is left grant nothing. The peer reads
 * everything it expects before it sends again, so its count is exact. */
typedef struct fp_peer {
    int fd;
    size_t since;
} fp_peer;

static fp_peer *fp_connect(const char *path) {
    fp_peer *p = it_alloc(sizeof(*p));
    p->since = 0;
    p->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(p->fd, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    ck_assert_msg(connect(p->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect %s: %s", path,
                  strerror(errno));
    return p;
}

static void fp_send(fp_peer *p, const void *buf, size_t len) {
    const char *b = buf;
    if (p->since == WINDOW) p->since = 0; /* the writer was waiting: a grant */
    while (len) {
        ssize_t n = write(p->fd, b, len);
        ck_assert_msg(n > 0, "write to the module: %s", strerror(errno));
        b += n;
        len -= (size_t)n;
    }
}

static void fp_sendstr(fp_peer *p, const char *s) {
    fp_send(p, s, strlen(s));
}

/* Some bytes (at most len), or 0 at the end of the stream; fails the test
 * after 10 s of silence. */
static ssize_t fp_recv(fp_peer *p, char *buf, size_t len) {
    struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
    ck_assert_msg(poll(&pfd, 1, 10000) == 1, "no reply from the server in 10 s");
    ssize_t n = read(p->fd, buf, len);
    ck_assert_msg(n >= 0, "read: %s", strerror(errno));
    p->since += (size_t)n;
    ck_assert_msg(p->since <= WINDOW, "the writer sent %zu bytes for one window", p->since);
    return n;
}

/* Reads replies of len bytes in all, granting the next window after each
 * full one with the fixture's control byte (no request: the server has no
 * reply to queue, only the write that waits). Returns the bytes (tracked)
 * and sets *acks. */
static char *fp_read_acked(fp_peer *p, size_t len, int *acks) {
    size_t got = 0;
    char *buf = it_alloc(len);
    *acks = 0;
    while (got < len) {
        ssize_t n = fp_recv(p, buf + got, len - got);
        ck_assert_msg(n > 0, "the server closed after %zu of %zu bytes", got, len);
        got += (size_t)n;
        if (p->since == WINDOW && got < len) {
            fp_send(p, FP_GRANT, 1);
            (*acks)++;
        }
    }
    return buf;
}

static void fp_expect(fp_peer *p, const char *want) {
    int acks;
    char *got = fp_read_acked(p, strlen(want), &acks);
    ck_assert_int_eq(acks, 0);
    ck_assert_msg(!memcmp(got, want, strlen(want)), "got %.*s, want %s", (int)strlen(want), got,
                  want);
}

/* 1 if the server closed the peer's connection without sending anything. */
static int fp_closed_silently(fp_peer *p) {
    char c;
    return fp_recv(p, &c, 1) == 0;
}

static void fp_close(fp_peer *p) {
    close(p->fd);
}

/* ---- requests, windows, the handshake ---- */

START_TEST(test_requests_and_handshake) {
    char *path = sock_path();
    it_server *s = start_fdpipe(path, NULL, NULL, NULL, NULL);
    redisContext *c = it_connect(s);
    fp_peer *fd = fp_connect(path);
    /* The first step may run on an I/O thread. */
    it_wait_until(stat_of(c, ST_HS_STEPS) == 1, 10000);
    /* The handshake waits for the peer's first bytes with WANT_WRITE: for
     * an eventfd that means readability; waiting for writability would run
     * the step again on every loop turn. */
    for (int i = 0; i < 5; i++)
        expect_status(c, "PONG", "PING");
    ck_assert_int_eq(stat_of(c, ST_HS_STEPS), 1);
    fp_sendstr(fd, "PING\r\n");
    fp_expect(fd, "+PONG\r\n");
    ck_assert_int_eq(stat_of(c, ST_HS_STEPS), 2);
    fp_sendstr(fd, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n");
    fp_expect(fd, "+OK\r\n");
    fp_sendstr(fd, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    fp_expect(fd, "$5\r\nhello\r\n");
    expect_bulk(c, "hello", "GET k");
    fp_close(fd);
    it_wait_until(stat_of(c, ST_CLOSES) == 1, 10000);
    /* Open at shutdown, a client and one in its handshake: closed by the
     * server before the module's deinit (after it, fdpipe's close hook
     * crashes the server), their close hooks unwatching the module's data
     * sockets before the server drops the module's watches. */
    fd = fp_connect(path);
    fp_sendstr(fd, "PING\r\n");
    fp_expect(fd, "+PONG\r\n");
    fp_connect(path);
    it_wait_until(stat_of(c, ST_ACCEPTED) == 3, 10000);
}
END_TEST

START_TEST(test_replies_longer_than_the_window) {
    char *path = sock_path();
    it_server *s = start_fdpipe(path, NULL, NULL, NULL, NULL);
    redisContext *c = it_connect(s);
    size_t vlen = 300000;
    char *value = it_random_bytes(vlen, 17);
    expect_ok(c, "SET big %b", value, vlen);
    fp_peer *fd = fp_connect(path);
    fp_sendstr(fd, "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n");
    char *hdr = it_fmt("$%zu\r\n", vlen);
    size_t len = strlen(hdr) + vlen + 2;
    int acks;
    char *got = fp_read_acked(fd, len, &acks);
    ck_assert_int_eq(acks, (int)((len - 1) / WINDOW));
    ck_assert(!memcmp(got, hdr, strlen(hdr)));
    ck_assert(!memcmp(got + strlen(hdr), value, vlen));
    ck_assert(!memcmp(got + strlen(hdr) + vlen, "\r\n", 2));

    /* A pipeline whose replies fill many windows. */
    int npings = 2000; /* one write, one arrival */
    char *req = it_alloc((size_t)npings * 6);
    for (int i = 0; i < npings; i++)
        memcpy(req + i * 6, "PING\r\n", 6);
    fp_send(fd, req, (size_t)npings * 6);
    got = fp_read_acked(fd, (size_t)npings * 7, &acks);
    ck_assert_int_ge(acks, (int)(npings * 7 / WINDOW) - 1);
    for (int i = 0; i < npings; i++)
        ck_assert_msg(!memcmp(got + i * 7, "+PONG\r\n", 7), "reply %d", i);
    fp_close(fd);
    it_wait_until(stat_of(c, ST_CLOSES) == 1, 10000);
}
END_TEST

/* ---- a normal client: CLIENT LIST, CLIENT KILL, timeout ---- */

static char *client_line(redisContext *c, const char *needle) {
    redisReply *r = it_cmd(c, "CLIENT LIST");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    char *line = strstr(r->str, needle);
    if (!line) return NULL;
    while (line > r->str && line[-1] != '\n')
        line--;
    return it_fmt("%.*s", (int)strcspn(line, "\r\n"), line);
}

START_TEST(test_client_list_and_kill) {
    char *path = sock_path();
    it_server *s = start_fdpipe(path, NULL, NULL, NULL, NULL);
    redisContext *c = it_connect(s);
    fp_peer *fd1 = fp_connect(path);
    fp_sendstr(fd1, "PING\r\n");
    fp_expect(fd1, "+PONG\r\n");
    fp_peer *fd2 = fp_connect(path);
    fp_sendstr(fd2, "PING\r\n");
    fp_expect(fd2, "+PONG\r\n");
    long long efd2 = stat_of(c, ST_LAST_EFD);
    char *line = client_line(c, "addr=127.0.0.1:10002 ");
    ck_assert_msg(line, "no CLIENT LIST line for the second connection");
    ck_assert_msg(strstr(line, " laddr=192.0.2.1:" LOCAL_PORT " "), "%s", line);
    ck_assert_msg(strstr(line, it_fmt(" fd=%lld ", efd2)), "fd is not the eventfd: %s", line);
    ck_assert_ptr_nonnull(client_line(c, "addr=127.0.0.1:10001 "));
    /* C and the two (the start-up probe's connection may still be going) */
    it_wait_until(it_info_int(c, "clients", "connected_clients") == 3, 10000);

    expect_ok(c, "CLIENT KILL 127.0.0.1:10001");
    ck_assert(fp_closed_silently(fd1));
    it_wait_until(stat_of(c, ST_CLOSES) == 1, 10000);
    ck_assert_ptr_null(client_line(c, "addr=127.0.0.1:10001 "));
    fp_sendstr(fd2, "PING\r\n");
    fp_expect(fd2, "+PONG\r\n");
    expect_int(c, 1, "CLIENT KILL ADDR 127.0.0.1:10002");
    ck_assert(fp_closed_silently(fd2));
    it_wait_until(stat_of(c, ST_CLOSES) == 2, 10000);
    /* once each: nothing more closes later */
    expect_status(c, "PONG", "PING");
    ck_assert_int_eq(stat_of(c, ST_CLOSES), 2);
    fp_close(fd1);
    fp_close(fd2);
}
END_TEST

START_TEST(test_timeout) {
    char *path = sock_path();
    it_server *s = start_fdpipe(path, "--timeout", "1", NULL, NULL);
    fp_peer *fd = fp_connect(path);
    fp_sendstr(fd, "PING\r\n");
    fp_expect(fd, "+PONG\r\n");
    ck_assert(fp_closed_silently(fd));
    redisContext *c = it_connect(s); /* after: it would time out too */
    ck_assert_int_eq(stat_of(c, ST_CLOSES), 1);
    fp_close(fd);
}
END_TEST

/* A reply over the hard limit closes the client: its writer is stuck on
 * the window, as an RDMA peer that stops re-registering would leave it. */
START_TEST(test_output_buffer_limit) {
    char *path = sock_path();
    it_server *s = it_start("--enable-module-command", "yes", "--loadmodule", FDPIPE, path,
                            it_fmt("%d", WINDOW), LOCAL_PORT, "--client-output-buffer-limit",
                            "normal", "100000", "0", "0", NULL);
    redisContext *c = it_connect(s);
    size_t vlen = 300000;
    expect_ok(c, "SET big %b", it_random_bytes(vlen, 5), vlen);
    fp_peer *fd = fp_connect(path);
    fp_sendstr(fd, "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n");
    char buf[WINDOW];
    size_t got = 0;
    ssize_t n;
    while ((n = fp_recv(fd, buf, sizeof(buf))) > 0)
        got += (size_t)n; /* at most one window: never granted another */
    ck_assert_uint_lt(got, vlen);
    it_wait_until(stat_of(c, ST_CLOSES) == 1, 10000);
    ck_assert_int_ge(it_info_int(c, "stats", "client_output_buffer_limit_disconnections"), 1);
    fp_close(fd);
}
END_TEST

/* ---- admission: refused without a reply, closed once ---- */

START_TEST(test_maxclients) {
    char *path = sock_path();
    it_server *s = start_fdpipe(path, "--maxclients", "2", NULL, NULL);
    redisContext *c = it_connect(s);
    /* the start-up probe's connection may still be going away */
    it_wait_until(it_info_int(c, "clients", "connected_clients") == 1, 10000);
    fp_peer *fd1 = fp_connect(path);
    fp_sendstr(fd1, "PING\r\n");
    fp_expect(fd1, "+PONG\r\n");
    fp_peer *fd2 = fp_connect(path);
    ck_assert(fp_closed_silently(fd2));
    it_wait_until(stat_of(c, ST_CLOSES) == 1, 10000);
    ck_assert_int_eq(stat_of(c, ST_ACCEPTED), 2);
    ck_assert_int_eq(it_info_int(c, "stats", "rejected_connections"), 1);
    fp_sendstr(fd1, "PING\r\n");
    fp_expect(fd1, "+PONG\r\n");
    fp_close(fd1);
    fp_close(fd2);
    it_wait_until(stat_of(c, ST_CLOSES) == 2, 10000);
}
END_TEST

START_TEST(test_protected_mode) {
    char *path = sock_path();
    it_server *s = start_fdpipe(path, "--protected-mode", "yes", NULL, NULL);
    redisContext *c = it_connect(s);
    expect_ok(c, "FDPIPE.PUBLIC 1");
    fp_peer *fd = fp_connect(path);
    ck_assert(fp_closed_silently(fd));
    it_wait_until(stat_of(c, ST_CLOSES) == 1, 10000);
    fp_close(fd);
    expect_ok(c, "FDPIPE.PUBLIC 0");
    fd = fp_connect(path);
    fp_sendstr(fd, "PING\r\n");
    fp_expect(fd, "+PONG\r\n");
    fp_close(fd);
    it_wait_until(stat_of(c, ST_CLOSES) == 2, 10000);
}
END_TEST

/* ---- the peer leaving: seen by the module, passed on with conn_wake ---- */

START_TEST(test_peer_close_wakes) {
    char *path = sock_path();
    it_server *s = start_fdpipe(path, NULL, NULL, NULL, NULL);
    redisContext *c = it_connect(s);
    fp_peer *fd = fp_connect(path);
    fp_sendstr(fd, "PING\r\n");
    fp_expect(fd, "+PONG\r\n");
    fp_close(fd);
    it_wait_until(stat_of(c, ST_CLOSES) == 1, 10000);
    ck_assert_int_eq(stat_of(c, ST_WAKES), 1);
    /* mid-handshake */
    fd = fp_connect(path);
    it_wait_until(stat_of(c, ST_ACCEPTED) == 2, 10000);
    fp_close(fd);
    it_wait_until(stat_of(c, ST_CLOSES) == 2, 10000);
    /* with replies in flight: pipelines the peer leaves unread */
    enum { N = 20, PINGS = 400 };
    char *req = it_alloc(PINGS * 6);
    for (int i = 0; i < PINGS; i++)
        memcpy(req + i * 6, "PING\r\n", 6);
    for (int i = 0; i < N; i++) {
        fd = fp_connect(path);
        fp_send(fd, req, PINGS * 6);
        fp_close(fd);
    }
    it_wait_until(stat_of(c, ST_CLOSES) == 2 + N, 10000);
    ck_assert_int_eq(stat_of(c, ST_ACCEPTED), 2 + N);
    ck_assert_int_eq(it_info_int(c, "clients", "connected_clients"), 1);
}
END_TEST

/* ---- unload, fd watches, refusals ---- */

START_TEST(test_unload) {
    char *path = sock_path();
    it_server *s = start_fdpipe(path, NULL, NULL, NULL, NULL);
    redisContext *c = it_connect(s);
    fp_peer *fd = fp_connect(path);
    fp_sendstr(fd, "PING\r\n");
    fp_expect(fd, "+PONG\r\n");
    expect_error(c,
                 "ERR Error unloading module: 'fdpipe' still has 1 open connection(s) of its "
                 "transports",
                 "MODULE UNLOAD fdpipe");
    fp_sendstr(fd, "PING\r\n");
    fp_expect(fd, "+PONG\r\n");
    fp_close(fd);
    it_wait_until(stat_of(c, ST_CLOSES) == 1, 10000);
    expect_ok(c, "MODULE UNLOAD fdpipe");
    /* The module left its listener's watch and descriptor: the server
     * removed the watch, so a peer arriving now runs nothing unloaded. */
    fp_peer *late = fp_connect(path);
    for (int i = 0; i < 5; i++)
        expect_status(c, "PONG", "PING");
    fp_close(late);
    char *path2 = sock_path();
    expect_ok(c, "MODULE LOAD %s %s %d %s", FDPIPE, path2, WINDOW, LOCAL_PORT);
    fd = fp_connect(path2);
    fp_sendstr(fd, "PING\r\n");
    fp_expect(fd, "+PONG\r\n");
    fp_close(fd);
    it_wait_until(stat_of(c, ST_CLOSES) == 1, 10000);
}
END_TEST

START_TEST(test_watches_and_refusals) {
    char *path = sock_path();
    it_server *s = start_fdpipe(path, NULL, NULL, NULL, NULL);
    redisContext *c = it_connect(s);
    /* watched, a second watch of the same fd refused, fd -1 refused */
    expect_reply(c, "[:1,:1,:1]", "FDPIPE.ONESHOT");
    it_wait_until(stat_of(c, ST_ONESHOT) == 1, 10000);
    for (int i = 0; i < 5; i++)
        expect_status(c, "PONG", "PING");
    ck_assert_int_eq(stat_of(c, ST_ONESHOT), 1); /* its fn unwatched it */
    /* listener_open, connect, conn_adopt of -1 and of a watched fd refuse */
    expect_reply(c, "[:1,:1,:1,:1]", "FDPIPE.REFUSED");
    expect_ok(c, "MODULE UNLOAD fdpipe");
    expect_error_prefix(c, "ERR", "MODULE LOAD %s %s %d %s noaddr", FDPIPE, sock_path(), WINDOW,
                        LOCAL_PORT);
    ck_assert_msg(strstr(it_read_file(s->log), "KEEL_TRANSPORT_OWN_FD requires an addr hook"), "%s",
                  it_log_tail(s));
    ck_assert_msg(strstr(it_read_file(s->log), "the server cannot listen for it"), "%s",
                  it_log_tail(s));
}
END_TEST

/* An adopted connection's descriptor is watched as long as it is open:
 * fd_watch refuses it, also while the handshake step is out on an I/O
 * thread (the server's own argument: a step always goes to a thread when
 * there is one), when the loop itself does not watch it. */
START_TEST(test_connection_fd_not_watchable) {
    char *path = sock_path();
    it_server *s = start_fdpipe(path, "--io-threads", "4", NULL, NULL);
    redisContext *c = it_connect(s);
    fp_peer *fd = fp_connect(path);
    it_wait_until(stat_of(c, ST_ACCEPTED) == 1, 10000);
    expect_int(c, 0, "FDPIPE.CONNFD");
    fp_sendstr(fd, "PING\r\n");
    fp_expect(fd, "+PONG\r\n");
    fp_close(fd);
    it_wait_until(stat_of(c, ST_CLOSES) == 1, 10000);
}
END_TEST

/* A load that fails after init adopted a connection: the connection is
 * closed (its close hook runs) before the module's code and transport go,
 * also while its handshake step is out on an I/O thread (the server's own
 * argument: a handshake step always goes to a thread when there is one). */
START_TEST(test_init_fails_with_an_adopted_connection) {
    it_server *s = it_start("--enable-module-command", "yes", "--io-threads", "4", NULL);
    redisContext *c = it_connect(s);
    for (int i = 0; i < 3; i++) {
        expect_error_prefix(c, "ERR", "MODULE LOAD %s %s %d %s adoptfail", FDPIPE, sock_path(),
                            WINDOW, LOCAL_PORT);
        for (int j = 0; j < 5; j++)
            expect_status(c, "PONG", "PING");
    }
    ck_assert_msg(strstr(it_read_file(s->log), "fdpipe: adoptfail"), "%s", it_log_tail(s));
}
END_TEST

int main(void) {
    Suite *s = suite_create("module_ownfd");
    TCase *tc = it_tcase_bare(s, "ownfd");
    tcase_add_test(tc, test_requests_and_handshake);
    tcase_add_test(tc, test_replies_longer_than_the_window);
    tcase_add_test(tc, test_client_list_and_kill);
    tcase_add_test(tc, test_timeout);
    tcase_add_test(tc, test_output_buffer_limit);
    tcase_add_test(tc, test_maxclients);
    tcase_add_test(tc, test_protected_mode);
    tcase_add_test(tc, test_peer_close_wakes);
    tcase_add_test(tc, test_unload);
    tcase_add_test(tc, test_watches_and_refusals);
    tcase_add_test(tc, test_init_fails_with_an_adopted_connection);
    tcase_add_test(tc, test_connection_fd_not_watchable);
    return it_run(s);
}
