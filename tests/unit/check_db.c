/* check_db.c -- unit tests for core/keyspace/db.c: set/get/delete, lazy
 * expiry through the cached clock event_cached_ms(), PERSIST, KEEPTTL, the active
 * expire cycle, FLUSHDB/SWAPDB, RENAME/MOVE/COPY's moves, the change count
 * (INFO rdb_changes_since_last_save), keyspace hit/miss counters and access
 * clocks, and the change hooks.
 *
 * Every test runs between a fresh fresh db_options + db_setup() and
 * db_teardown(); time is simulated by setting event_cached_ms(). */
#include "keyspace/db.h"

#include "common/common.h"
#include "common/kmem.h"
#include "ds/hashtable.h"
#include "keyspace/kvstore.h"
#include "event/event.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyspace_fixture.h"

/* The keyspace stands alone: its options and counters are the test's. */
static db_options opts;
static db_metrics stats;
static long long changes;

static void count_changes(const db_change *ch, void *priv) {
    changes += ch->changes;
}

static void setup(void) {
    keyspace_fixture_setup(&opts, &stats, 16, keyspace_slot_bits);
    changes = 0;
    db_add_hook(count_changes, NULL);
}

KEYSPACE_LAYOUT_FIXTURES(setup)

static void teardown(void) {
    db_teardown();
}

/* ---- helpers ------------------------------------------------------------- */

static db_entry *set_str(db *d, const char *key, const char *val, int flags) {
    return db_set(d, key, strlen(key), obj_string(val, strlen(val)), flags);
}

static db_entry *get(db *d, const char *key) {
    return db_lookup(d, key, strlen(key), 0);
}

/* The raw table entry, without lazy expiry. */
static db_entry *raw_find(db *d, const char *key) {
    return db_find(d, key, strlen(key));
}

static db_entry *raw_find_expires(db *d, const char *key) {
    return kvstore_find(d->expires, kvstore_slot(d->expires, key, strlen(key)), key, strlen(key));
}

static void expect_val(db_entry *e, const char *want) {
    ck_assert_ptr_nonnull(e);
    char buf[32];
    size_t len;
    (void)buf;
    const char *s = db_entry_str(e, &len);
    ck_assert_uint_eq(len, strlen(want));
    ck_assert_mem_eq(s, want, len);
}

/* ---- basic ------------------------------------------------------------- */

START_TEST(test_set_get_delete) {
    db *d = db_get(0);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(d->id, 0);
    ck_assert_ptr_nonnull(db_get(15));
    ck_assert_ptr_null(db_get(16));
    ck_assert_ptr_null(db_get(-1));

    ck_assert_ptr_null(get(d, "k"));
    db_entry *e = set_str(d, "k", "v1", 0);
    ck_assert_ptr_nonnull(e);
    size_t klen;
    const char *kbytes = db_entry_key(e, &klen);
    ck_assert_uint_eq(klen, 1);
    ck_assert_mem_eq(kbytes, "k", 1);
    ck_assert(db_entry_expire(e) == -1);
    ck_assert_uint_eq(db_size(d), 1);
    ck_assert_ptr_eq(get(d, "k"), e);
    expect_val(get(d, "k"), "v1");

    /* a short value is overwritten in the key's block */
    db_entry *e2 = set_str(d, "k", "v2", 0);
    ck_assert_ptr_eq(e2, e);
    expect_val(get(d, "k"), "v2");
    ck_assert_uint_eq(db_size(d), 1);

    /* other databases are separate */
    ck_assert_ptr_null(get(db_get(1), "k"));

    ck_assert_int_eq(db_delete(d, "k", 1), 1);
    ck_assert_ptr_null(get(d, "k"));
    ck_assert_uint_eq(db_size(d), 0);
    ck_assert_int_eq(db_delete(d, "k", 1), 0);

    /* binary keys */
    db_set(d, "a\0b", 3, obj_string("x", 1), 0);
    ck_assert_ptr_nonnull(db_lookup(d, "a\0b", 3, 0));
    ck_assert_ptr_null(db_lookup(d, "a", 1, 0));
    ck_assert_int_eq(db_delete(d, "a\0b", 3), 1);
}
END_TEST

