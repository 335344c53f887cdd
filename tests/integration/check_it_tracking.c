/* check_it_tracking.c -- client-side caching against a real keel-server
 * (core/session/tracking.c): invalidation pushes in the default mode, BCAST
 * with prefixes, OPTIN/OPTOUT with CLIENT CACHING, NOLOOP, a client's own
 * invalidations after its reply (also after EXEC's), flushes, expiry and
 * eviction, the tracking-table-max-keys bound, a broken redirect, CLIENT
 * REPLY OFF, RESET, the errors, CLIENT TRACKINGINFO / GETREDIR / LIST and
 * the INFO fields. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A raw RESP3 connection (HELLO 3 read). */
static it_raw *resp3_on(it_server *srv) {
    it_raw *r = it_raw_connect(srv);
    it_raw_cmd(r, "HELLO", "3", NULL);
    ck_assert_ptr_nonnull(it_raw_read(r));
    return r;
}

static it_raw *resp3(void) {
    return resp3_on(S);
}

static long long raw_id(it_raw *r) {
    it_raw_cmd(r, "CLIENT", "ID", NULL);
    it_value *v = it_raw_read(r);
    ck_assert_ptr_nonnull(v);
    return v->integer;
}

/* Sends a command and expects its rendered reply. */
#define raw_expect(r, want, ...)                                                                   \
    do {                                                                                           \
        it_raw_cmd(r, __VA_ARGS__, NULL);                                                          \
        expect_raw(r, want);                                                                       \
    } while (0)

/* Nothing is waiting on r: the next reply is PING's. */
#define expect_quiet(r) raw_expect(r, "+PONG", "PING")

static long long info(const char *section, const char *field) {
    return it_info_int(C, section, field);
}

START_TEST(test_default_mode) {
    it_raw *r = resp3();
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON");
    expect_ok(C, "SET foo 1");
    raw_expect(r, "\"1\"", "GET", "foo");
    raw_expect(r, "_", "GET", "missing"); /* a key that is not there is remembered too */
    expect_ok(C, "SET other 1");          /* never read: no message */
    expect_ok(C, "SET foo 2");
    expect_raw(r, ">[\"invalidate\",[\"foo\"]]");
    expect_ok(C, "SET foo 3"); /* forgotten after one message */
    expect_ok(C, "SET missing 1");
    expect_raw(r, ">[\"invalidate\",[\"missing\"]]");
    expect_quiet(r);
    /* Every kind of change: a delete, a TTL, a change in place. */
    raw_expect(r, "\"3\"", "GET", "foo");
    expect_int(C, 1, "DEL foo");
    expect_raw(r, ">[\"invalidate\",[\"foo\"]]");
    expect_int(C, 1, "RPUSH l a");
    raw_expect(r, "[\"a\"]", "LRANGE", "l", "0", "-1");
    expect_int(C, 1, "EXPIRE l 100");
    expect_raw(r, ">[\"invalidate\",[\"l\"]]");
    /* Multi-key reads remember every key. */
    raw_expect(r, "[_,_]", "MGET", "m1", "m2");
    expect_ok(C, "MSET m1 1 m2 2");
    it_value *a = it_raw_read(r), *b = it_raw_read(r);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    char ba[64], bb[64];
    it_vrender(a, ba, sizeof(ba));
    it_vrender(b, bb, sizeof(bb));
    ck_assert_str_eq(ba, ">[\"invalidate\",[\"m1\"]]");
    ck_assert_str_eq(bb, ">[\"invalidate\",[\"m2\"]]");
    /* Writes are not reads. */
    raw_expect(r, "+OK", "SET", "w", "1");
    expect_ok(C, "SET w 2");
    expect_quiet(r);
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "OFF");
    raw_expect(r, "\"2\"", "GET", "w");
    expect_ok(C, "SET w 3");
    expect_quiet(r);
}
END_TEST

