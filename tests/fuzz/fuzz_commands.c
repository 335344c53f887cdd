/* fuzz_commands.c -- libFuzzer target for command logic. Each input is
 * decoded as a program of whole, well-formed commands taken from the live
 * command table, with hostile arguments, so the fuzzer spends its time inside
 * the commands (option parsing, number conversion, ranges, expiry, globs,
 * transactions, several clients) rather than in the parser, which is
 * fuzz_request.c's ground.
 *
 * Decoding (a read past the end of the input yields zero bytes):
 *
 *   program := step*            until the input ends, FZ_MAX_COMMANDS at most
 *   step    := sel:u16le [extra:u8] arg*
 *   sel     bits 0-13: the command or subcommand, by its place on a ring
 *           hashed from the names (fz_pick_command: stable when the table
 *           grows); bits 14-15: the client sending it (0 and 1: client 0;
 *           2: client 1; 3: client 2).
 *   extra   variadic commands only (arity -N): argc is N + (extra & 7), or
 *           N + (extra & 63) when extra's two top bits are set. A command of
 *           arity N > 0 gets exactly N arguments.
 *   arg     := kind:u8 payload, one per argument after the name (and the
 *           subcommand's name). kind modulo FZ_KIND_COUNT picks a palette of
 *           fz_kinds[], which reads its own payload. Where the command's
 *           grammar (fz_grammars[]: SET k v [NX|...|EX #], SCAN # [MATCH *],
 *           CONFIG SET n v ...) or, failing one, the command table's key
 *           positions say what an argument is, kind < 0x80 picks that
 *           palette instead, so most mutations keep commands well-formed and
 *           on the same few keys.
 *
 * An input that starts with FZ_LITERAL_MAGIC is a literal program instead:
 * the commands' bytes as they are (fz_build_literal), the stable form
 * regressions are kept in. KEEL_FUZZ_TRACE=1 prints each command decoded,
 * KEEL_FUZZ_LITERAL=FILE writes them as a literal program, and
 * KEEL_FUZZ_ENCODE=FILE a literal program's commands as steps (the seeds).
 *
 * Each command is encoded as a RESP multibulk and fed to its client in
 * socket-sized reads; the client cron runs once with the replies still
 * queued (output buffer limits), then, as before-sleep and the cron would,
 * the replies are dropped, the crons run, and clients that closed (QUIT,
 * CLIENT KILL, SHUTDOWN, output limits) are freed; a fresh client takes the
 * slot of a closed one on its next command.
 *
 * Bounds: at most FZ_RUN_BYTES generated argument bytes per run, an argument
 * at most 64 KB + 1 (big arguments, >= 32 KB, included); a reply at most
 * the normal clients' hard output limit (FUZZ_OBUF_HARD: a huge count's
 * reply ends with its client, as in Valkey); fuzz_pin_limits undoes a
 * CONFIG SET that raised maxmemory, proto-max-bulk-len or that limit, and
 * CONFIG SET is never queued inside MULTI (its EXEC would run with raised
 * limits).
 * Nothing here can stall: DEBUG is never sent (DEBUG SLEEP; it is disabled
 * anyway), nor PFSELFTEST, nor any command flagged blocking; MODULE is unregistered and
 * SHUTDOWN forgotten by fuzz_common.c, which also owns the set-up and the
 * reset between runs. */
#include "fuzz_common.h"

#include "session/command.h"
#include "session/client.h"
#include "server/server.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CLIENTS 3
#define FZ_MAX_ARGS 72 /* 2 names + the largest arity's minimum + 63 extra */
#define FZ_MAX_COMMANDS 512
#define FZ_RUN_BYTES (4u << 20)
#define FZ_HINT_BELOW 0x80 /* kind bytes below this take a position's hint */

/* ---- the command ring ---- */

/* Every top-level command and subcommand sits at FZ_POINTS points of a
 * ring of FZ_RING values, derived from a hash of its full name; sel picks
 * the command at the first point at or after it. A command added to the
 * table (or renamed) takes over parts of a few arcs only, so most inputs of
 * the corpus keep choosing the same commands; several points per command
 * even out the share of the ring each gets. */
#define FZ_RING 0x4000
#define FZ_POINTS 8

typedef struct fz_entry {
    const command *cmd;
    uint32_t point;
} fz_entry;

static fz_entry *fz_ring;
static size_t fz_npoints, fz_cap;

/* Commands the fuzzer must not reach: they would stall the process
 * (PFSELFTEST takes no input and seconds under the sanitizers; check_hll
 * runs it). */
static int fz_excluded(const command *cmd) {
    return (cmd->flags & CMD_BLOCKING) || strcasecmp(cmd->name, "debug") == 0 ||
           strcasecmp(cmd->name, "pfselftest") == 0;
}

static uint32_t fz_point(const char *name, int j) {
    uint32_t h = 2166136261u; /* FNV-1a of the name, then of j */
    for (; *name; name++)
        h = (h ^ (uint8_t)*name) * 16777619u;
    h = (h ^ (uint32_t)j) * 16777619u;
    return (h ^ h >> 16) % FZ_RING;
}

static void fz_collect(command *cmd, void *priv) {
    (void)priv;
    const command *top = cmd->parent ? cmd->parent : cmd;
    if (fz_excluded(top) || fz_excluded(cmd)) return;
    if (fz_npoints + FZ_POINTS > fz_cap) {
        fz_cap = fz_cap ? fz_cap * 2 : 512;
        fz_ring = realloc(fz_ring, fz_cap * sizeof(*fz_ring));
        if (!fz_ring) fuzz_die("out of memory", NULL);
    }
    for (int j = 0; j < FZ_POINTS; j++)
        fz_ring[fz_npoints++] = (fz_entry){cmd, fz_point(cmd->fullname, j)};
}

static int fz_cmp_entry(const void *a, const void *b) {
    const fz_entry *x = a, *y = b;
    if (x->point != y->point) return x->point < y->point ? -1 : 1;
    return strcmp(x->cmd->fullname, y->cmd->fullname);
}

/* Sorted by point; a point taken already moves up by one, so every point
 * owns at least one sel value. */
static void fz_build_ring(void) {
    command_foreach_all(fz_collect, NULL);
    if (!fz_npoints) fuzz_die("empty command table", NULL);
    qsort(fz_ring, fz_npoints, sizeof(*fz_ring), fz_cmp_entry);
    for (size_t i = 1; i < fz_npoints; i++)
        if (fz_ring[i].point <= fz_ring[i - 1].point) fz_ring[i].point = fz_ring[i - 1].point + 1;
}

static const command *fz_pick_command(uint32_t sel) {
    sel %= FZ_RING;
    size_t lo = 0, hi = fz_npoints; /* first entry with point >= sel */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fz_ring[mid].point < sel)
            lo = mid + 1;
        else
            hi = mid;
    }
    return fz_ring[lo < fz_npoints ? lo : 0].cmd;
}

/* A literal command's table entry (NULL if unknown), as dispatch finds it. */
static const command *fz_resolve(const char *name, size_t len, const char *sub, size_t sublen,
                                 int argc) {
    const command *cmd = command_lookup(name, len);
    if (!cmd || !cmd->subcommands || argc < 2) return cmd;
    const command *found = command_lookup_sub(cmd, sub, sublen);
    return found ? found : cmd;
}

/* ---- tracing and literal output ---- */

/* KEEL_FUZZ_TRACE=1 prints every decoded command (fz_trace); 2 also the
 * ring at start-up. KEEL_FUZZ_LITERAL=FILE writes the commands sent as a
 * literal program (see fz_build_literal) to FILE. */
static int fz_tracing;
static FILE *fz_literal_out;
static FILE *fz_encode_out; /* KEEL_FUZZ_ENCODE (see fz_enc_command) */

