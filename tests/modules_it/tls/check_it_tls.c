/* check_it_tls.c -- the TLS transport module (modules/tls) in a real
 * keel-server (--loadmodule $KEEL_TLS_MODULE), driven by its own OpenSSL
 * client (Debian's hiredis 0.14 has no TLS; replies are parsed with
 * hiredis's redisReader): commands, large values and pipelining over TLS,
 * the plain port beside the TLS one, `port 0`, client authentication,
 * expired and untrusted certificates, session resumption, tls-protocols,
 * a CA directory, an encrypted key, ciphers and DH parameters, hundreds
 * of handshakes, certificate reload (CONFIG SET and on disk, also under
 * load), INFO (also its per-port lines over ten tls-port values), the log
 * budget under connection churn, and faults (plain text, TLS on the plain
 * port, stalled and abandoned handshakes, renegotiation, truncated
 * records, a client leaving in the middle of a large reply), each followed
 * by a check that the server still serves a TLS and a plain client.
 *
 * The certificates come from gen_certs.sh ($KEEL_TLS_GEN_CERTS), run once
 * into a temporary directory. KEEL_TLS_MODULE=builtin runs the suite
 * against a server with TLS built in (Valkey, to check the tests
 * themselves): the Keel-only checks (reload on disk, INFO, refusal of a
 * tls-* line without the module, the handshake timeout, the refusal of a
 * TLS client on the plain port) are then skipped. Against Keel with
 * io-threads (KEEL_TEST_IO_THREADS, as the harness applies it), ASan and
 * TSan it needs no suppressions. */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TLS_IO_TIMEOUT_S 20
#define TLS_MAX_ARGS 40
/* Bounds of the waits for what the server does on its own (closing a
 * stalled handshake, noticing a changed file): generous, never a
 * threshold the test measures. */
#define TLS_WAIT_MS 30000

static char certdir[64];
static int builtin; /* KEEL_TLS_MODULE=builtin: a server with TLS built in */

static const char *cert(const char *name) {
    return it_fmt("%s/%s", certdir, name);
}

/* ---- things a test opens, closed by tls_teardown ---- */

typedef struct tls_cli {
    int fd;
    SSL *ssl;
    redisReader *rd;
    char err[512]; /* why the handshake or the last command failed */
} tls_cli;

#define TLS_MAX_OPEN 512
static tls_cli *clis[TLS_MAX_OPEN];
static int nclis;
static SSL_CTX *ctxs[64];
static int nctxs;
static redisReply *replies[4096];
static int nreplies;
static int fds[TLS_MAX_OPEN];
static int nfds;
static pid_t own_server;         /* a server started outside the harness, or 0 */
static SSL_CTX *good_client_ctx; /* good_ctx()'s, one per test */

static void tls_cli_free(tls_cli *t) {
    if (t->ssl) SSL_free(t->ssl);
    if (t->fd >= 0) close(t->fd);
    if (t->rd) redisReaderFree(t->rd);
    free(t);
}

static void tls_teardown(void) {
    for (int i = 0; i < nclis; i++)
        if (clis[i]) tls_cli_free(clis[i]);
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    for (int i = 0; i < nreplies; i++)
        freeReplyObject(replies[i]);
    for (int i = 0; i < nctxs; i++)
        SSL_CTX_free(ctxs[i]);
    nclis = nfds = nreplies = nctxs = 0;
    good_client_ctx = NULL;
    ERR_clear_error();
    if (own_server > 0) { /* still running: its test failed */
        kill(own_server, SIGKILL);
        waitpid(own_server, NULL, 0);
        own_server = 0;
    }
    it_teardown();
}

/* Closes t now (as a client that leaves: no close_notify unless polite). */
static void tls_close(tls_cli *t, int polite) {
    for (int i = 0; i < nclis; i++) {
        if (clis[i] != t) continue;
        if (polite && t->ssl) SSL_shutdown(t->ssl);
        tls_cli_free(t);
        clis[i] = NULL;
        return;
    }
}

/* ---- the server ---- */

/* The module's arguments first, then the TLS listener with the server
 * pair and the CA, then the test's own (which win). */
static int push_base_args(const char **v, int *n, int tls_port) {
    if (!builtin) {
        v[(*n)++] = "--loadmodule";
        v[(*n)++] = getenv("KEEL_TLS_MODULE");
    }
    v[(*n)++] = "--tls-port";
    v[(*n)++] = it_fmt("%d", tls_port);
    v[(*n)++] = "--tls-cert-file";
    v[(*n)++] = cert("server.crt");
    v[(*n)++] = "--tls-key-file";
    v[(*n)++] = cert("server.key");
    v[(*n)++] = "--tls-ca-cert-file";
    v[(*n)++] = cert("ca.crt");
    return *n;
}

static int collect_args(const char **v, int n, const char *first, va_list ap) {
    for (const char *a = first; a; a = va_arg(ap, const char *)) {
        ck_assert_int_lt(n, TLS_MAX_ARGS);
        v[n++] = a;
    }
    for (int i = n; i <= TLS_MAX_ARGS; i++)
        v[i] = NULL;
    return n;
}

#define ARGS40(v)                                                                                  \
    v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], \
        v[15], v[16], v[17], v[18], v[19], v[20], v[21], v[22], v[23], v[24], v[25], v[26], v[27], \
        v[28], v[29], v[30], v[31], v[32], v[33], v[34], v[35], v[36], v[37], v[38], v[39]

/* Starts a server with TLS on a port of its own (in *tls_port) beside the
 * plain one, with extra arguments (NULL-terminated). */
static it_server *tls_start(int *tls_port, const char *arg, ...) {
    const char *v[TLS_MAX_ARGS + 1];
    int n = 0;
    *tls_port = it_free_port();
    push_base_args(v, &n, *tls_port);
    va_list ap;
    va_start(ap, arg);
    collect_args(v, n, arg, ap);
    va_end(ap);
    return it_start(ARGS40(v), NULL);
}

/* ---- the client ---- */

/* A client context trusting ca (NULL: no verification), with cert/key
 * (NULL: none) and the protocol range (0: OpenSSL's default). */
static SSL_CTX *tls_ctx(const char *ca, const char *crt, const char *key, int minv, int maxv) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_lt(nctxs, (int)(sizeof(ctxs) / sizeof(*ctxs)));
    ctxs[nctxs++] = ctx;
    if (ca) {
        ck_assert_int_eq(SSL_CTX_load_verify_locations(ctx, ca, NULL), 1);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    }
    if (crt) {
        ck_assert_int_eq(SSL_CTX_use_certificate_chain_file(ctx, crt), 1);
        ck_assert_int_eq(SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM), 1);
    }
    if (minv) SSL_CTX_set_min_proto_version(ctx, minv);
    if (maxv) SSL_CTX_set_max_proto_version(ctx, maxv);
    /* Sessions are kept by the tests themselves (SSL_get1_session). */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    return ctx;
}

/* The test CA, the good client pair, TLS 1.2 and 1.3 (one per test). */
static SSL_CTX *good_ctx(void) {
    if (!good_client_ctx)
        good_client_ctx = tls_ctx(cert("ca.crt"), cert("client.crt"), cert("client.key"), 0, 0);
    return good_client_ctx;
}

/* A blocking TCP connection to 127.0.0.1:port with I/O timeouts. */
static int tcp_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct timeval tv = {TLS_IO_TIMEOUT_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_msg(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect to %d: %s", port,
                  strerror(errno));
    return fd;
}

/* A tracked raw TCP connection (closed at teardown). */
static int raw_tcp(int port) {
    ck_assert_int_lt(nfds, TLS_MAX_OPEN);
    int fd = tcp_connect(port);
    fds[nfds++] = fd;
    return fd;
}

/* Closes a raw connection before teardown. */
static void raw_close(int fd) {
    for (int i = 0; i < nfds; i++) {
        if (fds[i] == fd) {
            close(fd);
            fds[i] = fds[--nfds];
            return;
        }
    }
}

static void ssl_err(tls_cli *t, const char *what) {
    char buf[256] = "";
    unsigned long e = ERR_get_error();
    if (e) ERR_error_string_n(e, buf, sizeof(buf));
    long vr = SSL_get_verify_result(t->ssl);
    snprintf(t->err, sizeof(t->err), "%s: %s (verify: %s)", what, buf[0] ? buf : strerror(errno),
             X509_verify_cert_error_string(vr));
    ERR_clear_error();
}

/* Connects and runs the handshake; returns the client (tracked), with *ok
 * 0 and the reason in t->err if the handshake failed. session: one to
 * resume, or NULL. */
