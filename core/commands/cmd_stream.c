/* cmd_stream.c -- the stream commands without consumer groups: XADD,
 * XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XSETID and XREAD (with BLOCK), as
 * Valkey 8.0.1 answers them, and what they share with the group commands
 * (cmd_stream.h). Values are read and changed through types/stream.h.
 * A stream emptied by XDEL or XTRIM stays, as in Valkey. */
#include "commands/cmd_stream.h"

#include "commands/commands.h"
#include "common/common.h"
#include "common/kmem.h"
#include "event/event.h"
#include "session/blocking.h"
#include "session/reply.h"

#include <string.h>

/* ---- shared with the group commands ---- */

int stream_cmd_lookup(client *c, const karg *key, int count, kobj **out) {
    *out = NULL;
    db_entry *e = db_lookup(c->db, key->ptr, key->len, count);
    if (!e) return 1;
    if (db_entry_type(e) != OBJ_STREAM) {
        reply_wrongtype(c);
        return 0;
    }
    *out = db_entry_obj(e);
    return 1;
}

static void reply_invalid_id(client *c) {
    reply_error(c, "ERR Invalid stream ID specified as stream command argument");
}

int stream_cmd_parse_id(client *c, const karg *a, uint64_t missing_seq, int allow_minmax,
                        stream_id *out) {
    if (stream_id_parse(a->ptr, a->len, missing_seq, allow_minmax, out, NULL) == K_OK) return K_OK;
    reply_invalid_id(c);
    return K_ERR;
}

int stream_cmd_parse_range(client *c, const karg *a, int is_end, stream_id *out) {
    uint64_t missing = is_end ? UINT64_MAX : 0;
    if (a->len > 1 && a->ptr[0] == '(') {
        karg rest = {a->ptr + 1, a->len - 1, NULL};
        if (stream_cmd_parse_id(c, &rest, missing, 0, out) != K_OK) return K_ERR;
        int ok = is_end ? stream_id_decr(out) : stream_id_incr(out);
        if (ok != K_OK) {
            reply_error(c, is_end ? "ERR invalid end ID for the interval"
                                  : "ERR invalid start ID for the interval");
            return K_ERR;
        }
        return K_OK;
    }
    return stream_cmd_parse_id(c, a, missing, 1, out);
}

void stream_cmd_reply_id(client *c, stream_id id) {
    char buf[STREAM_ID_STR_MAX];
    reply_bulk(c, buf, stream_id_format(buf, id));
}

static void reply_pack_val(client *c, const pack_val *v) {
    if (v->s)
        reply_bulk(c, (const char *)v->s, v->len);
    else
        reply_bulk_ll(c, v->v);
}

void stream_cmd_reply_entry(client *c, stream_iter *it, stream_id id, size_t npairs) {
    reply_array(c, 2);
    stream_cmd_reply_id(c, id);
    reply_array(c, (long long)(2 * npairs));
    for (size_t i = 0; i < npairs; i++) {
        pack_val f, v;
        stream_iter_pair(it, &f, &v);
        reply_pack_val(c, &f);
        reply_pack_val(c, &v);
    }
}

/* Replies the entries start..end (rev: backwards), at most count (0: all),
 * as an array. */
static void reply_range(client *c, const kobj *o, stream_id start, stream_id end, long long count,
                        int rev) {
    reply_deferred d = reply_deferred_array(c);
    long long n = 0;
    stream_iter it;
    stream_id id;
    size_t npairs;
    stream_iter_start(&it, o, start, end, rev);
    while ((!count || n < count) && stream_iter_next(&it, &id, &npairs)) {
        stream_cmd_reply_entry(c, &it, id, npairs);
        n++;
    }
    stream_iter_stop(&it);
    reply_set_deferred_len(c, d, n);
}

/* ---- XADD and XTRIM's options ---- */

typedef struct add_trim_args {
    stream_trim_args trim;
    stream_id id;
    int id_given, seq_given;
    int nomkstream;
} add_trim_args;

