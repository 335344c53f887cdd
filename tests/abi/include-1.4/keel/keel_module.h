/* keel_module.h -- the Keel module ABI, version 1.4.
 *
 * This header is a contract between keel-server and every module built
 * against it. Rules that keep it stable:
 *
 *  - A module exports exactly one symbol, keel_module_entry(), returning a
 *    keel_module_info. The server checks the magic number, the ABI major
 *    version (must be equal) and minor version (must not be newer than the
 *    server's) and the descriptor size BEFORE it calls anything in the
 *    module. Use the KEEL_MODULE() macro to declare it.
 *  - The server hands the module one keel_api: a table of function groups.
 *    Every group starts with its size. New functions are only ever appended
 *    at the end of a group, new groups at the end of keel_api; nothing is
 *    removed or reordered within a major version. A module built against
 *    minor N that wants a function added in minor N+1 tests for it with
 *    KEEL_API_HAS(group, member) first.
 *  - Every struct a module passes to the server starts with a uint32_t size
 *    (set it with sizeof); the server reads only the fields that size
 *    covers, so old modules keep working when a struct grows.
 *  - Handles (keel_ctx, keel_client, keel_key, keel_type, keel_timer,
 *    keel_info, keel_transport, keel_conn, keel_fd_watch) are opaque: modules never see
 *    server structs, and the server is free to change them.
 *  - The server does not export its symbols (modules are loaded with
 *    RTLD_LOCAL and the server is not linked with -rdynamic): a module can
 *    reach the server only through this table.
 *  - Constants (KEEL_CMD_*, KEEL_CLIENT_*, KEEL_LOG_*, ...) are values of
 *    this ABI, not of the server: the server translates its own flags and
 *    codes to them, so they never change within a major version.
 *
 * Naming new functions: a member is `object_verb` in snake_case, the thing
 * it acts on first (key_open, string_get, expire_set, timer_add,
 * type_register, config_get, stat_get), or just `object_property` for a
 * read-only accessor (client_id, conn_fd, db_size). It goes in the group of
 * its subsystem, appended at the end under a `---- ABI 1.N ----` marker, and
 * modules probe it with KEEL_API_HAS(api, group, member); a new subsystem is
 * a new group appended to keel_api. Replies stay in the reply_* family of
 * the command group. The older verb-first members (register_command,
 * register_transport, add_filter, add_observer, add_client_event, add_cron,
 * add_section) keep their names: renaming would break the ABI.
 *
 * Threads: unless a function says otherwise, it may be called only from the
 * main thread (the thread that runs commands and callbacks); debug builds of
 * the server assert this.
 *
 * Ownership: unless a function says otherwise, pointers passed to the server
 * are borrowed for the duration of the call (the server copies what it
 * keeps), and pointers returned by the server are borrowed until the
 * callback that received them returns. */
#ifndef KEEL_SDK_KEEL_MODULE_H
#define KEEL_SDK_KEEL_MODULE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* ssize_t */
#include <sys/uio.h>   /* struct iovec */

