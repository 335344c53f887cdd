/* cmd_keys.c -- the generic keyspace command family: deleting, renaming,
 * copying and moving keys, listing and scanning the keyspace, expiry
 * (EXPIRE/TTL and friends), database selection and swapping, flushing, and
 * the OBJECT introspection container.
 *
 * Lookups follow the flavour Valkey uses for each command, because it shows
 * in INFO (keyspace_hits/misses) and in OBJECT IDLETIME/FREQ:
 *   - reads (TOUCH, COPY's source): db_lookup(..., 1), counted and touched;
 *   - writes (RENAME, MOVE, EXPIRE, PERSIST, ...): db_lookup(..., 0), touched
 *     but not counted;
 *   - inspection (EXISTS, TYPE, TTL, OBJECT): counted but not touched, see
 *     lookup_notouch().
 * Every lookup applies lazy expiry, so an expired key is never returned;
 * KEYS and SCAN, which walk the table directly, skip expired entries
 * themselves. */
#include <stddef.h>

#include "commands/commands.h"
#include "common/common.h"
#include "ds/glob.h"
#include "common/kmem.h"
#include "common/vec.h"
#include "session/reply.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

/* Valkey's lookupKeyReadWithFlags(LOOKUP_NOTOUCH): expires, counts a hit or
 * a miss, but leaves the access clock alone. */
static db_entry *lookup_notouch(db *d, const karg *key) {
    db_entry *e = db_lookup_quiet(d, key->ptr, key->len);
    if (e)
        db_stats()->keyspace_hits++;
    else
        db_stats()->keyspace_misses++;
    return e;
}

static int karg_same(const karg *a, const karg *b) {
    return a->len == b->len && memcmp(a->ptr, b->ptr, a->len) == 0;
}

/* Parses an int argument as Valkey's getIntFromObjectOrReply(): msg, when
 * given, replaces every error; otherwise the standard ones are used. */
static int arg_to_int(client *c, const karg *a, const char *msg, int *out) {
    long long v;
    if (!str_to_ll(a->ptr, a->len, &v)) {
        reply_error(c, msg ? msg : "ERR value is not an integer or out of range");
        return 0;
    }
    if (v < INT_MIN || v > INT_MAX) {
        if (msg)
            reply_error(c, msg);
        else
            reply_errorf(c, "ERR value is out of range, value must between %d and %d", INT_MIN,
                         INT_MAX);
        return 0;
    }
    *out = (int)v;
    return 1;
}

/* Parses a DB index argument; replies and returns NULL when invalid. */
static db *arg_to_db(client *c, const karg *a) {
    int id;
    if (!arg_to_int(c, a, NULL, &id)) return NULL;
    db *d = db_get(id);
    if (!d) reply_error(c, "ERR DB index is out of range");
    return d;
}

static const char *type_name(const db_entry *e) {
    if (!e) return "none";
    return db_entry_type_name(e);
}

static int lfu_policy(void) {
    return db_policy_is_lfu(db_opts()->maxmemory_policy);
}

/* Replies an array of the keys of the entries in found (SCAN's: its
 * cursor, known only after the walk, comes before them; the entries stay
 * valid while nothing deletes them) and frees the vector. */
static void reply_keys_and_free(client *c, vec *found) {
    db_entry **items = found->items;
    reply_array(c, (long long)found->count);
    for (size_t i = 0; i < found->count; i++) {
        size_t len;
        const char *key = db_entry_key(items[i], &len);
        reply_bulk(c, key, len);
    }
    vec_free(found);
}

/* ---- DEL, UNLINK, EXISTS, TOUCH, TYPE ---- */

/* UNLINK is DEL: values are freed synchronously either way. */
/* DEL and UNLINK: `unlink` frees costly values on the lazy-free thread
 * whatever lazyfree-lazy-user-del says. */
