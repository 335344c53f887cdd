/* multi.h -- MULTI/EXEC transactions and WATCH. */
#ifndef KEEL_MULTI_H
#define KEEL_MULTI_H

#include "server/client.h"

/* Queues the current command of c inside MULTI. */
void multi_queue(client *c);
/* Drops queued commands and the MULTI state. */
void multi_discard_state(client *c);
void multi_unwatch_all(client *c);
/* Marks every client watching key in d as dirty. */
void multi_touch_key(db *d, const char *key, size_t len);
/* Marks every watcher of every key in d (FLUSHDB, SWAPDB). */
void multi_touch_db(db *d);

#endif
