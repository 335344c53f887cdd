/* harness.c -- the integration test harness: server processes, hiredis and
 * raw socket clients, a RESP2/RESP3 reader, reply rendering and assertions.
 * See harness.h. */
#include "harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define IT_MAX_ARGS 64
#define IT_START_ATTEMPTS 5
#define IT_READY_TIMEOUT_MS 10000
#define IT_STOP_TIMEOUT_MS 10000
#define IT_IO_TIMEOUT_S 30
#define IT_RAW_TIMEOUT_MS 10000

it_server *S;
redisContext *C;

/* ---- tracking: everything a test creates is released by it_teardown ---- */

enum { T_SERVER, T_CONTEXT, T_REPLY, T_RAW, T_VALUE, T_MEM };

typedef struct tracked {
    int kind;
    void *ptr;
} tracked;

static tracked *objs;
static size_t nobjs, capobjs;

static void track(int kind, void *ptr) {
    if (nobjs == capobjs) {
        capobjs = capobjs ? capobjs * 2 : 256;
        objs = realloc(objs, capobjs * sizeof(*objs));
        ck_assert_ptr_nonnull(objs);
    }
    objs[nobjs++] = (tracked){kind, ptr};
}

/* Forgets ptr (searching from the newest); returns 1 if it was tracked. */
static int untrack(void *ptr) {
    for (size_t i = nobjs; i-- > 0;) {
        if (objs[i].ptr == ptr) {
            objs[i] = objs[--nobjs];
            return 1;
        }
    }
    return 0;
}

void *it_alloc(size_t len) {
    void *p = calloc(1, len ? len : 1);
    ck_assert_ptr_nonnull(p);
    track(T_MEM, p);
    return p;
}

