/* fixture_v1_3.c -- the ABI 1.3 fixture module ("abifix13").
 *
 * Built ONLY against the frozen copy of the 1.3 header (tests/abi/include-1.3),
 * never sdk/include: it is a module compiled the day ABI 1.3 shipped, and
 * every later server of ABI major 1 must keep loading it. It uses some of
 * what 1.3 added, probed with KEEL_API_HAS: a claimed config family
 * ("rdma-") with a commit hook shared by two parameters and a SENSITIVE
 * one, and a plain-TCP transport registered with the 1.3 def members (a
 * connect hook, handshake_timeout_ms) that opens and closes listeners at
 * run time, opens an outgoing connection and is found by transport_find.
 * What 1.0 to 1.2 have is exercised by the older fixtures.
 *
 *   rdma-cert, rdma-key    strings sharing one commit, which refuses a cert
 *                          that differs from the key
 *   rdma-pass              a SENSITIVE string
 *   ABIFIX13.PROBE         KEEL_API_HAS and transport_find results
 *   ABIFIX13.STATS         [applies, commits, accepted, last local port]
 *   ABIFIX13.OPEN port     listener_open on 127.0.0.1:port
 *   ABIFIX13.CLOSE         listener_close of that listener
 *   ABIFIX13.DIAL port     connect to 127.0.0.1:port, send PING, keep the
 *                          first reply line
 *   ABIFIX13.DIALED        that line ("" while pending, "failed" if done
 *                          reported an error)
 *   ABIFIX13.CONNS         conn_count of the transport */
#include <keel/keel_module.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static const keel_api *api;
static keel_transport *transport;
static keel_listener *listener;
static long long applies, commits, accepted, local_port;
static char cert[64], key[64];
static char dialed[64]; /* the outgoing connection's first reply line */
static size_t dialed_len;

static int apply_text(long long number, const char *text, void *priv, const char **err) {
    if (strlen(text) >= sizeof(cert)) {
        *err = "too long";
        return KEEL_ERR;
    }
    applies++;
    if (priv) strcpy(priv, text);
    return KEEL_OK;
}

/* Runs once for a CONFIG SET of rdma-cert and rdma-key together. */
static int commit_pair(void *priv, const char **err) {
    if (strcmp(cert, key)) {
        *err = "abifix13: cert and key differ";
        return KEEL_ERR;
    }
    commits++;
    return KEEL_OK;
}

