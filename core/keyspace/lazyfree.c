/* lazyfree.c -- the lazy-free thread (see lazyfree.h): its job queue, the
 * values it hands back to the main thread, and its counters. */
#include "keyspace/lazyfree.h"

#include "common/common.h"
#include "common/kmem.h"
#include "keyspace/db.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

enum { LF_OBJ, LF_STORES };

typedef struct lf_job {
    struct lf_job *next;
    int kind;
    void *a, *b;    /* LF_OBJ: the object; LF_STORES: keys, expires */
    size_t objects; /* what the objects counters count for it */
    size_t bytes;   /* its share of lazyfree_pending_bytes */
} lf_job;

/* Objects the thread would not free (see lazyfree.h): one batch per job. */
typedef struct lf_back {
    struct lf_back *next;
    size_t n, cap;
    kobj **objs;
} lf_back;

/* The queue and the hand-back list are the lock's; the thread's flag and
 * the counters below are read without it. */
static pthread_mutex_t lf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lf_work = PTHREAD_COND_INITIALIZER; /* a job, or stop */
static pthread_cond_t lf_idle = PTHREAD_COND_INITIALIZER; /* queue empty, none running */
static lf_job *lf_head, *lf_tail;
static int lf_running, lf_stop;
static lf_back *lf_returned;

/* Main thread only. */
static pthread_t lf_thread;
static int lf_started, lf_start_failed;

static _Atomic size_t lf_pending_objects, lf_freed_objects, lf_pending_bytes;

/* ---- on the thread ---- */

static void lf_back_push(lf_back *b, kobj *o) {
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->objs = km_realloc(b->objs, b->cap * sizeof(*b->objs));
    }
    b->objs[b->n++] = o;
}

/* One block of a flushed database, before the store frees it: its value is
 * freed here or handed back, and the block forgets it. */
static void lf_free_entry_value(void *priv, void *entry) {
    kobj *o = db_entry_obj(entry);
    if (!o) return;
    if (!(o->flags & OBJ_FLAG_REFERENCED) && !obj_is_shared(o) && obj_free_anywhere(o))
        obj_free_detached(o);
    else
        lf_back_push(priv, o);
    db_entry_forget_obj(entry);
}

static void lf_run(lf_job *j) {
    if (j->kind == LF_OBJ) {
        obj_free_detached(j->a);
        return;
    }
    lf_back *b = km_calloc(1, sizeof(*b));
    /* The expiry store holds the same blocks and frees none of them: it
     * goes first, while they are still valid. */
    kvstore_release(j->b);
    kvstore_empty(j->a, lf_free_entry_value, b);
    kvstore_release(j->a);
    if (!b->n) {
        km_free(b);
        return;
    }
    pthread_mutex_lock(&lf_lock);
    b->next = lf_returned;
    lf_returned = b;
    pthread_mutex_unlock(&lf_lock);
}

/* Counters move only once the memory left this thread's cache, so that
 * used_memory minus the pending bytes never counts a job twice. */
static void lf_finish(lf_job *j) {
    km_thread_cache_flush();
    atomic_fetch_sub_explicit(&lf_pending_bytes, j->bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&lf_freed_objects, j->objects, memory_order_relaxed);
    atomic_fetch_sub_explicit(&lf_pending_objects, j->objects, memory_order_relaxed);
}

static void *lf_main(void *arg) {
    K_UNUSED(arg);
    pthread_mutex_lock(&lf_lock);
    for (;;) {
        if (!lf_head) {
            pthread_cond_broadcast(&lf_idle);
            if (lf_stop) break;
            pthread_cond_wait(&lf_work, &lf_lock);
            continue;
        }
        lf_job *j = lf_head;
        lf_head = j->next;
        if (!lf_head) lf_tail = NULL;
        lf_running = 1;
        pthread_mutex_unlock(&lf_lock);
        lf_run(j);
        lf_finish(j);
        km_free(j);
        pthread_mutex_lock(&lf_lock);
        lf_running = 0;
    }
    pthread_mutex_unlock(&lf_lock);
    return NULL;
}

/* ---- on the main thread ---- */

/* Signals stay the main thread's: the thread blocks them all. */
static int lf_start(void) {
    if (lf_started) return 1;
    if (lf_start_failed) return 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    lf_started = pthread_create(&lf_thread, NULL, lf_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    lf_start_failed = !lf_started;
    return lf_started;
}

static void lf_submit(int kind, void *a, void *b, size_t objects, size_t bytes) {
    lf_job *j = km_alloc(sizeof(*j));
    *j = (lf_job){.kind = kind, .a = a, .b = b, .objects = objects, .bytes = bytes};
    atomic_fetch_add_explicit(&lf_pending_objects, objects, memory_order_relaxed);
    atomic_fetch_add_explicit(&lf_pending_bytes, bytes, memory_order_relaxed);
    if (!lf_start()) { /* no thread: the work is done here, as if it had been */
        if (kind == LF_OBJ)
            obj_decref(a);
        else {
            kvstore_release(b);
            kvstore_release(a);
        }
        lf_finish(j);
        km_free(j);
        return;
    }
    pthread_mutex_lock(&lf_lock);
    if (lf_tail)
        lf_tail->next = j;
    else
        lf_head = j;
    lf_tail = j;
    pthread_cond_signal(&lf_work);
    pthread_mutex_unlock(&lf_lock);
}

int lazyfree_release(kobj *o) {
    if (o->refcount != 1 || obj_free_effort(o) <= LAZYFREE_THRESHOLD) {
        obj_decref(o);
        return 0;
    }
    lf_submit(LF_OBJ, o, NULL, 1, obj_mem_usage(o));
    return 1;
}

void lazyfree_release_stores(kvstore *keys, kvstore *expires, size_t nkeys, size_t bytes) {
    lf_submit(LF_STORES, keys, expires, nkeys, bytes);
}

void lazyfree_drain(void) {
    if (!lf_started) return;
    pthread_mutex_lock(&lf_lock);
    lf_back *b = lf_returned;
    lf_returned = NULL;
    pthread_mutex_unlock(&lf_lock);
    while (b) {
        lf_back *next = b->next;
        for (size_t i = 0; i < b->n; i++)
            obj_decref(b->objs[i]);
        km_free(b->objs);
        km_free(b);
        b = next;
    }
}

void lazyfree_wait(void) {
    if (!lf_started) return;
    pthread_mutex_lock(&lf_lock);
    while (lf_head || lf_running)
        pthread_cond_wait(&lf_idle, &lf_lock);
    pthread_mutex_unlock(&lf_lock);
    lazyfree_drain();
}

void lazyfree_teardown(void) {
    if (!lf_started) return;
    pthread_mutex_lock(&lf_lock);
    lf_stop = 1;
    pthread_cond_signal(&lf_work);
    pthread_mutex_unlock(&lf_lock);
    pthread_join(lf_thread, NULL); /* it runs the queue dry first */
    lazyfree_drain();
    lf_started = 0;
    lf_stop = 0;
}

size_t lazyfree_pending_objects(void) {
    return atomic_load_explicit(&lf_pending_objects, memory_order_relaxed);
}

size_t lazyfree_freed_objects(void) {
    return atomic_load_explicit(&lf_freed_objects, memory_order_relaxed);
}

void lazyfree_reset_stats(void) {
    atomic_store_explicit(&lf_freed_objects, 0, memory_order_relaxed);
}

size_t lazyfree_pending_bytes(void) {
    return atomic_load_explicit(&lf_pending_bytes, memory_order_relaxed);
}
