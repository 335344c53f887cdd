/* splitargs.h -- split a line into arguments with Valkey's quoting rules.
 *
 * Used by inline requests and by the config file reader. Rules: arguments
 * are separated by whitespace; "double quotes" allow \n \r \t \b \a \\ \"
 * and \xHH escapes; 'single quotes' allow only \'; a closing quote must be
 * followed by whitespace or the end of the line, otherwise the line is
 * unbalanced. Unescaping is done in place: each argument is a slice of the
 * (modified) line.
 *
 * Threads: any; no shared state. */
#ifndef KEEL_SPLITARGS_H
#define KEEL_SPLITARGS_H

#include <stddef.h>

typedef struct splitarg {
    size_t off;
    size_t len;
} splitarg;

/* Splits line[0..len) in place. On success returns the number of arguments
 * (possibly more than max: only the first max are stored in out; call again
 * with a bigger array). Returns -1 on unbalanced quotes. */
long splitargs_inplace(char *line, size_t len, splitarg *out, size_t max);

/* Iterator form, for callers that keep arguments in their own arrays (the
 * inline request parser): finds the next argument at or after *pos in
 * line[0..len), unescapes it in place, stores it in *out and moves *pos past
 * it. Returns 1 for an argument, 0 at the end of the line, -1 on unbalanced
 * quotes. An argument starts where its source text starts and is never
 * longer than it, so line[out->off + out->len] (when inside the line) belongs
 * to no argument: callers may overwrite it, e.g. with a NUL. */
int splitargs_next(char *line, size_t len, size_t *pos, splitarg *out);

#endif
