/* check_blocking.c -- unit tests for the blocked-clients machinery
 * (core/session/blocking.c) through the real read path and dispatcher:
 * connection-less clients are fed RESP requests, and two test-only
 * blocking commands stand in for the list commands:
 *
 *   TPOP key [key ...] timeout    pops a string key (replies [key, value]
 *                                 and deletes it), else blocks
 *   TMOVE src dst timeout         moves src's string to dst (replies the
 *                                 value), else blocks on src
 *
 * While `refuse` is set, TPOP blocks even when a key exists (a rerun that
 * finds nothing). Covered: serving, FIFO order, a rerun that blocks again
 * keeping its place, pipelined requests held and resumed, MULTI/EXEC (a
 * push inside wakes after EXEC; a blocking command inside replies at
 * once), cascades, SWAPDB, fractional timeouts through the event-loop
 * timer, CLIENT UNBLOCK, CLIENT LIST flags, INFO gauges, statistics
 * counted once, duplicate keys, a blocked client freed, a wait woken by
 * its key's deletion (TWATCH: BLOCKING_WAKE_ON_DELETE) and an argument
 * pinned for the reruns (TPIN: blocking_rewrite_arg). */
#include "client_fixture.h"
#include "common/common.h"
#include "config/config.h"
#include "event/event.h"
#include "keyspace/db.h"
#include "server/info.h"
#include "server/server.h"
#include "server/server_config.h"
#include "session/blocking.h"
#include "session/client.h"
#include "session/command.h"
#include "session/reply.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int refuse;

static void tpop_proc(client *c) {
    int last = c->argc - 1;
    if (!refuse) {
        for (int i = 1; i < last; i++) {
            db_entry *e = db_lookup(c->db, c->argv[i].ptr, c->argv[i].len, 1);
            size_t len;
            const char *v = e ? db_entry_str(e, &len) : NULL;
            if (!v) continue;
            reply_array(c, 2);
            reply_bulk(c, c->argv[i].ptr, c->argv[i].len);
            reply_bulk(c, v, len);
            db_delete(c->db, c->argv[i].ptr, c->argv[i].len);
            return;
        }
    }
    int64_t deadline;
    if (blocking_parse_timeout(c, &c->argv[last], &deadline) != K_OK) return;
    int pos[16];
    for (int i = 1; i < last && i <= 16; i++)
        pos[i - 1] = i;
    blocking_wait(c, pos, last - 1, deadline, BLOCKING_NULL_ARRAY);
}

static void tmove_proc(client *c) {
    db_entry *e = db_lookup(c->db, c->argv[1].ptr, c->argv[1].len, 1);
    size_t len;
    const char *v = e ? db_entry_str(e, &len) : NULL;
    if (v) {
        char buf[64];
        memcpy(buf, v, len < sizeof(buf) ? len : sizeof(buf));
        len = len < sizeof(buf) ? len : sizeof(buf);
        db_delete(c->db, c->argv[1].ptr, c->argv[1].len);
        db_set_str(c->db, c->argv[2].ptr, c->argv[2].len, buf, len, 0, -1);
        reply_bulk(c, buf, len);
        return;
    }
    int64_t deadline;
    if (blocking_parse_timeout(c, &c->argv[3], &deadline) != K_OK) return;
    int pos[] = {1};
    blocking_wait(c, pos, 1, deadline, BLOCKING_NULL_BULK);
}

/* TKILL id key timeout: pops key like TPOP, then frees client id. */
static void tkill_proc(client *c) {
    if (db_lookup(c->db, c->argv[2].ptr, c->argv[2].len, 1)) {
        db_delete(c->db, c->argv[2].ptr, c->argv[2].len);
        long long id = atoll(c->argv[1].ptr); /* the request's next byte is '\r' */
        client *victim = client_by_id((uint64_t)id);
        if (victim) client_free(victim);
        reply_ok(c);
        return;
    }
    int64_t deadline;
    if (blocking_parse_timeout(c, &c->argv[3], &deadline) != K_OK) return;
    int pos[] = {2};
    blocking_wait(c, pos, 1, deadline, BLOCKING_NULL_ARRAY);
}

