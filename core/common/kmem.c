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
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
/* Main thread (km_large_maintain): when the cron last saw a large
 * allocation, and whether large frees happened since the last purge. */
static int64_t km_large_alloc_ms;
static int km_large_unpurged;
/* Set by any thread: allocations and frees on I/O threads count too. */
static _Atomic int km_large_allocated;
static _Atomic int km_large_freed;

/* Handing 200 MB of pages back takes the kernel about 25 ms: a thread of
 * its own does it, so the main thread never stalls small requests for it.
 * It runs at nice +10 (on a server pinned to one CPU it takes about a tenth
 * of it while it works, in slices short enough not to show in request
 * latency, and still finishes within a fraction of a second) and sleeps on
 * a condition variable between requests. */
#define KM_PURGER_NICE 10
static pthread_t km_purger;
static int km_purger_started;
static pthread_mutex_t km_purge_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t km_purge_cond = PTHREAD_COND_INITIALIZER;
static int km_purge_requested, km_purge_stop;

static void km_large_purge_now(void) {
    char name[64];
    snprintf(name, sizeof(name), "arena.%u.purge", km_large_arena);
    mallctl(name, NULL, NULL, NULL, 0);
}

static void *km_purger_main(void *arg) {
    /* Raising one's own nice value needs no privilege and is never undone. */
    id_t tid = (id_t)syscall(SYS_gettid);
    setpriority(PRIO_PROCESS, tid, getpriority(PRIO_PROCESS, tid) + KM_PURGER_NICE);
    pthread_mutex_lock(&km_purge_lock);
    while (!km_purge_stop) {
        if (!km_purge_requested) {
            pthread_cond_wait(&km_purge_cond, &km_purge_lock);
            continue;
        }
        km_purge_requested = 0;
        pthread_mutex_unlock(&km_purge_lock);
        km_large_purge_now();
        pthread_mutex_lock(&km_purge_lock);
    }
    pthread_mutex_unlock(&km_purge_lock);
    return NULL;
}

/* The thread blocks every signal, which stay the main thread's. Without it
 * (creation failed) purges run inline. */
static void km_purger_start(void) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    km_purger_started = pthread_create(&km_purger, NULL, km_purger_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void km_large_purge(void) {
    if (!km_purger_started) {
        km_large_purge_now();
        return;
    }
    pthread_mutex_lock(&km_purge_lock);
    km_purge_requested = 1;
    pthread_cond_signal(&km_purge_cond);
    pthread_mutex_unlock(&km_purge_lock);
}

void km_teardown(void) {
    if (!km_purger_started) return;
    pthread_mutex_lock(&km_purge_lock);
    km_purge_stop = 1;
    pthread_cond_signal(&km_purge_cond);
    pthread_mutex_unlock(&km_purge_lock);
    pthread_join(km_purger, NULL);
    km_purger_started = 0;
    km_purge_stop = 0;
}

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
    km_purger_start();
}

static int km_large_flags(void) {
    return MALLOCX_ARENA(km_large_arena) | MALLOCX_TCACHE_NONE;
}

void *km_alloc_large(size_t size) {
    if (!km_large_ready || size < KM_LARGE) return km_alloc(size);
    void *p = mallocx(size, km_large_flags());
    if (!p) km_oom(size);
    atomic_store_explicit(&km_large_allocated, 1, memory_order_relaxed);
    return p;
}

void *km_alloc_large_aligned(size_t align, size_t size) {
    if (!km_large_ready || size < KM_LARGE) return km_alloc_aligned(align, size);
    void *p = mallocx(size, km_large_flags() | MALLOCX_ALIGN(align));
    if (!p) km_oom(size);
    atomic_store_explicit(&km_large_allocated, 1, memory_order_relaxed);
    return p;
}

void *km_realloc_large(void *ptr, size_t size) {
    if (!km_large_ready || size < KM_LARGE) return km_realloc(ptr, size);
    void *p = ptr ? rallocx(ptr, size, km_large_flags()) : mallocx(size, km_large_flags());
    if (!p) km_oom(size);
    /* A move frees the old pages into the arena. */
    atomic_store_explicit(&km_large_allocated, 1, memory_order_relaxed);
    atomic_store_explicit(&km_large_freed, 1, memory_order_relaxed);
    return p;
}

