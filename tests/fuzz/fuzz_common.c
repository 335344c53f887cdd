/* fuzz_common.c -- the core brought up for fuzzing, its fixed settings, the
 * feeding of connection-less clients and the per-run reset, shared by the
 * libFuzzer targets (see fuzz_common.h).
 *
 * Every run starts from the same state: the keyspace is flushed (and what
 * the lazy-free thread was handed is freed), every
 * CONFIG directive a run changed is put back, the slow log, error and
 * command statistics are reset, a SHUTDOWN request is forgotten, and rand()
 * is reseeded. The hash seed is fixed (not /dev/urandom) so SCAN and KEYS
 * order is the same in every process that replays a crash.
 *
 * Fixed settings (see fuzz_configure): DEBUG stays disabled (DEBUG SLEEP
 * would stall), MODULE is unregistered (LOAD would dlopen any path),
 * proto-max-bulk-len is 1mb so big arguments (>= 32 KB) are
 * exercised without huge allocations, maxmemory 64mb with allkeys-lru, and
 * a normal client's hard output limit 4mb (replies of a huge count end
 * with their client instead of filling memory).
 *
 * Not controllable from here, so not fully deterministic: the clock (TTLs,
 * OBJECT IDLETIME, slowlog durations) and the hashtable's sampling PRNG
 * (RANDOMKEY, eviction samples), which seeds itself from the clock. */
#include "fuzz_common.h"

#include "session/command.h"
#include "common/common.h"
#include "common/kmem.h"
#include "config/config.h"
#include "ds/hashtable.h"
#include "keyspace/db.h"
#include "session/client.h"
#include "session/pause.h"
#include "session/reply.h"
#include "keyspace/evict.h"
#include "keyspace/lazyfree.h"
#include "server/server.h"
#include "server/server_config.h"
#include "session/slowlog.h"
#include "types/hash.h"
#include "types/types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *fuzz_target = "fuzz";

void fuzz_die(const char *what, const char *detail) {
    fprintf(stderr, "%s: %s%s%s\n", fuzz_target, what, detail ? ": " : "", detail ? detail : "");
    abort();
}

void fuzz_set(const char *name, const char *value) {
    char *err = NULL;
    if (config_set(name, value, &err) != K_OK) fuzz_die("config_set failed", err);
}

/* Settings that keep a run cheap and bounded. */
static void fuzz_configure(void) {
    fuzz_set("maxmemory", FUZZ_MAXMEMORY);
    fuzz_set("maxmemory-policy", "allkeys-lru");
    fuzz_set("proto-max-bulk-len", FUZZ_PROTO_MAX_BULK_LEN);
    fuzz_set("client-output-buffer-limit", "normal " FUZZ_OBUF_HARD " 0 0");
    /* Every command goes into the slow log (bounded by slowlog-max-len and
     * reset per run): deterministic, unlike the default 10 ms threshold
     * under a sanitizer's varying speed. */
    fuzz_set("slowlog-log-slower-than", "0");
    /* log_write() writes to stdout: keep the noise down. */
    fuzz_set("loglevel", "warning");
    char buf[64];
    if (config_get("enable-debug-command", buf, sizeof(buf)) != K_OK || strcmp(buf, "no") != 0)
        fuzz_die("enable-debug-command must stay \"no\" (DEBUG SLEEP would stall the fuzzer)", buf);
}

/* ---- configuration snapshot ---- */

typedef struct saved_config {
    char *name;
    char *value;
} saved_config;

static saved_config *saved;
static size_t saved_count;

/* Reads one RESP2 bulk string ("$<len>\r\n<bytes>\r\n") at *p. */
static char *resp2_bulk(const char **p, const char *end) {
    const char *s = *p;
    if (s >= end || *s != '$') return NULL;
    char *e;
    long len = strtol(s + 1, &e, 10);
    if (len < 0 || e + 2 > end || e[0] != '\r' || e[1] != '\n' || e + 2 + len + 2 > end)
        return NULL;
    char *out = km_strndup(e + 2, (size_t)len);
    *p = e + 2 + len + 2;
    return out;
}

/* The reply bytes of a connection-less client, NUL-terminated. */
static char *fuzz_reply_text(client *c, size_t *len_out) {
    size_t len = 0;
    for (reply_block *b = c->reply_head; b; b = b->next)
        len += b->obj ? 0 : b->used;
    char *text = km_alloc(len + 1);
    len = 0;
    for (reply_block *b = c->reply_head; b; b = b->next) {
        if (b->obj) fuzz_die("CONFIG GET * replied with an object reference", NULL);
        memcpy(text + len, b->buf, b->used);
        len += b->used;
    }
    text[len] = '\0';
    *len_out = len;
    return text;
}

/* Parses the reply to CONFIG GET * into saved[]. */
static void fuzz_parse_config_reply(const char *text, size_t len) {
    const char *p = text, *end = text + len;
    if (len == 0 || *p != '*') fuzz_die("unexpected CONFIG GET * reply", text);
    char *e;
    long n = strtol(p + 1, &e, 10);
    if (n <= 0 || n % 2 || e + 2 > end) fuzz_die("unexpected CONFIG GET * reply", text);
    p = e + 2;
    saved_count = (size_t)n / 2;
    saved = km_calloc(saved_count, sizeof(*saved));
    for (size_t i = 0; i < saved_count; i++) {
        saved[i].name = resp2_bulk(&p, end);
        saved[i].value = resp2_bulk(&p, end);
        if (!saved[i].name || !saved[i].value) fuzz_die("unparsable CONFIG GET * reply", text);
    }
}

