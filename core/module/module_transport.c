/* module_transport.c -- the transport group: connection types provided by
 * modules (TLS, RDMA), mapped onto the core's conn_type.
 *
 * A registered transport gets its own conn_type whose I/O functions call
 * the module's hooks on an opaque keel_conn (the core's conn). Listening and
 * accepting reuse the TCP type's code (the sockets are TCP sockets); each
 * accepted connection then takes the server's normal admission path
 * (server_on_accept), runs the transport's handshake, and becomes a client.
 *
 * Connections carry a small record (conn->type_data, module_transport.h):
 * the module's state, the accept continuation, a guard so a connection
 * closed from inside one of its own handlers is freed only once the handler
 * returns, and what conn_wait asked. Two things a plain socket never needs:
 *
 *  - A read or write may need the socket in the other direction (TLS: a
 *    read that must first send). The hook says so with conn_wait; the
 *    socket is then watched in that direction for that operation, and the
 *    same operation is retried when it fires.
 *  - A transport may hold bytes the socket will not announce again (TLS
 *    records read whole). A connection left with some after a read step is
 *    put on a list that module_transport_before_sleep runs again before the
 *    event loop sleeps (which then does not block), as Valkey does for TLS.
 *
 * A connection still in its handshake after the transport's
 * handshake_timeout_ms is logged and closed (a client that stops
 * mid-handshake holds nothing for longer).
 *
 * KEEL_TRANSPORT_OWN_FD transports (ABI 1.4, module_adopt.c starts their
 * connections) bring a descriptor that only ever becomes readable (RDMA's
 * completion channel): every direction an operation or a handshake waits
 * for is readability, the server never closes the descriptor (the close
 * hook does, after the server stopped watching it), and conn_wake lists a
 * connection on the pending list to run as if it were readable. Such a
 * descriptor may not announce again what it announced (the step that reads
 * consumes it), so a wake or a readability that finds a step out on an I/O
 * thread is kept (wake_deferred) and run once the step is back. */
#include "module/module_transport.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/log.h"
#include "io/io_threads.h"
#include "module/module.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* keel_transport_def as ABI 1.0 defined it: everything up to priv. */
#define TRANSPORT_DEF_SIZE_1_0 (offsetof(keel_transport_def, priv) + sizeof(void *))
#define HANDSHAKE_TIMEOUT_DEFAULT_MS 10000
/* How often handshakes are checked against their timeout. */
#define HANDSHAKE_CHECK_MS 100

static keel_transport *transports;
/* Connections with buffered bytes, and those module_transport_before_sleep
 * is running now (a handler may close any of them: it leaves its list). */
static module_conn *pending_head, *running_head;
static int64_t hs_timer;          /* the handshake timeout check, 0 if none */
static unsigned long hs_accepted; /* on the handshake lists (accepted only) */

keel_transport *mt_conn_transport(const conn *cn) {
    return (keel_transport *)((const char *)cn->type - offsetof(keel_transport, ct));
}

module_conn *mt_conn_record(const conn *cn) {
    return cn->type_data;
}

keel_transport *mt_transports(void) {
    return transports;
}

module_conn *mt_conn_attach(keel_transport *t, conn *cn) {
    module_conn *mc = km_calloc(1, sizeof(*mc));
    mc->cn = cn;
    mc->next = t->conns;
    if (t->conns) t->conns->prev = mc;
    t->conns = mc;
    t->nconns++;
    cn->type_data = mc;
    return mc;
}

/* ---- lists: handshakes in progress, buffered bytes ---- */

static void hs_link(keel_transport *t, module_conn *mc) {
    mc->in_hs = 1;
    hs_accepted++;
    mc->hs_start_ms = event_cached_ms();
    mc->hs_prev = t->hs_tail;
    mc->hs_next = NULL;
    if (t->hs_tail)
        t->hs_tail->hs_next = mc;
    else
        t->hs_head = mc;
    t->hs_tail = mc;
}

static void hs_unlink(keel_transport *t, module_conn *mc) {
    if (!mc->in_hs) return;
    mc->in_hs = 0;
    hs_accepted--;
    if (mc->hs_prev)
        mc->hs_prev->hs_next = mc->hs_next;
    else
        t->hs_head = mc->hs_next;
    if (mc->hs_next)
        mc->hs_next->hs_prev = mc->hs_prev;
    else
        t->hs_tail = mc->hs_prev;
}

