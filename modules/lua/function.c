/* function.c -- FUNCTION (LOAD, LIST, DELETE, FLUSH, DUMP, RESTORE, STATS,
 * KILL, HELP) and FCALL/FCALL_RO with Valkey 8.0.1's semantics, errors and
 * reply shapes.
 *
 * All libraries share one Lua state (engine.h), separate from EVAL's. The
 * code of every library runs with the same environment: a readonly view of
 * a table whose metatable's __index is switched between the load API (only
 * server.register_function, server.log and the version fields, so a load
 * cannot call commands) while a FUNCTION LOAD runs, and the state's sealed
 * globals otherwise. Functions are closures of their library's chunk, so
 * they see the full API when called and the load API never.
 *
 * A registry is the set of libraries plus an open-addressing table of all
 * their functions by case-insensitive name (FCALL's one lookup, no
 * allocation). FUNCTION RESTORE loads into a scratch registry first and
 * joins it to the live one only when nothing collides. */
#include "function.h"

#include "engine.h"
#include "fn_dump.h"
#include "fn_meta.h"

#include <ctype.h>
#include <lauxlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define FN_ENGINE_NAME "LUA"
/* A load that runs longer is stopped (Valkey's limit). */
#define FN_LOAD_TIMEOUT_MS 500
/* Error messages are built in buffers of this size (longer ones are cut). */
#define FN_ERR_LEN 1024

#define FN_NAME_RULE                                                                               \
    "Library names can only contain letters, numbers, or underscores(_) and must be at least one " \
    "character long"

typedef struct fn_lib fn_lib;

typedef struct fn_func {
    char *name;
    size_t name_len;
    char *desc; /* NULL: none given */
    size_t desc_len;
    uint32_t flags; /* ENGINE_* */
    int ref;        /* the callback, in the Lua registry */
    fn_lib *lib;
} fn_func;

struct fn_lib {
    char *name;
    size_t name_len;
    char *code; /* as loaded, shebang included (FUNCTION LIST WITHCODE, DUMP) */
    size_t code_len;
    fn_func **funcs;
    size_t nfuncs, cap;
};

typedef struct fn_reg {
    fn_lib **libs; /* in load order */
    size_t nlibs, libs_cap;
    fn_func **slots; /* mask + 1 slots, at most half full */
    size_t mask, nfuncs;
} fn_reg;

/* The flags a function may declare, in the order FUNCTION LIST shows them. */
static const struct {
    const char *name;
    uint32_t bit;
} fn_flag_names[] = {
    {"no-writes", ENGINE_NO_WRITES},
    {"allow-oom", ENGINE_ALLOW_OOM},
    {"allow-stale", ENGINE_ALLOW_STALE},
    {"no-cluster", ENGINE_NO_CLUSTER},
    {"allow-cross-slot-keys", ENGINE_ALLOW_CROSS_SLOT},
};
#define FN_NFLAGS (sizeof fn_flag_names / sizeof fn_flag_names[0])

static struct {
    const keel_api *api;
    engine *e;
    fn_reg *reg;
    int env_ref;      /* the environment every library runs in */
    int env_meta_ref; /* its metatable: __index is switched */
    int load_api_ref; /* what a load sees */
    int globals_ref;  /* the sealed globals: what a call sees */
    fn_lib *loading;  /* the library a FUNCTION LOAD is filling, else NULL */
    int64_t load_deadline_ms;
} fn;

/* ---- Memory and strings ---- */

static void *fn_alloc(size_t n) {
    return fn.api->core->alloc(n ? n : 1);
}

static void fn_free(void *p) {
    if (p) fn.api->core->free(p);
}

static char *fn_strdup(const char *s, size_t len) {
    char *d = fn_alloc(len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

/* Grows *arr (elements of size sz) to hold one more than n. */
static void fn_reserve(void *arr, size_t *cap, size_t n, size_t sz) {
    void **a = arr;
    if (n < *cap) return;
    size_t ncap = *cap ? *cap * 2 : 4;
    void *na = fn_alloc(ncap * sz);
    if (*a) memcpy(na, *a, n * sz);
    fn_free(*a);
    *a = na;
    *cap = ncap;
}

static int64_t fn_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- Libraries and registries ---- */

static void fn_func_free(fn_func *f) {
    luaL_unref(engine_lua(fn.e), LUA_REGISTRYINDEX, f->ref);
    fn_free(f->name);
    fn_free(f->desc);
    fn_free(f);
}

static fn_lib *fn_lib_new(const char *name, size_t name_len, const char *code, size_t code_len) {
    fn_lib *lib = fn_alloc(sizeof *lib);
    memset(lib, 0, sizeof *lib);
    lib->name = fn_strdup(name, name_len);
    lib->name_len = name_len;
    lib->code = fn_strdup(code, code_len);
    lib->code_len = code_len;
    return lib;
}

static void fn_lib_free(fn_lib *lib) {
    for (size_t i = 0; i < lib->nfuncs; i++)
        fn_func_free(lib->funcs[i]);
    fn_free(lib->funcs);
    fn_free(lib->name);
    fn_free(lib->code);
    fn_free(lib);
}

/* The function of lib named name, case-insensitively: FCALL finds
 * functions so, hence two names that differ only in case cannot both be
 * called (Valkey registers both and one is unreachable; Keel refuses the
 * second). */
static fn_func *fn_lib_func(const fn_lib *lib, const char *name, size_t len) {
    for (size_t i = 0; i < lib->nfuncs; i++)
        if (lib->funcs[i]->name_len == len && strncasecmp(lib->funcs[i]->name, name, len) == 0)
            return lib->funcs[i];
    return NULL;
}

static size_t fn_lib_memory(const fn_lib *lib) {
    size_t m = sizeof *lib + lib->name_len + lib->code_len + lib->cap * sizeof(fn_func *);
    for (size_t i = 0; i < lib->nfuncs; i++)
        m += sizeof(fn_func) + lib->funcs[i]->name_len + lib->funcs[i]->desc_len + 2;
    return m;
}

static fn_reg *fn_reg_new(void) {
    fn_reg *r = fn_alloc(sizeof *r);
    memset(r, 0, sizeof *r);
    return r;
}

static void fn_reg_free(fn_reg *r) {
    for (size_t i = 0; i < r->nlibs; i++)
        fn_lib_free(r->libs[i]);
    fn_free(r->libs);
    fn_free(r->slots);
    fn_free(r);
}

static uint64_t fn_hash(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)tolower((unsigned char)s[i]);
        h *= 1099511628211ULL;
    }
    return h;
}