char *it_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = it_alloc((size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

char *it_fmt(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = it_alloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* ---- time ---- */

long long it_mstime(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void it_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

char *it_random_bytes(size_t len, unsigned seed) {
    unsigned char *p = it_alloc(len + 8);
    uint64_t x = 0x9E3779B97F4A7C15ULL ^ seed;
    /* Eight bytes per step: this also runs in -O0 ASan builds. */
    for (size_t i = 0; i < len; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t w = x * 0x2545F4914F6CDD1DULL;
        memcpy(p + i, &w, 8);
    }
    return (char *)p;
}

/* ---- string builder for renderings and messages ---- */

typedef struct sb {
    char *buf;
    size_t len, cap; /* cap includes the NUL */
} sb;

static void sb_add(sb *b, const char *s, size_t n) {
    if (b->cap == 0) return;
    size_t room = b->cap - 1 - b->len;
    if (n > room) n = room;
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

static void sb_str(sb *b, const char *s) {
    sb_add(b, s, strlen(s));
}

static void sb_printf(sb *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0) sb_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Appends s quoted, with C escapes; at most max payload bytes shown. */
static void sb_quoted(sb *b, const char *s, size_t n, size_t max) {
    sb_str(b, "\"");
    for (size_t i = 0; i < n && i < max; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '\\':
            sb_str(b, "\\\\");
            break;
        case '"':
            sb_str(b, "\\\"");
            break;
        case '\n':
            sb_str(b, "\\n");
            break;
        case '\r':
            sb_str(b, "\\r");
            break;
        case '\t':
            sb_str(b, "\\t");
            break;
        default:
            if (ch < 0x20 || ch > 0x7e)
                sb_printf(b, "\\x%02x", ch);
            else
                sb_add(b, (const char *)&ch, 1);
        }
    }
    if (n > max) sb_printf(b, "...(%zu bytes)", n);
    sb_str(b, "\"");
}

/* ---- canonical rendering ---- */

static void render_reply(sb *b, const redisReply *r, size_t max) {
    switch (r->type) {
    case REDIS_REPLY_STATUS:
        sb_str(b, "+");
        sb_add(b, r->str, r->len);
        break;
    case REDIS_REPLY_ERROR:
        sb_str(b, "-");
        sb_add(b, r->str, r->len);
        break;
    case REDIS_REPLY_INTEGER:
        sb_printf(b, ":%lld", r->integer);
        break;
    case REDIS_REPLY_NIL:
        sb_str(b, "nil");
        break;
    case REDIS_REPLY_STRING:
        sb_quoted(b, r->str, r->len, max);
        break;
    case REDIS_REPLY_ARRAY:
        sb_str(b, "[");
        for (size_t i = 0; i < r->elements; i++) {
            if (i) sb_str(b, ",");
            render_reply(b, r->element[i], max);
        }
        sb_str(b, "]");
        break;
    default:
        sb_printf(b, "?type%d", r->type);
    }
}

char *it_render(const redisReply *r, char *buf, size_t len) {
    sb b = {buf, 0, len};
    if (len) buf[0] = '\0';
    if (!r)
        sb_str(&b, "<no reply>");
    else
        render_reply(&b, r, (size_t)-1);
    return buf;
}

static void render_value(sb *b, const it_value *v, size_t max) {
    switch (v->type) {
    case '+':
        sb_str(b, "+");
        sb_add(b, v->str, v->len);
        break;
    case '-':
        sb_str(b, "-");
        sb_add(b, v->str, v->len);
        break;
    case '!':
        sb_str(b, "!");
        sb_add(b, v->str, v->len);
        break;
    case ':':
        sb_printf(b, ":%lld", v->integer);
        break;
    case '_':
        sb_str(b, "_");
        break;
    case ',':
        sb_str(b, ",");
        sb_add(b, v->str, v->len);
        break;
    case '(':
        sb_str(b, "(");
        sb_add(b, v->str, v->len);
        break;
    case '#':
        sb_str(b, v->integer ? "#t" : "#f");
        break;
    case '$':
        if (v->is_null)
            sb_str(b, "nil");
        else
            sb_quoted(b, v->str, v->len, max);
        break;
    case '=':
        sb_str(b, "=");
        sb_quoted(b, v->str, v->len, max);
        break;
    case '*':
    case '~':
    case '>':
        if (v->is_null) {
            sb_str(b, "*nil");
            break;
        }
        if (v->type != '*') sb_add(b, &v->type, 1);
        sb_str(b, "[");
        for (size_t i = 0; i < v->n; i++) {
            if (i) sb_str(b, ",");
            render_value(b, v->elem[i], max);
        }
        sb_str(b, "]");
        break;
    case '%':
    case '|':
        if (v->type == '|') sb_str(b, "|");
        sb_str(b, "{");
        for (size_t i = 0; i + 1 < v->n; i += 2) {
            if (i) sb_str(b, ",");
            render_value(b, v->elem[i], max);
            sb_str(b, ":");
            render_value(b, v->elem[i + 1], max);
        }
        sb_str(b, "}");
        break;
    default:
        sb_printf(b, "?%c", v->type);
    }
}

char *it_vrender(const it_value *v, char *buf, size_t len) {
    sb b = {buf, 0, len};
    if (len) buf[0] = '\0';
    if (!v)
        sb_str(&b, "<closed>");
    else
        render_value(&b, v, (size_t)-1);
    return buf;
}

it_value *it_map_get(const it_value *map, const char *key) {
    if (!map || (map->type != '%' && map->type != '|' && map->type != '*')) return NULL;
    size_t klen = strlen(key);
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const it_value *k = map->elem[i];
        if (k->str && k->len == klen && memcmp(k->str, key, klen) == 0) return map->elem[i + 1];
    }
    return NULL;
}

/* ---- servers ---- */

static const char *server_path(void) {
    const char *p = getenv("KEEL_SERVER");
    ck_assert_msg(p && *p, "KEEL_SERVER is not set (path of the keel-server binary)");
    return p;
}

/* A port that was free a moment ago: bind port 0, read it, close. */
int it_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t alen = sizeof(a);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static char log_tail_buf[4096];

const char *it_log_tail(it_server *s) {
    log_tail_buf[0] = '\0';
    FILE *f = fopen(s->log, "r");
    if (!f) return "(no log)";
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    long from = size > 1500 ? size - 1500 : 0;
    fseek(f, from, SEEK_SET);
    size_t n = fread(log_tail_buf, 1, sizeof(log_tail_buf) - 1, f);
    log_tail_buf[n] = '\0';
    fclose(f);
    return log_tail_buf;
}

static void child_exec(it_server *s, char **argv) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Don't keep the test's sockets open in the server (or it would hold
     * connections to other servers open after the test closes them). */
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3, ~0U, 0) != 0)
#endif
        for (int fd = 3; fd < 65536; fd++)
            close(fd);
    if (chdir(s->dir) != 0) _exit(126);
    int lfd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (lfd >= 0) {
        dup2(lfd, 1);
        dup2(lfd, 2);
        close(lfd);
    }
    signal(SIGPIPE, SIG_DFL);
    execv(argv[0], argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Waits for the server to answer anything to PING (PONG, or NOAUTH with a
 * password). Returns 1 when ready, 0 if it exited, -1 on timeout. */
static int wait_ready(it_server *s) {
    long long deadline = it_mstime() + IT_READY_TIMEOUT_MS;
    while (it_mstime() < deadline) {
        int st;
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            s->stopped = 1;
            return 0;
        }
        struct timeval tv = {0, 200000};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
        if (c && !c->err) {
            redisSetTimeout(c, (struct timeval){2, 0});
            redisReply *r = redisCommand(c, "PING");
            int ok = r != NULL;
            if (r) freeReplyObject(r);
            redisFree(c);
            if (ok) return 1;
        } else if (c) {
            redisFree(c);
        }
        it_sleep_ms(10);
    }
    return -1;
}

static it_server *start_v(const char *conf_text, const char *first, va_list ap) {
    const char *extra[IT_MAX_ARGS];
    int nextra = 0;
    for (const char *a = first; a; a = va_arg(ap, const char *)) {
        ck_assert_int_lt(nextra, IT_MAX_ARGS - 8);
        extra[nextra++] = a;
    }
    const char *path = server_path();
    char failure[2048] = "";
    for (int attempt = 0; attempt < IT_START_ATTEMPTS; attempt++) {
        it_server *s = calloc(1, sizeof(*s));
        ck_assert_ptr_nonnull(s);
        snprintf(s->dir, sizeof(s->dir), "/tmp/keel-it-XXXXXX");
        ck_assert_msg(mkdtemp(s->dir) != NULL, "mkdtemp: %s", strerror(errno));
        snprintf(s->log, sizeof(s->log), "%s/server.log", s->dir);
        if (conf_text) {
            snprintf(s->conf, sizeof(s->conf), "%s/keel.conf", s->dir);
            FILE *f = fopen(s->conf, "w");
            ck_assert_ptr_nonnull(f);
            fputs(conf_text, f);
            fclose(f);
        }
        s->port = it_free_port();
        char portstr[16];
        snprintf(portstr, sizeof(portstr), "%d", s->port);
        char *argv[IT_MAX_ARGS + 12];
        int argc = 0;
        argv[argc++] = (char *)path;
        if (conf_text) argv[argc++] = s->conf;
        argv[argc++] = "--port";
        argv[argc++] = portstr;
        argv[argc++] = "--bind";
        argv[argc++] = "127.0.0.1";
        /* KEEL_TEST_IO_THREADS=N runs every server with N-1 I/O threads that
         * take every event (events-per-io-thread 0), so the whole suite
         * exercises the threaded read and write paths. A test's own
         * arguments come after and win. */
        const char *iot = getenv("KEEL_TEST_IO_THREADS");
        if (iot && *iot) {
            argv[argc++] = "--io-threads";
            argv[argc++] = (char *)iot;
            argv[argc++] = "--events-per-io-thread";
            argv[argc++] = "0";
        }
        for (int i = 0; i < nextra; i++)
            argv[argc++] = (char *)extra[i];
        argv[argc] = NULL;

        s->pid = fork();
        ck_assert_int_ge(s->pid, 0);
        if (s->pid == 0) child_exec(s, argv);
        int ready = wait_ready(s);
        if (ready == 1) {
            track(T_SERVER, s);
            return s;
        }
        snprintf(failure, sizeof(failure), "%s (port %d); log:\n%s",
                 ready == 0 ? "keel-server exited during start-up"
                            : "keel-server did not answer PING within 10 s",
                 s->port, it_log_tail(s));
        if (ready < 0) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
        }
        remove_dir(s->dir);
        free(s);
        if (ready < 0) break; /* a hang is not a port clash */
    }
    ck_abort_msg("could not start keel-server: %s", failure);
    return NULL;
}

