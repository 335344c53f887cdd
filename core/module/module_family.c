/* module_family.c -- the config-name families the server reserves for
 * feature modules ("tls-" for TLS, "rdma-" for RDMA), and which loaded
 * module holds each.
 *
 * A family lets a module declare Valkey's own directive names ("tls-port")
 * instead of `<module>.<name>`, so a valkey.conf works unchanged. The table
 * is fixed here, not open to any prefix: a module must not take over names
 * of the core or of another feature. Core directives are looked up first by
 * the config engine, so a core name that happens to share a prefix would
 * still be the core's; the prefixes are chosen so that none does
 * (cluster-announce-tls-port and max-new-tls-connections-per-cycle do not
 * start with "tls-"). */
#include "common/common.h"
#include "common/log.h"
#include "module/module_internal.h"

#include <string.h>
#include <strings.h>

typedef struct config_family {
    const char *prefix;
    const char *module; /* the module an operator should load for it */
    module *holder;     /* the module that claimed it, NULL if none */
} config_family;

static config_family families[] = {
    {"tls-", "tls", NULL},
    {"rdma-", "rdma", NULL},
};

static config_family *family_of(const char *name) {
    for (size_t i = 0; i < K_ARRAY_LEN(families); i++)
        if (!strncasecmp(name, families[i].prefix, strlen(families[i].prefix))) return &families[i];
    return NULL;
}

const char *module_family_module(const char *name) {
    const config_family *f = family_of(name);
    return f ? f->module : NULL;
}

int module_family_held(const char *name) {
    const config_family *f = family_of(name);
    return f && f->holder;
}

int module_family_held_by(const char *name, const module *m) {
    const config_family *f = family_of(name);
    return f && f->holder == m;
}

int module_api_config_claim_family(keel_ctx *ctx, const char *prefix) {
    MODULE_ASSERT_MAIN();
    if (!module_in_init(ctx, "config families")) return KEEL_ERR;
    config_family *f = NULL;
    for (size_t i = 0; prefix && i < K_ARRAY_LEN(families) && !f; i++)
        if (!strcasecmp(prefix, families[i].prefix)) f = &families[i];
    if (!f) {
        module_reg_error(ctx, "config_claim_family: '%s' is not a reserved family (tls-, rdma-)",
                         prefix ? prefix : "(null)");
        return KEEL_ERR;
    }
    if (f->holder && f->holder != ctx->mod) {
        module_reg_error(ctx, "config_claim_family: '%s' is held by module '%s'", f->prefix,
                         f->holder->name);
        return KEEL_ERR;
    }
    f->holder = ctx->mod;
    return KEEL_OK;
}

void module_families_release(module *m) {
    for (size_t i = 0; i < K_ARRAY_LEN(families); i++)
        if (families[i].holder == m) families[i].holder = NULL;
}
