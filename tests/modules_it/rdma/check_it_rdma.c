/* check_it_rdma.c -- the RDMA module over the fake device in a real
 * keel-server (--loadmodule $KEEL_RDMA_MODULE: rdma_fake_module, the
 * module's sources built on the fake of rdma_fake.h), driven by
 * rdma_client.c over the fake in this process: the feature handshake,
 * requests and replies of every size up to several times rdma-rx-size
 * (buffer full and re-registration both ways), pipelines, keepalive,
 * disconnect, vanish and device errors in every stage of a connection,
 * corrupt control messages and WRITE_WITH_IMMs, work requests running out
 * on either side, the server's send queue full (a write stall),
 * receiver-not-ready retries exhausted, injected device failures, CLIENT
 * KILL, many connections, MULTI/EXEC and BLPOP, TCP and RDMA side by side,
 * and a load without a device; a hostile peer's values (its buffer shrunk
 * to 1 byte or grown to 16 MiB, re-registered under the server's writes,
 * immediates that wrap 32-bit offsets, the RX buffer filled to its last
 * byte, control message floods), CLIENT KILL racing the peer's disconnect,
 * `timeout` and rdma-port 0 while writes are stalled, and an rdma-bind
 * over 1 KiB.
 *
 * Every server runs with KEEL_RDMA_FAKE="leak_check=1" (plus the test's
 * faults), so a device object the module leaks makes its exit status
 * non-zero and it_stop fails the test; this process checks its own client
 * the same way (rdma_fake_live after the clients are freed). The server's
 * view comes from a TCP client (INFO, CLIENT KILL). The harness applies
 * KEEL_TEST_IO_THREADS, so CI runs this with 1, 2 and 4 I/O threads. */
#include "harness.h"
#include "rdma_client.h"
#include "rdma_fake.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RT_RX_SIZE 65536 /* the servers' rdma-rx-size: the minimum */
#define RT_WAIT_MS 10000 /* bound of waits for what the server does on its own */
#define RT_MAX_CLIENTS 128

static const char *module_path;
static const rdma_ops *ops;

/* ---- tracked clients, freed by rt_teardown ---- */

static rdma_client *clients[RT_MAX_CLIENTS];
static int nclients;
static redisReply **replies;
static int nreplies, capreplies;

static void rt_free_clients(void) {
    for (int i = 0; i < nclients; i++)
        rdma_client_free(clients[i]);
    nclients = 0;
}

static void rt_teardown(void) {
    rt_free_clients();
    for (int i = 0; i < nreplies; i++)
        freeReplyObject(replies[i]);
    free(replies);
    replies = NULL;
    nreplies = capreplies = 0;
    it_teardown();
}

/* Frees one client now (a polite disconnect unless it is gone). */
static void rt_close(rdma_client *c) {
    for (int i = 0; i < nclients; i++) {
        if (clients[i] != c) continue;
        rdma_client_free(c);
        clients[i] = clients[--nclients];
        return;
    }
    ck_abort_msg("rt_close of an untracked client");
}

static redisReply *rt_track(redisReply *r) {
    if (!r) return r;
    if (nreplies == capreplies) {
        capreplies = capreplies ? capreplies * 2 : 256;
        replies = realloc(replies, (size_t)capreplies * sizeof(*replies));
        ck_assert_ptr_nonnull(replies);
    }
    replies[nreplies++] = r;
    return r;
}

/* ---- servers ---- */

/* A server with the module on an RDMA port of its own (*rport), the
 * device's faults `faults` (NULL: none) on top of the leak check, and extra
 * arguments (NULL-terminated, at most 8). */
static it_server *rt_start(int *rport, const char *faults, const char *arg, ...) {
    const char *extra[9] = {0};
    va_list ap;
    va_start(ap, arg);
    int n = 0;
    for (const char *a = arg; a; a = va_arg(ap, const char *)) {
        ck_assert_int_lt(n, 8);
        extra[n++] = a;
    }
    va_end(ap);
    *rport = it_free_port();
    const char *env = faults ? it_fmt("leak_check=1,%s", faults) : "leak_check=1";
    ck_assert_int_eq(setenv("KEEL_RDMA_FAKE", env, 1), 0);
    it_server *s =
        it_start("--loadmodule", module_path, "--rdma-port", it_fmt("%d", *rport), "--rdma-bind",
                 "127.0.0.1", "--rdma-rx-size", it_fmt("%d", RT_RX_SIZE), extra[0], extra[1],
                 extra[2], extra[3], extra[4], extra[5], extra[6], extra[7], NULL);
    unsetenv("KEEL_RDMA_FAKE");
    return s;
}

/* ---- clients ---- */

static rdma_client *rt_new(int rport, uint32_t rx_size, int no_feature) {
    rdma_client_opts o = {.ops = ops,
                          .host = "127.0.0.1",
                          .port = rport,
                          .rx_size = rx_size ? rx_size : RT_RX_SIZE,
                          .timeout_ms = RT_WAIT_MS,
                          .no_feature = no_feature};
    ck_assert_int_lt(nclients, RT_MAX_CLIENTS);
    rdma_client *c = rdma_client_new(&o);
    ck_assert_ptr_nonnull(c);
    clients[nclients++] = c;
    return c;
}

/* A client with only recv_slots receives posted and send_slots send
 * entries. */
static rdma_client *rt_new_small(int rport, int recv_slots, int send_slots) {
    rdma_client_opts o = {.ops = ops,
                          .host = "127.0.0.1",
                          .port = rport,
                          .rx_size = RT_RX_SIZE,
                          .recv_slots = recv_slots,
                          .send_slots = send_slots,
                          .timeout_ms = RT_WAIT_MS};
    ck_assert_int_lt(nclients, RT_MAX_CLIENTS);
    rdma_client *c = rdma_client_new(&o);
    ck_assert_ptr_nonnull(c);
    clients[nclients++] = c;
    return c;
}

static void rt_connect(rdma_client *c, rdma_client_stage upto) {
    ck_assert_msg(rdma_client_connect(c, upto) == 0, "RDMA connect (to stage %d): %s", (int)upto,
                  rdma_client_error(c));
}

/* A client through the whole handshake. */
static rdma_client *rt_open(int rport) {
    rdma_client *c = rt_new(rport, 0, 0);
    rt_connect(c, RDMA_CLIENT_READY);
    return c;
}

static redisReply *rt_cmd(rdma_client *c, const char *fmt, ...) {
    char *cmd = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    ck_assert_int_gt(len, 0);
    int rc = rdma_client_write(c, cmd, (size_t)len, 0);
    free(cmd);
    ck_assert_msg(rc == 0, "RDMA write: %s", rdma_client_error(c));
    redisReply *r = NULL;
    ck_assert_msg(rdma_client_read_reply(c, &r) == 0, "RDMA reply to %s: %s", fmt,
                  rdma_client_error(c));
    return rt_track(r);
}

/* Sends without reading the reply. */
static void rt_send(rdma_client *c, const char *fmt, ...) {
    char *cmd = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    ck_assert_int_gt(len, 0);
    int rc = rdma_client_write(c, cmd, (size_t)len, 0);
    free(cmd);
    ck_assert_msg(rc == 0, "RDMA write: %s", rdma_client_error(c));
}

static redisReply *rt_read(rdma_client *c) {
    redisReply *r = NULL;
    ck_assert_msg(rdma_client_read_reply(c, &r) == 0, "RDMA reply: %s", rdma_client_error(c));
    return rt_track(r);
}

static const char *rt_render(const redisReply *r) {
    char *buf = it_alloc(4096);
    return it_render(r, buf, 4096);
}

