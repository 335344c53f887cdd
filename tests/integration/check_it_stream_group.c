/* check_it_stream_group.c -- the stream consumer-group commands against a
 * real keel-server: XGROUP's subcommands and errors, XREADGROUP (new
 * entries, a consumer's history with deleted entries, NOACK, COUNT),
 * XACK, XPENDING (summary and extended, IDLE, exclusive bounds, one
 * consumer), XCLAIM and XAUTOCLAIM (options, deleted entries leaving the
 * PEL, the cursor), XINFO GROUPS/CONSUMERS/STREAM [FULL] with lag and
 * entries-read, blocking XREADGROUP (served in the order the clients
 * blocked, the group destroyed or the key deleted while blocked, inside
 * MULTI), keyspace events, COPY of a stream with its groups, and the
 * RESP3 shapes. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long long blocked(void) {
    return it_info_int(C, "clients", "blocked_clients");
}

#define wait_blocked(n) it_wait_until(blocked() == (n), 5000)

/* A stream s with entries 1-0, 2-0, 3-0 (f v1..v3) and group g at 0. */
static void three_entries(void) {
    expect_bulk(C, "1-0", "XADD s 1-0 f v1");
    expect_bulk(C, "2-0", "XADD s 2-0 f v2");
    expect_bulk(C, "3-0", "XADD s 3-0 f v3");
    expect_ok(C, "XGROUP CREATE s g 0");
}

