/* tracking.h -- client-side caching: CLIENT TRACKING and the invalidation
 * messages it sends.
 *
 * A tracking client in the default mode has the keys of its read-only
 * commands remembered in a table (key -> the ids of the clients that read
 * it); when a remembered key changes (the keyspace change hooks: set,
 * deleted, expired, evicted), each of those clients gets one invalidation
 * and the key is forgotten until it is read again. OPTIN remembers only
 * after CLIENT CACHING YES, OPTOUT always but after CLIENT CACHING NO; the
 * CACHING choice lasts for the next command (or the next transaction).
 * The table is keyed by name across databases, as Valkey's, and bounded by
 * tracking-table-max-keys: keys over the bound are forgotten at random,
 * each with its invalidation.
 *
 * A BCAST client remembers nothing: it names prefixes (none: every key),
 * and every key changed under one of them is collected; once per event
 * loop iteration each prefix's keys go out in one message to its clients.
 * NOLOOP leaves out the keys a client changed itself.
 *
 * Delivery: a RESP3 push ["invalidate", [keys]] on the client itself, or
 * on the REDIRECT client: a RESP3 push there too, or in RESP2 a pub/sub
 * message on `__redis__:invalidate` when the redirect client is
 * subscribed. A flush (FLUSHALL, FLUSHDB, SWAPDB) invalidates everything:
 * the keys are a null. When the redirect client is gone, the client is
 * flagged (CLIENT LIST R) and a RESP3 client gets a `tracking-redir-broken`
 * push instead. Invalidations a client causes with its own command are
 * delivered after that command's reply (after EXEC's for a transaction),
 * and ignore CLIENT REPLY OFF, as Valkey's pushes do.
 *
 * INFO: tracking_clients, tracking_total_keys, tracking_total_items,
 * tracking_total_prefixes (gauges: RESETSTAT leaves them).
 *
 * Threads: main thread only. */
#ifndef KEEL_TRACKING_H
#define KEEL_TRACKING_H

#include <stddef.h>

#include "common/metrics.h"
#include "session/client.h"

typedef struct tracking_options {
    long long table_max_keys; /* tracking-table-max-keys; 0: unbounded */
} tracking_options;

#define TRACKING_METRICS(X, T)                                                                     \
    X(T, tracking_clients)                                                                         \
    X(T, tracking_total_keys)                                                                      \
    X(T, tracking_total_items)                                                                     \
    X(T, tracking_total_prefixes)
/* Gauges, as blocking's: INFO reads them by name, RESETSTAT leaves them. */
METRICS_STRUCT(tracking_metrics, TRACKING_METRICS);

/* Borrows opts and metrics until tracking_teardown; adds the keyspace hook. */
void tracking_setup(const tracking_options *opts, tracking_metrics *metrics);
void tracking_teardown(void);

/* The CLIENT subcommands: TRACKING, CACHING, GETREDIR, TRACKINGINFO. */
void tracking_client_tracking(client *c);
void tracking_client_caching(client *c);
void tracking_client_getredir(client *c);
void tracking_client_trackinginfo(client *c);

/* Turns tracking off for c and frees its state (CLIENT TRACKING OFF,
 * RESET, and the client going away). */
void tracking_disable(client *c);

/* After a read-only command: remembers for tracker the keys of cmd run
 * with c->argv (the call path: tracker is c; for a module's call, c is the
 * capture client and tracker the calling client, as Valkey does for
 * scripts). */
void tracking_remember_keys(client *tracker, const client *c, const command *cmd);
/* After a command as a whole (not each one EXEC runs): CLIENT CACHING's
 * choice is spent, unless the command was a CLIENT subcommand. */
void tracking_command_done(client *c);
/* Sends the invalidations held back until the current command's reply
 * was complete. Called when the outermost call returns. */
void tracking_flush_pending(void);
/* Whether tracking_flush_pending has anything to send (read on every
 * command: exposed so the check inlines). */
extern int tracking_pending_in_use;
static inline int tracking_has_pending(void) {
    return tracking_pending_in_use;
}
/* Forgets keys over tracking-table-max-keys (before each command and in
 * the cron, as Valkey does, while some client tracks). */
void tracking_enforce_limit(void);
/* The gauges tracking_setup was handed, exposed so that the request path's
 * check inlines: whether any client tracks. */
extern tracking_metrics *tracking_stats_in_use;
static inline int tracking_active(void) {
    return tracking_stats_in_use && tracking_stats_in_use->tracking_clients;
}
/* The BCAST messages collected during this event loop iteration
 * (before-sleep). */
void tracking_before_sleep(void);

/* CLIENT LIST: the flags t/R/B appended to buf (returns the new end) and
 * the redir field (-1 when not tracking). */
char *tracking_flags_str(const client *c, char *p);
long long tracking_redirect_id(const client *c);

#endif
