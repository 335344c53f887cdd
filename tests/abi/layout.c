/* layout.c -- prints the binary layout of the module ABI as a header defines
 * it: every member's offset and size, every struct's size, every constant.
 * Built against each frozen header (tests/abi/include for 1.0,
 * tests/abi/include-1.1) and against the current one (sdk/include);
 * abi_test.sh then requires every frozen offset, member size and constant to
 * be unchanged in the current header, every struct to be at least as large,
 * KEEL_ABI_MAJOR to be equal and KEEL_ABI_MINOR not smaller. That is the
 * growth rule of keel_module.h, checked mechanically.
 *
 * The list names exactly what the frozen headers have: what a minor added is
 * under `#if KEEL_ABI_MINOR >= <minor>`, so each frozen header prints only
 * its own ABI (the current header may have more, never less). Never edit an
 * entry; add nothing here unless a frozen header has it. */
#include <keel/keel_module.h>

#include <stddef.h>
#include <stdio.h>

#define MEMBER(T, m) printf("member %s.%s %zu %zu\n", #T, #m, offsetof(T, m), sizeof(((T *)0)->m))
#define SIZE(T) printf("size %s %zu\n", #T, sizeof(T))
#define CONST(c) printf("const %s %llu\n", #c, (unsigned long long)(c))

static void module_info(void) {
    SIZE(keel_module_info);
    MEMBER(keel_module_info, magic);
    MEMBER(keel_module_info, abi_major);
    MEMBER(keel_module_info, abi_minor);
    MEMBER(keel_module_info, size);
    MEMBER(keel_module_info, version);
    MEMBER(keel_module_info, name);
    MEMBER(keel_module_info, init);
    MEMBER(keel_module_info, deinit);
}

static void defs(void) {
    SIZE(keel_command_def);
    MEMBER(keel_command_def, size);
    MEMBER(keel_command_def, name);
    MEMBER(keel_command_def, fn);
    MEMBER(keel_command_def, arity);
    MEMBER(keel_command_def, flags);
    MEMBER(keel_command_def, first_key);
    MEMBER(keel_command_def, last_key);
    MEMBER(keel_command_def, key_step);
    MEMBER(keel_command_def, summary);
    SIZE(keel_type_def);
    MEMBER(keel_type_def, size);
    MEMBER(keel_type_def, name);
    MEMBER(keel_type_def, encver);
    MEMBER(keel_type_def, free);
    MEMBER(keel_type_def, mem_usage);
    MEMBER(keel_type_def, copy);
    MEMBER(keel_type_def, reserved);
    SIZE(keel_call_info);
    MEMBER(keel_call_info, size);
    MEMBER(keel_call_info, name);
    MEMBER(keel_call_info, flags);
    MEMBER(keel_call_info, client);
    MEMBER(keel_call_info, duration_us);
    MEMBER(keel_call_info, request_bytes);
    MEMBER(keel_call_info, reply_bytes);
    MEMBER(keel_call_info, failed);
    SIZE(keel_config_def);
    MEMBER(keel_config_def, size);
    MEMBER(keel_config_def, name);
    MEMBER(keel_config_def, type);
    MEMBER(keel_config_def, flags);
    MEMBER(keel_config_def, default_value);
    MEMBER(keel_config_def, min);
    MEMBER(keel_config_def, max);
    MEMBER(keel_config_def, enum_values);
    MEMBER(keel_config_def, apply);
    MEMBER(keel_config_def, priv);
    SIZE(keel_transport_def);
    MEMBER(keel_transport_def, size);
    MEMBER(keel_transport_def, name);
    MEMBER(keel_transport_def, accept);
    MEMBER(keel_transport_def, handshake);
    MEMBER(keel_transport_def, read);
    MEMBER(keel_transport_def, writev);
    MEMBER(keel_transport_def, has_pending);
    MEMBER(keel_transport_def, close);
    MEMBER(keel_transport_def, priv);
}

