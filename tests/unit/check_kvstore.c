/* check_kvstore.c -- unit tests for core/keyspace/kvstore.c: the standalone
 * layout, keys routed to 16384 per-slot tables, fair sampling across slots,
 * SCAN while tables grow, empty and are freed under the cursor, an active
 * expiry walk slot by slot, iterators, flushing and the cron calls.
 *
 * Entries are small structs with an embedded key; `id` indexes per-test
 * bookkeeping. Keys "{tag}rest" are placed in a chosen slot with the tag
 * table built by find_tags(). */
#include "keyspace/kvstore.h"

#include "common/kmem.h"
#include "keyspace/slot.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Passing ck_asserts cost microseconds each: hot loops use EXPECT. */
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) ck_assert_msg(0, "expected: %s", #cond);                                      \
    } while (0)

typedef struct item {
    size_t id;
    long long expire; /* for the active expiry test */
    size_t len;
    char key[40];
} item;

static size_t frees;

static const void *item_key(const void *entry, size_t *len) {
    const item *it = entry;
    *len = it->len;
    return it->key;
}

static void item_free(void *entry) {
    frees++;
    km_free(entry);
}

static const hashtable_type owning_type = {.entry_key = item_key, .entry_free = item_free};

static item *item_new(size_t id, const char *fmt_key) {
    item *it = km_calloc(1, sizeof(*it));
    it->id = id;
    it->len = strlen(fmt_key);
    memcpy(it->key, fmt_key, it->len);
    return it;
}

/* A key of its own for id, without a tag. */
static item *plain_item(size_t id) {
    char k[40];
    snprintf(k, sizeof(k), "key:%zu", id);
    return item_new(id, k);
}

/* tags[s]: a short string whose slot is s, so "{tags[s]}x" lands in s. */
static char tags[SLOT_COUNT][12];

static void find_tags(void) {
    static int done;
    if (done) return;
    int left = SLOT_COUNT;
    for (unsigned n = 0; left > 0; n++) {
        char t[12];
        int len = snprintf(t, sizeof(t), "t%u", n);
        unsigned s = slot_of_key(t, (size_t)len);
        if (tags[s][0]) continue;
        memcpy(tags[s], t, (size_t)len + 1);
        left--;
    }
    done = 1;
}

/* An item in slot s. */
static item *slot_item(size_t id, int s) {
    char k[40];
    snprintf(k, sizeof(k), "{%.11s}%zu", tags[s], id);
    return item_new(id, k);
}

static int add_item(kvstore *kvs, item *it) {
    return kvstore_add(kvs, kvstore_slot(kvs, it->key, it->len), it, NULL);
}

static int delete_key(kvstore *kvs, const char *key, size_t len) {
    return kvstore_delete(kvs, kvstore_slot(kvs, key, len), key, len, NULL);
}

/* ------------------------------------------------------------ standalone */

