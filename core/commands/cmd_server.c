/* cmd_server.c -- connection and server commands: PING, ECHO, HELLO, AUTH,
 * QUIT, RESET, CLIENT, TIME, SHUTDOWN, SAVE/BGSAVE/LASTSAVE (which
 * answer without persistence), and the table entry for SLOWLOG, whose body
 * lives with the slow log. COMMAND is in cmd_command.c, CONFIG in
 * cmd_config.c, DEBUG in cmd_debug.c, INFO in server/info.c. */
#include "commands/commands.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/log.h"
#include "config/config.h"
#include "io/io_threads.h"
#include "commands/multi.h"
#include "session/blocking.h"
#include "session/busy.h"
#include "session/call.h"
#include "session/pubsub.h"
#include "session/monitor.h"
#include "session/pause.h"
#include "session/reply.h"
#include "session/slowlog.h"
#include "session/tracking.h"

#include <string.h>

static void cmd_ping(client *c) {
    if (c->argc > 2) {
        reply_wrong_arity(c);
        return;
    }
    /* A subscribed RESP2 connection reads arrays: PING answers one there,
     * ["pong", argument or ""], as Valkey does. */
    if ((c->flags & CLIENT_PUBSUB) && c->resp == 2) {
        reply_array(c, 2);
        reply_bulk(c, "pong", 4);
        if (c->argc == 2)
            reply_bulk(c, c->argv[1].ptr, c->argv[1].len);
        else
            reply_bulk(c, "", 0);
    } else if (c->argc == 2) {
        reply_bulk(c, c->argv[1].ptr, c->argv[1].len);
    } else {
        reply_simple(c, "PONG");
    }
}

static void cmd_echo(client *c) {
    reply_bulk(c, c->argv[1].ptr, c->argv[1].len);
}

static void cmd_time(client *c) {
    uint64_t us = call_time_us();
    reply_array(c, 2);
    reply_bulk_ll(c, (long long)(us / 1000000));
    reply_bulk_ll(c, (long long)(us % 1000000));
}

/* ---- authentication ---- */

static int auth_check(client *c, const karg *user, const karg *pass) {
    if (user && !karg_eq(user, "default")) return 0;
    if (!session_opts()->requirepass.ptr) return user != NULL; /* default user has nopass */
    /* Compare in time independent of where the first difference is. */
    size_t n = session_opts()->requirepass.len;
    unsigned char diff = pass->len != n;
    for (size_t i = 0; i < pass->len; i++) diff |= (unsigned char)(pass->ptr[i] ^ session_opts()->requirepass.ptr[i % (n ? n : 1)]);
    return diff == 0;
}

static void auth_success(client *c) {
    c->flags |= CLIENT_AUTHENTICATED;
    call_client_event(c, CALL_EVENT_AUTH);
}

static void cmd_auth(client *c) {
    for (int i = 1; i < c->argc; i++) client_redact_arg(c, i);
    if (c->argc > 3) {
        reply_syntax_error(c);
        return;
    }
    if (c->argc == 2 && !session_opts()->requirepass.ptr) {
        reply_error(c, "ERR AUTH <password> called without any password configured for the default "
                       "user. Are you sure your configuration is correct?");
        return;
    }
    const karg *user = c->argc == 3 ? &c->argv[1] : NULL;
    if (auth_check(c, user, &c->argv[c->argc - 1])) {
        auth_success(c);
        reply_ok(c);
    } else {
        reply_error(c, "WRONGPASS invalid username-password pair or user is disabled.");
    }
}

static int client_name_valid(const karg *name) {
    for (size_t i = 0; i < name->len; i++)
        if (name->ptr[i] < '!' || name->ptr[i] > '~') return 0;
    return 1;
}

static int client_set_name(client *c, const karg *name) {
    if (!client_name_valid(name)) {
        reply_error(c, "ERR Client names cannot contain spaces, newlines or special characters.");
        return 0;
    }
    km_free(c->name);
    c->name = name->len ? km_strndup(name->ptr, name->len) : NULL;
    return 1;
}

