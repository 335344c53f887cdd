/* list.c -- the list type: one pack while small, a quicklist (a doubly
 * linked chain of packs) once it outgrows a node (see list.h).
 *
 * Every operation is written once, against a quicklist. A listpack-encoded
 * list is handed to that code as a "view": a quicklist and its one node
 * built on the stack around the list's pack. A view never adds, splits,
 * merges or frees a node, and takes every insert into its one node, so
 * before an insert could overflow the node the list is converted to a
 * real quicklist first (list_grow_check), exactly where Valkey converts. */
#include "types/list.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/strconv.h"
#include "keyspace/db.h"

#include <stdint.h>
#include <string.h>

typedef struct ql_node {
    struct ql_node *prev, *next;
    pack *p;
    int plain; /* one element too big for a node: never extended or merged */
} ql_node;

typedef struct quicklist {
    ql_node *head, *tail;
    size_t count; /* elements */
    size_t len;   /* nodes */
    int view;     /* a listpack seen as one node (see the top of this file) */
} quicklist;

/* Under a count limit (positive list-max-listpack-size) a node still never
 * passes this many bytes, as in Valkey. */
#define QL_SIZE_SAFETY_LIMIT 8192
/* Bytes of a pack's header, counted once when two nodes merge. */
#define QL_PACK_HEADER 8

static const size_t ql_size_levels[] = {4096, 8192, 16384, 32768, 65536};
/* DEBUG QUICKLIST-PACKED-THRESHOLD (a test knob, as Valkey's); 0: off. */
static unsigned long long packed_threshold;

/* ---- node limits ---- */

static int ql_fill(void) {
    const db_options *o = db_opts();
    return o ? o->types.list_max_listpack_size : -2;
}

static size_t ql_size_limit(int fill) {
    if (fill >= 0) return SIZE_MAX;
    size_t level = (size_t)(-(long long)fill) - 1;
    if (level >= K_ARRAY_LEN(ql_size_levels)) level = K_ARRAY_LEN(ql_size_levels) - 1;
    return ql_size_levels[level];
}

static size_t ql_count_limit(int fill) {
    if (fill < 0) return SIZE_MAX;
    return fill == 0 ? 1 : (size_t)fill;
}

/* Whether a node of `bytes` and `count` entries would be over the limit. */
static int ql_exceeds(int fill, size_t bytes, size_t count) {
    if (fill < 0) return bytes > ql_size_limit(fill);
    return bytes > QL_SIZE_SAFETY_LIMIT || count > ql_count_limit(fill);
}

/* Whether an element of len bytes goes to a plain node of its own. */
static int ql_is_large(int fill, size_t len) {
    if (packed_threshold) return len >= packed_threshold;
    return len > (fill >= 0 ? QL_SIZE_SAFETY_LIMIT : ql_size_limit(fill));
}

int list_set_packed_threshold(unsigned long long sz) {
    if (sz > (1ull << 32) - (1ull << 20)) return 0;
    packed_threshold = sz;
    return 1;
}

/* ---- nodes ---- */

static size_t node_count(const ql_node *n) {
    return pack_count(n->p);
}

static ql_node *ql_node_new(pack *p, int plain) {
    ql_node *n = km_alloc(sizeof(*n));
    n->prev = n->next = NULL;
    n->p = p ? p : pack_new();
    n->plain = plain;
    return n;
}

/* Links n after prev (NULL: at the head). */
static void ql_link(quicklist *ql, ql_node *prev, ql_node *n) {
    ql_node *next = prev ? prev->next : ql->head;
    n->prev = prev;
    n->next = next;
    if (prev)
        prev->next = n;
    else
        ql->head = n;
    if (next)
        next->prev = n;
    else
        ql->tail = n;
    ql->len++;
}

