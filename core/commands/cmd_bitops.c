/* cmd_bitops.c -- the bitmap command family: SETBIT GETBIT BITCOUNT BITPOS
 * BITOP BITFIELD BITFIELD_RO, on string values (the bit algorithms are
 * ds/bitops.h). A write grows the string with zero bytes to the farthest
 * bit it reaches; a write that changes nothing leaves the key untouched,
 * unannounced and unnotified, as in Valkey. */
#include "commands/commands.h"
#include "common/common.h"
#include "common/kmem.h"
#include "ds/bitops.h"
#include "session/reply.h"

#include <limits.h>
#include <string.h>

#define BIT_OFFSET_ERR "ERR bit offset is not an integer or out of range"

/* A bit offset argument: a non-negative integer addressing a byte below
 * proto-max-bulk-len. With `width` (BITFIELD), "#n" means n fields of that
 * width. Returns 1, or 0 after replying Valkey's error. */
static int arg_bit_offset(client *c, const karg *a, unsigned width, uint64_t *out) {
    int hash = width && a->len && a->ptr[0] == '#';
    long long v;
    if (!str_to_ll(a->ptr + hash, a->len - (size_t)hash, &v) || v < 0 ||
        (hash && v > LLONG_MAX / width)) {
        reply_error(c, BIT_OFFSET_ERR);
        return 0;
    }
    if (hash) v *= width;
    if ((v >> 3) >= session_opts()->proto_max_bulk_len) {
        reply_error(c, BIT_OFFSET_ERR);
        return 0;
    }
    *out = (uint64_t)v;
    return 1;
}

/* The key's string value, or NULL (missing key: *e NULL too). Replies
 * WRONGTYPE and returns -1 for another type. */
static int bits_lookup(client *c, const karg *key, db_entry **e, const uint8_t **p, size_t *len) {
    *e = db_lookup(c->db, key->ptr, key->len, 1);
    *p = NULL;
    *len = 0;
    if (!*e) return 0;
    const char *s = db_entry_str(*e, len);
    if (!s) {
        reply_wrongtype(c);
        return -1;
    }
    *p = (const uint8_t *)s;
    return 0;
}

/* ---- the string a write goes to ---- */

/* A bit command's target: an existing value (e), read through `ro` until
 * the first change makes it writable (rw), or a new zeroed value (fresh)
 * that becomes the key at bits_target_close. */
typedef struct bits_target {
    client *c;
    const karg *key;
    db_entry *e;
    kobj *fresh;
    const uint8_t *ro;
    uint8_t *rw;
    size_t len;
    int dirty; /* new or grown: every write counts as a change, as in Valkey */
} bits_target;

/* Opens key's value (e from bits_lookup, or NULL) for writing at least
 * `need` bytes: a shorter value grows with zeros now (which announces it),
 * a missing key gets a zeroed string. */
static void bits_target_open(client *c, const karg *key, db_entry *e, const uint8_t *cur,
                             size_t curlen, size_t need, bits_target *t) {
    *t = (bits_target){.c = c, .key = key, .e = e, .ro = cur, .len = curlen};
    if (!e) {
        t->fresh = obj_string_alloc(need);
        memset(t->fresh->v.ptr, 0, need + 1);
        t->fresh->len = need;
        t->rw = (uint8_t *)t->fresh->v.ptr;
        t->ro = t->rw;
        t->len = need;
        t->dirty = 1;
    } else if (need > curlen) {
        t->rw = (uint8_t *)db_string_resize(c->db, &t->e, need);
        memset(t->rw + curlen, 0, need - curlen);
        t->ro = t->rw;
        t->len = need;
        t->dirty = 1;
    }
}

/* The bytes to write to; the first call on an existing value makes it
 * writable in place, announcing the change once. */
static uint8_t *bits_target_writable(bits_target *t) {
    if (!t->rw) {
        t->rw = (uint8_t *)db_string_resize(t->c->db, &t->e, t->len);
        t->ro = t->rw;
    }
    return t->rw;
}

