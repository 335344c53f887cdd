/* glob.h -- glob-style pattern matching as in Valkey's KEYS, SCAN MATCH and
 * CONFIG GET: * ? [abc] [^a-z] and \ escapes (rules in glob.c).
 *
 * Threads: any; pure function. */
#ifndef KEEL_GLOB_H
#define KEEL_GLOB_H

#include <stddef.h>

/* 1 if s matches pat; both are slices (not NUL-terminated). nocase folds
 * ASCII letters. */
int glob_match(const char *pat, size_t patlen, const char *s, size_t slen, int nocase);

#endif
