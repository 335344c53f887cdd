/* module_config.c -- module configuration parameters, `<module>.<name>`,
 * and the names of a reserved family a module claimed ("tls-port").
 *
 * A module declares each parameter during init (type, default, bounds or
 * enum values, an apply callback). Its first value is, in order of
 * preference: a MODULE LOADEX CONFIG pair, a line of the config file, the
 * default. Config-file lines are read before any module loads, so they are
 * kept here as pending values until the parameter is registered; one that no
 * module claims stops start-up (module_config_check_pending), as in Valkey.
 * After load, CONFIG GET/SET/REWRITE reach the parameters through
 * module_config_get/set/foreach, which config.c calls for dotted names and
 * names of a reserved family (module_family.c). A CONFIG SET's applies are
 * followed by one run of each distinct commit callback among the parameters
 * it named (module_config_commit), so a module can act on values that go
 * together (a certificate and its key) once. */
#include "common/common.h"
#include "common/kmem.h"
#include "common/log.h"
#include "config/config.h"
#include "module/module.h"
#include "module/module_internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define PARAM_NAME_MAX 64
/* keel_config_def as ABI 1.0 defined it: everything up to priv. */
#define CONFIG_DEF_SIZE_1_0 (offsetof(keel_config_def, priv) + sizeof(void *))
#define CONFIG_FLAGS_KNOWN (KEEL_CONFIG_IMMUTABLE | KEEL_CONFIG_FAMILY | KEEL_CONFIG_SENSITIVE)

typedef struct module_param {
    module *mod;
    char *name; /* "<module>.<param>", or the family name as it is */
    int type;
    uint32_t flags;
    long long min, max;
    char **enums; /* NULL-terminated copies */
    int (*apply)(long long number, const char *text, void *priv, const char **err);
    void *priv;
    int (*commit)(void *priv, const char **err);
    /* Order in which the running CONFIG SET set it (1, 2, ...); 0 if it
     * did not: commits run in that order. */
    unsigned touched;
    char *dflt;       /* the default as CONFIG GET shows it */
    long long number; /* current value: bool, int, memory, enum index */
    char *text;       /* current value: string, enum */
    struct module_param *next;
} module_param;

typedef struct pending_value {
    char *name;
    char *value;
    char *file;
    int line;
    struct pending_value *next;
} pending_value;

static module_param *params; /* registration order */
static pending_value *pending;
static unsigned touch_count; /* parameters set since the last commit or discard */
static unsigned committed;   /* commits a refused CONFIG SET ran before the refusal */
/* MODULE LOADEX CONFIG pairs of the module being loaded. */
static int load_ncfg;
static const char *const *load_cfg;
static char *load_used;

static module_param *param_find(const char *name) {
    for (module_param *p = params; p; p = p->next)
        if (!strcasecmp(p->name, name)) return p;
    return NULL;
}

/* ---- values ---- */

static int param_parse_number(const module_param *p, const char *s, long long *out,
                              const char **err) {
    static char range[128]; /* main thread: valid until the next call */
    unsigned long long m;
    if (p->type == KEEL_CONFIG_INT && !str_to_ll(s, strlen(s), out)) {
        *err = "argument couldn't be parsed into an integer";
        return K_ERR;
    }
    if (p->type == KEEL_CONFIG_MEMORY) {
        if (config_parse_memory(s, &m) != K_OK || m > LLONG_MAX) {
            *err = "argument must be a memory value";
            return K_ERR;
        }
        *out = (long long)m;
    }
    if (*out < p->min || *out > p->max) {
        snprintf(range, sizeof(range), "argument must be between %lld and %lld inclusive", p->min,
                 p->max);
        *err = range;
        return K_ERR;
    }
    return K_OK;
}

static int param_parse_enum(const module_param *p, const char *s, long long *number,
                            const char **text, const char **err) {
    for (int i = 0; p->enums[i]; i++) {
        if (!strcasecmp(p->enums[i], s)) {
            *number = i;
            *text = p->enums[i];
            return K_OK;
        }
    }
    *err = "argument(s) must be one of the following values";
    return K_ERR;
}

