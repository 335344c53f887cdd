/* module_command.c -- the command group of the API: registering module
 * commands, reading their arguments, replying, and facts about the client.
 *
 * A module command is an ordinary entry of the command table (so COMMAND
 * INFO/COUNT/DOCS, key extraction and the hooks see it like a built-in)
 * embedded in a module_command that remembers the module's function. The
 * table calls one trampoline for all of them, which builds the context.
 * Key specs a module gives are converted to the core's (held in a
 * command_docs of the module_command, which key extraction and COMMAND
 * read as a built-in's), and a per-call flags function is called through
 * the command's call_flags hook. */
#include "session/command.h"
#include "common/common.h"
#include "common/kmem.h"
#include "module/module_internal.h"
#include "session/call.h"
#include "session/reply.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

#define MODULE_COMMAND_NAME_MAX 63 /* command.c looks names up in 64 bytes */
/* keel_command_def as ABI 1.0 defined it: everything up to summary. */
#define COMMAND_DEF_SIZE_1_0 (offsetof(keel_command_def, summary) + sizeof(const char *))

typedef struct module_command module_command;
struct module_command {
    command cmd; /* first: c->cmd points here while it runs */
    module *mod;
    keel_command_fn fn;
    uint32_t (*call_flags)(keel_ctx *ctx, uint32_t flags);
    command_docs docs; /* its key specs, when it gave some */
    key_spec *specs;
    module_command *next;
};

static module_command *commands; /* every module's */

/* ---- registration ---- */

static void module_command_proc(client *c) {
    module_command *mc = (module_command *)c->cmd;
    keel_ctx ctx = {
        .mod = mc->mod, .c = c, .phase = MODULE_PHASE_RUN, .flags = MODULE_CTX_MAY_BUSY};
    mc->fn(&ctx);
    module_ctx_done(&ctx);
}

/* The module answers in KEEL_CMD_* bits; the core's own bits (module,
 * movablekeys, the dispatcher's) stay as registered. */
static uint32_t module_command_call_flags(client *c) {
    module_command *mc = (module_command *)c->cmd;
    keel_ctx ctx = {
        .mod = mc->mod, .c = c, .phase = MODULE_PHASE_RUN, .flags = MODULE_CTX_FLAGS_HOOK};
    uint32_t keel = mc->call_flags(&ctx, call_keel_cmd_flags(mc->cmd.flags));
    uint32_t mapped = call_cmd_flags_from_keel(UINT32_MAX);
    return (mc->cmd.flags & ~mapped) | call_cmd_flags_from_keel(keel);
}

static const struct {
    const char *name;
    uint32_t flag;
} module_command_flags[] = {
    {"write", CMD_WRITE},
    {"readonly", CMD_READONLY},
    {"denyoom", CMD_DENYOOM},
    {"admin", CMD_ADMIN},
    {"fast", CMD_FAST},
    {"no-auth", CMD_NO_AUTH},
    {"no-multi", CMD_NO_MULTI},
    {"allow-busy", CMD_ALLOW_BUSY},
    {"skip-slowlog", CMD_SKIP_SLOWLOG},
    {"no-slowlog", CMD_SKIP_SLOWLOG},
    {"no-monitor", CMD_SKIP_MONITOR},
    {"may-replicate", CMD_MAY_REPLICATE},
    {"pubsub", CMD_PUBSUB},
    {"no-script", CMD_NOSCRIPT},
    {"deny-script", CMD_NOSCRIPT},
    {"blocking", CMD_BLOCKING},
    {"allow-stale", CMD_STALE},
    {"no-mandatory-keys", CMD_NO_MANDATORY_KEYS},
};

static int module_flag_lookup(const char *word, size_t len, uint32_t *flag) {
    for (size_t i = 0; i < K_ARRAY_LEN(module_command_flags); i++) {
        const char *n = module_command_flags[i].name;
        if (strlen(n) == len && !strncmp(n, word, len)) {
            *flag = module_command_flags[i].flag;
            return K_OK;
        }
    }
    return K_ERR;
}

/* "write denyoom" -> CMD_WRITE | CMD_DENYOOM | CMD_MODULE. */
static int module_parse_flags(keel_ctx *ctx, const char *name, const char *s, uint32_t *out) {
    *out = CMD_MODULE;
    while (s && *s) {
        size_t skip = strspn(s, " "), len;
        s += skip;
        if (!(len = strcspn(s, " "))) break;
        uint32_t flag;
        if (module_flag_lookup(s, len, &flag) != K_OK) {
            module_reg_error(ctx, "command '%s': unknown flag '%.*s'", name, (int)len, s);
            return K_ERR;
        }
        *out |= flag;
        s += len;
    }
    if ((*out & CMD_WRITE) && (*out & CMD_READONLY)) {
        module_reg_error(ctx, "command '%s': flags 'write' and 'readonly' exclude each other",
                         name);
        return K_ERR;
    }
    return K_OK;
}

