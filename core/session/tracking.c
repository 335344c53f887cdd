/* tracking.c -- client-side caching (see tracking.h): the table of keys
 * read by tracking clients, the BCAST prefixes, the invalidation messages
 * and the CLIENT TRACKING family of subcommands. */
#include "session/tracking.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/strconv.h"
#include "ds/hashtable.h"
#include "io/io_threads.h"
#include "keyspace/db.h"
#include "session/call.h"
#include "session/reply.h"

#include <stdio.h>
#include <string.h>

/* Per client, allocated by CLIENT TRACKING ON. */
typedef struct tracking_state {
    uint64_t redirect; /* 0: the client itself */
    int noloop;
    struct track_prefix **prefixes; /* BCAST: the prefixes it listens to */
    size_t nprefixes;
} tracking_state;

/* A remembered key and the clients that read it. Ids, not pointers: a
 * client that went away is skipped when the key changes, so nothing has to
 * walk the table when one disconnects. */
typedef struct track_key {
    uint64_t *ids;
    uint32_t nids, cap;
    size_t len;
    char key[];
} track_key;

/* A key changed under a BCAST prefix during this iteration, with the id of
 * the client that changed it last (0: none, an expiry or eviction): NOLOOP
 * clients are spared their own changes. */
typedef struct bcast_key {
    uint64_t writer;
    size_t len;
    char key[];
} bcast_key;

typedef struct track_prefix {
    char *str;
    size_t len;
    client **clients;
    size_t nclients, cap;
    hashtable *keys; /* bcast_key: collected until before-sleep */
} track_prefix;

/* An invalidation held back until the reply of the command that caused it
 * is complete: for client c (NULL: a flush, for every tracking client),
 * the keys' RESP bytes (NULL: the null of a flush). */
typedef struct pending_msg {
    client *c;
    char *proto;
    size_t len;
} pending_msg;

static const tracking_options *opts;
tracking_metrics *tracking_stats_in_use;
static hashtable *table; /* track_key */
static track_prefix **prefixes;
static size_t nprefixes;
static pending_msg *pending;
static size_t npending, pending_cap;
int tracking_pending_in_use;

/* ---- the tables ---- */

static const void *track_key_key(const void *entry, size_t *len) {
    const track_key *k = entry;
    *len = k->len;
    return k->key;
}

static void track_key_free(void *entry) {
    track_key *k = entry;
    km_free(k->ids);
    km_free(k);
}

static const hashtable_type track_key_type = {.entry_key = track_key_key,
                                              .entry_free = track_key_free};

static const void *bcast_key_key(const void *entry, size_t *len) {
    const bcast_key *k = entry;
    *len = k->len;
    return k->key;
}

static void bcast_key_free(void *entry) {
    km_free(entry);
}

static const hashtable_type bcast_key_type = {.entry_key = bcast_key_key,
                                              .entry_free = bcast_key_free};

static void tracking_update_sizes(void) {
    tracking_stats_in_use->tracking_total_keys = (long long)hashtable_size(table);
    tracking_stats_in_use->tracking_total_prefixes = (long long)nprefixes;
}

static void tracking_table_add(const char *key, size_t len, uint64_t id) {
    track_key *k = hashtable_find(table, key, len);
    if (!k) {
        k = km_alloc(sizeof(*k) + len);
        k->ids = NULL;
        k->nids = k->cap = 0;
        k->len = len;
        memcpy(k->key, key, len);
        hashtable_add(table, k, NULL);
        tracking_stats_in_use->tracking_total_keys++;
    }
    for (uint32_t i = 0; i < k->nids; i++)
        if (k->ids[i] == id) return;
    if (k->nids == k->cap) {
        k->cap = k->cap ? k->cap * 2 : 2;
        k->ids = km_realloc(k->ids, sizeof(uint64_t) * k->cap);
    }
    k->ids[k->nids++] = id;
    tracking_stats_in_use->tracking_total_items++;
}

/* ---- delivery ---- */

static void tracking_queue(client *c, const char *proto, size_t len) {
    if (npending == pending_cap) {
        pending_cap = pending_cap ? pending_cap * 2 : 8;
        pending = km_realloc(pending, sizeof(*pending) * pending_cap);
    }
    pending[npending].c = c;
    pending[npending].proto = proto ? km_strndup(proto, len) : NULL;
    pending[npending].len = len;
    npending++;
    tracking_pending_in_use = 1;
}

