/* check_reply.c -- unit tests for the reply layer (core/session/reply.c):
 * deferred array/map/set headers in RESP2 and RESP3, nested ones filled in
 * either order, a header reserved when the tail block is full, elements
 * spilling into later blocks, CLIENT REPLY OFF/SKIP, the output byte count,
 * KEYS (which replies through a deferred header), and reply capture
 * (PING/SET/GET/HELLO through reply_capture_run, read back with the RESP
 * parser).
 *
 * Replies are appended to a connection-less client and read off its chain
 * with reply_take, which also checks what a writer would see. */
#include "common/common.h"
#include "config/config.h"
#include "event/event.h"
#include "session/command.h"
#include "keyspace/db.h"
#include "protocol/resp_parse.h"
#include "server/server.h"
#include "server/server_config.h"
#include "session/client.h"
#include "session/reply.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static client *c;

static void setup(void) {
    c = client_create(NULL);
}

static void teardown(void) {
    client_free(c);
    db_flush_all();
    client_handle_pending_writes();
}

/* The chain's unsent bytes must be what reply_bytes says: the write path
 * sends reply_bytes bytes by walking the chain. */
static void check_accounting(const client *cl) {
    size_t n = 0;
    for (const reply_block *b = cl->reply_head; b; b = b->next) {
        ck_assert_uint_le(b->sent, b->used);
        if (!b->obj) ck_assert_uint_le(b->used, b->size);
        n += b->used - b->sent;
    }
    ck_assert_uint_eq(n, cl->reply_bytes);
}

/* After reply_take: no block, or the one emptied buffer block it keeps for
 * the next reply. */
static void expect_chain_empty(const client *cl) {
    const reply_block *b = cl->reply_head;
    ck_assert(b == NULL || (b->next == NULL && b->obj == NULL && b->used == 0 && b->sent == 0));
    ck_assert_ptr_eq(cl->reply_tail, b);
}

/* Takes c's replies (checking that no header is left open) and compares
 * them with want. */
static void expect_taken(const char *want, size_t want_len) {
    ck_assert_int_eq(reply_deferred_open(c), 0);
    check_accounting(c);
    reply_buf out = {0};
    reply_take(c, &out);
    expect_chain_empty(c);
    ck_assert_uint_eq(c->reply_bytes, 0);
    ck_assert_msg(out.len == want_len && (want_len == 0 || memcmp(out.ptr, want, want_len) == 0),
                  "got \"%.*s\", want \"%s\"", (int)out.len, out.ptr ? out.ptr : "", want);
    reply_buf_free(&out);
}

#define EXPECT(lit) expect_taken(lit, sizeof(lit) - 1)

/* ---- deferred headers ---- */

START_TEST(test_deferred_array) {
    for (int resp = 2; resp <= 3; resp++) {
        c->resp = resp;
        reply_deferred h = reply_deferred_array(c);
        ck_assert_int_ne(h, REPLY_DEFERRED_NONE);
        ck_assert_int_eq(reply_deferred_open(c), 1);
        reply_bulk_cstr(c, "a");
        reply_int(c, 7);
        reply_set_deferred_len(c, h, 2);
        EXPECT("*2\r\n$1\r\na\r\n:7\r\n");
    }
}
END_TEST

START_TEST(test_deferred_empty_and_long) {
    reply_set_deferred_len(c, reply_deferred_array(c), 0);
    EXPECT("*0\r\n");
    /* The longest header fills the whole reserved room. */
    reply_simple(c, "x");
    reply_set_deferred_len(c, reply_deferred_array(c), -9223372036854775807LL - 1);
    reply_simple(c, "y");
    EXPECT("+x\r\n*-9223372036854775808\r\n+y\r\n");
    reply_set_deferred_len(c, reply_deferred_array(c), 123456789012LL);
    EXPECT("*123456789012\r\n");
}
END_TEST

