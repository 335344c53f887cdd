/* zset.c -- the sorted set value: its two encodings behind one API (see
 * zset.h), the conversions between them, and its obj_type operations. The
 * skiplist itself is zset_skiplist.c; the compact encoding lives here. */
#include "types/zset.h"

#include "common/common.h"
#include "common/kmem.h"
#include "ds/pack.h"
#include "keyspace/db.h"
#include "types/zset_skiplist.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the value object ---- */

static pack *zpack(const kobj *o) {
    return (pack *)o->v.ptr;
}

static zsl *zskip(const kobj *o) {
    return (zsl *)(void *)o->v.ptr;
}

static void zobj_set(kobj *o, int encoding, void *ptr) {
    o->encoding = (uint8_t)encoding;
    o->v.ptr = ptr;
}

int zset_is_compact(const kobj *o) {
    return o->encoding == OBJ_ENC_LISTPACK;
}

static size_t max_entries(void) {
    long long v = db_opts()->types.zset_max_listpack_entries;
    return v < 0 ? 0 : (size_t)v;
}

static size_t max_value(void) {
    return (size_t)db_opts()->types.zset_max_listpack_value;
}

/* ---- comparisons ---- */

static int member_cmp(const char *a, size_t alen, const char *b, size_t blen) {
    size_t min = alen < blen ? alen : blen;
    int c = min ? memcmp(a, b, min) : 0;
    if (c) return c;
    return alen < blen ? -1 : (alen > blen ? 1 : 0);
}

/* Whether e is at or past the range's lower end, and at or before its
 * upper end: both are monotone along the set's order. */
typedef struct range_test {
    int (*above_min)(const void *r, const zset_elem *e);
    int (*below_max)(const void *r, const zset_elem *e);
    const void *r;
} range_test;

static int score_above_min(const void *rv, const zset_elem *e) {
    const zset_score_range *r = rv;
    return r->minex ? e->score > r->min : e->score >= r->min;
}

static int score_below_max(const void *rv, const zset_elem *e) {
    const zset_score_range *r = rv;
    return r->maxex ? e->score < r->max : e->score <= r->max;
}

static int lex_above_min(const void *rv, const zset_elem *e) {
    const zset_lex_bound *b = &((const zset_lex_range *)rv)->min;
    if (b->kind == ZLEX_NEG_INF) return 1;
    if (b->kind == ZLEX_POS_INF) return 0;
    int c = member_cmp(e->m, e->len, b->s, b->len);
    return b->kind == ZLEX_INCL ? c >= 0 : c > 0;
}

static int lex_below_max(const void *rv, const zset_elem *e) {
    const zset_lex_bound *b = &((const zset_lex_range *)rv)->max;
    if (b->kind == ZLEX_POS_INF) return 1;
    if (b->kind == ZLEX_NEG_INF) return 0;
    int c = member_cmp(e->m, e->len, b->s, b->len);
    return b->kind == ZLEX_INCL ? c <= 0 : c < 0;
}

static range_test score_test(const zset_score_range *r) {
    return (range_test){score_above_min, score_below_max, r};
}

static range_test lex_test(const zset_lex_range *r) {
    return (range_test){lex_above_min, lex_below_max, r};
}

/* ---- the compact encoding: member, score, member, score... ---- */

static void pk_member(const pack *p, size_t pos, zset_elem *e) {
    pack_val v;
    pack_get(p, pos, &v);
    if (v.s) {
        e->m = (const char *)v.s;
        e->len = v.len;
    } else {
        e->len = ll_to_str(e->buf, v.v);
        e->m = e->buf;
    }
}

static double pk_score(const pack *p, size_t pos) {
    pack_val v;
    pack_get(p, pos, &v);
    if (!v.s) return (double)v.v;
    char buf[DOUBLE_STR_MAX + 1];
    size_t n = v.len < DOUBLE_STR_MAX ? v.len : DOUBLE_STR_MAX;
    memcpy(buf, v.s, n);
    buf[n] = '\0';
    return strtod(buf, NULL);
}