static tls_cli *tls_open(int port, SSL_CTX *ctx, SSL_SESSION *session, int *ok) {
    ck_assert_int_lt(nclis, TLS_MAX_OPEN);
    tls_cli *t = calloc(1, sizeof(*t));
    ck_assert_ptr_nonnull(t);
    clis[nclis++] = t;
    t->fd = tcp_connect(port);
    t->rd = redisReaderCreate();
    t->ssl = SSL_new(ctx);
    ck_assert_ptr_nonnull(t->ssl);
    SSL_set_fd(t->ssl, t->fd);
    SSL_set_tlsext_host_name(t->ssl, "localhost");
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), "127.0.0.1");
    if (session) SSL_set_session(t->ssl, session);
    ERR_clear_error();
    *ok = SSL_connect(t->ssl) == 1;
    if (!*ok) ssl_err(t, "handshake");
    return t;
}

/* Connects; fails the test unless the handshake succeeds. */
static tls_cli *tls_connect(int port, SSL_CTX *ctx) {
    int ok;
    tls_cli *t = tls_open(port, ctx, NULL, &ok);
    ck_assert_msg(ok, "TLS connect to %d: %s", port, t->err);
    return t;
}

/* Writes all of buf in records of at most chunk bytes (0: as OpenSSL
 * splits it); 0 on success, -1 if the connection failed. */
static int tls_send(tls_cli *t, const void *buf, size_t len, size_t chunk) {
    const char *p = buf;
    while (len > 0) {
        size_t n = chunk && chunk < len ? chunk : len;
        ERR_clear_error();
        int w = SSL_write(t->ssl, p, (int)(n > 1 << 30 ? 1 << 30 : n));
        if (w <= 0) {
            ssl_err(t, "write");
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* The next reply (tracked), or NULL if the connection closed or failed
 * first (the reason in t->err). */
static redisReply *tls_read_reply(tls_cli *t) {
    static char buf[1 << 16];
    for (;;) {
        void *reply = NULL;
        ck_assert_int_eq(redisReaderGetReply(t->rd, &reply), REDIS_OK);
        if (reply) {
            ck_assert_int_lt(nreplies, (int)(sizeof(replies) / sizeof(*replies)));
            replies[nreplies++] = reply;
            return reply;
        }
        ERR_clear_error();
        int n = SSL_read(t->ssl, buf, sizeof(buf));
        if (n <= 0) {
            ssl_err(t, "read");
            return NULL;
        }
        redisReaderFeed(t->rd, buf, (size_t)n);
    }
}

/* Frees the replies read so far (big values). */
static void tls_free_replies(void) {
    for (int i = 0; i < nreplies; i++)
        freeReplyObject(replies[i]);
    nreplies = 0;
}

static redisReply *tls_cmd_argv(tls_cli *t, int argc, const char **argv, const size_t *lens) {
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    ck_assert_int_gt(len, 0);
    int rc = tls_send(t, cmd, (size_t)len, 0);
    free(cmd);
    return rc == 0 ? tls_read_reply(t) : NULL;
}

/* One command (hiredis format); its reply, or NULL on a broken link. */
static redisReply *tls_try_cmd(tls_cli *t, const char *fmt, ...) {
    char *cmd = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    ck_assert_int_gt(len, 0);
    int rc = tls_send(t, cmd, (size_t)len, 0);
    free(cmd);
    return rc == 0 ? tls_read_reply(t) : NULL;
}

/* Asserts the rendered reply of a command. */
#define tls_expect(t, want, ...)                                                                   \
    do {                                                                                           \
        redisReply *r_ = tls_try_cmd(t, __VA_ARGS__);                                              \
        ck_assert_msg(r_ != NULL, "%s: connection failed: %s", #__VA_ARGS__, (t)->err);            \
        char got_[1024];                                                                           \
        it_render(r_, got_, sizeof(got_));                                                         \
        ck_assert_msg(!strcmp(got_, want), "%s: expected %s, got %s", #__VA_ARGS__, want, got_);   \
    } while (0)

/* 1 if a fresh client with ctx completes the handshake and gets PONG. */
static int tls_ping_ok(int port, SSL_CTX *ctx, char *why, size_t whylen) {
    int ok;
    tls_cli *t = tls_open(port, ctx, NULL, &ok);
    redisReply *r = ok ? tls_try_cmd(t, "PING") : NULL;
    int pong = r && r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "PONG");
    if (why) snprintf(why, whylen, "%s", pong ? "" : t->err);
    tls_close(t, 1);
    return pong;
}

/* The server still serves a new TLS client and a new plain one. */
static void expect_serving(it_server *s, int tls_port) {
    char why[512];
    ck_assert_msg(tls_ping_ok(tls_port, good_ctx(), why, sizeof(why)),
                  "TLS PING failed: %s; log:\n%s", why, it_log_tail(s));
    redisContext *c = it_connect(s);
    expect_status(c, "PONG", "PING");
    it_disconnect(c);
}

/* The peer's certificate's subject CN (tracked). */
static char *peer_cn(tls_cli *t) {
    X509 *x = SSL_get1_peer_certificate(t->ssl);
    ck_assert_ptr_nonnull(x);
    char cn[256] = "";
    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn));
    X509_free(x);
    return it_fmt("%s", cn);
}

/* The CN a new client sees on port, or "" if the handshake fails. */
static char *served_cn(int port) {
    int ok;
    tls_cli *t = tls_open(port, good_ctx(), NULL, &ok);
    char *cn = ok ? peer_cn(t) : it_fmt("%s", "");
    tls_close(t, 1);
    return cn;
}

/* 1 if the server closes fd within timeout_ms (bytes it sends first, such
 * as a TLS alert, are read and dropped). */
static int wait_closed(int fd, int timeout_ms) {
    long long deadline = it_mstime() + timeout_ms;
    char buf[4096];
    for (;;) {
        long long left = deadline - it_mstime();
        if (left <= 0) return 0;
        struct pollfd p = {fd, POLLIN, 0};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) return 0;
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return 1;
    }
}

/* A real ClientHello (TLS 1.2-1.3), made with a memory BIO: tracked bytes. */
static char *client_hello(size_t *len) {
    SSL_CTX *ctx = tls_ctx(NULL, NULL, NULL, 0, 0);
    SSL *ssl = SSL_new(ctx);
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, rb, wb);
    SSL_set_tlsext_host_name(ssl, "localhost");
    ck_assert_int_le(SSL_connect(ssl), 0); /* waits for the ServerHello */
    char *data;
    long n = BIO_get_mem_data(wb, &data);
    ck_assert_int_gt(n, 100);
    char *out = it_alloc((size_t)n);
    memcpy(out, data, (size_t)n);
    *len = (size_t)n;
    SSL_free(ssl);
    ERR_clear_error();
    return out;
}

/* Copies src over dst through a temporary file and rename (as a deploy
 * tool replaces a certificate: readers never see half a file). */
