/* check_it_expire.c -- key expiry against a real keel-server, in real time:
 * EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT (NX XX GT LT), TTL/PTTL,
 * EXPIRETIME/PEXPIRETIME, PERSIST, error strings and overflow checks; keys
 * set with PX 100 are gone after 200 ms for GET, EXISTS, KEYS, SCAN,
 * RANDOMKEY and MGET; active expiry removes keys nobody touches (DBSIZE
 * falls, INFO expired_keys grows); lazy expiry with active expiry off. */
#include "harness.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ERR_NOT_INT "ERR value is not an integer or out of range"

START_TEST(test_expire_set_multiple_times) {
    expect_ok(C, "SET x foobar");
    expect_int(C, 1, "EXPIRE x 5");
    expect_int_range(C, 4, 5, "TTL x");
    expect_int(C, 1, "EXPIRE x 10");
    expect_int_range(C, 9, 10, "TTL x");
    expect_int(C, 1, "EXPIRE x 2");
    expect_int_range(C, 1, 2, "TTL x");
    expect_bulk(C, "foobar", "GET x");
}
END_TEST

START_TEST(test_px100_disappears) {
    expect_ok(C, "SET foo bar PX 100");
    expect_ok(C, "PSETEX foo2 100 bar");
    expect_ok(C, "SET foo3 bar");
    expect_int(C, 1, "PEXPIRE foo3 100");
    it_sleep_ms(200);
    expect_nil(C, "GET foo");
    expect_nil(C, "GET foo2");
    expect_nil(C, "GET foo3");
    expect_int(C, 0, "EXISTS foo foo2 foo3");
    expect_int(C, -2, "TTL foo");
    expect_int(C, -2, "PTTL foo2");
}
END_TEST

START_TEST(test_expired_keys_invisible) {
    expect_ok(C, "MSET keep1 a keep2 b keep3 c");
    for (int i = 0; i < 100; i++)
        expect_ok(C, "SET gone:%d x PX 100", i);
    it_sleep_ms(250);
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS *")), "keep1,keep2,keep3");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS gone:*")), "");
    expect_reply(C, "[nil,\"a\",nil]", "MGET gone:1 keep1 gone:99");
    for (int i = 0; i < 50; i++) {
        redisReply *r = it_cmd(C, "RANDOMKEY");
        ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
        ck_assert_msg(strncmp(r->str, "keep", 4) == 0, "RANDOMKEY returned expired key %s", r->str);
        it_free(r);
    }
    expect_int(C, 0, "EXISTS gone:0 gone:50");
}
END_TEST

START_TEST(test_expired_keys_invisible_to_scan) {
    expect_ok(C, "SET keep x");
    for (int i = 0; i < 200; i++)
        expect_ok(C, "SET gone:%d x PX 100", i);
    it_sleep_ms(250);
    char cursor[32] = "0";
    int seen_keep = 0;
    do {
        redisReply *r = it_cmd(C, "SCAN %s COUNT 50", cursor);
        ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++) {
            const char *k = r->element[1]->element[i]->str;
            ck_assert_msg(strcmp(k, "keep") == 0, "SCAN returned expired key %s", k);
            seen_keep++;
        }
        it_free(r);
    } while (strcmp(cursor, "0") != 0);
    ck_assert_int_eq(seen_keep, 1);
}
END_TEST

START_TEST(test_randomkey_all_expired) {
    for (int i = 0; i < 10; i++)
        expect_ok(C, "SET k%d x PX 100", i);
    it_sleep_ms(250);
    expect_nil(C, "RANDOMKEY");
}
END_TEST

START_TEST(test_active_expiry) {
    expect_ok(C, "SET persistent x");
    long long before = it_info_int(C, "stats", "expired_keys");
    for (int i = 0; i < 100; i++)
        expect_ok(C, "SET vol:%d x PX 100", i);
    /* Nobody touches the keys: only the active expiry cycle can remove them. */
    it_wait_until(it_info_int(C, "stats", "expired_keys") >= before + 100, 10000);
    expect_int(C, 1, "DBSIZE");
    char *db0 = it_info_str(C, "keyspace", "db0");
    ck_assert_ptr_nonnull(db0);
    ck_assert_int_eq(it_kv_get(db0, "keys"), 1);
    ck_assert_int_eq(it_kv_get(db0, "expires"), 0);
}
END_TEST

START_TEST(test_lazy_expiry_counts) {
    long long before = it_info_int(C, "stats", "expired_keys");
    expect_ok(C, "SET k v PX 100");
    it_sleep_ms(200);
    expect_nil(C, "GET k");
    ck_assert_int_ge(it_info_int(C, "stats", "expired_keys"), before + 1);
}
END_TEST

