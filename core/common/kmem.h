/* kmem.h -- memory allocation for the core.
 *
 * Keel links jemalloc as the process allocator, so plain malloc/free are
 * jemalloc's. These wrappers exist for two reasons: an allocation failure is
 * not recoverable in a cache server (the process logs and exits, as Valkey
 * does), and used_memory is read from jemalloc's own accounting rather than a
 * hand-kept counter that drifts. */
#ifndef KEEL_KMEM_H
#define KEEL_KMEM_H

#include <stddef.h>

void *km_alloc(size_t size);
void *km_calloc(size_t count, size_t size);
void *km_realloc(void *ptr, size_t size);
void km_free(void *ptr);
char *km_strdup(const char *s);
char *km_strndup(const char *s, size_t len);

/* Usable size of an allocation (jemalloc's malloc_usable_size). */
size_t km_usable(const void *ptr);

/* Bytes allocated by the process, from jemalloc's "stats.allocated" after
 * flushing this thread's cache and refreshing the statistics epoch. That
 * costs microseconds: callers cache the result (once per event-loop
 * iteration in server.c). */
size_t km_used_memory(void);

/* Resident memory jemalloc holds ("stats.resident"). */
size_t km_resident_memory(void);

#endif
