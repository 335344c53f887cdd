/* command.c -- the command table: registration, lookup, renaming,
 * per-command statistics, and what each command's metadata (key specs,
 * arguments, docs) implies: key positions, the legacy key range, ACL
 * categories. The table knows no command family: commands_setup()
 * (commands/) registers the built-in ones with their metadata, modules
 * theirs. */
#include "session/command.h"

#include "common/common.h"
#include "common/kmem.h"
#include "ds/hashtable.h"
#include "ds/histogram.h"
#include "keyspace/object.h"
#include "session/client.h"
#include "session/reply.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define COMMAND_NAME_MAX 64

static hashtable *commands;
/* Copies made by command_rename, freed at teardown. */
static command **renamed;
static size_t renamed_count;

static const void *command_key(const void *entry, size_t *len) {
    const command *cmd = entry;
    *len = strlen(cmd->name);
    return cmd->name;
}

static const hashtable_type command_type = {.entry_key = command_key};

/* Valkey's movablekeys: the keys cannot be read off one (first, last, step)
 * triple, so a client must ask COMMAND GETKEYS. Same rules as Valkey's
 * legacy range derivation. */
static int command_keys_movable(const command *cmd) {
    const command_docs *d = cmd->docs;
    if (!d || d->num_key_specs == 0) return 0;
    int prev_last = 0;
    for (int i = 0; i < d->num_key_specs; i++) {
        const key_spec *ks = &d->key_specs[i];
        if (ks->begin != KEY_BEGIN_INDEX || ks->find != KEY_FIND_RANGE) return 1;
        if (ks->flags & KEY_SPEC_INCOMPLETE) return 1;
        if (d->num_key_specs == 1) return 0;
        if (ks->fk.range.step != 1 || (prev_last && prev_last != ks->bs.index - 1)) return 1;
        int last = ks->fk.range.lastkey;
        if (last >= 0) last += ks->bs.index;
        prev_last = (unsigned)prev_last > (unsigned)last ? prev_last : last;
    }
    return 0;
}

void command_set_docs(command *cmd, const command_docs *docs) {
    cmd->docs = docs;
    if (!cmd->docs) return;
    cmd->flags |= cmd->docs->extra_flags;
    if (command_keys_movable(cmd)) cmd->flags |= CMD_MOVABLE_KEYS;
}

void command_setup(void) {
    commands = hashtable_create(&command_type);
}

void command_free_latency(command *cmd) {
    if (!cmd->latency_hist) return;
    hist_release(cmd->latency_hist);
    km_free(cmd->latency_hist);
    cmd->latency_hist = NULL;
}

static void command_release_names(command *cmd, void *priv) {
    command_free_latency(cmd);
    for (command *sub = cmd->subcommands; sub && sub->name; sub++) {
        km_free(sub->fullname);
        sub->fullname = NULL;
        command_free_latency(sub);
    }
}

void command_teardown(void) {
    command_foreach(command_release_names, NULL);
    hashtable_release(commands);
    commands = NULL;
    for (size_t i = 0; i < renamed_count; i++) {
        km_free((char *)renamed[i]->name);
        km_free(renamed[i]);
    }
    km_free(renamed);
    renamed = NULL;
    renamed_count = 0;
}

