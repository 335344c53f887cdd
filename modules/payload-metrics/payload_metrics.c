/* payload_metrics.c -- the payload-metrics module: request and reply size
 * histograms, overall and per command, since start and over a sliding
 * window; the INFO section `payload`; PAYLOAD.* commands; configs.
 *
 * The hot path is the observer, called by the server after every command
 * with the request's size as received and the reply's size. It finds the
 * command's entry through a direct-mapped cache keyed by the server's name
 * pointer, computes two bucket indexes (a clz and two shifts each) and
 * bumps four plain counters (bucket and sum, request and reply) and the
 * failure count. No lock, no allocation after a command's first call, no
 * clock read, no string compare. The overall histograms are the sum of the
 * per-command ones, computed when read.
 *
 * The pointer cache is safe because command names only change when a
 * module loads or unloads, which is a MODULE command: the observer sees it
 * go by and empties the cache (a freed name's address could be reused by
 * another module's command).
 *
 * The sliding window costs the hot path nothing: once a second the cron
 * hook copies the overall histograms into a ring of per-second snapshots,
 * and the window is "now minus the snapshot window-seconds ago". */
#include "pm_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

const keel_api *pm_api;
keel_ctx *pm_ctx;
pm_state pm;

static int pm_in_init; /* configs applied during init defer side effects */

/* ------------------------------------------------------------------------
 * The command table.
 * ------------------------------------------------------------------------ */

#define PM_CACHE_SIZE 256 /* direct-mapped, keyed by the name pointer */
#define PM_MAX_CMDS 4096  /* beyond that, calls go to "(other)" */

static struct {
    const char *key;
    pm_cmd *cmd;
} pm_cache[PM_CACHE_SIZE];

static inline size_t pm_cache_slot(const char *p) {
    return (size_t)(((uintptr_t)p * 0x9E3779B97F4A7C15ull) >> 56) & (PM_CACHE_SIZE - 1);
}

static uint64_t pm_name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static pm_cmd *pm_cmd_find(const char *name) {
    if (!pm.table) return NULL;
    size_t mask = pm.table_cap - 1;
    for (size_t i = pm_name_hash(name) & mask;; i = (i + 1) & mask) {
        pm_cmd *c = pm.table[i];
        if (!c || !strcmp(c->name, name)) return c;
    }
}

static void pm_table_insert(pm_cmd *c) {
    size_t mask = pm.table_cap - 1;
    size_t i = pm_name_hash(c->name) & mask;
    while (pm.table[i])
        i = (i + 1) & mask;
    pm.table[i] = c;
}

static void pm_table_grow(void) {
    size_t cap = pm.table_cap ? pm.table_cap * 2 : 64;
    pm.table = pm_api->core->realloc(pm.table, cap * sizeof(pm_cmd *));
    memset(pm.table, 0, cap * sizeof(pm_cmd *));
    pm.table_cap = cap;
    for (pm_cmd *c = pm.cmds; c; c = c->next)
        pm_table_insert(c);
}

static pm_cmd *pm_cmd_new(const char *name) {
    if (pm.ncmds >= PM_MAX_CMDS) {
        pm_cmd *other = pm_cmd_find("(other)");
        if (other) return other;
        name = "(other)";
    }
    if ((pm.ncmds + 1) * 2 > pm.table_cap) pm_table_grow();
    pm_cmd *c = pm_api->core->calloc(1, sizeof(*c));
    c->name = pm_strdup(name);
    /* EXEC's reply is the replies of the commands it ran, and those are
     * recorded one by one: counting EXEC too would count them twice. */
    if (!strcmp(name, "exec")) c->flags |= PM_CMD_NOT_OVERALL;
    if (!strcmp(name, "module|load") || !strcmp(name, "module|loadex") ||
        !strcmp(name, "module|unload"))
        c->flags |= PM_CMD_FLUSH;
    pm_cmd **pp = &pm.cmds;
    while (*pp)
        pp = &(*pp)->next;
    *pp = c;
    pm.ncmds++;
    pm_table_insert(c);
    return c;
}

static __attribute__((noinline)) pm_cmd *pm_cmd_slow(const char *name, size_t slot) {
    pm_cmd *c = pm_cmd_find(name);
    if (!c) c = pm_cmd_new(name);
    pm_cache[slot].key = name;
    pm_cache[slot].cmd = c;
    return c;
}

