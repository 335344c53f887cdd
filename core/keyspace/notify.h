/* notify.h -- keyspace notifications: the emitter every layer from the
 * keyspace up calls when a key changes, and the class letters of the
 * notify-keyspace-events directive.
 *
 * An event is published twice at most, as Valkey does: on
 * `__keyspace@<db>__:<key>` with the event name as the message (class K)
 * and on `__keyevent@<db>__:<event>` with the key as the message (class E),
 * and only when the directive enables the event's class. The keyspace knows
 * no client, so publishing goes through a sink the server wires at setup
 * (pub/sub's publish); without a sink, or with the classes off, an event
 * costs one flag test.
 *
 * Who emits what: the commands emit their own events (one call per event,
 * next to the change); the keyspace emits `new` when a key is created
 * (db.c), and this unit emits `expired` and `evicted` from the keyspace's
 * change hook when a key actually goes; the hash type emits `hexpired`
 * when fields expire.
 *
 * A second sink, the observer, gets every event of the classes it asks
 * for whatever the directive says, before pub/sub does (the module
 * system's keyspace-event subscriptions: the server wires it, so the
 * keyspace still knows no module).
 *
 * Threads: main thread only. */
#ifndef KEEL_NOTIFY_H
#define KEEL_NOTIFY_H

#include <stddef.h>

/* Valkey's class bits (its values, so CONFIG and modules agree). */
#define NOTIFY_KEYSPACE (1 << 0)  /* K */
#define NOTIFY_KEYEVENT (1 << 1)  /* E */
#define NOTIFY_GENERIC (1 << 2)   /* g */
#define NOTIFY_STRING (1 << 3)    /* $ */
#define NOTIFY_LIST (1 << 4)      /* l */
#define NOTIFY_SET (1 << 5)       /* s */
#define NOTIFY_HASH (1 << 6)      /* h */
#define NOTIFY_ZSET (1 << 7)      /* z */
#define NOTIFY_EXPIRED (1 << 8)   /* x */
#define NOTIFY_EVICTED (1 << 9)   /* e */
#define NOTIFY_STREAM (1 << 10)   /* t */
#define NOTIFY_KEY_MISS (1 << 11) /* m: not part of A, as in Valkey */
#define NOTIFY_MODULE (1 << 13)   /* d */
#define NOTIFY_NEW (1 << 14)      /* n: not part of A either */
/* A: "g$lshzxetd". */
#define NOTIFY_ALL                                                                                 \
    (NOTIFY_GENERIC | NOTIFY_STRING | NOTIFY_LIST | NOTIFY_SET | NOTIFY_HASH | NOTIFY_ZSET |       \
     NOTIFY_EXPIRED | NOTIFY_EVICTED | NOTIFY_STREAM | NOTIFY_MODULE)

/* The longest string notify_format_classes writes, with its NUL. */
#define NOTIFY_CLASSES_MAX 16

/* Where events go: publish `msg` on `channel` (pub/sub's publish). */
typedef long long (*notify_sink_fn)(const char *channel, size_t chlen, const char *msg,
                                    size_t msglen);

/* Borrows *classes (the directive's value, read on every event so CONFIG
 * SET takes effect at once) until notify_teardown. Call after db_setup: it
 * adds the keyspace hook that emits `expired` and `evicted`. */
void notify_setup(const int *classes, notify_sink_fn sink);
void notify_teardown(void);

/* The observer: fn(classes, event, key, keylen, dbid, priv) for events
 * of one of *observed's classes (read on every event; 0: none). Replaces
 * any earlier one; NULL removes it. */
typedef void (*notify_observer_fn)(int classes, const char *event, const char *key, size_t keylen,
                                   int dbid, void *priv);
void notify_set_observer(const int *observed, notify_observer_fn fn, void *priv);

/* Tells the observer about `event`, then publishes it for the key
 * key[0..keylen) of database dbid if one of `classes` is enabled. `event`
 * is a NUL-terminated name ("set", "del"). */
void notify_keyspace_event(int classes, const char *event, const char *key, size_t keylen,
                           int dbid);

/* The directive's letters to bits: -1 for a character that is no class. */
int notify_parse_classes(const char *s);
/* The bits to Valkey's canonical string (A for the whole of NOTIFY_ALL,
 * then K, E and m) in buf, which holds NOTIFY_CLASSES_MAX bytes. Returns
 * its length. */
size_t notify_format_classes(int classes, char *buf);

#endif
