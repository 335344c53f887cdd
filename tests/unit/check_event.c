/* check_event.c -- unit tests for core/event/event.c: timers in due order
 * and re-armed by their return value, file events on a pipe, the
 * before-sleep hook, event_loop_stop, and the cached clock. The event loop
 * stands alone: no server object is set up. */
#include "event/event.h"

#include "common/common.h"

#include <check.h>
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
    while (tlog.n < 3 && event_mono_us() - start < 2000000) event_process(el, -1);
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
