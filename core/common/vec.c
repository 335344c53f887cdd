/* vec.c -- the growable array (see vec.h). */
#include "common/vec.h"

#include "common/kmem.h"

void *vec_push(vec *v, size_t item_size) {
    if (v->count == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 16;
        v->items = km_realloc(v->items, v->cap * item_size);
    }
    return (char *)v->items + item_size * v->count++;
}

void vec_free(vec *v) {
    km_free(v->items);
    v->items = NULL;
    v->count = v->cap = 0;
}
