/* hll.c -- HyperLogLog values (see hll.h): hashing, the dense and sparse
 * register encodings, the conversion between them, and the estimator. */
#include "ds/hll.h"

#include "common/common.h"
#include "common/kmem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HLL_SEED 0xadc83b19ULL
/* 0.5 / ln(2): the estimator's constant for m -> infinity. */
#define HLL_ALPHA_INF 0.721347520444481703680

/* ---- hashing ---- */

uint64_t hll_murmur64a(const void *key, size_t len, uint64_t seed) {
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    const int r = 47;
    uint64_t h = seed ^ ((uint64_t)len * m);
    const uint8_t *p = key;
    size_t blocks = len / 8;
    for (size_t i = 0; i < blocks; i++, p += 8) {
        uint64_t k = 0;
        for (int b = 7; b >= 0; b--)
            k = k << 8 | p[b];
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
    }
    size_t tail = len & 7;
    if (tail) {
        for (size_t b = tail; b-- > 0;)
            h ^= (uint64_t)p[b] << (8 * b);
        h *= m;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

unsigned hll_pattern(const void *ele, size_t len, uint32_t *index) {
    uint64_t hash = hll_murmur64a(ele, len, HLL_SEED);
    *index = (uint32_t)(hash & (HLL_REGISTERS - 1));
    /* The sentinel bit bounds the run of zeros at HLL_Q. */
    hash = hash >> HLL_P | (uint64_t)1 << HLL_Q;
    return 1 + (unsigned)__builtin_ctzll(hash);
}

/* ---- header ---- */

int hll_is_hll(const uint8_t *s, size_t len) {
    if (len < HLL_HDR_SIZE || memcmp(s, "HYLL", 4) != 0) return 0;
    if (s[4] == HLL_DENSE) return len == HLL_DENSE_SIZE;
    return s[4] == HLL_SPARSE;
}

int hll_cache_get(const uint8_t *s, uint64_t *card) {
    if (s[15] & 0x80) return 0;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | s[8 + i];
    *card = v;
    return 1;
}

void hll_cache_set(uint8_t *s, uint64_t card) {
    for (int i = 0; i < 8; i++)
        s[8 + i] = (uint8_t)(card >> (8 * i));
}

/* ---- dense registers ---- */

/* Register i starts at bit 6i; it spills into the next byte only when it
 * starts above bit 2, so the last register never reads past the array. */
unsigned hll_dense_get(const uint8_t *regs, uint32_t i) {
    size_t byte = (size_t)i * HLL_BITS / 8;
    unsigned shift = (unsigned)(i * HLL_BITS) & 7;
    unsigned v = regs[byte] >> shift;
    if (shift > 8 - HLL_BITS) v |= (unsigned)regs[byte + 1] << (8 - shift);
    return v & HLL_REGISTER_MAX;
}

void hll_dense_set(uint8_t *regs, uint32_t i, unsigned val) {
    size_t byte = (size_t)i * HLL_BITS / 8;
    unsigned shift = (unsigned)(i * HLL_BITS) & 7;
    regs[byte] = (uint8_t)((regs[byte] & ~(HLL_REGISTER_MAX << shift)) | val << shift);
    if (shift > 8 - HLL_BITS) {
        unsigned up = 8 - shift;
        regs[byte + 1] = (uint8_t)((regs[byte + 1] & ~(HLL_REGISTER_MAX >> up)) |
                                   (val & HLL_REGISTER_MAX) >> up);
    }
}

/* Four registers per three bytes. */
static void dense_histogram(const uint8_t *r, int histo[64]) {
    for (size_t j = 0; j < HLL_REGISTERS / 4; j++, r += 3) {
        histo[r[0] & 63]++;
        histo[(r[0] >> 6 | r[1] << 2) & 63]++;
        histo[(r[1] >> 4 | r[2] << 4) & 63]++;
        histo[r[2] >> 2]++;
    }
}

/* Raises max[i] to each dense register, eight at a time in one 64-bit
 * word (SWAR): the six bytes holding eight registers are spread to one
 * register per byte, and the bytewise maximum is taken without branches
 * (registers are below 64, so (a | 0x80) - b borrows across no byte and
 * keeps bit 7 exactly where a >= b). A PFCOUNT or PFMERGE of several dense
 * keys spends most of its time here: about 4 instructions per register,
 * against 12 for a register at a time. */
static void dense_max_into(uint8_t *max, const uint8_t *r) {
    const uint64_t hi = 0x8080808080808080ULL;
    for (size_t j = 0; j < HLL_REGISTERS; j += 8, r += 6) {
        uint64_t w = (uint64_t)r[0] | (uint64_t)r[1] << 8 | (uint64_t)r[2] << 16 |
                     (uint64_t)r[3] << 24 | (uint64_t)r[4] << 32 | (uint64_t)r[5] << 40;
        /* Register k moves from bit 6k to bit 8k (spelt out: -O2 does not
         * unroll a loop over k). */
        uint64_t v = (w & 0x3fULL) | (w << 2 & 0x3f00ULL) | (w << 4 & 0x3f0000ULL) |
                     (w << 6 & 0x3f000000ULL) | (w << 8 & 0x3f00000000ULL) |
                     (w << 10 & 0x3f0000000000ULL) | (w << 12 & 0x3f000000000000ULL) |
                     (w << 14 & 0x3f00000000000000ULL);
        uint64_t m;
        memcpy(&m, max + j, 8);
        uint64_t ge = (((v | hi) - m) & hi) >> 7; /* 1 in each byte where v >= m */
        uint64_t mask = ge * 0xff;
        m = (v & mask) | (m & ~mask);
        memcpy(max + j, &m, 8);
    }
}

/* ---- sparse opcodes ---- */

#define OP_IS_ZERO(b) (((b)&0xc0) == 0)
#define OP_IS_XZERO(b) (((b)&0xc0) == 0x40)
#define OP_ZERO_MAX 64
#define OP_XZERO_MAX 16384
#define OP_VAL_MAX_LEN 4

/* One decoded opcode: its bytes, the registers it covers and their value
 * (0 for the zero runs). */
typedef struct sparse_op {
    unsigned size;
    uint32_t span;
    unsigned val;
} sparse_op;

/* Decodes the opcode at p; 0 when an XZERO is cut short by end. */
static int op_decode(const uint8_t *p, const uint8_t *end, sparse_op *op) {
    if (OP_IS_ZERO(*p)) {
        *op = (sparse_op){1, (uint32_t)(*p & 0x3f) + 1, 0};
    } else if (OP_IS_XZERO(*p)) {
        if (end - p < 2) return 0;
        *op = (sparse_op){2, ((uint32_t)(*p & 0x3f) << 8 | p[1]) + 1, 0};
    } else {
        *op = (sparse_op){1, (uint32_t)(*p & 3) + 1, ((*p >> 2) & 0x1f) + 1u};
    }
    return 1;
}

static uint8_t op_val(unsigned val, unsigned len) {
    return (uint8_t)(0x80 | (val - 1) << 2 | (len - 1));
}

/* Writes a run of len zeros (1..16384) at out; returns its bytes. */
static unsigned op_put_zeros(uint8_t *out, uint32_t len) {
    if (len > OP_ZERO_MAX) {
        out[0] = (uint8_t)(0x40 | (len - 1) >> 8);
        out[1] = (uint8_t)((len - 1) & 0xff);
        return 2;
    }
    out[0] = (uint8_t)(len - 1);
    return 1;
}

/* Calls fn for every run of the sparse registers of s (start register,
 * span, value), stopping at the first run past the registers; returns the
 * registers covered, or UINT32_MAX past the end or for a cut opcode. */
static uint32_t sparse_walk(const uint8_t *s, size_t len,
                            void (*fn)(void *priv, uint32_t first, uint32_t span, unsigned val),
                            void *priv) {
    const uint8_t *p = s + HLL_HDR_SIZE, *end = s + len;
    uint32_t idx = 0;
    sparse_op op;
    while (p < end) {
        if (!op_decode(p, end, &op) || op.span > HLL_REGISTERS - idx) return UINT32_MAX;
        if (fn) fn(priv, idx, op.span, op.val);
        idx += op.span;
        p += op.size;
    }
    return idx;
}

/* The registers the opcodes from p to end cover, or UINT32_MAX once they
 * pass the last register or an XZERO is cut short: sparse_walk without the
 * callback and its decoding, since every command on a sparse value runs
 * this check first (it was half of a PFADD on a 1 KB value). */
static uint32_t sparse_span(const uint8_t *p, const uint8_t *end) {
    uint32_t idx = 0;
    while (p < end) {
        unsigned b = *p;
        if (b & 0x80) { /* VAL */
            idx += (b & 3) + 1;
            p++;
        } else if (b & 0x40) { /* XZERO */
            if (end - p < 2) return UINT32_MAX;
            idx += ((b & 0x3f) << 8 | p[1]) + 1;
            p += 2;
        } else { /* ZERO */
            idx += (b & 0x3f) + 1;
            p++;
        }
        if (idx > HLL_REGISTERS) return UINT32_MAX;
    }
    return idx;
}

int hll_registers_valid(const uint8_t *s, size_t len) {
    if (hll_encoding(s) == HLL_DENSE) return 1;
    return sparse_span(s + HLL_HDR_SIZE, s + len) == HLL_REGISTERS;
}

static void histo_run(void *priv, uint32_t first, uint32_t span, unsigned val) {
    K_UNUSED(first);
    ((int *)priv)[val] += (int)span;
}

static void max_run(void *priv, uint32_t first, uint32_t span, unsigned val) {
    uint8_t *max = priv;
    for (uint32_t i = first; i < first + span; i++)
        if (val > max[i]) max[i] = (uint8_t)val;
}

static void dense_run(void *priv, uint32_t first, uint32_t span, unsigned val) {
    if (!val) return;
    for (uint32_t i = first; i < first + span; i++)
        hll_dense_set(priv, i, val);
}

/* ---- the estimator (Ertl, "New cardinality estimation algorithms for
 * HyperLogLog sketches", arXiv:1702.01284), evaluated in the same order
 * as Valkey so that the doubles, and the counts, are the same. ---- */

static double hll_sigma(double x) {
    if (x == 1.) return INFINITY;
    double z = x, y = 1, prev;
    do {
        x *= x;
        prev = z;
        z += x * y;
        y += y;
    } while (prev != z);
    return z;
}

static double hll_tau(double x) {
    if (x == 0. || x == 1.) return 0.;
    double z = 1 - x, y = 1.0, prev;
    do {
        x = sqrt(x);
        prev = z;
        y *= 0.5;
        z -= pow(1 - x, 2) * y;
    } while (prev != z);
    return z / 3;
}

/* Registers above HLL_Q + 1 (only a crafted dense value has them) are left
 * out of the sum, as in Valkey. */
static uint64_t hll_estimate(const int histo[64]) {
    double m = HLL_REGISTERS;
    double z = m * hll_tau((m - histo[HLL_Q + 1]) / m);
    for (int j = HLL_Q; j >= 1; --j) {
        z += histo[j];
        z *= 0.5;
    }
    z += m * hll_sigma(histo[0] / m);
    /* Through long long: a crafted value may estimate out of range. */
    return (uint64_t)llroundl(HLL_ALPHA_INF * m * m / z);
}

uint64_t hll_count(const uint8_t *s, size_t len) {
    int histo[64] = {0};
    if (hll_encoding(s) == HLL_DENSE)
        dense_histogram(s + HLL_HDR_SIZE, histo);
    else
        sparse_walk(s, len, histo_run, histo);
    return hll_estimate(histo);
}

uint64_t hll_count_registers(const uint8_t regs[HLL_REGISTERS]) {
    int histo[64] = {0};
    for (size_t i = 0; i < HLL_REGISTERS; i++)
        histo[regs[i] & 63]++;
    return hll_estimate(histo);
}

void hll_merge_into(uint8_t max[HLL_REGISTERS], const uint8_t *s, size_t len) {
    if (hll_encoding(s) == HLL_SPARSE) {
        sparse_walk(s, len, max_run, max);
        return;
    }
    dense_max_into(max, s + HLL_HDR_SIZE);
}

char *hll_sparse_describe(const uint8_t *s, size_t len, size_t *outlen) {
    /* Seven characters at most per opcode byte ("v:32,4 "). */
    size_t cap = (len - HLL_HDR_SIZE) * 7 + 1, n = 0;
    char *out = km_alloc(cap);
    const uint8_t *p = s + HLL_HDR_SIZE, *end = s + len;
    sparse_op op;
    while (p < end && op_decode(p, end, &op)) {
        if (op.val)
            n += (size_t)snprintf(out + n, cap - n, "v:%u,%u ", op.val, (unsigned)op.span);
        else
            n += (size_t)snprintf(out + n, cap - n, "%c:%u ", op.size == 2 ? 'Z' : 'z',
                                  (unsigned)op.span);
        p += op.size;
    }
    if (n) n--; /* the last word's space */
    out[n] = '\0';
    *outlen = n;
    return out;
}

/* ---- values being modified ---- */

static void hll_reserve(hll *h, size_t need) {
    if (h->cap >= need) return;
    h->p = km_realloc(h->p, need + 1);
    h->cap = need;
}

void hll_init(hll *h) {
    *h = (hll){0};
    hll_reserve(h, HLL_EMPTY_SIZE);
    memset(h->p, 0, HLL_HDR_SIZE);
    memcpy(h->p, "HYLL", 4);
    h->p[4] = HLL_SPARSE;
    h->len = HLL_HDR_SIZE + op_put_zeros(h->p + HLL_HDR_SIZE, HLL_REGISTERS);
}

void hll_init_from(hll *h, const uint8_t *s, size_t len) {
    *h = (hll){0};
    hll_reserve(h, len);
    memcpy(h->p, s, len);
    h->len = len;
}

void hll_free(hll *h) {
    km_free(h->p);
    *h = (hll){0};
}

uint8_t *hll_release(hll *h, size_t *len, size_t *cap) {
    uint8_t *p = h->p;
    p[h->len] = '\0';
    *len = h->len;
    *cap = h->cap;
    *h = (hll){0};
    return p;
}

int hll_to_dense(hll *h) {
    if (hll_encoding(h->p) == HLL_DENSE) return 0;
    uint8_t *dense = km_alloc(HLL_DENSE_SIZE + 1);
    memcpy(dense, h->p, HLL_HDR_SIZE); /* magic, unused bytes, cache */
    dense[4] = HLL_DENSE;
    memset(dense + HLL_HDR_SIZE, 0, HLL_DENSE_SIZE - HLL_HDR_SIZE);
    sparse_walk(h->p, h->len, dense_run, dense + HLL_HDR_SIZE);
    km_free(h->p);
    *h = (hll){dense, HLL_DENSE_SIZE, HLL_DENSE_SIZE};
    return 1;
}

static int dense_raise(uint8_t *regs, uint32_t index, unsigned count) {
    if (hll_dense_get(regs, index) >= count) return 0;
    hll_dense_set(regs, index, count);
    return 1;
}

/* After an update at op (prev: the opcode before it, or NULL), joins
 * adjacent VAL opcodes of equal value while their lengths fit one,
 * looking at up to five opcodes from prev: Valkey's exact pass, so that
 * both servers write the same bytes. */
static void sparse_join(hll *h, size_t from) {
    uint8_t *p = h->p + from, *end = h->p + h->len;
    for (int scan = 5; p < end && scan > 0; scan--) {
        if (OP_IS_XZERO(*p)) {
            p += 2;
            continue;
        }
        if (OP_IS_ZERO(*p)) {
            p++;
            continue;
        }
        if (p + 1 < end && (p[1] & 0x80) && ((p[0] ^ p[1]) & 0x7c) == 0) {
            unsigned len = (p[0] & 3) + (p[1] & 3) + 2u;
            if (len <= OP_VAL_MAX_LEN) {
                unsigned val = ((p[0] >> 2) & 0x1f) + 1u;
                memmove(p, p + 1, (size_t)(end - p - 1));
                *p = op_val(val, len);
                end--;
                h->len--;
                continue; /* the joined opcode may join the next one */
            }
        }
        p++;
    }
}

/* Replaces the opcode at off (covering first..first+span-1 with val, its
 * bytes oldsize) by the runs that raise register index to count. Returns
 * 0 when the value would outgrow sparse_max (the caller promotes). */
static int sparse_split(hll *h, size_t off, const sparse_op *op, uint32_t first, uint32_t index,
                        unsigned count, size_t sparse_max) {
    uint8_t seq[5];
    unsigned n = 0;
    uint32_t last = first + op->span - 1;
    if (op->val == 0) {
        if (index != first) n += op_put_zeros(seq + n, index - first);
        seq[n++] = op_val(count, 1);
        if (index != last) n += op_put_zeros(seq + n, last - index);
    } else {
        if (index != first) seq[n++] = op_val(op->val, index - first);
        seq[n++] = op_val(count, 1);
        if (index != last) seq[n++] = op_val(op->val, last - index);
    }
    size_t newlen = h->len - op->size + n;
    if (n > op->size && newlen > sparse_max) return 0;
    hll_reserve(h, newlen);
    uint8_t *p = h->p + off;
    memmove(p + n, p + op->size, h->len - off - op->size);
    memcpy(p, seq, n);
    h->len = newlen;
    return 1;
}

static int sparse_set(hll *h, uint32_t index, unsigned count, size_t sparse_max) {
    if (count > HLL_SPARSE_VAL_MAX) goto promote;
    /* Find the opcode covering index, and the one before it. */
    size_t off = HLL_HDR_SIZE, prev = 0;
    uint32_t first = 0;
    sparse_op op;
    for (;;) {
        if (off >= h->len || !op_decode(h->p + off, h->p + h->len, &op))
            return 0; /* not a valid value: nothing to raise */
        if (index < first + op.span) break;
        prev = off;
        off += op.size;
        first += op.span;
    }
    if (op.val >= count) return 0;
    if (op.span == 1 && op.size == 1) {
        h->p[off] = op_val(count, 1); /* a ZERO or VAL of one register */
    } else if (!sparse_split(h, off, &op, first, index, count, sparse_max)) {
        goto promote;
    }
    sparse_join(h, prev ? prev : HLL_HDR_SIZE);
    return 1;
promote:
    hll_to_dense(h);
    return dense_raise(h->p + HLL_HDR_SIZE, index, count);
}

int hll_set(hll *h, uint32_t index, unsigned count, size_t sparse_max) {
    if (index >= HLL_REGISTERS || count == 0) return 0;
    int changed = hll_encoding(h->p) == HLL_SPARSE ? sparse_set(h, index, count, sparse_max)
                                                   : dense_raise(h->p + HLL_HDR_SIZE, index, count);
    if (changed) hll_cache_invalidate(h->p);
    return changed;
}

int hll_raise_all(hll *h, const uint8_t max[HLL_REGISTERS], size_t sparse_max) {
    int changed = 0;
    for (uint32_t i = 0; i < HLL_REGISTERS; i++)
        if (max[i]) changed |= hll_set(h, i, max[i], sparse_max);
    return changed;
}

int hll_add(hll *h, const void *ele, size_t len, size_t sparse_max) {
    uint32_t index;
    unsigned count = hll_pattern(ele, len, &index);
    return hll_set(h, index, count, sparse_max);
}

/* ---- PFSELFTEST ---- */

#define HLL_TEST_CYCLES 1000

static int selftest_registers(uint8_t *regs, char *err, size_t errlen) {
    uint8_t want[HLL_REGISTERS];
    for (int cycle = 0; cycle < HLL_TEST_CYCLES; cycle++) {
        for (uint32_t i = 0; i < HLL_REGISTERS; i++) {
            want[i] = (uint8_t)(rand() & HLL_REGISTER_MAX);
            hll_dense_set(regs, i, want[i]);
        }
        for (uint32_t i = 0; i < HLL_REGISTERS; i++) {
            unsigned got = hll_dense_get(regs, i);
            if (got == want[i]) continue;
            snprintf(err, errlen, "TESTFAILED Register %u should be %u but is %u", i,
                     (unsigned)want[i], got);
            return K_ERR;
        }
    }
    return K_OK;
}

/* Checks at cardinalities 1, 10, ..., 10^7 that a dense and a sparse value
 * fed the same elements agree, that the sparse one stayed sparse while
 * small, and that the error is within 6 standard errors (1 at 10, where
 * collisions make more a real possibility). */
static int selftest_error(uint8_t *dense, size_t sparse_max, char *err, size_t errlen) {
    memset(dense + HLL_HDR_SIZE, 0, HLL_DENSE_SIZE - HLL_HDR_SIZE);
    dense[4] = HLL_DENSE;
    hll sparse;
    hll_init(&sparse);
    double relerr = 1.04 / sqrt(HLL_REGISTERS);
    uint64_t seed = (uint64_t)rand() | (uint64_t)rand() << 32;
    uint64_t checkpoint = 1;
    int rc = K_OK;
    for (uint64_t j = 1; j <= 10000000 && rc == K_OK; j++) {
        uint64_t ele = j ^ seed;
        uint32_t index;
        unsigned count = hll_pattern(&ele, sizeof(ele), &index);
        dense_raise(dense + HLL_HDR_SIZE, index, count);
        hll_set(&sparse, index, count, sparse_max);
        if (j != checkpoint) continue;
        checkpoint *= 10;
        uint64_t card = hll_count(dense, HLL_DENSE_SIZE);
        uint64_t maxerr = j == 10 ? 1 : (uint64_t)ceil(relerr * 6 * (double)j);
        uint64_t abserr = card > j ? card - j : j - card;
        if (j < sparse_max / 2 && hll_encoding(sparse.p) != HLL_SPARSE) {
            snprintf(err, errlen, "TESTFAILED sparse encoding not used");
            rc = K_ERR;
        } else if (card != hll_count(sparse.p, sparse.len)) {
            snprintf(err, errlen, "TESTFAILED dense/sparse disagree");
            rc = K_ERR;
        } else if (abserr > maxerr) {
            snprintf(err, errlen, "TESTFAILED Too big error. card:%llu abserr:%llu",
                     (unsigned long long)j, (unsigned long long)abserr);
            rc = K_ERR;
        }
    }
    hll_free(&sparse);
    return rc;
}

int hll_selftest(size_t sparse_max, char *err, size_t errlen) {
    uint8_t *dense = km_alloc(HLL_DENSE_SIZE);
    memset(dense, 0, HLL_DENSE_SIZE);
    memcpy(dense, "HYLL", 4);
    int rc = selftest_registers(dense + HLL_HDR_SIZE, err, errlen);
    if (rc == K_OK) rc = selftest_error(dense, sparse_max, err, errlen);
    km_free(dense);
    return rc;
}
