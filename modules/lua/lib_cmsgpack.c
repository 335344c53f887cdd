/* lib_cmsgpack.c -- the cmsgpack library of Lua scripts: MessagePack
 * encoding of Lua values (pack) and decoding of a stream of them (unpack,
 * unpack_one, unpack_limit), with the encodings, nesting limit and error
 * messages scripts written for Valkey rely on.
 *
 * Hardening against the known attack classes on this library:
 *  - the output buffer lives in a userdata at a fixed stack slot, so a Lua
 *    error in the middle of a pack (stack overflow, out of memory) leaks
 *    nothing, and its growth is checked for size_t overflow;
 *  - every push is preceded by a stack check (Lua 5.1 refuses more than
 *    LUAI_MAXCSTACK slots per C call, which also bounds how deep a decode of
 *    nested containers recurses on the C stack);
 *  - counts read from the input never size an allocation beyond what the
 *    remaining input could fill;
 *  - doubles are range-checked before any conversion to an integer type. */
#include "lua_libs.h"

#include <float.h>
#include <lauxlib.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Tables nested deeper than this are packed as nil: it is what stops the
 * encoder on a table that references itself. */
#define MP_MAX_NESTING 16

/* Message of a stack check while decoding; Valkey's wording, since scripts
 * may match on it. */
#define MP_STACK_MSG "too many return values at once; use unpack_one or unpack_limit instead."

/* ---- Output buffer ---- */

typedef struct mp_out {
    lua_State *L;
    int slot; /* absolute stack index of the userdata that owns b */
    unsigned char *b;
    size_t len, cap;
} mp_out;

/* Moves the bytes to a userdata twice the needed size; the old one becomes
 * garbage once the slot is overwritten. */
static void mp_out_grow(mp_out *o, size_t need) {
    if (need > SIZE_MAX / 2 - o->len) luaL_error(o->L, "MessagePack output too large");
    size_t cap = (o->len + need) * 2;
    luaL_checkstack(o->L, 1, "in function cmsgpack.pack");
    unsigned char *b = lua_newuserdata(o->L, cap);
    if (o->len) memcpy(b, o->b, o->len);
    lua_replace(o->L, o->slot);
    o->b = b;
    o->cap = cap;
}

static void mp_out_put(mp_out *o, const void *p, size_t n) {
    if (o->cap - o->len < n) mp_out_grow(o, n);
    memcpy(o->b + o->len, p, n);
    o->len += n;
}

/* Appends the tag byte and then `width` big-endian bytes of v. */
static void mp_out_tagged(mp_out *o, unsigned char tag, uint64_t v, int width) {
    unsigned char b[9];
    b[0] = tag;
    for (int i = 0; i < width; i++)
        b[1 + i] = (unsigned char)(v >> (8 * (width - 1 - i)));
    mp_out_put(o, b, (size_t)width + 1);
}

/* ---- Encoding ---- */

static void mp_encode_int(mp_out *o, int64_t n) {
    if (n >= 0) {
        if (n <= 127)
            mp_out_tagged(o, (unsigned char)n, 0, 0);
        else if (n <= 0xff)
            mp_out_tagged(o, 0xcc, (uint64_t)n, 1);
        else if (n <= 0xffff)
            mp_out_tagged(o, 0xcd, (uint64_t)n, 2);
        else if (n <= 0xffffffffLL)
            mp_out_tagged(o, 0xce, (uint64_t)n, 4);
        else
            mp_out_tagged(o, 0xcf, (uint64_t)n, 8);
    } else {
        if (n >= -32)
            mp_out_tagged(o, (unsigned char)(0x100 + n), 0, 0);
        else if (n >= -128)
            mp_out_tagged(o, 0xd0, (uint64_t)n, 1);
        else if (n >= -32768)
            mp_out_tagged(o, 0xd1, (uint64_t)n, 2);
        else if (n >= -2147483648LL)
            mp_out_tagged(o, 0xd2, (uint64_t)n, 4);
        else
            mp_out_tagged(o, 0xd3, (uint64_t)n, 8);
    }
}

/* A double that a float holds exactly is packed as a float (5 bytes). The
 * range test comes first: converting an out-of-range double to float is
 * undefined. */
static void mp_encode_double(mp_out *o, double d) {
    if (isinf(d) || (fabs(d) <= FLT_MAX && (double)(float)d == d)) {
        float f = (float)d;
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        mp_out_tagged(o, 0xca, bits, 4);
    } else {
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        mp_out_tagged(o, 0xcb, bits, 8);
    }
}