#define PENDING_LISTED 1
#define PENDING_RUNNING 2

static void pending_remove(module_conn *mc) {
    if (!mc->pending) return;
    module_conn **head = mc->pending == PENDING_LISTED ? &pending_head : &running_head;
    mc->pending = 0;
    if (mc->pd_prev)
        mc->pd_prev->pd_next = mc->pd_next;
    else
        *head = mc->pd_next;
    if (mc->pd_next) mc->pd_next->pd_prev = mc->pd_prev;
}

static void pending_add(module_conn *mc) {
    if (mc->pending == PENDING_LISTED) return;
    pending_remove(mc);
    mc->pending = PENDING_LISTED;
    mc->pd_prev = NULL;
    mc->pd_next = pending_head;
    if (pending_head) pending_head->pd_prev = mc;
    pending_head = mc;
}

/* ---- closing ---- */

static void mt_unlink(keel_transport *t, module_conn *mc) {
    if (mc->prev)
        mc->prev->next = mc->next;
    else
        t->conns = mc->next;
    if (mc->next) mc->next->prev = mc->prev;
    t->nconns--;
}

/* The loop stops watching before the close hook runs: an OWN_FD
 * transport's hook closes the descriptor, whose number can be reused at
 * once. The server closes only sockets. */
static void mt_close_detach(conn *cn) {
    keel_transport *t = mt_conn_transport(cn);
    module_conn *mc = mt_conn_record(cn);
    if (cn->fd != -1) event_del(cn->el, cn->fd, EV_READABLE | EV_WRITABLE);
    if (cn->type->not_socket) mt_adopted_forget(cn->fd);
    if (t->def.close) t->def.close((keel_conn *)cn, t->def.priv);
    if (cn->fd != -1 && !cn->type->not_socket) close(cn->fd);
    hs_unlink(t, mc);
    pending_remove(mc);
    mt_dial_free(mc);
    mt_unlink(t, mc);
}

static void mt_close_now(conn *cn) {
    module_conn *mc = mt_conn_record(cn);
    mt_close_detach(cn);
    km_free(mc);
    km_free(cn);
}

void mt_close(conn *cn) {
    module_conn *mc = mt_conn_record(cn);
    if (!mc->refs) {
        mt_close_now(cn);
        return;
    }
    mc->closing = 1;
    cn->read_handler = cn->write_handler = NULL;
    event_del(cn->el, cn->fd, EV_READABLE | EV_WRITABLE);
}

/* ---- I/O ---- */

static void mt_note_result(conn *cn, ssize_t n, int is_read) {
    if (n == 0 && is_read) {
        cn->state = CONN_STATE_CLOSED;
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        cn->last_errno = errno;
        cn->state = CONN_STATE_ERROR;
    }
}

/* Before its handshake is done a connection has no transport state to
 * read or write through (a refused connection is closed unwritten). */
static int mt_refuse_io(const conn *cn) {
    if (cn->state == CONN_STATE_CONNECTED) return 0;
    errno = ENOTCONN;
    return 1;
}

/* Any thread that owns cn: the wait is the hook's only while it returns
 * EAGAIN. */
static ssize_t mt_read(conn *cn, void *buf, size_t len) {
    if (mt_refuse_io(cn)) return -1;
    keel_transport *t = mt_conn_transport(cn);
    module_conn *mc = mt_conn_record(cn);
    mc->read_wait_next = 0;
    mc->in_read = 1;
    ssize_t n = t->def.read((keel_conn *)cn, buf, len, t->def.priv);
    int again = n < 0 && errno == EAGAIN;
    mc->in_read = 0;
    if (!again) mc->read_wait_next = 0;
    mt_note_result(cn, n, 1);
    return n;
}

static ssize_t mt_writev(conn *cn, const struct iovec *iov, int iovcnt) {
    if (mt_refuse_io(cn)) return -1;
    keel_transport *t = mt_conn_transport(cn);
    module_conn *mc = mt_conn_record(cn);
    mc->write_wait_next = 0;
    mc->in_write = 1;
    ssize_t n = t->def.writev((keel_conn *)cn, iov, iovcnt, t->def.priv);
    int again = n < 0 && errno == EAGAIN;
    mc->in_write = 0;
    if (!again) mc->write_wait_next = 0;
    mt_note_result(cn, n, 0);
    return n;
}

