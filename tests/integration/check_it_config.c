/* check_it_config.c -- the configuration as an attacker and an unlucky
 * operator meet it, against a real keel-server: CONFIG SET of values with
 * line ends followed by CONFIG REWRITE and a restart (no injected directive
 * survives, the value comes back byte for byte), long and binary passwords,
 * loadmodule lines of modules no longer loaded, rename-command, protective
 * Valkey directives Keel refuses rather than ignores, and Valkey's bounds on
 * values that would break every client. */
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* ---- config families (ABI 1.3) ---- */

static it_server *start_famcfg(const char *extra) {
    return it_start_conf(it_fmt("enable-module-command yes\nloadmodule %s/famcfg.so\n%s",
                                KEEL_TEST_MODULE_DIR, extra),
                         NULL);
}

START_TEST(test_family_file_lines_and_get) {
    /* lines of the family before and after loadmodule reach the module */
    it_server *s =
        it_start_conf(it_fmt("rdma-port 7000\nenable-module-command yes\nloadmodule %s/famcfg.so\n"
                             "rdma-cert a\nrdma-key a\nfamcfg.plain 5\n",
                             KEEL_TEST_MODULE_DIR),
                      NULL);
    redisContext *c = it_connect(s);
    expect_reply(c, "[\"rdma-port\",\"7000\"]", "CONFIG GET rdma-port");
    expect_reply(c, "[\"famcfg.plain\",\"5\"]", "CONFIG GET famcfg.plain");
    redisReply *r = it_cmd(c, "CONFIG GET rdma-*");
    ck_assert_int_eq(r->elements, 8);
    expect_reply(c, "[]", "CONFIG GET famcfg.rdma-port");
    /* commit does not run at load */
    expect_reply(c, "[:5,:0,\"\"]", "FAMCFG.STATS");
}
END_TEST

START_TEST(test_family_set_commit_once_and_rollback) {
    it_server *s = start_famcfg("");
    redisContext *c = it_connect(s);
    /* two parameters of one commit: it runs once, after both applies */
    expect_ok(c, "CONFIG SET rdma-cert b rdma-key b");
    expect_reply(c, "[:7,:1,\"b\"]", "FAMCFG.STATS");
    /* the commit refuses: both parameters named get their old values back */
    expect_error(c,
                 "ERR CONFIG SET failed (possibly related to argument 'rdma-cert') - cert and key "
                 "do not match",
                 "CONFIG SET rdma-cert c rdma-port 9");
    expect_reply(c, "[\"rdma-cert\",\"b\"]", "CONFIG GET rdma-cert");
    expect_reply(c, "[\"rdma-port\",\"0\"]", "CONFIG GET rdma-port");
    /* a core value failing rolls the family back too, with no commit */
    expect_error_prefix(c, "ERR CONFIG SET failed (possibly related to argument 'maxmemory')",
                        "CONFIG SET rdma-cert d rdma-key d maxmemory lots");
    expect_reply(c, "[\"rdma-key\",\"b\"]", "CONFIG GET rdma-key");
    redisReply *r = it_cmd(c, "FAMCFG.STATS");
    ck_assert_int_eq(r->element[1]->integer, 1);
    /* the same value again still applies and commits (re-reading a file) */
    expect_ok(c, "CONFIG SET rdma-cert b");
    r = it_cmd(c, "FAMCFG.STATS");
    ck_assert_int_eq(r->element[1]->integer, 2);
    /* a name of the family the module did not declare is unknown */
    expect_error(c, "ERR Unknown option or number of arguments for CONFIG SET - 'rdma-nothing'",
                 "CONFIG SET rdma-nothing 1");
}
END_TEST

