/* check_it_config.c -- the configuration as an attacker and an unlucky
 * operator meet it, against a real keel-server: CONFIG SET of values with
 * line ends followed by CONFIG REWRITE and a restart (no injected directive
 * survives, the value comes back byte for byte), long and binary passwords,
 * loadmodule lines of modules no longer loaded, rename-command, protective
 * Valkey directives Keel refuses rather than ignores, and Valkey's bounds on
 * values that would break every client. */
#include "harness.h"

#include <stdio.h>
#include <string.h>

/* ---- helpers ---- */

/* 1 if a line of text starts with prefix (after blanks). */
static int has_line_starting(const char *text, const char *prefix) {
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, prefix, n) == 0) return 1;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return 0;
}

static void expect_auth(redisContext *c, const char *pass, size_t len, const char *want) {
    redisReply *r = it_cmd(c, "AUTH %b", pass, len);
    char buf[256];
    it_render(r, buf, sizeof(buf));
    ck_assert_msg(strncmp(buf, want, strlen(want)) == 0, "AUTH of %zu bytes: %s, want %s", len, buf,
                  want);
}

/* CONFIG GET name answers [name, value]: compares the value's bytes. */
static void expect_config_value(redisContext *c, const char *name, const char *want, size_t len) {
    redisReply *r = it_cmd(c, "CONFIG GET %s", name);
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 2);
    ck_assert_uint_eq(r->element[1]->len, len);
    ck_assert_msg(memcmp(r->element[1]->str, want, len) == 0, "CONFIG GET %s: other bytes", name);
}

/* ---- CONFIG REWRITE with hostile values ---- */

START_TEST(test_rewrite_newline_injection) {
    /* Each line end would have made the rest a directive of its own. */
    static const char pass[] = "pw\nenable-debug-command yes\r\nloadmodule /nonexistent/evil.so\n"
                               "protected-mode no\npidfile /tmp/keel-it-injected.pid";
    it_server *s = it_start_conf("# kept\nport 6379\n", NULL);
    redisContext *c = it_connect(s);
    expect_ok(c, "CONFIG SET requirepass %b", pass, sizeof(pass) - 1);
    expect_ok(c, "CONFIG REWRITE");
    char *text = it_read_file(s->conf);
    ck_assert_msg(!has_line_starting(text, "enable-debug-command"), "injected line:\n%s", text);
    ck_assert_msg(!has_line_starting(text, "loadmodule"), "injected line:\n%s", text);
    ck_assert_msg(!has_line_starting(text, "protected-mode"), "injected line:\n%s", text);
    ck_assert_msg(!has_line_starting(text, "pidfile"), "injected line:\n%s", text);
    ck_assert_msg(has_line_starting(text, "# kept"), "comment lost:\n%s", text);

    /* The rewritten file starts a server (the injected loadmodule would
     * have stopped it) with the same password and DEBUG still off. */
    it_server *s2 = it_start_conf(text, NULL);
    redisContext *c2 = it_connect(s2);
    expect_error_prefix(c2, "NOAUTH", "PING");
    expect_auth(c2, "pw", 2, "-WRONGPASS");
    expect_auth(c2, pass, sizeof(pass) - 1, "+OK");
    expect_error_prefix(c2, "ERR DEBUG command not allowed", "DEBUG SLEEP 0");
    expect_reply(c2, "[\"protected-mode\",\"yes\"]", "CONFIG GET protected-mode");
    expect_reply(c2, "[\"pidfile\",\"\"]", "CONFIG GET pidfile");
}
END_TEST

START_TEST(test_long_binary_password_survives_restart) {
    /* 2,000 bytes with a NUL and every kind of byte: not cut at 1023 bytes
     * nor at the NUL, in CONFIG GET, in the file, after a restart. */
    char pass[2000];
    for (size_t i = 0; i < sizeof(pass); i++)
        pass[i] = (char)(i * 7 + 1);
    pass[700] = '\0';
    it_server *s = it_start_conf("port 6379\n", NULL);
    redisContext *c = it_connect(s);
    expect_ok(c, "CONFIG SET requirepass %b", pass, sizeof(pass));
    expect_config_value(c, "requirepass", pass, sizeof(pass));
    expect_ok(c, "CONFIG REWRITE");
    it_server *s2 = it_start_conf(it_read_file(s->conf), NULL);
    redisContext *c2 = it_connect(s2);
    expect_auth(c2, pass, 700, "-WRONGPASS");
    expect_auth(c2, pass, 1023, "-WRONGPASS");
    expect_auth(c2, pass, sizeof(pass), "+OK");
    expect_config_value(c2, "requirepass", pass, sizeof(pass));
}
END_TEST

