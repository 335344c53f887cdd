/* module.c -- a new Keel module. Copy this folder, then rename "mymodule"
 * here (module name, command prefix) and in CMakeLists.txt.
 *
 * Reference: docs/sdk.md. The contract in one paragraph: the server calls
 * keel_module_entry() (written by KEEL_MODULE below), checks the ABI it
 * declares, then calls init once with the API table. Everything goes through
 * that table; pointers you pass are copied, pointers you get are borrowed;
 * unless a function says otherwise, call it from the main thread only. */
#include <keel/keel_module.h>

/* Kept from init: valid until the module is unloaded. */
static const keel_api *api;

/* MYMODULE.PING [message] -> PONG, or the message. */
static void cmd_ping(keel_ctx *ctx) {
    int argc = api->command->argc(ctx); /* argv[0] is the command name */
    if (argc > 2) {
        api->command->reply_wrong_arity(ctx);
        return;
    }
    if (argc == 1) {
        api->command->reply_simple(ctx, "PONG");
        return;
    }
    size_t len;
    const char *msg = api->command->argv(ctx, 1, &len); /* not NUL-terminated */
    api->command->reply_bulk(ctx, msg, len);
}

/* argv: the arguments after the path in `loadmodule` / MODULE LOAD. */
static int mymodule_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    const keel_command_def ping = {.size = sizeof(keel_command_def),
                                   .name = "mymodule.ping",
                                   .fn = cmd_ping,
                                   .arity = -1, /* -N: at least N arguments, the name included */
                                   .flags = "readonly fast",
                                   .first_key = 0, /* no key arguments */
                                   .summary = "Replies PONG or echoes a message."};
    if (api->command->register_command(ctx, &ping) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

/* Called by MODULE UNLOAD (and at shutdown). Return KEEL_ERR after
 * api->core->set_error(ctx, "...") to refuse an unload; or pass NULL to
 * KEEL_MODULE instead of a function. */
static int mymodule_deinit(keel_ctx *ctx) {
    return KEEL_OK;
}

/* name ([a-z0-9_-], unique), version (10000 = 1.0.0), init, deinit */
KEEL_MODULE("mymodule", 10000, mymodule_init, mymodule_deinit)
