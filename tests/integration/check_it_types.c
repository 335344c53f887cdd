/* check_it_types.c -- the generic commands on every aggregate type against
 * a real keel-server: TYPE, OBJECT ENCODING at and past the compact
 * encodings' thresholds, WRONGTYPE across the families, COPY (an
 * independent value), RENAME, MOVE, SWAPDB, SCAN TYPE, DEL/UNLINK/EXISTS,
 * expiry and eviction of collections, MEMORY USAGE, WATCH, and the change
 * counter's per-element counts. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"

/* One key of each type: hash h, list l, set s (strings), intset i, zset z. */
static void make_one_of_each(redisContext *c) {
    expect_int(c, 2, "HSET h f1 v1 f2 v2");
    expect_int(c, 3, "RPUSH l a b c");
    expect_int(c, 3, "SADD s x y z");
    expect_int(c, 3, "SADD i 1 2 3");
    expect_int(c, 2, "ZADD z 1 one 2 two");
}

/* Adds n elements to key with the family's command, 100 per call. */
static void fill(redisContext *c, const char *type, const char *key, int n, int width) {
    for (int start = 0; start < n; start += 100) {
        const char *argv[260];
        size_t lens[260];
        char bufs[200][64];
        int argc = 0, b = 0;
        argv[argc++] = !strcmp(type, "hash")   ? "HSET"
                       : !strcmp(type, "list") ? "RPUSH"
                       : !strcmp(type, "zset") ? "ZADD"
                                               : "SADD";
        argv[argc++] = key;
        for (int i = start; i < n && i < start + 100; i++) {
            if (!strcmp(type, "zset")) {
                snprintf(bufs[b], sizeof(bufs[b]), "%d", i);
                argv[argc++] = bufs[b++];
            }
            if (!strcmp(type, "intset"))
                snprintf(bufs[b], sizeof(bufs[b]), "%d", i);
            else
                snprintf(bufs[b], sizeof(bufs[b]), "m%0*d", width, i);
            argv[argc++] = bufs[b++];
            if (!strcmp(type, "hash")) argv[argc++] = "value";
        }
        for (int j = 0; j < argc; j++)
            lens[j] = strlen(argv[j]);
        it_free(it_cmd_argv(c, argc, argv, lens));
    }
}

static long long dbsize(redisContext *c) {
    redisReply *r = it_cmd(c, "DBSIZE");
    long long n = r->integer;
    it_free(r);
    return n;
}

START_TEST(test_type_and_encoding) {
    make_one_of_each(C);
    expect_status(C, "hash", "TYPE h");
    expect_status(C, "list", "TYPE l");
    expect_status(C, "set", "TYPE s");
    expect_status(C, "set", "TYPE i");
    expect_status(C, "zset", "TYPE z");
    expect_bulk(C, "listpack", "OBJECT ENCODING h");
    expect_bulk(C, "listpack", "OBJECT ENCODING l");
    expect_bulk(C, "listpack", "OBJECT ENCODING s");
    expect_bulk(C, "intset", "OBJECT ENCODING i");
    expect_bulk(C, "listpack", "OBJECT ENCODING z");
    /* Past the default thresholds (128 entries; 512 for hashes and intsets). */
    fill(C, "hash", "h", 600, 4);
    fill(C, "list", "l", 20000, 8);
    fill(C, "set", "s", 200, 4);
    fill(C, "intset", "i", 600, 0);
    fill(C, "zset", "z", 200, 4);
    expect_bulk(C, "hashtable", "OBJECT ENCODING h");
    expect_bulk(C, "quicklist", "OBJECT ENCODING l");
    expect_bulk(C, "hashtable", "OBJECT ENCODING s");
    expect_bulk(C, "hashtable", "OBJECT ENCODING i");
    expect_bulk(C, "skiplist", "OBJECT ENCODING z");
}
END_TEST

