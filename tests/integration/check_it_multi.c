/* check_it_multi.c -- transactions against a real keel-server: MULTI, EXEC,
 * DISCARD, WATCH, UNWATCH; a watched key modified by another client (or by
 * FLUSHALL, FLUSHDB, SWAPDB, expiry) makes EXEC return nil; queueing errors
 * (unknown command, wrong arity, OOM, nested MULTI, WATCH inside MULTI)
 * abort with EXECABORT; runtime errors inside EXEC don't. */
#include "harness.h"

#include <string.h>
#include <unistd.h>

#define EXECABORT "EXECABORT Transaction discarded because of previous errors."
#define NOT_IN_MULTI "ERR Command not allowed inside a transaction"
#define OOM_ERR "OOM command not allowed when used memory > 'maxmemory'."

START_TEST(test_multi_exec_basics) {
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET foo bar");
    expect_status(C, "QUEUED", "GET foo");
    expect_status(C, "QUEUED", "PING");
    expect_status(C, "QUEUED", "INCR counter");
    expect_reply(C, "[+OK,\"bar\",+PONG,:1]", "EXEC");
    expect_bulk(C, "bar", "GET foo");
}
END_TEST

START_TEST(test_empty_transaction) {
    expect_ok(C, "MULTI");
    expect_reply(C, "[]", "EXEC");
}
END_TEST

START_TEST(test_discard) {
    expect_ok(C, "SET foo bar");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "DEL foo");
    expect_ok(C, "DISCARD");
    expect_bulk(C, "bar", "GET foo");
    expect_error(C, "ERR DISCARD without MULTI", "DISCARD");
    expect_error(C, "ERR EXEC without MULTI", "EXEC");
}
END_TEST

START_TEST(test_nested_multi) {
    expect_ok(C, "MULTI");
    expect_error(C, NOT_IN_MULTI, "MULTI");
    expect_error(C, EXECABORT, "EXEC");
    expect_status(C, "PONG", "PING");
}
END_TEST

START_TEST(test_watch_inside_multi) {
    expect_ok(C, "MULTI");
    expect_error(C, NOT_IN_MULTI, "WATCH x");
    expect_error(C, EXECABORT, "EXEC");
    expect_status(C, "PONG", "PING");
}
END_TEST

START_TEST(test_execabort_unknown_command) {
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET foo1 bar1");
    expect_error(C, "ERR unknown command 'non-existing-command', with args beginning with: ",
                 "non-existing-command");
    expect_status(C, "QUEUED", "SET foo2 bar2");
    expect_error(C, EXECABORT, "EXEC");
    expect_int(C, 0, "EXISTS foo1 foo2");
    /* The MULTI state is cleared. */
    expect_status(C, "PONG", "PING");
    expect_error(C, "ERR EXEC without MULTI", "EXEC");
}
END_TEST

START_TEST(test_execabort_wrong_arity) {
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET a 1");
    expect_error(C, "ERR wrong number of arguments for 'get' command", "GET");
    expect_error(C, EXECABORT, "EXEC");
    expect_int(C, 0, "EXISTS a");
}
END_TEST

START_TEST(test_runtime_error_does_not_abort) {
    expect_ok(C, "SET str notanumber");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET a 1");
    expect_status(C, "QUEUED", "INCR str");
    expect_status(C, "QUEUED", "SET b 2");
    expect_status(C, "QUEUED", "SET c 3 EX 0");
    expect_reply(C,
                 "[+OK,-ERR value is not an integer or out of range,+OK,-ERR invalid expire time "
                 "in 'set' command]",
                 "EXEC");
    expect_reply(C, "[\"1\",\"2\",nil]", "MGET a b c");
}
END_TEST

START_TEST(test_watch_unmodified) {
    expect_ok(C, "WATCH x y z");
    expect_ok(C, "WATCH k");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "[+PONG]", "EXEC");
}
END_TEST

START_TEST(test_watch_modified_by_other_client) {
    redisContext *c2 = it_connect(S);
    expect_ok(C, "SET x 30");
    expect_ok(C, "WATCH x");
    expect_ok(c2, "SET x 40");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET x 50");
    expect_nil(C, "EXEC");
    expect_bulk(C, "40", "GET x");
}
END_TEST

