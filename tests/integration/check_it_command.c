/* check_it_command.c -- COMMAND and its subcommands against a real
 * keel-server: the replies of COMMAND INFO, DOCS, GETKEYS(ANDFLAGS) and
 * LIST, in RESP2 and RESP3, as Valkey 8.0.1 gives them for the same
 * commands (compared with a Valkey server when written; Keel leaves out
 * Valkey's free text: key spec notes, history, argument summaries). */
#include "harness.h"

#include <string.h>

/* ---- COMMAND INFO ---- */

START_TEST(test_info_shapes) {
    expect_reply(
        C,
        "[[\"get\",:2,[+readonly,+fast],:1,:1,:1,[+@read,+@string,+@fast],[],"
        "[[\"flags\",[+RO,+access],\"begin_search\",[\"type\",\"index\",\"spec\",[\"index\",:1]],"
        "\"find_keys\",[\"type\",\"range\",\"spec\",[\"lastkey\",:0,\"keystep\",:1,\"limit\",:0]]]]"
        ",[]]]",
        "COMMAND INFO get");
    expect_reply(
        C,
        "[[\"mset\",:-3,[+write,+denyoom],:1,:-1,:2,[+@write,+@string,+@slow],"
        "[\"request_policy:multi_shard\",\"response_policy:all_succeeded\"],"
        "[[\"flags\",[+OW,+update],\"begin_search\",[\"type\",\"index\",\"spec\",[\"index\",:1]],"
        "\"find_keys\",[\"type\",\"range\",\"spec\",[\"lastkey\",:-1,\"keystep\",:2,\"limit\",:0]]]"
        "],[]]]",
        "COMMAND INFO mset");
    /* Subcommands by fullname, their key at 2. */
    expect_reply(C,
                 "[[\"memory|usage\",:-3,[+readonly],:2,:2,:1,[+@read,+@slow],[],"
                 "[[\"flags\",[+RO],\"begin_search\",[\"type\",\"index\",\"spec\",[\"index\",:2]],"
                 "\"find_keys\",[\"type\",\"range\",\"spec\",[\"lastkey\",:0,\"keystep\",:1,"
                 "\"limit\",:0]]]],[]]]",
                 "COMMAND INFO memory|usage");
    expect_reply(C,
                 "[[\"client|no-touch\",:3,[+noscript,+loading,+stale],:0,:0,:0,[+@slow,+@"
                 "connection],[],[],[]]]",
                 "COMMAND INFO client|no-touch");
    expect_reply(C, "[nil,nil,nil]", "COMMAND INFO get|key config|get|key nosuch");
    /* A container lists its subcommands, each a full entry. */
    redisReply *r = it_cmd(C, "COMMAND INFO config");
    ck_assert_int_eq(r->element[0]->elements, 10);
    redisReply *subs = r->element[0]->element[9];
    ck_assert_int_eq(subs->type, REDIS_REPLY_ARRAY);
    ck_assert_int_eq(subs->elements, 5);
    ck_assert_int_eq(subs->element[0]->elements, 10);
    ck_assert_str_eq(subs->element[0]->element[0]->str, "config|get");
}
END_TEST

START_TEST(test_info_resp3) {
    it_raw *r = it_raw_connect(S);
    it_raw_cmd(r, "HELLO", "3", NULL);
    ck_assert_ptr_nonnull(it_raw_read(r));
    it_raw_cmd(r, "COMMAND", "INFO", "expire", NULL);
    expect_raw(
        r,
        "[[\"expire\",:-3,~[+write,+fast],:1,:1,:1,~[+@keyspace,+@write,+@fast],~[],"
        "~[{\"flags\":~[+RW,+update],\"begin_search\":{\"type\":\"index\",\"spec\":{\"index\"::1}},"
        "\"find_keys\":{\"type\":\"range\",\"spec\":{\"lastkey\"::0,\"keystep\"::1,\"limit\"::0}}}]"
        ",~[]]]");
    it_raw_cmd(r, "COMMAND", "DOCS", "get", NULL);
    expect_raw(r,
               "{\"get\":{\"summary\":\"Returns the string value of a key.\",\"since\":\"1.0.0\","
               "\"group\":\"string\",\"complexity\":\"O(1)\",\"arguments\":[{\"name\":\"key\","
               "\"type\":\"key\","
               "\"display_text\":\"key\",\"key_spec_index\"::0}]}}");
    it_raw_cmd(r, "COMMAND", "GETKEYSANDFLAGS", "set", "k", "v", NULL);
    expect_raw(r, "[[\"k\",~[+OW,+update]]]");
}
END_TEST

/* ---- COMMAND DOCS ---- */

