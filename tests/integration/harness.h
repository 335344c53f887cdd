/* harness.h -- the integration test harness.
 *
 * Starts the real keel-server binary (path from $KEEL_SERVER) on a free port,
 * waits until it answers PING, connects hiredis (RESP2) clients and raw
 * socket clients (RESP2/RESP3, malformed input), and stops the server with
 * SIGTERM, failing unless it exits 0 within 10 s (under ASan a non-zero exit
 * reports leaks and memory errors). Everything a test starts or opens is
 * tracked and released by it_teardown(), which runs as a checked fixture
 * even when an assertion failed (CK_FORK=no).
 *
 * Reply assertions compare a canonical rendering of the reply:
 *   +OK  -ERR msg  :42  "bulk"  nil  [a,b]   (hiredis, RESP2)
 *   raw RESP3 adds  _  ,1.5  #t  #f  (123  {k:v}  ~[a]  >[a]  =txt:...  |{..}
 * Bulk strings are quoted with C escapes (\r \n \" \\ \xHH). */
#ifndef KEEL_IT_HARNESS_H
#define KEEL_IT_HARNESS_H

#include <check.h>
#include <hiredis/hiredis.h>
#include <stddef.h>
#include <sys/types.h>

/* ---- servers ---- */

typedef struct it_server {
    pid_t pid;
    int port;
    int stopped;
    char dir[64];   /* the server's working directory (temporary) */
    char log[128];  /* its stdout and stderr */
    char conf[128]; /* its config file, or "" */
} it_server;

/* Starts keel-server with extra arguments (NULL-terminated list), e.g.
 * it_start("--maxmemory", "2mb", NULL). Fails the test if it cannot. */
it_server *it_start(const char *arg, ...);
/* Same, first writing conf_text to a config file passed as argv[1]. */
it_server *it_start_conf(const char *conf_text, const char *arg, ...);
/* Runs keel-server with conf_text (NULL: none) and the arguments, expecting
 * it to refuse to start: asserts that it exits non-zero within 10 s without
 * ever answering, and returns what it printed (a tracked string). */
char *it_start_refused(const char *conf_text, const char *arg, ...);
/* SIGTERM, then asserts a clean exit (status 0) within 10 s. */
void it_stop(it_server *s);
/* Waits up to timeout_ms for the server to exit on its own; returns the
 * wait status, or -1 if still running. */
int it_wait_exit(it_server *s, int timeout_ms);
/* A TCP port on 127.0.0.1 that was free a moment ago. */
int it_free_port(void);
/* The last lines of the server log, for failure messages. */
const char *it_log_tail(it_server *s);

/* ---- hiredis clients (RESP2) ---- */

/* Connects (10 s timeouts); fails the test on error. */
redisContext *it_connect(it_server *s);
/* Connects, returning NULL instead of failing. */
redisContext *it_try_connect(it_server *s);
void it_disconnect(redisContext *c);

/* Sends one command; the reply is tracked (freed at teardown, or earlier
 * with it_free). Fails the test if the connection broke. */
redisReply *it_cmd(redisContext *c, const char *fmt, ...);
redisReply *it_cmd_argv(redisContext *c, int argc, const char **argv, const size_t *lens);
/* Same, but returns NULL on a broken connection instead of failing. */
redisReply *it_try_cmd(redisContext *c, const char *fmt, ...);
void it_free(redisReply *r);

/* Renders a reply canonically (see above) into buf; returns buf. */
char *it_render(const redisReply *r, char *buf, size_t len);

/* The elements of an array reply, sorted and joined with ',' (a tracked
 * string); nil elements show as "nil". Fails the test if r is no array. */
char *it_sorted_join(const redisReply *r);

/* ---- raw socket clients (RESP2/RESP3 reader) ---- */

typedef struct it_value {
    char type;         /* the RESP type byte: + - : $ * _ , # ( = % ~ > | ! */
    int is_null;       /* $-1, *-1 or _ */
    long long integer; /* ':' and '#' (1/0) */
    char *str;         /* + - $ , ( = ! : the payload, NUL-terminated */
    size_t len;
    size_t n; /* elements; a map holds 2 per pair (key, value) */
    struct it_value **elem;
} it_value;

typedef struct it_raw {
    int fd;
    char *buf;
    size_t len, pos, cap;
} it_raw;

it_raw *it_raw_connect(it_server *s);
/* A raw connection switched to RESP3 (fails the test unless HELLO 3 replies
 * with a map). */
it_raw *it_raw_connect_resp3(it_server *s);
void it_raw_close(it_raw *r);
/* Writes all bytes; returns 0, or -1 if the peer closed (no test failure). */
int it_raw_send(it_raw *r, const void *buf, size_t len);
int it_raw_sendstr(it_raw *r, const char *s);
/* Sends a command as a RESP array of bulk strings (NULL-terminated args). */
void it_raw_cmd(it_raw *r, const char *arg, ...);
/* Reads one reply (timeout 10 s); NULL if the connection was closed first.
 * The value is tracked and freed at teardown. */
