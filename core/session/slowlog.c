/* slowlog.c -- the command log's three logs (slow, large-request,
 * large-reply) and the SLOWLOG and COMMANDLOG commands (see slowlog.h). */
#include "session/slowlog.h"

#include "common/common.h"
#include "common/kmem.h"
#include "session/reply.h"

#include <stdio.h>
#include <string.h>

#define COMMANDLOG_MAX_ARGS 32
#define COMMANDLOG_MAX_ARG_LEN 128

typedef struct commandlog_entry {
    long long id;
    long long time;  /* unix seconds */
    long long value; /* microseconds or bytes, by log */
    int argc;
    char **argv;
    size_t *lens;
    char *peer;
    char *name;
    struct commandlog_entry *next; /* older */
    struct commandlog_entry *prev; /* newer */
} commandlog_entry;

/* Newest first; the tail is kept so a full log drops its oldest entry in
 * constant time (a log may be configured millions of entries long). */
typedef struct commandlog {
    commandlog_entry *head;
    commandlog_entry *tail;
    unsigned long len;
    long long next_id;
} commandlog;

static commandlog logs[COMMANDLOG_TYPES];

static void commandlog_entry_free(commandlog_entry *e) {
    for (int i = 0; i < e->argc; i++)
        km_free(e->argv[i]);
    km_free(e->argv);
    km_free(e->lens);
    km_free(e->peer);
    km_free(e->name);
    km_free(e);
}

/* Copies an argument, cut to COMMANDLOG_MAX_ARG_LEN with a note of the
 * rest. */
static char *commandlog_arg(const karg *a, size_t *len) {
    if (a->len <= COMMANDLOG_MAX_ARG_LEN) {
        *len = a->len;
        return km_strndup(a->ptr, a->len);
    }
    char *s = km_alloc(COMMANDLOG_MAX_ARG_LEN + 64);
    memcpy(s, a->ptr, COMMANDLOG_MAX_ARG_LEN);
    int n = snprintf(s + COMMANDLOG_MAX_ARG_LEN, 64, "... (%zu more bytes)",
                     a->len - COMMANDLOG_MAX_ARG_LEN);
    *len = COMMANDLOG_MAX_ARG_LEN + (size_t)n;
    return s;
}

static commandlog_entry *commandlog_entry_new(client *c, commandlog *log, long long value) {
    commandlog_entry *e = km_calloc(1, sizeof(*e));
    int argc = c->argc > COMMANDLOG_MAX_ARGS ? COMMANDLOG_MAX_ARGS : c->argc;
    e->argc = argc;
    e->argv = km_alloc(sizeof(char *) * (size_t)argc);
    e->lens = km_alloc(sizeof(size_t) * (size_t)argc);
    for (int i = 0; i < argc; i++) {
        if (i == COMMANDLOG_MAX_ARGS - 1 && c->argc > COMMANDLOG_MAX_ARGS) {
            char buf[64];
            int n = snprintf(buf, sizeof(buf), "... (%d more arguments)", c->argc - argc + 1);
            e->argv[i] = km_strndup(buf, (size_t)n);
            e->lens[i] = (size_t)n;
        } else if (i < 64 && (c->redacted & (1ull << i))) {
            e->argv[i] = km_strdup("(redacted)");
            e->lens[i] = strlen(e->argv[i]);
        } else {
            e->argv[i] = commandlog_arg(&c->argv[i], &e->lens[i]);
        }
    }
    char peer[128] = "";
    if (c->conn) conn_addr(c->conn, peer, sizeof(peer), 1);
    e->peer = km_strdup(peer);
    e->name = km_strdup(c->name ? c->name : "");
    e->id = log->next_id++;
    e->time = event_cached_ms() / 1000;
    e->value = value;
    return e;
}

/* Drops the oldest entries beyond max. */
static void commandlog_trim(commandlog *log, unsigned long max) {
    while (log->len > max) {
        commandlog_entry *e = log->tail;
        log->tail = e->prev;
        if (log->tail)
            log->tail->next = NULL;
        else
            log->head = NULL;
        commandlog_entry_free(e);
        log->len--;
    }
}

static void commandlog_push_one(client *c, int type, long long value) {
    const commandlog_options *o = &session_opts()->commandlog[type];
    commandlog *log = &logs[type];
    if (o->max_len == 0) commandlog_trim(log, 0); /* a log of length 0 keeps nothing */
    if (o->threshold < 0 || o->max_len == 0 || value < o->threshold) return;
    commandlog_entry *e = commandlog_entry_new(c, log, value);
    e->next = log->head;
    if (log->head)
        log->head->prev = e;
    else
        log->tail = e;
    log->head = e;
    log->len++;
    commandlog_trim(log, o->max_len);
}

