/* cmd_zset.c -- the zset command family. */
#include "commands/commands.h"

const command_family commands_zset = {NULL, 0};
