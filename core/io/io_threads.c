/* io_threads.c -- the I/O thread pool (see io_threads.h): per-thread job
 * and completion rings, futex parking, the main thread's eventfd wake-up,
 * and the adaptive count of active threads. */
#include "io/io_threads.h"

#include "common/common.h"
#include "common/kmem.h"
#include "io/io_ring.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Ring sizes. At most IO_RING_SLOTS client jobs are outstanding per thread,
 * so a thread's completion ring can never be full when it pushes. */
#define IO_RING_SLOTS 4096
/* Empty polls before a thread parks: tens of microseconds, enough to catch
 * the next job of a busy loop without burning a core when idle. */
#define IO_SPIN_ROUNDS 100
/* How much nicer than the process a thread runs large jobs. Bulk copies
 * then yield the CPU to the main thread and to clients waiting for small
 * replies when the machine is short of cores: on 2 CPUs a small client
 * under an 8 MB GET load kept 0.83-0.89 of its idle rate without it and all
 * of it with 5 (p99.9 2 ms -> 0.3 ms), for about a third of the bulk
 * throughput. */
#define IO_LARGE_NICE 5

#define IO_JOB_FREE 0 /* internal: free the pointer */
#define IO_JOB_EXIT 7 /* internal: the thread returns */
#define IO_KIND_MASK ((uintptr_t)7)
#define IO_LARGE_BIT ((uintptr_t)8)
#define IO_TAG_MASK ((uintptr_t)15)

typedef struct io_thread {
    pthread_t tid;
    io_ring in;  /* jobs: main -> thread */
    io_ring out; /* completions: thread -> main */
    _Atomic int sleeping;          /* futex word: 1 while parked */
    _Atomic uint64_t ran;          /* jobs run (thread writes) */
    uint64_t submitted;            /* jobs handed out (main) */
    uint64_t outstanding;          /* client jobs not finished (main) */
    uint64_t large;                /* of which large (main) */
    int nice_base;                 /* the process's nice value (thread) */
    int niced;                     /* running at nice_base + IO_LARGE_NICE (thread) */
} io_thread;

typedef struct io_kind {
    io_job_fn run;
    io_job_fn done;
} io_kind;

io_threads_stats io_stats;

static io_kind kinds[IO_JOB_KINDS];
static io_thread *threads[IO_THREADS_MAX];
static int nthreads;
/* Whether a thread may go back to the process's priority after lowering its
 * own (CAP_SYS_NICE or RLIMIT_NICE); probed once, in a throw-away thread. */
static int nice_ok = -1;
/* Bytes of large buffers handed to threads and not freed yet: still in
 * jemalloc's count, so the memory limit must not evict for them again. */
static _Atomic size_t free_pending;
static int nactive;
static uint64_t inflight;
static int wake_fd = -1;
static event_loop *main_el;
static _Atomic int main_sleeping;
static unsigned free_rr; /* round robin for IO_JOB_FREE */

static inline void io_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static void io_futex(_Atomic int *word, int op, int val) {
    syscall(SYS_futex, (int *)word, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

/* ---- the I/O thread ---- */

/* Tells the main thread completions are waiting, if it is asleep. The fence
 * pairs with the one in io_threads_prepare_sleep: either this thread sees
 * the main thread's flag, or the main thread sees the completion. */
static void io_wake_main(void) {
    atomic_thread_fence(memory_order_seq_cst);
    if (!atomic_load_explicit(&main_sleeping, memory_order_relaxed)) return;
    if (atomic_exchange(&main_sleeping, 0)) {
        uint64_t one = 1;
        ssize_t rc = write(wake_fd, &one, sizeof(one));
        K_UNUSED(rc); /* EAGAIN: the counter is already non-zero */
    }
}

/* Large jobs at nice_base + IO_LARGE_NICE, others at nice_base (see
 * above); only where the thread can raise its priority back. */
static void io_thread_set_nice(io_thread *t, int large) {
    if (nice_ok != 1 || t->niced == large) return;
    int want = t->nice_base + (large ? IO_LARGE_NICE : 0);
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), want) == 0) t->niced = large;
}

