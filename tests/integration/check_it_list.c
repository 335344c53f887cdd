/* check_it_list.c -- the list commands against a real keel-server: LPUSH
 * RPUSH LPUSHX RPUSHX LINSERT LLEN LINDEX LSET LRANGE LTRIM LPOP RPOP LREM
 * LPOS RPOPLPUSH LMOVE LMPOP and the blocking forms (BLPOP BRPOP
 * BRPOPLPUSH BLMOVE BLMPOP) with Valkey 8.0.1's replies and errors,
 * RESP2 and RESP3 nulls, WRONGTYPE, extreme indexes and counts, both
 * encodings (OBJECT ENCODING, CONFIG SET list-max-listpack-size), large
 * elements, DEBUG QUICKLIST-PACKED-THRESHOLD, list-compress-depth (memory,
 * reads, COPY) and DEBUG OBJECT's quicklist fields. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define ERR_NOT_INT "ERR value is not an integer or out of range"
#define ERR_SYNTAX "ERR syntax error"
#define ERR_WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"
#define ERR_LONG_RANGE                                                                             \
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"

static it_raw *raw(int resp3) {
    return resp3 ? it_raw_connect_resp3(S) : it_raw_connect(S);
}

START_TEST(test_push_range_len) {
    expect_int(C, 3, "RPUSH l a b c");
    expect_int(C, 5, "LPUSH l y z");
    expect_reply(C, "[\"z\",\"y\",\"a\",\"b\",\"c\"]", "LRANGE l 0 -1");
    expect_int(C, 5, "LLEN l");
    expect_int(C, 0, "LLEN nosuch");
    expect_int(C, 0, "LPUSHX nosuch a");
    expect_int(C, 0, "RPUSHX nosuch a");
    expect_int(C, 0, "EXISTS nosuch");
    expect_int(C, 6, "LPUSHX l x");
    expect_int(C, 8, "RPUSHX l 1 -2");
    expect_reply(C, "[\"x\",\"z\",\"y\",\"a\",\"b\",\"c\",\"1\",\"-2\"]", "LRANGE l 0 -1");
    expect_status(C, "list", "TYPE l");
    expect_bulk(C, "listpack", "OBJECT ENCODING l");
}
END_TEST

/* Reads count keyspace hits and misses, writes do not (as Valkey). */
START_TEST(test_hits_misses) {
    long long hits = it_info_int(C, "stats", "keyspace_hits");
    long long misses = it_info_int(C, "stats", "keyspace_misses");
    expect_int(C, 1, "RPUSH l a");
    expect_int(C, 2, "LPUSH l b");
    expect_bulk(C, "b", "LPOP l");
    expect_int(C, 1, "LLEN l");
    expect_int(C, 0, "LLEN nosuch");
    expect_nil(C, "LINDEX nosuch 0");
    expect_reply(C, "[\"a\"]", "LRANGE l 0 -1");
    ck_assert_int_eq(it_info_int(C, "stats", "keyspace_hits"), hits + 2);
    ck_assert_int_eq(it_info_int(C, "stats", "keyspace_misses"), misses + 2);
}
END_TEST

START_TEST(test_lrange_extremes) {
    expect_int(C, 3, "RPUSH l a b c");
    expect_reply(C, "[\"a\",\"b\",\"c\"]", "LRANGE l -100 100");
    expect_reply(C, "[]", "LRANGE l 3 10");
    expect_reply(C, "[]", "LRANGE l 2 1");
    expect_reply(C, "[]", "LRANGE l -1 -2");
    expect_reply(C, "[\"c\"]", "LRANGE l -1 -1");
    expect_reply(C, "[\"a\"]", "LRANGE l -9223372036854775808 0");
    expect_reply(C, "[\"c\"]", "LRANGE l 2 9223372036854775807");
    expect_reply(C, "[]", "LRANGE nosuch 0 -1");
    expect_error(C, ERR_NOT_INT, "LRANGE l 0 9223372036854775808");
    expect_error(C, ERR_NOT_INT, "LRANGE l x 1");
}
END_TEST

