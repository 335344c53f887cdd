/* pm_http.c -- the optional HTTP listener serving GET /metrics.
 *
 * The module ABI has no way to add a file descriptor to the server's event
 * loop, and a module thread could not read the statistics (they have one
 * writer, the main thread, and no lock). So the listener is a non-blocking
 * socket polled from a module timer on the main thread, every
 * PM_HTTP_POLL_MS while it is open: one poll(2) over the listener and the
 * open connections, with a zero timeout, then accept/recv/send on the ones
 * that are ready. An idle listener costs one poll(2) per tick; the server
 * never blocks on a scraper.
 *
 * HTTP/1.0 and 1.1, one request per connection ("Connection: close"):
 *   GET|HEAD /metrics[?...]  200, text/plain; version=0.0.4 (Prometheus)
 *   GET|HEAD /               200, a one-line pointer to /metrics
 *   other paths              404
 *   other methods            405 (Allow: GET, HEAD)
 *   malformed request line   400;  not HTTP/1.x  505
 *   headers over 8 KB        431
 *   more than PM_HTTP_MAX_CONNS connections at once: 503, then close
 * A connection that has not finished within PM_HTTP_TIMEOUT_MS is closed.
 * After the response the socket is shut down for writing and drained
 * until the peer closes (or a short timeout), so a client that sent more
 * than the request line never gets a reset in the middle of its response. */
#include "pm_internal.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PM_HTTP_POLL_MS 10
#define PM_HTTP_MAX_CONNS 32
#define PM_HTTP_REQ_MAX 8192
#define PM_HTTP_TIMEOUT_MS 10000
#define PM_HTTP_DRAIN_MS 1000
#define PM_HTTP_ACCEPTS_PER_TICK 64

enum { CONN_READ, CONN_WRITE, CONN_DRAIN };

typedef struct pm_conn {
    int fd;
    int state;
    int64_t deadline; /* ms */
    size_t inlen;
    char in[PM_HTTP_REQ_MAX];
    pm_buf out;
    size_t sent;
} pm_conn;

static struct {
    int lfd; /* -1: not listening */
    char addr[64];
    int port;
    /* what pm_http_start_later asked for, opened on the first tick */
    int pending;
    char want_addr[64];
    int want_port;
    keel_timer *timer;
    pm_conn *conns[PM_HTTP_MAX_CONNS];
    int nconns;
    uint64_t requests;
} http = {.lfd = -1};

/* ---- sockets ---- */

/* "*" -> any IPv4, "::*" or "::" -> any IPv6, else a numeric address. */
static int pm_http_resolve(const char *addr, int port, struct addrinfo **res, char *err,
                           size_t errlen) {
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
    const char *host = addr;
    if (!strcmp(addr, "*") || !strcmp(addr, "0.0.0.0")) {
        host = NULL;
        hints.ai_family = AF_INET;
    } else if (!strcmp(addr, "::*") || !strcmp(addr, "::")) {
        host = NULL;
        hints.ai_family = AF_INET6;
    }
    int rv = getaddrinfo(host, service, &hints, res);
    if (rv != 0) {
        snprintf(err, errlen, "payload-metrics: bad prometheus-bind address '%s': %s", addr,
                 gai_strerror(rv));
        return KEEL_ERR;
    }
    return KEEL_OK;
}

static int pm_http_open(const char *addr, int port, int do_listen, char *err, size_t errlen) {
    struct addrinfo *res;
    if (pm_http_resolve(addr, port, &res, err, errlen) != KEEL_OK) return -1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0 && res->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) < 0 || (do_listen && listen(fd, 128) < 0)) {
        snprintf(err, errlen, "payload-metrics: cannot listen on %s:%d for Prometheus: %s", addr,
                 port, strerror(errno));
        if (fd >= 0) close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

int pm_http_probe(const char *addr, int port, char *err, size_t errlen) {
    if (port == 0) return KEEL_OK;
    int fd = pm_http_open(addr, port, 0, err, errlen);
    if (fd < 0) return KEEL_ERR;
    close(fd);
    return KEEL_OK;
}

/* ---- connections ---- */

static void pm_conn_close(int i) {
    pm_conn *c = http.conns[i];
    close(c->fd);
    pm_buf_free(&c->out);
    pm_api->core->free(c);
    http.conns[i] = http.conns[--http.nconns];
    http.conns[http.nconns] = NULL;
}

static const char *pm_http_reason(int status) {
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 431:
        return "Request Header Fields Too Large";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Error";
    }
}

