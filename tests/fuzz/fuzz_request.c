/* fuzz_request.c -- libFuzzer target for the request path: the RESP and
 * inline parser, big-argument hand-off, command dispatch and every command
 * reachable from a client, MULTI/EXEC and WATCH included.
 *
 * Each input is a byte stream "read from a socket" by one client, or, for a
 * quarter of the inputs, by two clients taking turns (WATCH invalidation,
 * CLIENT KILL of another client). The stream is cut into reads at points
 * derived from a hash of the input, so incremental parsing across reads is
 * exercised while an input stays deterministic; a read is never longer than a
 * socket read (CLIENT_IOBUF_LEN). Between reads the harness does what the
 * event loop's before-sleep and cron do for a connection-less client: drops
 * the replies, runs the client and database crons.
 *
 * Every run starts from the same state: the keyspace is flushed, every
 * CONFIG directive a run changed is put back, the slow log, error and
 * command statistics are reset, a SHUTDOWN request is forgotten, and rand()
 * is reseeded. The hash seed is fixed (not /dev/urandom) so SCAN and KEYS
 * order is the same in every process that replays a crash.
 *
 * Fixed settings (see fuzz_configure): DEBUG stays disabled (DEBUG SLEEP
 * would stall), MODULE is unregistered (LOAD would dlopen any path),
 * proto-max-bulk-len is 1mb so big arguments (>= 32 KB) are
 * exercised without huge allocations, maxmemory 64mb with allkeys-lru.
 *
 * Not controllable from here, so not fully deterministic: the clock (TTLs,
 * OBJECT IDLETIME, slowlog durations) and the hashtable's sampling PRNG
 * (RANDOMKEY, eviction samples), which seeds itself from the clock. */
#include "commands/command.h"
#include "common/common.h"
#include "common/kmem.h"
#include "config/config.h"
#include "ds/hashtable.h"
#include "keyspace/db.h"
#include "server/client.h"
#include "server/reply.h"
#include "server/server.h"
#include "server/slowlog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- configuration snapshot ---- */

typedef struct saved_config {
    char *name;
    char *value;
} saved_config;

static saved_config *saved;
static size_t saved_count;

static void fuzz_die(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_request: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

static void fuzz_set(const char *name, const char *value) {
    char *err = NULL;
    if (config_set(name, value, &err) != K_OK) fuzz_die("config_set failed", err);
}

/* Settings that keep a run cheap and bounded. */
static void fuzz_configure(void) {
    fuzz_set("maxmemory", "64mb");
    fuzz_set("maxmemory-policy", "allkeys-lru");
    fuzz_set("proto-max-bulk-len", "1mb");
    /* Every command goes into the slow log (bounded by slowlog-max-len and
     * reset per run): deterministic, unlike the default 10 ms threshold
     * under a sanitizer's varying speed. */
    fuzz_set("slowlog-log-slower-than", "0");
    /* server_log() writes to stdout: keep the noise down. */
    fuzz_set("loglevel", "warning");
    char buf[64];
    if (config_get("enable-debug-command", buf, sizeof(buf)) != K_OK || strcmp(buf, "no") != 0)
        fuzz_die("enable-debug-command must stay \"no\" (DEBUG SLEEP would stall the fuzzer)", buf);
}

/* Reads one RESP2 bulk string ("$<len>\r\n<bytes>\r\n") at *p. */
static char *resp2_bulk(const char **p, const char *end) {
    const char *s = *p;
    if (s >= end || *s != '$') return NULL;
    char *e;
    long len = strtol(s + 1, &e, 10);
    if (len < 0 || e + 2 > end || e[0] != '\r' || e[1] != '\n' || e + 2 + len + 2 > end) return NULL;
    char *out = km_strndup(e + 2, (size_t)len);
    *p = e + 2 + len + 2;
    return out;
}

/* Runs CONFIG GET * on a throw-away client and remembers every directive's
 * value, so a run's CONFIG SET can be undone. The directive list comes from
 * the server itself: new directives are covered without editing this file. */
static void fuzz_snapshot_config(void) {
    static const char req[] = "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$1\r\n*\r\n";
    client *c = client_create(NULL);
    client_feed_input(c, req, sizeof(req) - 1);
    size_t len = 0;
    for (reply_block *b = c->reply_head; b; b = b->next) len += b->obj ? 0 : b->used;
    char *text = km_alloc(len + 1);
    len = 0;
    for (reply_block *b = c->reply_head; b; b = b->next) {
        if (b->obj) fuzz_die("CONFIG GET * replied with an object reference", NULL);
        memcpy(text + len, b->buf, b->used);
        len += b->used;
    }
    client_handle_pending_writes();
    client_free(c);
    client_free_closed();

    const char *p = text, *end = text + len;
    text[len] = '\0';
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
    km_free(text);
}

static void fuzz_restore_config(void) {
    char cur[4096];
    for (size_t i = 0; i < saved_count; i++) {
        if (config_get(saved[i].name, cur, sizeof(cur)) != K_OK) fuzz_die("directive vanished", saved[i].name);
        if (strcmp(cur, saved[i].value) == 0) continue;
        char *err = NULL;
        if (config_set(saved[i].name, saved[i].value, &err) != K_OK) {
            /* An immutable directive changed at run time would be a server
             * bug in itself: make it visible. */
            fprintf(stderr, "fuzz_request: cannot restore %s from '%s' to '%s': %s\n", saved[i].name, cur,
                    saved[i].value, err ? err : "?");
            abort();
        }
    }
}

/* ---- set-up ---- */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    config_set_defaults();
    char *err = NULL;
    if (server_init_core(&err) != K_OK) fuzz_die("server_init_core failed", err);
    /* server_init_core seeded the hash function from /dev/urandom; rebuild
     * the (still empty) tables under a fixed seed so replays hash alike. */
    command_teardown();
    db_teardown();
    static const uint8_t seed[16] = "keel-fuzz-seed!";
    hashtable_set_seed(seed);
    db_setup();
    command_setup();
    /* MODULE LOAD would dlopen any path an input names (Keel has no
     * enable-module-command gate, which Valkey defaults to "no"), running
     * arbitrary libraries' constructors and leaving modules loaded across
     * runs: keep it out of reach. */
    command_unregister("module");
    fuzz_configure();
    fuzz_snapshot_config();
    return 0;
}

