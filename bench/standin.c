/* standin.c -- the "stand-in" server: the large-value limit of this machine.
 *
 * Answers every request (any RESP command, or an inline command line) with
 * the same pre-built bulk reply `$<S>\r\n<S bytes>\r\n`, sent with writev
 * straight from one buffer built at start-up: no lookup, no copy, no
 * allocation per request. Single-threaded, nonblocking sockets, one epoll
 * loop, like a single-threaded cache server with a perfect write path. Driven
 * by bench/loadgen, it measures what the kernel's loopback (and the client)
 * can move, which is the ceiling the servers are reported against.
 *
 * Request bytes are parsed only to count requests (one reply each); bulk
 * arguments are skipped by length through a fixed scratch buffer.
 *
 *   standin -p PORT [-b ADDR] -s SIZE      (SIZE: 8m, 256k, ...)
 *
 * Prints `ready port=PORT size=SIZE` on stdout once listening; exits on
 * SIGTERM/SIGINT.
 *
 * Build: cc -O2 -Wall -Wextra -Werror -std=c11 -o standin standin.c */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define SCRATCH_LEN (1u << 20)
#define LINE_MAX_LEN (64 * 1024) /* inline commands and RESP headers */
#define MAX_IOV 16

static char *reply;
static size_t reply_len;
static char *scratch;
static int epfd;
static volatile sig_atomic_t stop_flag;

enum { P_START, P_MB_ARGHDR, P_MB_SKIP, P_INLINE };

typedef struct sconn {
    int fd;
    int want_out;
    /* request parser */
    int state;
    char line[LINE_MAX_LEN];
    size_t line_len;
    long long args_left; /* multibulk arguments still to read */
    uint64_t skip;       /* bulk bytes + CRLF still to drop */
    /* replies */
    uint64_t pending; /* replies owed */
    size_t off;       /* bytes of the current reply already sent */
} sconn;

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("standin: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

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

static void conn_close(sconn *c) {
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c);
}

static void set_out(sconn *c, int on) {
    if (c->want_out == on) return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = on;
}

/* Sends owed replies until done or the socket is full. -1: closed. */
static int conn_flush(sconn *c) {
    while (c->pending > 0) {
        struct iovec iov[MAX_IOV];
        int n = 0;
        iov[n].iov_base = reply + c->off;
        iov[n].iov_len = reply_len - c->off;
        n++;
        for (uint64_t i = 1; i < c->pending && n < MAX_IOV; i++, n++) {
            iov[n].iov_base = reply;
            iov[n].iov_len = reply_len;
        }
        ssize_t w = writev(c->fd, iov, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                set_out(c, 1);
                return 0;
            }
            return -1;
        }
        size_t left = (size_t)w;
        while (left > 0) {
            size_t rest = reply_len - c->off;
            size_t t = left < rest ? left : rest;
            c->off += t;
            left -= t;
            if (c->off == reply_len) {
                c->off = 0;
                c->pending--;
            }
        }
    }
    set_out(c, 0);
    return 0;
}

static void request_done(sconn *c) {
    c->pending++;
    c->state = P_START;
    c->line_len = 0;
}

/* A header line (without CRLF) is complete. -1: protocol error. */
static int handle_line(sconn *c) {
    char *l = c->line;
    size_t n = c->line_len;
    if (c->state == P_INLINE) {
        size_t i = 0;
        while (i < n && (l[i] == ' ' || l[i] == '\t')) i++;
        if (i < n) request_done(c); /* empty lines are ignored */
        c->state = P_START;
        c->line_len = 0;
        return 0;
    }
    if (n < 2) return -1;
    l[n] = '\0';
    char *end;
    long long v = strtoll(l + 1, &end, 10);
    if (*end) return -1;
    if (c->state == P_START) { /* "*N" */
        if (l[0] != '*') return -1;
        c->line_len = 0;
        if (v <= 0) {
            c->state = P_START;
            return 0;
        }
        c->args_left = v;
        c->state = P_MB_ARGHDR;
        return 0;
    }
    /* P_MB_ARGHDR: "$len" */
    if (l[0] != '$' || v < 0) return -1;
    c->skip = (uint64_t)v + 2;
    c->state = P_MB_SKIP;
    c->line_len = 0;
    return 0;
}