static void fz_trace_ring(void) {
    for (size_t i = 0; i < fz_npoints; i++)
        fprintf(stderr, "fuzz_commands: sel %u..%u: %s (arity %d)\n",
                i ? (unsigned)fz_ring[i - 1].point + 1 : 0, (unsigned)fz_ring[i].point,
                fz_ring[i].cmd->fullname, fz_ring[i].cmd->arity);
    fprintf(stderr, "fuzz_commands: sel %u..%u: wraps to the first\n",
            (unsigned)fz_ring[fz_npoints - 1].point + 1, FZ_RING - 1);
}

#define FZ_LITERAL_MAGIC "\xffKEELCMD1"
#define FZ_LITERAL_MAGIC_LEN (sizeof(FZ_LITERAL_MAGIC) - 1)

static void fz_open_literal(const char *path) {
    fz_literal_out = fopen(path, "wb");
    if (!fz_literal_out) fuzz_die("cannot write KEEL_FUZZ_LITERAL", path);
    fwrite(FZ_LITERAL_MAGIC, 1, FZ_LITERAL_MAGIC_LEN, fz_literal_out);
    fflush(fz_literal_out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_init("fuzz_commands");
    fz_build_ring();
    const char *trace = getenv("KEEL_FUZZ_TRACE");
    fz_tracing = trace ? atoi(trace) : 0;
    if (fz_tracing >= 2) fz_trace_ring();
    const char *literal = getenv("KEEL_FUZZ_LITERAL");
    if (literal && *literal) fz_open_literal(literal);
    const char *encode = getenv("KEEL_FUZZ_ENCODE");
    if (encode && *encode && !(fz_encode_out = fopen(encode, "wb")))
        fuzz_die("cannot write KEEL_FUZZ_ENCODE", encode);
    return 0;
}

/* ---- one run's state ---- */

typedef struct fz_buf {
    char *ptr;
    size_t len, cap;
} fz_buf;

typedef struct fz_run {
    const uint8_t *in; /* input not yet decoded */
    size_t left;
    int literal; /* the input is a literal program (fz_build_literal) */
    client *cl[FZ_CLIENTS];
    size_t budget; /* argument bytes left to generate in this run */
    /* The command being built: its arguments back to back in args. */
    const command *cmd;
    const struct fz_grammar *grammar; /* what its arguments are, if known */
    const char *pending;              /* value kinds owed to the last option */
    size_t npending;
    int argc;
    size_t off[FZ_MAX_ARGS], len[FZ_MAX_ARGS];
    fz_buf args;
    fz_buf wire; /* the same command as RESP */
} fz_run;

static void fz_reserve(fz_buf *b, size_t n) {
    if (b->cap - b->len >= n) return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n)
        cap *= 2;
    b->ptr = realloc(b->ptr, cap);
    if (!b->ptr) fuzz_die("out of memory", NULL);
    b->cap = cap;
}

static void fz_append(fz_buf *b, const void *p, size_t n) {
    fz_reserve(b, n);
    if (n) memcpy(b->ptr + b->len, p, n);
    b->len += n;
}

static void fz_fill(fz_buf *b, int ch, size_t n) {
    fz_reserve(b, n);
    memset(b->ptr + b->len, ch, n);
    b->len += n;
}

static void fz_printf(fz_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fz_printf(fz_buf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0) fz_append(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* ---- reading the input ---- */

static uint8_t fz_u8(fz_run *r) {
    if (!r->left) return 0;
    r->left--;
    return *r->in++;
}

static uint16_t fz_u16(fz_run *r) {
    uint16_t lo = fz_u8(r);
    return (uint16_t)(lo | (uint16_t)fz_u8(r) << 8);
}

static uint64_t fz_u64(fz_run *r) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)fz_u8(r) << (8 * i);
    return v;
}

/* Up to n input bytes, fewer when the input ends. */
static size_t fz_take(fz_run *r, size_t n, const uint8_t **out) {
    n = n < r->left ? n : r->left;
    *out = r->in;
    r->in += n;
    r->left -= n;
    return n;
}

/* n capped by what the run may still generate. */
static size_t fz_budget(fz_run *r, size_t n) {
    return n < r->budget ? n : r->budget;
}

/* ---- palettes ---- */

typedef struct fz_str {
    const char *s;
    size_t n;
} fz_str;

/* The tables below are laid out by hand. */
/* clang-format off */
#define FZ_S(lit) {lit, sizeof(lit) - 1}
#define FZ_PICK(r, table) (&(table)[fz_u8(r) % (sizeof(table) / sizeof((table)[0]))])

/* Few keys, so commands keep meeting the same values. */
static const fz_str fz_keys[] = {
    FZ_S("a"), FZ_S("b"), FZ_S("c"), FZ_S("key:1"), FZ_S(""), FZ_S("{tag}x"), FZ_S("key:2"),
    FZ_S("k\0\xff"),
};

/* Integer, float and memory-size edge cases, and near misses of them. */
static const fz_str fz_numbers[] = {
    FZ_S("0"), FZ_S("1"), FZ_S("-1"), FZ_S("2"), FZ_S("-2"), FZ_S("3"), FZ_S("10"), FZ_S("100"),
    FZ_S("2147483647"), FZ_S("2147483648"), FZ_S("-2147483648"), FZ_S("-2147483649"),
    FZ_S("4294967295"), FZ_S("4294967296"),
    FZ_S("9223372036854775807"), FZ_S("9223372036854775806"), FZ_S("9223372036854775808"),
    FZ_S("-9223372036854775808"), FZ_S("-9223372036854775807"), FZ_S("-9223372036854775809"),
    FZ_S("18446744073709551615"), FZ_S("18446744073709551616"),
    FZ_S("9007199254740992"), FZ_S("9007199254740993"), FZ_S("-9007199254740993"),
    FZ_S("99999999999999999999999999999999999999999"), FZ_S("-99999999999999999999999999999"),
    FZ_S("inf"), FZ_S("-inf"), FZ_S("+inf"), FZ_S("nan"), FZ_S("-nan"), FZ_S("Infinity"),
    FZ_S("1e308"), FZ_S("-1e308"), FZ_S("1e309"), FZ_S("1.7976931348623157e308"),
    FZ_S("4.9e-324"), FZ_S("1e-400"), FZ_S("9.2233720368547758e18"), FZ_S("1e18"),
    FZ_S("0x10"), FZ_S(" 1"), FZ_S("1 "), FZ_S("+1"), FZ_S("-0"), FZ_S("01"), FZ_S("1."),
    FZ_S(".5"), FZ_S("1.5"), FZ_S("-1.5"), FZ_S("1e3"), FZ_S("1,5"), FZ_S(""), FZ_S("1\0"),
    FZ_S("1kb"), FZ_S("1mb"), FZ_S("64mb"), FZ_S("1gb"), FZ_S("4gb"), FZ_S("-1mb"), FZ_S("1k"),
    FZ_S("15"), FZ_S("16"), FZ_S("17"), FZ_S("1048575"), FZ_S("1048576"), FZ_S("1048577"),
    FZ_S("32767"), FZ_S("32768"), FZ_S("536870911"), FZ_S("536870912"),
    FZ_S("1700000000"), FZ_S("1700000000000"), FZ_S("253402300799"), FZ_S("253402300800000"),
};

/* Option words of many commands (SET, GETEX, EXPIRE, SCAN, CLIENT KILL,
 * SHUTDOWN, MEMORY USAGE, HELLO, INFO, FLUSHALL, ...), a few lower case. */
