/* check_resp_parse.c -- unit tests for protocol/resp_parse.c: multibulk and
 * inline framing, every malformed form, the big-argument hand-off, and
 * equivalence of one-shot parsing with input split at every byte. */
#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/resp_parse.h"

#define E_EXPECTED(c) "Protocol error: expected '$', got '" c "'"
#define E_MBULK_LEN "Protocol error: invalid multibulk length"
#define E_BULK_LEN "Protocol error: invalid bulk length"
#define E_CRLF "Protocol error: invalid CRLF in request"
#define E_QUOTES "Protocol error: unbalanced quotes in request"
#define E_BIG_INLINE "Protocol error: too big inline request"
#define E_BIG_MBULK "Protocol error: too big mbulk count string"
#define E_BIG_BULK "Protocol error: too big bulk count string"

/* ---- Growable byte strings ------------------------------------------ */

typedef struct bytes {
    char *p;
    size_t len, cap;
} bytes;

static void b_add(bytes *b, const void *data, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void b_str(bytes *b, const char *s) {
    b_add(b, s, strlen(s));
}

static void b_fill(bytes *b, char c, size_t n) {
    for (size_t i = 0; i < n; i++)
        b_add(b, &c, 1);
}

__attribute__((format(printf, 2, 3))) static void b_fmt(bytes *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    b_add(b, tmp, (size_t)n);
}

/* A bulk of n pseudo-random bytes (CR and LF included), as "$n\r\n...\r\n". */
static void b_bulk_random(bytes *b, size_t n, uint32_t seed) {
    b_fmt(b, "$%zu\r\n", n);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        char c = (char)(seed >> 16);
        b_add(b, &c, 1);
    }
    b_str(b, "\r\n");
}

static uint32_t fnv1a(const void *data, size_t n) {
    const unsigned char *p = data;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* ---- Simulated client -------------------------------------------------
 * Feeds a byte stream to the parser the way the read handler does: reads
 * into a query buffer that always starts at the current request (moved to a
 * new address on every read when move_always is set), drops consumed
 * requests, and for RESP_NEED_BIG copies the buffered part of the argument
 * and reads the rest of it straight from the "socket". Everything the parser
 * reports goes into a transcript: requests with their arguments, then "E:"
 * and the error, or "I" when the stream ended mid-request. */

typedef struct sched {
    size_t first; /* size of the first read */
    int bytewise; /* later reads: 1 byte each, else everything left */
} sched;

typedef struct sim {
    const char *in;
    size_t in_len, in_pos;
    size_t reads;
    sched how;
    int move_always;
    bytes qb;
    resp_parser p;
    void *bigs[16];
    int nbigs;
    size_t direct; /* bytes of this request read straight into big buffers */
    bytes log;
} sim;

static size_t sim_read_size(sim *s) {
    size_t left = s->in_len - s->in_pos;
    size_t n = s->reads == 0 ? s->how.first : s->how.bytewise ? 1 : left;
    s->reads++;
    return n < left ? n : left;
}

static void sim_append(sim *s, size_t n) {
    if (s->move_always) {
        /* A fresh buffer every time: the parser must keep no pointers. */
        bytes nb = {0};
        b_add(&nb, s->qb.p ? s->qb.p : "", s->qb.len);
        free(s->qb.p);
        s->qb = nb;
    }
    b_add(&s->qb, s->in + s->in_pos, n);
    s->in_pos += n;
}

/* NUL is logged as "\\0" so transcripts compare as C strings. */
static void log_bytes(bytes *log, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\0')
            b_str(log, "\\0");
        else
            b_add(log, p + i, 1);
    }
}

static void sim_log_request(sim *s) {
    resp_parser *p = &s->p;
    /* Logged: the request's length in the stream. consumed is its length in
     * the buffer, which lacks what was read straight into big buffers. */
    b_fmt(&s->log, "C%d@%zu:", p->argc, p->consumed + s->direct);
    ck_assert_uint_le(p->consumed, s->qb.len);
    for (int i = 0; i < p->argc; i++) {
        const resp_arg *a = &p->argv[i];
        if (a->big) {
            ck_assert_uint_eq(a->off, 0);
            b_fmt(&s->log, "B%zu#%08x,", a->len, fnv1a(a->big, a->len));
        } else {
            ck_assert_uint_le(a->off + a->len, p->consumed);
            b_fmt(&s->log, "%zu:", a->len);
            log_bytes(&s->log, s->qb.p + a->off, a->len);
            b_str(&s->log, ",");
        }
    }
    b_str(&s->log, "|");
}

static void sim_drop_request(sim *s) {
    size_t n = s->p.consumed;
    memmove(s->qb.p, s->qb.p + n, s->qb.len - n);
    s->qb.len -= n;
    for (int i = 0; i < s->nbigs; i++)
        free(s->bigs[i]);
    s->nbigs = 0;
    s->direct = 0;
}