#define rt_expect(c, want, ...)                                                                    \
    do {                                                                                           \
        const char *got_ = rt_render(rt_cmd(c, __VA_ARGS__));                                      \
        ck_assert_msg(!strcmp(got_, want), "%s: got %s, want %s", #__VA_ARGS__, got_, want);       \
    } while (0)

static long long rt_clients(redisContext *tcp) {
    return it_info_int(tcp, "clients", "connected_clients");
}

/* Waits until the server counts want clients; fails with what it has. */
static void rt_wait_clients_at(int line, redisContext *tcp, long long want) {
    long long end = it_mstime() + RT_WAIT_MS, n;
    while ((n = rt_clients(tcp)) != want && it_mstime() < end)
        it_sleep_ms(10);
    if (n == want) return;
    redisReply *list = it_cmd(tcp, "CLIENT LIST");
    ck_abort_msg("line %d: %lld clients, want %lld:\n%.1500s", line, n, want, list->str);
}
#define rt_wait_clients(tcp, want) rt_wait_clients_at(__LINE__, tcp, want)

/* The module's own counters (INFO rdma). */
static long long rt_rdma_info(redisContext *tcp, const char *field) {
    return it_info_int(tcp, "rdma", field);
}

/* The server still serves: TCP and a fresh RDMA client, which is gone
 * again when this returns. base: the clients the server has meanwhile. */
static void rt_still_serving(int rport, redisContext *tcp, long long base) {
    expect_status(tcp, "PONG", "PING");
    rt_wait_clients(tcp, base);
    rdma_client *c = rt_open(rport);
    rt_expect(c, "+PONG", "PING");
    rt_close(c);
    rt_wait_clients(tcp, base);
}

/* ---- the handshake ---- */

START_TEST(test_handshake) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    long long base = 1; /* the TCP client */
    rt_wait_clients(tcp, base);
    rdma_client *c = rt_open(rport);
    rdma_client_stats st;
    rdma_client_get_stats(c, &st);
    ck_assert_int_eq(st.feature_replies, 1);
    ck_assert_int_eq(st.server_features, 0); /* Valkey's: no feature bits defined */
    ck_assert_int_eq(st.server_registers, 1);
    ck_assert_int_eq(st.server_rx_len, RT_RX_SIZE);
    ck_assert_int_eq(st.server_rx_offset, 0);
    rt_expect(c, "+PONG", "PING");
    rt_expect(c, "+OK", "SET %s %s", "rk", "rv");
    rt_expect(c, "\"rv\"", "GET %s", "rk");
    rt_wait_clients(tcp, base + 1);
    /* Without the feature exchange, as libvalkey's client connects. */
    rdma_client *plain = rt_new(rport, 0, 1);
    rt_connect(plain, RDMA_CLIENT_READY);
    rt_expect(plain, "\"rv\"", "GET %s", "rk");
    /* A second GetServerFeature is answered too. */
    ck_assert_int_eq(rdma_client_send_ctrl(c, RDMA_OP_GET_SERVER_FEATURE, 0, 0), 0);
    rt_expect(c, "+PONG", "PING");
    rdma_client_pump(c, 100);
    rdma_client_get_stats(c, &st);
    ck_assert_int_eq(st.feature_replies, 2);
    rt_close(plain);
    rt_close(c);
    rt_wait_clients(tcp, base);
    it_stop(s);
}
END_TEST

/* ---- sizes ---- */

/* SET of len bytes over RDMA, GET back byte-exact (over RDMA and TCP). */
static void rt_roundtrip(rdma_client *c, redisContext *tcp, size_t len, unsigned seed) {
    char *v = it_random_bytes(len, seed);
    rt_expect(c, "+OK", "SET %s %b", "big", v, len);
    redisReply *r = rt_cmd(c, "GET %s", "big");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    ck_assert_msg((size_t)r->len == len && !memcmp(r->str, v, len),
                  "GET over RDMA of %zu bytes differs (got %zu)", len, (size_t)r->len);
    if (tcp) expect_bulk_len(tcp, v, len, "GET %s", "big");
}

START_TEST(test_sizes) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    rdma_client *c = rt_open(rport);
    /* Around every boundary of the 64 KiB buffers (the command's header
     * moves the value's end by a few bytes, so a sweep crosses it). */
    static const size_t edges[] = {0,     1,     31,    32,     33,     4095,   4096,   65000,
                                   65535, 65536, 65537, 131072, 196608, 300000, 307200, 400000};
    for (size_t i = 0; i < sizeof(edges) / sizeof(*edges); i++)
        rt_roundtrip(c, tcp, edges[i], (unsigned)i + 1);
    for (size_t len = 65400; len < 65600; len += 7)
        rt_roundtrip(c, NULL, len, (unsigned)len);
    for (size_t len = 1; len < 5 * RT_RX_SIZE; len = len * 3 + 1)
        rt_roundtrip(c, NULL, len, (unsigned)len);
    rdma_client_stats st;
    rdma_client_get_stats(c, &st);
    /* Both buffers filled up and were advertised again, many times. */
    ck_assert_msg(st.server_registers > 10, "server re-registrations: %ld", st.server_registers);
    ck_assert_msg(st.own_registers > 10, "own re-registrations: %ld", st.own_registers);
    /* Small writes: a 300 KB value in 1000-byte WRITE_WITH_IMMs (many per
     * buffer, each one receive on the server). */
    char *v = it_random_bytes(300000, 99);
    char *cmd = NULL;
    int len = redisFormatCommand(&cmd, "SET %s %b", "chunked", v, (size_t)300000);
    ck_assert_int_eq(rdma_client_write(c, cmd, (size_t)len, 1000), 0);
    free(cmd);
    ck_assert_str_eq(rt_render(rt_read(c)), "+OK");
    expect_bulk_len(tcp, v, 300000, "GET %s", "chunked");
    /* A client with a larger buffer than the server's (1 MiB). */
    rdma_client *big = rt_new(rport, 1024 * 1024, 0);
    rt_connect(big, RDMA_CLIENT_READY);
    redisReply *r = rt_cmd(big, "GET %s", "chunked");
    ck_assert_int_eq(r->len, 300000);
    ck_assert_int_eq(memcmp(r->str, v, 300000), 0);
    it_stop(s);
}
END_TEST

/* ---- pipelines ---- */

START_TEST(test_pipeline) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    rdma_client *c = rt_open(rport);
    enum { N = 500 };
    /* N SETs in one write (a few WRITE_WITH_IMMs, as the buffer allows). */
    size_t cap = (size_t)N * 128, used = 0;
    char *all = it_alloc(cap);
    for (int i = 0; i < N; i++) {
        char *one = NULL;
        int len = redisFormatCommand(&one, "SET p:%d val:%d:%s", i, i, "padpadpadpadpadpadpadpad");
        ck_assert(used + (size_t)len <= cap);
        memcpy(all + used, one, (size_t)len);
        used += (size_t)len;
        free(one);
    }
    ck_assert_int_eq(rdma_client_write(c, all, used, 0), 0);
    for (int i = 0; i < N; i++)
        ck_assert_str_eq(rt_render(rt_read(c)), "+OK");
    expect_int(tcp, N, "DBSIZE");
    /* N GETs, then N INCRs of one key, each reply in order. */
    used = 0;
    for (int i = 0; i < N; i++) {
        char *one = NULL;
        int len = redisFormatCommand(&one, "GET p:%d", i);
        memcpy(all + used, one, (size_t)len);
        used += (size_t)len;
        free(one);
    }
    ck_assert_int_eq(rdma_client_write(c, all, used, 0), 0);
    for (int i = 0; i < N; i++) {
        const char *want = it_fmt("\"val:%d:padpadpadpadpadpadpadpad\"", i);
        ck_assert_str_eq(rt_render(rt_read(c)), want);
    }
    used = 0;
    for (int i = 0; i < N; i++) {
        static const char incr[] = "*2\r\n$4\r\nINCR\r\n$3\r\nctr\r\n";
        memcpy(all + used, incr, sizeof(incr) - 1);
        used += sizeof(incr) - 1;
    }
    ck_assert_int_eq(rdma_client_write(c, all, used, 0), 0);
    for (int i = 0; i < N; i++)
        ck_assert_str_eq(rt_render(rt_read(c)), it_fmt(":%d", i + 1));
    /* Replies larger than the buffer to a pipeline: 20 GETs of 50 KB. */
    char *v = it_random_bytes(50000, 5);
    rt_expect(c, "+OK", "SET %s %b", "fifty", v, (size_t)50000);
    for (int i = 0; i < 20; i++)
        rt_send(c, "GET %s", "fifty");
    for (int i = 0; i < 20; i++) {
        redisReply *r = rt_read(c);
        ck_assert_int_eq(r->len, 50000);
        ck_assert_int_eq(memcmp(r->str, v, 50000), 0);
    }
    it_stop(s);
}
END_TEST

