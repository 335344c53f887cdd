/* check_it_server.c -- server and connection commands against a real
 * keel-server: PING, ECHO, TIME, QUIT, RESET, SHUTDOWN (its options, SAVE
 * refused without persistence); SAVE, BGSAVE, LASTSAVE and INFO
 * persistence's change count (Valkey's per command); INFO sections and
 * the fields monitoring uses (redis_version, multiplexing_api,
 * connected_clients, used_memory, total_commands_processed,
 * keyspace_hits/misses, dbN:keys=..,expires=..,avg_ttl=.., commandstats,
 * errorstats); CONFIG GET/SET/RESETSTAT/REWRITE (with a config file);
 * CLIENT ID/SETNAME/GETNAME/LIST/INFO/KILL; COMMAND COUNT/LIST/INFO/DOCS/
 * GETKEYS; SLOWLOG; AUTH and requirepass (NOAUTH, WRONGPASS, HELLO AUTH);
 * maxclients (rejected connections) and the idle timeout. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define NOAUTH "NOAUTH Authentication required."
#define WRONGPASS "WRONGPASS invalid username-password pair or user is disabled."

/* ---- helpers ---- */

/* 1 if text has a line exactly equal to line. */
static int has_line(const char *text, const char *line) {
    size_t n = strlen(line);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\r' || p[n] == '\0')) return 1;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return 0;
}

static int count_lines(const char *text) {
    int n = 0;
    for (const char *p = text; *p; p++)
        if (*p == '\n') n++;
    return n;
}

/* The CLIENT LIST line of the client with the given id (tracked), or NULL. */
static char *client_line(redisContext *c, long long id) {
    redisReply *r = it_cmd(c, "CLIENT LIST");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    char prefix[40];
    snprintf(prefix, sizeof(prefix), "id=%lld ", id);
    for (const char *p = r->str; p && *p;) {
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            size_t n = strcspn(p, "\r\n");
            char *line = it_alloc(n + 1);
            memcpy(line, p, n);
            return line;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return NULL;
}

/* The value of "field=" in a CLIENT LIST line (tracked). */
static char *client_field(const char *line, const char *field) {
    char key[64];
    snprintf(key, sizeof(key), " %s=", field);
    const char *p = strstr(line, key);
    if (!p && strncmp(line, key + 1, strlen(key) - 1) == 0) p = line - 1;
    ck_assert_msg(p != NULL, "no %s= in: %s", field, line);
    p += strlen(key);
    size_t n = strcspn(p, " ");
    char *v = it_alloc(n + 1);
    memcpy(v, p, n);
    return v;
}

static long long client_id(redisContext *c) {
    redisReply *r = it_cmd(c, "CLIENT ID");
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    return r->integer;
}

/* ---- PING, ECHO, TIME, QUIT, RESET, SHUTDOWN ---- */

START_TEST(test_ping_echo) {
    expect_status(C, "PONG", "PING");
    expect_bulk(C, "hello", "PING hello");
    expect_error(C, "ERR wrong number of arguments for 'ping' command", "PING a b");
    expect_bulk(C, "hello world", "ECHO %s", "hello world");
    expect_bulk_len(C, "a\0b\r\n", 5, "ECHO %b", "a\0b\r\n", (size_t)5);
    expect_bulk(C, "", "ECHO %s", "");
    expect_error(C, "ERR wrong number of arguments for 'echo' command", "ECHO");
    expect_error(C, "ERR wrong number of arguments for 'echo' command", "ECHO a b");
}
END_TEST

START_TEST(test_time) {
    redisReply *r = it_cmd(C, "TIME");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    ck_assert_int_eq(r->element[0]->type, REDIS_REPLY_STRING);
    ck_assert_int_eq(r->element[1]->type, REDIS_REPLY_STRING);
    long long secs = atoll(r->element[0]->str), usecs = atoll(r->element[1]->str);
    ck_assert_int_le(llabs(secs - (long long)time(NULL)), 60);
    ck_assert(usecs >= 0 && usecs < 1000000);
    expect_error(C, "ERR wrong number of arguments for 'time' command", "TIME x");
}
END_TEST

START_TEST(test_quit) {
    it_raw *r = it_raw_connect(S);
    it_raw_cmd(r, "QUIT", NULL);
    expect_raw(r, "+OK");
    ck_assert(it_raw_wait_closed(r, 5000));
    expect_status(C, "PONG", "PING");
}
END_TEST

START_TEST(test_reset) {
    expect_ok(C, "SELECT 2");
    expect_ok(C, "CLIENT SETNAME foo");
    expect_ok(C, "WATCH x");
    expect_ok(C, "MULTI");
    expect_status(C, "RESET", "RESET");
    expect_nil(C, "CLIENT GETNAME");
    expect_error(C, "ERR EXEC without MULTI", "EXEC");
    expect_ok(C, "SET k db0");
    expect_ok(C, "SELECT 0");
    expect_bulk(C, "db0", "GET k");
}
END_TEST

/* Clients and valkey-cli send READONLY outside cluster mode too: Valkey
 * answers OK and shows the flag, and so does Keel. */
START_TEST(test_readonly_readwrite) {
    redisReply *r = it_cmd(C, "CLIENT INFO");
    ck_assert_ptr_nonnull(strstr(r->str, " flags=N "));
    expect_ok(C, "READONLY");
    r = it_cmd(C, "CLIENT INFO");
    ck_assert_msg(strstr(r->str, " flags=r ") != NULL, "%s", r->str);
    expect_ok(C, "READWRITE");
    r = it_cmd(C, "CLIENT INFO");
    ck_assert_ptr_nonnull(strstr(r->str, " flags=N "));
    expect_ok(C, "readonly");
    expect_status(C, "RESET", "RESET");
    r = it_cmd(C, "CLIENT INFO");
    ck_assert_msg(strstr(r->str, " flags=N ") != NULL, "RESET kept READONLY: %s", r->str);
    expect_error_prefix(C, "ERR wrong number of arguments for 'readonly' command", "READONLY x");
    r = it_cmd(C, "COMMAND INFO readonly readwrite");
    ck_assert_int_eq(r->elements, 2);
    ck_assert_str_eq(it_sorted_join(r->element[0]->element[2]), "fast,loading,stale");
    ck_assert_str_eq(it_sorted_join(r->element[1]->element[2]), "fast,loading,stale");
}
END_TEST

START_TEST(test_shutdown) {
    it_raw *r = it_raw_connect(S);
    it_raw_cmd(r, "SHUTDOWN", "NOSAVE", NULL);
    ck_assert(it_raw_wait_closed(r, 10000));
    int st = it_wait_exit(S, 10000);
    ck_assert_msg(st != -1, "keel-server did not exit after SHUTDOWN");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "keel-server exited with status %d after SHUTDOWN", st);
}
END_TEST

#define ERR_SYNTAX "ERR syntax error"
#define ERR_NO_PERSISTENCE "ERR persistence is not available in Keel"

/* SHUTDOWN's options as Valkey 8.0.1 parses them (NOSAVE|SAVE, NOW, FORCE,
 * ABORT): NOSAVE with SAVE, or ABORT with anything else, is a syntax
 * error, and nothing shuts down. */
START_TEST(test_shutdown_option_errors) {
    expect_error(C, ERR_SYNTAX, "SHUTDOWN NOSAVE SAVE");
    expect_error(C, ERR_SYNTAX, "SHUTDOWN SAVE NOSAVE");
    expect_error(C, ERR_SYNTAX, "SHUTDOWN NOW NOSAVE FORCE SAVE");
    expect_error(C, ERR_SYNTAX, "SHUTDOWN ABORT NOW");
    expect_error(C, ERR_SYNTAX, "SHUTDOWN NOW ABORT");
    expect_error(C, ERR_SYNTAX, "SHUTDOWN ABORT NOSAVE");
    expect_error(C, ERR_SYNTAX, "SHUTDOWN FORCE ABORT");
    expect_error(C, ERR_SYNTAX, "SHUTDOWN ABORT FOO");
    expect_error(C, ERR_SYNTAX, "SHUTDOWN NOSAVE FOO");
    expect_error(C, "ERR No shutdown in progress.", "SHUTDOWN ABORT");
    expect_error(C, "ERR No shutdown in progress.", "SHUTDOWN abort ABORT");
    expect_status(C, "PONG", "PING");
}
END_TEST

