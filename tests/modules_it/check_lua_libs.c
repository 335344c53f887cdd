/* check_lua_libs.c -- unit tests of the Lua module's own libraries
 * (modules/lua/lib_cmsgpack.c, lib_struct.c) in a plain liblua5.1 state: no
 * server, no module ABI. Each test runs a Lua chunk and checks what it
 * returned or the error it raised, including Valkey's own scripting.tcl
 * cases for cmsgpack and the inputs of the known CVE classes (forged counts
 * and sizes, deep nesting, integer overflow in formats). */
#include "lua_libs.h"

#include <check.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lua_State *L;
static char result[8192];

/* hex(s): the bytes of s as lowercase hex, as the Valkey tests print them. */
static const char *prelude = "function hex(s) local h = '' for i = 1, #s do "
                             "h = h .. string.format('%02x', string.byte(s, i)) end return h end";

static void setup(void) {
    L = luaL_newstate();
    luaL_openlibs(L);
    luaopen_cmsgpack(L);
    luaopen_struct(L);
    lua_settop(L, 0);
    ck_assert_int_eq(luaL_dostring(L, prelude), 0);
}

static void teardown(void) {
    lua_close(L);
}

/* Runs code; returns its first result as a string ("nil" for none), or
 * "ERR " and the message when it raised an error. */
static const char *run(const char *code) {
    lua_settop(L, 0);
    if (luaL_loadstring(L, code) != 0 || lua_pcall(L, 0, 1, 0) != 0) {
        snprintf(result, sizeof result, "ERR %s", lua_tostring(L, -1));
    } else if (lua_isnil(L, -1)) {
        snprintf(result, sizeof result, "nil");
    } else if (lua_isboolean(L, -1)) {
        snprintf(result, sizeof result, "%s", lua_toboolean(L, -1) ? "true" : "false");
    } else {
        const char *s = lua_tostring(L, -1);
        snprintf(result, sizeof result, "%s", s ? s : "(not a string)");
    }
    return result;
}

/* Asserts the chunk raised an error whose message contains want. */
static void expect_error(const char *code, const char *want) {
    const char *got = run(code);
    ck_assert_msg(strncmp(got, "ERR ", 4) == 0 && strstr(got, want) != NULL,
                  "%s: wanted an error with '%s', got '%s'", code, want, got);
}

/* ---- cmsgpack: Valkey's scripting.tcl cases ---- */

START_TEST(test_mp_pack_double) {
    ck_assert_str_eq(run("return hex(cmsgpack.pack(0.1))"), "cb3fb999999999999a");
}
END_TEST

START_TEST(test_mp_pack_negative_int64) {
    ck_assert_str_eq(run("return hex(cmsgpack.pack(-1099511627776))"), "d3ffffff0000000000");
}
END_TEST

START_TEST(test_mp_smoke) {
    const char *code =
        "local str_lt_32 = string.rep('x', 30)\n"
        "local str_lt_255 = string.rep('x', 250)\n"
        "local str_lt_65535 = string.rep('x', 65530)\n"
        "local str_long = string.rep('x', 100000)\n"
        "local array_big = {} for i = 1, 100000 do array_big[i] = i end\n"
        "local map_big = {} for i = 1, 100000 do map_big[tostring(i)] = i end\n"
        "local some_map = {s1=str_lt_32, s2=str_lt_255, s3=str_lt_65535, s4=str_long,\n"
        "  d1=0.1, i1=1, i2=250, i3=65530, i4=100000, i5=2^40, i6=-1, i7=-120, i8=-32000,\n"
        "  i9=-1200000, i10=-2^40, a1={1,2,3,4,5}, a2={1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,\n"
        "  16,17,18}, a3=array_big, m1={a=1,b=2}, m2=map_big, b1=false, b2=true, n=nil}\n"
        "local encoded = cmsgpack.pack(some_map)\n"
        "local decoded = cmsgpack.unpack(encoded)\n"
        "assert(table.concat(some_map) == table.concat(decoded))\n"
        "assert(decoded.s4 == str_long and decoded.a3[100000] == 100000)\n"
        "assert(decoded.m2['99999'] == 99999 and decoded.i10 == -2^40 and decoded.d1 == 0.1)\n"
        "assert(decoded.b1 == false and decoded.b2 == true and decoded.i8 == -32000)\n"
        "local offset, decoded_one = cmsgpack.unpack_one(encoded, 0)\n"
        "assert(table.concat(some_map) == table.concat(decoded_one))\n"
        "assert(offset == -1)\n"
        "local encoded_multiple = cmsgpack.pack(str_lt_32, str_lt_255, str_lt_65535, str_long)\n"
        "local offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, 0)\n"
        "assert(obj == str_lt_32)\n"
        "offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, offset)\n"
        "assert(obj == str_lt_255)\n"
        "offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, offset)\n"
        "assert(obj == str_lt_65535)\n"
        "offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, offset)\n"
        "assert(obj == str_long)\n"
        "assert(offset == -1)\n"
        "return 'ok'";
    ck_assert_str_eq(run(code), "ok");
}
END_TEST