/* ---- keepalive ---- */

START_TEST(test_keepalive) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    rdma_client *c = rt_open(rport);
    /* Valkey's server sends one every 3 s; more than twice that idle. */
    ck_assert_int_eq(rdma_client_pump(c, 7000), 0);
    rdma_client_stats st;
    rdma_client_get_stats(c, &st);
    ck_assert_msg(st.keepalives >= 1, "keepalives received in 7 s: %ld", st.keepalives);
    ck_assert(!rdma_client_is_disconnected(c));
    rt_expect(c, "+PONG", "PING");
    it_stop(s);
}
END_TEST

/* ---- disconnect in every state ---- */

/* Connections the server took up so far: accepted (adopted) or refused. */
static long long rt_server_saw(redisContext *tcp) {
    return rt_rdma_info(tcp, "rdma_connections_accepted") +
           rt_rdma_info(tcp, "rdma_connections_refused");
}

/* base: the clients open meanwhile, of which rdma_base over RDMA. A client
 * gone before the server took up its request (CONNECTING, ESTABLISHED) is
 * taken up after the close: the counts are checked once the server has
 * seen it, or they could still rise after reaching base. */
static void rt_disconnect_at(int rport, redisContext *tcp, long long base, long long rdma_base,
                             rdma_client_stage stage, int vanish) {
    long long saw = rt_server_saw(tcp);
    rdma_client *c = rt_new(rport, 0, 0);
    rt_connect(c, stage);
    if (stage >= RDMA_CLIENT_REGISTERED) {
        rt_wait_clients(tcp, base + 1);
        ck_assert_int_eq(rt_rdma_info(tcp, "rdma_connections_current"), rdma_base + 1);
    }
    if (vanish) ck_assert_int_eq(rdma_fake_vanish(rdma_client_cm_id(c)), 0);
    rt_close(c);
    if (stage >= RDMA_CLIENT_CONNECTING) it_wait_until(rt_server_saw(tcp) == saw + 1, RT_WAIT_MS);
    it_wait_until(rt_rdma_info(tcp, "rdma_connections_current") == rdma_base, RT_WAIT_MS);
    rt_wait_clients(tcp, base);
    rt_still_serving(rport, tcp, base);
}

START_TEST(test_disconnect_stages) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    rdma_client *other = rt_open(rport);
    for (int st = RDMA_CLIENT_RESOLVED; st <= RDMA_CLIENT_READY; st++)
        rt_disconnect_at(rport, tcp, 2, 1, (rdma_client_stage)st, 0);
    for (int st = RDMA_CLIENT_ESTABLISHED; st <= RDMA_CLIENT_READY; st++)
        rt_disconnect_at(rport, tcp, 2, 1, (rdma_client_stage)st, 1);
    /* A device error on the client's QP: both sides see DISCONNECTED. */
    long long base = 2; /* tcp and other */
    rt_wait_clients(tcp, base);
    rdma_client *c = rt_open(rport);
    rt_wait_clients(tcp, base + 1);
    ck_assert_int_eq(rdma_fake_qp_error(rdma_client_cm_id(c)), 0);
    ck_assert(rdma_client_wait_disconnected(c, RT_WAIT_MS));
    rt_wait_clients(tcp, base);
    rt_close(c);
    rt_expect(other, "+PONG", "PING");
    it_stop(s);
}
END_TEST

START_TEST(test_disconnect_mid_request) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    rdma_client *other = rt_open(rport);
    long long base = 2; /* tcp and other */
    rt_wait_clients(tcp, base);
    for (int vanish = 0; vanish <= 1; vanish++) {
        rdma_client *c = rt_open(rport);
        /* A SET announcing 200000 bytes of which 100000 arrive (more than
         * one server buffer). */
        static const char head[] = "*3\r\n$3\r\nSET\r\n$3\r\nhal\r\n$200000\r\n";
        ck_assert_int_eq(rdma_client_write(c, head, sizeof(head) - 1, 0), 0);
        char *part = it_random_bytes(100000, 7);
        ck_assert_int_eq(rdma_client_write(c, part, 100000, 0), 0);
        rdma_client_pump(c, 50);
        if (vanish) ck_assert_int_eq(rdma_fake_vanish(rdma_client_cm_id(c)), 0);
        rt_close(c);
        rt_wait_clients(tcp, base);
        expect_int(tcp, 0, "EXISTS hal");
    }
    rt_expect(other, "+PONG", "PING");
    rt_still_serving(rport, tcp, base);
    it_stop(s);
}
END_TEST

/* Makes the server block writing a 300 KB reply into c's buffer, which c
 * stops consuming: the buffer fills up and nothing more arrives. */
static void rt_block_reader(rdma_client *c) {
    rdma_client_set_consume(c, 0);
    rt_send(c, "GET %s", "huge");
    rdma_client_stats st;
    long long end = it_mstime() + RT_WAIT_MS;
    do {
        ck_assert_int_eq(rdma_client_pump(c, 20), 0);
        rdma_client_get_stats(c, &st);
    } while (st.bytes_in < RT_RX_SIZE && !rdma_client_is_disconnected(c) && it_mstime() < end);
    ck_assert_msg(st.bytes_in == RT_RX_SIZE, "bytes of the reply in the full buffer: %ld",
                  st.bytes_in);
    ck_assert_int_eq(rdma_client_pump(c, 50), 0);
    rdma_client_get_stats(c, &st);
    ck_assert_int_eq(st.bytes_in, RT_RX_SIZE);
}

static rdma_client *rt_blocked_reader(int rport, redisContext *tcp, long long base) {
    rdma_client *c = rt_open(rport);
    rt_wait_clients(tcp, base + 1);
    rt_block_reader(c);
    return c;
}

START_TEST(test_disconnect_mid_reply) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    char *v = it_random_bytes(300000, 3);
    expect_ok(tcp, "SET huge %b", v, (size_t)300000);
    rdma_client *other = rt_open(rport);
    long long base = 2; /* tcp and other */
    rt_wait_clients(tcp, base);
    for (int vanish = 0; vanish <= 1; vanish++) {
        rdma_client *c = rt_blocked_reader(rport, tcp, base);
        rt_expect(other, "+PONG", "PING");
        if (vanish) ck_assert_int_eq(rdma_fake_vanish(rdma_client_cm_id(c)), 0);
        rt_close(c);
        rt_wait_clients(tcp, base);
    }
    /* Consuming again, the blocked reply completes byte-exact. */
    rdma_client *c = rt_blocked_reader(rport, tcp, base);
    rdma_client_set_consume(c, 1);
    redisReply *r = rt_read(c);
    ck_assert_int_eq(r->len, 300000);
    ck_assert_int_eq(memcmp(r->str, v, 300000), 0);
    rt_close(c);
    rt_still_serving(rport, tcp, base);
    it_stop(s);
}
END_TEST