/* Appends bytes to an out-of-band message: pushes ignore CLIENT REPLY OFF
 * and SKIP, which are about command replies. */
static void tracking_raw(client *to, const char *s, size_t len) {
    uint32_t muted = to->flags & (CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP);
    to->flags &= ~muted;
    reply_raw(to, s, len);
    to->flags |= muted;
}

static void tracking_redir_broken(client *c, uint64_t redirect) {
    c->flags |= CLIENT_TRACKING_BROKEN_REDIR;
    if (c->resp < 3) return;
    char buf[64];
    int n = snprintf(buf, sizeof(buf), ">2\r\n$21\r\ntracking-redir-broken\r\n:%llu\r\n",
                     (unsigned long long)redirect);
    if (c->io_job) io_threads_quiesce(); /* its job no longer reads the replies */
    tracking_raw(c, buf, (size_t)n);
}

/* Sends c an invalidation of the keys in proto (a RESP array; NULL: all
 * keys, the null), on itself or its redirect client; when that client is
 * gone, c is told instead. Whatever is for the client whose command is
 * running waits for that command's reply. */
static void tracking_send(client *c, const char *proto, size_t len) {
    uint64_t redirect = c->tracking ? c->tracking->redirect : 0;
    client *to = redirect ? client_by_id(redirect) : c;
    if (to && (to->flags & CLIENT_CLOSE_ASAP)) to = NULL;
    if ((to ? to : c) == client_serving() && call_executing()) {
        tracking_queue(c, proto, len);
        return;
    }
    if (!to) {
        tracking_redir_broken(c, redirect);
        return;
    }
    static const char push[] = ">2\r\n$10\r\ninvalidate\r\n";
    static const char message[] = "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n";
    const char *head;
    if (to->resp >= 3)
        head = push;
    else if (redirect && (to->flags & CLIENT_PUBSUB))
        head = message;
    else
        return;                           /* a RESP2 connection has no way to carry it */
    if (to->io_job) io_threads_quiesce(); /* its job no longer reads the replies */
    tracking_raw(to, head, strlen(head));
    if (proto)
        tracking_raw(to, proto, len);
    else if (to->resp >= 3)
        tracking_raw(to, "_\r\n", 3);
    else
        tracking_raw(to, "$-1\r\n", 5);
}

/* "*1\r\n$<len>\r\n<key>\r\n" into a buffer of the caller's or a new one. */
static char *tracking_key_proto(const char *key, size_t len, char *buf, size_t cap, size_t *out) {
    size_t need = len + 48;
    char *p = need <= cap ? buf : km_alloc(need);
    int n = snprintf(p, need, "*1\r\n$%zu\r\n", len);
    memcpy(p + n, key, len);
    memcpy(p + n + len, "\r\n", 2);
    *out = (size_t)n + len + 2;
    return p;
}

/* Sends the invalidation of k to every client that read it, then forgets
 * it. As Valkey, a NOLOOP client is spared while its own command runs. */
static void tracking_invalidate_entry(track_key *k) {
    char buf[256];
    size_t plen;
    char *proto = tracking_key_proto(k->key, k->len, buf, sizeof(buf), &plen);
    client *current = client_serving();
    for (uint32_t i = 0; i < k->nids; i++) {
        client *target = client_by_id(k->ids[i]);
        if (!target || !(target->flags & CLIENT_TRACKING) ||
            (target->flags & CLIENT_TRACKING_BCAST))
            continue;
        if (target->tracking->noloop && target == current) continue;
        tracking_send(target, proto, plen);
    }
    if (proto != buf) km_free(proto);
    tracking_stats_in_use->tracking_total_items -= k->nids;
    hashtable_delete(table, k->key, k->len, NULL);
    tracking_stats_in_use->tracking_total_keys = (long long)hashtable_size(table);
}

