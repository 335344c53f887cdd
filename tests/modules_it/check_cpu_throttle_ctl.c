/* check_cpu_throttle_ctl.c -- unit tests of the cpu-throttle controller
 * (modules/cpu-throttle/cpu_throttle_ctl.c), compiled with that file alone:
 * no server, no module ABI. The clock and the CPU use are fake series fed to
 * ctl_sample / ctl_tick; the rejection draw is checked with a fixed PRNG. */
#include "cpu_throttle_ctl.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#define MS 1000000ull /* ns */
#define PCT(p) ((uint32_t)((p)*10000.0))

/* Defaults of the module: threshold 95%, initial 1%, max 90%, window 1 s. */
static ctl c;

static void setup(void) {
    ctl_init(&c, 95, 1, 90, 1000);
}

/* A fake clock: a wall clock and a CPU clock that advance together at a
 * given CPU use, read every `step` ms (the cron period). */
typedef struct fake_clock {
    uint64_t wall, cpu;
} fake_clock;

/* Advances by ms at cpu_pct and feeds the reading; returns what ctl_sample
 * returned. */
static int fake_step(fake_clock *f, uint64_t ms, double cpu_pct) {
    f->wall += ms * MS;
    f->cpu += (uint64_t)((double)(ms * MS) * cpu_pct / 100.0);
    return ctl_sample(&c, f->wall, f->cpu);
}

/* Runs `windows` windows of `window_ms` at cpu_pct in cron steps of step_ms;
 * returns how many windows closed. */
static int fake_run(fake_clock *f, int windows, uint64_t window_ms, uint64_t step_ms,
                    double cpu_pct) {
    int closed = 0;
    for (uint64_t t = 0; t < (uint64_t)windows * window_ms; t += step_ms)
        closed += fake_step(f, step_ms, cpu_pct);
    return closed;
}

/* ---- ctl_tick: the share's steps ---- */

START_TEST(test_init_state) {
    ck_assert_uint_eq(c.share_ppm, 0);
    ck_assert_int_eq(c.state, CTL_IDLE);
    ck_assert(c.last_cpu_pct < 0);
    ck_assert_uint_eq(c.windows, 0);
    ck_assert_str_eq(ctl_state_name(c.state), "idle");
    ck_assert_int_eq(ctl_should_reject(&c, 0), 0);
}
END_TEST

START_TEST(test_doubles_while_over_to_cap) {
    static const uint32_t want[] = {PCT(1),  PCT(2),  PCT(4),  PCT(8),  PCT(16),
                                    PCT(32), PCT(64), PCT(90), PCT(90), PCT(90)};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        ck_assert_uint_eq(ctl_tick(&c, 99.0), want[i]);
        ck_assert_int_eq(c.state, CTL_THROTTLING);
    }
    ck_assert_uint_eq(c.windows, 10);
    ck_assert_uint_eq(c.windows_over, 10);
    ck_assert_str_eq(ctl_state_name(c.state), "throttling");
}
END_TEST

START_TEST(test_halves_while_under_to_zero) {
    for (int i = 0; i < 10; i++)
        ctl_tick(&c, 100.0);
    ck_assert_uint_eq(c.share_ppm, PCT(90));
    /* 90 -> 45 -> 22.5 -> 11.25 -> 5.625 -> 2.8125 -> 1.40625 -> 0 (below
     * the initial 1%). */
    static const uint32_t want[] = {450000, 225000, 112500, 56250, 28125, 14062, 0, 0};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        ck_assert_uint_eq(ctl_tick(&c, 10.0), want[i]);
        ck_assert_int_eq(c.state, want[i] ? CTL_RECOVERING : CTL_IDLE);
    }
    ck_assert_uint_eq(c.windows_over, 10);
    ck_assert_uint_eq(c.windows, 18);
}
END_TEST

START_TEST(test_threshold_is_strict) {
    ck_assert_uint_eq(ctl_tick(&c, 95.0), 0); /* at the threshold: not over */
    ck_assert_int_eq(c.state, CTL_IDLE);
    ck_assert_uint_eq(ctl_tick(&c, 95.01), PCT(1));
    ck_assert(c.last_cpu_pct > 95.0);
}
END_TEST

