/* check_it_module_call.c -- the ABI 1.2 call group and its neighbours
 * against a real keel-server with tests/modules/callmod.so loaded: reply
 * trees of every type in RESP2 and RESP3, each refusal code with its
 * message, SELECT lasting for one command's calls only, invalid calls,
 * command_flags and db_index, a keynum key spec (COMMAND GETKEYS / INFO),
 * per-call flags (CLIENT PAUSE WRITE and maxmemory see a write), keys a
 * call reads tracked for the calling client, reply_set / reply_bignum /
 * reply_error_ex with errorstats, and INFO fields in the server section.
 * Also what a call must not keep or get wrong: connection state a called
 * command set (it ends with the call, and a tracked capture client at
 * shutdown), the code of a call whose busy phase refused other clients,
 * MONITOR under nested calls, a call_flags hook that tries to call, reply
 * or open a key, and SORT BY a constant ordered for a script's call.
 *
 * callmod renders a tree as "<code> <tree>" (see tests/modules/callmod.c). */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static it_server *srv;
static redisContext *cl;

static void start(void) {
    srv = it_start("--enable-module-command", "yes", "--loadmodule",
                   KEEL_TEST_MODULE_DIR "/callmod.so", NULL);
    cl = it_connect(srv);
}

#define BP_BUSY_ERR "BUSY blockpop is busy. You can only call BP.KILL or SHUTDOWN NOSAVE."

/* The rendered reply of a callmod.call. */
#define expect_call(want, ...) expect_bulk(cl, want, "callmod.call " __VA_ARGS__)

START_TEST(test_resp2_types) {
    start();
    expect_call("0 +OK", "- set k v");
    expect_call("0 s:v", "- get k");
    expect_call("0 _", "- get missing");
    expect_call("0 :1", "- incr n");
    expect_call("0 -ERR value is not an integer or out of range", "- incr k");
    expect_call("0 :2", "- rpush l a b");
    expect_call("0 [s:a,s:b]", "- lrange l 0 -1");
    expect_call("0 []", "- lrange none 0 -1");
    expect_call("0 :1", "- hset h f 1");
    expect_call("0 [s:f,s:1]", "- hgetall h");
    expect_call("0 :1", "- zadd z 1.5 m");
    expect_call("0 s:1.5", "- zscore z m");
    expect_call("0 [s:a,:1]", "- callmod.reply set");
    expect_call("0 s:-123456789012345678901234567890", "- callmod.reply bignum");
    expect_call("0 [s:m,s:1.5]", "- zrange z 0 -1 withscores");
    expect_call("0 _", "- blpop emptylist 0"); /* a blocking command times out at once */
}
END_TEST

START_TEST(test_resp3_types) {
    start();
    expect_call("0 :1", "3 hset h f 1");
    expect_call("0 {s:f=s:1}", "3 hgetall h");
    expect_call("0 :1", "3 sadd s x");
    expect_call("0 ~(s:x)", "3 smembers s");
    expect_call("0 :1", "3 zadd z 1.5 m");
    expect_call("0 ,1.5", "3 zscore z m");
    expect_call("0 _", "3 get missing");
    expect_call("0 ~(s:a,:1)", "3 callmod.reply set");
    expect_call("0 (-123456789012345678901234567890", "3 callmod.reply bignum");
    expect_call("0 #t", "3 callmod.reply bool");
    expect_call("0 =txt:some text", "3 callmod.reply verbatim");
    expect_call("0 [[s:m,,1.5]]", "3 zrange z 0 -1 withscores");
    /* The calling client's own protocol does not matter. */
    expect_call("0 [s:f,s:1]", "- hgetall h");
}
END_TEST

