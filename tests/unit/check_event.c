/* check_event.c -- unit tests for core/event/event.c: timers in due order
 * and re-armed by their return value, file events on a pipe, the
 * before-sleep hook, event_loop_stop, the cached clock, and file events
 * processed from inside a handler (event_process_files). The event loop
 * stands alone: no server object is set up. */
#include "event/event.h"

#include "common/common.h"

#include <check.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct timer_log {
    int order[8];
    int n;
    int repeats;
} timer_log;

static timer_log tlog;

static int64_t timer_once(event_loop *el, int64_t id, void *data) {
    K_UNUSED(el);
    K_UNUSED(id);
    tlog.order[tlog.n++] = (int)(intptr_t)data;
    return EV_TIMER_STOP;
}

static int64_t timer_thrice(event_loop *el, int64_t id, void *data) {
    K_UNUSED(id);
    K_UNUSED(data);
    if (++tlog.repeats == 3) {
        event_loop_stop(el);
        return EV_TIMER_STOP;
    }
    return 1;
}

START_TEST(test_timers_fire_in_due_order) {
    tlog = (timer_log){0};
    event_loop *el = event_loop_create(64);
    event_timer_add(el, 30, timer_once, (void *)(intptr_t)3);
    event_timer_add(el, 10, timer_once, (void *)(intptr_t)1);
    event_timer_add(el, 20, timer_once, (void *)(intptr_t)2);
    int64_t gone = event_timer_add(el, 15, timer_once, (void *)(intptr_t)9);
    ck_assert_int_eq(event_timer_del(el, gone), K_OK);
    event_timer_add(el, 1, timer_thrice, NULL);
    uint64_t start = event_mono_us();
    while (tlog.n < 3 && event_mono_us() - start < 2000000)
        event_process(el, -1);
    ck_assert_int_eq(tlog.n, 3);
    ck_assert_int_eq(tlog.order[0], 1);
    ck_assert_int_eq(tlog.order[1], 2);
    ck_assert_int_eq(tlog.order[2], 3);
    ck_assert_int_eq(tlog.repeats, 3);
    event_loop_release(el);
}
END_TEST

static int readable_calls;
static int before_sleep_calls;

static void on_readable(event_loop *el, int fd, void *data, int mask) {
    K_UNUSED(data);
    char buf[8];
    ck_assert_int_eq(mask & EV_READABLE, EV_READABLE);
    ck_assert_int_gt(read(fd, buf, sizeof(buf)), 0);
    readable_calls++;
    event_loop_stop(el);
}

static void before_sleep(event_loop *el) {
    K_UNUSED(el);
    before_sleep_calls++;
}

START_TEST(test_file_event_and_before_sleep) {
    readable_calls = before_sleep_calls = 0;
    event_loop *el = event_loop_create(64);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(event_add(el, p[0], EV_READABLE, on_readable, NULL), K_OK);
    ck_assert_int_eq(event_mask(el, p[0]), EV_READABLE);
    event_set_before_sleep(el, before_sleep);
    ck_assert_int_eq(write(p[1], "x", 1), 1);
    event_loop_run(el); /* on_readable stops it */
    ck_assert_int_eq(readable_calls, 1);
    ck_assert_int_ge(before_sleep_calls, 1);
    event_del(el, p[0], EV_READABLE);
    ck_assert_int_eq(event_mask(el, p[0]), EV_NONE);
    close(p[0]);
    close(p[1]);
    event_loop_release(el);
}
END_TEST

/* event_process_files: what a long command's busy phase runs from inside
 * a handler of the outer iteration. Pipes: 0 runs the nested round, 1 is
 * drained by 0 before it (the outer iteration must still call its handler:
 * the nested round must not overwrite the outer events), 2 and 3 become
 * readable for the nested round. */