/* Stores a new value as the key (db_add announces it). */
static void bits_target_close(bits_target *t) {
    if (t->fresh) db_add(t->c->db, t->key->ptr, t->key->len, t->fresh, 1);
    t->fresh = NULL;
}

/* ---- SETBIT, GETBIT ---- */

static int bit_at(const uint8_t *p, size_t len, uint64_t offset) {
    uint64_t byte = offset >> 3;
    return byte < len ? (p[byte] >> (7 - (offset & 7))) & 1 : 0;
}

static void cmd_setbit(client *c) {
    uint64_t offset;
    long long on;
    if (!arg_bit_offset(c, &c->argv[2], 0, &offset)) return;
    if (!str_to_ll(c->argv[3].ptr, c->argv[3].len, &on) || (on & ~1LL)) {
        reply_error(c, "ERR bit is not an integer or out of range");
        return;
    }
    db_entry *e;
    const uint8_t *p;
    size_t len;
    if (bits_lookup(c, &c->argv[1], &e, &p, &len) < 0) return;
    int old = bit_at(p, len, offset);
    size_t need = (size_t)(offset >> 3) + 1;
    if (e && need <= len && old == on) {
        reply_int(c, old);
        return;
    }
    bits_target t;
    bits_target_open(c, &c->argv[1], e, p, len, need, &t);
    uint8_t *w = bits_target_writable(&t);
    uint8_t mask = (uint8_t)(0x80u >> (offset & 7));
    w[offset >> 3] = (uint8_t)(on ? w[offset >> 3] | mask : w[offset >> 3] & ~mask);
    bits_target_close(&t);
    notify_key(c, NOTIFY_STRING, "setbit", &c->argv[1]);
    reply_int(c, old);
}

static void cmd_getbit(client *c) {
    uint64_t offset;
    if (!arg_bit_offset(c, &c->argv[2], 0, &offset)) return;
    db_entry *e;
    const uint8_t *p;
    size_t len;
    if (bits_lookup(c, &c->argv[1], &e, &p, &len) < 0) return;
    reply_int(c, bit_at(p, len, offset));
}

/* ---- BITCOUNT, BITPOS ---- */

/* A BITCOUNT/BITPOS range resolved against a string of len bytes: the
 * bytes [start, end] and, in BIT mode, the masks of the bits of the first
 * and last byte that lie outside the range (0 when none). */
typedef struct bit_range {
    long long start, end;
    uint8_t first_mask, last_mask;
} bit_range;

/* Resolves start/end (negative: from the end) in bytes or, with `isbit`,
 * in bits, clamped to the string; start > end is an empty range. */
static void bit_range_resolve(bit_range *r, long long len, int isbit) {
    long long total = isbit ? len * 8 : len;
    if (r->start < 0) r->start += total;
    if (r->end < 0) r->end += total;
    if (r->start < 0) r->start = 0;
    if (r->end < 0) r->end = 0;
    if (r->end >= total) r->end = total - 1;
    r->first_mask = r->last_mask = 0;
    if (isbit && r->start <= r->end) {
        r->first_mask = (uint8_t)(~((1u << (8 - (r->start & 7))) - 1) & 0xff);
        r->last_mask = (uint8_t)((1u << (7 - (r->end & 7))) - 1);
        r->start >>= 3;
        r->end >>= 3;
    }
}

/* The optional [start [end [BYTE|BIT]]] from argument `from`: returns 1
 * with *given the count of numbers present (0..2), or 0 after replying. */
static int bit_range_parse(client *c, int from, bit_range *r, int *given, int *isbit) {
    int n = c->argc - from;
    *given = n > 2 ? 2 : n;
    *isbit = 0;
    if (n > 3) {
        reply_syntax_error(c);
        return 0;
    }
    if (n >= 1 && !arg_to_ll(c, &c->argv[from], &r->start)) return 0;
    if (n == 3) {
        if (karg_eq(&c->argv[from + 2], "bit"))
            *isbit = 1;
        else if (!karg_eq(&c->argv[from + 2], "byte")) {
            reply_syntax_error(c);
            return 0;
        }
    }
    if (n >= 2 && !arg_to_ll(c, &c->argv[from + 1], &r->end)) return 0;
    return 1;
}

