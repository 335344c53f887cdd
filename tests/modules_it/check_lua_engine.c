/* check_lua_engine.c -- the lua module's engine and EVAL commands against a
 * fake keel_api: no server. The fake runs a handful of commands of its own
 * (ping, echo, incr, set, publish, fail, types3, nest) through the call
 * group, so server.call, the conversions both ways, the sandbox, the error
 * replies, the busy hook with SCRIPT KILL and UNKILLABLE, the read-only and
 * OOM rules, the shebang flags and the scripts cache are checked here
 * without the call API of a real server (tests/modules_it/check_it_lua.c
 * does that part).
 *
 * A reply renders as space-separated tokens: *N (array) %N (map) ~N (set)
 * $text +text -text :N ,D #t/#f (N _ (null) =fmt:text. */
#include "engine.h"
#include "eval.h"

#include <check.h>
#include <lauxlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the fake server ---- */

struct keel_ctx {
    int argc;
    const char **argv;
    size_t *lens;
    int resp;
};

static char out[1 << 16];
static size_t outlen;
static int errors_counted, errors_uncounted;
static long long fake_used = 0, fake_max = 0;
static int yields;
static int kill_at_yield;    /* kill from the busy phase at this yield */
static char kill_reply[256]; /* what that SCRIPT KILL got */
static long long counter;
static uint32_t last_call_flags;

static void emit(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    outlen += (size_t)vsnprintf(out + outlen, sizeof(out) - outlen, fmt, ap);
    va_end(ap);
    if (outlen < sizeof(out) - 1) out[outlen++] = ' ';
    out[outlen] = '\0';
}

static void f_log(keel_ctx *c, int level, const char *fmt, ...) {
    (void)c;
    (void)level;
    (void)fmt;
}
static void f_set_error(keel_ctx *c, const char *m) {
    (void)c;
    (void)m;
}
static int64_t f_mstime(void) {
    return 1000;
}
static int f_stat_get(const char *name, long long *v) {
    if (!strcmp(name, "used_memory"))
        *v = fake_used;
    else if (!strcmp(name, "maxmemory"))
        *v = fake_max;
    else
        return KEEL_ERR;
    return KEEL_OK;
}

static int f_argc(keel_ctx *c) {
    return c->argc;
}
static const char *f_argv(keel_ctx *c, int i, size_t *len) {
    *len = c->lens[i];
    return c->argv[i];
}
static int f_arg_ll(keel_ctx *c, int i, long long *v) {
    char buf[32], *end;
    if (c->lens[i] == 0 || c->lens[i] >= sizeof(buf)) return KEEL_ERR;
    memcpy(buf, c->argv[i], c->lens[i]);
    buf[c->lens[i]] = '\0';
    *v = strtoll(buf, &end, 10);
    return *end ? KEEL_ERR : KEEL_OK;
}
static void f_ok(keel_ctx *c) {
    (void)c;
    emit("+OK");
}
static void f_simple(keel_ctx *c, const char *s) {
    (void)c;
    emit("+%s", s);
}
static void f_error(keel_ctx *c, const char *e) {
    (void)c;
    errors_counted++;
    emit("-%s", e);
}
static void f_int(keel_ctx *c, long long v) {
    (void)c;
    emit(":%lld", v);
}
static void f_bulk(keel_ctx *c, const char *s, size_t len) {
    (void)c;
    emit("$%.*s", (int)len, s);
}
static void f_null(keel_ctx *c) {
    (void)c;
    emit("_");
}
static void f_array(keel_ctx *c, long long n) {
    (void)c;
    emit("*%lld", n);
}
static void f_map(keel_ctx *c, long long n) {
    (void)c;
    emit("%%%lld", n);
}
static void f_double(keel_ctx *c, double d) {
    (void)c;
    emit(",%g", d);
}
static void f_bool(keel_ctx *c, int v) {
    (void)c;
    emit("#%c", v ? 't' : 'f');
}
static void f_verbatim(keel_ctx *c, const char *s, size_t len) {
    (void)c;
    emit("=txt:%.*s", (int)len, s);
}
static int f_resp(keel_ctx *c) {
    return c->resp;
}
static void f_set(keel_ctx *c, long long n) {
    (void)c;
    emit("~%lld", n);
}
static void f_bignum(keel_ctx *c, const char *s, size_t len) {
    (void)c;
    emit("(%.*s", (int)len, s);
}
static void f_error_ex(keel_ctx *c, const char *e, size_t len, uint32_t flags) {
    (void)c;
    if (flags & KEEL_REPLY_ERR_NO_STATS)
        errors_uncounted++;
    else
        errors_counted++;
    emit("-%.*s", (int)len, e);
}
static void f_verbatim_ex(keel_ctx *c, const char *s, size_t len, const char *format) {
    (void)c;
    emit("=%s:%.*s", format, (int)len, s);
}
static int f_register(keel_ctx *c, const keel_command_def *d) {
    (void)c;
    (void)d;
    return KEEL_OK;
}
static void f_info_field(keel_info *i, const char *fmt, ...) {
    (void)i;
    (void)fmt;
}

/* Reply trees. */
struct keel_reply {
    int type;
    long long i;
    double d;
    char s[96];
    size_t len;
    size_t n;
    struct keel_reply *el[8];
};

