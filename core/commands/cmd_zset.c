/* cmd_zset.c -- the sorted set command family: ZADD and the updates, the
 * range reads and deletions by rank, score and lex, the set operations
 * (ZUNION/ZINTER/ZDIFF, their STORE forms and ZINTERCARD), pops (and
 * their blocking forms), random members and ZSCAN, as Valkey 8.0.1
 * answers them in RESP2 and RESP3.
 *
 * The key lookup is shared with the geo commands (cmd_zset.h). Values
 * are read and changed through types/zset.h only (plain sets,
 * valid inputs of the set operations, through types/set.h). A sorted set
 * that becomes empty is deleted, as in Valkey. */
#include "commands/cmd_zset.h"
#include "commands/commands.h"
#include "common/common.h"
#include "common/kmem.h"
#include "common/vec.h"
#include "ds/glob.h"
#include "session/blocking.h"
#include "session/reply.h"
#include "types/set.h"
#include "types/zset.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lookups and replies ---- */

int zset_cmd_lookup(client *c, const karg *key, int count, kobj **o) {
    db_entry *e = db_lookup(c->db, key->ptr, key->len, count);
    if (!e) return 0;
    if (db_entry_type(e) != OBJ_ZSET) {
        reply_wrongtype(c);
        return -1;
    }
    *o = db_entry_obj(e);
    return 1;
}

/* After an in-place removal of `changes` members by `event` (zrem,
 * zpopmin...): the key goes when the set is empty, announced with the
 * event and then `del`. */
static void zset_changed(client *c, const karg *key, kobj *o, long long changes,
                         const char *event) {
    collection_changed(c, key, zset_len(o) == 0, changes, NOTIFY_ZSET, event);
}

/* One member of a reply: WITHSCORES adds its score, as a [member, score]
 * pair in RESP3 (pairs), flat in RESP2. */
typedef struct emit_ctx {
    client *c;
    int withscores;
    int pairs; /* RESP3 nested pairs */
    kobj *dst; /* a store command's result instead of a reply */
} emit_ctx;

static void emit_ctx_init(emit_ctx *x, client *c, int withscores) {
    x->c = c;
    x->withscores = withscores;
    x->pairs = withscores && c->resp >= 3;
    x->dst = NULL;
}

static void emit_elem(void *priv, const zset_elem *e) {
    emit_ctx *x = priv;
    if (x->dst) {
        int out;
        zset_add(x->dst, e->score, e->m, e->len, 0, &out, NULL);
        return;
    }
    if (x->pairs) reply_array(x->c, 2);
    reply_bulk(x->c, e->m, e->len);
    if (x->withscores) reply_double(x->c, e->score);
}

/* The array length of n members under x's shape. */
static long long emit_len(const emit_ctx *x, size_t n) {
    return (long long)(x->withscores && !x->pairs ? 2 * n : n);
}

/* Parses a score argument; replies Valkey's error when invalid. */
static int arg_to_score(client *c, const karg *a, const char *msg, double *out) {
    if (str_to_double(a->ptr, a->len, out)) return 1;
    reply_error(c, msg ? msg : "ERR value is not a valid float");
    return 0;
}

static void reply_zero(client *c) {
    reply_int(c, 0);
}

/* Clamps Valkey's rank arguments (negative from the end) to 0..len-1;
 * 0 when the range is empty. */
static int clamp_ranks(long long start, long long end, size_t len, size_t *s, size_t *e) {
    long long n = (long long)len;
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (start < 0) start = 0;
    if (start > end || start >= n) return 0;
    if (end >= n) end = n - 1;
    *s = (size_t)start;
    *e = (size_t)end;
    return 1;
}

/* ---- ZADD, ZINCRBY, ZREM ---- */

static void zadd_generic(client *c, int flags) {
    int idx = 2, ch = 0;
    for (; idx < c->argc; idx++) {
        const karg *a = &c->argv[idx];
        if (karg_eq(a, "nx"))
            flags |= ZSET_IN_NX;
        else if (karg_eq(a, "xx"))
            flags |= ZSET_IN_XX;
        else if (karg_eq(a, "ch"))
            ch = 1;
        else if (karg_eq(a, "incr"))
            flags |= ZSET_IN_INCR;
        else if (karg_eq(a, "gt"))
            flags |= ZSET_IN_GT;
        else if (karg_eq(a, "lt"))
            flags |= ZSET_IN_LT;
        else
            break;
    }
    int incr = (flags & ZSET_IN_INCR) != 0, nx = (flags & ZSET_IN_NX) != 0;
    int gt = (flags & ZSET_IN_GT) != 0, lt = (flags & ZSET_IN_LT) != 0;
    int rest = c->argc - idx;
    if (rest == 0 || rest % 2) {
        reply_syntax_error(c);
        return;
    }
    size_t pairs = (size_t)rest / 2;
    if (nx && (flags & ZSET_IN_XX)) {
        reply_error(c, "ERR XX and NX options at the same time are not compatible");
        return;
    }
    if ((gt && nx) || (lt && nx) || (gt && lt)) {
        reply_error(c, "ERR GT, LT, and/or NX options at the same time are not compatible");
        return;
    }
    if (incr && pairs > 1) {
        reply_error(c, "ERR INCR option supports a single increment-element pair");
        return;
    }
    /* Every score is checked before anything changes: all or nothing. */
    double *scores = km_alloc(pairs * sizeof(double));
    size_t maxlen = 0;
    for (size_t j = 0; j < pairs; j++) {
        if (!arg_to_score(c, &c->argv[idx + 2 * j], NULL, &scores[j])) goto done;
        if (c->argv[idx + 2 * j + 1].len > maxlen) maxlen = c->argv[idx + 2 * j + 1].len;
    }
    const karg *key = &c->argv[1];
    kobj *o = NULL;
    int found = zset_cmd_lookup(c, key, 0, &o);
    if (found < 0) goto done;
    long long added = 0, updated = 0, processed = 0;
    double score = 0;
    if (!found && (flags & ZSET_IN_XX)) goto reply;
    if (found)
        zset_maybe_convert(o, pairs, maxlen);
    else
        o = zset_create(pairs, maxlen);
    for (size_t j = 0; j < pairs; j++) {
        const karg *m = &c->argv[idx + 2 * j + 1];
        int out;
        double newscore = scores[j];
        if (!zset_add(o, scores[j], m->ptr, m->len, flags, &out, &newscore)) {
            reply_error(c, "ERR resulting score is not a number (NaN)");
            if (!found) {
                obj_decref(o);
            } else if (added || updated) {
                db_signal_modified(c->db, key->ptr, key->len, added + updated);
                notify_key(c, NOTIFY_ZSET, incr ? "zincr" : "zadd", key);
            }
            goto done;
        }
        if (out & ZSET_OUT_ADDED) added++;
        if (out & ZSET_OUT_UPDATED) updated++;
        if (!(out & ZSET_OUT_NOP)) processed++;
        score = newscore;
    }
    if (!found)
        db_add(c->db, key->ptr, key->len, o, added + updated);
    else if (added || updated)
        db_signal_modified(c->db, key->ptr, key->len, added + updated);
    if (added || updated) notify_key(c, NOTIFY_ZSET, incr ? "zincr" : "zadd", key);
reply:
    if (!incr)
        reply_int(c, ch ? added + updated : added);
    else if (processed)
        reply_double(c, score);
    else
        reply_null(c);
done:
    km_free(scores);
}