static void ql_unlink_free(quicklist *ql, ql_node *n) {
    if (n->prev)
        n->prev->next = n->next;
    else
        ql->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        ql->tail = n->prev;
    ql->len--;
    pack_free(n->p);
    km_free(n);
}

static int ql_allow_insert(const ql_node *n, int fill, const char *s, size_t len) {
    if (!n || n->plain || ql_is_large(fill, len)) return 0;
    return !ql_exceeds(fill, pack_bytes(n->p) + pack_entry_size(s, len), node_count(n) + 1);
}

/* Merges a's next node into a when both fit one node; 1 if merged. */
static int ql_try_merge(quicklist *ql, ql_node *a, int fill) {
    if (ql->view || !a || !a->next) return 0;
    ql_node *b = a->next;
    if (a->plain || b->plain) return 0;
    if (ql_exceeds(fill, pack_bytes(a->p) + pack_bytes(b->p) - QL_PACK_HEADER,
                   node_count(a) + node_count(b)))
        return 0;
    a->p = pack_merge(a->p, b->p);
    ql_unlink_free(ql, b);
    return 1;
}

/* The node holding element index (< ql->count), walking from the nearer
 * end, and the index inside it. */
static ql_node *ql_locate(const quicklist *ql, size_t index, size_t *off) {
    ql_node *n;
    if (index < ql->count / 2) {
        for (n = ql->head; index >= node_count(n); n = n->next)
            index -= node_count(n);
        *off = index;
        return n;
    }
    size_t back = ql->count - 1 - index; /* 0: the last element */
    for (n = ql->tail; back >= node_count(n); n = n->prev)
        back -= node_count(n);
    *off = node_count(n) - 1 - back;
    return n;
}

/* Moves the entries of n from pos on into a new node linked after n. */
static void ql_split(quicklist *ql, ql_node *n, size_t pos) {
    ql_node *m = ql_node_new(NULL, 0);
    size_t moved = 0;
    for (size_t q = pos; q; q = pack_next(n->p, q)) {
        pack_val v;
        pack_get(n->p, q, &v);
        m->p = v.s ? pack_append(m->p, (const char *)v.s, v.len) : pack_append_int(m->p, v.v);
        moved++;
    }
    n->p = pack_delete(n->p, &pos, moved);
    ql_link(ql, n, m);
}

/* ---- operations on a quicklist (or a view) ---- */

static void ql_push(quicklist *ql, int where, const char *s, size_t len, int fill) {
    ql_node *n = where == LIST_HEAD ? ql->head : ql->tail;
    if (!ql->view && !ql_allow_insert(n, fill, s, len)) {
        n = ql_node_new(NULL, ql_is_large(fill, len));
        ql_link(ql, where == LIST_HEAD ? NULL : ql->tail, n);
    }
    n->p = where == LIST_HEAD ? pack_prepend(n->p, s, len) : pack_append(n->p, s, len);
    ql->count++;
}

/* Inserts s before the entry at pos of node n (pos 0: at n's end). A full
 * node passes the element to the neighbour it borders, or gets a new node
 * beside it, or is split at pos. */
static void ql_insert_at(quicklist *ql, ql_node *n, size_t pos, const char *s, size_t len,
                         int fill) {
    ql->count++;
    if (ql->view || ql_allow_insert(n, fill, s, len)) {
        n->p = pack_insert(n->p, &pos, s, len);
        return;
    }
    int large = ql_is_large(fill, len);
    ql_node *after; /* the new node goes after this one (NULL: at the head) */
    if (pos == 0) {
        if (!large && ql_allow_insert(n->next, fill, s, len)) {
            n->next->p = pack_prepend(n->next->p, s, len);
            return;
        }
        after = n;
    } else if (pos == pack_first(n->p)) {
        if (!large && ql_allow_insert(n->prev, fill, s, len)) {
            n->prev->p = pack_append(n->prev->p, s, len);
            return;
        }
        after = n->prev;
    } else {
        ql_split(ql, n, pos);
        after = n;
    }
    ql_node *m = ql_node_new(NULL, large);
    m->p = pack_append(m->p, s, len);
    ql_link(ql, after, m);
    /* A lone small element next to a split may fit a neighbour. */
    ql_node *left = m->prev;
    if (!ql_try_merge(ql, left, fill)) left = m;
    ql_try_merge(ql, left, fill);
}

