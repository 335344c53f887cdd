/* pause.c -- the pause in effect (its actions and deadline), the clients
 * it holds, and their release (see pause.h). */
#include "session/pause.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/strconv.h"
#include "io/io_threads.h"
#include "session/monitor.h"
#include "session/reply.h"

#include <limits.h>
#include <string.h>

/* What a pause holds; ALL is the larger so that "less restrictive" is a
 * smaller value, as in Valkey. */
#define PAUSE_WRITE 1
#define PAUSE_ALL 2

/* A held command: its own copy of the arguments (the query buffer moves on
 * past the request). */
struct pause_hold {
    int argc;
    karg *argv;
};

static blocking_metrics *gauges;
static int pause_actions;   /* PAUSE_* in effect, 0: none */
static int64_t pause_end;   /* unix ms */
static int release_pending; /* the pause ended: the held clients go on */
static client **held;       /* in the order they were held */
static size_t held_count, held_cap;

void pause_setup(blocking_metrics *metrics) {
    gauges = metrics;
}

/* Ends a pause whose deadline passed; keyspace removals follow the pause. */
static void pause_update(void) {
    if (pause_actions && event_cached_ms() >= pause_end) {
        pause_actions = 0;
        pause_end = 0;
    }
    if (!pause_actions && held_count) release_pending = 1;
    db_defer_removals(pause_actions != 0);
}

/* Valkey's pauseClientsByClient and pauseActions: the actions are
 * replaced (WRITE keeps an ALL in effect), the deadline only grows. */
static void pause_start(int64_t end, int actions) {
    if (actions == PAUSE_WRITE && pause_actions == PAUSE_ALL) actions = PAUSE_ALL;
    pause_actions = actions;
    if (pause_end < end) pause_end = end;
    pause_update();
}

/* WRITE holds what may change the dataset or feed replicas: the command's
 * flags, or for EXEC those of any queued command. */
static int pause_may_replicate(const client *c) {
    const uint32_t mask = CMD_WRITE | CMD_MAY_REPLICATE;
    if (c->cmd_flags & mask) return 1;
    if (!(c->cmd_flags & CMD_TXN_EXEC)) return 0;
    for (int i = 0; i < c->mcount; i++)
        if (c->mcmds[i].flags & mask) return 1;
    return 0;
}

int pause_covers(const client *c) {
    if (K_LIKELY(!pause_actions)) return 0;
    pause_update();
    /* A command called from inside another (a module's or a script's
     * capture client, which has no connection) runs with its caller: the
     * pause applies to the outer command, as in Valkey. */
    if (!pause_actions || (c->flags & CLIENT_MONITOR) || !c->conn) return 0;
    return pause_actions == PAUSE_ALL || pause_may_replicate(c);
}

void pause_get_status(pause_status *out) {
    pause_update(); /* a pause whose deadline passed reads as none */
    if (!pause_actions) {
        *out = (pause_status){.reason = "none", .actions = "none", .remaining_ms = 0};
        return;
    }
    int64_t left = pause_end - event_cached_ms();
    *out = (pause_status){.reason = "client_pause",
                          .actions = pause_actions == PAUSE_ALL ? "all" : "write",
                          .remaining_ms = left > 0 ? left : 0};
}

void pause_hold(client *c) {
    struct pause_hold *h = km_alloc(sizeof(*h));
    h->argc = c->argc;
    h->argv = client_copy_args(c->argc, c->argv);
    c->pause_hold = h;
    c->flags |= CLIENT_PAUSED;
    if (held_count == held_cap) {
        held_cap = held_cap ? held_cap * 2 : 8;
        held = km_realloc(held, held_cap * sizeof(*held));
    }
    held[held_count++] = c;
    gauges->blocked_clients++;
}

/* Takes c off the list and frees its hold; returns the hold's arguments
 * through argc/argv when asked (the caller frees them). */
