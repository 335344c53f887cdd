/* callmod.c -- a fixture module for the ABI 1.2 call group and its
 * neighbours (tests/integration/check_it_module_call.c): commands that run
 * other commands and print the reply trees, a key-spec command, a command
 * whose per-call flags make it a write, the new reply functions, and INFO
 * fields in a server section. Built against sdk/include only.
 *
 * A rendered tree: "s:bytes" (bulk), "+status", "-error", ":int", "_"
 * (null), "[a,b]" (array), "{k=v}" (map), "~(a,b)" (set), ",double", "#t",
 * "(bignum", "=txt:text". */
#include <keel/keel_module.h>

#include <stdio.h>
#include <string.h>

static const keel_api *api;

typedef struct out {
    char buf[8192];
    size_t len;
} out;

static void put(out *o, const char *s, size_t n) {
    if (o->len + n >= sizeof(o->buf)) n = sizeof(o->buf) - 1 - o->len;
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static void puts_(out *o, const char *s) {
    put(o, s, strlen(s));
}

static void render(out *o, const keel_reply *r);

static void render_elems(out *o, const keel_reply *r, size_t n, const char *open, const char *close,
                         int map) {
    puts_(o, open);
    for (size_t i = 0; i < n; i++) {
        if (i) puts_(o, map && (i % 2) ? "=" : ",");
        render(o, api->call->reply_element(r, i));
    }
    puts_(o, close);
}

static void render(out *o, const keel_reply *r) {
    const keel_api_call *k = api->call;
    char num[64];
    size_t len;
    const char *s = k->reply_string(r, &len);
    switch (k->reply_type(r)) {
    case KEEL_REPLY_STRING:
        puts_(o, "s:");
        put(o, s, len);
        break;
    case KEEL_REPLY_STATUS:
        puts_(o, "+");
        put(o, s, len);
        break;
    case KEEL_REPLY_ERROR:
        puts_(o, "-");
        put(o, s, len);
        break;
    case KEEL_REPLY_BIGNUM:
        puts_(o, "(");
        put(o, s, len);
        break;
    case KEEL_REPLY_VERBATIM:
        puts_(o, "=");
        puts_(o, k->reply_format(r));
        puts_(o, ":");
        put(o, s, len);
        break;
    case KEEL_REPLY_INTEGER:
        snprintf(num, sizeof(num), ":%lld", k->reply_integer(r));
        puts_(o, num);
        break;
    case KEEL_REPLY_DOUBLE:
        snprintf(num, sizeof(num), ",%g", k->reply_double(r));
        puts_(o, num);
        break;
    case KEEL_REPLY_BOOL:
        puts_(o, k->reply_integer(r) ? "#t" : "#f");
        break;
    case KEEL_REPLY_NULL:
        puts_(o, "_");
        break;
    case KEEL_REPLY_ARRAY:
        render_elems(o, r, k->reply_length(r), "[", "]", 0);
        break;
    case KEEL_REPLY_SET:
        render_elems(o, r, k->reply_length(r), "~(", ")", 0);
        break;
    case KEEL_REPLY_MAP:
        render_elems(o, r, 2 * k->reply_length(r), "{", "}", 1);
        break;
    default:
        puts_(o, "?");
        break;
    }
}

/* "-" for none, else letters: 3 RESP3, W no writes, M check OOM, S script. */
static uint32_t call_flags_of(const char *s, size_t len) {
    uint32_t f = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '3') f |= KEEL_CALL_RESP3;
        if (s[i] == 'W') f |= KEEL_CALL_NO_WRITES;
        if (s[i] == 'M') f |= KEEL_CALL_CHECK_OOM;
        if (s[i] == 'S') f |= KEEL_CALL_SCRIPT;
    }
    return f;
}

/* Runs argv[from, to) with flags; appends "<code> <tree>" to o. */
static void run_one(keel_ctx *ctx, uint32_t flags, int from, int to, out *o) {
    const char *argv[64];
    size_t lens[64];
    int n = 0;
    for (int i = from; i < to && n < 64; i++, n++)
        argv[n] = api->command->argv(ctx, i, &lens[n]);
    keel_call_args a = {sizeof(a), flags, n, argv, lens};
    keel_reply *r = NULL;
    int code = api->call->call(ctx, &a, &r);
    char head[16];
    snprintf(head, sizeof(head), "%d ", code);
    puts_(o, head);
    if (r) render(o, r);
    api->call->reply_free(r);
}

/* callmod.call <flags> <command> [arg ...]: "<code> <tree>". */
static void cmd_call(keel_ctx *ctx) {
    size_t flen;
    const char *f = api->command->argv(ctx, 1, &flen);
    out o = {.len = 0};
    run_one(ctx, call_flags_of(f, flen), 2, api->command->argc(ctx), &o);
    api->command->reply_bulk(ctx, o.buf, o.len);
}

