/* blocking.c -- clients blocked on keys (see blocking.h): each database's
 * table of blocked keys (key -> the clients waiting on it, in the order
 * they blocked), the keys made ready and their serving by reruns, the
 * deadlines (a min-heap behind one event-loop timer), and the queue of
 * unblocked clients whose pipelined requests wait to run.
 *
 * A blocked client stays in its keys' queues while its command is run
 * again, so a rerun that finds nothing keeps its place; it leaves them
 * only when served, timed out, unblocked or freed. */
#include "session/blocking.h"

#include "common/common.h"
#include "common/kmem.h"
#include "ds/hashtable.h"
#include "io/io_threads.h"
#include "keyspace/db.h"
#include "keyspace/object.h"
#include "session/command.h"
#include "session/latency.h"
#include "session/reply.h"
#include "session/slowlog.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct blocked_key blocked_key;

/* One client waiting on one key: a node of the key's queue. */
typedef struct waiter {
    struct waiter *prev, *next;
    struct blocking_state *bs;
    blocked_key *bk;
} waiter;

/* An entry of a database's table: a key and its waiting clients. */
struct blocked_key {
    char *key;
    size_t len;
    waiter *head, *tail;
    size_t count;
    size_t nokey; /* waiters woken by the key's deletion (BLOCKING_WAKE_ON_DELETE) */
    int ready;    /* queued in the ready list */
};

struct blocking_state {
    client *c;
    db *db;
    command *cmd;
    int argc;
    karg *argv; /* copies: the query buffer moves on past the request */
    int nkeys;
    waiter *waiters;  /* one per distinct key */
    int64_t deadline; /* unix ms; 0: none */
    size_t heap_idx;
    blocking_null on_timeout;
    int obj_type;  /* the type a key needs to be offered; -1: any */
    int flags;     /* BLOCKING_WAKE_* */
    uint64_t us;   /* time the attempts took so far */
    int rerunning; /* its command runs again now */
    int in_callback; /* a module's callback for it runs now */
    int blocked_again;
    /* A module's wait (blocking_wait_module): its callbacks instead of a
     * rerun. NULL for a command's. */
    const blocking_module_ops *mops;
    void *mpriv;
};

/* A ready key, copied: its table entry may go before it is served. */
typedef struct ready_key {
    db *db;
    char *key;
    size_t len;
} ready_key;

static blocking_metrics *stats;
static event_loop *loop;
static hashtable **tables; /* by database id */
static int table_count;
static ready_key *ready;
static size_t ready_count, ready_cap;
static int serving;
static struct blocking_state **heap; /* by deadline */
static size_t heap_count, heap_cap;
static int64_t timer_id; /* 0: none */
static int64_t timer_at; /* the deadline it is set for */
static int in_timer;
static client **unblocked; /* NULL where a client was freed */
static size_t unblocked_count, unblocked_cap;

static void *grow(void *arr, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return arr;
    *cap = *cap ? *cap * 2 : 8;
    if (*cap < need) *cap = need;
    return km_realloc(arr, *cap * size);
}

static const void *blocked_key_key(const void *entry, size_t *len) {
    const blocked_key *bk = entry;
    *len = bk->len;
    return bk->key;
}

static void blocked_key_free(void *entry) {
    blocked_key *bk = entry;
    km_free(bk->key);
    km_free(bk);
}

static const hashtable_type blocked_table_type = {.entry_key = blocked_key_key,
                                                  .entry_free = blocked_key_free};

/* ---- parsing, permission ---- */

int blocking_allowed(const client *c) {
    return !(c->flags & CLIENT_DENY_BLOCKING);
}

/* Valkey's long double rule: the whole argument, no leading space, no
 * NaN, no overflow. */
static int blocking_parse_ld(const karg *arg, long double *out) {
    char buf[256];
    if (arg->len == 0 || arg->len >= sizeof(buf) || isspace((unsigned char)arg->ptr[0])) return 0;
    memcpy(buf, arg->ptr, arg->len);
    buf[arg->len] = '\0';
    char *end;
    errno = 0;
    long double v = strtold(buf, &end);
    if (*end != '\0' || isnan(v)) return 0;
    if (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO))
        return 0;
    *out = v;
    return 1;
}

