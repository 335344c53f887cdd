/* check_it_protocol.c -- the RESP request parser of a real keel-server, over
 * raw sockets: malformed multibulk input (bad lengths, a missing '$', bad
 * bulk lengths, unbalanced inline quotes, oversized inline/count lines) gets
 * Valkey's "-ERR Protocol error: ..." and the connection is closed while
 * other clients keep working; ignored input (empty lines, *0, *-10); inline
 * commands; requests split across writes; and 10,000 pipelined commands in
 * one write with every reply read back in order. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sends bad input on a fresh connection; expects the error, then the close,
 * while a bystander client keeps working. */
static void expect_protocol_error(const char *input, size_t len, const char *error) {
    redisContext *bystander = it_connect(S);
    expect_ok(bystander, "SET bystander alive");
    it_raw *r = it_raw_connect(S);
    it_raw_send(r, input, len); /* may fail part-way once the server closes */
    expect_raw(r, error);
    ck_assert_msg(it_raw_wait_closed(r, 5000), "connection not closed after: %s", error);
    expect_status(bystander, "PONG", "PING");
    expect_bulk(bystander, "alive", "GET bystander");
    it_raw_close(r);
}

#define PROTOCOL_ERROR(input, error) expect_protocol_error(input, sizeof(input) - 1, error)

START_TEST(test_empty_query) {
    it_raw *r = it_raw_connect(S);
    it_raw_sendstr(r, "\r\n");
    it_raw_sendstr(r, "\n\r\n*1\r\n$4\r\nPING\r\n");
    expect_raw(r, "+PONG");
}
END_TEST

START_TEST(test_zero_and_negative_multibulk) {
    it_raw *r = it_raw_connect(S);
    it_raw_sendstr(r, "*0\r\n*-10\r\n*-1\r\n");
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+PONG");
}
END_TEST

START_TEST(test_out_of_range_multibulk_length) {
    PROTOCOL_ERROR("*3000000000\r\n", "-ERR Protocol error: invalid multibulk length");
}
END_TEST

START_TEST(test_non_number_multibulk_length) {
    PROTOCOL_ERROR("*abc\r\n", "-ERR Protocol error: invalid multibulk length");
}
END_TEST

START_TEST(test_wrong_multibulk_payload_header) {
    PROTOCOL_ERROR("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
                   "-ERR Protocol error: expected '$', got 'f'");
}
END_TEST

START_TEST(test_multibulk_without_bulk) {
    PROTOCOL_ERROR("*1\r\nfoo\r\n", "-ERR Protocol error: expected '$', got 'f'");
}
END_TEST

START_TEST(test_bad_type_byte_in_multibulk) {
    PROTOCOL_ERROR("*2\r\n$4\r\nECHO\r\n:5\r\n", "-ERR Protocol error: expected '$', got ':'");
}
END_TEST

START_TEST(test_negative_bulk_length) {
    PROTOCOL_ERROR("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n",
                   "-ERR Protocol error: invalid bulk length");
}
END_TEST

START_TEST(test_out_of_range_bulk_length) {
    PROTOCOL_ERROR("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n",
                   "-ERR Protocol error: invalid bulk length");
}
END_TEST

START_TEST(test_non_number_bulk_length) {
    PROTOCOL_ERROR("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n",
                   "-ERR Protocol error: invalid bulk length");
}
END_TEST

START_TEST(test_bulk_length_over_proto_max_bulk_len) {
    expect_ok(C, "CONFIG SET proto-max-bulk-len 1mb");
    PROTOCOL_ERROR("*2\r\n$4\r\nECHO\r\n$1048577\r\n", "-ERR Protocol error: invalid bulk length");
    expect_bulk(C, "ok", "ECHO ok");
}
END_TEST

START_TEST(test_unbalanced_quotes) {
    PROTOCOL_ERROR("set \"\"\"test-key\"\"\" test-value\r\nping\r\n",
                   "-ERR Protocol error: unbalanced quotes in request");
}
END_TEST

START_TEST(test_unbalanced_single_quote) {
    PROTOCOL_ERROR("set 'foo bar\r\n", "-ERR Protocol error: unbalanced quotes in request");
}
END_TEST

/* A line that never ends: NUL stops the server's line search. */
static void send_unterminated(const char *head, size_t headlen, const char *error) {
    size_t len = 80 * 1024;
    char *buf = it_alloc(len);
    memcpy(buf, head, headlen);
    memset(buf + headlen, 'A', len - headlen);
    expect_protocol_error(buf, len, error);
}

START_TEST(test_too_big_inline_request) {
    send_unterminated("\0", 1, "-ERR Protocol error: too big inline request");
}
END_TEST

START_TEST(test_too_big_inline_request_dollar) {
    send_unterminated("$\0", 2, "-ERR Protocol error: too big inline request");
}
END_TEST

START_TEST(test_too_big_mbulk_count_string) {
    send_unterminated("*\0", 2, "-ERR Protocol error: too big mbulk count string");
}
END_TEST

