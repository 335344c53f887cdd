/* cmd_hll.c -- the HyperLogLog command family: PFADD, PFCOUNT, PFMERGE,
 * PFDEBUG, PFSELFTEST. An HLL is a string value in Valkey's format
 * (ds/hll.h); every command checks a value's header and registers before
 * it reads any, so crafted bytes (SET, SETRANGE, APPEND) are refused, not
 * decoded. A command that changes a sparse value works on a copy and
 * stores it whole (db_add / db_replace_value): its length changes. Writes
 * that keep the length are made in place: PFADD into a dense value (the
 * per-request path, which must not copy 12 KB) and PFCOUNT's cache. */
#include "commands/commands.h"
#include "common/common.h"
#include "common/kmem.h"
#include "ds/hll.h"
#include "session/reply.h"

#include <string.h>

static const char hll_err_not_hll[] = "WRONGTYPE Key is not a valid HyperLogLog string value.";
static const char hll_err_corrupt[] = "INVALIDOBJ Corrupted HLL object detected";

static size_t hll_sparse_max(void) {
    return (size_t)db_opts()->types.hll_sparse_max_bytes;
}

/* The bytes of the HLL stored in e (valid until the keyspace changes), its
 * header checked, or NULL after replying why it is not one: another type or
 * not an HLL (Valkey's isHLLObjectOrReply). */
static const uint8_t *hll_view_header(client *c, const db_entry *e, size_t *len) {
    if (db_entry_type(e) != OBJ_STRING) {
        reply_wrongtype(c);
        return NULL;
    }
    const uint8_t *s = (const uint8_t *)db_entry_str(e, len);
    if (!hll_is_hll(s, *len)) {
        reply_error(c, hll_err_not_hll);
        return NULL;
    }
    return s;
}

/* As hll_view_header, and NULL after replying if the registers do not
 * decode: every path that reads or writes registers goes through here. */
static const uint8_t *hll_view(client *c, const db_entry *e, size_t *len) {
    const uint8_t *s = hll_view_header(c, e, len);
    if (s && !hll_registers_valid(s, *len)) {
        reply_error(c, hll_err_corrupt);
        return NULL;
    }
    return s;
}

/* A modifiable copy of the HLL in e; 0 after replying (see hll_view). */
static int hll_load(client *c, const db_entry *e, hll *h) {
    size_t len;
    const uint8_t *s = hll_view(c, e, &len);
    if (!s) return 0;
    hll_init_from(h, s, len);
    return 1;
}

/* Stores h (consumed) as key's value, over e when the key exists,
 * counting `changes`. */
static void hll_store(client *c, const karg *key, db_entry *e, hll *h, long long changes) {
    size_t len, cap;
    uint8_t *buf = hll_release(h, &len, &cap);
    kobj *o = obj_string_adopt((char *)buf, len, cap);
    if (e)
        db_replace_value(c->db, e, o, changes);
    else
        db_add(c->db, key->ptr, key->len, o, changes);
}

/* PFADD's elements into the dense value s stored in e, in place: the
 * value is made writable (which announces the change) at the first
 * register that rises, and only if one does. Returns 1 if any rose. */
static int pfadd_dense(client *c, db_entry *e, const uint8_t *s, size_t len) {
    uint8_t *w = NULL;
    for (int j = 2; j < c->argc; j++) {
        uint32_t index;
        unsigned count = hll_pattern(c->argv[j].ptr, c->argv[j].len, &index);
        if (hll_dense_get((w ? w : s) + HLL_HDR_SIZE, index) >= count) continue;
        if (!w) w = (uint8_t *)db_string_resize(c->db, &e, len);
        hll_dense_set(w + HLL_HDR_SIZE, index, count);
    }
    if (w) hll_cache_invalidate(w);
    return w != NULL;
}

/* PFADD key [element ...]: 1 when a register changed or the key was
 * created, else 0. */
