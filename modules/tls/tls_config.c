/* tls_config.c -- the tls-* directives under Valkey's names and defaults
 * (Valkey 8.0.1), claimed as the "tls-" config family. Each apply only
 * stores its value (and marks the contexts stale); the one shared commit
 * hook acts on all the values of a CONFIG SET together: it builds new
 * contexts, swaps them in only if they load, and opens or moves the
 * listener (tls_module.c). At load, init does that once all are set. */
#include "tls.h"

#include <string.h>
#include <strings.h>

static int tls_commit(void *priv, const char **err) {
    (void)priv;
    if (tls_reconfigure("CONFIG SET", 0) != KEEL_OK) {
        *err = tls.last_error;
        return KEEL_ERR;
    }
    return KEEL_OK;
}

/* Replaces an owned string; "" is stored as NULL (Valkey's
 * EMPTY_STRING_IS_NULL). */
static void tls_set_string(char **slot, const char *text) {
    const keel_api *api = tls.api;
    char *copy = NULL;
    if (text && *text) {
        size_t n = strlen(text) + 1;
        copy = api->core->alloc(n);
        memcpy(copy, text, n);
    }
    api->core->free(*slot);
    *slot = copy;
}

static int tls_apply_string(long long number, const char *text, void *priv, const char **err) {
    (void)number, (void)err;
    tls_set_string(priv, text);
    tls.ctx_dirty = 1;
    return KEEL_OK;
}

static int tls_apply_int(long long number, const char *text, void *priv, const char **err) {
    (void)text, (void)err;
    *(long long *)priv = number;
    tls.ctx_dirty = 1;
    return KEEL_OK;
}

static int tls_apply_flag(long long number, const char *text, void *priv, const char **err) {
    (void)text, (void)err;
    *(int *)priv = number != 0;
    tls.ctx_dirty = 1;
    return KEEL_OK;
}

/* The port is acted on by the commit (or by init at load). */
static int tls_apply_port(long long number, const char *text, void *priv, const char **err) {
    (void)text, (void)priv, (void)err;
    tls.cfg.port = number;
    return KEEL_OK;
}

/* Per connection (read when one is accepted): no new context needed. */
static int tls_apply_auth(long long number, const char *text, void *priv, const char **err) {
    (void)priv, (void)err;
    if (!strcmp(text, "no"))
        tls.cfg.auth_clients = TLS_AUTH_NO;
    else if (!strcmp(text, "optional"))
        tls.cfg.auth_clients = TLS_AUTH_OPTIONAL;
    else
        tls.cfg.auth_clients = TLS_AUTH_YES;
    (void)number;
    tls.ctx_dirty = 1; /* the CA requirement is checked when contexts are built */
    return KEEL_OK;
}

/* "TLSv1.2 TLSv1.3" (case-insensitive, space-separated) into TLS_PROTO_*
 * bits; NULL or empty: the default. KEEL_ERR on an unknown word. */
static int tls_parse_protocols(const char *text, int *out) {
    *out = 0;
    if (!text || !*text) {
        *out = TLS_PROTO_DEFAULT;
        return KEEL_OK;
    }
    static const struct {
        const char *name;
        int bit;
    } names[] = {{"tlsv1", TLS_PROTO_1_0},
                 {"tlsv1.1", TLS_PROTO_1_1},
                 {"tlsv1.2", TLS_PROTO_1_2},
                 {"tlsv1.3", TLS_PROTO_1_3}};
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 0) break;
        int bit = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (strlen(names[i].name) == n && !strncasecmp(p, names[i].name, n)) bit = names[i].bit;
        if (!bit) return KEEL_ERR;
        *out |= bit;
        p += n;
    }
    if (!*out) *out = TLS_PROTO_DEFAULT;
    return KEEL_OK;
}

static int tls_apply_protocols(long long number, const char *text, void *priv, const char **err) {
    (void)number, (void)priv;
    int bits;
    if (tls_parse_protocols(text, &bits) != KEEL_OK) {
        *err = "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', "
               "'TLSv1.2' and 'TLSv1.3'.";
        return KEEL_ERR;
    }
    tls.cfg.protocols = bits;
    tls_set_string(&tls.cfg.protocols_text, text);
    tls.ctx_dirty = 1;
    return KEEL_OK;
}

