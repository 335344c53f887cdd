/* module_transport.h -- what the transport files of core/module share: the
 * server-side structs behind keel_transport and keel_conn, and the steps
 * accepted and outgoing connections have in common.
 *
 *   module_transport.c  registration, I/O through the hooks, conn_wait,
 *                       buffered bytes (has_pending), handshakes and their
 *                       timeout, closing
 *   module_listener.c   listening ports (listen, listener_open/close, bind)
 *   module_dial.c       outgoing connections (connect and its handlers)
 *   module_adopt.c      module-owned descriptors (ABI 1.4): fd watches,
 *                       adopted connections, conn_wake
 *
 * Threads: main thread, except where a function says otherwise. */
#ifndef KEEL_MODULE_TRANSPORT_H
#define KEEL_MODULE_TRANSPORT_H

#include <stdint.h>

#include "keel/keel_module.h"
#include "module/module_internal.h"
#include "net/conn.h"

#define TRANSPORT_NAME_MAX 32

typedef struct module_dial module_dial; /* an outgoing connection's state */

typedef struct module_conn {
    conn *cn;
    void *data; /* the transport's */
    conn_handler accept_done;
    int refs;    /* our handlers on the stack, or a handshake job out */
    int closing; /* closed while refs > 0 */
    int orphan;  /* closed, its transport gone, while its handshake step was out */
    int hs_rv;   /* the last handshake step's result (any thread writes) */
    int local_port;
    /* conn_wait inside the running read or writev (written by the thread
     * that owns the connection): the direction that operation needs, 0 for
     * its own. */
    int in_read, in_write;
    int read_wait_next, write_wait_next;
    /* The same, as the main thread acts on it (copied after each step). */
    int read_wait, write_wait;
    int pending; /* on the list of connections with buffered bytes */
    int parked;  /* had buffered bytes while no read handler was set */
    int in_hs;   /* on its transport's handshake list */
    /* MT_RUN_* (module_transport.c): what conn_wake, or a handler skipped
     * while a step was out on an I/O thread, left to run; woken: listed on
     * the pending list for it, wake_deferred: until the step is back. */
    int woken, wake_deferred;
    int64_t hs_start_ms;
    module_dial *dial; /* NULL for an accepted connection */
    struct module_conn *hs_prev, *hs_next;
    struct module_conn *pd_prev, *pd_next;
    struct module_conn *prev, *next;
} module_conn;

struct keel_transport {
    conn_type ct; /* what the core calls; conn->type points here */
    module *mod;
    char name[TRANSPORT_NAME_MAX + 1];
    keel_transport_def def;
    uint64_t nconns;
    module_conn *conns;
    module_conn *hs_head, *hs_tail; /* in their handshake, oldest first */
    keel_transport *next;
};

keel_transport *mt_conn_transport(const conn *cn);
module_conn *mt_conn_record(const conn *cn);
/* Gives cn its record and counts it as one of t's connections. */
module_conn *mt_conn_attach(keel_transport *t, conn *cn);
/* Runs (or sends to an I/O thread) the next handshake step. */
void mt_handshake_step(conn *cn);
void mt_close(conn *cn);
/* After a read or write on the main thread: acts on conn_wait and on
 * bytes the transport buffered. */
void mt_after_io(conn *cn);
/* Runs cn before the loop next sleeps as if its descriptor were readable
 * (conn_wake); a closing connection is left alone. */
void mt_wake(conn *cn);
/* The first registered transport, for walking them all. */
keel_transport *mt_transports(void);

/* module_dial.c: an outgoing connection's handshake ended (ok: ready;
 * otherwise it failed: done(KEEL_ERR), then the connection closes). */
void mt_dial_finished(conn *cn, int ok);
/* Frees the dial state when its connection closes. */
void mt_dial_free(module_conn *mc);

/* module_listener.c */
void mt_listeners_release(module *m);

/* module_adopt.c: removes the fd watches m left; an adopted connection's
 * descriptor is no longer its own (it closes), or none is (no transport
 * is left). */
void mt_fd_watches_release(module *m);
void mt_adopted_forget(int fd);
void mt_adopted_free(void);

/* The group's members module_listener.c and module_dial.c implement. */
int mt_api_listen(keel_ctx *ctx, keel_transport *t, const char *const *addrs, int naddrs, int port);
keel_listener *mt_api_listener_open(keel_ctx *ctx, keel_transport *t, const char *const *addrs,
                                    int naddrs, int port);
void mt_api_listener_close(keel_listener *l);
keel_conn *mt_api_connect(keel_ctx *ctx, keel_transport *t, const char *host, int port,
                          int64_t timeout_ms, keel_conn_fn done, void *udata);
int mt_api_conn_set_handlers(keel_conn *kc, keel_conn_fn on_readable, keel_conn_fn on_writable,
                             void *udata);
ssize_t mt_api_conn_read(keel_conn *kc, void *buf, size_t len);
ssize_t mt_api_conn_write(keel_conn *kc, const void *buf, size_t len);
void mt_api_conn_close(keel_conn *kc);
const char *mt_api_conn_host(keel_conn *kc);
keel_fd_watch *mt_api_fd_watch(keel_ctx *ctx, int fd, keel_fd_fn fn, void *udata);
void mt_api_fd_unwatch(keel_fd_watch *w);
int mt_api_conn_adopt(keel_ctx *ctx, keel_transport *t, int fd, int local_port, void *data);
void mt_api_conn_wake(keel_conn *kc);

#endif
