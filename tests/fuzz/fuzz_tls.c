/* fuzz_tls.c -- libFuzzer target for the TLS module's server side
 * (modules/tls/tls_conn.c and the contexts of tls_ctx.c): its accept,
 * handshake, read, writev, has_pending and close hooks, called as the
 * server calls them, over a socketpair whose other end the fuzzer drives.
 *
 * The module's sources are compiled into the target with a fake host API
 * (only what those files call: log, memory, conn_fd/data/wait/host/port);
 * the contexts are built once from a self-signed EC certificate made at
 * start-up. The first input byte picks the mode:
 *   0  the rest is what a client sends from its first byte (ClientHellos,
 *      plain text, truncated records), then it closes its side;
 *   1  a real client completes the handshake (TLS 1.2 or 1.3, by a bit of
 *      the mode byte), then the rest goes raw onto the wire (forged or
 *      truncated records after the handshake);
 *   2  after a real handshake the rest is sent as application data in
 *      records cut at input-derived points; the server reads it and writes
 *      it back through writev in input-derived iovecs, and the client must
 *      get back exactly what it sent (the write-retry path included, as the
 *      socket buffer is small).
 * Any sanitizer report, or a difference in mode 2, is a crash. */
#include "tls.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

tls_state tls; /* tls_module.c's, which is not linked */

#define FUZZ_MAX_INPUT 65536
#define FUZZ_MAX_STEPS 4096

/* ---- the fake host ---- */

struct keel_conn {
    int fd;
    void *data;
    int want;
};

static void fake_log(keel_ctx *ctx, int level, const char *fmt, ...) {
    (void)ctx;
    (void)level;
    (void)fmt;
}

static void *fake_calloc(size_t n, size_t size) {
    return calloc(n, size);
}

static void *fake_alloc(size_t size) {
    return malloc(size);
}

static void *fake_realloc(void *p, size_t size) {
    return realloc(p, size);
}

static void fake_free(void *p) {
    free(p);
}

static int fake_conn_fd(keel_conn *c) {
    return c->fd;
}

static void fake_set_data(keel_conn *c, void *d) {
    c->data = d;
}

static void *fake_get_data(keel_conn *c) {
    return c->data;
}

static void fake_conn_wait(keel_conn *c, int want) {
    c->want = want;
}

static const char *fake_conn_host(keel_conn *c) {
    (void)c;
    return NULL;
}

static int fake_local_port(keel_conn *c) {
    (void)c;
    return 6380;
}

static keel_api_core fake_core = {.size = sizeof(keel_api_core),
                                  .log = fake_log,
                                  .alloc = fake_alloc,
                                  .calloc = fake_calloc,
                                  .realloc = fake_realloc,
                                  .free = fake_free};
static keel_api_transport fake_transport = {.size = sizeof(keel_api_transport),
                                            .conn_fd = fake_conn_fd,
                                            .conn_set_data = fake_set_data,
                                            .conn_get_data = fake_get_data,
                                            .conn_wait = fake_conn_wait,
                                            .conn_host = fake_conn_host,
                                            .conn_local_port = fake_local_port};
static keel_api fake_api = {.size = sizeof(keel_api),
                            .abi_major = KEEL_ABI_MAJOR,
                            .abi_minor = KEEL_ABI_MINOR,
                            .core = &fake_core,
                            .transport = &fake_transport};

static keel_transport_def def;
static SSL_CTX *client_ctx;

/* ---- set-up: a self-signed certificate, the module's contexts ---- */

