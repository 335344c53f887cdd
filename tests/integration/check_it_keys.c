/* check_it_keys.c -- the keyspace commands against a real keel-server: DEL,
 * UNLINK, EXISTS, TOUCH, TYPE, RENAME, RENAMENX, COPY, MOVE, KEYS (glob
 * patterns), SCAN (cursor, MATCH, COUNT, TYPE), RANDOMKEY, DBSIZE, SELECT,
 * SWAPDB, FLUSHDB, FLUSHALL, OBJECT, MEMORY USAGE and unknown-command
 * errors, with Valkey's exact replies. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define ERR_NOT_INT "ERR value is not an integer or out of range"
#define ERR_SYNTAX "ERR syntax error"

static void set_keys(const char *const *keys) {
    for (; *keys; keys++)
        expect_ok(C, "SET %s x", *keys);
}

START_TEST(test_del) {
    expect_ok(C, "SET x foo");
    expect_int(C, 1, "DEL x");
    expect_nil(C, "GET x");
    expect_int(C, 0, "DEL x");
    expect_error(C, "ERR wrong number of arguments for 'del' command", "DEL");
}
END_TEST

START_TEST(test_del_vararg) {
    expect_ok(C, "MSET foo1 a foo2 b foo3 c");
    expect_int(C, 3, "DEL foo1 foo2 foo3 foo4");
    expect_reply(C, "[nil,nil,nil]", "MGET foo1 foo2 foo3");
    expect_int(C, 0, "DBSIZE");
}
END_TEST

START_TEST(test_unlink) {
    expect_ok(C, "MSET a 1 b 2 c 3");
    expect_int(C, 2, "UNLINK a b z");
    expect_int(C, 1, "DBSIZE");
    expect_bulk(C, "3", "GET c");
}
END_TEST

START_TEST(test_exists) {
    expect_int(C, 0, "EXISTS newkey");
    expect_ok(C, "SET newkey test");
    expect_int(C, 1, "EXISTS newkey");
    expect_int(C, 3, "EXISTS newkey newkey newkey");
    expect_int(C, 1, "EXISTS newkey nokey");
    expect_int(C, 1, "DEL newkey");
    expect_int(C, 0, "EXISTS newkey");
}
END_TEST

START_TEST(test_zero_length_key) {
    expect_ok(C, "SET %s foo", "");
    expect_bulk(C, "foo", "GET %s", "");
    expect_int(C, 1, "EXISTS %s", "");
    expect_int(C, 1, "DBSIZE");
    expect_int(C, 1, "DEL %s", "");
}
END_TEST

START_TEST(test_touch) {
    expect_ok(C, "MSET a 1 b 2");
    expect_int(C, 2, "TOUCH a b c");
    expect_int(C, 0, "TOUCH c");
}
END_TEST

START_TEST(test_type) {
    expect_ok(C, "SET k v");
    expect_status(C, "string", "TYPE k");
    expect_status(C, "none", "TYPE nokey");
    expect_ok(C, "SET n 12345");
    expect_status(C, "string", "TYPE n");
}
END_TEST

START_TEST(test_keys_patterns) {
    static const char *const keys[] = {"key_x", "key_y", "key_z", "foo_a", "foo_b", "foo_c", NULL};
    set_keys(keys);
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS foo*")), "foo_a,foo_b,foo_c");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS *")), "foo_a,foo_b,foo_c,key_x,key_y,key_z");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS *_?")), "foo_a,foo_b,foo_c,key_x,key_y,key_z");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS key_[xz]")), "key_x,key_z");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS key_[^x]")), "key_y,key_z");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS foo_[a-b]")), "foo_a,foo_b");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS nomatch*")), "");
    expect_int(C, 6, "DBSIZE");
}
END_TEST

START_TEST(test_keys_glob_docs) {
    static const char *const keys[] = {"hello",    "hallo", "hxllo", "hllo",
                                       "heeeello", "a*b",   "axb",   NULL};
    set_keys(keys);
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS h?llo")), "hallo,hello,hxllo");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS h*llo")), "hallo,heeeello,hello,hllo,hxllo");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS h[ae]llo")), "hallo,hello");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS h[^e]llo")), "hallo,hxllo");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS h[a-b]llo")), "hallo");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS %s", "a\\*b")), "a*b");
    ck_assert_str_eq(it_sorted_join(it_cmd(C, "KEYS a*b")), "a*b,axb");
}
END_TEST

START_TEST(test_keys_long_pattern) {
    /* Valkey regression: pathological patterns must return quickly. */
    expect_ok(C, "SET %s 1", "dlskeriewrioeuwqoirueioqwrueoqwrueqw");
    ck_assert_str_eq(
        it_sorted_join(
            it_cmd(C, "KEYS %s", "*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*")),
        "dlskeriewrioeuwqoirueioqwrueoqwrueqw");
    expect_reply(C, "[]", "KEYS %s", "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b");
}
END_TEST

