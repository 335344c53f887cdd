/* check_it_hash.c -- the hash commands against a real keel-server, RESP2
 * through hiredis and RESP3 raw: HSET ... HSCAN with Valkey's replies and
 * errors, WRONGTYPE, the encodings and CONFIG SET of their thresholds, and
 * per-field expiry (HEXPIRE family, HGETEX, HSETEX, HGETDEL) with real
 * time: lazy on access and active from the cron, also of hashes under new
 * names (RENAME, COPY, MOVE, SWAPDB, RESTORE), and INFO expired_fields. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ERR_NOT_INT "ERR value is not an integer or out of range"
#define ERR_SYNTAX "ERR syntax error"
#define ERR_WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"
#define ERR_NUMFIELDS                                                                              \
    "ERR numfields should be greater than 0 and match the provided number of fields"

/* The first element of an array reply of integers (HTTL's). */
static void ttl_in_range(long long lo, long long hi, const char *cmd) {
    redisReply *r = it_cmd(C, cmd);
    ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements >= 1, "%s: no array", cmd);
    long long v = r->element[0]->integer;
    ck_assert_msg(v >= lo && v <= hi, "%s: %lld not in [%lld, %lld]", cmd, v, lo, hi);
}

START_TEST(test_hset_hget) {
    expect_int(C, 2, "HSET h a 1 b 2");
    expect_int(C, 1, "HSET h a 10 c 3");
    expect_bulk(C, "10", "HGET h a");
    expect_nil(C, "HGET h zz");
    expect_nil(C, "HGET nokey a");
    expect_ok(C, "HMSET h d 4 e 5");
    expect_int(C, 5, "HLEN h");
    expect_int(C, 0, "HLEN nokey");
    expect_reply(C, "[\"10\",nil,\"4\"]", "HMGET h a zz d");
    expect_reply(C, "[nil,nil]", "HMGET nokey a b");
    expect_int(C, 0, "HSETNX h a x");
    expect_int(C, 1, "HSETNX h f 6");
    expect_int(C, 1, "HSETNX new f v");
    expect_bulk(C, "v", "HGET new f");
    expect_int(C, 2, "HSTRLEN h a");
    expect_int(C, 0, "HSTRLEN h zz");
    expect_int(C, 1, "HEXISTS h a");
    expect_int(C, 0, "HEXISTS h zz");
    expect_int(C, 0, "HEXISTS nokey a");
    expect_error(C, "ERR wrong number of arguments for 'hset' command", "HSET h a 1 b");
    expect_error(C, "ERR wrong number of arguments for 'hmset' command", "HMSET h a");
}
END_TEST

START_TEST(test_hdel_deletes_empty_key) {
    expect_int(C, 3, "HSET h a 1 b 2 c 3");
    expect_int(C, 2, "HDEL h a b zz");
    expect_int(C, 0, "HDEL h a");
    expect_int(C, 1, "EXISTS h");
    expect_int(C, 1, "HDEL h c");
    expect_int(C, 0, "EXISTS h");
    expect_int(C, 0, "HDEL nokey a");
}
END_TEST

START_TEST(test_getall_keys_vals) {
    expect_int(C, 2, "HSET h a 1 b 2");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "HKEYS h")), "a,b");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "HVALS h")), "1,2");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "HGETALL h")), "1,2,a,b");
    expect_reply(C, "[]", "HGETALL nokey");
    expect_reply(C, "[]", "HKEYS nokey");
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "HDEL", "h", "b", NULL);
    expect_raw(r, ":1");
    it_raw_cmd(r, "HGETALL", "h", NULL);
    expect_raw(r, "{\"a\":\"1\"}");
    it_raw_cmd(r, "HGETALL", "nokey", NULL);
    expect_raw(r, "{}");
    it_raw_cmd(r, "HKEYS", "h", NULL);
    expect_raw(r, "[\"a\"]");
}
END_TEST

