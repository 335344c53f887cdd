/* slist.c -- a module with a custom data type: a small list of strings.
 *
 *   SLIST.PUSH <key> <value> [<value> ...]  appends; creates the key; -> new length
 *   SLIST.LEN <key>                         -> length (0 if the key is missing)
 *   SLIST.GET <key> <index>                 -> element (negative counts from the end) or nil
 *
 * Keys holding the type work with the server's generic commands: TYPE says
 * "slist-str", COPY uses the copy callback, MEMORY USAGE the mem_usage
 * callback, DEL/UNLINK/FLUSHALL/expiry the free callback. MODULE UNLOAD slist
 * is refused while any key still holds an slist-str value. */
#include <keel/keel_module.h>

#include <string.h>

static const keel_api *api;
static keel_type *slist_type; /* the handle type_register returned */

/* Every element and the list itself come from api->core->alloc, so they count
 * in used_memory and are freed with api->core->free. */
typedef struct slist_item {
    size_t len;
    char data[];
} slist_item;

typedef struct slist {
    size_t len, cap;
    slist_item **items;
} slist;

static slist *slist_new(void) {
    return api->core->calloc(1, sizeof(slist));
}

static void slist_push(slist *l, const char *s, size_t len) {
    if (l->len == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->items = api->core->realloc(l->items, l->cap * sizeof(*l->items));
    }
    slist_item *it = api->core->alloc(sizeof(*it) + len);
    it->len = len;
    memcpy(it->data, s, len);
    l->items[l->len++] = it;
}

/* ---- type callbacks: called by the server on the main thread ---- */

/* The key was deleted, overwritten, expired or flushed: the value is ours
 * again, to free. */
static void slist_free(void *value) {
    slist *l = value;
    for (size_t i = 0; i < l->len; i++)
        api->core->free(l->items[i]);
    api->core->free(l->items);
    api->core->free(l);
}

/* MEMORY USAGE: an estimate of the bytes the value holds. */
static size_t slist_mem_usage(const void *value) {
    const slist *l = value;
    size_t n = sizeof(*l) + l->cap * sizeof(*l->items);
    for (size_t i = 0; i < l->len; i++)
        n += sizeof(slist_item) + l->items[i]->len;
    return n;
}

/* COPY: a deep copy the server then owns. */
static void *slist_copy(const void *value) {
    const slist *src = value;
    slist *dst = slist_new();
    for (size_t i = 0; i < src->len; i++)
        slist_push(dst, src->items[i]->data, src->items[i]->len);
    return dst;
}

/* ---- commands ---- */

/* Opens argv[1] as a key. The handle must be closed before the command
 * returns. */
static keel_key *open_key(keel_ctx *ctx, int mode) {
    size_t len;
    const char *name = api->command->argv(ctx, 1, &len);
    return api->keyspace->key_open(ctx, name, len, mode);
}

/* The key's list, NULL if the key is empty; *wrongtype if it holds
 * something else. */
static slist *get_list(keel_key *key, int *wrongtype) {
    slist *l = api->keyspace->module_get(key, slist_type);
    *wrongtype = !l && api->keyspace->key_type(key) != KEEL_KEYTYPE_EMPTY;
    return l;
}

static void reply_wrongtype(keel_ctx *ctx) {
    api->command->reply_error(ctx,
                              "WRONGTYPE Operation against a key holding the wrong kind of value");
}

static void cmd_push(keel_ctx *ctx) {
    int wrongtype;
    keel_key *key = open_key(ctx, KEEL_KEY_READ | KEEL_KEY_WRITE);
    slist *l = get_list(key, &wrongtype);
    if (wrongtype) {
        reply_wrongtype(ctx);
        api->keyspace->key_close(key);
        return;
    }
    if (!l) {
        l = slist_new();
        /* On KEEL_OK the server owns the value (and frees it with
         * slist_free); on KEEL_ERR it is still ours. */
        if (api->keyspace->module_set(key, slist_type, l) != KEEL_OK) {
            slist_free(l);
            api->keyspace->key_close(key);
            api->command->reply_error(ctx, "ERR could not store the list");
            return;
        }
    }
    /* The stored value may be changed in place while the key is open. */
    for (int i = 2; i < api->command->argc(ctx); i++) {
        size_t len;
        const char *s = api->command->argv(ctx, i, &len);
        slist_push(l, s, len);
    }
    api->command->reply_int(ctx, (long long)l->len);
    api->keyspace->key_close(key);
}

static void cmd_len(keel_ctx *ctx) {
    int wrongtype;
    keel_key *key = open_key(ctx, KEEL_KEY_READ);
    slist *l = get_list(key, &wrongtype);
    if (wrongtype)
        reply_wrongtype(ctx);
    else
        api->command->reply_int(ctx, l ? (long long)l->len : 0);
    api->keyspace->key_close(key);
}

static void cmd_get(keel_ctx *ctx) {
    int wrongtype;
    long long index;
    if (api->command->arg_ll(ctx, 2, &index) != KEEL_OK) {
        api->command->reply_error(ctx, "ERR value is not an integer or out of range");
        return;
    }
    keel_key *key = open_key(ctx, KEEL_KEY_READ);
    slist *l = get_list(key, &wrongtype);
    if (wrongtype) {
        reply_wrongtype(ctx);
    } else {
        long long n = l ? (long long)l->len : 0;
        if (index < 0) index += n;
        if (index < 0 || index >= n)
            api->command->reply_null(ctx);
        else
            api->command->reply_bulk(ctx, l->items[index]->data, l->items[index]->len);
    }
    api->keyspace->key_close(key);
}

static int slist_init(keel_ctx *ctx, const keel_api *a, int argc, const char *const *argv) {
    api = a;
    /* Type names are exactly 9 characters of [A-Za-z0-9_-], unique in the
     * server; TYPE shows it. encver and reserved[] are for dump/restore in a
     * later ABI minor: leave reserved zeroed. */
    const keel_type_def type = {.size = sizeof(keel_type_def),
                                .name = "slist-str",
                                .encver = 1,
                                .free = slist_free,
                                .mem_usage = slist_mem_usage,
                                .copy = slist_copy};
    slist_type = api->keyspace->type_register(ctx, &type);
    if (!slist_type) return KEEL_ERR;

    /* Key positions (first, last, step) as Valkey's: argv[1] is the key.
     * They let COMMAND INFO/GETKEYS and cluster slot checks see it. */
    const keel_command_def cmds[] = {
        {.size = sizeof(keel_command_def),
         .name = "slist.push",
         .fn = cmd_push,
         .arity = -3,
         .flags = "write denyoom",
         .first_key = 1,
         .last_key = 1,
         .key_step = 1,
         .summary = "Appends values to a small list."},
        {.size = sizeof(keel_command_def),
         .name = "slist.len",
         .fn = cmd_len,
         .arity = 2,
         .flags = "readonly fast",
         .first_key = 1,
         .last_key = 1,
         .key_step = 1,
         .summary = "Returns the length of a small list."},
        {.size = sizeof(keel_command_def),
         .name = "slist.get",
         .fn = cmd_get,
         .arity = 3,
         .flags = "readonly fast",
         .first_key = 1,
         .last_key = 1,
         .key_step = 1,
         .summary = "Returns an element of a small list by index."},
    };
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (api->command->register_command(ctx, &cmds[i]) != KEEL_OK) return KEEL_ERR;
    return KEEL_OK;
}

KEEL_MODULE("slist", 10000, slist_init, NULL)
