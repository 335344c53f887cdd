/* check_it_lua_function.c -- FUNCTION and FCALL/FCALL_RO of the lua module
 * in a real keel-server (started with --loadmodule $KEEL_LUA_MODULE): every
 * FUNCTION subcommand with Valkey's errors and reply shapes in RESP2 and
 * RESP3, the load-time sandbox and timeout, function flags against FCALL
 * and FCALL_RO, FUNCTION KILL of a busy function, DUMP/RESTORE round trips
 * with each policy, and refusal of garbage and forged payloads. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static redisContext *L;
static it_server *LS;

static void lua_setup(void) {
    const char *mod = getenv("KEEL_LUA_MODULE");
    ck_assert_msg(mod != NULL, "KEEL_LUA_MODULE is not set");
    LS = it_start("--loadmodule", mod, NULL);
    L = it_connect(LS);
}

/* The code of a library `lib` with one function `name` whose body is body,
 * as the Valkey suite's get_function_code builds it. */
static const char *lib_code(const char *lib, const char *name, const char *body) {
    return it_fmt("#!lua name=%s\nserver.register_function('%s', function(KEYS, ARGV)\n %s \nend)",
                  lib, name, body);
}

/* Same, registered with named arguments and the no-writes flag. */
static const char *lib_code_ro(const char *lib, const char *name, const char *body) {
    return it_fmt("#!lua name=%s\nserver.register_function{function_name='%s', "
                  "callback=function(KEYS, ARGV)\n %s \nend, flags={'no-writes'}}",
                  lib, name, body);
}

/* The last value of field in INFO memory: the server's own placeholder
 * fields may come before the module's. */
static long long info_memory(const char *field) {
    redisReply *r = it_cmd(L, "INFO memory");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    const char *want = it_fmt("\n%s:", field), *at = NULL;
    for (const char *p = strstr(r->str, want); p; p = strstr(p + 1, want))
        at = p;
    ck_assert_msg(at != NULL, "no %s in INFO memory", field);
    return atoll(at + strlen(want));
}

static void load(const char *code, const char *want_name) {
    expect_bulk(L, want_name, "FUNCTION LOAD %s", code);
}

#define load_error(code, want) expect_error(L, want, "FUNCTION LOAD REPLACE %s", code)

/* ---- LOAD and FCALL ---- */

START_TEST(test_load_and_call) {
    lua_setup();
    load(lib_code("test", "test", "return 'hello'"), "test");
    expect_bulk(L, "hello", "FCALL test 0");
    expect_bulk(L, "hello", "FCALL TEST 0");
    expect_error(L, "ERR Library 'test' already exists", "FUNCTION LOAD %s",
                 lib_code("test", "test", "return 1"));
    expect_bulk(L, "test", "FUNCTION LOAD REPLACE %s", lib_code("test", "test", "return 'h2'"));
    expect_bulk(L, "h2", "FCALL test 0");
    expect_error(L, "ERR Unknown option given: foo", "FUNCTION LOAD foo bar %s",
                 lib_code("x", "x", "return 1"));
    expect_error(L, "ERR wrong number of arguments for 'function|load' command", "FUNCTION LOAD");
    /* KEYS and ARGV are the function's two arguments. */
    load(lib_code("kv", "kv", "return redis.call('set', KEYS[1], ARGV[1])"), "kv");
    expect_ok(L, "FCALL kv 1 x foo");
    expect_bulk(L, "foo", "GET x");
    load(lib_code("echo", "echo", "return {#KEYS, #ARGV, KEYS[1], ARGV[2]}"), "echo");
    expect_reply(L, "[:2,:2,\"a\",\"d\"]", "FCALL echo 2 a b c d");
    /* RESP3: the same functions, and RESP3 types through server.setresp. */
    load("#!lua name=r3\nserver.register_function{function_name='r3', callback=function(KEYS) "
         "server.setresp(3) return {server.call('hgetall', KEYS[1]), {double=1.5}, "
         "server.call('exists', KEYS[1]) == 1} end, flags={'no-writes'}}",
         "r3");
    expect_int(L, 1, "HSET h f v");
    it_raw *r3 = it_raw_connect_resp3(LS);
    it_raw_cmd(r3, "FCALL", "echo", "1", "a", "b", NULL);
    expect_raw(r3, "[:1,:1,\"a\"]"); /* a nil ends a Lua array */
    it_raw_cmd(r3, "FCALL_RO", "r3", "1", "h", NULL);
    expect_raw(r3, "[{\"f\":\"v\"},,1.5,#t]");
}
END_TEST