START_TEST(test_own_write_after_reply) {
    it_raw *r = resp3();
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON");
    raw_expect(r, ":1", "HSET", "h", "f", "1");
    raw_expect(r, "\"1\"", "HGET", "h", "f");
    raw_expect(r, ":1", "HDEL", "h", "f");      /* the reply first, */
    expect_raw(r, ">[\"invalidate\",[\"h\"]]"); /* then the message */
    /* Inside a transaction: after EXEC's whole reply. */
    raw_expect(r, "+OK", "MSET", "a", "1", "b", "2");
    raw_expect(r, "\"1\"", "GET", "a");
    raw_expect(r, "+OK", "MULTI");
    raw_expect(r, "+QUEUED", "INCR", "a");
    raw_expect(r, "+QUEUED", "GET", "b");
    raw_expect(r, "[:2,\"2\"]", "EXEC");
    expect_raw(r, ">[\"invalidate\",[\"a\"]]");
    expect_quiet(r);
}
END_TEST

/* A blocked command served later: its own invalidation follows its reply. */
START_TEST(test_unblocked_after_reply) {
    it_raw *r = resp3();
    expect_int(C, 1, "RPUSH dst a");
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON");
    raw_expect(r, "[\"a\"]", "LRANGE", "dst", "0", "-1");
    it_raw_cmd(r, "BLMOVE", "src", "dst", "LEFT", "LEFT", "0", NULL);
    it_wait_until(info("clients", "blocked_clients") == 1, 5000);
    expect_int(C, 1, "RPUSH src foo");
    expect_raw(r, "\"foo\"");
    expect_raw(r, ">[\"invalidate\",[\"dst\"]]");
    expect_quiet(r);
}
END_TEST

START_TEST(test_noloop) {
    it_raw *r = resp3();
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON", "NOLOOP");
    raw_expect(r, "[_,_]", "MGET", "mine", "theirs");
    raw_expect(r, "+OK", "SET", "mine", "1");
    expect_quiet(r); /* its own change: no message */
    expect_ok(C, "SET theirs 1");
    expect_raw(r, ">[\"invalidate\",[\"theirs\"]]");
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON");
    raw_expect(r, "_", "GET", "x");
    raw_expect(r, "+OK", "SET", "x", "1"); /* NOLOOP is gone with ON again */
    expect_raw(r, ">[\"invalidate\",[\"x\"]]");
}
END_TEST

START_TEST(test_bcast) {
    it_raw *r = resp3();
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a:", "PREFIX", "b:");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "INCR a:1");
    expect_status(C, "QUEUED", "INCR a:2");
    expect_status(C, "QUEUED", "INCR a:1");
    expect_status(C, "QUEUED", "INCR b:1");
    expect_status(C, "QUEUED", "INCR c:1");
    expect_reply(C, "[:1,:1,:2,:1,:1]", "EXEC");
    /* One message per prefix, each key once, in some order. */
    char got[2][128];
    for (int i = 0; i < 2; i++) {
        it_value *v = it_raw_read(r);
        ck_assert_ptr_nonnull(v);
        ck_assert_int_eq(v->type, '>');
        ck_assert_int_eq(v->n, 2);
        it_vrender(v->elem[1], got[i], sizeof(got[i]));
    }
    int a_first = got[0][2] == 'a';
    const char *ga = got[a_first ? 0 : 1], *gb = got[a_first ? 1 : 0];
    ck_assert_msg(!strcmp(ga, "[\"a:1\",\"a:2\"]") || !strcmp(ga, "[\"a:2\",\"a:1\"]"), "%s", ga);
    ck_assert_str_eq(gb, "[\"b:1\"]");
    expect_quiet(r);
    ck_assert_int_eq(info("stats", "tracking_total_prefixes"), 2);
    /* Prefixes are added by ON again, and nothing is remembered in BCAST. */
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "c:");
    raw_expect(r, "_", "GET", "zz");
    ck_assert_int_eq(info("stats", "tracking_total_keys"), 0);
    expect_ok(C, "SET c:9 1");
    expect_raw(r, ">[\"invalidate\",[\"c:9\"]]");
    raw_expect(
        r, "{\"flags\":~[\"on\",\"bcast\"],\"redirect\"::0,\"prefixes\":[\"a:\",\"b:\",\"c:\"]}",
        "CLIENT", "TRACKINGINFO");
    ck_assert_int_eq(info("stats", "tracking_total_prefixes"), 3);
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "OFF");
    ck_assert_int_eq(info("stats", "tracking_total_prefixes"), 0);
}
END_TEST