START_TEST(test_lindex_lset) {
    expect_int(C, 3, "RPUSH l a b 7");
    expect_bulk(C, "a", "LINDEX l 0");
    expect_bulk(C, "7", "LINDEX l -1");
    expect_bulk(C, "a", "LINDEX l -3");
    expect_nil(C, "LINDEX l 3");
    expect_nil(C, "LINDEX l -4");
    expect_nil(C, "LINDEX l 9223372036854775807");
    expect_nil(C, "LINDEX l -9223372036854775808");
    expect_nil(C, "LINDEX nosuch 0");
    expect_error(C, ERR_NOT_INT, "LINDEX l x");
    expect_ok(C, "LSET l 1 B");
    expect_ok(C, "LSET l -1 8");
    expect_reply(C, "[\"a\",\"B\",\"8\"]", "LRANGE l 0 -1");
    expect_error(C, "ERR index out of range", "LSET l 3 x");
    expect_error(C, "ERR index out of range", "LSET l -4 x");
    expect_error(C, "ERR no such key", "LSET nosuch 0 x");
    expect_error(C, ERR_NOT_INT, "LSET l x y");
}
END_TEST

START_TEST(test_linsert) {
    expect_int(C, 3, "RPUSH l a b c");
    expect_int(C, 4, "LINSERT l BEFORE b x");
    expect_int(C, 5, "LINSERT l after c y");
    expect_int(C, -1, "LINSERT l before zz q");
    expect_int(C, 0, "LINSERT nosuch before a b");
    expect_error(C, ERR_SYNTAX, "LINSERT l middle a b");
    expect_reply(C, "[\"a\",\"x\",\"b\",\"c\",\"y\"]", "LRANGE l 0 -1");
}
END_TEST

START_TEST(test_ltrim) {
    expect_int(C, 5, "RPUSH l a b c d e");
    expect_ok(C, "LTRIM l 1 -2");
    expect_reply(C, "[\"b\",\"c\",\"d\"]", "LRANGE l 0 -1");
    expect_ok(C, "LTRIM l -100 100");
    expect_int(C, 3, "LLEN l");
    expect_ok(C, "LTRIM nosuch 0 1");
    expect_ok(C, "LTRIM l 2 1");
    expect_int(C, 0, "EXISTS l");
    expect_error(C, ERR_NOT_INT, "LTRIM l a 1");
}
END_TEST

START_TEST(test_pop_count_resp2) {
    expect_int(C, 4, "RPUSH l a b c d");
    expect_bulk(C, "a", "LPOP l");
    expect_bulk(C, "d", "RPOP l");
    expect_reply(C, "[]", "LPOP l 0");
    expect_reply(C, "[\"c\",\"b\"]", "RPOP l 5");
    expect_int(C, 0, "EXISTS l");
    expect_nil(C, "LPOP l");
    expect_int(C, 2, "RPUSH l a b");
    expect_reply(C, "[\"a\",\"b\"]", "LPOP l 9223372036854775807");
    expect_error(C, "ERR value is out of range, must be positive", "LPOP l -1");
    expect_error(C, "ERR value is out of range, must be positive", "LPOP l x");
    expect_error(C, "ERR value is out of range, must be positive", "LPOP l 9223372036854775808");
    expect_error(C, "ERR wrong number of arguments for 'lpop' command", "LPOP l 1 2");
    /* A missing key: nil bulk without COUNT, a null array with it. */
    it_raw *r = raw(0);
    it_raw_cmd(r, "LPOP", "nosuch", NULL);
    expect_raw(r, "nil");
    it_raw_cmd(r, "LPOP", "nosuch", "0", NULL);
    expect_raw(r, "*nil");
    it_raw_cmd(r, "RPOP", "nosuch", "3", NULL);
    expect_raw(r, "*nil");
}
END_TEST

START_TEST(test_nulls_resp3) {
    it_raw *r = raw(1);
    it_raw_cmd(r, "LPOP", "nosuch", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "LPOP", "nosuch", "2", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "LINDEX", "nosuch", "0", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "LPOS", "nosuch", "a", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "LMPOP", "1", "nosuch", "LEFT", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "LMOVE", "nosuch", "d", "LEFT", "LEFT", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "BLPOP", "nosuch", "0", NULL);
    it_raw_cmd(r, "RPUSH", "k", "a", "b", NULL);
    it_raw_cmd(r, "LPOP", "k", "0", NULL);
    it_raw_cmd(r, "LMPOP", "1", "k", "RIGHT", "COUNT", "5", NULL);
    /* BLPOP blocked until the RPUSH on its own connection can't happen:
     * the pipeline waits behind it. Unblock it from another client. */
    redisContext *c2 = it_connect(S);
    it_wait_until(it_info_int(c2, "clients", "blocked_clients") == 1, 5000);
    expect_int(c2, 1, "RPUSH nosuch v");
    expect_raw(r, "[\"nosuch\",\"v\"]");
    expect_raw(r, ":2");
    expect_raw(r, "[]");
    expect_raw(r, "[\"k\",[\"b\",\"a\"]]");
}
END_TEST

