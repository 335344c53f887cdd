/* tcpmod.c -- a fixture transport: plain TCP through the module API, so a
 * client (redis-cli, or the unit test) talks RESP to the port given as the
 * module's argument. Its "handshake" waits until the client's first bytes
 * arrive (without consuming them), which exercises the server's handshake
 * path while the protocol stays plain. */
#include <keel/keel_module.h>

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

typedef struct tcp_state {
    int waited; /* the handshake asked for readability once */
} tcp_state;

static const keel_api *api;

static int tcp_accept(keel_conn *conn, void *priv) {
    api->transport->conn_set_data(conn, api->core->calloc(1, sizeof(tcp_state)));
    return KEEL_OK;
}

static int tcp_handshake(keel_conn *conn, void *priv) {
    tcp_state *st = api->transport->conn_get_data(conn);
    if (st->waited) return KEEL_OK;
    st->waited = 1;
    return KEEL_CONN_WANT_READ;
}

static ssize_t tcp_read(keel_conn *conn, void *buf, size_t len, void *priv) {
    return read(api->transport->conn_fd(conn), buf, len);
}

static ssize_t tcp_writev(keel_conn *conn, const struct iovec *iov, int iovcnt, void *priv) {
    return writev(api->transport->conn_fd(conn), iov, iovcnt);
}

static void tcp_close(keel_conn *conn, void *priv) {
    api->core->free(api->transport->conn_get_data(conn));
}

/* loadmodule tcpmod.so <port> */
static int tcp_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    if (!KEEL_API_HAS(api, transport, listen)) {
        api->core->set_error(ctx, "this server has no transport API");
        return KEEL_ERR;
    }
    if (argc != 1) {
        api->core->set_error(ctx, "usage: tcpmod.so <port>");
        return KEEL_ERR;
    }
    keel_transport_def def = {sizeof(def), "tcpmod", tcp_accept, tcp_handshake, tcp_read,
                              tcp_writev,  NULL,     tcp_close,  NULL,          NULL,
                              0,           0,        NULL};
    keel_transport *t = api->transport->register_transport(ctx, &def);
    const char *addrs[] = {"127.0.0.1"};
    if (!t || api->transport->listen(ctx, t, addrs, 1, atoi(argv[0])) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

KEEL_MODULE("tcpmod", 1, tcp_init, NULL)