static void del_generic(client *c, int unlink) {
    long long deleted = 0;
    for (int j = 1; j < c->argc; j++) {
        const karg *k = &c->argv[j];
        /* An expired key counts as expired, not as deleted by this call. */
        if (db_lookup_quiet(c->db, k->ptr, k->len) &&
            db_delete_user(c->db, k->ptr, k->len, unlink)) {
            notify_key(c, NOTIFY_GENERIC, "del", k);
            deleted++;
        }
    }
    reply_int(c, deleted);
}

static void cmd_del(client *c) {
    del_generic(c, 0);
}

static void cmd_unlink(client *c) {
    del_generic(c, 1);
}

/* A key named twice counts twice, as in Valkey. */
static void cmd_exists(client *c) {
    long long found = 0;
    for (int j = 1; j < c->argc; j++)
        if (lookup_notouch(c->db, &c->argv[j])) found++;
    reply_int(c, found);
}

static void cmd_touch(client *c) {
    long long touched = 0;
    for (int j = 1; j < c->argc; j++)
        if (db_lookup(c->db, c->argv[j].ptr, c->argv[j].len, 1)) touched++;
    reply_int(c, touched);
}

static void cmd_type(client *c) {
    reply_simple(c, type_name(lookup_notouch(c->db, &c->argv[1])));
}

/* ---- RENAME, RENAMENX, MOVE, COPY ---- */

static void rename_generic(client *c, int nx) {
    const karg *src = &c->argv[1], *dst = &c->argv[2];
    db_entry *e = db_lookup(c->db, src->ptr, src->len, 0);
    if (!e) {
        reply_error(c, "ERR no such key");
        return;
    }
    /* Renaming a key to itself is a no-op (but only if it exists). */
    if (karg_same(src, dst)) {
        if (nx)
            reply_int(c, 0);
        else
            reply_ok(c);
        return;
    }
    /* The lookup also expires the destination, so it is not replaced. */
    if (db_lookup(c->db, dst->ptr, dst->len, 0) && nx) {
        reply_int(c, 0);
        return;
    }
    db_move(c->db, e, c->db, dst->ptr, dst->len); /* replaces dst */
    notify_key(c, NOTIFY_GENERIC, "rename_from", src);
    notify_key(c, NOTIFY_GENERIC, "rename_to", dst);
    if (nx)
        reply_int(c, 1);
    else
        reply_ok(c);
}

static void cmd_rename(client *c) {
    rename_generic(c, 0);
}

static void cmd_renamenx(client *c) {
    rename_generic(c, 1);
}

static void cmd_move(client *c) {
    const karg *key = &c->argv[1];
    db *dst = arg_to_db(c, &c->argv[2]);
    if (!dst) return;
    if (dst == c->db) {
        reply_error(c, "ERR source and destination objects are the same");
        return;
    }
    db_entry *e = db_lookup(c->db, key->ptr, key->len, 0);
    if (!e || db_lookup(dst, key->ptr, key->len, 0)) {
        reply_int(c, 0);
        return;
    }
    db_move(c->db, e, dst, key->ptr, key->len);
    notify_key(c, NOTIFY_GENERIC, "move_from", key);
    notify_keyspace_event(NOTIFY_GENERIC, "move_to", key->ptr, key->len, dst->id);
    reply_int(c, 1);
}

/* COPY options: [DB destination-db] [REPLACE]. */
static int copy_parse_options(client *c, db **dst, int *replace) {
    for (int j = 3; j < c->argc; j++) {
        if (karg_eq(&c->argv[j], "replace")) {
            *replace = 1;
        } else if (karg_eq(&c->argv[j], "db") && j + 1 < c->argc) {
            if (!(*dst = arg_to_db(c, &c->argv[++j]))) return 0;
        } else {
            reply_syntax_error(c);
            return 0;
        }
    }
    return 1;
}

