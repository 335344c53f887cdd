/* keyspace_fixture.h -- the keyspace standing alone, for the unit tests of
 * core/keyspace (check_db, check_db_block, check_evict): options and
 * counters that belong to the test, a fixed "now", and the layout under
 * test (one table per database, or the cluster layout's 16384 slots). */
#ifndef KEEL_TEST_KEYSPACE_FIXTURE_H
#define KEEL_TEST_KEYSPACE_FIXTURE_H

#include "event/event.h"
#include "keyspace/db.h"

#include <check.h>

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) ck_assert_msg(0, "expected: %s", #cond);                                      \
    } while (0)

#define T0 1700000000000LL /* a fixed "now" in unix ms */

/* Fills *o with the defaults the tests start from, zeroes *m, sets the
 * clock to T0 and sets the keyspace up on them (borrowed until
 * db_teardown). */
static inline void keyspace_fixture_setup(db_options *o, db_metrics *m, int databases,
                                          int slot_bits) {
    *o = (db_options){.databases = databases,
                      .slot_bits = slot_bits,
                      .maxmemory_policy = MAXMEMORY_NOEVICTION,
                      .maxmemory_samples = 5,
                      .lfu_log_factor = 10,
                      .lfu_decay_time = 1,
                      .active_expire_effort = 1};
    *m = (db_metrics){0};
    event_set_cached_ms(T0);
    db_setup(o, m);
}

/* The layout the test's setup passes to keyspace_fixture_setup, chosen per
 * test case by the two fixtures KEYSPACE_LAYOUT_FIXTURES(setup) defines:
 * setup_standalone (one table per database) and setup_cluster_layout
 * (16384 per-slot tables), each running the file's own setup. */
static int keyspace_slot_bits __attribute__((unused)); /* unread by files without layouts */

#define KEYSPACE_LAYOUT_FIXTURES(setup)                                                            \
    static void setup_standalone(void) {                                                           \
        keyspace_slot_bits = 0;                                                                    \
        setup();                                                                                   \
    }                                                                                              \
    static void setup_cluster_layout(void) {                                                       \
        keyspace_slot_bits = KVSTORE_CLUSTER_SLOT_BITS;                                            \
        setup();                                                                                   \
    }

#endif
