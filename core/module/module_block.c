/* module_block.c -- the block group: a module command parks its client
 * (session/blocking.h's module kind of wait) and a callback replies later;
 * unblock from any thread through a locked queue and an eventfd that wakes
 * the event loop.
 *
 * A handle (keel_blocked) lives until both sides are done with it: the
 * client's wait is over (served, timed out, unblocked, gone) and, for a
 * block without keys, unblock has come and been processed; for a block on
 * keys unblock is optional (and the main thread's), so the end of the wait
 * suffices unless an unblock is still queued. free_priv runs once, when
 * the handle goes; an unblock's data that on_unblock does not get goes to
 * free_data.
 *
 * The queue and the flags unblock sets are under the lock; everything else
 * is the main thread's. */
#include "common/common.h"
#include "common/kmem.h"
#include "common/log.h"
#include "module/module.h"
#include "module/module_internal.h"
#include "session/blocking.h"
#include "session/busy.h"
#include "session/reply.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct keel_blocked {
    module *mod;
    client *c; /* while the client waits; NULL once its wait is over */
    keel_block_def def;
    int has_keys;
    /* Under the lock: */
    int unblock_called;
    int queued;
    void *data;
    keel_blocked *qnext;
    /* The main thread's list of live handles (MODULE UNLOAD, teardown). */
    keel_blocked *prev, *next;
};

static keel_blocked *live;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static keel_blocked *queue_head, *queue_tail;
static int wake_fd = -1;

/* ---- handles ---- */

static void blocked_unlink(keel_blocked *b) {
    if (b->prev)
        b->prev->next = b->next;
    else
        live = b->next;
    if (b->next) b->next->prev = b->prev;
}

static void blocked_free(keel_blocked *b) {
    blocked_unlink(b);
    if (b->def.free_priv) b->def.free_priv(b->def.priv);
    km_free(b);
}

/* Frees b once nothing can reach it any more. */
static void blocked_maybe_free(keel_blocked *b) {
    if (b->c) return;
    pthread_mutex_lock(&queue_lock);
    int keep = b->queued || (!b->has_keys && !b->unblock_called);
    pthread_mutex_unlock(&queue_lock);
    if (!keep) blocked_free(b);
}

/* An unblock's data that no on_unblock will see: back to the module. */
static void blocked_drop_data(keel_blocked *b, void *data) {
    if (b->def.free_data) b->def.free_data(data, b->def.priv);
}

static keel_ctx blocked_ctx(keel_blocked *b) {
    return (keel_ctx){.mod = b->mod, .c = b->c, .phase = MODULE_PHASE_RUN};
}

/* ---- the wait's callbacks (blocking.c calls them) ---- */

static int blocked_key_ready(client *c, const char *key, size_t len, void *priv) {
    keel_blocked *b = priv;
    K_UNUSED(c);
    if (!b->def.on_key_ready) return 0;
    keel_ctx ctx = blocked_ctx(b);
    int rc = b->def.on_key_ready(&ctx, key, len, b->def.priv);
    module_ctx_done(&ctx);
    return rc == KEEL_OK;
}

static void blocked_timeout(client *c, void *priv) {
    keel_blocked *b = priv;
    if (!b->def.on_timeout) {
        reply_null(c);
        return;
    }
    keel_ctx ctx = blocked_ctx(b);
    b->def.on_timeout(&ctx, b->def.priv);
    module_ctx_done(&ctx);
}

static void blocked_unblocked(client *c, void *data, void *priv) {
    keel_blocked *b = priv;
    if (!b->def.on_unblock) {
        reply_null(c);
        blocked_drop_data(b, data);
        return;
    }
    keel_ctx ctx = blocked_ctx(b);
    b->def.on_unblock(&ctx, data, b->def.priv);
    module_ctx_done(&ctx);
}

static int blocked_may_time_out(void *priv) {
    keel_blocked *b = priv;
    return b->def.on_timeout != NULL;
}

static int blocked_unblock_queued(void *priv) {
    keel_blocked *b = priv;
    pthread_mutex_lock(&queue_lock);
    int queued = b->queued;
    pthread_mutex_unlock(&queue_lock);
    return queued;
}

static void blocked_ended(client *c, void *priv) {
    keel_blocked *b = priv;
    K_UNUSED(c);
    b->c = NULL;
    blocked_maybe_free(b);
}

static const blocking_module_ops blocked_ops = {
    .key_ready = blocked_key_ready,
    .timeout = blocked_timeout,
    .unblocked = blocked_unblocked,
    .may_time_out = blocked_may_time_out,
    .unblock_queued = blocked_unblock_queued,
    .ended = blocked_ended,
};

/* ---- the API ---- */

static int blocked_copy_def(keel_block_def *d, const keel_block_def *def) {
    if (!def || module_copy_def(d, sizeof(*d), def, sizeof(*d)) != K_OK) return K_ERR;
    if (d->nkeys < 0 || (d->nkeys && (!d->keys || !d->key_lens)) || d->timeout_ms < 0) return K_ERR;
    return K_OK;
}

