/* fuzz_common.h -- what the libFuzzer targets share: bringing the core up
 * without an event loop or sockets, the fixed settings that keep a run cheap
 * and bounded, feeding a connection-less client as a socket would, and
 * putting every run back to the same initial state.
 *
 * The targets differ only in how they turn an input into bytes for clients:
 * fuzz_request.c feeds the input itself (the parser's view), fuzz_commands.c
 * decodes it into whole commands from the command table (the commands'
 * view). Everything here is what both need to be deterministic and to stay
 * clear of what would stall or escape the process (DEBUG SLEEP, MODULE LOAD,
 * SHUTDOWN). */
#ifndef KEEL_FUZZ_COMMON_H
#define KEEL_FUZZ_COMMON_H

#include "session/client.h"

#include <stddef.h>
#include <stdint.h>

/* The fixed bounds fuzz_init applies (see fuzz_common.c). */
#define FUZZ_MAXMEMORY "64mb"
#define FUZZ_MAXMEMORY_BYTES (64ull << 20)
#define FUZZ_PROTO_MAX_BULK_LEN "1mb"
#define FUZZ_PROTO_MAX_BULK_LEN_BYTES (1ll << 20)
/* A normal client's hard output limit: what bounds the replies no argument
 * limit does (SRANDMEMBER k -9223372036854775807, LRANGE of a big list,
 * SORT ... GET # GET # ...), as Valkey relies on client output limits. */
#define FUZZ_OBUF_HARD "4mb"
#define FUZZ_OBUF_HARD_BYTES (4ull << 20)

/* Prints "<target>: what: detail" and aborts (a harness bug or a broken
 * invariant, reported like a crash). */
void fuzz_die(const char *what, const char *detail);

/* CONFIG SET from the harness; dies if the server refuses. */
void fuzz_set(const char *name, const char *value);

/* LLVMFuzzerInitialize's work: the core with a fixed hash seed, MODULE
 * unregistered, the fixed settings applied, and every directive's value
 * remembered so fuzz_reset_run can undo a run's CONFIG SET. target names
 * the binary in messages. */
void fuzz_init(const char *target);

/* The directives of the snapshot (CONFIG GET * at start-up): name and
 * initial value of directive i < fuzz_config_count(). */
size_t fuzz_config_count(void);
const char *fuzz_config_name(size_t i);
const char *fuzz_config_value(size_t i);

/* Call at the start of every run: reseeds rand(). */
void fuzz_begin_run(void);

/* Puts maxmemory, proto-max-bulk-len and the normal clients' hard output
 * limit back to the fixed bounds if a CONFIG SET raised them (or turned
 * maxmemory or the limit off); lowering them is left alone. For targets that reach CONFIG SET easily enough for a raised limit
 * to make one input allocate gigabytes. */
void fuzz_pin_limits(void);

/* Whether c still reads input (not closed, not closing after its reply). */
int fuzz_client_usable(const client *c);

/* What before-sleep and the cron do between two reads of a connection-less
 * client: drop the replies, run the client and database crons, read used
 * memory afresh at the next maxmemory check, forget a SHUTDOWN request;
 * with active expiry on, the types' part of it (hash fields' TTLs) too. */
void fuzz_between_reads(void);

/* Feeds n bytes to c as consecutive socket reads of at most
 * CLIENT_IOBUF_LEN bytes, stopping when c stops reading. */
void fuzz_feed(client *c, const uint8_t *p, size_t n);

/* Frees the run's clients (cl[0..n-1], those closed asynchronously
 * included) and dies if any other client is left. */
void fuzz_close_clients(client **cl, int n);

/* Back to the initial state: keyspace flushed, every changed directive
 * restored, slow log, error and command statistics reset, SHUTDOWN
 * forgotten. Call at the end of every run, after fuzz_close_clients. */
void fuzz_reset_run(void);

#endif