START_TEST(test_bcast_noloop_and_all) {
    it_raw *r = resp3();
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP");
    raw_expect(r, "+OK", "SET", "own", "1");
    expect_ok(C, "SET k1 1");
    expect_raw(r, ">[\"invalidate\",[\"k1\"]]");
    raw_expect(r, "+OK", "SET", "own2", "1");
    expect_quiet(r);
    raw_expect(r, "{\"flags\":~[\"on\",\"bcast\",\"noloop\"],\"redirect\"::0,\"prefixes\":[\"\"]}",
               "CLIENT", "TRACKINGINFO");
    /* An expiry is nobody's change: NOLOOP does not hide it. */
    raw_expect(r, "+OK", "SET", "gone", "1", "PX", "20");
    expect_quiet(r);
    expect_raw(r, ">[\"invalidate\",[\"gone\"]]");
}
END_TEST

START_TEST(test_optin_optout) {
    it_raw *r = resp3();
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON", "OPTIN");
    raw_expect(r, "_", "GET", "k1");
    expect_ok(C, "SET k1 1");
    expect_quiet(r); /* not opted in */
    raw_expect(r, "+OK", "CLIENT", "CACHING", "YES");
    raw_expect(r, "{\"flags\":~[\"on\",\"optin\",\"caching-yes\"],\"redirect\"::0,\"prefixes\":[]}",
               "CLIENT", "TRACKINGINFO"); /* a CLIENT subcommand keeps the choice */
    raw_expect(r, "\"1\"", "GET", "k1");
    raw_expect(r, "_", "GET", "k2"); /* the choice was spent on k1 */
    expect_ok(C, "MSET k1 2 k2 2");
    expect_raw(r, ">[\"invalidate\",[\"k1\"]]");
    expect_quiet(r);
    /* CACHING YES before MULTI covers the transaction. */
    raw_expect(r, "+OK", "CLIENT", "CACHING", "YES");
    raw_expect(r, "+OK", "MULTI");
    raw_expect(r, "+QUEUED", "GET", "k3");
    raw_expect(r, "+QUEUED", "GET", "k4");
    raw_expect(r, "[_,_]", "EXEC");
    expect_ok(C, "SET k4 1");
    expect_raw(r, ">[\"invalidate\",[\"k4\"]]");
    raw_expect(
        r,
        "-ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and "
        "then re-enabling it with a different mode.",
        "CLIENT", "TRACKING", "ON", "OPTOUT");
    raw_expect(r, "-ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
               "CLIENT", "CACHING", "NO");
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "OFF");
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON", "OPTOUT");
    raw_expect(r, "_", "GET", "o1");
    raw_expect(r, "+OK", "CLIENT", "CACHING", "NO");
    raw_expect(r, "_", "GET", "o2"); /* opted out */
    raw_expect(r, "_", "GET", "o3");
    expect_ok(C, "MSET o1 1 o2 1 o3 1");
    expect_raw(r, ">[\"invalidate\",[\"o1\"]]");
    expect_raw(r, ">[\"invalidate\",[\"o3\"]]");
    expect_quiet(r);
    raw_expect(r, "-ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
               "CLIENT", "CACHING", "YES");
}
END_TEST

