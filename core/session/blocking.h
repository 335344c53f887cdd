/* blocking.h -- clients blocked on keys: BLPOP, BLMOVE, BZPOPMIN and the
 * other blocking commands.
 *
 * The model is Valkey 7's: a blocking command that finds nothing to serve
 * calls blocking_wait() and returns without replying. The client then runs
 * no further commands (its pipelined requests wait in the query buffer)
 * until it is unblocked. When one of its keys changes (the keyspace change
 * hooks: a key set, pushed to, renamed or moved into place, a database
 * swapped in), the key is marked ready; after the command that changed it
 * has finished -- after the whole transaction for EXEC, after a module
 * command or a script -- the clients blocked on each ready key are
 * offered it in the order they blocked: each one's command is run again
 * from the start, with the same arguments. The rerun either serves the
 * client (it replies, and the client is unblocked and goes on with its
 * pipeline) or finds nothing again and calls blocking_wait() again, which
 * keeps the client's place in the queue and its deadline. A rerun that
 * fails (WRONGTYPE on the destination of BLMOVE) replies its error and
 * unblocks, as in Valkey.
 *
 * A blocked client is unblocked without its command when its deadline
 * passes or by CLIENT UNBLOCK: it then gets the null the command named in
 * blocking_wait() (CLIENT UNBLOCK ERROR: "-UNBLOCKED client unblocked via
 * CLIENT UNBLOCK"). A blocked client that disconnects is forgotten.
 *
 * INFO clients reports blocked_clients and total_blocking_keys.
 *
 * Threads: main thread only. */
#ifndef KEEL_BLOCKING_H
#define KEEL_BLOCKING_H

#include <stdint.h>

#include "session/client.h"

/* What a client gets when it stops waiting without being served. */
typedef enum blocking_null {
    BLOCKING_NULL_ARRAY, /* *-1 (RESP3 _): BLPOP, BLMPOP, BZPOPMIN, BZMPOP */
    BLOCKING_NULL_BULK,  /* $-1 (RESP3 _): BRPOPLPUSH, BLMOVE */
} blocking_null;

/* 1 when the running command may block; 0 inside MULTI/EXEC, a script or
 * a module's call, where a blocking command that finds nothing replies at
 * once as if its timeout had passed. */
int blocking_allowed(const client *c);

/* Parses a timeout argument in seconds (fractions allowed, "0" = forever)
 * as Valkey does. On success sets *deadline_ms to the absolute unix-ms
 * deadline (0: none) and returns K_OK; otherwise replies Valkey's error
 * ("ERR timeout is not a float or out of range", "ERR timeout is
 * negative", "ERR timeout is out of range") and returns K_ERR. */
int blocking_parse_timeout(client *c, const karg *arg, int64_t *deadline_ms);

/* Blocks the running command's client on the keys at argument positions
 * keypos[0..nkeys) of c->argv, in c->db, until deadline_ms (0: forever).
 * The command must not have replied. Called again by a rerun, it keeps the
 * client's original place and deadline. keypos is copied. */
void blocking_wait(client *c, const int *keypos, int nkeys, int64_t deadline_ms,
                   blocking_null on_timeout);

/* 1 while the running command is a blocked client's rerun (a rerun that
 * serves must not count as a new command in the statistics). */
int blocking_is_rerun(const client *c);

#endif
