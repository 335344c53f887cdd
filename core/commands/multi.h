/* multi.h -- MULTI/EXEC transactions and WATCH. */
#ifndef KEEL_MULTI_H
#define KEEL_MULTI_H

#include "session/client.h"

/* Queues the current command of c inside MULTI. */
void multi_queue(client *c);
/* Drops queued commands and the MULTI state. */
void multi_discard_state(client *c);
void multi_unwatch_all(client *c);
/* Clients watching keys, and distinct watched keys (INFO clients). */
void multi_watch_stats(long long *clients, long long *keys);
/* Number of keys c watches (CLIENT LIST). */
int multi_watch_count(const client *c);
/* Marks the clients watching key in d as dirty; a deletion by expiry
 * (by_expiry) spares those that watched the key already expired. */
void multi_touch_key(db *d, const char *key, size_t len, int by_expiry);
/* Marks the watchers of keys that exist in d or in other (FLUSHDB passes
 * NULL; SWAPDB passes the database swapped in). */
void multi_touch_db(db *d, db *other);

#endif
