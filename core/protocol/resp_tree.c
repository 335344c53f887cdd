/* resp_tree.c -- parsing one RESP2/RESP3 value into a tree held in one
 * block (see resp_tree.h). */
#include "protocol/resp_tree.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/strconv.h"

#include <stdlib.h>
#include <string.h>

/* One pass over the bytes. The counting pass (nodes == NULL) checks the
 * syntax and sizes the block; the filling pass reads the same bytes again,
 * knowing they are well formed. */
typedef struct tree_pass {
    const char *p, *end;
    size_t nodes_used; /* counting: nodes seen; filling: next free node */
    size_t bytes_used; /* string bytes, NULs included */
    resp_node *nodes;
    char *bytes;
} tree_pass;

/* The line at tp->p after its type byte: start and length, CRLF skipped. */
static int tree_line(tree_pass *tp, const char **s, size_t *len) {
    const char *start = tp->p + 1;
    const char *cr = start < tp->end ? memchr(start, '\r', (size_t)(tp->end - start)) : NULL;
    if (!cr || cr + 1 >= tp->end || cr[1] != '\n') return K_ERR;
    *s = start;
    *len = (size_t)(cr - start);
    tp->p = cr + 2;
    return K_OK;
}

static int tree_line_ll(tree_pass *tp, long long *v) {
    const char *s;
    size_t len;
    if (tree_line(tp, &s, &len) != K_OK) return K_ERR;
    return str_to_ll(s, len, v) ? K_OK : K_ERR;
}

/* Copies a string into the block's byte area (filling pass only). */
static const char *tree_copy(tree_pass *tp, const char *s, size_t len) {
    char *dst = tp->bytes + tp->bytes_used;
    memcpy(dst, s, len);
    dst[len] = '\0';
    tp->bytes_used += len + 1;
    return dst;
}

static void tree_set_string(tree_pass *tp, resp_node *out, resp_tree_type type, const char *s,
                            size_t len) {
    if (!tp->nodes) {
        tp->bytes_used += len + 1;
        return;
    }
    if (!out) return; /* an attribute's, dropped */
    out->type = type;
    out->len = len;
    out->v.str = tree_copy(tp, s, len);
}

static int tree_simple(tree_pass *tp, resp_node *out, resp_tree_type type) {
    const char *s;
    size_t len;
    if (tree_line(tp, &s, &len) != K_OK) return K_ERR;
    tree_set_string(tp, out, type, s, len);
    return K_OK;
}

/* $, ! and =: a length line, the bytes, CRLF. */
static int tree_blob(tree_pass *tp, resp_node *out, resp_tree_type type) {
    long long n;
    if (tree_line_ll(tp, &n) != K_OK || n < -1) return K_ERR;
    if (n == -1 && type == RESP_TREE_STRING) {
        if (out) out->type = RESP_TREE_NULL;
        return K_OK;
    }
    if (n < 0 || (size_t)(tp->end - tp->p) < (size_t)n + 2) return K_ERR;
    const char *s = tp->p;
    if (s[n] != '\r' || s[n + 1] != '\n') return K_ERR;
    tp->p += n + 2;
    if (type != RESP_TREE_VERBATIM) {
        tree_set_string(tp, out, type, s, (size_t)n);
        return K_OK;
    }
    /* "txt:" and the text. */
    if (n < 4 || s[3] != ':') return K_ERR;
    tree_set_string(tp, out, type, s + 4, (size_t)n - 4);
    if (out) {
        memcpy(out->format, s, 3);
        out->format[3] = '\0';
    }
    return K_OK;
}

static int tree_integer(tree_pass *tp, resp_node *out) {
    long long v;
    if (tree_line_ll(tp, &v) != K_OK) return K_ERR;
    if (out) {
        out->type = RESP_TREE_INTEGER;
        out->v.ll = v;
    }
    return K_OK;
}

/* ",1.5", ",inf", ",-inf", ",nan": strtod reads all of them. */
static int tree_double(tree_pass *tp, resp_node *out) {
    const char *s;
    size_t len;
    char buf[128];
    if (tree_line(tp, &s, &len) != K_OK || !len || len >= sizeof(buf)) return K_ERR;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *endp;
    double d = strtod(buf, &endp);
    if (endp != buf + len) return K_ERR; /* also a NUL inside the line */
    if (out) {
        out->type = RESP_TREE_DOUBLE;
        out->v.d = d;
    }
    return K_OK;
}

