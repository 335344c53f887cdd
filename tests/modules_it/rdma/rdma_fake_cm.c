/* rdma_fake_cm.c -- the fake's connection manager and its wire.
 *
 * A listening CM id owns a unix stream socket in the abstract namespace
 * named after its address ("@keel-rdma-fake/127.0.0.1:6380"); a connecting
 * id dials that name (or the wildcard one of the same port). Each
 * connection is one socket carrying framed messages (fake_frame_hdr, then
 * the payload): the CM exchange CONNECT -> ACCEPT | REJECT -> RTU, then
 * DATA and ACK for the queue pairs, and DISCONNECT. EOF without DISCONNECT
 * is a vanished peer. Anything malformed cuts that one connection.
 *
 * Sockets are read, written and closed only by the NIC thread; user calls
 * append output, mark a socket dead and kick the thread. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "rdma_fake_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FAKE_OUT_HIGH (4u << 20) /* transmit no more while this much is unsent */
#define FAKE_RNR_STEP_MS 2       /* one receiver-not-ready retry */
#define FAKE_REJ_CONSUMER 28     /* IB_CM_REJ_CONSUMER_DEFINED */

fake_sock *fake_socks;

typedef struct fake_connect_msg {
    struct sockaddr_storage src, dst;
    uint32_t qp_num, rnr_retry, pdata_len;
    uint8_t resp_res, init_depth, retry, flow;
    uint8_t pdata[256];
} fake_connect_msg;

typedef struct fake_answer_msg { /* ACCEPT and REJECT */
    uint32_t qp_num, pdata_len;
    uint8_t resp_res, init_depth, rsv[2];
    uint8_t pdata[256];
} fake_answer_msg;

/* Events fetched by get_cm_event and not yet acked. */
static fake_cm_event *fake_fetched;

/* ---- events ---- */

static fake_id *fake_event_acct(const fake_cm_event *ev) {
    return ev->pub.event == RDMA_CM_EVENT_CONNECT_REQUEST ? (fake_id *)ev->pub.listen_id
                                                          : ev->owner;
}

void fake_cm_queue(fake_id *id, fake_id *listen_id, enum rdma_cm_event_type type, int status,
                   const struct rdma_conn_param *param) {
    fake_cm_event *ev = calloc(1, sizeof(*ev));
    if (!ev) fake_die("out of memory");
    ev->owner = id;
    ev->pub.id = &id->pub;
    ev->pub.listen_id = listen_id ? &listen_id->pub : NULL;
    ev->pub.event = type;
    ev->pub.status = status;
    if (param) {
        ev->pub.param.conn = *param;
        if (param->private_data_len && param->private_data)
            memcpy(ev->pdata, param->private_data, param->private_data_len);
        int has = param->private_data_len && param->private_data;
        ev->pub.param.conn.private_data = has ? ev->pdata : NULL;
        ev->pub.param.conn.private_data_len = has ? param->private_data_len : 0;
    }
    fake_channel *ch = (fake_channel *)id->pub.channel;
    if (ch->tail)
        ch->tail->next = ev;
    else
        ch->head = ev;
    ch->tail = ev;
    fake_eventfd_set(ch->pub.fd, &ch->signalled, 1);
}

/* Removes the channel's queued events for which drop(ev, arg) says 1. */
static void fake_channel_drop(fake_channel *ch, int (*drop)(fake_cm_event *, void *), void *arg) {
    fake_cm_event **pp = &ch->head, *last = NULL;
    while (*pp) {
        fake_cm_event *ev = *pp;
        if (drop(ev, arg)) {
            *pp = ev->next;
            free(ev);
        } else {
            last = ev;
            pp = &ev->next;
        }
    }
    ch->tail = last;
    fake_eventfd_set(ch->pub.fd, &ch->signalled, ch->head != NULL);
}

int fake_fd_wait(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK)) {
        errno = EAGAIN;
        return -1;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    return 0;
}

/* ---- sockets ---- */

static void fake_sock_link(fake_sock *s) {
    s->next = fake_socks;
    fake_socks = s;
}

static fake_sock *fake_sock_new(int fd) {
    fake_sock *s = calloc(1, sizeof(*s));
    if (!s) fake_die("out of memory");
    s->fd = fd;
    return s;
}

void fake_sock_final_flush(fake_sock *s) {
    if (s->fd >= 0 && !s->listening && s->out_off < s->out_len)
        (void)!send(s->fd, s->out + s->out_off, s->out_len - s->out_off,
                    MSG_DONTWAIT | MSG_NOSIGNAL);
}

void fake_sock_free(fake_sock *s) {
    if (s->fd >= 0) close(s->fd);
    while (s->parked) {
        fake_frame *f = s->parked;
        s->parked = f->next;
        free(f);
    }
    free(s->in);
    free(s->out);
    free(s);
}

static void fake_sock_kill(fake_sock *s, int linger) {
    s->dead = 1;
    s->linger = linger;
    fake_nic_kick();
}

