/* config.c -- the configuration engine: the directive tables its owners
 * register, the config file and overrides, setting, formatting and CONFIG
 * REWRITE. It knows no subsystem: each owner declares its directives as a
 * table pointing into its own options (the server composes them), and the
 * module system registers its dotted parameter namespace.
 *
 * Values are bytes, not C strings: a binary-safe directive (requirepass)
 * keeps every byte it was given, NUL included; every other directive refuses
 * a NUL byte instead of silently cutting the value there. CONFIG GET and
 * CONFIG REWRITE format into growable buffers, so no value is cut at a fixed
 * length.
 *
 * CONFIG REWRITE writes each value on one line, escaped the way the reader
 * unescapes it (\n \r \t \a \b \\ \" and \xHH inside double quotes), so a
 * value read back is exactly the bytes that were set and a newline in a
 * value can never become a directive of its own after a restart. Lines the
 * rewrite can regenerate (known directives, loadmodule) are regenerated,
 * never copied. */
#include "config/config.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/log.h"
#include "config/config_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CFG_OUT_OF_RANGE (-3) /* parse result: a number outside min..max */

/* ---- output buffers ---- */

void config_out_put(config_out *o, const char *p, size_t n) {
    if (o->cap - o->len < n + 1) {
        size_t cap = o->cap ? o->cap : 64;
        while (cap - o->len < n + 1)
            cap *= 2;
        o->ptr = km_realloc(o->ptr, cap);
        o->cap = cap;
    }
    if (n) memcpy(o->ptr + o->len, p, n);
    o->len += n;
    o->ptr[o->len] = '\0';
}

void config_out_printf(config_out *o, const char *fmt, ...) {
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof(buf)) {
        config_out_put(o, buf, (size_t)n);
        return;
    }
    char *big = km_alloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    config_out_put(o, big, (size_t)n);
    km_free(big);
}

void config_out_cstr(config_out *o, const char *s) {
    config_out_put(o, s, strlen(s));
}

void config_get_empty(const config_def *d, config_out *o) {
    config_out_put(o, "", 0);
}

static config_module_line *module_lines;
static config_module_line **module_lines_tail = &module_lines;
static const char *current_file;
static int current_line;

int config_set_loadmodule(const config_def *d, int argc, char **argv, const char **err) {
    config_module_line *m = km_calloc(1, sizeof(*m));
    m->path = km_strdup(argv[0]);
    m->argc = argc - 1;
    m->argv = km_calloc((size_t)(argc ? argc : 1), sizeof(char *));
    for (int i = 1; i < argc; i++) m->argv[i - 1] = km_strdup(argv[i]);
    m->file = km_strdup(current_file ? current_file : "(command line)");
    m->line = current_line;
    *module_lines_tail = m;
    module_lines_tail = &m->next;
    return K_OK;
}

/* rename-command is applied by the server once the command table exists;
 * like loadmodule, the lines are kept with their place in the file. */
static config_rename_line *rename_lines;
static config_rename_line **rename_lines_tail = &rename_lines;

int config_set_rename(const config_def *d, int argc, char **argv, const char **err) {
    if (argc != 2) {
        *err = "wrong number of arguments";
        return K_ERR;
    }
    config_rename_line *r = km_calloc(1, sizeof(*r));
    r->from = km_strdup(argv[0]);
    r->to = km_strdup(argv[1]);
    r->file = km_strdup(current_file ? current_file : "(command line)");
    r->line = current_line;
    *rename_lines_tail = r;
    rename_lines_tail = &r->next;
    return K_OK;
}

/* Valkey directives Keel accepts from files but has no row for (a file
 * using them starts with a warning naming each): those of later Valkey
 * versions and those of builds with request/response logging. Every other
 * Valkey 8.0.1 directive has a row (CONFIG GET/SET/REWRITE), most of them in
 * the server's compatibility table (server/server_config_compat.c). */
static const char *const valkey_known[] = {
    "client-default-resp", "log-format", "log-timestamp-format", "req-res-logfile",
};

/* Valkey directives that protect the server or its data and that Keel does
 * not implement yet. Ignoring one would start a server less safe than the
 * operator asked for (`user default off` letting everyone in), so a file
 * using one is refused at start-up, unless its value is the one that asks
 * for nothing (harmless, NULL when there is none). */
typedef struct config_refused {
    const char *name;
    const char *harmless;
    const char *why;
} config_refused;

