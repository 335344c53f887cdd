/* cmd_string.c -- the string command family: GET/SET and friends (with
 * Valkey 8.1's SET IFEQ, 9.0's DELIFEQ and 9.1's MSETEX), counters, ranges,
 * LCS. Values from big arguments are stored by reference (the buffer the
 * socket read filled becomes the value); others are copied into a fresh
 * object with the most compact encoding. */
#include "commands/commands.h"
#include "common/common.h"
#include "common/kmem.h"
#include "session/reply.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* Stores an argument as key's value: a big argument's buffer becomes the
 * value without a copy; any other is copied (into the key's block when it
 * is short). flags and when_ms as db_set_str. */
static db_entry *string_store(db *d, const karg *key, const karg *val, int flags, int64_t when_ms) {
    if (!val->obj) return db_set_str(d, key->ptr, key->len, val->ptr, val->len, flags, when_ms);
    kobj *o = obj_incref(val->obj);
    if (flags & DB_SET_KEEPTTL) return db_set(d, key->ptr, key->len, o, DB_SET_KEEPTTL);
    return db_set_with_expire(d, key->ptr, key->len, o, when_ms);
}

/* A string value as a bulk reply: an object is sent by reference when it
 * is big, embedded bytes are copied. */
static void reply_value(client *c, const db_entry *e) {
    kobj *o = db_entry_obj(e);
    if (o) {
        reply_bulk_obj(c, o);
        return;
    }
    size_t len;
    const char *s = db_entry_str(e, &len);
    reply_bulk(c, s, len);
}

int arg_to_ll(client *c, const karg *a, long long *out) {
    if (str_to_ll(a->ptr, a->len, out)) return 1;
    reply_not_int(c);
    return 0;
}

int arg_to_range(client *c, const karg *a, long long min, long long max, const char *msg,
                 long long *out) {
    if (!str_to_ll(a->ptr, a->len, out)) {
        reply_error(c, msg ? msg : "ERR value is not an integer or out of range");
        return 0;
    }
    if (*out < min || *out > max) {
        if (msg)
            reply_error(c, msg);
        else
            reply_errorf(c, "ERR value is out of range, value must between %lld and %lld", min,
                         max);
        return 0;
    }
    return 1;
}

int arg_mpop_count(client *c, int from, long long *count) {
    *count = -1;
    for (int j = from; j < c->argc; j++) {
        if (*count == -1 && j + 1 < c->argc && karg_eq(&c->argv[j], "count")) {
            if (!arg_to_range(c, &c->argv[++j], 1, LLONG_MAX, "ERR count should be greater than 0",
                              count))
                return 0;
        } else {
            reply_syntax_error(c);
            return 0;
        }
    }
    if (*count == -1) *count = 1;
    return 1;
}

/* Looks a key up for a string command; replies WRONGTYPE and returns -1 if
 * it holds another type. */
static int string_lookup(client *c, const karg *key, db_entry **out) {
    db_entry *e = db_lookup(c->db, key->ptr, key->len, 1);
    if (e && db_entry_type(e) != OBJ_STRING) {
        reply_wrongtype(c);
        return -1;
    }
    *out = e;
    return 0;
}

static void cmd_get(client *c) {
    db_entry *e;
    if (string_lookup(c, &c->argv[1], &e) < 0) return;
    if (e)
        reply_value(c, e);
    else reply_null(c);
}

/* ---- SET and its options ---- */

#define SET_NX (1 << 0)
#define SET_XX (1 << 1)
#define SET_GET (1 << 2)
#define SET_KEEPTTL (1 << 3)
#define SET_EXPIRE (1 << 4)
#define SET_IFEQ (1 << 5)

typedef struct set_opts {
    int flags;
    int64_t expire_at; /* absolute unix ms with SET_EXPIRE */
    const karg *ifeq;  /* SET_IFEQ: the value the current one must equal */
} set_opts;

