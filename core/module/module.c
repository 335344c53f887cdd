/* module.c -- the module registry and loader.
 *
 * Loading follows the handshake the SDK promises (keel_module.h): dlopen
 * with RTLD_LOCAL (modules never see core symbols), find the one entry
 * point, and check the descriptor's magic, ABI major (equal), ABI minor (not
 * newer than ours), size (at least the 1.0 layout), name and uniqueness
 * BEFORE anything in the module is called. Only then init runs; if it fails,
 * or any registration it made failed, everything the module registered is
 * undone and the object is closed, so a refused module leaves no trace. A
 * load refused after init returned KEEL_OK first calls deinit, like an
 * unload: the module may have started things only it can stop.
 *
 * Every refusal is logged and returned with a message naming the path and,
 * for version mismatches, both ABI versions. */
#include "module/module.h"

#include "common/common.h"
#include "common/log.h"
#include "common/kmem.h"
#include "config/config.h"
#include "keyspace/lazyfree.h"
#include "module/module_internal.h"

#include <assert.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MODULE_NAME_MAX 64
/* The descriptor as ABI 1.0 defined it: everything up to deinit. */
#define MODULE_INFO_SIZE_1_0                                                                       \
    (offsetof(keel_module_info, deinit) + sizeof(((keel_module_info *)0)->deinit))

static module *modules_head; /* load order */
static pthread_t main_thread;
static int main_thread_set;

/* ---- helpers shared by the module files ---- */

static void module_record_main_thread(void) {
    if (main_thread_set) return;
    main_thread = pthread_self();
    main_thread_set = 1;
}

int module_on_main_thread(void) {
    return !main_thread_set || pthread_equal(main_thread, pthread_self());
}

#ifndef NDEBUG
void module_assert_main_thread(void) {
    assert(module_on_main_thread());
}
#endif

static char *module_errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *module_errf(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return km_strdup(buf);
}

void module_reg_error(keel_ctx *ctx, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    module *m = ctx->mod;
    log_write(LL_WARNING, "<%s> %s", m->name, buf);
    if (ctx->phase != MODULE_PHASE_INIT) return;
    /* The first failure explains the refusal best; later ones often follow
     * from it. */
    if (!m->reg_failed) {
        km_free(m->error);
        m->error = km_strdup(buf);
    }
    m->reg_failed = 1;
}

int module_copy_def(void *dst, size_t dst_size, const void *src, size_t min) {
    uint32_t size;
    memcpy(&size, src, sizeof(size));
    if (size < min) return K_ERR;
    memset(dst, 0, dst_size);
    memcpy(dst, src, size < dst_size ? size : dst_size);
    return K_OK;
}

