/* engine_api.c -- the `server` table scripts see (aliased `redis`): call and
 * pcall through the SDK's call API, the reply helpers, sha1hex, log,
 * setresp, set_repl, acl_check_cmd and the version fields; and the two
 * conversions, a command's reply tree into Lua values (RESP2 and RESP3, as
 * Valkey's script_lua.c) and a script's result into the client's reply. */
#include "engine_internal.h"

#include <limits.h>
#include <math.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUMBUF 32 /* one formatted number argument */

/* Arguments of server.call, kept between calls so a steady stream of
 * calls allocates nothing: pointers into the Lua strings on the stack, and
 * a NUMBUF slot per argument for numbers. */
static const char **call_argv;
static size_t *call_lens;
static char *call_nums;
static int call_cap;

static int api_argv_grow(int argc) {
    if (argc <= call_cap) return KEEL_OK;
    const keel_api *api = engine_kapi;
    int cap = argc < 16 ? 16 : argc;
    const char **argv = api->core->realloc(call_argv, sizeof(*argv) * (size_t)cap);
    if (argv) call_argv = argv;
    size_t *lens = api->core->realloc(call_lens, sizeof(*lens) * (size_t)cap);
    if (lens) call_lens = lens;
    char *nums = api->core->realloc(call_nums, NUMBUF * (size_t)cap);
    if (nums) call_nums = nums;
    if (!argv || !lens || !nums) return KEEL_ERR;
    call_cap = cap;
    return KEEL_OK;
}

void engine_api_teardown(void) {
    engine_kapi->core->free(call_argv);
    engine_kapi->core->free(call_lens);
    engine_kapi->core->free(call_nums);
    call_argv = NULL;
    call_lens = NULL;
    call_nums = NULL;
    call_cap = 0;
}

/* A Lua number as an argument: an integer when it is one (a command may
 * not take 1e+15), else the shortest text that reads back the same. */
static size_t api_format_number(char *buf, lua_Number n) {
    if (n >= -9.2233720368547758e18 && n < 9.2233720368547758e18 && n == (lua_Number)(long long)n)
        return (size_t)snprintf(buf, NUMBUF, "%lld", (long long)n);
    int len = 0;
    for (int prec = 15; prec <= 17; prec++) {
        len = snprintf(buf, NUMBUF, "%.*g", prec, n);
        if (strtod(buf, NULL) == n) break;
    }
    return (size_t)len;
}

static void api_push_errorf(lua_State *L, const char *msg) {
    engine_push_error(L, msg, strlen(msg));
}

static void api_mark_no_stats(lua_State *L) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "ignore_error_stats_update");
}

/* The arguments on the stack into call_argv; KEEL_ERR with the error table
 * pushed. */
static int api_collect_args(lua_State *L, int argc) {
    if (argc == 0) {
        api_push_errorf(L, "Please specify at least one argument for this call");
        return KEEL_ERR;
    }
    if (api_argv_grow(argc) != KEEL_OK) {
        api_push_errorf(L, "-OOM out of memory building the command's arguments");
        return KEEL_ERR;
    }
    for (int j = 0; j < argc; j++) {
        int t = lua_type(L, j + 1);
        if (t == LUA_TNUMBER) {
            char *buf = call_nums + (size_t)j * NUMBUF;
            call_lens[j] = api_format_number(buf, lua_tonumber(L, j + 1));
            call_argv[j] = buf;
        } else if (t == LUA_TSTRING) {
            call_argv[j] = lua_tolstring(L, j + 1, &call_lens[j]);
        } else {
            api_push_errorf(L, "Command arguments must be strings or integers");
            return KEEL_ERR;
        }
    }
    return KEEL_OK;
}

/* ---- reply tree -> Lua ---- */

static int api_push_reply(lua_State *L, const keel_reply *r, int resp3);

static void api_push_tagged(lua_State *L, const char *tag) {
    /* value on top -> {tag = value} */
    lua_createtable(L, 0, 1);
    lua_insert(L, -2);
    lua_setfield(L, -2, tag);
}

