/* fake_dl_probe.c -- a shared object holding its own copy of the fake, for
 * check_rdma_fake's dlclose test: it starts the fake's NIC thread and
 * leaves an object alive, as a module unloaded with a connection open. */
#include "rdma_fake.h"

int fake_dl_probe_start(void);

int fake_dl_probe_start(void) {
    return rdma_fake_ops()->create_event_channel() ? 0 : -1;
}
