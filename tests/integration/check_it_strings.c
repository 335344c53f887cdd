/* check_it_strings.c -- the string commands against a real keel-server:
 * SET (NX XX GET EX PX EXAT PXAT KEEPTTL), GET, SETNX, SETEX, PSETEX, GETEX,
 * GETDEL, GETSET, MGET, MSET, MSETNX, APPEND, STRLEN, SETRANGE, GETRANGE,
 * SUBSTR, INCR/DECR/INCRBY/DECRBY/INCRBYFLOAT, with Valkey's exact replies
 * and error strings, binary-safe keys and values, and a 10,000-key
 * pipelined round trip. */
#include "harness.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ERR_NOT_INT "ERR value is not an integer or out of range"
#define ERR_SYNTAX "ERR syntax error"

START_TEST(test_set_get) {
    expect_ok(C, "SET foo bar");
    expect_bulk(C, "bar", "GET foo");
    expect_nil(C, "GET nosuchkey");
    expect_ok(C, "SET foo baz");
    expect_bulk(C, "baz", "GET foo");
}
END_TEST

START_TEST(test_set_get_empty) {
    expect_ok(C, "SET foo %s", "");
    expect_bulk(C, "", "GET foo");
    expect_int(C, 0, "STRLEN foo");
    expect_int(C, 1, "EXISTS foo");
}
END_TEST

START_TEST(test_binary_safe) {
    const char key[] = "k\0e\r\ny";
    const char val[] = "\0\x01\xff\r\n$3\r\n*1\r\nend";
    expect_ok(C, "SET %b %b", key, sizeof(key) - 1, val, sizeof(val) - 1);
    expect_bulk_len(C, val, sizeof(val) - 1, "GET %b", key, sizeof(key) - 1);
    expect_int(C, (long long)sizeof(val) - 1, "STRLEN %b", key, sizeof(key) - 1);
    expect_nil(C, "GET %b", "k", (size_t)1);
}
END_TEST

START_TEST(test_set_nx_xx) {
    expect_ok(C, "SET foo bar NX");
    expect_nil(C, "SET foo bar2 NX");
    expect_bulk(C, "bar", "GET foo");
    expect_ok(C, "SET foo baz XX");
    expect_bulk(C, "baz", "GET foo");
    expect_nil(C, "SET nokey v XX");
    expect_int(C, 0, "EXISTS nokey");
}
END_TEST

START_TEST(test_set_get_option) {
    expect_ok(C, "SET foo bar");
    expect_bulk(C, "bar", "SET foo bar2 GET");
    expect_bulk(C, "bar2", "GET foo");
    expect_nil(C, "SET new v GET");
    expect_bulk(C, "v", "GET new");
    /* GET with XX and NX (allowed since 7.0). */
    expect_bulk(C, "bar2", "SET foo baz XX GET");
    expect_bulk(C, "baz", "GET foo");
    expect_nil(C, "SET nokey x XX GET");
    expect_int(C, 0, "EXISTS nokey");
    expect_bulk(C, "baz", "SET foo qux NX GET");
    expect_bulk(C, "baz", "GET foo");
    expect_nil(C, "SET other y NX GET");
    expect_bulk(C, "y", "GET other");
}
END_TEST

START_TEST(test_set_syntax_errors) {
    expect_error(C, ERR_SYNTAX, "SET foo bar NX XX");
    expect_error(C, ERR_SYNTAX, "SET foo bar EX");
    expect_error(C, ERR_SYNTAX, "SET foo bar EX 10 PX 100");
    expect_error(C, ERR_SYNTAX, "SET foo bar KEEPTTL EX 10");
    expect_error(C, ERR_SYNTAX, "SET foo bar BADOPTION");
    expect_error(C, ERR_NOT_INT, "SET foo bar EX abc");
    expect_error(C, "ERR invalid expire time in 'set' command", "SET foo bar EX 0");
    expect_error(C, "ERR invalid expire time in 'set' command", "SET foo bar PX -1");
    expect_error(C, "ERR invalid expire time in 'set' command", "SET foo bar EX 10000000000000000");
    expect_error(C, "ERR invalid expire time in 'set' command", "SET foo bar EX -9999999999999999");
    expect_error(C, "ERR wrong number of arguments for 'set' command", "SET foo");
    expect_int(C, 0, "EXISTS foo");
}
END_TEST

