/* check_bitops.c -- unit tests for core/ds/bitops.c: the population count
 * (both implementations against a bit-by-bit count over random buffers,
 * lengths and start offsets), the first-bit search at byte and word
 * boundaries, fields of every width 1..64 at offsets across words against
 * a bit-by-bit reference, the overflow rules against 128-bit arithmetic,
 * and AND/OR/XOR/NOT of sources of different lengths. */
#include "ds/bitops.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Random bytes, biased towards runs of zeros or ones one time in three so
 * that the word-skipping paths are taken. */
static void fill(uint8_t *p, size_t n) {
    uint64_t mode = rnd() % 3;
    for (size_t i = 0; i < n; i++) {
        uint8_t r = (uint8_t)rnd();
        p[i] = mode == 0 ? r : mode == 1 ? (rnd() % 64 ? 0 : r) : (rnd() % 64 ? 0xff : r);
    }
}

static int ref_bit(const uint8_t *p, uint64_t i) {
    return (p[i >> 3] >> (7 - (i & 7))) & 1;
}

static uint64_t ref_popcount(const uint8_t *p, size_t n) {
    uint64_t c = 0;
    for (uint64_t i = 0; i < (uint64_t)n * 8; i++)
        c += (uint64_t)ref_bit(p, i);
    return c;
}

/* ---- population count ---- */

START_TEST(test_popcount_known) {
    uint8_t buf[80];
    memset(buf, 0xff, sizeof(buf));
    for (size_t n = 0; n <= sizeof(buf); n++) {
        ck_assert_uint_eq(bitops_popcount(buf, n), n * 8);
        ck_assert_uint_eq(bitops_popcount_portable(buf, n), n * 8);
        ck_assert_uint_eq(bitops_popcount_hw(buf, n), n * 8);
        ck_assert_uint_eq(bitops_popcount_avx2(buf, n), n * 8);
    }
    memset(buf, 0, sizeof(buf));
    ck_assert_uint_eq(bitops_popcount(buf, sizeof(buf)), 0);
    buf[0] = 0x80;
    buf[79] = 0x01;
    ck_assert_uint_eq(bitops_popcount(buf, sizeof(buf)), 2);
    ck_assert_uint_eq(bitops_popcount(NULL, 0), 0);
}
END_TEST

START_TEST(test_popcount_paths_agree) {
    enum { MAX = 700 };
    uint8_t buf[MAX + 16];
    for (int round = 0; round < 4000; round++) {
        size_t start = rnd() % 16;
        size_t n = rnd() % 4 ? rnd() % 80 : rnd() % MAX;
        fill(buf + start, n);
        uint64_t want = ref_popcount(buf + start, n);
        ck_assert_uint_eq(bitops_popcount_portable(buf + start, n), want);
        ck_assert_uint_eq(bitops_popcount_hw(buf + start, n), want);
        ck_assert_uint_eq(bitops_popcount_avx2(buf + start, n), want);
        ck_assert_uint_eq(bitops_popcount(buf + start, n), want);
    }
}
END_TEST

/* The machine these tests run on has POPCNT and AVX2: the hardware paths
 * are really taken, not their fallbacks. */