it_server *it_start(const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    it_server *s = start_v(NULL, arg, ap);
    va_end(ap);
    return s;
}

it_server *it_start_conf(const char *conf_text, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    it_server *s = start_v(conf_text, arg, ap);
    va_end(ap);
    return s;
}

char *it_start_refused(const char *conf_text, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    it_server s = {0};
    snprintf(s.dir, sizeof(s.dir), "/tmp/keel-it-XXXXXX");
    ck_assert_msg(mkdtemp(s.dir) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(s.log, sizeof(s.log), "%s/server.log", s.dir);
    char *argv[IT_MAX_ARGS + 4];
    int argc = 0;
    argv[argc++] = (char *)server_path();
    if (conf_text) {
        snprintf(s.conf, sizeof(s.conf), "%s/keel.conf", s.dir);
        FILE *f = fopen(s.conf, "w");
        ck_assert_ptr_nonnull(f);
        fputs(conf_text, f);
        fclose(f);
        argv[argc++] = s.conf;
    }
    s.port = it_free_port();
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", s.port);
    argv[argc++] = "--port";
    argv[argc++] = portstr;
    for (const char *a = arg; a; a = va_arg(ap, const char *)) {
        ck_assert_int_lt(argc, IT_MAX_ARGS);
        argv[argc++] = (char *)a;
    }
    va_end(ap);
    argv[argc] = NULL;
    s.pid = fork();
    ck_assert_int_ge(s.pid, 0);
    if (s.pid == 0) child_exec(&s, argv);
    int st = it_wait_exit(&s, IT_READY_TIMEOUT_MS);
    if (st == -1) {
        kill(s.pid, SIGKILL);
        waitpid(s.pid, NULL, 0);
    }
    char *out = it_fmt("%s", it_log_tail(&s));
    remove_dir(s.dir);
    ck_assert_msg(st != -1, "keel-server started although it should have refused; log:\n%s", out);
    ck_assert_msg(!WIFEXITED(st) || WEXITSTATUS(st) != 0, "keel-server exited 0; log:\n%s", out);
    return out;
}

int it_wait_exit(it_server *s, int timeout_ms) {
    long long deadline = it_mstime() + timeout_ms;
    int st;
    for (;;) {
        pid_t p = waitpid(s->pid, &st, WNOHANG);
        if (p == s->pid) {
            s->stopped = 1;
            return st;
        }
        if (p < 0 && errno != EINTR) return -1;
        if (it_mstime() >= deadline) return -1;
        it_sleep_ms(5);
    }
}

/* Stops s; returns 1 if it exited cleanly, else 0 with a message in msg. */
static int stop_server(it_server *s, char *msg, size_t msglen, int *already_exited) {
    int st;
    *already_exited = s->stopped;
    if (s->stopped) return 1;
    if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
        s->stopped = 1;
        snprintf(msg, msglen, "keel-server (port %d) died during the test: %s %d; log:\n%s",
                 s->port, WIFSIGNALED(st) ? "signal" : "exit status",
                 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), it_log_tail(s));
        return 0;
    }
    kill(s->pid, SIGTERM);
    st = it_wait_exit(s, IT_STOP_TIMEOUT_MS);
    if (st == -1) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        s->stopped = 1;
        snprintf(msg, msglen, "keel-server (port %d) did not exit within 10 s of SIGTERM; log:\n%s",
                 s->port, it_log_tail(s));
        return 0;
    }
    if (WIFSIGNALED(st) || WEXITSTATUS(st) != 0) {
        snprintf(msg, msglen,
                 "keel-server (port %d) did not exit cleanly after SIGTERM: %s %d; log:\n%s",
                 s->port, WIFSIGNALED(st) ? "signal" : "exit status",
                 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), it_log_tail(s));
        return 0;
    }
    return 1;
}