static const fz_str fz_options[] = {
    FZ_S("NX"), FZ_S("XX"), FZ_S("GT"), FZ_S("LT"), FZ_S("CH"), FZ_S("EX"), FZ_S("PX"),
    FZ_S("EXAT"), FZ_S("PXAT"), FZ_S("KEEPTTL"), FZ_S("GET"), FZ_S("PERSIST"),
    FZ_S("WITHSCORES"), FZ_S("LIMIT"), FZ_S("COUNT"), FZ_S("MATCH"), FZ_S("TYPE"),
    FZ_S("REPLACE"), FZ_S("ABSTTL"), FZ_S("IDLETIME"), FZ_S("FREQ"), FZ_S("DB"), FZ_S("ID"),
    FZ_S("ADDR"), FZ_S("LADDR"), FZ_S("USER"), FZ_S("SKIPME"), FZ_S("MAXAGE"), FZ_S("NOSAVE"),
    FZ_S("SAVE"), FZ_S("NOW"), FZ_S("FORCE"), FZ_S("ABORT"), FZ_S("SAMPLES"), FZ_S("ON"),
    FZ_S("OFF"), FZ_S("YES"), FZ_S("NO"), FZ_S("LIB-NAME"), FZ_S("LIB-VER"), FZ_S("AUTH"),
    FZ_S("SETNAME"), FZ_S("HELP"), FZ_S("ASYNC"), FZ_S("SYNC"), FZ_S("string"), FZ_S("none"),
    FZ_S("hash"), FZ_S("normal"), FZ_S("master"), FZ_S("replica"), FZ_S("pubsub"),
    FZ_S("default"), FZ_S("all"), FZ_S("everything"), FZ_S("server"), FZ_S("clients"),
    FZ_S("memory"), FZ_S("stats"), FZ_S("keyspace"), FZ_S("commandstats"),
    FZ_S("errorstats"), FZ_S("ex"), FZ_S("nx"), FZ_S("get"), FZ_S("withscores"),
    /* The aggregate types' (appended: earlier inputs keep their picks). */
    FZ_S("LEFT"), FZ_S("RIGHT"), FZ_S("BEFORE"), FZ_S("AFTER"), FZ_S("MIN"), FZ_S("MAX"),
    FZ_S("SUM"), FZ_S("BYSCORE"), FZ_S("BYLEX"), FZ_S("REV"), FZ_S("INCR"), FZ_S("WEIGHTS"),
    FZ_S("AGGREGATE"), FZ_S("WITHSCORE"), FZ_S("WITHVALUES"), FZ_S("NOVALUES"),
    FZ_S("NOSCORES"), FZ_S("FIELDS"), FZ_S("RANK"), FZ_S("MAXLEN"), FZ_S("BY"), FZ_S("ALPHA"),
    FZ_S("ASC"), FZ_S("DESC"), FZ_S("STORE"), FZ_S("list"), FZ_S("set"), FZ_S("zset"),
    FZ_S("FNX"), FZ_S("FXX"), FZ_S("(1"), FZ_S("[a"), FZ_S("(a"), FZ_S("-"), FZ_S("+"),
    FZ_S("(-inf"), FZ_S("(+inf"),
    /* Streams, bits, geo and LCS (appended likewise). */
    FZ_S("STREAMS"), FZ_S("GROUP"), FZ_S("MKSTREAM"), FZ_S("ENTRIESREAD"), FZ_S("MINID"),
    FZ_S("NOMKSTREAM"), FZ_S("~"), FZ_S("="), FZ_S("$"), FZ_S(">"), FZ_S("*"), FZ_S("IDLE"),
    FZ_S("TIME"), FZ_S("RETRYCOUNT"), FZ_S("JUSTID"), FZ_S("LASTID"), FZ_S("FULL"),
    FZ_S("ENTRIESADDED"), FZ_S("MAXDELETEDID"), FZ_S("0-0"), FZ_S("1-1"),
    FZ_S("18446744073709551615-18446744073709551615"), FZ_S("BYTE"), FZ_S("BIT"), FZ_S("AND"),
    FZ_S("OR"), FZ_S("XOR"), FZ_S("NOT"), FZ_S("OVERFLOW"), FZ_S("WRAP"), FZ_S("SAT"),
    FZ_S("FAIL"), FZ_S("i8"), FZ_S("u63"), FZ_S("i64"), FZ_S("#1"), FZ_S("FROMMEMBER"),
    FZ_S("FROMLONLAT"), FZ_S("BYRADIUS"), FZ_S("BYBOX"), FZ_S("BYPOLYGON"), FZ_S("km"),
    FZ_S("mi"), FZ_S("WITHCOORD"), FZ_S("WITHDIST"), FZ_S("WITHHASH"), FZ_S("ANY"),
    FZ_S("STOREDIST"), FZ_S("IDX"), FZ_S("MINMATCHLEN"), FZ_S("WITHMATCHLEN"), FZ_S("LEN"),
    FZ_S("IFEQ"),
};

/* Glob corner cases: unterminated and nested classes, escapes, stars. */
static const fz_str fz_globs[] = {
    FZ_S("*"), FZ_S("?"), FZ_S("**"), FZ_S("***?"), FZ_S("a*"), FZ_S("*a"), FZ_S("?a*"),
    FZ_S("k*"), FZ_S("key:*"), FZ_S("{tag}*"), FZ_S("[a-"), FZ_S("[^]]"), FZ_S("[]"),
    FZ_S("["), FZ_S("]"), FZ_S("[]]"), FZ_S("[^"), FZ_S("[a-z]"), FZ_S("[z-a]"),
    FZ_S("[^a-c]"), FZ_S("[abc]*"), FZ_S("\\"), FZ_S("\\*"), FZ_S("\\\\"), FZ_S("*\\"),
    FZ_S("[\\]]"), FZ_S("[\\"), FZ_S("[[]"), FZ_S("[[[[]]]]"), FZ_S("[a-z[0-9]]"),
    FZ_S("*?*?*?*?*?"), FZ_S("a*a*a*a*a*a*a*a*a*a*b"), FZ_S("[-a]"), FZ_S("[a-]"),
    FZ_S("a**b"), FZ_S("[^-]"), FZ_S("*[a-"), FZ_S("max*"), FZ_S("*-*"), FZ_S("k\0*"),
};

/* Values of directives beyond their defaults (the snapshot's). */
static const fz_str fz_config_values[] = {
    FZ_S("allkeys-lfu"), FZ_S("volatile-lfu"), FZ_S("volatile-ttl"), FZ_S("volatile-lru"),
    FZ_S("allkeys-random"), FZ_S("volatile-random"), FZ_S("noeviction"), FZ_S("allkeys-lru"),
    FZ_S("yes"), FZ_S("no"), FZ_S("local"), FZ_S("1kb"), FZ_S("100kb"), FZ_S("1mb"), FZ_S("2mb"),
    FZ_S("normal 1 1 1"), FZ_S("normal 100 10 0"), FZ_S("normal 0 1 9223372036854775807"),
    FZ_S("normal 1kb 1kb 1 replica 0 0 0 pubsub 0 0 0"), FZ_S("debug"), FZ_S("verbose"),
    FZ_S("0"), FZ_S("1"), FZ_S("-1"), FZ_S("500"), FZ_S("9223372036854775807"), FZ_S(""),
};

/* Units repeated by fz_gen_stars. */
static const fz_str fz_star_units[] = {
    FZ_S("*"), FZ_S("a*"), FZ_S("*?"), FZ_S("[a*"), FZ_S("\\*"), FZ_S("*[^a]"), FZ_S("?"),
};

/* Around the reply chunk, socket read and big-argument thresholds. */
static const size_t fz_long_lens[] = {
    0, 1, 255, 1023, 1024, 16383, 16384, 16385, 32767, 32768, 32769, 65535, 65536, 65537,
};
/* clang-format on */

/* ---- argument grammar ---- */

