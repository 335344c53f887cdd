/* cmd_stream_group.c -- the stream consumer-group commands: XGROUP (CREATE,
 * SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP), XREADGROUP (and its
 * blocking form), XACK, XPENDING, XCLAIM, XAUTOCLAIM and XINFO (STREAM,
 * GROUPS, CONSUMERS, HELP), as Valkey 8.0.1 answers them in RESP2 and
 * RESP3, with its errors and keyspace events.
 *
 * The groups are read and changed through types/stream_cgroup.h, the
 * entries through types/stream.h's iterator, the key lookup, ID parsing
 * and entry replies through commands/cmd_stream.h (shared with XADD,
 * XRANGE, XREAD...). A change to the groups is counted with
 * db_count_changes, as Valkey counts it in server.dirty without
 * signalModifiedKey: WATCH, client tracking and blocked readers do not
 * hear it (a destroyed group wakes its blocked readers explicitly). Valkey propagates XREADGROUP
 * and XCLAIM to replicas as XCLAIM and XGROUP SETID; Keel has no replication yet: the places that
 * change a pending entry are the ones that would propagate it (group_claimed and group_advanced).
 */
#include "commands/cmd_stream.h"
#include "commands/commands.h"
#include "common/common.h"
#include "common/kmem.h"
#include "common/vec.h"
#include "event/event.h"
#include "session/blocking.h"
#include "session/reply.h"
#include "types/stream_cgroup.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* ---- shared helpers ---- */

static int64_t group_now(void) {
    return event_cached_ms();
}

/* Valkey's addReplySubcommandSyntaxError for a container's subcommand. */
static void reply_sub_syntax(client *c, const char *container) {
    reply_errorf(c, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try %s HELP.",
                 (int)(c->argv[1].len > 128 ? 128 : c->argv[1].len), c->argv[1].ptr, container);
}

static void reply_nogroup(client *c, const karg *key, const karg *group) {
    reply_errorf(c, "NOGROUP No such key '%.*s' or consumer group '%.*s'", (int)key->len, key->ptr,
                 (int)group->len, group->ptr);
}

static void reply_nogroup_for_key(client *c, const karg *group, const karg *key) {
    reply_errorf(c, "NOGROUP No such consumer group '%.*s' for key name '%.*s'", (int)group->len,
                 group->ptr, (int)key->len, key->ptr);
}

/* Replies the entry id of o as [id, [field, value...]]: 1, or 0 (nothing
 * replied) when there is no such entry. */
static int reply_entry_at(client *c, const kobj *o, stream_id id) {
    stream_iter it;
    stream_id got;
    size_t npairs;
    stream_iter_start(&it, o, id, id, 0);
    int found = stream_iter_next(&it, &got, &npairs);
    if (found) stream_cmd_reply_entry(c, &it, got, npairs);
    stream_iter_stop(&it);
    return found;
}

/* The groups of key changed: `changes` counted (Valkey's server.dirty). */
static void group_changed(client *c, const karg *key, long long changes) {
    if (changes) db_count_changes(c->db, key->ptr, key->len, changes);
}

/* A consumer created by a command that names it (XREADGROUP, XCLAIM,
 * XAUTOCLAIM), announced as Valkey's streamCreateConsumer does: returns
 * the consumer and adds the change to *changes. */
static scg_consumer *consumer_get(client *c, const karg *key, scg_group *g, const karg *name,
                                  long long *changes) {
    scg_consumer *cons = scg_consumer_lookup(g, name->ptr, name->len);
    if (!cons) {
        cons = scg_consumer_create(g, name->ptr, name->len, group_now());
        notify_key(c, NOTIFY_STREAM, "xgroup-createconsumer", key);
        (*changes)++;
    }
    cons->seen_time = group_now();
    return cons;
}

/* A stream at key and its group, or the NOGROUP error: 1, or 0 after
 * replying (WRONGTYPE included). */
static int lookup_group(client *c, const karg *key, const karg *gname, kobj **o, scg_group **g) {
    if (!stream_cmd_lookup(c, key, 1, o)) return 0;
    *g = *o ? scg_lookup(*o, gname->ptr, gname->len) : NULL;
    if (*g) return 1;
    reply_nogroup(c, key, gname);
    return 0;
}

/* ---- XGROUP ---- */

/* The parsed arguments every XGROUP subcommand but HELP shares. */
typedef struct xgroup_args {
    kobj *o; /* the stream, NULL when missing */
    scg_group *g;
    int mkstream;
    int64_t entries_read;
} xgroup_args;

/* Valkey's common part of XGROUP: the options of CREATE and SETID, the
 * key's type, then the key and group that must exist. Returns 1, or 0
 * after replying. */
static int xgroup_prepare(client *c, int create, int setid, int need_group, xgroup_args *x) {
    x->mkstream = 0;
    x->entries_read = SCG_INVALID_ENTRIES_READ;
    for (int i = 5; i < c->argc;) {
        if (create && karg_eq(&c->argv[i], "mkstream")) {
            x->mkstream = 1;
            i++;
        } else if ((create || setid) && karg_eq(&c->argv[i], "entriesread") && i + 1 < c->argc) {
            long long v;
            if (!arg_to_ll(c, &c->argv[i + 1], &v)) return 0;
            if (v < 0 && v != SCG_INVALID_ENTRIES_READ) {
                reply_error(c, "ERR value for ENTRIESREAD must be positive or -1");
                return 0;
            }
            x->entries_read = v;
            i += 2;
        } else {
            reply_sub_syntax(c, "XGROUP");
            return 0;
        }
    }
    if (!stream_cmd_lookup(c, &c->argv[2], 0, &x->o)) return 0;
    x->g = x->o ? scg_lookup(x->o, c->argv[3].ptr, c->argv[3].len) : NULL;
    if (x->mkstream) return 1;
    if (!x->o) {
        reply_error(c, "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE "
                       "you may want to use the MKSTREAM option to create an empty stream "
                       "automatically.");
        return 0;
    }
    if (need_group && !x->g) {
        reply_nogroup_for_key(c, &c->argv[3], &c->argv[2]);
        return 0;
    }
    return 1;
}