#define NO_ACL                                                                                     \
    "Keel has no ACL users yet, so its access rules cannot be enforced (requirepass sets the "     \
    "default user's password)"
#define NO_REPL "replication is not available in Keel yet"

static const config_refused config_refused_table[] = {
    {"user", NULL, NO_ACL},
    {"aclfile", NULL, NO_ACL},
    {"replicaof", NULL, NO_REPL ": this server would run as a writable primary"},
    {"slaveof", NULL, NO_REPL ": this server would run as a writable primary"},
    {"min-replicas-to-write", "0", NO_REPL ": writes would not wait for replicas"},
    {"min-slaves-to-write", "0", NO_REPL ": writes would not wait for replicas"},
    {"cluster-enabled", "no", "cluster mode is not available in Keel yet"},
    {"maxmemory-clients", "0",
     "client eviction is not available in Keel yet, so client memory would not be limited"},
    {"unixsocketgroup", NULL,
     "Keel cannot set the unix socket's group yet, so the socket would be open to another group "
     "than asked"},
    {"sentinel", NULL, "Keel does not run as a Sentinel"},
};

/* ---- registered tables ---- */

#define CONFIG_DEFS_MAX 512

/* Every registered directive, in registration order (CONFIG GET and
 * REWRITE list them so). */
static const config_def *defs[CONFIG_DEFS_MAX];
static size_t defs_count;
static const config_namespace *ns;

int config_register(const config_def *table, size_t n) {
    if (defs_count + n > CONFIG_DEFS_MAX) return K_ERR;
    for (size_t i = 0; i < n; i++)
        defs[defs_count++] = &table[i];
    return K_OK;
}

void config_set_namespace(const config_namespace *n) {
    ns = n;
}

/* Names no directive has that the namespace takes: dotted ones, and those
 * of a family the namespace reserves ("tls-port"). */
static int config_ns_claims(const char *name) {
    return ns && ns->claims(name);
}

static const config_refused *config_refused_find(const char *name) {
    for (size_t i = 0; i < K_ARRAY_LEN(config_refused_table); i++)
        if (!strcasecmp(config_refused_table[i].name, name)) return &config_refused_table[i];
    return NULL;
}

static const config_def *config_find(const char *name) {
    for (size_t i = 0; i < defs_count; i++) {
        const config_def *d = defs[i];
        if (!strcasecmp(d->name, name) || (d->alias && !strcasecmp(d->alias, name))) return d;
    }
    return NULL;
}

static int config_valkey_known(const char *name) {
    for (size_t i = 0; i < K_ARRAY_LEN(valkey_known); i++)
        if (!strcasecmp(valkey_known[i], name)) return 1;
    return 0;
}

int config_set_refused(const config_def *d, int argc, char **argv, const char **err) {
    const config_refused *r = config_refused_find(d->name);
    if (r && r->harmless && argc == 1 && !strcasecmp(argv[0], r->harmless)) return K_OK;
    *err = r ? r->why : "not supported";
    return K_ERR;
}

void config_get_refused(const config_def *d, config_out *o) {
    const config_refused *r = config_refused_find(d->name);
    config_out_cstr(o, r && r->harmless ? r->harmless : "");
}

/* ---- value parsing ---- */

int config_parse_memory(const char *s, unsigned long long *out) {
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)*s)) return K_ERR; /* no sign, no spaces */
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return K_ERR;
    static const struct {
        const char *unit;
        unsigned long long mul;
    } units[] = {{"", 1}, {"b", 1}, {"k", 1000}, {"kb", 1024}, {"m", 1000000}, {"mb", 1024 * 1024},
                 {"g", 1000000000ULL}, {"gb", 1024ULL * 1024 * 1024}};
    for (size_t i = 0; i < K_ARRAY_LEN(units); i++) {
        if (strcasecmp(end, units[i].unit) == 0) {
            if (v > ULLONG_MAX / units[i].mul) return K_ERR;
            *out = v * units[i].mul;
            return K_OK;
        }
    }
    return K_ERR;
}

static int config_parse_bool(const char *s, int *out) {
    if (!strcasecmp(s, "yes")) *out = 1;
    else if (!strcasecmp(s, "no")) *out = 0;
    else return K_ERR;
    return K_OK;
}

static int config_parse_ll(const char *s, long long min, long long max, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) {
        unsigned long long m; /* "1k" style values are accepted for numbers too */
        if (config_parse_memory(s, &m) != K_OK || m > LLONG_MAX) return K_ERR;
        v = (long long)m;
    }
    if (v < min || v > max) return CFG_OUT_OF_RANGE;
    *out = v;
    return K_OK;
}