START_TEST(test_xgroup) {
    expect_error(C,
                 "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you "
                 "may want to use the MKSTREAM option to create an empty stream automatically.",
                 "XGROUP CREATE s g $");
    expect_ok(C, "XGROUP CREATE s g $ MKSTREAM");
    expect_int(C, 0, "XLEN s");
    expect_error(C, "BUSYGROUP Consumer Group name already exists", "XGROUP CREATE s g $");
    expect_error(C, "ERR value for ENTRIESREAD must be positive or -1",
                 "XGROUP CREATE s g2 $ ENTRIESREAD -3");
    expect_error(C, "ERR value is not an integer or out of range",
                 "XGROUP CREATE s g2 $ ENTRIESREAD x");
    expect_error(C,
                 "ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP "
                 "HELP.",
                 "XGROUP CREATE s g2 $ NOPE");
    expect_error(C, "ERR Invalid stream ID specified as stream command argument",
                 "XGROUP CREATE s g2 -");
    expect_error(C, "NOGROUP No such consumer group 'nog' for key name 's'",
                 "XGROUP SETID s nog 0");
    expect_error(C, "NOGROUP No such consumer group 'nog' for key name 's'",
                 "XGROUP CREATECONSUMER s nog c");
    expect_int(C, 1, "XGROUP CREATECONSUMER s g alice");
    expect_int(C, 0, "XGROUP CREATECONSUMER s g alice");
    expect_int(C, 0, "XGROUP DELCONSUMER s g bob");
    expect_int(C, 0, "XGROUP DELCONSUMER s g alice");
    expect_int(C, 0, "XGROUP DESTROY s nog");
    expect_int(C, 1, "XGROUP DESTROY s g");
    expect_int(C, 0, "XGROUP DESTROY s g");
    expect_ok(C, "SET str x");
    expect_error_prefix(C, "WRONGTYPE", "XGROUP CREATE str g $ MKSTREAM");
    redisReply *help = it_cmd(C, "XGROUP HELP");
    ck_assert_int_eq(help->type, REDIS_REPLY_ARRAY);
    ck_assert_str_eq(help->element[0]->str,
                     "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
}
END_TEST

START_TEST(test_setid_and_entries_read) {
    three_entries();
    expect_reply(C,
                 "[[\"name\",\"g\",\"consumers\",:0,\"pending\",:0,\"last-delivered-id\",\"0-0\","
                 "\"entries-read\",nil,\"lag\",:3]]",
                 "XINFO GROUPS s");
    expect_ok(C, "XGROUP CREATE s late $ ENTRIESREAD 3");
    expect_reply(C, "[[\"s\",[[\"1-0\",[\"f\",\"v1\"]]]]]",
                 "XREADGROUP GROUP g c COUNT 1 STREAMS s >");
    redisReply *r = it_cmd(C, "XINFO GROUPS s");
    ck_assert_int_eq(r->elements, 2);
    char buf[512];
    ck_assert_str_eq(it_render(r->element[0], buf, sizeof(buf)),
                     "[\"name\",\"g\",\"consumers\",:1,\"pending\",:1,\"last-delivered-id\","
                     "\"1-0\",\"entries-read\",:1,\"lag\",:2]");
    ck_assert_str_eq(it_render(r->element[1], buf, sizeof(buf)),
                     "[\"name\",\"late\",\"consumers\",:0,\"pending\",:0,\"last-delivered-id\","
                     "\"3-0\",\"entries-read\",:3,\"lag\",:0]");
    /* SETID back: the same entries are delivered again, to another owner. */
    expect_ok(C, "XGROUP SETID s g - ENTRIESREAD 0");
    expect_reply(C,
                 "[[\"s\",[[\"1-0\",[\"f\",\"v1\"]],[\"2-0\",[\"f\",\"v2\"]],[\"3-0\",[\"f\","
                 "\"v3\"]]]]]",
                 "XREADGROUP GROUP g d STREAMS s >");
    expect_reply(C, "[:3,\"1-0\",\"3-0\",[[\"d\",\"3\"]]]", "XPENDING s g");
    /* A deletion ahead of the group makes its lag unknowable. */
    expect_ok(C, "XGROUP SETID s g 1-0");
    expect_int(C, 1, "XDEL s 2-0");
    r = it_cmd(C, "XINFO GROUPS s");
    ck_assert_str_eq(it_render(r->element[0], buf, sizeof(buf)),
                     "[\"name\",\"g\",\"consumers\",:2,\"pending\",:3,\"last-delivered-id\","
                     "\"1-0\",\"entries-read\",nil,\"lag\",nil]");
}
END_TEST

START_TEST(test_readgroup_ack_pending) {
    three_entries();
    expect_error(C, "ERR Missing GROUP option for XREADGROUP",
                 "XREADGROUP COUNT 1 NOACK NOACK STREAMS s >");
    expect_error(C,
                 "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' "
                 "must be specified.",
                 "XREADGROUP GROUP g c COUNT 1 STREAMS s");
    expect_error(C,
                 "NOGROUP No such key 'nokey' or consumer group 'g' in XREADGROUP with GROUP "
                 "option",
                 "XREADGROUP GROUP g c STREAMS nokey >");
    expect_error_prefix(C, "ERR The $ ID is meaningless", "XREADGROUP GROUP g c STREAMS s $");
    expect_reply(C, "[[\"s\",[[\"1-0\",[\"f\",\"v1\"]],[\"2-0\",[\"f\",\"v2\"]]]]]",
                 "XREADGROUP GROUP g alice COUNT 2 STREAMS s >");
    expect_reply(C, "[[\"s\",[[\"3-0\",[\"f\",\"v3\"]]]]]", "XREADGROUP GROUP g bob STREAMS s >");
    expect_nil(C, "XREADGROUP GROUP g bob STREAMS s >");
    expect_reply(C, "[:3,\"1-0\",\"3-0\",[[\"alice\",\"2\"],[\"bob\",\"1\"]]]", "XPENDING s g");
    redisReply *r = it_cmd(C, "XPENDING s g - + 10");
    ck_assert_int_eq(r->elements, 3);
    ck_assert_str_eq(r->element[0]->element[0]->str, "1-0");
    ck_assert_str_eq(r->element[0]->element[1]->str, "alice");
    ck_assert_int_eq(r->element[0]->element[3]->integer, 1);
    ck_assert_str_eq(r->element[2]->element[1]->str, "bob");
    r = it_cmd(C, "XPENDING s g (1-0 (3-0 10");
    ck_assert_int_eq(r->elements, 1);
    ck_assert_str_eq(r->element[0]->element[0]->str, "2-0");
    expect_reply(C, "[]", "XPENDING s g - + 10 nobody");
    expect_reply(C, "[]", "XPENDING s g IDLE 999999999 - + 10");
    r = it_cmd(C, "XPENDING s g - + 10 alice");
    ck_assert_int_eq(r->elements, 2);
    expect_error(C, "ERR invalid start ID for the interval",
                 "XPENDING s g (18446744073709551615-18446744073709551615 + 10");
    expect_error_prefix(C, "ERR syntax error", "XPENDING s g IDLE 10 - +");
    expect_error(C, "NOGROUP No such key 's' or consumer group 'nog'", "XPENDING s nog");
    /* The history: the consumer's own pending entries, a deleted one as nil. */
    expect_int(C, 1, "XDEL s 1-0");
    expect_reply(C, "[[\"s\",[[\"1-0\",nil],[\"2-0\",[\"f\",\"v2\"]]]]]",
                 "XREADGROUP GROUP g alice STREAMS s 0");
    r = it_cmd(C, "XPENDING s g - + 10 alice");
    ck_assert_int_eq(r->element[1]->element[3]->integer, 2); /* delivered again */
    ck_assert_int_eq(r->element[0]->element[3]->integer, 1); /* the deleted one not */
    expect_error(C, "ERR Invalid stream ID specified as stream command argument",
                 "XACK s g 1-0 bad");
    expect_int(C, 2, "XACK s g 1-0 2-0 2-0 9-0");
    expect_int(C, 0, "XACK s nog 3-0");
    expect_int(C, 0, "XACK nokey g 3-0");
    expect_reply(C, "[[\"s\",[]]]", "XREADGROUP GROUP g alice STREAMS s 0");
    expect_reply(C, "[:1,\"3-0\",\"3-0\",[[\"bob\",\"1\"]]]", "XPENDING s g");
    /* NOACK delivers without a pending entry. */
    expect_bulk(C, "4-0", "XADD s 4-0 f v4");
    expect_reply(C, "[[\"s\",[[\"4-0\",[\"f\",\"v4\"]]]]]",
                 "XREADGROUP GROUP g carol NOACK STREAMS s >");
    expect_reply(C, "[:1,\"3-0\",\"3-0\",[[\"bob\",\"1\"]]]", "XPENDING s g");
    expect_ok(C, "SET str x");
    expect_error_prefix(C, "WRONGTYPE", "XACK str g 1-0");
    expect_error_prefix(C, "WRONGTYPE", "XREADGROUP GROUP g c STREAMS str >");
}
END_TEST

START_TEST(test_xclaim) {
    three_entries();
    expect_reply(C,
                 "[[\"s\",[[\"1-0\",[\"f\",\"v1\"]],[\"2-0\",[\"f\",\"v2\"]],[\"3-0\",[\"f\","
                 "\"v3\"]]]]]",
                 "XREADGROUP GROUP g alice STREAMS s >");
    expect_error(C, "NOGROUP No such key 's' or consumer group 'nog'", "XCLAIM s nog b 0 1-0");
    expect_error(C, "ERR Invalid min-idle-time argument for XCLAIM", "XCLAIM s g b x 1-0");
    expect_error(C, "ERR Unrecognized XCLAIM option 'NOPE'", "XCLAIM s g b 0 1-0 NOPE");
    expect_error(C, "ERR Invalid IDLE option argument for XCLAIM", "XCLAIM s g b 0 1-0 IDLE x");
    /* Not idle long enough: nothing moves. */
    expect_reply(C, "[]", "XCLAIM s g bob 3600000 1-0");
    expect_reply(C, "[[\"1-0\",[\"f\",\"v1\"]]]", "XCLAIM s g bob 0 1-0");
    redisReply *r = it_cmd(C, "XPENDING s g - + 10");
    ck_assert_str_eq(r->element[0]->element[1]->str, "bob");
    ck_assert_int_eq(r->element[0]->element[3]->integer, 2);
    /* JUSTID keeps the count; RETRYCOUNT sets it; IDLE sets the idle time. */
    expect_reply(C, "[\"1-0\"]", "XCLAIM s g carol 0 1-0 JUSTID");
    expect_reply(C, "[\"2-0\"]", "XCLAIM s g carol 0 2-0 JUSTID RETRYCOUNT 7 IDLE 500000");
    r = it_cmd(C, "XPENDING s g - + 10 carol");
    ck_assert_int_eq(r->elements, 2);
    ck_assert_int_eq(r->element[0]->element[3]->integer, 2);
    ck_assert_int_eq(r->element[1]->element[3]->integer, 7);
    ck_assert_int_ge(r->element[1]->element[2]->integer, 500000);
    r = it_cmd(C, "XPENDING s g IDLE 400000 - + 10");
    ck_assert_int_eq(r->elements, 1);
    /* An idle time beyond either end means "delivered now" (no overflow). */
    expect_reply(C, "[\"2-0\"]", "XCLAIM s g carol 0 2-0 JUSTID IDLE -9223372036854775808");
    expect_reply(C, "[]", "XPENDING s g IDLE 400000 - + 10");
    expect_reply(C, "[\"2-0\"]", "XCLAIM s g carol 0 2-0 JUSTID IDLE 9223372036854775807");
    expect_reply(C, "[]", "XPENDING s g IDLE 400000 - + 10");
    expect_reply(C, "[\"2-0\"]", "XCLAIM s g carol 0 2-0 JUSTID TIME 1");
    r = it_cmd(C, "XPENDING s g IDLE 400000 - + 10");
    ck_assert_int_eq(r->elements, 1);
    ck_assert_str_eq(r->element[0]->element[0]->str, "2-0");
    /* Deleted entries leave the PEL; FORCE creates a pending entry. */
    expect_ok(C, "XGROUP SETID s g 0");
    expect_int(C, 1, "XACK s g 3-0");
    expect_int(C, 1, "XDEL s 2-0");
    expect_reply(C, "[\"3-0\"]", "XCLAIM s g dave 0 2-0 3-0 FORCE JUSTID LASTID 3-0");
    expect_reply(C, "[:2,\"1-0\",\"3-0\",[[\"carol\",\"1\"],[\"dave\",\"1\"]]]", "XPENDING s g");
    r = it_cmd(C, "XINFO GROUPS s");
    ck_assert_str_eq(r->element[0]->element[7]->str, "3-0"); /* LASTID moved it */
    expect_reply(C, "[]", "XCLAIM s g dave 0 9-0 FORCE");
}
END_TEST

START_TEST(test_xautoclaim) {
    for (int i = 1; i <= 5; i++)
        expect_bulk(C, it_fmt("%d-0", i), "XADD s %d-0 f v%d", i, i);
    expect_ok(C, "XGROUP CREATE s g 0");
    redisReply *r = it_cmd(C, "XREADGROUP GROUP g alice STREAMS s >");
    ck_assert_int_eq(r->element[0]->element[1]->elements, 5);
    expect_error(C, "ERR COUNT must be > 0", "XAUTOCLAIM s g bob 0 0 COUNT 0");
    expect_error(C, "ERR COUNT must be > 0", "XAUTOCLAIM s g bob 0 0 COUNT 8070450532247928833");
    expect_error(C, "ERR syntax error", "XAUTOCLAIM s g bob 0 0 NOPE");
    expect_error(C, "NOGROUP No such key 's' or consumer group 'nog'", "XAUTOCLAIM s nog b 0 0");
    expect_reply(C, "[\"0-0\",[],[]]", "XAUTOCLAIM s g bob 3600000 0");
    /* A walk: the cursor is the next pending ID, 0-0 at the end. */
    expect_reply(C, "[\"3-0\",[[\"1-0\",[\"f\",\"v1\"]],[\"2-0\",[\"f\",\"v2\"]]],[]]",
                 "XAUTOCLAIM s g bob 0 - COUNT 2");
    expect_int(C, 1, "XDEL s 4-0");
    expect_reply(C, "[\"5-0\",[\"3-0\"],[\"4-0\"]]", "XAUTOCLAIM s g bob 0 3-0 COUNT 2 JUSTID");
    expect_reply(C, "[\"0-0\",[\"5-0\"],[]]", "XAUTOCLAIM s g bob 0 (4-0 JUSTID");
    expect_reply(C, "[:4,\"1-0\",\"5-0\",[[\"bob\",\"4\"]]]", "XPENDING s g");
    r = it_cmd(C, "XPENDING s g - + 10");
    ck_assert_int_eq(r->element[0]->element[3]->integer, 2); /* claimed with the entry */
    ck_assert_int_eq(r->element[2]->element[3]->integer, 1); /* JUSTID kept the count */
}
END_TEST

START_TEST(test_xinfo) {
    expect_error(C, "ERR no such key", "XINFO GROUPS s");
    expect_error(C, "ERR no such key", "XINFO STREAM s");
    three_entries();
    expect_ok(C, "XGROUP CREATE s h 0");
    expect_reply(C, "[[\"s\",[[\"1-0\",[\"f\",\"v1\"]]]]]",
                 "XREADGROUP GROUP g bob COUNT 1 STREAMS s >");
    expect_reply(C, "[[\"s\",[[\"2-0\",[\"f\",\"v2\"]]]]]",
                 "XREADGROUP GROUP g alice COUNT 1 STREAMS s >");
    expect_int(C, 1, "XGROUP CREATECONSUMER s g zed");
    /* Consumers in name order, zed never active. */
    redisReply *r = it_cmd(C, "XINFO CONSUMERS s g");
    ck_assert_int_eq(r->elements, 3);
    ck_assert_str_eq(r->element[0]->element[1]->str, "alice");
    ck_assert_int_eq(r->element[0]->element[3]->integer, 1);
    ck_assert_str_eq(r->element[2]->element[1]->str, "zed");
    ck_assert_int_eq(r->element[2]->element[7]->integer, -1);
    expect_error(C, "NOGROUP No such consumer group 'nog' for key name 's'",
                 "XINFO CONSUMERS s nog");
    r = it_cmd(C, "XINFO STREAM s");
    char buf[1024];
    ck_assert_str_eq(it_render(r, buf, sizeof(buf)) + 0,
                     it_fmt("[\"length\",:3,\"radix-tree-keys\",:%lld,\"radix-tree-nodes\",:%lld,"
                            "\"last-generated-id\",\"3-0\",\"max-deleted-entry-id\",\"0-0\","
                            "\"entries-added\",:3,\"recorded-first-entry-id\",\"1-0\",\"groups\",:"
                            "2,\"first-entry\",[\"1-0\",[\"f\",\"v1\"]],\"last-entry\",[\"3-0\",["
                            "\"f\",\"v3\"]]]",
                            r->element[3]->integer, r->element[5]->integer));
    r = it_cmd(C, "XINFO STREAM s FULL COUNT 1");
    ck_assert_int_eq(r->elements, 18);
    ck_assert_str_eq(r->element[14]->str, "entries");
    ck_assert_int_eq(r->element[15]->elements, 1);
    redisReply *g = r->element[17]->element[0];
    ck_assert_str_eq(g->element[1]->str, "g");
    ck_assert_int_eq(g->element[5]->integer, 2);   /* entries-read */
    ck_assert_int_eq(g->element[7]->integer, 1);   /* lag */
    ck_assert_int_eq(g->element[9]->integer, 2);   /* pel-count */
    ck_assert_int_eq(g->element[11]->elements, 1); /* COUNT 1 of the PEL */
    ck_assert_int_eq(g->element[13]->elements, 3); /* consumers */
    redisReply *bob = g->element[13]->element[1];
    ck_assert_str_eq(bob->element[1]->str, "bob");
    ck_assert_str_eq(bob->element[9]->element[0]->element[0]->str, "1-0");
    ck_assert_int_eq(bob->element[9]->element[0]->elements, 3);
    expect_error(C,
                 "ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO "
                 "HELP.",
                 "XINFO STREAM s FULL COUNT");
    r = it_cmd(C, "XINFO HELP");
    ck_assert_int_eq(r->elements, 9);
}
END_TEST

START_TEST(test_copy_and_mem) {
    three_entries();
    expect_reply(C, "[[\"s\",[[\"1-0\",[\"f\",\"v1\"]]]]]",
                 "XREADGROUP GROUP g bob COUNT 1 STREAMS s >");
    expect_int(C, 1, "COPY s t");
    expect_reply(C, "[:1,\"1-0\",\"1-0\",[[\"bob\",\"1\"]]]", "XPENDING t g");
    /* The copy's groups are its own. */
    expect_int(C, 1, "XACK t g 1-0");
    expect_reply(C, "[:1,\"1-0\",\"1-0\",[[\"bob\",\"1\"]]]", "XPENDING s g");
    redisReply *r = it_cmd(C, "MEMORY USAGE s");
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    long long before = r->integer;
    for (int i = 0; i < 200; i++)
        expect_int(C, 1, "XGROUP CREATECONSUMER s g c%03d", i);
    r = it_cmd(C, "MEMORY USAGE s SAMPLES 0");
    ck_assert_int_gt(r->integer, before + 200 * 4);
}
END_TEST

START_TEST(test_blocking_order) {
    expect_ok(C, "XGROUP CREATE s g $ MKSTREAM");
    it_raw *rd[2];
    for (int i = 0; i < 2; i++) {
        rd[i] = it_raw_connect(S);
        it_raw_cmd(rd[i], "XREADGROUP", "GROUP", "g", it_fmt("c%d", i), "COUNT", "1", "BLOCK", "0",
                   "STREAMS", "s", ">", NULL);
        wait_blocked(i + 1);
    }
    expect_bulk(C, "1-0", "XADD s 1-0 f v1");
    expect_raw(rd[0], "[[\"s\",[[\"1-0\",[\"f\",\"v1\"]]]]]");
    wait_blocked(1);
    expect_bulk(C, "2-0", "XADD s 2-0 f v2");
    expect_raw(rd[1], "[[\"s\",[[\"2-0\",[\"f\",\"v2\"]]]]]");
    wait_blocked(0);
    expect_reply(C, "[:2,\"1-0\",\"2-0\",[[\"c0\",\"1\"],[\"c1\",\"1\"]]]", "XPENDING s g");
    /* A timeout answers nil; a history read never blocks. */
    expect_nil(C, "XREADGROUP GROUP g c0 BLOCK 20 STREAMS s >");
    expect_reply(C, "[[\"s\",[[\"1-0\",[\"f\",\"v1\"]]]]]",
                 "XREADGROUP GROUP g c0 BLOCK 0 STREAMS s 0");
    /* Inside MULTI a blocking read answers at once. */
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "XREADGROUP GROUP g c0 BLOCK 0 STREAMS s >");
    expect_reply(C, "[nil]", "EXEC");
    ck_assert_int_eq(blocked(), 0);
}
END_TEST