START_TEST(test_wrongtype) {
    expect_ok(C, "SET s v");
    const char *cmds[] = {"HSET s a 1",
                          "HSETNX s a 1",
                          "HGET s a",
                          "HMGET s a",
                          "HDEL s a",
                          "HLEN s",
                          "HSTRLEN s a",
                          "HEXISTS s a",
                          "HKEYS s",
                          "HVALS s",
                          "HGETALL s",
                          "HINCRBY s a 1",
                          "HINCRBYFLOAT s a 1",
                          "HRANDFIELD s",
                          "HSCAN s 0",
                          "HEXPIRE s 10 FIELDS 1 a",
                          "HTTL s FIELDS 1 a",
                          "HPERSIST s FIELDS 1 a",
                          "HGETEX s FIELDS 1 a",
                          "HSETEX s FIELDS 1 a b",
                          "HGETDEL s FIELDS 1 a"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        expect_error(C, ERR_WRONGTYPE, cmds[i]);
    expect_int(C, 1, "HSET h a 1");
    expect_error(C, ERR_WRONGTYPE, "GET h");
    expect_status(C, "hash", "TYPE h");
}
END_TEST

START_TEST(test_hincrby) {
    expect_int(C, 5, "HINCRBY h n 5");
    expect_int(C, 3, "HINCRBY h n -2");
    expect_int(C, 1, "HSET h s abc");
    expect_error(C, "ERR hash value is not an integer", "HINCRBY h s 1");
    expect_error(C, ERR_NOT_INT, "HINCRBY h n x");
    expect_int(C, 1, "HSET h big 9223372036854775806");
    expect_int(C, 9223372036854775807LL, "HINCRBY h big 1");
    expect_error(C, "ERR increment or decrement would overflow", "HINCRBY h big 1");
    expect_int(C, 1, "HSET h neg -9223372036854775807");
    expect_error(C, "ERR increment or decrement would overflow", "HINCRBY h neg -2");
}
END_TEST

START_TEST(test_hincrbyfloat) {
    expect_bulk(C, "10.5", "HINCRBYFLOAT h f 10.5");
    expect_bulk(C, "10", "HINCRBYFLOAT h f -0.5");
    expect_int(C, 1, "HSET h e 5.0e3");
    expect_bulk(C, "5001", "HINCRBYFLOAT h e 1");
    expect_int(C, 1, "HSET h i 7");
    expect_bulk(C, "7.25", "HINCRBYFLOAT h i 0.25");
}
END_TEST

START_TEST(test_hincrbyfloat_errors) {
    expect_int(C, 1, "HSET h s abc");
    expect_error(C, "ERR hash value is not a float", "HINCRBYFLOAT h s 1");
    expect_error(C, "ERR value is not a valid float", "HINCRBYFLOAT h f x");
    expect_error(C, "ERR value is NaN or Infinity", "HINCRBYFLOAT h f inf");
    expect_int(C, 1, "HSET h m 1e4932");
    expect_error(C, "ERR increment would produce NaN or Infinity", "HINCRBYFLOAT h m 1e4932");
    expect_int(C, 0, "EXISTS nokey");
    expect_error(C, "ERR value is NaN or Infinity", "HINCRBYFLOAT nokey f -inf");
    expect_int(C, 0, "EXISTS nokey");
}
END_TEST

START_TEST(test_encodings_and_config) {
    expect_int(C, 1, "HSET h a 1");
    expect_bulk(C, "listpack", "OBJECT ENCODING h");
    expect_ok(C, "CONFIG SET hash-max-listpack-entries 2");
    expect_int(C, 1, "HSET h b 2");
    expect_bulk(C, "listpack", "OBJECT ENCODING h");
    expect_int(C, 1, "HSET h c 3");
    expect_bulk(C, "hashtable", "OBJECT ENCODING h");
    expect_int(C, 2, "HDEL h a b");
    expect_bulk(C, "hashtable", "OBJECT ENCODING h"); /* never back */
    expect_ok(C, "CONFIG SET hash-max-listpack-value 4");
    expect_int(C, 1, "HSET v f 1234");
    expect_bulk(C, "listpack", "OBJECT ENCODING v");
    expect_int(C, 0, "HSET v f 12345");
    expect_bulk(C, "hashtable", "OBJECT ENCODING v");
    expect_int(C, 1, "HSET w 12345 x");
    expect_bulk(C, "hashtable", "OBJECT ENCODING w");
    expect_reply(C, "[\"hash-max-listpack-value\",\"4\"]", "CONFIG GET hash-max-listpack-value");
    expect_ok(C, "CONFIG SET hash-max-listpack-entries 512");
    expect_ok(C, "CONFIG SET hash-max-listpack-value 64");
    expect_bulk(C, "12345", "HGET v f");
}
END_TEST

START_TEST(test_hrandfield) {
    expect_nil(C, "HRANDFIELD nokey");
    expect_reply(C, "[]", "HRANDFIELD nokey 5");
    expect_int(C, 3, "HSET h a 1 b 2 c 3");
    expect_reply(C, "[]", "HRANDFIELD h 0");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "HRANDFIELD h 10")), "a,b,c");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "HRANDFIELD h 3 WITHVALUES")), "1,2,3,a,b,c");
    redisReply *r = it_cmd(C, "HRANDFIELD h 2");
    ck_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    ck_assert_str_ne(r->element[0]->str, r->element[1]->str);
    r = it_cmd(C, "HRANDFIELD h -7 WITHVALUES");
    ck_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 14);
    r = it_cmd(C, "HRANDFIELD h");
    ck_assert(r->type == REDIS_REPLY_STRING && strchr("abc", r->str[0]));
    expect_error(C, ERR_SYNTAX, "HRANDFIELD h 1 WITHVALUE");
    expect_error(C, ERR_SYNTAX, "HRANDFIELD h 1 WITHVALUES x");
    expect_error(C, ERR_NOT_INT, "HRANDFIELD h x");
    expect_error(C, "ERR value is out of range", "HRANDFIELD h -9223372036854775807 WITHVALUES");
    it_raw *raw = it_raw_connect_resp3(S);
    it_raw_cmd(raw, "HRANDFIELD", "h", "-2", "WITHVALUES", NULL);
    it_value *v = it_raw_read(raw);
    ck_assert(v && v->type == '*' && v->n == 2);
    ck_assert(v->elem[0]->type == '*' && v->elem[0]->n == 2);
}
END_TEST