static void cmd_zadd(client *c) {
    zadd_generic(c, 0);
}

static void cmd_zincrby(client *c) {
    zadd_generic(c, ZSET_IN_INCR);
}

static void cmd_zrem(client *c) {
    kobj *o;
    int found = zset_cmd_lookup(c, &c->argv[1], 0, &o);
    if (found <= 0) {
        if (found == 0) reply_zero(c);
        return;
    }
    long long deleted = 0;
    for (int j = 2; j < c->argc && zset_len(o); j++)
        deleted += zset_del(o, c->argv[j].ptr, c->argv[j].len);
    if (deleted) zset_changed(c, &c->argv[1], o, deleted, "zrem");
    reply_int(c, deleted);
}

/* ---- range arguments ---- */

typedef enum { ZR_AUTO, ZR_RANK, ZR_SCORE, ZR_LEX } zrange_kind;

/* A parsed range of one of the three kinds. */
typedef struct zrange_args {
    zrange_kind kind;
    long long start, end; /* ZR_RANK */
    zset_score_range score;
    zset_lex_range lex;
} zrange_args;

static int parse_range(client *c, zrange_kind kind, const karg *min, const karg *max,
                       zrange_args *r) {
    r->kind = kind;
    switch (kind) {
    case ZR_SCORE:
        if (zset_parse_score_range(min->ptr, min->len, max->ptr, max->len, &r->score)) return 1;
        reply_error(c, "ERR min or max is not a float");
        return 0;
    case ZR_LEX:
        if (zset_parse_lex_range(min->ptr, min->len, max->ptr, max->len, &r->lex)) return 1;
        reply_error(c, "ERR min or max not valid string range item");
        return 0;
    default:
        return arg_to_ll(c, min, &r->start) && arg_to_ll(c, max, &r->end);
    }
}

/* ---- ZREMRANGEBYRANK / BYSCORE / BYLEX ---- */

static void zremrange_generic(client *c, zrange_kind kind) {
    zrange_args r;
    if (!parse_range(c, kind, &c->argv[2], &c->argv[3], &r)) return;
    kobj *o;
    int found = zset_cmd_lookup(c, &c->argv[1], 0, &o);
    if (found <= 0) {
        if (found == 0) reply_zero(c);
        return;
    }
    size_t deleted = 0, s, e;
    if (kind == ZR_RANK) {
        if (clamp_ranks(r.start, r.end, zset_len(o), &s, &e)) deleted = zset_delete_rank(o, s, e);
    } else if (kind == ZR_SCORE) {
        deleted = zset_delete_score(o, &r.score);
    } else {
        deleted = zset_delete_lex(o, &r.lex);
    }
    static const char *const events[] = {[ZR_RANK] = "zremrangebyrank",
                                         [ZR_SCORE] = "zremrangebyscore",
                                         [ZR_LEX] = "zremrangebylex"};
    if (deleted) zset_changed(c, &c->argv[1], o, (long long)deleted, events[kind]);
    reply_int(c, (long long)deleted);
}

static void cmd_zremrangebyrank(client *c) {
    zremrange_generic(c, ZR_RANK);
}

static void cmd_zremrangebyscore(client *c) {
    zremrange_generic(c, ZR_SCORE);
}

static void cmd_zremrangebylex(client *c) {
    zremrange_generic(c, ZR_LEX);
}

/* ---- ZRANGE and its older forms, ZRANGESTORE ---- */

/* Walks r over o into x; returns how many members went out. With a
 * known count (ranks) the reply's array is written first, otherwise it
 * is deferred. */
static size_t range_walk(client *c, const kobj *o, const zrange_args *r, int rev, long long offset,
                         long long limit, emit_ctx *x) {
    if (r->kind == ZR_RANK) {
        size_t s = 0, e = 0;
        int any = clamp_ranks(r->start, r->end, zset_len(o), &s, &e);
        size_t n = any ? e - s + 1 : 0;
        if (!x->dst) reply_array(c, emit_len(x, n));
        if (n) zset_range_rank(o, s, e, rev, emit_elem, x);
        return n;
    }
    reply_deferred h = x->dst ? REPLY_DEFERRED_NONE : reply_deferred_array(c);
    size_t n = r->kind == ZR_SCORE
                   ? zset_range_score(o, &r->score, rev, offset, limit, emit_elem, x)
                   : zset_range_lex(o, &r->lex, rev, offset, limit, emit_elem, x);
    if (!x->dst) reply_set_deferred_len(c, h, emit_len(x, n));
    return n;
}