START_TEST(test_add_existing) {
    db *d = db_get(0);
    kobj *v1 = obj_string("one", 3);
    ck_assert_ptr_nonnull(db_add(d, "k", 1, v1, 1));
    kobj *v2 = obj_string("two", 3);
    ck_assert_ptr_null(db_add(d, "k", 1, v2, 1));
    /* the caller keeps its reference on failure; the stored value is intact */
    ck_assert_uint_eq(v2->refcount, 1);
    obj_decref(v2);
    expect_val(get(d, "k"), "one");
    ck_assert_uint_eq(db_size(d), 1);
}
END_TEST

START_TEST(test_replace_value) {
    db *d = db_get(0);
    db_entry *e = set_str(d, "k", "a", 0);
    e = db_set_expire(d, e, T0 + 5000);
    e = db_replace_value(d, e, obj_string("b", 1), 1);
    expect_val(get(d, "k"), "b");
    ck_assert(db_entry_expire(e) == T0 + 5000); /* replacing the value keeps the TTL */
    ck_assert_uint_eq(db_expires_count(d), 1);
}
END_TEST

/* ---- expiry ------------------------------------------------------------ */

START_TEST(test_lazy_expiry) {
    db *d = db_get(0);
    db_entry *e = set_str(d, "k", "v", 0);
    set_str(d, "other", "v", 0);
    e = db_set_expire(d, e, T0 + 1000);
    ck_assert(db_entry_expire(e) == T0 + 1000);
    ck_assert_uint_eq(db_expires_count(d), 1);
    ck_assert_ptr_eq(raw_find_expires(d, "k"), e);

    event_set_cached_ms(T0 + 999); /* one ms before */
    ck_assert(!db_is_expired(e));
    ck_assert_ptr_eq(db_lookup(d, "k", 1, 1), e);
    ck_assert_int_eq(stats.expired_keys, 0);

    event_set_cached_ms(T0 + 1000); /* expire <= now: expired */
    ck_assert(db_is_expired(e));
    ck_assert_ptr_null(db_lookup(d, "k", 1, 1));
    ck_assert_int_eq(stats.expired_keys, 1);
    ck_assert_int_eq(stats.keyspace_hits, 1);
    ck_assert_int_eq(stats.keyspace_misses, 1);
    /* gone from both tables */
    ck_assert_ptr_null(raw_find(d, "k"));
    ck_assert_ptr_null(raw_find_expires(d, "k"));
    ck_assert_uint_eq(db_size(d), 1);
    ck_assert_uint_eq(db_expires_count(d), 0);
    /* a second lookup is a plain miss, not a second expiry */
    ck_assert_ptr_null(db_lookup(d, "k", 1, 1));
    ck_assert_int_eq(stats.expired_keys, 1);
    ck_assert_ptr_nonnull(get(d, "other"));
}
END_TEST

START_TEST(test_lazy_expiry_quiet_and_set) {
    db *d = db_get(0);
    db_entry *e = set_str(d, "q", "v", 0);
    e = db_set_expire(d, e, T0 - 1);  /* already in the past */
    ck_assert_uint_eq(db_size(d), 1); /* nothing removed until accessed */
    ck_assert_ptr_null(db_lookup_quiet(d, "q", 1));
    ck_assert_int_eq(stats.expired_keys, 1);
    ck_assert_int_eq(stats.keyspace_misses, 0); /* quiet: no stats */
    ck_assert_uint_eq(db_size(d), 0);
    ck_assert_uint_eq(db_expires_count(d), 0);

    /* db_set over a logically expired key creates a fresh key without TTL */
    e = set_str(d, "s", "old", 0);
    e = db_set_expire(d, e, T0 - 1);
    db_entry *n = set_str(d, "s", "new", DB_SET_KEEPTTL);
    ck_assert_ptr_nonnull(n);
    ck_assert(db_entry_expire(n) == -1);
    ck_assert_int_eq(stats.expired_keys, 2);
    ck_assert_uint_eq(db_expires_count(d), 0);
    expect_val(get(d, "s"), "new");

    /* db_add over a logically expired key succeeds */
    e = set_str(d, "a", "old", 0);
    e = db_set_expire(d, e, T0 - 1);
    ck_assert_int_eq(db_expires_count(d), 1);
    ck_assert_ptr_null(db_lookup_quiet(d, "a", 1));
    ck_assert_ptr_nonnull(db_add(d, "a", 1, obj_string("new", 3), 1));
    expect_val(get(d, "a"), "new");
}
END_TEST