static void cmd_copy(client *c) {
    const karg *key = &c->argv[1], *newkey = &c->argv[2];
    db *dst = c->db;
    int replace = 0;
    if (!copy_parse_options(c, &dst, &replace)) return;
    if (dst == c->db && karg_same(key, newkey)) {
        reply_error(c, "ERR source and destination objects are the same");
        return;
    }
    db_entry *e = db_lookup(c->db, key->ptr, key->len, 1);
    if (!e) {
        reply_int(c, 0);
        return;
    }
    int exists = db_lookup(dst, newkey->ptr, newkey->len, 0) != NULL;
    if (exists && !replace) {
        reply_int(c, 0);
        return;
    }
    kobj *copy = db_entry_value_copy(e); /* NULL: a module type without copy */
    if (!copy) {
        reply_error(c, "ERR not supported for this module key");
        return;
    }
    db_put(dst, newkey->ptr, newkey->len, copy, db_entry_expire(e)); /* replaces newkey */
    notify_keyspace_event(NOTIFY_GENERIC, "copy_to", newkey->ptr, newkey->len, dst->id);
    reply_int(c, 1);
}

/* ---- KEYS, SCAN, RANDOMKEY, DBSIZE ---- */

static void cmd_keys(client *c) {
    const karg *pat = &c->argv[1];
    int allkeys = pat->len == 1 && pat->ptr[0] == '*';
    reply_deferred h = reply_deferred_array(c);
    long long found = 0;
    db_iter it;
    db_entry *e;
    /* Expired keys are skipped, not deleted: the table must not change
     * under the (unsafe, faster) iterator. */
    db_iter_init(&it, c->db);
    while (db_iter_next(&it, &e)) {
        if (db_is_expired(e)) continue;
        size_t len;
        const char *key = db_entry_key(e, &len);
        if (allkeys || glob_match(pat->ptr, pat->len, key, len, 0)) {
            reply_bulk(c, key, len);
            found++;
        }
    }
    db_iter_reset(&it);
    reply_set_deferred_len(c, h, found);
}

#define SCAN_TYPE_ANY (-1)
#define SCAN_TYPE_UNKNOWN (-3)

typedef struct scan_state {
    db *d;
    const karg *pat; /* NULL: every key */
    int type;
    long long sampled;
    vec found; /* db_entry * */
} scan_state;

/* Filters by type, then pattern, then expiry, as Valkey does; an expired
 * match is deleted (the scan callback may delete the entry it is given). */
static void scan_cb(void *priv, void *entry) {
    scan_state *s = priv;
    db_entry *e = entry;
    s->sampled++;
    if (s->type != SCAN_TYPE_ANY && db_entry_type(e) != s->type) return;
    size_t len;
    const char *key = db_entry_key(e, &len);
    if (s->pat && !glob_match(s->pat->ptr, s->pat->len, key, len, 0)) return;
    if (db_is_expired(e)) {
        db_lookup_quiet(s->d, key, len); /* expires it */
        return;
    }
    *(db_entry **)vec_push(&s->found, sizeof(e)) = e;
}

/* Valkey's string2ull(): a strict decimal, or whatever strtoull() accepts
 * of the C string (so an embedded NUL ends it), but no negative decimals. */
static int scan_cursor_parse(const karg *a, unsigned long long *out) {
    char *s = km_strndup(a->ptr, a->len);
    size_t n = strlen(s);
    long long ll;
    int ok;
    if (str_to_ll(s, n, &ll)) {
        ok = ll >= 0;
        *out = (unsigned long long)ll;
    } else {
        char *end;
        errno = 0;
        *out = strtoull(s, &end, 10);
        ok = errno != EINVAL && errno != ERANGE && n > 0 && *end == '\0';
    }
    km_free(s);
    return ok;
}

int arg_to_scan_cursor(client *c, const karg *a, unsigned long long *out) {
    if (scan_cursor_parse(a, out)) return 1;
    reply_error(c, "ERR invalid cursor");
    return 0;
}

/* The TYPE filter: Valkey's type names. */
static int scan_type_by_name(const karg *a) {
    static const struct {
        const char *name;
        int type;
    } names[] = {{"string", OBJ_STRING}, {"list", OBJ_LIST}, {"set", OBJ_SET},
                 {"zset", OBJ_ZSET},     {"hash", OBJ_HASH}, {"stream", OBJ_STREAM}};
    for (size_t i = 0; i < K_ARRAY_LEN(names); i++)
        if (karg_eq(a, names[i].name)) return names[i].type;
    return SCAN_TYPE_UNKNOWN;
}

