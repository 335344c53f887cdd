/* check_command.c -- unit tests for the command metadata: every built-in
 * gets its command_docs.c entry, and key extraction from key specs (index,
 * keyword and keynum searches, ranges with limits, incomplete specs, the
 * legacy triple, movablekeys) follows Valkey 8.0.1's rules. The keyword and
 * keynum specs below are Valkey's for SORT, ZUNIONSTORE and MIGRATE, on
 * stand-in commands (Keel has none of those yet). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/command.h"
#include "commands/commands.h"
#include "session/client.h"

/* argv from a space-separated line (at most 32 words of 31 bytes). */
typedef struct call {
    char words[32][32];
    karg argv[32];
    int argc;
} call;

static void call_parse(call *c, const char *line) {
    c->argc = 0;
    const char *p = line;
    while (*p && c->argc < 32) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (!n) break;
        memcpy(c->words[c->argc], p, n);
        c->words[c->argc][n] = '\0';
        c->argv[c->argc] = (karg){.ptr = c->words[c->argc], .len = n};
        c->argc++;
        p += n;
    }
}

/* "k1:RW,k2:OW" style rendering of the keys of a call: positions and the
 * access flag. */
static const char *keys_of(const command *cmd, const char *line) {
    static char out[512];
    call c;
    key_ref keys[32];
    call_parse(&c, line);
    int n = command_find_keys(cmd, c.argv, c.argc, keys, 32);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *f = keys[i].flags & KEY_SPEC_RO   ? "RO"
                        : keys[i].flags & KEY_SPEC_RW ? "RW"
                        : keys[i].flags & KEY_SPEC_OW ? "OW"
                                                      : "RM";
        size_t len = strlen(out);
        snprintf(out + len, sizeof(out) - len, "%s%s:%s", i ? "," : "", c.words[keys[i].pos], f);
    }
    return out;
}

static command *lookup(const char *fullname) {
    const char *bar = strchr(fullname, '|');
    if (!bar) return command_lookup(fullname, strlen(fullname));
    command *base = command_lookup(fullname, (size_t)(bar - fullname));
    return base ? command_lookup_sub(base, bar + 1, strlen(bar + 1)) : NULL;
}

/* The built-in families alone: no keyspace, no server. */
static const commands_env no_env;

static void setup(void) {
    command_setup();
    commands_setup(&no_env);
}

static void teardown(void) {
    commands_teardown();
    command_teardown();
}

static int missing_docs;
static void count_missing(command *cmd, void *priv) {
    (void)priv;
    if (!cmd->docs) missing_docs++;
}

START_TEST(test_every_builtin_has_docs) {
    missing_docs = 0;
    command_foreach_all(count_missing, NULL);
    ck_assert_int_eq(missing_docs, 0);
    ck_assert_ptr_nonnull(command_docs_lookup("client|list"));
    ck_assert_ptr_null(command_docs_lookup("no-such-command"));
    const command_docs *d = command_docs_lookup("getset");
    ck_assert_uint_eq(d->doc_flags, CMD_DOC_DEPRECATED);
    ck_assert_str_eq(d->deprecated_since, "6.2.0");
}
END_TEST

START_TEST(test_builtin_keys) {
    ck_assert_str_eq(keys_of(lookup("get"), "get k"), "k:RO");
    ck_assert_str_eq(keys_of(lookup("mset"), "mset a 1 b 2 c 3"), "a:OW,b:OW,c:OW");
    ck_assert_str_eq(keys_of(lookup("rename"), "rename a b"), "a:RW,b:OW");
    ck_assert_str_eq(keys_of(lookup("copy"), "copy a b db 1 replace"), "a:RO,b:OW");
    ck_assert_str_eq(keys_of(lookup("memory|usage"), "memory usage k samples 5"), "k:RO");
    ck_assert_str_eq(keys_of(lookup("object|encoding"), "object encoding k"), "k:RO");
    ck_assert_str_eq(keys_of(lookup("del"), "del a b"), "a:RM,b:RM");
    ck_assert_str_eq(keys_of(lookup("watch"), "watch a b"), "a:RO,b:RO");
    ck_assert_str_eq(keys_of(lookup("ping"), "ping"), "");
    ck_assert(!command_has_keys(lookup("ping")));
    ck_assert(command_has_keys(lookup("memory|usage")));
}
END_TEST

