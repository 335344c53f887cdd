/* blocking.h -- clients blocked on keys: BLPOP, BLMOVE, BZPOPMIN, XREAD and
 * the other blocking commands.
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
 * A rerun is offered a key only while the key exists with the type the
 * command waits for (list for the list commands, zset for the sorted-set
 * ones, stream for the stream ones, read from the command's ACL
 * categories; any type for others): a key deleted, or set to a string,
 * leaves its clients blocked, as Valkey. A wait with
 * BLOCKING_WAKE_ON_DELETE (XREADGROUP) is rerun on every change of its
 * keys instead, deletion (DEL, expiry, eviction, a flush) and a change of
 * type included, so that the command can answer that its key is gone
 * (Valkey's unblock_on_nokey; INFO's total_blocking_keys_on_nokey counts
 * the keys such a wait is on).
 *
 * The command is counted once (calls, total_commands_processed, the slow
 * log): by the rerun that serves it, or when it stops waiting. A blocked
 * client is not closed by the idle timeout.
 *
 * INFO clients reports blocked_clients, clients_in_timeout_table and
 * total_blocking_keys; CLIENT LIST shows flag b (blocked) and u (unblocked,
 * its pipeline not resumed yet).
 *
 * A module's wait (blocking_wait_module) is the second kind: the same
 * queues, deadline, CLIENT UNBLOCK, disconnect and INFO machinery, but its
 * end calls the module's callbacks instead of rerunning the command: a
 * ready key is offered to key_ready, a timeout or CLIENT UNBLOCK TIMEOUT
 * to timeout (CLIENT UNBLOCK ERROR replies the UNBLOCKED error itself),
 * and the module's own unblock to unblocked (blocking_module_unblock).
 * Every end, the client's disconnect included, is followed by ended. A key
 * is offered while it exists, whatever its type. CLIENT UNBLOCK leaves a
 * module's wait alone (answers 0) unless the module may time out; a
 * timeout or CLIENT UNBLOCK that finds the module's unblock queued leaves
 * the reply to it, as Valkey.
 *
 * Each callback runs as the blocked client's own work (client_enter): a
 * command it calls is nested in the blocked command, so it neither evicts
 * nor serves ready keys (they are served after it), and nothing ends the
 * wait under it (the client is freed only after; CLIENT UNBLOCK of it
 * answers 0 meanwhile).
 *
 * Threads: main thread only. A client whose I/O job is in flight is
 * replied to (served, timed out, unblocked) only after io_threads_quiesce:
 * the job's thread then no longer reads its reply chain. */
#ifndef KEEL_BLOCKING_H
#define KEEL_BLOCKING_H

#include <stdint.h>

#include "common/metrics.h"
#include "event/event.h"
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
/* The same for a timeout in integer milliseconds (XREAD's and
 * XREADGROUP's BLOCK): "ERR timeout is not an integer or out of range",
 * "ERR timeout is negative", "ERR timeout is out of range". */
int blocking_parse_timeout_ms(client *c, const karg *arg, int64_t *deadline_ms);

/* Blocks the running command's client on the keys at argument positions
 * keypos[0..nkeys) of c->argv, in c->db, until deadline_ms (0: forever).
 * The command must not have replied. Called again by a rerun, it keeps the
 * client's original place and deadline. keypos is copied; a key named
 * twice counts once. Where blocking is not allowed it replies the null at
 * once. */
void blocking_wait(client *c, const int *keypos, int nkeys, int64_t deadline_ms,
                   blocking_null on_timeout);

/* blocking_wait with flags: BLOCKING_WAKE_ON_DELETE reruns the command
 * whenever one of its keys changes, is deleted or changes type (see
 * above), not only while the key holds the type waited for. */
#define BLOCKING_WAKE_ON_DELETE (1 << 0)
void blocking_wait_flags(client *c, const int *keypos, int nkeys, int64_t deadline_ms,
                         blocking_null on_timeout, int flags);

/* Replaces argument pos of the copy of the arguments that c's reruns use
 * with s[0..len) (copied): XREAD pins `$` to the ID that was last when it
 * blocked, as Valkey rewrites its argv. Call it after blocking_wait left
 * c blocked; a no-op when c is not waiting (where blocking is not
 * allowed, or a module's wait). */
