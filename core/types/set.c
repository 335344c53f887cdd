/* set.c -- the set value and its three encodings (see set.h).
 *
 * The kobj's v.ptr is the encoding's structure: an intset, a pack of
 * members, or a hashtable of set_elem. Conversions follow Valkey 8.0.1's
 * rules, so OBJECT ENCODING answers as Valkey would after the same
 * commands. */
#include "types/set.h"

#include "common/common.h"
#include "common/kmem.h"
#include "ds/intset.h"
#include "ds/pack.h"
#include "keyspace/db.h"

#include <limits.h>
#include <string.h>
#include <time.h>

/* Valkey's limits: an intset holds at most 2^30 members whatever the
 * directive says, and a listpack grows to at most 1 GB. */
#define SET_INTSET_HARD_MAX (1u << 30)
#define SET_PACK_SAFE_BYTES (1u << 30)

/* ---- a table's member: one allocation, a length prefix and the bytes.
 * The prefix is one byte below 255; 255 says a size_t length follows. */

typedef unsigned char set_elem;

#define SET_ELEM_LONG 255

static set_elem *set_elem_new(const char *s, size_t len) {
    size_t head = len < SET_ELEM_LONG ? 1 : 1 + sizeof(size_t);
    set_elem *e = km_alloc(head + len);
    if (len < SET_ELEM_LONG) {
        e[0] = (unsigned char)len;
    } else {
        e[0] = SET_ELEM_LONG;
        memcpy(e + 1, &len, sizeof(len));
    }
    memcpy(e + head, s, len);
    return e;
}

static const void *set_elem_key(const void *entry, size_t *len) {
    const set_elem *e = entry;
    if (e[0] < SET_ELEM_LONG) {
        *len = e[0];
        return e + 1;
    }
    memcpy(len, e + 1, sizeof(*len));
    return e + 1 + sizeof(size_t);
}

static void set_elem_free(void *entry) {
    km_free(entry);
}

static const hashtable_type set_table_type = {
    .entry_key = set_elem_key, .entry_free = set_elem_free, .grow_fill = HASHTABLE_GROW_FILL_TIGHT};
/* SRANDMEMBER's scratch table borrows the set's members. */
static const hashtable_type set_borrow_type = {.entry_key = set_elem_key};

/* ---- randomness: a splitmix64 stream (members are picked, not secrets) */

static uint64_t set_rng_state;

