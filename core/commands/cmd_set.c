/* cmd_set.c -- the set command family: membership, random members and
 * pops, the algebra (SINTER/SUNION/SDIFF and their STORE and CARD forms),
 * SSCAN. Values go through types/set.h; replies, argument rules and error
 * strings are Valkey 8.0.1's. */
#include "commands/commands.h"
#include "common/common.h"
#include "common/kmem.h"
#include "common/vec.h"
#include "ds/glob.h"
#include "session/reply.h"
#include "types/set.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* Looks key up; *out is its set or NULL when it does not exist. Replies
 * WRONGTYPE and returns 0 when it holds another type. Reads count hits
 * and misses (count 1), writes do not, as Valkey's lookupKeyWrite. */
static int set_lookup(client *c, const karg *key, int count, kobj **out) {
    db_entry *e = db_lookup(c->db, key->ptr, key->len, count);
    *out = NULL;
    if (!e) return 1;
    if (db_entry_type(e) != OBJ_SET) {
        reply_wrongtype(c);
        return 0;
    }
    *out = db_entry_obj(e);
    return 1;
}

static void reply_member(client *c, const set_member *m) {
    if (m->s)
        reply_bulk(c, m->s, m->len);
    else
        reply_bulk_ll(c, m->v);
}

static void reply_member_cb(void *priv, const set_member *m) {
    reply_member(priv, m);
}

/* Every member of o. */
static void reply_members(client *c, const kobj *o) {
    set_iter it;
    set_member m;
    set_iter_init(&it, o);
    while (set_iter_next(&it, &m))
        reply_member(c, &m);
    set_iter_reset(&it);
}

/* After `changes` members were removed in place by `event` (srem, spop):
 * the key goes when the set is empty (Valkey never keeps an empty
 * collection), announced with the event and then `del`. */
static void set_after_remove(client *c, const karg *key, const kobj *o, long long changes,
                             const char *event) {
    collection_changed(c, key, set_size(o) == 0, changes, NOTIFY_SET, event);
}

/* A store command's destination left empty: deleted if it was there. */
static void set_delete_dst(client *c, const karg *dst) {
    if (db_delete(c->db, dst->ptr, dst->len)) notify_key(c, NOTIFY_GENERIC, "del", dst);
}

/* ---- SADD SREM SMOVE ---- */

static void cmd_sadd(client *c) {
    const karg *key = &c->argv[1];
    kobj *o;
    if (!set_lookup(c, key, 0, &o)) return;
    size_t n = (size_t)c->argc - 2;
    long long added = 0;
    int created = !o;
    if (created)
        o = set_create(c->argv[2].ptr, c->argv[2].len, n);
    else
        set_reserve(o, n);
    for (int i = 2; i < c->argc; i++)
        added += set_add(o, c->argv[i].ptr, c->argv[i].len);
    if (created)
        db_add(c->db, key->ptr, key->len, o, added);
    else if (added)
        db_signal_modified(c->db, key->ptr, key->len, added);
    if (added) notify_key(c, NOTIFY_SET, "sadd", key);
    reply_int(c, added);
}

static void cmd_srem(client *c) {
    const karg *key = &c->argv[1];
    kobj *o;
    if (!set_lookup(c, key, 0, &o)) return;
    long long removed = 0;
    if (o) {
        for (int i = 2; i < c->argc && set_size(o) > 0; i++)
            removed += set_remove(o, c->argv[i].ptr, c->argv[i].len);
        if (removed) set_after_remove(c, key, o, removed, "srem");
    }
    reply_int(c, removed);
}

