/* types.c -- registers the aggregate types' operations with the keyspace. */
#include "types/types.h"

#include "types/set.h"

void types_setup(void) {
    set_type_setup();
}

void types_teardown(void) {}
