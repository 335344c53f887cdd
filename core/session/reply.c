/* reply.c -- RESP2/RESP3 reply construction, deferred aggregate headers
 * and reply capture (see reply.h). */
#include "session/reply.h"

#include "common/common.h"
#include "common/kmem.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static reply_block *reply_new_block(client *c, size_t min) {
    size_t size = min > CLIENT_REPLY_CHUNK ? min : CLIENT_REPLY_CHUNK;
    reply_block *b = km_alloc(sizeof(reply_block) + size);
    b->next = NULL;
    b->obj = NULL;
    b->size = size;
    b->used = 0;
    b->sent = 0;
    if (c->reply_tail) c->reply_tail->next = b;
    else c->reply_head = b;
    c->reply_tail = b;
    return b;
}

/* Queues the client for writing in before-sleep (once). */
static void reply_schedule(client *c) {
    if (!(c->flags & CLIENT_PENDING_WRITE)) client_schedule_write(c);
}

/* Clients closing, or that asked for no replies (CLIENT REPLY), get none. */
#define REPLY_DROPPED (CLIENT_CLOSE_ASAP | CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP)

void reply_raw(client *c, const char *s, size_t len) {
    if (c->flags & REPLY_DROPPED) return;
    reply_schedule(c);
    c->reply_bytes += len;
    reply_block *b = c->reply_tail;
    if (b && !b->obj) {
        size_t room = b->size - b->used;
        size_t n = len < room ? len : room;
        memcpy(b->buf + b->used, s, n);
        b->used += n;
        s += n;
        len -= n;
    }
    if (len == 0) return;
    b = reply_new_block(c, len);
    memcpy(b->buf, s, len);
    b->used = len;
    /* A new block is the moment a reply grows: enforce the hard output
     * limit now rather than at the next cron. */
    if (client_obuf_limit(c)->hard) client_check_obuf_now(c);
}

static void reply_obj_ref(client *c, kobj *o) {
    if (c->flags & REPLY_DROPPED) return;
    reply_schedule(c);
    reply_block *b = km_alloc(sizeof(reply_block));
    b->next = NULL;
    b->obj = obj_incref(o);
    b->size = 0;
    b->used = o->len;
    b->sent = 0;
    if (c->reply_tail) c->reply_tail->next = b;
    else c->reply_head = b;
    c->reply_tail = b;
    c->reply_bytes += o->len;
}

/* A shared frame of at least this many bytes is appended by reference;
 * a smaller one costs less copied into the tail block (one memcpy) than
 * a reference block (an allocation, a refcount, one more iovec per write:
 * a subscriber that has a thousand small messages queued would need eight
 * writev calls instead of one). */
#define REPLY_FRAME_REF_MIN 512

void reply_frame(client *c, kobj *frame) {
    size_t len = frame->len;
    reply_block *b = c->reply_tail;
    /* The common case, a small message with room in the tail block: one
     * copy, no block, no limit check (that runs when a block is added). */
    if (len < REPLY_FRAME_REF_MIN && b && !b->obj && b->size - b->used >= len &&
        !(c->flags & REPLY_DROPPED)) {
        reply_schedule(c);
        memcpy(b->buf + b->used, frame->v.ptr, len);
        b->used += len;
        c->reply_bytes += len;
        return;
    }
    if (len < REPLY_FRAME_REF_MIN) {
        reply_raw(c, frame->v.ptr, frame->len);
        return;
    }
    reply_obj_ref(c, frame);
    if (client_obuf_limit(c)->hard) client_check_obuf_now(c);
}

/* "<prefix><n>\r\n" */
/* Writes "<prefix><n>\r\n" into buf (at least 24 bytes); returns its
 * length. Lengths under 100, most of them, skip the general formatter. */
