/* set.h -- the set value: an unordered collection of distinct byte
 * strings, in one of three encodings chosen as Valkey 8.0.1 chooses them.
 *
 *   intset     (ds/intset.h) while every member is a canonical decimal
 *              integer and there are at most set-max-intset-entries;
 *   listpack   (ds/pack.h) while there are at most set-max-listpack-entries
 *              members of at most set-max-listpack-value bytes;
 *   hashtable  (ds/hashtable.h) otherwise; each member is one allocation
 *              (its length and bytes).
 *
 * A set only moves up (intset -> listpack or hashtable, listpack ->
 * hashtable) while it is modified; the thresholds are read live from
 * db_opts()->types, so CONFIG SET applies to the next write. The commands
 * work through this header and never look at the encoding.
 *
 * A member as read is a set_member: a string (s, len) or, when s is NULL,
 * an integer v standing for its decimal digits. s points into the set and
 * is valid until the set is next modified.
 *
 * Threads: main thread; a set no key references may be freed on the
 * lazy-free thread. */
#ifndef KEEL_TYPES_SET_H
#define KEEL_TYPES_SET_H

#include "ds/hashtable.h"
#include "keyspace/object.h"

#include <stddef.h>

typedef struct set_member {
    const char *s; /* NULL: the member is the integer v */
    size_t len;
    long long v;
} set_member;

/* Registers the set type's operations (types_setup). */
void set_type_setup(void);

/* A new empty set able to hold `first` (an intset when it is an integer),
 * sized for about size_hint members (Valkey's setTypeCreate). The caller
 * adds members before storing it: an empty set is never stored. */
kobj *set_create(const char *first, size_t len, size_t size_hint);
/* A new empty intset (SUNIONSTORE/SDIFFSTORE results start as one). */
kobj *set_create_intset(void);
/* A new empty listpack set (SINTERSTORE's results may start as one). */
kobj *set_create_pack(void);
/* A new empty hashtable set (SUNION/SDIFF's replied results). */
kobj *set_create_table(void);
/* 1 if o is an intset: the algebra picks its result's encoding from its
 * inputs' as Valkey does. */
int set_is_intset(const kobj *o);
/* Converts a compact set to a hashtable now when about size_hint members
 * are coming and they would not fit its encoding (SADD of many members). */
void set_reserve(kobj *o, size_t size_hint);
/* Converts a set whose members are all integers back to an intset when
 * they fit one (SINTERSTORE's result); otherwise leaves it. */
void set_try_intset(kobj *o);

/* 1 if added, 0 if already a member. */
int set_add(kobj *o, const char *s, size_t len);
int set_add_member(kobj *o, const set_member *m);
/* 1 if removed, 0 if not a member. */
int set_remove(kobj *o, const char *s, size_t len);
int set_remove_member(kobj *o, const set_member *m);
int set_contains(const kobj *o, const char *s, size_t len);
int set_contains_member(const kobj *o, const set_member *m);
size_t set_size(const kobj *o);

/* The member's bytes: s, or the integer formatted into buf (21 bytes). */
const char *set_member_str(const set_member *m, char *buf, size_t *len);

/* Iteration over every member; nothing may modify the set meanwhile. */
typedef struct set_iter {
    const kobj *o;
    size_t pos; /* intset: next index; listpack: next position (0: start) */
    int started;
    hashtable_iter hi;
} set_iter;
void set_iter_init(set_iter *it, const kobj *o);
/* 1 and *m for the next member, 0 at the end. */
int set_iter_next(set_iter *it, set_member *m);
void set_iter_reset(set_iter *it);

/* A random member of a non-empty set (uniform for the compact encodings,
 * near-uniform for a table, as Valkey's). */
void set_random(const kobj *o, set_member *m);
/* Calls fn on `count` distinct members chosen uniformly at random (count
 * < size): SRANDMEMBER's positive count. The members are valid during the
 * call only. */
typedef void (*set_member_fn)(void *priv, const set_member *m);
void set_sample(const kobj *o, size_t count, set_member_fn fn, void *priv);
/* Removes a random member of a non-empty set and returns it as a new
 * string object. */
kobj *set_pop_random(kobj *o);

/* SSCAN: a compact set hands every member to fn and returns 0; a table
 * visits from cursor until about count members were seen (at most 10 *
 * count steps) and returns the next cursor (0 when done). */
size_t set_scan(const kobj *o, size_t cursor, long long count, set_member_fn fn, void *priv);

#endif