/* SET's key flags depend on GET (Valkey's variable_flags). */
START_TEST(test_set_variable_flags) {
    command *set = lookup("set");
    ck_assert_str_eq(keys_of(set, "set k v"), "k:OW");
    ck_assert_str_eq(keys_of(set, "set k v ex 10 GET"), "k:RW");
    ck_assert_str_eq(keys_of(set, "set k get"), "k:OW");
}
END_TEST

START_TEST(test_legacy_range_and_movable) {
    int first, last, step;
    command_legacy_range(lookup("mset"), &first, &last, &step);
    ck_assert_int_eq(first, 1);
    ck_assert_int_eq(last, -1);
    ck_assert_int_eq(step, 2);
    command_legacy_range(lookup("rename"), &first, &last, &step);
    ck_assert_int_eq(first, 1);
    ck_assert_int_eq(last, 2);
    ck_assert_int_eq(step, 1);
    command_legacy_range(lookup("memory|usage"), &first, &last, &step);
    ck_assert_int_eq(first, 2);
    ck_assert_int_eq(last, 2);
    command_legacy_range(lookup("ping"), &first, &last, &step);
    ck_assert_int_eq(first + last + step, 0);
    ck_assert(!(lookup("set")->flags & CMD_MOVABLE_KEYS));
    ck_assert(!(lookup("mset")->flags & CMD_MOVABLE_KEYS));
    int keys[8];
    ck_assert_int_eq(command_get_keys(lookup("mset"), 5, keys, 8), 2);
    ck_assert_int_eq(keys[0], 1);
    ck_assert_int_eq(keys[1], 3);
}
END_TEST

/* A module command: one range spec from its first/last/step. */
START_TEST(test_module_range_spec) {
    command mod = {.name = "m", .arity = -2, .first_key = 1, .last_key = -1, .key_step = 2};
    key_spec tmp;
    const key_spec *specs;
    ck_assert_int_eq(command_key_specs(&mod, &specs, &tmp), 1);
    ck_assert_int_eq(specs[0].bs.index, 1);
    ck_assert_int_eq(specs[0].fk.range.lastkey, -1);
    ck_assert_uint_eq(specs[0].flags, KEY_SPEC_RW | KEY_SPEC_ACCESS | KEY_SPEC_UPDATE);
    ck_assert_str_eq(keys_of(&mod, "m a 1 b 2"), "a:RW,b:RW");
    command nokeys = {.name = "n", .arity = 1};
    ck_assert(!command_has_keys(&nokeys));
    ck_assert_uint_eq(command_acl_categories(&nokeys), ACL_CAT_SLOW);
}
END_TEST

/* A SORT-like command: key at 1, and the argument after STORE (Valkey's
 * SORT leaves that one to its own lookup; a keyword spec can say it). */
static const key_spec sort_specs[] = {
    {.flags = KEY_SPEC_RO | KEY_SPEC_ACCESS,
     .begin = KEY_BEGIN_INDEX,
     .bs.index = 1,
     .find = KEY_FIND_RANGE,
     .fk.range = {0, 1, 0}},
    {.flags = KEY_SPEC_OW | KEY_SPEC_UPDATE,
     .begin = KEY_BEGIN_KEYWORD,
     .bs.keyword = {"STORE", 1},
     .find = KEY_FIND_RANGE,
     .fk.range = {0, 1, 0}},
};
static const command_docs sort_docs = {
    .fullname = "sort", .key_specs = sort_specs, .num_key_specs = 2};

/* An incomplete spec cannot be relied on alone: without a lookup of the
 * command's own, no keys. */
static const key_spec incomplete_specs[] = {
    {.flags = KEY_SPEC_RO | KEY_SPEC_INCOMPLETE,
     .begin = KEY_BEGIN_INDEX,
     .bs.index = 1,
     .find = KEY_FIND_RANGE,
     .fk.range = {0, 1, 0}},
};
static const command_docs incomplete_docs = {
    .fullname = "inc", .key_specs = incomplete_specs, .num_key_specs = 1};

/* Valkey's ZUNIONSTORE: destination, then numkeys keys. */
static const key_spec zunionstore_specs[] = {
    {.flags = KEY_SPEC_OW | KEY_SPEC_UPDATE,
     .begin = KEY_BEGIN_INDEX,
     .bs.index = 1,
     .find = KEY_FIND_RANGE,
     .fk.range = {0, 1, 0}},
    {.flags = KEY_SPEC_RO | KEY_SPEC_ACCESS,
     .begin = KEY_BEGIN_INDEX,
     .bs.index = 2,
     .find = KEY_FIND_KEYNUM,
     .fk.keynum = {0, 1, 1}},
};
static const command_docs zunionstore_docs = {
    .fullname = "zunionstore", .key_specs = zunionstore_specs, .num_key_specs = 2};

