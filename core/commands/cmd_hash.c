/* cmd_hash.c -- the hash command family: fields and values, counters,
 * random fields, HSCAN, and Valkey 9.0's per-field expiry (HEXPIRE and
 * friends, HGETEX, HSETEX, HGETDEL). The value and its encodings are
 * types/hash.h's; these procedures only parse, call it, and reply. */
#include "commands/commands.h"
#include "common/common.h"
#include "common/kmem.h"
#include "common/sbuf.h"
#include "ds/glob.h"
#include "event/event.h"
#include "session/reply.h"
#include "types/hash.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- looking hashes up ---- */

/* The hash at key with its due fields removed (lazy field expiry), or NULL
 * when the key is missing or expiry emptied it. Returns -1 after replying
 * WRONGTYPE. (Registering hashes for active expiry is the hash type's
 * keyspace hook's business: every write announces the key.) */
static int hash_lookup(client *c, const karg *key, kobj **out) {
    *out = NULL;
    db_entry *e = db_lookup(c->db, key->ptr, key->len, 1);
    if (!e) return 0;
    if (db_entry_type(e) != OBJ_HASH) {
        reply_wrongtype(c);
        return -1;
    }
    kobj *o = db_entry_obj(e);
    if (hash_volatile_count(o)) {
        if (hash_expire_due(o, event_cached_ms())) {
            notify_key(c, NOTIFY_HASH, "hexpired", key);
            if (hash_length(o) == 0) {
                db_delete(c->db, key->ptr, key->len);
                notify_key(c, NOTIFY_GENERIC, "del", key);
                return 0;
            }
            db_signal_modified(c->db, key->ptr, key->len, 1);
        }
    }
    *out = o;
    return 0;
}

/* A new empty hash stored at key (which is missing); the write that fills
 * it counts the changes. */
static kobj *hash_create(client *c, const karg *key) {
    kobj *o = hash_new();
    db_add(c->db, key->ptr, key->len, o, 0);
    return o;
}

/* The hash at key, created empty when missing; NULL after WRONGTYPE. */
static kobj *hash_lookup_create(client *c, const karg *key) {
    kobj *o;
    if (hash_lookup(c, key, &o) < 0) return NULL;
    return o ? o : hash_create(c, key);
}

/* After a write of `changes` fields announced as `event` (hset, hdel...):
 * deletes the key of a hash left empty (announced as `del` after the
 * event, as Valkey does), else signals the change (WATCH, dirty, wake-ups,
 * and active expiry's registration). */
static void hash_written(client *c, const karg *key, kobj *o, long long changes,
                         const char *event) {
    collection_changed(c, key, hash_length(o) == 0, changes, NOTIFY_HASH, event);
}

static void reply_hstr(client *c, const hash_str *s) {
    reply_bulk(c, s->s, s->len);
}

/* A field's value, or null. */
static void reply_field(client *c, kobj *o, const karg *f) {
    hash_str v;
    if (o && hash_get(o, f->ptr, f->len, &v))
        reply_hstr(c, &v);
    else
        reply_null(c);
}

/* ---- setting and reading fields ---- */

static void cmd_hset(client *c) {
    if (c->argc % 2) {
        reply_wrong_arity(c);
        return;
    }
    kobj *o = hash_lookup_create(c, &c->argv[1]);
    if (!o) return;
    long long created = 0;
    for (int i = 2; i < c->argc; i += 2) {
        const karg *f = &c->argv[i], *v = &c->argv[i + 1];
        created += hash_set(o, f->ptr, f->len, v->ptr, v->len, 0, HASH_NO_EXPIRE);
    }
    hash_written(c, &c->argv[1], o, (c->argc - 2) / 2, "hset");
    /* HMSET is HSET with Valkey's older reply. */
    if (c->argv[0].ptr[1] == 'm' || c->argv[0].ptr[1] == 'M')
        reply_ok(c);
    else
        reply_int(c, created);
}

static void cmd_hsetnx(client *c) {
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    const karg *f = &c->argv[2], *v = &c->argv[3];
    if (o && hash_exists(o, f->ptr, f->len)) {
        reply_int(c, 0);
        return;
    }
    if (!o) o = hash_create(c, &c->argv[1]);
    hash_set(o, f->ptr, f->len, v->ptr, v->len, 0, HASH_NO_EXPIRE);
    hash_written(c, &c->argv[1], o, 1, "hset");
    reply_int(c, 1);
}

