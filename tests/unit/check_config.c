/* check_config.c -- unit tests for core/config/config.c: defaults, memory
 * units, CONFIG SET validation and messages, immutable directives, loading
 * files (include, comments, quoting, errors with file:line, Valkey
 * directives Keel does not implement), command-line overrides,
 * client-output-buffer-limit, loadmodule lines and CONFIG GET formatting.
 *
 * Each test starts from config_set_defaults() on a zeroed srv and ends with
 * config_free(); config files live in a fresh temporary directory. */
#include "config/config.h"

#include "common/common.h"
#include "common/kmem.h"
#include "server/server.h"
#include "server/server_config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[256];

static void setup(void) {
    memset(&srv, 0, sizeof(srv));
    server_config_init();
    snprintf(g_dir, sizeof(g_dir), "/tmp/keel-check-config-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_dir));
}

static void teardown(void) {
    config_free();
    char cmd[320];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* ---- helpers -------------------------------------------------------------- */

/* Writes name in the temp dir; returns its path (static, one per slot). */
static const char *write_file(int slot, const char *name, const char *text) {
    static char paths[4][320];
    snprintf(paths[slot], sizeof(paths[slot]), "%s/%s", g_dir, name);
    FILE *f = fopen(paths[slot], "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    ck_assert_int_eq(fclose(f), 0);
    return paths[slot];
}

static void expect_get(const char *name, const char *want) {
    char buf[1024];
    memset(buf, 'X', sizeof(buf));
    ck_assert_msg(config_get(name, buf, sizeof(buf)) == 0, "config_get(%s) failed", name);
    ck_assert_msg(strcmp(buf, want) == 0, "config_get(%s) = \"%s\", want \"%s\"", name, buf, want);
}

static void expect_set_ok(const char *name, const char *value) {
    char *err = NULL;
    int rc = config_set(name, value, &err);
    ck_assert_msg(rc == 0, "config_set(%s, \"%s\") failed: %s", name, value, err ? err : "(no message)");
    ck_assert_ptr_null(err);
}

/* Fails to set, with an error containing want_sub, and leaves the value as it was. */
static void expect_set_err(const char *name, const char *value, const char *want_sub) {
    char before[1024], after[1024];
    int known = config_get(name, before, sizeof(before)) == 0;
    char *err = NULL;
    int rc = config_set(name, value, &err);
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", err ? err : "");
    km_free(err);
    ck_assert_msg(rc != 0, "config_set(%s, \"%s\") accepted", name, value);
    ck_assert_msg(msg[0], "config_set(%s, \"%s\") failed without a message", name, value);
    ck_assert_msg(strstr(msg, want_sub) != NULL, "config_set(%s, \"%s\") error \"%s\" lacks \"%s\"", name,
                  value, msg, want_sub);
    if (known) {
        ck_assert_int_eq(config_get(name, after, sizeof(after)), 0);
        ck_assert_msg(strcmp(before, after) == 0, "failed config_set(%s, \"%s\") changed \"%s\" to \"%s\"", name,
                      value, before, after);
    }
}

static int load(const char *path, const char *overrides, char *errbuf, size_t errlen) {
    char *err = NULL;
    int rc = config_load(path, overrides, &err);
    snprintf(errbuf, errlen, "%s", err ? err : "");
    km_free(err);
    return rc;
}

static void expect_mem(const char *s, unsigned long long want) {
    unsigned long long v = 12345;
    ck_assert_msg(config_parse_memory(s, &v) == 0, "config_parse_memory(\"%s\") failed", s);
    ck_assert_msg(v == want, "config_parse_memory(\"%s\") = %llu, want %llu", s, v, want);
}

static void expect_mem_err(const char *s) {
    unsigned long long v = 12345;
    ck_assert_msg(config_parse_memory(s, &v) != 0, "config_parse_memory(\"%s\") accepted (%llu)", s, v);
}

/* ---- defaults ------------------------------------------------------------ */

START_TEST(test_defaults) {
    ck_assert_int_eq(srv.port, 6379);
    ck_assert_int_eq(srv.db.databases, 16);
    ck_assert_int_eq(srv.db.maxmemory_policy, MAXMEMORY_NOEVICTION);
    ck_assert_int_eq(srv.hz, 10);
    ck_assert(srv.db.maxmemory == 0);
    ck_assert_int_eq(srv.db.maxmemory_samples, 5);
    ck_assert_int_eq(srv.maxclients, 10000);
    ck_assert_int_eq(srv.protected_mode, 1);
    ck_assert_int_eq(srv.session.tcp_keepalive, 300);
    ck_assert_int_eq(srv.log.verbosity, LL_NOTICE);
    ck_assert_int_eq(srv.active_expire_enabled, 1);
    ck_assert(srv.session.proto_max_bulk_len == 512LL * 1024 * 1024);
    ck_assert_ptr_null(srv.session.requirepass.ptr);
    ck_assert_int_eq(srv.bindaddr_count, 2);

    expect_get("port", "6379");
    expect_get("databases", "16");
    expect_get("maxmemory-policy", "noeviction");
    expect_get("hz", "10");
    expect_get("save", "");
    expect_get("appendonly", "no");
    expect_get("maxmemory", "0");
    expect_get("bind", "* -::*");
    expect_get("protected-mode", "yes");
    expect_get("loglevel", "notice");
    expect_get("requirepass", "");
    expect_get("proto-max-bulk-len", "536870912");
    expect_get("client-query-buffer-limit", "1073741824");
    expect_get("slowlog-log-slower-than", "10000");
    expect_get("enable-debug-command", "no");
    expect_get("client-output-buffer-limit",
               "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60");

    char buf[64];
    ck_assert_int_ne(config_get("no-such-directive", buf, sizeof(buf)), 0);
    /* names are case-insensitive */
    ck_assert_int_eq(config_get("MaxMemory-Policy", buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "noeviction");

    /* defaults are restored over changed values */
    expect_set_ok("hz", "50");
    expect_set_ok("maxmemory-policy", "allkeys-lru");
    server_config_init();
    ck_assert_int_eq(srv.hz, 10);
    ck_assert_int_eq(srv.db.maxmemory_policy, MAXMEMORY_NOEVICTION);
}
END_TEST

/* ---- memory values --------------------------------------------------------- */

START_TEST(test_parse_memory) {
    expect_mem("0", 0);
    expect_mem("100", 100);
    expect_mem("100b", 100);
    expect_mem("1k", 1000);
    expect_mem("1kb", 1024);
    expect_mem("1m", 1000000);
    expect_mem("1mb", 1048576);
    expect_mem("1g", 1000000000ULL);
    expect_mem("1gb", 1073741824ULL);
    expect_mem("2GB", 2147483648ULL);
    expect_mem("10Kb", 10240);
    expect_mem("3M", 3000000);
    expect_mem("18446744073709551615", 18446744073709551615ULL);

    expect_mem_err("");
    expect_mem_err("-1");
    expect_mem_err("-1gb");
    expect_mem_err("abc");
    expect_mem_err("gb");
    expect_mem_err("1x");
    expect_mem_err("1kbb");
    expect_mem_err("1tb");
    expect_mem_err("1.5gb");
    expect_mem_err("1 gb");
    expect_mem_err("1gb ");
    expect_mem_err("0x10");
    expect_mem_err("18446744073709551616");    /* overflows 64 bits */
    expect_mem_err("17179869184gb");          /* overflows after the unit */
}
END_TEST

/* Valkey's memtoull takes only digits before the unit: a sign or a leading
 * blank is an error there ("maxmemory +1" / "maxmemory ' 1'" are refused). */
START_TEST(test_parse_memory_strict_like_valkey) {
    const char *bad[] = {" 1", "+1", "+1gb", "\t100"};
    char accepted[256] = "";
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        unsigned long long v;
        if (config_parse_memory(bad[i], &v) == 0)
            snprintf(accepted + strlen(accepted), sizeof(accepted) - strlen(accepted), " \"%s\"=%llu", bad[i], v);
    }
    ck_assert_msg(accepted[0] == '\0', "config_parse_memory accepted:%s", accepted);
}
END_TEST

/* ---- CONFIG SET ---------------------------------------------------------------- */

START_TEST(test_set_valid) {
    expect_set_ok("hz", "100");
    ck_assert_int_eq(srv.hz, 100);
    expect_get("hz", "100");

    expect_set_ok("maxmemory", "1gb");
    ck_assert(srv.db.maxmemory == 1073741824ULL);
    expect_get("maxmemory", "1073741824");
    expect_set_ok("maxmemory", "100mb");
    expect_get("maxmemory", "104857600");
    expect_set_ok("maxmemory", "0");

    expect_set_ok("maxmemory-policy", "allkeys-lru");
    ck_assert_int_eq(srv.db.maxmemory_policy, MAXMEMORY_ALLKEYS_LRU);
    expect_set_ok("maxmemory-policy", "VOLATILE-TTL");
    ck_assert_int_eq(srv.db.maxmemory_policy, MAXMEMORY_VOLATILE_TTL);
    expect_get("maxmemory-policy", "volatile-ttl");

    expect_set_ok("protected-mode", "no");
    ck_assert_int_eq(srv.protected_mode, 0);
    expect_get("protected-mode", "no");
    expect_set_ok("protected-mode", "YES");
    ck_assert_int_eq(srv.protected_mode, 1);

    expect_set_ok("requirepass", "s3cret pass");
    ck_assert_str_eq(srv.session.requirepass.ptr, "s3cret pass");
    expect_get("requirepass", "s3cret pass");
    expect_set_ok("requirepass", "");
    ck_assert_ptr_null(srv.session.requirepass.ptr);

    expect_set_ok("slowlog-log-slower-than", "-1");
    ck_assert(srv.session.commandlog[0].threshold == -1);
    expect_get("commandlog-execution-slower-than", "-1");
    expect_set_ok("commandlog-reply-larger-than", "1024");
    ck_assert(srv.session.commandlog[2].threshold == 1024);
    expect_set_ok("maxmemory-samples", "64");
    expect_set_ok("maxmemory-samples", "1");
    expect_set_ok("hz", "500");
    expect_set_ok("hz", "1");
    expect_set_ok("timeout", "300");
    ck_assert_int_eq(srv.session.maxidletime, 300);
    expect_set_ok("loglevel", "warning");
    ck_assert_int_eq(srv.log.verbosity, LL_WARNING);
    expect_set_ok("save", "");
    expect_set_ok("appendonly", "no");
    expect_set_ok("proto-max-bulk-len", "1mb");
    ck_assert(srv.session.proto_max_bulk_len == 1048576);
}
END_TEST

START_TEST(test_set_invalid) {
    /* hz is a hint, as in Valkey: out-of-range values are clamped to 1..500,
     * negative ones refused */
    expect_set_ok("hz", "0");
    expect_get("hz", "1");
    expect_set_ok("hz", "501");
    expect_get("hz", "500");
    expect_set_err("hz", "-1", "argument must be between 0 and 2147483647 inclusive");
    expect_set_ok("hz", "10");
    expect_set_err("hz", "abc", "argument couldn't be parsed into an integer");
    expect_set_err("hz", "", "argument couldn't be parsed into an integer");
    expect_set_err("hz", "10abc", "argument couldn't be parsed into an integer");
    expect_set_err("maxmemory-samples", "65", "inclusive");
    expect_set_err("maxmemory-samples", "-1", "inclusive");
    expect_set_err("timeout", "-1", "inclusive");
    expect_set_err("active-expire-effort", "11", "inclusive");
    expect_set_err("maxclients", "0", "inclusive");
    expect_set_err("protected-mode", "maybe", "argument must be 'yes' or 'no'");
    expect_set_err("protected-mode", "1", "'yes' or 'no'");
    expect_set_err("maxmemory-policy", "lru", "must be one of");
    expect_set_err("loglevel", "chatty", "must be one of");
    expect_set_err("maxmemory", "1xb", "argument must be a memory value");
    expect_set_err("maxmemory", "-5", "memory value");
    expect_set_err("maxmemory", "99999999999999999999", "memory value");
    expect_set_err("save", "900 1", "no persistence");
    expect_set_err("appendonly", "yes", "no persistence");
    expect_set_err("no-such-option", "1", "Unknown option 'no-such-option'");
    /* known only to later Valkey versions: accepted from files, no row */
    expect_set_err("log-format", "legacy", "Unknown option");
    ck_assert_int_eq(srv.hz, 10);
    ck_assert_int_eq(srv.db.maxmemory_policy, MAXMEMORY_NOEVICTION);
}
END_TEST

START_TEST(test_set_immutable) {
    expect_set_err("tcp-backlog", "7000", "immutable");
    ck_assert_int_eq(srv.tcp_backlog, 511);
    expect_set_err("databases", "4", "immutable");
    ck_assert_int_eq(srv.db.databases, 16);
    expect_set_err("unixsocketperm", "700", "immutable");
    expect_set_err("daemonize", "yes", "immutable");
    expect_set_err("unixsocket", "/tmp/x.sock", "immutable");
    expect_set_err("enable-debug-command", "yes", "immutable");
    expect_set_err("loadmodule", "/tmp/x.so", "immutable");
    ck_assert_ptr_null(config_module_lines());
    /* immutable directives are still settable from a file */
    char err[512];
    ck_assert_int_eq(load(NULL, "port 7000\ndatabases 4\n", err, sizeof(err)), 0);
    ck_assert_int_eq(srv.port, 7000);
    ck_assert_int_eq(srv.db.databases, 4);
}
END_TEST

/* ---- client-output-buffer-limit ----------------------------------------------- */

START_TEST(test_obuf_limit) {
    expect_set_ok("client-output-buffer-limit", "normal 10mb 5mb 30");
    ck_assert(srv.session.obuf_limit_normal.hard == 10485760ULL);
    ck_assert(srv.session.obuf_limit_normal.soft == 5242880ULL);
    ck_assert(srv.session.obuf_limit_normal.soft_seconds == 30);
    expect_get("client-output-buffer-limit",
               "normal 10485760 5242880 30 slave 268435456 67108864 60 pubsub 33554432 8388608 60");

    /* several classes at once; the class name is case-insensitive */
    expect_set_ok("client-output-buffer-limit", "pubsub 32mb 8mb 60 NORMAL 1k 0 0 replica 256mb 64mb 60");
    ck_assert(srv.session.obuf_limit_normal.hard == 1000);
    ck_assert(srv.session.obuf_limit_normal.soft == 0);
    ck_assert(srv.session.obuf_limit_normal.soft_seconds == 0);
    expect_set_ok("client-output-buffer-limit", "slave 1 1 1");

    expect_set_err("client-output-buffer-limit", "normal 1 2", "Wrong number of arguments");
    expect_set_err("client-output-buffer-limit", "bogus 1 1 1", "Invalid client class");
    expect_set_err("client-output-buffer-limit", "master 1 1 1", "Invalid client class");
    expect_set_err("client-output-buffer-limit", "normal x 1 1", "Error in hard, soft or soft_seconds");
    expect_set_err("client-output-buffer-limit", "normal 1 1 -1", "soft_seconds");
    expect_set_err("client-output-buffer-limit", "normal 1 1 1s", "soft_seconds");
    ck_assert(srv.session.obuf_limit_normal.hard == 1000);

    /* from a file, each class on its own line (stock valkey.conf) */
    char err[512];
    const char *p = write_file(0, "obuf.conf",
                               "client-output-buffer-limit normal 0 0 0\n"
                               "client-output-buffer-limit replica 256mb 64mb 60\n"
                               "client-output-buffer-limit pubsub 32mb 8mb 60\n");
    ck_assert_int_eq(load(p, NULL, err, sizeof(err)), 0);
    ck_assert(srv.session.obuf_limit_normal.hard == 0);
}
END_TEST

/* Valkey validates every class before applying any (all or nothing): a bad
 * class later in the value must leave "normal" as it was. */
START_TEST(test_obuf_limit_all_or_nothing) {
    expect_set_ok("client-output-buffer-limit", "normal 1mb 1mb 10");
    expect_set_err("client-output-buffer-limit", "normal 2mb 2mb 20 bogus 1 1 1", "Invalid client class");
    expect_set_err("client-output-buffer-limit", "normal 3mb 3mb 30 pubsub x 1 1", "soft_seconds");
    ck_assert(srv.session.obuf_limit_normal.hard == 1048576ULL);
    ck_assert(srv.session.obuf_limit_normal.soft_seconds == 10);
}
END_TEST

/* ---- loading files ------------------------------------------------------------- */

START_TEST(test_load_file_include) {
    char inc_line[400];
    const char *extra = write_file(1, "extra.conf",
                                   "# the included file\n"
                                   "maxmemory 100mb\n"
                                   "hz 30\n");
    snprintf(inc_line, sizeof(inc_line), "include %s\n", extra);
    char text[2048];
    snprintf(text, sizeof(text),
             "# a comment\n"
             "   # an indented comment\n"
             "\n"
             "port 7000\r\n"
             "hz 20\n"
             "requirepass \"pa ss\\\"word\"\n"
             "logfile ''\n"
             "%s"
             "maxmemory-policy 'allkeys-lfu'\n"
             "PROTECTED-MODE no\n"
             "\tmaxmemory-samples 7   \n",
             inc_line);
    const char *main_conf = write_file(0, "main.conf", text);
    char err[512];
    ck_assert_msg(load(main_conf, NULL, err, sizeof(err)) == 0, "load failed: %s", err);
    ck_assert_int_eq(srv.port, 7000);
    ck_assert_int_eq(srv.hz, 30); /* the include is read in place, after "hz 20" */
    ck_assert(srv.db.maxmemory == 104857600ULL);
    ck_assert_str_eq(srv.session.requirepass.ptr, "pa ss\"word");
    ck_assert_ptr_null(srv.log.logfile);
    ck_assert_int_eq(srv.db.maxmemory_policy, MAXMEMORY_ALLKEYS_LFU);
    ck_assert_int_eq(srv.protected_mode, 0);
    ck_assert_int_eq(srv.db.maxmemory_samples, 7);
}
END_TEST

START_TEST(test_load_unknown_directive) {
    const char *p = write_file(0, "bad.conf", "port 7000\n\n# comment\nbogus-directive 1 2\nhz 20\n");
    char err[512], want[400];
    ck_assert_int_ne(load(p, NULL, err, sizeof(err)), 0);
    snprintf(want, sizeof(want), "%s:4:", p);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "error \"%s\" does not start with \"%s\"", err, want);
    ck_assert_msg(strstr(err, "bogus-directive") != NULL, "error \"%s\" does not name the directive", err);
    ck_assert_int_eq(srv.port, 7000); /* lines before the error were applied */
    ck_assert_int_eq(srv.hz, 10);     /* lines after were not */

    /* an error inside an included file names that file and its line */
    const char *inc = write_file(1, "inc.conf", "hz 15\nnot-a-directive\n");
    char text[400];
    snprintf(text, sizeof(text), "port 7001\ninclude %s\n", inc);
    const char *top = write_file(2, "top.conf", text);
    ck_assert_int_ne(load(top, NULL, err, sizeof(err)), 0);
    snprintf(want, sizeof(want), "%s:2:", inc);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "error \"%s\" does not start with \"%s\"", err, want);
    ck_assert_ptr_nonnull(strstr(err, "not-a-directive"));

    /* a missing file */
    snprintf(text, sizeof(text), "%s/missing.conf", g_dir);
    ck_assert_int_ne(load(text, NULL, err, sizeof(err)), 0);
    ck_assert_ptr_nonnull(strstr(err, "missing.conf"));
}
END_TEST

START_TEST(test_load_bad_values) {
    char err[512], want[400];
    const char *p = write_file(0, "v.conf", "hz 20\nhz -5\n");
    ck_assert_int_ne(load(p, NULL, err, sizeof(err)), 0);
    snprintf(want, sizeof(want), "%s:2:", p);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "error \"%s\" does not start with \"%s\"", err, want);
    ck_assert_msg(strstr(err, "hz") && strstr(err, "between 0 and 2147483647 inclusive"),
                  "error \"%s\"", err);

    p = write_file(1, "w.conf", "port\n");
    ck_assert_int_ne(load(p, NULL, err, sizeof(err)), 0);
    ck_assert_msg(strstr(err, ":1:") && strstr(err, "wrong number of arguments"), "error \"%s\"", err);

    p = write_file(2, "x.conf", "maxmemory-policy lru\n");
    ck_assert_int_ne(load(p, NULL, err, sizeof(err)), 0);
    ck_assert_msg(strstr(err, ":1:") && strstr(err, "maxmemory-policy"), "error \"%s\"", err);

    p = write_file(3, "y.conf", "save 900 1\n");
    ck_assert_int_ne(load(p, NULL, err, sizeof(err)), 0);
    ck_assert_msg(strstr(err, "no persistence"), "error \"%s\"", err);

    p = write_file(3, "z.conf", "requirepass \"unterminated\n");
    ck_assert_int_ne(load(p, NULL, err, sizeof(err)), 0);
    ck_assert_msg(strstr(err, ":1:") && strstr(err, "quotes"), "error \"%s\"", err);
}
END_TEST