static int api_push_aggregate(lua_State *L, const keel_reply *r, int type, int resp3) {
    const keel_api_call *c = engine_kapi->call;
    size_t n = c->reply_length(r);
    if (type == KEEL_REPLY_ARRAY) {
        lua_createtable(L, n < INT32_MAX ? (int)n : 0, 0);
        for (size_t i = 0; i < n; i++) {
            if (!api_push_reply(L, c->reply_element(r, i), resp3)) return 0;
            lua_rawseti(L, -2, (int)i + 1);
        }
        return 1;
    }
    lua_createtable(L, 0, n < INT32_MAX ? (int)n : 0);
    for (size_t i = 0; i < n; i++) {
        int map = type == KEEL_REPLY_MAP;
        if (!api_push_reply(L, c->reply_element(r, map ? 2 * i : i), resp3)) return 0;
        if (map) {
            if (!api_push_reply(L, c->reply_element(r, 2 * i + 1), resp3)) return 0;
        } else {
            lua_pushboolean(L, 1);
        }
        /* A nil or NaN key cannot index a table (and must not raise here,
         * with the reply tree still to free): such a pair is dropped. */
        if (lua_isnil(L, -2) || (lua_type(L, -2) == LUA_TNUMBER && isnan(lua_tonumber(L, -2))))
            lua_pop(L, 2);
        else
            lua_rawset(L, -3);
    }
    api_push_tagged(L, type == KEEL_REPLY_MAP ? "map" : "set");
    return 1;
}

static void api_push_reply_error(lua_State *L, const char *s, size_t len) {
    lua_pushliteral(L, "-");
    lua_pushlstring(L, s, len);
    lua_concat(L, 2);
    size_t n;
    const char *msg = lua_tolstring(L, -1, &n);
    engine_push_error(L, msg, n);
    lua_remove(L, -2);
    /* Counted when the command failed: the script passing it on is not a
     * second error. */
    api_mark_no_stats(L);
}

/* Pushes r as Valkey's scripts see it; 0 when the Lua stack cannot grow
 * (a reply nested too deep), with the stack left unbalanced for the caller
 * to reset. */
static int api_push_reply(lua_State *L, const keel_reply *r, int resp3) {
    const keel_api_call *c = engine_kapi->call;
    if (!lua_checkstack(L, 5)) return 0;
    size_t len = 0;
    const char *s = c->reply_string(r, &len);
    int type = c->reply_type(r);
    switch (type) {
    case KEEL_REPLY_STRING:
        lua_pushlstring(L, s, len);
        return 1;
    case KEEL_REPLY_STATUS:
        lua_pushlstring(L, s, len);
        api_push_tagged(L, "ok");
        return 1;
    case KEEL_REPLY_ERROR:
        api_push_reply_error(L, s, len);
        return 1;
    case KEEL_REPLY_INTEGER:
        lua_pushnumber(L, (lua_Number)c->reply_integer(r));
        return 1;
    case KEEL_REPLY_BOOL:
        lua_pushboolean(L, c->reply_integer(r) != 0);
        return 1;
    case KEEL_REPLY_DOUBLE:
        lua_pushnumber(L, c->reply_double(r));
        api_push_tagged(L, "double");
        return 1;
    case KEEL_REPLY_BIGNUM:
        lua_pushlstring(L, s, len);
        api_push_tagged(L, "big_number");
        return 1;
    case KEEL_REPLY_VERBATIM: {
        const char *fmt = c->reply_format(r);
        lua_createtable(L, 0, 2);
        lua_pushlstring(L, s, len);
        lua_setfield(L, -2, "string");
        lua_pushstring(L, fmt ? fmt : "txt");
        lua_setfield(L, -2, "format");
        api_push_tagged(L, "verbatim_string");
        return 1;
    }
    case KEEL_REPLY_ARRAY:
    case KEEL_REPLY_MAP:
    case KEEL_REPLY_SET:
        return api_push_aggregate(L, r, type, resp3);
    default: /* NULL: RESP2 scripts have always seen false */
        if (resp3)
            lua_pushnil(L);
        else
            lua_pushboolean(L, 0);
        return 1;
    }
}

/* ---- server.call / server.pcall ---- */

/* The flags a call runs with, and whether the command is a write (to know
 * when the script becomes unkillable: looked up until the first one). The
 * server refuses what the flags forbid (writes and may-replicate commands
 * in a read-only script, deny-oom ones over maxmemory) and counts the
 * refusal in errorstats and the command's rejected calls. */
