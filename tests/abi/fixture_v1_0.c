/* fixture_v1_0.c -- the ABI 1.0 fixture module ("abifix").
 *
 * Built ONLY against the frozen copy of the 1.0 header (tests/abi/include),
 * never sdk/include: it is a module compiled the day ABI 1.0 shipped, and
 * every later server of ABI major 1 must keep loading it and running it
 * unchanged. It touches one of everything a 1.0 module can register: a
 * command set, a data type (free, mem_usage, copy), INT and ENUM configs
 * (apply callback refusing a value), a filter, an observer, client events, a
 * timer, a cron hook, an INFO section, a deinit that can refuse, and
 * KEEL_API_HAS probes (the growth rule seen from a module).
 *
 *   ABIFIX.SET key value   stores value in a key of type "abifix-v1"
 *   ABIFIX.GET key         its bytes, nil, or WRONGTYPE
 *   ABIFIX.STATS           [limit, mode index, argc, observed commands,
 *                           timer fired, client connects, crons > 0]
 *   ABIFIX.PROBE           KEEL_API_HAS results, see cmd_probe
 *   ABIFIX.DENY            refused by the filter
 *   ABIFIX.STICKY 0|1      1: deinit refuses MODULE UNLOAD
 *
 * Built again with FIXTURE_ABI_MAJOR / FIXTURE_ABI_MINOR, it claims another
 * ABI (2.0, 1.99) through the descriptor KEEL_MODULE writes; the server must
 * refuse those before calling anything, so their init aborts. */
#include <keel/keel_module.h>

#include <stdlib.h>
#include <string.h>

#if defined(FIXTURE_ABI_MAJOR) || defined(FIXTURE_ABI_MINOR)
#define FIXTURE_REFUSED 1
#ifdef FIXTURE_ABI_MAJOR
#undef KEEL_ABI_MAJOR
#define KEEL_ABI_MAJOR FIXTURE_ABI_MAJOR
#endif
#ifdef FIXTURE_ABI_MINOR
#undef KEEL_ABI_MINOR
#define KEEL_ABI_MINOR FIXTURE_ABI_MINOR
#endif
#endif

static const keel_api *api;
static keel_type *box_type;
static long long limit, mode, load_argc, observed, timer_fired, connects, crons;
static int sticky;

/* ---- the data type ---- */

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

/* ---- commands ---- */

static void cmd_set(keel_ctx *ctx) {
    size_t klen, vlen;
    const char *k = api->command->argv(ctx, 1, &klen), *v = api->command->argv(ctx, 2, &vlen);
    keel_key *key = api->keyspace->key_open(ctx, k, klen, KEEL_KEY_WRITE);
    box *b = box_new(v, vlen);
    if (api->keyspace->module_set(key, box_type, b) == KEEL_OK) {
        api->command->reply_ok(ctx);
    } else {
        box_free(b);
        api->command->reply_error(ctx, "ERR module_set failed");
    }
    api->keyspace->key_close(key);
}

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
        api->command->reply_error(ctx, "WRONGTYPE not an abifix-v1 key");
    api->keyspace->key_close(key);
}

static void cmd_stats(keel_ctx *ctx) {
    api->command->reply_array(ctx, 7);
    api->command->reply_int(ctx, limit);
    api->command->reply_int(ctx, mode);
    api->command->reply_int(ctx, load_argc);
    api->command->reply_int(ctx, observed);
    api->command->reply_int(ctx, timer_fired);
    api->command->reply_int(ctx, connects);
    api->command->reply_int(ctx, crons > 0);
}

/* The growth rule from the module's side. A module built against 1.0 probes
 * with KEEL_API_HAS before calling anything newer than what it needs; here
 * it probes the real table (every 1.0 member is present in any 1.x server)
 * and copies of it shaped like an older or partial server (the macro must
 * say no without reading past a group's end). Replies 1 1 1 1 1 0 0 0. */
static void cmd_probe(keel_ctx *ctx) {
    keel_api older = *api;
    keel_api_transport partial = *api->transport;
    keel_api nogroup = *api;
    uint32_t built_minor = KEEL_ABI_MINOR;                /* a variable: ">= 0" is not a warning */
    older.size = (uint32_t)offsetof(keel_api, transport); /* a table before the group */
    partial.size = (uint32_t)offsetof(keel_api_transport, conn_count);
    keel_api shrunk = *api;
    shrunk.transport = &partial; /* a group before the member */
    nogroup.transport = NULL;
    api->command->reply_array(ctx, 8);
    api->command->reply_int(ctx, KEEL_API_HAS(api, transport, conn_count));
    api->command->reply_int(ctx, KEEL_API_HAS(api, core, config_get));
    api->command->reply_int(ctx, api->abi_major == 1);
    api->command->reply_int(ctx, api->abi_minor >= built_minor);
    api->command->reply_int(ctx, api->size >= sizeof(keel_api));
    api->command->reply_int(ctx, KEEL_API_HAS(&older, transport, conn_count));
    api->command->reply_int(ctx, KEEL_API_HAS(&shrunk, transport, conn_count));
    api->command->reply_int(ctx, KEEL_API_HAS(&nogroup, transport, conn_count));
}

static void cmd_deny(keel_ctx *ctx) {
    api->command->reply_ok(ctx); /* never runs: the filter refuses it */
}

