/* call.c -- command execution wrapper and the module hook lists. */
#include "session/call.h"

#include "common/common.h"
#include "common/kmem.h"
#include "session/blocking.h"
#include "session/latency.h"
#include "session/monitor.h"
#include "session/reply.h"
#include "session/slowlog.h"
#include "session/tracking.h"

#include <string.h>

typedef struct hook {
    union {
        call_filter_fn filter;
        call_observer_fn observer;
        call_client_event_fn event;
    } fn;
    void *priv;
    void *owner;
} hook;

typedef struct hook_list {
    hook *items;
    int count;
    int cap;
} hook_list;

static hook_list filters, observers, events;
/* Calls on the stack: EXEC's commands and a module's calls run inside
 * another. */
static int call_depth;
/* When the outermost call started (us): the time of the calls inside it. */
static uint64_t call_clock_us;

int call_executing(void) {
    return call_depth;
}

uint64_t call_time_us(void) {
    return call_depth > 1 ? call_clock_us : event_now_us();
}

static int hook_add(hook_list *l, hook h) {
    if (l->count == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->items = km_realloc(l->items, sizeof(hook) * (size_t)l->cap);
    }
    l->items[l->count++] = h;
    return K_OK;
}

static void hook_remove_owner(hook_list *l, void *owner) {
    int j = 0;
    for (int i = 0; i < l->count; i++)
        if (l->items[i].owner != owner) l->items[j++] = l->items[i];
    l->count = j;
}

int call_add_filter(call_filter_fn fn, void *priv, void *owner) {
    return hook_add(&filters, (hook){.fn.filter = fn, .priv = priv, .owner = owner});
}

int call_add_observer(call_observer_fn fn, void *priv, void *owner) {
    return hook_add(&observers, (hook){.fn.observer = fn, .priv = priv, .owner = owner});
}

int call_add_client_event(call_client_event_fn fn, void *priv, void *owner) {
    return hook_add(&events, (hook){.fn.event = fn, .priv = priv, .owner = owner});
}

void call_remove_owner(void *owner) {
    hook_remove_owner(&filters, owner);
    hook_remove_owner(&observers, owner);
    hook_remove_owner(&events, owner);
}

const char *call_filters(client *c) {
    for (int i = 0; i < filters.count; i++) {
        const char *err = filters.items[i].fn.filter(c, c->cmd, filters.items[i].priv);
        if (err) return err;
    }
    return NULL;
}

void call_client_event(client *c, int event) {
    for (int i = 0; i < events.count; i++) events.items[i].fn.event(c, event, events.items[i].priv);
}

static const struct {
    uint32_t cmd, keel;
} call_flag_map[] = {
    {CMD_WRITE, KEEL_CMD_WRITE},
    {CMD_READONLY, KEEL_CMD_READONLY},
    {CMD_DENYOOM, KEEL_CMD_DENYOOM},
    {CMD_ADMIN, KEEL_CMD_ADMIN},
    {CMD_FAST, KEEL_CMD_FAST},
    {CMD_NO_AUTH, KEEL_CMD_NO_AUTH},
    {CMD_PUBSUB, KEEL_CMD_PUBSUB},
    {CMD_NOSCRIPT, KEEL_CMD_NOSCRIPT},
    {CMD_BLOCKING, KEEL_CMD_BLOCKING},
    {CMD_STALE, KEEL_CMD_STALE},
    {CMD_SKIP_MONITOR, KEEL_CMD_SKIP_MONITOR},
    {CMD_SKIP_SLOWLOG, KEEL_CMD_SKIP_SLOWLOG},
    {CMD_MAY_REPLICATE, KEEL_CMD_MAY_REPLICATE},
    {CMD_NO_MULTI, KEEL_CMD_NO_MULTI},
    {CMD_ALLOW_BUSY, KEEL_CMD_ALLOW_BUSY},
    {CMD_NO_MANDATORY_KEYS, KEEL_CMD_NO_MANDATORY_KEYS},
};

uint32_t call_keel_cmd_flags(uint32_t cmd_flags) {
    uint32_t out = 0;
    for (size_t i = 0; i < K_ARRAY_LEN(call_flag_map); i++)
        if (cmd_flags & call_flag_map[i].cmd) out |= call_flag_map[i].keel;
    return out;
}

uint32_t call_cmd_flags_from_keel(uint32_t keel_flags) {
    uint32_t out = 0;
    for (size_t i = 0; i < K_ARRAY_LEN(call_flag_map); i++)
        if (keel_flags & call_flag_map[i].keel) out |= call_flag_map[i].cmd;
    return out;
}

