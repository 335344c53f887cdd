/* check_it_zset.c -- the sorted set commands against a real keel-server:
 * every command in RESP2 (hiredis) and the RESP3 shapes (raw client:
 * doubles, [member, score] pairs, nulls), Valkey's errors, WRONGTYPE,
 * inf/-inf and NaN, LIMIT extremes, both encodings and their thresholds,
 * the blocking pops woken by another client. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* Runs a test body once per encoding: the default thresholds (skip 0),
 * and zset-max-listpack-entries 0 (skip 1: every set a skiplist). */
static void both_encodings(void (*body)(int skip)) {
    for (int skip = 0; skip < 2; skip++) {
        expect_ok(C, "FLUSHALL");
        expect_ok(C, "CONFIG SET zset-max-listpack-entries %s", skip ? "0" : "128");
        body(skip);
    }
}

static void zadd_basics(int skip) {
    expect_int(C, 3, "ZADD z 1 a 2 b 3 c");
    expect_bulk(C, skip ? "skiplist" : "listpack", "OBJECT ENCODING z");
    expect_int(C, 0, "ZADD z 10 a");
    expect_int(C, 1, "ZADD z CH 11 a 2 b");
    expect_int(C, 0, "ZADD z NX 20 a");
    expect_bulk(C, "11", "ZSCORE z a");
    expect_int(C, 0, "ZADD z XX 5 nosuch");
    expect_nil(C, "ZSCORE z nosuch");
    expect_int(C, 0, "ZADD z GT CH 1 a");
    expect_int(C, 1, "ZADD z GT CH 12 a");
    expect_int(C, 1, "ZADD z LT CH 0.5 a");
    expect_bulk(C, "0.5", "ZSCORE z a");
    expect_int(C, 1, "ZADD z XX GT CH 100 a");
    expect_bulk(C, "101.5", "ZADD z INCR 1.5 a");
    expect_nil(C, "ZADD z NX INCR 1 a");
    expect_nil(C, "ZADD z XX INCR 1 nosuch");
    expect_int(C, 3, "ZCARD z");
    expect_reply(C, "[\"b\",\"c\",\"a\"]", "ZRANGE z 0 -1");
    expect_int(C, 0, "EXISTS nokey");
    expect_int(C, 0, "ZADD nokey XX 1 a");
    expect_int(C, 0, "EXISTS nokey");
}

START_TEST(test_zadd_basics) {
    both_encodings(zadd_basics);
}
END_TEST

START_TEST(test_zadd_errors) {
    expect_error(C, "ERR wrong number of arguments for 'zadd' command", "ZADD z 1");
    expect_error(C, "ERR syntax error", "ZADD z NX XX");
    expect_error(C, "ERR syntax error", "ZADD z 1 a 2");
    expect_error(C, "ERR XX and NX options at the same time are not compatible",
                 "ZADD z NX XX 1 a");
    expect_error(C, "ERR GT, LT, and/or NX options at the same time are not compatible",
                 "ZADD z GT LT 1 a");
    expect_error(C, "ERR GT, LT, and/or NX options at the same time are not compatible",
                 "ZADD z NX GT 1 a");
    expect_error(C, "ERR INCR option supports a single increment-element pair",
                 "ZADD z INCR 1 a 2 b");
    expect_error(C, "ERR value is not a valid float", "ZADD z 1 a x b");
    expect_error(C, "ERR value is not a valid float", "ZADD z nan a");
    expect_int(C, 0, "EXISTS z"); /* nothing added on a parse error */
    expect_int(C, 1, "ZADD z inf a");
    expect_error(C, "ERR resulting score is not a number (NaN)", "ZADD z INCR -inf a");
    expect_error(C, "ERR resulting score is not a number (NaN)", "ZINCRBY z -inf a");
    expect_bulk(C, "inf", "ZSCORE z a");
    expect_ok(C, "SET s v");
    expect_error(C, "WRONGTYPE Operation against a key holding the wrong kind of value",
                 "ZADD s 1 a");
    expect_error(C, "ERR wrong number of arguments for 'zadd' command", "ZADD z");
}
END_TEST

