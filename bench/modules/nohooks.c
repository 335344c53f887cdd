/* nohooks.c -- a benchmark module that registers one command and no hooks:
 * loading it must cost the request path nothing (bench/abi_cost.sh). */
#include <keel/keel_module.h>

static const keel_api *api;

static void nohooks_ping(keel_ctx *ctx) {
    api->command->reply_simple(ctx, "PONG");
}

static int nohooks_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    (void)argc;
    (void)argv;
    api = a;
    keel_command_def def = {.size = sizeof(def), .name = "nohooks.ping", .fn = nohooks_ping, .arity = 1,
                            .flags = "fast"};
    return api->command->register_command(ctx, &def);
}

KEEL_MODULE("nohooks", 1, nohooks_init, NULL)
