/* check_it_lua.c -- the lua module in a real keel-server (loaded with
 * --loadmodule $KEEL_LUA_MODULE): EVAL and friends over RESP2 and RESP3,
 * the scripts cache, errors and errorstats, the sandbox, BUSY with SCRIPT
 * KILL and UNKILLABLE, OOM, MULTI, CLIENT PAUSE WRITE, EVAL_RO, key specs,
 * INFO and MODULE UNLOAD. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *lua_so(void) {
    const char *p = getenv("KEEL_LUA_MODULE");
    ck_assert_msg(p && *p, "KEEL_LUA_MODULE is not set");
    return p;
}

static void lua_setup(void) {
    S = it_start("--loadmodule", lua_so(), "--enable-module-command", "yes",
                 "--enable-debug-command", "yes", NULL);
    C = it_connect(S);
}

START_TEST(test_eval_basics) {
    expect_int(C, 3, "EVAL %s 0", "return 1 + 2");
    expect_reply(C, "[\"a\",\"b\",\"c\"]", "EVAL %s 2 %s %s %s",
                 "return {KEYS[1], KEYS[2], ARGV[1]}", "a", "b", "c");
    expect_ok(C, "EVAL %s 1 %s %s", "return redis.call('set', KEYS[1], ARGV[1])", "k", "v");
    expect_bulk(C, "v", "GET k");
    expect_int(C, 1, "EVAL %s 1 %s", "return redis.call('incr', KEYS[1])", "n");
    expect_int(C, 2, "EVAL %s 1 %s", "return server.call('incr', KEYS[1])", "n");
    expect_nil(C, "EVAL %s 0", "return redis.call('get', 'missing')");
    expect_int(C, 1, "EVAL %s 0", "return redis.call('get', 'missing') == false");
    expect_status(C, "PONG", "EVAL %s 0", "return redis.call('ping')");
    expect_reply(C, "[:1,:2]", "EVAL %s 0", "return {1, 2, nil, 4}");
    expect_error(C, "My Error", "EVAL %s 0", "return {err = 'My Error'}");
    expect_error(C, "ERR Number of keys can't be greater than number of args", "EVAL %s 2 a",
                 "return 1");
    expect_error(C, "ERR wrong number of arguments for 'eval' command", "EVAL %s", "return 1");
    expect_error(C, "ERR wrong number of arguments for 'evalsha' command", "EVALSHA");
    /* A SELECT in a script stays in the script. */
    expect_ok(C, "EVAL %s 0", "redis.call('select', 9) return redis.call('set', 'in9', 1)");
    expect_nil(C, "GET in9");
    expect_ok(C, "SELECT 9");
    expect_bulk(C, "1", "GET in9");
}
END_TEST

START_TEST(test_resp3) {
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "HSET", "h", "f", "v", NULL);
    expect_raw(r, ":1");
    it_raw_cmd(r, "EVAL", "redis.setresp(3) return redis.call('hgetall', KEYS[1])", "1", "h", NULL);
    expect_raw(r, "{\"f\":\"v\"}");
    it_raw_cmd(r, "EVAL", "return redis.call('hgetall', KEYS[1])", "1", "h", NULL);
    expect_raw(r, "[\"f\",\"v\"]");
    it_raw_cmd(r, "EVAL", "redis.setresp(3) return redis.call('get', 'nokey') == nil", "0", NULL);
    expect_raw(r, "#t");
    it_raw_cmd(r, "EVAL", "redis.setresp(3) return true", "0", NULL);
    expect_raw(r, "#t");
    it_raw_cmd(r, "EVAL", "return {double = 3.5}", "0", NULL);
    expect_raw(r, ",3.5");
    it_raw_cmd(r, "EVAL", "return {map = {a = 1}}", "0", NULL);
    expect_raw(r, "{\"a\"::1}");
    it_raw_cmd(r, "EVAL", "return {set = {a = true}}", "0", NULL);
    expect_raw(r, "~[\"a\"]");
    it_raw_cmd(r, "EVAL", "return {big_number = '1234567890123456789012'}", "0", NULL);
    expect_raw(r, "(1234567890123456789012");
    /* RESP2 clients get the RESP2 forms. */
    expect_bulk(C, "3.5", "EVAL %s 0", "return {double = 3.5}");
    expect_reply(C, "[\"a\",:1]", "EVAL %s 0", "return {map = {a = 1}}");
}
END_TEST

