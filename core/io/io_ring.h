/* io_ring.h -- a bounded lock-free ring for one producer thread and one
 * consumer thread, carrying pointer-sized words.
 *
 * The producer owns tail, the consumer owns head; each publishes its index
 * with a release store and reads the other's with an acquire load, so a
 * word is fully written before the consumer can see it. The two indices sit
 * on separate cache lines: the threads do not bounce one line between them
 * on every push and pop.
 *
 * Threads: exactly one pushing thread and one popping thread per ring. */
#ifndef KEEL_IO_RING_H
#define KEEL_IO_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct io_ring {
    _Alignas(64) _Atomic size_t head; /* next slot to pop (consumer) */
    _Alignas(64) _Atomic size_t tail; /* next slot to push (producer) */
    _Alignas(64) size_t mask;         /* capacity - 1 (a power of two) */
    _Atomic uintptr_t *slots;
} io_ring;

/* Returns 1, or 0 if the ring is full. Producer only. */
static inline int io_ring_push(io_ring *r, uintptr_t word) {
    size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    size_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    if (t - h > r->mask) return 0;
    atomic_store_explicit(&r->slots[t & r->mask], word, memory_order_relaxed);
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    return 1;
}

/* Returns 1 and *word, or 0 if the ring is empty. Consumer only. */
static inline int io_ring_pop(io_ring *r, uintptr_t *word) {
    size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    size_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (h == t) return 0;
    *word = atomic_load_explicit(&r->slots[h & r->mask], memory_order_relaxed);
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    return 1;
}

/* Either thread; a hint that may be stale by the time it returns. */
static inline int io_ring_empty(io_ring *r) {
    return atomic_load_explicit(&r->head, memory_order_acquire) ==
           atomic_load_explicit(&r->tail, memory_order_acquire);
}

#endif