void it_stop(it_server *s) {
    char msg[2048];
    int already;
    int ok = stop_server(s, msg, sizeof(msg), &already);
    if (ok) remove_dir(s->dir);
    ck_assert_msg(ok, "%s", msg);
}

/* ---- hiredis clients ---- */

redisContext *it_try_connect(it_server *s) {
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, (struct timeval){10, 0});
    if (!c) return NULL;
    if (c->err) {
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, (struct timeval){IT_IO_TIMEOUT_S, 0});
    track(T_CONTEXT, c);
    return c;
}

redisContext *it_connect(it_server *s) {
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, (struct timeval){10, 0});
    ck_assert_msg(c && !c->err, "connect to port %d: %s", s->port, c ? c->errstr : "out of memory");
    redisSetTimeout(c, (struct timeval){IT_IO_TIMEOUT_S, 0});
    track(T_CONTEXT, c);
    return c;
}

void it_disconnect(redisContext *c) {
    if (c && untrack(c)) redisFree(c);
}

void it_free(redisReply *r) {
    if (r && untrack(r)) freeReplyObject(r);
}

/* Renders a formatted RESP command ("*2\r\n$3\r\nGET\r\n...") as "GET k". */
static void describe_cmd(const char *cmd, int len, char *out, size_t outlen) {
    sb b = {out, 0, outlen};
    out[0] = '\0';
    const char *p = cmd, *end = cmd + len;
    if (p >= end || *p != '*') return;
    long n = strtol(p + 1, NULL, 10);
    p = strchr(p, '\n') + 1;
    for (long i = 0; i < n && p < end; i++) {
        long blen = strtol(p + 1, NULL, 10);
        p = strchr(p, '\n') + 1;
        if (i) sb_str(&b, " ");
        int plain = blen > 0 && blen <= 60;
        for (long j = 0; j < blen && plain; j++)
            if (p[j] <= ' ' || p[j] > '~' || p[j] == '"') plain = 0;
        if (plain)
            sb_add(&b, p, (size_t)blen);
        else
            sb_quoted(&b, p, (size_t)blen, 60);
        p += blen + 2;
    }
}

typedef struct sent {
    redisReply *reply;
    char desc[320];
    const char *err; /* connection error, or NULL */
} sent;

static void send_v(redisContext *c, const char *fmt, va_list ap, sent *out) {
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);
    ck_assert_msg(len > 0, "bad command format: %s", fmt);
    describe_cmd(cmd, len, out->desc, sizeof(out->desc));
    out->reply = NULL;
    out->err = NULL;
    void *reply = NULL;
    if (redisAppendFormattedCommand(c, cmd, (size_t)len) != REDIS_OK ||
        redisGetReply(c, &reply) != REDIS_OK)
        out->err = c->errstr[0] ? c->errstr : "connection error";
    out->reply = reply;
    free(cmd);
}

#define SEND(c, fmt, s)                                                                            \
    do {                                                                                           \
        va_list ap_;                                                                               \
        va_start(ap_, fmt);                                                                        \
        send_v(c, fmt, ap_, &(s));                                                                 \
        va_end(ap_);                                                                               \
    } while (0)

redisReply *it_cmd(redisContext *c, const char *fmt, ...) {
    sent s;
    SEND(c, fmt, s);
    ck_assert_msg(s.reply != NULL, "%s: no reply (%s)", s.desc, s.err);
    track(T_REPLY, s.reply);
    return s.reply;
}

redisReply *it_try_cmd(redisContext *c, const char *fmt, ...) {
    sent s;
    SEND(c, fmt, s);
    if (s.reply) track(T_REPLY, s.reply);
    return s.reply;
}