START_TEST(test_watch_modified_by_self) {
    expect_ok(C, "SET x 30");
    expect_ok(C, "WATCH x");
    expect_ok(C, "SET x 40");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_nil(C, "EXEC");
}
END_TEST

START_TEST(test_watch_one_of_five) {
    redisContext *c2 = it_connect(S);
    expect_ok(C, "SET x 30");
    expect_ok(C, "WATCH a b x k z");
    expect_int(c2, 1, "DEL x");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_nil(C, "EXEC");
}
END_TEST

START_TEST(test_watch_missing_key_created) {
    redisContext *c2 = it_connect(S);
    expect_ok(C, "WATCH newkey");
    expect_int(c2, 1, "INCR newkey");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_nil(C, "EXEC");
}
END_TEST

START_TEST(test_watch_other_db_not_affected) {
    redisContext *c2 = it_connect(S);
    expect_ok(C, "SET x 1");
    expect_ok(C, "WATCH x");
    expect_ok(c2, "SELECT 1");
    expect_ok(c2, "SET x 2");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "[+PONG]", "EXEC");
}
END_TEST

START_TEST(test_unwatched_after_exec) {
    redisContext *c2 = it_connect(S);
    expect_ok(C, "SET x 30");
    expect_ok(C, "WATCH x");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "[+PONG]", "EXEC");
    expect_ok(c2, "SET x 40");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "[+PONG]", "EXEC");
    /* ...and after a failed EXEC too. */
    expect_ok(C, "WATCH x");
    expect_ok(c2, "SET x 50");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_nil(C, "EXEC");
    expect_ok(c2, "SET x 60");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "[+PONG]", "EXEC");
}
END_TEST

START_TEST(test_unwatch) {
    redisContext *c2 = it_connect(S);
    expect_ok(C, "SET x 30");
    expect_ok(C, "WATCH x");
    expect_ok(c2, "SET x 40");
    expect_ok(C, "UNWATCH");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "[+PONG]", "EXEC");
    expect_ok(C, "UNWATCH");
}
END_TEST

START_TEST(test_discard_unwatches) {
    redisContext *c2 = it_connect(S);
    expect_ok(C, "SET x 30");
    expect_ok(C, "WATCH x");
    expect_ok(C, "MULTI");
    expect_ok(C, "DISCARD");
    expect_ok(c2, "SET x 40");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "[+PONG]", "EXEC");
}
END_TEST

START_TEST(test_flush_touches_watched_keys) {
    expect_ok(C, "SET x 30");
    expect_ok(C, "WATCH x");
    expect_ok(C, "FLUSHALL");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_nil(C, "EXEC");
    expect_ok(C, "SET x 30");
    expect_ok(C, "WATCH x");
    expect_ok(C, "FLUSHDB");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_nil(C, "EXEC");
}
END_TEST

START_TEST(test_flush_does_not_touch_missing_keys) {
    expect_ok(C, "WATCH x");
    expect_ok(C, "FLUSHALL");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "[+PONG]", "EXEC");
    expect_ok(C, "WATCH x");
    expect_ok(C, "FLUSHDB");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "[+PONG]", "EXEC");
}
END_TEST

START_TEST(test_swapdb_touches_watched_keys) {
    expect_ok(C, "SET x 30");
    expect_ok(C, "WATCH x");
    expect_ok(C, "SWAPDB 0 1");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_nil(C, "EXEC");
    /* A missing watched key that SWAPDB creates. */
    expect_ok(C, "FLUSHALL");
    expect_ok(C, "SELECT 1");
    expect_ok(C, "SET x 30");
    expect_ok(C, "SELECT 0");
    expect_ok(C, "WATCH x");
    expect_ok(C, "SWAPDB 0 1");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_nil(C, "EXEC");
}
END_TEST

/* EXEC on c answers [PONG]: the transaction of one PING ran. */
static void expect_exec_ran(redisContext *c) {
    redisReply *r = redisCommand(c, "EXEC");
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 1, "EXEC did not run (type %d)", r->type);
    ck_assert_str_eq(r->element[0]->str, "PONG");
    freeReplyObject(r);
}

/* Valkey's rules for stale (expired, not yet deleted) keys under SWAPDB:
 * a missing watched key replaced by a stale one, and a stale watched key
 * replaced by another stale one, are no logical change; a stale watched key
 * replaced by a live one is. Active expiry is off so the stale keys stay. */