/* Deletes n elements from index start on. */
static void ql_delete_range(quicklist *ql, size_t start, size_t n, int fill) {
    if (n == 0 || start >= ql->count) return;
    if (n > ql->count - start) n = ql->count - start;
    size_t off;
    ql_node *node = ql_locate(ql, start, &off);
    ql_node *before = node->prev; /* untouched: where merging starts */
    ql->count -= n;
    while (n) {
        size_t cnt = node_count(node);
        size_t k = cnt - off < n ? cnt - off : n;
        ql_node *next = node->next;
        if (k == cnt && !ql->view)
            ql_unlink_free(ql, node);
        else
            node->p = pack_delete_range(node->p, (long long)off, k);
        n -= k;
        off = 0;
        node = next;
    }
    /* The nodes on either side of the cut may fit together now. */
    ql_node *a = before ? before : ql->head;
    for (int i = 0; i < 2 && a; i++)
        if (!ql_try_merge(ql, a, fill)) a = a->next;
}

/* After a node lost entries while a walk goes on past it: frees it when
 * empty, else merges it with the neighbour the walk has already left
 * behind (toward_head: its previous node), which is safe to free. */
static void ql_after_removal(quicklist *ql, ql_node *n, int toward_head, int fill) {
    if (ql->view) return;
    if (!node_count(n))
        ql_unlink_free(ql, n);
    else
        ql_try_merge(ql, toward_head ? n->prev : n, fill);
}

static size_t ql_remove_forward(quicklist *ql, const char *s, size_t len, size_t want, int fill) {
    size_t removed = 0;
    for (ql_node *n = ql->head; n && (!want || removed < want);) {
        ql_node *next = n->next;
        size_t before = removed;
        size_t pos = pack_first(n->p);
        while (pos && (!want || removed < want)) {
            if (pack_eq(n->p, pos, s, len)) {
                n->p = pack_delete(n->p, &pos, 1);
                removed++;
            } else {
                pos = pack_next(n->p, pos);
            }
        }
        ql->count -= removed - before;
        if (removed != before) ql_after_removal(ql, n, 1, fill);
        n = next;
    }
    return removed;
}

static size_t ql_remove_backward(quicklist *ql, const char *s, size_t len, size_t want, int fill) {
    size_t removed = 0;
    for (ql_node *n = ql->tail; n && removed < want;) {
        ql_node *prev = n->prev;
        size_t before = removed;
        size_t pos = pack_last(n->p);
        while (pos && removed < want) {
            if (pack_eq(n->p, pos, s, len)) {
                n->p = pack_delete(n->p, &pos, 1);
                removed++;
                pos = pos ? pack_prev(n->p, pos) : pack_last(n->p);
            } else {
                pos = pack_prev(n->p, pos);
            }
        }
        ql->count -= removed - before;
        if (removed != before) ql_after_removal(ql, n, 0, fill);
        n = prev;
    }
    return removed;
}

/* ---- encodings ---- */

static quicklist *ql_new(void) {
    quicklist *ql = km_alloc(sizeof(*ql));
    *ql = (quicklist){0};
    return ql;
}

/* The list as a quicklist: its own, or a view built in *view and *vnode
 * around its pack; ql_done stores the view's pack back. */
static quicklist *ql_of(kobj *o, quicklist *view, ql_node *vnode) {
    if (o->encoding == OBJ_ENC_QUICKLIST) return (quicklist *)o->v.ptr;
    *vnode = (ql_node){.p = (pack *)o->v.ptr};
    *view = (quicklist){
        .head = vnode, .tail = vnode, .count = pack_count(vnode->p), .len = 1, .view = 1};
    return view;
}