START_TEST(test_load_errors) {
    lua_setup();
    load(lib_code("test", "test", "return 'old'"), "test");
    load_error(lib_code("bad\\0format", "f", "return 1"),
               "ERR Library names can only contain letters, numbers, or underscores(_) and must "
               "be at least one character long");
    load_error(lib_code("", "f", "return 1"),
               "ERR Library names can only contain letters, numbers, or underscores(_) and must "
               "be at least one character long");
    load_error("#!bad_engine name=x\nreturn 1", "ERR Engine 'bad_engine' not found");
    load_error("#! name=x\nreturn 1", "ERR Engine '' not found");
    load_error("return 1", "ERR Missing library metadata");
    load_error("#!lua name=x", "ERR Invalid library metadata");
    load_error("#!lua\nreturn 1", "ERR Library name was not given");
    load_error("#!lua name=test foo=bar\nreturn 1", "ERR Invalid metadata value given: foo=bar");
    load_error("#!lua name=a name=b\nreturn 1",
               "ERR Invalid metadata value, name argument was given multiple times");
    load_error("#!lua name=lib\nreturn 1", "ERR No functions registered");
    expect_error_prefix(L, "ERR Error compiling function: ", "FUNCTION LOAD REPLACE %s",
                        lib_code("test", "test", "bad script"));
    /* A failed REPLACE keeps the old library. */
    expect_bulk(L, "old", "FCALL test 0");
    expect_bulk(L, "foo", "FUNCTION LOAD REPLACE %s",
                "#!lua name=\"foo\"\n"
                "server.register_function('foo', function() "
                "return 1 end)");
}
END_TEST

