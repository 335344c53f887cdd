/* module.h -- loading modules (the module system: see docs/modules.md). */
#ifndef KEEL_MODULE_H
#define KEEL_MODULE_H

/* Loads every `loadmodule` line of the configuration. Returns 0, or -1 with
 * *err naming the file, line and reason. */
int module_load_configured(char **err);
void module_teardown(void);

#endif
