/* cmd_pubsub.c -- the pub/sub commands: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE
 * PUNSUBSCRIBE PUBLISH, the sharded SSUBSCRIBE SUNSUBSCRIBE SPUBLISH, and
 * the PUBSUB container. The tables and delivery are session/pubsub.c's. */
#include "commands/commands.h"

#include "common/common.h"
#include "ds/glob.h"
#include "session/pubsub.h"
#include "session/reply.h"

#include <stdio.h>

/* Subscribing needs a connection that reads its messages: a client whose
 * commands must answer at once (a module's or script's call) cannot. EXEC
 * runs its queue under the same flag, yet SUBSCRIBE inside MULTI works as
 * in Valkey (the transaction's queue is still held while it runs); the
 * sharded form has no such exception. */
static int pubsub_may_subscribe(client *c, const char *name, int in_exec_ok) {
    if (!(c->flags & CLIENT_DENY_BLOCKING) || (in_exec_ok && c->mcount > 0)) return 1;
    reply_errorf(c, "ERR %s isn't allowed for a DENY BLOCKING client", name);
    return 0;
}

static void subscribe_generic(client *c, pubsub_kind kind) {
    for (int i = 1; i < c->argc; i++)
        pubsub_subscribe(c, kind, c->argv[i].ptr, c->argv[i].len);
}

static void unsubscribe_generic(client *c, pubsub_kind kind) {
    if (c->argc == 1) {
        pubsub_unsubscribe_all(c, kind, 1);
        return;
    }
    for (int i = 1; i < c->argc; i++)
        pubsub_unsubscribe(c, kind, c->argv[i].ptr, c->argv[i].len);
}

static void cmd_subscribe(client *c) {
    if (pubsub_may_subscribe(c, "SUBSCRIBE", 1)) subscribe_generic(c, PUBSUB_CHANNEL);
}

static void cmd_psubscribe(client *c) {
    if (pubsub_may_subscribe(c, "PSUBSCRIBE", 1)) subscribe_generic(c, PUBSUB_PATTERN);
}

static void cmd_ssubscribe(client *c) {
    if (pubsub_may_subscribe(c, "SSUBSCRIBE", 0)) subscribe_generic(c, PUBSUB_SHARD);
}

static void cmd_unsubscribe(client *c) {
    unsubscribe_generic(c, PUBSUB_CHANNEL);
}

static void cmd_punsubscribe(client *c) {
    unsubscribe_generic(c, PUBSUB_PATTERN);
}

static void cmd_sunsubscribe(client *c) {
    unsubscribe_generic(c, PUBSUB_SHARD);
}

static void cmd_publish(client *c) {
    const karg *ch = &c->argv[1], *msg = &c->argv[2];
    reply_int(c, pubsub_publish(ch->ptr, ch->len, msg->ptr, msg->len));
}

static void cmd_spublish(client *c) {
    const karg *ch = &c->argv[1], *msg = &c->argv[2];
    reply_int(c, pubsub_publish_shard(ch->ptr, ch->len, msg->ptr, msg->len));
}

/* ---- PUBSUB ---- */

typedef struct channel_list {
    client *c;
    const karg *pattern; /* NULL: every name */
    long long n;
} channel_list;

static void channel_list_add(const char *name, size_t len, void *priv) {
    channel_list *l = priv;
    if (l->pattern && !glob_match(l->pattern->ptr, l->pattern->len, name, len, 0)) return;
    reply_bulk(l->c, name, len);
    l->n++;
}

/* PUBSUB CHANNELS / SHARDCHANNELS [pattern] */
static void pubsub_list(client *c, pubsub_kind kind) {
    if (c->argc > 3) {
        reply_errorf(
            c, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try PUBSUB HELP.",
            (int)c->argv[1].len, c->argv[1].ptr);
        return;
    }
    channel_list l = {c, c->argc == 3 ? &c->argv[2] : NULL, 0};
    reply_deferred h = reply_deferred_array(c);
    pubsub_foreach(kind, channel_list_add, &l);
    reply_set_deferred_len(c, h, l.n);
}

/* PUBSUB NUMSUB / SHARDNUMSUB [name ...]: name, count pairs as a flat
 * array, as Valkey answers in both protocols. */
static void pubsub_numsub_generic(client *c, pubsub_kind kind) {
    reply_array(c, (long long)(c->argc - 2) * 2);
    for (int i = 2; i < c->argc; i++) {
        reply_bulk(c, c->argv[i].ptr, c->argv[i].len);
        reply_int(c, pubsub_subscribers(kind, c->argv[i].ptr, c->argv[i].len));
    }
}