static uint64_t set_rng(void) {
    uint64_t z = (set_rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform index below n (n > 0). */
static size_t set_rng_below(size_t n) {
    return (size_t)(set_rng() % n);
}

/* ---- helpers ---- */

static const type_options *set_opts(void) {
    return &db_opts()->types;
}

static size_t set_intset_max(void) {
    long long n = set_opts()->set_max_intset_entries;
    return n >= (long long)SET_INTSET_HARD_MAX ? SET_INTSET_HARD_MAX : (size_t)n;
}

const char *set_member_str(const set_member *m, char *buf, size_t *len) {
    if (m->s) {
        *len = m->len;
        return m->s;
    }
    *len = ll_to_str(buf, m->v);
    return buf;
}

/* The encoding's structure behind v.ptr. */
static inline intset *set_ints(const kobj *o) {
    return (intset *)(void *)o->v.ptr;
}
static inline pack *set_pack(const kobj *o) {
    return (pack *)o->v.ptr;
}
static inline hashtable *set_table(const kobj *o) {
    return (hashtable *)(void *)o->v.ptr;
}

static inline void set_put(kobj *o, void *ptr) {
    o->v.ptr = ptr;
}

kobj *set_create_intset(void) {
    return obj_new_aggregate(OBJ_SET, OBJ_ENC_INTSET, intset_new());
}

kobj *set_create_pack(void) {
    return obj_new_aggregate(OBJ_SET, OBJ_ENC_LISTPACK, pack_new());
}

kobj *set_create_table(void) {
    return obj_new_aggregate(OBJ_SET, OBJ_ENC_HASHTABLE, hashtable_create(&set_table_type));
}

int set_is_intset(const kobj *o) {
    return o->encoding == OBJ_ENC_INTSET;
}

kobj *set_create(const char *first, size_t len, size_t size_hint) {
    long long v;
    const type_options *t = set_opts();
    if (str_to_ll(first, len, &v) && size_hint <= (unsigned long long)t->set_max_intset_entries)
        return set_create_intset();
    if (size_hint <= (unsigned long long)t->set_max_listpack_entries) return set_create_pack();
    return set_create_table();
}

size_t set_size(const kobj *o) {
    switch (o->encoding) {
    case OBJ_ENC_INTSET:
        return intset_count(set_ints(o));
    case OBJ_ENC_LISTPACK:
        return pack_count(set_pack(o));
    default:
        return hashtable_size(set_table(o));
    }
}

/* ---- iteration ---- */

void set_iter_init(set_iter *it, const kobj *o) {
    it->o = o;
    it->pos = 0;
    it->started = 0;
    if (o->encoding == OBJ_ENC_HASHTABLE) hashtable_iter_init(&it->hi, set_table(o), 0);
}

static void set_member_from_pack(const pack *p, size_t pos, set_member *m) {
    pack_val pv;
    pack_get(p, pos, &pv);
    m->s = (const char *)pv.s;
    m->len = pv.len;
    m->v = pv.v;
}

static void set_member_from_elem(const set_elem *e, set_member *m) {
    m->s = set_elem_key(e, &m->len);
    m->v = 0;
}

int set_iter_next(set_iter *it, set_member *m) {
    const kobj *o = it->o;
    if (o->encoding == OBJ_ENC_INTSET) {
        const intset *is = set_ints(o);
        if (it->pos >= intset_count(is)) return 0;
        m->s = NULL;
        m->len = 0;
        m->v = intset_get(is, it->pos++);
        return 1;
    }
    if (o->encoding == OBJ_ENC_LISTPACK) {
        const pack *p = set_pack(o);
        it->pos = it->started ? (it->pos ? pack_next(p, it->pos) : 0) : pack_first(p);
        it->started = 1;
        if (!it->pos) return 0;
        set_member_from_pack(p, it->pos, m);
        return 1;
    }
    void *e;
    if (!hashtable_iter_next(&it->hi, &e)) return 0;
    set_member_from_elem(e, m);
    return 1;
}

void set_iter_reset(set_iter *it) {
    if (it->o->encoding == OBJ_ENC_HASHTABLE) hashtable_iter_reset(&it->hi);
}

/* ---- conversions ---- */

static void set_free_encoding(kobj *o) {
    switch (o->encoding) {
    case OBJ_ENC_INTSET:
        intset_free(set_ints(o));
        break;
    case OBJ_ENC_LISTPACK:
        pack_free(set_pack(o));
        break;
    default:
        hashtable_release(set_table(o));
    }
}

static void set_to_table(kobj *o) {
    hashtable *ht = hashtable_create(&set_table_type);
    set_iter it;
    set_member m;
    set_iter_init(&it, o);
    while (set_iter_next(&it, &m)) {
        char buf[24];
        size_t len;
        const char *s = set_member_str(&m, buf, &len);
        hashtable_add(ht, set_elem_new(s, len), NULL);
    }
    set_iter_reset(&it);
    set_free_encoding(o);
    o->encoding = OBJ_ENC_HASHTABLE;
    set_put(o, ht);
}

static void set_intset_to_pack(kobj *o) {
    const intset *is = set_ints(o);
    pack *p = pack_new();
    for (size_t i = 0; i < intset_count(is); i++)
        p = pack_append_int(p, intset_get(is, i));
    set_free_encoding(o);
    o->encoding = OBJ_ENC_LISTPACK;
    set_put(o, p);
}

void set_reserve(kobj *o, size_t size_hint) {
    const type_options *t = set_opts();
    if ((o->encoding == OBJ_ENC_LISTPACK &&
         size_hint > (unsigned long long)t->set_max_listpack_entries) ||
        (o->encoding == OBJ_ENC_INTSET &&
         size_hint > (unsigned long long)t->set_max_intset_entries))
        set_to_table(o);
}

void set_try_intset(kobj *o) {
    if (o->encoding == OBJ_ENC_INTSET || set_size(o) > set_intset_max()) return;
    intset *is = intset_new();
    set_iter it;
    set_member m;
    int ok = 1;
    set_iter_init(&it, o);
    while (ok && set_iter_next(&it, &m)) {
        long long v = m.v;
        int added;
        if (m.s && !str_to_ll(m.s, m.len, &v))
            ok = 0;
        else
            is = intset_add(is, v, &added);
    }
    set_iter_reset(&it);
    if (!ok) {
        intset_free(is);
        return;
    }
    set_free_encoding(o);
    o->encoding = OBJ_ENC_INTSET;
    set_put(o, is);
}

/* Digits of v with its sign (the length of its decimal string). */
static size_t set_digits(long long v) {
    char buf[24];
    return ll_to_str(buf, v);
}

/* Whether an intset receiving the non-integer s[0..len) becomes a listpack
 * (rather than a table): the members fit the listpack limits, judged from
 * the widest of the smallest and the largest member, as Valkey judges. */
static int set_intset_fits_pack(const intset *is, size_t len) {
    const type_options *t = set_opts();
    size_t n = intset_count(is), widest = 0, bytes = 0;
    if (n) {
        size_t dmin = set_digits(intset_min(is)), dmax = set_digits(intset_max(is));
        widest = dmin > dmax ? dmin : dmax;
        char buf[24];
        size_t bmin = pack_entry_size(buf, ll_to_str(buf, intset_min(is)));
        size_t bmax = pack_entry_size(buf, ll_to_str(buf, intset_max(is)));
        bytes = (bmin > bmax ? bmin : bmax) * n;
    }
    return n < (unsigned long long)t->set_max_listpack_entries &&
           len <= (unsigned long long)t->set_max_listpack_value &&
           widest <= (unsigned long long)t->set_max_listpack_value &&
           bytes + len <= SET_PACK_SAFE_BYTES;
}

/* ---- add, remove, contains ---- */

static int set_table_add(hashtable *ht, const char *s, size_t len) {
    if (hashtable_find(ht, s, len)) return 0;
    hashtable_add(ht, set_elem_new(s, len), NULL);
    return 1;
}

static int set_intset_add(kobj *o, long long v) {
    int added;
    set_put(o, intset_add(set_ints(o), v, &added));
    if (added && intset_count(set_ints(o)) > set_intset_max()) set_to_table(o);
    return added;
}

int set_add(kobj *o, const char *s, size_t len) {
    long long v;
    if (o->encoding == OBJ_ENC_HASHTABLE) return set_table_add(set_table(o), s, len);
    if (o->encoding == OBJ_ENC_INTSET) {
        if (str_to_ll(s, len, &v)) return set_intset_add(o, v);
        if (set_intset_fits_pack(set_ints(o), len))
            set_intset_to_pack(o);
        else
            set_to_table(o);
        return set_add(o, s, len); /* the value is no member: it is added */
    }
    pack *p = set_pack(o);
    size_t first = pack_first(p);
    if (first && pack_find(p, first, s, len, 0)) return 0;
    const type_options *t = set_opts();
    if (pack_count(p) < (unsigned long long)t->set_max_listpack_entries &&
        len <= (unsigned long long)t->set_max_listpack_value &&
        pack_bytes(p) + pack_entry_size(s, len) <= SET_PACK_SAFE_BYTES) {
        set_put(o, pack_append(p, s, len));
        return 1;
    }
    set_to_table(o);
    return set_table_add(set_table(o), s, len);
}

int set_add_member(kobj *o, const set_member *m) {
    if (!m->s && o->encoding == OBJ_ENC_INTSET) return set_intset_add(o, m->v);
    char buf[24];
    size_t len;
    const char *s = set_member_str(m, buf, &len);
    return set_add(o, s, len);
}

int set_remove(kobj *o, const char *s, size_t len) {
    if (o->encoding == OBJ_ENC_HASHTABLE) return hashtable_delete(set_table(o), s, len, NULL);
    if (o->encoding == OBJ_ENC_INTSET) {
        long long v;
        int removed = 0;
        if (str_to_ll(s, len, &v)) set_put(o, intset_remove(set_ints(o), v, &removed));
        return removed;
    }
    pack *p = set_pack(o);
    size_t pos = pack_first(p);
    if (pos) pos = pack_find(p, pos, s, len, 0);
    if (!pos) return 0;
    set_put(o, pack_delete(p, &pos, 1));
    return 1;
}

int set_remove_member(kobj *o, const set_member *m) {
    if (!m->s && o->encoding == OBJ_ENC_INTSET) {
        int removed;
        set_put(o, intset_remove(set_ints(o), m->v, &removed));
        return removed;
    }
    char buf[24];
    size_t len;
    const char *s = set_member_str(m, buf, &len);
    return set_remove(o, s, len);
}

int set_contains(const kobj *o, const char *s, size_t len) {
    if (o->encoding == OBJ_ENC_HASHTABLE) return hashtable_find(set_table(o), s, len) != NULL;
    if (o->encoding == OBJ_ENC_INTSET) {
        long long v;
        return str_to_ll(s, len, &v) && intset_contains(set_ints(o), v);
    }
    const pack *p = set_pack(o);
    size_t pos = pack_first(p);
    return pos && pack_find(p, pos, s, len, 0);
}

int set_contains_member(const kobj *o, const set_member *m) {
    if (!m->s && o->encoding == OBJ_ENC_INTSET) return intset_contains(set_ints(o), m->v);
    char buf[24];
    size_t len;
    const char *s = set_member_str(m, buf, &len);
    return set_contains(o, s, len);
}

/* ---- random members ---- */

void set_random(const kobj *o, set_member *m) {
    if (o->encoding == OBJ_ENC_INTSET) {
        const intset *is = set_ints(o);
        m->s = NULL;
        m->len = 0;
        m->v = intset_get(is, set_rng_below(intset_count(is)));
    } else if (o->encoding == OBJ_ENC_LISTPACK) {
        const pack *p = set_pack(o);
        set_member_from_pack(p, pack_seek(p, (long long)set_rng_below(pack_count(p))), m);
    } else {
        set_member_from_elem(hashtable_fair_random(set_table(o)), m);
    }
}

kobj *set_pop_random(kobj *o) {
    set_member m;
    set_random(o, &m);
    char buf[24];
    size_t len;
    const char *s = set_member_str(&m, buf, &len);
    kobj *out = obj_string(s, len);
    set_remove_member(o, &m);
    return out;
}

/* Selection sampling (Knuth's algorithm S): one pass, each member kept
 * with probability needed/left, so every subset of `count` is equally
 * likely; members come in the set's order. */
static void set_sample_walk(const kobj *o, size_t count, set_member_fn fn, void *priv) {
    size_t left = set_size(o);
    set_iter it;
    set_member m;
    set_iter_init(&it, o);
    while (count && set_iter_next(&it, &m)) {
        if (set_rng_below(left--) < count) {
            fn(priv, &m);
            count--;
        }
    }
    set_iter_reset(&it);
}

/* A table with few more members than asked for: all of them in an array,
 * then a partial Fisher-Yates shuffle picks `count`. */
static void set_sample_shuffle(const kobj *o, size_t count, set_member_fn fn, void *priv) {
    size_t n = set_size(o), i = 0;
    void **all = km_alloc(n * sizeof(*all));
    hashtable_iter hi;
    void *e;
    hashtable_iter_init(&hi, set_table(o), 0);
    while (hashtable_iter_next(&hi, &e))
        all[i++] = e;
    hashtable_iter_reset(&hi);
    for (i = 0; i < count; i++) {
        size_t j = i + set_rng_below(n - i);
        void *t = all[i];
        all[i] = all[j];
        all[j] = t;
        set_member m;
        set_member_from_elem(all[i], &m);
        fn(priv, &m);
    }
    km_free(all);
}

/* A table much bigger than the count: random members until `count`
 * distinct ones were drawn (a scratch table spots repeats). */
static void set_sample_draw(const kobj *o, size_t count, set_member_fn fn, void *priv) {
    hashtable *seen = hashtable_create(&set_borrow_type);
    while (hashtable_size(seen) < count) {
        void *e = hashtable_fair_random(set_table(o));
        if (!hashtable_add(seen, e, NULL)) continue;
        set_member m;
        set_member_from_elem(e, &m);
        fn(priv, &m);
    }
    hashtable_release(seen);
}

void set_sample(const kobj *o, size_t count, set_member_fn fn, void *priv) {
    if (o->encoding != OBJ_ENC_HASHTABLE)
        set_sample_walk(o, count, fn, priv);
    else if (count * 3 > set_size(o)) /* Valkey's SRANDMEMBER_SUB_STRATEGY_MUL */
        set_sample_shuffle(o, count, fn, priv);
    else
        set_sample_draw(o, count, fn, priv);
}

/* ---- SSCAN ---- */

typedef struct set_scan_state {
    set_member_fn fn;
    void *priv;
    long long seen;
} set_scan_state;

static void set_scan_cb(void *priv, void *entry) {
    set_scan_state *st = priv;
    set_member m;
    set_member_from_elem(entry, &m);
    st->seen++;
    st->fn(st->priv, &m);
}

size_t set_scan(const kobj *o, size_t cursor, long long count, set_member_fn fn, void *priv) {
    if (o->encoding != OBJ_ENC_HASHTABLE) {
        set_iter it;
        set_member m;
        set_iter_init(&it, o);
        while (set_iter_next(&it, &m))
            fn(priv, &m);
        set_iter_reset(&it);
        return 0;
    }
    set_scan_state st = {.fn = fn, .priv = priv, .seen = 0};
    long long maxiter = count > LLONG_MAX / 10 ? LLONG_MAX : count * 10;
    do {
        cursor = hashtable_scan(set_table(o), cursor, set_scan_cb, &st);
    } while (cursor && maxiter-- && st.seen < count);
    return cursor;
}

/* ---- the type's operations ---- */

static const char *set_type_name(const kobj *o) {
    K_UNUSED(o);
    return "set";
}

static const char *set_encoding_name(const kobj *o) {
    switch (o->encoding) {
    case OBJ_ENC_INTSET:
        return "intset";
    case OBJ_ENC_LISTPACK:
        return "listpack";
    default:
        return "hashtable";
    }
}

/* A table's members are estimated from the first `samples` of them:
 * MEMORY USAGE, eviction and lazy free must not walk a big set. */
static size_t set_mem_usage(const kobj *o, size_t samples) {
    if (o->encoding == OBJ_ENC_INTSET) return km_usable(set_ints(o));
    if (o->encoding == OBJ_ENC_LISTPACK) return pack_bytes(set_pack(o));
    hashtable *ht = set_table(o);
    size_t n = hashtable_size(ht), seen = 0, bytes = 0;
    hashtable_iter hi;
    void *e;
    hashtable_iter_init(&hi, ht, 0);
    while (seen < samples && hashtable_iter_next(&hi, &e)) {
        bytes += km_usable(e);
        seen++;
    }
    hashtable_iter_reset(&hi);
    return hashtable_mem_usage(ht) + (seen ? bytes * n / seen : 0);
}

static kobj *set_copy(const kobj *o) {
    if (o->encoding == OBJ_ENC_INTSET)
        return obj_new_aggregate(OBJ_SET, OBJ_ENC_INTSET, intset_dup(set_ints(o)));
    if (o->encoding == OBJ_ENC_LISTPACK)
        return obj_new_aggregate(OBJ_SET, OBJ_ENC_LISTPACK, pack_merge(pack_new(), set_pack(o)));
    hashtable *ht = hashtable_create(&set_table_type);
    hashtable_iter hi;
    void *e;
    hashtable_iter_init(&hi, set_table(o), 0);
    while (hashtable_iter_next(&hi, &e)) {
        size_t len;
        const char *s = set_elem_key(e, &len);
        hashtable_add(ht, set_elem_new(s, len), NULL);
    }
    hashtable_iter_reset(&hi);
    return obj_new_aggregate(OBJ_SET, OBJ_ENC_HASHTABLE, ht);
}

static size_t set_free_effort(const kobj *o) {
    return o->encoding == OBJ_ENC_HASHTABLE ? hashtable_size(set_table(o)) : 1;
}

static const obj_type set_obj_type = {
    .type_name = set_type_name,
    .encoding_name = set_encoding_name,
    .free_value = set_free_encoding,
    .mem_usage = set_mem_usage,
    .copy = set_copy,
    .free_effort = set_free_effort,
};

void set_type_setup(void) {
    if (!set_rng_state) set_rng_state = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&set_rng_state;
    obj_set_type(OBJ_SET, &set_obj_type);
}
