/* blockcb.c -- a fixture module for the callbacks of ABI 1.2's blocked
 * clients (tests/integration/check_it_module_blockcb.c): callbacks that
 * call commands on the very key the client waits on, unblocks from the
 * main thread racing a timeout or CLIENT UNBLOCK, and an unblock's data
 * handed back when on_unblock does not run. Built against sdk/include only.
 *
 *   BC.KPOP key ms       blocks on key for ms (0: forever). on_key_ready
 *                        replies what an LPOP of the key (a call) gives;
 *                        on_unblock LPUSHes its data to the key and
 *                        replies +unblocked:<data>; on_timeout LPUSHes "t"
 *                        and replies +timedout (or the LPUSH's error)
 *   BC.NPOP ms [null]    blocks without keys for ms (0: forever):
 *                        on_unblock replies +unblocked:<data>, on_timeout
 *                        +timedout; with null there is no on_unblock
 *   BC.WAKE data [ms]    unblocks the wait held last with a copy of data,
 *                        then sleeps ms; ERR when there is none or unblock
 *                        refused
 *   BC.STATS             [handles freed, unblock data handed back] */
#include <keel/keel_module.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const keel_api *api;
/* The wait BC.WAKE unblocks: set when a command blocks, cleared by
 * free_priv, which is when the handle goes (main thread only). */
static keel_blocked *held;
static long long freed, data_back;

/* Runs cmd key [value] through the call API. */
static keel_reply *call3(keel_ctx *ctx, const char *cmd, const char *key, size_t klen,
                         const char *value) {
    const char *argv[3] = {cmd, key, value};
    size_t lens[3] = {strlen(cmd), klen, value ? strlen(value) : 0};
    keel_call_args a = {sizeof(a), 0, value ? 3 : 2, argv, lens};
    keel_reply *r = NULL;
    api->call->call(ctx, &a, &r);
    return r;
}

/* The block's own copy of its key, for the callbacks that push to it. */
#define BC_KEY_MAX 64
typedef struct bc_wait {
    size_t klen;
    char key[BC_KEY_MAX];
} bc_wait;

static void wait_free(void *priv) {
    freed++;
    held = NULL;
    api->core->free(priv);
}

static void data_free(void *data, void *priv) {
    (void)priv;
    data_back++;
    api->core->free(data);
}

static int kpop_ready(keel_ctx *ctx, const char *key, size_t len, void *priv) {
    (void)priv;
    keel_reply *r = call3(ctx, "LPOP", key, len, NULL);
    size_t n;
    const char *s = api->call->reply_string(r, &n);
    int served = s != NULL;
    if (served) api->command->reply_bulk(ctx, s, n);
    api->call->reply_free(r);
    return served ? KEEL_OK : KEEL_ERR;
}

static void unblocked_reply(keel_ctx *ctx, const char *data) {
    char buf[96];
    snprintf(buf, sizeof(buf), "unblocked:%s", data);
    api->command->reply_simple(ctx, buf);
}

static void kpop_unblocked(keel_ctx *ctx, void *data, void *priv) {
    bc_wait *w = priv;
    api->call->reply_free(call3(ctx, "LPUSH", w->key, w->klen, data));
    unblocked_reply(ctx, data);
    api->core->free(data);
}

static void kpop_timeout(keel_ctx *ctx, void *priv) {
    bc_wait *w = priv;
    keel_reply *r = call3(ctx, "LPUSH", w->key, w->klen, "t");
    size_t n;
    const char *err =
        api->call->reply_type(r) == KEEL_REPLY_ERROR ? api->call->reply_string(r, &n) : NULL;
    if (err) {
        char buf[128];
        snprintf(buf, sizeof(buf), "%.*s", (int)n, err);
        api->command->reply_error(ctx, buf);
    } else {
        api->command->reply_simple(ctx, "timedout");
    }
    api->call->reply_free(r);
}