static void install_file(const char *src, const char *dst) {
    char *data = it_read_file(src);
    char *tmp = it_fmt("%s.tmp", dst);
    FILE *f = fopen(tmp, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(data, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(rename(tmp, dst), 0);
}

static void expect_config_ok(redisContext *c, const char *name, const char *value) {
    redisReply *r = it_cmd(c, "CONFIG SET %s %s", name, value);
    char got[512];
    ck_assert_msg(r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK"), "CONFIG SET %s %s: %s",
                  name, value, it_render(r, got, sizeof(got)));
    it_free(r);
}

/* ---- commands over TLS ---- */

START_TEST(test_ping_set_get) {
    int tp;
    it_server *s = tls_start(&tp, NULL);
    tls_cli *t = tls_connect(tp, good_ctx());
    tls_expect(t, "+PONG", "PING");
    tls_expect(t, "+OK", "SET k hello");
    tls_expect(t, "\"hello\"", "GET k");
    tls_expect(t, ":1", "DEL k");
    tls_expect(t, "nil", "GET k");
    /* The plain port beside the TLS one serves the same data. */
    tls_expect(t, "+OK", "SET shared v1");
    redisContext *c = it_connect(s);
    expect_bulk(c, "v1", "GET shared");
    expect_ok(c, "SET shared v2");
    tls_expect(t, "\"v2\"", "GET shared");
    /* TLS 1.2 and 1.3 are both served by default. */
    for (int v = TLS1_2_VERSION; v <= TLS1_3_VERSION; v++) {
        SSL_CTX *ctx = tls_ctx(cert("ca.crt"), cert("client.crt"), cert("client.key"), v, v);
        tls_cli *tv = tls_connect(tp, ctx);
        ck_assert_int_eq(SSL_version(tv->ssl), v);
        tls_expect(tv, "\"v2\"", "GET shared");
    }
}
END_TEST

/* SET then GET of len random bytes over TLS, content compared. */
static void big_roundtrip(tls_cli *t, size_t len, unsigned seed) {
    char *val = it_random_bytes(len, seed);
    const char *argv[] = {"SET", "big", val};
    size_t lens[] = {3, 3, len};
    redisReply *r = tls_cmd_argv(t, 3, argv, lens);
    ck_assert_msg(r && r->type == REDIS_REPLY_STATUS, "SET of %zu bytes: %s", len, t->err);
    const char *gargv[] = {"GET", "big"};
    size_t glens[] = {3, 3};
    r = tls_cmd_argv(t, 2, gargv, glens);
    ck_assert_msg(r != NULL, "GET of %zu bytes: %s", len, t->err);
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    ck_assert_uint_eq(r->len, len);
    ck_assert_msg(memcmp(r->str, val, len) == 0, "GET of %zu bytes: content differs", len);
    tls_free_replies();
}

START_TEST(test_large_values) {
    int tp;
    it_server *s = tls_start(&tp, NULL);
    tls_cli *t = tls_connect(tp, good_ctx());
    big_roundtrip(t, 1 << 20, 1);
    big_roundtrip(t, 8 << 20, 2);
    /* The same value through the plain port. */
    redisContext *c = it_connect(s);
    redisReply *r = it_cmd(c, "STRLEN big");
    ck_assert_int_eq(r->integer, 8 << 20);
}
END_TEST

/* N pipelined SETs then GETs, written in records of chunk bytes. */
static void pipeline(tls_cli *t, int n, size_t chunk, const char *tag) {
    size_t cap = (size_t)n * 96, len = 0;
    char *buf = it_alloc(cap);
    for (int i = 0; i < n; i++) {
        char k[32], v[32];
        int kl = snprintf(k, sizeof(k), "%s:%d", tag, i), vl = snprintf(v, sizeof(v), "v%d", i);
        len += (size_t)snprintf(buf + len, cap - len,
                                "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", kl, k, vl, v);
        len += (size_t)snprintf(buf + len, cap - len, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", kl, k);
    }
    ck_assert_int_eq(tls_send(t, buf, len, chunk), 0);
    for (int i = 0; i < n; i++) {
        tls_free_replies();
        redisReply *r = tls_read_reply(t);
        ck_assert_msg(r && r->type == REDIS_REPLY_STATUS, "SET %d: %s", i, t->err);
        r = tls_read_reply(t);
        ck_assert_msg(r && r->type == REDIS_REPLY_STRING, "GET %d: %s", i, t->err);
        char want[32];
        snprintf(want, sizeof(want), "v%d", i);
        ck_assert_str_eq(r->str, want);
    }
    tls_free_replies();
}

START_TEST(test_pipelining) {
    int tp;
    tls_start(&tp, NULL);
    tls_cli *t = tls_connect(tp, good_ctx());
    pipeline(t, 200, 16384, "one-record"); /* many commands in each record */
    pipeline(t, 200, 0, "openssl");        /* about 40 KB as OpenSSL cuts it */
    pipeline(t, 100, 7, "split");          /* every command across records */
    pipeline(t, 5000, 0, "many");          /* replies span many records */
}
END_TEST

/* ---- port 0: only the TLS listener ---- */

/* it_start checks readiness on the plain port, which `port 0` does not
 * have: this start waits for a TLS PONG instead, and stops the server
 * itself. */
START_TEST(test_port0_tls_only) {
    int tp = it_free_port();
    const char *v[TLS_MAX_ARGS + 1];
    int n = 0;
    v[n++] = getenv("KEEL_SERVER");
    push_base_args(v, &n, tp);
    v[n++] = "--port";
    v[n++] = "0";
    v[n++] = "--bind";
    v[n++] = "127.0.0.1";
    const char *iot = getenv("KEEL_TEST_IO_THREADS");
    if (iot && *iot) {
        v[n++] = "--io-threads";
        v[n++] = iot;
        v[n++] = "--events-per-io-thread";
        v[n++] = "0";
    }
    v[n] = NULL;
    char *log = it_fmt("%s/port0-%d.log", certdir, tp);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        FILE *f = freopen(log, "w", stdout);
        if (f) dup2(1, 2);
        chdir(certdir);
        execv(v[0], (char **)v);
        _exit(127);
    }
    own_server = pid;
    it_server s = {.pid = pid, .port = 0};
    snprintf(s.log, sizeof(s.log), "%s", log);
    SSL_CTX *ctx = good_ctx();
    int ready = 0;
    for (long long end = it_mstime() + 10000; !ready && it_mstime() < end; it_sleep_ms(20)) {
        if (it_wait_exit(&s, 0) != -1) break;
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)tp)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        int up = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        close(fd);
        if (up) ready = tls_ping_ok(tp, ctx, NULL, 0);
    }
    int served = ready;
    if (ready) {
        tls_cli *t = tls_connect(tp, ctx);
        tls_expect(t, "+OK", "SET k v");
        tls_expect(t, "\"v\"", "GET k");
        const char *shut = "*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n";
        ck_assert_int_eq(tls_send(t, shut, strlen(shut), 0), 0);
    } else {
        kill(pid, SIGKILL);
    }
    int st = it_wait_exit(&s, 10000);
    if (st == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    own_server = 0;
    ck_assert_msg(served, "the TLS-only server never answered; log:\n%s", it_log_tail(&s));
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "bad exit; log:\n%s",
                  it_log_tail(&s));
}
END_TEST

/* ---- client authentication and certificates ---- */

START_TEST(test_auth_clients) {
    int tp;
    it_server *s = tls_start(&tp, NULL);
    redisContext *c = it_connect(s);
    SSL_CTX *nocert = tls_ctx(cert("ca.crt"), NULL, NULL, 0, 0);
    SSL_CTX *good = good_ctx();
    SSL_CTX *wrong =
        tls_ctx(cert("ca.crt"), cert("other-client.crt"), cert("other-client.key"), 0, 0);
    SSL_CTX *expired =
        tls_ctx(cert("ca.crt"), cert("client-expired.crt"), cert("client-expired.key"), 0, 0);
    SSL_CTX *nocert12 = tls_ctx(cert("ca.crt"), NULL, NULL, TLS1_2_VERSION, TLS1_2_VERSION);
    char why[512];
    /* yes (the default): a certificate from the CA, nothing else. */
    redisReply *r = it_cmd(c, "CONFIG GET tls-auth-clients");
    ck_assert_str_eq(r->element[1]->str, "yes");
    ck_assert_msg(tls_ping_ok(tp, good, why, sizeof(why)), "good cert refused: %s", why);
    ck_assert_msg(!tls_ping_ok(tp, nocert, NULL, 0), "no cert accepted with auth yes");
    ck_assert_msg(!tls_ping_ok(tp, nocert12, NULL, 0), "no cert accepted with auth yes (TLS 1.2)");
    ck_assert_msg(!tls_ping_ok(tp, wrong, NULL, 0), "wrong-CA cert accepted");
    ck_assert_msg(!tls_ping_ok(tp, expired, NULL, 0), "expired cert accepted");
    /* optional: no certificate, or a good one; a bad one is refused. */
    expect_config_ok(c, "tls-auth-clients", "optional");
    ck_assert_msg(tls_ping_ok(tp, good, why, sizeof(why)), "good cert refused: %s", why);
    ck_assert_msg(tls_ping_ok(tp, nocert, why, sizeof(why)), "no cert refused: %s", why);
    ck_assert_msg(!tls_ping_ok(tp, wrong, NULL, 0), "wrong-CA cert accepted with optional");
    ck_assert_msg(!tls_ping_ok(tp, expired, NULL, 0), "expired cert accepted with optional");
    /* no: nobody is asked for a certificate. */
    expect_config_ok(c, "tls-auth-clients", "no");
    ck_assert_msg(tls_ping_ok(tp, good, why, sizeof(why)), "good cert refused: %s", why);
    ck_assert_msg(tls_ping_ok(tp, nocert, why, sizeof(why)), "no cert refused: %s", why);
    ck_assert_msg(tls_ping_ok(tp, nocert12, why, sizeof(why)), "no cert refused (1.2): %s", why);
    expect_config_ok(c, "tls-auth-clients", "yes");
    ck_assert_msg(!tls_ping_ok(tp, nocert, NULL, 0), "no cert accepted after auth back to yes");
    expect_serving(s, tp);
}
END_TEST

START_TEST(test_expired_server_cert) {
    int tp;
    it_server *s = tls_start(&tp, "--tls-cert-file", cert("server-expired.crt"), "--tls-key-file",
                             cert("server-expired.key"), NULL);
    int ok;
    tls_cli *t = tls_open(tp, good_ctx(), NULL, &ok);
    ck_assert_msg(!ok, "a verifying client accepted the expired server certificate");
    ck_assert_int_eq(SSL_get_verify_result(t->ssl), X509_V_ERR_CERT_HAS_EXPIRED);
    /* A client that does not verify still gets served. */
    SSL_CTX *noverify = tls_ctx(NULL, cert("client.crt"), cert("client.key"), 0, 0);
    char why[512];
    ck_assert_msg(tls_ping_ok(tp, noverify, why, sizeof(why)), "%s", why);
    /* And one trusting only the wrong CA refuses the good server too. */
    it_server *s2;
    int tp2;
    s2 = tls_start(&tp2, NULL);
    SSL_CTX *wrongca = tls_ctx(cert("other-ca.crt"), cert("client.crt"), cert("client.key"), 0, 0);
    t = tls_open(tp2, wrongca, NULL, &ok);
    ck_assert_msg(!ok, "a client trusting another CA accepted the server");
    (void)s;
    (void)s2;
}
END_TEST