static ssize_t mt_write(conn *cn, const void *buf, size_t len) {
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return mt_writev(cn, &iov, 1);
}

static int mt_has_pending(conn *cn) {
    keel_transport *t = mt_conn_transport(cn);
    return t->def.has_pending ? t->def.has_pending((keel_conn *)cn, t->def.priv) : 0;
}

/* The socket directions the handlers wait for: each operation's own unless
 * conn_wait asked for the other; always readability for an OWN_FD
 * transport's descriptor, which never announces anything else. */
static int mt_read_on(const module_conn *mc) {
    if (mc->cn->type->not_socket) return EV_READABLE;
    return mc->read_wait ? mc->read_wait : EV_READABLE;
}

static int mt_write_on(const module_conn *mc) {
    if (mc->cn->type->not_socket) return EV_READABLE;
    return mc->write_wait ? mc->write_wait : EV_WRITABLE;
}

static void mt_on_readable(event_loop *el, int fd, void *data, int mask);
static void mt_on_writable(event_loop *el, int fd, void *data, int mask);

/* Watches the socket for what the handlers wait for, nothing more. Readable
 * and writable events carry different data (cn, its record), so the loop
 * calls both when both fire. */
static void mt_watch(conn *cn) {
    module_conn *mc = mt_conn_record(cn);
    int want = 0;
    if (cn->read_handler) want |= mt_read_on(mc);
    if (cn->write_handler) want |= mt_write_on(mc);
    event_del(cn->el, cn->fd, (EV_READABLE | EV_WRITABLE) & ~want);
    int failed =
        (want & EV_READABLE) && event_add(cn->el, cn->fd, EV_READABLE, mt_on_readable, cn) != K_OK;
    failed |=
        (want & EV_WRITABLE) && event_add(cn->el, cn->fd, EV_WRITABLE, mt_on_writable, mc) != K_OK;
    if (failed)
        log_write(LL_WARNING, "transport '%s': cannot watch a connection's socket",
                  mt_conn_transport(cn)->name);
}

/* What a wake runs (module_conn.woken, wake_deferred). */
#define MT_RUN_READ 1
#define MT_RUN_WRITE 2

/* Calls a handler, unless a step is out on an I/O thread (the handler
 * would pass: one step at a time) and the descriptor will not say again
 * what it said: an OWN_FD one's readability may be consumed by the step
 * (the read that drained it), so the event is kept for when the step is
 * back. A socket's level-triggered events repeat by themselves. */
static void mt_call(conn *cn, conn_handler fn, int which) {
    if (cn->io_out && cn->type->not_socket)
        mt_conn_record(cn)->wake_deferred |= which;
    else
        fn(cn);
}

/* Runs the handlers waiting for `dir`, holding the connection open. An
 * OWN_FD descriptor's readability while a step is out stands for both
 * directions: the write handler is not even set during a write step, and
 * the read that runs first when the step is back may consume it. */
static void mt_dispatch(conn *cn, int dir) {
    module_conn *mc = mt_conn_record(cn);
    if (cn->io_out && cn->type->not_socket) {
        mc->wake_deferred |= MT_RUN_READ | MT_RUN_WRITE;
        return;
    }
    mc->refs++;
    if (cn->read_handler && (mt_read_on(mc) & dir)) mt_call(cn, cn->read_handler, MT_RUN_READ);
    if (!mc->closing && cn->write_handler && (mt_write_on(mc) & dir))
        mt_call(cn, cn->write_handler, MT_RUN_WRITE);
    mc->refs--;
    if (mc->closing && !mc->refs) mt_close_now(cn);
}

static void mt_on_readable(event_loop *el, int fd, void *data, int mask) {
    mt_dispatch(data, EV_READABLE);
}

static void mt_on_writable(event_loop *el, int fd, void *data, int mask) {
    mt_dispatch(((module_conn *)data)->cn, EV_WRITABLE);
}

static int mt_set_read_handler(conn *cn, conn_handler fn) {
    module_conn *mc = mt_conn_record(cn);
    cn->read_handler = fn;
    if (fn && mc->parked) { /* bytes buffered while nobody read */
        mc->parked = 0;
        pending_add(mc);
    }
    mt_watch(cn);
    return K_OK;
}