START_TEST(test_script_cache) {
    redisReply *r = it_cmd(C, "SCRIPT LOAD %s", "return 'cached'");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    char sha[41];
    snprintf(sha, sizeof(sha), "%s", r->str);
    expect_bulk(C, "cached", "EVALSHA %s 0", sha);
    expect_bulk(C, "cached", "EVALSHA_RO %s 0", sha);
    expect_reply(C, "[:1,:0]", "SCRIPT EXISTS %s %s", sha,
                 "0000000000000000000000000000000000000000");
    expect_error(C, "NOSCRIPT No matching script.", "EVALSHA %s 0",
                 "0000000000000000000000000000000000000000");
    ck_assert_int_eq(it_info_int(C, "memory", "number_of_cached_scripts"), 1);
    expect_ok(C, "SCRIPT FLUSH");
    expect_error(C, "NOSCRIPT No matching script.", "EVALSHA %s 0", sha);
    ck_assert_int_eq(it_info_int(C, "memory", "number_of_cached_scripts"), 0);
    expect_error_prefix(C, "ERR unknown subcommand", "SCRIPT NOPE");
}
END_TEST

START_TEST(test_errors_and_errorstats) {
    expect_ok(C, "SET s notanumber");
    expect_error_prefix(C, "ERR value is not an integer or out of range script: f_", "EVAL %s 0",
                        "return redis.call('incr', 's')");
    /* Counted once: when INCR failed, not again when the script passed it
     * on. */
    ck_assert_int_eq(it_kv_get(it_info_str(C, "errorstats", "errorstat_ERR"), "count"), 1);
    expect_error_prefix(C,
                        "ERR user_script:1: Script attempted to access nonexistent global "
                        "variable 'nosuch' script: f_",
                        "EVAL %s 0", "return nosuch");
    expect_error_prefix(C, "ERR Unknown command called from script script: f_", "EVAL %s 0",
                        "return redis.call('nosuchcommand')");
    expect_error_prefix(C, "ERR This Redis command is not allowed from script", "EVAL %s 0",
                        "return redis.call('eval', 'return 1', 0)");
    expect_error_prefix(C, "ERR Error compiling script (new function): user_script:1:", "EVAL %s 0",
                        "return +");
    expect_reply(C, "-ERR value is not an integer or out of range", "EVAL %s 0",
                 "return redis.pcall('incr', 's')");
}
END_TEST