static void die(const char *what) {
    fprintf(stderr, "fuzz_tls: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

static void write_cert(const char *crt, const char *key) {
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    if (!pk || !x) die("key generation failed");
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400L * 3650);
    X509_set_pubkey(x, pk);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1,
                               0);
    X509_set_issuer_name(x, n);
    if (!X509_sign(x, pk, EVP_sha256())) die("signing failed");
    FILE *f = fopen(crt, "w");
    FILE *g = fopen(key, "w");
    if (!f || !g || !PEM_write_X509(f, x) ||
        !PEM_write_PrivateKey(g, pk, NULL, NULL, 0, NULL, NULL))
        die("cannot write the certificate");
    fclose(f);
    fclose(g);
    X509_free(x);
    EVP_PKEY_free(pk);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    char dir[] = "/tmp/fuzz-tls-XXXXXX";
    if (!mkdtemp(dir)) die("mkdtemp failed");
    static char crt[64], key[64];
    snprintf(crt, sizeof(crt), "%s/cert.pem", dir);
    snprintf(key, sizeof(key), "%s/key.pem", dir);
    write_cert(crt, key);
    tls.api = &fake_api;
    tls.cfg.files[TLS_FILE_CERT] = crt;
    tls.cfg.files[TLS_FILE_KEY] = key;
    tls.cfg.protocols = TLS_PROTO_DEFAULT;
    tls.cfg.session_caching = 1;
    tls.cfg.session_cache_size = 20480;
    tls.cfg.session_cache_timeout = 300;
    tls.cfg.auth_clients = TLS_AUTH_NO;
    char err[512];
    tls.live = tls_ctxs_build(&tls.cfg, err, sizeof(err));
    if (!tls.live) die(err);
    /* The files are read: the contexts hold what they need. */
    unlink(crt);
    unlink(key);
    rmdir(dir);
    tls_transport_def_fill(&def);
    client_ctx = SSL_CTX_new(TLS_client_method());
    if (!client_ctx) die("client context");
    SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, NULL);
    return 0;
}

/* ---- one run ---- */

typedef struct run {
    keel_conn conn;
    int peer; /* the fuzzer's end */
    SSL *cli; /* modes 1 and 2 */
    int hs;   /* the server's last handshake result */
} run;

static void set_nonblock(int fd) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Small socket buffers, so that writes stop half-way and retry. */
static void small_buffers(int fd) {
    int n = 4096;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &n, sizeof(n));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &n, sizeof(n));
}

/* Steps the server's handshake and, in modes 1-2, the client's, until
 * both are done or stuck; returns 1 when both completed. */
static int handshake(run *r) {
    int cli_done = r->cli == NULL;
    for (int i = 0; i < FUZZ_MAX_STEPS; i++) {
        if (r->hs != KEEL_OK && r->hs != KEEL_ERR) r->hs = def.handshake(&r->conn, def.priv);
        if (!cli_done) {
            int c = SSL_do_handshake(r->cli);
            if (c == 1)
                cli_done = 1;
            else if (SSL_get_error(r->cli, c) != SSL_ERROR_WANT_READ &&
                     SSL_get_error(r->cli, c) != SSL_ERROR_WANT_WRITE)
                return 0;
        }
        if (r->hs == KEEL_ERR) return 0;
        if (r->hs == KEEL_OK && cli_done) return 1;
    }
    return 0;
}

/* Sends raw bytes (as much as the socket takes, the server reading in
 * between) and closes the fuzzer's write side. */
static void send_raw_and_read(run *r, const uint8_t *p, size_t n) {
    char buf[16384];
    for (int i = 0; i < FUZZ_MAX_STEPS && (n > 0 || i == 0); i++) {
        if (n > 0) {
            ssize_t w = send(r->peer, p, n, MSG_NOSIGNAL);
            if (w > 0) {
                p += w;
                n -= (size_t)w;
            }
        }
        if (n == 0) shutdown(r->peer, SHUT_WR);
        if (r->hs != KEEL_OK) {
            r->hs = def.handshake(&r->conn, def.priv);
            if (r->hs == KEEL_ERR) return;
            continue;
        }
        ssize_t got = def.read(&r->conn, buf, sizeof(buf), def.priv);
        if (got == 0 || (got < 0 && errno != EAGAIN)) return;
    }
    /* Drain what the server still buffered or can read. */
    for (int i = 0; i < FUZZ_MAX_STEPS && r->hs == KEEL_OK; i++) {
        ssize_t got = def.read(&r->conn, buf, sizeof(buf), def.priv);
        if (got <= 0 && !(got < 0 && errno == EAGAIN && def.has_pending(&r->conn, def.priv)))
            return;
    }
}

