/* check_it_hll.c -- the HyperLogLog commands against a real keel-server:
 * PFADD/PFCOUNT/PFMERGE replies and the cached cardinality in the value,
 * encodings and PFDEBUG, errors in Valkey's words, values crafted with
 * SET, SETRANGE and APPEND refused by every command without harm to the
 * server, and the keyspace notifications. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOT_HLL "WRONGTYPE Key is not a valid HyperLogLog string value."
#define CORRUPT "INVALIDOBJ Corrupted HLL object detected"
#define WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"

/* The 16-byte header of a sparse value followed by opcodes. */
/* A sparse value over ops with a stale cache (bit 7 of byte 15 set), so
 * that PFCOUNT has to read the registers. */
static size_t sparse_value(char *out, const unsigned char *ops, size_t n) {
    memset(out, 0, 16);
    memcpy(out, "HYLL\x01", 5);
    out[15] = (char)0x80;
    memcpy(out + 16, ops, n);
    return 16 + n;
}

static void set_bytes(const char *key, const char *v, size_t len) {
    expect_ok(C, "SET %s %b", key, v, len);
}

/* The byte at offset 15 of key: its cache's validity bit. */
static void expect_cache_byte(const char *key, const char *want) {
    expect_bulk_len(C, want, 1, "GETRANGE %s 15 15", key);
}

START_TEST(test_pfadd_pfcount) {
    expect_int(C, 1, "PFADD h");
    expect_int(C, 1, "EXISTS h");
    expect_int(C, 0, "PFCOUNT h");
    expect_int(C, 1, "PFADD h a b c");
    expect_int(C, 0, "PFADD h a b c");
    expect_int(C, 1, "PFADD h %b", "", (size_t)0);
    expect_int(C, 0, "PFADD h"); /* exists, nothing to add */
    expect_int(C, 4, "PFCOUNT h");
    expect_status(C, "string", "TYPE h");
    expect_bulk(C, "raw", "OBJECT ENCODING h");
    expect_int(C, 0, "PFCOUNT missing");
    expect_int(C, 0, "EXISTS missing");
    expect_int(C, 1, "PFADD n 1 2 3 4 5");
    expect_int(C, 5, "PFCOUNT n");
    expect_int(C, 1, "PFADD n 6 7 8 8 9 10");
    expect_int(C, 10, "PFCOUNT n");
}
END_TEST

/* PFCOUNT of one key stores the count in the header (a stale cache has
 * the top bit of byte 15 set); PFADD that changes nothing keeps it. */
START_TEST(test_cached_cardinality) {
    expect_int(C, 1, "PFADD h a b c");
    expect_cache_byte("h", "\x80");
    expect_int(C, 3, "PFCOUNT h");
    expect_cache_byte("h", "\x00");
    expect_bulk_len(C, "\x03\x00\x00\x00\x00\x00\x00\x00", 8, "GETRANGE h 8 15");
    expect_int(C, 0, "PFADD h a b c");
    expect_cache_byte("h", "\x00");
    expect_int(C, 1, "PFADD h 1 2 3");
    expect_cache_byte("h", "\x80");
}
END_TEST

/* Several keys: the union's count, and no key is written. */
START_TEST(test_pfcount_union) {
    expect_int(C, 1, "PFADD a 1 2 3");
    expect_int(C, 1, "PFADD b 3 4 5");
    redisReply *before = it_cmd(C, "GET a");
    expect_int(C, 5, "PFCOUNT a b missing");
    redisReply *after = it_cmd(C, "GET a");
    ck_assert_uint_eq(before->len, after->len);
    ck_assert_mem_eq(before->str, after->str, before->len);
    expect_cache_byte("a", "\x80");
    expect_int(C, 0, "PFCOUNT missing other");
}
END_TEST

