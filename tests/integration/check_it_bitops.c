/* check_it_bitops.c -- the bitmap commands (SETBIT GETBIT BITCOUNT BITPOS
 * BITOP BITFIELD BITFIELD_RO), LCS and the conditional string commands
 * (SET IFEQ, DELIFEQ, MSETEX) against a real keel-server: Valkey's replies
 * and errors, the proto-max-bulk-len bound on offsets and on LCS's table,
 * integer-encoded values turned into bytes, RESP2 and RESP3 shapes, and
 * the keyspace notifications each write sends (and the ones a write that
 * changes nothing does not). */
#include "harness.h"

#include <string.h>

#define ERR_OFFSET "ERR bit offset is not an integer or out of range"
#define ERR_SYNTAX "ERR syntax error"
#define ERR_WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"
#define ERR_BF_TYPE                                                                                \
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but "    \
    "i64 is."

/* ---- SETBIT, GETBIT ---- */

START_TEST(test_setbit_getbit) {
    expect_int(C, 0, "SETBIT k 7 1");
    expect_bulk_len(C, "\x01", 1, "GET k");
    expect_int(C, 1, "SETBIT k 7 1");
    expect_int(C, 1, "GETBIT k 7");
    expect_int(C, 0, "GETBIT k 6");
    expect_int(C, 0, "GETBIT k 1000");
    expect_int(C, 0, "GETBIT nokey 0");
    /* The string grows with zero bytes to the byte holding the bit. */
    expect_int(C, 0, "SETBIT k 100 1");
    expect_int(C, 13, "STRLEN k");
    expect_int(C, 1, "SETBIT k 7 0");
    expect_bulk_len(C, "\0\0\0\0\0\0\0\0\0\0\0\0\x08", 13, "GET k");
    expect_error(C, "ERR bit is not an integer or out of range", "SETBIT k 0 2");
    expect_error(C, "ERR bit is not an integer or out of range", "SETBIT k 0 -1");
    expect_error(C, ERR_OFFSET, "SETBIT k -1 1");
    expect_error(C, ERR_OFFSET, "SETBIT k abc 1");
    expect_error(C, ERR_OFFSET, "GETBIT k #1");
    expect_int(C, 1, "LPUSH l a");
    expect_error(C, ERR_WRONGTYPE, "SETBIT l 0 1");
    expect_error(C, ERR_WRONGTYPE, "GETBIT l 0");
}
END_TEST

/* An integer-encoded value is read as its digits and becomes bytes when
 * a bit of it is written. */
START_TEST(test_setbit_integer_value) {
    expect_ok(C, "SET n 12345");
    expect_int(C, 0, "GETBIT n 0");
    expect_int(C, 1, "GETBIT n 2"); /* '1' is 0x31 */
    expect_int(C, 0, "SETBIT n 0 1");
    expect_bulk(C,
                "\xb1"
                "2345",
                "GET n");
    expect_error(C, "ERR value is not an integer or out of range", "INCR n");
    expect_ok(C, "SET m 7");
    expect_int(C, 5, "BITCOUNT m"); /* '7' is 0x37 */
    expect_int(C, 0, "SETBIT m 20 0");
    expect_int(C, 3, "STRLEN m");
}
END_TEST

/* Offsets stop below proto-max-bulk-len bytes; the farthest one allowed
 * makes a string of exactly that size. */
