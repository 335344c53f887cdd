/* check_it_resp3.c -- RESP3 (HELLO 3) against a real keel-server, read with
 * the harness's own RESP3 parser (Debian's hiredis 0.14 predates RESP3):
 * the HELLO map, switching protocols back and forth, HELLO errors, RESP3
 * nulls (GET, MGET, SET NX, EXEC after WATCH), maps (CONFIG GET, COMMAND
 * DOCS), sets (COMMAND INFO flags), doubles (MEMORY STATS), verbatim
 * strings (INFO, CLIENT INFO/LIST), and replies that stay bulk strings
 * (INCRBYFLOAT). */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

START_TEST(test_hello3_map) {
    it_raw *r = it_raw_connect(S);
    it_raw_cmd(r, "HELLO", "3", NULL);
    it_value *v = it_raw_read(r);
    char buf[512];
    ck_assert_msg(v && v->type == '%', "HELLO 3: %s", it_vrender(v, buf, sizeof(buf)));
    ck_assert_int_eq(v->n, 14);
    const char *keys[] = {"server", "version", "proto", "id", "mode", "role", "modules"};
    for (int i = 0; i < 7; i++) {
        ck_assert_msg(v->elem[2 * i]->type == '$', "HELLO key %d is not a bulk string", i);
        ck_assert_str_eq(v->elem[2 * i]->str, keys[i]);
    }
    ck_assert_int_eq(it_map_get(v, "server")->type, '$');
    ck_assert_int_eq(it_map_get(v, "version")->type, '$');
    ck_assert_str_eq(it_vrender(it_map_get(v, "proto"), buf, sizeof(buf)), ":3");
    ck_assert_int_eq(it_map_get(v, "id")->type, ':');
    ck_assert_str_eq(it_vrender(it_map_get(v, "mode"), buf, sizeof(buf)), "\"standalone\"");
    ck_assert_str_eq(it_vrender(it_map_get(v, "role"), buf, sizeof(buf)), "\"master\"");
    ck_assert_str_eq(it_vrender(it_map_get(v, "modules"), buf, sizeof(buf)), "[]");
    /* The id is the CLIENT ID. */
    it_raw_cmd(r, "CLIENT", "ID", NULL);
    it_value *id = it_raw_read(r);
    ck_assert_int_eq(id->integer, it_map_get(v, "id")->integer);
}
END_TEST

START_TEST(test_hello_without_version) {
    /* HELLO alone answers in the current protocol: a flat array in RESP2. */
    redisReply *r = it_cmd(C, "HELLO");
    ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(r->elements, 14);
    ck_assert_str_eq(r->element[4]->str, "proto");
    ck_assert_int_eq(r->element[5]->integer, 2);
    it_raw *r3 = it_raw_connect_resp3(S);
    it_raw_cmd(r3, "HELLO", NULL);
    it_value *v = it_raw_read(r3);
    ck_assert_int_eq(v->type, '%');
    ck_assert_int_eq(it_map_get(v, "proto")->integer, 3);
}
END_TEST

START_TEST(test_hello_switch_back_to_2) {
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "GET", "nokey", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "HELLO", "2", NULL);
    it_value *v = it_raw_read(r);
    ck_assert_int_eq(v->type, '*');
    ck_assert_int_eq(v->n, 14);
    it_raw_cmd(r, "GET", "nokey", NULL);
    expect_raw(r, "nil");
    it_raw_cmd(r, "CONFIG", "GET", "maxmemory", NULL);
    expect_raw(r, "[\"maxmemory\",\"0\"]");
}
END_TEST

START_TEST(test_hello_errors) {
    expect_error(C, "NOPROTO unsupported protocol version", "HELLO 4");
    expect_error(C, "NOPROTO unsupported protocol version", "HELLO 1");
    expect_error(C, "ERR Protocol version is not an integer or out of range", "HELLO abc");
    expect_error(C, "ERR Syntax error in HELLO option 'FOO'", "HELLO 3 FOO");
    expect_error(C, "ERR Syntax error in HELLO option 'AUTH'", "HELLO 3 AUTH onlyuser");
    /* Still RESP2 after the errors. */
    expect_nil(C, "GET nokey");
}
END_TEST