/* The member at pos and its score. */
static void pk_elem(const pack *p, size_t pos, zset_elem *e) {
    pk_member(p, pos, e);
    e->score = pk_score(p, pack_next(p, pos));
}

static size_t pk_next_member(const pack *p, size_t pos) {
    return pack_next(p, pack_next(p, pos));
}

static size_t pk_prev_member(const pack *p, size_t pos) {
    size_t s = pack_prev(p, pos);
    return s ? pack_prev(p, s) : 0;
}

static size_t pk_find(const pack *p, const char *m, size_t len) {
    size_t first = pack_first(p);
    return first ? pack_find(p, first, m, len, 1) : 0;
}

static pack *pk_insert(pack *p, double score, const char *m, size_t len) {
    size_t pos = pack_first(p);
    zset_elem e;
    while (pos) {
        pk_elem(p, pos, &e);
        if (e.score > score || (e.score == score && member_cmp(e.m, e.len, m, len) > 0)) break;
        pos = pk_next_member(p, pos);
    }
    char buf[DOUBLE_STR_MAX];
    size_t slen = double_to_str(buf, score);
    if (!pos) {
        p = pack_append(p, m, len);
        return pack_append(p, buf, slen);
    }
    p = pack_insert(p, &pos, m, len);
    pos = pack_next(p, pos);
    return pack_insert(p, &pos, buf, slen);
}

static pack *pk_delete_at(pack *p, size_t pos, size_t members) {
    return pack_delete(p, &pos, 2 * members);
}

/* The first member (the last one with rev) that passes the near end of t,
 * and its 0-based rank from the start of the walk. */
static size_t pk_range_start(const pack *p, const range_test *t, int rev, zset_elem *e) {
    size_t pos = rev ? pack_seek(p, -2) : pack_first(p);
    while (pos) {
        pk_elem(p, pos, e);
        if (rev ? t->below_max(t->r, e) : t->above_min(t->r, e)) return pos;
        pos = rev ? pk_prev_member(p, pos) : pk_next_member(p, pos);
    }
    return 0;
}

/* ---- conversions ---- */

static zsl *zsl_from_pack(const pack *p) {
    zsl *z = zsl_create();
    zset_elem e;
    for (size_t pos = pack_first(p); pos; pos = pk_next_member(p, pos)) {
        pk_elem(p, pos, &e);
        zsl_insert(z, e.score, e.m, e.len);
    }
    return z;
}

static pack *pack_from_zsl(const zsl *z) {
    pack *p = pack_new();
    char buf[DOUBLE_STR_MAX];
    for (zsl_node *n = z->header->level[0].forward; n; n = n->level[0].forward) {
        p = pack_append(p, zsl_member(n), n->mlen);
        p = pack_append(p, buf, double_to_str(buf, n->score));
    }
    return p;
}

static void to_skiplist(kobj *o) {
    pack *p = zpack(o);
    zobj_set(o, OBJ_ENC_SKIPLIST, zsl_from_pack(p));
    pack_free(p);
}

kobj *zset_create(size_t size_hint, size_t maxlen) {
    if (size_hint <= max_entries() && maxlen <= max_value())
        return obj_new_aggregate(OBJ_ZSET, OBJ_ENC_LISTPACK, pack_new());
    return obj_new_aggregate(OBJ_ZSET, OBJ_ENC_SKIPLIST, zsl_create());
}

kobj *zset_create_skiplist(void) {
    return obj_new_aggregate(OBJ_ZSET, OBJ_ENC_SKIPLIST, zsl_create());
}

void zset_maybe_convert(kobj *o, size_t size_hint, size_t maxlen) {
    if (zset_is_compact(o) && (size_hint > max_entries() || maxlen > max_value())) to_skiplist(o);
}

void zset_shrink_if_fits(kobj *o) {
    if (zset_is_compact(o)) return;
    zsl *z = zskip(o);
    if (z->length > max_entries()) return;
    for (zsl_node *n = z->header->level[0].forward; n; n = n->level[0].forward)
        if (n->mlen > max_value()) return;
    zobj_set(o, OBJ_ENC_LISTPACK, pack_from_zsl(z));
    zsl_free(z);
}

/* ---- single members ---- */

