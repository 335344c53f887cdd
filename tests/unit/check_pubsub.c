/* check_pubsub.c -- unit tests for core/session/pubsub.c through its API
 * and the real dispatcher, on connection-less clients: the subscriber
 * arrays stay consistent under unsubscribes in any order (the swap-remove
 * index bookkeeping), PUBLISH reaches exactly the subscribers left, the
 * RESP2 and RESP3 frames, a large message shared between subscribers, the
 * CLIENT_PUBSUB flag and gauges following the counts, a message to oneself
 * after the command's reply, and a freed client leaving nothing behind. */
#include "client_fixture.h"
#include "common/common.h"
#include "config/config.h"
#include "server/info.h"
#include "server/server.h"
#include "server/server_config.h"
#include "session/client.h"
#include "session/pubsub.h"
#include "session/reply.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_HELLO "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n"

START_TEST(test_unsubscribe_any_order) {
    enum { N = 64 };
    client *cs[N];
    int subscribed[N];
    for (int i = 0; i < N; i++) {
        cs[i] = client_create(NULL);
        pubsub_subscribe(cs[i], PUBSUB_CHANNEL, "ch", 2);
        expect(cs[i], "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
        subscribed[i] = 1;
    }
    ck_assert_int_eq(pubsub_subscribers(PUBSUB_CHANNEL, "ch", 2), N);
    /* A fixed pseudo-random order: every position of the array gets hit. */
    unsigned x = 12345;
    for (int left = N; left > 0; left--) {
        int k;
        do {
            x = x * 1103515245u + 12345u;
            k = (int)((x >> 8) % N);
        } while (!subscribed[k]);
        pubsub_unsubscribe(cs[k], PUBSUB_CHANNEL, "ch", 2);
        expect(cs[k], "*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:0\r\n");
        subscribed[k] = 0;
        ck_assert_int_eq(pubsub_publish("ch", 2, "hello", 5), left - 1);
        for (int i = 0; i < N; i++)
            expect(cs[i], subscribed[i] ? MSG_HELLO : "");
    }
    ck_assert_int_eq(pubsub_count(PUBSUB_CHANNEL), 0);
    for (int i = 0; i < N; i++)
        client_free(cs[i]);
}
END_TEST

START_TEST(test_frames_and_sharing) {
    client *r2 = client_create(NULL), *r3 = client_create(NULL), *r3b = client_create(NULL);
    r3->resp = r3b->resp = 3;
    pubsub_subscribe(r2, PUBSUB_PATTERN, "c*", 2);
    pubsub_subscribe(r3, PUBSUB_CHANNEL, "ch", 2);
    pubsub_subscribe(r3b, PUBSUB_SHARD, "ch", 2);
    expect(r2, "*3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:1\r\n");
    expect(r3, ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
    expect(r3b, ">3\r\n$10\r\nssubscribe\r\n$2\r\nch\r\n:1\r\n");
    ck_assert_int_eq(pubsub_publish("ch", 2, "m", 1), 2);
    expect(r2, "*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$1\r\nm\r\n");
    expect(r3, ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n");
    expect(r3b, "");
    ck_assert_int_eq(pubsub_publish_shard("ch", 2, "s", 1), 1);
    expect(r3b, ">3\r\n$8\r\nsmessage\r\n$2\r\nch\r\n$1\r\ns\r\n");
    /* A large message reaches both through the shared frame. */
    static char big[100000];
    memset(big, 'b', sizeof(big));
    pubsub_subscribe(r3b, PUBSUB_CHANNEL, "ch", 2);
    take(r3b);
    ck_assert_int_eq(pubsub_publish("ch", 2, big, sizeof(big)), 3);
    const char *got = take(r3b);
    size_t len = strlen(got);
    ck_assert_uint_eq(len, 4 + 13 + 8 + 9 + sizeof(big) + 2);
    ck_assert(strncmp(got, ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$100000\r\nbbb", 37) == 0);
    ck_assert_uint_eq(strlen(take(r3)), len);
    ck_assert_uint_eq(strlen(take(r2)), len + 9); /* the pattern and "pmessage" */
    client_free(r2);
    client_free(r3);
    client_free(r3b);
}
END_TEST

START_TEST(test_flag_gauges_and_free) {
    client *c = client_create(NULL);
    ck_assert(!pubsub_subscribed(c));
    pubsub_subscribe(c, PUBSUB_SHARD, "s", 1);
    ck_assert(c->flags & CLIENT_PUBSUB);
    ck_assert_int_eq(stat("pubsub_clients"), 1);
    pubsub_subscribe(c, PUBSUB_CHANNEL, "a", 1);
    pubsub_subscribe(c, PUBSUB_CHANNEL, "b", 1);
    pubsub_subscribe(c, PUBSUB_PATTERN, "p*", 2);
    ck_assert_int_eq(pubsub_client_count(c, PUBSUB_CHANNEL), 2);
    ck_assert_int_eq(pubsub_client_count(c, PUBSUB_PATTERN), 1);
    ck_assert_int_eq(pubsub_client_count(c, PUBSUB_SHARD), 1);
    ck_assert_int_eq(stat("pubsub_channels"), 2);
    ck_assert_int_eq(stat("pubsub_patterns"), 1);
    ck_assert_int_eq(stat("pubsubshard_channels"), 1);
    take(c);
    /* The flag stays while any kind is left. */
    pubsub_unsubscribe_all(c, PUBSUB_CHANNEL, 1);
    pubsub_unsubscribe_all(c, PUBSUB_PATTERN, 1);
    ck_assert(c->flags & CLIENT_PUBSUB);
    pubsub_unsubscribe_all(c, PUBSUB_SHARD, 1);
    ck_assert(!(c->flags & CLIENT_PUBSUB));
    ck_assert_int_eq(stat("pubsub_clients"), 0);
    take(c);
    pubsub_unsubscribe_all(c, PUBSUB_PATTERN, 1);
    expect(c, "*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n");
    /* Freeing a subscribed client leaves no name behind. */
    pubsub_subscribe(c, PUBSUB_CHANNEL, "a", 1);
    pubsub_subscribe(c, PUBSUB_PATTERN, "p*", 2);
    pubsub_subscribe(c, PUBSUB_SHARD, "s", 1);
    client_free(c);
    ck_assert_int_eq(pubsub_count(PUBSUB_CHANNEL), 0);
    ck_assert_int_eq(pubsub_count(PUBSUB_PATTERN), 0);
    ck_assert_int_eq(pubsub_count(PUBSUB_SHARD), 0);
    ck_assert_int_eq(stat("pubsub_clients"), 0);
    ck_assert_int_eq(pubsub_publish("a", 1, "x", 1), 0);
}
END_TEST

START_TEST(test_message_to_self_after_reply) {
    client *c = client_create(NULL);
    c->resp = 3;
    feed(c,
         "*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$5\r\nhello\r\n");
    expect(
        c,
        ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n:1\r\n>3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\n"
        "hello\r\n");
    /* RESET drops the subscription without a confirmation. */
    feed(c, "*1\r\n$5\r\nRESET\r\n");
    expect(c, "+RESET\r\n");
    ck_assert(!pubsub_subscribed(c));
    ck_assert_ptr_null(c->pubsub);
    client_free(c);
}
END_TEST

static Suite *pubsub_suite(void) {
    Suite *s = suite_create("pubsub");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_unsubscribe_any_order);
    tcase_add_test(tc, test_frames_and_sharing);
    tcase_add_test(tc, test_flag_gauges_and_free);
    tcase_add_test(tc, test_message_to_self_after_reply);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    char *err = NULL;
    server_config_init();
    srv.log.verbosity = LL_WARNING;
    if (server_init_core(&err) != K_OK) {
        fprintf(stderr, "server_init_core: %s\n", err);
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(pubsub_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    server_teardown();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
