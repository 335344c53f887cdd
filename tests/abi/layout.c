/* layout.c -- prints the binary layout of the module ABI as a header defines
 * it: every member's offset and size, every struct's size, every constant.
 * Built against each frozen header (tests/abi/include for 1.0,
 * tests/abi/include-1.1, tests/abi/include-1.2, tests/abi/include-1.3) and
 * against the current one (sdk/include);
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

/* Added in ABI 1.2. */
static void added_1_2(void) {
#if KEEL_ABI_MINOR >= 2
    MEMBER(keel_command_def, key_specs);
    MEMBER(keel_command_def, num_key_specs);
    MEMBER(keel_command_def, call_flags);
    SIZE(keel_key_spec);
    MEMBER(keel_key_spec, size);
    MEMBER(keel_key_spec, flags);
    MEMBER(keel_key_spec, begin_type);
    MEMBER(keel_key_spec, begin_index);
    MEMBER(keel_key_spec, begin_keyword);
    MEMBER(keel_key_spec, begin_startfrom);
    MEMBER(keel_key_spec, find_type);
    MEMBER(keel_key_spec, range_lastkey);
    MEMBER(keel_key_spec, range_step);
    MEMBER(keel_key_spec, range_limit);
    MEMBER(keel_key_spec, keynum_index);
    MEMBER(keel_key_spec, keynum_firstkey);
    MEMBER(keel_key_spec, keynum_step);
    SIZE(keel_call_args);
    MEMBER(keel_call_args, size);
    MEMBER(keel_call_args, flags);
    MEMBER(keel_call_args, argc);
    MEMBER(keel_call_args, argv);
    MEMBER(keel_call_args, lens);
    SIZE(keel_block_def);
    MEMBER(keel_block_def, size);
    MEMBER(keel_block_def, timeout_ms);
    MEMBER(keel_block_def, on_unblock);
    MEMBER(keel_block_def, on_timeout);
    MEMBER(keel_block_def, on_key_ready);
    MEMBER(keel_block_def, nkeys);
    MEMBER(keel_block_def, keys);
    MEMBER(keel_block_def, key_lens);
    MEMBER(keel_block_def, free_priv);
    MEMBER(keel_block_def, priv);
    MEMBER(keel_block_def, free_data);
    MEMBER(keel_api, call);
    MEMBER(keel_api, block);
    MEMBER(keel_api, events);
    MEMBER(keel_api_command, reply_set);
    MEMBER(keel_api_command, reply_bignum);
    MEMBER(keel_api_command, reply_error_ex);
    MEMBER(keel_api_command, reply_verbatim_ex);
    MEMBER(keel_api_info, add_fields);
    SIZE(keel_api_call);
    MEMBER(keel_api_call, size);
    MEMBER(keel_api_call, call);
    MEMBER(keel_api_call, reply_free);
    MEMBER(keel_api_call, reply_type);
    MEMBER(keel_api_call, reply_integer);
    MEMBER(keel_api_call, reply_double);
    MEMBER(keel_api_call, reply_string);
    MEMBER(keel_api_call, reply_format);
    MEMBER(keel_api_call, reply_length);
    MEMBER(keel_api_call, reply_element);
    MEMBER(keel_api_call, command_flags);
    MEMBER(keel_api_call, busy_yield);
    MEMBER(keel_api_call, busy_active);
    MEMBER(keel_api_call, db_index);
    SIZE(keel_api_block);
    MEMBER(keel_api_block, size);
    MEMBER(keel_api_block, block);
    MEMBER(keel_api_block, unblock);
    MEMBER(keel_api_block, signal_key_ready);
    SIZE(keel_api_events);
    MEMBER(keel_api_events, size);
    MEMBER(keel_api_events, notify_subscribe);
    MEMBER(keel_api_events, notify_emit);
    CONST(KEEL_KEY_SPEC_RO);
    CONST(KEEL_KEY_SPEC_RW);
    CONST(KEEL_KEY_SPEC_OW);
    CONST(KEEL_KEY_SPEC_RM);
    CONST(KEEL_KEY_SPEC_ACCESS);
    CONST(KEEL_KEY_SPEC_UPDATE);
    CONST(KEEL_KEY_SPEC_INSERT);
    CONST(KEEL_KEY_SPEC_DELETE);
    CONST(KEEL_KEY_SPEC_NOT_KEY);
    CONST(KEEL_KEY_SPEC_INCOMPLETE);
    CONST(KEEL_KEY_SPEC_VARIABLE_FLAGS);
    CONST(KEEL_KEY_BEGIN_INDEX);
    CONST(KEEL_KEY_BEGIN_KEYWORD);
    CONST(KEEL_KEY_FIND_RANGE);
    CONST(KEEL_KEY_FIND_KEYNUM);
    CONST(KEEL_CMD_PUBSUB);
    CONST(KEEL_CMD_NOSCRIPT);
    CONST(KEEL_CMD_BLOCKING);
    CONST(KEEL_CMD_STALE);
    CONST(KEEL_CMD_SKIP_MONITOR);
    CONST(KEEL_CMD_SKIP_SLOWLOG);
    CONST(KEEL_CMD_MAY_REPLICATE);
    CONST(KEEL_CMD_NO_MULTI);
    CONST(KEEL_CMD_ALLOW_BUSY);
    CONST(KEEL_CMD_NO_MANDATORY_KEYS);
    CONST(KEEL_REPLY_ERR_NO_STATS);
    CONST(KEEL_REPLY_STRING);
    CONST(KEEL_REPLY_STATUS);
    CONST(KEEL_REPLY_ERROR);
    CONST(KEEL_REPLY_INTEGER);
    CONST(KEEL_REPLY_NULL);
    CONST(KEEL_REPLY_ARRAY);
    CONST(KEEL_REPLY_MAP);
    CONST(KEEL_REPLY_SET);
    CONST(KEEL_REPLY_DOUBLE);
    CONST(KEEL_REPLY_BOOL);
    CONST(KEEL_REPLY_BIGNUM);
    CONST(KEEL_REPLY_VERBATIM);
    CONST(KEEL_CALL_RESP3);
    CONST(KEEL_CALL_NO_WRITES);
    CONST(KEEL_CALL_CHECK_OOM);
    CONST(KEEL_CALL_SCRIPT);
    CONST(KEEL_CALL_RAN);
    CONST(KEEL_CALL_UNKNOWN);
    CONST(KEEL_CALL_ARITY);
    CONST(KEEL_CALL_NOSCRIPT);
    CONST(KEEL_CALL_WRITE);
    CONST(KEEL_CALL_OOM);
    CONST(KEEL_CALL_DENIED);
    CONST(KEEL_NOTIFY_GENERIC);
    CONST(KEEL_NOTIFY_STRING);
    CONST(KEEL_NOTIFY_LIST);
    CONST(KEEL_NOTIFY_SET);
    CONST(KEEL_NOTIFY_HASH);
    CONST(KEEL_NOTIFY_ZSET);
    CONST(KEEL_NOTIFY_EXPIRED);
    CONST(KEEL_NOTIFY_EVICTED);
    CONST(KEEL_NOTIFY_STREAM);
    CONST(KEEL_NOTIFY_KEY_MISS);
    CONST(KEEL_NOTIFY_MODULE);
    CONST(KEEL_NOTIFY_NEW);
    CONST(KEEL_NOTIFY_ALL);
#endif
}