START_TEST(test_mp_circular) {
    const char *code = "local a = {x=nil,y=5} local b = {x=a} a['x'] = b\n"
                       "local encoded = cmsgpack.pack(a)\n"
                       "local re = cmsgpack.unpack(encoded)\n"
                       "assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.y == re.y)\n"
                       "assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x)\n"
                       "assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x == nil)\n"
                       "return hex(encoded)";
    ck_assert_str_eq(run(code), "82a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a1"
                                "7881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882"
                                "a17905a17881a178c0");
}
END_TEST

/* ---- cmsgpack: encodings at every size boundary ---- */

START_TEST(test_mp_int_encodings) {
    static const struct {
        const char *value, *hex;
    } cases[] = {
        {"0", "00"},
        {"127", "7f"},
        {"128", "cc80"},
        {"255", "ccff"},
        {"256", "cd0100"},
        {"65535", "cdffff"},
        {"65536", "ce00010000"},
        {"4294967295", "ceffffffff"},
        {"4294967296", "cf0000000100000000"},
        {"-1", "ff"},
        {"-32", "e0"},
        {"-33", "d0df"},
        {"-128", "d080"},
        {"-129", "d1ff7f"},
        {"-32768", "d18000"},
        {"-32769", "d2ffff7fff"},
        {"-2147483648", "d280000000"},
        {"-2147483649", "d3ffffffff7fffffff"},
        {"1.5", "ca3fc00000"},
        {"1/0", "ca7f800000"},
        {"2^64", "ca5f800000"},
        {"1e300", "cb7e37e43c8800759c"},
        {"true", "c3"},
        {"false", "c2"},
        {"nil", "c0"},
        {"{}", "90"},
        {"{1,2}", "920102"},
        {"{a=1}", "81a16101"},
        {"print", "c0"},
    };
    char code[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(code, sizeof code, "return hex(cmsgpack.pack(%s))", cases[i].value);
        ck_assert_str_eq(run(code), cases[i].hex);
        snprintf(code, sizeof code,
                 "local v = %s local d = cmsgpack.unpack(cmsgpack.pack(v))\n"
                 "if type(v) == 'table' then return #d == #v elseif type(v) == 'function' "
                 "then return d == nil else return d == v end",
                 cases[i].value);
        ck_assert_msg(strcmp(run(code), "true") == 0, "round trip of %s", cases[i].value);
    }
}
END_TEST

START_TEST(test_mp_string_headers) {
    ck_assert_str_eq(run("return hex(cmsgpack.pack(string.rep('a', 31))):sub(1, 2)"), "bf");
    ck_assert_str_eq(run("return hex(cmsgpack.pack(string.rep('a', 32))):sub(1, 4)"), "d920");
    ck_assert_str_eq(run("return hex(cmsgpack.pack(string.rep('a', 256))):sub(1, 6)"), "da0100");
    ck_assert_str_eq(run("return hex(cmsgpack.pack(string.rep('a', 65536))):sub(1, 10)"),
                     "db00010000");
    ck_assert_str_eq(run("local t = {} for i = 1, 16 do t[i] = 0 end\n"
                         "return hex(cmsgpack.pack(t)):sub(1, 6)"),
                     "dc0010");
    ck_assert_str_eq(run("local t = {} for i = 1, 65536 do t[i] = 0 end\n"
                         "return hex(cmsgpack.pack(t)):sub(1, 10)"),
                     "dd00010000");
}
END_TEST

