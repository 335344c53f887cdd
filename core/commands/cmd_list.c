/* cmd_list.c -- the list command family: pushes and pops at both ends,
 * indexes, ranges, LINSERT/LSET/LREM/LTRIM/LPOS, the moves between lists
 * (RPOPLPUSH, LMOVE, LMPOP) and their blocking forms (BLPOP, BRPOP,
 * BRPOPLPUSH, BLMOVE, BLMPOP), with Valkey 8.0.1's replies and errors.
 *
 * The values are types/list.h lists; this file never sees their nodes. A
 * list that becomes empty is deleted with its key. A blocking command that
 * finds nothing to serve waits through session/blocking.h, which runs it
 * again from the start when one of its keys changes. */
#include "commands/commands.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/strconv.h"
#include "keyspace/db.h"
#include "session/blocking.h"
#include "session/reply.h"
#include "types/list.h"

#include <limits.h>
#include <string.h>

/* ---- helpers ---- */

/* Looks key up; *out is its list or NULL. Replies WRONGTYPE and returns
 * 0 when it holds another type. Reads count keyspace hits and misses
 * (count 1), writes do not, as Valkey's lookupKeyRead/lookupKeyWrite. */
static int list_lookup(client *c, const karg *key, int count, kobj **out) {
    db_entry *e = db_lookup(c->db, key->ptr, key->len, count);
    if (e && db_entry_type(e) != OBJ_LIST) {
        reply_wrongtype(c);
        return 0;
    }
    *out = e ? db_entry_obj(e) : NULL;
    return 1;
}

static void reply_elem(client *c, const pack_val *v) {
    if (v->s)
        reply_bulk(c, (const char *)v->s, v->len);
    else
        reply_bulk_ll(c, v->v);
}

/* n elements from index start walking towards dir, as an array. */
static void reply_range(client *c, const kobj *o, long long start, long long n, int dir) {
    reply_array(c, n);
    list_iter it;
    list_iter_init(&it, o, start, dir);
    pack_val v;
    while (n-- > 0 && list_iter_next(&it, &v))
        reply_elem(c, &v);
}

/* After `changes` elements left key's list by `event` (lpop, ltrim...):
 * the key goes when the list is empty, announced as Valkey does with the
 * event and then `del`. */
static void list_removed(client *c, const karg *key, const kobj *o, long long changes,
                         const char *event) {
    collection_changed(c, key, list_len(o) == 0, changes, NOTIFY_LIST, event);
}

static const char *list_pop_event(int where) {
    return where == LIST_HEAD ? "lpop" : "rpop";
}

static const char *list_push_event(int where) {
    return where == LIST_HEAD ? "lpush" : "rpush";
}

/* Normalises an inclusive [start, end] range over len elements; 0 when
 * it is empty. */
static int list_clip_range(long long len, long long *start, long long *end) {
    if (*start < 0) *start += len;
    if (*end < 0) *end += len;
    if (*start < 0) *start = 0;
    if (*start > *end || *start >= len) return 0;
    if (*end >= len) *end = len - 1;
    return 1;
}

/* A copy of an element that outlives changes to its list (the moves). */
typedef struct elem_copy {
    const char *s;
    size_t len;
    char *heap;
    char small[64];
} elem_copy;

static void elem_copy_take(elem_copy *e, const pack_val *v) {
    e->heap = NULL;
    if (!v->s) {
        e->len = ll_to_str(e->small, v->v);
        e->s = e->small;
        return;
    }
    e->len = v->len;
    if (v->len <= sizeof(e->small)) {
        memcpy(e->small, v->s, v->len);
        e->s = e->small;
    } else {
        e->heap = km_alloc(v->len);
        memcpy(e->heap, v->s, v->len);
        e->s = e->heap;
    }
}

static void elem_copy_release(elem_copy *e) {
    km_free(e->heap);
}

/* LEFT or RIGHT; replies a syntax error and returns 0 otherwise. */
static int arg_to_where(client *c, const karg *a, int *where) {
    if (karg_eq(a, "left"))
        *where = LIST_HEAD;
    else if (karg_eq(a, "right"))
        *where = LIST_TAIL;
    else {
        reply_syntax_error(c);
        return 0;
    }
    return 1;
}

/* ---- pushes ---- */