/* MAXLEN/MINID [=|~] threshold at argument *i (the keyword); advances *i
 * to the threshold. */
static int parse_trim_strategy(client *c, int *i, add_trim_args *a) {
    int more = c->argc - 1 - *i;
    int minid = karg_eq(&c->argv[*i], "minid");
    if (a->trim.strategy != STREAM_TRIM_NONE) {
        reply_error(c, "ERR syntax error, MAXLEN and MINID options at the same time are not "
                       "compatible");
        return K_ERR;
    }
    a->trim.approx = 0;
    const karg *next = &c->argv[*i + 1];
    if (more >= 2 && (stream_cmd_arg_is(next, '~') || stream_cmd_arg_is(next, '='))) {
        a->trim.approx = stream_cmd_arg_is(next, '~');
        (*i)++;
    }
    const karg *v = &c->argv[*i + 1];
    if (minid) {
        if (stream_cmd_parse_id(c, v, 0, 0, &a->trim.minid) != K_OK) return K_ERR;
        a->trim.strategy = STREAM_TRIM_MINID;
    } else {
        long long maxlen;
        if (!arg_to_ll(c, v, &maxlen)) return K_ERR;
        if (maxlen < 0) {
            reply_error(c, "ERR The MAXLEN argument must be >= 0.");
            return K_ERR;
        }
        a->trim.maxlen = (uint64_t)maxlen;
        a->trim.strategy = STREAM_TRIM_MAXLEN;
    }
    (*i)++;
    return K_OK;
}

/* XADD's explicit ID: "ms-seq", "ms" (ms-0), or "ms-*" (the next free
 * sequence at ms: seq_given 0). */
static int parse_xadd_id(const karg *a, add_trim_args *out) {
    out->id_given = 1;
    out->seq_given = 1;
    if (stream_id_parse(a->ptr, a->len, 0, 0, &out->id, NULL) == K_OK) return K_OK;
    if (a->len <= 2) return K_ERR;
    size_t mslen = a->len - 2;
    if (memcmp(a->ptr + mslen, "-*", 2) != 0 || memchr(a->ptr, '-', mslen)) return K_ERR;
    out->seq_given = 0;
    return stream_id_parse(a->ptr, mslen, 0, 0, &out->id, NULL);
}

/* The options after the key, in Valkey's order and with its errors; for
 * XADD, up to and including the ID, whose position is returned (XTRIM:
 * argc). -1 after replying. */
static int parse_add_trim(client *c, int xadd, add_trim_args *a) {
    memset(a, 0, sizeof(*a));
    int limit_given = 0;
    long long limit = 0;
    int i = 2;
    for (; i < c->argc; i++) {
        const karg *opt = &c->argv[i];
        int more = c->argc - 1 - i;
        if (xadd && stream_cmd_arg_is(opt, '*')) {
            break;
        } else if ((karg_eq(opt, "maxlen") || karg_eq(opt, "minid")) && more) {
            if (parse_trim_strategy(c, &i, a) != K_OK) return -1;
        } else if (karg_eq(opt, "limit") && more) {
            if (!arg_to_ll(c, &c->argv[i + 1], &limit)) return -1;
            if (limit < 0) {
                reply_error(c, "ERR The LIMIT argument must be >= 0.");
                return -1;
            }
            limit_given = 1;
            i++;
        } else if (xadd && karg_eq(opt, "nomkstream")) {
            a->nomkstream = 1;
        } else if (xadd) {
            if (parse_xadd_id(opt, a) != K_OK) {
                reply_invalid_id(c);
                return -1;
            }
            break;
        } else {
            reply_syntax_error(c);
            return -1;
        }
    }
    if (limit && a->trim.strategy == STREAM_TRIM_NONE) {
        reply_error(c, "ERR syntax error, LIMIT cannot be used without specifying a trimming "
                       "strategy");
        return -1;
    }
    if (!xadd && a->trim.strategy == STREAM_TRIM_NONE) {
        reply_error(c, "ERR syntax error, XTRIM must be called with a trimming strategy");
        return -1;
    }
    if (limit_given && !a->trim.approx) {
        reply_error(c, "ERR syntax error, LIMIT cannot be used without the special ~ option");
        return -1;
    }
    a->trim.limit = limit_given ? (uint64_t)limit : a->trim.approx ? stream_approx_limit() : 0;
    return i;
}

