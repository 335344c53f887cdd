/* check_io_threads.c -- unit tests for core/io/io_ring.h (the single-producer
 * single-consumer ring) and core/io/io_threads.c (the I/O thread pool).
 *
 * Ring tests build small rings by hand (8 slots, or indices started just
 * below SIZE_MAX) and one runs a producer and a consumer thread.
 *
 * Pool tests register their own job functions (the pool knows nothing of
 * clients). An item is an element of a calloc'ed array of job_item (16-byte
 * aligned, as the pool's job tags need): run, on an I/O thread, counts
 * itself in the item and records its thread; done, on the main thread,
 * checks that run happened exactly once, off the main thread, and that its
 * writes are visible. Code that may run off the main thread never calls
 * check's asserts (they longjmp): it counts failures that the main thread
 * asserts on afterwards.
 *
 * The pool has global state: each pool test runs between pool_start()
 * (event loop, io_threads_setup, resize) and pool_stop() (teardown, release
 * the loop). */
#include "io/io_ring.h"
#include "io/io_threads.h"

#include "common/kmem.h"
#include "event/event.h"

#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* Passing ck_asserts cost microseconds each; hot loops use EXPECT, which
 * only calls into check when it fails. */
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) ck_assert_msg(0, "expected: %s", #cond);                                      \
    } while (0)

#define DRAIN_LIMIT_US (10 * 1000 * 1000ULL) /* jobs stuck longer: a lost wake-up */

/* ---- io_ring ---- */

static void ring_init(io_ring *r, _Atomic uintptr_t *slots, size_t nslots, size_t start) {
    atomic_init(&r->head, start);
    atomic_init(&r->tail, start);
    r->mask = nslots - 1;
    r->slots = slots;
    for (size_t i = 0; i < nslots; i++)
        atomic_init(&slots[i], 0);
}

START_TEST(test_ring_fifo) {
    _Atomic uintptr_t slots[8];
    io_ring r;
    ring_init(&r, slots, 8, 0);
    uintptr_t w = 42;
    ck_assert_int_eq(io_ring_pop(&r, &w), 0);
    ck_assert_uint_eq(w, 42); /* untouched */
    ck_assert(io_ring_empty(&r));
    for (uintptr_t i = 1; i <= 5; i++)
        ck_assert_int_eq(io_ring_push(&r, i * 8), 1);
    ck_assert(!io_ring_empty(&r));
    for (uintptr_t i = 1; i <= 5; i++) {
        ck_assert_int_eq(io_ring_pop(&r, &w), 1);
        ck_assert_uint_eq(w, i * 8);
    }
    ck_assert_int_eq(io_ring_pop(&r, &w), 0);
    ck_assert(io_ring_empty(&r));
}
END_TEST

START_TEST(test_ring_full) {
    _Atomic uintptr_t slots[8];
    io_ring r;
    ring_init(&r, slots, 8, 0);
    for (uintptr_t i = 0; i < 8; i++)
        ck_assert_int_eq(io_ring_push(&r, i), 1);
    ck_assert_int_eq(io_ring_push(&r, 100), 0);
    ck_assert_int_eq(io_ring_push(&r, 101), 0);
    uintptr_t w;
    ck_assert_int_eq(io_ring_pop(&r, &w), 1);
    ck_assert_uint_eq(w, 0);
    ck_assert_int_eq(io_ring_push(&r, 8), 1); /* one slot came free */
    ck_assert_int_eq(io_ring_push(&r, 9), 0);
    for (uintptr_t i = 1; i <= 8; i++) {
        ck_assert_int_eq(io_ring_pop(&r, &w), 1);
        ck_assert_uint_eq(w, i); /* the refused words never went in */
    }
    ck_assert_int_eq(io_ring_pop(&r, &w), 0);
}
END_TEST

/* Pushes and pops uneven batches so the ring wraps many times at every
 * fill level; the words must come out in order, none lost or repeated. */
static void ring_churn(io_ring *r, int cycles) {
    uintptr_t next_push = 0, next_pop = 0, w;
    for (int c = 0; c < cycles; c++) {
        int npush = c % 5 + 1, npop = c % 4 + 1;
        for (int i = 0; i < npush && io_ring_push(r, next_push); i++)
            next_push++;
        for (int i = 0; i < npop && io_ring_pop(r, &w); i++)
            EXPECT(w == next_pop++);
        EXPECT(next_push - next_pop <= r->mask + 1);
    }
    while (io_ring_pop(r, &w))
        EXPECT(w == next_pop++);
    ck_assert_uint_eq(next_pop, next_push);
    ck_assert_uint_gt(next_push, (uintptr_t)cycles);
}