/* ---- session resumption ---- */

/* Connects with ctx, runs a PING (so TLS 1.3 tickets arrive), and
 * returns the session to resume (the caller frees it). The connection
 * stays open: OpenSSL drops a session from the server's cache when its
 * connection ends without the server's own close_notify. */
static SSL_SESSION *first_session(int tp, SSL_CTX *ctx) {
    tls_cli *t = tls_connect(tp, ctx);
    ck_assert_int_eq(SSL_session_reused(t->ssl), 0);
    tls_expect(t, "+PONG", "PING");
    SSL_SESSION *sess = SSL_get1_session(t->ssl);
    ck_assert_ptr_nonnull(sess);
    return sess;
}

/* 1 if a new connection resumes sess (and then works). */
static int resumes(int tp, SSL_CTX *ctx, SSL_SESSION *sess) {
    int ok;
    tls_cli *t = tls_open(tp, ctx, sess, &ok);
    ck_assert_msg(ok, "handshake with a session failed: %s", t->err);
    int reused = SSL_session_reused(t->ssl);
    tls_expect(t, "+PONG", "PING");
    tls_close(t, 1);
    return reused;
}

static void check_resumption(int tp, int version, long opts, int want) {
    SSL_CTX *ctx =
        tls_ctx(cert("ca.crt"), cert("client.crt"), cert("client.key"), version, version);
    SSL_CTX_set_options(ctx, opts);
    SSL_SESSION *sess = first_session(tp, ctx);
    int got = resumes(tp, ctx, sess);
    SSL_SESSION_free(sess);
    ck_assert_msg(got == want, "TLS %s%s: session %sresumed",
                  version == TLS1_3_VERSION ? "1.3" : "1.2",
                  opts & SSL_OP_NO_TICKET ? " (no ticket: session cache)" : "", got ? "" : "not ");
}

START_TEST(test_session_resumption) {
    int tp;
    it_server *s = tls_start(&tp, NULL);
    check_resumption(tp, TLS1_3_VERSION, 0, 1);
    check_resumption(tp, TLS1_2_VERSION, 0, 1);                /* ticket */
    check_resumption(tp, TLS1_2_VERSION, SSL_OP_NO_TICKET, 1); /* session id cache */
    /* tls-session-caching no: no resumption at all, as in Valkey 8.0.1
     * (which turns the session cache off and leaves the session id
     * context unset: OpenSSL then resumes neither cached sessions nor
     * tickets of verified clients), but a full handshake. Valkey itself
     * fails the handshake of a client offering a ticket there ("internal
     * error" alert): only the cache case is checked against it. */
    redisContext *c = it_connect(s);
    expect_config_ok(c, "tls-session-caching", "no");
    if (!builtin) {
        check_resumption(tp, TLS1_3_VERSION, 0, 0);
        check_resumption(tp, TLS1_2_VERSION, 0, 0);
    }
    check_resumption(tp, TLS1_2_VERSION, SSL_OP_NO_TICKET, 0);
    expect_config_ok(c, "tls-session-caching", "yes");
    check_resumption(tp, TLS1_2_VERSION, SSL_OP_NO_TICKET, 1);
}
END_TEST

START_TEST(test_protocols) {
    int tp;
    it_server *s = tls_start(&tp, "--tls-protocols", "TLSv1.3", NULL);
    SSL_CTX *v12 = tls_ctx(cert("ca.crt"), cert("client.crt"), cert("client.key"), TLS1_2_VERSION,
                           TLS1_2_VERSION);
    SSL_CTX *v13 = tls_ctx(cert("ca.crt"), cert("client.crt"), cert("client.key"), TLS1_3_VERSION,
                           TLS1_3_VERSION);
    char why[512];
    ck_assert_msg(!tls_ping_ok(tp, v12, NULL, 0), "a TLS 1.2 client was served with TLSv1.3 only");
    ck_assert_msg(tls_ping_ok(tp, v13, why, sizeof(why)), "%s", why);
    /* TLS 1.0 and 1.1 are off by default. */
    it_server *s2;
    int tp2;
    s2 = tls_start(&tp2, NULL);
    SSL_CTX *v11 = tls_ctx(cert("ca.crt"), cert("client.crt"), cert("client.key"), TLS1_VERSION,
                           TLS1_1_VERSION);
    SSL_CTX_set_security_level(v11, 0);
    SSL_CTX_set_cipher_list(v11, "DEFAULT:@SECLEVEL=0");
    ck_assert_msg(!tls_ping_ok(tp2, v11, NULL, 0), "a TLS 1.0/1.1 client was served by default");
    redisContext *c = it_connect(s);
    expect_config_ok(c, "tls-protocols", "TLSv1.2 TLSv1.3");
    ck_assert_msg(tls_ping_ok(tp, v12, why, sizeof(why)), "TLS 1.2 after CONFIG SET: %s", why);
    (void)s2;
}
END_TEST

/* tls-port at run time: a new port opens, the old one closes, 0 closes
 * the TLS listener; connections already open stay. */
START_TEST(test_port_runtime) {
    int tp;
    it_server *s = tls_start(&tp, NULL);
    redisContext *c = it_connect(s);
    tls_cli *t = tls_connect(tp, good_ctx());
    int tp2 = it_free_port();
    expect_config_ok(c, "tls-port", it_fmt("%d", tp2));
    char why[512];
    ck_assert_msg(tls_ping_ok(tp2, good_ctx(), why, sizeof(why)), "new tls-port: %s", why);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)tp)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_msg(connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0,
                  "the old tls-port still listens");
    close(fd);
    tls_expect(t, "+PONG", "PING");
    if (!builtin) ck_assert_int_eq(it_info_int(c, "tls", "tls_enabled"), 1);
    expect_config_ok(c, "tls-port", "0");
    fd = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = htons((uint16_t)tp2);
    ck_assert_msg(connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0, "tls-port 0 still listens");
    close(fd);
    tls_expect(t, "+PONG", "PING");
    expect_status(c, "PONG", "PING");
    /* Keel's tls_enabled says whether a TLS listener is open. */
    if (!builtin) ck_assert_int_eq(it_info_int(c, "tls", "tls_enabled"), 0);
}
END_TEST

/* INFO keeps a line per port with connections or listened on: after ten
 * ports, the current one is counted, the first (a connection still open
 * there) stays, and the ports left without connections are gone (Keel). */
START_TEST(test_port_slots) {
    if (builtin) return;
    int tp;
    it_server *s = tls_start(&tp, NULL);
    redisContext *c = it_connect(s);
    tls_cli *t = tls_connect(tp, good_ctx());
    tls_expect(t, "+PONG", "PING");
    int ports[10] = {0};
    char why[512];
    for (int i = 0; i < 10; i++) {
        int taken;
        do {
            ports[i] = it_free_port();
            taken = ports[i] == tp;
            for (int j = 0; j < i; j++)
                taken |= ports[i] == ports[j];
        } while (taken);
        expect_config_ok(c, "tls-port", it_fmt("%d", ports[i]));
        ck_assert_msg(tls_ping_ok(ports[i], good_ctx(), why, sizeof(why)), "tls-port %d: %s",
                      ports[i], why);
    }
    /* The pings' connections close on the server's side after the reply. */
    char *last = NULL;
    it_wait_until((last = it_info_str(c, "tls", it_fmt("tls_listener_%d", ports[9]))) != NULL &&
                      it_kv_get(last, "current") == 0,
                  TLS_WAIT_MS);
    ck_assert_msg(last != NULL, "INFO tls: no line for the tenth tls-port %d", ports[9]);
    ck_assert_int_eq(it_kv_get(last, "accepted"), 1);
    char *first = it_info_str(c, "tls", it_fmt("tls_listener_%d", tp));
    ck_assert_msg(first != NULL, "INFO tls: the first port's line went with a connection open");
    ck_assert_int_eq(it_kv_get(first, "current"), 1);
    ck_assert_msg(it_info_str(c, "tls", it_fmt("tls_listener_%d", ports[0])) == NULL,
                  "INFO tls: a port left without connections keeps its line");
    tls_expect(t, "+PONG", "PING");
}
END_TEST

/* ---- other directives ---- */

/* The cipher a new client with ctx negotiates, or "" if it cannot. */
static char *cipher_of(int port, SSL_CTX *ctx) {
    int ok;
    tls_cli *t = tls_open(port, ctx, NULL, &ok);
    char *name = it_fmt("%s", ok ? SSL_get_cipher_name(t->ssl) : "");
    if (ok && !tls_try_cmd(t, "PING")) name = it_fmt("%s", "");
    tls_close(t, 1);
    return name;
}