static void ql_done(kobj *o, const quicklist *ql) {
    if (ql->view) o->v.ptr = (char *)ql->head->p;
}

/* Before an element of len bytes is added to a listpack: converts it to a
 * quicklist when the pack would pass the node limit, as Valkey's
 * listTypeTryConversionAppend (a replace counts as an addition too). */
static void list_grow_check(kobj *o, int fill, const char *s, size_t len) {
    if (o->encoding != OBJ_ENC_LISTPACK) return;
    pack *p = (pack *)o->v.ptr;
    if (!ql_is_large(fill, len) &&
        !ql_exceeds(fill, pack_bytes(p) + pack_entry_size(s, len), pack_count(p) + 1))
        return;
    quicklist *ql = ql_new();
    if (pack_count(p)) {
        ql_link(ql, NULL, ql_node_new(p, 0));
        ql->count = pack_count(p);
    } else {
        pack_free(p);
    }
    o->v.ptr = (char *)ql;
    o->encoding = OBJ_ENC_QUICKLIST;
}

/* After elements left a quicklist: one packed node at most half the limit
 * becomes the list's pack again. */
static void list_shrink_check(kobj *o, int fill) {
    if (o->encoding != OBJ_ENC_QUICKLIST) return;
    quicklist *ql = (quicklist *)o->v.ptr;
    if (ql->len != 1 || ql->head->plain) return;
    if (pack_bytes(ql->head->p) > ql_size_limit(fill) / 2 || ql->count > ql_count_limit(fill) / 2)
        return;
    o->v.ptr = (char *)ql->head->p;
    o->encoding = OBJ_ENC_LISTPACK;
    km_free(ql->head);
    km_free(ql);
}

/* ---- the API ---- */

kobj *list_new(void) {
    return obj_new_aggregate(OBJ_LIST, OBJ_ENC_LISTPACK, pack_new());
}

size_t list_len(const kobj *o) {
    if (o->encoding == OBJ_ENC_LISTPACK) return pack_count((const pack *)o->v.ptr);
    return ((const quicklist *)o->v.ptr)->count;
}

size_t list_node_count(const kobj *o) {
    if (o->encoding == OBJ_ENC_LISTPACK) return 1;
    return ((const quicklist *)o->v.ptr)->len;
}

void list_push(kobj *o, int where, const char *s, size_t len) {
    int fill = ql_fill();
    list_grow_check(o, fill, s, len);
    quicklist view;
    ql_node vnode;
    quicklist *ql = ql_of(o, &view, &vnode);
    ql_push(ql, where, s, len, fill);
    ql_done(o, ql);
}

int list_peek(const kobj *o, int where, pack_val *out) {
    size_t n = list_len(o);
    if (!n) return 0;
    return list_index(o, where == LIST_HEAD ? 0 : (long long)n - 1, out);
}

void list_pop(kobj *o, int where, size_t n) {
    size_t len = list_len(o);
    if (n > len) n = len;
    list_delete_range(o, where == LIST_HEAD ? 0 : (long long)(len - n), (long long)n);
}

int list_index(const kobj *o, long long index, pack_val *out) {
    list_iter it;
    list_iter_init(&it, o, index, LIST_TAIL);
    return list_iter_next(&it, out);
}

/* Bytes the entry at pos takes, measured as its string form would be. */
static size_t ql_entry_size(const pack *p, size_t pos) {
    pack_val v;
    pack_get(p, pos, &v);
    if (v.s) return pack_entry_size((const char *)v.s, v.len);
    char buf[24];
    return pack_entry_size(buf, ll_to_str(buf, v.v));
}

