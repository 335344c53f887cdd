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

#include <string.h>

struct keel_fd_watch {
    module *mod;
    int fd;
    keel_fd_fn fn;
    void *udata;
    keel_fd_watch *prev, *next;
};

static keel_fd_watch *watches;

/* Descriptors of open adopted connections, by number. The loop does not
 * watch one while a step of its connection is out on an I/O thread, yet it
 * stays the connection's: fd_watch and conn_adopt refuse it all along. */
static unsigned char *adopted_fds;
static size_t adopted_cap;

static int fd_taken(event_loop *el, int fd) {
    return event_mask(el, fd) != EV_NONE || ((size_t)fd < adopted_cap && adopted_fds[fd]);
}

static void adopted_mark(int fd) {
    if ((size_t)fd >= adopted_cap) {
        size_t cap = adopted_cap ? adopted_cap : 64;
        while (cap <= (size_t)fd)
            cap *= 2;
        adopted_fds = km_realloc(adopted_fds, cap);
        memset(adopted_fds + adopted_cap, 0, cap - adopted_cap);
        adopted_cap = cap;
    }
    adopted_fds[fd] = 1;
}

void mt_adopted_forget(int fd) {
    if (fd >= 0 && (size_t)fd < adopted_cap) adopted_fds[fd] = 0;
}

void mt_adopted_free(void) {
    km_free(adopted_fds);
    adopted_fds = NULL;
    adopted_cap = 0;
}

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
    if (!ctx || fd < 0 || !fn || !el || fd_taken(el, fd)) return NULL;
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
    /* Only the module that registered t adopts onto it (as listen): the
     * connection's hooks and its unload check are that module's. */
    if (!module_on_main_thread() || !ctx || !t || t->mod != ctx->mod ||
        !(t->def.flags & KEEL_TRANSPORT_OWN_FD) || fd < 0 || !el ||
        fd_taken(el, fd)) /* a watch's or a connection's: its handlers would be replaced */
        return KEEL_ERR;
    conn *cn = conn_socket_create(&t->ct, el, fd); /* a bare conn, in its handshake */
    module_conn *mc = mt_conn_attach(t, cn);
    mc->data = data;
    mc->local_port = local_port;
    adopted_mark(fd);
    module_env_get()->on_accept(cn, NULL);
    return KEEL_OK;
}

void mt_api_conn_wake(keel_conn *kc) {
    MODULE_ASSERT_MAIN();
    if (kc && ((conn *)kc)->type->not_socket) mt_wake((conn *)kc);
}
