/* cmd_debug.c -- DEBUG: the subcommands Valkey's test suite relies on,
 * answered as Valkey 8.0.1 answers them. DEBUG runs only when
 * enable-debug-command allows it (see protected_command_allowed).
 *
 * Persistence-bound subcommands (RELOAD, LOADAOF, DIGEST, DIGEST-VALUE)
 * answer an error until Keel has persistence; crash and allocator
 * subcommands are not offered. Anything else gets Valkey's "unknown
 * subcommand" error. */
#include "commands/commands.h"

#include "common/common.h"
#include "common/log.h"
#include "config/config.h"
#include "keyspace/db.h"
#include "session/reply.h"
#include "types/list.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ERR_DEBUG_NO_PERSISTENCE(what)                                                             \
    "ERR DEBUG " what                                                                              \
    " is not available: Keel has no persistence yet (no RDB or AOF to save or load)"

/* A NUL-terminated copy of an argument, cut to fit buf. */
static const char *arg_cstr(const karg *a, char *buf, size_t size) {
    size_t n = a->len < size - 1 ? a->len : size - 1;
    memcpy(buf, a->ptr, n);
    buf[n] = '\0';
    return buf;
}

/* Valkey reads these flags with atoi(): any leading integer, junk is 0. */
static int arg_atoi(const karg *a) {
    char buf[32];
    return atoi(arg_cstr(a, buf, sizeof(buf)));
}

static void debug_unknown(client *c) {
    reply_errorf(c,
                 "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try DEBUG HELP.",
                 (int)(c->argv[1].len > 128 ? 128 : c->argv[1].len), c->argv[1].ptr);
}

static void debug_help(client *c) {
    static const char *const help[] = {
        "DIGEST",
        "    Not available: needs persistence, which Keel does not have yet.",
        "DIGEST-VALUE <key> [<key> ...]",
        "    Not available: needs persistence, which Keel does not have yet.",
        "LOADAOF",
        "    Not available: Keel has no AOF yet.",
        "LOG <message>",
        "    Write <message> to the server log.",
        "OBJECT <key> [fast]",
        "    Show low level info about `key` and associated value.",
        "    `fast` leaves out serializedlength.",
        "POPULATE <count> [<prefix>] [<size>]",
        "    Create <count> string keys named key:<num>. If <prefix> is specified then",
        "    it is used instead of the 'key' prefix.",
        "PAUSE-CRON <0|1>",
        "    Stop periodic cron job processing.",
        "PROTOCOL <type>",
        "    Reply with a test value of the specified type. <type> can be: string,",
        "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
        "    true, false.",
        "QUICKLIST-PACKED-THRESHOLD <size>",
        "    Sets the threshold for elements to be inserted as plain vs packed nodes",
        "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
        "RELOAD [option ...]",
        "    Not available: Keel has no RDB yet.",
        "SET-ACTIVE-EXPIRE <0|1>",
        "    Setting it to 0 disables expiring keys in background when they are not",
        "    accessed (otherwise the behavior). Setting it to 1 reenables back the",
        "    default.",
        "SET-DISABLE-DENY-SCRIPTS <0|1>",
        "    Setting it to 1 lets scripts call commands flagged no-script (tests).",
        "SLEEP <seconds>",
        "    Stop the server for <seconds>. Decimals allowed.",
        "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
        "    Accepted for compatibility; Keel's reply blocks keep no peak to reset.",
        "REPLYBUFFER RESIZING <0|1>",
        "    Accepted for compatibility; Keel's reply blocks are never resized.",
    };
    reply_help(c, "DEBUG", help, K_ARRAY_LEN(help));
}

/* DEBUG OBJECT key [fast]: Valkey's status line. Keel keeps the access clock
 * in the entry, not the value, so lru/lfu come from the entry; of the two
 * clocks only the one of the current policy means something (as in Valkey),
 * the other is reported as 0. serializedlength is the string's length:
 * Keel has no RDB yet to measure a serialized form with. A quicklist adds
 * Valkey's ql_* fields (the SORT tests read them). */
