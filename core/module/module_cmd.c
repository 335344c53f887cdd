/* module_cmd.c -- the MODULE command: LOAD, LOADEX, LIST, UNLOAD, HELP.
 *
 * Arguments are copied into NUL-terminated strings (command arguments are
 * slices) and handed to the loader in core/module, which does the checking
 * and logging; this file only parses and replies. */
#include "commands/commands.h"

#include "common/common.h"
#include "common/kmem.h"
#include "module/module.h"
#include "session/reply.h"

#include <string.h>

/* c->argv[from..to) as C strings; free with module_args_free. */
static char **module_args_copy(client *c, int from, int to) {
    int n = to > from ? to - from : 0;
    char **out = km_calloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; i < n; i++)
        out[i] = km_strndup(c->argv[from + i].ptr, c->argv[from + i].len);
    return out;
}

static void module_args_free(char **args) {
    for (char **a = args; *a; a++)
        km_free(*a);
    km_free(args);
}

static void module_reply_load(client *c, const char *path, int argc, char **argv, int ncfg,
                              char **cfg) {
    char *err = NULL;
    if (module_load(path, argc, (const char *const *)argv, ncfg, (const char *const *)cfg, &err) ==
        K_OK) {
        reply_ok(c);
        return;
    }
    reply_errorf(c, "ERR %s", err);
    km_free(err);
}

static void module_cmd_load(client *c) {
    char **path = module_args_copy(c, 2, 3);
    char **args = module_args_copy(c, 3, c->argc);
    module_reply_load(c, path[0], c->argc - 3, args, 0, NULL);
    module_args_free(args);
    module_args_free(path);
}

/* LOADEX path [CONFIG name value ...] [ARGS arg ...]: the CONFIG pairs come
 * first; ARGS takes everything after it. */
static void module_cmd_loadex(client *c) {
    int i = 3, ncfg = 0;
    while (i < c->argc && karg_eq(&c->argv[i], "config") && i + 2 < c->argc) {
        i += 3;
        ncfg++;
    }
    if (i < c->argc && !karg_eq(&c->argv[i], "args")) {
        reply_error(
            c, "ERR Module loadex syntax error: expected CONFIG <name> <value> pairs, then ARGS");
        return;
    }
    char **path = module_args_copy(c, 2, 3);
    char **cfg = km_calloc((size_t)ncfg * 2 + 1, sizeof(char *));
    for (int k = 0; k < ncfg; k++) {
        const karg *name = &c->argv[4 + 3 * k], *value = &c->argv[5 + 3 * k];
        cfg[2 * k] = km_strndup(name->ptr, name->len);
        cfg[2 * k + 1] = km_strndup(value->ptr, value->len);
    }
    int first = i < c->argc ? i + 1 : c->argc;
    char **args = module_args_copy(c, first, c->argc);
    module_reply_load(c, path[0], c->argc - first, args, ncfg, cfg);
    module_args_free(args);
    module_args_free(cfg);
    module_args_free(path);
}

static void module_list_one(const char *name, uint32_t version, const char *path, int argc,
                            char *const *argv, void *priv) {
    client *c = priv;
    reply_map(c, 4);
    reply_bulk_cstr(c, "name");
    reply_bulk_cstr(c, name);
    reply_bulk_cstr(c, "ver");
    reply_int(c, version);
    reply_bulk_cstr(c, "path");
    reply_bulk_cstr(c, path);
    reply_bulk_cstr(c, "args");
    reply_array(c, argc);
    for (int i = 0; i < argc; i++)
        reply_bulk_cstr(c, argv[i]);
}

static void module_cmd_unload(client *c) {
    char **name = module_args_copy(c, 2, 3);
    char *err = NULL;
    if (module_unload(name[0], &err) == K_OK) {
        reply_ok(c);
    } else {
        reply_errorf(c, "ERR %s", err);
        km_free(err);
    }
    module_args_free(name);
}

static void module_cmd_help(client *c) {
    static const char *const help[] = {
        "LIST",
        "    Return a list of loaded modules.",
        "LOAD <path> [<arg> ...]",
        "    Load a module library from <path>, passing to it any optional arguments.",
        "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
        "    Load a module library from <path>, with module configurations and arguments.",
        "UNLOAD <name>",
        "    Unload a module.",
    };
    reply_help(c, "MODULE", help, K_ARRAY_LEN(help));
}

/* Valkey's enable-module-command: MODULE can load arbitrary code, so it is
 * off unless the operator enables it (yes, or local connections only). */
static int module_cmd_allowed(client *c) {
    return protected_command_allowed(c, *commands_env_get()->enable_module_cmd, "MODULE");
}

static void module_cmd_list(client *c) {
    if (!module_cmd_allowed(c)) return;
    reply_array(c, (long long)module_count());
    module_foreach(module_list_one, c);
}

static void module_cmd_load_checked(client *c) {
    if (module_cmd_allowed(c)) module_cmd_load(c);
}

static void module_cmd_loadex_checked(client *c) {
    if (module_cmd_allowed(c)) module_cmd_loadex(c);
}

static void module_cmd_unload_checked(client *c) {
    if (module_cmd_allowed(c)) module_cmd_unload(c);
}

#define MODULE_FLAGS (CMD_ADMIN | CMD_NOSCRIPT | CMD_NO_MULTI)

/* no-multi: a transaction must not unload the code of a command queued
 * after the UNLOAD. */
static command module_subcommands[] = {
    {.name = "load", .proc = module_cmd_load_checked, .arity = -3, .flags = MODULE_FLAGS,
     .summary = "Loads a module."},
    {.name = "loadex", .proc = module_cmd_loadex_checked, .arity = -3, .flags = MODULE_FLAGS,
     .summary = "Loads a module using extended parameters."},
    {.name = "list", .proc = module_cmd_list, .arity = 2, .flags = MODULE_FLAGS,
     .summary = "Returns all loaded modules."},
    {.name = "unload", .proc = module_cmd_unload_checked, .arity = 3, .flags = MODULE_FLAGS,
     .summary = "Unloads a module."},
    {.name = "help", .proc = module_cmd_help, .arity = 2, .flags = CMD_LOADING | CMD_STALE,
     .summary = "Returns helpful text about the different subcommands."},
    {.name = NULL},
};

static command module_table[] = {
    {.name = "module", .arity = -2, .group = "server", .summary = "A container for module commands.",
     .since = "4.0.0", .subcommands = module_subcommands},
};

/* The module system's own command: registered with module_setup, above the
 * built-in families it may call into. */
void module_cmd_setup(void) {
    for (size_t i = 0; i < K_ARRAY_LEN(module_table); i++)
        commands_register(&module_table[i]);
}