START_TEST(test_swapdb_and_stale_keys) {
    it_server *s = it_start("--enable-debug-command", "yes", NULL);
    redisContext *c = it_connect(s);
    expect_ok(c, "DEBUG SET-ACTIVE-EXPIRE 0");
    /* missing -> stale */
    expect_ok(c, "SET x foo PX 1");
    usleep(5000);
    expect_ok(c, "SELECT 1");
    expect_ok(c, "WATCH x");
    expect_ok(c, "SWAPDB 0 1");
    expect_ok(c, "MULTI");
    expect_status(c, "QUEUED", "PING");
    expect_exec_ran(c);
    /* stale -> stale */
    expect_ok(c, "FLUSHALL");
    expect_ok(c, "SET x foo PX 1");
    expect_ok(c, "SELECT 0");
    expect_ok(c, "SET x bar PX 1");
    usleep(5000);
    expect_ok(c, "SELECT 1");
    expect_ok(c, "WATCH x");
    expect_ok(c, "SWAPDB 0 1");
    expect_ok(c, "MULTI");
    expect_status(c, "QUEUED", "PING");
    expect_exec_ran(c);
    /* stale -> live: a change */
    expect_ok(c, "FLUSHALL");
    expect_ok(c, "SET x foo PX 1");
    expect_ok(c, "SELECT 0");
    expect_ok(c, "SET x bar");
    usleep(5000);
    expect_ok(c, "SELECT 1");
    expect_ok(c, "WATCH x");
    expect_ok(c, "SWAPDB 0 1");
    expect_ok(c, "MULTI");
    expect_status(c, "QUEUED", "PING");
    expect_nil(c, "EXEC");
}
END_TEST

START_TEST(test_watched_key_expires) {
    /* The key must still exist when WATCHed: retry if the machine is so slow
     * that it expired before WATCH ran. */
    int tries;
    for (tries = 0; tries < 5; tries++) {
        expect_ok(C, "SET key 1 PX 300");
        expect_ok(C, "WATCH key");
        redisReply *r = it_cmd(C, "PTTL key");
        int alive = r->type == REDIS_REPLY_INTEGER && r->integer > 0;
        it_free(r);
        if (alive) break;
        expect_ok(C, "UNWATCH");
    }
    ck_assert_int_lt(tries, 5);
    it_sleep_ms(400);
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "INCR key");
    expect_nil(C, "EXEC");
}
END_TEST

START_TEST(test_watch_stale_keys) {
    it_server *s = it_start("--enable-debug-command", "yes", NULL);
    redisContext *c = it_connect(s);
    expect_ok(c, "DEBUG SET-ACTIVE-EXPIRE 0");
    /* Already expired when WATCHed: EXEC succeeds. */
    expect_ok(c, "SET x foo PX 1");
    it_sleep_ms(10);
    expect_ok(c, "WATCH x");
    expect_ok(c, "MULTI");
    expect_status(c, "QUEUED", "PING");
    expect_reply(c, "[+PONG]", "EXEC");
    /* Deleting a stale watched key (lazily) doesn't fail EXEC either. */
    expect_ok(c, "SET x foo PX 1");
    it_sleep_ms(10);
    expect_ok(c, "WATCH x");
    expect_int(c, 0, "EXISTS x");
    expect_ok(c, "MULTI");
    expect_status(c, "QUEUED", "PING");
    expect_reply(c, "[+PONG]", "EXEC");
    /* Nor does FLUSHDB. */
    expect_ok(c, "SET x foo PX 1");
    it_sleep_ms(10);
    expect_ok(c, "WATCH x");
    expect_ok(c, "FLUSHDB");
    expect_ok(c, "MULTI");
    expect_status(c, "QUEUED", "PING");
    expect_reply(c, "[+PONG]", "EXEC");
    expect_ok(c, "DEBUG SET-ACTIVE-EXPIRE 1");
}
END_TEST

START_TEST(test_execabort_on_oom_while_queueing) {
    redisContext *c2 = it_connect(S);
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET foo1 bar1");
    expect_ok(c2, "CONFIG SET maxmemory 1");
    expect_error(C, OOM_ERR, "SET foo2 bar2");
    expect_ok(c2, "CONFIG SET maxmemory 0");
    expect_status(C, "QUEUED", "SET foo3 bar3");
    expect_error(C, EXECABORT, "EXEC");
    expect_int(C, 0, "EXISTS foo1 foo2 foo3");
}
END_TEST

