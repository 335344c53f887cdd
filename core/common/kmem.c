/* kmem.c -- allocation wrappers over jemalloc, and its memory accounting. */
#include "kmem.h"

#ifdef KEEL_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#else
/* Sanitizer builds use the sanitizer's allocator (ASan and jemalloc cannot
 * both own malloc); its own counters stand in for jemalloc's statistics. */
#include <malloc.h>
/* From the sanitizer runtime (gcc ships no header declaring them). */
size_t __sanitizer_get_current_allocated_bytes(void);
size_t __sanitizer_get_heap_size(void);
#endif
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void km_oom(size_t size) {
    fprintf(stderr, "keel: out of memory allocating %zu bytes\n", size);
    fflush(stderr);
    abort();
}

void *km_alloc(size_t size) {
    void *p = malloc(size ? size : 1);
    if (!p) km_oom(size);
    return p;
}

void *km_calloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) km_oom(count * size);
    return p;
}

void *km_realloc(void *ptr, size_t size) {
    void *p = realloc(ptr, size ? size : 1);
    if (!p) km_oom(size);
    return p;
}

void km_free(void *ptr) {
    free(ptr);
}

void *km_alloc_aligned(size_t align, size_t size) {
    void *p;
    if (posix_memalign(&p, align, size ? size : 1) != 0) km_oom(size);
    return p;
}

char *km_strndup(const char *s, size_t len) {
    char *p = km_alloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *km_strdup(const char *s) {
    return km_strndup(s, strlen(s));
}

#ifdef KEEL_HAVE_JEMALLOC
static unsigned km_large_arena;
static int km_large_ready;
static int64_t km_large_last_ms; /* last large allocation, for the purge */
static _Atomic int km_large_dirty; /* set by any thread */

void km_setup(void) {
    unsigned idx;
    size_t sz = sizeof(idx);
    if (km_large_ready || mallctl("arenas.create", &idx, &sz, NULL, 0) != 0) return;
    char name[64];
    ssize_t never = -1;
    snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", idx);
    if (mallctl(name, NULL, NULL, &never, sizeof(never)) != 0) return;
    snprintf(name, sizeof(name), "arena.%u.muzzy_decay_ms", idx);
    mallctl(name, NULL, NULL, &never, sizeof(never));
    km_large_arena = idx;
    km_large_ready = 1;
}

void *km_alloc_large(size_t size) {
    if (!km_large_ready || size < KM_LARGE) return km_alloc(size);
    void *p = mallocx(size, MALLOCX_ARENA(km_large_arena) | MALLOCX_TCACHE_NONE);
    if (!p) km_oom(size);
    atomic_store_explicit(&km_large_dirty, 1, memory_order_relaxed);
    return p;
}

void km_large_maintain(int64_t now_ms, int64_t idle_ms) {
    if (!km_large_ready) return;
    if (atomic_exchange_explicit(&km_large_dirty, 0, memory_order_relaxed)) {
        km_large_last_ms = now_ms;
        return;
    }
    if (km_large_last_ms && now_ms - km_large_last_ms >= idle_ms) {
        char name[64];
        snprintf(name, sizeof(name), "arena.%u.purge", km_large_arena);
        mallctl(name, NULL, NULL, NULL, 0);
        km_large_last_ms = 0;
    }
}
#else
void km_setup(void) {
}

void *km_alloc_large(size_t size) {
    return km_alloc(size);
}

void km_large_maintain(int64_t now_ms, int64_t idle_ms) {
}
#endif

size_t km_usable(const void *ptr) {
    return ptr ? malloc_usable_size((void *)ptr) : 0;
}

#ifdef KEEL_HAVE_JEMALLOC
static size_t km_stat(const char *name) {
    uint64_t epoch = 1;
    size_t sz = sizeof(epoch);
    mallctl("epoch", &epoch, &sz, &epoch, sz);
    size_t value = 0;
    sz = sizeof(value);
    if (mallctl(name, &value, &sz, NULL, 0) != 0) return 0;
    return value;
}

size_t km_used_memory(void) {
    /* Memory freed into this thread's cache still counts as allocated in
     * jemalloc's statistics; flush it first so eviction sees what it freed. */
    mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
    return km_stat("stats.allocated");
}

size_t km_resident_memory(void) {
    return km_stat("stats.resident");
}
#else
size_t km_used_memory(void) {
    return __sanitizer_get_current_allocated_bytes();
}

size_t km_resident_memory(void) {
    return __sanitizer_get_heap_size();
}
#endif
