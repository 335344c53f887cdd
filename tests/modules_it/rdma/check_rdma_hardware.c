/* check_rdma_hardware.c -- the hardware tier of the RDMA module's tests:
 * the shipped module (--loadmodule $KEEL_RDMA_MODULE, rdma.so over the real
 * librdmacm/libibverbs) on a real device (soft-RoCE rxe or a NIC), driven
 * by the suite's client (rdma_client.c) over the real libraries too
 * (modules/rdma/rdma_ops_verbs.c), and, when they are on PATH, by Valkey
 * 9's `valkey-benchmark --rdma` and `valkey-cli --rdma` (libvalkey's RDMA
 * client).
 *
 * Without a device it prints what ibv_get_device_list said and exits 77,
 * ctest's SKIP_RETURN_CODE for this test. Built once more on the fake
 * device and run against the module built on it (modules.rdma_hardware_fake),
 * the tier's own checks run everywhere, so they are known to pass where
 * the protocol is followed. The address is the first IPv4
 * address the RDMA CM can bind to a device, or $KEEL_RDMA_HW_ADDR. How to
 * run it with rxe: docs/modules/rdma.md, "Testing". */
#include "harness.h"
#include "rdma_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HW_SKIP 77

static const rdma_ops *ops;
static const char *module_path;
static char hw_addr[INET_ADDRSTRLEN];

/* 1 if the RDMA CM binds addr to a device. */
static int hw_binds(const struct sockaddr_in *addr) {
    struct rdma_event_channel *ch = ops->create_event_channel();
    if (!ch) return 0;
    struct rdma_cm_id *id = NULL;
    int ok = 0;
    if (ops->create_id(ch, &id, NULL, RDMA_PS_TCP) == 0) {
        struct sockaddr_in a = *addr;
        a.sin_port = 0;
        ok = ops->bind_addr(id, (struct sockaddr *)&a) == 0 && id->verbs != NULL;
        ops->destroy_id(id);
    }
    ops->destroy_event_channel(ch);
    return ok;
}

/* Finds the address to test on; 0, or -1 with the reason printed. */
static int hw_find_addr(void) {
    const char *env = getenv("KEEL_RDMA_HW_ADDR");
    if (env && *env) {
        snprintf(hw_addr, sizeof(hw_addr), "%s", env);
        return 0;
    }
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs)) {
        printf("modules.rdma_hardware: getifaddrs: %s\n", strerror(errno));
        return -1;
    }
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        const struct sockaddr_in *a = (const struct sockaddr_in *)i->ifa_addr;
        if (!hw_binds(a)) continue;
        inet_ntop(AF_INET, &a->sin_addr, hw_addr, sizeof(hw_addr));
        printf("modules.rdma_hardware: testing on %s (%s)\n", hw_addr, i->ifa_name);
        break;
    }
    freeifaddrs(ifs);
    if (hw_addr[0]) return 0;
    printf("modules.rdma_hardware: an RDMA device exists but the RDMA CM binds none of this "
           "host's IPv4 addresses (set KEEL_RDMA_HW_ADDR)\n");
    return -1;
}

/* ---- tests ---- */

static it_server *hw_start(int *rport) {
    *rport = it_free_port();
    return it_start("--loadmodule", module_path, "--rdma-port", it_fmt("%d", *rport), "--rdma-bind",
                    hw_addr, "--rdma-rx-size", "65536", NULL);
}

static rdma_client *hw_open(int rport, int no_feature) {
    /* A buffer as small as the server's, so that replies fill it too. */
    rdma_client_opts o = {
        .ops = ops, .host = hw_addr, .port = rport, .rx_size = 65536, .no_feature = no_feature};
    rdma_client *c = rdma_client_new(&o);
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(rdma_client_connect(c, RDMA_CLIENT_READY) == 0, "connect: %s",
                  rdma_client_error(c));
    return c;
}

