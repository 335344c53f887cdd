/* check_module.c -- unit tests for the module system (core/module/): the
 * loader's handshake and every refusal (not a shared object, no entry
 * point, bad magic, ABI 2.0 and 1.99, init failing, a command name taken, a
 * module name loaded twice) with rollback, deinit on a load refused after
 * init succeeded, MODULE LOAD/LOADEX/LIST/UNLOAD, module commands, data
 * types (TYPE, COPY, MEMORY USAGE, unload refused while a key holds one),
 * config parameters (LOADEX, config-file lines, CONFIG GET/SET/REWRITE),
 * hooks, the ABI edge's flag and code translations, INFO sections,
 * loadmodule at start-up, and a transport serving a real TCP connection.
 *
 * The fixtures are the tests/modules sources, built as shared objects that see
 * only the SDK. Commands run through a connection-less client: its replies
 * are read off the reply chain, then dropped as before-sleep would. */
#include "session/command.h"
#include "common/common.h"
#include "common/kmem.h"
#include "config/config.h"
#include "keyspace/db.h"
#include "module/module.h"
#include "module/module_internal.h"
#include "session/client.h"
#include "server/server.h"
#include "server/server_config.h"
#include "session/call.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "keel/keel_module.h"

/* "(ABI <major>.<minor>)" of the header this server implements. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define SERVER_ABI "(ABI " STR(KEEL_ABI_MAJOR) "." STR(KEEL_ABI_MINOR) ")"

static client *fake;

static const char *fixture(const char *name) {
    static char path[4][512];
    static int slot;
    slot = (slot + 1) % 4;
    snprintf(path[slot], sizeof(path[slot]), "%s/%s.so", KEEL_TEST_MODULE_DIR, name);
    return path[slot];
}

static void setup(void) {
    fake = client_create(NULL);
}

static void teardown(void) {
    client_free(fake);
    module_teardown();
    db_flush_all();
    client_handle_pending_writes();
}

/* ---- running commands ---- */

/* Runs argv (NULL-terminated) on client c; returns its raw reply. */
static const char *run_on(client *c, const char **argv) {
    static char out[16384];
    char req[4096];
    int argc = 0;
    while (argv[argc])
        argc++;
    size_t len = (size_t)snprintf(req, sizeof(req), "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        len += (size_t)snprintf(req + len, sizeof(req) - len, "$%zu\r\n%s\r\n", strlen(argv[i]),
                                argv[i]);
    client_feed_input(c, req, len);
    size_t n = 0;
    for (reply_block *b = c->reply_head; b; b = b->next) {
        const char *base = b->obj ? b->obj->v.ptr : b->buf;
        size_t take = b->used - b->sent;
        ck_assert_uint_lt(n + take, sizeof(out));
        memcpy(out + n, base + b->sent, take);
        n += take;
    }
    out[n] = '\0';
    client_handle_pending_writes(); /* drops a connection-less client's replies */
    return out;
}

#define RUN(...) run_on(fake, (const char *[]){__VA_ARGS__, NULL})
#define RUN_ON(c, ...) run_on(c, (const char *[]){__VA_ARGS__, NULL})

static void expect_reply(const char *got, const char *want) {
    ck_assert_msg(strcmp(got, want) == 0, "reply \"%s\", want \"%s\"", got, want);
}

static void expect_contains(const char *got, const char *want) {
    ck_assert_msg(strstr(got, want) != NULL, "\"%s\" does not contain \"%s\"", got, want);
}

/* Loads path expecting a refusal whose message contains want. */
static void expect_refused(const char *path, const char *want) {
    char *err = NULL;
    ck_assert_int_eq(module_load(path, 0, NULL, 0, NULL, &err), K_ERR);
    ck_assert_ptr_nonnull(err);
    expect_contains(err, want);
    km_free(err);
    ck_assert_uint_eq(module_count(), 0);
}

static void load_ok(const char *name) {
    char *err = NULL;
    int rv = module_load(fixture(name), 0, NULL, 0, NULL, &err);
    ck_assert_msg(rv == K_OK, "loading %s: %s", name, err ? err : "?");
}

/* A module command's metadata: one range key spec from its first/last/step
 * (RW access update, as Valkey's), the "module" group and its module's
 * name in COMMAND DOCS, FILTERBY MODULE in COMMAND LIST. */
