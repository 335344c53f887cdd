/* check_it_lazyfree.c -- lazy free against a real keel-server: UNLINK,
 * FLUSHALL/FLUSHDB with ASYNC, SYNC and neither (lazyfree-lazy-user-flush
 * decides), INFO lazyfree_pending_objects and lazyfreed_objects (a flush
 * counts its keys, as Valkey's; CONFIG RESETSTAT clears the count), used
 * memory falling after FLUSHALL ASYNC, a reply still being written while
 * its value's database is freed, and the lazyfree-lazy-* directives
 * (Valkey 8.0's defaults, CONFIG SET/GET, CONFIG REWRITE, start-up). Values
 * here are strings, which free inline (effort 1), but for Valkey's "UNLINK
 * can reclaim memory in background" (a set of 100000 members); the
 * thread's work on one big value is tested in tests/unit/check_lazyfree.c. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const directives[] = {"lazyfree-lazy-eviction",   "lazyfree-lazy-expire",
                                         "lazyfree-lazy-server-del", "lazyfree-lazy-user-del",
                                         "lazyfree-lazy-user-flush", "replica-lazy-flush"};

static long long freed(void) {
    return it_info_int(C, "memory", "lazyfreed_objects");
}

static long long pending(void) {
    return it_info_int(C, "memory", "lazyfree_pending_objects");
}

static void fill(int n, const char *prefix) {
    for (int i = 0; i < n; i++)
        expect_ok(C, "SET %s%d v%d", prefix, i, i);
}

START_TEST(test_directive_defaults_and_set) {
    for (size_t i = 0; i < sizeof(directives) / sizeof(*directives); i++) {
        expect_reply(C, it_fmt("[\"%s\",\"yes\"]", directives[i]), "CONFIG GET %s", directives[i]);
        expect_ok(C, "CONFIG SET %s no", directives[i]);
        expect_reply(C, it_fmt("[\"%s\",\"no\"]", directives[i]), "CONFIG GET %s", directives[i]);
        expect_error_prefix(C, "ERR CONFIG SET failed", "CONFIG SET %s maybe", directives[i]);
        expect_ok(C, "CONFIG SET %s yes", directives[i]);
    }
    expect_reply(C, "[\"slave-lazy-flush\",\"yes\"]", "CONFIG GET slave-lazy-flush");
}
END_TEST

START_TEST(test_unlink) {
    expect_ok(C, "MSET a 1 b 2 c 3");
    expect_int(C, 2, "UNLINK a b missing");
    expect_int(C, 0, "EXISTS a b");
    expect_int(C, 1, "EXISTS c");
    expect_int(C, 1, "UNLINK c c");
    expect_error(C, "ERR wrong number of arguments for 'unlink' command", "UNLINK");
    /* A string frees inline: nothing went through the thread. */
    char *big = it_random_bytes(100000, 1);
    expect_ok(C, "SET big %b", big, (size_t)100000);
    expect_int(C, 1, "UNLINK big");
    ck_assert_int_eq(freed(), 0);
    /* DEL under either lazyfree-lazy-user-del. */
    expect_ok(C, "CONFIG SET lazyfree-lazy-user-del no");
    expect_ok(C, "MSET a 1 b 2");
    expect_int(C, 2, "DEL a b");
    expect_int(C, 0, "EXISTS a b");
}
END_TEST

/* A flush on the thread counts its keys, as Valkey's emptyDbAsync does. */
START_TEST(test_flushall_async_counts_keys) {
    fill(100, "k");
    expect_ok(C, "SELECT 3");
    fill(20, "k");
    expect_ok(C, "FLUSHALL ASYNC");
    expect_int(C, 0, "DBSIZE");
    expect_ok(C, "SELECT 0");
    expect_int(C, 0, "DBSIZE");
    expect_nil(C, "GET k1");
    it_wait_until(pending() == 0, 5000);
    ck_assert_int_eq(freed(), 120);
    /* The emptied databases take keys at once. */
    fill(5, "n");
    expect_int(C, 5, "DBSIZE");
    expect_ok(C, "CONFIG RESETSTAT");
    ck_assert_int_eq(freed(), 0);
}
END_TEST

