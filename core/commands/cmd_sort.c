/* cmd_sort.c -- SORT and SORT_RO: the elements of a list, a set or a
 * sorted set ordered by their value or by keys named after them (BY
 * pattern), with LIMIT, ASC/DESC, ALPHA, GET patterns (`#` the member
 * itself, `key*` a string key, `key*->field` a hash field) and STORE (the
 * result as a list), as Valkey 8.0.1 does them. */
#include "commands/commands.h"
#include "common/common.h"
#include "common/kmem.h"
#include "session/reply.h"
#include "types/hash.h"
#include "types/list.h"
#include "types/set.h"
#include "types/zset.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct sort_item {
    kobj *obj;    /* the element, a string object */
    double score; /* numeric sort: its value or its BY key's */
    kobj *cmp;    /* ALPHA with BY: the BY key's value (NULL: none) */
} sort_item;

/* How qsort compares (qsort has no context argument in C11). */
typedef struct sort_order {
    int desc, alpha, by;
} sort_order;

static sort_order sort_cmp_order;

/* Byte-wise comparison of two strings (Valkey's binary compare; Keel does
 * not collate by locale). */
static int sort_cmp_str(const kobj *a, const kobj *b) {
    char ba[24], bb[24];
    size_t la, lb;
    const char *sa = obj_str(a, ba, &la), *sb = obj_str(b, bb, &lb);
    int r = memcmp(sa, sb, la < lb ? la : lb);
    if (r) return r;
    return la < lb ? -1 : la > lb;
}

static int sort_cmp(const void *pa, const void *pb) {
    const sort_item *a = pa, *b = pb;
    const sort_order *o = &sort_cmp_order;
    int r;
    if (!o->alpha) {
        /* Equal scores fall back to the elements: the result is stable. */
        r = a->score > b->score ? 1 : a->score < b->score ? -1 : sort_cmp_str(a->obj, b->obj);
    } else if (o->by) {
        /* A missing BY value sorts first. */
        if (!a->cmp || !b->cmp)
            r = a->cmp == b->cmp ? 0 : a->cmp ? 1 : -1;
        else
            r = sort_cmp_str(a->cmp, b->cmp);
    } else {
        r = sort_cmp_str(a->obj, b->obj);
    }
    return o->desc ? -r : r;
}

/* The value a BY or GET pattern names for element e, as a new reference,
 * or NULL: "#" is e itself; the first '*' is replaced by e; a "->field"
 * after it reads that field of a hash; a pattern without '*' names no key.
 * A key of another type than expected answers NULL. */
static kobj *sort_lookup(client *c, const karg *pat, kobj *e) {
    if (pat->len == 1 && pat->ptr[0] == '#') return obj_incref(e);
    const char *star = memchr(pat->ptr, '*', pat->len);
    if (!star) return NULL;
    size_t pre = (size_t)(star - pat->ptr), rest = pat->len - pre - 1;
    const char *field = NULL;
    size_t flen = 0;
    for (size_t i = pre + 1; i + 2 < pat->len; i++) {
        if (pat->ptr[i] == '-' && pat->ptr[i + 1] == '>') {
            field = pat->ptr + i + 2;
            flen = pat->len - i - 2;
            rest = i - pre - 1;
            break;
        }
    }
    char eb[24];
    size_t elen;
    const char *es = obj_str(e, eb, &elen);
    size_t klen = pre + elen + rest;
    char *key = km_alloc(klen ? klen : 1);
    memcpy(key, pat->ptr, pre);
    memcpy(key + pre, es, elen);
    memcpy(key + pre + elen, star + 1, rest);
    db_entry *de = db_lookup(c->db, key, klen, 1);
    km_free(key);
    if (!de) return NULL;
    if (!field) return db_entry_type(de) == OBJ_STRING ? db_entry_value_obj(de) : NULL;
    if (db_entry_type(de) != OBJ_HASH) return NULL;
    hash_str v;
    return hash_get(db_entry_obj(de), field, flen, &v) ? obj_string(v.s, v.len) : NULL;
}

/* The numeric value of a BY value or element: 0 and an error flag unless
 * the whole string is a double (not NaN, in range). */
