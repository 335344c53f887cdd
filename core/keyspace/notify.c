/* notify.c -- keyspace notifications: channel names, the class letters,
 * and the keyspace hook that announces keys that expire or are evicted. */
#include "keyspace/notify.h"

#include "common/common.h"
#include "common/kmem.h"
#include "common/strconv.h"
#include "keyspace/db.h"

#include <string.h>

static const int *enabled;
static notify_sink_fn sink;
static const int *observed;
static notify_observer_fn observer;
static void *observer_priv;

/* The letters, in the order Valkey's CONFIG GET writes them. */
static const struct {
    char c;
    int bit;
} notify_letters[] = {
    {'g', NOTIFY_GENERIC},  {'$', NOTIFY_STRING},   {'l', NOTIFY_LIST},    {'s', NOTIFY_SET},
    {'h', NOTIFY_HASH},     {'z', NOTIFY_ZSET},     {'x', NOTIFY_EXPIRED}, {'e', NOTIFY_EVICTED},
    {'t', NOTIFY_STREAM},   {'d', NOTIFY_MODULE},   {'n', NOTIFY_NEW},     {'K', NOTIFY_KEYSPACE},
    {'E', NOTIFY_KEYEVENT}, {'m', NOTIFY_KEY_MISS},
};

int notify_parse_classes(const char *s) {
    int classes = 0;
    for (; *s; s++) {
        int bit = *s == 'A' ? NOTIFY_ALL : 0;
        for (size_t i = 0; !bit && i < K_ARRAY_LEN(notify_letters); i++)
            if (notify_letters[i].c == *s) bit = notify_letters[i].bit;
        if (!bit) return -1;
        classes |= bit;
    }
    return classes;
}

/* K, E and m are written after the type classes; with the whole of A
 * enabled, A stands for the type classes and Valkey writes no `n`
 * either. */
size_t notify_format_classes(int classes, char *buf) {
    const int tail = NOTIFY_KEYSPACE | NOTIFY_KEYEVENT | NOTIFY_KEY_MISS;
    int all = (classes & NOTIFY_ALL) == NOTIFY_ALL;
    size_t n = 0;
    if (all) buf[n++] = 'A';
    for (size_t i = 0; i < K_ARRAY_LEN(notify_letters); i++) {
        int bit = notify_letters[i].bit;
        if ((classes & bit) && (!all || (bit & tail))) buf[n++] = notify_letters[i].c;
    }
    buf[n] = '\0';
    return n;
}

/* "__<kind>@<db>__:<name>" into buf when it fits, else into a new block
 * the caller frees (*owned). */
static char *notify_channel(const char *kind, int dbid, const char *name, size_t namelen, char *buf,
                            size_t bufsize, size_t *len, char **owned) {
    char num[24];
    size_t kl = strlen(kind), nl = ll_to_str(num, dbid);
    size_t total = 2 + kl + 1 + nl + 3 + namelen;
    char *ch = total <= bufsize ? buf : (*owned = km_alloc(total));
    char *p = ch;
    memcpy(p, "__", 2);
    p += 2;
    memcpy(p, kind, kl);
    p += kl;
    *p++ = '@';
    memcpy(p, num, nl);
    p += nl;
    memcpy(p, "__:", 3);
    p += 3;
    memcpy(p, name, namelen);
    *len = total;
    return ch;
}

static void notify_publish(const char *kind, int dbid, const char *name, size_t namelen,
                           const char *msg, size_t msglen) {
    char buf[256], *owned = NULL;
    size_t chlen;
    char *ch = notify_channel(kind, dbid, name, namelen, buf, sizeof(buf), &chlen, &owned);
    sink(ch, chlen, msg, msglen);
    km_free(owned);
}

void notify_keyspace_event(int classes, const char *event, const char *key, size_t keylen,
                           int dbid) {
    if (K_UNLIKELY(observed && (*observed & classes)))
        observer(classes, event, key, keylen, dbid, observer_priv);
    if (K_LIKELY(!enabled || !(*enabled & classes) || !sink)) return;
    size_t evlen = strlen(event);
    if (*enabled & NOTIFY_KEYSPACE) notify_publish("keyspace", dbid, key, keylen, event, evlen);
    if (*enabled & NOTIFY_KEYEVENT) notify_publish("keyevent", dbid, event, evlen, key, keylen);
}

/* Expired and evicted keys are announced by the keyspace itself (lazily
 * on access, by the active cycle, by the evictor): the key is still valid
 * during the announcement. */
static void notify_on_change(const db_change *ch, void *priv) {
    (void)priv;
    if (ch->event == DB_EV_EXPIRED)
        notify_keyspace_event(NOTIFY_EXPIRED, "expired", ch->key, ch->len, ch->d->id);
    else if (ch->event == DB_EV_EVICTED)
        notify_keyspace_event(NOTIFY_EVICTED, "evicted", ch->key, ch->len, ch->d->id);
}

void notify_setup(const int *classes, notify_sink_fn fn) {
    enabled = classes;
    sink = fn;
    db_add_hook(notify_on_change, NULL);
}

void notify_set_observer(const int *classes, notify_observer_fn fn, void *priv) {
    observed = fn ? classes : NULL;
    observer = fn;
    observer_priv = priv;
}

void notify_teardown(void) {
    db_remove_hook(notify_on_change, NULL);
    enabled = NULL;
    sink = NULL;
    notify_set_observer(NULL, NULL, NULL);
}
