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
#include <stdint.h>

void *km_alloc(size_t size);
void *km_calloc(size_t count, size_t size);
void *km_realloc(void *ptr, size_t size);
void km_free(void *ptr);
/* align is a power of two, at least sizeof(void *); free with km_free. */
void *km_alloc_aligned(size_t align, size_t size);
char *km_strdup(const char *s);
char *km_strndup(const char *s, size_t len);

/* Buffers of KM_LARGE bytes or more (big values) come from a jemalloc
 * arena that keeps the pages it frees instead of returning them to the
 * kernel at once: with default settings every large value is faulted in
 * afresh (about 2,000 page faults for 8 MB), which caps large SETs at a
 * tenth of the copy speed. Hash table bucket arrays of that size come from
 * it too: a table that grows frees its old array, and without the purge
 * an idle server would keep those pages resident. km_large_maintain() gives the freed pages back
 * once large allocations have paused for a moment. Free (and grow) them
 * with km_free_large (km_realloc_large), which tell it that pages were
 * freed; km_free works but leaves them to the next such free. The
 * km_*_large functions may be called from any thread (I/O threads read
 * big arguments and free big values); km_large_maintain from the main
 * thread only. */
#define KM_LARGE (1024 * 1024)
void *km_alloc_large(size_t size);
void *km_realloc_large(void *ptr, size_t size);
/* km_alloc_large with an alignment (a power of two): the hash tables'
 * bucket arrays, whose old arrays a resize frees. */
void *km_alloc_large_aligned(size_t align, size_t size);
void km_free_large(void *ptr);
/* Sets the large-buffer arena up, with the thread that gives its freed
 * pages back; without jemalloc it is plain malloc. km_teardown stops that
 * thread. Main thread. */
void km_setup(void);
void km_teardown(void);
/* Called from the cron: if large buffers were freed since the last purge
 * and no large allocation happened for quiet_ms, has the arena's free
 * pages given back to the kernel (by its own thread: never waits). */
void km_large_maintain(int64_t now_ms, int64_t quiet_ms);

/* Hands the calling thread's allocation cache back to the allocator, so
 * that what the thread freed leaves "stats.allocated" (used_memory): a
 * thread that frees on the main thread's behalf calls it after each piece
 * of work. Any thread; nothing without jemalloc. */
void km_thread_cache_flush(void);

/* Usable size of an allocation (jemalloc's malloc_usable_size). */
size_t km_usable(const void *ptr);

/* Bytes allocated by the process, from jemalloc's "stats.allocated" after
 * flushing this thread's cache and refreshing the statistics epoch. That
 * costs microseconds: callers cache the result (once per event-loop
 * iteration in server.c). */
size_t km_used_memory(void);

/* Resident memory jemalloc holds ("stats.resident"). */
size_t km_resident_memory(void);
/* Samples used memory and returns the peak seen so far (main thread);
 * CONFIG RESETSTAT starts it again. */
size_t km_peak_memory(void);
void km_reset_peak_memory(void);
/* The unix time in ms of the last new peak (0 before the first sample). */
long long km_peak_memory_time(void);

/* Used memory when start-up finished (INFO used_memory_startup, MEMORY
 * STATS startup.allocated): km_mark_startup records it, once. */
void km_mark_startup(void);
size_t km_startup_memory(void);

/* The allocator's own view, as INFO memory and MEMORY STATS report it
 * (jemalloc's stats.allocated/active/resident, the muzzy pages, and the
 * bytes of free regions in partly used small-size slabs: external
 * fragmentation). Without jemalloc the fields are 0. Refreshes the
 * statistics epoch: microseconds, callers are commands and the cron. */
typedef struct km_allocator_stats {
    size_t allocated;
    size_t active;
    size_t resident;
    size_t muzzy;
    size_t frag_smallbins;
} km_allocator_stats;
void km_allocator_stats_get(km_allocator_stats *st);

/* The process's resident set size (/proc/self/statm; the allocator's
 * resident figure where that cannot be read). */
size_t km_process_rss(void);
/* Physical memory of the machine, bytes (0 if unknown). */
size_t km_system_memory(void);
/* "jemalloc-5.3.0", or "libc" without jemalloc. */
const char *km_allocator_name(void);
/* The allocator's statistics report as text (jemalloc's
 * malloc_stats_print), passed to out in pieces; returns 0, or -1 without
 * jemalloc (nothing is written). */
int km_allocator_report(void (*out)(void *priv, const char *text), void *priv);
/* Hands the dirty pages of every arena back to the kernel; 0 on success,
 * -1 if the allocator refused (0 without jemalloc: nothing to purge). */
int km_purge(void);

#endif