START_TEST(test_hw_client) {
    int rport;
    it_server *s = hw_start(&rport);
    redisContext *tcp = it_connect(s);
    rdma_client *c = hw_open(rport, 0);
    rdma_client_stats st;
    rdma_client_get_stats(c, &st);
    ck_assert_int_eq(st.feature_replies, 1);
    ck_assert_int_eq(st.server_rx_len, 65536);
    for (size_t len = 1; len < 400000; len = len * 3 + 1) {
        char *v = it_random_bytes(len, (unsigned)len);
        redisReply *r = rdma_client_cmd(c, "SET %s %b", "hw", v, len);
        ck_assert_msg(r && r->type == REDIS_REPLY_STATUS, "SET: %s", rdma_client_error(c));
        freeReplyObject(r);
        r = rdma_client_cmd(c, "GET %s", "hw");
        ck_assert_msg(r && (size_t)r->len == len && !memcmp(r->str, v, len), "GET of %zu bytes",
                      len);
        freeReplyObject(r);
        expect_bulk_len(tcp, v, len, "GET hw");
    }
    rdma_client_get_stats(c, &st);
    ck_assert_int_gt(st.server_registers, 1);
    ck_assert_int_gt(st.own_registers, 1);
    ck_assert_int_eq(rdma_client_pump(c, 3500), 0);
    rdma_client_get_stats(c, &st);
    ck_assert_int_ge(st.keepalives, 1);
    rdma_client_free(c);
    c = hw_open(rport, 1);
    redisReply *r = rdma_client_cmd(c, "PING");
    ck_assert_msg(r && r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "PONG"), "PING: %s",
                  rdma_client_error(c));
    freeReplyObject(r);
    rdma_client_free(c);
    it_stop(s);
}
END_TEST

/* Runs cmd through the shell; its output (a tracked string) and status. */
static char *hw_run(const char *cmd, int *status) {
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 16, len = 0;
    char *out = it_alloc(cap);
    size_t n;
    while (len + 1 < cap && (n = fread(out + len, 1, cap - 1 - len, p)) > 0)
        len += n;
    out[len] = '\0';
    *status = pclose(p);
    return out;
}

static int hw_on_path(const char *prog) {
    int st;
    hw_run(it_fmt("command -v %s >/dev/null 2>&1", prog), &st);
    return st == 0;
}

START_TEST(test_hw_valkey_clients) {
    int rport, st;
    it_server *s = hw_start(&rport);
    redisContext *tcp = it_connect(s);
    if (hw_on_path("valkey-cli")) {
        char *out = hw_run(it_fmt("valkey-cli --rdma -h %s -p %d SET vk interop 2>&1; "
                                  "valkey-cli --rdma -h %s -p %d GET vk 2>&1",
                                  hw_addr, rport, hw_addr, rport),
                           &st);
        ck_assert_msg(st == 0 && strstr(out, "OK") && strstr(out, "interop"), "valkey-cli: %s",
                      out);
        expect_bulk(tcp, "interop", "GET vk");
    } else {
        printf("modules.rdma_hardware: valkey-cli not on PATH: libvalkey's RDMA client not run\n");
    }
    if (hw_on_path("valkey-benchmark")) {
        char *out = hw_run(it_fmt("valkey-benchmark --rdma -h %s -p %d -n 20000 -c 8 -P 4 "
                                  "-t set,get -d 4096 -q 2>&1",
                                  hw_addr, rport),
                           &st);
        ck_assert_msg(st == 0 && strstr(out, "SET") && strstr(out, "GET") &&
                          strstr(out, "requests per second"),
                      "valkey-benchmark: %s", out);
        printf("%s", out);
    } else {
        printf("modules.rdma_hardware: valkey-benchmark not on PATH: not run\n");
    }
    expect_status(tcp, "PONG", "PING");
    it_stop(s);
}
END_TEST

int main(void) {
    ops = rdma_ops_get();
    int n = 0;
    errno = 0;
    struct ibv_device **devs = ops->get_device_list(&n);
    if (!devs || n == 0) {
        printf("modules.rdma_hardware skipped: no RDMA device (ibv_get_device_list: %s)\n",
               devs ? "an empty list" : strerror(errno));
        if (devs) ops->free_device_list(devs);
        return HW_SKIP;
    }
    ops->free_device_list(devs);
    if (hw_find_addr()) return HW_SKIP;
    module_path = getenv("KEEL_RDMA_MODULE");
    if (!module_path || access(module_path, R_OK) != 0) {
        fprintf(stderr, "check_rdma_hardware: the rdma module %s is not built\n",
                module_path ? module_path : "(KEEL_RDMA_MODULE unset)");
        return EXIT_FAILURE;
    }
    Suite *s = suite_create("rdma_hardware");
    TCase *tc = it_tcase_bare(s, "client");
    tcase_add_test(tc, test_hw_client);
    tc = it_tcase_bare(s, "valkey_clients");
    tcase_add_test(tc, test_hw_valkey_clients);
    return it_run(s);
}