static void cmd_pfadd(client *c) {
    const karg *key = &c->argv[1];
    db_entry *e = db_lookup(c->db, key->ptr, key->len, 0);
    hll h;
    long long updated = 0;
    if (e) {
        size_t len;
        const uint8_t *s = hll_view(c, e, &len);
        if (!s) return;
        if (hll_encoding(s) == HLL_DENSE) {
            int rose = pfadd_dense(c, e, s, len);
            if (rose) notify_key(c, NOTIFY_STRING, "pfadd", key);
            reply_int(c, rose);
            return;
        }
        hll_init_from(&h, s, len);
    } else {
        hll_init(&h);
        updated = 1;
    }
    size_t max = hll_sparse_max();
    for (int j = 2; j < c->argc; j++)
        updated += hll_add(&h, c->argv[j].ptr, c->argv[j].len, max);
    if (!updated) {
        hll_free(&h);
        reply_int(c, 0);
        return;
    }
    hll_cache_invalidate(h.p);
    hll_store(c, key, e, &h, updated);
    notify_key(c, NOTIFY_STRING, "pfadd", key);
    reply_int(c, 1);
}

/* PFCOUNT of several keys: the count of their union, nothing stored. */
static void pfcount_union(client *c) {
    uint8_t max[HLL_REGISTERS] = {0};
    for (int j = 1; j < c->argc; j++) {
        db_entry *e = db_lookup(c->db, c->argv[j].ptr, c->argv[j].len, 1);
        if (!e) continue; /* a missing key is an empty HLL */
        size_t len;
        const uint8_t *s = hll_view(c, e, &len);
        if (!s) return;
        hll_merge_into(max, s, len);
    }
    reply_int(c, (long long)hll_count_registers(max));
}

/* PFCOUNT key [key ...]: one key answers from its cached cardinality,
 * computing and storing it when stale (a write, as in Valkey). A valid
 * cache is answered without reading the registers, so, as in Valkey, only
 * a stale one has them checked (the walk of a sparse value cost more than
 * the rest of the command). */
static void cmd_pfcount(client *c) {
    if (c->argc > 2) {
        pfcount_union(c);
        return;
    }
    const karg *key = &c->argv[1];
    db_entry *e = db_lookup(c->db, key->ptr, key->len, 1);
    if (!e) {
        reply_int(c, 0);
        return;
    }
    size_t len;
    const uint8_t *s = hll_view_header(c, e, &len);
    if (!s) return;
    uint64_t card;
    if (!hll_cache_get(s, &card)) {
        if (!hll_view(c, e, &len)) return;
        card = hll_count(s, len);
        hll_cache_set((uint8_t *)db_string_resize(c->db, &e, len), card);
    }
    reply_int(c, (long long)card);
}

/* PFMERGE destkey [sourcekey ...]: the union of every key named, the
 * destination included, stored in the destination; dense when any input
 * is, otherwise the destination stays sparse until it outgrows it. */
static void cmd_pfmerge(client *c) {
    uint8_t max[HLL_REGISTERS] = {0};
    int dense = 0;
    for (int j = 1; j < c->argc; j++) {
        db_entry *e = db_lookup(c->db, c->argv[j].ptr, c->argv[j].len, 1);
        if (!e) continue;
        size_t len;
        const uint8_t *s = hll_view(c, e, &len);
        if (!s) return;
        dense |= hll_encoding(s) == HLL_DENSE;
        hll_merge_into(max, s, len);
    }
    const karg *key = &c->argv[1];
    db_entry *e = db_lookup(c->db, key->ptr, key->len, 0);
    hll h;
    if (e) {
        if (!hll_load(c, e, &h)) return; /* checked above: cannot fail */
    } else {
        hll_init(&h);
    }
    if (dense) hll_to_dense(&h);
    hll_raise_all(&h, max, hll_sparse_max());
    hll_cache_invalidate(h.p);
    hll_store(c, key, e, &h, 1);
    /* A merge is a mass add: Valkey names the event pfadd. */
    notify_key(c, NOTIFY_STRING, "pfadd", key);
    reply_ok(c);
}

