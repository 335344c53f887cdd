/* call.h -- running one command: timing, statistics, the slow log, and the
 * hooks modules attach around every command.
 *
 * Hooks are the seam for throttling and metrics modules: a filter runs
 * before execution and may refuse the command with an error; an observer
 * runs after it and sees the command, the client, its duration and the
 * request and reply sizes. With no hook registered the cost is one branch.
 *
 * Threads: main thread. */
#ifndef KEEL_CALL_H
#define KEEL_CALL_H

#include <stddef.h>
#include <stdint.h>

#include "keel/keel_module.h"
#include "session/client.h"

/* Observers get the SDK's keel_call_info, built once per command, and are
 * called directly: a module's observer is registered as it is, without a
 * trampoline copying one struct into another (that copy was a third of an
 * observer's cost on a pipelined GET). Its client is the core's client. */
typedef keel_call_info call_info;

/* The command flags observers and filters see: a command's CMD_* bits as the
 * SDK's KEEL_CMD_* bits. The SDK's values are frozen ABI while CMD_* are the
 * core's to renumber, so each bit is mapped by name, never by value; CMD_*
 * bits the SDK does not name are dropped. */
uint32_t call_keel_cmd_flags(uint32_t cmd_flags);
/* The reverse: KEEL_CMD_* bits as CMD_* (a module's flags). */
uint32_t call_cmd_flags_from_keel(uint32_t keel_flags);

/* Returns NULL to let the command run, or an error message (without '-')
 * that is sent instead. The string must stay valid until the next filter
 * call from this hook. */
typedef const char *(*call_filter_fn)(client *c, command *cmd, void *priv);
typedef keel_observer_fn call_observer_fn;

#define CALL_EVENT_CONNECT 1
#define CALL_EVENT_AUTH 2
#define CALL_EVENT_CLOSE 3
typedef void (*call_client_event_fn)(client *c, int event, void *priv);

int call_add_filter(call_filter_fn fn, void *priv, void *owner);
int call_add_observer(call_observer_fn fn, void *priv, void *owner);
int call_add_client_event(call_client_event_fn fn, void *priv, void *owner);
/* Removes every hook owned by owner (module unload). */
void call_remove_owner(void *owner);

/* Runs filters; returns the refusal of the first that refuses, or NULL. */
const char *call_filters(client *c);
void call_client_event(client *c, int event);

/* Executes c->cmd with c->argv. */
void call(client *c);
/* How many calls are running (0 between commands, 2 inside EXEC's). */
int call_executing(void);
/* The time a command sees (unix us): now, or inside EXEC, a script or a
 * module's call, when the outermost command started (TIME). */
uint64_t call_time_us(void);

void call_teardown(void);

#endif