/* Stores a computed result at dst announced as `event` (or deletes dst
 * when it is empty, announced as `del` if it was there) and replies its
 * size. */
static void store_result(client *c, const karg *dst, kobj *o, const char *event) {
    size_t n = zset_len(o);
    if (n) {
        db_set(c->db, dst->ptr, dst->len, o, 0);
        notify_key(c, NOTIFY_ZSET, event, dst);
    } else {
        obj_decref(o);
        if (db_delete(c->db, dst->ptr, dst->len)) notify_key(c, NOTIFY_GENERIC, "del", dst);
    }
    reply_int(c, (long long)n);
}

/* ZRANGE's grammar (Valkey's zrangeGenericCommand): `src` is the index of
 * the source key; kind and direction (rev: 1 reversed, 0 forward, -1 as
 * REV says) are fixed by the older command names. */
static void zrange_generic(client *c, int src, const karg *dst, zrange_kind kind, int rev) {
    int withscores = 0, dir_fixed = rev >= 0;
    if (rev < 0) rev = 0;
    long long offset = 0, limit = -1;
    for (int j = src + 3; j < c->argc; j++) {
        const karg *a = &c->argv[j];
        int left = c->argc - j - 1;
        if (!dst && karg_eq(a, "withscores")) {
            withscores = 1;
        } else if (karg_eq(a, "limit") && left >= 2) {
            if (!arg_to_ll(c, &c->argv[j + 1], &offset) || !arg_to_ll(c, &c->argv[j + 2], &limit))
                return;
            j += 2;
        } else if (!dir_fixed && karg_eq(a, "rev")) {
            rev = dir_fixed = 1;
        } else if (kind == ZR_AUTO && karg_eq(a, "bylex")) {
            kind = ZR_LEX;
        } else if (kind == ZR_AUTO && karg_eq(a, "byscore")) {
            kind = ZR_SCORE;
        } else {
            reply_syntax_error(c);
            return;
        }
    }
    if (kind == ZR_AUTO) kind = ZR_RANK;
    if (limit != -1 && kind == ZR_RANK) {
        reply_error(c, "ERR syntax error, LIMIT is only supported in combination with either "
                       "BYSCORE or BYLEX");
        return;
    }
    if (withscores && kind == ZR_LEX) {
        reply_error(c, "ERR syntax error, WITHSCORES not supported in combination with BYLEX");
        return;
    }
    /* Reversed score and lex ranges are given as max, min. */
    const karg *min = &c->argv[src + 1], *max = &c->argv[src + 2];
    if (rev && kind != ZR_RANK) {
        const karg *t = min;
        min = max;
        max = t;
    }
    zrange_args r;
    if (!parse_range(c, kind, min, max, &r)) return;
    kobj *o = NULL;
    int found = zset_cmd_lookup(c, &c->argv[src], 1, &o);
    if (found < 0) return;
    emit_ctx x;
    emit_ctx_init(&x, c, withscores);
    if (dst) {
        size_t hint = 0, s, e;
        if (found && kind == ZR_RANK && clamp_ranks(r.start, r.end, zset_len(o), &s, &e))
            hint = e - s + 1;
        x.dst = zset_create(hint, 0);
        if (found) range_walk(c, o, &r, rev, offset, limit, &x);
        store_result(c, dst, x.dst, "zrangestore");
        return;
    }
    if (!found) {
        reply_array(c, 0);
        return;
    }
    range_walk(c, o, &r, rev, offset, limit, &x);
}

static void cmd_zrange(client *c) {
    zrange_generic(c, 1, NULL, ZR_AUTO, -1);
}

static void cmd_zrangestore(client *c) {
    zrange_generic(c, 2, &c->argv[1], ZR_AUTO, -1);
}

static void cmd_zrevrange(client *c) {
    zrange_generic(c, 1, NULL, ZR_RANK, 1);
}

static void cmd_zrangebyscore(client *c) {
    zrange_generic(c, 1, NULL, ZR_SCORE, 0);
}

static void cmd_zrevrangebyscore(client *c) {
    zrange_generic(c, 1, NULL, ZR_SCORE, 1);
}

static void cmd_zrangebylex(client *c) {
    zrange_generic(c, 1, NULL, ZR_LEX, 0);
}

static void cmd_zrevrangebylex(client *c) {
    zrange_generic(c, 1, NULL, ZR_LEX, 1);
}

/* ---- ZCOUNT, ZLEXCOUNT, ZCARD, ZSCORE, ZMSCORE, ZRANK ---- */

static void zcount_generic(client *c, zrange_kind kind) {
    zrange_args r;
    if (!parse_range(c, kind, &c->argv[2], &c->argv[3], &r)) return;
    kobj *o;
    int found = zset_cmd_lookup(c, &c->argv[1], 1, &o);
    if (found <= 0) {
        if (found == 0) reply_zero(c);
        return;
    }
    size_t n = kind == ZR_SCORE ? zset_count_score(o, &r.score) : zset_count_lex(o, &r.lex);
    reply_int(c, (long long)n);
}

static void cmd_zcount(client *c) {
    zcount_generic(c, ZR_SCORE);
}

static void cmd_zlexcount(client *c) {
    zcount_generic(c, ZR_LEX);
}

static void cmd_zcard(client *c) {
    kobj *o;
    int found = zset_cmd_lookup(c, &c->argv[1], 1, &o);
    if (found >= 0) reply_int(c, found ? (long long)zset_len(o) : 0);
}

static void cmd_zscore(client *c) {
    kobj *o;
    double score;
    int found = zset_cmd_lookup(c, &c->argv[1], 1, &o);
    if (found < 0) return;
    if (found && zset_score(o, c->argv[2].ptr, c->argv[2].len, &score))
        reply_double(c, score);
    else
        reply_null(c);
}