/* Returns 0 to go on, -1 when the stream ended inside the big argument. */
static int sim_big(sim *s) {
    resp_parser *p = &s->p;
    size_t big_len = (size_t)p->big_len;
    ck_assert_uint_ge(big_len, RESP_BIG_ARG);
    ck_assert_uint_le(p->pos, s->qb.len);
    /* Asking again before the hand-off gives the same answer. */
    ck_assert_int_eq(resp_parse(p, s->qb.p, s->qb.len), RESP_NEED_BIG);
    ck_assert_uint_eq(p->big_len, big_len);

    char *big = malloc(big_len);
    size_t avail = s->qb.len - p->pos;
    size_t taken = avail < big_len ? avail : big_len;
    memcpy(big, s->qb.p + p->pos, taken);
    size_t need = big_len - taken;
    if (need > s->in_len - s->in_pos) {
        free(big);
        return -1;
    }
    memcpy(big + taken, s->in + s->in_pos, need); /* read straight into it */
    s->in_pos += need;
    s->direct += need;
    ck_assert_int_lt(s->nbigs, 16);
    s->bigs[s->nbigs++] = big;
    resp_parser_big_done(p, big, taken);
    return 0;
}

static char *sim_run(const char *in, size_t len, sched how, resp_parser *tuned) {
    sim s = {.in = in, .in_len = len, .how = how, .move_always = len < 8192};
    if (tuned)
        s.p = *tuned;
    else
        resp_parser_init(&s.p);
    for (;;) {
        resp_status st = resp_parse(&s.p, s.qb.p, s.qb.len);
        if (st == RESP_COMPLETE) {
            sim_log_request(&s);
            sim_drop_request(&s);
            resp_parser_reset(&s.p);
        } else if (st == RESP_PROTO_ERROR) {
            ck_assert_ptr_nonnull(s.p.error);
            b_fmt(&s.log, "E:%s", s.p.error);
            break;
        } else if (st == RESP_NEED_BIG) {
            if (sim_big(&s) < 0) {
                b_str(&s.log, "I");
                break;
            }
        } else if (s.in_pos == s.in_len) {
            b_str(&s.log, "I");
            break;
        } else {
            sim_append(&s, sim_read_size(&s));
        }
    }
    for (int i = 0; i < s.nbigs; i++)
        free(s.bigs[i]);
    resp_parser_free(&s.p);
    free(s.qb.p);
    return s.log.p;
}

static char *run_oneshot(const char *in, size_t len) {
    return sim_run(in, len, (sched){len, 0}, NULL);
}

/* ---- Direct one-shot helpers ------------------------------------------ */

static resp_parser P;

static void setup(void) {
    resp_parser_init(&P);
}

static void teardown(void) {
    resp_parser_free(&P);
}

/* Parses a fresh copy of lit (so in-place unescaping is allowed). */
static resp_status parse_lit(const char *lit, size_t len) {
    static char buf[4096];
    ck_assert_uint_le(len, sizeof(buf));
    memcpy(buf, lit, len);
    return resp_parse(&P, buf, len);
}
#define PARSE(lit) parse_lit(lit, sizeof(lit) - 1)

static void expect_error(const char *lit, size_t len, const char *msg) {
    resp_parser_reset(&P);
    resp_status st = parse_lit(lit, len);
    ck_assert_msg(st == RESP_PROTO_ERROR, "'%.*s': status %d, want error %s", (int)len, lit, st,
                  msg);
    ck_assert_str_eq(P.error, msg);
}
#define EXPECT_ERROR(lit, msg) expect_error(lit, sizeof(lit) - 1, msg)

static void expect_transcript(const char *in, size_t len, const char *want) {
    char *got = run_oneshot(in, len);
    ck_assert_msg(strcmp(got, want) == 0, "\n got: %s\nwant: %s", got, want);
    free(got);
}
#define EXPECT_TRANSCRIPT(lit, want) expect_transcript(lit, sizeof(lit) - 1, want)

/* ---- Valid requests --------------------------------------------------- */

START_TEST(test_multibulk_basic) {
    static const char req[] = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
    ck_assert_int_eq(PARSE(req), RESP_COMPLETE);
    ck_assert_int_eq(P.argc, 3);
    ck_assert_uint_eq(P.consumed, sizeof(req) - 1);
    ck_assert_uint_eq(P.argv[0].off, 8);
    ck_assert_uint_eq(P.argv[0].len, 3);
    ck_assert_uint_eq(P.argv[1].off, 17);
    ck_assert_uint_eq(P.argv[2].off, 26);
    ck_assert_uint_eq(P.argv[2].len, 5);
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_null(P.argv[i].big);

    /* Every proper prefix is incomplete, from a fresh parser. */
    for (size_t n = 0; n < sizeof(req) - 1; n++) {
        resp_parser_reset(&P);
        ck_assert_int_eq(parse_lit(req, n), RESP_INCOMPLETE);
    }
}
END_TEST

START_TEST(test_binary_bulk) {
    EXPECT_TRANSCRIPT("*2\r\n$4\r\nECHO\r\n$7\r\na\r\nb\0c\n\r\n",
                      "C2@27:4:ECHO,7:a\r\nb\\0c\n,|I");
    EXPECT_TRANSCRIPT("*1\r\n$0\r\n\r\n", "C1@10:0:,|I");
}
END_TEST

