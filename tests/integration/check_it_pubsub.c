/* check_it_pubsub.c -- pub/sub against a real keel-server: SUBSCRIBE,
 * PSUBSCRIBE, SSUBSCRIBE and their UNSUBSCRIBE forms in RESP2 and RESP3,
 * PUBLISH and SPUBLISH, pattern matching, the PUBSUB introspection
 * commands, unsubscribe-all with and without subscriptions, the RESP2
 * subscribed mode (its error, PING's array), RESP3 clients mixing commands
 * and messages, PUBLISH to oneself inside MULTI, RESET, CLIENT LIST and
 * INFO fields, many subscribers, and a subscriber that never reads being
 * dropped at client-output-buffer-limit pubsub while its publisher goes on. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static it_raw *resp3_client(void) {
    it_raw *r = it_raw_connect(S);
    it_raw_cmd(r, "HELLO", "3", NULL);
    ck_assert_ptr_nonnull(it_raw_read(r));
    return r;
}

static long long info_stat(const char *field) {
    return it_info_int(C, "stats", field);
}

static const char *client_line(it_raw *r) {
    it_raw_cmd(r, "CLIENT", "INFO", NULL);
    it_value *v = it_raw_read(r);
    ck_assert_ptr_nonnull(v);
    ck_assert_ptr_nonnull(v->str);
    return v->str;
}

START_TEST(test_subscribe_publish_resp2) {
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "SUBSCRIBE", "chan1", "chan2", NULL);
    expect_raw(rd, "[\"subscribe\",\"chan1\",:1]");
    expect_raw(rd, "[\"subscribe\",\"chan2\",:2]");
    expect_int(C, 1, "PUBLISH chan1 hello");
    expect_int(C, 1, "PUBLISH chan2 world");
    expect_int(C, 0, "PUBLISH chan3 nobody");
    expect_raw(rd, "[\"message\",\"chan1\",\"hello\"]");
    expect_raw(rd, "[\"message\",\"chan2\",\"world\"]");
    /* The same channel twice counts once. */
    it_raw_cmd(rd, "SUBSCRIBE", "chan1", NULL);
    expect_raw(rd, "[\"subscribe\",\"chan1\",:2]");
    it_raw_cmd(rd, "UNSUBSCRIBE", "chan1", "nosuch", NULL);
    expect_raw(rd, "[\"unsubscribe\",\"chan1\",:1]");
    expect_raw(rd, "[\"unsubscribe\",\"nosuch\",:1]");
    expect_int(C, 0, "PUBLISH chan1 hello");
    it_raw_cmd(rd, "UNSUBSCRIBE", NULL);
    expect_raw(rd, "[\"unsubscribe\",\"chan2\",:0]");
    expect_int(C, 0, "PUBLISH chan2 world");
    /* Out of subscribed mode: an ordinary client again. */
    it_raw_cmd(rd, "PING", NULL);
    expect_raw(rd, "+PONG");
}
END_TEST

START_TEST(test_binary_channel_and_message) {
    it_raw *rd = it_raw_connect(S);
    it_raw_send(rd, "*2\r\n$9\r\nSUBSCRIBE\r\n$3\r\na\0b\r\n", 28);
    expect_raw(rd, "[\"subscribe\",\"a\\x00b\",:1]");
    expect_int(C, 1, "PUBLISH %b %b", "a\0b", (size_t)3, "x\r\ny", (size_t)4);
    expect_raw(rd, "[\"message\",\"a\\x00b\",\"x\\r\\ny\"]");
}
END_TEST

