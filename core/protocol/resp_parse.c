/* resp_parse.c -- incremental parser for client requests: RESP multibulk
 * ("*N\r\n$len\r\n...\r\n") and inline commands.
 *
 * Owns: request framing, length validation and the protocol error messages
 * sent to clients. Arguments are recorded as offsets into the caller's
 * buffer; big bulks are handed to the caller (RESP_NEED_BIG) so they can be
 * read straight into the buffer that becomes the value.
 *
 * Behaviour follows Valkey's processMultibulkBuffer/processInlineBuffer:
 * the same limits and error texts, but stricter framing. Every length line
 * must end in "\r\n" and every bulk must be followed by "\r\n" (Valkey's
 * recent releases also answer "invalid CRLF in request" for these), integers
 * are parsed with string2ll's rules, and a bad type byte is reported as soon
 * as it arrives instead of when its line is complete.
 *
 * Every decision depends only on bytes already received, never on how they
 * were split across reads, so feeding a request in any number of pieces gives
 * the one-shot result. The parse position (cur) and the line-end search
 * position (scan) persist across calls, so a long line arriving in pieces is
 * searched once; only a length line's first 20 bytes (the fast path) and a
 * '\r' whose '\n' has not arrived yet may be looked at again. */
#include "protocol/resp_parse.h"

#include <limits.h>
#include <string.h>

#include "common/common.h"
#include "common/kmem.h"
#include "ds/splitargs.h"

enum { KIND_NONE, KIND_MULTIBULK, KIND_INLINE, KIND_DONE, KIND_FAILED };

/* Internal step result: continue parsing. Other results are resp_status. */
#define STEP_OK (-1)

#define DEFAULT_MAX_BULK_LEN (512LL * 1024 * 1024)
/* A count line reserves at most this many argv slots up front: a client may
 * announce two billion arguments and send none. */
#define ARGV_RESERVE_MAX 1024
/* An argv array grown past this by one huge request is freed on reset, so an
 * occasional MSET of a million keys does not pin memory in every client. */
#define ARGV_KEEP_MAX 4096

static const char ERR_BIG_INLINE[] = "Protocol error: too big inline request";
static const char ERR_BIG_MBULK[] = "Protocol error: too big mbulk count string";
static const char ERR_BIG_BULK[] = "Protocol error: too big bulk count string";
static const char ERR_MBULK_LEN[] = "Protocol error: invalid multibulk length";
static const char ERR_BULK_LEN[] = "Protocol error: invalid bulk length";
static const char ERR_UNAUTH_MBULK[] = "Protocol error: unauthenticated multibulk length";
static const char ERR_UNAUTH_BULK[] = "Protocol error: unauthenticated bulk length";
static const char ERR_CRLF[] = "Protocol error: invalid CRLF in request";
static const char ERR_QUOTES[] = "Protocol error: unbalanced quotes in request";

/* "Protocol error: expected '$', got 'X'" for every byte X, built at compile
 * time because the error field points to static text (and parsers may run on
 * several threads). CR, LF and NUL are shown as a space: the message goes
 * out as a RESP error line, which cannot hold them (Valkey's reply layer
 * does the same replacement for CR and LF). */
#define SHOWN_BYTE(c) ((c) == '\r' || (c) == '\n' || (c) == 0 ? ' ' : (char)(c))
#define EXPECTED_MSG(c)                                                                            \
    {                                                                                              \
        'P', 'r', 'o', 't', 'o', 'c', 'o', 'l', ' ', 'e', 'r', 'r', 'o', 'r', ':', ' ', 'e', 'x',  \
            'p', 'e', 'c', 't', 'e', 'd', ' ', '\'', '$', '\'', ',', ' ', 'g', 'o', 't', ' ',      \
            '\'', SHOWN_BYTE(c), '\'', '\0'                                                        \
    }