START_TEST(test_dbsize) {
    expect_int(C, 0, "DBSIZE");
    expect_ok(C, "MSET a 1 b 2 c 3");
    expect_int(C, 3, "DBSIZE");
    expect_error(C, "ERR wrong number of arguments for 'dbsize' command", "DBSIZE x");
}
END_TEST

START_TEST(test_rename) {
    expect_ok(C, "SET mykey hello");
    expect_ok(C, "RENAME mykey mykey1");
    expect_ok(C, "RENAME mykey1 mykey2");
    expect_bulk(C, "hello", "GET mykey2");
    expect_int(C, 0, "EXISTS mykey mykey1");
    expect_ok(C, "MSET mykey a mykey2 b");
    expect_ok(C, "RENAME mykey mykey2");
    expect_bulk(C, "a", "GET mykey2");
    expect_int(C, 0, "EXISTS mykey");
}
END_TEST

START_TEST(test_rename_errors_and_same_key) {
    expect_error(C, "ERR no such key", "RENAME nokey foo");
    expect_error(C, "ERR no such key", "RENAME nokey nokey");
    expect_ok(C, "SET mykey a");
    expect_ok(C, "RENAME mykey mykey");
    expect_bulk(C, "a", "GET mykey");
    expect_int(C, 0, "RENAMENX mykey mykey");
    expect_error(C, "ERR no such key", "RENAMENX nokey foo");
}
END_TEST

START_TEST(test_renamenx) {
    expect_ok(C, "SET mykey foobar");
    expect_int(C, 1, "RENAMENX mykey mykey2");
    expect_bulk(C, "foobar", "GET mykey2");
    expect_int(C, 0, "EXISTS mykey");
    expect_ok(C, "SET mykey foo");
    expect_int(C, 0, "RENAMENX mykey mykey2");
    expect_reply(C, "[\"foo\",\"foobar\"]", "MGET mykey mykey2");
}
END_TEST

START_TEST(test_rename_ttl) {
    expect_ok(C, "SET mykey foo EX 100");
    expect_ok(C, "RENAME mykey mykey2");
    expect_int_range(C, 90, 100, "TTL mykey2");
    expect_ok(C, "SET dst x EX 100");
    expect_ok(C, "SET src y");
    expect_ok(C, "RENAME src dst");
    expect_int(C, -1, "TTL dst");
}
END_TEST

START_TEST(test_copy) {
    expect_ok(C, "SET mykey foobar");
    expect_int(C, 1, "COPY mykey mynewkey");
    expect_bulk(C, "foobar", "GET mynewkey");
    expect_ok(C, "SET mykey changed");
    expect_bulk(C, "foobar", "GET mynewkey");
    expect_int(C, 0, "COPY mykey mynewkey");
    expect_bulk(C, "foobar", "GET mynewkey");
    expect_int(C, 1, "COPY mykey mynewkey REPLACE");
    expect_bulk(C, "changed", "GET mynewkey");
    expect_int(C, 0, "COPY nokey x");
    expect_int(C, 0, "EXISTS x");
}
END_TEST