/* What the arguments of some commands are, as kind letters:
 *   k key   # number   * glob   c client id   n directive   v directive value
 *   m command name   o option word of any command   $ anything
 *   N a number that counts the arguments after it (numkeys), else as '#'
 * fixed: the arguments after the name(s), one letter each; cycle: the
 * letters the remaining arguments repeat (with options, only as many as a
 * fixed N counts: ZUNION 3 k k k WEIGHTS ...); options: the command's
 * option words, each optionally followed by ':' and the kinds of its
 * values ("EX:#"). Where a grammar says what an argument is, a kind byte below
 * FZ_HINT_BELOW takes that; commands without one get only the command
 * table's key positions. A few commands' worth of knowledge, so the fuzzer
 * gets past the syntax checks; the rest it finds by itself. */
typedef struct fz_grammar {
    const char *cmd; /* full name */
    const char *fixed, *cycle, *options;
} fz_grammar;

#define FZ_EXPIRE_OPTS "NX XX GT LT"
#define FZ_SET_EXPIRY "EX:# PX:# EXAT:# PXAT:#"
#define FZ_INFO_SECTIONS                                                                           \
    "server clients memory stats keyspace commandstats errorstats persistence replication cpu "    \
    "modules all default everything"

/* clang-format off */
static const fz_grammar fz_grammars[] = {
    {"set", "k$", NULL, "NX XX GET KEEPTTL " FZ_SET_EXPIRY},
    {"getex", "k", NULL, "PERSIST " FZ_SET_EXPIRY},
    {"setex", "k#$", NULL, NULL},        {"psetex", "k#$", NULL, NULL},
    {"setnx", "k$", NULL, NULL},         {"getset", "k$", NULL, NULL},
    {"append", "k$", NULL, NULL},        {"setrange", "k#$", NULL, NULL},
    {"getrange", "k##", NULL, NULL},     {"substr", "k##", NULL, NULL},
    {"incrby", "k#", NULL, NULL},        {"decrby", "k#", NULL, NULL},
    {"incrbyfloat", "k#", NULL, NULL},
    {"mset", "", "k$", NULL},            {"msetnx", "", "k$", NULL},
    {"expire", "k#", NULL, FZ_EXPIRE_OPTS},   {"pexpire", "k#", NULL, FZ_EXPIRE_OPTS},
    {"expireat", "k#", NULL, FZ_EXPIRE_OPTS}, {"pexpireat", "k#", NULL, FZ_EXPIRE_OPTS},
    {"copy", "kk", NULL, "DB:# REPLACE"},
    {"move", "k#", NULL, NULL},          {"select", "#", NULL, NULL},
    {"swapdb", "##", NULL, NULL},        {"keys", "*", NULL, NULL},
    {"scan", "#", NULL, "MATCH:* COUNT:# TYPE:o NOVALUES NOSCORES"},
    {"flushall", "", NULL, "ASYNC SYNC"}, {"flushdb", "", NULL, "ASYNC SYNC"},
    {"shutdown", "", NULL, "NOSAVE SAVE NOW FORCE ABORT"},
    {"bgsave", "", NULL, "SCHEDULE"},
    {"hello", "#", NULL, "AUTH:$$ SETNAME:$"},
    {"info", "", NULL, FZ_INFO_SECTIONS},
    {"memory|usage", "k", NULL, "SAMPLES:#"},
    {"client|kill", "", NULL, "ID:c ADDR:$ LADDR:$ USER:$ SKIPME:o MAXAGE:# TYPE:o"},
    {"client|list", "", NULL, "TYPE:o ID:c"},
    {"client|no-evict", "", NULL, "ON OFF"},
    {"client|setinfo", "", NULL, "LIB-NAME:$ LIB-VER:$"},
    {"command|info", "", "m", NULL},     {"command|docs", "", "m", NULL},
    {"command|getkeys", "m", "$", NULL},
    {"command|list", "", NULL, "FILTERBY MODULE:$ ACLCAT:$ PATTERN:*"},
    {"config|get", "", "n", NULL},       {"config|set", "", "nv", NULL},
    {"slowlog|get", "#", NULL, NULL},
    /* Hashes. */
    {"hset", "k", "$$", NULL},           {"hmset", "k", "$$", NULL},
    {"hsetnx", "k$$", NULL, NULL},       {"hget", "k$", NULL, NULL},
    {"hmget", "k", "$", NULL},           {"hdel", "k", "$", NULL},
    {"hincrby", "k$#", NULL, NULL},      {"hincrbyfloat", "k$#", NULL, NULL},
    {"hrandfield", "k#", NULL, "WITHVALUES"},
    {"hscan", "k#", NULL, "MATCH:* COUNT:# NOVALUES"},
    {"hexpire", "k#", NULL, FZ_EXPIRE_OPTS " FIELDS:#$"},
    {"hpexpire", "k#", NULL, FZ_EXPIRE_OPTS " FIELDS:#$"},
    {"hexpireat", "k#", NULL, FZ_EXPIRE_OPTS " FIELDS:#$"},
    {"hpexpireat", "k#", NULL, FZ_EXPIRE_OPTS " FIELDS:#$"},
    {"httl", "k", NULL, "FIELDS:#$"},    {"hpttl", "k", NULL, "FIELDS:#$"},
    {"hexpiretime", "k", NULL, "FIELDS:#$"}, {"hpexpiretime", "k", NULL, "FIELDS:#$"},
    {"hpersist", "k", NULL, "FIELDS:#$"},
    {"hgetex", "k", NULL, "PERSIST FIELDS:#$ " FZ_SET_EXPIRY},
    {"hsetex", "k", NULL, "FNX FXX KEEPTTL FIELDS:#$$ " FZ_SET_EXPIRY},
    {"hgetdel", "k", NULL, "FIELDS:#$"},
    /* Lists. */
    {"lpush", "k", "$", NULL},           {"rpush", "k", "$", NULL},
    {"lpushx", "k", "$", NULL},          {"rpushx", "k", "$", NULL},
    {"linsert", "k", NULL, "BEFORE:$$ AFTER:$$"},
    {"lindex", "k#", NULL, NULL},        {"lset", "k#$", NULL, NULL},
    {"lrange", "k##", NULL, NULL},       {"ltrim", "k##", NULL, NULL},
    {"lpop", "k#", NULL, NULL},          {"rpop", "k#", NULL, NULL},
    {"lrem", "k#$", NULL, NULL},
    {"lpos", "k$", NULL, "RANK:# COUNT:# MAXLEN:#"},
    {"rpoplpush", "kk", NULL, NULL},     {"lmove", "kk", NULL, "LEFT RIGHT"},
    {"lmpop", "Nk", "k", "LEFT RIGHT COUNT:#"},
    /* Sets. */
    {"sadd", "k", "$", NULL},            {"srem", "k", "$", NULL},
    {"smove", "kk$", NULL, NULL},        {"sismember", "k$", NULL, NULL},
    {"smismember", "k", "$", NULL},      {"spop", "k#", NULL, NULL},
    {"srandmember", "k#", NULL, NULL},   {"sintercard", "Nk", "k", "LIMIT:#"},
    {"sscan", "k#", NULL, "MATCH:* COUNT:#"},
    /* Sorted sets. */
    {"zadd", "k", "#$", NULL}, /* flags come from the option palette */
    {"zincrby", "k#$", NULL, NULL},      {"zrem", "k", "$", NULL},
    {"zrange", "k##", NULL, "BYSCORE BYLEX REV LIMIT:## WITHSCORES"},
    {"zrangestore", "kk##", NULL, "BYSCORE BYLEX REV LIMIT:##"},
    {"zrangebyscore", "k##", NULL, "WITHSCORES LIMIT:##"},
    {"zrevrangebyscore", "k##", NULL, "WITHSCORES LIMIT:##"},
    {"zrangebylex", "k$$", NULL, "LIMIT:##"}, {"zrevrangebylex", "k$$", NULL, "LIMIT:##"},
    {"zrevrange", "k##", NULL, "WITHSCORES"}, {"zcount", "k##", NULL, NULL},
    {"zlexcount", "k$$", NULL, NULL},    {"zremrangebyscore", "k##", NULL, NULL},
    {"zremrangebyrank", "k##", NULL, NULL}, {"zremrangebylex", "k$$", NULL, NULL},
    {"zunion", "Nk", "k", "WEIGHTS:## AGGREGATE:o WITHSCORES"},
    {"zinter", "Nk", "k", "WEIGHTS:## AGGREGATE:o WITHSCORES"},
    {"zdiff", "Nk", "k", "WITHSCORES"},
    {"zunionstore", "kNk", "k", "WEIGHTS:## AGGREGATE:o"},
    {"zinterstore", "kNk", "k", "WEIGHTS:## AGGREGATE:o"},
    {"zdiffstore", "kNk", "k", NULL},    {"zintercard", "Nk", "k", "LIMIT:#"},
    {"zscore", "k$", NULL, NULL},        {"zmscore", "k", "$", NULL},
    {"zrank", "k$", NULL, "WITHSCORE"},  {"zrevrank", "k$", NULL, "WITHSCORE"},
    {"zpopmin", "k#", NULL, NULL},       {"zpopmax", "k#", NULL, NULL},
    {"zmpop", "Nk", "k", "MIN MAX COUNT:#"},
    {"zrandmember", "k#", NULL, "WITHSCORES"},
    {"zscan", "k#", NULL, "MATCH:* COUNT:# NOSCORES"},
    /* Every type. */
    {"sort", "k", NULL, "BY:* LIMIT:## GET:* ASC DESC ALPHA STORE:k"},
    {"sort_ro", "k", NULL, "BY:* LIMIT:## GET:* ASC DESC ALPHA"},
};
/* clang-format on */