/* A negative count near -2^63 ends when the output buffer limit closes
 * the client, in either encoding; the server goes on (it used to keep
 * picking for the dropped client, 2^63 times). */
START_TEST(test_hrandfield_huge_count) {
    expect_int(C, 1, "HSET small a 1");
    expect_ok(C, "CONFIG SET hash-max-listpack-entries 0");
    expect_int(C, 1, "HSET big a 1");
    expect_ok(C, "CONFIG SET hash-max-listpack-entries 512");
    expect_bulk(C, "listpack", "OBJECT ENCODING small");
    expect_bulk(C, "hashtable", "OBJECT ENCODING big");
    expect_ok(C, "CONFIG SET client-output-buffer-limit %s", "normal 1mb 1mb 0");
    const char *keys[] = {"small", "big"};
    for (int i = 0; i < 2; i++) {
        redisContext *c2 = it_connect(S);
        redisReply *r = it_try_cmd(c2, "HRANDFIELD %s -9223372036854775807", keys[i]);
        ck_assert(r == NULL || r->type == REDIS_REPLY_ERROR);
        it_disconnect(c2);
        expect_status(C, "PONG", "PING");
    }
    expect_ok(C, "CONFIG SET client-output-buffer-limit %s", "normal 0 0 0");
}
END_TEST