/* Over, under, over...: the share never grows past the initial step. */
START_TEST(test_flapping_load) {
    for (int i = 0; i < 20; i++) {
        ck_assert_uint_eq(ctl_tick(&c, 99.0), PCT(1));
        ck_assert_uint_eq(ctl_tick(&c, 50.0), 0);
    }
    /* Two over, one under: 1, 2, then 1 (not 0: 1% is not below initial). */
    ctl_tick(&c, 99.0);
    ctl_tick(&c, 99.0);
    ck_assert_uint_eq(c.share_ppm, PCT(2));
    ck_assert_uint_eq(ctl_tick(&c, 50.0), PCT(1));
    ck_assert_int_eq(c.state, CTL_RECOVERING);
    ck_assert_uint_eq(ctl_tick(&c, 50.0), 0);
}
END_TEST

START_TEST(test_initial_and_max_params) {
    ctl_init(&c, 50, 10, 100, 1000);
    ck_assert_uint_eq(ctl_tick(&c, 60), PCT(10));
    ck_assert_uint_eq(ctl_tick(&c, 60), PCT(20));
    ck_assert_uint_eq(ctl_tick(&c, 60), PCT(40));
    ck_assert_uint_eq(ctl_tick(&c, 60), PCT(80));
    ck_assert_uint_eq(ctl_tick(&c, 60), PCT(100));
    ck_assert_uint_eq(ctl_tick(&c, 60), PCT(100));
    /* 100% refuses every draw. */
    ck_assert(ctl_should_reject(&c, 0));
    ck_assert(ctl_should_reject(&c, UINT32_MAX));
    /* Halving below initial (10%) drops to 0: 100, 50, 25, 12.5, 0. */
    ck_assert_uint_eq(ctl_tick(&c, 40), PCT(50));
    ck_assert_uint_eq(ctl_tick(&c, 40), PCT(25));
    ck_assert_uint_eq(ctl_tick(&c, 40), PCT(12.5));
    ck_assert_uint_eq(ctl_tick(&c, 40), 0);
}
END_TEST

START_TEST(test_initial_above_max_is_capped) {
    ctl_init(&c, 50, 50, 30, 1000);
    ck_assert_uint_eq(ctl_tick(&c, 80), PCT(30));
    ck_assert_uint_eq(ctl_tick(&c, 80), PCT(30));
    /* 15% is below the (capped) first share 30%: straight to 0. */
    ck_assert_uint_eq(ctl_tick(&c, 20), 0);
}
END_TEST

START_TEST(test_setters_take_effect) {
    for (int i = 0; i < 8; i++)
        ctl_tick(&c, 99);
    ck_assert_uint_eq(c.share_ppm, PCT(90));
    ctl_set_max(&c, 20); /* cuts the share at once */
    ck_assert_uint_eq(c.share_ppm, PCT(20));
    ck_assert_uint_eq(ctl_tick(&c, 99), PCT(20));
    ctl_set_threshold(&c, 100); /* nothing is over 100% now */
    ck_assert_uint_eq(ctl_tick(&c, 99.9), PCT(10));
    ctl_set_initial(&c, 5);
    ck_assert_uint_eq(ctl_tick(&c, 99.9), PCT(5));
    ck_assert_uint_eq(ctl_tick(&c, 99.9), 0);
    ctl_set_threshold(&c, 10);
    ck_assert_uint_eq(ctl_tick(&c, 11), PCT(5));
}
END_TEST

START_TEST(test_reset) {
    for (int i = 0; i < 5; i++)
        ctl_tick(&c, 99);
    ctl_reset(&c);
    ck_assert_uint_eq(c.share_ppm, 0);
    ck_assert_int_eq(c.state, CTL_IDLE);
    ck_assert_uint_eq(c.windows, 0);
    ck_assert(c.threshold_pct == 95); /* parameters stay */
    ck_assert_uint_eq(c.max_ppm, PCT(90));
}
END_TEST

/* ---- ctl_should_reject: the draw ---- */

static uint32_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 32);
}

/* Refusals over n draws of a fixed PRNG series. */
static long reject_count(long n) {
    uint64_t s = 42;
    long r = 0;
    for (long i = 0; i < n; i++)
        r += ctl_should_reject(&c, lcg(&s));
    return r;
}

