/* list.c -- the list type: one pack while small, a quicklist (a doubly
 * linked chain of packs) once it outgrows a node (see list.h).
 *
 * Every operation is written once, against a quicklist. A listpack-encoded
 * list is handed to that code as a "view": a quicklist and its one node
 * built on the stack around the list's pack. A view never adds, splits,
 * merges or frees a node, and takes every insert into its one node, so
 * before an insert could overflow the node the list is converted to a
 * real quicklist first (list_grow_check), exactly where Valkey converts.
 *
 * Compression (list-compress-depth d > 0): the d nodes at either end stay
 * raw and the inner nodes are kept LZF-compressed (liblzf) when that pays
 * (see ql_compress). An operation that needs a compressed node's entries
 * decompresses it through ql_raw, which queues the node ("pending"); every
 * API call ends (and starts) with ql_settle, which compresses the queued
 * inner nodes again, so the depth applies as nodes are touched, as in
 * Valkey, never by rewriting a whole list. Reads decompress too: a node an
 * iterator leaves is compressed again at once, the node a list_index read
 * stays raw until the list is next used (its values stay valid). */
#include "types/list.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/strconv.h"
#include "keyspace/db.h"

#include <assert.h>
#include <lzf.h>
#include <stdint.h>
#include <string.h>

/* A compressed node's pack: its raw size and entry count (so counting and
 * the fill checks need no decompression), then the LZF bytes. */
typedef struct ql_lzf {
    uint32_t raw;
    uint32_t count;
    uint32_t sz;
    unsigned char data[];
} ql_lzf;

typedef struct ql_node {
    struct ql_node *prev, *next;
    pack *p;     /* the entries; NULL while compressed */
    ql_lzf *z;   /* the compressed entries; NULL while raw */
    int plain;   /* one element too big for a node: never extended or merged */
    int pending; /* queued for ql_settle (see the top of this file) */
} ql_node;

typedef struct quicklist {
    ql_node *head, *tail;
    size_t count;   /* elements */
    size_t len;     /* nodes */
    int view;       /* a listpack seen as one node (see the top of this file) */
    int reshaped;   /* nodes were added or removed since the last ql_settle */
    ql_node **pend; /* the pending nodes */
    size_t npend, pend_cap;
} quicklist;

/* Under a count limit (positive list-max-listpack-size) a node still never
 * passes this many bytes, as in Valkey. */
#define QL_SIZE_SAFETY_LIMIT 8192
/* Bytes of a pack's header, counted once when two nodes merge. */
#define QL_PACK_HEADER 8
/* As Valkey: a node under this many bytes is not worth compressing, nor is
 * one whose compressed form saves fewer than QL_MIN_COMPRESS_GAIN bytes. */
#define QL_MIN_COMPRESS_BYTES 48
#define QL_MIN_COMPRESS_GAIN 8
/* Positions past the depth at each end that a reshape looks at: one
 * operation adds at most two nodes at once (a split and the new node), so
 * a raw end node can land this far inside. */
#define QL_BOUNDARY_SPAN 2

static const size_t ql_size_levels[] = {4096, 8192, 16384, 32768, 65536};
/* DEBUG QUICKLIST-PACKED-THRESHOLD (a test knob, as Valkey's); 0: off. */
static unsigned long long packed_threshold;

/* ---- node limits ---- */

static int ql_fill(void) {
    const db_options *o = db_opts();
    return o ? o->types.list_max_listpack_size : -2;
}

static size_t ql_depth(void) {
    const db_options *o = db_opts();
    return o && o->types.list_compress_depth > 0 ? (size_t)o->types.list_compress_depth : 0;
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
    return n->p ? pack_count(n->p) : n->z->count;
}

/* The node's bytes uncompressed (the fill checks). */
static size_t node_bytes(const ql_node *n) {
    return n->p ? pack_bytes(n->p) : n->z->raw;
}

static ql_node *ql_node_new(pack *p, int plain) {
    ql_node *n = km_alloc(sizeof(*n));
    *n = (ql_node){.p = p ? p : pack_new(), .plain = plain};
    return n;
}