START_TEST(test_flush) {
    it_raw *r = resp3();
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON");
    raw_expect(r, "[_,_]", "MGET", "k1", "k2");
    ck_assert_int_eq(info("stats", "tracking_total_keys"), 2);
    ck_assert_int_eq(info("stats", "tracking_total_items"), 2);
    expect_ok(C, "FLUSHALL");
    expect_raw(r, ">[\"invalidate\",_]"); /* once, not once per database */
    expect_quiet(r);
    ck_assert_int_eq(info("stats", "tracking_total_keys"), 0);
    ck_assert_int_eq(info("stats", "tracking_total_items"), 0);
    expect_ok(C, "FLUSHDB ASYNC");
    expect_raw(r, ">[\"invalidate\",_]"); /* even with nothing remembered */
    /* Its own flush inside a transaction: after EXEC's reply. */
    raw_expect(r, "+OK", "MULTI");
    raw_expect(r, "+QUEUED", "FLUSHDB");
    raw_expect(r, "[+OK]", "EXEC");
    expect_raw(r, ">[\"invalidate\",_]");
    expect_ok(C, "SWAPDB 0 1");
    expect_raw(r, ">[\"invalidate\",_]");
    expect_ok(C, "SWAPDB 0 0"); /* changes nothing */
    expect_quiet(r);
}
END_TEST

START_TEST(test_expire_and_evict) {
    it_raw *r = resp3();
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON");
    expect_ok(C, "SET e 1 PX 30");
    raw_expect(r, "\"1\"", "GET", "e");
    expect_raw(r, ">[\"invalidate\",[\"e\"]]"); /* the active expire cycle */
    expect_ok(C, "SET v 1");
    raw_expect(r, "\"1\"", "GET", "v");
    expect_ok(C, "CONFIG SET maxmemory-policy allkeys-random");
    expect_ok(C, "CONFIG SET maxmemory 1");
    it_cmd(C, "SET other 1"); /* evicts what it can first (then answers OOM or OK) */
    expect_raw(r, ">[\"invalidate\",[\"v\"]]");
    expect_ok(C, "CONFIG SET maxmemory 0");
    expect_ok(C, "CONFIG SET maxmemory-policy noeviction");
}
END_TEST

START_TEST(test_table_bound) {
    it_raw *r = resp3();
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON");
    for (int i = 0; i < 250; i++)
        raw_expect(r, "_", "GET", it_fmt("key%d", i));
    ck_assert_int_eq(info("stats", "tracking_total_keys"), 250);
    expect_reply(C, "[\"tracking-table-max-keys\",\"1000000\"]",
                 "CONFIG GET tracking-table-max-keys");
    expect_ok(C, "CONFIG SET tracking-table-max-keys 10");
    /* The cron forgets 100, then 200 more: 240 messages, each key once. */
    for (int i = 0; i < 240; i++) {
        it_value *v = it_raw_read(r);
        ck_assert_ptr_nonnull(v);
        ck_assert_int_eq(v->type, '>');
    }
    expect_quiet(r);
    ck_assert_int_eq(info("stats", "tracking_total_keys"), 10);
    ck_assert_int_eq(info("stats", "tracking_total_items"), 10);
    expect_ok(C, "CONFIG SET tracking-table-max-keys 0");
    raw_expect(r, "_", "GET", "more");
    ck_assert_int_eq(info("stats", "tracking_total_keys"), 11);
    expect_error_prefix(C, "ERR CONFIG SET failed", "CONFIG SET tracking-table-max-keys -1");
    expect_ok(C, "CONFIG SET tracking-table-max-keys 1000000");
}
END_TEST

