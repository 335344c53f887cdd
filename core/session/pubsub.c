/* pubsub.c -- the subscription tables and message delivery (see pubsub.h).
 *
 * The server's table of a kind maps a name to a pubsub_name: the name and
 * an array of its subscribers. Each client's table of that kind maps the
 * name to a pubsub_member, which knows the pubsub_name and the client's
 * index in its array: unsubscribing swaps the last subscriber into the
 * hole and fixes that one's index through its own table, so both
 * directions are O(1) and publishing walks a plain array. */
#include "session/pubsub.h"

#include "common/common.h"
#include "common/kmem.h"
#include "ds/glob.h"
#include "ds/hashtable.h"
#include "io/io_threads.h"
#include "keyspace/object.h"
#include "session/reply.h"

#include <string.h>

METRICS_DESCS(pubsub_metric_descs, pubsub_metrics, PUBSUB_METRICS);

typedef struct pubsub_name {
    client **subs;
    size_t nsubs, cap;
    size_t len;
    char name[]; /* len bytes and a NUL */
} pubsub_name;

typedef struct pubsub_member {
    pubsub_name *entry;
    size_t index; /* in entry->subs */
} pubsub_member;

typedef struct pubsub_state {
    hashtable *subs[PUBSUB_KINDS]; /* pubsub_member entries; NULL until used */
    /* Frames to this client published while its own command ran. */
    kobj **pending;
    size_t npending, cap;
} pubsub_state;

static const void *pubsub_name_key(const void *e, size_t *len) {
    const pubsub_name *n = e;
    *len = n->len;
    return n->name;
}

static const void *pubsub_member_key(const void *e, size_t *len) {
    const pubsub_member *m = e;
    *len = m->entry->len;
    return m->entry->name;
}

static const hashtable_type pubsub_name_type = {.entry_key = pubsub_name_key};
static const hashtable_type pubsub_member_type = {.entry_key = pubsub_member_key};

static hashtable *server_tables[PUBSUB_KINDS];
/* Set once the I/O threads were quiesced during the current publish. */
static int publish_quiesced;
static pubsub_metrics *stats;
static pubsub_metrics unattached_stats; /* before setup (unit tests) */

/* What the confirmations and messages of each kind are called. */
static const struct {
    const char *subscribe, *unsubscribe, *message;
} kind_names[PUBSUB_KINDS] = {
    {"subscribe", "unsubscribe", "message"},
    {"psubscribe", "punsubscribe", "pmessage"},
    {"ssubscribe", "sunsubscribe", "smessage"},
};

void pubsub_setup(pubsub_metrics *metrics) {
    stats = metrics;
}

void pubsub_teardown(void) {
    for (int k = 0; k < PUBSUB_KINDS; k++) {
        if (server_tables[k]) hashtable_release(server_tables[k]);
        server_tables[k] = NULL;
    }
    stats = NULL;
}

static pubsub_metrics *pubsub_stats(void) {
    return stats ? stats : &unattached_stats;
}

static void pubsub_update_gauges(void) {
    pubsub_metrics *m = pubsub_stats();
    m->pubsub_channels = pubsub_count(PUBSUB_CHANNEL);
    m->pubsub_patterns = pubsub_count(PUBSUB_PATTERN);
    m->pubsubshard_channels = pubsub_count(PUBSUB_SHARD);
}

/* ---- per-client state ---- */

int pubsub_subscribed(const client *c) {
    return c->pubsub &&
           (pubsub_client_count(c, PUBSUB_CHANNEL) || pubsub_client_count(c, PUBSUB_PATTERN) ||
            pubsub_client_count(c, PUBSUB_SHARD));
}

long long pubsub_client_count(const client *c, pubsub_kind kind) {
    const pubsub_state *st = c->pubsub;
    return st && st->subs[kind] ? (long long)hashtable_size(st->subs[kind]) : 0;
}

/* The count a confirmation reports: channels and patterns together, shard
 * channels apart (Valkey's). */
static long long pubsub_confirm_count(const client *c, pubsub_kind kind) {
    if (kind == PUBSUB_SHARD) return pubsub_client_count(c, PUBSUB_SHARD);
    return pubsub_client_count(c, PUBSUB_CHANNEL) + pubsub_client_count(c, PUBSUB_PATTERN);
}

static pubsub_state *pubsub_state_of(client *c) {
    if (!c->pubsub) c->pubsub = km_calloc(1, sizeof(pubsub_state));
    return c->pubsub;
}