START_TEST(test_copy_db_and_ttl) {
    expect_ok(C, "SET mykey foobar EX 100");
    expect_int(C, 1, "COPY mykey mykey DB 1");
    expect_int(C, 1, "COPY mykey other");
    expect_int_range(C, 90, 100, "TTL other");
    expect_ok(C, "SELECT 1");
    expect_bulk(C, "foobar", "GET mykey");
    expect_int_range(C, 90, 100, "TTL mykey");
    expect_ok(C, "SELECT 0");
    expect_ok(C, "SET plain v");
    expect_int(C, 1, "COPY plain plain2");
    expect_int(C, -1, "TTL plain2");
}
END_TEST

START_TEST(test_copy_errors) {
    expect_ok(C, "SET mykey foobar");
    expect_error(C, "ERR source and destination objects are the same", "COPY mykey mykey");
    expect_error(C, "ERR source and destination objects are the same", "COPY mykey mykey DB 0");
    expect_error(C, ERR_NOT_INT, "COPY mykey mynewkey DB notanint");
    expect_error(C, "ERR DB index is out of range", "COPY mykey mynewkey DB 100");
    expect_error(C, ERR_SYNTAX, "COPY mykey mynewkey BADOPT");
    expect_int(C, 1, "DBSIZE");
}
END_TEST

START_TEST(test_move) {
    expect_ok(C, "SET mykey foo EX 100");
    expect_int(C, 1, "MOVE mykey 1");
    expect_int(C, 0, "EXISTS mykey");
    expect_ok(C, "SELECT 1");
    expect_bulk(C, "foo", "GET mykey");
    expect_int_range(C, 90, 100, "TTL mykey");
    expect_ok(C, "SET plain bar");
    expect_int(C, 1, "MOVE plain 0");
    expect_ok(C, "SELECT 0");
    expect_bulk(C, "bar", "GET plain");
    expect_int(C, -1, "TTL plain");
}
END_TEST

START_TEST(test_move_conflicts_and_errors) {
    expect_ok(C, "SET mykey foo");
    expect_ok(C, "SELECT 1");
    expect_ok(C, "SET mykey bar");
    expect_ok(C, "SELECT 0");
    expect_int(C, 0, "MOVE mykey 1");
    expect_bulk(C, "foo", "GET mykey");
    expect_int(C, 0, "MOVE nokey 1");
    expect_error(C, ERR_NOT_INT, "MOVE mykey notanint");
    expect_error(C, "ERR DB index is out of range", "MOVE mykey 100");
    expect_error(C, "ERR source and destination objects are the same", "MOVE mykey 0");
}
END_TEST

START_TEST(test_select) {
    expect_ok(C, "SET mykey hello");
    expect_ok(C, "SELECT 9");
    expect_nil(C, "GET mykey");
    expect_ok(C, "SET mykey world");
    expect_int(C, 1, "DBSIZE");
    expect_ok(C, "SELECT 0");
    expect_bulk(C, "hello", "GET mykey");
    expect_ok(C, "SELECT 15");
    expect_error(C, "ERR DB index is out of range", "SELECT 16");
    expect_error(C, "ERR DB index is out of range", "SELECT -1");
    expect_error(C, ERR_NOT_INT, "SELECT abc");
    expect_nil(C, "GET mykey"); /* still in 15 */
}
END_TEST

START_TEST(test_select_is_per_connection) {
    redisContext *c2 = it_connect(S);
    expect_ok(C, "SELECT 1");
    expect_ok(C, "SET k one");
    expect_nil(c2, "GET k");
    expect_ok(c2, "SELECT 1");
    expect_bulk(c2, "one", "GET k");
}
END_TEST