static void cmd_zmscore(client *c) {
    kobj *o = NULL;
    double score;
    int found = zset_cmd_lookup(c, &c->argv[1], 1, &o);
    if (found < 0) return;
    reply_array(c, c->argc - 2);
    for (int j = 2; j < c->argc; j++) {
        if (found && zset_score(o, c->argv[j].ptr, c->argv[j].len, &score))
            reply_double(c, score);
        else
            reply_null(c);
    }
}

static void zrank_generic(client *c, int rev) {
    if (c->argc > 4) {
        reply_wrong_arity(c);
        return;
    }
    int withscore = c->argc == 4;
    if (withscore && !karg_eq(&c->argv[3], "withscore")) {
        reply_syntax_error(c);
        return;
    }
    kobj *o;
    double score;
    int found = zset_cmd_lookup(c, &c->argv[1], 1, &o);
    if (found < 0) return;
    long long rank = found ? zset_rank(o, c->argv[2].ptr, c->argv[2].len, rev, &score) : -1;
    if (rank < 0) {
        if (withscore)
            reply_null_array(c);
        else
            reply_null(c);
        return;
    }
    if (withscore) {
        reply_array(c, 2);
        reply_int(c, rank);
        reply_double(c, score);
    } else {
        reply_int(c, rank);
    }
}

static void cmd_zrank(client *c) {
    zrank_generic(c, 0);
}

static void cmd_zrevrank(client *c) {
    zrank_generic(c, 1);
}

/* ---- ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD ---- */

typedef enum { ZOP_UNION, ZOP_INTER, ZOP_DIFF } zset_op;
typedef enum { AGG_SUM, AGG_MIN, AGG_MAX } zset_agg;

/* One input: a sorted set, a plain set (its members scoring 1, as in
 * Valkey), or NULL for a missing key (an empty input). */
typedef struct zsrc {
    const kobj *o;
    int is_set;
    double weight;
} zsrc;

static size_t zsrc_len(const zsrc *s) {
    if (!s->o) return 0;
    return s->is_set ? set_size(s->o) : zset_len(s->o);
}

static int zsrc_score(const zsrc *s, const char *m, size_t len, double *score) {
    if (!s->o) return 0;
    if (!s->is_set) return zset_score(s->o, m, len, score);
    *score = 1.0;
    return set_contains(s->o, m, len);
}

static void zsrc_walk(const zsrc *s, zset_elem_fn fn, void *priv) {
    size_t n = zsrc_len(s);
    if (!n) return;
    if (!s->is_set) {
        zset_range_rank(s->o, 0, n - 1, 0, fn, priv);
        return;
    }
    set_iter it;
    set_member m;
    zset_elem e = {.score = 1.0};
    set_iter_init(&it, s->o);
    while (set_iter_next(&it, &m)) {
        e.m = set_member_str(&m, e.buf, &e.len);
        fn(priv, &e);
    }
    set_iter_reset(&it);
}

/* The input at key: 1 and *src set, 0 after replying WRONGTYPE. */
static int zsrc_lookup(client *c, const karg *key, zsrc *src) {
    db_entry *e = db_lookup(c->db, key->ptr, key->len, 1);
    src->o = NULL;
    src->is_set = 0;
    src->weight = 1.0;
    if (!e) return 1;
    int type = db_entry_type(e);
    if (type != OBJ_ZSET && type != OBJ_SET) {
        reply_wrongtype(c);
        return 0;
    }
    src->o = db_entry_obj(e);
    src->is_set = type == OBJ_SET;
    return 1;
}

static int zsrc_cmp_len(const void *a, const void *b) {
    size_t la = zsrc_len(a), lb = zsrc_len(b);
    return la < lb ? -1 : (la > lb ? 1 : 0);
}

static void aggregate(double *target, double v, zset_agg agg) {
    if (agg == AGG_SUM) {
        *target += v;
        if (isnan(*target)) *target = 0; /* inf + -inf */
    } else if (agg == AGG_MIN) {
        if (v < *target) *target = v;
    } else if (v > *target) {
        *target = v;
    }
}

/* The state of one set operation while it walks its inputs. */
typedef struct zop_ctx {
    zsrc *src;
    int n;
    zset_agg agg;
    kobj *acc;          /* the result (NULL for ZINTERCARD) */
    size_t card, limit; /* ZINTERCARD: the count so far, 0: no limit */
    int i;              /* the input being walked (union) */
} zop_ctx;

static double weighted(double score, double weight) {
    double v = score * weight;
    return isnan(v) ? 0 : v; /* 0 * inf */
}

static void union_elem(void *priv, const zset_elem *e) {
    zop_ctx *z = priv;
    double v = weighted(e->score, z->src[z->i].weight), cur;
    int out;
    if (zset_score(z->acc, e->m, e->len, &cur)) {
        aggregate(&cur, v, z->agg);
        v = cur;
    }
    zset_add(z->acc, v, e->m, e->len, 0, &out, NULL);
}

static void inter_elem(void *priv, const zset_elem *e) {
    zop_ctx *z = priv;
    if (z->limit && z->card >= z->limit) return;
    double score = weighted(e->score, z->src[0].weight), v;
    for (int j = 1; j < z->n; j++) {
        if (!zsrc_score(&z->src[j], e->m, e->len, &v)) return;
        aggregate(&score, v * z->src[j].weight, z->agg);
    }
    z->card++;
    int out;
    if (z->acc) zset_add(z->acc, score, e->m, e->len, 0, &out, NULL);
}

static void diff_elem(void *priv, const zset_elem *e) {
    zop_ctx *z = priv;
    double v;
    for (int j = 1; j < z->n; j++)
        if (zsrc_score(&z->src[j], e->m, e->len, &v)) return;
    int out;
    zset_add(z->acc, e->score, e->m, e->len, 0, &out, NULL);
}

