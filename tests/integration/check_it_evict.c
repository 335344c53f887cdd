/* check_it_evict.c -- maxmemory against a real keel-server, after Valkey's
 * maxmemory tests: with each eviction policy (allkeys-lru/lfu/random,
 * volatile-lru/lfu/random/ttl) keys get evicted, INFO evicted_keys grows and
 * used_memory stays near the limit; volatile-* policies never evict keys
 * without a TTL and answer OOM when only such keys are left; noeviction
 * answers "-OOM command not allowed when used memory > 'maxmemory'." to
 * writes while reads and deletes keep working. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define OOM_ERR "OOM command not allowed when used memory > 'maxmemory'."
#define VALUE_LEN 1000
/* The limit is set this far above the memory in use when a test starts, and
 * used_memory may exceed the limit by at most SLACK (one command's worth
 * plus allocator noise). */
#define HEADROOM (1024 * 1024)
#define SLACK (64 * 1024)

static const char *const all_policies[] = {"allkeys-random", "allkeys-lru",  "allkeys-lfu",
                                           "volatile-lru",   "volatile-lfu", "volatile-random",
                                           "volatile-ttl"};
static const char *const persist_policies[] = {"allkeys-random", "allkeys-lru", "volatile-lru",
                                               "volatile-random", "volatile-ttl"};
static const char *const volatile_policies[] = {"volatile-lru", "volatile-lfu", "volatile-random",
                                                "volatile-ttl"};

static char value[VALUE_LEN];

static long long used_memory(void) {
    return it_info_int(C, "memory", "used_memory");
}

static long long evicted_keys(void) {
    return it_info_int(C, "stats", "evicted_keys");
}

/* Sets maxmemory to the usage now plus HEADROOM, and the policy. */
static long long set_limit(const char *policy) {
    memset(value, 'x', sizeof(value));
    /* Per-command latency histograms grow when a call is slower than any
     * before (often under TSan): memory the fill below cannot foresee. */
    expect_ok(C, "CONFIG SET latency-tracking no");
    long long limit = used_memory() + HEADROOM;
    expect_ok(C, "CONFIG SET maxmemory %lld", limit);
    expect_ok(C, "CONFIG SET maxmemory-policy %s", policy);
    return limit;
}

/* SET (or SETEX when volatile) one key; returns 1 on OK, 0 on the OOM error;
 * anything else fails the test. */
static int set_key(const char *prefix, long long i, int volatile_key) {
    redisReply *r = volatile_key
                        ? it_cmd(C, "SETEX %s:%lld 10000 %b", prefix, i, value, sizeof(value))
                        : it_cmd(C, "SET %s:%lld %b", prefix, i, value, sizeof(value));
    char got[200];
    int ok = r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK");
    int oom = r->type == REDIS_REPLY_ERROR && !strcmp(r->str, OOM_ERR);
    ck_assert_msg(ok || oom, "SET %s:%lld: unexpected reply %s", prefix, i,
                  it_render(r, got, sizeof(got)));
    it_free(r);
    return ok;
}

/* Adds keys until used_memory is within 4 KB of the limit; returns how many.
 * volatile_every: 1 = all keys get a TTL, 2 = odd keys, 0 = none. */
static long long fill_to_limit(long long limit, int volatile_every) {
    long long start = used_memory(), used = start, n = 0;
    for (;;) {
        int vol = volatile_every == 1 || (volatile_every == 2 && n % 2 == 1);
        ck_assert_msg(set_key("key", n, vol), "OOM while filling below the limit (key %lld)", n);
        n++;
        /* Far from the limit, look every 10 keys (11 KB); near it, every key. */
        if (limit - used > 32 * 1024 && n % 10 != 0) continue;
        used = used_memory();
        if (used + 4096 > limit) break;
        if (n == 250)
            ck_assert_msg(
                used > start + 100 * 1024,
                "used_memory does not grow: %lld bytes of values written, used_memory %lld -> %lld",
                n * VALUE_LEN, start, used);
        ck_assert_msg(n * VALUE_LEN < 8 * HEADROOM,
                      "used_memory never reached the limit (%lld, limit %lld)", used, limit);
    }
    ck_assert_int_gt(n, 10);
    return n;
}

static void assert_near_limit(long long limit) {
    long long used = used_memory();
    ck_assert_msg(used < limit + SLACK, "used_memory %lld exceeds maxmemory %lld by %lld bytes",
                  used, limit, used - limit);
}

