/* hll.h -- HyperLogLog: the value format and its algorithms.
 *
 * An HLL is a string value, byte for byte Valkey 8.0.1's, so that a value
 * written by one server counts the same in the other:
 *   "HYLL", an encoding byte (HLL_DENSE, HLL_SPARSE), 3 unused bytes, the
 *   cached cardinality (8 bytes little endian; the top bit of the last
 *   byte set means "stale"), then the registers:
 *   - dense: 16384 registers of 6 bits, packed from the low bit of each
 *     byte up (12288 bytes);
 *   - sparse: run-length opcodes covering exactly the 16384 registers:
 *     ZERO 00llllll (1..64 zeros), XZERO 01llllll llllllll (1..16384
 *     zeros, a 14-bit length), VAL 1vvvvvll (1..4 registers holding
 *     1..32); each length and value is stored minus one.
 * An element hashes with MurmurHash64A (seed 0xadc83b19): the low 14 bits
 * pick the register, the position of the first 1 bit in the other 50
 * (counted from 1, with a sentinel bit above them) is its value; the
 * cardinality is Ertl's improved estimator over the register histogram.
 *
 * Values come from clients (SET of crafted bytes), so nothing here reads a
 * value before hll_is_hll and hll_registers_valid accepted it; the
 * functions that take a value assume both, yet still stay inside its
 * bytes if handed one that is not.
 *
 * Pure code: no keyspace, no client; memory through common/kmem.h. */
#ifndef KEEL_HLL_H
#define KEEL_HLL_H

#include <stddef.h>
#include <stdint.h>

#define HLL_P 14
#define HLL_Q (64 - HLL_P)
#define HLL_REGISTERS (1u << HLL_P)
#define HLL_BITS 6
#define HLL_REGISTER_MAX ((1u << HLL_BITS) - 1)
#define HLL_HDR_SIZE 16
#define HLL_DENSE_SIZE (HLL_HDR_SIZE + HLL_REGISTERS * HLL_BITS / 8)
/* The encoding byte. */
#define HLL_DENSE 0
#define HLL_SPARSE 1
/* The largest value a sparse VAL opcode holds: a bigger one promotes the
 * value to dense. */
#define HLL_SPARSE_VAL_MAX 32
/* A new value: sparse, one XZERO over every register. */
#define HLL_EMPTY_SIZE (HLL_HDR_SIZE + 2)

/* MurmurHash64A of key with seed, reading the bytes little endian. */
uint64_t hll_murmur64a(const void *key, size_t len, uint64_t seed);
/* The register an element updates (*index) and the value it offers
 * (1..HLL_Q+1). */
unsigned hll_pattern(const void *ele, size_t len, uint32_t *index);

/* 1 if s looks like an HLL: long enough for the header, the magic, a known
 * encoding, and for dense the exact length (Valkey's isHLLObjectOrReply:
 * a value that fails is "not a valid HyperLogLog string value"). */
int hll_is_hll(const uint8_t *s, size_t len);
/* 1 if the registers of a value hll_is_hll accepted are well formed: a
 * sparse value's opcodes cover exactly HLL_REGISTERS registers, none cut
 * short (a value that fails is "Corrupted HLL object"). Dense always is. */
int hll_registers_valid(const uint8_t *s, size_t len);

static inline int hll_encoding(const uint8_t *s) {
    return s[4];
}
/* 1 and *card when the cached cardinality is current. */
int hll_cache_get(const uint8_t *s, uint64_t *card);
void hll_cache_set(uint8_t *s, uint64_t card);
static inline void hll_cache_invalidate(uint8_t *s) {
    s[15] |= 0x80;
}

/* Register i (< HLL_REGISTERS) of dense registers regs. */
unsigned hll_dense_get(const uint8_t *regs, uint32_t i);
void hll_dense_set(uint8_t *regs, uint32_t i, unsigned val);

/* The estimated cardinality of a valid value. */
uint64_t hll_count(const uint8_t *s, size_t len);
/* max[i] = MAX(max[i], register i of the valid value s). */
void hll_merge_into(uint8_t max[HLL_REGISTERS], const uint8_t *s, size_t len);
/* The estimated cardinality of registers held one per byte (a union). */
uint64_t hll_count_registers(const uint8_t regs[HLL_REGISTERS]);

/* PFDEBUG DECODE of a valid sparse value: its opcodes as words ("z:N"
 * ZERO, "Z:N" XZERO, "v:VALUE,N" VAL) separated by spaces; km_alloc'ed,
 * NUL-terminated, *outlen bytes. */
char *hll_sparse_describe(const uint8_t *s, size_t len, size_t *outlen);

/* A value being modified, in a buffer of its own: len bytes used, cap + 1
 * allocated (room for a string object's NUL, see hll_release). */
typedef struct hll {
    uint8_t *p;
    size_t len;
    size_t cap;
} hll;

/* An empty value (sparse, cached cardinality 0). */
void hll_init(hll *h);
/* A copy of the value s (validated by the caller). */
void hll_init_from(hll *h, const uint8_t *s, size_t len);
void hll_free(hll *h);
/* Hands the buffer over (NUL-terminated at len, km_alloc'ed, cap + 1
 * bytes) and leaves h empty. */
uint8_t *hll_release(hll *h, size_t *len, size_t *cap);

/* Raises register index to count if it is lower; returns 1 if it changed
 * (the cached cardinality is then stale), else 0. A sparse value becomes
 * dense when count exceeds HLL_SPARSE_VAL_MAX or the value would grow
 * past sparse_max bytes (hll-sparse-max-bytes), as Valkey's does. */
int hll_set(hll *h, uint32_t index, unsigned count, size_t sparse_max);
/* hll_set of every register i to max[i], in register order (PFMERGE's
 * order: a sparse value grows, and may be promoted, as Valkey's does);
 * returns 1 if any changed. */
int hll_raise_all(hll *h, const uint8_t max[HLL_REGISTERS], size_t sparse_max);
/* hll_set of the register and value an element hashes to. */
int hll_add(hll *h, const void *ele, size_t len, size_t sparse_max);
/* Converts a sparse value to dense, keeping the header but the encoding;
 * returns 1 if it converted, 0 if it was dense already. */
int hll_to_dense(hll *h);

/* PFSELFTEST: register access round trips over random values, then the
 * estimate's error at cardinalities 1, 10, ..., 10^7 for a dense and a
 * sparse value fed the same elements (and their agreement). K_OK, or
 * K_ERR with Valkey's "TESTFAILED ..." message in err. */
int hll_selftest(size_t sparse_max, char *err, size_t errlen);

#endif
