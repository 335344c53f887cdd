/* idmap.c -- the B+tree behind ds/idmap.h.
 *
 * Leaves hold keys and values, inner nodes keys and children; both use one
 * node layout. In an inner node keys[i] (i >= 1) is a lower bound of the
 * keys under kids[i] and greater than every key under kids[i - 1]; keys[0]
 * is not read by the descent. A lower bound rather than the exact minimum,
 * so that deleting a subtree's smallest key never has to touch its
 * ancestors. A deletion that leaves a node below IDMAP_MIN entries borrows
 * from a sibling or merges with it. */
#include "ds/idmap.h"

#include "common/common.h"
#include "common/kmem.h"

#include <string.h>

#define IDMAP_FANOUT 32
#define IDMAP_MIN (IDMAP_FANOUT / 2)

struct idmap_node {
    int n;
    int leaf;
    idmap_node *prev, *next; /* leaves only: the neighbours in key order */
    idmap_key keys[IDMAP_FANOUT];
    union {
        void *vals[IDMAP_FANOUT];
        idmap_node *kids[IDMAP_FANOUT];
    } u;
};

void idmap_init(idmap *m) {
    m->root = NULL;
    m->count = 0;
    m->nodes = 0;
}

static void node_free(idmap_node *nd, void (*free_val)(void *)) {
    for (int i = 0; i < nd->n; i++) {
        if (!nd->leaf)
            node_free(nd->u.kids[i], free_val);
        else if (free_val)
            free_val(nd->u.vals[i]);
    }
    km_free(nd);
}

void idmap_clear(idmap *m, void (*free_val)(void *)) {
    if (m->root) node_free(m->root, free_val);
    idmap_init(m);
}

size_t idmap_mem_usage(const idmap *m) {
    return m->nodes * sizeof(idmap_node);
}

static idmap_node *node_new(idmap *m, int leaf) {
    idmap_node *nd = km_alloc(sizeof(*nd));
    nd->n = 0;
    nd->leaf = leaf;
    nd->prev = nd->next = NULL;
    m->nodes++;
    return nd;
}

static void node_drop(idmap *m, idmap_node *nd) {
    km_free(nd);
    m->nodes--;
}