int blocking_parse_timeout(client *c, const karg *arg, int64_t *deadline_ms) {
    long double v;
    if (!blocking_parse_ld(arg, &v)) {
        reply_error(c, "ERR timeout is not a float or out of range");
        return K_ERR;
    }
    v *= 1000.0L;
    if (v > (long double)LLONG_MAX) {
        reply_error(c, "ERR timeout is out of range");
        return K_ERR;
    }
    /* Rounded up, as Valkey: -0.0001 s is 0, which waits forever. */
    v = ceill(v);
    if (v < 0) {
        reply_error(c, "ERR timeout is negative");
        return K_ERR;
    }
    long long ms = (long long)v;
    if (ms > 0) {
        int64_t now = event_cached_ms(); /* the command's start, as Valkey's snapshot */
        if (ms > LLONG_MAX - now) {
            reply_error(c, "ERR timeout is out of range");
            return K_ERR;
        }
        ms += now;
    }
    *deadline_ms = ms;
    return K_OK;
}

int blocking_parse_timeout_ms(client *c, const karg *arg, int64_t *deadline_ms) {
    long long ms;
    if (!str_to_ll(arg->ptr, arg->len, &ms)) {
        reply_error(c, "ERR timeout is not an integer or out of range");
        return K_ERR;
    }
    if (ms < 0) {
        reply_error(c, "ERR timeout is negative");
        return K_ERR;
    }
    if (ms > 0) {
        int64_t now = event_cached_ms();
        if (ms > LLONG_MAX - now) {
            reply_error(c, "ERR timeout is out of range");
            return K_ERR;
        }
        ms += now;
    }
    *deadline_ms = ms;
    return K_OK;
}

/* ---- deadlines: a min-heap and one timer at the earliest ---- */

static void heap_place(size_t i, struct blocking_state *bs) {
    heap[i] = bs;
    bs->heap_idx = i;
}

static void heap_up(size_t i) {
    struct blocking_state *bs = heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (heap[parent]->deadline <= bs->deadline) break;
        heap_place(i, heap[parent]);
        i = parent;
    }
    heap_place(i, bs);
}

static void heap_down(size_t i) {
    struct blocking_state *bs = heap[i];
    for (;;) {
        size_t l = 2 * i + 1, m = l;
        if (l >= heap_count) break;
        if (l + 1 < heap_count && heap[l + 1]->deadline < heap[l]->deadline) m = l + 1;
        if (heap[m]->deadline >= bs->deadline) break;
        heap_place(i, heap[m]);
        i = m;
    }
    heap_place(i, bs);
}

static void heap_push(struct blocking_state *bs) {
    heap = grow(heap, &heap_cap, heap_count + 1, sizeof(*heap));
    heap_place(heap_count++, bs);
    heap_up(heap_count - 1);
    stats->clients_in_timeout_table = (long long)heap_count;
}

static void heap_remove(struct blocking_state *bs) {
    size_t i = bs->heap_idx;
    struct blocking_state *last = heap[--heap_count];
    if (i < heap_count) {
        heap_place(i, last);
        heap_up(i);
        heap_down(last->heap_idx);
    }
    stats->clients_in_timeout_table = (long long)heap_count;
}

static void blocking_end_unserved(client *c, int as_error);

/* Times out every client whose deadline has passed. A module's wait whose
 * unblock is queued is left to it, with no deadline any more. */
static void blocking_expire(int64_t now) {
    while (heap_count && heap[0]->deadline <= now) {
        struct blocking_state *bs = heap[0];
        if (bs->mops && bs->mops->unblock_queued(bs->mpriv)) {
            heap_remove(bs);
            bs->deadline = 0;
            continue;
        }
        blocking_end_unserved(bs->c, 0);
    }
}

/* The timer's delay to deadline at: a far deadline (a timeout of years)
 * is reached in steps, which the event loop's microseconds hold. */
#define BLOCKING_TIMER_MAX_MS (24LL * 3600 * 1000)
static int64_t blocking_delay(int64_t at, int64_t now) {
    if (at <= now) return 0;
    return at - now > BLOCKING_TIMER_MAX_MS ? BLOCKING_TIMER_MAX_MS : at - now;
}