static void io_thread_run_job(io_thread *t, uintptr_t job) {
    int kind = (int)(job & IO_KIND_MASK);
    /* Buffers to free are only 8-byte aligned: no large bit on them. */
    void *item = (void *)(job & (kind == IO_JOB_FREE ? ~IO_KIND_MASK : ~IO_TAG_MASK));
    if (kind == IO_JOB_FREE) {
        size_t n = km_usable(item);
        km_free_large(item);
        atomic_fetch_sub_explicit(&free_pending, n, memory_order_relaxed);
    } else {
        io_thread_set_nice(t, (job & IO_LARGE_BIT) != 0);
        kinds[kind].run(item);
        while (!io_ring_push(&t->out, job)) io_cpu_relax(); /* cannot happen: see IO_RING_SLOTS */
        io_wake_main();
    }
    atomic_fetch_add_explicit(&t->ran, 1, memory_order_release);
}

/* Parks until the main thread pushes a job. Setting the flag, then looking
 * at the ring again, closes the window where a job arrives in between. */
static void io_thread_park(io_thread *t) {
    atomic_store(&t->sleeping, 1);
    atomic_thread_fence(memory_order_seq_cst);
    if (io_ring_empty(&t->in)) io_futex(&t->sleeping, FUTEX_WAIT, 1);
    atomic_store(&t->sleeping, 0);
}

static void *io_thread_main(void *arg) {
    io_thread *t = arg;
    int idle = 0;
    t->nice_base = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    for (;;) {
        uintptr_t job;
        if (io_ring_pop(&t->in, &job)) {
            if ((job & IO_KIND_MASK) == IO_JOB_EXIT) return NULL;
            io_thread_run_job(t, job);
            idle = 0;
        } else if (++idle < IO_SPIN_ROUNDS) {
            io_cpu_relax();
        } else {
            io_thread_park(t);
            idle = 0;
        }
    }
}

/* ---- starting and stopping ---- */

static void io_ring_init(io_ring *r) {
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    r->mask = IO_RING_SLOTS - 1;
    r->slots = km_calloc(IO_RING_SLOTS, sizeof(*r->slots));
}

/* Lowers a thread's priority by one step and raises it back: whether the
 * threads may toggle IO_LARGE_NICE. Run in a thread of its own, so a refused
 * raise leaves no thread lowered. */
static void *io_nice_probe(void *arg) {
    id_t tid = (id_t)syscall(SYS_gettid);
    int base = getpriority(PRIO_PROCESS, tid);
    *(int *)arg = setpriority(PRIO_PROCESS, tid, base + 1) == 0 && setpriority(PRIO_PROCESS, tid, base) == 0;
    return NULL;
}

/* Threads with every signal blocked: SIGTERM and friends go to the main
 * thread, which handles them. */
static int io_thread_create(pthread_t *tid, void *(*fn)(void *), void *arg) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(tid, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static io_thread *io_thread_start(void) {
    if (nice_ok < 0) {
        pthread_t probe;
        int ok = 0;
        if (io_thread_create(&probe, io_nice_probe, &ok) == 0) pthread_join(probe, NULL);
        nice_ok = ok;
    }
    io_thread *t = km_alloc_aligned(64, sizeof(*t));
    *t = (io_thread){0};
    io_ring_init(&t->in);
    io_ring_init(&t->out);
    if (io_thread_create(&t->tid, io_thread_main, t) != 0) {
        km_free(t->in.slots);
        km_free(t->out.slots);
        km_free(t);
        return NULL;
    }
    return t;
}

/* Pushes a job and wakes the thread if it parked (pairs with
 * io_thread_park's fence). */
static int io_thread_push(io_thread *t, uintptr_t job) {
    if (!io_ring_push(&t->in, job)) return K_ERR;
    t->submitted++;
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&t->sleeping, memory_order_relaxed) && atomic_exchange(&t->sleeping, 0))
        io_futex(&t->sleeping, FUTEX_WAKE, 1);
    return K_OK;
}

static void io_thread_stop(io_thread *t) {
    while (io_thread_push(t, IO_JOB_EXIT) != K_OK) io_cpu_relax();
    pthread_join(t->tid, NULL);
    km_free(t->in.slots);
    km_free(t->out.slots);
    km_free(t);
}

static void io_wake_handler(event_loop *el, int fd, void *data, int mask) {
    uint64_t n;
    ssize_t rc = read(fd, &n, sizeof(n));
    K_UNUSED(rc);
    io_threads_poll();
}

int io_threads_setup(event_loop *el) {
    main_el = el;
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd == -1) return K_ERR;
    if (event_add(el, wake_fd, EV_READABLE, io_wake_handler, NULL) != K_OK) {
        close(wake_fd);
        wake_fd = -1;
        return K_ERR;
    }
    return K_OK;
}