START_TEST(test_set_expire_options) {
    expect_ok(C, "SET foo bar EX 100");
    expect_int_range(C, 90, 100, "TTL foo");
    expect_ok(C, "SET foo bar PX 100000");
    expect_int_range(C, 90000, 100000, "PTTL foo");
    long long now = (long long)time(NULL);
    expect_ok(C, "SET foo bar EXAT %lld", now + 200);
    expect_int_range(C, 190, 200, "TTL foo");
    expect_ok(C, "SET foo bar PXAT %lld", (now + 300) * 1000);
    expect_int_range(C, 290, 300, "TTL foo");
    expect_ok(C, "SET foo baz KEEPTTL");
    expect_int_range(C, 290, 300, "TTL foo");
    expect_bulk(C, "baz", "GET foo");
    expect_ok(C, "SET foo qux");
    expect_int(C, -1, "TTL foo");
}
END_TEST

START_TEST(test_set_exat_in_the_past) {
    expect_ok(C, "SET foo bar EXAT %lld", (long long)time(NULL) - 100);
    expect_nil(C, "GET foo");
    expect_int(C, 0, "EXISTS foo");
    expect_ok(C, "SET foo bar PXAT 1");
    expect_int(C, -2, "TTL foo");
    /* As in Valkey 8.0.1, a time already past deletes an existing key at
     * once: it is overwritten, not expired (expired_keys stays), and GET
     * still answers the old value. */
    long long expired = it_info_int(C, "stats", "expired_keys");
    expect_ok(C, "SET foo bar");
    expect_ok(C, "SET foo baz PXAT 1");
    expect_int(C, 0, "EXISTS foo");
    expect_ok(C, "SET foo bar");
    expect_bulk(C, "bar", "SET foo baz GET EXAT 1");
    expect_int(C, 0, "EXISTS foo");
    expect_nil(C, "SET foo baz NX GET PXAT 1");
    expect_int(C, 0, "EXISTS foo");
    ck_assert_int_eq(it_info_int(C, "stats", "expired_keys"), expired);
}
END_TEST

#define LL_MAX_S "9223372036854775807"
#define LL_MIN_S "-9223372036854775808"
#define ERR_EXPIRE(cmd) "ERR invalid expire time in '" cmd "' command"

/* The ends of the time range for SET, GETEX, SETEX and PSETEX (issue 9):
 * each conversion that would overflow is an error (Valkey 8.0.1's), the
 * largest absolute times are stored as given. */
