/* rdma_module.c -- the RDMA module's declaration and life: the rdma-*
 * directives under Valkey 8.1's names, claimed as the "rdma-" config
 * family; the transport (KEEL_TRANSPORT_OWN_FD: connections are the
 * module's completion channels, not sockets); the keepalive timer; INFO
 * rdma; init (refused on a server without ABI 1.4, or when rdma-port asks
 * for a listener and no RDMA device exists) and deinit. Main thread. */
#include "rdma.h"

#include <string.h>

rdma_state rdma;

/* ---- the directives ---- */

static int rdma_commit(void *priv, const char **err) {
    (void)priv;
    if (rdma_listener_sync() != KEEL_OK) {
        *err = rdma.last_error;
        return KEEL_ERR;
    }
    return KEEL_OK;
}

static int rdma_apply_port(long long number, const char *text, void *priv, const char **err) {
    (void)text, (void)priv, (void)err;
    rdma.cfg.port = number;
    return KEEL_OK;
}

/* As bind: at most 16 addresses, stored as given ("" keeps the default). */
static int rdma_apply_bind(long long number, const char *text, void *priv, const char **err) {
    (void)number, (void)priv;
    int words = 0;
    for (const char *p = text ? text : ""; *p;) {
        p += strspn(p, " ");
        if (*p) words++;
        p += strcspn(p, " ");
    }
    if (words > RDMA_MAX_BIND) {
        *err = "Too many bind addresses specified.";
        return KEEL_ERR;
    }
    const keel_api *api = rdma.api;
    char *copy = NULL;
    if (words) {
        size_t n = strlen(text) + 1;
        copy = api->core->alloc(n);
        memcpy(copy, text, n);
    }
    api->core->free(rdma.cfg.bind);
    rdma.cfg.bind = copy;
    return KEEL_OK;
}

static int rdma_apply_number(long long number, const char *text, void *priv, const char **err) {
    (void)text, (void)err;
    *(long long *)priv = number;
    return KEEL_OK;
}