/* Fills out with the whole response. */
static void pm_http_respond(pm_buf *out, int status, const char *ctype, const char *body,
                            size_t blen, int head_only) {
    pm_buf_printf(out,
                  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                  "Cache-Control: no-store\r\n%sConnection: close\r\n\r\n",
                  status, pm_http_reason(status), ctype, blen,
                  status == 405 ? "Allow: GET, HEAD\r\n" : "");
    if (!head_only && blen) pm_buf_append(out, body, blen);
}

static void pm_http_error(pm_buf *out, int status) {
    char body[96];
    int n = snprintf(body, sizeof(body), "%d %s\n", status, pm_http_reason(status));
    pm_http_respond(out, status, "text/plain; charset=utf-8", body, (size_t)n, 0);
}

/* The end of the header block ("\r\n\r\n" or "\n\n"), or NULL. */
static const char *pm_http_headers_end(const char *s, size_t len) {
    for (size_t i = 0; i + 1 < len; i++) {
        if (s[i] != '\n') continue;
        if (s[i + 1] == '\n') return s + i + 2;
        if (i + 2 < len && s[i + 1] == '\r' && s[i + 2] == '\n') return s + i + 3;
    }
    return NULL;
}

static int pm_token_eq(const char *s, size_t len, const char *lit) {
    return strlen(lit) == len && !memcmp(s, lit, len);
}

/* Parses the request line and builds the response into c->out. */
static void pm_http_handle(pm_conn *c) {
    const char *line = c->in, *eol = memchr(c->in, '\n', c->inlen);
    size_t llen = (size_t)(eol - line);
    if (llen && line[llen - 1] == '\r') llen--;
    for (size_t i = 0; i < llen; i++) {
        unsigned char ch = (unsigned char)line[i];
        if (ch < 0x20 || ch == 0x7f) {
            pm_http_error(&c->out, 400);
            return;
        }
    }
    const char *sp1 = memchr(line, ' ', llen);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', llen - (size_t)(sp1 + 1 - line)) : NULL;
    if (!sp1 || !sp2 || sp1 == line || sp2 == sp1 + 1 ||
        memchr(sp2 + 1, ' ', llen - (size_t)(sp2 + 1 - line))) {
        pm_http_error(&c->out, 400);
        return;
    }
    const char *method = line, *target = sp1 + 1, *version = sp2 + 1;
    size_t mlen = (size_t)(sp1 - line), tlen = (size_t)(sp2 - target);
    size_t vlen = llen - (size_t)(version - line);
    if (vlen < 8 || memcmp(version, "HTTP/", 5)) {
        pm_http_error(&c->out, 400);
        return;
    }
    if (memcmp(version, "HTTP/1.", 7)) {
        pm_http_error(&c->out, 505);
        return;
    }
    int head = pm_token_eq(method, mlen, "HEAD");
    if (!head && !pm_token_eq(method, mlen, "GET")) {
        pm_http_error(&c->out, 405);
        return;
    }
    const char *q = memchr(target, '?', tlen);
    size_t plen = q ? (size_t)(q - target) : tlen;
    if (pm_token_eq(target, plen, "/metrics")) {
        pm_buf body = {0};
        pm_prom_render(&body);
        pm_http_respond(&c->out, 200, "text/plain; version=0.0.4; charset=utf-8", body.p, body.len,
                        head);
        pm_buf_free(&body);
    } else if (pm_token_eq(target, plen, "/")) {
        static const char idx[] = "Keel payload-metrics: Prometheus metrics at /metrics\n";
        pm_http_respond(&c->out, 200, "text/plain; charset=utf-8", idx, sizeof(idx) - 1, head);
    } else {
        pm_http_error(&c->out, 404);
    }
}