static void xgroup_create(client *c) {
    xgroup_args x;
    if (!xgroup_prepare(c, 1, 0, 0, &x)) return;
    if (c->argc > 8) {
        reply_sub_syntax(c, "XGROUP");
        return;
    }
    stream_id id;
    if (stream_cmd_arg_is(&c->argv[4], '$'))
        id = x.o ? stream_last_id(x.o) : STREAM_ID_MIN;
    else if (stream_cmd_parse_id(c, &c->argv[4], 0, 0, &id) != K_OK)
        return;
    const karg *key = &c->argv[2], *name = &c->argv[3];
    if (!x.o) {
        x.o = stream_create();
        db_add(c->db, key->ptr, key->len, x.o, 0);
    }
    if (!scg_create(x.o, name->ptr, name->len, id, x.entries_read)) {
        /* Only an existing stream can hold the name already. */
        reply_error(c, "BUSYGROUP Consumer Group name already exists");
        return;
    }
    reply_ok(c);
    group_changed(c, key, 1);
    notify_key(c, NOTIFY_STREAM, "xgroup-create", key);
}

static void xgroup_setid(client *c) {
    xgroup_args x;
    if (!xgroup_prepare(c, 0, 1, 1, &x)) return;
    if (c->argc != 5 && c->argc != 7) {
        reply_sub_syntax(c, "XGROUP");
        return;
    }
    stream_id id;
    if (stream_cmd_arg_is(&c->argv[4], '$'))
        id = stream_last_id(x.o);
    else if (stream_cmd_parse_id(c, &c->argv[4], 0, 1, &id) != K_OK)
        return;
    x.g->last_id = id;
    x.g->entries_read = x.entries_read;
    reply_ok(c);
    group_changed(c, &c->argv[2], 1);
    notify_key(c, NOTIFY_STREAM, "xgroup-setid", &c->argv[2]);
}

static void xgroup_destroy(client *c) {
    xgroup_args x;
    if (!xgroup_prepare(c, 0, 0, 0, &x)) return;
    if (!x.g) {
        reply_int(c, 0);
        return;
    }
    scg_destroy(x.o, c->argv[3].ptr, c->argv[3].len);
    reply_int(c, 1);
    group_changed(c, &c->argv[2], 1);
    /* The XREADGROUPs blocked on the group rerun and answer NOGROUP. */
    blocking_signal_key(c->db, c->argv[2].ptr, c->argv[2].len);
    notify_key(c, NOTIFY_STREAM, "xgroup-destroy", &c->argv[2]);
}

static void xgroup_createconsumer(client *c) {
    xgroup_args x;
    if (!xgroup_prepare(c, 0, 0, 1, &x)) return;
    const karg *name = &c->argv[4];
    scg_consumer *cons = scg_consumer_create(x.g, name->ptr, name->len, group_now());
    reply_int(c, cons ? 1 : 0);
    if (!cons) return;
    group_changed(c, &c->argv[2], 1);
    notify_key(c, NOTIFY_STREAM, "xgroup-createconsumer", &c->argv[2]);
}

static void xgroup_delconsumer(client *c) {
    xgroup_args x;
    if (!xgroup_prepare(c, 0, 0, 1, &x)) return;
    scg_consumer *cons = scg_consumer_lookup(x.g, c->argv[4].ptr, c->argv[4].len);
    if (!cons) {
        reply_int(c, 0);
        return;
    }
    reply_int(c, (long long)scg_consumer_delete(x.g, cons));
    group_changed(c, &c->argv[2], 1);
    notify_key(c, NOTIFY_STREAM, "xgroup-delconsumer", &c->argv[2]);
}

static void xgroup_help(client *c) {
    static const char *const lines[] = {
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
    };
    reply_help(c, "XGROUP", lines, K_ARRAY_LEN(lines));
}

/* ---- XREADGROUP ---- */

/* One stream of an XREADGROUP call. */
typedef struct xrg_stream {
    kobj *o;
    scg_group *g;
    stream_id after; /* serve IDs greater than this */
    int new_only;    /* ">": entries never delivered to the group */
} xrg_stream;

typedef struct xrg_args {
    const karg *group, *consumer;
    long long count;  /* 0: no limit */
    int64_t deadline; /* BLOCK: absolute unix ms, 0 forever */
    int block;
    int noack;
    int first_key, nkeys;
} xrg_args;