/* The slot of the function named name (case-insensitive), or the empty
 * slot where it would go. The table must exist. */
static fn_func **fn_slot(const fn_reg *r, const char *name, size_t len) {
    size_t i = (size_t)fn_hash(name, len) & r->mask;
    while (r->slots[i]) {
        const fn_func *f = r->slots[i];
        if (f->name_len == len && strncasecmp(f->name, name, len) == 0) break;
        i = (i + 1) & r->mask;
    }
    return &r->slots[i];
}

static fn_func *fn_lookup(const fn_reg *r, const char *name, size_t len) {
    return r->slots ? *fn_slot(r, name, len) : NULL;
}

/* Rebuilds the function table from the libraries, sized for `extra` more
 * functions. */
static void fn_reg_rehash(fn_reg *r, size_t extra) {
    size_t n = 0;
    for (size_t i = 0; i < r->nlibs; i++)
        n += r->libs[i]->nfuncs;
    size_t size = 16;
    while (size < (n + extra) * 2)
        size *= 2;
    fn_free(r->slots);
    r->slots = fn_alloc(size * sizeof *r->slots);
    memset(r->slots, 0, size * sizeof *r->slots);
    r->mask = size - 1;
    r->nfuncs = n;
    for (size_t i = 0; i < r->nlibs; i++)
        for (size_t j = 0; j < r->libs[i]->nfuncs; j++) {
            fn_func *f = r->libs[i]->funcs[j];
            *fn_slot(r, f->name, f->name_len) = f;
        }
}

static fn_lib *fn_reg_lib(const fn_reg *r, const char *name, size_t len) {
    for (size_t i = 0; i < r->nlibs; i++)
        if (r->libs[i]->name_len == len && memcmp(r->libs[i]->name, name, len) == 0)
            return r->libs[i];
    return NULL;
}

/* Adds lib and its functions; the caller checked nothing collides. */
static void fn_reg_link(fn_reg *r, fn_lib *lib) {
    fn_reserve(&r->libs, &r->libs_cap, r->nlibs, sizeof *r->libs);
    r->libs[r->nlibs++] = lib;
    if (!r->slots || (r->nfuncs + lib->nfuncs) * 2 > r->mask + 1) {
        fn_reg_rehash(r, 0);
        return;
    }
    for (size_t j = 0; j < lib->nfuncs; j++)
        *fn_slot(r, lib->funcs[j]->name, lib->funcs[j]->name_len) = lib->funcs[j];
    r->nfuncs += lib->nfuncs;
}

/* Takes lib out of r (lib is not freed). */
static void fn_reg_unlink(fn_reg *r, fn_lib *lib) {
    for (size_t i = 0; i < r->nlibs; i++)
        if (r->libs[i] == lib) {
            memmove(&r->libs[i], &r->libs[i + 1], (r->nlibs - i - 1) * sizeof *r->libs);
            r->nlibs--;
            break;
        }
    fn_reg_rehash(r, 0);
}

/* The first function of lib that r already has, or NULL. */
static const fn_func *fn_reg_collision(const fn_reg *r, const fn_lib *lib) {
    for (size_t j = 0; j < lib->nfuncs; j++)
        if (fn_lookup(r, lib->funcs[j]->name, lib->funcs[j]->name_len)) return lib->funcs[j];
    return NULL;
}

static size_t fn_reg_memory(const fn_reg *r) {
    size_t m = sizeof *r + r->libs_cap * sizeof *r->libs;
    if (r->slots) m += (r->mask + 1) * sizeof *r->slots;
    for (size_t i = 0; i < r->nlibs; i++)
        m += fn_lib_memory(r->libs[i]);
    return m;
}

/* ---- The Lua side: environment, registration, load ---- */

/* Raises Valkey's error table for msg ("ERR " is put first). */
static int fn_raise(lua_State *L, const char *msg) {
    engine_push_error(L, msg, strlen(msg));
    return lua_error(L);
}

/* __index of the load API's tables: a name that is not there. */
static int fn_lua_missing(lua_State *L) {
    char msg[300];
    const char *k = lua_tostring(L, 2);
    snprintf(msg, sizeof msg, "Script attempted to access nonexistent global variable '%.200s'",
             k ? k : "?");
    return fn_raise(L, msg);
}

/* Reads the flags table at idx into *flags; 0 on an unknown flag. */
static int fn_read_flags(lua_State *L, int idx, uint32_t *flags) {
    luaL_checkstack(L, 1, "in server.register_function");
    for (int j = 1;; j++) {
        lua_rawgeti(L, idx, j);
        if (lua_isnil(L, -1)) break;
        size_t len;
        const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
        size_t k = 0;
        while (s && k < FN_NFLAGS &&
               !(strlen(fn_flag_names[k].name) == len && strcasecmp(fn_flag_names[k].name, s) == 0))
            k++;
        lua_pop(L, 1);
        if (!s || k == FN_NFLAGS) return 0;
        *flags |= fn_flag_names[k].bit;
    }
    lua_pop(L, 1);
    return 1;
}