void km_free_large(void *ptr) {
    if (!ptr) return;
    free(ptr);
    if (km_large_ready) atomic_store_explicit(&km_large_freed, 1, memory_order_relaxed);
}

/* Freed pages stay in the arena while large allocations keep coming (a SET
 * overwriting a big value reuses the old one's pages instead of faulting
 * fresh ones), and go back to the kernel at the first tick after the
 * allocations have paused for quiet_ms, however long after its allocation
 * a value was freed. */
void km_large_maintain(int64_t now_ms, int64_t quiet_ms) {
    if (!km_large_ready) return;
    if (atomic_exchange_explicit(&km_large_allocated, 0, memory_order_relaxed))
        km_large_alloc_ms = now_ms;
    if (atomic_exchange_explicit(&km_large_freed, 0, memory_order_relaxed)) km_large_unpurged = 1;
    if (!km_large_unpurged || now_ms - km_large_alloc_ms < quiet_ms) return;
    km_large_purge();
    km_large_unpurged = 0;
}
#else
void km_setup(void) {
}

void km_teardown(void) {
}

void *km_alloc_large(size_t size) {
    return km_alloc(size);
}

void *km_alloc_large_aligned(size_t align, size_t size) {
    return km_alloc_aligned(align, size);
}

void *km_realloc_large(void *ptr, size_t size) {
    return km_realloc(ptr, size);
}

void km_free_large(void *ptr) {
    km_free(ptr);
}