static double sort_score(const kobj *v, int *bad) {
    int64_t iv;
    if (v->encoding == OBJ_ENC_INT && obj_get_int(v, &iv)) return (double)iv;
    char small[64];
    size_t len;
    const char *s = obj_str(v, small, &len);
    char *buf = len < sizeof(small) ? small : km_alloc(len + 1);
    memmove(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    double d = strtod(buf, &end);
    if (*end != '\0' || errno == ERANGE || isnan(d)) *bad = 1;
    if (buf != small) km_free(buf);
    return d;
}

typedef struct sort_args {
    int desc, alpha, dontsort, ngets;
    long long offset, count;
    const karg *by, *store;
    const karg **gets;
} sort_args;

static int sort_parse(client *c, int readonly, sort_args *a) {
    *a = (sort_args){.count = -1};
    a->gets = km_alloc((size_t)c->argc * sizeof(*a->gets));
    for (int j = 2; j < c->argc; j++) {
        const karg *o = &c->argv[j];
        int left = c->argc - j - 1;
        if (karg_eq(o, "asc")) {
            a->desc = 0;
        } else if (karg_eq(o, "desc")) {
            a->desc = 1;
        } else if (karg_eq(o, "alpha")) {
            a->alpha = 1;
        } else if (karg_eq(o, "limit") && left >= 2) {
            if (!arg_to_ll(c, &c->argv[j + 1], &a->offset) ||
                !arg_to_ll(c, &c->argv[j + 2], &a->count))
                return 0;
            j += 2;
        } else if (!readonly && karg_eq(o, "store") && left >= 1) {
            a->store = &c->argv[++j];
        } else if (karg_eq(o, "by") && left >= 1) {
            a->by = &c->argv[++j];
            /* A pattern without '*' names one constant key: no sorting. */
            a->dontsort = memchr(a->by->ptr, '*', a->by->len) == NULL;
        } else if (karg_eq(o, "get") && left >= 1) {
            a->gets[a->ngets++] = &c->argv[++j];
        } else {
            reply_syntax_error(c);
            return 0;
        }
    }
    return 1;
}

typedef struct sort_vec {
    sort_item *v;
    size_t n;
} sort_vec;

/* Every member of the set, as string objects. */
static void sort_load_set(const kobj *set, sort_vec *vec) {
    set_iter it;
    set_member m;
    set_iter_init(&it, set);
    while (set_iter_next(&it, &m)) {
        char buf[24];
        size_t len;
        const char *s = set_member_str(&m, buf, &len);
        vec->v[vec->n++] = (sort_item){.obj = obj_string(s, len)};
    }
    set_iter_reset(&it);
}

/* Every element of the list, in list order, as string objects. */
static void sort_load_list(const kobj *list, sort_vec *vec) {
    list_iter it;
    pack_val v;
    list_iter_init(&it, list, 0, LIST_TAIL);
    while (list_iter_next(&it, &v))
        vec->v[vec->n++] =
            (sort_item){.obj = v.s ? obj_string((const char *)v.s, v.len) : obj_int(v.v)};
}

static void sort_add_member(void *priv, const zset_elem *e) {
    sort_vec *vec = priv;
    vec->v[vec->n++] = (sort_item){.obj = obj_string(e->m, e->len)};
}

/* Every member of the sorted set, by rank (BY nosort keeps that order). */
static void sort_load_zset(const kobj *zset, sort_vec *vec) {
    size_t n = zset_len(zset);
    if (n) zset_range_rank(zset, 0, n - 1, 0, sort_add_member, vec);
}

/* STORE: the result (or its GET values, "" for a missing one) as a list
 * replacing the destination, whatever it held. Returns its length. */
static long long sort_store(client *c, const sort_args *a, const sort_vec *vec, long long start,
                            long long end) {
    kobj *list = list_new();
    for (long long j = start; j <= end; j++) {
        kobj *e = vec->v[j].obj;
        for (int g = 0; g < (a->ngets ? a->ngets : 1); g++) {
            kobj *v = a->ngets ? sort_lookup(c, a->gets[g], e) : obj_incref(e);
            char buf[24];
            size_t len = 0;
            const char *s = v ? obj_str(v, buf, &len) : "";
            list_push(list, LIST_TAIL, s, len);
            if (v) obj_decref(v);
        }
    }
    long long n = (long long)list_len(list);
    db_set(c->db, a->store->ptr, a->store->len, list, 0);
    /* Valkey counts each element stored; db_set counted one. */
    if (n > 1) db_signal_modified(c->db, a->store->ptr, a->store->len, n - 1);
    notify_key(c, NOTIFY_LIST, "sortstore", a->store);
    return n;
}

/* Scores (or BY values) for every element; 0 when one is no number. */
static int sort_weigh(client *c, const sort_args *a, sort_vec *vec) {
    int bad = 0;
    for (size_t j = 0; j < vec->n; j++) {
        sort_item *it = &vec->v[j];
        kobj *by = a->by ? sort_lookup(c, a->by, it->obj) : obj_incref(it->obj);
        if (!by) continue;
        if (!a->alpha)
            it->score = sort_score(by, &bad);
        else if (a->by)
            it->cmp = obj_incref(by);
        obj_decref(by);
    }
    return !bad;
}

static void sort_reply(client *c, const sort_args *a, const sort_vec *vec, long long start,
                       long long end) {
    long long n = end - start + 1;
    reply_array(c, a->ngets ? a->ngets * n : n);
    for (long long j = start; j <= end; j++) {
        kobj *e = vec->v[j].obj;
        if (!a->ngets) reply_bulk_obj(c, e);
        for (int g = 0; g < a->ngets; g++) {
            kobj *v = sort_lookup(c, a->gets[g], e);
            if (v) {
                reply_bulk_obj(c, v);
                obj_decref(v);
            } else {
                reply_null(c);
            }
        }
    }
}

static void sort_generic(client *c, int readonly) {
    sort_args a;
    if (!sort_parse(c, readonly, &a)) {
        km_free(a.gets);
        return;
    }
    db_entry *e = db_lookup(c->db, c->argv[1].ptr, c->argv[1].len, 1);
    int type = e ? db_entry_type(e) : OBJ_SET;
    if (type != OBJ_SET && type != OBJ_LIST && type != OBJ_ZSET) {
        km_free(a.gets);
        reply_wrongtype(c);
        return;
    }
    kobj *set = e ? obj_incref(db_entry_obj(e)) : NULL;
    /* An unsorted set has no defined order: stored, or returned to a
     * script, it is sorted ALPHA so the result is reproducible (Valkey
     * replicates both). A list keeps its own order. */
    if (a.dontsort && (a.store || (c->flags & CLIENT_SCRIPT)) && type == OBJ_SET) {
        a.dontsort = 0;
        a.alpha = 1;
        a.by = NULL;
    }
    size_t size = !set               ? 0
                  : type == OBJ_SET  ? set_size(set)
                  : type == OBJ_ZSET ? zset_len(set)
                                     : list_len(set);
    sort_vec vec = {km_alloc(size * sizeof(sort_item) + 1), 0};
    if (set && type == OBJ_SET)
        sort_load_set(set, &vec);
    else if (set && type == OBJ_ZSET)
        sort_load_zset(set, &vec);
    else if (set)
        sort_load_list(set, &vec);
    /* Unsorted, a list or a sorted set is read from its tail for DESC, as
     * in Valkey. */
    if (a.dontsort && a.desc && type != OBJ_SET)
        for (size_t i = 0, j = vec.n; i + 1 < j--; i++) {
            sort_item t = vec.v[i];
            vec.v[i] = vec.v[j];
            vec.v[j] = t;
        }
    long long len = (long long)vec.n;
    long long start = a.offset < 0 ? 0 : a.offset > len ? len : a.offset;
    long long count = a.count < -1 ? -1 : a.count > len ? len : a.count;
    long long end = count < 0 ? len - 1 : start + count - 1;
    if (start >= len) {
        start = len - 1;
        end = len - 2;
    }
    if (end >= len) end = len - 1;
    int ok = 1;
    if (!a.dontsort) {
        ok = sort_weigh(c, &a, &vec);
        sort_cmp_order = (sort_order){.desc = a.desc, .alpha = a.alpha, .by = a.by != NULL};
        qsort(vec.v, vec.n, sizeof(sort_item), sort_cmp);
    }
    long long outlen = (a.ngets ? a.ngets : 1) * (end - start + 1);
    if (!ok) {
        reply_error(c, "ERR One or more scores can't be converted into double");
    } else if (!a.store) {
        sort_reply(c, &a, &vec, start, end);
    } else if (outlen == 0) {
        if (db_delete(c->db, a.store->ptr, a.store->len))
            notify_key(c, NOTIFY_GENERIC, "del", a.store);
        reply_int(c, 0);
    } else {
        reply_int(c, sort_store(c, &a, &vec, start, end));
    }
    for (size_t j = 0; j < vec.n; j++) {
        obj_decref(vec.v[j].obj);
        if (vec.v[j].cmp) obj_decref(vec.v[j].cmp);
    }
    km_free(vec.v);
    km_free(a.gets);
    if (set) obj_decref(set);
}

static void cmd_sort(client *c) {
    sort_generic(c, 0);
}

static void cmd_sort_ro(client *c) {
    sort_generic(c, 1);
}

/* clang-format off */
static command sort_table[] = {
    {.name = "sort", .proc = cmd_sort, .arity = -2, .flags = CMD_WRITE | CMD_DENYOOM, .first_key = 1,
     .last_key = 1, .key_step = 1, .group = "generic",
     .summary = "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.",
     .since = "1.0.0"},
    {.name = "sort_ro", .proc = cmd_sort_ro, .arity = -2, .flags = CMD_READONLY, .first_key = 1,
     .last_key = 1, .key_step = 1, .group = "generic",
     .summary = "Returns the sorted elements of a list, a set, or a sorted set.", .since = "7.0.0"},
};
/* clang-format on */

const command_family commands_sort = {sort_table, K_ARRAY_LEN(sort_table)};
