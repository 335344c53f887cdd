/* module_transport.c -- the transport group: connection types provided by
 * modules (TLS, RDMA), mapped onto the core's conn_type.
 *
 * A registered transport gets its own conn_type whose I/O functions call
 * the module's hooks on an opaque keel_conn (the core's conn). Listening and
 * accepting reuse the TCP type's code (the sockets are TCP sockets); each
 * accepted connection then takes the server's normal admission path
 * (server_on_accept), runs the transport's handshake, and becomes a client.
 *
 * Connections carry a small record (conn->type_data): the module's state,
 * the accept continuation, and a guard so a connection closed from inside
 * one of its own handlers is freed only once the handler returns. */
#include "common/common.h"
#include "common/log.h"
#include "common/kmem.h"
#include "io/io_threads.h"
#include "module/module.h"
#include "module/module_internal.h"
#include "net/conn.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define TRANSPORT_NAME_MAX 32
/* keel_transport_def as ABI 1.0 defined it: everything up to priv. */
#define TRANSPORT_DEF_SIZE_1_0 (offsetof(keel_transport_def, priv) + sizeof(void *))

typedef struct module_conn {
    conn *cn;
    void *data; /* the transport's */
    conn_handler accept_done;
    int refs;    /* our handlers on the stack, or a handshake job out */
    int closing; /* closed while refs > 0 */
    int hs_rv;   /* the last handshake step's result (any thread writes) */
    struct module_conn *prev, *next;
} module_conn;

struct keel_transport {
    conn_type ct; /* what the core calls; conn->type points here */
    module *mod;
    char name[TRANSPORT_NAME_MAX + 1];
    keel_transport_def def;
    uint64_t nconns;
    module_conn *conns;
    keel_transport *next;
};

typedef struct module_listener {
    conn_listener l;
    keel_transport *t;
    struct module_listener *next;
} module_listener;

static keel_transport *transports;
static module_listener *listeners;

static keel_transport *conn_transport(const conn *cn) {
    return (keel_transport *)((const char *)cn->type - offsetof(keel_transport, ct));
}