/* A long member converts at once, and CONFIG SET moves the threshold. */
START_TEST(test_thresholds_follow_config) {
    char big[100];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    expect_int(C, 1, "SADD s %s", big);
    expect_bulk(C, "hashtable", "OBJECT ENCODING s");
    expect_ok(C, "CONFIG SET zset-max-listpack-entries 2");
    expect_int(C, 2, "ZADD z 1 a 2 b");
    expect_bulk(C, "listpack", "OBJECT ENCODING z");
    expect_int(C, 1, "ZADD z 3 c");
    expect_bulk(C, "skiplist", "OBJECT ENCODING z");
    expect_ok(C, "CONFIG SET hash-max-listpack-value 3");
    expect_int(C, 1, "HSET h f abcd");
    expect_bulk(C, "hashtable", "OBJECT ENCODING h");
    expect_ok(C, "CONFIG SET set-max-intset-entries 2");
    expect_int(C, 3, "SADD i 1 2 3");
    expect_bulk(C, "listpack", "OBJECT ENCODING i");
}
END_TEST

START_TEST(test_wrongtype_across_families) {
    make_one_of_each(C);
    expect_ok(C, "SET str v");
    expect_error(C, WRONGTYPE, "GET h");
    expect_error(C, WRONGTYPE, "HGET l f");
    expect_error(C, WRONGTYPE, "LPUSH s a");
    expect_error(C, WRONGTYPE, "SADD z a");
    expect_error(C, WRONGTYPE, "ZADD h 1 a");
    expect_error(C, WRONGTYPE, "HSET str f v");
    expect_error(C, WRONGTYPE, "LLEN str");
    expect_error(C, WRONGTYPE, "SCARD l");
    expect_error(C, WRONGTYPE, "ZCARD s");
    expect_error(C, WRONGTYPE, "APPEND z x");
    expect_error(C, WRONGTYPE, "INCR h");
    expect_error(C, WRONGTYPE, "SUNION s h");
    expect_error(C, WRONGTYPE, "ZUNION 2 z l");
    expect_error(C, WRONGTYPE, "RPOPLPUSH l s");
    expect_status(C, "hash", "TYPE h"); /* nothing changed */
    expect_int(C, 3, "LLEN l");
}
END_TEST

/* COPY gives an independent value of every type and encoding. */
START_TEST(test_copy_is_independent) {
    make_one_of_each(C);
    fill(C, "zset", "bigz", 300, 4);
    const char *keys[] = {"h", "l", "s", "i", "z", "bigz"};
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
        expect_int(C, 1, "COPY %s %s:copy", keys[k], keys[k]);
    expect_int(C, 1, "HSET h:copy f3 v3");
    expect_int(C, 2, "HLEN h");
    expect_int(C, 4, "LPUSH l:copy new");
    expect_reply(C, "[\"a\",\"b\",\"c\"]", "LRANGE l 0 -1");
    expect_int(C, 1, "SREM s:copy x");
    expect_int(C, 3, "SCARD s");
    expect_int(C, 1, "SADD i:copy 4");
    expect_int(C, 3, "SCARD i");
    expect_int(C, 0, "ZADD z:copy 5 one");
    expect_bulk(C, "1", "ZSCORE z one");
    expect_int(C, 1, "ZREM bigz:copy m0000");
    expect_int(C, 300, "ZCARD bigz");
    expect_int(C, 299, "ZCARD bigz:copy");
    expect_bulk(C, "skiplist", "OBJECT ENCODING bigz:copy");
    expect_int(C, 0, "COPY h l");
    expect_int(C, 1, "COPY h l REPLACE");
    expect_status(C, "hash", "TYPE l");
    expect_int(C, 1, "COPY z z1 DB 1");
    expect_ok(C, "SELECT 1");
    expect_int(C, 2, "ZCARD z1");
}
END_TEST

