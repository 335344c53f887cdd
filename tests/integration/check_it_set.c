/* check_it_set.c -- the set commands against a real keel-server through
 * hiredis (RESP2) and the harness's RESP3 reader: every command, OBJECT
 * ENCODING across the conversions, WRONGTYPE, the empty set deleting its
 * key, the STORE forms deleting an empty destination, argument errors in
 * Valkey's words, and extremes (huge and negative counts, 2^63, members
 * beyond 64-bit integers). */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define sorted(...) it_sorted_join(it_cmd(C, __VA_ARGS__))

/* Sends a command written as one string of space-separated words. */
static redisReply *cmd_words(const char *line) {
    const char *argv[2048];
    size_t lens[2048];
    int argc = 0;
    char *copy = it_fmt("%s", line);
    for (char *w = strtok(copy, " "); w && argc < 2048; w = strtok(NULL, " ")) {
        argv[argc] = w;
        lens[argc++] = strlen(w);
    }
    return it_cmd_argv(C, argc, argv, lens);
}

START_TEST(test_sadd_srem_scard) {
    expect_int(C, 3, "SADD s a b c");
    expect_int(C, 1, "SADD s c d");
    expect_int(C, 0, "SADD s a a");
    expect_int(C, 4, "SCARD s");
    expect_int(C, 0, "SCARD nokey");
    ck_assert_str_eq(sorted("SMEMBERS s"), "a,b,c,d");
    ck_assert_str_eq(sorted("SMEMBERS nokey"), "");
    expect_int(C, 2, "SREM s a b x");
    expect_int(C, 0, "SREM nokey a");
    expect_int(C, 2, "SREM s c d e"); /* the last members: the key goes */
    expect_int(C, 0, "EXISTS s");
    expect_error(C, "ERR wrong number of arguments for 'sadd' command", "SADD s");
    expect_error(C, "ERR wrong number of arguments for 'srem' command", "SREM s");
}
END_TEST

START_TEST(test_membership) {
    expect_int(C, 3, "SADD s 1 2 x");
    expect_int(C, 1, "SISMEMBER s 1");
    expect_int(C, 1, "SISMEMBER s x");
    expect_int(C, 0, "SISMEMBER s 3");
    expect_int(C, 0, "SISMEMBER nokey 3");
    expect_reply(C, "[:1,:0,:1]", "SMISMEMBER s 2 y x");
    expect_reply(C, "[:0,:0]", "SMISMEMBER nokey a b");
    expect_error(C, "ERR wrong number of arguments for 'smismember' command", "SMISMEMBER s");
}
END_TEST

START_TEST(test_wrongtype) {
    expect_ok(C, "SET str v");
    const char *cmds[] = {
        "SADD str a",        "SREM str a",   "SISMEMBER str a",   "SMISMEMBER str a",
        "SCARD str",         "SPOP str",     "SPOP str 2",        "SRANDMEMBER str",
        "SRANDMEMBER str 2", "SMEMBERS str", "SINTER str",        "SINTERCARD 1 str",
        "SINTERSTORE d str", "SUNION str",   "SUNIONSTORE d str", "SDIFF str",
        "SDIFFSTORE d str",  "SSCAN str 0",  "SMOVE str s a",     NULL};
    for (int i = 0; cmds[i]; i++) {
        redisReply *r = cmd_words(cmds[i]);
        ck_assert_msg(r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "WRONGTYPE Operation", 19),
                      "%s: no WRONGTYPE", cmds[i]);
    }
    expect_int(C, 1, "SADD s a");
    expect_error_prefix(C, "WRONGTYPE", "SMOVE s str a");
    expect_error_prefix(C, "WRONGTYPE", "SINTER s str");
    expect_error_prefix(C, "WRONGTYPE", "SINTER nokey str"); /* after a missing key too */
    expect_error_prefix(C, "WRONGTYPE", "SUNION s str");
    expect_error_prefix(C, "WRONGTYPE", "SDIFF s str");
    expect_int(C, 0, "SMOVE nokey str a"); /* a missing source answers first */
    expect_status(C, "string", "TYPE str");
    expect_status(C, "set", "TYPE s");
}
END_TEST

/* SADD of n integers from `from`, one command. */
static void sadd_range(const char *key, int from, int n) {
    char *cmd = it_fmt("SADD %s", key);
    for (int i = 0; i < n; i++)
        cmd = it_fmt("%s %d", cmd, from + i);
    redisReply *r = cmd_words(cmd);
    ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
}