START_TEST(test_empty_requests) {
    EXPECT_TRANSCRIPT("*0\r\n", "C0@4:|I");
    EXPECT_TRANSCRIPT("*-1\r\n", "C0@5:|I");
    EXPECT_TRANSCRIPT("*-10\r\n*1\r\n$4\r\nping\r\n", "C0@6:|C1@14:4:ping,|I");
    EXPECT_TRANSCRIPT("*-9223372036854775808\r\n", "C0@23:|I");
    EXPECT_TRANSCRIPT("\r\n", "C0@2:|I");
    EXPECT_TRANSCRIPT("\n", "C0@1:|I");
    EXPECT_TRANSCRIPT("   \t\r\n", "C0@6:|I");
    EXPECT_TRANSCRIPT("\r\n*1\r\n$4\r\nping\r\n", "C0@2:|C1@14:4:ping,|I"); /* protocol.tcl */
    EXPECT_TRANSCRIPT("*0\r\nPING\r\n", "C0@4:|C1@6:4:PING,|I");
}
END_TEST

START_TEST(test_inline) {
    EXPECT_TRANSCRIPT("PING\r\n", "C1@6:4:PING,|I");
    EXPECT_TRANSCRIPT("PING\n", "C1@5:4:PING,|I");
    EXPECT_TRANSCRIPT("  set  a\tb  \r\n", "C3@14:3:set,1:a,1:b,|I");
    EXPECT_TRANSCRIPT("set k \"a b\" 'c d'\r\n", "C4@19:3:set,1:k,3:a b,3:c d,|I");
    EXPECT_TRANSCRIPT("set k \"\\x41\\n\\\"q\\\\\" 'it\\'s'\n",
                      "C4@28:3:set,1:k,5:A\n\"q\\,4:it's,|I");
    EXPECT_TRANSCRIPT("echo \"\"\r\n", "C2@9:4:echo,0:,|I");
    /* A lone '\r' inside the line separates arguments, as in sdssplitargs. */
    EXPECT_TRANSCRIPT("a\rb\r\n", "C2@5:1:a,1:b,|I");
    /* Only one '\r' is stripped; the other is a blank. */
    EXPECT_TRANSCRIPT("x\r\r\n", "C1@4:1:x,|I");
    /* A first byte other than '*' means inline, even '$' or ':'. */
    EXPECT_TRANSCRIPT("$3 foo\r\n", "C2@8:2:$3,3:foo,|I");
    /* Arguments are unescaped in place: offsets point into the buffer. */
    char buf[] = "set \"a\\x42c\" v\r\n";
    resp_parser_reset(&P);
    ck_assert_int_eq(resp_parse(&P, buf, strlen(buf)), RESP_COMPLETE);
    ck_assert_int_eq(P.argc, 3);
    ck_assert_mem_eq(buf + P.argv[1].off, "aBc", 3);
    ck_assert_uint_eq(P.argv[1].len, 3);
}
END_TEST

START_TEST(test_pipeline) {
    EXPECT_TRANSCRIPT("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\nPING\r\n\r\n*0\r\n"
                      "*-1\r\nset a \"b c\"\n*1\r\n$3\r\nfoo",
                      "C1@14:4:PING,|C2@20:4:ECHO,0:,|C1@6:4:PING,|C0@2:|C0@4:|C0@5:|"
                      "C3@12:3:set,1:a,3:b c,|I");

    /* By hand: consumed lets the caller step to the next request. */
    static const char two[] = "*1\r\n$1\r\na\r\n*1\r\n$1\r\nb\r\nc\r\n";
    char buf[sizeof(two)];
    memcpy(buf, two, sizeof(two));
    size_t at = 0, len = sizeof(two) - 1;
    const char *want[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        resp_parser_reset(&P);
        ck_assert_int_eq(resp_parse(&P, buf + at, len - at), RESP_COMPLETE);
        ck_assert_int_eq(P.argc, 1);
        ck_assert_mem_eq(buf + at + P.argv[0].off, want[i], 1);
        at += P.consumed;
    }
    ck_assert_uint_eq(at, len);
}
END_TEST

START_TEST(test_limits_exact) {
    P.max_multibulk = 3;
    ck_assert_int_eq(PARSE("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"), RESP_COMPLETE);
    EXPECT_ERROR("*4\r\n", E_MBULK_LEN);
    resp_parser_free(&P);
    resp_parser_init(&P);
    P.max_bulk_len = 10;
    ck_assert_int_eq(PARSE("*1\r\n$10\r\n0123456789\r\n"), RESP_COMPLETE);
    EXPECT_ERROR("*1\r\n$11\r\n", E_BULK_LEN);
    /* INT_MAX arguments may be announced; one more may not. */
    resp_parser_free(&P);
    resp_parser_init(&P);
    ck_assert_int_eq(PARSE("*2147483647\r\n$1\r\na\r\n"), RESP_INCOMPLETE);
    ck_assert_int_le(P.argv_cap, 1024); /* not sized from the announced count */
    EXPECT_ERROR("*2147483648\r\n", E_MBULK_LEN);
    /* 512 MB is the default proto-max-bulk-len. */
    resp_parser_reset(&P);
    ck_assert_int_eq(PARSE("*1\r\n$536870912\r\n"), RESP_NEED_BIG);
    EXPECT_ERROR("*1\r\n$536870913\r\n", E_BULK_LEN);
}
END_TEST

/* ---- Malformed requests ----------------------------------------------- */

