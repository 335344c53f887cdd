/* object.h -- reference-counted values.
 *
 * Every stored value is a kobj. Strings have three encodings, as in Valkey:
 * INT (a 64-bit integer kept in the object, for strings that are canonical
 * decimal integers), EMBSTR (short strings whose bytes follow the header in
 * the same allocation), and RAW (bytes in a separate buffer: long strings,
 * strings that grow with APPEND/SETRANGE, and big request arguments whose
 * socket buffer became the value without a copy).
 *
 * Values are shared by reference: a reply to GET may point at the object
 * instead of copying it, so an object lives until its last reference is
 * dropped, even after the key was overwritten or deleted.
 *
 * Small integers are shared, as in Valkey: obj_string/obj_int of a value in
 * 0..OBJ_SHARED_INTEGERS-1 return one preallocated INT object per value
 * whose refcount is OBJ_SHARED_REFCOUNT and never changes (obj_incref and
 * obj_decref leave it alone, so it is never freed and never overflows). A
 * shared object must never be modified: obj_make_writable copies it, and
 * code that updates a value in place checks obj_is_shared (or refcount ==
 * 1, which a shared object never has).
 *
 * Valkey stops sharing when maxmemory is set with an LRU/LFU policy,
 * because its access clock lives in the object and a shared object cannot
 * hold one clock per key. Keel keeps the clock in db_entry (keyspace/db.h),
 * so sharing is always safe here and Keel always shares.
 *
 * Threads: references are taken and dropped on the main thread; shared
 * objects are read-only, so any thread may read them. An object nobody
 * else can reach may be freed on the lazy-free thread (obj_free_detached,
 * keyspace/lazyfree.h). */
#ifndef KEEL_OBJECT_H
#define KEEL_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "common/strconv.h"

/* Type ids, Valkey's numbers (persistence will write them). The aggregate
 * types' operations live in core/types/, which registers them with
 * obj_set_type at types_setup. */
#define OBJ_STRING 0
#define OBJ_LIST 1
#define OBJ_SET 2
#define OBJ_ZSET 3
#define OBJ_HASH 4
#define OBJ_MODULE 5 /* a module's custom data type (see the SDK) */
#define OBJ_STREAM 6 /* types/stream.h */

/* Encoding ids, Valkey's numbers; OBJECT ENCODING prints Valkey's names
 * ("listpack" for Keel's compact encoding, ds/pack.h). */
#define OBJ_ENC_RAW 0
#define OBJ_ENC_INT 1
#define OBJ_ENC_HASHTABLE 2
#define OBJ_ENC_INTSET 6
#define OBJ_ENC_SKIPLIST 7
#define OBJ_ENC_EMBSTR 8
#define OBJ_ENC_QUICKLIST 9
#define OBJ_ENC_STREAM 10
#define OBJ_ENC_LISTPACK 11

/* Integers 0..OBJ_SHARED_INTEGERS-1 are shared objects (Valkey's value). */
#define OBJ_SHARED_INTEGERS 10000
/* The refcount of a shared object (Valkey's OBJ_SHARED_REFCOUNT, INT_MAX):
 * OBJECT REFCOUNT reports it as is. */
#define OBJ_SHARED_REFCOUNT 0x7fffffffu

/* Strings up to this length are embedded (header + bytes fit 64 bytes). */
#define OBJ_EMBSTR_MAX 44

/* The fields every value has come first, so that an object of an
 * aggregate type (list, set, zset, hash: type, encoding and one pointer)
 * is allocated with the first 16 bytes only, Valkey's robj size, one
 * 16-byte block per small collection instead of a 32-byte one. */
typedef struct kobj {
    uint32_t refcount;
    uint8_t type;
    uint8_t encoding;
    uint16_t flags; /* OBJ_FLAG_* */
    union {
        int64_t ival; /* INT */
        char *ptr;    /* RAW and EMBSTR: the bytes, NUL-terminated;
                       * aggregates: their encoding's structure */
        void *mod;    /* MODULE: the module's value */
    } v;
    /* Aggregate objects end here (OBJ_AGGREGATE_HEADER). */
    size_t len; /* string length (for INT: digits of the value) */
    /* Only RAW strings and module values are allocated with the fields
     * below: INT and EMBSTR objects end here (OBJ_SHORT_HEADER). */
    size_t cap;           /* RAW: allocated bytes at ptr (excl. NUL) */
    const void *mod_type; /* MODULE: its type */
} kobj;

