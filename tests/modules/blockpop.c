/* blockpop.c -- a fixture module for ABI 1.2's blocking clients, busy calls
 * and keyspace events (tests/integration/check_it_module_block.c). Built
 * against sdk/include only.
 *
 *   BP.PUSH key value    appends to a tiny list (a module type) and signals
 *                        the key ready; replies the length
 *   BP.POP key ms        pops the head, or blocks on key for ms (0:
 *                        forever); a timeout replies a null
 *   BP.THREADPOP ms [delay]  blocks without keys; a thread sleeps delay ms
 *                        (default 100) and unblocks with "threadval"; a
 *                        timeout replies -TIMEDOUT
 *   BP.TIMERPOP ms       blocks without keys; a timer unblocks it after ms
 *                        with "timerval"
 *   BP.BUSY ms [ignore]  runs ms calling busy_yield; replies done, killed
 *                        or stopped (busy_yield said stop; with ignore it
 *                        runs on regardless)
 *   BP.CBYIELD ms        blocks without keys for ms; its on_timeout calls
 *                        busy_yield a few times (a callback's ctx) and
 *                        replies yielded
 *   BP.KILL              (allow-busy) stops BP.BUSY; NOTBUSY when nothing is
 *                        busy
 *   BP.EVENTS            the keyspace events seen since the last call, as
 *                        "event:key" (with "=value" for a string set)
 *   BP.EMIT key          announces the module event "bpemit" on key
 *   BP.FREED             how many handles free_priv released */
#include <keel/keel_module.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const keel_api *api;
static keel_type *list_type;
/* The unblocking threads, joined before the module goes (its code must
 * outlive them); main thread only. */
#define THREADS_MAX 64
static pthread_t threads[THREADS_MAX];
static int threads_count;
static long long freed;
static int kill_flag;

#define EVENTS_MAX 256
static char *events[EVENTS_MAX];
static int events_count;

/* ---- the list type ---- */

typedef struct bp_item {
    struct bp_item *next;
    size_t len;
    char data[];
} bp_item;

typedef struct bp_list {
    bp_item *head, *tail;
    long long len;
} bp_list;

static void list_free(void *v) {
    bp_list *l = v;
    while (l->head) {
        bp_item *it = l->head;
        l->head = it->next;
        api->core->free(it);
    }
    api->core->free(l);
}

/* Replies the head of key's list and removes it; 0 if there was none. */
static int list_pop_reply(keel_ctx *ctx, const char *k, size_t klen) {
    keel_key *key = api->keyspace->key_open(ctx, k, klen, KEEL_KEY_READ | KEEL_KEY_WRITE);
    bp_list *l = api->keyspace->module_get(key, list_type);
    if (!l || !l->head) {
        api->keyspace->key_close(key);
        return 0;
    }
    bp_item *it = l->head;
    l->head = it->next;
    if (!l->head) l->tail = NULL;
    l->len--;
    api->command->reply_bulk(ctx, it->data, it->len);
    api->core->free(it);
    if (!l->len) api->keyspace->key_delete(key);
    api->keyspace->key_close(key);
    return 1;
}

static void cmd_push(keel_ctx *ctx) {
    size_t klen, vlen;
    const char *k = api->command->argv(ctx, 1, &klen), *v = api->command->argv(ctx, 2, &vlen);
    keel_key *key = api->keyspace->key_open(ctx, k, klen, KEEL_KEY_READ | KEEL_KEY_WRITE);
    bp_list *l = api->keyspace->module_get(key, list_type);
    if (!l && api->keyspace->key_type(key) != KEEL_KEYTYPE_EMPTY) {
        api->keyspace->key_close(key);
        api->command->reply_error(ctx, "WRONGTYPE not a bp list");
        return;
    }
    if (!l) {
        l = api->core->calloc(1, sizeof(*l));
        if (api->keyspace->module_set(key, list_type, l) != KEEL_OK) {
            api->core->free(l);
            api->keyspace->key_close(key);
            api->command->reply_error(ctx, "ERR cannot store");
            return;
        }
    }
    bp_item *it = api->core->alloc(sizeof(*it) + vlen);
    it->next = NULL;
    it->len = vlen;
    memcpy(it->data, v, vlen);
    if (l->tail)
        l->tail->next = it;
    else
        l->head = it;
    l->tail = it;
    l->len++;
    api->keyspace->key_close(key);
    api->block->signal_key_ready(ctx, k, klen);
    api->command->reply_int(ctx, l->len);
}

