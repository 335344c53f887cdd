/* eval.c -- EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT on one Lua engine,
 * with Valkey 8.0.1's scripts cache:
 *
 *  - every script is found by its SHA1 (EVALSHA, SCRIPT EXISTS/SHOW) and by
 *    its body (EVAL): the body index hashes the bytes with a cheap hash and
 *    compares them, so a cached EVAL never computes a SHA1;
 *  - scripts that EVAL added (not SCRIPT LOAD) are kept in an LRU list of at
 *    most 500 and the oldest is dropped past that (evicted_scripts);
 *  - a shebang (#!lua flags=...) gives the script's flags, which decide the
 *    command's flags for that call (eval_call_flags) and the checks at its
 *    start; without one the script runs in Valkey's compatibility mode. */
#include "eval.h"

#include "engine.h"

#include <lauxlib.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define EVAL_LRU_MAX 500 /* Valkey's LRU_LIST_LENGTH */
#define EVAL_MIN_BUCKETS 64

typedef struct eval_script eval_script;
struct eval_script {
    char name[43];  /* "f_" + the SHA1 in lowercase hex */
    uint32_t flags; /* ENGINE_* */
    int ref;        /* registry ref of the compiled function */
    uint64_t hash;  /* of the body */
    size_t len;
    char *body;
    eval_script *sha_next, *body_next; /* hash chains */
    eval_script *lru_prev, *lru_next;  /* added by EVAL: in the LRU list */
    int in_lru;
};

static const keel_api *api;
static engine *eval_engine;
static eval_script **by_sha, **by_body;
static size_t nbuckets, nscripts, scripts_mem;
static eval_script *lru_head, *lru_tail; /* head: the oldest */
static size_t lru_len;
static long long evicted;
/* The script the call_flags hook found for the running command's body,
 * so the command does not look it up again. */
static const char *hint_arg;
static size_t hint_len;
static eval_script *hint;

/* ---- hashing ---- */

/* FNV-1a over 8-byte words: a few cycles per word, against SHA1's
 * hundreds per block. */
static uint64_t eval_hash(const char *s, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h ^ (h >> 32) ^ len;
}

static uint64_t eval_sha_hash(const char *sha40) {
    return eval_hash(sha40, 40);
}

static void eval_sha1(const char *s, size_t len, char *out40) {
    unsigned char md[SHA_DIGEST_LENGTH];
    static const char hex[] = "0123456789abcdef";
    SHA1((const unsigned char *)s, len, md);
    for (int i = 0; i < SHA_DIGEST_LENGTH; i++) {
        out40[2 * i] = hex[md[i] >> 4];
        out40[2 * i + 1] = hex[md[i] & 15];
    }
}

/* ---- the cache ---- */

static int eval_grow(void) {
    if (nscripts < nbuckets) return KEEL_OK;
    size_t n = nbuckets ? nbuckets * 2 : EVAL_MIN_BUCKETS;
    eval_script **s = api->core->calloc(n, sizeof(*s)), **b = api->core->calloc(n, sizeof(*b));
    if (!s || !b) {
        api->core->free(s);
        api->core->free(b);
        return nbuckets ? KEEL_OK : KEEL_ERR; /* a full table still works, slower */
    }
    for (size_t i = 0; i < nbuckets; i++) {
        for (eval_script *e = by_sha[i], *next; e; e = next) {
            next = e->sha_next;
            size_t k = eval_sha_hash(e->name + 2) & (n - 1);
            e->sha_next = s[k];
            s[k] = e;
        }
        for (eval_script *e = by_body[i], *next; e; e = next) {
            next = e->body_next;
            size_t k = e->hash & (n - 1);
            e->body_next = b[k];
            b[k] = e;
        }
    }
    api->core->free(by_sha);
    api->core->free(by_body);
    by_sha = s;
    by_body = b;
    nbuckets = n;
    return KEEL_OK;
}