/* The stream at key for a write: creates it unless nomk (then replies a
 * null). NULL after replying. *created tells a new one (not stored yet). */
static kobj *lookup_or_create(client *c, const karg *key, int nomk, int *created) {
    kobj *o;
    *created = 0;
    if (!stream_cmd_lookup(c, key, 0, &o)) return NULL;
    if (o) return o;
    if (nomk) {
        reply_null(c);
        return NULL;
    }
    *created = 1;
    return stream_create();
}

/* Fields and values from argv[from..argc) as the storage takes them. */
#define ADD_STATIC_ELEMS 16

static void cmd_xadd(client *c) {
    add_trim_args a;
    int idpos = parse_add_trim(c, 1, &a);
    if (idpos < 0) return;
    int from = idpos + 1, nelems = c->argc - from;
    if (nelems < 2 || nelems % 2) {
        reply_wrong_arity(c);
        return;
    }
    if (a.id_given && a.seq_given && a.id.ms == 0 && a.id.seq == 0) {
        reply_error(c, "ERR The ID specified in XADD must be greater than 0-0");
        return;
    }
    const karg *key = &c->argv[1];
    int created;
    kobj *o = lookup_or_create(c, key, a.nomkstream, &created);
    if (!o) return;
    if (stream_id_cmp(stream_last_id(o), STREAM_ID_MAX) == 0) {
        reply_error(c, "ERR The stream has exhausted the last possible ID, unable to add more "
                       "items");
        return;
    }
    stream_str small[ADD_STATIC_ELEMS];
    stream_str *elems =
        nelems <= ADD_STATIC_ELEMS ? small : km_alloc(sizeof(*elems) * (size_t)nelems);
    for (int i = 0; i < nelems; i++)
        elems[i] = (stream_str){c->argv[from + i].ptr, c->argv[from + i].len};
    stream_add add = {.elems = elems,
                      .npairs = (size_t)nelems / 2,
                      .id = a.id,
                      .id_given = a.id_given,
                      .seq_given = a.seq_given,
                      .now_ms = (uint64_t)event_cached_ms()};
    stream_id id;
    int too_large;
    int rc = stream_append(o, &add, &id, &too_large);
    if (elems != small) km_free(elems);
    if (rc != K_OK) {
        if (created) obj_decref(o);
        reply_error(c, too_large ? "ERR Elements are too large to be stored"
                                 : "ERR The ID specified in XADD is equal or smaller than the "
                                   "target stream top item");
        return;
    }
    stream_cmd_reply_id(c, id);
    if (created) db_add(c->db, key->ptr, key->len, o, 1);
    notify_key(c, NOTIFY_STREAM, "xadd", key);
    if (a.trim.strategy != STREAM_TRIM_NONE && stream_trim(o, &a.trim))
        notify_key(c, NOTIFY_STREAM, "xtrim", key);
    if (!created) db_signal_modified(c->db, key->ptr, key->len, 1);
}

static void cmd_xtrim(client *c) {
    add_trim_args a;
    if (parse_add_trim(c, 0, &a) < 0) return;
    kobj *o;
    if (!stream_cmd_lookup(c, &c->argv[1], 0, &o)) return;
    if (!o) {
        reply_int(c, 0);
        return;
    }
    uint64_t deleted = stream_trim(o, &a.trim);
    if (deleted) {
        notify_key(c, NOTIFY_STREAM, "xtrim", &c->argv[1]);
        db_signal_modified(c->db, c->argv[1].ptr, c->argv[1].len, (long long)deleted);
    }
    reply_int(c, (long long)deleted);
}

/* ---- reads ---- */

