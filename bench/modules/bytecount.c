/* bytecount.c -- a benchmark module: one observer that adds up request and
 * reply bytes of every command, the smallest useful after-command hook.
 * bench/abi_cost.sh measures what it costs per request. */
#include <keel/keel_module.h>

static const keel_api *api;
static uint64_t request_bytes, reply_bytes, calls;

static void bytecount_observe(const keel_call_info *info, void *priv) {
    (void)priv;
    request_bytes += info->request_bytes;
    reply_bytes += info->reply_bytes;
    calls++;
}

static void bytecount_info(keel_info *info, void *priv) {
    (void)priv;
    api->info->field(info, "calls:%llu", (unsigned long long)calls);
    api->info->field(info, "request_bytes:%llu", (unsigned long long)request_bytes);
    api->info->field(info, "reply_bytes:%llu", (unsigned long long)reply_bytes);
}

static int bytecount_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    (void)argc;
    (void)argv;
    api = a;
    if (api->hooks->add_observer(ctx, bytecount_observe, NULL) != KEEL_OK) return KEEL_ERR;
    return api->info->add_section(ctx, "bytecount", bytecount_info, NULL);
}

KEEL_MODULE("bytecount", 1, bytecount_init, NULL)