static size_t reply_format_len_line(char *buf, char prefix, long long n) {
    size_t len = 1;
    buf[0] = prefix;
    if (n >= 0 && n < 10) {
        buf[len++] = (char)('0' + n);
    } else if (n >= 10 && n < 100) {
        buf[len++] = (char)('0' + n / 10);
        buf[len++] = (char)('0' + n % 10);
    } else {
        len += ll_to_str(buf + 1, n);
    }
    buf[len++] = '\r';
    buf[len++] = '\n';
    return len;
}

static void reply_len_line(client *c, char prefix, long long n) {
    char buf[32];
    reply_raw(c, buf, reply_format_len_line(buf, prefix, n));
}

void reply_ok(client *c) {
    reply_raw(c, "+OK\r\n", 5);
}

void reply_simple(client *c, const char *s) {
    reply_raw(c, "+", 1);
    reply_raw(c, s, strlen(s));
    reply_raw(c, "\r\n", 2);
}

/* ---- errors and errorstats ---- */

#define ERRORSTATS_MAX 128

typedef struct errstat {
    char prefix[32];
    long long count;
} errstat;

static errstat errstats[ERRORSTATS_MAX];
static int errstats_count;

static void errorstats_add(const char *err, size_t len) {
    const char *space = memchr(err, ' ', len);
    size_t n = space ? (size_t)(space - err) : len;
    if (n >= sizeof(errstats[0].prefix)) n = sizeof(errstats[0].prefix) - 1;
    for (int i = 0; i < errstats_count; i++) {
        if (strlen(errstats[i].prefix) == n && memcmp(errstats[i].prefix, err, n) == 0) {
            errstats[i].count++;
            return;
        }
    }
    if (errstats_count == ERRORSTATS_MAX) return;
    memcpy(errstats[errstats_count].prefix, err, n);
    errstats[errstats_count].prefix[n] = '\0';
    errstats[errstats_count++].count = 1;
}

void reply_errorstats_foreach(void (*fn)(const char *, long long, void *), void *priv) {
    for (int i = 0; i < errstats_count; i++) fn(errstats[i].prefix, errstats[i].count, priv);
}

void reply_errorstats_reset(void) {
    errstats_count = 0;
}

void reply_error_len(client *c, const char *err, size_t len, int counted) {
    reply_raw(c, "-", 1);
    /* Newlines would break the protocol: replace them, as Valkey does. */
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (err[i] != '\r' && err[i] != '\n') continue;
        reply_raw(c, err + start, i - start);
        reply_raw(c, " ", 1);
        start = i + 1;
    }
    reply_raw(c, err + start, len - start);
    reply_raw(c, "\r\n", 2);
    if (!counted) return;
    errorstats_add(err, len);
    session_stats()->total_error_replies++;
    c->cmd_errors++;
}

void reply_error(client *c, const char *err) {
    reply_error_len(c, err, strlen(err), 1);
}

void reply_bignum(client *c, const char *digits, size_t len) {
    if (c->resp < 3) {
        reply_bulk(c, digits, len);
        return;
    }
    reply_raw(c, "(", 1);
    reply_raw(c, digits, len);
    reply_raw(c, "\r\n", 2);
}

void reply_errorf(client *c, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    reply_error(c, buf);
}

void reply_wrong_arity(client *c) {
    reply_errorf(c, "ERR wrong number of arguments for '%s' command",
                 c->cmd ? (c->cmd->fullname ? c->cmd->fullname : c->cmd->name) : "?");
}

void reply_syntax_error(client *c) {
    reply_error(c, "ERR syntax error");
}

void reply_wrongtype(client *c) {
    reply_error(c, "WRONGTYPE Operation against a key holding the wrong kind of value");
}

void reply_not_int(client *c) {
    reply_error(c, "ERR value is not an integer or out of range");
}

/* ---- scalars ---- */

void reply_int(client *c, long long v) {
    reply_len_line(c, ':', v);
}

/* Bulk strings up to this length are framed in one buffer and appended
 * once: the common small GET costs one append instead of three. */
#define REPLY_BULK_ONE_COPY 128