START_TEST(test_ca_dir_key_pass) {
    int tp;
    /* CAs from a hashed directory, the key encrypted with a passphrase. */
    it_server *s = tls_start(&tp, "--tls-ca-cert-file", "", "--tls-ca-cert-dir", cert("cadir"),
                             "--tls-key-file", cert("server-pass.key"), "--tls-key-file-pass",
                             "keel-test-pass", NULL);
    char why[512];
    ck_assert_msg(tls_ping_ok(tp, good_ctx(), why, sizeof(why)), "%s", why);
    SSL_CTX *other =
        tls_ctx(cert("ca.crt"), cert("other-client.crt"), cert("other-client.key"), 0, 0);
    ck_assert_msg(!tls_ping_ok(tp, other, NULL, 0), "a client of another CA was accepted");
    /* A wrong passphrase is refused, the server serves on. */
    redisContext *c = it_connect(s);
    redisReply *r = it_cmd(c, "CONFIG SET tls-key-file-pass wrong-pass");
    ck_assert_msg(r->type == REDIS_REPLY_ERROR, "a wrong passphrase was accepted");
    r = it_cmd(c, "CONFIG GET tls-key-file-pass");
    ck_assert_str_eq(r->element[1]->str, "keel-test-pass");
    /* The passphrase is a secret: the slow log does not keep it. */
    expect_config_ok(c, "slowlog-log-slower-than", "0");
    expect_config_ok(c, "tls-key-file-pass", "keel-test-pass");
    r = it_cmd(c, "SLOWLOG GET 10");
    char *all = it_alloc(65536);
    it_render(r, all, 65536);
    ck_assert_msg(strstr(all, "tls-key-file-pass") != NULL, "no CONFIG SET in the slow log: %s",
                  all);
    ck_assert_msg(strstr(all, "keel-test-pass") == NULL, "the slow log shows the passphrase: %s",
                  all);
    expect_serving(s, tp);
}
END_TEST

START_TEST(test_ciphers_dh) {
    int tp;
    char *dh = it_fmt("%s/dh.pem", certdir);
    if (access(dh, R_OK) != 0) {
        char *cmd = it_fmt("openssl genpkey -genparam -algorithm DH -pkeyopt group:ffdhe2048 -out "
                           "'%s' 2>/dev/null",
                           dh);
        ck_assert_int_eq(system(cmd), 0);
    }
    it_server *s = tls_start(&tp, "--tls-dh-params-file", dh, "--tls-ciphers",
                             "DHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384",
                             "--tls-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256", NULL);
    SSL_CTX *v13 = tls_ctx(cert("ca.crt"), cert("client.crt"), cert("client.key"), TLS1_3_VERSION,
                           TLS1_3_VERSION);
    ck_assert_str_eq(cipher_of(tp, v13), "TLS_CHACHA20_POLY1305_SHA256");
    /* TLS 1.2 with only a DHE suite: the DH parameters are used. */
    SSL_CTX *dhe = tls_ctx(cert("ca.crt"), cert("client.crt"), cert("client.key"), TLS1_2_VERSION,
                           TLS1_2_VERSION);
    ck_assert_int_eq(SSL_CTX_set_cipher_list(dhe, "DHE-RSA-AES128-GCM-SHA256"), 1);
    ck_assert_str_eq(cipher_of(tp, dhe), "DHE-RSA-AES128-GCM-SHA256");
    /* A suite the server does not offer: no handshake. */
    SSL_CTX *aes = tls_ctx(cert("ca.crt"), cert("client.crt"), cert("client.key"), TLS1_2_VERSION,
                           TLS1_2_VERSION);
    ck_assert_int_eq(SSL_CTX_set_cipher_list(aes, "AES256-SHA256"), 1);
    ck_assert_str_eq(cipher_of(tp, aes), "");
    /* Refused values leave the server as it was. */
    redisContext *c = it_connect(s);
    redisReply *r = it_cmd(c, "CONFIG SET tls-ciphersuites NO_SUCH_SUITE");
    ck_assert_msg(r->type == REDIS_REPLY_ERROR, "an unknown cipher suite was accepted");
    r = it_cmd(c, "CONFIG SET tls-dh-params-file %s", cert("ca.crt"));
    ck_assert_msg(r->type == REDIS_REPLY_ERROR, "a certificate was accepted as DH parameters");
    r = it_cmd(c, "CONFIG SET tls-protocols TLSv9");
    ck_assert_msg(r->type == REDIS_REPLY_ERROR, "an unknown protocol was accepted");
    ck_assert_str_eq(cipher_of(tp, v13), "TLS_CHACHA20_POLY1305_SHA256");
    expect_config_ok(c, "tls-ciphersuites", "TLS_AES_128_GCM_SHA256");
    ck_assert_str_eq(cipher_of(tp, v13), "TLS_AES_128_GCM_SHA256");
}
END_TEST

/* ---- certificate reload ---- */

START_TEST(test_reload_config_set) {
    int tp;
    char *crt = it_fmt("%s/live-%d.crt", certdir, getpid()),
         *key = it_fmt("%s/live-%d.key", certdir, getpid());
    install_file(cert("server.crt"), crt);
    install_file(cert("server.key"), key);
    it_server *s = tls_start(&tp, "--tls-cert-file", crt, "--tls-key-file", key, NULL);
    redisContext *c = it_connect(s);
    tls_cli *old = tls_connect(tp, good_ctx());
    ck_assert_str_eq(peer_cn(old), "localhost");
    /* A new pair by path: new connections get it, open ones go on. */
    redisReply *r = it_cmd(c, "CONFIG SET tls-cert-file %s tls-key-file %s", cert("server2.crt"),
                           cert("server2.key"));
    ck_assert_msg(r->type == REDIS_REPLY_STATUS, "CONFIG SET: %s", r->str);
    ck_assert_str_eq(served_cn(tp), "Keel Server 2");
    tls_expect(old, "+PONG", "PING");
    r = it_cmd(c, "CONFIG SET tls-cert-file %s tls-key-file %s", crt, key);
    ck_assert_msg(r->type == REDIS_REPLY_STATUS, "CONFIG SET back: %s", r->str);
    ck_assert_str_eq(served_cn(tp), "localhost");
    /* The same paths again re-read the files. */
    install_file(cert("server2.crt"), crt);
    install_file(cert("server2.key"), key);
    r = it_cmd(c, "CONFIG SET tls-cert-file %s tls-key-file %s", crt, key);
    ck_assert_msg(r->type == REDIS_REPLY_STATUS, "CONFIG SET same path: %s", r->str);
    ck_assert_str_eq(served_cn(tp), "Keel Server 2");
    /* A bad file: an error, and the old certificate keeps serving. */
    char *junk = it_fmt("%s/junk-%d.crt", certdir, getpid());
    FILE *f = fopen(junk, "w");
    ck_assert_ptr_nonnull(f);
    fputs("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n", f);
    fclose(f);
    r = it_cmd(c, "CONFIG SET tls-cert-file %s", junk);
    ck_assert_msg(r->type == REDIS_REPLY_ERROR, "CONFIG SET of a bad certificate was accepted");
    r = it_cmd(c, "CONFIG SET tls-cert-file %s", it_fmt("%s/missing.crt", certdir));
    ck_assert_msg(r->type == REDIS_REPLY_ERROR, "CONFIG SET of a missing file was accepted");
    /* A certificate that does not match the key. */
    r = it_cmd(c, "CONFIG SET tls-cert-file %s", cert("server.crt"));
    ck_assert_msg(r->type == REDIS_REPLY_ERROR, "CONFIG SET of a cert not matching the key");
    ck_assert_str_eq(served_cn(tp), "Keel Server 2");
    r = it_cmd(c, "CONFIG GET tls-cert-file");
    ck_assert_str_eq(r->element[1]->str, crt);
    /* A bad CA file is refused too, and clients still verify. */
    r = it_cmd(c, "CONFIG SET tls-ca-cert-file %s", junk);
    ck_assert_msg(r->type == REDIS_REPLY_ERROR, "CONFIG SET of a bad CA file was accepted");
    expect_serving(s, tp);
    tls_expect(old, "+PONG", "PING");
}
END_TEST