static void cmd_bitcount(client *c) {
    bit_range r = {0};
    int given, isbit;
    if (!bit_range_parse(c, 2, &r, &given, &isbit)) return;
    db_entry *e;
    const uint8_t *p;
    size_t len;
    if (bits_lookup(c, &c->argv[1], &e, &p, &len) < 0) return;
    if (given == 0) r.start = 0;
    if (given < 2) r.end = (long long)len - 1;
    /* Both from the end and crossed: empty before any clamping. */
    if (given == 2 && r.start < 0 && r.end < 0 && r.start > r.end) {
        reply_int(c, 0);
        return;
    }
    bit_range_resolve(&r, (long long)len, isbit);
    if (!e || r.start > r.end) {
        reply_int(c, 0);
        return;
    }
    uint64_t n = bitops_popcount(p + r.start, (size_t)(r.end - r.start + 1));
    /* The edge bits outside a BIT range were counted with their bytes. */
    uint8_t edges[2] = {(uint8_t)(p[r.start] & r.first_mask), (uint8_t)(p[r.end] & r.last_mask)};
    n -= bitops_popcount(edges, 2);
    reply_int(c, (long long)n);
}

/* The first `bit` in p[start..end] (bytes) with BIT-mode edge masks: the
 * position relative to byte start, -1 when there is none, or the bit just
 * past the range when looking for a 0 and finding only ones (the caller
 * decides what that means). */
static int64_t bitpos_in_range(const uint8_t *p, const bit_range *r, int bit) {
    int64_t bytes = r->end - r->start + 1;
    const uint8_t *s = p + r->start;
    int64_t base = 0;
    /* A masked edge byte is searched on its own, with the bits outside the
     * range set to what is not looked for. */
    if (r->first_mask) {
        uint8_t b = bit ? (uint8_t)(s[0] & ~r->first_mask) : (uint8_t)(s[0] | r->first_mask);
        if (bytes == 1 && r->last_mask)
            b = bit ? (uint8_t)(b & ~r->last_mask) : (uint8_t)(b | r->last_mask);
        int64_t pos = bitops_bitpos(&b, 1, bit);
        if (bytes == 1 || (pos != -1 && pos != 8)) return pos;
        s++, bytes--, base += 8;
    }
    int64_t middle = bytes - (r->last_mask ? 1 : 0);
    if (middle > 0) {
        int64_t pos = bitops_bitpos(s, (size_t)middle, bit);
        if (bytes == middle || (pos != -1 && pos != middle * 8)) return pos == -1 ? -1 : base + pos;
        s += middle, bytes -= middle, base += middle * 8;
    }
    uint8_t b = bit ? (uint8_t)(s[0] & ~r->last_mask) : (uint8_t)(s[0] | r->last_mask);
    int64_t pos = bitops_bitpos(&b, 1, bit);
    return pos == -1 ? -1 : base + pos;
}

static void cmd_bitpos(client *c) {
    long long bit;
    if (!arg_to_ll(c, &c->argv[2], &bit)) return;
    if (bit != 0 && bit != 1) {
        reply_error(c, "ERR The bit argument must be 1 or 0.");
        return;
    }
    bit_range r = {0};
    int given, isbit;
    if (!bit_range_parse(c, 3, &r, &given, &isbit)) return;
    db_entry *e;
    const uint8_t *p;
    size_t len;
    if (bits_lookup(c, &c->argv[1], &e, &p, &len) < 0) return;
    if (given == 0) r.start = 0;
    if (given < 2) r.end = (long long)len - 1;
    bit_range_resolve(&r, (long long)len, isbit);
    /* A missing key is an endless run of zeros. */
    if (!e) {
        reply_int(c, bit ? -1 : 0);
        return;
    }
    if (r.start > r.end) {
        reply_int(c, -1);
        return;
    }
    int64_t pos = bitpos_in_range(p, &r, (int)bit);
    /* Only ones up to an explicit end: no clear bit in the range (without
     * an end, the string goes on with zeros). */
    if (given == 2 && bit == 0 && pos == (r.end - r.start + 1) * 8) pos = -1;
    reply_int(c, pos == -1 ? -1 : pos + r.start * 8);
}

