/* abi.c -- a fixture built twice, claiming ABI FIXTURE_MAJOR.FIXTURE_MINOR
 * (2.0 and 1.99), which the server must refuse without calling init. */
#include <keel/keel_module.h>

#include <stdlib.h>

static int never_init(keel_ctx *ctx, const keel_api *api, int argc, const char *const *argv) {
    abort(); /* the handshake must stop before this */
}

__attribute__((visibility("default"))) const keel_module_info *keel_module_entry(void) {
    static const keel_module_info info = {
        KEEL_MODULE_MAGIC, FIXTURE_MAJOR, FIXTURE_MINOR, sizeof(keel_module_info), 1, "abi",
        never_init,        NULL};
    return &info;
}