static int config_set_enum(const config_def *d, const char *s, const char **err) {
    static char msg[512];
    for (const config_enum *e = d->enums; e->name; e++) {
        if (!strcasecmp(e->name, s)) {
            *(int *)d->value = e->value;
            return K_OK;
        }
    }
    /* Valkey lists the accepted values in the error. */
    size_t off = (size_t)snprintf(msg, sizeof(msg), "argument(s) must be one of the following: ");
    for (const config_enum *e = d->enums; e->name && off < sizeof(msg); e++)
        off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s%s", e->name, e[1].name ? ", " : "");
    *err = msg;
    return K_ERR;
}

static int config_set_number(const config_def *d, const char *s, const char **err) {
    long long v;
    int rv = config_parse_ll(s, d->min, d->max, &v);
    if (rv == K_ERR) {
        *err = "argument couldn't be parsed into an integer";
        return K_ERR;
    }
    if (rv == CFG_OUT_OF_RANGE) {
        static char msg[128];
        snprintf(msg, sizeof(msg), "argument must be between %lld and %lld inclusive", d->min, d->max);
        *err = msg;
        return K_ERR;
    }
    if (d->clamp_max) v = v < d->clamp_min ? d->clamp_min : v > d->clamp_max ? d->clamp_max : v;
    if (d->kind == CFG_INT) *(int *)d->value = (int)v;
    else *(long long *)d->value = v;
    return K_OK;
}

static int config_set_memory(const config_def *d, const char *s, const char **err) {
    unsigned long long v;
    if (config_parse_memory(s, &v) != K_OK || v > LLONG_MAX) {
        *err = "argument must be a memory value";
        return K_ERR;
    }
    if ((long long)v < d->min || (long long)v > d->max) {
        static char msg[128];
        snprintf(msg, sizeof(msg), "argument must be between %lld and %lld inclusive", d->min,
                 d->max);
        *err = msg;
        return K_ERR;
    }
    *(unsigned long long *)d->value = v;
    return K_OK;
}

static void config_set_bytes_value(const config_def *d, const char *s, size_t len) {
    kbytes *b = d->value;
    km_free(b->ptr);
    *b = (kbytes){len ? km_strndup(s, len) : NULL, len};
}

/* Only binary-safe directives may hold a NUL byte: anywhere else it would
 * silently cut the value (a port "80\0junk" would read as 80). */
static int config_args_have_nul(int argc, char **argv, const size_t *argl) {
    for (int i = 0; argl && i < argc; i++)
        if (memchr(argv[i], '\0', argl[i])) return 1;
    return 0;
}

/* Applies argv (argl[i] bytes each; NULL argl: C strings) to d. Returns
 * K_OK or K_ERR with *err a static reason. */
static int config_apply_args(const config_def *d, int argc, char **argv, const size_t *argl,
                             const char **err) {
    if (d->kind != CFG_BYTES && config_args_have_nul(argc, argv, argl)) {
        *err = "argument must not contain NUL bytes";
        return K_ERR;
    }
    if (d->kind == CFG_SPECIAL) return d->set(d, argc, argv, err);
    if (argc != 1) {
        *err = "wrong number of arguments";
        return K_ERR;
    }
    const char *s = argv[0];
    switch (d->kind) {
    case CFG_BOOL:
        if (config_parse_bool(s, (int *)d->value) == K_OK) return K_OK;
        *err = "argument must be 'yes' or 'no'";
        return K_ERR;
    case CFG_INT:
    case CFG_LL: return config_set_number(d, s, err);
    case CFG_MEMORY:
        return config_set_memory(d, s, err);
    case CFG_ENUM: return config_set_enum(d, s, err);
    case CFG_STRING: {
        char **slot = d->value;
        km_free(*slot);
        *slot = s[0] ? km_strdup(s) : NULL;
        return K_OK;
    }
    case CFG_BYTES:
        config_set_bytes_value(d, s, argl ? argl[0] : strlen(s));
        return K_OK;
    default: return K_ERR;
    }
}