/* Printable, no spaces and no '|' (the subcommand separator). */
static int module_command_name_ok(const char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if (n >= MODULE_COMMAND_NAME_MAX || s[n] <= ' ' || s[n] > '~' || s[n] == '|') return 0;
    return n > 0;
}

static int module_check_keys(keel_ctx *ctx, const keel_command_def *d) {
    const char *why = NULL;
    if (d->first_key < 0)
        why = "first_key is negative";
    else if (d->first_key > 0 && d->key_step < 1)
        why = "key_step must be at least 1";
    else if (d->first_key > 0 && d->last_key > 0 && d->last_key < d->first_key)
        why = "last_key is before first_key";
    else if (d->arity > 0 && d->first_key >= d->arity)
        why = "first_key is beyond the arity";
    if (why) module_reg_error(ctx, "command '%s': %s", d->name, why);
    return why ? K_ERR : K_OK;
}

static int module_check_command(keel_ctx *ctx, const keel_command_def *d) {
    if (!d->name || !module_command_name_ok(d->name)) {
        module_reg_error(ctx,
                         "invalid command name (1 to %d printable characters, no spaces or '|')",
                         MODULE_COMMAND_NAME_MAX);
    } else if (!d->fn) {
        module_reg_error(ctx, "command '%s': no function", d->name);
    } else if (d->arity == 0) {
        module_reg_error(ctx, "command '%s': arity 0 is invalid", d->name);
    } else {
        return module_check_keys(ctx, d);
    }
    return K_ERR;
}

/* ---- key specs ---- */

static uint32_t module_key_spec_flags(uint32_t keel) {
    static const struct {
        uint32_t keel, core;
    } map[] = {
        {KEEL_KEY_SPEC_RO, KEY_SPEC_RO},
        {KEEL_KEY_SPEC_RW, KEY_SPEC_RW},
        {KEEL_KEY_SPEC_OW, KEY_SPEC_OW},
        {KEEL_KEY_SPEC_RM, KEY_SPEC_RM},
        {KEEL_KEY_SPEC_ACCESS, KEY_SPEC_ACCESS},
        {KEEL_KEY_SPEC_UPDATE, KEY_SPEC_UPDATE},
        {KEEL_KEY_SPEC_INSERT, KEY_SPEC_INSERT},
        {KEEL_KEY_SPEC_DELETE, KEY_SPEC_DELETE},
        {KEEL_KEY_SPEC_NOT_KEY, KEY_SPEC_NOT_KEY},
        {KEEL_KEY_SPEC_INCOMPLETE, KEY_SPEC_INCOMPLETE},
        {KEEL_KEY_SPEC_VARIABLE_FLAGS, KEY_SPEC_VARIABLE_FLAGS},
    };
    uint32_t out = 0;
    for (size_t i = 0; i < K_ARRAY_LEN(map); i++)
        if (keel & map[i].keel) out |= map[i].core;
    return out;
}

/* One spec as the core's; NULL, or why it is invalid. */
static const char *module_key_spec_convert(const keel_key_spec *s, key_spec *out) {
    *out = (key_spec){.flags = module_key_spec_flags(s->flags)};
    if (s->begin_type == KEEL_KEY_BEGIN_INDEX) {
        if (s->begin_index < 1) return "begin_index must be at least 1";
        out->begin = KEY_BEGIN_INDEX;
        out->bs.index = s->begin_index;
    } else if (s->begin_type == KEEL_KEY_BEGIN_KEYWORD) {
        if (!s->begin_keyword || !*s->begin_keyword) return "begin_keyword is missing";
        out->begin = KEY_BEGIN_KEYWORD;
        out->bs.keyword.keyword = km_strdup(s->begin_keyword);
        out->bs.keyword.startfrom = s->begin_startfrom;
    } else {
        return "unknown begin_type";
    }
    if (s->find_type == KEEL_KEY_FIND_RANGE) {
        if (s->range_step < 1 || s->range_limit < 0)
            return "range_step or range_limit out of range";
        out->find = KEY_FIND_RANGE;
        out->fk.range.lastkey = s->range_lastkey;
        out->fk.range.step = s->range_step;
        out->fk.range.limit = s->range_limit;
    } else if (s->find_type == KEEL_KEY_FIND_KEYNUM) {
        if (s->keynum_index < 0 || s->keynum_firstkey < 1 || s->keynum_step < 1)
            return "keynum_index, keynum_firstkey or keynum_step out of range";
        out->find = KEY_FIND_KEYNUM;
        out->fk.keynum.keynumidx = s->keynum_index;
        out->fk.keynum.firstkey = s->keynum_firstkey;
        out->fk.keynum.step = s->keynum_step;
    } else {
        return "unknown find_type";
    }
    return NULL;
}