START_TEST(test_family_sensitive_redacted) {
    it_server *s = start_famcfg("slowlog-log-slower-than 0\n");
    redisContext *c = it_connect(s);
    expect_ok(c, "CONFIG SET rdma-pass hunter2 rdma-port 1");
    redisReply *r = it_cmd(c, "SLOWLOG GET 1");
    ck_assert_int_eq(r->elements, 1);
    char buf[512];
    it_render(r->element[0]->element[3], buf, sizeof(buf));
    ck_assert_str_eq(buf, "[\"CONFIG\",\"SET\",\"rdma-pass\",\"(redacted)\",\"rdma-port\",\"1\"]");
    /* CONFIG GET still shows it, as Valkey does */
    expect_reply(c, "[\"rdma-pass\",\"hunter2\"]", "CONFIG GET rdma-pass");
    /* also after a pair that fails */
    redisReply *e = it_cmd(c, "CONFIG SET nosuch 1 rdma-pass leaked");
    ck_assert_int_eq(e->type, REDIS_REPLY_ERROR);
    r = it_cmd(c, "SLOWLOG GET 1");
    it_render(r->element[0]->element[3], buf, sizeof(buf));
    ck_assert_str_eq(buf, "[\"CONFIG\",\"SET\",\"nosuch\",\"1\",\"rdma-pass\",\"(redacted)\"]");
}
END_TEST

/* After MODULE UNLOAD its lines are not written (as Valkey drops an
 * unloaded module's configs): the loadmodule line goes, and the file must
 * still start. */
START_TEST(test_rewrite_after_unload) {
    it_server *s = start_famcfg("rdma-port 7000\nrdma-cert a\nrdma-key a\n");
    redisContext *c = it_connect(s);
    expect_ok(c, "CONFIG SET rdma-pass p");
    expect_ok(c, "MODULE UNLOAD famcfg");
    expect_ok(c, "CONFIG REWRITE");
    char *text = it_read_file(s->conf);
    ck_assert_msg(!strstr(text, "loadmodule") && !strstr(text, "rdma-"), "file:\n%s", text);
    it_stop(s);
    char *dir = strstr(text, "\ndir "); /* the stopped server's, removed with it */
    if (dir) dir[1] = '#';
    s = it_start_conf(text, NULL);
    c = it_connect(s);
    expect_status(c, "PONG", "PING");
}
END_TEST

/* When a later module's commit refuses, an earlier module's commit that
 * succeeded runs again on the restored values: it does not keep acting on
 * the refused ones. */
START_TEST(test_commit_rollback_recommits) {
    it_server *s = start_famcfg("");
    redisContext *c = it_connect(s);
    expect_ok(c, "MODULE LOAD %s/famcfg2.so tls-", KEEL_TEST_MODULE_DIR);
    expect_ok(c, "CONFIG SET rdma-cert a rdma-key a");
    redisReply *r = it_cmd(c, "CONFIG SET rdma-cert b rdma-key b tls-cert x tls-key y");
    ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
    ck_assert_msg(strstr(r->str, "'tls-cert'") && strstr(r->str, "cert and key do not match"), "%s",
                  r->str);
    expect_reply(c, "[\"rdma-cert\",\"a\"]", "CONFIG GET rdma-cert");
    r = it_cmd(c, "FAMCFG.STATS");
    ck_assert_str_eq(r->element[2]->str, "a");   /* what it acts on: the restored value */
    ck_assert_int_eq(r->element[1]->integer, 3); /* a, b, then a again */
    r = it_cmd(c, "FAMCFG2.STATS");
    ck_assert_int_eq(r->element[1]->integer, 0);
}
END_TEST

START_TEST(test_family_rewrite_unprefixed) {
    it_server *s = start_famcfg("rdma-port 7000\n");
    redisContext *c = it_connect(s);
    expect_ok(c, "CONFIG SET rdma-cert x rdma-key x");
    expect_ok(c, "CONFIG REWRITE");
    char *text = it_read_file(s->conf);
    ck_assert_msg(has_line_starting(text, "rdma-port 7000"), "file:\n%s", text);
    ck_assert_msg(has_line_starting(text, "rdma-cert x"), "file:\n%s", text);
    ck_assert_msg(!strstr(text, "famcfg.rdma"), "file:\n%s", text);
    /* a second rewrite finds its own lines and keeps one of each */
    expect_ok(c, "CONFIG SET rdma-cert y rdma-key y");
    expect_ok(c, "CONFIG REWRITE");
    text = it_read_file(s->conf);
    ck_assert_msg(has_line_starting(text, "rdma-cert y") && !has_line_starting(text, "rdma-cert x"),
                  "file:\n%s", text);
}
END_TEST

