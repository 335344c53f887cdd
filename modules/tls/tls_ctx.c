/* tls_ctx.c -- builds the server and client SSL_CTX pair from the tls-*
 * values, as Valkey's tlsConfigure does (protocols, ciphers, DH params or
 * automatic groups, session cache and tickets, CA file/dir, passphrases),
 * and reads the certificates' facts for INFO. A built pair is never
 * changed afterwards: sessions hold references to it, so a reload builds a
 * new pair and the old one goes when its last session does. Also the file
 * signatures the automatic reload compares. */
#include "tls.h"

#include <dirent.h>
#include <errno.h>
#include <openssl/bn.h>
#include <openssl/decoder.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The session id context: a resumed session must come from this server. */
static const unsigned char tls_sid_ctx[] = "keel";

static int tls_password_cb(char *buf, int size, int rwflag, void *u) {
    (void)rwflag;
    const char *pass = u;
    if (!pass) return -1;
    size_t n = strlen(pass);
    if (n > (size_t)size) return -1;
    memcpy(buf, pass, n);
    return (int)n;
}

/* The reason of the oldest queued OpenSSL error, then clears the queue. */
static const char *tls_err_reason(char *buf, size_t len) {
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, buf, len);
    else
        snprintf(buf, len, "%s", errno ? strerror(errno) : "unknown error");
    ERR_clear_error();
    return buf;
}

static int tls_set_protocols(SSL_CTX *ctx, int protocols) {
    static const struct {
        int bit;
        uint64_t op;
    } map[] = {{TLS_PROTO_1_0, SSL_OP_NO_TLSv1},
               {TLS_PROTO_1_1, SSL_OP_NO_TLSv1_1},
               {TLS_PROTO_1_2, SSL_OP_NO_TLSv1_2},
               {TLS_PROTO_1_3, SSL_OP_NO_TLSv1_3}};
    SSL_CTX_set_options(ctx, SSL_OP_NO_SSLv2 | SSL_OP_NO_SSLv3);
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!(protocols & map[i].bit)) SSL_CTX_set_options(ctx, map[i].op);
    /* OpenSSL 3 refuses TLS 1.0/1.1 at its default security level even when
     * allowed: an operator who lists them means it. */
    if (protocols & (TLS_PROTO_1_0 | TLS_PROTO_1_1)) SSL_CTX_set_security_level(ctx, 0);
    return KEEL_OK;
}

/* What the server and client contexts share (createSSLContext). */
static SSL_CTX *tls_ctx_base(const tls_cfg *cfg, int client, char *err, size_t errlen) {
    const char *cert = cfg->files[client ? TLS_FILE_CLIENT_CERT : TLS_FILE_CERT];
    const char *key = cfg->files[client ? TLS_FILE_CLIENT_KEY : TLS_FILE_KEY];
    const char *pass = client ? cfg->client_key_pass : cfg->key_pass;
    char reason[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    if (!ctx) {
        snprintf(err, errlen, "Failed to create an SSL context: %s",
                 tls_err_reason(reason, sizeof(reason)));
        return NULL;
    }
    tls_set_protocols(ctx, cfg->protocols);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_DONT_INSERT_EMPTY_FRAGMENTS);
    /* Partial writes: a large reply goes out record by record as the socket
     * takes it. Moving buffer: a retried write passes the same bytes and
     * length, but not always from the same address (tls_conn.c). */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* Read ahead: one read(2) takes all the records the socket has, not a
     * header and then a body per record. What is read but not yet
     * returned is reported by has_pending (SSL_has_pending), so the server
     * reads again without waiting for the socket. */
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    SSL_CTX_set_default_passwd_cb(ctx, tls_password_cb);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, (void *)pass);
    ERR_clear_error();
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) <= 0) {
        snprintf(err, errlen, "Failed to load certificate: %s: %s", cert,
                 tls_err_reason(reason, sizeof(reason)));
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) <= 0) {
        snprintf(err, errlen, "Failed to load private key: %s: %s", key,
                 tls_err_reason(reason, sizeof(reason)));
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "Private key %s does not match certificate %s: %s", key, cert,
                 tls_err_reason(reason, sizeof(reason)));
        goto fail;
    }
    const char *ca = cfg->files[TLS_FILE_CA], *cadir = cfg->files[TLS_FILE_CA_DIR];
    if ((ca || cadir) && SSL_CTX_load_verify_locations(ctx, ca, cadir) <= 0) {
        snprintf(err, errlen, "Failed to configure CA certificate(s) file/directory: %s",
                 tls_err_reason(reason, sizeof(reason)));
        goto fail;
    }
    if (cfg->ciphers && !SSL_CTX_set_cipher_list(ctx, cfg->ciphers)) {
        snprintf(err, errlen, "Failed to configure ciphers: %s", cfg->ciphers);
        goto fail;
    }
    if (cfg->ciphersuites && !SSL_CTX_set_ciphersuites(ctx, cfg->ciphersuites)) {
        snprintf(err, errlen, "Failed to configure ciphersuites: %s", cfg->ciphersuites);
        goto fail;
    }
    return ctx;