static void xrange_generic(client *c, int rev) {
    const karg *start_arg = &c->argv[rev ? 3 : 2], *end_arg = &c->argv[rev ? 2 : 3];
    stream_id start, end;
    if (stream_cmd_parse_range(c, start_arg, 0, &start) != K_OK) return;
    if (stream_cmd_parse_range(c, end_arg, 1, &end) != K_OK) return;
    long long count = -1;
    for (int j = 4; j < c->argc; j++) {
        if (karg_eq(&c->argv[j], "count") && j + 1 < c->argc) {
            if (!arg_to_ll(c, &c->argv[j + 1], &count)) return;
            if (count < 0) count = 0;
            j++;
        } else {
            reply_syntax_error(c);
            return;
        }
    }
    kobj *o;
    if (!stream_cmd_lookup(c, &c->argv[1], 1, &o)) return;
    if (!o) {
        reply_array(c, 0);
        return;
    }
    if (count == 0) {
        reply_null_array(c);
        return;
    }
    reply_range(c, o, start, end, count < 0 ? 0 : count, rev);
}

static void cmd_xrange(client *c) {
    xrange_generic(c, 0);
}

static void cmd_xrevrange(client *c) {
    xrange_generic(c, 1);
}

static void cmd_xlen(client *c) {
    kobj *o;
    if (!stream_cmd_lookup(c, &c->argv[1], 1, &o)) return;
    reply_int(c, o ? (long long)stream_len(o) : 0);
}

/* ---- XDEL, XSETID ---- */

static void cmd_xdel(client *c) {
    kobj *o;
    if (!stream_cmd_lookup(c, &c->argv[1], 0, &o)) return;
    if (!o) {
        reply_int(c, 0);
        return;
    }
    int n = c->argc - 2;
    stream_id *ids = km_alloc(sizeof(*ids) * (size_t)n);
    for (int j = 0; j < n; j++) {
        const karg *a = &c->argv[2 + j];
        if (stream_cmd_parse_id(c, a, 0, 0, &ids[j]) != K_OK) {
            km_free(ids);
            return;
        }
    }
    long long deleted = 0;
    for (int j = 0; j < n; j++)
        deleted += stream_delete(o, ids[j]);
    km_free(ids);
    if (deleted) {
        db_signal_modified(c->db, c->argv[1].ptr, c->argv[1].len, deleted);
        notify_key(c, NOTIFY_STREAM, "xdel", &c->argv[1]);
    }
    reply_int(c, deleted);
}

static void cmd_xsetid(client *c) {
    stream_id id, max_del = STREAM_ID_MIN;
    long long entries_added = -1;
    const karg *a = &c->argv[2];
    if (stream_cmd_parse_id(c, a, 0, 0, &id) != K_OK) return;
    for (int i = 3; i < c->argc; i += 2) {
        const karg *opt = &c->argv[i];
        int more = c->argc - 1 - i;
        if (karg_eq(opt, "entriesadded") && more) {
            if (!arg_to_ll(c, &c->argv[i + 1], &entries_added)) return;
            if (entries_added < 0) {
                reply_error(c, "ERR entries_added must be positive");
                return;
            }
        } else if (karg_eq(opt, "maxdeletedid") && more) {
            const karg *v = &c->argv[i + 1];
            if (stream_cmd_parse_id(c, v, 0, 0, &max_del) != K_OK) return;
            if (stream_id_cmp(id, max_del) < 0) {
                reply_error(c, "ERR The ID specified in XSETID is smaller than the provided "
                               "max_deleted_entry_id");
                return;
            }
        } else {
            reply_syntax_error(c);
            return;
        }
    }
    kobj *o;
    if (!stream_cmd_lookup(c, &c->argv[1], 0, &o)) return;
    if (!o) {
        reply_error(c, "ERR no such key");
        return;
    }
    if (stream_id_cmp(id, stream_max_deleted_id(o)) < 0) {
        reply_error(c, "ERR The ID specified in XSETID is smaller than current "
                       "max_deleted_entry_id");
        return;
    }
    if (stream_len(o) > 0) {
        if (stream_id_cmp(id, stream_last_live_id(o)) < 0) {
            reply_error(c, "ERR The ID specified in XSETID is smaller than the target stream top "
                           "item");
            return;
        }
        if (entries_added != -1 && stream_len(o) > (uint64_t)entries_added) {
            reply_error(c, "ERR The entries_added specified in XSETID is smaller than the target "
                           "stream length");
            return;
        }
    }
    uint64_t ea = (uint64_t)entries_added;
    int has_max = stream_id_cmp(max_del, STREAM_ID_MIN) != 0;
    stream_set_meta(o, id, entries_added != -1 ? &ea : NULL, has_max ? &max_del : NULL);
    reply_ok(c);
    /* Counted but no change of the key, as Valkey's XSETID: no entry came
     * or went, so WATCH, tracking and blocked readers are not told. */
    db_count_changes(c->db, c->argv[1].ptr, c->argv[1].len, 1);
    notify_key(c, NOTIFY_STREAM, "xsetid", &c->argv[1]);
}