/* ---- corrupt control messages and writes ---- */

typedef enum {
    BAD_SHORT_CTRL,
    BAD_LONG_CTRL,
    BAD_OPCODE,
    BAD_CLIENT_FEATURE,
    BAD_WRITE_PAST_END,
    BAD_WRITE_RKEY,
    BAD_IMM_LENGTH,
    BAD_REGISTER_EMPTY,
} rt_bad;

static void rt_do_bad(rdma_client *c, rt_bad how) {
    unsigned char m[48];
    memset(m, 0, sizeof(m));
    rdma_client_stats st;
    rdma_client_get_stats(c, &st);
    static const char data[64] = "*1\r\n$4\r\nPING\r\n";
    int rc = 0;
    switch (how) {
    case BAD_SHORT_CTRL: /* a Keepalive of 16 bytes */
        m[1] = RDMA_OP_KEEPALIVE;
        rc = rdma_client_send_raw_ctrl(c, m, 16);
        break;
    case BAD_LONG_CTRL: /* 48 bytes into the server's 32-byte receive */
        m[1] = RDMA_OP_KEEPALIVE;
        rc = rdma_client_send_raw_ctrl(c, m, 48);
        break;
    case BAD_OPCODE:
        rc = rdma_client_send_ctrl(c, 7, 0, 0);
        break;
    case BAD_CLIENT_FEATURE:
        rc = rdma_client_send_ctrl(c, RDMA_OP_SET_CLIENT_FEATURE, 0, 1);
        break;
    case BAD_WRITE_PAST_END:
        rc = rdma_client_write_raw(c, st.server_rx_addr + st.server_rx_len - 8, st.server_rx_rkey,
                                   data, 64, 64);
        break;
    case BAD_WRITE_RKEY:
        rc = rdma_client_write_raw(c, st.server_rx_addr, st.server_rx_rkey ^ 0x5a5a, data, 14, 14);
        break;
    case BAD_REGISTER_EMPTY: /* a RegisterXferMemory of length 0 */
        rc = rdma_client_send_register(c, 4096, 0, 1);
        break;
    case BAD_IMM_LENGTH: /* 14 bytes written, the immediate claims more than the buffer */
        rc = rdma_client_write_raw(c, st.server_rx_addr, st.server_rx_rkey, data, 14,
                                   st.server_rx_len + 1);
        break;
    }
    ck_assert_msg(rc == 0, "posting the bad message: %s", rdma_client_error(c));
}

START_TEST(test_corrupt) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    rdma_client *other = rt_open(rport);
    rt_expect(other, "+OK", "SET %s %s", "keep", "me");
    long long base = 2; /* tcp and other */
    rt_wait_clients(tcp, base);
    for (int how = BAD_SHORT_CTRL; how <= BAD_REGISTER_EMPTY; how++) {
        rdma_client *c = rt_open(rport);
        rt_expect(c, "+PONG", "PING");
        rt_wait_clients(tcp, base + 1);
        long long errors = rt_rdma_info(tcp, "rdma_protocol_errors");
        rt_do_bad(c, (rt_bad)how);
        ck_assert_msg(rdma_client_wait_disconnected(c, RT_WAIT_MS),
                      "bad message %d: the server kept the connection", how);
        rt_wait_clients(tcp, base);
        /* The device's verdict on the client's side, as hardware gives it. */
        rdma_client_stats st;
        rdma_client_get_stats(c, &st);
        if (how == BAD_LONG_CTRL) ck_assert_int_eq(st.last_wc_status, IBV_WC_REM_INV_REQ_ERR);
        if (how == BAD_WRITE_PAST_END || how == BAD_WRITE_RKEY)
            ck_assert_int_eq(st.last_wc_status, IBV_WC_REM_ACCESS_ERR);
        /* The ones the server's protocol code sees (the others fail in the
         * device: a length or access error completion). */
        if (how == BAD_SHORT_CTRL || how == BAD_OPCODE || how == BAD_CLIENT_FEATURE ||
            how == BAD_IMM_LENGTH || how == BAD_REGISTER_EMPTY)
            ck_assert_int_eq(rt_rdma_info(tcp, "rdma_protocol_errors"), errors + 1);
        rt_close(c);
        rt_expect(other, "\"me\"", "GET %s", "keep");
    }
    rt_still_serving(rport, tcp, base);
    it_stop(s);
}
END_TEST

/* A corrupt message before the handshake ended (right after ESTABLISHED). */
START_TEST(test_corrupt_early) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    long long base = 1; /* the TCP client */
    rt_wait_clients(tcp, base);
    rdma_client *c = rt_new(rport, 0, 0);
    rt_connect(c, RDMA_CLIENT_ESTABLISHED);
    ck_assert_int_eq(rdma_client_send_ctrl(c, 0x7777, 0, 0), 0);
    ck_assert(rdma_client_wait_disconnected(c, RT_WAIT_MS));
    rt_close(c);
    rt_wait_clients(tcp, base);
    rt_still_serving(rport, tcp, base);
    it_stop(s);
}
END_TEST

/* ---- the device's limits and failures ---- */

/* Traffic that needs many work requests on a server whose QPs have 8 send
 * and 16 receive entries: 200 GETs sent in 16-byte WRITE_WITH_IMMs (each
 * one of the server's few receives: the client waits receiver-not-ready),
 * their 600 KB of replies through the client's 64 KiB buffer (the server
 * waits for send entries). Backpressure both ways: all of it served. */
START_TEST(test_few_work_requests) {
    int rport;
    it_server *s = rt_start(&rport, "max_send_wr=8,max_recv_wr=16", NULL);
    redisContext *tcp = it_connect(s);
    long long base = 1; /* the TCP client */
    rt_wait_clients(tcp, base);
    rdma_client *c = rt_open(rport);
    char *v = it_random_bytes(3000, 11);
    rt_expect(c, "+OK", "SET %s %b", "w", v, (size_t)3000);
    size_t used = 0;
    char *all = it_alloc(200 * 32);
    for (int i = 0; i < 200; i++) {
        static const char get[] = "*2\r\n$3\r\nGET\r\n$1\r\nw\r\n";
        memcpy(all + used, get, sizeof(get) - 1);
        used += sizeof(get) - 1;
    }
    ck_assert_msg(rdma_client_write(c, all, used, 16) == 0, "%s", rdma_client_error(c));
    for (int i = 0; i < 200; i++) {
        redisReply *r = rt_read(c);
        ck_assert_int_eq(r->len, 3000);
        ck_assert_int_eq(memcmp(r->str, v, 3000), 0);
    }
    /* Keepalives need send entries too; the connection stays up. */
    ck_assert_int_eq(rdma_client_pump(c, 3500), 0);
    rt_expect(c, "+PONG", "PING");
    rt_close(c);
    rt_wait_clients(tcp, base);
    rt_still_serving(rport, tcp, base);
    it_stop(s);
}
END_TEST

/* A client with two receives and two send entries: every server write
 * waits receiver-not-ready until the client reposts (rnr_retry 7, as
 * Valkey's connect sets it), every client write for a free entry. */
START_TEST(test_client_few_work_requests) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    long long base = 1; /* the TCP client */
    rt_wait_clients(tcp, base);
    char *v = it_random_bytes(300000, 12);
    expect_ok(tcp, "SET huge %b", v, (size_t)300000);
    rdma_client *c = rt_new_small(rport, 2, 2);
    rt_connect(c, RDMA_CLIENT_READY);
    redisReply *r = rt_cmd(c, "GET %s", "huge");
    ck_assert_int_eq(r->len, 300000);
    ck_assert_int_eq(memcmp(r->str, v, 300000), 0);
    for (int i = 0; i < 50; i++)
        rt_send(c, "ECHO %d", i);
    for (int i = 0; i < 50; i++)
        ck_assert_str_eq(rt_render(rt_read(c)), it_fmt("\"%d\"", i));
    rt_close(c);
    rt_still_serving(rport, tcp, base);
    it_stop(s);
}
END_TEST

