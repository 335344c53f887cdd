/* object.c -- value objects: creation, encodings, reference counts. */
#include "keyspace/object.h"

#include "common/common.h"
#include "common/kmem.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Module values are freed through their type; the module layer sets this. */
void (*obj_free_large_hook)(void *buf);

int str_to_ld(const char *s, size_t len, long double *out) {
    char buf[5120];
    if (len == 0 || len >= sizeof(buf) || isspace((unsigned char)s[0])) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    long double v = strtold(buf, &end);
    if ((size_t)(end - buf) != len || errno == ERANGE || isnan(v)) return 0;
    *out = v;
    return 1;
}

/* Valkey's string2d: the whole slice must be a strtod number ("inf",
 * exponents and hex included), with no leading space; NaN and an overflow
 * to infinity are refused, an underflow to a denormal is not. */
int str_to_double(const char *s, size_t len, double *out) {
    char buf[5120];
    if (len == 0 || len >= sizeof(buf) || isspace((unsigned char)s[0])) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if ((size_t)(end - buf) != len || isnan(v)) return 0;
    if (errno == ERANGE && (isinf(v) || v == 0)) return 0;
    *out = v;
    return 1;
}

/* Writes the shortest digits that read back as v (1 to 17 of them) into
 * digits and returns how many; *exp10 is the power of ten of the last
 * digit. v is finite, nonzero and positive. */
static int double_shortest_digits(double v, char *digits, int *exp10) {
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
        if (strtod(tmp, NULL) == v || prec == 17) break;
    }
    int n = 0;
    const char *p = tmp;
    for (; *p != 'e'; p++)
        if (*p != '.') digits[n++] = *p;
    int e = atoi(p + 1);
    while (n > 1 && digits[n - 1] == '0')
        n--;
    *exp10 = e - (n - 1);
    return n;
}

/* The layout of Valkey's fpconv_dtoa: plain digits for integers of up to
 * ndigits+7 places, a plain decimal for a fraction of under 7 places (or
 * a small exponent), scientific notation ("1.5e+20", "1e-07") otherwise. */
static size_t double_layout(char *out, const char *digits, int n, int k) {
    int exp = k + n - 1;
    int aexp = exp < 0 ? -exp : exp;
    size_t len = 0;
    if (k >= 0 && aexp < n + 7) {
        memcpy(out, digits, (size_t)n);
        memset(out + n, '0', (size_t)k);
        return (size_t)(n + k);
    }
    if (k < 0 && (k > -7 || aexp < 4)) {
        int point = n + k; /* digits before the point */
        if (point <= 0) {
            out[len++] = '0';
            out[len++] = '.';
            memset(out + len, '0', (size_t)-point);
            len += (size_t)-point;
            memcpy(out + len, digits, (size_t)n);
            return len + (size_t)n;
        }
        memcpy(out, digits, (size_t)point);
        out[point] = '.';
        memcpy(out + point + 1, digits + point, (size_t)(n - point));
        return (size_t)(n + 1);
    }
    out[len++] = digits[0];
    if (n > 1) {
        out[len++] = '.';
        memcpy(out + len, digits + 1, (size_t)(n - 1));
        len += (size_t)(n - 1);
    }
    len += (size_t)sprintf(out + len, "e%c%02d", exp < 0 ? '-' : '+', aexp);
    if (aexp < 10) { /* fpconv writes one exponent digit below 10 */
        out[len - 2] = out[len - 1];
        len--;
    }
    return len;
}

size_t double_to_str(char *buf, double v) {
    if (isnan(v)) return (size_t)sprintf(buf, "nan");
    if (isinf(v)) return (size_t)sprintf(buf, v < 0 ? "-inf" : "inf");
    if (v == 0) return (size_t)sprintf(buf, signbit(v) ? "-0" : "0");
    /* Integral values print as integers, as Valkey's double2ll path. */
    if (v >= (double)(-LLONG_MAX / 2) && v <= (double)(LLONG_MAX / 2)) {
        long long ll = (long long)v;
        if ((double)ll == v) return ll_to_str(buf, ll);
    }
    char digits[24];
    int k;
    size_t len = 0;
    if (v < 0) buf[len++] = '-';
    int n = double_shortest_digits(fabs(v), digits, &k);
    len += double_layout(buf + len, digits, n, k);
    buf[len] = '\0';
    return len;
}

size_t ld_to_str(char *buf, size_t buflen, long double v) {
    int n = isinf(v) ? snprintf(buf, buflen, v > 0 ? "inf" : "-inf") : snprintf(buf, buflen, "%.17Lf", v);
    if (n < 0 || (size_t)n >= buflen) return 0; /* does not fit: nothing usable */
    /* Trim trailing zeros and a trailing dot: "3.50000" -> "3.5". */
    if (!isinf(v) && strchr(buf, '.')) {
        while (n > 0 && buf[n - 1] == '0') n--;
        if (n > 0 && buf[n - 1] == '.') n--;
    }
    buf[n] = '\0';
    if (n == 2 && buf[0] == '-' && buf[1] == '0') {
        buf[0] = '0';
        buf[1] = '\0';
        n = 1;
    }
    return (size_t)n;
}

