/* configinfo.c -- a module with a configuration parameter and an INFO section.
 *
 *   configinfo.greeting <text>     a string parameter (default "hello"):
 *                                  a config-file directive, MODULE LOADEX ...
 *                                  CONFIG configinfo.greeting <text>, and
 *                                  CONFIG GET/SET configinfo.greeting
 *   CONFIGINFO.GREET [<name>]      -> "<greeting>, <name>!" (name: "world")
 *   INFO configinfo                # configinfo
 *                                  configinfo_greeting:<text>
 *                                  configinfo_greetings_served:<n>
 *                                  configinfo_greeting_changes:<n> */
#include <keel/keel_module.h>

#include <stdio.h>
#include <string.h>

#define GREETING_MAX 64

static const keel_api *api;
static char greeting[GREETING_MAX + 1]; /* the applied value */
static long long served, changes;

/* Called with every value the server accepts for configinfo.greeting: the
 * default or the config-file / LOADEX value during init, then each CONFIG SET.
 * `text` is borrowed for the call, so the module keeps a copy. Refusing a
 * value: return KEEL_ERR with a static message; the server keeps the old one
 * and CONFIG SET replies with the message. */
static int apply_greeting(long long number, const char *text, void *priv, const char **err) {
    size_t len = strlen(text);
    if (len == 0 || len > GREETING_MAX) {
        *err = "the greeting must be 1 to 64 characters";
        return KEEL_ERR;
    }
    memcpy(greeting, text, len + 1);
    changes++;
    return KEEL_OK;
}

/* Reads the parameter the way any module can read any config: by name. */
static void cmd_greet(keel_ctx *ctx) {
    char value[GREETING_MAX + 1], out[256];
    size_t name_len = 5;
    const char *name = "world";
    if (api->command->argc(ctx) > 2) {
        api->command->reply_wrong_arity(ctx);
        return;
    }
    if (api->command->argc(ctx) == 2) name = api->command->argv(ctx, 1, &name_len);
    if (api->core->config_get("configinfo.greeting", value, sizeof(value)) != KEEL_OK) {
        api->command->reply_error(ctx, "ERR configinfo.greeting is not registered");
        return;
    }
    int n = snprintf(out, sizeof(out), "%s, %.*s!", value, (int)name_len, name);
    served++;
    api->command->reply_bulk(ctx, out, n < (int)sizeof(out) ? (size_t)n : sizeof(out) - 1);
}

/* INFO configinfo (and INFO modules / INFO everything). The server writes the
 * "# configinfo" header; each field() call is one "name:value" line. */
static void info_configinfo(keel_info *info, void *priv) {
    api->info->field(info, "configinfo_greeting:%s", greeting);
    api->info->field(info, "configinfo_greetings_served:%lld", served);
    api->info->field(info, "configinfo_greeting_changes:%lld", changes);
}

static int configinfo_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    served = changes = 0; /* the module may be loaded again after an unload */
    const keel_config_def param = {.size = sizeof(keel_config_def),
                                   .name = "greeting", /* configinfo.greeting */
                                   .type = KEEL_CONFIG_STRING,
                                   .flags = 0, /* KEEL_CONFIG_IMMUTABLE: settable at load only */
                                   .default_value = "hello",
                                   .apply = apply_greeting};
    /* The initial value is applied (apply_greeting runs) before this returns. */
    if (api->info->config_register(ctx, &param) != KEEL_OK) return KEEL_ERR;

    const keel_command_def greet = {.size = sizeof(keel_command_def),
                                    .name = "configinfo.greet",
                                    .fn = cmd_greet,
                                    .arity = -1,
                                    .flags = "readonly fast",
                                    .summary = "Greets someone with configinfo.greeting."};
    if (api->command->register_command(ctx, &greet) != KEEL_OK) return KEEL_ERR;
    return api->info->add_section(ctx, "configinfo", info_configinfo, NULL);
}

KEEL_MODULE("configinfo", 10000, configinfo_init, NULL)