static module_conn *conn_record(const conn *cn) {
    return cn->type_data;
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

static void mt_close_now(conn *cn) {
    keel_transport *t = conn_transport(cn);
    module_conn *mc = conn_record(cn);
    if (t->def.close) t->def.close((keel_conn *)cn, t->def.priv);
    if (cn->fd != -1) {
        event_del(cn->el, cn->fd, EV_READABLE | EV_WRITABLE);
        close(cn->fd);
    }
    mt_unlink(t, mc);
    km_free(mc);
    km_free(cn);
}

static void mt_close(conn *cn) {
    module_conn *mc = conn_record(cn);
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

static ssize_t mt_read(conn *cn, void *buf, size_t len) {
    keel_transport *t = conn_transport(cn);
    ssize_t n = t->def.read((keel_conn *)cn, buf, len, t->def.priv);
    mt_note_result(cn, n, 1);
    return n;
}

static ssize_t mt_writev(conn *cn, const struct iovec *iov, int iovcnt) {
    keel_transport *t = conn_transport(cn);
    ssize_t n = t->def.writev((keel_conn *)cn, iov, iovcnt, t->def.priv);
    mt_note_result(cn, n, 0);
    return n;
}

static ssize_t mt_write(conn *cn, const void *buf, size_t len) {
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return mt_writev(cn, &iov, 1);
}

static int mt_has_pending(conn *cn) {
    keel_transport *t = conn_transport(cn);
    return t->def.has_pending ? t->def.has_pending((keel_conn *)cn, t->def.priv) : 0;
}

/* The client's handlers. The client's read step reads again while the
 * transport reports buffered bytes (on whichever thread runs it). */
static void mt_event(event_loop *el, int fd, void *data, int mask) {
    conn *cn = data;
    module_conn *mc = conn_record(cn);
    mc->refs++;
    if ((mask & EV_READABLE) && cn->read_handler) {
        cn->read_handler(cn);
    } else if ((mask & EV_WRITABLE) && cn->write_handler) {
        cn->write_handler(cn);
    }
    mc->refs--;
    if (mc->closing && !mc->refs) mt_close_now(cn);
}

static int mt_set_handler(conn *cn, conn_handler fn, conn_handler *slot, int mask) {
    *slot = fn;
    if (fn) return event_add(cn->el, cn->fd, mask, mt_event, cn);
    event_del(cn->el, cn->fd, mask);
    return K_OK;
}

static int mt_set_read_handler(conn *cn, conn_handler fn) {
    return mt_set_handler(cn, fn, &cn->read_handler, EV_READABLE);
}

static int mt_set_write_handler(conn *cn, conn_handler fn) {
    return mt_set_handler(cn, fn, &cn->write_handler, EV_WRITABLE);
}

/* ---- accepting and the handshake ---- */

static void mt_handshake_step(conn *cn);

static void mt_handshake_event(event_loop *el, int fd, void *data, int mask) {
    mt_handshake_step(data);
}

/* One handshake step: touches only the connection (any thread). */
static void mt_handshake_run(conn *cn) {
    keel_transport *t = conn_transport(cn);
    conn_record(cn)->hs_rv = t->def.handshake ? t->def.handshake((keel_conn *)cn, t->def.priv) : KEEL_OK;
}

/* Acts on the step's result (main thread): done, wait for the socket, or
 * drop. */
static void mt_handshake_apply(conn *cn) {
    int rv = conn_record(cn)->hs_rv;
    if (rv == KEEL_OK) {
        cn->state = CONN_STATE_CONNECTED;
        conn_record(cn)->accept_done(cn);
    } else if (rv == KEEL_CONN_WANT_READ || rv == KEEL_CONN_WANT_WRITE) {
        int mask = rv == KEEL_CONN_WANT_READ ? EV_READABLE : EV_WRITABLE;
        if (event_add(cn->el, cn->fd, mask, mt_handshake_event, cn) != K_OK) mt_close(cn);
    } else {
        mt_close(cn);
    }
}

/* Runs a handshake step on an I/O thread when one is active (TLS key
 * exchanges are the expensive part of accepting), else inline. The socket
 * is not watched while the step is out. */
static void mt_handshake_step(conn *cn) {
    module_conn *mc = conn_record(cn);
    event_del(cn->el, cn->fd, EV_READABLE | EV_WRITABLE);
    if (io_threads_submit(IO_JOB_HANDSHAKE, cn, (uint64_t)cn->fd, 0) == K_OK) {
        mc->refs++; /* a close meanwhile waits for the job */
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
    module_conn *mc = conn_record(cn);
    mc->refs--;
    if (mc->closing) {
        if (!mc->refs) mt_close_now(cn);
        return;
    }
    mt_handshake_apply(cn);
}

void module_transport_setup(void) {
    io_threads_register(IO_JOB_HANDSHAKE, mt_handshake_job, mt_handshake_done);
}

static int mt_accept(conn *cn, conn_handler accept_done) {
    keel_transport *t = conn_transport(cn);
    conn_record(cn)->accept_done = accept_done;
    if (t->def.accept && t->def.accept((keel_conn *)cn, t->def.priv) != KEEL_OK) {
        mt_close(cn);
        return K_ERR;
    }
    mt_handshake_step(cn);
    return K_OK;
}

/* A socket accepted on a module listener: give it its record, then the
 * server's admission (maxclients, protected mode), which calls mt_accept. */
static void mt_on_accept(conn *cn, void *priv) {
    keel_transport *t = conn_transport(cn);
    module_conn *mc = km_calloc(1, sizeof(*mc));
    mc->cn = cn;
    mc->next = t->conns;
    if (t->conns) t->conns->prev = mc;
    t->conns = mc;
    t->nconns++;
    cn->type_data = mc;
    module_env_get()->on_accept(cn, NULL);
}

/* Listening and addresses are TCP's: the transport layers on TCP sockets. */
static int mt_listen(conn_listener *l, event_loop *el, char *err, size_t errlen) {
    return conn_type_tcp.listen(l, el, err, errlen);
}

static void mt_listen_close(conn_listener *l, event_loop *el) {
    conn_type_tcp.listen_close(l, el);
}

static int mt_addr(conn *cn, char *buf, size_t len, int remote) {
    return conn_type_tcp.addr(cn, buf, len, remote);
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
        .is_local = 0,
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
    return t;
}

static void listener_free(module_listener *ml) {
    for (int i = 0; i < ml->l.bindaddr_count; i++)
        km_free(ml->l.bindaddr[i]);
    km_free(ml);
}

static int api_listen(keel_ctx *ctx, keel_transport *t, const char *const *addrs, int naddrs,
                      int port) {
    MODULE_ASSERT_MAIN();
    char err[256];
    if (!t || t->mod != ctx->mod || !addrs || naddrs < 1 || naddrs > CONN_MAX_BINDS || port < 1 ||
        port > 65535 || !module_env_get()->el) {
        module_reg_error(ctx, "listen: invalid transport, addresses or port");
        return KEEL_ERR;
    }
    module_listener *ml = km_calloc(1, sizeof(*ml));
    ml->t = t;
    ml->l = (conn_listener){
        .type = &t->ct,
        .port = port,
        .backlog = *module_env_get()->tcp_backlog ? *module_env_get()->tcp_backlog : 511,
        .on_accept = mt_on_accept};
    for (int i = 0; i < naddrs; i++)
        ml->l.bindaddr[i] = km_strdup(addrs[i] ? addrs[i] : "*");
    ml->l.bindaddr_count = naddrs;
    if (t->ct.listen(&ml->l, module_env_get()->el, err, sizeof(err)) != K_OK) {
        t->ct.listen_close(&ml->l, module_env_get()->el); /* addresses bound before the failure */
        listener_free(ml);
        module_reg_error(ctx, "transport '%s': listen on port %d: %s", t->name, port, err);
        return KEEL_ERR;
    }
    ml->next = listeners;
    listeners = ml;
    log_write(LL_NOTICE, "<%s> transport '%s' listening on port %d", ctx->mod->name, t->name, port);
    return KEEL_OK;
}

/* Any thread: these read only the connection's own fields. */
static int api_conn_fd(keel_conn *kc) {
    return kc ? ((conn *)kc)->fd : -1;
}

static void api_conn_set_data(keel_conn *kc, void *data) {
    if (kc) conn_record((conn *)kc)->data = data;
}

static void *api_conn_get_data(keel_conn *kc) {
    return kc ? conn_record((conn *)kc)->data : NULL;
}

static keel_client *api_conn_client(keel_conn *kc) {
    MODULE_ASSERT_MAIN();
    return kc ? ((conn *)kc)->private_data : NULL;
}

static uint64_t api_conn_count(keel_transport *t) {
    MODULE_ASSERT_MAIN();
    return t ? t->nconns : 0;
}

/* ---- unload ---- */

uint64_t module_open_conns(const module *m) {
    uint64_t n = 0;
    for (keel_transport *t = transports; t; t = t->next)
        if (t->mod == m) n += t->nconns;
    return n;
}

static void module_listeners_release(module *m) {
    for (module_listener **pp = &listeners; *pp;) {
        module_listener *ml = *pp;
        if (ml->t->mod != m) {
            pp = &ml->next;
            continue;
        }
        *pp = ml->next;
        ml->l.type->listen_close(&ml->l, module_env_get()->el);
        listener_free(ml);
    }
}

/* Unload refuses while connections are open, so only teardown and a failed
 * init get here with some: clients are freed (closing their connection),
 * connections still in their handshake are closed. */
static void transport_close_all(keel_transport *t) {
    for (module_conn *mc = t->conns, *next; mc; mc = next) {
        next = mc->next;
        if (mc->cn->private_data)
            client_free(mc->cn->private_data);
        else
            conn_close(mc->cn);
    }
}

void module_transports_release(module *m) {
    module_listeners_release(m);
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
}

const keel_api_transport module_api_transport = {
    .size = sizeof(keel_api_transport),
    .register_transport = api_register_transport,
    .listen = api_listen,
    .conn_fd = api_conn_fd,
    .conn_set_data = api_conn_set_data,
    .conn_get_data = api_conn_get_data,
    .conn_client = api_conn_client,
    .conn_count = api_conn_count,
};