int list_set(kobj *o, long long index, const char *s, size_t len) {
    if (index < 0 || (size_t)index >= list_len(o)) return 0;
    int fill = ql_fill();
    list_grow_check(o, fill, s, len);
    quicklist view;
    ql_node vnode;
    quicklist *ql = ql_of(o, &view, &vnode);
    size_t off;
    ql_node *n = ql_locate(ql, (size_t)index, &off);
    size_t pos = pack_seek(n->p, (long long)off);
    int large = ql_is_large(fill, len);
    int fits =
        !n->plain && !large &&
        !ql_exceeds(fill, pack_bytes(n->p) - ql_entry_size(n->p, pos) + pack_entry_size(s, len),
                    node_count(n));
    if (ql->view || fits || (n->plain && large)) {
        n->p = pack_replace(n->p, &pos, s, len);
    } else {
        /* The new element does not belong in this node: delete and insert
         * it where it was, which picks or makes the right node. */
        n->p = pack_delete(n->p, &pos, 1);
        ql->count--;
        ql_insert_at(ql, n, pos, s, len, fill);
        if (!node_count(n)) ql_unlink_free(ql, n);
    }
    ql_done(o, ql);
    list_shrink_check(o, fill);
    return 1;
}

int list_insert(kobj *o, const char *pivot, size_t plen, int after, const char *s, size_t len) {
    int fill = ql_fill();
    /* As Valkey, the conversion is decided before the pivot is looked for. */
    list_grow_check(o, fill, s, len);
    quicklist view;
    ql_node vnode;
    quicklist *ql = ql_of(o, &view, &vnode);
    int found = 0;
    for (ql_node *n = ql->head; n && !found; n = n->next) {
        size_t first = pack_first(n->p);
        size_t pos = first ? pack_find(n->p, first, pivot, plen, 0) : 0;
        if (!pos) continue;
        if (after) pos = pack_next(n->p, pos);
        ql_insert_at(ql, n, pos, s, len, fill);
        found = 1;
    }
    ql_done(o, ql);
    return found;
}

void list_delete_range(kobj *o, long long start, long long n) {
    if (start < 0 || n <= 0) return;
    int fill = ql_fill();
    quicklist view;
    ql_node vnode;
    quicklist *ql = ql_of(o, &view, &vnode);
    ql_delete_range(ql, (size_t)start, (size_t)n, fill);
    ql_done(o, ql);
    list_shrink_check(o, fill);
}

size_t list_remove(kobj *o, const char *s, size_t len, long long count) {
    int fill = ql_fill();
    quicklist view;
    ql_node vnode;
    quicklist *ql = ql_of(o, &view, &vnode);
    size_t removed;
    if (count >= 0)
        removed = ql_remove_forward(ql, s, len, (size_t)count, fill);
    else
        removed = ql_remove_backward(ql, s, len, (size_t)(-(count + 1)) + 1, fill);
    ql_done(o, ql);
    if (removed) list_shrink_check(o, fill);
    return removed;
}

int list_val_eq(const pack_val *v, const char *s, size_t len) {
    if (v->s) return v->len == len && memcmp(v->s, s, len) == 0;
    char buf[24];
    size_t n = ll_to_str(buf, v->v);
    return n == len && memcmp(buf, s, len) == 0;
}

void list_iter_init(list_iter *it, const kobj *o, long long index, int dir) {
    it->dir = dir;
    it->node = NULL;
    it->p = NULL;
    it->pos = 0;
    if (index < 0 || (size_t)index >= list_len(o)) return;
    if (o->encoding == OBJ_ENC_LISTPACK) {
        it->p = (const pack *)o->v.ptr;
        it->pos = pack_seek(it->p, index);
        return;
    }
    size_t off;
    const ql_node *n = ql_locate((const quicklist *)o->v.ptr, (size_t)index, &off);
    it->node = n;
    it->p = n->p;
    it->pos = pack_seek(n->p, (long long)off);
}

