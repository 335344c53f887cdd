/* module_dial.c -- outgoing connections of module transports (ABI 1.3
 * connect): replication, a proxy or a module's own client opening a
 * connection through "tls".
 *
 * connect resolves the host before it returns, then everything runs on the
 * event loop: a non-blocking TCP connect (trying each address the name
 * resolved to in turn), the transport's connect hook, its handshake steps
 * (on I/O threads like accepted connections' ones), and the module's done
 * callback, all bounded by one timer. Once ready, the connection is the
 * module's: it reads and writes through the transport's hooks (conn_read,
 * conn_write) from the handlers it set, and conn_wait and buffered bytes
 * work as for accepted connections (module_transport.c). An open outgoing
 * connection counts as one of its transport's connections, so MODULE
 * UNLOAD of the transport's module refuses while it is open. */
#include "module/module_transport.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/log.h"
#include "module/module.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DIAL_TIMEOUT_DEFAULT_MS 10000

struct module_dial {
    char *host;
    int port;
    struct addrinfo *addrs, *next_addr; /* the addresses left to try */
    int last_errno;
    int64_t timer; /* the whole connect's deadline, 0 once finished */
    keel_conn_fn done;
    void *udata;
    keel_conn_fn on_readable, on_writable;
    void *handler_udata;
    int finished; /* done was called, or the module closed it first */
    int failing;  /* done(KEEL_ERR) is running: the server closes it after */
};

static module_dial *dial_of(keel_conn *kc) {
    return kc ? mt_conn_record((conn *)kc)->dial : NULL;
}

static void dial_fail(conn *cn, const char *why) {
    module_dial *d = mt_conn_record(cn)->dial;
    log_write(LL_NOTICE, "transport '%s': connection to %s:%d failed: %s",
              mt_conn_transport(cn)->name, d->host, d->port, why);
    mt_dial_finished(cn, 0);
}

void mt_dial_finished(conn *cn, int ok) {
    module_conn *mc = mt_conn_record(cn);
    module_dial *d = mc->dial;
    if (d->finished) return;
    d->finished = 1;
    if (d->timer) event_timer_del(cn->el, d->timer);
    d->timer = 0;
    if (ok) {
        d->done((keel_conn *)cn, KEEL_OK, d->udata);
        return;
    }
    mc->refs++;
    d->failing = 1;
    d->done((keel_conn *)cn, KEEL_ERR, d->udata);
    mc->refs--;
    mt_close(cn);
}

void mt_dial_free(module_conn *mc) {
    module_dial *d = mc->dial;
    if (!d) return;
    if (d->timer) event_timer_del(mc->cn->el, d->timer);
    if (d->addrs) freeaddrinfo(d->addrs);
    km_free(d->host);
    km_free(d);
    mc->dial = NULL;
}

static void dial_connected(event_loop *el, int fd, void *data, int mask);

/* Starts a TCP connect to the next address; K_ERR when none is left. */
static int dial_try_next(conn *cn) {
    module_dial *d = mt_conn_record(cn)->dial;
    if (cn->fd != -1) {
        event_del(cn->el, cn->fd, EV_READABLE | EV_WRITABLE);
        close(cn->fd);
        cn->fd = -1;
    }
    while (d->next_addr) {
        struct addrinfo *a = d->next_addr;
        d->next_addr = a->ai_next;
        int fd =
            socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd == -1) {
            d->last_errno = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
            d->last_errno = errno;
            close(fd);
            continue;
        }
        cn->fd = fd;
        if (event_add(cn->el, fd, EV_WRITABLE, dial_connected, cn) == K_OK) return K_OK;
        d->last_errno = errno;
        close(fd);
        cn->fd = -1;
    }
    return K_ERR;
}

/* The TCP connect finished: on to the transport's connect hook and the
 * handshake, or the next address. */
static void dial_connected(event_loop *el, int fd, void *data, int mask) {
    conn *cn = data;
    module_dial *d = mt_conn_record(cn)->dial;
    keel_transport *t = mt_conn_transport(cn);
    int err = 0;
    socklen_t len = sizeof(err);
    event_del(el, fd, EV_WRITABLE);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err) {
        d->last_errno = err;
        if (dial_try_next(cn) != K_OK) dial_fail(cn, strerror(d->last_errno));
        return;
    }
    if (t->def.connect((keel_conn *)cn, t->def.priv) != KEEL_OK) {
        dial_fail(cn, "the transport refused it");
        return;
    }
    mt_handshake_step(cn);
}