START_TEST(test_standalone_basic) {
    frees = 0;
    ck_assert_ptr_null(kvstore_create(&owning_type, 17, 0));
    ck_assert_ptr_null(kvstore_create(&owning_type, -1, 0));
    kvstore *kvs = kvstore_create(&owning_type, 0,
                                  KVSTORE_ALLOCATE_TABLES_ON_DEMAND | KVSTORE_FREE_EMPTY_TABLES);
    ck_assert_int_eq(kvstore_num_slots(kvs), 1);
    ck_assert_int_eq(kvstore_allocated_tables(kvs), 0);
    ck_assert_ptr_null(kvstore_table(kvs, 0));
    ck_assert_ptr_null(kvstore_find(kvs, 0, "nope", 4));
    ck_assert_int_eq(kvstore_delete(kvs, 0, "nope", 4, NULL), 0);
    ck_assert_int_eq(kvstore_fair_slot(kvs), -1);
    ck_assert_ptr_null(kvstore_random_entry(kvs));
    ck_assert_int_eq(kvstore_scan(kvs, 0, NULL, NULL), 0);

    for (size_t i = 0; i < 1000; i++) {
        item *it = plain_item(i);
        EXPECT(kvstore_slot(kvs, it->key, it->len) == 0);
        EXPECT(kvstore_add(kvs, 0, it, NULL) == 1);
    }
    ck_assert_uint_eq(kvstore_size(kvs), 1000);
    ck_assert_uint_eq(kvstore_slot_size(kvs, 0), 1000);
    ck_assert_int_eq(kvstore_non_empty_slots(kvs), 1);
    ck_assert_ptr_nonnull(kvstore_table(kvs, 0));

    /* A duplicate is refused and the existing entry handed back. */
    item *dup = plain_item(7);
    void *existing = NULL;
    ck_assert_int_eq(kvstore_add(kvs, 0, dup, &existing), 0);
    ck_assert_ptr_nonnull(existing);
    ck_assert_uint_eq(((item *)existing)->id, 7);
    km_free(dup);
    ck_assert_ptr_eq(kvstore_find(kvs, 0, "key:7", 5), existing);
    ck_assert_uint_eq(kvstore_size(kvs), 1000);

    /* Popped: handed back, not freed. */
    void *popped = NULL;
    size_t f0 = frees;
    ck_assert_int_eq(kvstore_delete(kvs, 0, "key:7", 5, &popped), 1);
    ck_assert_ptr_eq(popped, existing);
    ck_assert_uint_eq(frees, f0);
    km_free(popped);
    ck_assert_ptr_null(kvstore_find(kvs, 0, "key:7", 5));
    ck_assert_uint_eq(kvstore_size(kvs), 999);

    void *r = kvstore_random_entry(kvs);
    ck_assert_ptr_nonnull(r);
    void *sample[8];
    ck_assert_uint_gt(kvstore_sample(kvs, sample, 8), 0);

    char k[40];
    for (size_t i = 0; i < 1000; i++) {
        int len = snprintf(k, sizeof(k), "key:%zu", i);
        EXPECT(kvstore_delete(kvs, 0, k, (size_t)len, NULL) == (i != 7));
    }
    ck_assert_uint_eq(frees, f0 + 999);
    ck_assert_uint_eq(kvstore_size(kvs), 0);
    ck_assert_int_eq(kvstore_non_empty_slots(kvs), 0);
    /* Standalone keeps its one table even with FREE_EMPTY_TABLES. */
    ck_assert_int_eq(kvstore_allocated_tables(kvs), 1);
    ck_assert_ptr_nonnull(kvstore_table(kvs, 0));
    kvstore_release(kvs);

    /* Without ON_DEMAND the table exists from the start. */
    kvs = kvstore_create(&owning_type, 0, 0);
    ck_assert_int_eq(kvstore_allocated_tables(kvs), 1);
    ck_assert_int_eq(add_item(kvs, plain_item(1)), 1);
    kvstore_release(kvs); /* frees the entry (ASan checks) */
}
END_TEST

/* ----------------------------------------------------------- cluster layout */