/* Parses s as p's type: numbers into *number, strings and enums into *text
 * (borrowed from s or p). */
static int param_parse(const module_param *p, const char *s, long long *number, const char **text,
                       const char **err) {
    *number = 0;
    *text = NULL;
    switch (p->type) {
    case KEEL_CONFIG_BOOL:
        if (strcasecmp(s, "yes") && strcasecmp(s, "no")) {
            *err = "argument must be 'yes' or 'no'";
            return K_ERR;
        }
        *number = !strcasecmp(s, "yes");
        return K_OK;
    case KEEL_CONFIG_INT:
    case KEEL_CONFIG_MEMORY:
        return param_parse_number(p, s, number, err);
    case KEEL_CONFIG_ENUM:
        return param_parse_enum(p, s, number, text, err);
    default:
        *text = s;
        return K_OK;
    }
}

static void param_format(int type, long long number, const char *text, char *buf, size_t len) {
    if (type == KEEL_CONFIG_BOOL)
        snprintf(buf, len, "%s", number ? "yes" : "no");
    else if (type == KEEL_CONFIG_INT || type == KEEL_CONFIG_MEMORY)
        snprintf(buf, len, "%lld", number);
    else
        snprintf(buf, len, "%s", text ? text : "");
}

/* Parses, lets the module's apply callback accept it, then stores it. */
static int param_set(module_param *p, const char *s, const char **err) {
    long long number;
    const char *text;
    if (param_parse(p, s, &number, &text, err) != K_OK) return K_ERR;
    const char *why = NULL;
    if (p->apply && p->apply(number, text, p->priv, &why) != KEEL_OK) {
        *err = why ? why : "the module refused the value";
        return K_ERR;
    }
    char *copy = text ? km_strdup(text) : NULL;
    km_free(p->text);
    p->text = copy;
    p->number = number;
    return K_OK;
}

/* ---- registration ---- */

static int config_def_check(keel_ctx *ctx, const keel_config_def *d) {
    const char *why = NULL;
    if (!module_name_valid(d->name, PARAM_NAME_MAX))
        why = "invalid name (1 to 64 characters of [a-z0-9_-])";
    else if (d->type < KEEL_CONFIG_BOOL || d->type > KEEL_CONFIG_MEMORY)
        why = "unknown type";
    else if (d->flags & ~CONFIG_FLAGS_KNOWN)
        why = "unknown flags";
    else if ((d->flags & KEEL_CONFIG_FAMILY) && !module_family_held_by(d->name, ctx->mod))
        why = "KEEL_CONFIG_FAMILY needs a family the module claimed (config_claim_family)";
    else if (d->type == KEEL_CONFIG_ENUM && (!d->enum_values || !d->enum_values[0]))
        why = "enum without values";
    else if ((d->type == KEEL_CONFIG_INT || d->type == KEEL_CONFIG_MEMORY) && d->min > d->max)
        why = "min > max";
    else if (!d->default_value && d->type != KEEL_CONFIG_STRING)
        why = "no default value";
    if (why) module_reg_error(ctx, "config '%s': %s", d->name ? d->name : "(null)", why);
    return why ? K_ERR : K_OK;
}

static module_param *param_new(module *m, const keel_config_def *d) {
    module_param *p = km_calloc(1, sizeof(*p));
    char name[PARAM_NAME_MAX * 2 + 2];
    if (d->flags & KEEL_CONFIG_FAMILY)
        snprintf(name, sizeof(name), "%s", d->name);
    else
        snprintf(name, sizeof(name), "%s.%s", m->name, d->name);
    p->mod = m;
    p->name = km_strdup(name);
    p->type = d->type;
    p->flags = d->flags;
    p->min = d->min;
    p->max = d->max;
    p->apply = d->apply;
    p->priv = d->priv;
    p->commit = d->commit;
    if (d->type == KEEL_CONFIG_ENUM) {
        int n = 0;
        while (d->enum_values[n])
            n++;
        p->enums = km_calloc((size_t)n + 1, sizeof(char *));
        for (int i = 0; i < n; i++)
            p->enums[i] = km_strdup(d->enum_values[i]);
    }
    return p;
}