START_TEST(test_lrem) {
    expect_int(C, 7, "RPUSH l a b a c a b a");
    expect_int(C, 2, "LREM l 2 a");
    expect_reply(C, "[\"b\",\"c\",\"a\",\"b\",\"a\"]", "LRANGE l 0 -1");
    expect_int(C, 1, "LREM l -1 a");
    expect_reply(C, "[\"b\",\"c\",\"a\",\"b\"]", "LRANGE l 0 -1");
    expect_int(C, 2, "LREM l 0 b");
    expect_int(C, 0, "LREM l 0 zz");
    expect_int(C, 0, "LREM nosuch 0 a");
    expect_int(C, 1, "LREM l -9223372036854775807 a");
    expect_int(C, 1, "LREM l 0 c");
    expect_int(C, 0, "EXISTS l");
    expect_error(C, ERR_LONG_RANGE, "LREM l -9223372036854775808 a");
    expect_error(C, ERR_NOT_INT, "LREM l x a");
}
END_TEST

START_TEST(test_lpos) {
    expect_int(C, 8, "RPUSH l a b c 1 2 3 c c");
    expect_int(C, 2, "LPOS l c");
    expect_int(C, 6, "LPOS l c RANK 2");
    expect_int(C, 7, "LPOS l c RANK -1");
    expect_int(C, 6, "LPOS l c RANK -2");
    expect_reply(C, "[:2,:6]", "LPOS l c COUNT 2");
    expect_reply(C, "[:2,:6,:7]", "LPOS l c COUNT 0");
    expect_reply(C, "[:7,:6]", "LPOS l c RANK -1 COUNT 2");
    expect_reply(C, "[:6,:7]", "LPOS l c RANK 2 COUNT 0");
    expect_nil(C, "LPOS l c MAXLEN 2");
    expect_reply(C, "[:2]", "LPOS l c COUNT 0 MAXLEN 3");
    expect_int(C, 3, "LPOS l 1");
    expect_nil(C, "LPOS l zz");
    expect_reply(C, "[]", "LPOS l zz COUNT 1");
    expect_nil(C, "LPOS nosuch a");
    expect_reply(C, "[]", "LPOS nosuch a COUNT 1");
    expect_nil(C, "LPOS l c RANK 9223372036854775807");
    expect_error(C, ERR_LONG_RANGE, "LPOS l c RANK -9223372036854775808");
    expect_error_prefix(C, "ERR RANK can't be zero: use 1 to start from the first match",
                        "LPOS l c RANK 0");
    expect_error(C, "ERR COUNT can't be negative", "LPOS l c COUNT -1");
    expect_error(C, "ERR MAXLEN can't be negative", "LPOS l c MAXLEN -1");
    expect_error(C, ERR_SYNTAX, "LPOS l c RANK");
    expect_error(C, ERR_SYNTAX, "LPOS l c FOO 1");
}
END_TEST

START_TEST(test_moves) {
    expect_int(C, 3, "RPUSH src a b c");
    expect_bulk(C, "c", "RPOPLPUSH src dst");
    expect_bulk(C, "a", "LMOVE src dst LEFT RIGHT");
    expect_reply(C, "[\"c\",\"a\"]", "LRANGE dst 0 -1");
    expect_bulk(C, "b", "LMOVE src src RIGHT LEFT");
    expect_bulk(C, "b", "LMOVE src src LEFT RIGHT");
    expect_reply(C, "[\"b\"]", "LRANGE src 0 -1");
    expect_bulk(C, "b", "LMOVE src dst RIGHT LEFT");
    expect_int(C, 0, "EXISTS src");
    expect_nil(C, "LMOVE src dst LEFT LEFT");
    expect_nil(C, "RPOPLPUSH src dst");
    expect_error(C, ERR_SYNTAX, "LMOVE dst src UP LEFT");
    expect_error(C, ERR_SYNTAX, "LMOVE dst src LEFT DOWN");
    expect_ok(C, "SET str v");
    expect_error(C, ERR_WRONGTYPE, "LMOVE dst str LEFT LEFT");
    expect_error(C, ERR_WRONGTYPE, "RPOPLPUSH str dst");
    expect_reply(C, "[\"b\",\"c\",\"a\"]", "LRANGE dst 0 -1");
}
END_TEST