/* A trimmed stock valkey.conf: directives Keel does not implement are
 * accepted with a warning; the ones it implements take effect. */
START_TEST(test_load_stock_valkey_conf) {
    const char *p = write_file(0, "valkey.conf",
                               "# Valkey configuration file example.\n"
                               "bind 127.0.0.1 -::1\n"
                               "protected-mode yes\n"
                               "port 6380\n"
                               "tcp-backlog 511\n"
                               "timeout 0\n"
                               "tcp-keepalive 300\n"
                               "daemonize no\n"
                               "supervised no\n"
                               "pidfile \"\"\n"
                               "loglevel notice\n"
                               "logfile \"\"\n"
                               "databases 16\n"
                               "always-show-logo no\n"
                               "set-proc-title yes\n"
                               "proc-title-template \"{title} {listen-addr} {server-mode}\"\n"
                               "save \"\"\n"
                               "stop-writes-on-bgsave-error yes\n"
                               "rdbcompression yes\n"
                               "rdbchecksum yes\n"
                               "dbfilename dump.rdb\n"
                               "dir ./\n"
                               "replica-serve-stale-data yes\n"
                               "replica-read-only yes\n"
                               "repl-diskless-sync yes\n"
                               "maxmemory 2gb\n"
                               "maxmemory-policy allkeys-lru\n"
                               "maxmemory-samples 5\n"
                               "lazyfree-lazy-eviction no\n"
                               "lazyfree-lazy-expire no\n"
                               "lazyfree-lazy-server-del no\n"
                               "lazyfree-lazy-user-del no\n"
                               "lazyfree-lazy-user-flush no\n"
                               "appendonly no\n"
                               "appendfilename \"appendonly.aof\"\n"
                               "appenddirname \"appendonlydir\"\n"
                               "appendfsync everysec\n"
                               "no-appendfsync-on-rewrite no\n"
                               "auto-aof-rewrite-percentage 100\n"
                               "auto-aof-rewrite-min-size 64mb\n"
                               "slowlog-log-slower-than 10000\n"
                               "slowlog-max-len 128\n"
                               "latency-monitor-threshold 0\n"
                               "notify-keyspace-events \"\"\n"
                               "hash-max-listpack-entries 128\n"
                               "hash-max-listpack-value 64\n"
                               "list-max-listpack-size -2\n"
                               "list-compress-depth 0\n"
                               "set-max-intset-entries 512\n"
                               "zset-max-listpack-entries 128\n"
                               "hll-sparse-max-bytes 3000\n"
                               "stream-node-max-bytes 4096\n"
                               "activerehashing yes\n"
                               "client-output-buffer-limit normal 0 0 0\n"
                               "client-output-buffer-limit replica 256mb 64mb 60\n"
                               "client-output-buffer-limit pubsub 32mb 8mb 60\n"
                               "hz 10\n"
                               "dynamic-hz yes\n"
                               "aof-rewrite-incremental-fsync yes\n"
                               "rdb-save-incremental-fsync yes\n"
                               "jemalloc-bg-thread yes\n");
    char err[512];
    ck_assert_msg(load(p, NULL, err, sizeof(err)) == 0, "stock valkey.conf refused: %s", err);
    ck_assert_int_eq(srv.port, 6380);
    expect_get("bind", "127.0.0.1 -::1");
    ck_assert(srv.db.maxmemory == 2147483648ULL);
    ck_assert_int_eq(srv.db.maxmemory_policy, MAXMEMORY_ALLKEYS_LRU);
    ck_assert_ptr_null(srv.pidfile);
    expect_get("save", "");
    expect_get("appendonly", "no");
}
END_TEST