START_TEST(test_bad_type_byte) {
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", E_EXPECTED("f")); /* protocol.tcl */
    EXPECT_ERROR("*1\r\nfoo\r\n", E_EXPECTED("f"));
    EXPECT_ERROR("*1\r\n:1\r\n", E_EXPECTED(":"));
    EXPECT_ERROR("*1\r\n*1\r\n", E_EXPECTED("*"));
    EXPECT_ERROR("*1\r\n+OK\r\n", E_EXPECTED("+"));
    /* Reported as soon as the byte arrives. */
    EXPECT_ERROR("*2\r\n$1\r\na\r\nx", E_EXPECTED("x"));
    /* CR, LF and NUL would break the error reply: shown as a space. */
    EXPECT_ERROR("*1\r\n\r\n", E_EXPECTED(" "));
    EXPECT_ERROR("*1\r\n\n", E_EXPECTED(" "));
    EXPECT_ERROR("*1\r\n\0", E_EXPECTED(" "));
    EXPECT_ERROR("*1\r\n\xff", E_EXPECTED("\xff"));
}
END_TEST

START_TEST(test_bad_multibulk_count) {
    EXPECT_ERROR("*3000000000\r\n", E_MBULK_LEN); /* protocol.tcl */
    EXPECT_ERROR("*9223372036854775807\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*9223372036854775808\r\n", E_MBULK_LEN); /* 2^63 */
    EXPECT_ERROR("*18446744073709551616\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*99999999999999999999999999\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*-9223372036854775809\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*-\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*-0\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*+1\r\n", E_MBULK_LEN);
    EXPECT_ERROR("* 1\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*1 \r\n", E_MBULK_LEN);
    EXPECT_ERROR("*01\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*abc\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*1x\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*1\0\r\n", E_MBULK_LEN);
    /* protocol.tcl "Check CRLF when parsing the querybuf", count line. */
    EXPECT_ERROR("*3x\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*3\rx$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", E_CRLF);
    EXPECT_ERROR("*3xx$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*1\n$1\r\na\r\n", E_MBULK_LEN);
    EXPECT_ERROR("*1\r\r\n", E_CRLF);
}
END_TEST

START_TEST(test_bad_bulk_length) {
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", E_BULK_LEN);        /* protocol.tcl */
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n", E_BULK_LEN); /* protocol.tcl */
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n", E_BULK_LEN);     /* protocol.tcl */
    EXPECT_ERROR("*1\r\n$-1\r\n", E_BULK_LEN);
    EXPECT_ERROR("*1\r\n$-0\r\n", E_BULK_LEN);
    EXPECT_ERROR("*1\r\n$9223372036854775807\r\n", E_BULK_LEN);
    EXPECT_ERROR("*1\r\n$9223372036854775808\r\n", E_BULK_LEN); /* 2^63 */
    EXPECT_ERROR("*1\r\n$18446744073709551617\r\n", E_BULK_LEN);
    EXPECT_ERROR("*1\r\n$-9223372036854775808\r\n", E_BULK_LEN);
    EXPECT_ERROR("*1\r\n$\r\n", E_BULK_LEN);
    EXPECT_ERROR("*1\r\n$+3\r\nabc\r\n", E_BULK_LEN);
    EXPECT_ERROR("*1\r\n$ 3\r\nabc\r\n", E_BULK_LEN);
    EXPECT_ERROR("*1\r\n$3 \r\nabc\r\n", E_BULK_LEN);
    EXPECT_ERROR("*1\r\n$03\r\nabc\r\n", E_BULK_LEN);
    EXPECT_ERROR("*1\r\n$3.0\r\nabc\r\n", E_BULK_LEN);
    EXPECT_ERROR("*1\r\n$0x3\r\nabc\r\n", E_BULK_LEN);
    /* protocol.tcl "Check CRLF when parsing the querybuf", bulk lines. */
    EXPECT_ERROR("*3\r\n$3x\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", E_BULK_LEN);
    EXPECT_ERROR("*3\r\n$3\rxSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", E_CRLF);
    EXPECT_ERROR("*3\r\n$3xxSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", E_BULK_LEN);
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5x\nvalue\r\n", E_BULK_LEN);
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\rxvalue\r\n", E_CRLF);
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5xxvalue\r\n", E_BULK_LEN);
}
END_TEST

START_TEST(test_missing_crlf_after_data) {
    /* protocol.tcl "Check CRLF when parsing the querybuf", bulk data. */
    EXPECT_ERROR("*3\r\n$3\r\nSET\rx$3\r\nkey\r\n$5\r\nvalue\r\n", E_CRLF);
    EXPECT_ERROR("*3\r\n$3\r\nSETx\n$3\r\nkey\r\n$5\r\nvalue\r\n", E_CRLF);
    EXPECT_ERROR("*3\r\n$3\r\nSETxx$3\r\nkey\r\n$5\r\nvalue\r\n", E_CRLF);
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$3\r\nkeyx\n$5\r\nvalue\r\n", E_CRLF);
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$3\r\nkey\rx$5\r\nvalue\r\n", E_CRLF);
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$3\r\nkeyxx$5\r\nvalue\r\n", E_CRLF);
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvaluex\n", E_CRLF);
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\rx", E_CRLF);
    EXPECT_ERROR("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvaluexx", E_CRLF);
    EXPECT_ERROR("*1\r\n$0\r\n\n\r", E_CRLF);
    /* Data shorter than announced just waits for more bytes. */
    resp_parser_reset(&P);
    ck_assert_int_eq(PARSE("*1\r\n$5\r\nab\r\n"), RESP_INCOMPLETE);
}
END_TEST