START_TEST(test_lmpop) {
    expect_int(C, 3, "RPUSH l2 a b c");
    expect_reply(C, "[\"l2\",[\"a\"]]", "LMPOP 2 l1 l2 LEFT");
    expect_reply(C, "[\"l2\",[\"c\",\"b\"]]", "LMPOP 2 l1 l2 RIGHT COUNT 10");
    expect_int(C, 0, "EXISTS l2");
    expect_nil(C, "LMPOP 2 l1 l2 LEFT");
    expect_error(C, "ERR numkeys should be greater than 0", "LMPOP 0 l LEFT");
    expect_error(C, "ERR numkeys should be greater than 0", "LMPOP -1 l LEFT");
    expect_error(C, "ERR numkeys should be greater than 0", "LMPOP x l LEFT");
    expect_error(C, ERR_SYNTAX, "LMPOP 2 l LEFT");
    expect_error(C, ERR_SYNTAX, "LMPOP 1 l MIDDLE");
    expect_error(C, ERR_SYNTAX, "LMPOP 1 l LEFT COUNT");
    expect_error(C, ERR_SYNTAX, "LMPOP 1 l LEFT COUNT 1 COUNT 1");
    expect_error(C, "ERR count should be greater than 0", "LMPOP 1 l LEFT COUNT 0");
    expect_error(C, "ERR count should be greater than 0", "LMPOP 1 l LEFT COUNT -1");
    expect_ok(C, "SET s v");
    expect_error(C, ERR_WRONGTYPE, "LMPOP 2 nosuch s LEFT");
}
END_TEST