/* In a leaf: the first position whose key is >= k. */
static int leaf_lower(const idmap_node *nd, idmap_key k) {
    int lo = 0, hi = nd->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (idmap_key_cmp(nd->keys[mid], k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* In an inner node: the child whose range holds k. */
static int inner_child(const idmap_node *nd, idmap_key k) {
    int lo = 1, hi = nd->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (idmap_key_cmp(nd->keys[mid], k) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

static idmap_node *find_leaf(const idmap *m, idmap_key k) {
    idmap_node *nd = m->root;
    while (nd && !nd->leaf)
        nd = nd->u.kids[inner_child(nd, k)];
    return nd;
}

void *idmap_find(const idmap *m, idmap_key k) {
    idmap_node *leaf = find_leaf(m, k);
    if (!leaf) return NULL;
    int pos = leaf_lower(leaf, k);
    if (pos < leaf->n && idmap_key_cmp(leaf->keys[pos], k) == 0) return leaf->u.vals[pos];
    return NULL;
}

/* ---- insertion ---- */

/* Opens slot pos of nd (not full) and fills it. */
static void node_put(idmap_node *nd, int pos, idmap_key k, void *p) {
    memmove(&nd->keys[pos + 1], &nd->keys[pos], (size_t)(nd->n - pos) * sizeof(idmap_key));
    memmove(&nd->u.vals[pos + 1], &nd->u.vals[pos], (size_t)(nd->n - pos) * sizeof(void *));
    nd->keys[pos] = k;
    nd->u.vals[pos] = p;
    nd->n++;
}

/* Puts (k, p) at pos of the full node nd by moving its upper half to a new
 * right sibling, which is returned; *sep is the right one's first key. An
 * append (pos at the end) moves nothing: a map that grows at the end, as a
 * pending list does, keeps its nodes full. (A node below IDMAP_MIN is
 * harmless: deletions rebalance by the sizes they find.) */
static idmap_node *node_split_put(idmap *m, idmap_node *nd, int pos, idmap_key k, void *p,
                                  idmap_key *sep) {
    idmap_node *r = node_new(m, nd->leaf);
    int half = pos == IDMAP_FANOUT ? IDMAP_FANOUT : IDMAP_FANOUT / 2;
    memcpy(r->keys, &nd->keys[half], (size_t)(IDMAP_FANOUT - half) * sizeof(idmap_key));
    memcpy(r->u.vals, &nd->u.vals[half], (size_t)(IDMAP_FANOUT - half) * sizeof(void *));
    r->n = IDMAP_FANOUT - half;
    nd->n = half;
    if (pos < half)
        node_put(nd, pos, k, p);
    else
        node_put(r, pos - half, k, p);
    if (nd->leaf) {
        r->next = nd->next;
        r->prev = nd;
        if (nd->next) nd->next->prev = r;
        nd->next = r;
    }
    *sep = r->keys[0];
    return r;
}

/* Inserts under nd; returns a new right sibling of nd when nd split (with
 * its separator in *sep), else NULL. *dup when k was present. */
static idmap_node *insert_rec(idmap *m, idmap_node *nd, idmap_key k, void *val, int *dup,
                              idmap_key *sep) {
    if (nd->leaf) {
        int pos = leaf_lower(nd, k);
        if (pos < nd->n && idmap_key_cmp(nd->keys[pos], k) == 0) {
            *dup = 1;
            return NULL;
        }
        if (nd->n < IDMAP_FANOUT) {
            node_put(nd, pos, k, val);
            return NULL;
        }
        return node_split_put(m, nd, pos, k, val, sep);
    }
    int i = inner_child(nd, k);
    idmap_key child_sep;
    idmap_node *r = insert_rec(m, nd->u.kids[i], k, val, dup, &child_sep);
    if (!r) return NULL;
    if (nd->n < IDMAP_FANOUT) {
        node_put(nd, i + 1, child_sep, r);
        return NULL;
    }
    return node_split_put(m, nd, i + 1, child_sep, r, sep);
}

int idmap_insert(idmap *m, idmap_key k, void *val) {
    if (!m->root) m->root = node_new(m, 1);
    int dup = 0;
    idmap_key sep;
    idmap_node *r = insert_rec(m, m->root, k, val, &dup, &sep);
    if (dup) return K_ERR;
    if (r) {
        idmap_node *root = node_new(m, 0);
        root->keys[0] = m->root->keys[0];
        root->u.kids[0] = m->root;
        root->keys[1] = sep;
        root->u.kids[1] = r;
        root->n = 2;
        m->root = root;
    }
    m->count++;
    return K_OK;
}

/* ---- deletion ---- */

static void node_cut(idmap_node *nd, int pos) {
    memmove(&nd->keys[pos], &nd->keys[pos + 1], (size_t)(nd->n - pos - 1) * sizeof(idmap_key));
    memmove(&nd->u.vals[pos], &nd->u.vals[pos + 1], (size_t)(nd->n - pos - 1) * sizeof(void *));
    nd->n--;
}

/* Moves the first entry of parent's kids[i + 1] to the end of kids[i]. */
static void borrow_right(idmap_node *parent, int i) {
    idmap_node *l = parent->u.kids[i], *r = parent->u.kids[i + 1];
    /* In an inner node the moved child's lower bound is the separator. */
    idmap_key k = l->leaf ? r->keys[0] : parent->keys[i + 1];
    l->keys[l->n] = k;
    l->u.vals[l->n] = r->u.vals[0];
    l->n++;
    parent->keys[i + 1] = r->keys[1];
    node_cut(r, 0);
}

/* Moves the last entry of parent's kids[i - 1] to the front of kids[i]. */
static void borrow_left(idmap_node *parent, int i) {
    idmap_node *l = parent->u.kids[i - 1], *r = parent->u.kids[i];
    if (!r->leaf) r->keys[0] = parent->keys[i];
    node_put(r, 0, l->keys[l->n - 1], l->u.vals[l->n - 1]);
    parent->keys[i] = l->keys[l->n - 1];
    l->n--;
}

/* Appends parent's kids[i + 1] to kids[i] and drops it. */
static void merge_right(idmap *m, idmap_node *parent, int i) {
    idmap_node *l = parent->u.kids[i], *r = parent->u.kids[i + 1];
    if (!r->leaf) r->keys[0] = parent->keys[i + 1];
    memcpy(&l->keys[l->n], r->keys, (size_t)r->n * sizeof(idmap_key));
    memcpy(&l->u.vals[l->n], r->u.vals, (size_t)r->n * sizeof(void *));
    l->n += r->n;
    if (l->leaf) {
        l->next = r->next;
        if (r->next) r->next->prev = l;
    }
    node_cut(parent, i + 1);
    node_drop(m, r);
}

/* kids[i] of parent fell below IDMAP_MIN: refill it from a sibling. */
static void rebalance(idmap *m, idmap_node *parent, int i) {
    if (i > 0 && parent->u.kids[i - 1]->n > IDMAP_MIN)
        borrow_left(parent, i);
    else if (i + 1 < parent->n && parent->u.kids[i + 1]->n > IDMAP_MIN)
        borrow_right(parent, i);
    else if (i > 0)
        merge_right(m, parent, i - 1);
    else if (i + 1 < parent->n)
        merge_right(m, parent, i);
}

static void *delete_rec(idmap *m, idmap_node *nd, idmap_key k) {
    if (nd->leaf) {
        int pos = leaf_lower(nd, k);
        if (pos >= nd->n || idmap_key_cmp(nd->keys[pos], k) != 0) return NULL;
        void *val = nd->u.vals[pos];
        node_cut(nd, pos);
        return val;
    }
    int i = inner_child(nd, k);
    void *val = delete_rec(m, nd->u.kids[i], k);
    if (val && nd->u.kids[i]->n < IDMAP_MIN) rebalance(m, nd, i);
    return val;
}

void *idmap_delete(idmap *m, idmap_key k) {
    if (!m->root) return NULL;
    void *val = delete_rec(m, m->root, k);
    if (!val) return NULL;
    m->count--;
    idmap_node *root = m->root;
    if (root->leaf && root->n == 0) {
        node_drop(m, root);
        m->root = NULL;
    } else if (!root->leaf && root->n == 1) {
        m->root = root->u.kids[0];
        node_drop(m, root);
    }
    return val;
}

/* ---- iteration ---- */

static void iter_fix_forward(idmap_iter *it) {
    if (it->leaf && it->pos >= it->leaf->n) {
        it->leaf = it->leaf->next;
        it->pos = 0;
    }
}

static void iter_fix_backward(idmap_iter *it) {
    if (it->leaf && it->pos < 0) {
        it->leaf = it->leaf->prev;
        it->pos = it->leaf ? it->leaf->n - 1 : 0;
    }
}

void idmap_seek_ge(idmap_iter *it, const idmap *m, idmap_key k) {
    it->leaf = find_leaf(m, k);
    it->pos = it->leaf ? leaf_lower(it->leaf, k) : 0;
    iter_fix_forward(it);
}

void idmap_seek_le(idmap_iter *it, const idmap *m, idmap_key k) {
    it->leaf = find_leaf(m, k);
    if (!it->leaf) return;
    int pos = leaf_lower(it->leaf, k);
    if (pos < it->leaf->n && idmap_key_cmp(it->leaf->keys[pos], k) == 0)
        it->pos = pos;
    else
        it->pos = pos - 1;
    iter_fix_backward(it);
}

void idmap_seek_first(idmap_iter *it, const idmap *m) {
    idmap_node *nd = m->root;
    while (nd && !nd->leaf)
        nd = nd->u.kids[0];
    it->leaf = nd;
    it->pos = 0;
}

void idmap_seek_last(idmap_iter *it, const idmap *m) {
    idmap_node *nd = m->root;
    while (nd && !nd->leaf)
        nd = nd->u.kids[nd->n - 1];
    it->leaf = nd;
    it->pos = nd ? nd->n - 1 : 0;
}

idmap_key idmap_iter_key(const idmap_iter *it) {
    return it->leaf->keys[it->pos];
}

void *idmap_iter_val(const idmap_iter *it) {
    return it->leaf->u.vals[it->pos];
}

void idmap_iter_next(idmap_iter *it) {
    it->pos++;
    iter_fix_forward(it);
}

void idmap_iter_prev(idmap_iter *it) {
    it->pos--;
    iter_fix_backward(it);
}
