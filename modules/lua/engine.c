/* engine.c -- Lua states and script runs: creation with a counting
 * allocator, the libraries, compiling with the collector stopped, running a
 * function with KEYS/ARGV under the busy/kill/OOM/no-writes rules, the
 * error reply Valkey builds from a failed run, and SCRIPT/FUNCTION KILL.
 *
 * The sandbox (readonly tables, wrapped builtins) is engine_sandbox.c; the
 * server table and the value conversions are engine_api.c. */
#include "engine_internal.h"

#include <lualib.h>
#include <stdio.h>
#include <string.h>

int luaopen_cjson(lua_State *L);
int luaopen_bit(lua_State *L);
#ifdef ENGINE_HAVE_CMSGPACK
int luaopen_cmsgpack(lua_State *L);
#endif
#ifdef ENGINE_HAVE_STRUCT
int luaopen_struct(lua_State *L);
#endif

/* Instructions between two calls of the count hook: well under a
 * millisecond of work, as Valkey's. */
#define ENGINE_HOOK_COUNT 100000
/* Runs between two steps of the collector (Valkey's LUA_GC_CYCLE_PERIOD):
 * a full cycle now and then costs more latency than small steps. */
#define ENGINE_GC_PERIOD 50

engine_state engine_cur;
const keel_api *engine_kapi;
static keel_ctx *engine_self_ctx;
static void (*function_info_fn)(engine_function_info *out);

void engine_setup(keel_ctx *self, const keel_api *api) {
    engine_self_ctx = self;
    engine_kapi = api;
    engine_random_seed((int32_t)api->core->ustime());
}

void engine_teardown(void) {
    engine_api_teardown();
}

const keel_api *engine_api(void) {
    return engine_kapi;
}

keel_ctx *engine_self(void) {
    return engine_self_ctx;
}

void engine_set_function_info(void (*fn)(engine_function_info *out)) {
    function_info_fn = fn;
}

void engine_function_info_get(engine_function_info *out) {
    memset(out, 0, sizeof(*out));
    if (function_info_fn) function_info_fn(out);
}

/* ---- the state ---- */

/* Lua's allocator contract (free on nsize 0, osize is the old block's
 * size) on the server's allocator, so scripts' memory is in used_memory and
 * each state knows its own. */
static void *engine_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    engine *e = ud;
    if (nsize == 0) {
        if (ptr) {
            engine_kapi->core->free(ptr);
            e->mem -= osize;
        }
        return NULL;
    }
    void *p = ptr ? engine_kapi->core->realloc(ptr, nsize) : engine_kapi->core->alloc(nsize);
    if (p) e->mem += nsize - (ptr ? osize : 0);
    return p;
}

