/* resp_parse.h -- incremental parser for client requests (RESP multibulk and
 * inline commands).
 *
 * The parser never copies argument bytes: it records each argument as an
 * offset and length into the request buffer the caller passes in, so a
 * command sees slices of the client's query buffer. The buffer passed to
 * resp_parse() always begins at the first byte of the current request; when a
 * request is incomplete the caller reads more bytes and calls again with the
 * same bytes (possibly at a new address after a realloc) plus the new ones.
 * Already-examined bytes are not rescanned.
 *
 * Bulk arguments of RESP_BIG_ARG bytes or more are not read into the query
 * buffer at all: the parser stops with RESP_NEED_BIG, the caller allocates a
 * buffer of exactly big_len bytes, moves in whatever part of the argument is
 * already buffered, reads the rest from the socket straight into it, and
 * hands it back with resp_parser_big_done(). That buffer then becomes the
 * stored value without another copy, also when requests are pipelined.
 *
 * Inline commands are split on whitespace with quote and escape handling;
 * unescaping happens in place in the buffer (the result is never longer than
 * the source), which is why resp_parse() takes a mutable buffer.
 *
 * Threads: a parser is used by one thread at a time (the main thread today,
 * an I/O thread later); there is no shared state. */
#ifndef KEEL_RESP_PARSE_H
#define KEEL_RESP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define RESP_BIG_ARG (32 * 1024)       /* bulk size read outside the query buffer */
#define RESP_INLINE_MAX (64 * 1024)    /* longest inline request / count line */
#define RESP_MULTIBULK_MAX (INT32_MAX) /* most arguments in one request */
/* Before AUTH succeeds, requests are kept tiny (Valkey's limits), so an
 * unauthenticated peer cannot make the server allocate much. */
#define RESP_UNAUTH_MULTIBULK 10
#define RESP_UNAUTH_BULK 16384

typedef struct resp_arg {
    size_t off; /* offset of the argument's bytes in the request buffer */
    size_t len;
    void *big;  /* non-NULL: the bytes are in this caller buffer, off is 0 */
} resp_arg;

typedef enum resp_status {
    RESP_INCOMPLETE,  /* need more bytes */
    RESP_COMPLETE,    /* one request parsed; see argc/argv and consumed */
    RESP_NEED_BIG,    /* a big bulk starts at buffer offset pos, big_len bytes */
    RESP_PROTO_ERROR, /* malformed; error holds "Protocol error: ..." */
} resp_status;

typedef struct resp_parser {
    /* Limits, set by the caller before parsing (resp_parser_init sets the
     * Valkey defaults). */
    long long max_bulk_len;  /* proto-max-bulk-len, default 512 MB */
    long long max_multibulk; /* most arguments, default RESP_MULTIBULK_MAX */
    int unauthenticated;     /* apply the RESP_UNAUTH_* limits */

    /* Results. argv/argc are valid after RESP_COMPLETE until the next call.
     * argc may be 0 for an empty request ("*0\r\n", a blank inline line):
     * skip it. consumed is the request's length in the buffer. */
    int argc;
    resp_arg *argv;
    size_t consumed;
    long long big_len;  /* with RESP_NEED_BIG: size of the big argument */
    size_t pos;         /* with RESP_NEED_BIG: where its bytes start */
    const char *error;  /* with RESP_PROTO_ERROR: static message */

    /* Private state. */
    int argv_cap;
    int kind;           /* 0 = unknown yet, 1 = multibulk, 2 = inline (3, 4: done, failed) */
    long long mb_left;  /* arguments still to read */
    long long bulk_len; /* -1 while reading a "$len" line */
    int expect_crlf;    /* after a big argument, its CRLF is still due */
    size_t cur;         /* offset of the next byte to parse */
    size_t scan;        /* a line-end search resumes here (no rescanning) */
} resp_parser;

void resp_parser_init(resp_parser *p);
/* Prepares for the next request after RESP_COMPLETE or an error; keeps the
 * argv allocation. */
void resp_parser_reset(resp_parser *p);
void resp_parser_free(resp_parser *p);

/* Parses buf[0..len), which starts at the current request. */
resp_status resp_parse(resp_parser *p, char *buf, size_t len);

/* Completes a RESP_NEED_BIG: big now holds all big_len bytes of the
 * argument; taken is how many of those bytes the caller moved out of the
 * request buffer (starting at pos). Parsing continues at pos + taken, where
 * the argument's CRLF is expected. The parser does not own big. */
void resp_parser_big_done(resp_parser *p, void *big, size_t taken);

#endif
