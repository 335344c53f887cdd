/* fuzz_eval.c -- libFuzzer target for the Lua module: the in-process core
 * (fuzz_common.c) with modules/lua loaded through the core's module loader,
 * and each input decoded into Lua programs run with EVAL, or loaded as a
 * library with FUNCTION LOAD and called with FCALL, or raw bytes handed to
 * FUNCTION RESTORE. The fuzzer so spends its time in the engine's sandbox,
 * the conversions between Lua values and replies, server.call, cjson,
 * cmsgpack, struct and bit, and in FUNCTION's loader and payload parser,
 * not in Lua's own parser.
 *
 * Decoding (a read past the end of the input yields zero bytes):
 *
 *   run   := job*                        FE_MAX_JOBS at most
 *   job   := mode:u8 body
 *   mode  % 8: 0-4 EVAL of a chunk, 5 FUNCTION LOAD REPLACE of the chunk as
 *         a library's function then FCALL or FCALL_RO of it, 6 FUNCTION
 *         RESTORE of the next len:u8 bytes (odd len: sealed with a valid
 *         envelope, fe_restore_raw), 7 FUNCTION DUMP and FUNCTION
 *         LIST WITHCODE (the writers, over what earlier jobs loaded)
 *   chunk := nstmt:u8 stmt* expr         the statements, then `return expr`
 *
 * Statements and expressions come from a small grammar (fe_stmt, fe_expr:
 * locals, bounded for loops, if, pcall, server.call and server.pcall with
 * commands on two keys, string and table operations, cjson, cmsgpack,
 * struct, bit, sha1hex, status and error replies), each choice read from
 * one byte. Everything is bounded by construction: loops run at most 8
 * times and nest twice, nothing recurses, string.rep counts stay small and
 * every local is cut to FE_MAX_STR bytes, so no input stalls the process or
 * grows memory without bound. KEEL_FUZZ_TRACE=1 prints each script. At the
 * end of every run SCRIPT FLUSH and FUNCTION FLUSH put the module back to
 * its initial state, as fuzz_reset_run does for the core. */
#include "fuzz_common.h"

#include "fn_dump.h"

#include "module/module.h"
#include "session/client.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FE_MAX_JOBS 16
#define FE_MAX_STMTS 8
#define FE_MAX_DEPTH 4
#define FE_MAX_STR 4096
#define FE_MAX_SCRIPT (64u << 10)

typedef struct fe_buf {
    char *ptr;
    size_t len, cap;
} fe_buf;

typedef struct fe_run {
    const uint8_t *in;
    size_t left;
    fe_buf src;  /* the script being generated */
    fe_buf wire; /* a command as RESP */
    int locals;  /* v1..v<locals> are defined */
    int loops;   /* loop nesting where the statement is generated */
    client *c;
} fe_run;

static int fe_tracing;

/* ---- buffers and input ---- */

static void fe_append(fe_buf *b, const void *p, size_t n) {
    if (n == 0) return; /* also keeps a still empty buffer's NULL out of memcpy */
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n)
            cap *= 2;
        b->ptr = realloc(b->ptr, cap);
        if (!b->ptr) fuzz_die("out of memory", NULL);
        b->cap = cap;
    }
    memcpy(b->ptr + b->len, p, n);
    b->len += n;
}

