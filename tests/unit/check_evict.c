/* check_evict.c -- unit tests for core/keyspace/evict.c: the eviction pool
 * (sorted, bounded, no duplicates, best popped first), scores for LRU, LFU
 * and volatile-ttl, and evict_free_memory under each kind of policy.
 *
 * Access clocks are set by hand (e->lru) and time by event_cached_ms(), so the
 * "idle" and "recent" keys are known exactly. Each test runs between
 * fresh db_options + db_setup() and evict_teardown() + db_teardown() +
 * config_free(). */
#include "keyspace/evict.h"

#include "common/kmem.h"
#include "ds/hashtable.h"
#include "event/event.h"
#include "keyspace/db.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyspace_fixture.h"

/* The keyspace stands alone: its options and counters are the test's. */
static db_options opts;
static db_metrics stats;
static void setup(void) {
    keyspace_fixture_setup(&opts, &stats, 16, 0);
    srand(12345);
}

static void teardown(void) {
    evict_teardown();
    db_teardown();
}

static db_entry *add_key(db *d, const char *fmt, int i) {
    char key[32];
    int n = snprintf(key, sizeof(key), fmt, i);
    db_entry *e = db_set(d, key, (size_t)n, obj_int(i), 0);
    ck_assert_ptr_nonnull(e);
    return e;
}

static int has_key(db *d, const char *fmt, int i) {
    char key[32];
    int n = snprintf(key, sizeof(key), fmt, i);
    return db_find(d, key, (size_t)n) != NULL;
}

/* ---- the pool ------------------------------------------------------------ */

static void pool_add(evict_pool *p, uint64_t score, const char *key) {
    evict_pool_insert(p, score, 0, key, strlen(key));
}

static void expect_sorted(const evict_pool *p) {
    for (int i = 1; i < p->count; i++)
        ck_assert_msg(p->items[i - 1].score <= p->items[i].score, "pool not sorted at %d", i);
}

START_TEST(test_pool_sorted_bounded) {
    evict_pool p = {0};
    /* 40 candidates in a scrambled order: scores 1..40 */
    for (int k = 0; k < 40; k++) {
        int score = (k * 17) % 40 + 1;
        char key[16];
        snprintf(key, sizeof(key), "s%d", score);
        pool_add(&p, (uint64_t)score, key);
        ck_assert_int_le(p.count, EVPOOL_SIZE);
        expect_sorted(&p);
    }
    ck_assert_int_eq(p.count, EVPOOL_SIZE);
    /* the best 16 survive: 25..40 */
    for (int i = 0; i < EVPOOL_SIZE; i++) {
        char key[16];
        snprintf(key, sizeof(key), "s%d", 25 + i);
        ck_assert_uint_eq(p.items[i].score, (uint64_t)(25 + i));
        ck_assert_str_eq(p.items[i].key, key);
        ck_assert_uint_eq(p.items[i].keylen, strlen(key));
        ck_assert_int_eq(p.items[i].dbid, 0);
    }
    /* worse than everything kept (or equal to the worst): dropped */
    pool_add(&p, 3, "worse");
    pool_add(&p, 25, "tie");
    ck_assert_int_eq(p.count, EVPOOL_SIZE);
    ck_assert_uint_eq(p.items[0].score, 25);
    ck_assert_str_eq(p.items[0].key, "s25");
    for (int i = 0; i < p.count; i++) {
        ck_assert_str_ne(p.items[i].key, "worse");
        ck_assert_str_ne(p.items[i].key, "tie");
    }
    /* a better one pushes out the worst */
    pool_add(&p, 30, "mid");
    ck_assert_int_eq(p.count, EVPOOL_SIZE);
    ck_assert_uint_eq(p.items[0].score, 26);
    expect_sorted(&p);
    pool_add(&p, 1000, "best");
    ck_assert_str_eq(p.items[EVPOOL_SIZE - 1].key, "best");
    ck_assert_uint_eq(p.items[0].score, 27);
    evict_pool_clear(&p);
    ck_assert_int_eq(p.count, 0);
}
END_TEST