START_TEST(test_module_command_metadata) {
    load_ok("good");
    expect_contains(RUN("command", "info", "good.put"),
                    ":1\r\n:1\r\n:1\r\n*2\r\n+@write\r\n+@slow\r\n");
    expect_contains(RUN("command", "info", "good.put"),
                    "*1\r\n*6\r\n$5\r\nflags\r\n*3\r\n+RW\r\n+access\r\n+update\r\n"
                    "$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n");
    expect_reply(RUN("command", "getkeysandflags", "good.put", "k", "v"),
                 "*1\r\n*2\r\n$1\r\nk\r\n*3\r\n+RW\r\n+access\r\n+update\r\n");
    expect_reply(RUN("command", "getkeys", "good.echo", "x"),
                 "-ERR The command has no key arguments\r\n");
    expect_contains(RUN("command", "info", "good.deny"), "+module\r\n+skip_monitor\r\n");
    const char *docs = RUN("command", "docs", "good.echo");
    expect_contains(docs, "$5\r\ngroup\r\n$6\r\nmodule\r\n");
    expect_contains(docs, "$6\r\nmodule\r\n$4\r\ngood\r\n");
    const char *list = RUN("command", "list", "filterby", "module", "GOOD");
    ck_assert_msg(strncmp(list, "*6\r\n", 4) == 0, "FILTERBY MODULE: %s", list);
    expect_contains(list, "$8\r\ngood.put\r\n");
    expect_reply(RUN("command", "list", "filterby", "module", "nosuch"), "*0\r\n");
}
END_TEST

/* ---- the handshake and its refusals ---- */

START_TEST(test_good_module_runs) {
    size_t before = command_count();
    load_ok("good");
    ck_assert_uint_eq(command_count(), before + 6);
    expect_reply(RUN("good.echo", "hi"), "$2\r\nhi\r\n");
    expect_reply(RUN("GOOD.ECHO", "x"), "$1\r\nx\r\n");
    expect_contains(RUN("good.echo"), "-ERR wrong number of arguments for 'good.echo' command");
    /* COMMAND INFO sees it like a built-in, with the module flag. */
    const char *info = RUN("command", "info", "good.put");
    expect_contains(info, "$8\r\ngood.put\r\n:3\r\n");
    expect_contains(info, "+module\r\n");
    expect_contains(info, "+denyoom\r\n");
    expect_contains(RUN("command", "docs", "good.echo"), "Echoes.");
    const char *list = RUN("module", "list");
    expect_contains(
        list, "*1\r\n*8\r\n$4\r\nname\r\n$4\r\ngood\r\n$3\r\nver\r\n:10203\r\n$4\r\npath\r\n");
    expect_contains(list, "/good.so\r\n$4\r\nargs\r\n*0\r\n");
}
END_TEST

START_TEST(test_not_a_shared_object) {
    char path[] = "/tmp/keel-check-module-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "not an ELF file\n", 16), 16);
    close(fd);
    char want[128];
    snprintf(want, sizeof(want), "module %s: cannot load it as a shared object: ", path);
    expect_refused(path, want);
    unlink(path);
    expect_refused("/nonexistent/keel.so",
                   "module /nonexistent/keel.so: cannot load it as a shared object");
}
END_TEST

START_TEST(test_no_entry_point) {
    expect_refused(fixture("noentry"), "no keel_module_entry() entry point returning a descriptor");
}
END_TEST

START_TEST(test_bad_magic) {
    expect_refused(fixture("badmagic"),
                   "bad magic 0x0000000000001234 in its descriptor (not a Keel module)");
}
END_TEST

START_TEST(test_abi_major_2) {
    char want[600];
    snprintf(want, sizeof(want), "module %s: ABI 2.0 is not supported by this server " SERVER_ABI,
             fixture("abi2"));
    expect_refused(fixture("abi2"), want);
}
END_TEST

START_TEST(test_abi_minor_99) {
    expect_refused(fixture("minor99"),
                   ": ABI 1.99 is newer than this server's " SERVER_ABI "; upgrade the server");
}
END_TEST

/* The next minor is refused by name: this 1.4 server says 1.5 and 1.4. */
START_TEST(test_abi_minor_next) {
    ck_assert_int_eq(KEEL_ABI_MINOR, 4);
    expect_refused(fixture("minor5"),
                   ": ABI 1.5 is newer than this server's (ABI 1.4); upgrade the server");
}
END_TEST

