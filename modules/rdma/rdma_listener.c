/* rdma_listener.c -- the RDMA CM side: the one event channel (opened when
 * a listener is first wanted, after checking that a device exists), the
 * listening ids of rdma-port on each rdma-bind address, re-listening when
 * either changes, and the channel's events: a CONNECT_REQUEST becomes a
 * connection (resources, rdma_accept, conn_adopt), ESTABLISHED starts its
 * protocol, and DISCONNECTED and the other ends only mark it and wake it,
 * so that the server closes it through the close hook (which alone frees
 * it). Every event is acked before anything can destroy its id. Main
 * thread. */
#include "rdma.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>

#define CM_EVENTS_PER_CALL 64

static const char *event_name(enum rdma_cm_event_type t) {
    switch (t) {
    case RDMA_CM_EVENT_REJECTED:
        return "rejected";
    case RDMA_CM_EVENT_UNREACHABLE:
        return "unreachable";
    case RDMA_CM_EVENT_CONNECT_ERROR:
        return "connect error";
    case RDMA_CM_EVENT_DISCONNECTED:
        return "disconnected";
    case RDMA_CM_EVENT_ADDR_CHANGE:
        return "address change";
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        return "device removed";
    default:
        return "other event";
    }
}

/* A request: resources and rdma_accept, the event acked, then the server
 * takes the connection (admission may close it at once). */
static void on_request(struct rdma_cm_event *ev) {
    struct rdma_cm_id *id = ev->id;
    rdma_conn *c = rdma_conn_from_request(id);
    rdma.ops->ack_cm_event(ev);
    if (!c) {
        rdma.ops->destroy_id(id);
        return;
    }
    if (rdma.api->transport->conn_adopt(rdma.ctx, rdma.transport, c->cc->fd, rdma.listen_port, c) !=
        KEEL_OK) {
        rdma.api->core->log(rdma.ctx, KEEL_LOG_WARNING, "RDMA: the server refused to adopt %s",
                            c->peer);
        rdma_conn_free(c);
    }
}

static void on_event(struct rdma_cm_event *ev) {
    enum rdma_cm_event_type type = ev->event;
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
        on_request(ev);
        return;
    }
    struct rdma_cm_id *id = ev->id;
    rdma.ops->ack_cm_event(ev);
    rdma_conn *c = id ? id->context : NULL; /* listening ids have none */
    switch (type) {
    case RDMA_CM_EVENT_ESTABLISHED:
        if (c) rdma_conn_established(c);
        break;
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_ADDR_CHANGE:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        if (c)
            rdma_conn_gone(c, event_name(type));
        else
            rdma.api->core->log(rdma.ctx, KEEL_LOG_WARNING, "RDMA: listener: %s", event_name(type));
        break;
    default: /* TIMEWAIT_EXIT and what a server side never acts on */
        break;
    }
}

static void on_channel_readable(int fd, void *udata) {
    (void)fd, (void)udata;
    for (int i = 0; i < CM_EVENTS_PER_CALL; i++) {
        struct rdma_cm_event *ev = NULL;
        if (rdma.ops->get_cm_event(rdma.channel, &ev) != 0) {
            if (errno != EAGAIN)
                rdma.api->core->log(rdma.ctx, KEEL_LOG_WARNING,
                                    "RDMA: reading the CM event channel failed: %s",
                                    strerror(errno));
            return;
        }
        on_event(ev);
    }
}

/* No device here fails before anything is created (this machine: the list
 * is NULL with ENOSYS, the channel fails with ENODEV). */