static void tracking_collect_bcast(const char *key, size_t len, uint64_t writer) {
    for (size_t i = 0; i < nprefixes; i++) {
        track_prefix *p = prefixes[i];
        if (p->len > len || memcmp(p->str, key, p->len) != 0) continue;
        bcast_key *b = hashtable_find(p->keys, key, len);
        if (b) {
            b->writer = writer; /* the last change decides NOLOOP */
            continue;
        }
        b = km_alloc(sizeof(*b) + len);
        b->writer = writer;
        b->len = len;
        memcpy(b->key, key, len);
        hashtable_add(p->keys, b, NULL);
    }
}

/* A flush: everything any client cached is stale. The table is emptied
 * now; the null goes to every tracking client once the command is over
 * (FLUSHALL announces each database: one message, not sixteen). */
static void tracking_on_flush(void) {
    if (tracking_stats_in_use->tracking_clients &&
        !(npending && !pending[npending - 1].c && !pending[npending - 1].proto))
        tracking_queue(NULL, NULL, 0);
    hashtable_empty(table);
    tracking_stats_in_use->tracking_total_keys = 0;
    tracking_stats_in_use->tracking_total_items = 0;
}

static void tracking_on_change(const db_change *ch, void *priv) {
    if (ch->event == DB_EV_COUNTED) return;
    if (ch->event == DB_EV_FLUSHED || ch->event == DB_EV_SWAPPED) {
        if (ch->d != ch->other)
            tracking_on_flush(); /* SWAPDB of a database with itself: no change */
        return;
    }
    if (nprefixes) {
        /* An expiry or eviction is nobody's own change. */
        client *writer =
            ch->event == DB_EV_EXPIRED || ch->event == DB_EV_EVICTED ? NULL : client_serving();
        tracking_collect_bcast(ch->key, ch->len, writer ? writer->id : 0);
    }
    track_key *k = hashtable_size(table) ? hashtable_find(table, ch->key, ch->len) : NULL;
    if (k) tracking_invalidate_entry(k);
}

void tracking_flush_pending(void) {
    if (call_executing()) return;
    /* Nothing executes now: sending queues nothing more. */
    for (size_t i = 0; i < npending; i++) {
        pending_msg *m = &pending[i];
        if (m->c) {
            if (m->c->flags & CLIENT_TRACKING) tracking_send(m->c, m->proto, m->len);
        } else {
            for (client *x = client_list_head(); x; x = x->next)
                if (x->flags & CLIENT_TRACKING) tracking_send(x, NULL, 0);
        }
        km_free(m->proto);
    }
    npending = 0;
    tracking_pending_in_use = 0;
}

/* ---- remembering reads ---- */

void tracking_remember_keys(client *tracker, const client *c, const command *cmd) {
    uint32_t f = tracker->flags;
    if (f & CLIENT_TRACKING_BCAST) return;
    if ((f & CLIENT_TRACKING_OPTIN) && !(f & CLIENT_TRACKING_CACHING)) return;
    if ((f & CLIENT_TRACKING_OPTOUT) && (f & CLIENT_TRACKING_CACHING)) return;
    /* Shard channels are keys to COMMAND GETKEYS only. */
    if (cmd->flags & CMD_PUBSUB) return;
    key_ref stack[16];
    key_ref *keys = c->argc <= 16 ? stack : km_alloc(sizeof(key_ref) * (size_t)c->argc);
    int n = command_find_keys(cmd, c->argv, c->argc, keys, c->argc);
    for (int i = 0; i < n; i++) {
        const karg *a = &c->argv[keys[i].pos];
        tracking_table_add(a->ptr, a->len, tracker->id);
    }
    if (keys != stack) km_free(keys);
}

void tracking_command_done(client *c) {
    if (c->flags & CLIENT_MULTI) return;
    const command *cmd = c->cmd;
    if (cmd && cmd->parent && !strcmp(cmd->parent->name, "client")) return;
    c->flags &= ~CLIENT_TRACKING_CACHING;
}

/* ---- the bound ---- */

/* Keys are forgotten at random, 100 per call, 100 more each call that
 * still ends over the bound (a CONFIG SET far below the table's size
 * converges in a few crons without stalling one). */
