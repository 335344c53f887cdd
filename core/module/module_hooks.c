/* module_hooks.c -- the hooks group (command filters and observers, client
 * events, timers, cron hooks) and the INFO half of the info group.
 *
 * Filters, observers, client events and INFO sections are registered with
 * call.h and info.h under the module as owner. Observers are called
 * directly (call.c builds the SDK's keel_call_info); the others go through
 * trampolines that turn core structs into the SDK's, whose records live
 * here, one per registration, and go when the module does. Timers are event-loop
 * timers; cron hooks run from the server cron (module_cron). */
#include "session/command.h"
#include "common/common.h"
#include "common/kmem.h"
#include "module/module.h"
#include "module/module_internal.h"
#include "session/call.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct module_hook {
    module *mod;
    union {
        keel_filter_fn filter;
        keel_client_event_fn event;
        keel_info_fn info;
    } fn;
    void *priv;
    struct module_hook *next;
} module_hook;

struct keel_timer {
    module *mod;
    int64_t id; /* the event loop's */
    keel_timer_fn fn;
    void *priv;
    int running; /* its callback is on the stack */
    int deleted; /* timer_del'ed from its own callback */
    keel_timer *next;
};

typedef struct module_cron_hook {
    module *mod;
    keel_timer_fn fn;
    void *priv;
    int stopped;
    struct module_cron_hook *next;
} module_cron_hook;

struct keel_info {
    sbuf *b;
};

static module_hook *hooks;
static keel_timer *timers;
static module_cron_hook *crons;

static module_hook *module_hook_new(keel_ctx *ctx, void *priv) {
    module_hook *h = km_calloc(1, sizeof(*h));
    h->mod = ctx->mod;
    h->priv = priv;
    h->next = hooks;
    hooks = h;
    return h;
}

/* ---- filters, observers, client events ---- */

/* "config|get" for a subcommand, as INFO commandstats names it. */
static const char *module_cmd_name(const command *cmd) {
    return cmd->fullname ? cmd->fullname : cmd->name;
}

static const char *module_filter_tramp(client *c, command *cmd, void *priv) {
    module_hook *h = priv;
    keel_ctx ctx = {.mod = h->mod, .c = c, .phase = MODULE_PHASE_RUN};
    return h->fn.filter(&ctx, module_cmd_name(cmd), call_keel_cmd_flags(c->cmd_flags), h->priv);
}

int module_keel_client_event(int call_event) {
    switch (call_event) {
    case CALL_EVENT_CONNECT:
        return KEEL_CLIENT_CONNECT;
    case CALL_EVENT_AUTH:
        return KEEL_CLIENT_AUTH;
    case CALL_EVENT_CLOSE:
        return KEEL_CLIENT_CLOSE;
    default:
        return 0;
    }
}

static void module_event_tramp(client *c, int event, void *priv) {
    module_hook *h = priv;
    int keel_event = module_keel_client_event(event);
    if (keel_event) h->fn.event((keel_client *)c, keel_event, h->priv);
}

static int api_add_filter(keel_ctx *ctx, keel_filter_fn fn, void *priv) {
    MODULE_ASSERT_MAIN();
    if (!fn) {
        module_reg_error(ctx, "add_filter: no function");
        return KEEL_ERR;
    }
    module_hook *h = module_hook_new(ctx, priv);
    h->fn.filter = fn;
    return call_add_filter(module_filter_tramp, h, ctx->mod) == K_OK ? KEEL_OK : KEEL_ERR;
}

static int api_add_observer(keel_ctx *ctx, keel_observer_fn fn, void *priv) {
    MODULE_ASSERT_MAIN();
    if (!fn) {
        module_reg_error(ctx, "add_observer: no function");
        return KEEL_ERR;
    }
    return call_add_observer(fn, priv, ctx->mod) == K_OK ? KEEL_OK : KEEL_ERR;
}