START_TEST(test_load_overrides) {
    const char *p = write_file(0, "o.conf", "port 7000\nmaxmemory 10mb\nhz 20\n");
    char err[512];
    ck_assert_msg(load(p, "port 7001\nmaxmemory 1gb\n", err, sizeof(err)) == 0, "load failed: %s", err);
    ck_assert_int_eq(srv.port, 7001);
    ck_assert(srv.db.maxmemory == 1073741824ULL);
    ck_assert_int_eq(srv.hz, 20); /* not overridden */
    expect_get("maxmemory", "1073741824");

    /* overrides alone, with quoting */
    ck_assert_int_eq(load(NULL, "requirepass \"a b\"\nmaxmemory-policy volatile-lru\n", err, sizeof(err)), 0);
    ck_assert_str_eq(srv.session.requirepass.ptr, "a b");
    ck_assert_int_eq(srv.db.maxmemory_policy, MAXMEMORY_VOLATILE_LRU);

    /* an error in the overrides is labelled as such */
    ck_assert_int_ne(load(NULL, "hz 20\nnonsense 1\n", err, sizeof(err)), 0);
    ck_assert_msg(strncmp(err, "(command line):2:", 17) == 0, "error \"%s\"", err);
    ck_assert_ptr_nonnull(strstr(err, "nonsense"));
}
END_TEST