void tls_cfg_free(tls_cfg *cfg) {
    const keel_api *api = tls.api;
    for (int i = 0; i < TLS_FILE_COUNT; i++)
        api->core->free(cfg->files[i]);
    api->core->free(cfg->key_pass);
    api->core->free(cfg->client_key_pass);
    api->core->free(cfg->protocols_text);
    api->core->free(cfg->ciphers);
    api->core->free(cfg->ciphersuites);
    memset(cfg, 0, sizeof(*cfg));
}

#define TLS_STR(name_, slot_, flags_)                                                              \
    {                                                                                              \
        sizeof(keel_config_def), name_, KEEL_CONFIG_STRING, KEEL_CONFIG_FAMILY | (flags_), "", 0,  \
            0, NULL, tls_apply_string, &tls.cfg.slot_, tls_commit                                  \
    }
#define TLS_BOOL(name_, slot_, dflt_)                                                              \
    {                                                                                              \
        sizeof(keel_config_def), name_, KEEL_CONFIG_BOOL, KEEL_CONFIG_FAMILY, dflt_, 0, 0, NULL,   \
            tls_apply_flag, &tls.cfg.slot_, tls_commit                                             \
    }
#define TLS_INT(name_, slot_, dflt_)                                                               \
    {                                                                                              \
        sizeof(keel_config_def), name_, KEEL_CONFIG_INT, KEEL_CONFIG_FAMILY, dflt_, 0, 2147483647, \
            NULL, tls_apply_int, &tls.cfg.slot_, tls_commit                                        \
    }

static const char *const tls_auth_values[] = {"no", "yes", "optional", NULL};

int tls_config_register(keel_ctx *ctx) {
    const keel_api *api = tls.api;
    if (api->info->config_claim_family(ctx, "tls-") != KEEL_OK) return KEEL_ERR;
    const keel_config_def defs[] = {
        TLS_STR("tls-cert-file", files[TLS_FILE_CERT], 0),
        TLS_STR("tls-key-file", files[TLS_FILE_KEY], 0),
        TLS_STR("tls-key-file-pass", key_pass, KEEL_CONFIG_SENSITIVE),
        TLS_STR("tls-client-cert-file", files[TLS_FILE_CLIENT_CERT], 0),
        TLS_STR("tls-client-key-file", files[TLS_FILE_CLIENT_KEY], 0),
        TLS_STR("tls-client-key-file-pass", client_key_pass, KEEL_CONFIG_SENSITIVE),
        TLS_STR("tls-dh-params-file", files[TLS_FILE_DH], 0),
        TLS_STR("tls-ca-cert-file", files[TLS_FILE_CA], 0),
        TLS_STR("tls-ca-cert-dir", files[TLS_FILE_CA_DIR], 0),
        {sizeof(keel_config_def), "tls-protocols", KEEL_CONFIG_STRING, KEEL_CONFIG_FAMILY, "", 0, 0,
         NULL, tls_apply_protocols, NULL, tls_commit},
        TLS_STR("tls-ciphers", ciphers, 0),
        TLS_STR("tls-ciphersuites", ciphersuites, 0),
        TLS_BOOL("tls-prefer-server-ciphers", prefer_server_ciphers, "no"),
        TLS_BOOL("tls-session-caching", session_caching, "yes"),
        TLS_INT("tls-session-cache-size", session_cache_size, "20480"),
        TLS_INT("tls-session-cache-timeout", session_cache_timeout, "300"),
        {sizeof(keel_config_def), "tls-auth-clients", KEEL_CONFIG_ENUM, KEEL_CONFIG_FAMILY, "yes",
         0, 0, tls_auth_values, tls_apply_auth, NULL, tls_commit},
        TLS_BOOL("tls-replication", replication, "no"),
        TLS_BOOL("tls-cluster", cluster, "no"),
        /* last: at load, init acts on the port once every other value is in */
        {sizeof(keel_config_def), "tls-port", KEEL_CONFIG_INT, KEEL_CONFIG_FAMILY, "0", 0, 65535,
         NULL, tls_apply_port, NULL, tls_commit},
    };
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
        if (api->info->config_register(ctx, &defs[i]) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}