static void module_key_specs_free(key_spec *specs, int n) {
    for (int i = 0; specs && i < n; i++)
        if (specs[i].begin == KEY_BEGIN_KEYWORD) km_free((char *)specs[i].bs.keyword.keyword);
    km_free(specs);
}

/* The def's key specs as the core's, into *out (NULL: none given). All
 * specs have the size of the first. */
static int module_key_specs(keel_ctx *ctx, const keel_command_def *d, key_spec **out) {
    *out = NULL;
    if (!d->key_specs || d->num_key_specs <= 0) return K_OK;
    size_t stride = d->key_specs[0].size;
    if (stride < sizeof(keel_key_spec) || d->num_key_specs > 256) {
        module_reg_error(ctx, "command '%s': key_specs too small or too many", d->name);
        return K_ERR;
    }
    key_spec *specs = km_calloc((size_t)d->num_key_specs, sizeof(key_spec));
    for (int i = 0; i < d->num_key_specs; i++) {
        keel_key_spec s;
        const char *why = "the specs differ in size";
        const char *src = (const char *)d->key_specs + stride * (size_t)i;
        if (module_copy_def(&s, sizeof(s), src, sizeof(keel_key_spec)) == K_OK)
            why = module_key_spec_convert(&s, &specs[i]);
        if (why) {
            module_reg_error(ctx, "command '%s': key spec %d: %s", d->name, i, why);
            module_key_specs_free(specs, i + 1);
            return K_ERR;
        }
    }
    *out = specs;
    return K_OK;
}