START_TEST(test_lazy_expiry_without_active_expiry) {
    it_server *s = it_start("--enable-debug-command", "yes", NULL);
    redisContext *c = it_connect(s);
    expect_ok(c, "DEBUG SET-ACTIVE-EXPIRE 0");
    expect_ok(c, "PSETEX key1 100 a");
    expect_ok(c, "PSETEX key2 100 a");
    expect_ok(c, "PSETEX key3 100 a");
    expect_int(c, 3, "DBSIZE");
    it_sleep_ms(300);
    /* Still stored (nothing removed them), but invisible... */
    expect_int(c, 3, "DBSIZE");
    expect_reply(c, "[nil,nil,nil]", "MGET key1 key2 key3");
    /* ...and the reads removed them. */
    expect_int(c, 0, "DBSIZE");
    expect_ok(c, "DEBUG SET-ACTIVE-EXPIRE 1");
}
END_TEST

START_TEST(test_write_on_expired_key) {
    expect_ok(C, "SET n 10 PX 100");
    expect_ok(C, "SET s abc PX 100");
    it_sleep_ms(200);
    expect_int(C, 1, "INCR n");
    expect_int(C, 3, "APPEND s xyz");
    expect_bulk(C, "xyz", "GET s");
    expect_int(C, -1, "TTL n");
    expect_int(C, 1, "SETNX s2 v");
}
END_TEST

START_TEST(test_write_keeps_expire) {
    expect_ok(C, "SET x foo");
    expect_int(C, 1, "EXPIRE x 1000");
    expect_int(C, 6, "APPEND x bar");
    expect_bulk(C, "foobar", "GET x");
    expect_int_range(C, 990, 1000, "TTL x");
}
END_TEST

START_TEST(test_expireat) {
    long long now = (long long)time(NULL);
    expect_ok(C, "SET x foo");
    expect_int(C, 1, "EXPIREAT x %lld", now + 15);
    expect_int_range(C, 13, 15, "TTL x");
    expect_int(C, now + 15, "EXPIRETIME x");
    expect_int(C, 1, "PEXPIREAT x %lld", now * 1000 + 20123);
    expect_int(C, now * 1000 + 20123, "PEXPIRETIME x");
    expect_int(C, now + 20, "EXPIRETIME x");
    expect_int(C, 1, "EXPIREAT x 1");
    expect_int(C, 0, "EXISTS x");
}
END_TEST

START_TEST(test_ttl_no_expire_and_missing) {
    expect_ok(C, "SET foo bar");
    expect_int(C, -1, "TTL foo");
    expect_int(C, -1, "PTTL foo");
    expect_int(C, -1, "EXPIRETIME foo");
    expect_int(C, -1, "PEXPIRETIME foo");
    expect_int(C, -2, "TTL nokey");
    expect_int(C, -2, "PTTL nokey");
    expect_int(C, -2, "EXPIRETIME nokey");
    expect_int(C, -2, "PEXPIRETIME nokey");
}
END_TEST

START_TEST(test_pttl_precision) {
    expect_ok(C, "SET x y");
    expect_int(C, 1, "PEXPIRE x 100000");
    expect_int_range(C, 90000, 100000, "PTTL x");
    expect_int_range(C, 90, 100, "TTL x");
}
END_TEST

START_TEST(test_persist) {
    expect_ok(C, "SET x foo");
    expect_int(C, 1, "EXPIRE x 50");
    expect_int_range(C, 40, 50, "TTL x");
    expect_int(C, 1, "PERSIST x");
    expect_int(C, -1, "TTL x");
    expect_bulk(C, "foo", "GET x");
    expect_int(C, 0, "PERSIST x");
    expect_int(C, 0, "PERSIST nokey");
}
END_TEST

START_TEST(test_expire_nx_xx) {
    expect_ok(C, "SET foo bar EX 100");
    expect_int(C, 0, "EXPIRE foo 200 NX");
    expect_int_range(C, 50, 100, "TTL foo");
    expect_ok(C, "SET foo bar");
    expect_int(C, 1, "EXPIRE foo 200 NX");
    expect_int_range(C, 100, 200, "TTL foo");
    expect_ok(C, "SET foo bar EX 100");
    expect_int(C, 1, "EXPIRE foo 200 XX");
    expect_int_range(C, 100, 200, "TTL foo");
    expect_ok(C, "SET foo bar");
    expect_int(C, 0, "EXPIRE foo 200 XX");
    expect_int(C, -1, "TTL foo");
}
END_TEST