static int api_add_client_event(keel_ctx *ctx, keel_client_event_fn fn, void *priv) {
    MODULE_ASSERT_MAIN();
    if (!fn) {
        module_reg_error(ctx, "add_client_event: no function");
        return KEEL_ERR;
    }
    module_hook *h = module_hook_new(ctx, priv);
    h->fn.event = fn;
    return call_add_client_event(module_event_tramp, h, ctx->mod) == K_OK ? KEEL_OK : KEEL_ERR;
}

/* ---- timers ---- */

static void module_timer_unlink(keel_timer *t) {
    for (keel_timer **pp = &timers; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            return;
        }
    }
}

/* The event loop unlinks a timer before its callback, so a callback that
 * deletes its own timer is only marked here and freed on return. */
static int64_t module_timer_tramp(event_loop *el, int64_t id, void *data) {
    keel_timer *t = data;
    keel_ctx ctx = {.mod = t->mod, .c = NULL, .phase = MODULE_PHASE_RUN};
    t->running = 1;
    int64_t next = t->fn(&ctx, t->priv);
    t->running = 0;
    if (next >= 0 && !t->deleted) return next;
    module_timer_unlink(t);
    km_free(t);
    return EV_TIMER_STOP;
}

static keel_timer *api_timer_add(keel_ctx *ctx, int64_t ms, keel_timer_fn fn, void *priv) {
    MODULE_ASSERT_MAIN();
    if (!fn || ms < 0 || !module_env_get()->el) {
        module_reg_error(ctx, "timer_add: %s",
                         !fn      ? "no function"
                         : ms < 0 ? "negative delay"
                                  : "no event loop");
        return NULL;
    }
    keel_timer *t = km_calloc(1, sizeof(*t));
    *t = (keel_timer){.mod = ctx->mod, .fn = fn, .priv = priv, .next = timers};
    t->id = event_timer_add(module_env_get()->el, ms, module_timer_tramp, t);
    timers = t;
    return t;
}

static void module_timer_free(keel_timer *t) {
    module_timer_unlink(t);
    event_timer_del(module_env_get()->el, t->id);
    km_free(t);
}

static int api_timer_del(keel_ctx *ctx, keel_timer *timer) {
    MODULE_ASSERT_MAIN();
    keel_timer *t = timers;
    while (t && (t != timer || t->mod != ctx->mod))
        t = t->next;
    if (!t || t->deleted) return KEEL_ERR;
    if (t->running)
        t->deleted = 1;
    else
        module_timer_free(t);
    return KEEL_OK;
}

/* ---- cron hooks ---- */

static int api_add_cron(keel_ctx *ctx, keel_timer_fn fn, void *priv) {
    MODULE_ASSERT_MAIN();
    if (!fn) {
        module_reg_error(ctx, "add_cron: no function");
        return KEEL_ERR;
    }
    module_cron_hook *h = km_calloc(1, sizeof(*h));
    *h = (module_cron_hook){.mod = ctx->mod, .fn = fn, .priv = priv, .next = crons};
    crons = h;
    return KEEL_OK;
}

static void module_crons_remove(module *owner, int stopped_only) {
    for (module_cron_hook **pp = &crons; *pp;) {
        module_cron_hook *h = *pp;
        if (stopped_only ? !h->stopped : h->mod != owner) {
            pp = &h->next;
            continue;
        }
        *pp = h->next;
        km_free(h);
    }
}

/* A hook added by a cron callback goes to the head of the list and first
 * runs at the next tick. */
void module_cron(void) {
    int stopped = 0;
    for (module_cron_hook *h = crons; h; h = h->next) {
        keel_ctx ctx = {.mod = h->mod, .c = NULL, .phase = MODULE_PHASE_RUN};
        if (h->fn(&ctx, h->priv) == KEEL_TIMER_STOP) stopped = h->stopped = 1;
    }
    if (stopped) module_crons_remove(NULL, 1);
}

/* ---- INFO sections ---- */