static void cmd_hget(client *c) {
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    reply_field(c, o, &c->argv[2]);
}

static void cmd_hmget(client *c) {
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    reply_array(c, c->argc - 2);
    for (int i = 2; i < c->argc; i++)
        reply_field(c, o, &c->argv[i]);
}

static void cmd_hdel(client *c) {
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    long long n = 0;
    for (int i = 2; o && i < c->argc; i++)
        n += hash_delete(o, c->argv[i].ptr, c->argv[i].len);
    if (n) hash_written(c, &c->argv[1], o, n, "hdel");
    reply_int(c, n);
}

static void cmd_hlen(client *c) {
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    reply_int(c, o ? (long long)hash_length(o) : 0);
}

static void cmd_hstrlen(client *c) {
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    hash_str v;
    int found = o && hash_get(o, c->argv[2].ptr, c->argv[2].len, &v);
    reply_int(c, found ? (long long)v.len : 0);
}

static void cmd_hexists(client *c) {
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    reply_int(c, o && hash_exists(o, c->argv[2].ptr, c->argv[2].len));
}

#define WANT_FIELDS 1
#define WANT_VALUES 2

/* HKEYS, HVALS, HGETALL (a map in RESP3). */
static void hash_getall(client *c, int want) {
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    size_t n = o ? hash_length(o) : 0;
    if (want == (WANT_FIELDS | WANT_VALUES))
        reply_map(c, (long long)n);
    else
        reply_array(c, (long long)n);
    if (!o) return;
    hash_iter it;
    hash_str f, v;
    hash_iter_init(&it, o);
    while (hash_iter_next(&it, &f, &v)) {
        if (want & WANT_FIELDS) reply_hstr(c, &f);
        if (want & WANT_VALUES) reply_hstr(c, &v);
    }
    hash_iter_reset(&it);
}

static void cmd_hkeys(client *c) {
    hash_getall(c, WANT_FIELDS);
}

static void cmd_hvals(client *c) {
    hash_getall(c, WANT_VALUES);
}

static void cmd_hgetall(client *c) {
    hash_getall(c, WANT_FIELDS | WANT_VALUES);
}

/* ---- counters ---- */

static void cmd_hincrby(client *c) {
    long long incr, cur = 0;
    if (!arg_to_ll(c, &c->argv[3], &incr)) return;
    kobj *o = hash_lookup_create(c, &c->argv[1]);
    if (!o) return;
    const karg *f = &c->argv[2];
    hash_str v;
    if (hash_get(o, f->ptr, f->len, &v) && !str_to_ll(v.s, v.len, &cur)) {
        reply_error(c, "ERR hash value is not an integer");
        return;
    }
    if ((incr < 0 && cur < 0 && incr < LLONG_MIN - cur) ||
        (incr > 0 && cur > 0 && incr > LLONG_MAX - cur)) {
        reply_error(c, "ERR increment or decrement would overflow");
        return;
    }
    char buf[24];
    size_t len = ll_to_str(buf, cur + incr);
    hash_set(o, f->ptr, f->len, buf, len, HASH_SET_KEEPTTL, HASH_NO_EXPIRE);
    hash_written(c, &c->argv[1], o, 1, "hincrby");
    reply_int(c, cur + incr);
}

static void cmd_hincrbyfloat(client *c) {
    long double incr, cur = 0;
    if (!str_to_ld(c->argv[3].ptr, c->argv[3].len, &incr)) {
        reply_error(c, "ERR value is not a valid float");
        return;
    }
    if (isnan(incr) || isinf(incr)) {
        reply_error(c, "ERR value is NaN or Infinity");
        return;
    }
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    const karg *f = &c->argv[2];
    hash_str v;
    if (o && hash_get(o, f->ptr, f->len, &v) && !str_to_ld(v.s, v.len, &cur)) {
        reply_error(c, "ERR hash value is not a float");
        return;
    }
    long double r = cur + incr;
    if (isnan(r) || isinf(r)) {
        reply_error(c, "ERR increment would produce NaN or Infinity");
        return;
    }
    char buf[5500];
    size_t len = ld_to_str(buf, sizeof(buf), r);
    if (!o) o = hash_create(c, &c->argv[1]);
    hash_set(o, f->ptr, f->len, buf, len, HASH_SET_KEEPTTL, HASH_NO_EXPIRE);
    hash_written(c, &c->argv[1], o, 1, "hincrbyfloat");
    reply_bulk(c, buf, len);
}