START_TEST(test_ring_wraparound) {
    _Atomic uintptr_t slots[8];
    io_ring r;
    ring_init(&r, slots, 8, 0);
    ring_churn(&r, 100000);
    ck_assert(io_ring_empty(&r));
}
END_TEST

/* head and tail are free-running counters: they must keep working when
 * they overflow size_t. */
START_TEST(test_ring_index_overflow) {
    _Atomic uintptr_t slots[8];
    io_ring r;
    ring_init(&r, slots, 8, SIZE_MAX - 3);
    for (uintptr_t i = 0; i < 8; i++)
        ck_assert_int_eq(io_ring_push(&r, i), 1);
    ck_assert_int_eq(io_ring_push(&r, 8), 0); /* full across the overflow */
    uintptr_t w;
    for (uintptr_t i = 0; i < 8; i++) {
        ck_assert_int_eq(io_ring_pop(&r, &w), 1);
        ck_assert_uint_eq(w, i);
    }
    ck_assert_int_eq(io_ring_pop(&r, &w), 0);
    ring_init(&r, slots, 8, SIZE_MAX - 100);
    ring_churn(&r, 1000);
}
END_TEST

#define RING_WORDS 1000000

typedef struct ring_pair {
    io_ring ring;
    _Atomic uint64_t errors; /* out-of-order words (consumer) */
    uint64_t popped;         /* words the consumer got */
} ring_pair;

static void *ring_producer(void *arg) {
    ring_pair *p = arg;
    for (uintptr_t i = 1; i <= RING_WORDS; i++)
        while (!io_ring_push(&p->ring, i))
            sched_yield();
    return NULL;
}

static void *ring_consumer(void *arg) {
    ring_pair *p = arg;
    uintptr_t expect = 1, w;
    while (expect <= RING_WORDS) {
        if (!io_ring_pop(&p->ring, &w)) {
            sched_yield();
            continue;
        }
        if (w != expect) atomic_fetch_add(&p->errors, 1);
        expect++;
        p->popped++;
    }
    return NULL;
}

START_TEST(test_ring_two_threads) {
    _Atomic uintptr_t *slots = km_calloc(256, sizeof(*slots));
    ring_pair *p = km_alloc_aligned(64, sizeof(*p));
    ring_init(&p->ring, slots, 256, 0);
    atomic_init(&p->errors, 0);
    p->popped = 0;
    pthread_t prod, cons;
    ck_assert_int_eq(pthread_create(&cons, NULL, ring_consumer, p), 0);
    ck_assert_int_eq(pthread_create(&prod, NULL, ring_producer, p), 0);
    pthread_join(prod, NULL);
    pthread_join(cons, NULL);
    uint64_t errors = atomic_load(&p->errors);
    ck_assert_uint_eq(errors, 0);
    ck_assert_uint_eq(p->popped, RING_WORDS);
    ck_assert(io_ring_empty(&p->ring));
    km_free(p);
    km_free(slots);
}
END_TEST

/* ---- the pool ---- */

/* 16-byte aligned, as the pool needs: it keeps tags in the low 4 bits. */
typedef struct job_item {
    _Alignas(16) uint64_t runs; /* run calls (I/O thread) */
    uint64_t dones;             /* done calls (main thread) */
    pthread_t runner;           /* the thread that ran it */
} job_item;

static event_loop *el;
static pthread_t main_thread;
/* run calls that returned: relaxed, so that it does not order the runs'
 * writes before the main thread's reads (the pool must). */
static _Atomic uint64_t runs_finished;
static _Atomic uint64_t run_errors; /* run called on the main thread */
static _Atomic int run_delay_us;    /* each run sleeps this long */
static uint64_t dones_total;        /* done calls */
static uint64_t done_errors;        /* done checks that failed */
static job_item one_item;           /* for single jobs (not on a stack) */

static uint64_t runs_finished_now(void) {
    return atomic_load_explicit(&runs_finished, memory_order_relaxed);
}

static void job_run(void *arg) {
    job_item *it = arg;
    if (pthread_equal(pthread_self(), main_thread)) atomic_fetch_add(&run_errors, 1);
    it->runs++;
    it->runner = pthread_self();
    int delay = atomic_load_explicit(&run_delay_us, memory_order_relaxed);
    if (delay) usleep((useconds_t)delay);
    atomic_fetch_add_explicit(&runs_finished, 1, memory_order_relaxed);
}