START_TEST(test_unsubscribe_without_subscriptions) {
    /* Redis 7's and Valkey 8.0.2's answer (not -NOSUB, which broke
     * Celery/Kombu): one confirmation with a null name and count 0. */
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "UNSUBSCRIBE", NULL);
    expect_raw(rd, "[\"unsubscribe\",nil,:0]");
    it_raw_cmd(rd, "PUNSUBSCRIBE", NULL);
    expect_raw(rd, "[\"punsubscribe\",nil,:0]");
    it_raw_cmd(rd, "SUNSUBSCRIBE", NULL);
    expect_raw(rd, "[\"sunsubscribe\",nil,:0]");
    it_raw_cmd(rd, "UNSUBSCRIBE", "foo", "bar", NULL);
    expect_raw(rd, "[\"unsubscribe\",\"foo\",:0]");
    expect_raw(rd, "[\"unsubscribe\",\"bar\",:0]");
    /* Still not subscribed: ordinary commands run. */
    it_raw_cmd(rd, "SET", "k", "v", NULL);
    expect_raw(rd, "+OK");
    it_raw *r3 = resp3_client();
    it_raw_cmd(r3, "UNSUBSCRIBE", NULL);
    expect_raw(r3, ">[\"unsubscribe\",_,:0]");
}
END_TEST

START_TEST(test_patterns) {
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "PSUBSCRIBE", "foo.*", "bar.[ab]", NULL);
    expect_raw(rd, "[\"psubscribe\",\"foo.*\",:1]");
    expect_raw(rd, "[\"psubscribe\",\"bar.[ab]\",:2]");
    expect_int(C, 1, "PUBLISH foo.1 hello");
    expect_int(C, 1, "PUBLISH bar.b hi");
    expect_int(C, 0, "PUBLISH bar.c hi");
    expect_int(C, 0, "PUBLISH foo1 hello");
    expect_int(C, 0, "PUBLISH FOO.1 hello"); /* case-sensitive */
    expect_raw(rd, "[\"pmessage\",\"foo.*\",\"foo.1\",\"hello\"]");
    expect_raw(rd, "[\"pmessage\",\"bar.[ab]\",\"bar.b\",\"hi\"]");
    expect_int(C, 2, "PUBSUB NUMPAT");
    /* A channel and a pattern subscription both receive (and count). */
    it_raw_cmd(rd, "SUBSCRIBE", "foo.bar", NULL);
    expect_raw(rd, "[\"subscribe\",\"foo.bar\",:3]");
    expect_int(C, 2, "PUBLISH foo.bar x");
    expect_raw(rd, "[\"message\",\"foo.bar\",\"x\"]");
    expect_raw(rd, "[\"pmessage\",\"foo.*\",\"foo.bar\",\"x\"]");
    /* Shard publishes ignore patterns. */
    expect_int(C, 0, "SPUBLISH foo.zz x");
    it_raw_cmd(rd, "PUNSUBSCRIBE", "foo.*", NULL);
    expect_raw(rd, "[\"punsubscribe\",\"foo.*\",:2]");
    expect_int(C, 1, "PUBLISH foo.bar y");
    expect_raw(rd, "[\"message\",\"foo.bar\",\"y\"]");
    it_raw_cmd(rd, "PUNSUBSCRIBE", NULL);
    expect_raw(rd, "[\"punsubscribe\",\"bar.[ab]\",:1]");
    expect_int(C, 0, "PUBSUB NUMPAT");
}
END_TEST

START_TEST(test_shard_channels) {
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "SSUBSCRIBE", "s1", "s2", NULL);
    expect_raw(rd, "[\"ssubscribe\",\"s1\",:1]");
    expect_raw(rd, "[\"ssubscribe\",\"s2\",:2]");
    /* The shard table is its own: PUBLISH does not reach it. */
    expect_int(C, 0, "PUBLISH s1 x");
    expect_int(C, 1, "SPUBLISH s1 hello");
    expect_raw(rd, "[\"smessage\",\"s1\",\"hello\"]");
    /* Shard counts are apart from channel counts. */
    it_raw_cmd(rd, "SUBSCRIBE", "c1", NULL);
    expect_raw(rd, "[\"subscribe\",\"c1\",:1]");
    expect_reply(C, "[\"s1\",:1,\"s2\",:1,\"c1\",:0]", "PUBSUB SHARDNUMSUB s1 s2 c1");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "PUBSUB SHARDCHANNELS")), "s1,s2");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "PUBSUB SHARDCHANNELS *2")), "s2");
    it_raw_cmd(rd, "SUNSUBSCRIBE", NULL);
    it_value *a = it_raw_read(rd), *b = it_raw_read(rd);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    char buf[256];
    it_vrender(b, buf, sizeof(buf));
    ck_assert_msg(strstr(buf, "\"sunsubscribe\"") && strstr(buf, ":0]"), "%s", buf);
    expect_int(C, 0, "SPUBLISH s1 x");
    expect_int(C, 1, "PUBLISH c1 x");
    expect_raw(rd, "[\"message\",\"c1\",\"x\"]");
}
END_TEST

