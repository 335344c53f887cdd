/* fixture_v1_2.c -- the ABI 1.2 fixture module ("abifix12").
 *
 * Built ONLY against the frozen copy of the 1.2 header (tests/abi/include-1.2),
 * never sdk/include: it is a module compiled the day ABI 1.2 shipped, and
 * every later server of ABI major 1 must keep loading it. It uses some of
 * what 1.2 added, probed with KEEL_API_HAS: a call and its reply tree,
 * command_flags and db_index, a keynum key spec, per-call flags,
 * reply_set / reply_bignum / reply_error_ex and INFO fields in a server
 * section. What 1.0 and 1.1 have is exercised by the older fixtures.
 *
 *   ABIFIX12.INCR key      INCR through call: the integer read off the tree
 *   ABIFIX12.PROBE         KEEL_API_HAS results, see cmd_probe
 *   ABIFIX12.KEYS n k.. x  a keynum key spec (COMMAND GETKEYS); replies a set
 *                          of n and a big number
 *   ABIFIX12.FLAGS name    command_flags(name), db_index: two integers
 *   ABIFIX12.FAIL          reply_error_ex, not counted in errorstats */
#include <keel/keel_module.h>

#include <string.h>

static const keel_api *api;

static void cmd_incr(keel_ctx *ctx) {
    const char *argv[2] = {"INCR", NULL};
    size_t lens[2] = {4, 0};
    argv[1] = api->command->argv(ctx, 1, &lens[1]);
    keel_call_args a = {sizeof(a), KEEL_CALL_SCRIPT, 2, argv, lens};
    keel_reply *r = NULL;
    if (api->call->call(ctx, &a, &r) != KEEL_CALL_RAN ||
        api->call->reply_type(r) != KEEL_REPLY_INTEGER)
        api->command->reply_error(ctx, "ERR the call failed");
    else
        api->command->reply_int(ctx, api->call->reply_integer(r));
    api->call->reply_free(r);
}

/* The 1.2 members are present in this server's table; a table sized as
 * 1.1 had it must make the macro say no. Replies 1 1 1 1 0. */
static void cmd_probe(keel_ctx *ctx) {
    keel_api older = *api;
    older.size = (uint32_t)offsetof(keel_api, call);
    api->command->reply_array(ctx, 5);
    api->command->reply_int(ctx, KEEL_API_HAS(api, call, db_index));
    api->command->reply_int(ctx, KEEL_API_HAS(api, command, reply_error_ex));
    api->command->reply_int(ctx, KEEL_API_HAS(api, info, add_fields));
    api->command->reply_int(ctx, api->abi_major == 1 && api->abi_minor >= 2);
    api->command->reply_int(ctx, KEEL_API_HAS(&older, call, call));
}

static void cmd_keys(keel_ctx *ctx) {
    api->command->reply_set(ctx, 1);
    api->command->reply_bignum(ctx, "12345678901234567890123", 23);
}

static void cmd_flags(keel_ctx *ctx) {
    size_t len;
    const char *name = api->command->argv(ctx, 1, &len);
    uint32_t flags = 0;
    int rc = api->call->command_flags(name, len, &flags);
    api->command->reply_array(ctx, 2);
    api->command->reply_int(ctx, rc == KEEL_OK ? (long long)flags : -1);
    api->command->reply_int(ctx, api->call->db_index(ctx));
}

static void cmd_fail(keel_ctx *ctx) {
    api->command->reply_error_ex(ctx, "ABIFIX12 passed on", 18, KEEL_REPLY_ERR_NO_STATS);
}

/* A write when its argument is "w". */
static uint32_t fail_flags(keel_ctx *ctx, uint32_t flags) {
    return api->command->argc(ctx) > 1 ? flags | KEEL_CMD_WRITE : flags;
}

static void info_fields(keel_info *info, void *priv) {
    api->info->field(info, "abifix12_loaded:1");
}

static int abifix12_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    if (!KEEL_API_HAS(api, call, db_index) || !KEEL_API_HAS(api, info, add_fields)) {
        api->core->set_error(ctx, "the server's table lacks ABI 1.2 functions");
        return KEEL_ERR;
    }
    static const keel_key_spec spec = {
        .size = sizeof(keel_key_spec),
        .flags = KEEL_KEY_SPEC_RO | KEEL_KEY_SPEC_ACCESS,
        .begin_type = KEEL_KEY_BEGIN_INDEX,
        .begin_index = 1,
        .find_type = KEEL_KEY_FIND_KEYNUM,
        .keynum_index = 0,
        .keynum_firstkey = 1,
        .keynum_step = 1,
    };
    const keel_command_def cmds[] = {
        {.size = sizeof(keel_command_def),
         .name = "abifix12.incr",
         .fn = cmd_incr,
         .arity = 2,
         .flags = "write denyoom",
         .first_key = 1,
         .last_key = 1,
         .key_step = 1},
        {.size = sizeof(keel_command_def),
         .name = "abifix12.probe",
         .fn = cmd_probe,
         .arity = 1,
         .flags = "readonly"},
        {.size = sizeof(keel_command_def),
         .name = "abifix12.keys",
         .fn = cmd_keys,
         .arity = -2,
         .flags = "readonly",
         .key_specs = &spec,
         .num_key_specs = 1},
        {.size = sizeof(keel_command_def),
         .name = "abifix12.flags",
         .fn = cmd_flags,
         .arity = 2,
         .flags = "readonly fast no-script"},
        {.size = sizeof(keel_command_def),
         .name = "abifix12.fail",
         .fn = cmd_fail,
         .arity = -1,
         .flags = "readonly",
         .call_flags = fail_flags},
    };
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (api->command->register_command(ctx, &cmds[i]) != KEEL_OK) return KEEL_ERR;
    if (api->info->add_fields(ctx, "server", info_fields, NULL) != KEEL_OK) return KEEL_ERR;
    api->core->log(ctx, KEEL_LOG_NOTICE, "abifix12 (ABI %d.%d) loaded on server %s (ABI %u.%u)",
                   KEEL_ABI_MAJOR, KEEL_ABI_MINOR, api->core->server_version(), api->abi_major,
                   api->abi_minor);
    return KEEL_OK;
}

KEEL_MODULE("abifix12", 10200, abifix12_init, NULL)
