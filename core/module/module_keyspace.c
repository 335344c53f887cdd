/* module_keyspace.c -- the keyspace group of the API: open keys, strings,
 * expiry, and custom data types.
 *
 * A value of a module type is a kobj of type OBJ_MODULE whose v.mod is the
 * module's pointer and mod_type its keel_type. object.c frees and measures
 * such objects through two hooks this file sets, which call the type's
 * callbacks. Each type counts its live values, so MODULE UNLOAD can refuse
 * while keys still hold them (their free callback lives in the module). */
#include "common/common.h"
#include "common/kmem.h"
#include "keyspace/db.h"
#include "module/module.h"
#include "module/module_internal.h"

#include <stddef.h>
#include <string.h>

#define MODULE_TYPE_NAME_LEN 9
/* keel_type_def as ABI 1.0 defined it (the reserved slots included). */
#define TYPE_DEF_SIZE_1_0                                                                          \
    (offsetof(keel_type_def, reserved) + sizeof(((keel_type_def *)0)->reserved))

/* object.c's hooks for OBJ_MODULE values. */

struct keel_key {
    module *mod;
    db *d;
    char *key;
    size_t len;
    int mode;
};

static keel_type *types; /* every registered type, all modules */

/* ---- keys ---- */

static keel_key *api_key_open(keel_ctx *ctx, const char *key, size_t len, int mode) {
    MODULE_ASSERT_MAIN();
    /* A call_flags hook runs before the checks that may refuse the
     * command: a lookup there would expire keys and count hits for a
     * command that may never run. */
    if (ctx->flags & MODULE_CTX_FLAGS_HOOK) return NULL;
    keel_key *k = km_calloc(1, sizeof(*k));
    k->mod = ctx->mod;
    k->d = module_ctx_db(ctx);
    k->key = km_strndup(key ? key : "", key ? len : 0);
    k->len = key ? len : 0;
    k->mode = mode;
    /* A keyspace event's callback runs inside the change it announces
     * (an expiry cycle, a command's write): it may read, and must neither
     * write nor expire anything on its lookups. */
    if (ctx->flags & MODULE_CTX_NO_WRITES) {
        k->mode &= ~KEEL_KEY_WRITE;
        return k;
    }
    /* The lookup a built-in command does: expiry, access clock, and
     * hit/miss statistics for reads. */
    db_lookup(k->d, k->key, k->len, (mode & KEEL_KEY_READ) != 0);
    return k;
}

static void api_key_close(keel_key *k) {
    MODULE_ASSERT_MAIN();
    if (!k) return;
    km_free(k->key);
    km_free(k);
}

/* Looked up on every call rather than cached: another handle, or a write
 * through this one, may have replaced or deleted the entry. */
static db_entry *key_entry(keel_key *k) {
    return db_lookup_quiet(k->d, k->key, k->len);
}

static int key_writable(keel_key *k) {
    return k && (k->mode & KEEL_KEY_WRITE);
}

static int api_key_type(keel_key *k) {
    MODULE_ASSERT_MAIN();
    db_entry *e = k ? key_entry(k) : NULL;
    if (!e) return KEEL_KEYTYPE_EMPTY;
    return db_entry_type(e) == OBJ_STRING ? KEEL_KEYTYPE_STRING : KEEL_KEYTYPE_MODULE;
}

static const char *api_string_get(keel_key *k, size_t *len) {
    MODULE_ASSERT_MAIN();
    size_t n = 0;
    db_entry *e = k ? key_entry(k) : NULL;
    const char *s = e ? db_entry_str(e, &n) : NULL;
    if (len) *len = n;
    return s;
}

static int api_string_set(keel_key *k, const char *value, size_t len) {
    MODULE_ASSERT_MAIN();
    if (!key_writable(k) || (!value && len)) return KEEL_ERR;
    db_set_str(k->d, k->key, k->len, value ? value : "", len, 0, -1);
    return KEEL_OK;
}

static int api_key_delete(keel_key *k) {
    MODULE_ASSERT_MAIN();
    if (!key_writable(k)) return KEEL_ERR;
    db_delete(k->d, k->key, k->len);
    return KEEL_OK;
}

static int64_t api_expire_get(keel_key *k) {
    MODULE_ASSERT_MAIN();
    db_entry *e = k ? key_entry(k) : NULL;
    return e ? db_entry_expire(e) : -1;
}

static int api_expire_set(keel_key *k, int64_t abs_ms) {
    MODULE_ASSERT_MAIN();
    db_entry *e = key_writable(k) ? key_entry(k) : NULL;
    if (!e || abs_ms < -1) return KEEL_ERR;
    if (abs_ms == -1)
        db_persist(k->d, e);
    else
        db_set_expire(k->d, e, abs_ms); /* the block may move: e is not used after */
    return KEEL_OK;
}

static uint64_t api_db_size(keel_ctx *ctx) {
    MODULE_ASSERT_MAIN();
    return db_size(module_ctx_db(ctx));
}

/* ---- values of module types ---- */

static void module_value_free(kobj *o) {
    keel_type *t = (keel_type *)o->mod_type;
    t->live--;
    t->free(o->v.mod);
}

static size_t module_value_usage(const kobj *o, size_t samples) {
    K_UNUSED(samples);
    const keel_type *t = o->mod_type;
    return t->mem_usage ? t->mem_usage(o->v.mod) : 0;
}

static kobj *module_value_new(keel_type *t, void *value) {
    kobj *o = km_calloc(1, sizeof(*o));
    o->refcount = 1;
    o->type = OBJ_MODULE;
    o->encoding = OBJ_ENC_RAW;
    o->v.mod = value;
    o->mod_type = t;
    t->live++;
    return o;
}