/* Stack slots of register_function's parsed arguments. */
enum { FN_ARG_NAME = 3, FN_ARG_DESC = 4, FN_ARG_CB = 5 };

/* One named argument: key at -2, value at -1 (left in place). */
static void fn_named_arg(lua_State *L, uint32_t *flags) {
    if (lua_type(L, -2) != LUA_TSTRING && lua_type(L, -2) != LUA_TNUMBER)
        fn_raise(L, "named argument key given to server.register_function is not a string");
    const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    int slot = 0;
    if (!strcasecmp(key, "function_name")) {
        if (!lua_isstring(L, -1))
            fn_raise(L,
                     "function_name argument given to server.register_function must be a string");
        slot = FN_ARG_NAME;
    } else if (!strcasecmp(key, "description")) {
        if (!lua_isstring(L, -1))
            fn_raise(L, "description argument given to server.register_function must be a string");
        slot = FN_ARG_DESC;
    } else if (!strcasecmp(key, "callback")) {
        if (!lua_isfunction(L, -1))
            fn_raise(L, "callback argument given to server.register_function must be a function");
        slot = FN_ARG_CB;
    } else if (!strcasecmp(key, "flags")) {
        if (!lua_istable(L, -1))
            fn_raise(L, "flags argument to server.register_function must be a table representing "
                        "function flags");
        if (!fn_read_flags(L, lua_gettop(L), flags)) fn_raise(L, "unknown flag given");
        return;
    } else {
        fn_raise(L, "unknown argument given to server.register_function");
    }
    lua_pushvalue(L, -1);
    lua_replace(L, slot);
}

static void fn_named_args(lua_State *L, uint32_t *flags) {
    if (!lua_istable(L, 1))
        fn_raise(L, "calling server.register_function with a single argument is only applicable "
                    "to Lua table (representing named arguments).");
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        fn_named_arg(L, flags);
        lua_pop(L, 1);
    }
    if (lua_isnil(L, FN_ARG_NAME))
        fn_raise(L, "server.register_function must get a function name argument");
    if (lua_isnil(L, FN_ARG_CB))
        fn_raise(L, "server.register_function must get a callback argument");
}

static void fn_positional_args(lua_State *L) {
    if (!lua_isstring(L, 1))
        fn_raise(L, "first argument to server.register_function must be a string");
    if (!lua_isfunction(L, 2))
        fn_raise(L, "second argument to server.register_function must be a function");
    lua_pushvalue(L, 1);
    lua_replace(L, FN_ARG_NAME);
    lua_pushvalue(L, 2);
    lua_replace(L, FN_ARG_CB);
}

/* server.register_function(name, callback) or
 * server.register_function{function_name=, callback=, flags=, description=}:
 * adds a function to the library being loaded. Everything is checked before
 * anything is kept, so an error leaves nothing behind. */
static int fn_lua_register(lua_State *L) {
    fn_lib *lib = fn.loading;
    if (!lib)
        return fn_raise(L, "server.register_function can only be called on FUNCTION LOAD command");
    int argc = lua_gettop(L);
    if (argc < 1 || argc > 2)
        return fn_raise(L, "wrong number of arguments to server.register_function");
    lua_settop(L, FN_ARG_CB);
    uint32_t flags = 0;
    if (argc == 1)
        fn_named_args(L, &flags);
    else
        fn_positional_args(L);
    size_t len, dlen = 0;
    const char *name = lua_tolstring(L, FN_ARG_NAME, &len);
    const char *desc = lua_isnil(L, FN_ARG_DESC) ? NULL : lua_tolstring(L, FN_ARG_DESC, &dlen);
    if (!fn_name_valid(name, len)) return fn_raise(L, FN_NAME_RULE);
    if (fn_lib_func(lib, name, len)) return fn_raise(L, "Function already exists in the library");
    /* The reference first: it is the one step that may raise (Lua out of
     * memory), and nothing is allocated yet. */
    lua_pushvalue(L, FN_ARG_CB);
    int ref = luaL_ref(L, LUA_REGISTRYINDEX);
    fn_func *f = fn_alloc(sizeof *f);
    *f = (fn_func){
        fn_strdup(name, len), len, desc ? fn_strdup(desc, dlen) : NULL, dlen, flags, ref, lib};
    fn_reserve(&lib->funcs, &lib->cap, lib->nfuncs, sizeof *lib->funcs);
    lib->funcs[lib->nfuncs++] = f;
    return 0;
}

/* Pushes a new table whose missing fields raise the nonexistent-variable
 * error. */
static void fn_push_strict(lua_State *L) {
    lua_newtable(L);
    lua_newtable(L);
    lua_pushcfunction(L, fn_lua_missing);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
}

/* Copies field name of the table at src (if set) into the table on top. */
static void fn_copy_field(lua_State *L, int src, const char *name) {
    lua_getfield(L, src, name);
    lua_setfield(L, -2, name);
}

/* The load API: globals `server` and `redis`, both the same readonly table
 * of register_function, log, its levels and the version fields. */
