/* module_call.c -- the call group of the API: a module command running other
 * commands and reading their replies as trees, command flags by name, and
 * the caller's database.
 *
 * A call runs on a capture client (connection-less, on no client list), one
 * per nesting depth, created at the first call of that depth and kept: a
 * call costs no client allocation, and its argument array and reply buffer
 * are reused. The capture client takes the calling client's database at
 * the first call of each calling command (the command's context remembers
 * where its last call left it, so a SELECT lasts for the command's later
 * calls and never reaches the client). Any other connection state a called
 * command sets (CLIENT TRACKING, NO-TOUCH, SETNAME, REPLY ...) is dropped
 * after its call, as Valkey releases a module's temporary client: it would
 * otherwise hold for every later call of any module at that depth. The
 * reply bytes are parsed into a tree of one allocation
 * (protocol/resp_tree.h).
 *
 * Refusals happen before anything runs, with Valkey's script messages for a
 * KEEL_CALL_SCRIPT call; what the command itself refuses (a filter) runs
 * through the capture client's usual checks, except the memory limit (a
 * call never evicts: KEEL_CALL_CHECK_OOM refuses instead) and CLIENT PAUSE
 * (the calling command was the one held). */
#include "commands/commands.h"
#include "common/common.h"
#include "common/kmem.h"
#include "keyspace/evict.h"
#include "module/module_internal.h"
#include "protocol/resp_tree.h"
#include "session/call.h"
#include "session/command.h"
#include "session/monitor.h"
#include "session/reply.h"
#include "session/tracking.h"

#include <stdio.h>
#include <string.h>

/* Deeper nesting (a module command calling itself) is refused. */
#define MODULE_CALL_DEPTH_MAX 16

typedef struct call_slot {
    client *c;
    reply_buf out;
} call_slot;

static call_slot slots[MODULE_CALL_DEPTH_MAX];
static int call_depth;

/* ---- refusals ---- */

/* What cannot run nested whatever the flags: a transaction or a
 * subscription would outlive the call on the capture client, and so would
 * a monitor. */
static int call_nestable(const command *cmd, uint32_t flags) {
    if (flags & (CMD_TXN_CONTROL | CMD_TXN_EXEC)) return 0;
    if ((flags & CMD_PUBSUB) && (flags & CMD_PUBSUB_CONTEXT)) return 0;
    return !(flags & CMD_NOSCRIPT) || strcmp(cmd->fullname, "monitor") != 0;
}

static int call_arity_ok(const command *cmd, int argc) {
    return cmd->arity > 0 ? argc == cmd->arity : argc >= -cmd->arity;
}

/* The command argv names (a container's subcommand), or NULL. */
static command *call_resolve(const client *cc) {
    command *cmd = command_lookup(cc->argv[0].ptr, cc->argv[0].len);
    if (!cmd || !cmd->subcommands || cc->argc < 2) return cmd;
    return command_lookup_sub(cmd, cc->argv[1].ptr, cc->argv[1].len);
}

/* The refusal code for running argv on cc (KEEL_CALL_RAN: none) and its
 * message; NULL message: the capture client's own checks word it. */
static int call_check(client *cc, const keel_ctx *ctx, uint32_t call_flags, const char **msg) {
    int script = (call_flags & KEEL_CALL_SCRIPT) != 0;
    command *cmd = call_resolve(cc);
    *msg = NULL;
    if (!cmd) {
        if (script) *msg = "ERR Unknown command called from script";
        return KEEL_CALL_UNKNOWN;
    }
    cc->cmd = cmd;
    if (!call_arity_ok(cmd, cc->argc)) {
        if (script) *msg = "ERR Wrong number of args calling command from script";
        return KEEL_CALL_ARITY;
    }
    uint32_t flags = command_call_flags(cmd, cc);
    if (script && (flags & CMD_NOSCRIPT) && !*commands_env_get()->disable_deny_scripts) {
        *msg = "ERR This Redis command is not allowed from script";
        return KEEL_CALL_NOSCRIPT;
    }
    if (!call_nestable(cmd, flags)) {
        *msg = "ERR This command is not allowed from a module call";
        return KEEL_CALL_DENIED;
    }
    /* Valkey's read-only scripts count may-replicate commands as writes. */
    if ((call_flags & KEEL_CALL_NO_WRITES) && (flags & (CMD_WRITE | CMD_MAY_REPLICATE))) {
        *msg = script ? "ERR Write commands are not allowed from read-only scripts."
                      : "ERR Write commands are not allowed from this call";
        return KEEL_CALL_WRITE;
    }
    /* Once the command wrote, stopping it halfway would be worse than the
     * memory: Valkey's scripts check only until their first write. */
    if ((call_flags & KEEL_CALL_CHECK_OOM) && (flags & CMD_DENYOOM) && !ctx->call_wrote &&
        evict_over_maxmemory()) {
        *msg = "OOM command not allowed when used memory > 'maxmemory'.";
        return KEEL_CALL_OOM;
    }
    return KEEL_CALL_RAN;
}

