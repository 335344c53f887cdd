/* rdma_fake_core.c -- the fake RDMA device's bookkeeping: the lock, the
 * registry of live objects, the faults (rdma_fake_set_faults and the
 * KEEL_RDMA_FAKE variable), the live counts and the leak check, and the NIC
 * thread's life: started with the first object, joined after the last one
 * and in the destructor, since the fake may live in a module that is
 * dlclose()d. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "rdma_fake_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
rdma_fake_faults fake_faults = {.rnr_retry = -1};

static pthread_mutex_t fake_life = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fake_once = PTHREAD_ONCE_INIT;

_Noreturn void fake_die(const char *what) {
    fprintf(stderr, "rdma_fake: %s\n", what);
    abort();
}

uint64_t fake_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int fake_fault_hit(long *counter) {
    if (*counter <= 0) return 0;
    return --*counter == 0;
}

/* An eventfd stands for "a queue is not empty": it holds 1 or 0. Only the
 * fake reads it, and only when it holds 1, so a blocking fd never blocks. */
void fake_eventfd_set(int fd, int *signalled, int on) {
    uint64_t v = 1;
    if (on && !*signalled) {
        if (write(fd, &v, sizeof(v)) != sizeof(v)) fake_die("eventfd write failed");
        *signalled = 1;
    } else if (!on && *signalled) {
        if (read(fd, &v, sizeof(v)) != sizeof(v)) fake_die("eventfd read failed");
        *signalled = 0;
    }
}

static int fake_nic_running; /* the NIC thread's state: see below */

/* ---- faults ---- */

static void fake_parse_env(void) {
    const char *env = getenv("KEEL_RDMA_FAKE");
    if (!env || !*env) return;
    char *copy = strdup(env), *save = NULL;
    if (!copy) fake_die("out of memory");
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            fprintf(stderr, "rdma_fake: KEEL_RDMA_FAKE: '%s' is not name=value\n", tok);
            abort();
        }
        *eq = '\0';
        long v = strtol(eq + 1, NULL, 10);
        if (!strcmp(tok, "no_device"))
            fake_faults.no_device = (int)v;
        else if (!strcmp(tok, "max_send_wr"))
            fake_faults.max_send_wr = (int)v;
        else if (!strcmp(tok, "max_recv_wr"))
            fake_faults.max_recv_wr = (int)v;
        else if (!strcmp(tok, "fail_reg_mr"))
            fake_faults.fail_reg_mr = v;
        else if (!strcmp(tok, "fail_post_send"))
            fake_faults.fail_post_send = v;
        else if (!strcmp(tok, "fail_create_qp"))
            fake_faults.fail_create_qp = v;
        else if (!strcmp(tok, "rnr_retry"))
            fake_faults.rnr_retry = (int)v;
        else if (!strcmp(tok, "leak_check"))
            fake_faults.leak_check = (int)v;
        else {
            fprintf(stderr, "rdma_fake: KEEL_RDMA_FAKE: unknown name '%s'\n", tok);
            abort();
        }
    }
    free(copy);
}

/* A forked child (BGSAVE and the like) inherits the fake's memory but not
 * its NIC thread: it must not join a thread it does not have, nor report
 * its parent's objects as leaks, and it lets go of the parent's wires so
 * that the peers see them close when the parent closes them. */
static int fake_in_child;

static void fake_atfork_child(void) {
    fake_in_child = 1;
    fake_nic_running = 0;
    if (pthread_mutex_trylock(&fake_lock) == 0) { /* else the list was mid-change */
        for (fake_sock *s = fake_socks; s; s = s->next) {
            close(s->fd);
            s->fd = -1;
        }
        pthread_mutex_unlock(&fake_lock);
    }
}

static void fake_init(void) {
    fake_parse_env();
    pthread_atfork(NULL, NULL, fake_atfork_child);
}

void fake_init_once(void) {
    pthread_once(&fake_once, fake_init);
}

int fake_no_device(void) {
    fake_init_once();
    pthread_mutex_lock(&fake_lock);
    int v = fake_faults.no_device;
    pthread_mutex_unlock(&fake_lock);
    return v;
}