/* ---- HRANDFIELD ---- */

/* One field (and value), as an element of HRANDFIELD's reply: RESP3 pairs
 * a value with its field in an array of two. */
static void reply_rand_pair(client *c, const hash_str *f, const hash_str *v) {
    if (v && c->resp > 2) reply_array(c, 2);
    reply_hstr(c, f);
    if (v) reply_hstr(c, v);
}

/* count distinct fields of n, each with probability count/n, in one pass
 * (selection sampling: every subset of that size is equally likely). */
static void hrandfield_distinct(client *c, kobj *o, size_t count, int withvalues) {
    size_t n = hash_length(o), need = count < n ? count : n;
    reply_array(c, (long long)(withvalues && c->resp == 2 ? need * 2 : need));
    hash_iter it;
    hash_str f, v;
    hash_iter_init(&it, o);
    for (size_t left = n; need && hash_iter_next(&it, &f, &v); left--) {
        if ((size_t)random() % left >= need) continue;
        reply_rand_pair(c, &f, withvalues ? &v : NULL);
        need--;
    }
    hash_iter_reset(&it);
}

typedef struct rand_reply {
    client *c;
    int withvalues;
} rand_reply;

/* Stops once the client is being dropped (its output buffer limit): the
 * rest of a huge count would only be discarded. */
static int reply_pick(void *priv, const hash_str *f, const hash_str *v) {
    rand_reply *r = priv;
    reply_rand_pair(r->c, f, r->withvalues ? v : NULL);
    return !(r->c->flags & CLIENT_CLOSE_ASAP);
}

static void cmd_hrandfield(client *c) {
    long long count = 0;
    int withvalues = 0;
    if (c->argc >= 3) {
        if (!arg_to_ll(c, &c->argv[2], &count)) return;
        if (count == LLONG_MIN) {
            reply_error(c, "ERR value is out of range, value must between -9223372036854775807 and "
                           "9223372036854775807");
            return;
        }
        if (c->argc > 4 || (c->argc == 4 && !karg_eq(&c->argv[3], "withvalues"))) {
            reply_syntax_error(c);
            return;
        }
        withvalues = c->argc == 4;
        if (withvalues && (count < -LONG_MAX / 2 || count > LONG_MAX / 2)) {
            reply_error(c, "ERR value is out of range");
            return;
        }
    }
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    hash_str f;
    if (c->argc == 2) {
        if (!o) {
            reply_null(c);
            return;
        }
        hash_random(o, &f, NULL);
        reply_hstr(c, &f);
        return;
    }
    if (!o || count == 0) {
        reply_array(c, 0);
        return;
    }
    if (count > 0) {
        hrandfield_distinct(c, o, (size_t)count, withvalues);
        return;
    }
    /* Negative: -count picks, repeats allowed. */
    unsigned long long n = (unsigned long long)-count;
    reply_array(c, (long long)(withvalues && c->resp == 2 ? n * 2 : n));
    rand_reply r = {c, withvalues};
    hash_random_picks(o, (size_t)n, reply_pick, &r);
}

/* ---- HSCAN ---- */

typedef struct hscan_state {
    const karg *pat; /* NULL: every field */
    int novalues;
    long long sampled;
    size_t found;
    sbuf out; /* [size_t len][bytes] per reply element */
} hscan_state;

static void hscan_push(sbuf *b, const char *s, size_t len) {
    sbuf_append(b, (const char *)&len, sizeof(len));
    sbuf_append(b, s, len);
}

static void hscan_cb(void *priv, const hash_str *f, const hash_str *v) {
    hscan_state *s = priv;
    s->sampled++;
    if (s->pat && !glob_match(s->pat->ptr, s->pat->len, f->s, f->len, 0)) return;
    hscan_push(&s->out, f->s, f->len);
    s->found++;
    if (!s->novalues) {
        hscan_push(&s->out, v->s, v->len);
        s->found++;
    }
}