/* Appends d's current value to o. */
static void config_format(const config_def *d, config_out *o) {
    switch (d->kind) {
    case CFG_BOOL:
        config_out_cstr(o, *(int *)d->value ? "yes" : "no");
        break;
    case CFG_INT:
        config_out_printf(o, "%d", *(int *)d->value);
        break;
    case CFG_LL:
        config_out_printf(o, "%lld", *(long long *)d->value);
        break;
    case CFG_MEMORY:
        config_out_printf(o, "%llu", *(unsigned long long *)d->value);
        break;
    case CFG_ENUM:
        for (const config_enum *e = d->enums; e->name; e++)
            if (e->value == *(int *)d->value) {
                config_out_cstr(o, e->name);
                break;
            }
        break;
    case CFG_STRING:
        config_out_cstr(o, *(char **)d->value ? *(char **)d->value : "");
        break;
    case CFG_BYTES:
        config_out_put(o, ((kbytes *)d->value)->ptr, ((kbytes *)d->value)->len);
        break;
    case CFG_SPECIAL:
        d->get(d, o);
        break;
    }
    if (!o->ptr) config_out_put(o, "", 0);
}

static int config_is_default(const config_def *d);

/* ---- defaults and loading ---- */

/* Splits a default like "* -::*" and applies it. */
static void config_apply_default(const config_def *d) {
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", d->dflt);
    char *argv[16];
    int argc = 0;
    if (d->kind == CFG_SPECIAL) /* one value otherwise, spaces and all */
        for (char *tok = strtok(buf, " "); tok && argc < 16; tok = strtok(NULL, " ")) argv[argc++] = tok;
    if (argc == 0) argv[argc++] = buf;
    const char *err;
    config_apply_args(d, argc, argv, NULL, &err);
}

void config_set_defaults(void) {
    for (size_t i = 0; i < defs_count; i++)
        if (defs[i]->dflt) config_apply_default(defs[i]);
}

static char *config_errf(const char *fmt, const char *a, const char *b) {
    char buf[512];
    snprintf(buf, sizeof(buf), fmt, a, b);
    return km_strdup(buf);
}

/* `<module>.<name> value`: modules load after the file is read, so the
 * module layer keeps the value until the parameter is registered. Module
 * parameters cross the ABI as C strings, so a NUL byte is refused. */
static int config_module_param_line(const char *file, int line, int argc, char **argv,
                                    const size_t *argl, char **err) {
    char *reason = NULL;
    if (argc != 2) {
        *err = config_errf("wrong number of arguments for '%s'%s", argv[0], "");
        return -1;
    }
    if (config_args_have_nul(1, argv + 1, argl + 1)) {
        *err = config_errf("'%s': %s", argv[0], "argument must not contain NUL bytes");
        return -1;
    }
    if (!ns) {
        *err = config_errf("Bad directive or wrong number of arguments: '%s'%s", argv[0], "");
        return -1;
    }
    if (ns->file_value(argv[0], argv[1], file, line, &reason) == K_OK) return 0;
    *err = config_errf("'%s': %s", argv[0], reason);
    km_free(reason);
    return -1;
}

/* A Valkey directive Keel does not implement: ignored with a warning, or
 * refused when ignoring it would leave the server less protected. */
static int config_unimplemented_line(const char *file, int line, int argc, char **argv,
                                     char **err) {
    const config_refused *r = config_refused_find(argv[0]);
    if (r && !(r->harmless && argc == 2 && !strcasecmp(argv[1], r->harmless))) {
        *err = config_errf("'%s' is not supported: %s", argv[0], r->why);
        return -1;
    }
    const config_def *d = config_find(argv[0]);
    if (d) return 0; /* the harmless value, which its row already holds */
    if (r || config_valkey_known(argv[0])) {
        log_write(LL_WARNING, "%s:%d: directive '%s' has no effect in Keel and is ignored", file,
                  line, argv[0]);
        return 0;
    }
    *err = config_errf("Bad directive or wrong number of arguments: '%s'%s", argv[0], "");
    return -1;
}

static int config_line(void *priv, const char *file, int line, int argc, char **argv,
                       const size_t *argl, char **err) {
    current_file = file;
    current_line = line;
    const config_def *d = config_find(argv[0]);
    if (!d && config_ns_claims(argv[0]))
        return config_module_param_line(file, line, argc, argv, argl, err);
    /* A refused directive is refused whether or not it has a row. */
    if (!d || d->set == config_set_refused) return config_unimplemented_line(file, line, argc, argv, err);
    const char *reason;
    if (argc < 2 && d->kind != CFG_STRING && d->kind != CFG_BYTES) {
        *err = config_errf("wrong number of arguments for '%s'%s", argv[0], "");
        return -1;
    }
    char *empty = "";
    size_t zero = 0;
    int rv = argc > 1 ? config_apply_args(d, argc - 1, argv + 1, argl + 1, &reason)
                      : config_apply_args(d, 1, &empty, &zero, &reason);
    if (rv != K_OK) {
        *err = config_errf("'%s': %s", argv[0], reason);
        return -1;
    }
    if ((d->flags & CFG_NO_EFFECT) && !config_is_default(d))
        log_write(LL_WARNING, "%s:%d: directive '%s' has no effect in Keel and is ignored", file,
                  line, argv[0]);
    return 0;
}

