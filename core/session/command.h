/* command.h -- the command table.
 *
 * Every command, built-in or registered by a module, is one entry: name,
 * arity (negative = at least that many), flags, and key positions (first,
 * last, step, with last < 0 counting from the end). COMMAND INFO, the key
 * extraction for WATCH, cluster slot checks and ACLs all read this table, so
 * a module command is indistinguishable from a built-in one.
 *
 * Threads: the table is read and modified on the main thread only. */
#ifndef KEEL_COMMAND_H
#define KEEL_COMMAND_H

#include <stddef.h>
#include <stdint.h>

typedef struct client client;
typedef void (*command_proc)(client *c);

/* Flags, named as in Valkey's COMMAND INFO output. */
#define CMD_WRITE (1u << 0)
#define CMD_READONLY (1u << 1)
#define CMD_DENYOOM (1u << 2)
#define CMD_ADMIN (1u << 3)
#define CMD_PUBSUB (1u << 4)
#define CMD_NOSCRIPT (1u << 5)
#define CMD_BLOCKING (1u << 6)
#define CMD_LOADING (1u << 7)
#define CMD_STALE (1u << 8)
#define CMD_SKIP_MONITOR (1u << 9)
#define CMD_SKIP_SLOWLOG (1u << 10)
#define CMD_FAST (1u << 11)
#define CMD_NO_AUTH (1u << 12)
#define CMD_MAY_REPLICATE (1u << 13)
#define CMD_NO_MULTI (1u << 14)
#define CMD_ALLOW_BUSY (1u << 15)
/* Registered by a module (COMMAND INFO shows the "module" flag). */
#define CMD_MODULE (1u << 16)
/* Internal (COMMAND INFO shows neither): the dispatcher's view of the
 * transaction commands, so it never compares procedures. A TXN_CONTROL
 * command runs at once inside MULTI instead of being queued (MULTI EXEC
 * DISCARD WATCH QUIT RESET); TXN_EXEC runs the queue, so its memory check
 * looks at the queued commands. */
#define CMD_TXN_CONTROL (1u << 17)
#define CMD_TXN_EXEC (1u << 18)

typedef struct command {
    const char *name;
    command_proc proc;
    int arity;
    uint32_t flags;
    int first_key;
    int last_key;
    int key_step;
    const char *group;   /* "string", "generic", "server", ... */
    const char *summary; /* for COMMAND DOCS */
    const char *since;
    void *module; /* owning module, NULL for built-ins */
    /* A container command (CONFIG, CLIENT, ...) lists its subcommands here,
     * an array ended by an entry with a NULL name. Each is a full command:
     * arity counts the container's name, stats and errors use "config|get".
     * A container runs its own proc only when called without arguments
     * (COMMAND); otherwise argv[1] picks the subcommand. */
    struct command *subcommands;
    struct command *parent;
    /* Stats for INFO commandstats. */
    long long calls;
    long long usec;
    long long rejected_calls;
    long long failed_calls;
    char *fullname; /* "get" or "config|get": as INFO and errors show it */
} command;

void command_setup(void);
void command_teardown(void);

/* Looks a name up case-insensitively. */
command *command_lookup(const char *name, size_t len);
/* The subcommand of container cmd named by arg, or NULL. */
command *command_lookup_sub(const command *cmd, const char *name, size_t len);
/* Adds a command (module commands). Returns -1 if the name is taken. */
int command_register(command *cmd);
int command_unregister(const char *name);
/* rename-command: the command called from is called to from now on; an
 * empty to removes it. Returns K_OK, or K_ERR with *err (Valkey's
 * messages). Top-level commands only; at start-up, before modules load. */
int command_rename(const char *from, const char *to, const char **err);

size_t command_count(void);
/* Calls fn for every top-level command. */
void command_foreach(void (*fn)(command *cmd, void *priv), void *priv);
/* Same, then for each of its subcommands (INFO commandstats). */
void command_foreach_all(void (*fn)(command *cmd, void *priv), void *priv);

/* Key positions of a call: fills keys with argument indexes; returns count. */
int command_get_keys(const command *cmd, int argc, int *keys, int maxkeys);

/* Flag names of cmd, for COMMAND INFO; returns the count written. */
int command_flag_names(const command *cmd, const char **out, int max);

void command_reset_stats(void);

#endif