/* Added in ABI 1.3. */
static void added_1_3(void) {
#if KEEL_ABI_MINOR >= 3
    MEMBER(keel_config_def, commit);
    MEMBER(keel_api_info, config_claim_family);
    MEMBER(keel_transport_def, connect);
    MEMBER(keel_transport_def, handshake_timeout_ms);
    MEMBER(keel_api_transport, listener_open);
    MEMBER(keel_api_transport, listener_close);
    MEMBER(keel_api_transport, conn_wait);
    MEMBER(keel_api_transport, connect);
    MEMBER(keel_api_transport, conn_set_handlers);
    MEMBER(keel_api_transport, conn_read);
    MEMBER(keel_api_transport, conn_write);
    MEMBER(keel_api_transport, conn_close);
    MEMBER(keel_api_transport, conn_host);
    MEMBER(keel_api_transport, conn_local_port);
    MEMBER(keel_api_transport, transport_find);
    CONST(KEEL_CONFIG_FAMILY);
    CONST(KEEL_CONFIG_SENSITIVE);
    CONST(KEEL_CONN_READABLE);
    CONST(KEEL_CONN_WRITABLE);
#endif
}

/* Added in ABI 1.4. */
static void added_1_4(void) {
#if KEEL_ABI_MINOR >= 4
    MEMBER(keel_transport_def, flags);
    MEMBER(keel_transport_def, addr);
    MEMBER(keel_api_transport, fd_watch);
    MEMBER(keel_api_transport, fd_unwatch);
    MEMBER(keel_api_transport, conn_adopt);
    MEMBER(keel_api_transport, conn_wake);
    CONST(KEEL_TRANSPORT_OWN_FD);
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
    added_1_2();
    added_1_3();
    added_1_4();
    constants();
    return 0;
}