START_TEST(test_hscan) {
    expect_reply(C, "[\"0\",[]]", "HSCAN nokey 0");
    expect_int(C, 2, "HSET h a 1 b 2");
    redisReply *r = it_cmd(C, "HSCAN h 0");
    ck_assert_str_eq(r->element[0]->str, "0");
    ck_assert_str_eq(it_sorted_join(r->element[1]), "1,2,a,b");
    r = it_cmd(C, "HSCAN h 0 NOVALUES");
    ck_assert_str_eq(it_sorted_join(r->element[1]), "a,b");
    r = it_cmd(C, "HSCAN h 0 MATCH a*");
    ck_assert_str_eq(it_sorted_join(r->element[1]), "1,a");
    expect_error(C, ERR_SYNTAX, "HSCAN h 0 COUNT 0");
    expect_error(C, ERR_SYNTAX, "HSCAN h 0 FOO");
    expect_error(C, "ERR invalid cursor", "HSCAN h x");
    /* a hashtable hash (past the default 512 fields) by steps */
    for (int i = 0; i < 600; i++)
        it_free(it_cmd(C, "HSET big f%d v", i));
    expect_bulk(C, "hashtable", "OBJECT ENCODING big");
    char *seen = calloc(600, 1);
    char cursor[32] = "0";
    int steps = 0;
    do {
        r = it_cmd(C, "HSCAN big %s COUNT 20 NOVALUES", cursor);
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++)
            seen[atoi(r->element[1]->element[i]->str + 1)] = 1;
        steps++;
    } while (strcmp(cursor, "0") != 0);
    ck_assert_int_gt(steps, 1);
    for (int i = 0; i < 600; i++)
        ck_assert(seen[i]);
    free(seen);
}
END_TEST

/* ---- field expiry ---- */

START_TEST(test_hexpire_codes) {
    expect_int(C, 3, "HSET h a 1 b 2 c 3");
    expect_reply(C, "[:1,:-2]", "HEXPIRE h 100 FIELDS 2 a zz");
    expect_bulk(C, "hashtable", "OBJECT ENCODING h");
    expect_reply(C, "[:0,:1]", "HEXPIRE h 200 NX FIELDS 2 a b");
    expect_reply(C, "[:1,:0]", "HEXPIRE h 300 XX FIELDS 2 a c");
    expect_reply(C, "[:0]", "HEXPIRE h 100 GT FIELDS 1 a");
    expect_reply(C, "[:0]", "HEXPIRE h 100 GT FIELDS 1 c"); /* no TTL = infinite */
    expect_reply(C, "[:1]", "HEXPIRE h 100 LT FIELDS 1 c");
    expect_reply(C, "[:-2,:-2]", "HEXPIRE nokey 100 FIELDS 2 a b");
    ttl_in_range(299, 300, "HTTL h FIELDS 1 a");
    redisReply *r = it_cmd(C, "HTTL h FIELDS 3 a b zz");
    ck_assert(r->elements == 3 && r->element[0]->integer >= 299 && r->element[2]->integer == -2);
    r = it_cmd(C, "HPTTL h FIELDS 1 b");
    ck_assert(r->element[0]->integer > 199000 && r->element[0]->integer <= 200000);
    long long now = (long long)time(NULL) * 1000;
    r = it_cmd(C, "HPEXPIRETIME h FIELDS 1 a");
    ck_assert(llabs(r->element[0]->integer - (now + 300000)) < 2000);
    r = it_cmd(C, "HEXPIRETIME h FIELDS 1 a");
    ck_assert(llabs(r->element[0]->integer - (now / 1000 + 300)) <= 2);
    expect_int(C, 1, "HSET h d 4");
    expect_reply(C, "[:1,:-1,:-2]", "HPERSIST h FIELDS 3 a d zz");
    expect_reply(C, "[:-1]", "HTTL h FIELDS 1 d");
    expect_reply(C, "[:-2]", "HPERSIST nokey FIELDS 1 a");
    /* 0 / the past deletes: code 2 */
    expect_reply(C, "[:2,:-2]", "HEXPIRE h 0 FIELDS 2 a zz");
    expect_int(C, 0, "HEXISTS h a");
    expect_reply(C, "[:2,:2,:2]", "HPEXPIREAT h 1 FIELDS 3 b c d");
    expect_int(C, 0, "EXISTS h");
}
END_TEST