size_t zset_len(const kobj *o) {
    return zset_is_compact(o) ? pack_count(zpack(o)) / 2 : zskip(o)->length;
}

int zset_score(const kobj *o, const char *m, size_t len, double *score) {
    if (zset_is_compact(o)) {
        size_t pos = pk_find(zpack(o), m, len);
        if (!pos) return 0;
        *score = pk_score(zpack(o), pack_next(zpack(o), pos));
        return 1;
    }
    zsl_node *n = zsl_find(zskip(o), m, len);
    if (!n) return 0;
    *score = n->score;
    return 1;
}

/* The new score of an existing member under the flags, or 0 when the
 * flags leave it alone (*out says why). */
static int add_new_score(double cur, double *score, int in, int *out) {
    if (in & ZSET_IN_NX) {
        *out |= ZSET_OUT_NOP;
        return 0;
    }
    if (in & ZSET_IN_INCR) {
        *score += cur;
        if (isnan(*score)) {
            *out |= ZSET_OUT_NAN;
            return 0;
        }
    }
    if (((in & ZSET_IN_LT) && *score >= cur) || ((in & ZSET_IN_GT) && *score <= cur)) {
        *out |= ZSET_OUT_NOP;
        return 0;
    }
    return 1;
}

static int add_compact(kobj *o, double score, const char *m, size_t len, int in, int *out,
                       double *newscore) {
    pack *p = zpack(o);
    size_t pos = pk_find(p, m, len);
    if (pos) {
        double cur = pk_score(p, pack_next(p, pos));
        if (!add_new_score(cur, &score, in, out)) return !(*out & ZSET_OUT_NAN);
        if (newscore) *newscore = score;
        if (score != cur) {
            p = pk_delete_at(p, pos, 1);
            zobj_set(o, OBJ_ENC_LISTPACK, pk_insert(p, score, m, len));
            *out |= ZSET_OUT_UPDATED;
        }
        return 1;
    }
    if (in & ZSET_IN_XX) {
        *out |= ZSET_OUT_NOP;
        return 1;
    }
    if (zset_len(o) + 1 > max_entries() || len > max_value()) return -1; /* convert first */
    zobj_set(o, OBJ_ENC_LISTPACK, pk_insert(p, score, m, len));
    if (newscore) *newscore = score;
    *out |= ZSET_OUT_ADDED;
    return 1;
}

static int add_skiplist(kobj *o, double score, const char *m, size_t len, int in, int *out,
                        double *newscore) {
    zsl *z = zskip(o);
    zsl_node *n = zsl_find(z, m, len);
    if (n) {
        if (!add_new_score(n->score, &score, in, out)) return !(*out & ZSET_OUT_NAN);
        if (newscore) *newscore = score;
        if (score != n->score) {
            zsl_update_score(z, n, score);
            *out |= ZSET_OUT_UPDATED;
        }
        return 1;
    }
    if (in & ZSET_IN_XX) {
        *out |= ZSET_OUT_NOP;
        return 1;
    }
    zsl_insert(z, score, m, len);
    if (newscore) *newscore = score;
    *out |= ZSET_OUT_ADDED;
    return 1;
}

int zset_add(kobj *o, double score, const char *m, size_t len, int in, int *out, double *newscore) {
    *out = 0;
    if (isnan(score)) {
        *out = ZSET_OUT_NAN;
        return 0;
    }
    if (zset_is_compact(o)) {
        int r = add_compact(o, score, m, len, in, out, newscore);
        if (r >= 0) return r;
        to_skiplist(o);
    }
    return add_skiplist(o, score, m, len, in, out, newscore);
}

int zset_del(kobj *o, const char *m, size_t len) {
    if (zset_is_compact(o)) {
        size_t pos = pk_find(zpack(o), m, len);
        if (!pos) return 0;
        zobj_set(o, OBJ_ENC_LISTPACK, pk_delete_at(zpack(o), pos, 1));
        return 1;
    }
    zsl_node *n = zsl_find(zskip(o), m, len);
    if (!n) return 0;
    zsl_delete_node(zskip(o), n);
    return 1;
}

