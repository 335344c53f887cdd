/* function.h -- FUNCTION and FCALL/FCALL_RO of the lua module: the
 * libraries and functions registries, the load-time sandbox, FUNCTION DUMP
 * and RESTORE (payload in fn_dump.h). lua_module.c calls function_setup
 * from its init, after engine_setup, and function_teardown from deinit. */
#ifndef KEEL_LUA_FUNCTION_H
#define KEEL_LUA_FUNCTION_H

#include <keel/keel_module.h>

/* Creates the functions' Lua state, registers FUNCTION, FCALL and FCALL_RO
 * and the INFO reader (engine_set_function_info). KEEL_ERR with the reason
 * set on ctx. */
int function_setup(keel_ctx *ctx, const keel_api *api);
/* Frees every library and the Lua state. */
void function_teardown(void);

#endif