static void scores_format(int skip) {
    expect_int(C, 7, "ZADD z 1.1 a 0.1 b 1e20 c -inf d +inf e 3.0 f 1e-7 g");
    expect_bulk(C, "1.1", "ZSCORE z a");
    expect_bulk(C, "0.1", "ZSCORE z b");
    expect_bulk(C, "1e+20", "ZSCORE z c");
    expect_bulk(C, "-inf", "ZSCORE z d");
    expect_bulk(C, "inf", "ZSCORE z e");
    expect_bulk(C, "3", "ZSCORE z f");
    expect_bulk(C, "1e-7", "ZSCORE z g");
    expect_bulk(C, "0.30000000000000004", "ZINCRBY z 0.2 b");
    expect_reply(C, "[\"d\",\"-inf\",\"g\",\"1e-7\"]", "ZRANGE z 0 1 WITHSCORES");
}

START_TEST(test_scores_format) {
    both_encodings(scores_format);
}
END_TEST

START_TEST(test_zincrby_zrem) {
    expect_bulk(C, "5", "ZINCRBY z 5 a");
    expect_bulk(C, "2.5", "ZINCRBY z -2.5 a");
    expect_error(C, "ERR value is not a valid float", "ZINCRBY z x a");
    expect_int(C, 2, "ZADD z 1 b 2 c");
    expect_int(C, 2, "ZREM z a b nosuch");
    expect_int(C, 0, "ZREM nokey a");
    expect_int(C, 1, "ZREM z c c");
    expect_int(C, 0, "EXISTS z"); /* the empty set goes */
}
END_TEST

static void fill(const char *key) {
    expect_int(C, 6, "ZADD %s 1 a 2 b 3 c 4 d 5 e 6 f", key);
}

static void zrange_rank(int skip) {
    fill("z");
    expect_reply(C, "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]", "ZRANGE z 0 -1");
    expect_reply(C, "[\"b\",\"2\",\"c\",\"3\"]", "ZRANGE z 1 2 WITHSCORES");
    expect_reply(C, "[\"f\",\"e\"]", "ZRANGE z 0 1 REV");
    expect_reply(C, "[\"f\",\"e\"]", "ZREVRANGE z 0 1");
    expect_reply(C, "[\"e\",\"f\"]", "ZRANGE z -2 100");
    expect_reply(C, "[]", "ZRANGE z 5 2");
    expect_reply(C, "[]", "ZRANGE z 6 10");
    expect_reply(C, "[\"a\"]", "ZRANGE z -100 0");
    expect_reply(C, "[]", "ZRANGE nokey 0 -1");
    expect_error(C, "ERR value is not an integer or out of range", "ZRANGE z a 1");
    expect_error(C,
                 "ERR syntax error, LIMIT is only supported in combination with either "
                 "BYSCORE or BYLEX",
                 "ZRANGE z 0 1 LIMIT 0 1");
    expect_error(C, "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
                 "ZRANGE z - + BYLEX WITHSCORES");
    expect_error(C, "ERR syntax error", "ZREVRANGE z 0 1 BYSCORE");
    expect_error(C, "ERR syntax error", "ZRANGEBYSCORE z 0 1 REV");
    expect_error(C, "ERR syntax error", "ZRANGE z 0 1 FOO");
}

START_TEST(test_zrange_rank) {
    both_encodings(zrange_rank);
}
END_TEST

static void zrange_score(int skip) {
    fill("z");
    expect_reply(C, "[\"b\",\"c\",\"d\"]", "ZRANGEBYSCORE z 2 4");
    expect_reply(C, "[\"c\"]", "ZRANGEBYSCORE z (2 (4");
    expect_reply(C, "[\"d\",\"c\",\"b\"]", "ZREVRANGEBYSCORE z 4 2");
    expect_reply(C, "[\"d\",\"c\",\"b\"]", "ZRANGE z 4 2 BYSCORE REV");
    expect_reply(C, "[\"c\",\"3\",\"d\",\"4\"]", "ZRANGEBYSCORE z -inf +inf WITHSCORES LIMIT 2 2");
    expect_reply(C, "[\"e\",\"d\"]", "ZREVRANGEBYSCORE z +inf -inf LIMIT 1 2");
    expect_reply(C, "[\"f\"]", "ZRANGEBYSCORE z -inf +inf LIMIT 5 -1");
    expect_reply(C, "[]", "ZRANGEBYSCORE z -inf +inf LIMIT -1 10");
    expect_reply(C, "[]", "ZRANGEBYSCORE z -inf +inf LIMIT 0 0");
    expect_reply(C, "[]", "ZRANGEBYSCORE z -inf +inf LIMIT 9223372036854775807 1");
    expect_reply(C, "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]",
                 "ZRANGEBYSCORE z -inf +inf LIMIT 0 9223372036854775807");
    expect_reply(C, "[]", "ZRANGEBYSCORE z 4 2");
    expect_reply(C, "[]", "ZRANGEBYSCORE z (3 (3");
    expect_error(C, "ERR min or max is not a float", "ZRANGEBYSCORE z x 1");
    expect_error(C, "ERR min or max is not a float", "ZRANGEBYSCORE z 1 nan");
    expect_error(C, "ERR min or max is not a float", "ZRANGEBYSCORE z ( 1");
    expect_int(C, 3, "ZCOUNT z 2 4");
    expect_int(C, 6, "ZCOUNT z -inf +inf");
    expect_int(C, 0, "ZCOUNT z (4 (4");
    expect_int(C, 0, "ZCOUNT nokey 0 1");
    expect_error(C, "ERR min or max is not a float", "ZCOUNT z a b");
}

