/* hash.c -- the hash value and its two encodings (see hash.h), field
 * expiry, and the list of hashes the cron visits for active expiry. */
#include "types/hash.h"

#include "common/common.h"
#include "common/kmem.h"
#include "ds/pack.h"
#include "keyspace/db.h"
#include "keyspace/notify.h"

#include <stdlib.h>
#include <string.h>

/* ---- the hashtable encoding's element ---- */

/* One allocation per field: a header, the expiry when it has one (so a
 * field without a TTL pays nothing for the feature), the field bytes, then
 * the value bytes. The header is two bytes, the field's length (under 128)
 * and the value's (under 256), for the common field: six bytes less than
 * two 32-bit lengths, which moves a field to a smaller allocator size
 * class for 6 of every 16 sizes. A longer field or value, or a TTL, has
 * the long header: a flag byte (HF_LONG, HF_TTL) and the two lengths as
 * unaligned 32-bit integers, then the expiry. */
typedef unsigned char hfield;

#define HF_LONG 0x80 /* a short header's first byte is under 128 */
#define HF_TTL 0x40  /* with HF_LONG: the expiry follows the lengths */
#define HF_SHORT_FLEN 128
#define HF_SHORT_VLEN 256
#define HF_SHORT_HEAD 2
#define HF_LONG_HEAD (1 + 2 * sizeof(uint32_t))

static inline int hf_is_long(const hfield *h) {
    return (h[0] & HF_LONG) != 0;
}
static inline int hf_has_ttl(const hfield *h) {
    return (h[0] & (HF_LONG | HF_TTL)) == (HF_LONG | HF_TTL);
}
static inline size_t hf_len_at(const hfield *h, size_t off) {
    uint32_t n;
    memcpy(&n, h + off, sizeof(n));
    return n;
}
static inline size_t hf_flen(const hfield *h) {
    return hf_is_long(h) ? hf_len_at(h, 1) : h[0];
}
static inline size_t hf_vlen(const hfield *h) {
    return hf_is_long(h) ? hf_len_at(h, 1 + sizeof(uint32_t)) : h[1];
}
static inline const char *hf_field(const hfield *h) {
    if (!hf_is_long(h)) return (const char *)h + HF_SHORT_HEAD;
    return (const char *)h + HF_LONG_HEAD + (hf_has_ttl(h) ? sizeof(int64_t) : 0);
}
static inline const char *hf_value(const hfield *h) {
    return hf_field(h) + hf_flen(h);
}
static inline int64_t hf_expire(const hfield *h) {
    if (!hf_has_ttl(h)) return HASH_NO_EXPIRE;
    int64_t when;
    memcpy(&when, h + HF_LONG_HEAD, sizeof(when));
    return when;
}
/* Rewrites the expiry of a field that has one (same size: in place). */
static inline void hf_set_expire(hfield *h, int64_t when) {
    memcpy(h + HF_LONG_HEAD, &when, sizeof(when));
}

static hfield *hf_new(const char *f, size_t flen, const char *v, size_t vlen, int64_t when) {
    size_t ttl = when != HASH_NO_EXPIRE ? sizeof(int64_t) : 0;
    int shrt = !ttl && flen < HF_SHORT_FLEN && vlen < HF_SHORT_VLEN;
    size_t head = shrt ? HF_SHORT_HEAD : HF_LONG_HEAD + ttl;
    hfield *h = km_alloc(head + flen + vlen);
    if (shrt) {
        h[0] = (unsigned char)flen;
        h[1] = (unsigned char)vlen;
    } else {
        uint32_t fl = (uint32_t)flen, vl = (uint32_t)vlen;
        h[0] = HF_LONG | (ttl ? HF_TTL : 0);
        memcpy(h + 1, &fl, sizeof(fl));
        memcpy(h + 1 + sizeof(fl), &vl, sizeof(vl));
        if (ttl) hf_set_expire(h, when);
    }
    memcpy(h + head, f, flen);
    if (vlen) memcpy(h + head + flen, v, vlen);
    return h;
}

static const void *hf_key(const void *entry, size_t *len) {
    const hfield *h = entry;
    *len = hf_flen(h);
    return hf_field(h);
}

