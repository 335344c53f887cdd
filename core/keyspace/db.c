/* db.c -- databases, keys, lazy and active expiry, access clocks, and the
 * change hooks through which the rest of the server hears of every change. */
#include "keyspace/db.h"

#include "common/common.h"
#include "common/kmem.h"
#include "event/event.h"
#include "keyspace/kvstore.h"
#include "keyspace/lazyfree.h"
#include "keyspace/notify.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define LRU_CLOCK_MAX ((1u << 24) - 1)
#define LFU_INIT_VAL 5
#define DB_HOOKS_MAX 16

METRICS_DESCS(db_metric_descs, db_metrics, DB_METRICS);

static db *dbs;
static int db_count;
static const db_options *opts;
static db_metrics *stats;

typedef struct db_hook {
    db_hook_fn fn;
    void *priv;
} db_hook;

/* A fixed array: hooks are few and registered at setup, and announcing
 * walks it on every write. */
static db_hook hooks[DB_HOOKS_MAX];
static int hook_count;

static const void *db_entry_table_key(const void *entry, size_t *len) {
    return db_entry_key(entry, len);
}

static void db_entry_free(void *entry) {
    kobj *o = db_entry_obj(entry);
    if (o) obj_decref(o);
    km_free(entry);
}

/* Drops a value the keyspace no longer stores; `lazy`: through the
 * lazy-free thread when it is costly to free. */
static void db_release_value(kobj *o, int lazy) {
    if (lazy)
        lazyfree_release(o);
    else
        obj_decref(o);
}

static void db_entry_release(db_entry *e, int lazy) {
    kobj *o = db_entry_obj(e);
    if (o) db_release_value(o, lazy);
    km_free(e);
}

size_t db_pending_free(void) {
    return (opts->pending_free ? opts->pending_free() : 0) + lazyfree_pending_bytes();
}

/* Room under maxmemory for a table's new array (held beside the old one
 * while entries move): a table that grows or is compacted must not push
 * the server over its limit and make it evict keys. */
static size_t db_table_budget(void) {
    if (!opts->maxmemory) return SIZE_MAX;
    size_t used = km_used_memory(), pending = db_pending_free();
    used = used > pending ? used - pending : 0;
    return used < opts->maxmemory ? (size_t)(opts->maxmemory - used) : 0;
}

static const hashtable_type db_keys_type = {
    .entry_key = db_entry_table_key, .entry_free = db_entry_free, .grow_budget = db_table_budget};
static const hashtable_type db_expires_type = {
    .entry_key = db_entry_table_key, .entry_free = NULL, .grow_budget = db_table_budget};

/* Per-slot tables are made when a slot gets its first key and freed when
 * it loses its last (with one slot, the table stays). */
#define DB_KVSTORE_FLAGS (KVSTORE_ALLOCATE_TABLES_ON_DEMAND | KVSTORE_FREE_EMPTY_TABLES)
/* Slots the cron looks at for shrinking, per database and tick. */
#define DB_CRON_SHRINK_SLOTS 16

/* The slot of a key in d's tables (0 with one slot): both of d's stores
 * have the same layout. */
static inline int db_slot(const db *d, const char *key, size_t len) {
    return kvstore_slot(d->keys, key, len);
}

void db_setup(const db_options *o, db_metrics *m) {
    opts = o;
    stats = m;
    db_count = o->databases;
    dbs = km_calloc((size_t)db_count, sizeof(db));
    for (int i = 0; i < db_count; i++) {
        dbs[i].id = i;
        dbs[i].keys = kvstore_create(&db_keys_type, o->slot_bits, DB_KVSTORE_FLAGS);
        dbs[i].expires = kvstore_create(&db_expires_type, o->slot_bits, DB_KVSTORE_FLAGS);
    }
}

void db_teardown(void) {
    lazyfree_teardown();
    for (int i = 0; i < db_count; i++) {
        kvstore_release(dbs[i].expires);
        kvstore_release(dbs[i].keys);
    }
    km_free(dbs);
    dbs = NULL;
    db_count = 0;
    hook_count = 0;
    opts = NULL;
    stats = NULL;
}

int db_num(void) {
    return db_count;
}

const db_options *db_opts(void) {
    return opts;
}

db_metrics *db_stats(void) {
    return stats;
}

int db_add_hook(db_hook_fn fn, void *priv) {
    if (hook_count == DB_HOOKS_MAX) return K_ERR;
    for (int i = 0; i < hook_count; i++)
        if (hooks[i].fn == fn && hooks[i].priv == priv) return K_ERR;
    hooks[hook_count++] = (db_hook){fn, priv};
    return K_OK;
}

void db_remove_hook(db_hook_fn fn, void *priv) {
    int j = 0;
    for (int i = 0; i < hook_count; i++)
        if (hooks[i].fn != fn || hooks[i].priv != priv) hooks[j++] = hooks[i];
    hook_count = j;
}

static void db_announce_change(const db_change *ch) {
    /* Hooks never add or remove hooks (db.h), so the count is read once. */
    for (int i = 0, n = hook_count; i < n; i++)
        hooks[i].fn(ch, hooks[i].priv);
}