/* Mode 2: the client sends data in records, the server echoes it back
 * through writev; the client must read back the same bytes. */
static void echo(run *r, const uint8_t *p, size_t n, uint64_t seed) {
    static char in[FUZZ_MAX_INPUT], back[FUZZ_MAX_INPUT], sbuf[FUZZ_MAX_INPUT];
    size_t sent = 0, got = 0, received = 0, echoed = 0;
    memcpy(in, p, n);
    for (int i = 0; i < FUZZ_MAX_STEPS * 4 && received < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        if (sent < n) {
            size_t chunk = 1 + (seed >> 33) % 3000;
            if (chunk > n - sent) chunk = n - sent;
            int w = SSL_write(r->cli, in + sent, (int)chunk);
            if (w > 0) sent += (size_t)w;
        }
        ssize_t rd = def.read(&r->conn, sbuf + got, sizeof(sbuf) - got, def.priv);
        if (rd > 0) got += (size_t)rd;
        if (rd == 0 || (rd < 0 && errno != EAGAIN)) abort(); /* the client did nothing wrong */
        if (echoed < got) {
            /* Up to 4 iovecs of input-derived sizes over what is unsent. */
            struct iovec iov[4];
            int cnt = 0;
            size_t off = echoed;
            while (cnt < 4 && off < got) {
                size_t len = 1 + (seed >> (8 * cnt + 3)) % 5000;
                if (len > got - off) len = got - off;
                iov[cnt].iov_base = sbuf + off;
                iov[cnt].iov_len = len;
                off += len;
                cnt++;
            }
            ssize_t w = def.writev(&r->conn, iov, cnt, def.priv);
            if (w > 0) echoed += (size_t)w;
            if (w < 0 && errno != EAGAIN) abort();
        }
        int c = SSL_read(r->cli, back + received, (int)(sizeof(back) - received));
        if (c > 0) received += (size_t)c;
    }
    if (received != n || memcmp(back, in, n) != 0) {
        fprintf(stderr, "fuzz_tls: echo of %zu bytes came back as %zu bytes%s\n", n, received,
                received == n ? " that differ" : "");
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > FUZZ_MAX_INPUT) return 0;
    int mode = data[0] % 3;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 0;
    small_buffers(sv[0]);
    small_buffers(sv[1]);
    set_nonblock(sv[0]);
    set_nonblock(sv[1]);
    run r = {.conn = {.fd = sv[0]}, .peer = sv[1], .hs = KEEL_CONN_WANT_READ};
    if (def.accept(&r.conn, def.priv) != KEEL_OK) abort();
    if (mode != 0) {
        r.cli = SSL_new(client_ctx);
        int v = data[0] & 0x80 ? TLS1_2_VERSION : TLS1_3_VERSION;
        SSL_set_min_proto_version(r.cli, v);
        SSL_set_max_proto_version(r.cli, v);
        SSL_set_fd(r.cli, sv[1]);
        SSL_set_connect_state(r.cli);
        if (!handshake(&r)) abort(); /* a real client must get in */
    }
    uint64_t seed = 0x9E3779B97F4A7C15ULL ^ size;
    for (size_t i = 0; i < size && i < 16; i++)
        seed = (seed ^ data[i]) * 1099511628211ULL;
    if (mode == 2)
        echo(&r, data + 1, size - 1, seed);
    else
        send_raw_and_read(&r, data + 1, size - 1);
    def.close(&r.conn, def.priv);
    if (r.conn.data) abort(); /* close must drop the state */
    if (r.cli) SSL_free(r.cli);
    close(sv[0]);
    close(sv[1]);
    ERR_clear_error();
    return 0;
}