static void param_free(module_param *p) {
    for (int i = 0; p->enums && p->enums[i]; i++)
        km_free(p->enums[i]);
    km_free(p->enums);
    km_free(p->name);
    km_free(p->dflt);
    km_free(p->text);
    km_free(p);
}

static void pending_free(pending_value *v) {
    km_free(v->name);
    km_free(v->value);
    km_free(v->file);
    km_free(v);
}

/* Takes the config-file value of name out of the pending list; the caller
 * frees it. */
static pending_value *pending_take(const char *name) {
    for (pending_value **pp = &pending; *pp; pp = &(*pp)->next) {
        pending_value *v = *pp;
        if (strcasecmp(v->name, name)) continue;
        *pp = v->next;
        return v;
    }
    return NULL;
}

static const char *loadex_value(const char *name) {
    for (int i = 0; i < load_ncfg; i++) {
        if (strcasecmp(load_cfg[2 * i], name)) continue;
        load_used[i] = 1;
        return load_cfg[2 * i + 1];
    }
    return NULL;
}

/* The default must parse; it is kept formatted for CONFIG REWRITE. */
static int param_set_default(module_param *p, const char *dflt, const char **err) {
    long long number;
    const char *text;
    char buf[64];
    if (param_parse(p, dflt, &number, &text, err) != K_OK) return K_ERR;
    param_format(p->type, number, text, buf, sizeof(buf));
    p->dflt = km_strdup(text ? text : buf);
    return K_OK;
}

/* The first value: LOADEX CONFIG, else the config file, else the default. */
static int param_set_initial(module_param *p, const char *dflt, const char **err) {
    pending_value *file = pending_take(p->name);
    const char *value = loadex_value(p->name);
    int rv = param_set(p, value ? value : file ? file->value : dflt, err);
    if (file) pending_free(file);
    return rv;
}

int module_api_config_register(keel_ctx *ctx, const keel_config_def *def) {
    MODULE_ASSERT_MAIN();
    keel_config_def d;
    const char *err;
    if (!module_in_init(ctx, "configuration parameters")) return KEEL_ERR;
    if (!def || module_copy_def(&d, sizeof(d), def, CONFIG_DEF_SIZE_1_0) != K_OK) {
        module_reg_error(ctx, "config_register: missing or too small keel_config_def");
        return KEEL_ERR;
    }
    if (config_def_check(ctx, &d) != K_OK) return KEEL_ERR;
    module_param *p = param_new(ctx->mod, &d);
    const char *dflt = d.default_value ? d.default_value : "";
    if (param_find(p->name)) {
        module_reg_error(ctx, "config '%s' is already registered", p->name);
    } else if (param_set_default(p, dflt, &err) != K_OK) {
        module_reg_error(ctx, "config '%s': invalid default '%s': %s", p->name, dflt, err);
    } else if (param_set_initial(p, dflt, &err) != K_OK) {
        module_reg_error(ctx, "config '%s': %s", p->name, err);
    } else {
        module_param **pp = &params;
        while (*pp)
            pp = &(*pp)->next;
        *pp = p;
        return KEEL_OK;
    }
    param_free(p);
    return KEEL_ERR;
}

void module_config_begin_load(int ncfg, const char *const *cfg) {
    load_ncfg = ncfg;
    load_cfg = cfg;
    load_used = km_calloc((size_t)(ncfg ? ncfg : 1), 1);
}