static void debug_object(client *c) {
    /* As stored, as Valkey's: an expired key not yet removed is shown
     * (its tests look at one with active expiry off). */
    db_entry *e = db_find(c->db, c->argv[2].ptr, c->argv[2].len);
    if (!e) {
        reply_error(c, "ERR no such key");
        return;
    }
    int fast = c->argc == 4 && karg_eq(&c->argv[3], "fast");
    int lfu = db_policy_is_lfu(db_opts()->maxmemory_policy);
    /* An embedded value lives in the key's block: its address is the
     * block's (stable while the value is updated in place, as INCR does). */
    const kobj *v = db_entry_obj(e);
    const void *at = v ? (const void *)v : (const void *)e;
    unsigned lru = e->lru;
    char line[512];
    int n = snprintf(line, sizeof(line), "Value at:%p refcount:%lld encoding:%s", at,
                     db_entry_refcount(e), db_entry_encoding(e));
    if (!fast)
        n += snprintf(line + n, sizeof(line) - (size_t)n, " serializedlength:%zu",
                      db_entry_strlen(e));
    n += snprintf(line + n, sizeof(line) - (size_t)n,
                  " lru:%u lru_seconds_idle:%llu lfu_freq:%u lfu_access_time_minutes:%u", lru,
                  lfu ? 0ULL : (unsigned long long)db_idle_seconds(e), lfu ? db_lfu_freq(e) : 0u,
                  lfu ? lru >> 8 : 0u);
    list_ql_info qi;
    if (v && db_entry_type(e) == OBJ_LIST && list_quicklist_info(v, &qi)) {
        /* Valkey's quicklist fields; ql_compressed says whether a depth is
         * set (Keel reads it live: the current setting). */
        const type_options *t = &db_opts()->types;
        n += snprintf(line + n, sizeof(line) - (size_t)n,
                      " ql_nodes:%zu ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:%d",
                      qi.nodes, (double)qi.count / (double)qi.nodes, t->list_max_listpack_size,
                      t->list_compress_depth != 0);
        if (!fast)
            snprintf(line + n, sizeof(line) - (size_t)n, " ql_uncompressed_size:%zu", qi.raw_bytes);
    }
    reply_simple(c, line);
}

/* DEBUG PROTOCOL type: one value of each RESP3 type, with the RESP2
 * fallback the reply functions give (Valkey's values). */
static void debug_protocol(client *c) {
    const karg *t = &c->argv[2];
    if (karg_eq(t, "string")) {
        reply_bulk_cstr(c, "Hello World");
    } else if (karg_eq(t, "integer")) {
        reply_int(c, 12345);
    } else if (karg_eq(t, "double")) {
        reply_double(c, 3.141);
    } else if (karg_eq(t, "bignum")) {
        static const char big[] = "1234567999999999999999999999999999999";
        if (c->resp >= 3)
            reply_raw(c, "(1234567999999999999999999999999999999\r\n", sizeof(big) + 2);
        else
            reply_bulk(c, big, sizeof(big) - 1);
    } else if (karg_eq(t, "null")) {
        reply_null(c);
    } else if (karg_eq(t, "array") || karg_eq(t, "set")) {
        if (karg_eq(t, "array"))
            reply_array(c, 3);
        else
            reply_set(c, 3);
        for (int j = 0; j < 3; j++)
            reply_int(c, j);
    } else if (karg_eq(t, "map")) {
        reply_map(c, 3);
        for (int j = 0; j < 3; j++) {
            reply_int(c, j);
            reply_bool(c, j == 1);
        }
    } else if (karg_eq(t, "attrib")) {
        /* An attribute is no reply of its own: a real one follows it. */
        if (c->resp >= 3) {
            static const char attr[] =
                "|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n";
            reply_raw(c, attr, sizeof(attr) - 1);
        }
        reply_bulk_cstr(c, "Some real reply following the attribute");
    } else if (karg_eq(t, "push")) {
        if (c->resp < 3) {
            reply_error(c, "ERR RESP2 is not supported by this command");
            return;
        }
        static const char push[] = ">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n";
        reply_raw(c, push, sizeof(push) - 1);
        reply_bulk_cstr(c, "Some real reply following the push reply");
    } else if (karg_eq(t, "true") || karg_eq(t, "false")) {
        reply_bool(c, karg_eq(t, "true"));
    } else if (karg_eq(t, "verbatim")) {
        reply_verbatim(c, "This is a verbatim\nstring", 25, "txt");
    } else {
        reply_error(
            c, "ERR Wrong protocol type name. Please use one of the following: "
               "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false");
    }
}