START_TEST(test_rename_move_swapdb) {
    make_one_of_each(C);
    expect_ok(C, "RENAME h h2");
    expect_bulk(C, "v1", "HGET h2 f1");
    expect_int(C, 0, "EXISTS h");
    expect_int(C, 1, "MOVE l 2");
    expect_int(C, 0, "EXISTS l");
    expect_ok(C, "SWAPDB 0 2");
    expect_reply(C, "[\"a\",\"b\",\"c\"]", "LRANGE l 0 -1");
    expect_int(C, 0, "EXISTS z");
    expect_ok(C, "SWAPDB 0 2");
    expect_int(C, 2, "ZCARD z");
}
END_TEST

START_TEST(test_scan_type_and_del) {
    make_one_of_each(C);
    expect_ok(C, "SET str v");
    expect_reply(C, "[\"0\",[\"h\"]]", "SCAN 0 TYPE hash COUNT 100");
    expect_reply(C, "[\"0\",[\"z\"]]", "SCAN 0 TYPE zset COUNT 100");
    expect_reply(C, "[\"0\",[\"l\"]]", "SCAN 0 TYPE list COUNT 100");
    redisReply *r = it_cmd(C, "SCAN 0 TYPE set COUNT 100");
    ck_assert_str_eq(it_sorted_join(r->element[1]), "i,s");
    it_free(r);
    expect_int(C, 6, "EXISTS h l s i z str");
    expect_int(C, 3, "DEL h l s");
    expect_int(C, 2, "UNLINK i z");
    expect_int(C, 1, "DBSIZE");
}
END_TEST

/* A collection whose last element goes is deleted: no empty keys. */
START_TEST(test_empty_collections_vanish) {
    make_one_of_each(C);
    expect_int(C, 2, "HDEL h f1 f2");
    expect_reply(C, "[\"a\",\"b\",\"c\"]", "LPOP l 3");
    expect_int(C, 3, "SREM s x y z");
    expect_int(C, 3, "SREM i 1 2 3");
    expect_int(C, 2, "ZREM z one two");
    expect_int(C, 0, "EXISTS h l s i z");
    expect_int(C, 0, "DBSIZE");
}
END_TEST

START_TEST(test_expire_collections) {
    make_one_of_each(C);
    const char *keys[] = {"h", "l", "s", "i", "z"};
    for (size_t k = 0; k < 5; k++)
        expect_int(C, 1, "PEXPIRE %s 50", keys[k]);
    it_wait_until(dbsize(C) == 0, 3000);
    expect_int(C, 0, "EXISTS h l s i z");
}
END_TEST

START_TEST(test_memory_usage_grows) {
    fill(C, "hash", "h", 10, 4);
    redisReply *r = it_cmd(C, "MEMORY USAGE h");
    long long small = r->integer;
    it_free(r);
    fill(C, "hash", "h", 1000, 4);
    r = it_cmd(C, "MEMORY USAGE h");
    long long big = r->integer;
    it_free(r);
    ck_assert_int_gt(small, 10 * 10);
    ck_assert_int_gt(big, 1000 * 10);
    ck_assert_int_lt(big, 1000 * 200);
}
END_TEST

static long long usage(redisContext *c, const char *key, const char *samples) {
    redisReply *r = samples ? it_cmd(c, "MEMORY USAGE %s SAMPLES %s", key, samples)
                            : it_cmd(c, "MEMORY USAGE %s", key);
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
    long long n = r->integer;
    it_free(r);
    return n;
}

/* SAMPLES n: a list's nodes and a set's members are estimated from n of
 * them (default 5), 0 meaning all, as in Valkey. */