static keel_reply *node(int type) {
    keel_reply *r = calloc(1, sizeof(*r));
    r->type = type;
    return r;
}
static keel_reply *node_s(int type, const char *s) {
    keel_reply *r = node(type);
    r->len = strlen(s);
    memcpy(r->s, s, r->len);
    return r;
}
static void f_reply_free(keel_reply *r) {
    if (!r) return;
    size_t n = r->type == KEEL_REPLY_MAP ? 2 * r->n : r->n;
    for (size_t i = 0; i < n; i++)
        f_reply_free(r->el[i]);
    free(r);
}
static int f_reply_type(const keel_reply *r) {
    return r->type;
}
static long long f_reply_integer(const keel_reply *r) {
    return r->i;
}
static double f_reply_double(const keel_reply *r) {
    return r->d;
}
static const char *f_reply_string(const keel_reply *r, size_t *len) {
    *len = r->len;
    return r->type == KEEL_REPLY_STRING || r->type == KEEL_REPLY_STATUS ||
                   r->type == KEEL_REPLY_ERROR || r->type == KEEL_REPLY_BIGNUM ||
                   r->type == KEEL_REPLY_VERBATIM
               ? r->s
               : NULL;
}
static const char *f_reply_format(const keel_reply *r) {
    return r->type == KEEL_REPLY_VERBATIM ? "mkd" : NULL;
}
static size_t f_reply_length(const keel_reply *r) {
    return r->n;
}
static const keel_reply *f_reply_element(const keel_reply *r, size_t i) {
    return i < 8 ? r->el[i] : NULL;
}

static int name_is(const keel_call_args *a, const char *n) {
    return a->lens[0] == strlen(n) && !strncasecmp(a->argv[0], n, a->lens[0]);
}

static int f_command_flags(const char *name, size_t len, uint32_t *flags) {
    static const struct {
        const char *n;
        uint32_t f;
    } t[] = {{"ping", 0},
             {"echo", 0},
             {"incr", KEEL_CMD_WRITE | KEEL_CMD_DENYOOM},
             {"set", KEEL_CMD_WRITE | KEEL_CMD_DENYOOM},
             {"publish", KEEL_CMD_MAY_REPLICATE},
             {"fail", 0},
             {"types3", 0},
             {"nest", 0},
             {"eval", KEEL_CMD_NOSCRIPT}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strlen(t[i].n) == len && !strncasecmp(t[i].n, name, len)) {
            *flags = t[i].f;
            return KEEL_OK;
        }
    return KEEL_ERR;
}

static keel_reply *types3(int resp3) {
    keel_reply *a = node(KEEL_REPLY_ARRAY), *m = node(resp3 ? KEEL_REPLY_MAP : KEEL_REPLY_ARRAY);
    a->n = 7;
    m->n = resp3 ? 1 : 2;
    m->el[0] = node_s(KEEL_REPLY_STRING, "k");
    m->el[1] = node(KEEL_REPLY_INTEGER);
    m->el[1]->i = 5;
    a->el[0] = m;
    a->el[1] = node(KEEL_REPLY_SET);
    a->el[1]->n = 1;
    a->el[1]->el[0] = node_s(KEEL_REPLY_STRING, "member");
    a->el[2] = node(KEEL_REPLY_DOUBLE);
    a->el[2]->d = 1.5;
    a->el[3] = node(KEEL_REPLY_BOOL);
    a->el[3]->i = 1;
    a->el[4] = node_s(KEEL_REPLY_BIGNUM, "12345678901234567890");
    a->el[5] = node_s(KEEL_REPLY_VERBATIM, "text");
    a->el[6] = node(KEEL_REPLY_NULL);
    return a;
}

static keel_reply *nest(int depth) {
    keel_reply *r = node(KEEL_REPLY_ARRAY), *cur = r;
    for (int i = 0; i < depth; i++) {
        cur->n = 1;
        cur->el[0] = node(KEEL_REPLY_ARRAY);
        cur = cur->el[0];
    }
    return r;
}

static int f_call(keel_ctx *ctx, const keel_call_args *a, keel_reply **reply) {
    (void)ctx;
    uint32_t flags = 0;
    last_call_flags = a->flags;
    *reply = NULL;
    if (f_command_flags(a->argv[0], a->lens[0], &flags) != KEEL_OK) {
        *reply = node_s(KEEL_REPLY_ERROR, "ERR Unknown command called from script");
        return KEEL_CALL_UNKNOWN;
    }
    if ((a->flags & KEEL_CALL_SCRIPT) && (flags & KEEL_CMD_NOSCRIPT)) {
        *reply = node_s(KEEL_REPLY_ERROR, "ERR This Redis command is not allowed from script");
        return KEEL_CALL_NOSCRIPT;
    }
    if ((a->flags & KEEL_CALL_NO_WRITES) && (flags & (KEEL_CMD_WRITE | KEEL_CMD_MAY_REPLICATE))) {
        *reply =
            node_s(KEEL_REPLY_ERROR, "ERR Write commands are not allowed from read-only scripts.");
        return KEEL_CALL_WRITE;
    }
    if ((a->flags & KEEL_CALL_CHECK_OOM) && (flags & KEEL_CMD_DENYOOM) && fake_max &&
        fake_used > fake_max) {
        *reply =
            node_s(KEEL_REPLY_ERROR, "OOM command not allowed when used memory > 'maxmemory'.");
        return KEEL_CALL_OOM;
    }
    int resp3 = !!(a->flags & KEEL_CALL_RESP3);
    if (name_is(a, "ping")) {
        *reply = node_s(KEEL_REPLY_STATUS, "PONG");
    } else if (name_is(a, "echo")) {
        if (a->argc != 2) {
            *reply =
                node_s(KEEL_REPLY_ERROR, "ERR Wrong number of args calling command from script");
            return KEEL_CALL_ARITY;
        }
        *reply = node(KEEL_REPLY_STRING);
        (*reply)->len = a->lens[1] < 95 ? a->lens[1] : 95;
        memcpy((*reply)->s, a->argv[1], (*reply)->len);
    } else if (name_is(a, "incr")) {
        *reply = node(KEEL_REPLY_INTEGER);
        (*reply)->i = ++counter;
    } else if (name_is(a, "set") || name_is(a, "publish")) {
        *reply = node_s(KEEL_REPLY_STATUS, "OK");
    } else if (name_is(a, "fail")) {
        *reply = node_s(KEEL_REPLY_ERROR, "MYERR it failed");
    } else if (name_is(a, "types3")) {
        *reply = types3(resp3);
    } else if (name_is(a, "nest")) {
        *reply = nest(atoi(a->argv[1]));
    }
    return KEEL_CALL_RAN;
}

