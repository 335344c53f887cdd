/* fixture_v1_4.c -- the ABI 1.4 fixture module ("abifix14").
 *
 * Built ONLY against the frozen copy of the 1.4 header (tests/abi/include-1.4),
 * never sdk/include: it is a module compiled the day ABI 1.4 shipped, and
 * every later server of ABI major 1 must keep loading it. It uses what 1.4
 * added, probed with KEEL_API_HAS: a KEEL_TRANSPORT_OWN_FD transport with
 * an addr hook whose connections run over eventfds the module owns
 * (conn_adopt, conn_wake), and a watched descriptor (fd_watch,
 * fd_unwatch). What 1.0 to 1.3 have is exercised by the older fixtures.
 *
 *   ABIFIX14.PROBE   KEEL_API_HAS results, the server's minor
 *   ABIFIX14.ADOPT   adopts a connection over a new eventfd; it stays a
 *                    quiet client (addr 127.0.0.1:1414) until DROP
 *   ABIFIX14.DROP    the connection ends: its read returns 0 after
 *                    conn_wake, so the server closes it (close hook)
 *   ABIFIX14.WATCH   watches an eventfd signalled once; the callback
 *                    consumes it and unwatches
 *   ABIFIX14.STATS   [watch calls, close hooks run, conn_count] */
#include <keel/keel_module.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef struct adopted {
    int efd;
    int ended;
} adopted;

static const keel_api *api;
static keel_transport *transport;
static keel_conn *current; /* the adopted connection, once accepted */
static long long watch_calls, closes;
static keel_fd_watch *watch;
static int watch_fd = -1;

/* ---- the transport ---- */

static int tr_accept(keel_conn *conn, void *priv) {
    (void)priv;
    current = conn;
    return KEEL_OK;
}

/* Only the main thread changes `ended`, between steps (ABIFIX14.DROP). */
static ssize_t tr_read(keel_conn *conn, void *buf, size_t len, void *priv) {
    (void)buf;
    (void)len;
    (void)priv;
    adopted *a = api->transport->conn_get_data(conn);
    if (__atomic_load_n(&a->ended, __ATOMIC_ACQUIRE)) return 0;
    errno = EAGAIN;
    return -1;
}

static ssize_t tr_writev(keel_conn *conn, const struct iovec *iov, int iovcnt, void *priv) {
    (void)conn;
    (void)iov;
    (void)iovcnt;
    (void)priv;
    errno = EPIPE;
    return -1;
}

static void tr_close(keel_conn *conn, void *priv) {
    (void)priv;
    adopted *a = api->transport->conn_get_data(conn);
    if (conn == current) current = NULL;
    close(a->efd);
    api->core->free(a);
    closes++;
}

static int tr_addr(keel_conn *conn, char *buf, size_t len, int remote, void *priv) {
    (void)conn;
    (void)priv;
    snprintf(buf, len, remote ? "127.0.0.1:1414" : "127.0.0.1:14");
    return KEEL_OK;
}

/* ---- commands ---- */

/* Replies 1 1 1 0 0: the 1.4 members are present, the server is 1.4 or
 * later, and a transport group sized as 1.3 had it has transport_find but
 * neither fd_watch nor conn_adopt. */
static void cmd_probe(keel_ctx *ctx) {
    keel_api older = *api;
    keel_api_transport older_transport = *api->transport;
    older_transport.size = (uint32_t)offsetof(keel_api_transport, fd_watch);
    older.transport = &older_transport;
    api->command->reply_array(ctx, 5);
    api->command->reply_int(ctx, KEEL_API_HAS(api, transport, fd_watch) &&
                                     KEEL_API_HAS(api, transport, conn_wake));
    api->command->reply_int(ctx, api->abi_major == 1 && api->abi_minor >= 4);
    api->command->reply_int(ctx, KEEL_API_HAS(&older, transport, transport_find));
    api->command->reply_int(ctx, KEEL_API_HAS(&older, transport, fd_watch));
    api->command->reply_int(ctx, KEEL_API_HAS(&older, transport, conn_adopt));
}