static int engine_panic(lua_State *L) {
    engine_kapi->core->log(engine_self_ctx, KEEL_LOG_WARNING, "Lua panic: %s",
                           lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
    return 0;
}

static void engine_open(lua_State *L, const char *name, lua_CFunction fn) {
    lua_pushcfunction(L, fn);
    lua_pushstring(L, name);
    lua_call(L, 1, 0);
}

/* A library whose opener returns its table without naming a global. */
static void engine_open_global(lua_State *L, const char *name, lua_CFunction fn) {
    lua_pushcfunction(L, fn);
    lua_call(L, 0, 1);
    lua_setglobal(L, name);
}

/* os keeps only clock, as Valkey allows. */
static void engine_os_clock_only(lua_State *L) {
    lua_getglobal(L, "os");
    lua_getfield(L, -1, "clock");
    lua_newtable(L);
    lua_insert(L, -2);
    lua_setfield(L, -2, "clock");
    lua_setglobal(L, "os");
    lua_pop(L, 1);
}

static int engine_init_state(lua_State *L) {
    engine *e = lua_touserdata(L, 1);
    engine_open(L, "", luaopen_base);
    engine_open(L, LUA_TABLIBNAME, luaopen_table);
    engine_open(L, LUA_STRLIBNAME, luaopen_string);
    engine_open(L, LUA_MATHLIBNAME, luaopen_math);
    engine_open(L, LUA_OSLIBNAME, luaopen_os);
    engine_os_clock_only(L);
    engine_open_global(L, "cjson", luaopen_cjson);
    engine_open(L, "bit", luaopen_bit);
#ifdef ENGINE_HAVE_CMSGPACK
    engine_open_global(L, "cmsgpack", luaopen_cmsgpack);
#endif
#ifdef ENGINE_HAVE_STRUCT
    engine_open_global(L, "struct", luaopen_struct);
#endif
    /* The libraries registered into the real globals (luaL_register reads
     * them raw); from here on the state sees the view. */
    engine_sandbox_open(e);
    engine_sandbox_libs(e);
    engine_api_register(L);
    return 0;
}

static int engine_error_handler(lua_State *L);
static int engine_run_protected(lua_State *L);

engine *engine_create(void) {
    engine *e = engine_kapi->core->calloc(1, sizeof(*e));
    if (!e) return NULL;
    e->L = lua_newstate(engine_alloc, e);
    if (!e->L) {
        engine_kapi->core->free(e);
        return NULL;
    }
    lua_atpanic(e->L, engine_panic);
    lua_pushboolean(e->L, 0);
    e->fn_ref = luaL_ref(e->L, LUA_REGISTRYINDEX);
    lua_pushcfunction(e->L, engine_error_handler);
    e->handler_ref = luaL_ref(e->L, LUA_REGISTRYINDEX);
    lua_pushcfunction(e->L, engine_run_protected);
    e->runner_ref = luaL_ref(e->L, LUA_REGISTRYINDEX);
    lua_pushcfunction(e->L, engine_init_state);
    lua_pushlightuserdata(e->L, e);
    if (lua_pcall(e->L, 1, 0, 0) != 0) {
        engine_kapi->core->log(engine_self_ctx, KEEL_LOG_WARNING, "Lua state setup failed: %s",
                               lua_tostring(e->L, -1) ? lua_tostring(e->L, -1) : "?");
        engine_destroy(e);
        return NULL;
    }
    return e;
}

void engine_seal(engine *e) {
    engine_sandbox_seal(e);
}

void engine_destroy(engine *e) {
    if (!e) return;
    if (e->L) lua_close(e->L);
    engine_kapi->core->free(e);
}

lua_State *engine_lua(engine *e) {
    return e->L;
}

size_t engine_memory(const engine *e) {
    return e ? e->mem : 0;
}

/* ---- compiling ---- */

int engine_compile(engine *e, const char *chunkname, const char *code, size_t len) {
    lua_State *L = e->L;
    if (len > 0 && code[0] == LUA_SIGNATURE[0]) {
        lua_pushstring(L, "binary chunks are not allowed");
        return KEEL_ERR;
    }
    /* The 5.1 parser keeps strings it is still using where the collector
     * does not see them (CVE-2025-49844): nothing is collected meanwhile. */
    lua_gc(L, LUA_GCSTOP, 0);
    int rc = luaL_loadbuffer(L, code, len, chunkname);
    lua_gc(L, LUA_GCRESTART, 0);
    return rc == 0 ? KEEL_OK : KEEL_ERR;
}

/* ---- flags ---- */

static const struct {
    const char *name;
    uint32_t flag;
} engine_flag_names[] = {
    {"no-writes", ENGINE_NO_WRITES},
    {"allow-oom", ENGINE_ALLOW_OOM},
    {"allow-stale", ENGINE_ALLOW_STALE},
    {"no-cluster", ENGINE_NO_CLUSTER},
    {"allow-cross-slot-keys", ENGINE_ALLOW_CROSS_SLOT},
};

static int engine_flag_lookup(const char *s, size_t len, uint32_t *flag) {
    for (size_t i = 0; i < sizeof(engine_flag_names) / sizeof(engine_flag_names[0]); i++) {
        if (strlen(engine_flag_names[i].name) == len &&
            !memcmp(engine_flag_names[i].name, s, len)) {
            *flag = engine_flag_names[i].flag;
            return KEEL_OK;
        }
    }
    return KEEL_ERR;
}

int engine_flags_parse(const char *s, size_t len, uint32_t *flags, const char **bad,
                       size_t *badlen) {
    size_t pos = 0;
    while (pos <= len) {
        const char *comma = memchr(s + pos, ',', len - pos);
        size_t n = comma ? (size_t)(comma - (s + pos)) : len - pos;
        uint32_t flag;
        if (engine_flag_lookup(s + pos, n, &flag) != KEEL_OK) {
            *bad = s + pos;
            *badlen = n;
            return KEEL_ERR;
        }
        *flags |= flag;
        pos += n + 1;
    }
    return KEEL_OK;
}

uint32_t engine_cmd_flags(uint32_t cmd_flags, uint32_t script_flags) {
    cmd_flags &= ~(KEEL_CMD_STALE | KEEL_CMD_DENYOOM | KEEL_CMD_WRITE | KEEL_CMD_MAY_REPLICATE);
    if (!(script_flags & (ENGINE_ALLOW_OOM | ENGINE_NO_WRITES))) cmd_flags |= KEEL_CMD_DENYOOM;
    if (!(script_flags & ENGINE_NO_WRITES)) cmd_flags |= KEEL_CMD_WRITE;
    if (script_flags & ENGINE_ALLOW_STALE) cmd_flags |= KEEL_CMD_STALE;
    return cmd_flags;
}

/* ---- errors ---- */

void engine_push_error(lua_State *L, const char *msg, size_t len) {
    const char *code = "ERR", *text = msg;
    size_t codelen = 3, textlen = len;
    if (len > 0 && msg[0] == '-') {
        const char *sp = memchr(msg, ' ', len);
        if (sp) {
            code = msg + 1;
            codelen = (size_t)(sp - msg) - 1;
            text = sp + 1;
            textlen = len - (size_t)(sp + 1 - msg);
        } else {
            text = msg + 1;
            textlen = len - 1;
        }
    }
    /* Neither end of the message keeps CR or LF (Valkey trims them). */
    while (textlen && (text[0] == '\r' || text[0] == '\n'))
        text++, textlen--;
    while (textlen && (text[textlen - 1] == '\r' || text[textlen - 1] == '\n'))
        textlen--;
    lua_createtable(L, 0, 1);
    lua_pushlstring(L, code, codelen);
    lua_pushliteral(L, " ");
    lua_pushlstring(L, text, textlen);
    lua_concat(L, 3);
    lua_setfield(L, -2, "err");
}

/* The message handler of a run: turns any error value into Valkey's error
 * table and records where it was raised (the Lua function, not the C
 * function such as server.call or error that raised it). */
static int engine_error_handler(lua_State *L) {
    lua_Debug ar;
    int where = lua_getstack(L, 1, &ar) && lua_getinfo(L, "nSl", &ar);
    if (where && !strcmp(ar.what, "C"))
        where = lua_getstack(L, 2, &ar) && lua_getinfo(L, "nSl", &ar);
    if (!lua_istable(L, 1)) {
        const char *s = lua_tostring(L, 1);
        if (!s) s = lua_isnil(L, 1) ? "nil" : lua_typename(L, lua_type(L, 1));
        lua_createtable(L, 0, 3);
        lua_pushfstring(L, "ERR %s", s);
        lua_setfield(L, -2, "err");
        lua_replace(L, 1);
    }
    /* Raw: a script's error table may have a metatable of its own. */
    if (where) {
        lua_pushliteral(L, "source");
        lua_pushstring(L, ar.source);
        lua_rawset(L, 1);
        lua_pushliteral(L, "line");
        lua_pushinteger(L, ar.currentline);
        lua_rawset(L, 1);
    }
    lua_settop(L, 1);
    return 1;
}

static void engine_reply_err(keel_ctx *ctx, const char *msg, size_t len, int no_stats) {
    const keel_api *api = engine_kapi;
    if (KEEL_API_HAS(api, command, reply_error_ex))
        api->command->reply_error_ex(ctx, msg, len, no_stats ? KEEL_REPLY_ERR_NO_STATS : 0);
    else
        api->command->reply_error(ctx, msg);
}

/* t[name] of the table at idx (a negative index below the top), raw. */
static void engine_rawfield(lua_State *L, int idx, const char *name) {
    lua_pushstring(L, name);
    lua_rawget(L, idx - 1);
}

/* The error of a failed run, on top of the stack (popped). */
static void engine_reply_failure(keel_ctx *ctx, lua_State *L, const char *name) {
    char buf[512];
    if (!lua_istable(L, -1)) {
        const char *s = lua_tostring(L, -1);
        int n = snprintf(buf, sizeof(buf), "ERR Error running script %s, %.100s", name,
                         s ? s : "execution failure");
        engine_reply_err(ctx, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1, 0);
        lua_pop(L, 1);
        return;
    }
    /* Raw reads: this runs outside the protected call, where a metamethod
     * of the script's error table raising an error would end the server. */
    engine_rawfield(L, -1, "err");
    engine_rawfield(L, -2, "source");
    engine_rawfield(L, -3, "line");
    engine_rawfield(L, -4, "ignore_error_stats_update");
    int no_stats = lua_toboolean(L, -1);
    const char *err = lua_isstring(L, -4) ? lua_tostring(L, -4) : "ERR unknown error";
    if (lua_isstring(L, -3) && lua_isstring(L, -2)) {
        lua_pushfstring(L, "%s script: %s, on %s:%s.", err, name, lua_tostring(L, -3),
                        lua_tostring(L, -2));
    } else {
        lua_pushstring(L, err);
    }
    size_t len;
    const char *msg = lua_tolstring(L, -1, &len);
    engine_reply_err(ctx, msg, len, no_stats);
    lua_pop(L, 6);
}

/* ---- running ---- */

const char *engine_busy_error(int eval) {
    return eval ? "BUSY Valkey is busy running a script. You can only call SCRIPT KILL or "
                  "SHUTDOWN NOSAVE."
                : "BUSY Valkey is busy running a script. You can only call FUNCTION KILL or "
                  "SHUTDOWN NOSAVE.";
}

const engine_running *engine_current(void) {
    return engine_cur.active ? &engine_cur.pub : NULL;
}

static void engine_count_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    engine_running *run = &engine_cur.pub;
    if (!run->killed &&
        engine_kapi->call->busy_yield(run->ctx, engine_busy_error(run->eval)) != KEEL_OK)
        run->killed = 1;
    if (!run->killed) return;
    /* Valkey words it so for functions too. */
    engine_kapi->core->log(engine_self_ctx, KEEL_LOG_NOTICE,
                           "Lua script killed by user with SCRIPT KILL.");
    /* From now on every instruction raises again, in this thread and the
     * script's main one (a coroutine may be running), so a pcall in the
     * script cannot catch the kill and go on; server.call refuses too, and
     * the run replies the kill whatever it returns. */
    lua_sethook(L, engine_count_hook, LUA_MASKCOUNT, 1);
    if (engine_cur.L && engine_cur.L != L)
        lua_sethook(engine_cur.L, engine_count_hook, LUA_MASKCOUNT, 1);
    const char *msg = "Script killed by user with SCRIPT KILL...";
    engine_push_error(L, msg, strlen(msg));
    lua_error(L);
}

