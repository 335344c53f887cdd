/* fixture_v1_1.c -- the ABI 1.1 fixture module ("abifix11").
 *
 * Built ONLY against the frozen copy of the 1.1 header (tests/abi/include-1.1),
 * never sdk/include: it is a module compiled the day ABI 1.1 shipped, and
 * every later server of ABI major 1 must keep loading it. It uses what 1.1
 * added (core->stat_get), probed with KEEL_API_HAS as a module that also
 * wants to run on older tables would. What 1.0 has is exercised by
 * fixture_v1_0.c; this one stays small.
 *
 *   ABIFIX11.STAT name    core->stat_get(name): an integer, or an error
 *   ABIFIX11.PROBE        KEEL_API_HAS results, see cmd_probe */
#include <keel/keel_module.h>

#include <string.h>

static const keel_api *api;

static void cmd_stat(keel_ctx *ctx) {
    char name[64];
    size_t len;
    const char *arg = api->command->argv(ctx, 1, &len);
    long long value;
    if (len >= sizeof(name)) {
        api->command->reply_error(ctx, "ERR statistic name too long");
        return;
    }
    memcpy(name, arg, len);
    name[len] = '\0';
    if (api->core->stat_get(name, &value) == KEEL_OK)
        api->command->reply_int(ctx, value);
    else
        api->command->reply_error(ctx, "ERR no such statistic");
}

/* The 1.1 member is present in this server's table; a core group sized as
 * 1.0 had it must make the macro say no. Replies 1 1 0. */
static void cmd_probe(keel_ctx *ctx) {
    keel_api_core core_1_0 = *api->core;
    keel_api older = *api;
    core_1_0.size = (uint32_t)offsetof(keel_api_core, stat_get);
    older.core = &core_1_0;
    api->command->reply_array(ctx, 3);
    api->command->reply_int(ctx, KEEL_API_HAS(api, core, stat_get));
    api->command->reply_int(ctx, api->abi_major == 1 && api->abi_minor >= 1);
    api->command->reply_int(ctx, KEEL_API_HAS(&older, core, stat_get));
}

static int abifix11_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    if (!KEEL_API_HAS(api, core, stat_get)) {
        api->core->set_error(ctx, "the server's table lacks ABI 1.1 functions");
        return KEEL_ERR;
    }
    const keel_command_def cmds[] = {
        {sizeof(keel_command_def), "abifix11.stat", cmd_stat, 2, "readonly fast", 0, 0, 0, NULL},
        {sizeof(keel_command_def), "abifix11.probe", cmd_probe, 1, "readonly", 0, 0, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (api->command->register_command(ctx, &cmds[i]) != KEEL_OK) return KEEL_ERR;
    api->core->log(ctx, KEEL_LOG_NOTICE, "abifix11 (ABI %d.%d) loaded on server %s (ABI %u.%u)",
                   KEEL_ABI_MAJOR, KEEL_ABI_MINOR, api->core->server_version(), api->abi_major,
                   api->abi_minor);
    return KEEL_OK;
}

KEEL_MODULE("abifix11", 10100, abifix11_init, NULL)