int list_iter_next(list_iter *it, pack_val *out) {
    while (!it->pos) {
        const ql_node *n = it->node;
        if (!n) return 0;
        n = it->dir == LIST_TAIL ? n->next : n->prev;
        it->node = n;
        if (!n) return 0;
        it->p = n->p;
        it->pos = it->dir == LIST_TAIL ? pack_first(n->p) : pack_last(n->p);
    }
    pack_get(it->p, it->pos, out);
    it->pos = it->dir == LIST_TAIL ? pack_next(it->p, it->pos) : pack_prev(it->p, it->pos);
    return 1;
}

int list_verify(const kobj *o, int fill) {
    if (o->encoding == OBJ_ENC_LISTPACK) {
        const pack *p = (const pack *)o->v.ptr;
        return pack_count(p) <= 1 || !ql_exceeds(fill, pack_bytes(p), pack_count(p));
    }
    const quicklist *ql = (const quicklist *)o->v.ptr;
    size_t count = 0, nodes = 0;
    const ql_node *prev = NULL;
    for (const ql_node *n = ql->head; n; prev = n, n = n->next) {
        size_t k = node_count(n);
        if (n->prev != prev || k == 0 || (n->plain && k != 1)) return 0;
        if (!n->plain && k > 1 && ql_exceeds(fill, pack_bytes(n->p), k)) return 0;
        count += k;
        nodes++;
    }
    return prev == ql->tail && count == ql->count && nodes == ql->len;
}

/* ---- obj_type operations ---- */

static const char *list_type_name(const kobj *o) {
    (void)o;
    return "list";
}

static const char *list_encoding_name(const kobj *o) {
    return o->encoding == OBJ_ENC_LISTPACK ? "listpack" : "quicklist";
}

static void list_free_value(kobj *o) {
    if (o->encoding == OBJ_ENC_LISTPACK) {
        pack_free((pack *)o->v.ptr);
        return;
    }
    quicklist *ql = (quicklist *)o->v.ptr;
    while (ql->head)
        ql_unlink_free(ql, ql->head);
    km_free(ql);
}

/* A quicklist's nodes are estimated from the first `samples` of them, as
 * Valkey does: MEMORY USAGE, eviction and lazy free must not walk a long
 * list. */
static size_t list_mem_usage(const kobj *o, size_t samples) {
    if (o->encoding == OBJ_ENC_LISTPACK) return pack_bytes((const pack *)o->v.ptr);
    const quicklist *ql = (const quicklist *)o->v.ptr;
    size_t bytes = 0, seen = 0;
    for (const ql_node *n = ql->head; n && seen < samples; n = n->next, seen++)
        bytes += km_usable(n) + pack_bytes(n->p);
    return km_usable(ql) + (seen ? bytes * ql->len / seen : 0);
}

static pack *pack_dup(const pack *p) {
    return pack_merge(pack_new(), p);
}

static kobj *list_copy(const kobj *o) {
    if (o->encoding == OBJ_ENC_LISTPACK)
        return obj_new_aggregate(OBJ_LIST, OBJ_ENC_LISTPACK, pack_dup((const pack *)o->v.ptr));
    const quicklist *src = (const quicklist *)o->v.ptr;
    quicklist *dst = ql_new();
    for (const ql_node *n = src->head; n; n = n->next)
        ql_link(dst, dst->tail, ql_node_new(pack_dup(n->p), n->plain));
    dst->count = src->count;
    return obj_new_aggregate(OBJ_LIST, OBJ_ENC_QUICKLIST, dst);
}

static size_t list_free_effort(const kobj *o) {
    return list_node_count(o);
}

static const obj_type list_type = {
    .type_name = list_type_name,
    .encoding_name = list_encoding_name,
    .free_value = list_free_value,
    .mem_usage = list_mem_usage,
    .copy = list_copy,
    .free_effort = list_free_effort,
};

void list_type_setup(void) {
    obj_set_type(OBJ_LIST, &list_type);
}
