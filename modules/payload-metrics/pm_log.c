/* pm_log.c -- the large-request and large-reply logs, in the manner of
 * Valkey 8.1's COMMANDLOG large-request / large-reply: the last max-len
 * commands whose request (or reply) was at least the threshold, newest
 * first, each with an id, the unix time, the size, the arguments (cut as
 * SLOWLOG cuts them: 32 arguments, 128 bytes each), the client's address
 * and name.
 *
 * Arguments: an observer gets no arguments (keel_call_info has none), but a
 * filter runs in the command's context just before it, where argc/argv
 * answer. The filter therefore keeps a truncated copy of the arguments of
 * the command about to run (at most 32 x 128 bytes, in a static buffer: no
 * allocation), and the observer uses it when the client and the command
 * name match. Commands run by EXEC pass no filter; their entries hold the
 * command name and a note instead. */
#include "pm_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define PM_LOG_MAX_ARGS 32
#define PM_LOG_MAX_ARG_LEN 128

typedef struct pm_entry {
    uint64_t id;
    long long time; /* unix seconds */
    uint64_t size;
    int argc;
    char **argv;
    size_t *lens;
    char *peer;
    char *name;
    struct pm_entry *next; /* older */
} pm_entry;

typedef struct pm_log {
    pm_entry *head;
    long long len;
    uint64_t next_id;
} pm_log;

static pm_log logs[2];

/* The arguments of the command the filter saw last. */
static struct {
    keel_client *client;
    const char *name;            /* the server's pointer, compared by address */
    int argc;                    /* kept: at most PM_LOG_MAX_ARGS */
    int total;                   /* the command's argc */
    size_t len[PM_LOG_MAX_ARGS]; /* full lengths */
    uint32_t off[PM_LOG_MAX_ARGS];
    char buf[PM_LOG_MAX_ARGS * PM_LOG_MAX_ARG_LEN];
} stash;

void pm_log_capture(keel_ctx *ctx, const char *name) {
    const keel_api_command *cmd = pm_api->command;
    int argc = cmd->argc(ctx);
    int n = argc < PM_LOG_MAX_ARGS ? argc : PM_LOG_MAX_ARGS;
    uint32_t off = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *p = cmd->argv(ctx, i, &len);
        size_t k = len < PM_LOG_MAX_ARG_LEN ? len : PM_LOG_MAX_ARG_LEN;
        if (k) memcpy(stash.buf + off, p, k);
        stash.len[i] = len;
        stash.off[i] = off;
        off += (uint32_t)k;
    }
    stash.argc = n;
    stash.total = argc;
    stash.name = name;
    stash.client = cmd->client(ctx);
}

/* ---- entries ---- */

static void pm_entry_free(pm_entry *e) {
    for (int i = 0; i < e->argc; i++)
        pm_api->core->free(e->argv[i]);
    pm_api->core->free(e->argv);
    pm_api->core->free(e->lens);
    pm_api->core->free(e->peer);
    pm_api->core->free(e->name);
    pm_api->core->free(e);
}

static int pm_ieq(const char *s, size_t len, const char *lit) {
    return strlen(lit) == len && !strncasecmp(s, lit, len);
}

static int pm_icontains(const char *s, size_t len, const char *lit) {
    size_t n = strlen(lit);
    for (size_t i = 0; i + n <= len; i++)
        if (!strncasecmp(s + i, lit, n)) return 1;
    return 0;
}

/* Secrets never go into the log (SLOWLOG redacts the same ones): AUTH's
 * arguments, HELLO ... AUTH user pass, MIGRATE ... AUTH/AUTH2, CONFIG SET of
 * a password-like parameter, ACL SETUSER rules. */
static void pm_redactions(const char *name, unsigned char *redact) {
    int n = stash.argc;
    const char *a0 = NULL;
    size_t l0 = 0;
    if (!strcmp(name, "auth") || !strcmp(name, "acl|setuser")) {
        for (int i = !strcmp(name, "auth") ? 1 : 3; i < n; i++)
            redact[i] = 1;
        return;
    }
    for (int i = 1; i < n; i++) {
        a0 = stash.buf + stash.off[i];
        l0 = stash.len[i] < PM_LOG_MAX_ARG_LEN ? stash.len[i] : PM_LOG_MAX_ARG_LEN;
        if ((!strcmp(name, "hello") && pm_ieq(a0, l0, "auth")) ||
            (!strcmp(name, "migrate") && pm_ieq(a0, l0, "auth2"))) {
            if (i + 1 < n) redact[i + 1] = 1;
            if (i + 2 < n) redact[i + 2] = 1;
        } else if (!strcmp(name, "migrate") && pm_ieq(a0, l0, "auth")) {
            if (i + 1 < n) redact[i + 1] = 1;
        } else if (!strcmp(name, "config|set") && i >= 2 && (i % 2) == 0 &&
                   (pm_icontains(a0, l0, "pass") || pm_icontains(a0, l0, "auth"))) {
            if (i + 1 < n) redact[i + 1] = 1;
        }
    }
}

