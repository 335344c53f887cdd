/* check_notify.c -- unit tests for core/keyspace/notify.c: the class
 * letters (parsing, Valkey's canonical string), the two channels and their
 * messages, class filtering, and the events the keyspace emits itself
 * (new, expired lazily and actively, evicted, keymiss), through a sink
 * that records what it is handed. */
#include "keyspace/notify.h"

#include "common/kmem.h"
#include "event/event.h"
#include "keyspace/db.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "keyspace_fixture.h"

#define MAX_MSGS 16

static struct {
    char channel[512];
    char msg[512];
} got[MAX_MSGS];
static int ngot;

static long long capture(const char *ch, size_t chlen, const char *msg, size_t msglen) {
    ck_assert_int_lt(ngot, MAX_MSGS);
    ck_assert_uint_lt(chlen, sizeof(got[0].channel));
    ck_assert_uint_lt(msglen, sizeof(got[0].msg));
    memcpy(got[ngot].channel, ch, chlen);
    got[ngot].channel[chlen] = '\0';
    memcpy(got[ngot].msg, msg, msglen);
    got[ngot].msg[msglen] = '\0';
    ngot++;
    return 1;
}

static void expect_msg(int i, const char *channel, const char *msg) {
    ck_assert_int_gt(ngot, i);
    ck_assert_str_eq(got[i].channel, channel);
    ck_assert_str_eq(got[i].msg, msg);
}

static db_options opts;
static db_metrics stats;
static int classes;

static void setup(void) {
    keyspace_fixture_setup(&opts, &stats, 16, 0);
    classes = 0;
    ngot = 0;
    notify_setup(&classes, capture);
}

static void teardown(void) {
    notify_teardown();
    db_teardown();
}

static int parse(const char *s) {
    return notify_parse_classes(s);
}

static const char *format(int c) {
    static char buf[NOTIFY_CLASSES_MAX];
    notify_format_classes(c, buf);
    return buf;
}

/* ---- the class letters ---- */

START_TEST(test_parse_format_round_trips) {
    /* Valkey's own CONFIG GET/SET test, then the rest of the letters. */
    ck_assert_str_eq(format(parse("gKE")), "gKE");
    ck_assert_str_eq(format(parse("$lshzxeKE")), "$lshzxeKE");
    ck_assert_str_eq(format(parse("KA")), "AK");
    ck_assert_str_eq(format(parse("EA")), "AE");
    ck_assert_str_eq(format(parse("mtdnE")), "tdnEm");
    ck_assert_str_eq(format(parse("")), "");
    ck_assert_int_eq(parse(""), 0);
    /* A is the type classes without n and m; every one of them spelled
     * out reads back as A. */
    ck_assert_int_eq(parse("A"), NOTIFY_ALL);
    ck_assert_str_eq(format(parse("g$lshzxetd")), "A");
    ck_assert_int_eq(parse("A") & (NOTIFY_NEW | NOTIFY_KEY_MISS), 0);
    ck_assert_int_eq(parse("KEA"), NOTIFY_ALL | NOTIFY_KEYSPACE | NOTIFY_KEYEVENT);
    /* Valkey writes no n beside A. */
    ck_assert_str_eq(format(parse("AnK")), "AK");
    ck_assert_str_eq(format(parse("Am")), "Am");
}
END_TEST

START_TEST(test_parse_refuses_unknown_letters) {
    ck_assert_int_eq(parse("w"), -1);
    ck_assert_int_eq(parse("KEw"), -1);
    ck_assert_int_eq(parse("a"), -1);
    ck_assert_int_eq(parse("k"), -1);
    ck_assert_int_eq(parse(" "), -1);
}
END_TEST

/* ---- channels and filtering ---- */