static int mt_set_write_handler(conn *cn, conn_handler fn) {
    cn->write_handler = fn;
    mt_watch(cn);
    return K_OK;
}

static void mt_wake_resume(module_conn *mc);

void mt_after_io(conn *cn) {
    module_conn *mc = mt_conn_record(cn);
    mc->read_wait = mc->read_wait_next;
    mc->write_wait = mc->write_wait_next;
    if (cn->state == CONN_STATE_CONNECTED && mt_has_pending(cn)) pending_add(mc);
    mt_watch(cn);
    if (!cn->io_out) mt_wake_resume(mc);
}

/* A wake: the handshake step if it is in one, else the handlers it asks
 * for (an OWN_FD connection's all wait for readability). What finds a step
 * out on an I/O thread is kept for when the step is back: only what was
 * skipped runs then, so a handler that starts a step does not make the
 * others wait forever. */
static void mt_run_wake(module_conn *mc) {
    conn *cn = mc->cn;
    int want = mc->woken;
    mc->woken = 0;
    if (cn->io_out) {
        mc->wake_deferred |= want;
        return;
    }
    if (mc->in_hs) {
        mt_handshake_step(cn);
        return;
    }
    mc->refs++;
    /* The list also stands for buffered bytes (has_pending): read them too. */
    if ((want & MT_RUN_READ || mt_has_pending(cn)) && cn->read_handler)
        mt_call(cn, cn->read_handler, MT_RUN_READ);
    if ((want & MT_RUN_WRITE) && !mc->closing && cn->write_handler)
        mt_call(cn, cn->write_handler, MT_RUN_WRITE);
    mc->refs--;
    if (mc->closing && !mc->refs) mt_close_now(cn);
}

static void mt_wake_some(module_conn *mc, int want) {
    if (mc->closing) return;
    mc->woken |= want;
    pending_add(mc);
}

/* What was kept while a step was out: listed again now it is back. */
static void mt_wake_resume(module_conn *mc) {
    int want = mc->wake_deferred;
    mc->wake_deferred = 0;
    if (want) mt_wake_some(mc, want);
}

void mt_wake(conn *cn) {
    mt_wake_some(mt_conn_record(cn), MT_RUN_READ | MT_RUN_WRITE);
}

void module_transport_before_sleep(void) {
    running_head = pending_head;
    pending_head = NULL;
    for (module_conn *mc = running_head; mc; mc = mc->pd_next)
        mc->pending = PENDING_RUNNING; /* a handler below may list it again */
    while (running_head) {
        module_conn *mc = running_head;
        pending_remove(mc);
        conn *cn = mc->cn;
        if (mc->woken) {
            mt_run_wake(mc);
            continue;
        }
        if (!cn->read_handler) {
            mc->parked = 1;
            continue;
        }
        mc->refs++;
        cn->read_handler(cn);
        mc->refs--;
        if (mc->closing && !mc->refs) mt_close_now(cn);
    }
}

void module_transport_prepare_sleep(void) {
    if (pending_head && module_env_get()->el) event_dont_wait(module_env_get()->el);
}

static void api_conn_wait(keel_conn *kc, int want) {
    if (!kc || (want != KEEL_CONN_READABLE && want != KEEL_CONN_WRITABLE)) return;
    module_conn *mc = mt_conn_record((conn *)kc);
    int dir = want == KEEL_CONN_READABLE ? EV_READABLE : EV_WRITABLE;
    if (mc->in_read) mc->read_wait_next = dir;
    if (mc->in_write) mc->write_wait_next = dir;
}

/* ---- the handshake ---- */

static void mt_handshake_event(event_loop *el, int fd, void *data, int mask) {
    mt_handshake_step(data);
}

/* One handshake step: touches only the connection (any thread). */
static void mt_handshake_run(conn *cn) {
    keel_transport *t = mt_conn_transport(cn);
    mt_conn_record(cn)->hs_rv =
        t->def.handshake ? t->def.handshake((keel_conn *)cn, t->def.priv) : KEEL_OK;
}

static void mt_fail(conn *cn) {
    if (mt_conn_record(cn)->dial)
        mt_dial_finished(cn, 0);
    else
        mt_close(cn);
}