/* ---- compression ---- */

/* Without a depth nothing is compressed again, so nothing is queued (a
 * node compressed under an earlier depth stays raw once read). */
static void ql_pend(quicklist *ql, ql_node *n) {
    if (n->pending || ql->view || !ql_depth()) return;
    if (ql->npend == ql->pend_cap) {
        ql->pend_cap = ql->pend_cap ? ql->pend_cap * 2 : 4;
        ql->pend = km_realloc(ql->pend, ql->pend_cap * sizeof(*ql->pend));
    }
    ql->pend[ql->npend++] = n;
    n->pending = 1;
}

static void ql_unpend(quicklist *ql, ql_node *n) {
    if (!n->pending) return;
    for (size_t i = 0; i < ql->npend; i++)
        if (ql->pend[i] == n) {
            ql->pend[i] = ql->pend[--ql->npend];
            break;
        }
    n->pending = 0;
}

/* The LZF form of a pack of raw bytes when it qualifies (big enough, and
 * the saving worth it), else NULL. */
static ql_lzf *ql_lzf_of(const pack *p) {
    size_t raw = pack_bytes(p);
    if (raw < QL_MIN_COMPRESS_BYTES || raw > UINT32_MAX) return NULL;
    /* Output room below raw - gain: lzf_compress gives up (0) past it. */
    size_t room = raw - QL_MIN_COMPRESS_GAIN - 1;
    ql_lzf *z = km_alloc(sizeof(*z) + room);
    unsigned sz = lzf_compress(p, (unsigned)raw, z->data, (unsigned)room);
    if (sz == 0) {
        km_free(z);
        return NULL;
    }
    z = km_realloc(z, sizeof(*z) + sz);
    z->raw = (uint32_t)raw;
    z->count = (uint32_t)pack_count(p);
    z->sz = sz;
    return z;
}

static void ql_compress(ql_node *n) {
    if (!n->p) return;
    ql_lzf *z = ql_lzf_of(n->p);
    if (!z) return;
    pack_free(n->p);
    n->p = NULL;
    n->z = z;
}

static void ql_decompress(ql_node *n) {
    if (n->p) return;
    /* A pack is one allocation of pack_bytes bytes freed by pack_free
     * (km_free): the decompressed bytes are the pack itself. */
    pack *p = km_alloc(n->z->raw);
    unsigned got = lzf_decompress(n->z->data, n->z->sz, p, n->z->raw);
    assert(got == n->z->raw);
    km_free(n->z);
    n->z = NULL;
    n->p = p;
}

/* The node's pack for use: decompressed when it was compressed. A node
 * about to be modified (write) is queued even when raw, so that its new
 * bytes get their chance of compression; a read queues it only when it
 * had to decompress it. */
static pack *ql_raw(quicklist *ql, ql_node *n, int write) {
    if (n->z) {
        ql_decompress(n);
        ql_pend(ql, n);
    } else if (write) {
        ql_pend(ql, n);
    }
    return n->p;
}

/* Links n after prev (NULL: at the head). */
static void ql_link(quicklist *ql, ql_node *prev, ql_node *n);

/* A new node of an operation: linked and queued. */
static void ql_add(quicklist *ql, ql_node *prev, ql_node *n) {
    ql_link(ql, prev, n);
    ql_pend(ql, n);
}

/* Walks up to k nodes from one end keeping them raw; returns the node
 * after them. */
static ql_node *ql_keep_raw(quicklist *ql, ql_node *n, size_t k, int forward) {
    for (; n && k; k--, n = forward ? n->next : n->prev) {
        ql_unpend(ql, n);
        ql_decompress(n);
    }
    return n;
}

/* Applies the compress depth to what the last operation touched: the end
 * nodes raw, the queued inner ones compressed, and after a reshape the
 * nodes just inside the depth (an end node pushed inwards). */
