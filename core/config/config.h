/* config.h -- configuration directives: defaults, the config file and
 * command-line overrides, CONFIG GET/SET/RESETSTAT/REWRITE.
 *
 * Every directive Keel implements is one row of the table in config.c: name,
 * type, where the value lives, default, bounds, and whether CONFIG SET may
 * change it at run time. Valkey directives that Keel does not implement are
 * accepted from files with a warning, so a stock valkey.conf starts.
 *
 * Threads: main thread. */
#ifndef KEEL_CONFIG_H
#define KEEL_CONFIG_H

#include "server/client.h"

/* A `loadmodule` line, kept until the module system loads it. */
typedef struct config_module_line {
    char *path;
    int argc;
    char **argv;
    char *file;
    int line;
    struct config_module_line *next;
} config_module_line;

/* Sets every directive to its default. */
void config_set_defaults(void);
/* Loads path (may be NULL) and then the "--name value" overrides. Returns
 * 0, or -1 with *err set (km_free it). */
int config_load(const char *path, const char *overrides, char **err);
/* Sets one directive as CONFIG SET would. Returns 0 or -1 with *err. */
int config_set(const char *name, const char *value, char **err);
/* Formats a directive's current value into buf; returns 0 if known. */
int config_get(const char *name, char *buf, size_t len);

config_module_line *config_module_lines(void);
void config_free(void);

/* CONFIG subcommands. */
void config_get_command(client *c);
void config_set_command(client *c);
void config_resetstat_command(client *c);
void config_rewrite_command(client *c);
void config_help_command(client *c);

/* Valkey's "1gb", "100mb", "10k" memory values. */
int config_parse_memory(const char *s, unsigned long long *out);

#endif
