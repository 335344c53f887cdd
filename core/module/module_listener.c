/* module_listener.c -- the listening ports of module transports: listen
 * (ABI 1.0, for the module's life) and listener_open/listener_close (ABI
 * 1.3, a handle the module closes when its port changes).
 *
 * A listener opened without addresses listens on the server's `bind`
 * addresses (Valkey's defaults when there are none) and follows them:
 * CONFIG SET bind reopens it on the new ones (module_transport_rebind). The
 * sockets are TCP's; what is accepted on them gets its record and then the
 * server's admission path, which calls the transport's accept. */
#include "module/module_transport.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/log.h"
#include "module/module.h"

#include <stdio.h>
#include <string.h>

struct keel_listener {
    conn_listener l;
    keel_transport *t;
    int follows_bind; /* opened on the server's bind addresses */
    keel_listener *next;
};

static keel_listener *listeners;

/* A socket accepted on a module listener: give it its record, then the
 * server's admission (maxclients, protected mode), which calls the
 * transport's accept. */
static void ml_on_accept(conn *cn, void *priv) {
    keel_listener *ml = priv;
    module_conn *mc = mt_conn_attach(mt_conn_transport(cn), cn);
    mc->local_port = ml->l.port;
    module_env_get()->on_accept(cn, NULL);
}

static void ml_free_addrs(conn_listener *l) {
    for (int i = 0; i < l->bindaddr_count; i++)
        km_free(l->bindaddr[i]);
    l->bindaddr_count = 0;
}

/* l set up for t on port and addrs, or the server's bind addresses (as the
 * server's own TCP listener takes them). Not listening yet. */
static void ml_init(conn_listener *l, keel_listener *ml, const char *const *addrs, int naddrs,
                    int port) {
    static const char *const dflt[] = {"*", "-::*"};
    const module_env *env = module_env_get();
    if (!addrs) {
        naddrs = *env->bindaddr_count;
        addrs = naddrs ? (const char *const *)env->bindaddr : dflt;
        if (!naddrs) naddrs = 2;
    }
    *l = (conn_listener){.type = &ml->t->ct,
                         .port = port,
                         .backlog = *env->tcp_backlog ? *env->tcp_backlog : 511,
                         .on_accept = ml_on_accept,
                         .priv = ml,
                         .accept_max = ml->t->def.handshake ? env->accept_max_handshake : NULL};
    for (int i = 0; i < naddrs; i++)
        l->bindaddr[i] = km_strdup(addrs[i] ? addrs[i] : "*");
    l->bindaddr_count = naddrs;
}

/* Opens l; K_ERR with err filled and nothing left open. */
static int ml_listen(conn_listener *l, char *err, size_t errlen) {
    event_loop *el = module_env_get()->el;
    if (l->type->listen(l, el, err, errlen) == K_OK) return K_OK;
    l->type->listen_close(l, el); /* addresses bound before the failure */
    return K_ERR;
}

static keel_listener *ml_open(keel_ctx *ctx, keel_transport *t, const char *const *addrs,
                              int naddrs, int port) {
    char err[256];
    if (!t || !module_env_get()->el || port < 1 || port > 65535 ||
        (addrs ? naddrs < 1 || naddrs > CONN_MAX_BINDS : naddrs != 0)) {
        module_reg_error(ctx, "listen: invalid transport, addresses or port");
        return NULL;
    }
    if (t->def.flags & KEEL_TRANSPORT_OWN_FD) {
        module_reg_error(ctx,
                         "transport '%s' brings its own connections (KEEL_TRANSPORT_OWN_FD): "
                         "the server cannot listen for it",
                         t->name);
        return NULL;
    }
    keel_listener *ml = km_calloc(1, sizeof(*ml));
    ml->t = t;
    ml->follows_bind = addrs == NULL;
    ml_init(&ml->l, ml, addrs, naddrs, port);
    if (ml_listen(&ml->l, err, sizeof(err)) != K_OK) {
        ml_free_addrs(&ml->l);
        km_free(ml);
        module_reg_error(ctx, "transport '%s': listen on port %d: %s", t->name, port, err);
        return NULL;
    }
    ml->next = listeners;
    listeners = ml;
    log_write(LL_NOTICE, "<%s> transport '%s' listening on port %d", ctx->mod->name, t->name, port);
    return ml;
}