static void cmd_hscan(client *c) {
    unsigned long long cursor;
    if (!arg_to_scan_cursor(c, &c->argv[2], &cursor)) return;
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    if (!o) {
        reply_array(c, 2);
        reply_bulk(c, "0", 1);
        reply_array(c, 0);
        return;
    }
    scan_args a;
    if (!scan_args_parse(c, 3, SCAN_ARGS_NOVALUES, &a)) return;
    hscan_state s = {.pat = a.pat, .novalues = a.novalues};
    long long count = a.count;
    /* As SCAN: until COUNT fields were seen, at most 10*COUNT steps. */
    long long maxiter = count > LLONG_MAX / 10 ? LLONG_MAX : count * 10;
    size_t cur = (size_t)cursor;
    do {
        cur = hash_scan(o, cur, hscan_cb, &s);
    } while (cur && maxiter-- && s.sampled < count);
    char buf[24];
    size_t n = (size_t)snprintf(buf, sizeof(buf), "%zu", cur);
    reply_array(c, 2);
    reply_bulk(c, buf, n);
    reply_array(c, (long long)s.found);
    for (size_t off = 0; off < s.out.len;) {
        size_t len;
        memcpy(&len, s.out.data + off, sizeof(len));
        reply_bulk(c, s.out.data + off + sizeof(len), len);
        off += sizeof(len) + len;
    }
    km_free(s.out.data);
}

/* ---- field expiry ---- */

#define NUMFIELDS_ERR                                                                              \
    "ERR numfields should be greater than 0 and match the provided number of fields"

/* Finds "FIELDS numfields" at or after `from` (options sit between):
 * returns the index of FIELDS and sets *numfields, or 0 if absent. -1
 * after replying to an invalid number. */
static int find_fields(client *c, int from, long long *numfields) {
    for (int i = from; i < c->argc - 1; i++) {
        if (!karg_eq(&c->argv[i], "fields")) continue;
        return arg_to_ll(c, &c->argv[i + 1], numfields) ? i : -1;
    }
    return 0;
}

/* The index of the first field of "key FIELDS numfields field..." (argv[2]
 * FIELDS), checking that numfields fields follow; 0 after replying
 * `mismatch` (or the integer error). */
static int fixed_fields(client *c, const char *mismatch) {
    long long n;
    if (!arg_to_ll(c, &c->argv[3], &n)) return 0;
    if (!karg_eq(&c->argv[2], "fields") || n <= 0 || n != c->argc - 4) {
        reply_error(c, mismatch);
        return 0;
    }
    return 4;
}

/* An expiry argument to absolute unix ms: v seconds or ms (unit_ms),
 * relative to base (0: already absolute). 0 for a negative v or on
 * overflow: unlike EXPIRE's, the field commands' times are never negative
 * (0, or a moment past, removes the fields). */
static int expire_to_abs(long long v, int unit_ms, long long base, int64_t *out) {
    if (v < 0) return 0;
    if (!unit_ms) {
        if (v > LLONG_MAX / 1000) return 0;
        v *= 1000;
    }
    if (base > LLONG_MAX - v) return 0;
    *out = v + base;
    return 1;
}

