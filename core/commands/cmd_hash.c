/* cmd_hash.c -- the hash command family. */
#include "commands/commands.h"

const command_family commands_hash = {NULL, 0};
