/* badmagic.c -- a fixture whose descriptor has the wrong magic number. */
#include <keel/keel_module.h>

static int never_init(keel_ctx *ctx, const keel_api *api, int argc, const char *const *argv) {
    return KEEL_OK;
}

__attribute__((visibility("default"))) const keel_module_info *keel_module_entry(void) {
    static const keel_module_info info = {
        0x1234, KEEL_ABI_MAJOR, KEEL_ABI_MINOR, sizeof(keel_module_info),
        1,      "badmagic",     never_init,     NULL};
    return &info;
}
