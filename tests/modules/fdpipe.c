/* fdpipe.c -- a fixture transport for ABI 1.4's module-owned descriptors,
 * shaped like RDMA without a device: the server never sees a socket of it.
 *
 *  - It listens itself, on a unix socket path, watched with fd_watch (RDMA:
 *    the CM event channel). Each accepted data socket is watched the same
 *    way, and the connection is adopted (conn_adopt) over an eventfd (RDMA:
 *    the completion channel): the server watches only that eventfd, which
 *    becomes readable when the module signals it.
 *  - The data socket's watch (main thread) reads what arrived into the
 *    connection's inbox and signals the eventfd; read takes from the inbox
 *    (on whichever thread owns the connection), under a mutex.
 *  - writev writes straight to the data socket but at most `window` bytes
 *    per grant: then -1 with EAGAIN until the peer's next bytes arrive and
 *    grant another window (RDMA: the peer re-registering its buffer); bytes
 *    arriving while some of the window is left grant nothing, so a peer
 *    that counts what it received knows when the writer stopped. A byte
 *    FP_GRANT from the peer is such a grant and no data (RDMA: a control
 *    message), so the server has no request to answer, only a write to
 *    retry when the eventfd becomes readable (the peer sends no FP_GRANT
 *    byte as data).
 *  - The handshake waits for the peer's first bytes and answers
 *    KEEL_CONN_WANT_WRITE meanwhile, which for an OWN_FD transport means
 *    readability (an eventfd is always writable: a server waiting for
 *    writability would spin; FDPIPE.STATS counts the steps).
 *  - The peer closing is seen only on the data socket: its watch removes
 *    itself (fd_unwatch inside the callback) and calls conn_wake, without
 *    signalling the eventfd; the connection's read then returns 0.
 *  - Addresses (the addr hook): peer "127.0.0.1:<10000 + n>", or
 *    "198.51.100.7:<10000 + n>" after FDPIPE.PUBLIC 1 (protected mode);
 *    local "192.0.2.1:<local port>".
 *
 * Commands: FDPIPE.STATS: [accepted, closes, handshake steps, the last
 * connection's eventfd, oneshot calls, wakes]. FDPIPE.PUBLIC 0|1.
 * FDPIPE.ONESHOT: watches a pipe holding one unread byte with a callback
 * that unwatches itself (level-triggered: it would run every loop turn
 * otherwise); replies whether a second watch of the same fd and a watch of
 * -1 were refused. FDPIPE.REFUSED: whether listener_open and connect refuse
 * this transport, and conn_adopt fd -1 and a watched fd. FDPIPE.CONNFD:
 * how many adopted connections' descriptors fd_watch accepted (0: each
 * new connection's is tried). The listener's watch is left to the server
 * at unload, and its descriptor stays open (on purpose): a peer connecting after unload would run a
 * stale watch.
 *
 * loadmodule fdpipe.so <socket path> <window bytes> <local port> [noaddr:
 * registers without the addr hook, which must be refused | adoptfail: init
 * adopts a connection, then fails]. Built against sdk/include only. */
#include <keel/keel_module.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FP_INBOX_MAX (16 * 1024 * 1024) /* a peer sending more is dropped */
#define FP_GRANT 0x06

typedef struct fp_conn {
    int sock, efd;
    keel_fd_watch *watch; /* the data socket's; NULL once it ended */
    keel_conn *kc;        /* set by the accept hook */
    unsigned seq;
    int public_addr;
    pthread_mutex_t lock; /* the fields below: the watch and the hooks */
    char *in;
    size_t in_len, in_pos, in_cap;
    int eof, broken, signalled;
    size_t credit;
} fp_conn;

static const keel_api *api;
static keel_ctx *mod_ctx;
static keel_transport *transport;
static int listen_fd = -1;
static size_t window;
static int local_port;
static unsigned next_seq;
static int public_next;
static long long accepted, closes, hs_steps, last_efd, oneshot_calls, wakes;
static long long conn_fd_watched; /* fd_watch accepted a connection's descriptor */

/* ---- the eventfd: readable while the connection has something to do ---- */

static void fp_signal(fp_conn *c) {
    if (c->signalled) return;
    uint64_t one = 1;
    if (write(c->efd, &one, sizeof(one)) == sizeof(one)) c->signalled = 1;
}

/* Under lock, after a hook took what it could: readable again only while
 * bytes are left to read. */