START_TEST(test_pfmerge) {
    expect_int(C, 1, "PFADD h1 a b c");
    expect_int(C, 1, "PFADD h2 b c d");
    expect_int(C, 1, "PFADD h3 c d e");
    expect_ok(C, "PFMERGE h h1 h2 h3");
    expect_int(C, 5, "PFCOUNT h");
    expect_status(C, "sparse", "PFDEBUG ENCODING h");
    /* Missing sources make an empty destination. */
    expect_ok(C, "PFMERGE d1 nosuch");
    expect_int(C, 1, "EXISTS d1");
    expect_int(C, 0, "PFCOUNT d1");
    expect_ok(C, "PFMERGE d2");
    expect_int(C, 0, "PFCOUNT d2");
    /* The destination is one of the inputs. */
    expect_ok(C, "PFMERGE h1 h3");
    expect_int(C, 5, "PFCOUNT h1");
    expect_ok(C, "PFMERGE h1");
    expect_int(C, 5, "PFCOUNT h1");
    /* One dense input makes the destination dense. */
    expect_int(C, 1, "PFDEBUG TODENSE h2");
    expect_ok(C, "PFMERGE m h3 h2");
    expect_status(C, "dense", "PFDEBUG ENCODING m");
    expect_int(C, 4, "PFCOUNT m");
    expect_int(C, 12304, "STRLEN m");
}
END_TEST

START_TEST(test_pfdebug) {
    expect_int(C, 1, "PFADD h a b c");
    expect_status(C, "sparse", "PFDEBUG ENCODING h");
    /* DECODE: opcodes covering every register. */
    redisReply *r = it_cmd(C, "PFDEBUG DECODE h");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    long total = 0, vals = 0;
    for (char *w = strtok(r->str, " "); w; w = strtok(NULL, " ")) {
        int v, n;
        if (sscanf(w, "v:%d,%d", &v, &n) == 2) {
            total += n;
            vals += n;
        } else {
            ck_assert(sscanf(w, "Z:%d", &n) == 1 || sscanf(w, "z:%d", &n) == 1);
            total += n;
        }
    }
    ck_assert_int_eq(total, 16384);
    ck_assert_int_eq(vals, 3);
    /* GETREG: every register, the value converted for good. */
    r = it_cmd(C, "PFDEBUG GETREG h");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_uint_eq(r->elements, 16384);
    size_t nonzero = 0;
    for (size_t i = 0; i < r->elements; i++)
        nonzero += r->element[i]->integer != 0;
    ck_assert_uint_eq(nonzero, 3);
    expect_status(C, "dense", "PFDEBUG ENCODING h");
    expect_int(C, 0, "PFDEBUG TODENSE h");
    expect_error(C, "ERR HLL encoding is not sparse", "PFDEBUG DECODE h");
    expect_int(C, 3, "PFCOUNT h");
    expect_int(C, 1, "PFADD s x");
    expect_int(C, 1, "PFDEBUG TODENSE s");
    expect_int(C, 12304, "STRLEN s");
    expect_error(C, "ERR Unknown PFDEBUG subcommand 'nope'", "PFDEBUG nope h");
    expect_error(C, "ERR The specified key does not exist", "PFDEBUG ENCODING missing");
    expect_ok(C, "PFSELFTEST");
}
END_TEST

/* hll-sparse-max-bytes bounds the sparse encoding. */
START_TEST(test_sparse_max_bytes) {
    expect_ok(C, "CONFIG SET hll-sparse-max-bytes 3000");
    expect_int(C, 1, "PFADD h a b c d e d g h i j k");
    expect_status(C, "sparse", "PFDEBUG ENCODING h");
    expect_ok(C, "CONFIG SET hll-sparse-max-bytes 30");
    expect_int(C, 1, "PFADD h new_element");
    expect_status(C, "dense", "PFDEBUG ENCODING h");
    expect_int(C, 11, "PFCOUNT h");
    expect_ok(C, "CONFIG SET hll-sparse-max-bytes 0");
    expect_int(C, 1, "PFADD z a");
    expect_status(C, "dense", "PFDEBUG ENCODING z");
    expect_ok(C, "CONFIG SET hll-sparse-max-bytes 3000"); /* the tcase's server lives on */
}
END_TEST