START_TEST(test_expire_gt_lt) {
    expect_ok(C, "SET foo bar EX 100");
    expect_int(C, 1, "EXPIRE foo 200 GT");
    expect_int_range(C, 100, 200, "TTL foo");
    expect_ok(C, "SET foo bar EX 200");
    expect_int(C, 0, "EXPIRE foo 100 GT");
    expect_int_range(C, 100, 200, "TTL foo");
    expect_ok(C, "SET foo bar");
    expect_int(C, 0, "EXPIRE foo 200 GT");
    expect_int(C, -1, "TTL foo");
    expect_ok(C, "SET foo bar EX 100");
    expect_int(C, 0, "EXPIRE foo 200 LT");
    expect_int_range(C, 50, 100, "TTL foo");
    expect_ok(C, "SET foo bar EX 200");
    expect_int(C, 1, "EXPIRE foo 100 LT");
    expect_int_range(C, 50, 100, "TTL foo");
    expect_ok(C, "SET foo bar");
    expect_int(C, 1, "EXPIRE foo 100 LT");
    expect_int_range(C, 50, 100, "TTL foo");
    expect_ok(C, "SET foo bar EX 200");
    expect_int(C, 1, "EXPIRE foo 100 LT XX");
    expect_int_range(C, 50, 100, "TTL foo");
    expect_ok(C, "SET foo bar");
    expect_int(C, 0, "EXPIRE foo 200 LT XX");
    expect_int(C, -1, "TTL foo");
}
END_TEST

START_TEST(test_expire_option_errors) {
    expect_ok(C, "SET foo bar");
    expect_error(C, "ERR GT and LT options at the same time are not compatible",
                 "EXPIRE foo 200 LT GT");
    expect_error(C, "ERR NX and XX, GT or LT options at the same time are not compatible",
                 "EXPIRE foo 200 NX GT");
    expect_error(C, "ERR NX and XX, GT or LT options at the same time are not compatible",
                 "EXPIRE foo 200 NX LT");
    expect_error(C, "ERR NX and XX, GT or LT options at the same time are not compatible",
                 "EXPIRE foo 200 NX XX");
    expect_error(C, "ERR Unsupported option AB", "EXPIRE foo 200 AB");
    expect_error(C, "ERR Unsupported option AB", "EXPIRE foo 200 XX AB");
    expect_int(C, -1, "TTL foo");
}
END_TEST

START_TEST(test_expire_negative_and_missing) {
    expect_ok(C, "SET foo bar EX 100");
    expect_int(C, 1, "EXPIRE foo -10 LT");
    expect_int(C, -2, "TTL foo");
    expect_ok(C, "SET foo bar");
    expect_int(C, 1, "EXPIRE foo -10 LT");
    expect_int(C, -2, "TTL foo");
    expect_ok(C, "SET foo bar");
    expect_int(C, 1, "EXPIRE foo 0");
    expect_int(C, 0, "EXISTS foo");
    expect_int(C, 0, "EXPIRE none 100");
    expect_int(C, 0, "EXPIRE none 100 NX");
    expect_int(C, 0, "EXPIRE none 100 XX");
    expect_int(C, 0, "EXPIRE none 100 GT");
    expect_int(C, 0, "EXPIRE none 100 LT");
    expect_int(C, 0, "PEXPIRE none 100");
}
END_TEST

START_TEST(test_expire_integer_errors) {
    expect_ok(C, "SET foo bar");
    expect_error(C, ERR_NOT_INT, "EXPIRE foo %s", "");
    expect_error(C, ERR_NOT_INT, "EXPIRE foo abc");
    expect_error(C, "ERR invalid expire time in 'expire' command", "EXPIRE foo 9223370399119966");
    expect_error(C, "ERR invalid expire time in 'expire' command", "EXPIRE foo 9223372036854776");
    expect_error(C, "ERR invalid expire time in 'expire' command", "EXPIRE foo 10000000000000000");
    expect_error(C, "ERR invalid expire time in 'expire' command", "EXPIRE foo 18446744073709561");
    expect_error(C, "ERR invalid expire time in 'expire' command", "EXPIRE foo -9223372036854776");
    expect_error(C, "ERR invalid expire time in 'expire' command", "EXPIRE foo -9999999999999999");
    expect_error(C, "ERR invalid expire time in 'pexpire' command",
                 "PEXPIRE foo 9223372036854770000");
    expect_int(C, -1, "TTL foo");
    expect_error(C, "ERR wrong number of arguments for 'expire' command", "EXPIRE foo");
}
END_TEST