START_TEST(test_register_errors) {
    lua_setup();
    static const struct {
        const char *code, *want;
    } cases[] = {
        {"server.register_function()", "wrong number of arguments to server.register_function"},
        {"server.register_function('f1')", "calling server.register_function with a single "
                                           "argument is only applicable to Lua table"},
        {"server.register_function('f1', function() return 1 end, {}, 'd', 'x')",
         "wrong number of arguments to server.register_function"},
        {"server.register_function(nil, function() return 1 end)",
         "first argument to server.register_function must be a string"},
        {"server.register_function('f1', 'x')",
         "second argument to server.register_function must be a function"},
        {"server.register_function('a-b', function() return 1 end)",
         "Library names can only contain letters"},
        {"server.register_function('f', function() end) server.register_function('f', "
         "function() end)",
         "Function already exists in the library"},
        {"server.register_function('f', function() end) server.register_function('F', "
         "function() end)",
         "Function already exists in the library"},
        {"server.register_function{function_name=function() end, callback=function() end}",
         "function_name argument given to server.register_function must be a string"},
        {"server.register_function{function_name='f', callback='bad'}",
         "callback argument given to server.register_function must be a function"},
        {"server.register_function{function_name='f', callback=function() end, "
         "description=function() end}",
         "description argument given to server.register_function must be a string"},
        {"server.register_function{function_name='f', callback=function() end, x='y'}",
         "unknown argument given to server.register_function"},
        {"server.register_function{callback=function() end}",
         "server.register_function must get a function name argument"},
        {"server.register_function{function_name='f'}",
         "server.register_function must get a callback argument"},
        {"server.register_function{function_name='f', callback=function() end, flags='x'}",
         "flags argument to server.register_function must be a table representing function flags"},
        {"server.register_function{function_name='f', callback=function() end, flags={'bad'}}",
         "unknown flag given"},
        {"server.register_function{function_name='f', callback=function() end, flags={{}}}",
         "unknown flag given"},
        /* The load sandbox: only the registration API is reachable. */
        {"return math.random()", "Script attempted to access nonexistent global variable 'math'"},
        {"return redis.call('ping')",
         "Script attempted to access nonexistent global variable 'call'"},
        {"return redis.setresp(3)",
         "Script attempted to access nonexistent global variable 'setresp'"},
        {"mt = getmetatable(_G)",
         "Script attempted to access nonexistent global variable 'getmetatable'"},
        {"a = 1", "Attempt to modify a readonly table"},
        {"redis.x = 1", "Attempt to modify a readonly table"},
        {"local a = 1 while 1 do a = a + 1 end", "FUNCTION LOAD timeout"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        redisReply *r =
            it_cmd(L, "FUNCTION LOAD REPLACE %s", it_fmt("#!lua name=lib2\n%s", cases[i].code));
        ck_assert_msg(r->type == REDIS_REPLY_ERROR && strstr(r->str, cases[i].want) &&
                          strncmp(r->str, "ERR Error registering functions: ", 33) == 0,
                      "%s: got %s", cases[i].code, r->str ? r->str : "(no string)");
    }
    expect_reply(L, "[]", "FUNCTION LIST");
    /* Logging and the version fields work while loading. */
    load("#!lua name=v\nserver.log(server.LOG_NOTICE, 'loading v')\n"
         "local v = redis.REDIS_VERSION\n"
         "server.register_function('ver', function() return v end)",
         "v");
    redisReply *r = it_cmd(L, "FCALL ver 0");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
}
END_TEST

START_TEST(test_sandbox_at_call) {
    lua_setup();
    load("#!lua name=lib1\n"
         "local function ping() return redis.call('ping') end\n"
         "local lib = redis\n"
         "server.register_function('f1', function(keys, args) return ping() end)\n"
         "server.register_function('f2', function() lib.redis = redis end)\n"
         "server.register_function('f3', function() "
         "lib.register_function('f9', function() return 1 end) end)\n"
         "server.register_function('f4', function() "
         "server.register_function('f9', function() return 1 end) end)\n"
         "server.register_function('f5', function() x = 1 end)\n",
         "lib1");
    expect_status(L, "PONG", "FCALL f1 0");
    redisReply *r = it_cmd(L, "FCALL f2 0");
    ck_assert_msg(r->type == REDIS_REPLY_ERROR &&
                      strstr(r->str, "Attempt to modify a readonly table"),
                  "%s", r->str);
    r = it_cmd(L, "FCALL f3 0");
    ck_assert_msg(r->type == REDIS_REPLY_ERROR &&
                      strstr(r->str, "can only be called on FUNCTION LOAD command"),
                  "%s", r->str);
    r = it_cmd(L, "FCALL f4 0");
    ck_assert_msg(r->type == REDIS_REPLY_ERROR &&
                      strstr(r->str, "attempt to call field 'register_function' (a nil value)"),
                  "%s", r->str);
    r = it_cmd(L, "FCALL f5 0");
    ck_assert_msg(r->type == REDIS_REPLY_ERROR &&
                      strstr(r->str, "Attempt to modify a readonly table"),
                  "%s", r->str);
}
END_TEST

START_TEST(test_fcall_errors) {
    lua_setup();
    load(lib_code("test", "test", "return 'hello'"), "test");
    expect_error(L, "ERR Function not found", "FCALL nope 0");
    expect_error(L, "ERR Bad number of keys provided", "FCALL test bad_arg");
    expect_error(L, "ERR Number of keys can't be greater than number of args", "FCALL test 10 k");
    expect_error(L, "ERR Number of keys can't be negative", "FCALL test -1 k");
    expect_error(L, "ERR wrong number of arguments for 'fcall' command", "FCALL test");
    expect_error(L, "ERR wrong number of arguments for 'fcall_ro' command", "FCALL_RO test");
    expect_reply(L, "[\"x\"]", "COMMAND GETKEYS FCALL test 1 x foo");
    expect_reply(L, "[\"x\",\"y\"]", "COMMAND GETKEYS FCALL_RO test 2 x y foo");
}
END_TEST

/* ---- flags ---- */

START_TEST(test_flags) {
    lua_setup();
    load(lib_code_ro("ro", "ro_set", "return redis.call('set', 'x', '1')"), "ro");
    expect_error_prefix(L, "ERR Write commands are not allowed from read-only scripts",
                        "FCALL ro_set 1 x");
    expect_error_prefix(L, "ERR Write commands are not allowed from read-only scripts",
                        "FCALL_RO ro_set 1 x");
    load(lib_code_ro("ro2", "ro_get", "return redis.call('get', 'x')"), "ro2");
    expect_ok(L, "SET x 1");
    expect_bulk(L, "1", "FCALL_RO ro_get 1 x");
    expect_bulk(L, "1", "FCALL ro_get 1 x");
    load(lib_code("rw", "rw_set", "return redis.call('set', 'x', 2)"), "rw");
    expect_error_prefix(L, "ERR Can not execute a script with write flag using *_ro command.",
                        "FCALL_RO rw_set 1 x");
    expect_bulk(L, "1", "GET x");
    expect_ok(L, "FCALL rw_set 1 x");
    /* OOM: a writing function is refused, a no-writes or allow-oom one runs. */
    load("#!lua name=oom\n"
         "server.register_function{function_name='ao', callback=function() "
         "return redis.call('set', 'y', '1') end, flags={'allow-oom'}}",
         "oom");
    expect_ok(L, "CONFIG SET maxmemory 1");
    expect_error_prefix(L, "OOM ", "FCALL rw_set 1 x");
    expect_bulk(L, "2", "FCALL ro_get 1 x");
    expect_ok(L, "FCALL ao 1 y");
    expect_ok(L, "CONFIG SET maxmemory 0");
    /* FUNCTION LIST shows the flags as a set of simple strings. */
    load("#!lua name=fl\nserver.register_function{function_name='fl', callback=function() end, "
         "flags={'allow-cross-slot-keys', 'NO-WRITES', 'allow-stale', 'no-cluster', 'allow-oom'}, "
         "description='all of them'}",
         "fl");
    expect_reply(L,
                 "[[\"library_name\",\"fl\",\"engine\",\"LUA\",\"functions\",[[\"name\",\"fl\","
                 "\"description\",\"all of them\",\"flags\",[+no-writes,+allow-oom,+allow-stale,"
                 "+no-cluster,+allow-cross-slot-keys]]]]]",
                 "FUNCTION LIST LIBRARYNAME fl");
}
END_TEST

/* ---- LIST, DELETE, FLUSH, STATS, HELP ---- */

START_TEST(test_list) {
    lua_setup();
    const char *code = lib_code("library1", "f6", "return 7");
    load(code, "library1");
    load(lib_code("lib1", "f7", "return 7"), "lib1");
    expect_reply(L,
                 "[[\"library_name\",\"library1\",\"engine\",\"LUA\",\"functions\",[[\"name\","
                 "\"f6\",\"description\",nil,\"flags\",[]]]]]",
                 "FUNCTION LIST LIBRARYNAME library*");
    redisReply *r = it_cmd(L, "FUNCTION LIST WITHCODE LIBRARYNAME LIBRARY1");
    ck_assert_int_eq((int)r->elements, 1);
    ck_assert_int_eq((int)r->element[0]->elements, 8);
    ck_assert_str_eq(r->element[0]->element[6]->str, "library_code");
    ck_assert_str_eq(r->element[0]->element[7]->str, code);
    r = it_cmd(L, "FUNCTION LIST");
    ck_assert_int_eq((int)r->elements, 2);
    expect_reply(L, "[]", "FUNCTION LIST LIBRARYNAME nomatch*");
    expect_error(L, "ERR Unknown argument bad_argument", "FUNCTION LIST bad_argument");
    expect_error(L, "ERR library name argument was not given", "FUNCTION LIST LIBRARYNAME");
    expect_error(L, "ERR Unknown argument withcode", "FUNCTION LIST withcode withcode");
    expect_error(L, "ERR Unknown argument libraryname",
                 "FUNCTION LIST withcode libraryname foo libraryname foo");
    /* RESP3: maps, a null description and a set of flags. */
    it_raw *r3 = it_raw_connect_resp3(LS);
    it_raw_cmd(r3, "FUNCTION", "LIST", "LIBRARYNAME", "lib1", NULL);
    expect_raw(r3, "[{\"library_name\":\"lib1\",\"engine\":\"LUA\",\"functions\":[{\"name\":"
                   "\"f7\",\"description\":_,\"flags\":~[]}]}]");
}
END_TEST

START_TEST(test_delete_flush_stats) {
    lua_setup();
    load("#!lua name=test1\nserver.register_function('f1', function() return 1 end)\n"
         "server.register_function('f2', function() return 1 end)",
         "test1");
    load("#!lua name=test2\nserver.register_function('f3', function() return 1 end)", "test2");
    expect_reply(L,
                 "[\"running_script\",nil,\"engines\",[\"LUA\",[\"libraries_count\",:2,"
                 "\"functions_count\",:3]]]",
                 "FUNCTION STATS");
    ck_assert_int_eq(info_memory("number_of_functions"), 3);
    ck_assert_int_eq(info_memory("number_of_libraries"), 2);
    ck_assert(info_memory("used_memory_vm_functions") > 0);
    ck_assert(info_memory("used_memory_functions") > 0);
    /* A failed load changes no count. */
    expect_error(L, "ERR Library 'test1' already exists", "FUNCTION LOAD %s",
                 "#!lua name=test1\nserver.register_function('f9', function() return 1 end)");
    expect_error(L, "ERR Function f3 already exists", "FUNCTION LOAD %s",
                 "#!lua name=test3\nserver.register_function('f3', function() return 1 end)");
    expect_ok(L, "FUNCTION DELETE test1");
    expect_error(L, "ERR Function not found", "FCALL f1 0");
    expect_int(L, 1, "FCALL f3 0");
    expect_error(L, "ERR Library not found", "FUNCTION DELETE test1");
    expect_reply(L,
                 "[\"running_script\",nil,\"engines\",[\"LUA\",[\"libraries_count\",:1,"
                 "\"functions_count\",:1]]]",
                 "FUNCTION STATS");
    /* FLUSHALL leaves functions alone; FUNCTION FLUSH drops them all. */
    expect_ok(L, "FLUSHALL");
    expect_int(L, 1, "FCALL f3 0");
    expect_ok(L, "FUNCTION FLUSH");
    expect_reply(L, "[]", "FUNCTION LIST");
    load("#!lua name=t\nserver.register_function('f', function() return 1 end)", "t");
    expect_ok(L, "FUNCTION FLUSH ASYNC");
    load("#!lua name=t\nserver.register_function('f', function() return 1 end)", "t");
    expect_ok(L, "FUNCTION FLUSH sync");
    expect_reply(L, "[]", "FUNCTION LIST");
    ck_assert_int_eq(info_memory("number_of_functions"), 0);
    expect_error(L, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option", "FUNCTION FLUSH bad_arg");
    expect_error(L,
                 "ERR unknown subcommand or wrong number of arguments for 'flush'. Try "
                 "FUNCTION HELP.",
                 "FUNCTION flush sync extra_arg");
    expect_error(L, "ERR unknown subcommand 'bad_subcommand'. Try FUNCTION HELP.",
                 "FUNCTION bad_subcommand");
    expect_error(L, "ERR wrong number of arguments for 'function|delete' command",
                 "FUNCTION DELETE a b");
    redisReply *r = it_cmd(L, "FUNCTION HELP");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_str_eq(r->element[0]->str,
                     "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    ck_assert_str_eq(r->element[r->elements - 1]->str, "    Print this help.");
    expect_error(L, "NOTBUSY No scripts in execution right now.", "FUNCTION KILL");
    /* RESP3 STATS: a null running_script and nested maps. */
    it_raw *r3 = it_raw_connect_resp3(LS);
    it_raw_cmd(r3, "FUNCTION", "STATS", NULL);
    expect_raw(r3, "{\"running_script\":_,\"engines\":{\"LUA\":{\"libraries_count\"::0,"
                   "\"functions_count\"::0}}}");
}
END_TEST

/* ---- DUMP and RESTORE ---- */

static redisReply *dump(void) {
    redisReply *r = it_cmd(L, "FUNCTION DUMP");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    return r;
}

START_TEST(test_dump_restore) {
    lua_setup();
    load(lib_code("test", "test", "return 'hello'"), "test");
    redisReply *d = dump();
    expect_ok(L, "FUNCTION DELETE test");
    expect_reply(L, "[]", "FUNCTION LIST");
    expect_ok(L, "FUNCTION RESTORE %b", d->str, d->len);
    expect_bulk(L, "hello", "FCALL test 0");
    /* FLUSH */
    expect_ok(L, "FUNCTION FLUSH");
    load(lib_code("other", "other", "return 1"), "other");
    expect_ok(L, "FUNCTION RESTORE %b FLUSH", d->str, d->len);
    expect_error(L, "ERR Function not found", "FCALL other 0");
    expect_bulk(L, "hello", "FCALL test 0");
    /* APPEND (the default) refuses an existing library */
    expect_ok(L, "FUNCTION FLUSH");
    load(lib_code("test", "test", "return 'hello1'"), "test");
    expect_error(L, "ERR Library test already exists", "FUNCTION RESTORE %b APPEND", d->str,
                 d->len);
    expect_ok(L, "FUNCTION FLUSH");
    load(lib_code("test1", "test1", "return 'hello1'"), "test1");
    expect_ok(L, "FUNCTION RESTORE %b append", d->str, d->len);
    expect_bulk(L, "hello", "FCALL test 0");
    expect_bulk(L, "hello1", "FCALL test1 0");
    /* REPLACE */
    expect_ok(L, "FUNCTION FLUSH");
    load(lib_code("test", "test", "return 'hello1'"), "test");
    expect_ok(L, "FUNCTION RESTORE %b REPLACE", d->str, d->len);
    expect_bulk(L, "hello", "FCALL test 0");
    /* An empty dump restores to nothing. */
    expect_ok(L, "FUNCTION FLUSH");
    redisReply *empty = dump();
    load(lib_code("keep", "keep", "return 1"), "keep");
    expect_ok(L, "FUNCTION RESTORE %b", empty->str, empty->len);
    expect_int(L, 1, "FCALL keep 0");
    expect_error(L,
                 "ERR Wrong restore policy given, value should be either FLUSH, APPEND or "
                 "REPLACE.",
                 "FUNCTION RESTORE %b bad", d->str, d->len);
    expect_error(L,
                 "ERR unknown subcommand or wrong number of arguments for 'restore'. Try "
                 "FUNCTION HELP.",
                 "FUNCTION restore arg1 args2 arg3");
}
END_TEST

START_TEST(test_restore_collisions) {
    lua_setup();
    load("#!lua name=lib1\nlocal function add1(a) return a + 1 end\n"
         "server.register_function('f1', function() return add1(1) end)\n"
         "server.register_function('f2', function() return add1(2) end)\n"
         "server.register_function('f3', function() return add1(3) end)",
         "lib1");
    redisReply *d = dump();
    expect_ok(L, "FUNCTION FLUSH");
    load("#!lua name=lib1\nserver.register_function('f6', function() return 7 end)", "lib1");
    load("#!lua name=lib2\nserver.register_function('f3', function() return 4 end)", "lib2");
    expect_error(L, "ERR Library lib1 already exists", "FUNCTION RESTORE %b", d->str, d->len);
    expect_error(L, "ERR Function f3 already exists", "FUNCTION RESTORE %b REPLACE", d->str,
                 d->len);
    /* Nothing changed. */
    expect_int(L, 4, "FCALL f3 0");
    expect_int(L, 7, "FCALL f6 0");
    expect_error(L, "ERR Function not found", "FCALL f1 0");
}
END_TEST

/* Little-endian helpers to forge payloads with a valid checksum. */
static uint64_t crc64_jones(const unsigned char *p, size_t len) {
    uint64_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc & 1) ? (crc >> 1) ^ 0x95ac9329ac4bc9b5ULL : crc >> 1;
    }
    return crc;
}

static void reseal(unsigned char *p, size_t len) {
    uint64_t crc = crc64_jones(p, len - 8);
    for (int i = 0; i < 8; i++)
        p[len - 8 + i] = (unsigned char)(crc >> (8 * i));
}

START_TEST(test_restore_garbage) {
    lua_setup();
    load(lib_code("test", "test", "return 'hello'"), "test");
    redisReply *d = dump();
    expect_error(L, "ERR DUMP payload version or checksum are wrong",
                 "FUNCTION RESTORE bad_payload");
    expect_error(L, "ERR DUMP payload version or checksum are wrong", "FUNCTION RESTORE %b", "",
                 (size_t)0);
    /* Every truncation and a flipped byte anywhere are refused. */
    for (size_t cut = 0; cut < d->len; cut += 7)
        expect_error(L, "ERR DUMP payload version or checksum are wrong", "FUNCTION RESTORE %b",
                     d->str, cut);
    unsigned char *p = it_alloc(d->len);
    for (size_t i = 0; i < d->len; i += 5) {
        memcpy(p, d->str, d->len);
        p[i] ^= 0x20;
        expect_error(L, "ERR DUMP payload version or checksum are wrong", "FUNCTION RESTORE %b", p,
                     d->len);
    }
    /* A forged count or length with a recomputed checksum. */
    memcpy(p, d->str, d->len);
    p[7] = 0xff, p[8] = 0xff, p[9] = 0xff, p[10] = 0xff;
    reseal(p, d->len);
    expect_error(L, "ERR failed loading the given functions payload", "FUNCTION RESTORE %b", p,
                 d->len);
    memcpy(p, d->str, d->len);
    p[11] = 0xfe, p[12] = 0xff, p[13] = 0xff, p[14] = 0xff;
    reseal(p, d->len);
    expect_error(L, "ERR failed loading the given functions payload", "FUNCTION RESTORE %b", p,
                 d->len);
    /* A well-formed payload whose library does not load: its own error. */
    memcpy(p, d->str, d->len);
    memcpy(p + 15, "#!xyz", 5);
    reseal(p, d->len);
    expect_error(L, "ERR Engine 'xyz' not found", "FUNCTION RESTORE %b", p, d->len);
    /* None of it touched the loaded library. */
    expect_reply(L,
                 "[[\"library_name\",\"test\",\"engine\",\"LUA\",\"functions\",[[\"name\","
                 "\"test\",\"description\",nil,\"flags\",[]]]]]",
                 "FUNCTION LIST");
}
END_TEST

/* ---- KILL ---- */

START_TEST(test_kill) {
    lua_setup();
    expect_ok(L, "CONFIG SET busy-reply-threshold 10");
    load(lib_code("busy", "busy", "local a = 1 while true do a = a + 1 end"), "busy");
    it_raw *rd = it_raw_connect(LS);
    it_raw_cmd(rd, "FCALL", "busy", "0", NULL);
    it_sleep_ms(200);
    expect_error_prefix(L, "BUSY ", "PING");
    redisReply *st = it_cmd(L, "FUNCTION STATS");
    ck_assert_int_eq(st->type, REDIS_REPLY_ARRAY);
    ck_assert_str_eq(st->element[0]->str, "running_script");
    redisReply *run = st->element[1];
    ck_assert_int_eq((int)run->elements, 6);
    ck_assert_str_eq(run->element[1]->str, "busy");
    ck_assert_int_eq((int)run->element[3]->elements, 3);
    ck_assert_str_eq(run->element[3]->element[0]->str, "FCALL");
    ck_assert(run->element[5]->integer >= 0);
    expect_error_prefix(L, "BUSY ", "SCRIPT KILL");
    /* Nothing may change the libraries while one of them runs. */
    expect_error_prefix(L, "BUSY ", "FUNCTION FLUSH");
    expect_error_prefix(L, "BUSY ", "FUNCTION DELETE busy");
    expect_error_prefix(L, "BUSY ", "FUNCTION LOAD REPLACE %s",
                        lib_code("busy", "busy", "return 1"));
    expect_ok(L, "FUNCTION KILL");
    it_value *v = it_raw_read(rd);
    ck_assert_ptr_nonnull(v); /* Valkey words it so for functions too */
    ck_assert_int_eq(v->type, '-');
    ck_assert_msg(strstr(v->str, "Script killed by user with SCRIPT KILL"), "%s", v->str);
    expect_status(L, "PONG", "PING");
}
END_TEST

int main(void) {
    Suite *s = suite_create("lua_function");
    TCase *tc = it_tcase_bare(s, "function");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_load_and_call);
    tcase_add_test(tc, test_load_errors);
    tcase_add_test(tc, test_register_errors);
    tcase_add_test(tc, test_sandbox_at_call);
    tcase_add_test(tc, test_fcall_errors);
    tcase_add_test(tc, test_flags);
    tcase_add_test(tc, test_list);
    tcase_add_test(tc, test_delete_flush_stats);
    tcase_add_test(tc, test_dump_restore);
    tcase_add_test(tc, test_restore_collisions);
    tcase_add_test(tc, test_restore_garbage);
    tcase_add_test(tc, test_kill);
    return it_run(s);
}
