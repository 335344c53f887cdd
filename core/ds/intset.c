/* intset.c -- a sorted array of integers in the narrowest width that fits
 * (see intset.h). */
#include "ds/intset.h"

#include "common/kmem.h"

#include <string.h>

/* The width a value needs. */
static uint32_t intset_width_for(int64_t v) {
    if (v >= INT16_MIN && v <= INT16_MAX) return 2;
    if (v >= INT32_MIN && v <= INT32_MAX) return 4;
    return 8;
}

static int64_t intset_read(const unsigned char *data, uint32_t width, size_t i) {
    switch (width) {
    case 2: {
        int16_t v;
        memcpy(&v, data + i * 2, 2);
        return v;
    }
    case 4: {
        int32_t v;
        memcpy(&v, data + i * 4, 4);
        return v;
    }
    default: {
        int64_t v;
        memcpy(&v, data + i * 8, 8);
        return v;
    }
    }
}

static void intset_write(unsigned char *data, uint32_t width, size_t i, int64_t v) {
    switch (width) {
    case 2: {
        int16_t n = (int16_t)v;
        memcpy(data + i * 2, &n, 2);
        break;
    }
    case 4: {
        int32_t n = (int32_t)v;
        memcpy(data + i * 4, &n, 4);
        break;
    }
    default:
        memcpy(data + i * 8, &v, 8);
    }
}

intset *intset_new(void) {
    intset *s = km_alloc(sizeof(intset));
    s->width = 2;
    s->count = 0;
    return s;
}

void intset_free(intset *s) {
    km_free(s);
}

size_t intset_bytes(const intset *s) {
    return sizeof(intset) + (size_t)s->count * s->width;
}

intset *intset_dup(const intset *s) {
    size_t n = intset_bytes(s);
    intset *d = km_alloc(n);
    memcpy(d, s, n);
    return d;
}

int64_t intset_get(const intset *s, size_t i) {
    return intset_read(s->data, s->width, i);
}

int64_t intset_min(const intset *s) {
    return intset_get(s, 0);
}

int64_t intset_max(const intset *s) {
    return intset_get(s, s->count - 1);
}

/* Binary search: 1 and *at = v's index when v is a member, else 0 and
 * *at = the index where v would be inserted. */
static int intset_search(const intset *s, int64_t v, size_t *at) {
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t m = intset_get(s, mid);
        if (m == v) {
            *at = mid;
            return 1;
        }
        if (m < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return 0;
}

int intset_contains(const intset *s, int64_t v) {
    size_t at;
    if (intset_width_for(v) > s->width) return 0; /* wider than any member */
    return intset_search(s, v, &at);
}

/* Rewrites every member in the wider width, back to front so the array can
 * be widened in place, and leaves room for one more member. */
static intset *intset_widen(intset *s, uint32_t width) {
    uint32_t old = s->width;
    s = km_realloc(s, sizeof(intset) + ((size_t)s->count + 1) * width);
    for (size_t i = s->count; i-- > 0;)
        intset_write(s->data, width, i, intset_read(s->data, old, i));
    s->width = width;
    return s;
}

intset *intset_add(intset *s, int64_t v, int *added) {
    uint32_t need = intset_width_for(v);
    if (need > s->width) {
        /* A value that needs a wider width is below or above every member. */
        s = intset_widen(s, need);
        if (v < 0) {
            memmove(s->data + need, s->data, (size_t)s->count * need);
            intset_write(s->data, need, 0, v);
        } else {
            intset_write(s->data, need, s->count, v);
        }
        s->count++;
        *added = 1;
        return s;
    }
    size_t at;
    if (intset_search(s, v, &at)) {
        *added = 0;
        return s;
    }
    s = km_realloc(s, sizeof(intset) + ((size_t)s->count + 1) * s->width);
    memmove(s->data + (at + 1) * s->width, s->data + at * s->width,
            (s->count - at) * (size_t)s->width);
    intset_write(s->data, s->width, at, v);
    s->count++;
    *added = 1;
    return s;
}

intset *intset_remove(intset *s, int64_t v, int *removed) {
    size_t at;
    if (intset_width_for(v) > s->width || !intset_search(s, v, &at)) {
        *removed = 0;
        return s;
    }
    memmove(s->data + at * s->width, s->data + (at + 1) * s->width,
            (s->count - at - 1) * (size_t)s->width);
    s->count--;
    *removed = 1;
    return km_realloc(s, intset_bytes(s));
}

int intset_validate(const unsigned char *buf, size_t size) {
    intset h;
    if (size < sizeof(h)) return 0;
    memcpy(&h, buf, sizeof(h));
    if (h.width != 2 && h.width != 4 && h.width != 8) return 0;
    if ((size - sizeof(h)) / h.width != h.count || (size - sizeof(h)) % h.width) return 0;
    const unsigned char *data = buf + sizeof(h);
    for (size_t i = 1; i < h.count; i++)
        if (intset_read(data, h.width, i - 1) >= intset_read(data, h.width, i)) return 0;
    return 1;
}
