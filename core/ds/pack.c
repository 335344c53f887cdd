/* pack.c -- the compact encoding of small collections (see pack.h).
 *
 * Layout: an 8-byte header, then entries back to back.
 *
 *   uint32 bytes   total size of the pack, header included (little endian)
 *   uint32 count   entries
 *   entry...
 *
 * An entry is a prefix telling its kind and size, the payload, and a
 * "back length": the size of prefix plus payload, written so that it can
 * be read backwards from the entry's end, which is how pack_prev finds
 * the entry before a position in O(1).
 *
 *   prefix byte     meaning                                  payload
 *   0vvvvvvv        integer 0..127                           none
 *   10llllll        string of 0..63 bytes                    the bytes
 *   110vvvvv v8     13-bit signed integer                    (second byte)
 *   1110llll l8     string of 64..4095 bytes                 the bytes
 *   0xf0 l32        string of any length                     the bytes
 *   0xf1..0xf4      16/24/32/64-bit signed integer           2/3/4/8 bytes
 *
 * Multi-byte numbers are little endian. The back length is 1-5 bytes of
 * 7 bits each: the byte just before the next entry holds the lowest seven
 * bits, and a set top bit means another (more significant) byte precedes
 * it. A typical small field or member costs its bytes plus two.
 *
 * Why no end marker: the header's byte count says where the entries stop,
 * and a walk compares positions with it; the marker would cost a byte per
 * collection and a special case in every splice. */
#include "ds/pack.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/strconv.h"
#include "ds/varint.h"

#include <string.h>

#define PACK_HEADER 8

#define PACK_STR6 0x80
#define PACK_INT13 0xc0
#define PACK_STR12 0xe0
#define PACK_STR32 0xf0
#define PACK_INT16 0xf1
#define PACK_INT24 0xf2
#define PACK_INT32 0xf3
#define PACK_INT64 0xf4

/* The largest prefix + payload of an integer, and of any back length. */
#define PACK_INT_MAX_SIZE 9
#define PACK_BACKLEN_MAX 5

static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static size_t hdr_bytes(const pack *p) {
    return rd32(p);
}

static void hdr_set(pack *p, size_t bytes, size_t count) {
    wr32(p, (uint32_t)bytes);
    wr32(p + 4, (uint32_t)count);
}

/* ---- one entry ---- */

/* Prefix + payload bytes of the entry starting at e. */
static size_t entry_body_size(const unsigned char *e) {
    unsigned char b = e[0];
    if (b < 0x80) return 1;
    if (b < 0xc0) return 1 + (b & 0x3f);
    if (b < 0xe0) return 2;
    if (b < 0xf0) return 2 + ((size_t)(b & 0x0f) << 8 | e[1]);
    switch (b) {
    case PACK_STR32:
        return 5 + rd32(e + 1);
    case PACK_INT16:
        return 3;
    case PACK_INT24:
        return 4;
    case PACK_INT32:
        return 5;
    default:
        return 9; /* PACK_INT64 */
    }
}

static size_t entry_size(const unsigned char *e) {
    size_t body = entry_body_size(e);
    return body + varint_len(body);
}

static long long rd_signed(const unsigned char *p, int bytes) {
    unsigned long long v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (unsigned long long)p[i] << (8 * i);
    int shift = 64 - 8 * bytes;
    if (shift) return (long long)(v << shift) >> shift; /* sign-extend */
    return (long long)v;
}

static void entry_read(const unsigned char *e, pack_val *out) {
    unsigned char b = e[0];
    out->s = NULL;
    out->len = 0;
    if (b < 0x80) {
        out->v = b;
    } else if (b < 0xc0) {
        out->s = e + 1;
        out->len = b & 0x3f;
    } else if (b < 0xe0) {
        int v = (b & 0x1f) << 8 | e[1];
        out->v = v >= 4096 ? v - 8192 : v;
    } else if (b < 0xf0) {
        out->s = e + 2;
        out->len = (size_t)(b & 0x0f) << 8 | e[1];
    } else if (b == PACK_STR32) {
        out->s = e + 5;
        out->len = rd32(e + 1);
    } else {
        static const int widths[] = {2, 3, 4, 8};
        out->v = rd_signed(e + 1, widths[b - PACK_INT16]);
    }
    if (out->s && !out->len) out->s = e; /* a non-NULL pointer for "" */
}