/* The server's QPs have four send entries, signalled every second, and the
 * client one receive it stops reposting (it polls nothing): the first reply
 * takes the receive, the next ones wait receiver-not-ready in the server's
 * send queue until it is full, and then a reply waits in the server (a
 * write stall) instead of being posted. The fake device, as hardware, frees
 * an unsignalled entry only with a later signalled completion, so this
 * holds only if the module counts its entries that way. Once the client
 * polls again every reply arrives, in order, and the connection stays. */
START_TEST(test_server_send_queue_full) {
    int rport;
    it_server *s = rt_start(&rport, "max_send_wr=4", NULL);
    redisContext *tcp = it_connect(s);
    long long base = 1; /* the TCP client */
    rt_wait_clients(tcp, base);
    rdma_client *c = rt_new_small(rport, 1, 0);
    rt_connect(c, RDMA_CLIENT_READY);
    rt_wait_clients(tcp, base + 1);
    long long stalls = rt_rdma_info(tcp, "rdma_write_stalls");
    int n = 0;
    /* one ECHO at a time, each reply a write of its own, until one stalls */
    while (rt_rdma_info(tcp, "rdma_write_stalls") == stalls) {
        ck_assert_int_lt(n, 16);
        long long sent = rt_rdma_info(tcp, "rdma_bytes_sent");
        rt_send(c, "ECHO %d", n++);
        it_wait_until(rt_rdma_info(tcp, "rdma_bytes_sent") > sent ||
                          rt_rdma_info(tcp, "rdma_write_stalls") > stalls,
                      RT_WAIT_MS);
    }
    ck_assert_int_ge(n, 2); /* the receive and at least one send entry went first */
    for (int i = 0; i < n; i++)
        ck_assert_str_eq(rt_render(rt_read(c)), it_fmt("\"%d\"", i));
    rt_expect(c, "+PONG", "PING");
    ck_assert_int_eq(rt_rdma_info(tcp, "rdma_completion_errors"), 0);
    rt_close(c);
    rt_wait_clients(tcp, base);
    rt_still_serving(rport, tcp, base);
    it_stop(s);
}
END_TEST

/* The server's QPs give up on receiver-not-ready after one retry
 * (rnr_retry=1): a client with one receive posted that stops taking its
 * completions makes the server's second reply fail. That connection
 * closes; the others stay. */
START_TEST(test_rnr_exceeded) {
    int rport;
    it_server *s = rt_start(&rport, "rnr_retry=1", NULL);
    redisContext *tcp = it_connect(s);
    rdma_client *other = rt_open(rport);
    long long base = 2; /* tcp and other */
    rt_wait_clients(tcp, base);
    rdma_client *c = rt_new_small(rport, 1, 0);
    rt_connect(c, RDMA_CLIENT_READY);
    rt_wait_clients(tcp, base + 1);
    /* One PING at a time, so each reply is a write of its own; the client
     * polls nothing in between (a write with room in the server's buffer
     * and its own send queue does not wait). */
    for (int i = 0; i < 10; i++) {
        rt_send(c, "PING");
        it_sleep_ms(20);
    }
    ck_assert(rdma_client_wait_disconnected(c, RT_WAIT_MS));
    rt_wait_clients(tcp, base);
    ck_assert_int_ge(rt_rdma_info(tcp, "rdma_completion_errors"), 1);
    rt_close(c);
    rt_expect(other, "+PONG", "PING");
    rt_still_serving(rport, tcp, base);
    it_stop(s);
}
END_TEST

/* The Nth post_send, reg_mr or create_qp of the server fails. `refused`:
 * the connection request must be rejected (INFO counts it); `fails`: the
 * connection must not survive; neither: it is served or closed. The next
 * connections work either way. */
static void rt_injected(const char *fault, int refused, int fails) {
    int rport;
    it_server *s = rt_start(&rport, fault, NULL);
    redisContext *tcp = it_connect(s);
    long long base = 1; /* the TCP client */
    rt_wait_clients(tcp, base);
    rdma_client *c = rt_new(rport, 0, 0);
    int up = rdma_client_connect(c, RDMA_CLIENT_READY) == 0, served = 0;
    for (; up && served < 10; served++) {
        redisReply *r = NULL;
        if (rdma_client_write(c, "*1\r\n$4\r\nPING\r\n", 14, 0) || rdma_client_read_reply(c, &r))
            break;
        ck_assert_str_eq(rt_render(rt_track(r)), "+PONG");
    }
    int gone = !up || rdma_client_wait_disconnected(c, fails ? RT_WAIT_MS : 0);
    if (fails || refused)
        ck_assert_msg(gone, "%s: the connection survived (%d PINGs served)", fault, served);
    else
        ck_assert_msg(served == 10 || gone, "%s: neither served nor closed: %s", fault,
                      rdma_client_error(c));
    ck_assert_int_eq(rt_rdma_info(tcp, "rdma_connections_refused"), refused);
    rt_close(c);
    rt_wait_clients(tcp, base);
    for (int i = 0; i < 3; i++)
        rt_still_serving(rport, tcp, base);
    it_stop(s);
}

/* The server's first send (its RegisterXferMemory on ESTABLISHED) fails
 * with nothing in flight: that connection ends. */
START_TEST(test_fail_first_post_send) {
    rt_injected("fail_post_send=1", 0, 1);
}
END_TEST

/* A later one, maybe with sends in flight (then it is a full queue, and
 * retried). */
START_TEST(test_fail_post_send) {
    rt_injected("fail_post_send=4", 0, 0);
}
END_TEST

START_TEST(test_fail_reg_mr) {
    rt_injected("fail_reg_mr=2", 1, 1);
}
END_TEST

START_TEST(test_fail_create_qp) {
    rt_injected("fail_create_qp=1", 1, 1);
}
END_TEST

/* ---- CLIENT KILL ---- */

static long long rt_client_id(rdma_client *c) {
    redisReply *r = rt_cmd(c, "CLIENT ID");
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    return r->integer;
}