START_TEST(test_zrange_score) {
    both_encodings(zrange_score);
}
END_TEST

static void zrange_lex(int skip) {
    expect_int(C, 5, "ZADD z 0 a 0 b 0 c 0 d 0 e");
    expect_reply(C, "[\"a\",\"b\",\"c\"]", "ZRANGEBYLEX z - [c");
    expect_reply(C, "[\"b\"]", "ZRANGEBYLEX z (a (c");
    expect_reply(C, "[\"e\",\"d\"]", "ZREVRANGEBYLEX z + (c");
    expect_reply(C, "[\"d\",\"c\"]", "ZRANGE z [d - BYLEX REV LIMIT 0 2");
    expect_reply(C, "[\"c\",\"d\"]", "ZRANGEBYLEX z - + LIMIT 2 2");
    expect_reply(C, "[]", "ZRANGEBYLEX z + -");
    expect_int(C, 2, "ZLEXCOUNT z [b (d");
    expect_int(C, 5, "ZLEXCOUNT z - +");
    expect_error(C, "ERR min or max not valid string range item", "ZRANGEBYLEX z a +");
    expect_error(C, "ERR min or max not valid string range item", "ZLEXCOUNT z -x +");
    expect_int(C, 2, "ZREMRANGEBYLEX z [b (d");
    expect_reply(C, "[\"a\",\"d\",\"e\"]", "ZRANGE z 0 -1");
    expect_error(C, "ERR min or max not valid string range item", "ZREMRANGEBYLEX z x y");
}

START_TEST(test_zrange_lex) {
    both_encodings(zrange_lex);
}
END_TEST

static void zremrange(int skip) {
    fill("z");
    expect_int(C, 2, "ZREMRANGEBYRANK z 0 1");
    expect_int(C, 1, "ZREMRANGEBYRANK z -1 -1");
    expect_int(C, 0, "ZREMRANGEBYRANK z 5 10");
    expect_reply(C, "[\"c\",\"d\",\"e\"]", "ZRANGE z 0 -1");
    expect_int(C, 2, "ZREMRANGEBYSCORE z (3 5");
    expect_int(C, 0, "ZREMRANGEBYSCORE z 10 20");
    expect_error(C, "ERR min or max is not a float", "ZREMRANGEBYSCORE z a 1");
    expect_error(C, "ERR value is not an integer or out of range", "ZREMRANGEBYRANK z a 1");
    expect_int(C, 1, "ZREMRANGEBYSCORE z -inf +inf");
    expect_int(C, 0, "EXISTS z");
    expect_int(C, 0, "ZREMRANGEBYRANK nokey 0 -1");
}

START_TEST(test_zremrange) {
    both_encodings(zremrange);
}
END_TEST

static void zscore_rank(int skip) {
    fill("z");
    expect_reply(C, "[\"1\",nil,\"6\"]", "ZMSCORE z a nosuch f");
    expect_reply(C, "[nil,nil]", "ZMSCORE nokey a b");
    expect_int(C, 2, "ZRANK z c");
    expect_int(C, 3, "ZREVRANK z c");
    expect_reply(C, "[:2,\"3\"]", "ZRANK z c WITHSCORE");
    expect_reply(C, "[:0,\"6\"]", "ZREVRANK z f WITHSCORE");
    expect_nil(C, "ZRANK z nosuch");
    expect_reply(C, "nil", "ZRANK z nosuch WITHSCORE");
    expect_nil(C, "ZRANK nokey a");
    expect_error(C, "ERR syntax error", "ZRANK z a FOO");
    expect_error(C, "ERR wrong number of arguments for 'zrank' command", "ZRANK z a b c");
    expect_int(C, 0, "ZCARD nokey");
    expect_nil(C, "ZSCORE nokey a");
}

