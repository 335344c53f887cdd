/* lib_struct.c -- the struct library of Lua scripts: struct.pack,
 * struct.unpack and struct.size over Roberto Ierusalimschy's format
 * language, as Valkey scripts know it:
 *
 *   >  <     big / little endian from here on
 *   ![n]     maximum alignment n (a power of 2; default: the native one)
 *   x        one byte of padding
 *   b B      signed / unsigned char      h H   short      l L   long
 *   T        size_t                      f     float      d     double
 *   i[n] I[n] signed / unsigned integer of n bytes (default: int), n <= 32
 *   c[n]     n bytes of a string; pack: c0 is the whole string; unpack: c0
 *            takes its length from the number read just before
 *   s        a zero-terminated string
 *   ' '      ignored
 *
 * Every number in a format and every offset is checked before it is used
 * (the integer-overflow classes of CVE-2020-14147 and CVE-2021-32627/32628):
 * a count that overflows an int, an integer size over the limit, an
 * alignment that is not a power of 2, an offset before the data or a length
 * past its end are errors, never arithmetic that wraps. */
#include "lua_libs.h"

#include <ctype.h>
#include <lauxlib.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Largest integer size an i/I option may ask for. */
#define ST_MAXINTSIZE 32

/* The native maximum alignment: what a double gets inside a struct, or an
 * int's size when that is larger. */
struct st_align_probe {
    char c;
    double d;
};
#define ST_PADDING (offsetof(struct st_align_probe, d))
#define ST_MAXALIGN ((int)(ST_PADDING > sizeof(int) ? ST_PADDING : sizeof(int)))

enum { ST_BIG = 0, ST_LITTLE = 1 };

typedef struct st_header {
    int endian;
    int align;
} st_header;

static int st_native_endian(void) {
    const uint16_t probe = 1;
    return *(const unsigned char *)&probe == 1 ? ST_LITTLE : ST_BIG;
}

static void st_header_init(st_header *h) {
    h->endian = st_native_endian();
    h->align = 1;
}

/* The decimal number at *fmt (consumed), or df when there is none. */
static int st_getnum(lua_State *L, const char **fmt, int df) {
    if (!isdigit((unsigned char)**fmt)) return df;
    int a = 0;
    while (isdigit((unsigned char)**fmt)) {
        int digit = *(*fmt)++ - '0';
        if (a > (INT_MAX - digit) / 10) luaL_error(L, "integral size overflow");
        a = a * 10 + digit;
    }
    return a;
}

/* The size of option opt, reading its count from the format. Options that
 * take no room (s, endianness, alignment, spaces) report 0. */
static size_t st_optsize(lua_State *L, int opt, const char **fmt) {
    switch (opt) {
    case 'B':
    case 'b':
        return sizeof(char);
    case 'H':
    case 'h':
        return sizeof(short);
    case 'L':
    case 'l':
        return sizeof(long);
    case 'T':
        return sizeof(size_t);
    case 'f':
        return sizeof(float);
    case 'd':
        return sizeof(double);
    case 'x':
        return 1;
    case 'c':
        return (size_t)st_getnum(L, fmt, 1);
    case 'i':
    case 'I': {
        int sz = st_getnum(L, fmt, (int)sizeof(int));
        if (sz > ST_MAXINTSIZE)
            luaL_error(L, "integral size %d is larger than limit of %d", sz, ST_MAXINTSIZE);
        return (size_t)sz;
    }
    default:
        return 0;
    }
}

/* Padding bytes that put an item of `size` at an aligned offset after
 * `len` bytes (strings are never aligned). */
static size_t st_toalign(size_t len, const st_header *h, int opt, size_t size) {
    if (size == 0 || opt == 'c') return 0;
    if (size > (size_t)h->align) size = (size_t)h->align;
    return (size - (len & (size - 1))) & (size - 1);
}

/* Endianness, alignment and spaces; anything else is not an option. */
static void st_control(lua_State *L, int opt, const char **fmt, st_header *h) {
    switch (opt) {
    case ' ':
        return;
    case '>':
        h->endian = ST_BIG;
        return;
    case '<':
        h->endian = ST_LITTLE;
        return;
    case '!': {
        int a = st_getnum(L, fmt, ST_MAXALIGN);
        if (a <= 0 || (a & (a - 1)) != 0) luaL_error(L, "alignment %d is not a power of 2", a);
        h->align = a;
        return;
    }
    default:
        luaL_argerror(L, 1, lua_pushfstring(L, "invalid format option '%c'", opt));
    }
}