static void walk_all(const kobj *o, zset_elem_fn fn, void *priv) {
    size_t n = zset_len(o);
    if (n) zset_range_rank(o, 0, n - 1, 0, fn, priv);
}

static void zop_run(zop_ctx *z, zset_op op) {
    if (op == ZOP_UNION) {
        for (z->i = 0; z->i < z->n; z->i++)
            zsrc_walk(&z->src[z->i], union_elem, z);
    } else if (op == ZOP_INTER) {
        /* Sorted by size: the smallest input is walked (an empty one: none). */
        zsrc_walk(&z->src[0], inter_elem, z);
    } else {
        zsrc_walk(&z->src[0], diff_elem, z);
    }
}

/* Parses the options after the keys; 0 after replying an error. */
static int zop_parse_options(client *c, int j, zop_ctx *z, zset_op op, int store, int card,
                             int *withscores) {
    while (j < c->argc) {
        int left = c->argc - j;
        const karg *a = &c->argv[j];
        if (op != ZOP_DIFF && !card && left >= z->n + 1 && karg_eq(a, "weights")) {
            for (int i = 0; i < z->n; i++)
                if (!arg_to_score(c, &c->argv[j + 1 + i], "ERR weight value is not a float",
                                  &z->src[i].weight))
                    return 0;
            j += z->n + 1;
        } else if (op != ZOP_DIFF && !card && left >= 2 && karg_eq(a, "aggregate")) {
            const karg *v = &c->argv[j + 1];
            if (karg_eq(v, "sum"))
                z->agg = AGG_SUM;
            else if (karg_eq(v, "min"))
                z->agg = AGG_MIN;
            else if (karg_eq(v, "max"))
                z->agg = AGG_MAX;
            else {
                reply_syntax_error(c);
                return 0;
            }
            j += 2;
        } else if (!store && !card && karg_eq(a, "withscores")) {
            *withscores = 1;
            j++;
        } else if (card && left >= 2 && karg_eq(a, "limit")) {
            long long l;
            if (!arg_to_range(c, &c->argv[j + 1], 0, LLONG_MAX, "ERR LIMIT can't be negative", &l))
                return 0;
            z->limit = (size_t)l;
            j += 2;
        } else {
            reply_syntax_error(c);
            return 0;
        }
    }
    return 1;
}

/* Valkey's zunionInterDiffGenericCommand: numkeys at argument `nk`, the
 * result stored at dst when given, or only counted with `card`. */
static void zop_generic(client *c, const karg *dst, int nk, zset_op op, int card) {
    long long n;
    if (!arg_to_ll(c, &c->argv[nk], &n)) return;
    if (n < 1) {
        reply_errorf(c, "ERR at least 1 input key is needed for '%s' command", c->cmd->fullname);
        return;
    }
    if (n > c->argc - nk - 1) {
        reply_syntax_error(c);
        return;
    }
    zop_ctx z = {.n = (int)n, .agg = AGG_SUM};
    z.src = km_alloc((size_t)n * sizeof(zsrc));
    for (int i = 0; i < z.n; i++)
        if (!zsrc_lookup(c, &c->argv[nk + 1 + i], &z.src[i])) goto done;
    int withscores = 0;
    if (!zop_parse_options(c, nk + 1 + z.n, &z, op, dst != NULL, card, &withscores)) goto done;
    if (op != ZOP_DIFF) qsort(z.src, (size_t)z.n, sizeof(zsrc), zsrc_cmp_len);
    if (!card) z.acc = zset_create_skiplist();
    zop_run(&z, op);
    if (card) {
        reply_int(c, (long long)z.card);
    } else if (dst) {
        zset_shrink_if_fits(z.acc);
        static const char *const events[] = {
            [ZOP_UNION] = "zunionstore", [ZOP_INTER] = "zinterstore", [ZOP_DIFF] = "zdiffstore"};
        store_result(c, dst, z.acc, events[op]);
    } else {
        emit_ctx x;
        emit_ctx_init(&x, c, withscores);
        reply_array(c, emit_len(&x, zset_len(z.acc)));
        walk_all(z.acc, emit_elem, &x);
        obj_decref(z.acc);
    }
done:
    km_free(z.src);
}

static void cmd_zunion(client *c) {
    zop_generic(c, NULL, 1, ZOP_UNION, 0);
}

static void cmd_zinter(client *c) {
    zop_generic(c, NULL, 1, ZOP_INTER, 0);
}

static void cmd_zdiff(client *c) {
    zop_generic(c, NULL, 1, ZOP_DIFF, 0);
}

static void cmd_zintercard(client *c) {
    zop_generic(c, NULL, 1, ZOP_INTER, 1);
}

static void cmd_zunionstore(client *c) {
    zop_generic(c, &c->argv[1], 2, ZOP_UNION, 0);
}

static void cmd_zinterstore(client *c) {
    zop_generic(c, &c->argv[1], 2, ZOP_INTER, 0);
}

static void cmd_zdiffstore(client *c) {
    zop_generic(c, &c->argv[1], 2, ZOP_DIFF, 0);
}

/* ---- ZPOPMIN, ZPOPMAX, ZMPOP ---- */

/* The first of keys[0..n) that holds a sorted set: its index and *o, -1
 * when none does, -2 after replying WRONGTYPE (a key of another type met
 * first). Sets are never empty, so the first one found is popped from. */
static int zpop_find(client *c, const karg *keys, int n, kobj **o) {
    for (int i = 0; i < n; i++) {
        int found = zset_cmd_lookup(c, &keys[i], 0, o);
        if (found < 0) return -2;
        if (found) return i;
    }
    return -1;
}

/* Pops up to count members (count -1: one, the single-pop reply) of o at
 * key and replies them; `emitkey` names the key (ZMPOP, the blocking
 * pops), `nested` uses [member, score] pairs. */