static const fz_grammar *fz_grammar_of(const command *cmd) {
    for (size_t i = 0; i < sizeof(fz_grammars) / sizeof(fz_grammars[0]); i++)
        if (strcmp(fz_grammars[i].cmd, cmd->fullname) == 0) return &fz_grammars[i];
    return NULL;
}

/* ---- argument generators: each appends one argument to r->args ---- */

static void fz_put(fz_run *r, const fz_str *s) {
    fz_append(&r->args, s->s, s->n);
}

static void fz_gen_key(fz_run *r) {
    fz_put(r, FZ_PICK(r, fz_keys));
}

static void fz_gen_number(fz_run *r) {
    fz_put(r, FZ_PICK(r, fz_numbers));
}

static void fz_gen_small(fz_run *r) {
    fz_printf(&r->args, "%d", (int8_t)fz_u8(r));
}

static void fz_gen_int64(fz_run *r) {
    fz_printf(&r->args, "%lld", (long long)fz_u64(r));
}

/* Any double, NaN payloads and subnormals included, in one of several
 * spellings strtod and strtold accept. */
static void fz_gen_double(fz_run *r) {
    static const char *const fmts[] = {"%.17g", "%g", "%.0f", "%a", "%.3e"};
    const char *fmt = fmts[fz_u8(r) % (sizeof(fmts) / sizeof(fmts[0]))];
    uint64_t bits = fz_u64(r);
    double d;
    memcpy(&d, &bits, sizeof(d));
    fz_printf(&r->args, fmt, d);
}

static void fz_gen_option(fz_run *r) {
    fz_put(r, FZ_PICK(r, fz_options));
}

static void fz_gen_glob(fz_run *r) {
    fz_put(r, FZ_PICK(r, fz_globs));
}

/* A unit repeated up to 4080 times (past glob's nesting cap of 1000), then
 * a byte that fails the match at the very end. */
static void fz_gen_stars(fz_run *r) {
    const fz_str *unit = FZ_PICK(r, fz_star_units);
    size_t times = fz_budget(r, (size_t)fz_u8(r) * 16) / unit->n;
    for (size_t i = 0; i < times; i++)
        fz_put(r, unit);
    fz_append(&r->args, "b", 1);
}

/* Up to 255 bytes of the input itself. */
static void fz_gen_binary(fz_run *r) {
    const uint8_t *p;
    size_t n = fz_take(r, fz_u8(r), &p);
    fz_append(&r->args, p, n);
}

/* A long run of one byte ('9' makes a huge number, '*' a huge glob). */
static void fz_gen_long(fz_run *r) {
    size_t len = fz_long_lens[fz_u8(r) % (sizeof(fz_long_lens) / sizeof(fz_long_lens[0]))];
    fz_fill(&r->args, fz_u8(r), fz_budget(r, len));
}

static void fz_gen_config_name(fz_run *r) {
    const char *s = fuzz_config_name(fz_u16(r) % fuzz_config_count());
    fz_append(&r->args, s, strlen(s));
}

/* Some directive's initial value, or one of fz_config_values: a valid
 * value of some type (yes/no, an enum, a memory size, "normal 0 0 0 ..."),
 * not necessarily this directive's. */
static void fz_gen_config_value(fz_run *r) {
    uint16_t pick = fz_u16(r);
    if (pick & 0x8000) {
        fz_put(r,
               &fz_config_values[pick % (sizeof(fz_config_values) / sizeof(fz_config_values[0]))]);
        return;
    }
    const char *s = fuzz_config_value(pick % fuzz_config_count());
    fz_append(&r->args, s, strlen(s));
}

/* "get" or "config|get", as COMMAND INFO takes them. */
static void fz_gen_command_name(fz_run *r) {
    const command *cmd = fz_pick_command(fz_u16(r));
    fz_append(&r->args, cmd->fullname, strlen(cmd->fullname));
}

/* The id of one of the run's clients (CLIENT KILL ID), or of none. */
static void fz_gen_client_id(fz_run *r) {
    unsigned slot = fz_u8(r) % (FZ_CLIENTS + 1);
    client *c = slot < FZ_CLIENTS ? r->cl[slot] : NULL;
    unsigned long long id = c ? c->id : 1ULL << 62; /* no client has it */
    fz_printf(&r->args, "%llu", id);
}

/* An earlier argument of the same command again (RENAME a a, SET k k). */
static void fz_gen_repeat(fz_run *r) {
    int i = fz_u8(r) % r->argc;
    fz_reserve(&r->args, r->len[i]); /* may move args.ptr: copy after */
    fz_append(&r->args, r->args.ptr + r->off[i], r->len[i]);
}

/* One of the command's own option words (its grammar's), or of any
 * command's; the kinds after its ':' become the next arguments' hints. */
static void fz_gen_cmd_option(fz_run *r) {
    const char *words = r->grammar ? r->grammar->options : NULL;
    if (!words) {
        fz_gen_option(r);
        return;
    }
    size_t nwords = 1;
    for (const char *p = words; *p; p++)
        nwords += *p == ' ';
    size_t pick = fz_u8(r) % nwords;
    const char *w = words;
    while (pick--)
        w = strchr(w, ' ') + 1;
    size_t len = strcspn(w, " "), word = strcspn(w, ": ");
    fz_append(&r->args, w, word);
    r->pending = w + word + (word < len);
    r->npending = len - word - (word < len);
}

typedef void (*fz_gen)(fz_run *r);

enum {
    FZ_KIND_KEY,
    FZ_KIND_NUMBER,
    FZ_KIND_SMALL,
    FZ_KIND_INT64,
    FZ_KIND_DOUBLE,
    FZ_KIND_OPTION,
    FZ_KIND_GLOB,
    FZ_KIND_STARS,
    FZ_KIND_BINARY,
    FZ_KIND_LONG,
    FZ_KIND_CONFIG_NAME,
    FZ_KIND_CONFIG_VALUE,
    FZ_KIND_COMMAND_NAME,
    FZ_KIND_CLIENT_ID,
    FZ_KIND_REPEAT,
    FZ_KIND_CMD_OPTION,
    FZ_KIND_COUNT
};