START_TEST(test_errors) {
    expect_ok(C, "SET str bar");
    expect_error(C, NOT_HLL, "PFADD str 1");
    expect_error(C, NOT_HLL, "PFCOUNT str");
    expect_error(C, NOT_HLL, "PFCOUNT h str");
    expect_error(C, NOT_HLL, "PFMERGE h str");
    expect_error(C, NOT_HLL, "PFMERGE str h");
    expect_error(C, NOT_HLL, "PFDEBUG ENCODING str");
    expect_int(C, 1, "RPUSH list a");
    expect_error(C, WRONGTYPE, "PFADD list a");
    expect_error(C, WRONGTYPE, "PFCOUNT list");
    expect_error(C, WRONGTYPE, "PFMERGE d list");
    expect_int(C, 0, "EXISTS d");
    expect_error(C, "ERR wrong number of arguments for 'pfadd' command", "PFADD");
    expect_error(C, "ERR wrong number of arguments for 'pfcount' command", "PFCOUNT");
    expect_error(C, "ERR wrong number of arguments for 'pfmerge' command", "PFMERGE");
    expect_error(C, "ERR wrong number of arguments for 'pfdebug' command", "PFDEBUG GETREG");
    expect_error(C, "ERR wrong number of arguments for 'pfselftest' command", "PFSELFTEST x");
}
END_TEST

/* Every command refuses a value whose registers do not decode, and leaves
 * it as it was. */
static void expect_refused(const char *key, const char *err) {
    const char *want = it_fmt("-%s", err);
    redisReply *before = it_cmd(C, "GET %s", key);
    expect_reply(C, want, "PFADD %s x y z", key);
    expect_reply(C, want, "PFCOUNT %s", key);
    expect_reply(C, want, "PFCOUNT %s other", key);
    expect_reply(C, want, "PFMERGE dest %s", key);
    expect_reply(C, want, "PFMERGE %s", key);
    expect_reply(C, want, "PFDEBUG GETREG %s", key);
    expect_reply(C, want, "PFDEBUG TODENSE %s", key);
    redisReply *after = it_cmd(C, "GET %s", key);
    ck_assert_uint_eq(before->len, after->len);
    ck_assert_mem_eq(before->str, after->str, before->len);
    expect_int(C, 0, "EXISTS dest");
}

START_TEST(test_corrupted_sparse) {
    char v[256];
    /* Zero runs far past the 16384 registers (the CVE-2019-10192 shape:
     * a decoder trusting them writes past the dense array). */
    unsigned char runs[20];
    for (int i = 0; i < 20; i += 2)
        runs[i] = 0x7f, runs[i + 1] = 0xff;
    set_bytes("k1", v, sparse_value(v, runs, sizeof(runs)));
    expect_refused("k1", CORRUPT);
    /* A VAL run past the last register. */
    set_bytes("k2", v, sparse_value(v, (const unsigned char *)"\x7f\xfe\x83", 3));
    expect_refused("k2", CORRUPT);
    /* Too few registers; an XZERO cut short. */
    set_bytes("k3", v, sparse_value(v, (const unsigned char *)"\x7f\x00", 2));
    expect_refused("k3", CORRUPT);
    set_bytes("k4", v, sparse_value(v, (const unsigned char *)"\x7f\xfe\x40", 3));
    expect_refused("k4", CORRUPT);
    /* Bytes appended to a good value. */
    expect_int(C, 1, "PFADD k5 a b c");
    expect_int_range(C, 19, 64, "APPEND k5 hello");
    expect_refused("k5", CORRUPT);
    /* A current cache (42, little-endian in bytes 8..15, bit 7 of byte 15
     * clear) over corrupted registers: PFCOUNT of that key alone answers
     * the cache without reading them, as Valkey does; whatever reads them
     * refuses the value. */
    size_t n = sparse_value(v, runs, sizeof(runs));
    v[8] = 42, v[15] = 0;
    set_bytes("k6", v, n);
    expect_int(C, 42, "PFCOUNT k6");
    expect_error(C, CORRUPT, "PFCOUNT k6 other");
    expect_error(C, CORRUPT, "PFADD k6 x");
    expect_error(C, CORRUPT, "PFMERGE dest k6");
    /* The server is still serving, and a good value next to them too. */
    expect_int(C, 1, "PFADD good a");
    expect_int(C, 1, "PFCOUNT good");
}
END_TEST