#define OBJ_AGGREGATE_HEADER offsetof(kobj, len)
#define OBJ_SHORT_HEADER offsetof(kobj, cap)

/* Set by the first obj_incref and never cleared: an object without it has
 * had one holder all its life (the key that stores it), so once the key's
 * table is out of the keyspace no one else can reach it. The lazy-free
 * thread, freeing a flushed database, reads this flag and never the
 * refcount, which the main thread may be changing for a reply holding the
 * object. */
#define OBJ_FLAG_REFERENCED 0x1

/* The operations of one value type: every place that treats values by type
 * (TYPE, OBJECT ENCODING, freeing, MEMORY USAGE, COPY) goes through this
 * table, so a new type (hashes, lists, a module's type) is one table and no
 * `if (type == ...)` chain grows outside the types. The places persistence,
 * DUMP/RESTORE, DEBUG DIGEST and defragmentation will call are reserved at
 * the end, NULL until those exist. */
typedef struct obj_type {
    /* TYPE's answer (a module value's name is its registered type's). */
    const char *(*type_name)(const kobj *o);
    /* OBJECT ENCODING's answer. */
    const char *(*encoding_name)(const kobj *o);
    /* Frees what the value owns beyond the kobj header. */
    void (*free_value)(kobj *o);
    /* Bytes the value owns beyond the header (MEMORY USAGE, eviction,
     * lazy free). O(samples) at most: a type whose elements vary in size
     * and keeps no byte count estimates them from `samples` elements (or
     * nodes), OBJ_MEM_ALL_SAMPLES meaning all of them, as Valkey's
     * MEMORY USAGE SAMPLES does; a type that keeps a count ignores it. */
    size_t (*mem_usage)(const kobj *o, size_t samples);
    /* A new object with the same value (COPY); NULL when it cannot. */
    kobj *(*copy)(const kobj *o);
    /* The work freeing the value takes, in Valkey's units (lazyfree's
     * effort: elements of a table, nodes of a list); a value above
     * LAZYFREE_THRESHOLD goes to the lazy-free thread. NULL: 1. A type
     * that sets it promises that free_value may run on that thread: it
     * frees only what the value owns, through kmem, and touches no other
     * state (a type without it is always freed on the main thread). */
    size_t (*free_effort)(const kobj *o);
    /* Reserved. */
    void (*rdb_save)(void);
    void (*rdb_load)(void);
    void (*digest)(void);
    void (*defrag)(void);
} obj_type;

#define OBJ_TYPE_MAX 8

/* Sets the operations of type id (OBJ_*); strings are built in, the module
 * system sets OBJ_MODULE's. t is borrowed. */
void obj_set_type(int id, const obj_type *t);
const obj_type *obj_type_of(const kobj *o);

/* A string object holding a copy of s[0..len): INT, EMBSTR or RAW. */
kobj *obj_string(const char *s, size_t len);
/* A RAW string without integer detection (values that will grow). */
kobj *obj_string_raw(const char *s, size_t len);
/* A RAW string taking ownership of buf (km_alloc'ed, cap bytes + 1 for the
 * NUL); len bytes are valid. Used for big arguments read off the socket. */
kobj *obj_string_adopt(char *buf, size_t len, size_t cap);
/* An empty RAW string with room for cap bytes, to be filled by the caller. */
kobj *obj_string_alloc(size_t cap);
/* A new object of an aggregate type (OBJ_LIST..OBJ_HASH) holding ptr in
 * the given encoding (refcount 1): OBJ_AGGREGATE_HEADER bytes, no string
 * fields. */
