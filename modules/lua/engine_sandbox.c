/* engine_sandbox.c -- the sandbox of a Lua state, on Debian's stock Lua 5.1
 * (which has no readonly tables, unlike Valkey's patched copy):
 *
 *  - globals: the state's global table is replaced by an empty view whose
 *    metatable reads through to the real table and refuses writes once the
 *    engine is sealed; the real table's own metatable raises Valkey's
 *    "Script attempted to access nonexistent global variable" error;
 *  - every library table (and server/redis) becomes such a readonly view,
 *    and so does the string metatable (CVE-2025-46818: a script changing a
 *    basic type's metatable reaches later scripts). getmetatable of a view
 *    is the view itself, so the real tables are never handed out;
 *  - rawset and setmetatable refuse views; next, pairs and ipairs see
 *    through them;
 *  - loadstring/load refuse bytecode and compile with the collector
 *    stopped (CVE-2025-49844); dofile, loadfile and print are gone;
 *  - unpack is a checked one (CVE-2025-46817), bit.tohex clamps its width
 *    (CVE-2024-31449), cjson.encode refuses values whose encoding could
 *    overflow lua-cjson 2.1.0's int-sized buffer (CVE-2022-24834);
 *  - pcall hands back the message of an error table, and math.random is
 *    Valkey's deterministic drand48 sequence. */
#include "engine_internal.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#define RO_ERROR "Attempt to modify a readonly table"

/* ---- readonly views ---- */

/* engine of a state: the allocator's userdata. */
static engine *sandbox_engine(lua_State *L) {
    void *ud;
    lua_getallocf(L, &ud);
    return ud;
}

/* __newindex of a view: the table (upvalue 1) takes the write only while
 * the engine is being set up. */
static int sandbox_newindex(lua_State *L) {
    if (sandbox_engine(L)->sealed) return luaL_error(L, RO_ERROR);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_rawset(L, lua_upvalueindex(1));
    return 0;
}

/* The table a view shows, pushed; or the value itself if it is no view. */
static void sandbox_push_target(lua_State *L, int idx) {
    engine *e = sandbox_engine(L);
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->readonly_ref);
    lua_pushvalue(L, idx);
    lua_rawget(L, -2);
    lua_remove(L, -2);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushvalue(L, idx);
    }
}

static int sandbox_is_view(lua_State *L, int idx) {
    if (!lua_istable(L, idx)) return 0;
    sandbox_push_target(L, idx);
    int view = !lua_rawequal(L, -1, idx < 0 ? idx - 1 : idx);
    lua_pop(L, 1);
    return view;
}

void engine_push_readonly(lua_State *L) {
    engine *e = sandbox_engine(L);
    int t = lua_gettop(L);
    lua_newtable(L);          /* the view */
    lua_createtable(L, 0, 3); /* its metatable */
    lua_pushvalue(L, t);
    lua_setfield(L, -2, "__index");
    lua_pushvalue(L, t);
    lua_pushcclosure(L, sandbox_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->readonly_ref);
    lua_pushvalue(L, -2);
    lua_pushvalue(L, t);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    lua_replace(L, t);
}

/* ---- wrapped builtins ---- */

static int sandbox_rawset(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    luaL_checkany(L, 3);
    if (sandbox_is_view(L, 1)) return luaL_error(L, RO_ERROR);
    lua_settop(L, 3);
    lua_rawset(L, 1);
    return 1;
}

/* table.insert, table.remove and table.sort (the original is upvalue 1)
 * write with raw sets, past a view's __newindex: they refuse views, or a
 * script could leave values in _G or a library for later scripts. */
