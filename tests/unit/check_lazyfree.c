/* check_lazyfree.c -- unit tests for core/keyspace/lazyfree.c and the
 * keyspace's lazy paths: which deletions hand a value to the lazy-free
 * thread (UNLINK, and DEL, overwrites, expiry, eviction, RENAME's target
 * under their directives), what stays on the main thread (cheap values,
 * values a reply still holds, types that may not be freed elsewhere), the
 * counters and pending bytes, FLUSHALL ASYNC's swapped tables, and used
 * memory falling once the thread has run.
 *
 * Until the aggregate types exist, the values are of a test type
 * registered here: its free_effort is its `len`, and its free_value records
 * the thread it ran on and can be held at a gate, so the queue can be
 * looked at while a job waits. */
#include "keyspace/lazyfree.h"

#include "common/kmem.h"
#include "keyspace/db.h"
#include "keyspace/evict.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "keyspace_fixture.h"

#define TYPE_BIG 7       /* free_effort: o->len; may be freed anywhere */
#define TYPE_MAIN_ONLY 6 /* no free_effort: the main thread frees it */
#define BIG_BYTES 4096

static db_options opts;
static db_metrics stats;

/* What the test types' free_value saw; written on whichever thread frees,
 * read after lazyfree_wait (which synchronizes through the queue's lock). */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_closed;
static int freed_here, freed_elsewhere;
static pthread_t main_thread;

static const char *test_type_name(const kobj *o) {
    K_UNUSED(o);
    return "test";
}

static void test_free_value(kobj *o) {
    pthread_mutex_lock(&seen_lock);
    while (gate_closed && !pthread_equal(pthread_self(), main_thread))
        pthread_cond_wait(&gate_cond, &seen_lock);
    if (pthread_equal(pthread_self(), main_thread))
        freed_here++;
    else
        freed_elsewhere++;
    pthread_mutex_unlock(&seen_lock);
    km_free(o->v.ptr);
}

static size_t test_mem_usage(const kobj *o, size_t samples) {
    (void)samples;
    return km_usable(o->v.ptr);
}

static size_t test_free_effort(const kobj *o) {
    return o->len;
}

static const obj_type big_type = {.type_name = test_type_name,
                                  .encoding_name = test_type_name,
                                  .free_value = test_free_value,
                                  .mem_usage = test_mem_usage,
                                  .free_effort = test_free_effort};
static const obj_type main_only_type = {.type_name = test_type_name,
                                        .encoding_name = test_type_name,
                                        .free_value = test_free_value,
                                        .mem_usage = test_mem_usage};

static kobj *new_value(int type, size_t effort, size_t bytes) {
    kobj *o = km_calloc(1, sizeof(*o));
    o->refcount = 1;
    o->type = (uint8_t)type;
    o->encoding = OBJ_ENC_HASHTABLE;
    o->len = effort;
    o->v.ptr = km_alloc(bytes);
    memset(o->v.ptr, 'x', bytes);
    return o;
}

static void put(db *d, const char *key, kobj *o) {
    ck_assert_ptr_nonnull(db_set(d, key, strlen(key), o, 0));
}

static void set_gate(int closed) {
    pthread_mutex_lock(&seen_lock);
    gate_closed = closed;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&seen_lock);
}

static void setup_with(int slot_bits) {
    main_thread = pthread_self();
    obj_set_type(TYPE_BIG, &big_type);
    obj_set_type(TYPE_MAIN_ONLY, &main_only_type);
    keyspace_fixture_setup(&opts, &stats, 4, slot_bits);
    freed_here = freed_elsewhere = 0;
    gate_closed = 0;
    lazyfree_reset_stats();
}

static void setup(void) {
    setup_with(keyspace_slot_bits);
}

static void teardown(void) {
    set_gate(0);
    evict_teardown();
    db_teardown();
    obj_set_type(TYPE_BIG, NULL);
    obj_set_type(TYPE_MAIN_ONLY, NULL);
}

KEYSPACE_LAYOUT_FIXTURES(setup)

/* ---- one value ---- */

START_TEST(test_unlink_frees_on_the_thread) {
    db *d = db_get(0);
    put(d, "big", new_value(TYPE_BIG, 1000, BIG_BYTES));
    ck_assert_int_eq(db_delete_user(d, "big", 3, 1), 1);
    ck_assert_ptr_null(db_find(d, "big", 3));
    lazyfree_wait();
    ck_assert_int_eq(freed_elsewhere, 1);
    ck_assert_int_eq(freed_here, 0);
    ck_assert_uint_eq(lazyfree_freed_objects(), 1);
    ck_assert_uint_eq(lazyfree_pending_objects(), 0);
    ck_assert_uint_eq(lazyfree_pending_bytes(), 0);
    lazyfree_reset_stats();
    ck_assert_uint_eq(lazyfree_freed_objects(), 0);
}
END_TEST

