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

#include "keyspace/notify.h"
#include "session/command.h"
#include "session/client.h"

typedef struct command_family {
    command *table;
    size_t count;
} command_family;

extern const command_family commands_string;
extern const command_family commands_keys;
extern const command_family commands_server;
extern const command_family commands_multi;
extern const command_family commands_config;
extern const command_family commands_command;
extern const command_family commands_debug;
extern const command_family commands_memory;
extern const command_family commands_hash;
extern const command_family commands_list;
extern const command_family commands_set;
extern const command_family commands_zset;
extern const command_family commands_geo;
extern const command_family commands_sort;
extern const command_family commands_pubsub;
extern const command_family commands_ops;
extern const command_family commands_bitops;
extern const command_family commands_stream;
extern const command_family commands_stream_group;
extern const command_family commands_hll;

/* The entry of command_docs.c for fullname ("client|list"), or NULL. */
const command_docs *command_docs_lookup(const char *fullname);
/* Registers a built-in command (from any layer at or above this one: the
 * families, INFO, MODULE) with its metadata and its subcommands'. Returns
 * K_ERR if the name is taken. */
int commands_register(command *cmd);

/* What the commands need from the server that composes them, handed in at
 * setup so no command reaches up into the server: its settings (read live)
 * and its few actions. Borrowed until commands_teardown. */
typedef struct commands_env {
    const int *enable_debug_cmd;  /* 0 no, 1 yes, 2 local connections only */
    const int *enable_module_cmd; /* the same for MODULE */
    const int *enable_protected_configs; /* the same for CONFIG SET of dir, dbfilename */
    int *active_expire_enabled;   /* DEBUG SET-ACTIVE-EXPIRE */
    int *cron_paused;             /* DEBUG PAUSE-CRON */
    int *disable_deny_scripts;    /* DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call no-script
                                     commands */
    const long long *lastsave;    /* LASTSAVE: unix seconds */
    char *const *configfile;      /* CONFIG REWRITE; NULL: started without a file */
    void (*shutdown)(void);       /* SHUTDOWN: stop after this event-loop iteration */
    void (*reset_stats)(void);    /* CONFIG RESETSTAT */
} commands_env;

/* Registers the built-in families (after command_setup and db_setup) and
 * the transaction code's hooks; teardown removes the hooks. */
void commands_setup(const commands_env *env);
void commands_teardown(void);
const commands_env *commands_env_get(void);

/* For commands an operator must enable (DEBUG, MODULE): setting is 0 (no),
 * 1 (yes) or 2 (local connections only). Replies Valkey's refusal and
 * returns 0 when not allowed. */
int protected_command_allowed(client *c, int setting, const char *name);

/* Parses an integer argument, replying with the standard error if invalid. */
int arg_to_ll(client *c, const karg *a, long long *out);
/* An integer argument in [min, max], as Valkey's
 * getRangeLongFromObjectOrReply: msg (when not NULL) replaces every error;
 * otherwise "not an integer" or "out of range, value must between min and
 * max". Returns 1, or 0 after replying. */
int arg_to_range(client *c, const karg *a, long long min, long long max, const char *msg,
                 long long *out);
/* Parses a SCAN/HSCAN/SSCAN/ZSCAN cursor as Valkey does: 1, or 0 after
 * replying "ERR invalid cursor". */
int arg_to_scan_cursor(client *c, const karg *a, unsigned long long *out);
/* The optional tail [COUNT n] of LMPOP/ZMPOP and their blocking forms,
 * from argument `from` on: *count is n (1 without it). Returns 1, or 0
 * after replying Valkey's error. */
int arg_mpop_count(client *c, int from, long long *count);

/* The options of the SCAN family, parsed by scan_args_parse. */
typedef struct scan_args {
    long long count;  /* COUNT (default 10) */
    const karg *pat;  /* MATCH; NULL for none or a lone "*" */
    const karg *type; /* TYPE (SCAN only); NULL if absent */
    int novalues;     /* HSCAN NOVALUES */
    int noscores;     /* ZSCAN NOSCORES */
} scan_args;

/* Which options a command takes beyond MATCH and COUNT. */
#define SCAN_ARGS_TYPE (1u << 0)
#define SCAN_ARGS_NOVALUES (1u << 1)
#define SCAN_ARGS_NOSCORES (1u << 2)

/* Parses c->argv[first..] as the SCAN family's options, in Valkey's order
 * and with its errors: a TYPE where it is not `allowed` is a syntax error,
 * NOVALUES and NOSCORES answer that they belong to HSCAN and ZSCAN.
 * Returns 1, or 0 after replying the error. (The H/S/Z commands parse
 * their options only once the key exists, as Valkey does.) */
int scan_args_parse(client *c, int first, unsigned allowed, scan_args *out);

/* After a collection command changed key's value in place by `changes`
 * elements (Valkey's count for server.dirty): publishes `event` in the
 * keyspace-notification `classes`, then announces the change, deleting the
 * key when `empty` (Valkey keeps no empty collection; the deletion is
 * counted within `changes` and published as `del` after the event). */
void collection_changed(client *c, const karg *key, int empty, long long changes, int classes,
                        const char *event);

/* A keyspace notification for key in the client's database: the command
 * families' one call per event (keyspace/notify.h). */
static inline void notify_key(client *c, int classes, const char *event, const karg *key) {
    notify_keyspace_event(classes, event, key->ptr, key->len, c->db->id);
}

#endif
