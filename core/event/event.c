/* event.c -- epoll-based event loop with timers (see event.h). */
#include "event/event.h"

#include "common/common.h"
#include "common/kmem.h"

#include <errno.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

typedef struct file_event {
    int mask;
    event_file_fn rfn;
    event_file_fn wfn;
    void *rdata;
    void *wdata;
} file_event;

typedef struct timer_event {
    int64_t id;
    uint64_t when_us; /* monotonic */
    event_timer_fn fn;
    void *data;
    struct timer_event *next;
} timer_event;

struct event_loop {
    int epfd;
    int setsize;
    int stop;
    int nfired; /* events the last epoll_wait returned */
    int64_t next_timer_id;
    file_event *events;
    struct epoll_event *fired;
    /* event_process_files runs inside a handler of the outer iteration,
     * whose events must survive it. */
    struct epoll_event *fired_nested;
    timer_event *timers; /* sorted by when_us */
    event_hook_fn before_sleep;
    int dont_wait; /* event_dont_wait: the next wait is a poll */
    event_hook_fn after_sleep;
};

uint64_t event_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int64_t event_cached_ms_value;

uint64_t event_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int64_t event_now_ms(void) {
    return (int64_t)(event_now_us() / 1000);
}

event_loop *event_loop_create(int setsize) {
    event_loop *el = km_calloc(1, sizeof(*el));
    el->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (el->epfd == -1) {
        km_free(el);
        return NULL;
    }
    el->setsize = setsize;
    el->events = km_calloc((size_t)setsize, sizeof(file_event));
    el->fired = km_calloc((size_t)setsize, sizeof(struct epoll_event));
    el->fired_nested = km_calloc((size_t)setsize, sizeof(struct epoll_event));
    return el;
}

void event_loop_release(event_loop *el) {
    while (el->timers) {
        timer_event *t = el->timers;
        el->timers = t->next;
        km_free(t);
    }
    close(el->epfd);
    km_free(el->events);
    km_free(el->fired);
    km_free(el->fired_nested);
    km_free(el);
}

int event_loop_setsize(const event_loop *el) {
    return el->setsize;
}

int event_loop_resize(event_loop *el, int setsize) {
    for (int fd = setsize; fd < el->setsize; fd++)
        if (el->events[fd].mask != EV_NONE) return K_ERR;
    el->events = km_realloc(el->events, sizeof(file_event) * (size_t)setsize);
    el->fired = km_realloc(el->fired, sizeof(struct epoll_event) * (size_t)setsize);
    el->fired_nested = km_realloc(el->fired_nested, sizeof(struct epoll_event) * (size_t)setsize);
    for (int fd = el->setsize; fd < setsize; fd++) el->events[fd].mask = EV_NONE;
    el->setsize = setsize;
    return K_OK;
}

static int event_epoll_update(event_loop *el, int fd, int oldmask, int newmask) {
    struct epoll_event ee = {0};
    ee.events = (newmask & EV_READABLE ? EPOLLIN : 0) | (newmask & EV_WRITABLE ? EPOLLOUT : 0);
    ee.data.fd = fd;
    int op = oldmask == EV_NONE ? EPOLL_CTL_ADD : (newmask == EV_NONE ? EPOLL_CTL_DEL : EPOLL_CTL_MOD);
    return epoll_ctl(el->epfd, op, fd, &ee) == -1 ? K_ERR : K_OK;
}

int event_add(event_loop *el, int fd, int mask, event_file_fn fn, void *data) {
    if (fd < 0 || fd >= el->setsize) {
        errno = ERANGE;
        return K_ERR;
    }
    file_event *fe = &el->events[fd];
    int newmask = fe->mask | mask;
    if (newmask != fe->mask && event_epoll_update(el, fd, fe->mask, newmask) != K_OK)
        return K_ERR;
    fe->mask = newmask;
    if (mask & EV_READABLE) {
        fe->rfn = fn;
        fe->rdata = data;
    }
    if (mask & EV_WRITABLE) {
        fe->wfn = fn;
        fe->wdata = data;
    }
    return K_OK;
}

void event_del(event_loop *el, int fd, int mask) {
    if (fd < 0 || fd >= el->setsize) return;
    file_event *fe = &el->events[fd];
    if (fe->mask == EV_NONE) return;
    int newmask = fe->mask & ~mask;
    if (newmask != fe->mask) event_epoll_update(el, fd, fe->mask, newmask);
    fe->mask = newmask;
}