static void fp_settle(fp_conn *c) {
    if (c->in_pos < c->in_len || c->eof || c->broken) {
        fp_signal(c);
        return;
    }
    uint64_t n;
    if (c->signalled && read(c->efd, &n, sizeof(n)) == sizeof(n)) c->signalled = 0;
}

/* ---- the data socket's watch (main thread) ---- */

static int fp_inbox_room(fp_conn *c, size_t want) {
    if (c->in_pos == c->in_len) c->in_pos = c->in_len = 0;
    if (c->in_cap - c->in_len >= want) return 1;
    size_t cap = c->in_cap ? c->in_cap * 2 : 65536;
    while (cap - c->in_len < want)
        cap *= 2;
    if (cap > FP_INBOX_MAX) return 0;
    char *in = realloc(c->in, cap);
    if (!in) return 0;
    c->in = in;
    c->in_cap = cap;
    return 1;
}

static void fp_on_data(int fd, void *udata) {
    fp_conn *c = udata;
    char buf[65536];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    pthread_mutex_lock(&c->lock);
    if (n > 0 && fp_inbox_room(c, (size_t)n)) {
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] != FP_GRANT) c->in[c->in_len++] = buf[i];
        if (!c->credit) c->credit = window; /* the peer's bytes grant the next window */
        fp_signal(c);
        pthread_mutex_unlock(&c->lock);
        return;
    }
    /* The end (or an error, or too much input): the read reports it. */
    if (n > 0) c->broken = 1;
    c->eof = 1;
    pthread_mutex_unlock(&c->lock);
    api->transport->fd_unwatch(c->watch);
    c->watch = NULL;
    wakes++;
    if (c->kc) api->transport->conn_wake(c->kc);
}

/* ---- the transport ---- */

static int fp_accept(keel_conn *conn, void *priv) {
    (void)priv;
    fp_conn *c = api->transport->conn_get_data(conn);
    c->kc = conn;
    return KEEL_OK;
}

static int fp_handshake(keel_conn *conn, void *priv) {
    (void)priv;
    fp_conn *c = api->transport->conn_get_data(conn);
    __atomic_add_fetch(&hs_steps, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&c->lock);
    int rv = c->in_len > c->in_pos ? KEEL_OK : c->eof ? KEEL_ERR : KEEL_CONN_WANT_WRITE;
    fp_settle(c);
    pthread_mutex_unlock(&c->lock);
    return rv;
}

static ssize_t fp_read(keel_conn *conn, void *buf, size_t len, void *priv) {
    (void)priv;
    fp_conn *c = api->transport->conn_get_data(conn);
    pthread_mutex_lock(&c->lock);
    size_t n = c->in_len - c->in_pos;
    if (n > len) n = len;
    memcpy(buf, c->in + c->in_pos, n);
    c->in_pos += n;
    int broken = c->broken, eof = c->eof;
    fp_settle(c);
    pthread_mutex_unlock(&c->lock);
    if (n) return (ssize_t)n;
    if (broken) {
        errno = ECONNRESET;
        return -1;
    }
    if (eof) return 0;
    errno = EAGAIN;
    return -1;
}

/* The bytes are taken from the window before they are written: the peer
 * may receive them, answer and have its bytes seen by the watch before
 * this thread runs again. */
static ssize_t fp_writev(keel_conn *conn, const struct iovec *iov, int iovcnt, void *priv) {
    (void)priv;
    fp_conn *c = api->transport->conn_get_data(conn);
    size_t offered = 0;
    for (int i = 0; i < iovcnt; i++)
        offered += iov[i].iov_len;
    pthread_mutex_lock(&c->lock);
    size_t take = offered < c->credit ? offered : c->credit;
    c->credit -= take;
    pthread_mutex_unlock(&c->lock);
    if (!take) {
        errno = EAGAIN;
        return -1;
    }
    struct iovec part[16];
    int cnt = 0;
    for (size_t left = take; cnt < iovcnt && cnt < 16 && left; cnt++) {
        part[cnt] = iov[cnt];
        if (part[cnt].iov_len > left) part[cnt].iov_len = left;
        left -= part[cnt].iov_len;
    }
    ssize_t w = writev(c->sock, part, cnt);
    int saved = errno;
    size_t unsent = take - (w > 0 ? (size_t)w : 0);
    if (unsent) {
        pthread_mutex_lock(&c->lock);
        c->credit = c->credit + unsent < window ? c->credit + unsent : window;
        pthread_mutex_unlock(&c->lock);
    }
    errno = saved;
    return w;
}