static void hello_reply(client *c) {
    reply_map(c, 7);
    reply_bulk_cstr(c, "server");
    reply_bulk_cstr(c, "keel");
    reply_bulk_cstr(c, "version");
    reply_bulk_cstr(c, KEEL_REDIS_COMPAT_VERSION);
    reply_bulk_cstr(c, "proto");
    reply_int(c, c->resp);
    reply_bulk_cstr(c, "id");
    reply_int(c, (long long)c->id);
    reply_bulk_cstr(c, "mode");
    reply_bulk_cstr(c, "standalone");
    reply_bulk_cstr(c, "role");
    reply_bulk_cstr(c, "master");
    reply_bulk_cstr(c, "modules");
    reply_array(c, 0);
}

static void cmd_hello(client *c) {
    long long ver = 0;
    if (c->argc >= 2) {
        if (!str_to_ll(c->argv[1].ptr, c->argv[1].len, &ver)) {
            reply_error(c, "ERR Protocol version is not an integer or out of range");
            return;
        }
        if (ver < 2 || ver > 3) {
            reply_error(c, "NOPROTO unsupported protocol version");
            return;
        }
    }
    const karg *user = NULL, *pass = NULL, *name = NULL;
    for (int i = 2; i < c->argc; i++) {
        int left = c->argc - i - 1;
        if (karg_eq(&c->argv[i], "auth") && left >= 2) {
            client_redact_arg(c, i + 1);
            client_redact_arg(c, i + 2);
            user = &c->argv[i + 1];
            pass = &c->argv[i + 2];
            i += 2;
        } else if (karg_eq(&c->argv[i], "setname") && left >= 1) {
            name = &c->argv[++i];
        } else {
            reply_errorf(c, "ERR Syntax error in HELLO option '%.*s'", (int)c->argv[i].len, c->argv[i].ptr);
            return;
        }
    }
    if (user && !auth_check(c, user, pass)) {
        reply_error(c, "WRONGPASS invalid username-password pair or user is disabled.");
        return;
    }
    if (user) auth_success(c);
    if (session_opts()->requirepass.ptr && !(c->flags & CLIENT_AUTHENTICATED)) {
        reply_error(c, "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
                       "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
                       "select the RESP protocol version at the same time");
        return;
    }
    if (name && !client_set_name(c, name)) return;
    if (ver) c->resp = (int)ver;
    hello_reply(c);
}

static void cmd_quit(client *c) {
    reply_ok(c);
    c->flags |= CLIENT_CLOSE_AFTER_REPLY;
}

static void cmd_reset(client *c) {
    multi_discard_state(c);
    multi_unwatch_all(c);
    tracking_disable(c);
    pubsub_client_release(c);
    monitor_forget(c);
    client_set_db(c, 0);
    c->resp = 2;
    km_free(c->name);
    c->name = NULL;
    if (session_opts()->requirepass.ptr) c->flags &= ~CLIENT_AUTHENTICATED;
    c->flags &= ~(CLIENT_NO_EVICT | CLIENT_NO_TOUCH | CLIENT_READONLY | CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP_NEXT);
    reply_simple(c, "RESET");
}

/* READONLY and READWRITE set and clear a connection's cluster read-only
 * mode. Outside cluster mode Valkey accepts both (clients and valkey-cli
 * send READONLY unconditionally) and the flag changes nothing but CLIENT
 * LIST's 'r'; so here, until cluster mode exists. */
static void cmd_readonly(client *c) {
    c->flags |= CLIENT_READONLY;
    reply_ok(c);
}

static void cmd_readwrite(client *c) {
    c->flags &= ~CLIENT_READONLY;
    reply_ok(c);
}

/* ---- CLIENT ---- */

/* Client classes of CLIENT LIST/KILL TYPE: a subscribed client is in the
 * pubsub class, not normal (Valkey's getClientType); Keel has no master
 * or replica clients. */
enum { CLIENT_TYPE_ANY, CLIENT_TYPE_NORMAL, CLIENT_TYPE_PUBSUB, CLIENT_TYPE_NONE };

/* Parses a TYPE value; -1 after replying an error. */
static int client_type_parse(client *c, const karg *t) {
    if (karg_eq(t, "normal")) return CLIENT_TYPE_NORMAL;
    if (karg_eq(t, "pubsub")) return CLIENT_TYPE_PUBSUB;
    if (karg_eq(t, "master") || karg_eq(t, "replica") || karg_eq(t, "slave"))
        return CLIENT_TYPE_NONE;
    reply_errorf(c, "ERR Unknown client type '%.*s'", (int)t->len, t->ptr);
    return -1;
}

