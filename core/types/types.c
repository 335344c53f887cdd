/* types.c -- registers the aggregate types' operations with the keyspace. */
#include "types/types.h"

#include "types/hash.h"
#include "types/list.h"
#include "types/set.h"
#include "types/stream.h"
#include "types/stream_cgroup.h"
#include "types/zset.h"

METRICS_DESCS(types_metric_descs, types_metrics, TYPES_METRICS);

void types_setup(types_metrics *m) {
    hash_type_setup(m);
    list_type_setup();
    set_type_setup();
    stream_type_setup();
    scg_setup();
    zset_type_setup();
}

void types_teardown(void) {
    hash_type_teardown();
}

/* Fields looked at per cron tick: at the default hz of 10, 10k a second,
 * a fraction of a millisecond each time. */
#define TYPES_EXPIRE_BUDGET 1000

void types_active_expire(int64_t now_ms) {
    hash_active_expire(now_ms, TYPES_EXPIRE_BUDGET);
}
