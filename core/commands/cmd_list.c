/* cmd_list.c -- the list command family. */
#include "commands/commands.h"

const command_family commands_list = {NULL, 0};