START_TEST(test_init_fails_and_rolls_back) {
    expect_refused(fixture("initfail"), "init of 'initfail' failed: the fixture always fails");
    ck_assert_ptr_null(command_lookup("initfail.cmd", 12));
    expect_contains(RUN("initfail.cmd"), "-ERR unknown command 'initfail.cmd'");
}
END_TEST

START_TEST(test_command_name_taken) {
    expect_refused(fixture("taken"),
                   "init of 'taken' failed: command 'get': the name is already taken");
    ck_assert_ptr_null(command_lookup("taken.ok", 8)); /* rolled back */
    command *get = command_lookup("get", 3);
    ck_assert_ptr_nonnull(get);
    ck_assert_ptr_null(get->module);
}
END_TEST

START_TEST(test_duplicate_module_name) {
    load_ok("good");
    char *err = NULL;
    ck_assert_int_eq(module_load(fixture("dupname"), 0, NULL, 0, NULL, &err), K_ERR);
    expect_contains(err, "a module named 'good' is already loaded");
    km_free(err);
    err = NULL;
    ck_assert_int_eq(module_load(fixture("good"), 0, NULL, 0, NULL, &err), K_ERR);
    expect_contains(err, "a module named 'good' is already loaded");
    km_free(err);
    ck_assert_uint_eq(module_count(), 1);
    expect_reply(RUN("good.echo", "still"), "$5\r\nstill\r\n");
}
END_TEST

/* The marker file deinitmark appends a line to per deinit call. */
static const char *read_marker(const char *path) {
    static char text[256];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    return text;
}

/* A load refused after init returned KEEL_OK calls deinit (with the timer
 * init started still registered, so "deinit 0"), on a failed registration
 * and on an unknown LOADEX config alike; a load whose init failed does not. */
START_TEST(test_refused_after_init_calls_deinit) {
    char marker[] = "/tmp/keel-check-deinit-XXXXXX";
    int fd = mkstemp(marker);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char *err = NULL;
    const char *taken[] = {marker, "taken"};
    ck_assert_int_eq(module_load(fixture("deinitmark"), 2, taken, 0, NULL, &err), K_ERR);
    expect_contains(err, "init of 'deinitmark' failed: command 'get': the name is already taken");
    km_free(err);
    expect_reply(read_marker(marker), "deinit 0\n");
    ck_assert_ptr_null(command_lookup("deinitmark.ok", 13));

    err = NULL;
    const char *ok[] = {marker, "ok"};
    const char *cfg[] = {"deinitmark.nosuch", "1"};
    ck_assert_int_eq(module_load(fixture("deinitmark"), 2, ok, 1, cfg, &err), K_ERR);
    expect_contains(err, "'deinitmark.nosuch' is not a configuration parameter of 'deinitmark'");
    km_free(err);
    expect_reply(read_marker(marker), "deinit 0\ndeinit 0\n");

    err = NULL;
    const char *fail[] = {marker, "fail"};
    ck_assert_int_eq(module_load(fixture("deinitmark"), 2, fail, 0, NULL, &err), K_ERR);
    expect_contains(err, "init of 'deinitmark' failed: the fixture was told to fail");
    km_free(err);
    expect_reply(read_marker(marker), "deinit 0\ndeinit 0\n");
    ck_assert_uint_eq(module_count(), 0);
    unlink(marker);
}
END_TEST

/* ---- the MODULE command ---- */

START_TEST(test_module_command) {
    expect_contains(RUN("module", "load", fixture("abi2")), "-ERR module ");
    expect_contains(RUN("module", "load", fixture("abi2")),
                    ": ABI 2.0 is not supported by this server " SERVER_ABI);
    expect_reply(RUN("module", "load", fixture("good"), "a1", "a2"), "+OK\r\n");
    expect_contains(RUN("module", "list"), "$4\r\nargs\r\n*2\r\n$2\r\na1\r\n$2\r\na2\r\n");
    expect_reply(RUN("module", "unload", "nosuch"),
                 "-ERR Error unloading module: no such module with that name\r\n");
    expect_reply(RUN("module", "unload", "good"), "+OK\r\n");
    expect_reply(RUN("module", "list"), "*0\r\n");
    expect_contains(RUN("good.echo", "x"), "-ERR unknown command");
    expect_contains(RUN("module", "help"), "LOADEX <path>");
    expect_contains(RUN("module", "loadex", fixture("good"), "bogus"),
                    "-ERR Module loadex syntax error");
    expect_reply(
        RUN("module", "loadex", fixture("good"), "CONFIG", "good.limit", "42", "ARGS", "x"),
        "+OK\r\n");
    expect_reply(RUN("config", "get", "good.limit"), "*2\r\n$10\r\ngood.limit\r\n$2\r\n42\r\n");
    expect_contains(RUN("module", "list"), "*1\r\n$1\r\nx\r\n");
    expect_contains(RUN("multi"), "+OK");
    expect_contains(RUN("module", "unload", "good"),
                    "-ERR Command not allowed inside a transaction");
    RUN("discard");
}
END_TEST