redisReply *it_cmd_argv(redisContext *c, int argc, const char **argv, const size_t *lens) {
    redisReply *r = redisCommandArgv(c, argc, argv, lens);
    ck_assert_msg(r != NULL, "%s: no reply (%s)", argv[0], c->errstr);
    track(T_REPLY, r);
    return r;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *it_sorted_join(const redisReply *r) {
    char desc[200];
    ck_assert_msg(r && r->type == REDIS_REPLY_ARRAY, "expected an array, got %s",
                  it_render(r, desc, sizeof(desc)));
    const char **items = calloc(r->elements + 1, sizeof(*items));
    size_t total = 1;
    for (size_t i = 0; i < r->elements; i++) {
        items[i] = r->element[i]->type == REDIS_REPLY_NIL ? "nil"
                   : r->element[i]->str                   ? r->element[i]->str
                                                          : "?";
        total += strlen(items[i]) + 1;
    }
    qsort(items, r->elements, sizeof(*items), cmp_str);
    char *out = it_alloc(total);
    size_t off = 0;
    for (size_t i = 0; i < r->elements; i++) {
        if (i) out[off++] = ',';
        size_t n = strlen(items[i]);
        memcpy(out + off, items[i], n);
        off += n;
    }
    free(items);
    return out;
}

/* Failure messages are bounded: check passes them through a small buffer. */
#define MSG_MAX 1500

void it_expect_reply(const char *file, int line, redisContext *c, const char *want, const char *fmt,
                     ...) {
    sent s;
    SEND(c, fmt, s);
    if (!s.reply)
        _ck_assert_failed(file, line, "reply", "%s: expected %s, got no reply (%s)", s.desc, want,
                          s.err);
    size_t cap = strlen(want) + 4096;
    char *got = malloc(cap);
    it_render(s.reply, got, cap);
    freeReplyObject(s.reply);
    if (strcmp(got, want) != 0) {
        char msg[MSG_MAX];
        snprintf(msg, sizeof(msg), "%s: expected %.500s, got %.600s", s.desc, want, got);
        free(got);
        _ck_assert_failed(file, line, "reply", "%s", msg);
    }
    free(got);
}

void it_expect_error_prefix(const char *file, int line, redisContext *c, const char *prefix,
                            const char *fmt, ...) {
    sent s;
    SEND(c, fmt, s);
    if (!s.reply)
        _ck_assert_failed(file, line, "reply", "%s: expected -%s..., got no reply (%s)", s.desc,
                          prefix, s.err);
    char got[700];
    it_render(s.reply, got, sizeof(got));
    int ok =
        s.reply->type == REDIS_REPLY_ERROR && strncmp(s.reply->str, prefix, strlen(prefix)) == 0;
    freeReplyObject(s.reply);
    if (!ok)
        _ck_assert_failed(file, line, "reply", "%s: expected -%s..., got %s", s.desc, prefix, got);
}

void it_expect_bulk_len(const char *file, int line, redisContext *c, const char *want,
                        size_t wantlen, const char *fmt, ...) {
    sent s;
    SEND(c, fmt, s);
    if (!s.reply)
        _ck_assert_failed(file, line, "reply", "%s: expected a bulk string, got no reply (%s)",
                          s.desc, s.err);
    redisReply *r = s.reply;
    if (r->type == REDIS_REPLY_STRING && r->len == wantlen && memcmp(r->str, want, wantlen) == 0) {
        freeReplyObject(r);
        return;
    }
    char msg[MSG_MAX], w[500], g[600];
    sb wb = {w, 0, sizeof(w)}, gb = {g, 0, sizeof(g)};
    w[0] = g[0] = '\0';
    sb_quoted(&wb, want, wantlen, 200);
    render_reply(&gb, r, 200);
    if (r->type == REDIS_REPLY_STRING) {
        size_t i = 0;
        while (i < r->len && i < wantlen && r->str[i] == want[i])
            i++;
        snprintf(msg, sizeof(msg),
                 "%s: expected %s (%zu bytes), got %s (%zu bytes), first difference at offset %zu",
                 s.desc, w, wantlen, g, r->len, i);
    } else {
        snprintf(msg, sizeof(msg), "%s: expected %s, got %s", s.desc, w, g);
    }
    freeReplyObject(r);
    _ck_assert_failed(file, line, "reply", "%s", msg);
}

void it_expect_int_range(const char *file, int line, redisContext *c, long long lo, long long hi,
                         const char *fmt, ...) {
    sent s;
    SEND(c, fmt, s);
    if (!s.reply)
        _ck_assert_failed(file, line, "reply", "%s: expected an integer, got no reply (%s)", s.desc,
                          s.err);
    char got[700];
    it_render(s.reply, got, sizeof(got));
    int ok =
        s.reply->type == REDIS_REPLY_INTEGER && s.reply->integer >= lo && s.reply->integer <= hi;
    freeReplyObject(s.reply);
    if (!ok)
        _ck_assert_failed(file, line, "reply", "%s: expected an integer in [%lld, %lld], got %s",
                          s.desc, lo, hi, got);
}

/* ---- raw clients and the RESP2/RESP3 reader ---- */

it_raw *it_raw_connect(it_server *s) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc;
    do {
        rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        int e = errno;
        close(fd);
        ck_abort_msg("raw connect to port %d: %s", s->port, strerror(e));
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    it_raw *r = calloc(1, sizeof(*r));
    ck_assert_ptr_nonnull(r);
    r->fd = fd;
    track(T_RAW, r);
    return r;
}

it_raw *it_raw_connect_resp3(it_server *s) {
    it_raw *r = it_raw_connect(s);
    it_raw_cmd(r, "HELLO", "3", NULL);
    it_value *v = it_raw_read(r);
    ck_assert_msg(v && v->type == '%', "HELLO 3 did not reply with a map");
    return r;
}

static void raw_free(it_raw *r) {
    if (r->fd >= 0) close(r->fd);
    free(r->buf);
    free(r);
}

void it_raw_close(it_raw *r) {
    if (r && untrack(r)) raw_free(r);
}

int it_raw_send(it_raw *r, const void *buf, size_t len) {
    const char *p = buf;
    long long deadline = it_mstime() + IT_IO_TIMEOUT_S * 1000;
    while (len) {
        ssize_t n = send(r->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            ck_assert_msg(it_mstime() < deadline, "raw send: timed out");
            struct pollfd pfd = {r->fd, POLLOUT, 0};
            poll(&pfd, 1, 100);
            continue;
        }
        return -1; /* EPIPE / ECONNRESET: the server closed the connection */
    }
    return 0;
}

int it_raw_sendstr(it_raw *r, const char *s) {
    return it_raw_send(r, s, strlen(s));
}

void it_raw_cmd(it_raw *r, const char *arg, ...) {
    const char *args[IT_MAX_ARGS];
    int n = 0;
    va_list ap;
    va_start(ap, arg);
    for (const char *a = arg; a && n < IT_MAX_ARGS; a = va_arg(ap, const char *))
        args[n++] = a;
    va_end(ap);
    size_t cap = 32;
    for (int i = 0; i < n; i++)
        cap += strlen(args[i]) + 32;
    char *buf = malloc(cap);
    size_t len = (size_t)snprintf(buf, cap, "*%d\r\n", n);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, cap - len, "$%zu\r\n%s\r\n", strlen(args[i]), args[i]);
    int rc = it_raw_send(r, buf, len);
    free(buf);
    ck_assert_msg(rc == 0, "raw send: connection closed by the server");
}

