/* check_it_notify.c -- keyspace notifications against a real keel-server:
 * a pattern subscriber (PSUBSCRIBE __key*@*__:*) sees the exact events of
 * every command family in Valkey's order, the class letters filter them
 * (K, E, a type class alone), `new` fires once per created key, `expired`
 * when a key goes lazily or actively, `evicted` under maxmemory, field
 * expiry's `hexpired`, RESP3 subscribers get them as pushes, and
 * notify-keyspace-events round-trips through CONFIG SET/GET.
 *
 * After its events each test sends PING on the subscriber and expects the
 * pong next: nothing more was published in between. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATTERN "__key*@*__:*"

static it_raw *subscribe_on(it_server *s) {
    it_raw *r = it_raw_connect(s);
    it_raw_cmd(r, "PSUBSCRIBE", PATTERN, NULL);
    expect_raw(r, "[\"psubscribe\",\"" PATTERN "\",:1]");
    return r;
}

static it_raw *subscribe(void) {
    return subscribe_on(S);
}

static void expect_event(it_raw *r, const char *channel, const char *msg) {
    expect_raw(r, it_fmt("[\"pmessage\",\"" PATTERN "\",\"%s\",\"%s\"]", channel, msg));
}

/* The keyspace channel's event for key in database 0. */
static void ks(it_raw *r, const char *key, const char *event) {
    expect_event(r, it_fmt("__keyspace@0__:%s", key), event);
}

/* Nothing else was published before this point. */
static void expect_quiet(it_raw *r) {
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "[\"pong\",\"\"]");
}

static void set_classes(redisContext *c, const char *classes) {
    expect_ok(c, "CONFIG SET notify-keyspace-events %s", classes);
}

/* ---- the families ---- */

START_TEST(test_string_events) {
    set_classes(C, "KA");
    it_raw *r = subscribe();
    expect_ok(C, "SET s v");
    expect_ok(C, "SET s v EX 100");
    expect_ok(C, "SETEX s 100 v");
    expect_int(C, 1, "SETNX n v");
    expect_int(C, 3, "APPEND s xx");
    expect_int(C, 3, "SETRANGE s 1 zz");
    expect_int(C, 1, "INCR i");
    expect_int(C, -4, "DECRBY i 5");
    expect_bulk(C, "-3.5", "INCRBYFLOAT i 0.5");
    expect_bulk(C, "-3.5", "GETSET i 1");
    expect_ok(C, "MSET a 1 b 2");
    expect_bulk(C, "1", "GETEX a PX 100000");
    expect_bulk(C, "1", "GETEX a PERSIST");
    expect_bulk(C, "1", "GETEX a PERSIST"); /* no TTL left: no event */
    expect_bulk(C, "2", "GETDEL b");
    expect_ok(C, "SET a v PXAT 1");    /* a time past deletes */
    expect_ok(C, "SET a v NX PXAT 1"); /* gone already: nothing */
    ks(r, "s", "set");
    ks(r, "s", "set");
    ks(r, "s", "expire");
    ks(r, "s", "set");
    ks(r, "s", "expire");
    ks(r, "n", "set");
    ks(r, "s", "append");
    ks(r, "s", "setrange");
    ks(r, "i", "incrby");
    ks(r, "i", "incrby");
    ks(r, "i", "incrbyfloat");
    ks(r, "i", "set");
    ks(r, "a", "set");
    ks(r, "b", "set");
    ks(r, "a", "expire");
    ks(r, "a", "persist");
    ks(r, "b", "del");
    ks(r, "a", "del");
    expect_quiet(r);
}
END_TEST