START_TEST(test_slots_routing_and_counts) {
    find_tags();
    const int flags = KVSTORE_ALLOCATE_TABLES_ON_DEMAND | KVSTORE_FREE_EMPTY_TABLES;
    kvstore *kvs = kvstore_create(&owning_type, KVSTORE_CLUSTER_SLOT_BITS, flags);
    ck_assert_int_eq(kvstore_num_slots(kvs), SLOT_COUNT);
    size_t base = kvstore_mem_usage(kvs);
    ck_assert_int_eq(kvstore_allocated_tables(kvs), 0);

    size_t *naive = km_calloc(SLOT_COUNT, sizeof(size_t));
    const size_t n = 50000;
    for (size_t i = 0; i < n; i++) {
        item *it = plain_item(i);
        int s = kvstore_slot(kvs, it->key, it->len);
        EXPECT(s == (int)slot_of_key(it->key, it->len));
        EXPECT(kvstore_add(kvs, s, it, NULL) == 1);
        naive[s]++;
    }
    /* {hash tags}: one slot for all of them. */
    int tagged = (int)slot_of_key("user1", 5);
    for (size_t i = 0; i < 100; i++) {
        char k[40];
        snprintf(k, sizeof(k), "{user1}.field%zu", i);
        item *it = item_new(n + i, k);
        EXPECT(kvstore_slot(kvs, it->key, it->len) == tagged);
        EXPECT(add_item(kvs, it) == 1);
        naive[tagged]++;
    }
    ck_assert_uint_eq(kvstore_size(kvs), n + 100);
    int non_empty = 0;
    for (int s = 0; s < SLOT_COUNT; s++) {
        EXPECT(kvstore_slot_size(kvs, s) == naive[s]);
        EXPECT((kvstore_table(kvs, s) != NULL) == (naive[s] > 0));
        non_empty += naive[s] > 0;
    }
    ck_assert_int_eq(kvstore_non_empty_slots(kvs), non_empty);
    ck_assert_int_eq(kvstore_allocated_tables(kvs), non_empty);
    ck_assert_uint_gt(kvstore_mem_usage(kvs), base);

    /* A key looked for through its slot is found; in another slot it is not. */
    ck_assert_ptr_nonnull(kvstore_find(kvs, kvstore_slot(kvs, "key:42", 6), "key:42", 6));
    ck_assert_ptr_null(
        kvstore_find(kvs, (kvstore_slot(kvs, "key:42", 6) + 1) % SLOT_COUNT, "key:42", 6));

    /* Next non-empty slot agrees with the naive counts. */
    for (int s = 0; s < SLOT_COUNT; s += 97) {
        int want = -1;
        for (int t = s; t < SLOT_COUNT; t++)
            if (naive[t]) {
                want = t;
                break;
            }
        EXPECT(kvstore_next_slot(kvs, s) == want);
    }

    /* Delete the tagged ones: their slot's table goes once it is empty. */
    for (size_t i = 0; i < 100; i++) {
        char k[40];
        int len = snprintf(k, sizeof(k), "{user1}.field%zu", i);
        EXPECT(delete_key(kvs, k, (size_t)len) == 1);
        naive[tagged]--;
    }
    ck_assert_uint_eq(kvstore_slot_size(kvs, tagged), naive[tagged]);
    ck_assert_int_eq(kvstore_table(kvs, tagged) != NULL, naive[tagged] > 0);

    /* Delete everything: every table freed, memory back to the base. */
    for (size_t i = 0; i < n; i++) {
        char k[40];
        int len = snprintf(k, sizeof(k), "key:%zu", i);
        EXPECT(delete_key(kvs, k, (size_t)len) == 1);
    }
    ck_assert_uint_eq(kvstore_size(kvs), 0);
    ck_assert_int_eq(kvstore_non_empty_slots(kvs), 0);
    ck_assert_int_eq(kvstore_allocated_tables(kvs), 0);
    for (int s = 0; s < SLOT_COUNT; s++)
        EXPECT(kvstore_table(kvs, s) == NULL);
    ck_assert_uint_eq(kvstore_mem_usage(kvs), base);
    ck_assert_int_eq(kvstore_is_rehashing(kvs), 0);
    ck_assert_int_eq(kvstore_next_slot(kvs, 0), -1);
    km_free(naive);
    kvstore_release(kvs);

    /* Without FREE_EMPTY_TABLES an emptied table stays. */
    kvs =
        kvstore_create(&owning_type, KVSTORE_CLUSTER_SLOT_BITS, KVSTORE_ALLOCATE_TABLES_ON_DEMAND);
    ck_assert_int_eq(add_item(kvs, plain_item(1)), 1);
    ck_assert_int_eq(delete_key(kvs, "key:1", 5), 1);
    ck_assert_int_eq(kvstore_allocated_tables(kvs), 1);
    ck_assert_ptr_nonnull(kvstore_table(kvs, kvstore_slot(kvs, "key:1", 5)));
    ck_assert_int_eq(kvstore_scan(kvs, 0, NULL, NULL), 0); /* an empty table is skipped */
    kvstore_release(kvs);
}
END_TEST