START_TEST(test_redirect_resp3_and_broken) {
    it_raw *r = resp3(), *to = resp3();
    long long to_id = raw_id(to);
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON", "REDIRECT", it_fmt("%lld", to_id));
    raw_expect(r, it_fmt(":%lld", to_id), "CLIENT", "GETREDIR");
    raw_expect(r, "_", "GET", "k");
    expect_ok(C, "SET k 1");
    expect_raw(to, ">[\"invalidate\",[\"k\"]]");
    expect_quiet(r);
    /* The redirect client goes away: the tracking client is told. */
    raw_expect(to, "+OK", "QUIT");
    it_raw_wait_closed(to, 2000);
    it_wait_until(info("clients", "connected_clients") == 2, 2000);
    raw_expect(r, "\"1\"", "GET", "k");
    expect_ok(C, "SET k 2");
    expect_raw(r, it_fmt(">[\"tracking-redir-broken\",:%lld]", to_id));
    raw_expect(
        r,
        it_fmt("{\"flags\":~[\"on\",\"broken_redirect\"],\"redirect\"::%lld,\"prefixes\":[]}",
               to_id),
        "CLIENT", "TRACKINGINFO");
    it_raw_cmd(r, "CLIENT", "INFO", NULL);
    it_value *v = it_raw_read(r);
    ck_assert_ptr_nonnull(v);
    ck_assert_msg(strstr(v->str, " flags=tR ") && strstr(v->str, it_fmt(" redir=%lld ", to_id)),
                  "%s", v->str);
    /* Its own write inside a transaction: the notice follows EXEC's reply. */
    raw_expect(r, "\"2\"", "GET", "k");
    raw_expect(r, "+OK", "MULTI");
    raw_expect(r, "+QUEUED", "SET", "k", "3");
    raw_expect(r, "+QUEUED", "GET", "k");
    raw_expect(r, "[+OK,\"3\"]", "EXEC");
    expect_raw(r, it_fmt(">[\"tracking-redir-broken\",:%lld]", to_id));
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON");
    raw_expect(r, "{\"flags\":~[\"on\"],\"redirect\"::0,\"prefixes\":[]}", "CLIENT",
               "TRACKINGINFO");
}
END_TEST

/* RESP2: through REDIRECT to a client subscribed to __redis__:invalidate,
 * as pub/sub messages. */
START_TEST(test_redirect_resp2_subscriber) {
    it_raw *sub = it_raw_connect(S);
    long long sub_id = raw_id(sub);
    raw_expect(sub, "[\"subscribe\",\"__redis__:invalidate\",:1]", "SUBSCRIBE",
               "__redis__:invalidate");
    expect_ok(C, "CLIENT TRACKING ON REDIRECT %lld", sub_id);
    expect_nil(C, "GET k");
    redisContext *w = it_connect(S);
    expect_ok(w, "SET k 1");
    expect_raw(sub, "[\"message\",\"__redis__:invalidate\",[\"k\"]]");
    expect_nil(C, "GET k2");
    expect_ok(w, "FLUSHALL");
    expect_raw(sub, "[\"message\",\"__redis__:invalidate\",nil]");
    /* BCAST through the same redirect. */
    expect_ok(C, "CLIENT TRACKING OFF");
    expect_ok(C, "CLIENT TRACKING ON BCAST PREFIX p: REDIRECT %lld", sub_id);
    expect_ok(w, "MSET p:1 1 q:1 1");
    expect_raw(sub, "[\"message\",\"__redis__:invalidate\",[\"p:1\"]]");
    /* Once it unsubscribes there is nowhere to deliver in RESP2. */
    raw_expect(sub, "[\"unsubscribe\",\"__redis__:invalidate\",:0]", "UNSUBSCRIBE");
    expect_ok(w, "SET p:2 1");
    expect_status(w, "PONG", "PING"); /* an event-loop iteration passed */
    expect_quiet(sub);
    expect_reply(
        C,
        it_fmt("[\"flags\",[\"on\",\"bcast\"],\"redirect\",:%lld,\"prefixes\",[\"p:\"]]", sub_id),
        "CLIENT TRACKINGINFO");
}
END_TEST

START_TEST(test_reply_off_and_reset) {
    it_raw *r = resp3();
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON");
    raw_expect(r, "_", "GET", "k");
    it_raw_cmd(r, "CLIENT", "REPLY", "OFF", NULL);
    expect_ok(C, "SET k 1");
    expect_raw(r, ">[\"invalidate\",[\"k\"]]"); /* pushes are not replies */
    raw_expect(r, "+OK", "CLIENT", "REPLY", "ON");
    ck_assert_int_eq(info("clients", "tracking_clients"), 1);
    raw_expect(r, "+RESET", "RESET");
    ck_assert_int_eq(info("clients", "tracking_clients"), 0);
    raw_expect(r, ":-1", "CLIENT", "GETREDIR");
    raw_expect(r, "[\"flags\",[\"off\"],\"redirect\",:-1,\"prefixes\",[]]", "CLIENT",
               "TRACKINGINFO");
}
END_TEST

