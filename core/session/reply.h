/* reply.h -- building RESP2/RESP3 replies into a client's reply chain.
 *
 * Each function appends one protocol element; the client's protocol version
 * (HELLO) decides the encoding of maps, sets, nulls, doubles and booleans,
 * so commands are written once for both. Large string values are appended by
 * reference (reply_bulk_obj), never copied.
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
void reply_verbatim(client *c, const char *s, size_t len, const char *ext);

/* Common errors. */
void reply_wrong_arity(client *c);
void reply_syntax_error(client *c);
void reply_wrongtype(client *c);
void reply_not_int(client *c);

/* Error-prefix counters for INFO errorstats. */
void reply_errorstats_foreach(void (*fn)(const char *prefix, long long count, void *priv), void *priv);
void reply_errorstats_reset(void);

#endif