static void list_push_args(kobj *o, int where, client *c, int from) {
    for (int j = from; j < c->argc; j++)
        list_push(o, where, c->argv[j].ptr, c->argv[j].len);
}

static void push_generic(client *c, int where, int only_existing) {
    const karg *key = &c->argv[1];
    kobj *o;
    if (!list_lookup(c, key, 0, &o)) return;
    if (!o) {
        if (only_existing) {
            reply_int(c, 0);
            return;
        }
        o = list_new();
        list_push_args(o, where, c, 2);
        db_add(c->db, key->ptr, key->len, o, c->argc - 2);
    } else {
        list_push_args(o, where, c, 2);
        db_signal_modified(c->db, key->ptr, key->len, c->argc - 2);
    }
    notify_key(c, NOTIFY_LIST, list_push_event(where), key);
    reply_int(c, (long long)list_len(o));
}

static void cmd_lpush(client *c) {
    push_generic(c, LIST_HEAD, 0);
}

static void cmd_rpush(client *c) {
    push_generic(c, LIST_TAIL, 0);
}

static void cmd_lpushx(client *c) {
    push_generic(c, LIST_HEAD, 1);
}

static void cmd_rpushx(client *c) {
    push_generic(c, LIST_TAIL, 1);
}

static void cmd_linsert(client *c) {
    int after;
    if (karg_eq(&c->argv[2], "after"))
        after = 1;
    else if (karg_eq(&c->argv[2], "before"))
        after = 0;
    else {
        reply_syntax_error(c);
        return;
    }
    kobj *o;
    if (!list_lookup(c, &c->argv[1], 0, &o)) return;
    if (!o) {
        reply_int(c, 0);
        return;
    }
    const karg *pivot = &c->argv[3], *elem = &c->argv[4];
    if (!list_insert(o, pivot->ptr, pivot->len, after, elem->ptr, elem->len)) {
        reply_int(c, -1);
        return;
    }
    db_signal_modified(c->db, c->argv[1].ptr, c->argv[1].len, 1);
    notify_key(c, NOTIFY_LIST, "linsert", &c->argv[1]);
    reply_int(c, (long long)list_len(o));
}

/* ---- reads ---- */

static void cmd_llen(client *c) {
    kobj *o;
    if (!list_lookup(c, &c->argv[1], 1, &o)) return;
    reply_int(c, o ? (long long)list_len(o) : 0);
}

static void cmd_lindex(client *c) {
    kobj *o;
    if (!list_lookup(c, &c->argv[1], 1, &o)) return;
    if (!o) {
        reply_null(c);
        return;
    }
    long long index;
    if (!arg_to_ll(c, &c->argv[2], &index)) return;
    if (index < 0) index += (long long)list_len(o);
    pack_val v;
    if (list_index(o, index, &v))
        reply_elem(c, &v);
    else
        reply_null(c);
}

static void cmd_lrange(client *c) {
    long long start, end;
    if (!arg_to_ll(c, &c->argv[2], &start) || !arg_to_ll(c, &c->argv[3], &end)) return;
    kobj *o;
    if (!list_lookup(c, &c->argv[1], 1, &o)) return;
    if (!o || !list_clip_range((long long)list_len(o), &start, &end)) {
        reply_array(c, 0);
        return;
    }
    reply_range(c, o, start, end - start + 1, LIST_TAIL);
}