void blocking_rewrite_arg(client *c, int pos, const char *s, size_t len);

/* A module's wait (module_block.c): callbacks on the main thread, with
 * priv. */
typedef struct blocking_module_ops {
    /* key (in the database c blocked in, which is c->db again) is ready:
     * returns 1 if it replied, which ends the wait. */
    int (*key_ready)(client *c, const char *key, size_t len, void *priv);
    /* The deadline passed or CLIENT UNBLOCK TIMEOUT: replies. */
    void (*timeout)(client *c, void *priv);
    /* The module's unblock with data: replies. */
    void (*unblocked)(client *c, void *data, void *priv);
    /* 1 if CLIENT UNBLOCK may end the wait (the module handles a timeout). */
    int (*may_time_out)(void *priv);
    /* 1 while the module's unblock is queued: it will reply. */
    int (*unblock_queued)(void *priv);
    /* The wait is over and c no longer blocked: after its reply, or while
     * c is being freed (then c must not be replied to). */
    void (*ended)(client *c, void *priv);
} blocking_module_ops;

/* Blocks the running command's client on the keys (copied; in c->db)
 * until deadline_ms (0: none). K_ERR where blocking is not allowed or c
 * waits already: nothing happened. ops is borrowed for the wait. */
int blocking_wait_module(client *c, const char *const *keys, const size_t *lens, int nkeys,
                         int64_t deadline_ms, const blocking_module_ops *ops, void *priv);
/* The module's unblock of c (waiting in blocking_wait_module): unblocked
 * replies, then the wait ends, counted once (failed: the reply was an
 * error), and c's pipeline goes on. */
void blocking_module_unblock(client *c, void *data);
/* Marks key of d ready when a client waits on it (a module's own types,
 * which the keyspace hook cannot judge): served after the running
 * command, or in before-sleep. */
void blocking_signal_key(db *d, const char *key, size_t len);

/* 1 while the running command is a blocked client's rerun. call() already
 * counts a blocked command once (the first run that blocks is not counted,
 * the rerun that serves is), so commands need not test this for the
 * statistics. */
int blocking_is_rerun(const client *c);

/* ---- the session layer's and the server's side ---- */

/* Gauges (CONFIG RESETSTAT leaves them alone), named as INFO's fields. */
#define BLOCKING_METRICS(X, T)                                                                     \
    X(T, blocked_clients)                                                                          \
    X(T, clients_in_timeout_table)                                                                 \
    X(T, total_blocking_keys)                                                                      \
    X(T, total_blocking_keys_on_nokey)
METRICS_STRUCT(blocking_metrics, BLOCKING_METRICS);

/* Borrows el (the deadline timer) and metrics until blocking_teardown,
 * which runs after every client is freed. */
void blocking_setup(event_loop *el, blocking_metrics *metrics);
void blocking_teardown(void);

/* 1 while c waits in a blocking command. */
static inline int blocking_is_blocked(const client *c) {
    return c->bstate != NULL;
}

/* Serves the clients blocked on the keys made ready, and those that their
 * reruns made ready, until none is left: client_execute calls it after
 * every top-level command (a command inside EXEC, a script or a module
 * call waits for the outer one). A no-op while serving. */
void blocking_serve_ready(void);

/* before-sleep: serves what is ready (keys signalled outside a command),
 * then runs the pipelined requests of the clients unblocked since. */
void blocking_before_sleep(void);

/* For call(): whether the command just run left c blocked, in which case
 * its statistics wait for the unblock (*us, what it took, is kept); when
 * a rerun served it, *us grows by the earlier attempts. */
int blocking_left_blocked(client *c, uint64_t *us);

/* CLIENT UNBLOCK: ends c's wait as a timeout (its null) or with the
 * UNBLOCKED error. Returns 1, or 0 if c is not blocked or its module's
 * wait does not let it (see above). */
int blocking_unblock(client *c, int as_error);

/* c is being freed: it leaves every queue. */
void blocking_forget(client *c);

#endif