static int xrg_parse(client *c, xrg_args *x) {
    memset(x, 0, sizeof(*x));
    for (int i = 1; i < c->argc; i++) {
        int more = c->argc - i - 1;
        const karg *a = &c->argv[i];
        if (karg_eq(a, "block") && more) {
            if (blocking_parse_timeout_ms(c, &c->argv[++i], &x->deadline) != K_OK) return 0;
            x->block = 1;
        } else if (karg_eq(a, "count") && more) {
            if (!arg_to_ll(c, &c->argv[++i], &x->count)) return 0;
            if (x->count < 0) x->count = 0;
        } else if (karg_eq(a, "streams") && more) {
            x->first_key = i + 1;
            int n = c->argc - x->first_key;
            if (n % 2) {
                reply_error(c, "ERR Unbalanced 'xreadgroup' list of streams: for each stream key "
                               "an ID or '>' must be specified.");
                return 0;
            }
            x->nkeys = n / 2;
            break;
        } else if (karg_eq(a, "group") && more >= 2) {
            x->group = &c->argv[i + 1];
            x->consumer = &c->argv[i + 2];
            i += 2;
        } else if (karg_eq(a, "noack")) {
            x->noack = 1;
        } else {
            reply_syntax_error(c);
            return 0;
        }
    }
    if (!x->first_key) {
        reply_syntax_error(c);
        return 0;
    }
    if (!x->group) {
        reply_error(c, "ERR Missing GROUP option for XREADGROUP");
        return 0;
    }
    return 1;
}

/* Resolves each stream's key, group and ID, as Valkey does before serving
 * any: 1, or 0 after replying. */
static int xrg_resolve(client *c, const xrg_args *x, xrg_stream *s) {
    for (int i = 0; i < x->nkeys; i++) {
        const karg *key = &c->argv[x->first_key + i];
        const karg *ida = &c->argv[x->first_key + x->nkeys + i];
        if (!stream_cmd_lookup(c, key, 1, &s[i].o)) return 0;
        s[i].g = s[i].o ? scg_lookup(s[i].o, x->group->ptr, x->group->len) : NULL;
        if (!s[i].g) {
            reply_errorf(c,
                         "NOGROUP No such key '%.*s' or consumer group '%.*s' in XREADGROUP with "
                         "GROUP option",
                         (int)key->len, key->ptr, (int)x->group->len, x->group->ptr);
            return 0;
        }
        if (stream_cmd_arg_is(ida, '$') || stream_cmd_arg_is(ida, '+')) {
            reply_errorf(c,
                         "ERR The %c ID is meaningless in the context of XREADGROUP: you want to "
                         "read the history of this consumer by specifying a proper ID, or use the "
                         "> ID to get new messages. The %c ID would just return an empty result "
                         "set.",
                         ida->ptr[0], ida->ptr[0]);
            return 0;
        }
        if (stream_cmd_arg_is(ida, '>')) {
            s[i].after = STREAM_ID_MAX;
        } else if (stream_cmd_parse_id(c, ida, 0, 0, &s[i].after) != K_OK) {
            return 0;
        }
        /* Valkey marks ">" with the greatest ID, and so reads that ID. */
        s[i].new_only = stream_id_cmp(s[i].after, STREAM_ID_MAX) == 0;
    }
    return 1;
}

/* Serves new entries (after the group's last ID): delivers them to cons
 * unless noack, and moves the group on. Returns the entries replied. */
static size_t xrg_serve_new(client *c, const xrg_args *x, xrg_stream *s, scg_consumer *cons) {
    stream_id start = s->g->last_id;
    reply_deferred h = reply_deferred_array(c);
    size_t n = 0;
    if (stream_id_incr(&start) == K_OK) {
        stream_iter it;
        stream_id id;
        size_t npairs;
        int64_t now = group_now();
        stream_iter_start(&it, s->o, start, STREAM_ID_MAX, 0);
        while (stream_iter_next(&it, &id, &npairs)) {
            if (stream_id_cmp(id, s->g->last_id) > 0) scg_advance(s->o, s->g, id);
            stream_cmd_reply_entry(c, &it, id, npairs);
            if (!x->noack) {
                scg_deliver(s->g, cons, id, now);
                cons->active_time = now;
            }
            if (++n == (size_t)x->count) break;
        }
        stream_iter_stop(&it);
    }
    reply_set_deferred_len(c, h, (long long)n);
    return n;
}

/* Serves the consumer's own history (its pending entries after s->after):
 * an entry deleted since comes as [id, nil]; each one served counts as a
 * new delivery. */
static void xrg_serve_history(client *c, const xrg_args *x, xrg_stream *s, scg_consumer *cons) {
    stream_id start = s->after;
    reply_deferred h = reply_deferred_array(c);
    size_t n = 0;
    int64_t now = group_now();
    if (stream_id_incr(&start) == K_OK) {
        idmap_iter it;
        for (idmap_seek_ge(&it, &cons->pel, scg_key(start));
             idmap_iter_valid(&it) && (!x->count || n < (size_t)x->count); idmap_iter_next(&it)) {
            stream_id id = scg_id(idmap_iter_key(&it));
            scg_nack *nack = idmap_iter_val(&it);
            if (reply_entry_at(c, s->o, id)) {
                nack->delivery_time = now;
                nack->delivery_count++;
            } else {
                reply_array(c, 2);
                stream_cmd_reply_id(c, id);
                reply_null_array(c);
            }
            n++;
        }
    }
    reply_set_deferred_len(c, h, (long long)n);
}

/* 1 when stream s has something to serve now. */
static int xrg_ready(const xrg_stream *s) {
    if (!s->new_only) return 1;
    return stream_len(s->o) && stream_id_cmp(stream_last_live_id(s->o), s->g->last_id) > 0;
}

