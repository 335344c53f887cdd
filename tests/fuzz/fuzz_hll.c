/* fuzz_hll.c -- libFuzzer target for the HyperLogLog unit (core/ds/hll.c)
 * over values a client could store: arbitrary bytes given to the checks,
 * and every operation on the values they accept, with the invariants
 * checked against a plain array of registers.
 *
 * An input is a mode byte, the length L of the value part (2 bytes, little
 * endian, cut to what the input has), L bytes of value part, then the
 * steps. The mode picks how the value part becomes a value:
 *   0  it is the value, as is (headers, lengths, opcodes of any kind:
 *      mostly refused);
 *   1  it is sparse opcodes after a sparse header, followed by the XZERO
 *      runs that fill what they leave of the 16384 registers (so most
 *      inputs decode, with runs of every shape);
 *   2  it is a dense value's registers, cut or zero-padded to the dense
 *      size after a dense header.
 * A value the checks accept is then counted, merged, described and
 * converted, and raised by the steps: 3 bytes each, an element to hash or
 * an (index, count) pair; the last two bytes of the input give
 * hll-sparse-max-bytes (0..3999, so small ones promote early).
 * Each value lives in an allocation of its exact size, so ASan reports
 * any read past it. Invariants (any failure aborts):
 *   - a value stays accepted by both checks after every operation;
 *   - its registers are the elementwise maximum of what was set, and
 *     hll_set reports a change exactly when one rose;
 *   - a value still sparse after a raise that grew it fits
 *     hll-sparse-max-bytes;
 *   - sparse and dense forms of the same registers count the same, as do
 *     hll_count and hll_count_registers. */
#include "common/kmem.h"
#include "ds/hll.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT 65536
#define FUZZ_MAX_STEPS 2048

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_hll: %s:%d: %s\n", __FILE__, __LINE__, #cond);                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The value of an input's value part (mode, n bytes at rest): an
 * exact-size copy. */
static uint8_t *value_of(uint8_t mode, const uint8_t *rest, size_t n, size_t *len) {
    uint8_t *v;
    if (mode == 0) {
        *len = n;
        v = km_alloc(n ? n : 1);
        if (n) memcpy(v, rest, n);
        return v;
    }
    if (mode == 2) {
        *len = HLL_DENSE_SIZE;
        v = km_alloc(HLL_DENSE_SIZE);
        memset(v, 0, HLL_DENSE_SIZE);
        memcpy(v, "HYLL", 4);
        v[4] = HLL_DENSE;
        memcpy(v + HLL_HDR_SIZE, rest,
               n < HLL_DENSE_SIZE - HLL_HDR_SIZE ? n : HLL_DENSE_SIZE - HLL_HDR_SIZE);
        return v;
    }
    /* Sparse: count what the opcodes cover (stopping at a cut XZERO),
     * then fill the rest with XZEROs. */
    uint32_t covered = 0;
    for (size_t i = 0; i < n;) {
        uint8_t b = rest[i];
        if ((b & 0xc0) == 0) {
            covered += (b & 0x3fu) + 1, i++;
        } else if ((b & 0xc0) == 0x40) {
            if (i + 1 >= n) break;
            covered += ((b & 0x3fu) << 8 | rest[i + 1]) + 1, i += 2;
        } else {
            covered += (b & 3u) + 1, i++;
        }
    }
    uint32_t missing = covered < HLL_REGISTERS ? HLL_REGISTERS - covered : 0;
    size_t fill = (missing + 16383) / 16384 * 2;
    *len = HLL_HDR_SIZE + n + fill;
    v = km_alloc(*len);
    memset(v, 0, HLL_HDR_SIZE);
    memcpy(v, "HYLL", 4);
    v[4] = HLL_SPARSE;
    memcpy(v + HLL_HDR_SIZE, rest, n);
    uint8_t *p = v + HLL_HDR_SIZE + n;
    while (missing) {
        uint32_t run = missing > 16384 ? 16384 : missing;
        p[0] = (uint8_t)(0x40 | (run - 1) >> 8);
        p[1] = (uint8_t)((run - 1) & 0xff);
        p += 2;
        missing -= run;
    }
    return v;
}

/* Checks h as a stored value would be: an exact-size copy. */
static void check_valid(const hll *h) {
    uint8_t *copy = km_alloc(h->len);
    memcpy(copy, h->p, h->len);
    CHECK(hll_is_hll(copy, h->len));
    CHECK(hll_registers_valid(copy, h->len));
    km_free(copy);
}

static void registers_of(const uint8_t *s, size_t len, uint8_t regs[HLL_REGISTERS]) {
    memset(regs, 0, HLL_REGISTERS);
    hll_merge_into(regs, s, len);
}