/* Appends a frame and returns where its len payload bytes go. */
static uint8_t *fake_sock_frame(fake_sock *s, fake_frame_type type, size_t len) {
    if (s->out_off == s->out_len) s->out_off = s->out_len = 0;
    size_t need = s->out_len + sizeof(fake_frame_hdr) + len;
    if (need > s->out_cap) {
        size_t cap = s->out_cap ? s->out_cap : 4096;
        while (cap < need)
            cap *= 2;
        uint8_t *p = realloc(s->out, cap);
        if (!p) fake_die("out of memory");
        s->out = p;
        s->out_cap = cap;
    }
    fake_frame_hdr h = {FAKE_FRAME_MAGIC, type, (uint32_t)len, 0};
    memcpy(s->out + s->out_len, &h, sizeof(h));
    uint8_t *payload = s->out + s->out_len + sizeof(h);
    s->out_len = need;
    fake_nic_kick();
    return payload;
}

void fake_sock_send(fake_sock *s, fake_frame_type type, const void *p1, size_t n1, const void *p2,
                    size_t n2) {
    uint8_t *p = fake_sock_frame(s, type, n1 + n2);
    if (n1) memcpy(p, p1, n1);
    if (n2) memcpy(p + n1, p2, n2);
}

uint8_t *fake_sock_data_frame(fake_sock *s, size_t len) {
    return fake_sock_frame(s, FR_DATA, len);
}

int fake_sock_has_room(const fake_sock *s) {
    return s->out_len - s->out_off < FAKE_OUT_HIGH;
}

/* ---- connection state ---- */

static int fake_id_connected(const fake_id *id) {
    return id->state == ID_CONNECTING || id->state == ID_REQUEST || id->state == ID_ACCEPTED ||
           id->state == ID_ESTABLISHED;
}

/* The connection of id ends: its QP errors (flushing), the wire is closed
 * (after a DISCONNECT when tell_peer), and id learns it by an event. */
void fake_conn_down(fake_id *id, int tell_peer) {
    fake_id_state was = id->state;
    if (!fake_id_connected(id)) return;
    id->state = ID_CLOSED;
    if (id->pub.qp) fake_qp_set_error((fake_qp *)id->pub.qp);
    fake_sock *s = id->sock;
    if (s) {
        if (tell_peer) fake_sock_send(s, FR_DISCONNECT, NULL, 0, NULL, 0);
        fake_sock_kill(s, tell_peer);
        s->id = NULL;
        id->sock = NULL;
    }
    if (was == ID_CONNECTING && !tell_peer)
        fake_cm_queue(id, NULL, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL);
    else if (was != ID_REQUEST)
        fake_cm_queue(id, NULL, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
}

/* ---- names ---- */

static int fake_addr_name(const struct sockaddr *sa, int wildcard, struct sockaddr_un *un,
                          socklen_t *len) {
    char ip[INET6_ADDRSTRLEN];
    int port;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        if (wildcard) strcpy(ip, "0.0.0.0");
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        if (wildcard) strcpy(ip, "::");
        port = ntohs(in6->sin6_port);
    } else {
        return -1;
    }
    memset(un, 0, sizeof(*un));
    un->sun_family = AF_UNIX;
    int n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1,
                     sa->sa_family == AF_INET ? "keel-rdma-fake/%s:%d" : "keel-rdma-fake/[%s]:%d",
                     ip, port);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    return 0;
}

static socklen_t fake_addr_len(const struct sockaddr *sa) {
    return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static void fake_addr_set_port(struct sockaddr *sa, int port) {
    if (sa->sa_family == AF_INET)
        ((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
}

static int fake_addr_port(const struct sockaddr *sa) {
    return ntohs(sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port
                                          : ((const struct sockaddr_in6 *)sa)->sin6_port);
}

static int fake_addr_is_any(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET)
        return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
    return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &in6addr_any,
                   sizeof(in6addr_any));
}

static int fake_check_sa(const struct sockaddr *sa) {
    if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)) {
        errno = EAFNOSUPPORT;
        return -1;
    }
    return 0;
}

/* ---- the CM calls ---- */

static struct rdma_event_channel *fake_create_event_channel(void) {
    if (fake_no_device()) {
        errno = ENODEV;
        return NULL;
    }
    fake_channel *ch = calloc(1, sizeof(*ch));
    if (!ch) return NULL;
    ch->pub.fd = eventfd(0, EFD_CLOEXEC);
    if (ch->pub.fd < 0) {
        free(ch);
        return NULL;
    }
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    fake_reg_add(ch, FAKE_CHANNEL);
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
    return &ch->pub;
}

static void fake_destroy_event_channel(struct rdma_event_channel *channel) {
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    fake_channel *ch = (fake_channel *)channel;
    fake_reg_del(ch, FAKE_CHANNEL, "destroy_event_channel of a channel not alive");
    if (ch->ids) fake_die("destroy_event_channel with ids still on it");
    close(ch->pub.fd);
    free(ch);
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
}

static int fake_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out,
                          void *context, enum rdma_port_space ps) {
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    fake_reg_check(channel, FAKE_CHANNEL, "create_id on a channel not alive");
    fake_id *id = calloc(1, sizeof(*id));
    if (!id) fake_die("out of memory");
    id->pub.channel = channel;
    id->pub.context = context;
    id->pub.ps = ps;
    id->pub.qp_type = IBV_QPT_RC;
    ((fake_channel *)channel)->ids++;
    fake_reg_add(id, FAKE_ID);
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
    *out = &id->pub;
    return 0;
}

static int fake_drop_owned(fake_cm_event *ev, void *arg) {
    return ev->owner == arg;
}

/* A child id the user never saw (its CONNECT_REQUEST is still queued when
 * its listener goes): rejected and freed. */