static int f_busy_yield(keel_ctx *ctx, const char *busy) {
    (void)ctx;
    ck_assert_str_eq(busy, engine_busy_error(1));
    if (++yields == kill_at_yield) {
        /* Another client's SCRIPT KILL, served from the busy phase. */
        size_t save = outlen;
        const char *argv[] = {"SCRIPT", "KILL"};
        size_t lens[] = {6, 4};
        keel_ctx other = {2, argv, lens, 2};
        eval_cmd_script(&other);
        snprintf(kill_reply, sizeof(kill_reply), "%s", out + save);
        outlen = save;
        out[outlen] = '\0';
    }
    return KEEL_OK;
}
static int f_busy_active(void) {
    return engine_current() != NULL;
}
static int f_db_index(keel_ctx *c) {
    (void)c;
    return 0;
}

static const keel_api_core fake_core = {sizeof(keel_api_core),
                                        f_log,
                                        f_set_error,
                                        malloc,
                                        calloc,
                                        realloc,
                                        free,
                                        f_mstime,
                                        f_mstime,
                                        NULL,
                                        NULL,
                                        f_stat_get};
static const keel_api_command fake_command = {sizeof(keel_api_command),
                                              f_register,
                                              f_argc,
                                              f_argv,
                                              f_arg_ll,
                                              f_ok,
                                              f_simple,
                                              f_error,
                                              f_int,
                                              f_bulk,
                                              f_null,
                                              f_array,
                                              f_map,
                                              f_double,
                                              f_bool,
                                              f_verbatim,
                                              NULL,
                                              f_resp,
                                              NULL,
                                              NULL,
                                              NULL,
                                              NULL,
                                              f_set,
                                              f_bignum,
                                              f_error_ex,
                                              f_verbatim_ex};
static const keel_api_info fake_info = {sizeof(keel_api_info), NULL, f_info_field, NULL, NULL, NULL};
static const keel_api_call fake_call = {
    sizeof(keel_api_call), f_call,         f_reply_free,   f_reply_type,   f_reply_integer,
    f_reply_double,        f_reply_string, f_reply_format, f_reply_length, f_reply_element,
    f_command_flags,       f_busy_yield,   f_busy_active,  f_db_index};
static const keel_api fake_api = {
    sizeof(keel_api), 1,    2,          &fake_core, &fake_command, NULL, NULL,
    &fake_info,       NULL, &fake_call, NULL,       NULL};

/* ---- running commands ---- */

static const char *run_argv(int resp, int argc, const char **argv) {
    size_t lens[64];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    keel_ctx ctx = {argc, argv, lens, resp};
    outlen = 0;
    out[0] = '\0';
    size_t n0 = strlen(argv[0]);
    if (n0 == 6 && !strncasecmp(argv[0], "script", 6))
        eval_cmd_script(&ctx);
    else
        eval_cmd_eval(&ctx);
    while (outlen && out[outlen - 1] == ' ')
        out[--outlen] = '\0';
    return out;
}

/* EVAL script numkeys args... (RESP2). */
#define EVAL_ARGS(...)                                                                             \
    (const char *[]) {                                                                             \
        "EVAL", __VA_ARGS__                                                                        \
    }
#define EVAL_ARGC(...) (int)(sizeof(EVAL_ARGS(__VA_ARGS__)) / sizeof(char *))
#define EVAL(...) run_argv(2, EVAL_ARGC(__VA_ARGS__), EVAL_ARGS(__VA_ARGS__))
#define EVAL3(...) run_argv(3, EVAL_ARGC(__VA_ARGS__), EVAL_ARGS(__VA_ARGS__))
#define expect(got, want) ck_assert_str_eq(got, want)

static void expect_prefix(const char *got, const char *prefix) {
    ck_assert_msg(!strncmp(got, prefix, strlen(prefix)), "got '%s', want prefix '%s'", got, prefix);
}

static void expect_contains(const char *got, const char *part) {
    ck_assert_msg(strstr(got, part) != NULL, "got '%s', want it to contain '%s'", got, part);
}

static void setup(void) {
    engine_setup(NULL, &fake_api);
    ck_assert_int_eq(eval_setup(&fake_api), KEEL_OK);
    counter = 0;
    yields = 0;
    kill_at_yield = 0;
    fake_used = fake_max = 0;
    errors_counted = errors_uncounted = 0;
}

static void teardown(void) {
    eval_teardown();
    engine_teardown();
}

/* ---- Lua -> reply ---- */