START_TEST(test_zscore_rank) {
    both_encodings(zscore_rank);
}
END_TEST

START_TEST(test_wrongtype) {
    expect_ok(C, "SET s v");
    const char *cmds[] = {
        "ZRANGE s 0 -1",  "ZSCORE s a",       "ZCARD s",        "ZRANK s a",
        "ZREM s a",       "ZPOPMIN s",        "ZRANDMEMBER s",  "ZSCAN s 0",
        "ZCOUNT s 0 1",   "ZUNION 2 s nokey", "ZINTERCARD 1 s", "ZRANGESTORE d s 0 -1",
        "ZMPOP 1 s MIN",  "ZINCRBY s 1 a",    "ZMSCORE s a",    "ZREMRANGEBYRANK s 0 1",
        "ZLEXCOUNT s - +"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        expect_error_prefix(C, "WRONGTYPE", cmds[i]);
}
END_TEST

static void set_operations(int skip) {
    expect_int(C, 3, "ZADD a 1 x 2 y 3 z");
    expect_int(C, 3, "ZADD b 10 y 20 z 30 w");
    expect_reply(C, "[\"x\",\"1\",\"y\",\"12\",\"z\",\"23\",\"w\",\"30\"]",
                 "ZUNION 2 a b WITHSCORES");
    expect_reply(C, "[\"x\",\"2\",\"y\",\"14\",\"z\",\"26\",\"w\",\"30\"]",
                 "ZUNION 2 a b WEIGHTS 2 1 WITHSCORES");
    expect_reply(C, "[\"x\",\"1\",\"y\",\"2\",\"z\",\"3\",\"w\",\"30\"]",
                 "ZUNION 2 a b AGGREGATE MIN WITHSCORES");
    expect_reply(C, "[\"y\",\"10\",\"z\",\"20\"]", "ZINTER 2 a b AGGREGATE MAX WITHSCORES");
    expect_reply(C, "[\"y\",\"z\"]", "ZINTER 2 a b");
    expect_reply(C, "[\"x\"]", "ZDIFF 2 a b");
    expect_reply(C, "[\"x\",\"1\"]", "ZDIFF 2 a b WITHSCORES");
    expect_reply(C, "[\"x\",\"y\",\"z\"]", "ZDIFF 2 a nokey");
    expect_reply(C, "[]", "ZINTER 2 a nokey");
    expect_int(C, 2, "ZINTERCARD 2 a b");
    expect_int(C, 1, "ZINTERCARD 2 a b LIMIT 1");
    expect_int(C, 2, "ZINTERCARD 2 a b LIMIT 0");
    expect_int(C, 4, "ZUNIONSTORE d 2 a b");
    /* A store result that fits is compact. */
    expect_bulk(C, skip ? "skiplist" : "listpack", "OBJECT ENCODING d");
    expect_int(C, 2, "ZINTERSTORE d 2 a b WEIGHTS 1 -1");
    expect_reply(C, "[\"z\",\"-17\",\"y\",\"-8\"]", "ZRANGE d 0 -1 WITHSCORES");
    expect_int(C, 1, "ZDIFFSTORE d 2 a b");
    expect_int(C, 0, "ZINTERSTORE d 2 a nokey");
    expect_int(C, 0, "EXISTS d");
    /* inf * 0 weights count as 0; inf + -inf sums to 0. */
    expect_int(C, 1, "ZADD i inf m");
    expect_int(C, 1, "ZADD j -inf m");
    expect_reply(C, "[\"m\",\"0\"]", "ZUNION 2 i j WITHSCORES");
    expect_reply(C, "[\"m\",\"0\"]", "ZUNION 1 i WEIGHTS 0 WITHSCORES");
    expect_error(C, "ERR at least 1 input key is needed for 'zunion' command", "ZUNION 0 a");
    expect_error(C, "ERR at least 1 input key is needed for 'zunionstore' command",
                 "ZUNIONSTORE d 0 a");
    expect_error(C, "ERR syntax error", "ZUNION 3 a b");
    expect_error(C, "ERR value is not an integer or out of range", "ZUNION x a");
    expect_error(C, "ERR weight value is not a float", "ZUNION 2 a b WEIGHTS 1 x");
    expect_error(C, "ERR syntax error", "ZUNION 2 a b AGGREGATE avg");
    expect_error(C, "ERR syntax error", "ZDIFF 2 a b WEIGHTS 1 1");
    expect_error(C, "ERR syntax error", "ZUNIONSTORE d 2 a b WITHSCORES");
    expect_error(C, "ERR LIMIT can't be negative", "ZINTERCARD 2 a b LIMIT -1");
    expect_error(C, "ERR syntax error", "ZINTERCARD 2 a b WITHSCORES");
}

START_TEST(test_set_operations) {
    both_encodings(set_operations);
}
END_TEST

/* Plain sets are inputs whose members score 1 (times their weight). */
START_TEST(test_sets_as_inputs) {
    expect_int(C, 3, "ZADD z 1 x 2 y 3 z");
    expect_int(C, 2, "SADD s y w");
    expect_int(C, 3, "SADD ints 1 2 3"); /* an intset */
    expect_int(C, 2, "ZADD zi 5 1 6 4");
    expect_reply(C, "[\"x\",\"1\",\"w\",\"2\",\"z\",\"3\",\"y\",\"4\"]",
                 "ZUNION 2 z s WEIGHTS 1 2 WITHSCORES");
    expect_reply(C, "[\"y\",\"3\"]", "ZINTER 2 z s WITHSCORES");
    expect_reply(C, "[\"w\"]", "ZDIFF 2 s z");
    expect_int(C, 1, "ZINTERCARD 2 s z");
    expect_int(C, 1, "ZINTERSTORE d 2 ints zi AGGREGATE MAX");
    expect_reply(C, "[\"1\",\"5\"]", "ZRANGE d 0 -1 WITHSCORES");
    expect_int(C, 3, "ZUNIONSTORE d 1 ints");
    expect_reply(C, "[\"1\",\"1\",\"2\",\"1\",\"3\",\"1\"]", "ZRANGE d 0 -1 WITHSCORES");
    expect_int(C, 2, "ZINTERSTORE d 2 s s");
    expect_ok(C, "SET str v");
    expect_error_prefix(C, "WRONGTYPE", "ZUNION 2 z str");
    /* Only the set operations take sets. */
    expect_error_prefix(C, "WRONGTYPE", "ZRANGE s 0 -1");
    expect_error_prefix(C, "WRONGTYPE", "ZRANGESTORE d s 0 -1");
}
END_TEST

START_TEST(test_store_encodings) {
    /* 200 members: the union stays a skiplist; ZRANGESTORE of 10 of them is
     * compact, of 150 a skiplist. */
    expect_ok(C, "CONFIG SET zset-max-listpack-entries 128");
    for (int i = 0; i < 200; i++)
        expect_int(C, 1, "ZADD big %d m%d", i, i);
    expect_bulk(C, "skiplist", "OBJECT ENCODING big");
    expect_int(C, 200, "ZUNIONSTORE u 1 big");
    expect_bulk(C, "skiplist", "OBJECT ENCODING u");
    expect_int(C, 10, "ZRANGESTORE r big 0 9");
    expect_bulk(C, "listpack", "OBJECT ENCODING r");
    expect_int(C, 150, "ZRANGESTORE r big 0 149");
    expect_bulk(C, "skiplist", "OBJECT ENCODING r");
    expect_int(C, 5, "ZRANGESTORE r big 10 (15 BYSCORE");
    expect_reply(C, "[\"m10\",\"m11\",\"m12\",\"m13\",\"m14\"]", "ZRANGE r 0 -1");
    expect_int(C, 4, "ZADD lex 0 a 0 b 0 c 0 d");
    expect_int(C, 2, "ZRANGESTORE r lex (a + BYLEX LIMIT 1 2");
    expect_reply(C, "[\"c\",\"d\"]", "ZRANGE r 0 -1");
    expect_int(C, 3, "ZRANGESTORE r big 2 0 BYSCORE REV");
    expect_reply(C, "[\"m0\",\"m1\",\"m2\"]", "ZRANGE r 0 -1");
    expect_int(C, 0, "ZRANGESTORE r big 1000 2000 BYSCORE");
    expect_int(C, 0, "EXISTS r");
    expect_int(C, 0, "ZRANGESTORE r nokey 0 -1");
    expect_error(C, "ERR syntax error", "ZRANGESTORE r big 0 1 WITHSCORES");
    /* Deletes do not convert back. */
    expect_int(C, 199, "ZREMRANGEBYRANK big 1 -1");
    expect_bulk(C, "skiplist", "OBJECT ENCODING big");
    /* The thresholds are read live. */
    expect_ok(C, "CONFIG SET zset-max-listpack-value 4");
    expect_int(C, 1, "ZADD small 1 abcd");
    expect_bulk(C, "listpack", "OBJECT ENCODING small");
    expect_int(C, 1, "ZADD small 1 abcde");
    expect_bulk(C, "skiplist", "OBJECT ENCODING small");
}
END_TEST

static void pops(int skip) {
    fill("z");
    expect_reply(C, "[\"a\",\"1\"]", "ZPOPMIN z");
    expect_reply(C, "[\"f\",\"6\",\"e\",\"5\"]", "ZPOPMAX z 2");
    expect_reply(C, "[]", "ZPOPMIN z 0");
    expect_reply(C, "[]", "ZPOPMIN nokey");
    expect_error(C, "ERR value is out of range, must be positive", "ZPOPMIN z -1");
    expect_error(C, "ERR syntax error", "ZPOPMIN z 1 2");
    expect_reply(C, "[\"z\",[[\"b\",\"2\"]]]", "ZMPOP 2 nokey z MIN");
    expect_reply(C, "[\"z\",[[\"d\",\"4\"],[\"c\",\"3\"]]]", "ZMPOP 1 z MAX COUNT 10");
    expect_int(C, 0, "EXISTS z");
    expect_reply(C, "nil", "ZMPOP 1 z MIN");
    expect_error(C, "ERR numkeys should be greater than 0", "ZMPOP 0 z MIN");
    expect_error(C, "ERR count should be greater than 0", "ZMPOP 1 z MIN COUNT 0");
    expect_error(C, "ERR syntax error", "ZMPOP 1 z MID");
    expect_error(C, "ERR syntax error", "ZMPOP 2 z MIN");
    expect_error(C, "ERR syntax error", "ZMPOP 1 z MIN COUNT 1 COUNT 1");
}

START_TEST(test_pops) {
    both_encodings(pops);
}
END_TEST

static void zrandmember(int skip) {
    fill("z");
    redisReply *r = it_cmd(C, "ZRANDMEMBER z");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    expect_nil(C, "ZRANDMEMBER nokey");
    expect_reply(C, "[]", "ZRANDMEMBER nokey 5");
    expect_reply(C, "[]", "ZRANDMEMBER z 0");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "ZRANDMEMBER z 10")), "a,b,c,d,e,f");
    r = it_cmd(C, "ZRANDMEMBER z -20 WITHSCORES");
    ck_assert_int_eq(r->elements, 40);
    for (int n = 1; n < 6; n++) { /* distinct members */
        r = it_cmd(C, "ZRANDMEMBER z %d", n);
        ck_assert_int_eq(r->elements, n);
        for (size_t i = 0; i < r->elements; i++)
            for (size_t j = i + 1; j < r->elements; j++)
                ck_assert_str_ne(r->element[i]->str, r->element[j]->str);
    }
    expect_error(C, "ERR value is out of range", "ZRANDMEMBER z -9223372036854775807 WITHSCORES");
    expect_error(C,
                 "ERR value is out of range, value must between -9223372036854775807 and "
                 "9223372036854775807",
                 "ZRANDMEMBER z -9223372036854775808");
    expect_error(C, "ERR syntax error", "ZRANDMEMBER z 1 FOO");
}