START_TEST(test_set_expire_range_ends) {
    expect_error(C, ERR_EXPIRE("set"), "SET k v PX " LL_MAX_S);
    expect_error(C, ERR_EXPIRE("set"), "SET k v EX 9223372036854775");
    expect_error(C, ERR_EXPIRE("set"), "SET k v EX 9223372036854776");
    expect_error(C, ERR_EXPIRE("set"), "SET k v EX " LL_MAX_S);
    expect_error(C, ERR_EXPIRE("set"), "SET k v EXAT 9223372036854776");
    expect_error(C, ERR_EXPIRE("set"), "SET k v PX " LL_MIN_S);
    expect_error(C, ERR_EXPIRE("set"), "SET k v EXAT " LL_MIN_S);
    expect_error(C, ERR_EXPIRE("set"), "SET k v PXAT 0");
    expect_int(C, 0, "EXISTS k");
    expect_ok(C, "SET k v PXAT " LL_MAX_S);
    expect_int(C, LLONG_MAX, "PEXPIRETIME k");
    expect_int(C, 9223372036854776LL, "EXPIRETIME k");
    expect_ok(C, "SET k v EXAT 9223372036854775");
    expect_int(C, 9223372036854775000LL, "PEXPIRETIME k");
    expect_error(C, ERR_EXPIRE("getex"), "GETEX k PX " LL_MAX_S);
    expect_error(C, ERR_EXPIRE("getex"), "GETEX k EX 9223372036854775");
    expect_error(C, ERR_EXPIRE("getex"), "GETEX k EXAT 9223372036854776");
    expect_error(C, ERR_EXPIRE("getex"), "GETEX k PXAT " LL_MIN_S);
    expect_int(C, 9223372036854775000LL, "PEXPIRETIME k");
    expect_bulk(C, "v", "GETEX k PXAT " LL_MAX_S);
    expect_int(C, LLONG_MAX, "PEXPIRETIME k");
    expect_error(C, ERR_EXPIRE("setex"), "SETEX k 9223372036854775 v");
    expect_error(C, ERR_EXPIRE("setex"), "SETEX k 9223372036854776 v");
    expect_error(C, ERR_EXPIRE("setex"), "SETEX k " LL_MIN_S " v");
    expect_error(C, ERR_EXPIRE("psetex"), "PSETEX k " LL_MAX_S " v");
    expect_error(C, ERR_EXPIRE("psetex"), "PSETEX k " LL_MIN_S " v");
    expect_int(C, LLONG_MAX, "PEXPIRETIME k");
    expect_bulk(C, "v", "GET k");
}
END_TEST

START_TEST(test_setnx) {
    expect_int(C, 1, "SETNX foo bar");
    expect_int(C, 0, "SETNX foo baz");
    expect_bulk(C, "bar", "GET foo");
    expect_error(C, "ERR wrong number of arguments for 'setnx' command", "SETNX foo");
}
END_TEST

START_TEST(test_setex_psetex) {
    expect_ok(C, "SETEX foo 100 bar");
    expect_int_range(C, 90, 100, "TTL foo");
    expect_bulk(C, "bar", "GET foo");
    expect_ok(C, "PSETEX foo 100000 baz");
    expect_int_range(C, 90000, 100000, "PTTL foo");
    expect_bulk(C, "baz", "GET foo");
    expect_error(C, "ERR invalid expire time in 'setex' command", "SETEX foo 0 bar");
    expect_error(C, "ERR invalid expire time in 'setex' command", "SETEX foo -10 bar");
    expect_error(C, "ERR invalid expire time in 'psetex' command", "PSETEX foo 0 bar");
    expect_error(C, ERR_NOT_INT, "SETEX foo abc bar");
    expect_bulk(C, "baz", "GET foo");
}
END_TEST

START_TEST(test_getex) {
    expect_ok(C, "SET foo bar");
    expect_bulk(C, "bar", "GETEX foo");
    expect_int(C, -1, "TTL foo");
    expect_bulk(C, "bar", "GETEX foo EX 100");
    expect_int_range(C, 90, 100, "TTL foo");
    expect_bulk(C, "bar", "GETEX foo PERSIST");
    expect_int(C, -1, "TTL foo");
    expect_bulk(C, "bar", "GETEX foo PX 100000");
    expect_int_range(C, 90000, 100000, "PTTL foo");
    expect_bulk(C, "bar", "GETEX foo EXAT %lld", (long long)time(NULL) + 200);
    expect_int_range(C, 190, 200, "TTL foo");
    expect_bulk(C, "bar", "GETEX foo PXAT %lld", ((long long)time(NULL) + 300) * 1000);
    expect_int_range(C, 290, 300, "TTL foo");
    expect_nil(C, "GETEX nokey");
    expect_nil(C, "GETEX nokey EX 100");
    expect_int(C, 0, "EXISTS nokey");
}
END_TEST