db *db_get(int id) {
    return id >= 0 && id < db_count ? &dbs[id] : NULL;
}

/* ---- access clocks ---- */

uint32_t db_lru_clock(void) {
    return (uint32_t)((event_cached_ms() / 1000) & LRU_CLOCK_MAX);
}

static int db_lfu_mode(void) {
    return db_policy_is_lfu(opts->maxmemory_policy);
}

static uint32_t lfu_minutes(void) {
    return (uint32_t)((event_cached_ms() / 60000) & 0xffff);
}

static unsigned lfu_decay(const db_entry *e) {
    uint32_t then = e->lru >> 8, now = lfu_minutes();
    uint32_t elapsed = now >= then ? now - then : 0xffff - then + now;
    unsigned counter = e->lru & 0xff;
    if (opts->lfu_decay_time <= 0) return counter;
    uint32_t periods = elapsed / (uint32_t)opts->lfu_decay_time;
    return periods > counter ? 0 : counter - periods;
}

/* Logarithmic increment: the more hits a key has, the less likely one more
 * raises the counter, so 8 bits cover millions of accesses. */
static unsigned lfu_incr(unsigned counter) {
    if (counter == 255) return 255;
    double r = (double)rand() / RAND_MAX;
    double base = counter > LFU_INIT_VAL ? counter - LFU_INIT_VAL : 0;
    double p = 1.0 / (base * opts->lfu_log_factor + 1);
    return r < p ? counter + 1 : counter;
}

static void db_init_clock(db_entry *e) {
    if (db_lfu_mode()) e->lru = (lfu_minutes() << 8) | LFU_INIT_VAL;
    else e->lru = db_lru_clock();
}

void db_touch(db_entry *e) {
    if (db_lfu_mode()) e->lru = (lfu_minutes() << 8) | lfu_incr(lfu_decay(e));
    else e->lru = db_lru_clock();
}

uint64_t db_idle_seconds(const db_entry *e) {
    uint32_t now = db_lru_clock(), then = e->lru & LRU_CLOCK_MAX;
    return now >= then ? now - then : (LRU_CLOCK_MAX - then) + now;
}

unsigned db_lfu_freq(db_entry *e) {
    return lfu_decay(e);
}

/* ---- lookup ---- */

int db_is_expired(const db_entry *e) {
    int64_t when = db_entry_expire(e);
    return when != -1 && when <= event_cached_ms();
}

/* Why a key leaves: Valkey counts only deletions as changes, and WATCH
 * ignores the expiry of a key that was already expired when watched. */
static int db_remove(db *d, const char *key, size_t len, db_event why, int lazy);

static void db_expire_entry(db *d, db_entry *e) {
    size_t len;
    const char *key = db_entry_key(e, &len);
    stats->expired_keys++;
    db_remove(d, key, len, DB_EV_EXPIRED, opts->lazyfree.expire);
}

static int db_deferring_removals;

void db_defer_removals(int on) {
    db_deferring_removals = on;
}

int db_removals_deferred(void) {
    return db_deferring_removals;
}

db_entry *db_lookup_quiet(db *d, const char *key, size_t len) {
    db_entry *e = kvstore_find(d->keys, db_slot(d, key, len), key, len);
    if (e && db_is_expired(e)) {
        if (!db_deferring_removals) db_expire_entry(d, e);
        return NULL;
    }
    return e;
}

/* A write's lookup: an expired key goes even while removals are deferred,
 * since the write puts a key in its place. */
static db_entry *db_lookup_write(db *d, const char *key, size_t len) {
    db_entry *e = kvstore_find(d->keys, db_slot(d, key, len), key, len);
    if (e && db_is_expired(e)) {
        db_expire_entry(d, e);
        return NULL;
    }
    return e;
}

/* Whether lookups update the access clock (CLIENT NO-TOUCH turns it off
 * for a command; see db_set_access_touch). */
static int db_access_touches = 1;

int db_set_access_touch(int on) {
    int was = db_access_touches;
    db_access_touches = on;
    return was;
}

db_entry *db_lookup(db *d, const char *key, size_t len, int count) {
    db_entry *e = db_lookup_quiet(d, key, len);
    if (count) {
        if (e) {
            stats->keyspace_hits++;
        } else {
            stats->keyspace_misses++;
            notify_keyspace_event(NOTIFY_KEY_MISS, "keymiss", key, len, d->id);
        }
    }
    if (e && db_access_touches) db_touch(e);
    return e;
}

/* ---- change announcements ---- */

/* Every change to a key passes through here. The operations below announce
 * each key they touch but count as Valkey's commands do: once for a
 * compound change (SET with a TTL, RENAME, MOVE, COPY), nothing for a key
 * that expired or was evicted. */
static void db_announce(db *d, const char *key, size_t len, db_event ev, long long count) {
    if (!hook_count) return;
    db_change ch = {.event = ev, .d = d, .key = key, .len = len, .changes = count};
    db_announce_change(&ch);
}

