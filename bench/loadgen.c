/* loadgen.c -- closed-loop large-value load generator for Keel and its peers.
 *
 * N connections, one request in flight on each (no pipelining), driven by
 * one epoll loop on nonblocking sockets. Every request is the same
 * `GET <key>` or `SET <key> <value of S bytes>`; the SET request (header,
 * value, CRLF) is built once and shared by all connections. Replies are read
 * whole but never stored: each read goes into one fixed 1 MiB scratch
 * buffer and a small RESP state machine skips bulk payloads by length, so
 * the client's cost does not grow with the value size.
 *
 * After a warm-up it measures for T seconds and reports requests/s, payload
 * Gbit/s (value bytes that crossed the socket inside the window, counted as
 * they move, so 64 MB values are not quantised to whole requests) and the
 * per-request latency percentiles (p50, p99, p99.9, max) of the requests
 * that completed inside the window.
 *
 * Probe mode (--probe) adds one more connection that sends GET of a small
 * key (64-byte value) one at a time and reports its own requests/s and
 * percentiles: the small client of the noisy-neighbour test. The probe runs
 * in its own thread with a blocking socket, so its latency is the server's
 * (and the kernel's), not the time the load loop takes to get round to it.
 * With -c 0 only the probe runs.
 *
 * Output: a human-readable summary on stderr and one machine-readable
 * `key=value` line per traffic class on stdout (`LOAD ...`, `PROBE ...`).
 *
 * Build: cc -O2 -Wall -Wextra -Werror -std=c11 -pthread -o loadgen loadgen.c
 * Linux only (epoll). Exit status 0 on success, 1 on a setup error, 2 when
 * the run completed but had errors or timeouts (the numbers still print). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SCRATCH_LEN (1u << 20) /* every read lands here, then is dropped */
#define LINE_MAX_LEN 1024      /* longest RESP header/simple line we accept */
#define MAX_CONNS 4096
#define MAX_SAMPLES (16u * 1024 * 1024) /* latency samples kept per class */
#define PROBE_BUF (64 * 1024)

/* ---- options ---- */

static struct {
    const char *host;
    const char *port;
    int conns;
    int op_set; /* 0: GET, 1: SET */
    size_t size;
    const char *key;
    double duration;
    double warmup;
    double timeout; /* seconds a single request may take */
    int prepare;    /* SET the key (and probe key) before the run */
    int probe;
    const char *probe_key;
    size_t probe_size;
    int expect_len; /* GET: check the bulk length equals size */
    int quiet;
} opt = {
    .host = "127.0.0.1",
    .port = "6379",
    .conns = 8,
    .size = 1u << 20,
    .key = NULL,
    .duration = 5.0,
    .warmup = 1.0,
    .timeout = 30.0,
    .probe_key = "loadgen:probe",
    .probe_size = 64,
    .expect_len = 1,
};

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("loadgen: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Parses sizes like 64, 256k, 1m, 8mb, 1g (powers of 1024). */
static size_t parse_size(const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) die("bad size: %s", s);
    unsigned long long mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1ull << 10; end++; break;
    case 'm': case 'M': mul = 1ull << 20; end++; break;
    case 'g': case 'G': mul = 1ull << 30; end++; break;
    default: break;
    }
    if (*end == 'b' || *end == 'B') end++;
    if (*end) die("bad size: %s", s);
    return (size_t)(v * mul);
}

static double parse_double(const char *s, const char *what) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || v < 0) die("bad %s: %s", what, s);
    return v;
}

/* ---- latency samples ---- */

typedef struct {
    uint64_t *v;
    size_t n, cap;
    uint64_t dropped;
} samples;