START_TEST(test_swapdb) {
    redisContext *c2 = it_connect(S);
    expect_ok(C, "SET a db0");
    expect_ok(C, "SELECT 1");
    expect_ok(C, "MSET a db1 b db1");
    expect_ok(C, "SELECT 0");
    expect_ok(C, "SWAPDB 0 1");
    expect_reply(C, "[\"db1\",\"db1\"]", "MGET a b");
    expect_reply(c2, "[\"db1\",\"db1\"]", "MGET a b");
    expect_int(C, 2, "DBSIZE");
    expect_ok(C, "SELECT 1");
    expect_bulk(C, "db0", "GET a");
    expect_ok(C, "SWAPDB 1 1");
}
END_TEST

START_TEST(test_swapdb_errors) {
    expect_error(C, "ERR DB index is out of range", "SWAPDB 44 55");
    expect_error(C, "ERR invalid second DB index", "SWAPDB 44 a");
    expect_error(C, "ERR invalid first DB index", "SWAPDB a 55");
    expect_error(C, "ERR invalid first DB index", "SWAPDB a b");
    expect_error(C, "ERR wrong number of arguments for 'swapdb' command", "SWAPDB 0");
}
END_TEST

START_TEST(test_flushdb_flushall) {
    expect_ok(C, "MSET a 1 b 2");
    expect_ok(C, "SELECT 1");
    expect_ok(C, "SET c 3");
    expect_ok(C, "FLUSHDB");
    expect_int(C, 0, "DBSIZE");
    expect_ok(C, "SELECT 0");
    expect_int(C, 2, "DBSIZE");
    expect_ok(C, "FLUSHDB ASYNC");
    expect_int(C, 0, "DBSIZE");
    expect_ok(C, "SET a 1");
    expect_ok(C, "SELECT 2");
    expect_ok(C, "SET b 2");
    expect_ok(C, "FLUSHALL SYNC");
    expect_int(C, 0, "DBSIZE");
    expect_ok(C, "SELECT 0");
    expect_int(C, 0, "DBSIZE");
    expect_error(C, ERR_SYNTAX, "FLUSHDB BAD");
    expect_error(C, ERR_SYNTAX, "FLUSHALL BAD");
}
END_TEST

START_TEST(test_randomkey) {
    expect_nil(C, "RANDOMKEY");
    expect_ok(C, "MSET foo x bar y");
    int foo = 0, bar = 0;
    for (int i = 0; i < 200 && !(foo && bar); i++) {
        redisReply *r = it_cmd(C, "RANDOMKEY");
        ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
        if (!strcmp(r->str, "foo"))
            foo = 1;
        else if (!strcmp(r->str, "bar"))
            bar = 1;
        else
            ck_abort_msg("RANDOMKEY returned %s", r->str);
        it_free(r);
    }
    ck_assert(foo && bar);
    expect_ok(C, "FLUSHDB");
    expect_nil(C, "RANDOMKEY");
}
END_TEST

/* Drops repeated words from a sorted comma-joined list, in place. */
static char *unique_words(char *joined) {
    char *out = joined, *prev = NULL;
    size_t prevlen = 0;
    for (char *w = joined; *w;) {
        char *end = strchr(w, ',');
        size_t len = end ? (size_t)(end - w) : strlen(w);
        if (!prev || len != prevlen || memcmp(prev, w, len) != 0) {
            if (out != joined) *out++ = ',';
            memmove(out, w, len);
            prev = out;
            prevlen = len;
            out += len;
        }
        w = end ? end + 1 : w + len;
    }
    *out = '\0';
    return joined;
}

/* Runs a full SCAN with extra arguments (space-separated); returns the keys seen (sorted,
 * comma-joined, each once: SCAN may return a key twice when the table is resized or
 * rehashed between calls, which the server's cron does in the background) and checks the
 * cursor protocol. */