static void hf_free(void *entry) {
    km_free(entry);
}

static const hashtable_type fields_type = {
    .entry_key = hf_key, .entry_free = hf_free, .grow_fill = HASHTABLE_GROW_FILL_TIGHT};
/* The fields with a TTL, borrowed from the main table. */
static const hashtable_type volatile_type = {.entry_key = hf_key};

/* Hashes holding at least one field with a TTL, so that the keyspace hook
 * below costs a write to anything else one test. A hash is freed on the
 * lazy-free thread too, hence the atomics. */
static size_t volatile_hashes;

static void volatile_hashes_add(long d) {
    if (d > 0)
        __atomic_fetch_add(&volatile_hashes, 1, __ATOMIC_RELAXED);
    else
        __atomic_fetch_sub(&volatile_hashes, 1, __ATOMIC_RELAXED);
}

typedef struct hash_table {
    hashtable *fields;
    hashtable *vol;    /* fields with a TTL; NULL when none */
    int64_t next_due;  /* no field in vol expires before this */
    size_t elem_bytes; /* allocated bytes of the elements (MEMORY USAGE) */
} hash_table;

/* The value hangs off the object's pointer slot (typed char * for
 * strings). */
static inline hash_table *ht_of(const kobj *o) {
    return (hash_table *)(void *)o->v.ptr;
}
static inline pack *lp_of(const kobj *o) {
    return (pack *)o->v.ptr;
}
static inline void set_ptr(kobj *o, void *p) {
    o->v.ptr = p;
}

/* Tracks a new element of t (in the field table already). */
static void ht_note_added(hash_table *t, hfield *h) {
    t->elem_bytes += km_usable(h);
    if (!hf_has_ttl(h)) return;
    if (!t->vol) {
        t->vol = hashtable_create(&volatile_type);
        volatile_hashes_add(1);
    }
    hashtable_add(t->vol, h, NULL);
    int64_t when = hf_expire(h);
    if (when < t->next_due) t->next_due = when;
}

/* Forgets an element about to leave the field table. */
static void ht_note_removed(hash_table *t, hfield *h) {
    t->elem_bytes -= km_usable(h);
    if (!hf_has_ttl(h)) return;
    hashtable_delete(t->vol, hf_field(h), hf_flen(h), NULL);
    if (hashtable_size(t->vol) == 0) {
        hashtable_release(t->vol);
        t->vol = NULL;
        t->next_due = HASH_NO_EXPIRE;
        volatile_hashes_add(-1);
    }
}

/* Puts nu where old is (same field) and frees old. */
static void ht_replace(hash_table *t, const hashtable_pos *pos, hfield *old, hfield *nu) {
    ht_note_removed(t, old);
    hashtable_store_at(t->fields, pos, nu);
    ht_note_added(t, nu);
    km_free(old);
}

static void ht_insert(hash_table *t, hfield *h) {
    hashtable_add(t->fields, h, NULL);
    ht_note_added(t, h);
}

static hash_table *ht_new(void) {
    hash_table *t = km_alloc(sizeof(*t));
    t->fields = hashtable_create(&fields_type);
    t->vol = NULL;
    t->next_due = HASH_NO_EXPIRE;
    t->elem_bytes = 0;
    return t;
}

static void ht_free(hash_table *t) {
    if (t->vol) {
        hashtable_release(t->vol);
        volatile_hashes_add(-1);
    }
    hashtable_release(t->fields);
    km_free(t);
}

/* ---- the listpack encoding ---- */

static void lp_read(const pack *p, size_t pos, hash_str *out) {
    pack_val pv;
    pack_get(p, pos, &pv);
    if (pv.s) {
        out->s = (const char *)pv.s;
        out->len = pv.len;
    } else {
        out->len = ll_to_str(out->buf, pv.v);
        out->s = out->buf;
    }
}

/* The position of field f, or 0. */
static size_t lp_find(const pack *p, const char *f, size_t flen) {
    size_t first = pack_first(p);
    return first ? pack_find(p, first, f, flen, 1) : 0;
}