kobj *obj_new_aggregate(uint8_t type, uint8_t encoding, void *ptr);
/* An INT object; the shared one for 0..OBJ_SHARED_INTEGERS-1. */
kobj *obj_int(int64_t value);
/* An INT object of its own (refcount 1) even for a small value. */
kobj *obj_int_unshared(int64_t value);

static inline int obj_is_shared(const kobj *o) {
    return o->refcount == OBJ_SHARED_REFCOUNT;
}

static inline kobj *obj_incref(kobj *o) {
    if (o->refcount != OBJ_SHARED_REFCOUNT) {
        o->refcount++;
        /* Written once: a second write could race with the lazy-free
         * thread reading the flag of an object it was handed. */
        if (!(o->flags & OBJ_FLAG_REFERENCED)) o->flags |= OBJ_FLAG_REFERENCED;
    }
    return o;
}
void obj_decref(kobj *o);
/* The type's free_effort of o (1 for types without one). */
size_t obj_free_effort(const kobj *o);
/* 1 when o may be freed off the main thread: a string, or a type with a
 * free_effort (see obj_type). */
int obj_free_anywhere(const kobj *o);
/* Frees o, which no one else references, on any thread (the lazy-free
 * thread): its value, then the object. A large string buffer is freed
 * here rather than handed to obj_free_large_hook (main thread only). */
void obj_free_detached(kobj *o);
/* Frees the buffer of a large RAW string (at least KM_LARGE bytes) when set;
 * the server hands it to an I/O thread. NULL: km_free. */
extern void (*obj_free_large_hook)(void *buf);

/* The bytes of a string. INT objects are formatted into buf, which must
 * hold at least 21 bytes. */
const char *obj_str(const kobj *o, char *buf, size_t *len);
/* Length of the string value without formatting. */
size_t obj_strlen(const kobj *o);
/* 1 and *out if the string is a valid 64-bit integer. */
int obj_get_int(const kobj *o, int64_t *out);

/* Makes a string value writable in place (RAW, refcount 1, room for at least
 * need bytes); returns the object to store, which may be a new one (the
 * caller's reference to o is consumed). A shared object is always copied. */
kobj *obj_make_writable(kobj *o, size_t need);

/* Elements an aggregate's size is estimated from by default (Valkey's
 * MEMORY USAGE default), and the count that means every element. */
#define OBJ_MEM_SAMPLES 5
#define OBJ_MEM_ALL_SAMPLES SIZE_MAX

/* Bytes this object uses (header, buffers), for MEMORY USAGE and sampling;
 * an aggregate's elements are estimated from OBJ_MEM_SAMPLES of them. */
size_t obj_mem_usage(const kobj *o);
/* The same from `samples` elements (see obj_type.mem_usage). */
size_t obj_mem_usage_sampled(const kobj *o, size_t samples);

const char *obj_encoding_name(const kobj *o);
/* TYPE's name of the value ("none" for a type without operations). */
const char *obj_type_name(const kobj *o);
/* A new object with the same value (COPY), or NULL if the type cannot. */
kobj *obj_copy(const kobj *o);

/* Parses a long double as Valkey does for INCRBYFLOAT (no spaces, not NaN;
 * "inf" is accepted and callers refuse it where it matters). */
int str_to_ld(const char *s, size_t len, long double *out);
/* Parses a double as Valkey's string2d (sorted set scores): strtod over
 * the whole slice, no leading space, not NaN, no overflow. */
int str_to_double(const char *s, size_t len, double *out);
/* Room double_to_str needs. */
#define DOUBLE_STR_MAX 32
/* Formats a double as Valkey's d2string (scores in replies and in the
 * compact encoding): the shortest digits that read back as the same
 * double, laid out as Valkey's fpconv ("1.5", "1e+20", "inf", "-0").
 * buf holds DOUBLE_STR_MAX bytes; returns the length. */
size_t double_to_str(char *buf, double v);
/* Formats a long double in Valkey's human style ("%.17Lf" with trailing
 * zeros trimmed). Returns the length, or 0 if buf is too small. */
size_t ld_to_str(char *buf, size_t buflen, long double v);

#endif