static void samples_add(samples *s, uint64_t ns) {
    if (s->n == s->cap) {
        if (s->cap >= MAX_SAMPLES) {
            s->dropped++;
            return;
        }
        size_t cap = s->cap ? s->cap * 2 : 4096;
        uint64_t *v = realloc(s->v, cap * sizeof(*v));
        if (!v) {
            s->dropped++;
            return;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = ns;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted samples, in microseconds. */
static double pct_us(const samples *s, double p) {
    if (s->n == 0) return 0.0;
    size_t rank = (size_t)(p * (double)s->n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > s->n) rank = s->n;
    return (double)s->v[rank - 1] / 1000.0;
}

/* ---- traffic classes and connections ---- */

typedef struct {
    const char *name;
    /* the request every connection of this class sends */
    const char *req;
    size_t req_len;
    size_t payload_out; /* value bytes inside req (SET), for Gbit/s */
    size_t req_payload_off; /* where the value starts inside req */
    long long expect_bulk;  /* expected bulk length of the reply, -2: any */
    /* measured inside the window */
    uint64_t completed;
    uint64_t payload_bytes; /* value bytes moved (either direction) */
    uint64_t errors;        /* error replies and unexpected replies */
    uint64_t timeouts;
    uint64_t reconnects;
    /* whole run, for diagnostics */
    uint64_t completed_total;
    uint64_t errors_total;
    char first_error[160];
    samples lat;
} tclass;

enum { ST_LINE, ST_SKIP };

typedef struct {
    int fd;
    tclass *cls;
    /* request being sent */
    size_t sent;
    uint64_t start_ns;
    int in_flight;
    int want_out; /* EPOLLOUT registered */
    /* reply parser */
    int state;
    char line[LINE_MAX_LEN];
    size_t line_len;
    uint64_t skip;            /* bytes of bulk payload + CRLF still to drop */
    long long pending;        /* elements still to complete the reply */
    int top_type;             /* first byte of the top-level reply */
    long long top_len;        /* its length (bulk/array), if any */
} lconn;

static tclass load_cls, probe_cls;
static lconn conns[MAX_CONNS + 1];
static int nconns;
static int epfd;
static char *scratch;
static struct addrinfo *server_addr;
static uint64_t win_start, win_end; /* measurement window, ns */
static volatile sig_atomic_t stop_flag;

static int in_window(uint64_t t) { return t >= win_start && t < win_end; }

static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

static void resolve(void) {
    struct addrinfo hints = {0};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(opt.host, opt.port, &hints, &server_addr);
    if (rc) die("cannot resolve %s:%s: %s", opt.host, opt.port, gai_strerror(rc));
}

/* Blocking connect, then switched to nonblocking. */
static int connect_server(void) {
    for (struct addrinfo *a = server_addr; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            return fd;
        }
        close(fd);
    }
    return -1;
}

static void set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) die("fcntl: %s", strerror(errno));
}

/* Builds `*N\r\n$len\r\narg...` for up to three arguments into a malloc'd
 * buffer; the third argument (the value) is `vlen` bytes of a pattern. */
static char *build_request(const char *cmd, const char *key, size_t vlen, int with_value, size_t *len,
                           size_t *value_off) {
    char head[256];
    int h;
    size_t klen = strlen(key), clen = strlen(cmd);
    if (with_value)
        h = snprintf(head, sizeof(head), "*3\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n$%zu\r\n", clen, cmd, klen, key, vlen);
    else
        h = snprintf(head, sizeof(head), "*2\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", clen, cmd, klen, key);
    if (h < 0 || (size_t)h >= sizeof(head)) die("key too long");
    size_t total = (size_t)h + (with_value ? vlen + 2 : 0);
    char *buf = malloc(total);
    if (!buf) die("out of memory for a %zu-byte request", total);
    memcpy(buf, head, (size_t)h);
    if (with_value) {
        for (size_t i = 0; i < vlen; i++) buf[h + i] = (char)('a' + (i * 7 + i / 4096) % 26);
        buf[h + vlen] = '\r';
        buf[h + vlen + 1] = '\n';
    }
    *len = total;
    *value_off = (size_t)h;
    return buf;
}

static void ep_update(lconn *c, int want_out) {
    if (c->want_out == want_out) return;
    struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl: %s", strerror(errno));
    c->want_out = want_out;
}

static void conn_open(lconn *c) {
    c->fd = connect_server();
    if (c->fd < 0) die("cannot connect to %s:%s: %s", opt.host, opt.port, strerror(errno));
    set_nonblock(c->fd);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl: %s", strerror(errno));
    c->want_out = 0;
    c->in_flight = 0;
    c->state = ST_LINE;
    c->line_len = 0;
}

static void conn_reset(lconn *c) {
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->cls->reconnects++;
    conn_open(c);
}

static void note_error(tclass *k, const char *what, size_t len) {
    uint64_t t = now_ns();
    k->errors_total++;
    if (in_window(t)) k->errors++;
    if (!k->first_error[0]) {
        size_t n = len < sizeof(k->first_error) - 1 ? len : sizeof(k->first_error) - 1;
        memcpy(k->first_error, what, n);
        k->first_error[n] = '\0';
    }
}