static void cmd_lpos(client *c) {
    long long rank = 1, count = -1, maxlen = 0; /* count -1: no COUNT */
    for (int j = 3; j < c->argc; j++) {
        const karg *opt = &c->argv[j];
        int more = j + 1 < c->argc;
        if (more && karg_eq(opt, "rank")) {
            if (!arg_to_range(c, &c->argv[++j], -LLONG_MAX, LLONG_MAX, NULL, &rank)) return;
            if (rank == 0) {
                reply_error(c, "ERR RANK can't be zero: use 1 to start from the first match, 2 "
                               "from the second ... or use negative to start from the end of "
                               "the list");
                return;
            }
        } else if (more && karg_eq(opt, "count")) {
            if (!arg_to_range(c, &c->argv[++j], 0, LLONG_MAX, "ERR COUNT can't be negative",
                              &count))
                return;
        } else if (more && karg_eq(opt, "maxlen")) {
            if (!arg_to_range(c, &c->argv[++j], 0, LLONG_MAX, "ERR MAXLEN can't be negative",
                              &maxlen))
                return;
        } else {
            reply_syntax_error(c);
            return;
        }
    }
    int dir = rank < 0 ? LIST_HEAD : LIST_TAIL;
    if (rank < 0) rank = -rank;
    db_entry *e = db_lookup(c->db, c->argv[1].ptr, c->argv[1].len, 1);
    if (!e) {
        if (count != -1)
            reply_array(c, 0);
        else
            reply_null(c);
        return;
    }
    if (db_entry_type(e) != OBJ_LIST) {
        reply_wrongtype(c);
        return;
    }
    const kobj *o = db_entry_obj(e);
    long long len = (long long)list_len(o);
    reply_deferred h = count != -1 ? reply_deferred_array(c) : REPLY_DEFERRED_NONE;
    list_iter it;
    list_iter_init(&it, o, dir == LIST_HEAD ? len - 1 : 0, dir);
    pack_val v;
    long long scanned = 0, matches = 0, found = -1, emitted = 0;
    const karg *elem = &c->argv[2];
    while ((maxlen == 0 || scanned < maxlen) && list_iter_next(&it, &v)) {
        long long index = dir == LIST_TAIL ? scanned : len - scanned - 1;
        scanned++;
        if (!list_val_eq(&v, elem->ptr, elem->len) || ++matches < rank) continue;
        if (count == -1) {
            found = index;
            break;
        }
        reply_int(c, index);
        emitted++;
        if (count && emitted >= count) break;
    }
    if (count != -1)
        reply_set_deferred_len(c, h, emitted);
    else if (found >= 0)
        reply_int(c, found);
    else
        reply_null(c);
}

/* ---- writes in place ---- */

static void cmd_lset(client *c) {
    const karg *key = &c->argv[1];
    kobj *o;
    if (!list_lookup(c, key, 0, &o)) return;
    if (!o) {
        reply_error(c, "ERR no such key");
        return;
    }
    long long index;
    if (!arg_to_ll(c, &c->argv[2], &index)) return;
    if (index < 0) index += (long long)list_len(o);
    if (!list_set(o, index, c->argv[3].ptr, c->argv[3].len)) {
        reply_error(c, "ERR index out of range");
        return;
    }
    db_signal_modified(c->db, key->ptr, key->len, 1);
    notify_key(c, NOTIFY_LIST, "lset", key);
    reply_ok(c);
}

static void cmd_ltrim(client *c) {
    long long start, end;
    if (!arg_to_ll(c, &c->argv[2], &start) || !arg_to_ll(c, &c->argv[3], &end)) return;
    const karg *key = &c->argv[1];
    kobj *o;
    if (!list_lookup(c, key, 0, &o)) return;
    if (!o) {
        reply_ok(c);
        return;
    }
    long long len = (long long)list_len(o);
    if (!list_clip_range(len, &start, &end)) {
        start = len; /* everything goes */
        end = len - 1;
    }
    list_delete_range(o, end + 1, len - end - 1);
    list_delete_range(o, 0, start);
    list_removed(c, key, o, start + (len - end - 1), "ltrim");
    reply_ok(c);
}

static void cmd_lrem(client *c) {
    long long count;
    if (!arg_to_range(c, &c->argv[2], -LLONG_MAX, LLONG_MAX, NULL, &count)) return;
    const karg *key = &c->argv[1];
    kobj *o;
    if (!list_lookup(c, key, 0, &o)) return;
    if (!o) {
        reply_int(c, 0);
        return;
    }
    size_t removed = list_remove(o, c->argv[3].ptr, c->argv[3].len, count);
    if (removed) list_removed(c, key, o, (long long)removed, "lrem");
    reply_int(c, (long long)removed);
}

/* ---- pops ---- */

/* Pops up to count elements from one end of key's list o (non-empty),
 * replying them as an array in pop order. */
static void pop_range(client *c, const karg *key, kobj *o, int where, long long count) {
    long long len = (long long)list_len(o);
    long long n = count < len ? count : len;
    reply_range(c, o, where == LIST_HEAD ? 0 : len - 1, n,
                where == LIST_HEAD ? LIST_TAIL : LIST_HEAD);
    list_pop(o, where, (size_t)n);
    list_removed(c, key, o, n, list_pop_event(where));
}