static const fz_gen fz_kinds[FZ_KIND_COUNT] = {
    [FZ_KIND_KEY] = fz_gen_key,
    [FZ_KIND_NUMBER] = fz_gen_number,
    [FZ_KIND_SMALL] = fz_gen_small,
    [FZ_KIND_INT64] = fz_gen_int64,
    [FZ_KIND_DOUBLE] = fz_gen_double,
    [FZ_KIND_OPTION] = fz_gen_option,
    [FZ_KIND_GLOB] = fz_gen_glob,
    [FZ_KIND_STARS] = fz_gen_stars,
    [FZ_KIND_BINARY] = fz_gen_binary,
    [FZ_KIND_LONG] = fz_gen_long,
    [FZ_KIND_CONFIG_NAME] = fz_gen_config_name,
    [FZ_KIND_CONFIG_VALUE] = fz_gen_config_value,
    [FZ_KIND_COMMAND_NAME] = fz_gen_command_name,
    [FZ_KIND_CLIENT_ID] = fz_gen_client_id,
    [FZ_KIND_REPEAT] = fz_gen_repeat,
    [FZ_KIND_CMD_OPTION] = fz_gen_cmd_option,
};

/* ---- building one command ---- */

static int fz_is(const command *cmd, const char *fullname) {
    return cmd && strcmp(cmd->fullname, fullname) == 0;
}

static int fz_kind_of(char letter) {
    switch (letter) {
    case 'k':
        return FZ_KIND_KEY;
    case '#':
    case 'N':
        return FZ_KIND_NUMBER;
    case '*':
        return FZ_KIND_GLOB;
    case 'c':
        return FZ_KIND_CLIENT_ID;
    case 'n':
        return FZ_KIND_CONFIG_NAME;
    case 'v':
        return FZ_KIND_CONFIG_VALUE;
    case 'm':
        return FZ_KIND_COMMAND_NAME;
    case 'o':
        return FZ_KIND_OPTION;
    default:
        return -1; /* '$' */
    }
}

/* How many cycle arguments follow the fixed ones before the options: the
 * value of the fixed N (already generated, at argument names + its place)
 * less the fixed letters after it; 0 without an N or a usable value. */
static size_t fz_counted(const fz_run *r, const fz_grammar *g, int names) {
    const char *n = strchr(g->fixed, 'N');
    if (!n) return 0;
    size_t at = (size_t)names + (size_t)(n - g->fixed), after = strlen(n + 1);
    char tmp[24];
    size_t len = r->len[at] < sizeof(tmp) - 1 ? r->len[at] : sizeof(tmp) - 1;
    memcpy(tmp, r->args.ptr + r->off[at], len);
    tmp[len] = '\0';
    long long v = strtoll(tmp, NULL, 10);
    return v > (long long)after && v < FZ_MAX_ARGS ? (size_t)v - after : 0;
}

/* What the grammar says argument pos (0: the first after the names) is. */
static int fz_grammar_hint(fz_run *r, size_t pos, int names) {
    const fz_grammar *g = r->grammar;
    size_t nfixed = strlen(g->fixed);
    if (pos < nfixed) return fz_kind_of(g->fixed[pos]);
    if (r->npending) {
        r->npending--;
        return fz_kind_of(*r->pending++);
    }
    if (g->cycle && g->options && pos - nfixed < fz_counted(r, g, names))
        return fz_kind_of(g->cycle[(pos - nfixed) % strlen(g->cycle)]);
    if (g->options) return FZ_KIND_CMD_OPTION;
    if (g->cycle) return fz_kind_of(g->cycle[(pos - nfixed) % strlen(g->cycle)]);
    return -1;
}

/* The palette argument i of the command prefers, or -1: its grammar's
 * choice, else a key where the command table puts one. */
static int fz_hint(fz_run *r, int i, int names, const int *keys, int nkeys) {
    if (r->grammar) return fz_grammar_hint(r, (size_t)(i - names), names);
    for (int k = 0; k < nkeys; k++)
        if (keys[k] == i) return FZ_KIND_KEY;
    return -1;
}

static void fz_add_bytes(fz_run *r, const void *p, size_t n) {
    r->off[r->argc] = r->args.len;
    fz_append(&r->args, p, n);
    r->len[r->argc] = n;
    r->argc++;
}

static void fz_add_generated(fz_run *r, int hint) {
    uint8_t kind = fz_u8(r);
    fz_gen gen =
        hint >= 0 && kind < FZ_HINT_BELOW ? fz_kinds[hint] : fz_kinds[kind % FZ_KIND_COUNT];
    r->off[r->argc] = r->args.len;
    gen(r);
    r->len[r->argc] = r->args.len - r->off[r->argc];
    r->budget -= fz_budget(r, r->len[r->argc]);
    r->argc++;
}

/* The argument count: the arity, or at least its minimum. */
static int fz_argc(fz_run *r, const command *cmd) {
    if (cmd->arity > 0) return cmd->arity;
    uint8_t extra = fz_u8(r);
    int argc = -cmd->arity + ((extra & 0xc0) == 0xc0 ? extra & 63 : extra & 7);
    return argc < FZ_MAX_ARGS ? argc : FZ_MAX_ARGS;
}

/* Decodes one step into r->cmd and r->args; returns the client slot. */
static int fz_build(fz_run *r) {
    uint16_t sel = fz_u16(r);
    int slot = sel >> 14 == 3 ? 2 : sel >> 14 == 2 ? 1 : 0;
    r->cmd = fz_pick_command(sel & (FZ_RING - 1));
    r->grammar = fz_grammar_of(r->cmd);
    r->npending = 0;
    r->argc = 0;
    r->args.len = 0;
    int argc = fz_argc(r, r->cmd);
    if (r->cmd->parent) fz_add_bytes(r, r->cmd->parent->name, strlen(r->cmd->parent->name));
    fz_add_bytes(r, r->cmd->name, strlen(r->cmd->name));
    int names = r->argc;
    int keys[FZ_MAX_ARGS];
    int nkeys = command_get_keys(r->cmd, argc, keys, FZ_MAX_ARGS);
    while (r->argc < argc)
        fz_add_generated(r, fz_hint(r, r->argc, names, keys, nkeys));
    return slot;
}

static uint32_t fz_u32(fz_run *r) {
    uint32_t lo = fz_u16(r);
    return lo | (uint32_t)fz_u16(r) << 16;
}

/* A literal program is FZ_LITERAL_MAGIC, then per command
 *   slot:u8 argc:u8 arg{argc}
 *   arg := len:u32le bytes{len} | (FZ_LITERAL_RUN | len):u32le byte
 * the arguments as they are, a run of one byte (a big argument) in five
 * bytes. KEEL_FUZZ_LITERAL writes the commands of any input in this form:
 * regressions/fuzz_commands/ keeps crashes so, and they replay the same
 * commands when the ring or the palettes change. */
#define FZ_LITERAL_RUN 0x80000000u
#define FZ_LITERAL_RUN_MIN 16 /* shorter runs are written as they are */

static void fz_add_literal_arg(fz_run *r) {
    uint32_t len = fz_u32(r);
    if (len & FZ_LITERAL_RUN) {
        int ch = fz_u8(r);
        r->off[r->argc] = r->args.len;
        fz_fill(&r->args, ch, fz_budget(r, len & ~FZ_LITERAL_RUN));
        r->len[r->argc] = r->args.len - r->off[r->argc];
        r->budget -= r->len[r->argc];
        r->argc++;
        return;
    }
    const uint8_t *p;
    size_t n = fz_take(r, len, &p);
    fz_add_bytes(r, p, n);
}

