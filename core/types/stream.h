/* stream.h -- the stream value: an append-only log of entries, each an ID
 * (milliseconds-sequence, two unsigned 64-bit numbers, strictly
 * increasing) and an even list of field, value, field, value..., plus the
 * stream's consumer groups (types/stream_cgroup.h).
 *
 * This header is the contract between the entry storage (stream.c: the
 * layout of the entries, appending, ranges, deletion, trimming) and the
 * consumer groups (stream_cgroup.c), which see the entries only through
 * the iterator and the lookups below. The layout is Keel's own (see
 * stream.c); nothing outside stream.c knows it. OBJECT ENCODING answers
 * "stream", as Valkey.
 *
 * Metadata kept as Valkey keeps it, because the groups' lag and
 * entries-read accounting and XINFO depend on it:
 *   - last_id: the greatest ID ever added (or set by XSETID), even when
 *     that entry was deleted since;
 *   - entries_added: every entry ever added (XSETID ENTRIESADDED sets it);
 *   - max_deleted_id: the greatest ID deleted by XDEL (trimming leaves it
 *     alone, as Valkey's; XSETID MAXDELETEDID sets it);
 *   - first_id: the first live entry's ID (0-0 when empty).
 *
 * Threads: main thread (a value no key holds may be freed on the lazy-free
 * thread: free_value touches only what the value owns). */
#ifndef KEEL_STREAM_H
#define KEEL_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "ds/pack.h"
#include "keyspace/object.h"

typedef struct stream_id {
    uint64_t ms;
    uint64_t seq;
} stream_id;

#define STREAM_ID_MIN ((stream_id){0, 0})
#define STREAM_ID_MAX ((stream_id){UINT64_MAX, UINT64_MAX})
/* Room stream_id_format needs: two 20-digit numbers, '-' and the NUL. */
#define STREAM_ID_STR_MAX 42

/* <0, 0, >0 as a is before, equal to, after b. */
static inline int stream_id_cmp(stream_id a, stream_id b) {
    if (a.ms != b.ms) return a.ms < b.ms ? -1 : 1;
    if (a.seq != b.seq) return a.seq < b.seq ? -1 : 1;
    return 0;
}

/* The next and previous IDs; K_ERR (id unchanged) at the ends, so that an
 * exclusive range bound past the end is refused, as Valkey. */
int stream_id_incr(stream_id *id);
int stream_id_decr(stream_id *id);

/* Parses "ms-seq" or "ms" (then seq = missing_seq) strictly, as Valkey's
 * streamParseID: digits only, each part fits u64. "-" and "+" are the
 * smallest and the greatest ID when allow_minmax. *seq_given says whether
 * the text had a sequence part (XADD's "ms-*" is parsed by the commands,
 * which know '*'). K_OK or K_ERR; the caller replies Valkey's error
 * ("ERR Invalid stream ID specified as stream command argument"). */
int stream_id_parse(const char *s, size_t len, uint64_t missing_seq, int allow_minmax,
                    stream_id *out, int *seq_given);
/* Writes "ms-seq" and a NUL into buf (STREAM_ID_STR_MAX bytes); returns
 * the length. */
size_t stream_id_format(char *buf, stream_id id);

/* Registers the type's operations (types_setup). */
void stream_type_setup(void);

/* A new empty stream, no groups (refcount 1). */
kobj *stream_create(void);

/* ---- metadata ---- */
uint64_t stream_len(const kobj *o);
stream_id stream_last_id(const kobj *o);
/* 0-0 when empty. Fills a cache inside the value after a deletion (the
 * value is logically unchanged; main thread only, as every call here). */
stream_id stream_first_id(const kobj *o);
stream_id stream_max_deleted_id(const kobj *o);
uint64_t stream_entries_added(const kobj *o);
/* The storage's node count (XINFO STREAM's radix-tree-keys and
 * radix-tree-nodes report it: Keel has no radix tree, and says so in
 * docs/commands.md). */
uint64_t stream_node_count(const kobj *o);

/* ---- reading entries ---- */

/* Walks the entries with start <= ID <= end, forwards or (rev) backwards.
 * The iterator borrows the value: no change to it while the walk runs,
 * except stream_iter_delete of the current entry. The layout fields are
 * the storage's; the size is fixed so that iterators live on the stack. */
typedef struct stream_iter {
    const kobj *o;
    stream_id start, end;
    int rev;
    uint64_t opaque[16];
} stream_iter;

void stream_iter_start(stream_iter *it, const kobj *o, stream_id start, stream_id end, int rev);
/* The next entry: 1 with its ID and number of field-value pairs, or 0 at
 * the end of the range. */