/* n as the two's-complement bit pattern of an integer: exact for every
 * value in [-2^63, 2^64), reduced modulo 2^64 beyond (converting an
 * out-of-range double to an integer type directly is undefined). */
static uint64_t st_bits_of(lua_Number n) {
    const double two64 = 18446744073709551616.0;
    if (isnan(n) || isinf(n)) return 0;
    if (n >= -9223372036854775808.0 && n < 0) return (uint64_t)(int64_t)n;
    if (n >= 0 && n < two64) return (uint64_t)n;
    n = fmod(n, two64);
    if (n < 0) n += two64;
    return n < two64 ? (uint64_t)n : 0;
}

static void st_put_integer(lua_State *L, luaL_Buffer *b, int arg, int endian, size_t size) {
    uint64_t v = st_bits_of(luaL_checknumber(L, arg));
    char buf[ST_MAXINTSIZE];
    for (size_t i = 0; i < size; i++) {
        size_t at = endian == ST_LITTLE ? i : size - 1 - i;
        buf[at] = (char)(i < sizeof v ? (v >> (8 * i)) & 0xff : 0);
    }
    luaL_addlstring(b, buf, size);
}

/* Reverses the bytes of a float or double written in the other order. */
static void st_fix_order(char *p, size_t size, int endian) {
    if (endian == st_native_endian()) return;
    for (size_t i = 0, j = size - 1; i < j; i++, j--) {
        char t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

static void st_put_string(lua_State *L, luaL_Buffer *b, int arg, int opt, size_t *size) {
    size_t l;
    const char *s = luaL_checklstring(L, arg, &l);
    if (*size == 0) *size = l;
    luaL_argcheck(L, l >= *size, arg, "string too short");
    luaL_addlstring(b, s, *size);
    if (opt == 's') {
        luaL_addchar(b, '\0');
        (*size)++;
    }
}

/* struct.pack(fmt, v1, ...) */
static int st_pack(lua_State *L) {
    const char *fmt = luaL_checkstring(L, 1);
    st_header h;
    int arg = 2;
    size_t total = 0;
    luaL_Buffer b;
    st_header_init(&h);
    lua_pushnil(L); /* keeps the arguments apart from the buffer's slots */
    luaL_buffinit(L, &b);
    while (*fmt) {
        int opt = (unsigned char)*fmt++;
        size_t size = st_optsize(L, opt, &fmt);
        size_t pad = st_toalign(total, &h, opt, size);
        total += pad;
        while (pad-- > 0)
            luaL_addchar(&b, '\0');
        switch (opt) {
        case 'b':
        case 'B':
        case 'h':
        case 'H':
        case 'l':
        case 'L':
        case 'T':
        case 'i':
        case 'I':
            st_put_integer(L, &b, arg++, h.endian, size);
            break;
        case 'x':
            luaL_addchar(&b, '\0');
            break;
        case 'f': {
            float f = (float)luaL_checknumber(L, arg++);
            st_fix_order((char *)&f, size, h.endian);
            luaL_addlstring(&b, (char *)&f, size);
            break;
        }
        case 'd': {
            double d = luaL_checknumber(L, arg++);
            st_fix_order((char *)&d, size, h.endian);
            luaL_addlstring(&b, (char *)&d, size);
            break;
        }
        case 'c':
        case 's':
            st_put_string(L, &b, arg++, opt, &size);
            break;
        default:
            st_control(L, opt, &fmt, &h);
        }
        total += size;
    }
    luaL_pushresult(&b);
    return 1;
}

/* The integer of `size` bytes at p; sizes past 8 bytes keep the low 8. */
static lua_Number st_get_integer(const char *p, int endian, int is_signed, size_t size) {
    uint64_t v = 0;
    for (size_t i = 0; i < size; i++) {
        size_t at = endian == ST_BIG ? i : size - 1 - i;
        v = (v << 8) | (unsigned char)p[at];
    }
    if (!is_signed) return (lua_Number)v;
    if (size > 0 && size < sizeof v) {
        uint64_t sign = (uint64_t)1 << (size * 8 - 1);
        if (v & sign) v |= ~(sign - 1);
    }
    return (lua_Number)(int64_t)v;
}

static void st_check_room(lua_State *L, size_t pos, size_t size, size_t ld) {
    luaL_argcheck(L, size <= ld && pos <= ld - size, 2, "data string too short");
}

/* The length of a c0 item: the number just unpacked, popped. */
static size_t st_take_length(lua_State *L, int *n, size_t pos, size_t ld) {
    if (*n == 0 || !lua_isnumber(L, -1)) luaL_error(L, "format 'c0' needs a previous size");
    lua_Number len = lua_tonumber(L, -1);
    lua_pop(L, 1);
    (*n)--;
    luaL_argcheck(L, len >= 0 && len <= (lua_Number)(ld - pos), 2, "data string too short");
    return (size_t)len;
}

/* The options that unpack to a value. */
#define ST_ITEMS "bBhHlLTiIfdcs"

/* Pushes the item of option opt at data+pos; returns its size. */
static size_t st_get_item(lua_State *L, int opt, const char *data, size_t pos, size_t ld,
                          size_t size, const st_header *h, int *n) {
    switch (opt) {
    case 'b':
    case 'B':
    case 'h':
    case 'H':
    case 'l':
    case 'L':
    case 'T':
    case 'i':
    case 'I':
        lua_pushnumber(L, st_get_integer(data + pos, h->endian, islower(opt), size));
        (*n)++;
        break;
    case 'f': {
        float f;
        memcpy(&f, data + pos, size);
        st_fix_order((char *)&f, sizeof f, h->endian);
        lua_pushnumber(L, f);
        (*n)++;
        break;
    }
    case 'd': {
        double d;
        memcpy(&d, data + pos, size);
        st_fix_order((char *)&d, sizeof d, h->endian);
        lua_pushnumber(L, d);
        (*n)++;
        break;
    }
    case 'c':
        if (size == 0) size = st_take_length(L, n, pos, ld);
        lua_pushlstring(L, data + pos, size);
        (*n)++;
        break;
    case 's': {
        const char *e = memchr(data + pos, '\0', ld - pos);
        if (e == NULL) luaL_error(L, "unfinished string in data");
        size = (size_t)(e - (data + pos)) + 1;
        lua_pushlstring(L, data + pos, size - 1);
        (*n)++;
        break;
    }
    }
    return size;
}

/* struct.unpack(fmt, data [, pos]): the values, then the next position. */
static int st_unpack(lua_State *L) {
    const char *fmt = luaL_checkstring(L, 1);
    size_t ld;
    const char *data = luaL_checklstring(L, 2, &ld);
    lua_Integer start = luaL_optinteger(L, 3, 1);
    luaL_argcheck(L, start > 0, 3, "offset must be 1 or greater");
    size_t pos = (size_t)start - 1;
    int n = 0;
    st_header h;
    st_header_init(&h);
    while (*fmt) {
        int opt = (unsigned char)*fmt++;
        size_t size = st_optsize(L, opt, &fmt);
        size_t pad = st_toalign(pos, &h, opt, size);
        luaL_argcheck(L, pos <= SIZE_MAX - pad, 3, "offset out of range");
        pos += pad;
        st_check_room(L, pos, size, ld);
        luaL_checkstack(L, 2, "too many results");
        if (strchr(ST_ITEMS, opt))
            size = st_get_item(L, opt, data, pos, ld, size, &h, &n);
        else if (opt != 'x')
            st_control(L, opt, &fmt, &h);
        pos += size;
    }
    lua_pushinteger(L, (lua_Integer)(pos + 1));
    return n + 1;
}

/* struct.size(fmt): the bytes a pack of fmt takes (fixed sizes only). */
static int st_size(lua_State *L) {
    const char *fmt = luaL_checkstring(L, 1);
    size_t pos = 0;
    st_header h;
    st_header_init(&h);
    while (*fmt) {
        int opt = (unsigned char)*fmt++;
        size_t size = st_optsize(L, opt, &fmt);
        pos += st_toalign(pos, &h, opt, size);
        if (opt == 's')
            luaL_argerror(L, 1, "option 's' has no fixed size");
        else if (opt == 'c' && size == 0)
            luaL_argerror(L, 1, "option 'c0' has no fixed size");
        if (!isalnum(opt)) st_control(L, opt, &fmt, &h);
        if (size > SIZE_MAX / 2 || pos > SIZE_MAX / 2 - size) luaL_error(L, "format size overflow");
        pos += size;
    }
    lua_pushinteger(L, (lua_Integer)pos);
    return 1;
}

static const luaL_Reg st_funcs[] = {
    {"pack", st_pack},
    {"unpack", st_unpack},
    {"size", st_size},
    {NULL, NULL},
};

int luaopen_struct(lua_State *L) {
    luaL_register(L, "struct", st_funcs);
    return 1;
}