/* ---- blocking ---- */

/* What a wait keeps: its handle and the value a thread or timer hands
 * over (freed with it, since on_unblock is skipped for a client gone). */
typedef struct bp_wait {
    keel_blocked *b;
    long long delay_ms;
    char value[16];
} bp_wait;

static void wait_free(void *priv) {
    freed++;
    api->core->free(priv);
}

static int pop_ready(keel_ctx *ctx, const char *key, size_t len, void *priv) {
    (void)priv;
    return list_pop_reply(ctx, key, len) ? KEEL_OK : KEEL_ERR;
}

static void cmd_pop(keel_ctx *ctx) {
    size_t klen;
    long long ms;
    const char *k = api->command->argv(ctx, 1, &klen);
    if (api->command->arg_ll(ctx, 2, &ms) != KEEL_OK || ms < 0) {
        api->command->reply_error(ctx, "ERR bad timeout");
        return;
    }
    if (list_pop_reply(ctx, k, klen)) return;
    bp_wait *w = api->core->calloc(1, sizeof(*w));
    keel_block_def def = {.size = sizeof(def),
                          .timeout_ms = ms,
                          .on_key_ready = pop_ready,
                          .nkeys = 1,
                          .keys = &k,
                          .key_lens = &klen,
                          .free_priv = wait_free,
                          .priv = w};
    if (!(w->b = api->block->block(ctx, &def))) {
        api->core->free(w);
        api->command->reply_null(ctx); /* as if the timeout had passed */
    }
}

static void value_unblocked(keel_ctx *ctx, void *data, void *priv) {
    (void)priv;
    api->command->reply_bulk(ctx, data, strlen(data));
}

static void value_timeout(keel_ctx *ctx, void *priv) {
    (void)priv;
    api->command->reply_error(ctx, "TIMEDOUT nobody unblocked it");
}

static void *unblock_thread(void *arg) {
    bp_wait *w = arg;
    usleep((useconds_t)(w->delay_ms * 1000));
    strcpy(w->value, "threadval");
    api->block->unblock(w->b, w->value);
    return NULL;
}

static void threads_join(void) {
    for (int i = 0; i < threads_count; i++)
        pthread_join(threads[i], NULL);
    threads_count = 0;
}

static keel_blocked *block_nokeys(keel_ctx *ctx, bp_wait *w, long long ms) {
    keel_block_def def = {.size = sizeof(def),
                          .timeout_ms = ms,
                          .on_unblock = value_unblocked,
                          .on_timeout = value_timeout,
                          .free_priv = wait_free,
                          .priv = w};
    return api->block->block(ctx, &def);
}

static void cmd_threadpop(keel_ctx *ctx) {
    long long ms, delay = 100;
    if (api->command->arg_ll(ctx, 1, &ms) != KEEL_OK || ms < 0 ||
        (api->command->argc(ctx) > 2 && api->command->arg_ll(ctx, 2, &delay) != KEEL_OK)) {
        api->command->reply_error(ctx, "ERR bad timeout");
        return;
    }
    bp_wait *w = api->core->calloc(1, sizeof(*w));
    w->delay_ms = delay;
    if (!(w->b = block_nokeys(ctx, w, ms))) {
        api->core->free(w);
        api->command->reply_null(ctx);
        return;
    }
    if (threads_count == THREADS_MAX) threads_join();
    if (pthread_create(&threads[threads_count], NULL, unblock_thread, w) != 0) {
        api->block->unblock(w->b, "nothread");
        return;
    }
    threads_count++;
}

static int64_t timer_unblock(keel_ctx *ctx, void *priv) {
    (void)ctx;
    bp_wait *w = priv;
    strcpy(w->value, "timerval");
    api->block->unblock(w->b, w->value);
    return KEEL_TIMER_STOP;
}