static void zpop_reply(client *c, const karg *key, kobj *o, int max, long long count, int emitkey,
                       int nested) {
    if (count == 0) {
        reply_array(c, 0);
        return;
    }
    size_t len = zset_len(o);
    size_t n = count < 0 ? 1 : ((unsigned long long)count > len ? len : (size_t)count);
    if (emitkey && nested) {
        reply_array(c, 2);
        reply_bulk(c, key->ptr, key->len);
        reply_array(c, (long long)n);
    } else if (emitkey) {
        reply_array(c, (long long)(2 * n + 1));
        reply_bulk(c, key->ptr, key->len);
    } else {
        reply_array(c, (long long)(nested ? n : 2 * n));
    }
    emit_ctx x;
    emit_ctx_init(&x, c, 1);
    x.pairs = nested;
    zset_pop(o, max, n, emit_elem, &x);
    zset_changed(c, key, o, (long long)n, max ? "zpopmax" : "zpopmin");
}

/* The non-blocking pops: an empty result is a null array with
 * nil_when_empty (ZMPOP), an empty array otherwise. */
static void zpop_generic(client *c, const karg *keys, int nkeys, int max, long long count,
                         int emitkey, int nested, int nil_when_empty) {
    kobj *o;
    int i = zpop_find(c, keys, nkeys, &o);
    if (i == -2) return;
    if (i >= 0)
        zpop_reply(c, &keys[i], o, max, count, emitkey, nested);
    else if (nil_when_empty)
        reply_null_array(c);
    else
        reply_array(c, 0);
}

static void zpop_minmax(client *c, int max) {
    if (c->argc > 3) {
        reply_syntax_error(c);
        return;
    }
    long long count = -1;
    if (c->argc == 3 && !arg_to_range(c, &c->argv[2], 0, LLONG_MAX,
                                      "ERR value is out of range, must be positive", &count))
        return;
    zpop_generic(c, &c->argv[1], 1, max, count, 0, c->resp >= 3 && count != -1, 0);
}

static void cmd_zpopmin(client *c) {
    zpop_minmax(c, 0);
}

static void cmd_zpopmax(client *c) {
    zpop_minmax(c, 1);
}

/* ZMPOP's arguments from numkeys (at nk): the keys, MIN|MAX, COUNT. */
typedef struct zmpop_args {
    int nkeys;
    int max;
    long long count;
} zmpop_args;

static int zmpop_parse(client *c, int nk, zmpop_args *a) {
    long long n;
    if (!arg_to_range(c, &c->argv[nk], 1, LLONG_MAX, "ERR numkeys should be greater than 0", &n))
        return 0;
    if (n > c->argc - nk - 2) {
        reply_syntax_error(c);
        return 0;
    }
    a->nkeys = (int)n;
    int w = nk + 1 + a->nkeys;
    if (karg_eq(&c->argv[w], "min")) {
        a->max = 0;
    } else if (karg_eq(&c->argv[w], "max")) {
        a->max = 1;
    } else {
        reply_syntax_error(c);
        return 0;
    }
    return arg_mpop_count(c, w + 1, &a->count);
}

static void cmd_zmpop(client *c) {
    zmpop_args a;
    if (!zmpop_parse(c, 1, &a)) return;
    zpop_generic(c, &c->argv[2], a.nkeys, a.max, a.count, 1, 1, 1);
}

/* ---- BZPOPMIN, BZPOPMAX, BZMPOP ---- */

/* Pops from the first non-empty key of keys (argument positions first..
 * first+nkeys-1), or blocks on all of them until one is written to or the
 * deadline passes (null array). Inside MULTI or a script the null comes at
 * once, as Valkey. */
static void bzpop_generic(client *c, int first, int nkeys, const karg *timeout, int max,
                          long long count, int nested) {
    int64_t deadline;
    if (blocking_parse_timeout(c, timeout, &deadline) != K_OK) return;
    kobj *o;
    int i = zpop_find(c, &c->argv[first], nkeys, &o);
    if (i == -2) return;
    if (i >= 0) {
        zpop_reply(c, &c->argv[first + i], o, max, count, 1, nested);
        return;
    }
    if (!blocking_allowed(c)) {
        reply_null_array(c);
        return;
    }
    int *pos = km_alloc((size_t)nkeys * sizeof(int));
    for (int k = 0; k < nkeys; k++)
        pos[k] = first + k;
    blocking_wait(c, pos, nkeys, deadline, BLOCKING_NULL_ARRAY);
    km_free(pos);
}

static void cmd_bzpopmin(client *c) {
    bzpop_generic(c, 1, c->argc - 2, &c->argv[c->argc - 1], 0, -1, 0);
}

static void cmd_bzpopmax(client *c) {
    bzpop_generic(c, 1, c->argc - 2, &c->argv[c->argc - 1], 1, -1, 0);
}

static void cmd_bzmpop(client *c) {
    zmpop_args a;
    if (!zmpop_parse(c, 2, &a)) return;
    bzpop_generic(c, 3, a.nkeys, &c->argv[1], a.max, a.count, 1);
}

/* ---- ZRANDMEMBER ---- */

/* A set of ranks (open addressing), for picking distinct members. */
typedef struct rank_set {
    size_t *slot; /* rank + 1; 0 = empty */
    size_t mask;
} rank_set;

static int rank_set_add(rank_set *s, size_t r) {
    size_t i = (r * 0x9E3779B97F4A7C15ull) & s->mask;
    while (s->slot[i]) {
        if (s->slot[i] == r + 1) return 0;
        i = (i + 1) & s->mask;
    }
    s->slot[i] = r + 1;
    return 1;
}

static size_t random_below(size_t n) {
    uint64_t r = ((uint64_t)(unsigned)rand() << 31) ^ (uint64_t)(unsigned)rand();
    return (size_t)(r % n);
}

