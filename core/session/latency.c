/* latency.c -- the latency monitor's event series and the per-command
 * histograms (see latency.h). */
#include "session/latency.h"

#include "common/common.h"
#include "common/kmem.h"
#include "ds/histogram.h"
#include "session/reply.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* A few events exist; a small array searched by name is enough. */
#define LATENCY_EVENTS_MAX 16
#define LATENCY_GRAPH_ROWS 4
#define LATENCY_GRAPH_COLS 80

typedef struct latency_point {
    int64_t time; /* unix seconds; 0: unused */
    uint32_t ms;
} latency_point;

typedef struct latency_series {
    char name[32];
    int next; /* where the next second's sample goes */
    uint32_t max;
    latency_point points[LATENCY_HISTORY_LEN];
} latency_series;

static latency_series *series[LATENCY_EVENTS_MAX];
static int series_count;

static latency_series *latency_find(const char *name, size_t len) {
    for (int i = 0; i < series_count; i++)
        if (strlen(series[i]->name) == len && !strncasecmp(series[i]->name, name, len))
            return series[i];
    return NULL;
}

void latency_sample(const char *event, uint64_t ms) {
    long long threshold = session_opts()->latency_monitor_threshold;
    if (!threshold || (long long)ms < threshold) return;
    latency_series *s = latency_find(event, strlen(event));
    if (!s) {
        if (series_count == LATENCY_EVENTS_MAX) return;
        s = km_calloc(1, sizeof(*s));
        snprintf(s->name, sizeof(s->name), "%s", event);
        series[series_count++] = s;
    }
    uint32_t v = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
    if (v > s->max) s->max = v;
    int64_t now = event_cached_ms() / 1000;
    latency_point *prev = &s->points[(s->next + LATENCY_HISTORY_LEN - 1) % LATENCY_HISTORY_LEN];
    if (prev->time == now) { /* one sample a second: its worst */
        if (v > prev->ms) prev->ms = v;
        return;
    }
    s->points[s->next] = (latency_point){now, v};
    s->next = (s->next + 1) % LATENCY_HISTORY_LEN;
}

void latency_record_command(command *cmd, uint64_t us) {
    if (session_opts()->latency_monitor_threshold)
        latency_sample((cmd->flags & CMD_FAST) ? "fast-command" : "command", us / 1000);
    if (!session_opts()->latency_tracking) return;
    if (!cmd->latency_hist) cmd->latency_hist = km_calloc(1, sizeof(histogram));
    /* Nanoseconds, at least 1, as Valkey's histograms count them. */
    hist_add(cmd->latency_hist, us ? us * 1000 : 1);
}

/* ---- INFO latencystats ---- */

/* "%f" without trailing zeros: 50, 99.9. */
static void latency_format_percentile(char *buf, size_t len, double p) {
    int n = snprintf(buf, len, "%f", p);
    if (n <= 0 || !strchr(buf, '.')) return;
    while (n > 0 && buf[n - 1] == '0')
        buf[--n] = '\0';
    if (n > 0 && buf[n - 1] == '.') buf[--n] = '\0';
}

static void latency_info_one(command *cmd, void *priv) {
    sbuf *out = priv;
    if (!cmd->latency_hist) return;
    sbuf_appendf(out, "latency_percentiles_usec_%s:", cmd->fullname ? cmd->fullname : cmd->name);
    const session_options *o = session_opts();
    for (int i = 0; i < o->latency_percentiles_count; i++) {
        char p[64];
        latency_format_percentile(p, sizeof(p), o->latency_percentiles[i]);
        double v = (double)hist_percentile(cmd->latency_hist, o->latency_percentiles[i]) / 1000.0;
        sbuf_appendf(out, "%sp%s=%.3f", i ? "," : "", p, v);
    }
    sbuf_append(out, "\r\n", 2);
}

void latency_info(sbuf *out) {
    command_foreach_all(latency_info_one, out);
}

static void latency_free_hist(command *cmd, void *priv) {
    K_UNUSED(priv);
    command_free_latency(cmd);
}

void latency_reset_histograms(void) {
    command_foreach_all(latency_free_hist, NULL);
}

void latency_teardown(void) {
    for (int i = 0; i < series_count; i++)
        km_free(series[i]);
    series_count = 0;
}

/* ---- LATENCY ---- */

void latency_latest_command(client *c) {
    reply_array(c, series_count);
    for (int i = 0; i < series_count; i++) {
        latency_series *s = series[i];
        latency_point *last = &s->points[(s->next + LATENCY_HISTORY_LEN - 1) % LATENCY_HISTORY_LEN];
        reply_array(c, 4);
        reply_bulk_cstr(c, s->name);
        reply_int(c, last->time);
        reply_int(c, last->ms);
        reply_int(c, s->max);
    }
}

/* The series' points, oldest first. */
static int latency_points(const latency_series *s, latency_point *out) {
    int n = 0;
    for (int j = 0; j < LATENCY_HISTORY_LEN; j++) {
        const latency_point *p = &s->points[(s->next + j) % LATENCY_HISTORY_LEN];
        if (p->time) out[n++] = *p;
    }
    return n;
}