START_TEST(test_offset_bound) {
    expect_ok(C, "CONFIG SET proto-max-bulk-len 1048576");
    expect_error(C, ERR_OFFSET, "SETBIT big 8388608 1");
    expect_error(C, ERR_OFFSET, "GETBIT big 8388608");
    expect_int(C, 0, "EXISTS big");
    expect_int(C, 0, "SETBIT big 8388607 1");
    expect_int(C, 1048576, "STRLEN big");
    expect_int(C, 1, "BITCOUNT big");
    expect_int(C, 8388607, "BITPOS big 1");
    expect_error(C, ERR_OFFSET, "BITFIELD big GET u8 #1048576");
    expect_reply(C, "[:1]", "BITFIELD big GET u8 #1048575");
    expect_error(C, ERR_OFFSET, "SETBIT big 99999999999999999999 1");
    /* "#n" times the width must not overflow. */
    expect_error(C, ERR_OFFSET, "BITFIELD big GET i64 #9223372036854775807");
    expect_ok(C, "CONFIG SET proto-max-bulk-len 536870912");
}
END_TEST

/* ---- BITCOUNT, BITPOS ---- */

START_TEST(test_bitcount_bitpos) {
    expect_ok(C, "SET s %b", "\xff\xf0\x00", (size_t)3);
    expect_int(C, 12, "BITCOUNT s");
    expect_int(C, 8, "BITCOUNT s 0 0");
    expect_int(C, 4, "BITCOUNT s 1 -1");
    expect_int(C, 0, "BITCOUNT s -1 -2");
    expect_int(C, 5, "BITCOUNT s 7 11 BIT");
    expect_int(C, 1, "BITCOUNT s 11 11 bit");
    expect_int(C, 0, "BITCOUNT s 12 100 BIT");
    expect_int(C, 0, "BITCOUNT nokey");
    expect_error(C, ERR_SYNTAX, "BITCOUNT s 0 1 BITS");
    expect_error(C, ERR_SYNTAX, "BITCOUNT s 0 1 BIT extra");
    expect_error(C, "ERR value is not an integer or out of range", "BITCOUNT s a 1");
    expect_int(C, 12, "BITPOS s 0");
    expect_int(C, 0, "BITPOS s 1");
    expect_int(C, 8, "BITPOS s 1 1");
    expect_int(C, 12, "BITPOS s 0 1 1");
    expect_int(C, 3, "BITPOS s 1 3 10 BIT");
    /* Only ones in an explicit range: no clear bit there. */
    expect_int(C, -1, "BITPOS s 0 0 0");
    expect_int(C, -1, "BITPOS s 0 0 7 BIT");
    /* Without an end, the string goes on with zeros. */
    expect_ok(C, "SET ones %b", "\xff\xff", (size_t)2);
    expect_int(C, 16, "BITPOS ones 0");
    expect_int(C, 16, "BITPOS ones 0 1");
    expect_int(C, -1, "BITPOS ones 0 1 -1");
    expect_int(C, -1, "BITPOS s 1 2");
    expect_int(C, 0, "BITPOS nokey 0");
    expect_int(C, -1, "BITPOS nokey 1");
    expect_error(C, "ERR The bit argument must be 1 or 0.", "BITPOS s 2");
}
END_TEST

/* ---- BITOP ---- */

START_TEST(test_bitop) {
    expect_ok(C, "SET a %b", "\xf0\x0f\xff", (size_t)3);
    expect_ok(C, "SET b %b", "\x3c", (size_t)1);
    expect_int(C, 3, "BITOP AND d a b");
    expect_bulk_len(C, "\x30\x00\x00", 3, "GET d");
    expect_int(C, 3, "BITOP or d a b");
    expect_bulk_len(C, "\xfc\x0f\xff", 3, "GET d");
    expect_int(C, 3, "BITOP XOR d a b nokey");
    expect_bulk_len(C, "\xcc\x0f\xff", 3, "GET d");
    expect_int(C, 1, "BITOP NOT d b");
    expect_bulk_len(C, "\xc3", 1, "GET d");
    /* The destination may be a source; the result replaces it and its TTL. */
    expect_int(C, 1, "EXPIRE d 100");
    expect_int(C, 3, "BITOP OR d d a");
    expect_int(C, -1, "TTL d");
    /* An empty result deletes the destination. */
    expect_int(C, 0, "BITOP AND d nokey1 nokey2");
    expect_int(C, 0, "EXISTS d");
    expect_error(C, "ERR BITOP NOT must be called with a single source key.", "BITOP NOT d a b");
    expect_error(C, ERR_SYNTAX, "BITOP NAND d a b");
    expect_int(C, 1, "LPUSH l x");
    expect_error(C, ERR_WRONGTYPE, "BITOP AND d a l");
    expect_int(C, 0, "EXISTS d");
}
END_TEST

