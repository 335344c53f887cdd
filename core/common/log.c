/* log.c -- the server log (see log.h). */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const log_options log_default = {.verbosity = LL_NOTICE};
static const log_options *log_opts = &log_default;

void log_setup(const log_options *opts) {
    log_opts = opts ? opts : &log_default;
}

void log_teardown(void) {
    log_opts = &log_default;
}

void log_write(int level, const char *fmt, ...) {
    if (level < log_opts->verbosity) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    char ts[64];
    struct tm tm;
    localtime_r(&tv.tv_sec, &tm);
    size_t off = strftime(ts, sizeof(ts), "%d %b %Y %H:%M:%S.", &tm);
    snprintf(ts + off, sizeof(ts) - off, "%03d", (int)tv.tv_usec / 1000);
    const char *path = log_opts->logfile && log_opts->logfile[0] ? log_opts->logfile : NULL;
    FILE *f = path ? fopen(path, "a") : stdout;
    if (!f) return;
    fprintf(f, "%d:M %s %c %s\n", (int)getpid(), ts, ".-*#"[level], msg);
    fflush(f);
    if (path) fclose(f);
}