static void fn_build_load_api(lua_State *L) {
    static const char *const shared[] = {
        "log",
        "LOG_DEBUG",
        "LOG_VERBOSE",
        "LOG_NOTICE",
        "LOG_WARNING",
        "REDIS_VERSION",
        "REDIS_VERSION_NUM",
        "VALKEY_VERSION",
        "VALKEY_VERSION_NUM",
        "SERVER_NAME",
        "SERVER_VERSION",
        "SERVER_VERSION_NUM",
    };
    lua_getglobal(L, "server");
    int server = lua_gettop(L);
    fn_push_strict(L);
    for (size_t i = 0; lua_istable(L, server) && i < sizeof shared / sizeof shared[0]; i++)
        fn_copy_field(L, server, shared[i]);
    lua_pushcfunction(L, fn_lua_register);
    lua_setfield(L, -2, "register_function");
    engine_push_readonly(L);
    fn_push_strict(L);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "server");
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "redis");
    fn.load_api_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_settop(L, server - 1);
}

/* The environment of every library: a readonly view of an empty table
 * whose metatable's __index is the sealed globals (or, during a load, the
 * load API). */
static void fn_build_env(lua_State *L) {
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    fn.globals_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_newtable(L);
    lua_newtable(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, fn.globals_ref);
    lua_setfield(L, -2, "__index");
    lua_pushvalue(L, -1);
    fn.env_meta_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_setmetatable(L, -2);
    engine_push_readonly(L);
    fn.env_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

static void fn_env_switch(lua_State *L, int ref) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, fn.env_meta_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
}

static void fn_load_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    if (fn_now_ms() > fn.load_deadline_ms) {
        /* Fire on every line from now on: a pcall in the loop that caught
         * this error meets the next one at once. */
        lua_sethook(L, fn_load_hook, LUA_MASKLINE, 0);
        fn_raise(L, "FUNCTION LOAD timeout");
    }
}

/* The message of the error value on top: a string gets "ERR " first, an
 * error table gives its err field (read raw: no metamethod may run here). */
static void fn_error_text(lua_State *L, char *out, size_t outlen) {
    if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER) {
        snprintf(out, outlen, "ERR %s", lua_tostring(L, -1));
        return;
    }
    if (!lua_istable(L, -1)) {
        snprintf(out, outlen, "ERR unknown error");
        return;
    }
    lua_pushliteral(L, "err");
    lua_rawget(L, -2);
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "ERR unknown error";
    snprintf(out, outlen, "%s", msg);
    lua_pop(L, 1);
}

/* Runs a library's code (after its shebang) so it registers into lib.
 * 1 on success; 0 with Valkey's message in err. */
static int fn_run_load(fn_lib *lib, const char *body, size_t len, char *err) {
    lua_State *L = engine_lua(fn.e);
    int top = lua_gettop(L);
    if (engine_compile(fn.e, "@user_function", body, len) != KEEL_OK) {
        snprintf(err, FN_ERR_LEN, "Error compiling function: %s", lua_tostring(L, -1));
        lua_settop(L, top);
        return 0;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, fn.env_ref);
    lua_setfenv(L, -2);
    lua_Hook hook = lua_gethook(L);
    int mask = lua_gethookmask(L), count = lua_gethookcount(L);
    fn_env_switch(L, fn.load_api_ref);
    fn.loading = lib;
    fn.load_deadline_ms = fn_now_ms() + FN_LOAD_TIMEOUT_MS;
    lua_sethook(L, fn_load_hook, LUA_MASKCOUNT, 100000);
    int rc = lua_pcall(L, 0, 0, 0);
    lua_sethook(L, hook, mask, count);
    fn.loading = NULL;
    fn_env_switch(L, fn.globals_ref);
    if (rc != 0) {
        char msg[FN_ERR_LEN];
        fn_error_text(L, msg, sizeof msg);
        snprintf(err, FN_ERR_LEN, "Error registering functions: %.900s", msg);
    }
    lua_settop(L, top);
    return rc == 0;
}

/* Loads code (shebang first) as a new library of r; REPLACE drops a
 * library of the same name, which comes back if the load fails. Returns the
 * library, or NULL with Valkey's message in err. */
static fn_lib *fn_create(fn_reg *r, const char *code, size_t len, int replace, char *err) {
    /* The shebang's words decode into at most the first line's bytes. */
    const char *nl = memchr(code, '\n', len);
    char *scratch = fn_alloc(nl ? (size_t)(nl - code) : len);
    fn_meta m;
    fn_lib *lib = NULL, *old = NULL;
    const fn_func *dup;
    if (!fn_meta_parse(code, len, &m, scratch, err, FN_ERR_LEN)) goto fail;
    if (!fn_name_valid(m.name, m.name_len)) {
        snprintf(err, FN_ERR_LEN, "%s", FN_NAME_RULE);
        goto fail;
    }
    if (m.engine_len != 3 || strncasecmp(m.engine, "lua", 3) != 0) {
        snprintf(err, FN_ERR_LEN, "Engine '%.*s' not found",
                 (int)(m.engine_len > 200 ? 200 : m.engine_len), m.engine);
        goto fail;
    }
    old = fn_reg_lib(r, m.name, m.name_len);
    if (old && !replace) {
        snprintf(err, FN_ERR_LEN, "Library '%.*s' already exists", (int)m.name_len, m.name);
        old = NULL;
        goto fail;
    }
    if (old) fn_reg_unlink(r, old);
    lib = fn_lib_new(m.name, m.name_len, code, len);
    if (!fn_run_load(lib, m.body, m.body_len, err)) goto fail;
    if (lib->nfuncs == 0) {
        snprintf(err, FN_ERR_LEN, "No functions registered");
        goto fail;
    }
    if ((dup = fn_reg_collision(r, lib))) {
        snprintf(err, FN_ERR_LEN, "Function %s already exists", dup->name);
        goto fail;
    }
    fn_reg_link(r, lib);
    if (old) fn_lib_free(old);
    fn_free(scratch);
    return lib;
fail:
    if (lib) fn_lib_free(lib);
    if (old) fn_reg_link(r, old);
    fn_free(scratch);
    return NULL;
}

