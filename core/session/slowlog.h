/* slowlog.h -- the command log (Valkey 8.1's COMMANDLOG) and SLOWLOG, the
 * alias of its slow log.
 *
 * Three logs, each of the last max-len commands whose measure reached its
 * threshold, newest first, with ids of their own:
 *   slow           execution time, microseconds
 *                  (commandlog-execution-slower-than, alias
 *                  slowlog-log-slower-than; commandlog-slow-execution-max-len,
 *                  alias slowlog-max-len)
 *   large-request  the request's bytes as the parser consumed them
 *                  (commandlog-request-larger-than, -large-request-max-len)
 *   large-reply    the bytes the command added to its reply
 *                  (commandlog-reply-larger-than, -large-reply-max-len)
 * A threshold of -1, or a max-len of 0, turns a log off; 0 logs every
 * command. An entry holds id, unix time, the measure, the arguments (at most
 * 32, each cut at 128 bytes with a note of the rest; secrets as
 * "(redacted)"), the client's address and name. Commands flagged
 * skip_slowlog (EXEC: its commands are logged instead) are left out. */
#ifndef KEEL_SLOWLOG_H
#define KEEL_SLOWLOG_H

#include <stddef.h>
#include <stdint.h>

#include "session/client.h"

/* The logs, in the order of session_options.commandlog. */
#define COMMANDLOG_SLOW 0
#define COMMANDLOG_LARGE_REQUEST 1
#define COMMANDLOG_LARGE_REPLY 2
#define COMMANDLOG_TYPES 3

/* Logs c's command (c->argv) where it reaches a log's threshold. */
void commandlog_push(client *c, uint64_t us, size_t request_bytes, size_t reply_bytes);
void slowlog_teardown(void);

/* SLOWLOG subcommands: the slow log. */
void slowlog_get_command(client *c);
void slowlog_len_command(client *c);
void slowlog_reset_command(client *c);
void slowlog_help_command(client *c);
/* COMMANDLOG subcommands. */
void commandlog_get_command(client *c);
void commandlog_len_command(client *c);
void commandlog_reset_command(client *c);
void commandlog_help_command(client *c);

#endif