static void fake_id_free_unseen(fake_id *id) {
    if (id->sock) {
        fake_answer_msg m = {0};
        fake_sock_send(id->sock, FR_REJECT, &m, sizeof(m), NULL, 0);
        fake_sock_kill(id->sock, 1);
        id->sock->id = NULL;
    }
    ((fake_channel *)id->pub.channel)->ids--;
    fake_reg_del(id, FAKE_ID, "internal: unseen id");
    free(id);
}

static int fake_drop_requests(fake_cm_event *ev, void *arg) {
    if (ev->pub.event != RDMA_CM_EVENT_CONNECT_REQUEST || ev->pub.listen_id != arg) return 0;
    fake_id_free_unseen(ev->owner);
    return 1;
}

/* Closes a listener's socket now rather than on the NIC thread: the real CM
 * frees the port before rdma_destroy_id returns, and a server rebinding the
 * same address right after counts on that. Its connections not yet
 * requested go with it. */
static void fake_listener_close(fake_id *id) {
    for (fake_sock *s = fake_socks; s; s = s->next)
        if (s->listener == id) {
            s->listener = NULL;
            fake_sock_kill(s, 0);
        }
    fake_channel_drop((fake_channel *)id->pub.channel, fake_drop_requests, &id->pub);
    fake_nic_del_fd(id->sock);
    close(id->sock->fd);
    id->sock->fd = -1; /* the NIC thread frees the rest */
}

static int fake_destroy_id(struct rdma_cm_id *cm_id) {
    fake_life_begin();
    pthread_mutex_lock(&fake_lock);
    fake_id *id = (fake_id *)cm_id;
    fake_reg_check(id, FAKE_ID, "destroy_id of an id not alive");
    if (id->pub.qp) fake_die("destroy_id with its QP alive (destroy_qp first)");
    if (id->unacked) {
        pthread_mutex_unlock(&fake_lock);
        fake_life_end();
        fprintf(stderr,
                "rdma_fake: destroy_id with %ld unacked events (librdmacm would "
                "block forever)\n",
                id->unacked);
        errno = EBUSY;
        return -1;
    }
    if (id->state == ID_REQUEST && id->sock) {
        fake_answer_msg m = {0};
        fake_sock_send(id->sock, FR_REJECT, &m, sizeof(m), NULL, 0);
        id->state = ID_CLOSED;
        fake_sock_kill(id->sock, 1);
    } else if (id->state == ID_LISTEN) {
        fake_listener_close(id);
    }
    fake_conn_down(id, 1);
    if (id->sock) {
        id->sock->id = NULL;
        if (id->state == ID_BOUND)
            fake_sock_free(id->sock); /* never linked */
        else
            fake_sock_kill(id->sock, 1);
    }
    fake_channel *ch = (fake_channel *)id->pub.channel;
    fake_channel_drop(ch, fake_drop_owned, id);
    ch->ids--;
    fake_reg_del(id, FAKE_ID, "destroy_id of an id not alive");
    free(id);
    pthread_mutex_unlock(&fake_lock);
    fake_life_end();
    return 0;
}

static int fake_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
                           size_t optlen) {
    (void)optval;
    (void)optlen;
    pthread_mutex_lock(&fake_lock);
    fake_reg_check(id, FAKE_ID, "set_option on an id not alive");
    pthread_mutex_unlock(&fake_lock);
    if (level != RDMA_OPTION_ID ||
        (optname != RDMA_OPTION_ID_TOS && optname != RDMA_OPTION_ID_REUSEADDR &&
         optname != RDMA_OPTION_ID_AFONLY && optname != RDMA_OPTION_ID_ACK_TIMEOUT)) {
        errno = ENOSYS;
        return -1;
    }
    return 0;
}

/* Binds the socket of this address; port 0 takes a free one. */
static int fake_bind_name(int fd, struct sockaddr *sa) {
    int port = fake_addr_port(sa);
    unsigned seed = (unsigned)getpid() ^ (unsigned)fake_now_ms();
    for (int tries = 0; tries < 1000; tries++) {
        if (!fake_addr_port(sa)) fake_addr_set_port(sa, 20000 + (int)(rand_r(&seed) % 40000));
        struct sockaddr_un un;
        socklen_t len;
        fake_addr_name(sa, 0, &un, &len);
        if (bind(fd, (struct sockaddr *)&un, len) == 0) return 0;
        if (errno != EADDRINUSE || port) return -1;
        fake_addr_set_port(sa, 0);
    }
    return -1;
}