START_TEST(test_getex_errors) {
    expect_ok(C, "SET foo bar");
    expect_error(C, ERR_SYNTAX, "GETEX foo EX 10 PX 100");
    expect_error(C, ERR_SYNTAX, "GETEX foo NON-EXISTENT-OPTION");
    expect_error(C, ERR_SYNTAX, "GETEX foo EX");
    expect_error(C, "ERR invalid expire time in 'getex' command", "GETEX foo EX 10000000000000000");
    expect_error(C, "ERR invalid expire time in 'getex' command", "GETEX foo EX -9999999999999999");
    expect_error(C, "ERR invalid expire time in 'getex' command", "GETEX foo EX 0");
    expect_error(C, "ERR wrong number of arguments for 'getex' command", "GETEX");
    expect_int(C, -1, "TTL foo");
}
END_TEST

START_TEST(test_getex_past_deletes) {
    expect_ok(C, "SET foo bar");
    expect_bulk(C, "bar", "GETEX foo PXAT 1");
    expect_int(C, 0, "EXISTS foo");
}
END_TEST

START_TEST(test_getdel) {
    expect_ok(C, "SET foo bar");
    expect_bulk(C, "bar", "GETDEL foo");
    expect_int(C, 0, "EXISTS foo");
    expect_nil(C, "GETDEL foo");
}
END_TEST

START_TEST(test_getset) {
    expect_nil(C, "GETSET foo xyz");
    expect_bulk(C, "xyz", "GET foo");
    expect_ok(C, "SET foo bar EX 100");
    expect_bulk(C, "bar", "GETSET foo baz");
    expect_bulk(C, "baz", "GET foo");
    expect_int(C, -1, "TTL foo");
}
END_TEST

START_TEST(test_mget) {
    expect_ok(C, "SET foo BAR");
    expect_ok(C, "SET bar FOO");
    expect_reply(C, "[\"BAR\",\"FOO\"]", "MGET foo bar");
    expect_reply(C, "[\"BAR\",nil,\"FOO\"]", "MGET foo baz bar");
    expect_reply(C, "[nil]", "MGET nokey");
    expect_error(C, "ERR wrong number of arguments for 'mget' command", "MGET");
}
END_TEST

START_TEST(test_mset) {
    expect_ok(C, "MSET x 10 y %s z %s", "foo bar", "x x x x x x x\n\n\r\n");
    expect_reply(C, "[\"10\",\"foo bar\",\"x x x x x x x\\n\\n\\r\\n\"]", "MGET x y z");
    expect_ok(C, "MSET x xxx x yyy");
    expect_bulk(C, "yyy", "GET x");
    expect_error(C, "ERR wrong number of arguments for 'mset' command", "MSET x 10 y");
    expect_error(C, "ERR wrong number of arguments for 'mset' command", "MSET x");
}
END_TEST

START_TEST(test_mset_clears_ttl) {
    expect_ok(C, "SET x 1 EX 100");
    expect_ok(C, "MSET x 2");
    expect_int(C, -1, "TTL x");
}
END_TEST

START_TEST(test_msetnx) {
    expect_int(C, 1, "MSETNX x1 xxx y1 yyy");
    expect_reply(C, "[\"xxx\",\"yyy\"]", "MGET x1 y1");
    expect_int(C, 0, "MSETNX x1 aaa z1 zzz");
    expect_reply(C, "[\"xxx\",nil]", "MGET x1 z1");
    expect_int(C, 1, "MSETNX a1 xxx a1 yyy");
    expect_bulk(C, "yyy", "GET a1");
    expect_error(C, "ERR wrong number of arguments for 'msetnx' command", "MSETNX x 20 y");
}
END_TEST

START_TEST(test_append) {
    expect_int(C, 3, "APPEND foo bar");
    expect_bulk(C, "bar", "GET foo");
    expect_int(C, 6, "APPEND foo 100");
    expect_bulk(C, "bar100", "GET foo");
    expect_ok(C, "SET n 1");
    expect_int(C, 2, "APPEND n 2");
    expect_bulk(C, "12", "GET n");
    expect_int(C, 2, "APPEND n %s", "");
}
END_TEST