void io_threads_teardown(void) {
    io_threads_resize(0);
    if (wake_fd != -1) {
        event_del(main_el, wake_fd, EV_READABLE);
        close(wake_fd);
        wake_fd = -1;
    }
}

static void io_threads_drain(void) {
    while (inflight) {
        if (!io_threads_poll()) io_cpu_relax();
    }
}

int io_threads_resize(int n) {
    if (n > IO_THREADS_MAX) n = IO_THREADS_MAX;
    if (n < 0) n = 0;
    if (n == nthreads) return nthreads;
    io_threads_drain();
    nactive = 0;
    while (nthreads > n) io_thread_stop(threads[--nthreads]);
    while (nthreads < n) {
        io_thread *t = io_thread_start();
        if (!t) break;
        threads[nthreads++] = t;
    }
    return nthreads;
}

int io_threads_count(void) {
    return nthreads;
}

/* ---- distributing work ---- */

void io_threads_adjust(int fired_events, int events_per_thread) {
    int want = events_per_thread == 0 ? nthreads : fired_events / events_per_thread;
    nactive = want < nthreads ? want : nthreads;
}

int io_threads_active(void) {
    return nactive;
}

int io_threads_submit(int kind, void *item, uint64_t key, size_t bytes) {
    int large = bytes >= IO_JOB_LARGE;
    if ((uintptr_t)item & IO_TAG_MASK) return K_ERR; /* cannot be tagged: run it inline */
    int n = nactive ? nactive : (large ? nthreads : 0);
    if (n == 0) return K_ERR;
    io_thread *t = threads[key % (uint64_t)n];
    if (t->outstanding >= IO_RING_SLOTS || (!large && t->large)) return K_ERR;
    uintptr_t job = (uintptr_t)item | (uintptr_t)kind | (large ? IO_LARGE_BIT : 0);
    if (io_thread_push(t, job) != K_OK) return K_ERR;
    t->outstanding++;
    t->large += (uint64_t)large;
    inflight++;
    return K_OK;
}

/* Only to a thread without a large job queued: behind one the free would
 * wait (and the memory limit with it). */
int io_threads_free(void *ptr) {
    if (nactive == 0) return K_ERR;
    io_thread *t = threads[free_rr++ % (unsigned)nactive];
    if (t->large) return K_ERR;
    size_t n = km_usable(ptr);
    atomic_fetch_add_explicit(&free_pending, n, memory_order_relaxed);
    if (io_thread_push(t, (uintptr_t)ptr | IO_JOB_FREE) != K_OK) {
        atomic_fetch_sub_explicit(&free_pending, n, memory_order_relaxed);
        return K_ERR;
    }
    io_stats.frees++;
    return K_OK;
}

size_t io_threads_free_pending(void) {
    return atomic_load_explicit(&free_pending, memory_order_relaxed);
}

int io_threads_poll(void) {
    int done = 0;
    for (int i = 0; i < nthreads; i++) {
        io_thread *t = threads[i];
        uintptr_t job;
        while (io_ring_pop(&t->out, &job)) {
            int kind = (int)(job & IO_KIND_MASK);
            t->outstanding--;
            t->large -= (job & IO_LARGE_BIT) ? 1 : 0;
            inflight--;
            if (kind == IO_JOB_READ) io_stats.reads++;
            else if (kind == IO_JOB_WRITE) io_stats.writes++;
            kinds[kind].done((void *)(job & ~IO_TAG_MASK));
            done++;
        }
    }
    return done;
}

uint64_t io_threads_inflight(void) {
    return inflight;
}

void io_threads_quiesce(void) {
    for (int i = 0; i < nthreads; i++)
        while (atomic_load_explicit(&threads[i]->ran, memory_order_acquire) != threads[i]->submitted)
            io_cpu_relax();
}

void io_threads_register(int kind, io_job_fn run, io_job_fn done) {
    kinds[kind] = (io_kind){.run = run, .done = done};
}

/* ---- the main thread's sleep ---- */

int io_threads_prepare_sleep(void) {
    if (nthreads == 0) return 0;
    atomic_store(&main_sleeping, 1);
    atomic_thread_fence(memory_order_seq_cst);
    for (int i = 0; i < nthreads; i++) {
        if (!io_ring_empty(&threads[i]->out)) {
            atomic_store(&main_sleeping, 0);
            return 1;
        }
    }
    return 0;
}

void io_threads_awake(void) {
    if (nthreads) atomic_store_explicit(&main_sleeping, 0, memory_order_relaxed);
}