/* ---- running ---- */

static client *call_client(int depth) {
    if (!slots[depth].c) slots[depth].c = client_create_detached();
    return slots[depth].c;
}

static void call_set_args(client *cc, const keel_call_args *a) {
    if (a->argc > cc->argv_cap) {
        cc->argv = km_realloc(cc->argv, sizeof(karg) * (size_t)a->argc);
        cc->argv_cap = a->argc;
    }
    for (int i = 0; i < a->argc; i++)
        cc->argv[i] = (karg){.ptr = a->argv[i], .len = a->lens[i], .obj = NULL};
    cc->argc = a->argc;
}

/* The caller's state the capture client takes for one call. */
static void call_prepare(client *cc, keel_ctx *ctx, uint32_t call_flags) {
    client *caller = ctx->c;
    client_set_db(cc, ctx->call_db ? ctx->call_db - 1 : caller->db->id);
    cc->resp = (call_flags & KEEL_CALL_RESP3) ? 3 : 2;
    cc->origin = ctx->mod->name;
    /* The caller runs a command, so it passed AUTH. A script's call is
     * told apart by the commands whose replies Valkey makes deterministic
     * for scripts (SORT BY a constant). */
    cc->flags |= CLIENT_AUTHENTICATED;
    if (call_flags & KEEL_CALL_SCRIPT)
        cc->flags |= CLIENT_SCRIPT;
    else
        cc->flags &= ~CLIENT_SCRIPT;
}

/* What a called command left on the capture client beyond its database
 * (which lasts for the calling command's later calls). MULTI, WATCH,
 * SUBSCRIBE and MONITOR never run here (call_nestable). */
static void call_forget_state(client *cc) {
    if (cc->tracking || (cc->flags & CLIENT_TRACKING)) tracking_disable(cc);
    km_free(cc->name);
    km_free(cc->lib_name);
    km_free(cc->lib_ver);
    cc->name = cc->lib_name = cc->lib_ver = NULL;
    cc->flags &= ~(CLIENT_NO_EVICT | CLIENT_NO_TOUCH | CLIENT_READONLY | CLIENT_REPLY_OFF |
                   CLIENT_REPLY_SKIP | CLIENT_REPLY_SKIP_NEXT);
}

/* A refusal is an error reply of the capture client: counted in errorstats
 * and the command's rejected calls, as Valkey counts a script's. */
static void call_refuse(client *cc, const char *msg) {
    if (cc->cmd) cc->cmd->rejected_calls++;
    reply_error(cc, msg);
    reply_take(cc, &slots[call_depth].out);
}

/* Reads of a read-only command are tracked for the calling client. */
static void call_track(client *caller, client *cc, int argc) {
    if (!(caller->flags & CLIENT_TRACKING) || !cc->cmd || !(cc->cmd_flags & CMD_READONLY)) return;
    cc->argc = argc;
    tracking_remember_keys(caller, cc, cc->cmd);
    cc->argc = 0;
}

/* Runs the checked call on the slot's client. A rejection by the capture
 * client's own checks can only be a filter's here (the others were made
 * before or cannot apply): DENIED. The rejection is read from the capture
 * client itself: the command's rejected-calls counter also counts other
 * clients refused meanwhile (BUSY, during the called command's busy
 * phase). */