static int rdma_config_register(keel_ctx *ctx) {
    const keel_api *api = rdma.api;
    if (api->info->config_claim_family(ctx, "rdma-") != KEEL_OK) return KEEL_ERR;
    const uint32_t fixed = KEEL_CONFIG_FAMILY | KEEL_CONFIG_IMMUTABLE;
    const keel_config_def defs[] = {
        /* Read when a connection is set up: fixed at load, as in Valkey. */
        {sizeof(keel_config_def), "rdma-rx-size", KEEL_CONFIG_MEMORY, fixed, "1048576",
         RDMA_RX_SIZE_MIN, RDMA_RX_SIZE_MAX, NULL, rdma_apply_number, &rdma.cfg.rx_size, NULL},
        {sizeof(keel_config_def), "rdma-completion-vector", KEEL_CONFIG_INT, fixed, "-1", -1,
         RDMA_COMP_VECTOR_MAX, NULL, rdma_apply_number, &rdma.cfg.comp_vector, NULL},
        {sizeof(keel_config_def), "rdma-bind", KEEL_CONFIG_STRING, KEEL_CONFIG_FAMILY, "", 0, 0,
         NULL, rdma_apply_bind, NULL, rdma_commit},
        /* last: init acts on the port once every other value is in */
        {sizeof(keel_config_def), "rdma-port", KEEL_CONFIG_INT, KEEL_CONFIG_FAMILY, "0", 0, 65535,
         NULL, rdma_apply_port, NULL, rdma_commit},
    };
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
        if (api->info->config_register(ctx, &defs[i]) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

/* ---- keepalive and INFO ---- */

static int64_t rdma_keepalive_tick(keel_ctx *ctx, void *priv) {
    (void)ctx, (void)priv;
    for (rdma_conn *c = rdma.conns; c; c = c->next)
        rdma_conn_keepalive(c);
    return RDMA_KEEPALIVE_MS;
}

static long long rdma_load(atomic_llong *v) {
    return atomic_load_explicit(v, memory_order_relaxed);
}

void rdma_info_section(keel_info *info, void *priv) {
    (void)priv;
    const keel_api *api = rdma.api;
    rdma_stats *s = &rdma.stats;
    api->info->field(info, "rdma_enabled:%d", rdma.listen.n > 0);
    api->info->field(info, "rdma_port:%d", rdma.listen_port);
    api->info->field(info, "rdma_bind:%s", rdma.listen_bind ? rdma.listen_bind : "");
    api->info->field(info, "rdma_listeners:%d", rdma.listen.n);
    api->info->field(info, "rdma_rx_size:%lld", rdma.cfg.rx_size);
    api->info->field(info, "rdma_device_ops:%s", rdma.ops->name);
    api->info->field(info, "rdma_connections_accepted:%lld", rdma_load(&s->accepted));
    api->info->field(info, "rdma_connections_current:%lld", rdma_load(&s->current));
    api->info->field(info, "rdma_connections_refused:%lld", rdma_load(&s->refused));
    api->info->field(info, "rdma_bytes_received:%lld", rdma_load(&s->bytes_in));
    api->info->field(info, "rdma_bytes_sent:%lld", rdma_load(&s->bytes_out));
    api->info->field(info, "rdma_write_stalls:%lld", rdma_load(&s->write_stalls));
    api->info->field(info, "rdma_keepalives_sent:%lld", rdma_load(&s->keepalives_sent));
    api->info->field(info, "rdma_protocol_errors:%lld", rdma_load(&s->protocol_errors));
    api->info->field(info, "rdma_completion_errors:%lld", rdma_load(&s->completion_errors));
}

/* ---- life ---- */

static int rdma_fail(keel_ctx *ctx, const char *msg) {
    rdma.api->core->log(ctx, KEEL_LOG_WARNING, "%s", msg);
    rdma.api->core->set_error(ctx, msg);
    return KEEL_ERR;
}

/* ABI 1.4's members may be present in a table and still unset. */
static int rdma_api_usable(const keel_api *api) {
    return KEEL_API_HAS(api, info, config_claim_family) &&
           KEEL_API_HAS(api, transport, conn_wake) && api->transport->fd_watch &&
           api->transport->fd_unwatch && api->transport->conn_adopt && api->transport->conn_wake;
}

static void rdma_teardown(void) {
    rdma_listener_teardown();
    if (rdma.keepalive) rdma.api->hooks->timer_del(rdma.ctx, rdma.keepalive);
    rdma.keepalive = NULL;
    rdma.api->core->free(rdma.cfg.bind);
    rdma.cfg.bind = NULL;
}

static int rdma_init(keel_ctx *ctx, const keel_api *api, int argc, const char *const *argv) {
    (void)argc, (void)argv;
    memset(&rdma, 0, sizeof(rdma));
    rdma.ctx = ctx;
    rdma.api = api;
    if (!rdma_api_usable(api))
        return rdma_fail(ctx, "the rdma module needs a server with module ABI 1.4");
    rdma.ops = rdma_ops_get();
    /* The server forks (BGSAVE): registered pages must not be shared. */
    if (rdma.ops->fork_init() != 0)
        api->core->log(ctx, KEEL_LOG_NOTICE, "RDMA: ibv_fork_init failed");
    keel_transport_def def;
    rdma_transport_def_fill(&def);
    rdma.transport = api->transport->register_transport(ctx, &def);
    if (!rdma.transport) return KEEL_ERR;
    if (rdma_config_register(ctx) != KEEL_OK ||
        api->info->add_section(ctx, "rdma", rdma_info_section, NULL) != KEEL_OK) {
        rdma_teardown();
        return KEEL_ERR;
    }
    rdma.keepalive = api->hooks->timer_add(ctx, RDMA_KEEPALIVE_MS, rdma_keepalive_tick, NULL);
    if (!rdma.keepalive) {
        rdma_teardown();
        return rdma_fail(ctx, "RDMA: cannot start the keepalive timer");
    }
    if (rdma_listener_sync() != KEEL_OK) {
        char msg[sizeof(rdma.last_error)];
        memcpy(msg, rdma.last_error, sizeof(msg));
        rdma_teardown();
        api->core->set_error(ctx, msg);
        return KEEL_ERR;
    }
    api->core->log(ctx, KEEL_LOG_NOTICE, "RDMA module loaded (device ops: %s)%s", rdma.ops->name,
                   rdma.cfg.port ? "" : ", the listener is off (rdma-port 0)");
    return KEEL_OK;
}

static int rdma_deinit(keel_ctx *ctx) {
    (void)ctx;
    rdma_teardown();
    return KEEL_OK;
}

KEEL_MODULE("rdma", 10000, rdma_init, rdma_deinit)