static size_t call_request_bytes(const client *c) {
    /* The parser's consumed length is the request as received; inside EXEC
     * (queued copies) it is recomputed from the arguments. */
    if (c->parser.consumed) return c->parser.consumed + c->big_direct;
    size_t n = 0;
    for (int i = 0; i < c->argc; i++) n += c->argv[i].len + 16;
    return n;
}

static void call_notify_observers(client *c, uint64_t us, size_t reply_before, long long errors_before) {
    const command *cmd = c->cmd;
    call_info info = {
        .size = sizeof(info),
        .name = cmd->fullname ? cmd->fullname : cmd->name, /* "config|get" for a subcommand */
        .flags = call_keel_cmd_flags(c->cmd_flags),
        .client = (keel_client *)c,
        .duration_us = us,
        .request_bytes = call_request_bytes(c),
        .reply_bytes = c->reply_bytes - reply_before,
        .failed = c->cmd_errors > errors_before, /* this command's own errors, also inside EXEC */
    };
    for (int i = 0; i < observers.count; i++) observers.items[i].fn.observer(&info, observers.items[i].priv);
}

void call(client *c) {
    command *cmd = c->cmd;
    uint32_t flags = c->cmd_flags;
    size_t reply_before = c->reply_bytes;
    long long errors_before = c->cmd_errors;
    /* One clock read both times the command and refreshes the cached
     * clock that expiry checks use, so a key never outlives its TTL by more
     * than the command that reads it. Only the outermost call refreshes
     * it: the commands a script or EXEC runs see the time their command
     * started, as Valkey freezes it (a key set with PX 1 still exists at
     * the script's next command). */
    uint64_t start = event_now_us();
    if (!call_depth) {
        event_set_cached_ms((int64_t)(start / 1000));
        call_clock_us = start;
    }
    c->redacted = 0;
    /* CLIENT NO-TOUCH: the command's lookups leave access clocks alone,
     * except TOUCH's, whose point they are (set per call: EXEC runs TOUCH
     * through here too). */
    int touch_was = -1;
    if (K_UNLIKELY(c->flags & CLIENT_NO_TOUCH)) touch_was = db_set_access_touch(!strcmp(cmd->fullname, "touch"));
    /* A long command measures its run from here (session/busy.h); a
     * command nested on the same client gives the outer one its start
     * back. */
    uint64_t outer_start = c->cmd_start_us;
    c->cmd_start_us = start;
    call_depth++;
    cmd->proc(c);
    call_depth--;
    c->cmd_start_us = outer_start;
    if (touch_was >= 0) db_set_access_touch(touch_was);
    if (K_UNLIKELY(c->flags & CLIENT_TRACKING) && (flags & CMD_READONLY))
        tracking_remember_keys(c, c, cmd);
    /* Invalidations a command caused to its own client follow its reply
     * (EXEC's: the whole transaction's). */
    if (K_UNLIKELY(tracking_has_pending()) && !call_depth) tracking_flush_pending();
    uint64_t end = event_now_us();
    uint64_t us = end > start ? end - start : 0;
    /* Shown once: a blocked command's rerun is not shown again. */
    if (K_UNLIKELY(monitor_active()) && !monitor_fed_early(c) &&
        !(flags & (CMD_SKIP_MONITOR | CMD_ADMIN)) && !blocking_is_rerun(c))
        monitor_feed(c);
    /* A command that blocked is counted once, when it is served or stops
     * waiting (blocking.c). */
    if (K_UNLIKELY(c->bstate != NULL) && blocking_left_blocked(c, &us)) return;
    /* EXEC runs its commands through call(): count only the inner ones. */
    cmd = c->cmd;
    cmd->calls++;
    cmd->usec += (long long)us;
    if (c->cmd_errors > errors_before) cmd->failed_calls++;
    latency_record_command(cmd, us);
    session_stats()->total_commands_processed++;
    c->commands_processed++;
    if (!(c->cmd_flags & CMD_SKIP_SLOWLOG))
        commandlog_push(c, us, call_request_bytes(c),
                        c->reply_bytes > reply_before ? c->reply_bytes - reply_before : 0);
    if (observers.count) call_notify_observers(c, us, reply_before, errors_before);
}

void call_teardown(void) {
    km_free(filters.items);
    km_free(observers.items);
    km_free(events.items);
    memset(&filters, 0, sizeof(filters));
    memset(&observers, 0, sizeof(observers));
    memset(&events, 0, sizeof(events));
}