START_TEST(test_popcount_hw_present) {
#if defined(__x86_64__) && defined(__GNUC__)
    ck_assert_int_eq(bitops_popcount_hw_available(), __builtin_cpu_supports("popcnt") != 0);
    ck_assert_int_eq(bitops_popcount_avx2_available(),
                     __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt"));
#else
    ck_assert_int_eq(bitops_popcount_hw_available(), 0);
    ck_assert_int_eq(bitops_popcount_avx2_available(), 0);
#endif
}
END_TEST

/* Long strings, where bitops_popcount takes AVX2: every byte value, and
 * lengths around the 32-byte steps and the 256-byte switch. */
START_TEST(test_popcount_long) {
    enum { MAX = 4200 };
    static uint8_t buf[MAX + 32];
    for (int round = 0; round < 200; round++) {
        size_t start = rnd() % 32;
        size_t n = round < 64 ? 224 + (size_t)round : rnd() % MAX;
        if (round % 3 == 0)
            memset(buf + start, (int)(rnd() & 0xff), n);
        else
            fill(buf + start, n);
        uint64_t want = ref_popcount(buf + start, n);
        ck_assert_uint_eq(bitops_popcount_avx2(buf + start, n), want);
        ck_assert_uint_eq(bitops_popcount(buf + start, n), want);
    }
}
END_TEST

/* ---- first set or clear bit ---- */

static int64_t ref_bitpos(const uint8_t *p, size_t n, int bit) {
    for (uint64_t i = 0; i < (uint64_t)n * 8; i++)
        if (ref_bit(p, i) == bit) return (int64_t)i;
    return bit ? -1 : (int64_t)n * 8;
}

START_TEST(test_bitpos_boundaries) {
    uint8_t buf[24];
    const uint64_t at[] = {0, 1, 7, 8, 9, 63, 64, 65, 127, 128, 191};
    for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
        memset(buf, 0, sizeof(buf));
        buf[at[k] >> 3] = (uint8_t)(0x80 >> (at[k] & 7));
        ck_assert_int_eq(bitops_bitpos(buf, sizeof(buf), 1), (int64_t)at[k]);
        ck_assert_int_eq(bitops_bitpos(buf, sizeof(buf), 0), at[k] == 0 ? 1 : 0);
        memset(buf, 0xff, sizeof(buf));
        buf[at[k] >> 3] = (uint8_t) ~(0x80 >> (at[k] & 7));
        ck_assert_int_eq(bitops_bitpos(buf, sizeof(buf), 0), (int64_t)at[k]);
        ck_assert_int_eq(bitops_bitpos(buf, sizeof(buf), 1), at[k] == 0 ? 1 : 0);
    }
    memset(buf, 0, sizeof(buf));
    ck_assert_int_eq(bitops_bitpos(buf, sizeof(buf), 1), -1);
    memset(buf, 0xff, sizeof(buf));
    ck_assert_int_eq(bitops_bitpos(buf, sizeof(buf), 0), (int64_t)sizeof(buf) * 8);
    ck_assert_int_eq(bitops_bitpos(buf, 0, 0), 0);
    ck_assert_int_eq(bitops_bitpos(buf, 0, 1), -1);
}
END_TEST

START_TEST(test_bitpos_random) {
    uint8_t buf[300];
    for (int round = 0; round < 4000; round++) {
        size_t start = rnd() % 9;
        size_t n = rnd() % (sizeof(buf) - start);
        fill(buf + start, n);
        for (int bit = 0; bit <= 1; bit++)
            ck_assert_int_eq(bitops_bitpos(buf + start, n, bit), ref_bitpos(buf + start, n, bit));
    }
}
END_TEST

/* ---- integer fields ---- */

static uint64_t ref_get(const uint8_t *p, uint64_t offset, unsigned bits) {
    uint64_t v = 0;
    for (unsigned j = 0; j < bits; j++)
        v = (v << 1) | (uint64_t)ref_bit(p, offset + j);
    return v;
}

START_TEST(test_field_get_set) {
    uint8_t buf[24], want[24];
    for (unsigned bits = 1; bits <= 64; bits++) {
        for (uint64_t offset = 0; offset + bits <= sizeof(buf) * 8; offset += 1 + rnd() % 5) {
            fill(buf, sizeof(buf));
            ck_assert_uint_eq(bitops_get_unsigned(buf, offset, bits), ref_get(buf, offset, bits));
            uint64_t v = rnd();
            memcpy(want, buf, sizeof(buf));
            for (unsigned j = 0; j < bits; j++) {
                uint64_t i = offset + j;
                uint8_t m = (uint8_t)(0x80 >> (i & 7));
                if ((v >> (bits - 1 - j)) & 1)
                    want[i >> 3] |= m;
                else
                    want[i >> 3] &= (uint8_t)~m;
            }
            bitops_set(buf, offset, bits, v);
            ck_assert_mem_eq(buf, want, sizeof(buf));
            uint64_t low = bits == 64 ? v : v & ((UINT64_C(1) << bits) - 1);
            ck_assert_uint_eq(bitops_get_unsigned(buf, offset, bits), low);
            int64_t sv = (int64_t)low;
            if (bits < 64 && (low >> (bits - 1)) & 1) sv = (int64_t)(low | (UINT64_MAX << bits));
            ck_assert_int_eq(bitops_get_signed(buf, offset, bits), sv);
        }
    }
}
END_TEST

