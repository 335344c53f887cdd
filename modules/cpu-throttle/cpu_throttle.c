/* cpu_throttle.c -- the cpu-throttle module: refuses a growing share of
 * write commands while the main thread's CPU use stays over a threshold, so
 * an overloaded server still answers INFO, CONFIG and the like.
 *
 * Built only on sdk/include, like any third-party module:
 *  - a cron hook (main thread, hz times a second) reads the main thread's
 *    CPU clock (CLOCK_THREAD_CPUTIME_ID from the main thread) and a
 *    monotonic clock and feeds them to the controller (cpu_throttle_ctl.c),
 *    which closes a window every cpu-throttle.window-ms and moves the share;
 *  - a command filter refuses a write with "-THROTTLED ..." when a draw of
 *    a xorshift PRNG falls under the share. Commands without the write flag,
 *    or flagged admin or no-auth, and those in cpu-throttle.exempt are
 *    never refused. The filter is installed only when the share first rises
 *    above 0; from then on, with share 0, it is two tests;
 *  - INFO cpu_throttle and the cpu-throttle.* configs (all settable with
 *    CONFIG SET).
 *
 * Everything runs on the main thread (filters, cron, INFO, config apply),
 * so the state needs no lock. */
#include "cpu_throttle_ctl.h"

#include <keel/keel_module.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#define THROTTLED_MSG "THROTTLED server CPU over threshold, retry later"
#define EXEMPT_MAX 128    /* commands in cpu-throttle.exempt */
#define EXEMPT_BYTES 1024 /* the list's text, as the server's value limit */
#define UNUSED(x) (void)(x)

static const keel_api *api;
static keel_ctx *self; /* valid until unload: for logging from the cron */
static ctl controller;
static int enabled;
static long long threshold, window_ms, initial_pct, max_pct;
static unsigned long long throttled; /* writes refused since load */
static uint64_t rng;                 /* xorshift64* state, never 0 */
static int filter_installed;         /* see install_filter */
static int filter_warned;            /* install_filter failed, logged */

/* cpu-throttle.exempt, lowercased, NUL-separated in exempt_buf. */
static char exempt_buf[EXEMPT_BYTES];
static const char *exempt[EXEMPT_MAX];
static int nexempt;

/* ---- helpers ---- */