START_TEST(test_reject_rate_matches_share) {
    static const double shares[] = {1, 2, 8, 22.5, 50, 90};
    const long n = 1000000;
    ck_assert_int_eq(reject_count(n), 0); /* share 0 */
    for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++) {
        c.share_ppm = PCT(shares[i]);
        double rate = 100.0 * (double)reject_count(n) / (double)n;
        ck_assert_msg(rate > shares[i] - 0.3 && rate < shares[i] + 0.3,
                      "share %.2f%%: refused %.3f%% of draws", shares[i], rate);
    }
}
END_TEST

/* The draw is a threshold on rnd: deterministic at the edges. */
START_TEST(test_reject_edges) {
    c.share_ppm = PCT(50);
    ck_assert(ctl_should_reject(&c, 0));
    ck_assert(ctl_should_reject(&c, 0x7FFFFFFFu));
    ck_assert(!ctl_should_reject(&c, 0x80000000u));
    ck_assert(!ctl_should_reject(&c, UINT32_MAX));
    c.share_ppm = 1; /* one in a million */
    ck_assert(ctl_should_reject(&c, 0));
    ck_assert(!ctl_should_reject(&c, 1u << 20));
}
END_TEST

/* ---- ctl_sample: windows from a fake clock ---- */

START_TEST(test_sample_windows) {
    fake_clock f = {.wall = 5000 * MS, .cpu = 123 * MS};
    ctl_set_window(&c, 200);
    ck_assert_int_eq(ctl_sample(&c, f.wall, f.cpu), 0); /* opens the first window */
    ck_assert_int_eq(fake_step(&f, 100, 99), 0);
    ck_assert_int_eq(fake_step(&f, 100, 99), 1); /* 200 ms: closes */
    ck_assert_double_eq_tol(c.last_cpu_pct, 99.0, 0.01);
    ck_assert_uint_eq(c.share_ppm, PCT(1));
    ck_assert_int_eq(fake_step(&f, 100, 20), 0);
    ck_assert_int_eq(fake_step(&f, 100, 100), 1); /* mean 60%: under */
    ck_assert_double_eq_tol(c.last_cpu_pct, 60.0, 0.01);
    ck_assert_uint_eq(c.share_ppm, 0);
    ck_assert_uint_eq(c.windows, 2);
}
END_TEST

/* A cron period that does not divide the window: a window closes at the
 * first reading at or after its end, and the next starts there. */
START_TEST(test_sample_uneven_cron) {
    fake_clock f = {0, 0};
    ctl_set_window(&c, 250);
    ctl_sample(&c, f.wall, f.cpu);
    int closed = 0;
    for (int i = 0; i < 30; i++) /* 3 s in steps of 100 ms: windows of 300 ms */
        closed += fake_step(&f, 100, 97);
    ck_assert_int_eq(closed, 10);
    ck_assert_uint_eq(c.share_ppm, PCT(90));
}
END_TEST

/* The scenario the integration test drives: saturation, then no load. The
 * share climbs to the cap and, after the load stops, is back at 0 within
 * 8 windows. */
START_TEST(test_sample_load_then_idle) {
    fake_clock f = {1 * MS, 0};
    ctl_init(&c, 30, 1, 90, 200);
    ctl_sample(&c, f.wall, f.cpu);
    ck_assert_int_eq(fake_run(&f, 3, 200, 100, 10), 3); /* idle: nothing */
    ck_assert_uint_eq(c.share_ppm, 0);
    ck_assert_int_eq(fake_run(&f, 12, 200, 100, 100), 12);
    ck_assert_uint_eq(c.share_ppm, PCT(90));
    ck_assert_int_eq(c.state, CTL_THROTTLING);
    int windows = 0;
    while (c.share_ppm && windows < 20)
        windows += fake_run(&f, 1, 200, 100, 2);
    ck_assert_int_eq(windows, 7);
    ck_assert_int_eq(c.state, CTL_IDLE);
    ck_assert_uint_eq(c.windows_over, 12);
}
END_TEST

START_TEST(test_sample_clock_backwards_restarts) {
    ctl_set_window(&c, 100);
    ck_assert_int_eq(ctl_sample(&c, 1000 * MS, 500 * MS), 0);
    ck_assert_int_eq(ctl_sample(&c, 900 * MS, 510 * MS), 0);  /* wall back: restart */
    ck_assert_int_eq(ctl_sample(&c, 1000 * MS, 400 * MS), 0); /* cpu back: restart */
    ck_assert_int_eq(ctl_sample(&c, 1100 * MS, 499 * MS), 1);
    ck_assert_double_eq_tol(c.last_cpu_pct, 99.0, 0.01);
    ck_assert_uint_eq(c.windows, 1);
}
END_TEST