START_TEST(test_pexpireat_extremes) {
    expect_ok(C, "SET foo bar");
    expect_int(C, 1, "PEXPIREAT foo 9223372036854770000");
    expect_bulk(C, "bar", "GET foo");
    expect_ok(C, "SET foo bar");
    expect_int(C, 1, "PEXPIREAT foo -9223372036854770000");
    expect_int(C, -2, "TTL foo");
}
END_TEST

#define LL_MAX_S "9223372036854775807"
#define LL_MIN_S "-9223372036854775808"
#define ERR_EXPIRE(cmd) "ERR invalid expire time in '" cmd "' command"

/* The ends of the time range (issue 9): absolute times up to LLONG_MAX ms
 * are stored as given and read back in seconds rounded half up, as Valkey
 * 8.0.1 answers, with no intermediate overflow (the sanitizer build aborted
 * on EXPIRETIME). Only a conversion that overflows is an error. */
START_TEST(test_expire_range_ends) {
    expect_ok(C, "SET k v");
    expect_int(C, 1, "PEXPIREAT k " LL_MAX_S);
    expect_int(C, LLONG_MAX, "PEXPIRETIME k");
    expect_int(C, 9223372036854776LL, "EXPIRETIME k");
    long long left = LLONG_MAX - (long long)time(NULL) * 1000;
    expect_int_range(C, left - 5000, left + 5000, "PTTL k");
    expect_int_range(C, left / 1000 - 5, left / 1000 + 5, "TTL k");
    expect_int(C, 1, "PEXPIREAT k 9223372036854775308");
    expect_int(C, 9223372036854775LL, "EXPIRETIME k");
    expect_int(C, 1, "PEXPIREAT k 9223372036854775500");
    expect_int(C, 9223372036854776LL, "EXPIRETIME k");
    expect_int(C, 1, "EXPIREAT k 9223372036854775");
    expect_int(C, 9223372036854775000LL, "PEXPIRETIME k");
    expect_int(C, 9223372036854775LL, "EXPIRETIME k");
    /* LLONG_MAX / 1000 + 1 seconds, and relative times that overflow once
     * the current time is added. */
    expect_error(C, ERR_EXPIRE("expireat"), "EXPIREAT k 9223372036854776");
    expect_error(C, ERR_EXPIRE("expire"), "EXPIRE k 9223372036854775");
    expect_error(C, ERR_EXPIRE("expire"), "EXPIRE k " LL_MAX_S);
    expect_error(C, ERR_EXPIRE("pexpire"), "PEXPIRE k " LL_MAX_S);
    expect_error(C, ERR_EXPIRE("expire"), "EXPIRE k " LL_MIN_S);
    expect_error(C, ERR_EXPIRE("expireat"), "EXPIREAT k -9223372036854776");
    expect_error(C, ERR_EXPIRE("expireat"), "EXPIREAT k " LL_MIN_S);
    expect_int(C, 9223372036854775000LL, "PEXPIRETIME k");
    /* The most negative times that convert are in the past: the key goes. */
    expect_int(C, 1, "PEXPIRE k " LL_MIN_S);
    expect_int(C, 0, "EXISTS k");
    expect_ok(C, "SET k v");
    expect_int(C, 1, "EXPIRE k -9223372036854775");
    expect_int(C, 0, "EXISTS k");
    expect_ok(C, "SET k v");
    expect_int(C, 1, "PEXPIREAT k " LL_MIN_S);
    expect_int(C, 0, "EXISTS k");
    expect_ok(C, "SET k v");
    expect_int(C, 1, "EXPIREAT k -9223372036854775");
    expect_int(C, 0, "EXISTS k");
    /* GT/LT compare against the largest stored time without overflow. */
    expect_ok(C, "SET k v");
    expect_int(C, 1, "PEXPIREAT k " LL_MAX_S " NX");
    expect_int(C, 0, "PEXPIREAT k " LL_MAX_S " GT");
    expect_int(C, 1, "PEXPIREAT k 9223372036854775806 LT");
    expect_int(C, 9223372036854775806LL, "PEXPIRETIME k");
    expect_bulk(C, "v", "GET k");
}
END_TEST

/* The active expire cycle averages the TTLs it samples (INFO keyspace
 * avg_ttl): keys that expire at the end of time must not overflow the sum. */