/* Counts value bytes that moved inside the window. */
static void count_payload(tclass *k, uint64_t n) {
    if (n && in_window(now_ns())) k->payload_bytes += n;
}

/* Sends what the socket takes of the current request. Returns -1 when the
 * connection had to be reset. */
static int conn_send(lconn *c) {
    tclass *k = c->cls;
    while (c->sent < k->req_len) {
        ssize_t w = send(c->fd, k->req + c->sent, k->req_len - c->sent, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                ep_update(c, 1);
                return 0;
            }
            note_error(k, strerror(errno), strlen(strerror(errno)));
            conn_reset(c);
            return -1;
        }
        if (k->payload_out) { /* count the value bytes among those just sent */
            size_t a = c->sent, b = c->sent + (size_t)w;
            size_t lo = k->req_payload_off, hi = k->req_payload_off + k->payload_out;
            size_t s = a > lo ? a : lo, e = b < hi ? b : hi;
            if (e > s) count_payload(k, e - s);
        }
        c->sent += (size_t)w;
    }
    ep_update(c, 0);
    return 0;
}

static void conn_arm(lconn *c) {
    c->sent = 0;
    c->in_flight = 1;
    c->state = ST_LINE;
    c->line_len = 0;
    c->pending = 1;
    c->top_type = 0;
    c->top_len = 0;
    c->start_ns = now_ns();
}

static void conn_start_request(lconn *c) {
    conn_arm(c);
    /* A send error resets the connection (a fresh one, nothing in flight);
     * try the request again on it, a few times at most. */
    for (int tries = 0; conn_send(c) < 0; tries++) {
        if (tries == 5) die("the server keeps closing connections: %s", c->cls->first_error);
        conn_arm(c);
    }
}

static void conn_reply_done(lconn *c) {
    tclass *k = c->cls;
    uint64_t t = now_ns();
    int bad = 0;
    if (c->top_type == '-') {
        bad = 1; /* note_error already called with the text */
    } else if (k->expect_bulk >= -1 && (c->top_type != '$' || c->top_len != k->expect_bulk)) {
        char msg[96];
        int n = snprintf(msg, sizeof(msg), "unexpected reply type '%c' len %lld (expected bulk of %lld)",
                         c->top_type ? c->top_type : '?', c->top_len, k->expect_bulk);
        note_error(k, msg, (size_t)n);
        bad = 1;
    } else if (k->expect_bulk == -3 && c->top_type != '+') {
        char msg[96];
        int n = snprintf(msg, sizeof(msg), "unexpected reply type '%c' (expected +OK)", c->top_type ? c->top_type : '?');
        note_error(k, msg, (size_t)n);
        bad = 1;
    }
    c->in_flight = 0;
    k->completed_total++;
    if (in_window(t) && !bad) {
        k->completed++;
        samples_add(&k->lat, t - c->start_ns);
    }
}

/* One element (or the line that starts one) is complete. */
static void element_done(lconn *c) {
    c->pending--;
}

/* Handles a complete header/simple line (without CRLF). Returns -1 on a
 * protocol error (the connection is reset). */
static int handle_line(lconn *c) {
    tclass *k = c->cls;
    char *l = c->line;
    size_t n = c->line_len;
    if (n == 0) goto bad;
    int type = l[0];
    int top = c->top_type == 0;
    if (top) c->top_type = type;
    switch (type) {
    case '+':
    case ':':
    case ',':
    case '_':
    case '#':
        element_done(c);
        return 0;
    case '-':
        if (top) note_error(k, l, n);
        element_done(c);
        return 0;
    case '$':
    case '*':
    case '%':
    case '~': {
        char tmp[32];
        if (n - 1 >= sizeof(tmp) || n < 2) goto bad;
        memcpy(tmp, l + 1, n - 1);
        tmp[n - 1] = '\0';
        char *end;
        long long len = strtoll(tmp, &end, 10);
        if (*end) goto bad;
        if (top) c->top_len = len;
        if (type == '$') {
            if (len < 0) {
                element_done(c);
            } else {
                c->state = ST_SKIP;
                c->skip = (uint64_t)len + 2;
            }
        } else {
            element_done(c);
            if (len > 0) c->pending += (type == '%') ? 2 * len : len;
        }
        return 0;
    }
    default:
        goto bad;
    }
bad:
    note_error(k, "protocol error in reply", 23);
    conn_reset(c);
    return -1;
}