static int sandbox_table_write(lua_State *L) {
    if (sandbox_is_view(L, 1)) return luaL_error(L, RO_ERROR);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* The original setmetatable is upvalue 1. */
static int sandbox_setmetatable(lua_State *L) {
    if (sandbox_is_view(L, 1)) return luaL_error(L, RO_ERROR);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

static int sandbox_next(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 2);
    sandbox_push_target(L, 1);
    lua_replace(L, 1);
    return lua_next(L, 1) ? 2 : (lua_pushnil(L), 1);
}

static int sandbox_pairs(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushcfunction(L, sandbox_next);
    sandbox_push_target(L, 1);
    lua_pushnil(L);
    return 3;
}

static int sandbox_ipairs_step(lua_State *L) {
    int i = luaL_checkint(L, 2) + 1;
    lua_pushinteger(L, i);
    lua_rawgeti(L, 1, i);
    return lua_isnil(L, -1) ? 0 : 2;
}

static int sandbox_ipairs(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushcfunction(L, sandbox_ipairs_step);
    sandbox_push_target(L, 1);
    lua_pushinteger(L, 0);
    return 3;
}

/* __newindex of a proxy's metatable view: any field but __gc and
 * __metatable goes to the
 * metatable (upvalue 1). A __gc would run script code wherever the
 * collector happens to run, even while a result becomes the reply. */
static int sandbox_proxy_newindex(lua_State *L) {
    /* Nor __metatable: clearing it would make getmetatable hand out the
     * real metatable, where a __gc could then be set. */
    if (lua_type(L, 2) == LUA_TSTRING &&
        (!strcmp(lua_tostring(L, 2), "__gc") || !strcmp(lua_tostring(L, 2), "__metatable")))
        return luaL_error(L, RO_ERROR);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_rawset(L, lua_upvalueindex(1));
    return 0;
}

/* newproxy(true)'s fresh metatable is handed out as a view that takes
 * every field but __gc. The original newproxy is upvalue 1. */
static int sandbox_newproxy(lua_State *L) {
    int fresh = lua_toboolean(L, 1) && lua_type(L, 1) == LUA_TBOOLEAN;
    lua_settop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 1, 1);
    if (!fresh || !lua_getmetatable(L, -1)) return 1;
    int mt = lua_gettop(L);
    /* Not in the readonly map (which keeps what it holds): the view and the
     * metatable go with the proxy. A raw write lands in the view itself,
     * never in the metatable. */
    lua_newtable(L); /* the view */
    lua_createtable(L, 0, 3);
    lua_pushvalue(L, mt);
    lua_setfield(L, -2, "__index");
    lua_pushvalue(L, mt);
    lua_pushcclosure(L, sandbox_proxy_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_setfield(L, mt, "__metatable"); /* getmetatable(proxy) is the view */
    lua_pop(L, 1);
    return 1;
}

/* Valkey's pcall: an error table comes back as its message. */
static int sandbox_pcall(lua_State *L) {
    luaL_checkany(L, 1);
    int ok = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0) == 0;
    if (!ok && lua_istable(L, -1)) {
        lua_getfield(L, -1, "err");
        if (lua_isstring(L, -1))
            lua_replace(L, -2);
        else
            lua_pop(L, 1);
    }
    lua_pushboolean(L, ok);
    lua_insert(L, 1);
    return lua_gettop(L);
}

/* unpack without 5.1's int overflow of e - i + 1 (CVE-2025-46817). */
static int sandbox_unpack(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    long long i = luaL_optint(L, 2, 1);
    long long last = luaL_opt(L, luaL_checkint, 3, (int)lua_objlen(L, 1));
    if (i > last) return 0;
    long long n = last - i + 1;
    if (n >= INT_MAX || !lua_checkstack(L, (int)n))
        return luaL_error(L, "too many results to unpack");
    for (long long k = i; k <= last; k++)
        lua_rawgeti(L, 1, (int)k);
    return (int)n;
}

/* setfenv may change a function's environment but not the thread's (level
 * 0): that would hand later scripts of the state a table of the script's
 * choosing as their globals. The original is upvalue 1. */
static int sandbox_setfenv(lua_State *L) {
    if (lua_isnumber(L, 1) && lua_tonumber(L, 1) == 0)
        return luaL_error(L, "setfenv cannot change the global environment");
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

static int sandbox_load_text(lua_State *L, const char *s, size_t len, const char *name) {
    engine *e = sandbox_engine(L);
    if (engine_compile(e, name, s, len) == KEEL_OK) return 1;
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
}

static int sandbox_loadstring(lua_State *L) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    return sandbox_load_text(L, s, len, luaL_optstring(L, 2, s));
}

/* load(func [, chunkname]): the pieces are gathered first, so the check
 * for bytecode sees the chunk's start. */
