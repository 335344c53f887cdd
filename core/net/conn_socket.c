/* conn_socket.c -- the built-in connection types: TCP (IPv4, IPv6) and unix
 * domain sockets. Both share the plain-socket read/write path; they differ in
 * how they listen and how they format addresses. */
#include "net/conn.h"

#include "common/common.h"
#include "common/kmem.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <unistd.h>

#define CONN_ACCEPT_BATCH 1000

static int sock_nonblock(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags == -1) return K_ERR;
    return fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1 ? K_ERR : K_OK;
}

static ssize_t sock_read(conn *c, void *buf, size_t len) {
    ssize_t n = read(c->fd, buf, len);
    if (n == 0) {
        c->state = CONN_STATE_CLOSED;
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        c->last_errno = errno;
        c->state = CONN_STATE_ERROR;
    }
    return n;
}

static ssize_t sock_write(conn *c, const void *buf, size_t len) {
    ssize_t n = write(c->fd, buf, len);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
        c->last_errno = errno;
        c->state = CONN_STATE_ERROR;
    }
    return n;
}

static ssize_t sock_writev(conn *c, const struct iovec *iov, int iovcnt) {
    ssize_t n = writev(c->fd, iov, iovcnt);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
        c->last_errno = errno;
        c->state = CONN_STATE_ERROR;
    }
    return n;
}

static void sock_event(event_loop *el, int fd, void *data, int mask) {
    conn *c = data;
    if ((mask & EV_READABLE) && c->read_handler) c->read_handler(c);
    else if ((mask & EV_WRITABLE) && c->write_handler) c->write_handler(c);
}

static int sock_set_handler(conn *c, conn_handler fn, conn_handler *slot, int mask) {
    *slot = fn;
    if (fn) return event_add(c->el, c->fd, mask, sock_event, c);
    event_del(c->el, c->fd, mask);
    return K_OK;
}

static int sock_set_read_handler(conn *c, conn_handler fn) {
    return sock_set_handler(c, fn, &c->read_handler, EV_READABLE);
}

static int sock_set_write_handler(conn *c, conn_handler fn) {
    return sock_set_handler(c, fn, &c->write_handler, EV_WRITABLE);
}

static void sock_close(conn *c) {
    if (c->fd != -1) {
        event_del(c->el, c->fd, EV_READABLE | EV_WRITABLE);
        close(c->fd);
    }
    km_free(c);
}

static int sock_accept(conn *c, conn_handler accept_done) {
    c->state = CONN_STATE_CONNECTED;
    if (accept_done) accept_done(c);
    return K_OK;
}

static int sock_has_pending(conn *c) {
    return 0;
}

conn *conn_socket_create(const conn_type *type, event_loop *el, int fd) {
    conn *c = km_calloc(1, sizeof(*c));
    c->type = type;
    c->el = el;
    c->fd = fd;
    c->state = CONN_STATE_ACCEPTING;
    return c;
}

int conn_is_loopback(conn *cn) {
    char addr[128];
    if (cn->type->is_local) return 1;
    conn_addr(cn, addr, sizeof(addr), 1);
    return !strncmp(addr, "127.", 4) || !strncmp(addr, "[::1]:", 6);
}

/* ---- listening ---- */


static void sock_accept_event(event_loop *el, int fd, void *data, int mask) {
    conn_listener *l = data;
    long long max = l->accept_max ? *l->accept_max : CONN_ACCEPT_BATCH;
    for (long long i = 0; i < max; i++) {
        int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd == -1) return; /* EAGAIN, or an error the next event retries */
        conn *c = conn_socket_create(l->type, el, cfd);
        l->on_accept(c, l->priv);
    }
}

static int sock_listen_fd(conn_listener *l, event_loop *el, int fd, char *err, size_t errlen) {
    if (listen(fd, l->backlog) == -1 || sock_nonblock(fd) != K_OK ||
        event_add(el, fd, EV_READABLE, sock_accept_event, l) != K_OK) {
        snprintf(err, errlen, "listen: %s", strerror(errno));
        close(fd);
        return K_ERR;
    }
    l->fds[l->count++] = fd;
    return K_OK;
}

/* Binds one address. A leading '-' makes it optional: failure to bind an
 * address family the host lacks is then not an error (Valkey's "-::*"). */
static int tcp_bind_one(conn_listener *l, event_loop *el, const char *addr, char *err, size_t errlen) {
    int optional = addr[0] == '-';
    if (optional) addr++;
    int v6 = strchr(addr, ':') != NULL;
    const char *host = addr;
    if (strcmp(addr, "*") == 0 || strcmp(addr, "::*") == 0) host = NULL;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = v6 ? AF_INET6 : AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char port[16];
    snprintf(port, sizeof(port), "%d", l->port);
    int rv = getaddrinfo(host, port, &hints, &res);
    if (rv != 0) {
        if (optional) return K_OK;
        snprintf(err, errlen, "%s: %s", addr, gai_strerror(rv));
        return K_ERR;
    }
    int fd = -1;
    for (struct addrinfo *p = res; p; p = p->ai_next) {
        fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
        if (fd == -1) continue;
        int yes = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
        if (p->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &yes, sizeof(yes));
        if (bind(fd, p->ai_addr, p->ai_addrlen) == 0) break;
        snprintf(err, errlen, "bind %s:%d: %s", addr, l->port, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd == -1) {
        if (optional && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL || errno == EPROTONOSUPPORT))
            return K_OK;
        if (!err[0]) snprintf(err, errlen, "bind %s:%d: %s", addr, l->port, strerror(errno));
        return K_ERR;
    }
    return sock_listen_fd(l, el, fd, err, errlen);
}

