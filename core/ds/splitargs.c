/* splitargs.c -- splitting a line into arguments with Valkey's quoting rules
 * (sdssplitargs), in place.
 *
 * Owns: the tokenizer shared by inline requests (protocol/resp_parse.c) and
 * the config file reader (config/config_file.c).
 *
 * The rules follow sdssplitargs exactly, including its quirks, because
 * clients and config files written for Valkey must split the same way:
 *  - blanks between arguments are any C-locale isspace() byte, but an
 *    unquoted argument only ends at ' ', '\t', '\n' or '\r' (so "a\vb" is one
 *    argument);
 *  - a quote opens anywhere in an argument ("foo\"bar baz\"" is one argument,
 *    foobar baz), and a closing quote ends the argument and must be followed
 *    by an isspace() byte or the end of the line;
 *  - in double quotes \xHH (two hex digits), \n \r \t \b \a are escapes and a
 *    backslash before any other byte yields that byte; in single quotes only
 *    \' is an escape, any other backslash is literal.
 * One deliberate difference: sdssplitargs works on C strings, so a NUL byte
 * ends its input; here the length is explicit and NUL is an ordinary byte.
 *
 * Each argument is written starting at the offset where its source text
 * starts (no compaction across arguments). Unescaping never lengthens text,
 * so the write position never passes the read position, and the byte just
 * after an argument is always a separator, a quote or an escape byte already
 * consumed: callers may NUL-terminate arguments in place. */
#include "ds/splitargs.h"

/* C-locale isspace() without the locale lookup. */
static inline int is_space(unsigned char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static inline int hex_value(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static inline char escape_value(char c) {
    switch (c) {
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    case 'b':
        return '\b';
    case 'a':
        return '\a';
    default:
        return c;
    }
}

/* A closing quote at line[r] is valid only before a blank or the line end. */
static inline int quote_may_close(const char *line, size_t len, size_t r) {
    return r + 1 == len || is_space((unsigned char)line[r + 1]);
}

/* Scans one double-quoted section starting after the opening quote.
 * Appends its unescaped bytes at *w when write is set (always counting
 * them). Returns 0 with *r past the closing quote, or -1 if unbalanced. */
static int scan_dquoted(char *line, size_t len, size_t *r, size_t *w, int write) {
    size_t i = *r, o = *w;
    for (;;) {
        if (i == len) return -1;
        char c = line[i];
        if (c == '\\') {
            int hi, lo;
            if (i + 3 < len && line[i + 1] == 'x' &&
                (hi = hex_value((unsigned char)line[i + 2])) >= 0 &&
                (lo = hex_value((unsigned char)line[i + 3])) >= 0) {
                c = (char)(hi * 16 + lo);
                i += 4;
            } else if (i + 1 < len) {
                c = escape_value(line[i + 1]);
                i += 2;
            } else {
                return -1; /* a trailing backslash leaves the quote open */
            }
        } else if (c == '"') {
            if (!quote_may_close(line, len, i)) return -1;
            *r = i + 1;
            *w = o;
            return 0;
        } else {
            i++;
        }
        if (write) line[o] = c;
        o++;
    }
}

/* Same for a single-quoted section, where only \' is an escape. */
static int scan_squoted(char *line, size_t len, size_t *r, size_t *w, int write) {
    size_t i = *r, o = *w;
    for (;;) {
        if (i == len) return -1;
        char c = line[i];
        if (c == '\\' && i + 1 < len && line[i + 1] == '\'') {
            c = '\'';
            i += 2;
        } else if (c == '\'') {
            if (!quote_may_close(line, len, i)) return -1;
            *r = i + 1;
            *w = o;
            return 0;
        } else {
            i++;
        }
        if (write) line[o] = c;
        o++;
    }
}

/* Scans one argument starting at a non-blank line[*r]. With write unset the
 * line is left untouched and only the length is computed. */
static int scan_arg(char *line, size_t len, size_t *r, splitarg *out, int write) {
    size_t i = *r, start = *r, o = *r;
    while (i < len) {
        char c = line[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            i++; /* the separator is consumed with the argument */
            break;
        }
        if (c == '"' || c == '\'') {
            i++;
            int rc = c == '"' ? scan_dquoted(line, len, &i, &o, write)
                              : scan_squoted(line, len, &i, &o, write);
            if (rc < 0) return -1;
            break; /* a closing quote ends the argument */
        }
        if (write) line[o] = c;
        o++;
        i++;
    }
    out->off = start;
    out->len = o - start;
    *r = i;
    return 1;
}

static int next_arg(char *line, size_t len, size_t *pos, splitarg *out, int write) {
    size_t r = *pos;
    while (r < len && is_space((unsigned char)line[r]))
        r++;
    if (r == len) {
        *pos = r;
        return 0;
    }
    int rc = scan_arg(line, len, &r, out, write);
    if (rc > 0) *pos = r;
    return rc;
}

int splitargs_next(char *line, size_t len, size_t *pos, splitarg *out) {
    return next_arg(line, len, pos, out, 1);
}

/* Two passes: the first only validates and counts, so that when the line is
 * unbalanced or has more than max arguments it is returned unmodified and the
 * caller can indeed "call again with a bigger array". Lines split this way
 * (config lines) are short; the hot inline path uses splitargs_next. */
long splitargs_inplace(char *line, size_t len, splitarg *out, size_t max) {
    size_t pos = 0;
    long count = 0;
    splitarg a;
    int rc;
    while ((rc = next_arg(line, len, &pos, &a, 0)) > 0)
        count++;
    if (rc < 0) return -1;
    if ((size_t)count > max) return count;

    pos = 0;
    for (long i = 0; i < count; i++)
        next_arg(line, len, &pos, &out[i], 1);
    return count;
}