void db_signal_modified(db *d, const char *key, size_t len, long long changes) {
    db_announce(d, key, len, DB_EV_MODIFIED, changes);
}

void db_count_changes(db *d, const char *key, size_t len, long long changes) {
    db_announce(d, key, len, DB_EV_COUNTED, changes);
}

/* ---- blocks ---- */

/* A value about to be stored: an object the block will point at, or bytes
 * to embed (with the encoding OBJECT ENCODING will report). */
typedef struct db_val {
    kobj *obj;
    const char *s;
    size_t len;
    uint8_t flags; /* DB_ENTRY_EMBED and, with it, DB_ENTRY_INT or DB_ENTRY_RAWNAME */
} db_val;

/* Bytes s[0..len): embedded when short, else a RAW object. Encodings as
 * Valkey names them: a canonical integer is "int", a string longer than
 * its embstr limit "raw". */
static db_val db_val_bytes(const char *s, size_t len) {
    long long ignored;
    if (len > DB_EMBED_MAX) return (db_val){.obj = obj_string_raw(s, len)};
    uint8_t flags = DB_ENTRY_EMBED;
    /* The first byte rules most strings out before the parse. */
    if (len && len <= 20 && ((unsigned)(s[0] - '0') < 10 || s[0] == '-') &&
        str_to_ll(s, len, &ignored))
        flags |= DB_ENTRY_INT;
    else if (len > DB_EMBSTR_NAME_MAX)
        flags |= DB_ENTRY_RAWNAME;
    return (db_val){.s = s, .len = len, .flags = flags};
}

/* An object handed in: a short string is embedded (its bytes are read
 * from o, which the caller releases after the block is written: see
 * db_val_done), anything else is stored by reference. buf holds an INT
 * object's digits. */
static db_val db_val_obj(kobj *o, char buf[24]) {
    if (o->type != OBJ_STRING || obj_strlen(o) > DB_EMBED_MAX) return (db_val){.obj = o};
    db_val v = {.flags = DB_ENTRY_EMBED};
    v.s = obj_str(o, buf, &v.len);
    if (o->encoding == OBJ_ENC_INT)
        v.flags |= obj_is_shared(o) ? DB_ENTRY_INT : DB_ENTRY_INT | DB_ENTRY_PRIVATE;
    else if (o->encoding == OBJ_ENC_RAW)
        v.flags |= DB_ENTRY_RAWNAME; /* grown or long: "raw" */
    return v;
}

/* Releases the object a db_val_obj copied from (not one stored). */
static void db_val_done(const db_val *v, kobj *o) {
    if (v->obj != o) obj_decref(o);
}

static size_t db_block_size(size_t klen, const db_val *v, int has_expire) {
    return sizeof(db_entry) + (v->obj ? sizeof(kobj *) : v->len) +
           (klen >= DB_KEYLEN_LONG ? sizeof(uint32_t) : 0) + klen +
           (has_expire ? sizeof(int64_t) : 0);
}

/* Bytes the block's current layout uses (its allocation may be bigger). */
static size_t db_block_used(const db_entry *e, size_t klen) {
    return sizeof(db_entry) + db_entry_key_offset(e) + klen +
           (e->flags & DB_ENTRY_EMBED ? e->vlen : 0) +
           (e->flags & DB_ENTRY_EXPIRE ? sizeof(int64_t) : 0);
}

static unsigned char *db_block_value_at(db_entry *e) {
    return e->data + db_entry_key_offset(e) + db_entry_keylen(e);
}

static void db_block_write_expire(db_entry *e, int64_t when) {
    if (when == -1) {
        e->flags &= ~DB_ENTRY_EXPIRE;
        return;
    }
    e->flags |= DB_ENTRY_EXPIRE;
    memcpy(db_block_value_at(e) + (e->flags & DB_ENTRY_EMBED ? e->vlen : 0), &when, sizeof(when));
}

/* Writes the value into a block whose key is in place and laid out for
 * it (same embedded-or-not form). */
static void db_block_write_value(db_entry *e, const db_val *v) {
    e->flags = (e->flags & (DB_ENTRY_LONGKEY | DB_ENTRY_EXPIRE)) | v->flags;
    if (v->obj) {
        e->vlen = 0;
        memcpy(e->data, &v->obj, sizeof(kobj *));
    } else {
        e->vlen = (uint32_t)v->len;
        memmove(db_block_value_at(e), v->s, v->len);
    }
}

/* A new block for key holding v, with expiry `when` (-1: none) and the
 * given access clock. */
static db_entry *db_block_new(const char *key, size_t klen, const db_val *v, int64_t when,
                              uint32_t lru) {
    db_entry *e = km_alloc(db_block_size(klen, v, when != -1));
    e->lru = lru;
    e->flags = v->flags;
    if (klen >= DB_KEYLEN_LONG) {
        uint32_t n = (uint32_t)klen;
        e->flags |= DB_ENTRY_LONGKEY;
        e->keylen = DB_KEYLEN_LONG;
        memcpy(e->data + (v->obj ? sizeof(kobj *) : 0), &n, sizeof(n));
    } else {
        e->keylen = (uint32_t)klen;
    }
    memcpy((char *)e->data + db_entry_key_offset(e), key, klen);
    db_block_write_value(e, v);
    db_block_write_expire(e, when);
    return e;
}