it_value *it_raw_read(it_raw *r);
/* 1 if the server closes the connection within timeout_ms (any unread
 * replies before the close are discarded). */
int it_raw_wait_closed(it_raw *r, int timeout_ms);
char *it_vrender(const it_value *v, char *buf, size_t len);
/* Map lookup by bulk/simple-string key; NULL if absent. */
it_value *it_map_get(const it_value *map, const char *key);

/* ---- INFO helpers ---- */

/* The value of field in INFO <section> as a tracked string, or NULL. */
char *it_info_str(redisContext *c, const char *section, const char *field);
/* Same as an integer; fails the test if the field is missing. */
long long it_info_int(redisContext *c, const char *section, const char *field);
/* The value of field in a "k=v,k=v" INFO line (e.g. db0:keys=1,...), or -1. */
long long it_kv_get(const char *line, const char *key);

/* ---- misc ---- */

long long it_mstime(void);
void it_sleep_ms(int ms);
/* A tracked buffer of len pseudo-random bytes (deterministic per seed). */
char *it_random_bytes(size_t len, unsigned seed);
/* A tracked malloc. */
void *it_alloc(size_t len);
/* A file's whole contents, NUL-terminated (a tracked buffer); fails the
 * test if it cannot be read. */
char *it_read_file(const char *path);
/* A tracked sprintf. */
char *it_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Polls expr every 10 ms until it is true or timeout_ms passed. */
#define it_wait_until(expr, timeout_ms)                                                            \
    do {                                                                                           \
        long long it_deadline_ = it_mstime() + (timeout_ms);                                       \
        while (!(expr) && it_mstime() < it_deadline_)                                              \
            it_sleep_ms(10);                                                                       \
        ck_assert_msg((expr), "condition not met within %d ms: %s", (int)(timeout_ms), #expr);     \
    } while (0)

/* ---- fixtures ---- */

/* The default fixture: a server S shared by the tests of one tcase (reset
 * to its start-up state before each test; KEEL_IT_FRESH=1: one fresh
 * server per test) and a client C. Tests that need special options start
 * their own servers with it_start(). */
extern it_server *S;
extern redisContext *C;
void it_setup_default(void);
/* Closes every client; stops every server the test started (asserting a
 * clean exit). */
void it_teardown(void);
/* Adds tc with the default fixture to suite s. The shared server is stopped
 * after the tcase's last test; a bad exit status fails the run. */
TCase *it_tcase(Suite *s, const char *name);
/* Adds tc whose tests start their own servers (teardown only). */
TCase *it_tcase_bare(Suite *s, const char *name);
/* Runs the suite; returns the process exit status. */
int it_run(Suite *s);

/* ---- reply assertions (the command uses hiredis format strings; %b is
 * binary-safe: pointer, size_t length) ---- */

void it_expect_reply(const char *file, int line, redisContext *c, const char *want, const char *fmt,
                     ...);
void it_expect_error_prefix(const char *file, int line, redisContext *c, const char *prefix,
                            const char *fmt, ...);
void it_expect_bulk_len(const char *file, int line, redisContext *c, const char *want,
                        size_t wantlen, const char *fmt, ...);
void it_expect_int_range(const char *file, int line, redisContext *c, long long lo, long long hi,
                         const char *fmt, ...);
void it_expect_raw(const char *file, int line, it_raw *r, const char *want);

/* Any reply, rendered canonically. */
#define expect_reply(c, want, ...) it_expect_reply(__FILE__, __LINE__, c, want, __VA_ARGS__)
#define expect_status(c, want, ...) it_expect_reply(__FILE__, __LINE__, c, "+" want, __VA_ARGS__)
#define expect_ok(c, ...) it_expect_reply(__FILE__, __LINE__, c, "+OK", __VA_ARGS__)
#define expect_int(c, want, ...)                                                                   \
    it_expect_reply(__FILE__, __LINE__, c, it_fmt(":%lld", (long long)(want)), __VA_ARGS__)
#define expect_int_range(c, lo, hi, ...)                                                           \
    it_expect_int_range(__FILE__, __LINE__, c, lo, hi, __VA_ARGS__)
#define expect_bulk(c, want, ...)                                                                  \
    it_expect_bulk_len(__FILE__, __LINE__, c, want, strlen(want), __VA_ARGS__)
#define expect_bulk_len(c, want, len, ...)                                                         \
    it_expect_bulk_len(__FILE__, __LINE__, c, want, len, __VA_ARGS__)
#define expect_nil(c, ...) it_expect_reply(__FILE__, __LINE__, c, "nil", __VA_ARGS__)
/* The exact error message (without the leading '-'). */
#define expect_error(c, want, ...) it_expect_reply(__FILE__, __LINE__, c, "-" want, __VA_ARGS__)
#define expect_error_prefix(c, prefix, ...)                                                        \
    it_expect_error_prefix(__FILE__, __LINE__, c, prefix, __VA_ARGS__)
/* The next raw reply, rendered canonically (NULL = connection closed). */
#define expect_raw(r, want) it_expect_raw(__FILE__, __LINE__, r, want)

#endif
