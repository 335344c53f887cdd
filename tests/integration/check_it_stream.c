/* check_it_stream.c -- the stream commands against a real keel-server:
 * XADD's IDs, options and errors, ranges, XDEL/XTRIM/XSETID and the
 * metadata they keep, TYPE/OBJECT ENCODING/COPY/MEMORY USAGE/SCAN TYPE,
 * keyspace notifications, RESP3 shapes, and XREAD BLOCK: wake-up in the
 * order clients blocked, `$` pinned to the last ID at the time of
 * blocking, several streams, timeouts, BLOCK 0, CLIENT UNBLOCK, MULTI,
 * keys deleted or retyped while blocked. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long long blocked(void) {
    return it_info_int(C, "clients", "blocked_clients");
}

#define wait_blocked(n) it_wait_until(blocked() == (n), 5000)

START_TEST(test_xadd_ids_and_errors) {
    expect_bulk(C, "1-1", "XADD s 1-1 f v");
    expect_bulk(C, "1-2", "XADD s 1-* f v");
    expect_bulk(C, "2-0", "XADD s 2 f v");
    expect_bulk(C, "5-0", "XADD s 5-* a 1 b 2");
    expect_error(C,
                 "ERR The ID specified in XADD is equal or smaller than the target stream top "
                 "item",
                 "XADD s 5-0 f v");
    expect_error(C,
                 "ERR The ID specified in XADD is equal or smaller than the target stream top "
                 "item",
                 "XADD s 4-* f v");
    expect_error(C, "ERR The ID specified in XADD must be greater than 0-0", "XADD t 0-0 f v");
    expect_error(C, "ERR The ID specified in XADD must be greater than 0-0", "XADD t 0 f v");
    expect_bulk(C, "0-1", "XADD t 0-* f v");
    expect_error(C, "ERR Invalid stream ID specified as stream command argument", "XADD s x f v");
    expect_error(C, "ERR Invalid stream ID specified as stream command argument", "XADD s - f v");
    expect_error(C, "ERR wrong number of arguments for 'xadd' command", "XADD s * f");
    expect_error(C, "ERR wrong number of arguments for 'xadd' command", "XADD s * f v g");
    expect_error(C, "ERR The MAXLEN argument must be >= 0.", "XADD s MAXLEN -1 * f v");
    expect_error(C,
                 "ERR syntax error, MAXLEN and MINID options at the same time are not "
                 "compatible",
                 "XADD s MAXLEN 1 MINID 0 * f v");
    expect_error(C, "ERR syntax error, LIMIT cannot be used without the special ~ option",
                 "XADD s MAXLEN 1 LIMIT 1 * f v");
    expect_error(C,
                 "ERR syntax error, LIMIT cannot be used without specifying a trimming "
                 "strategy",
                 "XADD s LIMIT 1 * f v");
    expect_nil(C, "XADD nokey NOMKSTREAM * f v");
    expect_int(C, 0, "EXISTS nokey");
    expect_ok(C, "SET str x");
    expect_error_prefix(C, "WRONGTYPE", "XADD str * f v");
    expect_bulk(C, "18446744073709551615-18446744073709551615",
                "XADD m 18446744073709551615-18446744073709551615 f v");
    expect_error(C, "ERR The stream has exhausted the last possible ID, unable to add more items",
                 "XADD m * f v");
    /* "*" follows the clock and never goes back. */
    redisReply *r = it_cmd(C, "XADD now * f v");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    long long ms = atoll(r->str);
    ck_assert_int_gt(ms, 1600000000000LL);
    expect_int(C, 4, "XLEN s");
    expect_reply(C,
                 "[[\"1-1\",[\"f\",\"v\"]],[\"1-2\",[\"f\",\"v\"]],[\"2-0\",[\"f\",\"v\"]],"
                 "[\"5-0\",[\"a\",\"1\",\"b\",\"2\"]]]",
                 "XRANGE s - +");
}
END_TEST