int config_load(const char *path, const char *overrides, char **err) {
    if (path && config_file_load(path, config_line, NULL, err) != 0) return K_ERR;
    if (overrides && config_text_load(overrides, strlen(overrides), "(command line)", config_line, NULL, err) != 0)
        return K_ERR;
    current_file = NULL;
    return K_OK;
}

/* A special directive's value is words separated by spaces (Valkey splits
 * CONFIG SET values of multi-argument directives the same way). */
/* Returns the word count, or -1 past max (a word is never dropped). */
static int config_split_words(char *copy, char **argv, size_t *argl, int max) {
    int argc = 0;
    for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
        if (argc == max) return -1;
        argl[argc] = strlen(tok);
        argv[argc++] = tok;
    }
    return argc;
}

/* A module parameter: a C string crosses the ABI, so NUL is refused. */
static int config_set_module(const char *name, const char *value, size_t len, char **err) {
    if (memchr(value, '\0', len)) {
        *err = km_strdup("argument must not contain NUL bytes");
        return K_ERR;
    }
    char *copy = km_strndup(value, len);
    int rv = ns->set(name, copy, err);
    km_free(copy);
    return rv;
}

/* Puts back the value formatted before a change whose apply failed: set
 * from the same words CONFIG SET would split it into, without applying
 * (the old state is still in force). */
static void config_restore(const config_def *d, const config_out *before) {
    char *copy = km_strndup(before->ptr ? before->ptr : "", before->len);
    char *argv[64];
    size_t argl[64];
    int argc = 0;
    if (d->kind == CFG_SPECIAL && !memchr(copy, '\0', before->len))
        argc = config_split_words(copy, argv, argl, 64);
    if (argc <= 0) {
        argv[0] = copy;
        argl[0] = before->len;
        argc = 1;
    }
    const char *reason;
    if (config_apply_args(d, argc, argv, argl, &reason) != K_OK)
        log_write(LL_WARNING, "Could not restore %s after a failed change: %s", d->name, reason);
    km_free(copy);
}

int config_set_bytes(const char *name, const char *value, size_t len, char **err) {
    const config_def *d = config_find(name);
    if (!d && config_ns_claims(name)) return config_set_module(name, value, len, err);
    if (!d || (d->flags & CFG_IMMUTABLE)) {
        *err = d ? km_strdup("can't set immutable config") : config_errf("Unknown option '%s'%s", name, "");
        return K_ERR;
    }
    const char *reason;
    char *argv[64];
    size_t argl[64];
    int argc = 0;
    char *copy = km_strndup(value, len);
    if (d->kind == CFG_SPECIAL && !memchr(value, '\0', len))
        argc = config_split_words(copy, argv, argl, 64);
    if (argc < 0) {
        km_free(copy);
        *err = km_strdup("too many arguments (max 64)");
        return K_ERR;
    }
    if (argc == 0) { /* one value; or an empty one, e.g. save "" */
        argv[0] = copy;
        argl[0] = len;
        argc = 1;
    }
    config_out before = {0};
    if (d->apply) config_format(d, &before);
    int rv = config_apply_args(d, argc, argv, argl, &reason);
    km_free(copy);
    if (rv == K_OK && d->apply && d->apply(&reason) != K_OK) {
        config_restore(d, &before);
        rv = K_ERR;
    }
    km_free(before.ptr);
    if (rv != K_OK) {
        *err = km_strdup(reason);
        return K_ERR;
    }
    return K_OK;
}

int config_set(const char *name, const char *value, char **err) {
    return config_set_bytes(name, value, strlen(value), err);
}

char *config_get_value(const char *name, size_t *len) {
    const config_def *d = config_find(name);
    if (!d) {
        char *v = config_ns_claims(name) ? ns->value(name) : NULL;
        if (v) *len = strlen(v);
        return v;
    }
    config_out o = {0};
    config_format(d, &o);
    *len = o.len;
    return o.ptr;
}

