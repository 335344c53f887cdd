/* rdma_ops.h -- the one table through which the RDMA module reaches the
 * RDMA CM and verbs.
 *
 * Every librdmacm and libibverbs call the module makes goes through an
 * rdma_ops. In production the table points at the real libraries
 * (rdma_ops_verbs.c). Tests link the same module sources with an
 * in-process fake instead (tests/modules_it/rdma/rdma_fake.c), which
 * emulates a device and its wire well enough to run the protocol without
 * RDMA hardware: registered memory with rkeys and bounds checks,
 * RDMA_WRITE_WITH_IMM, SEND/RECV, receiver-not-ready, error completions,
 * disconnects, and descriptors the event loop can watch.
 *
 * The members have the signatures and semantics of the library functions
 * they are named after (rdma_create_id -> create_id, ibv_post_send ->
 * post_send, ...), including errno and return conventions, and they take
 * and return the libraries' own structs; a fake fills those structs as the
 * libraries would (rdma_cm_id.verbs/qp/context, ibv_mr.lkey/rkey/addr,
 * ibv_comp_channel.fd, rdma_event_channel.fd, rdma_cm_event.id/
 * listen_id/event/status/param). ibv_post_send, ibv_post_recv,
 * ibv_poll_cq and ibv_req_notify_cq are inline in verbs.h (they jump
 * through the device context); here they are plain members like the rest.
 *
 * Which table a build uses is decided at link time: rdma_ops_get() is
 * defined once, by rdma_ops_verbs.c in the module Keel ships and by the
 * fake in the test build. The module asks for it once, at load.
 *
 * Threads: the table is immutable. Calls follow the libraries' own rules
 * (a QP may be posted to from one thread at a time, which the module
 * guarantees per connection). */
#ifndef KEEL_RDMA_OPS_H
#define KEEL_RDMA_OPS_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>

#define RDMA_OPS_VERSION 1

typedef struct rdma_ops {
    uint32_t size; /* sizeof(rdma_ops) */
    uint32_t version; /* RDMA_OPS_VERSION */
    const char *name; /* "verbs" or "fake": logged at load */

    /* ---- devices ---- */
    struct ibv_device **(*get_device_list)(int *num_devices);
    void (*free_device_list)(struct ibv_device **list);
    int (*query_device)(struct ibv_context *context, struct ibv_device_attr *attr);
    int (*fork_init)(void);

    /* ---- the connection manager (librdmacm) ---- */
    struct rdma_event_channel *(*create_event_channel)(void);
    void (*destroy_event_channel)(struct rdma_event_channel *channel);
    int (*create_id)(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
                     enum rdma_port_space ps);
    int (*destroy_id)(struct rdma_cm_id *id);
    int (*set_option)(struct rdma_cm_id *id, int level, int optname, void *optval,
                      size_t optlen);
    int (*bind_addr)(struct rdma_cm_id *id, struct sockaddr *addr);
    int (*listen)(struct rdma_cm_id *id, int backlog);
    int (*resolve_addr)(struct rdma_cm_id *id, struct sockaddr *src_addr,
                        struct sockaddr *dst_addr, int timeout_ms);
    int (*resolve_route)(struct rdma_cm_id *id, int timeout_ms);
    int (*connect)(struct rdma_cm_id *id, struct rdma_conn_param *conn_param);
    int (*accept)(struct rdma_cm_id *id, struct rdma_conn_param *conn_param);
    int (*reject)(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len);
    int (*disconnect)(struct rdma_cm_id *id);
    int (*get_cm_event)(struct rdma_event_channel *channel, struct rdma_cm_event **event);
    int (*ack_cm_event)(struct rdma_cm_event *event);
    /* rdma_get_peer_addr / rdma_get_local_addr */
    struct sockaddr *(*get_peer_addr)(struct rdma_cm_id *id);
    struct sockaddr *(*get_local_addr)(struct rdma_cm_id *id);
    int (*create_qp)(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
    void (*destroy_qp)(struct rdma_cm_id *id);

    /* ---- verbs (libibverbs) ---- */
    struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
    int (*dealloc_pd)(struct ibv_pd *pd);
    struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *context);
    int (*destroy_comp_channel)(struct ibv_comp_channel *channel);
    struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe, void *cq_context,
                                struct ibv_comp_channel *channel, int comp_vector);
    int (*destroy_cq)(struct ibv_cq *cq);
    int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
    int (*get_cq_event)(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context);
    void (*ack_cq_events)(struct ibv_cq *cq, unsigned int nevents);
    int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
    struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access);
    int (*dereg_mr)(struct ibv_mr *mr);
    int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
    int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
    const char *(*wc_status_str)(enum ibv_wc_status status);
} rdma_ops;

/* The table of this build (see above). Never NULL. */
const rdma_ops *rdma_ops_get(void);

#endif