START_TEST(test_deferred_map_set) {
    c->resp = 2;
    reply_deferred m = reply_deferred_map(c);
    reply_bulk_cstr(c, "k");
    reply_int(c, 1);
    reply_set_deferred_len(c, m, 1);
    reply_deferred s = reply_deferred_set(c);
    reply_bulk_cstr(c, "m");
    reply_set_deferred_len(c, s, 1);
    EXPECT("*2\r\n$1\r\nk\r\n:1\r\n*1\r\n$1\r\nm\r\n");

    c->resp = 3;
    m = reply_deferred_map(c);
    reply_bulk_cstr(c, "k");
    reply_int(c, 1);
    reply_set_deferred_len(c, m, 1);
    s = reply_deferred_set(c);
    reply_bulk_cstr(c, "m");
    reply_set_deferred_len(c, s, 1);
    EXPECT("%1\r\n$1\r\nk\r\n:1\r\n~1\r\n$1\r\nm\r\n");
}
END_TEST

/* [[1, 2], {a: []}] built with every header deferred. */
static void build_nested(int outer_first) {
    reply_deferred outer = reply_deferred_array(c);
    reply_deferred first = reply_deferred_array(c);
    reply_int(c, 1);
    reply_int(c, 2);
    reply_set_deferred_len(c, first, 2);
    reply_deferred map = reply_deferred_map(c);
    reply_bulk_cstr(c, "a");
    reply_deferred empty = reply_deferred_array(c);
    ck_assert_int_eq(reply_deferred_open(c), 3);
    if (outer_first) {
        /* Filling an outer header first shifts the inner ones' rooms. */
        reply_set_deferred_len(c, outer, 2);
        reply_set_deferred_len(c, map, 1);
        reply_set_deferred_len(c, empty, 0);
    } else {
        reply_set_deferred_len(c, empty, 0);
        reply_set_deferred_len(c, map, 1);
        reply_set_deferred_len(c, outer, 2);
    }
    ck_assert_ptr_null(c->reply_deferred);
}

START_TEST(test_deferred_nested) {
    c->resp = 2;
    build_nested(0);
    EXPECT("*2\r\n*2\r\n:1\r\n:2\r\n*2\r\n$1\r\na\r\n*0\r\n");
    c->resp = 3;
    build_nested(0);
    EXPECT("*2\r\n*2\r\n:1\r\n:2\r\n%1\r\n$1\r\na\r\n*0\r\n");
    build_nested(1);
    EXPECT("*2\r\n*2\r\n:1\r\n:2\r\n%1\r\n$1\r\na\r\n*0\r\n");
}
END_TEST

/* Many nested headers: the open ones outgrow the first slot array, and
 * they stay packed in one block. */
START_TEST(test_deferred_deep) {
    enum { depth = 50 };
    reply_deferred h[depth];
    for (int i = 0; i < depth; i++)
        h[i] = reply_deferred_array(c);
    reply_int(c, 0);
    for (int i = depth - 1; i >= 0; i--)
        reply_set_deferred_len(c, h[i], 1);
    ck_assert_ptr_eq(c->reply_head, c->reply_tail);
    char want[depth * 4 + 5];
    size_t n = 0;
    for (int i = 0; i < depth; i++)
        n += (size_t)snprintf(want + n, sizeof(want) - n, "*1\r\n");
    n += (size_t)snprintf(want + n, sizeof(want) - n, ":0\r\n");
    expect_taken(want, n);
}
END_TEST

/* The tail block has less room than a header needs: the header starts a
 * new block, and the old one is not written after its end. */