/* Lua 5.1 numbers are doubles: one with an exact int64 value is packed as
 * an integer, anything else (fractions, NaN, infinities, beyond int64) as a
 * floating-point value. */
static void mp_encode_number(mp_out *o, lua_Number n) {
    if (n >= -9223372036854775808.0 && n < 9223372036854775808.0 && (double)(int64_t)n == n)
        mp_encode_int(o, (int64_t)n);
    else
        mp_encode_double(o, n);
}

static void mp_encode_bytes(mp_out *o, const char *s, size_t len) {
    if (len < 32)
        mp_out_tagged(o, (unsigned char)(0xa0 | len), 0, 0);
    else if (len <= 0xff)
        mp_out_tagged(o, 0xd9, len, 1);
    else if (len <= 0xffff)
        mp_out_tagged(o, 0xda, len, 2);
    else
        mp_out_tagged(o, 0xdb, len, 4);
    mp_out_put(o, s, len);
}

/* The container header: fix form up to 15 entries, then 16 or 32 bits. */
static void mp_encode_header(mp_out *o, unsigned char fix, unsigned char tag16, size_t n) {
    if (n <= 15)
        mp_out_tagged(o, (unsigned char)(fix | n), 0, 0);
    else if (n <= 0xffff)
        mp_out_tagged(o, tag16, n, 2);
    else
        mp_out_tagged(o, (unsigned char)(tag16 + 1), n, 4);
}

/* 1 when the table on top has exactly the keys 1..N (N may be 0). */
static int mp_table_is_array(lua_State *L) {
    lua_Number max = 0, count = 0;
    luaL_checkstack(L, 2, "in function cmsgpack.pack");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        lua_Number k = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
        if (!(k >= 1 && k <= INT_MAX && floor(k) == k)) {
            lua_pop(L, 1);
            return 0;
        }
        if (k > max) max = k;
        count++;
    }
    /* Keys are distinct positive integers: there are max of them only when
     * they are 1..max. */
    return max == count;
}

static void mp_encode_top(mp_out *o, int level);

static void mp_encode_array(mp_out *o, int level) {
    lua_State *L = o->L;
    size_t len = lua_objlen(L, -1);
    mp_encode_header(o, 0x90, 0xdc, len);
    luaL_checkstack(L, 1, "in function cmsgpack.pack");
    for (size_t i = 1; i <= len; i++) {
        lua_rawgeti(L, -1, (int)i);
        mp_encode_top(o, level + 1);
    }
}

static void mp_encode_map(mp_out *o, int level) {
    lua_State *L = o->L;
    size_t len = 0;
    luaL_checkstack(L, 3, "in function cmsgpack.pack");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        len++;
    }
    mp_encode_header(o, 0x80, 0xde, len);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pushvalue(L, -2);
        mp_encode_top(o, level + 1); /* the key's copy */
        mp_encode_top(o, level + 1); /* the value */
    }
}

/* Encodes the value on top of the stack and pops it. */
static void mp_encode_top(mp_out *o, int level) {
    lua_State *L = o->L;
    int t = lua_type(L, -1);
    if (t == LUA_TTABLE && level >= MP_MAX_NESTING) t = LUA_TNIL;
    switch (t) {
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        mp_encode_bytes(o, s, len);
        break;
    }
    case LUA_TBOOLEAN:
        mp_out_tagged(o, lua_toboolean(L, -1) ? 0xc3 : 0xc2, 0, 0);
        break;
    case LUA_TNUMBER:
        mp_encode_number(o, lua_tonumber(L, -1));
        break;
    case LUA_TTABLE:
        if (mp_table_is_array(L))
            mp_encode_array(o, level);
        else
            mp_encode_map(o, level);
        break;
    default:
        mp_out_tagged(o, 0xc0, 0, 0);
        break;
    }
    lua_pop(L, 1);
}

/* cmsgpack.pack(v1, ...): the encodings of all arguments, concatenated. */
static int mp_pack(lua_State *L) {
    int nargs = lua_gettop(L);
    if (nargs == 0) return luaL_argerror(L, 0, "MessagePack pack needs input.");
    if (!lua_checkstack(L, 2))
        return luaL_argerror(L, 0, "Too many arguments for MessagePack pack.");
    mp_out o = {L, nargs + 1, NULL, 0, 0};
    lua_pushnil(L); /* the buffer's slot */
    for (int i = 1; i <= nargs; i++) {
        lua_pushvalue(L, i);
        mp_encode_top(&o, 0);
    }
    lua_pushlstring(L, (const char *)o.b, o.len);
    return 1;
}

