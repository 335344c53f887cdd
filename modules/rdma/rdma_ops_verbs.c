/* rdma_ops_verbs.c -- the production rdma_ops: every member is the
 * librdmacm or libibverbs function it is named after (the inline verbs of
 * verbs.h wrapped in functions). Defines rdma_ops_get() for the module Keel
 * ships; the test build links the fake's table instead. */
#include "rdma_ops.h"

#include <dlfcn.h>
#include <pthread.h>

static int verbs_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
    return ibv_post_send(qp, wr, bad);
}

static int verbs_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
    return ibv_post_recv(qp, wr, bad);
}

static int verbs_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
    return ibv_poll_cq(cq, n, wc);
}

static int verbs_req_notify_cq(struct ibv_cq *cq, int solicited_only) {
    return ibv_req_notify_cq(cq, solicited_only);
}

static struct ibv_device **verbs_get_device_list(int *n) {
    return ibv_get_device_list(n);
}

static int verbs_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr) {
    return ibv_query_device(ctx, attr);
}

static struct ibv_cq *verbs_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
                                      struct ibv_comp_channel *channel, int comp_vector) {
    return ibv_create_cq(ctx, cqe, cq_context, channel, comp_vector);
}

static struct ibv_mr *verbs_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access) {
    return ibv_reg_mr(pd, addr, length, access);
}

static const rdma_ops verbs_ops = {
    .size = sizeof(rdma_ops),
    .version = RDMA_OPS_VERSION,
    .name = "verbs",
    .get_device_list = verbs_get_device_list,
    .free_device_list = ibv_free_device_list,
    .query_device = verbs_query_device,
    .fork_init = ibv_fork_init,
    .create_event_channel = rdma_create_event_channel,
    .destroy_event_channel = rdma_destroy_event_channel,
    .create_id = rdma_create_id,
    .destroy_id = rdma_destroy_id,
    .set_option = rdma_set_option,
    .bind_addr = rdma_bind_addr,
    .listen = rdma_listen,
    .resolve_addr = rdma_resolve_addr,
    .resolve_route = rdma_resolve_route,
    .connect = rdma_connect,
    .accept = rdma_accept,
    .reject = rdma_reject,
    .disconnect = rdma_disconnect,
    .get_cm_event = rdma_get_cm_event,
    .ack_cm_event = rdma_ack_cm_event,
    .get_peer_addr = rdma_get_peer_addr,
    .get_local_addr = rdma_get_local_addr,
    .create_qp = rdma_create_qp,
    .destroy_qp = rdma_destroy_qp,
    .alloc_pd = ibv_alloc_pd,
    .dealloc_pd = ibv_dealloc_pd,
    .create_comp_channel = ibv_create_comp_channel,
    .destroy_comp_channel = ibv_destroy_comp_channel,
    .create_cq = verbs_create_cq,
    .destroy_cq = ibv_destroy_cq,
    .req_notify_cq = verbs_req_notify_cq,
    .get_cq_event = ibv_get_cq_event,
    .ack_cq_events = ibv_ack_cq_events,
    .poll_cq = verbs_poll_cq,
    .reg_mr = verbs_reg_mr,
    .dereg_mr = ibv_dereg_mr,
    .post_send = verbs_post_send,
    .post_recv = verbs_post_recv,
    .wc_status_str = ibv_wc_status_str,
};

/* libibverbs and librdmacm keep process-wide state they never free (the
 * device list, the fork protection, the provider libraries they loaded):
 * once the module has loaded them they stay loaded, so that MODULE UNLOAD
 * does not unmap that state (a leak, and under ibv_fork_init the pages it
 * protects). The handles are kept for the process's life on purpose. */
static void verbs_pin(void) {
    static const char *const libs[] = {"libibverbs.so.1", "librdmacm.so.1"};
    for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
        dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

const rdma_ops *rdma_ops_get(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, verbs_pin);
    return &verbs_ops;
}