static int64_t blocking_timer(event_loop *el, int64_t id, void *data) {
    K_UNUSED(el);
    K_UNUSED(id);
    K_UNUSED(data);
    in_timer = 1;
    int64_t now = event_now_ms();
    blocking_expire(now);
    in_timer = 0;
    if (!heap_count) {
        timer_id = 0;
        return EV_TIMER_STOP;
    }
    timer_at = heap[0]->deadline;
    return timer_at > now ? blocking_delay(timer_at, now) : 1;
}

/* Sets the timer to the earliest deadline when it is set later (or not
 * at all); a timer left early finds nothing and sets itself again. */
static void blocking_arm_timer(void) {
    if (!heap_count || in_timer || !loop) return;
    int64_t at = heap[0]->deadline;
    if (timer_id && timer_at <= at) return;
    if (timer_id) event_timer_del(loop, timer_id);
    int64_t now = event_now_ms();
    timer_id = event_timer_add(loop, blocking_delay(at, now), blocking_timer, NULL);
    timer_at = at;
}

/* ---- the keys' queues ---- */

static hashtable *blocking_table(const db *d) {
    return tables[d->id];
}

static void waiter_add(struct blocking_state *bs, waiter *w, const karg *key) {
    hashtable *t = blocking_table(bs->db);
    blocked_key *bk = hashtable_find(t, key->ptr, key->len);
    if (!bk) {
        bk = km_calloc(1, sizeof(*bk));
        bk->key = km_alloc(key->len ? key->len : 1);
        memcpy(bk->key, key->ptr, key->len);
        bk->len = key->len;
        hashtable_add(t, bk, NULL);
        stats->total_blocking_keys++;
    }
    if ((bs->flags & BLOCKING_WAKE_ON_DELETE) && bk->nokey++ == 0)
        stats->total_blocking_keys_on_nokey++;
    w->bs = bs;
    w->bk = bk;
    w->next = NULL;
    w->prev = bk->tail;
    if (bk->tail)
        bk->tail->next = w;
    else
        bk->head = w;
    bk->tail = w;
    bk->count++;
}

static void waiter_remove(struct blocking_state *bs, waiter *w) {
    blocked_key *bk = w->bk;
    if (w->prev)
        w->prev->next = w->next;
    else
        bk->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        bk->tail = w->prev;
    if ((bs->flags & BLOCKING_WAKE_ON_DELETE) && --bk->nokey == 0)
        stats->total_blocking_keys_on_nokey--;
    if (--bk->count == 0) {
        hashtable_delete(blocking_table(bs->db), bk->key, bk->len, NULL);
        stats->total_blocking_keys--;
    }
}

/* 1 if key is one bs already waits on (BLPOP k k 0). */
static int blocking_key_seen(const struct blocking_state *bs, const karg *key) {
    for (int i = 0; i < bs->nkeys; i++) {
        const blocked_key *bk = bs->waiters[i].bk;
        if (bk->len == key->len && memcmp(bk->key, key->ptr, key->len) == 0) return 1;
    }
    return 0;
}

/* The type a key must hold to be worth a rerun, from the command's
 * categories: a list command is not woken by a string. */
static int blocking_type_of(const command *cmd) {
    uint32_t cats = command_acl_categories(cmd);
    if (cats & ACL_CAT_LIST) return OBJ_LIST;
    if (cats & ACL_CAT_SORTEDSET) return OBJ_ZSET;
    if (cats & ACL_CAT_STREAM) return OBJ_STREAM;
    return -1;
}

static void blocking_reply_null(client *c, blocking_null kind) {
    if (kind == BLOCKING_NULL_BULK)
        reply_null(c);
    else
        reply_null_array(c);
}