START_TEST(test_loadmodule_lines) {
    const char *p = write_file(0, "m.conf", "port 7000\nloadmodule /opt/mods/a.so x 'y z'\nloadmodule /opt/b.so\n");
    char err[512];
    ck_assert_msg(load(p, NULL, err, sizeof(err)) == 0, "load failed: %s", err);
    config_module_line *m = config_module_lines();
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(m->path, "/opt/mods/a.so");
    ck_assert_int_eq(m->argc, 2);
    ck_assert_str_eq(m->argv[0], "x");
    ck_assert_str_eq(m->argv[1], "y z");
    ck_assert_str_eq(m->file, p);
    ck_assert_int_eq(m->line, 2);
    ck_assert_ptr_nonnull(m->next);
    ck_assert_str_eq(m->next->path, "/opt/b.so");
    ck_assert_int_eq(m->next->argc, 0);
    ck_assert_int_eq(m->next->line, 3);
    ck_assert_ptr_null(m->next->next);

    /* from the command line */
    ck_assert_int_eq(load(NULL, "loadmodule /c.so 1\n", err, sizeof(err)), 0);
    ck_assert_str_eq(m->next->next->path, "/c.so");
    ck_assert_str_eq(m->next->next->file, "(command line)");

    config_free();
    ck_assert_ptr_null(config_module_lines());
    server_config_init();
}
END_TEST