START_TEST(test_docs) {
    expect_reply(
        C,
        "[\"expire\",[\"summary\",\"Sets the expiration time of a key in "
        "seconds.\",\"since\",\"1.0.0\","
        "\"group\",\"generic\",\"complexity\",\"O(1)\",\"arguments\",[[\"name\",\"key\",\"type\","
        "\"key\","
        "\"display_text\",\"key\",\"key_spec_index\",:0],[\"name\",\"seconds\",\"type\","
        "\"integer\","
        "\"display_text\",\"seconds\"],[\"name\",\"condition\",\"type\",\"oneof\",\"since\",\"7.0."
        "0\","
        "\"flags\",[+optional],\"arguments\",[[\"name\",\"nx\",\"type\",\"pure-token\",\"display_"
        "text\","
        "\"nx\",\"token\",\"NX\"],[\"name\",\"xx\",\"type\",\"pure-token\",\"display_text\",\"xx\","
        "\"token\",\"XX\"],[\"name\",\"gt\",\"type\",\"pure-token\",\"display_text\",\"gt\","
        "\"token\","
        "\"GT\"],[\"name\",\"lt\",\"type\",\"pure-token\",\"display_text\",\"lt\",\"token\",\"LT\"]"
        "]]]]]",
        "COMMAND DOCS expire");
    /* Deprecation facts. */
    redisReply *r = it_cmd(C, "COMMAND DOCS getset");
    char buf[4096];
    const char *doc = it_render(r, buf, sizeof(buf));
    ck_assert_msg(
        strstr(doc, "\"doc_flags\",[+deprecated],\"deprecated_since\",\"6.2.0\",\"replaced_by\","),
        "%s", doc);
    /* Unknown names are left out; subcommands by fullname. */
    r = it_cmd(C, "COMMAND DOCS nosuch object|freq");
    ck_assert_int_eq(r->elements, 2);
    ck_assert_str_eq(r->element[0]->str, "object|freq");
    /* A container's docs hold its subcommands' docs. */
    r = it_cmd(C, "COMMAND DOCS slowlog");
    doc = it_render(r, buf, sizeof(buf));
    ck_assert_msg(strstr(doc, "\"subcommands\",[\"slowlog|get\",["), "%s", doc);
}
END_TEST

/* ---- COMMAND GETKEYS, GETKEYSANDFLAGS ---- */

START_TEST(test_getkeys) {
    expect_reply(C, "[[\"k1\",[+OW,+update]]]", "COMMAND GETKEYSANDFLAGS set k1 v1");
    expect_reply(C, "[[\"k1\",[+RW,+access,+update]]]",
                 "COMMAND GETKEYSANDFLAGS set k1 v1 ex 10 GET");
    expect_reply(C, "[[\"k1\",[+OW,+update]],[\"k2\",[+OW,+update]]]",
                 "COMMAND GETKEYSANDFLAGS mset k1 v1 k2 v2");
    expect_reply(C, "[[\"a\",[+RW,+access,+delete]],[\"b\",[+OW,+update]]]",
                 "COMMAND GETKEYSANDFLAGS rename a b");
    expect_reply(C, "[[\"a\",[+RO,+access]],[\"b\",[+OW,+update]]]",
                 "COMMAND GETKEYSANDFLAGS copy a b db 1");
    expect_reply(C, "[\"key\"]", "COMMAND GETKEYS memory usage key");
    expect_reply(C, "[\"a\",\"b\"]", "COMMAND GETKEYS watch a b");
    /* MSET with a dangling key: the keys of the complete pairs. */
    expect_reply(C, "[\"a\",\"b\"]", "COMMAND GETKEYS mset a 1 b");
    expect_error(C, "ERR Invalid command specified", "COMMAND GETKEYS nosuch a");
    expect_error(C, "ERR Invalid command specified", "COMMAND GETKEYS object nosuch k");
    expect_error(C, "ERR The command has no key arguments", "COMMAND GETKEYS ping");
    expect_error(C, "ERR The command has no key arguments", "COMMAND GETKEYSANDFLAGS memory stats");
    /* The key check comes before the count, as in Valkey. */
    expect_error(C, "ERR The command has no key arguments", "COMMAND GETKEYS ping a b c");
    expect_error(C, "ERR Invalid number of arguments specified for command", "COMMAND GETKEYS get");
    expect_error(C, "ERR Invalid number of arguments specified for command",
                 "COMMAND GETKEYS get a b");
}
END_TEST

/* ---- COMMAND LIST, COUNT ---- */

START_TEST(test_list_filters) {
    expect_reply(C, "[\"set\"]", "COMMAND LIST FILTERBY PATTERN set");
    expect_reply(C, "[]", "COMMAND LIST FILTERBY PATTERN nosuch*");
    {
        redisReply *r = it_cmd(C, "COMMAND LIST FILTERBY PATTERN config|*re*");
        ck_assert_str_eq(it_sorted_join(r), "config|resetstat,config|rewrite");
        r = it_cmd(C, "COMMAND LIST FILTERBY PATTERN cl*help");
        ck_assert_str_eq(it_sorted_join(r), "client|help");
        r = it_cmd(C, "COMMAND LIST FILTERBY ACLCAT transaction");
        ck_assert_str_eq(it_sorted_join(r), "discard,exec,multi,unwatch,watch");
        r = it_cmd(C, "COMMAND LIST FILTERBY ACLCAT STRING");
        char *names = it_fmt(",%s,", it_sorted_join(r));
        ck_assert_msg(strstr(names, ",get,") && strstr(names, ",incrbyfloat,") &&
                          !strstr(names, ",del,"),
                      "%s", names);
    }
    expect_reply(C, "[]", "COMMAND LIST FILTERBY ACLCAT nosuchcategory");
    expect_reply(C, "[]", "COMMAND LIST FILTERBY MODULE nosuchmodule");
    expect_error(C, "ERR syntax error", "COMMAND LIST bad_arg");
    expect_error(C, "ERR syntax error", "COMMAND LIST FILTERBY bad_arg");
    expect_error(C, "ERR syntax error", "COMMAND LIST FILTERBY bad_arg bad_arg2");
    expect_error(C, "ERR syntax error", "COMMAND LIST FILTERBY PATTERN a extra");
}
END_TEST

int main(void) {
    Suite *s = suite_create("command");
    TCase *tc = it_tcase(s, "command");
    tcase_add_test(tc, test_info_shapes);
    tcase_add_test(tc, test_info_resp3);
    tcase_add_test(tc, test_docs);
    tcase_add_test(tc, test_getkeys);
    tcase_add_test(tc, test_list_filters);
    return it_run(s);
}