START_TEST(test_refusals) {
    start();
    expect_call("1 -ERR Unknown command called from script", "S nosuch");
    expect_call("1 -ERR unknown command 'nosuch', with args beginning with: 'a' ", "- nosuch a");
    expect_call("1 -ERR unknown subcommand 'nosuch'. Try CONFIG HELP.", "- config nosuch");
    expect_call("2 -ERR Wrong number of args calling command from script", "S get");
    expect_call("2 -ERR wrong number of arguments for 'get' command", "- get");
    expect_call("3 -ERR This Redis command is not allowed from script", "S callmod.noscript");
    expect_call("3 -ERR This Redis command is not allowed from script", "S callmod.denyscript");
    expect_call("0 :0", "- callmod.noscript");
    expect_call("4 -ERR Write commands are not allowed from read-only scripts.", "SW set k v");
    expect_call("4 -ERR Write commands are not allowed from this call", "W publish ch m");
    expect_call("0 _", "W get k");
    expect_call("6 -ERR This command is not allowed from a module call", "- multi");
    expect_call("6 -ERR This command is not allowed from a module call", "- exec");
    expect_call("6 -ERR This command is not allowed from a module call", "- watch k");
    expect_call("6 -ERR This command is not allowed from a module call", "- subscribe ch");
    expect_call("6 -ERR This command is not allowed from a module call", "- monitor");
    /* A filter's refusal. */
    expect_call("6 -ERR time is filtered", "- time");
    expect_error(cl, "ERR time is filtered", "TIME");
    /* A refusal counts as the command's rejected call and in errorstats. */
    char *cs = it_info_str(cl, "commandstats", "cmdstat_set");
    ck_assert_msg(strstr(cs, "rejected_calls=1,"), "%s", cs);
    expect_reply(cl, "[:-1,:1]", "callmod.bad");
    /* Nothing leaked into the calling client: it is not in a transaction. */
    expect_error_prefix(cl, "ERR EXEC without MULTI", "EXEC");
}
END_TEST

START_TEST(test_oom) {
    start();
    expect_call("0 +OK", "M set k v");
    expect_ok(cl, "CONFIG SET maxmemory 1");
    expect_call("5 -OOM command not allowed when used memory > 'maxmemory'.", "M set k2 v");
    expect_call("0 s:v", "M get k");
    /* Only until the command's first write, as Valkey's scripts. */
    expect_bulk(cl, "0 _ | 5 -OOM command not allowed when used memory > 'maxmemory'.",
                "callmod.seq M get x ; set b 2");
    expect_bulk(cl, "0 :0 | 0 +OK", "callmod.seq M del x ; set b 2");
    /* Without the flag the call neither refuses nor evicts. */
    expect_ok(cl, "CONFIG SET maxmemory-policy allkeys-random");
    expect_call("0 +OK", "- set k3 v");
    expect_ok(cl, "CONFIG SET maxmemory 0");
    expect_int(cl, 3, "EXISTS k k3 b");
}
END_TEST

START_TEST(test_select_lasts_one_command) {
    start();
    expect_bulk(cl, "0 +OK | 0 +OK | 0 s:v | 0 :5",
                "callmod.seq - select 5 ; set k v ; get k ; callmod.db");
    expect_int(cl, 0, "callmod.db");
    expect_nil(cl, "GET k");
    /* The next command starts again from the client's database. */
    expect_call("0 _", "- get k");
    expect_ok(cl, "SELECT 5");
    expect_bulk(cl, "v", "GET k");
    expect_call("0 s:v", "- get k");
    expect_int(cl, 5, "callmod.db");
}
END_TEST

/* MONITOR shows a called command with the calling module as its origin,
 * as Valkey shows a script's "[0 lua]". */
START_TEST(test_monitor) {
    start();
    it_raw *m = it_raw_connect(srv);
    it_raw_cmd(m, "MONITOR", NULL);
    expect_raw(m, "+OK");
    expect_call("0 +OK", "- set mk v");
    it_value *v = it_raw_read(m);
    ck_assert_ptr_nonnull(v);
    char buf[512];
    it_vrender(v, buf, sizeof(buf));
    ck_assert_msg(strstr(buf, "\"callmod.call\" \"-\" \"set\""), "%s", buf);
    v = it_raw_read(m);
    ck_assert_ptr_nonnull(v);
    it_vrender(v, buf, sizeof(buf));
    ck_assert_msg(strstr(buf, "[0 callmod] \"set\" \"mk\" \"v\""), "%s", buf);
}
END_TEST

/* A called command that calls in turn (a module command) is shown once
 * before its own calls; the outer one once, before everything. */
START_TEST(test_monitor_nested) {
    start();
    it_raw *m = it_raw_connect(srv);
    it_raw_cmd(m, "MONITOR", NULL);
    expect_raw(m, "+OK");
    expect_call("0 s:0 +OK", "- callmod.call - set mk v");
    static const char *const want[] = {
        "\"callmod.call\" \"-\" \"callmod.call\" \"-\" \"set\"",
        "[0 callmod] \"callmod.call\" \"-\" \"set\" \"mk\" \"v\"",
        "[0 callmod] \"set\" \"mk\" \"v\"",
        "\"PING\"",
    };
    expect_status(cl, "PONG", "PING");
    char buf[512];
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        it_value *v = it_raw_read(m);
        ck_assert_ptr_nonnull(v);
        it_vrender(v, buf, sizeof(buf));
        ck_assert_msg(strstr(buf, want[i]), "line %zu: %s", i, buf);
    }
}
END_TEST