/* Stores `to` where the table holds the entry with this key (the same key:
 * one lookup). */
static void db_table_replace(hashtable *ht, const char *key, size_t klen, db_entry *to) {
    hashtable_pos pos;
    if (hashtable_find_pos(ht, key, klen, &pos)) hashtable_store_at(ht, &pos, to);
}

/* `to` replaces `from` (same key) in the tables that hold it. */
static void db_block_relocate(db *d, const db_entry *from, db_entry *to) {
    size_t klen;
    const char *key = db_entry_key(to, &klen);
    int slot = db_slot(d, key, klen);
    db_table_replace(kvstore_table(d->keys, slot), key, klen, to);
    if (from->flags & DB_ENTRY_EXPIRE)
        db_table_replace(kvstore_table(d->expires, slot), key, klen, to);
}

/* Gives e the value v and the expiry `when` (-1: none): in place when the
 * block has room and keeps its form, otherwise in a new block that takes
 * e's place in both tables. The old value object is released. Returns the
 * entry. */
static db_entry *db_block_update(db *d, db_entry *e, const db_val *v, int64_t when) {
    /* The common overwrite (SET, INCR): an embedded value by one no
     * longer, no TTL before or after. The bytes go over the old ones and
     * nothing else moves: no layout to work out, no allocator call. */
    if (!v->obj && (e->flags & (DB_ENTRY_EMBED | DB_ENTRY_EXPIRE)) == DB_ENTRY_EMBED &&
        v->len <= e->vlen && when == -1) {
        e->flags = (e->flags & DB_ENTRY_LONGKEY) | v->flags;
        e->vlen = (uint32_t)v->len;
        memmove(db_block_value_at(e), v->s, v->len);
        return e;
    }
    size_t klen;
    const char *key = db_entry_key(e, &klen);
    kobj *old = db_entry_obj(e);
    int had_expire = (e->flags & DB_ENTRY_EXPIRE) != 0;
    int same_form = !(e->flags & DB_ENTRY_EMBED) == (v->obj != NULL);
    size_t need = db_block_size(klen, v, when != -1);
    /* The block's current layout is known without asking the allocator
     * (a call that costs as much as the rest of an overwrite). */
    if (same_form && (need <= db_block_used(e, klen) || need <= km_usable(e))) {
        db_block_write_value(e, v);
        db_block_write_expire(e, when);
    } else {
        db_entry *n = db_block_new(key, klen, v, when, e->lru);
        db_block_relocate(d, e, n);
        km_free(e);
        e = n;
        key = db_entry_key(e, &klen);
    }
    if (old) db_release_value(old, opts->lazyfree.server_del); /* an overwrite */
    if (!had_expire && when != -1)
        kvstore_add(d->expires, db_slot(d, key, klen), e, NULL);
    else if (had_expire && when == -1)
        kvstore_delete(d->expires, db_slot(d, key, klen), key, klen, NULL);
    return e;
}

/* ---- value accessors ---- */

size_t db_entry_strlen(const db_entry *e) {
    size_t len = 0;
    return db_entry_str(e, &len) ? len : 0;
}

int db_entry_get_int(const db_entry *e, int64_t *out) {
    size_t len;
    const char *s = db_entry_str(e, &len);
    long long v;
    if (!s || !str_to_ll(s, len, &v)) return 0;
    *out = v;
    return 1;
}

kobj *db_entry_value_obj(const db_entry *e) {
    kobj *o = db_entry_obj(e);
    if (o) return obj_incref(o);
    size_t len;
    const char *s = db_entry_str(e, &len);
    return e->flags & DB_ENTRY_RAWNAME ? obj_string_raw(s, len) : obj_string(s, len);
}

kobj *db_entry_value_copy(const db_entry *e) {
    kobj *o = db_entry_obj(e);
    int64_t v;
    if (o) return obj_copy(o);
    /* Valkey's COPY gives an integer an object of its own, never the
     * shared one: OBJECT REFCOUNT of the copy says 1. */
    if ((e->flags & DB_ENTRY_INT) && db_entry_get_int(e, &v)) return obj_int_unshared(v);
    return db_entry_value_obj(e);
}

const char *db_entry_encoding(const db_entry *e) {
    if (!(e->flags & DB_ENTRY_EMBED)) return obj_encoding_name(db_entry_obj(e));
    if (e->flags & DB_ENTRY_INT) return "int";
    return e->flags & DB_ENTRY_RAWNAME ? "raw" : "embstr";
}

const char *db_entry_type_name(const db_entry *e) {
    return e->flags & DB_ENTRY_EMBED ? "string" : obj_type_name(db_entry_obj(e));
}

