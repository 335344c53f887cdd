/* module_internal.h -- what the module system's files share: the server-side
 * structs behind the SDK's opaque handles, the per-area API groups, and the
 * release functions unload and rollback call.
 *
 * Files of core/module/:
 *   module.c           the registry, the loader (handshake checks, init,
 *                      rollback), unload, teardown, MODULE LIST data
 *   module_api.c       the keel_api table and its core group
 *   module_command.c   module commands, arguments and replies
 *   module_call.c      calling commands, reply trees, command flags by name
 *   module_keyspace.c  keys, custom data types, their object hooks
 *   module_hooks.c     filters, observers, client events, timers, cron, INFO
 *   module_config.c    `<module>.<name>` configuration parameters
 *   module_family.c    reserved config-name families (tls-, rdma-)
 *   module_transport.c connection types provided by modules: I/O, handshakes
 *   module_listener.c  their listening ports
 *   module_dial.c      their outgoing connections
 *   module_busy.c      long-running calls: busy_yield, busy_active
 *   module_block.c     blocking clients: block, unblock, signal_key_ready
 *   module_events.c    keyspace events: notify_subscribe, notify_emit
 *
 * Nothing here is visible to modules: they see only sdk/include/keel.
 *
 * Threads: main thread, except where a function says otherwise. */
#ifndef KEEL_MODULE_INTERNAL_H
#define KEEL_MODULE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "keel/keel_module.h"
#include "session/client.h"

typedef struct module module;

/* Phases of a context: registrations are accepted only in MODULE_PHASE_INIT. */
#define MODULE_PHASE_INIT 1
#define MODULE_PHASE_RUN 2

/* keel_ctx.flags. */
#define MODULE_CTX_MAY_BUSY (1u << 0)  /* a command's: busy_yield may start the busy phase */
#define MODULE_CTX_BUSY (1u << 1)      /* it did: module_ctx_done ends it */
#define MODULE_CTX_NO_WRITES (1u << 2) /* a keyspace event's: keys open read-only */
/* A call_flags hook's: it reads arguments only (no call, reply or key). */
#define MODULE_CTX_FLAGS_HOOK (1u << 3)

struct keel_ctx {
    module *mod;
    client *c; /* the client of a command or filter; NULL otherwise */
    int phase;
    /* 1 + the database the command's last call left selected; 0 before
     * its first call (module_call.c). */
    int call_db;
    int call_wrote; /* a call of the command ran a write */
    uint32_t flags; /* MODULE_CTX_* */
    db *db;         /* a ctx without a client in a database (a keyspace event's) */
};

/* The database a ctx acts in: its client's, its own, else db 0. */
db *module_ctx_db(const keel_ctx *ctx);
/* A ctx built by the server for a command or a callback is over: the
 * busy phase it started ends (module_busy.c). */
void module_ctx_done(keel_ctx *ctx);

struct module {
    char *name;
    uint32_t version;
    char *path;
    int argc;
    char **argv;
    void *handle;                 /* dlopen's */
    const keel_module_info *info; /* in the module's memory */
    int (*deinit)(keel_ctx *ctx);
    keel_ctx ctx;   /* given to init; lives until unload */
    char *error;    /* the last set_error() */
    int reg_failed; /* a registration failed during init */
    /* What the module registered is kept by each area's file, in lists of
     * records naming their module; unload releases them by owner. */
    module *next;
};

struct keel_type {
    module *mod;
    char name[10];
    int encver;
    void (*free)(void *value);
    size_t (*mem_usage)(const void *value);
    void *(*copy)(const void *value);
    long long live; /* values of this type stored in keys */
    keel_type *next;
};

/* Whether the caller is the main thread (for functions that refuse other
 * threads rather than assert). */
int module_on_main_thread(void);

/* Debug builds check the SDK's thread rule on every main-thread function. */
#ifndef NDEBUG
void module_assert_main_thread(void);
#define MODULE_ASSERT_MAIN() module_assert_main_thread()
#else
#define MODULE_ASSERT_MAIN() ((void)0)
#endif

/* Reports a failed registration: during init it fails the load (the first
 * message becomes the load error); later it is only logged. */
void module_reg_error(keel_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Copies a struct a module passed (whose first field is its uint32_t size)
 * into dst: the fields its size covers, zeroes after. Returns K_ERR if the
 * module's struct is smaller than min (the 1.0 layout). */
int module_copy_def(void *dst, size_t dst_size, const void *src, size_t min);
/* [a-z0-9_-]{1,max}: module, parameter and transport names. */
int module_name_valid(const char *s, size_t max);
int module_in_init(keel_ctx *ctx, const char *what);

/* The ABI edge: the SDK's constants are frozen ABI while the core's are its
 * own to renumber, so values cross by name, never by equal numbers
 * (call_keel_cmd_flags in session/call.h does the same for command flags).
 * A CALL_EVENT_* as its KEEL_CLIENT_*, or 0 for one the SDK does not have. */
int module_keel_client_event(int call_event);
/* A KEEL_LOG_* level as the core's LL_* (out-of-range levels clamp to the
 * nearest, as they always have). Any thread. */
int module_log_level(int keel_level);

/* The API groups, one per area. */
extern const keel_api_core module_api_core;
extern const keel_api_command module_api_command;
extern const keel_api_keyspace module_api_keyspace;
extern const keel_api_hooks module_api_hooks;
extern const keel_api_info module_api_info;
extern const keel_api_transport module_api_transport;
extern const keel_api_call module_api_call;
extern const keel_api_block module_api_block;
extern const keel_api_events module_api_events;
extern const keel_api module_api;

/* Unload and rollback: each area frees what the module registered. */
void module_commands_release(module *m);
void module_types_release(module *m);
/* Deletes every key holding a value of one of m's types. */
void module_purge_values(module *m);
long long module_live_values(const module *m);
void module_hooks_release(module *m);
void module_configs_release(module *m);
void module_transports_release(module *m);
/* Closes m's transport connections (before its deinit). */
void module_transports_close(module *m);
uint64_t module_open_conns(const module *m);
/* Blocked clients of m's not over yet (MODULE UNLOAD refuses while any). */
uint64_t module_blocked_count(const module *m);
/* Frees m's finished handles whose unblock never came (unload, shutdown:
 * deinit stopped its threads). */
void module_blocks_release(module *m);
void module_events_release(module *m);

/* The call group's long-running members (module_busy.c). */
int module_api_busy_yield(keel_ctx *ctx, const char *busy_error);
int module_api_busy_active(void);
/* The block group's event-loop wake-up (module_block.c); module_setup. */
void module_block_setup(void);
void module_block_teardown(void);

/* The info group's config_register (module_config.c). */
int module_api_config_register(keel_ctx *ctx, const keel_config_def *def);
/* Module configuration during a load: MODULE LOADEX CONFIG pairs. */
void module_config_begin_load(int ncfg, const char *const *cfg);
/* The first LOADEX name no parameter used, or NULL. */
const char *module_config_end_load(void);
/* After the start-up loads: a config-file value no module claimed is an
 * error naming its file and line. */
int module_config_check_pending(char **err);
void module_config_teardown(void);

/* Reserved config-name families (module_family.c). The module to load for
 * name's family, NULL if name is in none. */
const char *module_family_module(const char *name);
/* 1 if name's family is claimed (by m). */
int module_family_held(const char *name);
int module_family_held_by(const char *name, const module *m);
int module_api_config_claim_family(keel_ctx *ctx, const char *prefix);
void module_families_release(module *m);

#endif