static void cmd_smove(client *c) {
    const karg *src = &c->argv[1], *dst = &c->argv[2], *member = &c->argv[3];
    kobj *from, *to;
    if (!set_lookup(c, src, 0, &from)) return;
    if (!from) {
        reply_int(c, 0);
        return;
    }
    if (!set_lookup(c, dst, 0, &to)) return;
    if (from == to) {
        reply_int(c, set_contains(from, member->ptr, member->len));
        return;
    }
    if (!set_remove(from, member->ptr, member->len)) {
        reply_int(c, 0);
        return;
    }
    set_after_remove(c, src, from, 1, "srem");
    if (!to) {
        to = set_create(member->ptr, member->len, 1);
        set_add(to, member->ptr, member->len);
        db_add(c->db, dst->ptr, dst->len, to, 1);
        notify_key(c, NOTIFY_SET, "sadd", dst);
    } else if (set_add(to, member->ptr, member->len)) {
        db_signal_modified(c->db, dst->ptr, dst->len, 1);
        notify_key(c, NOTIFY_SET, "sadd", dst);
    }
    reply_int(c, 1);
}

/* ---- SISMEMBER SMISMEMBER SCARD ---- */

static void cmd_sismember(client *c) {
    kobj *o;
    if (!set_lookup(c, &c->argv[1], 1, &o)) return;
    reply_int(c, o && set_contains(o, c->argv[2].ptr, c->argv[2].len));
}

static void cmd_smismember(client *c) {
    kobj *o;
    if (!set_lookup(c, &c->argv[1], 1, &o)) return;
    reply_array(c, c->argc - 2);
    for (int i = 2; i < c->argc; i++)
        reply_int(c, o && set_contains(o, c->argv[i].ptr, c->argv[i].len));
}

static void cmd_scard(client *c) {
    kobj *o;
    if (!set_lookup(c, &c->argv[1], 1, &o)) return;
    reply_int(c, o ? (long long)set_size(o) : 0);
}

/* ---- SPOP ---- */

/* Valkey's SPOP_MOVE_STRATEGY_MUL: when what stays is this many times
 * smaller than what goes, the members that stay are drawn into a new set
 * and the old one is returned whole. */
#define SPOP_KEEP_RATIO 5

static void spop_count(client *c, const karg *key, kobj *o, size_t count) {
    size_t size = set_size(o);
    if (count >= size) {
        reply_set(c, (long long)size);
        reply_members(c, o);
        collection_changed(c, key, 1, (long long)size, NOTIFY_SET, "spop");
        return;
    }
    notify_key(c, NOTIFY_SET, "spop", key);
    size_t keep = size - count;
    reply_set(c, (long long)count);
    if (keep * SPOP_KEEP_RATIO > count) {
        for (size_t i = 0; i < count; i++) {
            kobj *m = set_pop_random(o);
            reply_bulk_obj(c, m);
            obj_decref(m);
        }
        db_signal_modified(c->db, key->ptr, key->len, (long long)count);
        return;
    }
    kobj *kept = NULL;
    while (keep--) {
        set_member m;
        char buf[24];
        size_t len;
        set_random(o, &m);
        const char *s = set_member_str(&m, buf, &len);
        if (!kept) kept = set_create(s, len, size - count);
        set_add(kept, s, len);
        set_remove_member(o, &m);
    }
    reply_members(c, o);
    db_entry *e = db_lookup_quiet(c->db, key->ptr, key->len);
    db_replace_value(c->db, e, kept, (long long)count);
}

static void cmd_spop(client *c) {
    const karg *key = &c->argv[1];
    long long count = -1;
    if (c->argc > 3) {
        reply_syntax_error(c);
        return;
    }
    if (c->argc == 3) {
        if (!arg_to_ll(c, &c->argv[2], &count)) return;
        if (count < 0) {
            reply_error(c, "ERR value is out of range, must be positive");
            return;
        }
    }
    kobj *o;
    if (!set_lookup(c, key, 0, &o)) return;
    if (!o) {
        if (count < 0)
            reply_null(c);
        else
            reply_set(c, 0);
        return;
    }
    if (count >= 0) {
        if (count == 0)
            reply_set(c, 0);
        else
            spop_count(c, key, o, (size_t)count);
        return;
    }
    kobj *m = set_pop_random(o);
    reply_bulk_obj(c, m);
    obj_decref(m);
    set_after_remove(c, key, o, 1, "spop");
}

