/* reply.h -- building RESP2/RESP3 replies into a client's reply chain.
 *
 * Each function appends one protocol element; the client's protocol version
 * (HELLO) decides the encoding of maps, sets, nulls, doubles and booleans,
 * so commands are written once for both. Large string values are appended by
 * reference (reply_bulk_obj), never copied.
 *
 * Aggregates whose length is known only at the end are deferred: the
 * header's room is reserved in the reply chain and filled later.
 *
 * Replies can also be captured: a command run on a connection-less client
 * by reply_capture_run() leaves its RESP bytes in a reply_buf, so a module
 * or a script can read what the command answered.
 *
 * Threads: main thread. */
#ifndef KEEL_REPLY_H
#define KEEL_REPLY_H

#include <stddef.h>

#include "session/client.h"

void reply_raw(client *c, const char *s, size_t len);
void reply_ok(client *c);
void reply_simple(client *c, const char *s);
/* err without the leading '-'; "ERR ..." style. Counted in errorstats. */
void reply_error(client *c, const char *err);
void reply_errorf(client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An error of len bytes (CR and LF sent as spaces); counted in errorstats,
 * total_error_replies and the command's failed calls only if counted (an
 * error passed on from a called command was counted when it failed). */
void reply_error_len(client *c, const char *err, size_t len, int counted);
void reply_int(client *c, long long v);
void reply_bulk(client *c, const char *s, size_t len);
void reply_bulk_cstr(client *c, const char *s);
void reply_bulk_ll(client *c, long long v);
void reply_bulk_obj(client *c, kobj *o);
void reply_double(client *c, double d);
void reply_null(client *c);       /* $-1 / _ */
void reply_null_array(client *c); /* *-1 / _ */
void reply_bool(client *c, int v);
void reply_array(client *c, long long n);
void reply_map(client *c, long long n); /* n pairs */
void reply_set(client *c, long long n);
/* An out-of-band message of n elements: a RESP3 push (">"), or in RESP2
 * an array, which a subscribed client reads as its message. */
void reply_push(client *c, long long n);
/* Appends a complete, immutable protocol frame (a RESP string object
 * holding encoded bytes, shared among many clients: pub/sub messages).
 * Large frames are referenced, not copied. */
void reply_frame(client *c, kobj *frame);
/* A container's HELP reply as Valkey lays it out: the line
 * "<CONTAINER> <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
 * the n lines given, then HELP itself. */
void reply_help(client *c, const char *container, const char *const *lines, size_t n);
void reply_verbatim(client *c, const char *s, size_t len, const char *ext);
/* A big number (its decimal digits, '-' first if negative): RESP3's "(",
 * a bulk string in RESP2. */
void reply_bignum(client *c, const char *digits, size_t len);

/* ---- deferred aggregate lengths ----
 *
 *     reply_deferred h = reply_deferred_array(c);
 *     ... append the elements, counting them ...
 *     reply_set_deferred_len(c, h, count);
 *
 * Every handle must be filled before the command returns (nothing is sent
 * while one is open). Handles may nest and may be filled in any order. For
 * a map, n counts pairs; RESP2 clients get an array of 2n (a set: of n).
 * While replies are dropped (CLIENT REPLY OFF/SKIP, a closing client) the
 * handle is REPLY_DEFERRED_NONE and filling it does nothing. */
typedef int reply_deferred;
#define REPLY_DEFERRED_NONE 0

reply_deferred reply_deferred_array(client *c);
reply_deferred reply_deferred_map(client *c);
reply_deferred reply_deferred_set(client *c);
void reply_set_deferred_len(client *c, reply_deferred h, long long n);
/* Headers reserved on c and not yet filled (0 between commands). */
int reply_deferred_open(const client *c);

/* ---- capturing replies ---- */

/* A growable byte buffer holding RESP replies; zero-initialise it. */
typedef struct reply_buf {
    char *ptr;
    size_t len;
    size_t cap;
} reply_buf;

void reply_buf_free(reply_buf *b);
/* Appends c's pending replies to out and empties c's reply chain (an
 * emptied buffer block may stay for the next reply). Only for a client
 * nothing else sends from: connection-less, between commands. */
void reply_take(client *c, reply_buf *out);
/* Runs argv (argc >= 1; the arguments stay the caller's) on c, a
 * connection-less client created with client_create(NULL), and appends its
 * reply to out. The command goes through the usual checks (arity, AUTH,
 * MULTI queueing, CLIENT REPLY). K_ERR without running anything if argc < 1,
 * c has a connection or c is already executing (a command re-entering its
 * own client); K_ERR after running it if c was closed (CLIENT KILL, output
 * limit): it is freed with the closed clients, so the caller must drop it. */
int reply_capture_run(client *c, int argc, const karg *argv, reply_buf *out);

/* Common errors. */
void reply_wrong_arity(client *c);
void reply_syntax_error(client *c);
void reply_wrongtype(client *c);
void reply_not_int(client *c);

/* Error-prefix counters for INFO errorstats. */
void reply_errorstats_foreach(void (*fn)(const char *prefix, long long count, void *priv), void *priv);
void reply_errorstats_reset(void);

#endif