/* On the main thread, after run: run's writes must be visible here. */
static void job_done(void *arg) {
    job_item *it = arg;
    if (!pthread_equal(pthread_self(), main_thread)) done_errors++;
    if (it->runs != 1 || it->dones != 0) done_errors++;
    if (pthread_equal(it->runner, main_thread)) done_errors++;
    it->dones++;
    dones_total++;
}

static void pool_start(int nthreads) {
    main_thread = pthread_self();
    atomic_store(&runs_finished, 0);
    atomic_store(&run_errors, 0);
    atomic_store(&run_delay_us, 0);
    dones_total = 0;
    done_errors = 0;
    one_item = (job_item){0};
    el = event_loop_create(1024);
    ck_assert_ptr_nonnull(el);
    io_threads_register(IO_JOB_READ, job_run, job_done);
    io_threads_register(IO_JOB_WRITE, job_run, job_done);
    io_threads_register(IO_JOB_HANDSHAKE, job_run, job_done);
    ck_assert_int_eq(io_threads_setup(el), 0);
    ck_assert_int_eq(io_threads_resize(nthreads), nthreads);
    ck_assert_int_eq(io_threads_count(), nthreads);
    io_threads_adjust(0, 0); /* all threads take jobs */
    ck_assert_int_eq(io_threads_active(), nthreads);
}

/* Also the checked teardown: leaves a clean pool for the next test after
 * one failed midway (then a no-op after pool_stop). */
static void pool_cleanup(void) {
    if (!el) return;
    io_threads_teardown();
    event_loop_release(el);
    el = NULL;
}

static void pool_stop(void) {
    pool_cleanup();
    ck_assert_int_eq(io_threads_count(), 0);
    ck_assert_uint_eq(io_threads_inflight(), 0);
}

/* Every done ran once for every run, on the main thread, and no run ran on
 * the main thread. */
static void pool_check_errors(void) {
    ck_assert_uint_eq(done_errors, 0);
    ck_assert_uint_eq(atomic_load(&run_errors), 0);
}

/* Finishes completions the way the server's loop does until none is in
 * flight: poll, and sleep in epoll when prepare_sleep allows (a thread's
 * eventfd write wakes it). */
static void pool_drain(void) {
    uint64_t deadline = event_mono_us() + DRAIN_LIMIT_US;
    while (io_threads_inflight() > 0) {
        io_threads_poll();
        if (io_threads_inflight() == 0) break;
        if (!io_threads_prepare_sleep()) event_process(el, 100);
        io_threads_awake();
        ck_assert_msg(event_mono_us() < deadline, "jobs still in flight after 10 s");
    }
}

/* Submits, finishing completions while the thread's ring is full. */
static void submit_retry(int kind, job_item *it, uint64_t key) {
    uint64_t deadline = event_mono_us() + DRAIN_LIMIT_US;
    ck_assert_int_gt(io_threads_active(), 0);
    while (io_threads_submit(kind, it, key, 0) != 0) {
        if (io_threads_poll()) continue;
        sched_yield();
        ck_assert_msg(event_mono_us() < deadline, "no job completed in 10 s");
    }
}

static void items_check_done(const job_item *items, size_t n) {
    for (size_t i = 0; i < n; i++)
        EXPECT(items[i].runs == 1 && items[i].dones == 1);
}

START_TEST(test_io_threads_resize_adjust) {
    ck_assert_int_eq(io_threads_count(), 0);
    ck_assert_int_eq(io_threads_prepare_sleep(), 0); /* no threads: sleep */
    io_threads_awake();
    pool_start(3);
    ck_assert_int_eq(io_threads_resize(3), 3); /* unchanged */
    io_threads_adjust(7, 0);
    ck_assert_int_eq(io_threads_active(), 3);
    io_threads_adjust(1, 2);
    ck_assert_int_eq(io_threads_active(), 0);
    ck_assert_int_eq(io_threads_submit(IO_JOB_READ, &one_item, 0, 0), -1); /* caller runs it */
    void *buf = km_alloc(64);
    ck_assert_int_eq(io_threads_free(buf), -1);
    km_free(buf);
    ck_assert_uint_eq(io_threads_inflight(), 0);
    io_threads_adjust(4, 2);
    ck_assert_int_eq(io_threads_active(), 2);
    io_threads_adjust(100, 2);
    ck_assert_int_eq(io_threads_active(), 3);
    io_threads_adjust(0, 2);
    ck_assert_int_eq(io_threads_active(), 0);
    pool_stop();
    ck_assert_uint_eq(one_item.runs, 0);
    /* No thread at all: even a large job runs inline. */
    ck_assert_int_eq(io_threads_submit(IO_JOB_WRITE, &one_item, 0, IO_JOB_LARGE), -1);
}
END_TEST