/* A transaction that queued a module command fails once the module is
 * gone, instead of calling unloaded code. */
START_TEST(test_unload_with_queued_command) {
    load_ok("good");
    client *other = client_create(NULL);
    expect_reply(RUN_ON(other, "multi"), "+OK\r\n");
    expect_reply(RUN_ON(other, "good.echo", "x"), "+QUEUED\r\n");
    expect_reply(RUN_ON(other, "set", "a", "1"), "+QUEUED\r\n");
    expect_reply(RUN("module", "unload", "good"), "+OK\r\n");
    expect_contains(RUN_ON(other, "exec"), "-EXECABORT");
    expect_reply(RUN("exists", "a"), ":0\r\n");
    client_free(other);
}
END_TEST

START_TEST(test_loadex_unknown_config) {
    expect_contains(RUN("module", "loadex", fixture("good"), "CONFIG", "good.nosuch", "1"),
                    "-ERR module " /* path */);
    expect_contains(RUN("module", "loadex", fixture("good"), "CONFIG", "good.nosuch", "1"),
                    ": 'good.nosuch' is not a configuration parameter of 'good'");
    expect_contains(RUN("module", "loadex", fixture("good"), "CONFIG", "good.limit", "101"),
                    "config 'good.limit': argument must be between 0 and 100 inclusive");
    expect_contains(RUN("module", "loadex", fixture("good"), "CONFIG", "good.limit", "13"),
                    "config 'good.limit': 13 is unlucky");
    ck_assert_uint_eq(module_count(), 0);
    ck_assert_ptr_null(command_lookup("good.echo", 9));
}
END_TEST

/* ---- data types ---- */

START_TEST(test_unload_refused_while_key_holds_type) {
    load_ok("good");
    expect_reply(RUN("good.put", "k", "v1"), "+OK\r\n");
    expect_reply(RUN("type", "k"), "+good-type\r\n");
    expect_reply(RUN("good.get", "k"), "$2\r\nv1\r\n");
    expect_contains(RUN("get", "k"), "-WRONGTYPE");
    expect_reply(
        RUN("module", "unload", "good"),
        "-ERR Error unloading module: 'good' still owns 1 key(s) holding values of its data types; "
        "delete them first\r\n");
    expect_reply(RUN("good.get", "k"), "$2\r\nv1\r\n");
    expect_reply(RUN("del", "k"), ":1\r\n");
    expect_reply(RUN("module", "unload", "good"), "+OK\r\n");
    ck_assert_uint_eq(module_count(), 0);
}
END_TEST

START_TEST(test_type_copy_usage_overwrite) {
    load_ok("good");
    RUN("good.put", "k", "hello");
    expect_reply(RUN("copy", "k", "k2"), ":1\r\n");
    expect_reply(RUN("good.get", "k2"), "$5\r\nhello\r\n");
    const char *usage = RUN("memory", "usage", "k");
    ck_assert_int_eq(usage[0], ':');
    ck_assert_int_gt(atoi(usage + 1), 0);
    RUN("good.put", "k", "again"); /* the old value is freed by its type */
    RUN("set", "k2", "plain");     /* a string replaces a module value */
    expect_reply(RUN("good.get", "k2"), "-WRONGTYPE not a good-type key\r\n");
    expect_reply(
        RUN("module", "unload", "good"),
        "-ERR Error unloading module: 'good' still owns 1 key(s) holding values of its data types; "
        "delete them first\r\n");
    expect_reply(RUN("flushall"), "+OK\r\n");
    expect_reply(RUN("module", "unload", "good"), "+OK\r\n");
}
END_TEST