START_TEST(test_client_kill) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    char *v = it_random_bytes(300000, 4);
    expect_ok(tcp, "SET huge %b", v, (size_t)300000);
    long long base = 1; /* the TCP client */
    rt_wait_clients(tcp, base);
    rdma_client *other = rt_open(rport);
    base++;
    /* An idle client. */
    rdma_client *c = rt_open(rport);
    long long id = rt_client_id(c);
    rt_wait_clients(tcp, base + 1);
    expect_int(tcp, 1, "CLIENT KILL ID %lld", id);
    ck_assert(rdma_client_wait_disconnected(c, RT_WAIT_MS));
    rt_wait_clients(tcp, base);
    rt_close(c);
    /* A client the server is blocked writing to (its buffer full). */
    c = rt_open(rport);
    id = rt_client_id(c);
    rt_block_reader(c);
    expect_int(tcp, 1, "CLIENT KILL ID %lld", id);
    ck_assert(rdma_client_wait_disconnected(c, RT_WAIT_MS));
    rt_wait_clients(tcp, base);
    rt_close(c);
    /* Killed with requests still coming in (more than the server's buffer)
     * and megabytes of replies going out. */
    c = rt_open(rport);
    id = rt_client_id(c);
    char *ten = it_random_bytes(10000, 6);
    for (int i = 0; i < 30; i++)
        rt_send(c, "SET k%d %b", i, ten, (size_t)10000);
    for (int i = 0; i < 30; i++)
        rt_send(c, "GET %s", "huge");
    expect_int(tcp, 1, "CLIENT KILL ID %lld", id);
    ck_assert(rdma_client_wait_disconnected(c, RT_WAIT_MS));
    rt_wait_clients(tcp, base);
    rt_close(c);
    /* Killed by address too (CLIENT LIST shows it like any client). */
    c = rt_open(rport);
    rt_expect(c, "+OK", "CLIENT SETNAME %s", "victim");
    redisReply *list = it_cmd(tcp, "CLIENT LIST");
    char *line = strstr(list->str, "name=victim");
    ck_assert_ptr_nonnull(line);
    while (line > list->str && line[-1] != '\n')
        line--;
    char *addr = strstr(line, "addr=");
    ck_assert_ptr_nonnull(addr);
    addr += 5;
    char *end = strchr(addr, ' ');
    ck_assert_ptr_nonnull(end);
    expect_ok(tcp, "CLIENT KILL %b", addr, (size_t)(end - addr));
    ck_assert(rdma_client_wait_disconnected(c, RT_WAIT_MS));
    rt_wait_clients(tcp, base);
    rt_close(c);
    rt_expect(other, "+PONG", "PING");
    it_stop(s);
}
END_TEST

/* ---- many connections ---- */

START_TEST(test_many) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    long long base = 1; /* the TCP client */
    rt_wait_clients(tcp, base);
    enum { N = 50 };
    rdma_client *c[N];
    for (int i = 0; i < N; i++)
        c[i] = rt_open(rport);
    rt_wait_clients(tcp, base + N);
    /* Traffic on all of them at once: each sends before any reads. */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            size_t len = 1000 + (size_t)i * 997 + (size_t)round * 20000;
            char *v = it_random_bytes(len, (unsigned)(i * 7 + round));
            rt_send(c[i], "SET m:%d %b", i, v, len);
            rt_send(c[i], "GET m:%d", i);
        }
        for (int i = 0; i < N; i++) {
            size_t len = 1000 + (size_t)i * 997 + (size_t)round * 20000;
            char *v = it_random_bytes(len, (unsigned)(i * 7 + round));
            ck_assert_str_eq(rt_render(rt_read(c[i])), "+OK");
            redisReply *r = rt_read(c[i]);
            ck_assert_int_eq((size_t)r->len, len);
            ck_assert_int_eq(memcmp(r->str, v, len), 0);
        }
    }
    expect_int(tcp, N, "DBSIZE");
    for (int i = 0; i < N; i += 2)
        rt_close(c[i]);
    rt_wait_clients(tcp, base + N / 2);
    for (int i = 1; i < N; i += 2)
        rt_expect(c[i], "+PONG", "PING");
    rt_free_clients();
    rt_wait_clients(tcp, base);
    it_stop(s);
}
END_TEST

/* ---- transactions, blocking, TCP beside RDMA ---- */

START_TEST(test_multi_blpop) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    rdma_client *c = rt_open(rport);
    rt_expect(c, "+OK", "MULTI");
    rt_expect(c, "+QUEUED", "SET %s %s", "tx", "1");
    rt_expect(c, "+QUEUED", "INCR %s", "tx");
    rt_expect(c, "+QUEUED", "GET %s", "tx");
    rt_expect(c, "[+OK,:2,\"2\"]", "EXEC");
    /* BLPOP over RDMA, served by a TCP push. */
    rt_send(c, "BLPOP %s %d", "q", 10);
    it_wait_until(it_info_int(tcp, "clients", "blocked_clients") == 1, RT_WAIT_MS);
    expect_int(tcp, 1, "RPUSH q hello");
    ck_assert_str_eq(rt_render(rt_read(c)), "[\"q\",\"hello\"]");
    /* And the other way round: a TCP BLPOP served by an RDMA push. */
    redisContext *blocked = it_connect(s);
    ck_assert_int_eq(redisAppendCommand(blocked, "BLPOP q2 10"), REDIS_OK);
    void *pending = NULL;
    ck_assert_int_eq(redisBufferWrite(blocked, &(int){0}), REDIS_OK);
    it_wait_until(it_info_int(tcp, "clients", "blocked_clients") == 1, RT_WAIT_MS);
    rt_expect(c, ":1", "RPUSH %s %s", "q2", "there");
    ck_assert_int_eq(redisGetReply(blocked, &pending), REDIS_OK);
    char buf[256];
    ck_assert_str_eq(it_render(pending, buf, sizeof(buf)), "[\"q2\",\"there\"]");
    freeReplyObject(pending);
    /* A BLPOP that times out. */
    rt_expect(c, "nil", "BLPOP %s %s", "none", "0.1");
    it_stop(s);
}
END_TEST

START_TEST(test_side_by_side) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    rdma_client *c = rt_open(rport);
    for (int i = 0; i < 100; i++) {
        expect_ok(tcp, "SET t:%d from-tcp-%d", i, i);
        rt_expect(c, it_fmt("\"from-tcp-%d\"", i), "GET t:%d", i);
        rt_expect(c, "+OK", "SET r:%d from-rdma-%d", i, i);
        expect_bulk(tcp, it_fmt("from-rdma-%d", i), "GET r:%d", i);
    }
    char *v = it_random_bytes(200000, 8);
    expect_ok(tcp, "SET both %b", v, (size_t)200000);
    redisReply *r = rt_cmd(c, "GET %s", "both");
    ck_assert_int_eq(r->len, 200000);
    ck_assert_int_eq(memcmp(r->str, v, 200000), 0);
    /* Both kinds of client in CLIENT LIST. */
    rt_expect(c, "+OK", "CLIENT SETNAME %s", "over-rdma");
    redisReply *list = it_cmd(tcp, "CLIENT LIST");
    ck_assert_ptr_nonnull(strstr(list->str, "name=over-rdma"));
    expect_int(tcp, 201, "DBSIZE");
    it_stop(s);
}
END_TEST

/* ---- no device ---- */

START_TEST(test_no_device) {
    /* rdma-port 0: the module loads with the listener off. */
    ck_assert_int_eq(setenv("KEEL_RDMA_FAKE", "leak_check=1,no_device=1", 1), 0);
    it_server *s = it_start("--loadmodule", module_path, "--rdma-port", "0", NULL);
    redisContext *tcp = it_connect(s);
    expect_status(tcp, "PONG", "PING");
    it_stop(s);
    /* A port without a device: refused with a reason, not a crash. */
    char *out = it_start_refused(NULL, "--loadmodule", module_path, "--rdma-port",
                                 it_fmt("%d", it_free_port()), NULL);
    unsetenv("KEEL_RDMA_FAKE");
    ck_assert_msg(strcasestr(out, "rdma") != NULL, "no reason given: %s", out);
    ck_assert_msg(!strstr(out, "AddressSanitizer") && !strstr(out, "rdma_fake:"),
                  "not a clean refusal: %s", out);
}
END_TEST

/* ---- this process's own objects ---- */

START_TEST(test_client_frees_everything) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    rdma_fake_counts before, after;
    rdma_fake_live(&before);
    for (int st = RDMA_CLIENT_RESOLVED; st <= RDMA_CLIENT_READY; st++) {
        rdma_client *c = rt_new(rport, 0, 0);
        rt_connect(c, (rdma_client_stage)st);
        rt_close(c);
    }
    rdma_client *c = rt_open(rport);
    rt_expect(c, "+PONG", "PING");
    ck_assert_int_eq(rdma_fake_vanish(rdma_client_cm_id(c)), 0);
    rt_close(c);
    rdma_fake_live(&after);
    ck_assert_int_eq(after.channels, before.channels);
    ck_assert_int_eq(after.ids, before.ids);
    ck_assert_int_eq(after.pds, before.pds);
    ck_assert_int_eq(after.cqs, before.cqs);
    ck_assert_int_eq(after.comp_channels, before.comp_channels);
    ck_assert_int_eq(after.qps, before.qps);
    ck_assert_int_eq(after.mrs, before.mrs);
    it_stop(s);
}
END_TEST

