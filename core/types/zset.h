/* zset.h -- the sorted set value: members ordered by score, then by their
 * bytes, each member once.
 *
 * Two encodings, as in Valkey 8.0.1 (OBJECT ENCODING names them):
 *   - "listpack": one pack (ds/pack.h) of member, score, member, score...
 *     kept in order; scores are written as double_to_str text (an integral
 *     score becomes a pack integer). Used while the set has at most
 *     zset-max-listpack-entries members of at most zset-max-listpack-value
 *     bytes each.
 *   - "skiplist": a skiplist with span counts (rank lookups in O(log n))
 *     and a hash table from member to node (ZSCORE in O(1)); one
 *     allocation per member holds its node, score and bytes.
 * A set converts to a skiplist when an add passes a threshold; deletes
 * never convert back. Only the store commands (ZUNIONSTORE and friends)
 * pick the compact encoding for a result that fits, as Valkey does.
 *
 * The commands (commands/cmd_zset.c) go through this header only; no
 * encoding shows through it. Members handed out (zset_elem) point into
 * the value and are valid until it is next modified.
 *
 * Threads: main thread (a value no key holds may be freed elsewhere). */
#ifndef KEEL_ZSET_H
#define KEEL_ZSET_H

#include <stddef.h>

#include "keyspace/object.h"

/* zset_add's input flags (ZADD's options). */
#define ZSET_IN_INCR (1 << 0)
#define ZSET_IN_NX (1 << 1)
#define ZSET_IN_XX (1 << 2)
#define ZSET_IN_GT (1 << 3)
#define ZSET_IN_LT (1 << 4)
/* zset_add's results. */
#define ZSET_OUT_NOP (1 << 0)
#define ZSET_OUT_ADDED (1 << 1)
#define ZSET_OUT_UPDATED (1 << 2)
#define ZSET_OUT_NAN (1 << 3)

/* One member as handed out; buf holds the digits of a member the compact
 * encoding keeps as an integer. */
typedef struct zset_elem {
    const char *m;
    size_t len;
    double score;
    char buf[24];
} zset_elem;

typedef void (*zset_elem_fn)(void *priv, const zset_elem *e);

/* A score interval; min/max exclusive when minex/maxex. */
typedef struct zset_score_range {
    double min, max;
    int minex, maxex;
} zset_score_range;

/* One end of a lexicographic interval: "-", "+", "[member" or "(member". */
typedef enum zset_lex_kind { ZLEX_NEG_INF, ZLEX_POS_INF, ZLEX_INCL, ZLEX_EXCL } zset_lex_kind;
typedef struct zset_lex_bound {
    zset_lex_kind kind;
    const char *s; /* borrowed from the argument */
    size_t len;
} zset_lex_bound;
typedef struct zset_lex_range {
    zset_lex_bound min, max;
} zset_lex_range;

/* Registers the type's operations (types_setup). */
void zset_type_setup(void);

/* A new empty set for about size_hint members of up to maxlen bytes: the
 * encoding those would need (Valkey's zsetTypeCreate). */
kobj *zset_create(size_t size_hint, size_t maxlen);
/* A new empty set in the skiplist encoding whatever its size (the set
 * operations' scratch result, shrunk by zset_shrink_if_fits). */
kobj *zset_create_skiplist(void);
/* Converts a compact set that size_hint members of maxlen bytes would
 * overflow, before a bulk add (ZADD with many members). */
void zset_maybe_convert(kobj *o, size_t size_hint, size_t maxlen);
/* A store command's result: back to the compact encoding if it fits. */
void zset_shrink_if_fits(kobj *o);
int zset_is_compact(const kobj *o);

size_t zset_len(const kobj *o);
/* Adds or updates member m with the flags ZSET_IN_*; *out gets ZSET_OUT_*
 * and *newscore the member's score after the call when it was processed.
 * Returns 0 (and sets ZSET_OUT_NAN) when the score is or becomes NaN. */
int zset_add(kobj *o, double score, const char *m, size_t len, int in, int *out, double *newscore);
/* Removes m; 1 if it was there. */
int zset_del(kobj *o, const char *m, size_t len);
/* 1 and *score if m is a member. */
int zset_score(const kobj *o, const char *m, size_t len, double *score);
/* The 0-based rank of m (from the top with rev), -1 if absent; *score
 * when not NULL. */
long long zset_rank(const kobj *o, const char *m, size_t len, int rev, double *score);

/* Walks the ranks start..end (0-based, inclusive, already clamped) in
 * order, or from the top with rev (rank 0 being the highest). */
void zset_range_rank(const kobj *o, size_t start, size_t end, int rev, zset_elem_fn fn, void *priv);
/* Walks the members in r, skipping `offset` of them and handing out at
 * most `limit` (-1: all); returns how many were handed out. */
size_t zset_range_score(const kobj *o, const zset_score_range *r, int rev, long long offset,
                        long long limit, zset_elem_fn fn, void *priv);
size_t zset_range_lex(const kobj *o, const zset_lex_range *r, int rev, long long offset,
                      long long limit, zset_elem_fn fn, void *priv);
size_t zset_count_score(const kobj *o, const zset_score_range *r);
size_t zset_count_lex(const kobj *o, const zset_lex_range *r);

/* Deletes ranges; each returns how many went. Ranks as zset_range_rank. */
size_t zset_delete_rank(kobj *o, size_t start, size_t end);
size_t zset_delete_score(kobj *o, const zset_score_range *r);
size_t zset_delete_lex(kobj *o, const zset_lex_range *r);

/* Hands out and removes up to count members from the bottom (or the top
 * with max), each before it goes; returns how many. */
size_t zset_pop(kobj *o, int max, size_t count, zset_elem_fn fn, void *priv);
/* One member chosen uniformly at random (the set is not empty). */
void zset_random(const kobj *o, zset_elem *e);
/* The member at rank i (0-based, < len). */
void zset_at(const kobj *o, size_t i, zset_elem *e);

/* One ZSCAN step: hands out some members and returns the next cursor (0
 * when done). A compact set is handed out whole. */
unsigned long long zset_scan(const kobj *o, unsigned long long cursor, zset_elem_fn fn, void *priv);

/* Argument parsing shared with the commands: 1 if valid. A score bound is
 * "[(]double" as Valkey's zslParseRange; a lex bound as above. */
int zset_parse_score_range(const char *min, size_t minlen, const char *max, size_t maxlen,
                           zset_score_range *r);
int zset_parse_lex_range(const char *min, size_t minlen, const char *max, size_t maxlen,
                         zset_lex_range *r);

#endif