START_TEST(test_ranges) {
    for (int i = 1; i <= 10; i++)
        it_cmd(C, "XADD s %d-0 n %d", i, i);
    expect_reply(C, "[[\"3-0\",[\"n\",\"3\"]],[\"4-0\",[\"n\",\"4\"]]]", "XRANGE s 3 4");
    expect_reply(C, "[[\"4-0\",[\"n\",\"4\"]]]", "XRANGE s (3 4");
    expect_reply(C, "[[\"4-0\",[\"n\",\"4\"]],[\"3-0\",[\"n\",\"3\"]]]", "XREVRANGE s 4 3");
    expect_reply(C, "[[\"10-0\",[\"n\",\"10\"]]]", "XREVRANGE s + - COUNT 1");
    expect_reply(C, "[[\"1-0\",[\"n\",\"1\"]]]", "XRANGE s - + COUNT 1");
    expect_reply(C, "nil", "XRANGE s - + COUNT 0");
    expect_reply(C, "[]", "XRANGE s 20 30");
    expect_reply(C, "[]", "XRANGE missing - +");
    expect_error(C, "ERR invalid start ID for the interval",
                 "XRANGE s (18446744073709551615-18446744073709551615 +");
    expect_error(C, "ERR invalid end ID for the interval", "XRANGE s - (0-0");
    expect_error(C, "ERR Invalid stream ID specified as stream command argument", "XRANGE s (- +");
    expect_error(C, "ERR syntax error", "XRANGE s - + COUNT");
    expect_int(C, 0, "XLEN missing");
}
END_TEST

START_TEST(test_xdel_xtrim_xsetid) {
    for (int i = 1; i <= 300; i++)
        it_cmd(C, "XADD s %d-0 f v", i);
    expect_int(C, 2, "XDEL s 1-0 300-0 999-0");
    expect_int(C, 0, "XDEL missing 1-0");
    expect_error(C, "ERR Invalid stream ID specified as stream command argument", "XDEL s 1-0 x");
    expect_int(C, 298, "XLEN s");
    expect_error(C, "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id",
                 "XSETID s 299-0");
    it_cmd(C, "XADD t 5-0 f v");
    expect_error(C, "ERR The ID specified in XSETID is smaller than the target stream top item",
                 "XSETID t 4-0 MAXDELETEDID 0-1");
    expect_error(C,
                 "ERR The entries_added specified in XSETID is smaller than the target stream "
                 "length",
                 "XSETID s 400-0 ENTRIESADDED 1");
    expect_error(C,
                 "ERR The ID specified in XSETID is smaller than the provided "
                 "max_deleted_entry_id",
                 "XSETID s 400-0 MAXDELETEDID 500-0");
    expect_error(C, "ERR entries_added must be positive", "XSETID s 400-0 ENTRIESADDED -1");
    expect_error(C, "ERR no such key", "XSETID missing 1-0");
    expect_error(C, "ERR syntax error", "XSETID s 400-0 FOO");
    expect_ok(C, "XSETID s 400-0");
    expect_error(C,
                 "ERR The ID specified in XADD is equal or smaller than the target stream top "
                 "item",
                 "XADD s 400-0 f v");
    expect_bulk(C, "400-1", "XADD s 400-* f v");
    /* MAXLEN = trims exactly; ~ only whole nodes (100 entries each). */
    expect_int(C, 0, "XTRIM s MAXLEN ~ 250");
    expect_int(C, 49, "XTRIM s MAXLEN 250");
    expect_int(C, 250, "XLEN s");
    expect_int(C, 150, "XTRIM s MINID ~ 201");
    expect_reply(C, "[[\"201-0\",[\"f\",\"v\"]]]", "XRANGE s - + COUNT 1");
    expect_error(C, "ERR syntax error, XTRIM must be called with a trimming strategy",
                 "XTRIM s LIMIT 0");
    expect_error(C, "ERR syntax error", "XTRIM s MAXLEN 1 FOO");
    expect_int(C, 0, "XTRIM missing MAXLEN 0");
    /* An emptied stream stays. */
    expect_int(C, 100, "XTRIM s MAXLEN 0");
    expect_int(C, 1, "EXISTS s");
    expect_int(C, 0, "XLEN s");
    expect_bulk(C, "400-2", "XADD s MAXLEN 0 400-2 f v");
    expect_int(C, 0, "XLEN s");
}
END_TEST