START_TEST(test_append_keeps_ttl) {
    expect_ok(C, "SET foo bar EX 100");
    expect_int(C, 6, "APPEND foo baz");
    expect_int_range(C, 90, 100, "TTL foo");
}
END_TEST

START_TEST(test_strlen) {
    expect_int(C, 0, "STRLEN notakey");
    expect_ok(C, "SET myinteger -555");
    expect_int(C, 4, "STRLEN myinteger");
    expect_ok(C, "SET mystring foozzz0123456789");
    expect_int(C, 16, "STRLEN mystring");
}
END_TEST

START_TEST(test_setrange_new_key) {
    expect_int(C, 3, "SETRANGE mykey 0 foo");
    expect_bulk(C, "foo", "GET mykey");
    expect_int(C, 0, "SETRANGE empty 0 %s", "");
    expect_int(C, 0, "EXISTS empty");
    expect_int(C, 4, "SETRANGE pad 1 foo");
    expect_bulk_len(C, "\0foo", 4, "GET pad");
}
END_TEST

START_TEST(test_setrange_existing) {
    expect_ok(C, "SET mykey foo");
    expect_int(C, 3, "SETRANGE mykey 0 b");
    expect_bulk(C, "boo", "GET mykey");
    expect_int(C, 3, "SETRANGE mykey 0 %s", "");
    expect_bulk(C, "boo", "GET mykey");
    expect_int(C, 3, "SETRANGE mykey 1 b");
    expect_bulk(C, "bbo", "GET mykey");
    expect_int(C, 7, "SETRANGE mykey 4 bar");
    expect_bulk_len(C, "bbo\0bar", 7, "GET mykey");
    expect_ok(C, "SET num 1234");
    expect_int(C, 4, "SETRANGE num 1 x");
    expect_bulk(C, "1x34", "GET num");
}
END_TEST

START_TEST(test_setrange_errors) {
    expect_ok(C, "SET mykey hello");
    expect_error(C, "ERR offset is out of range", "SETRANGE mykey -1 world");
    expect_error(C, "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
                 "SETRANGE mykey %lld world", 512LL * 1024 * 1024 - 4);
    expect_error(C, "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
                 "SETRANGE nokey %lld world", 512LL * 1024 * 1024 - 4);
    expect_error(C, ERR_NOT_INT, "SETRANGE mykey abc world");
    expect_bulk(C, "hello", "GET mykey");
    expect_int(C, 0, "EXISTS nokey");
}
END_TEST

START_TEST(test_getrange) {
    expect_bulk(C, "", "GETRANGE nokey 0 -1");
    expect_ok(C, "SET mykey %s", "Hello World");
    expect_bulk(C, "Hell", "GETRANGE mykey 0 3");
    expect_bulk(C, "Hello World", "GETRANGE mykey 0 -1");
    expect_bulk(C, "orld", "GETRANGE mykey -4 -1");
    expect_bulk(C, "", "GETRANGE mykey 5 3");
    expect_bulk(C, " World", "GETRANGE mykey 5 5000");
    expect_bulk(C, "Hello World", "GETRANGE mykey -5000 10000");
    expect_bulk(C, "", "GETRANGE mykey -1 -5");
    expect_bulk(C, "H", "GETRANGE mykey 0 -100");
    expect_bulk(C, "Hello World", "GETRANGE mykey 0 4294967297");
    expect_error(C, ERR_NOT_INT, "GETRANGE mykey a 1");
}
END_TEST

START_TEST(test_getrange_integer_and_substr) {
    expect_ok(C, "SET mykey 1234");
    expect_bulk(C, "123", "GETRANGE mykey 0 2");
    expect_bulk(C, "1234", "GETRANGE mykey 0 -1");
    expect_bulk(C, "234", "GETRANGE mykey -3 -1");
    expect_bulk(C, "", "GETRANGE mykey 5 3");
    expect_bulk(C, "4", "GETRANGE mykey 3 5000");
    expect_ok(C, "SET key abcde");
    expect_bulk(C, "a", "SUBSTR key 0 0");
    expect_bulk(C, "abc", "SUBSTR key 0 2");
    expect_bulk(C, "bcde", "SUBSTR key -4 -1");
    expect_bulk(C, "", "SUBSTR key -1 -3");
    expect_bulk(C, "", "SUBSTR key 7 8");
    expect_bulk(C, "", "SUBSTR nokey 0 1");
}
END_TEST

