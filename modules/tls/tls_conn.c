/* tls_conn.c -- the transport hooks: one SSL object per connection, made
 * on the main thread (accept, connect) from the live context, then driven
 * on whichever I/O thread owns the connection (handshake, read, writev,
 * has_pending). OpenSSL's error queue is per thread, so each SSL call is
 * preceded by ERR_clear_error and its errors are read right after, on the
 * same thread. Statistics are relaxed atomics; per-connection errors are
 * logged through a per-second cap so a flood of bad clients cannot flood
 * the log. */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* Empties this thread's error queue before an SSL call. Every failure
 * path below empties it after reading it, so it is nearly always empty
 * already; ERR_clear_error costs about 2,000 instructions in OpenSSL 3.0
 * (it walks every slot) against about 200 for the peek, a tenth of a TLS
 * GET's cost at -P 16. */
static inline void tls_err_reset(void) {
    if (ERR_peek_error()) ERR_clear_error();
}

/* One TLS record's worth of plaintext, the most one SSL_write is given:
 * with SSL_MODE_ENABLE_PARTIAL_WRITE it sends one record per call anyway,
 * and a retry (at most this long) then always fits in what the server
 * offers again, even after a write that returned a partial count. Small
 * iovecs are gathered into one record. */
#define TLS_STAGE_SIZE 16384
/* iovecs at least this long are written in place. */
#define TLS_DIRECT_MIN 8192
/* Per-connection log lines allowed per second, all connections together. */
#define TLS_LOG_PER_SEC 20

typedef struct tls_conn {
    SSL *ssl;
    int outgoing;
    int handshaking;
    int failed; /* a fatal TLS error: no close_notify */
    int port;   /* the listener's, for the per-port counts; 0 outgoing */
    /* The last read wanted more bytes: what OpenSSL holds is part of a
     * record, which the socket's next bytes complete (no re-read now). */
    int read_starved;
    /* A write that returned WANT_*: the retry must pass the same bytes and
     * length (OpenSSL's rule; the server passes the same bytes again at
     * the front of iov, and the address may move). */
    size_t retry_len;
    char peer[64];
} tls_conn;

/* Small iovecs are gathered here: one per thread, as the bytes need not
 * outlive the call (a retry gathers them again). */
static _Thread_local char tls_stage[TLS_STAGE_SIZE];

static _Atomic long long tls_log_second;
static atomic_int tls_log_count;