/* Pops one element, replying it as a bulk. */
static void pop_one(client *c, const karg *key, kobj *o, int where) {
    pack_val v;
    list_peek(o, where, &v);
    reply_elem(c, &v);
    list_pop(o, where, 1);
    list_removed(c, key, o, 1, list_pop_event(where));
}

static void pop_generic(client *c, int where) {
    if (c->argc > 3) {
        reply_wrong_arity(c);
        return;
    }
    long long count = 0;
    int has_count = c->argc == 3;
    if (has_count && !arg_to_range(c, &c->argv[2], 0, LLONG_MAX,
                                   "ERR value is out of range, must be positive", &count))
        return;
    const karg *key = &c->argv[1];
    kobj *o;
    if (!list_lookup(c, key, 0, &o)) return;
    if (!o) {
        if (has_count)
            reply_null_array(c);
        else
            reply_null(c);
        return;
    }
    if (has_count && count == 0) {
        reply_array(c, 0);
        return;
    }
    if (has_count)
        pop_range(c, key, o, where, count);
    else
        pop_one(c, key, o, where);
}

static void cmd_lpop(client *c) {
    pop_generic(c, LIST_HEAD);
}

static void cmd_rpop(client *c) {
    pop_generic(c, LIST_TAIL);
}

/* The first non-empty list among the keys at argument positions
 * keys[0..n): returns its position and sets *found to it; 0 when there is
 * none; -1 after a WRONGTYPE reply. */
static int first_list(client *c, const int *keys, int n, kobj **found) {
    for (int j = 0; j < n; j++) {
        kobj *o;
        if (!list_lookup(c, &c->argv[keys[j]], 0, &o)) return -1;
        if (o && list_len(o)) {
            *found = o;
            return keys[j];
        }
    }
    return 0;
}

/* LMPOP's and BLMPOP's arguments from numkeys_idx on. */
typedef struct mpop_args {
    int keys[256];
    int *keypos; /* keys, or an allocation for more keys */
    int nkeys;
    int where;
    long long count;
} mpop_args;

static int mpop_parse(client *c, int numkeys_idx, mpop_args *a) {
    long long numkeys;
    if (!arg_to_range(c, &c->argv[numkeys_idx], 1, LLONG_MAX,
                      "ERR numkeys should be greater than 0", &numkeys))
        return 0;
    if (numkeys >= c->argc - numkeys_idx - 1) {
        reply_syntax_error(c); /* no room for the keys and the direction */
        return 0;
    }
    int where_idx = numkeys_idx + (int)numkeys + 1;
    if (!arg_to_where(c, &c->argv[where_idx], &a->where)) return 0;
    if (!arg_mpop_count(c, where_idx + 1, &a->count)) return 0;
    a->nkeys = (int)numkeys;
    a->keypos =
        a->nkeys <= (int)K_ARRAY_LEN(a->keys) ? a->keys : km_alloc(sizeof(int) * (size_t)a->nkeys);
    for (int j = 0; j < a->nkeys; j++)
        a->keypos[j] = numkeys_idx + 1 + j;
    return 1;
}

static void mpop_args_release(mpop_args *a) {
    if (a->keypos != a->keys) km_free(a->keypos);
}

/* Serves LMPOP/BLMPOP from the first non-empty list: [key, [elements]].
 * Returns 1 if served or answered with an error, 0 if there was nothing. */
static int mpop_serve(client *c, const mpop_args *a) {
    kobj *o;
    int pos = first_list(c, a->keypos, a->nkeys, &o);
    if (pos < 0) return 1;
    if (pos == 0) return 0;
    reply_array(c, 2);
    reply_bulk(c, c->argv[pos].ptr, c->argv[pos].len);
    pop_range(c, &c->argv[pos], o, a->where, a->count);
    return 1;
}

static void cmd_lmpop(client *c) {
    mpop_args a;
    if (!mpop_parse(c, 1, &a)) return;
    if (!mpop_serve(c, &a)) reply_null_array(c);
    mpop_args_release(&a);
}

/* ---- moves ---- */

/* Moves one element from the source list (argv[1], non-empty) to the
 * destination (argv[2]) and replies it; WRONGTYPE on the destination
 * leaves both untouched. */
