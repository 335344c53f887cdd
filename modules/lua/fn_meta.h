/* fn_meta.h -- the text rules of FUNCTION, free of Lua and of the server
 * (tested alone): the `#!<engine> name=<library>` shebang a library's code
 * starts with, the names libraries and functions may have, and the glob
 * FUNCTION LIST LIBRARYNAME matches with. */
#ifndef KEEL_LUA_FN_META_H
#define KEEL_LUA_FN_META_H

#include <stddef.h>

typedef struct fn_meta {
    const char *engine, *name; /* in the caller's scratch buffer */
    size_t engine_len, name_len;
    const char *body; /* the code from the shebang's newline on (in code) */
    size_t body_len;
} fn_meta;

/* Parses the shebang of code (quoting as Valkey's argument splitter:
 * "..." with \n \r \t \b \a \xHH escapes, '...' with \'). scratch must hold
 * the first line's bytes (len when there is no newline). 1 on success; 0 with Valkey's message in
 * err (errlen bytes, NUL-terminated). */
int fn_meta_parse(const char *code, size_t len, fn_meta *out, char *scratch, char *err,
                  size_t errlen);

/* 1 when name is a valid library or function name: [A-Za-z0-9_]+. */
int fn_name_valid(const char *name, size_t len);

/* Glob match as Valkey's KEYS patterns (* ? [a-z] [^...] \x),
 * case-insensitive; linear backtracking, so no pattern can make it slow. */
int fn_glob_match(const char *pat, size_t plen, const char *s, size_t slen);

#endif