static void pause_unhold(client *c, int *argc, karg **argv) {
    struct pause_hold *h = c->pause_hold;
    for (size_t i = 0; i < held_count; i++) {
        if (held[i] != c) continue;
        memmove(&held[i], &held[i + 1], (held_count - i - 1) * sizeof(*held));
        held_count--;
        break;
    }
    if (argv) {
        *argc = h->argc;
        *argv = h->argv;
    } else {
        client_free_args(h->argc, h->argv);
    }
    km_free(h);
    c->pause_hold = NULL;
    c->flags &= ~CLIENT_PAUSED;
    gauges->blocked_clients--;
}

void pause_forget(client *c) {
    if (c->flags & CLIENT_PAUSED) pause_unhold(c, NULL, NULL);
}

/* Processes c's held command as if it had just arrived (a pause may hold
 * it again), then the requests pipelined behind it. */
static void pause_release(client *c) {
    int argc;
    karg *argv;
    pause_unhold(c, &argc, &argv);
    if (c->flags & CLIENT_CLOSE_ASAP) {
        client_free_args(argc, argv);
        return;
    }
    if (c->io_job) io_threads_quiesce(); /* the job no longer touches c */
    int saved_argc = c->argc;
    karg *saved_argv = c->argv;
    size_t consumed = c->parser.consumed, big_direct = c->big_direct;
    uint32_t had_protected = c->flags & CLIENT_PROTECTED;
    c->argc = argc;
    c->argv = argv;
    c->parser.consumed = 0; /* the request size comes from the arguments */
    c->big_direct = 0;
    c->flags |= CLIENT_PROTECTED; /* a QUIT or CLIENT KILL frees it later */
    client_execute(c);
    if (!had_protected) c->flags &= ~CLIENT_PROTECTED;
    c->argc = saved_argc;
    c->argv = saved_argv;
    c->parser.consumed = consumed;
    c->big_direct = big_direct;
    client_free_args(argc, argv);
    if (c->flags & CLIENT_CLOSE_ASAP) return;
    if (!(c->flags & CLIENT_PAUSED)) client_resume_input(c);
}

void pause_before_sleep(void) {
    if (pause_actions) pause_update();
    if (!release_pending) return;
    release_pending = 0;
    /* Only those held now, front first: a client held again goes to the
     * back and waits for the next end. */
    for (size_t n = held_count; n > 0 && held_count; n--)
        pause_release(held[0]);
}

void pause_teardown(void) {
    while (held_count)
        pause_unhold(held[0], NULL, NULL);
    km_free(held);
    held = NULL;
    held_cap = 0;
    pause_actions = 0;
    pause_end = 0;
    release_pending = 0;
    db_defer_removals(0);
}

/* CLIENT PAUSE timeout [WRITE|ALL]: the timeout in milliseconds; 0 ends at
 * once (but never shortens a pause in effect). */
void pause_client_pause_command(client *c) {
    int actions = PAUSE_ALL;
    if (c->argc > 4) {
        reply_error(
            c, "ERR unknown subcommand or wrong number of arguments for 'pause'. Try CLIENT HELP.");
        return;
    }
    if (c->argc == 4) {
        if (karg_eq(&c->argv[3], "write")) {
            actions = PAUSE_WRITE;
        } else if (!karg_eq(&c->argv[3], "all")) {
            reply_error(c, "ERR CLIENT PAUSE mode must be WRITE or ALL");
            return;
        }
    }
    long long ms;
    if (!str_to_ll(c->argv[2].ptr, c->argv[2].len, &ms)) {
        reply_error(c, "ERR timeout is not an integer or out of range");
        return;
    }
    if (ms < 0) {
        reply_error(c, "ERR timeout is negative");
        return;
    }
    int64_t now = event_cached_ms();
    if (ms > LLONG_MAX - now) {
        reply_error(c, "ERR timeout is out of range");
        return;
    }
    pause_start(ms ? now + ms : 0, actions);
    reply_ok(c);
}

void pause_client_unpause_command(client *c) {
    pause_actions = 0;
    pause_end = 0;
    pause_update();
    reply_ok(c);
}