START_TEST(test_blocking_group_gone) {
    expect_ok(C, "XGROUP CREATE s g $ MKSTREAM");
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">", NULL);
    wait_blocked(1);
    expect_int(C, 1, "XGROUP DESTROY s g");
    expect_raw(rd,
               "-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option");
    wait_blocked(0);
    redisReply *r = it_cmd(C, "INFO commandstats");
    ck_assert_ptr_nonnull(strstr(r->str, "cmdstat_xreadgroup:calls=1,"));
    ck_assert_ptr_nonnull(strstr(r->str, "failed_calls=1"));
    /* The key deleted, or set to another type, while blocked. */
    expect_ok(C, "XGROUP CREATE s g $");
    it_raw_cmd(rd, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">", NULL);
    wait_blocked(1);
    expect_int(C, 1, "DEL s");
    expect_raw(rd,
               "-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option");
    expect_ok(C, "XGROUP CREATE s g $ MKSTREAM");
    it_raw_cmd(rd, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">", NULL);
    wait_blocked(1);
    expect_ok(C, "SET s x");
    expect_raw(rd, "-WRONGTYPE Operation against a key holding the wrong kind of value");
    wait_blocked(0);
}
END_TEST

/* A group's bookkeeping is counted (rdb_changes_since_last_save) but is
 * no change of the key, as in Valkey: a transaction watching the stream
 * still runs after another client's XREADGROUP, XACK, XCLAIM, XGROUP
 * SETID and XSETID, and fails after an XADD. */