static int engine_over_maxmemory(void) {
    long long used, max;
    const keel_api *api = engine_kapi;
    if (api->core->stat_get("maxmemory", &max) != KEEL_OK || max <= 0) return 0;
    return api->core->stat_get("used_memory", &used) == KEEL_OK && used > max;
}

/* Valkey's checks before a script with a shebang (or a function) runs;
 * 1 if it may run, else 0 after replying. */
static int engine_may_run(keel_ctx *ctx, const engine_run *run) {
    if (run->flags & ENGINE_EVAL_COMPAT) return 1;
    const char *err = NULL;
    if (!(run->flags & ENGINE_NO_WRITES) && run->ro)
        err = "ERR Can not execute a script with write flag using *_ro command.";
    else if (!(run->flags & (ENGINE_ALLOW_OOM | ENGINE_NO_WRITES)) && engine_over_maxmemory())
        err = "OOM allow-oom flag is not set on the script, can not run it when used memory > "
              "'maxmemory'";
    if (!err) return 1;
    engine_kapi->command->reply_error(ctx, err);
    return 0;
}

static void engine_push_array(lua_State *L, keel_ctx *ctx, int first, int n) {
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *s = engine_kapi->command->argv(ctx, first + i, &len);
        lua_pushlstring(L, s, len);
        lua_rawseti(L, -2, i + 1);
    }
}