START_TEST(test_pool_duplicates) {
    evict_pool p = {0};
    pool_add(&p, 10, "a");
    pool_add(&p, 20, "b");
    pool_add(&p, 50, "a"); /* same key: ignored */
    ck_assert_int_eq(p.count, 2);
    ck_assert_uint_eq(p.items[0].score, 10);
    ck_assert_str_eq(p.items[0].key, "a");
    /* same key in another database is another candidate */
    evict_pool_insert(&p, 30, 1, "a", 1);
    ck_assert_int_eq(p.count, 3);
    ck_assert_int_eq(p.items[2].dbid, 1);
    /* binary keys compare by length and bytes */
    evict_pool_insert(&p, 5, 0, "a\0x", 3);
    ck_assert_int_eq(p.count, 4);
    ck_assert_uint_eq(p.items[0].keylen, 3);

    /* a full pool also ignores duplicates of kept keys */
    evict_pool_clear(&p);
    for (int i = 0; i < EVPOOL_SIZE; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        pool_add(&p, (uint64_t)(100 + i), key);
    }
    pool_add(&p, 500, "k3");
    ck_assert_int_eq(p.count, EVPOOL_SIZE);
    ck_assert_uint_eq(p.items[0].score, 100); /* nothing was pushed out */
    int k3 = 0;
    for (int i = 0; i < p.count; i++)
        if (!strcmp(p.items[i].key, "k3")) k3++;
    ck_assert_int_eq(k3, 1);
    evict_pool_clear(&p);
}
END_TEST

START_TEST(test_pool_pop_best_first) {
    evict_pool p = {0};
    const uint64_t scores[] = {7, 3, 9, 1, 8, 2};
    for (size_t i = 0; i < 6; i++) {
        char key[8];
        snprintf(key, sizeof(key), "k%llu", (unsigned long long)scores[i]);
        pool_add(&p, scores[i], key);
    }
    const uint64_t want[] = {9, 8, 7, 3, 2, 1};
    evict_candidate c;
    for (size_t i = 0; i < 6; i++) {
        ck_assert(evict_pool_pop(&p, &c));
        ck_assert_uint_eq(c.score, want[i]);
        char key[8];
        snprintf(key, sizeof(key), "k%llu", (unsigned long long)want[i]);
        ck_assert_uint_eq(c.keylen, strlen(key));
        ck_assert_str_eq(c.key, key);
        km_free(c.key); /* the caller owns the key */
    }
    ck_assert(!evict_pool_pop(&p, &c));
    ck_assert_int_eq(p.count, 0);
}
END_TEST

/* ---- scores ---------------------------------------------------------------- */

START_TEST(test_score_lru) {
    db *d = db_get(0);
    db_entry *old = add_key(d, "old%d", 0);
    db_entry *mid = add_key(d, "mid%d", 0);
    db_entry *now = add_key(d, "now%d", 0);
    uint32_t clock = db_lru_clock();
    old->lru = clock - 1000;
    mid->lru = clock - 10;
    int policies[] = {MAXMEMORY_ALLKEYS_LRU, MAXMEMORY_VOLATILE_LRU};
    for (int i = 0; i < 2; i++) {
        uint64_t so = evict_score(old, policies[i]);
        uint64_t sm = evict_score(mid, policies[i]);
        uint64_t sn = evict_score(now, policies[i]);
        ck_assert_uint_eq(so, 1000);
        ck_assert_uint_eq(sm, 10);
        ck_assert_uint_eq(sn, 0);
    }
}
END_TEST

START_TEST(test_score_lfu) {
    opts.maxmemory_policy = MAXMEMORY_ALLKEYS_LFU;
    opts.lfu_decay_time = 1;
    db *d = db_get(0);
    db_entry *hot = add_key(d, "hot%d", 0);
    db_entry *cold = add_key(d, "cold%d", 0);
    db_entry *decayed = add_key(d, "decayed%d", 0);
    uint32_t minutes = (uint32_t)((T0 / 60000) & 0xffff);
    hot->lru = (minutes << 8) | 200;
    cold->lru = (minutes << 8) | 2;
    decayed->lru = ((minutes - 150) << 8) | 200; /* 150 minutes idle: 50 left */
    int policies[] = {MAXMEMORY_ALLKEYS_LFU, MAXMEMORY_VOLATILE_LFU};
    for (int i = 0; i < 2; i++) {
        ck_assert_uint_eq(evict_score(hot, policies[i]), 55);
        ck_assert_uint_eq(evict_score(cold, policies[i]), 253);
        ck_assert_uint_eq(evict_score(decayed, policies[i]), 205);
        ck_assert_uint_gt(evict_score(cold, policies[i]), evict_score(decayed, policies[i]));
        ck_assert_uint_gt(evict_score(decayed, policies[i]), evict_score(hot, policies[i]));
    }
}
END_TEST

