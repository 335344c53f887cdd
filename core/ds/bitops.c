/* bitops.c -- see bitops.h. Words are read with memcpy, so no function
 * needs its input aligned. */
#include "ds/bitops.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* ---- population count ---- */

static unsigned popcount_byte(uint8_t b) {
    b = (uint8_t)(b - ((b >> 1) & 0x55));
    b = (uint8_t)((b & 0x33) + ((b >> 2) & 0x33));
    return (unsigned)((b + (b >> 4)) & 0x0f);
}

/* The SWAR count of one word: bits per 2, 4, 8 bits, then summed by a
 * multiplication into the top byte. */
static unsigned popcount_word(uint64_t w) {
    w = w - ((w >> 1) & 0x5555555555555555ULL);
    w = (w & 0x3333333333333333ULL) + ((w >> 2) & 0x3333333333333333ULL);
    w = (w + (w >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return (unsigned)((w * 0x0101010101010101ULL) >> 56);
}

uint64_t bitops_popcount_portable(const void *p, size_t n) {
    const uint8_t *s = p;
    uint64_t bits = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, sizeof(w));
        bits += popcount_word(w);
    }
    for (; i < n; i++)
        bits += popcount_byte(s[i]);
    return bits;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define BITOPS_HAVE_POPCNT 1

/* Compiled for the POPCNT instruction whatever the build's target: only
 * called once the CPU says it has one. Four words per round keep the
 * instruction's latency hidden. */
__attribute__((target("popcnt"))) static uint64_t popcount_popcnt(const uint8_t *s, size_t n) {
    uint64_t b0 = 0, b1 = 0, b2 = 0, b3 = 0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, s + i, sizeof(w));
        b0 += (uint64_t)__builtin_popcountll(w[0]);
        b1 += (uint64_t)__builtin_popcountll(w[1]);
        b2 += (uint64_t)__builtin_popcountll(w[2]);
        b3 += (uint64_t)__builtin_popcountll(w[3]);
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, sizeof(w));
        b0 += (uint64_t)__builtin_popcountll(w);
    }
    for (; i < n; i++)
        b1 += (uint64_t)__builtin_popcount(s[i]);
    return b0 + b1 + b2 + b3;
}

/* AVX2, again compiled for it whatever the build's target and called only
 * once the CPU says it has it: each byte's two nibbles are counted by a
 * 16-entry table lookup (PSHUFB), and the byte counts of 32 bytes summed
 * into four words by PSADBW (Mula's method). Per 32 bytes that is about
 * ten instructions against four POPCNTs and their adds, and a long string
 * is then read at memory speed. Counts in `acc` stay far below overflow:
 * each 64-bit lane gains at most 64 per step. */
__attribute__((target("avx2"))) static uint64_t popcount_avx2(const uint8_t *s, size_t n) {
    const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1,
                                           2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i low = _mm256_set1_epi8(0x0f);
    __m256i acc = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, low));
        __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
        acc =
            _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_add_epi8(lo, hi), _mm256_setzero_si256()));
    }
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, acc);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3] + popcount_popcnt(s + i, n - i);
}

/* Below this many bytes POPCNT wins: AVX2's set-up and final sum cost
 * about what it saves on a few words. */
#define POPCOUNT_AVX2_MIN 256
#endif

int bitops_popcount_avx2_available(void) {
#ifdef BITOPS_HAVE_POPCNT
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
#else
    return 0;
#endif
}

uint64_t bitops_popcount_avx2(const void *p, size_t n) {
#ifdef BITOPS_HAVE_POPCNT
    if (bitops_popcount_avx2_available()) return popcount_avx2(p, n);
#endif
    return bitops_popcount_hw(p, n);
}

int bitops_popcount_hw_available(void) {
#ifdef BITOPS_HAVE_POPCNT
    /* A read of what libgcc's start-up found (cpuid): cheap enough to ask
     * on every call, which leaves no shared state to initialise. */
    return __builtin_cpu_supports("popcnt") != 0;
#else
    return 0;
#endif
}

uint64_t bitops_popcount_hw(const void *p, size_t n) {
#ifdef BITOPS_HAVE_POPCNT
    if (bitops_popcount_hw_available()) return popcount_popcnt(p, n);
#endif
    return bitops_popcount_portable(p, n);
}

uint64_t bitops_popcount(const void *p, size_t n) {
#ifdef BITOPS_HAVE_POPCNT
    if (n >= POPCOUNT_AVX2_MIN) return bitops_popcount_avx2(p, n);
#endif
    return bitops_popcount_hw(p, n);
}

/* ---- first set or clear bit ---- */

int64_t bitops_bitpos(const void *p, size_t n, int bit) {
    const uint8_t *s = p;
    const uint64_t skip_word = bit ? 0 : UINT64_MAX;
    const uint8_t skip_byte = bit ? 0 : 0xff;
    size_t i = 0;
    /* Long runs of the other bit are skipped a word at a time. */
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, sizeof(w));
        if (w != skip_word) break;
    }
    while (i < n && s[i] == skip_byte)
        i++;
    if (i == n) return bit ? -1 : (int64_t)n * 8;
    uint8_t b = bit ? s[i] : (uint8_t)~s[i];
    int k = 0;
    while (!(b & (0x80u >> k)))
        k++;
    return (int64_t)i * 8 + k;
}

/* ---- integer fields ---- */

/* The bits of one byte that a field from `offset` to `end` covers: their
 * count (*take) and how far they sit from the byte's low end (*shift). */