static inline pm_cmd *pm_cmd_get(const char *name) {
    size_t slot = pm_cache_slot(name);
    if (PM_LIKELY(pm_cache[slot].key == name)) return pm_cache[slot].cmd;
    return pm_cmd_slow(name, slot);
}

static void pm_cmds_free(void) {
    while (pm.cmds) {
        pm_cmd *c = pm.cmds;
        pm.cmds = c->next;
        pm_api->core->free(c->name);
        pm_api->core->free(c);
    }
    pm_api->core->free(pm.table);
    pm.table = NULL;
    pm.table_cap = pm.ncmds = 0;
    memset(pm_cache, 0, sizeof(pm_cache));
}

void pm_overall(pm_hist *req, pm_hist *rep, uint64_t *failed) {
    memset(req, 0, sizeof(*req));
    memset(rep, 0, sizeof(*rep));
    if (failed) *failed = 0;
    for (pm_cmd *c = pm.cmds; c; c = c->next) {
        if (c->flags & PM_CMD_NOT_OVERALL) continue;
        pm_hist_add(req, &c->req);
        pm_hist_add(rep, &c->rep);
        if (failed) *failed += c->failed;
    }
}

uint64_t pm_commands_total(void) {
    uint64_t n = 0;
    for (pm_cmd *c = pm.cmds; c; c = c->next)
        n += pm_hist_count(&c->req);
    return n;
}

/* ------------------------------------------------------------------------
 * The hot path: observer and filter.
 * ------------------------------------------------------------------------ */

/* The rare cases: a size over a threshold (the logs), EXEC, MODULE. */
static __attribute__((noinline)) void pm_observer_slow(const keel_call_info *ci, pm_cmd *c,
                                                       uint64_t rq, uint64_t rp) {
    if (c->flags & PM_CMD_FLUSH) memset(pm_cache, 0, sizeof(pm_cache));
    if (c->flags & PM_CMD_NOT_OVERALL) return; /* EXEC: its commands are logged */
    if (rq >= pm.req_threshold) {
        pm.large_req++;
        if (pm.req_log_max > 0) pm_log_record(PM_LOG_REQUEST, ci, rq);
    }
    if (rp >= pm.rep_threshold) {
        pm.large_rep++;
        if (pm.rep_log_max > 0) pm_log_record(PM_LOG_REPLY, ci, rp);
    }
}

static void pm_observer(const keel_call_info *ci, void *priv) {
    (void)priv;
    pm_cmd *c = pm_cmd_get(ci->name);
    uint64_t rq = ci->request_bytes, rp = ci->reply_bytes;
    pm_hist_record(&c->req, pm_bucket(rq), rq);
    pm_hist_record(&c->rep, pm_bucket(rp), rp);
    c->failed += ci->failed != 0;
    /* (rq | rp) >= max(rq, rp): one compare screens both thresholds. */
    if (PM_UNLIKELY((rq | rp) >= pm.min_threshold || c->flags)) pm_observer_slow(ci, c, rq, rp);
}

/* Keeps a truncated copy of the arguments for the log: the observer gets no
 * arguments (keel_call_info has none), a filter's context does. Registered
 * only once log-arguments is turned on: reading the arguments of every
 * command costs more than the histograms do (see the docs). The ABI has no
 * way to remove a filter, so turning it off leaves one that returns at
 * once. */
static const char *pm_filter(keel_ctx *ctx, const char *name, uint32_t flags, void *priv) {
    (void)flags, (void)priv;
    if (pm.log_args && (pm.req_log_max > 0 || pm.rep_log_max > 0)) pm_log_capture(ctx, name);
    return NULL;
}

static int pm_filter_ensure(void) {
    if (pm.filter_added || !pm.log_args) return KEEL_OK;
    if (pm_api->hooks->add_filter(pm_ctx, pm_filter, NULL) != KEEL_OK) return KEEL_ERR;
    pm.filter_added = 1;
    return KEEL_OK;
}