START_TEST(test_generic_events) {
    set_classes(C, "KEg");
    it_raw *r = subscribe();
    expect_ok(C, "SET k v");
    expect_int(C, 1, "EXPIRE k 100");
    expect_int(C, 0, "EXPIRE k 50 GT"); /* refused: nothing */
    expect_int(C, 1, "PERSIST k");
    expect_int(C, 0, "PERSIST k");
    expect_ok(C, "RENAME k k2");
    expect_int(C, 1, "MOVE k2 1");
    expect_ok(C, "SET c v");
    expect_int(C, 1, "COPY c c2 DB 2");
    expect_int(C, 1, "PEXPIRE c -1"); /* a time past deletes */
    expect_ok(C, "SET d v");
    expect_int(C, 1, "DEL d nosuch");
    expect_ok(C, "SET u v");
    expect_int(C, 1, "UNLINK u");
    const char *ev[][2] = {
        {"__keyspace@0__:k", "expire"},      {"__keyevent@0__:expire", "k"},
        {"__keyspace@0__:k", "persist"},     {"__keyevent@0__:persist", "k"},
        {"__keyspace@0__:k", "rename_from"}, {"__keyevent@0__:rename_from", "k"},
        {"__keyspace@0__:k2", "rename_to"},  {"__keyevent@0__:rename_to", "k2"},
        {"__keyspace@0__:k2", "move_from"},  {"__keyevent@0__:move_from", "k2"},
        {"__keyspace@1__:k2", "move_to"},    {"__keyevent@1__:move_to", "k2"},
        {"__keyspace@2__:c2", "copy_to"},    {"__keyevent@2__:copy_to", "c2"},
        {"__keyspace@0__:c", "del"},         {"__keyevent@0__:del", "c"},
        {"__keyspace@0__:d", "del"},         {"__keyevent@0__:del", "d"},
        {"__keyspace@0__:u", "del"},         {"__keyevent@0__:del", "u"},
    };
    for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
        expect_event(r, ev[i][0], ev[i][1]);
    expect_quiet(r);
}
END_TEST

START_TEST(test_list_events) {
    set_classes(C, "KA");
    it_raw *r = subscribe();
    expect_int(C, 2, "RPUSH l a b");
    expect_int(C, 3, "LPUSH l z");
    expect_int(C, 0, "LPUSHX nosuch a");
    expect_int(C, 4, "RPUSHX l c");
    expect_int(C, 5, "LINSERT l BEFORE a y");
    expect_int(C, -1, "LINSERT l BEFORE nosuch y");
    expect_ok(C, "LSET l 0 w");
    expect_int(C, 1, "LREM l 0 y");
    expect_ok(C, "LTRIM l 0 2");
    expect_bulk(C, "w", "LPOP l");
    expect_bulk(C, "b", "RPOP l");
    expect_bulk(C, "a", "LMOVE l l2 LEFT RIGHT"); /* empties l */
    expect_bulk(C, "a", "RPOPLPUSH l2 l3");
    expect_ok(C, "LTRIM l3 1 0");
    ks(r, "l", "rpush");
    ks(r, "l", "lpush");
    ks(r, "l", "rpush");
    ks(r, "l", "linsert");
    ks(r, "l", "lset");
    ks(r, "l", "lrem");
    ks(r, "l", "ltrim");
    ks(r, "l", "lpop");
    ks(r, "l", "rpop");
    ks(r, "l2", "rpush");
    ks(r, "l", "lpop");
    ks(r, "l", "del");
    ks(r, "l3", "lpush");
    ks(r, "l2", "rpop");
    ks(r, "l2", "del");
    ks(r, "l3", "ltrim");
    ks(r, "l3", "del");
    expect_quiet(r);
}
END_TEST

START_TEST(test_blocking_pop_events) {
    set_classes(C, "Kl");
    it_raw *r = subscribe();
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "BLPOP", "bl", "0", NULL);
    it_wait_until(it_info_int(C, "clients", "blocked_clients") == 1, 5000);
    expect_int(C, 1, "RPUSH bl x");
    expect_raw(rd, "[\"bl\",\"x\"]");
    ks(r, "bl", "rpush");
    ks(r, "bl", "lpop");
    expect_quiet(r);
}
END_TEST