START_TEST(test_reload_on_disk) {
    if (builtin) return; /* Valkey 8.0.1 does not watch the files */
    int tp;
    char *crt = it_fmt("%s/disk-%d.crt", certdir, getpid()),
         *key = it_fmt("%s/disk-%d.key", certdir, getpid());
    install_file(cert("server.crt"), crt);
    install_file(cert("server.key"), key);
    it_server *s = tls_start(&tp, "--tls-cert-file", crt, "--tls-key-file", key, NULL);
    ck_assert_str_eq(served_cn(tp), "localhost");
    /* The periodic check compares inode, size and mtime: a rename gives
     * a new inode. Key first, then certificate: a check in between fails
     * on the mismatch, the next one succeeds. */
    install_file(cert("server2.key"), key);
    install_file(cert("server2.crt"), crt);
    it_wait_until(!strcmp(served_cn(tp), "Keel Server 2"), TLS_WAIT_MS);
    /* A broken file on disk: the reload fails (counted), and the last
     * good certificate keeps serving. */
    redisContext *c = it_connect(s);
    long long failed = it_info_int(c, "tls", "tls_reloads_failed");
    char *junk = it_fmt("%s.junk", crt);
    FILE *f = fopen(junk, "w");
    ck_assert_ptr_nonnull(f);
    fputs("garbage\n", f);
    fclose(f);
    install_file(junk, crt);
    it_wait_until(it_info_int(c, "tls", "tls_reloads_failed") > failed, TLS_WAIT_MS);
    ck_assert_str_eq(served_cn(tp), "Keel Server 2");
    /* And good files again are picked up. */
    install_file(cert("server.key"), key);
    install_file(cert("server.crt"), crt);
    it_wait_until(!strcmp(served_cn(tp), "localhost"), TLS_WAIT_MS);
    expect_serving(s, tp);
}
END_TEST

START_TEST(test_reload_under_load) {
    int tp;
    it_server *s = tls_start(&tp, NULL);
    redisContext *c = it_connect(s);
    enum { NLOAD = 4, ROUNDS = 12 };
    tls_cli *load[NLOAD];
    for (int i = 0; i < NLOAD; i++)
        load[i] = tls_connect(tp, good_ctx());
    for (int round = 0; round < ROUNDS; round++) {
        /* Each load client has a pipeline in flight while the server swaps
         * its certificate. */
        char buf[64 * 40];
        size_t len = 0;
        for (int j = 0; j < 40; j++)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len,
                                    "*2\r\n$4\r\nINCR\r\n$4\r\nctr%d\r\n", round % 10);
        for (int i = 0; i < NLOAD; i++)
            ck_assert_int_eq(tls_send(load[i], buf, len, 0), 0);
        const char *pair = round % 2 ? "server" : "server2";
        redisReply *r = it_cmd(c, "CONFIG SET tls-cert-file %s tls-key-file %s",
                               cert(it_fmt("%s.crt", pair)), cert(it_fmt("%s.key", pair)));
        ck_assert_msg(r->type == REDIS_REPLY_STATUS, "round %d: %s", round, r->str);
        it_free(r);
        for (int i = 0; i < NLOAD; i++) {
            for (int j = 0; j < 40; j++) {
                redisReply *rr = tls_read_reply(load[i]);
                ck_assert_msg(rr && rr->type == REDIS_REPLY_INTEGER, "round %d client %d: %s",
                              round, i, load[i]->err);
            }
        }
        tls_free_replies();
    }
    long long total = 0;
    for (int k = 0; k < 10; k++) {
        redisReply *r = it_cmd(c, "GET ctr%d", k);
        if (r->type == REDIS_REPLY_STRING) total += atoll(r->str);
    }
    ck_assert_int_eq(total, (long long)NLOAD * ROUNDS * 40);
    ck_assert_str_eq(served_cn(tp), "localhost");
}
END_TEST

/* ---- INFO and start-up ---- */

START_TEST(test_info) {
    if (builtin) return; /* the fields are Keel's */
    int tp;
    it_server *s = tls_start(&tp, NULL);
    redisContext *c = it_connect(s);
    tls_cli *t = tls_connect(tp, good_ctx());
    tls_expect(t, "+PONG", "PING");
    ck_assert_msg(!tls_ping_ok(tp, tls_ctx(cert("ca.crt"), NULL, NULL, 0, 0), NULL, 0),
                  "no cert accepted");
    redisReply *r = it_cmd(c, "INFO tls");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    ck_assert_msg(strstr(r->str, "# Tls") || strstr(r->str, "# tls") || strstr(r->str, "# TLS"),
                  "INFO tls: no section: %s", r->str);
    it_free(r);
    /* Two connections accepted: this one (open, its handshake done) and
     * the one without a certificate (its handshake failed). */
    it_wait_until(it_info_int(c, "tls", "tls_handshakes_failed") >= 1, TLS_WAIT_MS);
    ck_assert_int_ge(it_info_int(c, "tls", "tls_connections_current"), 1);
    ck_assert_int_ge(it_info_int(c, "tls", "tls_connections_accepted"), 2);
    ck_assert_int_ge(it_info_int(c, "tls", "tls_handshakes_completed"), 1);
    ck_assert_int_eq(it_info_int(c, "tls", "tls_port"), tp);
    char *listener = it_info_str(c, "tls", it_fmt("tls_listener_%d", tp));
    ck_assert_msg(listener != NULL, "INFO tls: no tls_listener_%d", tp);
    ck_assert_int_ge(it_kv_get(listener, "accepted"), 2);
    ck_assert_int_ge(it_kv_get(listener, "current"), 1);
    /* server.crt is valid for 365 days from now: its expiry is in the
     * future, and within 366 days. */
    long long now = (long long)time(NULL);
    long long exp = it_info_int(c, "tls", "tls_server_cert_expire_time");
    ck_assert_int_gt(exp, now + 364LL * 86400);
    ck_assert_int_lt(exp, now + 366LL * 86400);
    ck_assert_int_gt(it_info_int(c, "tls", "tls_ca_cert_expire_time"), now);
    ck_assert_int_eq(it_info_int(c, "tls", "tls_ca_cert_count"), 1); /* ca.crt */
    ck_assert_int_eq(it_info_int(c, "tls", "tls_enabled"), 1);
    /* A resumed session is counted. */
    long long resumed = it_info_int(c, "tls", "tls_sessions_resumed");
    SSL_CTX *ctx = good_ctx();
    SSL_SESSION *sess = first_session(tp, ctx);
    ck_assert_int_eq(resumes(tp, ctx, sess), 1);
    SSL_SESSION_free(sess);
    ck_assert_int_gt(it_info_int(c, "tls", "tls_sessions_resumed"), resumed);
    /* A reload is counted, and so is a failed one. */
    long long ok = it_info_int(c, "tls", "tls_reloads_ok");
    long long failed = it_info_int(c, "tls", "tls_reloads_failed");
    expect_config_ok(c, "tls-cert-file", cert("server.crt"));
    r = it_cmd(c, "CONFIG SET tls-cert-file %s", cert("client.key"));
    ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
    ck_assert_int_eq(it_info_int(c, "tls", "tls_reloads_ok"), ok + 1);
    ck_assert_int_eq(it_info_int(c, "tls", "tls_reloads_failed"), failed + 1);
}
END_TEST

/* The refusal names the directive and the module to load. */
static void expect_names_module(const char *out, const char *directive) {
    ck_assert_msg(strstr(out, directive) != NULL, "the refusal does not name %s: %s", directive,
                  out);
    ck_assert_msg(strstr(out, "loadmodule") && (strstr(out, "tls module") || strstr(out, "tls.so")),
                  "the refusal does not name the module to load: %s", out);
}

START_TEST(test_tls_line_without_module) {
    if (builtin) return;
    expect_names_module(it_start_refused("tls-port 6390\n", NULL), "tls-port");
    expect_names_module(it_start_refused(NULL, "--tls-cert-file", cert("server.crt"), NULL),
                        "tls-cert-file");
    /* At run time, CONFIG SET of such a name says the module is missing. */
    it_server *s = it_start(NULL);
    redisContext *c = it_connect(s);
    redisReply *r = it_cmd(c, "CONFIG SET tls-port %d", it_free_port());
    ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
    ck_assert_msg(strstr(r->str, "tls") && strstr(r->str, "not loaded"), "CONFIG SET tls-port: %s",
                  r->str);
}
END_TEST

/* ---- faults: each ends with the server still serving ---- */

START_TEST(test_fault_plaintext_on_tls_port) {
    int tp;
    it_server *s = tls_start(&tp, NULL);
    int fd = raw_tcp(tp);
    const char *ping = "*1\r\n$4\r\nPING\r\n";
    ck_assert_int_eq(send(fd, ping, strlen(ping), MSG_NOSIGNAL), (ssize_t)strlen(ping));
    ck_assert_msg(wait_closed(fd, TLS_WAIT_MS), "plain text on the TLS port was not closed");
    /* And an inline command (no RESP framing). */
    fd = raw_tcp(tp);
    send(fd, "PING\r\n", 6, MSG_NOSIGNAL);
    ck_assert_msg(wait_closed(fd, TLS_WAIT_MS), "inline PING on the TLS port was not closed");
    /* Each is a logged handshake failure (Keel's wording). */
    if (!builtin)
        it_wait_until(strstr(it_read_file(s->log), "TLS handshake from 127.0.0.1:") != NULL,
                      TLS_WAIT_MS);
    expect_serving(s, tp);
}
END_TEST