START_TEST(test_wrongtype) {
    expect_ok(C, "SET s v");
    const char *cmds[] = {"LPUSH s a",
                          "RPUSH s a",
                          "LPUSHX s a",
                          "RPUSHX s a",
                          "LINSERT s BEFORE a b",
                          "LLEN s",
                          "LINDEX s 0",
                          "LSET s 0 a",
                          "LRANGE s 0 -1",
                          "LTRIM s 0 1",
                          "LPOP s",
                          "RPOP s 2",
                          "LREM s 0 a",
                          "LPOS s a",
                          "BLPOP s 0",
                          "BRPOP s 0",
                          "BLMOVE s d LEFT LEFT 0",
                          "BRPOPLPUSH s d 0",
                          "BLMPOP 0 1 s LEFT"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        expect_error(C, ERR_WRONGTYPE, cmds[i]);
    expect_int(C, 1, "RPUSH l a");
    expect_error(C, "WRONGTYPE Operation against a key holding the wrong kind of value", "GET l");
}
END_TEST

/* Both encodings: the conversion at list-max-listpack-size and back below
 * half of it, plain nodes for large elements, and every command on a
 * multi-node list. */
START_TEST(test_encodings) {
    expect_ok(C, "CONFIG SET list-max-listpack-size 4");
    expect_int(C, 4, "RPUSH l 1 2 3 4");
    expect_bulk(C, "listpack", "OBJECT ENCODING l");
    expect_int(C, 5, "RPUSH l 5");
    expect_bulk(C, "quicklist", "OBJECT ENCODING l");
    for (int i = 6; i <= 40; i++)
        expect_int(C, i, "RPUSH l %d", i);
    expect_int(C, 41, "LINSERT l BEFORE 20 x");
    expect_ok(C, "LSET l 0 first");
    expect_bulk(C, "x", "LINDEX l 19");
    expect_int(C, 19, "LPOS l x");
    expect_int(C, 1, "LREM l 1 x");
    expect_ok(C, "LTRIM l 0 2");
    expect_reply(C, "[\"first\",\"2\",\"3\"]", "LRANGE l 0 -1");
    expect_bulk(C, "quicklist", "OBJECT ENCODING l");
    expect_bulk(C, "3", "RPOP l");
    expect_bulk(C, "listpack", "OBJECT ENCODING l");
    /* A large element gets a node of its own. */
    expect_ok(C, "CONFIG SET list-max-listpack-size -1");
    char *big = it_alloc(5000);
    memset(big, 'q', 5000);
    expect_int(C, 3, "RPUSH l %b", big, (size_t)5000);
    expect_bulk(C, "quicklist", "OBJECT ENCODING l");
    expect_bulk_len(C, big, 5000, "LINDEX l -1");
    expect_int(C, 2, "LPOS l %b", big, (size_t)5000);
    expect_bulk_len(C, big, 5000, "RPOP l");
    expect_bulk(C, "listpack", "OBJECT ENCODING l");
    expect_ok(C, "CONFIG SET list-max-listpack-size -2");
}
END_TEST

START_TEST(test_packed_threshold) {
    it_server *srv = it_start("--enable-debug-command", "yes", NULL);
    redisContext *C = it_connect(srv);
    expect_ok(C, "DEBUG QUICKLIST-PACKED-THRESHOLD 10b");
    expect_int(C, 2, "RPUSH l short 0123456789abc");
    expect_bulk(C, "quicklist", "OBJECT ENCODING l");
    expect_bulk(C, "0123456789abc", "LINDEX l 1");
    expect_ok(C, "DEBUG QUICKLIST-PACKED-THRESHOLD 0");
    expect_error(C, "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
                 "DEBUG QUICKLIST-PACKED-THRESHOLD 5gb");
    expect_error(C, "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
                 "DEBUG QUICKLIST-PACKED-THRESHOLD abc");
}
END_TEST

/* A thousand pushes on a small node size, read back in both directions. */
START_TEST(test_many_nodes) {
    expect_ok(C, "CONFIG SET list-max-listpack-size 3");
    for (int i = 0; i < 1000; i++)
        expect_int(C, i + 1, "RPUSH l e%d", i);
    expect_bulk(C, "e500", "LINDEX l 500");
    expect_bulk(C, "e999", "LINDEX l -1");
    redisReply *r = it_cmd(C, "LRANGE l 0 -1");
    ck_assert_int_eq((int)r->elements, 1000);
    for (int i = 0; i < 1000; i++) {
        char want[16];
        snprintf(want, sizeof(want), "e%d", i);
        ck_assert_str_eq(r->element[i]->str, want);
    }
    expect_reply(C, "[\"e999\",\"e998\"]", "RPOP l 2");
    expect_int(C, 998, "LLEN l");
    expect_ok(C, "CONFIG SET list-max-listpack-size -2");
}
END_TEST

/* A compressible element of 200 bytes, distinct per i. */
static void compressible(char *buf, int i) {
    memset(buf, 'a' + i % 7, 200);
    snprintf(buf, 16, "elem-%06d", i);
    buf[11] = '-';
}

/* list-compress-depth 1: a long list of compressible elements takes far
 * less memory than the same list uncompressed, reads back identically in
 * both directions and through LINDEX, and so does its COPY; the depth set
 * later applies to the writes that follow. */
START_TEST(test_compress_depth) {
    char buf[200];
    expect_ok(C, "CONFIG SET list-compress-depth 0");
    for (int i = 0; i < 3000; i++) {
        compressible(buf, i);
        expect_int(C, i + 1, "RPUSH raw %b", buf, sizeof(buf));
    }
    expect_ok(C, "CONFIG SET list-compress-depth 1");
    expect_reply(C, "[\"list-compress-depth\",\"1\"]", "CONFIG GET list-compress-depth");
    for (int i = 0; i < 3000; i++) {
        compressible(buf, i);
        expect_int(C, i + 1, "RPUSH lzf %b", buf, sizeof(buf));
    }
    redisReply *r = it_cmd(C, "MEMORY USAGE raw SAMPLES 0");
    long long raw_bytes = r->integer;
    r = it_cmd(C, "MEMORY USAGE lzf SAMPLES 0");
    long long lzf_bytes = r->integer;
    ck_assert_int_gt(raw_bytes, 3000 * 200);
    ck_assert_msg(lzf_bytes * 4 < raw_bytes, "compressed %lld vs raw %lld", lzf_bytes, raw_bytes);
    expect_int(C, 1, "COPY lzf lzf2");
    const char *keys[] = {"lzf", "lzf2"};
    for (int k = 0; k < 2; k++) {
        r = it_cmd(C, "LRANGE %s 0 -1", keys[k]);
        ck_assert_int_eq((int)r->elements, 3000);
        for (int i = 0; i < 3000; i++) {
            compressible(buf, i);
            ck_assert_int_eq((int)r->element[i]->len, 200);
            ck_assert(memcmp(r->element[i]->str, buf, 200) == 0);
        }
        r = it_cmd(C, "LRANGE %s -3000 -2999", keys[k]);
        compressible(buf, 0);
        ck_assert(r->elements == 2 && memcmp(r->element[0]->str, buf, 200) == 0);
        compressible(buf, 1500);
        expect_bulk_len(C, buf, 200, "LINDEX %s 1500", keys[k]);
        expect_int(C, 1500, "LPOS %s %b", keys[k], buf, sizeof(buf));
    }
    r = it_cmd(C, "MEMORY USAGE lzf2 SAMPLES 0");
    ck_assert_int_lt(r->integer * 4, raw_bytes);
    /* Writes in the middle of the compressed list. */
    expect_ok(C, "LSET lzf 1000 changed");
    expect_int(C, 3001, "LINSERT lzf AFTER changed inserted");
    expect_reply(C, "[\"changed\",\"inserted\"]", "LRANGE lzf 1000 1001");
    expect_int(C, 1, "LREM lzf 0 inserted");
    expect_int(C, 3000, "LLEN lzf");
    /* Writes to the uncompressed list compress the nodes they touch. */
    compressible(buf, 7);
    for (int i = 0; i < 300; i++)
        expect_int(C, 3001 + i, "LPUSH raw %b", buf, sizeof(buf));
    r = it_cmd(C, "MEMORY USAGE raw SAMPLES 5");
    ck_assert_int_lt(r->integer, raw_bytes);
    expect_ok(C, "CONFIG SET list-compress-depth 0");
}
END_TEST

/* The number after " name:" in a DEBUG OBJECT line, or -1000. */
static long long debug_field(const char *line, const char *name) {
    char key[64];
    snprintf(key, sizeof(key), " %s:", name);
    const char *p = strstr(line, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1000;
}

/* DEBUG OBJECT's quicklist fields, as Valkey's. */
START_TEST(test_debug_object_quicklist) {
    it_server *srv = it_start("--enable-debug-command", "yes", NULL);
    redisContext *C = it_connect(srv);
    char buf[200];
    expect_ok(C, "CONFIG SET list-compress-depth 1");
    for (int i = 0; i < 1000; i++) {
        compressible(buf, i);
        expect_int(C, i + 1, "RPUSH l %b", buf, sizeof(buf));
    }
    redisReply *r = it_cmd(C, "DEBUG OBJECT l");
    ck_assert_ptr_nonnull(strstr(r->str, "encoding:quicklist"));
    long long nodes = debug_field(r->str, "ql_nodes");
    ck_assert_int_gt(nodes, 10);
    ck_assert_ptr_nonnull(strstr(r->str, " ql_avg_node:"));
    ck_assert_int_eq(debug_field(r->str, "ql_listpack_max"), -2);
    ck_assert_int_eq(debug_field(r->str, "ql_compressed"), 1);
    ck_assert_int_ge(debug_field(r->str, "ql_uncompressed_size"), 1000 * 200);
    r = it_cmd(C, "DEBUG OBJECT l fast");
    ck_assert_ptr_null(strstr(r->str, "ql_uncompressed_size"));
    ck_assert_ptr_nonnull(strstr(r->str, "ql_nodes:"));
    expect_int(C, 1, "RPUSH small a");
    r = it_cmd(C, "DEBUG OBJECT small");
    ck_assert_ptr_null(strstr(r->str, "ql_nodes"));
}
END_TEST

/* The blocking forms when something is there, timeouts, and their
 * errors. */
START_TEST(test_blocking_immediate) {
    expect_int(C, 2, "RPUSH l a b");
    expect_reply(C, "[\"l\",\"a\"]", "BLPOP nosuch l 0");
    expect_reply(C, "[\"l\",\"b\"]", "BRPOP l 0.01");
    expect_int(C, 0, "EXISTS l");
    expect_int(C, 3, "RPUSH l a b c");
    expect_bulk(C, "c", "BRPOPLPUSH l d 0");
    expect_bulk(C, "a", "BLMOVE l d LEFT RIGHT 0");
    expect_reply(C, "[\"l\",[\"b\"]]", "BLMPOP 0 2 nosuch l LEFT COUNT 3");
    expect_reply(C, "[\"c\",\"a\"]", "LRANGE d 0 -1");
    expect_nil(C, "BLPOP nosuch 0.01");
    expect_nil(C, "BLMOVE nosuch d LEFT LEFT 0.01");
    expect_nil(C, "BLMPOP 0.01 1 nosuch LEFT");
    expect_error(C, "ERR timeout is negative", "BLPOP l -1");
    expect_error(C, "ERR timeout is not a float or out of range", "BLPOP l abc");
    expect_error(C, ERR_SYNTAX, "BLMOVE l d UP LEFT 0");
    expect_error(C, "ERR numkeys should be greater than 0", "BLMPOP 0 0 l LEFT");
    /* Inside MULTI nothing blocks: the null comes at once. */
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "BLPOP nosuch 0");
    expect_status(C, "QUEUED", "BLMOVE nosuch d LEFT LEFT 0");
    expect_reply(C, "[nil,nil]", "EXEC");
}
END_TEST

/* Clients wait and are served in the order they blocked. */
START_TEST(test_blocking_wakeups) {
    redisContext *b1 = it_connect(S), *b2 = it_connect(S);
    ck_assert_int_eq(redisAppendCommand(b1, "BLPOP q 5"), REDIS_OK);
    ck_assert_int_eq(redisBufferWrite(b1, &(int){0}), REDIS_OK);
    it_wait_until(it_info_int(C, "clients", "blocked_clients") == 1, 5000);
    ck_assert_int_eq(redisAppendCommand(b2, "BLMOVE q dst RIGHT LEFT 5"), REDIS_OK);
    ck_assert_int_eq(redisBufferWrite(b2, &(int){0}), REDIS_OK);
    it_wait_until(it_info_int(C, "clients", "blocked_clients") == 2, 5000);
    expect_int(C, 2, "RPUSH q x y");
    void *rep;
    ck_assert_int_eq(redisGetReply(b1, &rep), REDIS_OK);
    char buf[256];
    ck_assert_str_eq(it_render(rep, buf, sizeof(buf)), "[\"q\",\"x\"]");
    freeReplyObject(rep);
    ck_assert_int_eq(redisGetReply(b2, &rep), REDIS_OK);
    ck_assert_str_eq(it_render(rep, buf, sizeof(buf)), "\"y\"");
    freeReplyObject(rep);
    expect_reply(C, "[\"y\"]", "LRANGE dst 0 -1");
    expect_int(C, 0, "EXISTS q");
    /* A timeout answers the null. */
    long long t0 = it_mstime();
    expect_nil(C, "BRPOP q 0.2");
    ck_assert_int_ge(it_mstime() - t0, 150);
}
END_TEST

Suite *list_suite(void) {
    Suite *s = suite_create("list");
    TCase *tc = it_tcase(s, "list");
    tcase_add_test(tc, test_push_range_len);
    tcase_add_test(tc, test_hits_misses);
    tcase_add_test(tc, test_lrange_extremes);
    tcase_add_test(tc, test_lindex_lset);
    tcase_add_test(tc, test_linsert);
    tcase_add_test(tc, test_ltrim);
    tcase_add_test(tc, test_pop_count_resp2);
    tcase_add_test(tc, test_lrem);
    tcase_add_test(tc, test_lpos);
    tcase_add_test(tc, test_moves);
    tcase_add_test(tc, test_lmpop);
    tcase_add_test(tc, test_wrongtype);
    tcase_add_test(tc, test_encodings);
    tcase_add_test(tc, test_many_nodes);
    tcase_add_test(tc, test_compress_depth);
    tcase_add_test(tc, test_blocking_immediate);
    TCase *td = it_tcase_bare(s, "debug");
    tcase_add_test(td, test_packed_threshold);
    tcase_add_test(td, test_debug_object_quicklist);
    TCase *tb = it_tcase(s, "blocking");
    tcase_add_test(tb, test_nulls_resp3);
    tcase_add_test(tb, test_blocking_wakeups);
    return s;
}

int main(void) {
    return it_run(list_suite());
}
