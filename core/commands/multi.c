/* multi.c -- MULTI/EXEC/DISCARD transactions and optimistic locking with
 * WATCH/UNWATCH.
 *
 * The transaction code keeps, per database, a table from watched key to the
 * clients watching it, and hears of changes through the keyspace's change
 * hook: a change looks the key up only when that database's table is
 * non-empty, so WATCH costs nothing to clients that don't use it. A touched
 * watcher gets CLIENT_DIRTY_CAS and its EXEC returns a null.
 *
 * The dispatcher knows none of this: it queues through the operations set
 * with client_set_txn_ops, and a closing client's state goes in the
 * client-event hook. */
#include "commands/multi.h"

#include "commands/commands.h"
#include "common/common.h"
#include "common/kmem.h"
#include "session/call.h"
#include "session/reply.h"

#include <string.h>

typedef struct watched_key watched_key;

/* An entry of db->watched: one key and its watchers. */
typedef struct watch_entry {
    size_t keylen;
    char *key;
    watched_key **watchers;
    int count;
    int cap;
} watch_entry;

/* One client watching one key; also a node of the client's own list. */
struct watched_key {
    watched_key *next;
    client *c;
    db *db;
    watch_entry *we;
    /* The key was already logically expired when watched: its deletion by
     * expiry is then not a change (Valkey's rule). */
    int expired;
};

static const void *watch_entry_key(const void *entry, size_t *len) {
    const watch_entry *we = entry;
    *len = we->keylen;
    return we->key;
}

static void watch_entry_free(void *entry) {
    watch_entry *we = entry;
    km_free(we->key);
    km_free(we->watchers);
    km_free(we);
}

static const hashtable_type watch_table_type = {.entry_key = watch_entry_key,
                                                .entry_free = watch_entry_free};

/* watched[i]: database i's watched keys; created at setup. */
static hashtable **watched;
static int watched_count;
/* Watched keys in all databases: while 0 (almost always) a change costs the
 * hook one comparison. */
static size_t watched_keys;

static hashtable *watch_table(const db *d) {
    return watched[d->id];
}

static void watch_entry_add(watch_entry *we, watched_key *wk) {
    if (we->count == we->cap) {
        we->cap = we->cap ? we->cap * 2 : 2;
        we->watchers = km_realloc(we->watchers, sizeof(watched_key *) * (size_t)we->cap);
    }
    we->watchers[we->count++] = wk;
}

static watch_entry *watch_entry_get(db *d, const karg *key) {
    watch_entry *we = hashtable_find(watch_table(d), key->ptr, key->len);
    if (we) return we;
    we = km_calloc(1, sizeof(*we));
    we->key = km_strndup(key->ptr, key->len);
    we->keylen = key->len;
    hashtable_add(watch_table(d), we, NULL);
    watched_keys++;
    return we;
}

static void multi_watch_key(client *c, const karg *key) {
    for (watched_key *wk = c->watched; wk; wk = wk->next)
        if (wk->db == c->db && wk->we->keylen == key->len && memcmp(wk->we->key, key->ptr, key->len) == 0)
            return;
    db_entry *e = db_find(c->db, key->ptr, key->len);
    watched_key *wk = km_alloc(sizeof(*wk));
    wk->c = c;
    wk->db = c->db;
    wk->we = watch_entry_get(c->db, key);
    wk->expired = e && db_is_expired(e);
    wk->next = c->watched;
    c->watched = wk;
    watch_entry_add(wk->we, wk);
}

static int multi_watch_count(const client *c) {
    int n = 0;
    for (const watched_key *wk = c->watched; wk; wk = wk->next) n++;
    return n;
}

void multi_watch_stats(long long *clients, long long *keys) {
    *clients = *keys = 0;
    for (client *c = client_list_head(); c; c = c->next)
        *clients += c->watched != NULL;
    for (int i = 0; i < watched_count; i++)
        *keys += (long long)hashtable_size(watched[i]);
}

void multi_unwatch_all(client *c) {
    while (c->watched) {
        watched_key *wk = c->watched;
        c->watched = wk->next;
        watch_entry *we = wk->we;
        for (int i = 0; i < we->count; i++) {
            if (we->watchers[i] == wk) {
                we->watchers[i] = we->watchers[--we->count];
                break;
            }
        }
        if (we->count == 0) {
            hashtable_delete(watch_table(wk->db), we->key, we->keylen, NULL);
            watched_keys--;
        }
        km_free(wk);
    }
    c->flags &= ~CLIENT_DIRTY_CAS;
}

static void multi_touch_key(db *d, const char *key, size_t len, int by_expiry) {
    watch_entry *we = hashtable_find(watch_table(d), key, len);
    if (!we) return;
    for (int i = 0; i < we->count; i++)
        if (!(by_expiry && we->watchers[i]->expired)) we->watchers[i]->c->flags |= CLIENT_DIRTY_CAS;
}