int stream_iter_next(stream_iter *it, stream_id *id, size_t *npairs);
/* The current entry's next field and value (npairs calls); each points
 * into the value (a pack_val: bytes, or an integer when s is NULL) and is
 * valid until the next stream_iter_* call. */
void stream_iter_pair(stream_iter *it, pack_val *field, pack_val *value);
/* Deletes the current entry (XDEL, XAUTOCLAIM never does: groups only
 * read); the walk goes on after it. */
void stream_iter_delete(stream_iter *it);
void stream_iter_stop(stream_iter *it);

/* 1 when an entry with this ID exists (XCLAIM, XAUTOCLAIM). */
int stream_has_entry(const kobj *o, stream_id id);

/* ---- the consumer groups' slot ----
 *
 * The groups are a separate unit (types/stream_cgroup.c) that stores its
 * state in the stream's slot and registers how the storage frees,
 * measures and copies it, so stream.c never knows a group. */
typedef struct stream_cgroup_ops {
    void (*free_groups)(void *groups);
    size_t (*mem_usage)(const void *groups, size_t samples);
    void *(*copy)(const void *groups);
    size_t (*free_effort)(const void *groups);
} stream_cgroup_ops;

/* Called once at types_setup, before any stream exists; ops is borrowed
 * for the server's life. */
void stream_set_cgroup_ops(const stream_cgroup_ops *ops);
/* The stream's groups (NULL while it has none), and its slot to set. */
void *stream_groups(const kobj *o);
void stream_set_groups(kobj *o, void *groups);

/* ---- changing the stream (stream.c's side: the commands' entry points
 * for XADD, XDEL, XTRIM and XSETID) ---- */

/* The last live entry's ID (XSETID's and XREAD's "top item", which may be
 * before last_id when the last entries were deleted); 0-0 when empty. */
stream_id stream_last_live_id(const kobj *o);

/* A byte string of a new entry (the commands' arguments). */
typedef struct stream_str {
    const char *ptr;
    size_t len;
} stream_str;

/* The most bytes an entry's fields and values may take together (Valkey's
 * STREAM_LISTPACK_MAX_SIZE): XADD answers "Elements are too large". */
#define STREAM_ELEMENTS_MAX ((size_t)1 << 30)

/* What XADD appends: elems[0..2*npairs) are field, value, ...; the ID is
 * the explicit one (id_given; its seq when seq_given, else the next free
 * one at id.ms, as "ms-*") or the next after now_ms (the command's time). */
typedef struct stream_add {
    const stream_str *elems;
    size_t npairs;
    stream_id id;
    int id_given;
    int seq_given;
    uint64_t now_ms;
} stream_add;

/* Appends the entry and sets *added to its ID (last_id, entries_added and
 * the length follow). K_ERR, nothing changed, when the ID would not be
 * greater than last_id ("equal or smaller than the target stream top
 * item"), or with *too_large when the elements exceed
 * STREAM_ELEMENTS_MAX. */
int stream_append(kobj *o, const stream_add *a, stream_id *added, int *too_large);

typedef enum { STREAM_TRIM_NONE, STREAM_TRIM_MAXLEN, STREAM_TRIM_MINID } stream_trim_strategy;

/* XADD's and XTRIM's trimming: MAXLEN keeps the newest maxlen entries,
 * MINID removes the entries before minid. approx (~) removes whole nodes
 * only and stops at the first node it cannot remove; limit (0: none)
 * caps the entries removed, whole nodes only, as Valkey. */
typedef struct stream_trim_args {
    stream_trim_strategy strategy;
    int approx;
    uint64_t maxlen;
    stream_id minid;
    uint64_t limit;
} stream_trim_args;

/* Trims as t says; returns the entries removed. As Valkey's, trimming
 * leaves max_deleted_id alone and an emptied stream exists on. */
uint64_t stream_trim(kobj *o, const stream_trim_args *t);
/* The LIMIT `~` trimming has by default: 100 * stream-node-max-entries,
 * within 1..1000000 (10000 when that directive is 0), as Valkey. */
uint64_t stream_approx_limit(void);

/* XDEL of one ID: 1 if the entry existed (max_deleted_id follows), else 0. */
int stream_delete(kobj *o, stream_id id);

/* XSETID's effect, checked by the command: last_id, and entries_added and
 * max_deleted_id when not NULL. */
void stream_set_meta(kobj *o, stream_id last_id, const uint64_t *entries_added,
                     const stream_id *max_deleted_id);

#endif