static int fake_bind_addr(struct rdma_cm_id *cm_id, struct sockaddr *addr) {
    if (fake_check_sa(addr) < 0) return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_storage ss = {0};
    memcpy(&ss, addr, fake_addr_len(addr));
    if (fake_bind_name(fd, (struct sockaddr *)&ss) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    pthread_mutex_lock(&fake_lock);
    fake_id *id = (fake_id *)cm_id;
    fake_reg_check(id, FAKE_ID, "bind_addr on an id not alive");
    if (id->state != ID_IDLE) {
        pthread_mutex_unlock(&fake_lock);
        close(fd);
        errno = EINVAL;
        return -1;
    }
    memcpy(&id->pub.route.addr.src_storage, &ss, sizeof(ss));
    /* as librdmacm: a wildcard bind is tied to no device yet */
    if (!fake_addr_is_any((struct sockaddr *)&ss)) id->pub.verbs = &fake_context;
    id->sock = fake_sock_new(fd);
    id->sock->id = id;
    id->state = ID_BOUND;
    pthread_mutex_unlock(&fake_lock);
    return 0;
}

static int fake_listen(struct rdma_cm_id *cm_id, int backlog) {
    pthread_mutex_lock(&fake_lock);
    fake_id *id = (fake_id *)cm_id;
    fake_reg_check(id, FAKE_ID, "listen on an id not alive");
    if (id->state != ID_BOUND) {
        pthread_mutex_unlock(&fake_lock);
        errno = EINVAL;
        return -1;
    }
    if (listen(id->sock->fd, backlog > 0 ? backlog : SOMAXCONN) < 0) {
        pthread_mutex_unlock(&fake_lock);
        return -1;
    }
    id->sock->listening = 1;
    id->state = ID_LISTEN;
    fake_sock_link(id->sock);
    fake_nic_add_fd(id->sock);
    pthread_mutex_unlock(&fake_lock);
    return 0;
}

static int fake_resolve_addr(struct rdma_cm_id *cm_id, struct sockaddr *src, struct sockaddr *dst,
                             int timeout_ms) {
    (void)timeout_ms;
    if (fake_check_sa(dst) < 0 || (src && fake_check_sa(src) < 0)) return -1;
    static int fake_next_port = 40000;
    pthread_mutex_lock(&fake_lock);
    fake_id *id = (fake_id *)cm_id;
    fake_reg_check(id, FAKE_ID, "resolve_addr on an id not alive");
    if (id->state != ID_IDLE) {
        pthread_mutex_unlock(&fake_lock);
        errno = EINVAL;
        return -1;
    }
    struct rdma_addr *a = &id->pub.route.addr;
    memcpy(&a->dst_storage, dst, fake_addr_len(dst));
    if (src) {
        memcpy(&a->src_storage, src, fake_addr_len(src));
    } else if (dst->sa_family == AF_INET) {
        a->src_sin.sin_family = AF_INET;
        a->src_sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else {
        a->src_sin6.sin6_family = AF_INET6;
        a->src_sin6.sin6_addr = in6addr_loopback;
    }
    if (!fake_addr_port(&a->src_addr)) {
        fake_addr_set_port(&a->src_addr, fake_next_port);
        fake_next_port = fake_next_port >= 65000 ? 40000 : fake_next_port + 1;
    }
    id->pub.verbs = &fake_context;
    id->state = ID_ADDR;
    fake_cm_queue(id, NULL, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
    pthread_mutex_unlock(&fake_lock);
    return 0;
}

static int fake_resolve_route(struct rdma_cm_id *cm_id, int timeout_ms) {
    (void)timeout_ms;
    pthread_mutex_lock(&fake_lock);
    fake_id *id = (fake_id *)cm_id;
    fake_reg_check(id, FAKE_ID, "resolve_route on an id not alive");
    int ok = id->state == ID_ADDR;
    if (ok) {
        id->state = ID_ROUTE;
        fake_cm_queue(id, NULL, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
    }
    pthread_mutex_unlock(&fake_lock);
    if (!ok) errno = EINVAL;
    return ok ? 0 : -1;
}

/* rnr_retry_count as the QP will use it: 7 is infinite; the fault knob
 * overrides. */
static int fake_rnr_of(const struct rdma_conn_param *p) {
    if (fake_faults.rnr_retry > 0 && fake_faults.rnr_retry < 7) return fake_faults.rnr_retry;
    int v = p ? p->rnr_retry_count : 0;
    return v > 7 ? 7 : v;
}

/* Dials the listener of dst, or the wildcard one of its port: fd or -1. */
static int fake_dial(const struct sockaddr *dst) {
    for (int wildcard = 0; wildcard < 2; wildcard++) {
        struct sockaddr_un un;
        socklen_t len;
        fake_addr_name(dst, wildcard, &un, &len);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) return -1;
        if (connect(fd, (struct sockaddr *)&un, len) == 0) return fd;
        close(fd);
    }
    return -1;
}

static int fake_connect(struct rdma_cm_id *cm_id, struct rdma_conn_param *param) {
    pthread_mutex_lock(&fake_lock);
    fake_id *id = (fake_id *)cm_id;
    fake_reg_check(id, FAKE_ID, "connect on an id not alive");
    if (id->state != ID_ROUTE) {
        pthread_mutex_unlock(&fake_lock);
        errno = EINVAL;
        return -1;
    }
    int fd = fake_dial(&id->pub.route.addr.dst_addr);
    if (fd < 0) {
        id->state = ID_CLOSED;
        fake_cm_queue(id, NULL, RDMA_CM_EVENT_REJECTED, ECONNREFUSED, NULL);
        pthread_mutex_unlock(&fake_lock);
        return 0;
    }
    fake_connect_msg m = {0};
    m.src = id->pub.route.addr.src_storage;
    m.dst = id->pub.route.addr.dst_storage;
    m.qp_num = id->pub.qp ? id->pub.qp->qp_num : (param ? param->qp_num : 0);
    id->rnr_retry = fake_rnr_of(param);
    if (param) {
        m.rnr_retry = param->rnr_retry_count;
        m.resp_res = param->responder_resources;
        m.init_depth = param->initiator_depth;
        m.retry = param->retry_count;
        m.flow = param->flow_control;
        m.pdata_len = param->private_data ? param->private_data_len : 0;
        if (m.pdata_len) memcpy(m.pdata, param->private_data, m.pdata_len);
    }
    id->sock = fake_sock_new(fd);
    id->sock->id = id;
    id->state = ID_CONNECTING;
    fake_sock_link(id->sock);
    fake_nic_add_fd(id->sock);
    fake_sock_send(id->sock, FR_CONNECT, &m, sizeof(m), NULL, 0);
    pthread_mutex_unlock(&fake_lock);
    return 0;
}

static int fake_accept(struct rdma_cm_id *cm_id, struct rdma_conn_param *param) {
    pthread_mutex_lock(&fake_lock);
    fake_id *id = (fake_id *)cm_id;
    fake_reg_check(id, FAKE_ID, "accept on an id not alive");
    int rc = 0;
    if (id->state == ID_CLOSED && !id->reported_down) {
        /* the peer went away before the answer: the REP would time out */
        id->reported_down = 1;
        fake_cm_queue(id, NULL, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT, NULL);
    } else if (id->state != ID_REQUEST) {
        errno = EINVAL;
        rc = -1;
    } else {
        fake_answer_msg m = {0};
        m.qp_num = id->pub.qp ? id->pub.qp->qp_num : (param ? param->qp_num : 0);
        if (param) {
            m.resp_res = param->responder_resources;
            m.init_depth = param->initiator_depth;
            m.pdata_len = param->private_data ? param->private_data_len : 0;
            if (m.pdata_len) memcpy(m.pdata, param->private_data, m.pdata_len);
        }
        id->rnr_retry = fake_rnr_of(param);
        if (id->pub.qp) id->pub.qp->state = IBV_QPS_RTS;
        id->state = ID_ACCEPTED;
        fake_sock_send(id->sock, FR_ACCEPT, &m, sizeof(m), NULL, 0);
    }
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

static int fake_reject(struct rdma_cm_id *cm_id, const void *pdata, uint8_t pdata_len) {
    pthread_mutex_lock(&fake_lock);
    fake_id *id = (fake_id *)cm_id;
    fake_reg_check(id, FAKE_ID, "reject on an id not alive");
    int rc = 0;
    if (id->state == ID_REQUEST) {
        fake_answer_msg m = {0};
        m.pdata_len = pdata ? pdata_len : 0;
        if (m.pdata_len) memcpy(m.pdata, pdata, m.pdata_len);
        fake_sock_send(id->sock, FR_REJECT, &m, sizeof(m), NULL, 0);
        fake_sock_kill(id->sock, 1);
        id->sock->id = NULL;
        id->sock = NULL;
        id->state = ID_CLOSED;
    } else if (id->state != ID_CLOSED) {
        errno = EINVAL;
        rc = -1;
    }
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

static int fake_disconnect(struct rdma_cm_id *cm_id) {
    pthread_mutex_lock(&fake_lock);
    fake_id *id = (fake_id *)cm_id;
    fake_reg_check(id, FAKE_ID, "disconnect on an id not alive");
    int rc = 0;
    if (fake_id_connected(id))
        fake_conn_down(id, 1);
    else if (id->state != ID_CLOSED)
        rc = -1;
    pthread_mutex_unlock(&fake_lock);
    if (rc) errno = EINVAL;
    return rc;
}

static int fake_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **out) {
    for (;;) {
        pthread_mutex_lock(&fake_lock);
        fake_reg_check(channel, FAKE_CHANNEL, "get_cm_event on a channel not alive");
        fake_channel *ch = (fake_channel *)channel;
        fake_cm_event *ev = ch->head;
        if (ev) {
            ch->head = ev->next;
            if (!ch->head) ch->tail = NULL;
            fake_eventfd_set(ch->pub.fd, &ch->signalled, ch->head != NULL);
            ev->next = fake_fetched;
            fake_fetched = ev;
            fake_event_acct(ev)->unacked++;
            pthread_mutex_unlock(&fake_lock);
            *out = &ev->pub;
            return 0;
        }
        int fd = ch->pub.fd;
        pthread_mutex_unlock(&fake_lock);
        if (fake_fd_wait(fd) < 0) return -1;
    }
}

static int fake_ack_cm_event(struct rdma_cm_event *event) {
    pthread_mutex_lock(&fake_lock);
    fake_cm_event **pp = &fake_fetched;
    while (*pp && &(*pp)->pub != event)
        pp = &(*pp)->next;
    if (!*pp) fake_die("ack_cm_event of an event not fetched (or acked twice)");
    fake_cm_event *ev = *pp;
    *pp = ev->next;
    fake_event_acct(ev)->unacked--;
    free(ev);
    pthread_mutex_unlock(&fake_lock);
    return 0;
}

static struct sockaddr *fake_get_addr(struct rdma_cm_id *id, int peer) {
    pthread_mutex_lock(&fake_lock);
    fake_reg_check(id, FAKE_ID, "get_peer_addr/get_local_addr on an id not alive");
    pthread_mutex_unlock(&fake_lock);
    return peer ? &id->route.addr.dst_addr : &id->route.addr.src_addr;
}

static struct sockaddr *fake_get_peer_addr(struct rdma_cm_id *id) {
    return fake_get_addr(id, 1);
}

static struct sockaddr *fake_get_local_addr(struct rdma_cm_id *id) {
    return fake_get_addr(id, 0);
}

/* ---- test controls ---- */

static int fake_control(struct rdma_cm_id *cm_id, int vanish) {
    pthread_mutex_lock(&fake_lock);
    fake_id *id = (fake_id *)cm_id;
    fake_reg_check(id, FAKE_ID, "test control on an id not alive");
    int ok = id->state == ID_ESTABLISHED || id->state == ID_ACCEPTED;
    if (ok) fake_conn_down(id, !vanish);
    pthread_mutex_unlock(&fake_lock);
    if (!ok) errno = EINVAL;
    return ok ? 0 : -1;
}

int rdma_fake_qp_error(struct rdma_cm_id *id) {
    return fake_control(id, 0);
}

int rdma_fake_vanish(struct rdma_cm_id *id) {
    return fake_control(id, 1);
}

/* ---- the NIC thread's side of the wire ---- */

/* A peer that sent something malformed: this connection only is cut. */
static void fake_sock_corrupt(fake_sock *s, const char *why) {
    fprintf(stderr, "rdma_fake: corrupt frame from the peer (%s): connection cut\n", why);
    if (s->id) fake_conn_down(s->id, 0);
    fake_sock_kill(s, 0);
    s->listener = NULL;
}

static void fake_sock_eof(fake_sock *s) {
    fake_id *id = s->id;
    if (id && id->state == ID_CONNECTING) {
        /* nobody answered: the listener went away before reading the request */
        id->state = ID_CLOSED;
        if (id->pub.qp) fake_qp_set_error((fake_qp *)id->pub.qp);
        fake_cm_queue(id, NULL, RDMA_CM_EVENT_REJECTED, ECONNREFUSED, NULL);
        id->sock = NULL;
        s->id = NULL;
    } else if (id) {
        fake_conn_down(id, 0);
    }
    s->listener = NULL;
    fake_sock_kill(s, 0);
}

static void fake_param_of(struct rdma_conn_param *p, uint32_t qp_num, uint8_t resp_res,
                          uint8_t init_depth, const uint8_t *pdata, uint32_t pdata_len) {
    memset(p, 0, sizeof(*p));
    p->qp_num = qp_num;
    p->responder_resources = resp_res;
    p->initiator_depth = init_depth;
    p->private_data = pdata_len ? pdata : NULL;
    p->private_data_len = (uint8_t)pdata_len;
}

static void fake_on_connect(fake_sock *s, const fake_connect_msg *m) {
    fake_id *l = s->listener;
    s->listener = NULL;
    if (m->pdata_len > 255 || (m->src.ss_family != AF_INET && m->src.ss_family != AF_INET6)) {
        fake_sock_corrupt(s, "CONNECT");
        return;
    }
    fake_id *id = calloc(1, sizeof(*id));
    if (!id) fake_die("out of memory");
    id->pub.channel = l->pub.channel;
    id->pub.context = l->pub.context;
    id->pub.ps = l->pub.ps;
    id->pub.qp_type = IBV_QPT_RC;
    id->pub.verbs = &fake_context;
    id->pub.route.addr.src_storage = m->dst;
    id->pub.route.addr.dst_storage = m->src;
    id->peer_qp_num = (int)m->qp_num;
    id->state = ID_REQUEST;
    id->sock = s;
    s->id = id;
    ((fake_channel *)l->pub.channel)->ids++;
    fake_reg_add(id, FAKE_ID);
    struct rdma_conn_param p;
    fake_param_of(&p, m->qp_num, m->resp_res, m->init_depth, m->pdata, m->pdata_len);
    p.retry_count = m->retry;
    p.rnr_retry_count = (uint8_t)m->rnr_retry;
    p.flow_control = m->flow;
    fake_cm_queue(id, l, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &p);
}

static void fake_on_answer(fake_sock *s, fake_id *id, int accepted, const fake_answer_msg *m) {
    if (m->pdata_len > 255) {
        fake_sock_corrupt(s, "ACCEPT/REJECT");
        return;
    }
    struct rdma_conn_param p;
    fake_param_of(&p, m->qp_num, m->resp_res, m->init_depth, m->pdata, m->pdata_len);
    if (!accepted) {
        id->state = ID_CLOSED;
        if (id->pub.qp) fake_qp_set_error((fake_qp *)id->pub.qp);
        id->sock = NULL;
        s->id = NULL;
        fake_sock_kill(s, 0);
        fake_cm_queue(id, NULL, RDMA_CM_EVENT_REJECTED, FAKE_REJ_CONSUMER, &p);
        return;
    }
    id->peer_qp_num = (int)m->qp_num;
    if (id->pub.qp) id->pub.qp->state = IBV_QPS_RTS;
    id->state = ID_ESTABLISHED;
    fake_sock_send(s, FR_RTU, NULL, 0, NULL, 0);
    fake_cm_queue(id, NULL, RDMA_CM_EVENT_ESTABLISHED, 0, &p);
}

static fake_qp *fake_id_qp(fake_id *id) {
    return (fake_qp *)id->pub.qp;
}

void fake_sock_ack(fake_sock *s, uint64_t seq, int status) {
    fake_ack a = {seq, (uint32_t)status, 0};
    fake_sock_send(s, FR_ACK, &a, sizeof(a), NULL, 0);
}

static void fake_park(fake_sock *s, const fake_frame_hdr *h, const uint8_t *payload) {
    fake_frame *f = malloc(sizeof(*f) + h->len);
    if (!f) fake_die("out of memory");
    f->next = NULL;
    f->hdr = *h;
    memcpy(f->payload, payload, h->len);
    if (!s->parked) {
        fake_data_hdr d;
        memcpy(&d, payload, sizeof(d));
        s->rnr_deadline_ms =
            d.rnr_retry >= 7 ? 0 : fake_now_ms() + 1 + (uint64_t)d.rnr_retry * FAKE_RNR_STEP_MS;
        s->parked = f;
    } else {
        s->parked_tail->next = f;
    }
    s->parked_tail = f;
}

static int fake_data_valid(const fake_frame_hdr *h, const fake_data_hdr *d) {
    if (h->len < sizeof(*d) || d->len != h->len - sizeof(*d)) return 0;
    return d->opcode == IBV_WR_SEND || d->opcode == IBV_WR_SEND_WITH_IMM ||
           d->opcode == IBV_WR_RDMA_WRITE || d->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static void fake_on_data(fake_sock *s, fake_id *id, const fake_frame_hdr *h,
                         const uint8_t *payload) {
    fake_data_hdr d;
    memcpy(&d, payload, sizeof(d));
    if (!fake_data_valid(h, &d)) {
        fake_sock_corrupt(s, "DATA");
        return;
    }
    if (s->parked) {
        fake_park(s, h, payload);
        return;
    }
    if (!fake_qp_deliver(fake_id_qp(id), s, &d, payload + sizeof(d))) fake_park(s, h, payload);
}

/* One whole frame from the peer. */
static void fake_on_frame(fake_sock *s, const fake_frame_hdr *h, const uint8_t *payload) {
    fake_id *id = s->id;
    if (h->type == FR_CONNECT && s->listener && !id && h->len == sizeof(fake_connect_msg)) {
        fake_connect_msg m;
        memcpy(&m, payload, sizeof(m));
        fake_on_connect(s, &m);
        return;
    }
    if (!id) {
        if (s->listener) fake_sock_corrupt(s, "no CONNECT first");
        return; /* a wire already closed on this side */
    }
    if ((h->type == FR_ACCEPT || h->type == FR_REJECT) && id->state == ID_CONNECTING &&
        h->len == sizeof(fake_answer_msg)) {
        fake_answer_msg m;
        memcpy(&m, payload, sizeof(m));
        fake_on_answer(s, id, h->type == FR_ACCEPT, &m);
    } else if (h->type == FR_RTU && id->state == ID_ACCEPTED && !h->len) {
        id->state = ID_ESTABLISHED;
        fake_cm_queue(id, NULL, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
    } else if (h->type == FR_DATA && id->state == ID_ESTABLISHED) {
        fake_on_data(s, id, h, payload);
    } else if (h->type == FR_ACK && id->state == ID_ESTABLISHED && h->len == sizeof(fake_ack)) {
        fake_ack a;
        memcpy(&a, payload, sizeof(a));
        if (fake_id_qp(id) && fake_qp_on_ack(fake_id_qp(id), a.seq, (int)a.status) < 0)
            fake_sock_corrupt(s, "ACK of nothing sent");
    } else if (h->type == FR_DISCONNECT && !h->len) {
        fake_conn_down(id, 0);
    } else {
        fake_sock_corrupt(s, "unexpected frame");
    }
}

static void fake_sock_parse(fake_sock *s) {
    size_t off = 0;
    while (!s->dead && s->in_len - off >= sizeof(fake_frame_hdr)) {
        fake_frame_hdr h;
        memcpy(&h, s->in + off, sizeof(h));
        if (h.magic != FAKE_FRAME_MAGIC || h.len > FAKE_FRAME_MAX) {
            fake_sock_corrupt(s, "header");
            break;
        }
        if (s->in_len - off - sizeof(h) < h.len) break;
        fake_on_frame(s, &h, s->in + off + sizeof(h));
        off += sizeof(h) + h.len;
    }
    memmove(s->in, s->in + off, s->in_len - off);
    s->in_len -= off;
}

static void fake_sock_read(fake_sock *s) {
    for (;;) {
        if (s->in_cap - s->in_len < 65536) {
            size_t cap = s->in_cap ? s->in_cap * 2 : 131072;
            uint8_t *p = realloc(s->in, cap);
            if (!p) fake_die("out of memory");
            s->in = p;
            s->in_cap = cap;
        }
        ssize_t n = recv(s->fd, s->in + s->in_len, s->in_cap - s->in_len, MSG_DONTWAIT);
        if (n > 0) {
            s->in_len += (size_t)n;
            fake_sock_parse(s);
            if (s->dead) return;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        fake_sock_eof(s);
        return;
    }
}

static void fake_sock_accept(fake_sock *l) {
    for (;;) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        fake_sock *s = fake_sock_new(fd);
        s->listener = l->id;
        fake_sock_link(s);
        fake_nic_add_fd(s);
    }
}

void fake_nic_sock_event(fake_sock *s, uint32_t events) {
    if (s->dead) return;
    if (s->listening) {
        if (s->id) fake_sock_accept(s);
        return;
    }
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) fake_sock_read(s);
}

static void fake_sock_flush(fake_sock *s) {
    while (s->out_off < s->out_len) {
        ssize_t n =
            send(s->fd, s->out + s->out_off, s->out_len - s->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            s->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EAGAIN) {
            fake_nic_want_out(s, 1);
            return;
        }
        if (n < 0 && errno == EINTR) continue;
        s->out_off = s->out_len; /* the peer is gone: what was unsent is lost */
        if (s->id)
            fake_sock_eof(s);
        else
            fake_sock_kill(s, 0);
        return;
    }
    s->out_off = s->out_len = 0;
    if (s->want_out) fake_nic_want_out(s, 0);
}

/* Retries parked DATA: delivered in order while receives are posted; the
 * head fails with RNR_RETRY_EXC_ERR at its deadline. */
static void fake_sock_unpark(fake_sock *s, uint64_t now) {
    while (s->parked && s->id) {
        fake_frame *f = s->parked;
        fake_data_hdr d;
        memcpy(&d, f->payload, sizeof(d));
        fake_qp *qp = fake_id_qp(s->id);
        if (!fake_qp_deliver(qp, s, &d, f->payload + sizeof(d))) {
            if (!s->rnr_deadline_ms || now < s->rnr_deadline_ms) return;
            fake_sock_ack(s, d.seq, IBV_WC_RNR_RETRY_EXC_ERR);
            while (s->parked) { /* the sender's QP errors: the rest flushes there */
                f = s->parked;
                s->parked = f->next;
                free(f);
            }
            return;
        }
        s->parked = f->next;
        free(f);
        if (s->parked) {
            memcpy(&d, s->parked->payload, sizeof(d));
            s->rnr_deadline_ms =
                d.rnr_retry >= 7 ? 0 : now + 1 + (uint64_t)d.rnr_retry * FAKE_RNR_STEP_MS;
        }
    }
}

/* Transmits what s's QP has posted while the socket takes it; a full
 * socket resumes on EPOLLOUT. */
static void fake_sock_pump(fake_sock *s) {
    for (;;) {
        fake_qp *qp = s->id && s->id->state == ID_ESTABLISHED ? fake_id_qp(s->id) : NULL;
        int held = qp ? fake_qp_transmit(qp) : 0;
        fake_sock_flush(s);
        qp = s->id && s->id->state == ID_ESTABLISHED ? fake_id_qp(s->id) : NULL;
        if (held || s->dead || s->want_out || !qp || qp->stx == qp->stail) return;
    }
}

void fake_nic_pass(void) {
    uint64_t now = fake_now_ms();
    fake_sock **pp = &fake_socks;
    while (*pp) {
        fake_sock *s = *pp;
        if (!s->dead && !s->listening) {
            if (s->parked) fake_sock_unpark(s, now);
            fake_sock_pump(s);
        } else if (s->dead && s->linger) {
            fake_sock_flush(s);
        }
        if (s->dead && (!s->linger || s->out_off == s->out_len)) {
            *pp = s->next;
            fake_sock_free(s);
        } else {
            pp = &s->next;
        }
    }
}

uint64_t fake_nic_next_deadline(void) {
    uint64_t next = 0;
    for (fake_sock *s = fake_socks; s; s = s->next)
        if (s->parked && s->rnr_deadline_ms && (!next || s->rnr_deadline_ms < next))
            next = s->rnr_deadline_ms;
    return next;
}

/* ---- the table ---- */

static const rdma_ops fake_ops = {
    .size = sizeof(rdma_ops),
    .version = RDMA_OPS_VERSION,
    .name = "fake",
    .get_device_list = fake_get_device_list,
    .free_device_list = fake_free_device_list,
    .query_device = fake_query_device,
    .fork_init = fake_fork_init,
    .create_event_channel = fake_create_event_channel,
    .destroy_event_channel = fake_destroy_event_channel,
    .create_id = fake_create_id,
    .destroy_id = fake_destroy_id,
    .set_option = fake_set_option,
    .bind_addr = fake_bind_addr,
    .listen = fake_listen,
    .resolve_addr = fake_resolve_addr,
    .resolve_route = fake_resolve_route,
    .connect = fake_connect,
    .accept = fake_accept,
    .reject = fake_reject,
    .disconnect = fake_disconnect,
    .get_cm_event = fake_get_cm_event,
    .ack_cm_event = fake_ack_cm_event,
    .get_peer_addr = fake_get_peer_addr,
    .get_local_addr = fake_get_local_addr,
    .create_qp = fake_create_qp,
    .destroy_qp = fake_destroy_qp,
    .alloc_pd = fake_alloc_pd,
    .dealloc_pd = fake_dealloc_pd,
    .create_comp_channel = fake_create_comp_channel,
    .destroy_comp_channel = fake_destroy_comp_channel,
    .create_cq = fake_create_cq,
    .destroy_cq = fake_destroy_cq,
    .req_notify_cq = fake_req_notify_cq,
    .get_cq_event = fake_get_cq_event,
    .ack_cq_events = fake_ack_cq_events,
    .poll_cq = fake_poll_cq,
    .reg_mr = fake_reg_mr,
    .dereg_mr = fake_dereg_mr,
    .post_send = fake_post_send,
    .post_recv = fake_post_recv,
    .wc_status_str = fake_wc_status_str,
};

const rdma_ops *rdma_fake_ops(void) {
    fake_init_once();
    return &fake_ops;
}

const rdma_ops *rdma_ops_get(void) {
    return rdma_fake_ops();
}