void tracking_enforce_limit(void) {
    static unsigned rounds_over;
    if (!tracking_stats_in_use || !tracking_stats_in_use->tracking_clients || !opts->table_max_keys)
        return;
    size_t max = (size_t)opts->table_max_keys;
    if (hashtable_size(table) <= max) {
        rounds_over = 0;
        return;
    }
    for (unsigned effort = 100 * (rounds_over + 1); effort > 0; effort--) {
        track_key *k = hashtable_random(table);
        if (!k) break;
        tracking_invalidate_entry(k);
        if (hashtable_size(table) <= max) {
            rounds_over = 0;
            return;
        }
    }
    rounds_over++;
}

/* ---- BCAST delivery ---- */

/* "*<n>\r\n" and each key as a bulk string, leaving out those whose last
 * writer is `skip` (0: none left out). NULL when nothing is left. */
static char *tracking_bcast_proto(hashtable *keys, uint64_t skip, size_t *out) {
    size_t count = 0, bytes = 32;
    hashtable_iter it;
    void *e;
    hashtable_iter_init(&it, keys, 0);
    while (hashtable_iter_next(&it, &e)) {
        bcast_key *b = e;
        if (skip && b->writer == skip) continue;
        count++;
        bytes += b->len + 32;
    }
    hashtable_iter_reset(&it);
    if (!count) return NULL;
    char *p = km_alloc(bytes);
    size_t n = (size_t)snprintf(p, bytes, "*%zu\r\n", count);
    hashtable_iter_init(&it, keys, 0);
    while (hashtable_iter_next(&it, &e)) {
        bcast_key *b = e;
        if (skip && b->writer == skip) continue;
        n += (size_t)snprintf(p + n, bytes - n, "$%zu\r\n", b->len);
        memcpy(p + n, b->key, b->len);
        memcpy(p + n + b->len, "\r\n", 2);
        n += b->len + 2;
    }
    hashtable_iter_reset(&it);
    *out = n;
    return p;
}

static void tracking_bcast_prefix(track_prefix *p) {
    size_t len;
    char *shared = tracking_bcast_proto(p->keys, 0, &len);
    for (size_t i = 0; i < p->nclients; i++) {
        client *c = p->clients[i];
        if (!c->tracking->noloop) {
            tracking_send(c, shared, len);
            continue;
        }
        size_t own_len;
        char *own = tracking_bcast_proto(p->keys, c->id, &own_len);
        if (own) tracking_send(c, own, own_len);
        km_free(own);
    }
    km_free(shared);
    hashtable_empty(p->keys);
}

void tracking_before_sleep(void) {
    if (!tracking_stats_in_use) return;
    if (tracking_pending_in_use) tracking_flush_pending();
    for (size_t i = 0; i < nprefixes; i++)
        if (hashtable_size(prefixes[i]->keys)) tracking_bcast_prefix(prefixes[i]);
}

/* ---- enabling and disabling ---- */

static track_prefix *tracking_prefix_get(const char *s, size_t len) {
    for (size_t i = 0; i < nprefixes; i++)
        if (prefixes[i]->len == len && memcmp(prefixes[i]->str, s, len) == 0) return prefixes[i];
    track_prefix *p = km_calloc(1, sizeof(*p));
    p->str = km_strndup(s, len);
    p->len = len;
    p->keys = hashtable_create(&bcast_key_type);
    prefixes = km_realloc(prefixes, sizeof(*prefixes) * (nprefixes + 1));
    prefixes[nprefixes++] = p;
    return p;
}

static void tracking_prefix_free(track_prefix *p) {
    hashtable_release(p->keys);
    km_free(p->clients);
    km_free(p->str);
    km_free(p);
}

static void tracking_prefix_add_client(client *c, const char *s, size_t len) {
    track_prefix *p = tracking_prefix_get(s, len);
    for (size_t i = 0; i < p->nclients; i++)
        if (p->clients[i] == c) return;
    if (p->nclients == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 4;
        p->clients = km_realloc(p->clients, sizeof(client *) * p->cap);
    }
    p->clients[p->nclients++] = c;
    tracking_state *st = c->tracking;
    st->prefixes = km_realloc(st->prefixes, sizeof(track_prefix *) * (st->nprefixes + 1));
    st->prefixes[st->nprefixes++] = p;
}