/* Acts on the step's result (main thread): done, wait for the socket, or
 * drop. Bytes the last step buffered are read before the loop sleeps. */
static void mt_handshake_apply(conn *cn) {
    module_conn *mc = mt_conn_record(cn);
    int rv = mc->hs_rv;
    if (rv == KEEL_OK) {
        hs_unlink(mt_conn_transport(cn), mc);
        cn->state = CONN_STATE_CONNECTED;
        if (mt_has_pending(cn)) pending_add(mc);
        if (mc->dial)
            mt_dial_finished(cn, 1);
        else
            mc->accept_done(cn);
    } else if (rv == KEEL_CONN_WANT_READ || rv == KEEL_CONN_WANT_WRITE) {
        int mask = rv == KEEL_CONN_WANT_READ || cn->type->not_socket ? EV_READABLE : EV_WRITABLE;
        if (event_add(cn->el, cn->fd, mask, mt_handshake_event, cn) != K_OK) mt_fail(cn);
    } else {
        mt_fail(cn);
    }
}

/* Runs a handshake step on an I/O thread whenever there is one, else
 * inline. A step is submitted as a large job: a TLS key exchange costs
 * about 0.7 ms, and under a handshake load few events fire per loop turn,
 * so the load-following thread count is often 0 and small jobs would run
 * inline, in front of every established client (measured: a keep-alive
 * client beside 50 handshakes in flight fell to 5% of its requests/s).
 * As a large job it always leaves the main thread, and small jobs are not
 * queued behind it. The socket is not watched while the step is out. */
void mt_handshake_step(conn *cn) {
    module_conn *mc = mt_conn_record(cn);
    event_del(cn->el, cn->fd, EV_READABLE | EV_WRITABLE);
    if (io_threads_submit(IO_JOB_HANDSHAKE, cn, (uint64_t)cn->fd, IO_JOB_LARGE) == K_OK) {
        mc->refs++; /* a close meanwhile waits for the job */
        cn->io_out = 1;
        return;
    }
    mt_handshake_run(cn);
    mt_handshake_apply(cn);
}

static void mt_handshake_job(void *item) {
    mt_handshake_run(item);
}

static void mt_handshake_done(void *item) {
    conn *cn = item;
    module_conn *mc = mt_conn_record(cn);
    if (mc->orphan) { /* closed, and its transport gone, meanwhile */
        km_free(mc);
        km_free(cn);
        return;
    }
    mc->refs--;
    cn->io_out = 0;
    if (mc->closing) {
        if (!mc->refs) mt_close_now(cn);
        return;
    }
    mt_wake_resume(mc); /* before apply, which may free the connection */
    mt_handshake_apply(cn);
}

static int64_t mt_handshake_timeout(const keel_transport *t) {
    return t->def.handshake_timeout_ms > 0 ? t->def.handshake_timeout_ms
                                           : HANDSHAKE_TIMEOUT_DEFAULT_MS;
}

/* Closes the accepted connections whose handshake outlived the timeout
 * (each list is oldest first). One closed while its step is out on a
 * thread goes when the step is back. */
static int64_t mt_handshake_check(event_loop *el, int64_t id, void *data) {
    int64_t now = event_cached_ms();
    for (keel_transport *t = transports; t; t = t->next) {
        int64_t limit = mt_handshake_timeout(t);
        while (t->hs_head && now - t->hs_head->hs_start_ms >= limit) {
            module_conn *mc = t->hs_head;
            char addr[128] = "?";
            conn_addr(mc->cn, addr, sizeof(addr), 1);
            log_write(LL_NOTICE,
                      "transport '%s': handshake with %s timed out after %lld ms, closing it",
                      t->name, addr, (long long)limit);
            hs_unlink(t, mc);
            mt_close(mc->cn);
        }
    }
    return HANDSHAKE_CHECK_MS;
}

unsigned long module_transport_handshakes(void) {
    return hs_accepted;
}

void module_transport_setup(void) {
    io_threads_register(IO_JOB_HANDSHAKE, mt_handshake_job, mt_handshake_done);
}