START_TEST(test_hello_setname) {
    it_raw *r = it_raw_connect(S);
    it_raw_cmd(r, "HELLO", "3", "SETNAME", "myname", NULL);
    it_value *v = it_raw_read(r);
    ck_assert_int_eq(v->type, '%');
    it_raw_cmd(r, "CLIENT", "GETNAME", NULL);
    expect_raw(r, "\"myname\"");
    it_raw_cmd(r, "HELLO", "3", "SETNAME", "bad name", NULL);
    expect_raw(r, "-ERR Client names cannot contain spaces, newlines or special characters.");
}
END_TEST

START_TEST(test_resp3_nulls) {
    expect_ok(C, "SET a 1");
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "GET", "nokey", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "MGET", "a", "nokey", NULL);
    expect_raw(r, "[\"1\",_]");
    it_raw_cmd(r, "SET", "a", "2", "NX", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "GETDEL", "nokey", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "RANDOMKEY", NULL);
    expect_raw(r, "\"a\"");
    it_raw_cmd(r, "OBJECT", "ENCODING", "nokey", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "CLIENT", "GETNAME", NULL);
    expect_raw(r, "_");
}
END_TEST

START_TEST(test_resp3_exec_null_after_watch) {
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "WATCH", "x", NULL);
    expect_raw(r, "+OK");
    expect_ok(C, "SET x changed");
    it_raw_cmd(r, "MULTI", NULL);
    expect_raw(r, "+OK");
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+QUEUED");
    it_raw_cmd(r, "EXEC", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "MULTI", NULL);
    expect_raw(r, "+OK");
    it_raw_cmd(r, "GET", "nokey", NULL);
    expect_raw(r, "+QUEUED");
    it_raw_cmd(r, "EXEC", NULL);
    expect_raw(r, "[_]");
}
END_TEST

START_TEST(test_resp3_maps) {
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "CONFIG", "GET", "maxmemory", NULL);
    expect_raw(r, "{\"maxmemory\":\"0\"}");
    it_raw_cmd(r, "CONFIG", "GET", "no-such-option", NULL);
    expect_raw(r, "{}");
    it_raw_cmd(r, "COMMAND", "DOCS", "get", NULL);
    it_value *v = it_raw_read(r);
    ck_assert_int_eq(v->type, '%');
    it_value *doc = it_map_get(v, "get");
    ck_assert_ptr_nonnull(doc);
    ck_assert_int_eq(doc->type, '%');
    ck_assert_str_eq(it_map_get(doc, "since")->str, "1.0.0");
    ck_assert_str_eq(it_map_get(doc, "group")->str, "string");
}
END_TEST

START_TEST(test_resp3_sets) {
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "COMMAND", "INFO", "get", NULL);
    it_value *v = it_raw_read(r);
    char buf[1024];
    ck_assert_msg(v && v->type == '*' && v->n == 1, "COMMAND INFO get: %s",
                  it_vrender(v, buf, sizeof(buf)));
    it_value *get = v->elem[0];
    ck_assert_int_eq(get->type, '*');
    ck_assert_int_ge(get->n, 7);
    ck_assert_str_eq(get->elem[0]->str, "get");
    ck_assert_msg(get->elem[2]->type == '~', "flags are not a RESP3 set: %s",
                  it_vrender(get->elem[2], buf, sizeof(buf)));
    ck_assert_msg(get->elem[6]->type == '~', "ACL categories are not a RESP3 set: %s",
                  it_vrender(get->elem[6], buf, sizeof(buf)));
    int readonly = 0;
    for (size_t i = 0; i < get->elem[2]->n; i++)
        readonly |= !strcmp(get->elem[2]->elem[i]->str, "readonly");
    ck_assert(readonly);
}
END_TEST

START_TEST(test_resp3_doubles) {
    expect_ok(C, "SET k v");
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "MEMORY", "STATS", NULL);
    it_value *v = it_raw_read(r);
    char buf[2048];
    ck_assert_msg(v && v->type == '%', "MEMORY STATS: %s", it_vrender(v, buf, sizeof(buf)));
    ck_assert_int_eq(it_map_get(v, "keys.count")->type, ':');
    ck_assert_int_eq(it_map_get(v, "keys.count")->integer, 1);
    static const char *const doubles[] = {"dataset.percentage", "peak.percentage", "fragmentation"};
    for (int i = 0; i < 3; i++) {
        it_value *d = it_map_get(v, doubles[i]);
        ck_assert_msg(d != NULL, "MEMORY STATS has no %s", doubles[i]);
        ck_assert_msg(d->type == ',', "%s is not a RESP3 double: %s", doubles[i],
                      it_vrender(d, buf, sizeof(buf)));
        char *end;
        strtod(d->str, &end);
        ck_assert_msg(*end == '\0', "%s: bad double %s", doubles[i], d->str);
    }
    /* In RESP2 the same doubles are bulk strings. */
    redisReply *r2 = it_cmd(C, "MEMORY STATS");
    ck_assert_int_eq(r2->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i + 1 < r2->elements; i += 2)
        if (!strcmp(r2->element[i]->str, "fragmentation"))
            ck_assert_int_eq(r2->element[i + 1]->type, REDIS_REPLY_STRING);
}
END_TEST