START_TEST(test_sandbox) {
    expect_error_prefix(C, "ERR user_script:1: Attempt to modify a readonly table", "EVAL %s 0",
                        "x = 1");
    expect_error_prefix(C, "ERR user_script:1: Attempt to modify a readonly table", "EVAL %s 0",
                        "redis.call = function() return 1 end");
    expect_error_prefix(C, "ERR user_script:1: Attempt to modify a readonly table", "EVAL %s 0",
                        "getmetatable('').__index = {}");
    expect_error_prefix(C, "ERR user_script:1: Attempt to modify a readonly table", "EVAL %s 0",
                        "rawset(_G, 'x', 1)");
    expect_error_prefix(C, "ERR user_script:1: Script attempted to access nonexistent global",
                        "EVAL %s 0", "return dofile('/etc/passwd')");
    expect_error_prefix(C, "ERR user_script:1: attempt to call a nil value", "EVAL %s 0",
                        "return loadstring(string.dump(function() return 1 end))()");
    /* CVE mitigations against the real server. */
    expect_bulk(C, "0000FFFF", "EVAL %s 0", "return bit.tohex(65535, -2147483648)");
    expect_error_prefix(C, "ERR user_script:1: too many results to unpack", "EVAL %s 0",
                        "return unpack({}, 0, 2147483647)");
    /* A proxy's metatable keeps its __metatable, so no __gc can be set on
     * the real one (a finalizer would run inside another script). */
    expect_error_prefix(C, "ERR user_script:1: Attempt to modify a readonly table", "EVAL %s 0",
                        "local p = newproxy(true) getmetatable(p).__metatable = nil");
    expect_error_prefix(C, "ERR user_script:1: Attempt to modify a readonly table", "EVAL %s 0",
                        "local p = newproxy(true) getmetatable(p).__gc = function() end");
    /* table.insert/remove/sort write raw: they refuse views. */
    expect_error_prefix(C, "ERR user_script:1: Attempt to modify a readonly table", "EVAL %s 0",
                        "table.insert(_G, 'leak')");
    expect_error_prefix(C, "ERR user_script:1: Attempt to modify a readonly table", "EVAL %s 0",
                        "table.insert(string, 'leak')");
    expect_nil(C, "EVAL %s 0", "return rawget(_G, 1)");
    expect_int(C, 3, "EVAL %s 0",
               "local t = {3, 1, 2} table.sort(t) table.insert(t, 4) return t[3]");
    expect_status(C, "PONG", "PING");
}
END_TEST

START_TEST(test_eval_ro) {
    expect_error_prefix(C, "ERR Write commands are not allowed from read-only scripts.",
                        "EVAL_RO %s 1 %s", "return redis.call('set', KEYS[1], 'v')", "k");
    expect_nil(C, "GET k");
    expect_int(C, 0, "EVAL_RO %s 1 %s", "return redis.call('exists', KEYS[1])", "k");
    expect_error(C, "ERR Can not execute a script with write flag using *_ro command.",
                 "EVAL_RO %s 0", "#!lua\nreturn 1");
    expect_error_prefix(C, "ERR Write commands are not allowed from read-only scripts.",
                        "EVAL %s 0", "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')");
}
END_TEST

START_TEST(test_multi) {
    expect_status(C, "OK", "MULTI");
    expect_status(C, "QUEUED", "EVAL %s 1 %s", "return redis.call('incr', KEYS[1])", "m");
    expect_status(C, "QUEUED", "EVAL %s 1 %s", "return redis.call('incr', KEYS[1])", "m");
    expect_reply(C, "[:1,:2]", "EXEC");
}
END_TEST

START_TEST(test_oom) {
    expect_ok(C, "SET filler %s", "xxxxxxxxxxxxxxxxxxxxxxxx");
    expect_ok(C, "CONFIG SET maxmemory 1");
    /* Compatibility mode: the deny-oom SET inside is refused. */
    expect_error_prefix(C, "OOM command not allowed when used memory > 'maxmemory'.", "EVAL %s 0",
                        "return redis.call('set', 'a', 'b')");
    expect_status(C, "PONG", "EVAL %s 0", "return redis.call('ping')");
    /* A script that may write is deny-oom as a whole. */
    expect_error_prefix(C, "OOM", "EVAL %s 0", "#!lua\nreturn 1");
    expect_int(C, 1, "EVAL %s 0", "#!lua flags=no-writes\nreturn 1");
    expect_ok(C, "EVAL %s 0", "#!lua flags=allow-oom\nreturn redis.call('set', 'a', 'b')");
    expect_ok(C, "CONFIG SET maxmemory 0");
}
END_TEST

START_TEST(test_pause_write) {
    expect_ok(C, "CLIENT PAUSE 100000 WRITE");
    it_raw *r = it_raw_connect(S);
    /* A no-writes script runs during the pause. */
    it_raw_cmd(r, "EVAL", "#!lua flags=no-writes\nreturn 7", "0", NULL);
    expect_raw(r, ":7");
    /* A script that may write waits for the pause to end. */
    it_raw_cmd(r, "EVAL", "#!lua\nreturn redis.call('set', 'p', '1')", "0", NULL);
    it_wait_until(it_info_int(C, "clients", "blocked_clients") == 1, 5000);
    expect_nil(C, "GET p");
    expect_ok(C, "CLIENT UNPAUSE");
    expect_raw(r, "+OK");
    expect_bulk(C, "1", "GET p");
}
END_TEST