START_TEST(test_type_ops) {
    for (int i = 1; i <= 250; i++)
        it_cmd(C, "XADD s %d-0 field%d value%d", i, i % 3, i);
    expect_status(C, "stream", "TYPE s");
    expect_bulk(C, "stream", "OBJECT ENCODING s");
    expect_int(C, 1, "COPY s c");
    expect_int(C, 1, "XDEL s 5-0");
    expect_int(C, 250, "XLEN c");
    expect_reply(C, "[[\"5-0\",[\"field2\",\"value5\"]]]", "XRANGE c 5 5");
    redisReply *m = it_cmd(C, "MEMORY USAGE c");
    ck_assert_int_eq(m->type, REDIS_REPLY_INTEGER);
    ck_assert_int_gt(m->integer, 250 * 8);
    expect_ok(C, "SET str x");
    redisReply *scan = it_cmd(C, "SCAN 0 TYPE stream COUNT 100");
    ck_assert_str_eq(scan->element[0]->str, "0");
    ck_assert_str_eq(it_sorted_join(scan->element[1]), "c,s");
    expect_int(C, 2, "UNLINK s c");
}
END_TEST

START_TEST(test_notifications) {
    expect_ok(C, "CONFIG SET notify-keyspace-events KEtg");
    it_raw *sub = it_raw_connect(S);
    it_raw_cmd(sub, "PSUBSCRIBE", "__keyevent@0__:*", NULL);
    it_raw_read(sub);
    it_cmd(C, "XADD s MAXLEN 1 1-0 f v");
    it_cmd(C, "XADD s MAXLEN 1 2-0 f v");
    it_cmd(C, "XDEL s 2-0");
    it_cmd(C, "XSETID s 3-0");
    it_cmd(C, "XTRIM s MAXLEN 0");
    expect_raw(sub, "[\"pmessage\",\"__keyevent@0__:*\",\"__keyevent@0__:xadd\",\"s\"]");
    expect_raw(sub, "[\"pmessage\",\"__keyevent@0__:*\",\"__keyevent@0__:xadd\",\"s\"]");
    expect_raw(sub, "[\"pmessage\",\"__keyevent@0__:*\",\"__keyevent@0__:xtrim\",\"s\"]");
    expect_raw(sub, "[\"pmessage\",\"__keyevent@0__:*\",\"__keyevent@0__:xdel\",\"s\"]");
    expect_raw(sub, "[\"pmessage\",\"__keyevent@0__:*\",\"__keyevent@0__:xsetid\",\"s\"]");
    /* XTRIM of nothing publishes nothing: the next event is the DEL's. */
    it_cmd(C, "DEL s");
    expect_raw(sub, "[\"pmessage\",\"__keyevent@0__:*\",\"__keyevent@0__:del\",\"s\"]");
}
END_TEST

START_TEST(test_resp3_shapes) {
    it_cmd(C, "XADD a 1-0 f v");
    it_cmd(C, "XADD b 2-0 g w");
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "XREAD", "STREAMS", "a", "b", "0", "0", NULL);
    expect_raw(r, "{\"a\":[[\"1-0\",[\"f\",\"v\"]]],\"b\":[[\"2-0\",[\"g\",\"w\"]]]}");
    it_raw_cmd(r, "XREAD", "STREAMS", "a", "b", "$", "$", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "XRANGE", "a", "-", "+", NULL);
    expect_raw(r, "[[\"1-0\",[\"f\",\"v\"]]]");
    expect_reply(C, "[[\"a\",[[\"1-0\",[\"f\",\"v\"]]]]]", "XREAD COUNT 5 STREAMS a nokey 0 0");
    expect_reply(C, "[[\"b\",[[\"2-0\",[\"g\",\"w\"]]]]]", "XREAD STREAMS b +");
    expect_reply(C, "nil", "XREAD STREAMS a 1-0");
    expect_error(C,
                 "ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must "
                 "be specified.",
                 "XREAD STREAMS a b 0");
    expect_error(C, "ERR syntax error", "XREAD COUNT 1 a 0");
    expect_error(C,
                 "ERR The > ID can be specified only when calling XREADGROUP using the GROUP "
                 "<group> <consumer> option.",
                 "XREAD STREAMS a >");
    expect_error(C, "ERR timeout is negative", "XREAD BLOCK -1 STREAMS a $");
    expect_error(C, "ERR timeout is not an integer or out of range", "XREAD BLOCK 1.5 STREAMS a $");
}
END_TEST

/* Clients are served in the order they blocked, each reading after the
 * ID that was last when it blocked (`$` pinned), not after the newest. */