/* ---- SRANDMEMBER ---- */

static void srandmember_count(client *c, const kobj *o, long long l) {
    size_t size = set_size(o);
    if (l < 0 || l == 1) {
        /* Repeats allowed: each draw independent (a negative count). A
         * client the server is about to drop stops the loop. */
        unsigned long long n = l < 0 ? (unsigned long long)-l : 1;
        reply_array(c, (long long)n);
        set_member m;
        while (n-- && !(c->flags & CLIENT_CLOSE_ASAP)) {
            set_random(o, &m);
            reply_member(c, &m);
        }
        return;
    }
    if ((unsigned long long)l >= size) {
        reply_array(c, (long long)size);
        reply_members(c, o);
        return;
    }
    reply_array(c, l);
    set_sample(o, (size_t)l, reply_member_cb, c);
}

static void cmd_srandmember(client *c) {
    long long l = 0;
    if (c->argc > 3) {
        reply_syntax_error(c);
        return;
    }
    if (c->argc == 3) {
        if (!arg_to_ll(c, &c->argv[2], &l)) return;
        if (l < -LLONG_MAX) {
            reply_errorf(c, "ERR value is out of range, value must between %lld and %lld",
                         -LLONG_MAX, LLONG_MAX);
            return;
        }
    }
    kobj *o;
    if (!set_lookup(c, &c->argv[1], 1, &o)) return;
    if (c->argc == 3) {
        if (!o || l == 0)
            reply_array(c, 0);
        else
            srandmember_count(c, o, l);
        return;
    }
    if (!o) {
        reply_null(c);
        return;
    }
    set_member m;
    set_random(o, &m);
    reply_member(c, &m);
}

/* ---- the algebra ---- */

/* Looks every key up into sets[] (NULL for a missing key); 0 after
 * replying WRONGTYPE. *missing counts the missing keys. */
static int set_lookup_all(client *c, const karg *keys, int n, kobj **sets, int *missing) {
    *missing = 0;
    for (int i = 0; i < n; i++) {
        if (!set_lookup(c, &keys[i], 1, &sets[i])) return 0;
        if (!sets[i]) (*missing)++;
    }
    return 1;
}

/* Stores a computed result under dst (replacing what is there, its TTL
 * too) and announces `event`, or, when it is empty, deletes dst; replies
 * its size. */
static void set_store_result(client *c, const karg *dst, kobj *res, const char *event) {
    size_t n = set_size(res);
    if (n) {
        db_set(c->db, dst->ptr, dst->len, res, 0);
        notify_key(c, NOTIFY_SET, event, dst);
    } else {
        obj_decref(res);
        set_delete_dst(c, dst);
    }
    reply_int(c, (long long)n);
}

static int set_cmp_size(const void *a, const void *b) {
    size_t x = set_size(*(kobj *const *)a), y = set_size(*(kobj *const *)b);
    return x < y ? -1 : x > y;
}

/* Bigger first; a missing key (NULL) counts as empty. */
static int set_cmp_size_desc(const void *a, const void *b) {
    kobj *const *x = a, *const *y = b;
    size_t sx = *x ? set_size(*x) : 0, sy = *y ? set_size(*y) : 0;
    return sx > sy ? -1 : sx < sy;
}

/* 1 if m is in every set of sets[1..n) (the same object as sets[0] holds
 * it by construction). */
static int set_in_all(kobj **sets, int n, const set_member *m) {
    for (int j = 1; j < n; j++)
        if (sets[j] != sets[0] && !set_contains_member(sets[j], m)) return 0;
    return 1;
}

/* SINTER, SMEMBERS, SINTERSTORE (dst) and SINTERCARD (card, stopping at
 * limit when it is not 0). Members of the smallest set are tested against
 * the others. */
