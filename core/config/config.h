/* config.h -- the configuration engine: directive tables, defaults, the
 * config file and command-line overrides, CONFIG SET/GET values, REWRITE.
 *
 * Each owner of options declares its directives as one table (name, type,
 * where the value lives, default, bounds, whether CONFIG SET may change it)
 * and registers it; the server composes the tables (server_config.c). The
 * module system registers the dotted `<module>.<name>` namespace. Every
 * Valkey 8.0.1 directive has a row; those Keel has no feature for are
 * stored (CFG_NO_EFFECT: a file setting one is warned about), those that
 * protect the server are refused but for a value asking for nothing
 * (config_set_refused), and a few of later Valkey versions are accepted from
 * files with a warning, so a stock valkey.conf starts.
 *
 * Threads: main thread. */
#ifndef KEEL_CONFIG_H
#define KEEL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef enum config_kind {
    CFG_BOOL,
    CFG_INT,
    CFG_LL,
    CFG_MEMORY,
    CFG_ENUM,
    CFG_STRING, /* a C string (paths): NUL bytes are refused */
    CFG_BYTES,  /* binary-safe (kbytes): secrets may hold any byte */
    CFG_SPECIAL,
} config_kind;

/* A growable output buffer for formatted values; always NUL-terminated. */
typedef struct config_out {
    char *ptr;
    size_t len, cap;
} config_out;

#define CFG_IMMUTABLE (1 << 0) /* start-up only */
#define CFG_SECRET (1 << 1)    /* hidden from the slow log when set (requirepass) */
#define CFG_HIDDEN (1 << 2)    /* CONFIG GET shows it only when asked by its exact name */
/* CONFIG SET refuses it unless enable-protected-configs allows the client
 * (checked by the CONFIG command, config_is_protected). */
#define CFG_PROTECTED (1 << 3)
/* Stored and reported only: Keel has no feature that reads it yet. A file
 * or command line setting it to another value than its default is warned
 * about at start-up; CONFIG SET accepts it silently. */
#define CFG_NO_EFFECT (1 << 4)

typedef struct config_enum {
    const char *name;
    int value;
} config_enum;

typedef struct config_def config_def;
struct config_def {
    const char *name;
    const char *alias;
    config_kind kind;
    int flags;
    void *value;
    const char *dflt;
    long long min, max;
    /* Numbers: out-of-range values up to max are accepted and clamped to
     * this range (Valkey treats hz as a hint this way); 0,0 for none. */
    long long clamp_min, clamp_max;
    const config_enum *enums;
    /* CFG_SPECIAL: parse and format by hand. */
    int (*set)(const config_def *d, int argc, char **argv, const char **err);
    void (*get)(const config_def *d, config_out *o);
    /* Runs after a successful run-time change (CONFIG SET, not the file).
     * Returns K_OK, or K_ERR with *err a static reason: the engine then puts
     * the old value back (without applying it again: a failed apply leaves
     * the old state in force) and the set fails with that reason. */
    int (*apply)(const char **err);
    /* CFG_SPECIAL: frees what set allocated (config_free). */
    void (*free)(const config_def *d);
};

void config_out_put(config_out *o, const char *p, size_t n);
void config_out_cstr(config_out *o, const char *s);
void config_out_printf(config_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Adds a table of n directives (borrowed for the process's life). Returns
 * K_ERR past the engine's capacity. */
int config_register(const config_def *table, size_t n);

/* The dotted parameters of another layer (modules), looked up by name. */
typedef void (*config_param_fn)(const char *name, const char *value, int is_default, void *priv);
typedef void (*config_loaded_fn)(const char *path, int argc, char *const *argv, void *priv);
typedef struct config_namespace {
    /* A `name value` file line: kept until the parameter exists. */
    int (*file_value)(const char *name, const char *value, const char *file, int line,
                      char **reason);
    int (*set)(const char *name, const char *value, char **err);
    char *(*value)(const char *name); /* km_alloc'ed copy, NULL if unknown */
    void (*foreach)(config_param_fn fn, void *priv);
    /* CONFIG REWRITE: what replaces the file's loadmodule lines. */
    void (*foreach_loaded)(config_loaded_fn fn, void *priv);
    /* 1 if name belongs to the namespace (a dotted name, a reserved family
     * such as "tls-"), whether or not it exists now: file lines, sets and
     * gets of names no directive has go to the namespace then. */
    int (*claims)(const char *name);
    /* 1 if CONFIG SET should try name (it exists, or set explains why not). */
    int (*known)(const char *name);
    int (*is_secret)(const char *name);
    /* 1 for a name of a reserved family that no loaded module holds (its
     * module was unloaded): CONFIG REWRITE drops such lines. */
    int (*orphaned)(const char *name);
    /* CONFIG SET's end: the namespace acts on the values set since the
     * last commit or discard, all together (K_ERR: *failed names the
     * parameter, *err the reason, both km_alloc'ed), or forgets them. */
    int (*commit)(char **failed, char **err);
    void (*discard)(void);
} config_namespace;
/* Borrows ns until config_free. */
void config_set_namespace(const config_namespace *ns);

/* Setters for directives kept as lines for their owner to apply later
 * (loadmodule, rename-command), and the getter of directives that have no
 * value to show. */
int config_set_loadmodule(const config_def *d, int argc, char **argv, const char **err);
int config_set_rename(const config_def *d, int argc, char **argv, const char **err);
void config_get_empty(const config_def *d, config_out *o);
/* A Valkey directive Keel refuses (it protects the server and Keel lacks
 * the feature) but that has a value asking for nothing ("cluster-enabled
 * no"): set accepts only that value and refuses any other with the reason
 * start-up gives; get shows it ("" when there is none). CONFIG REWRITE
 * writes such a row only where the file already had it. */
int config_set_refused(const config_def *d, int argc, char **argv, const char **err);
void config_get_refused(const config_def *d, config_out *o);

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

/* Sets every registered directive to its default. */
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

/* The name CONFIG SET reports: a directive's own (not an alias) or a
 * parameter's, km_alloc'ed; NULL if neither exists. */
char *config_canonical_name(const char *name);
/* Ends a CONFIG SET whose sets all succeeded: the namespace acts on the
 * parameters it set, together. K_OK, or K_ERR with *failed (the parameter)
 * and *err (km_free both): the caller puts every old value back and calls
 * config_set_discard. */
int config_set_commit(char **failed, char **err);
/* Ends a CONFIG SET that failed, after its old values were put back. */
void config_set_discard(void);
/* 1 for directives whose values are secrets (hidden from the slow log). */
int config_is_secret(const char *name);
/* 1 for directives enable-protected-configs guards (dir, dbfilename). */
int config_is_protected(const char *name);
/* Every directive that has a value, under its name and under its alias
 * (hidden ones left out, as CONFIG GET patterns leave them out), then every
 * namespace parameter, with its current value (len bytes, valid during the
 * call). */
typedef void (*config_value_fn)(const char *name, const char *value, size_t len, void *priv);
void config_foreach_value(config_value_fn fn, void *priv);

/* Valkey's "1gb", "100mb", "10k" memory values. */
int config_parse_memory(const char *s, unsigned long long *out);

#endif