static int call_execute(keel_ctx *ctx, call_slot *slot, int code) {
    client *cc = slot->c;
    int argc = cc->argc;
    call_depth++;
    int alive = reply_capture_run(cc, cc->argc, cc->argv, &slot->out) == K_OK;
    call_depth--;
    int rejected = cc->cmd_rejected;
    if (!alive) slot->c = NULL; /* closed: freed with the closed clients */
    if (code != KEEL_CALL_RAN) return code;
    if (rejected) return KEEL_CALL_DENIED;
    if (cc->cmd_flags & CMD_WRITE) ctx->call_wrote = 1;
    if (alive) {
        ctx->call_db = cc->db->id + 1;
        call_track(ctx->c, cc, argc);
        call_forget_state(cc);
    }
    return code;
}

static int call_run(keel_ctx *ctx, const keel_call_args *a, keel_reply **reply) {
    /* The calling command shows in MONITOR before what it calls; a
     * callback's client (an unblock's) is not inside call(), which alone
     * ends an early feed, and its command was shown when it first ran. */
    if (K_UNLIKELY(monitor_active()) && (ctx->flags & MODULE_CTX_MAY_BUSY))
        monitor_feed_early(ctx->c);
    call_slot *slot = &slots[call_depth];
    client *cc = call_client(call_depth);
    slot->out.len = 0;
    call_set_args(cc, a);
    call_prepare(cc, ctx, a->flags);
    cc->cmd = NULL;
    const char *msg;
    int code = call_check(cc, ctx, a->flags, &msg);
    if (msg)
        call_refuse(cc, msg);
    else
        code = call_execute(ctx, slot, code);
    resp_node *tree = resp_tree_parse(slot->out.ptr, slot->out.len, NULL);
    /* Only a command that replied nothing (CLIENT REPLY OFF) leaves no
     * value: it reads as a null. */
    if (!tree) tree = resp_tree_parse("_\r\n", 3, NULL);
    *reply = (keel_reply *)tree;
    return code;
}

static int call_args_ok(const keel_call_args *a) {
    if (!a || a->size < sizeof(keel_call_args) || a->argc < 1 || !a->argv || !a->lens) return 0;
    for (int i = 0; i < a->argc; i++)
        if (!a->argv[i] && a->lens[i]) return 0;
    return 1;
}

static int api_call(keel_ctx *ctx, const keel_call_args *args, keel_reply **reply) {
    MODULE_ASSERT_MAIN();
    if (!reply) return KEEL_ERR;
    *reply = NULL;
    /* A call_flags hook runs while a call is being checked, in that
     * call's slot: a call of its own would overwrite the arguments. */
    if (!ctx || !ctx->c || ctx->phase != MODULE_PHASE_RUN || (ctx->flags & MODULE_CTX_FLAGS_HOOK) ||
        !call_args_ok(args))
        return KEEL_ERR;
    if (call_depth >= MODULE_CALL_DEPTH_MAX) {
        const char *msg = "ERR module calls nested too deep";
        *reply = (keel_reply *)resp_tree_line(RESP_TREE_ERROR, msg, strlen(msg));
        return KEEL_CALL_DENIED;
    }
    return call_run(ctx, args, reply);
}

/* Before the session layer's teardowns: freeing a client reaches into
 * them (tracking, pub/sub, pauses). */
void module_call_teardown(void) {
    for (int i = 0; i < MODULE_CALL_DEPTH_MAX; i++) {
        if (slots[i].c) client_free(slots[i].c);
        slots[i].c = NULL;
        reply_buf_free(&slots[i].out);
    }
}

/* ---- reading reply trees ---- */

static void api_reply_free(keel_reply *r) {
    resp_tree_free((resp_node *)r);
}