static void cmd_xreadgroup(client *c) {
    xrg_args x;
    if (!xrg_parse(c, &x)) return;
    xrg_stream fixed[8];
    xrg_stream *s = x.nkeys <= 8 ? fixed : km_alloc((size_t)x.nkeys * sizeof(*s));
    if (!xrg_resolve(c, &x, s)) goto done;

    reply_deferred top = REPLY_DEFERRED_NONE;
    long long served = 0;
    for (int i = 0; i < x.nkeys; i++) {
        const karg *key = &c->argv[x.first_key + i];
        long long changes = 0;
        scg_consumer *cons = consumer_get(c, key, s[i].g, x.consumer, &changes);
        if (xrg_ready(&s[i])) {
            if (served++ == 0) top = c->resp >= 3 ? reply_deferred_map(c) : reply_deferred_array(c);
            if (c->resp < 3) reply_array(c, 2);
            reply_bulk(c, key->ptr, key->len);
            if (s[i].new_only)
                xrg_serve_new(c, &x, &s[i], cons);
            else
                xrg_serve_history(c, &x, &s[i], cons);
            changes++;
        }
        group_changed(c, key, changes);
    }
    if (served) {
        reply_set_deferred_len(c, top, served);
    } else if (x.block) {
        int *keypos = km_alloc((size_t)x.nkeys * sizeof(int));
        for (int i = 0; i < x.nkeys; i++)
            keypos[i] = x.first_key + i;
        /* Woken by a deletion too: the rerun answers NOGROUP. */
        blocking_wait_flags(c, keypos, x.nkeys, x.deadline, BLOCKING_NULL_ARRAY,
                            BLOCKING_WAKE_ON_DELETE);
        km_free(keypos);
    } else {
        reply_null_array(c);
    }
done:
    if (s != fixed) km_free(s);
}

/* ---- XACK ---- */

static void cmd_xack(client *c) {
    kobj *o;
    if (!stream_cmd_lookup(c, &c->argv[1], 1, &o)) return;
    scg_group *g = o ? scg_lookup(o, c->argv[2].ptr, c->argv[2].len) : NULL;
    if (!g) {
        reply_int(c, 0);
        return;
    }
    /* All or nothing: every ID is parsed before the first is acknowledged. */
    int n = c->argc - 3;
    stream_id fixed[16];
    stream_id *ids = n <= 16 ? fixed : km_alloc((size_t)n * sizeof(*ids));
    for (int j = 0; j < n; j++) {
        if (stream_cmd_parse_id(c, &c->argv[3 + j], 0, 0, &ids[j]) != K_OK) goto done;
    }
    long long acked = 0;
    for (int j = 0; j < n; j++)
        acked += scg_pel_remove(g, ids[j]);
    reply_int(c, acked);
    group_changed(c, &c->argv[1], acked);
done:
    if (ids != fixed) km_free(ids);
}

/* ---- XPENDING ---- */

static void xpending_summary(client *c, scg_group *g) {
    reply_array(c, 4);
    reply_int(c, (long long)idmap_count(&g->pel));
    if (!idmap_count(&g->pel)) {
        reply_null(c);
        reply_null(c);
        reply_null_array(c);
        return;
    }
    idmap_iter it;
    idmap_seek_first(&it, &g->pel);
    stream_cmd_reply_id(c, scg_id(idmap_iter_key(&it)));
    idmap_seek_last(&it, &g->pel);
    stream_cmd_reply_id(c, scg_id(idmap_iter_key(&it)));
    size_t with = 0;
    for (size_t i = 0; i < scg_consumer_count(g); i++)
        with += idmap_count(&scg_consumer_at(g, i)->pel) != 0;
    reply_array(c, (long long)with);
    for (size_t i = 0; i < scg_consumer_count(g); i++) {
        const scg_consumer *cons = scg_consumer_at(g, i);
        if (!idmap_count(&cons->pel)) continue;
        reply_array(c, 2);
        reply_bulk(c, cons->name, cons->len);
        reply_bulk_ll(c, (long long)idmap_count(&cons->pel));
    }
}

static void cmd_xpending(client *c) {
    if (c->argc != 3 && (c->argc < 6 || c->argc > 9)) {
        reply_syntax_error(c);
        return;
    }
    long long count = 0, minidle = 0;
    stream_id start = STREAM_ID_MIN, end = STREAM_ID_MAX;
    const karg *consumer = NULL;
    if (c->argc >= 6) {
        int at = 3;
        if (karg_eq(&c->argv[3], "idle")) {
            if (!arg_to_ll(c, &c->argv[4], &minidle)) return;
            if (c->argc < 8) {
                reply_syntax_error(c);
                return;
            }
            at += 2;
        }
        if (!arg_to_ll(c, &c->argv[at + 2], &count)) return;
        if (count < 0) count = 0;
        if (stream_cmd_parse_range(c, &c->argv[at], 0, &start) != K_OK) return;
        if (stream_cmd_parse_range(c, &c->argv[at + 1], 1, &end) != K_OK) return;
        if (at + 3 < c->argc) consumer = &c->argv[at + 3];
    }
    kobj *o;
    scg_group *g;
    if (!lookup_group(c, &c->argv[1], &c->argv[2], &o, &g)) return;
    if (c->argc == 3) {
        xpending_summary(c, g);
        return;
    }
    const idmap *pel = &g->pel;
    if (consumer) {
        scg_consumer *cons = scg_consumer_lookup(g, consumer->ptr, consumer->len);
        if (!cons) {
            reply_array(c, 0);
            return;
        }
        pel = &cons->pel;
    }
    int64_t now = group_now();
    reply_deferred h = reply_deferred_array(c);
    long long n = 0;
    idmap_iter it;
    for (idmap_seek_ge(&it, pel, scg_key(start));
         count && idmap_iter_valid(&it) && idmap_key_cmp(idmap_iter_key(&it), scg_key(end)) <= 0;
         idmap_iter_next(&it)) {
        const scg_nack *nack = idmap_iter_val(&it);
        int64_t idle = now - nack->delivery_time;
        if (minidle && idle < minidle) continue;
        n++;
        count--;
        reply_array(c, 4);
        stream_cmd_reply_id(c, scg_id(idmap_iter_key(&it)));
        reply_bulk(c, nack->consumer->name, nack->consumer->len);
        reply_int(c, idle < 0 ? 0 : idle);
        reply_int(c, (long long)nack->delivery_count);
    }
    reply_set_deferred_len(c, h, n);
}