long long zset_rank(const kobj *o, const char *m, size_t len, int rev, double *score) {
    size_t n = zset_len(o), rank;
    if (zset_is_compact(o)) {
        const pack *p = zpack(o);
        size_t pos = pack_first(p);
        for (rank = 0; pos && !pack_eq(p, pos, m, len); rank++)
            pos = pk_next_member(p, pos);
        if (!pos) return -1;
        if (score) *score = pk_score(p, pack_next(p, pos));
    } else {
        zsl_node *node = zsl_find(zskip(o), m, len);
        if (!node) return -1;
        rank = zsl_rank(zskip(o), node) - 1;
        if (score) *score = node->score;
    }
    return (long long)(rev ? n - 1 - rank : rank);
}

static void node_elem(const zsl_node *n, zset_elem *e) {
    e->m = zsl_member(n);
    e->len = n->mlen;
    e->score = n->score;
}

void zset_at(const kobj *o, size_t i, zset_elem *e) {
    if (zset_is_compact(o))
        pk_elem(zpack(o), pack_seek(zpack(o), (long long)(2 * i)), e);
    else
        node_elem(zsl_at_rank(zskip(o), i + 1), e);
}

void zset_random(const kobj *o, zset_elem *e) {
    uint64_t r = ((uint64_t)(unsigned)rand() << 31) ^ (uint64_t)(unsigned)rand();
    zset_at(o, (size_t)(r % zset_len(o)), e);
}

/* ---- ranges ---- */

void zset_range_rank(const kobj *o, size_t start, size_t end, int rev, zset_elem_fn fn,
                     void *priv) {
    size_t n = zset_len(o), count = end - start + 1;
    zset_elem e;
    if (zset_is_compact(o)) {
        const pack *p = zpack(o);
        size_t pos = pack_seek(p, (long long)(2 * (rev ? n - 1 - start : start)));
        for (; count-- && pos; pos = rev ? pk_prev_member(p, pos) : pk_next_member(p, pos)) {
            pk_elem(p, pos, &e);
            fn(priv, &e);
        }
        return;
    }
    zsl_node *x = zsl_at_rank(zskip(o), rev ? n - start : start + 1);
    for (; count-- && x; x = rev ? x->backward : x->level[0].forward) {
        node_elem(x, &e);
        fn(priv, &e);
    }
}

/* The skiplist's walk predicates: a node below the range's minimum, a
 * node within its maximum. */
static int node_below_min(const void *tv, const zsl_node *n) {
    const range_test *t = tv;
    zset_elem e;
    node_elem(n, &e);
    return !t->above_min(t->r, &e);
}

static int node_within_max(const void *tv, const zsl_node *n) {
    const range_test *t = tv;
    zset_elem e;
    node_elem(n, &e);
    return t->below_max(t->r, &e);
}

/* The 1-based ranks first..last of the skiplist's members within t
 * (first > last when none). */
static void zsl_range_ranks(const zsl *z, const range_test *t, size_t *first, size_t *last) {
    size_t r0, r1;
    zsl_last_before(z, node_below_min, t, &r0);
    zsl_last_before(z, node_within_max, t, &r1);
    *first = r0 + 1;
    *last = r1;
}

static size_t range_generic(const kobj *o, const range_test *t, int rev, long long offset,
                            long long limit, zset_elem_fn fn, void *priv) {
    size_t out = 0;
    zset_elem e;
    if (offset < 0 || limit == 0) return 0;
    if (zset_is_compact(o)) {
        const pack *p = zpack(o);
        size_t pos = pk_range_start(p, t, rev, &e);
        for (; pos; pos = rev ? pk_prev_member(p, pos) : pk_next_member(p, pos)) {
            pk_elem(p, pos, &e);
            if (rev ? !t->above_min(t->r, &e) : !t->below_max(t->r, &e)) break;
            if (offset > 0) {
                offset--;
                continue;
            }
            fn(priv, &e);
            if (++out == (size_t)limit) break;
        }
        return out;
    }
    const zsl *z = zskip(o);
    size_t first, last;
    zsl_range_ranks(z, t, &first, &last);
    if (first > last || (unsigned long long)offset > last - first) return 0;
    size_t avail = last - first + 1 - (size_t)offset;
    size_t n = limit < 0 || (unsigned long long)limit > avail ? avail : (size_t)limit;
    zsl_node *x = zsl_at_rank(z, rev ? last - (size_t)offset : first + (size_t)offset);
    for (; out < n; out++, x = rev ? x->backward : x->level[0].forward) {
        node_elem(x, &e);
        fn(priv, &e);
    }
    return out;
}