static void groups(void) {
    SIZE(keel_api);
    MEMBER(keel_api, size);
    MEMBER(keel_api, abi_major);
    MEMBER(keel_api, abi_minor);
    MEMBER(keel_api, core);
    MEMBER(keel_api, command);
    MEMBER(keel_api, keyspace);
    MEMBER(keel_api, hooks);
    MEMBER(keel_api, info);
    MEMBER(keel_api, transport);
    SIZE(keel_api_core);
    MEMBER(keel_api_core, size);
    MEMBER(keel_api_core, log);
    MEMBER(keel_api_core, set_error);
    MEMBER(keel_api_core, alloc);
    MEMBER(keel_api_core, calloc);
    MEMBER(keel_api_core, realloc);
    MEMBER(keel_api_core, free);
    MEMBER(keel_api_core, mstime);
    MEMBER(keel_api_core, ustime);
    MEMBER(keel_api_core, server_version);
    MEMBER(keel_api_core, config_get);
    SIZE(keel_api_command);
    MEMBER(keel_api_command, size);
    MEMBER(keel_api_command, register_command);
    MEMBER(keel_api_command, argc);
    MEMBER(keel_api_command, argv);
    MEMBER(keel_api_command, arg_ll);
    MEMBER(keel_api_command, reply_ok);
    MEMBER(keel_api_command, reply_simple);
    MEMBER(keel_api_command, reply_error);
    MEMBER(keel_api_command, reply_int);
    MEMBER(keel_api_command, reply_bulk);
    MEMBER(keel_api_command, reply_null);
    MEMBER(keel_api_command, reply_array);
    MEMBER(keel_api_command, reply_map);
    MEMBER(keel_api_command, reply_double);
    MEMBER(keel_api_command, reply_bool);
    MEMBER(keel_api_command, reply_verbatim);
    MEMBER(keel_api_command, reply_wrong_arity);
    MEMBER(keel_api_command, resp);
    MEMBER(keel_api_command, client);
    MEMBER(keel_api_command, client_id);
    MEMBER(keel_api_command, client_addr);
    MEMBER(keel_api_command, client_name);
    SIZE(keel_api_keyspace);
    MEMBER(keel_api_keyspace, size);
    MEMBER(keel_api_keyspace, key_open);
    MEMBER(keel_api_keyspace, key_close);
    MEMBER(keel_api_keyspace, key_type);
    MEMBER(keel_api_keyspace, string_get);
    MEMBER(keel_api_keyspace, string_set);
    MEMBER(keel_api_keyspace, key_delete);
    MEMBER(keel_api_keyspace, expire_get);
    MEMBER(keel_api_keyspace, expire_set);
    MEMBER(keel_api_keyspace, type_register);
    MEMBER(keel_api_keyspace, module_set);
    MEMBER(keel_api_keyspace, module_get);
    MEMBER(keel_api_keyspace, db_size);
    SIZE(keel_api_hooks);
    MEMBER(keel_api_hooks, size);
    MEMBER(keel_api_hooks, add_filter);
    MEMBER(keel_api_hooks, add_observer);
    MEMBER(keel_api_hooks, add_client_event);
    MEMBER(keel_api_hooks, timer_add);
    MEMBER(keel_api_hooks, timer_del);
    MEMBER(keel_api_hooks, add_cron);
    SIZE(keel_api_info);
    MEMBER(keel_api_info, size);
    MEMBER(keel_api_info, add_section);
    MEMBER(keel_api_info, field);
    MEMBER(keel_api_info, config_register);
    SIZE(keel_api_transport);
    MEMBER(keel_api_transport, size);
    MEMBER(keel_api_transport, register_transport);
    MEMBER(keel_api_transport, listen);
    MEMBER(keel_api_transport, conn_fd);
    MEMBER(keel_api_transport, conn_set_data);
    MEMBER(keel_api_transport, conn_get_data);
    MEMBER(keel_api_transport, conn_client);
    MEMBER(keel_api_transport, conn_count);
}

/* Added in ABI 1.1. */
static void added_1_1(void) {
#if KEEL_ABI_MINOR >= 1
    MEMBER(keel_api_core, stat_get);
#endif
}

static void constants(void) {
    CONST(KEEL_MODULE_MAGIC);
    printf("abi_major %d\n", KEEL_ABI_MAJOR);
    printf("abi_minor %d\n", KEEL_ABI_MINOR);
    printf("const KEEL_MODULE_ENTRY_SYMBOL %s\n", KEEL_MODULE_ENTRY_SYMBOL);
    CONST(KEEL_OK);
    CONST(KEEL_ERR);
    CONST(KEEL_LOG_DEBUG);
    CONST(KEEL_LOG_VERBOSE);
    CONST(KEEL_LOG_NOTICE);
    CONST(KEEL_LOG_WARNING);
    CONST(KEEL_CMD_WRITE);
    CONST(KEEL_CMD_READONLY);
    CONST(KEEL_CMD_DENYOOM);
    CONST(KEEL_CMD_ADMIN);
    CONST(KEEL_CMD_FAST);
    CONST(KEEL_CMD_NO_AUTH);
    CONST(KEEL_CLIENT_CONNECT);
    CONST(KEEL_CLIENT_AUTH);
    CONST(KEEL_CLIENT_CLOSE);
    CONST(KEEL_TIMER_STOP);
    CONST(KEEL_CONFIG_BOOL);
    CONST(KEEL_CONFIG_INT);
    CONST(KEEL_CONFIG_STRING);
    CONST(KEEL_CONFIG_ENUM);
    CONST(KEEL_CONFIG_MEMORY);
    CONST(KEEL_CONFIG_IMMUTABLE);
    CONST(KEEL_KEY_READ);
    CONST(KEEL_KEY_WRITE);
    CONST(KEEL_KEYTYPE_EMPTY);
    CONST(KEEL_KEYTYPE_STRING);
    CONST(KEEL_KEYTYPE_MODULE);
    CONST(KEEL_CONN_WANT_READ);
    CONST(KEEL_CONN_WANT_WRITE);
}

int main(void) {
    module_info();
    defs();
    groups();
    added_1_1();
    constants();
    return 0;
}