#define EXPECTED_4(c) EXPECTED_MSG(c), EXPECTED_MSG(c + 1), EXPECTED_MSG(c + 2), EXPECTED_MSG(c + 3)
#define EXPECTED_16(c) EXPECTED_4(c), EXPECTED_4(c + 4), EXPECTED_4(c + 8), EXPECTED_4(c + 12)
#define EXPECTED_64(c) EXPECTED_16(c), EXPECTED_16(c + 16), EXPECTED_16(c + 32), EXPECTED_16(c + 48)
static const char expected_dollar[256][40] = {EXPECTED_64(0), EXPECTED_64(64), EXPECTED_64(128),
                                              EXPECTED_64(192)};

/* ---- Helpers ---------------------------------------------------------- */

static int fail(resp_parser *p, const char *msg) {
    p->error = msg;
    p->kind = KIND_FAILED;
    return RESP_PROTO_ERROR;
}

static int finish(resp_parser *p) {
    p->consumed = p->cur;
    p->kind = KIND_DONE;
    return RESP_COMPLETE;
}

/* Strict decimal with Valkey string2ll's rules: optional '-', then digits
 * with no leading zero ("0" alone excepted); no '+', no blanks, no empty
 * string, no overflow. */
static int parse_ll(const char *s, size_t n, long long *out) {
    if (n == 0 || n > 20) return 0;
    if (n == 1 && s[0] == '0') {
        *out = 0;
        return 1;
    }
    int neg = s[0] == '-';
    size_t i = (size_t)neg;
    if (i == n || s[i] < '1' || s[i] > '9') return 0;
    unsigned long long v = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9 || v > (ULLONG_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    const unsigned long long lim = (unsigned long long)LLONG_MAX;
    if (neg) {
        if (v > lim + 1) return 0;
        *out = v == lim + 1 ? LLONG_MIN : -(long long)v;
    } else {
        if (v > lim) return 0;
        *out = (long long)v;
    }
    return 1;
}

static void argv_reserve(resp_parser *p, long long want) {
    if (want <= p->argv_cap) return;
    p->argv = km_realloc(p->argv, (size_t)want * sizeof(resp_arg));
    p->argv_cap = (int)want;
}

static void argv_grow(resp_parser *p) {
    long long cap = p->argv_cap ? (long long)p->argv_cap * 2 : 8;
    argv_reserve(p, cap < INT_MAX ? cap : INT_MAX);
}

static inline void push_arg(resp_parser *p, size_t off, size_t len, void *big) {
    if (K_UNLIKELY(p->argc == p->argv_cap)) argv_grow(p);
    resp_arg *a = &p->argv[p->argc++];
    a->off = off;
    a->len = len;
    a->big = big;
}

/* Finds the "\r\n" ending the length line that starts at p->cur (its '*' or
 * '$'). The line may hold RESP_INLINE_MAX bytes before its '\r', as in
 * Valkey. Returns STEP_OK with *cr at the '\r', RESP_INCOMPLETE, or an error:
 * too_long, or a '\r' not followed by '\n'. */
static int find_crlf(resp_parser *p, const char *buf, size_t len, const char *too_long,
                     size_t *cr) {
    size_t limit = p->cur + RESP_INLINE_MAX + 1;
    size_t end = len < limit ? len : limit;
    size_t from = p->scan > p->cur ? p->scan : p->cur;
    const char *hit = from < end ? memchr(buf + from, '\r', end - from) : NULL;
    if (!hit) {
        if (len >= limit) return fail(p, too_long);
        p->scan = end;
        return RESP_INCOMPLETE;
    }
    size_t at = (size_t)(hit - buf);
    if (at + 1 == len) {
        p->scan = at; /* look at this '\r' again once its '\n' can be seen */
        return RESP_INCOMPLETE;
    }
    if (buf[at + 1] != '\n') return fail(p, ERR_CRLF);
    *cr = at;
    return STEP_OK;
}

/* Fast path for the usual length line: up to 18 digits without a leading
 * zero (or a lone "0"), then "\r\n", all buffered. It accepts only what
 * find_crlf + parse_ll would accept, with the same value, and declines
 * everything else (signs, long numbers, junk, missing bytes) to that general
 * path, so it changes speed, never results. at is the first byte after the
 * type byte. */
static inline int quick_len(const char *buf, size_t len, size_t at, long long *n, size_t *next) {
    size_t i = at, stop = len - at > 18 ? at + 18 : len;
    if (i == len || buf[i] < '0' || buf[i] > '9') return 0;
    long long v = buf[i++] - '0';
    if (v != 0)
        while (i < stop && buf[i] >= '0' && buf[i] <= '9')
            v = v * 10 + (buf[i++] - '0');
    if (len - i < 2 || buf[i] != '\r' || buf[i + 1] != '\n') return 0;
    *n = v;
    *next = i + 2;
    return 1;
}

/* ---- Multibulk -------------------------------------------------------- */

static int parse_count(resp_parser *p, const char *buf, size_t len) {
    long long max = p->max_multibulk < INT_MAX ? p->max_multibulk : INT_MAX;
    long long n;
    size_t next;
    if (!quick_len(buf, len, p->cur + 1, &n, &next)) {
        size_t cr;
        int rc = find_crlf(p, buf, len, ERR_BIG_MBULK, &cr);
        if (rc != STEP_OK) return rc;
        if (!parse_ll(buf + p->cur + 1, cr - p->cur - 1, &n)) return fail(p, ERR_MBULK_LEN);
        next = cr + 2;
    }
    if (n > max) return fail(p, ERR_MBULK_LEN);
    if (p->unauthenticated && n > RESP_UNAUTH_MULTIBULK) return fail(p, ERR_UNAUTH_MBULK);
    p->cur = next;
    if (n <= 0) return finish(p); /* "*0", "*-1": an empty request */
    p->mb_left = n;
    argv_reserve(p, n < ARGV_RESERVE_MAX ? n : ARGV_RESERVE_MAX);
    return STEP_OK;
}

static int parse_bulk_len(resp_parser *p, const char *buf, size_t len) {
    if (p->cur == len) return RESP_INCOMPLETE;
    unsigned char type = (unsigned char)buf[p->cur];
    if (type != '$') return fail(p, expected_dollar[type]);
    long long n;
    size_t next;
    if (!quick_len(buf, len, p->cur + 1, &n, &next)) {
        size_t cr;
        int rc = find_crlf(p, buf, len, ERR_BIG_BULK, &cr);
        if (rc != STEP_OK) return rc;
        if (!parse_ll(buf + p->cur + 1, cr - p->cur - 1, &n)) return fail(p, ERR_BULK_LEN);
        next = cr + 2;
    }
    if (n < 0 || n > p->max_bulk_len) return fail(p, ERR_BULK_LEN);
    if (p->unauthenticated && n > RESP_UNAUTH_BULK) return fail(p, ERR_UNAUTH_BULK);
    p->cur = next;
    p->bulk_len = n;
    return STEP_OK;
}

static int parse_bulk_data(resp_parser *p, const char *buf, size_t len) {
    if (p->bulk_len >= RESP_BIG_ARG) {
        /* Also answered again if called before resp_parser_big_done(). */
        p->big_len = p->bulk_len;
        p->pos = p->cur;
        return RESP_NEED_BIG;
    }
    size_t n = (size_t)p->bulk_len;
    if (len - p->cur < n + 2) return RESP_INCOMPLETE;
    if (buf[p->cur + n] != '\r' || buf[p->cur + n + 1] != '\n') return fail(p, ERR_CRLF);
    push_arg(p, p->cur, n, NULL);
    p->cur += n + 2;
    p->bulk_len = -1;
    p->mb_left--;
    return STEP_OK;
}

/* The CRLF after a big argument, at pos + taken. */
static int parse_big_crlf(resp_parser *p, const char *buf, size_t len) {
    if (len - p->cur < 2) return RESP_INCOMPLETE;
    if (buf[p->cur] != '\r' || buf[p->cur + 1] != '\n') return fail(p, ERR_CRLF);
    p->cur += 2;
    p->expect_crlf = 0;
    return STEP_OK;
}

static int parse_multibulk(resp_parser *p, const char *buf, size_t len) {
    int rc;
    if (K_UNLIKELY(len < p->cur)) return RESP_INCOMPLETE; /* caller passed less than before */
    if (p->mb_left < 0 && (rc = parse_count(p, buf, len)) != STEP_OK) return rc;
    if (p->expect_crlf && (rc = parse_big_crlf(p, buf, len)) != STEP_OK) return rc;
    while (p->mb_left > 0) {
        if (p->bulk_len < 0 && (rc = parse_bulk_len(p, buf, len)) != STEP_OK) return rc;
        if ((rc = parse_bulk_data(p, buf, len)) != STEP_OK) return rc;
    }
    return finish(p);
}

/* ---- Inline ----------------------------------------------------------- */

/* The line ends at '\n' (an optional '\r' before it is dropped) and may hold
 * RESP_INLINE_MAX bytes before it. It is split only once it is complete, so
 * the in-place unescaping happens exactly once. */
static int parse_inline(resp_parser *p, char *buf, size_t len) {
    size_t limit = (size_t)RESP_INLINE_MAX + 1;
    size_t end = len < limit ? len : limit;
    const char *nl = p->scan < end ? memchr(buf + p->scan, '\n', end - p->scan) : NULL;
    if (!nl) {
        if (len >= limit) return fail(p, ERR_BIG_INLINE);
        if (end > p->scan) p->scan = end;
        return RESP_INCOMPLETE;
    }
    size_t eol = (size_t)(nl - buf);
    size_t line_len = eol > 0 && buf[eol - 1] == '\r' ? eol - 1 : eol;
    size_t pos = 0;
    splitarg a;
    int rc;
    while ((rc = splitargs_next(buf, line_len, &pos, &a)) > 0)
        push_arg(p, a.off, a.len, NULL);
    if (rc < 0) return fail(p, ERR_QUOTES);
    p->cur = eol + 1;
    return finish(p);
}

/* ---- API -------------------------------------------------------------- */

void resp_parser_init(resp_parser *p) {
    memset(p, 0, sizeof(*p));
    p->max_bulk_len = DEFAULT_MAX_BULK_LEN;
    p->max_multibulk = RESP_MULTIBULK_MAX;
    p->bulk_len = -1;
}

void resp_parser_reset(resp_parser *p) {
    if (p->argv_cap > ARGV_KEEP_MAX) {
        km_free(p->argv);
        p->argv = NULL;
        p->argv_cap = 0;
    }
    p->argc = 0;
    p->consumed = 0;
    p->big_len = 0;
    p->pos = 0;
    p->error = NULL;
    p->kind = KIND_NONE;
    p->mb_left = 0;
    p->bulk_len = -1;
    p->expect_crlf = 0;
    p->cur = 0;
    p->scan = 0;
}

void resp_parser_free(resp_parser *p) {
    km_free(p->argv);
    p->argv = NULL;
    p->argv_cap = 0;
    p->argc = 0;
}

resp_status resp_parse(resp_parser *p, char *buf, size_t len) {
    /* argv stays valid until this call, so a finished request is cleared
     * here rather than after returning it. */
    if (p->kind == KIND_DONE) resp_parser_reset(p);
    if (p->kind == KIND_NONE) {
        if (len == 0) return RESP_INCOMPLETE;
        if (buf[0] == '*') {
            p->kind = KIND_MULTIBULK;
            p->mb_left = -1; /* count line not read yet */
        } else {
            p->kind = KIND_INLINE;
        }
    }
    switch (p->kind) {
    case KIND_MULTIBULK:
        return (resp_status)parse_multibulk(p, buf, len);
    case KIND_INLINE:
        return (resp_status)parse_inline(p, buf, len);
    default:
        return RESP_PROTO_ERROR; /* failed: the error is sticky until reset */
    }
}

void resp_parser_big_done(resp_parser *p, void *big, size_t taken) {
    /* Only meaningful right after RESP_NEED_BIG; anything else is ignored
     * rather than corrupting the state. */
    if (p->kind != KIND_MULTIBULK || p->bulk_len < RESP_BIG_ARG) return;
    push_arg(p, 0, (size_t)p->big_len, big);
    p->cur = p->pos + taken;
    p->scan = p->cur;
    p->bulk_len = -1;
    p->mb_left--;
    p->expect_crlf = 1;
}