void km_large_maintain(int64_t now_ms, int64_t quiet_ms) {
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

void km_thread_cache_flush(void) {
    mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
}

size_t km_used_memory(void) {
    /* Memory freed into this thread's cache still counts as allocated in
     * jemalloc's statistics; flush it first so eviction sees what it freed. */
    km_thread_cache_flush();
    return km_stat("stats.allocated");
}

size_t km_resident_memory(void) {
    return km_stat("stats.resident");
}
#else
void km_thread_cache_flush(void) {
}

size_t km_used_memory(void) {
    return __sanitizer_get_current_allocated_bytes();
}

size_t km_resident_memory(void) {
    return __sanitizer_get_heap_size();
}
#endif

/* The peak of used memory as last sampled (the cron and MEMORY STATS sample
 * it; INFO used_memory_peak). Main thread. */
static size_t peak_memory;

static long long peak_memory_ms;
static size_t startup_memory;
static int startup_marked;

static long long km_unix_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

size_t km_peak_memory(void) {
    size_t used = km_used_memory();
    if (used > peak_memory) {
        peak_memory = used;
        peak_memory_ms = km_unix_ms();
    }
    return peak_memory;
}

void km_reset_peak_memory(void) {
    peak_memory = 0;
    peak_memory_ms = 0;
}

long long km_peak_memory_time(void) {
    return peak_memory_ms;
}

void km_mark_startup(void) {
    if (startup_marked) return;
    startup_memory = km_used_memory();
    startup_marked = 1;
}

size_t km_startup_memory(void) {
    return startup_memory;
}

size_t km_process_rss(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long vsize = 0, pages = 0;
    int ok = f && fscanf(f, "%llu %llu", &vsize, &pages) == 2;
    if (f) fclose(f);
    if (!ok) return km_resident_memory();
    return (size_t)(pages * (unsigned long long)sysconf(_SC_PAGESIZE));
}

size_t km_system_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

#ifdef KEEL_HAVE_JEMALLOC
#define KM_STR_(x) #x
#define KM_STR(x) KM_STR_(x)

const char *km_allocator_name(void) {
    return "jemalloc-" KM_STR(JEMALLOC_VERSION_MAJOR) "." KM_STR(JEMALLOC_VERSION_MINOR) "." KM_STR(
        JEMALLOC_VERSION_BUGFIX);
}

static size_t km_ctl_size(const char *name) {
    size_t value = 0, sz = sizeof(value);
    if (mallctl(name, &value, &sz, NULL, 0) != 0) return 0;
    return value;
}

static unsigned km_ctl_unsigned(const char *name) {
    unsigned value = 0;
    size_t sz = sizeof(value);
    if (mallctl(name, &value, &sz, NULL, 0) != 0) return 0;
    return value;
}

/* Free regions in the small-size slabs in use, summed over the bins of all
 * arenas: memory the allocator holds active but cannot hand to other sizes.
 * The bins' region sizes and counts never change: read once; the counters
 * are read through MIBs (a name lookup per read would cost more than the
 * rest of INFO). */
#define KM_MAX_BINS 128
static unsigned km_nbins;
static size_t km_bin_reg_size[KM_MAX_BINS], km_bin_nregs[KM_MAX_BINS];
static size_t km_mib_curslabs[6], km_mib_curregs[6];
static int km_bins_ready = -1; /* -1 not tried, 0 unavailable, 1 ready */

static int km_bins_setup(void) {
    unsigned nbins = km_ctl_unsigned("arenas.nbins");
    if (nbins == 0 || nbins > KM_MAX_BINS) return 0;
    char name[64];
    for (unsigned j = 0; j < nbins; j++) {
        snprintf(name, sizeof(name), "arenas.bin.%u.size", j);
        km_bin_reg_size[j] = km_ctl_size(name);
        snprintf(name, sizeof(name), "arenas.bin.%u.nregs", j);
        km_bin_nregs[j] = km_ctl_unsigned(name);
    }
    size_t len = 6;
    if (mallctlnametomib("stats.arenas.0.bins.0.curslabs", km_mib_curslabs, &len) != 0 || len != 6) return 0;
    len = 6;
    if (mallctlnametomib("stats.arenas.0.bins.0.curregs", km_mib_curregs, &len) != 0 || len != 6) return 0;
    km_mib_curslabs[2] = km_mib_curregs[2] = MALLCTL_ARENAS_ALL;
    km_nbins = nbins;
    return 1;
}

static size_t km_frag_smallbins(void) {
    if (km_bins_ready < 0) km_bins_ready = km_bins_setup();
    if (!km_bins_ready) return 0;
    size_t total = 0;
    for (unsigned j = 0; j < km_nbins; j++) {
        size_t curslabs = 0, curregs = 0, sz = sizeof(size_t);
        km_mib_curslabs[4] = km_mib_curregs[4] = j;
        if (mallctlbymib(km_mib_curslabs, 6, &curslabs, &sz, NULL, 0) != 0) continue;
        sz = sizeof(size_t);
        if (mallctlbymib(km_mib_curregs, 6, &curregs, &sz, NULL, 0) != 0) continue;
        size_t capacity = km_bin_nregs[j] * curslabs;
        if (capacity > curregs) total += (capacity - curregs) * km_bin_reg_size[j];
    }
    return total;
}

void km_allocator_stats_get(km_allocator_stats *st) {
    mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
    uint64_t epoch = 1;
    size_t sz = sizeof(epoch);
    mallctl("epoch", &epoch, &sz, &epoch, sz);
    st->allocated = km_ctl_size("stats.allocated");
    st->active = km_ctl_size("stats.active");
    st->resident = km_ctl_size("stats.resident");
    char name[64];
    snprintf(name, sizeof(name), "stats.arenas.%d.pmuzzy", MALLCTL_ARENAS_ALL);
    st->muzzy = km_ctl_size(name) * km_ctl_size("arenas.page");
    st->frag_smallbins = km_frag_smallbins();
}

typedef struct km_report_ctx {
    void (*out)(void *priv, const char *text);
    void *priv;
} km_report_ctx;

static void km_report_write(void *opaque, const char *text) {
    km_report_ctx *ctx = opaque;
    ctx->out(ctx->priv, text);
}

int km_allocator_report(void (*out)(void *priv, const char *text), void *priv) {
    km_report_ctx ctx = {out, priv};
    malloc_stats_print(km_report_write, &ctx, NULL);
    return 0;
}

int km_purge(void) {
    char name[64];
    snprintf(name, sizeof(name), "arena.%d.purge", MALLCTL_ARENAS_ALL);
    return mallctl(name, NULL, NULL, NULL, 0) == 0 ? 0 : -1;
}
#else
const char *km_allocator_name(void) {
    return "libc";
}

void km_allocator_stats_get(km_allocator_stats *st) {
    *st = (km_allocator_stats){0};
}

int km_allocator_report(void (*out)(void *priv, const char *text), void *priv) {
    return -1;
}

int km_purge(void) {
    return 0;
}
#endif