/* ---- BITOP ---- */

static int bitop_parse(const karg *a, bitops_op *op) {
    if (karg_eq(a, "and"))
        *op = BITOPS_AND;
    else if (karg_eq(a, "or"))
        *op = BITOPS_OR;
    else if (karg_eq(a, "xor"))
        *op = BITOPS_XOR;
    else if (karg_eq(a, "not"))
        *op = BITOPS_NOT;
    else
        return 0;
    return 1;
}

static void cmd_bitop(client *c) {
    bitops_op op;
    if (!bitop_parse(&c->argv[1], &op)) {
        reply_syntax_error(c);
        return;
    }
    if (op == BITOPS_NOT && c->argc != 4) {
        reply_error(c, "ERR BITOP NOT must be called with a single source key.");
        return;
    }
    size_t n = (size_t)c->argc - 3;
    /* Every source is looked up (expiring what must) before any bytes are
     * taken, so no lookup can move bytes already taken. */
    for (size_t i = 0; i < n; i++) {
        db_entry *e = db_lookup(c->db, c->argv[3 + i].ptr, c->argv[3 + i].len, 1);
        if (e && db_entry_type(e) != OBJ_STRING) {
            reply_wrongtype(c);
            return;
        }
    }
    const uint8_t **srcs = km_alloc(n * sizeof(*srcs));
    size_t *lens = km_alloc(n * sizeof(*lens));
    size_t maxlen = 0;
    for (size_t i = 0; i < n; i++) {
        db_entry *e = db_lookup_quiet(c->db, c->argv[3 + i].ptr, c->argv[3 + i].len);
        lens[i] = 0;
        srcs[i] = e ? (const uint8_t *)db_entry_str(e, &lens[i]) : NULL;
        if (lens[i] > maxlen) maxlen = lens[i];
    }
    kobj *res = NULL;
    if (maxlen) {
        res = obj_string_alloc(maxlen);
        bitops_combine(op, (uint8_t *)res->v.ptr, maxlen, srcs, lens, n);
        res->len = maxlen;
        res->v.ptr[maxlen] = '\0';
    }
    km_free(srcs);
    km_free(lens);
    const karg *dst = &c->argv[2];
    if (res) {
        db_set(c->db, dst->ptr, dst->len, res, 0);
        notify_key(c, NOTIFY_STRING, "set", dst);
    } else if (db_delete(c->db, dst->ptr, dst->len)) {
        notify_key(c, NOTIFY_GENERIC, "del", dst);
    }
    reply_int(c, (long long)maxlen);
}

/* ---- BITFIELD, BITFIELD_RO ---- */

typedef enum bf_opcode { BF_GET, BF_SET, BF_INCRBY } bf_opcode;

typedef struct bf_op {
    uint64_t offset;
    int64_t value; /* SET's value, INCRBY's increment */
    bf_opcode code;
    bitops_overflow overflow;
    unsigned bits;
    int sign;
} bf_op;

/* "i1".."i64" or "u1".."u63" (u64 cannot be replied as a RESP integer). */
static int bf_parse_type(client *c, const karg *a, bf_op *op) {
    long long bits;
    if (a->len < 2 || (a->ptr[0] != 'i' && a->ptr[0] != 'u') ||
        !str_to_ll(a->ptr + 1, a->len - 1, &bits) || bits < 1 ||
        bits > (a->ptr[0] == 'i' ? 64 : 63)) {
        reply_error(c, "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is "
                       "not supported but i64 is.");
        return 0;
    }
    op->sign = a->ptr[0] == 'i';
    op->bits = (unsigned)bits;
    return 1;
}