/* SHUTDOWN SAVE must not look successful when nothing can be saved: it
 * answers an error and the server keeps running (as Valkey when its save
 * fails); FORCE exits anyway, see test_shutdown_save_force. */
START_TEST(test_shutdown_save_refused) {
    expect_ok(C, "SET k v");
    expect_error_prefix(C, ERR_NO_PERSISTENCE, "SHUTDOWN SAVE");
    expect_error_prefix(C, ERR_NO_PERSISTENCE, "SHUTDOWN NOW SAVE");
    expect_status(C, "PONG", "PING");
    expect_bulk(C, "v", "GET k");
}
END_TEST

/* Sends SHUTDOWN with the given options to a server of its own and asserts
 * that it exits 0. */
static void assert_shutdown_exits(const char *opt1, const char *opt2) {
    it_server *s = it_start(NULL);
    redisContext *c = it_connect(s);
    expect_ok(c, "SET k v");
    it_raw *r = it_raw_connect(s);
    it_raw_cmd(r, "SHUTDOWN", opt1, opt2, NULL);
    ck_assert(it_raw_wait_closed(r, 10000));
    int st = it_wait_exit(s, 10000);
    ck_assert_msg(st != -1, "keel-server did not exit after SHUTDOWN %s", opt1 ? opt1 : "");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d after SHUTDOWN", st);
}

/* With no save points configured (Keel's only setting), a plain SHUTDOWN
 * has nothing to save and exits, as Valkey's does. */
START_TEST(test_shutdown_plain) {
    assert_shutdown_exits(NULL, NULL);
}
END_TEST

START_TEST(test_shutdown_now_force) {
    assert_shutdown_exits("NOW", "FORCE");
}
END_TEST

START_TEST(test_shutdown_save_force) {
    assert_shutdown_exits("SAVE", "FORCE");
}
END_TEST

/* ---- persistence stand-ins: SAVE, BGSAVE, LASTSAVE, INFO persistence ---- */

START_TEST(test_save_commands_refused) {
    expect_ok(C, "SET k v");
    expect_error_prefix(C, ERR_NO_PERSISTENCE, "SAVE");
    expect_error_prefix(C, ERR_NO_PERSISTENCE, "BGSAVE");
    expect_error_prefix(C, ERR_NO_PERSISTENCE, "BGSAVE SCHEDULE");
    expect_error(C, ERR_SYNTAX, "BGSAVE foo");
    expect_error(C, ERR_SYNTAX, "BGSAVE SCHEDULE foo");
    expect_error(C, "ERR wrong number of arguments for 'save' command", "SAVE now");
    expect_error(C, "ERR wrong number of arguments for 'lastsave' command", "LASTSAVE x");
    expect_ok(C, "MULTI");
    expect_error(C, "ERR Command not allowed inside a transaction", "SAVE");
    expect_ok(C, "DISCARD");
    expect_ok(C, "MULTI");
    expect_reply(C, "+QUEUED", "BGSAVE");
    expect_reply(C, "[-" ERR_NO_PERSISTENCE ": nothing was saved]", "EXEC");
    /* Nothing was saved, so nothing counts as saved. */
    ck_assert_int_ge(it_info_int(C, "persistence", "rdb_changes_since_last_save"), 1);
    ck_assert_int_eq(it_info_int(C, "persistence", "rdb_saves"), 0);
}
END_TEST

/* LASTSAVE, as Valkey before its first save, answers the start-up time;
 * INFO persistence says the same. */
START_TEST(test_lastsave_is_start_time) {
    long long before = (long long)time(NULL);
    it_server *s = it_start(NULL);
    redisContext *c = it_connect(s);
    long long after = (long long)time(NULL);
    redisReply *r = it_cmd(c, "LASTSAVE");
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    ck_assert_int_ge(r->integer, before - 1);
    ck_assert_int_le(r->integer, after + 1);
    ck_assert_int_eq(it_info_int(c, "persistence", "rdb_last_save_time"), r->integer);
    ck_assert_int_eq(it_info_int(c, "persistence", "rdb_changes_since_last_save"), 0);
    ck_assert_str_eq(it_info_str(c, "persistence", "rdb_last_bgsave_status"), "ok");
    ck_assert_int_eq(it_info_int(c, "persistence", "rdb_last_bgsave_time_sec"), -1);
    it_sleep_ms(1100);
    expect_int(c, r->integer, "LASTSAVE");
}
END_TEST

static long long changes(void) {
    return it_info_int(C, "persistence", "rdb_changes_since_last_save");
}

/* Runs a command and asserts how many key changes it added to INFO's
 * rdb_changes_since_last_save (Valkey's server.dirty). */
#define expect_changes(n, ...)                                                                     \
    do {                                                                                           \
        long long before_ = changes();                                                             \
        it_free(it_cmd(C, __VA_ARGS__));                                                           \
        ck_assert_msg(changes() - before_ == (n), "%s: %lld changes, want %d", #__VA_ARGS__,       \
                      changes() - before_, (n));                                                   \
    } while (0)

/* Each command counts the changes Valkey 8.0.1 counts for it (measured
 * against valkey-server 8.0.1): one per key written, deleted or given or
 * stripped of a TTL; a flush counts the keys it removed; keys that expire
 * count nothing. */
START_TEST(test_changes_since_last_save) {
    expect_changes(1, "SET a 1");
    expect_changes(1, "SET a 1 EX 100");
    expect_changes(1, "SET a 2 KEEPTTL");
    expect_changes(1, "SET a 3");
    expect_changes(1, "SET a 1 EX 100");
    expect_changes(1, "GETSET a 5");
    expect_changes(0, "SET a 6 NX");
    expect_changes(2, "MSET k1 v1 k2 v2");
    expect_changes(2, "MSET k1 v1 k1 v2");
    expect_changes(3, "DEL k1 k2 a zz");
    expect_changes(0, "DEL nothing");
    expect_changes(1, "SET r 1");
    expect_changes(1, "RENAME r r2");
    expect_changes(1, "SET r3 1");
    expect_changes(1, "RENAME r2 r3");
    expect_changes(0, "RENAMENX r3 r3");
    expect_changes(1, "MOVE r3 1");
    expect_changes(1, "SET c 1");
    expect_changes(1, "COPY c d");
    expect_changes(1, "COPY c d REPLACE");
    expect_changes(0, "COPY c d");
    expect_changes(1, "SWAPDB 0 0");
    expect_changes(1, "SWAPDB 0 1");
    expect_changes(3, "FLUSHALL");
    expect_changes(0, "FLUSHALL");
    expect_changes(3, "MSET a 1 b 2 c 3");
    expect_changes(3, "FLUSHDB");
    expect_changes(1, "SET e 1");
    expect_changes(1, "SET e 1 PXAT 1");
    expect_changes(0, "SET e 1 PXAT 1");
    expect_changes(1, "SET e 1 EX 100");
    expect_changes(1, "PERSIST e");
    expect_changes(0, "PERSIST e");
    expect_changes(1, "EXPIRE e 100");
    expect_changes(0, "EXPIRE e 200 NX");
    expect_changes(1, "EXPIRE e -1");
    expect_changes(0, "EXPIRE e 100");
    expect_changes(1, "SET e 1");
    expect_changes(1, "GETEX e EX 100");
    expect_changes(1, "GETEX e PERSIST");
    expect_changes(0, "GETEX e");
    expect_changes(1, "GETEX e PXAT 1");
    expect_changes(1, "SET n 5");
    expect_changes(1, "INCR n");
    expect_changes(1, "INCRBY n 10");
    expect_changes(1, "APPEND n x");
    expect_changes(1, "SETRANGE n 0 ab");
    expect_changes(0, "SETRANGE n 0 %s", "");
    expect_changes(1, "INCRBYFLOAT f 1.5");
    expect_changes(1, "GETDEL f");
    expect_changes(0, "GETDEL f");
    expect_changes(0, "SETNX n 1");
    expect_changes(0, "MSETNX n 1 m 2");
    expect_changes(2, "MSETNX m 1 o 2");
    expect_changes(0, "GET n");
    expect_changes(1, "SET x 1 PX 50");
    it_sleep_ms(100);
    expect_changes(0, "GET x"); /* lazily expired */
    expect_changes(1, "SET y 1 PX 20");
    it_wait_until(it_info_int(C, "stats", "expired_keys") >= 2, 2000); /* actively expired */
    expect_changes(0, "DBSIZE");
    long long before = changes();
    expect_ok(C, "MULTI");
    expect_reply(C, "+QUEUED", "SET t1 1");
    expect_reply(C, "+QUEUED", "MSET t2 2 t3 3");
    expect_reply(C, "[+OK,+OK]", "EXEC");
    ck_assert_int_eq(changes() - before, 3);
}
END_TEST

