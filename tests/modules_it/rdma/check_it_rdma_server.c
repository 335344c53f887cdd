/* check_it_rdma_server.c -- the RDMA module's listener and the server's
 * rules for its connections, over the fake device in a real keel-server
 * (rdma_fake_module) with the suite's client (rdma_client.c): CONFIG SET
 * rdma-port moves the listener (the old port refuses, open connections
 * stay), a CONFIG SET that cannot listen is refused and leaves the
 * listener as it was, two addresses, rdma-port 0 closes it, MODULE UNLOAD is
 * refused while an RDMA connection is open, maxclients refuses an RDMA
 * connection beyond the limit, `timeout` closes an idle one, new addresses
 * on the same port rebind it at once, and a burst of
 * GetServerFeature requests on a device with few send WRs is answered in
 * full. Every server
 * runs with KEEL_RDMA_FAKE="leak_check=1": a device object the module
 * leaks fails its exit status, and it_stop the test. */
#include "harness.h"
#include "rdma_client.h"
#include "rdma_fake.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LT_WAIT_MS 10000
#define LT_MAX 16

static const char *module_path;
static const rdma_ops *ops;
static rdma_client *clients[LT_MAX];
static int nclients;

static void lt_teardown(void) {
    for (int i = 0; i < nclients; i++)
        rdma_client_free(clients[i]);
    nclients = 0;
    it_teardown();
}

static it_server *lt_start_faults(int rport, const char *faults, const char *arg, ...) {
    const char *extra[5] = {0};
    va_list ap;
    va_start(ap, arg);
    int n = 0;
    for (const char *a = arg; a; a = va_arg(ap, const char *)) {
        ck_assert_int_lt(n, 4);
        extra[n++] = a;
    }
    va_end(ap);
    ck_assert_int_eq(setenv("KEEL_RDMA_FAKE", "leak_check=1", 1), 0);
    it_server *s =
        it_start("--loadmodule", module_path, "--rdma-port", it_fmt("%d", rport), "--rdma-bind",
                 "127.0.0.1", "--rdma-rx-size", "65536", "--enable-module-command", "yes", extra[0],
                 extra[1], extra[2], extra[3], NULL);
    unsetenv("KEEL_RDMA_FAKE");
    return s;
}

#define lt_start(rport, ...) lt_start_faults(rport, NULL, __VA_ARGS__)

/* A client through the handshake to rport; NULL (and freed) if it cannot
 * connect. */
static rdma_client *lt_try_open_slots(int rport, int recv_slots) {
    rdma_client_opts o = {.ops = ops,
                          .host = "127.0.0.1",
                          .port = rport,
                          .rx_size = 65536,
                          .recv_slots = recv_slots,
                          .timeout_ms = LT_WAIT_MS};
    rdma_client *c = rdma_client_new(&o);
    ck_assert_ptr_nonnull(c);
    if (rdma_client_connect(c, RDMA_CLIENT_READY) != 0) {
        rdma_client_free(c);
        return NULL;
    }
    ck_assert_int_lt(nclients, LT_MAX);
    clients[nclients++] = c;
    return c;
}

static rdma_client *lt_try_open(int rport) {
    return lt_try_open_slots(rport, 0);
}

static rdma_client *lt_open(int rport) {
    rdma_client *c = lt_try_open(rport);
    ck_assert_msg(c != NULL, "no RDMA connection to port %d", rport);
    return c;
}

static void lt_close(rdma_client *c) {
    for (int i = 0; i < nclients; i++)
        if (clients[i] == c) {
            rdma_client_free(c);
            clients[i] = clients[--nclients];
            return;
        }
    ck_abort_msg("lt_close of an untracked client");
}

