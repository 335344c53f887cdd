/* check_it_debug.c -- DEBUG against a real keel-server (started with
 * --enable-debug-command yes): PROTOCOL in RESP2 (hiredis) and RESP3 (the
 * harness's raw reader after HELLO 3), OBJECT's status line, SLEEP,
 * SET-ACTIVE-EXPIRE, REPLYBUFFER, POPULATE, LOG, the persistence-bound
 * subcommands' errors, HELP and unknown subcommands; shared integers seen
 * through OBJECT REFCOUNT and DEBUG OBJECT (INCR in place, never on a
 * shared object); CLIENT NO-EVICT. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static it_server *debug_server(void) {
    return it_start("--enable-debug-command", "yes", NULL);
}

START_TEST(test_debug_refused_by_default) {
    it_server *s = it_start(NULL);
    redisContext *c = it_connect(s);
    expect_error_prefix(c, "ERR DEBUG command not allowed", "DEBUG PROTOCOL string");
}
END_TEST

START_TEST(test_protocol_resp2) {
    it_server *s = debug_server();
    redisContext *c = it_connect(s);
    expect_bulk(c, "Hello World", "DEBUG PROTOCOL string");
    expect_int(c, 12345, "DEBUG PROTOCOL integer");
    expect_bulk(c, "3.141", "DEBUG PROTOCOL double");
    expect_bulk(c, "1234567999999999999999999999999999999", "DEBUG PROTOCOL bignum");
    expect_nil(c, "DEBUG PROTOCOL null");
    expect_reply(c, "[:0,:1,:2]", "DEBUG PROTOCOL array");
    expect_reply(c, "[:0,:1,:2]", "DEBUG PROTOCOL set");
    expect_reply(c, "[:0,:0,:1,:1,:2,:0]", "DEBUG PROTOCOL map");
    expect_bulk(c, "Some real reply following the attribute", "DEBUG PROTOCOL attrib");
    expect_error(c, "ERR RESP2 is not supported by this command", "DEBUG PROTOCOL push");
    expect_int(c, 1, "DEBUG PROTOCOL true");
    expect_int(c, 0, "DEBUG PROTOCOL FALSE");
    expect_bulk(c, "This is a verbatim\nstring", "DEBUG PROTOCOL verbatim");
    expect_error(c,
                 "ERR Wrong protocol type name. Please use one of the following: "
                 "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
                 "DEBUG PROTOCOL nosuchtype");
    expect_reply(c, "+PONG", "PING"); /* nothing left over */
}
END_TEST