START_TEST(test_get_formatting) {
    expect_set_ok("maxmemory", "1gb");
    expect_get("maxmemory", "1073741824");
    expect_set_ok("maxmemory", "1k");
    expect_get("maxmemory", "1000");
    expect_set_ok("client-query-buffer-limit", "2mb");
    expect_get("client-query-buffer-limit", "2097152");
    /* "1k" style numbers are accepted for integer directives too */
    expect_set_ok("tcp-keepalive", "1k");
    expect_get("tcp-keepalive", "1000");
    expect_set_err("maxmemory-samples", "1k", "between 1 and 64 inclusive"); /* 1000 > 64 */
}
END_TEST

START_TEST(test_get_formatting_misc) {
    char err[512];
    ck_assert_int_eq(load(NULL, "unixsocketperm 700\nunixsocket /tmp/k.sock\n", err, sizeof(err)), 0);
    expect_get("unixsocketperm", "700");
    ck_assert_uint_eq(srv.unixsocketperm, 0700);
    expect_get("unixsocket", "/tmp/k.sock");
    ck_assert_int_ne(load(NULL, "unixsocketperm 800\n", err, sizeof(err)), 0);
    ck_assert_int_eq(load(NULL, "enable-debug-command local\n", err, sizeof(err)), 0);
    expect_get("enable-debug-command", "local");
    ck_assert_int_eq(srv.enable_debug_cmd, 2);
    expect_set_ok("slowlog-max-len", "1000");
    expect_get("slowlog-max-len", "1000");

    /* a small buffer truncates, NUL-terminated */
    char small[5];
    ck_assert_int_eq(config_get("maxmemory-policy", small, sizeof(small)), 0);
    ck_assert_str_eq(small, "noev");
}
END_TEST

/* ---- hostile values: CONFIG REWRITE round trips, NUL bytes, bounds ------ */

/* An override text "name "\xHH...\xHH"\n" that the reader unescapes into
 * exactly the len bytes of value. */
static char *escaped_line(const char *name, const char *value, size_t len) {
    char *t = km_alloc(strlen(name) + 4 * len + 8);
    size_t o = (size_t)sprintf(t, "%s \"", name);
    for (size_t i = 0; i < len; i++)
        o += (size_t)sprintf(t + o, "\\x%02x", (unsigned char)value[i]);
    sprintf(t + o, "\"\n");
    return t;
}

typedef struct snapshot {
    size_t n;
    const char *names[512];
    char *values[512];
    size_t lens[512];
} snapshot;

static void snapshot_take(snapshot *sn) {
    sn->n = config_names(sn->names, 512);
    ck_assert_uint_lt(sn->n, 512);
    for (size_t i = 0; i < sn->n; i++) {
        sn->values[i] = config_get_value(sn->names[i], &sn->lens[i]);
        ck_assert_ptr_nonnull(sn->values[i]);
    }
}

static void snapshot_free(snapshot *sn) {
    for (size_t i = 0; i < sn->n; i++)
        km_free(sn->values[i]);
}

/* Every directive's value now equals the snapshot's, byte for byte. */
static void snapshot_expect(const snapshot *sn, const char *what) {
    for (size_t i = 0; i < sn->n; i++) {
        size_t len;
        char *v = config_get_value(sn->names[i], &len);
        ck_assert_msg(len == sn->lens[i] && memcmp(v, sn->values[i], len) == 0,
                      "%s: '%s' came back as %zu bytes, was %zu", what, sn->names[i], len,
                      sn->lens[i]);
        km_free(v);
    }
}

/* Rewrites an empty config file, starts again from the defaults and loads
 * it; asserts that every value came back and nothing else appeared. */
static void rewrite_and_reload(const char *what) {
    snapshot before;
    snapshot_take(&before);
    const char *path = write_file(3, "rewrite.conf", "");
    char *err = NULL;
    ck_assert_msg(config_rewrite_file(path, &err) == 0, "%s: rewrite failed: %s", what, err);
    config_free();
    memset(&srv, 0, sizeof(srv));
    server_config_init();
    char msg[512];
    ck_assert_msg(load(path, NULL, msg, sizeof(msg)) == 0,
                  "%s: the rewritten file does not load: %s", what, msg);
    snapshot_expect(&before, what);
    ck_assert_msg(config_module_lines() == NULL, "%s: a loadmodule line appeared", what);
    ck_assert_msg(config_rename_lines() == NULL, "%s: a rename-command line appeared", what);
    snapshot_free(&before);
}

START_TEST(test_rewrite_every_byte) {
    /* each byte value alone, between others, then all 256 in one value */
    for (int b = 0; b < 256; b++) {
        char v[4] = {'a', (char)b, 'z', (char)b};
        char *err = NULL;
        ck_assert_int_eq(config_set_bytes("requirepass", v, sizeof(v), &err), 0);
        rewrite_and_reload("requirepass with one byte value");
        ck_assert_uint_eq(srv.session.requirepass.len, 4);
        ck_assert_int_eq(memcmp(srv.session.requirepass.ptr, v, 4), 0);
    }
    char all[256];
    for (int b = 0; b < 256; b++)
        all[b] = (char)(255 - b);
    char *err = NULL;
    ck_assert_int_eq(config_set_bytes("requirepass", all, sizeof(all), &err), 0);
    rewrite_and_reload("requirepass with every byte");
    ck_assert_uint_eq(srv.session.requirepass.len, 256);
    ck_assert_int_eq(memcmp(srv.session.requirepass.ptr, all, 256), 0);
}
END_TEST