/* --------------------------------------------------------------- sampling */

START_TEST(test_fair_sampling) {
    find_tags();
    kvstore *kvs = kvstore_create(&owning_type, KVSTORE_CLUSTER_SLOT_BITS,
                                  KVSTORE_ALLOCATE_TABLES_ON_DEMAND | KVSTORE_FREE_EMPTY_TABLES);
    const int slot_a = 123, slot_b = 9000;
    ck_assert_int_eq(add_item(kvs, slot_item(0, slot_a)), 1);
    for (size_t i = 1; i < 1000; i++)
        EXPECT(add_item(kvs, slot_item(i, slot_b)) == 1);
    ck_assert_uint_eq(kvstore_slot_size(kvs, slot_a), 1);
    ck_assert_uint_eq(kvstore_slot_size(kvs, slot_b), 999);

    /* Expected 0.1% of 100k = 100 draws of A (sd 10); drawing slots
     * uniformly would give 50000. */
    srand(4242);
    const int draws = 100000;
    int hits_a = 0, slot_hits_a = 0, sample_hits_a = 0;
    for (int i = 0; i < draws; i++) {
        item *it = kvstore_random_entry(kvs);
        EXPECT(it != NULL);
        hits_a += it->id == 0;
        int s = kvstore_fair_slot(kvs);
        EXPECT(s == slot_a || s == slot_b);
        slot_hits_a += s == slot_a;
        void *out[4];
        size_t got = kvstore_sample(kvs, out, 4);
        EXPECT(got > 0 && got <= 4);
        int from_a = ((item *)out[0])->id == 0;
        for (size_t j = 1; j < got; j++)
            EXPECT((((item *)out[j])->id == 0) == from_a); /* one slot */
        sample_hits_a += from_a;
    }
    ck_assert_int_ge(hits_a, 30);
    ck_assert_int_le(hits_a, 300);
    ck_assert_int_ge(slot_hits_a, 30);
    ck_assert_int_le(slot_hits_a, 300);
    ck_assert_int_ge(sample_hits_a, 30);
    ck_assert_int_le(sample_hits_a, 300);
    kvstore_release(kvs);
}
END_TEST

/* ------------------------------------------------------------------- scan */

typedef struct scan_ctx {
    unsigned *seen; /* per stable id */
    size_t stable;
} scan_ctx;

static void scan_seen_cb(void *priv, void *entry) {
    scan_ctx *c = priv;
    item *it = entry;
    if (it->id < c->stable) c->seen[it->id]++;
}

typedef struct purge_ctx {
    kvstore *kvs;
    int slot;
    size_t deleted;
} purge_ctx;

/* Deletes the entry it is given (what active expiry does). */
static void purge_cb(void *priv, void *entry) {
    purge_ctx *c = priv;
    item *it = entry;
    EXPECT(kvstore_slot(c->kvs, it->key, it->len) == c->slot);
    EXPECT(kvstore_delete(c->kvs, c->slot, it->key, it->len, NULL) == 1);
    c->deleted++;
}

/* Empties one slot through the per-slot scan, deleting from its callback. */
static size_t purge_slot(kvstore *kvs, int s) {
    purge_ctx c = {kvs, s, 0};
    size_t cur = 0;
    do {
        cur = kvstore_scan_slot(kvs, s, cur, purge_cb, &c);
    } while (cur);
    return c.deleted;
}

