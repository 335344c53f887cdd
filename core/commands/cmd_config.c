/* cmd_config.c -- the CONFIG command: GET, SET (all or nothing), RESETSTAT,
 * REWRITE and HELP, over the config engine's directives and parameters. */
#include "commands/commands.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/log.h"
#include "config/config.h"
#include "ds/glob.h"
#include "session/reply.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* CONFIG GET pattern [pattern ...]: each directive or parameter that
 * matches any pattern, once. As in Valkey, a name without glob characters
 * is looked up directly: it finds an alias under the name asked for and a
 * hidden directive, which patterns leave out. */
typedef struct config_get_ctx {
    client *c;
    const karg *pattern; /* NULL: every exact name was added already */
    kbytes *items;       /* name, value, name, value, ... */
    size_t count, cap;
} config_get_ctx;

static int config_get_seen(const config_get_ctx *g, const char *name) {
    for (size_t i = 0; i < g->count; i += 2)
        if (!strcasecmp(g->items[i].ptr, name)) return 1;
    return 0;
}

static void config_get_add(config_get_ctx *g, const char *name, const char *value, size_t len) {
    if (config_get_seen(g, name)) return;
    if (g->count + 2 > g->cap) {
        g->cap = g->cap ? g->cap * 2 : 32;
        g->items = km_realloc(g->items, sizeof(kbytes) * g->cap);
    }
    g->items[g->count++] = (kbytes){km_strdup(name), strlen(name)};
    g->items[g->count++] = (kbytes){km_strndup(value, len), len};
}

static void config_get_match(const char *name, const char *value, size_t len, void *priv) {
    config_get_ctx *g = priv;
    if (glob_match(g->pattern->ptr, g->pattern->len, name, strlen(name), 1))
        config_get_add(g, name, value, len);
}

static int config_is_pattern(const karg *a) {
    for (size_t i = 0; i < a->len; i++)
        if (a->ptr[i] == '*' || a->ptr[i] == '?' || a->ptr[i] == '[') return 1;
    return 0;
}

static void config_get_command(client *c) {
    config_get_ctx g = {.c = c};
    for (int a = 2; a < c->argc; a++) {
        const karg *arg = &c->argv[a];
        if (config_is_pattern(arg)) {
            g.pattern = arg;
            config_foreach_value(config_get_match, &g);
            continue;
        }
        char name[128];
        if (arg->len >= sizeof(name) || memchr(arg->ptr, '\0', arg->len)) continue;
        memcpy(name, arg->ptr, arg->len); /* answered under the name as asked, as in Valkey */
        name[arg->len] = '\0';
        size_t len;
        char *value = config_get_value(name, &len);
        if (!value) continue;
        config_get_add(&g, name, value, len);
        km_free(value);
    }
    reply_map(c, (long long)(g.count / 2));
    for (size_t i = 0; i < g.count; i++) {
        reply_bulk(c, g.items[i].ptr, g.items[i].len);
        km_free(g.items[i].ptr);
    }
    km_free(g.items);
}

/* enable-protected-configs: 0 no, 1 yes, 2 local connections only. */
static int config_protected_allowed(client *c) {
    int setting = *commands_env_get()->enable_protected_configs;
    return setting == 1 || (setting == 2 && c->conn && conn_is_loopback(c->conn));
}

/* Every secret value leaves the command's logs (slow log, MONITOR), also
 * those after a pair that fails: as Valkey, before anything is set. */
static void config_set_redact(client *c, int pairs) {
    for (int i = 0; i < pairs; i++) {
        char name[128];
        const karg *n = &c->argv[2 + 2 * i];
        snprintf(name, sizeof(name), "%.*s", (int)n->len, n->ptr);
        if (config_is_secret(name)) client_redact_arg(c, 3 + 2 * i);
    }
}

/* Applies name/value pairs all or nothing: on a failure the values set so
 * far are put back. Once every value is set, the parameters' owners act on
 * them together (config_set_commit: a module's certificate and key); an
 * owner refusing them puts every value back too. */
