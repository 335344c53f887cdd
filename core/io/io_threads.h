/* io_threads.h -- I/O threads: a pool that runs socket work for the main
 * thread.
 *
 * Only the main thread executes commands and touches the keyspace. It hands
 * a piece of socket work for one connection (read and parse a request,
 * writev a reply chain, a transport handshake) to an I/O thread as a job,
 * and gets the job back as a completion that it finishes on the main thread
 * (run the parsed command, drop the sent reply blocks, ...). While a job is
 * in flight the connection belongs to that thread: the main thread leaves
 * the fields the job uses alone until the completion comes back.
 *
 * Each thread has two single-producer single-consumer rings (io_ring.h):
 * jobs in, completions out. Nothing on that path takes a lock. A thread with
 * no job spins briefly, then sleeps on a futex that the main thread wakes
 * only when it sees the thread asleep; the main thread sleeps in epoll_wait
 * and an eventfd wakes it the same way when completions arrive. The pool
 * also frees large buffers for the main thread (IO_JOB_FREE), so dropping
 * the last reference to a 64 MB value does not stall it.
 *
 * How many threads take jobs follows the load (io_threads_adjust): each
 * event-loop iteration uses fired events / events-per-io-thread of them, so a
 * lightly loaded server does its I/O inline, without the hand-off latency.
 * Size matters too: a large job (IO_JOB_LARGE bytes or more: a big write,
 * the rest of a big argument) goes to a thread whenever there is one,
 * because it would stall the main thread however light the load; and a
 * small job is never queued behind a large one on a thread's ring: the
 * main thread does it inline instead, so a small request does not wait for
 * someone else's 8 MB reply.
 *
 * The pool knows nothing of clients: each job kind is registered with the
 * function that runs it on a thread and the one that finishes it on the
 * main thread.
 *
 * Threads: every function here is main-thread only; the registered run
 * functions are what the I/O threads execute. */
#ifndef KEEL_IO_THREADS_H
#define KEEL_IO_THREADS_H

#include <stddef.h>
#include <stdint.h>

#include "event/event.h"

#define IO_THREADS_MAX 255 /* io-threads 256 counts the main thread */
#define IO_JOB_LARGE (64 * 1024) /* bytes that make a job large */

/* Job kinds (stored in the low bits of the job word, with a "large" bit:
 * job items must be 16-byte aligned, as malloc returns structs; buffers
 * handed to io_threads_free need only be 8-byte aligned). */
enum {
    IO_JOB_READ = 1,      /* client: read + parse */
    IO_JOB_WRITE = 2,     /* client: writev */
    IO_JOB_HANDSHAKE = 3, /* module transport: one handshake step */
    IO_JOB_KINDS = 4,
};

/* run: on an I/O thread, owns item until it returns. done: on the main
 * thread, afterwards. */
typedef void (*io_job_fn)(void *item);

void io_threads_register(int kind, io_job_fn run, io_job_fn done);

/* Sets up the completion eventfd on el (no threads yet). 0 or -1. */
int io_threads_setup(event_loop *el);
/* Waits for every job, stops and joins every thread. */
void io_threads_teardown(void);

/* Runs n I/O threads (io-threads minus one), starting or stopping threads;
 * waits for all jobs first. Outside commands (it finishes completions).
 * Returns the number running, which is less than n if threads could not be
 * started. */
int io_threads_resize(int n);
int io_threads_count(void);

/* Chooses how many threads take jobs in this event-loop iteration from the
 * number of events it fired; events_per_thread 0 means all of them. */
void io_threads_adjust(int fired_events, int events_per_thread);
int io_threads_active(void);

/* Hands item to a thread chosen by key (a client stays on the same thread
 * while the thread count is unchanged); bytes is the work's size as far as
 * it is known (0 if not). Returns 0, or -1 when the job should run inline:
 * no thread active (and the job is not large), the thread is busy with a
 * large job and this one is small, or its ring is full. */
int io_threads_submit(int kind, void *item, uint64_t key, size_t bytes);
/* Hands a km_alloc_large'd buffer to a thread to free (km_free_large). 0,
 * or -1: free it. */
int io_threads_free(void *ptr);
/* Bytes handed to io_threads_free and not freed yet (any thread). */
size_t io_threads_free_pending(void);

/* Finishes the completions that arrived; returns how many. */
int io_threads_poll(void);
/* Client jobs handed out and not finished yet. */
uint64_t io_threads_inflight(void);
/* Waits until every thread has finished running its jobs (they no longer
 * touch their items) without finishing the completions: safe inside a
 * command, before reading another client's I/O fields (CLIENT LIST). */
void io_threads_quiesce(void);

/* Around epoll_wait: prepare returns 0 when the main thread may sleep
 * (arriving completions will wake it), 1 when completions are already
 * waiting; awake marks it awake again. */
int io_threads_prepare_sleep(void);
void io_threads_awake(void);

/* Counters for INFO stats. */
typedef struct io_threads_stats {
    long long reads;  /* io_threaded_reads_processed */
    long long writes; /* io_threaded_writes_processed */
    long long frees;  /* io_threaded_freed_objects */
} io_threads_stats;
extern io_threads_stats io_stats;

#endif