START_TEST(test_too_big_bulk_count_string) {
    send_unterminated("*1\r\n$\0", 6, "-ERR Protocol error: too big bulk count string");
}
END_TEST

START_TEST(test_inline_commands) {
    it_raw *r = it_raw_connect(S);
    it_raw_sendstr(r, "PING\r\n");
    expect_raw(r, "+PONG");
    it_raw_sendstr(r, "SET k v\r\nGET k\r\n");
    expect_raw(r, "+OK");
    expect_raw(r, "\"v\"");
    it_raw_sendstr(r, "set \"a b\" 'c d'\r\nget \"a b\"\r\n");
    expect_raw(r, "+OK");
    expect_raw(r, "\"c d\"");
    it_raw_sendstr(r, "SET esc \"\\x41\\n\\t\\\"\"\r\nGET esc\r\n");
    expect_raw(r, "+OK");
    expect_raw(r, "\"A\\n\\t\\\"\"");
    it_raw_sendstr(r, "  ECHO   spaced   \n");
    expect_raw(r, "\"spaced\"");
    it_raw_sendstr(r, "PING x y\r\n");
    expect_raw(r, "-ERR wrong number of arguments for 'ping' command");
    it_raw_sendstr(r, "NOSUCH a\r\n");
    expect_raw(r, "-ERR unknown command 'NOSUCH', with args beginning with: 'a' ");
    it_raw_sendstr(r, "!foo\r\n");
    expect_raw(r, "-ERR unknown command '!foo', with args beginning with: ");
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+PONG");
}
END_TEST

START_TEST(test_inline_pipeline_keyspace) {
    it_raw *r = it_raw_connect(S);
    it_raw_sendstr(r, "SET k1 xyzk\r\nGET k1\r\nPING\r\n");
    expect_raw(r, "+OK");
    expect_raw(r, "\"xyzk\"");
    expect_raw(r, "+PONG");
}
END_TEST

START_TEST(test_request_split_across_writes) {
    it_raw *r = it_raw_connect(S);
    it_raw_sendstr(r, "*3\r\n$3\r\nSE");
    it_sleep_ms(50);
    it_raw_sendstr(r, "T\r\n$1\r\nk\r");
    it_sleep_ms(50);
    it_raw_sendstr(r, "\n$5\r\nhel");
    it_sleep_ms(50);
    it_raw_sendstr(r, "lo\r\n");
    expect_raw(r, "+OK");
    const char *cmd = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    for (const char *p = cmd; *p; p++)
        it_raw_send(r, p, 1);
    expect_raw(r, "\"hello\"");
    it_raw_sendstr(r, "PI");
    it_sleep_ms(50);
    it_raw_sendstr(r, "NG\r\n");
    expect_raw(r, "+PONG");
}
END_TEST

START_TEST(test_empty_and_binary_bulks) {
    it_raw *r = it_raw_connect(S);
    it_raw_sendstr(r, "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n");
    expect_raw(r, "\"\"");
    static const char bin[] = "*3\r\n$3\r\nSET\r\n$3\r\nb\0n\r\n$4\r\n\r\n\0\xff\r\n";
    it_raw_send(r, bin, sizeof(bin) - 1);
    expect_raw(r, "+OK");
    expect_bulk_len(C, "\r\n\0\xff", 4, "GET %b", "b\0n", (size_t)3);
}
END_TEST

START_TEST(test_many_arguments) {
    /* MSET with 5000 pairs in one multibulk. */
    size_t cap = 200000, len = 0;
    char *buf = it_alloc(cap);
    len += (size_t)snprintf(buf + len, cap - len, "*10001\r\n$4\r\nMSET\r\n");
    for (int i = 0; i < 5000; i++) {
        char k[16], v[16];
        int kl = snprintf(k, sizeof(k), "k%d", i), vl = snprintf(v, sizeof(v), "v%d", i);
        len += (size_t)snprintf(buf + len, cap - len, "$%d\r\n%s\r\n$%d\r\n%s\r\n", kl, k, vl, v);
    }
    it_raw *r = it_raw_connect(S);
    it_raw_send(r, buf, len);
    expect_raw(r, "+OK");
    expect_int(C, 5000, "DBSIZE");
    expect_bulk(C, "v4999", "GET k4999");
}
END_TEST