/* ---- a hostile peer's values ---- */

/* The peer's buffer shrinks to odd sizes (1 byte, 4097) and grows back:
 * an 8-byte reply through the 1-byte buffer, a 200 KB one through each of
 * the others, whole and in order. */
START_TEST(test_peer_buffer_sizes) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    char *v = it_random_bytes(200000, 21);
    expect_ok(tcp, "SET big %b", v, (size_t)200000);
    expect_ok(tcp, "SET small ab");
    rdma_client *c = rt_open(rport);
    static const uint32_t sizes[] = {4097, 1, 65535, RT_RX_SIZE};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
        ck_assert_msg(rdma_client_advertise(c, sizes[i]) == 0, "%s", rdma_client_error(c));
        rt_expect(c, "\"ab\"", "GET %s", "small");
        if (sizes[i] == 1) continue; /* 200000 round trips of one byte each */
        redisReply *r = rt_cmd(c, "GET %s", "big");
        ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
        ck_assert_msg(r->len == 200000 && !memcmp(r->str, v, 200000), "buffer of %u: reply differs",
                      sizes[i]);
    }
    rt_expect(c, "+PONG", "PING");
    it_stop(s);
}
END_TEST

/* RegisterXferMemory of a bogus region (other length, address, rkey)
 * while the server's writes of a large reply are in flight into the old
 * one, which is full (the client stopped consuming): the server's staging
 * copy is replaced under those writes and the rest goes to the bogus
 * region. That connection alone ends, and nothing leaks (it_stop). */
START_TEST(test_reregister_mid_reply) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    char *v = it_random_bytes(300000, 22);
    expect_ok(tcp, "SET huge %b", v, (size_t)300000);
    rdma_client *other = rt_open(rport);
    long long base = 2; /* tcp and other */
    rt_wait_clients(tcp, base);
    static const uint32_t lens[] = {1, 4097, RT_RX_SIZE, 16 * 1024 * 1024};
    for (size_t i = 0; i < sizeof(lens) / sizeof(*lens); i++) {
        rdma_client *c = rt_open(rport);
        rdma_client_set_consume(c, 0);
        rt_send(c, "GET %s", "huge");
        ck_assert_int_eq(rdma_client_send_register(c, 0x10003, lens[i], 0xdead), 0);
        ck_assert_msg(rdma_client_wait_disconnected(c, RT_WAIT_MS),
                      "re-registered %u bytes: the server kept the connection", lens[i]);
        rt_close(c);
        rt_wait_clients(tcp, base);
        rt_expect(other, "+PONG", "PING");
    }
    rt_still_serving(rport, tcp, base);
    it_stop(s);
}
END_TEST

/* Immediates that wrap 32-bit arithmetic from a non-zero offset (rx_off
 * + len overflows to 0 and to just below the offset), on zero-length
 * writes (no memory is touched, so only the server's check stops them). */
START_TEST(test_imm_wraps) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    long long base = 1;
    rt_wait_clients(tcp, base);
    for (int how = 0; how < 3; how++) {
        rdma_client *c = rt_open(rport);
        rt_expect(c, "+PONG", "PING"); /* the server's offset is 14 now */
        rt_wait_clients(tcp, base + 1);
        rdma_client_stats st;
        rdma_client_get_stats(c, &st);
        uint32_t imm = how == 0 ? 0xffffffffu : how == 1 ? 0u - 14u : 0u - 13u;
        long long errors = rt_rdma_info(tcp, "rdma_protocol_errors");
        ck_assert_int_eq(rdma_client_write_raw(c, st.server_rx_addr, st.server_rx_rkey, "", 0, imm),
                         0);
        ck_assert_msg(rdma_client_wait_disconnected(c, RT_WAIT_MS), "imm %u: connection kept", imm);
        rt_wait_clients(tcp, base);
        ck_assert_int_eq(rt_rdma_info(tcp, "rdma_protocol_errors"), errors + 1);
        rt_close(c);
    }
    rt_still_serving(rport, tcp, base);
    it_stop(s);
}
END_TEST

/* Zero-length WRITE_WITH_IMMs (immediate 0), more than the server posts
 * receives, then the RX buffer filled to its very end by one write whose
 * last byte completes a command, then the next command after the server's
 * re-registration: each reply as it should be. */
START_TEST(test_rx_boundary) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    rdma_client *c = rt_open(rport);
    rdma_client_stats st;
    rdma_client_get_stats(c, &st);
    for (int i = 0; i < 3000; i++)
        ck_assert_msg(rdma_client_write_raw(c, st.server_rx_addr, st.server_rx_rkey, "", 0, 0) == 0,
                      "%s", rdma_client_error(c));
    rt_expect(c, "+PONG", "PING");
    /* From offset 14: a SET whose value pads the command to end exactly
     * at the buffer's end. */
    size_t left = RT_RX_SIZE - 14, vlen = left - 64;
    char *cmd = NULL;
    int len;
    for (;;) {
        char *val = it_alloc(vlen + 1);
        memset(val, 'x', vlen);
        len = redisFormatCommand(&cmd, "SET %s %b", "edge", val, vlen);
        if ((size_t)len == left) break;
        vlen += left - (size_t)len;
        free(cmd);
    }
    ck_assert_int_eq(rdma_client_write(c, cmd, (size_t)len, 0), 0);
    free(cmd);
    redisReply *r = rt_read(c);
    ck_assert_str_eq(rt_render(r), "+OK");
    rdma_client_get_stats(c, &st);
    ck_assert_int_eq(st.server_rx_offset, 0); /* re-registered from its start */
    r = rt_cmd(c, "STRLEN %s", "edge");
    ck_assert_int_eq(r->integer, (long long)vlen);
    it_stop(s);
}
END_TEST

/* Floods of control messages on one connection: Keepalives, SetClientFeature
 * without bits, GetServerFeature one after another (each answered); the
 * connection serves throughout. */
START_TEST(test_control_floods) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    rdma_client *c = rt_open(rport);
    rdma_client_stats st0, st;
    rdma_client_get_stats(c, &st0);
    for (int i = 0; i < 5000; i++)
        ck_assert_int_eq(rdma_client_send_ctrl(c, RDMA_OP_KEEPALIVE, 0, 0), 0);
    rt_expect(c, "+PONG", "PING");
    for (int i = 0; i < 3000; i++)
        ck_assert_int_eq(rdma_client_send_ctrl(c, RDMA_OP_SET_CLIENT_FEATURE, 0, 0), 0);
    rt_expect(c, "+PONG", "PING");
    for (int i = 0; i < 3000; i++)
        ck_assert_int_eq(rdma_client_send_ctrl(c, RDMA_OP_GET_SERVER_FEATURE, 7, 0), 0);
    long long end = it_mstime() + RT_WAIT_MS;
    do {
        ck_assert_int_eq(rdma_client_pump(c, 20), 0);
        rdma_client_get_stats(c, &st);
    } while (st.feature_replies < st0.feature_replies + 3000 && it_mstime() < end);
    ck_assert_int_eq(st.feature_replies, st0.feature_replies + 3000);
    ck_assert_int_eq(st.server_features, 0);
    rt_expect(c, "+PONG", "PING");
    ck_assert(!rdma_client_is_disconnected(c));
    it_stop(s);
}
END_TEST