/* DEBUG SLEEP seconds: Valkey parses with strtod (junk is 0, a negative
 * time does not sleep) and always answers OK. The server blocks. */
static void debug_sleep(client *c) {
    char buf[64];
    double secs = strtod(arg_cstr(&c->argv[2], buf, sizeof(buf)), NULL);
    if (!(secs > 0)) secs = 0;  /* also NaN */
    if (secs > 1e9) secs = 1e9; /* keeps tv_sec in range */
    long long us = (long long)(secs * 1000000);
    struct timespec ts = {.tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
    reply_ok(c);
}

/* A non-negative integer argument, as Valkey's getPositiveLongFromObjectOrReply. */
static int arg_positive(client *c, const karg *a, long long *out) {
    if (!arg_to_ll(c, a, out)) return 0;
    if (*out < 0) {
        reply_error(c, "ERR value is out of range, must be positive");
        return 0;
    }
    return 1;
}

/* DEBUG POPULATE count [prefix] [size]: keys prefix:<n> holding "value:<n>"
 * (padded with zero bytes, or cut, to size when given); existing keys are
 * left alone. */
static void debug_populate(client *c) {
    long long count, size = 0;
    if (!arg_positive(c, &c->argv[2], &count)) return;
    if (c->argc == 5 && !arg_positive(c, &c->argv[4], &size)) return;
    /* A value no client could have written: refused rather than letting a
     * typo allocate all memory. */
    if (size > session_opts()->proto_max_bulk_len) {
        reply_error(c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        return;
    }
    const char *prefix = "key";
    int plen = 3;
    if (c->argc >= 4) {
        prefix = c->argv[3].ptr;
        plen = (int)(c->argv[3].len > 100 ? 100 : c->argv[3].len);
    }
    for (long long j = 0; j < count; j++) {
        char key[128], val[32];
        int klen = snprintf(key, sizeof(key), "%.*s:%lld", plen, prefix, j);
        if (db_lookup_quiet(c->db, key, (size_t)klen)) continue;
        int vlen = snprintf(val, sizeof(val), "value:%lld", j);
        kobj *o;
        if (size == 0) {
            o = obj_string(val, (size_t)vlen);
        } else if (size <= OBJ_EMBSTR_MAX) {
            char small[OBJ_EMBSTR_MAX] = {0};
            memcpy(small, val, size < vlen ? (size_t)size : (size_t)vlen);
            o = obj_string(small, (size_t)size);
        } else {
            o = obj_string_alloc((size_t)size);
            memset(o->v.ptr, 0, (size_t)size + 1);
            memcpy(o->v.ptr, val, (size_t)vlen);
            o->len = (size_t)size;
        }
        db_add(c->db, key, (size_t)klen, o, 1);
    }
    reply_ok(c);
}

/* DEBUG REPLYBUFFER PEAK-RESET-TIME never|reset|<ms> and RESIZING <0|1>:
 * Valkey tunes the cron that shrinks a client's reply buffer to its recent
 * peak. Keel's replies are a list of fixed blocks freed as they are sent,
 * so there is no buffer to resize and no peak to reset: the arguments are
 * checked as Valkey checks them and the answer is OK. */
static void debug_replybuffer(client *c) {
    const karg *knob = &c->argv[2], *val = &c->argv[3];
    if (karg_eq(knob, "peak-reset-time")) {
        long long ms;
        if (!karg_eq(val, "never") && !karg_eq(val, "reset") && !arg_to_ll(c, val, &ms)) return;
    } else if (!karg_eq(knob, "resizing")) {
        debug_unknown(c);
        return;
    }
    reply_ok(c);
}

/* DEBUG QUICKLIST-PACKED-THRESHOLD <size>: the list test knob (types/list.h). */
static void debug_packed_threshold(client *c) {
    char buf[64];
    unsigned long long sz;
    if (config_parse_memory(arg_cstr(&c->argv[2], buf, sizeof(buf)), &sz) != K_OK ||
        !list_set_packed_threshold(sz)) {
        reply_error(c, "ERR argument must be a memory value bigger than 1 and smaller than 4gb");
        return;
    }
    reply_ok(c);
}

static void cmd_debug(client *c) {
    if (!protected_command_allowed(c, *commands_env_get()->enable_debug_cmd, "DEBUG")) return;
    const karg *sub = &c->argv[1];
    if (karg_eq(sub, "help") && c->argc == 2) {
        debug_help(c);
    } else if (karg_eq(sub, "object") && (c->argc == 3 || c->argc == 4)) {
        debug_object(c);
    } else if (karg_eq(sub, "protocol") && c->argc == 3) {
        debug_protocol(c);
    } else if (karg_eq(sub, "sleep") && c->argc == 3) {
        debug_sleep(c);
    } else if (karg_eq(sub, "set-active-expire") && c->argc == 3) {
        *commands_env_get()->active_expire_enabled = arg_atoi(&c->argv[2]) != 0;
        reply_ok(c);
    } else if (karg_eq(sub, "pause-cron") && c->argc == 3) {
        *commands_env_get()->cron_paused = arg_atoi(&c->argv[2]) != 0;
        reply_ok(c);
    } else if (karg_eq(sub, "set-disable-deny-scripts") && c->argc == 3) {
        /* A test knob as Valkey's: scripts may then call commands flagged
         * no-script (DEBUG PROTOCOL, CLIENT LIST). */
        *commands_env_get()->disable_deny_scripts = arg_atoi(&c->argv[2]) != 0;
        reply_ok(c);
    } else if (karg_eq(sub, "quicklist-packed-threshold") && c->argc == 3) {
        debug_packed_threshold(c);
    } else if (karg_eq(sub, "replybuffer") && c->argc == 4) {
        debug_replybuffer(c);
    } else if (karg_eq(sub, "populate") && c->argc >= 3 && c->argc <= 5) {
        debug_populate(c);
    } else if (karg_eq(sub, "log") && c->argc == 3) {
        log_write(LL_WARNING, "DEBUG LOG: %.*s", (int)c->argv[2].len, c->argv[2].ptr);
        reply_ok(c);
    } else if (karg_eq(sub, "reload")) {
        reply_error(c, ERR_DEBUG_NO_PERSISTENCE("RELOAD"));
    } else if (karg_eq(sub, "loadaof")) {
        reply_error(c, ERR_DEBUG_NO_PERSISTENCE("LOADAOF"));
    } else if (karg_eq(sub, "digest") && c->argc == 2) {
        reply_error(c, ERR_DEBUG_NO_PERSISTENCE("DIGEST"));
    } else if (karg_eq(sub, "digest-value")) {
        reply_error(c, ERR_DEBUG_NO_PERSISTENCE("DIGEST-VALUE"));
    } else {
        debug_unknown(c);
    }
}

static command debug_table[] = {
    {.name = "debug",
     .proc = cmd_debug,
     .arity = -2,
     .flags = CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
     .group = "server",
     .since = "1.0.0",
     .summary = "A container for debugging commands."},
};

const command_family commands_debug = {debug_table, K_ARRAY_LEN(debug_table)};