/* ---- BITFIELD, BITFIELD_RO ---- */

START_TEST(test_bitfield) {
    expect_reply(C, "[:0,:255]", "BITFIELD bf SET u8 0 255 GET u8 0");
    expect_reply(C, "[:-1,:0]", "BITFIELD bf GET i8 0 INCRBY i8 0 1");
    expect_reply(C, "[:127,nil,:-128]",
                 "BITFIELD bf OVERFLOW SAT INCRBY i8 0 200 OVERFLOW FAIL INCRBY i8 0 1 "
                 "OVERFLOW WRAP INCRBY i8 0 1");
    /* "#n" is the n-th field of the width. */
    expect_reply(C, "[:0,:258]", "BITFIELD bf SET u16 #1 258 GET u16 16");
    expect_int(C, 4, "STRLEN bf");
    expect_reply(C, "[:9223372036854775807,:-9223372036854775808,:-9223372036854775808]",
                 "BITFIELD bf2 INCRBY i64 0 9223372036854775807 INCRBY i64 0 1 GET i64 0");
    /* Valkey 8.0.1's reading of a SET far below the minimum: an overflow
     * upwards, so SAT stores the maximum (found by comparing with Valkey). */
    expect_reply(C, "[:0,:127]",
                 "BITFIELD sat OVERFLOW SAT SET i8 0 -9223372036854775808 GET i8 0");
    expect_reply(C, "[:0,:4611686018427387903,:4611686018427387903,:-4611686018427387904]",
                 "BITFIELD sat OVERFLOW SAT SET i63 8 -4611686018427387905 GET i63 8 "
                 "SET i63 8 -4611686018427387904 GET i63 8");
    expect_reply(C, "[]", "BITFIELD bf");
    expect_reply(C, "[:0]", "BITFIELD nokey GET u63 1000");
    expect_int(C, 0, "EXISTS nokey");
    expect_error(C, ERR_BF_TYPE, "BITFIELD bf GET u64 0");
    expect_error(C, ERR_BF_TYPE, "BITFIELD bf GET I8 0");
    expect_error(C, ERR_BF_TYPE, "BITFIELD bf GET i65 0");
    expect_error(C, ERR_BF_TYPE, "BITFIELD bf GET u0 0");
    expect_error(C, "ERR Invalid OVERFLOW type specified", "BITFIELD bf OVERFLOW CLAMP");
    expect_error(C, ERR_SYNTAX, "BITFIELD bf GET u8");
    expect_error(C, ERR_SYNTAX, "BITFIELD bf FOO u8 0");
    expect_error(C, "ERR value is not an integer or out of range", "BITFIELD bf SET u8 0 x");
    expect_reply(C, "[:1]", "BITFIELD_RO bf GET u8 16");
    expect_error(C, "ERR BITFIELD_RO only supports the GET subcommand",
                 "BITFIELD_RO bf GET u8 0 SET u8 0 1");
    expect_int(C, 1, "LPUSH l x");
    expect_error(C, ERR_WRONGTYPE, "BITFIELD l GET u8 0");
    expect_error(C, ERR_WRONGTYPE, "BITFIELD l SET u8 0 1");
    /* A write that FAIL refuses still creates the key, zero-filled, as
     * Valkey's does. */
    expect_reply(C, "[nil]", "BITFIELD fresh OVERFLOW FAIL SET u2 0 7");
    expect_bulk_len(C, "\0", 1, "GET fresh");
}
END_TEST