/* ---- OBJ_MODULE's operations: each value dispatches on its keel_type ---- */

static const char *module_type_name(const kobj *o) {
    return ((const keel_type *)o->mod_type)->name;
}

static const char *module_encoding_name(const kobj *o) {
    K_UNUSED(o);
    return "raw";
}

static kobj *module_copy_value(const kobj *o) {
    keel_type *t = (keel_type *)o->mod_type;
    if (!t->copy) return NULL;
    void *copy = t->copy(o->v.mod);
    return copy ? module_value_new(t, copy) : NULL;
}

static const obj_type module_obj_type = {
    .type_name = module_type_name,
    .encoding_name = module_encoding_name,
    .free_value = module_value_free,
    .mem_usage = module_value_usage,
    .copy = module_copy_value,
};

static int api_module_set(keel_key *k, keel_type *t, void *value) {
    MODULE_ASSERT_MAIN();
    if (!key_writable(k) || !t || t->mod != k->mod || !value) return KEEL_ERR;
    db_set(k->d, k->key, k->len, module_value_new(t, value), 0);
    return KEEL_OK;
}

static void *api_module_get(keel_key *k, keel_type *t) {
    MODULE_ASSERT_MAIN();
    db_entry *e = k ? key_entry(k) : NULL;
    kobj *o = e ? db_entry_obj(e) : NULL;
    return o && o->type == OBJ_MODULE && o->mod_type == t ? o->v.mod : NULL;
}

/* ---- type registration ---- */

static int module_type_name_ok(const char *s) {
    size_t n = 0;
    for (; s && s[n]; n++) {
        char ch = s[n];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-'))
            return 0;
    }
    return n == MODULE_TYPE_NAME_LEN;
}

static keel_type *module_type_find(const char *name) {
    for (keel_type *t = types; t; t = t->next)
        if (!strcmp(t->name, name)) return t;
    return NULL;
}

static int module_check_type(keel_ctx *ctx, const keel_type_def *d) {
    if (!module_type_name_ok(d->name))
        module_reg_error(ctx, "invalid data type name (exactly %d characters of [A-Za-z0-9_-])",
                         MODULE_TYPE_NAME_LEN);
    else if (!d->free)
        module_reg_error(ctx, "data type '%s': the free callback is required", d->name);
    else if (module_type_find(d->name))
        module_reg_error(ctx, "data type '%s': the name is already taken", d->name);
    else
        return K_OK;
    return K_ERR;
}

static keel_type *api_type_register(keel_ctx *ctx, const keel_type_def *def) {
    MODULE_ASSERT_MAIN();
    keel_type_def d;
    if (!module_in_init(ctx, "data types")) return NULL;
    if (!def || module_copy_def(&d, sizeof(d), def, TYPE_DEF_SIZE_1_0) != K_OK) {
        module_reg_error(ctx, "type_register: missing or too small keel_type_def");
        return NULL;
    }
    if (module_check_type(ctx, &d) != K_OK) return NULL;
    keel_type *t = km_calloc(1, sizeof(*t));
    t->mod = ctx->mod;
    memcpy(t->name, d.name, MODULE_TYPE_NAME_LEN + 1);
    t->encver = d.encver;
    t->free = d.free;
    t->mem_usage = d.mem_usage;
    t->copy = d.copy;
    t->next = types;
    types = t;
    obj_set_type(OBJ_MODULE, &module_obj_type);
    return t;
}

long long module_live_values(const module *m) {
    long long n = 0;
    for (keel_type *t = types; t; t = t->next)
        if (t->mod == m) n += t->live;
    return n;
}

/* Collects the keys of d holding m's values, then deletes them (the table
 * must not change under the iterator). */
static void module_purge_db(db *d, module *m) {
    size_t count = 0, cap = 0;
    db_entry **found = NULL;
    db_iter it;
    db_entry *e;
    db_iter_init(&it, d);
    while (db_iter_next(&it, &e)) {
        kobj *o = db_entry_obj(e);
        if (!o || o->type != OBJ_MODULE || ((const keel_type *)o->mod_type)->mod != m) continue;
        if (count == cap) found = km_realloc(found, sizeof(*found) * (cap = cap ? cap * 2 : 16));
        found[count++] = e;
    }
    db_iter_reset(&it);
    /* Deleting a key frees its block only: the others collected stay. */
    for (size_t i = 0; i < count; i++) {
        size_t len;
        const char *key = db_entry_key(found[i], &len);
        db_delete(d, key, len);
    }
    km_free(found);
}

void module_purge_values(module *m) {
    if (!module_live_values(m)) return;
    for (int i = 0; db_get(i); i++)
        module_purge_db(db_get(i), m);
}

void module_types_release(module *m) {
    for (keel_type **pp = &types; *pp;) {
        keel_type *t = *pp;
        if (t->mod != m) {
            pp = &t->next;
            continue;
        }
        *pp = t->next;
        km_free(t);
    }
}

const keel_api_keyspace module_api_keyspace = {
    .size = sizeof(keel_api_keyspace),
    .key_open = api_key_open,
    .key_close = api_key_close,
    .key_type = api_key_type,
    .string_get = api_string_get,
    .string_set = api_string_set,
    .key_delete = api_key_delete,
    .expire_get = api_expire_get,
    .expire_set = api_expire_set,
    .type_register = api_type_register,
    .module_set = api_module_set,
    .module_get = api_module_get,
    .db_size = api_db_size,
};