/* Moves every library of src into dst (src is left empty): on a library
 * name both have, an error unless replace (then dst's goes); on a function
 * name both have, an error. On error dst is as it was. */
static int fn_reg_join(fn_reg *dst, fn_reg *src, int replace, char *err) {
    fn_reg *old = fn_reg_new();
    int ok = 1;
    for (size_t i = 0; i < src->nlibs && ok; i++) {
        fn_lib *o = fn_reg_lib(dst, src->libs[i]->name, src->libs[i]->name_len);
        if (!o) continue;
        if (!replace) {
            snprintf(err, FN_ERR_LEN, "Library %s already exists", o->name);
            ok = 0;
        } else {
            fn_reg_unlink(dst, o);
            fn_reserve(&old->libs, &old->libs_cap, old->nlibs, sizeof *old->libs);
            old->libs[old->nlibs++] = o;
        }
    }
    for (size_t i = 0; i < src->nlibs && ok; i++) {
        const fn_func *dup = fn_reg_collision(dst, src->libs[i]);
        if (dup) {
            snprintf(err, FN_ERR_LEN, "Function %s already exists", dup->name);
            ok = 0;
        }
    }
    if (ok) {
        for (size_t i = 0; i < src->nlibs; i++)
            fn_reg_link(dst, src->libs[i]);
        src->nlibs = 0;
    } else {
        for (size_t i = 0; i < old->nlibs; i++)
            fn_reg_link(dst, old->libs[i]);
        old->nlibs = 0;
    }
    fn_reg_free(old);
    return ok;
}

/* ---- Replies ---- */

#define FN_CMD (fn.api->command)

static int fn_arg_is(keel_ctx *ctx, int i, const char *word) {
    size_t len;
    const char *a = FN_CMD->argv(ctx, i, &len);
    return a && strlen(word) == len && strncasecmp(a, word, len) == 0;
}

static void fn_reply_cstr(keel_ctx *ctx, const char *s) {
    FN_CMD->reply_bulk(ctx, s, strlen(s));
}

static void fn_reply_errf(keel_ctx *ctx, const char *fmt, const char *arg, size_t len) {
    char msg[FN_ERR_LEN];
    snprintf(msg, sizeof msg, fmt, (int)(len > 128 ? 128 : len), arg);
    FN_CMD->reply_error(ctx, msg);
}

static void fn_reply_syntax(keel_ctx *ctx) {
    size_t len;
    const char *sub = FN_CMD->argv(ctx, 1, &len);
    fn_reply_errf(ctx,
                  "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try "
                  "FUNCTION HELP.",
                  sub, len);
}

static void fn_reply_err(keel_ctx *ctx, const char *err) {
    char msg[FN_ERR_LEN + 8];
    snprintf(msg, sizeof msg, "ERR %s", err);
    FN_CMD->reply_error(ctx, msg);
}

/* ---- FUNCTION subcommands ---- */

static void fn_cmd_load(keel_ctx *ctx) {
    int argc = FN_CMD->argc(ctx), replace = 0, i = 2;
    for (; i < argc - 1; i++) {
        size_t len;
        const char *a = FN_CMD->argv(ctx, i, &len);
        if (!fn_arg_is(ctx, i, "replace")) {
            fn_reply_errf(ctx, "ERR Unknown option given: %.*s", a, len);
            return;
        }
        replace = 1;
    }
    size_t len;
    const char *code = FN_CMD->argv(ctx, argc - 1, &len);
    char err[FN_ERR_LEN];
    fn_lib *lib = fn_create(fn.reg, code, len, replace, err);
    if (!lib)
        fn_reply_err(ctx, err);
    else
        FN_CMD->reply_bulk(ctx, lib->name, lib->name_len);
}

static void fn_reply_flags(keel_ctx *ctx, uint32_t flags) {
    long long n = 0;
    for (size_t k = 0; k < FN_NFLAGS; k++)
        n += (flags & fn_flag_names[k].bit) != 0;
    FN_CMD->reply_set(ctx, n);
    for (size_t k = 0; k < FN_NFLAGS; k++)
        if (flags & fn_flag_names[k].bit) FN_CMD->reply_simple(ctx, fn_flag_names[k].name);
}

static void fn_reply_lib(keel_ctx *ctx, const fn_lib *lib, int with_code) {
    FN_CMD->reply_map(ctx, with_code ? 4 : 3);
    fn_reply_cstr(ctx, "library_name");
    FN_CMD->reply_bulk(ctx, lib->name, lib->name_len);
    fn_reply_cstr(ctx, "engine");
    fn_reply_cstr(ctx, FN_ENGINE_NAME);
    fn_reply_cstr(ctx, "functions");
    FN_CMD->reply_array(ctx, (long long)lib->nfuncs);
    for (size_t i = 0; i < lib->nfuncs; i++) {
        const fn_func *f = lib->funcs[i];
        FN_CMD->reply_map(ctx, 3);
        fn_reply_cstr(ctx, "name");
        FN_CMD->reply_bulk(ctx, f->name, f->name_len);
        fn_reply_cstr(ctx, "description");
        if (f->desc)
            FN_CMD->reply_bulk(ctx, f->desc, f->desc_len);
        else
            FN_CMD->reply_null(ctx);
        fn_reply_cstr(ctx, "flags");
        fn_reply_flags(ctx, f->flags);
    }
    if (with_code) {
        fn_reply_cstr(ctx, "library_code");
        FN_CMD->reply_bulk(ctx, lib->code, lib->code_len);
    }
}