/* ---- LCS ---- */

START_TEST(test_lcs) {
    expect_ok(C, "MSET a ohmytext b mynewtext");
    expect_bulk(C, "mytext", "LCS a b");
    expect_int(C, 6, "LCS a b LEN");
    expect_reply(C, "[\"matches\",[[[:4,:7],[:5,:8]],[[:2,:3],[:0,:1]]],\"len\",:6]",
                 "LCS a b IDX");
    expect_reply(C, "[\"matches\",[[[:4,:7],[:5,:8],:4],[[:2,:3],[:0,:1],:2]],\"len\",:6]",
                 "LCS a b IDX WITHMATCHLEN");
    expect_reply(C, "[\"matches\",[[[:4,:7],[:5,:8],:4]],\"len\",:6]",
                 "LCS a b IDX MINMATCHLEN 3 WITHMATCHLEN");
    expect_bulk(C, "", "LCS a nokey");
    expect_int(C, 0, "LCS nokey1 nokey2 LEN");
    expect_reply(C, "[\"matches\",[],\"len\",:0]", "LCS a nokey IDX");
    expect_ok(C, "SET n 12345");
    expect_ok(C, "SET m 2x4");
    expect_bulk(C, "24", "LCS n m");
    expect_error(C, "ERR If you want both the length and indexes, please just use IDX.",
                 "LCS a b LEN IDX");
    expect_error(C, ERR_SYNTAX, "LCS a b FOO");
    expect_error(C, ERR_SYNTAX, "LCS a b MINMATCHLEN");
    expect_int(C, 1, "LPUSH l x");
    expect_error(C, "ERR The specified keys must contain string values", "LCS a l");
}
END_TEST

/* The RESP3 shape of IDX: a map. */
START_TEST(test_lcs_resp3) {
    expect_ok(C, "MSET a ohmytext b mynewtext");
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "LCS", "a", "b", "IDX", "MINMATCHLEN", "4", NULL);
    expect_raw(r, "{\"matches\":[[[:4,:7],[:5,:8]]],\"len\"::6}");
}
END_TEST

/* The table is refused beyond proto-max-bulk-len bytes (4 bytes a cell). */
START_TEST(test_lcs_memory_guard) {
    expect_ok(C, "CONFIG SET proto-max-bulk-len 1048576");
    char *x = it_alloc(600);
    memset(x, 'x', 600);
    expect_ok(C, "SET a %b", x, (size_t)600);
    expect_ok(C, "SET b %b", x, (size_t)600);
    expect_error(C, "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
                 "LCS a b");
    /* 401 * 401 * 4 bytes fit. */
    expect_ok(C, "SET a %b", x, (size_t)400);
    expect_ok(C, "SET b %b", x, (size_t)400);
    expect_int(C, 400, "LCS a b LEN");
    expect_ok(C, "CONFIG SET proto-max-bulk-len 536870912");
}
END_TEST

/* ---- SET IFEQ, DELIFEQ, MSETEX ---- */

START_TEST(test_set_ifeq) {
    expect_ok(C, "SET k v1");
    expect_nil(C, "SET k v2 IFEQ nope");
    expect_bulk(C, "v1", "GET k");
    expect_ok(C, "SET k v2 IFEQ v1");
    expect_bulk(C, "v2", "GET k");
    /* With GET the old value is the reply whether or not it was set. */
    expect_bulk(C, "v2", "SET k v3 IFEQ nope GET");
    expect_bulk(C, "v2", "SET k v3 IFEQ v2 GET");
    expect_bulk(C, "v3", "GET k");
    /* A missing key is never set. */
    expect_nil(C, "SET nokey v IFEQ v");
    expect_nil(C, "SET nokey v IFEQ v GET");
    expect_int(C, 0, "EXISTS nokey");
    /* An integer-encoded value compares as its digits. */
    expect_ok(C, "SET n 100");
    expect_ok(C, "SET n 101 IFEQ 100");
    expect_ok(C, "SET k v4 IFEQ v3 EX 100");
    expect_int_range(C, 1, 100, "TTL k");
    expect_int(C, 1, "LPUSH l x");
    expect_error(C, ERR_WRONGTYPE, "SET l v IFEQ x");
    expect_error(C, ERR_WRONGTYPE, "SET l v IFEQ x GET");
    expect_error(C, ERR_SYNTAX, "SET k v IFEQ v4 NX");
    expect_error(C, ERR_SYNTAX, "SET k v XX IFEQ v4");
    expect_error(C, ERR_SYNTAX, "SET k v IFEQ");
    expect_error(C, ERR_SYNTAX, "SET k v IFEQ a IFEQ b");
}
END_TEST