/* ---- one run ---- */

static uint64_t fuzz_hash(const uint8_t *data, size_t size) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ULL;
    return h ^ size;
}

static uint64_t fuzz_next(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

#define FUZZ_MAX_CUTS 8
#define FUZZ_BYTEWISE_MAX 4096 /* longest input fed one byte per read */

static int client_usable(const client *c) {
    return !(c->flags & (CLIENT_CLOSE_ASAP | CLIENT_CLOSE_AFTER_REPLY));
}

/* What before-sleep and the cron do between reads. */
static void fuzz_between_reads(void) {
    client_handle_pending_writes(); /* drops the replies of conn-less clients */
    client_cron();
    db_cron();
    srv.shutdown_asap = 0;
}

/* Feeds one read, cut to the size of a socket read. */
static void fuzz_feed(client *c, const uint8_t *p, size_t n) {
    while (n > 0 && client_usable(c)) {
        size_t k = n < CLIENT_IOBUF_LEN ? n : CLIENT_IOBUF_LEN;
        client_feed_input(c, (const char *)p, k);
        p += k;
        n -= k;
        if (n) fuzz_between_reads();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t h = fuzz_hash(data, size), rng = h;
    srand(1);

    /* Read boundaries: none, a few, or (short inputs) one per byte. */
    size_t cuts[FUZZ_MAX_CUTS + 1];
    size_t ncuts = 0;
    int bytewise = size <= FUZZ_BYTEWISE_MAX && (h & 15) == 0;
    if (!bytewise && size > 1) {
        ncuts = (size_t)(fuzz_next(&rng) % (FUZZ_MAX_CUTS + 1));
        for (size_t i = 0; i < ncuts; i++) cuts[i] = 1 + (size_t)(fuzz_next(&rng) % (size - 1));
        qsort(cuts, ncuts, sizeof(cuts[0]), cmp_size);
    }
    cuts[ncuts] = size;

    /* One client, or two taking turns read by read (not byte by byte:
     * neither would ever see a whole request). */
    int nclients = !bytewise && (h >> 8 & 3) == 0 ? 2 : 1;
    client *cl[2] = {client_create(NULL), nclients == 2 ? client_create(NULL) : NULL};

    size_t pos = 0, read_no = 0;
    for (size_t i = 0; i <= ncuts && pos < size; i++) {
        size_t upto = cuts[i];
        while (pos < upto) {
            size_t n = bytewise ? 1 : upto - pos;
            client *c = cl[read_no++ % (size_t)nclients];
            if (client_usable(c)) fuzz_feed(c, data + pos, n);
            pos += n;
            fuzz_between_reads();
        }
        if (!client_usable(cl[0]) && (nclients == 1 || !client_usable(cl[1]))) break;
    }

    /* Close: free the clients (those closed asynchronously are freed by
     * client_free_closed, as before-sleep does). */
    client_handle_pending_writes();
    for (int i = 0; i < nclients; i++)
        if (!(cl[i]->flags & CLIENT_CLOSE_ASAP)) client_free(cl[i]);
    client_free_closed();
    if (srv.clients_head) fuzz_die("a client outlived its run", NULL);

    /* Back to the initial state. */
    srv.shutdown_asap = 0;
    db_flush_all();
    fuzz_restore_config();
    slowlog_teardown();
    reply_errorstats_reset();
    command_reset_stats();
    return 0;
}