START_TEST(test_flush_forms) {
    /* FLUSHDB ASYNC: the current database only. */
    fill(10, "k");
    expect_ok(C, "SELECT 1");
    fill(7, "k");
    expect_ok(C, "FLUSHDB ASYNC");
    expect_int(C, 0, "DBSIZE");
    expect_ok(C, "SELECT 0");
    expect_int(C, 10, "DBSIZE");
    it_wait_until(freed() == 7, 5000);
    /* SYNC never counts. */
    expect_ok(C, "FLUSHALL SYNC");
    expect_int(C, 0, "DBSIZE");
    ck_assert_int_eq(freed(), 7);
    /* Neither: lazyfree-lazy-user-flush (yes by default) decides. */
    fill(4, "k");
    expect_ok(C, "FLUSHDB");
    it_wait_until(freed() == 11, 5000);
    expect_ok(C, "CONFIG SET lazyfree-lazy-user-flush no");
    fill(4, "k");
    expect_ok(C, "FLUSHALL");
    expect_int(C, 0, "DBSIZE");
    expect_status(C, "PONG", "PING"); /* a round trip for a job that should not exist */
    ck_assert_int_eq(freed(), 11);
    ck_assert_int_eq(pending(), 0);
    /* The words are case-insensitive; anything else is a syntax error. */
    fill(2, "k");
    expect_ok(C, "flushall aSyNc");
    it_wait_until(freed() == 13, 5000);
    expect_error(C, "ERR syntax error", "FLUSHALL LAZY");
    expect_error(C, "ERR syntax error", "FLUSHDB ASYNC SYNC");
    expect_error(C, "ERR syntax error", "FLUSHALL SYNC SYNC");
}
END_TEST

/* used_memory falls once the thread has freed a flushed database. */
START_TEST(test_flush_async_reclaims_memory) {
    long long orig = it_info_int(C, "memory", "used_memory");
    char *val = it_random_bytes(10000, 2);
    for (int i = 0; i < 3000; i++)
        expect_ok(C, "SET big%d %b", i, val, (size_t)10000);
    long long peak = it_info_int(C, "memory", "used_memory");
    ck_assert_int_gt(peak, orig + 25000000);
    expect_ok(C, "FLUSHALL ASYNC");
    it_wait_until(it_info_int(C, "memory", "used_memory") < orig + 5000000, 5000);
    /* The counters move after the job's last free. */
    it_wait_until(pending() == 0, 5000);
    ck_assert_int_eq(freed(), 3000);
}
END_TEST

/* Valkey's "UNLINK can reclaim memory in background": after UNLINK of a
 * set filled by one SADD of 100000 members, used memory falls under twice
 * what it was before, on the same connection (whose argv array, 100002
 * slots for that SADD, must not stay pinned). */
START_TEST(test_unlink_big_set_reclaims_memory) {
    long long orig = it_info_int(C, "memory", "used_memory");
    enum { N = 100000 };
    const char **argv = malloc((N + 2) * sizeof(*argv));
    size_t *lens = malloc((N + 2) * sizeof(*lens));
    char *digits = malloc((size_t)N * 8);
    argv[0] = "SADD";
    argv[1] = "myset";
    for (int i = 0; i < N; i++) {
        argv[i + 2] = digits + (size_t)i * 8;
        lens[i + 2] = (size_t)snprintf(digits + (size_t)i * 8, 8, "%d", i);
    }
    lens[0] = 4;
    lens[1] = 5;
    redisReply *r = it_cmd_argv(C, N + 2, argv, lens);
    ck_assert_int_eq(r->integer, N);
    it_free(r);
    free(argv);
    free(lens);
    free(digits);
    long long peak = it_info_int(C, "memory", "used_memory");
    ck_assert_int_gt(peak, orig + 1000000);
    expect_int(C, 1, "UNLINK myset");
    it_wait_until(it_info_int(C, "memory", "used_memory") < orig * 2, 5000);
}
END_TEST