/* HEXPIRE HPEXPIRE HEXPIREAT HPEXPIREAT: key time [NX|XX|GT|LT] FIELDS n f... */
static void hexpire_generic(client *c, long long base, int unit_ms, const char *name) {
    long long n = 0;
    int fi = find_fields(c, 3, &n);
    if (fi < 0) return;
    int cond = 0;
    for (int i = 3; fi && i < fi; i++) {
        const karg *a = &c->argv[i];
        if (karg_eq(a, "nx"))
            cond |= HASH_EXP_NX;
        else if (karg_eq(a, "xx"))
            cond |= HASH_EXP_XX;
        else if (karg_eq(a, "gt"))
            cond |= HASH_EXP_GT;
        else if (karg_eq(a, "lt"))
            cond |= HASH_EXP_LT;
        else {
            reply_errorf(c, "ERR Unsupported option %.*s", (int)a->len, a->ptr);
            return;
        }
    }
    if ((cond & HASH_EXP_NX) && (cond & ~HASH_EXP_NX)) {
        reply_error(c, "ERR NX and XX, GT or LT options at the same time are not compatible");
        return;
    }
    if ((cond & HASH_EXP_GT) && (cond & HASH_EXP_LT)) {
        reply_error(c, "ERR GT and LT options at the same time are not compatible");
        return;
    }
    if (!fi || n <= 0 || n != c->argc - fi - 2) {
        reply_error(c, NUMFIELDS_ERR);
        return;
    }
    long long v;
    int64_t when;
    if (!arg_to_ll(c, &c->argv[2], &v)) return;
    if (!expire_to_abs(v, unit_ms, base, &when)) {
        reply_errorf(c, "ERR invalid expire time in '%s' command", name);
        return;
    }
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    /* A time already past removes the fields the condition lets through
     * (reply 2), counted as expired as the cron would. */
    if (when <= event_cached_ms()) cond |= HASH_EXP_DELETE;
    long long changed = 0, expired = 0;
    reply_array(c, n);
    for (int i = fi + 2; i < c->argc; i++) {
        const karg *f = &c->argv[i];
        int r = o ? hash_set_expire(o, f->ptr, f->len, when, cond) : -2;
        changed += r > 0;
        expired += r == 2;
        reply_int(c, r);
    }
    hash_note_expired((size_t)expired);
    if (changed) hash_written(c, &c->argv[1], o, changed, expired ? "hexpired" : "hexpire");
}

static void cmd_hexpire(client *c) {
    hexpire_generic(c, event_cached_ms(), 0, "hexpire");
}

static void cmd_hpexpire(client *c) {
    hexpire_generic(c, event_cached_ms(), 1, "hpexpire");
}

static void cmd_hexpireat(client *c) {
    hexpire_generic(c, 0, 0, "hexpireat");
}

static void cmd_hpexpireat(client *c) {
    hexpire_generic(c, 0, 1, "hpexpireat");
}

/* HTTL HPTTL HEXPIRETIME HPEXPIRETIME: key FIELDS n field... */
static void httl_generic(client *c, int relative, int unit_ms) {
    int fi = fixed_fields(c, "ERR syntax error");
    if (!fi) return;
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    int64_t now = event_cached_ms();
    reply_array(c, c->argc - fi);
    for (int i = fi; i < c->argc; i++) {
        int64_t when = o ? hash_get_expire(o, c->argv[i].ptr, c->argv[i].len) : -2;
        if (when == -2 || when == HASH_NO_EXPIRE) {
            reply_int(c, when == -2 ? -2 : -1);
            continue;
        }
        if (relative) when = when > now ? when - now : 0;
        reply_int(c, unit_ms ? when : (when + 500) / 1000);
    }
}

static void cmd_httl(client *c) {
    httl_generic(c, 1, 0);
}

static void cmd_hpttl(client *c) {
    httl_generic(c, 1, 1);
}

static void cmd_hexpiretime(client *c) {
    httl_generic(c, 0, 0);
}

static void cmd_hpexpiretime(client *c) {
    httl_generic(c, 0, 1);
}

static void cmd_hpersist(client *c) {
    int fi = fixed_fields(c, NUMFIELDS_ERR);
    if (!fi) return;
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    long long changed = 0;
    reply_array(c, c->argc - fi);
    for (int i = fi; i < c->argc; i++) {
        int r = o ? hash_persist(o, c->argv[i].ptr, c->argv[i].len) : -2;
        changed += r == 1;
        reply_int(c, r);
    }
    if (changed) hash_written(c, &c->argv[1], o, changed, "hpersist");
}

static void cmd_hgetdel(client *c) {
    int fi = fixed_fields(c, NUMFIELDS_ERR);
    if (!fi) return;
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    long long changed = 0;
    reply_array(c, c->argc - fi);
    for (int i = fi; i < c->argc; i++) {
        reply_field(c, o, &c->argv[i]);
        if (o) changed += hash_delete(o, c->argv[i].ptr, c->argv[i].len);
    }
    if (changed) hash_written(c, &c->argv[1], o, changed, "hdel");
}