/* ---- INFO ---- */
/* ---- INFO ---- */

START_TEST(test_info_default_sections) {
    redisReply *r = it_cmd(C, "INFO");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    static const char *const sections[] = {"# Server",      "# Clients",    "# Memory",
                                           "# Persistence", "# Stats",      "# Replication",
                                           "# CPU",         "# Errorstats", "# Keyspace"};
    for (size_t i = 0; i < sizeof(sections) / sizeof(*sections); i++)
        ck_assert_msg(has_line(r->str, sections[i]), "INFO has no section %s", sections[i]);
    ck_assert_msg(!has_line(r->str, "# Commandstats"), "INFO (default) has # Commandstats");
    ck_assert_msg(strstr(r->str, "\r\n") != NULL, "INFO lines must end with CRLF");
}
END_TEST

START_TEST(test_info_one_section) {
    redisReply *r = it_cmd(C, "INFO server");
    ck_assert(has_line(r->str, "# Server"));
    ck_assert(!has_line(r->str, "# Clients"));
    r = it_cmd(C, "INFO SERVER clients");
    ck_assert(has_line(r->str, "# Server"));
    ck_assert(has_line(r->str, "# Clients"));
    ck_assert(!has_line(r->str, "# Memory"));
    r = it_cmd(C, "INFO all");
    ck_assert(has_line(r->str, "# Commandstats"));
    r = it_cmd(C, "INFO everything");
    ck_assert(has_line(r->str, "# Commandstats"));
    expect_bulk(C, "", "INFO nosuchsection");
}
END_TEST

START_TEST(test_info_server_fields) {
    ck_assert_ptr_nonnull(it_info_str(C, "server", "redis_version"));
    ck_assert_str_eq(it_info_str(C, "server", "multiplexing_api"), "epoll");
    ck_assert_int_eq(it_info_int(C, "server", "tcp_port"), S->port);
    ck_assert_int_eq(it_info_int(C, "server", "process_id"), S->pid);
    ck_assert_str_eq(it_info_str(C, "server", "redis_mode"), "standalone");
    ck_assert_int_ge(it_info_int(C, "server", "uptime_in_seconds"), 0);
    ck_assert_int_eq(strlen(it_info_str(C, "server", "run_id")), 40);
    ck_assert_str_eq(it_info_str(C, "server", "config_file"), "");
    ck_assert_str_eq(it_info_str(C, "replication", "role"), "master");
    ck_assert_int_eq(it_info_int(C, "replication", "connected_slaves"), 0);
}
END_TEST

START_TEST(test_info_clients_and_memory) {
    ck_assert_int_eq(it_info_int(C, "clients", "connected_clients"), 1);
    it_connect(S);
    it_connect(S);
    /* A TCP connect completes before the server accepts: wait for it. */
    it_wait_until(it_info_int(C, "clients", "connected_clients") == 3, 5000);
    ck_assert_int_eq(it_info_int(C, "clients", "connected_clients"), 3);
    ck_assert_int_eq(it_info_int(C, "clients", "maxclients"), 10000);
    long long used = it_info_int(C, "memory", "used_memory");
    ck_assert_int_gt(used, 0);
    char *big = it_random_bytes(1 << 20, 7);
    expect_ok(C, "SET big %b", big, (size_t)1 << 20);
    ck_assert_int_ge(it_info_int(C, "memory", "used_memory"), used + (1 << 20));
    ck_assert_int_eq(it_info_int(C, "memory", "maxmemory"), 0);
    ck_assert_str_eq(it_info_str(C, "memory", "maxmemory_policy"), "noeviction");
    ck_assert_ptr_nonnull(it_info_str(C, "memory", "used_memory_human"));
    ck_assert_ptr_nonnull(it_info_str(C, "memory", "used_memory_peak"));
    ck_assert_ptr_nonnull(it_info_str(C, "memory", "mem_fragmentation_ratio"));
}
END_TEST

START_TEST(test_info_stats_counters) {
    long long cmds = it_info_int(C, "stats", "total_commands_processed");
    expect_ok(C, "SET k v");
    expect_status(C, "PONG", "PING");
    /* INFO itself counts too. */
    ck_assert_int_ge(it_info_int(C, "stats", "total_commands_processed"), cmds + 3);
    long long hits = it_info_int(C, "stats", "keyspace_hits");
    long long misses = it_info_int(C, "stats", "keyspace_misses");
    expect_bulk(C, "v", "GET k");
    expect_bulk(C, "v", "GET k");
    expect_nil(C, "GET nokey");
    ck_assert_int_eq(it_info_int(C, "stats", "keyspace_hits"), hits + 2);
    ck_assert_int_eq(it_info_int(C, "stats", "keyspace_misses"), misses + 1);
    long long conns = it_info_int(C, "stats", "total_connections_received");
    it_connect(S);
    it_wait_until(it_info_int(C, "stats", "total_connections_received") == conns + 1, 5000);
    ck_assert_int_eq(it_info_int(C, "stats", "total_connections_received"), conns + 1);
    ck_assert_int_eq(it_info_int(C, "stats", "rejected_connections"), 0);
    ck_assert_int_eq(it_info_int(C, "stats", "evicted_keys"), 0);
    ck_assert_int_ge(it_info_int(C, "stats", "total_net_input_bytes"), 1);
    ck_assert_int_ge(it_info_int(C, "stats", "instantaneous_ops_per_sec"), 0);
}
END_TEST

START_TEST(test_info_keyspace_lines) {
    expect_ok(C, "SELECT 3");
    expect_ok(C, "SET a 1");
    expect_ok(C, "SET b 2");
    expect_ok(C, "SET c 3 EX 1000");
    char *db3 = it_info_str(C, "keyspace", "db3");
    ck_assert_ptr_nonnull(db3);
    ck_assert_msg(strncmp(db3, "keys=3,expires=1,avg_ttl=", 25) == 0, "db3 line: %s", db3);
    ck_assert_ptr_null(it_info_str(C, "keyspace", "db0"));
    expect_ok(C, "SELECT 0");
    expect_ok(C, "SET x 1");
    ck_assert_str_eq(it_info_str(C, "keyspace", "db0"), "keys=1,expires=0,avg_ttl=0");
    expect_ok(C, "FLUSHALL");
    ck_assert_ptr_null(it_info_str(C, "keyspace", "db3"));
}
END_TEST

START_TEST(test_info_commandstats) {
    expect_ok(C, "CONFIG RESETSTAT");
    expect_ok(C, "SET foo bar");
    expect_ok(C, "SET foo bar");
    expect_error_prefix(C, "ERR invalid expire time", "SET foo bar EX 0");
    expect_error_prefix(C, "ERR wrong number of arguments", "SET foo");
    char *set = it_info_str(C, "commandstats", "cmdstat_set");
    ck_assert_ptr_nonnull(set);
    ck_assert_int_eq(it_kv_get(set, "calls"), 3);
    ck_assert_int_ge(it_kv_get(set, "usec"), 0);
    ck_assert_msg(strstr(set, ",usec_per_call=") != NULL, "cmdstat_set: %s", set);
    ck_assert_int_eq(it_kv_get(set, "rejected_calls"), 1);
    ck_assert_int_eq(it_kv_get(set, "failed_calls"), 1);
    expect_bulk(C, "bar", "GET foo");
    ck_assert_int_eq(it_kv_get(it_info_str(C, "commandstats", "cmdstat_get"), "calls"), 1);
    /* Subcommands show as container|sub. */
    ck_assert_ptr_nonnull(it_info_str(C, "commandstats", "cmdstat_config|resetstat"));
}
END_TEST

START_TEST(test_info_errorstats) {
    expect_ok(C, "CONFIG RESETSTAT");
    expect_ok(C, "SET s notanumber");
    expect_error_prefix(C, "ERR value is not an integer", "INCR s");
    expect_error_prefix(C, "ERR unknown command", "NOSUCHCOMMAND");
    char *err = it_info_str(C, NULL, "errorstat_ERR");
    ck_assert_ptr_nonnull(err);
    ck_assert_str_eq(err, "count=2");
    ck_assert_int_eq(it_info_int(C, "stats", "total_error_replies"), 2);
    expect_ok(C, "CONFIG RESETSTAT");
    ck_assert_ptr_null(it_info_str(C, "errorstats", "errorstat_ERR"));
    ck_assert_int_eq(it_info_int(C, "stats", "total_error_replies"), 0);
}
END_TEST