/* Takes c off p; a prefix nobody listens to any more goes. */
static void tracking_prefix_remove_client(track_prefix *p, client *c) {
    for (size_t i = 0; i < p->nclients; i++) {
        if (p->clients[i] != c) continue;
        p->clients[i] = p->clients[--p->nclients];
        break;
    }
    if (p->nclients) return;
    for (size_t i = 0; i < nprefixes; i++) {
        if (prefixes[i] != p) continue;
        prefixes[i] = prefixes[--nprefixes];
        break;
    }
    tracking_prefix_free(p);
}

static void tracking_drop_pending(client *c) {
    size_t j = 0;
    for (size_t i = 0; i < npending; i++) {
        if (pending[i].c == c)
            km_free(pending[i].proto);
        else
            pending[j++] = pending[i];
    }
    npending = j;
    tracking_pending_in_use = npending > 0;
}

#define CLIENT_TRACKING_ALL                                                                        \
    (CLIENT_TRACKING | CLIENT_TRACKING_BROKEN_REDIR | CLIENT_TRACKING_BCAST |                      \
     CLIENT_TRACKING_OPTIN | CLIENT_TRACKING_OPTOUT | CLIENT_TRACKING_CACHING)

void tracking_disable(client *c) {
    tracking_state *st = c->tracking;
    if (npending) tracking_drop_pending(c);
    if (c->flags & CLIENT_TRACKING) tracking_stats_in_use->tracking_clients--;
    c->flags &= ~CLIENT_TRACKING_ALL;
    if (!st) return;
    for (size_t i = 0; i < st->nprefixes; i++)
        tracking_prefix_remove_client(st->prefixes[i], c);
    km_free(st->prefixes);
    km_free(st);
    c->tracking = NULL;
    tracking_update_sizes();
}

/* The options of CLIENT TRACKING after ON|OFF. */
typedef struct tracking_args {
    long long redirect;
    uint32_t flags; /* CLIENT_TRACKING_BCAST / OPTIN / OPTOUT */
    int noloop;
    const karg **prefixes;
    int nprefixes;
} tracking_args;

/* Returns 0 after replying an error. */
static int tracking_parse(client *c, tracking_args *a) {
    memset(a, 0, sizeof(*a));
    a->prefixes = km_alloc(sizeof(karg *) * (size_t)c->argc);
    for (int j = 3; j < c->argc; j++) {
        const karg *o = &c->argv[j];
        int more = j + 1 < c->argc;
        if (karg_eq(o, "redirect") && more) {
            if (a->redirect) {
                reply_error(c, "ERR A client can only redirect to a single other client");
                return 0;
            }
            const karg *id = &c->argv[++j];
            if (!str_to_ll(id->ptr, id->len, &a->redirect)) {
                reply_not_int(c);
                return 0;
            }
            if (a->redirect <= 0 || !client_by_id((uint64_t)a->redirect)) {
                reply_error(c, "ERR The client ID you want redirect to does not exist");
                return 0;
            }
        } else if (karg_eq(o, "bcast")) {
            a->flags |= CLIENT_TRACKING_BCAST;
        } else if (karg_eq(o, "optin")) {
            a->flags |= CLIENT_TRACKING_OPTIN;
        } else if (karg_eq(o, "optout")) {
            a->flags |= CLIENT_TRACKING_OPTOUT;
        } else if (karg_eq(o, "noloop")) {
            a->noloop = 1;
        } else if (karg_eq(o, "prefix") && more) {
            a->prefixes[a->nprefixes++] = &c->argv[++j];
        } else {
            reply_syntax_error(c);
            return 0;
        }
    }
    return 1;
}

static int tracking_overlap(const char *a, size_t alen, const char *b, size_t blen) {
    return memcmp(a, b, alen < blen ? alen : blen) == 0;
}

/* A client's prefixes must not overlap (a key would match two of them and
 * be sent twice): neither the new ones among themselves, nor with the
 * client's current ones. Returns 0 after replying an error. */