START_TEST(test_corrupted_header) {
    expect_int(C, 1, "PFADD h a b c");
    expect_status(C, "sparse", "PFDEBUG ENCODING h");
    expect_int(C, 1, "PFADD k1 a b c");
    expect_int_range(C, 18, 64, "SETRANGE k1 0 0123"); /* magic */
    expect_refused("k1", NOT_HLL);
    expect_int(C, 1, "PFADD k2 a b c");
    expect_int_range(C, 18, 64, "SETRANGE k2 4 x"); /* encoding */
    expect_refused("k2", NOT_HLL);
    expect_int(C, 1, "PFADD k3 a b c");
    expect_int_range(C, 18, 64, "SETRANGE k3 4 %b", "\x00", (size_t)1); /* dense, short */
    expect_refused("k3", NOT_HLL);
    expect_int(C, 1, "PFADD k4 a");
    expect_int(C, 1, "PFDEBUG TODENSE k4");
    expect_int(C, 12305, "APPEND k4 x"); /* dense, long */
    expect_refused("k4", NOT_HLL);
    expect_ok(C, "SET k5 HYLL");
    expect_refused("k5", NOT_HLL);
    expect_ok(C, "SET k6 12345");
    expect_refused("k6", NOT_HLL);
}
END_TEST

/* Random bytes written over good values: refused or counted, never a
 * broken server. */
START_TEST(test_corruption_fuzz) {
    srand(5);
    for (int round = 0; round < 300; round++) {
        it_cmd(C, "DEL h");
        int n = rand() % 600;
        for (int i = 0; i < n; i += 100) {
            const char *argv[102] = {"PFADD", "h"};
            size_t lens[102] = {5, 1};
            char bufs[100][16];
            int k = 2;
            for (; k < 102 && i + k - 2 < n; k++) {
                lens[k] = (size_t)snprintf(bufs[k - 2], sizeof(bufs[0]), "%d", rand());
                argv[k] = bufs[k - 2];
            }
            it_cmd_argv(C, k, argv, lens);
        }
        if (!n) expect_int(C, 1, "PFADD h");
        if (round % 3 == 0) it_cmd(C, "PFDEBUG TODENSE h");
        long long len = it_cmd(C, "STRLEN h")->integer;
        ck_assert_int_ge(len, 18);
        for (int i = 0; i < 5; i++) {
            char byte = (char)(rand() & 0xff);
            it_cmd(C, "SETRANGE h %lld %b", (long long)(rand() % len), &byte, (size_t)1);
            if (rand() % 2) break;
        }
        redisReply *r = it_cmd(C, "PFCOUNT h");
        ck_assert(r->type == REDIS_REPLY_INTEGER || r->type == REDIS_REPLY_ERROR);
        it_cmd(C, "PFADD h again");
        it_cmd(C, "PFMERGE m h");
    }
    expect_status(C, "PONG", "PING");
}
END_TEST

/* Every write keeps the key's TTL, as Valkey's changes in place do. */
START_TEST(test_writes_keep_ttl) {
    expect_int(C, 1, "PFADD h a");
    expect_int(C, 1, "EXPIRE h 1000");
    expect_int(C, 1, "PFADD h b");
    expect_int_range(C, 990, 1000, "TTL h");
    expect_int(C, 2, "PFCOUNT h");
    expect_int_range(C, 990, 1000, "TTL h");
    expect_int(C, 1, "PFADD x c");
    expect_ok(C, "PFMERGE h x");
    expect_int_range(C, 990, 1000, "TTL h");
    expect_int(C, 1, "PFDEBUG TODENSE h");
    expect_int_range(C, 990, 1000, "TTL h");
    expect_int(C, 3, "PFCOUNT h");
    expect_ok(C, "PFMERGE new h");
    expect_int(C, -1, "TTL new");
}
END_TEST

/* A value read off the server and written back is the same HLL. */
START_TEST(test_value_portable) {
    expect_int(C, 1, "PFADD h a b c d e f g");
    redisReply *v = it_cmd(C, "GET h");
    expect_ok(C, "SET copy %b", v->str, v->len);
    expect_int(C, 7, "PFCOUNT copy");
    expect_int(C, 0, "PFADD copy a b c");
}
END_TEST