START_TEST(test_zrandmember) {
    both_encodings(zrandmember);
}
END_TEST

/* A negative count near -2^63 ends when the output buffer limit closes
 * the client; the server goes on. */
START_TEST(test_zrandmember_huge_count) {
    expect_int(C, 1, "ZADD z 1 a");
    expect_ok(C, "CONFIG SET client-output-buffer-limit %s", "normal 1mb 1mb 0");
    redisContext *c2 = it_connect(S);
    redisReply *r = it_try_cmd(c2, "ZRANDMEMBER z -9223372036854775807");
    ck_assert(r == NULL || r->type == REDIS_REPLY_ERROR);
    expect_ok(C, "CONFIG SET client-output-buffer-limit %s", "normal 0 0 0");
    expect_status(C, "PONG", "PING");
}
END_TEST

static void zscan(int skip) {
    fill("z");
    expect_int(C, 1, "ZADD z 1.5 x1");
    redisReply *r;
    unsigned long long cur = 0;
    int members = 0;
    do {
        r = it_cmd(C, "ZSCAN z %llu COUNT 2", cur);
        cur = strtoull(r->element[0]->str, NULL, 10);
        members += (int)r->element[1]->elements / 2;
    } while (cur);
    ck_assert_int_ge(members, 7);
    r = it_cmd(C, "ZSCAN z 0 MATCH x* COUNT 100");
    expect_reply(C, "[\"0\",[\"x1\",\"1.5\"]]", "ZSCAN z 0 MATCH x* COUNT 100");
    expect_reply(C, "[\"0\",[\"x1\"]]", "ZSCAN z 0 MATCH x* COUNT 100 NOSCORES");
    expect_reply(C, "[\"0\",[]]", "ZSCAN nokey 0");
    expect_error(C, "ERR invalid cursor", "ZSCAN z abc");
    expect_error(C, "ERR syntax error", "ZSCAN z 0 COUNT 0");
    expect_error(C, "ERR NOVALUES option can only be used in HSCAN", "ZSCAN z 0 NOVALUES");
}