int event_mask(const event_loop *el, int fd) {
    if (fd < 0 || fd >= el->setsize) return EV_NONE;
    return el->events[fd].mask;
}

static void event_timer_insert(event_loop *el, timer_event *t) {
    timer_event **pp = &el->timers;
    while (*pp && (*pp)->when_us <= t->when_us) pp = &(*pp)->next;
    t->next = *pp;
    *pp = t;
}

int64_t event_timer_add(event_loop *el, int64_t ms, event_timer_fn fn, void *data) {
    timer_event *t = km_calloc(1, sizeof(*t));
    t->id = ++el->next_timer_id;
    t->when_us = event_mono_us() + (uint64_t)(ms < 0 ? 0 : ms) * 1000;
    t->fn = fn;
    t->data = data;
    event_timer_insert(el, t);
    return t->id;
}

int event_timer_del(event_loop *el, int64_t id) {
    for (timer_event **pp = &el->timers; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            timer_event *t = *pp;
            *pp = t->next;
            km_free(t);
            return K_OK;
        }
    }
    return K_ERR;
}

void event_set_before_sleep(event_loop *el, event_hook_fn fn) {
    el->before_sleep = fn;
}

void event_set_after_sleep(event_loop *el, event_hook_fn fn) {
    el->after_sleep = fn;
}

/* Runs due timers. A timer is unlinked before its callback so the callback
 * may add or delete timers (itself included) freely. */
static int event_process_timers(event_loop *el) {
    int processed = 0;
    uint64_t now = event_mono_us();
    while (el->timers && el->timers->when_us <= now) {
        timer_event *t = el->timers;
        el->timers = t->next;
        int64_t again = t->fn(el, t->id, t->data);
        if (again == EV_TIMER_STOP) {
            km_free(t);
        } else {
            t->when_us = event_mono_us() + (uint64_t)again * 1000;
            event_timer_insert(el, t);
        }
        processed++;
    }
    return processed;
}

static int event_wait_timeout(event_loop *el, int64_t wait_ms) {
    if (!el->timers) return (int)wait_ms;
    uint64_t now = event_mono_us();
    int64_t until = el->timers->when_us > now ? (int64_t)((el->timers->when_us - now + 999) / 1000) : 0;
    if (wait_ms < 0 || until < wait_ms) return (int)until;
    return (int)wait_ms;
}

/* Runs the handlers of the n events in fired. */
static void event_dispatch(event_loop *el, const struct epoll_event *fired, int n) {
    for (int i = 0; i < n; i++) {
        int fd = fired[i].data.fd;
        uint32_t ev = fired[i].events;
        file_event *fe = &el->events[fd];
        /* Errors and hang-ups are reported to both handlers, whose read or
         * write then observes the condition. */
        int readable = ev & (EPOLLIN | EPOLLERR | EPOLLHUP);
        int writable = ev & (EPOLLOUT | EPOLLERR | EPOLLHUP);
        int fired_read = 0;
        if (readable && (fe->mask & EV_READABLE)) {
            fe->rfn(el, fd, fe->rdata, EV_READABLE);
            fired_read = 1;
        }
        fe = &el->events[fd]; /* the handler may have resized the table */
        if (writable && (fe->mask & EV_WRITABLE)) {
            if (!fired_read || fe->wfn != fe->rfn || fe->wdata != fe->rdata)
                fe->wfn(el, fd, fe->wdata, EV_WRITABLE);
        }
    }
}

int event_process(event_loop *el, int64_t wait_ms) {
    int timeout = event_wait_timeout(el, wait_ms);
    int n = epoll_wait(el->epfd, el->fired, el->setsize, timeout);
    el->nfired = n > 0 ? n : 0;
    if (el->after_sleep) el->after_sleep(el);
    event_dispatch(el, el->fired, n);
    return el->nfired + event_process_timers(el);
}

int event_process_files(event_loop *el) {
    int n = epoll_wait(el->epfd, el->fired_nested, el->setsize, 0);
    if (n <= 0) return 0;
    event_dispatch(el, el->fired_nested, n);
    return n;
}

void event_loop_run(event_loop *el) {
    el->stop = 0;
    while (!el->stop) {
        if (el->before_sleep) el->before_sleep(el);
        if (el->stop) break;
        int64_t wait = el->dont_wait ? 0 : -1;
        el->dont_wait = 0;
        event_process(el, wait);
    }
}

int event_fired(const event_loop *el) {
    return el->nfired;
}

void event_loop_stop(event_loop *el) {
    el->stop = 1;
}

void event_dont_wait(event_loop *el) {
    el->dont_wait = 1;
}
