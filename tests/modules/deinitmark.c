/* deinitmark.c -- a fixture whose init succeeds after starting a timer,
 * then has its load refused; the server must call deinit before closing it.
 *
 * argv[0] is a marker file; argv[1] picks how the load goes wrong:
 *   taken  init also registers "get" (a built-in's name): refused after init
 *   ok     nothing fails in init (a LOADEX CONFIG the fixture lacks refuses it)
 *   fail   init returns KEEL_ERR: deinit must NOT run
 * deinit appends "deinit <timer_del result>" to the marker: a line per
 * call, and timer_del returning KEEL_OK (0) shows the timer init started was
 * still registered when deinit ran, so a module can stop what it started. */
#include <keel/keel_module.h>

#include <stdio.h>
#include <string.h>

static const keel_api *api;
static keel_timer *timer;
static char marker[512];

static void cmd_noop(keel_ctx *ctx) {}

static int64_t on_timer(keel_ctx *ctx, void *priv) {
    return KEEL_TIMER_STOP;
}

static int mark_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    if (argc != 2) {
        api->core->set_error(ctx, "usage: deinitmark <marker file> taken|ok|fail");
        return KEEL_ERR;
    }
    snprintf(marker, sizeof(marker), "%s", argv[0]);
    timer = api->hooks->timer_add(ctx, 3600 * 1000, on_timer, NULL);
    if (!strcmp(argv[1], "fail")) {
        api->hooks->timer_del(ctx, timer); /* init failing stops what it started */
        api->core->set_error(ctx, "the fixture was told to fail");
        return KEEL_ERR;
    }
    keel_command_def ok = {
        .size = sizeof(ok), .name = "deinitmark.ok", .fn = cmd_noop, .arity = 1, .flags = "fast"};
    api->command->register_command(ctx, &ok);
    if (!strcmp(argv[1], "taken")) {
        keel_command_def get = {.size = sizeof(get),
                                .name = "get",
                                .fn = cmd_noop,
                                .arity = 2,
                                .flags = "readonly",
                                .first_key = 1,
                                .last_key = 1,
                                .key_step = 1};
        api->command->register_command(ctx, &get);
    }
    return KEEL_OK;
}

static int mark_deinit(keel_ctx *ctx) {
    FILE *f = fopen(marker, "a");
    if (!f) return KEEL_ERR;
    fprintf(f, "deinit %d\n", api->hooks->timer_del(ctx, timer));
    fclose(f);
    return KEEL_OK;
}

KEEL_MODULE("deinitmark", 1, mark_init, mark_deinit)
