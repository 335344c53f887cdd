/* dupname.c -- a fixture that claims the name "good" (already loaded). */
#include <keel/keel_module.h>

static int dup_init(keel_ctx *ctx, const keel_api *api, int argc, const char *const *argv) {
    return KEEL_OK;
}

KEEL_MODULE("good", 1, dup_init, NULL)