/* CLIENT_PUBSUB follows the subscription count (and pubsub_clients). */
static void pubsub_update_flag(client *c) {
    int on = pubsub_subscribed(c);
    if (on && !(c->flags & CLIENT_PUBSUB)) {
        c->flags |= CLIENT_PUBSUB;
        pubsub_stats()->pubsub_clients++;
    } else if (!on && (c->flags & CLIENT_PUBSUB)) {
        c->flags &= ~CLIENT_PUBSUB;
        pubsub_stats()->pubsub_clients--;
    }
}

/* Subscription confirmations and messages are sent even under CLIENT
 * REPLY OFF or SKIP (a subscriber that silenced its replies still wants
 * its messages), as Valkey's pushes are; a closing client gets nothing. */
static uint32_t pubsub_push_begin(client *c) {
    uint32_t held = c->flags & (CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP);
    c->flags &= ~held;
    return held;
}

static void pubsub_push_end(client *c, uint32_t held) {
    c->flags |= held;
}

static void pubsub_confirm(client *c, pubsub_kind kind, int subscribe, const char *name,
                           size_t len) {
    uint32_t held = pubsub_push_begin(c);
    reply_push(c, 3);
    reply_bulk_cstr(c, subscribe ? kind_names[kind].subscribe : kind_names[kind].unsubscribe);
    if (name)
        reply_bulk(c, name, len);
    else
        reply_null(c);
    reply_int(c, pubsub_confirm_count(c, kind));
    pubsub_push_end(c, held);
}

/* ---- subscribing ---- */

static hashtable *pubsub_server_table(pubsub_kind kind) {
    if (!server_tables[kind]) server_tables[kind] = hashtable_create(&pubsub_name_type);
    return server_tables[kind];
}

static pubsub_name *pubsub_name_get(pubsub_kind kind, const char *name, size_t len) {
    hashtable *t = pubsub_server_table(kind);
    pubsub_name *n = hashtable_find(t, name, len);
    if (n) return n;
    n = km_alloc(sizeof(*n) + len + 1);
    n->subs = NULL;
    n->nsubs = n->cap = 0;
    n->len = len;
    memcpy(n->name, name, len);
    n->name[len] = '\0';
    hashtable_add(t, n, NULL);
    return n;
}

static void pubsub_name_add(pubsub_name *n, client *c) {
    if (n->nsubs == n->cap) {
        n->cap = n->cap ? n->cap * 2 : 4;
        n->subs = km_realloc(n->subs, n->cap * sizeof(client *));
    }
    n->subs[n->nsubs++] = c;
}

void pubsub_subscribe(client *c, pubsub_kind kind, const char *name, size_t len) {
    pubsub_state *st = pubsub_state_of(c);
    if (!st->subs[kind]) st->subs[kind] = hashtable_create(&pubsub_member_type);
    if (!hashtable_find(st->subs[kind], name, len)) {
        pubsub_name *n = pubsub_name_get(kind, name, len);
        pubsub_member *m = km_alloc(sizeof(*m));
        m->entry = n;
        m->index = n->nsubs;
        pubsub_name_add(n, c);
        hashtable_add(st->subs[kind], m, NULL);
        pubsub_update_flag(c);
        pubsub_update_gauges();
    }
    pubsub_confirm(c, kind, 1, name, len);
}

/* Removes c's member m of a kind from both tables; the server's entry goes
 * with its last subscriber. */
static void pubsub_drop(client *c, pubsub_kind kind, pubsub_member *m) {
    pubsub_name *n = m->entry;
    client *last = n->subs[--n->nsubs];
    if (m->index != n->nsubs) {
        n->subs[m->index] = last;
        pubsub_member *moved = hashtable_find(last->pubsub->subs[kind], n->name, n->len);
        moved->index = m->index;
    }
    hashtable_delete(c->pubsub->subs[kind], n->name, n->len, NULL);
    km_free(m);
    if (n->nsubs == 0) {
        hashtable_delete(server_tables[kind], n->name, n->len, NULL);
        km_free(n->subs);
        km_free(n);
    }
}

/* 1 if c was subscribed to name. */
static int pubsub_remove(client *c, pubsub_kind kind, const char *name, size_t len) {
    pubsub_state *st = c->pubsub;
    pubsub_member *m = st && st->subs[kind] ? hashtable_find(st->subs[kind], name, len) : NULL;
    if (!m) return 0;
    pubsub_drop(c, kind, m);
    return 1;
}