/* Frames a small bulk string straight into the tail block when it has
 * room (the common case inside a long array reply): one copy of the
 * payload, no staging buffer. Returns 0 when the slow path must run. */
static int reply_bulk_in_place(client *c, const char *s, size_t len) {
    reply_block *b = c->reply_tail;
    /* "$128\r\n" + payload + "\r\n" */
    if (!b || b->obj || b->size - b->used < len + 8 || (c->flags & REPLY_DROPPED)) return 0;
    reply_schedule(c);
    char *p = b->buf + b->used;
    size_t n = reply_format_len_line(p, '$', (long long)len);
    memcpy(p + n, s, len);
    n += len;
    p[n++] = '\r';
    p[n++] = '\n';
    b->used += n;
    c->reply_bytes += n;
    return 1;
}

void reply_bulk(client *c, const char *s, size_t len) {
    if (len <= REPLY_BULK_ONE_COPY) {
        if (reply_bulk_in_place(c, s, len)) return;
        char buf[REPLY_BULK_ONE_COPY + 32];
        size_t n = reply_format_len_line(buf, '$', (long long)len);
        memcpy(buf + n, s, len);
        n += len;
        buf[n++] = '\r';
        buf[n++] = '\n';
        reply_raw(c, buf, n);
        return;
    }
    reply_len_line(c, '$', (long long)len);
    reply_raw(c, s, len);
    reply_raw(c, "\r\n", 2);
}

void reply_bulk_cstr(client *c, const char *s) {
    if (!s) reply_null(c);
    else reply_bulk(c, s, strlen(s));
}

void reply_bulk_ll(client *c, long long v) {
    char buf[24];
    size_t len = ll_to_str(buf, v);
    reply_bulk(c, buf, len);
}

void reply_bulk_obj(client *c, kobj *o) {
    if (o->encoding == OBJ_ENC_INT) {
        reply_bulk_ll(c, o->v.ival);
        return;
    }
    if (o->len < CLIENT_REPLY_REF_MIN) {
        reply_bulk(c, o->v.ptr, o->len);
        return;
    }
    reply_len_line(c, '$', (long long)o->len);
    reply_obj_ref(c, o);
    reply_raw(c, "\r\n", 2);
}

void reply_double(client *c, double d) {
    char buf[DOUBLE_STR_MAX + 3];
    size_t len = double_to_str(buf + 1, d);
    if (c->resp >= 3) {
        buf[0] = ',';
        buf[len + 1] = '\r';
        buf[len + 2] = '\n';
        reply_raw(c, buf, len + 3);
    } else {
        reply_bulk(c, buf + 1, len);
    }
}

void reply_null(client *c) {
    if (c->resp >= 3) reply_raw(c, "_\r\n", 3);
    else reply_raw(c, "$-1\r\n", 5);
}

void reply_null_array(client *c) {
    if (c->resp >= 3) reply_raw(c, "_\r\n", 3);
    else reply_raw(c, "*-1\r\n", 5);
}

void reply_bool(client *c, int v) {
    if (c->resp >= 3) reply_raw(c, v ? "#t\r\n" : "#f\r\n", 4);
    else reply_int(c, v ? 1 : 0);
}

void reply_array(client *c, long long n) {
    reply_len_line(c, '*', n);
}

void reply_map(client *c, long long n) {
    if (c->resp >= 3) reply_len_line(c, '%', n);
    else reply_len_line(c, '*', n * 2);
}

void reply_set(client *c, long long n) {
    reply_len_line(c, c->resp >= 3 ? '~' : '*', n);
}

void reply_push(client *c, long long n) {
    reply_len_line(c, c->resp >= 3 ? '>' : '*', n);
}

void reply_help(client *c, const char *container, const char *const *lines, size_t n) {
    char header[96];
    snprintf(header, sizeof(header),
             "%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", container);
    reply_array(c, (long long)n + 3);
    reply_simple(c, header);
    for (size_t i = 0; i < n; i++)
        reply_simple(c, lines[i]);
    reply_simple(c, "HELP");
    reply_simple(c, "    Print this help.");
}