START_TEST(test_strings_and_expiry) {
    load_ok("good");
    expect_reply(RUN("good.sset", "s", "12345", "100000"), "*2\r\n$5\r\n12345\r\n:1\r\n");
    expect_reply(RUN("get", "s"), "$5\r\n12345\r\n");
    const char *ttl = RUN("pttl", "s");
    ck_assert_int_gt(atoi(ttl + 1), 90000);
}
END_TEST

/* ---- configuration ---- */

START_TEST(test_config_params) {
    char *err = NULL;
    /* A config-file line read before the module loads is kept for it. */
    ck_assert_int_eq(module_config_file_value("good.mode", "SAFE", "test.conf", 7, &err), K_OK);
    load_ok("good");
    expect_reply(RUN("config", "get", "good.m*"), "*2\r\n$9\r\ngood.mode\r\n$4\r\nsafe\r\n");
    expect_reply(RUN("good.stats"), "*4\r\n:10\r\n:1\r\n:0\r\n:0\r\n");
    expect_reply(RUN("config", "set", "good.limit", "55"), "+OK\r\n");
    expect_contains(RUN("good.stats"), "*4\r\n:55\r\n");
    expect_reply(
        RUN("config", "set", "good.limit", "13"),
        "-ERR CONFIG SET failed (possibly related to argument 'good.limit') - 13 is unlucky\r\n");
    expect_contains(RUN("config", "set", "good.limit", "20", "hz", "-1"),
                    "-ERR CONFIG SET failed (possibly related to argument 'hz')");
    expect_reply(RUN("config", "get", "good.limit"),
                 "*2\r\n$10\r\ngood.limit\r\n$2\r\n55\r\n"); /* rolled back */
    expect_contains(RUN("config", "set", "good.buffer", "2kb"),
                    "can't set immutable config 'good.buffer'");
    expect_contains(RUN("config", "set", "good.mode", "slow"),
                    "argument(s) must be one of the following values");
    expect_contains(RUN("config", "set", "good.nosuch", "1"),
                    "-ERR Unknown option or number of arguments");
    expect_reply(RUN("config", "get", "good.buffer"), "*2\r\n$11\r\ngood.buffer\r\n$4\r\n1024\r\n");
    char buf[64];
    ck_assert_int_eq(config_get("GOOD.LIMIT", buf, sizeof(buf)), K_OK);
    ck_assert_str_eq(buf, "55");
}
END_TEST

START_TEST(test_config_rewrite) {
    char path[] = "/tmp/keel-check-module-conf-XXXXXX";
    int fd = mkstemp(path);
    const char *text = "# modules\ngood.limit 7\ngood.limit 8\nother.param 1\n";
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    load_ok("good");
    RUN("config", "set", "good.limit", "66");
    RUN("config", "set", "good.mode", "safe");
    srv.configfile = km_strdup(path);
    expect_reply(RUN("config", "rewrite"), "+OK\r\n");
    km_free(srv.configfile);
    srv.configfile = NULL;
    char got[4096];
    FILE *f = fopen(path, "r");
    size_t n = fread(got, 1, sizeof(got) - 1, f);
    fclose(f);
    got[n] = '\0';
    unlink(path);
    expect_contains(got, "# modules\ngood.limit 66\nother.param 1\n");
    expect_contains(got, "good.mode safe\n");
    ck_assert_ptr_null(strstr(got, "good.buffer"));
}
END_TEST

/* ---- hooks, INFO, timers ---- */

START_TEST(test_hooks_and_info) {
    load_ok("good");
    expect_reply(RUN("good.deny"), "-ERR denied by good\r\n");
    RUN("ping");
    module_cron();
    event_process(srv.el, 0); /* the module's 0 ms timer */
    client *other = client_create(NULL);
    client_free(other); /* a close event */
    /* Observers run after a command: good.stats sees ping only (good.deny
     * was filtered out, so it never ran); INFO sees good.stats too. */
    expect_reply(RUN("good.stats"), "*4\r\n:10\r\n:1\r\n:1\r\n:1\r\n");
    const char *info = RUN("info", "good");
    expect_contains(info, "# good\r\ngood_observed:2\r\ngood_crons:1\r\n");
    expect_contains(RUN("info", "modules"), "# good\r\n");
    ck_assert_ptr_null(strstr(RUN("info"), "# good"));
    expect_reply(RUN("module", "unload", "good"), "+OK\r\n");
    ck_assert_ptr_null(strstr(RUN("info", "everything"), "# good"));
    module_cron(); /* no hook left */
}
END_TEST

