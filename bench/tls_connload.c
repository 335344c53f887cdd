/* tls_connload.c -- new-TLS-connection load generator for bench/tls.sh.
 *
 * Keeps C connection attempts in flight on one epoll loop. Each one opens a
 * TCP connection, runs a full TLS handshake (OpenSSL, one client SSL_CTX for
 * all), sends PING, reads +PONG, sends close_notify and closes; then the
 * slot starts over. Every step waits on epoll for exactly what OpenSSL asked
 * for (WANT_READ / WANT_WRITE), so a handshake in progress costs no CPU
 * while the server works on it. redis-benchmark -k 0 --tls cannot be used
 * for this: it keeps a connecting socket's write event armed during the
 * handshake and retries it on every loop turn (about 80 read calls per
 * connection, 60 of them EAGAIN, measured with strace), so on a small machine
 * the client's spinning, not the server, sets the rate.
 *
 * After a warm-up it counts, for T seconds, the connections that completed
 * (PONG received), and prints on stdout one line:
 *   conns_per_sec=<completed per second> errors=<failed attempts>
 *   resumed=<completed as session resumptions>
 *   client_cpu_us_per_conn=<this process's user + system CPU per connection>
 * and a summary on stderr. With --resume each slot offers the session it got
 * last (TLS 1.3 ticket or 1.2 session), so the handshakes are resumptions.
 *
 * Build: cc -O2 -Wall -Wextra -Werror -std=c11 -o tls_connload tls_connload.c -lssl -lcrypto
 * Linux only (epoll). Exit status 0 on success, 1 on a setup error, 2 when
 * no connection completed or more than half of the attempts failed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SLOTS 4096
#define PING "PING\r\n"
#define PONG "+PONG\r\n"

static struct {
    const char *host;
    int port;
    int conns;
    double seconds;
    double warmup;
    const char *cacert;
    int resume;
} opt = {"127.0.0.1", 6379, 50, 5.0, 1.0, NULL, 0};

enum slot_state { ST_CONNECT, ST_HANDSHAKE, ST_WRITE, ST_READ };

typedef struct slot {
    int fd;
    enum slot_state state;
    SSL *ssl;
    SSL_SESSION *session; /* the last one the server gave this slot */
    size_t got;           /* bytes of +PONG\r\n read so far */
} slot;

static SSL_CTX *ctx;
static int ep;
static struct sockaddr_in addr;
static long long completed, failed, completed_in_window, failed_in_window, resumed_in_window;
static int measuring;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Interest in exactly one direction: what the current step waits for. */
static void slot_watch(slot *s, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.ptr = s};
    if (epoll_ctl(ep, EPOLL_CTL_MOD, s->fd, &ev) != 0) {
        perror("epoll_ctl");
        exit(1);
    }
}

static void slot_close(slot *s) {
    if (s->ssl) SSL_free(s->ssl);
    s->ssl = NULL;
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
}

/* Starts the slot's next attempt: a nonblocking connect. Returns 0, or -1
 * when no socket could be made (counted as a failure by the caller). */
static int slot_start(slot *s) {
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0) return -1;
    int one = 1;
    setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    s->state = ST_CONNECT;
    s->got = 0;
    if (connect(s->fd, (struct sockaddr *)&addr, sizeof addr) != 0 && errno != EINPROGRESS) {
        slot_close(s);
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = s};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, s->fd, &ev) != 0) {
        perror("epoll_ctl");
        exit(1);
    }
    return 0;
}

/* After an attempt ends (done or failed): count it and start the next. */
static void slot_next(slot *s, int ok) {
    if (ok) {
        completed++;
        if (measuring) completed_in_window++;
    } else {
        failed++;
        if (measuring) failed_in_window++;
    }
    slot_close(s);
    while (slot_start(s) != 0) {
        failed++;
        if (measuring) failed_in_window++;
        if (failed > 1000000) exit(2);
    }
}

/* Maps an OpenSSL result to the next wait: 1 = wait (interest set), 0 = go
 * on, -1 = the attempt failed. */
static int slot_ssl_wait(slot *s, int rc) {
    switch (SSL_get_error(s->ssl, rc)) {
    case SSL_ERROR_WANT_READ:
        slot_watch(s, EPOLLIN);
        return 1;
    case SSL_ERROR_WANT_WRITE:
        slot_watch(s, EPOLLOUT);
        return 1;
    default:
        ERR_clear_error();
        return -1;
    }
}

/* Runs the slot's steps as far as they go without waiting; a step that
 * fails breaks out of the switch, which ends the attempt. */