START_TEST(test_lua_to_reply) {
    expect(EVAL("return 42", "0"), ":42");
    expect(EVAL("return 3.99", "0"), ":3");
    expect(EVAL("return -3.99", "0"), ":-3");
    expect(EVAL("return 'hi'", "0"), "$hi");
    expect(EVAL("return true", "0"), ":1");
    expect(EVAL("return false", "0"), "_");
    expect(EVAL("return nil", "0"), "_");
    expect(EVAL("return {1,2,3,'x',nil,5}", "0"), "*4 :1 :2 :3 $x");
    expect(EVAL("return {ok='fine'}", "0"), "+fine");
    expect(EVAL("return {ok='a\\r\\nb'}", "0"), "+a  b");
    expect(EVAL("return {err='My Error'}", "0"), "-My Error");
    expect(EVAL("return redis.error_reply('My Error')", "0"), "-My Error");
    expect(EVAL("return redis.error_reply('-CODE text')", "0"), "-CODE text");
    expect(EVAL("return redis.status_reply('GOOD')", "0"), "+GOOD");
    expect(EVAL("return {double=1.5}", "0"), ",1.5");
    expect(EVAL("return {big_number='123'}", "0"), "(123");
    expect(EVAL("return {verbatim_string={format='txt', string='v'}}", "0"), "=txt:v");
    expect(EVAL("return {map={a=1}}", "0"), "%1 $a :1");
    expect(EVAL("return {set={a=true}}", "0"), "~1 $a");
    expect(EVAL("return {{1},{2,{3}}}", "0"), "*2 *1 :1 *2 :2 *1 :3");
    expect(EVAL("return 0/0", "0"), ":-9223372036854775808");
}
END_TEST

START_TEST(test_resp3_booleans) {
    expect(EVAL3("redis.setresp(3); return true", "0"), "#t");
    expect(EVAL3("redis.setresp(3); return false", "0"), "#f");
    expect(EVAL3("return false", "0"), "_");
}
END_TEST

START_TEST(test_keys_argv) {
    expect(EVAL("return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}", "2", "a", "b", "c", "d"),
           "*4 $a $b $c $d");
    expect(EVAL("return #KEYS + #ARGV", "0"), ":0");
    expect(EVAL("return 1", "2", "a"), "-ERR Number of keys can't be greater than number of args");
    expect(EVAL("return 1", "-1"), "-ERR Number of keys can't be negative");
    expect(EVAL("return 1", "x"), "-ERR value is not an integer or out of range");
}
END_TEST

/* ---- reply -> Lua ---- */

START_TEST(test_call_conversions) {
    expect(EVAL("return redis.call('ping')", "0"), "+PONG");
    expect(EVAL("return redis.call('echo', 'x')", "0"), "$x");
    expect(EVAL("return redis.call('echo', 12)", "0"), "$12");
    expect(EVAL("return redis.call('echo', 1.5)", "0"), "$1.5");
    expect(EVAL("return redis.call('echo', 1e15)", "0"), "$1000000000000000");
    expect(EVAL("return type(redis.call('incr', 'k'))", "0"), "$number");
    expect(EVAL("return redis.call('ping').ok", "0"), "$PONG");
    expect(EVAL("return server.call('incr', 'k')", "0"), ":2");
    /* RESP2: the server's array stays a flat array, null is false. */
    expect(EVAL("local r = redis.call('types3') return {type(r[1]), r[7] == false}", "0"),
           "*2 $table :1");
    /* RESP3 types as Valkey shows them to Lua. */
    expect(EVAL("redis.setresp(3) local r = redis.call('types3') "
                "return {r[1].map.k, r[2].set.member and 1, r[3].double, r[4] and 1, "
                "r[5].big_number, r[6].verbatim_string.format, r[6].verbatim_string.string, "
                "r[7] == nil and 1}",
                "0"),
           "*8 :5 :1 :1 :1 $12345678901234567890 $mkd $text :1");
    expect(EVAL("redis.setresp(3) return redis.call('types3')[1]", "0"), "%1 $k :5");
    ck_assert(last_call_flags & KEEL_CALL_RESP3);
    ck_assert(last_call_flags & KEEL_CALL_SCRIPT);
}
END_TEST

START_TEST(test_call_errors) {
    const char *r = EVAL("return redis.call('fail')", "0");
    expect_prefix(r, "-MYERR it failed script: f_");
    expect_contains(r, ", on @user_script:1.");
    ck_assert_int_eq(errors_uncounted, 1); /* counted when the command failed */
    expect(EVAL("return redis.pcall('fail')", "0"), "-MYERR it failed");
    expect(EVAL("local e = redis.pcall('fail') return e.err", "0"), "$MYERR it failed");
    expect_prefix(EVAL("return redis.call('nosuch')", "0"),
                  "-ERR Unknown command called from script script:");
    expect_prefix(EVAL("return redis.call('echo')", "0"),
                  "-ERR Wrong number of args calling command from script script:");
    expect_prefix(EVAL("return redis.call('eval', 'return 1', 0)", "0"),
                  "-ERR This Redis command is not allowed from script script:");
    expect_prefix(EVAL("return redis.call()", "0"),
                  "-ERR Please specify at least one argument for this call script:");
    expect_prefix(EVAL("return redis.call('echo', {})", "0"),
                  "-ERR Command arguments must be strings or integers script:");
    /* Valkey's pcall hands back the message of an error table. */
    expect(EVAL("local ok, e = pcall(function() redis.call('fail') end) return {tostring(ok), e}",
                "0"),
           "*2 $false $MYERR it failed");
    expect_prefix(EVAL("error('boom')", "0"), "-ERR user_script:1: boom script: f_");
    expect_prefix(EVAL("error({err='CUSTOM x'})", "0"), "-CUSTOM x script: f_");
    expect_prefix(EVAL("return 1 +", "0"),
                  "-ERR Error compiling script (new function): user_script:1:");
}
END_TEST

