/* command.h -- the command table.
 *
 * Every command, built-in or registered by a module, is one entry: name,
 * arity (negative = at least that many), flags, and key positions (first,
 * last, step, with last < 0 counting from the end). COMMAND INFO, the key
 * extraction for WATCH, cluster slot checks and ACLs all read this table, so
 * a module command is indistinguishable from a built-in one.
 *
 * Built-ins also point at their metadata in Valkey's model (command_docs.c,
 * attached at registration): key specs, which key extraction reads, and the
 * argument tree, ACL categories and documentation COMMAND reports.
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
/* Valkey flags Keel only reports (command_docs.c sets them): Keel has no
 * async loading or cluster redirections, and GETKEYS reads the third. */
#define CMD_NO_ASYNC_LOADING (1u << 17)
#define CMD_ASKING (1u << 18)
#define CMD_NO_MANDATORY_KEYS (1u << 19)
/* Set at registration when the legacy (first, last, step) triple cannot
 * describe the keys, as Valkey's "movablekeys". */
#define CMD_MOVABLE_KEYS (1u << 20)

/* ---- metadata: key specs, arguments, documentation (Valkey's model) ---- */

/* ACL categories, in the order COMMAND INFO lists them. */
#define ACL_CAT_KEYSPACE (1u << 0)
#define ACL_CAT_READ (1u << 1)
#define ACL_CAT_WRITE (1u << 2)
#define ACL_CAT_SET (1u << 3)
#define ACL_CAT_SORTEDSET (1u << 4)
#define ACL_CAT_LIST (1u << 5)
#define ACL_CAT_HASH (1u << 6)
#define ACL_CAT_STRING (1u << 7)
#define ACL_CAT_BITMAP (1u << 8)
#define ACL_CAT_HYPERLOGLOG (1u << 9)
#define ACL_CAT_GEO (1u << 10)
#define ACL_CAT_STREAM (1u << 11)
#define ACL_CAT_PUBSUB (1u << 12)
#define ACL_CAT_ADMIN (1u << 13)
#define ACL_CAT_FAST (1u << 14)
#define ACL_CAT_SLOW (1u << 15)
#define ACL_CAT_BLOCKING (1u << 16)
#define ACL_CAT_DANGEROUS (1u << 17)
#define ACL_CAT_CONNECTION (1u << 18)
#define ACL_CAT_TRANSACTION (1u << 19)
#define ACL_CAT_SCRIPTING (1u << 20)

/* Key spec flags: how a command uses a key (Valkey's names). */
#define KEY_SPEC_RO (1u << 0)
#define KEY_SPEC_RW (1u << 1)
#define KEY_SPEC_OW (1u << 2)
#define KEY_SPEC_RM (1u << 3)
#define KEY_SPEC_ACCESS (1u << 4)
#define KEY_SPEC_UPDATE (1u << 5)
#define KEY_SPEC_INSERT (1u << 6)
#define KEY_SPEC_DELETE (1u << 7)
#define KEY_SPEC_NOT_KEY (1u << 8)
#define KEY_SPEC_INCOMPLETE (1u << 9)
#define KEY_SPEC_VARIABLE_FLAGS (1u << 10)

/* UNKNOWN (both): keys the specs cannot locate (SORT's BY/GET/STORE); the
 * command's get-keys function finds them. */
typedef enum { KEY_BEGIN_INDEX = 1, KEY_BEGIN_KEYWORD, KEY_BEGIN_UNKNOWN } key_begin_type;
typedef enum { KEY_FIND_RANGE = 1, KEY_FIND_KEYNUM, KEY_FIND_UNKNOWN } key_find_type;

/* Where a command's keys are: begin_search finds the first one (a fixed
 * index, or the argument after a keyword searched from startfrom, negative
 * = backwards from the end), find_keys how many follow (a range whose
 * lastkey is relative to the first, negative = from the end, limit > 1
 * = only 1/limit of the rest; or a count read at keynumidx). */
typedef struct key_spec {
    uint32_t flags;
    key_begin_type begin;
    union {
        int index;
        struct {
            const char *keyword;
            int startfrom;
        } keyword;
    } bs;
    key_find_type find;
    union {
        struct {
            int lastkey, step, limit;
        } range;
        struct {
            int keynumidx, firstkey, step;
        } keynum;
    } fk;
} key_spec;

typedef enum {
    ARG_STRING,
    ARG_INTEGER,
    ARG_DOUBLE,
    ARG_KEY,
    ARG_PATTERN,
    ARG_UNIX_TIME,
    ARG_PURE_TOKEN,
    ARG_ONEOF,
    ARG_BLOCK,
} command_arg_type;

#define ARG_OPTIONAL (1u << 0)
#define ARG_MULTIPLE (1u << 1)
#define ARG_MULTIPLE_TOKEN (1u << 2)

/* One node of the argument tree COMMAND DOCS shows. */
typedef struct command_arg {
    const char *name;
    command_arg_type type;
    int key_spec_index; /* -1: not a key */
    const char *display;
    const char *token;
    const char *since;
    const char *deprecated_since;
    uint32_t flags;                    /* ARG_* */
    const struct command_arg *subargs; /* oneof and block */
    int num_args;
} command_arg;

#define CMD_DOC_DEPRECATED (1u << 0)
#define CMD_DOC_SYSCMD (1u << 1)

typedef struct karg karg;