/* ---- overflow rules, against 128-bit arithmetic ---- */

typedef __int128 i128;

static int64_t pick_value(int64_t lo, int64_t hi) {
    switch (rnd() % 5) {
    case 0:
        return lo;
    case 1:
        return hi;
    case 2:
        return 0;
    default: {
        /* Anywhere in [lo, hi]. */
        unsigned __int128 span = (unsigned __int128)((i128)hi - lo) + 1;
        return (int64_t)((i128)lo + (i128)(rnd() % span));
    }
    }
}

static int64_t pick_incr(void) {
    const int64_t edges[] = {0, 1, -1, INT64_MAX, INT64_MIN, 2, -2};
    if (rnd() % 3 == 0) return edges[rnd() % 7];
    return rnd() % 2 ? (int64_t)rnd() : (int64_t)(rnd() % 300) - 150;
}

static void check_signed(int64_t value, int64_t incr, unsigned bits) {
    i128 max = bits == 64 ? INT64_MAX : ((i128)1 << (bits - 1)) - 1, min = -max - 1;
    i128 sum = (i128)value + incr;
    int want_dir = value > max ? 1 : value < min ? -1 : sum > max ? 1 : sum < min ? -1 : 0;
    /* Valkey's quirk: a value more than 2^63 below max overflows upwards. */
    if (bits < 64 && (i128)max - value > INT64_MAX) want_dir = 1;
    /* Wrap: the sum modulo 2^bits, in [min, max]. */
    i128 mod = (i128)1 << bits;
    i128 wrapped = ((sum - min) % mod + mod) % mod + min;
    for (int mode = BITOPS_WRAP; mode <= BITOPS_FAIL; mode++) {
        int64_t out = 12345;
        int dir = bitops_add_signed(value, incr, bits, (bitops_overflow)mode, &out);
        ck_assert_msg(dir == want_dir, "i%u %lld%+lld: dir %d, want %d", bits, (long long)value,
                      (long long)incr, dir, want_dir);
        if (dir == 0)
            ck_assert(out == (int64_t)sum);
        else if (mode == BITOPS_WRAP)
            ck_assert(out == (int64_t)wrapped);
        else if (mode == BITOPS_SAT)
            ck_assert(out == (int64_t)(dir > 0 ? max : min));
        else
            ck_assert_int_eq(out, 12345);
    }
}

static void check_unsigned(uint64_t value, int64_t incr, unsigned bits) {
    i128 max = ((i128)1 << bits) - 1;
    i128 sum = (i128)value + incr;
    int want_dir = (i128)value > max || sum > max ? 1 : (sum < 0 ? -1 : 0);
    i128 wrapped = sum & max; /* two's complement: modulo 2^bits */
    for (int mode = BITOPS_WRAP; mode <= BITOPS_FAIL; mode++) {
        uint64_t out = 12345;
        int dir = bitops_add_unsigned(value, incr, bits, (bitops_overflow)mode, &out);
        ck_assert_msg(dir == want_dir, "u%u %llu%+lld: dir %d, want %d", bits,
                      (unsigned long long)value, (long long)incr, dir, want_dir);
        if (dir == 0)
            ck_assert(out == (uint64_t)sum);
        else if (mode == BITOPS_WRAP)
            ck_assert(out == (uint64_t)wrapped);
        else if (mode == BITOPS_SAT)
            ck_assert(out == (uint64_t)(dir > 0 ? max : 0));
        else
            ck_assert_uint_eq(out, 12345);
    }
}

START_TEST(test_overflow_signed) {
    for (unsigned bits = 1; bits <= 64; bits++) {
        int64_t max = bits == 64 ? INT64_MAX : (int64_t)((UINT64_C(1) << (bits - 1)) - 1);
        for (int k = 0; k < 3000; k++) {
            /* A field's value (in range) plus an increment: INCRBY. */
            check_signed(pick_value(-max - 1, max), pick_incr(), bits);
            /* Any value with no increment: SET. */
            check_signed((int64_t)rnd(), 0, bits);
        }
    }
}
END_TEST

