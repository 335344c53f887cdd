/* command.c -- the command table: registration, lookup, renaming, key
 * positions and per-command statistics. The table knows no command family:
 * commands_setup() (commands/) registers the built-in ones, modules theirs. */
#include "session/command.h"

#include "common/common.h"
#include "common/kmem.h"
#include "ds/hashtable.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define COMMAND_NAME_MAX 64

static hashtable *commands;
/* Copies made by command_rename, freed at teardown. */
static command **renamed;
static size_t renamed_count;

static const void *command_key(const void *entry, size_t *len) {
    const command *cmd = entry;
    *len = strlen(cmd->name);
    return cmd->name;
}

static const hashtable_type command_type = {.entry_key = command_key};

void command_setup(void) {
    commands = hashtable_create(&command_type);
}

static void command_release_names(command *cmd, void *priv) {
    for (command *sub = cmd->subcommands; sub && sub->name; sub++) {
        km_free(sub->fullname);
        sub->fullname = NULL;
    }
}

void command_teardown(void) {
    command_foreach(command_release_names, NULL);
    hashtable_release(commands);
    commands = NULL;
    for (size_t i = 0; i < renamed_count; i++) {
        km_free((char *)renamed[i]->name);
        km_free(renamed[i]);
    }
    km_free(renamed);
    renamed = NULL;
    renamed_count = 0;
}

command *command_lookup(const char *name, size_t len) {
    char lower[COMMAND_NAME_MAX];
    if (len >= sizeof(lower)) return NULL;
    for (size_t i = 0; i < len; i++) lower[i] = (char)tolower((unsigned char)name[i]);
    return hashtable_find(commands, lower, len);
}

command *command_lookup_sub(const command *cmd, const char *name, size_t len) {
    for (command *sub = cmd->subcommands; sub && sub->name; sub++)
        if (strlen(sub->name) == len && strncasecmp(sub->name, name, len) == 0) return sub;
    return NULL;
}

/* "config|get" */
static char *command_join_name(const char *parent, const char *sub) {
    size_t a = strlen(parent), b = strlen(sub);
    char *s = km_alloc(a + b + 2);
    memcpy(s, parent, a);
    s[a] = '|';
    memcpy(s + a + 1, sub, b + 1);
    return s;
}

/* Adds cmd under its name; fullname is what stats and errors show. */
static int command_link(command *cmd, const char *fullname) {
    if (!hashtable_add(commands, cmd, NULL)) return K_ERR;
    cmd->fullname = (char *)fullname;
    for (command *sub = cmd->subcommands; sub && sub->name; sub++) {
        sub->parent = cmd;
        sub->fullname = command_join_name(fullname, sub->name);
    }
    return K_OK;
}

int command_register(command *cmd) {
    return command_link(cmd, cmd->name);
}

/* The table is keyed by the entry's own name, so a renamed command is a
 * copy under the new name. As in Valkey, it keeps its original name where
 * the server names it (INFO commandstats, COMMAND INFO, errors). */
int command_rename(const char *from, const char *to, const char **err) {
    command *cmd = command_lookup(from, strlen(from));
    size_t len = strlen(to);
    if (!cmd) {
        *err = "No such command in rename-command";
        return K_ERR;
    }
    if (len && command_lookup(to, len)) {
        *err = "Target command name already exists";
        return K_ERR;
    }
    if (len >= COMMAND_NAME_MAX) {
        *err = "Target command name is too long";
        return K_ERR;
    }
    const char *fullname = cmd->fullname;
    command_unregister(cmd->name);
    if (!len) return K_OK;
    command *copy = km_alloc(sizeof(*copy));
    *copy = *cmd;
    char *name = km_strdup(to);
    for (char *p = name; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    copy->name = name;
    renamed = km_realloc(renamed, sizeof(*renamed) * (renamed_count + 1));
    renamed[renamed_count++] = copy;
    return command_link(copy, fullname);
}

int command_unregister(const char *name) {
    void *popped;
    if (!hashtable_delete(commands, name, strlen(name), &popped)) return K_ERR;
    command_release_names(popped, NULL);
    return K_OK;
}

size_t command_count(void) {
    return hashtable_size(commands);
}

void command_foreach(void (*fn)(command *cmd, void *priv), void *priv) {
    hashtable_iter it;
    void *entry;
    hashtable_iter_init(&it, commands, 0);
    while (hashtable_iter_next(&it, &entry)) fn(entry, priv);
    hashtable_iter_reset(&it);
}

typedef struct foreach_all_ctx {
    void (*fn)(command *cmd, void *priv);
    void *priv;
} foreach_all_ctx;

static void command_visit_all(command *cmd, void *priv) {
    foreach_all_ctx *ctx = priv;
    ctx->fn(cmd, ctx->priv);
    for (command *sub = cmd->subcommands; sub && sub->name; sub++) ctx->fn(sub, ctx->priv);
}

void command_foreach_all(void (*fn)(command *cmd, void *priv), void *priv) {
    foreach_all_ctx ctx = {fn, priv};
    command_foreach(command_visit_all, &ctx);
}

int command_get_keys(const command *cmd, int argc, int *keys, int maxkeys) {
    if (cmd->first_key <= 0) return 0;
    int last = cmd->last_key < 0 ? argc + cmd->last_key : cmd->last_key;
    int step = cmd->key_step > 0 ? cmd->key_step : 1;
    int n = 0;
    for (int i = cmd->first_key; i <= last && i < argc && n < maxkeys; i += step) keys[n++] = i;
    return n;
}

static const struct {
    uint32_t flag;
    const char *name;
} command_flag_table[] = {
    {CMD_WRITE, "write"},       {CMD_READONLY, "readonly"},     {CMD_DENYOOM, "denyoom"},
    {CMD_MODULE, "module"},     {CMD_ADMIN, "admin"},           {CMD_PUBSUB, "pubsub"},
    {CMD_NOSCRIPT, "noscript"}, {CMD_BLOCKING, "blocking"},     {CMD_LOADING, "loading"},
    {CMD_STALE, "stale"},       {CMD_SKIP_MONITOR, "skip_monitor"}, {CMD_SKIP_SLOWLOG, "skip_slowlog"},
    {CMD_FAST, "fast"},         {CMD_NO_AUTH, "no_auth"},       {CMD_MAY_REPLICATE, "may_replicate"},
    {CMD_NO_MULTI, "no_multi"}, {CMD_ALLOW_BUSY, "allow_busy"},
};

int command_flag_names(const command *cmd, const char **out, int max) {
    int n = 0;
    for (size_t i = 0; i < K_ARRAY_LEN(command_flag_table) && n < max; i++)
        if (cmd->flags & command_flag_table[i].flag) out[n++] = command_flag_table[i].name;
    return n;
}

static void command_reset_one(command *cmd, void *priv) {
    cmd->calls = cmd->usec = cmd->rejected_calls = cmd->failed_calls = 0;
}

void command_reset_stats(void) {
    command_foreach_all(command_reset_one, NULL);
}
