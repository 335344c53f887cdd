/* tls_module.c -- the TLS module's life: init (OpenSSL, the transport, the
 * tls-* directives, the first contexts and listener), the reconfiguration
 * every CONFIG SET of a tls-* value ends in (new contexts swapped in only
 * when they load, the listener opened, moved or closed), the automatic
 * reload when the certificate files change on disk (checked once a second
 * from the server cron), and unload. All of it runs on the main thread. */
#include "tls.h"

#include <openssl/err.h>
#include <string.h>
#include <time.h>

tls_state tls;

/* Contexts are needed as soon as anything can use them (Valkey's rule),
 * and kept current once built (outgoing connections use them). */
static int tls_ctx_needed(void) {
    return tls.cfg.port || tls.cfg.replication || tls.cfg.cluster || tls.live;
}

static void tls_swap_in(tls_ctxs *fresh, const tls_file_sig *sig) {
    tls_ctxs_free(tls.live);
    tls.live = fresh;
    tls.sig = *sig;
    tls.failed_sig_valid = 0;
    tls.ctx_dirty = 0;
    tls.reloads_ok++;
    tls.last_reload_time = (long long)time(NULL);
}

/* Builds new contexts from the current values into *out (NULL when none
 * are needed or nothing changed). The signature is taken before the files
 * are read, so a change while they are read is seen by the next check. */
static int tls_build_pending(int force, tls_ctxs **out, tls_file_sig *sig) {
    *out = NULL;
    if (!tls_ctx_needed() || (!tls.ctx_dirty && !force && tls.live)) return KEEL_OK;
    tls_file_sig_take(&tls.cfg, sig);
    char err[sizeof(tls.last_error) - 64];
    *out = tls_ctxs_build(&tls.cfg, err, sizeof(err));
    if (*out) return KEEL_OK;
    snprintf(tls.last_error, sizeof(tls.last_error), "Unable to update TLS configuration: %s", err);
    tls.reloads_failed++;
    return KEEL_ERR;
}

/* Opens, moves or closes the listener to match tls-port. */
static int tls_listener_sync(void) {
    const keel_api *api = tls.api;
    int port = (int)tls.cfg.port;
    if (port == tls.listener_port && (port == 0 || tls.listener)) return KEEL_OK;
    keel_listener *l = NULL;
    if (port) {
        l = api->transport->listener_open(tls.ctx, tls.transport, NULL, 0, port);
        if (!l) {
            snprintf(tls.last_error, sizeof(tls.last_error),
                     "Unable to listen on this port. Check server logs.");
            return KEEL_ERR;
        }
    }
    if (tls.listener) api->transport->listener_close(tls.listener);
    tls.listener = l;
    tls.listener_port = port;
    if (port) api->core->log(tls.ctx, KEEL_LOG_NOTICE, "TLS listening on port %d", port);
    return KEEL_OK;
}

/* After a CONFIG SET (automatic 0) or a file change (1): new contexts if
 * any value they depend on was set, then the listener. Nothing changes
 * unless every step succeeds: a bad file leaves the old contexts serving. */
int tls_reconfigure(const char *why, int automatic) {
    const keel_api *api = tls.api;
    tls_ctxs *fresh;
    tls_file_sig sig;
    if (tls_build_pending(automatic, &fresh, &sig) != KEEL_OK) {
        api->core->log(tls.ctx, KEEL_LOG_WARNING, "TLS reload (%s) failed, %s: %s", why,
                       tls.live ? "the previous certificates stay in use" : "TLS is not configured",
                       tls.last_error);
        return KEEL_ERR;
    }
    if (tls_listener_sync() != KEEL_OK) {
        tls_ctxs_free(fresh);
        return KEEL_ERR;
    }
    if (fresh) {
        tls_swap_in(fresh, &sig);
        api->core->log(tls.ctx, KEEL_LOG_NOTICE,
                       "TLS certificates loaded (%s): server certificate %s expires at %lld", why,
                       fresh->server_cert.subject, fresh->server_cert.expire_time);
    }
    return KEEL_OK;
}

/* Once a second: reload when a file the live contexts came from changed.
 * A failed reload is logged once per change of the files (not every
 * second) and keeps the old contexts. */
static int64_t tls_cron(keel_ctx *ctx, void *priv) {
    (void)ctx, (void)priv;
    int64_t now = tls.api->core->mstime();
    if (!tls.live || now - tls.last_check_ms < 1000) return 0;
    tls.last_check_ms = now;
    tls_file_sig sig;
    tls_file_sig_take(&tls.cfg, &sig);
    if (tls_file_sig_equal(&sig, &tls.sig)) return 0;
    if (tls.failed_sig_valid && tls_file_sig_equal(&sig, &tls.failed_sig)) return 0;
    tls.api->core->log(tls.ctx, KEEL_LOG_NOTICE,
                       "TLS certificate files changed on disk, reloading");
    if (tls_reconfigure("files changed", 1) != KEEL_OK) {
        tls.failed_sig = sig;
        tls.failed_sig_valid = 1;
    }
    return 0;
}

static int tls_fail(keel_ctx *ctx, const char *msg) {
    tls.api->core->set_error(ctx, msg);
    return KEEL_ERR;
}

static void tls_teardown(void) {
    if (tls.listener) tls.api->transport->listener_close(tls.listener);
    tls.listener = NULL;
    tls_ctxs_free(tls.live);
    tls.live = NULL;
    tls_cfg_free(&tls.cfg);
}

static int tls_init(keel_ctx *ctx, const keel_api *api, int argc, const char *const *argv) {
    (void)argc, (void)argv;
    memset(&tls, 0, sizeof(tls));
    tls.ctx = ctx;
    tls.api = api;
    tls.cfg.protocols = TLS_PROTO_DEFAULT;
    if (!KEEL_API_HAS(api, transport, transport_find) ||
        !KEEL_API_HAS(api, info, config_claim_family))
        return tls_fail(ctx, "the tls module needs a server with module ABI 1.3");
    if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL) !=
        1)
        return tls_fail(ctx, "OpenSSL failed to initialise");
    keel_transport_def def;
    tls_transport_def_fill(&def);
    tls.transport = api->transport->register_transport(ctx, &def);
    if (!tls.transport) return KEEL_ERR;
    if (tls_config_register(ctx) != KEEL_OK) {
        tls_cfg_free(&tls.cfg);
        return KEEL_ERR;
    }
    if (api->info->add_section(ctx, "tls", tls_info_section, NULL) != KEEL_OK ||
        api->hooks->add_cron(ctx, tls_cron, NULL) != KEEL_OK) {
        tls_cfg_free(&tls.cfg);
        return KEEL_ERR;
    }
    if (tls_reconfigure("start-up", 0) != KEEL_OK) {
        api->core->set_error(ctx, tls.last_error);
        tls_teardown();
        return KEEL_ERR;
    }
    return KEEL_OK;
}

static int tls_deinit(keel_ctx *ctx) {
    (void)ctx;
    tls_teardown();
    return KEEL_OK;
}

KEEL_MODULE("tls", 10000, tls_init, tls_deinit)