/* Converts an EX/PX/EXAT/PXAT argument to an absolute time. */
static int parse_expire(client *c, const karg *a, int unit_ms, int absolute, const char *cmdname,
                        int64_t *out) {
    long long v;
    if (!str_to_ll(a->ptr, a->len, &v)) {
        reply_not_int(c);
        return 0;
    }
    if (v <= 0 || (unit_ms == 1000 && v > LLONG_MAX / 1000)) goto invalid;
    v *= unit_ms;
    if (!absolute) {
        if (v > LLONG_MAX - event_cached_ms()) goto invalid;
        v += event_cached_ms();
    }
    *out = v;
    return 1;
invalid:
    reply_errorf(c, "ERR invalid expire time in '%s' command", cmdname);
    return 0;
}

static int set_expire_option(const karg *a, int *unit_ms, int *absolute) {
    if (karg_eq(a, "ex")) *unit_ms = 1000, *absolute = 0;
    else if (karg_eq(a, "px")) *unit_ms = 1, *absolute = 0;
    else if (karg_eq(a, "exat")) *unit_ms = 1000, *absolute = 1;
    else if (karg_eq(a, "pxat")) *unit_ms = 1, *absolute = 1;
    else return 0;
    return 1;
}

/* Parses SET's options from argument `from` on; MSETEX takes the same but
 * GET and IFEQ (`msetex`), which are syntax errors there. */
static int set_parse(client *c, int from, int msetex, set_opts *o) {
    o->flags = 0;
    const int allowed = msetex ? 0 : SET_GET | SET_IFEQ; /* the single-key options */
    for (int i = from; i < c->argc; i++) {
        const karg *a = &c->argv[i];
        int unit, absolute;
        if (karg_eq(a, "nx") && !(o->flags & (SET_XX | SET_IFEQ)))
            o->flags |= SET_NX;
        else if (karg_eq(a, "xx") && !(o->flags & (SET_NX | SET_IFEQ)))
            o->flags |= SET_XX;
        else if ((allowed & SET_IFEQ) && karg_eq(a, "ifeq") &&
                 !(o->flags & (SET_NX | SET_XX | SET_IFEQ)) && i + 1 < c->argc) {
            o->flags |= SET_IFEQ;
            o->ifeq = &c->argv[++i];
        } else if ((allowed & SET_GET) && karg_eq(a, "get"))
            o->flags |= SET_GET;
        else if (karg_eq(a, "keepttl") && !(o->flags & SET_EXPIRE)) o->flags |= SET_KEEPTTL;
        else if (set_expire_option(a, &unit, &absolute) && !(o->flags & (SET_KEEPTTL | SET_EXPIRE)) &&
                 i + 1 < c->argc) {
            if (!parse_expire(c, &c->argv[++i], unit, absolute, msetex ? "msetex" : "set",
                              &o->expire_at))
                return 0;
            o->flags |= SET_EXPIRE;
        } else {
            reply_syntax_error(c);
            return 0;
        }
    }
    return 1;
}

/* 1 if e (a string) holds exactly the bytes of a. */
static int string_equals(const db_entry *e, const karg *a) {
    size_t len;
    const char *s = db_entry_str(e, &len);
    return s && len == a->len && memcmp(s, a->ptr, len) == 0;
}

/* The common core of SET, SETNX, SETEX, PSETEX. Returns 1 if it was set.
 * With SET_IFEQ the caller has refused a value of another type. */
static int string_set(client *c, const karg *key, const karg *val, const set_opts *o) {
    db_entry *e = db_lookup_quiet(c->db, key->ptr, key->len);
    if ((o->flags & SET_IFEQ) && (!e || !string_equals(e, o->ifeq))) return 0;
    if ((o->flags & SET_NX) && e) return 0;
    if ((o->flags & SET_XX) && !e) return 0;
    /* A time already past: as Valkey, the key is overwritten by nothing
     * (deleted, not counted as expired) rather than stored to expire on
     * the next access. */
    if ((o->flags & SET_EXPIRE) && o->expire_at <= event_cached_ms()) {
        if (e && db_delete(c->db, key->ptr, key->len)) notify_key(c, NOTIFY_GENERIC, "del", key);
        return 1;
    }
    string_store(c->db, key, val, (o->flags & SET_KEEPTTL) ? DB_SET_KEEPTTL : 0,
                 (o->flags & SET_EXPIRE) ? o->expire_at : -1);
    notify_key(c, NOTIFY_STRING, "set", key);
    if (o->flags & SET_EXPIRE) notify_key(c, NOTIFY_GENERIC, "expire", key);
    return 1;
}