/* The SET-style expiry options of HGETEX and HSETEX. */
#define EXP_EX 1
#define EXP_PX 2
#define EXP_EXAT 4
#define EXP_PXAT 8
#define EXP_PERSIST 16 /* HGETEX */
#define EXP_KEEPTTL 32 /* HSETEX */
#define EXP_NX 64      /* HSETEX: the key must not exist */
#define EXP_XX 128     /* HSETEX: the key must exist */
#define EXP_FNX 256    /* HSETEX: no field may exist */
#define EXP_FXX 512    /* HSETEX: every field must exist */

typedef struct exp_opts {
    int flags;
    const karg *time; /* the EX/PX/EXAT/PXAT argument */
} exp_opts;

/* Parses argv[2..fi) against the options `allowed`; at most one expiry
 * option, one of NX/XX and one of FNX/FXX. */
static int exp_parse(client *c, int fi, int allowed, exp_opts *o) {
    static const struct {
        const char *name;
        int flag;
    } names[] = {{"ex", EXP_EX},     {"px", EXP_PX},           {"exat", EXP_EXAT},
                 {"pxat", EXP_PXAT}, {"persist", EXP_PERSIST}, {"keepttl", EXP_KEEPTTL},
                 {"nx", EXP_NX},     {"xx", EXP_XX},           {"fnx", EXP_FNX},
                 {"fxx", EXP_FXX}};
    const int timed = EXP_EX | EXP_PX | EXP_EXAT | EXP_PXAT;
    const int groups[] = {timed | EXP_PERSIST | EXP_KEEPTTL, EXP_NX | EXP_XX, EXP_FNX | EXP_FXX};
    o->flags = 0;
    o->time = NULL;
    for (int i = 2; i < fi; i++) {
        int flag = 0;
        for (size_t k = 0; k < K_ARRAY_LEN(names) && !flag; k++)
            if (karg_eq(&c->argv[i], names[k].name)) flag = names[k].flag;
        int clash = 0;
        for (size_t g = 0; g < K_ARRAY_LEN(groups); g++)
            if ((groups[g] & flag) && (o->flags & groups[g])) clash = 1;
        if (!(flag & allowed) || clash || ((flag & timed) && i + 1 >= fi)) {
            reply_syntax_error(c);
            return 0;
        }
        o->flags |= flag;
        if (flag & timed) o->time = &c->argv[++i];
    }
    return 1;
}

/* The absolute expiry of an EX/PX/EXAT/PXAT option (0 or more; a time
 * past removes the fields). */
static int exp_when(client *c, const exp_opts *o, const char *name, int64_t *when) {
    long long v;
    if (!arg_to_ll(c, o->time, &v)) return 0;
    int unit_ms = (o->flags & (EXP_PX | EXP_PXAT)) != 0;
    long long base = (o->flags & (EXP_EX | EXP_PX)) ? event_cached_ms() : 0;
    if (!expire_to_abs(v, unit_ms, base, when)) {
        reply_errorf(c, "ERR invalid expire time in '%s' command", name);
        return 0;
    }
    return 1;
}

/* HGETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST] FIELDS n field... */
static void cmd_hgetex(client *c) {
    long long n = 0;
    int fi = find_fields(c, 2, &n);
    if (fi < 0) return;
    exp_opts eo = {0};
    if (fi && !exp_parse(c, fi, EXP_EX | EXP_PX | EXP_EXAT | EXP_PXAT | EXP_PERSIST, &eo)) return;
    if (!fi || n <= 0 || n != c->argc - fi - 2) {
        reply_error(c, NUMFIELDS_ERR);
        return;
    }
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    int64_t when = HASH_NO_EXPIRE;
    if (eo.time && !exp_when(c, &eo, "hgetex", &when)) return;
    int past = eo.time && when <= event_cached_ms();
    long long changed = 0;
    reply_array(c, n);
    for (int i = fi + 2; i < c->argc; i++) {
        const karg *f = &c->argv[i];
        reply_field(c, o, f);
        if (!o) continue;
        if (past) {
            int gone = hash_delete(o, f->ptr, f->len);
            hash_note_expired((size_t)gone);
            changed += gone;
        } else if (eo.time)
            changed += hash_set_expire(o, f->ptr, f->len, when, 0) == 1;
        else if (eo.flags & EXP_PERSIST)
            changed += hash_persist(o, f->ptr, f->len) == 1;
    }
    const char *event = past ? "hexpired" : eo.time ? "hexpire" : "hpersist";
    if (changed) hash_written(c, &c->argv[1], o, changed, event);
}