START_TEST(test_limit_honoured) {
    const char *policy = all_policies[_i];
    long long limit = set_limit(policy);
    long long changes = it_info_int(C, "persistence", "rdb_changes_since_last_save");
    long long n = fill_to_limit(limit, 1);
    ck_assert_int_eq(evicted_keys(), 0);
    for (long long j = 0; j < n; j++)
        ck_assert_msg(set_key("more", j, 1), "%s: OOM although volatile keys can be evicted",
                      policy);
    assert_near_limit(limit);
    ck_assert_msg(evicted_keys() > 0, "%s: nothing evicted", policy);
    /* Keys and evictions read in one transaction: the cron may evict
     * more at any moment between two separate commands. */
    expect_ok(C, "MULTI");
    expect_status(C, "QUEUED", "DBSIZE");
    expect_status(C, "QUEUED", "INFO stats");
    redisReply *r = it_cmd(C, "EXEC");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 2);
    const char *ev = strstr(r->element[1]->str, "evicted_keys:");
    ck_assert_ptr_nonnull(ev);
    long long evicted = atoll(ev + strlen("evicted_keys:"));
    ck_assert_int_lt(r->element[0]->integer, 2 * n);
    ck_assert_int_eq(r->element[0]->integer + evicted, 2 * n);
    /* Each SETEX is one change; evictions add none, as in Valkey 8.0.1. */
    changes = it_info_int(C, "persistence", "rdb_changes_since_last_save") - changes;
    ck_assert_int_eq(changes, 2 * n);
}
END_TEST

START_TEST(test_only_allkeys_evict_persistent_keys) {
    const char *policy = persist_policies[_i];
    long long limit = set_limit(policy);
    long long n = fill_to_limit(limit, 0);
    int oom = 0;
    for (long long j = 0; j < n; j++)
        oom |= !set_key("more", j, 0);
    if (!strncmp(policy, "allkeys-", 8)) {
        ck_assert_msg(!oom, "%s: OOM error although keys can be evicted", policy);
        assert_near_limit(limit);
        ck_assert_int_gt(evicted_keys(), 0);
    } else {
        ck_assert_msg(oom, "%s: no OOM error with only non-volatile keys", policy);
        ck_assert_int_eq(evicted_keys(), 0);
    }
}
END_TEST

START_TEST(test_volatile_policy_keeps_persistent_keys) {
    const char *policy = volatile_policies[_i];
    long long limit = set_limit(policy);
    long long n = fill_to_limit(limit, 2);
    for (long long j = 0; j < n; j++)
        set_key("foo", j, 1);
    assert_near_limit(limit);
    ck_assert_int_gt(evicted_keys(), 0);
    for (long long j = 0; j < n; j += 2)
        expect_int(C, 1, "EXISTS key:%lld", j);
}
END_TEST

/* Sends a command given as space-separated words. */
static redisReply *cmd_words(const char *cmd) {
    char buf[64];
    const char *argv[8];
    int argc = 0;
    snprintf(buf, sizeof(buf), "%s", cmd);
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && argc < 8;
         w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    return it_cmd_argv(C, argc, argv, NULL);
}

/* Under noeviction, that `cmd` is refused with OOM once the server is full.
 * Memory can fall back under the limit between two commands (the cron
 * finishing a table's rehash frees the old array), so a write that went
 * through is undone (`undo`, commands run in order, NULL-terminated), the
 * server filled up again and the command tried once more. */
static void expect_oom_when_full(long long *n, const char *cmd, const char *const *undo) {
    for (int tries = 0; tries < 5; tries++) {
        while (set_key("key", *n, 0))
            (*n)++;
        redisReply *r = cmd_words(cmd);
        int oom = r->type == REDIS_REPLY_ERROR && !strcmp(r->str, OOM_ERR);
        it_free(r);
        if (oom) return;
        for (const char *const *u = undo; *u; u++)
            it_free(strcmp(*u, "SET key:0") ? cmd_words(*u)
                                            : it_cmd(C, "SET key:0 %b", value, sizeof(value)));
    }
    ck_assert_msg(0, "%s: never refused with OOM on a full server", cmd);
}