static void cmd_set(client *c) {
    set_opts o;
    if (!set_parse(c, 3, 0, &o)) return;
    if (o.flags & SET_GET) {
        /* The old value is the reply whatever the set does, so it is sent
         * before the set overwrites it (an embedded value is overwritten
         * in place). */
        db_entry *e;
        if (string_lookup(c, &c->argv[1], &e) < 0) return;
        if (e)
            reply_value(c, e);
        else reply_null(c);
        string_set(c, &c->argv[1], &c->argv[2], &o);
        return;
    }
    if (o.flags & SET_IFEQ) {
        db_entry *e = db_lookup_quiet(c->db, c->argv[1].ptr, c->argv[1].len);
        if (e && db_entry_type(e) != OBJ_STRING) {
            reply_wrongtype(c);
            return;
        }
    }
    if (string_set(c, &c->argv[1], &c->argv[2], &o))
        reply_ok(c);
    else
        reply_null(c);
}

/* DELIFEQ key value (Valkey 9.0): deletes the key if it holds exactly
 * value. */
static void cmd_delifeq(client *c) {
    const karg *key = &c->argv[1];
    db_entry *e = db_lookup(c->db, key->ptr, key->len, 0);
    if (e && db_entry_type(e) != OBJ_STRING) {
        reply_wrongtype(c);
        return;
    }
    if (!e || !string_equals(e, &c->argv[2])) {
        reply_int(c, 0);
        return;
    }
    db_delete(c->db, key->ptr, key->len);
    notify_key(c, NOTIFY_GENERIC, "del", key);
    reply_int(c, 1);
}

static void cmd_setnx(client *c) {
    set_opts o = {.flags = SET_NX};
    reply_int(c, string_set(c, &c->argv[1], &c->argv[2], &o));
}

static void setex_generic(client *c, int unit_ms, const char *name) {
    set_opts o = {.flags = SET_EXPIRE};
    if (!parse_expire(c, &c->argv[2], unit_ms, 0, name, &o.expire_at)) return;
    string_set(c, &c->argv[1], &c->argv[3], &o);
    reply_ok(c);
}

static void cmd_setex(client *c) {
    setex_generic(c, 1000, "setex");
}

static void cmd_psetex(client *c) {
    setex_generic(c, 1, "psetex");
}

/* ---- GETEX, GETDEL, GETSET ---- */

static void cmd_getex(client *c) {
    int64_t when = 0;
    int persist = 0, expire = 0;
    for (int i = 2; i < c->argc; i++) {
        int unit, absolute;
        if (karg_eq(&c->argv[i], "persist") && !expire && !persist) {
            persist = 1;
        } else if (set_expire_option(&c->argv[i], &unit, &absolute) && !expire && !persist &&
                   i + 1 < c->argc) {
            if (!parse_expire(c, &c->argv[++i], unit, absolute, "getex", &when)) return;
            expire = 1;
        } else {
            reply_syntax_error(c);
            return;
        }
    }
    db_entry *e;
    if (string_lookup(c, &c->argv[1], &e) < 0) return;
    if (!e) {
        reply_null(c);
        return;
    }
    reply_value(c, e);
    const karg *key = &c->argv[1];
    if (expire && when <= event_cached_ms()) {
        db_delete(c->db, key->ptr, key->len);
        notify_key(c, NOTIFY_GENERIC, "del", key);
    } else if (expire) {
        db_set_expire(c->db, e, when);
        notify_key(c, NOTIFY_GENERIC, "expire", key);
    } else if (persist && db_persist(c->db, e)) {
        notify_key(c, NOTIFY_GENERIC, "persist", key);
    }
}

static void cmd_getdel(client *c) {
    db_entry *e;
    if (string_lookup(c, &c->argv[1], &e) < 0) return;
    if (!e) {
        reply_null(c);
        return;
    }
    reply_value(c, e);
    db_delete(c->db, c->argv[1].ptr, c->argv[1].len);
    notify_key(c, NOTIFY_GENERIC, "del", &c->argv[1]);
}