static eval_script *eval_find_body(const char *body, size_t len) {
    if (!nbuckets) return NULL;
    uint64_t h = eval_hash(body, len);
    for (eval_script *e = by_body[h & (nbuckets - 1)]; e; e = e->body_next)
        if (e->hash == h && e->len == len && !memcmp(e->body, body, len)) return e;
    return NULL;
}

/* sha: 40 characters, any case. */
static eval_script *eval_find_sha(const char *sha, size_t len) {
    if (!nbuckets || len != 40) return NULL;
    char lower[40];
    for (int i = 0; i < 40; i++)
        lower[i] = (sha[i] >= 'A' && sha[i] <= 'Z') ? (char)(sha[i] + 32) : sha[i];
    for (eval_script *e = by_sha[eval_sha_hash(lower) & (nbuckets - 1)]; e; e = e->sha_next)
        if (!memcmp(e->name + 2, lower, 40)) return e;
    return NULL;
}

static size_t eval_script_mem(const eval_script *e) {
    return sizeof(*e) + e->len + 1;
}

static void eval_lru_unlink(eval_script *e) {
    if (!e->in_lru) return;
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        lru_head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else
        lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
    e->in_lru = 0;
    lru_len--;
}

static void eval_lru_push(eval_script *e) {
    e->lru_prev = lru_tail;
    e->lru_next = NULL;
    if (lru_tail)
        lru_tail->lru_next = e;
    else
        lru_head = e;
    lru_tail = e;
    e->in_lru = 1;
    lru_len++;
}

static void eval_unchain(eval_script **head, eval_script *e, int sha) {
    for (eval_script **p = head; *p; p = sha ? &(*p)->sha_next : &(*p)->body_next) {
        if (*p == e) {
            *p = sha ? e->sha_next : e->body_next;
            return;
        }
    }
}

static void eval_delete(eval_script *e) {
    eval_lru_unlink(e);
    eval_unchain(&by_sha[eval_sha_hash(e->name + 2) & (nbuckets - 1)], e, 1);
    eval_unchain(&by_body[e->hash & (nbuckets - 1)], e, 0);
    if (eval_engine) luaL_unref(engine_lua(eval_engine), LUA_REGISTRYINDEX, e->ref);
    if (hint == e) hint = NULL;
    scripts_mem -= eval_script_mem(e);
    nscripts--;
    api->core->free(e->body);
    api->core->free(e);
}

/* ---- shebang ---- */

/* Valkey's shebang rules: "#!lua" then options, each "flags=a,b". The
 * flags go to *flags, the shebang's length (up to its newline) to *skip.
 * KEEL_ERR with the message in err. */
static int eval_shebang(const char *body, size_t len, uint32_t *flags, size_t *skip, char *err,
                        size_t errlen) {
    *flags = ENGINE_EVAL_COMPAT;
    *skip = 0;
    if (len < 2 || body[0] != '#' || body[1] != '!') return KEEL_OK;
    const char *nl = memchr(body, '\n', len);
    if (!nl) {
        snprintf(err, errlen, "ERR Invalid script shebang");
        return KEEL_ERR;
    }
    *skip = (size_t)(nl - body);
    *flags = 0;
    const char *p = body, *end = nl;
    for (int part = 0;; part++) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
            p++;
        if (p >= end) break;
        const char *w = p;
        while (p < end && *p != ' ' && *p != '\t' && *p != '\r')
            p++;
        size_t n = (size_t)(p - w);
        if (part == 0) {
            if (n != 5 || memcmp(w, "#!lua", 5)) {
                snprintf(err, errlen, "ERR Unexpected engine in script shebang: %.*s", (int)n, w);
                return KEEL_ERR;
            }
        } else if (n >= 6 && !memcmp(w, "flags=", 6)) {
            const char *bad;
            size_t badlen;
            if (n > 6 && engine_flags_parse(w + 6, n - 6, flags, &bad, &badlen) != KEEL_OK) {
                snprintf(err, errlen, "ERR Unexpected flag in script shebang: %.*s", (int)badlen,
                         bad);
                return KEEL_ERR;
            }
        } else {
            snprintf(err, errlen, "ERR Unknown lua shebang option: %.*s", (int)n, w);
            return KEEL_ERR;
        }
    }
    return KEEL_OK;
}