static void ql_settle(quicklist *ql) {
    if (ql->view) return;
    /* The head and tail need no walk to be known as ends. */
    if (ql->head) ql_unpend(ql, ql->head);
    if (ql->tail) ql_unpend(ql, ql->tail);
    if (!ql->npend && !ql->reshaped) return;
    size_t depth = ql_depth();
    ql_node *f = ql_keep_raw(ql, ql->head, depth, 1);
    ql_node *r = ql_keep_raw(ql, ql->tail, depth, 0);
    /* What is still queued lies deeper than depth from both ends. */
    for (size_t i = 0; i < ql->npend; i++) {
        ql->pend[i]->pending = 0;
        if (depth) ql_compress(ql->pend[i]);
    }
    ql->npend = 0;
    if (depth && ql->reshaped && ql->len > 2 * depth) {
        size_t inner = ql->len - 2 * depth;
        for (size_t i = 0; i < QL_BOUNDARY_SPAN && i < inner; i++, f = f->next, r = r->prev) {
            ql_compress(f);
            ql_compress(r);
        }
    }
    ql->reshaped = 0;
}

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
    ql->reshaped = 1;
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
    ql->reshaped = 1;
    ql_unpend(ql, n);
    if (n->p) pack_free(n->p);
    km_free(n->z);
    km_free(n);
}

static int ql_allow_insert(const ql_node *n, int fill, const char *s, size_t len) {
    if (!n || n->plain || ql_is_large(fill, len)) return 0;
    return !ql_exceeds(fill, node_bytes(n) + pack_entry_size(s, len), node_count(n) + 1);
}

/* Merges a's next node into a when both fit one node; 1 if merged. */
static int ql_try_merge(quicklist *ql, ql_node *a, int fill) {
    if (ql->view || !a || !a->next) return 0;
    ql_node *b = a->next;
    if (a->plain || b->plain) return 0;
    if (ql_exceeds(fill, node_bytes(a) + node_bytes(b) - QL_PACK_HEADER,
                   node_count(a) + node_count(b)))
        return 0;
    ql_raw(ql, b, 0);
    a->p = pack_merge(ql_raw(ql, a, 1), b->p);
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
    ql_raw(ql, n, 1);
    for (size_t q = pos; q; q = pack_next(n->p, q)) {
        pack_val v;
        pack_get(n->p, q, &v);
        m->p = v.s ? pack_append(m->p, (const char *)v.s, v.len) : pack_append_int(m->p, v.v);
        moved++;
    }
    n->p = pack_delete(n->p, &pos, moved);
    ql_add(ql, n, m);
}

/* ---- operations on a quicklist (or a view) ---- */

static void ql_push(quicklist *ql, int where, const char *s, size_t len, int fill) {
    ql_node *n = where == LIST_HEAD ? ql->head : ql->tail;
    if (!ql->view && !ql_allow_insert(n, fill, s, len)) {
        n = ql_node_new(NULL, ql_is_large(fill, len));
        ql_add(ql, where == LIST_HEAD ? NULL : ql->tail, n);
    }
    pack *p = ql_raw(ql, n, 1);
    n->p = where == LIST_HEAD ? pack_prepend(p, s, len) : pack_append(p, s, len);
    ql->count++;
}

/* Inserts s before the entry at pos of node n (pos 0: at n's end). A full
 * node passes the element to the neighbour it borders, or gets a new node
 * beside it, or is split at pos. */
static void ql_insert_at(quicklist *ql, ql_node *n, size_t pos, const char *s, size_t len,
                         int fill) {
    ql->count++;
    if (ql->view || ql_allow_insert(n, fill, s, len)) {
        n->p = pack_insert(ql_raw(ql, n, 1), &pos, s, len);
        return;
    }
    int large = ql_is_large(fill, len);
    ql_node *after; /* the new node goes after this one (NULL: at the head) */
    if (pos == 0) {
        if (!large && ql_allow_insert(n->next, fill, s, len)) {
            n->next->p = pack_prepend(ql_raw(ql, n->next, 1), s, len);
            return;
        }
        after = n;
    } else if (pos == pack_first(ql_raw(ql, n, 0))) {
        if (!large && ql_allow_insert(n->prev, fill, s, len)) {
            n->prev->p = pack_append(ql_raw(ql, n->prev, 1), s, len);
            return;
        }
        after = n->prev;
    } else {
        ql_split(ql, n, pos);
        after = n;
    }
    ql_node *m = ql_node_new(NULL, large);
    m->p = pack_append(m->p, s, len);
    ql_add(ql, after, m);
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
            node->p = pack_delete_range(ql_raw(ql, node, 1), (long long)off, k);
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
        size_t pos = pack_first(ql_raw(ql, n, 0));
        while (pos && (!want || removed < want)) {
            if (pack_eq(n->p, pos, s, len)) {
                n->p = pack_delete(n->p, &pos, 1);
                removed++;
            } else {
                pos = pack_next(n->p, pos);
            }
        }
        ql->count -= removed - before;
        if (removed != before) {
            ql_pend(ql, n);
            ql_after_removal(ql, n, 1, fill);
        }
        n = next;
    }
    return removed;
}