#define MANY_JOBS 100000

static int job_kind(size_t i) {
    if (i % 8 == 7) return IO_JOB_HANDSHAKE;
    return i % 8 == 3 ? IO_JOB_WRITE : IO_JOB_READ;
}

START_TEST(test_io_threads_many_jobs) {
    pool_start(3);
    job_item *items = calloc(MANY_JOBS, sizeof(*items));
    ck_assert_ptr_nonnull(items);
    long long reads = io_stats.reads, writes = io_stats.writes;
    for (size_t i = 0; i < MANY_JOBS; i++)
        submit_retry(job_kind(i), &items[i], i);
    pool_drain();
    ck_assert_uint_eq(io_threads_inflight(), 0);
    ck_assert_uint_eq(dones_total, MANY_JOBS);
    ck_assert_uint_eq(runs_finished_now(), MANY_JOBS);
    pool_check_errors();
    items_check_done(items, MANY_JOBS);
    ck_assert_int_eq(io_stats.reads - reads, MANY_JOBS / 8 * 6);
    ck_assert_int_eq(io_stats.writes - writes, MANY_JOBS / 8);
    /* A key stays on one thread while the count is unchanged; the three
     * keys classes went to three different threads. */
    for (size_t i = 3; i < MANY_JOBS; i++)
        EXPECT(pthread_equal(items[i].runner, items[i % 3].runner));
    ck_assert(!pthread_equal(items[0].runner, items[1].runner));
    ck_assert(!pthread_equal(items[0].runner, items[2].runner));
    ck_assert(!pthread_equal(items[1].runner, items[2].runner));
    pool_stop();
    free(items);
}
END_TEST

#define QUIESCE_JOBS 300

START_TEST(test_io_threads_quiesce) {
    pool_start(2);
    io_threads_quiesce(); /* nothing submitted: returns at once */
    job_item *items = calloc(QUIESCE_JOBS, sizeof(*items));
    ck_assert_ptr_nonnull(items);
    atomic_store(&run_delay_us, 20); /* the runs are still going on below */
    for (size_t i = 0; i < QUIESCE_JOBS; i++)
        ck_assert_int_eq(io_threads_submit(IO_JOB_READ, &items[i], i, 0), 0);
    io_threads_quiesce();
    /* The runs' plain writes are visible after quiesce (TSan checks). */
    for (size_t i = 0; i < QUIESCE_JOBS; i++)
        EXPECT(items[i].runs == 1);
    ck_assert_uint_eq(runs_finished_now(), QUIESCE_JOBS);
    ck_assert_uint_eq(dones_total, 0); /* quiesce finished no completion */
    ck_assert_uint_eq(io_threads_inflight(), QUIESCE_JOBS);
    int done = 0;
    for (int spins = 0; done < QUIESCE_JOBS && spins < 1000; spins++)
        done += io_threads_poll();
    ck_assert_int_eq(done, QUIESCE_JOBS); /* all were already waiting */
    ck_assert_uint_eq(io_threads_inflight(), 0);
    ck_assert_uint_eq(dones_total, QUIESCE_JOBS);
    pool_check_errors();
    items_check_done(items, QUIESCE_JOBS);
    pool_stop();
    free(items);
}
END_TEST

#define FREE_BUFS 2000

START_TEST(test_io_threads_free) {
    km_setup();
    pool_start(2);
    long long frees = io_stats.frees, handed = 0;
    for (int i = 0; i < FREE_BUFS; i++) {
        void *p = i % 500 == 0 ? km_alloc_large(2 * KM_LARGE) : km_alloc(16 + (size_t)i);
        if (io_threads_free(p) == 0)
            handed++;
        else
            km_free(p); /* the ring was full */
    }
    ck_assert_int_gt(handed, 0);
    ck_assert_int_eq(io_stats.frees - frees, handed);
    ck_assert_uint_eq(io_threads_inflight(), 0); /* frees are no client jobs */
    ck_assert_int_eq(io_threads_poll(), 0);      /* and have no completion */
    io_threads_quiesce();                        /* every buffer freed */
    ck_assert_int_eq(io_threads_prepare_sleep(), 0);
    io_threads_awake();
    io_threads_adjust(1, 4); /* no thread active: the caller frees */
    void *p = km_alloc(32);
    ck_assert_int_eq(io_threads_free(p), -1);
    km_free(p);
    ck_assert_int_eq(io_stats.frees - frees, handed);
    pool_stop();
}
END_TEST