static uint32_t api_call_flags(int *is_write) {
    engine_state *st = &engine_cur;
    uint32_t cmd = 0, flags = KEEL_CALL_SCRIPT;
    *is_write = !st->pub.wrote && !st->read_only &&
                engine_kapi->call->command_flags(call_argv[0], call_lens[0], &cmd) == KEEL_OK &&
                (cmd & KEEL_CMD_WRITE);
    if (st->resp == 3) flags |= KEEL_CALL_RESP3;
    if (st->read_only) flags |= KEEL_CALL_NO_WRITES;
    if (!st->allow_oom) flags |= KEEL_CALL_CHECK_OOM;
    return flags;
}

/* Runs the collected command; pushes its reply (or error table). Returns 1
 * if what was pushed is an error. */
static int api_run_command(lua_State *L, int argc) {
    engine_state *st = &engine_cur;
    const keel_api *api = engine_kapi;
    int is_write;
    uint32_t flags = api_call_flags(&is_write);
    keel_call_args args = {sizeof(args), flags, argc, call_argv, call_lens};
    keel_reply *reply = NULL;
    st->in_call = 1;
    int rc = api->call->call(st->pub.ctx, &args, &reply);
    st->in_call = 0;
    if (rc == KEEL_CALL_RAN && is_write) st->pub.wrote = 1;
    lua_settop(L, 0); /* the arguments are no longer needed: room for the reply */
    /* A refusal's reply is its error, in Valkey's words for scripts
     * (KEEL_CALL_SCRIPT), counted by the server like a command's. */
    if (!reply) {
        api_push_errorf(L, rc == KEEL_CALL_RAN ? "ERR the command gave no reply"
                                               : "ERR the server refused the command");
        return 1;
    }
    int is_error = api->call->reply_type(reply) == KEEL_REPLY_ERROR;
    int ok = api_push_reply(L, reply, st->resp == 3);
    api->call->reply_free(reply);
    if (!ok) {
        lua_settop(L, 0);
        api_push_errorf(L, "reached lua stack limit");
        return 1;
    }
    return is_error;
}

static int api_call_generic(lua_State *L, int raise) {
    engine_state *st = &engine_cur;
    int argc = lua_gettop(L), is_error = 1;
    if (!st->active) {
        api_push_errorf(L, "server.call is only available while a script runs");
    } else if (!KEEL_API_HAS(engine_kapi, call, call)) {
        api_push_errorf(L, "this server has no call API (SDK ABI 1.2) for scripts");
    } else if (st->in_call) {
        api_push_errorf(L, "server.call recursive call detected");
    } else if (st->pub.killed) {
        /* A killed script that caught the kill writes nothing more. */
        api_push_errorf(L, "Script killed by user with SCRIPT KILL...");
    } else if (api_collect_args(L, argc) == KEEL_OK) {
        is_error = api_run_command(L, argc);
    }
    if (is_error && raise) return lua_error(L);
    return 1;
}

static int api_call(lua_State *L) {
    return api_call_generic(L, 1);
}

static int api_pcall(lua_State *L) {
    return api_call_generic(L, 0);
}

/* ---- the helpers ---- */

static int api_raise(lua_State *L, const char *msg) {
    api_push_errorf(L, msg);
    return lua_error(L);
}

static int api_sha1hex(lua_State *L) {
    if (lua_gettop(L) != 1) return api_raise(L, "wrong number of arguments");
    size_t len = 0;
    const char *s = lua_tolstring(L, 1, &len);
    unsigned char md[SHA_DIGEST_LENGTH];
    char hex[SHA_DIGEST_LENGTH * 2 + 1];
    SHA1((const unsigned char *)(s ? s : ""), s ? len : 0, md);
    for (int i = 0; i < SHA_DIGEST_LENGTH; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    lua_pushlstring(L, hex, SHA_DIGEST_LENGTH * 2);
    return 1;
}

static int api_error_reply(lua_State *L) {
    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
        api_push_errorf(L, "wrong number or type of arguments");
        return 1;
    }
    size_t len;
    const char *s = lua_tolstring(L, 1, &len);
    if (len && s[0] == '-') {
        engine_push_error(L, s, len);
    } else {
        lua_pushliteral(L, "-");
        lua_pushvalue(L, 1);
        lua_concat(L, 2);
        s = lua_tolstring(L, -1, &len);
        engine_push_error(L, s, len);
    }
    return 1;
}