START_TEST(test_set_events) {
    set_classes(C, "KA");
    it_raw *r = subscribe();
    expect_int(C, 3, "SADD s a b c");
    expect_int(C, 0, "SADD s a");
    expect_int(C, 0, "SREM s x");
    expect_int(C, 1, "SREM s c");
    expect_int(C, 1, "SMOVE s t a");
    expect_int(C, 1, "SADD u b");
    expect_int(C, 1, "SINTERSTORE d s u");
    expect_int(C, 1, "SUNIONSTORE d s u");
    expect_int(C, 0, "SDIFFSTORE d s u"); /* empty: d goes */
    expect_int(C, 0, "SDIFFSTORE d s u"); /* already gone: nothing */
    expect_int(C, 0, "SINTERSTORE d s nosuch");
    expect_bulk(C, "b", "SPOP s");
    expect_int(C, 2, "SADD p 1 2");
    redisReply *rep = it_cmd(C, "SPOP p 5");
    ck_assert_int_eq((int)rep->elements, 2);
    ks(r, "s", "sadd");
    ks(r, "s", "srem");
    ks(r, "s", "srem");
    ks(r, "t", "sadd");
    ks(r, "u", "sadd");
    ks(r, "d", "sinterstore");
    ks(r, "d", "sunionstore");
    ks(r, "d", "del");
    ks(r, "s", "spop");
    ks(r, "s", "del");
    ks(r, "p", "sadd");
    ks(r, "p", "spop");
    ks(r, "p", "del");
    expect_quiet(r);
}
END_TEST

START_TEST(test_zset_events) {
    set_classes(C, "KA");
    it_raw *r = subscribe();
    expect_int(C, 3, "ZADD z 1 a 2 b 3 c");
    expect_int(C, 0, "ZADD z NX 5 a");
    expect_bulk(C, "3", "ZINCRBY z 2 a");
    expect_int(C, 0, "ZREM z x");
    expect_int(C, 1, "ZREM z b");
    expect_int(C, 4, "ZADD y 1 p 2 q 3 r 4 s");
    expect_int(C, 1, "ZREMRANGEBYSCORE y 1 1");
    expect_int(C, 1, "ZREMRANGEBYRANK y 0 0");
    expect_int(C, 1, "ZREMRANGEBYLEX y [r [r");
    expect_reply(C, "[\"a\",\"3\"]", "ZPOPMIN z");
    expect_reply(C, "[\"c\",\"3\"]", "ZPOPMAX z");
    expect_int(C, 1, "ZRANGESTORE d y 0 -1");
    expect_int(C, 1, "ZUNIONSTORE d 1 y");
    expect_int(C, 1, "ZINTERSTORE d 1 y");
    expect_int(C, 0, "ZDIFFSTORE d 2 y y");
    expect_reply(C, "[\"s\",\"4\"]", "ZPOPMIN y");
    ks(r, "z", "zadd");
    ks(r, "z", "zincr");
    ks(r, "z", "zrem");
    ks(r, "y", "zadd");
    ks(r, "y", "zremrangebyscore");
    ks(r, "y", "zremrangebyrank");
    ks(r, "y", "zremrangebylex");
    ks(r, "z", "zpopmin");
    ks(r, "z", "zpopmax");
    ks(r, "z", "del");
    ks(r, "d", "zrangestore");
    ks(r, "d", "zunionstore");
    ks(r, "d", "zinterstore");
    ks(r, "d", "del");
    ks(r, "y", "zpopmin");
    ks(r, "y", "del");
    expect_quiet(r);
}
END_TEST

