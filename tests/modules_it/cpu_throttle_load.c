/* cpu_throttle_load.c -- an endless write load for cpu_throttle_test.sh.
 *
 * Usage: cpu_throttle_load <port> [connections (4)] [seconds (60)]
 *
 * Each connection to 127.0.0.1:<port> sends pipelined SETs (64-byte values,
 * 100,000 keys) as fast as the server reads them and throws the replies
 * away unread. Unlike redis-benchmark, which exits at the first error reply,
 * it keeps loading the server while writes are refused with THROTTLED; and
 * unlike redis-cli --pipe it parses nothing, so even a release server's
 * main thread saturates. It exits on SIGTERM, or after <seconds> so it
 * never outlives a test that forgot it. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNS 64
#define COMMANDS 4096 /* SETs in the buffer sent over and over */

static char *build_commands(size_t *len) {
    size_t cap = (size_t)COMMANDS * 128, n = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    unsigned state = 12345;
    for (int i = 0; i < COMMANDS; i++) {
        char key[32];
        state = state * 1103515245u + 12345u;
        int klen = snprintf(key, sizeof(key), "load:%u", (state >> 8) % 100000u);
        n += (size_t)snprintf(buf + n, cap - n, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$64\r\n%064d\r\n",
                              klen, key, i);
    }
    *len = n;
    return buf;
}

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <port> [connections] [seconds]\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]);
    int nconn = argc > 2 ? atoi(argv[2]) : 4;
    int seconds = argc > 3 ? atoi(argv[3]) : 60;
    if (port <= 0 || port > 65535 || nconn < 1 || nconn > MAX_CONNS || seconds < 1) {
        fprintf(stderr, "%s: bad arguments\n", argv[0]);
        return 2;
    }
    alarm((unsigned)seconds); /* SIGALRM ends the process */

    size_t len;
    char *cmds = build_commands(&len);
    if (!cmds) return 1;
    struct pollfd pfd[MAX_CONNS];
    size_t off[MAX_CONNS];
    for (int i = 0; i < nconn; i++) {
        pfd[i].fd = connect_to(port);
        if (pfd[i].fd < 0) {
            perror("cpu_throttle_load: connect");
            return 1;
        }
        pfd[i].events = POLLIN | POLLOUT;
        off[i] = 0;
    }
    static char sink[1 << 16];
    for (;;) {
        if (poll(pfd, (nfds_t)nconn, 1000) < 0) {
            if (errno == EINTR) continue;
            perror("cpu_throttle_load: poll");
            return 1;
        }
        for (int i = 0; i < nconn; i++) {
            if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL)) {
                fprintf(stderr, "cpu_throttle_load: connection %d closed\n", i);
                return 1;
            }
            if (pfd[i].revents & POLLIN) {
                ssize_t n = read(pfd[i].fd, sink, sizeof(sink));
                if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
                    fprintf(stderr, "cpu_throttle_load: connection %d closed\n", i);
                    return 1;
                }
            }
            if (pfd[i].revents & POLLOUT) {
                ssize_t n = write(pfd[i].fd, cmds + off[i], len - off[i]);
                if (n < 0 && errno != EINTR && errno != EAGAIN) {
                    perror("cpu_throttle_load: write");
                    return 1;
                }
                if (n > 0) off[i] = (off[i] + (size_t)n) % len;
            }
        }
    }
}