static char *scan_all(const char *extra, int *calls) {
    char cursor[32] = "0";
    redisReply *acc = calloc(1, sizeof(*acc));
    acc->type = REDIS_REPLY_ARRAY;
    size_t cap = 0;
    *calls = 0;
    do {
        const char *argv[16] = {"SCAN", cursor};
        int argc = 2;
        char words[256];
        snprintf(words, sizeof(words), "%s", extra ? extra : "");
        for (char *save = NULL, *w = strtok_r(words, " ", &save); w && argc < 16;
             w = strtok_r(NULL, " ", &save))
            argv[argc++] = w;
        redisReply *r = it_cmd_argv(C, argc, argv, NULL);
        char desc[300];
        ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements == 2, "SCAN %s: bad reply %s",
                      cursor, it_render(r, desc, sizeof(desc)));
        ck_assert_int_eq(r->element[0]->type, REDIS_REPLY_STRING);
        ck_assert_int_eq(r->element[1]->type, REDIS_REPLY_ARRAY);
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        redisReply *keys = r->element[1];
        for (size_t i = 0; i < keys->elements; i++) {
            if (acc->elements == cap) {
                cap = cap ? cap * 2 : 64;
                acc->element = realloc(acc->element, cap * sizeof(*acc->element));
            }
            acc->element[acc->elements++] = keys->element[i];
        }
        keys->elements = 0; /* moved */
        free(keys->element);
        keys->element = NULL;
        it_free(r);
        (*calls)++;
        ck_assert_int_lt(*calls, 100000);
    } while (strcmp(cursor, "0") != 0);
    char *joined = unique_words(it_sorted_join(acc));
    for (size_t i = 0; i < acc->elements; i++)
        freeReplyObject(acc->element[i]);
    free(acc->element);
    free(acc);
    return joined;
}

/* "0,1,...,n-1" sorted as strings, with a prefix. */
static char *expected_keys(const char *prefix, int n) {
    redisReply arr = {.type = REDIS_REPLY_ARRAY, .elements = (size_t)n};
    arr.element = calloc((size_t)n, sizeof(*arr.element));
    for (int i = 0; i < n; i++) {
        arr.element[i] = calloc(1, sizeof(redisReply));
        arr.element[i]->type = REDIS_REPLY_STRING;
        arr.element[i]->str = it_fmt("%s%d", prefix, i);
    }
    char *s = it_sorted_join(&arr);
    for (int i = 0; i < n; i++)
        free(arr.element[i]);
    free(arr.element);
    return s;
}