START_TEST(test_discard_during_oom) {
    redisContext *c2 = it_connect(S);
    expect_ok(c2, "CONFIG SET maxmemory 1");
    expect_ok(C, "MULTI");
    expect_error(C, OOM_ERR, "SET x 1");
    expect_ok(C, "DISCARD");
    expect_ok(c2, "CONFIG SET maxmemory 0");
    expect_status(C, "PONG", "PING");
}
END_TEST

START_TEST(test_exec_oom) {
    redisContext *c2 = it_connect(S);
    expect_ok(C, "SET x value");
    /* Only reads: allowed. */
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "GET x");
    expect_status(C, "QUEUED", "PING");
    expect_ok(c2, "CONFIG SET maxmemory 1");
    expect_reply(C, "[\"value\",+PONG]", "EXEC");
    expect_ok(c2, "CONFIG SET maxmemory 0");
    /* A write: rejected at EXEC. */
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET x 1");
    expect_status(C, "QUEUED", "GET x");
    expect_ok(c2, "CONFIG SET maxmemory 1");
    expect_error(C, "EXECABORT Transaction discarded because of: " OOM_ERR, "EXEC");
    expect_ok(c2, "CONFIG SET maxmemory 0");
    expect_bulk(C, "value", "GET x");
}
END_TEST

START_TEST(test_multi_is_per_connection) {
    redisContext *c2 = it_connect(S);
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "SET k v");
    expect_nil(c2, "GET k");
    expect_ok(c2, "SET other 1");
    expect_reply(C, "[+OK]", "EXEC");
    expect_bulk(c2, "v", "GET k");
}
END_TEST

START_TEST(test_exec_is_atomic_with_pipelining) {
    /* MULTI ... EXEC sent in one write, with another client's command. */
    redisContext *c2 = it_connect(S);
    redisAppendCommand(C, "MULTI");
    for (int i = 0; i < 100; i++)
        redisAppendCommand(C, "INCR n");
    redisAppendCommand(C, "EXEC");
    redisReply *r;
    for (int i = 0; i < 101; i++) {
        ck_assert_int_eq(redisGetReply(C, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    ck_assert_int_eq(redisGetReply(C, (void **)&r), REDIS_OK);
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 100);
    ck_assert_int_eq(r->element[99]->integer, 100);
    freeReplyObject(r);
    expect_bulk(c2, "100", "GET n");
}
END_TEST

static Suite *multi_suite(void) {
    Suite *s = suite_create("multi");
    TCase *tc = it_tcase(s, "multi");
    tcase_add_test(tc, test_multi_exec_basics);
    tcase_add_test(tc, test_empty_transaction);
    tcase_add_test(tc, test_discard);
    tcase_add_test(tc, test_nested_multi);
    tcase_add_test(tc, test_watch_inside_multi);
    tcase_add_test(tc, test_execabort_unknown_command);
    tcase_add_test(tc, test_execabort_wrong_arity);
    tcase_add_test(tc, test_runtime_error_does_not_abort);
    tcase_add_test(tc, test_watch_unmodified);
    tcase_add_test(tc, test_watch_modified_by_other_client);
    tcase_add_test(tc, test_watch_modified_by_self);
    tcase_add_test(tc, test_watch_one_of_five);
    tcase_add_test(tc, test_watch_missing_key_created);
    tcase_add_test(tc, test_watch_other_db_not_affected);
    tcase_add_test(tc, test_unwatched_after_exec);
    tcase_add_test(tc, test_unwatch);
    tcase_add_test(tc, test_discard_unwatches);
    tcase_add_test(tc, test_flush_touches_watched_keys);
    tcase_add_test(tc, test_flush_does_not_touch_missing_keys);
    tcase_add_test(tc, test_swapdb_touches_watched_keys);
    tcase_add_test(tc, test_swapdb_and_stale_keys);
    tcase_add_test(tc, test_watched_key_expires);
    tcase_add_test(tc, test_watch_stale_keys);
    tcase_add_test(tc, test_execabort_on_oom_while_queueing);
    tcase_add_test(tc, test_discard_during_oom);
    tcase_add_test(tc, test_exec_oom);
    tcase_add_test(tc, test_multi_is_per_connection);
    tcase_add_test(tc, test_exec_is_atomic_with_pipelining);
    return s;
}

int main(void) {
    return it_run(multi_suite());
}