/* Valkey's MIGRATE: KEYS searched backwards from the end (startfrom -2),
 * then every argument after it. */
static const key_spec migrate_specs[] = {
    {.flags = KEY_SPEC_RW | KEY_SPEC_ACCESS | KEY_SPEC_DELETE,
     .begin = KEY_BEGIN_KEYWORD,
     .bs.keyword = {"KEYS", -2},
     .find = KEY_FIND_RANGE,
     .fk.range = {-1, 1, 0}},
};
static const command_docs migrate_docs = {
    .fullname = "migrate", .key_specs = migrate_specs, .num_key_specs = 1};

/* Valkey's XREAD: after STREAMS, the first half of the rest (limit 2). */
static const key_spec xread_specs[] = {
    {.flags = KEY_SPEC_RO | KEY_SPEC_ACCESS,
     .begin = KEY_BEGIN_KEYWORD,
     .bs.keyword = {"STREAMS", 1},
     .find = KEY_FIND_RANGE,
     .fk.range = {-1, 1, 2}},
};
static const command_docs xread_docs = {
    .fullname = "xread", .key_specs = xread_specs, .num_key_specs = 1};

START_TEST(test_keyword_and_keynum_specs) {
    command sort = {.name = "sort", .arity = -2, .docs = &sort_docs};
    ck_assert_str_eq(keys_of(&sort, "sort k"), "k:RO");
    ck_assert_str_eq(keys_of(&sort, "sort k limit 0 1 store d"), "k:RO,d:OW");
    command inc = {.name = "inc", .arity = 2, .docs = &incomplete_docs};
    ck_assert_str_eq(keys_of(&inc, "inc k"), "");
    command zu = {.name = "zunionstore", .arity = -4, .docs = &zunionstore_docs};
    ck_assert_str_eq(keys_of(&zu, "zunionstore d 2 a b weights 1 2"), "d:OW,a:RO,b:RO");
    ck_assert_str_eq(keys_of(&zu, "zunionstore d 0"), "");
    /* A count beyond the arguments, or no number: the call does not fit. */
    ck_assert_str_eq(keys_of(&zu, "zunionstore d 5 a"), "");
    ck_assert_str_eq(keys_of(&zu, "zunionstore d x a"), "");
    command mig = {.name = "migrate", .arity = -6, .docs = &migrate_docs};
    ck_assert_str_eq(keys_of(&mig, "migrate h 1 \"\" 0 5 keys a b"), "a:RW,b:RW");
    ck_assert_str_eq(keys_of(&mig, "migrate h 1 k 0 5"), "");
    command xread = {.name = "xread", .arity = -4, .docs = &xread_docs};
    ck_assert_str_eq(keys_of(&xread, "xread count 2 streams a b 0 0"), "a:RO,b:RO");
    ck_assert_str_eq(keys_of(&xread, "xread count 2 a b 0 0"), "");
    int first, last, step;
    command_legacy_range(&zu, &first, &last, &step);
    ck_assert_int_eq(first, 1);
    ck_assert_int_eq(last, 1);
    ck_assert_int_eq(step, 1);
}
END_TEST

START_TEST(test_acl_categories) {
    const char *names[32];
    int n = command_acl_category_names(command_acl_categories(lookup("get")), names, 32);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(names[0], "read");
    ck_assert_str_eq(names[1], "string");
    ck_assert_str_eq(names[2], "fast");
    uint32_t cats = command_acl_categories(lookup("config|set"));
    ck_assert(cats & ACL_CAT_ADMIN);
    ck_assert(cats & ACL_CAT_DANGEROUS);
    ck_assert(cats & ACL_CAT_SLOW);
    ck_assert_uint_eq(command_acl_category("KEYSPACE"), ACL_CAT_KEYSPACE);
    ck_assert_uint_eq(command_acl_category("nope"), 0);
}
END_TEST

static Suite *command_suite(void) {
    Suite *s = suite_create("command");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_every_builtin_has_docs);
    tcase_add_test(tc, test_builtin_keys);
    tcase_add_test(tc, test_set_variable_flags);
    tcase_add_test(tc, test_legacy_range_and_movable);
    tcase_add_test(tc, test_module_range_spec);
    tcase_add_test(tc, test_keyword_and_keynum_specs);
    tcase_add_test(tc, test_acl_categories);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(command_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