static void field_chunk(uint64_t offset, uint64_t end, unsigned *take, unsigned *shift) {
    unsigned in = (unsigned)(offset & 7);
    unsigned t = 8 - in;
    if (t > end - offset) t = (unsigned)(end - offset);
    *take = t;
    *shift = 8 - in - t;
}

uint64_t bitops_get_unsigned(const uint8_t *p, uint64_t offset, unsigned bits) {
    uint64_t v = 0, end = offset + bits;
    while (offset < end) {
        unsigned take, shift;
        field_chunk(offset, end, &take, &shift);
        v = (v << take) | ((p[offset >> 3] >> shift) & ((1u << take) - 1));
        offset += take;
    }
    return v;
}

int64_t bitops_get_signed(const uint8_t *p, uint64_t offset, unsigned bits) {
    uint64_t u = bitops_get_unsigned(p, offset, bits);
    if (bits < 64 && (u >> (bits - 1)) & 1) u |= UINT64_MAX << bits;
    return (int64_t)u;
}

void bitops_set(uint8_t *p, uint64_t offset, unsigned bits, uint64_t value) {
    uint64_t end = offset + bits;
    unsigned left = bits;
    while (offset < end) {
        unsigned take, shift;
        field_chunk(offset, end, &take, &shift);
        left -= take;
        unsigned mask = (1u << take) - 1;
        unsigned chunk = (unsigned)(value >> left) & mask;
        uint8_t *b = &p[offset >> 3];
        *b = (uint8_t)((*b & ~(mask << shift)) | (chunk << shift));
        offset += take;
    }
}

int bitops_add_unsigned(uint64_t value, int64_t incr, unsigned bits, bitops_overflow mode,
                        uint64_t *out) {
    const uint64_t max = (UINT64_C(1) << bits) - 1;
    int dir = 0;
    /* Within range, value < 2^63, so -value and max - value are exact. */
    if (value > max || (incr > 0 && (uint64_t)incr > max - value))
        dir = 1;
    else if (incr < 0 && incr < -(int64_t)value)
        dir = -1;
    if (dir == 0) {
        *out = value + (uint64_t)incr;
    } else if (mode == BITOPS_WRAP) {
        *out = (value + (uint64_t)incr) & max;
    } else if (mode == BITOPS_SAT) {
        *out = dir > 0 ? max : 0;
    }
    return dir;
}

int bitops_add_signed(int64_t value, int64_t incr, unsigned bits, bitops_overflow mode,
                      int64_t *out) {
    const int64_t max = bits == 64 ? INT64_MAX : (int64_t)((UINT64_C(1) << (bits - 1)) - 1);
    const int64_t min = -max - 1;
    /* The room above value, max - value, taken modulo 2^64 as Valkey
     * does: for a SET (incr 0) of a value more than 2^63 below max it
     * wraps negative, which Valkey reads as an overflow upwards (so SAT
     * stores the maximum). Kept for compatibility. */
    const int64_t room_up = (int64_t)((uint64_t)max - (uint64_t)value);
    int dir = 0;
    if (value > max || (bits < 64 && incr > room_up) ||
        (bits == 64 && value >= 0 && incr > 0 && incr > room_up))
        dir = 1;
    /* min - value cannot overflow where it is used: bits < 64 puts min
     * at -2^62 or above; with 64 bits, value < 0. */
    else if (value < min || (bits < 64 && incr < min - value) ||
             (bits == 64 && value < 0 && incr < 0 && incr < min - value))
        dir = -1;
    if (dir == 0) {
        *out = value + incr;
    } else if (mode == BITOPS_WRAP) {
        uint64_t sum = (uint64_t)value + (uint64_t)incr;
        if (bits < 64) {
            uint64_t high = UINT64_MAX << bits;
            sum = (sum >> (bits - 1)) & 1 ? sum | high : sum & ~high;
        }
        *out = (int64_t)sum;
    } else if (mode == BITOPS_SAT) {
        *out = dir > 0 ? max : min;
    }
    return dir;
}

/* ---- AND, OR, XOR, NOT ---- */

/* dst[0..m) op= s[0..m): plain byte loops the compiler vectorises. */
static void combine_into(bitops_op op, uint8_t *dst, const uint8_t *s, size_t m) {
    switch (op) {
    case BITOPS_AND:
        for (size_t j = 0; j < m; j++)
            dst[j] &= s[j];
        break;
    case BITOPS_OR:
        for (size_t j = 0; j < m; j++)
            dst[j] |= s[j];
        break;
    case BITOPS_XOR:
        for (size_t j = 0; j < m; j++)
            dst[j] ^= s[j];
        break;
    case BITOPS_NOT:
        break;
    }
}

void bitops_combine(bitops_op op, uint8_t *dst, size_t dstlen, const uint8_t *const *srcs,
                    const size_t *lens, size_t n) {
    size_t first = 0;
    if (n) first = lens[0] < dstlen ? lens[0] : dstlen;
    if (first) memcpy(dst, srcs[0], first);
    memset(dst + first, 0, dstlen - first);
    if (op == BITOPS_NOT) {
        for (size_t j = 0; j < dstlen; j++)
            dst[j] = (uint8_t)~dst[j];
        return;
    }
    for (size_t i = 1; i < n; i++) {
        size_t m = lens[i] < dstlen ? lens[i] : dstlen;
        if (m) combine_into(op, dst, srcs[i], m);
        /* Past its end a source is zeros: AND clears, OR and XOR keep. */
        if (op == BITOPS_AND) memset(dst + m, 0, dstlen - m);
    }
}