START_TEST(test_info_errorstats_prefixes) {
    expect_ok(C, "CONFIG RESETSTAT");
    expect_ok(C, "MULTI");
    expect_error_prefix(C, "ERR", "GET");
    expect_error_prefix(C, "EXECABORT", "EXEC");
    ck_assert_str_eq(it_info_str(C, "errorstats", "errorstat_EXECABORT"), "count=1");
    ck_assert_str_eq(it_info_str(C, "errorstats", "errorstat_ERR"), "count=1");
}
END_TEST

START_TEST(test_config_resetstat) {
    expect_ok(C, "SET k v");
    expect_bulk(C, "v", "GET k");
    expect_nil(C, "GET nokey");
    expect_ok(C, "CONFIG RESETSTAT");
    ck_assert_int_le(it_info_int(C, "stats", "total_commands_processed"), 2);
    ck_assert_int_eq(it_info_int(C, "stats", "keyspace_hits"), 0);
    ck_assert_int_eq(it_info_int(C, "stats", "keyspace_misses"), 0);
    ck_assert_ptr_null(it_info_str(C, "commandstats", "cmdstat_get"));
    ck_assert_ptr_null(it_info_str(C, "commandstats", "cmdstat_set"));
}
END_TEST

/* ---- CONFIG ---- */

START_TEST(test_config_get) {
    expect_reply(C, "[\"maxmemory\",\"0\"]", "CONFIG GET maxmemory");
    expect_reply(C, it_fmt("[\"port\",\"%d\"]", S->port), "CONFIG GET port");
    expect_reply(C, "[]", "CONFIG GET no-such-option");
    redisReply *r = it_cmd(C, "CONFIG GET maxmemory*");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements % 2, 0);
    int found_policy = 0, found_samples = 0;
    for (size_t i = 0; i < r->elements; i += 2) {
        ck_assert_msg(strncmp(r->element[i]->str, "maxmemory", 9) == 0, "matched %s",
                      r->element[i]->str);
        if (!strcmp(r->element[i]->str, "maxmemory-policy"))
            found_policy = !strcmp(r->element[i + 1]->str, "noeviction");
        if (!strcmp(r->element[i]->str, "maxmemory-samples"))
            found_samples = !strcmp(r->element[i + 1]->str, "5");
    }
    ck_assert(found_policy && found_samples);
    r = it_cmd(C, "CONFIG GET maxmemory timeout");
    ck_assert_int_eq(r->elements, 4);
    ck_assert_str_eq(it_sorted_join(r), "0,0,maxmemory,timeout");
    expect_error(C, "ERR wrong number of arguments for 'config|get' command", "CONFIG GET");
}
END_TEST

START_TEST(test_config_set) {
    expect_ok(C, "CONFIG SET maxmemory 10mb");
    expect_reply(C, "[\"maxmemory\",\"10485760\"]", "CONFIG GET maxmemory");
    ck_assert_int_eq(it_info_int(C, "memory", "maxmemory"), 10485760);
    expect_ok(C, "CONFIG SET maxmemory-policy allkeys-lru");
    expect_reply(C, "[\"maxmemory-policy\",\"allkeys-lru\"]", "CONFIG GET maxmemory-policy");
    expect_ok(C, "CONFIG SET maxmemory 0 maxmemory-policy volatile-ttl");
    expect_reply(C, "[\"maxmemory\",\"0\"]", "CONFIG GET maxmemory");
    expect_reply(C, "[\"maxmemory-policy\",\"volatile-ttl\"]", "CONFIG GET maxmemory-policy");
    expect_ok(C, "CONFIG SET timeout 100");
    expect_reply(C, "[\"timeout\",\"100\"]", "CONFIG GET timeout");
    expect_ok(C, "CONFIG SET MAXMEMORY-SAMPLES 7");
    expect_reply(C, "[\"maxmemory-samples\",\"7\"]", "CONFIG GET maxmemory-samples");
}
END_TEST

START_TEST(test_config_set_errors) {
    expect_error(C, "ERR Unknown option or number of arguments for CONFIG SET - 'foo'",
                 "CONFIG SET foo bar");
    expect_error(C,
                 "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must "
                 "be a memory value",
                 "CONFIG SET maxmemory abc");
    expect_error(C,
                 "ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - "
                 "argument(s) must be one of "
                 "the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, "
                 "allkeys-lru, allkeys-lfu, "
                 "allkeys-random, noeviction",
                 "CONFIG SET maxmemory-policy bad");
    expect_error(C,
                 "ERR CONFIG SET failed (possibly related to argument 'maxmemory-samples') - "
                 "argument must be between "
                 "1 and 64 inclusive",
                 "CONFIG SET maxmemory-samples 100");
    expect_error(
        C,
        "ERR CONFIG SET failed (possibly related to argument 'tcp-backlog') - can't set immutable "
        "config",
        "CONFIG SET tcp-backlog 1234");
    expect_error(
        C, "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - duplicate parameter",
        "CONFIG SET maxmemory 1mb maxmemory 2mb");
    expect_error(C, "ERR wrong number of arguments for 'config|set' command",
                 "CONFIG SET maxmemory");
    expect_error(C, "ERR syntax error", "CONFIG SET maxmemory 1mb timeout");
    /* A failed multi-parameter SET changes nothing. */
    expect_error_prefix(C, "ERR CONFIG SET failed",
                        "CONFIG SET maxmemory 5mb maxmemory-policy bad");
    expect_reply(C, "[\"maxmemory\",\"0\"]", "CONFIG GET maxmemory");
}
END_TEST

START_TEST(test_config_rewrite_without_file) {
    expect_error(C, "ERR The server is running without a config file", "CONFIG REWRITE");
}
END_TEST

START_TEST(test_config_rewrite) {
    it_server *s =
        it_start_conf("# a comment kept by CONFIG REWRITE\nmaxmemory 1mb\ntimeout 0\n", NULL);
    redisContext *c = it_connect(s);
    ck_assert_str_eq(it_info_str(c, "server", "config_file"), s->conf);
    expect_reply(c, "[\"maxmemory\",\"1048576\"]", "CONFIG GET maxmemory");
    expect_ok(c, "CONFIG SET maxmemory 5mb");
    expect_ok(c, "CONFIG SET maxmemory-policy allkeys-lru");
    expect_ok(c, "CONFIG REWRITE");
    char *text = it_read_file(s->conf);
    ck_assert_msg(has_line(text, "# a comment kept by CONFIG REWRITE"), "comment lost:\n%s", text);
    ck_assert_msg(has_line(text, "maxmemory 5mb"), "no 'maxmemory 5mb' line:\n%s", text);
    ck_assert_msg(!has_line(text, "maxmemory 1mb"), "old maxmemory line kept:\n%s", text);
    ck_assert_msg(has_line(text, "maxmemory-policy allkeys-lru"), "no maxmemory-policy line:\n%s",
                  text);
    /* A server started from the rewritten file has the new values. */
    char *saved = it_fmt("%s", text);
    it_server *s2 = it_start_conf(saved, NULL);
    redisContext *c2 = it_connect(s2);
    expect_reply(c2, "[\"maxmemory\",\"5242880\"]", "CONFIG GET maxmemory");
    expect_reply(c2, "[\"maxmemory-policy\",\"allkeys-lru\"]", "CONFIG GET maxmemory-policy");
}
END_TEST

START_TEST(test_config_file_and_args) {
    /* Command-line options override the file. */
    it_server *s = it_start_conf("maxmemory 1mb\nmaxmemory-policy allkeys-random\n", "--maxmemory",
                                 "2mb", NULL);
    redisContext *c = it_connect(s);
    expect_reply(c, "[\"maxmemory\",\"2097152\"]", "CONFIG GET maxmemory");
    expect_reply(c, "[\"maxmemory-policy\",\"allkeys-random\"]", "CONFIG GET maxmemory-policy");
}
END_TEST

/* ---- CLIENT ---- */

START_TEST(test_client_id) {
    redisContext *c2 = it_connect(S);
    long long a = client_id(C), b = client_id(c2);
    ck_assert_int_gt(a, 0);
    ck_assert_int_gt(b, a);
    ck_assert_int_eq(client_id(C), a);
}
END_TEST