/* ---- adding ---- */

static eval_script *eval_evict_oldest(void) {
    eval_script *old = lru_head;
    if (old) {
        eval_delete(old);
        evicted++;
    }
    return old;
}

/* Compiles and caches body; NULL after replying with the error. from_eval:
 * EVAL added it (LRU); SCRIPT LOAD takes a cached script out of the LRU. */
static eval_script *eval_add(keel_ctx *ctx, const char *body, size_t len, int from_eval) {
    eval_script *e = eval_find_body(body, len);
    if (e) {
        if (!from_eval) eval_lru_unlink(e);
        return e;
    }
    char err[256];
    uint32_t flags;
    size_t skip;
    if (eval_shebang(body, len, &flags, &skip, err, sizeof(err)) != KEEL_OK) {
        api->command->reply_error(ctx, err);
        return NULL;
    }
    lua_State *L = engine_lua(eval_engine);
    if (engine_compile(eval_engine, "@user_script", body + skip, len - skip) != KEEL_OK) {
        snprintf(err, sizeof(err), "ERR Error compiling script (new function): %s",
                 lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
        lua_pop(L, 1);
        api->command->reply_error(ctx, err);
        return NULL;
    }
    if (eval_grow() != KEEL_OK || !(e = api->core->calloc(1, sizeof(*e))) ||
        !(e->body = api->core->alloc(len + 1))) {
        if (e) api->core->free(e);
        lua_pop(L, 1);
        api->command->reply_error(ctx, "OOM out of memory caching the script");
        return NULL;
    }
    if (from_eval)
        while (lru_len >= EVAL_LRU_MAX && eval_evict_oldest()) {
        }
    memcpy(e->body, body, len);
    e->body[len] = '\0';
    e->len = len;
    e->flags = flags;
    e->hash = eval_hash(body, len);
    e->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    e->name[0] = 'f';
    e->name[1] = '_';
    eval_sha1(body, len, e->name + 2);
    e->name[42] = '\0';
    size_t ks = eval_sha_hash(e->name + 2) & (nbuckets - 1), kb = e->hash & (nbuckets - 1);
    e->sha_next = by_sha[ks];
    by_sha[ks] = e;
    e->body_next = by_body[kb];
    by_body[kb] = e;
    if (from_eval) eval_lru_push(e);
    nscripts++;
    scripts_mem += eval_script_mem(e);
    return e;
}

/* ---- the engine ---- */

static int eval_engine_new(void) {
    eval_engine = engine_create();
    if (!eval_engine) return KEEL_ERR;
    engine_seal(eval_engine);
    return KEEL_OK;
}

static void eval_flush(void) {
    while (nbuckets && nscripts) {
        for (size_t i = 0; i < nbuckets; i++)
            while (by_sha[i])
                eval_delete(by_sha[i]);
    }
    engine_destroy(eval_engine);
    eval_engine = NULL;
    hint = NULL;
}

int eval_setup(const keel_api *a) {
    api = a;
    return eval_engine_new();
}

void eval_teardown(void) {
    eval_flush();
    api->core->free(by_sha);
    api->core->free(by_body);
    by_sha = by_body = NULL;
    nbuckets = 0;
}

/* ---- the commands ---- */

static int eval_is_sha_cmd(keel_ctx *ctx) {
    size_t len;
    const char *name = api->command->argv(ctx, 0, &len);
    return len >= 7 && !strncasecmp(name, "evalsha", 7);
}

static int eval_is_ro_cmd(keel_ctx *ctx) {
    size_t len;
    const char *name = api->command->argv(ctx, 0, &len);
    return len >= 3 && !strncasecmp(name + len - 3, "_ro", 3);
}

static eval_script *eval_lookup(keel_ctx *ctx, int sha, const char **arg, size_t *len) {
    *arg = api->command->argv(ctx, 1, len);
    /* The hint is the script whose body (or SHA1) sat at these bytes when
     * the flags hook ran; a later command may reuse the buffer, so the
     * bytes are compared too (cheaper than hashing them). */
    if (hint && *arg == hint_arg && *len == hint_len &&
        (sha ? !strncasecmp(*arg, hint->name + 2, 40) : !memcmp(*arg, hint->body, *len)))
        return hint;
    return sha ? eval_find_sha(*arg, *len) : eval_find_body(*arg, *len);
}

uint32_t eval_call_flags(keel_ctx *ctx, uint32_t flags) {
    const char *arg;
    size_t len;
    int sha = eval_is_sha_cmd(ctx);
    hint = NULL;
    eval_script *e = eval_lookup(ctx, sha, &arg, &len);
    uint32_t script_flags;
    if (e) {
        hint = e;
        hint_arg = arg;
        hint_len = len;
        script_flags = e->flags;
    } else {
        char err[128];
        size_t skip;
        if (sha || eval_shebang(arg, len, &script_flags, &skip, err, sizeof(err)) != KEEL_OK)
            return flags;
    }
    if (script_flags & ENGINE_EVAL_COMPAT) return flags;
    return engine_cmd_flags(flags, script_flags);
}

static void eval_generic(keel_ctx *ctx) {
    long long numkeys;
    int argc = api->command->argc(ctx);
    if (api->command->arg_ll(ctx, 2, &numkeys) != KEEL_OK) {
        api->command->reply_error(ctx, "ERR value is not an integer or out of range");
        return;
    }
    if (numkeys > argc - 3) {
        api->command->reply_error(ctx, "ERR Number of keys can't be greater than number of args");
        return;
    }
    if (numkeys < 0) {
        api->command->reply_error(ctx, "ERR Number of keys can't be negative");
        return;
    }
    int sha = eval_is_sha_cmd(ctx);
    const char *arg;
    size_t len;
    eval_script *e = eval_lookup(ctx, sha, &arg, &len);
    hint = NULL;
    if (!e && sha) {
        api->command->reply_error(ctx, "NOSCRIPT No matching script.");
        return;
    }
    if (!e && !(e = eval_add(ctx, arg, len, 1))) return;
    if (e->in_lru) { /* used again: the newest */
        eval_lru_unlink(e);
        eval_lru_push(e);
    }
    engine_run run = {e->name, e->flags, eval_is_ro_cmd(ctx), 1, 3, (int)numkeys};
    lua_rawgeti(engine_lua(eval_engine), LUA_REGISTRYINDEX, e->ref);
    engine_call(eval_engine, ctx, &run);
}

void eval_cmd_eval(keel_ctx *ctx) {
    eval_generic(ctx);
}

/* ---- SCRIPT ---- */

static int script_arity_ok(keel_ctx *ctx, const char *sub, int arity) {
    int argc = api->command->argc(ctx);
    if (arity > 0 ? argc == arity : argc >= -arity) return 1;
    char err[96];
    snprintf(err, sizeof(err), "ERR wrong number of arguments for 'script|%s' command", sub);
    api->command->reply_error(ctx, err);
    return 0;
}

static void script_help(keel_ctx *ctx) {
    static const char *const lines[] = {
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined",
        "     by the lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "SHOW <sha1>",
        "    Show a script from the scripts cache.",
        "HELP",
        "    Print this help.",
    };
    size_t n = sizeof(lines) / sizeof(lines[0]);
    api->command->reply_array(ctx, (long long)n);
    for (size_t i = 0; i < n; i++)
        api->command->reply_simple(ctx, lines[i]);
}

/* FLUSH frees the state and every script at once; ASYNC is accepted and
 * done the same way (the state is freed on the main thread). */
static void script_flush(keel_ctx *ctx) {
    int argc = api->command->argc(ctx);
    size_t len;
    const char *mode = argc == 3 ? api->command->argv(ctx, 2, &len) : NULL;
    if (argc > 3 || (mode && !((len == 4 && !strncasecmp(mode, "sync", 4)) ||
                               (len == 5 && !strncasecmp(mode, "async", 5))))) {
        api->command->reply_error(ctx, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        return;
    }
    eval_flush();
    if (eval_engine_new() != KEEL_OK) {
        api->command->reply_error(ctx, "ERR could not create a new Lua state");
        return;
    }
    api->command->reply_ok(ctx);
}

static void script_exists(keel_ctx *ctx) {
    int argc = api->command->argc(ctx);
    api->command->reply_array(ctx, argc - 2);
    for (int i = 2; i < argc; i++) {
        size_t len;
        const char *sha = api->command->argv(ctx, i, &len);
        api->command->reply_int(ctx, eval_find_sha(sha, len) ? 1 : 0);
    }
}

static void script_load(keel_ctx *ctx) {
    size_t len;
    const char *body = api->command->argv(ctx, 2, &len);
    eval_script *e = eval_add(ctx, body, len, 0);
    if (e) api->command->reply_bulk(ctx, e->name + 2, 40);
}

static void script_show(keel_ctx *ctx) {
    size_t len;
    const char *sha = api->command->argv(ctx, 2, &len);
    eval_script *e = eval_find_sha(sha, len);
    if (e)
        api->command->reply_bulk(ctx, e->body, e->len);
    else
        api->command->reply_error(ctx, "NOSCRIPT No matching script.");
}

/* Keel has no Lua debugger: every mode but NO is refused. */
static void script_debug(keel_ctx *ctx) {
    size_t len;
    const char *mode = api->command->argv(ctx, 2, &len);
    if (len == 2 && !strncasecmp(mode, "no", 2))
        api->command->reply_ok(ctx);
    else if ((len == 3 && !strncasecmp(mode, "yes", 3)) ||
             (len == 4 && !strncasecmp(mode, "sync", 4)))
        api->command->reply_error(ctx, "ERR SCRIPT DEBUG is not supported: this server has no Lua "
                                       "debugger");
    else
        api->command->reply_error(ctx, "ERR Use SCRIPT DEBUG YES/SYNC/NO");
}

static const struct {
    const char *name;
    int arity;
    void (*fn)(keel_ctx *ctx);
} script_subs[] = {
    {"help", 2, script_help}, {"flush", -2, script_flush}, {"exists", -3, script_exists},
    {"load", 3, script_load}, {"show", 3, script_show},    {"debug", 3, script_debug},
};

/* SCRIPT is registered allow-busy for KILL: during a busy script every
 * other subcommand gets the BUSY error the server gives other commands. */
void eval_cmd_script(keel_ctx *ctx) {
    size_t len;
    const char *sub = api->command->argv(ctx, 1, &len);
    if (len == 4 && !strncasecmp(sub, "kill", 4)) {
        if (script_arity_ok(ctx, "kill", 2)) engine_kill(ctx, 1);
        return;
    }
    if (engine_current()) {
        api->command->reply_error(ctx, engine_busy_error(engine_current()->eval));
        return;
    }
    for (size_t i = 0; i < sizeof(script_subs) / sizeof(script_subs[0]); i++) {
        if (strlen(script_subs[i].name) == len && !strncasecmp(sub, script_subs[i].name, len)) {
            if (script_arity_ok(ctx, script_subs[i].name, script_subs[i].arity))
                script_subs[i].fn(ctx);
            return;
        }
    }
    char err[200];
    snprintf(err, sizeof(err),
             "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try SCRIPT HELP.",
             (int)(len > 128 ? 128 : len), sub);
    api->command->reply_error(ctx, err);
}

/* ---- INFO ---- */

void eval_stats(eval_info *out) {
    out->vm_memory = (long long)engine_memory(eval_engine);
    out->scripts = nscripts;
    out->caches_memory = (long long)(scripts_mem + 2 * nbuckets * sizeof(eval_script *));
    out->evicted = evicted;
}