START_TEST(test_introspection) {
    it_raw *a = it_raw_connect(S), *b = it_raw_connect(S);
    it_raw_cmd(a, "SUBSCRIBE", "news.1", "news.2", "other", NULL);
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_nonnull(it_raw_read(a));
    it_raw_cmd(b, "SUBSCRIBE", "news.1", NULL);
    ck_assert_ptr_nonnull(it_raw_read(b));
    it_raw_cmd(b, "PSUBSCRIBE", "x*", "x*", NULL);
    expect_raw(b, "[\"psubscribe\",\"x*\",:2]");
    expect_raw(b, "[\"psubscribe\",\"x*\",:2]");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "PUBSUB CHANNELS")), "news.1,news.2,other");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "PUBSUB CHANNELS news.*")), "news.1,news.2");
    expect_reply(C, "[\"news.1\",:2,\"news.2\",:1,\"zzz\",:0]", "PUBSUB NUMSUB news.1 news.2 zzz");
    expect_reply(C, "[]", "PUBSUB NUMSUB");
    expect_int(C, 1, "PUBSUB NUMPAT");
    expect_error(
        C, "ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.",
        "PUBSUB CHANNELS a b");
    expect_error_prefix(C, "ERR unknown subcommand 'NOPE'", "PUBSUB NOPE");
    redisReply *help = it_cmd(C, "PUBSUB HELP");
    ck_assert_int_eq(help->type, REDIS_REPLY_ARRAY);
    ck_assert_uint_gt(help->elements, 10);
    ck_assert_int_eq(info_stat("pubsub_channels"), 3);
    ck_assert_int_eq(info_stat("pubsub_patterns"), 1);
    ck_assert_int_eq(info_stat("pubsubshard_channels"), 0);
    ck_assert_int_eq(it_info_int(C, "clients", "pubsub_clients"), 2);
    const char *line = client_line(it_raw_connect(S));
    ck_assert_msg(strstr(line, " flags=N ") && strstr(line, " sub=0 psub=0 ssub=0 "), "%s", line);
    /* b is subscribed in RESP2: CLIENT INFO is refused there; ask in RESP3. */
    it_raw *c3 = resp3_client();
    it_raw_cmd(c3, "SUBSCRIBE", "q", NULL);
    expect_raw(c3, ">[\"subscribe\",\"q\",:1]");
    it_raw_cmd(c3, "SSUBSCRIBE", "s", NULL);
    expect_raw(c3, ">[\"ssubscribe\",\"s\",:1]");
    it_raw_cmd(c3, "PSUBSCRIBE", "p*", NULL);
    expect_raw(c3, ">[\"psubscribe\",\"p*\",:2]");
    line = client_line(c3);
    ck_assert_msg(strstr(line, " flags=P ") && strstr(line, " sub=1 psub=1 ssub=1 "), "%s", line);
    /* The pubsub class: a, b and c3 (C and the plain client are normal). */
    redisReply *list = it_cmd(C, "CLIENT LIST TYPE pubsub");
    int lines = 0;
    for (const char *p = list->str; (p = strstr(p, "flags=P")); p++)
        lines++;
    ck_assert_int_eq(lines, 3);
    list = it_cmd(C, "CLIENT LIST TYPE normal");
    ck_assert_ptr_null(strstr(list->str, "flags=P"));
    ck_assert_ptr_nonnull(strstr(list->str, "cmd=client|list"));
    expect_reply(C, "\"\"", "CLIENT LIST TYPE replica");
    expect_int(C, 3, "CLIENT KILL TYPE pubsub");
    it_wait_until(info_stat("pubsub_channels") == 0, 5000);
    it_wait_until(it_info_int(C, "clients", "pubsub_clients") == 0, 5000);
    ck_assert_int_eq(info_stat("pubsub_patterns"), 0);
    ck_assert_int_eq(info_stat("pubsubshard_channels"), 0);
}
END_TEST