long long db_entry_refcount(const db_entry *e) {
    kobj *o = db_entry_obj(e);
    if (o) return o->refcount;
    int64_t v;
    if ((e->flags & (DB_ENTRY_INT | DB_ENTRY_PRIVATE)) == DB_ENTRY_INT && db_entry_get_int(e, &v) &&
        v >= 0 && v < OBJ_SHARED_INTEGERS)
        return OBJ_SHARED_REFCOUNT;
    return 1;
}

size_t db_entry_mem_usage_sampled(const db_entry *e, size_t samples) {
    kobj *o = db_entry_obj(e);
    return km_usable(e) + (o ? obj_mem_usage_sampled(o, samples) : 0);
}

size_t db_entry_mem_usage(const db_entry *e) {
    return db_entry_mem_usage_sampled(e, OBJ_MEM_SAMPLES);
}

/* ---- modification ---- */

/* The quiet steps the public operations are made of: none announces. */

static db_entry *db_insert_val(db *d, const char *key, size_t len, const db_val *v, int64_t when) {
    db_entry *e = db_block_new(key, len, v, when, 0);
    db_init_clock(e);
    int slot = db_slot(d, key, len);
    if (!kvstore_add(d->keys, slot, e, NULL)) {
        km_free(e); /* the caller still owns v's object */
        return NULL;
    }
    if (when != -1) kvstore_add(d->expires, slot, e, NULL);
    /* Every key created passes here (RENAME, MOVE and COPY too, whose
     * target Valkey deletes and adds): the `n` class's one source. */
    notify_keyspace_event(NOTIFY_NEW, "new", key, len, d->id);
    return e;
}

/* Takes key out of both tables; the caller frees the entry. */
static db_entry *db_pop(db *d, const char *key, size_t len) {
    void *popped;
    int slot = db_slot(d, key, len);
    if (!kvstore_delete(d->keys, slot, key, len, &popped)) return NULL;
    db_entry *e = popped;
    if (e->flags & DB_ENTRY_EXPIRE) kvstore_delete(d->expires, slot, key, len, NULL);
    return e;
}

/* The value of e becomes v; the TTL becomes `when`, or stays with
 * DB_SET_KEEPTTL. A replaced value gets a fresh access clock. */
static db_entry *db_swap_value(db *d, db_entry *e, const db_val *v, int64_t when, int flags) {
    if (flags & DB_SET_KEEPTTL) when = db_entry_expire(e);
    e = db_block_update(d, e, v, when);
    db_touch(e);
    return e;
}

static int db_persist_quiet(db *d, db_entry *e) {
    if (!(e->flags & DB_ENTRY_EXPIRE)) return 0;
    size_t len;
    const char *key = db_entry_key(e, &len);
    kvstore_delete(d->expires, db_slot(d, key, len), key, len, NULL);
    e->flags &= ~DB_ENTRY_EXPIRE; /* the 8 bytes stay as slack */
    return 1;
}

static db_entry *db_expire_quiet(db *d, db_entry *e, int64_t when_ms) {
    if (when_ms == -1) { /* no TTL: the key leaves the expires table too */
        db_persist_quiet(d, e);
        return e;
    }
    if (e->flags & DB_ENTRY_EXPIRE) {
        db_block_write_expire(e, when_ms);
        return e;
    }
    size_t klen;
    db_entry_key(e, &klen);
    size_t need = sizeof(db_entry) + db_entry_key_offset(e) + klen +
                  (e->flags & DB_ENTRY_EMBED ? e->vlen : 0) + sizeof(int64_t);
    if (need > km_usable(e)) {
        /* Grows the block; jemalloc copies it only when the next size
         * class cannot be had in place. A value object is not touched.
         * The table slot is found while the old block is still valid. */
        size_t len;
        const char *key = db_entry_key(e, &len);
        hashtable *ht = kvstore_table(d->keys, db_slot(d, key, len));
        hashtable_pos pos;
        hashtable_find_pos(ht, key, len, &pos);
        e = km_realloc(e, need);
        hashtable_store_at(ht, &pos, e);
    }
    db_block_write_expire(e, when_ms);
    size_t klen2;
    const char *key = db_entry_key(e, &klen2);
    kvstore_add(d->expires, db_slot(d, key, klen2), e, NULL);
    return e;
}

/* The public writes: one announcement each. */

static db_entry *db_set_val(db *d, const char *key, size_t len, const db_val *v, int flags,
                            int64_t when) {
    db_entry *e = db_lookup_write(d, key, len);
    if (e)
        e = db_swap_value(d, e, v, when, flags);
    else
        e = db_insert_val(d, key, len, v, when);
    db_announce(d, key, len, DB_EV_MODIFIED, 1);
    return e;
}

db_entry *db_set(db *d, const char *key, size_t len, kobj *val, int flags) {
    char buf[24];
    db_val v = db_val_obj(val, buf);
    db_entry *e = db_set_val(d, key, len, &v, flags, -1);
    db_val_done(&v, val);
    return e;
}

db_entry *db_set_str(db *d, const char *key, size_t len, const char *s, size_t slen, int flags,
                     int64_t when_ms) {
    db_val v = db_val_bytes(s, slen);
    return db_set_val(d, key, len, &v, flags, when_ms);
}