/* Writes the prefix and payload of an integer into buf; returns its size. */
static size_t encode_int(unsigned char *buf, long long v) {
    if (v >= 0 && v <= 127) {
        buf[0] = (unsigned char)v;
        return 1;
    }
    if (v >= -4096 && v <= 4095) {
        unsigned u = (unsigned)(v < 0 ? v + 8192 : v);
        buf[0] = (unsigned char)(PACK_INT13 | (u >> 8));
        buf[1] = (unsigned char)u;
        return 2;
    }
    int width = v >= -32768 && v <= 32767          ? 2
                : v >= -8388608 && v <= 8388607    ? 3
                : v >= INT32_MIN && v <= INT32_MAX ? 4
                                                   : 8;
    buf[0] = (unsigned char)(width == 2   ? PACK_INT16
                             : width == 3 ? PACK_INT24
                             : width == 4 ? PACK_INT32
                                          : PACK_INT64);
    unsigned long long u = (unsigned long long)v;
    for (int i = 0; i < width; i++)
        buf[1 + i] = (unsigned char)(u >> (8 * i));
    return 1 + (size_t)width;
}

/* The prefix of a string of len bytes into buf; returns its size. */
static size_t encode_str_prefix(unsigned char *buf, size_t len) {
    if (len < 64) {
        buf[0] = (unsigned char)(PACK_STR6 | len);
        return 1;
    }
    if (len < 4096) {
        buf[0] = (unsigned char)(PACK_STR12 | (len >> 8));
        buf[1] = (unsigned char)len;
        return 2;
    }
    buf[0] = PACK_STR32;
    wr32(buf + 1, (uint32_t)len);
    return 5;
}

/* An entry to write: an integer already encoded, or a string's prefix
 * followed by its bytes. */
typedef struct pack_new_entry {
    unsigned char head[PACK_INT_MAX_SIZE];
    size_t head_len;
    const char *s; /* NULL for an integer */
    size_t len;
    size_t body; /* head_len + len */
    size_t total;
} pack_new_entry;

static void new_entry_int(pack_new_entry *ne, long long v) {
    ne->head_len = encode_int(ne->head, v);
    ne->s = NULL;
    ne->len = 0;
    ne->body = ne->head_len;
    ne->total = ne->body + varint_len(ne->body);
}

static void new_entry_str(pack_new_entry *ne, const char *s, size_t len) {
    long long v;
    if (len <= 20 && str_to_ll(s, len, &v)) {
        new_entry_int(ne, v);
        return;
    }
    ne->head_len = encode_str_prefix(ne->head, len);
    ne->s = s;
    ne->len = len;
    ne->body = ne->head_len + len;
    ne->total = ne->body + varint_len(ne->body);
}

static void new_entry_write(unsigned char *dst, const pack_new_entry *ne) {
    memcpy(dst, ne->head, ne->head_len);
    if (ne->len) memcpy(dst + ne->head_len, ne->s, ne->len);
    varint_back_put(dst + ne->body, ne->body);
}

size_t pack_entry_size(const char *s, size_t len) {
    pack_new_entry ne;
    new_entry_str(&ne, s, len);
    return ne.total;
}

/* ---- the pack ---- */

pack *pack_new(void) {
    pack *p = km_alloc(PACK_HEADER);
    hdr_set(p, PACK_HEADER, 0);
    return p;
}

void pack_free(pack *p) {
    km_free(p);
}

size_t pack_count(const pack *p) {
    return rd32(p + 4);
}

size_t pack_bytes(const pack *p) {
    return hdr_bytes(p);
}

size_t pack_first(const pack *p) {
    return hdr_bytes(p) > PACK_HEADER ? PACK_HEADER : 0;
}

