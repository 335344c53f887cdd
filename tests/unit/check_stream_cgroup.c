/* check_stream_cgroup.c -- unit tests for core/types/stream_cgroup.c:
 * groups and consumers kept in name order, deliveries, acknowledgements,
 * transfers and consumer deletion keeping the group's and the consumers'
 * pending lists consistent (20k random operations checked against a
 * model of who owns which ID), Valkey's entries-read and lag accounting
 * on fresh, trimmed and fragmented streams, COPY duplicating the groups,
 * and the sizes MEMORY USAGE and lazy free read. */
#include "types/stream_cgroup.h"

#include "keyspace_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static db_options opts;
static db_metrics stats;

static void setup(void) {
    keyspace_fixture_setup(&opts, &stats, 1, 0);
    opts.types.stream_node_max_entries = 100;
    opts.types.stream_node_max_bytes = 4096;
    stream_type_setup();
    scg_setup();
}

static void teardown(void) {
    db_teardown();
}

static stream_id sid(uint64_t ms, uint64_t seq) {
    return (stream_id){ms, seq};
}

/* Appends entries ms-0 for ms in [from, to]. */
static void append_range(kobj *s, uint64_t from, uint64_t to) {
    stream_str fv[2] = {{"f", 1}, {"v", 1}};
    for (uint64_t ms = from; ms <= to; ms++) {
        stream_add a = {.elems = fv, .npairs = 1, .id = sid(ms, 0), .id_given = 1, .seq_given = 1};
        stream_id added;
        int too_large = 0;
        ck_assert_int_eq(stream_append(s, &a, &added, &too_large), K_OK);
    }
}

static scg_group *create(kobj *s, const char *name, stream_id last, int64_t read) {
    return scg_create(s, name, strlen(name), last, read);
}

static scg_consumer *consumer(scg_group *g, const char *name) {
    scg_consumer *c = scg_consumer_lookup(g, name, strlen(name));
    return c ? c : scg_consumer_create(g, name, strlen(name), T0);
}

/* Every pending entry is in its owner's list and nowhere else. */
static void check_consistent(const scg_group *g) {
    size_t sum = 0;
    for (size_t i = 0; i < scg_consumer_count(g); i++) {
        const scg_consumer *c = scg_consumer_at(g, i);
        sum += idmap_count(&c->pel);
        idmap_iter it;
        for (idmap_seek_first(&it, &c->pel); idmap_iter_valid(&it); idmap_iter_next(&it)) {
            const scg_nack *n = idmap_iter_val(&it);
            ck_assert_ptr_eq(n->consumer, c);
            ck_assert_ptr_eq(idmap_find(&g->pel, idmap_iter_key(&it)), n);
        }
        if (i) ck_assert_int_lt(strcmp(scg_consumer_at(g, i - 1)->name, c->name), 0);
    }
    ck_assert_uint_eq(sum, idmap_count(&g->pel));
}

START_TEST(test_groups_by_name) {
    kobj *s = stream_create();
    ck_assert_uint_eq(scg_group_count(s), 0);
    ck_assert_ptr_null(scg_lookup(s, "a", 1));
    const char *names[] = {"m", "b", "zz", "a", "z", "ab"};
    for (size_t i = 0; i < 6; i++)
        ck_assert_ptr_nonnull(create(s, names[i], STREAM_ID_MIN, -1));
    ck_assert_ptr_null(create(s, "b", STREAM_ID_MIN, -1));
    const char *sorted[] = {"a", "ab", "b", "m", "z", "zz"};
    ck_assert_uint_eq(scg_group_count(s), 6);
    for (size_t i = 0; i < 6; i++)
        ck_assert_str_eq(scg_group_at(s, i)->name, sorted[i]);
    /* Names are binary: a prefix sorts first, bytes compare unsigned. */
    ck_assert_ptr_nonnull(scg_create(s, "a\0b", 3, STREAM_ID_MIN, -1));
    ck_assert_ptr_nonnull(scg_create(s, "\xff", 1, STREAM_ID_MIN, -1));
    ck_assert_uint_eq(scg_group_at(s, 1)->len, 3);
    ck_assert_uint_eq(scg_group_at(s, 7)->len, 1);
    ck_assert_int_eq(scg_destroy(s, "m", 1), 1);
    ck_assert_int_eq(scg_destroy(s, "m", 1), 0);
    ck_assert_ptr_null(scg_lookup(s, "m", 1));
    ck_assert_uint_eq(scg_group_count(s), 7);
    obj_decref(s);
}
END_TEST

