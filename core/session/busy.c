/* busy.c -- the busy phase of a long-running command (see busy.h): when it
 * starts, the rounds of file events served from inside the command, and
 * the protection of the busy client. */
#include "session/busy.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/log.h"
#include "io/io_threads.h"

#include <string.h>

/* Rounds of file events per busy_yield: a burst of pipelined requests is
 * answered without letting one busy_yield serve others for long. */
#define BUSY_ROUND_ITERATIONS 4
/* The least time between two rounds: a command that yields every few
 * microseconds does not pay an epoll_wait each time. */
#define BUSY_ROUND_INTERVAL_US 1000
#define BUSY_ERROR_MAX 256

static event_loop *loop;
static const busy_options *opts;
static unsigned (*stop_requests)(void);
static void (*stop_now)(void);
static client *busy_client; /* the protected one; NULL: no busy phase */
static client *busy_owner;  /* the one whose command started the phase */
static uint32_t had_protected;
static unsigned stops_told; /* the stop requests the command was told of */
static int in_round;
static uint64_t next_round_us;
static char refusal[BUSY_ERROR_MAX];

void busy_setup(event_loop *el, const busy_options *o, unsigned (*stops)(void),
                void (*quit)(void)) {
    loop = el;
    opts = o;
    stop_requests = stops;
    stop_now = quit;
}

void busy_teardown(void) {
    loop = NULL;
    opts = NULL;
    stop_requests = NULL;
    stop_now = NULL;
    busy_client = NULL;
    busy_owner = NULL;
    stops_told = 0;
}

int busy_active(void) {
    return busy_client != NULL;
}

const char *busy_refusal(void) {
    return in_round ? refusal : NULL;
}

int busy_holds(const client *c) {
    return c == busy_client;
}

/* The refusal as one protocol line: no '-', CR and LF as spaces. */
static void busy_set_refusal(const char *err) {
    if (!err || !*err) err = "BUSY the server is busy running a module command.";
    if (*err == '-') err++;
    if (!strcmp(err, refusal)) return;
    size_t n = strlen(err);
    if (n >= sizeof(refusal)) n = sizeof(refusal) - 1;
    for (size_t i = 0; i < n; i++)
        refusal[i] = (err[i] == '\r' || err[i] == '\n') ? ' ' : err[i];
    refusal[n] = '\0';
}

/* The client protected is the outermost one, whose connection sent the
 * command (client_serving): a module's call runs the long command on a
 * capture client, but the real client's request and reply are the ones
 * half done. Its socket is not watched for the phase: what it sends waits,
 * and what it has pending is written after its command. */
static void busy_enter(client *owner, uint64_t now) {
    client *c = client_serving() ? client_serving() : owner;
    busy_client = c;
    busy_owner = owner;
    had_protected = c->flags & CLIENT_PROTECTED;
    c->flags |= CLIENT_PROTECTED;
    if (c->conn && c->conn->read_handler) conn_set_read_handler(c->conn, NULL);
    if (c->conn && c->conn->write_handler) conn_set_write_handler(c->conn, NULL);
    next_round_us = 0;
    const command *cmd = owner->cmd;
    log_write(LL_WARNING,
              "Slow command detected: '%s' of client id=%llu still in execution after %llu "
              "milliseconds; other clients are answered: %s",
              cmd ? (cmd->fullname ? cmd->fullname : cmd->name) : "?", (unsigned long long)c->id,
              (unsigned long long)((now - owner->cmd_start_us) / 1000), refusal);
}

void busy_end(client *owner) {
    if (!busy_client || owner != busy_owner) return;
    client *c = busy_client;
    busy_client = NULL;
    busy_owner = NULL;
    if (!had_protected) c->flags &= ~CLIENT_PROTECTED;
    /* With a job in flight, its finish watches the socket again. */
    if (c->conn && !c->io_job && !(c->flags & CLIENT_CLOSE_ASAP))
        conn_set_read_handler(c->conn, client_read_handler);
    if (c->reply_bytes && !(c->flags & CLIENT_PENDING_WRITE)) client_schedule_write(c);
}

/* One round: the file events ready now, the I/O threads' completions, the
 * writes and the closes they lead to. The command's clock is given back
 * afterwards, so its own expiry checks keep its start time. */
static void busy_round(void) {
    int64_t cached = event_cached_ms();
    in_round = 1;
    for (int i = 0; i < BUSY_ROUND_ITERATIONS; i++) {
        event_update_cached_time();
        int n = event_process_files(loop);
        n += io_threads_poll();
        client_handle_pending_writes();
        client_free_closed();
        if (!n) break;
    }
    if (busy_client->io_job) io_threads_quiesce(); /* the command may reply now */
    in_round = 0;
    event_set_cached_ms(cached);
}

/* K_ERR once the server is to stop. The command is told once; a request
 * that comes after (a second SHUTDOWN NOSAVE served by a round, another
 * signal) finds it still running, having ignored the first: the server
 * exits from here, as Valkey's SHUTDOWN does from inside a busy script. */
static int busy_check_stop(void) {
    unsigned n = stop_requests ? stop_requests() : 0;
    if (!n) return K_OK;
    if (!stops_told)
        stops_told = n;
    else if (n > stops_told && stop_now)
        stop_now();
    return K_ERR;
}

int busy_yield(client *c, const char *err, int *entered) {
    *entered = 0;
    if (in_round || !loop || !c) return K_OK;
    uint64_t now = event_now_us();
    if (!busy_client) {
        uint64_t ran = now > c->cmd_start_us ? now - c->cmd_start_us : 0;
        if (ran / 1000 < (uint64_t)opts->reply_threshold_ms) return busy_check_stop();
        busy_set_refusal(err);
        busy_enter(c, now);
        *entered = 1;
    }
    /* Rounds go on after a stop request: the others are still answered
     * (and a second request heard) while the command winds down. */
    if (now >= next_round_us) {
        busy_set_refusal(err);
        busy_round();
        next_round_us = event_now_us() + BUSY_ROUND_INTERVAL_US;
    }
    return busy_check_stop();
}
