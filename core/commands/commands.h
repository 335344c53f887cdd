/* commands.h -- the built-in command families. Each family file defines its
 * procedures and one table of its commands; command.c registers the tables.
 *
 * Conventions for command procedures (all run on the main thread):
 * - c->argv[i] are slices (ptr, len), NOT NUL-terminated; compare with
 *   karg_eq(), parse numbers with str_to_ll()/str_to_ld().
 * - Reply exactly once per call through reply.h; errors follow Valkey's
 *   wording ("ERR ...", "WRONGTYPE ...").
 * - Read keys with db_lookup(c->db, ..., 1) (counts hits/misses, applies
 *   lazy expiry); write with db_set/db_add/db_delete, which signal WATCH. */
#ifndef KEEL_COMMANDS_H
#define KEEL_COMMANDS_H

#include "commands/command.h"
#include "session/client.h"

typedef struct command_family {
    command *table;
    size_t count;
} command_family;

extern const command_family commands_string;
extern const command_family commands_keys;
extern const command_family commands_server;
extern const command_family commands_multi;
extern const command_family commands_module;
extern const command_family commands_command;

/* Procedures other files refer to (dispatch treats these specially). */
void cmd_multi(client *c);
void cmd_exec(client *c);
void cmd_discard(client *c);
void cmd_watch(client *c);
void cmd_quit(client *c);
void cmd_reset(client *c);

/* For commands an operator must enable (DEBUG, MODULE): setting is 0 (no),
 * 1 (yes) or 2 (local connections only). Replies Valkey's refusal and
 * returns 0 when not allowed. */
int protected_command_allowed(client *c, int setting, const char *name);

/* Parses an integer argument, replying with the standard error if invalid. */
int arg_to_ll(client *c, const karg *a, long long *out);

#endif