/* The result becomes the reply outside the protected call: neither an
 * error table's metamethods nor a userdata's __gc may run Lua code then. */
START_TEST(test_hostile_results) {
    expect_prefix(EVAL("error(setmetatable({}, {__index = function() error('boom') end}))", "0"),
                  "-ERR unknown error script: f_");
    /* A userdata's __gc would run script code wherever the collector
     * runs (building KEYS, the reply, the periodic step): refused. */
    expect_contains(EVAL("local p = newproxy(true) getmetatable(p).__gc = function() end", "0"),
                    "Attempt to modify a readonly table");
    /* A raw write lands in the view, not in the metatable: no __gc runs. */
    expect(
        EVAL("local p = newproxy(true) rawset(getmetatable(p), '__gc', function() error('x') end) "
             "p = nil collectgarbage() collectgarbage() return 1",
             "0"),
        ":1");
    /* Proxies and their views are collected (the readonly map keeps none). */
    expect(EVAL("collectgarbage() local before = collectgarbage('count') "
                "for i = 1, 20000 do newproxy(true) end collectgarbage() collectgarbage() "
                "return collectgarbage('count') - before < 100",
                "0"),
           ":1");
    /* Other fields still work. */
    expect(EVAL("local p = newproxy(true) getmetatable(p).__index = function() return 9 end "
                "local q = newproxy(p) return {p.x, q.y, type(newproxy(false))}",
                "0"),
           "*3 :9 :9 $userdata");
    for (int i = 0; i < 200; i++)
        EVAL("local p = newproxy(true) pcall(function() getmetatable(p).__gc = error end) "
             "local t = {} for i = 1, 100 do t[i] = {ok = 'x' .. i} end return t",
             "1", "k");
    expect(EVAL("return 1", "0"), ":1");
}
END_TEST

START_TEST(test_reply_nesting_limits) {
    /* A reply nested deeper than the Lua stack can take. */
    expect(EVAL("return redis.call('nest', '5')", "0"), "*1 *1 *1 *1 *1 *0");
    /* A Lua value nested deeper than the stack (CVE-2021-32626). */
    const char *r = EVAL("local t = {} local c = t for i = 1, 20000 do c[1] = {} c = c[1] end "
                         "return t",
                         "0");
    expect_contains(r, "-ERR reached lua stack limit");
}
END_TEST

/* ---- the sandbox ---- */

START_TEST(test_globals_protection) {
    const char *r = EVAL("return a", "0");
    expect_prefix(r, "-ERR user_script:1: Script attempted to access nonexistent global variable "
                     "'a' script: f_");
    expect_prefix(EVAL("a = 10", "0"), "-ERR user_script:1: Attempt to modify a readonly table");
    expect_contains(EVAL("setmetatable(_G, {})", "0"), "Attempt to modify a readonly table");
    expect_contains(EVAL("local g = getmetatable(_G) g.__index = {}", "0"),
                    "Attempt to modify a readonly table");
    expect_contains(EVAL("redis = function() return 1 end", "0"),
                    "Attempt to modify a readonly table");
    expect_contains(EVAL("_G = {}", "0"), "Attempt to modify a readonly table");
    expect_contains(EVAL("rawset(_G, 'x', 1)", "0"), "Attempt to modify a readonly table");
    expect_contains(EVAL("setfenv(0, {})", "0"), "setfenv cannot change the global environment");
    /* A function's own environment may change (Valkey allows setfenv). */
    expect(EVAL("local function f() return x end setfenv(f, {x = 5}) return f()", "0"), ":5");
    expect_contains(EVAL("return dofile('/etc/passwd')", "0"),
                    "nonexistent global variable 'dofile'");
    expect_contains(EVAL("return loadfile('/etc/passwd')", "0"),
                    "nonexistent global variable 'loadfile'");
    expect_contains(EVAL("print('x')", "0"), "nonexistent global variable 'print'");
    expect_contains(EVAL("return os.execute('true')", "0"), "attempt to call field 'execute'");
    expect(EVAL("return type(os.clock())", "0"), "$number");
    expect_contains(EVAL("return require", "0"), "nonexistent global variable 'require'");
}
END_TEST

START_TEST(test_readonly_libraries) {
    static const char *const writes[] = {
        "redis.call = function() return 1 end", "server.call = 1",
        "cjson.encode = function() return 1 end", "bit.lshift = 1", "string.upper = 1",
        "table.insert = 1", "math.floor = 1", "os.clock = 1", "coroutine.create = 1",
        "rawset(string, 'upper', 1)", "setmetatable(cjson, {})",
        /* CVE-2025-46818: the basic types' metatables */
        "getmetatable('').__index = function() return 1 end", "getmetatable('').__index.upper = 1",
        "rawset(getmetatable(''), '__index', {})", "getmetatable(string).__index = {}"};
    for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++)
        expect_contains(EVAL(writes[i], "0"), "Attempt to modify a readonly table");
    /* The views still read and iterate. */
    expect(EVAL("return ('x'):upper()", "0"), "$X");
    expect(EVAL("local n = 0 for k in pairs(string) do n = n + 1 end return n > 5", "0"), ":1");
    expect(EVAL("return getmetatable(nil)", "0"), "_");
    expect(EVAL("return type(next(redis))", "0"), "$string");
    /* Nothing leaked into the next script. */
    expect(EVAL("return string.upper('a')", "0"), "$A");
}
END_TEST