START_TEST(test_resp2_subscribed_mode) {
    it_raw *rd = it_raw_connect(S);
    it_raw_cmd(rd, "SUBSCRIBE", "ch", NULL);
    expect_raw(rd, "[\"subscribe\",\"ch\",:1]");
    it_raw_cmd(rd, "GET", "k", NULL);
    expect_raw(rd, "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
                   "QUIT / RESET are allowed in this context");
    it_raw_cmd(rd, "CONFIG", "GET", "maxmemory", NULL);
    expect_raw(rd, "-ERR Can't execute 'config|get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / "
                   "PING / QUIT / RESET are allowed in this context");
    it_raw_cmd(rd, "PING", NULL);
    expect_raw(rd, "[\"pong\",\"\"]");
    it_raw_cmd(rd, "PING", "foo", NULL);
    expect_raw(rd, "[\"pong\",\"foo\"]");
    it_raw_cmd(rd, "PSUBSCRIBE", "p*", NULL);
    expect_raw(rd, "[\"psubscribe\",\"p*\",:2]");
    /* RESET leaves subscribed mode and drops every subscription. */
    it_raw_cmd(rd, "RESET", NULL);
    expect_raw(rd, "+RESET");
    expect_int(C, 0, "PUBLISH ch x");
    expect_int(C, 0, "PUBLISH px x");
    it_raw_cmd(rd, "GET", "k", NULL);
    expect_raw(rd, "nil");
    it_raw_cmd(rd, "SUBSCRIBE", "ch", NULL);
    expect_raw(rd, "[\"subscribe\",\"ch\",:1]");
    it_raw_cmd(rd, "QUIT", NULL);
    expect_raw(rd, "+OK");
    ck_assert(it_raw_wait_closed(rd, 5000));
    it_wait_until(it_info_int(C, "clients", "pubsub_clients") == 0, 5000);
}
END_TEST

START_TEST(test_resp3_mixes_commands_and_messages) {
    it_raw *r3 = resp3_client();
    it_raw_cmd(r3, "SUBSCRIBE", "ch", NULL);
    expect_raw(r3, ">[\"subscribe\",\"ch\",:1]");
    it_raw_cmd(r3, "SET", "k", "v", NULL);
    expect_raw(r3, "+OK");
    it_raw_cmd(r3, "PING", NULL);
    expect_raw(r3, "+PONG");
    expect_int(C, 1, "PUBLISH ch hello");
    expect_raw(r3, ">[\"message\",\"ch\",\"hello\"]");
    it_raw_cmd(r3, "GET", "k", NULL);
    expect_raw(r3, "\"v\"");
    it_raw_cmd(r3, "PSUBSCRIBE", "c*", NULL);
    expect_raw(r3, ">[\"psubscribe\",\"c*\",:2]");
    expect_int(C, 2, "PUBLISH ch again");
    expect_raw(r3, ">[\"message\",\"ch\",\"again\"]");
    expect_raw(r3, ">[\"pmessage\",\"c*\",\"ch\",\"again\"]");
    /* A RESP2 and a RESP3 subscriber of one channel: each its framing. */
    it_raw *r2 = it_raw_connect(S);
    it_raw_cmd(r2, "SUBSCRIBE", "ch", NULL);
    expect_raw(r2, "[\"subscribe\",\"ch\",:1]");
    expect_int(C, 3, "PUBLISH ch both");
    expect_raw(r2, "[\"message\",\"ch\",\"both\"]");
    expect_raw(r3, ">[\"message\",\"ch\",\"both\"]");
    expect_raw(r3, ">[\"pmessage\",\"c*\",\"ch\",\"both\"]");
}
END_TEST

