/* tls.h -- what the parts of the TLS module share: the configured values
 * (tls_cfg), the live contexts (tls_state), the statistics the transport
 * hooks update from I/O threads (atomics), and each file's entry points. */
#ifndef KEEL_MODULES_TLS_H
#define KEEL_MODULES_TLS_H

#include <keel/keel_module.h>

#include <openssl/ssl.h>
#include <stdatomic.h>
#include <sys/stat.h>

#define TLS_AUTH_NO 0
#define TLS_AUTH_YES 1
#define TLS_AUTH_OPTIONAL 2

/* Protocol bits of tls-protocols. */
#define TLS_PROTO_1_0 (1 << 0)
#define TLS_PROTO_1_1 (1 << 1)
#define TLS_PROTO_1_2 (1 << 2)
#define TLS_PROTO_1_3 (1 << 3)
#define TLS_PROTO_DEFAULT (TLS_PROTO_1_2 | TLS_PROTO_1_3)

/* The files a context is built from, in the order of tls_file_sig.sig. */
enum {
    TLS_FILE_CERT,
    TLS_FILE_KEY,
    TLS_FILE_CLIENT_CERT,
    TLS_FILE_CLIENT_KEY,
    TLS_FILE_CA,
    TLS_FILE_CA_DIR,
    TLS_FILE_DH,
    TLS_FILE_COUNT
};

/* The values of the tls-* directives (strings owned, NULL when empty). */
typedef struct tls_cfg {
    long long port;
    char *files[TLS_FILE_COUNT];
    char *key_pass;
    char *client_key_pass;
    char *protocols_text;
    int protocols; /* TLS_PROTO_* parsed from protocols_text */
    char *ciphers;
    char *ciphersuites;
    int prefer_server_ciphers;
    int session_caching;
    long long session_cache_size;
    long long session_cache_timeout;
    int auth_clients; /* TLS_AUTH_* */
    int replication;
    int cluster;
} tls_cfg;

/* What the files looked like when a context was built from them: a change
 * of any (mtime, size, inode) triggers the automatic reload. */
typedef struct tls_file_sig {
    struct stat st[TLS_FILE_COUNT];
    int present[TLS_FILE_COUNT];
} tls_file_sig;

/* One certificate's facts for INFO. */
typedef struct tls_cert_info {
    long long expire_time; /* unix seconds; 0: none */
    char serial[80];       /* hex; "" when none */
    char subject[256];
} tls_cert_info;

/* A built pair of contexts. client is NULL when tls-client-cert-file is
 * not set: outgoing connections then use server (as Valkey does). Never
 * changed once built: a reload builds a new pair. */
typedef struct tls_ctxs {
    SSL_CTX *server;
    SSL_CTX *client;
    tls_cert_info server_cert, client_cert, ca_cert;
} tls_ctxs;

/* Counters the hooks bump (any thread: relaxed atomics, no locks). */
typedef struct tls_stats {
    atomic_llong accepted;
    atomic_llong connected; /* outgoing connections started */
    atomic_llong current;
    atomic_llong hs_completed;
    atomic_llong hs_failed;
    atomic_llong hs_in_progress;
    atomic_llong resumed;
    atomic_llong read_errors;
    atomic_llong write_errors;
    atomic_llong write_retries; /* writes OpenSSL asked to retry */
    atomic_llong log_suppressed;
} tls_stats;

#define TLS_MAX_PORTS 8

/* Per-listener counts (main thread: accept and close run there). */
typedef struct tls_port_stats {
    int port;
    long long accepted;
    long long current;
} tls_port_stats;

typedef struct tls_state {
    keel_ctx *ctx;
    const keel_api *api;
    keel_transport *transport;
    keel_listener *listener;
    int listener_port;
    int ctx_dirty; /* a value the contexts depend on was set */
    tls_cfg cfg;
    tls_ctxs *live;          /* what new connections use; NULL until configured */
    tls_file_sig sig;        /* of the files live was built from */
    tls_file_sig failed_sig; /* of the files the last automatic reload failed on */
    int failed_sig_valid;
    int64_t last_check_ms;
    long long reloads_ok, reloads_failed;
    long long last_reload_time; /* unix seconds */
    char last_error[512];
    tls_stats stats;
    tls_port_stats ports[TLS_MAX_PORTS];
} tls_state;

extern tls_state tls;

/* tls_config.c */
int tls_config_register(keel_ctx *ctx);
void tls_cfg_free(tls_cfg *cfg);

/* tls_ctx.c: builds contexts from cfg; NULL with the reason in err. */
tls_ctxs *tls_ctxs_build(const tls_cfg *cfg, char *err, size_t errlen);
void tls_ctxs_free(tls_ctxs *c);
void tls_file_sig_take(const tls_cfg *cfg, tls_file_sig *sig);
int tls_file_sig_equal(const tls_file_sig *a, const tls_file_sig *b);

/* tls_module.c */
int tls_reconfigure(const char *why, int automatic);

/* tls_conn.c */
void tls_transport_def_fill(keel_transport_def *def);

/* tls_info.c */
void tls_info_section(keel_info *info, void *priv);

#endif