static void fp_free(fp_conn *c) {
    if (c->watch) api->transport->fd_unwatch(c->watch);
    close(c->sock);
    if (c->efd != -1) close(c->efd);
    pthread_mutex_destroy(&c->lock);
    free(c->in);
    free(c);
}

static void fp_close(keel_conn *conn, void *priv) {
    (void)priv;
    closes++;
    fp_free(api->transport->conn_get_data(conn));
}

static int fp_addr(keel_conn *conn, char *buf, size_t len, int remote, void *priv) {
    (void)priv;
    fp_conn *c = api->transport->conn_get_data(conn);
    if (remote)
        snprintf(buf, len, "%s:%u", c->public_addr ? "198.51.100.7" : "127.0.0.1", 10000 + c->seq);
    else
        snprintf(buf, len, "192.0.2.1:%d", local_port);
    return KEEL_OK;
}

/* ---- the listener (main thread) ---- */

static void fp_adopt(int sock) {
    fp_conn *c = calloc(1, sizeof(*c));
    c->sock = sock;
    c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    c->seq = ++next_seq;
    c->public_addr = public_next;
    c->credit = window;
    pthread_mutex_init(&c->lock, NULL);
    if (c->efd == -1 || !(c->watch = api->transport->fd_watch(mod_ctx, sock, fp_on_data, c))) {
        fp_free(c);
        return;
    }
    accepted++;
    last_efd = c->efd;
    int efd = c->efd;
    /* From KEEL_OK on the server owns it: the close hook frees it, maybe
     * before conn_adopt returns. */
    if (api->transport->conn_adopt(mod_ctx, transport, c->efd, local_port, c) != KEEL_OK) {
        fp_free(c);
        return;
    }
    /* The descriptor is the connection's now: a watch of it must be
     * refused (also while its handshake step is out on an I/O thread). */
    keel_fd_watch *w = api->transport->fd_watch(mod_ctx, efd, fp_on_data, NULL);
    if (w) {
        conn_fd_watched++;
        api->transport->fd_unwatch(w);
    }
}

/* Level-triggered: what is left in the backlog fires again next turn. */
static void fp_on_listen(int fd, void *udata) {
    (void)udata;
    for (int i = 0; i < 16; i++) {
        int s = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (s == -1) return;
        fp_adopt(s);
    }
}

static int fp_listen(keel_ctx *ctx, const char *path) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) return KEEL_ERR;
    strcpy(sa.sun_path, path);
    unlink(path);
    listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd == -1 || bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
        listen(listen_fd, 128) == -1 ||
        !api->transport->fd_watch(ctx, listen_fd, fp_on_listen, NULL))
        return KEEL_ERR;
    return KEEL_OK;
}

/* ---- commands ---- */

static void cmd_stats(keel_ctx *ctx) {
    long long v[] = {accepted, closes,        __atomic_load_n(&hs_steps, __ATOMIC_RELAXED),
                     last_efd, oneshot_calls, wakes};
    api->command->reply_array(ctx, 6);
    for (int i = 0; i < 6; i++)
        api->command->reply_int(ctx, v[i]);
}

static void cmd_public(keel_ctx *ctx) {
    long long on;
    if (api->command->arg_ll(ctx, 1, &on) != KEEL_OK) {
        api->command->reply_error(ctx, "ERR 0 or 1");
        return;
    }
    public_next = on != 0;
    api->command->reply_ok(ctx);
}

static void cmd_connfd(keel_ctx *ctx) {
    api->command->reply_int(ctx, conn_fd_watched);
}

static int oneshot_fds[2] = {-1, -1};
static keel_fd_watch *oneshot_watch;

static void oneshot_fired(int fd, void *udata) {
    (void)fd;
    (void)udata;
    oneshot_calls++;
    api->transport->fd_unwatch(oneshot_watch); /* the byte stays unread */
    oneshot_watch = NULL;
}

static void cmd_oneshot(keel_ctx *ctx) {
    if (oneshot_fds[0] != -1 || pipe(oneshot_fds) != 0 || write(oneshot_fds[1], "x", 1) != 1) {
        api->command->reply_error(ctx, "ERR oneshot already armed");
        return;
    }
    oneshot_watch = api->transport->fd_watch(ctx, oneshot_fds[0], oneshot_fired, NULL);
    int again = api->transport->fd_watch(ctx, oneshot_fds[0], oneshot_fired, NULL) == NULL;
    int negative = api->transport->fd_watch(ctx, -1, oneshot_fired, NULL) == NULL;
    api->command->reply_array(ctx, 3);
    api->command->reply_int(ctx, oneshot_watch != NULL);
    api->command->reply_int(ctx, again);
    api->command->reply_int(ctx, negative);
}