/* PFDEBUG GETREG and TODENSE store a sparse value converted (consuming
 * h); an HLL already dense is left as it is. */
static void pfdebug_keep(client *c, db_entry *e, hll *h, int converted) {
    if (converted)
        hll_store(c, &c->argv[2], e, h, 1);
    else
        hll_free(h);
}

static void pfdebug_getreg(client *c, db_entry *e, hll *h) {
    int converted = hll_to_dense(h);
    reply_array(c, HLL_REGISTERS);
    for (uint32_t i = 0; i < HLL_REGISTERS; i++)
        reply_int(c, hll_dense_get(h->p + HLL_HDR_SIZE, i));
    pfdebug_keep(c, e, h, converted);
}

static void pfdebug_decode(client *c, hll *h) {
    if (hll_encoding(h->p) != HLL_SPARSE) {
        reply_error(c, "ERR HLL encoding is not sparse");
    } else {
        size_t n;
        char *text = hll_sparse_describe(h->p, h->len, &n);
        reply_bulk(c, text, n);
        km_free(text);
    }
    hll_free(h);
}

/* PFDEBUG GETREG|DECODE|ENCODING|TODENSE key. */
static void cmd_pfdebug(client *c) {
    const karg *sub = &c->argv[1], *key = &c->argv[2];
    db_entry *e = db_lookup(c->db, key->ptr, key->len, 0);
    if (!e) {
        reply_error(c, "ERR The specified key does not exist");
        return;
    }
    hll h;
    if (!hll_load(c, e, &h)) return;
    if (karg_eq(sub, "getreg")) {
        pfdebug_getreg(c, e, &h);
    } else if (karg_eq(sub, "decode")) {
        pfdebug_decode(c, &h);
    } else if (karg_eq(sub, "encoding")) {
        reply_simple(c, hll_encoding(h.p) == HLL_DENSE ? "dense" : "sparse");
        hll_free(&h);
    } else if (karg_eq(sub, "todense")) {
        int converted = hll_to_dense(&h);
        pfdebug_keep(c, e, &h, converted);
        reply_int(c, converted);
    } else {
        hll_free(&h);
        reply_errorf(c, "ERR Unknown PFDEBUG subcommand '%.*s'", (int)sub->len, sub->ptr);
    }
}

static void cmd_pfselftest(client *c) {
    char err[128];
    if (hll_selftest(hll_sparse_max(), err, sizeof(err)) == K_OK)
        reply_ok(c);
    else
        reply_error(c, err);
}

/* clang-format off */

#define HLL_CMD(n, p, a, f, fk, lk, st, s)                                                        \
    {.name = n, .proc = p, .arity = a, .flags = f, .first_key = fk, .last_key = lk,                \
     .key_step = st, .group = "hyperloglog", .summary = s, .since = "2.8.9"}

static command hll_table[] = {
    HLL_CMD("pfadd", cmd_pfadd, -2, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist."),
    HLL_CMD("pfcount", cmd_pfcount, -2, CMD_READONLY | CMD_MAY_REPLICATE, 1, -1, 1, "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s)."),
    HLL_CMD("pfmerge", cmd_pfmerge, -2, CMD_WRITE | CMD_DENYOOM, 1, -1, 1, "Merges one or more HyperLogLog values into a single key."),
    HLL_CMD("pfdebug", cmd_pfdebug, 3, CMD_WRITE | CMD_DENYOOM | CMD_ADMIN, 2, 2, 1, "Internal commands for debugging HyperLogLog values."),
    HLL_CMD("pfselftest", cmd_pfselftest, 1, CMD_ADMIN, 0, 0, 0, "An internal command for testing HyperLogLog values."),
};

/* clang-format on */

const command_family commands_hll = {hll_table, K_ARRAY_LEN(hll_table)};