START_TEST(test_family_released_on_unload) {
    it_server *s = start_famcfg("");
    redisContext *c = it_connect(s);
    expect_ok(c, "MODULE UNLOAD famcfg");
    expect_reply(c, "[]", "CONFIG GET rdma-port");
    expect_error(c,
                 "ERR CONFIG SET failed (possibly related to argument 'rdma-port') - rdma-port: "
                 "this directive belongs to the rdma module, which is not loaded",
                 "CONFIG SET rdma-port 1");
    /* claimed again by a new load */
    expect_ok(c, "MODULE LOAD %s/famcfg.so", KEEL_TEST_MODULE_DIR);
    expect_ok(c, "CONFIG SET rdma-port 2");
    /* only reserved prefixes can be claimed, and one module holds each */
    char *log = NULL;
    expect_error_prefix(c, "ERR", "MODULE LOAD %s/famcfg2.so port-", KEEL_TEST_MODULE_DIR);
    expect_error_prefix(c, "ERR", "MODULE LOAD %s/famcfg2.so", KEEL_TEST_MODULE_DIR);
    log = it_read_file(s->log);
    ck_assert_msg(strstr(log, "config_claim_family: 'port-' is not a reserved family"), "log:\n%s",
                  it_log_tail(s));
    ck_assert_msg(strstr(log, "config_claim_family: 'rdma-' is held by module 'famcfg'"),
                  "log:\n%s", it_log_tail(s));
    /* another family is free for it */
    expect_ok(c, "MODULE LOAD %s/famcfg2.so tls-", KEEL_TEST_MODULE_DIR);
    expect_reply(c, "[\"tls-port\",\"0\"]", "CONFIG GET tls-port");
    expect_ok(c, "MODULE UNLOAD famcfg2");
    expect_reply(c, "[]", "CONFIG GET tls-port");
}
END_TEST

START_TEST(test_family_line_without_module_refused) {
    char *out = it_start_refused("port 0\ntls-port 6380\n", NULL);
    ck_assert_msg(
        strstr(out, "keel.conf:2: tls-port: this directive belongs to the tls module, "
                    "which is not loaded (add `loadmodule /path/to/tls.so` to the configuration)"),
        "log:\n%s", out);
    /* the first such line in the file is named, wherever loadmodule would go */
    out =
        it_start_refused("tls-cert-file a.crt\nport 0\ntls-port 6380\ntls-key-file a.key\n", NULL);
    ck_assert_msg(strstr(out, "keel.conf:1: tls-cert-file: this directive belongs"), "log:\n%s",
                  out);
    out = it_start_refused(
        it_fmt("loadmodule %s/famcfg.so\ntls-cert-file a.crt\n", KEEL_TEST_MODULE_DIR), NULL);
    ck_assert_msg(strstr(out, "tls-cert-file: this directive belongs to the tls module"),
                  "log:\n%s", out);
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


/* ---- CONFIG SET port / bind: rebinding ---- */

/* 1 if a new connection to 127.0.0.1:port is accepted. */
static int port_accepts(int port) {
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, (struct timeval){2, 0});
    int ok = c && !c->err;
    if (c) redisFree(c);
    return ok;
}

/* A socket listening on 127.0.0.1:port, so the server cannot have it. */
static int hold_port(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(fd, 1), 0);
    socklen_t alen = sizeof(a);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

START_TEST(test_rebind_new_port) {
    it_server *s = it_start(NULL);
    redisContext *c = it_connect(s);
    expect_ok(c, "SET k v");
    int old = s->port, port = it_free_port();
    expect_ok(c, "CONFIG SET port %d", port);
    s->port = port;
    /* the connection made before keeps working, the new port accepts, the
     * old one refuses */
    expect_bulk(c, "v", "GET k");
    expect_reply(c, it_fmt("[\"port\",\"%d\"]", port), "CONFIG GET port");
    redisContext *c2 = it_connect(s);
    expect_bulk(c2, "v", "GET k");
    ck_assert_msg(!port_accepts(old), "the old port %d still accepts", old);
    it_stop(s);
}
END_TEST