START_TEST(test_score_ttl) {
    db *d = db_get(0);
    db_entry *soon = add_key(d, "soon%d", 0);
    db_entry *later = add_key(d, "later%d", 0);
    db_entry *much_later = add_key(d, "much%d", 0);
    soon = db_set_expire(d, soon, T0 + 1000);
    later = db_set_expire(d, later, T0 + 2000);
    much_later = db_set_expire(d, much_later, T0 + 86400000LL);
    uint64_t a = evict_score(soon, MAXMEMORY_VOLATILE_TTL);
    uint64_t b = evict_score(later, MAXMEMORY_VOLATILE_TTL);
    uint64_t c = evict_score(much_later, MAXMEMORY_VOLATILE_TTL);
    ck_assert_uint_gt(a, b);
    ck_assert_uint_gt(b, c);
    ck_assert_uint_eq(a - b, 1000);
}
END_TEST

/* ---- evict_free_memory --------------------------------------------------- */

/* 1000 keys: even ids idle for hours, odd ids just used. Evicting 100 keys
 * under an LRU policy must take (almost) only idle ones. */
START_TEST(test_evict_allkeys_lru_prefers_idle) {
    opts.maxmemory_policy = MAXMEMORY_ALLKEYS_LRU;
    opts.maxmemory_samples = 5;
    db *d = db_get(0);
    uint32_t clock = db_lru_clock();
    for (int i = 0; i < 1000; i++) {
        db_entry *e = add_key(d, "k%d", i);
        e->lru = i % 2 == 0 ? clock - 10000 - (uint32_t)i : clock;
    }
    for (int n = 0; n < 100; n++) ck_assert_uint_gt(evict_free_memory(1), 0);
    ck_assert_uint_eq(db_size(d), 900);
    ck_assert_int_eq(stats.evicted_keys, 100);
    int old_evicted = 0, recent_evicted = 0;
    for (int i = 0; i < 1000; i++) {
        if (has_key(d, "k%d", i)) continue;
        if (i % 2 == 0) old_evicted++;
        else recent_evicted++;
    }
    ck_assert_int_eq(old_evicted + recent_evicted, 100);
    ck_assert_msg(old_evicted >= 90, "only %d of 100 evicted keys were idle ones", old_evicted);
}
END_TEST

START_TEST(test_evict_allkeys_lfu_prefers_cold) {
    opts.maxmemory_policy = MAXMEMORY_ALLKEYS_LFU;
    opts.maxmemory_samples = 5;
    db *d = db_get(0);
    uint32_t minutes = (uint32_t)((T0 / 60000) & 0xffff);
    for (int i = 0; i < 1000; i++) {
        db_entry *e = add_key(d, "k%d", i);
        e->lru = (minutes << 8) | (i % 2 == 0 ? 1u : 200u);
    }
    for (int n = 0; n < 100; n++) ck_assert_uint_gt(evict_free_memory(1), 0);
    int cold_evicted = 0;
    for (int i = 0; i < 1000; i += 2)
        if (!has_key(d, "k%d", i)) cold_evicted++;
    ck_assert_uint_eq(db_size(d), 900);
    ck_assert_msg(cold_evicted >= 90, "only %d of 100 evicted keys were cold ones", cold_evicted);
}
END_TEST

/* evict_free_memory frees at least `need` bytes (its estimate) when there is
 * enough to evict, and counts each key. */