START_TEST(test_hexpire_errors) {
    expect_int(C, 1, "HSET h a 1");
    expect_error(C, ERR_NUMFIELDS, "HEXPIRE h 10 FIELDS 2 a");
    expect_error(C, ERR_NUMFIELDS, "HEXPIRE h 10 FIELDS 0 a");
    expect_error(C, ERR_NUMFIELDS, "HEXPIRE h 10 NX a b");
    expect_error(C, ERR_NOT_INT, "HEXPIRE h 10 FIELDS x a");
    expect_error(C, ERR_NOT_INT, "HEXPIRE h x FIELDS 1 a");
    expect_error(C, "ERR Unsupported option FOO", "HEXPIRE h 10 FOO FIELDS 1 a");
    expect_error(C, "ERR NX and XX, GT or LT options at the same time are not compatible",
                 "HEXPIRE h 10 NX XX FIELDS 1 a");
    expect_error(C, "ERR GT and LT options at the same time are not compatible",
                 "HEXPIRE h 10 GT LT FIELDS 1 a");
    expect_error(C, "ERR invalid expire time in 'hexpire' command",
                 "HEXPIRE h 9223372036854775807 FIELDS 1 a");
    /* Valkey 9.0: unlike EXPIRE, a negative time is an error, not a delete */
    expect_error(C, "ERR invalid expire time in 'hexpire' command", "HEXPIRE h -1 FIELDS 1 a");
    expect_error(C, "ERR invalid expire time in 'hpexpireat' command",
                 "HPEXPIREAT h -5 FIELDS 1 a");
    expect_error(C, ERR_SYNTAX, "HTTL h FIELDS 2 a");
    expect_error(C, ERR_NUMFIELDS, "HPERSIST h FIELDS 2 a");
    expect_error(C, "ERR wrong number of arguments for 'httl' command", "HTTL h FIELDS 1");
    expect_bulk(C, "1", "HGET h a");
}
END_TEST

START_TEST(test_field_expiry_real_time) {
    expect_int(C, 3, "HSET h a 1 b 2 c 3");
    expect_reply(C, "[:1,:1]", "HPEXPIRE h 100 FIELDS 2 a b");
    expect_int(C, 3, "HLEN h");
    it_sleep_ms(150);
    /* lazy: the access removes them */
    expect_int(C, 1, "HLEN h");
    expect_nil(C, "HGET h a");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "HGETALL h")), "3,c");
    /* the last field's expiry deletes the key */
    expect_reply(C, "[:1]", "HPEXPIRE h 100 FIELDS 1 c");
    it_sleep_ms(150);
    expect_int(C, 0, "HEXISTS h c");
    expect_int(C, 0, "EXISTS h");
}
END_TEST

START_TEST(test_field_expiry_active) {
    expect_int(C, 2, "HSET h a 1 b 2");
    expect_int(C, 1, "HSET gone x 1");
    expect_reply(C, "[:1]", "HPEXPIRE h 100 FIELDS 1 a");
    expect_reply(C, "[:1]", "HPEXPIRE gone 100 FIELDS 1 x");
    /* no access: the cron removes the field and the emptied key */
    it_wait_until(it_cmd(C, "EXISTS gone")->integer == 0, 2000);
    expect_int(C, 1, "EXISTS h");
    expect_int(C, 1, "DBSIZE");
}
END_TEST

START_TEST(test_hset_clears_ttl_hincrby_keeps) {
    expect_int(C, 2, "HSET h a 1 b 2");
    expect_reply(C, "[:1,:1]", "HEXPIRE h 100 FIELDS 2 a b");
    expect_int(C, 0, "HSET h a 5");
    expect_reply(C, "[:-1]", "HTTL h FIELDS 1 a");
    expect_int(C, 3, "HINCRBY h b 1");
    ttl_in_range(99, 100, "HTTL h FIELDS 1 b");
}
END_TEST