/* ---- XREAD ---- */

typedef struct xread_args {
    int64_t deadline; /* absolute unix ms; 0: forever */
    int block;
    long long count;
    int streams; /* index of the first key */
    int nstreams;
} xread_args;

static int xread_parse(client *c, xread_args *x) {
    memset(x, 0, sizeof(*x));
    for (int i = 1; i < c->argc; i++) {
        const karg *o = &c->argv[i];
        int more = c->argc - i - 1;
        if (karg_eq(o, "block") && more) {
            i++;
            if (blocking_parse_timeout_ms(c, &c->argv[i], &x->deadline) != K_OK) return K_ERR;
            x->block = 1;
        } else if (karg_eq(o, "count") && more) {
            i++;
            if (!arg_to_ll(c, &c->argv[i], &x->count)) return K_ERR;
            if (x->count < 0) x->count = 0;
        } else if (karg_eq(o, "streams") && more) {
            x->streams = i + 1;
            int n = c->argc - x->streams;
            if (n % 2) {
                reply_error(c, "ERR Unbalanced 'xread' list of streams: for each stream key an "
                               "ID or '$' must be specified.");
                return K_ERR;
            }
            x->nstreams = n / 2;
            break;
        } else if (karg_eq(o, "group") && more >= 2) {
            reply_error(c, "ERR The GROUP option is only supported by XREADGROUP. You called "
                           "XREAD instead.");
            return K_ERR;
        } else if (karg_eq(o, "noack")) {
            reply_error(c, "ERR The NOACK option is only supported by XREADGROUP. You called "
                           "XREAD instead.");
            return K_ERR;
        } else {
            reply_syntax_error(c);
            return K_ERR;
        }
    }
    if (!x->streams) {
        reply_syntax_error(c);
        return K_ERR;
    }
    return K_OK;
}

/* The ID after which stream i is read: $ is its last ID, + the one before
 * its last entry. K_ERR after replying. */
static int xread_id(client *c, const xread_args *x, int i, stream_id *out) {
    const karg *key = &c->argv[x->streams + i], *a = &c->argv[x->streams + x->nstreams + i];
    kobj *o;
    /* A read lookup, counted, as the serving loop's is: Valkey counts
     * XREAD's keys twice. */
    if (!stream_cmd_lookup(c, key, 1, &o)) return K_ERR;
    if (stream_cmd_arg_is(a, '$') || stream_cmd_arg_is(a, '+')) {
        *out = o ? stream_last_id(o) : STREAM_ID_MIN;
        if (o && stream_cmd_arg_is(a, '+') && stream_id_decr(out) != K_OK) {
            reply_error(c, "ERR the stream last element ID is 0-0");
            return K_ERR;
        }
        return K_OK;
    }
    if (stream_cmd_arg_is(a, '>')) {
        reply_error(c, "ERR The > ID can be specified only when calling XREADGROUP using the "
                       "GROUP <group> <consumer> option.");
        return K_ERR;
    }
    return stream_cmd_parse_id(c, a, 0, 0, out);
}