START_TEST(test_scan_with_changes) {
    find_tags();
    frees = 0;
    kvstore *kvs = kvstore_create(&owning_type, KVSTORE_CLUSTER_SLOT_BITS,
                                  KVSTORE_ALLOCATE_TABLES_ON_DEMAND | KVSTORE_FREE_EMPTY_TABLES);
    /* Stable keys (present for the whole scan) in every 3rd slot; churn
     * keys in every 3rd slot + 1 (those slots can be emptied), and more
     * churn into stable slots to make their tables grow mid-scan. */
    const size_t stable = 6000;
    scan_ctx c = {km_calloc(stable, sizeof(unsigned)), stable};
    srand(777);
    for (size_t i = 0; i < stable; i++) {
        int s = (int)((size_t)rand() % (SLOT_COUNT / 3)) * 3;
        EXPECT(add_item(kvs, slot_item(i, s)) == 1);
    }
    size_t next_id = stable;
    for (int s = 1; s < SLOT_COUNT; s += 3)
        if (rand() % 2) EXPECT(add_item(kvs, slot_item(next_id++, s)) == 1);

    size_t cursor = 0, steps = 0, freed_under_cursor = 0, grown_under_cursor = 0, rehash_seen = 0;
    int last_slot = 0;
    do {
        cursor = kvstore_scan(kvs, cursor, scan_seen_cb, &c);
        steps++;
        EXPECT(steps < 10 * 1000 * 1000);
        if (!cursor) break;
        int s = kvstore_cursor_slot(kvs, cursor);
        EXPECT(s >= last_slot); /* slots are visited in order */
        last_slot = s;
        switch (rand() % 4) {
        case 0:
            /* Empty the slot the cursor names if it holds only churn. */
            if (s % 3 == 1 && kvstore_slot_size(kvs, s)) {
                purge_slot(kvs, s);
                EXPECT(kvstore_table(kvs, s) == NULL);
                freed_under_cursor++;
            }
            break;
        case 1:
            /* Grow the table under the cursor: it rehashes mid-scan. */
            for (int j = 0; j < 40; j++)
                EXPECT(add_item(kvs, slot_item(next_id++, s)) == 1);
            grown_under_cursor++;
            break;
        case 2: {
            /* Churn elsewhere: add to a random slot, empty another. */
            int t = rand() % SLOT_COUNT;
            for (int j = 0; j < 20; j++)
                EXPECT(add_item(kvs, slot_item(next_id++, t)) == 1);
            int u = (rand() % (SLOT_COUNT / 3)) * 3 + 1;
            purge_slot(kvs, u);
            break;
        }
        default:
            kvstore_rehash_micros(kvs, 50);
            break;
        }
        rehash_seen += kvstore_is_rehashing(kvs);
    } while (cursor);
    for (size_t i = 0; i < stable; i++)
        EXPECT(c.seen[i] >= 1);
    ck_assert_uint_gt(freed_under_cursor, 10);
    ck_assert_uint_gt(grown_under_cursor, 10);
    ck_assert_uint_gt(rehash_seen, 0);

    /* A cursor naming a slot with no table moves on to the next one. */
    int empty = 1;
    while (kvstore_slot_size(kvs, empty))
        empty += 3;
    int next = kvstore_next_slot(kvs, empty);
    ck_assert_int_gt(next, empty);
    memset(c.seen, 0, stable * sizeof(unsigned));
    size_t cur2 = kvstore_scan(kvs, ((size_t)12345 << KVSTORE_CLUSTER_SLOT_BITS) | (size_t)empty,
                               scan_seen_cb, &c);
    ck_assert(cur2 == 0 || kvstore_cursor_slot(kvs, cur2) >= next);
    km_free(c.seen);
    kvstore_release(kvs);
}
END_TEST

/* Active expiry walks the expires store slot by slot, deleting expired
 * entries from the scan callback. */
typedef struct expire_ctx {
    kvstore *kvs;
    long long now;
    size_t expired, sampled;
} expire_ctx;

static void expire_cb(void *priv, void *entry) {
    expire_ctx *c = priv;
    item *it = entry;
    c->sampled++;
    if (it->expire <= c->now) {
        int s = kvstore_slot(c->kvs, it->key, it->len);
        EXPECT(kvstore_delete(c->kvs, s, it->key, it->len, NULL) == 1);
        c->expired++;
    }
}

