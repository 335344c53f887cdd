/* glob.c -- glob-style pattern matching for KEYS, SCAN MATCH and CONFIG GET.
 *
 * The rules are Valkey's stringmatchlen(), quirks included, because clients
 * see the result directly:
 *   *        any run of bytes (but an empty subject only matches an empty
 *            pattern: callers special-case the lone "*" themselves)
 *   ?        exactly one byte
 *   [abc]    one byte of the set; [^abc] one byte not in it; a-z ranges,
 *            reversed ranges (z-a) are the same range; \x inside a class is
 *            a literal x; an unterminated class runs to the end of the pattern
 *   \x       the byte x literally (a trailing \ is a literal backslash)
 * Bytes compare as signed chars in ranges, as Valkey does on x86, and nocase
 * folds like glibc's tolower() in the C locale (Valkey does not set LC_CTYPE).
 *
 * Patterns and subjects are slices, not NUL-terminated: every read past the
 * end of the pattern yields '\0', which is exactly what Valkey reads from its
 * sds terminator.
 *
 * Cost: consecutive '*' collapse into one, and once the rest of the pattern
 * after a '*' failed at every later subject position, no earlier '*' retries
 * a longer match (that cannot help), which keeps patterns like "a*a*a*...b"
 * polynomial. Nesting is capped at 1000 stars, as in Valkey, so recursion
 * depth is bounded. */
#include "ds/glob.h"

#define GLOB_MAX_NESTING 1000

typedef struct glob_state {
    int nocase;
    int skip_longer; /* a tail after some '*' failed everywhere: give up */
} glob_state;

/* The pattern byte at i as a signed char, '\0' past the end. */
static inline int pat_at(const char *p, size_t plen, size_t i) {
    return i < plen ? (signed char)p[i] : 0;
}

/* Case folding as Valkey gets it from glibc's tolower() in the C locale:
 * ASCII letters fold, and a negative (high) char other than -1 (EOF) comes
 * back as its unsigned value, which matters only for nocase ranges. */
static inline int fold(int ch) {
    if (ch >= 'A' && ch <= 'Z') return ch + ('a' - 'A');
    return ch < -1 ? ch + 256 : ch;
}

static inline int byte_eq(int a, int b, int nocase) {
    return nocase ? fold(a) == fold(b) : a == b;
}

/* Matches the class starting just after '[' against the subject byte ch.
 * Advances the pattern slice to the closing ']' (or to the last pattern byte
 * when the class is unterminated). Returns 1 if ch is accepted. */
static int match_class(const char **pp, size_t *plen, int ch, int nocase) {
    const char *p = *pp;
    size_t n = *plen;
    int negate = pat_at(p, n, 0) == '^';
    int match = 0;
    if (negate) p++, n--;
    for (;;) {
        int c0 = pat_at(p, n, 0);
        if (c0 == '\\' && n >= 2) {
            p++, n--;
            if ((signed char)p[0] == ch) match = 1; /* escapes ignore nocase */
        } else if (c0 == ']') {
            break;
        } else if (n == 0) {
            p--, n++; /* unterminated: stay on the last byte */
            break;
        } else if (n >= 3 && p[1] == '-') {
            int lo = c0, hi = (signed char)p[2], c = ch;
            if (lo > hi) {
                int t = lo;
                lo = hi;
                hi = t;
            }
            if (nocase) lo = fold(lo), hi = fold(hi), c = fold(c);
            p += 2, n -= 2;
            if (c >= lo && c <= hi) match = 1;
        } else if (byte_eq(c0, ch, nocase)) {
            match = 1;
        }
        p++, n--;
    }
    *pp = p;
    *plen = n;
    return negate ? !match : match;
}

static int glob_impl(const char *p, size_t plen, const char *s, size_t slen, glob_state *st,
                     int nesting);

/* The pattern is at a '*': try the rest of the pattern at every subject
 * position. */
static int match_star(const char *p, size_t plen, const char *s, size_t slen, glob_state *st,
                      int nesting) {
    while (plen > 1 && p[1] == '*')
        p++, plen--;
    if (plen == 1) return 1; /* a trailing star takes everything */
    for (; slen; s++, slen--) {
        if (glob_impl(p + 1, plen - 1, s, slen, st, nesting + 1)) return 1;
        if (st->skip_longer) return 0;
    }
    /* The tail failed from every position: a longer match for any earlier
     * star would only start the tail later, so it cannot succeed either. */
    st->skip_longer = 1;
    return 0;
}

static int glob_impl(const char *p, size_t plen, const char *s, size_t slen, glob_state *st,
                     int nesting) {
    if (nesting > GLOB_MAX_NESTING) return 0;
    while (plen && slen) {
        int ch = (signed char)s[0];
        switch (p[0]) {
        case '*':
            return match_star(p, plen, s, slen, st, nesting);
        case '?':
            break;
        case '[':
            p++, plen--;
            if (!match_class(&p, &plen, ch, st->nocase)) return 0;
            break;
        default:
            /* A backslash makes the next byte literal, unless it is last. */
            if (p[0] == '\\' && plen >= 2) p++, plen--;
            if (!byte_eq((signed char)p[0], ch, st->nocase)) return 0;
            break;
        }
        s++, slen--;
        p++, plen--;
        if (slen == 0) {
            while (plen && p[0] == '*')
                p++, plen--;
            break;
        }
    }
    return plen == 0 && slen == 0;
}

int glob_match(const char *pat, size_t patlen, const char *s, size_t slen, int nocase) {
    glob_state st = {.nocase = nocase, .skip_longer = 0};
    return glob_impl(pat, patlen, s, slen, &st, 0);
}
