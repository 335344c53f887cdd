/* taken.c -- a fixture that registers one new command, then "get" (taken by
 * a built-in). init returns OK, yet the load must fail and roll back. */
#include <keel/keel_module.h>

static void cmd_noop(keel_ctx *ctx) {}

static int taken_init(keel_ctx *ctx, const keel_api *api, int argc, const char *const *argv) {
    keel_command_def ok = {
        .size = sizeof(ok), .name = "taken.ok", .fn = cmd_noop, .arity = 1, .flags = "fast"};
    keel_command_def get = {.size = sizeof(get),
                            .name = "get",
                            .fn = cmd_noop,
                            .arity = 2,
                            .flags = "readonly",
                            .first_key = 1,
                            .last_key = 1,
                            .key_step = 1};
    api->command->register_command(ctx, &ok);
    api->command->register_command(ctx, &get);
    return KEEL_OK;
}

KEEL_MODULE("taken", 1, taken_init, NULL)