command *command_lookup(const char *name, size_t len) {
    char lower[COMMAND_NAME_MAX];
    if (len >= sizeof(lower)) return NULL;
    for (size_t i = 0; i < len; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    return hashtable_find(commands, lower, len);
}

command *command_lookup_sub(const command *cmd, const char *name, size_t len) {
    for (command *sub = cmd->subcommands; sub && sub->name; sub++)
        if (strlen(sub->name) == len && strncasecmp(sub->name, name, len) == 0) return sub;
    return NULL;
}

/* "config|get" */
static char *command_join_name(const char *parent, const char *sub) {
    size_t a = strlen(parent), b = strlen(sub);
    char *s = km_alloc(a + b + 2);
    memcpy(s, parent, a);
    s[a] = '|';
    memcpy(s + a + 1, sub, b + 1);
    return s;
}

/* Adds cmd under its name; fullname is what stats and errors show. */
static int command_link(command *cmd, const char *fullname) {
    if (!hashtable_add(commands, cmd, NULL)) return K_ERR;
    cmd->fullname = (char *)fullname;
    for (command *sub = cmd->subcommands; sub && sub->name; sub++) {
        sub->parent = cmd;
        sub->fullname = command_join_name(fullname, sub->name);
    }
    return K_OK;
}

int command_register(command *cmd) {
    return command_link(cmd, cmd->name);
}

/* The table is keyed by the entry's own name, so a renamed command is a
 * copy under the new name. As in Valkey, it keeps its original name where
 * the server names it (INFO commandstats, COMMAND INFO, errors). */
int command_rename(const char *from, const char *to, const char **err) {
    command *cmd = command_lookup(from, strlen(from));
    size_t len = strlen(to);
    if (!cmd) {
        *err = "No such command in rename-command";
        return K_ERR;
    }
    if (len && command_lookup(to, len)) {
        *err = "Target command name already exists";
        return K_ERR;
    }
    if (len >= COMMAND_NAME_MAX) {
        *err = "Target command name is too long";
        return K_ERR;
    }
    const char *fullname = cmd->fullname;
    command_unregister(cmd->name);
    if (!len) return K_OK;
    command *copy = km_alloc(sizeof(*copy));
    *copy = *cmd;
    char *name = km_strdup(to);
    for (char *p = name; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    copy->name = name;
    renamed = km_realloc(renamed, sizeof(*renamed) * (renamed_count + 1));
    renamed[renamed_count++] = copy;
    return command_link(copy, fullname);
}

int command_unregister(const char *name) {
    void *popped;
    if (!hashtable_delete(commands, name, strlen(name), &popped)) return K_ERR;
    command_release_names(popped, NULL);
    return K_OK;
}

size_t command_count(void) {
    return hashtable_size(commands);
}

void command_foreach(void (*fn)(command *cmd, void *priv), void *priv) {
    hashtable_iter it;
    void *entry;
    hashtable_iter_init(&it, commands, 0);
    while (hashtable_iter_next(&it, &entry))
        fn(entry, priv);
    hashtable_iter_reset(&it);
}

typedef struct foreach_all_ctx {
    void (*fn)(command *cmd, void *priv);
    void *priv;
} foreach_all_ctx;

static void command_visit_all(command *cmd, void *priv) {
    foreach_all_ctx *ctx = priv;
    ctx->fn(cmd, ctx->priv);
    for (command *sub = cmd->subcommands; sub && sub->name; sub++)
        ctx->fn(sub, ctx->priv);
}

void command_foreach_all(void (*fn)(command *cmd, void *priv), void *priv) {
    foreach_all_ctx ctx = {fn, priv};
    command_foreach(command_visit_all, &ctx);
}

int command_key_specs(const command *cmd, const key_spec **specs, key_spec *tmp) {
    if (cmd->docs) {
        *specs = cmd->docs->key_specs;
        return cmd->docs->num_key_specs;
    }
    if (cmd->first_key <= 0) {
        *specs = NULL;
        return 0;
    }
    /* As Valkey gives module commands registered with first/last/step. */
    *tmp = (key_spec){
        .flags = KEY_SPEC_RW | KEY_SPEC_ACCESS | KEY_SPEC_UPDATE,
        .begin = KEY_BEGIN_INDEX,
        .bs.index = cmd->first_key,
        .find = KEY_FIND_RANGE,
        .fk.range = {cmd->last_key < 0 ? cmd->last_key : cmd->last_key - cmd->first_key,
                     cmd->key_step, 0},
    };
    *specs = tmp;
    return 1;
}

int command_has_keys(const command *cmd) {
    key_spec tmp;
    const key_spec *specs;
    int n = command_key_specs(cmd, &specs, &tmp);
    for (int i = 0; i < n; i++)
        if (!(specs[i].flags & KEY_SPEC_NOT_KEY)) return 1;
    return cmd->docs && cmd->docs->get_keys;
}

void command_legacy_range(const command *cmd, int *first, int *last, int *step) {
    key_spec tmp;
    const key_spec *specs;
    int n = command_key_specs(cmd, &specs, &tmp);
    *first = *last = *step = 0;
    if (n == 1 && specs[0].begin == KEY_BEGIN_INDEX && specs[0].find == KEY_FIND_RANGE) {
        *first = specs[0].bs.index;
        *last = specs[0].fk.range.lastkey;
        if (*last >= 0) *last += *first;
        *step = specs[0].fk.range.step;
        return;
    }
    /* Several specs: the plain consecutive ranges among them, merged. */
    int lo = 0, hi = 0, prev_last = 0;
    for (int i = 0; i < n; i++) {
        const key_spec *ks = &specs[i];
        if (ks->begin != KEY_BEGIN_INDEX || ks->find != KEY_FIND_RANGE) continue;
        if (ks->fk.range.step != 1 || (prev_last && prev_last != ks->bs.index - 1)) continue;
        if (!lo || ks->bs.index < lo) lo = ks->bs.index;
        int abs_last = ks->fk.range.lastkey;
        if (abs_last >= 0) abs_last += ks->bs.index;
        /* Unsigned, as Valkey: a negative (from the end) last wins. */
        hi = (unsigned)hi > (unsigned)abs_last ? hi : abs_last;
        prev_last = hi;
    }
    if (!lo) return;
    *first = lo;
    *last = hi;
    *step = 1;
}

/* The first key position of spec ks in the call, or 0 if its keyword is
 * absent. */
static int key_spec_begin(const key_spec *ks, const karg *argv, int argc) {
    if (ks->begin == KEY_BEGIN_INDEX) return ks->bs.index;
    int from = ks->bs.keyword.startfrom;
    int start = from > 0 ? from : argc + from;
    int end = from > 0 ? argc - 1 : 1;
    size_t kwlen = strlen(ks->bs.keyword.keyword);
    for (int i = start; i != end; i = start <= end ? i + 1 : i - 1) {
        if (i >= argc || i < 1) break;
        if (argv[i].len == kwlen && strncasecmp(argv[i].ptr, ks->bs.keyword.keyword, kwlen) == 0)
            return i + 1;
    }
    return 0;
}

/* Valkey's getKeysUsingKeySpecs: -1 when a spec does not fit the call (or
 * is incomplete), else the count. Without argv, specs that need the
 * arguments' values are skipped. */
static int command_keys_from_specs(const command *cmd, const karg *argv, int argc, key_ref *keys,
                                   int maxkeys) {
    key_spec tmp;
    const key_spec *specs;
    int nspecs = command_key_specs(cmd, &specs, &tmp);
    int n = 0;
    for (int s = 0; s < nspecs; s++) {
        const key_spec *ks = &specs[s];
        if (ks->flags & KEY_SPEC_NOT_KEY) continue;
        if (!argv && (ks->begin != KEY_BEGIN_INDEX || ks->find != KEY_FIND_RANGE)) continue;
        if (ks->begin == KEY_BEGIN_UNKNOWN) return -1; /* the get-keys function knows */
        int first = key_spec_begin(ks, argv, argc), last, step;
        if (!first) continue;
        if (ks->find == KEY_FIND_RANGE) {
            step = ks->fk.range.step;
            if (ks->fk.range.lastkey >= 0)
                last = first + ks->fk.range.lastkey;
            else if (!ks->fk.range.limit)
                last = argc + ks->fk.range.lastkey;
            else
                last = first + ((argc - first) / ks->fk.range.limit + ks->fk.range.lastkey);
        } else {
            step = ks->fk.keynum.step;
            int idx = first + ks->fk.keynum.keynumidx;
            long long numkeys;
            if (idx >= argc || !str_to_ll(argv[idx].ptr, argv[idx].len, &numkeys) || numkeys < 0 ||
                numkeys > argc)
                return -1;
            first += ks->fk.keynum.firstkey;
            /* numkeys keys, step apart (MSETEX: key value pairs). */
            last = first + ((int)numkeys - 1) * step;
        }
        if (last >= argc || last < first || first >= argc) return -1;
        /* Commands of variable arity check their arguments when they run:
         * a range past the end just yields fewer keys. */
        for (int i = first; i <= last && i < argc && n < maxkeys; i += step) {
            keys[n].pos = i;
            keys[n].flags = ks->flags;
            n++;
        }
        if (ks->flags & KEY_SPEC_INCOMPLETE) return -1;
    }
    return n;
}

int command_find_keys(const command *cmd, const karg *argv, int argc, key_ref *keys, int maxkeys) {
    key_spec tmp;
    const key_spec *specs;
    int nspecs = command_key_specs(cmd, &specs, &tmp);
    int has_keys = 0, variable = 0;
    for (int i = 0; i < nspecs; i++) {
        has_keys |= !(specs[i].flags & KEY_SPEC_NOT_KEY);
        variable |= (specs[i].flags & KEY_SPEC_VARIABLE_FLAGS) != 0;
    }
    /* The specs first, unless their flags depend on the arguments; a
     * command's own lookup covers what they cannot describe. */
    if (has_keys && !variable) {
        int n = command_keys_from_specs(cmd, argv, argc, keys, maxkeys);
        if (n >= 0) return n;
    }
    if (argv && cmd->docs && cmd->docs->get_keys)
        return cmd->docs->get_keys(argv, argc, keys, maxkeys);
    return 0;
}

int command_get_keys(const command *cmd, int argc, int *keys, int maxkeys) {
    key_ref refs[256];
    if (maxkeys > (int)K_ARRAY_LEN(refs)) maxkeys = (int)K_ARRAY_LEN(refs);
    int n = command_keys_from_specs(cmd, NULL, argc, refs, maxkeys);
    for (int i = 0; i < n; i++)
        keys[i] = refs[i].pos;
    return n < 0 ? 0 : n;
}

int command_set_get_keys(const karg *argv, int argc, key_ref *keys, int maxkeys) {
    if (maxkeys < 1 || argc < 2) return 0;
    keys[0].pos = 1;
    keys[0].flags = KEY_SPEC_OW | KEY_SPEC_UPDATE;
    /* GET reads the old value: the key is then read as well as written. */
    for (int i = 3; i < argc; i++)
        if (karg_eq(&argv[i], "get"))
            keys[0].flags = KEY_SPEC_RW | KEY_SPEC_ACCESS | KEY_SPEC_UPDATE;
    return 1;
}

int command_sort_get_keys(const karg *argv, int argc, key_ref *keys, int maxkeys) {
    if (maxkeys < 2 || argc < 2) return 0;
    keys[0].pos = 1;
    keys[0].flags = KEY_SPEC_RO | KEY_SPEC_ACCESS;
    int n = 1;
    /* Option values are skipped (a GET pattern may read "store"); the last
     * STORE wins, as SORT itself takes the last one. */
    for (int i = 2; i < argc; i++) {
        if (karg_eq(&argv[i], "limit")) {
            i += 2;
        } else if (karg_eq(&argv[i], "get") || karg_eq(&argv[i], "by")) {
            i += 1;
        } else if (karg_eq(&argv[i], "store") && i + 1 < argc) {
            keys[1].pos = i + 1;
            keys[1].flags = KEY_SPEC_OW | KEY_SPEC_UPDATE;
            n = 2;
        }
    }
    return n;
}

int command_sort_ro_get_keys(const karg *argv, int argc, key_ref *keys, int maxkeys) {
    K_UNUSED(argv);
    if (maxkeys < 1 || argc < 2) return 0;
    keys[0].pos = 1;
    keys[0].flags = KEY_SPEC_RO | KEY_SPEC_ACCESS;
    return 1;
}

static const char *const acl_category_names[] = {
    "keyspace", "read",   "write",       "set",       "sortedset",  "list",        "hash",
    "string",   "bitmap", "hyperloglog", "geo",       "stream",     "pubsub",      "admin",
    "fast",     "slow",   "blocking",    "dangerous", "connection", "transaction", "scripting",
};

uint32_t command_acl_categories(const command *cmd) {
    uint32_t cats = cmd->docs ? cmd->docs->acl_categories : 0;
    /* Implied by the flags, as Valkey's setImplicitACLCategories. */
    if (cmd->flags & CMD_WRITE) cats |= ACL_CAT_WRITE;
    if ((cmd->flags & CMD_READONLY) && !(cats & ACL_CAT_SCRIPTING)) cats |= ACL_CAT_READ;
    if (cmd->flags & CMD_ADMIN) cats |= ACL_CAT_ADMIN | ACL_CAT_DANGEROUS;
    if (cmd->flags & CMD_PUBSUB) cats |= ACL_CAT_PUBSUB;
    if (cmd->flags & CMD_FAST) cats |= ACL_CAT_FAST;
    if (cmd->flags & CMD_BLOCKING) cats |= ACL_CAT_BLOCKING;
    if (!(cats & ACL_CAT_FAST)) cats |= ACL_CAT_SLOW;
    return cats;
}

uint32_t command_acl_category(const char *name) {
    for (size_t i = 0; i < K_ARRAY_LEN(acl_category_names); i++)
        if (!strcasecmp(name, acl_category_names[i])) return 1u << i;
    return 0;
}

int command_acl_category_names(uint32_t cats, const char **out, int max) {
    int n = 0;
    for (size_t i = 0; i < K_ARRAY_LEN(acl_category_names) && n < max; i++)
        if (cats & (1u << i)) out[n++] = acl_category_names[i];
    return n;
}

static const struct {
    uint32_t flag;
    const char *name;
} command_flag_table[] = {
    {CMD_WRITE, "write"},
    {CMD_READONLY, "readonly"},
    {CMD_DENYOOM, "denyoom"},
    {CMD_MODULE, "module"},
    {CMD_ADMIN, "admin"},
    {CMD_PUBSUB, "pubsub"},
    {CMD_NOSCRIPT, "noscript"},
    {CMD_BLOCKING, "blocking"},
    {CMD_LOADING, "loading"},
    {CMD_STALE, "stale"},
    {CMD_SKIP_MONITOR, "skip_monitor"},
    {CMD_SKIP_SLOWLOG, "skip_slowlog"},
    {CMD_ASKING, "asking"},
    {CMD_FAST, "fast"},
    {CMD_NO_AUTH, "no_auth"},
    /* may_replicate is not listed: Valkey hides it from COMMAND INFO. */
    {CMD_NO_MANDATORY_KEYS, "no_mandatory_keys"},
    {CMD_NO_ASYNC_LOADING, "no_async_loading"},
    {CMD_NO_MULTI, "no_multi"},
    {CMD_MOVABLE_KEYS, "movablekeys"},
    {CMD_ALLOW_BUSY, "allow_busy"},
};

int command_flag_names(const command *cmd, const char **out, int max) {
    int n = 0;
    for (size_t i = 0; i < K_ARRAY_LEN(command_flag_table) && n < max; i++)
        if (cmd->flags & command_flag_table[i].flag) out[n++] = command_flag_table[i].name;
    return n;
}

static void command_reset_one(command *cmd, void *priv) {
    cmd->calls = cmd->usec = cmd->rejected_calls = cmd->failed_calls = 0;
}

void command_reset_stats(void) {
    command_foreach_all(command_reset_one, NULL);
}