int scan_args_parse(client *c, int first, unsigned allowed, scan_args *out) {
    *out = (scan_args){.count = 10};
    for (int i = first; i < c->argc; i++) {
        const karg *opt = &c->argv[i];
        int has_value = i + 1 < c->argc;
        if (karg_eq(opt, "count") && has_value) {
            if (!arg_to_ll(c, &c->argv[++i], &out->count)) return 0;
            if (out->count < 1) {
                reply_syntax_error(c);
                return 0;
            }
        } else if (karg_eq(opt, "match") && has_value) {
            const karg *p = &c->argv[++i];
            out->pat = p->len == 1 && p->ptr[0] == '*' ? NULL : p;
        } else if (karg_eq(opt, "type") && (allowed & SCAN_ARGS_TYPE) && has_value) {
            out->type = &c->argv[++i];
        } else if (karg_eq(opt, "novalues")) {
            if (!(allowed & SCAN_ARGS_NOVALUES)) {
                reply_error(c, "ERR NOVALUES option can only be used in HSCAN");
                return 0;
            }
            out->novalues = 1;
        } else if (karg_eq(opt, "noscores")) {
            if (!(allowed & SCAN_ARGS_NOSCORES)) {
                reply_error(c, "ERR NOSCORES option can only be used in ZSCAN");
                return 0;
            }
            out->noscores = 1;
        } else {
            reply_syntax_error(c);
            return 0;
        }
    }
    return 1;
}

static void cmd_scan(client *c) {
    unsigned long long cursor;
    if (!arg_to_scan_cursor(c, &c->argv[1], &cursor)) return;
    scan_args a;
    if (!scan_args_parse(c, 2, SCAN_ARGS_TYPE, &a)) return;
    scan_state s = {.d = c->db, .pat = a.pat, .type = SCAN_TYPE_ANY};
    if (a.type) {
        s.type = scan_type_by_name(a.type);
        if (s.type == SCAN_TYPE_UNKNOWN) {
            reply_errorf(c, "ERR unknown type name '%.*s'", (int)a.type->len, a.type->ptr);
            return;
        }
    }
    long long count = a.count;

    /* Visit buckets until COUNT entries were seen, but at most 10*COUNT
     * buckets, so a sparse table cannot stall the server. */
    long long maxiter = count > LLONG_MAX / 10 ? LLONG_MAX : count * 10;
    size_t cur = (size_t)cursor;
    do {
        cur = db_scan(c->db, cur, scan_cb, &s);
    } while (cur && maxiter-- && s.sampled < count);

    char buf[24];
    int n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)cur);
    reply_array(c, 2);
    reply_bulk(c, buf, (size_t)n);
    reply_keys_and_free(c, &s.found);
}

/* Each round either returns a live key or deletes an expired one, so the
 * loop ends. While removals are deferred (CLIENT PAUSE) an expired key
 * stays: after RANDOMKEY_PAUSED_TRIES expired ones the last is returned, as
 * Valkey does, rather than looping on a database of expired keys. */
#define RANDOMKEY_PAUSED_TRIES 100

static void cmd_randomkey(client *c) {
    for (int tries = 1;; tries++) {
        db_entry *e = db_random_entry(c->db, 0);
        if (!e) {
            reply_null(c);
            return;
        }
        size_t len;
        const char *key = db_entry_key(e, &len);
        if (!db_is_expired(e) || (db_removals_deferred() && tries >= RANDOMKEY_PAUSED_TRIES)) {
            reply_bulk(c, key, len);
            return;
        }
        db_lookup_quiet(c->db, key, len); /* expires it */
    }
}

static void cmd_dbsize(client *c) {
    reply_int(c, (long long)db_size(c->db));
}