START_TEST(test_set_expire_twice) {
    db *d = db_get(0);
    db_entry *e = set_str(d, "k", "v", 0);
    e = db_set_expire(d, e, T0 + 1000);
    e = db_set_expire(d, e, T0 + 5000); /* changing the TTL: still one entry */
    ck_assert_uint_eq(db_expires_count(d), 1);
    event_set_cached_ms(T0 + 2000);
    ck_assert_ptr_eq(get(d, "k"), e);
    event_set_cached_ms(T0 + 5000);
    ck_assert_ptr_null(get(d, "k"));
    ck_assert_uint_eq(db_expires_count(d), 0);
}
END_TEST

START_TEST(test_persist) {
    db *d = db_get(0);
    db_entry *e = set_str(d, "k", "v", 0);
    ck_assert_int_eq(db_persist(d, e), 0); /* no TTL */
    e = db_set_expire(d, e, T0 + 1000);
    ck_assert_int_eq(db_persist(d, e), 1);
    ck_assert(db_entry_expire(e) == -1);
    ck_assert_uint_eq(db_expires_count(d), 0);
    ck_assert_ptr_null(raw_find_expires(d, "k"));
    ck_assert_int_eq(db_persist(d, e), 0);
    event_set_cached_ms(T0 + 100000);
    ck_assert_ptr_eq(get(d, "k"), e);
    ck_assert_int_eq(stats.expired_keys, 0);
    /* the TTL can be set again after PERSIST */
    e = db_set_expire(d, e, T0 + 200000);
    ck_assert_uint_eq(db_expires_count(d), 1);
}
END_TEST

START_TEST(test_keepttl) {
    db *d = db_get(0);
    db_entry *e = set_str(d, "k", "v1", 0);
    e = db_set_expire(d, e, T0 + 10000);

    e = set_str(d, "k", "v2", DB_SET_KEEPTTL);
    ck_assert(db_entry_expire(e) == T0 + 10000);
    ck_assert_uint_eq(db_expires_count(d), 1);
    ck_assert_ptr_eq(raw_find_expires(d, "k"), e);
    expect_val(e, "v2");

    e = set_str(d, "k", "v3", 0); /* plain SET clears the TTL */
    ck_assert(db_entry_expire(e) == -1);
    ck_assert_uint_eq(db_expires_count(d), 0);
    ck_assert_ptr_null(raw_find_expires(d, "k"));
    event_set_cached_ms(T0 + 20000);
    expect_val(get(d, "k"), "v3");
    ck_assert_int_eq(stats.expired_keys, 0);

    /* KEEPTTL on a key without TTL keeps "no TTL" */
    e = set_str(d, "k", "v4", DB_SET_KEEPTTL);
    ck_assert(db_entry_expire(e) == -1);
    ck_assert_uint_eq(db_expires_count(d), 0);
}
END_TEST

START_TEST(test_delete_with_ttl) {
    db *d = db_get(0);
    db_entry *e = set_str(d, "k", "v", 0);
    e = db_set_expire(d, e, T0 + 1000);
    ck_assert_int_eq(db_delete(d, "k", 1), 1);
    ck_assert_uint_eq(db_expires_count(d), 0);
    ck_assert_ptr_null(raw_find_expires(d, "k"));
    /* the active cycle must not see a dangling entry (ASan would tell) */
    event_set_cached_ms(T0 + 5000);
    ck_assert_uint_eq(db_active_expire_cycle(100000), 0);
}
END_TEST