/* `count` distinct members of o (count < size), in the order drawn. */
static void randmember_distinct(const kobj *o, size_t count, emit_ctx *x) {
    size_t size = zset_len(o);
    zset_elem e;
    if (count * 3 > size) {
        /* Most of the set: drop random ranks until count remain, keeping
         * rank order (what Valkey's copy-and-delete case gives). */
        unsigned char *drop = km_calloc(size, 1);
        for (size_t left = size; left > count;) {
            size_t r = random_below(size);
            if (!drop[r]) {
                drop[r] = 1;
                left--;
            }
        }
        for (size_t r = 0; r < size; r++) {
            if (drop[r]) continue;
            zset_at(o, r, &e);
            emit_elem(x, &e);
        }
        km_free(drop);
        return;
    }
    size_t cap = 16;
    while (cap < count * 2)
        cap *= 2;
    rank_set s = {km_calloc(cap, sizeof(size_t)), cap - 1};
    for (size_t got = 0; got < count;) {
        size_t r = random_below(size);
        if (!rank_set_add(&s, r)) continue;
        zset_at(o, r, &e);
        emit_elem(x, &e);
        got++;
    }
    km_free(s.slot);
}

static void randmember_count(client *c, long long l, int withscores) {
    kobj *o;
    int found = zset_cmd_lookup(c, &c->argv[1], 1, &o);
    if (found <= 0) {
        if (found == 0) reply_array(c, 0);
        return;
    }
    emit_ctx x;
    emit_ctx_init(&x, c, withscores);
    size_t size = zset_len(o);
    zset_elem e;
    if (l == 0) {
        reply_array(c, 0);
    } else if (l < 0) {
        /* Repeats allowed: each pick samples the whole set. */
        size_t count = (size_t)(-l);
        reply_array(c, emit_len(&x, count));
        for (size_t i = 0; i < count; i++) {
            zset_random(o, &e);
            emit_elem(&x, &e);
            /* A huge count ends with the client (output buffer limit). */
            if (c->flags & CLIENT_CLOSE_ASAP) break;
        }
    } else if ((size_t)l >= size) {
        reply_array(c, emit_len(&x, size));
        walk_all(o, emit_elem, &x);
    } else {
        reply_array(c, emit_len(&x, (size_t)l));
        randmember_distinct(o, (size_t)l, &x);
    }
}

static void cmd_zrandmember(client *c) {
    if (c->argc >= 3) {
        long long l;
        if (!arg_to_range(c, &c->argv[2], -LLONG_MAX, LLONG_MAX, NULL, &l)) return;
        if (c->argc > 4 || (c->argc == 4 && !karg_eq(&c->argv[3], "withscores"))) {
            reply_syntax_error(c);
            return;
        }
        if (c->argc == 4 && (l < -LLONG_MAX / 2 || l > LLONG_MAX / 2)) {
            reply_error(c, "ERR value is out of range");
            return;
        }
        randmember_count(c, l, c->argc == 4);
        return;
    }
    kobj *o;
    int found = zset_cmd_lookup(c, &c->argv[1], 1, &o);
    if (found < 0) return;
    if (!found) {
        reply_null(c);
        return;
    }
    zset_elem e;
    zset_random(o, &e);
    reply_bulk(c, e.m, e.len);
}

/* ---- ZSCAN ---- */

typedef struct zscan_ctx {
    const karg *pat;
    vec items; /* zset_elem */
} zscan_ctx;

static void zscan_elem(void *priv, const zset_elem *e) {
    zscan_ctx *s = priv;
    if (s->pat && !glob_match(s->pat->ptr, s->pat->len, e->m, e->len, 0)) return;
    zset_elem *d = vec_push(&s->items, sizeof(*d));
    *d = *e;
    if (e->m == e->buf) d->m = d->buf; /* an integer member's digits move with it */
}

static void cmd_zscan(client *c) {
    unsigned long long cursor;
    if (!arg_to_scan_cursor(c, &c->argv[2], &cursor)) return;
    kobj *o;
    int found = zset_cmd_lookup(c, &c->argv[1], 1, &o);
    if (found < 0) return;
    scan_args a = {.count = 10};
    if (found && !scan_args_parse(c, 3, SCAN_ARGS_NOSCORES, &a)) return;
    zscan_ctx s = {.pat = a.pat};
    long long count = a.count;
    int noscores = a.noscores;
    unsigned long long cur = 0;
    if (found) {
        /* As SCAN: stop at COUNT members or after 10*COUNT steps. */
        long long maxiter = count > LLONG_MAX / 10 ? LLONG_MAX : count * 10;
        cur = cursor;
        do {
            cur = zset_scan(o, cur, zscan_elem, &s);
        } while (cur && maxiter-- && s.items.count < (size_t)count);
    }
    char buf[24];
    size_t n = ll_to_str(buf, 0);
    if (cur) n = (size_t)snprintf(buf, sizeof(buf), "%llu", cur);
    reply_array(c, 2);
    reply_bulk(c, buf, n);
    const zset_elem *items = s.items.items;
    size_t n_items = s.items.count;
    reply_array(c, (long long)(noscores ? n_items : 2 * n_items));
    for (size_t i = 0; i < n_items; i++) {
        reply_bulk(c, items[i].m, items[i].len);
        if (noscores) continue;
        char d[DOUBLE_STR_MAX];
        reply_bulk(c, d, double_to_str(d, items[i].score));
    }
    vec_free(&s.items);
}

/* ---- the table ---- */

/* clang-format off */
#define Z_CMD(n, p, a, f, fk, lk, st, s, v)                                                        \
    {.name = n, .proc = p, .arity = a, .flags = f, .first_key = fk, .last_key = lk,                \
     .key_step = st, .group = "sorted_set", .summary = s, .since = v}

#define RO CMD_READONLY
#define RW CMD_WRITE