START_TEST(test_hgetex) {
    expect_int(C, 2, "HSET h a 1 b 2");
    expect_reply(C, "[\"1\",nil]", "HGETEX h EX 100 FIELDS 2 a zz");
    ttl_in_range(99, 100, "HTTL h FIELDS 1 a");
    expect_reply(C, "[\"1\"]", "HGETEX h PERSIST FIELDS 1 a");
    expect_reply(C, "[:-1]", "HTTL h FIELDS 1 a");
    expect_reply(C, "[\"2\"]", "HGETEX h FIELDS 1 b");
    expect_reply(C, "[\"2\"]", "HGETEX h PX 100000 FIELDS 1 b");
    expect_reply(C, "[\"2\"]", "HGETEX h PXAT 1 FIELDS 1 b"); /* in the past: deleted */
    expect_int(C, 0, "HEXISTS h b");
    expect_reply(C, "[nil]", "HGETEX nokey EX 10 FIELDS 1 a");
    expect_error(C, "ERR invalid expire time in 'hgetex' command", "HGETEX h EX -1 FIELDS 1 a");
    expect_error(C, ERR_SYNTAX, "HGETEX h EX 10 PX 10 FIELDS 1 a");
    expect_error(C, ERR_SYNTAX, "HGETEX h KEEPTTL FIELDS 1 a");
    expect_error(C, ERR_NUMFIELDS, "HGETEX h FIELDS 2 a");
    expect_int(C, 1, "HSET h c 3");
    expect_reply(C, "[\"3\"]", "HGETEX h EX 0 FIELDS 1 c"); /* 0: deleted at once */
    expect_int(C, 0, "HEXISTS h c");
    expect_reply(C, "[\"1\"]", "HGETEX h EXAT 1 FIELDS 1 a");
    expect_int(C, 0, "EXISTS h");
}
END_TEST

START_TEST(test_hsetex) {
    expect_int(C, 1, "HSETEX h FIELDS 2 a 1 b 2");
    expect_reply(C, "[:-1]", "HTTL h FIELDS 1 a");
    expect_int(C, 1, "HSETEX h EX 100 FIELDS 1 a 10");
    ttl_in_range(99, 100, "HTTL h FIELDS 1 a");
    expect_int(C, 1, "HSETEX h KEEPTTL FIELDS 1 a 11");
    ttl_in_range(99, 100, "HTTL h FIELDS 1 a");
    expect_bulk(C, "11", "HGET h a");
    expect_int(C, 1, "HSETEX h FIELDS 1 a 12"); /* no KEEPTTL: the TTL goes */
    expect_reply(C, "[:-1]", "HTTL h FIELDS 1 a");
    expect_int(C, 0, "HSETEX h FNX FIELDS 2 a 1 new 1");
    expect_int(C, 0, "HEXISTS h new");
    expect_int(C, 1, "HSETEX h FNX FIELDS 1 new 1");
    expect_int(C, 0, "HSETEX h FXX FIELDS 2 a 1 zz 1");
    expect_int(C, 1, "HSETEX h FXX PX 50000 FIELDS 2 a 1 new 2");
    expect_int(C, 0, "HSETEX h NX FIELDS 1 a 1");
    expect_int(C, 0, "HSETEX nokey XX FIELDS 1 a 1");
    expect_int(C, 0, "EXISTS nokey");
    expect_int(C, 0, "HSETEX nokey FXX FIELDS 1 a 1");
    expect_int(C, 0, "EXISTS nokey");
    expect_error(C, ERR_SYNTAX, "HSETEX h EX 10 KEEPTTL FIELDS 1 a 1");
    expect_error(C, ERR_SYNTAX, "HSETEX h FNX FXX FIELDS 1 a 1");
    expect_error(C, ERR_SYNTAX, "HSETEX h PERSIST FIELDS 1 a 1");
    expect_error(C, ERR_NUMFIELDS, "HSETEX h FIELDS 2 a 1");
    expect_error(C, "ERR invalid expire time in 'hsetex' command", "HSETEX h PX -1 FIELDS 1 a 1");
    expect_int(C, 1, "HSETEX h PX 100 FIELDS 1 short 1");
    it_sleep_ms(150);
    expect_int(C, 0, "HEXISTS h short");
    expect_int(C, 1, "HSETEX h PXAT 1 FIELDS 2 a x new y"); /* past: deletes */
    expect_int(C, 1, "HLEN h");
    expect_int(C, 1, "HSETEX h EX 0 FIELDS 2 b x zz y"); /* 0 too; 1 though zz is absent */
    expect_int(C, 0, "EXISTS h");
    expect_int(C, 1, "HSETEX h EX 0 FIELDS 1 a x"); /* no key: nothing created */
    expect_int(C, 0, "EXISTS h");
}
END_TEST