START_TEST(test_rebind_port_in_use_keeps_old) {
    it_server *s = it_start(NULL);
    redisContext *c = it_connect(s);
    int busy, fd = hold_port(&busy);
    expect_error(c,
                 "ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on "
                 "this port. Check server logs.",
                 "CONFIG SET port %d", busy);
    expect_reply(c, it_fmt("[\"port\",\"%d\"]", s->port), "CONFIG GET port");
    ck_assert_msg(port_accepts(s->port), "the old port stopped accepting");
    expect_status(c, "PONG", "PING");
    /* with other pairs: all or nothing */
    expect_error_prefix(c, "ERR CONFIG SET failed (possibly related to argument 'port')",
                        "CONFIG SET maxmemory 1mb port %d", busy);
    expect_reply(c, "[\"maxmemory\",\"0\"]", "CONFIG GET maxmemory");
    expect_reply(c, it_fmt("[\"port\",\"%d\"]", s->port), "CONFIG GET port");
    close(fd);
    ck_assert_msg(strstr(it_log_tail(s), "keeping the previous listeners"), "log:\n%s",
                  it_log_tail(s));
    it_stop(s);
}
END_TEST

START_TEST(test_rebind_bind_change) {
    it_server *s = it_start(NULL);
    redisContext *c = it_connect(s);
    /* the same port on other addresses: the old sockets close first */
    expect_ok(c, "CONFIG SET bind %s", "127.0.0.1 -::1");
    expect_reply(c, "[\"bind\",\"127.0.0.1 -::1\"]", "CONFIG GET bind");
    ck_assert(port_accepts(s->port));
    expect_status(c, "PONG", "PING");
    /* an address the host lacks (TEST-NET-1): refused, the old ones listen
     * again */
    expect_error(c,
                 "ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to "
                 "specified addresses.",
                 "CONFIG SET bind %s", "127.0.0.1 192.0.2.1");
    expect_reply(c, "[\"bind\",\"127.0.0.1 -::1\"]", "CONFIG GET bind");
    ck_assert_msg(port_accepts(s->port), "nothing listens after a failed bind change");
    /* bind and port together */
    int port = it_free_port();
    expect_ok(c, "CONFIG SET bind 127.0.0.1 port %d", port);
    s->port = port;
    ck_assert(port_accepts(port));
    expect_status(c, "PONG", "PING");
    it_stop(s);
}
END_TEST

START_TEST(test_port_zero) {
    it_server *s = it_start(NULL);
    redisContext *c = it_connect(s);
    /* no other listener: allowed (as Valkey), the connection stays and can
     * open a port again */
    int first = s->port;
    expect_ok(c, "CONFIG SET port 0");
    ck_assert_msg(!port_accepts(first), "TCP still listening after port 0");
    expect_ok(c, it_fmt("CONFIG SET port %d", first));
    ck_assert(port_accepts(first));
    it_stop(s);

    char *sock = it_fmt("/tmp/keel-it-port0-%d.sock", (int)getpid());
    s = it_start("--unixsocket", sock, NULL);
    c = it_connect(s);
    int old = s->port;
    expect_ok(c, "CONFIG SET port 0");
    ck_assert_msg(!port_accepts(old), "TCP still listening after port 0");
    expect_status(c, "PONG", "PING"); /* the connection made before stays */
    redisContext *u = redisConnectUnix(sock);
    ck_assert(u && !u->err);
    redisReply *r = redisCommand(u, "CONFIG SET port %d", old);
    ck_assert_msg(r && r->type == REDIS_REPLY_STATUS, "CONFIG SET port over the unix socket");
    freeReplyObject(r);
    redisFree(u);
    ck_assert(port_accepts(old));
    it_stop(s);
}
END_TEST

/* ---- every directive: Valkey's defaults, bounds, aliases, REWRITE ---- */

