/* pause.h -- CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE, with
 * Valkey 8.0.1's rules.
 *
 * While a pause is in effect, a command it covers is held, not refused:
 * the client is blocked (INFO blocked_clients, CLIENT LIST flag b) with the
 * command's arguments kept, its pipelined requests waiting in the query
 * buffer, until the pause ends (its deadline, CLIENT UNPAUSE); then, in
 * before-sleep, each held client's command is processed again from the
 * start in the order they were held, and may be held again if a pause
 * still covers it. ALL covers every command; WRITE covers the writes and
 * the commands that may replicate (PUBLISH, PFCOUNT, ...), and an EXEC
 * whose queue holds one. Monitors are never held (Valkey treats them as
 * replicas). The checks that fail a command at once (arity, AUTH, OOM)
 * come first, so a bad command still gets its error during a pause.
 *
 * A pause of either kind also defers expiry and eviction (db.h's
 * db_defer_removals): an expired key reads as missing but is not deleted
 * until the pause ends.
 *
 * A new pause extends the deadline but never shortens it, and WRITE after
 * ALL keeps ALL. A pause started inside EXEC lets the rest of that
 * transaction run.
 *
 * Threads: main thread. */
#ifndef KEEL_PAUSE_H
#define KEEL_PAUSE_H

#include "session/blocking.h"
#include "session/client.h"

/* Held by a pause: its command waits in c->pause_hold. */
#define CLIENT_PAUSED (1u << 25)

/* Borrows the blocking gauges (held clients count in blocked_clients)
 * until pause_teardown. */
void pause_setup(blocking_metrics *metrics);
void pause_teardown(void);

/* 1 when a pause covers c's command now (c->cmd resolved and checked). */
int pause_covers(const client *c);

/* INFO clients' pause fields (Valkey 8.1): the reason ("none" or
 * "client_pause"), the actions ("none", "write" or "all") and the
 * milliseconds left (0 when none). */
typedef struct pause_status {
    const char *reason;
    const char *actions;
    long long remaining_ms;
} pause_status;
void pause_get_status(pause_status *out);
/* Holds c's command until the pause ends. */
void pause_hold(client *c);
/* c is being freed: its held command is dropped. */
void pause_forget(client *c);

/* before-sleep: ends a pause whose deadline passed and processes the
 * commands of the clients it held. */
void pause_before_sleep(void);

/* CLIENT PAUSE and CLIENT UNPAUSE. */
void pause_client_pause_command(client *c);
void pause_client_unpause_command(client *c);

#endif
