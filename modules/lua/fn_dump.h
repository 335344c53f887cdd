/* fn_dump.h -- the FUNCTION DUMP payload: Keel's own versioned, checksummed
 * container of library sources (Keel has no RDB to borrow Valkey's from).
 * Pure byte handling with no Lua and no server, so it is tested and fuzzed
 * alone. The layout (all integers little-endian):
 *
 *   "KEELFN"            6 bytes, magic
 *   version             1 byte, FN_DUMP_VERSION
 *   count               4 bytes, number of libraries
 *   count x { len 4 bytes, len bytes of the library's code with its shebang }
 *   crc                 8 bytes, CRC-64 (Jones, as Valkey's DUMP) of all of
 *                       the above
 *
 * A payload is accepted only when every byte is accounted for. */
#ifndef KEEL_LUA_FN_DUMP_H
#define KEEL_LUA_FN_DUMP_H

#include <stddef.h>
#include <stdint.h>

#define FN_DUMP_VERSION 1

/* fn_dump_check results. */
#define FN_DUMP_OK 0
#define FN_DUMP_BAD_ENVELOPE 1 /* magic, version or checksum wrong */
#define FN_DUMP_MALFORMED 2    /* envelope fine, contents do not add up */

uint64_t fn_dump_crc64(uint64_t crc, const unsigned char *p, size_t len);

/* Bytes of a payload holding n codes of these lengths; 0 if that
 * overflows (or a code is too long for the 4-byte length). */
size_t fn_dump_size(const size_t *lens, size_t n);
/* Writes the payload into out (fn_dump_size bytes). */
void fn_dump_write(unsigned char *out, const char *const *codes, const size_t *lens, size_t n);

/* Walks a checked payload's libraries. */
typedef struct fn_dump_iter {
    const unsigned char *p; /* next entry */
    size_t left;            /* bytes before the checksum */
    uint32_t remaining;     /* entries not yet read */
} fn_dump_iter;

/* Validates the whole payload (envelope first, then every entry's length)
 * and, on FN_DUMP_OK, sets it up to walk the entries. */
int fn_dump_check(const unsigned char *p, size_t len, fn_dump_iter *it);
/* The next library's code (borrowed from the payload); 0 at the end. */
int fn_dump_next(fn_dump_iter *it, const char **code, size_t *len);

#endif
