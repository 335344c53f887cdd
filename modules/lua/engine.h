/* engine.h -- the Lua engine of the lua module: sandboxed Lua states, the
 * server API scripts see (server.call and friends), the conversions between
 * reply trees and Lua values, and the run of one script function under the
 * busy, kill, OOM and no-writes rules. EVAL (eval.c) and FUNCTION/FCALL
 * build on it; neither touches a lua_State's sandbox directly.
 *
 * Everything here runs on the main thread: one script runs at a time, so the
 * running script (engine_current) is a single shared record. */
#ifndef KEEL_LUA_ENGINE_H
#define KEEL_LUA_ENGINE_H

#include <keel/keel_module.h>

#include <lua.h>
#include <stddef.h>
#include <stdint.h>

/* Script flags: a shebang's flags= (EVAL) or a registered function's flags
 * (FUNCTION), with Valkey's names (engine_flags_parse). */
#define ENGINE_NO_WRITES (1u << 0)        /* no-writes */
#define ENGINE_ALLOW_OOM (1u << 1)        /* allow-oom */
#define ENGINE_ALLOW_STALE (1u << 2)      /* allow-stale */
#define ENGINE_NO_CLUSTER (1u << 3)       /* no-cluster */
#define ENGINE_ALLOW_CROSS_SLOT (1u << 4) /* allow-cross-slot-keys */
/* An EVAL script without a shebang: Valkey's compatibility mode (the
 * command's own flags apply, writes are checked call by call). */
#define ENGINE_EVAL_COMPAT (1u << 5)

typedef struct engine engine;

/* Called once from the module's init, before anything else here. */
void engine_setup(keel_ctx *self, const keel_api *api);
const keel_api *engine_api(void);
keel_ctx *engine_self(void);

/* A new Lua state: the libraries (base without dofile/loadfile/print and
 * without bytecode loading, table, string, math, os.clock only, cjson, bit,
 * cmsgpack and struct where built), deterministic math.random, the readonly
 * library tables and the `server` table (aliased `redis`). Globals are
 * still writable so the caller may add its own (FUNCTION's registration
 * API); engine_seal turns the protection on. NULL if out of memory. */
engine *engine_create(void);
void engine_seal(engine *e);
void engine_destroy(engine *e);
lua_State *engine_lua(engine *e);
/* Bytes the state's allocator holds now (counted in used_memory too). */
size_t engine_memory(const engine *e);

/* Replaces the table on top of the stack with a readonly view of it: reads
 * see the table, writes (also rawset and setmetatable) raise "Attempt to
 * modify a readonly table", pairs/next/ipairs iterate the table. */
void engine_push_readonly(lua_State *L);

/* Compiles code as a chunk named chunkname ("@user_script") with the
 * collector stopped (CVE-2025-49844). KEEL_OK: the function is pushed;
 * KEEL_ERR: the error message is pushed. Binary chunks are refused. */
int engine_compile(engine *e, const char *chunkname, const char *code, size_t len);

/* Parses a comma-separated flag list ("no-writes,allow-oom") into *flags
 * (ORed in). KEEL_ERR with the unknown flag's name in bad/badlen. */
int engine_flags_parse(const char *s, size_t len, uint32_t *flags, const char **bad,
                       size_t *badlen);
/* A command's KEEL_CMD_* flags for a script with these ENGINE_* flags, as
 * Valkey's scriptFlagsToCmdFlags (write and deny-oom unless no-writes,
 * deny-oom unless allow-oom, stale with allow-stale, never may-replicate). */
uint32_t engine_cmd_flags(uint32_t cmd_flags, uint32_t script_flags);

/* Pushes Valkey's error table {err="CODE msg"} for msg: a leading '-' means
 * msg starts with its own code, otherwise "ERR " is put first. */
void engine_push_error(lua_State *L, const char *msg, size_t len);

/* One run of a script function. */
typedef struct engine_run {
    const char *name; /* "f_<sha1>" for EVAL, the function's name for FCALL */
    uint32_t flags;   /* ENGINE_* */
    int ro;           /* called as EVAL_RO / EVALSHA_RO / FCALL_RO */
    int eval;         /* EVAL: KEYS/ARGV are globals, SCRIPT KILL kills it;
                         else FCALL: they are the function's two arguments,
                         FUNCTION KILL kills it */
    int first_key;    /* argv index of the first key */
    int nkeys;        /* keys, then the arguments up to the last argv */
} engine_run;

/* Runs the function on top of e's stack (it is popped) for the running
 * command ctx: checks the script's flags first (a writing script under *_RO,
 * OOM at the start), then calls it with the keys and arguments, yielding to
 * the server while it runs long, and replies with its result or error. */
void engine_call(engine *e, keel_ctx *ctx, const engine_run *run);

/* The running script, NULL if none (for SCRIPT KILL, FUNCTION KILL and
 * FUNCTION STATS, which run inside the script's busy phase). */
typedef struct engine_running {
    keel_ctx *ctx;    /* the command running the script */
    const char *name; /* engine_run.name */
    int eval;
    int64_t start_ms; /* api->core->mstime() at the start */
    int wrote;        /* a write command ran: it cannot be killed */
    int killed;       /* a KILL asked it to stop */
} engine_running;

const engine_running *engine_current(void);
/* SCRIPT KILL (eval = 1) or FUNCTION KILL (eval = 0): replies to ctx with
 * OK, NOTBUSY, UNKILLABLE or the BUSY error naming the other KILL. */
void engine_kill(keel_ctx *ctx, int eval);
/* Valkey's BUSY error for a running EVAL (eval = 1) or function, without
 * the leading '-'. */
const char *engine_busy_error(int eval);

/* INFO memory fields that belong to FUNCTION (number_of_functions,
 * number_of_libraries, used_memory_vm_functions, used_memory_functions):
 * the FUNCTION code registers its reader once at setup; until then, and
 * without it, they are zero. lua_module.c prints them among EVAL's fields
 * in Valkey's order. */
typedef struct engine_function_info {
    unsigned long functions, libraries;
    long long vm_memory;     /* its Lua state */
    long long caches_memory; /* its libraries' code and metadata */
} engine_function_info;

void engine_set_function_info(void (*fn)(engine_function_info *out));
void engine_function_info_get(engine_function_info *out);

#endif