START_TEST(test_client_setname_getname) {
    expect_nil(C, "CLIENT GETNAME");
    expect_ok(C, "CLIENT SETNAME myname");
    expect_bulk(C, "myname", "CLIENT GETNAME");
    expect_error(C, "ERR Client names cannot contain spaces, newlines or special characters.",
                 "CLIENT SETNAME %s", "foo bar");
    expect_error(C, "ERR Client names cannot contain spaces, newlines or special characters.",
                 "CLIENT SETNAME %s", "foo\nbar");
    expect_bulk(C, "myname", "CLIENT GETNAME");
    expect_ok(C, "CLIENT SETNAME %s", "");
    expect_nil(C, "CLIENT GETNAME");
    expect_error(C, "ERR unknown subcommand 'foo'. Try CLIENT HELP.", "CLIENT foo");
}
END_TEST

START_TEST(test_client_list) {
    redisContext *c2 = it_connect(S);
    expect_ok(c2, "CLIENT SETNAME second");
    expect_ok(c2, "SELECT 5");
    long long id2 = client_id(c2);
    redisReply *r = it_cmd(C, "CLIENT LIST");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    ck_assert_int_eq(count_lines(r->str), 2);
    char *line = client_line(C, id2);
    ck_assert_ptr_nonnull(line);
    ck_assert_str_eq(client_field(line, "name"), "second");
    ck_assert_str_eq(client_field(line, "db"), "5");
    ck_assert_str_eq(client_field(line, "cmd"), "client|id");
    ck_assert_str_eq(client_field(line, "resp"), "2");
    ck_assert_str_eq(client_field(line, "flags"), "N");
    ck_assert_str_eq(client_field(line, "multi"), "-1");
    ck_assert_msg(strncmp(client_field(line, "addr"), "127.0.0.1:", 10) == 0, "addr: %s", line);
    ck_assert_str_eq(client_field(line, "laddr"), it_fmt("127.0.0.1:%d", S->port));
    ck_assert_str_eq(client_field(line, "user"), "default");
    static const char *const fields[] = {"fd",    "age",  "idle", "sub",     "psub",
                                         "watch", "qbuf", "omem", "tot-mem", "events"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++)
        client_field(line, fields[i]);
    /* Filters. */
    r = it_cmd(C, "CLIENT LIST ID %lld", id2);
    ck_assert_int_eq(count_lines(r->str), 1);
    ck_assert_msg(strncmp(r->str, it_fmt("id=%lld ", id2), strlen(it_fmt("id=%lld ", id2))) == 0,
                  "%s", r->str);
    r = it_cmd(C, "CLIENT LIST TYPE normal");
    ck_assert_int_eq(count_lines(r->str), 2);
}
END_TEST

START_TEST(test_client_info) {
    expect_ok(C, "CLIENT SETNAME me");
    long long id = client_id(C);
    redisReply *r = it_cmd(C, "CLIENT INFO");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    ck_assert_int_eq(count_lines(r->str), 1);
    ck_assert_msg(strncmp(r->str, it_fmt("id=%lld ", id), strlen(it_fmt("id=%lld ", id))) == 0,
                  "%s", r->str);
    ck_assert_str_eq(client_field(r->str, "name"), "me");
    ck_assert_str_eq(client_field(r->str, "cmd"), "client|info");
}
END_TEST

START_TEST(test_client_setinfo) {
    expect_ok(C, "CLIENT SETINFO lib-name redis.py");
    expect_ok(C, "CLIENT SETINFO LIB-VER 1.2.3");
    redisReply *r = it_cmd(C, "CLIENT INFO");
    ck_assert_str_eq(client_field(r->str, "lib-name"), "redis.py");
    ck_assert_str_eq(client_field(r->str, "lib-ver"), "1.2.3");
    /* CLIENT LIST is split on spaces: no blank, control or non-ASCII byte */
    expect_error(C, "ERR lib-name cannot contain spaces, newlines or special characters.",
                 "CLIENT SETINFO lib-name %s", "valkey py");
    expect_error(C, "ERR lib-name cannot contain spaces, newlines or special characters.",
                 "CLIENT SETINFO lib-name %s", "redis.py\n");
    expect_error(C, "ERR lib-ver cannot contain spaces, newlines or special characters.",
                 "CLIENT SETINFO lib-ver %b", "1\xc3\xa9", (size_t)3);
    expect_error(C, "ERR Unrecognized option 'badger'", "CLIENT SETINFO badger hamster");
    expect_error_prefix(C, "ERR wrong number of arguments", "CLIENT SETINFO lib-name");
    expect_status(C, "RESET", "RESET"); /* RESET keeps them, as in Valkey */
    r = it_cmd(C, "CLIENT INFO");
    ck_assert_str_eq(client_field(r->str, "lib-name"), "redis.py");
    ck_assert_str_eq(client_field(r->str, "lib-ver"), "1.2.3");
    expect_ok(C, "CLIENT SETINFO lib-name %s", "");
    r = it_cmd(C, "CLIENT INFO");
    ck_assert_str_eq(client_field(r->str, "lib-name"), "");
}
END_TEST

START_TEST(test_client_totals) {
    /* tot-net-in, tot-net-out, tot-cmds as Valkey 8 counts them; qbuf
     * leaves out the request being run */
    redisReply *r = it_cmd(C, "CLIENT INFO");
    ck_assert_str_eq(client_field(r->str, "qbuf"), "0");
    long long in1 = atoll(client_field(r->str, "tot-net-in"));
    long long out1 = atoll(client_field(r->str, "tot-net-out"));
    long long cmds1 = atoll(client_field(r->str, "tot-cmds"));
    r = it_cmd(C, "CLIENT INFO");
    ck_assert_int_eq(atoll(client_field(r->str, "tot-net-in")), in1 + 26); /* the request's bytes */
    ck_assert_int_gt(atoll(client_field(r->str, "tot-net-out")), out1 + 300);
    ck_assert_int_eq(atoll(client_field(r->str, "tot-cmds")), cmds1 + 1);
    /* commands inside EXEC count one each, EXEC itself too */
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "[+PONG,+PONG]", "EXEC");
    r = it_cmd(C, "CLIENT INFO");
    ck_assert_int_eq(atoll(client_field(r->str, "tot-cmds")), cmds1 + 6);
}
END_TEST

START_TEST(test_client_kill_addr) {
    redisContext *c2 = it_connect(S);
    char *line = client_line(C, client_id(c2));
    char *addr = client_field(line, "addr");
    expect_ok(C, "CLIENT KILL %s", addr);
    ck_assert_ptr_null(it_try_cmd(c2, "PING"));
    expect_error(C, "ERR No such client", "CLIENT KILL %s", addr);
    expect_error(C, "ERR No such client", "CLIENT KILL 1.2.3.4:5");
    expect_status(C, "PONG", "PING");
}
END_TEST

START_TEST(test_client_kill_filters) {
    redisContext *c2 = it_connect(S);
    redisContext *c3 = it_connect(S);
    long long id2 = client_id(c2);
    expect_int(C, 1, "CLIENT KILL ID %lld", id2);
    ck_assert_ptr_null(it_try_cmd(c2, "PING"));
    expect_int(C, 0, "CLIENT KILL ID %lld", id2);
    expect_int(C, 0, "CLIENT KILL ID 999999");
    /* SKIPME yes is the default of the new form. */
    expect_int(C, 0, "CLIENT KILL ID %lld", client_id(C));
    char *addr3 = client_field(client_line(C, client_id(c3)), "addr");
    expect_int(C, 1, "CLIENT KILL ADDR %s", addr3);
    ck_assert_ptr_null(it_try_cmd(c3, "PING"));
    expect_error(C, "ERR client-id should be greater than 0", "CLIENT KILL ID abc");
    expect_error(C, "ERR syntax error", "CLIENT KILL ID 1 SKIPME");
    expect_error(C, "ERR syntax error", "CLIENT KILL ID 1 SKIPME maybe");
    expect_status(C, "PONG", "PING");
}
END_TEST