static void cmd_getset(client *c) {
    db_entry *e;
    if (string_lookup(c, &c->argv[1], &e) < 0) return;
    if (e)
        reply_value(c, e);
    else reply_null(c);
    string_store(c->db, &c->argv[1], &c->argv[2], 0, -1);
    notify_key(c, NOTIFY_STRING, "set", &c->argv[1]);
}

/* ---- multi-key ---- */

static void cmd_mget(client *c) {
    reply_array(c, c->argc - 1);
    for (int i = 1; i < c->argc; i++) {
        db_entry *e = db_lookup(c->db, c->argv[i].ptr, c->argv[i].len, 1);
        if (e && db_entry_type(e) == OBJ_STRING)
            reply_value(c, e);
        else reply_null(c);
    }
}

static void mset_generic(client *c, int nx) {
    if (c->argc % 2 == 0) {
        reply_wrong_arity(c);
        return;
    }
    if (nx) {
        for (int i = 1; i < c->argc; i += 2) {
            if (db_lookup_quiet(c->db, c->argv[i].ptr, c->argv[i].len)) {
                reply_int(c, 0);
                return;
            }
        }
    }
    for (int i = 1; i < c->argc; i += 2) {
        string_store(c->db, &c->argv[i], &c->argv[i + 1], 0, -1);
        notify_key(c, NOTIFY_STRING, "set", &c->argv[i]);
    }
    if (nx) reply_int(c, 1);
    else reply_ok(c);
}

/* MSETEX numkeys key value [key value ...] [NX | XX] [EX s | PX ms |
 * EXAT s | PXAT ms | KEEPTTL] (Valkey 9.1): MSET with one condition over
 * all the keys and one TTL for them. Replies 1 when the keys were set, 0
 * when NX or XX refused them (then none is). */
static void cmd_msetex(client *c) {
    long long numkeys;
    if (!arg_to_ll(c, &c->argv[1], &numkeys)) return;
    if (numkeys < 1) {
        reply_error(c, "ERR numkeys should be greater than 0");
        return;
    }
    if (numkeys > (c->argc - 2) / 2) {
        reply_wrong_arity(c);
        return;
    }
    int end = 2 + 2 * (int)numkeys;
    set_opts o;
    if (!set_parse(c, end, 1, &o)) return;
    for (int i = 2; i < end && (o.flags & (SET_NX | SET_XX)); i += 2) {
        int found = db_lookup_quiet(c->db, c->argv[i].ptr, c->argv[i].len) != NULL;
        if (found == !!(o.flags & SET_NX)) {
            reply_int(c, 0);
            return;
        }
    }
    /* Each key as SET stores it (a time already past deletes it). */
    o.flags &= ~(SET_NX | SET_XX);
    for (int i = 2; i < end; i += 2)
        string_set(c, &c->argv[i], &c->argv[i + 1], &o);
    reply_int(c, 1);
}

static void cmd_mset(client *c) {
    mset_generic(c, 0);
}

static void cmd_msetnx(client *c) {
    mset_generic(c, 1);
}

/* ---- in-place modification ---- */

