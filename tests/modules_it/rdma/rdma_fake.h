/* rdma_fake.h -- an RDMA device and wire emulated in user space, for the
 * tests of the RDMA module (no RDMA hardware or soft-RoCE here).
 *
 * The fake implements modules/rdma/rdma_ops.h. Linked into the test build
 * of the module (keel_rdma_fake.so) it is the server's device; linked into
 * a test program it is the client's. Two processes (or two peers of one
 * process) reach each other over unix sockets in the abstract namespace,
 * named after the address and port a CM id binds ("@keel-rdma-fake/
 * 127.0.0.1:6380"), so any number of test servers run side by side.
 *
 * What it emulates, as hardware does it:
 *  - An RC queue pair per connected CM id, with send and receive queues of
 *    the capacity create_qp granted (written back into attr->cap, as the
 *    library does; post_* fail with ENOMEM beyond it). A send WR holds its
 *    slot until its completion is generated; an unsignalled one, which has
 *    none, until a later signalled WR of the QP completes (or a flush): the
 *    application learns of free slots only through polled completions.
 *  - Memory registration: reg_mr gives lkey/rkey; every local sge is
 *    checked against its lkey's region, every remote address against its
 *    rkey's region and access flags. A remote access outside a region
 *    completes the sender's WR with IBV_WC_REM_ACCESS_ERR and moves both
 *    QPs to the error state.
 *  - IBV_WR_SEND completes a posted receive on the peer (IBV_WC_RECV,
 *    byte_len); a message longer than the receive's buffer is
 *    IBV_WC_LOC_LEN_ERR there and IBV_WC_REM_INV_REQ_ERR here.
 *    IBV_WR_RDMA_WRITE_WITH_IMM copies into the peer's registered memory
 *    and completes a posted receive with IBV_WC_RECV_RDMA_WITH_IMM and the
 *    immediate (byte_len = the write's length). IBV_WR_RDMA_WRITE copies
 *    without a completion on the peer.
 *  - Receiver not ready: a SEND or WRITE_WITH_IMM arriving with no receive
 *    posted waits for one while the QP's rnr_retry_count is 7 (infinite, as
 *    the conn_param of connect/accept sets it), else fails the sender's WR
 *    with IBV_WC_RNR_RETRY_EXC_ERR after that many retries.
 *  - A "NIC" thread per process moves the data: it reads the source memory
 *    of a posted send when it transmits it (not when it is posted) and
 *    writes the target memory before the target's completion is visible,
 *    so a module that reuses a buffer too early or reads one too soon is
 *    wrong here too (and TSan sees it). Signalled sends complete when the
 *    peer acknowledged them, in order (a WR whose local memory is bad
 *    fails with IBV_WC_LOC_PROT_ERR after the WRs before it); unsignalled
 *    ones complete silently.
 *  - Completion channels and CM event channels are eventfds: readable
 *    while an event is queued (a CQ's event needs req_notify_cq first, one
 *    event per arming, as in the hardware). get_cq_event/get_cm_event
 *    return -1 with EAGAIN when the channel's fd is non-blocking and empty.
 *  - CM: bind_addr + listen, resolve_addr/resolve_route (immediate
 *    ADDR_RESOLVED/ROUTE_RESOLVED events), connect -> CONNECT_REQUEST on the
 *    listener's channel (a new id with listen_id set), accept/reject ->
 *    ESTABLISHED/REJECTED, disconnect or the peer process vanishing ->
 *    DISCONNECTED on both sides, with the QP moved to the error state and
 *    every posted WR flushed (IBV_WC_WR_FLUSH_ERR). destroy_id drops the
 *    id's queued events, as the kernel does, and a listener's address is
 *    free again when it returns (an immediate rebind succeeds). No listener at the address:
 *    the connecting id gets RDMA_CM_EVENT_REJECTED with status
 *    ECONNREFUSED, as a real CM rejects a port nobody listens on.
 *  - Bookkeeping: every object (channel, id, pd, cq, qp, mr) is in a
 *    registry; destroying one twice, or using one after it was destroyed,
 *    prints "rdma_fake: <what>" and aborts. rdma_fake_live() counts what is
 *    still alive, and at process exit the fake prints any object still
 *    alive and exits with status 3 if KEEL_RDMA_FAKE contains
 *    "leak_check=1" (the test server's exit status then fails the test).
 *
 * Limits: RC queue pairs only, no SRQ; post_send takes SEND, SEND_WITH_IMM,
 * RDMA_WRITE and RDMA_WRITE_WITH_IMM of at most 64 MiB (else EINVAL). A
 * completion that finds its CQ full is lost and poll_cq fails from then on
 * (a CQ overrun). A fork()ed child must not use the fake (its wires are
 * closed there). The leak check also runs when a module holding the fake is
 * dlclose()d.
 *
 * Thread safety: as libibverbs (calls on different objects from different
 * threads are fine; the fake locks internally).
 *
 * Faults can be set in code (a test program) or, for the server process,
 * with the environment variable KEEL_RDMA_FAKE read at the first call:
 * comma-separated name=value pairs named after rdma_fake_faults' fields,
 * e.g. KEEL_RDMA_FAKE="leak_check=1,max_send_wr=8". An unknown name aborts
 * with a message. */
#ifndef KEEL_RDMA_FAKE_H
#define KEEL_RDMA_FAKE_H

#include "rdma_ops.h"

typedef struct rdma_fake_faults {
    int no_device;         /* get_device_list returns no device (ENOSYS as here) */
    int max_send_wr;       /* > 0: create_qp caps cap.max_send_wr at it */
    int max_recv_wr;       /* > 0: create_qp caps cap.max_recv_wr at it */
    long fail_reg_mr;      /* > 0: the Nth reg_mr from now fails (ENOMEM) */
    long fail_post_send;   /* > 0: the Nth post_send from now fails (ENOMEM) */
    long fail_create_qp;   /* > 0: the Nth create_qp from now fails (ENOMEM) */
    int rnr_retry;         /* 1..6: overrides the QPs' rnr_retry_count (0: no override) */
    int leak_check;        /* at exit: objects alive -> listed, exit status 3 */
} rdma_fake_faults;

/* The fake's table (what rdma_ops_get() returns in a build linked with it). */
const rdma_ops *rdma_fake_ops(void);

/* Replaces the process's faults (before or after first use). Counters of
 * the fail_* kinds start counting at this call. */
void rdma_fake_set_faults(const rdma_fake_faults *faults);

/* Objects of each kind alive in this process. */
typedef struct rdma_fake_counts {
    long channels, ids, pds, cqs, comp_channels, qps, mrs;
} rdma_fake_counts;
void rdma_fake_live(rdma_fake_counts *out);

/* Test controls on a connected id of this process:
 *  - qp_error: the QP goes to the error state now (a device error): its
 *    posted WRs flush, the peer's QP errors too and both sides get
 *    DISCONNECTED.
 *  - vanish: the wire to the peer is cut without a disconnect, as a
 *    crashed host or pulled cable: this side's QP and id become unusable
 *    (its posted WRs flush) and the peer sees its QP error and a
 *    DISCONNECTED, as after a transport retry timeout.
 * 0, or -1 with errno EINVAL for an id that is not connected. */
int rdma_fake_qp_error(struct rdma_cm_id *id);
int rdma_fake_vanish(struct rdma_cm_id *id);

#endif