/* KEYS and ARGV of an EVAL are globals, set past the protection. */
static void engine_set_eval_globals(engine *e, keel_ctx *ctx, const engine_run *run, int argc) {
    lua_State *L = e->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->globals_ref);
    engine_push_array(L, ctx, run->first_key, run->nkeys);
    lua_setfield(L, -2, "KEYS");
    engine_push_array(L, ctx, run->first_key + run->nkeys, argc - run->first_key - run->nkeys);
    lua_setfield(L, -2, "ARGV");
    lua_pop(L, 1);
}

static void engine_begin(keel_ctx *ctx, const engine_run *run) {
    memset(&engine_cur, 0, sizeof(engine_cur));
    engine_cur.active = 1;
    engine_cur.resp = 2;
    engine_cur.pub.ctx = ctx;
    engine_cur.pub.name = run->name;
    engine_cur.pub.eval = run->eval;
    engine_cur.pub.start_ms = engine_kapi->core->mstime();
    int compat = !!(run->flags & ENGINE_EVAL_COMPAT);
    engine_cur.read_only = run->ro || (!compat && (run->flags & ENGINE_NO_WRITES));
    engine_cur.allow_oom = !compat && (run->flags & ENGINE_ALLOW_OOM);
}

typedef struct engine_job {
    engine *e;
    keel_ctx *ctx;
    const engine_run *run;
    int replied;
} engine_job;