#define RESIZE_JOBS 6000

START_TEST(test_io_threads_resize_in_flight) {
    pool_start(3);
    job_item *items = calloc(3 * RESIZE_JOBS, sizeof(*items));
    ck_assert_ptr_nonnull(items);
    /* Under the per-thread limit: no completion finished before resize. */
    for (size_t i = 0; i < RESIZE_JOBS; i++)
        ck_assert_int_eq(io_threads_submit(job_kind(i), &items[i], i, 0), 0);
    for (int i = 0; i < 30; i++)
        ck_assert_int_eq(io_threads_free(km_alloc(100)), 0);
    ck_assert_int_eq(io_threads_resize(1), 1); /* drains */
    ck_assert_uint_eq(io_threads_inflight(), 0);
    ck_assert_uint_eq(dones_total, RESIZE_JOBS);
    items_check_done(items, RESIZE_JOBS);
    ck_assert_int_eq(io_threads_resize(4), 4);
    ck_assert_int_eq(io_threads_count(), 4);
    io_threads_adjust(0, 0);
    ck_assert_int_eq(io_threads_active(), 4);
    for (size_t i = RESIZE_JOBS; i < 2 * RESIZE_JOBS; i++)
        submit_retry(job_kind(i), &items[i], i);
    pool_drain();
    ck_assert_uint_eq(dones_total, 2 * RESIZE_JOBS);
    /* Teardown with jobs in flight waits for them and finishes them. */
    for (size_t i = 2 * RESIZE_JOBS; i < 3 * RESIZE_JOBS; i++)
        submit_retry(job_kind(i), &items[i], i);
    for (int i = 0; i < 30; i++)
        ck_assert_int_eq(io_threads_free(km_alloc(100)), 0);
    pool_stop();
    ck_assert_uint_eq(dones_total, 3 * RESIZE_JOBS);
    ck_assert_uint_eq(runs_finished_now(), 3 * RESIZE_JOBS);
    items_check_done(items, 3 * RESIZE_JOBS);
    pool_check_errors();
    free(items);
}
END_TEST

/* A large job goes to a thread even when the load leaves no thread active;
 * a small job is not queued behind a large one on the same thread (the
 * caller runs it inline) until the large one's completion is finished.
 * Keys 0, 2, 4 map to one thread of two, key 1 to the other. */
START_TEST(test_io_threads_large_jobs) {
    pool_start(2);
    job_item *items = calloc(4, sizeof(*items));
    ck_assert_ptr_nonnull(items);
    long long reads = io_stats.reads, writes = io_stats.writes;
    io_threads_adjust(1, 4);
    ck_assert_int_eq(io_threads_active(), 0);
    ck_assert_int_eq(io_threads_submit(IO_JOB_WRITE, &items[0], 0, IO_JOB_LARGE - 1), -1);
    ck_assert_int_eq(io_threads_submit(IO_JOB_WRITE, &items[0], 0, IO_JOB_LARGE), 0);
    io_threads_adjust(0, 0);
    ck_assert_int_eq(io_threads_submit(IO_JOB_READ, &items[1], 2, 0), -1); /* behind the large */
    ck_assert_int_eq(io_threads_submit(IO_JOB_READ, &items[2], 1, 0), 0);  /* the other thread */
    ck_assert_int_eq(io_threads_submit(IO_JOB_WRITE, &items[3], 4, 8 << 20), 0); /* large: queues */
    pool_drain();
    ck_assert_uint_eq(dones_total, 3);
    ck_assert_uint_eq(items[1].runs, 0);
    ck_assert(pthread_equal(items[0].runner, items[3].runner));
    ck_assert(!pthread_equal(items[0].runner, items[2].runner));
    ck_assert_int_eq(io_threads_submit(IO_JOB_READ, &items[1], 2, 0), 0); /* large ones done */
    pool_drain();
    ck_assert(pthread_equal(items[0].runner, items[1].runner));
    items_check_done(items, 4);
    ck_assert_int_eq(io_stats.reads - reads, 2);
    ck_assert_int_eq(io_stats.writes - writes, 2);
    pool_check_errors();
    pool_stop();
    free(items);
}
END_TEST