/* ---- Decoding ---- */

typedef struct mp_in {
    const unsigned char *p;
    size_t left;
} mp_in;

/* Bad input ends the whole unpack with Valkey's messages. */
static void mp_need(lua_State *L, const mp_in *in, size_t n) {
    if (in->left < n) luaL_error(L, "Missing bytes in input.");
}

/* The `width` big-endian bytes after the tag byte; consumes both. */
static uint64_t mp_take(lua_State *L, mp_in *in, int width) {
    mp_need(L, in, (size_t)width + 1);
    uint64_t v = 0;
    for (int i = 1; i <= width; i++)
        v = (v << 8) | in->p[i];
    in->p += width + 1;
    in->left -= (size_t)width + 1;
    return v;
}

static void mp_push_bytes(lua_State *L, mp_in *in, size_t len) {
    mp_need(L, in, len);
    lua_pushlstring(L, (const char *)in->p, len);
    in->p += len;
    in->left -= len;
}

static void mp_decode(lua_State *L, mp_in *in);

/* A table of `n` entries read from the input. The table is presized from
 * the count only as far as the remaining input could fill it: a forged
 * count of 2^32-1 must not allocate before the input runs out. */
static void mp_decode_container(lua_State *L, mp_in *in, size_t n, int is_map) {
    size_t hint = n < in->left ? n : in->left;
    if (hint > INT_MAX / 2) hint = INT_MAX / 2;
    luaL_checkstack(L, 3, MP_STACK_MSG);
    lua_createtable(L, is_map ? 0 : (int)hint, is_map ? (int)hint : 0);
    for (size_t i = 1; i <= n; i++) {
        if (is_map) {
            mp_decode(L, in);
            mp_decode(L, in);
            lua_rawset(L, -3);
        } else {
            mp_decode(L, in);
            lua_rawseti(L, -2, (int)i);
        }
    }
}

static void mp_push_float(lua_State *L, uint64_t bits) {
    uint32_t b32 = (uint32_t)bits;
    float f;
    memcpy(&f, &b32, sizeof f);
    lua_pushnumber(L, f);
}

static void mp_push_double(lua_State *L, uint64_t bits) {
    double d;
    memcpy(&d, &bits, sizeof d);
    lua_pushnumber(L, d);
}

/* Decodes a value whose tag byte alone says what it is (nil, booleans and
 * the fix forms); 0 when the tag is none of those. */
static int mp_decode_short(lua_State *L, mp_in *in, unsigned char tag) {
    if (tag == 0xc0)
        lua_pushnil(L);
    else if (tag == 0xc2 || tag == 0xc3)
        lua_pushboolean(L, tag == 0xc3);
    else if ((tag & 0x80) == 0)
        lua_pushinteger(L, tag);
    else if ((tag & 0xe0) == 0xe0)
        lua_pushinteger(L, (int8_t)tag);
    else if ((tag & 0xe0) == 0xa0 || (tag & 0xe0) == 0x80) {
        mp_take(L, in, 0);
        if ((tag & 0xe0) == 0xa0)
            mp_push_bytes(L, in, tag & 0x1f);
        else
            mp_decode_container(L, in, tag & 0xf, (tag & 0xf0) == 0x80);
        return 1;
    } else
        return 0;
    mp_take(L, in, 0);
    return 1;
}