START_TEST(test_client_reply) {
    it_raw *r = it_raw_connect(S);
    /* OFF: nothing at all, not even for itself, until ON (which says OK) */
    it_raw_cmd(r, "CLIENT", "REPLY", "OFF", NULL);
    it_raw_cmd(r, "SET", "a", "1", NULL);
    it_raw_cmd(r, "GET", "a", NULL);
    it_raw_cmd(r, "NOSUCHCMD", NULL);
    it_raw_cmd(r, "CLIENT", "REPLY", "SKIP", NULL); /* ignored while OFF */
    it_raw_cmd(r, "CLIENT", "REPLY", "ON", NULL);
    expect_raw(r, "+OK");
    it_raw_cmd(r, "GET", "a", NULL);
    expect_raw(r, "\"1\"");
    /* SKIP: the next command's reply only */
    it_raw_cmd(r, "CLIENT", "REPLY", "SKIP", NULL);
    it_raw_cmd(r, "SET", "b", "2", NULL);
    it_raw_cmd(r, "GET", "b", NULL);
    expect_raw(r, "\"2\"");
    it_raw_cmd(r, "CLIENT", "REPLY", "MAYBE", NULL);
    expect_raw(r, "-ERR syntax error");
    /* RESET turns replies back on */
    it_raw_cmd(r, "CLIENT", "REPLY", "OFF", NULL);
    it_raw_cmd(r, "RESET", NULL);
    expect_raw(r, "+RESET");
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+PONG");
}
END_TEST

/* With lfu-log-factor 0 every access raises OBJECT FREQ by one, so the
 * count shows exactly which commands touched the key. */
START_TEST(test_client_no_touch) {
    expect_ok(C, "CONFIG SET maxmemory-policy allkeys-lfu");
    expect_ok(C, "CONFIG SET lfu-log-factor 0");
    expect_ok(C, "SET k v");
    expect_int(C, 5, "OBJECT FREQ k");
    expect_bulk(C, "v", "GET k");
    expect_int(C, 6, "OBJECT FREQ k");
    expect_ok(C, "CLIENT NO-TOUCH ON");
    redisReply *r = it_cmd(C, "CLIENT INFO");
    ck_assert_str_eq(client_field(r->str, "flags"), "T");
    expect_bulk(C, "v", "GET k");
    expect_int(C, 2, "APPEND k x");
    expect_int(C, 1, "EXISTS k");
    expect_int(C, 6, "OBJECT FREQ k");
    expect_int(C, 1, "TOUCH k"); /* TOUCH still touches, inside EXEC too */
    expect_int(C, 7, "OBJECT FREQ k");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "GET k");
    expect_status(C, "QUEUED", "TOUCH k");
    expect_reply(C, "[\"vx\",:1]", "EXEC");
    expect_int(C, 8, "OBJECT FREQ k");
    expect_error(C, "ERR syntax error", "CLIENT NO-TOUCH maybe");
    expect_ok(C, "CLIENT NO-TOUCH OFF");
    expect_bulk(C, "vx", "GET k");
    expect_int(C, 9, "OBJECT FREQ k");
    expect_ok(C, "CLIENT NO-TOUCH ON");
    expect_status(C, "RESET", "RESET"); /* RESET clears it */
    expect_bulk(C, "vx", "GET k");
    expect_int(C, 10, "OBJECT FREQ k");
}
END_TEST

START_TEST(test_client_kill_user_maxage) {
    redisContext *c2 = it_connect(S);
    /* Every connection is the default user's; no other user exists. */
    expect_error(C, "ERR No such user 'wrong_user'", "CLIENT KILL USER wrong_user");
    expect_error(C, "ERR No such user 'DEFAULT'", "CLIENT KILL USER DEFAULT");
    expect_error(C, "ERR maxage is not an integer or out of range", "CLIENT KILL MAXAGE str");
    expect_error(C, "ERR maxage is not an integer or out of range", "CLIENT KILL MAXAGE 9999999999999999999");
    expect_error(C, "ERR maxage should be greater than 0", "CLIENT KILL MAXAGE -1");
    expect_error(C, "ERR maxage should be greater than 0", "CLIENT KILL MAXAGE 0");
    /* connections younger than MAXAGE stay */
    expect_int(C, 0, "CLIENT KILL MAXAGE 100");
    expect_status(c2, "PONG", "PING");
    it_sleep_ms(1100);
    redisContext *young = it_connect(S);
    expect_int(C, 1, "CLIENT KILL USER default MAXAGE 1");
    ck_assert_ptr_null(it_try_cmd(c2, "PING"));
    expect_status(young, "PONG", "PING");
    expect_int(C, 1, "CLIENT KILL USER default");
    ck_assert_ptr_null(it_try_cmd(young, "PING"));
    expect_status(C, "PONG", "PING");
}
END_TEST

/* ---- COMMAND ---- */

START_TEST(test_command_count_and_list) {
    redisReply *count = it_cmd(C, "COMMAND COUNT");
    ck_assert_int_eq(count->type, REDIS_REPLY_INTEGER);
    ck_assert_int_gt(count->integer, 50);
    /* As Valkey's, LIST names the subcommands too; COUNT and COMMAND only
     * the top-level commands. */
    redisReply *list = it_cmd(C, "COMMAND LIST");
    ck_assert_int_eq(list->type, REDIS_REPLY_ARRAY);
    ck_assert_int_gt((long long)list->elements, count->integer);
    redisReply *all = it_cmd(C, "COMMAND");
    ck_assert_int_eq((long long)all->elements, count->integer);
    const char *names = it_fmt(",%s,", it_sorted_join(list));
    static const char *const must[] = {"get",    "set",    "del",     "expire", "multi",
                                       "exec",   "info",   "config",  "client", "command",
                                       "hello",  "scan",   "config|get", "command|getkeysandflags"};
    for (size_t i = 0; i < sizeof(must) / sizeof(*must); i++)
        ck_assert_msg(strstr(names, it_fmt(",%s,", must[i])), "COMMAND LIST lacks %s", must[i]);
}
END_TEST

START_TEST(test_command_info) {
    redisReply *r = it_cmd(C, "COMMAND INFO get");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 1);
    redisReply *get = r->element[0];
    ck_assert_int_eq(get->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(get->elements, 10);
    ck_assert_str_eq(get->element[0]->str, "get");
    ck_assert_int_eq(get->element[1]->integer, 2);
    ck_assert_str_eq(it_sorted_join(get->element[2]), "fast,readonly");
    ck_assert_int_eq(get->element[3]->integer, 1);
    ck_assert_int_eq(get->element[4]->integer, 1);
    ck_assert_int_eq(get->element[5]->integer, 1);
    ck_assert_str_eq(it_sorted_join(get->element[6]), "@fast,@read,@string");
    r = it_cmd(C, "COMMAND INFO set mset nosuchcommand");
    ck_assert_int_eq(r->elements, 3);
    ck_assert_int_eq(r->element[0]->element[1]->integer, -3);
    ck_assert_str_eq(it_sorted_join(r->element[0]->element[2]), "denyoom,write");
    ck_assert_int_eq(r->element[1]->element[1]->integer, -3);
    ck_assert_int_eq(r->element[1]->element[4]->integer, -1);
    ck_assert_int_eq(r->element[1]->element[5]->integer, 2);
    ck_assert_int_eq(r->element[2]->type, REDIS_REPLY_NIL);
    r = it_cmd(C, "COMMAND INFO");
    ck_assert_int_gt(r->elements, 50);
}
END_TEST

START_TEST(test_command_docs) {
    redisReply *r = it_cmd(C, "COMMAND DOCS get");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    ck_assert_str_eq(r->element[0]->str, "get");
    redisReply *doc = r->element[1];
    ck_assert_int_eq(doc->type, REDIS_REPLY_ARRAY);
    const char *summary = NULL, *since = NULL, *group = NULL;
    for (size_t i = 0; i + 1 < doc->elements; i += 2) {
        const char *k = doc->element[i]->str;
        if (!strcmp(k, "summary")) summary = doc->element[i + 1]->str;
        if (!strcmp(k, "since")) since = doc->element[i + 1]->str;
        if (!strcmp(k, "group")) group = doc->element[i + 1]->str;
    }
    ck_assert_str_eq(summary, "Returns the string value of a key.");
    ck_assert_str_eq(since, "1.0.0");
    ck_assert_str_eq(group, "string");
    expect_reply(C, "[]", "COMMAND DOCS nosuchcommand");
}
END_TEST

START_TEST(test_command_getkeys) {
    expect_reply(C, "[\"a\"]", "COMMAND GETKEYS set a b");
    expect_reply(C, "[\"a\",\"b\"]", "COMMAND GETKEYS mset a 1 b 2");
    expect_reply(C, "[\"x\",\"y\",\"z\"]", "COMMAND GETKEYS del x y z");
    expect_error(C, "ERR The command has no key arguments", "COMMAND GETKEYS ping");
    expect_error(C, "ERR Invalid command specified", "COMMAND GETKEYS nosuchcommand a");
    expect_error(C, "ERR Invalid number of arguments specified for command", "COMMAND GETKEYS get");
    expect_error(C, "ERR unknown subcommand 'foo'. Try COMMAND HELP.", "COMMAND foo");
}
END_TEST