/* INT and EMBSTR objects use no field from `cap` on, so they are allocated
 * without them (OBJ_SHORT_HEADER bytes, the EMBSTR bytes right after): a
 * 16-byte value fits a 48-byte block instead of a 64-byte one. Only RAW
 * strings and module values have the whole struct. */
static kobj *obj_new(uint8_t encoding, size_t extra) {
    int whole = encoding == OBJ_ENC_RAW;
    kobj *o = km_alloc((whole ? sizeof(kobj) : OBJ_SHORT_HEADER) + extra);
    o->refcount = 1;
    o->type = OBJ_STRING;
    o->encoding = encoding;
    o->flags = 0;
    if (whole) {
        o->cap = 0;
        o->mod_type = NULL;
    }
    return o;
}

kobj *obj_new_aggregate(uint8_t type, uint8_t encoding, void *ptr) {
    kobj *o = km_alloc(OBJ_AGGREGATE_HEADER);
    o->refcount = 1;
    o->type = type;
    o->encoding = encoding;
    o->flags = 0;
    o->v.ptr = ptr;
    return o;
}

kobj *obj_int_unshared(int64_t value) {
    kobj *o = obj_new(OBJ_ENC_INT, 0);
    char tmp[24];
    o->len = ll_to_str(tmp, value);
    o->v.ival = value;
    return o;
}

/* The shared integers: static, so never freed; filled before main() runs
 * (a constructor, not a setup call, so every user of the keyspace library,
 * the unit tests included, finds them ready without a setup order). */
static kobj shared_ints[OBJ_SHARED_INTEGERS];

__attribute__((constructor)) static void obj_shared_ints_init(void) {
    for (int i = 0; i < OBJ_SHARED_INTEGERS; i++) {
        kobj *o = &shared_ints[i];
        o->refcount = OBJ_SHARED_REFCOUNT;
        o->type = OBJ_STRING;
        o->encoding = OBJ_ENC_INT;
        o->len = i < 10 ? 1 : i < 100 ? 2 : i < 1000 ? 3 : 4;
        o->v.ival = i;
    }
}

kobj *obj_int(int64_t value) {
    if (value >= 0 && value < OBJ_SHARED_INTEGERS) return &shared_ints[value];
    return obj_int_unshared(value);
}

static kobj *obj_embstr(const char *s, size_t len) {
    kobj *o = obj_new(OBJ_ENC_EMBSTR, len + 1);
    o->v.ptr = (char *)o + OBJ_SHORT_HEADER;
    memcpy(o->v.ptr, s, len);
    o->v.ptr[len] = '\0';
    o->len = len;
    return o;
}

kobj *obj_string_alloc(size_t cap) {
    kobj *o = obj_new(OBJ_ENC_RAW, 0);
    o->v.ptr = km_alloc_large(cap + 1); /* big values: see KM_LARGE */
    o->v.ptr[0] = '\0';
    o->len = 0;
    o->cap = cap;
    return o;
}

kobj *obj_string_raw(const char *s, size_t len) {
    kobj *o = obj_string_alloc(len);
    memcpy(o->v.ptr, s, len);
    o->v.ptr[len] = '\0';
    o->len = len;
    return o;
}

kobj *obj_string_adopt(char *buf, size_t len, size_t cap) {
    kobj *o = obj_new(OBJ_ENC_RAW, 0);
    o->v.ptr = buf;
    o->v.ptr[len] = '\0';
    o->len = len;
    o->cap = cap;
    return o;
}

kobj *obj_string(const char *s, size_t len) {
    long long v;
    if (len <= 20 && str_to_ll(s, len, &v)) return obj_int(v);
    if (len <= OBJ_EMBSTR_MAX) return obj_embstr(s, len);
    return obj_string_raw(s, len);
}

/* ---- the string type ---- */

static const char *string_type_name(const kobj *o) {
    K_UNUSED(o);
    return "string";
}

static const char *string_encoding_name(const kobj *o) {
    switch (o->encoding) {
    case OBJ_ENC_INT:
        return "int";
    case OBJ_ENC_EMBSTR:
        return "embstr";
    default:
        return "raw";
    }
}

/* large_hook: whether a large buffer may go to obj_free_large_hook (on
 * the main thread only). */
static void string_free_buffer(kobj *o, int large_hook) {
    if (o->encoding != OBJ_ENC_RAW) return;
    if (o->cap < KM_LARGE)
        km_free(o->v.ptr);
    else if (large_hook && obj_free_large_hook)
        obj_free_large_hook(o->v.ptr);
    else
        km_free_large(o->v.ptr);
}

