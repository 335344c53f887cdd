/* types.c -- registers the aggregate types' operations with the keyspace. */
#include "types/types.h"

#include "types/list.h"

void types_setup(void) {
    list_type_setup();
}

void types_teardown(void) {}
