/* pm_util.c -- a growable byte buffer and string copies, on the server's
 * allocator (counted in used_memory). */
#include "pm_internal.h"

#include <stdio.h>
#include <string.h>

static void pm_buf_reserve(pm_buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->p = pm_api->core->realloc(b->p, cap);
    b->cap = cap;
}

void pm_buf_append(pm_buf *b, const char *s, size_t n) {
    pm_buf_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void pm_buf_printf(pm_buf *b, const char *fmt, ...) {
    va_list ap;
    char small[256];
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof(small)) {
        pm_buf_append(b, small, (size_t)n);
        return;
    }
    pm_buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void pm_buf_free(pm_buf *b) {
    pm_api->core->free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

char *pm_strndup(const char *s, size_t n) {
    char *c = pm_api->core->alloc(n + 1);
    memcpy(c, s, n);
    c[n] = '\0';
    return c;
}

char *pm_strdup(const char *s) {
    return pm_strndup(s, strlen(s));
}