START_TEST(test_bytecode_refused) {
    expect_contains(EVAL("return loadstring(string.dump(function() return 1 end))()", "0"),
                    "attempt to call a nil value");
    expect_contains(EVAL("local s = string.dump(function() return 1 end) "
                         "return load(function() local r = s s = nil return r end)()",
                         "0"),
                    "attempt to call a nil value");
    expect(EVAL("return loadstring('return 7')()", "0"), ":7");
}
END_TEST

/* ---- the CVE mitigations ---- */

START_TEST(test_cve_unpack) {
    /* CVE-2025-46817: e - i + 1 overflowed int. */
    expect_contains(EVAL("return unpack({}, -2147483648, 2147483647)", "0"),
                    "too many results to unpack");
    expect_contains(EVAL("return unpack({}, 0, 2147483647)", "0"), "too many results to unpack");
    expect(EVAL("return {unpack({1,2,3})}", "0"), "*3 :1 :2 :3");
    expect(EVAL("return {unpack({1,2,3}, 2)}", "0"), "*2 :2 :3");
    expect(EVAL("return select('#', unpack({}, 5, 1))", "0"), ":0");
}
END_TEST

START_TEST(test_cve_tohex) {
    /* CVE-2024-31449: the width INT32_MIN was negated into a negative
     * length. */
    expect(EVAL("return bit.tohex(65535, -2147483648)", "0"), "$0000FFFF");
    expect(EVAL("return bit.tohex(65535)", "0"), "$0000ffff");
    expect(EVAL("return bit.tohex(255, -2)", "0"), "$FF");
    expect(EVAL("return bit.tohex(-1, 4)", "0"), "$ffff");
    expect(EVAL("return bit.band(0xff, 0x0f)", "0"), ":15");
}
END_TEST

START_TEST(test_cve_cjson) {
    /* CVE-2022-24834: a string whose escaped size would overflow lua-cjson's
     * int-sized buffer is refused before cjson starts. */
    expect_contains(EVAL("return cjson.encode(string.rep('x', 100 * 1024 * 1024))", "0"),
                    "value too large to encode");
    expect_contains(EVAL("local s = string.rep('\"', 50 * 1024 * 1024) "
                         "return cjson.encode({s, s})",
                         "0"),
                    "value too large to encode");
    expect(EVAL("return cjson.encode({1, 'a', {b = true}})", "0"), "$[1,\"a\",{\"b\":true}]");
    expect(EVAL("return #cjson.encode(string.rep('x', 1000000))", "0"), ":1000002");
    expect(EVAL("return cjson.decode('[1,2]')[2]", "0"), ":2");
    /* A cycle: cjson reports the depth, the walk before it stays linear. */
    expect_contains(EVAL("local t = {} t[1] = t t[2] = t return cjson.encode(t)", "0"),
                    "Cannot serialise, excessive nesting");
}
END_TEST

START_TEST(test_cve_parser_gc) {
    /* CVE-2025-49844: compiling with the collector stopped; many chunks
     * with long names compile while garbage piles up. */
    expect(EVAL("local n = 0 for i = 1, 200 do local s = string.rep('x', 1000) .. i "
                "local f = loadstring('return ' .. i, s) n = n + f() collectgarbage('step') end "
                "return n",
                "0"),
           ":20100");
}
END_TEST

START_TEST(test_math_random) {
    const char *a = EVAL("math.randomseed(42) return {math.random(100), math.random(100)}", "0");
    char first[64];
    snprintf(first, sizeof(first), "%s", a);
    expect(EVAL("math.randomseed(42) return {math.random(100), math.random(100)}", "0"), first);
    expect(EVAL("local r = math.random() return r >= 0 and r < 1", "0"), ":1");
}
END_TEST

START_TEST(test_server_api_misc) {
    expect(EVAL("return redis.sha1hex('')", "0"), "$da39a3ee5e6b4b0d3255bfef95601890afd80709");
    expect_contains(EVAL("return redis.sha1hex()", "0"), "wrong number of arguments");
    expect(
        EVAL("return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_REPLICA, redis.REPL_ALL}", "0"),
        "*4 :0 :1 :2 :3");
    expect(EVAL("redis.set_repl(redis.REPL_ALL) return 1", "0"), ":1");
    expect_contains(EVAL("redis.set_repl(12345)", "0"), "Invalid replication flags");
    expect(EVAL("return redis.replicate_commands()", "0"), ":1");
    expect(EVAL("return redis.breakpoint()", "0"), "_");
    expect(EVAL("redis.debug('x') return 1", "0"), ":1");
    expect(EVAL("return {redis.REDIS_VERSION, redis.SERVER_NAME, redis.SERVER_VERSION}", "0"),
           "*3 $7.2.4 $valkey $8.0.1");
    expect(EVAL("return redis.REDIS_VERSION_NUM", "0"), ":459268");
    expect(EVAL("return redis.log(redis.LOG_WARNING, 'hello', 'there')", "0"), "_");
    expect_contains(EVAL("redis.log(99, 'x')", "0"), "Invalid log level.");
    expect_contains(EVAL("redis.log(1)", "0"), "requires two arguments or more");
    expect_contains(EVAL("redis.setresp(4)", "0"), "RESP version must be 2 or 3.");
    expect(EVAL("return redis.acl_check_cmd('set', 'k', 'v')", "0"), ":1");
    expect_contains(EVAL("return redis.acl_check_cmd('nosuch')", "0"),
                    "Invalid command passed to server.acl_check_cmd()");
}
END_TEST

/* ---- flags and the run rules ---- */