/* ------------------------------------------------------------------------
 * Clients: the server has no INFO reader for modules, so the module counts
 * what client events show it. Ids grow monotonically, so a client whose id
 * is below the first one seen connecting existed before the module loaded
 * and is not in the connected gauge.
 * ------------------------------------------------------------------------ */

static void pm_client_event(keel_client *c, int event, void *priv) {
    (void)priv;
    uint64_t id = pm_api->command->client_id(c);
    if (event == KEEL_CLIENT_CONNECT) {
        if (!pm.first_client_id) pm.first_client_id = id;
        pm.connects++;
    } else if (event == KEEL_CLIENT_CLOSE) {
        if (pm.first_client_id && id >= pm.first_client_id)
            pm.closes_tracked++;
        else
            pm.closes_untracked++;
    } else if (event == KEEL_CLIENT_AUTH) {
        pm.auths++;
    }
}

/* ------------------------------------------------------------------------
 * The sliding window.
 * ------------------------------------------------------------------------ */

static void pm_snap_take(int64_t s) {
    pm_snap *snap = &pm.ring[s % pm.ring_len];
    pm_overall(&snap->req, &snap->rep, NULL);
}

/* Starts the window over at second now (after a reset, a resize, a clock
 * jump back). The ring is (re)allocated here, on the cron, never in init. */
static void pm_window_restart(int64_t now) {
    if (!pm.ring || pm.ring_len != pm.window_s + 1) {
        pm_api->core->free(pm.ring);
        pm.ring_len = pm.window_s + 1;
        pm.ring = pm_api->core->alloc((size_t)pm.ring_len * sizeof(pm_snap));
    }
    pm.ring_first = pm.ring_last = now;
    pm_snap_take(now);
}

static void pm_window_tick(int64_t now) {
    if (!pm.ring || pm.ring_len != pm.window_s + 1 || now < pm.ring_last) {
        pm_window_restart(now);
        return;
    }
    if (now == pm.ring_last) return;
    /* Seconds the cron missed (a long command) get the current counts. */
    int64_t from = pm.ring_last + 1;
    if (now - from >= pm.ring_len) from = now - pm.ring_len + 1;
    pm_snap_take(from);
    for (int64_t s = from + 1; s <= now; s++)
        pm.ring[s % pm.ring_len] = pm.ring[from % pm.ring_len];
    pm.ring_last = now;
}

void pm_window(pm_hist *req, pm_hist *rep, long long *seconds) {
    int64_t now = pm_api->core->mstime() / 1000;
    pm_overall(req, rep, NULL);
    *seconds = 0;
    if (!pm.ring) return; /* before the first cron tick: everything is recent */
    int64_t base = now - pm.window_s;
    if (base > pm.ring_last) base = pm.ring_last;
    if (base < pm.ring_last - pm.ring_len + 1) base = pm.ring_last - pm.ring_len + 1;
    if (base < pm.ring_first) base = pm.ring_first;
    const pm_snap *snap = &pm.ring[base % pm.ring_len];
    pm_hist_sub(req, req, &snap->req);
    pm_hist_sub(rep, rep, &snap->rep);
    *seconds = now > base ? now - base : 0;
}

static int64_t pm_cron(keel_ctx *ctx, void *priv) {
    (void)ctx, (void)priv;
    pm_window_tick(pm_api->core->mstime() / 1000);
    return 0;
}

static void pm_cmd_clear(pm_cmd *c) {
    memset(&c->req, 0, sizeof(c->req));
    memset(&c->rep, 0, sizeof(c->rep));
    c->failed = 0;
}

/* Resets all histograms (c NULL) or one command's; the window starts over
 * (the overall counts went backwards). */
static void pm_reset(pm_cmd *only) {
    if (only) {
        pm_cmd_clear(only);
    } else {
        pm.large_req = pm.large_rep = 0;
        for (pm_cmd *c = pm.cmds; c; c = c->next)
            pm_cmd_clear(c);
    }
    if (pm.ring) pm_window_restart(pm_api->core->mstime() / 1000);
}

/* ------------------------------------------------------------------------
 * INFO payload
 * ------------------------------------------------------------------------ */

