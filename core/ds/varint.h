/* varint.h -- unsigned integers in 7-bit groups, the length encoding of
 * the compact layouts (ds/pack.c's entries, types/stream.c's nodes).
 *
 * Two byte orders:
 *   - forward (varint_put/varint_get): low group first, a set top bit
 *     saying another byte follows, read from the start;
 *   - backward (varint_back_put/varint_back_get): the same groups written
 *     so that they end where the entry ends, the low group last and a set
 *     top bit saying another byte comes before it, so a layout can be
 *     walked from its end.
 * Both take varint_len(v) bytes.
 *
 * Threads: any (pure functions). */
#ifndef KEEL_VARINT_H
#define KEEL_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes a 64-bit value takes. */
#define VARINT_MAX 10

static inline size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Writes v at p; returns its bytes. */
static inline size_t varint_put(unsigned char *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (unsigned char)v;
    return n;
}

/* Reads the value starting at p; *n gets its bytes. */
static inline uint64_t varint_get(const unsigned char *p, size_t *n) {
    uint64_t v = 0;
    unsigned shift = 0;
    size_t i = 0;
    unsigned char b;
    do {
        b = p[i++];
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while ((b & 0x80) && i < VARINT_MAX);
    *n = i;
    return v;
}

/* Writes v backwards so that it ends at p + the returned length. */
static inline size_t varint_back_put(unsigned char *p, uint64_t v) {
    size_t n = varint_len(v);
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)(v & 0x7f);
        if (i + 1 < n) b |= 0x80;
        p[n - 1 - i] = b;
        v >>= 7;
    }
    return n;
}

/* Reads the backward value ending just before end, at most max bytes;
 * *n gets its bytes. */
static inline uint64_t varint_back_get(const unsigned char *end, size_t max, size_t *n) {
    uint64_t v = 0;
    unsigned shift = 0;
    size_t i = 0;
    unsigned char b;
    do {
        b = end[-1 - (ptrdiff_t)i];
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        i++;
    } while ((b & 0x80) && i < max);
    *n = i;
    return v;
}

#endif