static void fn_cmd_list(keel_ctx *ctx) {
    int argc = FN_CMD->argc(ctx), with_code = 0;
    const char *pat = NULL;
    size_t plen = 0;
    for (int i = 2; i < argc; i++) {
        size_t len;
        const char *a = FN_CMD->argv(ctx, i, &len);
        if (!with_code && fn_arg_is(ctx, i, "withcode")) {
            with_code = 1;
        } else if (!pat && fn_arg_is(ctx, i, "libraryname")) {
            if (i >= argc - 1) {
                FN_CMD->reply_error(ctx, "ERR library name argument was not given");
                return;
            }
            pat = FN_CMD->argv(ctx, ++i, &plen);
        } else {
            fn_reply_errf(ctx, "ERR Unknown argument %.*s", a, len);
            return;
        }
    }
    const fn_reg *r = fn.reg;
    long long n = 0;
    for (size_t i = 0; i < r->nlibs; i++)
        n += !pat || fn_glob_match(pat, plen, r->libs[i]->name, r->libs[i]->name_len);
    FN_CMD->reply_array(ctx, n);
    for (size_t i = 0; i < r->nlibs; i++)
        if (!pat || fn_glob_match(pat, plen, r->libs[i]->name, r->libs[i]->name_len))
            fn_reply_lib(ctx, r->libs[i], with_code);
}

static void fn_cmd_delete(keel_ctx *ctx) {
    size_t len;
    const char *name = FN_CMD->argv(ctx, 2, &len);
    fn_lib *lib = fn_reg_lib(fn.reg, name, len);
    if (!lib) {
        FN_CMD->reply_error(ctx, "ERR Library not found");
        return;
    }
    fn_reg_unlink(fn.reg, lib);
    fn_lib_free(lib);
    FN_CMD->reply_ok(ctx);
}

/* ASYNC frees at once too: freeing libraries only drops Lua references, the
 * state's collector reclaims their memory incrementally anyway. */
