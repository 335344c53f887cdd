/* resp_tree.h -- a RESP2/RESP3 reply read back as a tree of nodes.
 *
 * A module or script that calls a command gets the command's reply as RESP
 * bytes (the capture client's output); this parser turns one complete value
 * into nodes a caller can walk. The whole tree lives in one allocation:
 * a first pass validates the bytes and counts the nodes and string bytes, a
 * second fills a block holding the nodes (the root first, each aggregate's
 * elements side by side) followed by NUL-terminated copies of the strings.
 * A call that returns ":1\r\n" costs one small allocation.
 *
 * RESP3 pushes read as arrays, blob errors as errors, and attributes are
 * skipped (the value that follows them is the reply).
 *
 * Threads: pure functions, any thread. */
#ifndef KEEL_RESP_TREE_H
#define KEEL_RESP_TREE_H

#include <stddef.h>

typedef enum resp_tree_type {
    RESP_TREE_STRING = 1, /* bulk string */
    RESP_TREE_STATUS,     /* simple string */
    RESP_TREE_ERROR,      /* simple or blob error, without '-' */
    RESP_TREE_INTEGER,
    RESP_TREE_NULL, /* $-1, *-1, _ */
    RESP_TREE_ARRAY,
    RESP_TREE_MAP,
    RESP_TREE_SET,
    RESP_TREE_DOUBLE,
    RESP_TREE_BOOL,
    RESP_TREE_BIGNUM,
    RESP_TREE_VERBATIM,
} resp_tree_type;

/* Nesting deeper than this is refused as garbage (the server's own replies
 * nest a few levels). */
#define RESP_TREE_MAX_DEPTH 1000

typedef struct resp_node {
    resp_tree_type type;
    /* Bytes of the string types; elements of ARRAY and SET; pairs of MAP. */
    size_t len;
    union {
        const char *str;         /* string types: NUL-terminated (binary-safe with len) */
        long long ll;            /* INTEGER, BOOL (0 or 1) */
        double d;                /* DOUBLE */
        struct resp_node *elems; /* aggregates; a MAP's are key, value, key, ... */
    } v;
    char format[4]; /* VERBATIM: "txt", "mkd" */
} resp_node;

/* Parses the first RESP value of buf[0..len): its tree, which the caller
 * frees with resp_tree_free, or NULL if the bytes do not start with one
 * complete, well-formed value. *consumed (may be NULL) gets its length. */
resp_node *resp_tree_parse(const char *buf, size_t len, size_t *consumed);
/* A tree of one STATUS or ERROR node holding s (a reply made without
 * running a command: a refusal). */
resp_node *resp_tree_line(resp_tree_type type, const char *s, size_t len);
/* Frees a tree by its root (NULL is ignored). */
void resp_tree_free(resp_node *root);

#endif