/* CLIENT KILL racing the peer's own disconnect (its DISCONNECTED event
 * queued or being handled as the kill closes the connection), with
 * requests and replies in flight: each connection is closed once. */
START_TEST(test_kill_racing_disconnect) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    char *v = it_random_bytes(300000, 23);
    expect_ok(tcp, "SET huge %b", v, (size_t)300000);
    long long base = 1;
    rt_wait_clients(tcp, base);
    for (int i = 0; i < 20; i++) {
        rdma_client *c = rt_open(rport);
        long long id = rt_client_id(c);
        for (int k = 0; k < 4; k++)
            rt_send(c, "GET %s", "huge");
        rt_close(c); /* rdma_disconnect */
        redisReply *r = it_cmd(tcp, "CLIENT KILL ID %lld", id);
        ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    }
    rt_wait_clients(tcp, base);
    rt_still_serving(rport, tcp, base);
    it_stop(s);
}
END_TEST

/* An rdma-bind longer than 1 KiB (its one address after 1100 spaces) is
 * listened on as given, not cut short (ids_open copied 1023 bytes of it:
 * nothing to listen on was left). */
START_TEST(test_long_bind) {
    int rport;
    it_server *s = rt_start(&rport, NULL, NULL);
    redisContext *tcp = it_connect(s);
    char *bind = it_alloc(1200);
    memset(bind, ' ', 1100);
    strcpy(bind + 1100, "127.0.0.1");
    int moved = it_free_port(); /* a new port: the old ids may stay until the new listen */
    expect_ok(tcp, "CONFIG SET rdma-port %d rdma-bind %s", moved, bind);
    rdma_client *c = rt_open(moved);
    rt_expect(c, "+PONG", "PING");
    it_stop(s);
}
END_TEST

/* `timeout` closing clients the server is blocked writing to (their
 * buffers full, the peer no longer consuming), several at once, while
 * another client keeps the I/O threads busy: each closed once, nothing
 * leaks, the busy one unharmed. */
START_TEST(test_timeout_blocked_write) {
    int rport;
    it_server *s = rt_start(&rport, NULL, "--timeout", "1", NULL);
    redisContext *tcp = it_connect(s);
    char *v = it_random_bytes(300000, 24);
    expect_ok(tcp, "SET huge %b", v, (size_t)300000);
    rdma_client *busy = rt_open(rport);
    rdma_client *blocked[4];
    for (int i = 0; i < 4; i++) {
        blocked[i] = rt_open(rport);
        rt_block_reader(blocked[i]);
    }
    for (int i = 0; i < 4; i++) {
        long long end = it_mstime() + RT_WAIT_MS;
        while (!rdma_client_is_disconnected(blocked[i]) && it_mstime() < end) {
            rt_expect(busy, "+PONG", "PING");
            ck_assert_int_eq(rdma_client_pump(blocked[i], 10), 0);
        }
        ck_assert_msg(rdma_client_is_disconnected(blocked[i]), "blocked client %d kept", i);
    }
    rt_expect(busy, "+PONG", "PING");
    it_stop(s);
}
END_TEST

/* CONFIG SET rdma-port 0 while a reply is stalled mid-transfer (the
 * client's buffer full) and requests keep coming on another connection:
 * both finish; MODULE UNLOAD is refused until they are closed, then the
 * module goes with nothing of theirs left (the leak check). */
START_TEST(test_port_off_mid_transfer) {
    int rport;
    it_server *s = rt_start(&rport, NULL, "--enable-module-command", "yes", NULL);
    redisContext *tcp = it_connect(s);
    char *v = it_random_bytes(300000, 25);
    expect_ok(tcp, "SET huge %b", v, (size_t)300000);
    rdma_client *busy = rt_open(rport);
    rdma_client *stalled = rt_open(rport);
    rt_block_reader(stalled);
    for (int i = 0; i < 30; i++)
        rt_send(busy, "GET %s", "huge");
    expect_ok(tcp, "CONFIG SET rdma-port 0");
    rdma_client *late = rt_new(rport, 0, 0);
    ck_assert_int_ne(rdma_client_connect(late, RDMA_CLIENT_READY), 0);
    rt_close(late);
    for (int i = 0; i < 30; i++) {
        redisReply *r = rt_read(busy);
        ck_assert_msg(r->type == REDIS_REPLY_STRING && r->len == 300000 &&
                          !memcmp(r->str, v, 300000),
                      "reply %d differs", i);
    }
    rdma_client_set_consume(stalled, 1);
    redisReply *r = rt_read(stalled);
    ck_assert(r->type == REDIS_REPLY_STRING && r->len == 300000 && !memcmp(r->str, v, 300000));
    expect_error_prefix(tcp, "ERR", "MODULE UNLOAD rdma");
    rt_free_clients();
    it_wait_until(rt_rdma_info(tcp, "rdma_connections_current") == 0, RT_WAIT_MS);
    rt_wait_clients(tcp, 1);
    expect_ok(tcp, "MODULE UNLOAD rdma");
    expect_status(tcp, "PONG", "PING");
    it_stop(s);
}
END_TEST

static Suite *rdma_suite(void) {
    Suite *s = suite_create("rdma");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"handshake", test_handshake},
        {"sizes", test_sizes},
        {"pipeline", test_pipeline},
        {"keepalive", test_keepalive},
        {"disconnect_stages", test_disconnect_stages},
        {"disconnect_mid_request", test_disconnect_mid_request},
        {"disconnect_mid_reply", test_disconnect_mid_reply},
        {"corrupt", test_corrupt},
        {"corrupt_early", test_corrupt_early},
        {"few_work_requests", test_few_work_requests},
        {"client_few_work_requests", test_client_few_work_requests},
        {"server_send_queue_full", test_server_send_queue_full},
        {"rnr_exceeded", test_rnr_exceeded},
        {"fail_first_post_send", test_fail_first_post_send},
        {"fail_post_send", test_fail_post_send},
        {"fail_reg_mr", test_fail_reg_mr},
        {"fail_create_qp", test_fail_create_qp},
        {"client_kill", test_client_kill},
        {"many", test_many},
        {"multi_blpop", test_multi_blpop},
        {"side_by_side", test_side_by_side},
        {"no_device", test_no_device},
        {"client_frees_everything", test_client_frees_everything},
        {"peer_buffer_sizes", test_peer_buffer_sizes},
        {"reregister_mid_reply", test_reregister_mid_reply},
        {"imm_wraps", test_imm_wraps},
        {"rx_boundary", test_rx_boundary},
        {"control_floods", test_control_floods},
        {"kill_racing_disconnect", test_kill_racing_disconnect},
        {"long_bind", test_long_bind},
        {"timeout_blocked_write", test_timeout_blocked_write},
        {"port_off_mid_transfer", test_port_off_mid_transfer},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, NULL, rt_teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void) {
    module_path = getenv("KEEL_RDMA_MODULE");
    if (!module_path || access(module_path, R_OK) != 0) {
        fprintf(stderr,
                "check_it_rdma: KEEL_RDMA_MODULE (the module built on the fake device) "
                "is not set or not built: %s\n",
                module_path ? module_path : "(unset)");
        return EXIT_FAILURE;
    }
    /* This process's own device: no faults, its leaks fail the exit status.
     * The first call reads KEEL_RDMA_FAKE, before any server's faults are
     * put there for its child. */
    if (setenv("KEEL_RDMA_FAKE", "leak_check=1", 1) != 0) return EXIT_FAILURE;
    ops = rdma_fake_ops();
    int n = 0;
    struct ibv_device **devs = ops->get_device_list(&n);
    if (devs) ops->free_device_list(devs);
    unsetenv("KEEL_RDMA_FAKE");
    return it_run(rdma_suite());
}