START_TEST(test_publish_to_self_in_multi) {
    it_raw *r3 = resp3_client();
    it_raw_cmd(r3, "SUBSCRIBE", "foo", NULL);
    expect_raw(r3, ">[\"subscribe\",\"foo\",:1]");
    it_raw_cmd(r3, "MULTI", NULL);
    expect_raw(r3, "+OK");
    it_raw_cmd(r3, "PING", "abc", NULL);
    expect_raw(r3, "+QUEUED");
    it_raw_cmd(r3, "PUBLISH", "foo", "bar", NULL);
    expect_raw(r3, "+QUEUED");
    it_raw_cmd(r3, "PUBLISH", "foo", "vaz", NULL);
    expect_raw(r3, "+QUEUED");
    it_raw_cmd(r3, "EXEC", NULL);
    expect_raw(r3, "[\"abc\",:1,:1]");
    expect_raw(r3, ">[\"message\",\"foo\",\"bar\"]");
    expect_raw(r3, ">[\"message\",\"foo\",\"vaz\"]");
    /* Outside MULTI the reply also comes before the message. */
    it_raw_cmd(r3, "PUBLISH", "foo", "self", NULL);
    expect_raw(r3, ":1");
    expect_raw(r3, ">[\"message\",\"foo\",\"self\"]");
    /* SUBSCRIBE inside MULTI runs (Valkey's exception); SSUBSCRIBE not. */
    it_raw_cmd(r3, "MULTI", NULL);
    expect_raw(r3, "+OK");
    it_raw_cmd(r3, "SUBSCRIBE", "bar", NULL);
    expect_raw(r3, "+QUEUED");
    it_raw_cmd(r3, "SSUBSCRIBE", "sh", NULL);
    expect_raw(r3, "+QUEUED");
    it_raw_cmd(r3, "UNSUBSCRIBE", "foo", NULL);
    expect_raw(r3, "+QUEUED");
    it_raw_cmd(r3, "EXEC", NULL);
    expect_raw(r3, "[>[\"subscribe\",\"bar\",:2],-ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING "
                   "client,>[\"unsubscribe\",\"foo\",:1]]");
    expect_int(C, 1, "PUBLISH bar x");
    expect_raw(r3, ">[\"message\",\"bar\",\"x\"]");
}
END_TEST

START_TEST(test_client_reply_off_still_gets_messages) {
    it_raw *r3 = resp3_client();
    it_raw_cmd(r3, "CLIENT", "REPLY", "OFF", NULL);
    it_raw_cmd(r3, "SUBSCRIBE", "ch", NULL);
    expect_raw(r3, ">[\"subscribe\",\"ch\",:1]");
    expect_int(C, 1, "PUBLISH ch hello");
    expect_raw(r3, ">[\"message\",\"ch\",\"hello\"]");
    it_raw_cmd(r3, "UNSUBSCRIBE", "ch", NULL);
    expect_raw(r3, ">[\"unsubscribe\",\"ch\",:0]");
}
END_TEST

START_TEST(test_many_subscribers) {
    enum { N = 200 };
    it_raw *subs[N];
    for (int i = 0; i < N; i++) {
        subs[i] = it_raw_connect(S);
        if (i % 2)
            it_raw_cmd(subs[i], "SUBSCRIBE", "fan", NULL);
        else
            it_raw_cmd(subs[i], "PSUBSCRIBE", "f*", NULL);
        ck_assert_ptr_nonnull(it_raw_read(subs[i]));
    }
    /* A 100 KB message goes out as one shared frame to all of them. */
    char *big = it_random_bytes(100000, 7);
    for (size_t i = 0; i < 100000; i++)
        big[i] = (char)('a' + (unsigned char)big[i] % 26);
    expect_int(C, N, "PUBLISH fan %b", big, (size_t)100000);
    expect_int(C, N, "PUBLISH fan small");
    for (int i = 0; i < N; i++) {
        it_value *v = it_raw_read(subs[i]);
        ck_assert_ptr_nonnull(v);
        ck_assert_uint_eq(v->n, i % 2 ? 3 : 4);
        const it_value *msg = v->elem[v->n - 1];
        ck_assert_uint_eq(msg->len, 100000);
        ck_assert(memcmp(msg->str, big, 100000) == 0);
        v = it_raw_read(subs[i]);
        ck_assert_ptr_nonnull(v);
        ck_assert_str_eq(v->elem[v->n - 1]->str, "small");
    }
    expect_reply(C, "[\"fan\",:100]", "PUBSUB NUMSUB fan");
    /* Unsubscribing from the middle keeps the others subscribed. */
    for (int i = 1; i < N; i += 4)
        it_raw_close(subs[i]);
    it_wait_until(it_info_int(C, "clients", "pubsub_clients") == N - N / 4, 5000);
    expect_int(C, N - N / 4, "PUBLISH fan again");
    expect_reply(C, "[\"fan\",:50]", "PUBSUB NUMSUB fan");
}
END_TEST