START_TEST(test_unbalanced_inline) {
    EXPECT_ERROR("set foo 'b'a'r\r\n", E_QUOTES);    /* protocol.tcl */
    EXPECT_ERROR("set foo \"b\"a\"r\r\n", E_QUOTES); /* protocol.tcl */
    EXPECT_ERROR("set \"abc\r\n", E_QUOTES);
    EXPECT_ERROR("set 'abc\n", E_QUOTES);
    EXPECT_ERROR("set \"a\"b\r\n", E_QUOTES);
    EXPECT_ERROR("set \"a\\\"\r\n", E_QUOTES);
    /* The line is complete only at '\n': an open quote may not span it. */
    EXPECT_TRANSCRIPT("set \"a\nb\"\r\n", "E:" E_QUOTES);
}
END_TEST

/* Line-length limits, checked at the exact boundary. */
START_TEST(test_too_long_lines) {
    bytes b = {0};
    /* Inline: RESP_INLINE_MAX bytes before '\n' are allowed. */
    b_fill(&b, 'A', RESP_INLINE_MAX);
    resp_parser_reset(&P);
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_INCOMPLETE);
    ck_assert_uint_eq(P.scan, RESP_INLINE_MAX); /* searched once, not again */
    b_str(&b, "\n");
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_COMPLETE);
    ck_assert_int_eq(P.argc, 1);
    ck_assert_uint_eq(P.argv[0].len, RESP_INLINE_MAX);
    b.len = RESP_INLINE_MAX;
    b_str(&b, "A");
    resp_parser_reset(&P);
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_PROTO_ERROR);
    ck_assert_str_eq(P.error, E_BIG_INLINE);
    char *t = run_oneshot(b.p, b.len);
    ck_assert_str_eq(t, "E:" E_BIG_INLINE);
    free(t);

    /* Multibulk count line: '*' plus RESP_INLINE_MAX - 1 more bytes is
     * still only incomplete; one more without '\r' is too long. */
    b.len = 0;
    b_str(&b, "*");
    b_fill(&b, '1', RESP_INLINE_MAX - 1);
    resp_parser_reset(&P);
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_INCOMPLETE);
    b_str(&b, "1");
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_PROTO_ERROR);
    ck_assert_str_eq(P.error, E_BIG_MBULK);
    /* With its '\r' in range it is parsed (and is not a valid count). */
    b.len = RESP_INLINE_MAX;
    b_str(&b, "\r\n");
    resp_parser_reset(&P);
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_PROTO_ERROR);
    ck_assert_str_eq(P.error, E_MBULK_LEN);

    /* Bulk length line, the same way. */
    b.len = 0;
    b_str(&b, "*1\r\n$");
    b_fill(&b, '1', RESP_INLINE_MAX - 1);
    resp_parser_reset(&P);
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_INCOMPLETE);
    b_str(&b, "1");
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_PROTO_ERROR);
    ck_assert_str_eq(P.error, E_BIG_BULK);
    free(b.p);
}
END_TEST

/* protocol.tcl "Protocol desync regression test": garbage with no line end
 * must end in a protocol error after RESP_INLINE_MAX bytes, not buffer
 * forever. */
START_TEST(test_desync_garbage) {
    static const char *prefixes[] = {"\0", "*\0", "$\0", "*1\r\n$\0"};
    static const size_t plens[] = {1, 2, 2, 6};
    static const char *want[] = {E_BIG_INLINE, E_BIG_MBULK, E_BIG_INLINE, E_BIG_BULK};
    for (int i = 0; i < 4; i++) {
        bytes b = {0};
        b_add(&b, prefixes[i], plens[i]);
        b_fill(&b, 'A', RESP_INLINE_MAX + 1024);
        char *t = sim_run(b.p, b.len, (sched){1024, 0}, NULL);
        ck_assert_str_eq(t + 2, want[i]);
        free(t);
        free(b.p);
    }
}
END_TEST

START_TEST(test_error_is_sticky) {
    EXPECT_ERROR("*x\r\n", E_MBULK_LEN);
    ck_assert_int_eq(PARSE("*1\r\n$1\r\na\r\n"), RESP_PROTO_ERROR);
    ck_assert_str_eq(P.error, E_MBULK_LEN);
    resp_parser_reset(&P);
    ck_assert_ptr_null(P.error);
    ck_assert_int_eq(PARSE("*1\r\n$1\r\na\r\n"), RESP_COMPLETE);
}
END_TEST

/* ---- argv management ---------------------------------------------------- */