#ifdef __cplusplus
extern "C" {
#endif

#define KEEL_MODULE_MAGIC 0x4b45454c4d4f4431ULL /* "KEELMOD1" */
#define KEEL_ABI_MAJOR 1
#define KEEL_ABI_MINOR 4

#define KEEL_OK 0
#define KEEL_ERR (-1)

/* Log levels (as the server's loglevel directive). */
#define KEEL_LOG_DEBUG 0
#define KEEL_LOG_VERBOSE 1
#define KEEL_LOG_NOTICE 2
#define KEEL_LOG_WARNING 3

typedef struct keel_ctx keel_ctx;       /* a call context: load, command, callback */
typedef struct keel_client keel_client; /* a connected client */
typedef struct keel_key keel_key;       /* an open key */
typedef struct keel_type keel_type;     /* a registered custom data type */
typedef struct keel_timer keel_timer;   /* a registered timer */
typedef struct keel_info keel_info;     /* an INFO section being built */
typedef struct keel_transport keel_transport; /* a registered connection type */
typedef struct keel_conn keel_conn;     /* a connection of a module transport */
typedef struct keel_reply keel_reply;   /* a command's reply read as a tree (1.2) */
typedef struct keel_blocked keel_blocked; /* a client a module blocked (1.2) */
typedef struct keel_listener keel_listener; /* a listening port of a transport (1.3) */
typedef struct keel_fd_watch keel_fd_watch; /* a descriptor the server watches (1.4) */
typedef struct keel_api keel_api;

/* True if the server's table has `member` in `group` (a function added in a
 * later minor version than the module was built for). The table's own size
 * is checked first, so a group added later is never read past its end. */
#define KEEL_API_HAS(api, group, member)                                                            \
    ((api)->size >= offsetof(keel_api, group) + sizeof((api)->group) && (api)->group != NULL &&      \
     (api)->group->size >= offsetof(__typeof__(*(api)->group), member) + sizeof((api)->group->member))

/* ------------------------------------------------------------------------
 * The module descriptor (what the module gives the server).
 * ------------------------------------------------------------------------ */

/* magic, abi_major, abi_minor and size keep these offsets in every ABI
 * version: the server reads them before it trusts anything else. */
typedef struct keel_module_info {
    uint64_t magic;     /* KEEL_MODULE_MAGIC */
    uint32_t abi_major; /* KEEL_ABI_MAJOR the module was built with */
    uint32_t abi_minor; /* KEEL_ABI_MINOR the module was built with */
    uint32_t size;      /* sizeof(keel_module_info) */
    uint32_t version;   /* the module's own version, e.g. 10203 for 1.2.3 */
    const char *name;   /* unique module name: [a-z0-9_-], at most 64 bytes */
    /* Called once after the checks pass. argv holds the loadmodule or
     * MODULE LOAD arguments (borrowed for the call). Return KEEL_OK, or
     * KEEL_ERR after api->core->set_error() to refuse loading; everything
     * registered so far is then undone by the server, but deinit is not
     * called, so stop whatever init started (threads, sockets) before
     * returning KEEL_ERR. A registration that failed during init, or a
     * MODULE LOADEX CONFIG name the module did not register, fails the load
     * even if init returns KEEL_OK; the server then calls deinit first.
     * ctx and api stay valid until the module is unloaded: keep them to
     * log from any thread, or to add timers and hooks outside commands. */
    int (*init)(keel_ctx *ctx, const keel_api *api, int argc, const char *const *argv);
    /* Called by MODULE UNLOAD and at shutdown, after the server has checked
     * the module owns no keys or connections, and when a load is refused
     * after init returned KEEL_OK (see init). Main thread. May be NULL.
     * Return KEEL_ERR (with set_error) to refuse an unload; at shutdown and
     * for a refused load the result is ignored. It runs while the module's
     * hooks, commands, timers, INFO sections and configs are still
     * registered (so it may timer_del its own timers); the server removes
     * what is left afterwards, then unloads the object. */
    int (*deinit)(keel_ctx *ctx);
} keel_module_info;

#define KEEL_MODULE_ENTRY_SYMBOL "keel_module_entry"

/* Declares the module: KEEL_MODULE("hello", 1, hello_init, NULL); */
#define KEEL_MODULE(name_, version_, init_, deinit_)                                                \
    __attribute__((visibility("default"))) const keel_module_info *keel_module_entry(void) {       \
        static const keel_module_info info = {                                                      \
            KEEL_MODULE_MAGIC, KEEL_ABI_MAJOR, KEEL_ABI_MINOR, sizeof(keel_module_info),            \
            (version_), (name_), (init_), (deinit_)};                                               \
        return &info;                                                                               \
    }

/* ------------------------------------------------------------------------
 * Structs the module hands to the server (each starts with its size).
 * ------------------------------------------------------------------------ */

/* Key specs (ABI 1.2), Valkey's model: begin_search finds the first key (a
 * fixed index, or the argument after a keyword searched from startfrom,
 * negative = backwards from the end); find_keys says how many follow (a
 * range whose lastkey is relative to the first key, negative = from the
 * end, step apart, limit > 1 = only 1/limit of the rest; or a count read at
 * keynum_index, relative to the first key's position as found by
 * begin_search, keys starting keynum_firstkey after it). */
#define KEEL_KEY_SPEC_RO (1u << 0)
#define KEEL_KEY_SPEC_RW (1u << 1)
#define KEEL_KEY_SPEC_OW (1u << 2)
#define KEEL_KEY_SPEC_RM (1u << 3)
#define KEEL_KEY_SPEC_ACCESS (1u << 4)
#define KEEL_KEY_SPEC_UPDATE (1u << 5)
#define KEEL_KEY_SPEC_INSERT (1u << 6)
#define KEEL_KEY_SPEC_DELETE (1u << 7)
#define KEEL_KEY_SPEC_NOT_KEY (1u << 8)
#define KEEL_KEY_SPEC_INCOMPLETE (1u << 9)
#define KEEL_KEY_SPEC_VARIABLE_FLAGS (1u << 10)

#define KEEL_KEY_BEGIN_INDEX 1
#define KEEL_KEY_BEGIN_KEYWORD 2
#define KEEL_KEY_FIND_RANGE 1
#define KEEL_KEY_FIND_KEYNUM 2

typedef struct keel_key_spec {
    uint32_t size;  /* sizeof(keel_key_spec) */
    uint32_t flags; /* KEEL_KEY_SPEC_* */
    int begin_type; /* KEEL_KEY_BEGIN_* */
    int begin_index;             /* INDEX: argument index (argv[0] is the name) */
    const char *begin_keyword;   /* KEYWORD: matched case-insensitively */
    int begin_startfrom;         /* KEYWORD: where the search starts */
    int find_type;               /* KEEL_KEY_FIND_* */
    int range_lastkey, range_step, range_limit;     /* RANGE */
    int keynum_index, keynum_firstkey, keynum_step; /* KEYNUM */
} keel_key_spec;

typedef void (*keel_command_fn)(keel_ctx *ctx);

typedef struct keel_command_def {
    uint32_t size;       /* sizeof(keel_command_def) */
    const char *name;    /* command name, case-insensitive; must be new */
    keel_command_fn fn;  /* runs on the main thread */
    int arity;           /* as Valkey: N exact, -N at least N (name counts) */
    const char *flags;   /* space-separated: "write readonly denyoom admin fast
                            no-auth no-multi allow-busy skip-slowlog no-monitor
                            may-replicate" */
    int first_key;       /* key positions as Valkey: 0 = no keys */
    int last_key;        /* negative counts from the end (-1 = last arg) */
    int key_step;
    const char *summary; /* for COMMAND DOCS; may be NULL */

    /* ---- ABI 1.2 ---- */
    /* Where the keys are when (first_key, last_key, key_step) cannot say it
     * (EVAL's numkeys): num_key_specs specs, all of the same size. NULL: the
     * range above is the command's one key spec. Copied at registration. */
    const keel_key_spec *key_specs;
    int num_key_specs;
    /* The KEEL_CMD_* flags of one call, for a command whose flags depend on
     * its arguments (EVAL: the script's shebang says whether it writes).
     * Called before the checks that read flags (maxmemory, CLIENT PAUSE,
     * ...), with the registered flags; returns this call's. It may read
     * argc/argv only: in its ctx call returns KEEL_ERR, replies are dropped
     * and key_open returns NULL (which every key function takes as an
     * empty key). NULL: the registered flags. Main thread. */
    uint32_t (*call_flags)(keel_ctx *ctx, uint32_t flags);
} keel_command_def;


/* Custom data types. Values are opaque pointers owned by the server once
 * stored in a key; the callbacks run on the main thread. */
typedef struct keel_type_def {
    uint32_t size;               /* sizeof(keel_type_def) */
    const char *name;            /* 9 characters [A-Za-z0-9_-], unique */
    int encver;                  /* encoding version, reserved for dump/restore */
    void (*free)(void *value);   /* required */
    size_t (*mem_usage)(const void *value); /* bytes, for MEMORY USAGE; may be NULL */
    void *(*copy)(const void *value);       /* for COPY; NULL refuses COPY */
    void *reserved[4];           /* dump/restore callbacks in a later minor */
} keel_type_def;

/* What an observer sees after every command. */
typedef struct keel_call_info {
    uint32_t size;          /* sizeof(keel_call_info) as the server built it */
    const char *name;       /* command name (lowercase; "config|get" for a subcommand) */
    uint32_t flags;         /* KEEL_CMD_* flags of the command */
    keel_client *client;
    uint64_t duration_us;
    uint64_t request_bytes; /* bytes of the request as received */
    uint64_t reply_bytes;   /* bytes of reply it produced */
    int failed;             /* it replied with an error */
} keel_call_info;

/* Command flags as seen by filters and observers. ABI values: the server
 * maps its own command flags to these bits and passes no other bit. */
#define KEEL_CMD_WRITE (1u << 0)
#define KEEL_CMD_READONLY (1u << 1)
#define KEEL_CMD_DENYOOM (1u << 2)
#define KEEL_CMD_ADMIN (1u << 3)
#define KEEL_CMD_FAST (1u << 11)
#define KEEL_CMD_NO_AUTH (1u << 12)
/* ---- ABI 1.2 ---- (also accepted in keel_command_def.flags by name:
 * "pubsub no-script (or deny-script) blocking allow-stale no-monitor
 * no-slowlog may-replicate no-multi allow-busy no-mandatory-keys") */
#define KEEL_CMD_PUBSUB (1u << 4)
#define KEEL_CMD_NOSCRIPT (1u << 5)
#define KEEL_CMD_BLOCKING (1u << 6)
#define KEEL_CMD_STALE (1u << 8)
#define KEEL_CMD_SKIP_MONITOR (1u << 9)
#define KEEL_CMD_SKIP_SLOWLOG (1u << 10)
#define KEEL_CMD_MAY_REPLICATE (1u << 13)
#define KEEL_CMD_NO_MULTI (1u << 14)
#define KEEL_CMD_ALLOW_BUSY (1u << 15)
#define KEEL_CMD_NO_MANDATORY_KEYS (1u << 19)

/* Returns NULL to let the command run, or an error message (e.g.
 * "THROTTLED try again later") sent instead; the string must stay valid
 * until the filter is called again. */
typedef const char *(*keel_filter_fn)(keel_ctx *ctx, const char *name, uint32_t flags, void *priv);
typedef void (*keel_observer_fn)(const keel_call_info *info, void *priv);

#define KEEL_CLIENT_CONNECT 1
#define KEEL_CLIENT_AUTH 2
#define KEEL_CLIENT_CLOSE 3
typedef void (*keel_client_event_fn)(keel_client *client, int event, void *priv);

/* Returns the delay until the next run in ms, or KEEL_TIMER_STOP. For a
 * cron hook the delay is ignored; KEEL_TIMER_STOP removes the hook. */
#define KEEL_TIMER_STOP (-1)
typedef int64_t (*keel_timer_fn)(keel_ctx *ctx, void *priv);
typedef void (*keel_info_fn)(keel_info *info, void *priv);

/* Module configuration parameters: `<module>.<name> value` in the config
 * file and CONFIG GET/SET <module>.<name>. */
#define KEEL_CONFIG_BOOL 1
#define KEEL_CONFIG_INT 2    /* long long in [min, max] */
#define KEEL_CONFIG_STRING 3
#define KEEL_CONFIG_ENUM 4   /* one of enum_values (NULL-terminated) */
#define KEEL_CONFIG_MEMORY 5 /* like INT, accepts 1kb/10mb/1gb units */

#define KEEL_CONFIG_IMMUTABLE (1u << 0) /* set only at load */
/* ABI 1.3. FAMILY: the name is one of a family the module claimed with
 * config_claim_family ("tls-port"), used as it is, without the
 * "<module>." prefix. SENSITIVE: the value is a secret (a key's
 * passphrase): CONFIG SET's arguments are redacted in SLOWLOG, the
 * command log and MONITOR, and CONFIG GET still shows it, as Valkey does. */
#define KEEL_CONFIG_FAMILY (1u << 1)
#define KEEL_CONFIG_SENSITIVE (1u << 2)

typedef struct keel_config_def {
    uint32_t size;           /* sizeof(keel_config_def) */
    const char *name;        /* without the module prefix */
    int type;                /* KEEL_CONFIG_* */
    uint32_t flags;
    const char *default_value;
    long long min, max;      /* INT and MEMORY */
    const char *const *enum_values;
    /* Called with the parsed value on every successful set (at load too):
     * bool, int and memory values in `number` (text NULL), string and enum
     * values in `text` (borrowed for the call; for an enum, `number` is its
     * index in enum_values). Return KEEL_ERR with a static message in *err
     * to refuse the value. */
    int (*apply)(long long number, const char *text, void *priv, const char **err);
    void *priv;
    /* ---- ABI 1.3 ---- */
    /* Runs once per CONFIG SET, after apply accepted the new values of all
     * the parameters the command names, for each distinct commit among
     * them (with the priv of the first such parameter): the place to act on
     * several values together (a certificate and its key). KEEL_ERR with a
     * static message in *err refuses the whole CONFIG SET: every parameter
     * it named gets its previous value back through apply, and the client
     * gets the message. The commits that had already succeeded in that
     * CONFIG SET then run again, once the previous values are back, so that
     * they act on those (a warning is logged if one refuses them). Not run
     * at load (init sees every value by the time its config_register calls
     * return). Setting a value equal to the current one still runs apply
     * and commit (re-reading a file). May be NULL. Main thread. */
    int (*commit)(void *priv, const char **err);
} keel_config_def;

/* ------------------------------------------------------------------------
 * The host API: function groups.
 * ------------------------------------------------------------------------ */

typedef struct keel_api_core {
    uint32_t size;
    /* Writes to the server log with the module's name. Any thread. */
    void (*log)(keel_ctx *ctx, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
    /* Sets the message MODULE LOAD/UNLOAD report when init or deinit returns
     * KEEL_ERR (copied). A failed registration records its own reason. */
    void (*set_error)(keel_ctx *ctx, const char *msg);
    /* Memory counted in used_memory. Any thread. */
    void *(*alloc)(size_t size);
    void *(*calloc)(size_t count, size_t size);
    void *(*realloc)(void *ptr, size_t size);
    void (*free)(void *ptr);
    /* Unix time in ms / us (the cached command clock for mstime). */
    int64_t (*mstime)(void);
    int64_t (*ustime)(void);
    /* "major.minor.patch" of the server. The string is static. */
    const char *(*server_version)(void);
    /* Returns the current value of a server or module config by name into
     * buf (NUL-terminated, truncated to len). KEEL_ERR if unknown. */
    int (*config_get)(const char *name, char *buf, size_t len);

    /* ---- ABI 1.1 ---- */
    /* A server statistic by its INFO field name into *value: the counters
     * total_commands_processed, total_connections_received,
     * rejected_connections, keyspace_hits, keyspace_misses, expired_keys,
     * evicted_keys, total_net_input_bytes, total_net_output_bytes,
     * total_error_replies, io_threaded_reads_processed,
     * io_threaded_writes_processed; the gauges connected_clients,
     * used_memory, maxmemory, uptime_in_seconds and db_keys (keys in all
     * databases). KEEL_ERR for any other name. name is borrowed. Main
     * thread (the counters have one writer and no lock). */
    int (*stat_get)(const char *name, long long *value);
} keel_api_core;

typedef struct keel_api_command {
    uint32_t size;
    /* Registers a command (only during init). KEEL_ERR if the name is
     * taken or the def is invalid (the reason is logged and fails the load). */
    int (*register_command)(keel_ctx *ctx, const keel_command_def *def);
    /* Arguments of the running command (argv[0] is the name). The bytes are
     * borrowed until the command returns; they are not NUL-terminated. */
    int (*argc)(keel_ctx *ctx);
    const char *(*argv)(keel_ctx *ctx, int index, size_t *len);
    /* Parses argument index as a 64-bit integer; KEEL_ERR if it is not. */
    int (*arg_ll)(keel_ctx *ctx, int index, long long *out);
    /* Replies; exactly one top-level reply per command. Strings are copied. */
    void (*reply_ok)(keel_ctx *ctx);
    void (*reply_simple)(keel_ctx *ctx, const char *s);
    /* err without '-', e.g. "ERR bad thing"; counted in errorstats. */
    void (*reply_error)(keel_ctx *ctx, const char *err);
    void (*reply_int)(keel_ctx *ctx, long long v);
    void (*reply_bulk)(keel_ctx *ctx, const char *s, size_t len);
    void (*reply_null)(keel_ctx *ctx);
    void (*reply_array)(keel_ctx *ctx, long long count);
    void (*reply_map)(keel_ctx *ctx, long long pairs); /* RESP2: flat array */
    void (*reply_double)(keel_ctx *ctx, double v);
    void (*reply_bool)(keel_ctx *ctx, int v);
    void (*reply_verbatim)(keel_ctx *ctx, const char *s, size_t len);
    void (*reply_wrong_arity)(keel_ctx *ctx);
    /* 2 or 3: the protocol of the calling client. */
    int (*resp)(keel_ctx *ctx);
    /* The client running the command; NULL outside commands. */
    keel_client *(*client)(keel_ctx *ctx);
    uint64_t (*client_id)(keel_client *client);
    /* Peer address "ip:port" into buf; KEEL_ERR without a connection. */
    int (*client_addr)(keel_client *client, char *buf, size_t len);
    /* Client name or NULL; borrowed until the client's next command. */
    const char *(*client_name)(keel_client *client);

    /* ---- ABI 1.2 ---- */
    /* A set of count elements (RESP2: an array). */
    void (*reply_set)(keel_ctx *ctx, long long count);
    /* A big number given as its decimal digits, optional '-' first
     * (RESP2: a bulk string). The text is sent as given, as Valkey's
     * scripts send theirs: only CR and LF are replaced by spaces. */
    void (*reply_bignum)(keel_ctx *ctx, const char *digits, size_t len);
    /* An error of len bytes exactly as given (no "ERR " is added; the
     * server takes the code, the first word, for errorstats), without '-'
     * and without CR or LF (they are replaced by spaces). With
     * KEEL_REPLY_ERR_NO_STATS it is not counted in errorstats or
     * total_error_replies (an error a script passes on from a command it
     * called, which was counted when that command failed). */
    void (*reply_error_ex)(keel_ctx *ctx, const char *err, size_t len, uint32_t flags);
    /* A verbatim string with its format: three characters, e.g. "mkd";
     * any other format (NULL, shorter, longer) sends "txt". RESP2: a bulk
     * string. */
    void (*reply_verbatim_ex)(keel_ctx *ctx, const char *s, size_t len, const char *format);
} keel_api_command;

#define KEEL_REPLY_ERR_NO_STATS (1u << 0)

#define KEEL_KEY_READ (1 << 0)
#define KEEL_KEY_WRITE (1 << 1)

#define KEEL_KEYTYPE_EMPTY 0
#define KEEL_KEYTYPE_STRING 1
#define KEEL_KEYTYPE_MODULE 2

typedef struct keel_api_keyspace {
    uint32_t size;
    /* Opens a key of the caller's database (applying expiry). Close it with
     * key_close before the command returns. Never NULL. */
    keel_key *(*key_open)(keel_ctx *ctx, const char *key, size_t len, int mode);
    void (*key_close)(keel_key *key);
    int (*key_type)(keel_key *key);
    /* The string value, borrowed until key_close or a write to the key;
     * NULL if the key is empty or not a string. */
    const char *(*string_get)(keel_key *key, size_t *len);
    /* Sets a string value (copied); clears the TTL. Needs KEEL_KEY_WRITE. */
    int (*string_set)(keel_key *key, const char *value, size_t len);
    int (*key_delete)(keel_key *key);
    /* Absolute expiry in unix ms, or -1 for none / empty key. */
    int64_t (*expire_get)(keel_key *key);
    /* Sets (abs_ms >= 0) or removes (-1) the TTL. Needs KEEL_KEY_WRITE. */
    int (*expire_set)(keel_key *key, int64_t abs_ms);
    /* Registers a data type (only during init). NULL if the def is invalid
     * or the name is taken (the reason is logged and fails the load). */
    keel_type *(*type_register)(keel_ctx *ctx, const keel_type_def *def);
    /* Stores value in a key opened for writing, replacing any value and
     * clearing the TTL. type must be one the calling module registered. On
     * KEEL_OK ownership passes to the server, which frees the value with
     * the type's free callback; on KEEL_ERR the caller still owns it. */
    int (*module_set)(keel_key *key, keel_type *type, void *value);
    /* The value of a key holding `type`, else NULL. Borrowed. */
    void *(*module_get)(keel_key *key, keel_type *type);
    /* Number of keys in the caller's database. */
    uint64_t (*db_size)(keel_ctx *ctx);
} keel_api_keyspace;

typedef struct keel_api_hooks {
    uint32_t size;
    /* Before every command (after arity/auth checks). */
    int (*add_filter)(keel_ctx *ctx, keel_filter_fn fn, void *priv);
    /* After every command. */
    int (*add_observer)(keel_ctx *ctx, keel_observer_fn fn, void *priv);
    int (*add_client_event)(keel_ctx *ctx, keel_client_event_fn fn, void *priv);
    /* A timer firing after ms, on the main thread. */
    keel_timer *(*timer_add)(keel_ctx *ctx, int64_t ms, keel_timer_fn fn, void *priv);
    int (*timer_del)(keel_ctx *ctx, keel_timer *timer);
    /* Runs fn at every server cron tick (hz times a second); see
     * KEEL_TIMER_STOP. */
    int (*add_cron)(keel_ctx *ctx, keel_timer_fn fn, void *priv);
} keel_api_hooks;

typedef struct keel_api_info {
    uint32_t size;
    /* Adds "# <name>" to INFO (shown by INFO <name>, INFO modules, INFO
     * everything). */
    int (*add_section)(keel_ctx *ctx, const char *name, keel_info_fn fn, void *priv);
    /* Appends one line; the server adds CRLF. Use "field:value". */
    void (*field)(keel_info *info, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    /* Declares `<module>.<name>` (only during init). The default and any
     * value from the config file or MODULE LOADEX CONFIG are applied before
     * init returns. */
    int (*config_register)(keel_ctx *ctx, const keel_config_def *def);

    /* ---- ABI 1.2 ---- */
    /* Adds fields to a section of the server's own ("server", "memory",
     * "stats", ...; lowercase): fn runs after the server's fields whenever
     * that section is shown. KEEL_ERR for a section the server does not
     * have (only during init, like add_section). */
    int (*add_fields)(keel_ctx *ctx, const char *section, keel_info_fn fn, void *priv);

    /* ---- ABI 1.3 ---- */
    /* Claims a family of config names that the server reserves for a
     * feature module: "tls-" (TLS) and "rdma-" (RDMA). After the claim,
     * config_register with KEEL_CONFIG_FAMILY declares names of the family
     * as they are ("tls-port"), so a valkey.conf works unchanged. The
     * server keeps config-file lines of a reserved family for the module
     * that claims it, like `<module>.<name>` lines; a line no module
     * claimed stops start-up with a message naming the module to load, and
     * without the module CONFIG SET/GET of such a name answers that the
     * module is not loaded. The family is released at unload. Only during
     * init; KEEL_ERR (logged, fails the load) if the prefix is not reserved
     * or another module holds it. prefix is borrowed. */
    int (*config_claim_family)(keel_ctx *ctx, const char *prefix);
} keel_api_info;

/* ------------------------------------------------------------------------
 * Transports: a module-provided connection type (TLS, RDMA, ...).
 *
 * The server owns the listening sockets and the accept loop; the transport
 * owns what travels over an accepted socket. Each accepted connection goes
 * through the server's normal admission (maxclients, protected mode), then
 * the transport's handshake, then becomes an ordinary client whose reads
 * and writes call the transport's read and writev.
 *
 * Thread rule: handshake, read, writev and has_pending may run on an I/O
 * thread that owns the connection at that moment (never on two threads at
 * once for one connection), so they must touch only the connection's own
 * state and call only "any thread" functions. accept and close run on the
 * main thread. The server calls no hook of a connection after its close.
 * ------------------------------------------------------------------------ */

/* handshake results besides KEEL_OK (done) and KEEL_ERR (drop it). */
#define KEEL_CONN_WANT_READ 1  /* call again when the socket is readable */
#define KEEL_CONN_WANT_WRITE 2 /* call again when the socket is writable */

typedef struct keel_transport_def {
    uint32_t size;    /* sizeof(keel_transport_def) */
    const char *name; /* [a-z0-9_-], at most 32 bytes, unique, e.g. "tls" */
    /* A connection was accepted and admitted (main thread). Set up state
     * with conn_set_data. KEEL_ERR closes it (close is still called). May
     * be NULL. */
    int (*accept)(keel_conn *conn, void *priv);
    /* Advances the handshake: KEEL_OK when the connection is ready,
     * KEEL_CONN_WANT_READ/WRITE to wait, KEEL_ERR to drop it. NULL: no
     * handshake. */
    int (*handshake)(keel_conn *conn, void *priv);
    /* As read(2) and writev(2): bytes moved, 0 for end of stream (read),
     * or -1 with errno set (EAGAIN: nothing now). Required. */
    ssize_t (*read)(keel_conn *conn, void *buf, size_t len, void *priv);
    ssize_t (*writev)(keel_conn *conn, const struct iovec *iov, int iovcnt, void *priv);
    /* Bytes the transport buffered that a read returns without the socket
     * becoming readable (TLS records); the server reads again while it is
     * non-zero. May be NULL (never any). */
    int (*has_pending)(keel_conn *conn, void *priv);
    /* Frees the transport's state of the connection; the server closes the
     * socket afterwards. May be NULL. */
    void (*close)(keel_conn *conn, void *priv);
    void *priv; /* passed to every hook */

    /* ---- ABI 1.3 ---- */
    /* An outgoing connection (keel_api_transport.connect) finished its TCP
     * connect (main thread): set up state with conn_set_data, as accept
     * does for accepted ones (conn_host gives the name it was opened to);
     * the handshake hook then runs its client side. KEEL_ERR fails the
     * connection (close is still called). NULL: the transport cannot open
     * connections, and connect refuses. */
    int (*connect)(keel_conn *conn, void *priv);
    /* Longest the handshake of one connection may take, in ms: a
     * connection still in it then is logged and closed (a client that
     * stops mid-handshake holds nothing for longer). 0: 10000; negative:
     * register_transport refuses the def.
     * Accepted connections only: an outgoing one is bounded by connect's
     * timeout_ms. */
    int64_t handshake_timeout_ms;

    /* ---- ABI 1.4 ---- */
    uint32_t flags; /* KEEL_TRANSPORT_* */
    /* Writes the connection's peer (remote != 0) or local address into buf
     * (len bytes, NUL-terminated) as "ip:port", "[ip6]:port" for IPv6:
     * CLIENT LIST's addr and laddr, protected mode's loopback test and the
     * log use it. KEEL_ERR if it is unknown (the server shows "?:0").
     * Required with KEEL_TRANSPORT_OWN_FD, where it replaces the socket's
     * address; NULL otherwise (the TCP socket's address). Runs on the main
     * thread at any time, also while an I/O thread runs the connection's
     * read or writev: it must read only what does not change after the
     * connection started (conn_adopt). */
    int (*addr)(keel_conn *conn, char *buf, size_t len, int remote, void *priv);
} keel_transport_def;

/* keel_transport_def.flags (ABI 1.4).
 *
 * OWN_FD: the transport brings its own connections rather than the
 * server's TCP sockets (RDMA: a connection's descriptor is its completion
 * channel, the listener its CM event channel, which the module watches
 * with fd_watch). Each connection starts with conn_adopt over a descriptor
 * the transport owns, any pollable fd, not necessarily a socket. The
 * server watches it for readability only and never reads, writes, closes
 * it or sets socket options on it; addresses come from the addr hook
 * (required). The descriptor's readability is the connection's only
 * event, so a connection waiting to write (writev took less than offered,
 * or returned -1 with EAGAIN) is retried when the descriptor is readable
 * or the transport calls conn_wake, and conn_wait(KEEL_CONN_WRITABLE) and
 * a handshake's KEEL_CONN_WANT_WRITE wait for readability too. listen,
 * listener_open and connect refuse such a transport. */
#define KEEL_TRANSPORT_OWN_FD (1u << 0)

/* The direction a connection needs (conn_wait, and handshake results). */
#define KEEL_CONN_READABLE KEEL_CONN_WANT_READ
#define KEEL_CONN_WRITABLE KEEL_CONN_WANT_WRITE

/* Retries (ABI 1.3 servers): after writev returned -1 with EAGAIN, the
 * server's next writev of that connection starts at the same byte and
 * offers at least as many bytes (the iovecs may differ: a TLS transport
 * copies what it tried, or uses SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER). After
 * a read or writev that called conn_wait, the same operation is retried
 * when the socket is as asked; bytes a read left buffered (has_pending)
 * are read again before the event loop sleeps, also after a handshake. */

/* An outgoing connection's events (main thread): connect's done with
 * status KEEL_OK (ready: TCP connected and handshake done) or KEEL_ERR
 * (failed or timed out: the server closes the connection after done
 * returns), and the readable/writable handlers of conn_set_handlers (with
 * status KEEL_OK). */
typedef void (*keel_conn_fn)(keel_conn *conn, int status, void *udata);

/* A watched descriptor is readable (fd_watch, ABI 1.4). Main thread. */
typedef void (*keel_fd_fn)(int fd, void *udata);

typedef struct keel_api_transport {
    uint32_t size;
    /* Registers a transport (only during init); NULL if the def is invalid
     * or the name taken (the reason is logged and fails the load). */
    keel_transport *(*register_transport)(keel_ctx *ctx, const keel_transport_def *def);
    /* Listens on TCP port with the transport, on each of the addrs (as the
     * bind directive: "*", "::*", "127.0.0.1", a leading '-' makes one
     * optional). Any time on the main thread; the listener is closed when
     * the module unloads. KEEL_ERR if binding fails (the reason is logged;
     * during init it also fails the load). */
    int (*listen)(keel_ctx *ctx, keel_transport *t, const char *const *addrs, int naddrs, int port);
    /* The connection's socket (connected, non-blocking). The transport may
     * read and write it; the server closes it. Any thread. */
    int (*conn_fd)(keel_conn *conn);
    /* The transport's per-connection state. Any thread. */
    void (*conn_set_data)(keel_conn *conn, void *data);
    void *(*conn_get_data)(keel_conn *conn);
    /* The client on the connection; NULL until the handshake is done. */
    keel_client *(*conn_client)(keel_conn *conn);
    /* Connections of t that are open now (MODULE UNLOAD refuses while any
     * are). */
    uint64_t (*conn_count)(keel_transport *t);

    /* ---- ABI 1.3 ---- */
    /* Listens like listen, but returns the listener, to close it later with
     * listener_close (CONFIG SET of a port). addrs NULL with naddrs 0: the
     * server's bind addresses, followed when CONFIG SET bind changes them.
     * Main thread. NULL if binding fails (the reason is logged; during init
     * it also fails the load). */
    keel_listener *(*listener_open)(keel_ctx *ctx, keel_transport *t, const char *const *addrs,
                                    int naddrs, int port);
    /* Stops accepting on l and frees it; connections it accepted stay
     * open. NULL is ignored. Listeners still open when the module unloads
     * are closed by the server. Main thread. */
    void (*listener_close)(keel_listener *l);
    /* Inside read or writev, before returning -1 with errno EAGAIN: the
     * operation can progress only when the socket is `want`
     * (KEEL_CONN_READABLE or KEEL_CONN_WRITABLE) rather than in its own
     * direction (TLS: a read that must first send, a write that must first
     * receive). The server then retries that same operation when the
     * socket is so. Any thread that owns the connection (inside its
     * hooks). */
    void (*conn_wait)(keel_conn *conn, int want);
    /* Opens an outgoing connection with transport t to host:port (host: an
     * IPv4/IPv6 literal or a name, resolved before the call returns). The
     * TCP connect and then the transport's connect and handshake hooks run
     * in the background, bounded by timeout_ms (0: 10000); done reports the
     * result. Returns the connection (valid until done with KEEL_ERR
     * returns, or conn_close), or NULL with nothing to report if the
     * transport has no connect hook, host cannot be resolved, port is not
     * 1..65535, timeout_ms is negative or done is NULL. A name is looked up
     * with getaddrinfo on the calling thread, which can block the server
     * for as long as the resolver takes: pass an address literal where
     * latency matters. host is copied. Main thread. After done(KEEL_OK)
     * the connection stays open until conn_close, also after conn_read
     * returned 0 or an error (close it then); done may call
     * conn_set_handlers. */
    keel_conn *(*connect)(keel_ctx *ctx, keel_transport *t, const char *host, int port,
                          int64_t timeout_ms, keel_conn_fn done, void *udata);
    /* The handlers of an outgoing connection after done(KEEL_OK): called on
     * the main thread when the connection is readable (including bytes the
     * transport buffered: has_pending) or writable; NULL stops watching
     * that direction. KEEL_ERR for an accepted connection. */
    int (*conn_set_handlers)(keel_conn *conn, keel_conn_fn on_readable, keel_conn_fn on_writable,
                             void *udata);
    /* Reads and writes an outgoing connection through its transport, as
     * read(2) and write(2) (-1 with EAGAIN: nothing now). Unlike write(2),
     * after conn_write returned -1 with EAGAIN the next conn_write must
     * offer the same bytes first (the same buffer contents, at least as
     * long): a transport such as TLS has already encrypted them, and its
     * retry must see them again. buf is borrowed for the call. Main
     * thread. */
    ssize_t (*conn_read)(keel_conn *conn, void *buf, size_t len);
    ssize_t (*conn_write)(keel_conn *conn, const void *buf, size_t len);
    /* Closes an outgoing connection (the transport's close hook runs); no
     * handler is called afterwards. Main thread. */
    void (*conn_close)(keel_conn *conn);
    /* The host an outgoing connection was opened to (for SNI and
     * certificate checks), NULL for an accepted one. Borrowed for the
     * connection's life. Any thread that owns the connection. */
    const char *(*conn_host)(keel_conn *conn);
    /* The local port a connection was accepted on (a listener's port), 0
     * for an outgoing one. Any thread that owns the connection. */
    int (*conn_local_port)(keel_conn *conn);
    /* A transport registered by any module ("tls"), NULL if none: modules
     * that open connections (replication, a proxy) pick one by name. The
     * handle is valid while the module that registered it stays loaded;
     * that module cannot unload while connections of the transport are
     * open, so find it again before each connect rather than keep it.
     * name is borrowed. Main thread. */
    keel_transport *(*transport_find)(const char *name);

    /* ---- ABI 1.4 ---- */
    /* Calls fn(fd, udata) on the main thread whenever fd is readable
     * (level-triggered: again on every loop turn until what made it
     * readable is consumed), for a descriptor the module owns that is not a
     * connection (RDMA's CM event channel). Returns the watch, or NULL if fd
     * is negative or already watched, or fn is NULL. fd stays the module's:
     * fd_unwatch it before closing it. Watches a module leaves at unload
     * are removed (their descriptors are not closed). Main thread. */
    keel_fd_watch *(*fd_watch)(keel_ctx *ctx, int fd, keel_fd_fn fn, void *udata);
    /* Stops a watch and frees it; NULL is ignored. May be called from the
     * watch's own fn. Main thread. */
    void (*fd_unwatch)(keel_fd_watch *w);
    /* Starts a server-side connection of t, a KEEL_TRANSPORT_OWN_FD
     * transport, over fd: a non-blocking descriptor the transport owns,
     * readable whenever the connection has something to do. data becomes
     * the connection's data (conn_get_data) before any hook runs;
     * local_port is what conn_local_port reports (the port the transport
     * listens on). The connection then takes an accepted socket's path:
     * the server's admission (maxclients, protected mode through the addr
     * hook; a refused connection is closed without a reply, as TLS ones
     * are), the accept hook (which gets the keel_conn), the handshake hook,
     * and then a client.
     * KEEL_OK: the server owns the connection from now on; its close hook
     * runs exactly once whatever happens, possibly before conn_adopt
     * returns (a refused connection), and releases data and fd (the server
     * has stopped watching fd by then). KEEL_ERR: nothing was created
     * (t is not OWN_FD or another module's, fd is negative or already
     * watched, or not the main thread) and data and fd are still the
     * caller's. Main thread. */
    int (*conn_adopt)(keel_ctx *ctx, keel_transport *t, int fd, int local_port, void *data);
    /* Runs conn, before the event loop next sleeps, as if its descriptor
     * had become readable: the handshake step if it is in one, else its
     * read handler and then a write that waits. For events the transport
     * learns elsewhere than on the connection's descriptor (RDMA's CM
     * channel: the peer disconnected; its read then returns 0). A
     * connection out on an I/O thread runs once it is back. Connections of
     * OWN_FD transports only (others are ignored), and never after the
     * connection's close hook ran. Main thread. */
    void (*conn_wake)(keel_conn *conn);
} keel_api_transport;

/* ------------------------------------------------------------------------
 * ABI 1.2: calling commands, long-running calls, blocking clients, and
 * keyspace events. Probe each group with KEEL_API_HAS before use.
 * ------------------------------------------------------------------------ */

/* The types of a reply node. RESP2 replies use STRING, STATUS, ERROR,
 * INTEGER, NULL and ARRAY only; a RESP3 call may get every type. */
#define KEEL_REPLY_STRING 1   /* bulk string */
#define KEEL_REPLY_STATUS 2   /* simple string, e.g. OK */
#define KEEL_REPLY_ERROR 3    /* e.g. "ERR no such key" (without '-') */
#define KEEL_REPLY_INTEGER 4
#define KEEL_REPLY_NULL 5     /* RESP2 $-1 and *-1, RESP3 _ */
#define KEEL_REPLY_ARRAY 6
#define KEEL_REPLY_MAP 7
#define KEEL_REPLY_SET 8
#define KEEL_REPLY_DOUBLE 9
#define KEEL_REPLY_BOOL 10
#define KEEL_REPLY_BIGNUM 11
#define KEEL_REPLY_VERBATIM 12

/* Checks a call applies (keel_call_args.flags). Without any, a call runs
 * every command the calling client could run, with the caller's checks
 * except maxmemory. */
#define KEEL_CALL_RESP3 (1u << 0)     /* read the reply as a RESP3 client */
/* Refuse commands flagged write, and may-replicate ones (PUBLISH), as
 * Valkey's read-only scripts do. */
#define KEEL_CALL_NO_WRITES (1u << 1)
/* Refuse commands flagged deny-oom while used memory is over maxmemory
 * (measured when the calling command started, and only until one of its
 * calls ran a write, as Valkey's scripts do). */
#define KEEL_CALL_CHECK_OOM (1u << 2)
#define KEEL_CALL_SCRIPT (1u << 3)    /* refuse commands flagged no-script */

/* Why call refused a command without running it (its return value; the
 * reply is then an ERROR with the server's message for it). */
#define KEEL_CALL_RAN 0     /* it ran; its reply may still be an error */
#define KEEL_CALL_UNKNOWN 1 /* no such command (or subcommand) */
#define KEEL_CALL_ARITY 2   /* wrong number of arguments */
#define KEEL_CALL_NOSCRIPT 3 /* flagged no-script, with KEEL_CALL_SCRIPT */
#define KEEL_CALL_WRITE 4   /* a write, with KEEL_CALL_NO_WRITES */
#define KEEL_CALL_OOM 5     /* deny-oom over maxmemory, with KEEL_CALL_CHECK_OOM */
#define KEEL_CALL_DENIED 6  /* refused by the server's own rules (a filter,
                               a command that cannot run nested: MULTI,
                               SUBSCRIBE, ...) */

typedef struct keel_call_args {
    uint32_t size;  /* sizeof(keel_call_args) */
    uint32_t flags; /* KEEL_CALL_* */
    int argc;       /* >= 1; argv[0] is the command name */
    const char *const *argv; /* binary-safe: lens gives each length */
    const size_t *lens;
} keel_call_args;

typedef struct keel_api_call {
    uint32_t size;
    /* Runs a command inside the running command (ctx must be a command's
     * context), as the calling client in its database: a SELECT in one call
     * holds for the following calls of the same command, never for the
     * client. Keys the command reads are tracked for the calling client
     * (CLIENT TRACKING), and what it changes wakes blocked clients after
     * the calling command. A blocking command does not block: it replies
     * as if its timeout had passed. Connection state a called command sets
     * (CLIENT SETNAME, TRACKING, NO-TOUCH, REPLY ...) ends with its call.
     * Returns KEEL_CALL_RAN or a refusal
     * code, and in *reply the reply tree, which the caller owns and frees
     * with reply_free; KEEL_ERR (with *reply NULL) when ctx is not a
     * command's or args is invalid. args and its strings are borrowed for
     * the call. Main thread. */
    int (*call)(keel_ctx *ctx, const keel_call_args *args, keel_reply **reply);
    void (*reply_free)(keel_reply *reply);
    /* Readers of a reply node; every node is borrowed from the tree it came
     * from until reply_free of its root. */
    int (*reply_type)(const keel_reply *r); /* KEEL_REPLY_* */
    /* INTEGER; BOOL as 0 or 1; 0 for other types. */
    long long (*reply_integer)(const keel_reply *r);
    /* DOUBLE; 0 for other types. */
    double (*reply_double)(const keel_reply *r);
    /* The bytes of STRING, STATUS, ERROR (without '-'), BIGNUM (digits)
     * and VERBATIM (text, without its format); NULL for other types. */
    const char *(*reply_string)(const keel_reply *r, size_t *len);
    /* VERBATIM's three-letter format ("txt", "mkd"), else NULL. */
    const char *(*reply_format)(const keel_reply *r);
    /* Elements of an ARRAY or SET, pairs of a MAP; 0 for other types. */
    size_t (*reply_length)(const keel_reply *r);
    /* Element i of an ARRAY or SET; of a MAP, key i/2 for even i and its
     * value for odd i (i < 2 * length). NULL out of range. */
    const keel_reply *(*reply_element)(const keel_reply *r, size_t i);
    /* The KEEL_CMD_* flags of command name ("config|get" for a
     * subcommand), case-insensitive, into *flags. KEEL_ERR if there is no
     * such command. name is borrowed. */
    int (*command_flags)(const char *name, size_t len, uint32_t *flags);

    /* Long-running calls. A command that may run for long (a script) calls
     * busy_yield every few milliseconds of its work. Once the command has
     * run for busy-reply-threshold ms, the server serves the other clients
     * from inside busy_yield until the command ends: each of their commands
     * is answered with busy_error (copied; without '-', e.g. "BUSY ... You
     * can only call SCRIPT KILL or SHUTDOWN NOSAVE."), except commands
     * flagged allow-busy (the module's own SCRIPT KILL, which may then ask
     * the call to stop through the module's own state) and SHUTDOWN
     * NOSAVE. The calling client is not freed meanwhile. Returns KEEL_OK to
     * go on, KEEL_ERR when the command must stop at once (the server is
     * shutting down; a command still running at the next shutdown request
     * sees the server exit inside busy_yield). Main thread, inside a
     * command: from any other ctx (a callback's, a filter's) it does
     * nothing and returns KEEL_OK. */
    int (*busy_yield)(keel_ctx *ctx, const char *busy_error);
    /* 1 while some command is in its busy phase (from an allow-busy
     * command: whether there is anything to kill), else 0. */
    int (*busy_active)(void);
    /* The database index the running command's client has selected. */
    int (*db_index)(keel_ctx *ctx);
} keel_api_call;

/* Blocking clients: a module command parks its client and replies later. */
typedef struct keel_block_def {
    uint32_t size;      /* sizeof(keel_block_def) */
    int64_t timeout_ms; /* relative; 0: no timeout */
    /* After unblock(b, data): replies to the client through ctx. Main
     * thread. data is the module's (free it here). May be NULL: the client
     * gets a null and data goes to free_data. */
    void (*on_unblock)(keel_ctx *ctx, void *data, void *priv);
    /* The timeout passed, or CLIENT UNBLOCK ended the wait: replies through
     * ctx. NULL: a timeout replies a null, and CLIENT UNBLOCK (TIMEOUT or
     * ERROR) leaves the client waiting and answers 0, as Valkey. Main
     * thread. An unblock already queued wins over both: its on_unblock
     * replies. */
    void (*on_timeout)(keel_ctx *ctx, void *priv);
    /* With keys: a command changed one of them (or signal_key_ready named
     * it). Runs after that command, on the main thread, with ctx in the
     * blocked client's database; returns KEEL_OK when it replied (the
     * client is unblocked), KEEL_ERR to keep waiting. key is borrowed. */
    int (*on_key_ready)(keel_ctx *ctx, const char *key, size_t len, void *priv);
    int nkeys;               /* 0: no keys */
    const char *const *keys; /* copied */
    const size_t *key_lens;
    /* Called once the wait is over for any reason (served, timed out,
     * unblocked, client gone) and unblock has been called or is no longer
     * needed (see unblock). May be NULL. Main thread. b is invalid from
     * then on. */
    void (*free_priv)(void *priv);
    void *priv;
    /* Gets the data of an unblock whose on_unblock does not run (the
     * client timed out or went away first, or on_unblock is NULL), before
     * free_priv. May be NULL. Main thread. */
    void (*free_data)(void *data, void *priv);
} keel_block_def;

typedef struct keel_api_block {
    uint32_t size;
    /* Blocks the running command's client: the command returns without
     * replying, the client runs nothing else until the wait ends, and one
     * of the def's callbacks replies. NULL where a client cannot block
     * (inside MULTI/EXEC, a script or a call): the command then replies
     * itself (as if the timeout had passed). def is copied. Main thread. */
    keel_blocked *(*block)(keel_ctx *ctx, const keel_block_def *def);
    /* Ends the wait of b with data: on_unblock runs on the main thread
     * soon after (the event loop is woken). KEEL_ERR for a second call.
     * For a block without keys: any thread; call it exactly once even when
     * the client timed out or went away (then on_unblock is skipped, data
     * goes to free_data and free_priv runs); b is invalid afterwards. For
     * a block on keys it is optional and main thread only, since b goes
     * when the wait ends: valid until free_priv runs (right after
     * on_key_ready returned KEEL_OK, after on_timeout or on_unblock, or
     * when the client goes), which a module on the main thread sees. */
    int (*unblock)(keel_blocked *b, void *data);
    /* Marks key in ctx's database as ready, for values of a module type
     * (the server signals its own types): clients blocked on it get
     * on_key_ready after the running command. Main thread. */
    int (*signal_key_ready)(keel_ctx *ctx, const char *key, size_t len);
} keel_api_block;

/* Keyspace event classes, as notify-keyspace-events letters. */
#define KEEL_NOTIFY_GENERIC (1u << 0) /* g */
#define KEEL_NOTIFY_STRING (1u << 1)  /* $ */
#define KEEL_NOTIFY_LIST (1u << 2)    /* l */
#define KEEL_NOTIFY_SET (1u << 3)     /* s */
#define KEEL_NOTIFY_HASH (1u << 4)    /* h */
#define KEEL_NOTIFY_ZSET (1u << 5)    /* z */
#define KEEL_NOTIFY_EXPIRED (1u << 6) /* x */
#define KEEL_NOTIFY_EVICTED (1u << 7) /* e */
#define KEEL_NOTIFY_STREAM (1u << 8)  /* t */
#define KEEL_NOTIFY_KEY_MISS (1u << 9) /* m (never in "all") */
#define KEEL_NOTIFY_MODULE (1u << 10) /* d */
#define KEEL_NOTIFY_NEW (1u << 11)    /* n (never in "all") */
#define KEEL_NOTIFY_ALL 0x5ffu        /* g$lshzxet and d, as 'A' */

/* A keyspace event: cls is one KEEL_NOTIFY_* bit, event its name ("set",
 * "lpush", "expired"), key and event borrowed for the call. ctx is in the
 * event's database: the callback may read keys and must not write any.
 * Main thread. */
typedef void (*keel_notify_fn)(keel_ctx *ctx, uint32_t cls, const char *event, const char *key,
                               size_t len, void *priv);

typedef struct keel_api_events {
    uint32_t size;
    /* Calls fn for every keyspace event of the classes, whatever
     * notify-keyspace-events says (that directive governs pub/sub only).
     * Only during init. */
    int (*notify_subscribe)(keel_ctx *ctx, uint32_t classes, keel_notify_fn fn, void *priv);
    /* Announces an event on a key of ctx's database: subscribed modules
     * get it, and pub/sub subscribers as notify-keyspace-events allows
     * (class KEEL_NOTIFY_MODULE for a module type's own events). event
     * and key are borrowed. Main thread, inside a command or callback. */
    int (*notify_emit)(keel_ctx *ctx, uint32_t cls, const char *event, const char *key, size_t len);
} keel_api_events;

struct keel_api {
    uint32_t size;      /* sizeof(keel_api) as the server built it */
    uint32_t abi_major; /* the server's ABI */
    uint32_t abi_minor;
    const keel_api_core *core;
    const keel_api_command *command;
    const keel_api_keyspace *keyspace;
    const keel_api_hooks *hooks;
    const keel_api_info *info;
    const keel_api_transport *transport;
    /* ---- ABI 1.2 ---- */
    const keel_api_call *call;
    const keel_api_block *block;
    const keel_api_events *events;
    /* Groups added in later minor versions go here. */
};

#ifdef __cplusplus
}
#endif

#endif