/* The deadline passed, or (at once) no address could even be tried. */
static int64_t dial_timer(event_loop *el, int64_t id, void *data) {
    conn *cn = data;
    module_dial *d = mt_conn_record(cn)->dial;
    d->timer = 0;
    if (d->next_addr || cn->fd != -1)
        dial_fail(cn, "timed out");
    else
        dial_fail(cn, strerror(d->last_errno ? d->last_errno : ECONNREFUSED));
    return EV_TIMER_STOP;
}

keel_conn *mt_api_connect(keel_ctx *ctx, keel_transport *t, const char *host, int port,
                          int64_t timeout_ms, keel_conn_fn done, void *udata) {
    MODULE_ASSERT_MAIN();
    event_loop *el = module_env_get()->el;
    if (!t || !t->def.connect || (t->def.flags & KEEL_TRANSPORT_OWN_FD) || !host || !done ||
        port < 1 || port > 65535 || timeout_ms < 0 || !el)
        return NULL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    int rv = getaddrinfo(host, service, &hints, &res);
    if (rv != 0) {
        log_write(LL_NOTICE, "<%s> connect: cannot resolve %s: %s", ctx->mod->name, host,
                  gai_strerror(rv));
        return NULL;
    }
    conn *cn = conn_socket_create(&t->ct, el, -1);
    module_conn *mc = mt_conn_attach(t, cn);
    module_dial *d = km_calloc(1, sizeof(*d));
    *d = (module_dial){.host = km_strdup(host),
                       .port = port,
                       .addrs = res,
                       .next_addr = res,
                       .done = done,
                       .udata = udata};
    mc->dial = d;
    int64_t ms = timeout_ms ? timeout_ms : DIAL_TIMEOUT_DEFAULT_MS;
    d->timer = event_timer_add(el, dial_try_next(cn) == K_OK ? ms : 0, dial_timer, cn);
    return (keel_conn *)cn;
}

static void dial_on_readable(conn *cn) {
    module_dial *d = mt_conn_record(cn)->dial;
    d->on_readable((keel_conn *)cn, KEEL_OK, d->handler_udata);
}

static void dial_on_writable(conn *cn) {
    module_dial *d = mt_conn_record(cn)->dial;
    d->on_writable((keel_conn *)cn, KEEL_OK, d->handler_udata);
}

/* A connection the module may use: outgoing, ready, not closed. */
static int dial_usable(keel_conn *kc) {
    module_dial *d = dial_of(kc);
    return d && d->finished && !d->failing && !mt_conn_record((conn *)kc)->closing &&
           ((conn *)kc)->fd != -1;
}

int mt_api_conn_set_handlers(keel_conn *kc, keel_conn_fn on_readable, keel_conn_fn on_writable,
                             void *udata) {
    MODULE_ASSERT_MAIN();
    if (!dial_usable(kc)) return KEEL_ERR;
    conn *cn = (conn *)kc;
    module_dial *d = dial_of(kc);
    d->on_readable = on_readable;
    d->on_writable = on_writable;
    d->handler_udata = udata;
    conn_set_read_handler(cn, on_readable ? dial_on_readable : NULL);
    conn_set_write_handler(cn, on_writable ? dial_on_writable : NULL);
    return KEEL_OK;
}

ssize_t mt_api_conn_read(keel_conn *kc, void *buf, size_t len) {
    MODULE_ASSERT_MAIN();
    if (!dial_usable(kc) || !buf) {
        errno = ENOTCONN;
        return -1;
    }
    ssize_t n = conn_read((conn *)kc, buf, len);
    int saved = errno;
    mt_after_io((conn *)kc);
    errno = saved;
    return n;
}

ssize_t mt_api_conn_write(keel_conn *kc, const void *buf, size_t len) {
    MODULE_ASSERT_MAIN();
    if (!dial_usable(kc) || !buf) {
        errno = ENOTCONN;
        return -1;
    }
    ssize_t n = conn_write((conn *)kc, buf, len);
    int saved = errno;
    mt_after_io((conn *)kc);
    errno = saved;
    return n;
}

void mt_api_conn_close(keel_conn *kc) {
    MODULE_ASSERT_MAIN();
    module_dial *d = dial_of(kc);
    if (!d || d->failing || mt_conn_record((conn *)kc)->closing) return;
    d->finished = 1; /* no done after this */
    mt_close((conn *)kc);
}

const char *mt_api_conn_host(keel_conn *kc) {
    module_dial *d = dial_of(kc);
    return d ? d->host : NULL;
}
