/* zset_skiplist.c -- the skiplist encoding of sorted sets: see
 * zset_skiplist.h. Levels are drawn with p = 1/4 up to 32, as Valkey's. */
#include "types/zset_skiplist.h"

#include "common/common.h"
#include "common/kmem.h"

#include <stdlib.h>
#include <string.h>

static const void *node_key(const void *entry, size_t *len) {
    const zsl_node *n = entry;
    *len = n->mlen;
    return zsl_member(n);
}

/* Nodes are freed by the skiplist walk, not by the table. */
static const hashtable_type zsl_ht_type = {.entry_key = node_key,
                                           .grow_fill = HASHTABLE_GROW_FILL_TIGHT};

static zsl_node *node_alloc(int levels, double score, const char *m, size_t len) {
    zsl_node *n = km_alloc(sizeof(zsl_node) + (size_t)levels * sizeof(struct zsl_level) + len);
    n->score = score;
    n->backward = NULL;
    n->mlen = (uint32_t)len;
    n->nlevels = (uint8_t)levels;
    for (int i = 0; i < levels; i++) {
        n->level[i].forward = NULL;
        n->level[i].span = 0;
    }
    if (len) memcpy((char *)zsl_member(n), m, len);
    return n;
}

zsl *zsl_create(void) {
    zsl *z = km_alloc(sizeof(*z));
    z->header = node_alloc(ZSL_MAX_LEVEL, 0, NULL, 0);
    z->tail = NULL;
    z->length = 0;
    z->level = 1;
    z->node_bytes = km_usable(z->header);
    z->ht = hashtable_create(&zsl_ht_type);
    return z;
}

void zsl_free(zsl *z) {
    zsl_node *n = z->header->level[0].forward;
    while (n) {
        zsl_node *next = n->level[0].forward;
        km_free(n);
        n = next;
    }
    km_free(z->header);
    hashtable_release(z->ht);
    km_free(z);
}

static int random_level(void) {
    int level = 1;
    while (level < ZSL_MAX_LEVEL && (rand() & 0xFFFF) < 0x4000)
        level++;
    return level;
}

/* Order of (score, member): <0 when node n sorts before (score, m). */
static int node_cmp(const zsl_node *n, double score, const char *m, size_t len) {
    if (n->score != score) return n->score < score ? -1 : 1;
    size_t min = n->mlen < len ? n->mlen : len;
    int c = memcmp(zsl_member(n), m, min);
    if (c) return c;
    return n->mlen < len ? -1 : (n->mlen > len ? 1 : 0);
}

/* Fills update[] with the last node before (score, m) on each level and
 * rank[] with their ranks. */
static void find_path(const zsl *z, double score, const char *m, size_t len, zsl_node **update,
                      size_t *rank) {
    zsl_node *x = z->header;
    for (int i = z->level - 1; i >= 0; i--) {
        rank[i] = i == z->level - 1 ? 0 : rank[i + 1];
        while (x->level[i].forward && node_cmp(x->level[i].forward, score, m, len) < 0) {
            rank[i] += x->level[i].span;
            x = x->level[i].forward;
        }
        update[i] = x;
    }
}

/* Links node n (its score and levels set) into place. */
static void link_node(zsl *z, zsl_node *n) {
    zsl_node *update[ZSL_MAX_LEVEL];
    size_t rank[ZSL_MAX_LEVEL];
    find_path(z, n->score, zsl_member(n), n->mlen, update, rank);
    int level = n->nlevels;
    if (level > z->level) {
        for (int i = z->level; i < level; i++) {
            rank[i] = 0;
            update[i] = z->header;
            update[i]->level[i].span = z->length;
        }
        z->level = level;
    }
    for (int i = 0; i < level; i++) {
        n->level[i].forward = update[i]->level[i].forward;
        update[i]->level[i].forward = n;
        n->level[i].span = update[i]->level[i].span - (rank[0] - rank[i]);
        update[i]->level[i].span = (rank[0] - rank[i]) + 1;
    }
    for (int i = level; i < z->level; i++)
        update[i]->level[i].span++;
    n->backward = update[0] == z->header ? NULL : update[0];
    if (n->level[0].forward)
        n->level[0].forward->backward = n;
    else
        z->tail = n;
    z->length++;
}

