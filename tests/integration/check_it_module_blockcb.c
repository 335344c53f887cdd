/* check_it_module_blockcb.c -- the callbacks of ABI 1.2's blocked clients
 * against a real keel-server with the tests/modules/blockcb.c fixture: a
 * call from on_unblock or on_timeout on the client's own key is nested in
 * the blocked command (one reply, no re-entry, no OOM check), a queued
 * unblock wins over a timeout and over CLIENT UNBLOCK, a second unblock is
 * refused, an unblock's data comes back through free_data when on_unblock
 * does not run, and a timeout too large to add to the clock waits. */
#include "harness.h"

#include <string.h>

#define BC_MODULE KEEL_TEST_MODULE_DIR "/blockcb.so"

static long long blocked(redisContext *c) {
    return it_info_int(c, "clients", "blocked_clients");
}

static long long raw_client_id(it_raw *r) {
    it_raw_cmd(r, "CLIENT", "ID", NULL);
    it_value *v = it_raw_read(r);
    ck_assert_ptr_nonnull(v);
    return v->integer;
}

/* BC.STATS: handles freed, data handed back. */
static void expect_stats(redisContext *c, long long freed, long long back) {
    it_wait_until(it_cmd(c, "BC.STATS")->element[0]->integer == freed, 5000);
    expect_reply(c, it_fmt("[:%lld,:%lld]", freed, back), "BC.STATS");
}

/* The wait ended once: the next request gets its own reply. */
static void expect_pipeline_goes_on(it_raw *r) {
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+PONG");
}

START_TEST(test_unblock_pushes_own_key) {
    it_server *s = it_start("--loadmodule", BC_MODULE, NULL);
    redisContext *c = it_connect(s);
    it_raw *r = it_raw_connect(s);
    it_raw_cmd(r, "BC.KPOP", "k", "0", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    /* on_unblock's LPUSH on k is not offered back to the same client. */
    expect_ok(c, "BC.WAKE w");
    expect_raw(r, "+unblocked:w");
    expect_pipeline_goes_on(r);
    expect_reply(c, "[\"w\"]", "LRANGE k 0 -1");
    ck_assert_int_eq(blocked(c), 0);
    expect_stats(c, 1, 0);
    char *stat = it_info_str(c, "commandstats", "cmdstat_bc.kpop");
    ck_assert_msg(stat && !strncmp(stat, "calls=1,", 8), "%s", stat ? stat : "(none)");
    /* Another waiter on k is served by the push after the callback. */
    it_raw *r2 = it_raw_connect(s);
    it_raw_cmd(r2, "BC.KPOP", "q", "0", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    it_raw_cmd(r, "BC.KPOP", "q", "0", NULL);
    it_wait_until(blocked(c) == 2, 5000);
    expect_ok(c, "BC.WAKE v");
    expect_raw(r, "+unblocked:v");
    expect_raw(r2, "\"v\"");
    expect_int(c, 0, "EXISTS q");
}
END_TEST

START_TEST(test_timeout_pushes_own_key) {
    it_server *s = it_start("--loadmodule", BC_MODULE, NULL);
    redisContext *c = it_connect(s);
    it_raw *r = it_raw_connect(s);
    it_raw_cmd(r, "BC.KPOP", "k", "50", NULL);
    expect_raw(r, "+timedout");
    expect_pipeline_goes_on(r);
    expect_reply(c, "[\"t\"]", "LRANGE k 0 -1");
    ck_assert_int_eq(blocked(c), 0);
    expect_stats(c, 1, 0);
    /* A call never checks maxmemory unless asked: on_timeout's push lands
     * although used memory is over the limit. */
    expect_ok(c, "CONFIG SET maxmemory 1");
    expect_error_prefix(c, "OOM", "LPUSH k x");
    it_raw_cmd(r, "BC.KPOP", "k2", "50", NULL);
    expect_raw(r, "+timedout");
    expect_ok(c, "CONFIG SET maxmemory 0");
    expect_reply(c, "[\"t\"]", "LRANGE k2 0 -1");
}
END_TEST

START_TEST(test_queued_unblock_wins) {
    it_server *s = it_start("--loadmodule", BC_MODULE, NULL);
    redisContext *c = it_connect(s);
    it_raw *r = it_raw_connect(s);
    long long id = raw_client_id(r);
    /* CLIENT UNBLOCK after the unblock is queued: the module replies. */
    it_raw_cmd(r, "BC.NPOP", "0", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    expect_ok(c, "MULTI");
    expect_status(c, "QUEUED", "BC.WAKE a");
    expect_status(c, "QUEUED", "BC.WAKE again");
    expect_status(c, "QUEUED", "CLIENT UNBLOCK %lld ERROR", id);
    expect_reply(c, "[+OK,-ERR unblock refused,:1]", "EXEC");
    expect_raw(r, "+unblocked:a");
    expect_pipeline_goes_on(r);
    /* The deadline passes while the unblock is queued: the module replies. */
    it_raw_cmd(r, "BC.NPOP", "50", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    expect_ok(c, "BC.WAKE b 200");
    expect_raw(r, "+unblocked:b");
    expect_pipeline_goes_on(r);
    expect_stats(c, 2, 0);
    ck_assert_int_eq(it_info_int(c, "clients", "clients_in_timeout_table"), 0);
}
END_TEST

START_TEST(test_data_handed_back) {
    it_server *s = it_start("--loadmodule", BC_MODULE, NULL);
    redisContext *c = it_connect(s);
    it_raw *r = it_raw_connect(s);
    /* Timed out first: the late unblock's data comes back. */
    it_raw_cmd(r, "BC.NPOP", "30", NULL);
    expect_raw(r, "+timedout");
    expect_reply(c, "[:0,:0]", "BC.STATS");
    expect_ok(c, "BC.WAKE late");
    expect_stats(c, 1, 1);
    /* Without on_unblock: a null, and the data comes back. */
    it_raw_cmd(r, "BC.NPOP", "0", "null", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    expect_ok(c, "BC.WAKE nobody");
    expect_raw(r, "nil");
    expect_stats(c, 2, 2);
    /* The client went away first. */
    it_raw_cmd(r, "BC.NPOP", "0", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    it_raw_close(r);
    it_wait_until(blocked(c) == 0, 5000);
    expect_ok(c, "BC.WAKE gone");
    expect_stats(c, 3, 3);
}
END_TEST

START_TEST(test_huge_timeout_waits) {
    it_server *s = it_start("--loadmodule", BC_MODULE, NULL);
    redisContext *c = it_connect(s);
    it_raw *r = it_raw_connect(s);
    it_raw_cmd(r, "BC.KPOP", "k", "9223372036854775807", NULL);
    it_wait_until(blocked(c) == 1, 5000);
    it_sleep_ms(100);
    ck_assert_int_eq(blocked(c), 1);
    ck_assert_int_eq(it_info_int(c, "clients", "clients_in_timeout_table"), 1);
    expect_int(c, 1, "LPUSH k v");
    expect_raw(r, "\"v\"");
    expect_pipeline_goes_on(r);
}
END_TEST

static Suite *module_blockcb_suite(void) {
    Suite *s = suite_create("module_blockcb");
    TCase *tc = it_tcase_bare(s, "callbacks");
    tcase_add_test(tc, test_unblock_pushes_own_key);
    tcase_add_test(tc, test_timeout_pushes_own_key);
    tcase_add_test(tc, test_queued_unblock_wins);
    tcase_add_test(tc, test_data_handed_back);
    tcase_add_test(tc, test_huge_timeout_waits);
    return s;
}

int main(void) {
    return it_run(module_blockcb_suite());
}