/* Values an attacker with CONFIG SET (or a careless operator's file) would
 * try: line ends that would turn the rest into directives, quotes, escapes,
 * comment and include starts, and lengths past any fixed buffer. */
static const char *const hostile[] = {
    "x\nloadmodule /tmp/evil.so",
    "\r\nenable-debug-command yes\r\nenable-module-command yes\n",
    "\"\nprotected-mode no\n\"",
    "' \\\" \\x41 \\",
    "# not a comment",
    "include /etc/passwd",
    "a b\tc\vd\fe",
    "",
};

START_TEST(test_rewrite_hostile_every_directive) {
    char long_value[9000];
    for (size_t i = 0; i < sizeof(long_value); i++)
        long_value[i] = i % 97 == 96 ? '\n' : (char)('a' + i % 26);
    for (size_t h = 0; h <= K_ARRAY_LEN(hostile); h++) {
        const char *v = h < K_ARRAY_LEN(hostile) ? hostile[h] : long_value;
        size_t len = h < K_ARRAY_LEN(hostile) ? strlen(v) : sizeof(long_value);
        const char *names[512];
        size_t n = config_names(names, 512), accepted = 0;
        for (size_t i = 0; i < n; i++) {
            char *line = escaped_line(names[i], v, len), msg[512];
            accepted += load(NULL, line, msg, sizeof(msg)) == 0;
            km_free(line);
        }
        ck_assert_uint_gt(accepted, 0); /* at least the string directives took it */
        rewrite_and_reload(v);
        expect_get("enable-debug-command", "no");
        expect_get("enable-module-command", "no");
        expect_get("protected-mode", "yes");
    }
}
END_TEST

START_TEST(test_values_keep_every_byte) {
    /* a 2,000-byte password with a NUL inside: CONFIG GET and the file keep
     * it whole */
    char pass[2000];
    for (size_t i = 0; i < sizeof(pass); i++)
        pass[i] = (char)('A' + i % 23);
    pass[700] = '\0';
    char *err = NULL;
    ck_assert_int_eq(config_set_bytes("requirepass", pass, sizeof(pass), &err), 0);
    size_t len;
    char *v = config_get_value("requirepass", &len);
    ck_assert_uint_eq(len, sizeof(pass));
    ck_assert_int_eq(memcmp(v, pass, len), 0);
    km_free(v);
    rewrite_and_reload("2000-byte password");
    ck_assert_uint_eq(srv.session.requirepass.len, sizeof(pass));
    ck_assert_int_eq(memcmp(srv.session.requirepass.ptr, pass, sizeof(pass)), 0);
}
END_TEST

START_TEST(test_nul_refused_outside_binary_values) {
    char *err = NULL;
    ck_assert_int_ne(config_set_bytes("maxmemory", "100\0mb", 6, &err), 0);
    ck_assert_ptr_nonnull(strstr(err, "NUL"));
    km_free(err);
    err = NULL;
    ck_assert_int_ne(config_set_bytes("maxmemory-policy", "noeviction\0x", 12, &err), 0);
    km_free(err);
    expect_get("maxmemory", "0");
    char msg[512];
    ck_assert_int_ne(load(NULL, "port \"80\\x00junk\"\n", msg, sizeof(msg)), 0);
    ck_assert_msg(strstr(msg, "NUL"), "error \"%s\"", msg);
    ck_assert_int_ne(load(NULL, "pidfile \"/tmp/a\\x00b\"\n", msg, sizeof(msg)), 0);
    ck_assert_int_eq(srv.port, 6379);
    ck_assert_ptr_null(srv.pidfile);
}
END_TEST

START_TEST(test_bounds_like_valkey) {
    /* below 1mb every client would be refused or closed */
    expect_set_err("proto-max-bulk-len", "0",
                   "argument must be between 1048576 and 9223372036854775807 inclusive");
    expect_set_err("proto-max-bulk-len", "1048575", "between 1048576");
    expect_set_ok("proto-max-bulk-len", "1mb");
    expect_set_err("client-query-buffer-limit", "0", "between 1048576");
    expect_set_err("client-query-buffer-limit", "1000kb", "between 1048576");
    expect_set_ok("client-query-buffer-limit", "1mb");
    /* soft seconds beyond an int overflow the limit check */
    expect_set_err("client-output-buffer-limit", "normal 0 1mb 9223372036854775807",
                   "soft_seconds");
    expect_set_err("client-output-buffer-limit", "normal 0 1mb 2147483648", "soft_seconds");
    expect_set_err("client-output-buffer-limit", "normal 0 1mb 99999999999999999999",
                   "soft_seconds");
    expect_set_ok("client-output-buffer-limit", "normal 0 1mb 2147483647");
    /* more words than CONFIG SET splits are refused, never cut */
    char many[1024] = "";
    for (int i = 0; i < 17; i++) strcat(many, "normal 0 1mb 60 ");
    expect_set_err("client-output-buffer-limit", many, "too many arguments");
    char msg[512];
    ck_assert_int_ne(load(NULL, "proto-max-bulk-len 0\n", msg, sizeof(msg)), 0);
    ck_assert_int_ne(load(NULL, "client-query-buffer-limit 10\n", msg, sizeof(msg)), 0);
}
END_TEST

/* Protective directives Keel does not implement stop the start-up with the
 * file, line and directive named; their harmless values are accepted. */
START_TEST(test_refused_directives) {
    static const char *const refused[] = {
        "user default off",
        "aclfile /etc/valkey/users.acl",
        "replicaof 10.0.0.1 6379",
        "slaveof 10.0.0.1 6379",
        "min-replicas-to-write 1",
        "cluster-enabled yes",
        "maxmemory-clients 10%",
        "unixsocketgroup valkey",
        "sentinel monitor m 1.2.3.4 6379 2",
    };
    for (size_t i = 0; i < K_ARRAY_LEN(refused); i++) {
        char text[128], msg[512], want[400];
        snprintf(text, sizeof(text), "port 7001\n%s\n", refused[i]);
        const char *p = write_file(0, "refused.conf", text);
        ck_assert_msg(load(p, NULL, msg, sizeof(msg)) != 0, "'%s' was accepted", refused[i]);
        char name[32];
        sscanf(refused[i], "%31s", name);
        snprintf(want, sizeof(want), "%s:2: '%s' is not supported: ", p, name);
        ck_assert_msg(strncmp(msg, want, strlen(want)) == 0,
                      "error \"%s\" does not start with \"%s\"", msg, want);
    }
    char msg[512];
    ck_assert_msg(load(NULL, "cluster-enabled no\nmin-replicas-to-write 0\nmaxmemory-clients 0\n",
                       msg, sizeof(msg)) == 0,
                  "harmless values refused: %s", msg);
}
END_TEST