static void cmd_timerpop(keel_ctx *ctx) {
    long long ms;
    if (api->command->arg_ll(ctx, 1, &ms) != KEEL_OK || ms < 0) {
        api->command->reply_error(ctx, "ERR bad delay");
        return;
    }
    bp_wait *w = api->core->calloc(1, sizeof(*w));
    if (!(w->b = block_nokeys(ctx, w, 0))) {
        api->core->free(w);
        api->command->reply_null(ctx);
        return;
    }
    api->hooks->timer_add(ctx, ms, timer_unblock, w);
}

static void cmd_freed(keel_ctx *ctx) {
    api->command->reply_int(ctx, freed);
}

/* ---- busy ---- */

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void cmd_busy(keel_ctx *ctx) {
    long long ms;
    if (api->command->arg_ll(ctx, 1, &ms) != KEEL_OK) {
        api->command->reply_error(ctx, "ERR bad duration");
        return;
    }
    int ignore = api->command->argc(ctx) > 2;
    long long end = now_ms() + ms;
    const char *how = "done";
    kill_flag = 0;
    while (now_ms() < end) {
        if (api->call->busy_yield(ctx, "BUSY blockpop is busy. You can only call BP.KILL or "
                                       "SHUTDOWN NOSAVE.") != KEEL_OK &&
            !ignore) {
            how = "stopped";
            break;
        }
        if (kill_flag) {
            how = "killed";
            break;
        }
        usleep(500);
    }
    kill_flag = 0;
    api->command->reply_simple(ctx, how);
}

static void yield_timeout(keel_ctx *ctx, void *priv) {
    (void)priv;
    for (int i = 0; i < 20; i++) {
        api->call->busy_yield(ctx, NULL);
        usleep(1000);
    }
    api->command->reply_simple(ctx, "yielded");
}

static void cmd_cbyield(keel_ctx *ctx) {
    long long ms;
    if (api->command->arg_ll(ctx, 1, &ms) != KEEL_OK || ms <= 0) {
        api->command->reply_error(ctx, "ERR bad timeout");
        return;
    }
    keel_block_def def = {.size = sizeof(def), .timeout_ms = ms, .on_timeout = yield_timeout};
    if (!api->block->block(ctx, &def)) api->command->reply_null(ctx);
}

static void cmd_kill(keel_ctx *ctx) {
    if (!api->call->busy_active()) {
        api->command->reply_error(ctx, "NOTBUSY No busy command to kill.");
        return;
    }
    kill_flag = 1;
    api->command->reply_ok(ctx);
}

/* ---- events ---- */

static void event_record(const char *fmt, const char *a, const char *b, size_t blen, const char *c,
                         size_t clen) {
    if (events_count == EVENTS_MAX) return;
    char buf[256];
    snprintf(buf, sizeof(buf), fmt, a, (int)blen, b, (int)clen, c);
    size_t n = strlen(buf) + 1;
    events[events_count] = api->core->alloc(n);
    memcpy(events[events_count++], buf, n);
}

/* The ctx is in the event's database and read-only: a string set records
 * the value read back, and a write attempted on "probe" keys records
 * whether it was refused. */
static void on_event(keel_ctx *ctx, uint32_t cls, const char *event, const char *key, size_t len,
                     void *priv) {
    (void)cls;
    (void)priv;
    const char *val = "";
    size_t vlen = 0;
    keel_key *k = api->keyspace->key_open(ctx, key, len, KEEL_KEY_READ | KEEL_KEY_WRITE);
    if (!strcmp(event, "set")) {
        const char *s = api->keyspace->string_get(k, &vlen);
        if (s) val = s;
        if (len >= 5 && !memcmp(key, "probe", 5)) {
            int rc = api->keyspace->string_set(k, "x", 1);
            val = rc == KEEL_OK ? "written" : "refused";
            vlen = strlen(val);
        }
        event_record("%s:%.*s=%.*s", event, key, len, val, vlen);
    } else {
        event_record("%s:%.*s%.*s", event, key, len, val, vlen);
    }
    api->keyspace->key_close(k);
}

static void cmd_events(keel_ctx *ctx) {
    api->command->reply_array(ctx, events_count);
    for (int i = 0; i < events_count; i++) {
        api->command->reply_bulk(ctx, events[i], strlen(events[i]));
        api->core->free(events[i]);
    }
    events_count = 0;
}