static void tls_log_limited(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tls_log_limited(int level, const char *fmt, ...) {
    /* A line the server would drop costs nothing from the budget: routine
     * verbose lines under connection churn must not crowd out warnings. */
    if (level < atomic_load_explicit(&tls.min_log_level, memory_order_relaxed)) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long now = ts.tv_sec, seen = atomic_load_explicit(&tls_log_second, memory_order_relaxed);
    if (seen != now && atomic_compare_exchange_strong(&tls_log_second, &seen, now)) {
        long long dropped = atomic_exchange(&tls.stats.log_suppressed, 0);
        atomic_store(&tls_log_count, 0);
        if (dropped)
            tls.api->core->log(tls.ctx, KEEL_LOG_WARNING,
                               "%lld TLS connection log lines suppressed in the last second(s)",
                               dropped);
    }
    if (atomic_fetch_add_explicit(&tls_log_count, 1, memory_order_relaxed) >= TLS_LOG_PER_SEC) {
        atomic_fetch_add_explicit(&tls.stats.log_suppressed, 1, memory_order_relaxed);
        return;
    }
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    tls.api->core->log(tls.ctx, level, "%s", line);
}

static void tls_peer_of(int fd, char *buf, size_t len) {
    struct sockaddr_storage sa;
    socklen_t sl = sizeof(sa);
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (getpeername(fd, (struct sockaddr *)&sa, &sl) == 0) {
        if (sa.ss_family == AF_INET) {
            struct sockaddr_in *s = (struct sockaddr_in *)&sa;
            inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
            port = ntohs(s->sin_port);
        } else if (sa.ss_family == AF_INET6) {
            struct sockaddr_in6 *s = (struct sockaddr_in6 *)&sa;
            inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
            port = ntohs(s->sin6_port);
        }
    }
    snprintf(buf, len, "%s:%d", ip, port);
}

/* A port's slot stays while TLS listens on it or it has connections: a
 * port left behind gives its slot to the next one. */
static void tls_port_release(tls_port_stats *p) {
    if (p->current <= 0 && p->port != tls.listener_port) memset(p, 0, sizeof(*p));
}

static void tls_port_count(int port, int delta_current, int accepted) {
    tls_port_stats *free_slot = NULL;
    for (int i = 0; i < TLS_MAX_PORTS; i++) {
        tls_port_stats *p = &tls.ports[i];
        if (p->port == port) {
            p->current += delta_current;
            p->accepted += accepted;
            tls_port_release(p);
            return;
        }
        if (!p->port && !free_slot) free_slot = p;
    }
    if (free_slot) {
        free_slot->port = port;
        free_slot->current = delta_current;
        free_slot->accepted = accepted;
    }
}

void tls_ports_sweep(void) {
    for (int i = 0; i < TLS_MAX_PORTS; i++)
        if (tls.ports[i].port) tls_port_release(&tls.ports[i]);
}

/* Makes the connection's state and SSL from ctx (main thread). */
static int tls_conn_new(keel_conn *conn, SSL_CTX *ctx, int outgoing) {
    const keel_api *api = tls.api;
    tls_conn *c = api->core->calloc(1, sizeof(*c));
    api->transport->conn_set_data(conn, c);
    c->outgoing = outgoing;
    tls_peer_of(api->transport->conn_fd(conn), c->peer, sizeof(c->peer));
    ERR_clear_error();
    c->ssl = ctx ? SSL_new(ctx) : NULL;
    if (!c->ssl || SSL_set_fd(c->ssl, api->transport->conn_fd(conn)) != 1) {
        tls_log_limited(KEEL_LOG_WARNING, "TLS: cannot set up a session for %s%s", c->peer,
                        ctx ? "" : " (TLS is not configured)");
        ERR_clear_error();
        SSL_free(c->ssl); /* close then finds no session to count */
        c->ssl = NULL;
        return KEEL_ERR;
    }
    c->handshaking = 1;
    atomic_fetch_add_explicit(&tls.stats.hs_in_progress, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&tls.stats.current, 1, memory_order_relaxed);
    return KEEL_OK;
}

/* OpenSSL refuses a renegotiation (SSL_OP_NO_RENEGOTIATION) with a
 * no_renegotiation alert and goes on; this says so in the log. Called only
 * on handshake steps and alerts, on the thread running the SSL call. */
static void tls_info_cb(const SSL *ssl, int where, int ret) {
    if (!(where & SSL_CB_WRITE_ALERT) || (ret & 0xff) != SSL_AD_NO_RENEGOTIATION) return;
    const tls_conn *c = SSL_get_app_data(ssl);
    tls_log_limited(KEEL_LOG_WARNING, "TLS renegotiation attempt from %s refused",
                    c ? c->peer : "?");
}

static int tls_accept(keel_conn *conn, void *priv) {
    (void)priv;
    atomic_fetch_add_explicit(&tls.stats.accepted, 1, memory_order_relaxed);
    if (tls_conn_new(conn, tls.live ? tls.live->server : NULL, 0) != KEEL_OK) return KEEL_ERR;
    tls_conn *c = tls.api->transport->conn_get_data(conn);
    c->port = tls.api->transport->conn_local_port(conn);
    tls_port_count(c->port, 1, 1);
    int mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    if (tls.cfg.auth_clients == TLS_AUTH_NO)
        mode = SSL_VERIFY_NONE;
    else if (tls.cfg.auth_clients == TLS_AUTH_OPTIONAL)
        mode = SSL_VERIFY_PEER;
    SSL_set_verify(c->ssl, mode, NULL);
    SSL_set_app_data(c->ssl, c);
    SSL_set_info_callback(c->ssl, tls_info_cb);
    SSL_set_accept_state(c->ssl);
    return KEEL_OK;
}

/* The outgoing side: the client context (or the server's certificate as
 * the client's, as Valkey), SNI and a hostname check for names, and the
 * server's certificate always verified against the CA. */
static int tls_connect(keel_conn *conn, void *priv) {
    (void)priv;
    atomic_fetch_add_explicit(&tls.stats.connected, 1, memory_order_relaxed);
    tls_ctxs *live = tls.live;
    SSL_CTX *ctx = live ? (live->client ? live->client : live->server) : NULL;
    if (tls_conn_new(conn, ctx, 1) != KEEL_OK) return KEEL_ERR;
    tls_conn *c = tls.api->transport->conn_get_data(conn);
    SSL_set_verify(c->ssl, SSL_VERIFY_PEER, NULL);
    const char *host = tls.api->transport->conn_host(conn);
    unsigned char bin[sizeof(struct in6_addr)];
    int literal =
        host && (inet_pton(AF_INET, host, bin) == 1 || inet_pton(AF_INET6, host, bin) == 1);
    /* An address is checked against the certificate's IP SANs, a name
     * against its DNS SANs (and sent as SNI). */
    if (literal && X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) != 1) {
        ERR_clear_error();
        return KEEL_ERR;
    }
    if (host && !literal) {
        SSL_set_tlsext_host_name(c->ssl, host);
        SSL_set_hostflags(c->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (SSL_set1_host(c->ssl, host) != 1) {
            ERR_clear_error();
            return KEEL_ERR;
        }
    }
    SSL_set_connect_state(c->ssl);
    return KEEL_OK;
}

static void tls_handshake_end(tls_conn *c, int ok) {
    c->handshaking = 0;
    atomic_fetch_sub_explicit(&tls.stats.hs_in_progress, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(ok ? &tls.stats.hs_completed : &tls.stats.hs_failed, 1,
                              memory_order_relaxed);
}

/* Why a handshake failed, in words: the certificate check's verdict when
 * that was it, else OpenSSL's reason ("wrong version number" for a
 * plain-text client, "http request", "no shared cipher", ...). */
static void tls_handshake_why(tls_conn *c, int err, char *buf, size_t len) {
    long vr = SSL_get_verify_result(c->ssl);
    unsigned long e = ERR_peek_last_error();
    if (vr != X509_V_OK && (!e || ERR_GET_REASON(e) == SSL_R_CERTIFICATE_VERIFY_FAILED))
        snprintf(buf, len, "certificate verify failed: %s", X509_verify_cert_error_string(vr));
    else if (e)
        ERR_error_string_n(e, buf, len);
    else if (err == SSL_ERROR_SYSCALL)
        snprintf(buf, len, "%s", errno ? strerror(errno) : "connection closed by peer");
    else
        snprintf(buf, len, "TLS error %d", err);
}

static int tls_handshake(keel_conn *conn, void *priv) {
    (void)priv;
    tls_conn *c = tls.api->transport->conn_get_data(conn);
    tls_err_reset();
    errno = 0;
    int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        tls_handshake_end(c, 1);
        if (SSL_session_reused(c->ssl))
            atomic_fetch_add_explicit(&tls.stats.resumed, 1, memory_order_relaxed);
        return KEEL_OK;
    }
    int err = SSL_get_error(c->ssl, r);
    if (err == SSL_ERROR_WANT_READ) return KEEL_CONN_WANT_READ;
    if (err == SSL_ERROR_WANT_WRITE) return KEEL_CONN_WANT_WRITE;
    char why[256];
    tls_handshake_why(c, err, why, sizeof(why));
    /* A peer that just went away (OpenSSL 3 reports an end of stream
     * inside the handshake as an SSL error: every TCP health check that
     * connects and closes) is routine; a protocol or certificate failure
     * is what an operator looks for. */
    int routine = err != SSL_ERROR_SSL ||
                  ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
    ERR_clear_error();
    tls_handshake_end(c, 0);
    c->failed = 1;
    tls_log_limited(routine ? KEEL_LOG_VERBOSE : KEEL_LOG_WARNING, "TLS handshake %s %s failed: %s",
                    c->outgoing ? "to" : "from", c->peer, why);
    return KEEL_ERR;
}

/* An SSL_read/SSL_write failure that is not WANT_*: errno for the server
 * and a log line; returns -1. */
static ssize_t tls_io_error(tls_conn *c, int err, const char *what, atomic_llong *counter) {
    char why[256];
    unsigned long e = ERR_peek_last_error();
    int saved = errno;
    if (e)
        ERR_error_string_n(e, why, sizeof(why));
    else
        snprintf(why, sizeof(why), "%s", saved ? strerror(saved) : "connection closed by peer");
    ERR_clear_error();
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
    /* A peer gone mid-reply (EPIPE, a reset) is routine; a protocol error
     * (a bad record, garbage) is worth a warning. */
    tls_log_limited(e ? KEEL_LOG_WARNING : KEEL_LOG_VERBOSE, "TLS %s %s failed: %s", what, c->peer,
                    why);
    errno = (err == SSL_ERROR_SYSCALL && saved) ? saved : (e ? EIO : ECONNRESET);
    return -1;
}

static ssize_t tls_read(keel_conn *conn, void *buf, size_t len, void *priv) {
    (void)priv;
    tls_conn *c = tls.api->transport->conn_get_data(conn);
    size_t n = 0;
    tls_err_reset();
    errno = 0;
    c->read_starved = 0;
    if (SSL_read_ex(c->ssl, buf, len, &n) == 1) return (ssize_t)n;
    int err = SSL_get_error(c->ssl, 0);
    switch (err) {
    case SSL_ERROR_WANT_READ:
        c->read_starved = 1;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        tls.api->transport->conn_wait(conn, KEEL_CONN_WRITABLE);
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN: /* close_notify */
        return 0;
    default:
        break;
    }
    /* A peer that closes without close_notify (most clients do) is an end
     * of stream, not an attack: log it quietly. */
    unsigned long e = ERR_peek_last_error();
    if (err == SSL_ERROR_SSL && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        ERR_clear_error();
        tls_log_limited(KEEL_LOG_VERBOSE,
                        "TLS read from %s: closed without close_notify (or inside a record)",
                        c->peer);
        return 0;
    }
    c->failed = 1;
    return tls_io_error(c, err, "read from", &tls.stats.read_errors);
}

/* Copies up to max bytes from the front of iov (skipping skip bytes) into
 * dst; returns how many. */
static size_t tls_gather(char *dst, const struct iovec *iov, int iovcnt, size_t skip, size_t max) {
    size_t n = 0;
    for (int i = 0; i < iovcnt && n < max; i++) {
        size_t l = iov[i].iov_len;
        if (skip >= l) {
            skip -= l;
            continue;
        }
        size_t take = l - skip < max - n ? l - skip : max - n;
        memcpy(dst + n, (const char *)iov[i].iov_base + skip, take);
        n += take;
        skip = 0;
    }
    return n;
}

/* The next bytes to write (at most want, one record), from offset off of
 * iov, as one pointer: in place, or gathered. exact: exactly want bytes (a
 * retry; fewer only when iov has fewer). */
static const char *tls_next_chunk(const struct iovec *iov, int iovcnt, size_t off, size_t want,
                                  int exact, size_t *len) {
    int i = 0;
    while (i < iovcnt && off >= iov[i].iov_len)
        off -= iov[i++].iov_len;
    *len = 0;
    if (i == iovcnt) return NULL;
    size_t here = iov[i].iov_len - off;
    if (exact ? here >= want : here >= TLS_DIRECT_MIN) {
        *len = here < want ? here : want;
        return (const char *)iov[i].iov_base + off;
    }
    *len = tls_gather(tls_stage, iov + i, iovcnt - i, off, want);
    return tls_stage;
}

/* One SSL_write_ex; after WANT_* it remembers the length (and whether the
 * stage holds the bytes) so the retry passes the same. 1: written (*done),
 * 0: wait (errno EAGAIN), -1: failed. */
static int tls_write_one(keel_conn *conn, tls_conn *c, const char *p, size_t len, size_t *done) {
    tls_err_reset();
    errno = 0;
    if (SSL_write_ex(c->ssl, p, len, done) == 1) {
        c->retry_len = 0;
        return 1;
    }
    int err = SSL_get_error(c->ssl, 0);
    if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
        c->retry_len = len;
        atomic_fetch_add_explicit(&tls.stats.write_retries, 1, memory_order_relaxed);
        if (err == SSL_ERROR_WANT_READ) tls.api->transport->conn_wait(conn, KEEL_CONN_READABLE);
        errno = EAGAIN;
        return 0;
    }
    tls_io_error(c, err, "write to", &tls.stats.write_errors);
    c->failed = 1;
    return -1;
}