void rdma_fake_set_faults(const rdma_fake_faults *faults) {
    fake_init_once();
    pthread_mutex_lock(&fake_lock);
    fake_faults = *faults;
    pthread_mutex_unlock(&fake_lock);
}

/* ---- registry: an open-addressing set of live pointers ---- */

typedef struct fake_slot {
    const void *p; /* NULL empty, &fake_tomb deleted */
    int kind;
} fake_slot;

static const char fake_tomb;
static fake_slot *fake_slots;
static size_t fake_slot_cap, fake_slot_used; /* used counts tombstones */
static long fake_live[FAKE_NKINDS];
static long fake_live_total;

static const char *const fake_kind_name[FAKE_NKINDS] = {"event channel",      "cm id", "pd", "cq",
                                                        "completion channel", "qp",    "mr"};

static size_t fake_hash(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static fake_slot *fake_slot_find(const void *p) {
    if (!fake_slot_cap) return NULL;
    for (size_t i = fake_hash(p) & (fake_slot_cap - 1);; i = (i + 1) & (fake_slot_cap - 1)) {
        if (fake_slots[i].p == p) return &fake_slots[i];
        if (!fake_slots[i].p) return NULL;
    }
}

static void fake_slot_put(fake_slot *tab, size_t cap, const void *p, int kind) {
    size_t i = fake_hash(p) & (cap - 1);
    while (tab[i].p && tab[i].p != &fake_tomb)
        i = (i + 1) & (cap - 1);
    tab[i].p = p;
    tab[i].kind = kind;
}

static void fake_slot_grow(void) {
    size_t cap = fake_slot_cap ? fake_slot_cap * 2 : 64;
    while ((size_t)fake_live_total * 2 >= cap)
        cap *= 2;
    fake_slot *tab = calloc(cap, sizeof(*tab));
    if (!tab) fake_die("out of memory");
    for (size_t i = 0; i < fake_slot_cap; i++)
        if (fake_slots[i].p && fake_slots[i].p != &fake_tomb)
            fake_slot_put(tab, cap, fake_slots[i].p, fake_slots[i].kind);
    free(fake_slots);
    fake_slots = tab;
    fake_slot_cap = cap;
    fake_slot_used = (size_t)fake_live_total;
}

void fake_reg_add(void *obj, fake_kind kind) {
    if ((fake_slot_used + 1) * 2 > fake_slot_cap) fake_slot_grow();
    fake_slot_put(fake_slots, fake_slot_cap, obj, kind);
    fake_slot_used++;
    fake_live[kind]++;
    fake_live_total++;
}

static int fake_reg_has(const void *obj, fake_kind kind) {
    const fake_slot *s = obj ? fake_slot_find(obj) : NULL;
    return s && s->kind == (int)kind;
}

void fake_reg_check(const void *obj, fake_kind kind, const char *what) {
    if (!fake_reg_has(obj, kind)) fake_die(what);
}

void fake_reg_del(void *obj, fake_kind kind, const char *what) {
    fake_slot *s = obj ? fake_slot_find(obj) : NULL;
    if (!s || s->kind != (int)kind) fake_die(what);
    s->p = &fake_tomb;
    fake_live[kind]--;
    fake_live_total--;
}

void rdma_fake_live(rdma_fake_counts *out) {
    pthread_mutex_lock(&fake_lock);
    out->channels = fake_live[FAKE_CHANNEL];
    out->ids = fake_live[FAKE_ID];
    out->pds = fake_live[FAKE_PD];
    out->cqs = fake_live[FAKE_CQ];
    out->comp_channels = fake_live[FAKE_COMP];
    out->qps = fake_live[FAKE_QP];
    out->mrs = fake_live[FAKE_MR];
    pthread_mutex_unlock(&fake_lock);
}

/* ---- the NIC thread ---- */

static pthread_t fake_nic;
static int fake_nic_stop;
static int fake_epfd = -1, fake_wakefd = -1;
static const char fake_wake_tag; /* epoll data of the wake eventfd */

void fake_nic_kick(void) {
    uint64_t v = 1;
    if (fake_wakefd >= 0 && write(fake_wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        fake_die("NIC wake failed");
}

void fake_nic_add_fd(fake_sock *s) {
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = s};
    if (epoll_ctl(fake_epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0) fake_die("epoll_ctl ADD failed");
}

void fake_nic_del_fd(fake_sock *s) {
    if (epoll_ctl(fake_epfd, EPOLL_CTL_DEL, s->fd, NULL) < 0) fake_die("epoll_ctl DEL failed");
}

void fake_nic_want_out(fake_sock *s, int on) {
    if (s->want_out == on) return;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0u), .data.ptr = s};
    if (epoll_ctl(fake_epfd, EPOLL_CTL_MOD, s->fd, &ev) < 0) fake_die("epoll_ctl MOD failed");
    s->want_out = on;
}

static void *fake_nic_main(void *arg) {
    (void)arg;
    struct epoll_event evs[64];
    pthread_mutex_lock(&fake_lock);
    while (!fake_nic_stop) {
        uint64_t deadline = fake_nic_next_deadline();
        int timeout = -1;
        if (deadline) {
            uint64_t now = fake_now_ms();
            timeout = deadline > now ? (int)(deadline - now) : 0;
        }
        pthread_mutex_unlock(&fake_lock);
        int n = epoll_wait(fake_epfd, evs, 64, timeout);
        pthread_mutex_lock(&fake_lock);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &fake_wake_tag) {
                uint64_t v;
                if (read(fake_wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
                    fake_die("NIC wake read failed");
            } else {
                fake_nic_sock_event(evs[i].data.ptr, evs[i].events);
            }
        }
        fake_nic_pass();
    }
    while (fake_socks) { /* all ids are gone: a last try at their goodbyes */
        fake_sock *s = fake_socks;
        fake_socks = s->next;
        fake_sock_final_flush(s);
        fake_sock_free(s);
    }
    pthread_mutex_unlock(&fake_lock);
    return NULL;
}

static void fake_nic_start(void) {
    fake_epfd = epoll_create1(EPOLL_CLOEXEC);
    fake_wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fake_epfd < 0 || fake_wakefd < 0) fake_die("cannot create the NIC's descriptors");
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = (void *)&fake_wake_tag};
    if (epoll_ctl(fake_epfd, EPOLL_CTL_ADD, fake_wakefd, &ev) < 0) fake_die("epoll_ctl failed");
    fake_nic_stop = 0;
    if (pthread_create(&fake_nic, NULL, fake_nic_main, NULL)) fake_die("cannot start the NIC");
    fake_nic_running = 1;
}