/* A key found in a call: argument index and key spec flags. */
typedef struct key_ref {
    int pos;
    uint32_t flags;
} key_ref;

/* For the commands whose key flags depend on the other arguments (SET with
 * GET): returns the key count, as command_find_keys. */
typedef int (*command_get_keys_fn)(const karg *argv, int argc, key_ref *keys, int maxkeys);

/* What command_docs.c knows about a built-in command. */
typedef struct command_docs {
    const char *fullname;
    const char *group;
    const char *since;
    const char *complexity;
    uint32_t acl_categories; /* explicit ones; the rest follow the flags */
    uint32_t extra_flags;    /* CMD_* the family tables leave out */
    uint32_t doc_flags;      /* CMD_DOC_* */
    const char *deprecated_since;
    const char *replaced_by;
    const char *const *tips;
    int num_tips;
    const key_spec *key_specs;
    int num_key_specs;
    const command_arg *args;
    int num_args;
    command_get_keys_fn get_keys;
} command_docs;
/* Internal (COMMAND INFO shows neither): the dispatcher's view of the
 * transaction commands, so it never compares procedures. A TXN_CONTROL
 * command runs at once inside MULTI instead of being queued (MULTI EXEC
 * DISCARD WATCH QUIT RESET); TXN_EXEC runs the queue, so its memory check
 * looks at the queued commands. */
#define CMD_TXN_CONTROL (1u << 21)
#define CMD_TXN_EXEC (1u << 22)
/* Internal: may run while a RESP2 client is subscribed (the subscribe
 * family, PING, QUIT, RESET); any other command is refused there. */
#define CMD_PUBSUB_CONTEXT (1u << 23)

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
    void *module;            /* owning module, NULL for built-ins */
    const char *module_name; /* its name (COMMAND DOCS, LIST FILTERBY MODULE) */
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
    /* Its latencies (latency-tracking), allocated at its first call. */
    struct histogram *latency_hist;
    char *fullname; /* "get" or "config|get": as INFO and errors show it */
    /* Metadata of a built-in (command_docs.c), attached at registration;
     * for a module command, its key specs if it gave any (else NULL: its
     * one key spec is its range). */
    const command_docs *docs;
    /* The flags of one call, for a command whose flags depend on its
     * arguments (a module's EVAL): called with c->cmd and c->argv set,
     * returns all of this call's CMD_* bits. NULL: flags. */
    uint32_t (*call_flags)(client *c);
} command;

/* The flags a decision about this call reads (client.c keeps them in
 * c->cmd_flags): one branch for every command without a hook. */
static inline uint32_t command_call_flags(command *cmd, client *c) {
    return __builtin_expect(cmd->call_flags != NULL, 0) ? cmd->call_flags(c) : cmd->flags;
}

void command_setup(void);
void command_teardown(void);
/* Frees cmd's latency histogram (CONFIG RESETSTAT, unregistering). */
void command_free_latency(command *cmd);

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

/* Key positions of a call: fills keys with argument indexes; returns count.
 * Without the arguments, only the specs at fixed positions can be read
 * (keyword and keynum specs are skipped). */
int command_get_keys(const command *cmd, int argc, int *keys, int maxkeys);
/* The keys of a call (argv[0] is the command name; for a subcommand,
 * argv[1] its name) from the command's key specs, as Valkey finds them.
 * Returns the count (at most maxkeys), or -1 when the arguments do not fit
 * the specs (a keyword's count past the end, ...). */
int command_find_keys(const command *cmd, const karg *argv, int argc, key_ref *keys, int maxkeys);
/* 1 if some key spec of cmd names real keys (COMMAND GETKEYS). */
int command_has_keys(const command *cmd);
/* The key specs of cmd: the built-in's, or for a module command one range
 * spec made from its first/last/step in *tmp. Returns the count. */
int command_key_specs(const command *cmd, const key_spec **specs, key_spec *tmp);
/* The (first, last, step) triple COMMAND INFO shows, from the key specs as
 * Valkey derives it (0, 0, 0 when they don't form one range). */
void command_legacy_range(const command *cmd, int *first, int *last, int *step);
/* ACL categories of cmd, explicit and implied by its flags. */
uint32_t command_acl_categories(const command *cmd);
/* Category bit named name ("string", no '@'), or 0. */
uint32_t command_acl_category(const char *name);
/* Names of the categories set in cats, in COMMAND INFO's order. */
int command_acl_category_names(uint32_t cats, const char **out, int max);

/* Attaches a registered command's metadata (borrowed; NULL for none): its
 * extra flags, and movablekeys when the legacy range cannot describe its
 * keys. */
void command_set_docs(command *cmd, const command_docs *docs);
/* The key lookup of SET (its key flags follow the GET option). */
int command_set_get_keys(const karg *argv, int argc, key_ref *keys, int maxkeys);
/* The keys of SORT: the sorted key and the STORE destination (the last
 * STORE), which its key specs leave to this function. */
int command_sort_get_keys(const karg *argv, int argc, key_ref *keys, int maxkeys);
/* SORT_RO's: the sorted key (no STORE). */
int command_sort_ro_get_keys(const karg *argv, int argc, key_ref *keys, int maxkeys);

/* Flag names of cmd, for COMMAND INFO; returns the count written. */
int command_flag_names(const command *cmd, const char **out, int max);

void command_reset_stats(void);

#endif