START_TEST(test_deferred_prev_block_full) {
    static char fill[CLIENT_REPLY_CHUNK];
    memset(fill, 'f', sizeof(fill));
    size_t first = CLIENT_REPLY_CHUNK - 10;
    reply_raw(c, fill, first);
    reply_block *prev = c->reply_tail;
    reply_deferred h = reply_deferred_array(c);
    ck_assert_ptr_ne(c->reply_tail, prev);
    ck_assert_uint_eq(prev->used, first);
    reply_int(c, 5);
    reply_set_deferred_len(c, h, 1);
    check_accounting(c);
    reply_buf out = {0};
    reply_take(c, &out);
    ck_assert_uint_eq(out.len, first + 8);
    ck_assert_int_eq(memcmp(out.ptr + first, "*1\r\n:5\r\n", 8), 0);
    reply_buf_free(&out);
}
END_TEST

/* Elements run on into later blocks (bytes and a value sent by reference):
 * closing up the header's block leaves them alone. */
START_TEST(test_deferred_spills_over_blocks) {
    static char big[3 * CLIENT_REPLY_CHUNK];
    memset(big, 'b', sizeof(big));
    kobj *o = obj_string(big, CLIENT_REPLY_REF_MIN);
    reply_simple(c, "start");
    reply_deferred h = reply_deferred_array(c);
    reply_bulk(c, big, sizeof(big));
    reply_bulk_obj(c, o);
    reply_int(c, 3);
    ck_assert_ptr_ne(c->reply_head, c->reply_tail);
    reply_set_deferred_len(c, h, 3);
    check_accounting(c);
    reply_buf out = {0};
    reply_take(c, &out);
    char head[64];
    int hl = snprintf(head, sizeof(head), "+start\r\n*3\r\n$%zu\r\n", sizeof(big));
    ck_assert_int_eq(memcmp(out.ptr, head, (size_t)hl), 0);
    char tail[64];
    int tl = snprintf(tail, sizeof(tail), "\r\n:3\r\n");
    ck_assert_int_eq(memcmp(out.ptr + out.len - (size_t)tl, tail, (size_t)tl), 0);
    size_t want =
        (size_t)hl + sizeof(big) + 2 + strlen("$16384\r\n") + CLIENT_REPLY_REF_MIN + 2 + 4;
    ck_assert_uint_eq(out.len, want);
    reply_buf_free(&out);
    obj_decref(o);
}
END_TEST

START_TEST(test_deferred_reply_off) {
    c->flags |= CLIENT_REPLY_OFF;
    reply_deferred h = reply_deferred_map(c);
    ck_assert_int_eq(h, REPLY_DEFERRED_NONE);
    ck_assert_int_eq(reply_deferred_open(c), 0);
    reply_int(c, 1);
    reply_set_deferred_len(c, h, 1);
    ck_assert_ptr_null(c->reply_head);
    ck_assert_uint_eq(c->reply_bytes, 0);
    c->flags &= ~CLIENT_REPLY_OFF;
    c->flags |= CLIENT_REPLY_SKIP;
    ck_assert_int_eq(reply_deferred_set(c), REPLY_DEFERRED_NONE);
    c->flags &= ~CLIENT_REPLY_SKIP;
    EXPECT("");
}
END_TEST

/* ---- capture ---- */

static void capture(const char **argv, const char *want) {
    karg args[8];
    int argc = 0;
    for (; argv[argc]; argc++)
        args[argc] = (karg){argv[argc], strlen(argv[argc]), NULL};
    reply_buf out = {0};
    ck_assert_int_eq(reply_capture_run(c, argc, args, &out), K_OK);
    ck_assert_msg(out.len == strlen(want) && (out.len == 0 || memcmp(out.ptr, want, out.len) == 0),
                  "got \"%.*s\", want \"%s\"", (int)out.len, out.ptr ? out.ptr : "", want);
    expect_chain_empty(c);
    ck_assert_int_eq(c->argc, 0);
    reply_buf_free(&out);
}

#define CAPTURE(want, ...) capture((const char *[]){__VA_ARGS__, NULL}, want)