static char *pm_arg_copy(int i, size_t *len) {
    const char *p = stash.buf + stash.off[i];
    if (stash.len[i] <= PM_LOG_MAX_ARG_LEN) {
        *len = stash.len[i];
        return pm_strndup(p, stash.len[i]);
    }
    char note[64];
    int n = snprintf(note, sizeof(note), "... (%zu more bytes)", stash.len[i] - PM_LOG_MAX_ARG_LEN);
    char *s = pm_api->core->alloc(PM_LOG_MAX_ARG_LEN + (size_t)n + 1);
    memcpy(s, p, PM_LOG_MAX_ARG_LEN);
    memcpy(s + PM_LOG_MAX_ARG_LEN, note, (size_t)n + 1);
    *len = PM_LOG_MAX_ARG_LEN + (size_t)n;
    return s;
}

static void pm_entry_args(pm_entry *e, const keel_call_info *ci) {
    if (stash.client != ci->client || stash.name != ci->name || !pm.log_args) {
        /* No arguments for this call: its name and why. */
        e->argc = 2;
        e->argv = pm_api->core->alloc(2 * sizeof(char *));
        e->lens = pm_api->core->alloc(2 * sizeof(size_t));
        e->argv[0] = pm_strdup(ci->name);
        e->argv[1] = pm_strdup(pm.log_args ? "(arguments not available: run by EXEC)"
                                           : "(arguments not logged: log-arguments no)");
        e->lens[0] = strlen(e->argv[0]);
        e->lens[1] = strlen(e->argv[1]);
        return;
    }
    unsigned char redact[PM_LOG_MAX_ARGS] = {0};
    pm_redactions(ci->name, redact);
    e->argc = stash.argc;
    e->argv = pm_api->core->alloc((size_t)e->argc * sizeof(char *));
    e->lens = pm_api->core->alloc((size_t)e->argc * sizeof(size_t));
    for (int i = 0; i < e->argc; i++) {
        if (i == PM_LOG_MAX_ARGS - 1 && stash.total > PM_LOG_MAX_ARGS) {
            char note[64];
            int n = snprintf(note, sizeof(note), "... (%d more arguments)",
                             stash.total - PM_LOG_MAX_ARGS + 1);
            e->argv[i] = pm_strndup(note, (size_t)n);
            e->lens[i] = (size_t)n;
        } else if (redact[i]) {
            e->argv[i] = pm_strdup("(redacted)");
            e->lens[i] = strlen(e->argv[i]);
        } else {
            e->argv[i] = pm_arg_copy(i, &e->lens[i]);
        }
    }
}

void pm_log_trim(int type, long long max_len) {
    pm_log *l = &logs[type];
    if (l->len <= max_len) return;
    pm_entry **pp = &l->head;
    for (long long i = 0; i < max_len && *pp; i++)
        pp = &(*pp)->next;
    while (*pp) {
        pm_entry *e = *pp;
        *pp = e->next;
        pm_entry_free(e);
        l->len--;
    }
}

void pm_log_record(int type, const keel_call_info *ci, uint64_t size) {
    pm_log *l = &logs[type];
    pm_entry *e = pm_api->core->calloc(1, sizeof(*e));
    e->id = l->next_id++;
    e->time = pm_api->core->mstime() / 1000;
    e->size = size;
    pm_entry_args(e, ci);
    char peer[128] = "";
    if (!ci->client || pm_api->command->client_addr(ci->client, peer, sizeof(peer)) != KEEL_OK)
        peer[0] = '\0';
    e->peer = pm_strdup(peer);
    const char *cname = ci->client ? pm_api->command->client_name(ci->client) : NULL;
    e->name = pm_strdup(cname ? cname : "");
    e->next = l->head;
    l->head = e;
    l->len++;
    pm_log_trim(type, type == PM_LOG_REQUEST ? pm.req_log_max : pm.rep_log_max);
}