/* ---- SELECT, SWAPDB, FLUSHDB, FLUSHALL ---- */

static void cmd_select(client *c) {
    int id;
    if (!arg_to_int(c, &c->argv[1], NULL, &id)) return;
    if (!db_get(id)) {
        reply_error(c, "ERR DB index is out of range");
        return;
    }
    client_set_db(c, id);
    reply_ok(c);
}

static void cmd_swapdb(client *c) {
    int a, b;
    if (!arg_to_int(c, &c->argv[1], "ERR invalid first DB index", &a)) return;
    if (!arg_to_int(c, &c->argv[2], "ERR invalid second DB index", &b)) return;
    if (!db_get(a) || !db_get(b)) {
        reply_error(c, "ERR DB index is out of range");
        return;
    }
    db_swap(a, b);
    reply_ok(c);
}

/* [ASYNC|SYNC]; without either, lazyfree-lazy-user-flush decides. Sets
 * *async; 0 after a syntax error (replied). */
static int flush_parse_options(client *c, int *async) {
    if (c->argc == 1) {
        *async = db_opts()->lazyfree.user_flush;
        return 1;
    }
    if (c->argc == 2 && karg_eq(&c->argv[1], "sync")) {
        *async = 0;
        return 1;
    }
    if (c->argc == 2 && karg_eq(&c->argv[1], "async")) {
        *async = 1;
        return 1;
    }
    reply_syntax_error(c);
    return 0;
}

static void cmd_flushdb(client *c) {
    int async;
    if (!flush_parse_options(c, &async)) return;
    if (async)
        db_flush_async(c->db);
    else
        db_flush(c->db);
    reply_ok(c);
}

static void cmd_flushall(client *c) {
    int async;
    if (!flush_parse_options(c, &async)) return;
    if (async)
        db_flush_all_async();
    else
        db_flush_all();
    reply_ok(c);
}

/* ---- EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT ---- */

#define EXPIRE_NX (1 << 0)
#define EXPIRE_XX (1 << 1)
#define EXPIRE_GT (1 << 2)
#define EXPIRE_LT (1 << 3)

static int expire_parse_flags(client *c, int *flags) {
    static const struct {
        const char *name;
        int flag;
    } opts[] = {{"nx", EXPIRE_NX}, {"xx", EXPIRE_XX}, {"gt", EXPIRE_GT}, {"lt", EXPIRE_LT}};
    for (int j = 3; j < c->argc; j++) {
        const karg *opt = &c->argv[j];
        size_t i = 0;
        while (i < K_ARRAY_LEN(opts) && !karg_eq(opt, opts[i].name))
            i++;
        if (i == K_ARRAY_LEN(opts)) {
            reply_errorf(c, "ERR Unsupported option %.*s", (int)opt->len, opt->ptr);
            return 0;
        }
        *flags |= opts[i].flag;
    }
    if ((*flags & EXPIRE_NX) && (*flags & (EXPIRE_XX | EXPIRE_GT | EXPIRE_LT))) {
        reply_error(c, "ERR NX and XX, GT or LT options at the same time are not compatible");
        return 0;
    }
    if ((*flags & EXPIRE_GT) && (*flags & EXPIRE_LT)) {
        reply_error(c, "ERR GT and LT options at the same time are not compatible");
        return 0;
    }
    return 1;
}

/* Whether NX/XX/GT/LT allow replacing `current` (-1: none) with `when`.
 * A key without a TTL counts as an infinite one for GT and LT. */
static int expire_flags_allow(int flags, int64_t current, long long when) {
    if ((flags & EXPIRE_NX) && current != -1) return 0;
    if ((flags & EXPIRE_XX) && current == -1) return 0;
    if ((flags & EXPIRE_GT) && (current == -1 || when <= current)) return 0;
    if ((flags & EXPIRE_LT) && current != -1 && when >= current) return 0;
    return 1;
}

/* Converts the time argument to absolute unix ms: basetime is now for the
 * relative forms and 0 for the *AT ones. */