static void move_one(client *c, kobj *src, int from, int to) {
    const karg *skey = &c->argv[1], *dkey = &c->argv[2];
    kobj *dst;
    if (!list_lookup(c, dkey, 0, &dst)) return;
    pack_val v;
    list_peek(src, from, &v);
    elem_copy e;
    elem_copy_take(&e, &v);
    list_pop(src, from, 1);
    if (dst) {
        list_push(dst, to, e.s, e.len);
        db_signal_modified(c->db, dkey->ptr, dkey->len, 0);
    } else {
        dst = list_new();
        list_push(dst, to, e.s, e.len);
        db_add(c->db, dkey->ptr, dkey->len, dst, 0);
    }
    notify_key(c, NOTIFY_LIST, list_push_event(to), dkey);
    /* After the push: with source = destination the list is not empty. The
     * move counts one change, as in Valkey, whatever it creates or empties. */
    list_removed(c, skey, src, 1, list_pop_event(from));
    reply_bulk(c, e.s, e.len);
    elem_copy_release(&e);
}

/* Runs a move from argv[1]; 1 if it replied, 0 if the source is empty. */
static int move_serve(client *c, int from, int to) {
    kobj *src;
    if (!list_lookup(c, &c->argv[1], 0, &src)) return 1;
    if (!src || !list_len(src)) return 0;
    move_one(c, src, from, to);
    return 1;
}

static void cmd_lmove(client *c) {
    int from, to;
    if (!arg_to_where(c, &c->argv[3], &from) || !arg_to_where(c, &c->argv[4], &to)) return;
    if (!move_serve(c, from, to)) reply_null(c);
}

static void cmd_rpoplpush(client *c) {
    if (!move_serve(c, LIST_TAIL, LIST_HEAD)) reply_null(c);
}

/* ---- blocking forms ---- */

/* Nothing to serve: waits on the keys when the client may block, else
 * answers the null at once (MULTI, scripts), as a timeout would. */
static void block_or_null(client *c, const int *keypos, int nkeys, int64_t deadline,
                          blocking_null null) {
    if (blocking_allowed(c)) {
        blocking_wait(c, keypos, nkeys, deadline, null);
        return;
    }
    if (null == BLOCKING_NULL_ARRAY)
        reply_null_array(c);
    else
        reply_null(c);
}

/* BLPOP/BRPOP key [key ...] timeout: replies [key, element]. */
static void bpop_generic(client *c, int where) {
    int64_t deadline;
    if (blocking_parse_timeout(c, &c->argv[c->argc - 1], &deadline) != K_OK) return;
    int nkeys = c->argc - 2;
    int stack[256];
    int *keypos = nkeys <= (int)K_ARRAY_LEN(stack) ? stack : km_alloc(sizeof(int) * (size_t)nkeys);
    for (int j = 0; j < nkeys; j++)
        keypos[j] = j + 1;
    kobj *o;
    int pos = first_list(c, keypos, nkeys, &o);
    if (pos > 0) {
        reply_array(c, 2);
        reply_bulk(c, c->argv[pos].ptr, c->argv[pos].len);
        pop_one(c, &c->argv[pos], o, where);
    } else if (pos == 0) {
        block_or_null(c, keypos, nkeys, deadline, BLOCKING_NULL_ARRAY);
    }
    if (keypos != stack) km_free(keypos);
}

static void cmd_blpop(client *c) {
    bpop_generic(c, LIST_HEAD);
}

static void cmd_brpop(client *c) {
    bpop_generic(c, LIST_TAIL);
}

static void bmove_generic(client *c, int from, int to, const karg *timeout) {
    int64_t deadline;
    if (blocking_parse_timeout(c, timeout, &deadline) != K_OK) return;
    static const int keypos[] = {1};
    if (!move_serve(c, from, to)) block_or_null(c, keypos, 1, deadline, BLOCKING_NULL_BULK);
}

static void cmd_blmove(client *c) {
    int from, to;
    if (!arg_to_where(c, &c->argv[3], &from) || !arg_to_where(c, &c->argv[4], &to)) return;
    bmove_generic(c, from, to, &c->argv[5]);
}

static void cmd_brpoplpush(client *c) {
    bmove_generic(c, LIST_TAIL, LIST_HEAD, &c->argv[3]);
}

