/* cpu_throttle_ctl.c -- the cpu-throttle controller (see the header). */
#include "cpu_throttle_ctl.h"

#include <stddef.h>

#define NS_PER_MS 1000000ull

static uint32_t pct_to_ppm(unsigned pct) {
    if (pct > 100) pct = 100;
    return (uint32_t)pct * (CTL_PPM / 100);
}

/* initial never exceeds max: the first step is already capped. */
static uint32_t ctl_first_share(const ctl *c) {
    return c->initial_ppm < c->max_ppm ? c->initial_ppm : c->max_ppm;
}

void ctl_reset(ctl *c) {
    c->share_ppm = 0;
    c->state = CTL_IDLE;
    c->last_cpu_pct = -1;
    c->windows = c->windows_over = 0;
    c->started = 0;
    c->win_wall_ns = c->win_cpu_ns = 0;
}

void ctl_init(ctl *c, double threshold_pct, unsigned initial_pct, unsigned max_pct,
              uint64_t window_ms) {
    ctl_set_threshold(c, threshold_pct);
    c->initial_ppm = pct_to_ppm(initial_pct);
    c->max_ppm = pct_to_ppm(max_pct);
    ctl_set_window(c, window_ms);
    ctl_reset(c);
}

void ctl_set_threshold(ctl *c, double threshold_pct) {
    c->threshold_pct = threshold_pct;
}

void ctl_set_initial(ctl *c, unsigned initial_pct) {
    c->initial_ppm = pct_to_ppm(initial_pct);
}

void ctl_set_max(ctl *c, unsigned max_pct) {
    c->max_ppm = pct_to_ppm(max_pct);
    if (c->share_ppm > c->max_ppm) c->share_ppm = c->max_ppm;
}

void ctl_set_window(ctl *c, uint64_t window_ms) {
    c->window_ns = (window_ms ? window_ms : 1) * NS_PER_MS;
}

uint32_t ctl_tick(ctl *c, double cpu_pct) {
    c->windows++;
    c->last_cpu_pct = cpu_pct;
    if (cpu_pct > c->threshold_pct) {
        c->windows_over++;
        uint32_t first = ctl_first_share(c);
        if (c->share_ppm == 0)
            c->share_ppm = first;
        else if (c->share_ppm >= c->max_ppm / 2)
            c->share_ppm = c->max_ppm;
        else
            c->share_ppm *= 2;
        /* A zero max (not reachable through the configs) means no share. */
        c->state = c->share_ppm ? CTL_THROTTLING : CTL_IDLE;
        return c->share_ppm;
    }
    c->share_ppm /= 2;
    if (c->share_ppm < ctl_first_share(c)) c->share_ppm = 0;
    c->state = c->share_ppm ? CTL_RECOVERING : CTL_IDLE;
    return c->share_ppm;
}

int ctl_sample(ctl *c, uint64_t wall_ns, uint64_t cpu_ns) {
    if (!c->started || wall_ns < c->win_wall_ns || cpu_ns < c->win_cpu_ns) {
        c->started = 1;
        c->win_wall_ns = wall_ns;
        c->win_cpu_ns = cpu_ns;
        return 0;
    }
    uint64_t wall = wall_ns - c->win_wall_ns;
    if (wall < c->window_ns || wall == 0) return 0;
    double pct = 100.0 * (double)(cpu_ns - c->win_cpu_ns) / (double)wall;
    /* One thread cannot use more than a core; the two clocks are read one
     * after the other, so a busy window can come out a hair over 100%.
     * Clamped, threshold 100 means "never". */
    if (pct > 100.0) pct = 100.0;
    c->win_wall_ns = wall_ns;
    c->win_cpu_ns = cpu_ns;
    ctl_tick(c, pct);
    return 1;
}

const char *ctl_state_name(ctl_state s) {
    switch (s) {
    case CTL_THROTTLING:
        return "throttling";
    case CTL_RECOVERING:
        return "recovering";
    default:
        return "idle";
    }
}