size_t zset_range_score(const kobj *o, const zset_score_range *r, int rev, long long offset,
                        long long limit, zset_elem_fn fn, void *priv) {
    range_test t = score_test(r);
    return range_generic(o, &t, rev, offset, limit, fn, priv);
}

size_t zset_range_lex(const kobj *o, const zset_lex_range *r, int rev, long long offset,
                      long long limit, zset_elem_fn fn, void *priv) {
    range_test t = lex_test(r);
    return range_generic(o, &t, rev, offset, limit, fn, priv);
}

static void count_one(void *priv, const zset_elem *e) {
    K_UNUSED(e);
    (*(size_t *)priv)++;
}

static size_t count_generic(const kobj *o, const range_test *t) {
    if (zset_is_compact(o)) {
        size_t n = 0;
        range_generic(o, t, 0, 0, -1, count_one, &n);
        return n;
    }
    size_t first, last;
    zsl_range_ranks(zskip(o), t, &first, &last);
    return first > last ? 0 : last - first + 1;
}

size_t zset_count_score(const kobj *o, const zset_score_range *r) {
    range_test t = score_test(r);
    return count_generic(o, &t);
}

size_t zset_count_lex(const kobj *o, const zset_lex_range *r) {
    range_test t = lex_test(r);
    return count_generic(o, &t);
}

/* ---- deletions ---- */

size_t zset_delete_rank(kobj *o, size_t start, size_t end) {
    if (zset_is_compact(o)) {
        size_t n = end - start + 1;
        zobj_set(o, OBJ_ENC_LISTPACK, pack_delete_range(zpack(o), (long long)(2 * start), 2 * n));
        return n;
    }
    return zsl_delete_rank(zskip(o), start + 1, end + 1);
}

static size_t delete_generic(kobj *o, const range_test *t) {
    if (zset_is_compact(o)) {
        zset_elem e;
        pack *p = zpack(o);
        size_t pos = pk_range_start(p, t, 0, &e), n = 0;
        if (!pos) return 0;
        for (size_t q = pos; q; q = pk_next_member(p, q), n++) {
            pk_elem(p, q, &e);
            if (!t->below_max(t->r, &e)) break;
        }
        if (n) zobj_set(o, OBJ_ENC_LISTPACK, pk_delete_at(p, pos, n));
        return n;
    }
    size_t first, last;
    zsl_range_ranks(zskip(o), t, &first, &last);
    return first > last ? 0 : zsl_delete_rank(zskip(o), first, last);
}

size_t zset_delete_score(kobj *o, const zset_score_range *r) {
    range_test t = score_test(r);
    return delete_generic(o, &t);
}

size_t zset_delete_lex(kobj *o, const zset_lex_range *r) {
    range_test t = lex_test(r);
    return delete_generic(o, &t);
}

size_t zset_pop(kobj *o, int max, size_t count, zset_elem_fn fn, void *priv) {
    size_t done = 0;
    zset_elem e;
    for (; done < count && zset_len(o); done++) {
        if (zset_is_compact(o)) {
            pack *p = zpack(o);
            size_t pos = max ? pack_seek(p, -2) : pack_first(p);
            pk_elem(p, pos, &e);
            fn(priv, &e);
            zobj_set(o, OBJ_ENC_LISTPACK, pk_delete_at(p, pos, 1));
        } else {
            zsl *z = zskip(o);
            zsl_node *n = max ? z->tail : z->header->level[0].forward;
            node_elem(n, &e);
            fn(priv, &e);
            zsl_delete_node(z, n);
        }
    }
    return done;
}

/* ---- ZSCAN ---- */

