/* busy.h -- long-running commands: the busy phase, in which the server
 * serves the other clients from inside a command that runs too long (a
 * script, a module's loop) instead of leaving them unanswered.
 *
 * Such a command calls busy_yield() every few milliseconds of its work.
 * Once it has run for busy-reply-threshold ms (lua-time-limit), it enters
 * the busy phase: a warning is logged once, and each busy_yield() from
 * then on (at most one a millisecond) runs one round of the event loop's
 * file events -- new connections, reads, the I/O threads' completions,
 * writes, closes -- but no timer, cron, expiry or eviction, and no blocked
 * client is served, as Valkey's processEventsWhileBlocked. Every command
 * another client sends meanwhile is refused with the busy error the
 * command named, one reply per command in its order, except the commands
 * flagged allow-busy (AUTH, HELLO, MULTI, a module's SCRIPT KILL, ...);
 * SHUTDOWN runs only with NOSAVE. Commands run on a client without a
 * connection (a module's or a script's own calls) are never refused.
 *
 * The busy client -- the outermost one, whose connection sent the command
 * (a module's call runs the long command on a capture client) -- is
 * protected for the phase: its socket is not
 * read (its pipelined requests wait), it is not written to (its reply may
 * be half built), and a close (output limit, CLIENT KILL from an
 * allow-busy path) frees it only after its command. The phase ends when
 * the command returns (busy_end).
 *
 * Threads: main thread. With I/O threads, a job of the busy client still
 * in flight is quiesced before busy_yield() returns to the command. */
#ifndef KEEL_BUSY_H
#define KEEL_BUSY_H

#include <stdint.h>

#include "event/event.h"
#include "session/client.h"

typedef struct busy_options {
    long long reply_threshold_ms; /* busy-reply-threshold */
} busy_options;

/* Borrows el, opts, stops and quit until busy_teardown. stops() counts
 * the requests to stop so far (SHUTDOWN NOSAVE during the phase, signals;
 * 0: none); quit() exits the process from inside the command, for a
 * request that comes after the command was told to stop. */
void busy_setup(event_loop *el, const busy_options *opts, unsigned (*stops)(void),
                void (*quit)(void));
void busy_teardown(void);

/* Called by c's running command. err is the refusal other clients get,
 * without '-' (copied; CR and LF become spaces; NULL or "": a generic
 * one). *entered is set to 1 when this call started the phase: the caller
 * must then call busy_end(c) once its command returns. Returns K_OK to go
 * on, K_ERR when the command must stop now (the server is shutting down;
 * rounds are still served, and a command still running at the next stop
 * request sees the server exit from here). A call from a command run
 * during a round returns K_OK at once. */
int busy_yield(client *c, const char *err, int *entered);
/* The command that started the phase (c, the one given to busy_yield)
 * returned. */
void busy_end(client *c);

/* 1 during the phase. */
int busy_active(void);
/* The error refusing commands now, without '-', or NULL when nothing is
 * refused (outside a round). */
const char *busy_refusal(void);
/* 1 if c is the busy client (not to be read or written during the phase). */
int busy_holds(const client *c);

#endif