START_TEST(test_shebang) {
    expect(EVAL("#!lua\nreturn 1", "0"), ":1");
    expect(EVAL("#!lua flags=no-writes,allow-oom\nreturn 2", "0"), ":2");
    expect(EVAL("#!lua flags=\nreturn 3", "0"), ":3");
    expect(EVAL("#!lua", "0"), "-ERR Invalid script shebang");
    expect(EVAL("#!python\nreturn 1", "0"), "-ERR Unexpected engine in script shebang: #!python");
    expect(EVAL("#!lua flags=no-writes,bad\nreturn 1", "0"),
           "-ERR Unexpected flag in script shebang: bad");
    expect(EVAL("#!lua name=x\nreturn 1", "0"), "-ERR Unknown lua shebang option: name=x");
    /* The shebang line keeps the line numbers right. */
    expect_contains(EVAL("#!lua\n\nerror('x')", "0"), "user_script:3: x");
}
END_TEST

START_TEST(test_call_flags_hook) {
    const char *body = "#!lua flags=no-writes\nreturn 1";
    const char *argv[] = {"eval", body, "0"};
    size_t lens[] = {4, strlen(body), 1};
    keel_ctx ctx = {3, argv, lens, 2};
    uint32_t base = KEEL_CMD_NOSCRIPT | KEEL_CMD_MAY_REPLICATE | KEEL_CMD_STALE;
    ck_assert_uint_eq(eval_call_flags(&ctx, base), KEEL_CMD_NOSCRIPT);
    const char *w = "#!lua\nreturn 1";
    argv[1] = w;
    lens[1] = strlen(w);
    ck_assert_uint_eq(eval_call_flags(&ctx, base),
                      KEEL_CMD_NOSCRIPT | KEEL_CMD_WRITE | KEEL_CMD_DENYOOM);
    const char *o = "#!lua flags=allow-oom,allow-stale\nreturn 1";
    argv[1] = o;
    lens[1] = strlen(o);
    ck_assert_uint_eq(eval_call_flags(&ctx, base),
                      KEEL_CMD_NOSCRIPT | KEEL_CMD_WRITE | KEEL_CMD_STALE);
    /* Compatibility mode: the registered flags. */
    const char *c = "return 1";
    argv[1] = c;
    lens[1] = strlen(c);
    ck_assert_uint_eq(eval_call_flags(&ctx, base), base);
}
END_TEST

START_TEST(test_read_only) {
    expect_prefix(EVAL("return redis.call('set', 'k', 'v')", "0"), "+OK");
    const char *argv[] = {"eval_ro", "return redis.call('set', 'k', 'v')", "0"};
    expect_prefix(run_argv(2, 3, argv),
                  "-ERR Write commands are not allowed from read-only scripts. script:");
    argv[1] = "return redis.call('publish', 'c', 'm')";
    expect_prefix(run_argv(2, 3, argv),
                  "-ERR Write commands are not allowed from read-only scripts.");
    argv[1] = "return redis.call('ping')";
    expect(run_argv(2, 3, argv), "+PONG");
    argv[1] = "#!lua\nreturn 1";
    expect(run_argv(2, 3, argv),
           "-ERR Can not execute a script with write flag using *_ro command.");
    argv[1] = "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')";
    expect_prefix(run_argv(2, 3, argv),
                  "-ERR Write commands are not allowed from read-only scripts.");
    expect_prefix(EVAL("#!lua flags=no-writes\nreturn redis.call('incr', 'k')", "0"),
                  "-ERR Write commands are not allowed from read-only scripts.");
}
END_TEST

START_TEST(test_oom) {
    fake_max = 100;
    fake_used = 200;
    /* Compatibility mode: deny-oom commands refused until the first write. */
    expect_prefix(EVAL("return redis.call('incr', 'k')", "0"),
                  "-OOM command not allowed when used memory > 'maxmemory'. script:");
    expect(EVAL("return redis.call('ping')", "0"), "+PONG");
    expect(EVAL("#!lua flags=allow-oom\nreturn redis.call('incr', 'k')", "0"), ":1");
    expect(EVAL("#!lua\nreturn 1", "0"),
           "-OOM allow-oom flag is not set on the script, can not run it when used memory > "
           "'maxmemory'");
    expect(EVAL("#!lua flags=no-writes\nreturn redis.call('ping')", "0"), "+PONG");
    fake_used = 50;
    expect(EVAL("return redis.call('incr', 'k')", "0"), ":2");
}
END_TEST

START_TEST(test_kill) {
    kill_at_yield = 2;
    const char *r = EVAL("local i = 0 while true do i = i + 1 end", "0");
    expect_prefix(r, "-ERR Script killed by user with SCRIPT KILL... script: f_");
    ck_assert_str_eq(kill_reply, "+OK ");
    /* A pcall cannot catch the kill and go on. */
    yields = 0;
    r = EVAL("while true do pcall(function() while true do end end) end", "0");
    expect_prefix(r, "-ERR Script killed by user with SCRIPT KILL...");
    /* After a write it cannot be killed: the script ends on its own. */
    yields = 0;
    kill_at_yield = 2;
    r = EVAL("redis.call('set', 'k', 'v') local i = 0 while i < 1000000 do i = i + 1 end return i",
             "0");
    expect(r, ":1000000");
    expect_prefix(kill_reply, "-UNKILLABLE Sorry the script already executed write commands");
    /* Nothing running. */
    const char *argv[] = {"SCRIPT", "KILL"};
    expect(run_argv(2, 2, argv), "-NOTBUSY No scripts in execution right now.");
}
END_TEST

/* ---- the scripts cache and SCRIPT ---- */

