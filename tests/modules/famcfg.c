/* famcfg.c -- a fixture module for ABI 1.3's config families: it claims a
 * reserved family (its first argument, "rdma-" by default) and declares
 * <prefix>port, <prefix>cert, <prefix>key and <prefix>pass (SENSITIVE)
 * under those names, plus famcfg.plain. cert, key and pass share one
 * commit, which refuses a cert that differs from the key (as a TLS module
 * refuses a certificate without its key). FAMCFG.STATS replies
 * [applies, commits, the cert of the last commit]. Built against
 * sdk/include only. */
#include <keel/keel_module.h>

#include <stdio.h>
#include <string.h>

/* Built a second time as famcfg2, to claim a family famcfg holds. */
#ifndef FAMCFG_NAME
#define FAMCFG_NAME "famcfg"
#endif

static const keel_api *api;
static long long applies, commits;
static char cert[64], key[64], committed[64];

static int apply_port(long long number, const char *text, void *priv, const char **err) {
    (void)number, (void)text, (void)priv, (void)err;
    applies++;
    return KEEL_OK;
}

/* priv is the buffer the string goes to. */
static int apply_text(long long number, const char *text, void *priv, const char **err) {
    (void)number;
    if (strlen(text) >= sizeof(cert)) {
        *err = "too long";
        return KEEL_ERR;
    }
    applies++;
    if (priv) snprintf(priv, sizeof(cert), "%s", text);
    return KEEL_OK;
}

static int commit_pair(void *priv, const char **err) {
    (void)priv;
    if (strcmp(cert, key)) {
        *err = "cert and key do not match";
        return KEEL_ERR;
    }
    commits++;
    snprintf(committed, sizeof(committed), "%s", cert);
    return KEEL_OK;
}

static void cmd_stats(keel_ctx *ctx) {
    api->command->reply_array(ctx, 3);
    api->command->reply_int(ctx, applies);
    api->command->reply_int(ctx, commits);
    api->command->reply_bulk(ctx, committed, strlen(committed));
}

static int add_config(keel_ctx *ctx, const char *prefix, const char *name, int type, uint32_t flags,
                      const char *dflt, void *buf) {
    char full[64];
    snprintf(full, sizeof(full), "%s%s", prefix, name);
    keel_config_def d = {sizeof(d),
                         full,
                         type,
                         flags,
                         dflt,
                         0,
                         65535,
                         NULL,
                         type == KEEL_CONFIG_INT ? apply_port : apply_text,
                         buf,
                         type == KEEL_CONFIG_INT ? NULL : commit_pair};
    return api->info->config_register(ctx, &d);
}

static int famcfg_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    applies = commits = 0;
    committed[0] = '\0';
    const char *prefix = argc > 0 ? argv[0] : "rdma-";
    if (api->info->config_claim_family(ctx, prefix) != KEEL_OK) return KEEL_ERR;
    const uint32_t fam = KEEL_CONFIG_FAMILY;
    if (add_config(ctx, prefix, "port", KEEL_CONFIG_INT, fam, "0", NULL) != KEEL_OK ||
        add_config(ctx, prefix, "cert", KEEL_CONFIG_STRING, fam, "", cert) != KEEL_OK ||
        add_config(ctx, prefix, "key", KEEL_CONFIG_STRING, fam, "", key) != KEEL_OK ||
        add_config(ctx, prefix, "pass", KEEL_CONFIG_STRING, fam | KEEL_CONFIG_SENSITIVE, "",
                   NULL) != KEEL_OK ||
        add_config(ctx, "", "plain", KEEL_CONFIG_INT, 0, "1", NULL) != KEEL_OK)
        return KEEL_ERR;
    keel_command_def stats = {.size = sizeof(stats),
                              .name = FAMCFG_NAME ".stats",
                              .fn = cmd_stats,
                              .arity = 1,
                              .flags = "readonly"};
    return api->command->register_command(ctx, &stats);
}

KEEL_MODULE(FAMCFG_NAME, 1, famcfg_init, NULL)