/* ---- SLOWLOG (the server logs every command) ---- */

static void start_slowlog_server(void) {
    S = it_start("--slowlog-log-slower-than", "0", NULL);
    C = it_connect(S);
}

/* The arguments of entry i of SLOWLOG GET, space-joined (tracked). */
static char *slowlog_args(redisReply *entries, size_t i) {
    ck_assert_int_gt(entries->elements, i);
    redisReply *args = entries->element[i]->element[3];
    size_t len = 1;
    for (size_t j = 0; j < args->elements; j++)
        len += args->element[j]->len + 1;
    char *s = it_alloc(len);
    for (size_t j = 0; j < args->elements; j++) {
        if (j) strcat(s, " ");
        strcat(s, args->element[j]->str);
    }
    return s;
}

START_TEST(test_slowlog_entries) {
    start_slowlog_server();
    expect_ok(C, "SLOWLOG RESET");
    expect_int(C, 1, "SLOWLOG LEN"); /* the RESET itself */
    expect_ok(C, "CLIENT SETNAME foobar");
    expect_ok(C, "SET foo bar");
    redisReply *r = it_cmd(C, "SLOWLOG GET 1");
    ck_assert_int_eq(r->elements, 1);
    redisReply *e = r->element[0];
    ck_assert_int_eq(e->elements, 6);
    ck_assert_int_eq(e->element[0]->type, REDIS_REPLY_INTEGER);
    ck_assert_int_le(llabs(e->element[1]->integer - (long long)time(NULL)), 60);
    ck_assert_int_ge(e->element[2]->integer, 0);
    ck_assert_str_eq(slowlog_args(r, 0), "SET foo bar");
    ck_assert_msg(strncmp(e->element[4]->str, "127.0.0.1:", 10) == 0, "client addr: %s",
                  e->element[4]->str);
    ck_assert_str_eq(e->element[5]->str, "foobar");
    r = it_cmd(C, "SLOWLOG GET -1");
    ck_assert_int_eq(r->elements, 5); /* newest first */
    ck_assert_str_eq(slowlog_args(r, 0), "SLOWLOG GET 1");
    ck_assert_str_eq(slowlog_args(r, 1), "SET foo bar");
    ck_assert_str_eq(slowlog_args(r, 2), "CLIENT SETNAME foobar");
    ck_assert_str_eq(slowlog_args(r, 3), "SLOWLOG LEN");
    ck_assert_str_eq(slowlog_args(r, 4), "SLOWLOG RESET");
    ck_assert_int_gt(r->element[0]->element[0]->integer, r->element[4]->element[0]->integer);
}
END_TEST

START_TEST(test_slowlog_max_len) {
    start_slowlog_server();
    expect_ok(C, "CONFIG SET slowlog-max-len 10");
    for (int i = 0; i < 100; i++)
        expect_status(C, "PONG", "PING");
    expect_int(C, 10, "SLOWLOG LEN");
    ck_assert_int_eq(it_cmd(C, "SLOWLOG GET 5")->elements, 5);
    ck_assert_int_eq(it_cmd(C, "SLOWLOG GET -1")->elements, 10);
    ck_assert_int_eq(it_cmd(C, "SLOWLOG GET 20")->elements, 10);
    expect_ok(C, "SLOWLOG RESET");
    expect_ok(C, "CONFIG SET slowlog-max-len 0");
    for (int i = 0; i < 10; i++)
        expect_status(C, "PONG", "PING");
    expect_int(C, 0, "SLOWLOG LEN");
}
END_TEST

START_TEST(test_slowlog_trims_arguments) {
    start_slowlog_server();
    expect_ok(C, "SLOWLOG RESET");
    expect_ok(C, "MSET k1 v1 k2 v2 k3 v3 k4 v4 k5 v5 k6 v6 k7 v7 k8 v8 k9 v9 k10 v10 k11 v11 k12 "
                 "v12 k13 v13 "
                 "k14 v14 k15 v15 k16 v16 k17 v17");
    redisReply *r = it_cmd(C, "SLOWLOG GET 1");
    redisReply *args = r->element[0]->element[3];
    ck_assert_int_eq(args->elements, 32);
    ck_assert_str_eq(args->element[30]->str, "v15");
    ck_assert_str_eq(args->element[31]->str, "... (4 more arguments)");
    char *big = it_alloc(200);
    memset(big, 'A', 129);
    expect_ok(C, "SET foo %s", big);
    r = it_cmd(C, "SLOWLOG GET 1");
    args = r->element[0]->element[3];
    ck_assert_int_eq(args->elements, 3);
    big[128] = '\0';
    ck_assert_str_eq(args->element[2]->str, it_fmt("%s... (1 more bytes)", big));
}
END_TEST

START_TEST(test_slowlog_exec_and_redaction) {
    start_slowlog_server();
    expect_ok(C, "SLOWLOG RESET");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET a 1");
    expect_reply(C, "[+OK]", "EXEC");
    expect_ok(C, "CONFIG SET requirepass secret");
    expect_ok(C, "CONFIG SET requirepass %s", "");
    redisReply *r = it_cmd(C, "SLOWLOG GET -1");
    ck_assert_int_eq(r->elements, 5);
    ck_assert_str_eq(slowlog_args(r, 0), "CONFIG SET requirepass (redacted)");
    ck_assert_str_eq(slowlog_args(r, 1), "CONFIG SET requirepass (redacted)");
    ck_assert_str_eq(slowlog_args(r, 2), "SET a 1");
    ck_assert_str_eq(slowlog_args(r, 3), "MULTI");
    ck_assert_str_eq(slowlog_args(r, 4), "SLOWLOG RESET");
}
END_TEST

/* A secret after a pair that fails is redacted too (Valkey redacts every
 * pair before setting any). */
START_TEST(test_slowlog_redaction_after_failure) {
    start_slowlog_server();
    expect_ok(C, "SLOWLOG RESET");
    redisReply *r = it_cmd(C, "CONFIG SET nosuch x requirepass leaked1 masterauth leaked2");
    ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
    r = it_cmd(C, "CONFIG SET maxmemory-policy bogus masterauth leaked3");
    ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
    r = it_cmd(C, "SLOWLOG GET 2");
    ck_assert_int_eq(r->elements, 2);
    ck_assert_str_eq(slowlog_args(r, 0), "CONFIG SET maxmemory-policy bogus masterauth (redacted)");
    ck_assert_str_eq(slowlog_args(r, 1),
                     "CONFIG SET nosuch x requirepass (redacted) masterauth (redacted)");
}
END_TEST

START_TEST(test_slowlog_disabled) {
    start_slowlog_server();
    expect_ok(C, "CONFIG SET slowlog-log-slower-than -1");
    expect_ok(C, "SLOWLOG RESET");
    expect_status(C, "PONG", "PING");
    expect_int(C, 0, "SLOWLOG LEN");
    expect_reply(C, "[]", "SLOWLOG GET");
    expect_ok(C, "CONFIG SET slowlog-log-slower-than 1000000");
    expect_status(C, "PONG", "PING");
    expect_int(C, 0, "SLOWLOG LEN");
}
END_TEST

/* ---- AUTH and requirepass ---- */

static void start_auth_server(void) {
    S = it_start("--requirepass", "secret", NULL);
    C = it_connect(S);
}

START_TEST(test_noauth) {
    start_auth_server();
    expect_error(C, NOAUTH, "PING");
    expect_error(C, NOAUTH, "GET foo");
    expect_error(C, NOAUTH, "SET foo bar");
    /* Unknown commands and arity errors are reported before NOAUTH. */
    expect_error(
        C, "ERR unknown command 'NOSUCHCOMMAND', with args beginning with: ", "NOSUCHCOMMAND");
    expect_error(C, "ERR wrong number of arguments for 'get' command", "GET");
    expect_error(C, WRONGPASS, "AUTH wrong");
    expect_error(C, NOAUTH, "PING");
    expect_ok(C, "AUTH secret");
    expect_status(C, "PONG", "PING");
    expect_ok(C, "SET foo bar");
}
END_TEST