START_TEST(test_noeviction) {
    long long limit = set_limit("noeviction");
    long long n = fill_to_limit(limit, 0);
    while (set_key("key", n, 0)) {
        n++;
        ck_assert_msg(n * VALUE_LEN < 8 * HEADROOM,
                      "noeviction: writes never failed (used_memory %lld, limit %lld)",
                      used_memory(), limit);
    }
    ck_assert_int_gt(n, 10);
    expect_oom_when_full(&n, "SET another x", (const char *const[]){"DEL another", NULL});
    expect_oom_when_full(&n, "INCR counter", (const char *const[]){"DEL counter", NULL});
    expect_oom_when_full(&n, "APPEND key:0 more",
                         (const char *const[]){"DEL key:0", "SET key:0", NULL});
    /* Reads, deletes and admin commands still work. */
    expect_bulk_len(C, value, sizeof(value), "GET key:0");
    expect_int(C, n, "DBSIZE");
    expect_int(C, 1, "DEL key:1");
    expect_status(C, "PONG", "PING");
    ck_assert_int_eq(evicted_keys(), 0);
    ck_assert_int_ge(used_memory(), limit - HEADROOM);
    ck_assert_str_eq(it_info_str(C, "memory", "maxmemory_policy"), "noeviction");
    ck_assert_int_eq(it_info_int(C, "memory", "maxmemory"), limit);
    /* Lifting the limit makes writes work again. */
    expect_ok(C, "CONFIG SET maxmemory 0");
    expect_ok(C, "SET another x");
}
END_TEST

START_TEST(test_noeviction_errorstats) {
    long long limit = set_limit("noeviction");
    expect_ok(C, "CONFIG RESETSTAT");
    long long n = fill_to_limit(limit, 0);
    while (set_key("key", n, 0)) {
        n++;
        ck_assert_msg(n * VALUE_LEN < 8 * HEADROOM, "noeviction: writes never failed");
    }
    ck_assert_str_eq(it_info_str(C, "errorstats", "errorstat_OOM"), "count=1");
    char *set = it_info_str(C, "commandstats", "cmdstat_set");
    ck_assert_int_eq(it_kv_get(set, "rejected_calls"), 1);
}
END_TEST

START_TEST(test_maxmemory_from_command_line) {
    S = it_start("--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru", NULL);
    C = it_connect(S);
    ck_assert_int_eq(it_info_int(C, "memory", "maxmemory"), 10 * 1024 * 1024);
    ck_assert_str_eq(it_info_str(C, "memory", "maxmemory_human"), "10.00M");
    ck_assert_str_eq(it_info_str(C, "memory", "maxmemory_policy"), "allkeys-lru");
    size_t len = 1024 * 1024;
    char *big = it_random_bytes(len, 5);
    for (int i = 0; i < 30; i++)
        expect_ok(C, "SET big:%d %b", i, big, len);
    expect_status(C, "PONG", "PING");
    long long used = used_memory();
    ck_assert_msg(used < 12 * 1024 * 1024, "used_memory %lld with maxmemory 10mb", used);
    ck_assert_int_gt(evicted_keys(), 0);
    redisReply *r = it_cmd(C, "DBSIZE");
    ck_assert_int_lt(r->integer, 30);
    ck_assert_int_gt(r->integer, 0);
}
END_TEST

START_TEST(test_eviction_across_databases) {
    long long limit = set_limit("allkeys-random");
    expect_ok(C, "SELECT 5");
    long long n = fill_to_limit(limit, 0);
    expect_ok(C, "SELECT 0");
    for (long long j = 0; j < n; j++)
        ck_assert(set_key("db0", j, 0));
    assert_near_limit(limit);
    expect_ok(C, "SELECT 5");
    redisReply *r = it_cmd(C, "DBSIZE");
    ck_assert_msg(r->integer < n, "no key evicted from db5 (%lld of %lld left)", r->integer, n);
}
END_TEST

static Suite *evict_suite(void) {
    Suite *s = suite_create("evict");
    TCase *tc = it_tcase(s, "policies");
    tcase_add_loop_test(tc, test_limit_honoured, 0,
                        (int)(sizeof(all_policies) / sizeof(*all_policies)));
    tcase_add_loop_test(tc, test_only_allkeys_evict_persistent_keys, 0,
                        (int)(sizeof(persist_policies) / sizeof(*persist_policies)));
    tcase_add_loop_test(tc, test_volatile_policy_keeps_persistent_keys, 0,
                        (int)(sizeof(volatile_policies) / sizeof(*volatile_policies)));
    tcase_add_test(tc, test_noeviction);
    tcase_add_test(tc, test_noeviction_errorstats);
    tcase_add_test(tc, test_eviction_across_databases);
    tc = it_tcase_bare(s, "command-line");
    tcase_add_test(tc, test_maxmemory_from_command_line);
    return s;
}

int main(void) {
    return it_run(evict_suite());
}