static void cmd_emit(keel_ctx *ctx) {
    size_t klen;
    const char *k = api->command->argv(ctx, 1, &klen);
    if (api->events->notify_emit(ctx, KEEL_NOTIFY_MODULE, "bpemit", k, klen) != KEEL_OK) {
        api->command->reply_error(ctx, "ERR emit failed");
        return;
    }
    api->command->reply_ok(ctx);
}

/* ---- load ---- */

static int add_commands(keel_ctx *ctx) {
    static const keel_command_def defs[] = {
        {.size = sizeof(keel_command_def),
         .name = "bp.push",
         .fn = cmd_push,
         .arity = 3,
         .flags = "write denyoom",
         .first_key = 1,
         .last_key = 1,
         .key_step = 1},
        {.size = sizeof(keel_command_def),
         .name = "bp.pop",
         .fn = cmd_pop,
         .arity = 3,
         .flags = "write",
         .first_key = 1,
         .last_key = 1,
         .key_step = 1},
        {.size = sizeof(keel_command_def),
         .name = "bp.threadpop",
         .fn = cmd_threadpop,
         .arity = -2,
         .flags = "",
         .first_key = 0,
         .last_key = 0,
         .key_step = 0},
        {.size = sizeof(keel_command_def),
         .name = "bp.timerpop",
         .fn = cmd_timerpop,
         .arity = 2,
         .flags = "",
         .first_key = 0,
         .last_key = 0,
         .key_step = 0},
        {.size = sizeof(keel_command_def),
         .name = "bp.busy",
         .fn = cmd_busy,
         .arity = -2,
         .flags = "",
         .first_key = 0,
         .last_key = 0,
         .key_step = 0},
        {.size = sizeof(keel_command_def),
         .name = "bp.cbyield",
         .fn = cmd_cbyield,
         .arity = 2,
         .flags = "",
         .first_key = 0,
         .last_key = 0,
         .key_step = 0},
        {.size = sizeof(keel_command_def),
         .name = "bp.kill",
         .fn = cmd_kill,
         .arity = 1,
         .flags = "allow-busy",
         .first_key = 0,
         .last_key = 0,
         .key_step = 0},
        {.size = sizeof(keel_command_def),
         .name = "bp.events",
         .fn = cmd_events,
         .arity = 1,
         .flags = "",
         .first_key = 0,
         .last_key = 0,
         .key_step = 0},
        {.size = sizeof(keel_command_def),
         .name = "bp.emit",
         .fn = cmd_emit,
         .arity = 2,
         .flags = "",
         .first_key = 1,
         .last_key = 1,
         .key_step = 1},
        {.size = sizeof(keel_command_def),
         .name = "bp.freed",
         .fn = cmd_freed,
         .arity = 1,
         .flags = "",
         .first_key = 0,
         .last_key = 0,
         .key_step = 0},
    };
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
        if (api->command->register_command(ctx, &defs[i]) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

static int bp_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    (void)argc;
    (void)argv;
    api = a;
    if (!KEEL_API_HAS(api, block, signal_key_ready) || !KEEL_API_HAS(api, call, busy_active) ||
        !KEEL_API_HAS(api, events, notify_emit)) {
        api->core->set_error(ctx, "the server lacks ABI 1.2's block, call or events group");
        return KEEL_ERR;
    }
    keel_type_def type = {sizeof(type), "bp-list01", 1, list_free, NULL, NULL, {0}};
    if (!(list_type = api->keyspace->type_register(ctx, &type))) return KEEL_ERR;
    if (add_commands(ctx) != KEEL_OK) return KEEL_ERR;
    return api->events->notify_subscribe(ctx, KEEL_NOTIFY_ALL | KEEL_NOTIFY_NEW, on_event, NULL);
}

/* The threads still sleeping unblock before the module goes. */
static int bp_deinit(keel_ctx *ctx) {
    (void)ctx;
    threads_join();
    for (int i = 0; i < events_count; i++)
        api->core->free(events[i]);
    events_count = 0;
    return KEEL_OK;
}

KEEL_MODULE("blockpop", 1, bp_init, bp_deinit)
