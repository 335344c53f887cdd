/* stream_cgroup.h -- a stream's consumer groups, kept in the stream's
 * groups slot (types/stream.h) and freed, measured and copied with it.
 *
 * As Valkey keeps them: the groups by name (listed in name order), each
 * with its last delivered ID, its entries-read counter, its pending
 * entries list (PEL: the delivered, unacknowledged IDs, each with its
 * delivery time, delivery count and owning consumer) and its consumers by
 * name, each with its seen and active times and its own PEL. A pending
 * entry (scg_nack) is one allocation that both PELs point to. The PELs are
 * ordered maps keyed by stream ID (ds/idmap.h); the names sorted arrays
 * with binary search (groups and consumers are created and deleted rarely
 * next to the reads).
 *
 * Times are unix milliseconds given by the caller (the commands' cached
 * clock), so this unit reads no clock.
 *
 * Threads: main thread; a stream that no key holds may be freed on the
 * lazy-free thread (the free touches only what the groups own). */
#ifndef KEEL_STREAM_CGROUP_H
#define KEEL_STREAM_CGROUP_H

#include <stddef.h>
#include <stdint.h>

#include "ds/idmap.h"
#include "types/stream.h"

/* entries_read when it is not known (Valkey's SCG_INVALID_ENTRIES_READ). */
#define SCG_INVALID_ENTRIES_READ (-1)

/* Consumers are created with active_time -1: never active yet. */
#define SCG_NEVER_ACTIVE (-1)

typedef struct scg_consumer scg_consumer;

typedef struct scg_nack {
    int64_t delivery_time; /* unix ms of the last delivery */
    uint64_t delivery_count;
    scg_consumer *consumer; /* the owner, whose PEL holds it too */
} scg_nack;

struct scg_consumer {
    char *name;
    size_t len;
    int64_t seen_time;   /* last attempted interaction (read, claim) */
    int64_t active_time; /* last successful one; SCG_NEVER_ACTIVE */
    idmap pel;           /* stream ID -> scg_nack, owned by the group's PEL */
};

/* A sorted array of named things (groups, consumers: each begins with its
 * name and length). */
typedef struct scg_names {
    void **items;
    size_t count, cap;
} scg_names;

typedef struct scg_group {
    char *name;
    size_t len;
    stream_id last_id;    /* the last delivered ID */
    int64_t entries_read; /* logical reads counter; SCG_INVALID_ENTRIES_READ */
    idmap pel;            /* stream ID -> scg_nack (owned) */
    scg_names consumers;  /* scg_consumer, by name */
} scg_group;

/* Registers the groups' free, mem_usage, copy and free_effort with the
 * stream type (types_setup, after stream_type_setup). */
void scg_setup(void);

static inline idmap_key scg_key(stream_id id) {
    return (idmap_key){id.ms, id.seq};
}
static inline stream_id scg_id(idmap_key k) {
    return (stream_id){k.hi, k.lo};
}

/* ---- groups of a stream ---- */

size_t scg_group_count(const kobj *s);
/* The i-th group in name order (i < scg_group_count). */
scg_group *scg_group_at(const kobj *s, size_t i);
scg_group *scg_lookup(const kobj *s, const char *name, size_t len);
/* A new group; NULL when the name is taken. */
scg_group *scg_create(kobj *s, const char *name, size_t len, stream_id last_id,
                      int64_t entries_read);
/* Destroys the group and its consumers and PEL: 1, or 0 when absent. */
int scg_destroy(kobj *s, const char *name, size_t len);

/* ---- consumers of a group ---- */

static inline size_t scg_consumer_count(const scg_group *g) {
    return g->consumers.count;
}
/* The i-th consumer in name order. */
static inline scg_consumer *scg_consumer_at(const scg_group *g, size_t i) {
    return g->consumers.items[i];
}
scg_consumer *scg_consumer_lookup(const scg_group *g, const char *name, size_t len);
/* A new consumer seen at now, never active; NULL when the name is taken. */
scg_consumer *scg_consumer_create(scg_group *g, const char *name, size_t len, int64_t now);
/* Deletes the consumer and its pending entries (from the group's PEL
 * too); returns how many it had. */
size_t scg_consumer_delete(scg_group *g, scg_consumer *c);

/* ---- pending entries ---- */

static inline scg_nack *scg_pel_find(const scg_group *g, stream_id id) {
    return idmap_find(&g->pel, scg_key(id));
}
/* XREADGROUP delivered id to c at now: a new pending entry (count 1), or
 * the existing one given to c with its count reset to 1 (XGROUP SETID may
 * deliver an ID again). */
scg_nack *scg_deliver(scg_group *g, scg_consumer *c, stream_id id, int64_t now);
/* A new pending entry for id owned by c (XCLAIM FORCE): delivered at now,
 * count 1. id must not be pending. */
scg_nack *scg_pel_add(scg_group *g, scg_consumer *c, stream_id id, int64_t now);
/* Gives the pending entry n of id to c (XCLAIM, XAUTOCLAIM). */
void scg_pel_transfer(scg_group *g, scg_nack *n, stream_id id, scg_consumer *c);
/* Removes id from the PELs (XACK; a claim that finds the entry deleted):
 * 1, or 0 when it was not pending. */
int scg_pel_remove(scg_group *g, stream_id id);

/* ---- the group's position in the stream ---- */

/* The read counter of id, as Valkey's streamEstimateDistanceFromFirstEverEntry:
 * exact or SCG_INVALID_ENTRIES_READ where tombstones make it unknowable. */
int64_t scg_estimate_entries_read(const kobj *s, stream_id id);
/* 1 when a deleted entry may lie in [start, end] (Valkey's
 * streamRangeHasTombstones; start must be before the stream's last ID). */
int scg_range_has_tombstones(const kobj *s, stream_id start, stream_id end);
/* The group moves past id, an entry it just delivered beyond its last ID:
 * last_id and entries_read follow, as Valkey's streamReplyWithRange. */
void scg_advance(const kobj *s, scg_group *g, stream_id id);
/* The group's lag (entries not yet delivered): 1 and *lag, or 0 when it
 * cannot be known (XINFO replies null). */
int scg_lag(const kobj *s, const scg_group *g, int64_t *lag);

#endif