static int expire_parse_time(client *c, long long basetime, int seconds, const char *name,
                             long long *when) {
    if (!arg_to_ll(c, &c->argv[2], when)) return 0;
    if (seconds) {
        if (*when > LLONG_MAX / 1000 || *when < LLONG_MIN / 1000) goto invalid;
        *when *= 1000;
    }
    /* Negative times are allowed (they delete the key); only overflow is
     * an error. */
    if (*when > LLONG_MAX - basetime) goto invalid;
    *when += basetime;
    return 1;
invalid:
    reply_errorf(c, "ERR invalid expire time in '%s' command", name);
    return 0;
}

static void expire_generic(client *c, long long basetime, int seconds, const char *name) {
    const karg *key = &c->argv[1];
    int flags = 0;
    long long when;
    if (!expire_parse_flags(c, &flags)) return;
    if (!expire_parse_time(c, basetime, seconds, name, &when)) return;
    db_entry *e = db_lookup(c->db, key->ptr, key->len, 0);
    if (!e || !expire_flags_allow(flags, db_entry_expire(e), when)) {
        reply_int(c, 0);
        return;
    }
    /* A time already past deletes the key (without counting it as expired,
     * as in Valkey). */
    if (when <= event_cached_ms()) {
        db_delete(c->db, key->ptr, key->len);
        notify_key(c, NOTIFY_GENERIC, "del", key);
    } else {
        db_set_expire(c->db, e, when);
        notify_key(c, NOTIFY_GENERIC, "expire", key);
    }
    reply_int(c, 1);
}

static void cmd_expire(client *c) {
    expire_generic(c, event_cached_ms(), 1, "expire");
}

static void cmd_pexpire(client *c) {
    expire_generic(c, event_cached_ms(), 0, "pexpire");
}

static void cmd_expireat(client *c) {
    expire_generic(c, 0, 1, "expireat");
}

static void cmd_pexpireat(client *c) {
    expire_generic(c, 0, 0, "pexpireat");
}

/* ---- TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST ---- */

/* Milliseconds (>= 0) to seconds rounded half up: Valkey's (ms + 500) /
 * 1000, without its overflow for times near LLONG_MAX (PEXPIREAT k
 * 9223372036854775807, then EXPIRETIME k answers 9223372036854776). */
static long long ms_to_rounded_s(long long ms) {
    return ms / 1000 + (ms % 1000 >= 500);
}

static void ttl_generic(client *c, int output_ms, int output_abs) {
    db_entry *e = lookup_notouch(c->db, &c->argv[1]);
    if (!e) {
        reply_int(c, -2);
        return;
    }
    int64_t when = db_entry_expire(e);
    if (when == -1) {
        reply_int(c, -1);
        return;
    }
    long long ttl = output_abs ? when : when - event_cached_ms();
    if (ttl < 0) ttl = 0;
    reply_int(c, output_ms ? ttl : ms_to_rounded_s(ttl));
}

static void cmd_ttl(client *c) {
    ttl_generic(c, 0, 0);
}

static void cmd_pttl(client *c) {
    ttl_generic(c, 1, 0);
}

static void cmd_expiretime(client *c) {
    ttl_generic(c, 0, 1);
}

static void cmd_pexpiretime(client *c) {
    ttl_generic(c, 1, 1);
}

static void cmd_persist(client *c) {
    const karg *key = &c->argv[1];
    db_entry *e = db_lookup(c->db, key->ptr, key->len, 0);
    int removed = e && db_persist(c->db, e); /* db_persist signals WATCH */
    if (removed) notify_key(c, NOTIFY_GENERIC, "persist", key);
    reply_int(c, removed);
}

/* ---- container commands: OBJECT, MEMORY ---- */

/* The key of OBJECT <sub> <key>; replies null when it does not exist. */
static db_entry *object_lookup(client *c) {
    db_entry *e = lookup_notouch(c->db, &c->argv[2]);
    if (!e) reply_null(c);
    return e;
}