START_TEST(test_mp_decode_forms) {
    /* uint64 beyond int64 comes back as its two's-complement value. */
    ck_assert_str_eq(run("return tostring(cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255"
                         "\\255'))"),
                     "-1");
    ck_assert_str_eq(run("return cmsgpack.unpack('\\161a\\192\\195')"), "a");
    ck_assert_str_eq(run("return select('#', cmsgpack.unpack('\\161a\\192\\195'))"), "3");
    ck_assert_str_eq(run("return select('#', cmsgpack.unpack(''))"), "0");
    ck_assert_str_eq(run("local t = cmsgpack.unpack('\\222\\000\\001\\161k\\001') return t.k"),
                     "1");
    ck_assert_str_eq(run("return cmsgpack.unpack('\\202\\063\\192\\000\\000')"), "1.5");
}
END_TEST

START_TEST(test_mp_multiple_and_offsets) {
    ck_assert_str_eq(run("local s = cmsgpack.pack(1, 'two', {3})\n"
                         "local o, a = cmsgpack.unpack_one(s)\n"
                         "local o2, b, c = cmsgpack.unpack_limit(s, 5, o)\n"
                         "return table.concat({o, a, o2, b, c[1]}, ',')"),
                     "1,1,-1,two,3");
    ck_assert_str_eq(run("return select('#', cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2))"),
                     "3");
    expect_error("return cmsgpack.unpack_one('\\001', 2)",
                 "Start offset 2 greater than input length 1.");
    expect_error("return cmsgpack.unpack_one('\\001', -1)",
                 "Invalid request to unpack with offset of -1 and limit of 1.");
    expect_error("return cmsgpack.unpack_limit('\\001', -3)", "Invalid request to unpack");
    expect_error("return cmsgpack.pack()", "MessagePack pack needs input.");
}
END_TEST

/* ---- cmsgpack: bad and hostile input ---- */

START_TEST(test_mp_bad_input) {
    expect_error("return cmsgpack.unpack('\\193')", "Bad data format in input.");
    expect_error("return cmsgpack.unpack('\\196\\001a')", "Bad data format in input.");
    expect_error("return cmsgpack.unpack('\\205\\001')", "Missing bytes in input.");
    expect_error("return cmsgpack.unpack('\\165abc')", "Missing bytes in input.");
    expect_error("return cmsgpack.unpack('\\146\\001')", "Missing bytes in input.");
    expect_error("return cmsgpack.unpack('\\129\\192\\001')", "table index is nil");
    expect_error("return cmsgpack.unpack(nil)", "bad argument #1");
}
END_TEST

/* A forged 32-bit count or length must fail on the missing bytes, not
 * allocate for 4 billion entries first. */
START_TEST(test_mp_forged_counts) {
    expect_error("return cmsgpack.unpack('\\221\\255\\255\\255\\255\\001')", "Missing bytes");
    expect_error("return cmsgpack.unpack('\\223\\255\\255\\255\\255\\001\\001')", "Missing bytes");
    expect_error("return cmsgpack.unpack('\\219\\255\\255\\255\\255abc')", "Missing bytes");
    expect_error("return cmsgpack.unpack('\\218\\255\\255abc')", "Missing bytes");
}
END_TEST

/* Deep nesting (the CVE-2021-32626 / CVE-2022-24834 class): decoding
 * 100000 nested arrays stops on the stack check with an error instead of
 * overrunning the Lua or the C stack; so do too many top-level values. */
