/* sbuf.h -- a growable, NUL-terminated text buffer for formatted output
 * (INFO sections, module info fields). Zero-initialise, append, km_free the
 * data when done.
 *
 * Threads: a buffer belongs to one thread at a time. */
#ifndef KEEL_SBUF_H
#define KEEL_SBUF_H

#include <stddef.h>

typedef struct sbuf {
    char *data;
    size_t len;
    size_t cap;
} sbuf;

void sbuf_appendf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends len bytes (any bytes), keeping the buffer NUL-terminated. */
void sbuf_append(sbuf *b, const char *s, size_t len);

#endif