/* Converts a listpack hash to the hashtable encoding (once; never back). */
static void hash_convert(kobj *o) {
    pack *p = lp_of(o);
    hash_table *t = ht_new();
    for (size_t pos = pack_first(p); pos; pos = pack_next(p, pack_next(p, pos))) {
        hash_str f, v;
        lp_read(p, pos, &f);
        lp_read(p, pack_next(p, pos), &v);
        ht_insert(t, hf_new(f.s, f.len, v.s, v.len, HASH_NO_EXPIRE));
    }
    pack_free(p);
    set_ptr(o, t);
    o->encoding = OBJ_ENC_HASHTABLE;
}

/* ---- the value ---- */

kobj *hash_new(void) {
    return obj_new_aggregate(OBJ_HASH, OBJ_ENC_LISTPACK, pack_new());
}

int hash_is_listpack(const kobj *o) {
    return o->encoding == OBJ_ENC_LISTPACK;
}

size_t hash_length(const kobj *o) {
    if (hash_is_listpack(o)) return pack_count(lp_of(o)) / 2;
    return hashtable_size(ht_of(o)->fields);
}

static void hf_to_str(const hfield *h, hash_str *field, hash_str *val) {
    if (field) {
        field->s = hf_field(h);
        field->len = hf_flen(h);
    }
    if (val) {
        val->s = hf_value(h);
        val->len = hf_vlen(h);
    }
}

int hash_get(kobj *o, const char *f, size_t flen, hash_str *val) {
    if (hash_is_listpack(o)) {
        size_t pos = lp_find(lp_of(o), f, flen);
        if (!pos) return 0;
        if (val) lp_read(lp_of(o), pack_next(lp_of(o), pos), val);
        return 1;
    }
    hfield *h = hashtable_find(ht_of(o)->fields, f, flen);
    if (!h) return 0;
    hf_to_str(h, NULL, val);
    return 1;
}

int hash_exists(kobj *o, const char *f, size_t flen) {
    return hash_get(o, f, flen, NULL);
}

/* Whether a field and value of these sizes keep a listpack hash of n
 * fields within the directives. */
static int lp_fits(size_t n, size_t flen, size_t vlen) {
    const type_options *opt = &db_opts()->types;
    unsigned long long maxv = opt->hash_max_listpack_value;
    return n <= (size_t)opt->hash_max_listpack_entries && flen <= maxv && vlen <= maxv;
}

static int lp_set(kobj *o, const char *f, size_t flen, const char *v, size_t vlen) {
    pack *p = lp_of(o);
    size_t pos = lp_find(p, f, flen);
    if (pos) {
        size_t vpos = pack_next(p, pos);
        set_ptr(o, pack_replace(p, &vpos, v, vlen));
        return 0;
    }
    p = pack_append(p, f, flen);
    set_ptr(o, pack_append(p, v, vlen));
    return 1;
}

int hash_set(kobj *o, const char *f, size_t flen, const char *v, size_t vlen, int flags,
             int64_t when) {
    if (hash_is_listpack(o)) {
        size_t n = hash_length(o);
        int exists = lp_find(lp_of(o), f, flen) != 0;
        if (when == HASH_NO_EXPIRE && lp_fits(n + !exists, flen, vlen))
            return lp_set(o, f, flen, v, vlen);
        hash_convert(o);
    }
    hash_table *t = ht_of(o);
    hashtable_pos pos;
    hfield *old = hashtable_find_pos(t->fields, f, flen, &pos);
    if (old) {
        if (flags & HASH_SET_KEEPTTL) when = hf_expire(old);
        ht_replace(t, &pos, old, hf_new(f, flen, v, vlen, when));
        return 0;
    }
    ht_insert(t, hf_new(f, flen, v, vlen, when));
    return 1;
}

int hash_delete(kobj *o, const char *f, size_t flen) {
    if (hash_is_listpack(o)) {
        size_t pos = lp_find(lp_of(o), f, flen);
        if (!pos) return 0;
        set_ptr(o, pack_delete(lp_of(o), &pos, 2));
        return 1;
    }
    hash_table *t = ht_of(o);
    hfield *h = hashtable_find(t->fields, f, flen);
    if (!h) return 0;
    ht_note_removed(t, h);
    hashtable_delete(t->fields, f, flen, NULL);
    return 1;
}