START_TEST(test_hgetdel) {
    expect_int(C, 3, "HSET h a 1 b 2 c 3");
    expect_reply(C, "[\"1\",nil,\"2\"]", "HGETDEL h FIELDS 3 a zz b");
    expect_int(C, 1, "HLEN h");
    expect_reply(C, "[\"3\"]", "HGETDEL h FIELDS 1 c");
    expect_int(C, 0, "EXISTS h");
    expect_reply(C, "[nil]", "HGETDEL nokey FIELDS 1 a");
    expect_error(C, ERR_NUMFIELDS, "HGETDEL h FIELDS 2 a");
}
END_TEST

START_TEST(test_resp3_ttl_replies) {
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "HSET", "h", "a", "1", NULL);
    expect_raw(r, ":1");
    it_raw_cmd(r, "HEXPIRE", "h", "100", "FIELDS", "2", "a", "b", NULL);
    expect_raw(r, "[:1,:-2]");
    it_raw_cmd(r, "HGETEX", "h", "FIELDS", "2", "a", "b", NULL);
    expect_raw(r, "[\"1\",_]");
}
END_TEST

START_TEST(test_copy_rename_keep_field_ttls) {
    expect_int(C, 2, "HSET h a 1 b 2");
    expect_reply(C, "[:1]", "HPEXPIRE h 100 FIELDS 1 a");
    expect_int(C, 1, "COPY h h2");
    ttl_in_range(1, 100, "HPTTL h2 FIELDS 1 a");
    expect_ok(C, "RENAME h h3");
    it_sleep_ms(150);
    expect_reply(C, "[nil,\"2\"]", "HMGET h2 a b");
    expect_reply(C, "[nil,\"2\"]", "HMGET h3 a b");
}
END_TEST

/* Hashes reaching a new name (RENAME, COPY, MOVE, SWAPDB, RESTORE) are
 * expired by the cron with no command touching their fields: each holds
 * only fields with a TTL, so the key goes once they do (EXISTS does not
 * look at fields). */
START_TEST(test_active_expiry_new_names) {
    const char *keys[] = {"ren", "cp", "mv", "sw", "rs"};
    for (size_t i = 0; i < 5; i++) {
        expect_int(C, 1, it_fmt("HSET %s a 1", keys[i]));
        expect_reply(C, "[:1]", it_fmt("HPEXPIRE %s 200 FIELDS 1 a", keys[i]));
    }
    redisReply *dump = it_cmd(C, "DUMP rs");
    if (dump->type == REDIS_REPLY_STRING) {
        const char *argv[] = {"RESTORE", "rs2", "0", dump->str};
        size_t lens[] = {7, 3, 1, dump->len};
        ck_assert_int_eq(it_cmd_argv(C, 4, argv, lens)->type, REDIS_REPLY_STATUS);
    }
    expect_ok(C, "RENAME ren ren2");
    expect_int(C, 1, "COPY cp cp2");
    expect_int(C, 1, "MOVE mv 1");
    expect_ok(C, "SWAPDB 0 2");
    /* now db 2 holds ren2, cp, cp2, rs(2) and sw; db 1 holds mv */
    expect_ok(C, "SELECT 2");
    it_wait_until(it_cmd(C, "DBSIZE")->integer == 0, 3000);
    expect_ok(C, "SELECT 1");
    it_wait_until(it_cmd(C, "EXISTS mv")->integer == 0, 3000);
    expect_ok(C, "SELECT 0");
    ck_assert_int_ge(it_info_int(C, "stats", "expired_fields"), 5);
}
END_TEST