static void config_set_command(client *c) {
    int pairs = (c->argc - 2) / 2;
    if ((c->argc - 2) % 2) { /* a name without its value */
        reply_syntax_error(c);
        return;
    }
    config_set_redact(c, pairs);
    kbytes *old = km_calloc((size_t)pairs, sizeof(kbytes));
    char **names = km_calloc((size_t)pairs, sizeof(char *));
    int done = 0;
    char *err = NULL;
    const char *failed = NULL;
    for (int i = 0; i < pairs && !failed; i++) {
        char name[128];
        const karg *n = &c->argv[2 + 2 * i], *v = &c->argv[3 + 2 * i];
        snprintf(name, sizeof(name), "%.*s", (int)n->len, n->ptr);
        /* a name cut by the buffer or by a NUL byte names nothing */
        names[i] = strlen(name) == n->len ? config_canonical_name(name) : NULL;
        if (!names[i]) {
            reply_errorf(c, "ERR Unknown option or number of arguments for CONFIG SET - '%s'",
                         name);
            break;
        }
        for (int j = 0; j < i && !err; j++)
            if (!strcmp(names[j], names[i])) err = km_strdup("duplicate parameter");
        if (!err && config_is_protected(names[i]) && !config_protected_allowed(c))
            err = km_strdup("can't set protected config");
        if (!err) {
            old[i].ptr = config_get_value(names[i], &old[i].len);
            if (config_set_bytes(names[i], v->ptr, v->len, &err) == K_OK) done++;
        }
        if (err) failed = names[i];
    }
    char *committer = NULL;
    int rollback = done < pairs;
    if (!rollback && config_set_commit(&committer, &err) != K_OK) {
        failed = committer;
        rollback = 1;
    }
    if (failed) {
        reply_errorf(c, "ERR CONFIG SET failed (possibly related to argument '%s') - %s", failed,
                     err);
    } else if (!rollback) {
        reply_ok(c);
    }
    if (rollback) {
        for (int i = 0; i < done; i++) {
            char *ignore = NULL;
            config_set_bytes(names[i], old[i].ptr, old[i].len, &ignore);
            km_free(ignore);
        }
        config_set_discard();
    }
    km_free(committer);
    for (int i = 0; i < pairs; i++) {
        km_free(old[i].ptr);
        km_free(names[i]);
    }
    km_free(old);
    km_free(names);
    km_free(err);
}

static void config_resetstat_command(client *c) {
    commands_env_get()->reset_stats();
    reply_ok(c);
}

static void config_rewrite_command(client *c) {
    char *err = NULL;
    const char *path = *commands_env_get()->configfile;
    if (!path) {
        reply_error(c, "ERR The server is running without a config file");
    } else if (config_rewrite_file(path, &err) != K_OK) {
        log_write(LL_WARNING, "CONFIG REWRITE failed: %s", err);
        reply_errorf(c, "ERR %s", err);
        km_free(err);
    } else {
        log_write(LL_NOTICE, "CONFIG REWRITE executed with success.");
        reply_ok(c);
    }
}

static void config_help_command(client *c) {
    static const char *const help[] = {
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "REWRITE",
        "    Rewrite the configuration file.",
    };
    reply_help(c, "CONFIG", help, K_ARRAY_LEN(help));
}

#define SUB(n, p, a, f, s)                                                                         \
    { .name = n, .proc = p, .arity = a, .flags = f, .summary = s }
#define SUB_END                                                                                    \
    { .name = NULL }

static command config_subcommands[] = {
    SUB("get", config_get_command, -3, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
        "Returns the effective values of configuration parameters."),
    SUB("set", config_set_command, -4, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
        "Sets configuration parameters in-flight."),
    SUB("resetstat", config_resetstat_command, 2,
        CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, "Resets the server's statistics."),
    SUB("rewrite", config_rewrite_command, 2, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
        "Persists the effective configuration to file."),
    SUB("help", config_help_command, 2, CMD_LOADING | CMD_STALE,
        "Returns helpful text about the different subcommands."),
    SUB_END,
};

static command config_table[] = {
    {.name = "config",
     .arity = -2,
     .group = "server",
     .since = "2.0.0",
     .summary = "A container for server configuration commands.",
     .subcommands = config_subcommands},
};

const command_family commands_config = {config_table, K_ARRAY_LEN(config_table)};