/* Everything that reads a value, on a value both checks accept. */
static void read_all(const uint8_t *v, size_t len, uint8_t regs[HLL_REGISTERS]) {
    registers_of(v, len, regs);
    uint64_t card = hll_count(v, len);
    CHECK(card == hll_count_registers(regs));
    if (hll_encoding(v) == HLL_SPARSE) {
        for (uint32_t i = 0; i < HLL_REGISTERS; i++)
            CHECK(regs[i] <= HLL_SPARSE_VAL_MAX);
        size_t n;
        char *text = hll_sparse_describe(v, len, &n);
        CHECK(strlen(text) == n);
        km_free(text);
        hll h;
        hll_init_from(&h, v, len);
        CHECK(hll_to_dense(&h) == 1);
        check_valid(&h);
        CHECK(memcmp(h.p, v, 4) == 0 && memcmp(h.p + 5, v + 5, HLL_HDR_SIZE - 5) == 0);
        uint8_t dense_regs[HLL_REGISTERS];
        registers_of(h.p, h.len, dense_regs);
        CHECK(memcmp(regs, dense_regs, HLL_REGISTERS) == 0);
        CHECK(hll_count(h.p, h.len) == card);
        hll_free(&h);
    }
}

/* One raise: the result is still valid, the registers the maximum. */
static void raise_checked(hll *h, uint8_t regs[HLL_REGISTERS], uint32_t index, unsigned count,
                          size_t sparse_max) {
    size_t before = h->len;
    int was_sparse = hll_encoding(h->p) == HLL_SPARSE;
    int changed = hll_set(h, index, count, sparse_max);
    check_valid(h);
    int rises = count > regs[index];
    CHECK(changed == rises);
    if (rises) regs[index] = (uint8_t)count;
    if (was_sparse && hll_encoding(h->p) == HLL_SPARSE && h->len > before)
        CHECK(h->len <= sparse_max);
    uint64_t cached;
    if (changed) CHECK(!hll_cache_get(h->p, &cached));
}

/* The tail of the input drives raises: 3 bytes per step, the first
 * choosing between an element (hashed) and a direct (index, count). */
static void raise_all(hll *h, uint8_t regs[HLL_REGISTERS], const uint8_t *in, size_t n,
                      size_t sparse_max) {
    for (size_t i = 0, steps = 0; i + 3 <= n && steps < FUZZ_MAX_STEPS; i += 3, steps++) {
        uint32_t index;
        unsigned count;
        if (in[i] & 1) {
            count = hll_pattern(in + i, 3, &index);
        } else {
            index = ((uint32_t)in[i + 1] << 8 | in[i + 2]) % HLL_REGISTERS;
            count = 1 + (in[i] >> 1) % 40; /* 33..40 promote a sparse value */
        }
        raise_checked(h, regs, index, count, sparse_max);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3 || size > FUZZ_MAX_INPUT) return 0;
    size_t part = (size_t)data[1] | (size_t)data[2] << 8;
    if (part > size - 3) part = size - 3;
    const uint8_t *tail = data + 3 + part;
    size_t tail_len = size - 3 - part;
    size_t len;
    uint8_t *v = value_of(data[0] % 3, data + 3, part, &len);
    if (!hll_is_hll(v, len) || !hll_registers_valid(v, len)) {
        km_free(v);
        return 0;
    }
    uint8_t *regs = km_alloc(HLL_REGISTERS);
    read_all(v, len, regs);

    size_t sparse_max = ((size_t)data[size - 2] << 8 | data[size - 1]) % 4000;
    hll h;
    hll_init_from(&h, v, len);
    raise_all(&h, regs, tail, tail_len, sparse_max);
    uint8_t got[HLL_REGISTERS];
    registers_of(h.p, h.len, got);
    CHECK(memcmp(got, regs, HLL_REGISTERS) == 0);
    read_all(h.p, h.len, got);

    /* PFMERGE into an empty value: the same registers. */
    hll m;
    hll_init(&m);
    hll_raise_all(&m, regs, sparse_max);
    check_valid(&m);
    registers_of(m.p, m.len, got);
    CHECK(memcmp(got, regs, HLL_REGISTERS) == 0);
    CHECK(hll_count(m.p, m.len) == hll_count(h.p, h.len));
    size_t rlen, rcap;
    uint8_t *buf = hll_release(&m, &rlen, &rcap);
    CHECK(rlen <= rcap && buf[rlen] == '\0');
    km_free(buf);

    hll_free(&h);
    km_free(regs);
    km_free(v);
    return 0;
}