static int mt_accept(conn *cn, conn_handler accept_done) {
    keel_transport *t = mt_conn_transport(cn);
    mt_conn_record(cn)->accept_done = accept_done;
    if (t->def.accept && t->def.accept((keel_conn *)cn, t->def.priv) != KEEL_OK) {
        mt_close(cn);
        return K_ERR;
    }
    hs_link(t, mt_conn_record(cn));
    mt_handshake_step(cn);
    return K_OK;
}

/* The transport's addr hook when it has one (ABI 1.4), else the TCP
 * socket's address. */
static int mt_addr(conn *cn, char *buf, size_t len, int remote) {
    keel_transport *t = mt_conn_transport(cn);
    if (!t->def.addr) return conn_type_tcp.addr(cn, buf, len, remote);
    if (len && t->def.addr((keel_conn *)cn, buf, len, remote != 0, t->def.priv) == KEEL_OK &&
        memchr(buf, '\0', len))
        return K_OK;
    snprintf(buf, len, "?:0");
    return K_ERR;
}

/* Listening is TCP's: the transport layers on TCP sockets. */
static int mt_listen(conn_listener *l, event_loop *el, char *err, size_t errlen) {
    return conn_type_tcp.listen(l, el, err, errlen);
}

static void mt_listen_close(conn_listener *l, event_loop *el) {
    conn_type_tcp.listen_close(l, el);
}

/* ---- registration ---- */

static int transport_check(keel_ctx *ctx, const keel_transport_def *d) {
    const char *why = NULL;
    if (!module_name_valid(d->name, TRANSPORT_NAME_MAX))
        why = "invalid name (1 to 32 characters of [a-z0-9_-])";
    else if (!d->read || !d->writev)
        why = "read and writev are required";
    else if (!strcmp(d->name, conn_type_tcp.name) || !strcmp(d->name, conn_type_unix.name))
        why = "name is built in";
    else if (d->handshake_timeout_ms < 0)
        why = "negative handshake_timeout_ms";
    else if (d->flags & ~(uint32_t)KEEL_TRANSPORT_OWN_FD)
        why = "unknown flags";
    else if ((d->flags & KEEL_TRANSPORT_OWN_FD) && !d->addr)
        why = "KEEL_TRANSPORT_OWN_FD requires an addr hook";
    for (keel_transport *t = transports; t && !why; t = t->next)
        if (!strcmp(t->name, d->name)) why = "name is already taken";
    if (why) module_reg_error(ctx, "transport '%s': %s", d->name ? d->name : "(null)", why);
    return why ? K_ERR : K_OK;
}

static void transport_init_type(keel_transport *t) {
    t->ct = (conn_type){
        .name = t->name,
        .listen = mt_listen,
        .listen_close = mt_listen_close,
        .accept = mt_accept,
        .read = mt_read,
        .write = mt_write,
        .writev = mt_writev,
        .set_read_handler = mt_set_read_handler,
        .set_write_handler = mt_set_write_handler,
        .close = mt_close,
        .addr = mt_addr,
        .has_pending = mt_has_pending,
        .after_io = mt_after_io,
        .is_local = 0,
        .not_socket = (t->def.flags & KEEL_TRANSPORT_OWN_FD) != 0,
    };
}

static keel_transport *api_register_transport(keel_ctx *ctx, const keel_transport_def *def) {
    MODULE_ASSERT_MAIN();
    keel_transport_def d;
    if (!module_in_init(ctx, "transports")) return NULL;
    if (!def || module_copy_def(&d, sizeof(d), def, TRANSPORT_DEF_SIZE_1_0) != K_OK) {
        module_reg_error(ctx, "register_transport: missing or too small keel_transport_def");
        return NULL;
    }
    if (transport_check(ctx, &d) != K_OK) return NULL;
    keel_transport *t = km_calloc(1, sizeof(*t));
    t->mod = ctx->mod;
    snprintf(t->name, sizeof(t->name), "%s", d.name);
    t->def = d;
    t->def.name = t->name;
    transport_init_type(t);
    t->next = transports;
    transports = t;
    event_loop *el = module_env_get()->el;
    if (!hs_timer && el)
        hs_timer = event_timer_add(el, HANDSHAKE_CHECK_MS, mt_handshake_check, NULL);
    return t;
}

/* Any thread: these read only the connection's own fields. */
static int api_conn_fd(keel_conn *kc) {
    return kc ? ((conn *)kc)->fd : -1;
}