/* callmod.seq <flags> cmd args ; cmd args ; ...: one call per ';'-separated
 * part, in one command; the renders joined by " | ". */
static void cmd_seq(keel_ctx *ctx) {
    size_t flen, len;
    const char *f = api->command->argv(ctx, 1, &flen);
    int argc = api->command->argc(ctx), from = 2;
    out o = {.len = 0};
    for (int i = 2; i <= argc; i++) {
        const char *s = i < argc ? api->command->argv(ctx, i, &len) : NULL;
        if (s && !(len == 1 && s[0] == ';')) continue;
        if (from > 2) puts_(&o, " | ");
        run_one(ctx, call_flags_of(f, flen), from, i, &o);
        from = i + 1;
    }
    api->command->reply_bulk(ctx, o.buf, o.len);
}

/* callmod.bad: calls with invalid arguments; replies the codes. */
static void cmd_bad(keel_ctx *ctx) {
    keel_reply *r = (keel_reply *)1;
    keel_call_args none = {sizeof(none), 0, 0, NULL, NULL};
    int a = api->call->call(ctx, &none, &r);
    int b = r == NULL;
    api->command->reply_array(ctx, 2);
    api->command->reply_int(ctx, a);
    api->command->reply_int(ctx, b);
}

/* callmod.flags <name>: the command's KEEL_CMD_* flags, or -1. */
static void cmd_flags(keel_ctx *ctx) {
    size_t len;
    const char *name = api->command->argv(ctx, 1, &len);
    uint32_t flags;
    if (api->call->command_flags(name, len, &flags) != KEEL_OK)
        api->command->reply_int(ctx, -1);
    else
        api->command->reply_int(ctx, flags);
}

/* callmod.db: db_index. */
static void cmd_db(keel_ctx *ctx) {
    api->command->reply_int(ctx, api->call->db_index(ctx));
}

/* callmod.kn numkeys key [key ...] arg ...: replies OK (its key spec is
 * what the tests read). */
static void cmd_kn(keel_ctx *ctx) {
    api->command->reply_ok(ctx);
}

/* What the flags hook could do from its ctx in "c" mode: the code of a
 * call, whether its reply was NULL, whether key_open gave NULL. */
static int hook_call_code, hook_reply_null, hook_key_null;

static void maybe_hook_tries(keel_ctx *ctx) {
    const char *argv[1] = {"PING"};
    size_t lens[1] = {4}, klen;
    keel_call_args a = {sizeof(a), 0, 1, argv, lens};
    keel_reply *r = NULL;
    hook_call_code = api->call->call(ctx, &a, &r);
    hook_reply_null = r == NULL;
    api->call->reply_free(r);
    api->command->reply_simple(ctx, "from-hook");
    const char *k = api->command->argv(ctx, 2, &klen);
    keel_key *key = api->keyspace->key_open(ctx, k, klen, KEEL_KEY_READ);
    hook_key_null = key == NULL;
    api->keyspace->key_close(key);
}

/* callmod.maybe r|w|c key: registered readonly; "w" makes the call a
 * deny-oom write. Sets key to "w" or reads it; "c" replies what the flags
 * hook could do ("hook <call code> <reply null> <key null>"). */
static uint32_t maybe_flags(keel_ctx *ctx, uint32_t flags) {
    size_t len;
    const char *m = api->command->argv(ctx, 1, &len);
    if (len == 1 && m[0] == 'c') maybe_hook_tries(ctx);
    if (len == 1 && m[0] == 'w')
        return (flags & ~KEEL_CMD_READONLY) | KEEL_CMD_WRITE | KEEL_CMD_DENYOOM;
    return flags;
}

static void cmd_maybe(keel_ctx *ctx) {
    size_t mlen, klen;
    const char *m = api->command->argv(ctx, 1, &mlen), *k = api->command->argv(ctx, 2, &klen);
    int w = mlen == 1 && m[0] == 'w';
    if (mlen == 1 && m[0] == 'c') {
        char buf[64];
        snprintf(buf, sizeof(buf), "hook %d %d %d", hook_call_code, hook_reply_null, hook_key_null);
        api->command->reply_bulk(ctx, buf, strlen(buf));
        return;
    }
    keel_key *key = api->keyspace->key_open(ctx, k, klen, w ? KEEL_KEY_WRITE : KEEL_KEY_READ);
    if (w) {
        api->keyspace->string_set(key, "w", 1);
        api->command->reply_ok(ctx);
    } else {
        size_t vlen;
        const char *v = api->keyspace->string_get(key, &vlen);
        if (v)
            api->command->reply_bulk(ctx, v, vlen);
        else
            api->command->reply_null(ctx);
    }
    api->keyspace->key_close(key);
}

