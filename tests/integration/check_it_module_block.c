/* check_it_module_block.c -- ABI 1.2's blocking clients, long-running
 * (busy) calls and keyspace events against a real keel-server with the
 * tests/modules/blockpop.c fixture loaded: several blocked clients served
 * in order by a module type's pushes, timeouts, CLIENT UNBLOCK both ways,
 * a disconnect while a thread still holds the handle, blocking refused
 * inside MULTI, unblock from a thread and from a timer, the statistics of
 * a blocked command; the busy phase (other clients refused per command,
 * the busy client's pipeline and pending output held, the real caller held
 * when the long command runs inside a module's call, an allow-busy kill,
 * SHUTDOWN NOSAVE and a command that ignores it, a callback's yield
 * starting nothing, the pub/sub context refused before the busy error,
 * busy-reply-threshold and its alias, with I/O threads too); module
 * subscribers hearing events the directive leaves off, in the event's
 * database and read-only, and a module event reaching pub/sub. */
#include "harness.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define BP_MODULE KEEL_TEST_MODULE_DIR "/blockpop.so"
#define CALLMOD_MODULE KEEL_TEST_MODULE_DIR "/callmod.so"
#define BP_BUSY_ERR "BUSY blockpop is busy. You can only call BP.KILL or SHUTDOWN NOSAVE."

static it_server *bp_start(const char *a1, const char *a2) {
    if (a1) return it_start("--loadmodule", BP_MODULE, a1, a2, NULL);
    return it_start("--loadmodule", BP_MODULE, NULL);
}

static long long blocked(redisContext *c) {
    return it_info_int(c, "clients", "blocked_clients");
}

static long long raw_client_id(it_raw *r) {
    it_raw_cmd(r, "CLIENT", "ID", NULL);
    it_value *v = it_raw_read(r);
    ck_assert_ptr_nonnull(v);
    return v->integer;
}

/* The module's events since the last call, joined with ','. */
static const char *bp_events(redisContext *c) {
    redisReply *r = it_cmd(c, "BP.EVENTS");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    char *out = it_alloc(8192);
    out[0] = '\0';
    for (size_t i = 0; i < r->elements; i++) {
        strncat(out, r->element[i]->str, 8192 - strlen(out) - 2);
        strcat(out, ",");
    }
    return out;
}

/* ---- blocking clients ---- */