/* Runs body (with one key, or none when key is NULL) on a connection of
 * its own until its busy phase answers BUSY to another client, returned in
 * *other. */
static it_raw *lua_start_busy(const char *body, const char *key, redisContext **other) {
    expect_ok(C, "CONFIG SET busy-reply-threshold 50");
    it_raw *r = it_raw_connect(S);
    if (key)
        it_raw_cmd(r, "EVAL", body, "1", key, NULL);
    else
        it_raw_cmd(r, "EVAL", body, "0", NULL);
    it_sleep_ms(200);
    *other = it_connect(S);
    expect_error_prefix(*other, "BUSY", "PING");
    return r;
}

/* The busy script's reply is the kill. */
static void lua_expect_killed(it_raw *r) {
    it_value *v = it_raw_read(r);
    ck_assert_ptr_nonnull(v);
    ck_assert_msg(v->type == '-' && strstr(v->str, "Script killed by user with SCRIPT KILL"), "%s",
                  v->str);
}

START_TEST(test_busy_and_kill) {
    redisContext *c2;
    it_raw *r = lua_start_busy("local i = 0 while true do i = i + 1 end", NULL, &c2);
    expect_error_prefix(c2, "BUSY", "SCRIPT LOAD %s", "return 1");
    expect_ok(c2, "SCRIPT KILL");
    lua_expect_killed(r);
    expect_status(c2, "PONG", "PING");
    expect_error(c2, "NOTBUSY No scripts in execution right now.", "SCRIPT KILL");
}
END_TEST

START_TEST(test_unkillable) {
    redisContext *c2;
    it_raw *r = lua_start_busy("redis.call('set', 'w', '1') local s = os.clock() "
                               "while os.clock() - s < 0.6 do end return 'done'",
                               NULL, &c2);
    expect_error_prefix(c2, "UNKILLABLE Sorry the script already executed write commands",
                        "SCRIPT KILL");
    expect_raw(r, "\"done\"");
}
END_TEST

/* A kill a script catches (pcall, or a loop in a coroutine) still ends it:
 * it writes nothing more and its reply is the kill. */
static void lua_kill_caught(const char *body, const char *key) {
    redisContext *c2;
    it_raw *r = lua_start_busy(body, key, &c2);
    expect_ok(c2, "SCRIPT KILL");
    lua_expect_killed(r);
    expect_nil(c2, "GET %s", key);
    expect_status(c2, "PONG", "PING");
}

START_TEST(test_kill_caught) {
    lua_kill_caught("pcall(function() while true do end end) "
                    "redis.call('set', KEYS[1], 'after-kill') return 'survived'",
                    "kill-pcall");
    lua_kill_caught("local co = coroutine.create(function() while true do end end) "
                    "coroutine.resume(co) redis.call('set', KEYS[1], 'after-kill') return 1",
                    "kill-coroutine");
}
END_TEST

/* The busy script's server still stops on SHUTDOWN NOSAVE, cleanly. */
START_TEST(test_busy_shutdown_nosave) {
    redisContext *c2;
    lua_start_busy("while true do end", NULL, &c2);
    expect_error_prefix(c2, "BUSY", "SHUTDOWN SAVE");
    redisReply *rep = it_try_cmd(c2, "SHUTDOWN NOSAVE");
    ck_assert(!rep || rep->type != REDIS_REPLY_ERROR);
    int st = it_wait_exit(S, 10000);
    ck_assert_msg(st == 0, "exit status %d; log:\n%s", st, it_log_tail(S));
}
END_TEST

START_TEST(test_command_info_and_keys) {
    expect_reply(C, "[\"a\",\"b\"]", "COMMAND GETKEYS EVAL %s 2 a b c", "return 1");
    redisReply *r = it_cmd(C, "COMMAND INFO eval eval_ro script");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 3);
    ck_assert_int_eq(r->element[0]->element[1]->integer, -3);
}
END_TEST