static void set_inter(client *c, const karg *keys, int n, const karg *dst, int card,
                      unsigned long long limit) {
    kobj **sets = km_alloc((size_t)n * sizeof(*sets));
    int missing;
    if (!set_lookup_all(c, keys, n, sets, &missing)) {
        km_free(sets);
        return;
    }
    if (missing) {
        km_free(sets);
        if (dst) {
            set_delete_dst(c, dst);
            reply_int(c, 0);
        } else if (card) {
            reply_int(c, 0);
        } else {
            reply_set(c, 0);
        }
        return;
    }
    qsort(sets, (size_t)n, sizeof(*sets), set_cmp_size);
    kobj *res = NULL;
    reply_deferred h = 0;
    if (dst)
        res = set_is_intset(sets[0]) ? set_create_intset() : set_create_pack();
    else if (!card)
        h = reply_deferred_set(c);
    unsigned long long found = 0;
    set_iter it;
    set_member m;
    set_iter_init(&it, sets[0]);
    while (set_iter_next(&it, &m)) {
        if (!set_in_all(sets, n, &m)) continue;
        found++;
        if (res)
            set_add_member(res, &m);
        else if (!card)
            reply_member(c, &m);
        else if (limit && found >= limit)
            break;
    }
    set_iter_reset(&it);
    km_free(sets);
    if (res) {
        set_try_intset(res);
        set_store_result(c, dst, res, "sinterstore");
    } else if (card) {
        reply_int(c, (long long)found);
    } else {
        reply_set_deferred_len(c, h, (long long)found);
    }
}

#define SET_OP_UNION 0
#define SET_OP_DIFF 1

/* Adds every member of o to res (or removes them with `remove`); returns
 * the change of res's size. */
static long long set_merge(kobj *res, const kobj *o, int remove) {
    long long delta = 0;
    set_iter it;
    set_member m;
    set_iter_init(&it, o);
    while (set_iter_next(&it, &m))
        delta += remove ? -set_remove_member(res, &m) : set_add_member(res, &m);
    set_iter_reset(&it);
    return delta;
}

/* SDIFF by testing each member of the first set against the others
 * (Valkey's algorithm 1): the others biggest first, where a common member
 * is likelier to be found early. */
static void set_diff_probe(kobj *res, kobj **sets, int n) {
    if (n > 1) qsort(sets + 1, (size_t)n - 1, sizeof(*sets), set_cmp_size_desc);
    set_iter it;
    set_member m;
    set_iter_init(&it, sets[0]);
    while (set_iter_next(&it, &m)) {
        int j;
        for (j = 1; j < n; j++)
            if (sets[j] && set_contains_member(sets[j], &m)) break;
        if (j == n) set_add_member(res, &m);
    }
    set_iter_reset(&it);
}

/* SDIFF by copying the first set and removing the others' members
 * (algorithm 2), stopping once nothing is left. */
static void set_diff_subtract(kobj *res, kobj **sets, int n) {
    long long size = set_merge(res, sets[0], 0);
    for (int j = 1; j < n && size > 0; j++)
        if (sets[j]) size += set_merge(res, sets[j], 1);
}

/* Valkey's choice between the two: probing costs |first| per other set,
 * subtracting costs every member once; probing gets a factor 2 for its
 * better constants. */
static void set_diff(kobj *res, kobj **sets, int n) {
    unsigned long long probe = 0, subtract = 0;
    for (int j = 0; j < n; j++) {
        if (!sets[j]) continue;
        probe += set_size(sets[0]);
        subtract += set_size(sets[j]);
    }
    if (probe / 2 <= subtract)
        set_diff_probe(res, sets, n);
    else
        set_diff_subtract(res, sets, n);
}

