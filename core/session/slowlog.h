/* slowlog.h -- SLOWLOG: commands slower than slowlog-log-slower-than. */
#ifndef KEEL_SLOWLOG_H
#define KEEL_SLOWLOG_H

#include <stdint.h>

#include "session/client.h"

void slowlog_push(client *c, uint64_t us);
/* SLOWLOG subcommands. */
void slowlog_get_command(client *c);
void slowlog_len_command(client *c);
void slowlog_reset_command(client *c);
void slowlog_help_command(client *c);
void slowlog_teardown(void);

#endif