const char *module_config_end_load(void) {
    const char *unused = NULL;
    for (int i = 0; i < load_ncfg && !unused; i++)
        if (!load_used[i]) unused = load_cfg[2 * i];
    km_free(load_used);
    load_used = NULL;
    load_ncfg = 0;
    load_cfg = NULL;
    return unused;
}

void module_configs_release(module *m) {
    for (module_param **pp = &params; *pp;) {
        module_param *p = *pp;
        if (p->mod != m) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        param_free(p);
    }
    module_families_release(m);
}

/* ---- what config.c calls ---- */

int module_config_file_value(const char *name, const char *value, const char *file, int line,
                             char **err) {
    module_param *p = param_find(name);
    const char *why;
    if (p) {
        if (param_set(p, value, &why) == K_OK) return K_OK;
        *err = km_strdup(why);
        return K_ERR;
    }
    pending_value *v = pending_take(name); /* a later line wins */
    if (v) pending_free(v);
    v = km_calloc(1, sizeof(*v));
    *v = (pending_value){km_strdup(name), km_strdup(value),
                         km_strdup(file ? file : "(command line)"), line, pending};
    pending = v;
    return K_OK;
}

/* The error names the first unused line as read (the list is newest
 * first); loadmodule may stand anywhere in the file. */
int module_config_check_pending(char **err) {
    if (!pending) return K_OK;
    const pending_value *v = pending;
    while (v->next)
        v = v->next;
    char buf[512];
    const char *owner = module_family_module(v->name);
    if (owner && !module_family_held(v->name))
        snprintf(buf, sizeof(buf),
                 "%s:%d: %s: this directive belongs to the %s module, which is not loaded (add "
                 "`loadmodule /path/to/%s.so` to the configuration)",
                 v->file, v->line, v->name, owner, owner);
    else
        snprintf(buf, sizeof(buf),
                 "%s:%d: module configuration '%s' matches no parameter of a loaded module",
                 v->file, v->line, v->name);
    *err = km_strdup(buf);
    return K_ERR;
}

int module_config_set(const char *name, const char *value, char **err) {
    module_param *p = param_find(name);
    const char *why;
    char buf[256];
    const char *owner = module_family_module(name);
    if (!p && owner && !module_family_held(name)) {
        snprintf(buf, sizeof(buf),
                 "%s: this directive belongs to the %s module, which is not loaded", name, owner);
        *err = km_strdup(buf);
        return K_ERR;
    }
    if (!p || (p->flags & KEEL_CONFIG_IMMUTABLE)) {
        snprintf(buf, sizeof(buf), p ? "can't set immutable config '%s'" : "Unknown option '%s'",
                 name);
        *err = km_strdup(buf);
        return K_ERR;
    }
    if (param_set(p, value, &why) != K_OK) {
        *err = km_strdup(why);
        return K_ERR;
    }
    if (!p->touched) p->touched = ++touch_count;
    return K_OK;
}

/* The parameter set touch-th by the running CONFIG SET. */
static module_param *param_touched(unsigned touch) {
    for (module_param *p = params; p; p = p->next)
        if (p->touched == touch) return p;
    return NULL;
}

/* 1 if a parameter set before the touch-th has the same commit. */
static int commit_seen(unsigned touch, int (*commit)(void *, const char **)) {
    for (unsigned t = 1; t < touch; t++) {
        const module_param *q = param_touched(t);
        if (q && q->commit == commit) return 1;
    }
    return 0;
}

int module_config_commit(char **failed, char **err) {
    for (unsigned t = 1; t <= touch_count; t++) {
        module_param *p = param_touched(t);
        if (!p || !p->commit || commit_seen(t, p->commit)) continue;
        const char *why = NULL;
        if (p->commit(p->priv, &why) == KEEL_OK) continue;
        *failed = km_strdup(p->name);
        *err = km_strdup(why ? why : "the module refused the values");
        committed = t - 1; /* the rollback re-runs these (discard) */
        return K_ERR;
    }
    module_config_discard();
    return K_OK;
}