/* A reply still holding a value when its database is flushed on the thread:
 * the thread leaves that value to the main thread, and the reply arrives
 * whole. */
START_TEST(test_flush_async_while_reply_pending) {
    const size_t len = 8 * 1024 * 1024;
    char *val = it_random_bytes(len, 3);
    expect_ok(C, "SET big %b", val, len);
    fill(1000, "k");
    it_raw *r = it_raw_connect(S);
    /* Not read yet: the reply waits in the server, referencing the value. */
    it_raw_cmd(r, "GET", "big", NULL);
    it_raw_cmd(r, "GET", "big", NULL);
    it_sleep_ms(50);
    expect_ok(C, "FLUSHALL ASYNC");
    expect_int(C, 0, "EXISTS big");
    for (int i = 0; i < 2; i++) {
        it_value *v = it_raw_read(r);
        ck_assert_ptr_nonnull(v);
        ck_assert_int_eq(v->type, '$');
        ck_assert_uint_eq(v->len, len);
        ck_assert_msg(memcmp(v->str, val, len) == 0, "reply %d changed", i);
    }
    it_raw_close(r);
    it_wait_until(pending() == 0, 5000);
    ck_assert_int_eq(freed(), 1001);
}
END_TEST

START_TEST(test_directives_start_up_and_rewrite) {
    it_server *s = it_start_conf("lazyfree-lazy-user-flush no\nlazyfree-lazy-expire no\n", NULL);
    redisContext *c = it_connect(s);
    expect_reply(c, "[\"lazyfree-lazy-user-flush\",\"no\"]", "CONFIG GET lazyfree-lazy-user-flush");
    expect_reply(c, "[\"lazyfree-lazy-expire\",\"no\"]", "CONFIG GET lazyfree-lazy-expire");
    /* The directive is effective from the file: FLUSHALL is synchronous. */
    expect_ok(c, "SET a 1");
    expect_ok(c, "FLUSHALL");
    ck_assert_int_eq(it_info_int(c, "memory", "lazyfreed_objects"), 0);
    expect_ok(c, "CONFIG SET lazyfree-lazy-expire yes");
    expect_ok(c, "CONFIG SET lazyfree-lazy-server-del no");
    expect_ok(c, "CONFIG REWRITE");
    char *text = it_read_file(s->conf);
    ck_assert_msg(strstr(text, "lazyfree-lazy-user-flush no"), "rewrite lost a directive:\n%s",
                  text);
    ck_assert_msg(strstr(text, "lazyfree-lazy-server-del no"), "rewrite lost a directive:\n%s",
                  text);
    ck_assert_msg(!strstr(text, "lazyfree-lazy-expire no"), "rewrite kept a stale value:\n%s",
                  text);
    it_disconnect(c);
    it_stop(s);
}
END_TEST

static Suite *lazyfree_suite(void) {
    Suite *s = suite_create("lazyfree");
    TCase *tc = it_tcase(s, "lazyfree");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_directive_defaults_and_set);
    tcase_add_test(tc, test_unlink);
    tcase_add_test(tc, test_flushall_async_counts_keys);
    tcase_add_test(tc, test_flush_forms);
    tcase_add_test(tc, test_flush_async_reclaims_memory);
    tcase_add_test(tc, test_unlink_big_set_reclaims_memory);
    tcase_add_test(tc, test_flush_async_while_reply_pending);
    tcase_add_test(tc, test_directives_start_up_and_rewrite);
    return s;
}

int main(void) {
    return it_run(lazyfree_suite());
}