int config_get(const char *name, char *buf, size_t len) {
    size_t n;
    char *v = config_get_value(name, &n);
    if (!v) return K_ERR;
    if (len) snprintf(buf, len, "%s", v);
    km_free(v);
    return K_OK;
}

config_module_line *config_module_lines(void) {
    return module_lines;
}

size_t config_names(const char **out, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < defs_count; i++)
        if (defs[i]->get != config_get_empty && n < max) out[n++] = defs[i]->name;
    return n;
}

config_rename_line *config_rename_lines(void) {
    return rename_lines;
}

static void config_free_lines(void) {
    while (module_lines) {
        config_module_line *m = module_lines;
        module_lines = m->next;
        for (int i = 0; i < m->argc; i++) km_free(m->argv[i]);
        km_free(m->argv);
        km_free(m->path);
        km_free(m->file);
        km_free(m);
    }
    module_lines_tail = &module_lines;
    while (rename_lines) {
        config_rename_line *r = rename_lines;
        rename_lines = r->next;
        km_free(r->from);
        km_free(r->to);
        km_free(r->file);
        km_free(r);
    }
    rename_lines_tail = &rename_lines;
}

void config_free(void) {
    config_free_lines();
    for (size_t i = 0; i < defs_count; i++) {
        const config_def *d = defs[i];
        if (d->free) d->free(d);
        if (d->kind == CFG_STRING) {
            km_free(*(char **)d->value);
            *(char **)d->value = NULL;
        } else if (d->kind == CFG_BYTES) {
            config_set_bytes_value(d, NULL, 0);
        }
    }
    defs_count = 0;
    ns = NULL;
}

/* ---- CONFIG REWRITE ---- */

/* A byte written as is inside double quotes: printable ASCII other than the
 * quote and the backslash. Everything else is escaped. */
static int config_plain_byte(unsigned char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

/* Writes len bytes so that the reader (splitargs) gives them back exactly,
 * whatever they are: double-quoted, with \n \r \t \a \b \\ \" and \xHH
 * escapes, as Valkey's sdscatrepr writes them. Nothing here can end the
 * line. */
static void config_write_quoted(FILE *f, const char *p, size_t len) {
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        const char *esc = c == '\n'   ? "\\n"
                          : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t"
                          : c == '\a' ? "\\a"
                          : c == '\b' ? "\\b"
                          : c == '"'  ? "\\\""
                          : c == '\\' ? "\\\\"
                                      : NULL;
        if (esc)
            fputs(esc, f);
        else if (config_plain_byte(c))
            fputc(c, f);
        else
            fprintf(f, "\\x%02x", c);
    }
    fputc('"', f);
}

/* A word of a number, an enum or a special directive: written bare when
 * that reads back the same, quoted otherwise. */
static void config_write_word(FILE *f, const char *p, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (!config_plain_byte((unsigned char)p[i]) || p[i] == ' ' || p[i] == '\'') {
            config_write_quoted(f, p, len);
            return;
        }
    if (len == 0)
        config_write_quoted(f, p, len);
    else
        fwrite(p, 1, len, f);
}

/* Memory values are written back in the largest exact unit ("5mb"), as
 * Valkey's CONFIG REWRITE does. */
static void config_format_memory_human(const config_def *d, config_out *o) {
    unsigned long long v = *(unsigned long long *)d->value;
    static const struct {
        const char *unit;
        unsigned long long mul;
    } units[] = {{"gb", 1024ULL * 1024 * 1024}, {"mb", 1024 * 1024}, {"kb", 1024}};
    for (size_t i = 0; i < K_ARRAY_LEN(units); i++) {
        if (v && v % units[i].mul == 0) {
            config_out_printf(o, "%llu%s", v / units[i].mul, units[i].unit);
            return;
        }
    }
    config_out_printf(o, "%llu", v);
}

static void config_write_directive(FILE *f, const config_def *d) {
    config_out o = {0};
    if (d->kind == CFG_MEMORY)
        config_format_memory_human(d, &o);
    else
        config_format(d, &o);
    fputs(d->name, f);
    if (d->kind == CFG_STRING || d->kind == CFG_BYTES) {
        fputc(' ', f);
        config_write_quoted(f, o.ptr, o.len);
    } else if (d->kind == CFG_SPECIAL) { /* space-separated words, e.g. bind */
        const char *p = o.ptr, *end = o.ptr + o.len;
        do {
            const char *sp = memchr(p, ' ', (size_t)(end - p));
            size_t n = sp ? (size_t)(sp - p) : (size_t)(end - p);
            fputc(' ', f);
            config_write_word(f, p, n);
            p += n + 1;
        } while (p < end);
    } else {
        fputc(' ', f);
        config_write_word(f, o.ptr, o.len);
    }
    fputc('\n', f);
    km_free(o.ptr);
}