/* 10k keys in db 0: 5000 already expired, 3000 with a future TTL, 2000
 * without TTL; plus a few in db 3. The cycle must remove exactly the
 * expired ones (over repeated calls) and nothing else. */
START_TEST(test_active_expire_cycle) {
    db *d = db_get(0);
    db *d3 = db_get(3);
    enum { N = 10000 };
    char key[32];
    for (int i = 0; i < N; i++) {
        int n = snprintf(key, sizeof(key), "key:%d", i);
        db_entry *e = db_set(d, key, (size_t)n, obj_int(i), 0);
        if (i % 2 == 0) db_set_expire(d, e, T0 + 1 + i % 1000); /* expired at T0+2000 */
        else if (i % 10 != 1 && i % 10 != 3) db_set_expire(d, e, T0 + 3600 * 1000);
    }
    for (int i = 0; i < 100; i++) {
        int n = snprintf(key, sizeof(key), "d3:%d", i);
        db_entry *e = db_set(d3, key, (size_t)n, obj_int(i), 0);
        e = db_set_expire(d3, e, i < 50 ? T0 + 10 : T0 + 3600 * 1000);
    }
    ck_assert_uint_eq(db_size(d), N);
    ck_assert_uint_eq(db_expires_count(d), 8000);
    ck_assert_uint_eq(db_expires_count(d3), 100);

    /* nothing has expired yet */
    ck_assert_uint_eq(db_active_expire_cycle(100000), 0);
    ck_assert_uint_eq(db_size(d), N);

    event_set_cached_ms(T0 + 2000);
    size_t total = 0;
    int cycles = 0;
    while (total < 5050 && cycles < 200000) {
        total += db_active_expire_cycle(100000);
        cycles++;
    }
    ck_assert_msg(total == 5050, "expired %zu of 5050 after %d cycles", total, cycles);
    ck_assert_int_eq(stats.expired_keys, 5050);
    /* more cycles find nothing */
    ck_assert_uint_eq(db_active_expire_cycle(100000), 0);

    ck_assert_uint_eq(db_size(d), 5000);
    ck_assert_uint_eq(db_expires_count(d), 3000);
    ck_assert_uint_eq(db_size(d3), 50);
    ck_assert_uint_eq(db_expires_count(d3), 50);
    for (int i = 0; i < N; i++) {
        int n = snprintf(key, sizeof(key), "key:%d", i);
        db_entry *e = db_find(d, key, (size_t)n);
        if (i % 2 == 0) {
            EXPECT(e == NULL);
            EXPECT(kvstore_find(d->expires, kvstore_slot(d->expires, key, (size_t)n), key,
                                (size_t)n) == NULL);
        } else {
            EXPECT(e != NULL);
            int64_t v = -1;
            EXPECT(e && db_entry_get_int(e, &v) && v == i);
        }
    }
    /* the estimate of the average TTL of live keys is about an hour */
    ck_assert_int_gt(d->avg_ttl, 0);
    ck_assert_int_le(d->avg_ttl, 3600 * 1000);
}
END_TEST

/* While samples keep showing more than 10% stale keys, one cycle goes on
 * (Valkey's ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE): with 90% of the volatile
 * keys expired, a single cycle with a generous budget removes most of them,
 * not just one sample's worth. */
START_TEST(test_active_expire_repeats_while_stale) {
    db *d = db_get(0);
    char key[32];
    for (int i = 0; i < 10000; i++) {
        int n = snprintf(key, sizeof(key), "v:%d", i);
        db_entry *e = db_set(d, key, (size_t)n, obj_int(i), 0);
        e = db_set_expire(d, e, i % 10 == 0 ? T0 + 3600 * 1000 : T0 + 100);
    }
    event_set_cached_ms(T0 + 1000);
    size_t n = db_active_expire_cycle(2000000);
    ck_assert_msg(n >= 4500, "one cycle expired only %zu of 9000 stale keys", n);
    ck_assert_uint_eq(db_size(d), 10000 - n);
    ck_assert_int_eq(stats.expired_keys, (long long)n);
}
END_TEST