static void value_free(it_value *v) {
    if (!v) return;
    for (size_t i = 0; i < v->n; i++)
        value_free(v->elem[i]);
    free(v->elem);
    free(v->str);
    free(v);
}

enum { P_OK, P_MORE, P_BAD };

/* Finds "\r\n" from p; returns the line length or -1. */
static long line_len(const char *p, const char *end) {
    for (const char *q = p; q + 1 < end; q++)
        if (q[0] == '\r' && q[1] == '\n') return q - p;
    return -1;
}

static int parse_value(const char **pp, const char *end, it_value **out) {
    const char *p = *pp;
    if (p >= end) return P_MORE;
    long ll = line_len(p + 1, end);
    if (ll < 0) return P_MORE;
    char type = *p;
    const char *line = p + 1;
    const char *next = line + ll + 2;
    it_value *v = calloc(1, sizeof(*v));
    v->type = type;
    switch (type) {
    case '+':
    case '-':
    case ',':
    case '(':
        v->str = strndup(line, (size_t)ll);
        v->len = (size_t)ll;
        break;
    case ':':
        v->integer = strtoll(line, NULL, 10);
        break;
    case '#':
        v->integer = ll == 1 && line[0] == 't';
        break;
    case '_':
        v->is_null = 1;
        break;
    case '$':
    case '=':
    case '!': {
        long long blen = strtoll(line, NULL, 10);
        if (blen < 0) {
            v->is_null = 1;
            break;
        }
        if (end - next < blen + 2) {
            value_free(v);
            return P_MORE;
        }
        v->str = malloc((size_t)blen + 1);
        memcpy(v->str, next, (size_t)blen);
        v->str[blen] = '\0';
        v->len = (size_t)blen;
        next += blen + 2;
        break;
    }
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
        long long cnt = strtoll(line, NULL, 10);
        if (cnt < 0) {
            v->is_null = 1;
            break;
        }
        if (type == '%' || type == '|') cnt *= 2;
        v->elem = calloc((size_t)cnt + 1, sizeof(*v->elem));
        for (long long i = 0; i < cnt; i++) {
            int rc = parse_value(&next, end, &v->elem[v->n]);
            if (rc != P_OK) {
                value_free(v);
                return rc;
            }
            v->n++;
        }
        if (type == '|') {
            /* An attribute precedes the real reply: keep it as element. */
            it_value *real = NULL;
            int rc = parse_value(&next, end, &real);
            if (rc != P_OK) {
                value_free(v);
                return rc;
            }
            it_value *wrap = calloc(1, sizeof(*wrap));
            wrap->type = '|';
            wrap->elem = calloc(2, sizeof(*wrap->elem));
            wrap->elem[0] = v;
            wrap->elem[1] = real;
            wrap->n = 2;
            v->type = '%';
            *pp = next;
            *out = wrap;
            return P_OK;
        }
        break;
    }
    default:
        value_free(v);
        return P_BAD;
    }
    *pp = next;
    *out = v;
    return P_OK;
}