START_TEST(test_argv_reuse_and_growth) {
    bytes b = {0};
    b_str(&b, "*3000\r\n");
    for (int i = 0; i < 3000; i++) {
        int digits = i < 10 ? 1 : i < 100 ? 2 : i < 1000 ? 3 : 4;
        b_fmt(&b, "$%d\r\n%d\r\n", digits, i);
    }
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_COMPLETE);
    ck_assert_int_eq(P.argc, 3000);
    for (int i = 0; i < 3000; i += 499) {
        char want[8];
        int n = snprintf(want, sizeof(want), "%d", i);
        ck_assert_uint_eq(P.argv[i].len, (size_t)n);
        ck_assert_mem_eq(b.p + P.argv[i].off, want, (size_t)n);
    }
    /* The array is kept for the next request (no allocation per request). */
    resp_arg *argv = P.argv;
    int cap = P.argv_cap;
    for (int round = 0; round < 100; round++) {
        ck_assert_int_eq(PARSE("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), RESP_COMPLETE);
        ck_assert_ptr_eq(P.argv, argv);
        ck_assert_int_eq(P.argv_cap, cap);
    }
    /* An exceptionally large one is not kept. */
    b.len = 0;
    b_str(&b, "*10000\r\n");
    for (int i = 0; i < 10000; i++)
        b_str(&b, "$1\r\nx\r\n");
    resp_parser_reset(&P);
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_COMPLETE);
    ck_assert_int_eq(P.argc, 10000);
    resp_parser_reset(&P);
    ck_assert_int_le(P.argv_cap, 4096);
    free(b.p);
}
END_TEST

START_TEST(test_implicit_reset) {
    /* Calling again after RESP_COMPLETE without a reset starts over. */
    static char buf[] = "*1\r\n$1\r\na\r\nPING\r\n";
    ck_assert_int_eq(resp_parse(&P, buf, sizeof(buf) - 1), RESP_COMPLETE);
    ck_assert_uint_eq(P.consumed, 11);
    ck_assert_int_eq(resp_parse(&P, buf + 11, sizeof(buf) - 12), RESP_COMPLETE);
    ck_assert_int_eq(P.argc, 1);
    ck_assert_uint_eq(P.consumed, 6);
}
END_TEST

/* ---- Big arguments -------------------------------------------------------- */

/* "*3 SET k <big>" followed by two pipelined requests. */
static void build_big_pipeline(bytes *b, size_t big) {
    b_str(b, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n");
    b_bulk_random(b, big, 7);
    b_str(b, "*1\r\n$4\r\nPING\r\nPING\r\n");
}

START_TEST(test_big_handoff_by_hand) {
    bytes b = {0};
    build_big_pipeline(&b, 40000);
    size_t head = strlen("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$40000\r\n");

    /* The client has read the header and 100 bytes of the value. */
    bytes qb = {0};
    b_add(&qb, b.p, head + 100);
    ck_assert_int_eq(resp_parse(&P, qb.p, qb.len), RESP_NEED_BIG);
    ck_assert_int_eq(P.big_len, 40000);
    ck_assert_uint_eq(P.pos, head);
    ck_assert_int_eq(P.argc, 2);
    ck_assert_int_eq(resp_parse(&P, qb.p, qb.len), RESP_NEED_BIG); /* idempotent */

    /* It moves those 100 bytes out and reads the rest straight into big. */
    char *big = malloc(40000);
    memcpy(big, qb.p + P.pos, 100);
    memcpy(big + 100, b.p + head + 100, 40000 - 100);
    resp_parser_big_done(&P, big, 100);
    ck_assert_int_eq(resp_parse(&P, qb.p, qb.len), RESP_INCOMPLETE); /* CRLF due */

    /* Later reads land after pos + taken: here, the rest of the stream. */
    b_add(&qb, b.p + head + 40000, b.len - head - 40000);
    ck_assert_int_eq(resp_parse(&P, qb.p, qb.len), RESP_COMPLETE);
    ck_assert_int_eq(P.argc, 3);
    ck_assert_ptr_eq(P.argv[2].big, big);
    ck_assert_uint_eq(P.argv[2].off, 0);
    ck_assert_uint_eq(P.argv[2].len, 40000);
    ck_assert_mem_eq(qb.p + P.argv[0].off, "SET", 3);
    ck_assert_mem_eq(qb.p + P.argv[1].off, "k", 1);
    ck_assert_uint_eq(P.consumed, head + 102);

    /* The pipelined requests follow. */
    size_t at = P.consumed;
    resp_parser_reset(&P);
    ck_assert_int_eq(resp_parse(&P, qb.p + at, qb.len - at), RESP_COMPLETE);
    ck_assert_int_eq(P.argc, 1);
    at += P.consumed;
    resp_parser_reset(&P);
    ck_assert_int_eq(resp_parse(&P, qb.p + at, qb.len - at), RESP_COMPLETE);
    ck_assert_mem_eq(qb.p + at + P.argv[0].off, "PING", 4);
    ck_assert_uint_eq(at + P.consumed, qb.len);
    free(big);
    free(qb.p);
    free(b.p);
}
END_TEST

START_TEST(test_big_fully_buffered) {
    /* All bytes (and more) already buffered: taken == big_len, and parsing
     * goes on in the same buffer. */
    bytes b = {0};
    build_big_pipeline(&b, RESP_BIG_ARG);
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_NEED_BIG);
    ck_assert_int_eq(P.big_len, RESP_BIG_ARG);
    char *big = malloc(RESP_BIG_ARG);
    memcpy(big, b.p + P.pos, RESP_BIG_ARG);
    resp_parser_big_done(&P, big, RESP_BIG_ARG);
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_COMPLETE);
    ck_assert_int_eq(P.argc, 3);
    ck_assert_uint_eq(P.consumed, b.len - strlen("*1\r\n$4\r\nPING\r\nPING\r\n"));
    free(big);
    free(b.p);
}
END_TEST