/* A wait on up to nkeys keys, not yet in any queue. */
static struct blocking_state *blocking_state_new(client *c, int nkeys, int64_t deadline_ms) {
    struct blocking_state *bs = km_calloc(1, sizeof(*bs));
    bs->c = c;
    bs->db = c->db;
    bs->cmd = c->cmd;
    bs->argc = c->argc;
    bs->argv = client_copy_args(c->argc, c->argv);
    bs->deadline = deadline_ms;
    bs->waiters = km_calloc((size_t)(nkeys > 0 ? nkeys : 1), sizeof(waiter));
    return bs;
}

static void blocking_state_start(client *c, struct blocking_state *bs) {
    c->bstate = bs;
    stats->blocked_clients++;
    if (bs->deadline) {
        heap_push(bs);
        blocking_arm_timer();
    }
}

void blocking_wait(client *c, const int *keypos, int nkeys, int64_t deadline_ms,
                   blocking_null on_timeout) {
    blocking_wait_flags(c, keypos, nkeys, deadline_ms, on_timeout, 0);
}

void blocking_wait_flags(client *c, const int *keypos, int nkeys, int64_t deadline_ms,
                         blocking_null on_timeout, int flags) {
    if (c->bstate) { /* a rerun that found nothing: place and deadline stay */
        c->bstate->blocked_again = 1;
        return;
    }
    if (!blocking_allowed(c) || !tables) {
        blocking_reply_null(c, on_timeout);
        return;
    }
    struct blocking_state *bs = blocking_state_new(c, nkeys, deadline_ms);
    bs->on_timeout = on_timeout;
    bs->obj_type = blocking_type_of(c->cmd);
    bs->flags = flags;
    for (int i = 0; i < nkeys; i++) {
        const karg *key = &bs->argv[keypos[i]];
        if (!blocking_key_seen(bs, key)) waiter_add(bs, &bs->waiters[bs->nkeys++], key);
    }
    blocking_state_start(c, bs);
}

int blocking_wait_module(client *c, const char *const *keys, const size_t *lens, int nkeys,
                         int64_t deadline_ms, const blocking_module_ops *ops, void *priv) {
    if (!blocking_allowed(c) || !tables || c->bstate) return K_ERR;
    struct blocking_state *bs = blocking_state_new(c, nkeys, deadline_ms);
    bs->obj_type = -1; /* the module's own test, in its key_ready */
    bs->mops = ops;
    bs->mpriv = priv;
    for (int i = 0; i < nkeys; i++) {
        karg key = {.ptr = keys[i], .len = lens[i]};
        if (!blocking_key_seen(bs, &key)) waiter_add(bs, &bs->waiters[bs->nkeys++], &key);
    }
    blocking_state_start(c, bs);
    return K_OK;
}

void blocking_rewrite_arg(client *c, int pos, const char *s, size_t len) {
    struct blocking_state *bs = c->bstate;
    if (!bs || bs->mops || pos < 0 || pos >= bs->argc) return;
    karg *a = &bs->argv[pos];
    if (a->obj)
        obj_decref(a->obj);
    else
        km_free((char *)a->ptr);
    a->ptr = km_strndup(s, len);
    a->len = len;
    a->obj = NULL;
}

int blocking_is_rerun(const client *c) {
    return c->bstate && c->bstate->rerunning;
}

int blocking_left_blocked(client *c, uint64_t *us) {
    struct blocking_state *bs = c->bstate;
    if (!bs->rerunning || bs->blocked_again) {
        bs->us += *us;
        return 1;
    }
    *us += bs->us; /* served: the command took all its attempts */
    return 0;
}

/* Takes c out of every queue and frees its state; a client that goes on
 * is queued to run its pipelined requests. */
static void blocking_release(client *c, int resume) {
    struct blocking_state *bs = c->bstate;
    for (int i = 0; i < bs->nkeys; i++)
        waiter_remove(bs, &bs->waiters[i]);
    if (bs->deadline) heap_remove(bs);
    client_free_args(bs->argc, bs->argv);
    km_free(bs->waiters);
    km_free(bs);
    c->bstate = NULL;
    stats->blocked_clients--;
    if (!resume || (c->flags & CLIENT_UNBLOCKED)) return;
    c->flags |= CLIENT_UNBLOCKED;
    unblocked = grow(unblocked, &unblocked_cap, unblocked_count + 1, sizeof(*unblocked));
    unblocked[unblocked_count++] = c;
}