/* ---- field expiry ---- */

/* INFO's counters, borrowed from hash_type_setup. */
static types_metrics *metrics;

void hash_note_expired(size_t n) {
    if (metrics) metrics->expired_fields += (long long)n;
}

int64_t hash_get_expire(kobj *o, const char *f, size_t flen) {
    if (hash_is_listpack(o)) return lp_find(lp_of(o), f, flen) ? HASH_NO_EXPIRE : -2;
    hfield *h = hashtable_find(ht_of(o)->fields, f, flen);
    return h ? hf_expire(h) : -2;
}

/* Whether HEXPIRE's condition lets `when` replace `cur`. */
static int expire_allowed(int64_t cur, int64_t when, int cond) {
    if ((cond & HASH_EXP_NX) && cur != HASH_NO_EXPIRE) return 0;
    if ((cond & HASH_EXP_XX) && cur == HASH_NO_EXPIRE) return 0;
    if ((cond & HASH_EXP_GT) && when <= cur) return 0;
    if ((cond & HASH_EXP_LT) && when >= cur) return 0;
    return 1;
}

int hash_set_expire(kobj *o, const char *f, size_t flen, int64_t when, int cond) {
    int64_t cur = hash_get_expire(o, f, flen);
    if (cur == -2) return -2;
    if (!expire_allowed(cur, when, cond)) return 0;
    if (cond & HASH_EXP_DELETE) {
        hash_delete(o, f, flen);
        return 2;
    }
    if (hash_is_listpack(o)) hash_convert(o);
    hash_table *t = ht_of(o);
    hashtable_pos pos;
    hfield *h = hashtable_find_pos(t->fields, f, flen, &pos);
    if (hf_has_ttl(h)) {
        /* Same size: rewrite the time in place; vol keeps the element. */
        hf_set_expire(h, when);
        if (when < t->next_due) t->next_due = when;
        return 1;
    }
    ht_replace(t, &pos, h, hf_new(f, flen, hf_value(h), hf_vlen(h), when));
    return 1;
}

int hash_persist(kobj *o, const char *f, size_t flen) {
    int64_t cur = hash_get_expire(o, f, flen);
    if (cur == -2) return -2;
    if (cur == HASH_NO_EXPIRE) return -1;
    hash_table *t = ht_of(o);
    hashtable_pos pos;
    hfield *h = hashtable_find_pos(t->fields, f, flen, &pos);
    ht_replace(t, &pos, h, hf_new(f, flen, hf_value(h), hf_vlen(h), HASH_NO_EXPIRE));
    return 1;
}

size_t hash_volatile_count(const kobj *o) {
    if (hash_is_listpack(o) || !ht_of(o)->vol) return 0;
    return hashtable_size(ht_of(o)->vol);
}

size_t hash_expire_due(kobj *o, int64_t now) {
    if (hash_is_listpack(o)) return 0;
    hash_table *t = ht_of(o);
    if (!t->vol || t->next_due > now) return 0;
    /* Collect first: deleting from vol while walking it would need a safe
     * iterator per table, and the last deletion releases vol. */
    size_t n = 0, cap = 0;
    hfield **due = NULL;
    int64_t next = HASH_NO_EXPIRE;
    hashtable_iter it;
    hashtable_iter_init(&it, t->vol, 0);
    void *e;
    while (hashtable_iter_next(&it, &e)) {
        hfield *h = e;
        int64_t when = hf_expire(h);
        if (when > now) {
            if (when < next) next = when;
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            due = km_realloc(due, cap * sizeof(*due));
        }
        due[n++] = h;
    }
    hashtable_iter_reset(&it);
    for (size_t i = 0; i < n; i++) {
        ht_note_removed(t, due[i]);
        hashtable_delete(t->fields, hf_field(due[i]), hf_flen(due[i]), NULL);
    }
    km_free(due);
    if (t->vol) t->next_due = next;
    hash_note_expired(n);
    return n;
}

/* ---- the hashes with volatile fields (active expiry) ---- */