START_TEST(test_errors) {
    expect_error(C, "ERR PREFIX option requires BCAST mode to be enabled",
                 "CLIENT TRACKING ON PREFIX a");
    expect_error(C, "ERR OPTIN and OPTOUT are not compatible with BCAST",
                 "CLIENT TRACKING ON BCAST OPTIN");
    expect_error(C, "ERR You can't specify both OPTIN mode and OPTOUT mode",
                 "CLIENT TRACKING ON OPTIN OPTOUT");
    expect_error(C, "ERR The client ID you want redirect to does not exist",
                 "CLIENT TRACKING ON REDIRECT 9999");
    expect_error(C, "ERR value is not an integer or out of range", "CLIENT TRACKING ON REDIRECT x");
    long long me = it_cmd(C, "CLIENT ID")->integer;
    expect_error(C, "ERR A client can only redirect to a single other client",
                 "CLIENT TRACKING ON REDIRECT %lld REDIRECT %lld", me, me);
    expect_error(C, "ERR syntax error", "CLIENT TRACKING ON FOO");
    expect_error(C, "ERR syntax error", "CLIENT TRACKING MAYBE");
    expect_error(C, "ERR syntax error", "CLIENT TRACKING ON PREFIX");
    expect_error(C, "ERR wrong number of arguments for 'client|tracking' command",
                 "CLIENT TRACKING");
    expect_error(
        C,
        "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
        "OPTOUT mode enabled",
        "CLIENT CACHING YES");
    expect_error(
        C,
        "ERR Prefix 'FOOBAR' overlaps with another provided prefix 'FOO'. Prefixes for a single "
        "client must not overlap.",
        "CLIENT TRACKING ON BCAST PREFIX FOOBAR PREFIX FOO");
    expect_ok(C, "CLIENT TRACKING ON BCAST PREFIX FOO PREFIX BAR");
    expect_error(
        C,
        "ERR Prefix 'FO' overlaps with an existing prefix 'FOO'. Prefixes for a single client "
        "must not overlap.",
        "CLIENT TRACKING ON BCAST PREFIX FO");
    expect_error(
        C,
        "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and "
        "then re-enabling it with a different mode.",
        "CLIENT TRACKING ON");
    expect_error(C, "ERR syntax error", "CLIENT CACHING MAYBE");
    expect_ok(C, "CLIENT TRACKING OFF");
    expect_error(C, "ERR wrong number of arguments for 'client|getredir' command",
                 "CLIENT GETREDIR x");
}
END_TEST

START_TEST(test_info_and_list) {
    ck_assert_int_eq(info("clients", "tracking_clients"), 0);
    expect_reply(C, "[\"flags\",[\"off\"],\"redirect\",:-1,\"prefixes\",[]]",
                 "CLIENT TRACKINGINFO");
    expect_int(C, -1, "CLIENT GETREDIR");
    expect_ok(C, "CLIENT TRACKING ON");
    expect_int(C, 0, "CLIENT GETREDIR");
    redisReply *rep = it_cmd(C, "CLIENT INFO");
    ck_assert_msg(strstr(rep->str, " flags=t ") && strstr(rep->str, " redir=0 "), "%s", rep->str);
    expect_nil(C, "GET a");
    expect_nil(C, "GET b");
    redisContext *c2 = it_connect(S);
    expect_ok(c2, "CLIENT TRACKING ON BCAST PREFIX p:");
    expect_nil(c2, "GET a");
    rep = it_cmd(c2, "CLIENT INFO");
    ck_assert_msg(strstr(rep->str, " flags=tB "), "%s", rep->str);
    ck_assert_int_eq(info("clients", "tracking_clients"), 2);
    ck_assert_int_eq(info("stats", "tracking_total_keys"), 2);
    ck_assert_int_eq(info("stats", "tracking_total_items"), 2);
    ck_assert_int_eq(info("stats", "tracking_total_prefixes"), 1);
    /* A RESP2 client without a redirect has nowhere to receive: nothing
     * is sent, the key is forgotten all the same. */
    expect_ok(c2, "SET a 1");
    expect_status(C, "PONG", "PING");
    ck_assert_int_eq(info("stats", "tracking_total_keys"), 1);
    it_disconnect(c2);
    it_wait_until(info("clients", "tracking_clients") == 1, 2000);
    ck_assert_int_eq(info("stats", "tracking_total_prefixes"), 0);
    expect_ok(C, "CONFIG RESETSTAT");
    ck_assert_int_eq(info("clients", "tracking_clients"), 1);
}
END_TEST