static int client_type_matches(const client *x, int type) {
    if (type == CLIENT_TYPE_ANY) return 1;
    if (type == CLIENT_TYPE_NONE) return 0;
    return (type == CLIENT_TYPE_PUBSUB) == ((x->flags & CLIENT_PUBSUB) != 0);
}

/* CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...]. Returns 0
 * after replying an error. */
static int client_list_filter(client *c, int *type, long long **ids, int *nids) {
    *type = CLIENT_TYPE_ANY;
    *ids = NULL;
    *nids = 0;
    if (c->argc == 2) return 1;
    if (c->argc == 4 && karg_eq(&c->argv[2], "type")) {
        *type = client_type_parse(c, &c->argv[3]);
        return *type >= 0;
    }
    if (c->argc >= 4 && karg_eq(&c->argv[2], "id")) {
        *ids = km_alloc(sizeof(long long) * (size_t)(c->argc - 3));
        for (int i = 3; i < c->argc; i++) {
            long long id;
            if (!str_to_ll(c->argv[i].ptr, c->argv[i].len, &id) || id <= 0) {
                km_free(*ids);
                reply_error(c, "ERR Invalid client ID");
                return 0;
            }
            (*ids)[(*nids)++] = id;
        }
        return 1;
    }
    reply_syntax_error(c);
    return 0;
}

static int client_id_listed(const client *x, const long long *ids, int nids) {
    if (!ids) return 1;
    for (int i = 0; i < nids; i++)
        if ((long long)x->id == ids[i]) return 1;
    return 0;
}

static void client_list_reply(client *c, client *only) {
    int type = CLIENT_TYPE_ANY, nids = 0;
    long long *ids = NULL;
    if (!only && !client_list_filter(c, &type, &ids, &nids)) return;
    size_t cap = 4096, len = 0;
    char *buf = km_alloc(cap);
    io_threads_quiesce(); /* the lines read the query buffers of clients in flight */
    for (client *x = only ? only : client_list_head(); x; x = only ? NULL : x->next) {
        if ((x->flags & CLIENT_CLOSE_ASAP) || !client_id_listed(x, ids, nids) ||
            !client_type_matches(x, type))
            continue;
        size_t n;
        while ((n = client_info_line(x, buf + len, cap - len)) >= cap - len) buf = km_realloc(buf, cap *= 2);
        len += n;
    }
    reply_verbatim(c, buf, len, "txt");
    km_free(buf);
    km_free(ids);
}

typedef struct kill_filter {
    long long id;
    const karg *addr;
    const karg *laddr;
    int skipme;
    int type;          /* CLIENT_TYPE_* */
    long long max_age; /* seconds; 0: any age */
} kill_filter;

static int kill_addr_match(client *x, const karg *want, int remote) {
    char addr[128];
    if (!x->conn) return 0;
    conn_addr(x->conn, addr, sizeof(addr), remote);
    return strlen(addr) == want->len && memcmp(addr, want->ptr, want->len) == 0;
}

static int kill_matches(client *c, client *x, const kill_filter *f) {
    if (!client_type_matches(x, f->type)) return 0;
    if (f->id && (long long)x->id != f->id) return 0;
    if (f->addr && !kill_addr_match(x, f->addr, 1)) return 0;
    if (f->laddr && !kill_addr_match(x, f->laddr, 0)) return 0;
    if (f->skipme && x == c) return 0;
    if (f->max_age && (event_cached_ms() - x->ctime) / 1000 < f->max_age) return 0;
    return 1;
}

