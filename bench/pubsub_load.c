/* pubsub_load.c -- pub/sub fan-out load generator for Keel and its peers.
 *
 * S subscriber connections and P publisher connections on one epoll loop
 * over nonblocking sockets. Every subscriber subscribes to one channel
 * (SUBSCRIBE bench:ch) or, with --pattern, to a pattern matching it
 * (PSUBSCRIBE bench:*); every publisher keeps D pipelined
 * `PUBLISH bench:ch <64-byte message>` requests in flight (the request is
 * built once and shared). Messages are counted without parsing them: every
 * message frame has the same size (same channel, pattern and message), so
 * a subscriber's delivered count is its bytes after the confirmation
 * divided by the frame size. Publisher replies (`:<n>\r\n`) are counted by
 * their line ends.
 *
 * After a warm-up it measures for T seconds and prints, on stdout, one
 * machine-readable line (with -P 0 it only listens: a publisher is
 * driven from elsewhere, e.g. redis-benchmark under bench/callgrind runs):
 *   delivered_per_sec=<messages received by all subscribers per second>
 *   publishes_per_sec=<PUBLISH replies per second> subscribers=S publishers=P
 * and a human-readable summary on stderr.
 *
 * Build: cc -O2 -Wall -Wextra -Werror -std=c11 -o pubsub_load pubsub_load.c
 * Linux only (epoll). Exit status 0 on success, 1 on a setup error, 2 when
 * a connection broke during the run (the numbers still print). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SCRATCH_LEN (1u << 20) /* every read lands here, then is dropped */
#define MAX_CONNS 20000
#define MSG_LEN 64
#define CHANNEL "bench:ch"
#define PATTERN "bench:*"

static struct {
    const char *host;
    int port;
    int subscribers;
    int publishers;
    int depth;
    double seconds;
    double warmup;
    int pattern;
} opt = {"127.0.0.1", 6379, 100, 1, 32, 5.0, 1.0, 0};

typedef struct conn {
    int fd;
    int publisher;
    uint64_t bytes;     /* subscriber: message bytes received */
    uint64_t replies;   /* publisher: replies received */
    uint64_t in_flight; /* publisher: requests sent, not answered */
    size_t send_off;    /* publisher: bytes of the current batch sent */
    size_t send_len;
} conn;

static conn conns[MAX_CONNS];
static int nconns;
static int epfd;
static char scratch[SCRATCH_LEN];
static char *batch; /* D requests, built once */
static size_t request_len;
static size_t frame_len; /* one message frame */
static int broken;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what) {
    fprintf(stderr, "pubsub_load: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int bulk_len(size_t n) { /* "$<n>\r\n" + n + "\r\n" */
    char buf[32];
    return snprintf(buf, sizeof(buf), "$%zu\r\n", n) + (int)n + 2;
}

static size_t confirmation_len(void) {
    const char *what = opt.pattern ? "psubscribe" : "subscribe";
    const char *name = opt.pattern ? PATTERN : CHANNEL;
    return 4 + (size_t)bulk_len(strlen(what)) + (size_t)bulk_len(strlen(name)) + 4; /* :1\r\n */
}

static size_t message_frame_len(void) {
    size_t n = 4 + (size_t)bulk_len(strlen(opt.pattern ? "pmessage" : "message"));
    if (opt.pattern) n += (size_t)bulk_len(strlen(PATTERN));
    return n + (size_t)bulk_len(strlen(CHANNEL)) + (size_t)bulk_len(MSG_LEN);
}

static void build_batch(void) {
    char msg[MSG_LEN];
    memset(msg, 'm', sizeof(msg));
    char req[256];
    int n = snprintf(req, sizeof(req), "*3\r\n$7\r\nPUBLISH\r\n$%zu\r\n%s\r\n$%d\r\n",
                     strlen(CHANNEL), CHANNEL, MSG_LEN);
    memcpy(req + n, msg, MSG_LEN);
    memcpy(req + n + MSG_LEN, "\r\n", 2);
    request_len = (size_t)n + MSG_LEN + 2;
    batch = malloc(request_len * (size_t)opt.depth);
    if (!batch) die("malloc");
    for (int i = 0; i < opt.depth; i++)
        memcpy(batch + (size_t)i * request_len, req, request_len);
}

static int connect_one(void) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    char port[16];
    snprintf(port, sizeof(port), "%d", opt.port);
    if (getaddrinfo(opt.host, port, &hints, &ai) != 0) die("getaddrinfo");
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) die("connect");
    freeaddrinfo(ai);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void send_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("write");
        buf += w;
        len -= (size_t)w;
    }
}

static void set_nonblocking(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) die("fcntl");
}

static void watch(conn *c, uint32_t events, int op) {
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(epfd, op, c->fd, &ev) < 0) die("epoll_ctl");
}

/* Subscribers subscribe with a blocking socket and wait for the
 * confirmation, so the measurement starts with all of them listening. */
static void add_subscriber(void) {
    conn *c = &conns[nconns++];
    memset(c, 0, sizeof(*c));
    c->fd = connect_one();
    char req[128];
    const char *cmd = opt.pattern ? "PSUBSCRIBE" : "SUBSCRIBE";
    const char *name = opt.pattern ? PATTERN : CHANNEL;
    int n = snprintf(req, sizeof(req), "*2\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(cmd), cmd,
                     strlen(name), name);
    send_all(c->fd, req, (size_t)n);
    size_t want = confirmation_len(), got = 0;
    while (got < want) {
        ssize_t r = read(c->fd, scratch, want - got);
        if (r <= 0) die("subscribe");
        got += (size_t)r;
    }
    set_nonblocking(c->fd);
    watch(c, EPOLLIN, EPOLL_CTL_ADD);
}