void reply_verbatim(client *c, const char *s, size_t len, const char *ext) {
    if (c->resp < 3) {
        reply_bulk(c, s, len);
        return;
    }
    reply_len_line(c, '=', (long long)len + 4);
    reply_raw(c, ext, 3);
    reply_raw(c, ":", 1);
    reply_raw(c, s, len);
    reply_raw(c, "\r\n", 2);
}

/* ---- deferred aggregate lengths ----
 *
 * The header is reserved in place: REPLY_DEFERRED_ROOM bytes at the end of
 * the tail block (or of a new block when the tail has no room), and the
 * elements follow in the same block. Filling writes the header at the start
 * of the room and closes up the unused rest by moving down the bytes after
 * it in that block only (later blocks are separate writev entries, so a
 * shorter block is fine). That costs a move of at most one block, but no
 * block per aggregate: nested deferred aggregates stay packed, and a small
 * reply stays one buffer. Blocks are never moved or freed while a command
 * runs, so (block, offset) stays valid; a fill that closes up a block shifts
 * the other open headers after it in that block, which is why the open ones
 * are tracked here and can be filled in any order. */

/* "*" + "-9223372036854775808" + "\r\n": the longest header. */
#define REPLY_DEFERRED_ROOM 23

typedef struct deferred_slot {
    reply_block *b; /* NULL: filled (a slot below the top waiting to be popped) */
    size_t off;
    char prefix;
    char pairs; /* RESP2 map: the array counts keys and values */
} deferred_slot;

typedef struct reply_deferred_state {
    int count; /* slots in use, the top one open */
    int cap;
    deferred_slot slots[];
} reply_deferred_state;

static reply_deferred reply_deferred_add(client *c, char prefix, int pairs) {
    if (c->flags & REPLY_DROPPED) return REPLY_DEFERRED_NONE;
    reply_schedule(c);
    reply_block *b = c->reply_tail;
    if (!b || b->obj || b->size - b->used < REPLY_DEFERRED_ROOM) {
        b = reply_new_block(c, REPLY_DEFERRED_ROOM);
        if (client_obuf_limit(c)->hard) client_check_obuf_now(c);
    }
    reply_deferred_state *st = c->reply_deferred;
    if (!st || st->count == st->cap) {
        int count = st ? st->count : 0, cap = st ? st->cap * 2 : 8;
        st = km_realloc(st, sizeof(*st) + sizeof(deferred_slot) * (size_t)cap);
        st->count = count;
        st->cap = cap;
        c->reply_deferred = st;
    }
    deferred_slot *s = &st->slots[st->count++];
    s->b = b;
    s->off = b->used;
    s->prefix = prefix;
    s->pairs = (char)pairs;
    /* The room counts as pending output until the fill gives back what the
     * header did not need, so reply_bytes always matches the chain. */
    b->used += REPLY_DEFERRED_ROOM;
    c->reply_bytes += REPLY_DEFERRED_ROOM;
    return st->count;
}

reply_deferred reply_deferred_array(client *c) {
    return reply_deferred_add(c, '*', 0);
}

reply_deferred reply_deferred_map(client *c) {
    return c->resp >= 3 ? reply_deferred_add(c, '%', 0) : reply_deferred_add(c, '*', 1);
}

reply_deferred reply_deferred_set(client *c) {
    return reply_deferred_add(c, c->resp >= 3 ? '~' : '*', 0);
}