static int sandbox_load(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    const char *name = luaL_optstring(L, 2, "=(load)");
    luaL_Buffer b;
    lua_settop(L, 2);
    luaL_buffinit(L, &b);
    for (;;) {
        lua_pushvalue(L, 1);
        lua_call(L, 0, 1);
        if (lua_isnil(L, -1) || (lua_isstring(L, -1) && lua_objlen(L, -1) == 0)) {
            lua_pop(L, 1);
            break;
        }
        if (!lua_isstring(L, -1)) return luaL_error(L, "reader function must return a string");
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    return sandbox_load_text(L, s, len, name);
}

/* ---- math.random: Valkey's drand48 (48-bit LCG, 31-bit outputs) ---- */

static uint64_t rand48_state = 0x1234ABCD330Eull;

void engine_random_seed(int32_t seed) {
    rand48_state = ((uint64_t)(uint32_t)seed << 16) | 0x330E;
}

static int32_t rand48_next(void) {
    rand48_state = (rand48_state * 0x5DEECE66Dull + 0xB) & 0xFFFFFFFFFFFFull;
    return (int32_t)(rand48_state >> 17);
}

static int sandbox_random(lua_State *L) {
    lua_Number r = (lua_Number)(rand48_next() % INT32_MAX) / (lua_Number)INT32_MAX;
    switch (lua_gettop(L)) {
    case 0:
        lua_pushnumber(L, r);
        return 1;
    case 1: {
        int u = luaL_checkint(L, 1);
        luaL_argcheck(L, 1 <= u, 1, "interval is empty");
        lua_pushnumber(L, (lua_Number)(long long)(r * u) + 1);
        return 1;
    }
    case 2: {
        int l = luaL_checkint(L, 1), u = luaL_checkint(L, 2);
        luaL_argcheck(L, l <= u, 2, "interval is empty");
        lua_pushnumber(L, (lua_Number)(long long)(r * ((lua_Number)u - l + 1)) + l);
        return 1;
    }
    default:
        return luaL_error(L, "wrong number of arguments");
    }
}

static int sandbox_randomseed(lua_State *L) {
    engine_random_seed(luaL_checkint(L, 1));
    return 0;
}

/* ---- bit.tohex (CVE-2024-31449) ---- */

/* lua-bitop's argument rule: the number modulo 2^32, via the 2^52+2^51
 * rounding trick. */
static uint32_t sandbox_bitarg(lua_State *L, int idx) {
    union {
        lua_Number n;
        uint64_t b;
    } u;
    u.n = luaL_checknumber(L, idx) + 6755399441055744.0;
    return (uint32_t)u.b;
}

/* Width 8 by default, negative for upper case; lua-bitop 1.0.2 negates
 * INT32_MIN into a negative length. */
static int sandbox_tohex(lua_State *L) {
    uint32_t b = sandbox_bitarg(L, 1);
    int32_t n = lua_isnone(L, 2) ? 8 : (int32_t)sandbox_bitarg(L, 2);
    const char *digits = "0123456789abcdef";
    char buf[8];
    if (n < 0) {
        n = n == INT32_MIN ? INT32_MAX : -n;
        digits = "0123456789ABCDEF";
    }
    if (n > 8) n = 8;
    for (int i = n; --i >= 0;) {
        buf[i] = digits[b & 15];
        b >>= 4;
    }
    lua_pushlstring(L, buf, (size_t)n);
    return 1;
}

/* ---- cjson.encode (CVE-2022-24834) ---- */

/* lua-cjson 2.1.0 sizes its buffer in int and reserves 6 bytes per byte of
 * a string before escaping it: an encoding that might pass a quarter of
 * INT_MAX (the buffer doubles) is refused before cjson starts. The walk
 * goes as deep as cjson's encode_max_depth; deeper, cjson refuses the value
 * itself (which also ends the walk of a cycle at once). */
#define CJSON_BOUND_MAX ((double)INT_MAX / 4)
#define CJSON_TOO_DEEP (-1.0)

static double cjson_bound(lua_State *L, int depth, int max_depth, double acc) {
    if (depth > max_depth || !lua_checkstack(L, 3)) return CJSON_TOO_DEEP;
    switch (lua_type(L, -1)) {
    case LUA_TSTRING:
        return acc + 6.0 * (double)lua_objlen(L, -1) + 2;
    case LUA_TTABLE:
        acc += 2;
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            lua_pushvalue(L, -2);
            acc = cjson_bound(L, depth + 1, max_depth, acc);
            lua_pop(L, 1);
            if (acc >= 0) acc = cjson_bound(L, depth + 1, max_depth, acc + 1);
            if (acc >= 0) acc += 1;
            if (acc > CJSON_BOUND_MAX || acc < 0) {
                lua_pop(L, 2); /* the value and the key: the walk stops here */
                return acc < 0 ? CJSON_TOO_DEEP : acc;
            }
            lua_pop(L, 1);
        }
        return acc;
    default:
        return acc + 32;
    }
}

/* cjson's encode_max_depth (upvalue 2) called without arguments returns
 * the setting. */
static int cjson_max_depth(lua_State *L) {
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_call(L, 0, 1);
    int depth = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    return depth > 0 ? depth : 1000;
}

/* The original cjson.encode is upvalue 1. */
static int sandbox_cjson_encode(lua_State *L) {
    luaL_checkany(L, 1);
    lua_settop(L, 1);
    if (cjson_bound(L, 0, cjson_max_depth(L), 0) > CJSON_BOUND_MAX)
        return luaL_error(L, "Cannot serialise: value too large to encode");
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 1, 1);
    return 1;
}

/* ---- setup ---- */