static void string_free_value(kobj *o) {
    string_free_buffer(o, 1);
}

static size_t string_mem_usage(const kobj *o, size_t samples) {
    K_UNUSED(samples);
    return o->encoding == OBJ_ENC_RAW ? km_usable(o->v.ptr) : 0;
}

/* Keeps the encoding: an INT stays an INT, a RAW string stays RAW (it may
 * be growing). A shared integer gets an object of its own, as Valkey's
 * COPY gives. */
static kobj *string_copy(const kobj *o) {
    if (o->encoding == OBJ_ENC_INT) return obj_int_unshared(o->v.ival);
    if (o->encoding == OBJ_ENC_RAW) return obj_string_raw(o->v.ptr, o->len);
    return obj_string(o->v.ptr, o->len);
}

static const obj_type string_type = {
    .type_name = string_type_name,
    .encoding_name = string_encoding_name,
    .free_value = string_free_value,
    .mem_usage = string_mem_usage,
    .copy = string_copy,
};

static const obj_type *types[OBJ_TYPE_MAX] = {[OBJ_STRING] = &string_type};

void obj_set_type(int id, const obj_type *t) {
    if (id >= 0 && id < OBJ_TYPE_MAX) types[id] = t;
}

const obj_type *obj_type_of(const kobj *o) {
    return types[o->type];
}

void obj_decref(kobj *o) {
    if (o->refcount == OBJ_SHARED_REFCOUNT || --o->refcount > 0) return;
    /* Strings, the common case, skip the indirect call. */
    if (K_LIKELY(o->type == OBJ_STRING))
        string_free_value(o);
    else if (types[o->type])
        types[o->type]->free_value(o);
    km_free(o);
}

size_t obj_free_effort(const kobj *o) {
    const obj_type *t = types[o->type];
    return t && t->free_effort ? t->free_effort(o) : 1;
}

int obj_free_anywhere(const kobj *o) {
    return o->type == OBJ_STRING || (types[o->type] && types[o->type]->free_effort);
}

void obj_free_detached(kobj *o) {
    if (o->type == OBJ_STRING)
        string_free_buffer(o, 0);
    else if (types[o->type])
        types[o->type]->free_value(o);
    km_free(o);
}

const char *obj_str(const kobj *o, char *buf, size_t *len) {
    if (o->encoding == OBJ_ENC_INT) {
        *len = ll_to_str(buf, o->v.ival);
        return buf;
    }
    *len = o->len;
    return o->v.ptr;
}

size_t obj_strlen(const kobj *o) {
    return o->len;
}

int obj_get_int(const kobj *o, int64_t *out) {
    if (o->encoding == OBJ_ENC_INT) {
        *out = o->v.ival;
        return 1;
    }
    long long v;
    if (!str_to_ll(o->v.ptr, o->len, &v)) return 0;
    *out = v;
    return 1;
}

kobj *obj_make_writable(kobj *o, size_t need) {
    if (o->encoding == OBJ_ENC_RAW && o->refcount == 1) {
        if (o->cap < need) {
            size_t cap = need < 1024 * 1024 ? need * 2 : need + 1024 * 1024;
            /* A big buffer grows in the large arena, whose frees the purge
             * tracks (see KM_LARGE). */
            o->v.ptr = cap >= KM_LARGE ? km_realloc_large(o->v.ptr, cap + 1)
                                       : km_realloc(o->v.ptr, cap + 1);
            o->cap = cap;
        }
        return o;
    }
    char buf[24];
    size_t len;
    const char *s = obj_str(o, buf, &len);
    kobj *n = obj_string_alloc(need > len ? need : len);
    memcpy(n->v.ptr, s, len);
    n->v.ptr[len] = '\0';
    n->len = len;
    obj_decref(o);
    return n;
}

size_t obj_mem_usage_sampled(const kobj *o, size_t samples) {
    /* A shared integer is no allocation: count its header, as Valkey does. */
    if (obj_is_shared(o)) return sizeof(kobj);
    const obj_type *t = types[o->type];
    return km_usable(o) + (t ? t->mem_usage(o, samples ? samples : 1) : 0);
}

size_t obj_mem_usage(const kobj *o) {
    return obj_mem_usage_sampled(o, OBJ_MEM_SAMPLES);
}

const char *obj_encoding_name(const kobj *o) {
    const obj_type *t = types[o->type];
    return t ? t->encoding_name(o) : "raw";
}

const char *obj_type_name(const kobj *o) {
    const obj_type *t = types[o->type];
    return t ? t->type_name(o) : "none";
}

kobj *obj_copy(const kobj *o) {
    const obj_type *t = types[o->type];
    return t && t->copy ? t->copy(o) : NULL;
}