START_TEST(test_memory_usage_samples) {
    char big[1001];
    memset(big, 'x', 1000);
    big[1000] = '\0';
    expect_ok(C, "CONFIG SET list-max-listpack-size 2");
    expect_int(C, 2, "RPUSH l a b");
    for (int i = 0; i < 100; i++)
        expect_int(C, 3 + i, "RPUSH l %s", big);
    long long all = usage(C, "l", "0"), one = usage(C, "l", "1"), dflt = usage(C, "l", NULL);
    ck_assert_int_gt(all, 100 * 1000);
    ck_assert_int_eq(usage(C, "l", "1000"), all);
    ck_assert_int_lt(one, 51 * 200);
    ck_assert_int_eq(usage(C, "l", "5"), dflt);
    ck_assert_int_gt(dflt, one);
    ck_assert_int_lt(dflt, all);
    expect_ok(C, "CONFIG SET list-max-listpack-size -2");
    /* One big member among small ones: a one-member estimate is off. */
    for (int i = 0; i < 200; i++)
        expect_int(C, 1, "SADD s m%d", i);
    expect_int(C, 1, "SADD s %s", big);
    ck_assert_int_gt(usage(C, "s", "0"), 1000);
    ck_assert_int_ne(usage(C, "s", "1"), usage(C, "s", "0"));
    ck_assert_int_eq(usage(C, "s", "0"), usage(C, "s", "201"));
    expect_error(C, "ERR syntax error", "MEMORY USAGE s SAMPLES -1");
    expect_error(C, "ERR value is not an integer or out of range", "MEMORY USAGE s SAMPLES x");
    expect_error(C, "ERR syntax error", "MEMORY USAGE s SAMPLES");
}
END_TEST

START_TEST(test_watch_sees_collection_changes) {
    make_one_of_each(C);
    redisContext *other = it_connect(S);
    expect_ok(C, "WATCH z");
    expect_bulk(other, "2", "ZINCRBY z 1 one");
    expect_ok(C, "MULTI");
    expect_reply(C, "+QUEUED", "ZCARD z");
    expect_reply(C, "nil", "EXEC");
    it_disconnect(other);
}
END_TEST

static long long changes(redisContext *c) {
    return it_info_int(c, "persistence", "rdb_changes_since_last_save");
}

/* Runs a command and asserts the changes it added to INFO's
 * rdb_changes_since_last_save (Valkey's server.dirty). */
#define expect_changes(n, ...)                                                                     \
    do {                                                                                           \
        long long before_ = changes(C);                                                            \
        it_free(it_cmd(C, __VA_ARGS__));                                                           \
        ck_assert_msg(changes(C) - before_ == (n), "%s: %lld changes, want %d", #__VA_ARGS__,      \
                      changes(C) - before_, (n));                                                  \
    } while (0)

/* The collection commands count per element as Valkey 8.0.1 does: what
 * they add, remove or update, whether or not they create or empty the key;
 * LMOVE counts one, SMOVE one more when the member is new to the
 * destination. */
START_TEST(test_changes_per_element) {
    expect_changes(3, "RPUSH l a b c");
    expect_changes(2, "LPUSH l x y");
    expect_changes(0, "LPUSHX nolist a");
    expect_changes(1, "LINSERT l BEFORE a z");
    expect_changes(1, "LSET l 0 w");
    expect_changes(1, "LREM l 0 w");
    expect_changes(0, "LTRIM l 0 -1");
    expect_changes(3, "LTRIM l 2 -2");
    expect_changes(1, "LMOVE l l2 LEFT LEFT");  /* creates l2 */
    expect_changes(1, "LMOVE l l2 LEFT RIGHT"); /* empties l */
    expect_changes(1, "LMOVE l2 l2 LEFT RIGHT");
    expect_changes(2, "RPOP l2 5");
    expect_changes(3, "SADD s a b c a");
    expect_changes(0, "SADD s a");
    expect_changes(2, "SREM s a b x");
    expect_changes(2, "SMOVE s s2 c"); /* the source and the member added */
    expect_changes(5, "SADD s 1 2 3 4 5");
    expect_changes(1, "SPOP s");
    expect_changes(2, "SPOP s 2");
    expect_changes(2, "SPOP s 9");
    expect_changes(2, "HSET h a 1 b 2");
    expect_changes(2, "HSET h a 3 c 4"); /* updates count too */
    expect_changes(0, "HSETNX h a 5");
    expect_changes(1, "HINCRBY h n 1");
    expect_changes(4, "HDEL h a b c n x");
    expect_changes(2, "ZADD z 1 a 2 b");
    expect_changes(2, "ZADD z 1 a 3 b 4 c");
    expect_changes(0, "ZADD z NX 9 a");
    expect_changes(1, "ZINCRBY z 1 a");
    expect_changes(1, "ZREM z a x");
    expect_changes(2, "ZPOPMIN z 9");
    expect_changes(3, "RPUSH src 3 1 2");
    expect_changes(3, "SORT src STORE dst");
    expect_changes(1, "SINTERSTORE dst2 s2");
}
END_TEST