/* Unlinks node n given the path to it. */
static void unlink_node(zsl *z, zsl_node *n, zsl_node **update) {
    for (int i = 0; i < z->level; i++) {
        if (update[i]->level[i].forward == n) {
            update[i]->level[i].span += n->level[i].span - 1;
            update[i]->level[i].forward = n->level[i].forward;
        } else {
            update[i]->level[i].span--;
        }
    }
    if (n->level[0].forward)
        n->level[0].forward->backward = n->backward;
    else
        z->tail = n->backward;
    while (z->level > 1 && z->header->level[z->level - 1].forward == NULL)
        z->level--;
    z->length--;
}

static void unlink_found(zsl *z, zsl_node *n) {
    zsl_node *update[ZSL_MAX_LEVEL];
    size_t rank[ZSL_MAX_LEVEL];
    find_path(z, n->score, zsl_member(n), n->mlen, update, rank);
    unlink_node(z, n, update);
}

zsl_node *zsl_insert(zsl *z, double score, const char *m, size_t len) {
    zsl_node *n = node_alloc(random_level(), score, m, len);
    z->node_bytes += km_usable(n);
    link_node(z, n);
    hashtable_add(z->ht, n, NULL);
    return n;
}

zsl_node *zsl_find(const zsl *z, const char *m, size_t len) {
    return hashtable_find(z->ht, m, len);
}

/* The node keeps its allocation (and so its hash entry): it is unlinked
 * and linked again unless it stays between its neighbours. */
void zsl_update_score(zsl *z, zsl_node *n, double score) {
    zsl_node *prev = n->backward, *next = n->level[0].forward;
    const char *m = zsl_member(n);
    int after_prev = !prev || node_cmp(prev, score, m, n->mlen) < 0;
    int before_next = !next || node_cmp(next, score, m, n->mlen) > 0;
    if (after_prev && before_next) {
        n->score = score;
        return;
    }
    unlink_found(z, n);
    n->score = score;
    link_node(z, n);
}

void zsl_delete_node(zsl *z, zsl_node *n) {
    unlink_found(z, n);
    hashtable_delete(z->ht, zsl_member(n), n->mlen, NULL);
    z->node_bytes -= km_usable(n);
    km_free(n);
}

size_t zsl_rank(const zsl *z, const zsl_node *n) {
    zsl_node *update[ZSL_MAX_LEVEL];
    size_t rank[ZSL_MAX_LEVEL];
    find_path(z, n->score, zsl_member(n), n->mlen, update, rank);
    return rank[0] + 1;
}

zsl_node *zsl_at_rank(const zsl *z, size_t r) {
    zsl_node *x = z->header;
    size_t traversed = 0;
    for (int i = z->level - 1; i >= 0; i--) {
        while (x->level[i].forward && traversed + x->level[i].span <= r) {
            traversed += x->level[i].span;
            x = x->level[i].forward;
        }
        if (traversed == r) return x;
    }
    return NULL;
}

zsl_node *zsl_last_before(const zsl *z, int (*before)(const void *priv, const zsl_node *n),
                          const void *priv, size_t *rank) {
    zsl_node *x = z->header;
    size_t r = 0;
    for (int i = z->level - 1; i >= 0; i--) {
        while (x->level[i].forward && before(priv, x->level[i].forward)) {
            r += x->level[i].span;
            x = x->level[i].forward;
        }
    }
    *rank = r;
    return x;
}

size_t zsl_delete_rank(zsl *z, size_t start, size_t end) {
    zsl_node *update[ZSL_MAX_LEVEL];
    zsl_node *x = z->header;
    size_t traversed = 0;
    for (int i = z->level - 1; i >= 0; i--) {
        while (x->level[i].forward && traversed + x->level[i].span < start) {
            traversed += x->level[i].span;
            x = x->level[i].forward;
        }
        update[i] = x;
    }
    traversed++;
    x = x->level[0].forward;
    size_t removed = 0;
    while (x && traversed <= end) {
        zsl_node *next = x->level[0].forward;
        unlink_node(z, x, update);
        hashtable_delete(z->ht, zsl_member(x), x->mlen, NULL);
        z->node_bytes -= km_usable(x);
        km_free(x);
        removed++;
        traversed++;
        x = next;
    }
    return removed;
}
