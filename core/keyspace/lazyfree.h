/* lazyfree.h -- the lazy-free thread: values and flushed databases freed
 * off the main thread, as Valkey's lazyfree.c does with its BIO thread.
 *
 * The keyspace decides what is freed lazily (db.c reads the
 * lazyfree-lazy-* directives); this file owns the thread that does it and
 * the counters INFO reports (lazyfree_pending_objects, lazyfreed_objects).
 *
 * Hand-off rules, which keep the thread away from anything the main thread
 * still touches:
 *   - one value (lazyfree_release): only when its type's free_effort is
 *     above LAZYFREE_THRESHOLD and its refcount is 1, checked on the main
 *     thread; the key was the last holder and is gone, so nothing can reach
 *     the object any more. Otherwise the reference is dropped at once.
 *   - a flushed database (lazyfree_release_stores): its two stores, taken
 *     out of the keyspace. The thread frees every block and every value
 *     that was never referenced by anything but its key (no
 *     OBJ_FLAG_REFERENCED) and whose type may be freed anywhere; the others
 *     (a reply may still hold them; module values) come back to the main
 *     thread, which drops their references at its next lazyfree_drain.
 * The refcount of a handed-over object is never read on the thread.
 *
 * Memory accounting: the thread flushes its allocation cache after each job
 * (used_memory then drops), and the bytes of queued jobs are reported by
 * lazyfree_pending_bytes, which the maxmemory check subtracts so that it
 * does not evict for memory already being freed.
 *
 * Threads: every function is main-thread only, except the counters'
 * getters, which any thread may call. The thread starts with the first
 * job; if it cannot be started, jobs run inline. */
#ifndef KEEL_LAZYFREE_H
#define KEEL_LAZYFREE_H

#include <stddef.h>

#include "keyspace/kvstore.h"
#include "keyspace/object.h"

/* Valkey's: values whose free takes more work than this go to the thread. */
#define LAZYFREE_THRESHOLD 64

/* Drops the keyspace's reference to o, on the thread when it is worth it
 * (see above). Returns 1 when the thread took it. */
int lazyfree_release(kobj *o);
/* Hands a flushed database's stores (keys, then expires: the same blocks)
 * to the thread; `keys` is what it counts in the objects statistics and
 * `bytes` the estimate of what they hold. */
void lazyfree_release_stores(kvstore *keys, kvstore *expires, size_t nkeys, size_t bytes);

/* Drops the references the thread handed back (the cron). */
void lazyfree_drain(void);
/* Waits until every job has run, then drains (tests, teardown). */
void lazyfree_wait(void);
/* Waits for the jobs and stops the thread (db_teardown). */
void lazyfree_teardown(void);

/* Objects queued and not freed yet (INFO lazyfree_pending_objects). */
size_t lazyfree_pending_objects(void);
/* Objects the thread freed (INFO lazyfreed_objects; CONFIG RESETSTAT
 * clears it). */
size_t lazyfree_freed_objects(void);
void lazyfree_reset_stats(void);
/* Bytes of queued jobs: still counted by the allocator, about to go. */
size_t lazyfree_pending_bytes(void);

#endif