START_TEST(test_info) {
    ck_assert_int_gt(it_info_int(C, "memory", "used_memory_vm_eval"), 0);
    ck_assert_int_eq(it_info_int(C, "memory", "used_memory_lua"),
                     it_info_int(C, "memory", "used_memory_vm_eval"));
    ck_assert_int_eq(it_info_int(C, "scriptingengines", "engines_count"), 1);
    /* The module's value replaces the server's field in place: one line. */
    redisReply *r = it_cmd(C, "INFO memory");
    const char *first = strstr(r->str, "used_memory_vm_eval:");
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_null(strstr(first + 1, "used_memory_vm_eval:"));
    ck_assert(first < strstr(r->str, "maxmemory:"));
    /* EVAL keeps 500 scripts: the 501st evicts the oldest. */
    for (int i = 0; i < 501; i++)
        expect_int(C, i, "EVAL %s 0", it_fmt("return %d", i));
    ck_assert_int_eq(it_info_int(C, "stats", "evicted_scripts"), 1);
    ck_assert_int_eq(it_info_int(C, "memory", "number_of_cached_scripts"), 500);
    char *e = it_info_str(C, "scriptingengines", "engine_0");
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(!strncmp(e, "name=LUA,module=lua,", 20), "%s", e);
}
END_TEST

/* MONITOR shows EVAL and FCALL themselves, then each command they call with
 * the origin "lua", as Valkey does. */
static const char *lua_monitor_args(it_raw *m) {
    it_value *v = it_raw_read(m);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(v->type, '+');
    const char *origin = strchr(v->str, '[');
    ck_assert_ptr_nonnull(origin);
    return origin;
}

START_TEST(test_monitor) {
    it_raw *m = it_raw_connect(S);
    it_raw_cmd(m, "MONITOR", NULL);
    expect_raw(m, "+OK");
    expect_int(C, 1, "EVAL %s 1 %s", "return redis.call('incr', KEYS[1])", "mon");
    const char *line = lua_monitor_args(m);
    ck_assert_msg(strncmp(line, "[0 127.0.0.1:", 13) == 0 && strstr(line, "] \"EVAL\" "), "%s",
                  line);
    ck_assert_str_eq(lua_monitor_args(m), "[0 lua] \"incr\" \"mon\"");
    expect_reply(C, "\"l\"", "FUNCTION LOAD %s",
                 "#!lua name=l\nredis.register_function('f', function(k) return redis.call('get', "
                 "k[1]) end)");
    line = lua_monitor_args(m);
    ck_assert_msg(strstr(line, "] \"FUNCTION\" \"LOAD\" ") != NULL, "%s", line);
    expect_bulk(C, "1", "FCALL f 1 mon");
    line = lua_monitor_args(m);
    ck_assert_msg(strstr(line, "] \"FCALL\" \"f\" \"1\" \"mon\"") != NULL, "%s", line);
    ck_assert_str_eq(lua_monitor_args(m), "[0 lua] \"get\" \"mon\"");
    it_raw_close(m);
}
END_TEST

/* DEBUG SET-DISABLE-DENY-SCRIPTS, Valkey's test knob: scripts may then call
 * commands flagged no-script (Valkey's suite reads RESP3 types through
 * DEBUG PROTOCOL from scripts). */
START_TEST(test_disable_deny_scripts) {
    const char *body = "return redis.call('debug', 'protocol', 'integer')";
    expect_error_prefix(C, "ERR This Redis command is not allowed from script", "EVAL %s 0", body);
    expect_ok(C, "DEBUG SET-DISABLE-DENY-SCRIPTS 1");
    expect_int(C, 12345, "EVAL %s 0", body);
    expect_ok(C, "DEBUG SET-DISABLE-DENY-SCRIPTS 0");
    expect_error_prefix(C, "ERR This Redis command is not allowed from script", "EVAL %s 0", body);
}
END_TEST