static int fz_build_literal(fz_run *r) {
    int slot = fz_u8(r) % FZ_CLIENTS;
    int argc = fz_u8(r);
    r->argc = 0;
    r->args.len = 0;
    while (r->argc < argc && r->argc < FZ_MAX_ARGS)
        fz_add_literal_arg(r);
    r->cmd = NULL;
    if (r->argc > 0) {
        const char *sub = r->argc > 1 ? r->args.ptr + r->off[1] : NULL;
        r->cmd = fz_resolve(r->args.ptr, r->len[0], sub, r->argc > 1 ? r->len[1] : 0, r->argc);
    }
    return slot;
}

static void fz_write_u32(uint32_t v, FILE *f) {
    for (int i = 0; i < 4; i++)
        fputc((int)(v >> (8 * i) & 0xff), f);
}

static int fz_is_run(const char *p, size_t n) {
    if (n < FZ_LITERAL_RUN_MIN) return 0;
    for (size_t i = 1; i < n; i++)
        if (p[i] != p[0]) return 0;
    return 1;
}

static void fz_write_literal(const fz_run *r, int slot) {
    fputc(slot, fz_literal_out);
    fputc(r->argc, fz_literal_out);
    for (int i = 0; i < r->argc; i++) {
        const char *p = r->args.ptr + r->off[i];
        if (fz_is_run(p, r->len[i])) {
            fz_write_u32(FZ_LITERAL_RUN | (uint32_t)r->len[i], fz_literal_out);
            fputc((unsigned char)p[0], fz_literal_out);
        } else {
            fz_write_u32((uint32_t)r->len[i], fz_literal_out);
            fwrite(p, 1, r->len[i], fz_literal_out);
        }
    }
    fflush(fz_literal_out);
}

/* ---- encoding literal programs (KEEL_FUZZ_ENCODE) ---- */

/* KEEL_FUZZ_ENCODE=FILE, running a literal program, writes to FILE the same
 * commands as a program of steps (sel, extra, kind and payload bytes), which
 * the fuzzer mutates far better than literal bytes: fuzz_commands_seeds.py
 * makes the seed corpus so. Each argument is found by trial: candidate
 * bytes run through the very generator the decoder would pick, and the
 * first whose output equals the argument is kept, so an encoded program
 * decodes to exactly the literal one. */
#define FZ_ENC_MAX 272 /* kind + BINARY's length byte + 255 bytes, with room */

typedef struct fz_enc {
    fz_buf steps;            /* the encoded program so far */
    fz_buf lit;              /* the literal command's arguments */
    size_t off[FZ_MAX_ARGS]; /* in lit */
    size_t len[FZ_MAX_ARGS];
    int argc;
} fz_enc;

/* Decodes cand[0..n) as argument r->argc at hint. If that is want (and
 * uses every byte), keeps it, appends cand to out and returns 1; else puts
 * r back and returns 0. */
static int fz_enc_try(fz_run *r, int hint, const uint8_t *cand, size_t n, const char *want,
                      size_t wlen, fz_buf *out) {
    const uint8_t *in = r->in;
    size_t left = r->left, args_len = r->args.len, budget = r->budget, npending = r->npending;
    const char *pending = r->pending;
    r->in = cand;
    r->left = n;
    fz_add_generated(r, hint);
    int i = r->argc - 1;
    int ok = r->left == 0 && r->len[i] == wlen && !memcmp(r->args.ptr + r->off[i], want, wlen);
    if (ok) {
        fz_append(out, cand, n);
    } else {
        r->argc--;
        r->args.len = args_len;
        r->budget = budget;
        r->pending = pending;
        r->npending = npending;
    }
    r->in = in;
    r->left = left;
    return ok;
}

/* Candidate payloads of kind for want, each tried after the kind byte. */
static int fz_enc_kind(fz_run *r, int hint, uint8_t kind_byte, int kind, const char *want,
                       size_t wlen, fz_buf *out) {
    uint8_t c[FZ_ENC_MAX];
    c[0] = kind_byte;
    switch (kind) {
    case FZ_KIND_CONFIG_NAME:
    case FZ_KIND_CONFIG_VALUE:
    case FZ_KIND_COMMAND_NAME: /* u16 payloads */
        for (unsigned v = 0; v <= 0xffff; v++) {
            c[1] = (uint8_t)v, c[2] = (uint8_t)(v >> 8);
            if (fz_enc_try(r, hint, c, 3, want, wlen, out)) return 1;
        }
        return 0;
    case FZ_KIND_INT64: {
        char tmp[32];
        long long v = strtoll(want, NULL, 10);
        snprintf(tmp, sizeof(tmp), "%lld", v);
        if (strlen(tmp) != wlen || memcmp(tmp, want, wlen)) return 0;
        for (int i = 0; i < 8; i++)
            c[1 + i] = (uint8_t)((unsigned long long)v >> (8 * i));
        return fz_enc_try(r, hint, c, 9, want, wlen, out);
    }
    case FZ_KIND_LONG:
        for (unsigned i = 0; wlen && i < sizeof(fz_long_lens) / sizeof(fz_long_lens[0]); i++) {
            c[1] = (uint8_t)i, c[2] = (uint8_t)want[0];
            if (fz_enc_try(r, hint, c, 3, want, wlen, out)) return 1;
        }
        return 0;
    case FZ_KIND_BINARY:
        if (wlen > 255) return 0;
        c[1] = (uint8_t)wlen;
        memcpy(c + 2, want, wlen);
        return fz_enc_try(r, hint, c, 2 + wlen, want, wlen, out);
    case FZ_KIND_DOUBLE:
    case FZ_KIND_STARS:
    case FZ_KIND_CLIENT_ID: /* not invertible, or not stable */
        return 0;
    default: /* one payload byte */
        for (unsigned v = 0; v <= 0xff; v++) {
            c[1] = (uint8_t)v;
            if (fz_enc_try(r, hint, c, 2, want, wlen, out)) return 1;
        }
        return 0;
    }
}

/* The kinds tried, most meaningful first: a mutation of a palette pick
 * lands on a neighbour of the same palette, of BINARY on any byte. */
static const int fz_enc_order[] = {
    FZ_KIND_KEY,          FZ_KIND_CMD_OPTION,   FZ_KIND_OPTION, FZ_KIND_NUMBER, FZ_KIND_CONFIG_NAME,
    FZ_KIND_CONFIG_VALUE, FZ_KIND_COMMAND_NAME, FZ_KIND_GLOB,   FZ_KIND_SMALL,  FZ_KIND_INT64,
    FZ_KIND_LONG,         FZ_KIND_REPEAT,       FZ_KIND_BINARY,
};

/* One argument: the position's hint first (kind byte 0), then each kind
 * by a kind byte at or above FZ_HINT_BELOW. */
static int fz_enc_arg(fz_run *r, int hint, const char *want, size_t wlen, fz_buf *out) {
    if (hint >= 0 && fz_enc_kind(r, hint, 0, hint, want, wlen, out)) return 1;
    for (size_t i = 0; i < sizeof(fz_enc_order) / sizeof(fz_enc_order[0]); i++) {
        int k = fz_enc_order[i];
        uint8_t kind_byte =
            (uint8_t)(FZ_HINT_BELOW +
                      (k - FZ_HINT_BELOW % FZ_KIND_COUNT + FZ_KIND_COUNT) % FZ_KIND_COUNT);
        if (fz_enc_kind(r, hint, kind_byte, k, want, wlen, out)) return 1;
    }
    return 0;
}

/* sel for cmd sent by slot: a point of cmd's that sel can name. */
static int fz_enc_sel(const command *cmd, int slot, uint16_t *sel) {
    static const uint16_t slot_bits[FZ_CLIENTS] = {0, 2u << 14, 3u << 14};
    for (size_t i = 0; i < fz_npoints; i++)
        if (fz_ring[i].cmd == cmd && fz_ring[i].point < FZ_RING) {
            *sel = (uint16_t)(fz_ring[i].point | slot_bits[slot]);
            return 1;
        }
    return 0;
}