/* HSETEX key [NX|XX] [FNX|FXX] [EX|PX|EXAT|PXAT|KEEPTTL] FIELDS n f v... */
static void cmd_hsetex(client *c) {
    long long n = 0;
    int fi = find_fields(c, 2, &n);
    if (fi < 0) return;
    exp_opts eo = {0};
    int allowed =
        EXP_EX | EXP_PX | EXP_EXAT | EXP_PXAT | EXP_KEEPTTL | EXP_NX | EXP_XX | EXP_FNX | EXP_FXX;
    if (fi && !exp_parse(c, fi, allowed, &eo)) return;
    if (!fi || n <= 0 || n > LLONG_MAX / 2 || n * 2 != c->argc - fi - 2) {
        reply_error(c, NUMFIELDS_ERR);
        return;
    }
    kobj *o;
    if (hash_lookup(c, &c->argv[1], &o) < 0) return;
    if (((eo.flags & EXP_NX) && o) || ((eo.flags & EXP_XX) && !o)) {
        reply_int(c, 0);
        return;
    }
    int64_t when = HASH_NO_EXPIRE;
    if (eo.time && !exp_when(c, &eo, "hsetex", &when)) return;
    int first = fi + 2;
    for (int i = first; (eo.flags & (EXP_FNX | EXP_FXX)) && i < c->argc; i += 2) {
        int exists = o && hash_exists(o, c->argv[i].ptr, c->argv[i].len);
        if ((eo.flags & EXP_FNX) ? exists : !exists) {
            reply_int(c, 0);
            return;
        }
    }
    if (eo.time && when <= event_cached_ms()) {
        /* Already past: the fields go, as HDEL would; Valkey counts every
         * field named as expired, present or not, and replies 1. */
        long long deleted = 0;
        for (int i = first; o && i < c->argc; i += 2)
            deleted += hash_delete(o, c->argv[i].ptr, c->argv[i].len);
        hash_note_expired((size_t)n);
        if (deleted) hash_written(c, &c->argv[1], o, deleted, "hexpired");
        reply_int(c, 1);
        return;
    }
    if (!o) o = hash_create(c, &c->argv[1]);
    int keep = eo.flags & EXP_KEEPTTL ? HASH_SET_KEEPTTL : 0;
    for (int i = first; i < c->argc; i += 2) {
        const karg *f = &c->argv[i], *v = &c->argv[i + 1];
        hash_set(o, f->ptr, f->len, v->ptr, v->len, keep, when);
    }
    hash_written(c, &c->argv[1], o, n, "hset");
    if (eo.time) notify_key(c, NOTIFY_HASH, "hexpire", &c->argv[1]);
    reply_int(c, 1);
}

/* clang-format off */
#define HASH_CMD(n, p, a, f, s, v) \
    {.name = n, .proc = p, .arity = a, .flags = f, .first_key = 1, .last_key = 1, \
     .key_step = 1, .group = "hash", .summary = s, .since = v}