static command zset_table[] = {
    Z_CMD("zadd", cmd_zadd, -4, RW | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", "1.2.0"),
    Z_CMD("zincrby", cmd_zincrby, 4, RW | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "Increments the score of a member in a sorted set.", "1.2.0"),
    Z_CMD("zrem", cmd_zrem, -3, RW | CMD_FAST, 1, 1, 1, "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", "1.2.0"),
    Z_CMD("zremrangebyrank", cmd_zremrangebyrank, 4, RW, 1, 1, 1, "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", "2.0.0"),
    Z_CMD("zremrangebyscore", cmd_zremrangebyscore, 4, RW, 1, 1, 1, "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", "1.2.0"),
    Z_CMD("zremrangebylex", cmd_zremrangebylex, 4, RW, 1, 1, 1, "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", "2.8.9"),
    Z_CMD("zunion", cmd_zunion, -3, RO, 0, 0, 0, "Returns the union of multiple sorted sets.", "6.2.0"),
    Z_CMD("zinter", cmd_zinter, -3, RO, 0, 0, 0, "Returns the intersect of multiple sorted sets.", "6.2.0"),
    Z_CMD("zdiff", cmd_zdiff, -3, RO, 0, 0, 0, "Returns the difference between multiple sorted sets.", "6.2.0"),
    Z_CMD("zintercard", cmd_zintercard, -3, RO, 0, 0, 0, "Returns the number of members of the intersect of multiple sorted sets.", "7.0.0"),
    Z_CMD("zunionstore", cmd_zunionstore, -4, RW | CMD_DENYOOM, 1, 1, 1, "Stores the union of multiple sorted sets in a key.", "2.0.0"),
    Z_CMD("zinterstore", cmd_zinterstore, -4, RW | CMD_DENYOOM, 1, 1, 1, "Stores the intersect of multiple sorted sets in a key.", "2.0.0"),
    Z_CMD("zdiffstore", cmd_zdiffstore, -4, RW | CMD_DENYOOM, 1, 1, 1, "Stores the difference of multiple sorted sets in a key.", "6.2.0"),
    Z_CMD("zrange", cmd_zrange, -4, RO, 1, 1, 1, "Returns members in a sorted set within a range of indexes.", "1.2.0"),
    Z_CMD("zrangestore", cmd_zrangestore, -5, RW | CMD_DENYOOM, 1, 2, 1, "Stores a range of members from sorted set in a key.", "6.2.0"),
    Z_CMD("zrevrange", cmd_zrevrange, -4, RO, 1, 1, 1, "Returns members in a sorted set within a range of indexes in reverse order.", "1.2.0"),
    Z_CMD("zrangebyscore", cmd_zrangebyscore, -4, RO, 1, 1, 1, "Returns members in a sorted set within a range of scores.", "1.0.5"),
    Z_CMD("zrevrangebyscore", cmd_zrevrangebyscore, -4, RO, 1, 1, 1, "Returns members in a sorted set within a range of scores in reverse order.", "2.2.0"),
    Z_CMD("zrangebylex", cmd_zrangebylex, -4, RO, 1, 1, 1, "Returns members in a sorted set within a lexicographical range.", "2.8.9"),
    Z_CMD("zrevrangebylex", cmd_zrevrangebylex, -4, RO, 1, 1, 1, "Returns members in a sorted set within a lexicographical range in reverse order.", "2.8.9"),
    Z_CMD("zcount", cmd_zcount, 4, RO | CMD_FAST, 1, 1, 1, "Returns the count of members in a sorted set that have scores within a range.", "2.0.0"),
    Z_CMD("zlexcount", cmd_zlexcount, 4, RO | CMD_FAST, 1, 1, 1, "Returns the number of members in a sorted set within a lexicographical range.", "2.8.9"),
    Z_CMD("zcard", cmd_zcard, 2, RO | CMD_FAST, 1, 1, 1, "Returns the number of members in a sorted set.", "1.2.0"),
    Z_CMD("zscore", cmd_zscore, 3, RO | CMD_FAST, 1, 1, 1, "Returns the score of a member in a sorted set.", "1.2.0"),
    Z_CMD("zmscore", cmd_zmscore, -3, RO | CMD_FAST, 1, 1, 1, "Returns the score of one or more members in a sorted set.", "6.2.0"),
    Z_CMD("zrank", cmd_zrank, -3, RO | CMD_FAST, 1, 1, 1, "Returns the index of a member in a sorted set ordered by ascending scores.", "2.0.0"),
    Z_CMD("zrevrank", cmd_zrevrank, -3, RO | CMD_FAST, 1, 1, 1, "Returns the index of a member in a sorted set ordered by descending scores.", "2.0.0"),
    Z_CMD("zpopmin", cmd_zpopmin, -2, RW | CMD_FAST, 1, 1, 1, "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", "5.0.0"),
    Z_CMD("zpopmax", cmd_zpopmax, -2, RW | CMD_FAST, 1, 1, 1, "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", "5.0.0"),
    Z_CMD("zmpop", cmd_zmpop, -4, RW, 0, 0, 0, "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", "7.0.0"),
    Z_CMD("bzpopmin", cmd_bzpopmin, -3, RW | CMD_BLOCKING | CMD_FAST, 1, -2, 1, "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member available otherwise. Deletes the sorted set if the last element was popped.", "5.0.0"),
    Z_CMD("bzpopmax", cmd_bzpopmax, -3, RW | CMD_BLOCKING | CMD_FAST, 1, -2, 1, "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", "5.0.0"),
    Z_CMD("bzmpop", cmd_bzmpop, -5, RW | CMD_BLOCKING, 0, 0, 0, "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", "7.0.0"),
    Z_CMD("zrandmember", cmd_zrandmember, -2, RO, 1, 1, 1, "Returns one or more random members from a sorted set.", "6.2.0"),
    Z_CMD("zscan", cmd_zscan, -3, RO, 1, 1, 1, "Iterates over members and scores of a sorted set.", "2.8.0"),
};

/* clang-format on */

const command_family commands_zset = {zset_table, K_ARRAY_LEN(zset_table)};