static void api_conn_set_data(keel_conn *kc, void *data) {
    if (kc) mt_conn_record((conn *)kc)->data = data;
}

static void *api_conn_get_data(keel_conn *kc) {
    return kc ? mt_conn_record((conn *)kc)->data : NULL;
}

static keel_client *api_conn_client(keel_conn *kc) {
    MODULE_ASSERT_MAIN();
    return kc ? ((conn *)kc)->private_data : NULL;
}

static uint64_t api_conn_count(keel_transport *t) {
    MODULE_ASSERT_MAIN();
    return t ? t->nconns : 0;
}

static int api_conn_local_port(keel_conn *kc) {
    return kc ? mt_conn_record((conn *)kc)->local_port : 0;
}

static keel_transport *api_transport_find(const char *name) {
    MODULE_ASSERT_MAIN();
    for (keel_transport *t = transports; name && t; t = t->next)
        if (!strcmp(t->name, name)) return t;
    return NULL;
}

/* ---- unload ---- */

uint64_t module_open_conns(const module *m) {
    uint64_t n = 0;
    for (keel_transport *t = transports; t; t = t->next)
        if (t->mod == m) n += t->nconns;
    return n;
}

/* Unload refuses while connections are open, so only teardown and a failed
 * init get here with some: clients are freed (closing their connection),
 * other connections (in their handshake, outgoing) are closed. */
static void transport_close_all(keel_transport *t) {
    for (module_conn *mc = t->conns, *next; mc; mc = next) {
        next = mc->next;
        if (mc->cn->private_data)
            client_free(mc->cn->private_data);
        else
            mt_close(mc->cn);
    }
    /* One whose handshake step is out on an I/O thread (a failed init
     * adopted it) is only marked closing, yet t and the module's code go
     * once this returns: it is closed as soon as the step has run, and the
     * step's completion, which comes later, only frees it. */
    if (!t->nconns) return;
    io_threads_quiesce();
    for (module_conn *mc = t->conns, *next; mc; mc = next) {
        next = mc->next;
        if (!mc->cn->io_out) continue;
        mt_close_detach(mc->cn);
        mc->orphan = 1;
    }
}

/* Before deinit (shutdown, a load refused after init returned KEEL_OK):
 * connections still open (in their handshake, outgoing) are closed while
 * the module runs, so no close hook comes after deinit, as none does for
 * MODULE UNLOAD, which refuses while any is open. */
void module_transports_close(module *m) {
    for (keel_transport *t = transports; t; t = t->next)
        if (t->mod == m) transport_close_all(t);
}

void module_transports_release(module *m) {
    mt_listeners_release(m);
    for (keel_transport **pp = &transports; *pp;) {
        keel_transport *t = *pp;
        if (t->mod != m) {
            pp = &t->next;
            continue;
        }
        transport_close_all(t);
        *pp = t->next;
        km_free(t);
    }
    /* After the connections: their close hooks may unwatch what they own. */
    mt_fd_watches_release(m);
    if (!transports) mt_adopted_free();
    if (!transports && hs_timer) {
        event_timer_del(module_env_get()->el, hs_timer);
        hs_timer = 0;
    }
}

const keel_api_transport module_api_transport = {
    .size = sizeof(keel_api_transport),
    .register_transport = api_register_transport,
    .listen = mt_api_listen,
    .conn_fd = api_conn_fd,
    .conn_set_data = api_conn_set_data,
    .conn_get_data = api_conn_get_data,
    .conn_client = api_conn_client,
    .conn_count = api_conn_count,
    .listener_open = mt_api_listener_open,
    .listener_close = mt_api_listener_close,
    .conn_wait = api_conn_wait,
    .connect = mt_api_connect,
    .conn_set_handlers = mt_api_conn_set_handlers,
    .conn_read = mt_api_conn_read,
    .conn_write = mt_api_conn_write,
    .conn_close = mt_api_conn_close,
    .conn_host = mt_api_conn_host,
    .conn_local_port = api_conn_local_port,
    .transport_find = api_transport_find,
    .fd_watch = mt_api_fd_watch,
    .fd_unwatch = mt_api_fd_unwatch,
    .conn_adopt = mt_api_conn_adopt,
    .conn_wake = mt_api_conn_wake,
};
