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
 * Every modification announces itself once per key it touches (watchers of
 * the key are signalled) and counts the changes Valkey counts in
 * server.dirty: one per key set, deleted or given or stripped of a TTL,
 * one for a compound change (SET with a TTL, RENAME, MOVE, COPY, SWAPDB),
 * one per key a flush removes, none for keys that expire or are evicted.
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
/* Whether the lookups that follow (db_lookup, db_value_writable) update
 * the access clock: off while a CLIENT NO-TOUCH client's command runs. A
 * value that is replaced still gets a fresh clock, as in Valkey. Returns
 * the previous setting. */
int db_set_access_touch(int on);

/* Sets key to val (takes the caller's reference). Keeps the TTL with
 * DB_SET_KEEPTTL, otherwise clears it. Returns the entry. */
db_entry *db_set(db *d, const char *key, size_t len, kobj *val, int flags);
/* db_set with the TTL when_ms (absolute unix ms, -1: none) in the same
 * change. */
db_entry *db_set_with_expire(db *d, const char *key, size_t len, kobj *val, int64_t when_ms);
/* Stores val under key as a fresh entry (new access clock) with the TTL
 * when_ms (-1: none), replacing the key if it exists: one change (COPY). */
db_entry *db_put(db *d, const char *key, size_t len, kobj *val, int64_t when_ms);
/* Moves e's value, TTL and access clock to key in `to` (which may be
 * `from`), replacing the key there if it exists: one change (RENAME,
 * MOVE). e is freed; returns the new entry. */
db_entry *db_move(db *from, db_entry *e, db *to, const char *key, size_t len);
/* Replaces the value of an existing entry (takes the caller's reference). */
void db_replace_value(db *d, db_entry *e, kobj *val);
/* Makes e's string value writable in place with room for need bytes
 * (copying it only if it is shared or not RAW) and returns it. */
kobj *db_value_writable(db *d, db_entry *e, size_t need);
/* Adds a key that does not exist. Returns NULL if it exists. */
db_entry *db_add(db *d, const char *key, size_t len, kobj *val);
int db_delete(db *d, const char *key, size_t len);
/* db_delete for the evictor: watchers are signalled, no change counted. */
int db_evict(db *d, const char *key, size_t len);

void db_set_expire(db *d, db_entry *e, int64_t when_ms);
/* Removes e's TTL; returns 1 if it had one (and signals WATCH then). */
int db_persist(db *d, db_entry *e);
/* 1 if e is logically expired now. */
int db_is_expired(const db_entry *e);

size_t db_size(const db *d);
size_t db_expires_count(const db *d);
/* Empties one database, returns keys removed (each counts a change). */
size_t db_flush(db *d);
size_t db_flush_all(void);
void db_swap(int a, int b);

/* Announces one change to key made in place by the caller (WATCH/EXEC
 * signal, change count). */
void db_signal_modified(db *d, const char *key, size_t len);
/* Changes to keys since start-up (INFO rdb_changes_since_last_save: Keel
 * never saves). */
long long db_changes(void);

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