static int api_status_reply(lua_State *L) {
    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
        api_push_errorf(L, "wrong number or type of arguments");
        return 1;
    }
    api_push_tagged(L, "ok");
    return 1;
}

static int api_log(lua_State *L) {
    int argc = lua_gettop(L);
    if (argc < 2) return api_raise(L, "server.log() requires two arguments or more.");
    if (!lua_isnumber(L, 1)) return api_raise(L, "First argument must be a number (log level).");
    lua_Number level = lua_tonumber(L, 1);
    if (level < KEEL_LOG_DEBUG || level > KEEL_LOG_WARNING)
        return api_raise(L, "Invalid log level.");
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int j = 2; j <= argc; j++) {
        if (!lua_isstring(L, j)) continue;
        if (j != 2) luaL_addchar(&b, ' ');
        lua_pushvalue(L, j);
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    engine_kapi->core->log(engine_self(), (int)level, "%s", lua_tostring(L, -1));
    return 0;
}

static int api_setresp(lua_State *L) {
    if (lua_gettop(L) != 1) return api_raise(L, "server.setresp() requires one argument.");
    lua_Number resp = lua_tonumber(L, 1);
    if (resp != 2 && resp != 3) return api_raise(L, "RESP version must be 2 or 3.");
    engine_cur.resp = (int)resp;
    return 0;
}

#define REPL_AOF 1
#define REPL_REPLICA 2

/* Keel has neither AOF nor replicas: the flags are checked and kept by
 * nobody. */
static int api_set_repl(lua_State *L) {
    if (lua_gettop(L) != 1) return api_raise(L, "server.set_repl() requires one argument.");
    int flags = (int)lua_tonumber(L, 1);
    if (flags & ~(REPL_AOF | REPL_REPLICA))
        return api_raise(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or "
                            "REPL_NONE.");
    return 0;
}

static int api_replicate_commands(lua_State *L) {
    lua_pushboolean(L, 1);
    return 1;
}

/* Without a debugger session (Keel has none) breakpoint is false and debug
 * does nothing, as in Valkey outside SCRIPT DEBUG. */
static int api_breakpoint(lua_State *L) {
    lua_pushboolean(L, 0);
    return 1;
}

static int api_debug(lua_State *L) {
    (void)L;
    return 0;
}

/* Keel has no ACL users: every existing command is allowed. */
static int api_acl_check_cmd(lua_State *L) {
    int argc = lua_gettop(L);
    if (api_collect_args(L, argc) != KEEL_OK) return lua_error(L);
    uint32_t flags;
    if (KEEL_API_HAS(engine_kapi, call, command_flags) &&
        engine_kapi->call->command_flags(call_argv[0], call_lens[0], &flags) != KEEL_OK)
        return api_raise(L, "Invalid command passed to server.acl_check_cmd()");
    lua_pushboolean(L, 1);
    return 1;
}

/* ---- registration ---- */

static void api_set_fn(lua_State *L, const char *name, lua_CFunction fn) {
    lua_pushcfunction(L, fn);
    lua_setfield(L, -2, name);
}

static void api_set_num(lua_State *L, const char *name, lua_Number v) {
    lua_pushnumber(L, v);
    lua_setfield(L, -2, name);
}

static void api_set_str(lua_State *L, const char *name, const char *v) {
    lua_pushstring(L, v);
    lua_setfield(L, -2, name);
}

static void api_register_versions(lua_State *L) {
    /* As Valkey 8.0.1 reports itself to scripts (Keel's compatibility
     * level), with the SERVER_* names later versions read. */
    api_set_str(L, "REDIS_VERSION", "7.2.4");
    api_set_num(L, "REDIS_VERSION_NUM", 0x00070204);
    api_set_str(L, "VALKEY_VERSION", "8.0.1");
    api_set_num(L, "VALKEY_VERSION_NUM", 0x00080001);
    api_set_str(L, "SERVER_VERSION", "8.0.1");
    api_set_num(L, "SERVER_VERSION_NUM", 0x00080001);
    api_set_str(L, "SERVER_NAME", "valkey");
}