/* A registered key: the database id (4 bytes) then the key's bytes. */
typedef struct tracked {
    uint32_t len; /* of data */
    char data[];
} tracked;

static const void *tracked_key(const void *entry, size_t *len) {
    const tracked *r = entry;
    *len = r->len;
    return r->data;
}

static void tracked_free(void *entry) {
    km_free(entry);
}

static const hashtable_type tracked_type = {.entry_key = tracked_key, .entry_free = tracked_free};
static hashtable *tracked_keys;
static size_t tracked_cursor;

/* The registered name of key in database dbid: the id's 4 bytes, then the
 * key's bytes, in buf when they fit, else in a new allocation. */
static char *tracked_name(int dbid, const char *key, size_t len, char *buf, size_t cap) {
    uint32_t id = (uint32_t)dbid;
    char *n = len + sizeof(id) <= cap ? buf : km_alloc(len + sizeof(id));
    memcpy(n, &id, sizeof(id));
    memcpy(n + sizeof(id), key, len);
    return n;
}

void hash_track_volatile(int dbid, const char *key, size_t len) {
    char small[256];
    char *name = tracked_name(dbid, key, len, small, sizeof(small));
    size_t nlen = len + sizeof(uint32_t);
    /* Looked up first: a name already there (the common case, and always
     * so from within the cron's own scan) changes nothing in the table. */
    if (!hashtable_find(tracked_keys, name, nlen)) {
        tracked *r = km_alloc(sizeof(*r) + nlen);
        r->len = (uint32_t)nlen;
        memcpy(r->data, name, nlen);
        hashtable_add(tracked_keys, r, NULL);
    }
    if (name != small) km_free(name);
}

/* SWAPDB a b: the names registered in a now name keys of b and the other
 * way round, so their ids are traded (announced before the swap). */
static void tracked_swap_ids(uint32_t a, uint32_t b) {
    size_t n = 0, cap = 0;
    tracked **moved = NULL;
    hashtable_iter it;
    hashtable_iter_init(&it, tracked_keys, 0);
    void *e;
    while (hashtable_iter_next(&it, &e)) {
        tracked *r = e;
        uint32_t id;
        memcpy(&id, r->data, sizeof(id));
        if (id != a && id != b) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            moved = km_realloc(moved, cap * sizeof(*moved));
        }
        moved[n++] = r;
    }
    hashtable_iter_reset(&it);
    /* Popped, not freed: the same entries go back under their new ids. */
    for (size_t i = 0; i < n; i++)
        hashtable_delete(tracked_keys, moved[i]->data, moved[i]->len, &e);
    for (size_t i = 0; i < n; i++) {
        uint32_t id;
        memcpy(&id, moved[i]->data, sizeof(id));
        id = id == a ? b : a;
        memcpy(moved[i]->data, &id, sizeof(id));
        hashtable_add(tracked_keys, moved[i], NULL);
    }
    km_free(moved);
}

/* The keyspace hook: a hash with fields under a TTL that appears under a
 * name (RENAME, COPY, MOVE, RESTORE, or any write) is registered, so the
 * cron finds it without a command touching it. Everything else pays the
 * one test of the counter while no hash has such fields. */
static void hash_on_change(const db_change *ch, void *priv) {
    (void)priv;
    if (ch->event == DB_EV_SWAPPED) {
        if (ch->d != ch->other && hash_tracked_count())
            tracked_swap_ids((uint32_t)ch->d->id, (uint32_t)ch->other->id);
        return;
    }
    if (ch->event != DB_EV_MODIFIED || !__atomic_load_n(&volatile_hashes, __ATOMIC_RELAXED)) return;
    db_entry *e = db_find(ch->d, ch->key, ch->len);
    if (!e || db_entry_type(e) != OBJ_HASH) return;
    if (hash_volatile_count(db_entry_obj(e))) hash_track_volatile(ch->d->id, ch->key, ch->len);
}

size_t hash_volatile_hashes(void) {
    return __atomic_load_n(&volatile_hashes, __ATOMIC_RELAXED);
}

size_t hash_tracked_count(void) {
    return tracked_keys ? hashtable_size(tracked_keys) : 0;
}

