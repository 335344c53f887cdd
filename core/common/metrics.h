/* metrics.h -- counters declared once, as a list, by the subsystem that
 * owns them (Pelikan's model): the list builds the struct of counters and a
 * table of (name, offset) from which INFO prints them and CONFIG RESETSTAT
 * clears them, so a statistic's name is written in one place.
 *
 *   #define FOO_METRICS(X, T) X(T, requests) X(T, errors)
 *   METRICS_STRUCT(foo_metrics, FOO_METRICS);                (foo.h)
 *   extern const metric_desc foo_metric_descs[];             (foo.h)
 *   extern const size_t foo_metric_descs_count;              (foo.h)
 *   METRICS_DESCS(foo_metric_descs, foo_metrics, FOO_METRICS); (foo.c)
 *
 * Counters are long long, written on the main thread. */
#ifndef KEEL_METRICS_H
#define KEEL_METRICS_H

#include <stddef.h>
#include <string.h>

typedef struct metric_desc {
    const char *name;
    size_t offset; /* of the long long in the metrics struct */
} metric_desc;

#define METRICS_FIELD_(T, name) long long name;
#define METRICS_DESC_(T, name) {#name, offsetof(T, name)},

#define METRICS_STRUCT(type, LIST)                                                                 \
    typedef struct type {                                                                          \
        LIST(METRICS_FIELD_, type)                                                                 \
    } type

#define METRICS_DESCS(descs, type, LIST)                                                           \
    const metric_desc descs[] = {LIST(METRICS_DESC_, type)};                                       \
    const size_t descs##_count = sizeof(descs) / sizeof(descs[0])

static inline long long metric_get(const void *metrics, const metric_desc *d) {
    return *(const long long *)((const char *)metrics + d->offset);
}

/* A group of counters as a subsystem hands it to INFO and RESETSTAT. */
typedef struct metric_group {
    void *metrics;
    const metric_desc *descs;
    size_t count;
} metric_group;

static inline void metric_group_reset(const metric_group *g) {
    for (size_t i = 0; i < g->count; i++)
        *(long long *)((char *)g->metrics + g->descs[i].offset) = 0;
}

#endif
