/* strconv.h -- strict decimal integer parsing and formatting, shared by the
 * value encodings (which store canonical integers as numbers) and the
 * commands (which parse integer arguments).
 *
 * Threads: pure functions, any thread. */
#ifndef KEEL_STRCONV_H
#define KEEL_STRCONV_H

#include <stddef.h>

/* Strict decimal parsing (no spaces, no '+', no leading zeros but "0"):
 * the test for the integer encodings and for command arguments. */
int str_to_ll(const char *s, size_t len, long long *out);
/* Formats v into buf (at least 21 bytes); returns the length. */
size_t ll_to_str(char *buf, long long v);
/* The same for an unsigned value (at least 21 bytes). */
size_t ull_to_str(char *buf, unsigned long long v);

#endif