static void publisher_send(conn *c) {
    for (;;) {
        if (c->send_off == c->send_len) {
            /* A new batch for the answered requests, up to D in flight. */
            uint64_t room = (uint64_t)opt.depth - c->in_flight;
            if (room == 0) return;
            c->send_off = 0;
            c->send_len = (size_t)room * request_len;
            c->in_flight += room;
        }
        ssize_t w = write(c->fd, batch + c->send_off, c->send_len - c->send_off);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            watch(c, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
            return;
        }
        if (w <= 0) {
            broken = 1;
            return;
        }
        c->send_off += (size_t)w;
    }
}

static void add_publisher(void) {
    conn *c = &conns[nconns++];
    memset(c, 0, sizeof(*c));
    c->fd = connect_one();
    c->publisher = 1;
    set_nonblocking(c->fd);
    watch(c, EPOLLIN, EPOLL_CTL_ADD);
}

static void on_readable(conn *c) {
    for (;;) {
        ssize_t r = read(c->fd, scratch, SCRATCH_LEN);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (r <= 0) {
            broken = 1;
            epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
            return;
        }
        if (!c->publisher) {
            c->bytes += (uint64_t)r;
        } else {
            for (ssize_t i = 0; i < r; i++)
                if (scratch[i] == '\n') {
                    c->replies++;
                    c->in_flight--;
                }
            publisher_send(c);
        }
        if ((size_t)r < SCRATCH_LEN) return;
    }
}

static void totals(uint64_t *delivered, uint64_t *published) {
    uint64_t bytes = 0, replies = 0;
    for (int i = 0; i < nconns; i++) {
        bytes += conns[i].bytes;
        replies += conns[i].replies;
    }
    *delivered = bytes / frame_len;
    *published = replies;
}

static void run_until(double end) {
    struct epoll_event evs[256];
    while (now_s() < end) {
        int n = epoll_wait(epfd, evs, 256, 100);
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(c);
            if (c->publisher && (evs[i].events & EPOLLOUT)) {
                watch(c, EPOLLIN, EPOLL_CTL_MOD);
                publisher_send(c);
            }
        }
    }
}

static void usage(void) {
    fprintf(stderr, "usage: pubsub_load [-h host] [-p port] [-s subscribers] [-P publishers]\n"
                    "                   [-d depth] [-t seconds] [-w warmup] [--pattern]\n");
    exit(1);
}

static void parse_args(int argc, char **argv) {
    static const struct option longs[] = {{"pattern", no_argument, NULL, 'm'}, {NULL, 0, NULL, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "h:p:s:P:d:t:w:m", longs, NULL)) != -1) {
        switch (ch) {
        case 'h':
            opt.host = optarg;
            break;
        case 'p':
            opt.port = atoi(optarg);
            break;
        case 's':
            opt.subscribers = atoi(optarg);
            break;
        case 'P':
            opt.publishers = atoi(optarg);
            break;
        case 'd':
            opt.depth = atoi(optarg);
            break;
        case 't':
            opt.seconds = atof(optarg);
            break;
        case 'w':
            opt.warmup = atof(optarg);
            break;
        case 'm':
            opt.pattern = 1;
            break;
        default:
            usage();
        }
    }
    if (opt.subscribers < 0 || opt.publishers < 0 || opt.depth < 1 || opt.seconds <= 0 ||
        opt.subscribers + opt.publishers > MAX_CONNS)
        usage();
}

/* 1000 subscribers need more descriptors than the usual soft limit. */
static void raise_fd_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    rlim_t want = (rlim_t)(opt.subscribers + opt.publishers + 64);
    if (rl.rlim_cur >= want) return;
    rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    raise_fd_limit();
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) die("epoll_create1");
    build_batch();
    frame_len = message_frame_len();
    for (int i = 0; i < opt.subscribers; i++)
        add_subscriber();
    for (int i = 0; i < opt.publishers; i++)
        add_publisher();
    for (int i = 0; i < nconns; i++)
        if (conns[i].publisher) publisher_send(&conns[i]);
    run_until(now_s() + opt.warmup);
    uint64_t d0, p0, d1, p1;
    totals(&d0, &p0);
    double t0 = now_s();
    run_until(t0 + opt.seconds);
    totals(&d1, &p1);
    double dt = now_s() - t0;
    double dps = (double)(d1 - d0) / dt, pps = (double)(p1 - p0) / dt;
    fprintf(stderr,
            "pubsub_load: %d %s subscriber(s), %d publisher(s) x %d in flight, %.1fs: "
            "%.0f messages delivered/s, %.0f publishes/s%s\n",
            opt.subscribers, opt.pattern ? "pattern" : "channel", opt.publishers, opt.depth, dt,
            dps, pps, broken ? " (a connection broke)" : "");
    printf("delivered_per_sec=%.0f publishes_per_sec=%.0f subscribers=%d publishers=%d\n", dps, pps,
           opt.subscribers, opt.publishers);
    return broken ? 2 : 0;
}