/* Valkey releases a module's call client after each call: what a called
 * command sets on its connection does not reach the next call. */
START_TEST(test_call_state_ends) {
    start();
    expect_call("0 +OK", "- client setname capt");
    expect_call("0 _", "- client getname");
    expect_call("0 +OK", "- client setinfo lib-name mylib");
    expect_call("0 +OK", "- client no-touch on");
    expect_call("0 +OK", "- client no-evict on");
    redisReply *r = it_cmd(cl, "callmod.call - client info");
    ck_assert_msg(strstr(r->str, " flags=N ") && strstr(r->str, " name= ") &&
                      strstr(r->str, " lib-name= "),
                  "%s", r->str);
    it_free(r);
    expect_call("0 _", "- client reply off");
    expect_call("0 +PONG", "- ping");
    /* Tracking on a capture client: a key it read would later push an
     * invalidation into another call's reply. */
    expect_call("0 +OK", "3 client tracking on");
    expect_call("0 [s:flags,[s:off],s:redirect,:-1,s:prefixes,[]]", "- client trackinginfo");
    expect_call("0 +OK", "3 client tracking on");
    expect_call("0 _", "3 get foo");
    expect_ok(cl, "SET foo 1");
    expect_call("0 +PONG", "3 ping");
    ck_assert_int_eq(it_info_int(cl, "clients", "tracking_clients"), 0);
    /* Shut down with the capture client tracking: a clean exit. */
    expect_call("0 +OK", "3 client tracking on");
    it_stop(srv);
}
END_TEST

/* A call that ran reports RAN, even when its busy phase refused another
 * client the same command (counted as that command's rejected call). */
START_TEST(test_busy_call_ran) {
    srv = it_start("--enable-module-command", "yes", "--loadmodule",
                   KEEL_TEST_MODULE_DIR "/callmod.so", "--loadmodule",
                   KEEL_TEST_MODULE_DIR "/blockpop.so", "--busy-reply-threshold", "50", NULL);
    cl = it_connect(srv);
    it_raw *r = it_raw_connect(srv);
    it_raw_cmd(r, "callmod.call", "-", "bp.busy", "20000", NULL);
    it_wait_until(!strcmp(it_cmd(cl, "PING")->str, BP_BUSY_ERR), 5000);
    expect_error(cl, BP_BUSY_ERR, "BP.BUSY 10");
    expect_ok(cl, "BP.KILL");
    expect_raw(r, "\"0 +killed\"");
    char *cs = it_info_str(cl, "commandstats", "cmdstat_bp.busy");
    ck_assert_msg(cs && strstr(cs, "rejected_calls=1,"), "%s", cs ? cs : "(none)");
}
END_TEST

/* A call_flags hook may read arguments only: its call is refused (it would
 * overwrite the arguments of the call being checked), its reply dropped,
 * its key_open NULL. */
START_TEST(test_flags_hook_cannot_call) {
    start();
    expect_ok(cl, "SET k v");
    expect_bulk(cl, "hook -1 1 1", "callmod.maybe c k");
    expect_status(cl, "PONG", "PING");
    expect_call("0 s:hook -1 1 1", "- callmod.maybe c k");
    expect_status(cl, "PONG", "PING");
}
END_TEST

/* Valkey's "SORT BY <constant> output gets ordered for scripting": a set
 * has no order of its own, so a script's SORT BY a constant sorts ALPHA,
 * GET patterns included; a list keeps its order. */
START_TEST(test_sort_by_constant_for_scripts) {
    start();
    expect_int(cl, 24, "SADD myset a b c d e f g h i l m n o p q r s t u v z aa aaa azz");
    expect_call("0 [s:a,s:aa,s:aaa,s:azz,s:b,s:c,s:d,s:e,s:f,s:g,s:h,s:i,s:l,s:m,s:n,s:o,s:p,"
                "s:q,s:r,s:s,s:t,s:u,s:v,s:z]",
                "S sort myset by _");
    expect_int(cl, 3, "SADD s3 c b a");
    expect_call("0 [s:a,_,s:b,_,s:c,_]", "S sort s3 by _ get # get _:*");
    expect_call("0 [s:b,s:a]", "S sort s3 by _ desc limit 1 2");
    expect_int(cl, 3, "RPUSH l c a b");
    expect_call("0 [s:c,s:a,s:b]", "S sort l by _");
}
END_TEST