void commandlog_push(client *c, uint64_t us, size_t request_bytes, size_t reply_bytes) {
    commandlog_push_one(c, COMMANDLOG_SLOW, (long long)us);
    commandlog_push_one(c, COMMANDLOG_LARGE_REQUEST, (long long)request_bytes);
    commandlog_push_one(c, COMMANDLOG_LARGE_REPLY, (long long)reply_bytes);
}

static void commandlog_reset(commandlog *log) {
    while (log->head) {
        commandlog_entry *e = log->head;
        log->head = e->next;
        commandlog_entry_free(e);
    }
    log->tail = NULL;
    log->len = 0;
}

void slowlog_teardown(void) {
    for (int i = 0; i < COMMANDLOG_TYPES; i++)
        commandlog_reset(&logs[i]);
}

static void commandlog_reply_entry(client *c, commandlog_entry *e) {
    reply_array(c, 6);
    reply_int(c, e->id);
    reply_int(c, e->time);
    reply_int(c, e->value);
    reply_array(c, e->argc);
    for (int i = 0; i < e->argc; i++)
        reply_bulk(c, e->argv[i], e->lens[i]);
    reply_bulk_cstr(c, e->peer);
    reply_bulk_cstr(c, e->name);
}

/* The count argument (-1: all); replies the error and returns 0 when it
 * is below -1 or no integer. */
static int commandlog_parse_count(client *c, const karg *a, long long *count) {
    if (!str_to_ll(a->ptr, a->len, count) || *count < -1) {
        reply_error(c, "ERR count should be greater than or equal to -1");
        return 0;
    }
    return 1;
}

static void commandlog_reply_entries(client *c, const commandlog *log, long long count) {
    if (count == -1 || count > (long long)log->len) count = (long long)log->len;
    reply_array(c, count);
    commandlog_entry *e = log->head;
    for (long long i = 0; i < count; i++, e = e->next)
        commandlog_reply_entry(c, e);
}

/* ---- SLOWLOG ---- */

void slowlog_get_command(client *c) {
    long long count = 10;
    if (c->argc > 3) {
        reply_wrong_arity(c);
        return;
    }
    if (c->argc == 3 && !commandlog_parse_count(c, &c->argv[2], &count)) return;
    commandlog_reply_entries(c, &logs[COMMANDLOG_SLOW], count);
}

void slowlog_len_command(client *c) {
    reply_int(c, (long long)logs[COMMANDLOG_SLOW].len);
}

void slowlog_reset_command(client *c) {
    commandlog_reset(&logs[COMMANDLOG_SLOW]);
    reply_ok(c);
}

void slowlog_help_command(client *c) {
    static const char *const help[] = {
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
    };
    reply_help(c, "SLOWLOG", help, K_ARRAY_LEN(help));
}

/* ---- COMMANDLOG ---- */

/* The type argument's log, or -1 after replying the error. */
static int commandlog_type(client *c, const karg *a) {
    if (karg_eq(a, "slow")) return COMMANDLOG_SLOW;
    if (karg_eq(a, "large-request")) return COMMANDLOG_LARGE_REQUEST;
    if (karg_eq(a, "large-reply")) return COMMANDLOG_LARGE_REPLY;
    reply_error(c, "ERR type should be one of the following: slow, large-request, large-reply");
    return -1;
}

/* COMMANDLOG GET <count> <type>: the count is checked first, as Valkey. */
void commandlog_get_command(client *c) {
    long long count;
    if (!commandlog_parse_count(c, &c->argv[2], &count)) return;
    int type = commandlog_type(c, &c->argv[3]);
    if (type < 0) return;
    commandlog_reply_entries(c, &logs[type], count);
}

void commandlog_len_command(client *c) {
    int type = commandlog_type(c, &c->argv[2]);
    if (type >= 0) reply_int(c, (long long)logs[type].len);
}

void commandlog_reset_command(client *c) {
    int type = commandlog_type(c, &c->argv[2]);
    if (type < 0) return;
    commandlog_reset(&logs[type]);
    reply_ok(c);
}

void commandlog_help_command(client *c) {
    static const char *const help[] = {
        "GET <count> <type>",
        "    Return top <count> entries of the specified <type> from the commandlog (-1 mean all).",
        "    Entries are made of:",
        "    id, timestamp,",
        "        time in microseconds for type of slow,",
        "        or size in bytes for type of large-request,",
        "        or size in bytes for type of large-reply",
        "    arguments array, client IP and port,",
        "    client name",
        "LEN <type>",
        "    Return the length of the specified type of commandlog.",
        "RESET <type>",
        "    Reset the specified type of commandlog.",
    };
    reply_help(c, "COMMANDLOG", help, K_ARRAY_LEN(help));
}