int module_name_valid(const char *s, size_t max) {
    size_t n = 0;
    if (!s) return 0;
    for (; s[n]; n++) {
        char ch = s[n];
        if (n >= max ||
            !((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
            return 0;
    }
    return n > 0;
}

int module_in_init(keel_ctx *ctx, const char *what) {
    if (ctx->phase == MODULE_PHASE_INIT) return 1;
    module_reg_error(ctx, "%s can only be registered during init", what);
    return 0;
}

/* ---- the registry ---- */

static module *module_find(const char *name) {
    for (module *m = modules_head; m; m = m->next)
        if (!strcmp(m->name, name)) return m;
    return NULL;
}

static void module_link(module *m) {
    module **pp = &modules_head;
    while (*pp)
        pp = &(*pp)->next;
    *pp = m;
}

static void module_unlink(module *m) {
    for (module **pp = &modules_head; *pp; pp = &(*pp)->next) {
        if (*pp == m) {
            *pp = m->next;
            return;
        }
    }
}

size_t module_count(void) {
    size_t n = 0;
    for (module *m = modules_head; m; m = m->next)
        n++;
    return n;
}

void module_foreach(module_list_fn fn, void *priv) {
    for (module *m = modules_head; m; m = m->next)
        fn(m->name, m->version, m->path, m->argc, m->argv, priv);
}

/* ---- the handshake ---- */

/* dlsym returns an object pointer; the union converts it to the entry's
 * function type without a cast ISO C leaves undefined. */
static const keel_module_info *module_call_entry(void *handle) {
    union {
        void *obj;
        const keel_module_info *(*fn)(void);
    } entry;
    entry.obj = dlsym(handle, KEEL_MODULE_ENTRY_SYMBOL);
    return entry.obj ? entry.fn() : NULL;
}

static int module_check_versions(const char *path, const keel_module_info *info, char **err) {
    if (info->magic != KEEL_MODULE_MAGIC) {
        *err = module_errf("module %s: bad magic 0x%016llx in its descriptor (not a Keel module)",
                           path, (unsigned long long)info->magic);
    } else if (info->abi_major != KEEL_ABI_MAJOR) {
        *err = module_errf("module %s: ABI %u.%u is not supported by this server (ABI %d.%d)", path,
                           info->abi_major, info->abi_minor, KEEL_ABI_MAJOR, KEEL_ABI_MINOR);
    } else if (info->abi_minor > KEEL_ABI_MINOR) {
        *err = module_errf(
            "module %s: ABI %u.%u is newer than this server's (ABI %d.%d); upgrade the server",
            path, info->abi_major, info->abi_minor, KEEL_ABI_MAJOR, KEEL_ABI_MINOR);
    } else if (info->size < MODULE_INFO_SIZE_1_0) {
        *err = module_errf("module %s: descriptor size %u is smaller than ABI 1.0's (%zu)", path,
                           info->size, (size_t)MODULE_INFO_SIZE_1_0);
    } else {
        return K_OK;
    }
    return K_ERR;
}

static int module_check_info(const char *path, const keel_module_info *info, char **err) {
    if (module_check_versions(path, info, err) != K_OK) return K_ERR;
    if (!module_name_valid(info->name, MODULE_NAME_MAX)) {
        *err = module_errf("module %s: invalid module name (1 to %d characters of [a-z0-9_-])",
                           path, MODULE_NAME_MAX);
    } else if (!info->init) {
        *err =
            module_errf("module %s: the descriptor of '%s' has no init function", path, info->name);
    } else if (module_find(info->name)) {
        *err = module_errf("module %s: a module named '%s' is already loaded", path, info->name);
    } else {
        return K_OK;
    }
    return K_ERR;
}

static module *module_new(void *handle, const keel_module_info *info, const char *path, int argc,
                          const char *const *argv) {
    module *m = km_calloc(1, sizeof(*m));
    m->name = km_strdup(info->name);
    m->version = info->version;
    m->path = km_strdup(path);
    m->handle = handle;
    m->info = info;
    m->deinit = info->deinit;
    m->argc = argc;
    m->argv = km_calloc((size_t)argc + 1, sizeof(char *));
    for (int i = 0; i < argc; i++)
        m->argv[i] = km_strdup(argv[i]);
    m->ctx = (keel_ctx){.mod = m, .c = NULL, .phase = MODULE_PHASE_INIT};
    return m;
}

/* dlopen, the entry point and the checks: a module struct ready for init,
 * or NULL with *err. */
static module *module_open(const char *path, int argc, const char *const *argv, char **err) {
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        *err = module_errf("module %s: cannot load it as a shared object: %s", path,
                           why ? why : "unknown error");
        return NULL;
    }
    const keel_module_info *info = module_call_entry(handle);
    if (!info) {
        *err =
            module_errf("module %s: no %s() entry point returning a descriptor (not a Keel module)",
                        path, KEEL_MODULE_ENTRY_SYMBOL);
    } else if (module_check_info(path, info, err) == K_OK) {
        return module_new(handle, info, path, argc, argv);
    }
    dlclose(handle);
    return NULL;
}

/* ---- init, rollback, release ---- */

/* Undoes every registration of m (unload, failed init, teardown). */
static void module_release(module *m) {
    module_purge_values(m);
    module_commands_release(m);
    module_hooks_release(m);
    module_configs_release(m);
    module_transports_release(m);
    module_events_release(m);
    module_blocks_release(m);
    module_types_release(m);
}

static void module_destroy(module *m) {
    if (m->handle) dlclose(m->handle);
    for (int i = 0; i < m->argc; i++)
        km_free(m->argv[i]);
    km_free(m->argv);
    km_free(m->name);
    km_free(m->path);
    km_free(m->error);
    km_free(m);
}

/* Runs init and the checks that follow it. *init_ok says whether init
 * itself returned KEEL_OK, which decides who cleans up after a refusal. */
static int module_init(module *m, int ncfg, const char *const *cfg, int *init_ok, char **err) {
    module_config_begin_load(ncfg, cfg);
    int rv = m->info->init(&m->ctx, &module_api, m->argc, (const char *const *)m->argv);
    m->ctx.phase = MODULE_PHASE_RUN;
    const char *unused = module_config_end_load();
    *init_ok = rv == KEEL_OK;
    if (rv == KEEL_OK && !m->reg_failed && !unused) return K_OK;
    if (rv == KEEL_OK && !m->reg_failed)
        *err = module_errf("module %s: '%s' is not a configuration parameter of '%s'", m->path,
                           unused, m->name);
    else
        *err = module_errf("module %s: init of '%s' failed: %s", m->path, m->name,
                           m->error ? m->error : "init returned an error");
    return K_ERR;
}

/* A refusal after init: 1 when init returned KEEL_OK (the module is running
 * and must be stopped), 0 when init itself failed (it cleaned up after
 * itself, as the SDK asks). */
static void module_refuse(module *m, int init_ok) {
    /* init may have started threads, timers or hooks that deinit alone can
     * stop; dlclose under them would leave them running unmapped code. Its
     * hooks are still registered here so it can stop them itself, and its
     * answer is ignored: the load is refused either way. Values it stored
     * and connections of its transports go first, as at shutdown, since
     * their free callback and close hook may need state that deinit tears
     * down. */
    if (init_ok && m->deinit) {
        module_purge_values(m);
        module_transports_close(m);
        m->deinit(&m->ctx);
    }
    module_release(m);
    module_destroy(m);
}

int module_load(const char *path, int argc, const char *const *argv, int ncfg,
                const char *const *cfg, char **err) {
    module_record_main_thread();
    module *m = module_open(path, argc, argv, err);
    int init_ok = 0;
    if (m && module_init(m, ncfg, cfg, &init_ok, err) != K_OK) {
        module_refuse(m, init_ok);
        m = NULL;
    }
    if (!m) {
        log_write(LL_WARNING, "%s", *err);
        return K_ERR;
    }
    module_link(m);
    log_write(LL_NOTICE, "Module '%s' loaded from %s", m->name, m->path);
    return K_OK;
}

int module_load_configured(char **err) {
    module_record_main_thread();
    for (config_module_line *l = config_module_lines(); l; l = l->next) {
        char *why = NULL;
        if (module_load(l->path, l->argc, (const char *const *)l->argv, 0, NULL, &why) != K_OK) {
            *err = module_errf("%s:%d: %s", l->file, l->line, why);
            km_free(why);
            return K_ERR;
        }
    }
    return module_config_check_pending(err);
}

/* ---- unload ---- */

static int module_unload_check(module *m, char **err) {
    /* A flushed database's module values come back from the lazy-free
     * thread to be freed here: they must go while the module is loaded. */
    lazyfree_wait();
    long long live = module_live_values(m);
    uint64_t conns = module_open_conns(m);
    uint64_t blocked = module_blocked_count(m);
    km_free(m->error); /* only deinit's own set_error explains its refusal */
    m->error = NULL;
    if (live) {
        *err = module_errf(
            "Error unloading module: '%s' still owns %lld key(s) holding values of its data types; "
            "delete them first",
            m->name, live);
    } else if (conns) {
        *err = module_errf(
            "Error unloading module: '%s' still has %llu open connection(s) of its transports",
            m->name, (unsigned long long)conns);
    } else if (blocked) {
        *err = module_errf("Error unloading module: '%s' has %llu blocked client(s); wait for them "
                           "to be unblocked and try again",
                           m->name, (unsigned long long)blocked);
    } else if (m->deinit && m->deinit(&m->ctx) != KEEL_OK) {
        *err = module_errf("Error unloading module: '%s' refused to unload: %s", m->name,
                           m->error ? m->error : "deinit returned an error");
    } else {
        return K_OK;
    }
    return K_ERR;
}

int module_unload(const char *name, char **err) {
    MODULE_ASSERT_MAIN();
    module *m = module_find(name);
    if (!m) {
        *err = km_strdup("Error unloading module: no such module with that name");
        return K_ERR;
    }
    if (module_unload_check(m, err) != K_OK) {
        log_write(LL_WARNING, "%s", *err);
        return K_ERR;
    }
    module_unlink(m);
    module_release(m);
    log_write(LL_NOTICE, "Module '%s' unloaded", m->name);
    module_destroy(m);
    return K_OK;
}

/* Newest first, so a module goes before any module loaded earlier. */
static const module_env *env;

void module_setup(const module_env *e) {
    env = e;
    module_transport_setup();
    module_cmd_setup();
    module_block_setup();
}

const module_env *module_env_get(void) {
    return env;
}

void module_teardown(void) {
    lazyfree_wait(); /* see module_unload_check */
    while (modules_head) {
        module *m = modules_head;
        while (m->next)
            m = m->next;
        module_purge_values(m);
        module_transports_close(m); /* their close hooks run before deinit */
        if (m->deinit) m->deinit(&m->ctx);
        module_unlink(m);
        module_release(m);
        module_destroy(m);
    }
    module_config_teardown();
    module_block_teardown();
}