/* ---- XCLAIM ---- */

typedef struct xclaim_opts {
    int64_t delivery_time; /* -1: now */
    long long retrycount;  /* -1: not given */
    int force, justid;
    stream_id lastid;
} xclaim_opts;

/* The options after the IDs (from argument j on): 1, or 0 after replying. */
static int xclaim_parse_opts(client *c, int j, int64_t now, xclaim_opts *x) {
    x->delivery_time = -1;
    x->retrycount = -1;
    x->force = x->justid = 0;
    x->lastid = STREAM_ID_MIN;
    for (; j < c->argc; j++) {
        int more = c->argc - 1 - j;
        const karg *a = &c->argv[j];
        long long v;
        if (karg_eq(a, "force")) {
            x->force = 1;
        } else if (karg_eq(a, "justid")) {
            x->justid = 1;
        } else if (karg_eq(a, "idle") && more) {
            if (!arg_to_range(c, &c->argv[++j], LLONG_MIN, LLONG_MAX,
                              "ERR Invalid IDLE option argument for XCLAIM", &v))
                return 0;
            /* Valkey clamps a time before 0 or after now to now: the same,
             * without overflowing. */
            x->delivery_time = v < 0 || v > now ? now : now - v;
        } else if (karg_eq(a, "time") && more) {
            if (!arg_to_range(c, &c->argv[++j], LLONG_MIN, LLONG_MAX,
                              "ERR Invalid TIME option argument for XCLAIM", &v))
                return 0;
            x->delivery_time = v;
        } else if (karg_eq(a, "retrycount") && more) {
            if (!arg_to_range(c, &c->argv[++j], LLONG_MIN, LLONG_MAX,
                              "ERR Invalid RETRYCOUNT option argument for XCLAIM", &v))
                return 0;
            x->retrycount = v;
        } else if (karg_eq(a, "lastid") && more) {
            if (stream_cmd_parse_id(c, &c->argv[++j], 0, 0, &x->lastid) != K_OK) return 0;
        } else {
            reply_errorf(c, "ERR Unrecognized XCLAIM option '%.*s'", (int)a->len, a->ptr);
            return 0;
        }
    }
    /* A bogus time is taken as now rather than refused: clients compute
     * it from their own clocks. */
    if (x->delivery_time < 0 || x->delivery_time > now) x->delivery_time = now;
    return 1;
}

/* A pending entry claimed by cons: the bookkeeping XCLAIM and XAUTOCLAIM
 * share (and the change Valkey would propagate as XCLAIM). */
static void group_claimed(scg_group *g, scg_nack *nack, stream_id id, scg_consumer *cons,
                          int64_t when, long long retrycount, int justid) {
    scg_pel_transfer(nack, id, cons);
    nack->delivery_time = when;
    if (retrycount >= 0)
        nack->delivery_count = (uint64_t)retrycount;
    else if (!justid)
        nack->delivery_count++;
    cons->active_time = group_now();
}

static void cmd_xclaim(client *c) {
    kobj *o;
    scg_group *g;
    if (!lookup_group(c, &c->argv[1], &c->argv[2], &o, &g)) return;
    long long minidle;
    if (!arg_to_range(c, &c->argv[4], LLONG_MIN, LLONG_MAX,
                      "ERR Invalid min-idle-time argument for XCLAIM", &minidle))
        return;
    if (minidle < 0) minidle = 0;
    /* The IDs run until the first argument that is not one: the options. */
    int n = c->argc - 5, nids = 0;
    stream_id fixed[16];
    stream_id *ids = n <= 16 ? fixed : km_alloc((size_t)n * sizeof(*ids));
    while (nids < n) {
        const karg *a = &c->argv[5 + nids];
        if (stream_id_parse(a->ptr, a->len, 0, 0, &ids[nids], NULL) != K_OK) break;
        nids++;
    }
    int64_t now = group_now();
    xclaim_opts x;
    if (!xclaim_parse_opts(c, 5 + nids, now, &x)) goto done;

    const karg *key = &c->argv[1];
    long long changes = 0;
    if (stream_id_cmp(x.lastid, g->last_id) > 0) {
        g->last_id = x.lastid;
        changes++;
    }
    scg_consumer *cons = consumer_get(c, key, g, &c->argv[3], &changes);
    reply_deferred h = reply_deferred_array(c);
    long long replied = 0;
    for (int j = 0; j < nids; j++) {
        stream_id id = ids[j];
        scg_nack *nack = scg_pel_find(g, id);
        if (!stream_has_entry(o, id)) {
            /* Deleted from the stream: it leaves the PEL too (Valkey 7). */
            if (nack) changes += scg_pel_remove(g, id);
            continue;
        }
        int fresh = 0;
        if (x.force && !nack) {
            nack = scg_pel_add(g, cons, id, now);
            fresh = 1;
        }
        if (!nack) continue;
        /* An entry FORCE just made has no idle time to check. */
        if (!fresh && minidle && now - nack->delivery_time < minidle) continue;
        group_claimed(g, nack, id, cons, x.delivery_time, x.retrycount, x.justid);
        if (x.justid)
            stream_cmd_reply_id(c, id);
        else
            reply_entry_at(c, o, id);
        replied++;
        changes++;
    }
    reply_set_deferred_len(c, h, replied);
    group_changed(c, key, changes);
done:
    if (ids != fixed) km_free(ids);
}

