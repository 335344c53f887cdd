/* bitops.h -- bit algorithms over byte strings, with no server state: the
 * population count, the search for the first set or clear bit, integer
 * fields of 1..64 bits at any bit offset (BITFIELD), their overflow rules,
 * and AND/OR/XOR/NOT of several sources (BITOP).
 *
 * Bit numbering is Valkey's: bit 0 is the most significant bit of byte 0,
 * bit 8 the most significant of byte 1, and a field is read from its first
 * bit (most significant) to its last, so byte-aligned fields are big
 * endian.
 *
 * Threads: any (no state: the population count asks the CPU on each call
 * whether it has the POPCNT instruction). */
#ifndef KEEL_BITOPS_H
#define KEEL_BITOPS_H

#include <stddef.h>
#include <stdint.h>

/* Set bits in p[0..n). */
uint64_t bitops_popcount(const void *p, size_t n);
/* The implementations bitops_popcount chooses between, for the tests:
 * portable C; the CPU's POPCNT instruction (the portable one where the CPU
 * or compiler has none; bitops_popcount_hw_available says which); and, for
 * strings of 256 bytes and more, AVX2 (POPCNT's path where the CPU has no
 * AVX2; bitops_popcount_avx2_available). */
uint64_t bitops_popcount_portable(const void *p, size_t n);
uint64_t bitops_popcount_hw(const void *p, size_t n);
int bitops_popcount_hw_available(void);
uint64_t bitops_popcount_avx2(const void *p, size_t n);
int bitops_popcount_avx2_available(void);

/* The position of the first bit equal to `bit` (0 or 1) in p[0..n). When
 * there is none: -1 when looking for a 1; n * 8 when looking for a 0, as
 * if the string went on with zero bytes (the caller decides whether the
 * bit past the end counts). */
int64_t bitops_bitpos(const void *p, size_t n, int bit);

/* The `bits`-wide field (1..64) at bit `offset`, as an unsigned or a
 * two's-complement signed integer; every byte it touches must exist. */
uint64_t bitops_get_unsigned(const uint8_t *p, uint64_t offset, unsigned bits);
int64_t bitops_get_signed(const uint8_t *p, uint64_t offset, unsigned bits);
/* Writes the low `bits` bits of value into the field at `offset`. */
void bitops_set(uint8_t *p, uint64_t offset, unsigned bits, uint64_t value);

/* BITFIELD's overflow rules. */
typedef enum bitops_overflow {
    BITOPS_WRAP, /* keep the low bits (signed: sign-extended from the field's top bit) */
    BITOPS_SAT,  /* clamp to the field's minimum or maximum */
    BITOPS_FAIL, /* refuse: the caller writes nothing */
} bitops_overflow;

/* value + incr stored in a `bits`-wide unsigned field (1..63): returns 0
 * and *out = the sum when it fits; otherwise 1 (above the maximum) or -1
 * (below zero) with *out the result under `mode` (unset under FAIL).
 * value is taken as the unsigned 64-bit number it is, so a SET of a
 * negative number is an overflow (to the maximum under SAT), as Valkey
 * has it. */
int bitops_add_unsigned(uint64_t value, int64_t incr, unsigned bits, bitops_overflow mode,
                        uint64_t *out);
/* The same for a signed field (1..64) and a signed value. With an
 * increment, value is the field's (in range); a SET passes incr 0. As in
 * Valkey 8.0.1, a SET of a value more than 2^63 below the field's maximum
 * (INT64_MIN for any width, any value below -2^62 for i63) counts as an
 * overflow upwards: SAT stores the maximum. */
int bitops_add_signed(int64_t value, int64_t incr, unsigned bits, bitops_overflow mode,
                      int64_t *out);

typedef enum bitops_op {
    BITOPS_AND,
    BITOPS_OR,
    BITOPS_XOR,
    BITOPS_NOT, /* of srcs[0] only */
} bitops_op;

/* dst[0..dstlen) = op over the n sources, each srcs[i][0..lens[i]) read
 * as if padded with zero bytes to dstlen (a missing key is a source of
 * length 0). */
void bitops_combine(bitops_op op, uint8_t *dst, size_t dstlen, const uint8_t *const *srcs,
                    const size_t *lens, size_t n);

#endif