START_TEST(test_scan_full_iteration) {
    for (int i = 0; i < 1000; i++)
        redisAppendCommand(C, "SET key:%d x", i);
    for (int i = 0; i < 1000; i++) {
        redisReply *r;
        ck_assert_int_eq(redisGetReply(C, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    int calls;
    ck_assert_str_eq(scan_all(NULL, &calls), expected_keys("key:", 1000));
    ck_assert_int_gt(calls, 1);
    ck_assert_str_eq(scan_all("COUNT 100", &calls), expected_keys("key:", 1000));
}
END_TEST

START_TEST(test_scan_match_and_type) {
    for (int i = 0; i < 100; i++) {
        expect_ok(C, "SET key:%d x", i);
        expect_ok(C, "SET other:%d x", i);
    }
    int calls;
    ck_assert_str_eq(scan_all("MATCH key:* COUNT 20", &calls), expected_keys("key:", 100));
    ck_assert_str_eq(scan_all("TYPE string MATCH other:*", &calls), expected_keys("other:", 100));
    ck_assert_str_eq(scan_all("TYPE list", &calls), "");
    ck_assert_str_eq(scan_all("MATCH nothing*", &calls), "");
}
END_TEST

START_TEST(test_scan_errors) {
    expect_error(C, "ERR invalid cursor", "SCAN abc");
    expect_error(C, ERR_SYNTAX, "SCAN 0 COUNT 0");
    expect_error(C, ERR_NOT_INT, "SCAN 0 COUNT x");
    expect_error(C, ERR_SYNTAX, "SCAN 0 MATCH");
    expect_error(C, ERR_SYNTAX, "SCAN 0 FOO bar");
    expect_error(C, "ERR unknown type name 'foo'", "SCAN 0 TYPE foo");
    expect_reply(C, "[\"0\",[]]", "SCAN 0");
}
END_TEST

START_TEST(test_object_encoding) {
    expect_ok(C, "SET i 12345");
    expect_bulk(C, "int", "OBJECT ENCODING i");
    expect_ok(C, "SET e hello");
    expect_bulk(C, "embstr", "OBJECT ENCODING e");
    expect_ok(C, "SET r %s", "a string that is certainly longer than forty-four bytes");
    expect_bulk(C, "raw", "OBJECT ENCODING r");
    expect_nil(C, "OBJECT ENCODING nokey");
    expect_int_range(C, 0, 100, "OBJECT IDLETIME e");
    expect_error_prefix(C, "ERR unknown subcommand 'foo'. Try OBJECT HELP.", "OBJECT foo e");
}
END_TEST

START_TEST(test_memory_usage) {
    expect_ok(C, "SET k %s", "value");
    expect_int_range(C, 5, 1000, "MEMORY USAGE k");
    expect_nil(C, "MEMORY USAGE nokey");
    char *big = it_random_bytes(100000, 1);
    expect_ok(C, "SET big %b", big, (size_t)100000);
    expect_int_range(C, 100000, 200000, "MEMORY USAGE big");
}
END_TEST

START_TEST(test_unknown_command) {
    expect_error(C, "ERR unknown command 'FOOBAR', with args beginning with: 'a' 'b' ",
                 "FOOBAR a b");
    expect_error(C, "ERR unknown command 'foobar', with args beginning with: ", "foobar");
    expect_error(C, "ERR unknown subcommand 'nope'. Try CONFIG HELP.", "CONFIG nope");
    expect_status(C, "PONG", "PING");
}
END_TEST

START_TEST(test_commands_are_case_insensitive) {
    expect_ok(C, "set Key v");
    expect_bulk(C, "v", "gEt Key");
    expect_nil(C, "GET key");
    expect_int(C, 1, "ExIsTs Key");
}
END_TEST

static Suite *keys_suite(void) {
    Suite *s = suite_create("keys");
    TCase *tc = it_tcase(s, "keys");
    tcase_add_test(tc, test_del);
    tcase_add_test(tc, test_del_vararg);
    tcase_add_test(tc, test_unlink);
    tcase_add_test(tc, test_exists);
    tcase_add_test(tc, test_zero_length_key);
    tcase_add_test(tc, test_touch);
    tcase_add_test(tc, test_type);
    tcase_add_test(tc, test_keys_patterns);
    tcase_add_test(tc, test_keys_glob_docs);
    tcase_add_test(tc, test_keys_long_pattern);
    tcase_add_test(tc, test_dbsize);
    tcase_add_test(tc, test_rename);
    tcase_add_test(tc, test_rename_errors_and_same_key);
    tcase_add_test(tc, test_renamenx);
    tcase_add_test(tc, test_rename_ttl);
    tcase_add_test(tc, test_copy);
    tcase_add_test(tc, test_copy_db_and_ttl);
    tcase_add_test(tc, test_copy_errors);
    tcase_add_test(tc, test_move);
    tcase_add_test(tc, test_move_conflicts_and_errors);
    tcase_add_test(tc, test_select);
    tcase_add_test(tc, test_select_is_per_connection);
    tcase_add_test(tc, test_swapdb);
    tcase_add_test(tc, test_swapdb_errors);
    tcase_add_test(tc, test_flushdb_flushall);
    tcase_add_test(tc, test_randomkey);
    tcase_add_test(tc, test_scan_full_iteration);
    tcase_add_test(tc, test_scan_match_and_type);
    tcase_add_test(tc, test_scan_errors);
    tcase_add_test(tc, test_object_encoding);
    tcase_add_test(tc, test_memory_usage);
    tcase_add_test(tc, test_unknown_command);
    tcase_add_test(tc, test_commands_are_case_insensitive);
    return s;
}

int main(void) {
    return it_run(keys_suite());
}