START_TEST(test_watch_ignores_groups) {
    three_entries();
    redisContext *other = it_connect(S);
    expect_ok(C, "WATCH s");
    long long before = it_info_int(C, "persistence", "rdb_changes_since_last_save");
    it_free(it_cmd(other, "XREADGROUP GROUP g c COUNT 2 STREAMS s >"));
    expect_int(other, 1, "XACK s g 1-0");
    it_free(it_cmd(other, "XCLAIM s g d 0 2-0"));
    expect_ok(other, "XGROUP SETID s g 0");
    expect_ok(other, "XSETID s 3-0");
    ck_assert_int_gt(it_info_int(C, "persistence", "rdb_changes_since_last_save"), before);
    expect_ok(C, "MULTI");
    expect_reply(C, "+QUEUED", "PING");
    redisReply *r = it_cmd(C, "EXEC");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq((int)r->elements, 1);
    expect_ok(C, "WATCH s");
    expect_bulk(other, "4-0", "XADD s 4-0 f v4");
    expect_ok(C, "MULTI");
    expect_reply(C, "+QUEUED", "PING");
    r = it_cmd(C, "EXEC");
    ck_assert_int_eq(r->type, REDIS_REPLY_NIL);
    it_disconnect(other);
}
END_TEST

START_TEST(test_notifications) {
    expect_ok(C, "CONFIG SET notify-keyspace-events Kt");
    it_raw *sub = it_raw_connect(S);
    it_raw_cmd(sub, "PSUBSCRIBE", "__keyspace@0__:*", NULL);
    expect_raw(sub, "[\"psubscribe\",\"__keyspace@0__:*\",:1]");
    expect_ok(C, "XGROUP CREATE s g $ MKSTREAM");
    expect_int(C, 1, "XGROUP CREATECONSUMER s g bob");
    expect_bulk(C, "1-0", "XADD s 1-0 f v");
    expect_reply(C, "[[\"s\",[[\"1-0\",[\"f\",\"v\"]]]]]", "XREADGROUP GROUP g alice STREAMS s >");
    expect_reply(C, "[\"1-0\"]", "XCLAIM s g mike 0 1-0 FORCE JUSTID");
    expect_int(C, 0, "XGROUP DELCONSUMER s g lee");
    expect_ok(C, "XGROUP SETID s g 0");
    expect_int(C, 0, "XGROUP DELCONSUMER s g bob"); /* bob had nothing pending */
    expect_int(C, 1, "XGROUP DESTROY s g");
    const char *events[] = {"xgroup-create",         "xgroup-createconsumer", "xadd",
                            "xgroup-createconsumer", "xgroup-createconsumer", "xgroup-setid",
                            "xgroup-delconsumer",    "xgroup-destroy"};
    for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
        expect_raw(sub, it_fmt("[\"pmessage\",\"__keyspace@0__:*\",\"__keyspace@0__:s\",\"%s\"]",
                               events[i]));
}
END_TEST