static size_t ql_remove_backward(quicklist *ql, const char *s, size_t len, size_t want, int fill) {
    size_t removed = 0;
    for (ql_node *n = ql->tail; n && removed < want;) {
        ql_node *prev = n->prev;
        size_t before = removed;
        size_t pos = pack_last(ql_raw(ql, n, 0));
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
        if (removed != before) {
            ql_pend(ql, n);
            ql_after_removal(ql, n, 0, fill);
        }
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

/* The list as a quicklist: its own (settled: a node an earlier read left
 * raw is compressed again), or a view built in *view and *vnode around its
 * pack; ql_done settles the quicklist or stores the view's pack back. */
static quicklist *ql_of(kobj *o, quicklist *view, ql_node *vnode) {
    if (o->encoding == OBJ_ENC_QUICKLIST) {
        quicklist *ql = (quicklist *)o->v.ptr;
        ql_settle(ql);
        return ql;
    }
    *vnode = (ql_node){.p = (pack *)o->v.ptr};
    *view = (quicklist){
        .head = vnode, .tail = vnode, .count = pack_count(vnode->p), .len = 1, .view = 1};
    return view;
}

static void ql_done(kobj *o, quicklist *ql) {
    if (ql->view)
        o->v.ptr = (char *)ql->head->p;
    else
        ql_settle(ql);
}

/* A read of a list settles it first, as a write does: the list's memory is
 * a cache of its elements that reads may reshape, never change. */
static quicklist *ql_for_read(const kobj *o) {
    quicklist *ql = (quicklist *)o->v.ptr;
    ql_settle(ql);
    return ql;
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
    if (node_bytes(ql->head) > ql_size_limit(fill) / 2 || ql->count > ql_count_limit(fill) / 2)
        return;
    ql_decompress(ql->head);
    o->v.ptr = (char *)ql->head->p;
    o->encoding = OBJ_ENC_LISTPACK;
    km_free(ql->head);
    km_free(ql->pend);
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
    size_t pos = pack_seek(ql_raw(ql, n, 1), (long long)off);
    int large = ql_is_large(fill, len);
    int fits = !n->plain && !large &&
               !ql_exceeds(fill, node_bytes(n) - ql_entry_size(n->p, pos) + pack_entry_size(s, len),
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
        size_t first = pack_first(ql_raw(ql, n, 0));
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
    it->ql = NULL;
    it->pos = 0;
    if (index < 0 || (size_t)index >= list_len(o)) return;
    if (o->encoding == OBJ_ENC_LISTPACK) {
        it->p = (const pack *)o->v.ptr;
        it->pos = pack_seek(it->p, index);
        return;
    }
    size_t off;
    quicklist *ql = ql_for_read(o);
    ql_node *n = ql_locate(ql, (size_t)index, &off);
    it->ql = ql;
    it->node = n;
    it->p = ql_raw(ql, n, 0);
    it->pos = pack_seek(it->p, (long long)off);
}

/* An iterator leaves node n: compressed again when the walk decompressed
 * it (it is an inner node: the list has not changed since it settled). */
static void ql_iter_leave(quicklist *ql, ql_node *n) {
    if (!n->pending || !ql_depth()) return;
    ql_unpend(ql, n);
    ql_compress(n);
}

int list_iter_next(list_iter *it, pack_val *out) {
    while (!it->pos) {
        ql_node *n = (ql_node *)it->node;
        if (!n) return 0;
        quicklist *ql = (quicklist *)it->ql;
        ql_iter_leave(ql, n);
        n = it->dir == LIST_TAIL ? n->next : n->prev;
        it->node = n;
        if (!n) return 0;
        it->p = ql_raw(ql, n, 0);
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
    const quicklist *ql = ql_for_read(o);
    size_t count = 0, nodes = 0;
    const ql_node *prev = NULL;
    for (const ql_node *n = ql->head; n; prev = n, n = n->next) {
        size_t k = node_count(n);
        if (n->prev != prev || k == 0 || (n->plain && k != 1)) return 0;
        if (!n->plain && k > 1 && ql_exceeds(fill, node_bytes(n), k)) return 0;
        if (!n->p == !n->z || n->pending) return 0;
        count += k;
        nodes++;
    }
    return prev == ql->tail && count == ql->count && nodes == ql->len && ql->npend == 0;
}

int list_verify_compression(const kobj *o, size_t depth) {
    if (o->encoding == OBJ_ENC_LISTPACK) return 1;
    quicklist *ql = ql_for_read(o);
    size_t i = 0;
    for (const ql_node *n = ql->head; n; n = n->next, i++) {
        int end = i < depth || i >= ql->len - depth;
        if (end || !depth) {
            if (n->z) return 0;
        } else if (n->p) {
            ql_lzf *z = ql_lzf_of(n->p);
            km_free(z);
            if (z) return 0;
        }
    }
    return 1;
}

int list_quicklist_info(const kobj *o, list_ql_info *out) {
    if (o->encoding != OBJ_ENC_QUICKLIST) return 0;
    const quicklist *ql = (const quicklist *)o->v.ptr;
    *out = (list_ql_info){.nodes = ql->len, .count = ql->count};
    for (const ql_node *n = ql->head; n; n = n->next) {
        out->raw_bytes += node_bytes(n);
        out->compressed_nodes += n->z != NULL;
    }
    return 1;
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
    km_free(ql->pend);
    km_free(ql);
}

/* A quicklist's nodes are estimated from the first `samples` of them, as
 * Valkey does: MEMORY USAGE, eviction and lazy free must not walk a long
 * list. A compressed node counts its compressed bytes. */
static size_t list_mem_usage(const kobj *o, size_t samples) {
    if (o->encoding == OBJ_ENC_LISTPACK) return pack_bytes((const pack *)o->v.ptr);
    const quicklist *ql = (const quicklist *)o->v.ptr;
    size_t bytes = 0, seen = 0;
    for (const ql_node *n = ql->head; n && seen < samples; n = n->next, seen++)
        bytes += km_usable(n) + (n->p ? pack_bytes(n->p) : sizeof(*n->z) + n->z->sz);
    return km_usable(ql) + (seen ? bytes * ql->len / seen : 0);
}

static pack *pack_dup(const pack *p) {
    return pack_merge(pack_new(), p);
}

static kobj *list_copy(const kobj *o) {
    if (o->encoding == OBJ_ENC_LISTPACK)
        return obj_new_aggregate(OBJ_LIST, OBJ_ENC_LISTPACK, pack_dup((const pack *)o->v.ptr));
    /* Settled first, the source's nodes are as the depth wants them: the
     * copy takes each as it is, compressed or not. */
    const quicklist *src = ql_for_read(o);
    quicklist *dst = ql_new();
    for (const ql_node *n = src->head; n; n = n->next) {
        ql_node *m = ql_node_new(n->p ? pack_dup(n->p) : NULL, n->plain);
        if (n->z) {
            pack_free(m->p);
            m->p = NULL;
            size_t zb = sizeof(*n->z) + n->z->sz;
            m->z = km_alloc(zb);
            memcpy(m->z, n->z, zb);
        }
        ql_link(dst, dst->tail, m);
    }
    dst->count = src->count;
    dst->reshaped = 0;
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
