/* slowlog.c -- the slow log: the last slowlog-max-len commands that took
 * longer than slowlog-log-slower-than microseconds, newest first. */
#include "session/slowlog.h"

#include "common/common.h"
#include "common/kmem.h"
#include "session/reply.h"

#include <stdio.h>
#include <string.h>

#define SLOWLOG_MAX_ARGS 32
#define SLOWLOG_MAX_ARG_LEN 128

typedef struct slowlog_entry {
    long long id;
    long long time; /* unix seconds */
    long long duration;
    int argc;
    char **argv;
    size_t *lens;
    char *peer;
    char *name;
    struct slowlog_entry *next; /* older */
} slowlog_entry;

static slowlog_entry *slowlog_head;
static unsigned long slowlog_len;
static long long slowlog_next_id;

static void slowlog_entry_free(slowlog_entry *e) {
    for (int i = 0; i < e->argc; i++) km_free(e->argv[i]);
    km_free(e->argv);
    km_free(e->lens);
    km_free(e->peer);
    km_free(e->name);
    km_free(e);
}

/* Copies an argument, cut to SLOWLOG_MAX_ARG_LEN with a note of the rest. */
static char *slowlog_arg(const karg *a, size_t *len) {
    if (a->len <= SLOWLOG_MAX_ARG_LEN) {
        *len = a->len;
        return km_strndup(a->ptr, a->len);
    }
    char *s = km_alloc(SLOWLOG_MAX_ARG_LEN + 64);
    memcpy(s, a->ptr, SLOWLOG_MAX_ARG_LEN);
    int n = snprintf(s + SLOWLOG_MAX_ARG_LEN, 64, "... (%zu more bytes)", a->len - SLOWLOG_MAX_ARG_LEN);
    *len = SLOWLOG_MAX_ARG_LEN + (size_t)n;
    return s;
}

static slowlog_entry *slowlog_entry_new(client *c, uint64_t us) {
    slowlog_entry *e = km_calloc(1, sizeof(*e));
    int argc = c->argc > SLOWLOG_MAX_ARGS ? SLOWLOG_MAX_ARGS : c->argc;
    e->argc = argc;
    e->argv = km_alloc(sizeof(char *) * (size_t)argc);
    e->lens = km_alloc(sizeof(size_t) * (size_t)argc);
    for (int i = 0; i < argc; i++) {
        if (i == SLOWLOG_MAX_ARGS - 1 && c->argc > SLOWLOG_MAX_ARGS) {
            char buf[64];
            int n = snprintf(buf, sizeof(buf), "... (%d more arguments)", c->argc - argc + 1);
            e->argv[i] = km_strndup(buf, (size_t)n);
            e->lens[i] = (size_t)n;
        } else if (i < 64 && (c->redacted & (1ull << i))) {
            e->argv[i] = km_strdup("(redacted)");
            e->lens[i] = strlen(e->argv[i]);
        } else {
            e->argv[i] = slowlog_arg(&c->argv[i], &e->lens[i]);
        }
    }
    char peer[128] = "";
    if (c->conn) conn_addr(c->conn, peer, sizeof(peer), 1);
    e->peer = km_strdup(peer);
    e->name = km_strdup(c->name ? c->name : "");
    e->id = slowlog_next_id++;
    e->time = event_cached_ms() / 1000;
    e->duration = (long long)us;
    return e;
}

/* Drops entries beyond the configured length. */
static void slowlog_trim(void) {
    if (slowlog_len <= session_opts()->slowlog_max_len) return;
    slowlog_entry **pp = &slowlog_head;
    for (unsigned long i = 0; i < session_opts()->slowlog_max_len && *pp; i++)
        pp = &(*pp)->next;
    while (*pp) {
        slowlog_entry *e = *pp;
        *pp = e->next;
        slowlog_entry_free(e);
        slowlog_len--;
    }
}

void slowlog_push(client *c, uint64_t us) {
    if (session_opts()->slowlog_log_slower_than < 0 ||
        (long long)us < session_opts()->slowlog_log_slower_than)
        return;
    slowlog_entry *e = slowlog_entry_new(c, us);
    e->next = slowlog_head;
    slowlog_head = e;
    slowlog_len++;
    slowlog_trim();
}

static void slowlog_reset(void) {
    while (slowlog_head) {
        slowlog_entry *e = slowlog_head;
        slowlog_head = e->next;
        slowlog_entry_free(e);
    }
    slowlog_len = 0;
}

void slowlog_teardown(void) {
    slowlog_reset();
}

static void slowlog_reply_entry(client *c, slowlog_entry *e) {
    reply_array(c, 6);
    reply_int(c, e->id);
    reply_int(c, e->time);
    reply_int(c, e->duration);
    reply_array(c, e->argc);
    for (int i = 0; i < e->argc; i++) reply_bulk(c, e->argv[i], e->lens[i]);
    reply_bulk_cstr(c, e->peer);
    reply_bulk_cstr(c, e->name);
}

void slowlog_get_command(client *c) {
    long long count = 10;
    if (c->argc > 3) {
        reply_wrong_arity(c);
        return;
    }
    if (c->argc == 3) {
        if (!str_to_ll(c->argv[2].ptr, c->argv[2].len, &count) || count < -1) {
            reply_error(c, "ERR count should be greater than or equal to -1");
            return;
        }
        if (count == -1) count = (long long)slowlog_len;
    }
    if (count > (long long)slowlog_len) count = (long long)slowlog_len;
    reply_array(c, count);
    slowlog_entry *e = slowlog_head;
    for (long long i = 0; i < count; i++, e = e->next) slowlog_reply_entry(c, e);
}

void slowlog_len_command(client *c) {
    reply_int(c, (long long)slowlog_len);
}

void slowlog_reset_command(client *c) {
    slowlog_reset();
    reply_ok(c);
}

void slowlog_help_command(client *c) {
    static const char *help[] = {
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN", "    Return the length of the slowlog.",
        "RESET", "    Reset the slowlog.",
        "HELP", "    Print this help.",
    };
    reply_array(c, (long long)K_ARRAY_LEN(help));
    for (size_t i = 0; i < K_ARRAY_LEN(help); i++) reply_simple(c, help[i]);
}