static char *module_lowercase(const char *s) {
    char *copy = km_strdup(s);
    for (char *p = copy; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return copy;
}

static module_command *module_command_new(keel_ctx *ctx, const keel_command_def *d, uint32_t flags,
                                          key_spec *specs) {
    module_command *mc = km_calloc(1, sizeof(*mc));
    mc->cmd = (command){
        .name = module_lowercase(d->name),
        .proc = module_command_proc,
        .arity = d->arity,
        .flags = flags,
        .first_key = d->first_key,
        .last_key = d->first_key > 0 ? d->last_key : 0,
        .key_step = d->first_key > 0 ? d->key_step : 0,
        .group = "module",
        .summary = d->summary ? km_strdup(d->summary) : NULL,
        .since = NULL,
        .module = ctx->mod,
        .module_name = ctx->mod->name,
    };
    mc->mod = ctx->mod;
    mc->fn = d->fn;
    if (d->call_flags) {
        mc->call_flags = d->call_flags;
        mc->cmd.call_flags = module_command_call_flags;
    }
    if (specs) {
        mc->specs = specs;
        mc->docs = (command_docs){.fullname = mc->cmd.name, .group = "module"};
        mc->docs.key_specs = specs;
        mc->docs.num_key_specs = d->num_key_specs;
        command_set_docs(&mc->cmd, &mc->docs);
    }
    return mc;
}

static void module_command_free(module_command *mc) {
    module_key_specs_free(mc->specs, mc->docs.num_key_specs);
    km_free((char *)mc->cmd.name);
    km_free((char *)mc->cmd.summary);
    km_free(mc);
}

static int api_register_command(keel_ctx *ctx, const keel_command_def *def) {
    MODULE_ASSERT_MAIN();
    keel_command_def d;
    uint32_t flags;
    if (!module_in_init(ctx, "commands")) return KEEL_ERR;
    if (!def || module_copy_def(&d, sizeof(d), def, COMMAND_DEF_SIZE_1_0) != K_OK) {
        module_reg_error(ctx, "register_command: missing or too small keel_command_def");
        return KEEL_ERR;
    }
    key_spec *specs;
    if (module_check_command(ctx, &d) != K_OK ||
        module_parse_flags(ctx, d.name, d.flags, &flags) != K_OK ||
        module_key_specs(ctx, &d, &specs) != K_OK)
        return KEEL_ERR;
    module_command *mc = module_command_new(ctx, &d, flags, specs);
    if (command_register(&mc->cmd) != K_OK) {
        module_reg_error(ctx, "command '%s': the name is already taken", mc->cmd.name);
        module_command_free(mc);
        return KEEL_ERR;
    }
    mc->next = commands;
    commands = mc;
    return KEEL_OK;
}

/* Stands in for an unloaded command that a MULTI still queues: the
 * transaction is already marked to fail, but core code may read the
 * queued entries' flags before EXEC refuses. */
static void module_gone_proc(client *c) {
    reply_error(c, "ERR the module of this command was unloaded");
}

static command module_gone_cmd = {
    .name = "module-unloaded",
    .proc = module_gone_proc,
    .arity = -1,
    .fullname = "module-unloaded",
};

/* Clients may still point at the commands being removed: the last command
 * (CLIENT LIST) and commands queued in MULTI, which must not run once the
 * code is gone (the transaction fails with EXECABORT instead). */
static void module_forget_commands(module *m) {
    for (client *c = client_list_head(); c; c = c->next) {
        if (c->lastcmd && c->lastcmd->module == m) c->lastcmd = NULL;
        for (int i = 0; i < c->mcount; i++) {
            if (c->mcmds[i].cmd->module != m) continue;
            c->mcmds[i].cmd = &module_gone_cmd;
            c->flags |= CLIENT_DIRTY_EXEC;
        }
    }
}

void module_commands_release(module *m) {
    module_forget_commands(m);
    for (module_command **pp = &commands; *pp;) {
        module_command *mc = *pp;
        if (mc->mod != m) {
            pp = &mc->next;
            continue;
        }
        *pp = mc->next;
        command_unregister(mc->cmd.name);
        module_command_free(mc);
    }
}

/* ---- arguments ---- */

static int api_argc(keel_ctx *ctx) {
    MODULE_ASSERT_MAIN();
    return ctx->c ? ctx->c->argc : 0;
}

static const char *api_argv(keel_ctx *ctx, int index, size_t *len) {
    MODULE_ASSERT_MAIN();
    if (!ctx->c || index < 0 || index >= ctx->c->argc) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = ctx->c->argv[index].len;
    return ctx->c->argv[index].ptr;
}

static int api_arg_ll(keel_ctx *ctx, int index, long long *out) {
    size_t len;
    const char *s = api_argv(ctx, index, &len);
    return s && out && str_to_ll(s, len, out) ? KEEL_OK : KEEL_ERR;
}

/* ---- replies ---- */

/* The client replies go to; NULL outside a command (the reply is dropped:
 * there is nobody to send it to) and in a call_flags hook (the command
 * has not been accepted yet, and its reply is its own procedure's). */
static client *reply_target(keel_ctx *ctx) {
    MODULE_ASSERT_MAIN();
    return ctx && !(ctx->flags & MODULE_CTX_FLAGS_HOOK) ? ctx->c : NULL;
}

/* Simple strings and errors are one protocol line: CR and LF become spaces. */
static void reply_line(client *c, char type, const char *s) {
    char ch = type;
    reply_raw(c, &ch, 1);
    for (; *s; s++) {
        ch = (*s == '\r' || *s == '\n') ? ' ' : *s;
        reply_raw(c, &ch, 1);
    }
    reply_raw(c, "\r\n", 2);
}

static void api_reply_ok(keel_ctx *ctx) {
    client *c = reply_target(ctx);
    if (c) reply_ok(c);
}

static void api_reply_simple(keel_ctx *ctx, const char *s) {
    client *c = reply_target(ctx);
    if (c) reply_line(c, '+', s ? s : "");
}

static void api_reply_error(keel_ctx *ctx, const char *err) {
    client *c = reply_target(ctx);
    if (!c) return;
    if (err && err[0] == '-') err++;
    reply_error(c, err && *err ? err : "ERR");
}

static void api_reply_int(keel_ctx *ctx, long long v) {
    client *c = reply_target(ctx);
    if (c) reply_int(c, v);
}

static void api_reply_bulk(keel_ctx *ctx, const char *s, size_t len) {
    client *c = reply_target(ctx);
    if (c) reply_bulk(c, s ? s : "", s ? len : 0);
}

static void api_reply_null(keel_ctx *ctx) {
    client *c = reply_target(ctx);
    if (c) reply_null(c);
}

static void api_reply_array(keel_ctx *ctx, long long count) {
    client *c = reply_target(ctx);
    if (c && count < 0)
        reply_null_array(c);
    else if (c)
        reply_array(c, count);
}

static void api_reply_map(keel_ctx *ctx, long long pairs) {
    client *c = reply_target(ctx);
    if (c && pairs < 0)
        reply_null(c);
    else if (c)
        reply_map(c, pairs);
}

static void api_reply_double(keel_ctx *ctx, double v) {
    client *c = reply_target(ctx);
    if (c) reply_double(c, v);
}

static void api_reply_bool(keel_ctx *ctx, int v) {
    client *c = reply_target(ctx);
    if (c) reply_bool(c, v);
}

static void api_reply_verbatim(keel_ctx *ctx, const char *s, size_t len) {
    client *c = reply_target(ctx);
    if (c) reply_verbatim(c, s ? s : "", s ? len : 0, "txt");
}

static void api_reply_verbatim_ex(keel_ctx *ctx, const char *s, size_t len, const char *format) {
    client *c = reply_target(ctx);
    if (!format || strlen(format) != 3 || strpbrk(format, "\r\n:")) format = "txt";
    if (c) reply_verbatim(c, s ? s : "", s ? len : 0, format);
}

static void api_reply_wrong_arity(keel_ctx *ctx) {
    client *c = reply_target(ctx);
    if (c) reply_wrong_arity(c);
}

static void api_reply_set(keel_ctx *ctx, long long count) {
    client *c = reply_target(ctx);
    if (c && count < 0)
        reply_null(c);
    else if (c)
        reply_set(c, count);
}

/* A big number's text goes out as given, as Valkey's scripts send it (no
 * check that it is digits), except that CR and LF, which would break the
 * frame, become spaces. */
static void api_reply_bignum(keel_ctx *ctx, const char *digits, size_t len) {
    client *c = reply_target(ctx);
    if (!c) return;
    if (!digits) digits = "", len = 0;
    if (!memchr(digits, '\r', len) && !memchr(digits, '\n', len)) {
        reply_bignum(c, digits, len);
        return;
    }
    char *copy = km_alloc(len);
    for (size_t i = 0; i < len; i++)
        copy[i] = digits[i] == '\r' || digits[i] == '\n' ? ' ' : digits[i];
    reply_bignum(c, copy, len);
    km_free(copy);
}

static void api_reply_error_ex(keel_ctx *ctx, const char *err, size_t len, uint32_t flags) {
    client *c = reply_target(ctx);
    if (!c) return;
    if (!err) err = "", len = 0;
    if (len && err[0] == '-') err++, len--;
    if (!len) err = "ERR", len = 3;
    reply_error_len(c, err, len, !(flags & KEEL_REPLY_ERR_NO_STATS));
}

/* ---- the client ---- */

static int api_resp(keel_ctx *ctx) {
    MODULE_ASSERT_MAIN();
    return ctx->c ? ctx->c->resp : 2;
}

static keel_client *api_client(keel_ctx *ctx) {
    MODULE_ASSERT_MAIN();
    return (keel_client *)ctx->c;
}

static uint64_t api_client_id(keel_client *kc) {
    MODULE_ASSERT_MAIN();
    return kc ? ((client *)kc)->id : 0;
}

static int api_client_addr(keel_client *kc, char *buf, size_t len) {
    MODULE_ASSERT_MAIN();
    client *c = (client *)kc;
    if (!c || !c->conn || !buf || !len) return KEEL_ERR;
    return conn_addr(c->conn, buf, len, 1) == K_OK ? KEEL_OK : KEEL_ERR;
}

static const char *api_client_name(keel_client *kc) {
    MODULE_ASSERT_MAIN();
    return kc ? ((client *)kc)->name : NULL;
}

const keel_api_command module_api_command = {
    .size = sizeof(keel_api_command),
    .register_command = api_register_command,
    .argc = api_argc,
    .argv = api_argv,
    .arg_ll = api_arg_ll,
    .reply_ok = api_reply_ok,
    .reply_simple = api_reply_simple,
    .reply_error = api_reply_error,
    .reply_int = api_reply_int,
    .reply_bulk = api_reply_bulk,
    .reply_null = api_reply_null,
    .reply_array = api_reply_array,
    .reply_map = api_reply_map,
    .reply_double = api_reply_double,
    .reply_bool = api_reply_bool,
    .reply_verbatim = api_reply_verbatim,
    .reply_wrong_arity = api_reply_wrong_arity,
    .resp = api_resp,
    .client = api_client,
    .client_id = api_client_id,
    .client_addr = api_client_addr,
    .client_name = api_client_name,
    .reply_set = api_reply_set,
    .reply_bignum = api_reply_bignum,
    .reply_error_ex = api_reply_error_ex,
    .reply_verbatim_ex = api_reply_verbatim_ex,
};