static int tree_bool(tree_pass *tp, resp_node *out) {
    const char *s;
    size_t len;
    if (tree_line(tp, &s, &len) != K_OK || len != 1 || (s[0] != 't' && s[0] != 'f')) return K_ERR;
    if (out) {
        out->type = RESP_TREE_BOOL;
        out->v.ll = s[0] == 't';
    }
    return K_OK;
}

static int tree_null(tree_pass *tp, resp_node *out) {
    const char *s;
    size_t len;
    if (tree_line(tp, &s, &len) != K_OK || len) return K_ERR;
    if (out) out->type = RESP_TREE_NULL;
    return K_OK;
}

static int tree_value(tree_pass *tp, resp_node *out, int depth);

/* *, %, ~, > and |: a count line, then count values (twice as many for a
 * map or an attribute). An attribute is read and dropped; the value after
 * it stands in its place, one level deeper, so that a chain of attributes
 * meets the depth limit as nesting does instead of recursing unbounded. */
static int tree_aggregate(tree_pass *tp, resp_node *out, char kind, int depth) {
    long long n;
    if (tree_line_ll(tp, &n) != K_OK || n < -1 || (n == -1 && kind != '*')) return K_ERR;
    if (n == -1) {
        if (out) out->type = RESP_TREE_NULL;
        return K_OK;
    }
    /* Every element takes three bytes at least: a larger count is garbage
     * (and would overflow the node count). */
    long long elems = (kind == '%' || kind == '|') ? 2 * n : n;
    if (n > (tp->end - tp->p) / 3) return K_ERR;
    resp_node *first = NULL;
    if (kind != '|') {
        if (out) first = tp->nodes + tp->nodes_used;
        tp->nodes_used += (size_t)elems;
    }
    for (long long i = 0; i < elems; i++)
        if (tree_value(tp, first ? first + i : NULL, depth + 1) != K_OK) return K_ERR;
    if (kind == '|') return tree_value(tp, out, depth + 1);
    if (out) {
        out->type = kind == '%' ? RESP_TREE_MAP : kind == '~' ? RESP_TREE_SET : RESP_TREE_ARRAY;
        out->len = (size_t)n;
        out->v.elems = first;
    }
    return K_OK;
}

/* out is NULL while counting (and for an attribute's dropped values). */
static int tree_value(tree_pass *tp, resp_node *out, int depth) {
    if (depth > RESP_TREE_MAX_DEPTH || tp->p >= tp->end) return K_ERR;
    if (!tp->nodes) out = NULL;
    switch (*tp->p) {
    case '+':
        return tree_simple(tp, out, RESP_TREE_STATUS);
    case '-':
        return tree_simple(tp, out, RESP_TREE_ERROR);
    case '(':
        return tree_simple(tp, out, RESP_TREE_BIGNUM);
    case '$':
        return tree_blob(tp, out, RESP_TREE_STRING);
    case '!':
        return tree_blob(tp, out, RESP_TREE_ERROR);
    case '=':
        return tree_blob(tp, out, RESP_TREE_VERBATIM);
    case ':':
        return tree_integer(tp, out);
    case ',':
        return tree_double(tp, out);
    case '#':
        return tree_bool(tp, out);
    case '_':
        return tree_null(tp, out);
    case '*':
    case '%':
    case '~':
    case '>':
    case '|':
        return tree_aggregate(tp, out, *tp->p, depth);
    default:
        return K_ERR;
    }
}

static resp_node *tree_block(size_t nodes, size_t bytes) {
    resp_node *block = km_alloc(sizeof(resp_node) * nodes + bytes);
    memset(block, 0, sizeof(resp_node) * nodes);
    return block;
}

resp_node *resp_tree_parse(const char *buf, size_t len, size_t *consumed) {
    tree_pass count = {.p = buf, .end = buf + len, .nodes_used = 1};
    if (!buf || tree_value(&count, NULL, 0) != K_OK) return NULL;
    resp_node *root = tree_block(count.nodes_used, count.bytes_used);
    tree_pass fill = {.p = buf, .end = buf + len, .nodes_used = 1, .nodes = root};
    fill.bytes = (char *)(root + count.nodes_used);
    tree_value(&fill, root, 0);
    if (consumed) *consumed = (size_t)(count.p - buf);
    return root;
}

resp_node *resp_tree_line(resp_tree_type type, const char *s, size_t len) {
    resp_node *root = tree_block(1, len + 1);
    tree_pass fill = {.nodes_used = 1, .nodes = root, .bytes = (char *)(root + 1)};
    tree_set_string(&fill, root, type, s, len);
    return root;
}

void resp_tree_free(resp_node *root) {
    km_free(root);
}
