/* latency.h -- the latency monitor (LATENCY LATEST, HISTORY, RESET, GRAPH,
 * DOCTOR) and the per-command latency histograms (LATENCY HISTOGRAM, INFO
 * latencystats).
 *
 * The monitor keeps, per event, the last 160 seconds that had a spike: a
 * sample is recorded when something took at least
 * latency-monitor-threshold milliseconds (0: the monitor is off), one
 * sample per event and second (the worst of that second), with the event's
 * all-time maximum. Keel's events, named as Valkey's: "command" and
 * "fast-command" (call(): a command, by its fast flag), "expire-cycle"
 * (the cron's active expiry) and "eviction-cycle" (a maxmemory check that
 * evicted).
 *
 * With latency-tracking on (the default) call() adds every command's
 * duration to its command's histogram (ds/histogram.h), allocated at its
 * first call and freed by CONFIG RESETSTAT; INFO latencystats shows the
 * latency-tracking-info-percentiles of each, LATENCY HISTOGRAM their
 * cumulative counts at powers of two microseconds, as Valkey.
 *
 * Threads: main thread. */
#ifndef KEEL_LATENCY_H
#define KEEL_LATENCY_H

#include <stdint.h>

#include "common/sbuf.h"
#include "session/client.h"

#define LATENCY_HISTORY_LEN 160

/* Records ms for event when it reaches latency-monitor-threshold. */
void latency_sample(const char *event, uint64_t ms);
/* call()'s part: the command's event sample and its histogram. */
void latency_record_command(command *cmd, uint64_t us);
/* INFO latencystats: one latency_percentiles_usec_<name> line per command
 * with a histogram. */
void latency_info(sbuf *out);
/* CONFIG RESETSTAT: every command's histogram goes. */
void latency_reset_histograms(void);
void latency_teardown(void);

/* LATENCY subcommands. */
void latency_latest_command(client *c);
void latency_history_command(client *c);
void latency_reset_command(client *c);
void latency_graph_command(client *c);
void latency_doctor_command(client *c);
void latency_histogram_command(client *c);
void latency_help_command(client *c);

#endif