static ssize_t tls_writev(keel_conn *conn, const struct iovec *iov, int iovcnt, void *priv) {
    (void)priv;
    tls_conn *c = tls.api->transport->conn_get_data(conn);
    size_t total = 0;
    for (;;) {
        size_t len;
        int exact = c->retry_len != 0;
        const char *p =
            tls_next_chunk(iov, iovcnt, total, exact ? c->retry_len : TLS_STAGE_SIZE, exact, &len);
        if (exact && len < c->retry_len) {
            /* OpenSSL cannot take another write before this one. */
            tls_log_limited(KEEL_LOG_WARNING, "TLS write to %s: retried without the same bytes",
                            c->peer);
            c->failed = 1;
            errno = EIO;
            return -1;
        }
        if (!p || !len) break;
        size_t done = 0;
        if (tls_write_one(conn, c, p, len, &done) == 1) {
            total += done;
            continue;
        }
        if (total) {
            /* What went out counts; a retry's state is kept, an error shows
             * again on the next call. A WANT_READ's conn_wait is dropped by
             * the core with a count: the next call (the socket is writable)
             * meets it again and waits then, one extra wake-up, rare. */
            ERR_clear_error();
            return (ssize_t)total;
        }
        return -1;
    }
    return (ssize_t)total;
}