/* The statistics of a command that ends without a rerun serving it (a
 * timeout, CLIENT UNBLOCK, a module's callback): counted once, with the
 * time its attempts took (the slow log sees its arguments). */
static void blocking_count_unserved(client *c, struct blocking_state *bs, int failed) {
    command *cmd = bs->cmd;
    cmd->calls++;
    cmd->usec += (long long)bs->us;
    if (failed) cmd->failed_calls++;
    latency_record_command(cmd, bs->us);
    session_stats()->total_commands_processed++;
    c->commands_processed++;
    if (cmd->flags & CMD_SKIP_SLOWLOG) return;
    int argc = c->argc;
    karg *argv = c->argv;
    c->argc = bs->argc;
    c->argv = bs->argv;
    c->redacted = 0;
    size_t request = 0;
    for (int i = 0; i < c->argc; i++)
        request += c->argv[i].len;
    commandlog_push(c, bs->us, request, 0);
    c->argc = argc;
    c->argv = argv;
}

/* A module's callback for bs runs as its client's work (see blocking.h);
 * afterwards the caller checks that c still waits in bs. */
static client_scope blocking_callback_enter(struct blocking_state *bs) {
    bs->in_callback = 1;
    return client_enter(bs->c);
}

static void blocking_callback_leave(client *c, struct blocking_state *bs, client_scope s) {
    if (c->bstate == bs) bs->in_callback = 0;
    client_leave(c, s);
}

/* The module replied: the wait ends, counted once. */
static void blocking_end_module(client *c, int failed) {
    struct blocking_state *bs = c->bstate;
    const blocking_module_ops *mops = bs->mops;
    void *mpriv = bs->mpriv;
    blocking_count_unserved(c, bs, failed);
    blocking_release(c, 1);
    mops->ended(c, mpriv);
}

/* The deadline passed or CLIENT UNBLOCK: the null (or the error), the
 * statistics, and the client goes on. */
static void blocking_end_unserved(client *c, int as_error) {
    struct blocking_state *bs = c->bstate;
    if (c->io_job) io_threads_quiesce(); /* its job no longer reads the replies */
    long long errors = c->cmd_errors;
    if (as_error) {
        reply_error(c, "UNBLOCKED client unblocked via CLIENT UNBLOCK");
    } else if (bs->mops) {
        client_scope s = blocking_callback_enter(bs);
        bs->mops->timeout(c, bs->mpriv);
        blocking_callback_leave(c, bs, s);
        if (c->bstate != bs) return;
    } else {
        blocking_reply_null(c, bs->on_timeout);
    }
    if (bs->mops) {
        blocking_end_module(c, c->cmd_errors > errors);
        return;
    }
    blocking_count_unserved(c, bs, c->cmd_errors > errors);
    blocking_release(c, 1);
}

void blocking_module_unblock(client *c, void *data) {
    struct blocking_state *bs = c->bstate;
    if (c->io_job) io_threads_quiesce(); /* its job no longer reads the replies */
    long long errors = c->cmd_errors;
    client_scope s = blocking_callback_enter(bs);
    bs->mops->unblocked(c, data, bs->mpriv);
    blocking_callback_leave(c, bs, s);
    if (c->bstate == bs) blocking_end_module(c, c->cmd_errors > errors);
}

int blocking_unblock(client *c, int as_error) {
    struct blocking_state *bs = c->bstate;
    if (!bs || bs->rerunning || bs->in_callback) return 0;
    if (bs->mops) {
        if (!bs->mops->may_time_out(bs->mpriv)) return 0;
        if (bs->mops->unblock_queued(bs->mpriv)) return 1; /* its reply wins */
    }
    blocking_end_unserved(c, as_error);
    return 1;
}

void blocking_forget(client *c) {
    if (c->bstate) {
        const blocking_module_ops *mops = c->bstate->mops;
        void *mpriv = c->bstate->mpriv;
        blocking_release(c, 0);
        if (mops) mops->ended(c, mpriv);
    }
    if (!(c->flags & CLIENT_UNBLOCKED)) return;
    c->flags &= ~CLIENT_UNBLOCKED;
    for (size_t i = 0; i < unblocked_count; i++)
        if (unblocked[i] == c) unblocked[i] = NULL;
}