START_TEST(test_resp3_incrbyfloat_stays_bulk) {
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "INCRBYFLOAT", "f", "1.5", NULL);
    expect_raw(r, "\"1.5\"");
    it_raw_cmd(r, "INCR", "i", NULL);
    expect_raw(r, ":1");
    it_raw_cmd(r, "TTL", "i", NULL);
    expect_raw(r, ":-1");
}
END_TEST

START_TEST(test_resp3_verbatim) {
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "INFO", "server", NULL);
    it_value *v = it_raw_read(r);
    ck_assert_msg(v && v->type == '=', "INFO in RESP3 is not a verbatim string");
    ck_assert_msg(strncmp(v->str, "txt:", 4) == 0, "INFO verbatim format: %.10s", v->str);
    ck_assert_msg(strstr(v->str, "# Server\r\n") != NULL, "INFO verbatim body: %.60s", v->str);
    it_raw_cmd(r, "CLIENT", "INFO", NULL);
    v = it_raw_read(r);
    ck_assert_msg(v && v->type == '=' && strncmp(v->str, "txt:id=", 7) == 0,
                  "CLIENT INFO in RESP3: not verbatim");
    it_raw_cmd(r, "CLIENT", "LIST", NULL);
    v = it_raw_read(r);
    ck_assert_msg(v && v->type == '=' && strncmp(v->str, "txt:id=", 7) == 0,
                  "CLIENT LIST in RESP3: not verbatim");
    /* Plain strings are still bulk strings. */
    it_raw_cmd(r, "ECHO", "txt:x", NULL);
    expect_raw(r, "\"txt:x\"");
}
END_TEST

START_TEST(test_resp3_unchanged_replies) {
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "SET", "k", "v", NULL);
    expect_raw(r, "+OK");
    it_raw_cmd(r, "SCAN", "0", NULL);
    expect_raw(r, "[\"0\",[\"k\"]]");
    it_raw_cmd(r, "KEYS", "*", NULL);
    expect_raw(r, "[\"k\"]");
    it_raw_cmd(r, "NOSUCH", NULL);
    expect_raw(r, "-ERR unknown command 'NOSUCH', with args beginning with: ");
    it_raw_cmd(r, "PING", NULL);
    expect_raw(r, "+PONG");
}
END_TEST

START_TEST(test_reset_returns_to_resp2) {
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "RESET", NULL);
    expect_raw(r, "+RESET");
    it_raw_cmd(r, "GET", "nokey", NULL);
    expect_raw(r, "nil");
}
END_TEST

START_TEST(test_resp3_pipeline) {
    it_raw *r = it_raw_connect_resp3(S);
    for (int i = 0; i < 1000; i++)
        it_raw_cmd(r, "GET", "nokey", NULL);
    for (int i = 0; i < 1000; i++)
        expect_raw(r, "_");
}
END_TEST

static Suite *resp3_suite(void) {
    Suite *s = suite_create("resp3");
    TCase *tc = it_tcase(s, "resp3");
    tcase_add_test(tc, test_hello3_map);
    tcase_add_test(tc, test_hello_without_version);
    tcase_add_test(tc, test_hello_switch_back_to_2);
    tcase_add_test(tc, test_hello_errors);
    tcase_add_test(tc, test_hello_setname);
    tcase_add_test(tc, test_resp3_nulls);
    tcase_add_test(tc, test_resp3_exec_null_after_watch);
    tcase_add_test(tc, test_resp3_maps);
    tcase_add_test(tc, test_resp3_sets);
    tcase_add_test(tc, test_resp3_doubles);
    tcase_add_test(tc, test_resp3_incrbyfloat_stays_bulk);
    tcase_add_test(tc, test_resp3_verbatim);
    tcase_add_test(tc, test_resp3_unchanged_replies);
    tcase_add_test(tc, test_reset_returns_to_resp2);
    tcase_add_test(tc, test_resp3_pipeline);
    return s;
}

int main(void) {
    return it_run(resp3_suite());
}