static void fn_cmd_flush(keel_ctx *ctx) {
    int argc = FN_CMD->argc(ctx);
    if (argc > 3) {
        fn_reply_syntax(ctx);
        return;
    }
    if (argc == 3 && !fn_arg_is(ctx, 2, "sync") && !fn_arg_is(ctx, 2, "async")) {
        FN_CMD->reply_error(ctx, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
        return;
    }
    fn_reg_free(fn.reg);
    fn.reg = fn_reg_new();
    FN_CMD->reply_ok(ctx);
}

static void fn_cmd_dump(keel_ctx *ctx) {
    const fn_reg *r = fn.reg;
    const char **codes = fn_alloc(r->nlibs * sizeof *codes);
    size_t *lens = fn_alloc(r->nlibs * sizeof *lens);
    for (size_t i = 0; i < r->nlibs; i++) {
        codes[i] = r->libs[i]->code;
        lens[i] = r->libs[i]->code_len;
    }
    size_t size = fn_dump_size(lens, r->nlibs);
    if (size == 0) {
        FN_CMD->reply_error(ctx, "ERR the libraries are too large to dump");
    } else {
        unsigned char *out = fn_alloc(size);
        fn_dump_write(out, codes, lens, r->nlibs);
        FN_CMD->reply_bulk(ctx, (const char *)out, size);
        fn_free(out);
    }
    fn_free(codes);
    fn_free(lens);
}

/* Loads every library of a checked payload into a new registry; NULL with
 * the first failure's message in err. */
static fn_reg *fn_restore_load(fn_dump_iter *it, char *err) {
    fn_reg *tmp = fn_reg_new();
    const char *code;
    size_t len;
    while (fn_dump_next(it, &code, &len))
        if (!fn_create(tmp, code, len, 0, err)) {
            fn_reg_free(tmp);
            return NULL;
        }
    return tmp;
}

static void fn_cmd_restore(keel_ctx *ctx) {
    int argc = FN_CMD->argc(ctx), policy = 'A';
    if (argc > 4) {
        fn_reply_syntax(ctx);
        return;
    }
    if (argc == 4) {
        if (fn_arg_is(ctx, 3, "append"))
            policy = 'A';
        else if (fn_arg_is(ctx, 3, "replace"))
            policy = 'R';
        else if (fn_arg_is(ctx, 3, "flush"))
            policy = 'F';
        else {
            FN_CMD->reply_error(ctx, "ERR Wrong restore policy given, value should be either "
                                     "FLUSH, APPEND or REPLACE.");
            return;
        }
    }
    size_t len;
    const unsigned char *p = (const unsigned char *)FN_CMD->argv(ctx, 2, &len);
    fn_dump_iter it;
    int rc = fn_dump_check(p, len, &it);
    if (rc != FN_DUMP_OK) {
        FN_CMD->reply_error(ctx, rc == FN_DUMP_BAD_ENVELOPE
                                     ? "ERR DUMP payload version or checksum are wrong"
                                     : "ERR failed loading the given functions payload");
        return;
    }
    char err[FN_ERR_LEN];
    fn_reg *tmp = fn_restore_load(&it, err);
    if (!tmp) {
        fn_reply_err(ctx, err);
        return;
    }
    if (policy == 'F') {
        fn_reg_free(fn.reg);
        fn.reg = tmp;
    } else {
        int ok = fn_reg_join(fn.reg, tmp, policy == 'R', err);
        fn_reg_free(tmp);
        if (!ok) {
            fn_reply_err(ctx, err);
            return;
        }
    }
    FN_CMD->reply_ok(ctx);
}

static void fn_reply_running(keel_ctx *ctx, const engine_running *run) {
    FN_CMD->reply_map(ctx, 3);
    fn_reply_cstr(ctx, "name");
    fn_reply_cstr(ctx, run->name);
    fn_reply_cstr(ctx, "command");
    int argc = FN_CMD->argc(run->ctx);
    FN_CMD->reply_array(ctx, argc);
    for (int i = 0; i < argc; i++) {
        size_t len;
        const char *a = FN_CMD->argv(run->ctx, i, &len);
        FN_CMD->reply_bulk(ctx, a, len);
    }
    fn_reply_cstr(ctx, "duration_ms");
    FN_CMD->reply_int(ctx, fn.api->core->mstime() - run->start_ms);
}

static void fn_cmd_stats(keel_ctx *ctx) {
    const engine_running *run = engine_current();
    if (run && run->eval) {
        FN_CMD->reply_error(ctx, engine_busy_error(1));
        return;
    }
    FN_CMD->reply_map(ctx, 2);
    fn_reply_cstr(ctx, "running_script");
    if (run)
        fn_reply_running(ctx, run);
    else
        FN_CMD->reply_null(ctx);
    fn_reply_cstr(ctx, "engines");
    FN_CMD->reply_map(ctx, 1);
    fn_reply_cstr(ctx, FN_ENGINE_NAME);
    FN_CMD->reply_map(ctx, 2);
    fn_reply_cstr(ctx, "libraries_count");
    FN_CMD->reply_int(ctx, (long long)fn.reg->nlibs);
    fn_reply_cstr(ctx, "functions_count");
    FN_CMD->reply_int(ctx, (long long)fn.reg->nfuncs);
}

static void fn_cmd_kill(keel_ctx *ctx) {
    engine_kill(ctx, 0);
}

static const char *const fn_help_lines[] = {
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    ("    Return a serialized payload representing the current libraries, can be restored using "
     "FUNCTION RESTORE command"),
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    ("    Restore the libraries represented by the given payload, it is possible to give a restore "
     "policy to"),
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    ("    * REPLACE: appends the restored libraries to the existing libraries, On collision, "
     "replace the old"),
    ("      libraries with the new libraries (notice that even on this option there is a chance of "
     "failure"),
    "      in case of functions name collision with another library).",
};

static void fn_cmd_help(keel_ctx *ctx) {
    size_t n = sizeof fn_help_lines / sizeof fn_help_lines[0];
    FN_CMD->reply_array(ctx, (long long)n + 3);
    FN_CMD->reply_simple(ctx, "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    for (size_t i = 0; i < n; i++)
        FN_CMD->reply_simple(ctx, fn_help_lines[i]);
    FN_CMD->reply_simple(ctx, "HELP");
    FN_CMD->reply_simple(ctx, "    Print this help.");
}

/* The subcommands, with Valkey's arities and flags. */
static const struct fn_sub {
    const char *name;
    void (*fn)(keel_ctx *ctx);
    int arity;
    uint32_t flags;
} fn_subs[] = {
    {"load", fn_cmd_load, -3, KEEL_CMD_WRITE | KEEL_CMD_DENYOOM | KEEL_CMD_NOSCRIPT},
    {"list", fn_cmd_list, -2, KEEL_CMD_NOSCRIPT},
    {"delete", fn_cmd_delete, 3, KEEL_CMD_WRITE | KEEL_CMD_NOSCRIPT},
    {"flush", fn_cmd_flush, -2, KEEL_CMD_WRITE | KEEL_CMD_NOSCRIPT},
    {"dump", fn_cmd_dump, 2, KEEL_CMD_NOSCRIPT},
    {"restore", fn_cmd_restore, -3, KEEL_CMD_WRITE | KEEL_CMD_DENYOOM | KEEL_CMD_NOSCRIPT},
    {"stats", fn_cmd_stats, 2, KEEL_CMD_NOSCRIPT | KEEL_CMD_ALLOW_BUSY},
    {"kill", fn_cmd_kill, 2, KEEL_CMD_NOSCRIPT | KEEL_CMD_ALLOW_BUSY},
    {"help", fn_cmd_help, 2, KEEL_CMD_STALE},
};

static const struct fn_sub *fn_sub_find(keel_ctx *ctx) {
    for (size_t i = 0; i < sizeof fn_subs / sizeof fn_subs[0]; i++)
        if (fn_arg_is(ctx, 1, fn_subs[i].name)) return &fn_subs[i];
    return NULL;
}

/* The flags a subcommand changes; the rest are FUNCTION's registered ones. */
#define FN_SUB_FLAGS                                                                               \
    (KEEL_CMD_WRITE | KEEL_CMD_DENYOOM | KEEL_CMD_NOSCRIPT | KEEL_CMD_ALLOW_BUSY | KEEL_CMD_STALE)

static uint32_t fn_function_flags(keel_ctx *ctx, uint32_t flags) {
    const struct fn_sub *sub = fn_sub_find(ctx);
    return sub ? (flags & ~FN_SUB_FLAGS) | sub->flags : flags;
}

static void fn_cmd_function(keel_ctx *ctx) {
    const struct fn_sub *sub = fn_sub_find(ctx);
    size_t len;
    const char *name = FN_CMD->argv(ctx, 1, &len);
    if (!sub) {
        fn_reply_errf(ctx, "ERR unknown subcommand '%.*s'. Try FUNCTION HELP.", name, len);
        return;
    }
    /* The running function's name and code belong to the registry: only
     * the allow-busy subcommands may run while it runs, whatever flags the
     * server went by. */
    const engine_running *run = engine_current();
    if (run && !(sub->flags & KEEL_CMD_ALLOW_BUSY)) {
        FN_CMD->reply_error(ctx, engine_busy_error(run->eval));
        return;
    }
    int argc = FN_CMD->argc(ctx);
    if ((sub->arity > 0 && argc != sub->arity) || (sub->arity < 0 && argc < -sub->arity)) {
        char msg[128];
        snprintf(msg, sizeof msg, "ERR wrong number of arguments for 'function|%s' command",
                 sub->name);
        FN_CMD->reply_error(ctx, msg);
        return;
    }
    sub->fn(ctx);
}

/* ---- FCALL / FCALL_RO ---- */

static const fn_func *fn_called(keel_ctx *ctx) {
    size_t len;
    const char *name = FN_CMD->argv(ctx, 1, &len);
    return name ? fn_lookup(fn.reg, name, len) : NULL;
}

/* A call's flags follow the function's own (write and deny-oom unless it
 * says no-writes, ...), as Valkey's scriptFlagsToCmdFlags. */
static uint32_t fn_fcall_flags(keel_ctx *ctx, uint32_t flags) {
    const fn_func *f = fn_called(ctx);
    return f ? engine_cmd_flags(flags, f->flags) : flags;
}

static void fn_fcall(keel_ctx *ctx, int ro) {
    const fn_func *f = fn_called(ctx);
    if (!f) {
        FN_CMD->reply_error(ctx, "ERR Function not found");
        return;
    }
    long long nkeys;
    int argc = FN_CMD->argc(ctx);
    if (FN_CMD->arg_ll(ctx, 2, &nkeys) != KEEL_OK) {
        FN_CMD->reply_error(ctx, "ERR Bad number of keys provided");
        return;
    }
    if (nkeys > argc - 3) {
        FN_CMD->reply_error(ctx, "ERR Number of keys can't be greater than number of args");
        return;
    }
    if (nkeys < 0) {
        FN_CMD->reply_error(ctx, "ERR Number of keys can't be negative");
        return;
    }
    lua_rawgeti(engine_lua(fn.e), LUA_REGISTRYINDEX, f->ref);
    engine_run run = {f->name, f->flags, ro, 0, 3, (int)nkeys};
    engine_call(fn.e, ctx, &run);
}

static void fn_cmd_fcall(keel_ctx *ctx) {
    fn_fcall(ctx, 0);
}

static void fn_cmd_fcall_ro(keel_ctx *ctx) {
    fn_fcall(ctx, 1);
}

/* ---- Setup ---- */

static void fn_info(engine_function_info *out) {
    out->functions = fn.reg ? fn.reg->nfuncs : 0;
    out->libraries = fn.reg ? fn.reg->nlibs : 0;
    out->vm_memory = fn.e ? (long long)engine_memory(fn.e) : 0;
    out->caches_memory = fn.reg ? (long long)fn_reg_memory(fn.reg) : 0;
}

static int fn_register_commands(keel_ctx *ctx) {
    /* FCALL's keys: the count at argument 2, the keys right after it. */
    static const keel_key_spec rw = {sizeof(keel_key_spec),
                                     KEEL_KEY_SPEC_RW | KEEL_KEY_SPEC_ACCESS | KEEL_KEY_SPEC_UPDATE,
                                     KEEL_KEY_BEGIN_INDEX,
                                     2,
                                     NULL,
                                     0,
                                     KEEL_KEY_FIND_KEYNUM,
                                     0,
                                     0,
                                     0,
                                     0,
                                     1,
                                     1};
    static const keel_key_spec ro = {sizeof(keel_key_spec),
                                     KEEL_KEY_SPEC_RO | KEEL_KEY_SPEC_ACCESS,
                                     KEEL_KEY_BEGIN_INDEX,
                                     2,
                                     NULL,
                                     0,
                                     KEEL_KEY_FIND_KEYNUM,
                                     0,
                                     0,
                                     0,
                                     0,
                                     1,
                                     1};
    const keel_command_def defs[] = {
        {sizeof(keel_command_def), "function", fn_cmd_function, -2, "no-script", 0, 0, 0,
         "A container for function commands.", NULL, 0, fn_function_flags},
        {sizeof(keel_command_def), "fcall", fn_cmd_fcall, -3,
         "no-script may-replicate no-mandatory-keys allow-stale", 0, 0, 0,
         "Invokes a function.", &rw, 1, fn_fcall_flags},
        {sizeof(keel_command_def), "fcall_ro", fn_cmd_fcall_ro, -3,
         "no-script no-mandatory-keys allow-stale readonly", 0, 0, 0,
         "Invokes a read-only function.", &ro, 1, fn_fcall_flags},
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
        if (fn.api->command->register_command(ctx, &defs[i]) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

int function_setup(keel_ctx *ctx, const keel_api *api) {
    fn.api = api;
    fn.e = engine_create();
    if (!fn.e) {
        api->core->set_error(ctx, "lua: cannot create the functions' Lua state");
        return KEEL_ERR;
    }
    engine_seal(fn.e);
    lua_State *L = engine_lua(fn.e);
    fn_build_load_api(L);
    fn_build_env(L);
    fn.reg = fn_reg_new();
    engine_set_function_info(fn_info);
    return fn_register_commands(ctx);
}

void function_teardown(void) {
    if (fn.reg) fn_reg_free(fn.reg);
    fn.reg = NULL;
    if (fn.e) engine_destroy(fn.e);
    fn.e = NULL;
}