START_TEST(test_encodings) {
    sadd_range("ints", 0, 512);
    expect_reply(C, "\"intset\"", "OBJECT ENCODING ints");
    expect_int(C, 1, "SADD ints 9999");
    expect_reply(C, "\"hashtable\"", "OBJECT ENCODING ints");
    /* SADD of more than fits at once: straight to a table. */
    sadd_range("big", 0, 513);
    expect_reply(C, "\"hashtable\"", "OBJECT ENCODING big");
    expect_int(C, 3, "SADD small 1 2 3");
    expect_reply(C, "\"intset\"", "OBJECT ENCODING small");
    expect_int(C, 1, "SADD small abc");
    expect_reply(C, "\"listpack\"", "OBJECT ENCODING small");
    expect_int(C, 1, "SADD small %s",
               "0123456789012345678901234567890123456789012345678901234567890123");
    expect_reply(C, "\"listpack\"", "OBJECT ENCODING small"); /* 64 bytes */
    expect_int(C, 1, "SADD small %s",
               "01234567890123456789012345678901234567890123456789012345678901234");
    expect_reply(C, "\"hashtable\"", "OBJECT ENCODING small"); /* 65 */
    expect_int(
        C, 5,
        "SREM small 1 2 3 abc 0123456789012345678901234567890123456789012345678901234567890123");
    expect_reply(C, "\"hashtable\"", "OBJECT ENCODING small"); /* never back */
    /* The directives apply to the next write. */
    expect_ok(C, "CONFIG SET set-max-intset-entries 2");
    expect_int(C, 2, "SADD tiny 1 2");
    expect_reply(C, "\"intset\"", "OBJECT ENCODING tiny");
    expect_int(C, 1, "SADD tiny 3");
    expect_reply(C, "\"hashtable\"", "OBJECT ENCODING tiny");
    expect_ok(C, "CONFIG SET set-max-intset-entries 512");
    expect_ok(C, "CONFIG SET set-max-listpack-entries 2");
    expect_int(C, 3, "SADD lp a b c");
    expect_reply(C, "\"hashtable\"", "OBJECT ENCODING lp");
    expect_ok(C, "CONFIG SET set-max-listpack-entries 128");
    /* Integers past 64 bits are strings; 2^63-1 and -2^63 are integers. */
    expect_int(C, 2, "SADD edge 9223372036854775807 -9223372036854775808");
    expect_reply(C, "\"intset\"", "OBJECT ENCODING edge");
    expect_int(C, 1, "SADD edge 9223372036854775808");
    expect_reply(C, "\"listpack\"", "OBJECT ENCODING edge");
    expect_int(C, 1, "SISMEMBER edge 9223372036854775808");
    expect_int(C, 1, "SISMEMBER edge -9223372036854775808");
    ck_assert_str_eq(sorted("SMEMBERS edge"),
                     "-9223372036854775808,9223372036854775807,9223372036854775808");
}
END_TEST

START_TEST(test_smove) {
    expect_int(C, 3, "SADD src a b 1");
    expect_int(C, 1, "SADD dst 2");
    expect_int(C, 1, "SMOVE src dst a");
    expect_int(C, 0, "SMOVE src dst a");
    expect_int(C, 0, "SMOVE nokey dst a");
    ck_assert_str_eq(sorted("SMEMBERS dst"), "2,a");
    expect_int(C, 1, "SMOVE src src b"); /* same key: membership only */
    expect_int(C, 0, "SMOVE src src zz");
    expect_int(C, 1, "SMOVE src new 1");
    expect_reply(C, "\"intset\"", "OBJECT ENCODING new");
    expect_int(C, 1, "SMOVE src dst b"); /* the last member: src goes */
    expect_int(C, 0, "EXISTS src");
    expect_int(C, 1, "SADD dst2 a");
    expect_int(C, 1, "SMOVE dst dst2 a"); /* already in the destination */
    ck_assert_str_eq(sorted("SMEMBERS dst2"), "a");
    expect_error(C, "ERR wrong number of arguments for 'smove' command", "SMOVE a b");
}
END_TEST