/* Valkey's threshold: an effort of 64 is freed inline, 65 is not. */
START_TEST(test_threshold) {
    db *d = db_get(0);
    put(d, "a", new_value(TYPE_BIG, LAZYFREE_THRESHOLD, 16));
    db_delete_user(d, "a", 1, 1);
    ck_assert_int_eq(freed_here, 1); /* at once, before any wait */
    put(d, "b", new_value(TYPE_BIG, LAZYFREE_THRESHOLD + 1, 16));
    db_delete_user(d, "b", 1, 1);
    lazyfree_wait();
    ck_assert_int_eq(freed_elsewhere, 1);
    ck_assert_uint_eq(lazyfree_freed_objects(), 1);
    /* A string's effort is 1: UNLINK frees it inline. */
    char big[2000];
    memset(big, 's', sizeof(big));
    db_set_str(d, "s", 1, big, sizeof(big), 0, -1);
    db_delete_user(d, "s", 1, 1);
    lazyfree_wait();
    ck_assert_uint_eq(lazyfree_freed_objects(), 1);
}
END_TEST

/* A value a reply still holds loses the key's reference on the main thread
 * and lives on; the last holder frees it there. */
START_TEST(test_referenced_value_stays_on_main) {
    db *d = db_get(0);
    kobj *o = new_value(TYPE_BIG, 1000, BIG_BYTES);
    put(d, "big", o);
    obj_incref(o); /* a reply's reference */
    db_delete_user(d, "big", 3, 1);
    lazyfree_wait();
    ck_assert_int_eq(freed_here + freed_elsewhere, 0);
    ck_assert_uint_eq(o->refcount, 1);
    ck_assert_int_eq(o->v.ptr[BIG_BYTES - 1], 'x');
    ck_assert_uint_eq(lazyfree_freed_objects(), 0);
    obj_decref(o);
    ck_assert_int_eq(freed_here, 1);
}
END_TEST

/* Each deletion follows its directive: on, the thread frees; off, the main
 * thread does. */
static void expect_freed(int elsewhere) {
    lazyfree_wait();
    ck_assert_int_eq(freed_elsewhere, elsewhere ? 1 : 0);
    ck_assert_int_eq(freed_here, elsewhere ? 0 : 1);
    freed_here = freed_elsewhere = 0;
}

START_TEST(test_directives) {
    db *d = db_get(0);
    for (int on = 0; on <= 1; on++) {
        opts.lazyfree = (lazyfree_options){0};

        opts.lazyfree.user_del = on; /* DEL */
        put(d, "k", new_value(TYPE_BIG, 1000, 64));
        db_delete_user(d, "k", 1, 0);
        expect_freed(on);
        opts.lazyfree.user_del = 0;

        opts.lazyfree.server_del = on; /* server-side delete, overwrite, RENAME over a key */
        put(d, "k", new_value(TYPE_BIG, 1000, 64));
        db_delete(d, "k", 1);
        expect_freed(on);
        put(d, "k", new_value(TYPE_BIG, 1000, 64));
        db_set_str(d, "k", 1, "v", 1, 0, -1);
        expect_freed(on);
        put(d, "k", new_value(TYPE_BIG, 1000, 64));
        put(d, "src", obj_string("v", 1));
        db_move(d, db_find(d, "src", 3), d, "k", 1);
        expect_freed(on);
        db_delete(d, "k", 1);
        opts.lazyfree.server_del = 0;

        opts.lazyfree.expire = on; /* a key that expires */
        db_entry *e = db_set_with_expire(d, "k", 1, new_value(TYPE_BIG, 1000, 64), T0 + 10);
        ck_assert_ptr_nonnull(e);
        event_set_cached_ms(T0 + 20);
        ck_assert_ptr_null(db_lookup(d, "k", 1, 1));
        event_set_cached_ms(T0);
        expect_freed(on);
        opts.lazyfree.expire = 0;

        opts.lazyfree.eviction = on; /* the evictor */
        put(d, "k", new_value(TYPE_BIG, 1000, 64));
        db_evict(d, "k", 1);
        expect_freed(on);
    }
    /* UNLINK ignores them all. */
    opts.lazyfree = (lazyfree_options){0};
    put(d, "k", new_value(TYPE_BIG, 1000, 64));
    db_delete_user(d, "k", 1, 1);
    expect_freed(1);
}
END_TEST