/* Marks the watchers of keys that exist in d or in other (a flush passes
 * NULL; a swap passes the database swapped in). */
static void multi_touch_db(db *d, db *other) {
    hashtable_iter it;
    void *entry;
    hashtable_iter_init(&it, watch_table(d), 1);
    while (hashtable_iter_next(&it, &entry)) {
        watch_entry *we = entry;
        /* As in Valkey, only a key that exists (here or in the swapped-in
         * database, stale or not) can count as changed. */
        db_entry *here = db_find(d, we->key, we->keylen);
        db_entry *there = other ? db_find(other, we->key, we->keylen) : NULL;
        if (!here && !there) continue;
        int there_stale = there && db_is_expired(there);
        for (int i = 0; i < we->count; i++) {
            watched_key *wk = we->watchers[i];
            if (wk->expired) {
                /* Watched already expired: its going away is no logical
                 * change (and what is left is a missing key), nor is its
                 * replacement by another expired key. */
                if (!there) {
                    wk->expired = 0;
                    continue;
                }
                if (there_stale) continue;
            } else if (!here && there_stale) {
                /* A missing key replaced by an expired one: still missing
                 * to the client, and watched as an expired key from now. */
                wk->expired = 1;
                continue;
            }
            wk->c->flags |= CLIENT_DIRTY_CAS;
        }
    }
    hashtable_iter_reset(&it);
}

/* A watched key that expired since WATCH (but was not yet deleted) also
 * fails the transaction. */
static int multi_watched_key_expired(client *c) {
    for (watched_key *wk = c->watched; wk; wk = wk->next) {
        if (wk->expired) continue;
        db_entry *e = db_find(wk->db, wk->we->key, wk->we->keylen);
        if (e && db_is_expired(e)) return 1;
    }
    return 0;
}

/* ---- queueing ---- */

static void multi_queue(client *c) {
    if (c->mcount == c->mcap) {
        c->mcap = c->mcap ? c->mcap * 2 : 8;
        c->mcmds = km_realloc(c->mcmds, sizeof(multi_cmd) * (size_t)c->mcap);
    }
    multi_cmd *mc = &c->mcmds[c->mcount++];
    mc->cmd = c->cmd;
    mc->flags = c->cmd_flags;
    mc->argc = c->argc;
    mc->argv = client_copy_args(c->argc, c->argv);
    /* Queued commands have not run yet, so, as in Valkey, they count as
     * query buffer: a transaction of huge SETs meets client-query-buffer-limit. */
    c->mbytes += sizeof(karg) * (size_t)c->argc;
    for (int i = 0; i < c->argc; i++)
        c->mbytes += c->argv[i].len;
    reply_simple(c, "QUEUED");
}

void multi_discard_state(client *c) {
    for (int i = 0; i < c->mcount; i++) client_free_args(c->mcmds[i].argc, c->mcmds[i].argv);
    km_free(c->mcmds);
    c->mcmds = NULL;
    c->mcount = c->mcap = 0;
    c->mbytes = 0;
    c->flags &= ~(CLIENT_MULTI | CLIENT_DIRTY_EXEC);
}

static void multi_abort(client *c) {
    multi_discard_state(c);
    multi_unwatch_all(c);
}

/* ---- the seams: keyspace changes, dispatch, client close ---- */

static void multi_on_change(const db_change *ch, void *priv) {
    K_UNUSED(priv);
    if (K_LIKELY(!watched_keys)) return;
    db *d = ch->d;
    switch (ch->event) {
    case DB_EV_FLUSHED:
        if (hashtable_size(watch_table(d))) multi_touch_db(d, NULL);
        break;
    case DB_EV_SWAPPED:
        /* A database swapped with itself changes nothing a watcher sees. */
        if (d == ch->other) break;
        if (hashtable_size(watch_table(d))) multi_touch_db(d, ch->other);
        if (hashtable_size(watch_table(ch->other))) multi_touch_db(ch->other, d);
        break;
    case DB_EV_COUNTED:
        break;
    default:
        if (hashtable_size(watch_table(d)))
            multi_touch_key(d, ch->key, ch->len, ch->event == DB_EV_EXPIRED);
        break;
    }
}

static void multi_on_client_event(client *c, int event, void *priv) {
    K_UNUSED(priv);
    if (event == CALL_EVENT_CLOSE) multi_abort(c);
}

static const client_txn_ops multi_txn_ops = {
    .queue = multi_queue,
    .abort = multi_abort,
    .watch_count = multi_watch_count,
};

void multi_setup(void) {
    watched_count = db_num();
    watched = km_calloc((size_t)watched_count, sizeof(*watched));
    for (int i = 0; i < watched_count; i++)
        watched[i] = hashtable_create(&watch_table_type);
    db_add_hook(multi_on_change, NULL);
    /* The ops table doubles as the owner token that teardown removes. */
    call_add_client_event(multi_on_client_event, NULL, (void *)&multi_txn_ops);
    client_set_txn_ops(&multi_txn_ops);
}