START_TEST(test_keyspace_and_keyevent_channels) {
    classes = parse("KE$");
    notify_keyspace_event(NOTIFY_STRING, "set", "foo", 3, 0);
    ck_assert_int_eq(ngot, 2);
    expect_msg(0, "__keyspace@0__:foo", "set");
    expect_msg(1, "__keyevent@0__:set", "foo");
    ngot = 0;
    notify_keyspace_event(NOTIFY_STRING, "append", "k", 1, 12);
    expect_msg(0, "__keyspace@12__:k", "append");
    expect_msg(1, "__keyevent@12__:append", "k");
}
END_TEST

START_TEST(test_only_one_kind) {
    classes = parse("Kg");
    notify_keyspace_event(NOTIFY_GENERIC, "del", "a", 1, 3);
    ck_assert_int_eq(ngot, 1);
    expect_msg(0, "__keyspace@3__:a", "del");
    ngot = 0;
    classes = parse("Eg");
    notify_keyspace_event(NOTIFY_GENERIC, "del", "a", 1, 3);
    ck_assert_int_eq(ngot, 1);
    expect_msg(0, "__keyevent@3__:del", "a");
    /* A class without K or E publishes nothing. */
    ngot = 0;
    classes = parse("A");
    notify_keyspace_event(NOTIFY_GENERIC, "del", "a", 1, 3);
    ck_assert_int_eq(ngot, 0);
}
END_TEST

START_TEST(test_classes_filter) {
    classes = parse("KEl");
    notify_keyspace_event(NOTIFY_STRING, "set", "foo", 3, 0);
    notify_keyspace_event(NOTIFY_GENERIC, "del", "foo", 3, 0);
    notify_keyspace_event(NOTIFY_HASH, "hset", "foo", 3, 0);
    ck_assert_int_eq(ngot, 0);
    notify_keyspace_event(NOTIFY_LIST, "lpush", "mylist", 6, 0);
    ck_assert_int_eq(ngot, 2);
    expect_msg(0, "__keyspace@0__:mylist", "lpush");
    /* Off altogether. */
    ngot = 0;
    classes = 0;
    notify_keyspace_event(NOTIFY_LIST, "lpush", "mylist", 6, 0);
    ck_assert_int_eq(ngot, 0);
}
END_TEST