START_TEST(test_notifications) {
    expect_ok(C, "CONFIG SET notify-keyspace-events KEA");
    it_raw *r = it_raw_connect(S);
    it_raw_cmd(r, "PSUBSCRIBE", "__keyspace@0__:*", NULL);
    expect_raw(r, "[\"psubscribe\",\"__keyspace@0__:*\",:1]");
    expect_int(C, 1, "PFADD h a");
    expect_int(C, 0, "PFADD h a");
    expect_int(C, 1, "PFCOUNT h");
    expect_ok(C, "PFMERGE m h");
    expect_ok(C, "SET str bar");
    expect_error(C, NOT_HLL, "PFADD str x");
    expect_raw(r, "[\"pmessage\",\"__keyspace@0__:*\",\"__keyspace@0__:h\",\"pfadd\"]");
    expect_raw(r, "[\"pmessage\",\"__keyspace@0__:*\",\"__keyspace@0__:m\",\"pfadd\"]");
    expect_raw(r, "[\"pmessage\",\"__keyspace@0__:*\",\"__keyspace@0__:str\",\"set\"]");
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "[\"pong\",\"\"]");
}
END_TEST

/* PFCOUNT's cache update is a write: it fails a WATCH of the key; a
 * count from the cache is not. */
START_TEST(test_pfcount_watch) {
    redisContext *c2 = it_connect(S);
    expect_int(C, 1, "PFADD h a");
    expect_ok(C, "WATCH h");
    expect_int(c2, 1, "PFCOUNT h");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "nil", "EXEC");
    expect_ok(C, "WATCH h");
    expect_int(c2, 1, "PFCOUNT h");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "[+PONG]", "EXEC");
}
END_TEST

/* PFADD into a dense value writes its registers in place: the registers
 * come out as those of the same elements added before the conversion, a
 * PFADD that raises nothing answers 0 and fails no WATCH, one that raises
 * a register fails it, and the TTL stays. */
START_TEST(test_pfadd_dense_in_place) {
    redisContext *c2 = it_connect(S);
    expect_int(C, 1, "PFADD all a b c d e f g h i j");
    expect_int(C, 1, "PFDEBUG TODENSE all");
    expect_int(C, 1, "PFADD d a b c");
    expect_int(C, 1, "PFDEBUG TODENSE d");
    expect_int(C, 1, "EXPIRE d 1000");
    expect_int(C, 1, "PFADD d d e f g h i j");
    redisReply *want = it_cmd(C, "PFDEBUG GETREG all");
    redisReply *got = it_cmd(C, "PFDEBUG GETREG d");
    ck_assert_int_eq((int)got->elements, 16384);
    for (size_t i = 0; i < got->elements; i++)
        ck_assert_int_eq(got->element[i]->integer, want->element[i]->integer);
    expect_int(C, 10, "PFCOUNT d");
    expect_int_range(C, 990, 1000, "TTL d");
    expect_ok(C, "WATCH d");
    expect_int(c2, 0, "PFADD d a j");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "[+PONG]", "EXEC");
    expect_ok(C, "WATCH d");
    expect_int(c2, 1, "PFADD d k");
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "PING");
    expect_reply(C, "nil", "EXEC");
    expect_int(C, 11, "PFCOUNT d");
    it_disconnect(c2);
}
END_TEST

static Suite *hll_suite(void) {
    Suite *s = suite_create("hll");
    TCase *tc = it_tcase(s, "hll");
    tcase_add_test(tc, test_pfadd_pfcount);
    tcase_add_test(tc, test_pfadd_dense_in_place);
    tcase_add_test(tc, test_cached_cardinality);
    tcase_add_test(tc, test_pfcount_union);
    tcase_add_test(tc, test_pfmerge);
    tcase_add_test(tc, test_pfdebug);
    tcase_add_test(tc, test_sparse_max_bytes);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_corrupted_sparse);
    tcase_add_test(tc, test_corrupted_header);
    tcase_add_test(tc, test_corruption_fuzz);
    tcase_add_test(tc, test_writes_keep_ttl);
    tcase_add_test(tc, test_value_portable);
    tcase_add_test(tc, test_notifications);
    tcase_add_test(tc, test_pfcount_watch);
    return s;
}

int main(void) {
    return it_run(hll_suite());
}