/* After the clients are gone (their close hook unwatched them). */
void multi_teardown(void) {
    client_set_txn_ops(NULL);
    call_remove_owner((void *)&multi_txn_ops);
    db_remove_hook(multi_on_change, NULL);
    for (int i = 0; i < watched_count; i++)
        hashtable_release(watched[i]);
    km_free(watched);
    watched = NULL;
    watched_count = 0;
    watched_keys = 0;
}

/* ---- commands ---- */

/* MULTI and WATCH carry CMD_NO_MULTI: dispatch refuses them inside a
 * transaction ("Command not allowed inside a transaction"), as Valkey does. */
static void cmd_multi(client *c) {
    c->flags |= CLIENT_MULTI;
    reply_ok(c);
}

static void cmd_discard(client *c) {
    if (!(c->flags & CLIENT_MULTI)) {
        reply_error(c, "ERR DISCARD without MULTI");
        return;
    }
    multi_discard_state(c);
    multi_unwatch_all(c);
    reply_ok(c);
}

/* Runs the queued commands with the client's argv pointed at each copy. */
static void multi_exec_queued(client *c) {
    int saved_argc = c->argc;
    karg *saved_argv = c->argv;
    command *exec_cmd = c->cmd;
    uint32_t exec_flags = c->cmd_flags;
    size_t saved_consumed = c->parser.consumed;
    c->parser.consumed = 0; /* request sizes of queued commands come from args */
    reply_array(c, c->mcount);
    /* A blocking command inside the transaction replies at once. */
    c->flags |= CLIENT_DENY_BLOCKING;
    for (int i = 0; i < c->mcount; i++) {
        multi_cmd *mc = &c->mcmds[i];
        c->argc = mc->argc;
        c->argv = mc->argv;
        c->cmd = mc->cmd;
        c->cmd_flags = mc->flags;
        call(c);
    }
    c->flags &= ~CLIENT_DENY_BLOCKING;
    c->argc = saved_argc;
    c->argv = saved_argv;
    c->cmd = exec_cmd;
    c->cmd_flags = exec_flags;
    c->parser.consumed = saved_consumed;
}

static void cmd_exec(client *c) {
    if (!(c->flags & CLIENT_MULTI)) {
        reply_error(c, "ERR EXEC without MULTI");
        return;
    }
    if (c->flags & CLIENT_DIRTY_EXEC) {
        reply_error(c, "EXECABORT Transaction discarded because of previous errors.");
    } else if ((c->flags & CLIENT_DIRTY_CAS) || multi_watched_key_expired(c)) {
        reply_null_array(c);
    } else {
        /* Queued commands run with MULTI cleared so they execute. */
        c->flags &= ~CLIENT_MULTI;
        multi_exec_queued(c);
    }
    multi_discard_state(c);
    multi_unwatch_all(c);
}

static void cmd_watch(client *c) {
    for (int i = 1; i < c->argc; i++) multi_watch_key(c, &c->argv[i]);
    reply_ok(c);
}

static void cmd_unwatch(client *c) {
    multi_unwatch_all(c);
    reply_ok(c);
}

static command multi_table[] = {
    {.name = "multi",
     .proc = cmd_multi,
     .arity = 1,
     .flags = CMD_TXN_CONTROL | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST | CMD_NO_MULTI |
              CMD_ALLOW_BUSY,
     .group = "transactions",
     .summary = "Starts a transaction.",
     .since = "1.2.0"},
    {.name = "exec",
     .proc = cmd_exec,
     .arity = 1,
     .flags =
         CMD_TXN_CONTROL | CMD_TXN_EXEC | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_SKIP_SLOWLOG,
     .group = "transactions",
     .summary = "Executes all commands in a transaction.",
     .since = "1.2.0"},
    {.name = "discard",
     .proc = cmd_discard,
     .arity = 1,
     .flags = CMD_TXN_CONTROL | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST | CMD_ALLOW_BUSY,
     .group = "transactions",
     .summary = "Discards a transaction.",
     .since = "2.0.0"},
    {.name = "watch",
     .proc = cmd_watch,
     .arity = -2,
     .flags = CMD_TXN_CONTROL | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST | CMD_NO_MULTI |
              CMD_ALLOW_BUSY,
     .first_key = 1,
     .last_key = -1,
     .key_step = 1,
     .group = "transactions",
     .summary = "Monitors changes to keys to determine the execution of a transaction.",
     .since = "2.2.0"},
    {.name = "unwatch",
     .proc = cmd_unwatch,
     .arity = 1,
     .flags = CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST | CMD_ALLOW_BUSY,
     .group = "transactions",
     .summary = "Forgets about watched keys of a transaction.",
     .since = "2.2.0"},
};

const command_family commands_multi = {multi_table, K_ARRAY_LEN(multi_table)};