/* SUNION, SDIFF and their STORE forms (dst). */
static void set_union_diff(client *c, const karg *keys, int n, const karg *dst, int op) {
    kobj **sets = km_alloc((size_t)n * sizeof(*sets));
    int missing;
    if (!set_lookup_all(c, keys, n, sets, &missing)) {
        km_free(sets);
        return;
    }
    /* A result to reply only is a table as soon as one input is not an
     * intset (lookups beat a listpack's scans); one to store starts as an
     * intset and converts as members arrive, as in Valkey. */
    int table = 0, same = 0;
    for (int j = 0; j < n; j++) {
        if (!dst && sets[j] && !set_is_intset(sets[j])) table = 1;
        if (j > 0 && sets[j] && sets[j] == sets[0]) same = 1;
    }
    kobj *res = table ? set_create_table() : set_create_intset();
    if (op == SET_OP_UNION) {
        for (int j = 0; j < n; j++)
            if (sets[j]) set_merge(res, sets[j], 0);
    } else if (sets[0] && !same) {
        set_diff(res, sets, n);
    }
    km_free(sets);
    if (dst) {
        set_store_result(c, dst, res, op == SET_OP_UNION ? "sunionstore" : "sdiffstore");
        return;
    }
    reply_set(c, (long long)set_size(res));
    reply_members(c, res);
    obj_decref(res);
}

static void cmd_sinter(client *c) {
    set_inter(c, &c->argv[1], c->argc - 1, NULL, 0, 0);
}

static void cmd_sinterstore(client *c) {
    set_inter(c, &c->argv[2], c->argc - 2, &c->argv[1], 0, 0);
}

static void cmd_sintercard(client *c) {
    long long numkeys, limit = 0;
    if (!str_to_ll(c->argv[1].ptr, c->argv[1].len, &numkeys) || numkeys < 1) {
        reply_error(c, "ERR numkeys should be greater than 0");
        return;
    }
    if (numkeys > c->argc - 2) {
        reply_error(c, "ERR Number of keys can't be greater than number of args");
        return;
    }
    for (int j = 2 + (int)numkeys; j < c->argc; j++) {
        if (karg_eq(&c->argv[j], "limit") && j + 1 < c->argc) {
            j++;
            if (!str_to_ll(c->argv[j].ptr, c->argv[j].len, &limit) || limit < 0) {
                reply_error(c, "ERR LIMIT can't be negative");
                return;
            }
        } else {
            reply_syntax_error(c);
            return;
        }
    }
    set_inter(c, &c->argv[2], (int)numkeys, NULL, 1, (unsigned long long)limit);
}

static void cmd_sunion(client *c) {
    set_union_diff(c, &c->argv[1], c->argc - 1, NULL, SET_OP_UNION);
}

static void cmd_sunionstore(client *c) {
    set_union_diff(c, &c->argv[2], c->argc - 2, &c->argv[1], SET_OP_UNION);
}

static void cmd_sdiff(client *c) {
    set_union_diff(c, &c->argv[1], c->argc - 1, NULL, SET_OP_DIFF);
}

static void cmd_sdiffstore(client *c) {
    set_union_diff(c, &c->argv[2], c->argc - 2, &c->argv[1], SET_OP_DIFF);
}

/* ---- SSCAN ---- */

typedef struct sscan_state {
    const char *pat; /* NULL: every member */
    size_t patlen;
    vec found; /* set_member */
} sscan_state;

/* Members are kept by reference: the set does not change during the
 * command. */
static void sscan_collect(void *priv, const set_member *m) {
    sscan_state *st = priv;
    if (st->pat) {
        char buf[24];
        size_t len;
        const char *s = set_member_str(m, buf, &len);
        if (!glob_match(st->pat, st->patlen, s, len, 0)) return;
    }
    *(set_member *)vec_push(&st->found, sizeof(*m)) = *m;
}

static void cmd_sscan(client *c) {
    unsigned long long cursor;
    if (!arg_to_scan_cursor(c, &c->argv[2], &cursor)) return;
    kobj *o;
    if (!set_lookup(c, &c->argv[1], 1, &o)) return;
    if (!o) {
        reply_array(c, 2);
        reply_bulk(c, "0", 1);
        reply_array(c, 0);
        return;
    }
    scan_args a;
    if (!scan_args_parse(c, 3, 0, &a)) return;
    sscan_state st = {.pat = a.pat ? a.pat->ptr : NULL, .patlen = a.pat ? a.pat->len : 0};
    long long count = a.count;
    size_t next = set_scan(o, (size_t)cursor, count, sscan_collect, &st);
    char buf[24];
    int n = snprintf(buf, sizeof(buf), "%zu", next);
    reply_array(c, 2);
    reply_bulk(c, buf, (size_t)n);
    const set_member *found = st.found.items;
    reply_array(c, (long long)st.found.count);
    for (size_t i = 0; i < st.found.count; i++)
        reply_member(c, &found[i]);
    vec_free(&st.found);
}