static void slot_step(slot *s) {
    for (;;) {
        int rc;
        switch (s->state) {
        case ST_CONNECT: {
            int err = 0;
            socklen_t len = sizeof err;
            getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err != 0) break;
            s->ssl = SSL_new(ctx);
            if (!s->ssl || !SSL_set_fd(s->ssl, s->fd)) break;
            if (opt.resume && s->session) SSL_set_session(s->ssl, s->session);
            s->state = ST_HANDSHAKE;
            continue;
        }
        case ST_HANDSHAKE:
            rc = SSL_connect(s->ssl);
            if (rc != 1) {
                if (slot_ssl_wait(s, rc) > 0) return;
                break;
            }
            s->state = ST_WRITE;
            continue;
        case ST_WRITE:
            /* A retry after WANT_* passes the same buffer and length. */
            rc = SSL_write(s->ssl, PING, (int)strlen(PING));
            if (rc <= 0) {
                if (slot_ssl_wait(s, rc) > 0) return;
                break;
            }
            s->state = ST_READ;
            slot_watch(s, EPOLLIN);
            continue;
        case ST_READ: {
            char buf[64];
            rc = SSL_read(s->ssl, buf, (int)sizeof buf);
            if (rc <= 0) {
                if (slot_ssl_wait(s, rc) > 0) return;
                break;
            }
            if (s->got + (size_t)rc > strlen(PONG) || memcmp(buf, PONG + s->got, (size_t)rc) != 0)
                break;
            s->got += (size_t)rc;
            if (s->got < strlen(PONG)) continue;
            if (measuring && SSL_session_reused(s->ssl)) resumed_in_window++;
            if (opt.resume) {
                /* TLS 1.3 tickets arrive after the handshake: the reply is
                 * past them, so the session is complete here. */
                SSL_SESSION *sess = SSL_get1_session(s->ssl);
                if (s->session) SSL_SESSION_free(s->session);
                s->session = sess;
            }
            /* close_notify, once: a polite close, not waited for. */
            SSL_shutdown(s->ssl);
            ERR_clear_error();
            slot_next(s, 1);
            return;
        }
        }
        slot_next(s, 0);
        return;
    }
}

static void usage(void) {
    fprintf(stderr, "usage: tls_connload [-h host] [-p port] [-c conns] [-t seconds] [-w warmup]\n"
                    "                    [--cacert FILE] [--resume]\n");
}

static int parse_args(int argc, char **argv) {
    static const struct option longs[] = {{"cacert", required_argument, NULL, 'C'},
                                          {"resume", no_argument, NULL, 'R'},
                                          {"help", no_argument, NULL, 'H'},
                                          {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h:p:c:t:w:", longs, NULL)) != -1) {
        switch (c) {
        case 'h':
            opt.host = optarg;
            break;
        case 'p':
            opt.port = atoi(optarg);
            break;
        case 'c':
            opt.conns = atoi(optarg);
            break;
        case 't':
            opt.seconds = atof(optarg);
            break;
        case 'w':
            opt.warmup = atof(optarg);
            break;
        case 'C':
            opt.cacert = optarg;
            break;
        case 'R':
            opt.resume = 1;
            break;
        default:
            usage();
            return -1;
        }
    }
    if (opt.port <= 0 || opt.port > 65535 || opt.conns < 1 || opt.conns > MAX_SLOTS ||
        opt.seconds <= 0 || opt.warmup < 0) {
        usage();
        return -1;
    }
    return 0;
}

/* The one client context: verification against --cacert when given (the
 * peers' benchmark clients verify too), no verification without it. */
static int ctx_setup(void) {
    ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) return -1;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (opt.cacert) {
        if (SSL_CTX_load_verify_locations(ctx, opt.cacert, NULL) != 1) {
            fprintf(stderr, "tls_connload: cannot load %s\n", opt.cacert);
            return -1;
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    }
    if (opt.resume) SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT);
    return 0;
}

int main(int argc, char **argv) {
    if (parse_args(argc, argv) != 0) return 1;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)opt.port);
    if (inet_pton(AF_INET, opt.host, &addr.sin_addr) != 1) {
        fprintf(stderr, "tls_connload: %s is not an IPv4 address\n", opt.host);
        return 1;
    }
    if (ctx_setup() != 0) return 1;
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
        perror("epoll_create1");
        return 1;
    }
    slot *slots = calloc((size_t)opt.conns, sizeof *slots);
    if (!slots) return 1;
    for (int i = 0; i < opt.conns; i++) {
        slots[i].fd = -1;
        if (slot_start(&slots[i]) != 0) {
            perror("tls_connload: connect");
            return 1;
        }
    }
    double t0 = now_s(), start = t0 + opt.warmup, end = start + opt.seconds, cpu0 = 0;
    struct epoll_event evs[256];
    for (double t = t0; t < end; t = now_s()) {
        if (!measuring && t >= start) {
            measuring = 1;
            cpu0 = cpu_s();
        }
        int n = epoll_wait(ep, evs, 256, 50);
        if (n < 0 && errno != EINTR) {
            perror("epoll_wait");
            return 1;
        }
        for (int i = 0; i < n; i++)
            slot_step(evs[i].data.ptr);
    }
    double cpu = cpu_s() - cpu0;
    double rate = (double)completed_in_window / opt.seconds;
    printf("conns_per_sec=%.1f errors=%lld resumed=%lld client_cpu_us_per_conn=%.1f\n", rate,
           failed_in_window, resumed_in_window,
           completed_in_window ? cpu * 1e6 / (double)completed_in_window : 0.0);
    fprintf(stderr,
            "tls_connload: %lld connections in %.1f s (%.0f/s), %lld failed; %lld/%lld in all\n",
            completed_in_window, opt.seconds, rate, failed_in_window, completed, failed);
    if (completed_in_window == 0 || failed_in_window > completed_in_window) return 2;
    return 0;
}