/* ---- flush / swap ------------------------------------------------------- */

START_TEST(test_flush) {
    db *d0 = db_get(0), *d1 = db_get(1);
    for (int i = 0; i < 100; i++) {
        char key[16];
        int n = snprintf(key, sizeof(key), "k%d", i);
        db_entry *e = db_set(d0, key, (size_t)n, obj_int(i), 0);
        if (i < 30) db_set_expire(d0, e, T0 + 1000);
    }
    set_str(d1, "x", "1", 0);
    set_str(d1, "y", "2", 0);

    ck_assert_uint_eq(db_flush(d0), 100);
    ck_assert_uint_eq(db_size(d0), 0);
    ck_assert_uint_eq(db_expires_count(d0), 0);
    ck_assert_ptr_null(get(d0, "k5"));
    ck_assert_uint_eq(db_size(d1), 2); /* other database untouched */
    ck_assert_uint_eq(db_flush(d0), 0);

    /* the database is usable after a flush */
    set_str(d0, "again", "v", 0);
    ck_assert_uint_eq(db_size(d0), 1);

    set_str(db_get(15), "z", "3", 0);
    ck_assert_uint_eq(db_flush_all(), 4);
    for (int i = 0; i < 16; i++) ck_assert_uint_eq(db_size(db_get(i)), 0);
}
END_TEST

START_TEST(test_swap) {
    db *d0 = db_get(0), *d1 = db_get(1);
    set_str(d0, "a", "A", 0);
    db_entry *b = set_str(d0, "b", "B", 0);
    b = db_set_expire(d0, b, T0 + 1000);
    set_str(d1, "c", "C", 0);

    db_swap(0, 1);
    ck_assert_ptr_eq(db_get(0), d0); /* ids stay; contents move */
    ck_assert_int_eq(d0->id, 0);
    ck_assert_int_eq(d1->id, 1);
    ck_assert_uint_eq(db_size(d0), 1);
    ck_assert_uint_eq(db_size(d1), 2);
    ck_assert_uint_eq(db_expires_count(d0), 0);
    ck_assert_uint_eq(db_expires_count(d1), 1);
    expect_val(get(d0, "c"), "C");
    ck_assert_ptr_null(get(d0, "a"));
    expect_val(get(d1, "a"), "A");
    db_entry *bb = get(d1, "b");
    expect_val(bb, "B");
    ck_assert(db_entry_expire(bb) == T0 + 1000);

    /* expiry follows the key into its new database */
    event_set_cached_ms(T0 + 1000);
    ck_assert_ptr_null(get(d1, "b"));
    ck_assert_uint_eq(db_expires_count(d1), 0);
    ck_assert_uint_eq(db_size(d1), 1);

    /* swapping back */
    db_swap(1, 0);
    ck_assert_ptr_nonnull(get(d0, "a"));
    ck_assert_ptr_nonnull(get(d1, "c"));
}
END_TEST

/* ---- change count (INFO rdb_changes_since_last_save) --------------------- */

static kobj *str(const char *v) {
    return obj_string(v, strlen(v));
}