static void cmd_kpop(keel_ctx *ctx) {
    size_t klen;
    long long ms;
    const char *k = api->command->argv(ctx, 1, &klen);
    if (api->command->arg_ll(ctx, 2, &ms) != KEEL_OK || ms < 0 || klen > BC_KEY_MAX) {
        api->command->reply_error(ctx, "ERR bad arguments");
        return;
    }
    bc_wait *w = api->core->calloc(1, sizeof(*w));
    w->klen = klen;
    memcpy(w->key, k, klen);
    keel_block_def def = {.size = sizeof(def),
                          .timeout_ms = ms,
                          .on_unblock = kpop_unblocked,
                          .on_timeout = kpop_timeout,
                          .on_key_ready = kpop_ready,
                          .nkeys = 1,
                          .keys = &k,
                          .key_lens = &klen,
                          .free_priv = wait_free,
                          .priv = w,
                          .free_data = data_free};
    if (!(held = api->block->block(ctx, &def))) {
        api->core->free(w);
        api->command->reply_null(ctx);
    }
}

static void npop_unblocked(keel_ctx *ctx, void *data, void *priv) {
    (void)priv;
    unblocked_reply(ctx, data);
    api->core->free(data);
}

static void npop_timeout(keel_ctx *ctx, void *priv) {
    (void)priv;
    api->command->reply_simple(ctx, "timedout");
}

static void cmd_npop(keel_ctx *ctx) {
    long long ms;
    size_t len = 0;
    if (api->command->arg_ll(ctx, 1, &ms) != KEEL_OK || ms < 0) {
        api->command->reply_error(ctx, "ERR bad arguments");
        return;
    }
    int no_unblock = api->command->argc(ctx) > 2 && api->command->argv(ctx, 2, &len) && len == 4;
    keel_block_def def = {.size = sizeof(def),
                          .timeout_ms = ms,
                          .on_unblock = no_unblock ? NULL : npop_unblocked,
                          .on_timeout = npop_timeout,
                          .free_priv = wait_free,
                          .priv = api->core->calloc(1, sizeof(bc_wait)),
                          .free_data = data_free};
    if (!(held = api->block->block(ctx, &def))) {
        api->core->free(def.priv);
        api->command->reply_null(ctx);
    }
}

static void cmd_wake(keel_ctx *ctx) {
    size_t len;
    long long ms = 0;
    const char *s = api->command->argv(ctx, 1, &len);
    if (api->command->argc(ctx) > 2 && api->command->arg_ll(ctx, 2, &ms) != KEEL_OK) {
        api->command->reply_error(ctx, "ERR bad sleep");
        return;
    }
    if (!held) {
        api->command->reply_error(ctx, "ERR no wait held");
        return;
    }
    char *data = api->core->alloc(len + 1);
    memcpy(data, s, len);
    data[len] = '\0';
    if (api->block->unblock(held, data) != KEEL_OK) {
        api->core->free(data);
        api->command->reply_error(ctx, "ERR unblock refused");
        return;
    }
    usleep((useconds_t)(ms * 1000));
    api->command->reply_ok(ctx);
}

static void cmd_stats(keel_ctx *ctx) {
    api->command->reply_array(ctx, 2);
    api->command->reply_int(ctx, freed);
    api->command->reply_int(ctx, data_back);
}

static int bc_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    (void)argc;
    (void)argv;
    api = a;
    if (!KEEL_API_HAS(api, block, signal_key_ready) || !KEEL_API_HAS(api, call, db_index)) {
        api->core->set_error(ctx, "the server lacks ABI 1.2's block or call group");
        return KEEL_ERR;
    }
    static const keel_command_def defs[] = {
        {.size = sizeof(keel_command_def),
         .name = "bc.kpop",
         .fn = cmd_kpop,
         .arity = 3,
         .flags = "write",
         .first_key = 1,
         .last_key = 1,
         .key_step = 1},
        {.size = sizeof(keel_command_def),
         .name = "bc.npop",
         .fn = cmd_npop,
         .arity = -2,
         .flags = ""},
        {.size = sizeof(keel_command_def),
         .name = "bc.wake",
         .fn = cmd_wake,
         .arity = -2,
         .flags = ""},
        {.size = sizeof(keel_command_def),
         .name = "bc.stats",
         .fn = cmd_stats,
         .arity = 1,
         .flags = ""},
    };
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
        if (api->command->register_command(ctx, &defs[i]) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

static int bc_deinit(keel_ctx *ctx) {
    (void)ctx;
    return KEEL_OK;
}

KEEL_MODULE("blockcb", 1, bc_init, bc_deinit)