void engine_api_register(lua_State *L) {
    lua_newtable(L);
    api_set_fn(L, "call", api_call);
    api_set_fn(L, "pcall", api_pcall);
    api_set_fn(L, "log", api_log);
    api_set_num(L, "LOG_DEBUG", KEEL_LOG_DEBUG);
    api_set_num(L, "LOG_VERBOSE", KEEL_LOG_VERBOSE);
    api_set_num(L, "LOG_NOTICE", KEEL_LOG_NOTICE);
    api_set_num(L, "LOG_WARNING", KEEL_LOG_WARNING);
    api_register_versions(L);
    api_set_fn(L, "setresp", api_setresp);
    api_set_fn(L, "sha1hex", api_sha1hex);
    api_set_fn(L, "error_reply", api_error_reply);
    api_set_fn(L, "status_reply", api_status_reply);
    api_set_fn(L, "set_repl", api_set_repl);
    api_set_num(L, "REPL_NONE", 0);
    api_set_num(L, "REPL_AOF", REPL_AOF);
    api_set_num(L, "REPL_SLAVE", REPL_REPLICA);
    api_set_num(L, "REPL_REPLICA", REPL_REPLICA);
    api_set_num(L, "REPL_ALL", REPL_AOF | REPL_REPLICA);
    api_set_fn(L, "acl_check_cmd", api_acl_check_cmd);
    api_set_fn(L, "breakpoint", api_breakpoint);
    api_set_fn(L, "debug", api_debug);
    api_set_fn(L, "replicate_commands", api_replicate_commands);
    lua_pushvalue(L, -1);
    lua_setglobal(L, "server");
    lua_setglobal(L, "redis");
}

/* ---- Lua -> reply ---- */

static void api_reply_lua(keel_ctx *ctx, lua_State *L, int resp);

static void api_reply_err(keel_ctx *ctx, const char *s, size_t len, int no_stats) {
    const keel_api *api = engine_kapi;
    if (KEEL_API_HAS(api, command, reply_error_ex))
        api->command->reply_error_ex(ctx, s, len, no_stats ? KEEL_REPLY_ERR_NO_STATS : 0);
    else
        api->command->reply_error(ctx, s);
}

/* A status or big number keeps no CR or LF (they would end the line). */
static void api_reply_line(keel_ctx *ctx, const char *s, size_t len, int bignum) {
    const keel_api *api = engine_kapi;
    char stack[256];
    char *buf = len < sizeof(stack) ? stack : api->core->alloc(len + 1);
    if (!buf) {
        api->command->reply_error(ctx, "ERR out of memory");
        return;
    }
    for (size_t i = 0; i < len; i++)
        buf[i] = (s[i] == '\r' || s[i] == '\n') ? ' ' : s[i];
    buf[len] = '\0';
    if (bignum)
        api->command->reply_bignum(ctx, buf, len);
    else
        api->command->reply_simple(ctx, buf);
    if (buf != stack) api->core->free(buf);
}

/* t[field] (raw) pushed; its Lua type returned. */
static int api_field(lua_State *L, const char *field) {
    lua_pushstring(L, field);
    lua_rawget(L, -2);
    return lua_type(L, -1);
}

static void api_reply_error_table(keel_ctx *ctx, lua_State *L) {
    size_t len;
    const char *err = lua_tolstring(L, -1, &len); /* stack: table, err */
    lua_pushliteral(L, "ignore_error_stats_update");
    lua_rawget(L, -3);
    int no_stats = lua_toboolean(L, -1);
    lua_pop(L, 1);
    api_reply_err(ctx, err, len, no_stats);
}

static int api_reply_verbatim(keel_ctx *ctx, lua_State *L) {
    int ok = 0;
    if (api_field(L, "format") == LUA_TSTRING) {
        /* The format string stays on the stack (anchored) while the reply
         * is built; the table is pushed again to read its string. */
        const char *format = lua_tostring(L, -1);
        lua_pushvalue(L, -2);
        if (api_field(L, "string") == LUA_TSTRING) {
            size_t len;
            const char *s = lua_tolstring(L, -1, &len);
            if (KEEL_API_HAS(engine_kapi, command, reply_verbatim_ex))
                engine_kapi->command->reply_verbatim_ex(ctx, s, len, format);
            else
                engine_kapi->command->reply_verbatim(ctx, s, len);
            ok = 1;
        }
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
    return ok;
}

static long long api_count_pairs(lua_State *L) {
    long long n = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        n++;
    }
    return n;
}