START_TEST(test_hash_events) {
    set_classes(C, "KA");
    it_raw *r = subscribe();
    expect_int(C, 2, "HSET h a 1 b 2");
    expect_ok(C, "HMSET h c 3");
    expect_int(C, 0, "HSETNX h a 9");
    expect_int(C, 1, "HSETNX h d 4");
    expect_int(C, 11, "HINCRBY h a 10");
    expect_bulk(C, "2.5", "HINCRBYFLOAT h b 0.5");
    expect_int(C, 0, "HDEL h nosuch");
    expect_int(C, 1, "HDEL h d");
    expect_reply(C, "[:1,:-2]", "HEXPIRE h 100 FIELDS 2 a nosuch");
    expect_reply(C, "[:0]", "HEXPIRE h 100 NX FIELDS 1 a");
    expect_reply(C, "[:1]", "HPERSIST h FIELDS 1 a");
    expect_reply(C, "[:-1]", "HPERSIST h FIELDS 1 a");
    expect_reply(C, "[\"11\"]", "HGETEX h EX 100 FIELDS 1 a");
    expect_reply(C, "[\"11\"]", "HGETEX h PERSIST FIELDS 1 a");
    expect_int(C, 1, "HSETEX h EX 100 FIELDS 1 e 5");
    expect_reply(C, "[:2]", "HEXPIRE h 0 FIELDS 1 e");
    expect_reply(C, "[\"3\"]", "HGETDEL h FIELDS 1 c");
    expect_int(C, 1, "HSETEX h PX 1 FIELDS 1 b 1"); /* not yet past */
    expect_reply(C, "[\"11\",nil]", "HGETEX h PXAT 1 FIELDS 2 a zz");
    ks(r, "h", "hset");
    ks(r, "h", "hset");
    ks(r, "h", "hset");
    ks(r, "h", "hincrby");
    ks(r, "h", "hincrbyfloat");
    ks(r, "h", "hdel");
    ks(r, "h", "hexpire");
    ks(r, "h", "hpersist");
    ks(r, "h", "hexpire");
    ks(r, "h", "hpersist");
    ks(r, "h", "hset");
    ks(r, "h", "hexpire");
    ks(r, "h", "hexpired");
    ks(r, "h", "hdel");
    ks(r, "h", "hset");
    ks(r, "h", "hexpire");
    /* b's millisecond passes before HGETEX looks (lazy expiry), before the
     * cron does, or after HGETEX removed a: b and a go, either way, then
     * the emptied hash. */
    ks(r, "h", "hexpired");
    ks(r, "h", "hexpired");
    ks(r, "h", "del");
    expect_int(C, 0, "EXISTS h");
    expect_quiet(r);
}
END_TEST

START_TEST(test_hash_field_active_expiry) {
    set_classes(C, "KEh");
    it_raw *r = subscribe();
    expect_int(C, 2, "HSET fh a 1 b 2");
    expect_reply(C, "[:1]", "HPEXPIRE fh 30 FIELDS 1 a");
    expect_event(r, "__keyspace@0__:fh", "hset");
    expect_event(r, "__keyevent@0__:hset", "fh");
    expect_event(r, "__keyspace@0__:fh", "hexpire");
    expect_event(r, "__keyevent@0__:hexpire", "fh");
    /* Nobody reads fh: the cron removes the field. */
    expect_event(r, "__keyspace@0__:fh", "hexpired");
    expect_event(r, "__keyevent@0__:hexpired", "fh");
    expect_int(C, 1, "HLEN fh");
    expect_quiet(r);
}
END_TEST

START_TEST(test_sort_store_events) {
    set_classes(C, "KA");
    it_raw *r = subscribe();
    expect_int(C, 3, "RPUSH src 3 1 2");
    expect_int(C, 3, "SORT src STORE dst");
    expect_int(C, 0, "SORT nosuch STORE dst");
    expect_int(C, 0, "SORT nosuch STORE dst");
    ks(r, "src", "rpush");
    ks(r, "dst", "sortstore");
    ks(r, "dst", "del");
    expect_quiet(r);
}
END_TEST

/* ---- classes ---- */

START_TEST(test_class_filtering) {
    set_classes(C, "Kl");
    it_raw *r = subscribe();
    expect_ok(C, "SET foo bar");
    expect_int(C, 1, "LPUSH mylist a");
    expect_int(C, 1, "DEL foo");
    ks(r, "mylist", "lpush");
    expect_quiet(r);
    /* Key events only. */
    set_classes(C, "E$");
    expect_ok(C, "SET foo bar");
    expect_int(C, 2, "LPUSH mylist a");
    expect_event(r, "__keyevent@0__:set", "foo");
    expect_quiet(r);
    /* Off: nothing at all. */
    set_classes(C, "");
    expect_ok(C, "SET foo bar");
    expect_int(C, 1, "DEL foo");
    expect_quiet(r);
    /* A type class without K or E publishes nothing either. */
    set_classes(C, "A");
    expect_ok(C, "SET foo bar");
    expect_quiet(r);
}
END_TEST

