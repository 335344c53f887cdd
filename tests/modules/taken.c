/* taken.c -- a fixture that registers one new command, then "get" (taken by
 * a built-in). init returns OK, yet the load must fail and roll back. */
#include <keel/keel_module.h>

static void cmd_noop(keel_ctx *ctx) {}

static int taken_init(keel_ctx *ctx, const keel_api *api, int argc, const char *const *argv) {
    keel_command_def ok = {sizeof(ok), "taken.ok", cmd_noop, 1, "fast", 0, 0, 0, NULL};
    keel_command_def get = {sizeof(get), "get", cmd_noop, 2, "readonly", 1, 1, 1, NULL};
    api->command->register_command(ctx, &ok);
    api->command->register_command(ctx, &get);
    return KEEL_OK;
}

KEEL_MODULE("taken", 1, taken_init, NULL)