/* While a job waits, it is counted, and its bytes are part of what the
 * maxmemory check subtracts. */
START_TEST(test_pending_counts_and_bytes) {
    db *d = db_get(0);
    set_gate(1);
    put(d, "a", new_value(TYPE_BIG, 1000, BIG_BYTES));
    put(d, "b", new_value(TYPE_BIG, 1000, BIG_BYTES));
    db_delete_user(d, "a", 1, 1);
    db_delete_user(d, "b", 1, 1);
    ck_assert_uint_eq(lazyfree_pending_objects(), 2);
    ck_assert_uint_ge(lazyfree_pending_bytes(), 2 * BIG_BYTES);
    ck_assert_uint_ge(db_pending_free(), 2 * BIG_BYTES);
    ck_assert_uint_eq(lazyfree_freed_objects(), 0);
    set_gate(0);
    lazyfree_wait();
    ck_assert_uint_eq(lazyfree_pending_objects(), 0);
    ck_assert_uint_eq(lazyfree_pending_bytes(), 0);
    ck_assert_uint_eq(lazyfree_freed_objects(), 2);
}
END_TEST

/* What the thread frees leaves used_memory: its allocation cache is handed
 * back after each job. */
START_TEST(test_used_memory_falls) {
    db *d = db_get(0);
    const size_t bytes = 16 * 1024 * 1024, n = 4096;
    char key[16];
    for (size_t i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%zu", i);
        /* Small pieces, which a thread's cache would otherwise keep. */
        put(d, key, new_value(TYPE_BIG, 1000, bytes / n));
    }
    size_t before = km_used_memory();
    for (size_t i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%zu", i);
        db_delete_user(d, key, strlen(key), 1);
    }
    lazyfree_wait();
    size_t after = km_used_memory();
    ck_assert_msg(after + bytes * 3 / 4 < before, "used %zu -> %zu", before, after);
    ck_assert_int_eq(freed_elsewhere, (int)n);
}
END_TEST

/* ---- flushing ---- */

#define FLUSH_STRINGS 2000

/* A database of every kind of value: embedded and RAW strings, one large
 * enough for the large arena, TTLs, big values of the test type, one of a
 * type the thread must leave to the main thread, and a RAW string a reply
 * holds. Returns that string; *keys: how many keys. */
static kobj *fill_for_flush(db *d, size_t *keys) {
    char key[32], val[600];
    memset(val, 'v', sizeof(val));
    for (int i = 0; i < FLUSH_STRINGS; i++) {
        int n = snprintf(key, sizeof(key), "s%d", i);
        db_set_str(d, key, (size_t)n, val, i % 2 ? 10 : sizeof(val), 0, i % 3 ? -1 : T0 + 100000);
    }
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "big%d", i);
        put(d, key, new_value(TYPE_BIG, 1000, BIG_BYTES));
    }
    put(d, "mainonly", new_value(TYPE_MAIN_ONLY, 1, 64));
    kobj *huge = obj_string_alloc(KM_LARGE + 10);
    memset(huge->v.ptr, 'h', KM_LARGE + 10);
    huge->len = KM_LARGE + 10;
    huge->v.ptr[huge->len] = '\0';
    put(d, "huge", huge);
    kobj *held = obj_string_raw(val, sizeof(val));
    put(d, "held", held);
    obj_incref(held); /* a reply's reference */
    *keys = FLUSH_STRINGS + 13;
    ck_assert_uint_eq(db_size(d), *keys);
    return held;
}

START_TEST(test_flush_async) {
    db *d = db_get(1);
    size_t keys;
    kobj *held = fill_for_flush(d, &keys);
    set_gate(1);
    ck_assert_uint_eq(db_flush_async(d), keys);
    /* The database is empty at once, and usable. */
    ck_assert_uint_eq(db_size(d), 0);
    ck_assert_uint_eq(db_expires_count(d), 0);
    ck_assert_ptr_null(db_find(d, "s0", 2));
    db_set_str(d, "new", 3, "v", 1, 0, T0 + 1000);
    ck_assert_uint_eq(db_size(d), 1);
    ck_assert_uint_eq(lazyfree_pending_objects(), keys);
    /* An estimate from a sample of keys near one place (half the strings
     * are 10 bytes, half 600): at least every key's smallest block. */
    ck_assert_uint_gt(lazyfree_pending_bytes(), FLUSH_STRINGS * 24);
    set_gate(0);
    lazyfree_wait();
    ck_assert_uint_eq(lazyfree_pending_objects(), 0);
    ck_assert_uint_eq(lazyfree_pending_bytes(), 0);
    ck_assert_uint_eq(lazyfree_freed_objects(), keys); /* Valkey counts the keys */
    ck_assert_int_eq(freed_elsewhere, 10);
    ck_assert_int_eq(freed_here, 1); /* the main-only value came back */
    /* The held string lost the key's reference only. */
    ck_assert_uint_eq(held->refcount, 1);
    ck_assert_int_eq(held->v.ptr[599], 'v');
    obj_decref(held);
    ck_assert_ptr_nonnull(db_find(d, "new", 3));
}
END_TEST

