/* lua_module.c -- the lua module: Lua scripting for Keel as a loadable
 * module (loadmodule /path/lua.so, or MODULE LOAD), built on sdk/include
 * only. This file is the module at a glance: its one KEEL_MODULE
 * declaration, the command table, init/deinit and the INFO fields. The
 * engine is engine.c (engine_api.c, engine_sandbox.c), the EVAL family and
 * the scripts cache eval.c.
 *
 * Needs the server's ABI 1.2: the call group (server.call, busy_yield,
 * command flags), reply_set/reply_bignum/reply_error_ex, key specs and
 * per-call flags, and info add_fields. */
#include "engine.h"
#include "eval.h"
#include "function.h"

#include <keel/keel_module.h>

#include <stdio.h>

#define LUA_MODULE_VERSION 10000 /* 1.0.0 */

static const keel_api *api;

/* ---- commands ---- */

/* EVAL's keys: numkeys (argument 2) of them from argument 3 on. We cannot
 * tell how a script uses them: the read-write forms say RW, as Valkey. */
static const keel_key_spec eval_keys_rw[] = {{
    .size = sizeof(keel_key_spec),
    .flags = KEEL_KEY_SPEC_RW | KEEL_KEY_SPEC_ACCESS | KEEL_KEY_SPEC_UPDATE,
    .begin_type = KEEL_KEY_BEGIN_INDEX,
    .begin_index = 2,
    .find_type = KEEL_KEY_FIND_KEYNUM,
    .keynum_index = 0,
    .keynum_firstkey = 1,
    .keynum_step = 1,
}};

static const keel_key_spec eval_keys_ro[] = {{
    .size = sizeof(keel_key_spec),
    .flags = KEEL_KEY_SPEC_RO | KEEL_KEY_SPEC_ACCESS,
    .begin_type = KEEL_KEY_BEGIN_INDEX,
    .begin_index = 2,
    .find_type = KEEL_KEY_FIND_KEYNUM,
    .keynum_index = 0,
    .keynum_firstkey = 1,
    .keynum_step = 1,
}};

#define EVAL_FLAGS "no-script may-replicate no-mandatory-keys allow-stale"
#define EVAL_RO_FLAGS "no-script no-mandatory-keys allow-stale readonly"

static const keel_command_def lua_commands[] = {
    {sizeof(keel_command_def), "eval", eval_cmd_eval, -3, EVAL_FLAGS, 0, 0, 0,
     "Executes a server-side Lua script.", eval_keys_rw, 1, eval_call_flags},
    {sizeof(keel_command_def), "evalsha", eval_cmd_eval, -3, EVAL_FLAGS, 0, 0, 0,
     "Executes a server-side Lua script by SHA1 digest.", eval_keys_rw, 1, eval_call_flags},
    {sizeof(keel_command_def), "eval_ro", eval_cmd_eval, -3, EVAL_RO_FLAGS, 0, 0, 0,
     "Executes a read-only server-side Lua script.", eval_keys_ro, 1, eval_call_flags},
    {sizeof(keel_command_def), "evalsha_ro", eval_cmd_eval, -3, EVAL_RO_FLAGS, 0, 0, 0,
     "Executes a read-only server-side Lua script by SHA1 digest.", eval_keys_ro, 1,
     eval_call_flags},
    {sizeof(keel_command_def), "script", eval_cmd_script, -2, "no-script allow-busy allow-stale", 0,
     0, 0, "A container for Lua scripts management commands.", NULL, 0, NULL},
};