START_TEST(test_active_expire_far_ttls) {
    for (int i = 0; i < 5; i++) {
        expect_ok(C, "SET far:%d v", i);
        expect_int(C, 1, "PEXPIREAT far:%d " LL_MAX_S, i);
    }
    expect_ok(C, "SET near v EX 1000");
    /* The cycle runs from the cron (hz 10): wait for an estimate. */
    it_wait_until(it_kv_get(it_info_str(C, "keyspace", "db0"), "avg_ttl") != 0, 3000);
    long long avg = it_kv_get(it_info_str(C, "keyspace", "db0"), "avg_ttl");
    ck_assert_msg(avg > 1000000, "avg_ttl %lld: the TTL sum overflowed", avg);
    expect_status(C, "PONG", "PING");
    expect_int(C, 6, "DBSIZE");
}
END_TEST

START_TEST(test_set_clears_expire) {
    expect_ok(C, "SET foo bar EX 100");
    expect_ok(C, "SET foo bar");
    expect_int(C, -1, "TTL foo");
    expect_ok(C, "SET foo bar EX 100");
    expect_ok(C, "SET foo bar2 KEEPTTL");
    expect_int_range(C, 90, 100, "TTL foo");
    expect_bulk(C, "bar2", "GETEX foo PERSIST");
    expect_int(C, -1, "TTL foo");
}
END_TEST

START_TEST(test_five_keys_in_five_out) {
    expect_ok(C, "SET a c");
    expect_int(C, 1, "EXPIRE a 5");
    expect_ok(C, "SET t c");
    expect_ok(C, "SET e c");
    expect_ok(C, "SET s c");
    expect_ok(C, "SET foo b");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS *")), "a,e,foo,s,t");
    expect_int(C, 5, "DBSIZE");
}
END_TEST

START_TEST(test_rename_copy_move_expired) {
    expect_ok(C, "SET src v PX 100");
    it_sleep_ms(200);
    expect_error(C, "ERR no such key", "RENAME src dst");
    expect_int(C, 0, "COPY src dst");
    expect_int(C, 0, "MOVE src 1");
    expect_int(C, 0, "EXISTS dst");
}
END_TEST

START_TEST(test_keyspace_info_expires) {
    expect_ok(C, "SET a 1 EX 1000");
    expect_ok(C, "SET b 2");
    expect_ok(C, "SET c 3 PX 1000000");
    char *db0 = it_info_str(C, "keyspace", "db0");
    ck_assert_ptr_nonnull(db0);
    ck_assert_int_eq(it_kv_get(db0, "keys"), 3);
    ck_assert_int_eq(it_kv_get(db0, "expires"), 2);
    ck_assert_int_ge(it_kv_get(db0, "avg_ttl"), 0);
    expect_int(C, 1, "PERSIST a");
    ck_assert_int_eq(it_kv_get(it_info_str(C, "keyspace", "db0"), "expires"), 1);
}
END_TEST

static Suite *expire_suite(void) {
    Suite *s = suite_create("expire");
    TCase *tc = it_tcase(s, "expire");
    tcase_add_test(tc, test_expire_set_multiple_times);
    tcase_add_test(tc, test_px100_disappears);
    tcase_add_test(tc, test_expired_keys_invisible);
    tcase_add_test(tc, test_expired_keys_invisible_to_scan);
    tcase_add_test(tc, test_randomkey_all_expired);
    tcase_add_test(tc, test_active_expiry);
    tcase_add_test(tc, test_lazy_expiry_counts);
    tcase_add_test(tc, test_lazy_expiry_without_active_expiry);
    tcase_add_test(tc, test_write_on_expired_key);
    tcase_add_test(tc, test_write_keeps_expire);
    tcase_add_test(tc, test_expireat);
    tcase_add_test(tc, test_ttl_no_expire_and_missing);
    tcase_add_test(tc, test_pttl_precision);
    tcase_add_test(tc, test_persist);
    tcase_add_test(tc, test_expire_nx_xx);
    tcase_add_test(tc, test_expire_gt_lt);
    tcase_add_test(tc, test_expire_option_errors);
    tcase_add_test(tc, test_expire_negative_and_missing);
    tcase_add_test(tc, test_expire_integer_errors);
    tcase_add_test(tc, test_pexpireat_extremes);
    tcase_add_test(tc, test_expire_range_ends);
    tcase_add_test(tc, test_active_expire_far_ttls);
    tcase_add_test(tc, test_set_clears_expire);
    tcase_add_test(tc, test_five_keys_in_five_out);
    tcase_add_test(tc, test_rename_copy_move_expired);
    tcase_add_test(tc, test_keyspace_info_expires);
    return s;
}

int main(void) {
    return it_run(expire_suite());
}