static int tracking_check_prefixes(client *c, const tracking_args *a) {
    tracking_state *st = c->tracking;
    for (int i = 0; i < a->nprefixes; i++) {
        const karg *p = a->prefixes[i];
        for (size_t k = 0; st && k < st->nprefixes; k++) {
            const track_prefix *old = st->prefixes[k];
            if (!tracking_overlap(old->str, old->len, p->ptr, p->len)) continue;
            reply_errorf(
                c,
                "ERR Prefix '%.*s' overlaps with an existing prefix '%.*s'. Prefixes for a single "
                "client must not overlap.",
                (int)p->len, p->ptr, (int)old->len, old->str);
            return 0;
        }
        for (int k = i + 1; k < a->nprefixes; k++) {
            const karg *q = a->prefixes[k];
            if (!tracking_overlap(p->ptr, p->len, q->ptr, q->len)) continue;
            reply_errorf(
                c,
                "ERR Prefix '%.*s' overlaps with another provided prefix '%.*s'. Prefixes for a "
                "single client must not overlap.",
                (int)p->len, p->ptr, (int)q->len, q->ptr);
            return 0;
        }
    }
    return 1;
}

/* The rules of ON against the options and the client's current mode.
 * Returns 0 after replying an error. */
static int tracking_check_on(client *c, const tracking_args *a) {
    uint32_t f = c->flags, want = a->flags;
    if (!(want & CLIENT_TRACKING_BCAST) && a->nprefixes) {
        reply_error(c, "ERR PREFIX option requires BCAST mode to be enabled");
        return 0;
    }
    if ((f & CLIENT_TRACKING) &&
        !!(f & CLIENT_TRACKING_BCAST) != !!(want & CLIENT_TRACKING_BCAST)) {
        reply_error(
            c, "ERR You can't switch BCAST mode on/off before disabling tracking for this client, "
               "and then re-enabling it with a different mode.");
        return 0;
    }
    if ((want & CLIENT_TRACKING_BCAST) &&
        (want & (CLIENT_TRACKING_OPTIN | CLIENT_TRACKING_OPTOUT))) {
        reply_error(c, "ERR OPTIN and OPTOUT are not compatible with BCAST");
        return 0;
    }
    if ((want & CLIENT_TRACKING_OPTIN) && (want & CLIENT_TRACKING_OPTOUT)) {
        reply_error(c, "ERR You can't specify both OPTIN mode and OPTOUT mode");
        return 0;
    }
    if (((want & CLIENT_TRACKING_OPTIN) && (f & CLIENT_TRACKING_OPTOUT)) ||
        ((want & CLIENT_TRACKING_OPTOUT) && (f & CLIENT_TRACKING_OPTIN))) {
        reply_error(
            c, "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, "
               "and then re-enabling it with a different mode.");
        return 0;
    }
    return !(want & CLIENT_TRACKING_BCAST) || tracking_check_prefixes(c, a);
}

/* ON again keeps the BCAST prefixes (new ones are added) and CACHING, and
 * replaces the rest of the mode, the redirect included. */
static void tracking_enable(client *c, const tracking_args *a) {
    if (!(c->flags & CLIENT_TRACKING)) tracking_stats_in_use->tracking_clients++;
    if (!c->tracking) c->tracking = km_calloc(1, sizeof(tracking_state));
    tracking_state *st = c->tracking;
    c->flags &= ~(CLIENT_TRACKING_BROKEN_REDIR | CLIENT_TRACKING_OPTIN | CLIENT_TRACKING_OPTOUT);
    c->flags |= CLIENT_TRACKING | a->flags;
    st->redirect = (uint64_t)a->redirect;
    st->noloop = a->noloop;
    if (a->flags & CLIENT_TRACKING_BCAST) {
        if (!a->nprefixes) tracking_prefix_add_client(c, "", 0);
        for (int i = 0; i < a->nprefixes; i++)
            tracking_prefix_add_client(c, a->prefixes[i]->ptr, a->prefixes[i]->len);
    }
    tracking_update_sizes();
}

/* ---- the CLIENT subcommands ---- */

void tracking_client_tracking(client *c) {
    tracking_args a;
    int ok = tracking_parse(c, &a);
    if (ok && karg_eq(&c->argv[2], "on")) {
        ok = tracking_check_on(c, &a);
        if (ok) tracking_enable(c, &a);
    } else if (ok && karg_eq(&c->argv[2], "off")) {
        tracking_disable(c);
    } else if (ok) {
        reply_syntax_error(c);
        ok = 0;
    }
    km_free(a.prefixes);
    if (ok) reply_ok(c);
}