START_TEST(test_evict_need_bytes) {
    opts.maxmemory_policy = MAXMEMORY_ALLKEYS_LRU;
    db *d = db_get(0);
    for (int i = 0; i < 500; i++) add_key(d, "key:%d", i);
    size_t freed = evict_free_memory(10000);
    ck_assert_uint_ge(freed, 10000);
    size_t evicted = 500 - db_size(d);
    ck_assert_uint_gt(evicted, 0);
    ck_assert_int_eq(stats.evicted_keys, (long long)evicted);
    /* a key costs well over 16 bytes, so fewer than 10000/16 keys went */
    ck_assert_uint_lt(evicted, 10000 / 16);
    /* asking for more than everything evicts everything, then stops */
    freed = evict_free_memory(SIZE_MAX / 2);
    ck_assert_uint_gt(freed, 0);
    ck_assert_uint_eq(db_size(d), 0);
    ck_assert_uint_eq(evict_free_memory(1), 0);
}
END_TEST

/* volatile-*: only keys with a TTL; 100 persistent keys must survive. */
START_TEST(test_evict_volatile_spares_persistent) {
    const int policies[] = {MAXMEMORY_VOLATILE_LRU, MAXMEMORY_VOLATILE_LFU, MAXMEMORY_VOLATILE_TTL};
    for (int p = 0; p < 3; p++) {
        opts.maxmemory_policy = policies[p];
        db *d = db_get(0);
        db *d2 = db_get(2);
        uint32_t clock = db_lru_clock();
        for (int i = 0; i < 100; i++) {
            db_entry *e = add_key(d, "persist:%d", i);
            e->lru = clock - 100000; /* very idle: the best LRU candidates */
        }
        for (int i = 0; i < 10; i++) {
            db_entry *e = add_key(i < 5 ? d : d2, "vol:%d", i);
            db_set_expire(i < 5 ? d : d2, e, T0 + 1000000 + i);
        }
        long long before = stats.evicted_keys;
        size_t freed = evict_free_memory(SIZE_MAX / 2);
        ck_assert_uint_gt(freed, 0);
        ck_assert_int_eq(stats.evicted_keys - before, 10);
        ck_assert_uint_eq(db_size(d), 100);
        ck_assert_uint_eq(db_size(d2), 0);
        ck_assert_uint_eq(db_expires_count(d), 0);
        for (int i = 0; i < 100; i++) EXPECT(has_key(d, "persist:%d", i));
        /* nothing evictable left */
        ck_assert_uint_eq(evict_free_memory(1), 0);
        ck_assert_uint_eq(db_size(d), 100);
        db_flush_all();
        evict_teardown();
    }
}
END_TEST

/* volatile-ttl with all keys sampled: the soonest-expiring go first, in order. */
START_TEST(test_evict_volatile_ttl_order) {
    opts.maxmemory_policy = MAXMEMORY_VOLATILE_TTL;
    opts.maxmemory_samples = 64;
    db *d = db_get(0);
    for (int i = 0; i < 20; i++) {
        /* insertion order scrambled against expiry order */
        int id = (i * 7) % 20;
        db_entry *e = add_key(d, "t%d", id);
        db_set_expire(d, e, T0 + 1000 * (id + 1));
    }
    for (int i = 0; i < 30; i++) add_key(d, "p%d", i);
    for (int n = 0; n < 5; n++) {
        ck_assert_uint_gt(evict_free_memory(1), 0);
        for (int id = 0; id < 20; id++)
            ck_assert_msg(has_key(d, "t%d", id) == (id > n), "after %d evictions: t%d %s", n + 1, id,
                          id > n ? "missing" : "still present");
    }
    ck_assert_uint_eq(db_size(d), 45);
}
END_TEST

/* Candidates left in the pool whose keys were deleted meanwhile are skipped. */
START_TEST(test_evict_stale_pool) {
    opts.maxmemory_policy = MAXMEMORY_ALLKEYS_LRU;
    opts.maxmemory_samples = 64;
    db *d = db_get(0);
    for (int i = 0; i < 40; i++) add_key(d, "k%d", i);
    ck_assert_uint_gt(evict_free_memory(1), 0); /* fills the pool */
    ck_assert_uint_eq(db_size(d), 39);
    db_flush(d);
    ck_assert_uint_eq(evict_free_memory(1), 0);
    ck_assert_int_eq(stats.evicted_keys, 1);
    /* new keys with the old names are evicted normally */
    for (int i = 0; i < 5; i++) add_key(d, "k%d", i);
    ck_assert_uint_gt(evict_free_memory(1), 0);
    ck_assert_uint_eq(db_size(d), 4);
}
END_TEST