START_TEST(test_deliver_ack_transfer) {
    kobj *s = stream_create();
    append_range(s, 1, 10);
    scg_group *g = create(s, "g", STREAM_ID_MIN, 0);
    scg_consumer *a = consumer(g, "alice"), *b = consumer(g, "bob");
    ck_assert_ptr_null(scg_consumer_create(g, "alice", 5, T0));
    ck_assert_int_eq(a->active_time, SCG_NEVER_ACTIVE);
    for (uint64_t ms = 1; ms <= 4; ms++)
        scg_deliver(g, a, sid(ms, 0), T0 + (int64_t)ms);
    scg_nack *n = scg_pel_find(g, sid(2, 0));
    ck_assert_ptr_nonnull(n);
    ck_assert_int_eq(n->delivery_time, T0 + 2);
    ck_assert_uint_eq(n->delivery_count, 1);
    n->delivery_count = 5;
    /* Delivered again (after SETID) to bob: his now, counted from 1. */
    ck_assert_ptr_eq(scg_deliver(g, b, sid(2, 0), T0 + 100), n);
    ck_assert_ptr_eq(n->consumer, b);
    ck_assert_uint_eq(n->delivery_count, 1);
    ck_assert_int_eq(n->delivery_time, T0 + 100);
    check_consistent(g);
    scg_pel_transfer(g, scg_pel_find(g, sid(3, 0)), sid(3, 0), b);
    ck_assert_uint_eq(idmap_count(&a->pel), 2);
    ck_assert_uint_eq(idmap_count(&b->pel), 2);
    check_consistent(g);
    ck_assert_int_eq(scg_pel_remove(g, sid(3, 0)), 1);
    ck_assert_int_eq(scg_pel_remove(g, sid(3, 0)), 0);
    ck_assert_int_eq(scg_pel_remove(g, sid(9, 0)), 0);
    check_consistent(g);
    /* Deleting a consumer drops its pending entries from the group. */
    ck_assert_uint_eq(scg_consumer_delete(g, b), 1);
    ck_assert_ptr_null(scg_pel_find(g, sid(2, 0)));
    ck_assert_uint_eq(idmap_count(&g->pel), 2);
    ck_assert_uint_eq(scg_consumer_count(g), 1);
    check_consistent(g);
    obj_decref(s);
}
END_TEST

START_TEST(test_random_bookkeeping) {
    kobj *s = stream_create();
    append_range(s, 1, 500);
    scg_group *g = create(s, "g", STREAM_ID_MIN, 0);
    /* owner[ms]: the consumer index owning ID ms-0, or -1. */
    int owner[501];
    for (int i = 0; i <= 500; i++)
        owner[i] = -1;
    char name[16];
    srand(7);
    for (int op = 0; op < 20000; op++) {
        uint64_t ms = 1 + (uint64_t)(rand() % 500);
        int ci = rand() % 8;
        snprintf(name, sizeof(name), "c%d", ci);
        int r = rand() % 100;
        if (r < 45) {
            scg_deliver(g, consumer(g, name), sid(ms, 0), T0);
            owner[ms] = ci;
        } else if (r < 70) {
            ck_assert_int_eq(scg_pel_remove(g, sid(ms, 0)), owner[ms] >= 0);
            owner[ms] = -1;
        } else if (r < 95) {
            scg_nack *n = scg_pel_find(g, sid(ms, 0));
            ck_assert_int_eq(n != NULL, owner[ms] >= 0);
            if (!n) continue;
            scg_pel_transfer(g, n, sid(ms, 0), consumer(g, name));
            owner[ms] = ci;
        } else {
            scg_consumer *c = scg_consumer_lookup(g, name, strlen(name));
            if (!c) continue;
            size_t owned = 0;
            for (int i = 1; i <= 500; i++) {
                if (owner[i] != ci) continue;
                owned++;
                owner[i] = -1;
            }
            ck_assert_uint_eq(scg_consumer_delete(g, c), owned);
        }
        if (op % 1000 == 0) check_consistent(g);
    }
    check_consistent(g);
    for (int i = 1; i <= 500; i++) {
        scg_nack *n = scg_pel_find(g, sid((uint64_t)i, 0));
        ck_assert_int_eq(n != NULL, owner[i] >= 0);
        if (!n) continue;
        snprintf(name, sizeof(name), "c%d", owner[i]);
        ck_assert_str_eq(n->consumer->name, name);
    }
    obj_decref(s);
}
END_TEST

