/* engine_internal.h -- what engine.c, engine_api.c and engine_sandbox.c
 * share: the engine struct, the state of the running script and the helpers
 * each file gives the others. Not for eval.c or FUNCTION (engine.h is). */
#ifndef KEEL_LUA_ENGINE_INTERNAL_H
#define KEEL_LUA_ENGINE_INTERNAL_H

#include "engine.h"

#include <lauxlib.h>

struct engine {
    lua_State *L;
    size_t mem;       /* bytes the allocator holds */
    int sealed;       /* global protection on */
    int globals_ref;  /* registry ref of the real globals table */
    int readonly_ref; /* registry ref of {view = table} for every readonly view */
    unsigned runs;    /* for the periodic collector step */
    int fn_ref;       /* registry slot of the function being run */
    int handler_ref;  /* the runs' message handler */
    int runner_ref;   /* the protected part of a run (engine_run_protected) */
};

/* The running script: engine_running plus what server.call needs. */
typedef struct engine_state {
    engine_running pub;
    int active;
    int resp;      /* 2 or 3, server.setresp */
    int read_only; /* writes refused (EVAL_RO or no-writes) */
    int allow_oom; /* allow-oom: calls skip the OOM check */
    int in_call;   /* server.call is running (recursion guard) */
    lua_State *L;  /* the running state's main thread (a kill stops it too) */
} engine_state;

extern engine_state engine_cur;
extern const keel_api *engine_kapi;

/* engine_api.c */
void engine_api_register(lua_State *L); /* the server table, as global "server" and "redis" */
void engine_api_teardown(void);         /* frees server.call's argument buffers */
/* Replies to ctx with the Lua value on top of the stack (popped). */
void engine_reply_value(keel_ctx *ctx, lua_State *L, int resp);

/* engine_sandbox.c */
void engine_sandbox_open(engine *e); /* globals view (open) and the base wrappers */
void engine_sandbox_libs(engine *e); /* CVE wrappers on the loaded libraries */
void engine_sandbox_seal(engine *e); /* readonly libraries, basic metatables, globals */
void engine_random_seed(int32_t seed);

#endif