typedef struct active_state {
    int64_t now;
    size_t visited; /* fields looked at */
    size_t removed;
} active_state;

/* Visits one registered key: expires its due fields, deletes it when it is
 * left empty, forgets it when it has no field with a TTL any more. */
static void active_visit(void *priv, void *entry) {
    active_state *s = priv;
    tracked *r = entry;
    uint32_t id;
    memcpy(&id, r->data, sizeof(id));
    const char *key = r->data + sizeof(id);
    size_t len = r->len - sizeof(id);
    db *d = (int)id < db_num() ? db_get((int)id) : NULL;
    db_entry *e = d ? db_find(d, key, len) : NULL;
    kobj *o = e && db_entry_type(e) == OBJ_HASH ? db_entry_obj(e) : NULL;
    size_t vol = o ? hash_volatile_count(o) : 0;
    /* A hash with nothing due costs one look; a due one a pass over its
     * fields with a TTL. */
    s->visited += 1 + (vol && ht_of(o)->next_due <= s->now ? vol : 0);
    if (vol) {
        size_t n = hash_expire_due(o, s->now);
        s->removed += n;
        if (n) notify_keyspace_event(NOTIFY_HASH, "hexpired", key, len, d->id);
        if (n && hash_length(o) == 0) {
            notify_keyspace_event(NOTIFY_GENERIC, "del", key, len, d->id);
            db_delete(d, key, len);
            vol = 0;
        } else if (n) {
            db_signal_modified(d, key, len, 1);
            vol = hash_volatile_count(o);
        }
    }
    if (!vol) hashtable_delete(tracked_keys, r->data, r->len, NULL);
}

size_t hash_active_expire(int64_t now, size_t budget) {
    if (!tracked_keys || hashtable_size(tracked_keys) == 0) return 0;
    active_state s = {.now = now};
    /* One full round at most per call: a cursor back at 0 ends it. */
    do {
        tracked_cursor = hashtable_scan(tracked_keys, tracked_cursor, active_visit, &s);
    } while (tracked_cursor != 0 && s.visited < budget);
    return s.removed;
}

/* ---- walking ---- */

void hash_iter_init(hash_iter *it, kobj *o) {
    it->o = o;
    if (hash_is_listpack(o))
        it->pos = pack_first(lp_of(o));
    else
        hashtable_iter_init(&it->hi, ht_of(o)->fields, 0);
}

int hash_iter_next(hash_iter *it, hash_str *field, hash_str *val) {
    if (hash_is_listpack(it->o)) {
        pack *p = lp_of(it->o);
        if (!it->pos) return 0;
        size_t vpos = pack_next(p, it->pos);
        if (field) lp_read(p, it->pos, field);
        if (val) lp_read(p, vpos, val);
        it->pos = pack_next(p, vpos);
        return 1;
    }
    void *e;
    if (!hashtable_iter_next(&it->hi, &e)) return 0;
    hf_to_str(e, field, val);
    return 1;
}

void hash_iter_reset(hash_iter *it) {
    if (!hash_is_listpack(it->o)) hashtable_iter_reset(&it->hi);
}

/* A hashtable picks with hashtable_fair_random() (uniform over entries);
 * a listpack, at most hash-max-listpack-entries long, from a snapshot of
 * its field positions. */
void hash_random_picks(kobj *o, size_t count, hash_pick_fn fn, void *priv) {
    hash_str f, v;
    if (!hash_is_listpack(o)) {
        for (size_t i = 0; i < count; i++) {
            hf_to_str(hashtable_fair_random(ht_of(o)->fields), &f, &v);
            if (!fn(priv, &f, &v)) break;
        }
        return;
    }
    pack *p = lp_of(o);
    size_t n = hash_length(o), k = 0;
    size_t *all = km_alloc(n * sizeof(*all));
    for (size_t pos = pack_first(p); pos; pos = pack_next(p, pack_next(p, pos)))
        all[k++] = pos;
    for (size_t i = 0; i < count; i++) {
        size_t pos = all[(size_t)random() % k];
        lp_read(p, pos, &f);
        lp_read(p, pack_next(p, pos), &v);
        if (!fn(priv, &f, &v)) break;
    }
    km_free(all);
}

