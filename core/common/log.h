/* log.h -- the server log: one line per message, Valkey's format
 * (`pid:M day month year time.ms level-char message`), to stdout or to the
 * configured file.
 *
 * The options live with whoever composes the server (config sets them at
 * run time); log_setup() hands the log a pointer to them, so a CONFIG SET
 * of loglevel or logfile takes effect on the next line.
 *
 * Threads: any thread may call log_write(); a line is one fprintf. */
#ifndef KEEL_LOG_H
#define KEEL_LOG_H

#define LL_DEBUG 0
#define LL_VERBOSE 1
#define LL_NOTICE 2
#define LL_WARNING 3

typedef struct log_options {
    int verbosity; /* loglevel: LL_* */
    char *logfile; /* NULL or "": stdout */
} log_options;

/* Borrows opts until log_teardown(); NULL logs notices and up to stdout. */
void log_setup(const log_options *opts);
void log_teardown(void);
void log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