static int string_check_len(client *c, long long len) {
    if (len <= session_opts()->proto_max_bulk_len) return 1;
    reply_error(c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    return 0;
}

static void cmd_append(client *c) {
    db_entry *e;
    const karg *v = &c->argv[2];
    if (string_lookup(c, &c->argv[1], &e) < 0) return;
    if (!e) {
        e = db_add(c->db, c->argv[1].ptr, c->argv[1].len, obj_string_raw(v->ptr, v->len), 1);
        notify_key(c, NOTIFY_STRING, "append", &c->argv[1]);
        reply_int(c, (long long)v->len);
        return;
    }
    size_t len = db_entry_strlen(e);
    if (!string_check_len(c, (long long)(len + v->len))) return;
    char *p = db_string_resize(c->db, &e, len + v->len);
    memcpy(p + len, v->ptr, v->len);
    notify_key(c, NOTIFY_STRING, "append", &c->argv[1]);
    reply_int(c, (long long)(len + v->len));
}

static void cmd_strlen(client *c) {
    db_entry *e;
    if (string_lookup(c, &c->argv[1], &e) < 0) return;
    reply_int(c, e ? (long long)db_entry_strlen(e) : 0);
}

static void cmd_setrange(client *c) {
    long long offset;
    const karg *v = &c->argv[3];
    if (!arg_to_ll(c, &c->argv[2], &offset)) return;
    if (offset < 0) {
        reply_error(c, "ERR offset is out of range");
        return;
    }
    db_entry *e;
    if (string_lookup(c, &c->argv[1], &e) < 0) return;
    size_t cur = e ? db_entry_strlen(e) : 0;
    if (v->len == 0) { /* nothing to write: the key is not created */
        reply_int(c, (long long)cur);
        return;
    }
    /* Written as a subtraction so a huge offset cannot overflow. */
    if (offset > session_opts()->proto_max_bulk_len - (long long)v->len) {
        reply_error(c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        return;
    }
    size_t end = (size_t)offset + v->len;
    size_t newlen = end > cur ? end : cur;
    if (!e) {
        kobj *o = obj_string_alloc(end);
        memset(o->v.ptr, 0, (size_t)offset);
        memcpy(o->v.ptr + offset, v->ptr, v->len);
        o->len = end;
        o->v.ptr[end] = '\0';
        db_add(c->db, c->argv[1].ptr, c->argv[1].len, o, 1);
    } else {
        char *p = db_string_resize(c->db, &e, newlen);
        if (end > cur) memset(p + cur, 0, end - cur);
        memcpy(p + offset, v->ptr, v->len);
    }
    notify_key(c, NOTIFY_STRING, "setrange", &c->argv[1]);
    reply_int(c, (long long)newlen);
}

static void cmd_getrange(client *c) {
    long long start, end;
    if (!arg_to_ll(c, &c->argv[2], &start) || !arg_to_ll(c, &c->argv[3], &end)) return;
    db_entry *e;
    if (string_lookup(c, &c->argv[1], &e) < 0) return;
    size_t len = 0;
    const char *s = e ? db_entry_str(e, &len) : "";
    if (start < 0 && end < 0 && start > end) {
        reply_bulk(c, "", 0);
        return;
    }
    if (start < 0) start += (long long)len;
    if (end < 0) end += (long long)len;
    if (start < 0) start = 0;
    if (end < 0) end = 0;
    if ((size_t)end >= len) end = (long long)len - 1;
    if (len == 0 || start > end) reply_bulk(c, "", 0);
    else reply_bulk(c, s + start, (size_t)(end - start + 1));
}

/* ---- LCS ---- */

typedef struct lcs_opts {
    int len, idx, withmatchlen;
    long long minmatchlen;
} lcs_opts;

static int lcs_parse(client *c, lcs_opts *o) {
    *o = (lcs_opts){0};
    for (int j = 3; j < c->argc; j++) {
        const karg *a = &c->argv[j];
        if (karg_eq(a, "idx"))
            o->idx = 1;
        else if (karg_eq(a, "len"))
            o->len = 1;
        else if (karg_eq(a, "withmatchlen"))
            o->withmatchlen = 1;
        else if (karg_eq(a, "minmatchlen") && j + 1 < c->argc) {
            if (!arg_to_ll(c, &c->argv[++j], &o->minmatchlen)) return 0;
            if (o->minmatchlen < 0) o->minmatchlen = 0;
        } else {
            reply_syntax_error(c);
            return 0;
        }
    }
    if (o->len && o->idx) {
        reply_error(c, "ERR If you want both the length and indexes, please just use IDX.");
        return 0;
    }
    return 1;
}

/* The dynamic-programming table: t[i * (blen + 1) + j] is the length of
 * the LCS of a[0..i) and b[0..j). */
static void lcs_fill(uint32_t *t, const char *a, uint32_t alen, const char *b, uint32_t blen) {
    const size_t w = (size_t)blen + 1;
    for (uint32_t j = 0; j <= blen; j++)
        t[j] = 0;
    for (uint32_t i = 1; i <= alen; i++) {
        uint32_t *row = t + i * w, *up = row - w;
        row[0] = 0;
        for (uint32_t j = 1; j <= blen; j++) {
            if (a[i - 1] == b[j - 1])
                row[j] = up[j - 1] + 1;
            else
                row[j] = up[j] > row[j - 1] ? up[j] : row[j - 1];
        }
    }
}

static void lcs_reply_match(client *c, const lcs_opts *o, uint32_t a0, uint32_t a1, uint32_t b0,
                            uint32_t b1) {
    reply_array(c, 2 + o->withmatchlen);
    reply_array(c, 2);
    reply_int(c, a0);
    reply_int(c, a1);
    reply_array(c, 2);
    reply_int(c, b0);
    reply_int(c, b1);
    if (o->withmatchlen) reply_int(c, (long long)(a1 - a0 + 1));
}

/* Walks the table back from its end as Valkey does (on a tie it steps
 * along b), writing the LCS into out (when not NULL) and, with IDX,
 * replying each run of consecutive matches, last run first, that is at
 * least MINMATCHLEN long. Returns the runs replied. */
static long long lcs_walk(client *c, const lcs_opts *o, const uint32_t *t, const char *a,
                          uint32_t alen, const char *b, uint32_t blen, char *out) {
    const size_t w = (size_t)blen + 1;
    uint32_t i = alen, j = blen, k = t[(size_t)alen * w + blen];
    int open = 0; /* a run [a0, a1] x [b0, b1] is being extended backwards */
    uint32_t a0 = 0, a1 = 0, b0 = 0, b1 = 0;
    long long runs = 0;
    while (i > 0 && j > 0) {
        int close = 0;
        if (a[i - 1] == b[j - 1]) {
            if (out) out[--k] = a[i - 1];
            if (!open) a1 = i - 1, b1 = j - 1;
            a0 = i - 1, b0 = j - 1, open = 1;
            /* A run that reached the start of either string is complete. */
            close = a0 == 0 || b0 == 0;
            i--, j--;
        } else {
            if (t[(size_t)(i - 1) * w + j] > t[(size_t)i * w + j - 1])
                i--;
            else
                j--;
            close = open;
        }
        if (close) {
            if (o->idx && (o->minmatchlen == 0 || a1 - a0 + 1 >= o->minmatchlen)) {
                lcs_reply_match(c, o, a0, a1, b0, b1);
                runs++;
            }
            open = 0;
        }
    }
    return runs;
}

/* LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]: the longest
 * common subsequence of two strings (a missing key is an empty one), its
 * length, or the matching ranges. */
static void cmd_lcs(client *c) {
    const karg *ka = &c->argv[1], *kb = &c->argv[2];
    db_entry *ea = db_lookup(c->db, ka->ptr, ka->len, 1);
    db_entry *eb = db_lookup(c->db, kb->ptr, kb->len, 1);
    if ((ea && db_entry_type(ea) != OBJ_STRING) || (eb && db_entry_type(eb) != OBJ_STRING)) {
        reply_error(c, "ERR The specified keys must contain string values");
        return;
    }
    lcs_opts o;
    if (!lcs_parse(c, &o)) return;
    /* The second lookup may have expired a key: the first is looked up
     * again for bytes that are surely current. */
    ea = db_lookup_quiet(c->db, ka->ptr, ka->len);
    size_t alen = 0, blen = 0;
    const char *a = ea ? db_entry_str(ea, &alen) : "";
    const char *b = eb ? db_entry_str(eb, &blen) : "";
    if (alen >= UINT32_MAX - 1 || blen >= UINT32_MAX - 1) {
        reply_error(c, "ERR String too long for LCS");
        return;
    }
    /* Both lengths are below 2^32, so the product fits 64 bits; the table
     * is refused beyond proto-max-bulk-len, as in Valkey. */
    uint64_t cells = (uint64_t)(alen + 1) * (blen + 1);
    if (cells > UINT64_MAX / sizeof(uint32_t) ||
        cells * sizeof(uint32_t) > (uint64_t)session_opts()->proto_max_bulk_len) {
        reply_error(c, "ERR Insufficient memory, transient memory for LCS exceeds "
                       "proto-max-bulk-len");
        return;
    }
    size_t bytes = (size_t)cells * sizeof(uint32_t);
    uint32_t *t = bytes >= KM_LARGE ? km_alloc_large(bytes) : km_alloc(bytes);
    lcs_fill(t, a, (uint32_t)alen, b, (uint32_t)blen);
    uint32_t total = t[cells - 1];
    if (o.idx) {
        reply_map(c, 2);
        reply_bulk_cstr(c, "matches");
        reply_deferred h = reply_deferred_array(c);
        long long runs = lcs_walk(c, &o, t, a, (uint32_t)alen, b, (uint32_t)blen, NULL);
        reply_set_deferred_len(c, h, runs);
        reply_bulk_cstr(c, "len");
        reply_int(c, total);
    } else if (o.len) {
        reply_int(c, total);
    } else {
        char *out = km_alloc((size_t)total + 1);
        lcs_walk(c, &o, t, a, (uint32_t)alen, b, (uint32_t)blen, out);
        reply_bulk(c, out, total);
        km_free(out);
    }
    if (bytes >= KM_LARGE)
        km_free_large(t);
    else
        km_free(t);
}

/* ---- counters ---- */

static void incr_generic(client *c, long long by) {
    db_entry *e;
    if (string_lookup(c, &c->argv[1], &e) < 0) return;
    int64_t cur = 0;
    if (e && !db_entry_get_int(e, &cur)) {
        reply_not_int(c);
        return;
    }
    if ((by < 0 && cur < LLONG_MIN - by) || (by > 0 && cur > LLONG_MAX - by)) {
        reply_error(c, "ERR increment or decrement would overflow");
        return;
    }
    long long v = cur + by;
    /* The digits are written over the old ones in the key's block: no
     * allocation per INCR (the block moves only when it lacks room). */
    char digits[24];
    size_t n = ll_to_str(digits, v);
    if (e)
        db_replace_str(c->db, e, digits, n);
    else
        db_set_str(c->db, c->argv[1].ptr, c->argv[1].len, digits, n, 0, -1);
    notify_key(c, NOTIFY_STRING, "incrby", &c->argv[1]);
    reply_int(c, v);
}

static void cmd_incr(client *c) {
    incr_generic(c, 1);
}

static void cmd_decr(client *c) {
    incr_generic(c, -1);
}

static void cmd_incrby(client *c) {
    long long by;
    if (arg_to_ll(c, &c->argv[2], &by)) incr_generic(c, by);
}

static void cmd_decrby(client *c) {
    long long by;
    if (!arg_to_ll(c, &c->argv[2], &by)) return;
    if (by == LLONG_MIN) {
        reply_error(c, "ERR decrement would overflow");
        return;
    }
    incr_generic(c, -by);
}

static void cmd_incrbyfloat(client *c) {
    long double by, cur = 0;
    if (!str_to_ld(c->argv[2].ptr, c->argv[2].len, &by)) {
        reply_error(c, "ERR value is not a valid float");
        return;
    }
    db_entry *e;
    if (string_lookup(c, &c->argv[1], &e) < 0) return;
    if (e) {
        size_t len;
        const char *s = db_entry_str(e, &len);
        if (!str_to_ld(s, len, &cur)) {
            reply_error(c, "ERR value is not a valid float");
            return;
        }
    }
    long double v = cur + by;
    if (isnan(v) || isinf(v)) {
        reply_error(c, "ERR increment would produce NaN or Infinity");
        return;
    }
    char out[5500];
    size_t len = ld_to_str(out, sizeof(out), v);
    if (e)
        db_replace_str(c->db, e, out, len);
    else
        db_set_str(c->db, c->argv[1].ptr, c->argv[1].len, out, len, 0, -1);
    notify_key(c, NOTIFY_STRING, "incrbyfloat", &c->argv[1]);
    reply_bulk(c, out, len);
}

#define STR_CMD(n, p, a, f, fk, lk, st, s, v) \
    {.name = n, .proc = p, .arity = a, .flags = f, .first_key = fk, .last_key = lk, \
     .key_step = st, .group = "string", .summary = s, .since = v}

static command string_table[] = {
    STR_CMD("get", cmd_get, 2, CMD_READONLY | CMD_FAST, 1, 1, 1,
            "Returns the string value of a key.", "1.0.0"),
    STR_CMD("set", cmd_set, -3, CMD_WRITE | CMD_DENYOOM, 1, 1, 1,
            "Sets the string value of a key, ignoring its type. The key is created if it doesn't "
            "exist.",
            "1.0.0"),
    STR_CMD("setnx", cmd_setnx, 3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
            "Set the string value of a key only when the key doesn't exist.", "1.0.0"),
    STR_CMD(
        "setex", cmd_setex, 4, CMD_WRITE | CMD_DENYOOM, 1, 1, 1,
        "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.",
        "2.0.0"),
    STR_CMD("psetex", cmd_psetex, 4, CMD_WRITE | CMD_DENYOOM, 1, 1, 1,
            "Sets both string value and expiration time in milliseconds of a key. The key is "
            "created if it doesn't exist.",
            "2.6.0"),
    STR_CMD("getex", cmd_getex, -2, CMD_WRITE | CMD_FAST, 1, 1, 1,
            "Returns the string value of a key after setting its expiration time.", "6.2.0"),
    STR_CMD("getdel", cmd_getdel, 2, CMD_WRITE | CMD_FAST, 1, 1, 1,
            "Returns the string value of a key after deleting the key.", "6.2.0"),
    STR_CMD("getset", cmd_getset, 3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
            "Returns the previous string value of a key after setting it to a new value.", "1.0.0"),
    STR_CMD("mget", cmd_mget, -2, CMD_READONLY | CMD_FAST, 1, -1, 1,
            "Atomically returns the string values of one or more keys.", "1.0.0"),
    STR_CMD("mset", cmd_mset, -3, CMD_WRITE | CMD_DENYOOM, 1, -1, 2,
            "Atomically creates or modifies the string values of one or more keys.", "1.0.1"),
    STR_CMD(
        "msetnx", cmd_msetnx, -3, CMD_WRITE | CMD_DENYOOM, 1, -1, 2,
        "Atomically modifies the string values of one or more keys only when all keys don't exist.",
        "1.0.1"),
    STR_CMD("append", cmd_append, 3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
            "Appends a string to the value of a key. Creates the key if it doesn't exist.",
            "2.0.0"),
    STR_CMD("strlen", cmd_strlen, 2, CMD_READONLY | CMD_FAST, 1, 1, 1,
            "Returns the length of a string value.", "2.2.0"),
    STR_CMD("setrange", cmd_setrange, 4, CMD_WRITE | CMD_DENYOOM, 1, 1, 1,
            "Overwrites a part of a string value with another by an offset. Creates the key if it "
            "doesn't exist.",
            "2.2.0"),
    STR_CMD("getrange", cmd_getrange, 4, CMD_READONLY, 1, 1, 1,
            "Returns a substring of the string stored at a key.", "2.4.0"),
    STR_CMD("substr", cmd_getrange, 4, CMD_READONLY, 1, 1, 1,
            "Returns a substring from a string value.", "1.0.0"),
    STR_CMD("incr", cmd_incr, 2, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
            "Increments the integer value of a key by one. Uses 0 as initial value if the key "
            "doesn't exist.",
            "1.0.0"),
    STR_CMD("decr", cmd_decr, 2, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
            "Decrements the integer value of a key by one. Uses 0 as initial value if the key "
            "doesn't exist.",
            "1.0.0"),
    STR_CMD("incrby", cmd_incrby, 3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
            "Increments the integer value of a key by a number. Uses 0 as initial value if the key "
            "doesn't exist.",
            "1.0.0"),
    STR_CMD("decrby", cmd_decrby, 3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
            "Decrements a number from the integer value of a key. Uses 0 as initial value if the "
            "key doesn't exist.",
            "1.0.0"),
    STR_CMD("lcs", cmd_lcs, -3, CMD_READONLY, 1, 2, 1, "Finds the longest common substring.",
            "7.0.0"),
    STR_CMD("delifeq", cmd_delifeq, 3, CMD_WRITE, 1, 1, 1, "Delete key if value matches string.",
            "9.0.0"),
    STR_CMD("msetex", cmd_msetex, -4, CMD_WRITE | CMD_DENYOOM, 0, 0, 0,
            "Atomically creates or modifies the string values of one or more keys, and optionally "
            "set their expiration.",
            "9.1.0"),
    STR_CMD("incrbyfloat", cmd_incrbyfloat, 3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
            "Increment the floating point value of a key by a number. Uses 0 as initial value if "
            "the key doesn't exist.",
            "2.6.0"),
};

const command_family commands_string = {string_table, K_ARRAY_LEN(string_table)};