/* ---- start-up ---- */

static int load_configured(const char *text, char **err) {
    config_free();
    server_config_init();
    srv.log.verbosity = LL_WARNING;
    srv.enable_module_cmd = 1; /* MODULE is off by default, as in Valkey */
    ck_assert_int_eq(config_load(NULL, text, err), K_OK);
    return module_load_configured(err);
}

START_TEST(test_loadmodule_at_startup) {
    char text[1024], *err = NULL;
    snprintf(text, sizeof(text), "good.limit 42\nloadmodule %s one two\n", fixture("good"));
    ck_assert_msg(load_configured(text, &err) == K_OK, "%s", err ? err : "");
    expect_reply(RUN("config", "get", "good.limit"), "*2\r\n$10\r\ngood.limit\r\n$2\r\n42\r\n");
    expect_contains(RUN("module", "list"), "*2\r\n$3\r\none\r\n$3\r\ntwo\r\n");
    module_teardown();

    ck_assert_int_eq(load_configured("loadmodule /nonexistent/x.so\n", &err), K_ERR);
    expect_contains(
        err, "(command line):1: module /nonexistent/x.so: cannot load it as a shared object");
    km_free(err);
    err = NULL;
    snprintf(text, sizeof(text), "loadmodule %s\nloadmodule %s\n", fixture("good"),
             fixture("abi2"));
    ck_assert_int_eq(load_configured(text, &err), K_ERR);
    expect_contains(err, "(command line):2: module ");
    expect_contains(err, "ABI 2.0 is not supported by this server " SERVER_ABI);
    km_free(err);
    module_teardown();
    err = NULL;
    ck_assert_int_eq(load_configured("nomod.param 5\n", &err), K_ERR);
    ck_assert_str_eq(
        err,
        "(command line):1: module configuration 'nomod.param' matches no parameter of a loaded "
        "module");
    km_free(err);
    config_free();
    server_config_init();
    srv.log.verbosity = LL_WARNING;
    srv.enable_module_cmd = 1; /* MODULE is off by default, as in Valkey */
}
END_TEST

/* ---- the ABI edge ---- */

/* The SDK's flag and code values are frozen ABI; the core's may be
 * renumbered. Each must cross by name: a CMD_* bit as its KEEL_CMD_* bit,
 * every other CMD_* bit (internal ones such as CMD_MODULE) as nothing. */