START_TEST(test_new_key_events) {
    set_classes(C, "En");
    it_raw *r = subscribe();
    expect_ok(C, "SET foo bar");
    expect_ok(C, "SET foo baz");
    expect_ok(C, "SET bar bar");
    expect_int(C, 1, "RPUSH l a");
    expect_int(C, 2, "RPUSH l b");
    expect_int(C, 1, "HSET h f v");
    expect_ok(C, "RENAME bar bar2"); /* the target is added anew */
    expect_event(r, "__keyevent@0__:new", "foo");
    expect_event(r, "__keyevent@0__:new", "bar");
    expect_event(r, "__keyevent@0__:new", "l");
    expect_event(r, "__keyevent@0__:new", "h");
    expect_event(r, "__keyevent@0__:new", "bar2");
    expect_quiet(r);
    /* A is not n. */
    set_classes(C, "EA");
    expect_ok(C, "SET fresh 1");
    expect_event(r, "__keyevent@0__:set", "fresh");
    expect_quiet(r);
}
END_TEST

START_TEST(test_keymiss_events) {
    set_classes(C, "Em");
    it_raw *r = subscribe();
    expect_nil(C, "GET nosuch");
    expect_ok(C, "SET here 1");
    expect_bulk(C, "1", "GET here");
    expect_event(r, "__keyevent@0__:keymiss", "nosuch");
    expect_quiet(r);
}
END_TEST

/* ---- keys that go by themselves ---- */

START_TEST(test_expired_active) {
    set_classes(C, "Ex");
    it_raw *r = subscribe();
    expect_ok(C, "PSETEX foo 100 1");
    /* Nobody touches foo: the cron expires it. */
    expect_event(r, "__keyevent@0__:expired", "foo");
    expect_int(C, 0, "EXISTS foo");
    expect_quiet(r);
}
END_TEST

START_TEST(test_expired_lazy) {
    it_server *s = it_start("--enable-debug-command", "yes", NULL);
    redisContext *c = it_connect(s);
    set_classes(c, "KEx");
    expect_ok(c, "DEBUG SET-ACTIVE-EXPIRE 0");
    it_raw *r = subscribe_on(s);
    expect_ok(c, "PSETEX foo 50 1");
    it_sleep_ms(120);
    expect_quiet(r); /* no active expiry: still there, unannounced */
    expect_nil(c, "GET foo");
    expect_event(r, "__keyspace@0__:foo", "expired");
    expect_event(r, "__keyevent@0__:expired", "foo");
    expect_nil(c, "GET foo");
    expect_quiet(r);
}
END_TEST

START_TEST(test_hexpired_lazy) {
    it_server *s = it_start("--enable-debug-command", "yes", NULL);
    redisContext *c = it_connect(s);
    set_classes(c, "Kgh");
    expect_ok(c, "DEBUG SET-ACTIVE-EXPIRE 0");
    expect_int(c, 3, "HSET h a 1 b 2 c 3");
    expect_reply(c, "[:1,:1]", "HPEXPIRE h 30 FIELDS 2 a b");
    it_raw *r = subscribe_on(s);
    it_sleep_ms(100);
    expect_quiet(r); /* the cron is off: nothing went yet */
    expect_nil(c, "HGET h a");
    ks(r, "h", "hexpired"); /* both due fields, in one event */
    expect_quiet(r);
    expect_reply(c, "[:1]", "HPEXPIRE h 30 FIELDS 1 c");
    ks(r, "h", "hexpire");
    it_sleep_ms(100);
    expect_int(c, 0, "HLEN h"); /* the last field: the hash goes too */
    ks(r, "h", "hexpired");
    ks(r, "h", "del");
    expect_quiet(r);
}
END_TEST