/* Feeds received bytes through the reply state machine. Returns -1 when the
 * connection was reset. */
static int conn_feed(lconn *c, const char *p, size_t n) {
    tclass *k = c->cls;
    while (n > 0) {
        if (!c->in_flight) {
            note_error(k, "unsolicited data from server", 28);
            conn_reset(c);
            return -1;
        }
        if (c->state == ST_SKIP) {
            uint64_t take = c->skip < n ? c->skip : n;
            /* the last two bytes of the skip are the CRLF, not payload */
            uint64_t pay_before = c->skip > 2 ? c->skip - 2 : 0;
            uint64_t pay_take = take < pay_before ? take : pay_before;
            if (k->payload_out == 0) count_payload(k, pay_take);
            c->skip -= take;
            p += take;
            n -= (size_t)take;
            if (c->skip == 0) {
                c->state = ST_LINE;
                c->line_len = 0;
                element_done(c);
            }
        } else {
            const char *nl = memchr(p, '\n', n);
            size_t take = nl ? (size_t)(nl - p) + 1 : n;
            if (c->line_len + take > LINE_MAX_LEN) {
                note_error(k, "reply line too long", 19);
                conn_reset(c);
                return -1;
            }
            memcpy(c->line + c->line_len, p, take);
            c->line_len += take;
            p += take;
            n -= take;
            if (!nl) continue;
            if (c->line_len < 2 || c->line[c->line_len - 2] != '\r') {
                note_error(k, "protocol error in reply", 23);
                conn_reset(c);
                return -1;
            }
            c->line_len -= 2;
            if (handle_line(c) < 0) return -1;
            if (c->state == ST_LINE) c->line_len = 0;
        }
        if (c->pending == 0) {
            conn_reply_done(c);
            if (n > 0) {
                note_error(k, "unsolicited data from server", 28);
                conn_reset(c);
                return -1;
            }
        }
    }
    return 0;
}

static int conn_readable(lconn *c) {
    for (;;) {
        ssize_t r = recv(c->fd, scratch, SCRATCH_LEN, 0);
        if (r > 0) {
            if (conn_feed(c, scratch, (size_t)r) < 0) return -1;
            if ((size_t)r < SCRATCH_LEN) return 0;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) return 0;
        const char *why = r == 0 ? "server closed the connection" : strerror(errno);
        note_error(c->cls, why, strlen(why));
        conn_reset(c);
        return -1;
    }
}