static int conn_feed(sconn *c, const char *p, size_t n) {
    while (n > 0) {
        if (c->state == P_MB_SKIP) {
            uint64_t t = c->skip < n ? c->skip : n;
            c->skip -= t;
            p += t;
            n -= (size_t)t;
            if (c->skip == 0) {
                if (--c->args_left == 0)
                    request_done(c);
                else
                    c->state = P_MB_ARGHDR;
            }
            continue;
        }
        if (c->state == P_START && c->line_len == 0 && p[0] != '*') c->state = P_INLINE;
        const char *nl = memchr(p, '\n', n);
        size_t t = nl ? (size_t)(nl - p) + 1 : n;
        if (c->line_len + t >= LINE_MAX_LEN) return -1;
        memcpy(c->line + c->line_len, p, t);
        c->line_len += t;
        p += t;
        n -= t;
        if (!nl) continue;
        c->line_len--; /* '\n' */
        if (c->line_len && c->line[c->line_len - 1] == '\r') c->line_len--;
        else if (c->state != P_INLINE) return -1;
        if (handle_line(c) < 0) return -1;
    }
    return 0;
}

static int conn_read(sconn *c) {
    for (;;) {
        ssize_t r = read(c->fd, scratch, SCRATCH_LEN);
        if (r > 0) {
            if (conn_feed(c, scratch, (size_t)r) < 0) return -1;
            if ((size_t)r < SCRATCH_LEN) return 0;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) return 0;
        return -1;
    }
}

int main(int argc, char **argv) {
    const char *bind_addr = "127.0.0.1";
    int port = 0;
    size_t size = 0;
    int ch;
    while ((ch = getopt(argc, argv, "p:b:s:")) != -1) {
        switch (ch) {
        case 'p': port = atoi(optarg); break;
        case 'b': bind_addr = optarg; break;
        case 's': size = parse_size(optarg); break;
        default:
            fprintf(stderr, "usage: standin -p PORT [-b ADDR] -s SIZE\n");
            return 1;
        }
    }
    if (port <= 0 || port > 65535) die("-p PORT is required");
    if (size == 0) die("-s SIZE is required");

    char head[32];
    int h = snprintf(head, sizeof(head), "$%zu\r\n", size);
    reply_len = (size_t)h + size + 2;
    reply = malloc(reply_len);
    scratch = malloc(SCRATCH_LEN);
    if (!reply || !scratch) die("out of memory");
    memcpy(reply, head, (size_t)h);
    for (size_t i = 0; i < size; i++) reply[h + i] = (char)('a' + (i * 7 + i / 4096) % 26);
    reply[reply_len - 2] = '\r';
    reply[reply_len - 1] = '\n';

    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0) die("socket: %s", strerror(errno));
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1) die("bad address %s", bind_addr);
    if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) die("bind %s:%d: %s", bind_addr, port, strerror(errno));
    if (listen(lfd, 511) < 0) die("listen: %s", strerror(errno));
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) die("epoll_create1: %s", strerror(errno));
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &lev) < 0) die("epoll_ctl: %s", strerror(errno));
    printf("ready port=%d size=%zu\n", port, size);
    fflush(stdout);

    struct epoll_event evs[64];
    while (!stop_flag) {
        int n = epoll_wait(epfd, evs, 64, 100);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait: %s", strerror(errno));
        }
        for (int i = 0; i < n; i++) {
            sconn *c = evs[i].data.ptr;
            if (!c) { /* listener */
                for (;;) {
                    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0) break;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                    c = calloc(1, sizeof(*c));
                    if (!c) {
                        close(fd);
                        continue;
                    }
                    c->fd = fd;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
                        close(fd);
                        free(c);
                    }
                }
                continue;
            }
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
                if (conn_read(c) < 0) {
                    conn_close(c);
                    continue;
                }
            }
            if (c->pending > 0 && conn_flush(c) < 0) conn_close(c);
        }
    }
    close(lfd);
    close(epfd);
    return 0;
}
