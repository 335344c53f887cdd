/* pubsub.h -- publish/subscribe: the channel, pattern and shard-channel
 * tables, each client's subscriptions, and delivery of messages.
 *
 * Three kinds of subscription share one mechanism: channels (SUBSCRIBE),
 * patterns (PSUBSCRIBE, matched with the glob rules of ds/glob.h against
 * every published channel) and shard channels (SSUBSCRIBE; standalone is
 * one shard, and the shard table is kept apart from the channel table so a
 * cluster mode can route it by slot later). A client's subscriptions live
 * in one pubsub_state allocated on its first subscription; the client
 * carries the CLIENT_PUBSUB flag while it has any.
 *
 * A message is framed once per protocol version it is sent in (built
 * lazily, RESP2 array or RESP3 push) and the same immutable frame goes to
 * every subscriber (reply_frame). A message to the client whose command is
 * running waits until that command's reply is complete, so PUBLISH to
 * oneself inside MULTI answers EXEC first, as Valkey does.
 *
 * Threads: main thread. */
#ifndef KEEL_PUBSUB_H
#define KEEL_PUBSUB_H

#include <stddef.h>

#include "common/metrics.h"
#include "session/client.h"

/* Gauges for INFO (RESETSTAT leaves them): pubsub_clients in Clients, the
 * table sizes in Stats. */
#define PUBSUB_METRICS(X, T)                                                                       \
    X(T, pubsub_clients)                                                                           \
    X(T, pubsub_channels)                                                                          \
    X(T, pubsub_patterns)                                                                          \
    X(T, pubsubshard_channels)
METRICS_STRUCT(pubsub_metrics, PUBSUB_METRICS);
extern const metric_desc pubsub_metric_descs[];
extern const size_t pubsub_metric_descs_count;

typedef enum pubsub_kind { PUBSUB_CHANNEL, PUBSUB_PATTERN, PUBSUB_SHARD, PUBSUB_KINDS } pubsub_kind;

/* Borrows metrics until pubsub_teardown (after every client is freed). */
void pubsub_setup(pubsub_metrics *metrics);
void pubsub_teardown(void);

/* Delivers msg to the subscribers of channel and of every matching
 * pattern; returns the number of receivers (a client subscribed to the
 * channel and to a matching pattern counts, and receives, twice). */
long long pubsub_publish(const char *channel, size_t chlen, const char *msg, size_t msglen);
/* Delivers msg to the subscribers of the shard channel (patterns do not
 * apply); returns the receivers. */
long long pubsub_publish_shard(const char *channel, size_t chlen, const char *msg, size_t msglen);

/* Nonzero when c has any subscription. */
int pubsub_subscribed(const client *c);
/* c's subscriptions of one kind (CLIENT LIST sub=, psub=, ssub=). */
long long pubsub_client_count(const client *c, pubsub_kind kind);

/* Subscribes c and answers the confirmation ([p|s]subscribe, name, count). */
void pubsub_subscribe(client *c, pubsub_kind kind, const char *name, size_t len);
/* Unsubscribes c from one name and answers the confirmation (also when c
 * was not subscribed to it). */
void pubsub_unsubscribe(client *c, pubsub_kind kind, const char *name, size_t len);
/* Unsubscribes c from every name of the kind; with notify, answers one
 * confirmation per name, or one with a null name when there was none. */
void pubsub_unsubscribe_all(client *c, pubsub_kind kind, int notify);
/* Drops every subscription without replies and frees c's state (RESET,
 * client free). */
void pubsub_client_release(client *c);
/* Sends c the messages to itself held back while its command ran. */
void pubsub_flush_pending(client *c);

/* Names in the server's table of a kind (PUBSUB NUMPAT is the patterns'). */
long long pubsub_count(pubsub_kind kind);
/* Subscribers of one name (PUBSUB NUMSUB, SHARDNUMSUB). */
long long pubsub_subscribers(pubsub_kind kind, const char *name, size_t len);
/* Calls fn for every name in the server's table of a kind. */
void pubsub_foreach(pubsub_kind kind, void (*fn)(const char *name, size_t len, void *priv),
                    void *priv);

#endif