static int api_reply_type(const keel_reply *r) {
    static const int types[] = {
        [RESP_TREE_STRING] = KEEL_REPLY_STRING, [RESP_TREE_STATUS] = KEEL_REPLY_STATUS,
        [RESP_TREE_ERROR] = KEEL_REPLY_ERROR,   [RESP_TREE_INTEGER] = KEEL_REPLY_INTEGER,
        [RESP_TREE_NULL] = KEEL_REPLY_NULL,     [RESP_TREE_ARRAY] = KEEL_REPLY_ARRAY,
        [RESP_TREE_MAP] = KEEL_REPLY_MAP,       [RESP_TREE_SET] = KEEL_REPLY_SET,
        [RESP_TREE_DOUBLE] = KEEL_REPLY_DOUBLE, [RESP_TREE_BOOL] = KEEL_REPLY_BOOL,
        [RESP_TREE_BIGNUM] = KEEL_REPLY_BIGNUM, [RESP_TREE_VERBATIM] = KEEL_REPLY_VERBATIM,
    };
    return r ? types[((const resp_node *)r)->type] : KEEL_REPLY_NULL;
}

static long long api_reply_integer(const keel_reply *r) {
    const resp_node *n = (const resp_node *)r;
    return n && (n->type == RESP_TREE_INTEGER || n->type == RESP_TREE_BOOL) ? n->v.ll : 0;
}

static double api_reply_double(const keel_reply *r) {
    const resp_node *n = (const resp_node *)r;
    return n && n->type == RESP_TREE_DOUBLE ? n->v.d : 0;
}

static int node_is_string(const resp_node *n) {
    switch (n->type) {
    case RESP_TREE_STRING:
    case RESP_TREE_STATUS:
    case RESP_TREE_ERROR:
    case RESP_TREE_BIGNUM:
    case RESP_TREE_VERBATIM:
        return 1;
    default:
        return 0;
    }
}

static const char *api_reply_string(const keel_reply *r, size_t *len) {
    const resp_node *n = (const resp_node *)r;
    int ok = n && node_is_string(n);
    if (len) *len = ok ? n->len : 0;
    return ok ? n->v.str : NULL;
}

static const char *api_reply_format(const keel_reply *r) {
    const resp_node *n = (const resp_node *)r;
    return n && n->type == RESP_TREE_VERBATIM ? n->format : NULL;
}

static int node_is_aggregate(const resp_node *n) {
    return n->type == RESP_TREE_ARRAY || n->type == RESP_TREE_SET || n->type == RESP_TREE_MAP;
}

static size_t api_reply_length(const keel_reply *r) {
    const resp_node *n = (const resp_node *)r;
    return n && node_is_aggregate(n) ? n->len : 0;
}

static const keel_reply *api_reply_element(const keel_reply *r, size_t i) {
    const resp_node *n = (const resp_node *)r;
    if (!n || !node_is_aggregate(n)) return NULL;
    size_t count = n->type == RESP_TREE_MAP ? 2 * n->len : n->len;
    return i < count ? (const keel_reply *)&n->v.elems[i] : NULL;
}

/* ---- facts ---- */

/* "config|get" names a subcommand. */
static const command *call_command_named(const char *name, size_t len) {
    const char *bar = memchr(name, '|', len);
    if (!bar) return command_lookup(name, len);
    const command *base = command_lookup(name, (size_t)(bar - name));
    size_t sublen = len - (size_t)(bar - name) - 1;
    if (!base || !base->subcommands || memchr(bar + 1, '|', sublen)) return NULL;
    return command_lookup_sub(base, bar + 1, sublen);
}

static int api_command_flags(const char *name, size_t len, uint32_t *flags) {
    MODULE_ASSERT_MAIN();
    const command *cmd = name && flags ? call_command_named(name, len) : NULL;
    if (!cmd) return KEEL_ERR;
    *flags = call_keel_cmd_flags(cmd->flags);
    return KEEL_OK;
}

static int api_db_index(keel_ctx *ctx) {
    MODULE_ASSERT_MAIN();
    return ctx ? module_ctx_db(ctx)->id : 0;
}

const keel_api_call module_api_call = {
    .size = sizeof(keel_api_call),
    .call = api_call,
    .reply_free = api_reply_free,
    .reply_type = api_reply_type,
    .reply_integer = api_reply_integer,
    .reply_double = api_reply_double,
    .reply_string = api_reply_string,
    .reply_format = api_reply_format,
    .reply_length = api_reply_length,
    .reply_element = api_reply_element,
    .command_flags = api_command_flags,
    .busy_yield = module_api_busy_yield, /* module_busy.c */
    .busy_active = module_api_busy_active,
    .db_index = api_db_index,
};