static int kill_parse(client *c, kill_filter *f) {
    memset(f, 0, sizeof(*f));
    f->skipme = 1;
    for (int i = 2; i + 1 < c->argc; i += 2) {
        const karg *opt = &c->argv[i], *val = &c->argv[i + 1];
        if (karg_eq(opt, "id")) {
            if (!str_to_ll(val->ptr, val->len, &f->id) || f->id <= 0) {
                reply_error(c, "ERR client-id should be greater than 0");
                return 0;
            }
        } else if (karg_eq(opt, "maxage")) {
            if (!str_to_ll(val->ptr, val->len, &f->max_age)) {
                reply_error(c, "ERR maxage is not an integer or out of range");
                return 0;
            }
            if (f->max_age <= 0) {
                reply_error(c, "ERR maxage should be greater than 0");
                return 0;
            }
        } else if (karg_eq(opt, "user")) {
            /* Every connection is the default user's (no ACL users yet). */
            if (val->len != 7 || memcmp(val->ptr, "default", 7) != 0) {
                reply_errorf(c, "ERR No such user '%.*s'", (int)(val->len > 128 ? 128 : val->len), val->ptr);
                return 0;
            }
        } else if (karg_eq(opt, "addr")) {
            f->addr = val;
        } else if (karg_eq(opt, "laddr")) {
            f->laddr = val;
        } else if (karg_eq(opt, "skipme") && (karg_eq(val, "yes") || karg_eq(val, "no"))) {
            f->skipme = karg_eq(val, "yes");
        } else if (karg_eq(opt, "type")) {
            f->type = client_type_parse(c, val);
            if (f->type < 0) return 0;
        } else {
            reply_syntax_error(c);
            return 0;
        }
    }
    if (c->argc % 2 != 0) {
        reply_syntax_error(c);
        return 0;
    }
    return 1;
}

static void client_kill(client *c) {
    kill_filter f;
    int old_form = c->argc == 3;
    if (old_form) {
        memset(&f, 0, sizeof(f));
        f.addr = &c->argv[2];
    } else if (!kill_parse(c, &f)) {
        return;
    }
    long long killed = 0;
    for (client *x = client_list_head(); x; x = x->next) {
        if ((x->flags & CLIENT_CLOSE_ASAP) || !kill_matches(c, x, &f)) continue;
        if (x == c) c->flags |= CLIENT_CLOSE_AFTER_REPLY;
        else client_free_async(x);
        killed++;
    }
    if (!old_form) reply_int(c, killed);
    else if (killed) reply_ok(c);
    else reply_error(c, "ERR No such client");
}

static void client_help(client *c) {
    static const char *const help[] = {
        "CACHING (YES|NO)",
        "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
        "GETREDIR",
        "    Return the client ID we are redirecting to when tracking is enabled.",
        "GETNAME",
        "    Return the name of the current connection.",
        "ID",
        "    Return the ID of the current connection.",
        "INFO",
        "    Return information about the current client connection.",
        "KILL <ip:port> | <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options: ID <id>, ADDR <ip:port>, LADDR <ip:port>, TYPE <type>,",
        "    USER <username>, SKIPME (YES|NO), MAXAGE <seconds>.",
        "LIST [TYPE normal] [ID <id> [<id> ...]]",
        "    Return information about client connections.",
        "NO-EVICT (ON|OFF)",
        "    Protect the current client connection from eviction.",
        "NO-TOUCH (ON|OFF)",
        "    Leave the keys' access times alone (TOUCH still updates them).",
        "PAUSE <timeout> [WRITE|ALL]",
        "    Suspend all, or just write, clients for <timeout> milliseconds.",
        "REPLY (ON|OFF|SKIP)",
        "    Control the replies sent to the current connection.",
        "SETINFO <option> <value>",
        "    Set client meta attr (lib-name, lib-ver).",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
        "         [OPTIN] [OPTOUT] [NOLOOP]",
        "    Control server assisted client side caching.",
        "TRACKINGINFO",
        "    Report tracking status for the current connection.",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "    Unblock the specified blocked client.",
        "UNPAUSE",
        "    Stop the current client pause, resuming traffic.",
    };
    reply_help(c, "CLIENT", help, K_ARRAY_LEN(help));
}

/* CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 if the client was blocked. */
static void client_unblock(client *c) {
    int as_error = 0;
    if (c->argc > 4) {
        reply_error(c, "ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.");
        return;
    }
    if (c->argc == 4) {
        if (karg_eq(&c->argv[3], "error")) {
            as_error = 1;
        } else if (!karg_eq(&c->argv[3], "timeout")) {
            reply_error(c, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
            return;
        }
    }
    long long id;
    if (!arg_to_ll(c, &c->argv[2], &id)) return;
    client *target = id > 0 ? client_by_id((uint64_t)id) : NULL;
    reply_int(c, target && !(target->flags & CLIENT_CLOSE_ASAP) ? blocking_unblock(target, as_error) : 0);
}

static void client_id(client *c) {
    reply_int(c, (long long)c->id);
}

static void client_getname(client *c) {
    reply_bulk_cstr(c, c->name);
}

static void client_setname(client *c) {
    if (client_set_name(c, &c->argv[2])) reply_ok(c);
}

static void client_list(client *c) {
    client_list_reply(c, NULL);
}

static void client_info(client *c) {
    client_list_reply(c, c);
}

/* lib-name and lib-ver are shown in CLIENT LIST, which is split on spaces:
 * as in Valkey, only printable ASCII without blanks is accepted. An empty
 * value clears the field; RESET keeps both. */
static void client_setinfo(client *c) {
    const karg *attr = &c->argv[2], *val = &c->argv[3];
    char **slot = karg_eq(attr, "lib-name") ? &c->lib_name : karg_eq(attr, "lib-ver") ? &c->lib_ver : NULL;
    if (!slot) {
        reply_errorf(c, "ERR Unrecognized option '%.*s'", (int)(attr->len > 128 ? 128 : attr->len), attr->ptr);
        return;
    }
    for (size_t i = 0; i < val->len; i++) {
        if (val->ptr[i] < '!' || val->ptr[i] > '~') {
            reply_errorf(c, "ERR %.*s cannot contain spaces, newlines or special characters.",
                         (int)attr->len, attr->ptr);
            return;
        }
    }
    km_free(*slot);
    *slot = val->len ? km_strndup(val->ptr, val->len) : NULL;
    reply_ok(c);
}

/* CLIENT REPLY ON|OFF|SKIP: OFF and SKIP get no reply themselves. */
static void client_reply(client *c) {
    const karg *mode = &c->argv[2];
    if (karg_eq(mode, "on")) {
        c->flags &= ~(CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP | CLIENT_REPLY_SKIP_NEXT);
        reply_ok(c);
    } else if (karg_eq(mode, "off")) {
        c->flags |= CLIENT_REPLY_OFF;
    } else if (karg_eq(mode, "skip")) {
        if (!(c->flags & CLIENT_REPLY_OFF)) c->flags |= CLIENT_REPLY_SKIP_NEXT;
    } else {
        reply_syntax_error(c);
    }
}

/* CLIENT NO-EVICT and NO-TOUCH: ON or OFF sets or clears one flag. */
static void client_flag_switch(client *c, uint32_t flag) {
    if (karg_eq(&c->argv[2], "on")) c->flags |= flag;
    else if (karg_eq(&c->argv[2], "off")) c->flags &= ~flag;
    else {
        reply_syntax_error(c);
        return;
    }
    reply_ok(c);
}

static void client_no_evict(client *c) {
    client_flag_switch(c, CLIENT_NO_EVICT);
}

static void client_no_touch(client *c) {
    client_flag_switch(c, CLIENT_NO_TOUCH);
}

/* ---- SHUTDOWN, and the persistence commands Keel answers without it ---- */

/* Keel keeps its dataset in memory only: there is no RDB or AOF to write.
 * Commands that would save answer this rather than look successful. */
#define ERR_NO_PERSISTENCE "ERR persistence is not available in Keel: nothing was saved"
#define ERR_SHUTDOWN_SAVE                                                                          \
    ERR_NO_PERSISTENCE ", the server keeps running (SHUTDOWN NOSAVE, or SAVE FORCE, exits anyway)"

#define SHUTDOWN_NOSAVE (1 << 0)
#define SHUTDOWN_SAVE (1 << 1)
#define SHUTDOWN_NOW (1 << 2)
#define SHUTDOWN_FORCE (1 << 3)
#define SHUTDOWN_ABORT (1 << 4)

/* Valkey 8.0.1's parsing: any order, repeats allowed; NOSAVE with SAVE, or
 * ABORT with any other option, is a syntax error. Returns -1 after
 * replying an error. */
static int shutdown_parse(client *c) {
    static const struct {
        const char *name;
        int flag;
    } opts[] = {{"nosave", SHUTDOWN_NOSAVE},
                {"save", SHUTDOWN_SAVE},
                {"now", SHUTDOWN_NOW},
                {"force", SHUTDOWN_FORCE},
                {"abort", SHUTDOWN_ABORT}};
    int flags = 0;
    for (int i = 1; i < c->argc; i++) {
        size_t j = 0;
        while (j < K_ARRAY_LEN(opts) && !karg_eq(&c->argv[i], opts[j].name))
            j++;
        if (j == K_ARRAY_LEN(opts)) {
            reply_syntax_error(c);
            return -1;
        }
        flags |= opts[j].flag;
    }
    int conflict = (flags & SHUTDOWN_NOSAVE) && (flags & SHUTDOWN_SAVE);
    if (conflict || ((flags & SHUTDOWN_ABORT) && flags != SHUTDOWN_ABORT)) {
        reply_syntax_error(c);
        return -1;
    }
    return flags;
}

/* NOW needs no handling: there are no replicas to wait for. Without SAVE
 * there is nothing to save (Keel has no save points), so SHUTDOWN exits as
 * Valkey's does; SAVE fails as Valkey's failed save does, unless FORCE. */
static void cmd_shutdown(client *c) {
    int flags = shutdown_parse(c);
    if (flags < 0) return;
    if (flags & SHUTDOWN_ABORT) {
        reply_error(c, "ERR No shutdown in progress.");
        return;
    }
    /* A long command is still running: as Valkey, only an exit that saves
     * nothing may cut it short. */
    if (!(flags & SHUTDOWN_NOSAVE) && busy_refusal()) {
        reply_error(c, busy_refusal());
        return;
    }
    if ((flags & SHUTDOWN_SAVE) && !(flags & SHUTDOWN_FORCE)) {
        log_write(LL_WARNING, "SHUTDOWN SAVE refused: persistence is not available, can't exit.");
        reply_error(c, ERR_SHUTDOWN_SAVE);
        return;
    }
    if (flags & SHUTDOWN_SAVE)
        log_write(LL_WARNING, "Nothing can be saved (no persistence). Exit anyway.");
    log_write(LL_WARNING, "User requested shutdown...");
    commands_env_get()->shutdown();
    c->flags |= CLIENT_CLOSE_AFTER_REPLY;
}

static void cmd_save(client *c) {
    reply_error(c, ERR_NO_PERSISTENCE);
}

/* BGSAVE [SCHEDULE]: the option is checked as Valkey does, then refused
 * like SAVE. */
static void cmd_bgsave(client *c) {
    if (c->argc > 2 || (c->argc == 2 && !karg_eq(&c->argv[1], "schedule"))) {
        reply_syntax_error(c);
        return;
    }
    reply_error(c, ERR_NO_PERSISTENCE);
}

/* Valkey answers its start-up time until the first save; Keel never saves. */
static void cmd_lastsave(client *c) {
    reply_int(c, *commands_env_get()->lastsave);
}


#define SRV_CMD(n, p, a, f, s, v) \
    {.name = n, .proc = p, .arity = a, .flags = f, .group = "server", .summary = s, .since = v}
#define CONN_CMD(n, p, a, f, s, v) \
    {.name = n, .proc = p, .arity = a, .flags = f, .group = "connection", .summary = s, .since = v}
#define CLUSTER_CMD(n, p, a, f, s, v) \
    {.name = n, .proc = p, .arity = a, .flags = f, .group = "cluster", .summary = s, .since = v}
#define SUB(n, p, a, f, s) {.name = n, .proc = p, .arity = a, .flags = f, .summary = s}
#define SUB_END {.name = NULL}

static command client_subcommands[] = {
    SUB("id", client_id, 2, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, "Returns the unique client ID of the connection."),
    SUB("getname", client_getname, 2, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, "Returns the name of the connection."),
    SUB("setname", client_setname, 3, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, "Sets the connection name."),
    SUB("list", client_list, -2, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, "Lists open connections."),
    SUB("info", client_info, 2, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, "Returns information about the connection."),
    SUB("kill", client_kill, -3, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, "Terminates open connections."),
    SUB("setinfo", client_setinfo, 4, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, "Sets information specific to the client or connection."),
    SUB("no-touch", client_no_touch, 3, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
        "Keeps this connection's commands from changing the keys' last access times (TOUCH still does)."),
    SUB("reply", client_reply, 3, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, "Turns the replies to this connection on or off, or skips the next one."),
    SUB("no-evict", client_no_evict, 3, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, "Sets the client eviction mode of the connection."),
    SUB("unblock", client_unblock, -3, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
        "Unblocks a client blocked by a blocking command from a different connection."),
    SUB("pause", pause_client_pause_command, -3, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
        "Suspends commands processing."),
    SUB("unpause", pause_client_unpause_command, 2, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
        "Resumes processing commands from paused clients."),
    SUB("tracking", tracking_client_tracking, -3, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
        "Controls server-assisted client-side caching for the connection."),
    SUB("caching", tracking_client_caching, 3, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
        "Instructs the server whether to track the keys in the next request."),
    SUB("getredir", tracking_client_getredir, 2, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
        "Returns the client ID to which the connection's tracking notifications are redirected."),
    SUB("trackinginfo", tracking_client_trackinginfo, 2, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
        "Returns information about server-assisted client-side caching for the connection."),
    SUB("help", client_help, 2, CMD_LOADING | CMD_STALE, "Returns helpful text about the different subcommands."),
    SUB_END,
};

static command slowlog_subcommands[] = {
    SUB("get", slowlog_get_command, -2, CMD_ADMIN | CMD_LOADING | CMD_STALE, "Returns the slow log's entries."),
    SUB("len", slowlog_len_command, 2, CMD_ADMIN | CMD_LOADING | CMD_STALE, "Returns the number of entries in the slow log."),
    SUB("reset", slowlog_reset_command, 2, CMD_ADMIN | CMD_LOADING | CMD_STALE, "Clears all entries from the slow log."),
    SUB("help", slowlog_help_command, 2, CMD_LOADING | CMD_STALE, "Show helpful text about the different subcommands."),
    SUB_END,
};

static command server_table[] = {
    CONN_CMD("ping", cmd_ping, -1, CMD_FAST | CMD_PUBSUB_CONTEXT, "Returns the server's liveliness response.", "1.0.0"),
    CONN_CMD("echo", cmd_echo, 2, CMD_FAST | CMD_LOADING | CMD_STALE, "Returns the given string.", "1.0.0"),
    CONN_CMD("hello", cmd_hello, -1, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST | CMD_NO_AUTH | CMD_ALLOW_BUSY,
             "Handshakes with the server.", "6.0.0"),
    CONN_CMD("auth", cmd_auth, -2, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST | CMD_NO_AUTH | CMD_ALLOW_BUSY,
             "Authenticates the connection.", "1.0.0"),
    CONN_CMD("quit", cmd_quit, -1, CMD_TXN_CONTROL | CMD_PUBSUB_CONTEXT | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST | CMD_NO_AUTH | CMD_ALLOW_BUSY,
             "Closes the connection.", "1.0.0"),
    CONN_CMD("reset", cmd_reset, 1, CMD_TXN_CONTROL | CMD_PUBSUB_CONTEXT | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST | CMD_NO_AUTH | CMD_ALLOW_BUSY,
             "Resets the connection.", "6.2.0"),
    {.name = "client", .arity = -2, .group = "connection", .since = "2.4.0",
     .summary = "A container for client connection commands.", .subcommands = client_subcommands},
    {.name = "slowlog", .arity = -2, .group = "server", .since = "2.2.12",
     .summary = "A container for slow log commands.", .subcommands = slowlog_subcommands},
    CLUSTER_CMD("readonly", cmd_readonly, 1, CMD_FAST | CMD_LOADING | CMD_STALE,
                "Lets a connection read from a replica node (no cluster mode yet: only sets the flag).", "3.0.0"),
    CLUSTER_CMD("readwrite", cmd_readwrite, 1, CMD_FAST | CMD_LOADING | CMD_STALE,
                "Ends the read-only mode of a connection (no cluster mode yet: only clears the flag).", "3.0.0"),
    SRV_CMD("time", cmd_time, 1, CMD_LOADING | CMD_STALE | CMD_FAST, "Returns the server time.", "2.6.0"),
    SRV_CMD("shutdown", cmd_shutdown, -1, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_NO_MULTI | CMD_ALLOW_BUSY,
            "Synchronously saves the database(s) to disk and shuts down the server.", "1.0.0"),
    SRV_CMD("save", cmd_save, 1, CMD_ADMIN | CMD_NOSCRIPT | CMD_NO_MULTI,
            "Saves the dataset to disk and waits (refused: Keel has no persistence).", "1.0.0"),
    SRV_CMD("bgsave", cmd_bgsave, -1, CMD_ADMIN | CMD_NOSCRIPT,
            "Saves the dataset to disk in the background (refused: Keel has no persistence).", "1.0.0"),
    SRV_CMD("lastsave", cmd_lastsave, 1, CMD_LOADING | CMD_STALE | CMD_FAST,
            "The Unix time of the last save (Keel never saves: its start time).", "1.0.0"),
};

const command_family commands_server = {server_table, K_ARRAY_LEN(server_table)};