static int tcp_listen(conn_listener *l, event_loop *el, char *err, size_t errlen) {
    err[0] = '\0';
    if (l->port == 0) return K_OK;
    for (int i = 0; i < l->bindaddr_count; i++)
        if (tcp_bind_one(l, el, l->bindaddr[i], err, errlen) != K_OK) return K_ERR;
    if (l->count == 0) {
        snprintf(err, errlen, "no address could be bound on port %d", l->port);
        return K_ERR;
    }
    return K_OK;
}

void conn_listener_move(conn_listener *dst, conn_listener *src, event_loop *el) {
    *dst = *src;
    for (int i = 0; i < dst->count; i++)
        event_add(el, dst->fds[i], EV_READABLE, sock_accept_event, dst);
    src->count = 0;
    src->bindaddr_count = 0;
}

static void sock_listen_close(conn_listener *l, event_loop *el) {
    for (int i = 0; i < l->count; i++) {
        event_del(el, l->fds[i], EV_READABLE);
        close(l->fds[i]);
    }
    l->count = 0;
}

static int unix_listen(conn_listener *l, event_loop *el, char *err, size_t errlen) {
    err[0] = '\0';
    if (!l->path || !l->path[0]) return K_OK;
    struct sockaddr_un sa = {0};
    if (strlen(l->path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "unix socket path too long: %s", l->path);
        return K_ERR;
    }
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, l->path);
    unlink(l->path); /* a stale socket from an earlier run */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd == -1 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
        snprintf(err, errlen, "bind %s: %s", l->path, strerror(errno));
        if (fd != -1) close(fd);
        return K_ERR;
    }
    if (l->perm) chmod(l->path, l->perm);
    return sock_listen_fd(l, el, fd, err, errlen);
}

static void unix_listen_close(conn_listener *l, event_loop *el) {
    sock_listen_close(l, el);
    if (l->path) unlink(l->path);
}

/* ---- addresses ---- */

static int tcp_addr(conn *c, char *buf, size_t len, int remote) {
    struct sockaddr_storage sa;
    socklen_t salen = sizeof(sa);
    int rv = remote ? getpeername(c->fd, (struct sockaddr *)&sa, &salen)
                    : getsockname(c->fd, (struct sockaddr *)&sa, &salen);
    if (rv == -1) {
        snprintf(buf, len, "?:0");
        return K_ERR;
    }
    char ip[INET6_ADDRSTRLEN];
    if (sa.ss_family == AF_INET) {
        struct sockaddr_in *s = (struct sockaddr_in *)&sa;
        inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
        snprintf(buf, len, "%s:%d", ip, ntohs(s->sin_port));
    } else {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&sa;
        inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
        snprintf(buf, len, "[%s]:%d", ip, ntohs(s->sin6_port)); /* as Valkey formats it */
    }
    return K_OK;
}

static int unix_addr(conn *c, char *buf, size_t len, int remote) {
    struct sockaddr_un sa;
    socklen_t salen = sizeof(sa);
    if (getsockname(c->fd, (struct sockaddr *)&sa, &salen) == -1) sa.sun_path[0] = '\0';
    snprintf(buf, len, "%s:0", sa.sun_path);
    return K_OK;
}

const conn_type conn_type_tcp = {
    .name = "tcp",
    .listen = tcp_listen,
    .listen_close = sock_listen_close,
    .accept = sock_accept,
    .read = sock_read,
    .write = sock_write,
    .writev = sock_writev,
    .set_read_handler = sock_set_read_handler,
    .set_write_handler = sock_set_write_handler,
    .close = sock_close,
    .addr = tcp_addr,
    .has_pending = sock_has_pending,
    .is_local = 0,
};

const conn_type conn_type_unix = {
    .name = "unix",
    .listen = unix_listen,
    .listen_close = unix_listen_close,
    .accept = sock_accept,
    .read = sock_read,
    .write = sock_write,
    .writev = sock_writev,
    .set_read_handler = sock_set_read_handler,
    .set_write_handler = sock_set_write_handler,
    .close = sock_close,
    .addr = unix_addr,
    .has_pending = sock_has_pending,
    .is_local = 1,
};

/* ---- options ---- */

int conn_set_nodelay(conn *c, int on) {
    if (c->type->not_socket) return K_ERR;
    return setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) == -1 ? K_ERR : K_OK;
}

int conn_set_keepalive(conn *c, int interval) {
    int yes = 1;
    if (c->type->not_socket) return K_ERR;
    if (setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &yes, sizeof(yes)) == -1) return K_ERR;
    /* Probes start after `interval` seconds and fail the link after about
     * another interval, as Valkey configures them. */
    int idle = interval, intvl = interval / 3 ? interval / 3 : 1, cnt = 3;
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    return K_OK;
}

int conn_write_all_sync(conn *c, const void *buf, size_t len, int timeout_ms) {
    const char *p = buf;
    while (len > 0) {
        ssize_t n = conn_write(c, p, len);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR) return K_ERR;
        if (c->type->not_socket) return K_ERR; /* nothing to poll for writability */
        struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
        if (poll(&pfd, 1, timeout_ms) <= 0) return K_ERR;
    }
    return K_OK;
}