/* A script sees the time its command started, as Valkey freezes it: a key
 * set with PX 1 still exists at its next command, TIME does not move, and
 * DEBUG OBJECT shows an expired key not yet removed. A big number's CR and
 * LF become spaces. */
START_TEST(test_frozen_time) {
    expect_ok(C, "DEBUG SET-DISABLE-DENY-SCRIPTS 1");
    expect_int(C, 1, "EVAL %s 1 %s",
               "redis.call('SET', KEYS[1], 'v', 'PX', '1') redis.call('DEBUG', 'SLEEP', 0.01) "
               "return redis.call('EXISTS', KEYS[1])",
               "frozen");
    expect_int(C, 0, "EXISTS frozen");
    expect_int(C, 1, "EVAL %s 0",
               "local a = redis.call('TIME') redis.call('DEBUG', 'SLEEP', 0.01) "
               "local b = redis.call('TIME') return a[1] == b[1] and a[2] == b[2]");
    expect_ok(C, "DEBUG SET-DISABLE-DENY-SCRIPTS 0");
    expect_ok(C, "DEBUG SET-ACTIVE-EXPIRE 0");
    expect_ok(C, "SET gone v PX 1");
    usleep(5000);
    redisReply *r = redisCommand(C, "DEBUG OBJECT gone");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    expect_int(C, 0, "EVAL %s 0", "return redis.call('EXISTS', 'gone')");
    expect_error(C, "ERR no such key", "DEBUG OBJECT gone");
    expect_ok(C, "DEBUG SET-ACTIVE-EXPIRE 1");
    expect_bulk(C, "123  123", "EVAL %s 0", "return {big_number = '123\\r\\n123'}");
}
END_TEST

/* A RESP3 verbatim string keeps its format (redis.setresp(3) tables). */
START_TEST(test_verbatim_format) {
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "EVAL",
               "redis.setresp(3) return {verbatim_string = {format = 'mkd', string = 'x'}}", "0",
               NULL);
    expect_raw(r, "=\"mkd:x\"");
    it_raw_cmd(r, "EVAL", "return {verbatim_string = {format = 'toolong', string = 'y'}}", "0",
               NULL);
    expect_raw(r, "=\"txt:y\"");
    it_raw_close(r);
}
END_TEST

START_TEST(test_module_unload) {
    expect_int(C, 1, "EVAL %s 0", "return 1");
    expect_ok(C, "MODULE UNLOAD lua");
    expect_error_prefix(C, "ERR unknown command", "EVAL %s 0", "return 1");
    expect_ok(C, "MODULE LOAD %s", lua_so());
    expect_int(C, 2, "EVAL %s 0", "return 2");
}
END_TEST

static Suite *lua_suite(void) {
    Suite *s = suite_create("lua");
    TCase *tc = tcase_create("lua");
    tcase_add_checked_fixture(tc, lua_setup, it_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_eval_basics);
    tcase_add_test(tc, test_resp3);
    tcase_add_test(tc, test_script_cache);
    tcase_add_test(tc, test_errors_and_errorstats);
    tcase_add_test(tc, test_sandbox);
    tcase_add_test(tc, test_eval_ro);
    tcase_add_test(tc, test_multi);
    tcase_add_test(tc, test_oom);
    tcase_add_test(tc, test_pause_write);
    tcase_add_test(tc, test_busy_and_kill);
    tcase_add_test(tc, test_kill_caught);
    tcase_add_test(tc, test_unkillable);
    tcase_add_test(tc, test_busy_shutdown_nosave);
    tcase_add_test(tc, test_command_info_and_keys);
    tcase_add_test(tc, test_info);
    tcase_add_test(tc, test_monitor);
    tcase_add_test(tc, test_disable_deny_scripts);
    tcase_add_test(tc, test_frozen_time);
    tcase_add_test(tc, test_verbatim_format);
    tcase_add_test(tc, test_module_unload);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return it_run(lua_suite());
}