/* ---- XAUTOCLAIM ---- */

/* Valkey bounds COUNT so that its buffers (count IDs, 10 attempts each)
 * cannot overflow; the same bound keeps the error the same. */
#define XAUTOCLAIM_ATTEMPTS 10
#define XAUTOCLAIM_MAX_COUNT (LONG_MAX / 16)

static void cmd_xautoclaim(client *c) {
    long long minidle, count = 100;
    if (!arg_to_range(c, &c->argv[4], LLONG_MIN, LLONG_MAX,
                      "ERR Invalid min-idle-time argument for XAUTOCLAIM", &minidle))
        return;
    if (minidle < 0) minidle = 0;
    stream_id start;
    if (stream_cmd_parse_range(c, &c->argv[5], 0, &start) != K_OK) return;
    int justid = 0;
    for (int j = 6; j < c->argc; j++) {
        if (karg_eq(&c->argv[j], "count") && j + 1 < c->argc) {
            if (!arg_to_range(c, &c->argv[++j], 1, XAUTOCLAIM_MAX_COUNT, "ERR COUNT must be > 0",
                              &count))
                return;
        } else if (karg_eq(&c->argv[j], "justid")) {
            justid = 1;
        } else {
            reply_syntax_error(c);
            return;
        }
    }
    kobj *o;
    scg_group *g;
    if (!lookup_group(c, &c->argv[1], &c->argv[2], &o, &g)) return;

    const karg *key = &c->argv[1];
    long long changes = 0;
    scg_consumer *cons = consumer_get(c, key, g, &c->argv[3], &changes);
    int64_t now = group_now();
    vec claimed = {0}, deleted = {0};
    long long attempts = count * XAUTOCLAIM_ATTEMPTS;
    idmap_iter it;
    idmap_seek_ge(&it, &g->pel, scg_key(start));
    while (attempts-- && count && idmap_iter_valid(&it)) {
        stream_id id = scg_id(idmap_iter_key(&it));
        scg_nack *nack = idmap_iter_val(&it);
        if (!stream_has_entry(o, id)) {
            scg_pel_remove(g, id);
            *(stream_id *)vec_push(&deleted, sizeof(stream_id)) = id;
            changes++;
            count--;
            idmap_seek_ge(&it, &g->pel, scg_key(id));
            continue;
        }
        if (minidle && now - nack->delivery_time < minidle) {
            idmap_iter_next(&it);
            continue;
        }
        group_claimed(g, nack, id, cons, now, -1, justid);
        *(stream_id *)vec_push(&claimed, sizeof(stream_id)) = id;
        changes++;
        count--;
        idmap_iter_next(&it);
    }
    reply_array(c, 3);
    stream_cmd_reply_id(c, idmap_iter_valid(&it) ? scg_id(idmap_iter_key(&it)) : STREAM_ID_MIN);
    const stream_id *ids = claimed.items;
    reply_array(c, (long long)claimed.count);
    for (size_t i = 0; i < claimed.count; i++) {
        if (justid)
            stream_cmd_reply_id(c, ids[i]);
        else
            reply_entry_at(c, o, ids[i]);
    }
    ids = deleted.items;
    reply_array(c, (long long)deleted.count);
    for (size_t i = 0; i < deleted.count; i++)
        stream_cmd_reply_id(c, ids[i]);
    vec_free(&claimed);
    vec_free(&deleted);
    group_changed(c, key, changes);
}

/* ---- XINFO ---- */

static void reply_entries_read(client *c, const scg_group *g) {
    if (g->entries_read != SCG_INVALID_ENTRIES_READ)
        reply_int(c, g->entries_read);
    else
        reply_null(c);
}

static void reply_lag(client *c, const kobj *o, const scg_group *g) {
    int64_t lag;
    if (scg_lag(o, g, &lag))
        reply_int(c, lag);
    else
        reply_null(c);
}

/* A stream's first or last entry (XINFO STREAM), or null. */
static void reply_end_entry(client *c, const kobj *o, int last) {
    stream_iter it;
    stream_id id;
    size_t npairs;
    stream_iter_start(&it, o, STREAM_ID_MIN, STREAM_ID_MAX, last);
    if (stream_iter_next(&it, &id, &npairs))
        stream_cmd_reply_entry(c, &it, id, npairs);
    else
        reply_null(c);
    stream_iter_stop(&it);
}

/* One pending list of XINFO STREAM FULL, at most count entries (0: all):
 * [id, consumer, delivery time, count], without the consumer for a
 * consumer's own list. */
