/* fn_meta.c -- the shebang parser, the name rule and the glob of FUNCTION
 * (see fn_meta.h). */
#include "fn_meta.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- Argument splitting ---- */

typedef struct fn_split {
    const char *p, *end;
    char *out; /* the decoded token is appended here */
} fn_split;

static int fn_hex(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int fn_is_space(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* After a closing quote only a space or the end may follow. */
static int fn_after_quote(fn_split *s) {
    s->p++;
    return s->p == s->end || fn_is_space((unsigned char)*s->p);
}

/* The escape at s->p (a backslash) inside double quotes. */
static void fn_double_escape(fn_split *s) {
    if (s->end - s->p >= 4 && s->p[1] == 'x' && fn_hex((unsigned char)s->p[2]) >= 0 &&
        fn_hex((unsigned char)s->p[3]) >= 0) {
        *s->out++ = (char)(fn_hex((unsigned char)s->p[2]) * 16 + fn_hex((unsigned char)s->p[3]));
        s->p += 4;
        return;
    }
    char c = s->p[1];
    switch (c) {
    case 'n':
        c = '\n';
        break;
    case 'r':
        c = '\r';
        break;
    case 't':
        c = '\t';
        break;
    case 'b':
        c = '\b';
        break;
    case 'a':
        c = '\a';
        break;
    default:
        break;
    }
    *s->out++ = c;
    s->p += 2;
}

/* Decodes one token starting at s->p (not a space). 0 on a quoting error. */
static int fn_token(fn_split *s) {
    int dq = 0, sq = 0;
    while (s->p < s->end) {
        char c = *s->p;
        if (dq) {
            if (c == '\\' && s->end - s->p >= 2)
                fn_double_escape(s);
            else if (c == '"') {
                if (!fn_after_quote(s)) return 0;
                return 1;
            } else
                *s->out++ = c, s->p++;
        } else if (sq) {
            if (c == '\\' && s->end - s->p >= 2 && s->p[1] == '\'') {
                *s->out++ = '\'';
                s->p += 2;
            } else if (c == '\'') {
                if (!fn_after_quote(s)) return 0;
                return 1;
            } else
                *s->out++ = c, s->p++;
        } else if (fn_is_space((unsigned char)c)) {
            return 1;
        } else if (c == '"') {
            dq = 1, s->p++;
        } else if (c == '\'') {
            sq = 1, s->p++;
        } else
            *s->out++ = c, s->p++;
    }
    return !dq && !sq; /* an unterminated quote */
}

/* ---- The shebang ---- */

static int fn_meta_fail(char *err, size_t errlen, const char *msg) {
    snprintf(err, errlen, "%s", msg);
    return 0;
}

/* Takes one "key=value" part after the engine; 0 with err on a bad one. */
static int fn_meta_part(fn_meta *m, const char *part, size_t len, char *err, size_t errlen) {
    if (len >= 5 && strncasecmp(part, "name=", 5) == 0) {
        if (m->name)
            return fn_meta_fail(err, errlen,
                                "Invalid metadata value, name argument was given multiple times");
        m->name = part + 5;
        m->name_len = len - 5;
        return 1;
    }
    snprintf(err, errlen, "Invalid metadata value given: %.*s", (int)(len > 200 ? 200 : len), part);
    return 0;
}

int fn_meta_parse(const char *code, size_t len, fn_meta *out, char *scratch, char *err,
                  size_t errlen) {
    memset(out, 0, sizeof *out);
    if (len < 2 || code[0] != '#' || code[1] != '!')
        return fn_meta_fail(err, errlen, "Missing library metadata");
    /* Valkey reads the code as a C string: a NUL before the newline ends
     * it, and then there is no newline. */
    const char *nl = memchr(code, '\n', len);
    if (!nl || memchr(code, '\0', (size_t)(nl - code)))
        return fn_meta_fail(err, errlen, "Invalid library metadata");
    fn_split s = {code, nl, scratch};
    int parts = 0;
    while (1) {
        while (s.p < s.end && fn_is_space((unsigned char)*s.p))
            s.p++;
        if (s.p == s.end) break;
        char *start = s.out;
        if (!fn_token(&s)) return fn_meta_fail(err, errlen, "Invalid library metadata");
        size_t tlen = (size_t)(s.out - start);
        if (parts++ == 0) {
            /* The engine is the first word without its "#!". */
            out->engine = start + 2;
            out->engine_len = tlen >= 2 ? tlen - 2 : 0;
        } else if (!fn_meta_part(out, start, tlen, err, errlen)) {
            return 0;
        }
    }
    if (parts == 0) return fn_meta_fail(err, errlen, "Invalid library metadata");
    if (!out->name) return fn_meta_fail(err, errlen, "Library name was not given");
    out->body = nl;
    out->body_len = len - (size_t)(nl - code);
    return 1;
}

int fn_name_valid(const char *name, size_t len) {
    if (len == 0) return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c != '_') return 0;
    }
    return 1;
}

/* ---- Glob ---- */

/* Matches the class at pat[*pi] ('[' already consumed) against c and moves
 * *pi past the closing ']' (or to the end of an unclosed class). */
static int fn_glob_class(const char *pat, size_t plen, size_t *pi, int c) {
    size_t i = *pi;
    int neg = i < plen && pat[i] == '^';
    if (neg) i++;
    int hit = 0;
    while (i < plen && pat[i] != ']') {
        if (pat[i] == '\\' && i + 1 < plen) {
            if (tolower((unsigned char)pat[i + 1]) == c) hit = 1;
            i += 2;
        } else if (i + 2 < plen && pat[i + 1] == '-' && pat[i + 2] != ']') {
            int lo = tolower((unsigned char)pat[i]), hi = tolower((unsigned char)pat[i + 2]);
            if (lo > hi) {
                int t = lo;
                lo = hi;
                hi = t;
            }
            if (c >= lo && c <= hi) hit = 1;
            i += 3;
        } else {
            if (tolower((unsigned char)pat[i]) == c) hit = 1;
            i++;
        }
    }
    *pi = i < plen ? i + 1 : i;
    return neg ? !hit : hit;
}

/* 1 if the single-character element at pat[*pi] matches c (moves *pi). */
static int fn_glob_one(const char *pat, size_t plen, size_t *pi, int c) {
    char p = pat[(*pi)++];
    if (p == '?') return 1;
    if (p == '[') return fn_glob_class(pat, plen, pi, c);
    if (p == '\\' && *pi < plen) p = pat[(*pi)++];
    return tolower((unsigned char)p) == c;
}

int fn_glob_match(const char *pat, size_t plen, const char *s, size_t slen) {
    size_t pi = 0, si = 0;
    size_t star_p = (size_t)-1, star_s = 0;
    while (si < slen) {
        if (pi < plen && pat[pi] == '*') {
            while (pi < plen && pat[pi] == '*')
                pi++;
            if (pi == plen) return 1;
            star_p = pi;
            star_s = si;
            continue;
        }
        size_t next = pi;
        if (pi < plen && fn_glob_one(pat, plen, &next, tolower((unsigned char)s[si]))) {
            pi = next;
            si++;
            continue;
        }
        if (star_p == (size_t)-1) return 0;
        pi = star_p;
        si = ++star_s;
    }
    while (pi < plen && pat[pi] == '*')
        pi++;
    return pi == plen;
}
