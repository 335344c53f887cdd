/* db.h -- the keyspace: numbered databases of keys, expiry, WATCH signals.
 *
 * A key lives in a db_entry (key bytes embedded, value reference, absolute
 * expiry time, LRU/LFU clock). Each database keeps two hash tables over the
 * same entries: `keys` holds every key, `expires` only those with a TTL, so
 * the active expire cycle samples only keys that can expire.
 *
 * Lookups for reading and writing apply lazy expiry: an expired key is
 * deleted on access and never returned.
 *
 * Threads: main thread only. */
#ifndef KEEL_DB_H
#define KEEL_DB_H

#include <stddef.h>
#include <stdint.h>

#include "ds/hashtable.h"
#include "keyspace/object.h"

typedef struct db_entry {
    kobj *val;
    int64_t expire; /* unix ms, -1 = no expiry */
    uint32_t lru;   /* LRU clock (seconds) or LFU: minutes<<8 | log counter */
    uint32_t keylen;
    char key[];
} db_entry;

typedef struct db {
    int id;
    hashtable *keys;
    hashtable *expires;
    hashtable *watched; /* key -> clients watching it (see multi.c) */
    long long avg_ttl;  /* estimate, from the active expire cycle */
    size_t expire_cursor;
} db;

#define DB_SET_KEEPTTL (1 << 0)

void db_setup(void);
void db_teardown(void);
db *db_get(int id);

/* Lookup applying lazy expiry; updates the access clock unless `notouch`.
 * Counts hits and misses when `stats` is set. */
db_entry *db_lookup(db *d, const char *key, size_t len, int stats);
/* Lookup without touching clocks or counting (for TYPE, TTL, scans). */
db_entry *db_lookup_quiet(db *d, const char *key, size_t len);

/* Sets key to val (takes the caller's reference). Keeps the TTL with
 * DB_SET_KEEPTTL, otherwise clears it. Returns the entry. */
db_entry *db_set(db *d, const char *key, size_t len, kobj *val, int flags);
/* Replaces the value of an existing entry (takes the caller's reference). */
void db_replace_value(db *d, db_entry *e, kobj *val);
/* Makes e's string value writable in place with room for need bytes
 * (copying it only if it is shared or not RAW) and returns it. */
kobj *db_value_writable(db *d, db_entry *e, size_t need);
/* Adds a key that does not exist. Returns NULL if it exists. */
db_entry *db_add(db *d, const char *key, size_t len, kobj *val);
int db_delete(db *d, const char *key, size_t len);

void db_set_expire(db *d, db_entry *e, int64_t when_ms);
/* Removes e's TTL; returns 1 if it had one (and signals WATCH then). */
int db_persist(db *d, db_entry *e);
/* 1 if e is logically expired now. */
int db_is_expired(const db_entry *e);

size_t db_size(const db *d);
size_t db_expires_count(const db *d);
/* Empties one database, returns keys removed. */
size_t db_flush(db *d);
size_t db_flush_all(void);
void db_swap(int a, int b);

/* Calls watch signalling for a modified key (WATCH/EXEC). */
void db_signal_modified(db *d, const char *key, size_t len);

/* Active expiry: runs for at most budget_us. Returns keys expired. */
size_t db_active_expire_cycle(uint64_t budget_us);

/* Rehash/shrink the tables a little (cron). */
void db_cron(void);

/* The clock used for LRU (seconds, 24 bits) and LFU access updates. */
uint32_t db_lru_clock(void);
void db_touch(db_entry *e);
/* Idle seconds since last access (LRU) for OBJECT IDLETIME. */
uint64_t db_idle_seconds(const db_entry *e);
/* LFU counter for OBJECT FREQ, decayed to now. */
unsigned db_lfu_freq(db_entry *e);

/* hashtable callbacks for tables of db_entry. */
extern const hashtable_type db_keys_type;
extern const hashtable_type db_expires_type;

#endif
