/* check_hll.c -- unit tests for core/ds/hll.c: Keel's values and counts
 * against those Valkey 8.0.1 produced for the same inputs
 * (hll_valkey_fixture.h, recorded by gen_hll_fixture.py), the sparse and
 * dense encodings and the conversion between them, the promotion points,
 * PFMERGE's and PFCOUNT's unions, and the refusal of corrupted values. */
#include "ds/hll.h"

#include "common/common.h"
#include "common/kmem.h"
#include "hll_valkey_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

/* The i-th element of a fixture generator (gen_hll_fixture.py: element). */
static size_t case_element(const char *kind, long i, uint8_t *out) {
    if (!strcmp(kind, "num")) return (size_t)sprintf((char *)out, "%ld", i);
    if (!strcmp(kind, "str")) return (size_t)sprintf((char *)out, "ele:%ld", i);
    ck_assert_str_eq(kind, "bin");
    for (long j = 0; j <= i; j++)
        out[j] = (uint8_t)((i * 7 + j * 13) & 0xff);
    return (size_t)i + 1;
}

static uint8_t *from_hex(const char *hex, size_t *len) {
    *len = strlen(hex) / 2;
    uint8_t *out = km_alloc(*len + 1);
    for (size_t i = 0; i < *len; i++) {
        unsigned v;
        ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return out;
}

/* PFCOUNT of one key: the count, cached in the header. */
static uint64_t count_and_cache(hll *h) {
    uint64_t card;
    if (hll_cache_get(h->p, &card)) return card;
    card = hll_count(h->p, h->len);
    hll_cache_set(h->p, card);
    return card;
}

static void build_case(const hll_fixture_case *fc, hll *h) {
    uint8_t ele[256];
    hll_init(h);
    for (long i = fc->first; i < fc->first + fc->count; i++) {
        size_t n = case_element(fc->kind, i, ele);
        hll_add(h, ele, n, (size_t)fc->sparse_max);
    }
}

static const hll_fixture_case *find_case(const char *name) {
    for (size_t i = 0; i < K_ARRAY_LEN(hll_fixture_cases); i++)
        if (!strcmp(hll_fixture_cases[i].name, name)) return &hll_fixture_cases[i];
    ck_abort_msg("no fixture case %s", name);
    return NULL;
}

static void expect_bytes(const hll *h, const char *hex, const char *name) {
    size_t len;
    uint8_t *want = from_hex(hex, &len);
    ck_assert_msg(h->len == len, "%s: length %zu, Valkey's %zu", name, h->len, len);
    size_t at = 0;
    while (at < len && h->p[at] == want[at])
        at++;
    ck_assert_msg(at == len, "%s: first difference at byte %zu", name, at);
    km_free(want);
}

/* Decodes any valid value into one register per byte. */
static void registers_of(const uint8_t *s, size_t len, uint8_t regs[HLL_REGISTERS]) {
    memset(regs, 0, HLL_REGISTERS);
    hll_merge_into(regs, s, len);
}

/* ---- against Valkey ---- */

START_TEST(test_valkey_values) {
    for (size_t i = 0; i < K_ARRAY_LEN(hll_fixture_cases); i++) {
        const hll_fixture_case *fc = &hll_fixture_cases[i];
        hll h;
        build_case(fc, &h);
        ck_assert_msg(count_and_cache(&h) == (uint64_t)fc->card, "%s: count %llu, Valkey's %lld",
                      fc->name, (unsigned long long)count_and_cache(&h), fc->card);
        expect_bytes(&h, fc->hex, fc->name);
        ck_assert(hll_is_hll(h.p, h.len) && hll_registers_valid(h.p, h.len));
        hll_free(&h);
    }
}
END_TEST

/* PFMERGE: the union of the destination and the sources, written into the
 * destination (dense if any input is) register by register. */
START_TEST(test_valkey_merges) {
    for (size_t i = 0; i < K_ARRAY_LEN(hll_fixture_merges); i++) {
        const hll_fixture_merge *fm = &hll_fixture_merges[i];
        uint8_t max[HLL_REGISTERS] = {0};
        int dense = 0;
        hll dest;
        if (fm->dest) {
            build_case(find_case(fm->dest), &dest);
            count_and_cache(&dest); /* the fixture copied a counted key */
            hll_merge_into(max, dest.p, dest.len);
            dense |= hll_encoding(dest.p) == HLL_DENSE;
        } else {
            hll_init(&dest);
        }
        for (int s = 0; s < 2 && fm->src[s]; s++) {
            hll src;
            build_case(find_case(fm->src[s]), &src);
            hll_merge_into(max, src.p, src.len);
            dense |= hll_encoding(src.p) == HLL_DENSE;
            hll_free(&src);
        }
        if (dense) hll_to_dense(&dest);
        hll_raise_all(&dest, max, 3000);
        hll_cache_invalidate(dest.p);
        ck_assert_msg(count_and_cache(&dest) == (uint64_t)fm->card, "%s: count %llu, Valkey's %lld",
                      fm->name, (unsigned long long)count_and_cache(&dest), fm->card);
        expect_bytes(&dest, fm->hex, fm->name);
        hll_free(&dest);
    }
}
END_TEST

START_TEST(test_valkey_unions) {
    for (size_t i = 0; i < K_ARRAY_LEN(hll_fixture_unions); i++) {
        uint8_t max[HLL_REGISTERS] = {0};
        for (int k = 0; k < 3; k++) {
            hll h;
            build_case(find_case(hll_fixture_unions[i].keys[k]), &h);
            hll_merge_into(max, h.p, h.len);
            hll_free(&h);
        }
        ck_assert_uint_eq(hll_count_registers(max), (uint64_t)hll_fixture_unions[i].card);
    }
}
END_TEST

/* ---- encodings ---- */

START_TEST(test_empty) {
    hll h;
    hll_init(&h);
    ck_assert_uint_eq(h.len, HLL_EMPTY_SIZE);
    ck_assert(hll_is_hll(h.p, h.len) && hll_registers_valid(h.p, h.len));
    ck_assert_int_eq(hll_encoding(h.p), HLL_SPARSE);
    uint64_t card = 99;
    ck_assert(hll_cache_get(h.p, &card));
    ck_assert_uint_eq(card, 0);
    ck_assert_uint_eq(hll_count(h.p, h.len), 0);
    ck_assert_int_eq(hll_to_dense(&h), 1);
    ck_assert_int_eq(hll_to_dense(&h), 0);
    ck_assert_uint_eq(h.len, HLL_DENSE_SIZE);
    ck_assert_uint_eq(hll_count(h.p, h.len), 0);
    hll_free(&h);
}
END_TEST

START_TEST(test_dense_registers) {
    uint8_t regs[HLL_DENSE_SIZE - HLL_HDR_SIZE] = {0};
    uint8_t want[HLL_REGISTERS];
    srand(7);
    for (uint32_t i = 0; i < HLL_REGISTERS; i++) {
        want[i] = (uint8_t)(rand() & HLL_REGISTER_MAX);
        hll_dense_set(regs, i, want[i]);
    }
    for (uint32_t i = 0; i < HLL_REGISTERS; i++)
        ck_assert_uint_eq(hll_dense_get(regs, i), want[i]);
    /* Setting one register leaves its neighbours alone, at each of the
     * four bit alignments and at both ends. */
    uint32_t probe[] = {0, 1, 2, 3, 4, 5, 8191, HLL_REGISTERS - 2, HLL_REGISTERS - 1};
    for (size_t k = 0; k < K_ARRAY_LEN(probe); k++) {
        uint32_t i = probe[k];
        unsigned v = (want[i] + 17) & HLL_REGISTER_MAX;
        hll_dense_set(regs, i, v);
        want[i] = (uint8_t)v;
        for (uint32_t j = i ? i - 1 : 0; j <= i + 1 && j < HLL_REGISTERS; j++)
            ck_assert_uint_eq(hll_dense_get(regs, j), want[j]);
    }
}
END_TEST

/* Random raises on a sparse value and on a dense one: the sparse value
 * stays well formed and holds the same registers, and both count alike. */
START_TEST(test_sparse_matches_dense) {
    srand(11);
    for (int round = 0; round < 200; round++) {
        hll sparse, dense;
        hll_init(&sparse);
        hll_init(&dense);
        hll_to_dense(&dense);
        int ops = rand() % 400;
        for (int k = 0; k < ops; k++) {
            /* Clustered indexes exercise the splits and joins of runs. */
            uint32_t index = (uint32_t)(rand() % 8 == 0 ? rand() % 16 : rand()) % HLL_REGISTERS;
            unsigned count = 1 + (unsigned)rand() % HLL_SPARSE_VAL_MAX;
            int a = hll_set(&sparse, index, count, SIZE_MAX);
            int b = hll_set(&dense, index, count, SIZE_MAX);
            ck_assert_int_eq(a, b);
            ck_assert(hll_registers_valid(sparse.p, sparse.len));
        }
        ck_assert_int_eq(hll_encoding(sparse.p), HLL_SPARSE);
        uint8_t r1[HLL_REGISTERS], r2[HLL_REGISTERS];
        registers_of(sparse.p, sparse.len, r1);
        registers_of(dense.p, dense.len, r2);
        ck_assert_mem_eq(r1, r2, HLL_REGISTERS);
        ck_assert_uint_eq(hll_count(sparse.p, sparse.len), hll_count(dense.p, dense.len));
        /* The conversion keeps every register and the header. */
        uint8_t hdr[HLL_HDR_SIZE];
        memcpy(hdr, sparse.p, HLL_HDR_SIZE);
        hll_to_dense(&sparse);
        ck_assert_mem_eq(sparse.p + HLL_HDR_SIZE, dense.p + HLL_HDR_SIZE,
                         HLL_DENSE_SIZE - HLL_HDR_SIZE);
        ck_assert_mem_eq(sparse.p + 5, hdr + 5, HLL_HDR_SIZE - 5);
        hll_free(&sparse);
        hll_free(&dense);
    }
}
END_TEST

/* A sparse value stays sparse while it fits sparse_max and becomes dense
 * on the first raise that would take it past, or on a value above 32. */
START_TEST(test_promotion_thresholds) {
    size_t maxes[] = {30, 100, 500, 3000};
    for (size_t m = 0; m < K_ARRAY_LEN(maxes); m++) {
        hll h, unbounded;
        hll_init(&h);
        uint64_t e = 0;
        int promoted = 0;
        while (!promoted) {
            hll_init_from(&unbounded, h.p, h.len);
            hll_add(&unbounded, &e, sizeof(e), SIZE_MAX);
            hll_add(&h, &e, sizeof(e), maxes[m]);
            e++;
            promoted = hll_encoding(h.p) == HLL_DENSE;
            if (promoted) {
                ck_assert_msg(unbounded.len > maxes[m] || hll_encoding(unbounded.p) == HLL_DENSE,
                              "promoted at %zu bytes under %zu", unbounded.len, maxes[m]);
            } else {
                ck_assert_uint_le(h.len, maxes[m] < HLL_EMPTY_SIZE ? HLL_EMPTY_SIZE : maxes[m]);
                ck_assert_mem_eq(h.p, unbounded.p, h.len);
            }
            hll_free(&unbounded);
        }
        hll_free(&h);
    }
    hll h;
    hll_init(&h);
    ck_assert_int_eq(hll_set(&h, 5, HLL_SPARSE_VAL_MAX, 3000), 1);
    ck_assert_int_eq(hll_encoding(h.p), HLL_SPARSE);
    ck_assert_int_eq(hll_set(&h, 5, HLL_SPARSE_VAL_MAX, 3000), 0);
    ck_assert_int_eq(hll_set(&h, 9, HLL_SPARSE_VAL_MAX + 1, 3000), 1);
    ck_assert_int_eq(hll_encoding(h.p), HLL_DENSE);
    ck_assert_uint_eq(hll_dense_get(h.p + HLL_HDR_SIZE, 5), HLL_SPARSE_VAL_MAX);
    ck_assert_uint_eq(hll_dense_get(h.p + HLL_HDR_SIZE, 9), HLL_SPARSE_VAL_MAX + 1);
    hll_free(&h);
}
END_TEST

/* The cached cardinality: stale after a change, kept by a no-op. */
START_TEST(test_cache) {
    hll h;
    hll_init(&h);
    ck_assert_int_eq(hll_add(&h, "a", 1, 3000), 1);
    uint64_t card;
    ck_assert(!hll_cache_get(h.p, &card));
    ck_assert_uint_eq(count_and_cache(&h), 1);
    ck_assert_int_eq(hll_add(&h, "a", 1, 3000), 0);
    ck_assert(hll_cache_get(h.p, &card));
    ck_assert_uint_eq(card, 1);
    hll_to_dense(&h);
    ck_assert(hll_cache_get(h.p, &card)); /* the conversion keeps the header */
    ck_assert_int_eq(hll_add(&h, "b", 1, 3000), 1);
    ck_assert(!hll_cache_get(h.p, &card));
    hll_free(&h);
}
END_TEST

/* ---- corrupted values ---- */

/* A sparse value of the given opcodes. */
static size_t sparse_of(uint8_t *out, const uint8_t *ops, size_t n) {
    memset(out, 0, HLL_HDR_SIZE);
    memcpy(out, "HYLL", 4);
    out[4] = HLL_SPARSE;
    memcpy(out + HLL_HDR_SIZE, ops, n);
    return HLL_HDR_SIZE + n;
}

START_TEST(test_header_refused) {
    uint8_t v[HLL_DENSE_SIZE + 1] = "HYLL";
    ck_assert(!hll_is_hll(v, HLL_HDR_SIZE - 1));
    v[4] = HLL_SPARSE;
    ck_assert(hll_is_hll(v, HLL_HDR_SIZE));
    v[4] = 2;
    ck_assert(!hll_is_hll(v, HLL_EMPTY_SIZE));
    v[4] = HLL_DENSE;
    ck_assert(hll_is_hll(v, HLL_DENSE_SIZE));
    ck_assert(!hll_is_hll(v, HLL_DENSE_SIZE - 1));
    ck_assert(!hll_is_hll(v, HLL_DENSE_SIZE + 1));
    ck_assert(!hll_is_hll(v, HLL_EMPTY_SIZE));
    v[0] = 'h';
    ck_assert(!hll_is_hll(v, HLL_DENSE_SIZE));
}
END_TEST

START_TEST(test_sparse_refused) {
    uint8_t v[64];
    /* Well formed: one XZERO; two halves; an XZERO of one then the rest. */
    ck_assert(hll_registers_valid(v, sparse_of(v, (uint8_t[]){0x7f, 0xff}, 2)));
    ck_assert(hll_registers_valid(v, sparse_of(v, (uint8_t[]){0x5f, 0xff, 0x5f, 0xff}, 4)));
    ck_assert(hll_registers_valid(v, sparse_of(v, (uint8_t[]){0x40, 0x00, 0x7f, 0xfe}, 4)));
    /* No opcode: no register. */
    ck_assert(!hll_registers_valid(v, sparse_of(v, (uint8_t[]){0}, 0)));
    /* Bytes after the last register. */
    ck_assert(!hll_registers_valid(v, sparse_of(v, (uint8_t[]){0x7f, 0xff, 0x80}, 3)));
    ck_assert(!hll_registers_valid(v, sparse_of(v, (uint8_t[]){0x7f, 0xff, 0x00}, 3)));
    /* Too few registers. */
    ck_assert(!hll_registers_valid(v, sparse_of(v, (uint8_t[]){0x7f, 0xfe}, 2)));
    /* An XZERO cut short by the end. */
    ck_assert(!hll_registers_valid(v, sparse_of(v, (uint8_t[]){0x7f, 0xfe, 0x40}, 3)));
    /* A VAL run past the last register (16383 zeros, then 4 values). */
    ck_assert(!hll_registers_valid(v, sparse_of(v, (uint8_t[]){0x7f, 0xfe, 0x83}, 3)));
    /* Zero runs past the last register. */
    ck_assert(!hll_registers_valid(v, sparse_of(v, (uint8_t[]){0x7f, 0xff, 0x7f, 0xff}, 4)));
    /* Dense values are always well formed. */
    uint8_t d[HLL_DENSE_SIZE];
    memset(d, 0xff, sizeof(d));
    memcpy(d, "HYLL", 4);
    d[4] = HLL_DENSE;
    ck_assert(hll_registers_valid(d, sizeof(d)));
    (void)hll_count(d, sizeof(d)); /* registers of 63 count without fault */
}
END_TEST

/* An XZERO covering one register (Valkey never writes one, a client may)
 * is replaced whole by the VAL that raises it. */
START_TEST(test_sparse_xzero_of_one) {
    uint8_t v[64];
    size_t n = sparse_of(v, (uint8_t[]){0x40, 0x00, 0x7f, 0xfe}, 4);
    hll h;
    hll_init_from(&h, v, n);
    ck_assert_int_eq(hll_set(&h, 0, 3, 3000), 1);
    ck_assert(hll_registers_valid(h.p, h.len));
    uint8_t regs[HLL_REGISTERS];
    registers_of(h.p, h.len, regs);
    ck_assert_uint_eq(regs[0], 3);
    for (uint32_t i = 1; i < HLL_REGISTERS; i++)
        ck_assert_uint_eq(regs[i], 0);
    hll_free(&h);
}
END_TEST

/* hll_merge_into of a dense value (eight registers per 64-bit word) agrees
 * with a register-at-a-time maximum, for every value of both sides. */
START_TEST(test_dense_merge_words) {
    uint8_t *dense = km_calloc(1, HLL_DENSE_SIZE);
    memcpy(dense, "HYLL", 4);
    dense[4] = HLL_DENSE;
    uint8_t max[HLL_REGISTERS], want[HLL_REGISTERS];
    srand(7);
    for (int round = 0; round < 20; round++) {
        for (uint32_t i = 0; i < HLL_REGISTERS; i++) {
            /* Round 0 puts each pair of values side by side at least once. */
            unsigned a = round ? (unsigned)rand() & 63 : i & 63;
            unsigned b = round ? (unsigned)rand() & 63 : (i >> 6) & 63;
            hll_dense_set(dense + HLL_HDR_SIZE, i, a);
            max[i] = (uint8_t)b;
            want[i] = (uint8_t)(a > b ? a : b);
        }
        hll_merge_into(max, dense, HLL_DENSE_SIZE);
        ck_assert_mem_eq(max, want, HLL_REGISTERS);
    }
    km_free(dense);
}
END_TEST

START_TEST(test_selftest) {
    char err[128] = "";
    ck_assert_msg(hll_selftest(3000, err, sizeof(err)) == K_OK, "%s", err);
}
END_TEST

static Suite *hll_suite(void) {
    Suite *s = suite_create("hll");
    TCase *tc = tcase_create("hll");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_valkey_values);
    tcase_add_test(tc, test_valkey_merges);
    tcase_add_test(tc, test_dense_merge_words);
    tcase_add_test(tc, test_valkey_unions);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_dense_registers);
    tcase_add_test(tc, test_sparse_matches_dense);
    tcase_add_test(tc, test_promotion_thresholds);
    tcase_add_test(tc, test_cache);
    tcase_add_test(tc, test_header_refused);
    tcase_add_test(tc, test_sparse_refused);
    tcase_add_test(tc, test_sparse_xzero_of_one);
    tcase_add_test(tc, test_selftest);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(hll_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