static void pm_info_hist(keel_info *info, const char *prefix, const pm_hist *h) {
    char name[32];
    pm_api->info->field(info, "%s_count:%llu", prefix, (unsigned long long)pm_hist_count(h));
    pm_api->info->field(info, "%s_sum:%llu", prefix, (unsigned long long)h->sum);
    pm_api->info->field(info, "%s_p50:%llu", prefix, (unsigned long long)pm_hist_quantile(h, 0.50));
    pm_api->info->field(info, "%s_p99:%llu", prefix, (unsigned long long)pm_hist_quantile(h, 0.99));
    for (unsigned i = 0; i < PM_NBUCKETS; i++) {
        if (!h->b[i]) continue;
        pm_bucket_name(i, name, sizeof(name));
        pm_api->info->field(info, "%s_bucket_%s:%llu", prefix, name, (unsigned long long)h->b[i]);
    }
}

static void pm_info(keel_info *info, void *priv) {
    (void)priv;
    pm_hist req, rep, wreq, wrep;
    long long covered;
    pm_overall(&req, &rep, NULL);
    pm_window(&wreq, &wrep, &covered);
    pm_api->info->field(info, "payload_window_seconds:%lld", pm.window_s);
    pm_api->info->field(info, "payload_window_covered_seconds:%lld", covered);
    pm_api->info->field(info, "payload_commands_tracked:%zu", pm.ncmds);
    pm_info_hist(info, "request_payload_bytes", &req);
    pm_info_hist(info, "request_payload_bytes_window", &wreq);
    pm_info_hist(info, "reply_payload_bytes", &rep);
    pm_info_hist(info, "reply_payload_bytes_window", &wrep);
    pm_api->info->field(info, "large_requests:%llu", (unsigned long long)pm.large_req);
    pm_api->info->field(info, "large_replies:%llu", (unsigned long long)pm.large_rep);
    pm_api->info->field(info, "large_request_log_len:%lld", pm_log_len(PM_LOG_REQUEST));
    pm_api->info->field(info, "large_reply_log_len:%lld", pm_log_len(PM_LOG_REPLY));
    pm_api->info->field(info, "prometheus_port:%d", pm.prom_port);
    pm_api->info->field(info, "prometheus_listening:%d", pm_http_listening());
    pm_api->info->field(info, "prometheus_requests:%llu", (unsigned long long)pm_http_requests());
}

/* ------------------------------------------------------------------------
 * Commands
 * ------------------------------------------------------------------------ */

static void pm_reply_hist(keel_ctx *ctx, const pm_hist *h) {
    const keel_api_command *cmd = pm_api->command;
    char name[32];
    long long nonzero = 0;
    for (unsigned i = 0; i < PM_NBUCKETS; i++)
        nonzero += h->b[i] != 0;
    cmd->reply_map(ctx, 5);
    cmd->reply_bulk(ctx, "count", 5);
    cmd->reply_int(ctx, (long long)pm_hist_count(h));
    cmd->reply_bulk(ctx, "sum", 3);
    cmd->reply_int(ctx, (long long)h->sum);
    cmd->reply_bulk(ctx, "p50", 3);
    cmd->reply_int(ctx, (long long)pm_hist_quantile(h, 0.50));
    cmd->reply_bulk(ctx, "p99", 3);
    cmd->reply_int(ctx, (long long)pm_hist_quantile(h, 0.99));
    cmd->reply_bulk(ctx, "buckets", 7);
    cmd->reply_map(ctx, nonzero);
    for (unsigned i = 0; i < PM_NBUCKETS; i++) {
        if (!h->b[i]) continue;
        pm_bucket_name(i, name, sizeof(name));
        cmd->reply_bulk(ctx, name, strlen(name));
        cmd->reply_int(ctx, (long long)h->b[i]);
    }
}

/* "CONFIG", "GET" -> "config|get"; a name already joined is kept. */
static void pm_arg_cmdname(keel_ctx *ctx, int first, int argc, char *buf, size_t len) {
    size_t n = 0;
    for (int i = first; i < argc && n + 1 < len; i++) {
        size_t alen;
        const char *a = pm_api->command->argv(ctx, i, &alen);
        if (i > first) buf[n++] = '|';
        for (size_t j = 0; j < alen && n + 1 < len; j++) {
            char ch = a[j];
            buf[n++] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
        }
    }
    buf[n] = '\0';
}