/* callmod.reply set|bignum|bool|verbatim|error|errnostats|crlf: replies of
 * every type, the 1.2 ones in particular. */
static void cmd_reply(keel_ctx *ctx) {
    size_t len;
    const char *k = api->command->argv(ctx, 1, &len);
    const keel_api_command *c = api->command;
    if (len == 3 && !memcmp(k, "set", 3)) {
        c->reply_set(ctx, 2);
        c->reply_bulk(ctx, "a", 1);
        c->reply_int(ctx, 1);
    } else if (len == 6 && !memcmp(k, "bignum", 6)) {
        c->reply_bignum(ctx, "-123456789012345678901234567890", 31);
    } else if (len == 4 && !memcmp(k, "bool", 4)) {
        c->reply_bool(ctx, 1);
    } else if (len == 8 && !memcmp(k, "verbatim", 8)) {
        c->reply_verbatim(ctx, "some text", 9);
    } else if (len == 5 && !memcmp(k, "error", 5)) {
        c->reply_error_ex(ctx, "MYCODE something failed", 23, 0);
    } else if (len == 10 && !memcmp(k, "errnostats", 10)) {
        c->reply_error_ex(ctx, "UNCOUNTED passed on", 19, KEEL_REPLY_ERR_NO_STATS);
    } else {
        c->reply_error_ex(ctx, "CRLF a\r\nb", 9, 0);
    }
}

/* Refuses TIME, run directly or called. */
static const char *time_filter(keel_ctx *ctx, const char *name, uint32_t flags, void *priv) {
    return strcmp(name, "time") ? NULL : "ERR time is filtered";
}

static long long info_calls;

static void info_fields(keel_info *info, void *priv) {
    (void)priv;
    api->info->field(info, "callmod_info_calls:%lld", ++info_calls);
}

static int callmod_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    (void)argc;
    (void)argv;
    api = a;
    if (!KEEL_API_HAS(a, call, db_index) || !KEEL_API_HAS(a, command, reply_error_ex) ||
        !KEEL_API_HAS(a, info, add_fields)) {
        a->core->set_error(ctx, "callmod needs ABI 1.2");
        return KEEL_ERR;
    }
#define DEF(name_, fn_, arity_, flags_)                                                            \
    {                                                                                              \
        .size = sizeof(keel_command_def), .name = (name_), .fn = (fn_), .arity = (arity_),         \
        .flags = (flags_)                                                                          \
    }
    const keel_command_def defs[] = {
        DEF("callmod.call", cmd_call, -3, ""),
        DEF("callmod.seq", cmd_seq, -3, ""),
        DEF("callmod.bad", cmd_bad, 1, ""),
        DEF("callmod.flags", cmd_flags, 2, "readonly fast"),
        DEF("callmod.db", cmd_db, 1, "readonly fast"),
        DEF("callmod.reply", cmd_reply, 2, ""),
        DEF("callmod.noscript", cmd_db, 1,
            "no-script allow-stale no-slowlog pubsub blocking no-mandatory-keys"),
        DEF("callmod.denyscript", cmd_db, 1, "deny-script"),
    };
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
        if (a->command->register_command(ctx, &defs[i]) != KEEL_OK) return KEEL_ERR;

    static const keel_key_spec kn_spec = {
        .size = sizeof(keel_key_spec),
        .flags = KEEL_KEY_SPEC_RO | KEEL_KEY_SPEC_ACCESS,
        .begin_type = KEEL_KEY_BEGIN_INDEX,
        .begin_index = 1,
        .find_type = KEEL_KEY_FIND_KEYNUM,
        .keynum_index = 0,
        .keynum_firstkey = 1,
        .keynum_step = 1,
    };
    keel_command_def kn = DEF("callmod.kn", cmd_kn, -2, "readonly");
    kn.summary = "keynum keys";
    kn.key_specs = &kn_spec;
    kn.num_key_specs = 1;
    keel_command_def maybe = DEF("callmod.maybe", cmd_maybe, 3, "readonly");
    maybe.first_key = maybe.last_key = 2;
    maybe.key_step = 1;
    maybe.call_flags = maybe_flags;
    if (a->command->register_command(ctx, &kn) != KEEL_OK ||
        a->command->register_command(ctx, &maybe) != KEEL_OK)
        return KEEL_ERR;
    if (a->hooks->add_filter(ctx, time_filter, NULL) != KEEL_OK) return KEEL_ERR;
    return a->info->add_fields(ctx, "server", info_fields, NULL) == KEEL_OK ? KEEL_OK : KEEL_ERR;
}

KEEL_MODULE("callmod", 1, callmod_init, NULL);