fail:
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return NULL;
}

static int tls_load_dh(SSL_CTX *ctx, const char *path, char *err, size_t errlen) {
    char reason[256];
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "Failed to load %s: %s", path, strerror(errno));
        return KEEL_ERR;
    }
    EVP_PKEY *pkey = NULL;
    /* No key type: both PKCS#3 "DH PARAMETERS" (openssl dhparam) and X9.42
     * "X9.42 DH PARAMETERS" (openssl dhparam -dsaparam) files are read. */
    OSSL_DECODER_CTX *dctx = OSSL_DECODER_CTX_new_for_pkey(
        &pkey, "PEM", NULL, NULL, OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS, NULL, NULL);
    int ok = dctx && OSSL_DECODER_from_fp(dctx, f);
    OSSL_DECODER_CTX_free(dctx);
    fclose(f);
    if (!ok) {
        snprintf(err, errlen, "%s: failed to read DH params.", path);
        ERR_clear_error();
        EVP_PKEY_free(pkey);
        return KEEL_ERR;
    }
    if (SSL_CTX_set0_tmp_dh_pkey(ctx, pkey) <= 0) { /* takes pkey on success */
        snprintf(err, errlen, "Failed to load DH params file: %s: %s", path,
                 tls_err_reason(reason, sizeof(reason)));
        EVP_PKEY_free(pkey);
        return KEEL_ERR;
    }
    return KEEL_OK;
}

/* The server side: session cache or none, tickets (TLS 1.2 and 1.3
 * resumption; OpenSSL issues them by default), cipher preference, DH. */
static SSL_CTX *tls_ctx_server(const tls_cfg *cfg, char *err, size_t errlen) {
    SSL_CTX *ctx = tls_ctx_base(cfg, 0, err, errlen);
    if (!ctx) return NULL;
    if (cfg->session_caching) {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
        SSL_CTX_sess_set_cache_size(ctx, (long)cfg->session_cache_size);
        SSL_CTX_set_timeout(ctx, (long)cfg->session_cache_timeout);
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(ctx, 0);
    }
    SSL_CTX_set_session_id_context(ctx, tls_sid_ctx, sizeof(tls_sid_ctx) - 1);
    if (cfg->prefer_server_ciphers) SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_options(ctx, SSL_OP_SINGLE_DH_USE);
    if (cfg->files[TLS_FILE_DH]) {
        if (tls_load_dh(ctx, cfg->files[TLS_FILE_DH], err, errlen) != KEEL_OK) {
            SSL_CTX_free(ctx);
            return NULL;
        }
    } else {
        SSL_CTX_set_dh_auto(ctx, 1);
    }
    return ctx;
}

static long long tls_asn1_unix(const ASN1_TIME *t) {
    struct tm tm;
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
    return (long long)timegm(&tm);
}

static void tls_cert_info_of(X509 *x, tls_cert_info *out) {
    memset(out, 0, sizeof(*out));
    if (!x) return;
    out->expire_time = tls_asn1_unix(X509_get0_notAfter(x));
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    if (hex) snprintf(out->serial, sizeof(out->serial), "%s", hex);
    OPENSSL_free(hex);
    BN_free(bn);
    X509_NAME_oneline(X509_get_subject_name(x), out->subject, sizeof(out->subject));
}

/* Keeps in *best the certificate of ci if it expires first. */
static void tls_keep_earliest(tls_cert_info *best, const tls_cert_info *ci) {
    if (ci->expire_time && (!best->expire_time || ci->expire_time < best->expire_time)) *best = *ci;
}

/* The CA that expires first: among those loaded from tls-ca-cert-file (in
 * the context's store), and the certificates of tls-ca-cert-dir (which
 * OpenSSL reads only when it needs them, so they are read here). */