START_TEST(test_abi_flag_translation) {
    static const struct {
        uint32_t cmd, keel;
    } named[] = {
        {CMD_WRITE, KEEL_CMD_WRITE},
        {CMD_READONLY, KEEL_CMD_READONLY},
        {CMD_DENYOOM, KEEL_CMD_DENYOOM},
        {CMD_ADMIN, KEEL_CMD_ADMIN},
        {CMD_FAST, KEEL_CMD_FAST},
        {CMD_NO_AUTH, KEEL_CMD_NO_AUTH},
        /* ABI 1.2 */
        {CMD_PUBSUB, KEEL_CMD_PUBSUB},
        {CMD_NOSCRIPT, KEEL_CMD_NOSCRIPT},
        {CMD_BLOCKING, KEEL_CMD_BLOCKING},
        {CMD_STALE, KEEL_CMD_STALE},
        {CMD_SKIP_MONITOR, KEEL_CMD_SKIP_MONITOR},
        {CMD_SKIP_SLOWLOG, KEEL_CMD_SKIP_SLOWLOG},
        {CMD_MAY_REPLICATE, KEEL_CMD_MAY_REPLICATE},
        {CMD_NO_MULTI, KEEL_CMD_NO_MULTI},
        {CMD_ALLOW_BUSY, KEEL_CMD_ALLOW_BUSY},
        {CMD_NO_MANDATORY_KEYS, KEEL_CMD_NO_MANDATORY_KEYS},
    };
    uint32_t all_cmd = 0, all_keel = 0;
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        ck_assert_uint_eq(call_keel_cmd_flags(named[i].cmd), named[i].keel);
        ck_assert_uint_eq(call_cmd_flags_from_keel(named[i].keel), named[i].cmd);
        all_cmd |= named[i].cmd;
        all_keel |= named[i].keel;
    }
    ck_assert_uint_eq(call_keel_cmd_flags(all_cmd), all_keel);
    ck_assert_uint_eq(call_keel_cmd_flags(UINT32_MAX), all_keel);
    ck_assert_uint_eq(call_cmd_flags_from_keel(UINT32_MAX), all_cmd);
    for (int bit = 0; bit < 32; bit++)
        if (!(all_cmd & (1u << bit))) ck_assert_uint_eq(call_keel_cmd_flags(1u << bit), 0);
    ck_assert_uint_eq(call_keel_cmd_flags(command_lookup("set", 3)->flags),
                      KEEL_CMD_WRITE | KEEL_CMD_DENYOOM);
    /* A module command carries the internal CMD_MODULE bit; filters and
     * observers must not see it. */
    load_ok("good");
    command *put = command_lookup("good.put", 8);
    ck_assert_uint_ne(put->flags & CMD_MODULE, 0);
    ck_assert_uint_eq(call_keel_cmd_flags(put->flags), KEEL_CMD_WRITE | KEEL_CMD_DENYOOM);

    ck_assert_int_eq(module_keel_client_event(CALL_EVENT_CONNECT), KEEL_CLIENT_CONNECT);
    ck_assert_int_eq(module_keel_client_event(CALL_EVENT_AUTH), KEEL_CLIENT_AUTH);
    ck_assert_int_eq(module_keel_client_event(CALL_EVENT_CLOSE), KEEL_CLIENT_CLOSE);
    ck_assert_int_eq(module_keel_client_event(0), 0);
    ck_assert_int_eq(module_keel_client_event(99), 0);

    ck_assert_int_eq(module_log_level(KEEL_LOG_DEBUG), LL_DEBUG);
    ck_assert_int_eq(module_log_level(KEEL_LOG_VERBOSE), LL_VERBOSE);
    ck_assert_int_eq(module_log_level(KEEL_LOG_NOTICE), LL_NOTICE);
    ck_assert_int_eq(module_log_level(KEEL_LOG_WARNING), LL_WARNING);
    ck_assert_int_eq(module_log_level(-5), LL_DEBUG);
    ck_assert_int_eq(module_log_level(99), LL_WARNING);
}
END_TEST

/* ---- a transport ---- */

/* One event-loop iteration plus what before-sleep does. */
static void pump(void) {
    event_process(srv.el, 10);
    client_handle_pending_writes();
    client_free_closed();
}

static int load_tcpmod(int *port) {
    char arg[16];
    for (int attempt = 0; attempt < 20; attempt++) {
        *port = 20000 + (int)((getpid() * 7 + attempt * 131) % 30000);
        snprintf(arg, sizeof(arg), "%d", *port);
        const char *argv[] = {arg};
        char *err = NULL;
        if (module_load(fixture("tcpmod"), 1, argv, 0, NULL, &err) == K_OK) return K_OK;
        km_free(err); /* the port is taken: try another */
    }
    return K_ERR;
}

/* connect()'s result for a fresh socket to 127.0.0.1:port. */
static int try_connect(int port, int *out) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rv = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    if (out && rv == 0)
        *out = fd;
    else
        close(fd);
    return rv;
}

static int connect_local(int port) {
    int fd = -1;
    ck_assert_int_eq(try_connect(port, &fd), 0);
    return fd;
}

/* Pumps the loop until fd has received want (or 3 s pass). */
static void expect_socket_reply(int fd, const char *want) {
    char got[256] = "";
    size_t n = 0;
    for (int i = 0; i < 300 && !strstr(got, want); i++) {
        pump();
        ssize_t r = recv(fd, got + n, sizeof(got) - 1 - n, MSG_DONTWAIT);
        if (r > 0) got[n += (size_t)r] = '\0';
    }
    ck_assert_msg(strstr(got, want) != NULL, "socket got \"%s\", want \"%s\"", got, want);
}

/* ABI 1.1 core->stat_get: the INFO field names it knows, and refusals of
 * unknown, empty, huge and NULL names. */