START_TEST(test_spop) {
    expect_nil(C, "SPOP nokey");
    expect_reply(C, "[]", "SPOP nokey 3");
    expect_int(C, 5, "SADD s 1 2 3 4 5");
    expect_reply(C, "[]", "SPOP s 0");
    redisReply *r = it_cmd(C, "SPOP s");
    ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
    expect_int(C, 0, "SISMEMBER s %s", r->str);
    r = it_cmd(C, "SPOP s 2");
    ck_assert_int_eq(r->elements, 2);
    expect_int(C, 2, "SCARD s");
    r = it_cmd(C, "SPOP s 100"); /* more than there is: all, the key goes */
    ck_assert_int_eq(r->elements, 2);
    expect_int(C, 0, "EXISTS s");
    expect_error(C, "ERR value is out of range, must be positive", "SPOP s -1");
    expect_error(C, "ERR value is not an integer or out of range", "SPOP s x");
    expect_error(C, "ERR syntax error", "SPOP s 1 2");
    /* Each of the three ways to pop: few, most, all; every member comes
     * out once. */
    const int counts[] = {10, 90, 100};
    const char *kinds[] = {"%d", "m%d"};
    for (int k = 0; k < 2; k++) {
        for (int c = 0; c < 3; c++) {
            it_cmd(C, "DEL p");
            for (int i = 0; i < 100; i++)
                it_cmd(C, it_fmt("SADD p %s", kinds[k]), i);
            r = it_cmd(C, "SPOP p %d", counts[c]);
            ck_assert_int_eq(r->elements, (size_t)counts[c]);
            for (size_t i = 0; i < r->elements; i++) {
                expect_int(C, 0, "SISMEMBER p %s", r->element[i]->str);
                expect_int(C, 1, "SADD chk %s", r->element[i]->str);
            }
            expect_int(C, 100 - counts[c], "SCARD p");
            expect_int(C, 100, "SUNIONSTORE chk p chk");
            it_cmd(C, "DEL chk");
        }
    }
    /* A large count on a big table. */
    it_cmd(C, "DEL p");
    sadd_range("p", 0, 2000);
    r = it_cmd(C, "SPOP p 1990");
    ck_assert_int_eq(r->elements, 1990);
    expect_int(C, 10, "SCARD p");
    r = it_cmd(C, "SPOP p 9223372036854775807");
    ck_assert_int_eq(r->elements, 10);
    expect_int(C, 0, "EXISTS p");
}
END_TEST

START_TEST(test_srandmember) {
    expect_nil(C, "SRANDMEMBER nokey");
    expect_reply(C, "[]", "SRANDMEMBER nokey 5");
    expect_reply(C, "[]", "SRANDMEMBER nokey -5");
    expect_int(C, 3, "SADD s a b c");
    expect_reply(C, "[]", "SRANDMEMBER s 0");
    redisReply *r = it_cmd(C, "SRANDMEMBER s -10");
    ck_assert_int_eq(r->elements, 10);
    ck_assert_str_eq(sorted("SRANDMEMBER s 10"), "a,b,c");
    ck_assert_str_eq(sorted("SRANDMEMBER s 9223372036854775807"), "a,b,c");
    r = it_cmd(C, "SRANDMEMBER s 2");
    ck_assert_int_eq(r->elements, 2);
    ck_assert_str_ne(r->element[0]->str, r->element[1]->str);
    expect_error(C,
                 "ERR value is out of range, value must between -9223372036854775807 and "
                 "9223372036854775807",
                 "SRANDMEMBER s -9223372036854775808");
    expect_error(C, "ERR value is not an integer or out of range",
                 "SRANDMEMBER s 9223372036854775808");
    expect_error(C, "ERR syntax error", "SRANDMEMBER s 1 2");
    /* Distinct members from every encoding and strategy. */
    sadd_range("t", 0, 1000);
    for (int c = 1; c < 1000; c = c * 3 + 1) {
        r = it_cmd(C, "SRANDMEMBER t %d", c);
        ck_assert_int_eq(r->elements, (size_t)c);
        it_cmd(C, "DEL chk");
        for (size_t i = 0; i < r->elements; i++)
            expect_int(C, 1, "SADD chk %s", r->element[i]->str);
    }
    expect_int(C, 0, "SCARD nokey");
}
END_TEST