static uint64_t clock_ns(clockid_t id) {
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t rng_next(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
}

static char ascii_lower(char ch) {
    return (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
}

static int is_space(char ch) {
    return ch == ' ' || ch == '\t' || ch == ',';
}

/* name is the server's lowercase command name ("set", "config|set"). An
 * entry matches the name, or the container of a subcommand ("client"
 * exempts "client|kill"). */
static int is_exempt(const char *name) {
    const char *bar = strchr(name, '|');
    size_t container = bar ? (size_t)(bar - name) : 0;
    for (int i = 0; i < nexempt; i++) {
        if (!strcmp(exempt[i], name)) return 1;
        if (container && strlen(exempt[i]) == container && !memcmp(exempt[i], name, container))
            return 1;
    }
    return 0;
}

/* ---- the filter and the cron ---- */

/* A write while the share is above 0: refused or not. Out of line, so the
 * filter's common path below stays a leaf with no stack frame. */
static __attribute__((noinline)) const char *throttle_write(const char *name, uint32_t flags) {
    if (flags & (KEEL_CMD_ADMIN | KEEL_CMD_NO_AUTH)) return NULL;
    if (nexempt && is_exempt(name)) return NULL;
    if (!ctl_should_reject(&controller, rng_next())) return NULL;
    throttled++;
    return THROTTLED_MSG;
}

static const char *throttle_filter(keel_ctx *ctx, const char *name, uint32_t flags, void *priv) {
    UNUSED(ctx);
    UNUSED(priv);
    /* The common case: nothing is throttled, or not a write. */
    if (controller.share_ppm == 0 || !(flags & KEEL_CMD_WRITE)) return NULL;
    return throttle_write(name, flags);
}

/* The filter is installed the first time the share rises above 0, so a
 * server that is never overloaded pays nothing per command. The ABI has no
 * way to remove a filter or switch it off (only unloading does), so once
 * installed it stays; with share 0 it returns at its first test. */
static void install_filter(keel_ctx *ctx) {
    if (filter_installed || controller.share_ppm == 0) return;
    if (api->hooks->add_filter(ctx, throttle_filter, NULL) == KEEL_OK) {
        filter_installed = 1;
        return;
    }
    controller.share_ppm = 0; /* cannot refuse anything: say so in INFO */
    controller.state = CTL_IDLE;
    if (!filter_warned)
        api->core->log(ctx, KEEL_LOG_WARNING, "cannot install the command filter: not throttling");
    filter_warned = 1;
}

static void log_transition(ctl_state before) {
    if (before == controller.state) return;
    if (before == CTL_IDLE)
        api->core->log(self, KEEL_LOG_NOTICE,
                       "main thread CPU %.1f%% over %lld%%: throttling %.2f%% of writes",
                       controller.last_cpu_pct, threshold, controller.share_ppm / 1e4);
    else if (controller.state == CTL_IDLE)
        api->core->log(self, KEEL_LOG_NOTICE,
                       "main thread CPU %.1f%%: throttling stopped (%llu writes refused so far)",
                       controller.last_cpu_pct, throttled);
}

static int64_t throttle_cron(keel_ctx *ctx, void *priv) {
    UNUSED(priv);
    ctl_state before = controller.state;
    /* The cron runs on the main thread: its thread CPU clock is the one
     * that measures command processing. */
    if (!ctl_sample(&controller, clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_THREAD_CPUTIME_ID)))
        return 0;
    if (!enabled) {
        /* Keep measuring (INFO shows the CPU) but never throttle. */
        controller.share_ppm = 0;
        controller.state = CTL_IDLE;
        return 0;
    }
    install_filter(ctx);
    log_transition(before);
    return 0;
}

/* ---- INFO cpu_throttle ---- */

static void throttle_info(keel_info *info, void *priv) {
    UNUSED(priv);
    const keel_api_info *in = api->info;
    double cpu = controller.last_cpu_pct < 0 ? 0 : controller.last_cpu_pct;
    in->field(info, "cpu_throttle_enabled:%s", enabled ? "yes" : "no");
    in->field(info, "cpu_throttle_state:%s",
              enabled ? ctl_state_name(controller.state) : "disabled");
    in->field(info, "cpu_throttle_main_thread_cpu_percent:%.2f", cpu);
    in->field(info, "cpu_throttle_window_ms:%lld", window_ms);
    in->field(info, "cpu_throttle_threshold_percent:%lld", threshold);
    in->field(info, "cpu_throttle_initial_percent:%lld", initial_pct);
    in->field(info, "cpu_throttle_max_percent:%lld", max_pct);
    in->field(info, "cpu_throttle_share_percent:%.2f", controller.share_ppm / 1e4);
    in->field(info, "cpu_throttle_throttled_commands:%llu", throttled);
    in->field(info, "cpu_throttle_windows:%llu", (unsigned long long)controller.windows);
    in->field(info, "cpu_throttle_windows_over_threshold:%llu",
              (unsigned long long)controller.windows_over);
    in->field(info, "cpu_throttle_exempt_commands:%d", nexempt);
}

/* ---- configs ---- */

static int apply_enabled(long long number, const char *text, void *priv, const char **err) {
    UNUSED(text);
    UNUSED(priv);
    UNUSED(err);
    enabled = number != 0;
    if (!enabled) {
        controller.share_ppm = 0;
        controller.state = CTL_IDLE;
    }
    return KEEL_OK;
}

static int apply_threshold(long long number, const char *text, void *priv, const char **err) {
    UNUSED(text);
    UNUSED(priv);
    UNUSED(err);
    threshold = number;
    ctl_set_threshold(&controller, (double)number);
    return KEEL_OK;
}

static int apply_window(long long number, const char *text, void *priv, const char **err) {
    UNUSED(text);
    UNUSED(priv);
    UNUSED(err);
    window_ms = number;
    ctl_set_window(&controller, (uint64_t)number);
    return KEEL_OK;
}

static int apply_initial(long long number, const char *text, void *priv, const char **err) {
    UNUSED(text);
    UNUSED(priv);
    UNUSED(err);
    initial_pct = number;
    ctl_set_initial(&controller, (unsigned)number);
    return KEEL_OK;
}

static int apply_max(long long number, const char *text, void *priv, const char **err) {
    UNUSED(text);
    UNUSED(priv);
    UNUSED(err);
    max_pct = number;
    ctl_set_max(&controller, (unsigned)number);
    return KEEL_OK;
}

/* Splits text on spaces (commas and tabs too) into lowercase names; the
 * list is replaced only if all of it is valid. */
static int apply_exempt(long long number, const char *text, void *priv, const char **err) {
    UNUSED(number);
    UNUSED(priv);
    char buf[EXEMPT_BYTES];
    const char *names[EXEMPT_MAX];
    int n = 0;
    size_t len = text ? strlen(text) : 0;
    if (len >= sizeof(buf)) {
        *err = "the list must be shorter than 1024 bytes";
        return KEEL_ERR;
    }
    for (size_t i = 0; i < len; i++)
        buf[i] = is_space(text[i]) ? '\0' : ascii_lower(text[i]);
    buf[len] = '\0';
    for (size_t i = 0; i < len; i++) {
        if (!buf[i] || (i > 0 && buf[i - 1])) continue; /* not a word's start */
        if (n == EXEMPT_MAX) {
            *err = "at most 128 commands can be exempt";
            return KEEL_ERR;
        }
        names[n++] = exempt_buf + i; /* where it will be once copied */
    }
    memcpy(exempt_buf, buf, len + 1);
    memcpy(exempt, names, (size_t)n * sizeof(names[0]));
    nexempt = n;
    return KEEL_OK;
}

static int register_configs(keel_ctx *ctx) {
    const keel_config_def defs[] = {
        {.size = sizeof(keel_config_def),
         .name = "enabled",
         .type = KEEL_CONFIG_BOOL,
         .default_value = "yes",
         .apply = apply_enabled},
        {.size = sizeof(keel_config_def),
         .name = "threshold",
         .type = KEEL_CONFIG_INT,
         .default_value = "95",
         .min = 1,
         .max = 100,
         .apply = apply_threshold},
        {.size = sizeof(keel_config_def),
         .name = "window-ms",
         .type = KEEL_CONFIG_INT,
         .default_value = "1000",
         .min = 10,
         .max = 60000,
         .apply = apply_window},
        {.size = sizeof(keel_config_def),
         .name = "initial-percent",
         .type = KEEL_CONFIG_INT,
         .default_value = "1",
         .min = 1,
         .max = 100,
         .apply = apply_initial},
        {.size = sizeof(keel_config_def),
         .name = "max-percent",
         .type = KEEL_CONFIG_INT,
         .default_value = "90",
         .min = 1,
         .max = 100,
         .apply = apply_max},
        {.size = sizeof(keel_config_def),
         .name = "exempt",
         .type = KEEL_CONFIG_STRING,
         .default_value = "",
         .apply = apply_exempt},
    };
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
        if (api->info->config_register(ctx, &defs[i]) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

/* ---- load and unload ---- */

static int throttle_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    UNUSED(argv);
    api = a;
    self = ctx;
    /* The module may be loaded again after an unload: start fresh. */
    throttled = 0;
    filter_installed = filter_warned = 0;
    nexempt = 0;
    exempt_buf[0] = '\0';
    rng = clock_ns(CLOCK_MONOTONIC) ^ (uint64_t)(uintptr_t)&controller ^ 0x9E3779B97F4A7C15ull;
    if (!rng) rng = 1;
    ctl_init(&controller, 95, 1, 90, 1000); /* the configs' defaults, applied next */
    if (argc > 0) {
        api->core->set_error(ctx, "cpu-throttle takes no arguments; use the cpu-throttle.* "
                                  "configuration parameters");
        return KEEL_ERR;
    }
    if (register_configs(ctx) != KEEL_OK) return KEEL_ERR;
    /* The filter comes later: install_filter. */
    if (api->hooks->add_cron(ctx, throttle_cron, NULL) != KEEL_OK ||
        api->info->add_section(ctx, "cpu_throttle", throttle_info, NULL) != KEEL_OK)
        return KEEL_ERR;
    api->core->log(ctx, KEEL_LOG_NOTICE,
                   "threshold %lld%%, window %lld ms, share %lld%%..%lld%%, %s", threshold,
                   window_ms, initial_pct, max_pct, enabled ? "enabled" : "disabled");
    return KEEL_OK;
}

/* The server removes the filter, cron hook, INFO section and configs. */
static int throttle_deinit(keel_ctx *ctx) {
    UNUSED(ctx);
    controller.share_ppm = 0;
    return KEEL_OK;
}

KEEL_MODULE("cpu-throttle", 10000, throttle_init, throttle_deinit)