void tracking_client_caching(client *c) {
    uint32_t f = c->flags;
    if (!(f & CLIENT_TRACKING)) {
        reply_error(
            c,
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN "
            "or OPTOUT mode enabled");
        return;
    }
    const karg *opt = &c->argv[2];
    if (karg_eq(opt, "yes")) {
        if (!(f & CLIENT_TRACKING_OPTIN)) {
            reply_error(
                c, "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
            return;
        }
    } else if (karg_eq(opt, "no")) {
        if (!(f & CLIENT_TRACKING_OPTOUT)) {
            reply_error(
                c, "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
            return;
        }
    } else {
        reply_syntax_error(c);
        return;
    }
    c->flags |= CLIENT_TRACKING_CACHING;
    reply_ok(c);
}

long long tracking_redirect_id(const client *c) {
    if (!(c->flags & CLIENT_TRACKING)) return -1;
    return c->tracking ? (long long)c->tracking->redirect : 0;
}

void tracking_client_getredir(client *c) {
    reply_int(c, tracking_redirect_id(c));
}

void tracking_client_trackinginfo(client *c) {
    uint32_t f = c->flags;
    const tracking_state *st = c->tracking;
    static const struct {
        uint32_t need, flag;
        const char *name;
    } names[] = {
        {CLIENT_TRACKING, CLIENT_TRACKING_BCAST, "bcast"},
        {CLIENT_TRACKING, CLIENT_TRACKING_OPTIN, "optin"},
        {CLIENT_TRACKING_OPTIN, CLIENT_TRACKING_CACHING, "caching-yes"},
        {CLIENT_TRACKING, CLIENT_TRACKING_OPTOUT, "optout"},
        {CLIENT_TRACKING_OPTOUT, CLIENT_TRACKING_CACHING, "caching-no"},
    };
    reply_map(c, 3);
    reply_bulk_cstr(c, "flags");
    reply_deferred h = reply_deferred_set(c);
    long long n = 1;
    reply_bulk_cstr(c, (f & CLIENT_TRACKING) ? "on" : "off");
    for (size_t i = 0; i < K_ARRAY_LEN(names); i++) {
        if (!(f & names[i].need) || !(f & names[i].flag)) continue;
        reply_bulk_cstr(c, names[i].name);
        n++;
    }
    if ((f & CLIENT_TRACKING) && st && st->noloop) {
        reply_bulk_cstr(c, "noloop");
        n++;
    }
    if (f & CLIENT_TRACKING_BROKEN_REDIR) {
        reply_bulk_cstr(c, "broken_redirect");
        n++;
    }
    reply_set_deferred_len(c, h, n);
    reply_bulk_cstr(c, "redirect");
    reply_int(c, tracking_redirect_id(c));
    reply_bulk_cstr(c, "prefixes");
    size_t np = st ? st->nprefixes : 0;
    reply_array(c, (long long)np);
    for (size_t i = 0; i < np; i++)
        reply_bulk(c, st->prefixes[i]->str, st->prefixes[i]->len);
}

char *tracking_flags_str(const client *c, char *p) {
    if (c->flags & CLIENT_TRACKING) *p++ = 't';
    if (c->flags & CLIENT_TRACKING_BROKEN_REDIR) *p++ = 'R';
    if (c->flags & CLIENT_TRACKING_BCAST) *p++ = 'B';
    return p;
}

/* ---- setup ---- */

void tracking_setup(const tracking_options *o, tracking_metrics *m) {
    opts = o;
    tracking_stats_in_use = m;
    table = hashtable_create(&track_key_type);
    db_add_hook(tracking_on_change, NULL);
}

void tracking_teardown(void) {
    if (!tracking_stats_in_use) return;
    db_remove_hook(tracking_on_change, NULL);
    for (size_t i = 0; i < npending; i++)
        km_free(pending[i].proto);
    km_free(pending);
    pending = NULL;
    npending = pending_cap = 0;
    tracking_pending_in_use = 0;
    for (size_t i = 0; i < nprefixes; i++)
        tracking_prefix_free(prefixes[i]);
    km_free(prefixes);
    prefixes = NULL;
    nprefixes = 0;
    hashtable_release(table);
    table = NULL;
    tracking_stats_in_use = NULL;
    opts = NULL;
}