#define NESTED_PIPES 4
static event_loop *nested_el;
static int nested_pipe[NESTED_PIPES][2], nested_calls[NESTED_PIPES], nested_reads[NESTED_PIPES];
static int nested_count, timer_fired, timer_seen_nested;

static int64_t timer_mark(event_loop *el, int64_t id, void *data) {
    K_UNUSED(el);
    K_UNUSED(id);
    K_UNUSED(data);
    timer_fired++;
    return EV_TIMER_STOP;
}

static void on_nested_read(event_loop *el, int fd, void *data, int mask) {
    K_UNUSED(el);
    K_UNUSED(mask);
    int i = (int)(intptr_t)data;
    char c;
    nested_calls[i]++;
    if (read(fd, &c, 1) != 1) return;
    nested_reads[i]++;
    if (i != 0) return;
    ck_assert_int_eq(read(nested_pipe[1][0], &c, 1), 1);
    ck_assert_int_eq(write(nested_pipe[2][1], "x", 1), 1);
    ck_assert_int_eq(write(nested_pipe[3][1], "x", 1), 1);
    nested_count = event_process_files(nested_el);
    timer_seen_nested = timer_fired;
}

START_TEST(test_process_files_nested) {
    nested_el = event_loop_create(64);
    timer_fired = nested_count = 0;
    timer_seen_nested = -1;
    for (int i = 0; i < NESTED_PIPES; i++) {
        ck_assert_int_eq(pipe(nested_pipe[i]), 0);
        nested_calls[i] = nested_reads[i] = 0;
        int fd = nested_pipe[i][0];
        ck_assert_int_eq(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
        ck_assert_int_eq(event_add(nested_el, fd, EV_READABLE, on_nested_read, (void *)(intptr_t)i),
                         K_OK);
    }
    /* Alone: file events only, the due timer waits. */
    event_timer_add(nested_el, 0, timer_mark, NULL);
    ck_assert_int_eq(write(nested_pipe[2][1], "x", 1), 1);
    ck_assert_int_eq(event_process_files(nested_el), 1);
    ck_assert_int_eq(nested_reads[2], 1);
    ck_assert_int_eq(timer_fired, 0);
    /* Nested: no timer inside; the outer events all reach their handlers
     * afterwards; then the timer runs. */
    ck_assert_int_eq(write(nested_pipe[0][1], "x", 1), 1);
    ck_assert_int_eq(write(nested_pipe[1][1], "x", 1), 1);
    event_process(nested_el, 0);
    ck_assert_int_eq(nested_count, 2);
    ck_assert_int_eq(timer_seen_nested, 0);
    ck_assert_int_eq(nested_reads[0], 1);
    ck_assert_int_eq(nested_calls[1], 1);
    ck_assert_int_eq(nested_reads[2], 2);
    ck_assert_int_eq(nested_reads[3], 1);
    ck_assert_int_eq(timer_fired, 1);
    ck_assert_int_eq(event_process_files(nested_el), 0);
    for (int i = 0; i < NESTED_PIPES; i++) {
        event_del(nested_el, nested_pipe[i][0], EV_READABLE);
        close(nested_pipe[i][0]);
        close(nested_pipe[i][1]);
    }
    event_loop_release(nested_el);
}
END_TEST

START_TEST(test_cached_clock) {
    event_set_cached_ms(1234);
    ck_assert_int_eq(event_cached_ms(), 1234);
    event_update_cached_time();
    int64_t now = event_now_ms();
    ck_assert_int_le(event_cached_ms(), now);
    ck_assert_int_gt(event_cached_ms(), now - 1000);
}
END_TEST

static Suite *event_suite(void) {
    Suite *s = suite_create("event");
    TCase *tc = tcase_create("loop");
    tcase_add_test(tc, test_timers_fire_in_due_order);
    tcase_add_test(tc, test_file_event_and_before_sleep);
    tcase_add_test(tc, test_cached_clock);
    tcase_add_test(tc, test_process_files_nested);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(event_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