START_TEST(test_active_expiry_walk) {
    find_tags();
    frees = 0;
    kvstore *kvs = kvstore_create(&owning_type, KVSTORE_CLUSTER_SLOT_BITS,
                                  KVSTORE_ALLOCATE_TABLES_ON_DEMAND | KVSTORE_FREE_EMPTY_TABLES);
    size_t base = kvstore_mem_usage(kvs);
    /* Slots 0..999: s % 2 == 0 holds only expired keys, odd ones a mix. */
    size_t id = 0, live = 0, dead = 0;
    for (int s = 0; s < 1000; s++) {
        for (int j = 0; j < 1 + s % 7; j++) {
            item *it = slot_item(id++, s);
            it->expire = (s % 2 == 0 || j % 2 == 0) ? 100 : 10000;
            if (it->expire == 100)
                dead++;
            else
                live++;
            EXPECT(add_item(kvs, it) == 1);
        }
    }
    /* The cron's walk: a bounded number of entries per call, resuming
     * from the saved cursor. */
    expire_ctx c = {kvs, 1000, 0, 0};
    size_t cursor = 0;
    int calls = 0;
    do {
        size_t budget = c.sampled + 20;
        while (c.sampled < budget) {
            cursor = kvstore_scan(kvs, cursor, expire_cb, &c);
            if (!cursor) break;
        }
        calls++;
    } while (cursor);
    ck_assert_int_gt(calls, 10);
    ck_assert_uint_eq(c.expired, dead);
    ck_assert_uint_eq(frees, dead);
    ck_assert_uint_eq(kvstore_size(kvs), live);
    for (int s = 0; s < 1000; s++) {
        if (s % 2 == 0) EXPECT(kvstore_table(kvs, s) == NULL); /* only expired keys: freed */
        EXPECT(kvstore_slot_size(kvs, s) == (s % 2 ? (size_t)(1 + s % 7) / 2 : 0));
    }
    /* A second walk finds nothing to expire; then expire everything. */
    c.expired = 0;
    c.now = 100000;
    cursor = 0;
    do {
        cursor = kvstore_scan(kvs, cursor, expire_cb, &c);
    } while (cursor);
    ck_assert_uint_eq(c.expired, live);
    ck_assert_uint_eq(kvstore_size(kvs), 0);
    ck_assert_int_eq(kvstore_allocated_tables(kvs), 0);
    ck_assert_uint_eq(kvstore_mem_usage(kvs), base);
    kvstore_release(kvs);
}
END_TEST

/* -------------------------------------------------------------- iterators */