START_TEST(test_big_threshold) {
    /* One byte under RESP_BIG_ARG is an ordinary argument. */
    bytes b = {0};
    b_str(&b, "*1\r\n");
    b_bulk_random(&b, RESP_BIG_ARG - 1, 3);
    ck_assert_int_eq(resp_parse(&P, b.p, b.len), RESP_COMPLETE);
    ck_assert_ptr_null(P.argv[0].big);
    ck_assert_uint_eq(P.argv[0].len, RESP_BIG_ARG - 1);
    free(b.p);
    /* Big bulks are only a multibulk thing: inline has no lengths. */
}
END_TEST

START_TEST(test_big_bad_crlf) {
    bytes b = {0};
    b_str(&b, "*2\r\n");
    b_bulk_random(&b, RESP_BIG_ARG, 5);
    b.len -= 2;
    b_str(&b, "\rx$1\r\na\r\n");
    char *t = run_oneshot(b.p, b.len);
    ck_assert_str_eq(t, "E:" E_CRLF);
    free(t);
    t = sim_run(b.p, b.len, (sched){1, 1}, NULL);
    ck_assert_str_eq(t, "E:" E_CRLF);
    free(t);
    free(b.p);
}
END_TEST

START_TEST(test_big_ignored_out_of_state) {
    /* big_done without a pending big argument changes nothing. */
    char x;
    resp_parser_big_done(&P, &x, 0);
    ck_assert_int_eq(P.argc, 0);
    ck_assert_int_eq(PARSE("*1\r\n$1\r\na\r\n"), RESP_COMPLETE);
    ck_assert_int_eq(P.argc, 1);
}
END_TEST

/* ---- Input split at every byte ---------------------------------------- */

typedef struct stream_case {
    const char *name;
    bytes data;
    const char *want; /* expected transcript, or NULL */
} stream_case;

static stream_case *g_cases;
static int g_ncases;

static void add_case(const char *name, const void *data, size_t len, const char *want) {
    g_cases = realloc(g_cases, sizeof(*g_cases) * (size_t)(g_ncases + 1));
    stream_case *c = &g_cases[g_ncases++];
    c->name = name;
    memset(&c->data, 0, sizeof(c->data));
    b_add(&c->data, data, len);
    c->want = want;
}
#define ADD_CASE(name, lit, want) add_case(name, lit, sizeof(lit) - 1, want)

static void build_cases(void) {
    ADD_CASE(
        "valid pipeline",
        "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n*1\r\n$4\r\nPING\r\n\r\nPING\r\n"
        "*0\r\n*-1\r\nset \"a b\" 'c\\'d' \"\\x41\\n\"\n\n*2\r\n$4\r\nECHO\r\n$5\r\na\r\nb\0\r\n",
        "C3@33:3:SET,3:key,5:value,|C1@14:4:PING,|C0@2:|C1@6:4:PING,|C0@4:|C0@5:|"
        "C4@26:3:set,3:a b,3:c'd,2:A\n,|C0@1:|C2@25:4:ECHO,5:a\r\nb\\0,|I");
    ADD_CASE("truncated", "*2\r\n$3\r\nGET\r\n$3\r\nke", "I");
    ADD_CASE("truncated inline", "PING\r\nGET ke", "C1@6:4:PING,|I");
    ADD_CASE("bad type", "*1\r\n$1\r\na\r\n*2\r\n$1\r\na\r\n:1\r\n",
             "C1@11:1:a,|E:" E_EXPECTED(":"));
    ADD_CASE("negative bulk", "*1\r\n$-1\r\n", "E:" E_BULK_LEN);
    ADD_CASE("2^63 bulk", "*1\r\n$9223372036854775808\r\n", "E:" E_BULK_LEN);
    ADD_CASE("overflow bulk", "*1\r\n$99999999999999999999999\r\n", "E:" E_BULK_LEN);
    ADD_CASE("non-digit bulk", "*1\r\n$1a\r\nab\r\n", "E:" E_BULK_LEN);
    ADD_CASE("bulk over max", "*1\r\n$536870913\r\n", "E:" E_BULK_LEN);
    ADD_CASE("2^63 count", "*9223372036854775808\r\n", "E:" E_MBULK_LEN);
    ADD_CASE("count over limit", "*2147483648\r\n", "E:" E_MBULK_LEN);
    ADD_CASE("non-digit count", "*1\r\n$1\r\na\r\n*z\r\n", "C1@11:1:a,|E:" E_MBULK_LEN);
    ADD_CASE("count no LF", "*1\rx", "E:" E_CRLF);
    ADD_CASE("bulk len no LF", "*1\r\n$1\r$", "E:" E_CRLF);
    ADD_CASE("data no CRLF", "*1\r\n$1\r\nab\r\n", "E:" E_CRLF);
    ADD_CASE("data CR only", "*1\r\n$1\r\na\rb", "E:" E_CRLF);
    ADD_CASE("data LF only", "*1\r\n$1\r\na\n\r", "E:" E_CRLF);
    ADD_CASE("unbalanced", "PING\r\nset foo 'b'a'r\r\nPING\r\n", "C1@6:4:PING,|E:" E_QUOTES);
    ADD_CASE("unbalanced dq", "get \"k\r\n", "E:" E_QUOTES);

    bytes b = {0};
    b_fill(&b, 'A', RESP_INLINE_MAX + 10);
    add_case("long inline", b.p, b.len, "E:" E_BIG_INLINE);
    b.len = 0;
    b_str(&b, "PING\r\n*");
    b_fill(&b, '1', RESP_INLINE_MAX + 10);
    add_case("long count", b.p, b.len, "C1@6:4:PING,|E:" E_BIG_MBULK);
    b.len = 0;
    b_str(&b, "*1\r\n$");
    b_fill(&b, '1', RESP_INLINE_MAX + 10);
    add_case("long bulk count", b.p, b.len, "E:" E_BIG_BULK);

    /* Big arguments: pipelined after and before other requests, two in one
     * request, one last, one truncated, one with a bad CRLF. */
    b.len = 0;
    b_str(&b, "PING\r\n");
    build_big_pipeline(&b, 33000);
    add_case("big pipeline", b.p, b.len, NULL);
    b.len = 0;
    b_str(&b, "*3\r\n");
    b_bulk_random(&b, RESP_BIG_ARG, 11);
    b_bulk_random(&b, 3, 12);
    b_bulk_random(&b, RESP_BIG_ARG + 1, 13);
    b_str(&b, "*1\r\n$1\r\nz\r\n");
    add_case("two bigs", b.p, b.len, NULL);
    b.len = 0;
    b_str(&b, "*1\r\n");
    b_bulk_random(&b, RESP_BIG_ARG + 5, 17);
    b.len -= 10;
    add_case("big truncated", b.p, b.len, "I");
    b.len = 0;
    b_str(&b, "*1\r\n");
    b_bulk_random(&b, RESP_BIG_ARG, 19);
    b.p[b.len - 1] = 'x';
    add_case("big no LF", b.p, b.len, "E:" E_CRLF);
    free(b.p);
}