START_TEST(test_rename_command_lines) {
    char msg[512];
    ck_assert_int_eq(load(NULL, "rename-command FLUSHALL \"\"\nrename-command config k-config\n",
                          msg, sizeof(msg)),
                     0);
    const config_rename_line *r = config_rename_lines();
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->from, "FLUSHALL");
    ck_assert_str_eq(r->to, "");
    ck_assert_int_eq(r->line, 1);
    ck_assert_ptr_nonnull(r->next);
    ck_assert_str_eq(r->next->to, "k-config");
    ck_assert_ptr_null(r->next->next);
    ck_assert_int_ne(load(NULL, "rename-command get\n", msg, sizeof(msg)), 0);
    expect_set_err("rename-command", "get x", "immutable");
}
END_TEST


/* ---- apply hooks that fail, the compatibility rows ----------------------- */

static int apply_calls;
static int test_number;
static char *test_words;

/* Refuses 13 (a rebind that could not listen). */
static int apply_refuse_13(const char **err) {
    apply_calls++;
    if (test_number != 13) return K_OK;
    *err = "Unable to listen on this port. Check server logs.";
    return K_ERR;
}

static int set_words(const config_def *d, int argc, char **argv, const char **err) {
    size_t n = 1;
    for (int i = 0; i < argc; i++) n += strlen(argv[i]) + 1;
    char *w = km_calloc(1, n);
    for (int i = 0; i < argc; i++) {
        if (i) strcat(w, " ");
        strcat(w, argv[i]);
    }
    km_free(test_words);
    test_words = w;
    return K_OK;
}

static void get_words(const config_def *d, config_out *o) {
    config_out_cstr(o, test_words ? test_words : "");
}

static int apply_refuse_bad(const char **err) {
    if (!test_words || !strstr(test_words, "bad")) return K_OK;
    *err = "Failed to bind to specified addresses.";
    return K_ERR;
}

static void free_words(const config_def *d) {
    km_free(test_words);
    test_words = NULL;
}

static const config_def apply_table[] = {
    {.name = "test-number", .kind = CFG_INT, .value = &test_number, .dflt = "1", .min = 0, .max = 100,
     .apply = apply_refuse_13},
    {.name = "test-words", .kind = CFG_SPECIAL, .dflt = "a b", .set = set_words, .get = get_words,
     .apply = apply_refuse_bad, .free = free_words},
};

START_TEST(test_failed_apply_restores) {
    ck_assert_int_eq(config_register(apply_table, K_ARRAY_LEN(apply_table)), 0);
    config_set_defaults();
    apply_calls = 0;
    expect_set_ok("test-number", "7");
    ck_assert_int_eq(apply_calls, 1);
    expect_set_err("test-number", "13", "Unable to listen on this port");
    ck_assert_int_eq(test_number, 7); /* the old value, not applied again */
    ck_assert_int_eq(apply_calls, 2);
    expect_set_ok("test-words", "x y z");
    expect_get("test-words", "x y z");
    expect_set_err("test-words", "x bad", "Failed to bind");
    expect_get("test-words", "x y z"); /* restored word by word */
    /* a file sets without applying: start-up opens what it configures */
    char msg[512];
    ck_assert_int_eq(load(NULL, "test-number 13\n", msg, sizeof(msg)), 0);
    ck_assert_int_eq(test_number, 13);
    ck_assert_int_eq(apply_calls, 2);
}
END_TEST

