/* bufmod.c -- a fixture transport for ABI 1.3's transport members: plain
 * TCP underneath, but shaped like TLS where the core must help.
 *
 *  - Its read pulls everything the socket has into its own buffer and
 *    returns at most BUF_PIECE bytes per call, so the rest is only known
 *    through has_pending (the socket will not announce it again).
 *  - BUFMOD.READWAIT: the connection's next read pulls its bytes and then
 *    asks for writability (conn_wait) before serving them: the core must
 *    retry the read when the socket is writable (it will never be readable
 *    again for those bytes).
 *  - BUFMOD.WRITEWAIT: the next writev (the reply to that command) asks for
 *    readability first, and succeeds once the client sent more bytes; a
 *    retry before that is counted as spurious (the core retried on
 *    writability).
 *  - The handshake of an accepted connection waits for the client's first
 *    byte, so a client that sends nothing stays in it (handshake timeout).
 *  - BUFMOD.LISTEN <port> / BUFMOD.UNLISTEN: listener_open on the server's
 *    bind addresses, listener_close.
 *  - BUFMOD.DIAL <host> <port> <n>: an outgoing connection through this
 *    transport (transport_find, connect); sends n PINGs and replies
 *    "<conn_host>:<the n replies>" once they are all back (blocking the
 *    calling client). BUFMOD.HOLD <host> <port> / BUFMOD.DROP keep one open.
 *    A retry offering fewer bytes than the first try is counted too (a TLS
 *    write must be retried with the same data).
 *  - BUFMOD.STATS: [spurious write retries, read retries after conn_wait,
 *    the local port of the last accepted connection, short retries].
 *
 * loadmodule bufmod.so <port, 0 for none> [handshake timeout ms]. Built
 * against sdk/include only. */
#include <keel/keel_module.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define BUF_PIECE 7
#define BUF_CAP 65536

typedef struct buf_conn {
    int outgoing;
    int waited; /* the handshake asked for readability once */
    char in[BUF_CAP];
    size_t in_len, in_pos;
    int eof;
    int read_blocked; /* a read asked for writability: the retry serves */
    int write_waiting;
    unsigned long long rx;         /* bytes received from the socket */
    unsigned long long rx_at_wait; /* rx when the write began waiting */
    int write_tries;
    size_t write_offered; /* bytes the first waiting writev offered */
} buf_conn;

static const keel_api *api;
static keel_transport *transport;
static keel_listener *listener;
static int arm_read_wait, arm_write_wait;
static long long spurious, read_retries, last_local_port, short_retries;

/* ---- the transport ---- */

static int buf_accept(keel_conn *conn, void *priv) {
    (void)priv;
    api->transport->conn_set_data(conn, api->core->calloc(1, sizeof(buf_conn)));
    last_local_port = api->transport->conn_local_port(conn);
    return KEEL_OK;
}

static int buf_connect(keel_conn *conn, void *priv) {
    (void)priv;
    buf_conn *b = api->core->calloc(1, sizeof(buf_conn));
    b->outgoing = 1;
    api->transport->conn_set_data(conn, b);
    return api->transport->conn_host(conn) ? KEEL_OK : KEEL_ERR;
}