static void object_encoding(client *c) {
    db_entry *e = object_lookup(c);
    if (e) reply_bulk_cstr(c, db_entry_encoding(e));
}

static void object_refcount(client *c) {
    db_entry *e = object_lookup(c);
    if (e) reply_int(c, db_entry_refcount(e));
}

#define LFU_SWITCH_NOTE                                                                            \
    "Please note that when switching between policies at runtime LRU and LFU data will take "      \
    "some time to adjust."

static void object_idletime(client *c) {
    db_entry *e = object_lookup(c);
    if (!e) return;
    if (lfu_policy()) {
        reply_error(
            c, "ERR An LFU maxmemory policy is selected, idle time not tracked. " LFU_SWITCH_NOTE);
        return;
    }
    reply_int(c, (long long)db_idle_seconds(e));
}

static void object_freq(client *c) {
    db_entry *e = object_lookup(c);
    if (!e) return;
    if (!lfu_policy()) {
        reply_error(c, "ERR An LFU maxmemory policy is not selected, access frequency not "
                       "tracked. " LFU_SWITCH_NOTE);
        return;
    }
    reply_int(c, (long long)db_lfu_freq(e));
}

static void object_help(client *c) {
    static const char *const lines[] = {
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
    };
    reply_help(c, "OBJECT", lines, K_ARRAY_LEN(lines));
}

/* ---- the table (arity, flags, key positions, group, since: Valkey's) ---- */

/* clang-format off */
#define KEY_CMD(n, p, a, f, fk, lk, st, g, s, v) \
    {.name = n, .proc = p, .arity = a, .flags = f, .first_key = fk, .last_key = lk, \
     .key_step = st, .group = g, .summary = s, .since = v}

#define SUB(n, p, a, fk, s) \
    {.name = n, .proc = p, .arity = a, .flags = CMD_READONLY, .first_key = fk, .last_key = fk, \
     .key_step = fk ? 1 : 0, .summary = s}

#define HELP_SUB(p) \
    {.name = "help", .proc = p, .arity = 2, .flags = CMD_LOADING | CMD_STALE, \
     .summary = "Returns helpful text about the different subcommands."}

static command object_subcommands[] = {
    SUB("encoding", object_encoding, 3, 2, "Returns the internal encoding of an object."),
    SUB("freq", object_freq, 3, 2, "Returns the logarithmic access frequency counter of an object."),
    SUB("idletime", object_idletime, 3, 2, "Returns the time since the last access to an object."),
    SUB("refcount", object_refcount, 3, 2, "Returns the reference count of a value of a key."),
    HELP_SUB(object_help),
    {.name = NULL},
};