/* One command over RDMA (words split at spaces), its reply rendered. */
static void lt_expect(rdma_client *c, const char *want, const char *cmd) {
    char copy[256], *argv[8], *save = NULL;
    int argc = 0;
    snprintf(copy, sizeof(copy), "%s", cmd);
    for (char *w = strtok_r(copy, " ", &save); w && argc < 8; w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    redisReply *r = rdma_client_cmd_argv(c, argc, (const char **)argv, NULL);
    ck_assert_msg(r != NULL, "%s: no reply: %s", cmd, rdma_client_error(c));
    char buf[256];
    ck_assert_str_eq(it_render(r, buf, sizeof(buf)), want);
    freeReplyObject(r);
}

static long long lt_clients(redisContext *tcp) {
    return it_info_int(tcp, "clients", "connected_clients");
}

static long long lt_rdma(redisContext *tcp, const char *field) {
    return it_info_int(tcp, "rdma", field);
}

START_TEST(test_relisten) {
    int a = it_free_port(), b = it_free_port();
    while (b == a)
        b = it_free_port();
    it_server *s = lt_start(a, NULL);
    redisContext *tcp = it_connect(s);
    rdma_client *old = lt_open(a);
    lt_expect(old, "+OK", "SET k v");
    ck_assert_int_eq(lt_rdma(tcp, "rdma_port"), a);
    ck_assert_int_eq(lt_rdma(tcp, "rdma_listeners"), 1);

    /* Moved: the new port serves, the old refuses, `old` stays. */
    expect_ok(tcp, "CONFIG SET rdma-port %d", b);
    ck_assert_int_eq(lt_rdma(tcp, "rdma_port"), b);
    rdma_client *c = lt_open(b);
    lt_expect(c, "\"v\"", "GET k");
    ck_assert_ptr_null(lt_try_open(a));
    lt_expect(old, "+PONG", "PING");

    /* A port and bind that cannot listen (the second id finds its
     * address taken by the first): refused, both values are back and the
     * listener on b is as it was. */
    int c2 = it_free_port();
    expect_error_prefix(tcp, "ERR", "CONFIG SET rdma-port %d rdma-bind %s", c2,
                        "127.0.0.1 127.0.0.1");
    expect_reply(tcp, "[\"rdma-bind\",\"127.0.0.1\"]", "CONFIG GET rdma-bind");
    expect_reply(tcp, it_fmt("[\"rdma-port\",\"%d\"]", b), "CONFIG GET rdma-port");
    ck_assert_int_eq(lt_rdma(tcp, "rdma_port"), b);
    ck_assert_int_eq(lt_rdma(tcp, "rdma_listeners"), 1);
    rdma_client *after = lt_open(b);
    lt_expect(after, "\"v\"", "GET k");
    ck_assert_ptr_null(lt_try_open(c2));

    /* Two addresses on another port. */
    expect_ok(tcp, "CONFIG SET rdma-port %d rdma-bind %s", c2, "127.0.0.1 ::1");
    ck_assert_int_eq(lt_rdma(tcp, "rdma_listeners"), 2);
    lt_close(lt_open(c2));
    ck_assert_ptr_null(lt_try_open(b));
    expect_ok(tcp, "CONFIG SET rdma-port 0");
    ck_assert_int_eq(lt_rdma(tcp, "rdma_enabled"), 0);
    ck_assert_ptr_null(lt_try_open(c2));
    lt_expect(c, "+PONG", "PING");
    lt_expect(old, "+PONG", "PING");

    /* Unloading waits for the connections. */
    expect_error_prefix(tcp, "ERR", "MODULE UNLOAD rdma");
    long long base = lt_clients(tcp) - 3;
    lt_close(old);
    lt_close(c);
    lt_close(after);
    it_wait_until(lt_clients(tcp) == base, LT_WAIT_MS);
    it_wait_until(lt_rdma(tcp, "rdma_connections_current") == 0, LT_WAIT_MS);
    expect_ok(tcp, "MODULE UNLOAD rdma");
    expect_status(tcp, "PONG", "PING");
    it_stop(s);
}
END_TEST

/* New addresses on the same port: the module destroys its listening ids
 * and binds the port again at once, which works only if the device frees
 * an address when destroy_id returns (as the real CM does). Back and forth
 * many times, every CONFIG SET succeeds and the port serves after. */
START_TEST(test_rebind_same_port) {
    int port = it_free_port();
    it_server *s = lt_start(port, NULL);
    redisContext *tcp = it_connect(s);
    for (int i = 0; i < 25; i++) {
        expect_ok(tcp, "CONFIG SET rdma-bind %s", "127.0.0.1 ::1");
        ck_assert_int_eq(lt_rdma(tcp, "rdma_listeners"), 2);
        expect_ok(tcp, "CONFIG SET rdma-bind %s", "127.0.0.1");
        ck_assert_int_eq(lt_rdma(tcp, "rdma_listeners"), 1);
    }
    ck_assert_int_eq(lt_rdma(tcp, "rdma_port"), port);
    rdma_client *c = lt_open(port);
    lt_expect(c, "+PONG", "PING");
    lt_close(c);
    it_stop(s);
}
END_TEST

/* Beyond maxclients an RDMA connection is closed without a reply, and the
 * ones admitted keep working. */
START_TEST(test_maxclients) {
    int port = it_free_port();
    it_server *s = lt_start(port, "--maxclients", "2", NULL);
    redisContext *tcp = it_connect(s);
    /* Only this TCP client (the harness's start-up probe may still be
     * closing). */
    it_wait_until(lt_clients(tcp) == 1, LT_WAIT_MS);
    rdma_client *in = lt_open(port);
    lt_expect(in, "+PONG", "PING");
    long long rejected = it_info_int(tcp, "stats", "rejected_connections");
    rdma_client *over = lt_try_open(port);
    if (over) {
        /* The handshake may finish before the server refuses it: then it
         * is disconnected without a reply. */
        ck_assert(rdma_client_wait_disconnected(over, LT_WAIT_MS));
        lt_close(over);
    }
    it_wait_until(it_info_int(tcp, "stats", "rejected_connections") == rejected + 1, LT_WAIT_MS);
    it_wait_until(lt_rdma(tcp, "rdma_connections_current") == 1, LT_WAIT_MS);
    lt_expect(in, "+PONG", "PING");
    it_stop(s);
}
END_TEST

/* `timeout` closes an idle RDMA client like a TCP one. */
START_TEST(test_idle_timeout) {
    int port = it_free_port();
    it_server *s = lt_start(port, "--timeout", "1", NULL);
    rdma_client *c = lt_open(port);
    lt_expect(c, "+PONG", "PING");
    ck_assert(rdma_client_wait_disconnected(c, LT_WAIT_MS));
    /* A TCP client of its own: an idle one would time out too. */
    redisContext *tcp = it_connect(s);
    it_wait_until(lt_rdma(tcp, "rdma_connections_current") == 0, LT_WAIT_MS);
    lt_close(c);
    it_stop(s);
}
END_TEST

/* A burst of GetServerFeature requests, with the server's device allowing 2
 * send WRs in flight and the client posting 2 receives: every request is
 * answered, none counts as an error, the connection stays. (Whether a reply
 * has to wait for a send slot depends on how fast the fake completes the
 * sends; the module defers it then rather than closing.) */
START_TEST(test_feature_burst) {
    int port = it_free_port();
    it_server *s = lt_start_faults(port, "max_send_wr=2", NULL);
    rdma_client *c = lt_try_open_slots(port, 2);
    ck_assert_ptr_nonnull(c);
    rdma_client_stats st;
    rdma_client_get_stats(c, &st);
    long before = st.feature_replies;
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(rdma_client_send_ctrl(c, RDMA_OP_GET_SERVER_FEATURE, 0, 0), 0);
    redisContext *tcp = it_connect(s);
    long long end = it_mstime() + LT_WAIT_MS;
    do {
        ck_assert_int_eq(rdma_client_pump(c, 20), 0);
        rdma_client_get_stats(c, &st);
    } while (st.feature_replies < before + 8 && it_mstime() < end);
    ck_assert_int_eq(st.feature_replies, before + 8);
    ck_assert_int_eq(st.server_features, 0);
    lt_expect(c, "+PONG", "PING");
    ck_assert_int_eq(lt_rdma(tcp, "rdma_protocol_errors"), 0);
    it_stop(s);
}
END_TEST

static Suite *listen_suite(void) {
    Suite *s = suite_create("rdma_server");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"relisten", test_relisten},           {"rebind_same_port", test_rebind_same_port},
        {"maxclients", test_maxclients},       {"idle_timeout", test_idle_timeout},
        {"feature_burst", test_feature_burst},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, NULL, lt_teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void) {
    module_path = getenv("KEEL_RDMA_MODULE");
    if (!module_path || access(module_path, R_OK) != 0) {
        fprintf(stderr, "check_it_rdma_server: KEEL_RDMA_MODULE is not set or not built: %s\n",
                module_path ? module_path : "(unset)");
        return EXIT_FAILURE;
    }
    /* This process's own device: its leaks fail the exit status. */
    if (setenv("KEEL_RDMA_FAKE", "leak_check=1", 1) != 0) return EXIT_FAILURE;
    ops = rdma_fake_ops();
    int n = 0;
    struct ibv_device **devs = ops->get_device_list(&n);
    if (devs) ops->free_device_list(devs);
    unsetenv("KEEL_RDMA_FAKE");
    return it_run(listen_suite());
}