START_TEST(test_zscan) {
    both_encodings(zscan);
}
END_TEST

START_TEST(test_resp3_shapes) {
    fill("z");
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "ZSCORE", "z", "a", NULL);
    expect_raw(r, ",1");
    it_raw_cmd(r, "ZSCORE", "z", "nosuch", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "ZADD", "z", "INCR", "0.5", "a", NULL);
    expect_raw(r, ",1.5");
    it_raw_cmd(r, "ZADD", "inf", "-inf", "m", "inf", "n", NULL);
    expect_raw(r, ":2");
    it_raw_cmd(r, "ZRANGE", "inf", "0", "-1", "WITHSCORES", NULL);
    expect_raw(r, "[[\"m\",,-inf],[\"n\",,inf]]");
    it_raw_cmd(r, "ZRANGE", "z", "0", "1", "WITHSCORES", NULL);
    expect_raw(r, "[[\"a\",,1.5],[\"b\",,2]]");
    it_raw_cmd(r, "ZRANGEBYSCORE", "z", "5", "+inf", "WITHSCORES", NULL);
    expect_raw(r, "[[\"e\",,5],[\"f\",,6]]");
    it_raw_cmd(r, "ZRANGE", "z", "0", "1", NULL);
    expect_raw(r, "[\"a\",\"b\"]");
    it_raw_cmd(r, "ZMSCORE", "z", "b", "nosuch", NULL);
    expect_raw(r, "[,2,_]");
    it_raw_cmd(r, "ZRANK", "z", "b", "WITHSCORE", NULL);
    expect_raw(r, "[:1,,2]");
    it_raw_cmd(r, "ZRANK", "z", "nosuch", "WITHSCORE", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "ZPOPMIN", "z", NULL);
    expect_raw(r, "[\"a\",,1.5]");
    it_raw_cmd(r, "ZPOPMIN", "z", "1", NULL);
    expect_raw(r, "[[\"b\",,2]]");
    it_raw_cmd(r, "ZMPOP", "1", "z", "MAX", NULL);
    expect_raw(r, "[\"z\",[[\"f\",,6]]]");
    it_raw_cmd(r, "ZUNION", "1", "z", "WITHSCORES", NULL);
    expect_raw(r, "[[\"c\",,3],[\"d\",,4],[\"e\",,5]]");
    it_raw_cmd(r, "ZRANDMEMBER", "z", "-1", "WITHSCORES", NULL);
    it_value *v = it_raw_read(r);
    ck_assert(v && v->n == 1 && v->elem[0]->n == 2 && v->elem[0]->elem[1]->type == ',');
    it_raw_cmd(r, "ZSCAN", "z", "0", "MATCH", "c", NULL);
    expect_raw(r, "[\"0\",[\"c\",\"3\"]]"); /* ZSCAN's scores stay bulk strings */
    it_raw_cmd(r, "ZMPOP", "1", "nokey", "MAX", NULL);
    expect_raw(r, "_");
}
END_TEST