START_TEST(test_iterators_and_empty) {
    const int flags = KVSTORE_ALLOCATE_TABLES_ON_DEMAND | KVSTORE_FREE_EMPTY_TABLES;
    for (int bits = 0; bits <= KVSTORE_CLUSTER_SLOT_BITS; bits += KVSTORE_CLUSTER_SLOT_BITS) {
        frees = 0;
        kvstore *kvs = kvstore_create(&owning_type, bits, flags);
        size_t base = kvstore_mem_usage(kvs);
        const size_t n = 20000;
        unsigned char *seen = km_calloc(n, 1);
        for (size_t i = 0; i < n; i++)
            EXPECT(add_item(kvs, plain_item(i)) == 1);

        for (int safe = 0; safe <= 1; safe++) {
            memset(seen, 0, n);
            kvstore_iter it;
            kvstore_iter_init(&it, kvs, safe);
            void *e;
            size_t count = 0;
            int last = -1;
            while (kvstore_iter_next(&it, &e)) {
                item *x = e;
                EXPECT(x->id < n);
                seen[x->id]++;
                count++;
                int s = kvstore_iter_slot(&it);
                EXPECT(s == kvstore_slot(kvs, x->key, x->len));
                EXPECT(s >= last);
                last = s;
            }
            kvstore_iter_reset(&it);
            ck_assert_uint_eq(count, n);
            for (size_t i = 0; i < n; i++)
                EXPECT(seen[i] == 1);
        }

        /* Stopping early and resetting releases the table. */
        kvstore_iter it;
        void *e;
        kvstore_iter_init(&it, kvs, 1);
        ck_assert_int_eq(kvstore_iter_next(&it, &e), 1);
        kvstore_iter_reset(&it);

        /* A safe iterator may delete what it returns: delete every odd id. */
        kvstore_iter_init(&it, kvs, 1);
        size_t deleted = 0;
        while (kvstore_iter_next(&it, &e)) {
            item *x = e;
            if (x->id % 2) {
                EXPECT(kvstore_delete(kvs, kvstore_iter_slot(&it), x->key, x->len, NULL) == 1);
                deleted++;
            }
        }
        kvstore_iter_reset(&it);
        ck_assert_uint_eq(deleted, n / 2);
        ck_assert_uint_eq(kvstore_size(kvs), n - n / 2);

        /* Deleting everything through a safe iterator frees every table
         * (slot_bits 14) as the iterator leaves it. */
        if (bits) {
            kvstore_iter_init(&it, kvs, 1);
            while (kvstore_iter_next(&it, &e)) {
                item *x = e;
                EXPECT(kvstore_delete(kvs, kvstore_iter_slot(&it), x->key, x->len, NULL) == 1);
            }
            kvstore_iter_reset(&it);
            ck_assert_uint_eq(kvstore_size(kvs), 0);
            ck_assert_int_eq(kvstore_allocated_tables(kvs), 0);
            ck_assert_uint_eq(kvstore_mem_usage(kvs), base);
            ck_assert_uint_eq(frees, n);
            for (size_t i = 0; i < n; i++)
                EXPECT(add_item(kvs, plain_item(i)) == 1);
            frees = 0;
        }

        /* Flush: the callback sees every entry, entry_free runs on each. */
        size_t before = kvstore_size(kvs);
        size_t f0 = frees;
        memset(seen, 0, n);
        kvstore_empty(kvs, NULL, NULL);
        ck_assert_uint_eq(frees - f0, before);
        ck_assert_uint_eq(kvstore_size(kvs), 0);
        ck_assert_int_eq(kvstore_non_empty_slots(kvs), 0);
        ck_assert_int_eq(kvstore_is_rehashing(kvs), 0);
        ck_assert_int_eq(kvstore_fair_slot(kvs), -1);
        if (bits) {
            ck_assert_int_eq(kvstore_allocated_tables(kvs), 0);
            ck_assert_uint_eq(kvstore_mem_usage(kvs), base);
        }
        kvstore_iter_init(&it, kvs, 0);
        ck_assert_int_eq(kvstore_iter_next(&it, &e), 0);
        kvstore_iter_reset(&it);

        /* Refill after a flush works; release frees the rest. */
        for (size_t i = 0; i < 1000; i++)
            EXPECT(add_item(kvs, plain_item(i)) == 1);
        ck_assert_uint_eq(kvstore_size(kvs), 1000);
        km_free(seen);
        kvstore_release(kvs);
    }
}
END_TEST

static void count_entry_cb(void *priv, void *entry) {
    (void)entry;
    (*(size_t *)priv)++;
}

START_TEST(test_empty_callback) {
    kvstore *kvs =
        kvstore_create(&owning_type, KVSTORE_CLUSTER_SLOT_BITS, KVSTORE_ALLOCATE_TABLES_ON_DEMAND);
    for (size_t i = 0; i < 5000; i++)
        EXPECT(add_item(kvs, plain_item(i)) == 1);
    int allocated = kvstore_allocated_tables(kvs);
    size_t called = 0;
    frees = 0;
    kvstore_empty(kvs, count_entry_cb, &called);
    ck_assert_uint_eq(called, 5000);
    ck_assert_uint_eq(frees, 5000);
    /* Without FREE_EMPTY_TABLES the tables stay, emptied. */
    ck_assert_int_eq(kvstore_allocated_tables(kvs), allocated);
    ck_assert_uint_eq(kvstore_size(kvs), 0);
    ck_assert_int_eq(kvstore_scan(kvs, 0, NULL, NULL), 0);
    kvstore_release(kvs);
}
END_TEST