static void pm_conn_start_write(pm_conn *c, int64_t now) {
    c->state = CONN_WRITE;
    c->sent = 0;
    c->deadline = now + PM_HTTP_TIMEOUT_MS;
    http.requests++;
}

/* Returns 0 to keep the connection, -1 to close it. */
static int pm_conn_read(pm_conn *c, int64_t now) {
    for (;;) {
        if (c->inlen == sizeof(c->in)) {
            pm_http_error(&c->out, 431);
            pm_conn_start_write(c, now);
            return 0;
        }
        ssize_t n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, 0);
        if (n > 0) {
            c->inlen += (size_t)n;
            if (pm_http_headers_end(c->in, c->inlen)) {
                pm_http_handle(c);
                pm_conn_start_write(c, now);
                return 0;
            }
            continue;
        }
        if (n == 0) return -1; /* closed before a whole request */
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
}

static int pm_conn_write(pm_conn *c, int64_t now) {
    while (c->sent < c->out.len) {
        ssize_t n = send(c->fd, c->out.p + c->sent, c->out.len - c->sent, MSG_NOSIGNAL);
        if (n > 0) {
            c->sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
    pm_buf_free(&c->out);
    shutdown(c->fd, SHUT_WR);
    c->state = CONN_DRAIN;
    c->deadline = now + PM_HTTP_DRAIN_MS;
    return 0;
}

static int pm_conn_drain(pm_conn *c) {
    char scratch[1024];
    for (;;) {
        ssize_t n = recv(c->fd, scratch, sizeof(scratch), 0);
        if (n > 0) continue;
        if (n < 0 && errno == EINTR) continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
}

static int pm_conn_step(pm_conn *c, int64_t now) {
    if (c->state == CONN_READ && pm_conn_read(c, now) < 0) return -1;
    if (c->state == CONN_WRITE && pm_conn_write(c, now) < 0) return -1;
    if (c->state == CONN_DRAIN) return pm_conn_drain(c);
    return 0;
}

static void pm_http_accept(int64_t now) {
    for (int i = 0; i < PM_HTTP_ACCEPTS_PER_TICK; i++) {
        int fd = accept4(http.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return; /* EAGAIN, or an aborted connection */
        if (http.nconns == PM_HTTP_MAX_CONNS) {
            static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                       "Connection: close\r\n\r\n";
            ssize_t n = send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL);
            (void)n;
            close(fd);
            continue;
        }
        pm_conn *c = pm_api->core->calloc(1, sizeof(*c));
        c->fd = fd;
        c->state = CONN_READ;
        c->deadline = now + PM_HTTP_TIMEOUT_MS;
        http.conns[http.nconns++] = c;
        /* Most clients send the request with the handshake: try it now. */
        if (pm_conn_step(c, now) < 0) pm_conn_close(http.nconns - 1);
    }
}

/* ---- the listener ---- */

static void pm_http_close_listener(void) {
    if (http.lfd >= 0) close(http.lfd);
    http.lfd = -1;
    http.port = 0;
    http.addr[0] = '\0';
}

static int64_t pm_http_tick(keel_ctx *ctx, void *priv);

static int pm_http_ensure_timer(void) {
    if (http.timer) return KEEL_OK;
    http.timer = pm_api->hooks->timer_add(pm_ctx, 0, pm_http_tick, NULL);
    return http.timer ? KEEL_OK : KEEL_ERR;
}

static int64_t pm_http_tick(keel_ctx *ctx, void *priv) {
    (void)ctx, (void)priv;
    int64_t now = pm_api->core->mstime();
    if (http.pending) {
        char err[256];
        http.pending = 0;
        if (pm_http_configure(http.want_addr, http.want_port, err, sizeof(err)) != KEEL_OK)
            pm_api->core->log(pm_ctx, KEEL_LOG_WARNING, "%s", err);
    }
    if (http.lfd < 0 && http.nconns == 0) {
        http.timer = NULL; /* the server frees it when we return STOP */
        return KEEL_TIMER_STOP;
    }
    struct pollfd fds[PM_HTTP_MAX_CONNS + 1];
    int n = 0;
    for (int i = 0; i < http.nconns; i++) {
        fds[n].fd = http.conns[i]->fd;
        fds[n].events = http.conns[i]->state == CONN_WRITE ? POLLOUT : POLLIN;
        fds[n++].revents = 0;
    }
    int nc = n;
    if (http.lfd >= 0) {
        fds[n].fd = http.lfd;
        fds[n].events = POLLIN;
        fds[n++].revents = 0;
    }
    if (poll(fds, (nfds_t)n, 0) < 0) return PM_HTTP_POLL_MS;
    /* Connections first (backwards: closing moves the last one into i). */
    for (int i = nc - 1; i >= 0; i--) {
        pm_conn *c = http.conns[i];
        if ((fds[i].revents && pm_conn_step(c, now) < 0) || now > c->deadline) pm_conn_close(i);
    }
    if (http.lfd >= 0 && fds[nc].revents) pm_http_accept(now);
    return PM_HTTP_POLL_MS;
}

int pm_http_configure(const char *addr, int port, char *err, size_t errlen) {
    http.pending = 0; /* a CONFIG SET before the first tick wins */
    if (port == 0) {
        pm_http_close_listener(); /* open connections finish their response */
        return KEEL_OK;
    }
    if (http.lfd >= 0 && http.port == port && !strcmp(http.addr, addr)) return KEEL_OK;
    char old_addr[64];
    int old_port = http.port, fd;
    snprintf(old_addr, sizeof(old_addr), "%s", http.addr);
    if (http.lfd >= 0 && old_port == port) {
        /* The same port on another address may clash with the old socket:
         * close it first, and reopen it if the new one fails. */
        pm_http_close_listener();
        fd = pm_http_open(addr, port, 1, err, errlen);
        if (fd < 0) {
            char ignored[256];
            http.lfd = pm_http_open(old_addr, old_port, 1, ignored, sizeof(ignored));
            if (http.lfd >= 0) {
                http.port = old_port;
                snprintf(http.addr, sizeof(http.addr), "%s", old_addr);
            }
            return KEEL_ERR;
        }
    } else {
        fd = pm_http_open(addr, port, 1, err, errlen);
        if (fd < 0) return KEEL_ERR;
        pm_http_close_listener();
    }
    http.lfd = fd;
    http.port = port;
    snprintf(http.addr, sizeof(http.addr), "%s", addr);
    if (pm_http_ensure_timer() != KEEL_OK) {
        pm_http_close_listener();
        snprintf(err, errlen, "payload-metrics: cannot add the HTTP poll timer");
        return KEEL_ERR;
    }
    pm_api->core->log(pm_ctx, KEEL_LOG_NOTICE, "Prometheus metrics on http://%s:%d/metrics", addr,
                      port);
    return KEEL_OK;
}

int pm_http_start_later(const char *addr, int port) {
    http.pending = 1;
    http.want_port = port;
    snprintf(http.want_addr, sizeof(http.want_addr), "%s", addr);
    return pm_http_ensure_timer();
}

/* A previous instance of this object (unloaded, or refused after init) may
 * have left values here; none of its sockets or timers is live. */
void pm_http_reset_state(void) {
    memset(&http, 0, sizeof(http));
    http.lfd = -1;
}

void pm_http_shutdown(void) {
    while (http.nconns)
        pm_conn_close(http.nconns - 1);
    pm_http_close_listener();
    /* The server removes the module's timers after deinit. */
    http.timer = NULL;
    http.pending = 0;
}

int pm_http_listening(void) {
    return http.lfd >= 0;
}

uint64_t pm_http_requests(void) {
    return http.requests;
}

uint64_t pm_http_open_conns(void) {
    return (uint64_t)http.nconns;
}

int pm_http_addr_valid(const char *addr, char *err, size_t errlen) {
    struct addrinfo *res;
    if (pm_http_resolve(addr, 1, &res, err, errlen) != KEEL_OK) return 0;
    freeaddrinfo(res);
    return 1;
}
