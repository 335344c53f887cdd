/* config_file.c -- reading valkey.conf-syntax files and strings.
 *
 * Owns: line splitting, comments, quoting (through splitargs), "include",
 * and the "<file>:<line>: <reason>" error format. Directive meanings belong
 * to the callback.
 *
 * Lines are handled as Valkey's loadServerConfigFromString does: split on
 * '\n', trimmed of " \t\r\n" at both ends (so "\r\n" files work and indented
 * comments are comments), skipped when empty or starting with '#', then
 * split into arguments. A '#' later in a line is an ordinary argument byte.
 *
 * Each text is copied once into a mutable buffer with one spare byte; the
 * arguments are unescaped and NUL-terminated inside it (splitargs guarantees
 * the byte after each argument belongs to no other argument), so a line costs
 * no allocation. */
#include "config/config_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/kmem.h"
#include "ds/splitargs.h"

typedef struct cfg_reader {
    config_line_fn fn;
    void *priv;
    char **err;
    splitarg *parts; /* CONFIG_MAX_ARGS slots, shared by nested files */
    char **argv;     /* likewise: a line is done before an include recurses */
    size_t *argl;
} cfg_reader;

static int load_path(cfg_reader *r, const char *path, int depth, const char *from, int from_line);

__attribute__((format(printf, 1, 2))) static char *msg_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return km_strdup("configuration error");
    char *s = km_alloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static int line_error(cfg_reader *r, const char *file, int line, const char *reason) {
    *r->err = msg_printf("%s:%d: %s", file, line, reason);
    return -1;
}

static int is_trim_byte(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void to_lower(char *s) {
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z') *s = (char)(*s - 'A' + 'a');
}

static int run_include(cfg_reader *r, const char *file, int line, int argc, char **argv,
                       int depth) {
    if (argc != 2) return line_error(r, file, line, "wrong number of arguments for 'include'");
    if (depth >= CONFIG_INCLUDE_DEPTH) {
        char reason[96];
        snprintf(reason, sizeof(reason), "include nesting deeper than %d levels (include loop?)",
                 CONFIG_INCLUDE_DEPTH);
        return line_error(r, file, line, reason);
    }
    return load_path(r, argv[1], depth + 1, file, line);
}

static int run_directive(cfg_reader *r, const char *file, int line, int argc, char **argv) {
    char *cb_err = NULL;
    if (r->fn(r->priv, file, line, argc, argv, r->argl, &cb_err) == 0) return 0;
    line_error(r, file, line, cb_err ? cb_err : "invalid directive or arguments");
    km_free(cb_err);
    return -1;
}

/* Handles one line; s[n] is writable (the '\n', a trimmed byte or the
 * buffer's spare byte). */
static int handle_line(cfg_reader *r, char *s, size_t n, const char *file, int line, int depth) {
    while (n > 0 && is_trim_byte(*s))
        s++, n--;
    while (n > 0 && is_trim_byte(s[n - 1]))
        n--;
    if (n == 0 || s[0] == '#') return 0;

    long argc = splitargs_inplace(s, n, r->parts, CONFIG_MAX_ARGS);
    if (argc < 0) return line_error(r, file, line, "unbalanced quotes in configuration line");
    if (argc > CONFIG_MAX_ARGS) {
        char reason[64];
        snprintf(reason, sizeof(reason), "too many arguments (max %d)", CONFIG_MAX_ARGS);
        return line_error(r, file, line, reason);
    }
    if (argc == 0) return 0; /* only blanks trimming leaves, e.g. '\v' */
    for (long i = 0; i < argc; i++) {
        r->argv[i] = s + r->parts[i].off;
        r->argv[i][r->parts[i].len] = '\0';
        r->argl[i] = r->parts[i].len;
    }
    to_lower(r->argv[0]);
    if (strcmp(r->argv[0], "include") == 0)
        return run_include(r, file, line, (int)argc, r->argv, depth);
    return run_directive(r, file, line, (int)argc, r->argv);
}

/* buf holds len bytes plus one spare; it is modified in place. */
static int load_buffer(cfg_reader *r, char *buf, size_t len, const char *name, int depth) {
    size_t start = 0;
    int line = 0;
    while (start < len) {
        line++;
        const char *nl = memchr(buf + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - buf) : len;
        if (handle_line(r, buf + start, end - start, name, line, depth) != 0) return -1;
        start = end + 1;
    }
    return 0;
}

/* Reads a whole file into a buffer with one spare byte. Returns 0, or -1
 * with errno set. */
static int read_file(const char *path, char **out, size_t *out_len) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t cap = 4096, len = 0;
    char *buf = km_alloc(cap);
    for (;;) {
        if (cap - len < 2) buf = km_realloc(buf, cap *= 2);
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    int failed = ferror(f), saved = errno;
    fclose(f);
    if (failed) {
        km_free(buf);
        errno = saved ? saved : EIO;
        return -1;
    }
    *out = buf;
    *out_len = len;
    return 0;
}

static int load_path(cfg_reader *r, const char *path, int depth, const char *from, int from_line) {
    char *buf;
    size_t len;
    if (read_file(path, &buf, &len) != 0) {
        const char *why = strerror(errno);
        if (from)
            *r->err = msg_printf("%s:%d: cannot open %s: %s", from, from_line, path, why);
        else
            *r->err = msg_printf("cannot open %s: %s", path, why);
        return -1;
    }
    int rc = load_buffer(r, buf, len, path, depth);
    km_free(buf);
    return rc;
}

static void reader_init(cfg_reader *r, config_line_fn fn, void *priv, char **err) {
    r->fn = fn;
    r->priv = priv;
    r->err = err;
    r->parts = km_alloc(CONFIG_MAX_ARGS * sizeof(*r->parts));
    r->argv = km_alloc(CONFIG_MAX_ARGS * sizeof(*r->argv));
    r->argl = km_alloc(CONFIG_MAX_ARGS * sizeof(*r->argl));
    *err = NULL;
}

static void reader_free(cfg_reader *r) {
    km_free(r->parts);
    km_free(r->argv);
    km_free(r->argl);
}

int config_file_load(const char *path, config_line_fn fn, void *priv, char **err) {
    cfg_reader r;
    reader_init(&r, fn, priv, err);
    int rc = load_path(&r, path, 0, NULL, 0);
    reader_free(&r);
    return rc;
}

int config_text_load(const char *text, size_t len, const char *name, config_line_fn fn, void *priv,
                     char **err) {
    cfg_reader r;
    reader_init(&r, fn, priv, err);
    char *buf = km_alloc(len + 1);
    if (len) memcpy(buf, text, len);
    int rc = load_buffer(&r, buf, len, name, 0);
    km_free(buf);
    reader_free(&r);
    return rc;
}