static void fe_printf(fe_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fe_printf(fe_buf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) fe_append(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void fe_puts(fe_buf *b, const char *s) {
    fe_append(b, s, strlen(s));
}

static uint8_t fe_byte(fe_run *r) {
    if (!r->left) return 0;
    r->left--;
    return *r->in++;
}

/* ---- the grammar ---- */

static void fe_expr(fe_run *r, int depth);

/* A Lua string literal of up to 15 input bytes, every byte as \ddd. */
static void fe_string(fe_run *r) {
    static const char *const words[] = {"k1",
                                        "k2",
                                        "field",
                                        "0",
                                        "-1",
                                        "1.5",
                                        "inf",
                                        "nan",
                                        "{\"a\":[1,2,{\"b\":null}]}",
                                        "[[[[[[[[[[]]]]]]]]]]",
                                        "\\x93\\x01\\xa1a\\xc0",
                                        "ok",
                                        "err",
                                        "",
                                        "9007199254740993",
                                        ">i4"};
    uint8_t b = fe_byte(r);
    if (b < 0xc0) {
        fe_printf(&r->src, "'%s'", words[b % (sizeof words / sizeof words[0])]);
        return;
    }
    int n = b & 0x0f;
    fe_puts(&r->src, "'");
    for (int i = 0; i < n; i++)
        fe_printf(&r->src, "\\%u", fe_byte(r));
    fe_puts(&r->src, "'");
}

static void fe_number(fe_run *r) {
    static const char *const nums[] = {
        "0",   "1",    "-1",    "2^53",       "-2^63",       "0.1", "1/0", "-(1/0)",
        "0/0", "2^31", "1e308", "4294967295", "-2147483649", "3",   "255", "65536"};
    uint8_t b = fe_byte(r);
    if (b < 0xc0)
        fe_puts(&r->src, nums[b % (sizeof nums / sizeof nums[0])]);
    else
        fe_printf(&r->src, "%d", (int8_t)fe_byte(r));
}

/* A struct format from a small alphabet, counts included. */
static void fe_struct_format(fe_run *r) {
    static const char alphabet[] = "<>!=xbBhHlLTiIcsfd 0123489";
    int n = 1 + fe_byte(r) % 8;
    fe_puts(&r->src, "'");
    for (int i = 0; i < n; i++) {
        char ch = alphabet[fe_byte(r) % (sizeof alphabet - 1)];
        fe_append(&r->src, &ch, 1);
    }
    fe_puts(&r->src, "'");
}

/* A command for server.call / pcall, on the two keys or KEYS[1]. */
static void fe_command(fe_run *r, int depth) {
    static const char *const cmds[] = {
        "'set', KEYS[1] or 'k1', ",
        "'get', KEYS[1] or 'k1'",
        "'incr', 'k2'",
        "'del', 'k1', 'k2'",
        "'lpush', 'k2', ",
        "'lrange', 'k2', 0, -1",
        "'hset', 'h', 'f', ",
        "'hgetall', 'h'",
        "'sadd', 's', ",
        "'smembers', 's'",
        "'zadd', 'z', 1, ",
        "'zrange', 'z', 0, -1, 'withscores'",
        "'expire', 'k1', ",
        "'type', 'k1'",
        "'ping'",
        "'echo', ",
        "'exists', 'k1', 'k2'",
        "'incrbyfloat', 'k2', ",
        "'nosuchcommand'",
        "'eval', 'return 1', 0",
        "'hello', 3",
        "'object', 'encoding', 'k1'",
        "'setrange', 'k1', 0, ",
        "'getrange', 'k1', 0, -1",
    };
    const char *c = cmds[fe_byte(r) % (sizeof cmds / sizeof cmds[0])];
    fe_puts(&r->src, c);
    size_t len = strlen(c);
    if (len >= 2 && c[len - 2] == ',' && c[len - 1] == ' ') fe_expr(r, depth + 1);
}

/* Calls whose one argument is an expression. */
static const char *const fe_unary[] = {
    "tostring(",           "tonumber(",     "type(",          "#tostring(",
    "cjson.encode(",       "cjson.decode(", "cmsgpack.pack(", "cmsgpack.unpack(",
    "redis.sha1hex(",      "string.upper(", "string.byte(",   "math.floor(",
    "bit.tobit(",          "bit.bnot(",     "bit.tohex(",     "server.status_reply(",
    "server.error_reply(", "table.concat(", "unpack(",        "select('#', ",
};

/* Operators and two-argument calls: "a OP b" or "f(a, b)". */
static const char *const fe_binary[] = {
    " .. ", " + ", " - ", " * ", " / ", " % ", " == ", " < ", " and ", " or ",
};
static const char *const fe_calls2[] = {
    "string.rep(",
    "string.sub(",
    "bit.band(",
    "bit.lshift(",
    "bit.bxor(",
    "math.max(",
    "cmsgpack.unpack_one(",
    "string.format('%s %d', ",
};

static void fe_call2(fe_run *r, int depth) {
    const char *f = fe_calls2[fe_byte(r) % (sizeof fe_calls2 / sizeof fe_calls2[0])];
    fe_puts(&r->src, f);
    fe_expr(r, depth + 1);
    fe_puts(&r->src, ", ");
    if (!strcmp(f, "string.rep("))
        fe_printf(&r->src, "%d", fe_byte(r) % 9); /* a small count */
    else
        fe_expr(r, depth + 1);
    fe_puts(&r->src, ")");
}

static void fe_table(fe_run *r, int depth) {
    int n = fe_byte(r) % 4;
    fe_puts(&r->src, "{");
    for (int i = 0; i < n; i++) {
        if (fe_byte(r) & 1) fe_printf(&r->src, "f%d = ", i);
        fe_expr(r, depth + 1);
        fe_puts(&r->src, ", ");
    }
    fe_puts(&r->src, "}");
}

static void fe_struct(fe_run *r, int depth) {
    int unpack = fe_byte(r) & 1;
    fe_puts(&r->src, unpack ? "struct.unpack(" : "struct.pack(");
    fe_struct_format(r);
    fe_puts(&r->src, ", ");
    fe_expr(r, depth + 1);
    if (!unpack) {
        fe_puts(&r->src, ", ");
        fe_expr(r, depth + 1);
    }
    fe_puts(&r->src, ")");
}

static void fe_expr(fe_run *r, int depth) {
    uint8_t b = fe_byte(r);
    if (depth >= FE_MAX_DEPTH) b %= 4;
    switch (b % 16) {
    case 0:
        fe_number(r);
        break;
    case 1:
        fe_string(r);
        break;
    case 2:
        if (r->locals)
            fe_printf(&r->src, "v%d", 1 + fe_byte(r) % r->locals);
        else
            fe_puts(&r->src, "nil");
        break;
    case 3:
        fe_puts(&r->src, (fe_byte(r) & 1) ? "KEYS[1]" : "ARGV[1]");
        break;
    case 4:
        fe_table(r, depth);
        break;
    case 5:
    case 6:
        fe_puts(&r->src, fe_unary[fe_byte(r) % (sizeof fe_unary / sizeof fe_unary[0])]);
        fe_expr(r, depth + 1);
        fe_puts(&r->src, ")");
        break;
    case 7:
        fe_puts(&r->src, "(");
        fe_expr(r, depth + 1);
        fe_puts(&r->src, fe_binary[fe_byte(r) % (sizeof fe_binary / sizeof fe_binary[0])]);
        fe_expr(r, depth + 1);
        fe_puts(&r->src, ")");
        break;
    case 8:
        fe_call2(r, depth);
        break;
    case 9:
    case 10:
        fe_puts(&r->src, (b & 0x10) ? "server.pcall(" : "server.call(");
        fe_command(r, depth);
        fe_puts(&r->src, ")");
        break;
    case 11:
        fe_puts(&r->src, "select(2, pcall(function() return ");
        fe_expr(r, depth + 1);
        fe_puts(&r->src, " end))");
        break;
    case 12:
        fe_struct(r, depth);
        break;
    case 13:
        fe_puts(&r->src, "cjson.encode(cjson.decode(");
        fe_string(r);
        fe_puts(&r->src, "))");
        break;
    case 14:
        fe_puts(&r->src, "cmsgpack.unpack(cmsgpack.pack(");
        fe_expr(r, depth + 1);
        fe_puts(&r->src, "))");
        break;
    default:
        fe_puts(&r->src, (b & 0x10) ? "{ok = " : "{err = ");
        fe_string(r);
        fe_puts(&r->src, "}");
    }
}

/* A statement; a loop body never assigns a local of the chunk, so
 * repetition cannot grow a value. */
static void fe_stmt(fe_run *r) {
    uint8_t b = fe_byte(r);
    if (r->loops >= 2 && b % 4 == 1) b = 0;
    switch (b % 4) {
    case 0:
        fe_puts(&r->src, "pcall(server.call, ");
        fe_command(r, 1);
        fe_puts(&r->src, ")\n");
        break;
    case 1:
        fe_printf(&r->src, "for i = 1, %d do\n", 1 + fe_byte(r) % 8);
        r->loops++;
        fe_stmt(r);
        r->loops--;
        fe_puts(&r->src, "end\n");
        break;
    case 2:
        fe_puts(&r->src, "if ");
        fe_expr(r, 2);
        fe_puts(&r->src, " then\n");
        fe_stmt(r);
        fe_puts(&r->src, "end\n");
        break;
    default:
        if (r->loops) {
            fe_puts(&r->src, "local _ = ");
            fe_expr(r, 1);
            fe_puts(&r->src, "\n");
        } else {
            fe_printf(&r->src, "local v%d = S(", r->locals + 1);
            fe_expr(r, 1);
            fe_puts(&r->src, ")\n");
            r->locals++;
        }
    }
}

/* A whole chunk into r->src: the size guard S, statements, a return. */
static void fe_chunk(fe_run *r) {
    r->src.len = 0;
    r->locals = 0;
    r->loops = 0;
    fe_printf(&r->src,
              "local function S(x) if type(x) == 'string' and #x > %d then "
              "return x:sub(1, %d) end return x end\n",
              FE_MAX_STR, FE_MAX_STR);
    int n = fe_byte(r) % (FE_MAX_STMTS + 1);
    for (int i = 0; i < n && r->src.len < FE_MAX_SCRIPT; i++)
        fe_stmt(r);
    fe_puts(&r->src, "return ");
    fe_expr(r, 1);
    fe_puts(&r->src, "\n");
}

/* ---- sending ---- */

/* Sends argv as one RESP command to the run's client, then does what
 * before-sleep and the cron would. */
static void fe_send(fe_run *r, int argc, const char *const *argv, const size_t *lens) {
    if (r->c && !fuzz_client_usable(r->c)) {
        /* As before-sleep: closing after its reply goes now, closed
         * asynchronously goes with client_free_closed. */
        if (!(r->c->flags & CLIENT_CLOSE_ASAP)) client_free(r->c);
        client_free_closed();
        r->c = NULL;
    }
    if (!r->c) r->c = client_create(NULL);
    r->wire.len = 0;
    fe_printf(&r->wire, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        fe_printf(&r->wire, "$%zu\r\n", lens[i]);
        fe_append(&r->wire, argv[i], lens[i]);
        fe_puts(&r->wire, "\r\n");
    }
    fuzz_feed(r->c, (const uint8_t *)r->wire.ptr, r->wire.len);
    fuzz_between_reads();
    fuzz_pin_limits();
}

static void fe_send_words(fe_run *r, int argc, const char *const *argv) {
    size_t lens[8];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    fe_send(r, argc, argv, lens);
}

static void fe_eval(fe_run *r) {
    fe_chunk(r);
    if (fe_tracing) fprintf(stderr, "fuzz_eval: EVAL\n%.*s\n", (int)r->src.len, r->src.ptr);
    const char *argv[] = {"EVAL", r->src.ptr, "1", "k1", "arg"};
    size_t lens[] = {4, r->src.len, 1, 2, 3};
    fe_send(r, 5, argv, lens);
}

static void fe_fcall(fe_run *r) {
    fe_chunk(r);
    fe_buf lib = {0};
    fe_puts(&lib, "#!lua name=fz\nserver.register_function('fz', function(KEYS, ARGV)\n");
    fe_append(&lib, r->src.ptr, r->src.len);
    fe_puts(&lib, "end)\n");
    if (fe_tracing) fprintf(stderr, "fuzz_eval: FUNCTION LOAD\n%.*s\n", (int)lib.len, lib.ptr);
    const char *load[] = {"FUNCTION", "LOAD", "REPLACE", lib.ptr};
    size_t load_lens[] = {8, 4, 7, lib.len};
    fe_send(r, 4, load, load_lens);
    free(lib.ptr);
    const char *call[] = {(fe_byte(r) & 1) ? "FCALL_RO" : "FCALL", "fz", "1", "k1", "arg"};
    fe_send_words(r, 5, call);
}

/* FUNCTION RESTORE of the next len bytes: as they are (the envelope
 * check), or, when len is odd, sealed as the payload's body (magic and
 * version before, a valid CRC-64 after) so the count, the lengths and the
 * libraries behind the checksum are what gets fuzzed. */
static void fe_restore_raw(fe_run *r) {
    size_t n = fe_byte(r);
    int seal = n & 1;
    if (n > r->left) n = r->left;
    fe_buf p = {0};
    if (seal) fe_append(&p, "KEELFN\x01", 7);
    fe_append(&p, r->in, n);
    if (seal) {
        uint64_t crc = fn_dump_crc64(0, (const unsigned char *)p.ptr, p.len);
        unsigned char le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (unsigned char)(crc >> (8 * i));
        fe_append(&p, le, 8);
    }
    const char *argv[] = {"FUNCTION", "RESTORE", p.len ? p.ptr : "", "REPLACE"};
    size_t lens[] = {8, 7, p.len, 7};
    fe_send(r, 4, argv, lens);
    free(p.ptr);
    r->in += n;
    r->left -= n;
}

static void fe_dump(fe_run *r) {
    const char *dump[] = {"FUNCTION", "DUMP"}, *list[] = {"FUNCTION", "LIST", "WITHCODE"};
    fe_send_words(r, 2, dump);
    fe_send_words(r, 3, list);
}

static void fe_job(fe_run *r) {
    switch (fe_byte(r) % 8) {
    case 5:
        fe_fcall(r);
        break;
    case 6:
        fe_restore_raw(r);
        break;
    case 7:
        fe_dump(r);
        break;
    default:
        fe_eval(r);
    }
}

/* ---- libFuzzer entry points ---- */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fe_tracing = getenv("KEEL_FUZZ_TRACE") != NULL;
    fuzz_init("fuzz_eval");
    char *err = NULL;
    const char *path = getenv("KEEL_FUZZ_LUA_MODULE");
    if (!path) path = KEEL_FUZZ_LUA_MODULE;
    if (module_load(path, 0, NULL, 0, NULL, &err) != 0) fuzz_die("cannot load the lua module", err);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fe_run r; /* static: its buffers are reused across runs */
    r.in = data;
    r.left = size;
    r.c = NULL;
    fuzz_begin_run();
    for (int n = 0; r.left > 0 && n < FE_MAX_JOBS; n++)
        fe_job(&r);
    const char *sflush[] = {"SCRIPT", "FLUSH"}, *fflush[] = {"FUNCTION", "FLUSH"};
    fe_send_words(&r, 2, sflush);
    fe_send_words(&r, 2, fflush);
    fuzz_close_clients(&r.c, 1);
    fuzz_reset_run();
    return 0;
}
