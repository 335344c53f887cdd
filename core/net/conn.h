/* conn.h -- the connection-type interface: every byte a client sends or
 * receives goes through it.
 *
 * A conn_type is a table of functions (listen, accept, read, write, writev,
 * handler registration, close, address formatting). TCP and unix sockets are
 * built in (conn_socket.c); TLS and RDMA register their own types from
 * modules through the SDK, and I/O threads will call read/writev on
 * connections they temporarily own. The rule that makes both possible: the
 * core never touches a client's fd directly, only through conn_*().
 *
 * Threads: listen/accept/handler registration/close run on the main thread.
 * read/write/writev may run on an I/O thread that owns the connection at that
 * moment (never two threads at once). */
#ifndef KEEL_CONN_H
#define KEEL_CONN_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "event/event.h"

typedef struct conn conn;
typedef struct conn_type conn_type;
typedef struct conn_listener conn_listener;

typedef void (*conn_handler)(conn *c);
/* Called on the main thread for each accepted connection. */
typedef void (*conn_accept_fn)(conn *c, void *priv);

typedef enum conn_state {
    CONN_STATE_NONE = 0,
    CONN_STATE_ACCEPTING, /* transport handshake in progress (TLS) */
    CONN_STATE_CONNECTED,
    CONN_STATE_CLOSED,
    CONN_STATE_ERROR,
} conn_state;

#define CONN_MAX_BINDS 16

struct conn_listener {
    const conn_type *type;
    char *bindaddr[CONN_MAX_BINDS];
    int bindaddr_count;
    int port;          /* TCP-like types */
    const char *path;  /* unix sockets */
    unsigned int perm; /* unix socket permissions, 0 = leave as is */
    int backlog;
    int fds[CONN_MAX_BINDS];
    int count;
    conn_accept_fn on_accept;
    void *priv;
    /* Connections accepted per readable event at most (the live value of
     * max-new-connections-per-cycle or max-new-tls-connections-per-cycle,
     * so CONFIG SET applies at once); NULL: CONN_ACCEPT_BATCH. Bounding it
     * keeps a connection storm from starving the clients already served,
     * and a handshake-heavy transport from being handed more than its
     * threads can start. */
    const long long *accept_max;
};

struct conn_type {
    const char *name;
    /* Opens the listener's sockets and registers them with the loop.
     * Returns 0 or -1 with errno set and err filled. */
    int (*listen)(conn_listener *l, event_loop *el, char *err, size_t errlen);
    void (*listen_close)(conn_listener *l, event_loop *el);
    /* Finishes accepting (handshakes); calls accept_done when usable. */
    int (*accept)(conn *c, conn_handler accept_done);
    ssize_t (*read)(conn *c, void *buf, size_t len);
    ssize_t (*write)(conn *c, const void *buf, size_t len);
    ssize_t (*writev)(conn *c, const struct iovec *iov, int iovcnt);
    int (*set_read_handler)(conn *c, conn_handler fn);
    int (*set_write_handler)(conn *c, conn_handler fn);
    void (*close)(conn *c);
    /* Formats the peer (remote != 0) or local address as "ip:port" or path. */
    int (*addr)(conn *c, char *buf, size_t len, int remote);
    /* Bytes buffered inside the transport that a read would return without
     * touching the socket (TLS records); 0 for plain sockets. */
    int (*has_pending)(conn *c);
    /* After a read or write step, on the main thread (the step may have run
     * on an I/O thread): a transport acts on what the step left (the
     * direction an operation waits for, buffered bytes). May be NULL. */
    void (*after_io)(conn *c);
    int is_local; /* unix sockets: protected-mode does not apply */
    /* The descriptor is not a socket (a module transport's own, ABI 1.4):
     * no socket options are set on it. */
    int not_socket;
};

struct conn {
    const conn_type *type;
    event_loop *el;
    int fd;
    conn_state state;
    int last_errno;
    conn_handler read_handler;
    conn_handler write_handler;
    void *private_data; /* the client */
    void *type_data;    /* the transport's own state */
    /* A step of it is out on an I/O thread (main thread only): a transport
     * that learns of an event meanwhile runs it once the step is back. */
    int io_out;
};

/* Dispatch helpers: the only way the core does I/O. */
static inline ssize_t conn_read(conn *c, void *buf, size_t len) {
    return c->type->read(c, buf, len);
}
static inline ssize_t conn_write(conn *c, const void *buf, size_t len) {
    return c->type->write(c, buf, len);
}
static inline ssize_t conn_writev(conn *c, const struct iovec *iov, int iovcnt) {
    return c->type->writev(c, iov, iovcnt);
}
static inline int conn_set_read_handler(conn *c, conn_handler fn) {
    return c->type->set_read_handler(c, fn);
}
static inline int conn_set_write_handler(conn *c, conn_handler fn) {
    return c->type->set_write_handler(c, fn);
}
static inline void conn_close(conn *c) {
    c->type->close(c);
}
static inline void conn_after_io(conn *c) {
    if (c->type->after_io) c->type->after_io(c);
}
static inline int conn_addr(conn *c, char *buf, size_t len, int remote) {
    return c->type->addr(c, buf, len, remote);
}

/* Moves a listening socket-type listener (tcp, unix) from src to dst: the
 * loop's accept events carry the listener's address, so they are pointed at
 * dst. src is left without sockets. */
void conn_listener_move(conn_listener *dst, conn_listener *src, event_loop *el);

/* Built-in types. */
extern const conn_type conn_type_tcp;
extern const conn_type conn_type_unix;

/* Creates a conn for an accepted socket fd of a socket type (used by
 * transports layered on plain sockets, like TLS). */
conn *conn_socket_create(const conn_type *type, event_loop *el, int fd);

/* Socket options: K_ERR, touching nothing, for a type that is not_socket. */
int conn_set_nodelay(conn *c, int on);
int conn_set_keepalive(conn *c, int interval);
/* Blocking write of everything, with a timeout; used for the rejection
 * message sent to a client over maxclients. */
int conn_write_all_sync(conn *c, const void *buf, size_t len, int timeout_ms);

/* 1 for unix sockets and loopback peers (protected mode, DEBUG local). */
int conn_is_loopback(conn *cn);

#endif
