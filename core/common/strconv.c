/* strconv.c -- strict conversions between decimal strings and integers
 * (see strconv.h). */
#include "common/strconv.h"

#include <limits.h>

int str_to_ll(const char *s, size_t len, long long *out) {
    if (len == 0 || len > 20) return 0;
    size_t i = 0;
    int neg = 0;
    if (s[0] == '-') {
        neg = 1;
        if (++i == len) return 0;
    }
    if (s[i] == '0' && (len - i > 1 || neg)) return 0; /* "0" alone only */
    unsigned long long v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        unsigned long long d = (unsigned long long)(s[i] - '0');
        if (v > (ULLONG_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1) return 0;
        *out = (long long)(0 - v);
    } else {
        if (v > (unsigned long long)LLONG_MAX) return 0;
        *out = (long long)v;
    }
    return 1;
}

size_t ull_to_str(char *buf, unsigned long long v) {
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    size_t len = 0;
    while (n)
        buf[len++] = tmp[--n];
    buf[len] = '\0';
    return len;
}

size_t ll_to_str(char *buf, long long v) {
    if (v >= 0) return ull_to_str(buf, (unsigned long long)v);
    buf[0] = '-';
    return 1 + ull_to_str(buf + 1, 0 - (unsigned long long)v);
}
