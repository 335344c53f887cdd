/* config_file.h -- reading valkey.conf-syntax files.
 *
 * One directive per line: a name and arguments split with splitargs rules;
 * only a real '\n' byte ends a line (an escaped "\n" inside quotes is a byte
 * of the value, which is how CONFIG REWRITE keeps hostile values on one line);
 * '#' starts a comment line; blank lines are skipped; "include <path>" reads
 * another file in place (relative paths are taken from the current working
 * directory, as Valkey does; include depth is limited to catch loops). The
 * reader knows nothing about directive meanings: it hands each line to a
 * callback, with the file name and line number for error messages.
 *
 * Threads: main thread (start-up and CONFIG REWRITE). */
#ifndef KEEL_CONFIG_FILE_H
#define KEEL_CONFIG_FILE_H

#include <stddef.h>

#define CONFIG_MAX_ARGS 1024
#define CONFIG_INCLUDE_DEPTH 16

/* argv[0] is the directive name (lowercased by the reader); argv[i] is
 * NUL-terminated and argl[i] bytes long. A quoted argument may hold any byte,
 * NUL included ("\x00"), so a callback that keeps values binary-safe reads
 * argl and one that wants a C string refuses argl[i] != strlen(argv[i]).
 * Return 0 to go on; non-zero stops reading, and the callback should have set
 * *err to a message the caller frees with km_free(). */
typedef int (*config_line_fn)(void *priv, const char *file, int line, int argc, char **argv,
                              const size_t *argl, char **err);

/* Reads path. Returns 0 on success, -1 on error with *err set to a full message
 * ("<file>:<line>: <reason>" or "cannot open <file>: <strerror>"), freed with
 * km_free(). */
int config_file_load(const char *path, config_line_fn fn, void *priv, char **err);

/* Same rules over a string holding a whole file's contents (used for
 * --name value command-line overrides and the tests); name labels errors. */
int config_text_load(const char *text, size_t len, const char *name, config_line_fn fn, void *priv,
                     char **err);

#endif
