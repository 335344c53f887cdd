/* zset_skiplist.h -- the skiplist encoding of sorted sets (private to
 * types/zset*.c): a skiplist ordered by (score, member) whose links count
 * the nodes they jump (spans), so a rank is found in O(log n), and a hash
 * table from member to node for O(1) score lookups. Each member is one
 * allocation: its node (score, back link, levels) followed by its bytes;
 * the hash table's entries are the nodes themselves. */
#ifndef KEEL_ZSET_SKIPLIST_H
#define KEEL_ZSET_SKIPLIST_H

#include <stddef.h>
#include <stdint.h>

#include "ds/hashtable.h"

#define ZSL_MAX_LEVEL 32

typedef struct zsl_node zsl_node;
struct zsl_node {
    double score;
    zsl_node *backward;
    uint32_t mlen;
    uint8_t nlevels;
    struct zsl_level {
        zsl_node *forward;
        size_t span;
    } level[];
    /* then the member's mlen bytes */
};

typedef struct zsl {
    zsl_node *header;
    zsl_node *tail;
    size_t length;
    int level;
    size_t node_bytes; /* allocated bytes of the member nodes (MEMORY USAGE) */
    hashtable *ht;     /* member -> node */
} zsl;

static inline const char *zsl_member(const zsl_node *n) {
    return (const char *)&n->level[n->nlevels];
}

zsl *zsl_create(void);
void zsl_free(zsl *z);
/* Inserts a member that is not there. */
zsl_node *zsl_insert(zsl *z, double score, const char *m, size_t len);
/* The node of member m, or NULL (hash lookup). */
zsl_node *zsl_find(const zsl *z, const char *m, size_t len);
/* Moves node n to a new score. */
void zsl_update_score(zsl *z, zsl_node *n, double score);
/* Removes and frees node n (and its hash entry). */
void zsl_delete_node(zsl *z, zsl_node *n);
/* The 1-based rank of node n. */
size_t zsl_rank(const zsl *z, const zsl_node *n);
/* The node at 1-based rank r (1..length). */
zsl_node *zsl_at_rank(const zsl *z, size_t r);
/* The first node after which `after` says no, walking down: the last node
 * for which before(priv, node) is 1 (the header when none), with its
 * 1-based rank in *rank (0 for the header). */
zsl_node *zsl_last_before(const zsl *z, int (*before)(const void *priv, const zsl_node *n),
                          const void *priv, size_t *rank);
/* Deletes the nodes of ranks start..end (1-based, inclusive). */
size_t zsl_delete_rank(zsl *z, size_t start, size_t end);

#endif