int mt_api_listen(keel_ctx *ctx, keel_transport *t, const char *const *addrs, int naddrs,
                  int port) {
    MODULE_ASSERT_MAIN();
    if (!addrs || (t && t->mod != ctx->mod)) {
        module_reg_error(ctx, "listen: invalid transport, addresses or port");
        return KEEL_ERR;
    }
    return ml_open(ctx, t, addrs, naddrs, port) ? KEEL_OK : KEEL_ERR;
}

keel_listener *mt_api_listener_open(keel_ctx *ctx, keel_transport *t, const char *const *addrs,
                                    int naddrs, int port) {
    MODULE_ASSERT_MAIN();
    if (t && t->mod != ctx->mod) {
        module_reg_error(ctx, "listener_open: transport '%s' is another module's", t->name);
        return NULL;
    }
    return ml_open(ctx, t, addrs, naddrs, port);
}

static void ml_close(keel_listener *ml) {
    ml->l.type->listen_close(&ml->l, module_env_get()->el);
    ml_free_addrs(&ml->l);
    km_free(ml);
}

void mt_api_listener_close(keel_listener *l) {
    MODULE_ASSERT_MAIN();
    for (keel_listener **pp = &listeners; l && *pp; pp = &(*pp)->next) {
        if (*pp != l) continue;
        *pp = l->next;
        log_write(LL_NOTICE, "<%s> transport '%s' stopped listening on port %d", l->t->mod->name,
                  l->t->name, l->l.port);
        ml_close(l);
        return;
    }
}

/* Reopens ml on the current bind addresses. When the new ones cannot be
 * bound beside the old sockets (the same port), the old ones close first
 * and come back if the new ones still fail. */
static int ml_rebind(keel_listener *ml, char *err, size_t errlen) {
    conn_listener next;
    event_loop *el = module_env_get()->el;
    ml_init(&next, ml, NULL, 0, ml->l.port);
    int rv = ml_listen(&next, err, errlen);
    if (rv != K_OK) {
        ml->l.type->listen_close(&ml->l, el);
        rv = ml_listen(&next, err, errlen);
        char again[256];
        if (rv != K_OK && ml_listen(&ml->l, again, sizeof(again)) != K_OK)
            log_write(LL_WARNING, "transport '%s': could not listen again on port %d: %s",
                      ml->t->name, ml->l.port, again);
    }
    if (rv != K_OK) {
        ml_free_addrs(&next);
        return K_ERR;
    }
    ml->l.type->listen_close(&ml->l, el);
    ml_free_addrs(&ml->l);
    conn_listener_move(&ml->l, &next, el);
    return K_OK;
}

int module_transport_rebind(void) {
    int rv = K_OK;
    char err[256];
    for (keel_listener *ml = listeners; ml; ml = ml->next) {
        if (!ml->follows_bind) continue;
        if (ml_rebind(ml, err, sizeof(err)) == K_OK) continue;
        log_write(LL_WARNING, "transport '%s': failed to listen on port %d: %s", ml->t->name,
                  ml->l.port, err);
        rv = K_ERR;
    }
    return rv;
}

int module_listening(void) {
    for (keel_listener *ml = listeners; ml; ml = ml->next)
        if (ml->l.count) return 1;
    return 0;
}

void mt_listeners_release(module *m) {
    for (keel_listener **pp = &listeners; *pp;) {
        keel_listener *ml = *pp;
        if (ml->t->mod != m) {
            pp = &ml->next;
            continue;
        }
        *pp = ml->next;
        ml_close(ml);
    }
}