START_TEST(test_io_threads_prepare_sleep) {
    pool_start(1);
    ck_assert_int_eq(io_threads_prepare_sleep(), 0); /* nothing in flight */
    io_threads_awake();
    ck_assert_int_eq(io_threads_submit(IO_JOB_READ, &one_item, 0, 0), 0);
    io_threads_quiesce();
    ck_assert_int_eq(io_threads_prepare_sleep(), 1); /* a completion waits */
    io_threads_awake();
    ck_assert_int_eq(io_threads_poll(), 1);
    ck_assert_uint_eq(io_threads_inflight(), 0);
    ck_assert_int_eq(io_threads_prepare_sleep(), 0);
    io_threads_awake();
    ck_assert_uint_eq(one_item.dones, 1);
    pool_check_errors();
    pool_stop();
}
END_TEST

#define WAKE_ROUNDS 2000
#define WAKE_LIMIT_US (1000 * 1000ULL) /* a round's limit: epoll waits 2 s */

/* Submits one job and finishes it the way the server's loop does; returns
 * how long that took (stops waiting past WAKE_LIMIT_US). Counts the epoll
 * waits that an eventfd write ended. */
static uint64_t wake_round(job_item *it, uint64_t key, int *eventfd_wakes) {
    uint64_t start = event_mono_us(), want = dones_total + 1;
    ck_assert_int_eq(io_threads_submit(IO_JOB_READ, it, key, 0), 0);
    while (dones_total < want && event_mono_us() - start <= WAKE_LIMIT_US) {
        io_threads_poll();
        if (dones_total == want) break;
        if (!io_threads_prepare_sleep() && event_process(el, 2000) > 0) (*eventfd_wakes)++;
        io_threads_awake();
    }
    return event_mono_us() - start;
}

/* One job at a time, with pauses that let the I/O threads park and a few
 * slow runs that let the main thread fall asleep in epoll first: every job
 * must run (the futex wake-up) and every completion must wake the main
 * thread (the eventfd) long before the 2 s epoll timeout. */
START_TEST(test_io_threads_wakeups) {
    pool_start(2);
    job_item *items = calloc(WAKE_ROUNDS, sizeof(*items));
    ck_assert_ptr_nonnull(items);
    int eventfd_wakes = 0;
    for (size_t i = 0; i < WAKE_ROUNDS; i++) {
        atomic_store(&run_delay_us, i % 100 == 0 ? 2000 : 0);
        if (i % 4) usleep((useconds_t)(i % 64));
        uint64_t took = wake_round(&items[i], i, &eventfd_wakes);
        if (took > WAKE_LIMIT_US)
            ck_assert_msg(0, "job %zu took %llu us: lost wake-up", i, (unsigned long long)took);
    }
    ck_assert_int_gt(eventfd_wakes, 0); /* the slow runs slept in epoll */
    ck_assert_uint_eq(io_threads_inflight(), 0);
    items_check_done(items, WAKE_ROUNDS);
    pool_check_errors();
    pool_stop();
    free(items);
}
END_TEST

static Suite *io_threads_suite(void) {
    Suite *s = suite_create("io_threads");
    TCase *ring = tcase_create("io_ring");
    tcase_set_timeout(ring, 120);
    tcase_add_test(ring, test_ring_fifo);
    tcase_add_test(ring, test_ring_full);
    tcase_add_test(ring, test_ring_wraparound);
    tcase_add_test(ring, test_ring_index_overflow);
    tcase_add_test(ring, test_ring_two_threads);
    suite_add_tcase(s, ring);
    TCase *pool = tcase_create("pool");
    tcase_set_timeout(pool, 120);
    tcase_add_checked_fixture(pool, NULL, pool_cleanup);
    tcase_add_test(pool, test_io_threads_resize_adjust);
    tcase_add_test(pool, test_io_threads_many_jobs);
    tcase_add_test(pool, test_io_threads_quiesce);
    tcase_add_test(pool, test_io_threads_free);
    tcase_add_test(pool, test_io_threads_resize_in_flight);
    tcase_add_test(pool, test_io_threads_large_jobs);
    tcase_add_test(pool, test_io_threads_prepare_sleep);
    tcase_add_test(pool, test_io_threads_wakeups);
    suite_add_tcase(s, pool);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(io_threads_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