static int channel_open(void) {
    const rdma_ops *ops = rdma.ops;
    if (rdma.channel) return KEEL_OK;
    int n = 0;
    errno = 0;
    struct ibv_device **list = ops->get_device_list(&n);
    if (list) ops->free_device_list(list);
    if (!list || n <= 0) {
        snprintf(rdma.last_error, sizeof(rdma.last_error), "RDMA: no RDMA device found (%s)",
                 list ? "the device list is empty" : strerror(errno));
        return KEEL_ERR;
    }
    rdma.channel = ops->create_event_channel();
    if (!rdma.channel) {
        snprintf(rdma.last_error, sizeof(rdma.last_error),
                 "RDMA: no usable RDMA device: cannot create a CM event channel (%s)",
                 strerror(errno));
        return KEEL_ERR;
    }
    int fd = rdma.channel->fd, fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0)
        rdma.watch = rdma.api->transport->fd_watch(rdma.ctx, fd, on_channel_readable, NULL);
    if (!rdma.watch) {
        ops->destroy_event_channel(rdma.channel);
        rdma.channel = NULL;
        snprintf(rdma.last_error, sizeof(rdma.last_error),
                 "RDMA: cannot watch the CM event channel");
        return KEEL_ERR;
    }
    return KEEL_OK;
}

/* addr as the bind directive's: "*", "::*" (any), an address or a name. */
static int resolve(const char *addr, int port, struct sockaddr_storage *out) {
    int af = strchr(addr, ':') ? AF_INET6 : AF_INET;
    const char *host = strcmp(addr, "*") && strcmp(addr, "::*") ? addr : NULL;
    char ps[8];
    snprintf(ps, sizeof(ps), "%d", port);
    struct addrinfo hints = {.ai_family = af, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    int rv = getaddrinfo(host, ps, &hints, &res);
    if (rv != 0 || !res) {
        snprintf(rdma.last_error, sizeof(rdma.last_error), "RDMA: %s: %s", addr,
                 rv ? gai_strerror(rv) : "no address");
        return KEEL_ERR;
    }
    memset(out, 0, sizeof(*out));
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return KEEL_OK;
}

static int listen_one(const char *addr, int port, struct rdma_cm_id **out) {
    const rdma_ops *ops = rdma.ops;
    struct sockaddr_storage sa;
    if (resolve(addr, port, &sa) != KEEL_OK) return KEEL_ERR;
    struct rdma_cm_id *id = NULL;
    if (ops->create_id(rdma.channel, &id, NULL, RDMA_PS_TCP) != 0) {
        snprintf(rdma.last_error, sizeof(rdma.last_error), "RDMA: creating a CM id failed: %s",
                 strerror(errno));
        return KEEL_ERR;
    }
    int afonly = 1;
    ops->set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &afonly, sizeof(afonly));
    const char *step = "bind";
    if (ops->bind_addr(id, (struct sockaddr *)&sa) == 0) {
        step = "listen";
        if (ops->listen(id, 0) == 0) {
            *out = id;
            return KEEL_OK;
        }
    }
    snprintf(rdma.last_error, sizeof(rdma.last_error), "RDMA: %s on %s:%d failed: %s", step, addr,
             port, strerror(errno));
    ops->destroy_id(id);
    return KEEL_ERR;
}

static void ids_close(rdma_listen_set *set) {
    for (int i = 0; i < set->n; i++)
        rdma.ops->destroy_id(set->ids[i]);
    set->n = 0;
}

/* Listens on every address of bind (space-separated; "" is Valkey's
 * default, "*" and "-::*"); a leading '-' makes one optional. */
static int ids_open(rdma_listen_set *set, int port, const char *bind) {
    /* A copy of the whole value (its length is the user's): cut short, its
     * last address would be another one, or none. */
    const char *text = bind && *bind ? bind : "* -::*";
    size_t len = strlen(text) + 1;
    char *copy = rdma.api->core->alloc(len);
    memcpy(copy, text, len);
    char *save = NULL;
    int rv = KEEL_OK;
    set->n = 0;
    for (char *a = strtok_r(copy, " ", &save); a; a = strtok_r(NULL, " ", &save)) {
        int optional = a[0] == '-';
        if (set->n == RDMA_MAX_BIND) break;
        if (listen_one(a + optional, port, &set->ids[set->n]) == KEEL_OK) {
            set->n++;
        } else if (optional) {
            rdma.api->core->log(rdma.ctx, KEEL_LOG_NOTICE, "%s (optional, skipped)",
                                rdma.last_error);
        } else {
            ids_close(set);
            rv = KEEL_ERR;
            break;
        }
    }
    rdma.api->core->free(copy);
    if (rv != KEEL_OK) return KEEL_ERR;
    if (set->n) return KEEL_OK;
    snprintf(rdma.last_error, sizeof(rdma.last_error), "RDMA: no address to listen on");
    return KEEL_ERR;
}