START_TEST(test_fault_tls_on_plain_port) {
    int tp;
    it_server *s = tls_start(&tp, NULL);
    size_t hlen;
    char *hello = client_hello(&hlen);
    int fd = raw_tcp(s->port);
    ck_assert_int_eq(send(fd, hello, hlen, MSG_NOSIGNAL), (ssize_t)hlen);
    /* Whatever the plain port answers, the server must not hang the
     * client forever nor break. */
    if (!builtin)
        ck_assert_msg(wait_closed(fd, TLS_WAIT_MS),
                      "a ClientHello on the plain port was not closed");
    /* A real TLS client on the plain port fails its handshake. */
    SSL_CTX *ctx = good_ctx();
    if (!builtin) {
        int ok;
        tls_open(s->port, ctx, NULL, &ok);
        ck_assert_msg(!ok, "a TLS handshake succeeded on the plain port");
    }
    expect_serving(s, tp);
}
END_TEST

START_TEST(test_fault_stalled_handshakes) {
    int tp;
    /* Keel closes a handshake that takes longer than the transport's
     * handshake timeout (10 s, not configurable); Valkey has none. */
    it_server *s = tls_start(&tp, NULL);
    size_t hlen;
    char *hello = client_hello(&hlen);
    /* One client sends half a ClientHello and hangs; 200 more connect and
     * send nothing or a part; none of them may keep others waiting. */
    enum { NSTALL = 200 };
    int stalled[NSTALL + 1];
    stalled[0] = raw_tcp(tp);
    ck_assert_int_eq(send(stalled[0], hello, hlen / 2, MSG_NOSIGNAL), (ssize_t)(hlen / 2));
    for (int i = 1; i <= NSTALL; i++) {
        stalled[i] = raw_tcp(tp);
        if (i % 2) send(stalled[i], hello, (size_t)(i % (int)hlen), MSG_NOSIGNAL);
    }
    /* Served meanwhile, TLS and plain. */
    expect_serving(s, tp);
    tls_cli *t = tls_connect(tp, good_ctx());
    tls_expect(t, "+PONG", "PING");
    if (!builtin) {
        /* The handshake timeout closes every stalled one. */
        for (int i = 0; i <= NSTALL; i++)
            ck_assert_msg(wait_closed(stalled[i], TLS_WAIT_MS), "stalled handshake %d still open",
                          i);
        redisContext *c = it_connect(s);
        it_wait_until(it_info_int(c, "tls", "tls_handshakes_in_progress") == 0, TLS_WAIT_MS);
        ck_assert_msg(strstr(it_read_file(s->log), "timed out") != NULL,
                      "no log line for a handshake timeout: %s", it_log_tail(s));
    }
    /* The established client outlived them all. */
    tls_expect(t, "+PONG", "PING");
    expect_serving(s, tp);
}
END_TEST

/* How many times needle occurs in hay. */
static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* At the default loglevel (notice), clients that leave without
 * close_notify (as redis-benchmark -k 0 does) make only verbose lines: they
 * take nothing from the per-second log budget, so nothing is reported as
 * suppressed and each refused certificate is still logged (Keel). */
START_TEST(test_log_budget) {
    if (builtin) return;
    int tp;
    it_server *s = tls_start(&tp, NULL);
    SSL_CTX *wrong =
        tls_ctx(cert("ca.crt"), cert("other-client.crt"), cert("other-client.key"), 0, 0);
    enum { ROUNDS = 3, CHURN = 60 };
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < CHURN; i++) {
            tls_cli *t = tls_connect(tp, good_ctx());
            tls_expect(t, "+PONG", "PING");
            tls_close(t, 0);
        }
        ck_assert_msg(!tls_ping_ok(tp, wrong, NULL, 0), "wrong-CA cert accepted");
    }
    it_wait_until(count_of(it_read_file(s->log), "certificate verify failed") >= ROUNDS,
                  TLS_WAIT_MS);
    const char *log = it_read_file(s->log);
    ck_assert_msg(count_of(log, "certificate verify failed") == ROUNDS,
                  "not every refused certificate was logged: %s", it_log_tail(s));
    ck_assert_msg(strstr(log, "suppressed") == NULL, "lines below loglevel were counted: %s",
                  it_log_tail(s));
    expect_serving(s, tp);
}
END_TEST

/* Hundreds of full handshakes, 50 connections open at a time, each
 * doing a command; the counters follow (Keel). */
START_TEST(test_many_handshakes) {
    int tp;
    it_server *s = tls_start(&tp, NULL);
    redisContext *c = it_connect(s);
    long long before = builtin ? 0 : it_info_int(c, "tls", "tls_handshakes_completed");
    enum { ROUNDS = 8, AT_ONCE = 50 };
    SSL_CTX *ctx = good_ctx();
    for (int round = 0; round < ROUNDS; round++) {
        tls_cli *open_now[AT_ONCE];
        for (int i = 0; i < AT_ONCE; i++)
            open_now[i] = tls_connect(tp, ctx);
        for (int i = 0; i < AT_ONCE; i++) {
            tls_expect(open_now[i], ":1", "SADD members %d-%d", round, i);
            tls_close(open_now[i], i % 2);
        }
        tls_free_replies();
    }
    expect_int(c, ROUNDS * AT_ONCE, "SCARD members");
    if (!builtin)
        ck_assert_int_ge(it_info_int(c, "tls", "tls_handshakes_completed") - before,
                         ROUNDS * AT_ONCE);
    expect_serving(s, tp);
}
END_TEST

START_TEST(test_fault_renegotiation) {
    int tp;
    it_server *s = tls_start(&tp, NULL);
    SSL_CTX *v12 = tls_ctx(cert("ca.crt"), cert("client.crt"), cert("client.key"), TLS1_2_VERSION,
                           TLS1_2_VERSION);
    tls_cli *bystander = tls_connect(tp, good_ctx());
    tls_cli *t = tls_connect(tp, v12);
    tls_expect(t, "+PONG", "PING");
    ck_assert_int_eq(SSL_renegotiate(t->ssl), 1);
    ERR_clear_error();
    /* Refused (SSL_OP_NO_CLIENT_RENEGOTIATION, as Valkey): the server
     * answers the new ClientHello with an alert. */
    ck_assert_msg(SSL_do_handshake(t->ssl) != 1, "a client renegotiation succeeded");
    tls_close(t, 0);
    tls_expect(bystander, "+PONG", "PING");
    expect_serving(s, tp);
}
END_TEST

START_TEST(test_fault_truncated_record) {
    int tp;
    it_server *s = tls_start(&tp, NULL);
    size_t hlen;
    char *hello = client_hello(&hlen);
    /* A few bytes of a record, then close. */
    int fd = raw_tcp(tp);
    send(fd, hello, 7, MSG_NOSIGNAL);
    raw_close(fd);
    /* A record header announcing more than it carries, then close. */
    fd = raw_tcp(tp);
    send(fd, hello, hlen - 10, MSG_NOSIGNAL);
    raw_close(fd);
    /* After the handshake: half an application data record, then close. */
    tls_cli *t = tls_connect(tp, good_ctx());
    tls_expect(t, "+PONG", "PING");
    const char rec[] = {0x17, 0x03, 0x03, 0x01, 0x00, 0x42, 0x42, 0x42};
    ck_assert_int_eq(send(t->fd, rec, sizeof(rec), MSG_NOSIGNAL), (ssize_t)sizeof(rec));
    shutdown(t->fd, SHUT_WR);
    ck_assert_msg(wait_closed(t->fd, TLS_WAIT_MS), "a truncated record left the connection open");
    /* A garbage record on an established connection closes only it. */
    tls_cli *t2 = tls_connect(tp, good_ctx());
    tls_cli *other = tls_connect(tp, good_ctx());
    const char bad[] = {0x17, 0x03, 0x03, 0x00, 0x20, 1,  2,  3,  4,  5,  6,  7,  8,
                        9,    10,   11,   12,   13,   14, 15, 16, 17, 18, 19, 20, 21,
                        22,   23,   24,   25,   26,   27, 28, 29, 30, 31, 32};
    ck_assert_int_eq(send(t2->fd, bad, sizeof(bad), MSG_NOSIGNAL), (ssize_t)sizeof(bad));
    ck_assert_msg(wait_closed(t2->fd, TLS_WAIT_MS), "a forged record left the connection open");
    tls_expect(other, "+PONG", "PING");
    expect_serving(s, tp);
}
END_TEST