START_TEST(test_mp_deep_nesting) {
    expect_error("return cmsgpack.unpack(string.rep('\\145', 100000) .. '\\192')",
                 "too many return values at once");
    expect_error("return cmsgpack.unpack(string.rep('\\129\\001', 100000) .. '\\192')",
                 "too many return values at once");
    expect_error("return cmsgpack.unpack(string.rep('\\192', 100000))",
                 "too many return values at once");
    ck_assert_str_eq(run("local o, v = cmsgpack.unpack_one(string.rep('\\192', 100000))\n"
                         "return o"),
                     "1");
    /* Nesting that fits the stack still decodes. */
    ck_assert_str_eq(run("local t = cmsgpack.unpack(string.rep('\\145', 1000) .. '\\007')\n"
                         "for i = 1, 1000 do t = t[1] end return t"),
                     "7");
    /* Packing stops at 16 levels. */
    ck_assert_str_eq(run("local t = {} local c = t for i = 1, 100 do c[1] = {} c = c[1] end\n"
                         "return hex(cmsgpack.pack(t))"),
                     "91919191919191919191919191919191c0");
}
END_TEST

START_TEST(test_mp_many_args) {
    ck_assert_str_eq(run("local a = {} for i = 1, 7000 do a[i] = i end\n"
                         "return #cmsgpack.pack(unpack(a))"),
                     "20618");
}
END_TEST

/* ---- struct ---- */

START_TEST(test_st_round_trips) {
    ck_assert_str_eq(run("return hex(struct.pack('>I2', 258))"), "0102");
    ck_assert_str_eq(run("return hex(struct.pack('<I2', 258))"), "0201");
    ck_assert_str_eq(run("return hex(struct.pack('>i3', -2))"), "fffffe");
    ck_assert_str_eq(run("return hex(struct.pack('>bBhH', -1, 255, -2, 65535))"), "ffff"
                                                                                  "fffe"
                                                                                  "ffff");
    ck_assert_str_eq(run("return hex(struct.pack('>d', 0.1))"), "3fb999999999999a");
    ck_assert_str_eq(run("return hex(struct.pack('>f', 1.5))"), "3fc00000");
    ck_assert_str_eq(run("return hex(struct.pack('>I10', 1))"), "00000000000000000001");
    ck_assert_str_eq(run("return hex(struct.pack('sc0c3', 'ab', 'xy', 'hello'))"), "6162007879"
                                                                                   "68656c");
    ck_assert_str_eq(
        run("local fmt = '>bBhHlLiIi3I5fdTs' local s = struct.pack(fmt, -5, 200, -300, 60000,\n"
            "  -70000, 4000000000, -9, 9, -100000, 2^39, 0.5, -2.25, 12345, 'str')\n"
            "local r = {struct.unpack(fmt, s)}\n"
            "return table.concat(r, ',')"),
        "-5,200,-300,60000,-70000,4000000000,-9,9,-100000,549755813888,0.5,-2.25,12345,str,63");
    ck_assert_str_eq(run("local s = struct.pack('<i8', -2^53) return struct.unpack('<i8', s)"),
                     "-9.007199254741e+15");
    ck_assert_str_eq(run("return struct.unpack('>I16', string.rep('\\255', 16))"),
                     "1.844674407371e+19");
    ck_assert_str_eq(run("return struct.unpack('>i16', string.rep('\\255', 16))"), "-1");
    ck_assert_str_eq(run("return struct.unpack('B', 'ab', 2)"), "98");
    ck_assert_str_eq(run("return select(2, struct.unpack('B', 'ab', 2))"), "3");
    ck_assert_str_eq(run("local s, nx = struct.unpack('Bc0', '\\003abcd')\n"
                         "return s .. nx"),
                     "abc5");
    ck_assert_str_eq(run("return struct.unpack('s', 'ab\\0cd')"), "ab");
}
END_TEST

START_TEST(test_st_alignment_and_size) {
    ck_assert_str_eq(run("return struct.size('!4 b i')"), "8");
    ck_assert_str_eq(run("return struct.size('b i')"), "5");
    ck_assert_str_eq(run("return struct.size('!8 b d')"), "16");
    ck_assert_str_eq(run("return struct.size('>!2 bxh c7')"), "11");
    ck_assert_str_eq(run("return hex(struct.pack('!4 >b i', 1, 2))"), "0100000000000002");
    ck_assert_str_eq(run("return select(2, struct.unpack('!4 b i', struct.pack('!4 b i', 1, 2)))"),
                     "2");
    expect_error("return struct.size('s')", "option 's' has no fixed size");
    expect_error("return struct.size('c0')", "option 'c0' has no fixed size");
}
END_TEST