/* After a refused commit the old values are back: the commits that had
 * acted on the new ones run again, so that they act on the old. */
static void module_config_recommit(void) {
    for (unsigned t = 1; t <= committed; t++) {
        module_param *p = param_touched(t);
        if (!p || !p->commit || commit_seen(t, p->commit)) continue;
        const char *why = NULL;
        if (p->commit(p->priv, &why) != KEEL_OK)
            log_write(LL_WARNING,
                      "CONFIG SET rollback: module '%s' refused the previous values of '%s' "
                      "(%s); it may act on the refused ones",
                      p->mod->name, p->name, why ? why : "no reason given");
    }
}

void module_config_discard(void) {
    module_config_recommit();
    committed = 0;
    for (module_param *p = params; p; p = p->next)
        p->touched = 0;
    touch_count = 0;
}

/* A name of a family no module claimed may be a secret too (the module
 * would know): its CONFIG SET fails, but the slow log keeps failed calls. */
int module_config_is_secret(const char *name) {
    const module_param *p = param_find(name);
    if (!p) return module_family_module(name) && !module_family_held(name);
    return (p->flags & KEEL_CONFIG_SENSITIVE) != 0;
}

static int module_config_orphaned(const char *name) {
    return module_family_module(name) && !module_family_held(name);
}

int module_config_claims(const char *name) {
    return strchr(name, '.') || module_family_module(name);
}

int module_config_known(const char *name) {
    return param_find(name) || (module_family_module(name) && !module_family_held(name));
}

int module_config_get(const char *name, char *buf, size_t len) {
    module_param *p = param_find(name);
    if (!p) return K_ERR;
    param_format(p->type, p->number, p->text, buf, len);
    return K_OK;
}

/* Strings and enums are the text itself, whatever its length; numbers are
 * formatted into buf. */
static const char *param_value(const module_param *p, char *buf, size_t len) {
    if (p->type == KEEL_CONFIG_BOOL || p->type == KEEL_CONFIG_INT ||
        p->type == KEEL_CONFIG_MEMORY) {
        param_format(p->type, p->number, p->text, buf, len);
        return buf;
    }
    return p->text ? p->text : "";
}

char *module_config_value(const char *name) {
    char buf[64];
    module_param *p = param_find(name);
    return p ? km_strdup(param_value(p, buf, sizeof(buf))) : NULL;
}

void module_config_foreach(module_config_fn fn, void *priv) {
    char buf[64];
    for (module_param *p = params; p; p = p->next) {
        const char *v = param_value(p, buf, sizeof(buf));
        fn(p->name, v, strcmp(v, p->dflt) == 0, priv);
    }
}

void module_config_teardown(void) {
    while (pending) {
        pending_value *v = pending;
        pending = v->next;
        pending_free(v);
    }
}

/* ---- the namespace the config engine asks for dotted names ---- */

typedef struct module_loaded_ctx {
    config_loaded_fn fn;
    void *priv;
} module_loaded_ctx;

static void module_loaded_cb(const char *name, uint32_t version, const char *path, int argc,
                             char *const *argv, void *priv) {
    K_UNUSED(name);
    K_UNUSED(version);
    module_loaded_ctx *l = priv;
    l->fn(path, argc, argv, l->priv);
}

static void module_foreach_loaded(config_loaded_fn fn, void *priv) {
    module_loaded_ctx l = {fn, priv};
    module_foreach(module_loaded_cb, &l);
}

static const config_namespace module_config_ns = {
    .file_value = module_config_file_value,
    .set = module_config_set,
    .value = module_config_value,
    .foreach = module_config_foreach,
    .foreach_loaded = module_foreach_loaded,
    .claims = module_config_claims,
    .known = module_config_known,
    .is_secret = module_config_is_secret,
    .orphaned = module_config_orphaned,
    .commit = module_config_commit,
    .discard = module_config_discard,
};

void module_config_setup(void) {
    config_set_namespace(&module_config_ns);
}
