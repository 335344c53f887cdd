/* cpu_throttle_ctl.h -- the cpu-throttle controller, a pure unit.
 *
 * It knows nothing about the server: the caller feeds it clock readings
 * (ctl_sample) or whole-window CPU figures (ctl_tick), and asks it whether
 * to refuse a write (ctl_should_reject) with a random number it supplies.
 * That keeps it testable with a fake clock and a fake CPU series
 * (tests/modules_it/check_cpu_throttle_ctl.c).
 *
 * The rule (as proposed for Valkey in issue #1688 / PR #1689): the CPU use
 * of the main thread is measured over a window. After a window above the
 * threshold the throttled share of writes starts at `initial` or doubles,
 * capped at `max`; after a window at or below the threshold it halves, and
 * drops to 0 once it would fall below `initial`.
 *
 * Shares are kept in parts per million of the writes, so the per-command
 * draw is one multiply and one compare. */
#ifndef KEEL_MODULE_CPU_THROTTLE_CTL_H
#define KEEL_MODULE_CPU_THROTTLE_CTL_H

#include <stdint.h>

#define CTL_PPM 1000000u /* 100% */

typedef enum ctl_state {
    CTL_IDLE = 0,   /* share 0 */
    CTL_THROTTLING, /* the last window was over the threshold */
    CTL_RECOVERING, /* under the threshold, share still > 0 and halving */
} ctl_state;

typedef struct ctl {
    /* Parameters: may be changed between calls (CONFIG SET); the next
     * window uses them. */
    double threshold_pct; /* CPU percent of one core; over it = "over" */
    uint32_t initial_ppm; /* first share after an idle window */
    uint32_t max_ppm;     /* cap; initial is clamped to it */
    uint64_t window_ns;   /* window length for ctl_sample */

    /* State. */
    uint32_t share_ppm; /* share of writes refused now */
    ctl_state state;
    double last_cpu_pct;   /* CPU use of the last closed window, -1 before */
    uint64_t windows;      /* closed windows */
    uint64_t windows_over; /* of them, over the threshold */

    /* ctl_sample's window: start readings; started == 0 before the first. */
    int started;
    uint64_t win_wall_ns, win_cpu_ns;
} ctl;

/* Sets the parameters (percent values, window in ms) and clears the state. */
void ctl_init(ctl *c, double threshold_pct, unsigned initial_pct, unsigned max_pct,
              uint64_t window_ms);

/* Clears the state (share 0, idle, no window open); parameters stay. */
void ctl_reset(ctl *c);

/* Parameter setters (percent 1..100, window in ms >= 1). They take effect
 * at the next window; a share above a lowered max is cut at once. */
void ctl_set_threshold(ctl *c, double threshold_pct);
void ctl_set_initial(ctl *c, unsigned initial_pct);
void ctl_set_max(ctl *c, unsigned max_pct);
void ctl_set_window(ctl *c, uint64_t window_ms);

/* One closed window with the given CPU use (percent of one core). Updates
 * the share as above and returns it (ppm). */
uint32_t ctl_tick(ctl *c, double cpu_pct);

/* Feeds one reading of a monotonic wall clock and of the measured thread's
 * CPU clock, both in ns. The first reading opens a window; a reading at
 * least window_ns after the window's start closes it, computes its CPU
 * percent (clamped to 100), calls ctl_tick and opens the next window there. Returns 1 if a
 * window closed, else 0. A reading that goes backwards (clock trouble)
 * restarts the window. A late reading (a stalled main thread) closes one
 * long window: one step, not one per elapsed window. */
int ctl_sample(ctl *c, uint64_t wall_ns, uint64_t cpu_ns);

/* 1 if a write should be refused, for rnd uniform over uint32_t: refuses
 * share_ppm / 1e6 of the draws. Cheap; reads the share only. */
static inline int ctl_should_reject(const ctl *c, uint32_t rnd) {
    return c->share_ppm && (uint32_t)(((uint64_t)rnd * CTL_PPM) >> 32) < c->share_ppm;
}

/* "idle", "throttling" or "recovering". */
const char *ctl_state_name(ctl_state s);

#endif
