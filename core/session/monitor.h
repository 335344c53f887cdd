/* monitor.h -- MONITOR: every command a client runs, shown to the monitoring
 * clients as one status line each, in Valkey's format:
 *
 *     +<unix secs>.<usec> [<db> <addr>] "arg" "arg" ...
 *
 * where addr is the peer's ip:port, "unix:<path>" for a unix socket, the
 * calling module's name for a module's call (as Valkey shows "lua"), or
 * "?:0" for another connection-less client; arguments are
 * quoted and escaped as Valkey's sdscatrepr does, secrets (AUTH, HELLO ...
 * AUTH) as "(redacted)".
 *
 * call() feeds a command after it ran, so a transaction shows as MULTI,
 * its commands, then EXEC; a blocked command is shown once, when it first
 * runs (not when a rerun serves it). Admin commands and those flagged
 * skip_monitor are not shown. A command that calls others (a module's, a
 * script) is shown before the first command it calls, as Valkey shows EVAL
 * before the script's commands. A monitor's output is bounded by the normal
 * client-output-buffer-limit: one that does not read is closed there.
 *
 * Threads: main thread. */
#ifndef KEEL_MONITOR_H
#define KEEL_MONITOR_H

#include "session/client.h"

/* c is in MONITOR mode (CLIENT LIST flag O). */
#define CLIENT_MONITOR (1u << 24)

/* Any monitor at all: call() tests this before building a line. */
int monitor_active(void);
/* Shows c's current command (c->argv, its db now) to every monitor. */
void monitor_feed(client *c);
/* Shows c's command now, before the commands it calls, unless it was
 * already or is not shown at all (admin, skip_monitor); call() then does
 * not show it again. Only from inside c's call(), which ends it. */
void monitor_feed_early(client *c);
/* 1 (once) if c's command was shown by monitor_feed_early. */
int monitor_fed_early(client *c);
/* c leaves MONITOR mode (RESET, or c is being freed). */
void monitor_forget(client *c);
/* The MONITOR command. */
void monitor_command(client *c);
void monitor_teardown(void);

#endif