db_entry *db_set_with_expire(db *d, const char *key, size_t len, kobj *val, int64_t when_ms) {
    char buf[24];
    db_val v = db_val_obj(val, buf);
    db_entry *e = db_set_val(d, key, len, &v, 0, when_ms);
    db_val_done(&v, val);
    return e;
}

db_entry *db_add(db *d, const char *key, size_t len, kobj *val, long long changes) {
    if (db_lookup_write(d, key, len)) return NULL; /* expires a stale key first */
    char buf[24];
    db_val v = db_val_obj(val, buf);
    db_entry *e = db_insert_val(d, key, len, &v, -1);
    db_val_done(&v, val);
    db_announce(d, key, len, DB_EV_MODIFIED, changes);
    return e;
}

db_entry *db_replace_value(db *d, db_entry *e, kobj *val, long long changes) {
    char buf[24];
    db_val v = db_val_obj(val, buf);
    e = db_swap_value(d, e, &v, -1, DB_SET_KEEPTTL);
    db_val_done(&v, val);
    size_t len;
    const char *key = db_entry_key(e, &len);
    db_announce(d, key, len, DB_EV_MODIFIED, changes);
    return e;
}

db_entry *db_replace_str(db *d, db_entry *e, const char *s, size_t slen) {
    db_val v = db_val_bytes(s, slen);
    e = db_swap_value(d, e, &v, -1, DB_SET_KEEPTTL);
    size_t len;
    const char *key = db_entry_key(e, &len);
    db_announce(d, key, len, DB_EV_MODIFIED, 1);
    return e;
}

/* An object value of its own with room to grow, holding the first `keep`
 * bytes of the embedded value. */
static kobj *db_string_move_out(db_entry *e, size_t keep, size_t newlen) {
    size_t len;
    const char *s = db_entry_str(e, &len);
    kobj *o = obj_string_alloc(newlen < 1024 * 1024 ? newlen * 2 : newlen + 1024 * 1024);
    memcpy(o->v.ptr, s, keep);
    return o;
}

char *db_string_resize(db *d, db_entry **ep, size_t newlen) {
    db_entry *e = *ep;
    int64_t when = db_entry_expire(e);
    size_t oldlen = db_entry_strlen(e);
    size_t keep = oldlen < newlen ? oldlen : newlen;
    kobj *o = db_entry_obj(e);
    if (!o && newlen <= DB_EMBED_MAX) {
        /* Stays embedded, reported "raw" from now on as Valkey's APPEND
         * makes it. A block without room is copied into a bigger one
         * (header, key and the kept bytes). */
        size_t klen;
        db_entry_key(e, &klen);
        db_val v = {.len = newlen, .flags = DB_ENTRY_EMBED};
        size_t need = db_block_size(klen, &v, when != -1);
        if (need > km_usable(e)) {
            db_entry *n = km_alloc(need);
            memcpy(n, e, sizeof(db_entry) + db_entry_key_offset(e) + klen + keep);
            db_block_relocate(d, e, n);
            km_free(e);
            e = n;
        }
        e->flags =
            (e->flags & (DB_ENTRY_LONGKEY | DB_ENTRY_EXPIRE)) | DB_ENTRY_EMBED | DB_ENTRY_RAWNAME;
        e->vlen = (uint32_t)newlen;
        db_block_write_expire(e, when);
    } else {
        if (!o) {
            /* Moves out of the block into an object with room to grow. */
            o = db_string_move_out(e, keep, newlen);
            e = db_block_update(d, e, &(db_val){.obj = o}, when);
        } else {
            /* The block's reference is handed over: an object no reply
             * holds grows in place, one a reply holds is copied. */
            kobj *w = obj_make_writable(o, newlen);
            if (w != o) memcpy(e->data, &w, sizeof(w));
            o = w;
        }
        o->len = newlen;
        o->v.ptr[newlen] = '\0';
    }
    if (db_access_touches) db_touch(e);
    size_t len;
    const char *key = db_entry_key(e, &len);
    db_signal_modified(d, key, len, 1);
    *ep = e;
    return o ? o->v.ptr : (char *)db_block_value_at(e);
}

db_entry *db_put(db *d, const char *key, size_t len, kobj *val, int64_t when_ms) {
    db_entry *old = db_pop(d, key, len);
    char buf[24];
    db_val v = db_val_obj(val, buf);
    db_entry *e = db_insert_val(d, key, len, &v, when_ms);
    db_val_done(&v, val);
    db_announce(d, key, len, DB_EV_MODIFIED, 1);
    if (old) db_entry_release(old, opts->lazyfree.server_del);
    return e;
}

db_entry *db_move(db *from, db_entry *e, db *to, const char *key, size_t len) {
    kobj *val = db_entry_value_obj(e);
    int64_t expire = db_entry_expire(e);
    uint32_t lru = e->lru;
    size_t oklen;
    const char *okey = db_entry_key(e, &oklen);
    db_pop(from, okey, oklen);
    db_announce(from, okey, oklen, DB_EV_DELETED, 0); /* counted once, with the new key */
    db_entry_free(e);
    db_entry *n = db_put(to, key, len, val, expire);
    /* The value keeps its LRU/LFU history, as Valkey's object does. */
    n->lru = lru;
    return n;
}