/* The blocking pops: served at once when a key has members, else woken
 * by a write, timed out (null array), or answered at once inside MULTI. */
START_TEST(test_blocking_pops) {
    expect_int(C, 2, "ZADD z 1 a 2 b");
    expect_reply(C, "[\"z\",\"a\",\"1\"]", "BZPOPMIN nokey z 0");
    expect_reply(C, "[\"z\",\"b\",\"2\"]", "BZPOPMAX z 0");
    expect_int(C, 0, "EXISTS z");
    expect_reply(C, "nil", "BZPOPMIN z 0.01");
    expect_reply(C, "nil", "BZMPOP 0.01 1 z MIN");
    expect_error(C, "ERR timeout is not a float or out of range", "BZPOPMIN z x");
    expect_error(C, "ERR timeout is negative", "BZPOPMIN z -1");
    expect_error(C, "ERR numkeys should be greater than 0", "BZMPOP 0 0 z MIN");
    expect_ok(C, "SET s v");
    expect_error_prefix(C, "WRONGTYPE", "BZPOPMIN s 0");
    expect_error_prefix(C, "WRONGTYPE", "BZMPOP 0 1 s MAX");
    /* Woken by a ZADD from another client, in the order they blocked. */
    it_raw *r1 = it_raw_connect(S), *r2 = it_raw_connect(S);
    it_raw_cmd(r1, "BZPOPMIN", "k1", "k2", "0", NULL);
    /* r1 must block first: with I/O threads r2's request could be read
     * before r1's, and its COUNT 5 would take everything. */
    it_wait_until(it_info_int(C, "clients", "blocked_clients") == 1, 5000);
    it_raw_cmd(r2, "BZMPOP", "0", "1", "k2", "MAX", "COUNT", "5", NULL);
    it_wait_until(it_info_int(C, "clients", "blocked_clients") == 2, 5000);
    expect_int(C, 3, "ZADD k2 1 x 2 y 3 z");
    expect_raw(r1, "[\"k2\",\"x\",\"1\"]");
    expect_raw(r2, "[\"k2\",[[\"z\",\"3\"],[\"y\",\"2\"]]]");
    expect_int(C, 0, "EXISTS k2");
    /* Inside MULTI an empty key answers at once. */
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "BZPOPMIN k1 0");
    expect_reply(C, "[nil]", "EXEC");
    /* RESP3: a flat triple with a double; BZMPOP's pairs; a null. */
    it_raw *r3 = it_raw_connect(S);
    it_raw_cmd(r3, "HELLO", "3", NULL);
    ck_assert(it_raw_read(r3) != NULL);
    expect_int(C, 2, "ZADD k3 1.5 m 2 n");
    it_raw_cmd(r3, "BZPOPMIN", "k3", "0", NULL);
    expect_raw(r3, "[\"k3\",\"m\",,1.5]");
    it_raw_cmd(r3, "BZMPOP", "0", "1", "k3", "MIN", NULL);
    expect_raw(r3, "[\"k3\",[[\"n\",,2]]]");
    it_raw_cmd(r3, "BZPOPMAX", "k3", "0.01", NULL);
    expect_raw(r3, "_");
}
END_TEST

static Suite *zset_suite(void) {
    Suite *s = suite_create("it_zset");
    TCase *tc = it_tcase(s, "zset");
    tcase_add_test(tc, test_zadd_basics);
    tcase_add_test(tc, test_zadd_errors);
    tcase_add_test(tc, test_scores_format);
    tcase_add_test(tc, test_zincrby_zrem);
    tcase_add_test(tc, test_zrange_rank);
    tcase_add_test(tc, test_zrange_score);
    tcase_add_test(tc, test_zrange_lex);
    tcase_add_test(tc, test_zremrange);
    tcase_add_test(tc, test_zscore_rank);
    tcase_add_test(tc, test_wrongtype);
    tcase_add_test(tc, test_set_operations);
    tcase_add_test(tc, test_sets_as_inputs);
    tcase_add_test(tc, test_store_encodings);
    tcase_add_test(tc, test_pops);
    tcase_add_test(tc, test_zrandmember);
    tcase_add_test(tc, test_zrandmember_huge_count);
    tcase_add_test(tc, test_zscan);
    tcase_add_test(tc, test_resp3_shapes);
    tcase_add_test(tc, test_blocking_pops);
    return s;
}

int main(void) {
    return it_run(zset_suite());
}