START_TEST(test_evicted) {
    set_classes(C, "Ee");
    expect_ok(C, "CONFIG SET maxmemory-policy allkeys-lru");
    it_raw *r = subscribe();
    expect_ok(C, "SET foo bar");
    expect_ok(C, "CONFIG SET maxmemory 1");
    expect_event(r, "__keyevent@0__:evicted", "foo");
    expect_ok(C, "CONFIG SET maxmemory 0");
    expect_int(C, 0, "EXISTS foo");
    expect_quiet(r);
}
END_TEST

/* ---- RESP3 subscribers and other databases ---- */

START_TEST(test_resp3_push_and_db) {
    set_classes(C, "KEg");
    it_raw *r = it_raw_connect(S);
    it_raw_cmd(r, "HELLO", "3", NULL);
    ck_assert_ptr_nonnull(it_raw_read(r));
    it_raw_cmd(r, "PSUBSCRIBE", "__keyevent@5__:*", NULL);
    expect_raw(r, ">[\"psubscribe\",\"__keyevent@5__:*\",:1]");
    expect_ok(C, "SELECT 5");
    expect_ok(C, "SET k v");
    expect_int(C, 1, "DEL k");
    expect_raw(r, ">[\"pmessage\",\"__keyevent@5__:*\",\"__keyevent@5__:del\",\"k\"]");
    /* RESP3: the subscriber still answers commands. */
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+PONG");
}
END_TEST

/* ---- the directive ---- */

START_TEST(test_config_round_trips) {
    const char *pairs[][2] = {
        {"gKE", "gKE"}, {"$lshzxeKE", "$lshzxeKE"},
        {"KA", "AK"},   {"EA", "AE"},
        {"", ""},       {"Em", "Em"},
        {"Ent", "tnE"}, {"g$lshzxetdKE", "AKE"},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        set_classes(C, pairs[i][0]);
        expect_reply(C, it_fmt("[\"notify-keyspace-events\",\"%s\"]", pairs[i][1]),
                     "CONFIG GET notify-keyspace-events");
    }
    expect_error(C,
                 "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
                 "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.",
                 "CONFIG SET notify-keyspace-events KEw");
    /* The refused value left the old one. */
    expect_reply(C, "[\"notify-keyspace-events\",\"AKE\"]", "CONFIG GET notify-keyspace-events");
}
END_TEST

START_TEST(test_config_file) {
    it_server *s = it_start_conf("notify-keyspace-events Kg\n", NULL);
    redisContext *c = it_connect(s);
    expect_reply(c, "[\"notify-keyspace-events\",\"gK\"]", "CONFIG GET notify-keyspace-events");
    it_raw *r = subscribe_on(s);
    expect_ok(c, "SET k v");
    expect_int(c, 1, "DEL k");
    expect_event(r, "__keyspace@0__:k", "del");
    expect_quiet(r);
    it_start_refused("notify-keyspace-events Kw\n", NULL);
}
END_TEST

static Suite *notify_suite(void) {
    Suite *s = suite_create("notify");
    TCase *tc = it_tcase(s, "families");
    tcase_add_test(tc, test_string_events);
    tcase_add_test(tc, test_generic_events);
    tcase_add_test(tc, test_list_events);
    tcase_add_test(tc, test_blocking_pop_events);
    tcase_add_test(tc, test_set_events);
    tcase_add_test(tc, test_zset_events);
    tcase_add_test(tc, test_hash_events);
    tcase_add_test(tc, test_hash_field_active_expiry);
    tcase_add_test(tc, test_sort_store_events);
    tc = it_tcase(s, "classes");
    tcase_add_test(tc, test_class_filtering);
    tcase_add_test(tc, test_new_key_events);
    tcase_add_test(tc, test_keymiss_events);
    tcase_add_test(tc, test_expired_active);
    tcase_add_test(tc, test_evicted);
    tcase_add_test(tc, test_resp3_push_and_db);
    tcase_add_test(tc, test_config_round_trips);
    tc = it_tcase_bare(s, "own-servers");
    tcase_add_test(tc, test_expired_lazy);
    tcase_add_test(tc, test_hexpired_lazy);
    tcase_add_test(tc, test_config_file);
    return s;
}

int main(void) {
    return it_run(notify_suite());
}