START_TEST(test_auth_with_username) {
    start_auth_server();
    expect_error(C, WRONGPASS, "AUTH other secret");
    expect_error(C, WRONGPASS, "AUTH default wrong");
    expect_ok(C, "AUTH default secret");
    expect_status(C, "PONG", "PING");
    expect_error(C, "ERR syntax error", "AUTH a b c");
}
END_TEST

START_TEST(test_auth_without_password) {
    expect_error(C,
                 "ERR AUTH <password> called without any password configured for the default user. "
                 "Are you sure "
                 "your configuration is correct?",
                 "AUTH foo");
    /* The default user has no password: any password is accepted. */
    expect_ok(C, "AUTH default foo");
    expect_error(C, WRONGPASS, "AUTH other foo");
}
END_TEST

START_TEST(test_hello_auth) {
    start_auth_server();
    expect_error(C,
                 "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
                 "HELLO <proto> AUTH "
                 "<user> <pass> option can be used to authenticate the client and select the RESP "
                 "protocol version at "
                 "the same time",
                 "HELLO 2");
    expect_error(C, WRONGPASS, "HELLO 2 AUTH default wrong");
    redisReply *r = it_cmd(C, "HELLO 2 AUTH default secret");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 14);
    expect_status(C, "PONG", "PING");
}
END_TEST

START_TEST(test_reset_deauthenticates) {
    start_auth_server();
    expect_ok(C, "AUTH secret");
    expect_status(C, "RESET", "RESET");
    expect_error(C, NOAUTH, "PING");
}
END_TEST

START_TEST(test_requirepass_at_runtime) {
    expect_ok(C, "CONFIG SET requirepass newpass");
    /* Existing connections stay authenticated. */
    expect_status(C, "PONG", "PING");
    redisContext *c2 = it_connect(S);
    expect_error(c2, NOAUTH, "PING");
    expect_ok(c2, "AUTH newpass");
    expect_ok(C, "CONFIG SET requirepass %s", "");
    redisContext *c3 = it_connect(S);
    expect_status(c3, "PONG", "PING");
}
END_TEST

START_TEST(test_unauthenticated_protocol_limits) {
    start_auth_server();
    it_raw *r = it_raw_connect(S);
    it_raw_sendstr(r, "*20\r\n");
    expect_raw(r, "-ERR Protocol error: unauthenticated multibulk length");
    ck_assert(it_raw_wait_closed(r, 5000));
    r = it_raw_connect(S);
    it_raw_sendstr(r, "*1\r\n$20000\r\n");
    expect_raw(r, "-ERR Protocol error: unauthenticated bulk length");
    ck_assert(it_raw_wait_closed(r, 5000));
    expect_ok(C, "AUTH secret");
}
END_TEST

/* ---- maxclients and timeout ---- */

START_TEST(test_maxclients) {
    S = it_start("--maxclients", "5", NULL);
    C = it_connect(S);
    it_wait_until(it_info_int(C, "clients", "connected_clients") == 1, 5000);
    redisContext *others[4];
    for (int i = 0; i < 4; i++) {
        others[i] = it_connect(S);
        expect_status(others[i], "PONG", "PING");
    }
    it_raw *r = it_raw_connect(S);
    expect_raw(r, "-ERR max number of clients reached");
    ck_assert(it_raw_wait_closed(r, 5000));
    ck_assert_int_eq(it_info_int(C, "stats", "rejected_connections"), 1);
    ck_assert_int_eq(it_info_int(C, "clients", "connected_clients"), 5);
    /* A slot frees when a client leaves. */
    it_disconnect(others[0]);
    it_wait_until(it_info_int(C, "clients", "connected_clients") == 4, 5000);
    redisContext *again = it_connect(S);
    expect_status(again, "PONG", "PING");
    expect_reply(C, "[\"maxclients\",\"5\"]", "CONFIG GET maxclients");
}
END_TEST

START_TEST(test_idle_timeout) {
    S = it_start("--timeout", "1", NULL);
    C = it_connect(S);
    it_raw *idle = it_raw_connect(S);
    it_raw_cmd(idle, "PING", NULL);
    expect_raw(idle, "+PONG");
    /* The idle client is closed; C, which keeps talking, is not. */
    long long deadline = it_mstime() + 15000;
    int closed = 0;
    while (!closed && it_mstime() < deadline) {
        expect_status(C, "PONG", "PING");
        closed = it_raw_wait_closed(idle, 200);
    }
    ck_assert_msg(closed, "idle client not closed with timeout 1");
    expect_status(C, "PONG", "PING");
}
END_TEST

static Suite *server_suite(void) {
    Suite *s = suite_create("server");
    TCase *tc = it_tcase(s, "basics");
    tcase_add_test(tc, test_ping_echo);
    tcase_add_test(tc, test_time);
    tcase_add_test(tc, test_quit);
    tcase_add_test(tc, test_reset);
    tcase_add_test(tc, test_readonly_readwrite);
    tcase_add_test(tc, test_shutdown);

    tc = it_tcase(s, "persistence");
    tcase_add_test(tc, test_shutdown_option_errors);
    tcase_add_test(tc, test_shutdown_save_refused);
    tcase_add_test(tc, test_save_commands_refused);
    tcase_add_test(tc, test_changes_since_last_save);
    tc = it_tcase_bare(s, "shutdown");
    tcase_add_test(tc, test_shutdown_plain);
    tcase_add_test(tc, test_shutdown_now_force);
    tcase_add_test(tc, test_shutdown_save_force);
    tcase_add_test(tc, test_lastsave_is_start_time);

    tc = it_tcase(s, "info");
    tcase_add_test(tc, test_info_default_sections);
    tcase_add_test(tc, test_info_one_section);
    tcase_add_test(tc, test_info_server_fields);
    tcase_add_test(tc, test_info_clients_and_memory);
    tcase_add_test(tc, test_info_stats_counters);
    tcase_add_test(tc, test_info_keyspace_lines);
    tcase_add_test(tc, test_info_commandstats);
    tcase_add_test(tc, test_info_errorstats);
    tcase_add_test(tc, test_info_errorstats_prefixes);
    tcase_add_test(tc, test_config_resetstat);

    tc = it_tcase(s, "config");
    tcase_add_test(tc, test_config_get);
    tcase_add_test(tc, test_config_set);
    tcase_add_test(tc, test_config_set_errors);
    tcase_add_test(tc, test_config_rewrite_without_file);
    tcase_add_test(tc, test_config_rewrite);
    tcase_add_test(tc, test_config_file_and_args);

    tc = it_tcase(s, "client");
    tcase_add_test(tc, test_client_id);
    tcase_add_test(tc, test_client_setname_getname);
    tcase_add_test(tc, test_client_list);
    tcase_add_test(tc, test_client_info);
    tcase_add_test(tc, test_client_setinfo);
    tcase_add_test(tc, test_client_totals);
    tcase_add_test(tc, test_client_kill_addr);
    tcase_add_test(tc, test_client_kill_filters);
    tcase_add_test(tc, test_client_kill_user_maxage);
    tcase_add_test(tc, test_client_reply);
    tcase_add_test(tc, test_client_no_touch);

    tc = it_tcase(s, "command");
    tcase_add_test(tc, test_command_count_and_list);
    tcase_add_test(tc, test_command_info);
    tcase_add_test(tc, test_command_docs);
    tcase_add_test(tc, test_command_getkeys);

    tc = it_tcase_bare(s, "slowlog");
    tcase_add_test(tc, test_slowlog_entries);
    tcase_add_test(tc, test_slowlog_max_len);
    tcase_add_test(tc, test_slowlog_trims_arguments);
    tcase_add_test(tc, test_slowlog_exec_and_redaction);
    tcase_add_test(tc, test_slowlog_redaction_after_failure);
    tcase_add_test(tc, test_slowlog_disabled);

    tc = it_tcase_bare(s, "auth");
    tcase_add_test(tc, test_noauth);
    tcase_add_test(tc, test_auth_with_username);
    tcase_add_test(tc, test_hello_auth);
    tcase_add_test(tc, test_reset_deauthenticates);
    tcase_add_test(tc, test_unauthenticated_protocol_limits);
    tc = it_tcase(s, "auth-default");
    tcase_add_test(tc, test_auth_without_password);
    tcase_add_test(tc, test_requirepass_at_runtime);

    tc = it_tcase_bare(s, "limits");
    tcase_add_test(tc, test_maxclients);
    tcase_add_test(tc, test_idle_timeout);
    return s;
}

int main(void) {
    return it_run(server_suite());
}