/* Each operation counts what Valkey's command counts in server.dirty. */
START_TEST(test_changes_counted) {
    db *d0 = db_get(0), *d1 = db_get(1);
    ck_assert_int_eq(changes, 0);
    db_entry *a = set_str(d0, "a", "1", 0);
    a = db_set_expire(d0, a, T0 + 1000);
    set_str(d0, "a", "2", 0); /* clearing the TTL is part of this change */
    ck_assert_int_eq(changes, 3);
    ck_assert(db_entry_expire(get(d0, "a")) == -1);
    ck_assert_int_eq(db_persist(d0, get(d0, "a")), 0);
    ck_assert_int_eq(changes, 3);

    db_set_with_expire(d0, "b", 1, str("x"), T0 + 1000);
    db_set_with_expire(d0, "b", 1, str("y"), T0 + 2000);
    ck_assert_int_eq(changes, 5);
    ck_assert(db_entry_expire(raw_find_expires(d0, "b")) == T0 + 2000);

    db_move(d0, get(d0, "b"), d0, "c", 1); /* RENAME b c */
    ck_assert_ptr_null(raw_find(d0, "b"));
    ck_assert(db_entry_expire(raw_find_expires(d0, "c")) == T0 + 2000);
    db_put(d0, "c", 1, str("z"), -1); /* COPY x c REPLACE */
    expect_val(raw_find(d0, "c"), "z");
    ck_assert_ptr_null(raw_find_expires(d0, "c"));
    db_move(d0, get(d0, "c"), d1, "c", 1); /* MOVE c 1 */
    ck_assert_int_eq(changes, 8);
    ck_assert_int_eq(db_evict(d1, "c", 1), 1);
    ck_assert_int_eq(db_delete(d0, "none", 4), 0);
    ck_assert_int_eq(changes, 8);

    db_entry *e = set_str(d0, "e", "1", 0);
    e = db_set_expire(d0, e, T0 + 10);
    event_set_cached_ms(T0 + 10);
    ck_assert_ptr_null(get(d0, "e")); /* expired: no change */
    ck_assert_int_eq(changes, 10);

    set_str(d0, "f", "1", 0);
    set_str(d0, "g", "1", 0);
    ck_assert_uint_eq(db_flush(d0), 3); /* a, f, g */
    ck_assert_int_eq(changes, 15);
    db_swap(0, 1);
    db_swap(1, 1);
    ck_assert_int_eq(changes, 17);
}
END_TEST

/* RENAME onto an existing key replaces it, keeping the source's TTL and
 * access clock. */
START_TEST(test_move_replaces) {
    db *d = db_get(0);
    db_entry *src = set_str(d, "src", "S", 0);
    src = db_set_expire(d, src, T0 + 5000);
    src->lru = 1234;
    db_entry *dst = set_str(d, "dst", "D", 0);
    dst = db_set_expire(d, dst, T0 + 9000);
    db_entry *n = db_move(d, src, d, "dst", 3);
    expect_val(n, "S");
    ck_assert(db_entry_expire(n) == T0 + 5000);
    ck_assert_uint_eq(n->lru, 1234);
    ck_assert_uint_eq(db_size(d), 1);
    ck_assert_uint_eq(db_expires_count(d), 1);
    ck_assert_ptr_eq(raw_find_expires(d, "dst"), n);
}
END_TEST

/* ---- counters and clocks -------------------------------------------------- */

START_TEST(test_hits_misses) {
    db *d = db_get(0);
    set_str(d, "k", "v", 0);
    ck_assert_ptr_nonnull(db_lookup(d, "k", 1, 1));
    ck_assert_ptr_nonnull(db_lookup(d, "k", 1, 1));
    ck_assert_ptr_null(db_lookup(d, "nokey", 5, 1));
    ck_assert_int_eq(stats.keyspace_hits, 2);
    ck_assert_int_eq(stats.keyspace_misses, 1);
    /* stats off: nothing counted */
    ck_assert_ptr_nonnull(db_lookup(d, "k", 1, 0));
    ck_assert_ptr_null(db_lookup(d, "nokey", 5, 0));
    ck_assert_ptr_nonnull(db_lookup_quiet(d, "k", 1));
    ck_assert_int_eq(stats.keyspace_hits, 2);
    ck_assert_int_eq(stats.keyspace_misses, 1);
}
END_TEST

