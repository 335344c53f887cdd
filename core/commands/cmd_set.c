/* cmd_set.c -- the set command family. */
#include "commands/commands.h"

const command_family commands_set = {NULL, 0};