/* Blocking SET used by --prepare: sends the request, waits for +OK. */
static void prepare_key(const char *key, size_t vlen) {
    size_t len, off;
    char *req = build_request("SET", key, vlen, 1, &len, &off);
    int fd = connect_server();
    if (fd < 0) die("cannot connect to %s:%s: %s", opt.host, opt.port, strerror(errno));
    struct timeval tv = {.tv_sec = (time_t)opt.timeout + 1};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    for (size_t s = 0; s < len;) {
        ssize_t w = send(fd, req + s, len - s, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("prepare SET %s: send: %s", key, strerror(errno));
        s += (size_t)w;
    }
    char buf[256];
    size_t got = 0;
    while (got < sizeof(buf) - 1 && !memchr(buf, '\n', got)) {
        ssize_t r = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die("prepare SET %s: no reply: %s", key, r ? strerror(errno) : "closed");
        got += (size_t)r;
    }
    buf[got] = '\0';
    if (strncmp(buf, "+OK\r\n", 5) != 0) {
        buf[strcspn(buf, "\r\n")] = '\0';
        die("prepare SET %s (%zu bytes) failed: %s", key, vlen, buf);
    }
    close(fd);
    free(req);
}

static void class_init(tclass *k, const char *name, int set, const char *key, size_t vlen) {
    memset(k, 0, sizeof(*k));
    k->name = name;
    size_t off;
    k->req = build_request(set ? "SET" : "GET", key, vlen, set, &k->req_len, &off);
    k->req_payload_off = off;
    k->payload_out = set ? vlen : 0;
    if (set)
        k->expect_bulk = -3; /* +OK */
    else
        k->expect_bulk = opt.expect_len ? (long long)vlen : -2;
}

/* ---- the probe: its own thread, one blocking connection ---- */

static atomic_int probe_stop;
static atomic_int probe_fd = -1;

static int probe_connect(void) {
    int fd = connect_server();
    if (fd < 0) die("probe: cannot connect to %s:%s: %s", opt.host, opt.port, strerror(errno));
    struct timeval tv = {.tv_sec = (time_t)opt.timeout,
                         .tv_usec = (suseconds_t)((opt.timeout - (double)(time_t)opt.timeout) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    atomic_store(&probe_fd, fd);
    return fd;
}

/* recv that reports a timeout (-2), a closed (-3) or broken (-1) socket. */
static ssize_t probe_recv(int fd, char *buf, size_t len) {
    for (;;) {
        ssize_t r = recv(fd, buf, len, 0);
        if (r > 0) return r;
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -2;
        return r == 0 ? -3 : -1;
    }
}

/* One request and its whole reply. 0: a good reply; 1: an error or
 * unexpected reply (counted); -1: the connection must be replaced (counted
 * unless the run is stopping). */
static int probe_roundtrip(int fd, tclass *k, char *buf) {
    for (size_t s = 0; s < k->req_len;) {
        ssize_t w = send(fd, k->req + s, k->req_len - s, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (atomic_load(&probe_stop)) return -1;
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                k->timeouts++;
                note_error(k, "request timed out (send)", 24);
            } else {
                note_error(k, strerror(errno), strlen(strerror(errno)));
            }
            return -1;
        }
        s += (size_t)w;
    }
    size_t got = 0;
    char *nl = NULL;
    ssize_t r;
    while (!(nl = memchr(buf, '\n', got))) { /* the header line */
        if (got == PROBE_BUF) goto proto;
        r = probe_recv(fd, buf + got, PROBE_BUF - got);
        if (r < 0) goto io_error;
        got += (size_t)r;
    }
    size_t hdr = (size_t)(nl - buf) + 1;
    if (hdr < 3 || buf[hdr - 2] != '\r') goto proto;
    if (buf[0] == '-') {
        note_error(k, buf, hdr - 2);
        return hdr == got ? 1 : -1;
    }
    if (buf[0] != '$') {
        char msg[96];
        int n = snprintf(msg, sizeof(msg), "unexpected reply type '%c' (expected a bulk)", buf[0]);
        note_error(k, msg, (size_t)n);
        return hdr == got ? 1 : -1;
    }
    char *end;
    long long len = strtoll(buf + 1, &end, 10);
    if (end != buf + hdr - 2) goto proto;
    uint64_t need = hdr + (len >= 0 ? (uint64_t)len + 2 : 0);
    while (got < need) { /* the payload, dropped as it comes */
        uint64_t want = need - got < PROBE_BUF ? need - got : PROBE_BUF;
        r = probe_recv(fd, buf, (size_t)want);
        if (r < 0) goto io_error;
        got += (size_t)r;
    }
    if (got > need) {
        note_error(k, "unsolicited data from server", 28);
        return -1;
    }
    if (k->expect_bulk >= -1 && len != k->expect_bulk) {
        char msg[96];
        int n = snprintf(msg, sizeof(msg), "bulk of %lld bytes (expected %lld)", len, k->expect_bulk);
        note_error(k, msg, (size_t)n);
        return 1;
    }
    return 0;
io_error:
    if (atomic_load(&probe_stop)) return -1;
    if (r == -2) {
        k->timeouts++;
        note_error(k, "request timed out", 17);
    } else {
        const char *why = r == -3 ? "server closed the connection" : strerror(errno);
        note_error(k, why, strlen(why));
    }
    return -1;
proto:
    note_error(k, "protocol error in reply", 23);
    return -1;
}

static void *probe_main(void *arg) {
    tclass *k = arg;
    char *buf = malloc(PROBE_BUF);
    if (!buf) die("out of memory");
    int fd = probe_connect();
    while (!atomic_load(&probe_stop)) {
        uint64_t t0 = now_ns();
        if (t0 >= win_end) break;
        int rc = probe_roundtrip(fd, k, buf);
        uint64_t t1 = now_ns();
        if (atomic_load(&probe_stop)) break;
        k->completed_total++;
        if (rc == 0 && in_window(t1)) {
            k->completed++;
            samples_add(&k->lat, t1 - t0);
        }
        if (rc < 0) {
            atomic_store(&probe_fd, -1);
            close(fd);
            k->reconnects++;
            fd = probe_connect();
        }
    }
    atomic_store(&probe_fd, -1);
    close(fd);
    free(buf);
    return NULL;
}

static void report(tclass *k, const char *tag, double secs, size_t vsize) {
    if (k->lat.n) qsort(k->lat.v, k->lat.n, sizeof(uint64_t), cmp_u64);
    double rps = (double)k->completed / secs;
    double gbps = (double)k->payload_bytes * 8.0 / secs / 1e9;
    double p50 = pct_us(&k->lat, 0.50), p99 = pct_us(&k->lat, 0.99), p999 = pct_us(&k->lat, 0.999);
    double mx = k->lat.n ? (double)k->lat.v[k->lat.n - 1] / 1000.0 : 0.0;
    printf("%s conns=%d size=%zu secs=%.3f requests=%" PRIu64 " rps=%.1f gbps=%.3f p50_us=%.1f p99_us=%.1f "
           "p999_us=%.1f max_us=%.1f errors=%" PRIu64 " timeouts=%" PRIu64 " reconnects=%" PRIu64 "\n",
           tag, k == &probe_cls ? 1 : opt.conns, vsize, secs, k->completed, rps, gbps, p50, p99, p999, mx,
           k->errors, k->timeouts, k->reconnects);
    if (!opt.quiet) {
        fprintf(stderr,
                "%-5s %s %zu B: %" PRIu64 " req in %.2f s = %.1f req/s, %.3f Gbit/s payload; latency p50 %.1f us, "
                "p99 %.1f us, p99.9 %.1f us, max %.1f us; errors %" PRIu64 ", timeouts %" PRIu64 "\n",
                tag, k->name, vsize, k->completed, secs, rps, gbps, p50, p99, p999, mx, k->errors, k->timeouts);
        if (k->first_error[0]) fprintf(stderr, "      first error: %s\n", k->first_error);
        if (k->lat.dropped) fprintf(stderr, "      %" PRIu64 " latency samples dropped\n", k->lat.dropped);
    }
}

static void usage(FILE *f) {
    fputs("usage: loadgen [options]\n"
          "  -h HOST          server host (127.0.0.1)\n"
          "  -p PORT          server port (6379)\n"
          "  -c N             load connections, one request in flight each (8; 0 = probe only)\n"
          "  -o get|set       command the load connections send (get)\n"
          "  -s SIZE          value size, e.g. 256k, 8m (1m)\n"
          "  -k KEY           key (default lg:<size>)\n"
          "  -t SECS          measured duration (5)\n"
          "  -w SECS          warm-up before measuring (1)\n"
          "  -T SECS          per-request timeout; the connection is reset (30)\n"
          "  --prepare        SET the key (and the probe key) before the run\n"
          "  --any-reply      GET: accept a reply of any length (e.g. a stand-in)\n"
          "  --probe          one extra connection: GET of a small key, one at a time\n"
          "  --probe-key KEY  (loadgen:probe)\n"
          "  --probe-size N   value size of the probe key for --prepare (64)\n"
          "  -q               no human-readable summary on stderr\n",
          f);
}

int main(int argc, char **argv) {
    static const struct option lopts[] = {
        {"prepare", no_argument, NULL, 'P'},   {"probe", no_argument, NULL, 'R'},
        {"probe-key", required_argument, NULL, 'K'}, {"probe-size", required_argument, NULL, 'S'},
        {"any-reply", no_argument, NULL, 'A'}, {"help", no_argument, NULL, 'H'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "h:p:c:o:s:k:t:w:T:q", lopts, NULL)) != -1) {
        switch (ch) {
        case 'h': opt.host = optarg; break;
        case 'p': opt.port = optarg; break;
        case 'c':
            opt.conns = atoi(optarg);
            if (opt.conns < 0 || opt.conns > MAX_CONNS) die("-c must be 0..%d", MAX_CONNS);
            break;
        case 'o':
            if (!strcmp(optarg, "get")) opt.op_set = 0;
            else if (!strcmp(optarg, "set")) opt.op_set = 1;
            else die("-o must be get or set");
            break;
        case 's': opt.size = parse_size(optarg); break;
        case 'k': opt.key = optarg; break;
        case 't': opt.duration = parse_double(optarg, "duration"); break;
        case 'w': opt.warmup = parse_double(optarg, "warm-up"); break;
        case 'T': opt.timeout = parse_double(optarg, "timeout"); break;
        case 'q': opt.quiet = 1; break;
        case 'P': opt.prepare = 1; break;
        case 'R': opt.probe = 1; break;
        case 'K': opt.probe_key = optarg; break;
        case 'S': opt.probe_size = parse_size(optarg); break;
        case 'A': opt.expect_len = 0; break;
        case 'H': usage(stdout); return 0;
        default: usage(stderr); return 1;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 1;
    }
    if (opt.conns == 0 && !opt.probe) die("nothing to do: -c 0 without --probe");
    if (opt.duration <= 0) die("-t must be > 0");
    char keybuf[64];
    if (!opt.key) {
        snprintf(keybuf, sizeof(keybuf), "lg:%zu", opt.size);
        opt.key = keybuf;
    }

    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    resolve();
    scratch = malloc(SCRATCH_LEN);
    if (!scratch) die("out of memory");

    if (opt.prepare) {
        if (opt.conns > 0) prepare_key(opt.key, opt.size);
        if (opt.probe) prepare_key(opt.probe_key, opt.probe_size);
    }
    if (opt.conns > 0) class_init(&load_cls, opt.op_set ? "SET" : "GET", opt.op_set, opt.key, opt.size);
    if (opt.probe) class_init(&probe_cls, "probe GET", 0, opt.probe_key, opt.probe_size);
    if (opt.probe && !opt.prepare) probe_cls.expect_bulk = -2; /* size unknown */

    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) die("epoll_create1: %s", strerror(errno));
    for (int i = 0; i < opt.conns; i++) {
        conns[nconns].cls = &load_cls;
        conn_open(&conns[nconns++]);
    }

    uint64_t t0 = now_ns();
    win_start = t0 + (uint64_t)(opt.warmup * 1e9);
    win_end = win_start + (uint64_t)(opt.duration * 1e9);
    uint64_t timeout_ns = (uint64_t)(opt.timeout * 1e9);
    for (int i = 0; i < nconns; i++) conn_start_request(&conns[i]);
    pthread_t probe_thread;
    if (opt.probe && pthread_create(&probe_thread, NULL, probe_main, &probe_cls) != 0) die("pthread_create failed");

    struct epoll_event evs[64];
    uint64_t last_check = t0;
    while (!stop_flag) {
        uint64_t t = now_ns();
        if (t >= win_end) break;
        int wait_ms = (int)((win_end - t) / 1000000u) + 1;
        if (wait_ms > 10) wait_ms = 10;
        int n = epoll_wait(epfd, evs, 64, wait_ms);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait: %s", strerror(errno));
        }
        for (int i = 0; i < n; i++) {
            lconn *c = evs[i].data.ptr;
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
                if (conn_readable(c) < 0) {
                    conn_start_request(c);
                    continue;
                }
            }
            if (c->in_flight && (evs[i].events & EPOLLOUT) && c->sent < c->cls->req_len) {
                if (conn_send(c) < 0) {
                    conn_start_request(c);
                    continue;
                }
            }
            if (!c->in_flight) conn_start_request(c);
        }
        t = now_ns();
        if (t - last_check >= 10000000u) { /* request timeouts, every 10 ms */
            last_check = t;
            for (int i = 0; i < nconns; i++) {
                lconn *c = &conns[i];
                if (c->in_flight && t - c->start_ns > timeout_ns) {
                    c->cls->timeouts++;
                    note_error(c->cls, "request timed out", 17);
                    conn_reset(c);
                    conn_start_request(c);
                }
            }
        }
    }
    if (opt.probe) {
        atomic_store(&probe_stop, 1);
        int pfd = atomic_load(&probe_fd);
        if (pfd >= 0) shutdown(pfd, SHUT_RDWR); /* unblocks a recv past the window */
        pthread_join(probe_thread, NULL);
    }
    uint64_t end = now_ns();
    if (end > win_end) end = win_end;
    double secs = end > win_start ? (double)(end - win_start) / 1e9 : 0.0;
    if (secs <= 0) die("interrupted before the measurement started");
    if (stop_flag && !opt.quiet) fprintf(stderr, "loadgen: interrupted; reporting %.2f s\n", secs);

    int rc = 0;
    if (opt.conns > 0) {
        report(&load_cls, "LOAD", secs, opt.size);
        if (load_cls.errors || load_cls.timeouts) rc = 2;
    }
    if (opt.probe) {
        report(&probe_cls, "PROBE", secs, opt.probe_size);
        if (probe_cls.errors || probe_cls.timeouts) rc = 2;
    }
    fflush(stdout);
    for (int i = 0; i < nconns; i++) close(conns[i].fd);
    close(epfd);
    freeaddrinfo(server_addr);
    return rc;
}