static void fake_nic_join(void) {
    pthread_mutex_lock(&fake_lock);
    fake_nic_stop = 1;
    fake_nic_kick();
    pthread_mutex_unlock(&fake_lock);
    pthread_join(fake_nic, NULL);
    close(fake_epfd);
    close(fake_wakefd);
    fake_epfd = fake_wakefd = -1;
    fake_nic_running = 0;
}

void fake_life_begin(void) {
    fake_init_once();
    pthread_mutex_lock(&fake_life);
    if (!fake_nic_running) fake_nic_start();
}

void fake_life_end(void) {
    pthread_mutex_lock(&fake_lock);
    long total = fake_live_total;
    pthread_mutex_unlock(&fake_lock);
    if (total == 0 && fake_nic_running) fake_nic_join();
    pthread_mutex_unlock(&fake_life);
}

static void fake_leak_report(void) {
    if (!fake_live_total) return;
    fprintf(stderr, "rdma_fake: %ld objects alive at exit:\n", fake_live_total);
    for (size_t i = 0; i < fake_slot_cap; i++)
        if (fake_slots[i].p && fake_slots[i].p != &fake_tomb)
            fprintf(stderr, "rdma_fake:   %s %p\n", fake_kind_name[fake_slots[i].kind],
                    fake_slots[i].p);
}

__attribute__((destructor)) static void fake_fini(void) {
    if (fake_in_child) return;
    pthread_mutex_lock(&fake_life);
    if (fake_nic_running) fake_nic_join();
    pthread_mutex_unlock(&fake_life);
    fake_leak_report();
    if (fake_faults.leak_check && fake_live_total) _exit(3);
    /* In a module that is dlclose()d the registry would go with the
     * module's data and LeakSanitizer report it; kept while objects live. */
    if (!fake_live_total) {
        free(fake_slots);
        fake_slots = NULL;
        fake_slot_cap = fake_slot_used = 0;
    }
}