START_TEST(test_evict_nothing) {
    const int policies[] = {MAXMEMORY_ALLKEYS_LRU,   MAXMEMORY_ALLKEYS_LFU,    MAXMEMORY_ALLKEYS_RANDOM,
                            MAXMEMORY_VOLATILE_LRU,  MAXMEMORY_VOLATILE_LFU,   MAXMEMORY_VOLATILE_RANDOM,
                            MAXMEMORY_VOLATILE_TTL};
    for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++) {
        opts.maxmemory_policy = policies[p];
        ck_assert_uint_eq(evict_free_memory(1000), 0);
    }
    ck_assert_int_eq(stats.evicted_keys, 0);

    /* only persistent keys: volatile policies find nothing */
    db *d = db_get(0);
    for (int i = 0; i < 50; i++) add_key(d, "k%d", i);
    for (size_t p = 3; p < sizeof(policies) / sizeof(policies[0]); p++) {
        opts.maxmemory_policy = policies[p];
        ck_assert_uint_eq(evict_free_memory(1000), 0);
    }
    ck_assert_uint_eq(db_size(d), 50);
    ck_assert_int_eq(stats.evicted_keys, 0);
}
END_TEST

/* Random policies must find a key whenever one exists, whichever database
 * holds it (Valkey visits the databases in turn). Here db 0 of 16 holds the
 * only key each time. */
START_TEST(test_evict_random_finds_key) {
    const int policies[] = {MAXMEMORY_ALLKEYS_RANDOM, MAXMEMORY_VOLATILE_RANDOM};
    for (int p = 0; p < 2; p++) {
        opts.maxmemory_policy = policies[p];
        db *d = db_get(0);
        int failures = 0;
        for (int trial = 0; trial < 50; trial++) {
            db_entry *e = add_key(d, "only%d", trial);
            db_set_expire(d, e, T0 + 100000);
            if (evict_free_memory(1) == 0) failures++;
            db_flush(d);
        }
        ck_assert_msg(failures == 0, "%s: evict_free_memory returned 0 in %d of 50 trials with a key present",
                      p == 0 ? "allkeys-random" : "volatile-random", failures);
    }
    /* volatile-random leaves persistent keys alone */
    opts.maxmemory_policy = MAXMEMORY_VOLATILE_RANDOM;
    db *d = db_get(0);
    for (int i = 0; i < 20; i++) add_key(d, "p%d", i);
    ck_assert_uint_eq(evict_free_memory(1), 0);
    ck_assert_uint_eq(db_size(d), 20);
}
END_TEST

static Suite *evict_suite(void) {
    Suite *s = suite_create("evict");
    TCase *pool = tcase_create("pool");
    tcase_add_checked_fixture(pool, setup, teardown);
    tcase_add_test(pool, test_pool_sorted_bounded);
    tcase_add_test(pool, test_pool_duplicates);
    tcase_add_test(pool, test_pool_pop_best_first);
    tcase_add_test(pool, test_score_lru);
    tcase_add_test(pool, test_score_lfu);
    tcase_add_test(pool, test_score_ttl);
    suite_add_tcase(s, pool);

    TCase *ev = tcase_create("evict");
    tcase_add_checked_fixture(ev, setup, teardown);
    tcase_set_timeout(ev, 60);
    tcase_add_test(ev, test_evict_allkeys_lru_prefers_idle);
    tcase_add_test(ev, test_evict_allkeys_lfu_prefers_cold);
    tcase_add_test(ev, test_evict_need_bytes);
    tcase_add_test(ev, test_evict_volatile_spares_persistent);
    tcase_add_test(ev, test_evict_volatile_ttl_order);
    tcase_add_test(ev, test_evict_stale_pool);
    tcase_add_test(ev, test_evict_nothing);
    tcase_add_test(ev, test_evict_random_finds_key);
    suite_add_tcase(s, ev);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(evict_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