typedef struct scan_ctx {
    zset_elem_fn fn;
    void *priv;
} scan_ctx;

static void scan_node(void *priv, void *entry) {
    scan_ctx *s = priv;
    zset_elem e;
    node_elem(entry, &e);
    s->fn(s->priv, &e);
}

unsigned long long zset_scan(const kobj *o, unsigned long long cursor, zset_elem_fn fn,
                             void *priv) {
    if (zset_is_compact(o)) {
        zset_range_rank(o, 0, zset_len(o) - 1, 0, fn, priv);
        return 0;
    }
    scan_ctx s = {fn, priv};
    return hashtable_scan(zskip(o)->ht, (size_t)cursor, scan_node, &s);
}

/* ---- argument parsing ---- */

/* One score bound: "(" makes it exclusive; the rest is a strtod number
 * (Valkey's zslParseRange: NaN refused, out-of-range values saturate). */
static int parse_score_bound(const char *s, size_t len, double *v, int *ex) {
    char buf[128];
    *ex = len > 0 && s[0] == '(';
    if (*ex) {
        s++;
        len--;
    }
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    *v = strtod(buf, &end);
    return (size_t)(end - buf) == len && !isnan(*v);
}

int zset_parse_score_range(const char *min, size_t minlen, const char *max, size_t maxlen,
                           zset_score_range *r) {
    return parse_score_bound(min, minlen, &r->min, &r->minex) &&
           parse_score_bound(max, maxlen, &r->max, &r->maxex);
}

static int parse_lex_bound(const char *s, size_t len, zset_lex_bound *b) {
    if (len == 0) return 0;
    b->s = s + 1;
    b->len = len - 1;
    switch (s[0]) {
    case '+':
        b->kind = ZLEX_POS_INF;
        return len == 1;
    case '-':
        b->kind = ZLEX_NEG_INF;
        return len == 1;
    case '[':
        b->kind = ZLEX_INCL;
        return 1;
    case '(':
        b->kind = ZLEX_EXCL;
        return 1;
    default:
        return 0;
    }
}

int zset_parse_lex_range(const char *min, size_t minlen, const char *max, size_t maxlen,
                         zset_lex_range *r) {
    return parse_lex_bound(min, minlen, &r->min) && parse_lex_bound(max, maxlen, &r->max);
}

/* ---- the type's operations ---- */

static const char *zset_type_name(const kobj *o) {
    K_UNUSED(o);
    return "zset";
}

static const char *zset_encoding_name(const kobj *o) {
    return zset_is_compact(o) ? "listpack" : "skiplist";
}

static void zset_free_value(kobj *o) {
    if (zset_is_compact(o))
        pack_free(zpack(o));
    else
        zsl_free(zskip(o));
}

/* Exact in O(1): the skiplist keeps its nodes' bytes. */
static size_t zset_mem_usage(const kobj *o, size_t samples) {
    (void)samples;
    if (zset_is_compact(o)) return pack_bytes(zpack(o));
    const zsl *z = zskip(o);
    return km_usable(z) + z->node_bytes + hashtable_mem_usage(z->ht);
}

static kobj *zset_copy(const kobj *o) {
    if (zset_is_compact(o))
        return obj_new_aggregate(OBJ_ZSET, OBJ_ENC_LISTPACK, pack_merge(pack_new(), zpack(o)));
    zsl *z = zsl_create();
    for (zsl_node *n = zskip(o)->tail; n; n = n->backward)
        zsl_insert(z, n->score, zsl_member(n), n->mlen);
    return obj_new_aggregate(OBJ_ZSET, OBJ_ENC_SKIPLIST, z);
}

static size_t zset_free_effort(const kobj *o) {
    return zset_is_compact(o) ? 1 : zskip(o)->length;
}

static const obj_type zset_type = {
    .type_name = zset_type_name,
    .encoding_name = zset_encoding_name,
    .free_value = zset_free_value,
    .mem_usage = zset_mem_usage,
    .copy = zset_copy,
    .free_effort = zset_free_effort,
};

void zset_type_setup(void) {
    obj_set_type(OBJ_ZSET, &zset_type);
}
