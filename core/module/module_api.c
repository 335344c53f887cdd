/* module_api.c -- the keel_api table every module receives, and its core
 * group: logging, errors, memory, clocks, version, config and statistics
 * reads.
 *
 * The table and its groups are constant: one copy serves every module, and
 * each group's size tells a module built against a newer minor which
 * functions this server has (KEEL_API_HAS). */
#include "common/common.h"
#include "common/log.h"
#include "common/kmem.h"
#include "config/config.h"
#include "module/module.h"
#include "module/module_internal.h"

#include <stdarg.h>
#include <stdio.h>

int module_log_level(int keel_level) {
    if (keel_level <= KEEL_LOG_DEBUG) return LL_DEBUG;
    if (keel_level == KEEL_LOG_VERBOSE) return LL_VERBOSE;
    if (keel_level == KEEL_LOG_NOTICE) return LL_NOTICE;
    return LL_WARNING;
}

/* Any thread: log_write formats on the stack and writes with stdio, whose
 * streams lock. The module's name is read-only while it is loaded. */
static void api_log(keel_ctx *ctx, int level, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_write(module_log_level(level), "<%s> %s", ctx ? ctx->mod->name : "module", msg);
}

static void api_set_error(keel_ctx *ctx, const char *msg) {
    MODULE_ASSERT_MAIN();
    km_free(ctx->mod->error);
    ctx->mod->error = km_strdup(msg ? msg : "");
}

/* Memory: the core's allocator, so module memory counts in used_memory and
 * maxmemory. Any thread. */
static void *api_alloc(size_t size) {
    return km_alloc(size);
}

static void *api_calloc(size_t count, size_t size) {
    return km_calloc(count, size);
}

static void *api_realloc(void *ptr, size_t size) {
    return km_realloc(ptr, size);
}

static void api_free(void *ptr) {
    km_free(ptr);
}

static int64_t api_mstime(void) {
    MODULE_ASSERT_MAIN();
    return event_cached_ms();
}

static int64_t api_ustime(void) {
    MODULE_ASSERT_MAIN();
    return (int64_t)event_now_us();
}

static const char *api_server_version(void) {
    MODULE_ASSERT_MAIN();
    return KEEL_VERSION;
}

static int api_config_get(const char *name, char *buf, size_t len) {
    MODULE_ASSERT_MAIN();
    if (!name || !buf || !len) return KEEL_ERR;
    return config_get(name, buf, len) == K_OK ? KEEL_OK : KEEL_ERR;
}

static int api_stat_get(const char *name, long long *value) {
    MODULE_ASSERT_MAIN();
    if (!name || !value) return KEEL_ERR;
    return module_env_get()->info_stat_get(name, value) == K_OK ? KEEL_OK : KEEL_ERR;
}

const keel_api_core module_api_core = {
    .size = sizeof(keel_api_core),
    .log = api_log,
    .set_error = api_set_error,
    .alloc = api_alloc,
    .calloc = api_calloc,
    .realloc = api_realloc,
    .free = api_free,
    .mstime = api_mstime,
    .ustime = api_ustime,
    .server_version = api_server_version,
    .config_get = api_config_get,
    .stat_get = api_stat_get,
};

const keel_api module_api = {
    .size = sizeof(keel_api),
    .abi_major = KEEL_ABI_MAJOR,
    .abi_minor = KEEL_ABI_MINOR,
    .core = &module_api_core,
    .command = &module_api_command,
    .keyspace = &module_api_keyspace,
    .hooks = &module_api_hooks,
    .info = &module_api_info,
    .transport = &module_api_transport,
    .call = &module_api_call,
    .block = &module_api_block,
    .events = &module_api_events,
};
