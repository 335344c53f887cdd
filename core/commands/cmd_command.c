/* cmd_command.c -- the COMMAND command and its subcommands (COUNT, INFO,
 * DOCS, LIST, GETKEYS, GETKEYSANDFLAGS, HELP): the command table described
 * to clients in the shapes Valkey 8.0.1 replies, from the family tables and
 * the metadata command.c attached from command_docs.c. */
#include "commands/commands.h"

#include "common/common.h"
#include "common/kmem.h"
#include "ds/glob.h"
#include "session/reply.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Replies the names of the bits of flags that names[] lists, as a set of
 * simple strings (Valkey's addReplyCommandFlags). */
typedef struct flag_name {
    uint32_t flag;
    const char *name;
} flag_name;

static void reply_flag_set(client *c, uint32_t flags, const flag_name *names, size_t count) {
    long long n = 0;
    for (size_t i = 0; i < count; i++)
        n += (flags & names[i].flag) != 0;
    reply_set(c, n);
    for (size_t i = 0; i < count; i++)
        if (flags & names[i].flag) reply_simple(c, names[i].name);
}

static const flag_name key_flag_names[] = {
    {KEY_SPEC_RO, "RO"},
    {KEY_SPEC_RW, "RW"},
    {KEY_SPEC_OW, "OW"},
    {KEY_SPEC_RM, "RM"},
    {KEY_SPEC_ACCESS, "access"},
    {KEY_SPEC_UPDATE, "update"},
    {KEY_SPEC_INSERT, "insert"},
    {KEY_SPEC_DELETE, "delete"},
    {KEY_SPEC_NOT_KEY, "not_key"},
    {KEY_SPEC_INCOMPLETE, "incomplete"},
    {KEY_SPEC_VARIABLE_FLAGS, "variable_flags"},
};

static const flag_name arg_flag_names[] = {
    {ARG_OPTIONAL, "optional"},
    {ARG_MULTIPLE, "multiple"},
    {ARG_MULTIPLE_TOKEN, "multiple_token"},
};

static const flag_name doc_flag_names[] = {
    {CMD_DOC_DEPRECATED, "deprecated"},
    {CMD_DOC_SYSCMD, "syscmd"},
};

static const char *const arg_type_names[] = {
    [ARG_STRING] = "string",         [ARG_INTEGER] = "integer",
    [ARG_DOUBLE] = "double",         [ARG_KEY] = "key",
    [ARG_PATTERN] = "pattern",       [ARG_UNIX_TIME] = "unix-time",
    [ARG_PURE_TOKEN] = "pure-token", [ARG_ONEOF] = "oneof",
    [ARG_BLOCK] = "block",
};

static long long subcommand_count(const command *cmd) {
    long long n = 0;
    for (const command *sub = cmd->subcommands; sub && sub->name; sub++)
        n++;
    return n;
}

/* "config|get" names a subcommand; more than one '|' names nothing. */
static command *command_by_fullname(const char *name, size_t len) {
    const char *bar = memchr(name, '|', len);
    if (!bar) return command_lookup(name, len);
    command *base = command_lookup(name, (size_t)(bar - name));
    if (!base || !base->subcommands) return NULL;
    size_t sublen = len - (size_t)(bar - name) - 1;
    if (memchr(bar + 1, '|', sublen)) return NULL;
    return command_lookup_sub(base, bar + 1, sublen);
}

static const char *command_group(const command *cmd) {
    if (cmd->module) return "module";
    if (cmd->docs) return cmd->docs->group;
    if (cmd->group) return cmd->group;
    return cmd->parent ? command_group(cmd->parent) : "server";
}

/* ---- COMMAND INFO ---- */

static void reply_cmd_flags(client *c, const command *cmd) {
    const char *names[32];
    int n = command_flag_names(cmd, names, 32);
    reply_set(c, n);
    for (int i = 0; i < n; i++)
        reply_simple(c, names[i]);
}

static void reply_acl_categories(client *c, const command *cmd) {
    const char *names[32];
    int n = command_acl_category_names(command_acl_categories(cmd), names, 32);
    reply_set(c, n);
    for (int i = 0; i < n; i++) {
        char buf[32];
        snprintf(buf, sizeof(buf), "@%s", names[i]);
        reply_simple(c, buf);
    }
}

static void reply_key_spec(client *c, const key_spec *ks) {
    reply_map(c, 3);
    reply_bulk_cstr(c, "flags");
    reply_flag_set(c, ks->flags, key_flag_names, K_ARRAY_LEN(key_flag_names));
    reply_bulk_cstr(c, "begin_search");
    reply_map(c, 2);
    reply_bulk_cstr(c, "type");
    if (ks->begin == KEY_BEGIN_INDEX) {
        reply_bulk_cstr(c, "index");
        reply_bulk_cstr(c, "spec");
        reply_map(c, 1);
        reply_bulk_cstr(c, "index");
        reply_int(c, ks->bs.index);
    } else if (ks->begin == KEY_BEGIN_KEYWORD) {
        reply_bulk_cstr(c, "keyword");
        reply_bulk_cstr(c, "spec");
        reply_map(c, 2);
        reply_bulk_cstr(c, "keyword");
        reply_bulk_cstr(c, ks->bs.keyword.keyword);
        reply_bulk_cstr(c, "startfrom");
        reply_int(c, ks->bs.keyword.startfrom);
    } else {
        reply_bulk_cstr(c, "unknown");
        reply_bulk_cstr(c, "spec");
        reply_map(c, 0);
    }
    reply_bulk_cstr(c, "find_keys");
    reply_map(c, 2);
    reply_bulk_cstr(c, "type");
    if (ks->find == KEY_FIND_RANGE) {
        reply_bulk_cstr(c, "range");
        reply_bulk_cstr(c, "spec");
        reply_map(c, 3);
        reply_bulk_cstr(c, "lastkey");
        reply_int(c, ks->fk.range.lastkey);
        reply_bulk_cstr(c, "keystep");
        reply_int(c, ks->fk.range.step);
        reply_bulk_cstr(c, "limit");
        reply_int(c, ks->fk.range.limit);
    } else if (ks->find == KEY_FIND_UNKNOWN) {
        reply_bulk_cstr(c, "unknown");
        reply_bulk_cstr(c, "spec");
        reply_map(c, 0);
    } else {
        reply_bulk_cstr(c, "keynum");
        reply_bulk_cstr(c, "spec");
        reply_map(c, 3);
        reply_bulk_cstr(c, "keynumidx");
        reply_int(c, ks->fk.keynum.keynumidx);
        reply_bulk_cstr(c, "firstkey");
        reply_int(c, ks->fk.keynum.firstkey);
        reply_bulk_cstr(c, "keystep");
        reply_int(c, ks->fk.keynum.step);
    }
}

/* Valkey's 10 elements: name, arity, flags, first key, last key, step, ACL
 * categories, tips, key specs, subcommands. */
static void reply_command_info(client *c, const command *cmd) {
    if (!cmd) {
        reply_null(c);
        return;
    }
    int first, last, step;
    command_legacy_range(cmd, &first, &last, &step);
    reply_array(c, 10);
    reply_bulk_cstr(c, cmd->fullname);
    reply_int(c, cmd->arity);
    reply_cmd_flags(c, cmd);
    reply_int(c, first);
    reply_int(c, last);
    reply_int(c, step);
    reply_acl_categories(c, cmd);
    int ntips = cmd->docs ? cmd->docs->num_tips : 0;
    reply_set(c, ntips);
    for (int i = 0; i < ntips; i++)
        reply_bulk_cstr(c, cmd->docs->tips[i]);
    key_spec tmp;
    const key_spec *specs;
    int nspecs = command_key_specs(cmd, &specs, &tmp);
    reply_set(c, nspecs);
    for (int i = 0; i < nspecs; i++)
        reply_key_spec(c, &specs[i]);
    if (!cmd->subcommands) {
        reply_set(c, 0);
        return;
    }
    reply_array(c, subcommand_count(cmd));
    for (const command *sub = cmd->subcommands; sub->name; sub++)
        reply_command_info(c, sub);
}

static void command_info_cb(command *cmd, void *priv) {
    reply_command_info(priv, cmd);
}

static void cmd_command(client *c) {
    reply_array(c, (long long)command_count());
    command_foreach(command_info_cb, c);
}

static void command_info(client *c) {
    if (c->argc == 2) {
        cmd_command(c);
        return;
    }
    reply_array(c, c->argc - 2);
    for (int i = 2; i < c->argc; i++)
        reply_command_info(c, command_by_fullname(c->argv[i].ptr, c->argv[i].len));
}

/* ---- COMMAND DOCS ---- */

static void reply_args(client *c, const command_arg *args, int n) {
    reply_array(c, n);
    for (int i = 0; i < n; i++) {
        const command_arg *a = &args[i];
        int nested = a->type == ARG_ONEOF || a->type == ARG_BLOCK;
        /* name, type, and display_text or arguments */
        long long fields = 3 + (a->key_spec_index >= 0) + (a->token != NULL) + (a->since != NULL) +
                           (a->deprecated_since != NULL) + (a->flags != 0);
        reply_map(c, fields);
        reply_bulk_cstr(c, "name");
        reply_bulk_cstr(c, a->name);
        reply_bulk_cstr(c, "type");
        reply_bulk_cstr(c, arg_type_names[a->type]);
        if (!nested) {
            reply_bulk_cstr(c, "display_text");
            reply_bulk_cstr(c, a->display ? a->display : a->name);
        }
        if (a->key_spec_index >= 0) {
            reply_bulk_cstr(c, "key_spec_index");
            reply_int(c, a->key_spec_index);
        }
        if (a->token) {
            reply_bulk_cstr(c, "token");
            reply_bulk_cstr(c, a->token);
        }
        if (a->since) {
            reply_bulk_cstr(c, "since");
            reply_bulk_cstr(c, a->since);
        }
        if (a->deprecated_since) {
            reply_bulk_cstr(c, "deprecated_since");
            reply_bulk_cstr(c, a->deprecated_since);
        }
        if (a->flags) {
            reply_bulk_cstr(c, "flags");
            reply_flag_set(c, a->flags, arg_flag_names, K_ARRAY_LEN(arg_flag_names));
        }
        if (nested) {
            reply_bulk_cstr(c, "arguments");
            reply_args(c, a->subargs, a->num_args);
        }
    }
}

static void reply_command_docs(client *c, const command *cmd) {
    const command_docs *d = cmd->docs;
    const char *since = d ? d->since : cmd->since;
    const char *complexity = d ? d->complexity : NULL;
    long long fields = 1 + (cmd->summary != NULL) + (since != NULL) + (complexity != NULL) +
                       (cmd->module != NULL) + (d && d->doc_flags) + (d && d->deprecated_since) +
                       (d && d->replaced_by) + (d && d->num_args) + (cmd->subcommands != NULL);
    reply_map(c, fields);
    if (cmd->summary) {
        reply_bulk_cstr(c, "summary");
        reply_bulk_cstr(c, cmd->summary);
    }
    if (since) {
        reply_bulk_cstr(c, "since");
        reply_bulk_cstr(c, since);
    }
    reply_bulk_cstr(c, "group");
    reply_bulk_cstr(c, command_group(cmd));
    if (complexity) {
        reply_bulk_cstr(c, "complexity");
        reply_bulk_cstr(c, complexity);
    }
    if (cmd->module) {
        reply_bulk_cstr(c, "module");
        reply_bulk_cstr(c, cmd->module_name);
    }
    if (d && d->doc_flags) {
        reply_bulk_cstr(c, "doc_flags");
        reply_flag_set(c, d->doc_flags, doc_flag_names, K_ARRAY_LEN(doc_flag_names));
    }
    if (d && d->deprecated_since) {
        reply_bulk_cstr(c, "deprecated_since");
        reply_bulk_cstr(c, d->deprecated_since);
    }
    if (d && d->replaced_by) {
        reply_bulk_cstr(c, "replaced_by");
        reply_bulk_cstr(c, d->replaced_by);
    }
    if (d && d->num_args) {
        reply_bulk_cstr(c, "arguments");
        reply_args(c, d->args, d->num_args);
    }
    if (cmd->subcommands) {
        reply_bulk_cstr(c, "subcommands");
        reply_map(c, subcommand_count(cmd));
        for (const command *sub = cmd->subcommands; sub->name; sub++) {
            reply_bulk_cstr(c, sub->fullname);
            reply_command_docs(c, sub);
        }
    }
}

static void command_docs_cb(command *cmd, void *priv) {
    reply_bulk_cstr(priv, cmd->fullname);
    reply_command_docs(priv, cmd);
}

static void command_docs_cmd(client *c) {
    if (c->argc == 2) {
        reply_map(c, (long long)command_count());
        command_foreach(command_docs_cb, c);
        return;
    }
    /* Unknown names are left out of the map. */
    int found = 0;
    for (int i = 2; i < c->argc; i++)
        found += command_by_fullname(c->argv[i].ptr, c->argv[i].len) != NULL;
    reply_map(c, found);
    for (int i = 2; i < c->argc; i++) {
        command *cmd = command_by_fullname(c->argv[i].ptr, c->argv[i].len);
        if (cmd) command_docs_cb(cmd, c);
    }
}

/* ---- COMMAND COUNT, LIST ---- */

static void command_count_cmd(client *c) {
    reply_int(c, (long long)command_count());
}

typedef enum { LIST_ALL, LIST_MODULE, LIST_ACLCAT, LIST_PATTERN } list_filter_type;

typedef struct list_filter {
    client *c;
    list_filter_type type;
    const karg *arg;
    uint32_t aclcat;
    long long count;
} list_filter;

static int list_filter_match(const list_filter *f, const command *cmd) {
    switch (f->type) {
    case LIST_MODULE:
        return cmd->module && strlen(cmd->module_name) == f->arg->len &&
               !strncasecmp(cmd->module_name, f->arg->ptr, f->arg->len);
    case LIST_ACLCAT:
        return (command_acl_categories(cmd) & f->aclcat) != 0;
    case LIST_PATTERN:
        return glob_match(f->arg->ptr, f->arg->len, cmd->fullname, strlen(cmd->fullname), 1);
    case LIST_ALL:
        break;
    }
    return 1;
}

/* Counts (c NULL) or replies the matching names, subcommands included. */
static void command_list_cb(command *cmd, void *priv) {
    list_filter *f = priv;
    if (!list_filter_match(f, cmd)) return;
    f->count++;
    if (f->c) reply_bulk_cstr(f->c, cmd->fullname);
}

/* COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern] */
static void command_list(client *c) {
    list_filter f = {.type = LIST_ALL};
    for (int i = 2; i < c->argc; i += 3) {
        const karg *kind = &c->argv[i + 1];
        if (!karg_eq(&c->argv[i], "filterby") || c->argc - 1 - i != 2) {
            reply_syntax_error(c);
            return;
        }
        if (karg_eq(kind, "module"))
            f.type = LIST_MODULE;
        else if (karg_eq(kind, "aclcat"))
            f.type = LIST_ACLCAT;
        else if (karg_eq(kind, "pattern"))
            f.type = LIST_PATTERN;
        else {
            reply_syntax_error(c);
            return;
        }
        f.arg = &c->argv[i + 2];
    }
    if (f.type == LIST_ACLCAT) {
        char name[64];
        size_t len = f.arg->len < sizeof(name) - 1 ? f.arg->len : sizeof(name) - 1;
        memcpy(name, f.arg->ptr, len);
        name[len] = '\0';
        /* An unknown category (or a longer name) matches nothing. */
        f.aclcat = len == f.arg->len ? command_acl_category(name) : 0;
    }
    command_foreach_all(command_list_cb, &f);
    reply_array(c, f.count);
    f.c = c;
    command_foreach_all(command_list_cb, &f);
}

/* ---- COMMAND GETKEYS, GETKEYSANDFLAGS ---- */

/* The command a full call names: a container's subcommand is argv[1]. */
static command *command_of_call(const karg *argv, int argc) {
    command *cmd = command_lookup(argv[0].ptr, argv[0].len);
    if (!cmd || argc == 1 || !cmd->subcommands) return cmd;
    return command_lookup_sub(cmd, argv[1].ptr, argv[1].len);
}

static void command_getkeys_reply(client *c, int with_flags) {
    const karg *argv = c->argv + 2;
    int argc = c->argc - 2;
    command *cmd = command_of_call(argv, argc);
    if (!cmd) {
        reply_error(c, "ERR Invalid command specified");
        return;
    }
    if (!command_has_keys(cmd)) {
        reply_error(c, "ERR The command has no key arguments");
        return;
    }
    if ((cmd->arity > 0 && cmd->arity != argc) || argc < -cmd->arity) {
        reply_error(c, "ERR Invalid number of arguments specified for command");
        return;
    }
    /* A call has at most one key per argument. */
    key_ref *keys = km_alloc(sizeof(*keys) * (size_t)argc);
    int n = command_find_keys(cmd, argv, argc, keys, argc);
    if (n == 0 && !(cmd->flags & CMD_NO_MANDATORY_KEYS)) {
        reply_error(c, "ERR Invalid arguments specified for command");
    } else {
        reply_array(c, n);
        for (int i = 0; i < n; i++) {
            if (with_flags) reply_array(c, 2);
            reply_bulk(c, argv[keys[i].pos].ptr, argv[keys[i].pos].len);
            if (with_flags)
                reply_flag_set(c, keys[i].flags, key_flag_names, K_ARRAY_LEN(key_flag_names));
        }
    }
    km_free(keys);
}

static void command_getkeys(client *c) {
    command_getkeys_reply(c, 0);
}

static void command_getkeysandflags(client *c) {
    command_getkeys_reply(c, 1);
}

static void command_help(client *c) {
    static const char *const help[] = {
        "(no subcommand)",
        "    Return details about all commands.",
        "COUNT",
        "    Return the total number of commands in this server.",
        "LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
        "    Return a list of all commands in this server, or those matching the filter.",
        "INFO [<command-name> ...]",
        "    Return details about multiple commands (all without names).",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple commands (all without names).",
        "GETKEYS <full-command>",
        "    Return the keys from a full command.",
        "GETKEYSANDFLAGS <full-command>",
        "    Return the keys and how the command accesses them, from a full command.",
    };
    reply_help(c, "COMMAND", help, K_ARRAY_LEN(help));
}

#define SUB(n, p, a, s)                                                                            \
    { .name = n, .proc = p, .arity = a, .flags = CMD_LOADING | CMD_STALE, .summary = s }

static command command_subcommands[] = {
    SUB("count", command_count_cmd, 2, "Counts the commands the server knows."),
    SUB("info", command_info, -2,
        "Describes some or all commands: arity, flags, keys, categories."),
    SUB("docs", command_docs_cmd, -2,
        "Documents some or all commands: summary, group, complexity, arguments."),
    SUB("list", command_list, -2, "Lists command names, optionally filtered."),
    SUB("getkeys", command_getkeys, -3, "Finds the keys in a full command line."),
    SUB("getkeysandflags", command_getkeysandflags, -3,
        "Finds the keys in a full command line, and how the command uses each."),
    SUB("help", command_help, 2, "Explains the subcommands."),
    {.name = NULL},
};

static command command_table[] = {
    {.name = "command",
     .proc = cmd_command,
     .arity = -1,
     .flags = CMD_LOADING | CMD_STALE,
     .group = "server",
     .since = "2.8.13",
     .summary = "Describes all commands the server knows.",
     .subcommands = command_subcommands},
};

const command_family commands_command = {command_table, K_ARRAY_LEN(command_table)};