START_TEST(test_resp3) {
    three_entries();
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "XPENDING", "s", "g", NULL);
    expect_raw(r, "[:0,_,_,_]");
    it_raw_cmd(r, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">", NULL);
    expect_raw(r, "{\"s\":[[\"1-0\",[\"f\",\"v1\"]]]}");
    it_raw_cmd(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", ">", NULL);
    expect_raw(r, "-NOGROUP No such key 'nokey' or consumer group 'g' in XREADGROUP with GROUP "
                  "option");
    it_raw_cmd(r, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "s", "0-0", NULL);
    expect_raw(r, "{\"s\":[[\"1-0\",[\"f\",\"v1\"]]]}");
    it_raw_cmd(r, "XINFO", "GROUPS", "s", NULL);
    expect_raw(r, "[{\"name\":\"g\",\"consumers\"::1,\"pending\"::1,\"last-delivered-id\":\"1-0\","
                  "\"entries-read\"::1,\"lag\"::2}]");
    it_raw_cmd(r, "XGROUP", "CREATE", "s", "h", "2-0", NULL);
    expect_raw(r, "+OK");
    it_raw_cmd(r, "XINFO", "GROUPS", "s", NULL);
    expect_raw(r, "[{\"name\":\"g\",\"consumers\"::1,\"pending\"::1,\"last-delivered-id\":\"1-0\","
                  "\"entries-read\"::1,\"lag\"::2},{\"name\":\"h\",\"consumers\"::0,\"pending\"::0,"
                  "\"last-delivered-id\":\"2-0\",\"entries-read\":_,\"lag\":_}]");
    it_raw_cmd(r, "XREADGROUP", "GROUP", "h", "c", "BLOCK", "10", "STREAMS", "s", ">", NULL);
    expect_raw(r, "{\"s\":[[\"3-0\",[\"f\",\"v3\"]]]}");
    it_raw_cmd(r, "XREADGROUP", "GROUP", "h", "c", "BLOCK", "10", "STREAMS", "s", ">", NULL);
    expect_raw(r, "_");
}
END_TEST

static Suite *stream_group_suite(void) {
    Suite *s = suite_create("stream_group");
    TCase *tc = it_tcase(s, "stream_group");
    tcase_add_test(tc, test_xgroup);
    tcase_add_test(tc, test_setid_and_entries_read);
    tcase_add_test(tc, test_readgroup_ack_pending);
    tcase_add_test(tc, test_xclaim);
    tcase_add_test(tc, test_xautoclaim);
    tcase_add_test(tc, test_xinfo);
    tcase_add_test(tc, test_copy_and_mem);
    tcase_add_test(tc, test_blocking_order);
    tcase_add_test(tc, test_blocking_group_gone);
    tcase_add_test(tc, test_watch_ignores_groups);
    tcase_add_test(tc, test_notifications);
    tcase_add_test(tc, test_resp3);
    return s;
}

int main(void) {
    return it_run(stream_group_suite());
}