static void reply_full_pel(client *c, const idmap *pel, long long count, int with_consumer) {
    long long n = (long long)idmap_count(pel);
    if (count && n > count) n = count;
    reply_array(c, n);
    idmap_iter it;
    idmap_seek_first(&it, pel);
    for (long long i = 0; i < n; i++, idmap_iter_next(&it)) {
        const scg_nack *nack = idmap_iter_val(&it);
        reply_array(c, with_consumer ? 4 : 3);
        stream_cmd_reply_id(c, scg_id(idmap_iter_key(&it)));
        if (with_consumer) reply_bulk(c, nack->consumer->name, nack->consumer->len);
        reply_int(c, nack->delivery_time);
        reply_int(c, (long long)nack->delivery_count);
    }
}

static void reply_full_group(client *c, const kobj *o, scg_group *g, long long count) {
    reply_map(c, 7);
    reply_bulk_cstr(c, "name");
    reply_bulk(c, g->name, g->len);
    reply_bulk_cstr(c, "last-delivered-id");
    stream_cmd_reply_id(c, g->last_id);
    reply_bulk_cstr(c, "entries-read");
    reply_entries_read(c, g);
    reply_bulk_cstr(c, "lag");
    reply_lag(c, o, g);
    reply_bulk_cstr(c, "pel-count");
    reply_int(c, (long long)idmap_count(&g->pel));
    reply_bulk_cstr(c, "pending");
    reply_full_pel(c, &g->pel, count, 1);
    reply_bulk_cstr(c, "consumers");
    reply_array(c, (long long)scg_consumer_count(g));
    for (size_t i = 0; i < scg_consumer_count(g); i++) {
        const scg_consumer *cons = scg_consumer_at(g, i);
        reply_map(c, 5);
        reply_bulk_cstr(c, "name");
        reply_bulk(c, cons->name, cons->len);
        reply_bulk_cstr(c, "seen-time");
        reply_int(c, cons->seen_time);
        reply_bulk_cstr(c, "active-time");
        reply_int(c, cons->active_time);
        reply_bulk_cstr(c, "pel-count");
        reply_int(c, (long long)idmap_count(&cons->pel));
        reply_bulk_cstr(c, "pending");
        reply_full_pel(c, &cons->pel, count, 0);
    }
}

/* Every XINFO subcommand but HELP needs the key: 1 and *o, or 0 after replying. */
static int xinfo_lookup(client *c, kobj **o) {
    if (!stream_cmd_lookup(c, &c->argv[2], 1, o)) return 0;
    if (*o) return 1;
    reply_error(c, "ERR no such key");
    return 0;
}

static void xinfo_stream(client *c) {
    kobj *o;
    if (!xinfo_lookup(c, &o)) return;
    int full = 0;
    long long count = 10;
    int optc = c->argc - 3;
    if (optc) {
        if ((optc != 1 && optc != 3) || !karg_eq(&c->argv[3], "full") ||
            (optc == 3 && !karg_eq(&c->argv[4], "count"))) {
            reply_sub_syntax(c, "XINFO");
            return;
        }
        if (optc == 3) {
            if (!arg_to_ll(c, &c->argv[5], &count)) return;
            if (count < 0) count = 10;
        }
        full = 1;
    }
    reply_map(c, full ? 9 : 10);
    reply_bulk_cstr(c, "length");
    reply_int(c, (long long)stream_len(o));
    /* Keel keeps no radix tree: its storage nodes stand for both. */
    reply_bulk_cstr(c, "radix-tree-keys");
    reply_int(c, (long long)stream_node_count(o));
    reply_bulk_cstr(c, "radix-tree-nodes");
    reply_int(c, (long long)stream_node_count(o));
    reply_bulk_cstr(c, "last-generated-id");
    stream_cmd_reply_id(c, stream_last_id(o));
    reply_bulk_cstr(c, "max-deleted-entry-id");
    stream_cmd_reply_id(c, stream_max_deleted_id(o));
    reply_bulk_cstr(c, "entries-added");
    reply_int(c, (long long)stream_entries_added(o));
    reply_bulk_cstr(c, "recorded-first-entry-id");
    stream_cmd_reply_id(c, stream_first_id(o));
    size_t ngroups = scg_group_count(o);
    if (!full) {
        reply_bulk_cstr(c, "groups");
        reply_int(c, (long long)ngroups);
        reply_bulk_cstr(c, "first-entry");
        reply_end_entry(c, o, 0);
        reply_bulk_cstr(c, "last-entry");
        reply_end_entry(c, o, 1);
        return;
    }
    reply_bulk_cstr(c, "entries");
    reply_deferred h = reply_deferred_array(c);
    long long n = 0;
    stream_iter it;
    stream_id id;
    size_t npairs;
    stream_iter_start(&it, o, STREAM_ID_MIN, STREAM_ID_MAX, 0);
    while ((!count || n < count) && stream_iter_next(&it, &id, &npairs)) {
        stream_cmd_reply_entry(c, &it, id, npairs);
        n++;
    }
    stream_iter_stop(&it);
    reply_set_deferred_len(c, h, n);
    reply_bulk_cstr(c, "groups");
    reply_array(c, (long long)ngroups);
    for (size_t i = 0; i < ngroups; i++)
        reply_full_group(c, o, scg_group_at(o, i), count);
}

