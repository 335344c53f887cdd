/* module_adopt.c -- module-owned descriptors (ABI 1.4): what a
 * KEEL_TRANSPORT_OWN_FD transport such as RDMA needs to bring its own
 * connections rather than the server's TCP sockets.
 *
 *  - fd_watch/fd_unwatch: a descriptor of the module that is not a
 *    connection (RDMA's CM event channel, where its listener learns of new
 *    peers) is watched for readability on the main thread. Watches the
 *    module leaves are removed at unload; their descriptors stay its own.
 *  - conn_adopt: a connection over a descriptor the transport owns enters
 *    the path of an accepted socket (admission, accept hook, handshake,
 *    client), so everything a client has works for it unchanged.
 *  - conn_wake: an event the transport learned elsewhere (the peer left,
 *    seen on the CM channel) runs the connection as if its descriptor were
 *    readable (module_transport.c's pending list). */
#include "module/module_transport.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/log.h"
#include "module/module.h"

struct keel_fd_watch {
    module *mod;
    int fd;
    keel_fd_fn fn;
    void *udata;
    keel_fd_watch *prev, *next;
};

static keel_fd_watch *watches;

/* The loop level-triggers: fn runs again next turn while fd stays readable.
 * fn may fd_unwatch (free) w: nothing reads it after the call. */
static void fw_event(event_loop *el, int fd, void *data, int mask) {
    keel_fd_watch *w = data;
    w->fn(fd, w->udata);
}

keel_fd_watch *mt_api_fd_watch(keel_ctx *ctx, int fd, keel_fd_fn fn, void *udata) {
    MODULE_ASSERT_MAIN();
    event_loop *el = module_env_get()->el;
    /* A descriptor the loop watches already (a connection, another watch)
     * has its handlers: a second owner would replace them. */
    if (!ctx || fd < 0 || !fn || !el || event_mask(el, fd) != EV_NONE) return NULL;
    keel_fd_watch *w = km_calloc(1, sizeof(*w));
    *w = (keel_fd_watch){.mod = ctx->mod, .fd = fd, .fn = fn, .udata = udata, .next = watches};
    if (event_add(el, fd, EV_READABLE, fw_event, w) != K_OK) {
        km_free(w);
        return NULL;
    }
    if (watches) watches->prev = w;
    watches = w;
    return w;
}

void mt_api_fd_unwatch(keel_fd_watch *w) {
    MODULE_ASSERT_MAIN();
    if (!w) return;
    event_del(module_env_get()->el, w->fd, EV_READABLE);
    if (w->prev)
        w->prev->next = w->next;
    else
        watches = w->next;
    if (w->next) w->next->prev = w->prev;
    km_free(w);
}

void mt_fd_watches_release(module *m) {
    for (keel_fd_watch *w = watches, *next; w; w = next) {
        next = w->next;
        if (w->mod == m) mt_api_fd_unwatch(w);
    }
}

/* The server's admission path (server_on_accept) may close the connection
 * before this returns (maxclients, protected mode): the close hook then
 * has run and the module holds nothing of it. */
int mt_api_conn_adopt(keel_ctx *ctx, keel_transport *t, int fd, int local_port, void *data) {
    event_loop *el = module_env_get()->el;
    if (!module_on_main_thread() || !t || !(t->def.flags & KEEL_TRANSPORT_OWN_FD) || fd < 0 ||
        !el || event_mask(el, fd) != EV_NONE) /* a watch's: its handlers would be replaced */
        return KEEL_ERR;
    conn *cn = conn_socket_create(&t->ct, el, fd); /* a bare conn, in its handshake */
    module_conn *mc = mt_conn_attach(t, cn);
    mc->data = data;
    mc->local_port = local_port;
    module_env_get()->on_accept(cn, NULL);
    return KEEL_OK;
}

void mt_api_conn_wake(keel_conn *kc) {
    MODULE_ASSERT_MAIN();
    if (kc && ((conn *)kc)->type->not_socket) mt_wake((conn *)kc);
}