static void module_info_tramp(sbuf *b, void *priv) {
    module_hook *h = priv;
    keel_info info = {.b = b};
    h->fn.info(&info, h->priv);
}

/* Names INFO already answers to: a module section must not shadow them. */
static int module_section_reserved(const char *name) {
    static const char *const reserved[] = {"server",   "clients",      "memory",     "persistence",
                                           "stats",    "replication",  "cpu",        "modules",
                                           "keyspace", "commandstats", "errorstats", "latencystats",
                                           "cluster",  "all",          "default",    "everything"};
    for (size_t i = 0; i < K_ARRAY_LEN(reserved); i++)
        if (!strcasecmp(name, reserved[i])) return 1;
    return 0;
}

static int api_add_section(keel_ctx *ctx, const char *name, keel_info_fn fn, void *priv) {
    MODULE_ASSERT_MAIN();
    if (!fn || !module_name_valid(name, 64) || module_section_reserved(name)) {
        module_reg_error(ctx, "add_section: %s",
                         !fn ? "no function" : "invalid or reserved section name");
        return KEEL_ERR;
    }
    module_hook *h = module_hook_new(ctx, priv);
    h->fn.info = fn;
    if (module_env_get()->info_add_section(name, module_info_tramp, h, ctx->mod) == K_OK)
        return KEEL_OK;
    module_reg_error(ctx, "add_section: INFO section '%s' already exists", name);
    return KEEL_ERR;
}

/* Fields in a section of the server's own (ABI 1.2): "server", "stats", ...
 * The server runs fn after its own fields of that section. */
static int api_add_fields(keel_ctx *ctx, const char *section, keel_info_fn fn, void *priv) {
    MODULE_ASSERT_MAIN();
    if (!module_in_init(ctx, "INFO fields")) return KEEL_ERR;
    if (!fn || !section) {
        module_reg_error(ctx, "add_fields: %s", !fn ? "no function" : "no section");
        return KEEL_ERR;
    }
    module_hook *h = module_hook_new(ctx, priv);
    h->fn.info = fn;
    if (module_env_get()->info_add_fields(section, module_info_tramp, h, ctx->mod) == K_OK)
        return KEEL_OK;
    module_reg_error(ctx, "add_fields: the server has no INFO section '%s'", section);
    return KEEL_ERR;
}

/* One "field:value" line; CR and LF would split it, so they become spaces. */
static void api_info_field(keel_info *info, const char *fmt, ...) {
    MODULE_ASSERT_MAIN();
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (!info || n < 0) return;
    char *line = km_alloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(line, (size_t)n + 1, fmt, ap);
    va_end(ap);
    for (char *p = line; *p; p++)
        if (*p == '\r' || *p == '\n') *p = ' ';
    sbuf_appendf(info->b, "%s\r\n", line);
    km_free(line);
}

/* ---- release ---- */

void module_hooks_release(module *m) {
    call_remove_owner(m);
    module_env_get()->info_remove_owner(m);
    for (module_hook **pp = &hooks; *pp;) {
        module_hook *h = *pp;
        if (h->mod != m) {
            pp = &h->next;
            continue;
        }
        *pp = h->next;
        km_free(h);
    }
    keel_timer *t = timers;
    while (t) {
        keel_timer *next = t->next;
        if (t->mod == m) module_timer_free(t);
        t = next;
    }
    module_crons_remove(m, 0);
}

const keel_api_hooks module_api_hooks = {
    .size = sizeof(keel_api_hooks),
    .add_filter = api_add_filter,
    .add_observer = api_add_observer,
    .add_client_event = api_add_client_event,
    .timer_add = api_timer_add,
    .timer_del = api_timer_del,
    .add_cron = api_add_cron,
};

const keel_api_info module_api_info = {
    .size = sizeof(keel_api_info),
    .add_section = api_add_section,
    .field = api_info_field,
    .config_register = module_api_config_register,
    .add_fields = api_add_fields,
    .config_claim_family = module_api_config_claim_family,
};