static keel_blocked *api_block(keel_ctx *ctx, const keel_block_def *def) {
    MODULE_ASSERT_MAIN();
    keel_block_def d;
    if (!ctx || !ctx->c || ctx->phase != MODULE_PHASE_RUN || !(ctx->flags & MODULE_CTX_MAY_BUSY) ||
        blocked_copy_def(&d, def) != K_OK)
        return NULL;
    keel_blocked *b = km_calloc(1, sizeof(*b));
    b->mod = ctx->mod;
    b->c = ctx->c;
    b->def = d;
    b->def.keys = NULL; /* the wait copies them; the module's are borrowed */
    b->def.key_lens = NULL;
    b->has_keys = d.nkeys > 0;
    int64_t now = event_cached_ms(), deadline = 0;
    if (d.timeout_ms) deadline = d.timeout_ms > INT64_MAX - now ? INT64_MAX : now + d.timeout_ms;
    if (blocking_wait_module(ctx->c, d.keys, d.key_lens, d.nkeys, deadline, &blocked_ops, b) !=
        K_OK) {
        km_free(b);
        return NULL;
    }
    b->next = live;
    if (live) live->prev = b;
    live = b;
    return b;
}

/* Any thread. The eventfd write wakes the main thread's epoll_wait. */
static int api_unblock(keel_blocked *b, void *data) {
    if (!b) return KEEL_ERR;
    pthread_mutex_lock(&queue_lock);
    int first = !b->unblock_called;
    if (first) {
        b->unblock_called = 1;
        b->queued = 1;
        b->data = data;
        b->qnext = NULL;
        if (queue_tail)
            queue_tail->qnext = b;
        else
            queue_head = b;
        queue_tail = b;
    }
    pthread_mutex_unlock(&queue_lock);
    if (!first) return KEEL_ERR;
    uint64_t one = 1;
    ssize_t rc = write(wake_fd, &one, sizeof(one));
    K_UNUSED(rc); /* a full counter still wakes the loop */
    return KEEL_OK;
}

static int api_signal_key_ready(keel_ctx *ctx, const char *key, size_t len) {
    MODULE_ASSERT_MAIN();
    if (!ctx || !key) return KEEL_ERR;
    blocking_signal_key(module_ctx_db(ctx), key, len);
    return KEEL_OK;
}

const keel_api_block module_api_block = {
    .size = sizeof(keel_api_block),
    .block = api_block,
    .unblock = api_unblock,
    .signal_key_ready = api_signal_key_ready,
};

/* ---- the unblock queue (main thread) ---- */

/* An unblock of a client still waiting: on_unblock replies (a null
 * without one), then the wait ends (blocked_ended frees b). Otherwise the
 * data goes back and only the handle may go. */
static void blocked_process(keel_blocked *b, void *data) {
    if (b->c) {
        blocking_module_unblock(b->c, data);
        return;
    }
    blocked_drop_data(b, data);
    blocked_maybe_free(b);
}

/* Left for later during a busy phase: the fd stays readable and wakes the
 * loop again once the long command is over. */
static void blocked_wake_handler(event_loop *el, int fd, void *priv, int mask) {
    K_UNUSED(el);
    K_UNUSED(priv);
    K_UNUSED(mask);
    if (busy_active()) return;
    uint64_t n;
    ssize_t rc = read(fd, &n, sizeof(n));
    K_UNUSED(rc);
    pthread_mutex_lock(&queue_lock);
    keel_blocked *b = queue_head;
    queue_head = queue_tail = NULL;
    pthread_mutex_unlock(&queue_lock);
    while (b) {
        pthread_mutex_lock(&queue_lock);
        keel_blocked *next = b->qnext;
        void *data = b->data;
        b->queued = 0;
        pthread_mutex_unlock(&queue_lock);
        blocked_process(b, data);
        b = next;
    }
}

void module_block_setup(void) {
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd == -1 ||
        event_add(module_env_get()->el, wake_fd, EV_READABLE, blocked_wake_handler, NULL) != K_OK) {
        log_write(LL_WARNING, "Module blocking clients: cannot set up the wake-up eventfd");
        if (wake_fd != -1) close(wake_fd);
        wake_fd = -1;
    }
}

void module_block_teardown(void) {
    if (wake_fd == -1) return;
    event_del(module_env_get()->el, wake_fd, EV_READABLE);
    close(wake_fd);
    wake_fd = -1;
}

uint64_t module_blocked_count(const module *m) {
    uint64_t n = 0;
    for (keel_blocked *b = live; b; b = b->next)
        if (b->mod == m) n++;
    return n;
}

/* Each of m's handles whose client is gone goes now, queued or not (with
 * its unblock's data): the module is going and its threads have stopped. */
void module_blocks_release(module *m) {
    pthread_mutex_lock(&queue_lock);
    keel_blocked **pp = &queue_head;
    queue_tail = NULL;
    while (*pp) {
        if ((*pp)->mod == m) {
            *pp = (*pp)->qnext; /* still marked queued: its data goes below */
        } else {
            queue_tail = *pp;
            pp = &(*pp)->qnext;
        }
    }
    pthread_mutex_unlock(&queue_lock);
    for (keel_blocked *b = live, *next; b; b = next) {
        next = b->next;
        if (b->mod != m || b->c) continue;
        if (b->queued) blocked_drop_data(b, b->data);
        blocked_free(b);
    }
}