/* Valkey's "read counter and lag" cases. */
START_TEST(test_lag_and_entries_read) {
    kobj *s = stream_create();
    scg_group *g = create(s, "g", STREAM_ID_MIN, SCG_INVALID_ENTRIES_READ);
    int64_t lag;
    ck_assert_int_eq(scg_lag(s, g, &lag), 1); /* nothing ever added */
    ck_assert_int_eq(lag, 0);
    append_range(s, 1, 5);
    ck_assert_int_eq(scg_lag(s, g, &lag), 1);
    ck_assert_int_eq(lag, 5);
    scg_advance(s, g, sid(1, 0));
    ck_assert_int_eq(g->entries_read, 1);
    ck_assert_int_eq(scg_lag(s, g, &lag), 1);
    ck_assert_int_eq(lag, 4);
    for (uint64_t ms = 2; ms <= 5; ms++)
        scg_advance(s, g, sid(ms, 0));
    ck_assert_int_eq(g->entries_read, 5);
    append_range(s, 6, 6);
    ck_assert_int_eq(scg_lag(s, g, &lag), 1);
    ck_assert_int_eq(lag, 1);
    /* A deletion ahead of a group makes its lag unknown until it passes. */
    scg_group *h = create(s, "h", STREAM_ID_MIN, SCG_INVALID_ENTRIES_READ);
    ck_assert_int_eq(stream_delete(s, sid(3, 0)), 1);
    ck_assert_int_eq(scg_lag(s, h, &lag), 0);
    ck_assert_int_eq(scg_range_has_tombstones(s, sid(1, 0), STREAM_ID_MAX), 1);
    ck_assert_int_eq(scg_range_has_tombstones(s, sid(4, 0), STREAM_ID_MAX), 0);
    scg_advance(s, h, sid(1, 0));
    ck_assert_int_eq(h->entries_read, SCG_INVALID_ENTRIES_READ);
    scg_advance(s, h, sid(6, 0)); /* the last ID: exact again */
    ck_assert_int_eq(h->entries_read, 6);
    /* The first entry, no tombstone among the live ones. */
    stream_trim_args t = {.strategy = STREAM_TRIM_MINID, .minid = sid(4, 0)};
    stream_trim(s, &t);
    ck_assert_int_eq(scg_estimate_entries_read(s, sid(4, 0)), 4);
    ck_assert_int_eq(scg_estimate_entries_read(s, sid(2, 0)), 3);
    ck_assert_int_eq(scg_estimate_entries_read(s, sid(5, 0)), SCG_INVALID_ENTRIES_READ);
    ck_assert_int_eq(scg_estimate_entries_read(s, sid(9, 0)), SCG_INVALID_ENTRIES_READ);
    obj_decref(s);
}
END_TEST

START_TEST(test_copy_mem_effort) {
    kobj *s = stream_create();
    append_range(s, 1, 50);
    size_t bare = obj_mem_usage_sampled(s, OBJ_MEM_ALL_SAMPLES);
    ck_assert_uint_eq(obj_free_effort(s) > 0, 1);
    size_t effort0 = obj_free_effort(s);
    scg_group *g = create(s, "g", sid(7, 0), 7);
    scg_consumer *a = consumer(g, "alice");
    a->active_time = T0 + 5;
    for (uint64_t ms = 1; ms <= 40; ms++)
        scg_deliver(g, consumer(g, ms % 2 ? "x" : "y"), sid(ms, 0), T0);
    scg_pel_find(g, sid(3, 0))->delivery_count = 9;
    ck_assert_uint_gt(obj_mem_usage_sampled(s, OBJ_MEM_ALL_SAMPLES), bare + 40 * sizeof(scg_nack));
    ck_assert_uint_eq(obj_free_effort(s), effort0 + 1 + 3 + 40);

    kobj *c = obj_copy(s);
    ck_assert_ptr_nonnull(c);
    scg_group *cg = scg_lookup(c, "g", 1);
    ck_assert_ptr_nonnull(cg);
    ck_assert_ptr_ne(cg, g);
    ck_assert_int_eq(stream_id_cmp(cg->last_id, sid(7, 0)), 0);
    ck_assert_int_eq(cg->entries_read, 7);
    ck_assert_uint_eq(scg_consumer_count(cg), 3);
    ck_assert_int_eq(scg_consumer_lookup(cg, "alice", 5)->active_time, T0 + 5);
    ck_assert_uint_eq(idmap_count(&cg->pel), 40);
    ck_assert_uint_eq(scg_pel_find(cg, sid(3, 0))->delivery_count, 9);
    ck_assert_str_eq(scg_pel_find(cg, sid(3, 0))->consumer->name, "x");
    check_consistent(cg);
    /* The copy is independent. */
    ck_assert_int_eq(scg_pel_remove(cg, sid(3, 0)), 1);
    ck_assert_ptr_nonnull(scg_pel_find(g, sid(3, 0)));
    obj_decref(c);
    obj_decref(s);
}
END_TEST

static Suite *stream_cgroup_suite(void) {
    Suite *s = suite_create("stream_cgroup");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_groups_by_name);
    tcase_add_test(tc, test_deliver_ack_transfer);
    tcase_add_test(tc, test_random_bookkeeping);
    tcase_add_test(tc, test_lag_and_entries_read);
    tcase_add_test(tc, test_copy_mem_effort);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(stream_cgroup_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