typedef struct pick_one {
    hash_str *field, *val;
} pick_one;

/* Copies a pick out (an integer's digits live in the caller's hash_str). */
static int pick_copy(void *priv, const hash_str *f, const hash_str *v) {
    pick_one *p = priv;
    *p->field = *f;
    if (f->s == f->buf) p->field->s = p->field->buf;
    if (p->val) {
        *p->val = *v;
        if (v->s == v->buf) p->val->s = p->val->buf;
    }
    return 1;
}

void hash_random(kobj *o, hash_str *field, hash_str *val) {
    pick_one p = {field, val};
    hash_random_picks(o, 1, pick_copy, &p);
}

typedef struct scan_state {
    hash_scan_fn fn;
    void *priv;
} scan_state;

static void scan_visit(void *priv, void *entry) {
    scan_state *s = priv;
    hash_str f, v;
    hf_to_str(entry, &f, &v);
    s->fn(s->priv, &f, &v);
}

size_t hash_scan(kobj *o, size_t cursor, hash_scan_fn fn, void *priv) {
    if (hash_is_listpack(o)) {
        hash_iter it;
        hash_str f, v;
        hash_iter_init(&it, o);
        while (hash_iter_next(&it, &f, &v))
            fn(priv, &f, &v);
        return 0;
    }
    scan_state s = {fn, priv};
    return hashtable_scan(ht_of(o)->fields, cursor, scan_visit, &s);
}

/* ---- the type's operations ---- */

static const char *hash_type_name(const kobj *o) {
    (void)o;
    return "hash";
}

static const char *hash_encoding_name(const kobj *o) {
    return hash_is_listpack(o) ? "listpack" : "hashtable";
}

static void hash_free_value(kobj *o) {
    if (hash_is_listpack(o))
        pack_free(lp_of(o));
    else
        ht_free(ht_of(o));
}

/* Exact in O(1): the table keeps its elements' bytes. */
static size_t hash_mem_usage(const kobj *o, size_t samples) {
    (void)samples;
    if (hash_is_listpack(o)) return pack_bytes(lp_of(o));
    const hash_table *t = ht_of(o);
    size_t n = km_usable(t) + hashtable_mem_usage(t->fields) + t->elem_bytes;
    return t->vol ? n + hashtable_mem_usage(t->vol) : n;
}

static kobj *hash_copy(const kobj *o) {
    kobj *c = hash_new();
    if (hash_is_listpack(o)) {
        set_ptr(c, pack_merge(lp_of(c), lp_of(o)));
        return c;
    }
    pack_free(lp_of(c));
    hash_table *t = ht_new();
    hashtable_iter it;
    hashtable_iter_init(&it, ht_of(o)->fields, 0);
    void *e;
    while (hashtable_iter_next(&it, &e)) {
        const hfield *h = e;
        ht_insert(t, hf_new(hf_field(h), hf_flen(h), hf_value(h), hf_vlen(h), hf_expire(h)));
    }
    hashtable_iter_reset(&it);
    set_ptr(c, t);
    c->encoding = OBJ_ENC_HASHTABLE;
    return c;
}

static size_t hash_free_effort(const kobj *o) {
    return hash_is_listpack(o) ? 1 : hash_length(o);
}

static const obj_type hash_obj_type = {
    .type_name = hash_type_name,
    .encoding_name = hash_encoding_name,
    .free_value = hash_free_value,
    .mem_usage = hash_mem_usage,
    .copy = hash_copy,
    .free_effort = hash_free_effort,
};

void hash_type_setup(types_metrics *m) {
    metrics = m;
    obj_set_type(OBJ_HASH, &hash_obj_type);
    if (!tracked_keys) tracked_keys = hashtable_create(&tracked_type);
    tracked_cursor = 0;
    db_add_hook(hash_on_change, NULL);
}

void hash_type_teardown(void) {
    db_remove_hook(hash_on_change, NULL);
    if (tracked_keys) hashtable_release(tracked_keys);
    tracked_keys = NULL;
    metrics = NULL;
}
