/* cmd_zset.h -- what the sorted set commands (cmd_zset.c) share with the
 * geo commands (cmd_geo.c), whose geo sets are sorted sets: the key
 * lookup, so both answer a missing key and WRONGTYPE alike.
 *
 * Threads: main thread (command procedures). */
#ifndef KEEL_CMD_ZSET_H
#define KEEL_CMD_ZSET_H

#include "session/client.h"

/* The sorted set at key: 1 and *o when there is one, 0 when the key is
 * missing, -1 after replying WRONGTYPE. `count` as db_lookup's (reads 1,
 * writes 0). */
int zset_cmd_lookup(client *c, const karg *key, int count, kobj **o);

#endif