/* A subscriber that never reads, with a tiny receive buffer: the server
 * must drop it at the pubsub hard limit, keep memory bounded, and answer
 * every PUBLISH of the publisher. */
START_TEST(test_slow_subscriber_dropped) {
    it_server *s = it_start("--client-output-buffer-limit", "pubsub", "1mb", "512kb", "60", NULL);
    redisContext *pub = it_connect(s);
    it_raw *slow = it_raw_connect(s);
    int rcv = 4096;
    setsockopt(slow->fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    it_raw_cmd(slow, "SUBSCRIBE", "flood", NULL);
    expect_raw(slow, "[\"subscribe\",\"flood\",:1]");
    long long before = it_info_int(pub, "memory", "used_memory");
    char *msg = it_random_bytes(1000, 3);
    for (int i = 0; i < 1000; i++)
        msg[i] = (char)('a' + (unsigned char)msg[i] % 26);
    /* 20 MB offered to the subscriber, pipelined: every reply arrives. */
    enum { BATCH = 500, ROUNDS = 40 };
    long long delivered = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < BATCH; i++)
            redisAppendCommand(pub, "PUBLISH flood %b", msg, (size_t)1000);
        for (int i = 0; i < BATCH; i++) {
            redisReply *rep = NULL;
            ck_assert_int_eq(redisGetReply(pub, (void **)&rep), REDIS_OK);
            ck_assert_int_eq(rep->type, REDIS_REPLY_INTEGER);
            delivered += rep->integer;
            freeReplyObject(rep);
        }
        long long used = it_info_int(pub, "memory", "used_memory");
        ck_assert_msg(used < before + 8 * 1024 * 1024, "used_memory grew to %lld (from %lld)", used,
                      before);
    }
    ck_assert_int_lt(delivered, BATCH * ROUNDS);
    ck_assert_int_ge(it_info_int(pub, "stats", "client_output_buffer_limit_disconnections"), 1);
    /* Gone from the server (reading to its end of stream is up to the
     * kernel: the socket's unsent bytes stay queued behind a zero window). */
    it_wait_until(it_info_int(pub, "clients", "pubsub_clients") == 0, 5000);
    ck_assert_int_eq(it_info_int(pub, "clients", "connected_clients"), 1);
    expect_int(pub, 0, "PUBLISH flood x");
    expect_reply(pub,
                 "[\"client-output-buffer-limit\",\"normal 0 0 0 slave 268435456 67108864 60 "
                 "pubsub 1048576 524288 60\"]",
                 "CONFIG GET client-output-buffer-limit");
}
END_TEST

START_TEST(test_obuf_limit_directive) {
    expect_ok(C, "CONFIG SET client-output-buffer-limit %s",
              "pubsub 10mb 5mb 30 replica 1mb 1mb 0");
    expect_reply(C,
                 "[\"client-output-buffer-limit\",\"normal 0 0 0 slave 1048576 1048576 0 "
                 "pubsub 10485760 5242880 30\"]",
                 "CONFIG GET client-output-buffer-limit");
    expect_ok(C, "CONFIG SET client-output-buffer-limit %s", "slave 2mb 1mb 10");
    expect_error_prefix(C, "ERR CONFIG SET failed", "CONFIG SET client-output-buffer-limit %s",
                        "bogus 1 1 1");
    expect_error_prefix(C, "ERR CONFIG SET failed", "CONFIG SET client-output-buffer-limit %s",
                        "pubsub 1 1");
    expect_ok(C, "CONFIG SET client-output-buffer-limit %s",
              "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60");
}
END_TEST

