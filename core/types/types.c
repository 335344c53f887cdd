/* types.c -- registers the aggregate types' operations with the keyspace. */
#include "types/types.h"

void types_setup(void) {}

void types_teardown(void) {}