START_TEST(test_served_in_order) {
    it_server *s = bp_start(NULL, NULL);
    redisContext *c = it_connect(s);
    it_raw *r1 = it_raw_connect(s), *r2 = it_raw_connect(s);
    long long id1 = raw_client_id(r1);
    it_raw_cmd(r1, "BP.POP", "k", "0", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    it_raw_cmd(r2, "BP.POP", "k", "0", NULL);
    it_wait_until(blocked(c) == 2, 5000);
    redisReply *list = it_cmd(c, "CLIENT LIST");
    char *line = strstr(list->str, it_fmt("id=%lld ", id1));
    ck_assert_ptr_nonnull(line);
    *strchr(line, '\n') = '\0';
    ck_assert_msg(strstr(line, " flags=b ") && strstr(line, " cmd=bp.pop "), "%s", line);
    ck_assert_int_eq(it_info_int(c, "clients", "total_blocking_keys"), 1);
    expect_int(c, 1, "BP.PUSH k a");
    expect_raw(r1, "\"a\"");
    expect_int(c, 1, "BP.PUSH k b");
    expect_raw(r2, "\"b\"");
    ck_assert_int_eq(blocked(c), 0);
    ck_assert_int_eq(it_info_int(c, "clients", "total_blocking_keys"), 0);
    expect_int(c, 0, "EXISTS k");
    /* Both blocked pops counted once each, when served. */
    char *stat = it_info_str(c, "commandstats", "cmdstat_bp.pop");
    ck_assert_msg(stat && !strncmp(stat, "calls=2,", 8), "%s", stat ? stat : "(none)");
    ck_assert_int_eq(it_cmd(c, "BP.FREED")->integer, 2);
    /* Pushes inside MULTI serve after EXEC; the client's pipeline goes on. */
    it_raw_sendstr(r1, "*3\r\n$6\r\nBP.POP\r\n$1\r\nq\r\n$1\r\n0\r\n*1\r\n$4\r\nPING\r\n");
    it_wait_until(blocked(c) == 1, 5000);
    expect_ok(c, "MULTI");
    expect_status(c, "QUEUED", "BP.PUSH q x");
    expect_status(c, "QUEUED", "BP.PUSH q y");
    expect_reply(c, "[:1,:2]", "EXEC");
    expect_raw(r1, "\"x\"");
    expect_raw(r1, "+PONG");
    expect_bulk(c, "y", "BP.POP q 0");
}
END_TEST

START_TEST(test_timeouts_and_unblock) {
    it_server *s = bp_start(NULL, NULL);
    redisContext *c = it_connect(s);
    it_raw *r = it_raw_connect(s);
    long long id = raw_client_id(r);
    long long t0 = it_mstime();
    expect_nil(c, "BP.POP k 100");
    ck_assert_int_ge(it_mstime() - t0, 90);
    /* A timeout without keys: on_timeout replies, the thread's late
     * unblock then only frees the handle. */
    expect_error(c, "TIMEDOUT nobody unblocked it", "BP.THREADPOP 50 300");
    long long freed = it_cmd(c, "BP.FREED")->integer;
    it_wait_until(it_cmd(c, "BP.FREED")->integer == freed + 1, 5000);
    /* CLIENT UNBLOCK TIMEOUT runs on_timeout; ERROR replies UNBLOCKED. */
    it_raw_cmd(r, "BP.THREADPOP", "0", "1000", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    expect_int(c, 1, "CLIENT UNBLOCK %lld", id);
    expect_raw(r, "-TIMEDOUT nobody unblocked it");
    it_raw_cmd(r, "BP.THREADPOP", "0", "1000", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    expect_int(c, 1, "CLIENT UNBLOCK %lld ERROR", id);
    expect_raw(r, "-UNBLOCKED client unblocked via CLIENT UNBLOCK");
    expect_int(c, 0, "CLIENT UNBLOCK %lld", id);
    ck_assert_int_eq(blocked(c), 0);
    /* Without on_timeout, CLIENT UNBLOCK (either way) leaves the wait
     * alone and answers 0, as Valkey; a timeout still replies a null. */
    it_raw_cmd(r, "BP.POP", "k", "0", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    expect_int(c, 0, "CLIENT UNBLOCK %lld TIMEOUT", id);
    expect_int(c, 0, "CLIENT UNBLOCK %lld ERROR", id);
    ck_assert_int_eq(blocked(c), 1);
    expect_int(c, 1, "BP.PUSH k v");
    expect_raw(r, "\"v\"");
    /* The threads of the two waits unblocked early still unblock (and
     * free) later. */
    freed = it_cmd(c, "BP.FREED")->integer;
    it_wait_until(it_cmd(c, "BP.FREED")->integer == freed + 2, 5000);
    char *errs = it_info_str(c, "errorstats", "errorstat_UNBLOCKED");
    ck_assert_msg(errs && !strcmp(errs, "count=1"), "%s", errs ? errs : "(none)");
}
END_TEST

START_TEST(test_key_ready_in_db) {
    it_server *s = bp_start(NULL, NULL);
    redisContext *c = it_connect(s);
    it_raw *r = it_raw_connect(s);
    it_raw_cmd(r, "SELECT", "3", NULL);
    expect_raw(r, "+OK");
    it_raw_cmd(r, "BP.POP", "k", "0", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    expect_int(c, 1, "BP.PUSH k db0"); /* another database: still waiting */
    ck_assert_int_eq(blocked(c), 1);
    expect_ok(c, "SELECT 3");
    expect_int(c, 1, "BP.PUSH k db3");
    expect_raw(r, "\"db3\"");
    expect_int(c, 0, "EXISTS k");
    expect_ok(c, "SELECT 0");
    expect_int(c, 1, "EXISTS k");
}
END_TEST

START_TEST(test_thread_and_timer_unblock) {
    it_server *s = bp_start(NULL, NULL);
    redisContext *c = it_connect(s);
    expect_bulk(c, "threadval", "BP.THREADPOP 0 30");
    expect_bulk(c, "timerval", "BP.TIMERPOP 30");
    ck_assert_int_eq(it_cmd(c, "BP.FREED")->integer, 2);
    char *stat = it_info_str(c, "commandstats", "cmdstat_bp.threadpop");
    ck_assert_msg(stat && !strncmp(stat, "calls=1,", 8), "%s", stat ? stat : "(none)");
}
END_TEST

START_TEST(test_disconnect_while_blocked) {
    it_server *s = bp_start(NULL, NULL);
    redisContext *c = it_connect(s);
    it_raw *r = it_raw_connect(s), *k = it_raw_connect(s);
    it_raw_cmd(r, "BP.THREADPOP", "0", "300", NULL);
    it_raw_cmd(k, "BP.POP", "gone", "0", NULL);
    it_wait_until(blocked(c) == 2, 5000);
    it_raw_close(r);
    it_raw_close(k);
    it_wait_until(blocked(c) == 0, 5000);
    /* The block on keys is freed with its client; the one without keys
     * when its thread's unblock comes. */
    it_wait_until(it_cmd(c, "BP.FREED")->integer == 2, 5000);
    expect_status(c, "PONG", "PING");
    expect_int(c, 1, "BP.PUSH gone v");
}
END_TEST

START_TEST(test_block_refused_in_multi) {
    it_server *s = bp_start("--enable-module-command", "yes");
    redisContext *c = it_connect(s);
    expect_ok(c, "MULTI");
    expect_status(c, "QUEUED", "BP.POP k 0");
    expect_status(c, "QUEUED", "BP.THREADPOP 0");
    expect_reply(c, "[nil,nil]", "EXEC");
    ck_assert_int_eq(blocked(c), 0);
    /* While a client waits, the module cannot go. */
    it_raw *r = it_raw_connect(s);
    it_raw_cmd(r, "BP.POP", "k", "0", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    expect_error(c,
                 "ERR Error unloading module: 'blockpop' has 1 blocked client(s); wait for them "
                 "to be unblocked and try again",
                 "MODULE UNLOAD blockpop");
    expect_int(c, 1, "BP.PUSH k v");
    expect_raw(r, "\"v\"");
    expect_ok(c, "MODULE UNLOAD blockpop");
}
END_TEST

/* ---- busy ---- */

static void busy_start(redisContext *c, it_raw *r, const char *ms) {
    it_raw_cmd(r, "BP.BUSY", ms, NULL);
    it_wait_until(!strcmp(it_cmd(c, "PING")->str, BP_BUSY_ERR), 5000);
}

START_TEST(test_busy_refuses_others) {
    it_server *s = bp_start("--busy-reply-threshold", "100");
    redisContext *c = it_connect(s);
    it_raw *busy = it_raw_connect(s), *p = it_raw_connect(s), *sub = it_raw_connect(s);
    it_raw_cmd(sub, "SUBSCRIBE", "ch", NULL);
    expect_raw(sub, "[\"subscribe\",\"ch\",:1]");
    expect_error(c, "NOTBUSY No busy command to kill.", "BP.KILL");
    /* The busy client's own pipeline waits for its command. */
    it_raw_sendstr(busy, "*2\r\n$7\r\nBP.BUSY\r\n$5\r\n20000\r\n*1\r\n$4\r\nPING\r\n");
    it_wait_until(!strcmp(it_cmd(c, "PING")->str, BP_BUSY_ERR), 5000);
    /* A pipeline gets one refusal per command, in order. */
    it_raw_sendstr(p, "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n");
    expect_raw(p, "-" BP_BUSY_ERR);
    expect_raw(p, "-" BP_BUSY_ERR);
    expect_raw(p, "-" BP_BUSY_ERR);
    expect_error(c, BP_BUSY_ERR, "SHUTDOWN");
    expect_error(c, BP_BUSY_ERR, "CLIENT KILL ID 1");
    /* A RESP2 subscriber is refused for its context first, as Valkey. */
    it_raw_cmd(sub, "GET", "k", NULL);
    expect_raw(sub, "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
                    "QUIT / RESET are allowed in this context");
    it_raw_cmd(sub, "PING", NULL);
    expect_raw(sub, "-" BP_BUSY_ERR);
    /* allow-busy commands run. */
    expect_ok(c, "MULTI");
    expect_error(c, BP_BUSY_ERR, "SET k v");
    expect_ok(c, "DISCARD");
    expect_ok(c, "BP.KILL");
    expect_raw(busy, "+killed");
    expect_raw(busy, "+PONG");
    expect_status(c, "PONG", "PING");
    expect_error(c, "NOTBUSY No busy command to kill.", "BP.KILL");
    char *errs = it_info_str(c, "errorstats", "errorstat_BUSY");
    ck_assert_msg(errs && atoll(errs + 6) >= 6, "%s", errs ? errs : "(none)");
    ck_assert_ptr_nonnull(strstr(it_read_file(s->log), "Slow command detected: 'bp.busy'"));
    /* Under the threshold nobody is refused. */
    expect_status(c, "done", "BP.BUSY 20");
}
END_TEST

/* An unblock that comes during the busy phase is served after it. */
START_TEST(test_busy_defers_unblock) {
    it_server *s = bp_start("--busy-reply-threshold", "50");
    redisContext *c = it_connect(s);
    it_raw *waiter = it_raw_connect(s), *busy = it_raw_connect(s);
    it_raw_cmd(waiter, "BP.THREADPOP", "0", "300", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    busy_start(c, busy, "20000");
    it_sleep_ms(500); /* the thread's unblock arrives meanwhile */
    expect_ok(c, "BP.KILL");
    expect_raw(busy, "+killed");
    expect_raw(waiter, "\"threadval\"");
    it_wait_until(it_cmd(c, "BP.FREED")->integer == 1, 5000);
}
END_TEST

START_TEST(test_busy_shutdown_nosave) {
    it_server *s = bp_start("--busy-reply-threshold", "50");
    redisContext *c = it_connect(s);
    it_raw *busy = it_raw_connect(s);
    busy_start(c, busy, "30000");
    expect_error(c, BP_BUSY_ERR, "SHUTDOWN SAVE");
    redisReply *r = it_try_cmd(c, "SHUTDOWN NOSAVE");
    ck_assert(!r || r->type != REDIS_REPLY_ERROR);
    int st = it_wait_exit(s, 10000);
    ck_assert_msg(st == 0, "exit status %d; log:\n%s", st, it_log_tail(s));
}
END_TEST

/* A command that goes on after SHUTDOWN NOSAVE told it to stop: the others
 * are still answered, and the next request (another SHUTDOWN NOSAVE, or a
 * signal) exits from inside the command. */
static it_server *busy_ignoring_shutdown(void) {
    it_server *s = bp_start("--busy-reply-threshold", "50");
    redisContext *c = it_connect(s);
    it_raw *busy = it_raw_connect(s), *stop = it_raw_connect(s);
    it_raw_cmd(busy, "BP.BUSY", "30000", "ignore", NULL);
    it_wait_until(!strcmp(it_cmd(c, "PING")->str, BP_BUSY_ERR), 5000);
    it_raw_cmd(stop, "SHUTDOWN", "NOSAVE", NULL);
    it_sleep_ms(200);
    ck_assert_msg(it_wait_exit(s, 0) == -1, "exited; log:\n%s", it_log_tail(s));
    expect_error(c, BP_BUSY_ERR, "PING");
    return s;
}

START_TEST(test_busy_shutdown_ignored) {
    it_server *s = busy_ignoring_shutdown();
    it_raw_cmd(it_raw_connect(s), "SHUTDOWN", "NOSAVE", NULL);
    int st = it_wait_exit(s, 5000);
    ck_assert_msg(st == 0, "exit status %d; log:\n%s", st, it_log_tail(s));
    ck_assert_ptr_nonnull(strstr(it_read_file(s->log), "ignored the shutdown request"));
}
END_TEST

START_TEST(test_busy_shutdown_ignored_sigterm) {
    it_server *s = busy_ignoring_shutdown();
    kill(s->pid, SIGTERM);
    int st = it_wait_exit(s, 5000);
    ck_assert_msg(st == 0, "exit status %d; log:\n%s", st, it_log_tail(s));
}
END_TEST

/* A module's call to a long command: the caller's connection is the one
 * held for the phase (its pipeline waits, its reply comes first), and its
 * disconnect frees it only after the command. */
static void nested_call_holds_caller(it_server *s) {
    redisContext *c = it_connect(s);
    it_raw *r = it_raw_connect(s);
    it_raw_cmd(r, "callmod.call", "-", "bp.busy", "20000", NULL);
    it_wait_until(!strcmp(it_cmd(c, "PING")->str, BP_BUSY_ERR), 5000);
    it_raw_sendstr(r, "*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
    it_sleep_ms(300);
    expect_ok(c, "BP.KILL");
    expect_raw(r, "\"0 +killed\"");
    expect_raw(r, "+PONG");
    expect_raw(r, "+OK");
    expect_bulk(c, "v", "GET k");
    /* Gone during the phase, with input pending. */
    it_raw *gone = it_raw_connect(s);
    it_raw_cmd(gone, "callmod.call", "-", "bp.busy", "20000", NULL);
    it_wait_until(!strcmp(it_cmd(c, "PING")->str, BP_BUSY_ERR), 5000);
    it_raw_sendstr(gone, "*1\r\n$4\r\nPING\r\n");
    it_raw_close(gone);
    it_sleep_ms(300);
    expect_ok(c, "BP.KILL");
    it_wait_until(!strcmp(it_cmd(c, "PING")->str, "PONG"), 5000);
    expect_bulk(c, "v", "GET k");
}

START_TEST(test_busy_nested_call_holds_caller) {
    nested_call_holds_caller(it_start("--loadmodule", BP_MODULE, "--loadmodule", CALLMOD_MODULE,
                                      "--busy-reply-threshold", "50", NULL));
}
END_TEST

/* With I/O threads the caller gets no read job while its command runs. */
START_TEST(test_busy_nested_call_io_threads) {
    nested_call_holds_caller(it_start("--loadmodule", BP_MODULE, "--loadmodule", CALLMOD_MODULE,
                                      "--busy-reply-threshold", "50", "--io-threads", "4",
                                      "--events-per-io-thread", "0", NULL));
}
END_TEST

/* Bytes that arrive on fd within quiet_ms of each other. */
static size_t drain_bytes(int fd, int quiet_ms, size_t want) {
    static char buf[1 << 16];
    size_t got = 0;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    while (got < want && poll(&pfd, 1, quiet_ms) > 0) {
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) break;
        got += (size_t)n;
    }
    return got;
}

/* The busy client's replies still queued when its command started are
 * written after the command, not during the phase. */
START_TEST(test_busy_holds_pending_output) {
    it_server *s = bp_start("--busy-reply-threshold", "50");
    redisContext *c = it_connect(s);
    size_t vlen = 4 << 20;
    char *val = it_random_bytes(vlen, 7);
    redisReply *set = redisCommand(c, "SET big %b", val, vlen);
    ck_assert_msg(set && set->type == REDIS_REPLY_STATUS, "SET big failed");
    freeReplyObject(set);
    it_raw *r = it_raw_connect(s);
    int small = 64 << 10;
    setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    enum { GETS = 6 };
    for (int i = 0; i < GETS; i++)
        it_raw_cmd(r, "GET", "big", NULL);
    it_sleep_ms(300); /* the socket fills up: the rest waits for writability */
    it_raw_cmd(r, "BP.BUSY", "20000", NULL);
    it_wait_until(!strcmp(it_cmd(c, "PING")->str, BP_BUSY_ERR), 5000);
    size_t bulk = vlen + strlen(it_fmt("$%zu\r\n\r\n", vlen));
    size_t during = drain_bytes(r->fd, 500, GETS * bulk);
    ck_assert_msg(during < GETS * bulk / 2, "%zu of %zu bytes written during the phase", during,
                  GETS * bulk);
    expect_ok(c, "BP.KILL");
    size_t total = GETS * bulk + strlen("+killed\r\n");
    size_t after = drain_bytes(r->fd, 5000, total - during);
    ck_assert_uint_eq(during + after, total);
}
END_TEST

/* A callback's ctx (on_timeout) runs between commands: its busy_yield
 * starts no phase (no warning, nobody refused). */
START_TEST(test_callback_yield_starts_nothing) {
    it_server *s = bp_start("--busy-reply-threshold", "1");
    redisContext *c = it_connect(s);
    expect_status(c, "yielded", "BP.CBYIELD 20");
    expect_status(c, "PONG", "PING");
    ck_assert_ptr_null(strstr(it_read_file(s->log), "Slow command detected"));
}
END_TEST

/* SIGTERM stops a busy command too: the server exits within it_stop's
 * 10 s although the command would run 30 s. */
START_TEST(test_busy_sigterm) {
    it_server *s = bp_start("--busy-reply-threshold", "50");
    redisContext *c = it_connect(s);
    it_raw *busy = it_raw_connect(s);
    busy_start(c, busy, "30000");
    long long t0 = it_mstime();
    it_stop(s);
    ck_assert_int_lt(it_mstime() - t0, 5000);
}
END_TEST

START_TEST(test_busy_threshold_config) {
    it_server *s = bp_start(NULL, NULL);
    redisContext *c = it_connect(s);
    expect_reply(c, "[\"busy-reply-threshold\",\"5000\"]", "CONFIG GET busy-reply-threshold");
    expect_ok(c, "CONFIG SET lua-time-limit 80");
    expect_reply(c, "[\"lua-time-limit\",\"80\"]", "CONFIG GET lua-time-limit");
    expect_reply(c, "[\"busy-reply-threshold\",\"80\"]", "CONFIG GET busy-reply-threshold");
    expect_error_prefix(c, "ERR CONFIG SET failed", "CONFIG SET busy-reply-threshold -1");
    it_raw *busy = it_raw_connect(s);
    busy_start(c, busy, "20000");
    expect_ok(c, "BP.KILL");
    expect_raw(busy, "+killed");
}
END_TEST

START_TEST(test_busy_io_threads) {
    it_server *s = it_start("--loadmodule", BP_MODULE, "--busy-reply-threshold", "50",
                            "--io-threads", "4", "--events-per-io-thread", "0", NULL);
    redisContext *c = it_connect(s);
    it_raw *busy = it_raw_connect(s), *p[4];
    for (int i = 0; i < 4; i++)
        p[i] = it_raw_connect(s);
    it_raw_sendstr(busy, "*2\r\n$7\r\nBP.BUSY\r\n$5\r\n20000\r\n*1\r\n$4\r\nPING\r\n");
    it_wait_until(!strcmp(it_cmd(c, "PING")->str, BP_BUSY_ERR), 5000);
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 4; i++)
            it_raw_sendstr(p[i], "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n");
        for (int i = 0; i < 4; i++) {
            expect_raw(p[i], "-" BP_BUSY_ERR);
            expect_raw(p[i], "-" BP_BUSY_ERR);
        }
    }
    expect_ok(c, "BP.KILL");
    expect_raw(busy, "+killed");
    expect_raw(busy, "+PONG");
    for (int i = 0; i < 4; i++) {
        it_raw_cmd(p[i], "PING", NULL);
        expect_raw(p[i], "+PONG");
    }
}
END_TEST

/* ---- keyspace events ---- */

START_TEST(test_module_sees_events) {
    it_server *s = bp_start(NULL, NULL);
    redisContext *c = it_connect(s);
    expect_reply(c, "[\"notify-keyspace-events\",\"\"]", "CONFIG GET notify-keyspace-events");
    bp_events(c);
    expect_ok(c, "SET k v");
    expect_int(c, 1, "DEL k");
    const char *ev = bp_events(c);
    ck_assert_msg(strstr(ev, "new:k,set:k=v,del:k,"), "%s", ev);
    /* The ctx is the event's database. */
    expect_ok(c, "SELECT 3");
    expect_ok(c, "SET k3 three");
    ev = bp_events(c);
    ck_assert_msg(strstr(ev, "set:k3=three,"), "%s", ev);
    /* A write from the callback is refused; the command's value stays. */
    expect_ok(c, "SET probe1 v");
    ev = bp_events(c);
    ck_assert_msg(strstr(ev, "set:probe1=refused,"), "%s", ev);
    expect_bulk(c, "v", "GET probe1");
    expect_ok(c, "SET e v PX 30");
    it_sleep_ms(60);
    expect_nil(c, "GET e");
    ev = bp_events(c);
    ck_assert_msg(strstr(ev, "expired:e,"), "%s", ev);
}
END_TEST

START_TEST(test_module_event_published) {
    it_server *s = bp_start(NULL, NULL);
    redisContext *c = it_connect(s);
    it_raw *sub = it_raw_connect(s);
    it_raw_cmd(sub, "PSUBSCRIBE", "__key*__:*", NULL);
    expect_raw(sub, "[\"psubscribe\",\"__key*__:*\",:1]");
    expect_ok(c, "BP.EMIT quiet"); /* the directive is off: nothing published */
    expect_ok(c, "CONFIG SET notify-keyspace-events Kd");
    expect_ok(c, "SET notd v"); /* class $ is off */
    expect_ok(c, "BP.EMIT mykey");
    expect_raw(sub, "[\"pmessage\",\"__key*__:*\",\"__keyspace@0__:mykey\",\"bpemit\"]");
    const char *ev = bp_events(c);
    ck_assert_msg(strstr(ev, "bpemit:quiet,") && strstr(ev, "bpemit:mykey,"), "%s", ev);
}
END_TEST

static Suite *module_block_suite(void) {
    Suite *s = suite_create("module_block");
    TCase *tc = it_tcase_bare(s, "blocking");
    tcase_add_test(tc, test_served_in_order);
    tcase_add_test(tc, test_timeouts_and_unblock);
    tcase_add_test(tc, test_key_ready_in_db);
    tcase_add_test(tc, test_thread_and_timer_unblock);
    tcase_add_test(tc, test_disconnect_while_blocked);
    tcase_add_test(tc, test_block_refused_in_multi);
    tc = it_tcase_bare(s, "busy");
    tcase_add_test(tc, test_busy_refuses_others);
    tcase_add_test(tc, test_busy_defers_unblock);
    tcase_add_test(tc, test_busy_shutdown_nosave);
    tcase_add_test(tc, test_busy_sigterm);
    tcase_add_test(tc, test_busy_shutdown_ignored);
    tcase_add_test(tc, test_busy_shutdown_ignored_sigterm);
    tcase_add_test(tc, test_busy_nested_call_holds_caller);
    tcase_add_test(tc, test_busy_nested_call_io_threads);
    tcase_add_test(tc, test_busy_holds_pending_output);
    tcase_add_test(tc, test_callback_yield_starts_nothing);
    tcase_add_test(tc, test_busy_threshold_config);
    tcase_add_test(tc, test_busy_io_threads);
    tc = it_tcase_bare(s, "events");
    tcase_add_test(tc, test_module_sees_events);
    tcase_add_test(tc, test_module_event_published);
    return s;
}

int main(void) {
    return it_run(module_block_suite());
}