static int buf_handshake(keel_conn *conn, void *priv) {
    (void)priv;
    buf_conn *b = api->transport->conn_get_data(conn);
    if (b->outgoing) return KEEL_OK;
    char c;
    if (recv(api->transport->conn_fd(conn), &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1) return KEEL_OK;
    b->waited = 1;
    return KEEL_CONN_WANT_READ;
}

/* Everything the socket has, into the buffer. */
static void buf_fill(keel_conn *conn, buf_conn *b) {
    if (b->in_pos == b->in_len) b->in_pos = b->in_len = 0;
    while (!b->eof && b->in_len < BUF_CAP) {
        ssize_t n = recv(api->transport->conn_fd(conn), b->in + b->in_len, BUF_CAP - b->in_len,
                         MSG_DONTWAIT);
        if (n == 0) b->eof = 1;
        if (n <= 0) return;
        b->in_len += (size_t)n;
        b->rx += (unsigned long long)n;
    }
}

static ssize_t buf_read(keel_conn *conn, void *buf, size_t len, void *priv) {
    (void)priv;
    buf_conn *b = api->transport->conn_get_data(conn);
    if (b->read_blocked) {
        b->read_blocked = 0;
        __atomic_add_fetch(&read_retries, 1, __ATOMIC_RELAXED);
    } else {
        buf_fill(conn, b);
        if (__atomic_exchange_n(&arm_read_wait, 0, __ATOMIC_RELAXED) && b->in_len > b->in_pos) {
            b->read_blocked = 1;
            api->transport->conn_wait(conn, KEEL_CONN_WRITABLE);
            errno = EAGAIN;
            return -1;
        }
    }
    size_t n = b->in_len - b->in_pos;
    if (n == 0) {
        if (b->eof) return 0;
        errno = EAGAIN;
        return -1;
    }
    if (n > BUF_PIECE) n = BUF_PIECE;
    if (n > len) n = len;
    memcpy(buf, b->in + b->in_pos, n);
    b->in_pos += n;
    return (ssize_t)n;
}

static int buf_has_pending(keel_conn *conn, void *priv) {
    (void)priv;
    buf_conn *b = api->transport->conn_get_data(conn);
    return b->read_blocked ? 0 : (int)(b->in_len - b->in_pos);
}

/* Readable since the wait began: the socket has bytes, or a read took some. */
static int buf_write_may_go(keel_conn *conn, buf_conn *b) {
    char c;
    return b->rx > b->rx_at_wait ||
           recv(api->transport->conn_fd(conn), &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

static ssize_t buf_writev(keel_conn *conn, const struct iovec *iov, int iovcnt, void *priv) {
    (void)priv;
    buf_conn *b = api->transport->conn_get_data(conn);
    if (!b->write_waiting && __atomic_exchange_n(&arm_write_wait, 0, __ATOMIC_RELAXED)) {
        b->write_waiting = 1;
        b->write_tries = 0;
        b->rx_at_wait = b->rx;
    }
    if (b->write_waiting) {
        size_t offered = 0;
        for (int i = 0; i < iovcnt; i++)
            offered += iov[i].iov_len;
        if (!b->write_tries) b->write_offered = offered;
        if (offered < b->write_offered) __atomic_add_fetch(&short_retries, 1, __ATOMIC_RELAXED);
        if (!buf_write_may_go(conn, b)) {
            if (b->write_tries++ > 0) __atomic_add_fetch(&spurious, 1, __ATOMIC_RELAXED);
            api->transport->conn_wait(conn, KEEL_CONN_READABLE);
            errno = EAGAIN;
            return -1;
        }
        b->write_waiting = 0;
    }
    return writev(api->transport->conn_fd(conn), iov, iovcnt);
}

static void buf_close(keel_conn *conn, void *priv) {
    (void)priv;
    api->core->free(api->transport->conn_get_data(conn));
}

/* ---- commands: arming, listeners, stats ---- */

static void cmd_readwait(keel_ctx *ctx) {
    __atomic_store_n(&arm_read_wait, 1, __ATOMIC_RELAXED);
    api->command->reply_ok(ctx);
}

static void cmd_writewait(keel_ctx *ctx) {
    __atomic_store_n(&arm_write_wait, 1, __ATOMIC_RELAXED);
    api->command->reply_ok(ctx);
}

static void cmd_listen(keel_ctx *ctx) {
    long long port;
    if (api->command->arg_ll(ctx, 1, &port) != KEEL_OK) {
        api->command->reply_error(ctx, "ERR bad port");
        return;
    }
    keel_listener *l = api->transport->listener_open(ctx, transport, NULL, 0, (int)port);
    if (!l) {
        api->command->reply_error(ctx, "ERR cannot listen");
        return;
    }
    if (listener) api->transport->listener_close(listener);
    listener = l;
    api->command->reply_ok(ctx);
}

static void cmd_unlisten(keel_ctx *ctx) {
    if (listener) api->transport->listener_close(listener);
    listener = NULL;
    api->command->reply_ok(ctx);
}

static void cmd_stats(keel_ctx *ctx) {
    api->command->reply_array(ctx, 4);
    api->command->reply_int(ctx, __atomic_load_n(&spurious, __ATOMIC_RELAXED));
    api->command->reply_int(ctx, __atomic_load_n(&read_retries, __ATOMIC_RELAXED));
    api->command->reply_int(ctx, last_local_port);
    api->command->reply_int(ctx, __atomic_load_n(&short_retries, __ATOMIC_RELAXED));
}

/* ---- outgoing connections ---- */

typedef struct dialer {
    keel_blocked *blocked; /* NULL for the held connection */
    keel_conn *conn;
    int want; /* bytes of replies expected */
    char got[1024];
    int len;
} dialer;

static dialer *held;

static void dial_reply(dialer *d, const char *s) {
    if (d->blocked) api->block->unblock(d->blocked, strdup(s));
    d->blocked = NULL;
}

/* One read per call: what the transport still buffers must bring the
 * server back here (has_pending), as the socket will not. */
static void dial_readable(keel_conn *conn, int status, void *udata) {
    (void)status;
    dialer *d = udata;
    char buf[256];
    ssize_t n = api->transport->conn_read(conn, buf, sizeof(buf));
    if (n > 0 && d->len + n <= (ssize_t)sizeof(d->got)) {
        memcpy(d->got + d->len, buf, (size_t)n);
        d->len += (int)n;
    }
    if (d->len < d->want && (n > 0 || (n < 0 && errno == EAGAIN))) return;
    char out[1100];
    snprintf(out, sizeof(out), "%s:%.*s", api->transport->conn_host(conn), d->len, d->got);
    api->transport->conn_close(conn);
    dial_reply(d, d->len >= d->want ? out : "ERR connection ended early");
    free(d);
}

static void dial_done(keel_conn *conn, int status, void *udata) {
    dialer *d = udata;
    if (status != KEEL_OK) {
        dial_reply(d, "ERR connect failed");
        free(d);
        return;
    }
    char ping[] = "PING\r\n";
    for (int i = 0; i < d->want / 7; i++)
        if (api->transport->conn_write(conn, ping, 6) != 6) {
            api->transport->conn_close(conn);
            dial_reply(d, "ERR write failed");
            free(d);
            return;
        }
    api->transport->conn_set_handlers(conn, dial_readable, NULL, d);
}

static void dial_unblocked(keel_ctx *ctx, void *data, void *priv) {
    (void)priv;
    const char *s = data;
    if (!strncmp(s, "ERR", 3))
        api->command->reply_error(ctx, s);
    else
        api->command->reply_bulk(ctx, s, strlen(s));
    free(data);
}

static void dial_free_data(void *data, void *priv) {
    (void)priv;
    free(data);
}

static keel_conn *dial_open(keel_ctx *ctx, dialer *d) {
    size_t hlen;
    long long port;
    const char *host = api->command->argv(ctx, 1, &hlen);
    keel_transport *t = api->transport->transport_find("bufmod");
    if (api->command->arg_ll(ctx, 2, &port) != KEEL_OK || !t) return NULL;
    char name[256];
    snprintf(name, sizeof(name), "%.*s", (int)hlen, host);
    return api->transport->connect(ctx, t, name, (int)port, 0, dial_done, d);
}

static void cmd_dial(keel_ctx *ctx) {
    long long n;
    if (api->command->arg_ll(ctx, 3, &n) != KEEL_OK || n < 1 || n > 100) {
        api->command->reply_error(ctx, "ERR bad count");
        return;
    }
    dialer *d = calloc(1, sizeof(*d));
    d->want = (int)n * 7; /* "+PONG\r\n" each */
    keel_block_def def = {
        .size = sizeof(def), .on_unblock = dial_unblocked, .free_data = dial_free_data};
    d->blocked = api->block->block(ctx, &def);
    if (!d->blocked || !(d->conn = dial_open(ctx, d))) {
        if (d->blocked)
            api->block->unblock(d->blocked, strdup("ERR cannot connect"));
        else
            api->command->reply_error(ctx, "ERR cannot block");
        free(d);
    }
}

static void hold_done(keel_conn *conn, int status, void *udata) {
    (void)conn;
    if (status != KEEL_OK && held == udata) {
        free(held);
        held = NULL;
    }
}

static void cmd_hold(keel_ctx *ctx) {
    if (held) {
        api->command->reply_error(ctx, "ERR already holding one");
        return;
    }
    held = calloc(1, sizeof(*held));
    size_t hlen;
    long long port;
    const char *host = api->command->argv(ctx, 1, &hlen);
    char name[256];
    snprintf(name, sizeof(name), "%.*s", (int)hlen, host);
    if (api->command->arg_ll(ctx, 2, &port) != KEEL_OK ||
        !(held->conn =
              api->transport->connect(ctx, transport, name, (int)port, 0, hold_done, held))) {
        free(held);
        held = NULL;
        api->command->reply_error(ctx, "ERR cannot connect");
        return;
    }
    api->command->reply_ok(ctx);
}

static void cmd_drop(keel_ctx *ctx) {
    if (held) {
        api->transport->conn_close(held->conn);
        free(held);
        held = NULL;
    }
    api->command->reply_ok(ctx);
}

static int add_commands(keel_ctx *ctx) {
    static const struct {
        const char *name;
        keel_command_fn fn;
        int arity;
    } cmds[] = {
        {"bufmod.readwait", cmd_readwait, 1}, {"bufmod.writewait", cmd_writewait, 1},
        {"bufmod.listen", cmd_listen, 2},     {"bufmod.unlisten", cmd_unlisten, 1},
        {"bufmod.stats", cmd_stats, 1},       {"bufmod.dial", cmd_dial, 4},
        {"bufmod.hold", cmd_hold, 3},         {"bufmod.drop", cmd_drop, 1},
    };
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        keel_command_def def = {.size = sizeof(def),
                                .name = cmds[i].name,
                                .fn = cmds[i].fn,
                                .arity = cmds[i].arity,
                                .flags = ""};
        if (api->command->register_command(ctx, &def) != KEEL_OK) return KEEL_ERR;
    }
    return KEEL_OK;
}

static int buf_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    spurious = read_retries = last_local_port = short_retries = 0;
    listener = NULL;
    held = NULL;
    if (!KEEL_API_HAS(api, transport, transport_find)) {
        api->core->set_error(ctx, "this server has no ABI 1.3 transport API");
        return KEEL_ERR;
    }
    if (argc < 1 || argc > 2) {
        api->core->set_error(ctx, "usage: bufmod.so <port> [handshake timeout ms]");
        return KEEL_ERR;
    }
    keel_transport_def def = {.size = sizeof(def),
                              .name = "bufmod",
                              .accept = buf_accept,
                              .handshake = buf_handshake,
                              .read = buf_read,
                              .writev = buf_writev,
                              .has_pending = buf_has_pending,
                              .close = buf_close,
                              .connect = buf_connect,
                              .handshake_timeout_ms = argc > 1 ? atoll(argv[1]) : 0};
    if (!(transport = api->transport->register_transport(ctx, &def))) return KEEL_ERR;
    int port = atoi(argv[0]);
    if (port && !(listener = api->transport->listener_open(ctx, transport, NULL, 0, port)))
        return KEEL_ERR;
    return add_commands(ctx);
}

KEEL_MODULE("bufmod", 1, buf_init, NULL)