START_TEST(test_capture_commands) {
    CAPTURE("+PONG\r\n", "PING");
    CAPTURE("$2\r\nhi\r\n", "PING", "hi");
    CAPTURE("+OK\r\n", "SET", "k", "v");
    CAPTURE("$1\r\nv\r\n", "GET", "k");
    CAPTURE("$-1\r\n", "GET", "missing");
    CAPTURE("*1\r\n$1\r\nk\r\n", "KEYS", "*");
    CAPTURE("*0\r\n", "KEYS", "nomatch*");
    CAPTURE("-ERR wrong number of arguments for 'get' command\r\n", "GET");
    CAPTURE("", "CLIENT", "REPLY", "OFF");
    CAPTURE("", "KEYS", "*");
    CAPTURE("+OK\r\n", "CLIENT", "REPLY", "ON");
    CAPTURE("", "CLIENT", "REPLY", "SKIP");
    CAPTURE("", "KEYS", "*");
    CAPTURE("*1\r\n$1\r\nk\r\n", "KEYS", "*");
    ck_assert_ptr_null(client_current());
}
END_TEST

/* A client cannot capture into itself; after a capture no client is left
 * current. */
START_TEST(test_capture_refusals) {
    CAPTURE("+PONG\r\n", "PING");
    ck_assert_ptr_null(client_current());
    reply_buf out = {0};
    karg ping = {"PING", 4, NULL};
    c->flags |= CLIENT_PROTECTED;
    ck_assert_int_eq(reply_capture_run(c, 1, &ping, &out), K_ERR);
    c->flags &= ~CLIENT_PROTECTED;
    ck_assert_int_eq(reply_capture_run(c, 0, &ping, &out), K_ERR);
    ck_assert_uint_eq(out.len, 0);
    reply_buf_free(&out);
}
END_TEST

/* RESP3 after HELLO, and a captured array read back with the RESP parser
 * (a reply of bulk strings has the shape of a request). */
START_TEST(test_capture_resp3_and_parse) {
    karg hello[2] = {{"HELLO", 5, NULL}, {"3", 1, NULL}};
    reply_buf out = {0};
    ck_assert_int_eq(reply_capture_run(c, 2, hello, &out), K_OK);
    ck_assert_int_eq(c->resp, 3);
    ck_assert_int_eq(out.ptr[0], '%');
    out.len = 0;
    CAPTURE("_\r\n", "GET", "missing");
    CAPTURE("+OK\r\n", "SET", "key", "value");
    karg keys[2] = {{"KEYS", 4, NULL}, {"k*", 2, NULL}};
    ck_assert_int_eq(reply_capture_run(c, 2, keys, &out), K_OK);
    resp_parser p;
    resp_parser_init(&p);
    ck_assert_int_eq(resp_parse(&p, out.ptr, out.len), RESP_COMPLETE);
    ck_assert_int_eq(p.argc, 1);
    ck_assert_uint_eq(p.consumed, out.len);
    ck_assert_uint_eq(p.argv[0].len, 3);
    ck_assert_int_eq(memcmp(out.ptr + p.argv[0].off, "key", 3), 0);
    resp_parser_free(&p);
    reply_buf_free(&out);
}
END_TEST

static Suite *reply_suite(void) {
    Suite *s = suite_create("reply");
    TCase *tc = tcase_create("deferred");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_deferred_array);
    tcase_add_test(tc, test_deferred_empty_and_long);
    tcase_add_test(tc, test_deferred_map_set);
    tcase_add_test(tc, test_deferred_nested);
    tcase_add_test(tc, test_deferred_deep);
    tcase_add_test(tc, test_deferred_prev_block_full);
    tcase_add_test(tc, test_deferred_spills_over_blocks);
    tcase_add_test(tc, test_deferred_reply_off);
    suite_add_tcase(s, tc);
    tc = tcase_create("capture");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_capture_commands);
    tcase_add_test(tc, test_capture_refusals);
    tcase_add_test(tc, test_capture_resp3_and_parse);
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
    SRunner *sr = srunner_create(reply_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    server_teardown();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