/* Reads more bytes; returns bytes read, 0 on EOF/reset, -1 on timeout. */
static ssize_t raw_fill(it_raw *r, int timeout_ms) {
    if (r->cap - r->len < 65536) {
        if (r->pos > 0) {
            memmove(r->buf, r->buf + r->pos, r->len - r->pos);
            r->len -= r->pos;
            r->pos = 0;
        }
        if (r->cap - r->len < 65536) {
            r->cap = r->cap * 2 + 65536;
            r->buf = realloc(r->buf, r->cap);
        }
    }
    struct pollfd pfd = {r->fd, POLLIN, 0};
    int pr;
    do {
        pr = poll(&pfd, 1, timeout_ms);
    } while (pr < 0 && errno == EINTR);
    if (pr == 0) return -1;
    ssize_t n;
    do {
        n = recv(r->fd, r->buf + r->len, r->cap - r->len, 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return 0;
    r->len += (size_t)n;
    return n;
}

/* Parses one value; returns P_OK, P_MORE (EOF before a full value) or fails
 * the test on timeout/garbage. */
static it_value *raw_read(it_raw *r, int timeout_ms, int *closed) {
    *closed = 0;
    for (;;) {
        if (r->pos < r->len) {
            const char *p = r->buf + r->pos;
            it_value *v = NULL;
            int rc = parse_value(&p, r->buf + r->len, &v);
            if (rc == P_OK) {
                r->pos = (size_t)(p - r->buf);
                return v;
            }
            ck_assert_msg(rc != P_BAD, "raw read: not RESP: %.40s", r->buf + r->pos);
        }
        ssize_t n = raw_fill(r, timeout_ms);
        ck_assert_msg(n != -1, "raw read: no reply within %d ms", timeout_ms);
        if (n == 0) {
            *closed = 1;
            return NULL;
        }
    }
}

it_value *it_raw_read(it_raw *r) {
    int closed;
    it_value *v = raw_read(r, IT_RAW_TIMEOUT_MS, &closed);
    if (v) track(T_VALUE, v);
    return v;
}

int it_raw_wait_closed(it_raw *r, int timeout_ms) {
    long long deadline = it_mstime() + timeout_ms;
    for (;;) {
        r->pos = r->len = 0;
        long long left = deadline - it_mstime();
        if (left <= 0) return 0;
        ssize_t n = raw_fill(r, (int)left);
        if (n == 0) return 1;
        if (n < 0) return 0;
    }
}

void it_expect_raw(const char *file, int line, it_raw *r, const char *want) {
    int closed;
    it_value *v = raw_read(r, IT_RAW_TIMEOUT_MS, &closed);
    size_t cap = strlen(want) + 4096;
    char *got = malloc(cap);
    it_vrender(v, got, cap);
    value_free(v);
    if (strcmp(got, want) != 0) {
        char msg[MSG_MAX];
        snprintf(msg, sizeof(msg), "raw reply: expected %.600s, got %.600s", want, got);
        free(got);
        _ck_assert_failed(file, line, "reply", "%s", msg);
    }
    free(got);
}

/* ---- INFO ---- */

char *it_info_str(redisContext *c, const char *section, const char *field) {
    redisReply *r = section ? it_cmd(c, "INFO %s", section) : it_cmd(c, "INFO");
    ck_assert_msg(r->type == REDIS_REPLY_STRING, "INFO %s: not a bulk string",
                  section ? section : "");
    size_t flen = strlen(field);
    char *found = NULL;
    for (const char *p = r->str; p && *p;) {
        if (strncmp(p, field, flen) == 0 && p[flen] == ':') {
            const char *v = p + flen + 1;
            size_t n = strcspn(v, "\r\n");
            found = it_alloc(n + 1);
            memcpy(found, v, n);
            break;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    it_free(r);
    return found;
}

long long it_info_int(redisContext *c, const char *section, const char *field) {
    char *v = it_info_str(c, section, field);
    ck_assert_msg(v != NULL, "INFO %s has no field %s", section ? section : "", field);
    char *end;
    long long n = strtoll(v, &end, 10);
    ck_assert_msg(end != v && *end == '\0', "INFO %s: field %s is not an integer: %s",
                  section ? section : "", field, v);
    return n;
}

long long it_kv_get(const char *line, const char *key) {
    if (!line) return -1;
    size_t klen = strlen(key);
    for (const char *p = line; p && *p;) {
        if (strncmp(p, key, klen) == 0 && p[klen] == '=') return strtoll(p + klen + 1, NULL, 10);
        p = strchr(p, ',');
        if (p) p++;
    }
    return -1;
}

/* ---- fixtures ----
 *
 * The tests of one it_tcase() share a server: starting and stopping one
 * costs ~0.3 s under ASan, more than most tests. Before each test the
 * server is reset (FLUSHALL, CONFIG RESETSTAT, SLOWLOG RESET, the configs
 * tests change back to their defaults, all other clients gone); if that
 * fails, or the server died, a fresh one is started. The shared server is
 * stopped (and its exit status checked) after the tcase's last test; a bad
 * exit fails the run (it_run's exit status) with a message naming the
 * tcase. KEEL_IT_FRESH=1 gives every test its own server instead. */

static it_server *shared;
static char run_failures[8192];
static size_t run_failures_len;

static void record_run_failure(const char *msg) {
    fprintf(stderr, "FAILURE: %s\n", msg);
    int n = snprintf(run_failures + run_failures_len, sizeof(run_failures) - run_failures_len,
                     "%s\n", msg);
    if (n > 0) run_failures_len += (size_t)n;
    if (run_failures_len >= sizeof(run_failures)) run_failures_len = sizeof(run_failures) - 1;
}

static void shared_discard(const char *why) {
    if (!shared) return;
    char msg[2048];
    int already;
    if (!stop_server(shared, msg, sizeof(msg), &already)) {
        char full[2300];
        snprintf(full, sizeof(full), "%s: %s", why, msg);
        record_run_failure(full);
    }
    remove_dir(shared->dir);
    free(shared);
    shared = NULL;
}

static int reply_is(redisReply *r, int type, const char *str) {
    int ok = r && r->type == type && (!str || (r->str && !strcmp(r->str, str)));
    if (r) freeReplyObject(r);
    return ok;
}

/* The configs tests change, with their defaults. */
static const char *const reset_configs[][2] = {
    {"maxmemory", "0"},
    {"maxmemory-policy", "noeviction"},
    {"maxmemory-samples", "5"},
    {"timeout", "0"},
    {"proto-max-bulk-len", "536870912"},
    {"slowlog-log-slower-than", "10000"},
    {"slowlog-max-len", "128"},
    {"requirepass", ""},
    {"lazyfree-lazy-eviction", "yes"},
    {"lazyfree-lazy-expire", "yes"},
    {"lazyfree-lazy-server-del", "yes"},
    {"lazyfree-lazy-user-del", "yes"},
    {"lazyfree-lazy-user-flush", "yes"},
    {"hash-max-listpack-entries", "512"},
    {"hash-max-listpack-value", "64"},
    {"set-max-intset-entries", "512"},
    {"set-max-listpack-entries", "128"},
    {"set-max-listpack-value", "64"},
    {"zset-max-listpack-entries", "128"},
    {"zset-max-listpack-value", "64"},
    {"list-max-listpack-size", "-2"},
    {"list-compress-depth", "0"},
    {"notify-keyspace-events", ""},
    {"tracking-table-max-keys", "1000000"},
    {"latency-tracking", "yes"},
    {"latency-monitor-threshold", "0"},
    {"commandlog-request-larger-than", "1048576"},
    {"commandlog-reply-larger-than", "1048576"},
    {"commandlog-large-request-max-len", "128"},
    {"commandlog-large-reply-max-len", "128"},
    {"client-output-buffer-limit",
     "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
};

/* Sets back the configs a test changed (only those: CONFIG SET is server
 * code too, and should run only when a test asked for it). */
static int reset_configs_changed(redisContext *c) {
    size_t n = sizeof(reset_configs) / sizeof(*reset_configs);
    for (size_t i = 0; i < n; i++) {
        redisReply *r = redisCommand(c, "CONFIG GET %s", reset_configs[i][0]);
        if (!r) return 0;
        int same = r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                   r->element[1]->type == REDIS_REPLY_STRING &&
                   !strcmp(r->element[1]->str, reset_configs[i][1]);
        freeReplyObject(r);
        if (same) continue;
        if (!reply_is(redisCommand(c, "CONFIG SET %s %s", reset_configs[i][0], reset_configs[i][1]),
                      REDIS_REPLY_STATUS, "OK"))
            return 0;
    }
    return 1;
}

/* Puts the shared server back in its start-up state; 0 if it could not. */
static int shared_reset(redisContext *c) {
    if (!reply_is(redisCommand(c, "FLUSHALL SYNC"), REDIS_REPLY_STATUS, "OK")) return 0;
    if (!reset_configs_changed(c)) return 0;
    if (!reply_is(redisCommand(c, "SLOWLOG RESET"), REDIS_REPLY_STATUS, "OK")) return 0;
    if (!reply_is(redisCommand(c, "CONFIG RESETSTAT"), REDIS_REPLY_STATUS, "OK")) return 0;
    /* The previous test's clients must be gone. */
    long long deadline = it_mstime() + 10000;
    for (;;) {
        redisReply *r = redisCommand(c, "INFO clients");
        if (!r) return 0;
        int one =
            r->type == REDIS_REPLY_STRING && strstr(r->str, "\nconnected_clients:1\r\n") != NULL;
        freeReplyObject(r);
        if (one) break;
        if (it_mstime() > deadline) return 0;
        it_sleep_ms(5);
    }
    return reply_is(redisCommand(c, "CONFIG RESETSTAT"), REDIS_REPLY_STATUS, "OK");
}

static void setup_shared(void) {
    if (shared && !shared->stopped) {
        int st;
        if (waitpid(shared->pid, &st, WNOHANG) == shared->pid) {
            shared->stopped = 1;
            char msg[2048];
            snprintf(msg, sizeof(msg), "shared keel-server (port %d) died: %s %d; log:\n%s",
                     shared->port, WIFSIGNALED(st) ? "signal" : "exit status",
                     WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), it_log_tail(shared));
            record_run_failure(msg);
        }
    }
    if (shared && shared->stopped) shared_discard("shared server"); /* a test shut it down */
    if (shared) {
        C = it_try_connect(shared);
        if (C && shared_reset(C)) {
            S = shared;
            return;
        }
        it_disconnect(C);
        shared_discard("shared server (reset failed)");
    }
    shared = it_start(NULL);
    untrack(shared);
    S = shared;
    C = it_connect(S);
}

static void teardown_shared_tcase(void) {
    shared_discard("shared keel-server of a tcase, stopped after its last test");
}

void it_setup_default(void) {
    const char *fresh = getenv("KEEL_IT_FRESH");
    if (fresh && *fresh && strcmp(fresh, "0") != 0) {
        S = it_start(NULL);
        C = it_connect(S);
        return;
    }
    setup_shared();
}

void it_teardown(void) {
    char failure[2048] = "";
    int failed = 0;
    /* Clients first, so the servers see the disconnects. */
    for (size_t i = nobjs; i-- > 0;) {
        tracked t = objs[i];
        if (t.kind == T_SERVER) continue;
        switch (t.kind) {
        case T_CONTEXT:
            redisFree(t.ptr);
            break;
        case T_REPLY:
            freeReplyObject(t.ptr);
            break;
        case T_RAW:
            raw_free(t.ptr);
            break;
        case T_VALUE:
            value_free(t.ptr);
            break;
        case T_MEM:
            free(t.ptr);
            break;
        }
    }
    for (size_t i = 0; i < nobjs; i++) {
        if (objs[i].kind != T_SERVER) continue;
        it_server *s = objs[i].ptr;
        char msg[2048];
        int already;
        if (stop_server(s, msg, sizeof(msg), &already)) {
            remove_dir(s->dir);
        } else if (!failed) {
            failed = 1;
            snprintf(failure, sizeof(failure), "%s", msg);
            remove_dir(s->dir);
        }
        free(s);
    }
    nobjs = 0;
    S = NULL;
    C = NULL;
    ck_assert_msg(!failed, "%s", failure);
}

TCase *it_tcase(Suite *s, const char *name) {
    TCase *tc = tcase_create(name);
    tcase_add_unchecked_fixture(tc, NULL, teardown_shared_tcase);
    tcase_add_checked_fixture(tc, it_setup_default, it_teardown);
    tcase_set_timeout(tc, 300);
    suite_add_tcase(s, tc);
    return tc;
}

TCase *it_tcase_bare(Suite *s, const char *name) {
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, NULL, it_teardown);
    tcase_set_timeout(tc, 300);
    suite_add_tcase(s, tc);
    return tc;
}

int it_run(Suite *s) {
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    SRunner *sr = srunner_create(s);
    /* The harness relies on running tests in this process: teardown after a
     * failed assertion, tracked objects, shared servers. */
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    shared_discard("shared keel-server");
    if (run_failures_len) {
        fprintf(stderr,
                "\nServer failures outside the tests above (a shared server's exit status):\n%s",
                run_failures);
        failed = 1;
    }
    free(objs);
    objs = NULL;
    nobjs = capobjs = 0;
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