static int tls_has_pending(keel_conn *conn, void *priv) {
    (void)priv;
    tls_conn *c = tls.api->transport->conn_get_data(conn);
    if (!c || !c->ssl || c->handshaking) return 0;
    return SSL_pending(c->ssl) > 0 || (!c->read_starved && SSL_has_pending(c->ssl));
}

static void tls_close(keel_conn *conn, void *priv) {
    (void)priv;
    tls_conn *c = tls.api->transport->conn_get_data(conn);
    if (!c) return;
    if (c->ssl) {
        if (c->handshaking) {
            atomic_fetch_sub_explicit(&tls.stats.hs_in_progress, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&tls.stats.hs_failed, 1, memory_order_relaxed);
        } else if (!c->failed) {
            /* Best effort close_notify; never waits. */
            ERR_clear_error();
            SSL_shutdown(c->ssl);
            ERR_clear_error();
        }
        atomic_fetch_sub_explicit(&tls.stats.current, 1, memory_order_relaxed);
        if (!c->outgoing) tls_port_count(c->port, -1, 0);
        SSL_free(c->ssl);
    }
    tls.api->core->free(c);
    tls.api->transport->conn_set_data(conn, NULL);
}

void tls_transport_def_fill(keel_transport_def *def) {
    memset(def, 0, sizeof(*def));
    def->size = sizeof(*def);
    def->name = "tls";
    def->accept = tls_accept;
    def->handshake = tls_handshake;
    def->read = tls_read;
    def->writev = tls_writev;
    def->has_pending = tls_has_pending;
    def->close = tls_close;
    def->connect = tls_connect;
    def->handshake_timeout_ms = 10000;
}