START_TEST(test_script_cache) {
    const char *load[] = {"SCRIPT", "LOAD", "return 'loaded'"};
    char sha[64];
    snprintf(sha, sizeof(sha), "%s", run_argv(2, 3, load) + 1);
    ck_assert_uint_eq(strlen(sha), 40);
    const char *evalsha[] = {"EVALSHA", sha, "0"};
    expect(run_argv(2, 3, evalsha), "$loaded");
    for (char *p = sha; *p; p++)
        if (*p >= 'a' && *p <= 'f') *p -= 32;
    expect(run_argv(2, 3, evalsha), "$loaded");
    const char *missing[] = {"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"};
    expect(run_argv(2, 3, missing), "-NOSCRIPT No matching script.");
    const char *shortsha[] = {"EVALSHA", "abc", "0"};
    expect(run_argv(2, 3, shortsha), "-NOSCRIPT No matching script.");
    /* EVAL adds to the cache under its SHA1. */
    EVAL("return 'evaled'", "0");
    const char *exists[] = {"SCRIPT", "EXISTS", "9bd3fc5ce5ab1d9f4b1ed5a1e31ccfb5a3d8e1ae",
                            "ffffffffffffffffffffffffffffffffffffffff"};
    const char *r = run_argv(2, 4, exists);
    expect_prefix(r, "*2 :");
    const char *show[] = {"SCRIPT", "SHOW", sha};
    expect(run_argv(2, 3, show), "$return 'loaded'");
    const char *flush[] = {"SCRIPT", "FLUSH"};
    expect(run_argv(2, 2, flush), "+OK");
    expect(run_argv(2, 3, evalsha), "-NOSCRIPT No matching script.");
    const char *flushbad[] = {"SCRIPT", "FLUSH", "LATER"};
    expect(run_argv(2, 3, flushbad), "-ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    const char *flushasync[] = {"SCRIPT", "FLUSH", "async"};
    expect(run_argv(2, 3, flushasync), "+OK");
    const char *bad[] = {"SCRIPT", "NOPE"};
    expect(run_argv(2, 2, bad),
           "-ERR unknown subcommand or wrong number of arguments for 'NOPE'. Try SCRIPT HELP.");
    const char *loadargs[] = {"SCRIPT", "LOAD"};
    expect(run_argv(2, 2, loadargs), "-ERR wrong number of arguments for 'script|load' command");
    const char *debug[] = {"SCRIPT", "DEBUG", "YES"};
    expect_prefix(run_argv(2, 3, debug), "-ERR SCRIPT DEBUG is not supported");
    const char *help[] = {"SCRIPT", "HELP"};
    expect_prefix(run_argv(2, 2, help), "*19 +SCRIPT <subcommand>");
    const char *loadbad[] = {"SCRIPT", "LOAD", "return +"};
    expect_prefix(run_argv(2, 3, loadbad), "-ERR Error compiling script (new function)");
}
END_TEST

START_TEST(test_script_exists_sha) {
    EVAL("return 'evaled'", "0");
    /* The SHA1 of "return 'evaled'" computed by server.sha1hex. */
    char want[64];
    snprintf(want, sizeof(want), "%s", EVAL("return redis.sha1hex(\"return 'evaled'\")", "0") + 1);
    const char *exists[] = {"SCRIPT", "EXISTS", want, "0000000000000000000000000000000000000000"};
    expect(run_argv(2, 4, exists), "*2 :1 :0");
}
END_TEST

START_TEST(test_lru) {
    /* EVAL keeps at most 500 scripts of its own; SCRIPT LOAD's stay. */
    const char *load[] = {"SCRIPT", "LOAD", "return 'pinned'"};
    char sha[64];
    snprintf(sha, sizeof(sha), "%s", run_argv(2, 3, load) + 1);
    char body[64];
    for (int i = 0; i < 600; i++) {
        snprintf(body, sizeof(body), "return %d", i);
        const char *argv[] = {"EVAL", body, "0"};
        run_argv(2, 3, argv);
    }
    eval_info info;
    eval_stats(&info);
    ck_assert_uint_eq(info.scripts, 501);
    ck_assert_int_eq(info.evicted, 100);
    const char *evalsha[] = {"EVALSHA", sha, "0"};
    expect(run_argv(2, 3, evalsha), "$pinned");
    ck_assert_int_gt(info.vm_memory, 0);
    ck_assert_int_gt(info.caches_memory, 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("lua_engine");
    TCase *tc = tcase_create("engine");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_lua_to_reply);
    tcase_add_test(tc, test_resp3_booleans);
    tcase_add_test(tc, test_keys_argv);
    tcase_add_test(tc, test_call_conversions);
    tcase_add_test(tc, test_call_errors);
    tcase_add_test(tc, test_hostile_results);
    tcase_add_test(tc, test_reply_nesting_limits);
    tcase_add_test(tc, test_globals_protection);
    tcase_add_test(tc, test_readonly_libraries);
    tcase_add_test(tc, test_bytecode_refused);
    tcase_add_test(tc, test_cve_unpack);
    tcase_add_test(tc, test_cve_tohex);
    tcase_add_test(tc, test_cve_cjson);
    tcase_add_test(tc, test_cve_parser_gc);
    tcase_add_test(tc, test_math_random);
    tcase_add_test(tc, test_server_api_misc);
    tcase_add_test(tc, test_shebang);
    tcase_add_test(tc, test_call_flags_hook);
    tcase_add_test(tc, test_read_only);
    tcase_add_test(tc, test_oom);
    tcase_add_test(tc, test_kill);
    tcase_add_test(tc, test_script_cache);
    tcase_add_test(tc, test_script_exists_sha);
    tcase_add_test(tc, test_lru);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