/* A stalled main thread (one 5 s command) closes one long window: one
 * step, not five. */
START_TEST(test_sample_stall_is_one_window) {
    ctl_set_window(&c, 1000);
    ctl_sample(&c, 0, 0);
    ck_assert_int_eq(ctl_sample(&c, 5000 * MS, 5000 * MS), 1);
    ck_assert_uint_eq(c.windows, 1);
    ck_assert_uint_eq(c.share_ppm, PCT(1));
    ck_assert_double_eq_tol(c.last_cpu_pct, 100.0, 0.01);
}
END_TEST

/* The two clocks are read one after the other: a busy window can measure a
 * hair over 100%. It is clamped, so threshold 100 never throttles. */
START_TEST(test_sample_clamped_to_100) {
    ctl_set_threshold(&c, 100);
    ctl_set_window(&c, 100);
    ctl_sample(&c, 1000 * MS, 0);
    ck_assert_int_eq(ctl_sample(&c, 1100 * MS, 100 * MS + 7), 1);
    ck_assert(c.last_cpu_pct == 100.0);
    ck_assert_uint_eq(c.share_ppm, 0);
    ck_assert_uint_eq(c.windows_over, 0);
}
END_TEST

/* Changing the window between readings: the open window closes by the new
 * length. */
START_TEST(test_sample_window_change) {
    fake_clock f = {0, 0};
    ctl_set_window(&c, 1000);
    ctl_sample(&c, f.wall, f.cpu);
    ck_assert_int_eq(fake_step(&f, 100, 99), 0);
    ctl_set_window(&c, 100);
    ck_assert_int_eq(fake_step(&f, 100, 99), 1);
    ctl_set_window(&c, 0); /* treated as 1 ms */
    ck_assert_int_eq(fake_step(&f, 1, 99), 1);
    ck_assert_uint_eq(c.window_ns, 1 * MS);
}
END_TEST

/* No time passed: no window and no division by zero. */
START_TEST(test_sample_same_reading) {
    ctl_set_window(&c, 10);
    ctl_sample(&c, 7 * MS, 3 * MS);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(ctl_sample(&c, 7 * MS, 3 * MS), 0);
    ck_assert_uint_eq(c.windows, 0);
}
END_TEST

static Suite *ctl_suite(void) {
    Suite *s = suite_create("cpu_throttle_ctl");
    TCase *tick = tcase_create("tick");
    tcase_add_checked_fixture(tick, setup, NULL);
    tcase_add_test(tick, test_init_state);
    tcase_add_test(tick, test_doubles_while_over_to_cap);
    tcase_add_test(tick, test_halves_while_under_to_zero);
    tcase_add_test(tick, test_threshold_is_strict);
    tcase_add_test(tick, test_flapping_load);
    tcase_add_test(tick, test_initial_and_max_params);
    tcase_add_test(tick, test_initial_above_max_is_capped);
    tcase_add_test(tick, test_setters_take_effect);
    tcase_add_test(tick, test_reset);
    suite_add_tcase(s, tick);
    TCase *draw = tcase_create("draw");
    tcase_add_checked_fixture(draw, setup, NULL);
    tcase_add_test(draw, test_reject_rate_matches_share);
    tcase_add_test(draw, test_reject_edges);
    suite_add_tcase(s, draw);
    TCase *sample = tcase_create("sample");
    tcase_add_checked_fixture(sample, setup, NULL);
    tcase_add_test(sample, test_sample_windows);
    tcase_add_test(sample, test_sample_uneven_cron);
    tcase_add_test(sample, test_sample_load_then_idle);
    tcase_add_test(sample, test_sample_clock_backwards_restarts);
    tcase_add_test(sample, test_sample_stall_is_one_window);
    tcase_add_test(sample, test_sample_clamped_to_100);
    tcase_add_test(sample, test_sample_window_change);
    tcase_add_test(sample, test_sample_same_reading);
    suite_add_tcase(s, sample);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(ctl_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
