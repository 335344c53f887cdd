/* module_events.c -- the events group: module subscriptions to keyspace
 * events (the notify unit's observer, whatever notify-keyspace-events
 * says) and events modules announce themselves.
 *
 * The SDK's KEEL_NOTIFY_* bits are frozen ABI and the core's NOTIFY_* its
 * own, so they cross by name through one table. A callback gets a ctx in
 * the event's database whose keys open read-only and whose lookups remove
 * nothing (removals are deferred for the call): an event is announced in
 * the middle of a change -- an expiry cycle, a command's write -- that a
 * write or a removal from the callback would corrupt. A subscription does
 * not hear the events its own callback announces (no recursion). */
#include "common/common.h"
#include "common/kmem.h"
#include "keyspace/db.h"
#include "keyspace/notify.h"
#include "module/module_internal.h"

typedef struct module_sub {
    module *mod;
    int classes; /* NOTIFY_* */
    keel_notify_fn fn;
    void *priv;
    int active; /* its callback is on the stack */
    struct module_sub *next;
} module_sub;

static module_sub *subs;
static int observed; /* the union of every subscription's classes */

static const struct {
    uint32_t keel;
    int core;
} notify_map[] = {
    {KEEL_NOTIFY_GENERIC, NOTIFY_GENERIC}, {KEEL_NOTIFY_STRING, NOTIFY_STRING},
    {KEEL_NOTIFY_LIST, NOTIFY_LIST},       {KEEL_NOTIFY_SET, NOTIFY_SET},
    {KEEL_NOTIFY_HASH, NOTIFY_HASH},       {KEEL_NOTIFY_ZSET, NOTIFY_ZSET},
    {KEEL_NOTIFY_EXPIRED, NOTIFY_EXPIRED}, {KEEL_NOTIFY_EVICTED, NOTIFY_EVICTED},
    {KEEL_NOTIFY_STREAM, NOTIFY_STREAM},   {KEEL_NOTIFY_KEY_MISS, NOTIFY_KEY_MISS},
    {KEEL_NOTIFY_MODULE, NOTIFY_MODULE},   {KEEL_NOTIFY_NEW, NOTIFY_NEW},
};

static int notify_to_core(uint32_t keel) {
    int core = 0;
    for (size_t i = 0; i < K_ARRAY_LEN(notify_map); i++)
        if (keel & notify_map[i].keel) core |= notify_map[i].core;
    return core;
}

static uint32_t notify_to_keel(int core) {
    uint32_t keel = 0;
    for (size_t i = 0; i < K_ARRAY_LEN(notify_map); i++)
        if (core & notify_map[i].core) keel |= notify_map[i].keel;
    return keel;
}

static void module_events_recount(void) {
    observed = 0;
    for (module_sub *s = subs; s; s = s->next)
        observed |= s->classes;
}

static void module_sub_call(module_sub *s, int classes, const char *event, const char *key,
                            size_t len, int dbid) {
    keel_ctx ctx = {.mod = s->mod,
                    .phase = MODULE_PHASE_RUN,
                    .flags = MODULE_CTX_NO_WRITES,
                    .db = db_get(dbid)};
    int deferred = db_removals_deferred();
    db_defer_removals(1);
    s->active = 1;
    s->fn(&ctx, notify_to_keel(classes), event, key, len, s->priv);
    s->active = 0;
    db_defer_removals(deferred);
}

/* The observer. A callback cannot subscribe (only during init) nor unload
 * its module, so the list is stable while it is walked. */
static void module_events_observe(int classes, const char *event, const char *key, size_t len,
                                  int dbid, void *priv) {
    K_UNUSED(priv);
    for (module_sub *s = subs; s; s = s->next)
        if ((s->classes & classes) && !s->active)
            module_sub_call(s, classes, event, key, len, dbid);
}

static int api_notify_subscribe(keel_ctx *ctx, uint32_t classes, keel_notify_fn fn, void *priv) {
    MODULE_ASSERT_MAIN();
    if (!module_in_init(ctx, "keyspace event subscriptions")) return KEEL_ERR;
    int core = notify_to_core(classes);
    if (!fn || !core) {
        module_reg_error(ctx, "notify_subscribe: no callback or no known event class");
        return KEEL_ERR;
    }
    module_sub *s = km_calloc(1, sizeof(*s));
    *s = (module_sub){.mod = ctx->mod, .classes = core, .fn = fn, .priv = priv, .next = subs};
    subs = s;
    module_events_recount();
    notify_set_observer(&observed, module_events_observe, NULL);
    return KEEL_OK;
}

static int api_notify_emit(keel_ctx *ctx, uint32_t cls, const char *event, const char *key,
                           size_t len) {
    MODULE_ASSERT_MAIN();
    int core = notify_to_core(cls);
    if (!ctx || !event || !*event || !key || !core) return KEEL_ERR;
    notify_keyspace_event(core, event, key, len, module_ctx_db(ctx)->id);
    return KEEL_OK;
}

const keel_api_events module_api_events = {
    .size = sizeof(keel_api_events),
    .notify_subscribe = api_notify_subscribe,
    .notify_emit = api_notify_emit,
};

void module_events_release(module *m) {
    for (module_sub **pp = &subs; *pp;) {
        module_sub *s = *pp;
        if (s->mod != m) {
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        km_free(s);
    }
    module_events_recount();
    if (!subs) notify_set_observer(NULL, NULL, NULL);
}