void pubsub_unsubscribe(client *c, pubsub_kind kind, const char *name, size_t len) {
    if (pubsub_remove(c, kind, name, len)) {
        pubsub_update_flag(c);
        pubsub_update_gauges();
    }
    pubsub_confirm(c, kind, 0, name, len);
}

void pubsub_unsubscribe_all(client *c, pubsub_kind kind, int notify) {
    pubsub_state *st = c->pubsub;
    hashtable *t = st ? st->subs[kind] : NULL;
    size_t removed = 0;
    if (t && hashtable_size(t) > 0) {
        /* Safe: each entry is deleted right after it is returned. */
        hashtable_iter it;
        void *e;
        hashtable_iter_init(&it, t, 1);
        while (hashtable_iter_next(&it, &e)) {
            pubsub_member *m = e;
            /* The name dies with its server entry when c was the last
             * subscriber: keep a copy for the confirmation. */
            size_t len = m->entry->len;
            char small[128];
            char *name = len <= sizeof(small) ? small : km_alloc(len);
            memcpy(name, m->entry->name, len);
            pubsub_drop(c, kind, m);
            removed++;
            pubsub_update_flag(c);
            if (notify) pubsub_confirm(c, kind, 0, name, len);
            if (name != small) km_free(name);
        }
        hashtable_iter_reset(&it);
        pubsub_update_gauges();
    }
    if (notify && removed == 0) pubsub_confirm(c, kind, 0, NULL, 0);
}

static void pubsub_pending_release(pubsub_state *st) {
    for (size_t i = 0; i < st->npending; i++)
        obj_decref(st->pending[i]);
    km_free(st->pending);
    st->pending = NULL;
    st->npending = st->cap = 0;
}

void pubsub_client_release(client *c) {
    pubsub_state *st = c->pubsub;
    if (!st) return;
    for (int k = 0; k < PUBSUB_KINDS; k++) {
        pubsub_unsubscribe_all(c, (pubsub_kind)k, 0);
        /* Emptied, then gone: the next kind's flag update counts it as 0. */
        if (st->subs[k]) hashtable_release(st->subs[k]);
        st->subs[k] = NULL;
    }
    pubsub_pending_release(st);
    km_free(st);
    c->pubsub = NULL;
    pubsub_update_flag(c);
}

/* ---- publishing ---- */

/* The frames of one message: built on first use, once per protocol. */
typedef struct pubsub_frames {
    client *current;            /* the client whose command runs, if any */
    const pubsub_name *pattern; /* NULL: a channel or shard message */
    pubsub_kind kind;
    const char *channel, *msg;
    size_t chlen, msglen;
    kobj *frame[2]; /* RESP2, RESP3 */
} pubsub_frames;