static int sandbox_global_missing(lua_State *L) {
    const char *name = lua_tostring(L, 2);
    return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                      name ? name : "?");
}

void engine_sandbox_open(engine *e) {
    lua_State *L = e->L;
    lua_newtable(L);
    e->readonly_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_pushvalue(L, -1);
    e->globals_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    /* Everything opened from here on (the C functions' environments too)
     * sees the view, never the real table. */
    engine_push_readonly(L);
    lua_replace(L, LUA_GLOBALSINDEX);
}

static void sandbox_set(lua_State *L, const char *name, lua_CFunction fn) {
    lua_pushcfunction(L, fn);
    lua_setglobal(L, name);
}

/* Replaces lib.name by fn with the original as its upvalue. */
static void sandbox_wrap(lua_State *L, const char *lib, const char *name, lua_CFunction fn) {
    if (lib)
        lua_getglobal(L, lib);
    else
        lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_getfield(L, -1, name);
    lua_pushcclosure(L, fn, 1);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

void engine_sandbox_libs(engine *e) {
    lua_State *L = e->L;
    static const char *const removed[] = {"dofile", "loadfile", "print"};
    for (size_t i = 0; i < sizeof(removed) / sizeof(removed[0]); i++) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, e->globals_ref);
        lua_pushnil(L);
        lua_setfield(L, -2, removed[i]);
        lua_pop(L, 1);
    }
    sandbox_set(L, "rawset", sandbox_rawset);
    sandbox_set(L, "next", sandbox_next);
    sandbox_set(L, "pairs", sandbox_pairs);
    sandbox_set(L, "ipairs", sandbox_ipairs);
    sandbox_set(L, "pcall", sandbox_pcall);
    sandbox_set(L, "unpack", sandbox_unpack);
    sandbox_set(L, "loadstring", sandbox_loadstring);
    sandbox_set(L, "load", sandbox_load);
    sandbox_wrap(L, NULL, "setmetatable", sandbox_setmetatable);
    sandbox_wrap(L, NULL, "setfenv", sandbox_setfenv);
    sandbox_wrap(L, NULL, "newproxy", sandbox_newproxy);
    sandbox_wrap(L, "table", "insert", sandbox_table_write);
    sandbox_wrap(L, "table", "remove", sandbox_table_write);
    sandbox_wrap(L, "table", "sort", sandbox_table_write);
    lua_getglobal(L, "math");
    lua_pushcfunction(L, sandbox_random);
    lua_setfield(L, -2, "random");
    lua_pushcfunction(L, sandbox_randomseed);
    lua_setfield(L, -2, "randomseed");
    lua_getglobal(L, "bit");
    lua_pushcfunction(L, sandbox_tohex);
    lua_setfield(L, -2, "tohex");
    lua_pop(L, 2);
    lua_getglobal(L, "cjson");
    lua_getfield(L, -1, "encode");
    lua_getfield(L, -2, "encode_max_depth");
    lua_pushcclosure(L, sandbox_cjson_encode, 2);
    lua_setfield(L, -2, "encode");
    lua_pop(L, 1);
}

/* Replaces the global name (a table) by a readonly view of it. */
static void sandbox_protect_global(engine *e, const char *name) {
    lua_State *L = e->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->globals_ref);
    lua_getfield(L, -1, name);
    if (lua_istable(L, -1) && !sandbox_is_view(L, -1)) {
        engine_push_readonly(L);
        lua_setfield(L, -2, name);
    } else {
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* The string metatable reads the view of string, and getmetatable("")
 * gives a view of the metatable. */
static void sandbox_protect_string_meta(lua_State *L) {
    lua_pushliteral(L, "");
    if (!lua_getmetatable(L, -1)) {
        lua_pop(L, 1);
        return;
    }
    lua_getglobal(L, "string");
    lua_setfield(L, -2, "__index");
    lua_pushvalue(L, -1);
    engine_push_readonly(L);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 2);
}

void engine_sandbox_seal(engine *e) {
    lua_State *L = e->L;
    static const char *const libs[] = {"string", "table", "math",     "os",    "coroutine",
                                       "cjson",  "bit",   "cmsgpack", "struct"};
    for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
        sandbox_protect_global(e, libs[i]);
    /* server and redis are one table: one view for both. */
    sandbox_protect_global(e, "server");
    lua_rawgeti(L, LUA_REGISTRYINDEX, e->globals_ref);
    lua_getfield(L, -1, "server");
    lua_setfield(L, -2, "redis");
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_setfield(L, -2, "_G");
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, sandbox_global_missing);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
    lua_pop(L, 1);
    sandbox_protect_string_meta(L);
    e->sealed = 1;
}
