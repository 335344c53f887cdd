/* vec.h -- a growable array of fixed-size items, for results collected
 * before they are replied (the SCAN family: the cursor, known only after
 * the walk, comes first). Zero-initialise, push, vec_free when done.
 *
 * Threads: a vector belongs to one thread at a time. */
#ifndef KEEL_VEC_H
#define KEEL_VEC_H

#include <stddef.h>

typedef struct vec {
    void *items;
    size_t count;
    size_t cap;
} vec;

/* Room for one more item of item_size bytes (the same size every call):
 * returns its slot, valid until the next push. Items may move when the
 * vector grows. */
void *vec_push(vec *v, size_t item_size);
/* Frees the items and empties v. */
void vec_free(vec *v);

#endif
