/* commands.c -- puts the built-in command families into the command table
 * and connects the transaction code to the seams it uses (see multi.c). */
#include "commands/commands.h"

#include "commands/multi.h"
#include "common/common.h"
#include "keyspace/db.h"
#include "session/reply.h"

#include <string.h>

static const command_family *const builtin_families[] = {
    &commands_string,  &commands_keys,         &commands_server, &commands_multi,  &commands_config,
    &commands_command, &commands_debug,        &commands_memory, &commands_hash,   &commands_list,
    &commands_set,     &commands_zset,         &commands_sort,   &commands_pubsub, &commands_ops,
    &commands_stream,  &commands_stream_group, &commands_bitops, &commands_geo,    &commands_hll,
};

int commands_register(command *cmd) {
    if (command_register(cmd) != K_OK) return K_ERR;
    command_set_docs(cmd, command_docs_lookup(cmd->fullname));
    for (command *sub = cmd->subcommands; sub && sub->name; sub++)
        command_set_docs(sub, command_docs_lookup(sub->fullname));
    return K_OK;
}

static const commands_env *env;

const commands_env *commands_env_get(void) {
    return env;
}

void commands_setup(const commands_env *e) {
    env = e;
    for (size_t f = 0; f < K_ARRAY_LEN(builtin_families); f++) {
        const command_family *fam = builtin_families[f];
        for (size_t i = 0; i < fam->count; i++)
            commands_register(&fam->table[i]);
    }
    multi_setup();
}

void commands_teardown(void) {
    multi_teardown();
    env = NULL;
}

int protected_command_allowed(client *c, int setting, const char *name) {
    if (setting == 1) return 1;
    if (setting == 2 && c->conn && conn_is_loopback(c->conn)) return 1;
    reply_errorf(c,
                 "ERR %s command not allowed. If the enable-%s-command option is set to \"local\", "
                 "you can run "
                 "it from a local connection, otherwise you need to set this option in the "
                 "configuration file, "
                 "and then restart the server.",
                 name, !strcmp(name, "DEBUG") ? "debug" : "module");
    return 0;
}

void collection_changed(client *c, const karg *key, int empty, long long changes, int classes,
                        const char *event) {
    notify_key(c, classes, event, key);
    if (!empty) {
        db_signal_modified(c->db, key->ptr, key->len, changes);
        return;
    }
    /* db_delete counts one change; the rest goes with an announcement made
     * while the key still holds what the command left of it. */
    if (changes > 1) db_signal_modified(c->db, key->ptr, key->len, changes - 1);
    db_delete(c->db, key->ptr, key->len);
    notify_key(c, NOTIFY_GENERIC, "del", key);
}
