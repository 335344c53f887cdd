/* db.c -- databases, keys, lazy and active expiry, access clocks, and the
 * change hooks through which the rest of the server hears of every change. */
#include "keyspace/db.h"

#include "common/common.h"
#include "common/kmem.h"
#include "event/event.h"

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

static const void *db_entry_key(const void *entry, size_t *len) {
    const db_entry *e = entry;
    *len = e->keylen;
    return e->key;
}

static void db_entry_free(void *entry) {
    db_entry *e = entry;
    obj_decref(e->val);
    km_free(e);
}

const hashtable_type db_keys_type = {.entry_key = db_entry_key, .entry_free = db_entry_free};
const hashtable_type db_expires_type = {.entry_key = db_entry_key, .entry_free = NULL};

void db_setup(const db_options *o, db_metrics *m) {
    opts = o;
    stats = m;
    db_count = o->databases;
    dbs = km_calloc((size_t)db_count, sizeof(db));
    for (int i = 0; i < db_count; i++) {
        dbs[i].id = i;
        dbs[i].keys = hashtable_create(&db_keys_type);
        dbs[i].expires = hashtable_create(&db_expires_type);
    }
}

void db_teardown(void) {
    for (int i = 0; i < db_count; i++) {
        hashtable_release(dbs[i].expires);
        hashtable_release(dbs[i].keys);
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
    return e->expire != -1 && e->expire <= event_cached_ms();
}

/* Why a key leaves: Valkey counts only deletions as changes, and WATCH
 * ignores the expiry of a key that was already expired when watched. */
static int db_remove(db *d, const char *key, size_t len, db_event why);

static void db_expire_entry(db *d, db_entry *e) {
    stats->expired_keys++;
    db_remove(d, e->key, e->keylen, DB_EV_EXPIRED);
}

db_entry *db_lookup_quiet(db *d, const char *key, size_t len) {
    db_entry *e = hashtable_find(d->keys, key, len);
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
        if (e)
            stats->keyspace_hits++;
        else
            stats->keyspace_misses++;
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

void db_signal_modified(db *d, const char *key, size_t len) {
    db_announce(d, key, len, DB_EV_MODIFIED, 1);
}

/* ---- modification ---- */

static db_entry *db_entry_new(const char *key, size_t len, kobj *val) {
    db_entry *e = km_alloc(sizeof(db_entry) + len + 1);
    e->val = val;
    e->expire = -1;
    e->keylen = (uint32_t)len;
    memcpy(e->key, key, len);
    e->key[len] = '\0';
    db_init_clock(e);
    return e;
}

/* The quiet steps the public operations are made of: none announces. */

static db_entry *db_insert(db *d, const char *key, size_t len, kobj *val) {
    db_entry *e = db_entry_new(key, len, val);
    if (!hashtable_add(d->keys, e, NULL)) {
        e->val = NULL;
        km_free(e);
        return NULL;
    }
    return e;
}

/* Takes key out of both tables; the caller frees the entry. */
static db_entry *db_pop(db *d, const char *key, size_t len) {
    void *popped;
    if (!hashtable_delete(d->keys, key, len, &popped)) return NULL;
    db_entry *e = popped;
    if (e->expire != -1) hashtable_delete(d->expires, key, len, NULL);
    return e;
}

static void db_swap_value(db_entry *e, kobj *val) {
    kobj *old = e->val;
    e->val = val;
    obj_decref(old);
    db_touch(e);
}

static void db_expire_quiet(db *d, db_entry *e, int64_t when_ms) {
    if (e->expire == -1) hashtable_add(d->expires, e, NULL);
    e->expire = when_ms;
}

static int db_persist_quiet(db *d, db_entry *e) {
    if (e->expire == -1) return 0;
    hashtable_delete(d->expires, e->key, e->keylen, NULL);
    e->expire = -1;
    return 1;
}

db_entry *db_add(db *d, const char *key, size_t len, kobj *val) {
    db_entry *e = db_insert(d, key, len, val);
    if (e) db_announce(d, key, len, DB_EV_MODIFIED, 1);
    return e;
}

kobj *db_value_writable(db *d, db_entry *e, size_t need) {
    /* The entry's own reference is handed to obj_make_writable, so an
     * unshared RAW value grows in place instead of being copied. */
    e->val = obj_make_writable(e->val, need);
    if (db_access_touches) db_touch(e);
    db_signal_modified(d, e->key, e->keylen);
    return e->val;
}

/* Also db_set's step, inlined there: SET's path. */
static inline void db_replace_value_inline(db *d, db_entry *e, kobj *val) {
    db_swap_value(e, val);
    db_announce(d, e->key, e->keylen, DB_EV_MODIFIED, 1);
}

void db_replace_value(db *d, db_entry *e, kobj *val) {
    db_replace_value_inline(d, e, val);
}

db_entry *db_set(db *d, const char *key, size_t len, kobj *val, int flags) {
    db_entry *e = db_lookup_quiet(d, key, len);
    if (!e) return db_add(d, key, len, val);
    if (!(flags & DB_SET_KEEPTTL)) db_persist_quiet(d, e);
    db_replace_value_inline(d, e, val);
    return e;
}

db_entry *db_set_with_expire(db *d, const char *key, size_t len, kobj *val, int64_t when_ms) {
    db_entry *e = db_lookup_quiet(d, key, len);
    if (e)
        db_swap_value(e, val);
    else
        e = db_insert(d, key, len, val);
    if (when_ms == -1)
        db_persist_quiet(d, e);
    else
        db_expire_quiet(d, e, when_ms);
    db_announce(d, key, len, DB_EV_MODIFIED, 1);
    return e;
}

db_entry *db_put(db *d, const char *key, size_t len, kobj *val, int64_t when_ms) {
    db_entry *old = db_pop(d, key, len);
    db_entry *e = db_insert(d, key, len, val);
    if (when_ms != -1) db_expire_quiet(d, e, when_ms);
    db_announce(d, key, len, DB_EV_MODIFIED, 1);
    if (old) db_entry_free(old);
    return e;
}

db_entry *db_move(db *from, db_entry *e, db *to, const char *key, size_t len) {
    kobj *val = obj_incref(e->val);
    int64_t expire = e->expire;
    uint32_t lru = e->lru;
    db_pop(from, e->key, e->keylen);
    db_announce(from, e->key, e->keylen, DB_EV_DELETED, 0); /* counted once, with the new key */
    db_entry_free(e);
    db_entry *n = db_put(to, key, len, val, expire);
    /* The value keeps its LRU/LFU history, as Valkey's object does. */
    n->lru = lru;
    return n;
}

static int db_remove(db *d, const char *key, size_t len, db_event why) {
    db_entry *e = db_pop(d, key, len);
    if (!e) return 0;
    /* Announced before the free: key may be the entry's own bytes. */
    db_announce(d, key, len, why, why == DB_EV_DELETED);
    db_entry_free(e);
    return 1;
}

int db_delete(db *d, const char *key, size_t len) {
    return db_remove(d, key, len, DB_EV_DELETED);
}

int db_evict(db *d, const char *key, size_t len) {
    return db_remove(d, key, len, DB_EV_EVICTED);
}

void db_set_expire(db *d, db_entry *e, int64_t when_ms) {
    db_expire_quiet(d, e, when_ms);
    db_signal_modified(d, e->key, e->keylen);
}

int db_persist(db *d, db_entry *e) {
    if (!db_persist_quiet(d, e)) return 0;
    db_signal_modified(d, e->key, e->keylen);
    return 1;
}

size_t db_size(const db *d) {
    return hashtable_size(d->keys);
}

size_t db_expires_count(const db *d) {
    return hashtable_size(d->expires);
}

size_t db_flush(db *d) {
    size_t n = hashtable_size(d->keys);
    /* One change per key removed, as Valkey; announced while the keys are
     * still there, so WATCH can tell which watched keys existed. */
    db_change ch = {.event = DB_EV_FLUSHED, .d = d, .changes = (long long)n};
    db_announce_change(&ch);
    hashtable_empty(d->expires);
    hashtable_empty(d->keys);
    d->avg_ttl = 0;
    d->expire_cursor = 0;
    return n;
}

size_t db_flush_all(void) {
    size_t n = 0;
    for (int i = 0; i < db_count; i++) n += db_flush(&dbs[i]);
    return n;
}

void db_swap(int a, int b) {
    /* One change, as Valkey counts SWAPDB, even of a database with itself
     * (which touches no watcher). */
    db *x = &dbs[a], *y = &dbs[b];
    db_change ch = {.event = DB_EV_SWAPPED, .d = x, .other = y, .changes = 1};
    db_announce_change(&ch);
    if (a == b) return;
    hashtable *keys = x->keys, *expires = x->expires;
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
    s->sampled++;
    if (e->expire <= s->now) {
        db_expire_entry(s->d, e);
        s->expired++;
    } else {
        s->ttl_sum += (double)(e->expire - s->now);
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
        if (!hashtable_size(d->expires)) {
            d->avg_ttl = 0;
            return 0;
        }
        expire_scan s = {.d = d, .now = event_cached_ms()};
        while (s.sampled < per_loop) {
            d->expire_cursor = hashtable_scan(d->expires, d->expire_cursor, db_expire_scan_cb, &s);
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
    for (int i = 0; i < db_count; i++) {
        hashtable_shrink_if_needed(dbs[i].keys);
        hashtable_shrink_if_needed(dbs[i].expires);
        hashtable_rehash_micros(dbs[i].keys, 1000);
        hashtable_rehash_micros(dbs[i].expires, 1000);
    }
}