static int bf_parse_overflow(client *c, const karg *a, bitops_overflow *out) {
    if (karg_eq(a, "wrap"))
        *out = BITOPS_WRAP;
    else if (karg_eq(a, "sat"))
        *out = BITOPS_SAT;
    else if (karg_eq(a, "fail"))
        *out = BITOPS_FAIL;
    else {
        reply_error(c, "ERR Invalid OVERFLOW type specified");
        return 0;
    }
    return 1;
}

/* Parses the subcommands into ops (room for argc/2 of them); *writes is
 * set when one is SET or INCRBY, *need to the bytes the writes reach.
 * Returns the op count, or -1 after replying. */
static int bf_parse(client *c, bf_op *ops, int *writes, size_t *need) {
    int n = 0;
    bitops_overflow overflow = BITOPS_WRAP;
    *writes = 0;
    *need = 0;
    for (int j = 2; j < c->argc; j++) {
        const karg *a = &c->argv[j];
        int rest = c->argc - j - 1;
        bf_op *op = &ops[n];
        if (karg_eq(a, "get") && rest >= 2)
            op->code = BF_GET;
        else if (karg_eq(a, "set") && rest >= 3)
            op->code = BF_SET;
        else if (karg_eq(a, "incrby") && rest >= 3)
            op->code = BF_INCRBY;
        else if (karg_eq(a, "overflow") && rest >= 1) {
            if (!bf_parse_overflow(c, &c->argv[++j], &overflow)) return -1;
            continue;
        } else {
            reply_syntax_error(c);
            return -1;
        }
        if (!bf_parse_type(c, &c->argv[j + 1], op) ||
            !arg_bit_offset(c, &c->argv[j + 2], op->bits, &op->offset))
            return -1;
        op->overflow = overflow;
        op->value = 0;
        if (op->code != BF_GET) {
            long long v;
            if (!arg_to_ll(c, &c->argv[j + 3], &v)) return -1;
            op->value = v;
            *writes = 1;
            size_t last = (size_t)((op->offset + op->bits - 1) >> 3) + 1;
            if (last > *need) *need = last;
        }
        n++;
        j += op->code == BF_GET ? 2 : 3;
    }
    return n;
}

/* A GET: the field read from p[0..len) as if zero-padded past its end. */
static void bf_get(client *c, const bf_op *op, const uint8_t *p, size_t len) {
    uint8_t buf[9] = {0};
    uint64_t byte = op->offset >> 3;
    for (size_t i = 0; i < sizeof(buf) && byte + i < len; i++)
        buf[i] = p[byte + i];
    uint64_t off = op->offset & 7;
    if (op->sign)
        reply_int(c, bitops_get_signed(buf, off, op->bits));
    else
        reply_int(c, (long long)bitops_get_unsigned(buf, off, op->bits));
}

/* A SET or INCRBY on the target: replies the old value (SET) or the new
 * one (INCRBY), or nil when FAIL refuses; returns 1 if it counts as a
 * change (the field changed, or the target is dirty). */
static int bf_write(client *c, const bf_op *op, bits_target *t) {
    uint64_t oldu = bitops_get_unsigned(t->ro, op->offset, op->bits), newu;
    int overflow;
    long long reply;
    if (op->sign) {
        int64_t oldv = bitops_get_signed(t->ro, op->offset, op->bits), newv;
        int64_t base = op->code == BF_SET ? op->value : oldv;
        int64_t incr = op->code == BF_SET ? 0 : op->value;
        overflow = bitops_add_signed(base, incr, op->bits, op->overflow, &newv);
        newu = (uint64_t)newv;
        reply = op->code == BF_SET ? oldv : newv;
    } else {
        uint64_t base = op->code == BF_SET ? (uint64_t)op->value : oldu;
        int64_t incr = op->code == BF_SET ? 0 : op->value;
        overflow = bitops_add_unsigned(base, incr, op->bits, op->overflow, &newu);
        reply = op->code == BF_SET ? (long long)oldu : (long long)newu;
    }
    if (overflow && op->overflow == BITOPS_FAIL) {
        reply_null(c);
        return 0;
    }
    reply_int(c, reply);
    uint64_t mask = op->bits == 64 ? UINT64_MAX : (UINT64_C(1) << op->bits) - 1;
    if ((newu & mask) == oldu && !t->dirty) return 0;
    bitops_set(bits_target_writable(t), op->offset, op->bits, newu);
    return 1;
}