/* ---- ready keys ---- */

static void blocking_mark_ready(db *d, blocked_key *bk) {
    if (bk->ready) return;
    bk->ready = 1;
    ready = grow(ready, &ready_cap, ready_count + 1, sizeof(*ready));
    ready_key *rk = &ready[ready_count++];
    rk->db = d;
    rk->key = km_alloc(bk->len ? bk->len : 1);
    memcpy(rk->key, bk->key, bk->len);
    rk->len = bk->len;
}

static void blocking_mark_db(db *d) {
    hashtable_iter it;
    void *entry;
    hashtable_iter_init(&it, blocking_table(d), 0);
    while (hashtable_iter_next(&it, &entry))
        blocking_mark_ready(d, entry);
    hashtable_iter_reset(&it);
}

/* The keyspace's hook: a key set, pushed to, renamed or moved into place
 * may serve its waiters; a swapped database may serve all of them. */
static void blocking_on_change(const db_change *ch, void *priv) {
    K_UNUSED(priv);
    if (K_LIKELY(!stats->total_blocking_keys)) return;
    if (ch->event == DB_EV_MODIFIED) {
        blocked_key *bk = hashtable_find(blocking_table(ch->d), ch->key, ch->len);
        if (bk) blocking_mark_ready(ch->d, bk);
    } else if (ch->event == DB_EV_DELETED || ch->event == DB_EV_EXPIRED ||
               ch->event == DB_EV_EVICTED) {
        if (!stats->total_blocking_keys_on_nokey) return;
        blocked_key *bk = hashtable_find(blocking_table(ch->d), ch->key, ch->len);
        if (bk && bk->nokey) blocking_mark_ready(ch->d, bk);
    } else if (ch->event == DB_EV_FLUSHED) {
        if (stats->total_blocking_keys_on_nokey) blocking_mark_db(ch->d);
    } else if (ch->event == DB_EV_SWAPPED && ch->d != ch->other) {
        blocking_mark_db(ch->d);
        blocking_mark_db(ch->other);
    }
}

/* Whether key in d holds something c's command may take: it exists, is
 * not stale, and has the type waited for. */
static int blocking_key_offers(db *d, const char *key, size_t len, int type) {
    db_entry *e = db_find(d, key, len);
    if (!e || db_is_expired(e)) return 0;
    return type < 0 || db_entry_type(e) == type;
}

/* Runs c's command again with its saved arguments; a rerun that does not
 * block again served c (or failed), which unblocks it. */
static void blocking_rerun(client *c) {
    struct blocking_state *bs = c->bstate;
    if (c->io_job) io_threads_quiesce(); /* the job no longer touches c */
    int argc = c->argc;
    karg *argv = c->argv;
    size_t consumed = c->parser.consumed, big_direct = c->big_direct;
    c->argc = bs->argc;
    c->argv = bs->argv;
    c->cmd = bs->cmd;
    c->db = bs->db;
    c->parser.consumed = 0; /* the request size comes from the arguments */
    c->big_direct = 0;
    bs->rerunning = 1;
    bs->blocked_again = 0;
    client_rerun(c);
    bs->rerunning = 0;
    c->argc = argc;
    c->argv = argv;
    c->parser.consumed = consumed;
    c->big_direct = big_direct;
    if (!bs->blocked_again) blocking_release(c, 1);
}

/* A module's wait is offered the key through its callback, in the
 * database it blocked in; a callback that replied served it. */
static void blocking_offer_module(client *c, const char *key, size_t len) {
    struct blocking_state *bs = c->bstate;
    if (c->io_job) io_threads_quiesce(); /* the callback may reply */
    c->db = bs->db;
    long long errors = c->cmd_errors;
    client_scope s = blocking_callback_enter(bs);
    int replied = bs->mops->key_ready(c, key, len, bs->mpriv);
    blocking_callback_leave(c, bs, s);
    if (replied && c->bstate == bs) blocking_end_module(c, c->cmd_errors > errors);
}