static void xinfo_groups(client *c) {
    kobj *o;
    if (!xinfo_lookup(c, &o)) return;
    size_t n = scg_group_count(o);
    reply_array(c, (long long)n);
    for (size_t i = 0; i < n; i++) {
        const scg_group *g = scg_group_at(o, i);
        reply_map(c, 6);
        reply_bulk_cstr(c, "name");
        reply_bulk(c, g->name, g->len);
        reply_bulk_cstr(c, "consumers");
        reply_int(c, (long long)scg_consumer_count(g));
        reply_bulk_cstr(c, "pending");
        reply_int(c, (long long)idmap_count(&g->pel));
        reply_bulk_cstr(c, "last-delivered-id");
        stream_cmd_reply_id(c, g->last_id);
        reply_bulk_cstr(c, "entries-read");
        reply_entries_read(c, g);
        reply_bulk_cstr(c, "lag");
        reply_lag(c, o, g);
    }
}

static void xinfo_consumers(client *c) {
    kobj *o;
    if (!xinfo_lookup(c, &o)) return;
    scg_group *g = scg_lookup(o, c->argv[3].ptr, c->argv[3].len);
    if (!g) {
        reply_nogroup_for_key(c, &c->argv[3], &c->argv[2]);
        return;
    }
    int64_t now = group_now();
    reply_array(c, (long long)scg_consumer_count(g));
    for (size_t i = 0; i < scg_consumer_count(g); i++) {
        const scg_consumer *cons = scg_consumer_at(g, i);
        int64_t idle = now - cons->seen_time;
        int64_t inactive =
            cons->active_time != SCG_NEVER_ACTIVE ? now - cons->active_time : SCG_NEVER_ACTIVE;
        reply_map(c, 4);
        reply_bulk_cstr(c, "name");
        reply_bulk(c, cons->name, cons->len);
        reply_bulk_cstr(c, "pending");
        reply_int(c, (long long)idmap_count(&cons->pel));
        reply_bulk_cstr(c, "idle");
        reply_int(c, idle < 0 ? 0 : idle);
        reply_bulk_cstr(c, "inactive");
        reply_int(c, inactive);
    }
}

static void xinfo_help(client *c) {
    static const char *const lines[] = {
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
    };
    reply_help(c, "XINFO", lines, K_ARRAY_LEN(lines));
}

/* ---- the table (arity, flags, key positions, since: Valkey's) ---- */

/* clang-format off */
#define XG_CMD(n, p, a, f, fk, lk, st, s, v)                                                       \
    {.name = n, .proc = p, .arity = a, .flags = f, .first_key = fk, .last_key = lk,                \
     .key_step = st, .group = "stream", .summary = s, .since = v}
#define XG_SUB(n, p, a, f, fk, s, v)                                                               \
    {.name = n, .proc = p, .arity = a, .flags = f, .first_key = fk, .last_key = fk,                \
     .key_step = fk ? 1 : 0, .group = "stream", .summary = s, .since = v}

#define RO CMD_READONLY
#define RW CMD_WRITE

static command xgroup_subcommands[] = {
    XG_SUB("create", xgroup_create, -5, RW | CMD_DENYOOM, 2, "Creates a consumer group.", "5.0.0"),
    XG_SUB("createconsumer", xgroup_createconsumer, 5, RW | CMD_DENYOOM, 2, "Creates a consumer in a consumer group.", "6.2.0"),
    XG_SUB("delconsumer", xgroup_delconsumer, 5, RW, 2, "Deletes a consumer from a consumer group.", "5.0.0"),
    XG_SUB("destroy", xgroup_destroy, 4, RW, 2, "Destroys a consumer group.", "5.0.0"),
    XG_SUB("help", xgroup_help, 2, CMD_LOADING | CMD_STALE, 0, "Returns helpful text about the different subcommands.", "5.0.0"),
    XG_SUB("setid", xgroup_setid, -5, RW, 2, "Sets the last-delivered ID of a consumer group.", "5.0.0"),
    {.name = NULL},
};

static command xinfo_subcommands[] = {
    XG_SUB("consumers", xinfo_consumers, 4, RO, 2, "Returns a list of the consumers in a consumer group.", "5.0.0"),
    XG_SUB("groups", xinfo_groups, 3, RO, 2, "Returns a list of the consumer groups of a stream.", "5.0.0"),
    XG_SUB("help", xinfo_help, 2, CMD_LOADING | CMD_STALE, 0, "Returns helpful text about the different subcommands.", "5.0.0"),
    XG_SUB("stream", xinfo_stream, -3, RO, 2, "Returns information about a stream.", "5.0.0"),
    {.name = NULL},
};

static command stream_group_table[] = {
    {.name = "xgroup", .arity = -2, .group = "stream", .since = "5.0.0",
     .summary = "A container for consumer groups commands.", .subcommands = xgroup_subcommands},
    {.name = "xinfo", .arity = -2, .group = "stream", .since = "5.0.0",
     .summary = "A container for stream introspection commands.", .subcommands = xinfo_subcommands},
    XG_CMD("xreadgroup", cmd_xreadgroup, -7, RW | CMD_BLOCKING, 0, 0, 0, "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.", "5.0.0"),
    XG_CMD("xack", cmd_xack, -4, RW | CMD_FAST, 1, 1, 1, "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", "5.0.0"),
    XG_CMD("xpending", cmd_xpending, -3, RO, 1, 1, 1, "Returns the information and entries from a stream consumer group's pending entries list.", "5.0.0"),
    XG_CMD("xclaim", cmd_xclaim, -6, RW | CMD_FAST, 1, 1, 1, "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.", "5.0.0"),
    XG_CMD("xautoclaim", cmd_xautoclaim, -6, RW | CMD_FAST, 1, 1, 1, "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.", "6.2.0"),
};
/* clang-format on */

const command_family commands_stream_group = {stream_group_table, K_ARRAY_LEN(stream_group_table)};