/* Everything of a run that allocates in Lua, under a protected call: a
 * userdata's __gc (newproxy) raising while KEYS are built or while the
 * collector steps must fail the run, not end the server. */
static int engine_run_protected(lua_State *L) {
    engine_job *job = lua_touserdata(L, 1);
    engine *e = job->e;
    const engine_run *run = job->run;
    int argc = engine_kapi->command->argc(job->ctx), nargs = 0;
    lua_settop(L, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->handler_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->fn_ref);
    if (run->eval) {
        engine_set_eval_globals(e, job->ctx, run, argc);
    } else {
        engine_push_array(L, job->ctx, run->first_key, run->nkeys);
        engine_push_array(L, job->ctx, run->first_key + run->nkeys,
                          argc - run->first_key - run->nkeys);
        nargs = 2;
    }
    int hooked = KEEL_API_HAS(engine_kapi, call, busy_yield);
    if (hooked) lua_sethook(L, engine_count_hook, LUA_MASKCOUNT, ENGINE_HOOK_COUNT);
    int failed = lua_pcall(L, nargs, 1, 1);
    if (hooked) lua_sethook(L, NULL, 0, 0);
    /* No script code runs while the result becomes the reply (a half-sent
     * reply cannot be taken back): the conversion reads raw, and no
     * userdata of a script has a __gc (engine_sandbox.c). */
    if (engine_cur.pub.killed && !failed) {
        /* Killed, but the script went on (a pcall caught the kill, or it
         * ran in a coroutine): the reply is still the kill. */
        const char *msg = "Script killed by user with SCRIPT KILL...";
        lua_pop(L, 1);
        engine_push_error(L, msg, strlen(msg));
        failed = 1;
    }
    if (failed)
        engine_reply_failure(job->ctx, L, run->name);
    else
        engine_reply_value(job->ctx, L, engine_cur.resp);
    job->replied = 1;
    if (++e->runs % ENGINE_GC_PERIOD == 0) lua_gc(L, LUA_GCSTEP, ENGINE_GC_PERIOD);
    return 0;
}

void engine_call(engine *e, keel_ctx *ctx, const engine_run *run) {
    lua_State *L = e->L;
    if (engine_cur.active || !engine_may_run(ctx, run)) {
        if (engine_cur.active) engine_kapi->command->reply_error(ctx, "ERR a script is running");
        lua_pop(L, 1);
        return;
    }
    /* The function waits in its registry slot (set in place: no
     * allocation) for the protected call to take it. */
    lua_rawseti(L, LUA_REGISTRYINDEX, e->fn_ref);
    engine_job job = {e, ctx, run, 0};
    engine_begin(ctx, run);
    engine_cur.L = L;
    /* lua_cpcall would allocate a closure per run: the protected entry is
     * kept in the registry instead. */
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->runner_ref);
    lua_pushlightuserdata(L, &job);
    if (lua_pcall(L, 1, 0, 0) != 0) {
        const char *msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "execution failure";
        if (!job.replied) {
            char buf[256];
            int n =
                snprintf(buf, sizeof(buf), "ERR Error running script %s, %.100s", run->name, msg);
            engine_reply_err(ctx, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1, 0);
        } else {
            engine_kapi->core->log(engine_self_ctx, KEEL_LOG_WARNING,
                                   "Lua error after a script's reply: %s", msg);
        }
        lua_pop(L, 1);
        lua_sethook(L, NULL, 0, 0);
    }
    lua_pushboolean(L, 0);
    lua_rawseti(L, LUA_REGISTRYINDEX, e->fn_ref);
    engine_cur.active = 0;
}

/* ---- kill ---- */

void engine_kill(keel_ctx *ctx, int eval) {
    const keel_api *api = engine_kapi;
    engine_running *run = &engine_cur.pub;
    if (!engine_cur.active) {
        api->command->reply_error(ctx, "NOTBUSY No scripts in execution right now.");
    } else if (run->wrote) {
        api->command->reply_error(
            ctx, "UNKILLABLE Sorry the script already executed write commands against the "
                 "dataset. You can either wait the script termination or kill the server in a "
                 "hard way using the SHUTDOWN NOSAVE command.");
    } else if (eval != run->eval) {
        api->command->reply_error(ctx, engine_busy_error(run->eval));
    } else {
        run->killed = 1;
        api->command->reply_ok(ctx);
    }
}