/* TWATCH key timeout: +GO when key holds "go"; a rerun that finds key
 * gone replies -GONE; otherwise blocks, woken by deletion too
 * (BLOCKING_WAKE_ON_DELETE, as XREADGROUP). */
static void twatch_proc(client *c) {
    db_entry *e = db_lookup(c->db, c->argv[1].ptr, c->argv[1].len, 1);
    size_t len;
    const char *v = e ? db_entry_str(e, &len) : NULL;
    if (v && len == 2 && memcmp(v, "go", 2) == 0) {
        reply_simple(c, "GO");
        return;
    }
    if (!e && blocking_is_rerun(c)) {
        reply_error(c, "GONE");
        return;
    }
    int64_t deadline;
    if (blocking_parse_timeout(c, &c->argv[2], &deadline) != K_OK) return;
    int pos[] = {1};
    blocking_wait_flags(c, pos, 1, deadline, BLOCKING_NULL_ARRAY, BLOCKING_WAKE_ON_DELETE);
}

/* TPIN key arg timeout: a first run blocks and pins arg to key's value
 * (blocking_rewrite_arg, as XREAD pins `$`); a rerun replies the arg. */
static void tpin_proc(client *c) {
    if (blocking_is_rerun(c)) {
        reply_bulk(c, c->argv[2].ptr, c->argv[2].len);
        return;
    }
    int64_t deadline;
    if (blocking_parse_timeout(c, &c->argv[3], &deadline) != K_OK) return;
    db_entry *e = db_lookup(c->db, c->argv[1].ptr, c->argv[1].len, 1);
    size_t len = 0;
    const char *v = e ? db_entry_str(e, &len) : "";
    char pinned[64];
    len = len < sizeof(pinned) ? len : sizeof(pinned);
    memcpy(pinned, v, len); /* the key's bytes may move */
    int pos[] = {1};
    blocking_wait(c, pos, 1, deadline, BLOCKING_NULL_ARRAY);
    blocking_rewrite_arg(c, 2, pinned, len);
}

static command test_cmds[] = {
    {.name = "twatch",
     .proc = twatch_proc,
     .arity = 3,
     .flags = CMD_READONLY | CMD_BLOCKING,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .group = "stream"},
    {.name = "tpin",
     .proc = tpin_proc,
     .arity = 4,
     .flags = CMD_READONLY | CMD_BLOCKING,
     .first_key = 1,
     .last_key = 1,
     .key_step = 1,
     .group = "stream"},
    {.name = "tpop",
     .proc = tpop_proc,
     .arity = -3,
     .flags = CMD_WRITE | CMD_BLOCKING,
     .first_key = 1,
     .last_key = -2,
     .key_step = 1,
     .group = "list"},
    {.name = "tmove",
     .proc = tmove_proc,
     .arity = 4,
     .flags = CMD_WRITE | CMD_BLOCKING,
     .first_key = 1,
     .last_key = 2,
     .key_step = 1,
     .group = "list"},
    {.name = "tkill",
     .proc = tkill_proc,
     .arity = 4,
     .flags = CMD_WRITE | CMD_BLOCKING,
     .first_key = 2,
     .last_key = 2,
     .key_step = 1,
     .group = "list"},
};

/* ---- helpers ---- */