START_TEST(test_unsubscribe_all_many) {
    enum { N = 300 };
    it_raw *rd = it_raw_connect(S);
    char longname[201];
    memset(longname, 'L', 200);
    longname[200] = '\0';
    it_raw_cmd(rd, "SUBSCRIBE", longname, NULL);
    expect_raw(rd, it_fmt("[\"subscribe\",\"%s\",:1]", longname));
    for (int i = 1; i < N; i++) {
        it_raw_cmd(rd, "SUBSCRIBE", it_fmt("many:%d", i), NULL);
        expect_raw(rd, it_fmt("[\"subscribe\",\"many:%d\",:%d]", i, i + 1));
    }
    it_raw_cmd(rd, "PSUBSCRIBE", "many:*", NULL);
    expect_raw(rd, it_fmt("[\"psubscribe\",\"many:*\",:%d]", N + 1));
    ck_assert_int_eq(info_stat("pubsub_channels"), N);
    /* Every channel goes, one confirmation each, counting down to the
     * pattern that stays. */
    it_raw_cmd(rd, "UNSUBSCRIBE", NULL);
    int saw_long = 0;
    for (int i = 0; i < N; i++) {
        it_value *v = it_raw_read(rd);
        ck_assert_ptr_nonnull(v);
        ck_assert_uint_eq(v->n, 3);
        ck_assert_str_eq(v->elem[0]->str, "unsubscribe");
        ck_assert_int_eq(v->elem[2]->integer, N - i);
        saw_long += v->elem[1]->len == 200 && strcmp(v->elem[1]->str, longname) == 0;
    }
    ck_assert_int_eq(saw_long, 1);
    ck_assert_int_eq(info_stat("pubsub_channels"), 0);
    expect_int(C, 1, "PUBLISH many:7 x");
    expect_raw(rd, "[\"pmessage\",\"many:*\",\"many:7\",\"x\"]");
    it_raw_cmd(rd, "PUNSUBSCRIBE", NULL);
    expect_raw(rd, "[\"punsubscribe\",\"many:*\",:0]");
    ck_assert_int_eq(it_info_int(C, "clients", "pubsub_clients"), 0);
}
END_TEST

/* The idle timeout spares subscribers (they wait for messages by design)
 * and closes the others. */
START_TEST(test_idle_timeout_spares_subscribers) {
    it_raw *sub = it_raw_connect(S), *idle = it_raw_connect(S);
    it_raw_cmd(sub, "SUBSCRIBE", "quiet", NULL);
    expect_raw(sub, "[\"subscribe\",\"quiet\",:1]");
    it_raw_cmd(idle, "PING", NULL);
    expect_raw(idle, "+PONG");
    expect_ok(C, "CONFIG SET timeout 1");
    ck_assert(it_raw_wait_closed(idle, 5000));
    redisContext *c2 = it_connect(S); /* C sat idle too */
    expect_ok(c2, "CONFIG SET timeout 0");
    expect_int(c2, 1, "PUBLISH quiet still-here");
    expect_raw(sub, "[\"message\",\"quiet\",\"still-here\"]");
}
END_TEST

static Suite *pubsub_suite(void) {
    Suite *s = suite_create("pubsub");
    TCase *tc = it_tcase(s, "pubsub");
    tcase_add_test(tc, test_subscribe_publish_resp2);
    tcase_add_test(tc, test_binary_channel_and_message);
    tcase_add_test(tc, test_unsubscribe_without_subscriptions);
    tcase_add_test(tc, test_patterns);
    tcase_add_test(tc, test_shard_channels);
    tcase_add_test(tc, test_introspection);
    tcase_add_test(tc, test_resp2_subscribed_mode);
    tcase_add_test(tc, test_resp3_mixes_commands_and_messages);
    tcase_add_test(tc, test_publish_to_self_in_multi);
    tcase_add_test(tc, test_client_reply_off_still_gets_messages);
    tcase_add_test(tc, test_many_subscribers);
    tcase_add_test(tc, test_unsubscribe_all_many);
    tcase_add_test(tc, test_idle_timeout_spares_subscribers);
    tcase_add_test(tc, test_obuf_limit_directive);
    TCase *bare = it_tcase_bare(s, "limits");
    tcase_add_test(bare, test_slow_subscriber_dropped);
    return s;
}

int main(void) {
    return it_run(pubsub_suite());
}