START_TEST(test_incr_decr) {
    expect_int(C, 1, "INCR novar");
    expect_int(C, 2, "INCR novar");
    expect_int(C, 4, "INCRBY novar 2");
    expect_int(C, 3, "DECR novar");
    expect_int(C, -7, "DECRBY novar 10");
    expect_bulk(C, "-7", "GET novar");
    expect_ok(C, "SET novar 17179869184");
    expect_int(C, 17179869185, "INCR novar");
    expect_int(C, 34359738369, "INCRBY novar 17179869184");
    expect_int(C, -1, "DECRBY novar 34359738370");
    expect_ok(C, "SET novar %s", "    11    ");
    expect_error(C, ERR_NOT_INT, "INCR novar");
    expect_ok(C, "SET novar %s", "11 ");
    expect_error(C, ERR_NOT_INT, "INCR novar");
    expect_ok(C, "SET novar foo");
    expect_error(C, ERR_NOT_INT, "INCR novar");
    expect_error(C, ERR_NOT_INT, "INCRBY x abc");
    expect_error(C, ERR_NOT_INT, "INCRBY x 1.5");
}
END_TEST

START_TEST(test_incr_overflow) {
    expect_ok(C, "SET x 9223372036854775807");
    expect_error(C, "ERR increment or decrement would overflow", "INCR x");
    expect_ok(C, "SET x -9223372036854775808");
    expect_error(C, "ERR increment or decrement would overflow", "DECR x");
    expect_ok(C, "SET x 0");
    expect_error(C, "ERR decrement would overflow", "DECRBY x -9223372036854775808");
    expect_error(C, ERR_NOT_INT, "INCRBY x 9223372036854775808");
    expect_bulk(C, "0", "GET x");
}
END_TEST

START_TEST(test_incr_keeps_ttl) {
    expect_ok(C, "SET foo 1 EX 100");
    expect_int(C, 2, "INCR foo");
    expect_int_range(C, 90, 100, "TTL foo");
    expect_bulk(C, "2.5", "INCRBYFLOAT foo 0.5");
    expect_int_range(C, 90, 100, "TTL foo");
}
END_TEST

START_TEST(test_incrbyfloat) {
    expect_bulk(C, "1", "INCRBYFLOAT novar 1");
    expect_bulk(C, "1.25", "INCRBYFLOAT novar 0.25");
    expect_ok(C, "SET novar 1.5");
    expect_bulk(C, "3", "INCRBYFLOAT novar 1.5");
    expect_ok(C, "SET novar 17179869184");
    expect_bulk(C, "17179869185.5", "INCRBYFLOAT novar 1.5");
    expect_bulk(C, "17179869185", "INCRBYFLOAT novar -0.5");
    expect_bulk(C, "5000", "INCRBYFLOAT e 5.0e3");
    expect_ok(C, "SET novar foo");
    expect_error(C, "ERR value is not a valid float", "INCRBYFLOAT novar 1");
    expect_error(C, "ERR value is not a valid float", "INCRBYFLOAT other abc");
    expect_ok(C, "SET z 0");
    expect_error(C, "ERR increment would produce NaN or Infinity", "INCRBYFLOAT z +inf");
    expect_bulk(C, "0", "GET z");
}
END_TEST