START_TEST(test_pipeline_10000_in_one_write) {
    enum { N = 10000 };
    size_t cap = (size_t)N * 64, len = 0;
    char *buf = it_alloc(cap);
    for (int i = 0; i < N; i++) {
        char key[16];
        int kl = snprintf(key, sizeof(key), "key:%d", i / 3);
        switch (i % 3) {
        case 0:
            len += (size_t)snprintf(buf + len, cap - len,
                                    "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\n5\r\n", kl, key);
            break;
        case 1:
            len += (size_t)snprintf(buf + len, cap - len, "*2\r\n$4\r\nINCR\r\n$%d\r\n%s\r\n", kl,
                                    key);
            break;
        default:
            len +=
                (size_t)snprintf(buf + len, cap - len, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", kl, key);
            break;
        }
    }
    it_raw *r = it_raw_connect(S);
    ck_assert_int_eq(it_raw_send(r, buf, len), 0);
    for (int i = 0; i < N; i++) {
        it_value *v = it_raw_read(r);
        ck_assert_msg(v != NULL, "connection closed after %d replies", i);
        switch (i % 3) {
        case 0:
            ck_assert_msg(v->type == '+' && !strcmp(v->str, "OK"), "reply %d: not +OK", i);
            break;
        case 1:
            ck_assert_msg(v->type == ':' && v->integer == 6, "reply %d: not :6", i);
            break;
        default:
            ck_assert_msg(v->type == '$' && v->str && !strcmp(v->str, "6"), "reply %d: not \"6\"",
                          i);
            break;
        }
    }
    expect_int(C, (N + 2) / 3, "DBSIZE");
}
END_TEST

START_TEST(test_pipeline_10000_inline) {
    enum { N = 10000 };
    size_t cap = (size_t)N * 8;
    char *buf = it_alloc(cap);
    for (int i = 0; i < N; i++)
        memcpy(buf + i * 6, "PING\r\n", 6);
    it_raw *r = it_raw_connect(S);
    ck_assert_int_eq(it_raw_send(r, buf, (size_t)N * 6), 0);
    for (int i = 0; i < N; i++) {
        it_value *v = it_raw_read(r);
        ck_assert_msg(v && v->type == '+' && !strcmp(v->str, "PONG"), "reply %d is not +PONG", i);
    }
}
END_TEST

START_TEST(test_pipeline_hiredis) {
    enum { N = 10000 };
    for (int i = 0; i < N; i++)
        redisAppendCommand(C, "ECHO %d", i);
    for (int i = 0; i < N; i++) {
        redisReply *r;
        ck_assert_int_eq(redisGetReply(C, (void **)&r), REDIS_OK);
        int ok = r->type == REDIS_REPLY_STRING && atoi(r->str) == i;
        freeReplyObject(r);
        ck_assert_msg(ok, "ECHO %d: wrong reply", i);
    }
}
END_TEST

START_TEST(test_error_then_pipeline_stops) {
    /* Commands after the protocol error in the same write are not run. */
    it_raw *r = it_raw_connect(S);
    it_raw_sendstr(
        r, "*1\r\n$4\r\nPING\r\n*1\r\nfoo\r\n*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n1\r\n");
    expect_raw(r, "+PONG");
    expect_raw(r, "-ERR Protocol error: expected '$', got 'f'");
    ck_assert(it_raw_wait_closed(r, 5000));
    expect_int(C, 0, "EXISTS after");
}
END_TEST

START_TEST(test_protocol_error_counted) {
    long long before = it_info_int(C, "stats", "total_error_replies");
    PROTOCOL_ERROR("*1\r\nfoo\r\n", "-ERR Protocol error: expected '$', got 'f'");
    ck_assert_int_eq(it_info_int(C, "stats", "total_error_replies"), before + 1);
}
END_TEST

static Suite *protocol_suite(void) {
    Suite *s = suite_create("protocol");
    TCase *tc = it_tcase(s, "malformed");
    tcase_add_test(tc, test_empty_query);
    tcase_add_test(tc, test_zero_and_negative_multibulk);
    tcase_add_test(tc, test_out_of_range_multibulk_length);
    tcase_add_test(tc, test_non_number_multibulk_length);
    tcase_add_test(tc, test_wrong_multibulk_payload_header);
    tcase_add_test(tc, test_multibulk_without_bulk);
    tcase_add_test(tc, test_bad_type_byte_in_multibulk);
    tcase_add_test(tc, test_negative_bulk_length);
    tcase_add_test(tc, test_out_of_range_bulk_length);
    tcase_add_test(tc, test_non_number_bulk_length);
    tcase_add_test(tc, test_bulk_length_over_proto_max_bulk_len);
    tcase_add_test(tc, test_unbalanced_quotes);
    tcase_add_test(tc, test_unbalanced_single_quote);
    tcase_add_test(tc, test_too_big_inline_request);
    tcase_add_test(tc, test_too_big_inline_request_dollar);
    tcase_add_test(tc, test_too_big_mbulk_count_string);
    tcase_add_test(tc, test_too_big_bulk_count_string);
    tcase_add_test(tc, test_error_then_pipeline_stops);
    tcase_add_test(tc, test_protocol_error_counted);
    tc = it_tcase(s, "wellformed");
    tcase_add_test(tc, test_inline_commands);
    tcase_add_test(tc, test_inline_pipeline_keyspace);
    tcase_add_test(tc, test_request_split_across_writes);
    tcase_add_test(tc, test_empty_and_binary_bulks);
    tcase_add_test(tc, test_many_arguments);
    tcase_add_test(tc, test_pipeline_10000_in_one_write);
    tcase_add_test(tc, test_pipeline_10000_inline);
    tcase_add_test(tc, test_pipeline_hiredis);
    return s;
}

int main(void) {
    return it_run(protocol_suite());
}