void latency_history_command(client *c) {
    latency_series *s = latency_find(c->argv[2].ptr, c->argv[2].len);
    latency_point pts[LATENCY_HISTORY_LEN];
    int n = s ? latency_points(s, pts) : 0;
    reply_array(c, n);
    for (int i = 0; i < n; i++) {
        reply_array(c, 2);
        reply_int(c, pts[i].time);
        reply_int(c, pts[i].ms);
    }
}

static int latency_reset_event(const char *name, size_t len) {
    int resets = 0;
    for (int i = 0; i < series_count;) {
        if (name && !(strlen(series[i]->name) == len && !strncasecmp(series[i]->name, name, len))) {
            i++;
            continue;
        }
        km_free(series[i]);
        series[i] = series[--series_count];
        resets++;
    }
    return resets;
}

void latency_reset_command(client *c) {
    int resets = 0;
    if (c->argc == 2) resets = latency_reset_event(NULL, 0);
    for (int i = 2; i < c->argc; i++)
        resets += latency_reset_event(c->argv[i].ptr, c->argv[i].len);
    reply_int(c, resets);
}

/* "12s", "3m", "2h", "1d": how long ago. */
static void latency_age(char *buf, size_t len, int64_t secs) {
    if (secs < 60)
        snprintf(buf, len, "%llds", (long long)secs);
    else if (secs < 3600)
        snprintf(buf, len, "%lldm", (long long)(secs / 60));
    else if (secs < 86400)
        snprintf(buf, len, "%lldh", (long long)(secs / 3600));
    else
        snprintf(buf, len, "%lldd", (long long)(secs / 86400));
}

/* The graph: a title with high, low and all-time high; a bar per sample
 * (the newest LATENCY_GRAPH_COLS), LATENCY_GRAPH_ROWS tall, scaled from
 * the low to the high; under each bar its age written downwards. */
static void latency_graph(const latency_series *s, sbuf *out) {
    latency_point pts[LATENCY_HISTORY_LEN];
    int n = latency_points(s, pts), from = n > LATENCY_GRAPH_COLS ? n - LATENCY_GRAPH_COLS : 0;
    uint32_t lo = 0, hi = 0;
    for (int i = from; i < n; i++) {
        if (i == from || pts[i].ms < lo) lo = pts[i].ms;
        if (pts[i].ms > hi) hi = pts[i].ms;
    }
    sbuf_appendf(out, "%s - high %lu ms, low %lu ms (all time high %lu ms)\n", s->name,
                 (unsigned long)hi, (unsigned long)lo, (unsigned long)s->max);
    for (int i = 0; i < LATENCY_GRAPH_COLS; i++)
        sbuf_append(out, "-", 1);
    sbuf_append(out, "\n", 1);
    for (int row = LATENCY_GRAPH_ROWS; row >= 1; row--) {
        for (int i = from; i < n; i++) {
            /* Bar height 1..ROWS: the low sample gets 1, the high ROWS. */
            uint32_t h = hi == lo ? LATENCY_GRAPH_ROWS
                                  : 1 + (uint32_t)((uint64_t)(pts[i].ms - lo) *
                                                   (LATENCY_GRAPH_ROWS - 1) / (hi - lo));
            sbuf_append(out, h >= (uint32_t)row ? "#" : " ", 1);
        }
        sbuf_append(out, "\n", 1);
    }
    char ages[LATENCY_GRAPH_COLS][24];
    size_t longest = 0;
    int64_t now = event_cached_ms() / 1000;
    for (int i = from; i < n; i++) {
        latency_age(ages[i - from], sizeof(ages[0]), now - pts[i].time);
        size_t l = strlen(ages[i - from]);
        if (l > longest) longest = l;
    }
    for (size_t row = 0; row < longest; row++) {
        for (int i = from; i < n; i++) {
            const char *a = ages[i - from];
            sbuf_append(out, row < strlen(a) ? &a[row] : " ", 1);
        }
        sbuf_append(out, "\n", 1);
    }
}

void latency_graph_command(client *c) {
    latency_series *s = latency_find(c->argv[2].ptr, c->argv[2].len);
    if (!s) {
        reply_errorf(c, "ERR No samples available for event '%.*s'",
                     (int)(c->argv[2].len > 128 ? 128 : c->argv[2].len), c->argv[2].ptr);
        return;
    }
    sbuf out = {0};
    latency_graph(s, &out);
    reply_verbatim(c, out.data, out.len, "txt");
    km_free(out.data);
}

/* The doctor's figures for one event: its samples' count, average, mean
 * absolute deviation and the seconds they span. */