START_TEST(test_block_order_and_dollar) {
    it_cmd(C, "XADD s 1-0 f v");
    it_raw *rd[3];
    for (int i = 0; i < 3; i++) {
        rd[i] = it_raw_connect(S);
        it_raw_cmd(rd[i], "XREAD", "BLOCK", "0", "STREAMS", "s", "$", NULL);
        wait_blocked(i + 1);
    }
    /* Two entries in one transaction: each waiter gets both. */
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "XADD s 2-0 a 1");
    expect_status(C, "QUEUED", "XADD s 3-0 b 2");
    expect_reply(C, "[\"2-0\",\"3-0\"]", "EXEC");
    for (int i = 0; i < 3; i++)
        expect_raw(rd[i], "[[\"s\",[[\"2-0\",[\"a\",\"1\"]],[\"3-0\",[\"b\",\"2\"]]]]]");
    ck_assert_int_eq(blocked(), 0);
    /* A waiter on an ID gets what comes after it; COUNT applies. */
    it_raw_cmd(rd[0], "XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", "3-0", NULL);
    wait_blocked(1);
    it_cmd(C, "XADD s 4-0 c 3");
    expect_raw(rd[0], "[[\"s\",[[\"4-0\",[\"c\",\"3\"]]]]]");
}
END_TEST

START_TEST(test_block_many_streams_and_types) {
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "XREAD", "BLOCK", "0", "STREAMS", "a", "b", "$", "$", NULL);
    wait_blocked(1);
    ck_assert_int_eq(it_info_int(C, "clients", "total_blocking_keys"), 2);
    /* Another type under the key, or a deleted stream, wake no one. */
    it_cmd(C, "LPUSH a x");
    it_cmd(C, "DEL a");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "XADD a 1-0 f v");
    expect_status(C, "QUEUED", "DEL a");
    expect_reply(C, "[\"1-0\",:1]", "EXEC");
    it_sleep_ms(50);
    ck_assert_int_eq(blocked(), 1);
    ck_assert_int_eq(it_info_int(C, "clients", "total_blocking_keys_on_nokey"), 0);
    it_cmd(C, "XADD b 7-0 f v");
    expect_raw(rd, "[[\"b\",[[\"7-0\",[\"f\",\"v\"]]]]]");
    /* Inside MULTI a blocking XREAD answers at once. */
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "XREAD BLOCK 0 STREAMS nothing $");
    expect_reply(C, "[nil]", "EXEC");
}
END_TEST

START_TEST(test_block_timeout_and_unblock) {
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "CLIENT", "ID", NULL);
    long long id = it_raw_read(rd)->integer;
    /* A timeout replies a null array, and the pipeline goes on. */
    it_raw_sendstr(rd, "*6\r\n$5\r\nXREAD\r\n$5\r\nBLOCK\r\n$2\r\n20\r\n$7\r\nSTREAMS\r\n"
                       "$1\r\ns\r\n$1\r\n$\r\n*1\r\n$4\r\nPING\r\n");
    expect_raw(rd, "*nil");
    expect_raw(rd, "+PONG");
    it_raw_cmd(rd, "XREAD", "BLOCK", "0", "STREAMS", "s", "$", NULL);
    wait_blocked(1);
    expect_int(C, 1, "CLIENT UNBLOCK %lld", id);
    expect_raw(rd, "*nil");
    it_raw_cmd(rd, "XREAD", "BLOCK", "0", "STREAMS", "s", "$", NULL);
    wait_blocked(1);
    expect_int(C, 1, "CLIENT UNBLOCK %lld ERROR", id);
    expect_raw(rd, "-UNBLOCKED client unblocked via CLIENT UNBLOCK");
    /* Still served afterwards. */
    it_raw_cmd(rd, "XREAD", "BLOCK", "0", "STREAMS", "s", "$", NULL);
    wait_blocked(1);
    it_cmd(C, "XADD s 1-0 f v");
    expect_raw(rd, "[[\"s\",[[\"1-0\",[\"f\",\"v\"]]]]]");
}
END_TEST

static Suite *stream_suite(void) {
    Suite *s = suite_create("stream");
    TCase *tc = it_tcase(s, "stream");
    tcase_add_test(tc, test_xadd_ids_and_errors);
    tcase_add_test(tc, test_ranges);
    tcase_add_test(tc, test_xdel_xtrim_xsetid);
    tcase_add_test(tc, test_type_ops);
    tcase_add_test(tc, test_notifications);
    tcase_add_test(tc, test_resp3_shapes);
    tcase_add_test(tc, test_block_order_and_dollar);
    tcase_add_test(tc, test_block_many_streams_and_types);
    tcase_add_test(tc, test_block_timeout_and_unblock);
    return s;
}

int main(void) {
    return it_run(stream_suite());
}
