/* eval.h -- EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT: the commands
 * lua_module.c registers, their per-call flags hook and INFO figures. */
#ifndef KEEL_LUA_EVAL_H
#define KEEL_LUA_EVAL_H

#include <keel/keel_module.h>

#include <stddef.h>

/* The EVAL engine and its scripts cache; KEEL_ERR if the Lua state cannot
 * be created. */
int eval_setup(const keel_api *api);
void eval_teardown(void);

void eval_cmd_eval(keel_ctx *ctx); /* all four EVAL forms */
void eval_cmd_script(keel_ctx *ctx);
/* keel_command_def.call_flags of the EVAL forms (Valkey's
 * evalGetCommandFlags). */
uint32_t eval_call_flags(keel_ctx *ctx, uint32_t flags);

typedef struct eval_info {
    long long vm_memory;     /* the EVAL Lua state */
    long long caches_memory; /* the cached scripts */
    size_t scripts;          /* number_of_cached_scripts */
    long long evicted;       /* evicted_scripts */
} eval_info;

void eval_stats(eval_info *out);

#endif
