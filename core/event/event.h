/* event.h -- the event loop: epoll file events, timers, a before-sleep hook.
 *
 * One loop runs on the main thread. File events carry separate read and
 * write handlers so a connection can wait for writability while it keeps
 * reading. Timers are few (the cron, module timers), so they live in a list
 * ordered by due time.
 *
 * Threads: an event_loop is driven by one thread; no call is thread safe. */
#ifndef KEEL_EVENT_H
#define KEEL_EVENT_H

#include <stdint.h>

#define EV_NONE 0
#define EV_READABLE 1
#define EV_WRITABLE 2

typedef struct event_loop event_loop;

typedef void (*event_file_fn)(event_loop *el, int fd, void *data, int mask);
/* Returns the delay in ms until the timer fires again, or EV_TIMER_STOP. */
typedef int64_t (*event_timer_fn)(event_loop *el, int64_t id, void *data);
typedef void (*event_hook_fn)(event_loop *el);

#define EV_TIMER_STOP (-1)

event_loop *event_loop_create(int setsize);
void event_loop_release(event_loop *el);
int event_loop_setsize(const event_loop *el);
/* Grows the fd table (maxclients changed). Returns K_ERR if an fd above the
 * new size is in use. */
int event_loop_resize(event_loop *el, int setsize);

int event_add(event_loop *el, int fd, int mask, event_file_fn fn, void *data);
void event_del(event_loop *el, int fd, int mask);
int event_mask(const event_loop *el, int fd);

int64_t event_timer_add(event_loop *el, int64_t ms, event_timer_fn fn, void *data);
int event_timer_del(event_loop *el, int64_t id);

void event_set_before_sleep(event_loop *el, event_hook_fn fn);
void event_set_after_sleep(event_loop *el, event_hook_fn fn);

/* Runs until event_loop_stop(). */
void event_loop_run(event_loop *el);
void event_loop_stop(event_loop *el);
/* The next wait for events does not block (work is left that no event will
 * announce: bytes a transport buffered). Reset once the wait is done. */
void event_dont_wait(event_loop *el);
/* Events the last wait returned (valid from the after-sleep hook on). */
int event_fired(const event_loop *el);
/* One iteration; wait_ms < 0 waits until the next timer. Returns events handled. */
int event_process(event_loop *el, int64_t wait_ms);
/* The file events ready now, without waiting, without timers and without
 * the sleep hooks: what a long-running command serves other clients with
 * (session/busy.h). Returns the events handled. The nfired count of the
 * outer iteration is left alone. */
int event_process_files(event_loop *el);

uint64_t event_now_us(void);
int64_t event_now_ms(void);

/* The cached clock: unix ms, refreshed once per event-loop iteration and
 * before each command (event_set_cached_ms), read by expiry, LRU and
 * timeouts instead of a system call each time, as Valkey does. One clock per
 * process. Threads: main thread only. */
extern int64_t event_cached_ms_value;
static inline int64_t event_cached_ms(void) {
    return event_cached_ms_value;
}
static inline void event_set_cached_ms(int64_t ms) {
    event_cached_ms_value = ms;
}
static inline void event_update_cached_time(void) {
    event_cached_ms_value = event_now_ms();
}
uint64_t event_mono_us(void);

#endif