/* Offers the key to its waiters in the order they blocked: those waiting
 * when it became ready, each while the key still offers something. They
 * are protected meanwhile, so a client freed by another's rerun is only
 * closed later and each pointer stays valid. */
static void blocking_serve_key(db *d, blocked_key *bk) {
    size_t n = bk->count, len = bk->len;
    client **waiting = km_alloc(n * sizeof(*waiting));
    uint32_t *had = km_alloc(n * sizeof(*had));
    char *key = km_alloc(len ? len : 1);
    memcpy(key, bk->key, len); /* bk goes with its last waiter */
    size_t i = 0;
    for (waiter *w = bk->head; w; w = w->next, i++) {
        waiting[i] = w->bs->c;
        had[i] = waiting[i]->flags & CLIENT_PROTECTED;
        waiting[i]->flags |= CLIENT_PROTECTED;
    }
    for (i = 0; i < n; i++) {
        client *c = waiting[i];
        if (!c->bstate || (c->flags & CLIENT_CLOSE_ASAP)) continue;
        if (!(c->bstate->flags & BLOCKING_WAKE_ON_DELETE) &&
            !blocking_key_offers(d, key, len, c->bstate->obj_type))
            continue;
        if (c->bstate->mops)
            blocking_offer_module(c, key, len);
        else
            blocking_rerun(c);
    }
    for (i = 0; i < n; i++)
        if (!had[i]) waiting[i]->flags &= ~CLIENT_PROTECTED;
    km_free(key);
    km_free(had);
    km_free(waiting);
}

void blocking_serve_ready(void) {
    if (serving || !ready_count) return;
    serving = 1;
    /* A rerun may make more keys ready (BLMOVE pushes): they are served in
     * the next round, before anything else runs. */
    while (ready_count) {
        ready_key *batch = ready;
        size_t n = ready_count;
        ready = NULL;
        ready_count = ready_cap = 0;
        for (size_t i = 0; i < n; i++) {
            blocked_key *bk =
                hashtable_find(blocking_table(batch[i].db), batch[i].key, batch[i].len);
            if (bk) {
                bk->ready = 0;
                blocking_serve_key(batch[i].db, bk);
            }
            km_free(batch[i].key);
        }
        km_free(batch);
    }
    serving = 0;
}

void blocking_before_sleep(void) {
    if (!tables) return;
    blocking_serve_ready();
    /* Index walk: the requests run may unblock more clients. */
    for (size_t i = 0; i < unblocked_count; i++) {
        client *c = unblocked[i];
        if (!c) continue;
        unblocked[i] = NULL;
        c->flags &= ~CLIENT_UNBLOCKED;
        client_resume_input(c);
    }
    unblocked_count = 0;
}

void blocking_signal_key(db *d, const char *key, size_t len) {
    if (!tables || !stats->total_blocking_keys) return;
    blocked_key *bk = hashtable_find(blocking_table(d), key, len);
    if (bk) blocking_mark_ready(d, bk);
}

/* ---- setup ---- */

void blocking_setup(event_loop *el, blocking_metrics *metrics) {
    loop = el;
    stats = metrics;
    table_count = db_num();
    tables = km_calloc((size_t)table_count, sizeof(*tables));
    for (int i = 0; i < table_count; i++)
        tables[i] = hashtable_create(&blocked_table_type);
    db_add_hook(blocking_on_change, NULL);
}

void blocking_teardown(void) {
    if (!tables) return;
    db_remove_hook(blocking_on_change, NULL);
    if (timer_id && loop) event_timer_del(loop, timer_id);
    for (size_t i = 0; i < ready_count; i++)
        km_free(ready[i].key);
    for (int i = 0; i < table_count; i++)
        hashtable_release(tables[i]);
    km_free(tables);
    km_free(ready);
    km_free(heap);
    km_free(unblocked);
    tables = NULL;
    ready = NULL;
    heap = NULL;
    unblocked = NULL;
    table_count = 0;
    ready_count = ready_cap = heap_count = heap_cap = unblocked_count = unblocked_cap = 0;
    timer_id = timer_at = 0;
    loop = NULL;
    stats = NULL;
}