static command keys_table[] = {
    KEY_CMD("del", cmd_del, -2, CMD_WRITE, 1, -1, 1, "generic", "Deletes one or more keys.", "1.0.0"),
    KEY_CMD("unlink", cmd_unlink, -2, CMD_WRITE | CMD_FAST, 1, -1, 1, "generic", "Asynchronously deletes one or more keys.", "4.0.0"),
    KEY_CMD("exists", cmd_exists, -2, CMD_READONLY | CMD_FAST, 1, -1, 1, "generic", "Determines whether one or more keys exist.", "1.0.0"),
    KEY_CMD("touch", cmd_touch, -2, CMD_READONLY | CMD_FAST, 1, -1, 1, "generic", "Returns the number of existing keys out of those specified after updating the time they were last accessed.", "3.2.1"),
    KEY_CMD("type", cmd_type, 2, CMD_READONLY | CMD_FAST, 1, 1, 1, "generic", "Determines the type of value stored at a key.", "1.0.0"),
    KEY_CMD("rename", cmd_rename, 3, CMD_WRITE, 1, 2, 1, "generic", "Renames a key and overwrites the destination.", "1.0.0"),
    KEY_CMD("renamenx", cmd_renamenx, 3, CMD_WRITE | CMD_FAST, 1, 2, 1, "generic", "Renames a key only when the target key name doesn't exist.", "1.0.0"),
    KEY_CMD("move", cmd_move, 3, CMD_WRITE | CMD_FAST, 1, 1, 1, "generic", "Moves a key to another database.", "1.0.0"),
    KEY_CMD("copy", cmd_copy, -3, CMD_WRITE | CMD_DENYOOM, 1, 2, 1, "generic", "Copies the value of a key to a new key.", "6.2.0"),
    KEY_CMD("keys", cmd_keys, 2, CMD_READONLY, 0, 0, 0, "generic", "Returns all key names that match a pattern.", "1.0.0"),
    KEY_CMD("scan", cmd_scan, -2, CMD_READONLY, 0, 0, 0, "generic", "Iterates over the key names in the database.", "2.8.0"),
    KEY_CMD("randomkey", cmd_randomkey, 1, CMD_READONLY, 0, 0, 0, "generic", "Returns a random key name from the database.", "1.0.0"),
    KEY_CMD("dbsize", cmd_dbsize, 1, CMD_READONLY | CMD_FAST, 0, 0, 0, "server", "Returns the number of keys in the database.", "1.0.0"),
    KEY_CMD("select", cmd_select, 2, CMD_LOADING | CMD_STALE | CMD_FAST, 0, 0, 0, "connection", "Changes the selected database.", "1.0.0"),
    KEY_CMD("swapdb", cmd_swapdb, 3, CMD_WRITE | CMD_FAST, 0, 0, 0, "server", "Swaps two databases.", "4.0.0"),
    KEY_CMD("flushdb", cmd_flushdb, -1, CMD_WRITE, 0, 0, 0, "server", "Remove all keys from the current database.", "1.0.0"),
    KEY_CMD("flushall", cmd_flushall, -1, CMD_WRITE, 0, 0, 0, "server", "Removes all keys from all databases.", "1.0.0"),
    KEY_CMD("expire", cmd_expire, -3, CMD_WRITE | CMD_FAST, 1, 1, 1, "generic", "Sets the expiration time of a key in seconds.", "1.0.0"),
    KEY_CMD("pexpire", cmd_pexpire, -3, CMD_WRITE | CMD_FAST, 1, 1, 1, "generic", "Sets the expiration time of a key in milliseconds.", "2.6.0"),
    KEY_CMD("expireat", cmd_expireat, -3, CMD_WRITE | CMD_FAST, 1, 1, 1, "generic", "Sets the expiration time of a key to a Unix timestamp.", "1.2.0"),
    KEY_CMD("pexpireat", cmd_pexpireat, -3, CMD_WRITE | CMD_FAST, 1, 1, 1, "generic", "Sets the expiration time of a key to a Unix milliseconds timestamp.", "2.6.0"),
    KEY_CMD("ttl", cmd_ttl, 2, CMD_READONLY | CMD_FAST, 1, 1, 1, "generic", "Returns the expiration time in seconds of a key.", "1.0.0"),
    KEY_CMD("pttl", cmd_pttl, 2, CMD_READONLY | CMD_FAST, 1, 1, 1, "generic", "Returns the expiration time in milliseconds of a key.", "2.6.0"),
    KEY_CMD("expiretime", cmd_expiretime, 2, CMD_READONLY | CMD_FAST, 1, 1, 1, "generic", "Returns the expiration time of a key as a Unix timestamp.", "7.0.0"),
    KEY_CMD("pexpiretime", cmd_pexpiretime, 2, CMD_READONLY | CMD_FAST, 1, 1, 1, "generic", "Returns the expiration time of a key as a Unix milliseconds timestamp.", "7.0.0"),
    KEY_CMD("persist", cmd_persist, 2, CMD_WRITE | CMD_FAST, 1, 1, 1, "generic", "Removes the expiration time of a key.", "2.2.0"),
    {.name = "object", .arity = -2, .group = "generic", .since = "2.2.3",
     .summary = "A container for object introspection commands.", .subcommands = object_subcommands},
};
/* clang-format on */

const command_family commands_keys = {keys_table, K_ARRAY_LEN(keys_table)};