START_TEST(test_lru_clock) {
    db *d = db_get(0);
    ck_assert_uint_eq(db_lru_clock(), (uint32_t)((T0 / 1000) & ((1u << 24) - 1)));
    db_entry *e = set_str(d, "k", "v", 0);
    ck_assert_uint_eq(e->lru, db_lru_clock());
    ck_assert_uint_eq(db_idle_seconds(e), 0);

    event_set_cached_ms(T0 + 100 * 1000);
    ck_assert_uint_eq(db_idle_seconds(e), 100);
    ck_assert_ptr_eq(db_lookup_quiet(d, "k", 1), e); /* quiet: no touch */
    ck_assert_uint_eq(db_idle_seconds(e), 100);
    ck_assert_ptr_eq(db_lookup(d, "k", 1, 0), e); /* touch */
    ck_assert_uint_eq(db_idle_seconds(e), 0);

    /* the 24-bit clock wraps */
    e->lru = (1u << 24) - 1 - 5; /* 5 before the wrap */
    event_set_cached_ms((int64_t)(1u << 24) * 1000 * 3 + 5 * 1000); /* clock = 5 */
    ck_assert_uint_eq(db_lru_clock(), 5);
    ck_assert_uint_eq(db_idle_seconds(e), 10);
}
END_TEST

START_TEST(test_lfu_clock) {
    opts.maxmemory_policy = MAXMEMORY_ALLKEYS_LFU;
    opts.lfu_decay_time = 1;
    db *d = db_get(0);
    db_entry *e = set_str(d, "k", "v", 0);
    ck_assert_uint_eq(db_lfu_freq(e), 5); /* LFU_INIT_VAL */
    uint32_t minutes = (uint32_t)((T0 / 60000) & 0xffff);
    ck_assert_uint_eq(e->lru >> 8, minutes);

    e->lru = (minutes << 8) | 20;
    event_set_cached_ms(T0 + 3 * 60000); /* 3 periods of 1 minute */
    ck_assert_uint_eq(db_lfu_freq(e), 17);
    event_set_cached_ms(T0 + 60 * 60000);
    ck_assert_uint_eq(db_lfu_freq(e), 0); /* never below zero */

    /* accesses raise the counter (logarithmically) */
    event_set_cached_ms(T0);
    e->lru = (minutes << 8) | 0;
    for (int i = 0; i < 100; i++) db_touch(e);
    ck_assert_uint_gt(db_lfu_freq(e), 5);
    ck_assert_uint_le(db_lfu_freq(e), 255);
}
END_TEST

/* Keys that expire near LLONG_MAX ms: the average the cycle keeps (INFO
 * avg_ttl) must not overflow summing their TTLs. */
START_TEST(test_active_expire_far_ttls) {
    db *d = db_get(0);
    for (int i = 0; i < 50; i++) {
        char key[16];
        snprintf(key, sizeof(key), "far:%d", i);
        db_set_with_expire(d, key, strlen(key), str("v"), INT64_MAX - i);
    }
    db_active_expire_cycle(1000000);
    ck_assert_uint_eq(db_size(d), 50);
    long long want = INT64_MAX - T0 - 50;
    ck_assert_msg(d->avg_ttl > want / 100 * 99, "avg_ttl %lld, want about %lld", d->avg_ttl, want);
}
END_TEST


/* ---- change hooks --------------------------------------------------------- */

/* What a recording hook heard: the event, the key, the database, the keys
 * the database still held at the time (FLUSHED is announced before). */
typedef struct heard {
    db_event ev[16];
    char key[16][16];
    int dbid[16];
    size_t size_then[16];
    long long changes[16];
    int n;
} heard;

static void record(const db_change *ch, void *priv) {
    heard *h = priv;
    if (h->n == 16) return;
    h->ev[h->n] = ch->event;
    snprintf(h->key[h->n], sizeof(h->key[0]), "%.*s", (int)ch->len, ch->key ? ch->key : "");
    h->dbid[h->n] = ch->d->id;
    h->size_then[h->n] = db_size(ch->d);
    h->changes[h->n] = ch->changes;
    h->n++;
}