static void refused_done(keel_conn *conn, int status, void *udata) {
    (void)conn;
    (void)status;
    (void)udata;
}

static void cmd_refused(keel_ctx *ctx) {
    api->command->reply_array(ctx, 4);
    api->command->reply_int(ctx, api->transport->listener_open(ctx, transport, NULL, 0, 1) == NULL);
    api->command->reply_int(ctx, api->transport->connect(ctx, transport, "127.0.0.1", 1, 0,
                                                         refused_done, NULL) == NULL);
    api->command->reply_int(ctx,
                            api->transport->conn_adopt(ctx, transport, -1, 0, NULL) == KEEL_ERR);
    /* the listener's descriptor is watched: adopting it would steal it */
    api->command->reply_int(ctx, api->transport->conn_adopt(ctx, transport, listen_fd, 0, NULL) ==
                                     KEEL_ERR);
}

static int add_commands(keel_ctx *ctx) {
    static const struct {
        const char *name;
        keel_command_fn fn;
        int arity;
    } cmds[] = {
        {"fdpipe.stats", cmd_stats, 1},
        {"fdpipe.public", cmd_public, 2},
        {"fdpipe.oneshot", cmd_oneshot, 1},
        {"fdpipe.refused", cmd_refused, 1},
        {"fdpipe.connfd", cmd_connfd, 1},
    };
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        keel_command_def def = {
            .size = sizeof(def), .name = cmds[i].name, .fn = cmds[i].fn, .arity = cmds[i].arity};
        if (api->command->register_command(ctx, &def) != KEEL_OK) return KEEL_ERR;
    }
    return KEEL_OK;
}

/* adoptfail: init adopts a connection (its handshake step may then be out
 * on an I/O thread) and refuses the load; the server closes the
 * connection, running its close hook, before the module goes. */
static int fp_adopt_and_fail(keel_ctx *ctx) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0) {
        fp_adopt(sv[0]);
        close(sv[1]);
    }
    api->core->set_error(ctx, "fdpipe: adoptfail");
    return KEEL_ERR;
}

static int fp_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    mod_ctx = ctx;
    accepted = closes = hs_steps = last_efd = oneshot_calls = wakes = conn_fd_watched = 0;
    next_seq = 0;
    public_next = 0;
    oneshot_fds[0] = oneshot_fds[1] = -1;
    if (!KEEL_API_HAS(api, transport, conn_wake)) {
        api->core->set_error(ctx, "this server has no ABI 1.4 transport API");
        return KEEL_ERR;
    }
    if (argc < 3 || argc > 4 || atoll(argv[1]) < 1) {
        api->core->set_error(
            ctx, "usage: fdpipe.so <socket path> <window> <local port> [noaddr|adoptfail]");
        return KEEL_ERR;
    }
    window = (size_t)atoll(argv[1]);
    local_port = atoi(argv[2]);
    keel_transport_def def = {.size = sizeof(def),
                              .name = "fdpipe",
                              .accept = fp_accept,
                              .handshake = fp_handshake,
                              .read = fp_read,
                              .writev = fp_writev,
                              .close = fp_close,
                              .flags = KEEL_TRANSPORT_OWN_FD,
                              .addr = argc == 4 && !strcmp(argv[3], "noaddr") ? NULL : fp_addr};
    if (!(transport = api->transport->register_transport(ctx, &def))) return KEEL_ERR;
    if (fp_listen(ctx, argv[0]) != KEEL_OK) {
        if (listen_fd != -1) close(listen_fd);
        api->core->set_error(ctx, "fdpipe: cannot listen on the socket path");
        return KEEL_ERR;
    }
    if (argc == 4 && !strcmp(argv[3], "adoptfail")) return fp_adopt_and_fail(ctx);
    return add_commands(ctx);
}

/* The module is stopped: nothing of it may run after this, so the api it
 * calls through is dropped (a hook that ran later would crash, as one
 * using state a real deinit freed would). The listener's watch and
 * descriptor are left as they are (see above). */
static int fp_deinit(keel_ctx *ctx) {
    (void)ctx;
    api = NULL;
    return KEEL_OK;
}

KEEL_MODULE("fdpipe", 1, fp_init, fp_deinit)