static void cmd_adopt(keel_ctx *ctx) {
    if (current) {
        api->command->reply_error(ctx, "ERR abifix14 already has a connection");
        return;
    }
    adopted *a = api->core->calloc(1, sizeof(*a));
    a->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (a->efd == -1 || api->transport->conn_adopt(ctx, transport, a->efd, 14, a) != KEEL_OK) {
        if (a->efd != -1) close(a->efd);
        api->core->free(a);
        api->command->reply_error(ctx, "ERR conn_adopt failed");
        return;
    }
    api->command->reply_ok(ctx);
}

static void cmd_drop(keel_ctx *ctx) {
    if (!current) {
        api->command->reply_error(ctx, "ERR abifix14 has no connection");
        return;
    }
    adopted *a = api->transport->conn_get_data(current);
    __atomic_store_n(&a->ended, 1, __ATOMIC_RELEASE);
    api->transport->conn_wake(current);
    api->command->reply_ok(ctx);
}

static void watch_fired(int fd, void *udata) {
    (void)udata;
    uint64_t n;
    if (read(fd, &n, sizeof(n)) == sizeof(n)) watch_calls++;
    api->transport->fd_unwatch(watch);
    watch = NULL;
    close(watch_fd);
    watch_fd = -1;
}

static void cmd_watch(keel_ctx *ctx) {
    uint64_t one = 1;
    if (watch || (watch_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1 ||
        write(watch_fd, &one, sizeof(one)) != sizeof(one) ||
        !(watch = api->transport->fd_watch(ctx, watch_fd, watch_fired, NULL))) {
        api->command->reply_error(ctx, "ERR fd_watch failed");
        return;
    }
    api->command->reply_ok(ctx);
}

static void cmd_stats(keel_ctx *ctx) {
    api->command->reply_array(ctx, 3);
    api->command->reply_int(ctx, watch_calls);
    api->command->reply_int(ctx, closes);
    api->command->reply_int(ctx, (long long)api->transport->conn_count(transport));
}

static int add_command(keel_ctx *ctx, const char *name, keel_command_fn fn, int arity) {
    const keel_command_def def = {
        .size = sizeof(def), .name = name, .fn = fn, .arity = arity, .flags = "readonly"};
    return api->command->register_command(ctx, &def);
}

static int abifix14_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    (void)argc;
    (void)argv;
    api = a;
    if (!KEEL_API_HAS(api, transport, conn_wake)) {
        api->core->set_error(ctx, "the server's table lacks ABI 1.4 functions");
        return KEEL_ERR;
    }
    watch_calls = closes = 0;
    current = NULL;
    watch = NULL;
    const keel_transport_def def = {.size = sizeof(def),
                                    .name = "abifix14",
                                    .accept = tr_accept,
                                    .read = tr_read,
                                    .writev = tr_writev,
                                    .close = tr_close,
                                    .flags = KEEL_TRANSPORT_OWN_FD,
                                    .addr = tr_addr};
    if (!(transport = api->transport->register_transport(ctx, &def))) return KEEL_ERR;
    if (add_command(ctx, "abifix14.probe", cmd_probe, 1) != KEEL_OK ||
        add_command(ctx, "abifix14.adopt", cmd_adopt, 1) != KEEL_OK ||
        add_command(ctx, "abifix14.drop", cmd_drop, 1) != KEEL_OK ||
        add_command(ctx, "abifix14.watch", cmd_watch, 1) != KEEL_OK ||
        add_command(ctx, "abifix14.stats", cmd_stats, 1) != KEEL_OK)
        return KEEL_ERR;
    api->core->log(ctx, KEEL_LOG_NOTICE, "abifix14 (ABI %d.%d) loaded on server %s (ABI %u.%u)",
                   KEEL_ABI_MAJOR, KEEL_ABI_MINOR, api->core->server_version(), api->abi_major,
                   api->abi_minor);
    return KEEL_OK;
}

KEEL_MODULE("abifix14", 10400, abifix14_init, NULL)