/* PAYLOAD.HISTOGRAM [command [subcommand]] */
static void pm_cmd_histogram(keel_ctx *ctx) {
    const keel_api_command *cmd = pm_api->command;
    int argc = cmd->argc(ctx);
    if (argc > 3) {
        cmd->reply_wrong_arity(ctx);
        return;
    }
    pm_hist oreq, orep;
    const pm_hist *req = &oreq, *rep = &orep;
    char name[160] = "*";
    uint64_t failed;
    pm_overall(&oreq, &orep, &failed);
    if (argc > 1) {
        pm_arg_cmdname(ctx, 1, argc, name, sizeof(name));
        pm_cmd *c = pm_cmd_find(name);
        if (!c) {
            char err[256];
            snprintf(err, sizeof(err), "ERR no calls of '%.160s' recorded", name);
            cmd->reply_error(ctx, err);
            return;
        }
        req = &c->req;
        rep = &c->rep;
        failed = c->failed;
    }
    cmd->reply_map(ctx, 5);
    cmd->reply_bulk(ctx, "command", 7);
    cmd->reply_bulk(ctx, name, strlen(name));
    cmd->reply_bulk(ctx, "calls", 5);
    cmd->reply_int(ctx, (long long)pm_hist_count(req));
    cmd->reply_bulk(ctx, "failed", 6);
    cmd->reply_int(ctx, (long long)failed);
    cmd->reply_bulk(ctx, "request", 7);
    pm_reply_hist(ctx, req);
    cmd->reply_bulk(ctx, "reply", 5);
    pm_reply_hist(ctx, rep);
}

/* PAYLOAD.COMMANDS: a summary line per command seen. */
static void pm_cmd_commands(keel_ctx *ctx) {
    const keel_api_command *cmd = pm_api->command;
    long long n = 0;
    for (pm_cmd *c = pm.cmds; c; c = c->next)
        n += pm_hist_count(&c->req) != 0;
    cmd->reply_map(ctx, n);
    for (pm_cmd *c = pm.cmds; c; c = c->next) {
        uint64_t calls = pm_hist_count(&c->req);
        if (!calls) continue;
        cmd->reply_bulk(ctx, c->name, strlen(c->name));
        cmd->reply_map(ctx, 8);
        cmd->reply_bulk(ctx, "calls", 5);
        cmd->reply_int(ctx, (long long)calls);
        cmd->reply_bulk(ctx, "failed", 6);
        cmd->reply_int(ctx, (long long)c->failed);
        cmd->reply_bulk(ctx, "request_bytes", 13);
        cmd->reply_int(ctx, (long long)c->req.sum);
        cmd->reply_bulk(ctx, "request_p50", 11);
        cmd->reply_int(ctx, (long long)pm_hist_quantile(&c->req, 0.50));
        cmd->reply_bulk(ctx, "request_p99", 11);
        cmd->reply_int(ctx, (long long)pm_hist_quantile(&c->req, 0.99));
        cmd->reply_bulk(ctx, "reply_bytes", 11);
        cmd->reply_int(ctx, (long long)c->rep.sum);
        cmd->reply_bulk(ctx, "reply_p50", 9);
        cmd->reply_int(ctx, (long long)pm_hist_quantile(&c->rep, 0.50));
        cmd->reply_bulk(ctx, "reply_p99", 9);
        cmd->reply_int(ctx, (long long)pm_hist_quantile(&c->rep, 0.99));
    }
}

/* PAYLOAD.RESET [command [subcommand]]: the histograms (not the logs). */
static void pm_cmd_reset(keel_ctx *ctx) {
    const keel_api_command *cmd = pm_api->command;
    int argc = cmd->argc(ctx);
    if (argc > 3) {
        cmd->reply_wrong_arity(ctx);
        return;
    }
    if (argc == 1) {
        pm_reset(NULL);
        cmd->reply_ok(ctx);
        return;
    }
    char name[160];
    pm_arg_cmdname(ctx, 1, argc, name, sizeof(name));
    pm_cmd *c = pm_cmd_find(name);
    if (c) pm_reset(c);
    cmd->reply_ok(ctx);
}

