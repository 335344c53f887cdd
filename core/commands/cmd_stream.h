/* cmd_stream.h -- what the stream commands (cmd_stream.c: XADD, XRANGE,
 * XREAD, ...) share with the consumer-group commands (cmd_stream_group.c:
 * XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO): key
 * lookup, ID arguments and the entry replies, so both answer with the same
 * errors and the same shapes.
 *
 * Threads: main thread (command procedures). */
#ifndef KEEL_CMD_STREAM_H
#define KEEL_CMD_STREAM_H

#include "session/client.h"
#include "types/stream.h"

/* Looks key up; *out is its stream or NULL. Replies WRONGTYPE and returns
 * 0 when it holds another type. count: as db_lookup's (reads count
 * keyspace hits and misses). */
int stream_cmd_lookup(client *c, const karg *key, int count, kobj **out);

/* Parses an ID argument ("ms" takes missing_seq); "-" and "+" only when
 * allow_minmax. On failure replies "ERR Invalid stream ID specified as
 * stream command argument" and returns K_ERR. */
int stream_cmd_parse_id(client *c, const karg *a, uint64_t missing_seq, int allow_minmax,
                        stream_id *out);
/* Parses a range bound (XRANGE, XPENDING, XAUTOCLAIM's start): "-", "+",
 * an ID, or "(ID" (exclusive: the next ID for a start, the previous for an
 * end; "ERR invalid start ID for the interval" / "ERR invalid end ID for
 * the interval" past the ends). is_end picks the missing sequence (0 for
 * a start, UINT64_MAX for an end) and the direction. Replies the error and
 * returns K_ERR on failure. */
int stream_cmd_parse_range(client *c, const karg *a, int is_end, stream_id *out);

/* 1 when the argument is the one character ch ('$', '>', '*', '~'...). */
static inline int stream_cmd_arg_is(const karg *a, char ch) {
    return a->len == 1 && a->ptr[0] == ch;
}

/* Replies an ID as a bulk string. */
void stream_cmd_reply_id(client *c, stream_id id);
/* Replies the entry the iterator stands on, [id, [field, value, ...]],
 * reading its npairs pairs. */
void stream_cmd_reply_entry(client *c, stream_iter *it, stream_id id, size_t npairs);

#endif