START_TEST(test_command_flags) {
    start();
    expect_int(cl, (2 | (1 << 11)), "callmod.flags get");
    expect_int(cl, (1 << 3) | (1 << 5) | (1 << 8), "callmod.flags config|get");
    expect_int(cl, -1, "callmod.flags nosuch");
    expect_int(cl, -1, "callmod.flags config|nosuch");
    expect_int(cl, (1 << 4) | (1 << 5) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 19),
               "callmod.flags callmod.noscript");
    redisReply *r = it_cmd(cl, "COMMAND INFO callmod.noscript");
    char buf[2048];
    it_render(r, buf, sizeof(buf));
    ck_assert_msg(strstr(buf, "+noscript") && strstr(buf, "+stale") && strstr(buf, "+pubsub") &&
                      strstr(buf, "+blocking") && strstr(buf, "+skip_slowlog") &&
                      strstr(buf, "+no_mandatory_keys"),
                  "%s", buf);
    it_free(r);
}
END_TEST

START_TEST(test_key_specs) {
    start();
    expect_reply(cl, "[\"a\",\"b\"]", "COMMAND GETKEYS callmod.kn 2 a b c");
    expect_error_prefix(cl, "ERR Invalid arguments", "COMMAND GETKEYS callmod.kn 0 c");
    redisReply *r = it_cmd(cl, "COMMAND INFO callmod.kn");
    char buf[2048];
    it_render(r, buf, sizeof(buf));
    ck_assert_msg(strstr(buf, "+movablekeys") && strstr(buf, "keynum") && strstr(buf, "RO"), "%s",
                  buf);
    it_free(r);
}
END_TEST

START_TEST(test_call_flags_pause) {
    start();
    expect_ok(cl, "SET k old");
    expect_ok(cl, "CLIENT PAUSE 100000 WRITE");
    it_raw *rd = it_raw_connect(srv);
    it_raw_cmd(rd, "callmod.maybe", "r", "k", NULL);
    expect_raw(rd, "\"old\"");
    /* This call's flags make it a write: held like SET. */
    it_raw_cmd(rd, "callmod.maybe", "w", "k", NULL);
    it_wait_until(it_info_int(cl, "clients", "blocked_clients") == 1, 5000);
    expect_bulk(cl, "old", "GET k");
    expect_ok(cl, "CLIENT UNPAUSE");
    expect_raw(rd, "+OK");
    expect_bulk(cl, "w", "GET k");
}
END_TEST

START_TEST(test_call_flags_oom) {
    start();
    expect_ok(cl, "CONFIG SET maxmemory 1");
    expect_nil(cl, "callmod.maybe r k");
    expect_error(cl, "OOM command not allowed when used memory > 'maxmemory'.",
                 "callmod.maybe w k");
    /* Refused when queued, as SET would be. */
    expect_ok(cl, "MULTI");
    expect_error_prefix(cl, "OOM", "callmod.maybe w k");
    expect_error_prefix(cl, "EXECABORT", "EXEC");
    /* Queued before the limit, the call's flags make EXEC need memory. */
    redisContext *other = it_connect(srv);
    expect_ok(other, "CONFIG SET maxmemory 0");
    expect_ok(cl, "MULTI");
    expect_status(cl, "QUEUED", "callmod.maybe w k");
    expect_ok(other, "CONFIG SET maxmemory 1");
    expect_error_prefix(cl, "EXECABORT Transaction discarded because of: OOM", "EXEC");
    expect_ok(cl, "MULTI");
    expect_status(cl, "QUEUED", "callmod.maybe r k");
    expect_reply(cl, "[nil]", "EXEC");
    expect_ok(cl, "CONFIG SET maxmemory 0");
    expect_ok(cl, "callmod.maybe w k");
}
END_TEST

START_TEST(test_tracking_for_caller) {
    start();
    it_raw *r = it_raw_connect(srv);
    it_raw_cmd(r, "HELLO", "3", NULL);
    ck_assert_ptr_nonnull(it_raw_read(r));
    it_raw_cmd(r, "CLIENT", "TRACKING", "ON", NULL);
    expect_raw(r, "+OK");
    expect_ok(cl, "SET foo 1");
    it_raw_cmd(r, "callmod.call", "-", "get", "foo", NULL);
    expect_raw(r, "\"0 s:1\"");
    expect_ok(cl, "SET foo 2");
    expect_raw(r, ">[\"invalidate\",[\"foo\"]]");
    /* A key the caller read changed by its own call: the invalidation
     * follows the call's reply, as after its own SET. */
    it_raw_cmd(r, "callmod.call", "-", "get", "foo", NULL);
    expect_raw(r, "\"0 s:2\"");
    it_raw_cmd(r, "callmod.call", "-", "set", "foo", "3", NULL);
    expect_raw(r, "\"0 +OK\"");
    expect_raw(r, ">[\"invalidate\",[\"foo\"]]");
    /* NOLOOP spares the caller whose call changed it. */
    it_raw_cmd(r, "CLIENT", "TRACKING", "ON", "NOLOOP", NULL);
    expect_raw(r, "+OK");
    it_raw_cmd(r, "callmod.call", "-", "get", "foo", NULL);
    expect_raw(r, "\"0 s:3\"");
    it_raw_cmd(r, "callmod.call", "-", "set", "foo", "4", NULL);
    expect_raw(r, "\"0 +OK\"");
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+PONG");
}
END_TEST

