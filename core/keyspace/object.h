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
 * objects are read-only, so any thread may read them. */
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

/* Encoding ids, Valkey's numbers; OBJECT ENCODING prints Valkey's names
 * ("listpack" for Keel's compact encoding, ds/pack.h). */
#define OBJ_ENC_RAW 0
#define OBJ_ENC_INT 1
#define OBJ_ENC_HASHTABLE 2
#define OBJ_ENC_INTSET 6
#define OBJ_ENC_SKIPLIST 7
#define OBJ_ENC_EMBSTR 8
#define OBJ_ENC_QUICKLIST 9
#define OBJ_ENC_LISTPACK 11

/* Integers 0..OBJ_SHARED_INTEGERS-1 are shared objects (Valkey's value). */
#define OBJ_SHARED_INTEGERS 10000
/* The refcount of a shared object (Valkey's OBJ_SHARED_REFCOUNT, INT_MAX):
 * OBJECT REFCOUNT reports it as is. */
#define OBJ_SHARED_REFCOUNT 0x7fffffffu

/* Strings up to this length are embedded (header + bytes fit 64 bytes). */
#define OBJ_EMBSTR_MAX 44

typedef struct kobj {
    uint32_t refcount;
    uint8_t type;
    uint8_t encoding;
    uint16_t unused;
    size_t len; /* string length (for INT: digits of the value) */
    union {
        int64_t ival; /* INT */
        char *ptr;    /* RAW and EMBSTR: the bytes, NUL-terminated */
        void *mod;    /* MODULE: the module's value */
    } v;
    /* Only RAW strings and module values are allocated with the fields
     * below: INT and EMBSTR objects end here (OBJ_SHORT_HEADER). */
    size_t cap;           /* RAW: allocated bytes at ptr (excl. NUL) */
    const void *mod_type; /* MODULE: its type */
} kobj;

#define OBJ_SHORT_HEADER offsetof(kobj, cap)

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
    /* Bytes the value owns beyond the header (MEMORY USAGE, eviction). */
    size_t (*mem_usage)(const kobj *o);
    /* A new object with the same value (COPY); NULL when it cannot. */
    kobj *(*copy)(const kobj *o);
    /* The work freeing the value takes, in Valkey's units (lazyfree's
     * effort: elements of a table, nodes of a list); a value above
     * LAZYFREE_THRESHOLD goes to the lazy-free thread. NULL: 1. */
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
/* An INT object; the shared one for 0..OBJ_SHARED_INTEGERS-1. */
kobj *obj_int(int64_t value);
/* An INT object of its own (refcount 1) even for a small value. */
kobj *obj_int_unshared(int64_t value);

static inline int obj_is_shared(const kobj *o) {
    return o->refcount == OBJ_SHARED_REFCOUNT;
}

static inline kobj *obj_incref(kobj *o) {
    if (o->refcount != OBJ_SHARED_REFCOUNT) o->refcount++;
    return o;
}
void obj_decref(kobj *o);
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

/* Bytes this object uses (header, buffers), for MEMORY USAGE and sampling. */
size_t obj_mem_usage(const kobj *o);

const char *obj_encoding_name(const kobj *o);
/* TYPE's name of the value ("none" for a type without operations). */
const char *obj_type_name(const kobj *o);
/* A new object with the same value (COPY), or NULL if the type cannot. */
kobj *obj_copy(const kobj *o);

/* Parses a long double as Valkey does for INCRBYFLOAT (no spaces, not NaN;
 * "inf" is accepted and callers refuse it where it matters). */
int str_to_ld(const char *s, size_t len, long double *out);
int str_to_double(const char *s, size_t len, double *out);
/* Formats a long double in Valkey's human style ("%.17Lf" with trailing
 * zeros trimmed). Returns the length, or 0 if buf is too small. */
size_t ld_to_str(char *buf, size_t buflen, long double v);

#endif