/* Decodes one value and pushes it. */
static void mp_decode(lua_State *L, mp_in *in) {
    mp_need(L, in, 1);
    luaL_checkstack(L, 1, MP_STACK_MSG);
    unsigned char tag = in->p[0];
    switch (tag) {
    case 0xcc:
        lua_pushinteger(L, (lua_Integer)mp_take(L, in, 1));
        return;
    case 0xcd:
        lua_pushinteger(L, (lua_Integer)mp_take(L, in, 2));
        return;
    case 0xce:
        lua_pushinteger(L, (lua_Integer)mp_take(L, in, 4));
        return;
    case 0xcf:
        lua_pushinteger(L, (lua_Integer)mp_take(L, in, 8));
        return;
    case 0xd0:
        lua_pushinteger(L, (int8_t)mp_take(L, in, 1));
        return;
    case 0xd1:
        lua_pushinteger(L, (int16_t)mp_take(L, in, 2));
        return;
    case 0xd2:
        lua_pushinteger(L, (int32_t)mp_take(L, in, 4));
        return;
    case 0xd3:
        lua_pushnumber(L, (lua_Number)(int64_t)mp_take(L, in, 8));
        return;
    case 0xca:
        mp_push_float(L, mp_take(L, in, 4));
        return;
    case 0xcb:
        mp_push_double(L, mp_take(L, in, 8));
        return;
    case 0xd9:
        mp_push_bytes(L, in, (size_t)mp_take(L, in, 1));
        return;
    case 0xda:
        mp_push_bytes(L, in, (size_t)mp_take(L, in, 2));
        return;
    case 0xdb:
        mp_push_bytes(L, in, (size_t)mp_take(L, in, 4));
        return;
    case 0xdc:
        mp_decode_container(L, in, (size_t)mp_take(L, in, 2), 0);
        return;
    case 0xdd:
        mp_decode_container(L, in, (size_t)mp_take(L, in, 4), 0);
        return;
    case 0xde:
        mp_decode_container(L, in, (size_t)mp_take(L, in, 2), 1);
        return;
    case 0xdf:
        mp_decode_container(L, in, (size_t)mp_take(L, in, 4), 1);
        return;
    default:
        if (!mp_decode_short(L, in, tag)) luaL_error(L, "Bad data format in input.");
    }
}

/* Decodes up to `limit` values from byte `offset` of argument 1 (limit 0
 * with offset 0: all of them, without the offset result). Otherwise the
 * offset of the next value comes first, -1 when the input is used up. */
static int mp_unpack_full(lua_State *L, lua_Integer limit, lua_Integer offset) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    int all = limit == 0 && offset == 0;
    if (offset < 0 || limit < 0)
        return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.",
                          (int)offset, (int)limit);
    if ((size_t)offset > len)
        return luaL_error(L, "Start offset %d greater than input length %d.", (int)offset,
                          (int)len);
    if (all) limit = INT_MAX;
    mp_in in = {(const unsigned char *)s + offset, len - (size_t)offset};
    int count = 0;
    for (; in.left > 0 && count < limit; count++)
        mp_decode(L, &in);
    if (all) return count;
    luaL_checkstack(L, 1, "in function cmsgpack.unpack");
    lua_pushinteger(L, in.left == 0 ? -1 : (lua_Integer)(len - in.left));
    lua_insert(L, 2);
    return count + 1;
}

static int mp_unpack(lua_State *L) {
    return mp_unpack_full(L, 0, 0);
}

static int mp_unpack_one(lua_State *L) {
    lua_Integer offset = luaL_optinteger(L, 2, 0);
    lua_settop(L, 1);
    return mp_unpack_full(L, 1, offset);
}

static int mp_unpack_limit(lua_State *L) {
    lua_Integer limit = luaL_checkinteger(L, 2);
    lua_Integer offset = luaL_optinteger(L, 3, 0);
    lua_settop(L, 1);
    return mp_unpack_full(L, limit, offset);
}

static const luaL_Reg mp_funcs[] = {
    {"pack", mp_pack},
    {"unpack", mp_unpack},
    {"unpack_one", mp_unpack_one},
    {"unpack_limit", mp_unpack_limit},
    {NULL, NULL},
};

int luaopen_cmsgpack(lua_State *L) {
    lua_newtable(L);
    for (const luaL_Reg *r = mp_funcs; r->name; r++) {
        lua_pushcfunction(L, r->func);
        lua_setfield(L, -2, r->name);
    }
    lua_pushliteral(L, "cmsgpack");
    lua_setfield(L, -2, "_NAME");
    lua_pushliteral(L, "lua-cmsgpack 0.4.0");
    lua_setfield(L, -2, "_VERSION");
    lua_pushliteral(L, "Copyright (C) 2012, Redis Ltd.");
    lua_setfield(L, -2, "_COPYRIGHT");
    lua_pushliteral(L, "MessagePack C implementation for Lua");
    lua_setfield(L, -2, "_DESCRIPTION");
    lua_pushvalue(L, -1);
    lua_setglobal(L, "cmsgpack");
    return 1;
}
