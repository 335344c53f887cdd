/* types.h -- the aggregate value types: lists, sets, sorted sets, hashes.
 *
 * Each type is one folder-level unit here (list.c, set.c, zset.c, hash.c
 * with their encodings) that owns its value's layout and registers its
 * operations (obj_type: TYPE's name, OBJECT ENCODING, freeing, MEMORY
 * USAGE, COPY) with the keyspace at types_setup, so nothing outside the
 * types tests a type id to free or measure a value. The commands
 * (commands/cmd_<type>.c) work through each type's header; the keyspace
 * stores the values as kobj and never looks inside.
 *
 * Thresholds between encodings are Valkey's directives (db_options.types,
 * read live through db_opts(), so CONFIG SET applies to the next write).
 *
 * Threads: main thread, except that a value no key references any more
 * may be freed on the lazy-free thread. */
#ifndef KEEL_TYPES_H
#define KEEL_TYPES_H

#include "common/metrics.h"

#include <stdint.h>

/* INFO stats counters of the types (RESETSTAT clears them):
 * expired_fields, hash fields removed because their TTL passed (lazily, by
 * the cron, or by a command given a time already past). */
#define TYPES_METRICS(X, T) X(T, expired_fields)
METRICS_STRUCT(types_metrics, TYPES_METRICS);
extern const metric_desc types_metric_descs[];
extern const size_t types_metric_descs_count;

/* Registers every type's operations (after db_setup); borrows m until
 * types_teardown. */
void types_setup(types_metrics *m);
void types_teardown(void);
/* The cron's step of active expiry inside values (hash fields with a
 * TTL); a bounded amount of work per call. now: unix ms. */
void types_active_expire(int64_t now_ms);

#endif