START_TEST(test_st_errors) {
    expect_error("return struct.pack('i33', 1)", "integral size 33 is larger than limit of 32");
    expect_error("return struct.pack('!3 i', 1)", "alignment 3 is not a power of 2");
    expect_error("return struct.pack('!0 i', 1)", "alignment 0 is not a power of 2");
    expect_error("return struct.pack('z', 1)", "invalid format option 'z'");
    expect_error("return struct.unpack('z', 'a')", "invalid format option 'z'");
    expect_error("return struct.pack('c5', 'abc')", "string too short");
    expect_error("return struct.pack('i', 'x')", "bad argument #2");
    expect_error("return struct.unpack('i', 'ab')", "data string too short");
    expect_error("return struct.unpack('B', 'ab', 0)", "offset must be 1 or greater");
    expect_error("return struct.unpack('B', 'ab', -5)", "offset must be 1 or greater");
    expect_error("return struct.unpack('B', 'ab', 3)", "data string too short");
    expect_error("return struct.unpack('c0', 'ab')", "format 'c0' needs a previous size");
    expect_error("return struct.unpack('Bc0', '\\200ab')", "data string too short");
    expect_error("return struct.unpack('bc0', '\\255ab')", "data string too short");
    expect_error("return struct.unpack('s', 'abc')", "unfinished string in data");
}
END_TEST

/* The integer-overflow classes: counts that overflow an int in the format
 * (CVE-2020-14147), lengths and offsets past the data (CVE-2021-32627/8). */
START_TEST(test_st_overflows) {
    expect_error("return struct.pack('i' .. string.rep('9', 20), 1)", "integral size overflow");
    expect_error("return struct.pack('c2147483648', 'a')", "integral size overflow");
    expect_error("return struct.size('!' .. string.rep('9', 12))", "integral size overflow");
    expect_error("return struct.unpack('c2147483647', 'abc')", "data string too short");
    expect_error("return struct.unpack('>!8 d', 'x', 2^53)", "data string too short");
    expect_error("return struct.unpack('s', 'x', 2^40)", "data string too short");
    expect_error("return struct.pack('c2147483647', 'abc')", "string too short");
    ck_assert_str_eq(run("return struct.size(string.rep('c2147483647', 100))"), "214748364700");
    ck_assert_str_eq(run("return select('#', struct.unpack(string.rep('B', 7000), "
                         "string.rep('a', 7000)))"),
                     "7001");
    expect_error("return struct.unpack(string.rep('B', 9000), string.rep('a', 9000))",
                 "too many results");
    ck_assert_str_eq(run("return hex(struct.pack('>I8', 2^70))"), "0000000000000000");
    ck_assert_str_eq(run("return hex(struct.pack('>i4', 0/0))"), "00000000");
}
END_TEST

static Suite *libs_suite(void) {
    Suite *s = suite_create("lua_libs");
    TCase *mp = tcase_create("cmsgpack");
    tcase_add_checked_fixture(mp, setup, teardown);
    tcase_set_timeout(mp, 60);
    tcase_add_test(mp, test_mp_pack_double);
    tcase_add_test(mp, test_mp_pack_negative_int64);
    tcase_add_test(mp, test_mp_smoke);
    tcase_add_test(mp, test_mp_circular);
    tcase_add_test(mp, test_mp_int_encodings);
    tcase_add_test(mp, test_mp_string_headers);
    tcase_add_test(mp, test_mp_decode_forms);
    tcase_add_test(mp, test_mp_multiple_and_offsets);
    tcase_add_test(mp, test_mp_bad_input);
    tcase_add_test(mp, test_mp_forged_counts);
    tcase_add_test(mp, test_mp_deep_nesting);
    tcase_add_test(mp, test_mp_many_args);
    suite_add_tcase(s, mp);
    TCase *st = tcase_create("struct");
    tcase_add_checked_fixture(st, setup, teardown);
    tcase_add_test(st, test_st_round_trips);
    tcase_add_test(st, test_st_alignment_and_size);
    tcase_add_test(st, test_st_errors);
    tcase_add_test(st, test_st_overflows);
    suite_add_tcase(s, st);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(libs_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