START_TEST(test_rewrite_drops_unloaded_module) {
    /* A loadmodule line is the list of loaded modules, not a line to copy:
     * after MODULE UNLOAD, a rewrite removes it. */
    const char *conf =
        it_fmt("enable-module-command yes\nloadmodule %s/good.so\n", KEEL_TEST_MODULE_DIR);
    it_server *s = it_start_conf(conf, NULL);
    redisContext *c = it_connect(s);
    expect_ok(c, "CONFIG REWRITE");
    char *text = it_read_file(s->conf);
    ck_assert_msg(has_line_starting(text, "loadmodule \""), "loaded module not written:\n%s", text);
    expect_ok(c, "MODULE UNLOAD good");
    expect_ok(c, "CONFIG REWRITE");
    text = it_read_file(s->conf);
    ck_assert_msg(!has_line_starting(text, "loadmodule"), "unloaded module kept:\n%s", text);
    /* loaded again at run time: written again */
    expect_ok(c, "MODULE LOAD %s/good.so", KEEL_TEST_MODULE_DIR);
    expect_ok(c, "CONFIG REWRITE");
    text = it_read_file(s->conf);
    ck_assert_msg(
        has_line_starting(text, it_fmt("loadmodule \"%s/good.so\"", KEEL_TEST_MODULE_DIR)),
        "module loaded at run time not written:\n%s", text);
}
END_TEST

START_TEST(test_rewrite_long_line_not_split) {
    /* Lines longer than any read buffer stay whole: a rewrite that read them
     * in pieces would replace the first piece of a known directive and
     * write the tail as a line of its own. */
    char *pass = it_alloc(12001); /* past 8 KB, under the unauthenticated bulk limit */
    memset(pass, 'x', 12000);
    pass[12000] = '\0';
    const char *conf =
        it_fmt("# %s enable-debug-command yes\nrequirepass \"%s\"\nport 6379\n", pass, pass);
    it_server *s = it_start_conf(conf, NULL);
    redisContext *c = it_connect(s);
    expect_auth(c, pass, strlen(pass), "+OK");
    expect_ok(c, "CONFIG SET maxmemory 5mb");
    expect_ok(c, "CONFIG REWRITE");
    char *text = it_read_file(s->conf);
    ck_assert_msg(!has_line_starting(text, "enable-debug-command"), "a long line was split");
    ck_assert_msg(!has_line_starting(text, "xxxx"), "a long line was split");
    it_server *s2 = it_start_conf(text, NULL);
    redisContext *c2 = it_connect(s2);
    expect_auth(c2, pass, strlen(pass), "+OK");
    expect_reply(c2, "[\"maxmemory\",\"5242880\"]", "CONFIG GET maxmemory");
}
END_TEST

START_TEST(test_command_line_value_with_newline) {
    /* Command-line words become config text: a newline inside one stays a
     * byte of the value, not the start of a directive. */
    static const char pass[] = "pw\nenable-debug-command yes\n\"\\";
    it_server *s = it_start("--requirepass", pass, NULL);
    redisContext *c = it_connect(s);
    expect_auth(c, pass, sizeof(pass) - 1, "+OK");
    expect_config_value(c, "requirepass", pass, sizeof(pass) - 1);
    expect_reply(c, "[\"enable-debug-command\",\"no\"]", "CONFIG GET enable-debug-command");
}
END_TEST

/* ---- rename-command ---- */

