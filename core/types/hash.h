/* hash.h -- the hash value: a map of fields to values, each field with an
 * optional expiry time (Valkey 9.0's per-field TTL).
 *
 * Encodings (OBJECT ENCODING): "listpack", one ds/pack.h pack holding
 * field, value, field, value... while the hash has at most
 * hash-max-listpack-entries fields and every field and value is at most
 * hash-max-listpack-value bytes; "hashtable" past either limit (converted
 * once, never back, as Valkey does). A field given a TTL converts the hash
 * too: a pack has no room for one. In the hashtable encoding each field is
 * one allocation holding its expiry (only when it has one), the field and
 * the value; fields with a TTL are also in a second table, so that expiry
 * visits those only.
 *
 * Expired fields: hash_expire_due() removes the fields whose time has come;
 * the commands call it before touching a hash (lazy expiry), and
 * hash_active_expire() runs it from the cron over the hashes registered
 * with hash_track_volatile() (active expiry). Nothing else looks at the
 * clock: every other call sees the fields as stored.
 *
 * Times are absolute unix milliseconds; HASH_NO_EXPIRE is "none".
 *
 * Threads: main thread (values are freed on the lazy-free thread too). */
#ifndef KEEL_HASH_H
#define KEEL_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "ds/hashtable.h"
#include "keyspace/object.h"
#include "types/types.h"

#define HASH_NO_EXPIRE INT64_MAX

/* Registers the hash type's operations and its keyspace hook (after
 * db_setup); borrows m until hash_type_teardown. */
void hash_type_setup(types_metrics *m);
void hash_type_teardown(void);

/* A field or value as read: s[0..len), valid until the hash is modified.
 * An integer stored compactly is formatted into buf. */
typedef struct hash_str {
    const char *s;
    size_t len;
    char buf[24];
} hash_str;

/* A new empty hash (listpack encoding), refcount 1. */
kobj *hash_new(void);
size_t hash_length(const kobj *o);
int hash_is_listpack(const kobj *o);

/* 1 and *val if the field exists. */
int hash_get(kobj *o, const char *f, size_t flen, hash_str *val);
int hash_exists(kobj *o, const char *f, size_t flen);

/* Sets field to value; the field loses its TTL unless HASH_SET_KEEPTTL.
 * With when != HASH_NO_EXPIRE the field gets that expiry instead.
 * Returns 1 if the field was created, 0 if it was updated. Converts the
 * encoding when a limit (read live from db_opts()) is passed. */
#define HASH_SET_KEEPTTL 1
int hash_set(kobj *o, const char *f, size_t flen, const char *v, size_t vlen, int flags,
             int64_t when);
/* 1 if the field existed and was removed. */
int hash_delete(kobj *o, const char *f, size_t flen);

/* ---- field expiry ---- */

/* The field's expiry: HASH_NO_EXPIRE when it has none; -2 when there is
 * no such field. */
int64_t hash_get_expire(kobj *o, const char *f, size_t flen);
/* HEXPIRE's conditions. */
#define HASH_EXP_NX 1      /* only fields without a TTL */
#define HASH_EXP_XX 2      /* only fields with one */
#define HASH_EXP_GT 4      /* only when later (no TTL counts as infinite) */
#define HASH_EXP_LT 8      /* only when earlier */
#define HASH_EXP_DELETE 16 /* `when` is past: remove the field instead */
/* Gives the field the expiry when (in the future). Returns HEXPIRE's codes:
 * -2 no such field, 0 the condition refused, 1 set, 2 removed (with
 * HASH_EXP_DELETE, once the condition lets it through). */
int hash_set_expire(kobj *o, const char *f, size_t flen, int64_t when, int cond);
/* Removes a field's TTL: -2 no such field, -1 it had none, 1 removed. */
int hash_persist(kobj *o, const char *f, size_t flen);
/* Fields with a TTL now. */
size_t hash_volatile_count(const kobj *o);
/* Removes every field whose expiry is at or before now; returns how many.
 * O(1) while no field is due; otherwise one pass over the fields with a
 * TTL. */
size_t hash_expire_due(kobj *o, int64_t now);
/* Counts n fields as expired in INFO's expired_fields: hash_expire_due
 * counts its own; the commands count the fields a time already past
 * removes (HEXPIRE 0, HSETEX/HGETEX with such a time), as Valkey does. */
void hash_note_expired(size_t n);

/* Notes that the hash at key in database dbid has fields with a TTL, so
 * the cron visits it; a key that later holds something else is dropped
 * from the list on its next visit. The hash type's keyspace hook calls it
 * for every write to a hash with such fields (commands, RENAME, COPY,
 * MOVE, RESTORE) and trades the ids of SWAPDB's two databases. */
void hash_track_volatile(int dbid, const char *key, size_t len);
/* The cron's step: visits registered hashes until about `budget` fields
 * were looked at, removing due fields (and hashes left empty). Returns the
 * fields removed. */
size_t hash_active_expire(int64_t now, size_t budget);
/* Hashes registered for active expiry (tests, INFO). */
size_t hash_tracked_count(void);
/* Hashes (stored or not yet freed) with at least one field with a TTL. */
size_t hash_volatile_hashes(void);

/* ---- walking ---- */

typedef struct hash_iter {
    kobj *o;
    size_t pos;        /* listpack: the next field's position */
    hashtable_iter hi; /* hashtable */
} hash_iter;

/* Unsafe: the hash must not change until hash_iter_reset. */
void hash_iter_init(hash_iter *it, kobj *o);
/* 1 and the next field and value (either pointer may be NULL), 0 at the
 * end. */
int hash_iter_next(hash_iter *it, hash_str *field, hash_str *val);
void hash_iter_reset(hash_iter *it);

/* One random field and its value (val may be NULL). The hash is not
 * empty. */
void hash_random(kobj *o, hash_str *field, hash_str *val);
/* count uniform picks (repeats allowed), each handed to fn with its value,
 * until fn returns 0 (a huge count stops with the client it replies to);
 * a small hash is snapshotted once, so this is O(size + count) there. */
typedef int (*hash_pick_fn)(void *priv, const hash_str *field, const hash_str *val);
void hash_random_picks(kobj *o, size_t count, hash_pick_fn fn, void *priv);

/* Calls fn for some fields: a listpack hash gives all of them and returns
 * 0; a hashtable walks one step of its cursor (hashtable_scan's
 * guarantees) and returns the next cursor. */
typedef void (*hash_scan_fn)(void *priv, const hash_str *field, const hash_str *val);
size_t hash_scan(kobj *o, size_t cursor, hash_scan_fn fn, void *priv);

#endif