static void free_cases(void) {
    for (int i = 0; i < g_ncases; i++)
        free(g_cases[i].data.p);
    free(g_cases);
    g_cases = NULL;
    g_ncases = 0;
}

/* Split points to try: all of them for small streams; for big ones the
 * first and last 300, every byte near a CR or LF, and every 127th. */
static int want_split(const bytes *d, size_t k) {
    if (d->len <= 4096 || k < 300 || k + 300 > d->len || k % 127 == 0) return 1;
    for (size_t i = k > 3 ? k - 3 : 0; i < k + 3 && i < d->len; i++)
        if (d->p[i] == '\r' || d->p[i] == '\n') return 1;
    return 0;
}

static void compare_run(const stream_case *c, const char *ref, sched how) {
    char *got = sim_run(c->data.p, c->data.len, how, NULL);
    ck_assert_msg(strcmp(got, ref) == 0, "%s: first read %zu%s:\n got: %.300s\nwant: %.300s",
                  c->name, how.first, how.bytewise ? " then bytewise" : "", got, ref);
    free(got);
}

START_TEST(test_split_everywhere) {
    build_cases();
    for (int i = 0; i < g_ncases; i++) {
        const stream_case *c = &g_cases[i];
        char *ref = run_oneshot(c->data.p, c->data.len);
        if (c->want)
            ck_assert_msg(strcmp(ref, c->want) == 0, "%s:\n got: %.300s\nwant: %.300s", c->name,
                          ref, c->want);
        else
            ck_assert_msg(strchr(ref, 'B') && ref[strlen(ref) - 1] == 'I', "%s: %.300s", c->name,
                          ref);
        compare_run(c, ref, (sched){1, 1});
        for (size_t k = 1; k < c->data.len; k++)
            if (want_split(&c->data, k)) compare_run(c, ref, (sched){k, 0});
        free(ref);
    }
    free_cases();
}
END_TEST

static Suite *resp_parse_suite(void) {
    Suite *s = suite_create("resp_parse");
    TCase *tc = tcase_create("valid");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_multibulk_basic);
    tcase_add_test(tc, test_binary_bulk);
    tcase_add_test(tc, test_empty_requests);
    tcase_add_test(tc, test_inline);
    tcase_add_test(tc, test_pipeline);
    tcase_add_test(tc, test_limits_exact);
    tcase_add_test(tc, test_argv_reuse_and_growth);
    tcase_add_test(tc, test_implicit_reset);
    suite_add_tcase(s, tc);

    tc = tcase_create("malformed");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_bad_type_byte);
    tcase_add_test(tc, test_bad_multibulk_count);
    tcase_add_test(tc, test_bad_bulk_length);
    tcase_add_test(tc, test_missing_crlf_after_data);
    tcase_add_test(tc, test_unbalanced_inline);
    tcase_add_test(tc, test_too_long_lines);
    tcase_add_test(tc, test_desync_garbage);
    tcase_add_test(tc, test_error_is_sticky);
    suite_add_tcase(s, tc);

    tc = tcase_create("big");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_big_handoff_by_hand);
    tcase_add_test(tc, test_big_fully_buffered);
    tcase_add_test(tc, test_big_threshold);
    tcase_add_test(tc, test_big_bad_crlf);
    tcase_add_test(tc, test_big_ignored_out_of_state);
    suite_add_tcase(s, tc);

    tc = tcase_create("split");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_split_everywhere);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(resp_parse_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