START_TEST(test_incrbyfloat_no_negative_zero) {
    redisReply *r = it_cmd(C, "INCRBYFLOAT foo %s", "0.024390243902439025");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    ck_assert_msg(strncmp(r->str, "0.0243902439024390", 18) == 0, "INCRBYFLOAT: got %s", r->str);
    expect_bulk(C, "0", "INCRBYFLOAT foo %s", "-0.024390243902439025");
    expect_bulk(C, "0", "INCRBYFLOAT bar %s", "-0.0");
}
END_TEST

START_TEST(test_wrong_arity) {
    expect_error(C, "ERR wrong number of arguments for 'get' command", "GET");
    expect_error(C, "ERR wrong number of arguments for 'get' command", "GET a b");
    expect_error(C, "ERR wrong number of arguments for 'append' command", "APPEND a");
    expect_error(C, "ERR wrong number of arguments for 'incr' command", "INCR");
    expect_error(C, "ERR wrong number of arguments for 'getrange' command", "GETRANGE k 0");
}
END_TEST

START_TEST(test_10000_keys_pipelined) {
    enum { N = 10000 };
    for (int i = 0; i < N; i++)
        redisAppendCommand(C, "SET %d %d", i, i);
    for (int i = 0; i < N; i++) {
        redisReply *r = NULL;
        ck_assert_int_eq(redisGetReply(C, (void **)&r), REDIS_OK);
        ck_assert_msg(r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK"), "SET %d failed", i);
        freeReplyObject(r);
    }
    for (int i = N - 1; i >= 0; i--)
        redisAppendCommand(C, "GET %d", i);
    for (int i = N - 1; i >= 0; i--) {
        redisReply *r = NULL;
        ck_assert_int_eq(redisGetReply(C, (void **)&r), REDIS_OK);
        int ok = r->type == REDIS_REPLY_STRING && atoi(r->str) == i;
        freeReplyObject(r);
        ck_assert_msg(ok, "GET %d returned a wrong value", i);
    }
    expect_int(C, N, "DBSIZE");
}
END_TEST

static Suite *strings_suite(void) {
    Suite *s = suite_create("strings");
    TCase *tc = it_tcase(s, "strings");
    tcase_add_test(tc, test_set_get);
    tcase_add_test(tc, test_set_get_empty);
    tcase_add_test(tc, test_binary_safe);
    tcase_add_test(tc, test_set_nx_xx);
    tcase_add_test(tc, test_set_get_option);
    tcase_add_test(tc, test_set_syntax_errors);
    tcase_add_test(tc, test_set_expire_options);
    tcase_add_test(tc, test_set_exat_in_the_past);
    tcase_add_test(tc, test_set_expire_range_ends);
    tcase_add_test(tc, test_setnx);
    tcase_add_test(tc, test_setex_psetex);
    tcase_add_test(tc, test_getex);
    tcase_add_test(tc, test_getex_errors);
    tcase_add_test(tc, test_getex_past_deletes);
    tcase_add_test(tc, test_getdel);
    tcase_add_test(tc, test_getset);
    tcase_add_test(tc, test_mget);
    tcase_add_test(tc, test_mset);
    tcase_add_test(tc, test_mset_clears_ttl);
    tcase_add_test(tc, test_msetnx);
    tcase_add_test(tc, test_append);
    tcase_add_test(tc, test_append_keeps_ttl);
    tcase_add_test(tc, test_strlen);
    tcase_add_test(tc, test_setrange_new_key);
    tcase_add_test(tc, test_setrange_existing);
    tcase_add_test(tc, test_setrange_errors);
    tcase_add_test(tc, test_getrange);
    tcase_add_test(tc, test_getrange_integer_and_substr);
    tcase_add_test(tc, test_incr_decr);
    tcase_add_test(tc, test_incr_overflow);
    tcase_add_test(tc, test_incr_keeps_ttl);
    tcase_add_test(tc, test_incrbyfloat);
    tcase_add_test(tc, test_incrbyfloat_no_negative_zero);
    tcase_add_test(tc, test_wrong_arity);
    tcase_add_test(tc, test_10000_keys_pipelined);
    return s;
}

int main(void) {
    return it_run(strings_suite());
}
