/* multi.h -- MULTI/EXEC transactions and WATCH. */
#ifndef KEEL_MULTI_H
#define KEEL_MULTI_H

#include "session/client.h"

/* Connects the transaction code to the keyspace's change hook, the
 * dispatcher (client_set_txn_ops) and the client-close event; after
 * db_setup. Teardown after the last client is freed. */
void multi_setup(void);
void multi_teardown(void);

/* Drops queued commands and the MULTI state (RESET, DISCARD, EXEC). */
void multi_discard_state(client *c);
void multi_unwatch_all(client *c);
/* Clients watching keys, and distinct watched keys (INFO clients). */
void multi_watch_stats(long long *clients, long long *keys);

#endif