static int db_remove(db *d, const char *key, size_t len, db_event why, int lazy) {
    db_entry *e = db_pop(d, key, len);
    if (!e) return 0;
    /* Announced before the free: key may be the entry's own bytes. */
    db_announce(d, key, len, why, why == DB_EV_DELETED);
    db_entry_release(e, lazy);
    return 1;
}

int db_delete(db *d, const char *key, size_t len) {
    return db_remove(d, key, len, DB_EV_DELETED, opts->lazyfree.server_del);
}

int db_delete_user(db *d, const char *key, size_t len, int unlink) {
    return db_remove(d, key, len, DB_EV_DELETED, unlink || opts->lazyfree.user_del);
}

int db_evict(db *d, const char *key, size_t len) {
    return db_remove(d, key, len, DB_EV_EVICTED, opts->lazyfree.eviction);
}

db_entry *db_set_expire(db *d, db_entry *e, int64_t when_ms) {
    e = db_expire_quiet(d, e, when_ms);
    size_t len;
    const char *key = db_entry_key(e, &len);
    db_signal_modified(d, key, len, 1);
    return e;
}

int db_persist(db *d, db_entry *e) {
    if (!db_persist_quiet(d, e)) return 0;
    size_t len;
    const char *key = db_entry_key(e, &len);
    db_signal_modified(d, key, len, 1);
    return 1;
}

/* ---- reading the tables ---- */

db_entry *db_find(db *d, const char *key, size_t len) {
    return kvstore_find(d->keys, db_slot(d, key, len), key, len);
}

db_entry *db_random_entry(db *d, int volatile_only) {
    return kvstore_random_entry(volatile_only ? d->expires : d->keys);
}

size_t db_sample(db *d, int volatile_only, db_entry **out, size_t count) {
    return kvstore_sample(volatile_only ? d->expires : d->keys, (void **)out, count);
}

size_t db_scan(db *d, size_t cursor, hashtable_scan_fn fn, void *priv) {
    return kvstore_scan(d->keys, cursor, fn, priv);
}

void db_iter_init(db_iter *it, db *d) {
    kvstore_iter_init(&it->it, d->keys, 0);
}

int db_iter_next(db_iter *it, db_entry **e) {
    void *p;
    if (!kvstore_iter_next(&it->it, &p)) return 0;
    *e = p;
    return 1;
}

void db_iter_reset(db_iter *it) {
    kvstore_iter_reset(&it->it);
}

size_t db_keys_mem_usage(const db *d) {
    return kvstore_mem_usage(d->keys);
}

size_t db_expires_mem_usage(const db *d) {
    return kvstore_mem_usage(d->expires);
}

int db_tables_rehashing(const db *d) {
    return (int)(kvstore_rehashing_count(d->keys) + kvstore_rehashing_count(d->expires));
}

size_t db_size(const db *d) {
    return kvstore_size(d->keys);
}

size_t db_expires_count(const db *d) {
    return kvstore_size(d->expires);
}

/* One change per key removed, as Valkey; announced while the keys are
 * still there, so WATCH can tell which watched keys existed. */
static size_t db_flush_begin(db *d) {
    size_t n = kvstore_size(d->keys);
    db_change ch = {.event = DB_EV_FLUSHED, .d = d, .changes = (long long)n};
    db_announce_change(&ch);
    d->avg_ttl = 0;
    d->expire_cursor = 0;
    return n;
}

size_t db_flush(db *d) {
    size_t n = db_flush_begin(d);
    kvstore_empty(d->expires, NULL, NULL);
    kvstore_empty(d->keys, NULL, NULL);
    return n;
}

size_t db_flush_all(void) {
    size_t n = 0;
    for (int i = 0; i < db_count; i++) n += db_flush(&dbs[i]);
    return n;
}

#define DB_FLUSH_SAMPLE 16

/* What a database's keys hold, for the maxmemory check while the thread
 * frees them: the tables, and the keys at the mean size of a sample. */
static size_t db_flush_estimate(db *d, size_t keys) {
    db_entry *sample[DB_FLUSH_SAMPLE];
    size_t n = db_sample(d, 0, sample, DB_FLUSH_SAMPLE), bytes = 0;
    for (size_t i = 0; i < n; i++) bytes += db_entry_mem_usage(sample[i]);
    return db_keys_mem_usage(d) + db_expires_mem_usage(d) + (n ? bytes / n * keys : 0);
}

size_t db_flush_async(db *d) {
    size_t n = db_flush_begin(d);
    if (!n) { /* nothing worth a job: the empty tables go at once */
        kvstore_empty(d->expires, NULL, NULL);
        kvstore_empty(d->keys, NULL, NULL);
        return 0;
    }
    size_t bytes = db_flush_estimate(d, n);
    kvstore *keys = d->keys, *expires = d->expires;
    d->keys = kvstore_create(&db_keys_type, opts->slot_bits, DB_KVSTORE_FLAGS);
    d->expires = kvstore_create(&db_expires_type, opts->slot_bits, DB_KVSTORE_FLAGS);
    lazyfree_release_stores(keys, expires, n, bytes);
    return n;
}