/* After `$` resolved to ids[i], a rerun must read after that same ID:
 * the waiting copy of the arguments gets it. */
static void xread_pin_ids(client *c, const xread_args *x, const stream_id *ids) {
    for (int i = 0; i < x->nstreams; i++) {
        int pos = x->streams + x->nstreams + i;
        if (!stream_cmd_arg_is(&c->argv[pos], '$')) continue;
        char buf[STREAM_ID_STR_MAX];
        blocking_rewrite_arg(c, pos, buf, stream_id_format(buf, ids[i]));
    }
}

static void xread_block(client *c, const xread_args *x, const stream_id *ids) {
    int *keypos = km_alloc(sizeof(int) * (size_t)x->nstreams);
    for (int i = 0; i < x->nstreams; i++)
        keypos[i] = x->streams + i;
    blocking_wait(c, keypos, x->nstreams, x->deadline, BLOCKING_NULL_ARRAY);
    km_free(keypos);
    if (blocking_is_blocked(c)) xread_pin_ids(c, x, ids);
}

static void cmd_xread(client *c) {
    xread_args x;
    if (xread_parse(c, &x) != K_OK) return;
    stream_id *ids = km_alloc(sizeof(*ids) * (size_t)x.nstreams);
    for (int i = 0; i < x.nstreams; i++) {
        if (xread_id(c, &x, i, &ids[i]) != K_OK) {
            km_free(ids);
            return;
        }
    }
    long long served = 0;
    reply_deferred d = REPLY_DEFERRED_NONE;
    for (int i = 0; i < x.nstreams; i++) {
        const karg *key = &c->argv[x.streams + i];
        kobj *o;
        stream_cmd_lookup(c, key, 1, &o);
        if (!o || !stream_len(o) || stream_id_cmp(stream_last_live_id(o), ids[i]) <= 0) continue;
        if (served++ == 0) d = c->resp == 2 ? reply_deferred_array(c) : reply_deferred_map(c);
        stream_id start = ids[i];
        stream_id_incr(&start);
        if (c->resp == 2) reply_array(c, 2);
        reply_bulk(c, key->ptr, key->len);
        reply_range(c, o, start, STREAM_ID_MAX, x.count, 0);
    }
    if (served)
        reply_set_deferred_len(c, d, served);
    else if (x.block)
        xread_block(c, &x, ids);
    else
        reply_null_array(c);
    km_free(ids);
}

/* ---- the table ---- */

/* clang-format off */
#define X_CMD(n, p, a, f, fk, lk, st, s)                                                           \
    {.name = n, .proc = p, .arity = a, .flags = f, .first_key = fk, .last_key = lk,                \
     .key_step = st, .group = "stream", .summary = s, .since = "5.0.0"}

#define RO CMD_READONLY
#define RW CMD_WRITE

static command stream_table[] = {
    X_CMD("xadd", cmd_xadd, -5, RW | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "Appends a new message to a stream. Creates the key if it doesn't exist."),
    X_CMD("xrange", cmd_xrange, -4, RO, 1, 1, 1, "Returns the messages from a stream within a range of IDs."),
    X_CMD("xrevrange", cmd_xrevrange, -4, RO, 1, 1, 1, "Returns the messages from a stream within a range of IDs in reverse order."),
    X_CMD("xlen", cmd_xlen, 2, RO | CMD_FAST, 1, 1, 1, "Return the number of messages in a stream."),
    X_CMD("xdel", cmd_xdel, -3, RW | CMD_FAST, 1, 1, 1, "Returns the number of messages after removing them from a stream."),
    X_CMD("xtrim", cmd_xtrim, -4, RW, 1, 1, 1, "Deletes messages from the beginning of a stream."),
    X_CMD("xsetid", cmd_xsetid, -3, RW | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "An internal command for replicating stream values."),
    X_CMD("xread", cmd_xread, -4, RO | CMD_BLOCKING, 0, 0, 0, "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise."),
};

/* clang-format on */

const command_family commands_stream = {stream_table, K_ARRAY_LEN(stream_table)};