/* A blocked pop served by a push: the push and the pop count one each;
 * BLMOVE moving the only element to a new list counts one (Valkey's
 * "BLPOP/BLMOVE should increase dirty"). */
START_TEST(test_blocked_pops_count_changes) {
    it_raw *rd = it_raw_connect(S);
    long long before = changes(C);
    it_raw_cmd(rd, "BLPOP", "l", "0", NULL);
    it_wait_until(it_info_int(C, "clients", "blocked_clients") == 1, 5000);
    expect_int(C, 1, "LPUSH l a");
    expect_raw(rd, "[\"l\",\"a\"]");
    ck_assert_int_eq(changes(C) - before, 2);
    before = changes(C);
    it_raw_cmd(rd, "BLMOVE", "l", "l1", "LEFT", "LEFT", "0", NULL);
    it_wait_until(it_info_int(C, "clients", "blocked_clients") == 1, 5000);
    expect_int(C, 1, "LPUSH l a");
    expect_raw(rd, "\"a\"");
    ck_assert_int_eq(changes(C) - before, 2);
    it_raw_close(rd);
}
END_TEST

/* Collections are evicted like strings: the server stays under maxmemory. */
START_TEST(test_eviction_of_collections) {
    it_server *s = it_start("--maxmemory", "8mb", "--maxmemory-policy", "allkeys-random", NULL);
    redisContext *c = it_connect(s);
    char key[32];
    for (int k = 0; k < 1000; k++) { /* about twice the limit with any allocator */
        snprintf(key, sizeof(key), "big:%d", k);
        fill(c, k % 2 ? "hash" : "zset", key, 300, 8);
    }
    ck_assert_int_gt(it_info_int(c, "stats", "evicted_keys"), 0);
    ck_assert_int_le(it_info_int(c, "memory", "used_memory"), 8 * 1024 * 1024 + 512 * 1024);
    it_disconnect(c);
    it_stop(s);
}
END_TEST

static Suite *types_suite(void) {
    Suite *s = suite_create("types");
    TCase *tc = it_tcase(s, "types");
    tcase_add_test(tc, test_type_and_encoding);
    tcase_add_test(tc, test_thresholds_follow_config);
    tcase_add_test(tc, test_wrongtype_across_families);
    tcase_add_test(tc, test_copy_is_independent);
    tcase_add_test(tc, test_rename_move_swapdb);
    tcase_add_test(tc, test_scan_type_and_del);
    tcase_add_test(tc, test_empty_collections_vanish);
    tcase_add_test(tc, test_expire_collections);
    tcase_add_test(tc, test_memory_usage_grows);
    tcase_add_test(tc, test_memory_usage_samples);
    tcase_add_test(tc, test_watch_sees_collection_changes);
    tcase_add_test(tc, test_changes_per_element);
    tcase_add_test(tc, test_blocked_pops_count_changes);
    tcase_add_test(tc, test_eviction_of_collections);
    return s;
}

int main(void) {
    return it_run(types_suite());
}
