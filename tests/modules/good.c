/* good.c -- a fixture module using most of the API: commands, a data type,
 * strings with expiry, config parameters, an INFO section, hooks, a timer
 * and a cron hook. Built against sdk/include only. */
#include <keel/keel_module.h>

#include <string.h>

static const keel_api *api;
static long long limit;    /* good.limit */
static long long observed; /* commands seen by the observer */
static long long crons, timers, events;
static keel_type *box_type;

typedef struct box {
    size_t len;
    char data[];
} box;

static box *box_new(const char *s, size_t len) {
    box *b = api->core->alloc(sizeof(box) + len);
    b->len = len;
    memcpy(b->data, s, len);
    return b;
}

static void box_free(void *v) {
    api->core->free(v);
}

static size_t box_usage(const void *v) {
    return sizeof(box) + ((const box *)v)->len;
}

static void *box_copy(const void *v) {
    return box_new(((const box *)v)->data, ((const box *)v)->len);
}

static void cmd_echo(keel_ctx *ctx) {
    size_t len;
    const char *s = api->command->argv(ctx, 1, &len);
    api->command->reply_bulk(ctx, s, len);
}

/* good.put key value: stores a box. */
static void cmd_put(keel_ctx *ctx) {
    size_t klen, vlen;
    const char *k = api->command->argv(ctx, 1, &klen), *v = api->command->argv(ctx, 2, &vlen);
    keel_key *key = api->keyspace->key_open(ctx, k, klen, KEEL_KEY_WRITE);
    box *b = box_new(v, vlen);
    if (api->keyspace->module_set(key, box_type, b) != KEEL_OK) box_free(b);
    api->keyspace->key_close(key);
    api->command->reply_ok(ctx);
}

/* good.get key: the box's bytes, nil, or WRONGTYPE. */
static void cmd_get(keel_ctx *ctx) {
    size_t klen;
    const char *k = api->command->argv(ctx, 1, &klen);
    keel_key *key = api->keyspace->key_open(ctx, k, klen, KEEL_KEY_READ);
    box *b = api->keyspace->module_get(key, box_type);
    if (b)
        api->command->reply_bulk(ctx, b->data, b->len);
    else if (api->keyspace->key_type(key) == KEEL_KEYTYPE_EMPTY)
        api->command->reply_null(ctx);
    else
        api->command->reply_error(ctx, "WRONGTYPE not a good-type key");
    api->keyspace->key_close(key);
}

/* good.sset key value ttl_ms: a string with an expiry; replies the string
 * read back and whether the expiry is set. */
static void cmd_sset(keel_ctx *ctx) {
    size_t klen, vlen, got;
    long long ttl;
    const char *k = api->command->argv(ctx, 1, &klen), *v = api->command->argv(ctx, 2, &vlen);
    if (api->command->arg_ll(ctx, 3, &ttl) != KEEL_OK) {
        api->command->reply_error(ctx, "ERR bad ttl");
        return;
    }
    keel_key *key = api->keyspace->key_open(ctx, k, klen, KEEL_KEY_READ | KEEL_KEY_WRITE);
    api->keyspace->string_set(key, v, vlen);
    api->keyspace->expire_set(key, api->core->mstime() + ttl);
    const char *s = api->keyspace->string_get(key, &got);
    api->command->reply_array(ctx, 2);
    api->command->reply_bulk(ctx, s, got);
    api->command->reply_int(ctx, api->keyspace->expire_get(key) > 0);
    api->keyspace->key_close(key);
}

static void cmd_stats(keel_ctx *ctx) {
    api->command->reply_array(ctx, 4);
    api->command->reply_int(ctx, limit);
    api->command->reply_int(ctx, observed);
    api->command->reply_int(ctx, events);
    api->command->reply_int(ctx, timers);
}

static void cmd_deny(keel_ctx *ctx) {
    api->command->reply_ok(ctx); /* never runs: the filter refuses it */
}

static const char *filter(keel_ctx *ctx, const char *name, uint32_t flags, void *priv) {
    return strcmp(name, "good.deny") ? NULL : "ERR denied by good";
}