static void tls_ca_info_of(SSL_CTX *ctx, const char *dir, tls_cert_info *out) {
    memset(out, 0, sizeof(*out));
    tls_cert_info ci;
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    STACK_OF(X509_OBJECT) *objs = store ? X509_STORE_get0_objects(store) : NULL;
    for (int i = 0; objs && i < sk_X509_OBJECT_num(objs); i++) {
        X509 *x = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objs, i));
        if (!x) continue;
        tls_cert_info_of(x, &ci);
        tls_keep_earliest(out, &ci);
    }
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        char path[4096];
        if (de->d_name[0] == '.' ||
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
            continue;
        FILE *f = fopen(path, "r");
        X509 *x;
        while (f && (x = PEM_read_X509(f, NULL, NULL, NULL)) != NULL) {
            tls_cert_info_of(x, &ci);
            tls_keep_earliest(out, &ci);
            X509_free(x);
        }
        if (f) fclose(f);
    }
    if (d) closedir(d);
    ERR_clear_error(); /* the end of each file is an error to PEM_read_X509 */
}

static int tls_cfg_check(const tls_cfg *cfg, char *err, size_t errlen) {
    if (!cfg->files[TLS_FILE_CERT]) {
        snprintf(err, errlen, "No tls-cert-file configured!");
        return KEEL_ERR;
    }
    if (!cfg->files[TLS_FILE_KEY]) {
        snprintf(err, errlen, "No tls-key-file configured!");
        return KEEL_ERR;
    }
    if ((cfg->auth_clients != TLS_AUTH_NO || cfg->cluster || cfg->replication) &&
        !cfg->files[TLS_FILE_CA] && !cfg->files[TLS_FILE_CA_DIR]) {
        snprintf(err, errlen,
                 "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, "
                 "tls-replication or tls-auth-clients are enabled!");
        return KEEL_ERR;
    }
    return KEEL_OK;
}

/* Valkey 8.0.1 serves a certificate outside its validity period (peers
 * then refuse it); say so, as that is rarely meant. */
static void tls_warn_validity(SSL_CTX *ctx, const char *which) {
    X509 *x = SSL_CTX_get0_certificate(ctx);
    if (!x) return;
    const char *why = NULL;
    if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0)
        why = "has expired";
    else if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0)
        why = "is not valid yet";
    if (why)
        tls.api->core->log(tls.ctx, KEEL_LOG_WARNING,
                           "TLS %s certificate %s: peers that check it will refuse it", which, why);
}

tls_ctxs *tls_ctxs_build(const tls_cfg *cfg, char *err, size_t errlen) {
    if (tls_cfg_check(cfg, err, errlen) != KEEL_OK) return NULL;
    tls_ctxs *c = tls.api->core->calloc(1, sizeof(*c));
    c->server = tls_ctx_server(cfg, err, errlen);
    if (!c->server) goto fail;
    /* As Valkey: an explicit client context only with both its files. */
    if (cfg->files[TLS_FILE_CLIENT_CERT] && cfg->files[TLS_FILE_CLIENT_KEY]) {
        c->client = tls_ctx_base(cfg, 1, err, errlen);
        if (!c->client) goto fail;
        tls_cert_info_of(SSL_CTX_get0_certificate(c->client), &c->client_cert);
    }
    tls_cert_info_of(SSL_CTX_get0_certificate(c->server), &c->server_cert);
    tls_ca_info_of(c->server, cfg->files[TLS_FILE_CA_DIR], &c->ca_cert);
    tls_warn_validity(c->server, "server");
    if (c->client) tls_warn_validity(c->client, "client");
    return c;
fail:
    tls_ctxs_free(c);
    return NULL;
}

void tls_ctxs_free(tls_ctxs *c) {
    if (!c) return;
    SSL_CTX_free(c->server); /* sessions still open keep their own reference */
    SSL_CTX_free(c->client);
    tls.api->core->free(c);
}

void tls_file_sig_take(const tls_cfg *cfg, tls_file_sig *sig) {
    memset(sig, 0, sizeof(*sig));
    for (int i = 0; i < TLS_FILE_COUNT; i++)
        sig->present[i] = cfg->files[i] && stat(cfg->files[i], &sig->st[i]) == 0;
}

int tls_file_sig_equal(const tls_file_sig *a, const tls_file_sig *b) {
    for (int i = 0; i < TLS_FILE_COUNT; i++) {
        if (a->present[i] != b->present[i]) return 0;
        if (!a->present[i]) continue;
        const struct stat *x = &a->st[i], *y = &b->st[i];
        if (x->st_ino != y->st_ino || x->st_dev != y->st_dev || x->st_size != y->st_size ||
            x->st_mtim.tv_sec != y->st_mtim.tv_sec || x->st_mtim.tv_nsec != y->st_mtim.tv_nsec)
            return 0;
    }
    return 1;
}
