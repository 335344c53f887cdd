/* cmd_ops.c -- the operator's commands: MONITOR, LATENCY and COMMANDLOG.
 * Their state lives in the session layer (monitor.c, latency.c,
 * slowlog.c); CLIENT PAUSE and UNPAUSE are in the CLIENT table
 * (cmd_server.c, bodies in pause.c). */
#include "commands/commands.h"

#include "common/common.h"
#include "session/latency.h"
#include "session/monitor.h"
#include "session/slowlog.h"
#include "session/reply.h"

#define OPS_CMD(n, p, a, f, s, v)                                                                  \
    { .name = n, .proc = p, .arity = a, .flags = f, .group = "server", .summary = s, .since = v }

#define SUB(n, p, a, f, s)                                                                         \
    { .name = n, .proc = p, .arity = a, .flags = f, .summary = s }
#define SUB_END                                                                                    \
    { .name = NULL }
#define ADMIN_SUB (CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE)

static command latency_subcommands[] = {
    SUB("latest", latency_latest_command, 2, ADMIN_SUB,
        "Returns the latest latency samples for all events."),
    SUB("history", latency_history_command, 3, ADMIN_SUB,
        "Returns timestamp-latency samples for an event."),
    SUB("reset", latency_reset_command, -2, ADMIN_SUB,
        "Resets the latency data for one or more events."),
    SUB("graph", latency_graph_command, 3, ADMIN_SUB, "Returns a latency graph for an event."),
    SUB("doctor", latency_doctor_command, 2, ADMIN_SUB,
        "Returns a human-readable latency analysis report."),
    SUB("histogram", latency_histogram_command, -2, ADMIN_SUB,
        "Returns the cumulative distribution of latencies of a subset or all commands."),
    SUB("help", latency_help_command, 2, CMD_LOADING | CMD_STALE,
        "Returns helpful text about the different subcommands."),
    SUB_END,
};

static command commandlog_subcommands[] = {
    SUB("get", commandlog_get_command, 4, CMD_ADMIN | CMD_LOADING | CMD_STALE,
        "Returns the specified command log's entries."),
    SUB("len", commandlog_len_command, 3, CMD_ADMIN | CMD_LOADING | CMD_STALE,
        "Returns the number of entries in the specified type of command log."),
    SUB("reset", commandlog_reset_command, 3, CMD_ADMIN | CMD_LOADING | CMD_STALE,
        "Clears all entries from the specified type of command log."),
    SUB("help", commandlog_help_command, 2, CMD_LOADING | CMD_STALE,
        "Show helpful text about the different subcommands."),
    SUB_END,
};

static command ops_table[] = {
    OPS_CMD("monitor", monitor_command, 1, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
            "Listens for all requests received by the server in real-time.", "1.0.0"),
    {.name = "latency",
     .arity = -2,
     .group = "server",
     .since = "2.8.13",
     .summary = "A container for latency diagnostics commands.",
     .subcommands = latency_subcommands},
    {.name = "commandlog",
     .arity = -2,
     .group = "server",
     .since = "8.1.0",
     .summary = "A container for command log commands.",
     .subcommands = commandlog_subcommands},
};

const command_family commands_ops = {ops_table, K_ARRAY_LEN(ops_table)};
