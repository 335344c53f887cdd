/* cmd_ops.c -- the operator's commands: MONITOR, LATENCY and COMMANDLOG.
 * Their state lives in the session layer (monitor.c, latency.c,
 * slowlog.c); CLIENT PAUSE and UNPAUSE are in the CLIENT table
 * (cmd_server.c, bodies in pause.c). */
#include "commands/commands.h"

#include "common/common.h"
#include "session/monitor.h"
#include "session/reply.h"

#define OPS_CMD(n, p, a, f, s, v)                                                                  \
    { .name = n, .proc = p, .arity = a, .flags = f, .group = "server", .summary = s, .since = v }

static command ops_table[] = {
    OPS_CMD("monitor", monitor_command, 1, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
            "Listens for all requests received by the server in real-time.", "1.0.0"),
};

const command_family commands_ops = {ops_table, K_ARRAY_LEN(ops_table)};