START_TEST(test_delifeq) {
    expect_ok(C, "SET lock token1");
    expect_int(C, 0, "DELIFEQ lock token2");
    expect_int(C, 1, "EXISTS lock");
    expect_int(C, 1, "DELIFEQ lock token1");
    expect_int(C, 0, "EXISTS lock");
    expect_int(C, 0, "DELIFEQ lock token1");
    expect_ok(C, "SET n 42");
    expect_int(C, 1, "DELIFEQ n 42");
    expect_int(C, 1, "SADD s x");
    expect_error(C, ERR_WRONGTYPE, "DELIFEQ s x");
    expect_error(C, "ERR wrong number of arguments for 'delifeq' command", "DELIFEQ s");
}
END_TEST

START_TEST(test_msetex) {
    expect_int(C, 1, "MSETEX 2 k1 a k2 b EX 100");
    expect_reply(C, "[\"a\",\"b\"]", "MGET k1 k2");
    expect_int_range(C, 1, 100, "TTL k1");
    expect_int_range(C, 1, 100, "TTL k2");
    /* NX and XX hold for all the keys or none is set. */
    expect_int(C, 0, "MSETEX 2 k1 x k3 y NX");
    expect_int(C, 0, "EXISTS k3");
    expect_int(C, 1, "MSETEX 2 k3 x k4 y NX PX 100000");
    expect_int(C, 0, "MSETEX 2 k1 z k5 z XX");
    expect_bulk(C, "a", "GET k1");
    expect_int(C, 1, "MSETEX 2 k1 c k2 d XX KEEPTTL");
    expect_int_range(C, 1, 100, "TTL k1");
    /* Without a TTL option the keys lose theirs, as with MSET. */
    expect_int(C, 1, "MSETEX 1 k1 e");
    expect_int(C, -1, "TTL k1");
    /* A time already past deletes the keys. */
    expect_int(C, 1, "MSETEX 2 k1 f k9 g PXAT 1");
    expect_int(C, 0, "EXISTS k1 k9");
    expect_error(C, "ERR numkeys should be greater than 0", "MSETEX 0 k v");
    expect_error(C, "ERR wrong number of arguments for 'msetex' command", "MSETEX 2 k v");
    expect_error(C, "ERR value is not an integer or out of range", "MSETEX x k v");
    expect_error(C, ERR_SYNTAX, "MSETEX 1 k v GET");
    expect_error(C, ERR_SYNTAX, "MSETEX 1 k v NX XX");
    expect_error(C, ERR_SYNTAX, "MSETEX 1 k v EX 10 KEEPTTL");
    expect_error(C, "ERR invalid expire time in 'msetex' command", "MSETEX 1 k v EX 0");
    expect_int(C, 0, "EXISTS k");
    /* The keys are every other argument after numkeys. */
    expect_reply(C, "[\"k1\",\"k2\"]", "COMMAND GETKEYS MSETEX 2 k1 v1 k2 v2 NX");
}
END_TEST

/* ---- notifications ---- */

#define PATTERN "__keyevent@0__:*"