START_TEST(test_protocol_resp3) {
    it_server *s = debug_server();
    it_raw *r = it_raw_connect_resp3(s);
    static const struct {
        const char *type, *want;
    } cases[] = {
        {"string", "\"Hello World\""},
        {"integer", ":12345"},
        {"double", ",3.141"},
        {"bignum", "(1234567999999999999999999999999999999"},
        {"null", "_"},
        {"array", "[:0,:1,:2]"},
        {"set", "~[:0,:1,:2]"},
        {"map", "{:0:#f,:1:#t,:2:#f}"},
        {"attrib",
         "|{{\"key-popularity\":[\"key:123\",:90]}:\"Some real reply following the attribute\"}"},
        {"push", ">[\"server-cpu-usage\",:42]"},
        {"true", "#t"},
        {"false", "#f"},
        {"verbatim", "=\"txt:This is a verbatim\\nstring\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        it_raw_cmd(r, "DEBUG", "PROTOCOL", cases[i].type, NULL);
        expect_raw(r, cases[i].want);
        /* push is out of band: the real reply follows it */
        if (!strcmp(cases[i].type, "push"))
            expect_raw(r, "\"Some real reply following the push reply\"");
    }
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+PONG");
}
END_TEST

/* The exact bytes of the RESP3 attribute and bignum replies. */
START_TEST(test_protocol_resp3_bytes) {
    it_server *s = debug_server();
    it_raw *r = it_raw_connect_resp3(s);
    it_raw_cmd(r, "DEBUG", "PROTOCOL", "bignum", NULL);
    it_raw_cmd(r, "DEBUG", "PROTOCOL", "attrib", NULL);
    it_raw_cmd(r, "DEBUG", "PROTOCOL", "push", NULL);
    static const char want[] = "(1234567999999999999999999999999999999\r\n"
                               "|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n"
                               "$39\r\nSome real reply following the attribute\r\n"
                               ">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n"
                               "$40\r\nSome real reply following the push reply\r\n";
    size_t n = sizeof(want) - 1;
    char *got = it_alloc(n + 1);
    size_t have = 0;
    long long deadline = it_mstime() + 10000;
    while (have < n && it_mstime() < deadline) {
        /* it_raw buffers what it read: take from there first */
        if (r->pos < r->len) {
            size_t k = r->len - r->pos < n - have ? r->len - r->pos : n - have;
            memcpy(got + have, r->buf + r->pos, k);
            r->pos += k;
            have += k;
            continue;
        }
        ssize_t k = recv(r->fd, got + have, n - have, 0);
        if (k <= 0) break;
        have += (size_t)k;
    }
    got[have] = '\0';
    ck_assert_uint_eq(have, n);
    ck_assert_str_eq(got, want);
}
END_TEST

/* "Value at:<ptr> refcount:<n> encoding:<enc> serializedlength:<n> lru:<n>
 * lru_seconds_idle:<n> lfu_freq:<n> lfu_access_time_minutes:<n>" */
static const char *debug_object(redisContext *c, const char *key, int fast) {
    redisReply *r =
        fast ? it_cmd(c, "DEBUG OBJECT %s fast", key) : it_cmd(c, "DEBUG OBJECT %s", key);
    ck_assert_msg(r->type == REDIS_REPLY_STATUS, "DEBUG OBJECT %s: type %d %s", key, r->type,
                  r->str ? r->str : "");
    return r->str;
}

static char *field(const char *line, const char *name) {
    size_t nl = strlen(name);
    const char *p = strstr(line, it_fmt(" %s:", name));
    if (p)
        p += nl + 2;
    else if (!strncmp(line, name, nl) && line[nl] == ':')
        p = line + nl + 1;
    ck_assert_msg(p, "no %s in \"%s\"", name, line);
    size_t n = strcspn(p, " ");
    return it_fmt("%.*s", (int)n, p);
}

START_TEST(test_object) {
    it_server *s = debug_server();
    redisContext *c = it_connect(s);
    expect_ok(c, "SET small 42");
    const char *line = debug_object(c, "small", 0);
    ck_assert_msg(!strncmp(line, "Value at:0x", 11), "%s", line);
    ck_assert_str_eq(field(line, "refcount"), "2147483647");
    ck_assert_str_eq(field(line, "encoding"), "int");
    ck_assert_str_eq(field(line, "serializedlength"), "2");
    ck_assert_str_eq(field(line, "lru_seconds_idle"), "0");
    field(line, "lru");
    field(line, "lfu_freq");
    field(line, "lfu_access_time_minutes");
    /* the whole line, fields in Valkey's order */
    char ptr[32];
    unsigned refc, lru, freq, mins;
    unsigned long long slen, idle;
    char enc[16];
    int n = sscanf(line,
                   "Value at:%31s refcount:%u encoding:%15s serializedlength:%llu lru:%u "
                   "lru_seconds_idle:%llu "
                   "lfu_freq:%u lfu_access_time_minutes:%u",
                   ptr, &refc, enc, &slen, &lru, &idle, &freq, &mins);
    ck_assert_int_eq(n, 8);

    expect_ok(c, "SET str hello-world");
    line = debug_object(c, "str", 1);
    ck_assert_str_eq(field(line, "refcount"), "1");
    ck_assert_str_eq(field(line, "encoding"), "embstr");
    ck_assert_msg(!strstr(line, "serializedlength"), "fast: %s", line);
    line = debug_object(c, "str", 0);
    ck_assert_str_eq(field(line, "serializedlength"), "11");
    expect_error(c, "ERR no such key", "DEBUG OBJECT nosuchkey");
    expect_error(
        c, "ERR unknown subcommand or wrong number of arguments for 'OBJECT'. Try DEBUG HELP.",
        "DEBUG OBJECT a b c");
}
END_TEST

/* Valkey's unit/type/incr: results in 0..9999 are the shared objects,
 * others are updated in place (same address). */
START_TEST(test_shared_integers) {
    it_server *s = debug_server();
    redisContext *c = it_connect(s);
    expect_ok(c, "SET foo -1");
    expect_int(c, 1, "OBJECT REFCOUNT foo");
    expect_int(c, 0, "INCR foo");
    expect_int(c, 2147483647, "OBJECT REFCOUNT foo");
    expect_ok(c, "SET foo 9998");
    expect_int(c, 2147483647, "OBJECT REFCOUNT foo");
    expect_int(c, 9999, "INCR foo");
    expect_int(c, 2147483647, "OBJECT REFCOUNT foo");
    expect_ok(c, "SET other 9999"); /* the same shared object */
    expect_int(c, 10000,
               "INCR foo"); /* leaves the range: a private object, not the shared one changed */
    expect_int(c, 1, "OBJECT REFCOUNT foo");
    expect_bulk(c, "9999", "GET other");
    expect_int(c, 2147483647, "OBJECT REFCOUNT other");

    expect_ok(c, "SET foo 20000");
    expect_int(c, 20001, "INCR foo");
    expect_int(c, 1, "OBJECT REFCOUNT foo");
    char *before = field(debug_object(c, "foo", 0), "Value at");
    expect_int(c, 20002, "INCR foo");
    ck_assert_str_eq(field(debug_object(c, "foo", 0), "Value at"), before); /* in place */
    expect_int(c, 20000, "DECRBY foo 2");
    ck_assert_str_eq(field(debug_object(c, "foo", 0), "Value at"), before);
    expect_int(c, 5, "DECRBY foo 19995"); /* into the range: the shared 5 */
    expect_int(c, 2147483647, "OBJECT REFCOUNT foo");

    /* writing to a key holding a shared value copies it */
    expect_ok(c, "SET a 7");
    expect_ok(c, "SET b 7");
    expect_int(c, 2, "APPEND a x");
    expect_int(c, 3, "SETRANGE b 2 y");
    expect_bulk(c, "7x", "GET a");
    expect_bulk_len(c, "7\0y", 3, "GET b");
    expect_ok(c, "SET c 7");
    expect_bulk(c, "7", "GET c");
    expect_int(c, 1, "OBJECT REFCOUNT a");
    expect_reply(c, "\"raw\"", "OBJECT ENCODING a");
    expect_reply(c, "\"int\"", "OBJECT ENCODING c");
    /* deleting and overwriting shared values many times never frees them */
    for (int i = 0; i < 200; i++) {
        expect_ok(c, "SET k%d 3", i);
        expect_int(c, 1, "DEL k%d", i);
    }
    expect_bulk(c, "7", "GET c");
    /* COPY makes a private object, as Valkey's */
    expect_int(c, 1, "COPY c d");
    expect_int(c, 1, "OBJECT REFCOUNT d");
    expect_int(c, 8, "INCR d");
    expect_bulk(c, "7", "GET c");
}
END_TEST

START_TEST(test_sleep) {
    it_server *s = debug_server();
    redisContext *c = it_connect(s);
    long long t0 = it_mstime();
    expect_ok(c, "DEBUG SLEEP 0.25");
    ck_assert_int_ge(it_mstime() - t0, 240);
    t0 = it_mstime();
    expect_ok(c, "DEBUG SLEEP 0");
    expect_ok(c, "DEBUG SLEEP notanumber"); /* Valkey's strtod: 0 */
    expect_ok(c, "DEBUG SLEEP -3");
    ck_assert_int_lt(it_mstime() - t0, 200);
}
END_TEST

static long long db0_keys(redisContext *c) {
    char *line = it_info_str(c, "keyspace", "db0");
    return line ? it_kv_get(line, "keys") : 0;
}

START_TEST(test_active_expire_switch) {
    it_server *s = debug_server();
    redisContext *c = it_connect(s);
    expect_ok(c, "DEBUG SET-ACTIVE-EXPIRE 0");
    expect_ok(c, "SET e v PX 20");
    it_sleep_ms(400);
    ck_assert_int_eq(db0_keys(c), 1); /* nobody expired it */
    expect_ok(c, "DEBUG SET-ACTIVE-EXPIRE 1");
    it_wait_until(db0_keys(c) == 0, 5000);
}
END_TEST

START_TEST(test_replybuffer) {
    it_server *s = debug_server();
    redisContext *c = it_connect(s);
    expect_ok(c, "DEBUG REPLYBUFFER PEAK-RESET-TIME never");
    expect_ok(c, "DEBUG REPLYBUFFER PEAK-RESET-TIME reset");
    expect_ok(c, "DEBUG REPLYBUFFER PEAK-RESET-TIME 100");
    expect_ok(c, "DEBUG REPLYBUFFER RESIZING 0");
    expect_ok(c, "DEBUG REPLYBUFFER RESIZING 1");
    expect_error(c, "ERR value is not an integer or out of range",
                 "DEBUG REPLYBUFFER PEAK-RESET-TIME soon");
    expect_error(
        c, "ERR unknown subcommand or wrong number of arguments for 'REPLYBUFFER'. Try DEBUG HELP.",
        "DEBUG REPLYBUFFER SHRINK 1");
    expect_error(
        c, "ERR unknown subcommand or wrong number of arguments for 'replybuffer'. Try DEBUG HELP.",
        "DEBUG replybuffer resizing");
}
END_TEST

START_TEST(test_populate_and_log) {
    it_server *s = debug_server();
    redisContext *c = it_connect(s);
    expect_ok(c, "SET key:1 mine");
    expect_ok(c, "DEBUG POPULATE 3");
    expect_int(c, 3, "DBSIZE");
    expect_bulk(c, "value:0", "GET key:0");
    expect_bulk(c, "mine", "GET key:1"); /* existing keys are left alone */
    expect_bulk(c, "value:2", "GET key:2");
    expect_ok(c, "DEBUG POPULATE 2 p 10");
    expect_bulk_len(c, "value:1\0\0\0", 10, "GET p:1");
    expect_ok(c, "DEBUG POPULATE 1 q 3");
    expect_bulk(c, "val", "GET q:0");
    expect_ok(c, "DEBUG POPULATE 1 big 100");
    expect_int(c, 100, "STRLEN big:0");
    expect_ok(c, "DEBUG POPULATE 0");
    expect_error(c, "ERR value is out of range, must be positive", "DEBUG POPULATE -1");
    expect_error(c, "ERR value is not an integer or out of range", "DEBUG POPULATE x");
    /* A size past proto-max-bulk-len is refused, not allocated (it used
     * to end the server with "out of memory"). */
    expect_error(c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
                 "DEBUG POPULATE 1 huge 100000000000000");
    expect_int(c, 0, "EXISTS huge:0");

    expect_ok(c, "DEBUG LOG hello-from-the-test");
    it_wait_until(strstr(it_read_file(s->log), "DEBUG LOG: hello-from-the-test") != NULL, 5000);
}
END_TEST

START_TEST(test_persistence_and_help) {
    it_server *s = debug_server();
    redisContext *c = it_connect(s);
    expect_error_prefix(c, "ERR DEBUG RELOAD is not available", "DEBUG RELOAD");
    expect_error_prefix(c, "ERR DEBUG RELOAD is not available", "DEBUG RELOAD NOSAVE");
    expect_error_prefix(c, "ERR DEBUG LOADAOF is not available", "DEBUG LOADAOF");
    expect_error_prefix(c, "ERR DEBUG DIGEST is not available", "DEBUG DIGEST");
    expect_error_prefix(c, "ERR DEBUG DIGEST-VALUE is not available", "DEBUG DIGEST-VALUE k");
    expect_error(
        c, "ERR unknown subcommand or wrong number of arguments for 'nosuch'. Try DEBUG HELP.",
        "DEBUG nosuch");
    expect_error(c,
                 "ERR unknown subcommand or wrong number of arguments for 'JMAP'. Try DEBUG HELP.",
                 "DEBUG JMAP");

    redisReply *r = it_cmd(c, "DEBUG HELP");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_str_eq(r->element[0]->str,
                     "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    ck_assert_str_eq(r->element[r->elements - 2]->str, "HELP");
    const char *want[] = {"OBJECT <key> [fast]",
                          "PROTOCOL <type>",
                          "SLEEP <seconds>",
                          "SET-ACTIVE-EXPIRE <0|1>",
                          "REPLYBUFFER RESIZING <0|1>",
                          "RELOAD [option ...]"};
    for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
        int found = 0;
        for (size_t i = 0; i < r->elements; i++)
            found |= !strcmp(r->element[i]->str, want[w]);
        ck_assert_msg(found, "DEBUG HELP lacks %s", want[w]);
    }
}
END_TEST

/* ---- CLIENT NO-EVICT (default server) ---- */

static char *client_flags(redisContext *c) {
    redisReply *r = it_cmd(c, "CLIENT INFO");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    const char *p = strstr(r->str, " flags=");
    ck_assert_ptr_nonnull(p);
    p += 7;
    return it_fmt("%.*s", (int)strcspn(p, " "), p);
}

START_TEST(test_client_no_evict) {
    ck_assert_str_eq(client_flags(C), "N");
    expect_ok(C, "CLIENT NO-EVICT on");
    ck_assert_str_eq(client_flags(C), "e");
    redisReply *r = it_cmd(C, "CLIENT LIST");
    ck_assert_ptr_nonnull(strstr(r->str, " flags=e "));
    expect_ok(C, "CLIENT NO-EVICT OFF");
    ck_assert_str_eq(client_flags(C), "N");
    expect_error(C, "ERR syntax error", "CLIENT NO-EVICT maybe");
    expect_error_prefix(C, "ERR wrong number of arguments", "CLIENT NO-EVICT");
    expect_ok(C, "CLIENT NO-EVICT ON");
    expect_reply(C, "+RESET", "RESET");
    ck_assert_str_eq(client_flags(C), "N"); /* RESET clears it, as Valkey's */
    /* another connection's setting is its own */
    redisContext *c2 = it_connect(S);
    expect_ok(c2, "CLIENT NO-EVICT on");
    ck_assert_str_eq(client_flags(C), "N");
    ck_assert_str_eq(client_flags(c2), "e");
}
END_TEST

int main(void) {
    Suite *s = suite_create("debug");
    TCase *tc = it_tcase_bare(s, "debug");
    tcase_add_test(tc, test_debug_refused_by_default);
    tcase_add_test(tc, test_protocol_resp2);
    tcase_add_test(tc, test_protocol_resp3);
    tcase_add_test(tc, test_protocol_resp3_bytes);
    tcase_add_test(tc, test_object);
    tcase_add_test(tc, test_shared_integers);
    tcase_add_test(tc, test_sleep);
    tcase_add_test(tc, test_active_expire_switch);
    tcase_add_test(tc, test_replybuffer);
    tcase_add_test(tc, test_populate_and_log);
    tcase_add_test(tc, test_persistence_and_help);
    tc = it_tcase(s, "client");
    tcase_add_test(tc, test_client_no_evict);
    return it_run(s);
}