static void cmd_blmpop(client *c) {
    int64_t deadline;
    mpop_args a;
    if (!mpop_parse(c, 2, &a)) return;
    if (blocking_parse_timeout(c, &c->argv[1], &deadline) == K_OK && !mpop_serve(c, &a))
        block_or_null(c, a.keypos, a.nkeys, deadline, BLOCKING_NULL_ARRAY);
    mpop_args_release(&a);
}

#define LIST_CMD(n, p, a, f, fk, lk, st, s, v)                                                     \
    {                                                                                              \
        .name = n, .proc = p, .arity = a, .flags = f, .first_key = fk, .last_key = lk,             \
        .key_step = st, .group = "list", .summary = s, .since = v                                  \
    }

#define W CMD_WRITE
#define WD (CMD_WRITE | CMD_DENYOOM)
#define R CMD_READONLY

/* clang-format off */
static command list_table[] = {
    LIST_CMD("lpush", cmd_lpush, -3, WD | CMD_FAST, 1, 1, 1, "Prepends one or more elements to a list. Creates the key if it doesn't exist.", "1.0.0"),
    LIST_CMD("rpush", cmd_rpush, -3, WD | CMD_FAST, 1, 1, 1, "Appends one or more elements to a list. Creates the key if it doesn't exist.", "1.0.0"),
    LIST_CMD("lpushx", cmd_lpushx, -3, WD | CMD_FAST, 1, 1, 1, "Prepends one or more elements to a list only when the list exists.", "2.2.0"),
    LIST_CMD("rpushx", cmd_rpushx, -3, WD | CMD_FAST, 1, 1, 1, "Appends an element to a list only when the list exists.", "2.2.0"),
    LIST_CMD("linsert", cmd_linsert, 5, WD, 1, 1, 1, "Inserts an element before or after another element in a list.", "2.2.0"),
    LIST_CMD("llen", cmd_llen, 2, R | CMD_FAST, 1, 1, 1, "Returns the length of a list.", "1.0.0"),
    LIST_CMD("lindex", cmd_lindex, 3, R, 1, 1, 1, "Returns an element from a list by its index.", "1.0.0"),
    LIST_CMD("lset", cmd_lset, 4, WD, 1, 1, 1, "Sets the value of an element in a list by its index.", "1.0.0"),
    LIST_CMD("lrange", cmd_lrange, 4, R, 1, 1, 1, "Returns a range of elements from a list.", "1.0.0"),
    LIST_CMD("ltrim", cmd_ltrim, 4, W, 1, 1, 1, "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", "1.0.0"),
    LIST_CMD("lpop", cmd_lpop, -2, W | CMD_FAST, 1, 1, 1, "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", "1.0.0"),
    LIST_CMD("rpop", cmd_rpop, -2, W | CMD_FAST, 1, 1, 1, "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", "1.0.0"),
    LIST_CMD("lrem", cmd_lrem, 4, W, 1, 1, 1, "Removes elements from a list. Deletes the list if the last element was removed.", "1.0.0"),
    LIST_CMD("lpos", cmd_lpos, -3, R, 1, 1, 1, "Returns the index of matching elements in a list.", "6.0.6"),
    LIST_CMD("rpoplpush", cmd_rpoplpush, 3, WD, 1, 2, 1, "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", "1.2.0"),
    LIST_CMD("lmove", cmd_lmove, 5, WD, 1, 2, 1, "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", "6.2.0"),
    LIST_CMD("lmpop", cmd_lmpop, -4, W, 0, 0, 0, "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", "7.0.0"),
    LIST_CMD("blpop", cmd_blpop, -3, W | CMD_BLOCKING, 1, -2, 1, "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", "2.0.0"),
    LIST_CMD("brpop", cmd_brpop, -3, W | CMD_BLOCKING, 1, -2, 1, "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", "2.0.0"),
    LIST_CMD("brpoplpush", cmd_brpoplpush, 4, WD | CMD_BLOCKING, 1, 2, 1, "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", "2.2.0"),
    LIST_CMD("blmove", cmd_blmove, 6, WD | CMD_BLOCKING, 1, 2, 1, "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", "6.2.0"),
    LIST_CMD("blmpop", cmd_blmpop, -5, W | CMD_BLOCKING, 0, 0, 0, "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", "7.0.0"),
};
/* clang-format on */

const command_family commands_list = {list_table, K_ARRAY_LEN(list_table)};