START_TEST(test_fault_close_mid_reply) {
    int tp;
    it_server *s = tls_start(&tp, NULL);
    tls_cli *t = tls_connect(tp, good_ctx());
    char *val = it_random_bytes(8 << 20, 7);
    const char *argv[] = {"SET", "big", val};
    size_t lens[] = {3, 3, (size_t)8 << 20};
    redisReply *r = tls_cmd_argv(t, 3, argv, lens);
    ck_assert_msg(r && r->type == REDIS_REPLY_STATUS, "SET: %s", t->err);
    /* Several clients ask for the 8 MB value, read a little, and leave
     * without a close_notify while the server is still writing. */
    for (int i = 0; i < 4; i++) {
        tls_cli *g = tls_connect(tp, good_ctx());
        const char *get = "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n";
        ck_assert_int_eq(tls_send(g, get, strlen(get), 0), 0);
        char buf[4096];
        if (i % 2) ck_assert_int_gt(SSL_read(g->ssl, buf, sizeof(buf)), 0);
        tls_close(g, 0);
    }
    /* Another client gets the whole value. */
    tls_cli *u = tls_connect(tp, good_ctx());
    const char *gargv[] = {"GET", "big"};
    size_t glens[] = {3, 3};
    r = tls_cmd_argv(u, 2, gargv, glens);
    ck_assert_msg(r && r->type == REDIS_REPLY_STRING, "GET: %s", u->err);
    ck_assert_uint_eq(r->len, (size_t)8 << 20);
    ck_assert_msg(memcmp(r->str, val, r->len) == 0, "GET: content differs");
    tls_free_replies();
    expect_serving(s, tp);
}
END_TEST

/* ---- admission: maxclients and protected mode before the handshake ---- */

/* A TLS client beyond maxclients is closed before its handshake (nothing
 * is written: there is no session to write through), as in Valkey; the
 * server keeps serving. */
START_TEST(test_maxclients_tls_refused) {
    int tp;
    it_server *s = tls_start(&tp, "--maxclients", "2", NULL);
    redisContext *c = it_connect(s);
    /* the harness's start-up probe may not be freed yet (with I/O threads
     * its end of stream is a job): it would hold a slot */
    it_wait_until(it_info_int(c, "clients", "connected_clients") == 1, TLS_WAIT_MS);
    tls_cli *t = tls_connect(tp, good_ctx());
    tls_expect(t, "+PONG", "PING");
    int ok;
    tls_open(tp, good_ctx(), NULL, &ok);
    ck_assert_msg(!ok, "a TLS client beyond maxclients completed its handshake");
    ck_assert_int_ge(it_info_int(c, "stats", "rejected_connections"), 1);
    tls_close(t, 1);
    it_wait_until(it_info_int(c, "clients", "connected_clients") == 1, TLS_WAIT_MS);
    /* expect_serving's TLS client might still hold the second slot when its
     * plain one connects: one at a time here, c is the plain one */
    char why[512];
    ck_assert_msg(tls_ping_ok(tp, good_ctx(), why, sizeof(why)), "TLS PING failed: %s", why);
    expect_status(c, "PONG", "PING");
}
END_TEST

/* Connections in their handshake hold a client slot: a flood of stalled
 * handshakes cannot push the server past maxclients. */
START_TEST(test_maxclients_counts_handshakes) {
    int tp;
    it_server *s = tls_start(&tp, "--maxclients", "3", NULL);
    redisContext *c = it_connect(s);
    it_wait_until(it_info_int(c, "clients", "connected_clients") == 1, TLS_WAIT_MS);
    int a = raw_tcp(tp), b = raw_tcp(tp);
    if (!builtin)
        it_wait_until(it_info_int(c, "tls", "tls_handshakes_in_progress") == 2, TLS_WAIT_MS);
    int ok;
    tls_open(tp, good_ctx(), NULL, &ok);
    ck_assert_msg(!ok, "a TLS client beyond maxclients (two in their handshake) got in");
    redisContext *plain = redisConnect("127.0.0.1", s->port);
    ck_assert_ptr_nonnull(plain);
    redisReply *r = redisCommand(plain, "PING");
    ck_assert_msg(r && r->type == REDIS_REPLY_ERROR && strstr(r->str, "max number of clients"),
                  "a plain client beyond maxclients: %s", r ? r->str : plain->errstr);
    if (r) freeReplyObject(r);
    redisFree(plain);
    raw_close(a);
    raw_close(b);
    if (!builtin)
        it_wait_until(it_info_int(c, "tls", "tls_handshakes_in_progress") == 0, TLS_WAIT_MS);
    it_wait_until(it_info_int(c, "clients", "connected_clients") == 1, TLS_WAIT_MS);
    expect_serving(s, tp);
}
END_TEST

/* A non-loopback IPv4 address of this machine, or NULL. */
static const char *outside_addr(void) {
    static char buf[INET_ADDRSTRLEN];
    struct ifaddrs *ifs, *i;
    if (getifaddrs(&ifs) != 0) return NULL;
    buf[0] = '\0';
    for (i = ifs; i && !buf[0]; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        struct in_addr in = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
        if ((ntohl(in.s_addr) >> 24) != 127) inet_ntop(AF_INET, &in, buf, sizeof(buf));
    }
    freeifaddrs(ifs);
    return buf[0] ? buf : NULL;
}

/* Protected mode refuses a TLS client from outside before its handshake
 * (closed, nothing written); the server keeps serving. */
START_TEST(test_protected_mode_tls_refused) {
    const char *addr = outside_addr();
    if (!addr) {
        fprintf(stderr, "protected_mode: no non-loopback IPv4 address here, skipped\n");
        return;
    }
    int tp;
    it_server *s = tls_start(&tp, "--bind", "127.0.0.1", addr, "--protected-mode", "yes", NULL);
    redisContext *c = it_connect(s);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)tp)};
    inet_pton(AF_INET, addr, &sa.sin_addr);
    ck_assert_msg(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect %s:%d: %s", addr,
                  tp, strerror(errno));
    size_t hlen;
    char *hello = client_hello(&hlen);
    send(fd, hello, hlen, MSG_NOSIGNAL);
    ck_assert_msg(wait_closed(fd, TLS_WAIT_MS), "protected mode kept a TLS client from %s", addr);
    close(fd);
    ck_assert_int_ge(it_info_int(c, "stats", "rejected_connections"), 1);
    expect_serving(s, tp);
}
END_TEST

static Suite *tls_suite(void) {
    Suite *s = suite_create("tls");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"commands", test_ping_set_get},
        {"large", test_large_values},
        {"pipelining", test_pipelining},
        {"port0", test_port0_tls_only},
        {"port_runtime", test_port_runtime},
        {"port_slots", test_port_slots},
        {"auth", test_auth_clients},
        {"expired_server", test_expired_server_cert},
        {"resumption", test_session_resumption},
        {"protocols", test_protocols},
        {"ca_dir_key_pass", test_ca_dir_key_pass},
        {"ciphers_dh", test_ciphers_dh},
        {"reload_config", test_reload_config_set},
        {"reload_disk", test_reload_on_disk},
        {"reload_load", test_reload_under_load},
        {"info", test_info},
        {"no_module", test_tls_line_without_module},
        {"fault_plaintext", test_fault_plaintext_on_tls_port},
        {"fault_tls_on_plain", test_fault_tls_on_plain_port},
        {"log_budget", test_log_budget},
        {"fault_stalled", test_fault_stalled_handshakes},
        {"many_handshakes", test_many_handshakes},
        {"fault_renegotiation", test_fault_renegotiation},
        {"fault_truncated", test_fault_truncated_record},
        {"fault_close_mid_reply", test_fault_close_mid_reply},
        {"maxclients", test_maxclients_tls_refused},
        {"maxclients_handshakes", test_maxclients_counts_handshakes},
        {"protected_mode", test_protected_mode_tls_refused},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, NULL, tls_teardown);
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void) {
    const char *mod = getenv("KEEL_TLS_MODULE");
    const char *gen = getenv("KEEL_TLS_GEN_CERTS");
    if (!mod || !*mod || !gen || !*gen) {
        fprintf(stderr, "check_it_tls: KEEL_TLS_MODULE (the tls module, or \"builtin\") and "
                        "KEEL_TLS_GEN_CERTS (gen_certs.sh) must be set\n");
        return EXIT_FAILURE;
    }
    builtin = !strcmp(mod, "builtin");
    if (!builtin && access(mod, R_OK) != 0) {
        fprintf(stderr, "check_it_tls: the tls module %s is not built\n", mod);
        return EXIT_FAILURE;
    }
    snprintf(certdir, sizeof(certdir), "/tmp/keel-tls-XXXXXX");
    if (!mkdtemp(certdir)) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "bash '%s' '%s'", gen, certdir);
    if (system(cmd) != 0) {
        fprintf(stderr, "check_it_tls: %s failed\n", cmd);
        return EXIT_FAILURE;
    }
    int rc = it_run(tls_suite());
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", certdir);
    if (system(cmd) != 0) fprintf(stderr, "check_it_tls: could not remove %s\n", certdir);
    return rc;
}