static int lua_register_commands(keel_ctx *ctx) {
    for (size_t i = 0; i < sizeof(lua_commands) / sizeof(lua_commands[0]); i++)
        if (api->command->register_command(ctx, &lua_commands[i]) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

/* ---- INFO ---- */

static void lua_human(char *buf, size_t len, long long n) {
    const char *units = "BKMGTP";
    double d = (double)n;
    int u = 0;
    while (d >= 1024 && u < 5)
        d /= 1024, u++;
    if (u == 0)
        snprintf(buf, len, "%lldB", n);
    else
        snprintf(buf, len, "%.2f%c", d, units[u]);
}

/* The scripting fields of INFO memory, in Valkey 8.0.1's order. */
static void lua_info_memory(keel_info *info, void *priv) {
    (void)priv;
    eval_info ev;
    engine_function_info fn;
    eval_stats(&ev);
    engine_function_info_get(&fn);
    char h_eval[32], h_total[32], h_scripts[32];
    long long vm_total = ev.vm_memory + fn.vm_memory;
    long long scripts = ev.caches_memory + fn.caches_memory;
    lua_human(h_eval, sizeof(h_eval), ev.vm_memory);
    lua_human(h_total, sizeof(h_total), vm_total);
    lua_human(h_scripts, sizeof(h_scripts), scripts);
    const keel_api_info *i = api->info;
    i->field(info, "used_memory_lua:%lld", ev.vm_memory);
    i->field(info, "used_memory_vm_eval:%lld", ev.vm_memory);
    i->field(info, "used_memory_lua_human:%s", h_eval);
    i->field(info, "used_memory_scripts_eval:%lld", ev.caches_memory);
    i->field(info, "number_of_cached_scripts:%zu", ev.scripts);
    i->field(info, "number_of_functions:%lu", fn.functions);
    i->field(info, "number_of_libraries:%lu", fn.libraries);
    i->field(info, "used_memory_vm_functions:%lld", fn.vm_memory);
    i->field(info, "used_memory_vm_total:%lld", vm_total);
    i->field(info, "used_memory_vm_total_human:%s", h_total);
    i->field(info, "used_memory_functions:%lld", fn.caches_memory);
    i->field(info, "used_memory_scripts:%lld", scripts);
    i->field(info, "used_memory_scripts_human:%s", h_scripts);
}

/* Valkey 9.1's "Scripting Engines" section, with this module's one engine
 * (INFO scriptingengines). */
static void lua_info_engines(keel_info *info, void *priv) {
    (void)priv;
    eval_info ev;
    engine_function_info fn;
    eval_stats(&ev);
    engine_function_info_get(&fn);
    long long used = ev.vm_memory + fn.vm_memory, overhead = ev.caches_memory + fn.caches_memory;
    const keel_api_info *i = api->info;
    i->field(info, "engines_count:1");
    i->field(info, "engines_total_used_memory:%lld", used);
    i->field(info, "engines_total_memory_overhead:%lld", overhead);
    i->field(info,
             "engine_0:name=LUA,module=lua,abi_version=1,used_memory=%lld,memory_overhead=%lld",
             used, overhead);
}

/* INFO stats: the server shows evicted_scripts:0; this value takes its
 * place. */
static void lua_info_stats(keel_info *info, void *priv) {
    (void)priv;
    eval_info ev;
    eval_stats(&ev);
    api->info->field(info, "evicted_scripts:%lld", ev.evicted);
}

static int lua_register_info(keel_ctx *ctx) {
    if (api->info->add_section(ctx, "scriptingengines", lua_info_engines, NULL) != KEEL_OK)
        return KEEL_ERR;
    if (!KEEL_API_HAS(api, info, add_fields)) return KEEL_OK;
    if (api->info->add_fields(ctx, "memory", lua_info_memory, NULL) != KEEL_OK) return KEEL_ERR;
    return api->info->add_fields(ctx, "stats", lua_info_stats, NULL);
}

/* ---- load/unload ---- */

static int lua_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    (void)argc;
    (void)argv;
    api = a;
    if (!KEEL_API_HAS(api, call, call)) {
        api->core->set_error(ctx, "lua needs a server with the SDK ABI 1.2 call API");
        return KEEL_ERR;
    }
    engine_setup(ctx, api);
    if (eval_setup(api) != KEEL_OK) {
        api->core->set_error(ctx, "lua: could not create the Lua state");
        return KEEL_ERR;
    }
    if (function_setup(ctx, api) != KEEL_OK || lua_register_commands(ctx) != KEEL_OK ||
        lua_register_info(ctx) != KEEL_OK) {
        function_teardown();
        eval_teardown();
        return KEEL_ERR;
    }
    return KEEL_OK;
}

static int lua_deinit(keel_ctx *ctx) {
    (void)ctx;
    function_teardown();
    eval_teardown();
    engine_teardown();
    return KEEL_OK;
}

KEEL_MODULE("lua", LUA_MODULE_VERSION, lua_init, lua_deinit)