static int pm_register_commands(keel_ctx *ctx) {
    static const keel_command_def defs[] = {
        {.size = sizeof(keel_command_def),
         .name = "payload.histogram",
         .fn = pm_cmd_histogram,
         .arity = -1,
         .flags = "",
         .summary = "Request and reply size histograms, overall or of one command."},
        {.size = sizeof(keel_command_def),
         .name = "payload.commands",
         .fn = pm_cmd_commands,
         .arity = 1,
         .flags = "",
         .summary = "Request and reply size summary of every command seen."},
        {.size = sizeof(keel_command_def),
         .name = "payload.reset",
         .fn = pm_cmd_reset,
         .arity = -1,
         .flags = "admin",
         .summary = "Resets the size histograms, all or of one command."},
        {.size = sizeof(keel_command_def),
         .name = "payload.log",
         .fn = pm_cmd_log,
         .arity = -2,
         .flags = "admin",
         .summary = "The large-request and large-reply logs: GET, LEN, RESET, HELP."},
    };
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
        if (pm_api->command->register_command(ctx, &defs[i]) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

/* ------------------------------------------------------------------------
 * Configs
 * ------------------------------------------------------------------------ */

static int pm_apply_window(long long v, const char *text, void *priv, const char **err) {
    (void)text, (void)priv, (void)err;
    pm.window_s = v; /* the cron resizes the ring and starts the window over */
    return KEEL_OK;
}

static int pm_apply_threshold(long long v, const char *text, void *priv, const char **err) {
    (void)text, (void)err;
    *(uint64_t *)priv = (uint64_t)v;
    pm.min_threshold = pm.req_threshold < pm.rep_threshold ? pm.req_threshold : pm.rep_threshold;
    return KEEL_OK;
}

static int pm_apply_log_max(long long v, const char *text, void *priv, const char **err) {
    (void)text, (void)err;
    long long *slot = priv;
    *slot = v;
    pm_log_trim(slot == &pm.req_log_max ? PM_LOG_REQUEST : PM_LOG_REPLY, v);
    return KEEL_OK;
}

static int pm_apply_bool(long long v, const char *text, void *priv, const char **err) {
    (void)text, (void)err;
    *(int *)priv = (int)v;
    return KEEL_OK;
}

static int pm_apply_log_args(long long v, const char *text, void *priv, const char **err) {
    (void)text, (void)priv;
    pm.log_args = (int)v;
    /* During init the filter is added after the configs. */
    if (!pm_in_init && pm_filter_ensure() != KEEL_OK) {
        pm.log_args = 0;
        *err = "payload-metrics: cannot add the argument filter";
        return KEEL_ERR;
    }
    return KEEL_OK;
}

static char pm_config_err[256]; /* main thread; returned to the server */

static int pm_apply_port(long long v, const char *text, void *priv, const char **err) {
    (void)text, (void)priv;
    int rv = pm_in_init
                 ? pm_http_probe(pm.prom_bind, (int)v, pm_config_err, sizeof(pm_config_err))
                 : pm_http_configure(pm.prom_bind, (int)v, pm_config_err, sizeof(pm_config_err));
    if (rv != KEEL_OK) {
        *err = pm_config_err;
        return KEEL_ERR;
    }
    pm.prom_port = (int)v;
    return KEEL_OK;
}

static int pm_apply_bind(long long v, const char *text, void *priv, const char **err) {
    (void)v, (void)priv;
    if (!text || !*text || strlen(text) >= sizeof(pm.prom_bind) ||
        !pm_http_addr_valid(text, pm_config_err, sizeof(pm_config_err))) {
        *err = "argument must be a numeric IPv4 or IPv6 address, * or ::*";
        return KEEL_ERR;
    }
    if (!pm_in_init && pm.prom_port &&
        pm_http_configure(text, pm.prom_port, pm_config_err, sizeof(pm_config_err)) != KEEL_OK) {
        *err = pm_config_err;
        return KEEL_ERR;
    }
    snprintf(pm.prom_bind, sizeof(pm.prom_bind), "%s", text);
    return KEEL_OK;
}

static int pm_register_configs(keel_ctx *ctx) {
    const keel_config_def defs[] = {
        {sizeof(keel_config_def), "window-seconds", KEEL_CONFIG_INT, 0, "60", 1, 3600, NULL,
         pm_apply_window, NULL, NULL},
        {sizeof(keel_config_def), "request-larger-than", KEEL_CONFIG_MEMORY, 0, "1mb", 0, 1ll << 40,
         NULL, pm_apply_threshold, &pm.req_threshold, NULL},
        {sizeof(keel_config_def), "reply-larger-than", KEEL_CONFIG_MEMORY, 0, "1mb", 0, 1ll << 40,
         NULL, pm_apply_threshold, &pm.rep_threshold, NULL},
        {sizeof(keel_config_def), "large-request-max-len", KEEL_CONFIG_INT, 0, "128", 0, 100000,
         NULL, pm_apply_log_max, &pm.req_log_max, NULL},
        {sizeof(keel_config_def), "large-reply-max-len", KEEL_CONFIG_INT, 0, "128", 0, 100000, NULL,
         pm_apply_log_max, &pm.rep_log_max, NULL},
        {sizeof(keel_config_def), "log-arguments", KEEL_CONFIG_BOOL, 0, "no", 0, 0, NULL,
         pm_apply_log_args, NULL, NULL},
        {sizeof(keel_config_def), "prometheus-per-command", KEEL_CONFIG_BOOL, 0, "yes", 0, 0, NULL,
         pm_apply_bool, &pm.prom_per_cmd, NULL},
        /* bind before port: the port's apply binds to it */
        {sizeof(keel_config_def), "prometheus-bind", KEEL_CONFIG_STRING, 0, "127.0.0.1", 0, 0, NULL,
         pm_apply_bind, NULL, NULL},
        {sizeof(keel_config_def), "prometheus-port", KEEL_CONFIG_INT, 0, "0", 0, 65535, NULL,
         pm_apply_port, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
        if (pm_api->info->config_register(ctx, &defs[i]) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

/* ------------------------------------------------------------------------
 * Load and unload
 * ------------------------------------------------------------------------ */

static void pm_free_all(void) {
    pm_http_shutdown();
    pm_log_free_all();
    pm_cmds_free();
    pm_api->core->free(pm.ring);
    pm.ring = NULL;
}

static int pm_init(keel_ctx *ctx, const keel_api *api, int argc, const char *const *argv) {
    (void)argv;
    pm_api = api;
    pm_ctx = ctx;
    pm_hist_init();
    /* The object may stay mapped between an unload and a load: start from
     * zero explicitly. */
    memset(&pm, 0, sizeof(pm));
    memset(pm_cache, 0, sizeof(pm_cache));
    pm_http_reset_state();
    pm_log_free_all();
    pm.ring_last = -1;
    pm.loaded_ms = api->core->mstime();
    if (argc > 0) {
        api->core->set_error(ctx, "payload-metrics takes no arguments; use its configs "
                                  "(payload-metrics.<name> or MODULE LOADEX ... CONFIG)");
        return KEEL_ERR;
    }
    pm_in_init = 1;
    int rv = pm_register_configs(ctx);
    pm_in_init = 0;
    if (rv != KEEL_OK || pm_register_commands(ctx) != KEEL_OK ||
        api->hooks->add_observer(ctx, pm_observer, NULL) != KEEL_OK ||
        pm_filter_ensure() != KEEL_OK ||
        api->hooks->add_client_event(ctx, pm_client_event, NULL) != KEEL_OK ||
        api->hooks->add_cron(ctx, pm_cron, NULL) != KEEL_OK ||
        api->info->add_section(ctx, "payload", pm_info, NULL) != KEEL_OK)
        return KEEL_ERR;
    /* The listener opens on the first tick of its timer, once the load is
     * final (the port was probed above): a load refused after init returns
     * gets no deinit, and must not leave a bound socket behind. */
    if (pm.prom_port && pm_http_start_later(pm.prom_bind, pm.prom_port) != KEEL_OK) {
        api->core->set_error(ctx, "payload-metrics: cannot add the HTTP poll timer");
        return KEEL_ERR;
    }
    return KEEL_OK;
}

static int pm_deinit(keel_ctx *ctx) {
    (void)ctx;
    pm_free_all();
    return KEEL_OK;
}

KEEL_MODULE(PM_MODULE_NAME, PM_MODULE_VERSION, pm_init, pm_deinit)