/* Feeds one request, its words separated by spaces, as RESP. */
static void send_cmd(client *c, const char *fmt, ...) {
    char line[512], req[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    const char *words[32];
    size_t lens[32];
    int n = 0;
    for (char *p = line; *p && n < 32;) {
        while (*p == ' ')
            p++;
        if (!*p) break;
        words[n] = p;
        lens[n] = strcspn(p, " ");
        p += lens[n];
        n++;
    }
    int off = snprintf(req, sizeof(req), "*%d\r\n", n);
    for (int i = 0; i < n; i++)
        off += snprintf(req + off, sizeof(req) - (size_t)off, "$%zu\r\n%.*s\r\n", lens[i],
                        (int)lens[i], words[i]);
    client_feed_input(c, req, (size_t)off);
}

static client *a, *b, *p; /* two waiters and a pusher */

static void setup(void) {
    a = client_create(NULL);
    b = client_create(NULL);
    p = client_create(NULL);
    refuse = 0;
}

static void teardown(void) {
    client_free(a);
    client_free(b);
    client_free(p);
    blocking_before_sleep();
    db_flush_all();
    ck_assert_int_eq(stat("blocked_clients"), 0);
    ck_assert_int_eq(stat("total_blocking_keys"), 0);
    ck_assert_int_eq(stat("clients_in_timeout_table"), 0);
    ck_assert_int_eq(stat("total_blocking_keys_on_nokey"), 0);
}

#define POP_K_V "*2\r\n$1\r\nk\r\n$1\r\nv\r\n"

/* ---- tests ---- */

START_TEST(test_serve_at_once) {
    send_cmd(p, "SET k v");
    expect(p, "+OK\r\n");
    send_cmd(a, "TPOP k 0");
    expect(a, POP_K_V);
    ck_assert_ptr_null(a->bstate);
    ck_assert_int_eq(stat("blocked_clients"), 0);
}
END_TEST

START_TEST(test_block_then_serve) {
    send_cmd(a, "TPOP k 0");
    expect(a, "");
    ck_assert(blocking_is_blocked(a));
    ck_assert_int_eq(stat("blocked_clients"), 1);
    ck_assert_int_eq(stat("total_blocking_keys"), 1);
    ck_assert_int_eq(stat("clients_in_timeout_table"), 0);
    char line[1024];
    client_info_line(a, line, sizeof(line));
    ck_assert_msg(strstr(line, " flags=b ") && strstr(line, " cmd=tpop "), "%s", line);
    /* A key set to something else is a change too, but nothing is there. */
    send_cmd(p, "SET other v");
    expect(p, "+OK\r\n");
    expect(a, "");
    send_cmd(p, "SET k v");
    expect(p, "+OK\r\n");
    expect(a, POP_K_V);
    ck_assert_int_eq(stat("blocked_clients"), 0);
    ck_assert_int_eq(stat("total_blocking_keys"), 0);
    send_cmd(p, "EXISTS k");
    expect(p, ":0\r\n");
    client_info_line(a, line, sizeof(line));
    ck_assert_msg(strstr(line, " flags=u "), "%s", line); /* pipeline not resumed yet */
    blocking_before_sleep();
    client_info_line(a, line, sizeof(line));
    ck_assert_msg(strstr(line, " flags=N "), "%s", line);
}
END_TEST

START_TEST(test_pipeline_held_and_resumed) {
    feed(a, "*3\r\n$4\r\nTPOP\r\n$1\r\nk\r\n$1\r\n0\r\n*1\r\n$4\r\nPING\r\n");
    expect(a, "");
    /* More requests arrive while blocked: they wait too. */
    send_cmd(a, "ECHO hi");
    expect(a, "");
    send_cmd(p, "SET k v");
    expect(a, POP_K_V); /* served, but the rest waits for before-sleep */
    blocking_before_sleep();
    expect(a, "+PONG\r\n$2\r\nhi\r\n");
}
END_TEST

START_TEST(test_fifo) {
    client *c3 = client_create(NULL);
    send_cmd(a, "TPOP k 0");
    send_cmd(b, "TPOP k 0");
    send_cmd(c3, "TPOP k 0");
    ck_assert_int_eq(stat("blocked_clients"), 3);
    ck_assert_int_eq(stat("total_blocking_keys"), 1);
    send_cmd(p, "SET k v");
    expect(a, POP_K_V);
    expect(b, "");
    expect(c3, "");
    send_cmd(p, "SET k v");
    expect(b, POP_K_V);
    expect(c3, "");
    /* The first waiter blocks again behind the last one. */
    blocking_before_sleep();
    send_cmd(a, "TPOP k 0");
    send_cmd(p, "SET k v");
    expect(c3, POP_K_V);
    expect(a, "");
    send_cmd(p, "SET k v");
    expect(a, POP_K_V);
    client_free(c3);
}
END_TEST

START_TEST(test_rerun_blocks_again_keeps_place) {
    command *tpop = command_lookup("tpop", 4);
    long long calls = tpop->calls, total = stat("total_commands_processed");
    send_cmd(a, "TPOP k 0");
    send_cmd(b, "TPOP k 0");
    ck_assert_int_eq(tpop->calls, calls); /* not counted while waiting */
    refuse = 1;
    send_cmd(p, "SET k v");
    expect(a, "");
    expect(b, "");
    ck_assert(blocking_is_blocked(a) && blocking_is_blocked(b));
    ck_assert_int_eq(tpop->calls, calls);
    refuse = 0;
    send_cmd(p, "SET k v");
    expect(a, POP_K_V);
    expect(b, "");
    ck_assert_int_eq(tpop->calls, calls + 1);
    /* SET, SET, and one TPOP */
    ck_assert_int_eq(stat("total_commands_processed"), total + 3);
    ck_assert_int_eq(a->commands_processed, 1);
}
END_TEST

START_TEST(test_multi_exec) {
    send_cmd(a, "TPOP k 0");
    send_cmd(p, "MULTI");
    send_cmd(p, "SET k v");
    send_cmd(p, "SET x y");
    expect(p, "+OK\r\n+QUEUED\r\n+QUEUED\r\n");
    expect(a, "");
    send_cmd(p, "EXEC");
    expect(p, "*2\r\n+OK\r\n+OK\r\n");
    expect(a, POP_K_V);
    /* A push and its removal inside one transaction wake no one. */
    send_cmd(b, "TPOP k 0");
    send_cmd(p, "MULTI");
    send_cmd(p, "SET k v");
    send_cmd(p, "DEL k");
    send_cmd(p, "EXEC");
    expect(p, "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n:1\r\n");
    expect(b, "");
    ck_assert(blocking_is_blocked(b));
    /* Inside a transaction a blocking command answers at once. */
    send_cmd(p, "MULTI");
    send_cmd(p, "TPOP nothing 0");
    send_cmd(p, "TMOVE nothing dst 0");
    send_cmd(p, "EXEC");
    expect(p, "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n*-1\r\n$-1\r\n");
    ck_assert_ptr_null(p->bstate);
}
END_TEST

START_TEST(test_cascade) {
    /* a moves src into mid, where b waits: b is served in the same round,
     * before the pusher's next request. */
    send_cmd(a, "TMOVE src mid 0");
    send_cmd(b, "TPOP mid 0");
    feed(p, "*3\r\n$3\r\nSET\r\n$3\r\nsrc\r\n$1\r\nv\r\n*2\r\n$6\r\nEXISTS\r\n$3\r\nmid\r\n");
    expect(p, "+OK\r\n:0\r\n");
    expect(a, "$1\r\nv\r\n");
    expect(b, "*2\r\n$3\r\nmid\r\n$1\r\nv\r\n");
}
END_TEST

START_TEST(test_multiple_keys_and_duplicates) {
    send_cmd(a, "TPOP k1 k2 k1 k2 0");
    ck_assert_int_eq(stat("total_blocking_keys"), 2);
    send_cmd(b, "TPOP k2 0");
    ck_assert_int_eq(stat("total_blocking_keys"), 2);
    send_cmd(p, "SET k2 v");
    expect(a, "*2\r\n$2\r\nk2\r\n$1\r\nv\r\n");
    expect(b, "");
    ck_assert_int_eq(stat("total_blocking_keys"), 1);
}
END_TEST

START_TEST(test_swapdb_and_select) {
    send_cmd(a, "SELECT 9");
    send_cmd(a, "TPOP k 0");
    expect(a, "+OK\r\n");
    send_cmd(p, "SET k v"); /* db 0 */
    expect(a, "");
    send_cmd(p, "SWAPDB 0 9");
    expect(p, "+OK\r\n+OK\r\n");
    expect(a, POP_K_V);
    send_cmd(p, "SELECT 9");
    send_cmd(p, "DBSIZE");
    expect(p, "+OK\r\n:0\r\n");
    send_cmd(p, "SWAPDB 0 9");
    send_cmd(p, "SELECT 0");
    take(p);
}
END_TEST

/* Runs the event loop (timers) and before-sleep until c has a reply or
 * max_ms pass; returns the ms it took. */
static int64_t wait_reply(client *c, int64_t max_ms) {
    int64_t start = event_now_ms();
    while (!c->reply_bytes && event_now_ms() - start < max_ms) {
        event_process(srv.el, 5);
        blocking_before_sleep();
    }
    return event_now_ms() - start;
}

START_TEST(test_fractional_timeout) {
    command *tpop = command_lookup("tpop", 4);
    long long calls = tpop->calls;
    feed(a, "*3\r\n$4\r\nTPOP\r\n$1\r\nk\r\n$3\r\n0.1\r\n*1\r\n$4\r\nPING\r\n");
    ck_assert_int_eq(stat("clients_in_timeout_table"), 1);
    send_cmd(b, "TPOP k 5");
    int64_t took = wait_reply(a, 2000);
    ck_assert_msg(took >= 90 && took < 250, "timed out after %lld ms", (long long)took);
    ck_assert_ptr_null(a->bstate);
    blocking_before_sleep();
    expect(a, "*-1\r\n+PONG\r\n");
    ck_assert_int_eq(tpop->calls, calls + 1);
    ck_assert_int_eq(tpop->failed_calls, 0);
    ck_assert_int_eq(stat("clients_in_timeout_table"), 1); /* b still waits */
    /* A null bulk for the move; RESP3 nulls are _ */
    send_cmd(a, "HELLO 3");
    take(a);
    send_cmd(a, "TMOVE k dst 0.01");
    wait_reply(a, 1000);
    expect(a, "_\r\n");
    send_cmd(a, "TPOP k 0.01");
    wait_reply(a, 1000);
    expect(a, "_\r\n");
    send_cmd(a, "HELLO 2");
    take(a);
    send_cmd(a, "TMOVE k dst 0.01");
    wait_reply(a, 1000);
    expect(a, "$-1\r\n");
}
END_TEST

START_TEST(test_timeout_errors) {
    send_cmd(a, "TPOP k -1");
    expect(a, "-ERR timeout is negative\r\n");
    send_cmd(a, "TPOP k abc");
    expect(a, "-ERR timeout is not a float or out of range\r\n");
    send_cmd(a, "TPOP k 0x7FFFFFFFFFFFFF");
    expect(a, "-ERR timeout is out of range\r\n");
    send_cmd(a, "TPOP k 1e400"); /* a long double holds it */
    expect(a, "-ERR timeout is out of range\r\n");
    send_cmd(a, "TPOP k 1e5000");
    expect(a, "-ERR timeout is not a float or out of range\r\n");
    send_cmd(a, "TPOP k nan");
    expect(a, "-ERR timeout is not a float or out of range\r\n");
    ck_assert_int_eq(stat("blocked_clients"), 0);
    /* Rounded up: a tiny negative timeout is 0, forever. */
    send_cmd(a, "TPOP k -0.0001");
    expect(a, "");
    ck_assert(blocking_is_blocked(a));
    ck_assert_int_eq(stat("clients_in_timeout_table"), 0);
}
END_TEST

START_TEST(test_client_unblock) {
    char req[64];
    command *tpop = command_lookup("tpop", 4);
    long long failed = tpop->failed_calls;
    send_cmd(a, "TPOP k 0");
    snprintf(req, sizeof(req), "CLIENT UNBLOCK %llu", (unsigned long long)a->id);
    send_cmd(p, "%s", req);
    expect(p, ":1\r\n");
    expect(a, "*-1\r\n");
    send_cmd(p, "%s", req);
    expect(p, ":0\r\n");
    send_cmd(a, "TMOVE k dst 0");
    send_cmd(p, "%s TIMEOUT", req);
    expect(p, ":1\r\n");
    expect(a, "$-1\r\n");
    send_cmd(a, "TPOP k 0");
    send_cmd(p, "%s ERROR", req);
    expect(p, ":1\r\n");
    expect(a, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n");
    ck_assert_int_eq(tpop->failed_calls, failed + 1);
    send_cmd(p, "CLIENT UNBLOCK asd");
    expect(p, "-ERR value is not an integer or out of range\r\n");
    send_cmd(p, "%s FOO", req);
    expect(p, "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n");
    send_cmd(p, "CLIENT UNBLOCK 999999");
    expect(p, ":0\r\n");
    /* Still functional afterwards. */
    blocking_before_sleep();
    send_cmd(a, "TPOP k 0");
    send_cmd(p, "SET k v");
    expect(a, POP_K_V);
}
END_TEST

START_TEST(test_blocked_client_freed) {
    client *c3 = client_create(NULL);
    send_cmd(c3, "TPOP k 1000");
    send_cmd(a, "TPOP k 0");
    ck_assert_int_eq(stat("blocked_clients"), 2);
    client_free(c3);
    ck_assert_int_eq(stat("blocked_clients"), 1);
    ck_assert_int_eq(stat("clients_in_timeout_table"), 0);
    send_cmd(p, "SET k v");
    expect(a, POP_K_V);
    /* Freed while its pipeline waits to resume. */
    c3 = client_create(NULL);
    feed(c3, "*3\r\n$4\r\nTPOP\r\n$1\r\nk\r\n$1\r\n0\r\n*1\r\n$4\r\nPING\r\n");
    send_cmd(p, "SET k v");
    ck_assert(c3->flags & CLIENT_UNBLOCKED);
    client_free(c3);
    blocking_before_sleep();
}
END_TEST

/* A waiter freed by an earlier waiter's rerun is closed later, never
 * touched after its free (ASan). */
START_TEST(test_waiter_freed_by_rerun) {
    client *victim = client_create(NULL);
    send_cmd(a, "TKILL %llu k 0", (unsigned long long)victim->id);
    send_cmd(victim, "TPOP k 0");
    send_cmd(b, "TPOP k 0");
    ck_assert_int_eq(stat("blocked_clients"), 3);
    send_cmd(p, "SET k v");
    expect(a, "+OK\r\n");
    ck_assert(victim->flags & CLIENT_CLOSE_ASAP);
    send_cmd(p, "SET k v"); /* the closing client is passed over */
    expect(b, POP_K_V);
    client_free_closed();
    ck_assert_int_eq(stat("blocked_clients"), 0);
}
END_TEST

START_TEST(test_info_fields) {
    send_cmd(a, "TPOP k1 k2 0");
    send_cmd(b, "TPOP k2 0.5");
    send_cmd(p, "INFO clients");
    const char *info = take(p);
    ck_assert_msg(strstr(info, "blocked_clients:2\r\n"), "%s", info);
    ck_assert_msg(strstr(info, "clients_in_timeout_table:1\r\n"), "%s", info);
    ck_assert_msg(strstr(info, "total_blocking_keys:2\r\n"), "%s", info);
    ck_assert_msg(strstr(info, "total_blocking_keys_on_nokey:0\r\n"), "%s", info);
    /* CONFIG RESETSTAT leaves the gauges alone. */
    send_cmd(p, "CONFIG RESETSTAT");
    expect(p, "+OK\r\n");
    ck_assert_int_eq(stat("blocked_clients"), 2);
}
END_TEST

/* A wait with BLOCKING_WAKE_ON_DELETE is rerun when its key is deleted,
 * flushed or changes, and counted in total_blocking_keys_on_nokey. */
START_TEST(test_wake_on_delete) {
    send_cmd(p, "SET k v");
    expect(p, "+OK\r\n");
    send_cmd(a, "TWATCH k 0");
    send_cmd(b, "TPOP other 0");
    expect(a, "");
    ck_assert_int_eq(stat("total_blocking_keys_on_nokey"), 1);
    send_cmd(p, "SET k x"); /* a change: rerun, nothing to serve */
    expect(p, "+OK\r\n");
    expect(a, "");
    ck_assert(blocking_is_blocked(a));
    send_cmd(p, "DEL k");
    expect(p, ":1\r\n");
    expect(a, "-GONE\r\n");
    ck_assert_int_eq(stat("total_blocking_keys_on_nokey"), 0);
    blocking_before_sleep();
    /* A flush wakes it too; the plain waiter on `other` stays. */
    send_cmd(p, "SET k v");
    send_cmd(a, "TWATCH k 0");
    expect(a, "");
    send_cmd(p, "FLUSHALL SYNC");
    expect(p, "+OK\r\n+OK\r\n");
    expect(a, "-GONE\r\n");
    expect(b, ""); /* a plain wait on a missing key is not offered it */
    ck_assert(blocking_is_blocked(b));
    ck_assert_int_eq(stat("total_blocking_keys_on_nokey"), 0);
}
END_TEST

/* blocking_rewrite_arg: the rerun sees the argument pinned when the
 * client blocked, not the one it sent. */
START_TEST(test_rewrite_arg) {
    send_cmd(p, "SET k first");
    send_cmd(a, "TPIN k $ 0");
    expect(a, "");
    send_cmd(p, "SET k second");
    expect(a, "$5\r\nfirst\r\n");
}
END_TEST

static Suite *blocking_suite(void) {
    Suite *s = suite_create("blocking");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_serve_at_once);
    tcase_add_test(tc, test_block_then_serve);
    tcase_add_test(tc, test_pipeline_held_and_resumed);
    tcase_add_test(tc, test_fifo);
    tcase_add_test(tc, test_rerun_blocks_again_keeps_place);
    tcase_add_test(tc, test_multi_exec);
    tcase_add_test(tc, test_cascade);
    tcase_add_test(tc, test_multiple_keys_and_duplicates);
    tcase_add_test(tc, test_swapdb_and_select);
    tcase_add_test(tc, test_fractional_timeout);
    tcase_add_test(tc, test_timeout_errors);
    tcase_add_test(tc, test_client_unblock);
    tcase_add_test(tc, test_blocked_client_freed);
    tcase_add_test(tc, test_waiter_freed_by_rerun);
    tcase_add_test(tc, test_info_fields);
    tcase_add_test(tc, test_wake_on_delete);
    tcase_add_test(tc, test_rewrite_arg);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    char *err = NULL;
    server_config_init();
    srv.log.verbosity = LL_WARNING;
    if (server_init_core(&err) != K_OK) {
        fprintf(stderr, "server_init_core: %s\n", err);
        return EXIT_FAILURE;
    }
    for (size_t i = 0; i < K_ARRAY_LEN(test_cmds); i++)
        command_register(&test_cmds[i]);
    SRunner *sr = srunner_create(blocking_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    for (size_t i = 0; i < K_ARRAY_LEN(test_cmds); i++)
        command_unregister(test_cmds[i].name);
    server_teardown();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