START_TEST(test_algebra) {
    expect_int(C, 4, "SADD a 1 2 3 x");
    expect_int(C, 3, "SADD b 2 3 y");
    expect_int(C, 2, "SADD c 3 x");
    ck_assert_str_eq(sorted("SINTER a b"), "2,3");
    ck_assert_str_eq(sorted("SINTER a b c"), "3");
    ck_assert_str_eq(sorted("SINTER a nokey"), "");
    ck_assert_str_eq(sorted("SINTER a a"), "1,2,3,x");
    ck_assert_str_eq(sorted("SUNION a b nokey"), "1,2,3,x,y");
    ck_assert_str_eq(sorted("SDIFF a b"), "1,x");
    ck_assert_str_eq(sorted("SDIFF a b c"), "1");
    ck_assert_str_eq(sorted("SDIFF a a"), "");
    ck_assert_str_eq(sorted("SDIFF nokey a"), "");
    ck_assert_str_eq(sorted("SDIFF a nokey"), "1,2,3,x");
    expect_int(C, 2, "SINTERCARD 2 a b");
    expect_int(C, 1, "SINTERCARD 2 a b LIMIT 1");
    expect_int(C, 2, "SINTERCARD 2 a b limit 0");
    expect_int(C, 0, "SINTERCARD 2 a nokey");
    expect_error(C, "ERR numkeys should be greater than 0", "SINTERCARD 0 a");
    expect_error(C, "ERR numkeys should be greater than 0", "SINTERCARD x a");
    expect_error(C, "ERR Number of keys can't be greater than number of args", "SINTERCARD 3 a b");
    expect_error(C, "ERR LIMIT can't be negative", "SINTERCARD 1 a LIMIT -1");
    expect_error(C, "ERR LIMIT can't be negative", "SINTERCARD 1 a LIMIT x");
    expect_error(C, "ERR syntax error", "SINTERCARD 1 a LIMIT");
    expect_error(C, "ERR syntax error", "SINTERCARD 1 a FOO 1");
    /* The STORE forms replace the destination (and its TTL). */
    expect_ok(C, "SET d old EX 100");
    expect_int(C, 2, "SINTERSTORE d a b");
    expect_int(C, -1, "TTL d");
    ck_assert_str_eq(sorted("SMEMBERS d"), "2,3");
    expect_reply(C, "\"intset\"", "OBJECT ENCODING d");
    expect_int(C, 5, "SUNIONSTORE d a b");
    ck_assert_str_eq(sorted("SMEMBERS d"), "1,2,3,x,y");
    expect_reply(C, "\"listpack\"", "OBJECT ENCODING d");
    expect_int(C, 2, "SDIFFSTORE d a b");
    ck_assert_str_eq(sorted("SMEMBERS d"), "1,x");
    /* An empty result deletes the destination. */
    expect_int(C, 0, "SINTERSTORE d a nokey");
    expect_int(C, 0, "EXISTS d");
    expect_int(C, 1, "SADD d z");
    expect_int(C, 0, "SDIFFSTORE d a a");
    expect_int(C, 0, "EXISTS d");
    expect_int(C, 1, "SADD d z");
    expect_int(C, 0, "SUNIONSTORE d nokey");
    expect_int(C, 0, "EXISTS d");
    /* The destination may be a source. */
    expect_int(C, 2, "SINTERSTORE a a b");
    ck_assert_str_eq(sorted("SMEMBERS a"), "2,3");
    /* Members that are integers from tables make an intset again. */
    sadd_range("h1", 0, 600);
    sadd_range("h2", 300, 600);
    expect_int(C, 300, "SINTERSTORE d h1 h2");
    expect_reply(C, "\"intset\"", "OBJECT ENCODING d");
    expect_int(C, 300, "SDIFFSTORE d h1 h2");
    expect_int(C, 900, "SUNIONSTORE d h1 h2");
    expect_reply(C, "\"hashtable\"", "OBJECT ENCODING d");
    expect_int(C, 300, "SINTERCARD 2 h1 h2");
    expect_int(C, 0, "SINTERCARD 3 h1 h2 nokey");
}
END_TEST

START_TEST(test_sscan) {
    expect_reply(C, "[\"0\",[]]", "SSCAN nokey 0");
    expect_int(C, 3, "SADD s a b 1");
    redisReply *r = it_cmd(C, "SSCAN s 0");
    ck_assert_str_eq(r->element[0]->str, "0");
    ck_assert_int_eq(r->element[1]->elements, 3);
    r = it_cmd(C, "SSCAN s 0 MATCH [a1] COUNT 1");
    ck_assert_int_eq(r->element[1]->elements, 2);
    expect_error(C, "ERR invalid cursor", "SSCAN s x");
    expect_error(C, "ERR syntax error", "SSCAN s 0 COUNT 0");
    expect_error(C, "ERR value is not an integer or out of range", "SSCAN s 0 COUNT x");
    expect_error(C, "ERR syntax error", "SSCAN s 0 FOO");
    expect_error(C, "ERR NOVALUES option can only be used in HSCAN", "SSCAN s 0 NOVALUES");
    expect_error(C, "ERR NOSCORES option can only be used in ZSCAN", "SSCAN s 0 NOSCORES");
    /* A table is walked with a cursor; every member comes back. */
    sadd_range("big", 0, 1000);
    char *seen = calloc(1000, 1);
    unsigned long long cursor = 0;
    int calls = 0, matched = 0;
    do {
        r = it_cmd(C, "SSCAN big %llu COUNT 50", cursor);
        cursor = strtoull(r->element[0]->str, NULL, 10);
        for (size_t i = 0; i < r->element[1]->elements; i++)
            seen[atoi(r->element[1]->element[i]->str)] = 1;
        calls++;
    } while (cursor);
    int all = 0;
    for (int i = 0; i < 1000; i++)
        all += seen[i];
    free(seen);
    ck_assert_int_eq(all, 1000);
    ck_assert_int_gt(calls, 2);
    cursor = 0;
    do {
        r = it_cmd(C, "SSCAN big %llu MATCH 99*", cursor);
        cursor = strtoull(r->element[0]->str, NULL, 10);
        matched += (int)r->element[1]->elements;
    } while (cursor);
    ck_assert_int_ge(matched, 11); /* 99, 990..999 (at least once each) */
}
END_TEST

