/* pm_internal.h -- what the files of the payload-metrics module share.
 *
 *   payload_metrics.c  entry point, configs, the observer (the hot path),
 *                      per-command table, sliding window, INFO, commands
 *   pm_hist.c          bucket bounds, names, quantiles (pure)
 *   pm_log.c           large-request / large-reply log, argument capture
 *   pm_prom.c          the Prometheus text exposition of /metrics
 *   pm_http.c          the optional HTTP listener serving /metrics
 *   pm_util.c          a growable byte buffer
 *
 * Threads: the module starts none. Everything runs on the server's main
 * thread: the observer and filter (after / before every command), the cron
 * hook, the HTTP poll timer, INFO and the commands. Counters are therefore
 * plain integers with a single writer and no lock; see pm_cmd for how
 * they would be split per thread if observers ever run elsewhere.
 *
 * Memory: everything is allocated with api->core->alloc (counted in
 * used_memory) and only after init has returned, so a load that the server
 * refuses after init (e.g. an unknown MODULE LOADEX CONFIG name, where
 * deinit is not called) leaves nothing behind. */
#ifndef PM_INTERNAL_H
#define PM_INTERNAL_H

#include <keel/keel_module.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "pm_hist.h"

#define PM_MODULE_NAME "payload-metrics"
#define PM_MODULE_VERSION 10000 /* 1.0.0 */
#define PM_VERSION_STRING "1.0.0"

#define PM_LIKELY(x) __builtin_expect(!!(x), 1)
#define PM_UNLIKELY(x) __builtin_expect(!!(x), 0)

extern const keel_api *pm_api;
extern keel_ctx *pm_ctx; /* the init context: valid until unload */

/* ---- a growable byte buffer (pm_util.c) ---- */

typedef struct pm_buf {
    char *p;
    size_t len, cap;
} pm_buf;

void pm_buf_append(pm_buf *b, const char *s, size_t n);
void pm_buf_printf(pm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pm_buf_free(pm_buf *b);
char *pm_strdup(const char *s);
char *pm_strndup(const char *s, size_t n);

/* ---- statistics (payload_metrics.c) ---- */

/* pm_cmd.flags: what the observer must do besides counting (rare). */
#define PM_CMD_NOT_OVERALL (1u << 0) /* EXEC: its commands are counted one by one */
#define PM_CMD_FLUSH (1u << 1)       /* MODULE LOAD/UNLOAD: command names change */

/* One command's histograms since start or the last reset. These are the
 * only counters the request path writes; the overall histograms are their
 * sum, computed when read (INFO, a scrape, the once-a-second window
 * snapshot), which keeps the observer to four increments.
 *
 * Threads: every counter has one writer, the thread that runs the
 * observer: the main thread in this Keel version, so the counters are
 * plain integers and nothing takes a lock. Should observers run on I/O
 * threads, each thread would own a command table (and pointer cache) of
 * its own, and readers would add the tables up by name with pm_hist_add:
 * still no lock on the request path. */
typedef struct pm_cmd {
    char *name;      /* our copy: "get", "config|set" */
    unsigned flags;  /* PM_CMD_* */
    uint64_t failed; /* calls that replied with an error */
    pm_hist req, rep;
    struct pm_cmd *next; /* every command, in order of first call */
} pm_cmd;

/* Per-second snapshots of the overall histograms: the sliding window is the
 * difference between now and the snapshot window-seconds ago. */
typedef struct pm_snap {
    pm_hist req, rep;
} pm_snap;

typedef struct pm_state {
    /* configs */
    long long window_s;
    uint64_t req_threshold, rep_threshold;
    long long req_log_max, rep_log_max;
    int log_args;
    int prom_port;
    char prom_bind[64];
    int prom_per_cmd;

    uint64_t large_req;     /* requests at or over request-larger-than */
    uint64_t large_rep;     /* replies at or over reply-larger-than */
    uint64_t min_threshold; /* min(req_threshold, rep_threshold) */
    int filter_added;       /* the argument-capturing filter is registered */
    pm_cmd *cmds;           /* every command seen, first-call order */
    size_t ncmds;
    pm_cmd **table; /* open addressing by name hash */
    size_t table_cap;

    /* sliding window: ring[s % ring_len] is the snapshot taken at second s */
    pm_snap *ring;
    long long ring_len; /* window_s + 1 */
    int64_t ring_first; /* first second snapshotted since the last restart */
    int64_t ring_last;  /* last second snapshotted; -1 before the first */

    /* clients and connections seen by client events since load */
    uint64_t connects, closes_tracked, closes_untracked, auths;
    uint64_t first_client_id; /* id of the first client that connected after load */

    int64_t loaded_ms;
} pm_state;

extern pm_state pm;

/* The overall histograms: every command but EXEC, since start or reset. */
void pm_overall(pm_hist *req, pm_hist *rep, uint64_t *failed);
/* The overall window histograms (now minus window-seconds ago). */
void pm_window(pm_hist *req, pm_hist *rep, long long *seconds);
/* Sum of the per-command call counts (all commands, EXEC included). */
uint64_t pm_commands_total(void);

/* ---- the large-request / large-reply log (pm_log.c) ---- */

#define PM_LOG_REQUEST 0
#define PM_LOG_REPLY 1

void pm_log_capture(keel_ctx *ctx, const char *name); /* from the filter */
void pm_log_record(int type, const keel_call_info *ci, uint64_t size);
void pm_log_trim(int type, long long max_len);
long long pm_log_len(int type);
uint64_t pm_log_next_id(int type);
void pm_log_free_all(void);
void pm_cmd_log(keel_ctx *ctx); /* PAYLOAD.LOG */

/* ---- Prometheus exposition (pm_prom.c) ---- */

void pm_prom_render(pm_buf *b);

/* ---- HTTP listener (pm_http.c) ---- */

/* Checks that addr:port can be bound (closes it again); err gets a
 * message. */
int pm_http_probe(const char *addr, int port, char *err, size_t errlen);
/* Opens (or re-opens) the listener on addr:port, or closes it for port 0.
 * KEEL_ERR with a message in err if it cannot bind. */
int pm_http_configure(const char *addr, int port, char *err, size_t errlen);
/* During init: remembers addr:port and opens the listener on the first
 * tick of the poll timer, after the load is final. */
int pm_http_start_later(const char *addr, int port);
/* Forgets any state a previous instance of the object left (init). */
void pm_http_reset_state(void);
/* True if addr parses as a bind address ("*", "::*", a numeric address). */
int pm_http_addr_valid(const char *addr, char *err, size_t errlen);
/* Closes the listener and every connection. */
void pm_http_shutdown(void);
int pm_http_listening(void);
uint64_t pm_http_requests(void);
uint64_t pm_http_open_conns(void);

#endif