START_TEST(test_rename_command) {
    it_server *s = it_start("--rename-command", "flushall", "", "--rename-command", "CONFIG",
                            "k-config-42", NULL);
    redisContext *c = it_connect(s);
    expect_error_prefix(c, "ERR unknown command 'FLUSHALL'", "FLUSHALL");
    expect_error_prefix(c, "ERR unknown command 'CONFIG'", "CONFIG GET maxmemory");
    expect_reply(c, "[\"maxmemory\",\"0\"]", "K-CONFIG-42 GET maxmemory");
    expect_ok(c, "k-config-42 SET maxmemory 1mb");
    expect_reply(c, "[\"maxmemory\",\"1048576\"]", "k-config-42 GET maxmemory");
    /* As in Valkey, statistics keep the command's own name. */
    char *stats = it_info_str(c, "commandstats", "cmdstat_config|get");
    ck_assert_ptr_nonnull(stats);
    ck_assert_int_eq(it_kv_get(stats, "calls"), 2);
    expect_int(c, 0, "DBSIZE");
}
END_TEST

START_TEST(test_rename_command_errors) {
    char *out = it_start_refused(NULL, "--rename-command", "no-such-cmd", "x", NULL);
    ck_assert_msg(strstr(out, "No such command in rename-command"), "log:\n%s", out);
    out = it_start_refused(NULL, "--rename-command", "get", it_fmt("%070d", 0), NULL);
    ck_assert_msg(strstr(out, "Target command name is too long"), "log:\n%s", out);
    out = it_start_refused("port 6379\nrename-command get set\n", NULL);
    ck_assert_msg(
        strstr(out, "keel.conf:2: rename-command get: Target command name already exists"),
        "log:\n%s", out);
}
END_TEST

/* ---- directives refused rather than ignored ---- */

START_TEST(test_user_directive_refused) {
    char *out = it_start_refused("port 6379\nuser default off\n", NULL);
    ck_assert_msg(strstr(out, "keel.conf:2: 'user' is not supported"), "log:\n%s", out);
    out = it_start_refused("aclfile /etc/valkey/users.acl\n", NULL);
    ck_assert_msg(strstr(out, "keel.conf:1: 'aclfile' is not supported"), "log:\n%s", out);
    out = it_start_refused(NULL, "--replicaof", "127.0.0.1", "6380", NULL);
    ck_assert_msg(strstr(out, "'replicaof' is not supported"), "log:\n%s", out);
}
END_TEST

/* ---- bounds ---- */

START_TEST(test_bounds_protect_clients) {
    it_server *s = it_start(NULL);
    redisContext *c = it_connect(s);
    expect_error_prefix(
        c,
        "ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument "
        "must be between 1048576",
        "CONFIG SET proto-max-bulk-len 0");
    expect_error_prefix(
        c, "ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit')",
        "CONFIG SET client-query-buffer-limit 0");
    expect_error_prefix(
        c, "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit')",
        "CONFIG SET client-output-buffer-limit %s", "normal 0 1mb 9223372036854775807");
    expect_ok(c, "SET k v"); /* every client still works */
    expect_bulk(c, "v", "GET k");
    expect_ok(c, "CONFIG SET hz 100000"); /* a hint, clamped as Valkey does */
    expect_reply(c, "[\"hz\",\"500\"]", "CONFIG GET hz");
    char *out = it_start_refused(NULL, "--client-query-buffer-limit", "0", NULL);
    ck_assert_msg(strstr(out, "between 1048576"), "log:\n%s", out);
}
END_TEST

static Suite *config_suite(void) {
    Suite *s = suite_create("config");
    TCase *tc = it_tcase_bare(s, "config");
    tcase_add_test(tc, test_rewrite_newline_injection);
    tcase_add_test(tc, test_long_binary_password_survives_restart);
    tcase_add_test(tc, test_rewrite_drops_unloaded_module);
    tcase_add_test(tc, test_rewrite_long_line_not_split);
    tcase_add_test(tc, test_command_line_value_with_newline);
    tcase_add_test(tc, test_rename_command);
    tcase_add_test(tc, test_rename_command_errors);
    tcase_add_test(tc, test_user_directive_refused);
    tcase_add_test(tc, test_bounds_protect_clients);
    return s;
}

int main(void) {
    return it_run(config_suite());
}