static void latency_doctor_event(const latency_series *s, int index, sbuf *out) {
    latency_point pts[LATENCY_HISTORY_LEN];
    int n = latency_points(s, pts);
    uint64_t sum = 0, dev = 0;
    for (int i = 0; i < n; i++)
        sum += pts[i].ms;
    uint64_t avg = n ? sum / (uint64_t)n : 0;
    for (int i = 0; i < n; i++)
        dev += pts[i].ms > avg ? pts[i].ms - avg : avg - pts[i].ms;
    int64_t period = n ? event_cached_ms() / 1000 - pts[0].time : 0;
    sbuf_appendf(out,
                 "%d. %s: %d latency spikes (average %llums, mean deviation %llums, period %lld "
                 "sec). Worst all time event %lums.\n",
                 index, s->name, n, (unsigned long long)avg,
                 (unsigned long long)(n ? dev / (uint64_t)n : 0), (long long)(period ? period : 1),
                 (unsigned long)s->max);
}

void latency_doctor_command(client *c) {
    sbuf out = {0};
    long long threshold = session_opts()->latency_monitor_threshold;
    if (!series_count && !threshold) {
        sbuf_appendf(
            &out, "The latency monitor is off: no spike was recorded. Turn it on with CONFIG SET "
                  "latency-monitor-threshold <milliseconds>.\n");
    } else if (!series_count) {
        sbuf_appendf(&out,
                     "No latency spike of %lld ms or more was observed since the last reset.\n",
                     threshold);
    } else {
        sbuf_appendf(&out, "Latency spikes observed (threshold %lld ms):\n\n", threshold);
        for (int i = 0; i < series_count; i++)
            latency_doctor_event(series[i], i + 1, &out);
        sbuf_appendf(&out, "\nAdvice:\n");
        if (latency_find("command", 7) || latency_find("fast-command", 12))
            sbuf_appendf(&out,
                         "- Slow commands were seen: SLOWLOG GET (COMMANDLOG GET <count> slow) "
                         "names them; avoid O(N) commands on big values.\n");
        if (latency_find("expire-cycle", 12))
            sbuf_appendf(&out,
                         "- Many keys expired at once: spread the TTLs of keys set together.\n");
        if (latency_find("eviction-cycle", 14))
            sbuf_appendf(&out,
                         "- Eviction took long: raise maxmemory or lower the write rate of big "
                         "values.\n");
    }
    reply_verbatim(c, out.data, out.len, "txt");
    km_free(out.data);
}

/* {calls: N, histogram_usec: {bucket: cumulative count}}: the buckets are
 * 1024 ns doubled each time, named by their highest microsecond as
 * Valkey's; only those where the count grows. */
static void latency_reply_histogram(client *c, const command *cmd) {
    const histogram *h = cmd->latency_hist;
    reply_bulk_cstr(c, cmd->fullname ? cmd->fullname : cmd->name);
    reply_map(c, 2);
    reply_bulk_cstr(c, "calls");
    reply_int(c, (long long)h->total);
    reply_bulk_cstr(c, "histogram_usec");
    reply_deferred d = reply_deferred_map(c);
    long long n = 0;
    uint64_t prev = 0;
    for (int k = 0; prev < h->total && (1024ull << k) <= (HIST_MAX_VALUE + 1); k++) {
        uint64_t limit = 1024ull << k, below = hist_count_below(h, limit);
        if (limit == HIST_MAX_VALUE + 1) below = h->total;
        if (below > prev) {
            reply_int(c, (long long)((limit - 1) / 1000));
            reply_int(c, (long long)below);
            n++;
        }
        prev = below;
    }
    reply_set_deferred_len(c, d, n);
}

typedef struct histogram_walk {
    client *c;
    long long n;
} histogram_walk;

static void latency_histogram_one(command *cmd, void *priv) {
    histogram_walk *w = priv;
    if (!cmd->latency_hist) return;
    latency_reply_histogram(w->c, cmd);
    w->n++;
}

/* "client" or "client|id": a command, or a container's subcommand. */
static command *latency_lookup(const karg *a) {
    const char *bar = memchr(a->ptr, '|', a->len);
    if (!bar) return command_lookup(a->ptr, a->len);
    command *base = command_lookup(a->ptr, (size_t)(bar - a->ptr));
    return base ? command_lookup_sub(base, bar + 1, a->len - (size_t)(bar - a->ptr) - 1) : NULL;
}

void latency_histogram_command(client *c) {
    histogram_walk w = {c, 0};
    reply_deferred d = reply_deferred_map(c);
    if (c->argc == 2) command_foreach_all(latency_histogram_one, &w);
    for (int i = 2; i < c->argc; i++) {
        command *cmd = latency_lookup(&c->argv[i]);
        if (!cmd) continue; /* unknown names are skipped */
        latency_histogram_one(cmd, &w);
        /* A command given by a name without '|' brings its subcommands. */
        if (!cmd->parent)
            for (command *sub = cmd->subcommands; sub && sub->name; sub++)
                latency_histogram_one(sub, &w);
    }
    reply_set_deferred_len(c, d, w.n);
}

void latency_help_command(client *c) {
    static const char *const help[] = {
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        /* One reply line split in the source; the parentheses tell clang's
         * -Wstring-concatenation the join is meant. */
        ("    Return a cumulative distribution of latencies in the format of a histogram for "
         "the specified command names."),
        "    If no commands are specified then all histograms are replied.",
    };
    reply_help(c, "LATENCY", help, K_ARRAY_LEN(help));
}