START_TEST(test_config_get_compat) {
    it_server *s = it_start(NULL);
    redisContext *c = it_connect(s);
    expect_reply(c, "[\"hash-max-listpack-entries\",\"512\"]", "CONFIG GET hash-max-listpack-entries");
    expect_reply(c, "[\"hash-max-ziplist-value\",\"64\"]", "CONFIG GET hash-max-ziplist-value");
    expect_reply(c, "[\"list-max-listpack-size\",\"-2\"]", "CONFIG GET list-max-listpack-size");
    expect_reply(c, "[\"list-compress-depth\",\"0\"]", "CONFIG GET list-compress-depth");
    expect_reply(c, "[\"set-max-intset-entries\",\"512\"]", "CONFIG GET set-max-intset-entries");
    expect_reply(c, "[\"set-max-listpack-entries\",\"128\"]", "CONFIG GET set-max-listpack-entries");
    expect_reply(c, "[\"set-max-listpack-value\",\"64\"]", "CONFIG GET set-max-listpack-value");
    expect_reply(c, "[\"zset-max-listpack-entries\",\"128\"]", "CONFIG GET zset-max-listpack-entries");
    expect_reply(c, "[\"zset-max-ziplist-value\",\"64\"]", "CONFIG GET zset-max-ziplist-value");
    expect_reply(c, "[\"stream-node-max-bytes\",\"4096\"]", "CONFIG GET stream-node-max-bytes");
    expect_reply(c, "[\"stream-node-max-entries\",\"100\"]", "CONFIG GET stream-node-max-entries");
    expect_reply(c, "[\"hll-sparse-max-bytes\",\"3000\"]", "CONFIG GET hll-sparse-max-bytes");
    /* a primary's replicaof, under either name */
    expect_reply(c, "[\"replicaof\",\"\"]", "CONFIG GET replicaof");
    expect_reply(c, "[\"slaveof\",\"\"]", "CONFIG GET slaveof");
    expect_reply(c, "[\"SLAVEOF\",\"\"]", "CONFIG GET SLAVEOF"); /* the name as asked */
    expect_error(c,
                 "ERR CONFIG SET failed (possibly related to argument 'replicaof') - can't set "
                 "immutable config",
                 "CONFIG SET replicaof %s", "127.0.0.1 6380");
    /* patterns find aliases, not hidden directives; exact names find both */
    redisReply *r = it_cmd(c, "CONFIG GET *");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    int aliases = 0, hidden = 0, total = (int)r->elements / 2;
    for (size_t i = 0; i < r->elements; i += 2) {
        aliases += !strcmp(r->element[i]->str, "slave-read-only");
        hidden += !strcmp(r->element[i]->str, "key-load-delay");
    }
    ck_assert_int_eq(aliases, 1);
    ck_assert_int_eq(hidden, 0);
    /* Valkey 8.0.1's count less its 20 tls-* directives, which are the TLS
     * module's (a reserved family) and not shown while it is not loaded */
    ck_assert_int_ge(total, 214 - 20);
    expect_reply(c, "[\"key-load-delay\",\"0\"]", "CONFIG GET key-load-delay");
    /* bounds and Valkey's error texts */
    expect_error(c,
                 "ERR CONFIG SET failed (possibly related to argument 'list-compress-depth') - "
                 "argument must be between 0 and 2147483647 inclusive",
                 "CONFIG SET list-compress-depth -1");
    expect_error(c,
                 "ERR CONFIG SET failed (possibly related to argument 'hash-max-listpack-value') - "
                 "argument must be a memory value",
                 "CONFIG SET hash-max-listpack-value abc");
    expect_error(c,
                 "ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) "
                 "must be one of the following: everysec, always, no",
                 "CONFIG SET appendfsync sometimes");
    expect_error(c,
                 "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected "
                 "config",
                 "CONFIG SET dir /tmp");
    /* the tls-* family belongs to the TLS module, which this server has not loaded */
    expect_error(c,
                 "ERR CONFIG SET failed (possibly related to argument 'tls-port') - tls-port: this "
                 "directive belongs to the tls module, which is not loaded",
                 "CONFIG SET tls-port 6380");
    expect_reply(c, "[]", "CONFIG GET tls-port");
    expect_reply(c, "[]", "CONFIG GET tls-*");
    /* core names that only contain "tls" are the core's */
    expect_reply(c, "[\"cluster-announce-tls-port\",\"0\"]",
                 "CONFIG GET cluster-announce-tls-port");
    expect_ok(c, "CONFIG SET max-new-tls-connections-per-cycle 2 maxmemory-clients 0");
    /* the accept caps: Valkey's bounds, and a cap of 1 delays a burst of
     * connections without refusing any */
    expect_error_prefix(c,
                        "ERR CONFIG SET failed (possibly related to argument "
                        "'max-new-connections-per-cycle') - argument must be between 1 and 1000",
                        "CONFIG SET max-new-connections-per-cycle 0");
    expect_error_prefix(c,
                        "ERR CONFIG SET failed (possibly related to argument "
                        "'max-new-tls-connections-per-cycle') - argument must be between 1 and "
                        "1000",
                        "CONFIG SET max-new-tls-connections-per-cycle 1001");
    expect_ok(c, "CONFIG SET max-new-connections-per-cycle 1");
    expect_reply(c, "[\"max-new-connections-per-cycle\",\"1\"]",
                 "CONFIG GET max-new-connections-per-cycle");
    redisContext *burst[40];
    for (int i = 0; i < 40; i++)
        burst[i] = it_connect(s);
    for (int i = 0; i < 40; i++) {
        expect_status(burst[i], "PONG", "PING");
        it_disconnect(burst[i]);
    }
    /* stored and given back */
    expect_ok(c, "CONFIG SET hash-max-ziplist-entries 100 appendfsync always");
    expect_reply(c, "[\"hash-max-listpack-entries\",\"100\"]", "CONFIG GET hash-max-listpack-entries");
    expect_reply(c, "[\"appendfsync\",\"always\"]", "CONFIG GET appendfsync");
    it_stop(s);
}
END_TEST