/* ------------------------------------------------------------------- cron */

START_TEST(test_cron_rehash_and_shrink) {
    find_tags();
    kvstore *kvs = kvstore_create(&owning_type, KVSTORE_CLUSTER_SLOT_BITS,
                                  KVSTORE_ALLOCATE_TABLES_ON_DEMAND | KVSTORE_FREE_EMPTY_TABLES);
    size_t base = kvstore_mem_usage(kvs);
    /* Grow 300 tables in lockstep so many are mid-rehash at once; the queue
     * agrees with the tables after every round. */
    size_t id = 0, max_rehashing = 0;
    for (int round = 0; round < 200; round++) {
        for (int s = 0; s < 300; s++)
            EXPECT(add_item(kvs, slot_item(id++, s * 50)) == 1);
        size_t rehashing = kvstore_rehashing_count(kvs), naive = 0;
        for (int s = 0; s < 300; s++)
            naive += hashtable_is_rehashing(kvstore_table(kvs, s * 50));
        EXPECT(rehashing == naive);
        if (rehashing > max_rehashing) max_rehashing = rehashing;
    }
    ck_assert_uint_gt(max_rehashing, 100);
    int loops = 0;
    while (kvstore_rehash_micros(kvs, 1000))
        EXPECT(++loops < 100000);
    ck_assert_uint_eq(kvstore_rehashing_count(kvs), 0);
    for (int s = 0; s < SLOT_COUNT; s++) {
        hashtable *ht = kvstore_table(kvs, s);
        EXPECT(!ht || !hashtable_is_rehashing(ht));
    }

    /* Shrink: bounded steps cover every non-empty slot in a few calls. */
    size_t mem_full = kvstore_mem_usage(kvs) - base;
    for (int s = 0; s < 300; s++) {
        for (int j = 0; j < 199; j++) {
            char k[40];
            int len =
                snprintf(k, sizeof(k), "{%.11s}%zu", tags[s * 50], (size_t)j * 300 + (size_t)s);
            EXPECT(delete_key(kvs, k, (size_t)len) == 1);
        }
        EXPECT(kvstore_slot_size(kvs, s * 50) == 1);
    }
    for (int i = 0; i < 100; i++) {
        kvstore_shrink_if_needed(kvs, 16, SIZE_MAX);
        while (kvstore_rehash_micros(kvs, 1000)) {
        }
    }
    ck_assert_uint_lt(kvstore_mem_usage(kvs) - base, mem_full / 4);
    ck_assert_uint_eq(kvstore_size(kvs), 300);
    kvstore_shrink_if_needed(kvs, 100000, SIZE_MAX); /* visits each slot once, terminates */
    kvstore_release(kvs);

    /* Standalone: the cron calls work on the one table too. */
    kvs = kvstore_create(&owning_type, 0, KVSTORE_ALLOCATE_TABLES_ON_DEMAND);
    for (size_t i = 0; i < 10000; i++)
        EXPECT(add_item(kvs, plain_item(i)) == 1);
    while (kvstore_rehash_micros(kvs, 1000)) {
    }
    ck_assert_int_eq(kvstore_is_rehashing(kvs), 0);
    kvstore_shrink_if_needed(kvs, 1, SIZE_MAX);
    kvstore_release(kvs);
}
END_TEST

static Suite *kvstore_suite(void) {
    Suite *s = suite_create("kvstore");
    TCase *tc = tcase_create("kvstore");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_standalone_basic);
    tcase_add_test(tc, test_slots_routing_and_counts);
    tcase_add_test(tc, test_fair_sampling);
    tcase_add_test(tc, test_scan_with_changes);
    tcase_add_test(tc, test_active_expiry_walk);
    tcase_add_test(tc, test_iterators_and_empty);
    tcase_add_test(tc, test_empty_callback);
    tcase_add_test(tc, test_cron_rehash_and_shrink);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(kvstore_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
