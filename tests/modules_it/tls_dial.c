/* tls_dial.c -- a test fixture module for the tls module's outgoing side:
 * TLSDIAL <host> <port> opens a connection through the transport named
 * "tls" (transport_find, connect), sends one PING once the handshake is
 * done, and replies with what came back ("+PONG"), or an error when the
 * connection or its handshake failed (the tls module logs why). Built
 * against sdk/include only. */
#include <keel/keel_module.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const keel_api *api;

typedef struct dial {
    keel_blocked *blocked;
    char got[64];
    size_t len;
} dial;

static void dial_finish(dial *d, keel_conn *conn, const char *msg) {
    if (conn) api->transport->conn_close(conn);
    api->block->unblock(d->blocked, strdup(msg));
    free(d);
}

static void dial_readable(keel_conn *conn, int status, void *udata) {
    (void)status;
    dial *d = udata;
    ssize_t n = api->transport->conn_read(conn, d->got + d->len, sizeof(d->got) - 1 - d->len);
    if (n > 0) d->len += (size_t)n;
    if (n < 0 && errno == EAGAIN) return;
    char *eol = memchr(d->got, '\n', d->len);
    if (!eol && n > 0 && d->len < sizeof(d->got) - 1) return;
    d->got[d->len] = '\0';
    if (eol) *eol = '\0';
    if (d->len && d->got[strlen(d->got) - 1] == '\r') d->got[strlen(d->got) - 1] = '\0';
    dial_finish(d, conn, d->len ? d->got : "ERR connection ended before a reply");
}

static void dial_done(keel_conn *conn, int status, void *udata) {
    dial *d = udata;
    if (status != KEEL_OK) {
        api->block->unblock(d->blocked, strdup("ERR connect or handshake failed"));
        free(d);
        return;
    }
    if (api->transport->conn_write(conn, "PING\r\n", 6) != 6) {
        dial_finish(d, conn, "ERR write failed");
        return;
    }
    api->transport->conn_set_handlers(conn, dial_readable, NULL, d);
}

static void dial_unblocked(keel_ctx *ctx, void *data, void *priv) {
    (void)priv;
    const char *s = data;
    if (!strncmp(s, "ERR", 3))
        api->command->reply_error(ctx, s);
    else
        api->command->reply_bulk(ctx, s, strlen(s));
    free(data);
}

static void dial_free_data(void *data, void *priv) {
    (void)priv;
    free(data);
}

static void cmd_dial(keel_ctx *ctx) {
    size_t hlen;
    long long port;
    const char *host = api->command->argv(ctx, 1, &hlen);
    keel_transport *t = api->transport->transport_find("tls");
    if (!t || api->command->arg_ll(ctx, 2, &port) != KEEL_OK) {
        api->command->reply_error(ctx, t ? "ERR bad port" : "ERR no tls transport");
        return;
    }
    char name[256];
    snprintf(name, sizeof(name), "%.*s", (int)hlen, host);
    dial *d = calloc(1, sizeof(*d));
    keel_block_def def = {
        .size = sizeof(def), .on_unblock = dial_unblocked, .free_data = dial_free_data};
    d->blocked = api->block->block(ctx, &def);
    if (!d->blocked) {
        free(d);
        api->command->reply_error(ctx, "ERR cannot block");
        return;
    }
    if (!api->transport->connect(ctx, t, name, (int)port, 5000, dial_done, d)) {
        api->block->unblock(d->blocked, strdup("ERR cannot connect"));
        free(d);
    }
}

static int dial_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    (void)argc, (void)argv;
    api = a;
    if (!KEEL_API_HAS(api, transport, transport_find)) {
        api->core->set_error(ctx, "needs module ABI 1.3");
        return KEEL_ERR;
    }
    keel_command_def def = {
        .size = sizeof(def), .name = "tlsdial", .fn = cmd_dial, .arity = 3, .flags = "admin"};
    return api->command->register_command(ctx, &def);
}

KEEL_MODULE("tlsdial", 1, dial_init, NULL)
