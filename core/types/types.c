/* types.c -- registers the aggregate types' operations with the keyspace. */
#include "types/types.h"

#include "types/zset.h"

void types_setup(void) {
    zset_type_setup();
}

void types_teardown(void) {}