START_TEST(test_bind_port_settable) {
    /* Not listening yet (no event loop): the change is kept for start-up. */
    expect_set_ok("port", "7001");
    ck_assert_int_eq(srv.port, 7001);
    expect_set_ok("bind", "127.0.0.1 -::1");
    expect_get("bind", "127.0.0.1 -::1");
    expect_set_ok("bind", "");
    ck_assert_int_eq(srv.bindaddr_count, 0);
    expect_set_err("port", "65536", "argument must be between 0 and 65535 inclusive");
    expect_set_err("bind", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17", "Too many bind addresses");
    ck_assert_int_eq(srv.port, 7001);
}
END_TEST

START_TEST(test_encoding_knobs) {
    /* Valkey 8.0.1's defaults, in the keyspace's type_options */
    const type_options *t = &srv.db.types;
    ck_assert_int_eq(t->hash_max_listpack_entries, 512);
    ck_assert_uint_eq(t->hash_max_listpack_value, 64);
    ck_assert_int_eq(t->list_max_listpack_size, -2);
    ck_assert_int_eq(t->list_compress_depth, 0);
    ck_assert_int_eq(t->set_max_intset_entries, 512);
    ck_assert_int_eq(t->set_max_listpack_entries, 128);
    ck_assert_int_eq(t->set_max_listpack_value, 64);
    ck_assert_int_eq(t->zset_max_listpack_entries, 128);
    ck_assert_uint_eq(t->zset_max_listpack_value, 64);
    ck_assert_uint_eq(t->stream_node_max_bytes, 4096);
    ck_assert_int_eq(t->stream_node_max_entries, 100);
    ck_assert_uint_eq(t->hll_sparse_max_bytes, 3000);
    expect_get("list-max-ziplist-size", "-2");
    /* an alias sets the same value */
    expect_set_ok("hash-max-ziplist-entries", "100");
    expect_get("hash-max-listpack-entries", "100");
    expect_set_ok("zset-max-ziplist-value", "1kb");
    ck_assert_uint_eq(t->zset_max_listpack_value, 1024);
    expect_set_ok("list-max-listpack-size", "-5");
    ck_assert_int_eq(t->list_max_listpack_size, -5);
    expect_set_err("list-compress-depth", "-1", "argument must be between 0 and 2147483647 inclusive");
    expect_set_err("set-max-intset-entries", "x", "argument couldn't be parsed into an integer");
    expect_set_err("hll-sparse-max-bytes", "-1", "argument must be a memory value");
    expect_set_err("list-max-listpack-size", "1.5", "argument couldn't be parsed into an integer");
}
END_TEST

START_TEST(test_compat_rows) {
    /* defaults and errors as in Valkey 8.0.1 */
    expect_get("appendfsync", "everysec");
    expect_get("repl-backlog-size", "10485760");
    expect_get("dbfilename", "dump.rdb");
    expect_get("proc-title-template", "{title} {listen-addr} {server-mode}");
    expect_get("syslog-ident", "valkey");
    expect_get("oom-score-adj-values", "0 200 800");
    expect_get("latency-tracking-info-percentiles", "50 99 99.9");
    expect_get("shutdown-on-sigterm", "default");
    expect_get("notify-keyspace-events", "");
    expect_get("lazyfree-lazy-eviction", "yes");
    expect_get("replica-read-only", "yes");
    expect_get("slave-read-only", "yes");
    expect_set_err("appendfsync", "sometimes",
                   "argument(s) must be one of the following: everysec, always, no");
    expect_set_err("repl-timeout", "0", "argument must be between 1 and 2147483647 inclusive");
    expect_set_err("rdbchecksum", "no", "can't set immutable config");
    expect_set_ok("appendfsync", "always");
    expect_get("appendfsync", "always");
    expect_set_ok("masterauth", "secret");
    expect_get("primaryauth", "secret");
    ck_assert(config_is_secret("masterauth"));
    ck_assert(config_is_protected("dir") && config_is_protected("dbfilename"));
    expect_set_ok("notify-keyspace-events", "KEA");
    expect_get("notify-keyspace-events", "AKE");
    expect_set_ok("notify-keyspace-events", "Exg$");
    expect_get("notify-keyspace-events", "g$xE");
    expect_set_err("notify-keyspace-events", "KEq", "Invalid event class character");
    expect_set_ok("latency-tracking-info-percentiles", "50 99.99 100");
    expect_get("latency-tracking-info-percentiles", "50 99.99 100");
    expect_set_ok("latency-tracking-info-percentiles", "");
    expect_get("latency-tracking-info-percentiles", "");
    expect_set_err("latency-tracking-info-percentiles", "101", "should sit between [0.0,100.0]");
    expect_set_err("oom-score-adj-values", "0 200 3000", "between -2000 and 2000");
    expect_set_ok("shutdown-on-sigint", "nosave now");
    expect_get("shutdown-on-sigint", "now nosave");
    expect_set_err("shutdown-on-sigint", "save nosave", "can't be used simultaneously");
    /* replicaof answers "" as a primary does; setting it is refused */
    expect_get("replicaof", "");
    expect_get("slaveof", "");
    expect_set_err("replicaof", "127.0.0.1 6380", "can't set immutable config");
    /* refused directives keep the value that asks for nothing */
    expect_get("cluster-enabled", "no");
    expect_set_err("min-slaves-to-write", "1", "replication is not available");
    expect_set_ok("maxmemory-clients", "0");
    char msg[512];
    ck_assert_int_eq(load(NULL, "cluster-enabled no\n", msg, sizeof(msg)), 0);
    ck_assert_int_ne(load(NULL, "cluster-enabled yes\n", msg, sizeof(msg)), 0);
    ck_assert_msg(strstr(msg, "'cluster-enabled' is not supported"), "error \"%s\"", msg);
    ck_assert_int_ne(load(NULL, "replicaof 127.0.0.1 6380\n", msg, sizeof(msg)), 0);
    ck_assert_msg(strstr(msg, "'replicaof' is not supported"), "error \"%s\"", msg);
}
END_TEST

START_TEST(test_compat_rewrite) {
    /* Changed rows are written, defaults (negative ones too) and refused
     * rows are not, and everything reads back. */
    expect_set_ok("appendfsync", "no");
    expect_set_ok("hash-max-listpack-entries", "64");
    expect_set_ok("notify-keyspace-events", "Kx");
    expect_set_ok("oom-score-adj-values", "1 2 3");
    const char *path = write_file(2, "compat.conf", "# top\nlist-max-ziplist-size -2\n");
    char *err = NULL;
    ck_assert_msg(config_rewrite_file(path, &err) == 0, "rewrite failed: %s", err);
    FILE *f = fopen(path, "r");
    char text[8192];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    ck_assert_msg(strstr(text, "\nappendfsync no\n"), "file:\n%s", text);
    ck_assert_msg(strstr(text, "\nhash-max-listpack-entries 64\n"), "file:\n%s", text);
    ck_assert_msg(strstr(text, "\nnotify-keyspace-events xK\n"), "file:\n%s", text);
    ck_assert_msg(strstr(text, "\noom-score-adj-values 1 2 3\n"), "file:\n%s", text);
    ck_assert_msg(strstr(text, "\nlist-max-listpack-size -2\n"), "file:\n%s", text);
    ck_assert_msg(!strstr(text, "zset-max-listpack-entries"), "default written:\n%s", text);
    ck_assert_msg(!strstr(text, "replicaof") && !strstr(text, "aclfile") &&
                      !strstr(text, "cluster-enabled"),
                  "refused row written:\n%s", text);
    rewrite_and_reload("compatibility rows");
    expect_get("appendfsync", "no");
    expect_get("notify-keyspace-events", "xK");
}
END_TEST

static Suite *config_suite(void) {
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("values");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_parse_memory);
    tcase_add_test(tc, test_parse_memory_strict_like_valkey);
    tcase_add_test(tc, test_set_valid);
    tcase_add_test(tc, test_set_invalid);
    tcase_add_test(tc, test_set_immutable);
    tcase_add_test(tc, test_obuf_limit);
    tcase_add_test(tc, test_obuf_limit_all_or_nothing);
    tcase_add_test(tc, test_get_formatting);
    tcase_add_test(tc, test_get_formatting_misc);
    tcase_add_test(tc, test_failed_apply_restores);
    tcase_add_test(tc, test_bind_port_settable);
    tcase_add_test(tc, test_encoding_knobs);
    tcase_add_test(tc, test_compat_rows);
    suite_add_tcase(s, tc);

    TCase *files = tcase_create("files");
    tcase_add_checked_fixture(files, setup, teardown);
    tcase_add_test(files, test_load_file_include);
    tcase_add_test(files, test_load_unknown_directive);
    tcase_add_test(files, test_load_bad_values);
    tcase_add_test(files, test_load_stock_valkey_conf);
    tcase_add_test(files, test_load_overrides);
    tcase_add_test(files, test_loadmodule_lines);
    tcase_add_test(files, test_refused_directives);
    tcase_add_test(files, test_rename_command_lines);
    suite_add_tcase(s, files);

    TCase *hostile_tc = tcase_create("hostile");
    tcase_add_checked_fixture(hostile_tc, setup, teardown);
    tcase_set_timeout(hostile_tc, 60);
    tcase_add_test(hostile_tc, test_rewrite_every_byte);
    tcase_add_test(hostile_tc, test_rewrite_hostile_every_directive);
    tcase_add_test(hostile_tc, test_values_keep_every_byte);
    tcase_add_test(hostile_tc, test_nul_refused_outside_binary_values);
    tcase_add_test(hostile_tc, test_bounds_like_valkey);
    tcase_add_test(hostile_tc, test_compat_rewrite);
    suite_add_tcase(s, hostile_tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(config_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