START_TEST(test_binary_and_long_keys) {
    classes = parse("KEg");
    notify_keyspace_event(NOTIFY_GENERIC, "del", "a\0b", 3, 0);
    ck_assert_int_eq(ngot, 2);
    ck_assert_int_eq(memcmp(got[0].channel, "__keyspace@0__:a\0b", 18), 0);
    /* A key too long for the stack buffer gets a channel of its own. */
    char key[400];
    memset(key, 'x', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    ngot = 0;
    notify_keyspace_event(NOTIFY_GENERIC, "expire", key, strlen(key), 7);
    char want[512];
    snprintf(want, sizeof(want), "__keyspace@7__:%s", key);
    expect_msg(0, want, "expire");
    expect_msg(1, "__keyevent@7__:expire", key);
}
END_TEST

START_TEST(test_no_sink_after_teardown) {
    classes = parse("KEA");
    notify_teardown();
    notify_keyspace_event(NOTIFY_GENERIC, "del", "a", 1, 0);
    ck_assert_int_eq(ngot, 0);
    notify_setup(&classes, capture); /* for the fixture's teardown */
}
END_TEST

/* ---- the keyspace's own events ---- */

START_TEST(test_new_only_when_created) {
    classes = parse("En");
    db *d = db_get(0);
    db_set(d, "foo", 3, obj_int(1), 0);
    db_set(d, "foo", 3, obj_int(2), 0); /* an overwrite creates nothing */
    db_set_str(d, "bar", 3, "v", 1, 0, -1);
    ck_assert_int_eq(ngot, 2);
    expect_msg(0, "__keyevent@0__:new", "foo");
    expect_msg(1, "__keyevent@0__:new", "bar");
    /* db_add refuses an existing key: nothing new. */
    ngot = 0;
    kobj *o = obj_int(3);
    ck_assert_ptr_null(db_add(d, "foo", 3, o, 1));
    obj_decref(o);
    ck_assert_int_eq(ngot, 0);
    /* COPY's and RENAME's targets are added as new keys, as in Valkey. */
    db_put(d, "foo", 3, obj_int(4), -1);
    ck_assert_int_eq(ngot, 1);
    db_move(d, db_find(d, "foo", 3), db_get(1), "moved", 5);
    ck_assert_int_eq(ngot, 2);
    expect_msg(1, "__keyevent@1__:new", "moved");
}
END_TEST

START_TEST(test_expired_lazily) {
    classes = parse("Ex");
    db *d = db_get(2);
    db_set_str(d, "k", 1, "v", 1, 0, T0 + 100);
    ck_assert_int_eq(ngot, 0);
    event_set_cached_ms(T0 + 101);
    ck_assert_ptr_null(db_lookup(d, "k", 1, 1));
    ck_assert_int_eq(ngot, 1);
    expect_msg(0, "__keyevent@2__:expired", "k");
    /* Gone once: a second lookup announces nothing. */
    ck_assert_ptr_null(db_lookup(d, "k", 1, 1));
    ck_assert_int_eq(ngot, 1);
}
END_TEST

START_TEST(test_expired_actively) {
    classes = parse("Kx");
    db *d = db_get(0);
    db_set_str(d, "k", 1, "v", 1, 0, T0 + 100);
    event_set_cached_ms(T0 + 200);
    ck_assert_uint_eq(db_active_expire_cycle(100000), 1);
    ck_assert_int_eq(ngot, 1);
    expect_msg(0, "__keyspace@0__:k", "expired");
}
END_TEST

START_TEST(test_evicted) {
    classes = parse("KEe");
    db *d = db_get(0);
    db_set_str(d, "k", 1, "v", 1, 0, -1);
    ck_assert_int_eq(db_evict(d, "k", 1), 1);
    ck_assert_int_eq(ngot, 2);
    expect_msg(0, "__keyspace@0__:k", "evicted");
    expect_msg(1, "__keyevent@0__:evicted", "k");
    /* A deletion is the command's to announce, not the keyspace's. */
    ngot = 0;
    classes = parse("KEA");
    db_set_str(d, "k", 1, "v", 1, 0, -1);
    db_delete(d, "k", 1);
    ck_assert_int_eq(ngot, 0);
}
END_TEST

START_TEST(test_keymiss) {
    classes = parse("Em");
    db *d = db_get(0);
    ck_assert_ptr_null(db_lookup(d, "nope", 4, 1));
    ck_assert_int_eq(ngot, 1);
    expect_msg(0, "__keyevent@0__:keymiss", "nope");
    /* Lookups that do not count (writes, TYPE) are no misses. */
    ck_assert_ptr_null(db_lookup(d, "nope", 4, 0));
    ck_assert_ptr_null(db_lookup_quiet(d, "nope", 4));
    ck_assert_int_eq(ngot, 1);
}
END_TEST

static Suite *notify_suite(void) {
    Suite *s = suite_create("notify");
    TCase *tc = tcase_create("notify");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_parse_format_round_trips);
    tcase_add_test(tc, test_parse_refuses_unknown_letters);
    tcase_add_test(tc, test_keyspace_and_keyevent_channels);
    tcase_add_test(tc, test_only_one_kind);
    tcase_add_test(tc, test_classes_filter);
    tcase_add_test(tc, test_binary_and_long_keys);
    tcase_add_test(tc, test_no_sink_after_teardown);
    tcase_add_test(tc, test_new_only_when_created);
    tcase_add_test(tc, test_expired_lazily);
    tcase_add_test(tc, test_expired_actively);
    tcase_add_test(tc, test_evicted);
    tcase_add_test(tc, test_keymiss);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(notify_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