/* The step header: sel, and extra for a variadic command. */
static int fz_enc_header(const fz_run *r, int slot, int argc, fz_buf *out) {
    const command *cmd = r->cmd;
    uint16_t sel;
    if (!cmd || !fz_enc_sel(cmd, slot, &sel)) return 0;
    uint8_t head[3] = {(uint8_t)sel, (uint8_t)(sel >> 8), 0};
    if (cmd->arity > 0) return argc == cmd->arity ? (fz_append(out, head, 2), 1) : 0;
    int extra = argc + cmd->arity;
    if (extra < 0 || extra > 63) return 0;
    head[2] = (uint8_t)(extra < 8 ? extra : 0xc0 | extra);
    fz_append(out, head, 3);
    return 1;
}

/* Re-derives the literal command in r through the decoder, argument by
 * argument; returns 0 if some argument has no encoding. */
static int fz_enc_args(fz_run *r, const fz_enc *e, fz_buf *out) {
    r->grammar = fz_grammar_of(r->cmd);
    r->npending = 0;
    r->argc = 0;
    r->args.len = 0;
    if (r->cmd->parent) fz_add_bytes(r, r->cmd->parent->name, strlen(r->cmd->parent->name));
    fz_add_bytes(r, r->cmd->name, strlen(r->cmd->name));
    int names = r->argc;
    int keys[FZ_MAX_ARGS];
    int nkeys = command_get_keys(r->cmd, e->argc, keys, FZ_MAX_ARGS);
    while (r->argc < e->argc) {
        int i = r->argc, hint = fz_hint(r, i, names, keys, nkeys);
        if (!fz_enc_arg(r, hint, e->lit.ptr + e->off[i], e->len[i], out)) {
            fprintf(stderr, "fuzz_commands: encode: argument %d of %s has no encoding\n", i,
                    r->cmd->fullname);
            return 0;
        }
    }
    return 1;
}

/* Puts the literal command back in r (an encoding failed half-way). */
static void fz_enc_restore(fz_run *r, const fz_enc *e) {
    r->argc = 0;
    r->args.len = 0;
    for (int i = 0; i < e->argc; i++)
        fz_add_bytes(r, e->lit.ptr + e->off[i], e->len[i]);
}

/* Encodes the literal command built in r (then rebuilt from the encoding,
 * to be sent as usual) and appends it to fz_encode_out. */
static void fz_enc_command(fz_run *r, int slot) {
    static fz_enc e;
    e.lit.len = 0;
    e.argc = r->argc;
    for (int i = 0; i < r->argc; i++) {
        e.off[i] = e.lit.len;
        e.len[i] = r->len[i];
        fz_append(&e.lit, r->args.ptr + r->off[i], r->len[i]);
    }
    size_t start = e.steps.len;
    if (!fz_enc_header(r, slot, e.argc, &e.steps) || !fz_enc_args(r, &e, &e.steps)) {
        fprintf(stderr, "fuzz_commands: encode: command %.*s left out\n", (int)e.len[0], e.lit.ptr);
        e.steps.len = start;
        fz_enc_restore(r, &e);
        return;
    }
    fwrite(e.steps.ptr + start, 1, e.steps.len - start, fz_encode_out);
    fflush(fz_encode_out);
}

/* r->args as a RESP multibulk in r->wire. */
static void fz_encode(fz_run *r) {
    r->wire.len = 0;
    fz_printf(&r->wire, "*%d\r\n", r->argc);
    for (int i = 0; i < r->argc; i++) {
        fz_printf(&r->wire, "$%zu\r\n", r->len[i]);
        fz_append(&r->wire, r->args.ptr + r->off[i], r->len[i]);
        fz_append(&r->wire, "\r\n", 2);
    }
}

/* One argument for the trace: printable bytes as they are, others as \xHH,
 * at most 48 bytes, then the length of the rest. */
static void fz_trace_arg(const char *p, size_t n) {
    fputc('"', stderr);
    for (size_t i = 0; i < n && i < 48; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
            fputc(ch, stderr);
        else
            fprintf(stderr, "\\x%02x", ch);
    }
    fputc('"', stderr);
    if (n > 48) fprintf(stderr, "...(%zu bytes)", n);
}

/* "fuzz_commands: client 1: "set" "a" "inf"": the program as a script. */
static void fz_trace(const fz_run *r, int slot, const char *not_sent) {
    fprintf(stderr, "fuzz_commands: client %d:", slot);
    for (int i = 0; i < r->argc; i++) {
        fputc(' ', stderr);
        fz_trace_arg(r->args.ptr + r->off[i], r->len[i]);
    }
    if (not_sent) fprintf(stderr, " (not sent: %s)", not_sent);
    fputc('\n', stderr);
}

/* ---- clients ---- */

static client *fz_client(fz_run *r, int slot) {
    if (!r->cl[slot]) r->cl[slot] = client_create(NULL);
    return r->cl[slot];
}

/* Before-sleep's part for closed clients: those closing after their reply
 * go now (the reply was "written"), those closed asynchronously with
 * client_free_closed. Their slots get fresh clients on next use. */
static void fz_reap_clients(fz_run *r) {
    for (int i = 0; i < FZ_CLIENTS; i++) {
        client *c = r->cl[i];
        if (!c || fuzz_client_usable(c)) continue;
        if (!(c->flags & CLIENT_CLOSE_ASAP)) client_free(c);
        r->cl[i] = NULL;
    }
    client_free_closed();
}

/* ---- one run ---- */

/* Why the command built is not sent, or NULL. Only a literal program can
 * name an excluded command. CONFIG SET queued in MULTI would run in EXEC
 * with the limits raised until the next fuzz_pin_limits. */
static const char *fz_unsendable(const fz_run *r, const client *c) {
    if (!r->argc) return "no arguments";
    const command *top = r->cmd && r->cmd->parent ? r->cmd->parent : r->cmd;
    if (top && (fz_excluded(top) || fz_excluded(r->cmd))) return "excluded command";
    if ((c->flags & CLIENT_MULTI) && fz_is(r->cmd, "config|set")) return "CONFIG SET inside MULTI";
    return NULL;
}

static void fz_step(fz_run *r) {
    int slot = r->literal ? fz_build_literal(r) : fz_build(r);
    client *c = fz_client(r, slot);
    const char *not_sent = fz_unsendable(r, c);
    if (fz_tracing) fz_trace(r, slot, not_sent);
    if (not_sent) return;
    if (fz_literal_out) fz_write_literal(r, slot);
    if (fz_encode_out && r->literal) fz_enc_command(r, slot);
    fz_encode(r);
    fuzz_feed(c, (const uint8_t *)r->wire.ptr, r->wire.len);
    /* Once with the replies still queued, as for a reader that has not
     * caught up: the output buffer limits get to see them. */
    client_cron();
    fuzz_between_reads();
    fuzz_pin_limits();
    fz_reap_clients(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fz_run r; /* static: its buffers are reused across runs */
    r.literal =
        size >= FZ_LITERAL_MAGIC_LEN && !memcmp(data, FZ_LITERAL_MAGIC, FZ_LITERAL_MAGIC_LEN);
    r.in = r.literal ? data + FZ_LITERAL_MAGIC_LEN : data;
    r.left = r.literal ? size - FZ_LITERAL_MAGIC_LEN : size;
    r.budget = FZ_RUN_BYTES;
    memset(r.cl, 0, sizeof(r.cl));
    fuzz_begin_run();
    for (int n = 0; r.left > 0 && n < FZ_MAX_COMMANDS; n++)
        fz_step(&r);
    fuzz_close_clients(r.cl, FZ_CLIENTS);
    fuzz_reset_run();
    return 0;
}