size_t db_flush_all_async(void) {
    size_t n = 0;
    for (int i = 0; i < db_count; i++) n += db_flush_async(&dbs[i]);
    return n;
}

void db_swap(int a, int b) {
    /* One change, as Valkey counts SWAPDB, even of a database with itself
     * (which touches no watcher). */
    db *x = &dbs[a], *y = &dbs[b];
    db_change ch = {.event = DB_EV_SWAPPED, .d = x, .other = y, .changes = 1};
    db_announce_change(&ch);
    if (a == b) return;
    kvstore *keys = x->keys, *expires = x->expires;
    long long avg = x->avg_ttl;
    x->keys = y->keys;
    x->expires = y->expires;
    x->avg_ttl = y->avg_ttl;
    y->keys = keys;
    y->expires = expires;
    y->avg_ttl = avg;
    x->expire_cursor = y->expire_cursor = 0;
}

/* ---- active expiry ---- */

typedef struct expire_scan {
    db *d;
    int64_t now;
    size_t sampled;
    size_t expired;
    /* A double: a few keys expiring near LLONG_MAX ms would overflow an
     * integer sum, and the average is only an estimate. */
    double ttl_sum;
    size_t ttl_count;
} expire_scan;

static void db_expire_scan_cb(void *priv, void *entry) {
    expire_scan *s = priv;
    db_entry *e = entry;
    int64_t when = db_entry_expire(e);
    s->sampled++;
    if (when <= s->now) {
        db_expire_entry(s->d, e);
        s->expired++;
    } else {
        s->ttl_sum += (double)(when - s->now);
        s->ttl_count++;
    }
}

/* Folds one sample's mean TTL into the database's estimate, as Valkey
 * does (2% per sample). Both terms stay below LLONG_MAX, so the sum does. */
static void db_update_avg_ttl(db *d, double mean) {
    /* (double)LLONG_MAX is 2^63: anything below converts safely. */
    long long avg = mean >= (double)LLONG_MAX ? LLONG_MAX : (long long)mean;
    d->avg_ttl = d->avg_ttl ? (d->avg_ttl / 50) * 49 + avg / 50 : avg;
}

#define EXPIRE_KEYS_PER_LOOP 20
#define EXPIRE_ACCEPTABLE_STALE 10 /* percent */

/* One database: scan buckets until the sample is mostly live or the time
 * budget is spent. Returns 1 if the budget ran out. */
static int db_expire_db(db *d, uint64_t deadline, size_t *expired) {
    size_t per_loop = (size_t)EXPIRE_KEYS_PER_LOOP * (size_t)(1 + opts->active_expire_effort / 4);
    for (int iter = 0;; iter++) {
        if (!kvstore_size(d->expires)) {
            d->avg_ttl = 0;
            return 0;
        }
        expire_scan s = {.d = d, .now = event_cached_ms()};
        while (s.sampled < per_loop) {
            d->expire_cursor = kvstore_scan(d->expires, d->expire_cursor, db_expire_scan_cb, &s);
            if (d->expire_cursor == 0) break;
        }
        *expired += s.expired;
        if (s.ttl_count) db_update_avg_ttl(d, s.ttl_sum / (double)s.ttl_count);
        if ((iter & 15) == 0 && event_mono_us() > deadline) return 1;
        if (s.sampled == 0 || s.expired * 100 / s.sampled <= EXPIRE_ACCEPTABLE_STALE) return 0;
    }
}

size_t db_active_expire_cycle(uint64_t budget_us) {
    static int next_db;
    uint64_t deadline = event_mono_us() + budget_us;
    size_t expired = 0;
    if (db_deferring_removals) return 0;
    for (int n = 0; n < db_count; n++) {
        db *d = &dbs[next_db];
        next_db = (next_db + 1) % db_count;
        if (db_expire_db(d, deadline, &expired)) {
            stats->expired_time_cap_reached_count++;
            break;
        }
    }
    return expired;
}

void db_cron(void) {
    lazyfree_drain();
    /* A resize holds the new array beside the old one until it is done:
     * the cron's may take half the room under maxmemory, never all of it,
     * so the writes that go on meanwhile still fit (CI: a compaction that
     * took the last 4 KB under the limit made the next SET evict a key). */
    size_t room = db_table_budget();
    size_t budget = room == SIZE_MAX ? SIZE_MAX : room / 2;
    for (int i = 0; i < db_count; i++) {
        kvstore_shrink_if_needed(dbs[i].keys, DB_CRON_SHRINK_SLOTS, budget);
        kvstore_shrink_if_needed(dbs[i].expires, DB_CRON_SHRINK_SLOTS, budget);
        kvstore_rehash_micros(dbs[i].keys, 1000);
        kvstore_rehash_micros(dbs[i].expires, 1000);
    }
}