static char *pubsub_put_bulk(char *p, const char *s, size_t len) {
    *p++ = '$';
    p += ll_to_str(p, (long long)len);
    *p++ = '\r';
    *p++ = '\n';
    memcpy(p, s, len);
    p += len;
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* "<*|>n" header, the message kind, [pattern], channel, message. */
static kobj *pubsub_build(const pubsub_frames *f, int resp3) {
    const char *what = kind_names[f->pattern ? PUBSUB_PATTERN : f->kind].message;
    size_t plen = f->pattern ? f->pattern->len : 0;
    size_t cap = 4 + (strlen(what) + 32) + (plen + 32) + (f->chlen + 32) + (f->msglen + 32);
    kobj *o = obj_string_alloc(cap);
    char *p = o->v.ptr;
    *p++ = resp3 ? '>' : '*';
    *p++ = f->pattern ? '4' : '3';
    *p++ = '\r';
    *p++ = '\n';
    p = pubsub_put_bulk(p, what, strlen(what));
    if (f->pattern) p = pubsub_put_bulk(p, f->pattern->name, plen);
    p = pubsub_put_bulk(p, f->channel, f->chlen);
    p = pubsub_put_bulk(p, f->msg, f->msglen);
    o->len = (size_t)(p - o->v.ptr);
    o->v.ptr[o->len] = '\0';
    return o;
}

static void pubsub_hold(pubsub_state *st, kobj *frame) {
    if (st->npending == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 4;
        st->pending = km_realloc(st->pending, st->cap * sizeof(kobj *));
    }
    st->pending[st->npending++] = obj_incref(frame);
}

static void pubsub_send(client *c, pubsub_frames *f) {
    int v = c->resp >= 3;
    if (!f->frame[v]) f->frame[v] = pubsub_build(f, v);
    if (c->flags & CLIENT_CLOSE_ASAP) return;
    /* A write job in flight reads c's reply chain: wait until the threads
     * are done with their jobs (once per publish: no job starts while a
     * command runs) before appending to it. */
    if (K_UNLIKELY(c->io_job) && !publish_quiesced) {
        io_threads_quiesce();
        publish_quiesced = 1;
    }
    /* The running command's own reply comes first. */
    if (c == f->current) {
        pubsub_hold(c->pubsub, f->frame[v]);
        return;
    }
    if (K_UNLIKELY(c->flags & (CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP))) {
        uint32_t held = pubsub_push_begin(c);
        reply_frame(c, f->frame[v]);
        pubsub_push_end(c, held);
        return;
    }
    reply_frame(c, f->frame[v]);
}

static long long pubsub_deliver(const pubsub_name *n, pubsub_frames *f) {
    /* A subscriber dropped for its output limit stays listed until freed;
     * it still counts, as in Valkey, whose limit check closes later too. */
    for (size_t i = 0; i < n->nsubs; i++)
        pubsub_send(n->subs[i], f);
    return (long long)n->nsubs;
}

static void pubsub_frames_release(pubsub_frames *f) {
    for (int i = 0; i < 2; i++)
        if (f->frame[i]) obj_decref(f->frame[i]);
}

static long long pubsub_publish_kind(pubsub_kind kind, const char *channel, size_t chlen,
                                     const char *msg, size_t msglen) {
    long long receivers = 0;
    client *current = client_serving();
    publish_quiesced = 0;
    pubsub_frames f = {current, NULL, kind, channel, msg, chlen, msglen, {NULL, NULL}};
    const pubsub_name *n =
        server_tables[kind] ? hashtable_find(server_tables[kind], channel, chlen) : NULL;
    if (n) receivers += pubsub_deliver(n, &f);
    pubsub_frames_release(&f);
    hashtable *pats = server_tables[PUBSUB_PATTERN];
    if (kind != PUBSUB_CHANNEL || !pats || hashtable_size(pats) == 0) return receivers;
    hashtable_iter it;
    void *e;
    hashtable_iter_init(&it, pats, 0);
    while (hashtable_iter_next(&it, &e)) {
        const pubsub_name *p = e;
        if (!glob_match(p->name, p->len, channel, chlen, 0)) continue;
        pubsub_frames pf = {current, p, kind, channel, msg, chlen, msglen, {NULL, NULL}};
        receivers += pubsub_deliver(p, &pf);
        pubsub_frames_release(&pf);
    }
    hashtable_iter_reset(&it);
    return receivers;
}

long long pubsub_publish(const char *channel, size_t chlen, const char *msg, size_t msglen) {
    return pubsub_publish_kind(PUBSUB_CHANNEL, channel, chlen, msg, msglen);
}

long long pubsub_publish_shard(const char *channel, size_t chlen, const char *msg, size_t msglen) {
    return pubsub_publish_kind(PUBSUB_SHARD, channel, chlen, msg, msglen);
}

void pubsub_flush_pending(client *c) {
    pubsub_state *st = c->pubsub;
    if (!st || st->npending == 0) return;
    uint32_t held = pubsub_push_begin(c);
    for (size_t i = 0; i < st->npending; i++)
        reply_frame(c, st->pending[i]);
    pubsub_push_end(c, held);
    pubsub_pending_release(st);
}

/* ---- introspection ---- */

long long pubsub_count(pubsub_kind kind) {
    return server_tables[kind] ? (long long)hashtable_size(server_tables[kind]) : 0;
}

long long pubsub_subscribers(pubsub_kind kind, const char *name, size_t len) {
    const pubsub_name *n =
        server_tables[kind] ? hashtable_find(server_tables[kind], name, len) : NULL;
    return n ? (long long)n->nsubs : 0;
}

void pubsub_foreach(pubsub_kind kind, void (*fn)(const char *name, size_t len, void *priv),
                    void *priv) {
    if (!server_tables[kind]) return;
    hashtable_iter it;
    void *e;
    hashtable_iter_init(&it, server_tables[kind], 0);
    while (hashtable_iter_next(&it, &e)) {
        const pubsub_name *n = e;
        fn(n->name, n->len, priv);
    }
    hashtable_iter_reset(&it);
}
