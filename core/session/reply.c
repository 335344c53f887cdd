/* reply.c -- RESP2/RESP3 reply construction (see reply.h). */
#include "session/reply.h"

#include "common/common.h"
#include "common/kmem.h"

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
    if (session_opts()->obuf_limit_normal.hard) client_check_obuf_now(c);
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

/* "<prefix><n>\r\n" */
static void reply_len_line(client *c, char prefix, long long n) {
    char buf[32];
    buf[0] = prefix;
    size_t len = 1 + ll_to_str(buf + 1, n);
    buf[len++] = '\r';
    buf[len++] = '\n';
    reply_raw(c, buf, len);
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

static void errorstats_add(const char *err) {
    size_t n = strcspn(err, " ");
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

void reply_error(client *c, const char *err) {
    reply_raw(c, "-", 1);
    /* Newlines would break the protocol: replace them, as Valkey does. */
    size_t len = strlen(err);
    for (size_t i = 0; i < len; i++) {
        char ch = (err[i] == '\r' || err[i] == '\n') ? ' ' : err[i];
        reply_raw(c, &ch, 1);
    }
    reply_raw(c, "\r\n", 2);
    errorstats_add(err);
    session_stats()->total_error_replies++;
    c->cmd_errors++;
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

void reply_bulk(client *c, const char *s, size_t len) {
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
    char buf[64];
    int len;
    if (isinf(d)) len = snprintf(buf, sizeof(buf), "%s", d > 0 ? "inf" : "-inf");
    else len = snprintf(buf, sizeof(buf), "%.17g", d);
    if (c->resp >= 3) {
        reply_raw(c, ",", 1);
        reply_raw(c, buf, (size_t)len);
        reply_raw(c, "\r\n", 2);
    } else {
        reply_bulk(c, buf, (size_t)len);
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
