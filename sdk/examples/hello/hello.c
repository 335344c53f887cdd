/* hello.c -- the smallest useful Keel module: two commands.
 *
 *   HELLO.WORLD                        -> "Hello, world!"
 *   HELLO.ECHO <message> [REPEAT <n>]  -> <message>, repeated n times (1..100)
 *
 * Build:  cc -shared -fPIC -fvisibility=hidden $(pkg-config --cflags keel) hello.c -o hello.so
 * Load:   loadmodule /path/to/hello.so          (config file)
 *         MODULE LOAD /path/to/hello.so          (needs enable-module-command) */
#include <keel/keel_module.h>

#include <string.h>
#include <strings.h>

#define HELLO_MAX_REPEAT 100

/* The API table the server handed to init: valid until the module unloads. */
static const keel_api *api;

static void hello_world(keel_ctx *ctx) {
    static const char msg[] = "Hello, world!";
    api->command->reply_bulk(ctx, msg, sizeof(msg) - 1); /* the server copies it */
}

/* Argument bytes are borrowed until the command returns and are not
 * NUL-terminated: always use the length. */
static int arg_is(keel_ctx *ctx, int index, const char *word) {
    size_t len;
    const char *s = api->command->argv(ctx, index, &len);
    return s && len == strlen(word) && strncasecmp(s, word, len) == 0;
}

static void hello_echo(keel_ctx *ctx) {
    int argc = api->command->argc(ctx); /* argv[0] is the command name */
    long long times = 1;
    if (argc != 2 && argc != 4) {
        /* arity -2 lets the server reject "HELLO.ECHO" alone; the other
         * counts are ours to check. */
        api->command->reply_wrong_arity(ctx);
        return;
    }
    if (argc == 4) {
        if (!arg_is(ctx, 2, "REPEAT")) {
            api->command->reply_error(ctx, "ERR syntax error");
            return;
        }
        if (api->command->arg_ll(ctx, 3, &times) != KEEL_OK || times < 1 ||
            times > HELLO_MAX_REPEAT) {
            api->command->reply_error(ctx, "ERR REPEAT must be an integer between 1 and 100");
            return;
        }
    }
    size_t len;
    const char *msg = api->command->argv(ctx, 1, &len);
    if (times == 1) {
        api->command->reply_bulk(ctx, msg, len);
        return;
    }
    /* Memory from api->core counts in the server's used_memory. */
    char *buf = api->core->alloc(len * (size_t)times);
    for (long long i = 0; i < times; i++)
        memcpy(buf + (size_t)i * len, msg, len);
    api->command->reply_bulk(ctx, buf, len * (size_t)times);
    api->core->free(buf); /* reply_bulk copied it */
}

static int hello_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    /* Every struct handed to the server starts with its size. Fields left
     * out are zero: first_key 0 means the command takes no keys. */
    const keel_command_def world = {.size = sizeof(keel_command_def),
                                    .name = "hello.world",
                                    .fn = hello_world,
                                    .arity = 1, /* exactly 1 argument: the name */
                                    .flags = "readonly fast",
                                    .summary = "Replies with a greeting."};
    const keel_command_def echo = {.size = sizeof(keel_command_def),
                                   .name = "hello.echo",
                                   .fn = hello_echo,
                                   .arity = -2, /* at least 2 */
                                   .flags = "readonly fast",
                                   .summary = "Echoes a message, optionally repeated."};
    /* A failed registration already fails the load (with its reason); the
     * return values only let init stop early. */
    if (api->command->register_command(ctx, &world) != KEEL_OK) return KEEL_ERR;
    if (api->command->register_command(ctx, &echo) != KEEL_OK) return KEEL_ERR;
    api->core->log(ctx, KEEL_LOG_NOTICE, "hello module loaded (%d argument(s))", argc);
    return KEEL_OK;
}

/* name, module version (1.0.0), init, deinit (none needed) */
KEEL_MODULE("hello", 10000, hello_init, NULL)
