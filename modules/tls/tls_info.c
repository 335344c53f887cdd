/* tls_info.c -- INFO tls: the certificates' expiry and serial (Valkey
 * 9.x's field names), connection and handshake counts, per-listener
 * counts and the reload history. Main thread (INFO runs there); the
 * counters the I/O threads bump are read with relaxed loads. */
#include "tls.h"

#include <time.h>

static long long tls_load(atomic_llong *v) {
    return atomic_load_explicit(v, memory_order_relaxed);
}

/* tls_<name>_cert_expire_time / _serial / _expires_in_seconds, as Valkey:
 * 0, "none" and 0 when there is no such certificate. */
static void tls_info_cert(keel_info *info, const char *name, const tls_cert_info *ci) {
    const keel_api *api = tls.api;
    long long now = (long long)time(NULL);
    int have = ci && ci->expire_time;
    api->info->field(info, "tls_%s_cert_expire_time:%lld", name, have ? ci->expire_time : 0);
    api->info->field(info, "tls_%s_cert_expires_in_seconds:%lld", name,
                     have ? ci->expire_time - now : 0);
    api->info->field(info, "tls_%s_cert_serial:%s", name,
                     have && ci->serial[0] ? ci->serial : "none");
}

void tls_info_section(keel_info *info, void *priv) {
    (void)priv;
    const keel_api *api = tls.api;
    tls_ctxs *live = tls.live;
    tls_stats *s = &tls.stats;
    api->info->field(info, "tls_enabled:%d", live != NULL);
    api->info->field(info, "tls_port:%d", tls.listener_port);
    tls_info_cert(info, "server", live ? &live->server_cert : NULL);
    tls_info_cert(info, "client", live && live->client ? &live->client_cert : NULL);
    tls_info_cert(info, "ca", live ? &live->ca_cert : NULL);
    api->info->field(info, "tls_connections_accepted:%lld", tls_load(&s->accepted));
    api->info->field(info, "tls_connections_outgoing:%lld", tls_load(&s->connected));
    api->info->field(info, "tls_connections_current:%lld", tls_load(&s->current));
    api->info->field(info, "tls_handshakes_completed:%lld", tls_load(&s->hs_completed));
    api->info->field(info, "tls_handshakes_failed:%lld", tls_load(&s->hs_failed));
    api->info->field(info, "tls_handshakes_in_progress:%lld", tls_load(&s->hs_in_progress));
    api->info->field(info, "tls_sessions_resumed:%lld", tls_load(&s->resumed));
    api->info->field(info, "tls_read_errors:%lld", tls_load(&s->read_errors));
    api->info->field(info, "tls_write_errors:%lld", tls_load(&s->write_errors));
    api->info->field(info, "tls_write_retries:%lld", tls_load(&s->write_retries));
    api->info->field(info, "tls_reloads_ok:%lld", tls.reloads_ok);
    api->info->field(info, "tls_reloads_failed:%lld", tls.reloads_failed);
    api->info->field(info, "tls_last_reload_time:%lld", tls.last_reload_time);
    for (int i = 0; i < TLS_MAX_PORTS; i++) {
        const tls_port_stats *p = &tls.ports[i];
        if (p->port)
            api->info->field(info, "tls_listener_%d:accepted=%lld,current=%lld", p->port,
                             p->accepted, p->current);
    }
}