START_TEST(test_compat_rewrite_round_trip) {
    it_server *s = it_start_conf("port 6379\nappendfsync always\nzset-max-ziplist-entries 64\n", NULL);
    ck_assert_msg(strstr(it_log_tail(s), "directive 'appendfsync' has no effect in Keel"), "log:\n%s",
                  it_log_tail(s));
    redisContext *c = it_connect(s);
    expect_ok(c, "CONFIG SET set-max-intset-entries 1000 notify-keyspace-events KEx");
    expect_ok(c, "CONFIG SET latency-tracking-info-percentiles %s", "50 99.99");
    expect_ok(c, "CONFIG REWRITE");
    char *text = it_read_file(s->conf);
    ck_assert_msg(has_line_starting(text, "appendfsync always"), "file:\n%s", text);
    ck_assert_msg(has_line_starting(text, "zset-max-listpack-entries 64"), "file:\n%s", text);
    ck_assert_msg(has_line_starting(text, "set-max-intset-entries 1000"), "file:\n%s", text);
    ck_assert_msg(has_line_starting(text, "notify-keyspace-events xKE"), "file:\n%s", text);
    ck_assert_msg(!has_line_starting(text, "replicaof"), "file:\n%s", text);
    it_server *s2 = it_start_conf(text, NULL);
    redisContext *c2 = it_connect(s2);
    expect_reply(c2, "[\"zset-max-listpack-entries\",\"64\"]", "CONFIG GET zset-max-listpack-entries");
    expect_reply(c2, "[\"set-max-intset-entries\",\"1000\"]", "CONFIG GET set-max-intset-entries");
    expect_reply(c2, "[\"notify-keyspace-events\",\"xKE\"]", "CONFIG GET notify-keyspace-events");
    expect_reply(c2, "[\"latency-tracking-info-percentiles\",\"50 99.99\"]",
                 "CONFIG GET latency-tracking-info-percentiles");
    expect_reply(c2, "[\"appendfsync\",\"always\"]", "CONFIG GET appendfsync");
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
    tcase_add_test(tc, test_family_file_lines_and_get);
    tcase_add_test(tc, test_family_set_commit_once_and_rollback);
    tcase_add_test(tc, test_family_sensitive_redacted);
    tcase_add_test(tc, test_rewrite_after_unload);
    tcase_add_test(tc, test_commit_rollback_recommits);
    tcase_add_test(tc, test_family_rewrite_unprefixed);
    tcase_add_test(tc, test_family_released_on_unload);
    tcase_add_test(tc, test_family_line_without_module_refused);
    tcase_add_test(tc, test_bounds_protect_clients);
    tcase_add_test(tc, test_rebind_new_port);
    tcase_add_test(tc, test_rebind_port_in_use_keeps_old);
    tcase_add_test(tc, test_rebind_bind_change);
    tcase_add_test(tc, test_port_zero);
    tcase_add_test(tc, test_config_get_compat);
    tcase_add_test(tc, test_compat_rewrite_round_trip);
    return s;
}

int main(void) {
    return it_run(config_suite());
}