static int same_bind(const char *a, const char *b) {
    return !strcmp(a ? a : "", b ? b : "");
}

static void listen_record(int port, const char *bind) {
    const keel_api *api = rdma.api;
    api->core->free(rdma.listen_bind);
    rdma.listen_bind = NULL;
    if (bind && *bind) {
        size_t n = strlen(bind) + 1;
        rdma.listen_bind = api->core->alloc(n);
        memcpy(rdma.listen_bind, bind, n);
    }
    rdma.listen_port = port;
}

/* The same port on new addresses: the old ids go first (a new one may need
 * an address they hold), and come back if the new ones cannot listen. */
static int relisten_in_place(int port, const char *bind) {
    ids_close(&rdma.listen);
    if (ids_open(&rdma.listen, port, bind) == KEEL_OK) return KEEL_OK;
    char why[sizeof(rdma.last_error)];
    memcpy(why, rdma.last_error, sizeof(why));
    if (ids_open(&rdma.listen, rdma.listen_port, rdma.listen_bind) != KEEL_OK) {
        rdma.api->core->log(rdma.ctx, KEEL_LOG_WARNING,
                            "RDMA: the previous listener could not be restored: %s",
                            rdma.last_error);
        listen_record(0, NULL);
    }
    memcpy(rdma.last_error, why, sizeof(why));
    return KEEL_ERR;
}

/* Another port (or none): the new ids are opened before the old go, so a
 * failure leaves the old listener as it was. */
static int relisten_moved(int port, const char *bind) {
    rdma_listen_set fresh = {0};
    if (port && ids_open(&fresh, port, bind) != KEEL_OK) return KEEL_ERR;
    ids_close(&rdma.listen);
    rdma.listen = fresh;
    return KEEL_OK;
}

int rdma_listener_sync(void) {
    const keel_api *api = rdma.api;
    int port = (int)rdma.cfg.port;
    const char *bind = rdma.cfg.bind;
    if (port == rdma.listen_port && same_bind(bind, rdma.listen_bind)) return KEEL_OK;
    if (port && channel_open() != KEEL_OK) {
        api->core->log(rdma.ctx, KEEL_LOG_WARNING, "%s", rdma.last_error);
        return KEEL_ERR;
    }
    int rv = port && port == rdma.listen_port ? relisten_in_place(port, bind)
                                              : relisten_moved(port, bind);
    if (rv != KEEL_OK) {
        api->core->log(rdma.ctx, KEEL_LOG_WARNING, "%s", rdma.last_error);
        return KEEL_ERR;
    }
    listen_record(port, bind);
    if (port)
        api->core->log(rdma.ctx, KEEL_LOG_NOTICE, "RDMA listening on port %d (%s)", port,
                       bind && *bind ? bind : "* -::*");
    else
        api->core->log(rdma.ctx, KEEL_LOG_NOTICE, "RDMA listener closed");
    return KEEL_OK;
}

void rdma_listener_teardown(void) {
    ids_close(&rdma.listen);
    listen_record(0, NULL);
    rdma.api->transport->fd_unwatch(rdma.watch);
    rdma.watch = NULL;
    /* A channel with ids on it cannot go; the server closes every
     * connection before unloading, so this is only a guard. */
    if (rdma.channel && !rdma.conns) {
        rdma.ops->destroy_event_channel(rdma.channel);
        rdma.channel = NULL;
    }
}