START_TEST(test_resp3_reply_types) {
    expect_int(C, 2, "SADD s a b");
    expect_int(C, 1, "SADD t b");
    it_raw *r = it_raw_connect_resp3(S);
    it_raw_cmd(r, "SMEMBERS", "t", NULL);
    expect_raw(r, "~[\"b\"]");
    it_raw_cmd(r, "SINTER", "s", "t", NULL);
    expect_raw(r, "~[\"b\"]");
    it_raw_cmd(r, "SINTER", "s", "nokey", NULL);
    expect_raw(r, "~[]");
    it_raw_cmd(r, "SUNION", "t", NULL);
    expect_raw(r, "~[\"b\"]");
    it_raw_cmd(r, "SDIFF", "t", "s", NULL);
    expect_raw(r, "~[]");
    it_raw_cmd(r, "SMEMBERS", "nokey", NULL);
    expect_raw(r, "~[]");
    it_raw_cmd(r, "SPOP", "nokey", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "SPOP", "nokey", "2", NULL);
    expect_raw(r, "~[]");
    it_raw_cmd(r, "SPOP", "t", "0", NULL);
    expect_raw(r, "~[]");
    it_raw_cmd(r, "SPOP", "t", "5", NULL);
    expect_raw(r, "~[\"b\"]");
    it_raw_cmd(r, "SRANDMEMBER", "nokey", NULL);
    expect_raw(r, "_");
    it_raw_cmd(r, "SRANDMEMBER", "s", "-2", NULL); /* an array: repeats */
    it_value *v = it_raw_read(r);
    ck_assert_int_eq(v->type, '*');
    ck_assert_int_eq(v->n, 2);
    it_raw_cmd(r, "SMISMEMBER", "s", "a", "z", NULL);
    expect_raw(r, "[:1,:0]");
    it_raw_cmd(r, "SSCAN", "nokey", "0", NULL);
    expect_raw(r, "[\"0\",[]]");
    expect_int(C, 0, "EXISTS t");
}
END_TEST

START_TEST(test_binary_and_long_members) {
    const char bin[] = {'a', 0, '\r', '\n', 'b'};
    expect_int(C, 1, "SADD s %b", bin, sizeof(bin));
    expect_int(C, 1, "SISMEMBER s %b", bin, sizeof(bin));
    expect_int(C, 0, "SISMEMBER s a");
    char *big = it_random_bytes(100000, 3);
    expect_int(C, 1, "SADD s %b", big, (size_t)100000);
    expect_reply(C, "\"hashtable\"", "OBJECT ENCODING s");
    expect_int(C, 1, "SISMEMBER s %b", big, (size_t)100000);
    expect_int(C, 1, "SREM s %b", big, (size_t)100000);
    expect_int(C, 1, "SCARD s");
    expect_int_range(C, 1, 1000000, "MEMORY USAGE s");
    expect_int(C, 1, "COPY s s2");
    expect_int(C, 1, "SISMEMBER s2 %b", bin, sizeof(bin));
}
END_TEST

static Suite *set_suite(void) {
    Suite *s = suite_create("set");
    TCase *tc = it_tcase(s, "set");
    tcase_add_test(tc, test_sadd_srem_scard);
    tcase_add_test(tc, test_membership);
    tcase_add_test(tc, test_wrongtype);
    tcase_add_test(tc, test_encodings);
    tcase_add_test(tc, test_smove);
    tcase_add_test(tc, test_spop);
    tcase_add_test(tc, test_srandmember);
    tcase_add_test(tc, test_algebra);
    tcase_add_test(tc, test_sscan);
    tcase_add_test(tc, test_resp3_reply_types);
    tcase_add_test(tc, test_binary_and_long_members);
    return s;
}

int main(void) {
    return it_run(set_suite());
}
