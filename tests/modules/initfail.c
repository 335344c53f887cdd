/* initfail.c -- a fixture whose init registers a command, then fails: the
 * command must be gone afterwards. */
#include <keel/keel_module.h>

static void cmd_never(keel_ctx *ctx) {}

static int fail_init(keel_ctx *ctx, const keel_api *api, int argc, const char *const *argv) {
    keel_command_def def = {
        .size = sizeof(def), .name = "initfail.cmd", .fn = cmd_never, .arity = 1, .flags = "fast"};
    api->command->register_command(ctx, &def);
    api->core->set_error(ctx, "the fixture always fails");
    return KEEL_ERR;
}

KEEL_MODULE("initfail", 1, fail_init, NULL)
