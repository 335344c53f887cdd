/* module.h -- the module system as the rest of the core sees it: loading
 * and unloading modules (loadmodule, MODULE LOAD/LOADEX/UNLOAD/LIST), module
 * configuration parameters for config.c, the cron tick, and the names and
 * copies of values of module data types for the keyspace commands.
 *
 * The ABI modules are built against is sdk/include/keel/keel_module.h; the
 * implementation of its function table lives in core/module/module_*.c.
 *
 * Threads: main thread. */
#ifndef KEEL_MODULE_H
#define KEEL_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "keyspace/object.h"

/* Loads every `loadmodule` line of the configuration, then checks that
 * every `<module>.<name>` line of the file found its parameter. Returns 0,
 * or -1 with *err naming the file, line and reason. */
int module_load_configured(char **err);

/* Loads a module: argv are its arguments, cfg holds ncfg name/value pairs
 * (MODULE LOADEX CONFIG). Returns 0, or -1 with *err (km_free it). Every
 * refusal is also logged. */
int module_load(const char *path, int argc, const char *const *argv, int ncfg,
                const char *const *cfg, char **err);
/* Unloads the module called name. Returns 0, or -1 with *err. */
int module_unload(const char *name, char **err);
/* Unloads everything (shutdown): values of module types are deleted first. */
void module_teardown(void);
/* Registers the transports' I/O-thread jobs (handshakes); at start-up. */
void module_transport_setup(void);

size_t module_count(void);
/* MODULE LIST: calls fn for each module in load order. */
typedef void (*module_list_fn)(const char *name, uint32_t version, const char *path, int argc,
                               char *const *argv, void *priv);
void module_foreach(module_list_fn fn, void *priv);
/* The name of the module a command's module field points to. */
const char *module_name_of(const void *mod);

/* Runs the modules' cron hooks (server cron). */
void module_cron(void);

/* The registered name of a module value's type (TYPE). */
const char *module_type_name(const kobj *o);
/* A copy of a module value through its type's copy callback (COPY); NULL
 * if the type has none. */
kobj *module_copy_value(const kobj *o);

/* Module parameters `<module>.<name>` (config.c calls these for names with
 * a '.'). A config-file line is kept until its module registers the
 * parameter; set/get act on registered parameters only. Errors are
 * km_strdup'ed into *err. */
int module_config_file_value(const char *name, const char *value, const char *file, int line,
                             char **err);
int module_config_set(const char *name, const char *value, char **err);
int module_config_get(const char *name, char *buf, size_t len);
/* The parameter's value, whole (km_free it), or NULL if not registered. */
char *module_config_value(const char *name);
typedef void (*module_config_fn)(const char *name, const char *value, int is_default, void *priv);
void module_config_foreach(module_config_fn fn, void *priv);

#endif