static command hash_table_cmds[] = {
    HASH_CMD("hset", cmd_hset, -4, CMD_WRITE | CMD_DENYOOM | CMD_FAST, "Creates or modifies the value of a field in a hash.", "2.0.0"),
    HASH_CMD("hsetnx", cmd_hsetnx, 4, CMD_WRITE | CMD_DENYOOM | CMD_FAST, "Sets the value of a field in a hash only when the field doesn't exist.", "2.0.0"),
    HASH_CMD("hmset", cmd_hset, -4, CMD_WRITE | CMD_DENYOOM | CMD_FAST, "Sets the values of multiple fields.", "2.0.0"),
    HASH_CMD("hget", cmd_hget, 3, CMD_READONLY | CMD_FAST, "Returns the value of a field in a hash.", "2.0.0"),
    HASH_CMD("hmget", cmd_hmget, -3, CMD_READONLY | CMD_FAST, "Returns the values of all fields in a hash.", "2.0.0"),
    HASH_CMD("hdel", cmd_hdel, -3, CMD_WRITE | CMD_FAST, "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", "2.0.0"),
    HASH_CMD("hlen", cmd_hlen, 2, CMD_READONLY | CMD_FAST, "Returns the number of fields in a hash.", "2.0.0"),
    HASH_CMD("hstrlen", cmd_hstrlen, 3, CMD_READONLY | CMD_FAST, "Returns the length of the value of a field.", "3.2.0"),
    HASH_CMD("hexists", cmd_hexists, 3, CMD_READONLY | CMD_FAST, "Determines whether a field exists in a hash.", "2.0.0"),
    HASH_CMD("hkeys", cmd_hkeys, 2, CMD_READONLY, "Returns all fields in a hash.", "2.0.0"),
    HASH_CMD("hvals", cmd_hvals, 2, CMD_READONLY, "Returns all values in a hash.", "2.0.0"),
    HASH_CMD("hgetall", cmd_hgetall, 2, CMD_READONLY, "Returns all fields and values in a hash.", "2.0.0"),
    HASH_CMD("hincrby", cmd_hincrby, 4, CMD_WRITE | CMD_DENYOOM | CMD_FAST, "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", "2.0.0"),
    HASH_CMD("hincrbyfloat", cmd_hincrbyfloat, 4, CMD_WRITE | CMD_DENYOOM | CMD_FAST, "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", "2.6.0"),
    HASH_CMD("hrandfield", cmd_hrandfield, -2, CMD_READONLY, "Returns one or more random fields from a hash.", "6.2.0"),
    HASH_CMD("hscan", cmd_hscan, -3, CMD_READONLY, "Iterates over fields and values of a hash.", "2.8.0"),
    HASH_CMD("hexpire", cmd_hexpire, -6, CMD_WRITE | CMD_FAST, "Sets the expiration time of hash fields in seconds.", "9.0.0"),
    HASH_CMD("hpexpire", cmd_hpexpire, -6, CMD_WRITE | CMD_FAST, "Sets the expiration time of hash fields in milliseconds.", "9.0.0"),
    HASH_CMD("hexpireat", cmd_hexpireat, -6, CMD_WRITE | CMD_FAST, "Sets the expiration time of hash fields to a Unix timestamp.", "9.0.0"),
    HASH_CMD("hpexpireat", cmd_hpexpireat, -6, CMD_WRITE | CMD_FAST, "Sets the expiration time of hash fields to a Unix milliseconds timestamp.", "9.0.0"),
    HASH_CMD("httl", cmd_httl, -5, CMD_READONLY | CMD_FAST, "Returns the remaining time to live of hash fields in seconds.", "9.0.0"),
    HASH_CMD("hpttl", cmd_hpttl, -5, CMD_READONLY | CMD_FAST, "Returns the remaining time to live of hash fields in milliseconds.", "9.0.0"),
    HASH_CMD("hexpiretime", cmd_hexpiretime, -5, CMD_READONLY | CMD_FAST, "Returns the expiration time of hash fields as a Unix timestamp.", "9.0.0"),
    HASH_CMD("hpexpiretime", cmd_hpexpiretime, -5, CMD_READONLY | CMD_FAST, "Returns the expiration time of hash fields as a Unix milliseconds timestamp.", "9.0.0"),
    HASH_CMD("hpersist", cmd_hpersist, -5, CMD_WRITE | CMD_FAST, "Removes the expiration time of hash fields.", "9.0.0"),
    HASH_CMD("hgetex", cmd_hgetex, -5, CMD_WRITE | CMD_FAST, "Returns the values of hash fields and optionally sets or removes their expiration.", "9.0.0"),
    HASH_CMD("hsetex", cmd_hsetex, -6, CMD_WRITE | CMD_DENYOOM | CMD_FAST, "Sets the values of hash fields and optionally their expiration.", "9.0.0"),
    HASH_CMD("hgetdel", cmd_hgetdel, -5, CMD_WRITE | CMD_FAST, "Returns the values of hash fields and deletes them.", "9.0.0"),
};
/* clang-format on */

const command_family commands_hash = {hash_table_cmds, K_ARRAY_LEN(hash_table_cmds)};