START_TEST(test_hooks_hear_every_change) {
    heard h = {0};
    ck_assert_int_eq(db_add_hook(record, &h), K_OK);
    ck_assert_int_eq(db_add_hook(record, &h), K_ERR); /* the same hook twice */
    db *d0 = db_get(0);
    set_str(d0, "a", "1", 0);
    db_delete(d0, "a", 1);
    set_str(d0, "e", "1", 0);
    db_set_expire(d0, get(d0, "e"), T0 + 10);
    event_set_cached_ms(T0 + 20);
    ck_assert_ptr_null(get(d0, "e")); /* lazy expiry */
    set_str(d0, "v", "1", 0);
    db_evict(d0, "v", 1);
    set_str(d0, "x", "1", 0);
    set_str(d0, "y", "1", 0);
    db_flush(d0);
    db_swap(0, 1);
    db_remove_hook(record, &h);
    set_str(d0, "after", "1", 0); /* removed: not heard */

    static const db_event want[] = {DB_EV_MODIFIED, DB_EV_DELETED,  DB_EV_MODIFIED, DB_EV_MODIFIED,
                                    DB_EV_EXPIRED,  DB_EV_MODIFIED, DB_EV_EVICTED,  DB_EV_MODIFIED,
                                    DB_EV_MODIFIED, DB_EV_FLUSHED,  DB_EV_SWAPPED};
    static const char *keys[] = {"a", "a", "e", "e", "e", "v", "v", "x", "y", "", ""};
    static const long long counts[] = {1, 1, 1, 1, 0, 1, 0, 1, 1, 2, 1};
    ck_assert_int_eq(h.n, (int)(sizeof(want) / sizeof(want[0])));
    for (int i = 0; i < h.n; i++) {
        ck_assert_msg(h.ev[i] == want[i], "event %d: %d, want %d", i, h.ev[i], want[i]);
        ck_assert_str_eq(h.key[i], keys[i]);
        ck_assert_int_eq(h.changes[i], counts[i]);
    }
    ck_assert_uint_eq(h.size_then[9], 2); /* FLUSHED: announced while x and y are there */
    ck_assert_int_eq(h.dbid[10], 0);
}
END_TEST

static void add_basic(TCase *tc) {
    tcase_add_test(tc, test_set_get_delete);
    tcase_add_test(tc, test_add_existing);
    tcase_add_test(tc, test_replace_value);
    tcase_add_test(tc, test_hits_misses);
    tcase_add_test(tc, test_flush);
    tcase_add_test(tc, test_swap);
    tcase_add_test(tc, test_changes_counted);
    tcase_add_test(tc, test_move_replaces);
    tcase_add_test(tc, test_lru_clock);
    tcase_add_test(tc, test_lfu_clock);
    tcase_add_test(tc, test_hooks_hear_every_change);
}

static void add_expire(TCase *ex) {
    tcase_add_test(ex, test_lazy_expiry);
    tcase_add_test(ex, test_lazy_expiry_quiet_and_set);
    tcase_add_test(ex, test_set_expire_twice);
    tcase_add_test(ex, test_persist);
    tcase_add_test(ex, test_keepttl);
    tcase_add_test(ex, test_delete_with_ttl);
    tcase_add_test(ex, test_active_expire_cycle);
    tcase_add_test(ex, test_active_expire_repeats_while_stale);
    tcase_add_test(ex, test_active_expire_far_ttls);
}

static Suite *db_suite(void) {
    Suite *s = suite_create("db");
    struct {
        const char *name;
        void (*setup)(void);
        void (*add)(TCase *);
    } cases[] = {
        {"basic", setup_standalone, add_basic},
        {"expire", setup_standalone, add_expire},
        {"basic-16384-slots", setup_cluster_layout, add_basic},
        {"expire-16384-slots", setup_cluster_layout, add_expire},
    };
    for (size_t i = 0; i < K_ARRAY_LEN(cases); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, cases[i].setup, teardown);
        tcase_set_timeout(tc, 120);
        cases[i].add(tc);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(db_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