/* INFO expired_fields: fields gone by lazy and active expiry and those a
 * time already past removes; CONFIG RESETSTAT clears it. */
START_TEST(test_info_expired_fields) {
    expect_ok(C, "CONFIG RESETSTAT");
    ck_assert_int_eq(it_info_int(C, "stats", "expired_fields"), 0);
    expect_int(C, 4, "HSET h a 1 b 2 c 3 d 4");
    expect_reply(C, "[:2,:2,:-2]", "HEXPIRE h 0 FIELDS 3 a b zz");
    ck_assert_int_eq(it_info_int(C, "stats", "expired_fields"), 2);
    expect_reply(C, "[\"3\"]", "HGETEX h PXAT 1 FIELDS 1 c");
    ck_assert_int_eq(it_info_int(C, "stats", "expired_fields"), 3);
    expect_int(C, 1, "HSETEX h EX 0 FIELDS 2 zz 1 yy 2"); /* Valkey counts each field named */
    ck_assert_int_eq(it_info_int(C, "stats", "expired_fields"), 5);
    expect_reply(C, "[:1]", "HPEXPIRE h 50 FIELDS 1 d");
    expect_int(C, 2, "HSET other x 1 y 2");
    expect_reply(C, "[:1]", "HPEXPIRE other 50 FIELDS 1 x");
    it_wait_until(it_info_int(C, "stats", "expired_fields") == 7, 3000); /* the cron's */
    expect_int(C, 0, "EXISTS h");
    expect_int(C, 1, "HSET other z 3");
    expect_reply(C, "[:1]", "HPEXPIRE other 1 FIELDS 1 z");
    it_sleep_ms(20);
    expect_int(C, 1, "HLEN other"); /* lazy, if the cron did not get there first */
    ck_assert_int_eq(it_info_int(C, "stats", "expired_fields"), 8);
    expect_ok(C, "CONFIG RESETSTAT");
    ck_assert_int_eq(it_info_int(C, "stats", "expired_fields"), 0);
}
END_TEST

static Suite *hash_suite(void) {
    Suite *s = suite_create("it_hash");
    TCase *tc = it_tcase(s, "hash");
    tcase_add_test(tc, test_hset_hget);
    tcase_add_test(tc, test_hdel_deletes_empty_key);
    tcase_add_test(tc, test_getall_keys_vals);
    tcase_add_test(tc, test_wrongtype);
    tcase_add_test(tc, test_hincrby);
    tcase_add_test(tc, test_hincrbyfloat);
    tcase_add_test(tc, test_hincrbyfloat_errors);
    tcase_add_test(tc, test_encodings_and_config);
    tcase_add_test(tc, test_hrandfield);
    tcase_add_test(tc, test_hrandfield_huge_count);
    tcase_add_test(tc, test_hscan);
    tcase_add_test(tc, test_hexpire_codes);
    tcase_add_test(tc, test_hexpire_errors);
    tcase_add_test(tc, test_field_expiry_real_time);
    tcase_add_test(tc, test_field_expiry_active);
    tcase_add_test(tc, test_hset_clears_ttl_hincrby_keeps);
    tcase_add_test(tc, test_hgetex);
    tcase_add_test(tc, test_hsetex);
    tcase_add_test(tc, test_hgetdel);
    tcase_add_test(tc, test_resp3_ttl_replies);
    tcase_add_test(tc, test_copy_rename_keep_field_ttls);
    tcase_add_test(tc, test_active_expiry_new_names);
    tcase_add_test(tc, test_info_expired_fields);
    return s;
}

int main(void) {
    return it_run(hash_suite());
}