/* A message the caller's call publishes to the caller follows the reply. */
START_TEST(test_publish_to_caller) {
    start();
    it_raw *r = it_raw_connect(srv);
    it_raw_cmd(r, "HELLO", "3", NULL);
    ck_assert_ptr_nonnull(it_raw_read(r));
    it_raw_cmd(r, "SUBSCRIBE", "ch", NULL);
    expect_raw(r, ">[\"subscribe\",\"ch\",:1]");
    it_raw_cmd(r, "callmod.call", "-", "publish", "ch", "hi", NULL);
    expect_raw(r, "\"0 :1\"");
    expect_raw(r, ">[\"message\",\"ch\",\"hi\"]");
}
END_TEST

START_TEST(test_replies) {
    start();
    expect_ok(cl, "CONFIG RESETSTAT");
    expect_reply(cl, "[\"a\",:1]", "callmod.reply set");
    expect_bulk(cl, "-123456789012345678901234567890", "callmod.reply bignum");
    expect_error(cl, "MYCODE something failed", "callmod.reply error");
    expect_error(cl, "UNCOUNTED passed on", "callmod.reply errnostats");
    expect_error(cl, "CRLF a  b", "callmod.reply crlf");
    /* Counted by their first word, the NO_STATS one not at all in
     * errorstats; it still fails its command (failed_calls), as in Valkey. */
    char *mine = it_info_str(cl, "errorstats", "errorstat_MYCODE");
    ck_assert_str_eq(mine, "count=1");
    ck_assert_ptr_null(it_info_str(cl, "errorstats", "errorstat_UNCOUNTED"));
    ck_assert_int_eq(it_info_int(cl, "stats", "total_error_replies"), 2);
    char *cs = it_info_str(cl, "commandstats", "cmdstat_callmod.reply");
    ck_assert_msg(strstr(cs, "calls=5,") && strstr(cs, "failed_calls=3"), "%s", cs);
}
END_TEST

START_TEST(test_info_fields) {
    start();
    long long n = it_info_int(cl, "server", "callmod_info_calls");
    ck_assert_int_ge(n, 1);
    char *all = it_info_str(cl, "everything", "callmod_info_calls");
    ck_assert_ptr_nonnull(all);
    /* Not in a section it did not name. */
    ck_assert_ptr_null(it_info_str(cl, "clients", "callmod_info_calls"));
    /* Gone with the module, and its key specs and calls with it. */
    expect_call("0 +OK", "- set k v");
    expect_ok(cl, "MODULE UNLOAD callmod");
    ck_assert_ptr_null(it_info_str(cl, "server", "callmod_info_calls"));
    expect_error_prefix(cl, "ERR Invalid command specified", "COMMAND GETKEYS callmod.kn 1 a");
    expect_ok(cl, "MODULE LOAD %s", KEEL_TEST_MODULE_DIR "/callmod.so");
    expect_call("0 s:v", "- get k");
}
END_TEST

int main(void) {
    Suite *s = suite_create("module_call");
    TCase *tc = it_tcase_bare(s, "call");
    tcase_add_test(tc, test_resp2_types);
    tcase_add_test(tc, test_resp3_types);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_oom);
    tcase_add_test(tc, test_select_lasts_one_command);
    tcase_add_test(tc, test_command_flags);
    tcase_add_test(tc, test_monitor);
    tcase_add_test(tc, test_monitor_nested);
    tcase_add_test(tc, test_call_state_ends);
    tcase_add_test(tc, test_busy_call_ran);
    tcase_add_test(tc, test_sort_by_constant_for_scripts);
    tc = it_tcase_bare(s, "registration");
    tcase_add_test(tc, test_key_specs);
    tcase_add_test(tc, test_call_flags_pause);
    tcase_add_test(tc, test_call_flags_oom);
    tcase_add_test(tc, test_flags_hook_cannot_call);
    tcase_add_test(tc, test_tracking_for_caller);
    tcase_add_test(tc, test_publish_to_caller);
    tcase_add_test(tc, test_replies);
    tcase_add_test(tc, test_info_fields);
    return it_run(s);
}