/* clang-format off */
#define SET_CMD(n, p, a, f, fk, lk, st, s, v) \
    {.name = n, .proc = p, .arity = a, .flags = f, .first_key = fk, .last_key = lk, \
     .key_step = st, .group = "set", .summary = s, .since = v}

static command set_table[] = {
    SET_CMD("sadd", cmd_sadd, -3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "Adds one or more members to a set. Creates the key if it doesn't exist.", "1.0.0"),
    SET_CMD("srem", cmd_srem, -3, CMD_WRITE | CMD_FAST, 1, 1, 1, "Removes one or more members from a set. Deletes the set if the last member was removed.", "1.0.0"),
    SET_CMD("smove", cmd_smove, 4, CMD_WRITE | CMD_FAST, 1, 2, 1, "Moves a member from one set to another.", "1.0.0"),
    SET_CMD("sismember", cmd_sismember, 3, CMD_READONLY | CMD_FAST, 1, 1, 1, "Determines whether a member belongs to a set.", "1.0.0"),
    SET_CMD("smismember", cmd_smismember, -3, CMD_READONLY | CMD_FAST, 1, 1, 1, "Determines whether multiple members belong to a set.", "6.2.0"),
    SET_CMD("scard", cmd_scard, 2, CMD_READONLY | CMD_FAST, 1, 1, 1, "Returns the number of members in a set.", "1.0.0"),
    SET_CMD("spop", cmd_spop, -2, CMD_WRITE | CMD_FAST, 1, 1, 1, "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", "1.0.0"),
    SET_CMD("srandmember", cmd_srandmember, -2, CMD_READONLY, 1, 1, 1, "Get one or multiple random members from a set", "1.0.0"),
    SET_CMD("sinter", cmd_sinter, -2, CMD_READONLY, 1, -1, 1, "Returns the intersect of multiple sets.", "1.0.0"),
    SET_CMD("sintercard", cmd_sintercard, -3, CMD_READONLY, 0, 0, 0, "Returns the number of members of the intersect of multiple sets.", "7.0.0"),
    SET_CMD("sinterstore", cmd_sinterstore, -3, CMD_WRITE | CMD_DENYOOM, 1, -1, 1, "Stores the intersect of multiple sets in a key.", "1.0.0"),
    SET_CMD("sunion", cmd_sunion, -2, CMD_READONLY, 1, -1, 1, "Returns the union of multiple sets.", "1.0.0"),
    SET_CMD("sunionstore", cmd_sunionstore, -3, CMD_WRITE | CMD_DENYOOM, 1, -1, 1, "Stores the union of multiple sets in a key.", "1.0.0"),
    SET_CMD("sdiff", cmd_sdiff, -2, CMD_READONLY, 1, -1, 1, "Returns the difference of multiple sets.", "1.0.0"),
    SET_CMD("sdiffstore", cmd_sdiffstore, -3, CMD_WRITE | CMD_DENYOOM, 1, -1, 1, "Stores the difference of multiple sets in a key.", "1.0.0"),
    SET_CMD("smembers", cmd_sinter, 2, CMD_READONLY, 1, 1, 1, "Returns all members of a set.", "1.0.0"),
    SET_CMD("sscan", cmd_sscan, -3, CMD_READONLY, 1, 1, 1, "Iterates over members of a set.", "2.0.0"),
};
/* clang-format on */

const command_family commands_set = {set_table, K_ARRAY_LEN(set_table)};