void reply_set_deferred_len(client *c, reply_deferred h, long long n) {
    reply_deferred_state *st = c->reply_deferred;
    /* NONE (replies dropped), or a handle not open: nothing was reserved. */
    if (h == REPLY_DEFERRED_NONE || !st || h > st->count || !st->slots[h - 1].b) return;
    deferred_slot *s = &st->slots[h - 1];
    char hdr[REPLY_DEFERRED_ROOM + 1];
    hdr[0] = s->prefix;
    size_t len = 1 + ll_to_str(hdr + 1, s->pairs ? n * 2 : n);
    hdr[len++] = '\r';
    hdr[len++] = '\n';
    reply_block *b = s->b;
    size_t gap = REPLY_DEFERRED_ROOM - len, after = s->off + REPLY_DEFERRED_ROOM;
    memcpy(b->buf + s->off, hdr, len);
    memmove(b->buf + s->off + len, b->buf + after, b->used - after);
    b->used -= gap;
    c->reply_bytes -= gap;
    for (int i = 0; i < st->count; i++)
        if (st->slots[i].b == b && st->slots[i].off > s->off) st->slots[i].off -= gap;
    s->b = NULL;
    while (st->count > 0 && !st->slots[st->count - 1].b) st->count--;
    if (st->count == 0) {
        km_free(st);
        c->reply_deferred = NULL;
    }
}

int reply_deferred_open(const client *c) {
    const reply_deferred_state *st = c->reply_deferred;
    int open = 0;
    for (int i = 0; st && i < st->count; i++) open += st->slots[i].b != NULL;
    return open;
}

/* ---- capturing replies ---- */

static void reply_buf_append(reply_buf *out, const char *s, size_t len) {
    if (out->cap - out->len < len) {
        size_t cap = out->cap ? out->cap : 256;
        while (cap - out->len < len) cap *= 2;
        out->ptr = km_realloc(out->ptr, cap);
        out->cap = cap;
    }
    memcpy(out->ptr + out->len, s, len);
    out->len += len;
}

void reply_buf_free(reply_buf *b) {
    km_free(b->ptr);
    b->ptr = NULL;
    b->len = b->cap = 0;
}

void reply_take(client *c, reply_buf *out) {
    /* An open header would be taken half-written, and its slot would point
     * at a freed block: a command that forgot to fill one is a bug. Its
     * handles are dropped so a late fill cannot write into freed memory. */
    assert(!c->reply_deferred);
    km_free(c->reply_deferred);
    c->reply_deferred = NULL;
    /* The last buffer block is kept, emptied: a module's next call on the
     * same capture client needs no allocation for a small reply. */
    reply_block *b = c->reply_head, *keep = NULL;
    while (b) {
        reply_block *next = b->next;
        const char *base = b->obj ? b->obj->v.ptr : b->buf;
        reply_buf_append(out, base + b->sent, b->used - b->sent);
        if (!next && !b->obj) {
            b->used = b->sent = 0;
            keep = b;
            break;
        }
        if (b->obj) obj_decref(b->obj);
        km_free(b);
        b = next;
    }
    c->reply_head = c->reply_tail = keep;
    c->reply_bytes = 0;
}

int reply_capture_run(client *c, int argc, const karg *argv, reply_buf *out) {
    if (argc < 1 || c->conn || (c->flags & (CLIENT_PROTECTED | CLIENT_CLOSE_ASAP))) return K_ERR;
    if (argc > c->argv_cap) {
        c->argv = km_realloc(c->argv, sizeof(karg) * (size_t)argc);
        c->argv_cap = argc;
    }
    if (argv != c->argv) memcpy(c->argv, argv, sizeof(karg) * (size_t)argc);
    c->argc = argc;
    /* A module command or script runs this inside its own command:
     * client_execute puts that client back as the current one afterwards.
     * Protected, c outlives a command that closes it until the closed
     * clients are freed. A blocking command cannot wait here: it replies
     * as if its timeout had passed. */
    c->flags |= CLIENT_PROTECTED | CLIENT_DENY_BLOCKING;
    client_execute(c);
    c->flags &= ~(CLIENT_PROTECTED | CLIENT_DENY_BLOCKING);
    c->argc = 0;
    reply_take(c, out);
    return (c->flags & CLIENT_CLOSE_ASAP) ? K_ERR : K_OK;
}