long long pm_log_len(int type) {
    return logs[type].len;
}

uint64_t pm_log_next_id(int type) {
    return logs[type].next_id;
}

static void pm_log_reset(int type) {
    pm_log_trim(type, 0);
}

void pm_log_free_all(void) {
    pm_log_reset(PM_LOG_REQUEST);
    pm_log_reset(PM_LOG_REPLY);
    memset(logs, 0, sizeof(logs));
    memset(&stash, 0, sizeof(stash));
}

/* ---- PAYLOAD.LOG ---- */

static int pm_log_type(keel_ctx *ctx, int index) {
    size_t len;
    const char *s = pm_api->command->argv(ctx, index, &len);
    if (s && pm_ieq(s, len, "large-request")) return PM_LOG_REQUEST;
    if (s && pm_ieq(s, len, "large-reply")) return PM_LOG_REPLY;
    pm_api->command->reply_error(
        ctx, "ERR type should be one of the following: large-request, large-reply "
             "(slow commands are in SLOWLOG)");
    return -1;
}

static void pm_reply_entry(keel_ctx *ctx, const pm_entry *e) {
    const keel_api_command *cmd = pm_api->command;
    cmd->reply_array(ctx, 6);
    cmd->reply_int(ctx, (long long)e->id);
    cmd->reply_int(ctx, e->time);
    cmd->reply_int(ctx, (long long)e->size);
    cmd->reply_array(ctx, e->argc);
    for (int i = 0; i < e->argc; i++)
        cmd->reply_bulk(ctx, e->argv[i], e->lens[i]);
    cmd->reply_bulk(ctx, e->peer, strlen(e->peer));
    cmd->reply_bulk(ctx, e->name, strlen(e->name));
}

static void pm_log_help(keel_ctx *ctx) {
    static const char *const help[] = {
        "PAYLOAD.LOG <subcommand> [<arg> ...]. Subcommands are:",
        "GET <count> <type>",
        "    Return the newest <count> entries of the <type> log (-1: all). <type> is",
        "    large-request or large-reply. Entries are made of: id, timestamp (unix",
        "    seconds), size in bytes, arguments array, client IP and port, client name.",
        "LEN <type>",
        "    Return the number of entries in the <type> log.",
        "RESET <type>",
        "    Empty the <type> log.",
        "HELP",
        "    Print this help.",
    };
    pm_api->command->reply_array(ctx, (long long)(sizeof(help) / sizeof(help[0])));
    for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++)
        pm_api->command->reply_simple(ctx, help[i]);
}

void pm_cmd_log(keel_ctx *ctx) {
    const keel_api_command *cmd = pm_api->command;
    int argc = cmd->argc(ctx);
    size_t len;
    const char *sub = cmd->argv(ctx, 1, &len);
    int type;
    if (pm_ieq(sub, len, "help") && argc == 2) {
        pm_log_help(ctx);
    } else if (pm_ieq(sub, len, "get") && argc == 4) {
        long long count;
        if (cmd->arg_ll(ctx, 2, &count) != KEEL_OK || count < -1) {
            cmd->reply_error(ctx, "ERR count should be greater than or equal to -1");
            return;
        }
        if ((type = pm_log_type(ctx, 3)) < 0) return;
        pm_log *l = &logs[type];
        if (count == -1 || count > l->len) count = l->len;
        cmd->reply_array(ctx, count);
        pm_entry *e = l->head;
        for (long long i = 0; i < count; i++, e = e->next)
            pm_reply_entry(ctx, e);
    } else if (pm_ieq(sub, len, "len") && argc == 3) {
        if ((type = pm_log_type(ctx, 2)) < 0) return;
        cmd->reply_int(ctx, logs[type].len);
    } else if (pm_ieq(sub, len, "reset") && argc == 3) {
        if ((type = pm_log_type(ctx, 2)) < 0) return;
        pm_log_reset(type);
        cmd->reply_ok(ctx);
    } else {
        char err[200];
        snprintf(err, sizeof(err),
                 "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try "
                 "PAYLOAD.LOG HELP.",
                 (int)(len > 64 ? 64 : len), sub ? sub : "");
        cmd->reply_error(ctx, err);
    }
}