static void config_write_pair(FILE *f, const char *name, const char *value) {
    fputs(name, f);
    fputc(' ', f);
    config_write_word(f, value, strlen(value));
    fputc('\n', f);
}

/* Module parameters written so far by CONFIG REWRITE. */
typedef struct config_rewrite_modules {
    FILE *out;
    char **names;
    int count;
} config_rewrite_modules;

static int config_rewrite_module_seen(const config_rewrite_modules *r, const char *name) {
    for (int i = 0; i < r->count; i++)
        if (!strcasecmp(r->names[i], name)) return 1;
    return 0;
}

/* A file line naming a loaded module's parameter gets its current value
 * (first occurrence; later ones are dropped). One of a reserved family no
 * loaded module holds (its module was unloaded) is dropped, as Valkey
 * drops an unloaded module's configs: its loadmodule line went too, and
 * the file must still start. Returns 0 for other lines. */
static int config_rewrite_module_line(config_rewrite_modules *r, const char *name) {
    if (!config_ns_claims(name)) return 0;
    if (ns->orphaned(name)) return 1;
    char *value = ns->value(name);
    if (!value) return 0;
    if (!config_rewrite_module_seen(r, name)) {
        r->names = km_realloc(r->names, sizeof(char *) * (size_t)(r->count + 1));
        r->names[r->count++] = km_strdup(name);
        config_write_pair(r->out, name, value);
    }
    km_free(value);
    return 1;
}

/* Changed module parameters the file lacked are appended. */
static void config_rewrite_module_rest(const char *name, const char *value, int is_default, void *priv) {
    config_rewrite_modules *r = priv;
    if (!is_default && !config_rewrite_module_seen(r, name)) config_write_pair(r->out, name, value);
}

/* One `loadmodule path args...` line per loaded module, as Valkey writes
 * them: the file's own loadmodule lines are never copied. */
static void config_rewrite_loadmodule(const char *path, int argc, char *const *argv, void *priv) {
    FILE *f = priv;
    fputs("loadmodule ", f);
    config_write_quoted(f, path, strlen(path));
    for (int i = 0; i < argc; i++) {
        fputc(' ', f);
        config_write_quoted(f, argv[i], strlen(argv[i]));
    }
    fputc('\n', f);
}

static int config_is_default(const config_def *d) {
    config_out o = {0};
    config_format(d, &o);
    int same;
    if (d->kind == CFG_MEMORY) {
        unsigned long long dv = 0;
        config_parse_memory(d->dflt, &dv);
        same = strtoull(o.ptr, NULL, 10) == dv;
    } else if (d->kind == CFG_INT || d->kind == CFG_LL) {
        long long dv = 0;
        if (config_parse_ll(d->dflt, LLONG_MIN, LLONG_MAX, &dv) != K_OK) dv = 0;
        same = strtoll(o.ptr, NULL, 10) == dv;
    } else {
        same = d->dflt && strlen(o.ptr) == o.len && strcmp(o.ptr, d->dflt) == 0;
    }
    km_free(o.ptr);
    return same;
}

static size_t config_def_index(const config_def *d) {
    size_t i = 0;
    while (defs[i] != d)
        i++;
    return i;
}

/* The directive a file line starts with (lowercase not needed: lookups are
 * case-insensitive); "" for blank and comment lines. */
static void config_line_name(const char *line, char *name, size_t size) {
    while (*line == ' ' || *line == '\t')
        line++;
    size_t n = strcspn(line, " \t\r\n");
    if (*line == '#' || n >= size) n = 0;
    memcpy(name, line, n);
    name[n] = '\0';
}

typedef struct config_rewrite_state {
    FILE *out;
    char seen[CONFIG_DEFS_MAX];
    int modules_written;
    config_rewrite_modules mods;
} config_rewrite_state;

/* Lines of known directives get their current value (first occurrence;
 * later ones are dropped), loadmodule lines become the loaded modules, every
 * other line (comments, include, rename-command, ignored Valkey directives)
 * is kept as it was. Lines are read whole, however long: a line cut in two
 * would turn its tail into a line of its own. */
