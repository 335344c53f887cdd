/* monitor.c -- the list of monitoring clients and the line each command
 * becomes for them (see monitor.h). */
#include "session/monitor.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/sbuf.h"
#include "io/io_threads.h"
#include "session/reply.h"

#include <stdio.h>
#include <string.h>

static client **monitors;
static size_t monitor_count, monitor_cap;

int monitor_active(void) {
    return monitor_count != 0;
}

/* One argument, quoted, with the escapes of Valkey's sdscatrepr: the
 * line stays one line whatever bytes the argument holds. */
static void monitor_append_arg(sbuf *b, const char *s, size_t len) {
    sbuf_append(b, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '\\':
            sbuf_append(b, "\\\\", 2);
            break;
        case '"':
            sbuf_append(b, "\\\"", 2);
            break;
        case '\n':
            sbuf_append(b, "\\n", 2);
            break;
        case '\r':
            sbuf_append(b, "\\r", 2);
            break;
        case '\t':
            sbuf_append(b, "\\t", 2);
            break;
        case '\a':
            sbuf_append(b, "\\a", 2);
            break;
        case '\b':
            sbuf_append(b, "\\b", 2);
            break;
        default:
            if (ch >= 0x20 && ch < 0x7f)
                sbuf_append(b, (const char *)&ch, 1);
            else
                sbuf_appendf(b, "\\x%02x", ch);
        }
    }
    sbuf_append(b, "\"", 1);
}

/* "[db addr] " */
static void monitor_append_origin(sbuf *b, client *c) {
    char addr[160] = "?:0";
    if (c->conn && c->conn->type == &conn_type_unix) {
        char path[128];
        conn_addr(c->conn, path, sizeof(path), 0);
        char *colon = strrchr(path, ':'); /* the address reads "path:0" */
        if (colon) *colon = '\0';
        snprintf(addr, sizeof(addr), "unix:%s", path);
    } else if (c->conn) {
        conn_addr(c->conn, addr, sizeof(addr), 1);
    } else if (c->origin) {
        snprintf(addr, sizeof(addr), "%s", c->origin);
    }
    sbuf_appendf(b, "[%d %s] ", c->db->id, addr);
}

void monitor_feed(client *c) {
    uint64_t now = event_now_us();
    sbuf line = {0};
    sbuf_appendf(&line, "+%llu.%06llu ", (unsigned long long)(now / 1000000),
                 (unsigned long long)(now % 1000000));
    monitor_append_origin(&line, c);
    for (int i = 0; i < c->argc; i++) {
        if (i) sbuf_append(&line, " ", 1);
        if (i < 64 && (c->redacted & (1ull << i)))
            sbuf_append(&line, "\"(redacted)\"", 12);
        else
            monitor_append_arg(&line, c->argv[i].ptr, c->argv[i].len);
    }
    sbuf_append(&line, "\r\n", 2);
    for (size_t i = 0; i < monitor_count; i++) {
        client *m = monitors[i];
        if (m->flags & CLIENT_CLOSE_ASAP) continue;
        /* An I/O thread writing m's replies reads its chain: let it finish
         * before the chain grows. */
        if (m->io_job) io_threads_quiesce();
        reply_raw(m, line.data, line.len);
    }
    km_free(line.data);
}

/* The clients whose commands monitor_feed_early showed, each until its
 * call() ends. Such commands nest (a module's call runs a module command
 * that calls in turn; a busy phase serves other clients' commands), and
 * each ends before the one it runs in: a stack, the innermost on top.
 * Deeper than this, a command is shown early and again when it ends. */
#define MONITOR_EARLY_MAX 64
static const client *fed_early[MONITOR_EARLY_MAX];
static int fed_early_count;

void monitor_feed_early(client *c) {
    if (fed_early_count && fed_early[fed_early_count - 1] == c) return;
    if (c->cmd_flags & (CMD_SKIP_MONITOR | CMD_ADMIN)) return;
    monitor_feed(c);
    if (fed_early_count < MONITOR_EARLY_MAX) fed_early[fed_early_count++] = c;
}

int monitor_fed_early(client *c) {
    if (!fed_early_count || fed_early[fed_early_count - 1] != c) return 0;
    fed_early_count--;
    return 1;
}

void monitor_forget(client *c) {
    if (!(c->flags & CLIENT_MONITOR)) return;
    c->flags &= ~CLIENT_MONITOR;
    for (size_t i = 0; i < monitor_count; i++) {
        if (monitors[i] != c) continue;
        memmove(&monitors[i], &monitors[i + 1], (monitor_count - i - 1) * sizeof(*monitors));
        /* Without monitors call() stops asking whether a command was shown. */
        if (!--monitor_count) fed_early_count = 0;
        return;
    }
}

void monitor_command(client *c) {
    /* EXEC's queue and captured runs expect one reply per command; a
     * monitor's stream is endless. */
    if (c->flags & CLIENT_DENY_BLOCKING) {
        reply_error(c, "ERR MONITOR isn't allowed for DENY BLOCKING client");
        return;
    }
    if (c->flags & CLIENT_MONITOR) return; /* as Valkey: no second OK */
    if (monitor_count == monitor_cap) {
        monitor_cap = monitor_cap ? monitor_cap * 2 : 4;
        monitors = km_realloc(monitors, monitor_cap * sizeof(*monitors));
    }
    monitors[monitor_count++] = c;
    c->flags |= CLIENT_MONITOR;
    reply_ok(c);
}

void monitor_teardown(void) {
    km_free(monitors);
    monitors = NULL;
    monitor_count = monitor_cap = 0;
}
