/* module.c -- the module loader.
 *
 * The versioned module ABI is not built yet (it is the next piece of work):
 * until it is, a `loadmodule` line stops start-up with a clear error rather
 * than being ignored, so an operator never believes a module is active when
 * it is not. */
#include "module/module.h"

#include "common/common.h"
#include "common/kmem.h"
#include "config/config.h"

#include <stdio.h>

int module_load_configured(char **err) {
    config_module_line *m = config_module_lines();
    if (!m) return K_OK;
    char buf[512];
    snprintf(buf, sizeof(buf), "%s:%d: loadmodule %s: this Keel build has no module support yet", m->file, m->line,
             m->path);
    *err = km_strdup(buf);
    return K_ERR;
}

void module_teardown(void) {
}