/* With the cron paused, the bound is applied before the next command, even
 * one MULTI queues (Valkey's regression test for #11715). */
START_TEST(test_bound_before_command) {
    it_server *srv = it_start("--enable-debug-command", "yes", NULL);
    redisContext *c = it_connect(srv);
    it_raw *r = resp3_on(srv);
    raw_expect(r, "+OK", "CLIENT", "TRACKING", "ON");
    raw_expect(r, "[_,_]", "MGET", "1{tag}", "2{tag}");
    raw_expect(r, "+OK", "MULTI");
    expect_ok(c, "DEBUG PAUSE-CRON 1");
    expect_ok(c, "CONFIG SET tracking-table-max-keys 1");
    it_raw_cmd(r, "PING", NULL);
    it_value *v = it_raw_read(r);
    ck_assert_ptr_nonnull(v);
    char buf[128];
    it_vrender(v, buf, sizeof(buf));
    ck_assert_msg(!strcmp(buf, ">[\"invalidate\",[\"1{tag}\"]]") ||
                      !strcmp(buf, ">[\"invalidate\",[\"2{tag}\"]]"),
                  "%s", buf);
    expect_raw(r, "+QUEUED");
    raw_expect(r, "[+PONG]", "EXEC");
    ck_assert_int_eq(it_info_int(c, "stats", "tracking_total_keys"), 1);
    expect_ok(c, "DEBUG PAUSE-CRON 0");
}
END_TEST

/* With I/O threads taking every read and write, invalidations reach
 * clients whose jobs may be in flight: each one arrives once, in order. */
START_TEST(test_io_threads) {
    it_server *srv = it_start("--io-threads", "4", "--events-per-io-thread", "0", NULL);
    redisContext *c = it_connect(srv);
    enum { N = 8, ROUNDS = 25 };
    it_raw *r[N];
    for (int i = 0; i < N; i++) {
        r[i] = resp3_on(srv);
        raw_expect(r[i], "+OK", "CLIENT", "TRACKING", "ON");
    }
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < N; i++)
            it_raw_cmd(r[i], "GET", "k", NULL);
        for (int i = 0; i < N; i++)
            ck_assert_ptr_nonnull(it_raw_read(r[i]));
        expect_ok(c, "SET k %d", round);
        for (int i = 0; i < N; i++)
            expect_raw(r[i], ">[\"invalidate\",[\"k\"]]");
    }
    for (int i = 0; i < N; i++)
        expect_quiet(r[i]);
}
END_TEST

static Suite *tracking_suite(void) {
    Suite *s = suite_create("tracking");
    TCase *tc = it_tcase(s, "tracking");
    tcase_add_test(tc, test_default_mode);
    tcase_add_test(tc, test_own_write_after_reply);
    tcase_add_test(tc, test_unblocked_after_reply);
    tcase_add_test(tc, test_noloop);
    tcase_add_test(tc, test_bcast);
    tcase_add_test(tc, test_bcast_noloop_and_all);
    tcase_add_test(tc, test_optin_optout);
    tcase_add_test(tc, test_flush);
    tcase_add_test(tc, test_expire_and_evict);
    tcase_add_test(tc, test_table_bound);
    tcase_add_test(tc, test_redirect_resp3_and_broken);
    tcase_add_test(tc, test_redirect_resp2_subscriber);
    tcase_add_test(tc, test_reply_off_and_reset);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_info_and_list);
    tc = it_tcase_bare(s, "own-server");
    tcase_add_test(tc, test_bound_before_command);
    tcase_add_test(tc, test_io_threads);
    return s;
}

int main(void) {
    return it_run(tracking_suite());
}