static void api_reply_map_or_set(keel_ctx *ctx, lua_State *L, int map, int resp) {
    const keel_api *api = engine_kapi;
    long long n = api_count_pairs(L);
    if (map)
        api->command->reply_map(ctx, n);
    else if (KEEL_API_HAS(api, command, reply_set))
        api->command->reply_set(ctx, n);
    else
        api->command->reply_array(ctx, n);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (!map) lua_pop(L, 1);
        lua_pushvalue(L, map ? -2 : -1);
        api_reply_lua(ctx, L, resp); /* the key */
        if (map) api_reply_lua(ctx, L, resp);
    }
}

static void api_reply_array(keel_ctx *ctx, lua_State *L, int resp) {
    long long n = 0;
    for (;; n++) {
        lua_rawgeti(L, -1, (int)n + 1);
        int end = lua_isnil(L, -1);
        lua_pop(L, 1);
        if (end || n == INT32_MAX - 1) break;
    }
    engine_kapi->command->reply_array(ctx, n);
    for (long long j = 1; j <= n; j++) {
        lua_rawgeti(L, -1, (int)j);
        api_reply_lua(ctx, L, resp);
    }
}

/* The special tables ({err=}, {ok=}, {double=}, ...) are tried in Valkey's
 * order; anything else is an array up to the first nil. */
static void api_reply_table(keel_ctx *ctx, lua_State *L, int resp) {
    const keel_api *api = engine_kapi;
    if (api_field(L, "err") == LUA_TSTRING) {
        api_reply_error_table(ctx, L);
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    size_t len;
    if (api_field(L, "ok") == LUA_TSTRING) {
        const char *s = lua_tolstring(L, -1, &len);
        api_reply_line(ctx, s, len, 0);
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    if (api_field(L, "double") == LUA_TNUMBER) {
        api->command->reply_double(ctx, lua_tonumber(L, -1));
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    if (api_field(L, "big_number") == LUA_TSTRING && KEEL_API_HAS(api, command, reply_bignum)) {
        const char *s = lua_tolstring(L, -1, &len);
        api_reply_line(ctx, s, len, 1);
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    if (api_field(L, "verbatim_string") == LUA_TTABLE && api_reply_verbatim(ctx, L)) {
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    for (int map = 1; map >= 0; map--) {
        if (api_field(L, map ? "map" : "set") == LUA_TTABLE) {
            api_reply_map_or_set(ctx, L, map, resp);
            lua_pop(L, 1);
            return;
        }
        lua_pop(L, 1);
    }
    api_reply_array(ctx, L, resp);
}

/* Lua numbers are truncated to integers, as C casts them on x86 (NaN and
 * out-of-range values become LLONG_MIN). */
static long long api_number_to_ll(lua_Number n) {
    if (!(n >= -9.2233720368547758e18 && n < 9.2233720368547758e18)) return LLONG_MIN;
    return (long long)n;
}

static void api_reply_lua(keel_ctx *ctx, lua_State *L, int resp) {
    const keel_api *api = engine_kapi;
    /* Nested tables recurse: past the Lua stack's limit (deep nesting,
     * CVE-2021-32626) the element becomes an error instead. */
    if (!lua_checkstack(L, 4)) {
        api->command->reply_error(ctx, "ERR reached lua stack limit");
        lua_pop(L, 1);
        return;
    }
    size_t len;
    switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
        const char *s = lua_tolstring(L, -1, &len);
        api->command->reply_bulk(ctx, s, len);
        break;
    }
    case LUA_TBOOLEAN:
        if (resp == 2) {
            if (lua_toboolean(L, -1))
                api->command->reply_int(ctx, 1);
            else
                api->command->reply_null(ctx);
        } else {
            api->command->reply_bool(ctx, lua_toboolean(L, -1));
        }
        break;
    case LUA_TNUMBER:
        api->command->reply_int(ctx, api_number_to_ll(lua_tonumber(L, -1)));
        break;
    case LUA_TTABLE:
        api_reply_table(ctx, L, resp);
        break;
    default:
        api->command->reply_null(ctx);
    }
    lua_pop(L, 1);
}

void engine_reply_value(keel_ctx *ctx, lua_State *L, int resp) {
    api_reply_lua(ctx, L, resp);
}