/* Runs CONFIG GET * on a throw-away client and remembers every directive's
 * value, so a run's CONFIG SET can be undone. The directive list comes from
 * the server itself: new directives are covered without editing this file. */
static void fuzz_snapshot_config(void) {
    static const char req[] = "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$1\r\n*\r\n";
    client *c = client_create(NULL);
    client_feed_input(c, req, sizeof(req) - 1);
    size_t len;
    char *text = fuzz_reply_text(c, &len);
    client_handle_pending_writes();
    client_free(c);
    client_free_closed();
    fuzz_parse_config_reply(text, len);
    km_free(text);
}

static void fuzz_restore_config(void) {
    char cur[4096];
    for (size_t i = 0; i < saved_count; i++) {
        if (config_get(saved[i].name, cur, sizeof(cur)) != K_OK)
            fuzz_die("directive vanished", saved[i].name);
        if (strcmp(cur, saved[i].value) == 0) continue;
        char *err = NULL;
        if (config_set(saved[i].name, saved[i].value, &err) != K_OK) {
            /* An immutable directive changed at run time would be a server
             * bug in itself: make it visible. */
            fprintf(stderr, "%s: cannot restore %s from '%s' to '%s': %s\n", fuzz_target,
                    saved[i].name, cur, saved[i].value, err ? err : "?");
            abort();
        }
    }
}

size_t fuzz_config_count(void) {
    return saved_count;
}

const char *fuzz_config_name(size_t i) {
    return saved[i].name;
}

const char *fuzz_config_value(size_t i) {
    return saved[i].value;
}

/* ---- set-up ---- */

void fuzz_init(const char *target) {
    fuzz_target = target;
    server_config_init();
    /* A fixed hash seed, so replays hash alike. */
    static const uint8_t seed[16] = "keel-fuzz-seed!";
    srv.fixed_hash_seed = seed;
    char *err = NULL;
    if (server_init_core(&err) != K_OK) fuzz_die("server_init_core failed", err);
    /* MODULE LOAD would dlopen any path an input names (Keel has no
     * enable-module-command gate, which Valkey defaults to "no"), running
     * arbitrary libraries' constructors and leaving modules loaded across
     * runs: keep it out of reach. */
    command_unregister("module");
    fuzz_configure();
    fuzz_snapshot_config();
}

/* ---- one run ---- */

void fuzz_begin_run(void) {
    srand(1);
}

void fuzz_pin_limits(void) {
    if (!srv.db.maxmemory || srv.db.maxmemory > FUZZ_MAXMEMORY_BYTES)
        fuzz_set("maxmemory", FUZZ_MAXMEMORY);
    if (srv.session.proto_max_bulk_len > FUZZ_PROTO_MAX_BULK_LEN_BYTES)
        fuzz_set("proto-max-bulk-len", FUZZ_PROTO_MAX_BULK_LEN);
    client_buffer_limit *l = &srv.session.obuf_limit_normal;
    if (!l->hard || l->hard > FUZZ_OBUF_HARD_BYTES) l->hard = FUZZ_OBUF_HARD_BYTES;
}

int fuzz_client_usable(const client *c) {
    return !(c->flags & (CLIENT_CLOSE_ASAP | CLIENT_CLOSE_AFTER_REPLY));
}

void fuzz_between_reads(void) {
    client_handle_pending_writes(); /* drops the replies of conn-less clients */
    client_cron();
    if (srv.active_expire_enabled) types_active_expire(event_cached_ms());
    db_cron();
    /* Before-sleep's: without it the first reading of used memory would
     * stand for the whole process, and maxmemory would never evict. */
    evict_invalidate_used_memory();
    srv.shutdown_asap = 0;
}

void fuzz_feed(client *c, const uint8_t *p, size_t n) {
    while (n > 0 && fuzz_client_usable(c)) {
        size_t k = n < CLIENT_IOBUF_LEN ? n : CLIENT_IOBUF_LEN;
        client_feed_input(c, (const char *)p, k);
        p += k;
        n -= k;
        if (n) fuzz_between_reads();
    }
}

/* Those closed asynchronously are freed by client_free_closed, as
 * before-sleep does. */
void fuzz_close_clients(client **cl, int n) {
    client_handle_pending_writes();
    for (int i = 0; i < n; i++)
        if (cl[i] && !(cl[i]->flags & CLIENT_CLOSE_ASAP)) client_free(cl[i]);
    client_free_closed();
    if (client_list_head()) fuzz_die("a client outlived its run", NULL);
}

/* The hashes registered for active field expiry name keys the flush
 * removed: one round of the cron forgets them (else they would outlive the
 * run, a leak to LeakSanitizer, and change what the next run's cron does).
 * A name still registered after that is a bug of the registry. */
static void fuzz_forget_volatile_hashes(void) {
    if (hash_tracked_count()) hash_active_expire(event_cached_ms(), SIZE_MAX);
    if (hash_tracked_count()) fuzz_die("a hash stays registered for field expiry after FLUSHALL", NULL);
}

void fuzz_reset_run(void) {
    srv.shutdown_asap = 0;
    db_flush_all();
    /* What FLUSHALL ASYNC, UNLINK or lazy deletes handed to the lazy-free
     * thread is freed before the run ends: LeakSanitizer's check after the
     * run would find the blocks still queued (the stores' tagged slots do
     * not count as references), and the next run would share its memory. */
    lazyfree_wait();
    fuzz_forget_volatile_hashes();
    fuzz_restore_config();
    /* A CLIENT PAUSE outlives the clients that sent it: end it, or every
     * later run would have its commands held (and expiry deferred). */
    pause_teardown();
    slowlog_teardown();
    reply_errorstats_reset();
    command_reset_stats();
}