static void config_rewrite_line(config_rewrite_state *st, const char *line, size_t len) {
    char name[128];
    config_line_name(line, name, sizeof(name));
    if (!strcasecmp(name, "loadmodule")) {
        if (!st->modules_written++ && ns) ns->foreach_loaded(config_rewrite_loadmodule, st->out);
        return;
    }
    const config_def *d = name[0] ? config_find(name) : NULL;
    if (!d && name[0] && config_rewrite_module_line(&st->mods, name)) return;
    if (!d || d->get == config_get_empty) {
        fwrite(line, 1, len, st->out);
        if (line[len - 1] != '\n') fputc('\n', st->out); /* a last line without its end */
        return;
    }
    size_t idx = config_def_index(d);
    if (!st->seen[idx]) config_write_directive(st->out, d);
    st->seen[idx] = 1;
}

static void config_rewrite_rest(config_rewrite_state *st) {
    for (size_t i = 0; i < defs_count; i++) {
        const config_def *d = defs[i];
        if (!st->seen[i] && d->get != config_get_empty && d->get != config_get_refused &&
            !config_is_default(d))
            config_write_directive(st->out, d);
    }
    if (ns) {
        if (!st->modules_written) ns->foreach_loaded(config_rewrite_loadmodule, st->out);
        ns->foreach (config_rewrite_module_rest, &st->mods);
    }
    for (int i = 0; i < st->mods.count; i++)
        km_free(st->mods.names[i]);
    km_free(st->mods.names);
}

int config_rewrite_file(const char *path, char **err) {
    FILE *in = fopen(path, "r");
    if (!in) {
        *err = config_errf("Rewriting config file: %s%s", strerror(errno), "");
        return K_ERR;
    }
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp-%d", path, (int)getpid());
    FILE *out = fopen(tmp, "w");
    if (!out) {
        fclose(in);
        *err = config_errf("Rewriting config file: %s%s", strerror(errno), "");
        return K_ERR;
    }
    config_rewrite_state *st = km_calloc(1, sizeof(*st));
    st->out = st->mods.out = out;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) > 0)
        config_rewrite_line(st, line, (size_t)n);
    free(line); /* getline's buffer comes from libc's malloc */
    fclose(in);
    config_rewrite_rest(st);
    km_free(st);
    int failed = fflush(out) != 0 || fsync(fileno(out)) != 0;
    failed |= fclose(out) != 0;
    if (failed || rename(tmp, path) != 0) {
        unlink(tmp);
        *err = config_errf("Rewriting config file: %s%s", strerror(errno), "");
        return K_ERR;
    }
    return K_OK;
}

/* ---- for the CONFIG command ---- */

char *config_canonical_name(const char *name) {
    const config_def *d = config_find(name);
    if (d) return km_strdup(d->name);
    if (!config_ns_claims(name) || !ns->known(name)) return NULL;
    char *lower = km_strdup(name);
    for (char *p = lower; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return lower;
}

int config_is_secret(const char *name) {
    const config_def *d = config_find(name);
    if (!d) return config_ns_claims(name) && ns->is_secret(name);
    return (d->flags & CFG_SECRET) != 0;
}

int config_set_commit(char **failed, char **err) {
    return ns ? ns->commit(failed, err) : K_OK;
}

void config_set_discard(void) {
    if (ns) ns->discard();
}

int config_is_protected(const char *name) {
    const config_def *d = config_find(name);
    return d && (d->flags & CFG_PROTECTED);
}

typedef struct config_each_param {
    config_value_fn fn;
    void *priv;
} config_each_param;

static void config_each_param_cb(const char *name, const char *value, int is_default, void *priv) {
    config_each_param *e = priv;
    e->fn(name, value, strlen(value), e->priv);
}

void config_foreach_value(config_value_fn fn, void *priv) {
    for (size_t i = 0; i < defs_count; i++) {
        const config_def *d = defs[i];
        /* Lines kept for their owner have no value to show (as in Valkey,
         * CONFIG GET lists neither loadmodule nor rename-command). */
        if (d->set == config_set_loadmodule || d->set == config_set_rename) continue;
        if (d->flags & CFG_HIDDEN) continue;
        config_out o = {0};
        config_format(d, &o);
        fn(d->name, o.ptr, o.len, priv);
        if (d->alias) fn(d->alias, o.ptr, o.len, priv);
        km_free(o.ptr);
    }
    config_each_param e = {fn, priv};
    if (ns) ns->foreach (config_each_param_cb, &e);
}
