/* sbuf.c -- the growable text buffer (see sbuf.h). */
#include "common/sbuf.h"

#include "common/kmem.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void sbuf_appendf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    if (!b->data) {
        b->cap = 4096;
        b->data = km_alloc(b->cap);
    }
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        b->cap = b->cap ? b->cap * 2 : 4096;
        if (n > 0 && b->cap - b->len <= (size_t)n) b->cap = b->len + (size_t)n + 1;
        b->data = km_realloc(b->data, b->cap);
    }
}

void sbuf_append(sbuf *b, const char *s, size_t len) {
    if (b->cap - b->len <= len || !b->data) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len <= len) cap *= 2;
        b->data = km_realloc(b->data, cap);
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, len);
    b->len += len;
    b->data[b->len] = '\0';
}
