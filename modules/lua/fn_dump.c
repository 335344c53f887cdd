/* fn_dump.c -- encoding and strict validation of the FUNCTION DUMP payload
 * (layout in fn_dump.h). Parsing is done on untrusted bytes from FUNCTION
 * RESTORE: every length is compared with the bytes left before it is used,
 * in size_t arithmetic that cannot wrap. */
#include "fn_dump.h"

#include <string.h>

#define FN_MAGIC "KEELFN"
#define FN_MAGIC_LEN 6
#define FN_HEADER_LEN (FN_MAGIC_LEN + 1 + 4)
#define FN_CRC_LEN 8

/* CRC-64/Jones, reflected (polynomial 0xad93d23594c935a9), no final xor:
 * the checksum Valkey puts on its DUMP payloads. The table is built once. */
static uint64_t fn_crc_table[256];
static int fn_crc_ready;

static void fn_crc_init(void) {
    const uint64_t poly = 0x95ac9329ac4bc9b5ULL; /* 0xad93d23594c935a9 bit-reversed */
    for (int i = 0; i < 256; i++) {
        uint64_t c = (uint64_t)i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        fn_crc_table[i] = c;
    }
    fn_crc_ready = 1;
}

uint64_t fn_dump_crc64(uint64_t crc, const unsigned char *p, size_t len) {
    if (!fn_crc_ready) fn_crc_init();
    for (size_t i = 0; i < len; i++)
        crc = fn_crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

static void fn_put_le(unsigned char *p, uint64_t v, int width) {
    for (int i = 0; i < width; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t fn_get_le(const unsigned char *p, int width) {
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

size_t fn_dump_size(const size_t *lens, size_t n) {
    if (n > UINT32_MAX) return 0;
    size_t total = FN_HEADER_LEN + FN_CRC_LEN;
    for (size_t i = 0; i < n; i++) {
        if (lens[i] > UINT32_MAX || lens[i] > SIZE_MAX - 4 - total) return 0;
        total += 4 + lens[i];
    }
    return total;
}

void fn_dump_write(unsigned char *out, const char *const *codes, const size_t *lens, size_t n) {
    unsigned char *p = out;
    memcpy(p, FN_MAGIC, FN_MAGIC_LEN);
    p[FN_MAGIC_LEN] = FN_DUMP_VERSION;
    fn_put_le(p + FN_MAGIC_LEN + 1, n, 4);
    p += FN_HEADER_LEN;
    for (size_t i = 0; i < n; i++) {
        fn_put_le(p, lens[i], 4);
        if (lens[i]) memcpy(p + 4, codes[i], lens[i]);
        p += 4 + lens[i];
    }
    fn_put_le(p, fn_dump_crc64(0, out, (size_t)(p - out)), FN_CRC_LEN);
}

int fn_dump_check(const unsigned char *p, size_t len, fn_dump_iter *it) {
    if (len < FN_HEADER_LEN + FN_CRC_LEN || memcmp(p, FN_MAGIC, FN_MAGIC_LEN) != 0 ||
        p[FN_MAGIC_LEN] != FN_DUMP_VERSION)
        return FN_DUMP_BAD_ENVELOPE;
    size_t body = len - FN_CRC_LEN;
    if (fn_dump_crc64(0, p, body) != fn_get_le(p + body, FN_CRC_LEN)) return FN_DUMP_BAD_ENVELOPE;
    uint32_t count = (uint32_t)fn_get_le(p + FN_MAGIC_LEN + 1, 4);
    const unsigned char *q = p + FN_HEADER_LEN;
    size_t left = body - FN_HEADER_LEN;
    if (count > left / 4) return FN_DUMP_MALFORMED;
    for (uint32_t i = 0; i < count; i++) {
        if (left < 4) return FN_DUMP_MALFORMED;
        size_t l = (size_t)fn_get_le(q, 4);
        if (l > left - 4) return FN_DUMP_MALFORMED;
        q += 4 + l;
        left -= 4 + l;
    }
    if (left != 0) return FN_DUMP_MALFORMED;
    it->p = p + FN_HEADER_LEN;
    it->left = body - FN_HEADER_LEN;
    it->remaining = count;
    return FN_DUMP_OK;
}

int fn_dump_next(fn_dump_iter *it, const char **code, size_t *len) {
    if (it->remaining == 0 || it->left < 4) return 0;
    size_t l = (size_t)fn_get_le(it->p, 4);
    if (l > it->left - 4) return 0;
    *code = (const char *)it->p + 4;
    *len = l;
    it->p += 4 + l;
    it->left -= 4 + l;
    it->remaining--;
    return 1;
}
