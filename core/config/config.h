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

#include "session/client.h"

/* A `loadmodule` line, kept until the module system loads it. */
typedef struct config_module_line {
    char *path;
    int argc;
    char **argv;
    char *file;
    int line;
    struct config_module_line *next;
} config_module_line;

/* A `rename-command` line, applied by the server once the command table
 * exists (command_rename). An empty `to` removes the command. */
typedef struct config_rename_line {
    char *from;
    char *to;
    char *file;
    int line;
    struct config_rename_line *next;
} config_rename_line;

/* Sets every directive to its default. */
void config_set_defaults(void);
/* Loads path (may be NULL) and then the "--name value" overrides. Returns
 * 0, or -1 with *err set (km_free it). */
int config_load(const char *path, const char *overrides, char **err);
/* Sets one directive as CONFIG SET would, from len bytes of value (any
 * byte; NUL is refused except by binary-safe directives such as
 * requirepass). Returns 0 or -1 with *err (km_free it). */
int config_set_bytes(const char *name, const char *value, size_t len, char **err);
/* The same for a C string. */
int config_set(const char *name, const char *value, char **err);
/* A directive's current value, whole: a km_alloc'ed copy NUL-terminated one
 * byte past *len, or NULL if the name is unknown. */
char *config_get_value(const char *name, size_t *len);
/* Formats a directive's current value into buf as a C string, cut to fit;
 * returns 0 if known. */
int config_get(const char *name, char *buf, size_t len);

/* The names of the directives that have a value (not loadmodule or
 * rename-command), in table order: up to max into out; returns the count. */
size_t config_names(const char **out, size_t max);
/* CONFIG REWRITE of path (which must exist). Returns 0, or -1 with *err. */
int config_rewrite_file(const char *path, char **err);

config_module_line *config_module_lines(void);
config_rename_line *config_rename_lines(void);
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