static void observer(const keel_call_info *info, void *priv) {
    observed++;
}

static void client_event(keel_client *c, int event, void *priv) {
    events++;
}

static int64_t on_timer(keel_ctx *ctx, void *priv) {
    timers++;
    return KEEL_TIMER_STOP;
}

static int64_t on_cron(keel_ctx *ctx, void *priv) {
    crons++;
    return 0;
}

static void info_section(keel_info *info, void *priv) {
    api->info->field(info, "good_observed:%lld", observed);
    api->info->field(info, "good_crons:%lld", crons);
}

static int apply_limit(long long number, const char *text, void *priv, const char **err) {
    if (number == 13) {
        *err = "13 is unlucky";
        return KEEL_ERR;
    }
    limit = number;
    return KEEL_OK;
}

static int add_commands(keel_ctx *ctx) {
    static const keel_command_def defs[] = {
        {.size = sizeof(keel_command_def),
         .name = "good.echo",
         .fn = cmd_echo,
         .arity = 2,
         .flags = "readonly fast",
         .summary = "Echoes."},
        {.size = sizeof(keel_command_def),
         .name = "good.put",
         .fn = cmd_put,
         .arity = 3,
         .flags = "write denyoom",
         .first_key = 1,
         .last_key = 1,
         .key_step = 1},
        {.size = sizeof(keel_command_def),
         .name = "good.get",
         .fn = cmd_get,
         .arity = 2,
         .flags = "readonly",
         .first_key = 1,
         .last_key = 1,
         .key_step = 1},
        {.size = sizeof(keel_command_def),
         .name = "good.sset",
         .fn = cmd_sset,
         .arity = 4,
         .flags = "write",
         .first_key = 1,
         .last_key = 1,
         .key_step = 1},
        {.size = sizeof(keel_command_def),
         .name = "good.stats",
         .fn = cmd_stats,
         .arity = 1,
         .flags = ""},
        {.size = sizeof(keel_command_def),
         .name = "good.deny",
         .fn = cmd_deny,
         .arity = 1,
         .flags = "no-monitor may-replicate"},
    };
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
        if (api->command->register_command(ctx, &defs[i]) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

static int add_configs(keel_ctx *ctx) {
    static const char *const modes[] = {"fast", "safe", NULL};
    keel_config_def lim = {sizeof(lim), "limit", KEEL_CONFIG_INT, 0,   "10", 0,
                           100,         NULL,    apply_limit,     NULL, NULL};
    keel_config_def mode = {sizeof(mode), "mode", KEEL_CONFIG_ENUM, 0, "fast", 0, 0, modes,
                            NULL,         NULL, NULL};
    keel_config_def mem = {
        sizeof(mem), "buffer", KEEL_CONFIG_MEMORY, KEEL_CONFIG_IMMUTABLE, "1kb", 0, 1 << 30, NULL,
        NULL,        NULL, NULL};
    if (api->info->config_register(ctx, &lim) != KEEL_OK) return KEEL_ERR;
    if (api->info->config_register(ctx, &mode) != KEEL_OK) return KEEL_ERR;
    return api->info->config_register(ctx, &mem);
}

static int good_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    observed = crons = timers = events = 0;
    keel_type_def type = {sizeof(type), "good-type", 1, box_free, box_usage, box_copy, {0}};
    if (!(box_type = api->keyspace->type_register(ctx, &type))) return KEEL_ERR;
    if (add_commands(ctx) != KEEL_OK || add_configs(ctx) != KEEL_OK) return KEEL_ERR;
    api->hooks->add_filter(ctx, filter, NULL);
    api->hooks->add_observer(ctx, observer, NULL);
    api->hooks->add_client_event(ctx, client_event, NULL);
    api->hooks->add_cron(ctx, on_cron, NULL);
    if (!api->hooks->timer_add(ctx, 0, on_timer, NULL)) return KEEL_ERR;
    api->core->log(ctx, KEEL_LOG_VERBOSE, "good loaded with %d args", argc);
    return api->info->add_section(ctx, "good", info_section, NULL);
}

KEEL_MODULE("good", 10203, good_init, NULL)
