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
 * The set-up, the fixed settings (DEBUG disabled, MODULE unregistered,
 * proto-max-bulk-len 1mb, maxmemory 64mb) and the reset that puts every run
 * back to the same state are fuzz_common.c's, shared with fuzz_commands.c,
 * which fuzzes whole commands rather than bytes. */
#include "fuzz_common.h"

#include "session/client.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_init("fuzz_request");
    return 0;
}

/* ---- one run ---- */
static uint64_t fuzz_hash(const uint8_t *data, size_t size) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ULL;
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t h = fuzz_hash(data, size), rng = h;
    fuzz_begin_run();

    /* Read boundaries: none, a few, or (short inputs) one per byte. */
    size_t cuts[FUZZ_MAX_CUTS + 1];
    size_t ncuts = 0;
    int bytewise = size <= FUZZ_BYTEWISE_MAX && (h & 15) == 0;
    if (!bytewise && size > 1) {
        ncuts = (size_t)(fuzz_next(&rng) % (FUZZ_MAX_CUTS + 1));
        for (size_t i = 0; i < ncuts; i++)
            cuts[i] = 1 + (size_t)(fuzz_next(&rng) % (size - 1));
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
            if (fuzz_client_usable(c)) fuzz_feed(c, data + pos, n);
            pos += n;
            fuzz_between_reads();
        }
        if (!fuzz_client_usable(cl[0]) && (nclients == 1 || !fuzz_client_usable(cl[1]))) break;
    }

    fuzz_close_clients(cl, nclients);
    fuzz_reset_run();
    return 0;
}