size_t pack_next(const pack *p, size_t pos) {
    size_t next = pos + entry_size(p + pos);
    return next < hdr_bytes(p) ? next : 0;
}

/* The entry that ends at byte offset end (> PACK_HEADER). */
static size_t entry_before(const pack *p, size_t end) {
    size_t n;
    size_t body = (size_t)varint_back_get(p + end, PACK_BACKLEN_MAX, &n);
    return end - n - body;
}

size_t pack_prev(const pack *p, size_t pos) {
    return pos > PACK_HEADER ? entry_before(p, pos) : 0;
}

size_t pack_last(const pack *p) {
    size_t bytes = hdr_bytes(p);
    return bytes > PACK_HEADER ? entry_before(p, bytes) : 0;
}

size_t pack_seek(const pack *p, long long index) {
    long long count = (long long)pack_count(p);
    if (index < 0) index += count;
    if (index < 0 || index >= count) return 0;
    size_t pos;
    if (index <= count / 2) {
        pos = PACK_HEADER;
        while (index--)
            pos += entry_size(p + pos);
    } else {
        pos = pack_last(p);
        for (long long i = count - 1; i > index; i--)
            pos = entry_before(p, pos);
    }
    return pos;
}

void pack_get(const pack *p, size_t pos, pack_val *out) {
    entry_read(p + pos, out);
}

/* An argument prepared once for comparisons against many entries. */
typedef struct pack_key {
    const char *s;
    size_t len;
    int is_int;
    long long v;
} pack_key;

static void key_prepare(pack_key *k, const char *s, size_t len) {
    k->s = s;
    k->len = len;
    k->is_int = len <= 20 && str_to_ll(s, len, &k->v);
}

/* Integers are stored only for canonical digits, so an integer entry can
 * equal only a canonical integer argument, and a string entry only a
 * non-integer one. */
static int entry_eq_key(const unsigned char *e, const pack_key *k) {
    pack_val v;
    entry_read(e, &v);
    if (!v.s) return k->is_int && v.v == k->v;
    return !k->is_int && v.len == k->len && memcmp(v.s, k->s, k->len) == 0;
}

int pack_eq(const pack *p, size_t pos, const char *s, size_t len) {
    pack_key k;
    key_prepare(&k, s, len);
    return entry_eq_key(p + pos, &k);
}

size_t pack_find(const pack *p, size_t pos, const char *s, size_t len, unsigned skip) {
    pack_key k;
    key_prepare(&k, s, len);
    size_t bytes = hdr_bytes(p);
    while (pos && pos < bytes) {
        if (entry_eq_key(p + pos, &k)) return pos;
        for (unsigned i = 0; i <= skip && pos < bytes; i++)
            pos += entry_size(p + pos);
    }
    return 0;
}

/* Replaces the `old` bytes at offset pos with ne (old may be 0: an
 * insertion); count grows by dcount. Returns the pack. */
static pack *pack_splice(pack *p, size_t pos, size_t old, const pack_new_entry *ne, long dcount) {
    size_t bytes = hdr_bytes(p);
    size_t count = pack_count(p);
    size_t add = ne ? ne->total : 0;
    size_t newbytes = bytes - old + add;
    /* A string argument may point into this pack (a value moved between
     * two places of one collection): copy it before the pack moves. */
    char stack[64];
    pack_new_entry copy;
    if (ne && ne->s && (const unsigned char *)ne->s >= p &&
        (const unsigned char *)ne->s < p + bytes) {
        copy = *ne;
        char *dup = ne->len <= sizeof(stack) ? stack : km_alloc(ne->len);
        memcpy(dup, ne->s, ne->len);
        copy.s = dup;
        ne = &copy;
    }
    if (newbytes > bytes) p = km_realloc(p, newbytes);
    memmove(p + pos + add, p + pos + old, bytes - pos - old);
    if (newbytes < bytes) p = km_realloc(p, newbytes);
    if (ne) new_entry_write(p + pos, ne);
    if (ne == &copy && copy.s != stack) km_free((char *)copy.s);
    hdr_set(p, newbytes, (size_t)((long)count + dcount));
    return p;
}