static void pubsub_channels(client *c) {
    pubsub_list(c, PUBSUB_CHANNEL);
}

static void pubsub_shardchannels(client *c) {
    pubsub_list(c, PUBSUB_SHARD);
}

static void pubsub_numsub(client *c) {
    pubsub_numsub_generic(c, PUBSUB_CHANNEL);
}

static void pubsub_shardnumsub(client *c) {
    pubsub_numsub_generic(c, PUBSUB_SHARD);
}

static void pubsub_numpat(client *c) {
    reply_int(c, pubsub_count(PUBSUB_PATTERN));
}

static void pubsub_help(client *c) {
    static const char *const lines[] = {
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        /* One line; parenthesised for clang's -Wstring-concatenation. */
        ("    Return the currently active shard level channels matching a <pattern> (default: "
         "'*')."),
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
    };
    reply_help(c, "PUBSUB", lines, K_ARRAY_LEN(lines));
}

#define PS_CMD(n, p, a, f, s, v)                                                                   \
    { .name = n, .proc = p, .arity = a, .flags = f, .group = "pubsub", .summary = s, .since = v }
#define PS_SUB(n, p, a, f, s)                                                                      \
    { .name = n, .proc = p, .arity = a, .flags = f, .summary = s }
/* The flags of the subscribe family. */
#define PS_SUBFLAGS (CMD_PUBSUB | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_PUBSUB_CONTEXT)
#define PS_INTROSPECT (CMD_PUBSUB | CMD_LOADING | CMD_STALE)

static command pubsub_subcommands[] = {
    PS_SUB("channels", pubsub_channels, -2, PS_INTROSPECT, "Returns the active channels."),
    PS_SUB("numpat", pubsub_numpat, 2, PS_INTROSPECT,
           "Returns a count of unique pattern subscriptions."),
    PS_SUB("numsub", pubsub_numsub, -2, PS_INTROSPECT,
           "Returns a count of subscribers to channels."),
    PS_SUB("shardchannels", pubsub_shardchannels, -2, PS_INTROSPECT,
           "Returns the active shard channels."),
    PS_SUB("shardnumsub", pubsub_shardnumsub, -2, PS_INTROSPECT,
           "Returns the count of subscribers of shard channels."),
    PS_SUB("help", pubsub_help, 2, CMD_LOADING | CMD_STALE,
           "Returns helpful text about the different subcommands."),
    {.name = NULL},
};

static command pubsub_table[] = {
    PS_CMD("subscribe", cmd_subscribe, -2, PS_SUBFLAGS,
           "Listens for messages published to channels.", "2.0.0"),
    PS_CMD("unsubscribe", cmd_unsubscribe, -1, PS_SUBFLAGS,
           "Stops listening to messages posted to channels.", "2.0.0"),
    PS_CMD("psubscribe", cmd_psubscribe, -2, PS_SUBFLAGS,
           "Listens for messages published to channels that match one or more patterns.", "2.0.0"),
    PS_CMD("punsubscribe", cmd_punsubscribe, -1, PS_SUBFLAGS,
           "Stops listening to messages published to channels that match one or more patterns.",
           "2.0.0"),
    PS_CMD("publish", cmd_publish, 3,
           CMD_PUBSUB | CMD_LOADING | CMD_STALE | CMD_FAST | CMD_MAY_REPLICATE,
           "Posts a message to a channel.", "2.0.0"),
    PS_CMD("ssubscribe", cmd_ssubscribe, -2, PS_SUBFLAGS,
           "Listens for messages published to shard channels.", "7.0.0"),
    PS_CMD("sunsubscribe", cmd_sunsubscribe, -1, PS_SUBFLAGS,
           "Stops listening to messages posted to shard channels.", "7.0.0"),
    PS_CMD("spublish", cmd_spublish, 3,
           CMD_PUBSUB | CMD_LOADING | CMD_STALE | CMD_FAST | CMD_MAY_REPLICATE,
           "Post a message to a shard channel", "7.0.0"),
    {.name = "pubsub",
     .arity = -2,
     .group = "pubsub",
     .since = "2.8.0",
     .summary = "A container for Pub/Sub commands.",
     .subcommands = pubsub_subcommands},
};

const command_family commands_pubsub = {pubsub_table, K_ARRAY_LEN(pubsub_table)};