START_TEST(test_core_stat_get) {
    long long v = -1;
    srv.db_stats.keyspace_hits = 42;
    ck_assert_int_eq(module_api_core.stat_get("keyspace_hits", &v), KEEL_OK);
    ck_assert_int_eq(v, 42);
    ck_assert_int_eq(module_api_core.stat_get("used_memory", &v), KEEL_OK);
    ck_assert_int_gt(v, 0);
    ck_assert_int_eq(module_api_core.stat_get("db_keys", &v), KEEL_OK);
    ck_assert_int_ge(v, 0);
    v = -7;
    ck_assert_int_eq(module_api_core.stat_get("keyspace_hit", &v), KEEL_ERR);
    ck_assert_int_eq(module_api_core.stat_get("KEYSPACE_HITS", &v), KEEL_ERR);
    ck_assert_int_eq(module_api_core.stat_get("", &v), KEEL_ERR);
    ck_assert_int_eq(v, -7); /* untouched on refusal */
    char huge[65536];
    memset(huge, 'k', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    ck_assert_int_eq(module_api_core.stat_get(huge, &v), KEEL_ERR);
    ck_assert_int_eq(module_api_core.stat_get(NULL, &v), KEEL_ERR);
    ck_assert_int_eq(module_api_core.stat_get("keyspace_hits", NULL), KEEL_ERR);
    srv.db_stats.keyspace_hits = 0;
}
END_TEST

START_TEST(test_transport_serves_tcp) {
    int port;
    ck_assert_int_eq(load_tcpmod(&port), K_OK);
    int fd = connect_local(port);
    const char *ping = "*1\r\n$4\r\nPING\r\n";
    ck_assert_int_eq(send(fd, ping, strlen(ping), 0), (ssize_t)strlen(ping));
    expect_socket_reply(fd, "+PONG\r\n");
    const char *echo = "*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n";
    ck_assert_int_eq(send(fd, echo, strlen(echo), 0), (ssize_t)strlen(echo));
    expect_socket_reply(fd, "$3\r\nabc\r\n");
    expect_reply(RUN("module", "unload", "tcpmod"),
                 "-ERR Error unloading module: 'tcpmod' still has 1 open connection(s) of its "
                 "transports\r\n");
    close(fd);
    const char *rv = "";
    for (int i = 0; i < 300 && strcmp(rv, "+OK\r\n"); i++) {
        pump();
        rv = RUN("module", "unload", "tcpmod");
    }
    expect_reply(rv, "+OK\r\n");
    ck_assert_int_eq(try_connect(port, NULL), -1); /* the listener went with the module */
}
END_TEST

static Suite *module_suite(void) {
    Suite *s = suite_create("module");
    TCase *tc = tcase_create("loader");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_good_module_runs);
    tcase_add_test(tc, test_module_command_metadata);
    tcase_add_test(tc, test_not_a_shared_object);
    tcase_add_test(tc, test_no_entry_point);
    tcase_add_test(tc, test_bad_magic);
    tcase_add_test(tc, test_abi_major_2);
    tcase_add_test(tc, test_abi_minor_99);
    tcase_add_test(tc, test_abi_minor_next);
    tcase_add_test(tc, test_core_stat_get);
    tcase_add_test(tc, test_abi_flag_translation);
    tcase_add_test(tc, test_init_fails_and_rolls_back);
    tcase_add_test(tc, test_command_name_taken);
    tcase_add_test(tc, test_duplicate_module_name);
    tcase_add_test(tc, test_refused_after_init_calls_deinit);
    tcase_add_test(tc, test_module_command);
    tcase_add_test(tc, test_unload_with_queued_command);
    tcase_add_test(tc, test_loadex_unknown_config);
    tcase_add_test(tc, test_loadmodule_at_startup);
    suite_add_tcase(s, tc);

    tc = tcase_create("api");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_unload_refused_while_key_holds_type);
    tcase_add_test(tc, test_type_copy_usage_overwrite);
    tcase_add_test(tc, test_strings_and_expiry);
    tcase_add_test(tc, test_config_params);
    tcase_add_test(tc, test_config_rewrite);
    tcase_add_test(tc, test_hooks_and_info);
    tcase_add_test(tc, test_transport_serves_tcp);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    char *err = NULL;
    server_config_init();
    srv.log.verbosity = LL_WARNING; /* refusals are logged at warning: keep them */
    srv.enable_module_cmd = 1;  /* MODULE is off by default, as in Valkey */
    if (server_init_core(&err) != K_OK) {
        fprintf(stderr, "server_init_core: %s\n", err);
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(module_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    command_teardown();
    db_teardown();
    event_loop_release(srv.el);
    config_free();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