START_TEST(test_overflow_unsigned) {
    for (unsigned bits = 1; bits <= 63; bits++) {
        int64_t max = (int64_t)((UINT64_C(1) << bits) - 1);
        for (int k = 0; k < 3000; k++) {
            check_unsigned((uint64_t)pick_value(0, max), pick_incr(), bits);
            /* SET of any 64-bit number, negative ones included. */
            check_unsigned(rnd(), 0, bits);
        }
    }
    /* A negative SET saturates to the maximum, as in Valkey. */
    /* Valkey's quirk (signed): SET i8 of INT64_MIN and i63 of -2^62 - 1
     * saturate to the maximum, -2^62 itself stays. */
    int64_t sout;
    ck_assert_int_eq(bitops_add_signed(INT64_MIN, 0, 8, BITOPS_SAT, &sout), 1);
    ck_assert_int_eq(sout, 127);
    ck_assert_int_eq(bitops_add_signed(INT64_MIN + 200, 0, 8, BITOPS_SAT, &sout), -1);
    ck_assert_int_eq(sout, -128);
    ck_assert_int_eq(bitops_add_signed(-(INT64_C(1) << 62) - 1, 0, 63, BITOPS_SAT, &sout), 1);
    ck_assert_int_eq(sout, (INT64_C(1) << 62) - 1);
    ck_assert_int_eq(bitops_add_signed(-(INT64_C(1) << 62), 0, 63, BITOPS_SAT, &sout), 0);
    ck_assert_int_eq(sout, -(INT64_C(1) << 62));
    uint64_t out;
    ck_assert_int_eq(bitops_add_unsigned((uint64_t)-1, 0, 8, BITOPS_SAT, &out), 1);
    ck_assert_uint_eq(out, 255);
    ck_assert_int_eq(bitops_add_unsigned((uint64_t)-1, 0, 8, BITOPS_WRAP, &out), 1);
    ck_assert_uint_eq(out, 255);
}
END_TEST

/* ---- AND, OR, XOR, NOT ---- */

START_TEST(test_combine) {
    uint8_t src[5][120], dst[130], want[130];
    for (int round = 0; round < 2000; round++) {
        size_t n = 1 + rnd() % 5, lens[5], maxlen = 0;
        const uint8_t *srcs[5];
        for (size_t i = 0; i < n; i++) {
            lens[i] = rnd() % 4 == 0 ? 0 : rnd() % 120;
            fill(src[i], lens[i]);
            srcs[i] = lens[i] ? src[i] : NULL;
            if (lens[i] > maxlen) maxlen = lens[i];
        }
        bitops_op op = (bitops_op)(rnd() % 4);
        if (op == BITOPS_NOT) n = 1, maxlen = lens[0];
        for (size_t j = 0; j < maxlen; j++) {
            uint8_t v = j < lens[0] ? src[0][j] : 0;
            if (op == BITOPS_NOT) v = (uint8_t)~v;
            for (size_t i = 1; i < n; i++) {
                uint8_t b = j < lens[i] ? src[i][j] : 0;
                v = op == BITOPS_AND ? v & b : op == BITOPS_OR ? v | b : v ^ b;
            }
            want[j] = v;
        }
        dst[maxlen] = 0xa5; /* nothing is written past dstlen */
        bitops_combine(op, dst, maxlen, srcs, lens, n);
        ck_assert_mem_eq(dst, want, maxlen);
        ck_assert_uint_eq(dst[maxlen], 0xa5);
    }
}
END_TEST

static Suite *bitops_suite(void) {
    Suite *s = suite_create("bitops");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_popcount_known);
    tcase_add_test(tc, test_popcount_paths_agree);
    tcase_add_test(tc, test_popcount_hw_present);
    tcase_add_test(tc, test_popcount_long);
    tcase_add_test(tc, test_bitpos_boundaries);
    tcase_add_test(tc, test_bitpos_random);
    tcase_add_test(tc, test_field_get_set);
    tcase_add_test(tc, test_overflow_signed);
    tcase_add_test(tc, test_overflow_unsigned);
    tcase_add_test(tc, test_combine);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(bitops_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