static void cmd_sticky(keel_ctx *ctx) {
    long long v;
    if (api->command->arg_ll(ctx, 1, &v) != KEEL_OK) {
        api->command->reply_error(ctx, "ERR value is not an integer or out of range");
        return;
    }
    sticky = v != 0;
    api->command->reply_ok(ctx);
}

/* ---- hooks ---- */

static const char *filter(keel_ctx *ctx, const char *name, uint32_t flags, void *priv) {
    return strcmp(name, "abifix.deny") ? NULL : "ERR denied by the abifix filter";
}

static void observer(const keel_call_info *info, void *priv) {
    if (info->size >= offsetof(keel_call_info, failed) + sizeof(info->failed)) observed++;
}

static void client_event(keel_client *c, int event, void *priv) {
    if (event == KEEL_CLIENT_CONNECT) connects++;
}

static int64_t on_timer(keel_ctx *ctx, void *priv) {
    timer_fired = 1;
    return KEEL_TIMER_STOP;
}

static int64_t on_cron(keel_ctx *ctx, void *priv) {
    crons++;
    return 0;
}

static void info_section(keel_info *info, void *priv) {
    api->info->field(info, "abifix_observed:%lld", observed);
    api->info->field(info, "abifix_limit:%lld", limit);
}

static int apply_limit(long long number, const char *text, void *priv, const char **err) {
    if (number == 13) {
        *err = "13 is unlucky";
        return KEEL_ERR;
    }
    limit = number;
    return KEEL_OK;
}

static int apply_mode(long long number, const char *text, void *priv, const char **err) {
    mode = number;
    return KEEL_OK;
}

/* ---- load and unload ---- */

static int register_all(keel_ctx *ctx) {
    static const char *const modes[] = {"fast", "safe", NULL};
    const keel_type_def type = {
        sizeof(keel_type_def), "abifix-v1", 1, box_free, box_usage, box_copy, {0}};
    const keel_command_def cmds[] = {
        {sizeof(keel_command_def), "abifix.set", cmd_set, 3, "write denyoom", 1, 1, 1, NULL},
        {sizeof(keel_command_def), "abifix.get", cmd_get, 2, "readonly fast", 1, 1, 1, NULL},
        {sizeof(keel_command_def), "abifix.stats", cmd_stats, 1, "readonly", 0, 0, 0, NULL},
        {sizeof(keel_command_def), "abifix.probe", cmd_probe, 1, "readonly", 0, 0, 0, NULL},
        {sizeof(keel_command_def), "abifix.deny", cmd_deny, 1, NULL, 0, 0, 0, NULL},
        {sizeof(keel_command_def), "abifix.sticky", cmd_sticky, 2, "admin", 0, 0, 0, NULL},
    };
    const keel_config_def lim = {sizeof(keel_config_def),
                                 "limit",
                                 KEEL_CONFIG_INT,
                                 0,
                                 "10",
                                 0,
                                 1000,
                                 NULL,
                                 apply_limit,
                                 NULL};
    const keel_config_def md = {sizeof(keel_config_def),
                                "mode",
                                KEEL_CONFIG_ENUM,
                                0,
                                "fast",
                                0,
                                0,
                                modes,
                                apply_mode,
                                NULL};
    if (!(box_type = api->keyspace->type_register(ctx, &type))) return KEEL_ERR;
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (api->command->register_command(ctx, &cmds[i]) != KEEL_OK) return KEEL_ERR;
    if (api->info->config_register(ctx, &lim) != KEEL_OK) return KEEL_ERR;
    if (api->info->config_register(ctx, &md) != KEEL_OK) return KEEL_ERR;
    if (api->hooks->add_filter(ctx, filter, NULL) != KEEL_OK) return KEEL_ERR;
    if (api->hooks->add_observer(ctx, observer, NULL) != KEEL_OK) return KEEL_ERR;
    if (api->hooks->add_client_event(ctx, client_event, NULL) != KEEL_OK) return KEEL_ERR;
    if (api->hooks->add_cron(ctx, on_cron, NULL) != KEEL_OK) return KEEL_ERR;
    if (!api->hooks->timer_add(ctx, 0, on_timer, NULL)) return KEEL_ERR;
    return api->info->add_section(ctx, "abifix", info_section, NULL);
}

static int abifix_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
#ifdef FIXTURE_REFUSED
    abort(); /* the handshake must refuse this build before calling anything */
#endif
    api = a;
    load_argc = argc;
    observed = timer_fired = connects = crons = 0;
    sticky = 0;
    if (!KEEL_API_HAS(api, core, config_get) || !KEEL_API_HAS(api, transport, conn_count)) {
        api->core->set_error(ctx, "the server's table lacks ABI 1.0 functions");
        return KEEL_ERR;
    }
    if (register_all(ctx) != KEEL_OK) return KEEL_ERR;
    api->core->log(ctx, KEEL_LOG_NOTICE, "abifix (ABI %d.%d) loaded on server %s (ABI %u.%u)",
                   KEEL_ABI_MAJOR, KEEL_ABI_MINOR, api->core->server_version(), api->abi_major,
                   api->abi_minor);
    return KEEL_OK;
}

static int abifix_deinit(keel_ctx *ctx) {
    if (!sticky) return KEEL_OK;
    api->core->set_error(ctx, "abifix is sticky");
    return KEEL_ERR;
}

KEEL_MODULE("abifix", 10000, abifix_init, abifix_deinit)