START_TEST(test_flush_all_async) {
    size_t total = 0, keys;
    kobj *held[3];
    for (int i = 0; i < 3; i++) {
        held[i] = fill_for_flush(db_get(i), &keys);
        total += keys;
    }
    ck_assert_uint_eq(db_flush_all_async(), total);
    for (int i = 0; i < db_num(); i++)
        ck_assert_uint_eq(db_size(db_get(i)), 0);
    /* An empty database needs no job. */
    ck_assert_uint_eq(db_flush_async(db_get(3)), 0);
    lazyfree_wait();
    ck_assert_uint_eq(lazyfree_freed_objects(), total);
    ck_assert_int_eq(freed_elsewhere, 30);
    for (int i = 0; i < 3; i++)
        obj_decref(held[i]);
}
END_TEST

/* The cron drains what the thread handed back. */
START_TEST(test_cron_drains) {
    db *d = db_get(0);
    put(d, "m", new_value(TYPE_MAIN_ONLY, 1, 64));
    kobj *pad = new_value(TYPE_BIG, 1, 64);
    put(d, "p", pad);
    db_flush_async(d);
    /* Wait for the job without draining, through a second job behind it. */
    put(d, "b", new_value(TYPE_BIG, 1000, 64));
    db_delete_user(d, "b", 1, 1);
    while (lazyfree_pending_objects()) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&seen_lock);
    int here = freed_here;
    pthread_mutex_unlock(&seen_lock);
    ck_assert_int_eq(here, 0);
    db_cron();
    ck_assert_int_eq(freed_here, 1);
}
END_TEST

/* The queue runs dry at teardown. */
START_TEST(test_teardown_runs_the_queue) {
    db *d = db_get(0);
    char key[16];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        put(d, key, new_value(TYPE_BIG, 1000, 64));
        db_delete_user(d, key, strlen(key), 1);
    }
    put(d, "m", new_value(TYPE_MAIN_ONLY, 1, 64));
    db_flush_async(d);
    lazyfree_teardown();
    ck_assert_int_eq(freed_elsewhere, 100);
    ck_assert_int_eq(freed_here, 1);
    ck_assert_uint_eq(lazyfree_pending_objects(), 0);
    /* A later job starts the thread again. */
    put(d, "b", new_value(TYPE_BIG, 1000, 64));
    db_delete_user(d, "b", 1, 1);
    lazyfree_wait();
    ck_assert_int_eq(freed_elsewhere, 101);
}
END_TEST

static Suite *lazyfree_suite(void) {
    Suite *s = suite_create("lazyfree");
    TCase *one = tcase_create("value");
    tcase_add_checked_fixture(one, setup_standalone, teardown);
    tcase_add_test(one, test_unlink_frees_on_the_thread);
    tcase_add_test(one, test_threshold);
    tcase_add_test(one, test_referenced_value_stays_on_main);
    tcase_add_test(one, test_directives);
    tcase_add_test(one, test_pending_counts_and_bytes);
    tcase_add_test(one, test_used_memory_falls);
    tcase_add_test(one, test_cron_drains);
    tcase_add_test(one, test_teardown_runs_the_queue);
    suite_add_tcase(s, one);
    TCase *standalone = tcase_create("flush_standalone");
    tcase_add_checked_fixture(standalone, setup_standalone, teardown);
    tcase_add_test(standalone, test_flush_async);
    tcase_add_test(standalone, test_flush_all_async);
    suite_add_tcase(s, standalone);
    TCase *cluster = tcase_create("flush_cluster_layout");
    tcase_add_checked_fixture(cluster, setup_cluster_layout, teardown);
    tcase_add_test(cluster, test_flush_async);
    tcase_add_test(cluster, test_flush_all_async);
    suite_add_tcase(s, cluster);
    return s;
}

int main(void) {
    SRunner *r = srunner_create(lazyfree_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