static void bitfield_generic(client *c, int readonly_cmd) {
    bf_op *ops = km_alloc(sizeof(*ops) * (size_t)(c->argc / 2));
    int writes;
    size_t need;
    int n = bf_parse(c, ops, &writes, &need);
    if (n < 0) goto done;
    if (writes && readonly_cmd) {
        reply_error(c, "ERR BITFIELD_RO only supports the GET subcommand");
        goto done;
    }
    db_entry *e;
    const uint8_t *p;
    size_t len;
    if (bits_lookup(c, &c->argv[1], &e, &p, &len) < 0) goto done;
    bits_target t = {.ro = p, .len = len};
    if (writes) bits_target_open(c, &c->argv[1], e, p, len, need, &t);
    long long changes = 0;
    reply_array(c, n);
    for (int i = 0; i < n; i++) {
        if (ops[i].code == BF_GET)
            bf_get(c, &ops[i], t.ro, t.len);
        else
            changes += bf_write(c, &ops[i], &t);
    }
    if (writes) bits_target_close(&t);
    if (changes) notify_key(c, NOTIFY_STRING, "setbit", &c->argv[1]);
done:
    km_free(ops);
}

static void cmd_bitfield(client *c) {
    bitfield_generic(c, 0);
}

static void cmd_bitfield_ro(client *c) {
    bitfield_generic(c, 1);
}

#define BIT_CMD(n, p, a, f, fk, lk, s, v)                                                          \
    {                                                                                              \
        .name = n, .proc = p, .arity = a, .flags = f, .first_key = fk, .last_key = lk,             \
        .key_step = 1, .group = "bitmap", .summary = s, .since = v                                 \
    }

static command bitops_table[] = {
    BIT_CMD("setbit", cmd_setbit, 4, CMD_WRITE | CMD_DENYOOM, 1, 1,
            "Sets or clears the bit at offset of the string value. Creates the key if it doesn't "
            "exist.",
            "2.2.0"),
    BIT_CMD("getbit", cmd_getbit, 3, CMD_READONLY | CMD_FAST, 1, 1,
            "Returns a bit value by offset.", "2.2.0"),
    BIT_CMD("bitcount", cmd_bitcount, -2, CMD_READONLY, 1, 1,
            "Counts the number of set bits (population counting) in a string.", "2.6.0"),
    BIT_CMD("bitpos", cmd_bitpos, -3, CMD_READONLY, 1, 1,
            "Finds the first set (1) or clear (0) bit in a string.", "2.8.7"),
    BIT_CMD("bitop", cmd_bitop, -4, CMD_WRITE | CMD_DENYOOM, 2, -1,
            "Performs bitwise operations on multiple strings, and stores the result.", "2.6.0"),
    BIT_CMD("bitfield", cmd_bitfield, -2, CMD_WRITE | CMD_DENYOOM, 1, 1,
            "Performs arbitrary bitfield integer operations on strings.", "3.2.0"),
    BIT_CMD("bitfield_ro", cmd_bitfield_ro, -2, CMD_READONLY | CMD_FAST, 1, 1,
            "Performs arbitrary read-only bitfield integer operations on strings.", "6.0.0"),
};

const command_family commands_bitops = {bitops_table, K_ARRAY_LEN(bitops_table)};