static int register_configs(keel_ctx *ctx) {
    const keel_config_def defs[] = {
        {.size = sizeof(keel_config_def),
         .name = "rdma-cert",
         .type = KEEL_CONFIG_STRING,
         .flags = KEEL_CONFIG_FAMILY,
         .default_value = "",
         .apply = apply_text,
         .priv = cert,
         .commit = commit_pair},
        {.size = sizeof(keel_config_def),
         .name = "rdma-key",
         .type = KEEL_CONFIG_STRING,
         .flags = KEEL_CONFIG_FAMILY,
         .default_value = "",
         .apply = apply_text,
         .priv = key,
         .commit = commit_pair},
        {.size = sizeof(keel_config_def),
         .name = "rdma-pass",
         .type = KEEL_CONFIG_STRING,
         .flags = KEEL_CONFIG_FAMILY | KEEL_CONFIG_SENSITIVE,
         .default_value = "",
         .apply = apply_text},
    };
    if (api->info->config_claim_family(ctx, "rdma-") != KEEL_OK) return KEEL_ERR;
    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
        if (api->info->config_register(ctx, &defs[i]) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

/* ---- the transport: plain TCP ---- */

static int tr_accept(keel_conn *conn, void *priv) {
    accepted++;
    local_port = api->transport->conn_local_port(conn);
    return api->transport->conn_host(conn) == NULL ? KEEL_OK : KEEL_ERR;
}

/* An outgoing connection knows the host it was opened to, and no local
 * listener's port. */
static int tr_connect(keel_conn *conn, void *priv) {
    const char *host = api->transport->conn_host(conn);
    if (!host || strcmp(host, "127.0.0.1") || api->transport->conn_local_port(conn) != 0)
        return KEEL_ERR;
    return KEEL_OK;
}

static ssize_t tr_read(keel_conn *conn, void *buf, size_t len, void *priv) {
    return read(api->transport->conn_fd(conn), buf, len);
}

static ssize_t tr_writev(keel_conn *conn, const struct iovec *iov, int iovcnt, void *priv) {
    return writev(api->transport->conn_fd(conn), iov, iovcnt);
}

/* ---- the outgoing connection ---- */

static void dial_readable(keel_conn *conn, int status, void *udata) {
    ssize_t n =
        api->transport->conn_read(conn, dialed + dialed_len, sizeof(dialed) - 1 - dialed_len);
    if (n < 0 && errno == EAGAIN) return;
    if (n > 0) dialed_len += (size_t)n;
    dialed[dialed_len] = '\0';
    char *eol = strstr(dialed, "\r\n");
    if (eol) *eol = '\0';
    if (eol || n <= 0 || dialed_len == sizeof(dialed) - 1) {
        if (!eol) strcpy(dialed, "failed");
        api->transport->conn_close(conn);
    }
}

static void dial_done(keel_conn *conn, int status, void *udata) {
    if (status != KEEL_OK || api->transport->conn_write(conn, "PING\r\n", 6) != 6 ||
        api->transport->conn_set_handlers(conn, dial_readable, NULL, NULL) != KEEL_OK) {
        strcpy(dialed, "failed");
        if (status == KEEL_OK) api->transport->conn_close(conn);
    }
}

/* ---- commands ---- */

/* The 1.3 members are present in this server's table, transport_find
 * finds this module's transport and no other name; a transport group sized
 * as 1.2 had it must make the macro say no. Replies 1 1 1 1 1 1 0. */
static void cmd_probe(keel_ctx *ctx) {
    keel_api older = *api;
    keel_api_transport older_transport = *api->transport;
    older_transport.size = (uint32_t)offsetof(keel_api_transport, listener_open);
    older.transport = &older_transport;
    api->command->reply_array(ctx, 7);
    api->command->reply_int(ctx, KEEL_API_HAS(api, info, config_claim_family));
    api->command->reply_int(ctx, KEEL_API_HAS(api, transport, transport_find));
    api->command->reply_int(ctx, api->abi_major == 1 && api->abi_minor >= 3);
    api->command->reply_int(ctx, api->transport->transport_find("abifix13") == transport);
    api->command->reply_int(ctx, api->transport->transport_find("abifix13-none") == NULL);
    api->command->reply_int(ctx, KEEL_API_HAS(&older, transport, conn_count));
    api->command->reply_int(ctx, KEEL_API_HAS(&older, transport, listener_open));
}

static void cmd_stats(keel_ctx *ctx) {
    api->command->reply_array(ctx, 4);
    api->command->reply_int(ctx, applies);
    api->command->reply_int(ctx, commits);
    api->command->reply_int(ctx, accepted);
    api->command->reply_int(ctx, local_port);
}

static void cmd_open(keel_ctx *ctx) {
    long long port;
    const char *addrs[] = {"127.0.0.1"};
    if (listener) {
        api->command->reply_error(ctx, "ERR abifix13 already listens");
    } else if (api->command->arg_ll(ctx, 1, &port) != KEEL_OK || port < 1 || port > 65535) {
        api->command->reply_error(ctx, "ERR bad port");
    } else if (!(listener = api->transport->listener_open(ctx, transport, addrs, 1, (int)port))) {
        api->command->reply_error(ctx, "ERR listener_open failed");
    } else {
        api->command->reply_ok(ctx);
    }
}

static void cmd_close(keel_ctx *ctx) {
    if (!listener) {
        api->command->reply_error(ctx, "ERR abifix13 does not listen");
        return;
    }
    api->transport->listener_close(listener);
    listener = NULL;
    api->command->reply_ok(ctx);
}

static void cmd_dial(keel_ctx *ctx) {
    long long port;
    if (api->command->arg_ll(ctx, 1, &port) != KEEL_OK || port < 1 || port > 65535) {
        api->command->reply_error(ctx, "ERR bad port");
        return;
    }
    dialed[0] = '\0';
    dialed_len = 0;
    if (!api->transport->connect(ctx, transport, "127.0.0.1", (int)port, 5000, dial_done, NULL))
        api->command->reply_error(ctx, "ERR connect refused");
    else
        api->command->reply_ok(ctx);
}

static void cmd_dialed(keel_ctx *ctx) {
    api->command->reply_bulk(ctx, dialed, strlen(dialed));
}

static void cmd_conns(keel_ctx *ctx) {
    api->command->reply_int(ctx, (long long)api->transport->conn_count(transport));
}

static int add_command(keel_ctx *ctx, const char *name, keel_command_fn fn, int arity) {
    const keel_command_def def = {
        .size = sizeof(def), .name = name, .fn = fn, .arity = arity, .flags = "readonly"};
    return api->command->register_command(ctx, &def);
}

static int register_commands(keel_ctx *ctx) {
    if (add_command(ctx, "abifix13.probe", cmd_probe, 1) != KEEL_OK ||
        add_command(ctx, "abifix13.stats", cmd_stats, 1) != KEEL_OK ||
        add_command(ctx, "abifix13.open", cmd_open, 2) != KEEL_OK ||
        add_command(ctx, "abifix13.close", cmd_close, 1) != KEEL_OK ||
        add_command(ctx, "abifix13.dial", cmd_dial, 2) != KEEL_OK ||
        add_command(ctx, "abifix13.dialed", cmd_dialed, 1) != KEEL_OK ||
        add_command(ctx, "abifix13.conns", cmd_conns, 1) != KEEL_OK)
        return KEEL_ERR;
    return KEEL_OK;
}

static int abifix13_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    if (!KEEL_API_HAS(api, transport, transport_find) ||
        !KEEL_API_HAS(api, info, config_claim_family)) {
        api->core->set_error(ctx, "the server's table lacks ABI 1.3 functions");
        return KEEL_ERR;
    }
    applies = commits = accepted = local_port = 0;
    listener = NULL;
    const keel_transport_def def = {.size = sizeof(def),
                                    .name = "abifix13",
                                    .accept = tr_accept,
                                    .read = tr_read,
                                    .writev = tr_writev,
                                    .connect = tr_connect,
                                    .handshake_timeout_ms = 5000};
    if (!(transport = api->transport->register_transport(ctx, &def))) return KEEL_ERR;
    if (register_configs(ctx) != KEEL_OK || register_commands(ctx) != KEEL_OK) return KEEL_ERR;
    api->core->log(ctx, KEEL_LOG_NOTICE, "abifix13 (ABI %d.%d) loaded on server %s (ABI %u.%u)",
                   KEEL_ABI_MAJOR, KEEL_ABI_MINOR, api->core->server_version(), api->abi_major,
                   api->abi_minor);
    return KEEL_OK;
}

KEEL_MODULE("abifix13", 10300, abifix13_init, NULL)