static pack *insert_entry(pack *p, size_t *pos, const pack_new_entry *ne) {
    size_t at = *pos ? *pos : hdr_bytes(p);
    p = pack_splice(p, at, 0, ne, 1);
    *pos = at;
    return p;
}

pack *pack_insert(pack *p, size_t *pos, const char *s, size_t len) {
    pack_new_entry ne;
    new_entry_str(&ne, s, len);
    return insert_entry(p, pos, &ne);
}

pack *pack_insert_int(pack *p, size_t *pos, long long v) {
    pack_new_entry ne;
    new_entry_int(&ne, v);
    return insert_entry(p, pos, &ne);
}

pack *pack_append(pack *p, const char *s, size_t len) {
    size_t pos = 0;
    return pack_insert(p, &pos, s, len);
}

pack *pack_append_int(pack *p, long long v) {
    size_t pos = 0;
    return pack_insert_int(p, &pos, v);
}

pack *pack_prepend(pack *p, const char *s, size_t len) {
    size_t pos = PACK_HEADER;
    return pack_insert(p, &pos, s, len);
}

pack *pack_replace(pack *p, size_t *pos, const char *s, size_t len) {
    pack_new_entry ne;
    new_entry_str(&ne, s, len);
    return pack_splice(p, *pos, entry_size(p + *pos), &ne, 0);
}

pack *pack_replace_int(pack *p, size_t *pos, long long v) {
    pack_new_entry ne;
    new_entry_int(&ne, v);
    return pack_splice(p, *pos, entry_size(p + *pos), &ne, 0);
}

pack *pack_delete(pack *p, size_t *pos, size_t n) {
    size_t bytes = hdr_bytes(p);
    size_t end = *pos;
    size_t k = 0;
    while (k < n && end < bytes) {
        end += entry_size(p + end);
        k++;
    }
    p = pack_splice(p, *pos, end - *pos, NULL, -(long)k);
    if (*pos >= hdr_bytes(p)) *pos = 0;
    return p;
}

pack *pack_delete_range(pack *p, long long index, size_t n) {
    size_t pos = pack_seek(p, index);
    if (!pos || !n) return p;
    return pack_delete(p, &pos, n);
}

pack *pack_merge(pack *dst, const pack *src) {
    size_t dbytes = hdr_bytes(dst), sbytes = hdr_bytes(src) - PACK_HEADER;
    size_t count = pack_count(dst) + pack_count(src);
    dst = km_realloc(dst, dbytes + sbytes);
    memcpy(dst + dbytes, src + PACK_HEADER, sbytes);
    hdr_set(dst, dbytes + sbytes, count);
    return dst;
}

/* ---- validation ---- */

/* The size of the entry at e if it lies within [e, limit) and its back
 * length matches; 0 otherwise. */
static size_t entry_checked_size(const unsigned char *e, const unsigned char *limit) {
    size_t room = (size_t)(limit - e);
    unsigned char b = e[0];
    size_t head = b < 0xc0 ? 1 : b < 0xf0 ? 2 : b == PACK_STR32 ? 5 : 1;
    if (b > PACK_INT64 || head > room) return 0;
    size_t body = entry_body_size(e);
    if (body < head || body > room) return 0; /* body < head: a 32-bit length wrapped */
    size_t total = body + varint_len(body);
    if (total > room) return 0;
    size_t n;
    if (varint_back_get(e + total, PACK_BACKLEN_MAX, &n) != body || n != varint_len(body)) return 0;
    return total;
}

int pack_validate(const unsigned char *buf, size_t size, int deep) {
    if (size < PACK_HEADER || size > UINT32_MAX || hdr_bytes(buf) != size) return 0;
    if (!deep) return 1;
    size_t pos = PACK_HEADER, count = 0;
    while (pos < size) {
        size_t n = entry_checked_size(buf + pos, buf + size);
        if (!n) return 0;
        pos += n;
        count++;
    }
    return count == pack_count(buf);
}