static it_raw *subscribe(void) {
    expect_ok(C, "CONFIG SET notify-keyspace-events E$g");
    it_raw *r = it_raw_connect(S);
    it_raw_cmd(r, "PSUBSCRIBE", PATTERN, NULL);
    expect_raw(r, "[\"psubscribe\",\"" PATTERN "\",:1]");
    return r;
}

static void expect_event(it_raw *r, const char *event, const char *key) {
    expect_raw(r,
               it_fmt("[\"pmessage\",\"" PATTERN "\",\"__keyevent@0__:%s\",\"%s\"]", event, key));
}

/* Nothing else was published before this point. */
static void expect_quiet(it_raw *r) {
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "[\"pong\",\"\"]");
}

START_TEST(test_notifications) {
    it_raw *r = subscribe();
    expect_int(C, 0, "SETBIT b 3 1");
    expect_event(r, "setbit", "b");
    /* Writes that change nothing announce nothing. */
    expect_int(C, 1, "SETBIT b 3 1");
    expect_int(C, 0, "SETBIT b 5 0");
    expect_reply(C, "[:16]", "BITFIELD b SET u8 0 16");
    expect_reply(C, "[nil]", "BITFIELD b OVERFLOW FAIL INCRBY u8 0 300");
    expect_quiet(r);
    expect_reply(C, "[:16]", "BITFIELD b SET u8 0 17");
    expect_event(r, "setbit", "b");
    expect_int(C, 1, "BITOP NOT d b");
    expect_event(r, "set", "d");
    expect_int(C, 0, "BITOP AND d nokey");
    expect_event(r, "del", "d");
    expect_int(C, 0, "DELIFEQ b nope");
    expect_int(C, 1, "DELIFEQ b %b", "\x11", (size_t)1);
    expect_event(r, "del", "b");
    expect_int(C, 1, "MSETEX 2 m1 a m2 b EX 100");
    expect_event(r, "set", "m1");
    expect_event(r, "expire", "m1");
    expect_event(r, "set", "m2");
    expect_event(r, "expire", "m2");
    expect_ok(C, "SET m1 z IFEQ a");
    expect_event(r, "set", "m1");
    expect_nil(C, "SET m1 y IFEQ a");
    expect_quiet(r);
}
END_TEST

/* WATCH sees a change only when a bit command changed something. */
START_TEST(test_watch) {
    redisContext *w = it_connect(S);
    expect_int(C, 0, "SETBIT k 1 1");
    expect_ok(w, "WATCH k");
    expect_int(C, 1, "SETBIT k 1 1");
    expect_ok(w, "MULTI");
    expect_status(w, "QUEUED", "PING");
    expect_reply(w, "[+PONG]", "EXEC");
    expect_ok(w, "WATCH k");
    expect_int(C, 1, "SETBIT k 1 0");
    expect_ok(w, "MULTI");
    expect_status(w, "QUEUED", "PING");
    expect_nil(w, "EXEC");
}
END_TEST

static Suite *bitops_suite(void) {
    Suite *s = suite_create("bitops");
    TCase *tc = it_tcase(s, "bitops");
    tcase_add_test(tc, test_setbit_getbit);
    tcase_add_test(tc, test_setbit_integer_value);
    tcase_add_test(tc, test_offset_bound);
    tcase_add_test(tc, test_bitcount_bitpos);
    tcase_add_test(tc, test_bitop);
    tcase_add_test(tc, test_bitfield);
    tcase_add_test(tc, test_lcs);
    tcase_add_test(tc, test_lcs_resp3);
    tcase_add_test(tc, test_lcs_memory_guard);
    tcase_add_test(tc, test_set_ifeq);
    tcase_add_test(tc, test_delifeq);
    tcase_add_test(tc, test_msetex);
    tcase_add_test(tc, test_notifications);
    tcase_add_test(tc, test_watch);
    return s;
}

int main(void) {
    return it_run(bitops_suite());
}
