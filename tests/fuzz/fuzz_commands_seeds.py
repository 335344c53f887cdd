#!/usr/bin/env python3
"""fuzz_commands_seeds.py -- writes the seed corpus of fuzz_commands.

The seeds below give the fuzzer the combinations it is slow to assemble by
itself (an option with its value, then a second command on the same key, two
clients around WATCH, CONFIG SET then the commands it affects); it mutates from
there. Each is written as a literal program (see fz_build_literal in
fuzz_commands.c: the commands' bytes as they are), then the target itself
encodes it (KEEL_FUZZ_ENCODE) into the step form the fuzzer mutates well, which
decodes to exactly the same commands. The step form names commands and palette
entries by number: rerun this script when the ring or the palettes change.

Usage: python3 tests/fuzz/fuzz_commands_seeds.py FUZZ_COMMANDS_BINARY [OUTDIR]
(default OUTDIR tests/fuzz/corpus/fuzz_commands). Check a seed with
KEEL_FUZZ_TRACE=1 build/fuzz/tests/fuzz/fuzz_commands FILE. program() also
writes a regression by hand (a literal program replays the same commands
whatever changes).
"""
import os
import struct
import subprocess
import sys
import tempfile

MAGIC = b"\xffKEELCMD1"
RUN, RUN_MIN = 0x80000000, 16  # FZ_LITERAL_RUN, FZ_LITERAL_RUN_MIN
I64_MAX = "9223372036854775807"
I64_MIN = "-9223372036854775808"


def program(commands):
    """commands: lists of arguments, optionally starting with a client slot (int)."""
    out = bytearray(MAGIC)
    for cmd in commands:
        slot = 0
        if isinstance(cmd[0], int):
            slot, cmd = cmd[0], cmd[1:]
        out += bytes([slot, len(cmd)])
        for arg in cmd:
            arg = arg.encode() if isinstance(arg, str) else arg
            if len(arg) >= RUN_MIN and arg == arg[:1] * len(arg):
                out += struct.pack("<I", RUN | len(arg)) + arg[:1]  # a run of one byte
            else:
                out += struct.pack("<I", len(arg)) + arg
    return bytes(out)


SEEDS = {
    "set_options": [
        ["set", "a", "1", "NX"], ["set", "a", "2", "XX", "GET"], ["set", "a", "3", "EX", "10"],
        ["set", "a", "4", "PX", "100", "KEEPTTL"], ["set", "b", "v", "EXAT", "1700000000"],
        ["set", "b", "v", "PXAT", "253402300800000"], ["set", "c", "v", "KEEPTTL", "GET"],
        ["set", "a", "v", "EX", "0"], ["set", "a", "v", "EX", I64_MAX], ["setnx", "a", "x"],
        ["setex", "d", "100", "v"], ["psetex", "d", "-1", "v"], ["get", "a"],
    ],
    "expire_family": [
        ["set", "a", "1"], ["expire", "a", "100", "NX"], ["expire", "a", "200", "XX", "GT"],
        ["pexpire", "a", "50", "LT"], ["ttl", "a"], ["pttl", "a"], ["expiretime", "a"],
        ["pexpiretime", "a"], ["persist", "a"], ["expireat", "a", "1700000000"],
        ["set", "b", "1"], ["pexpireat", "b", I64_MAX], ["expiretime", "b"], ["ttl", "b"],
        ["expire", "b", "10", "NX", "XX"], ["expire", "b", "10", "GT", "LT"],
        ["expire", "b", I64_MIN], ["exists", "b"],
    ],
    "getex_getdel": [
        ["set", "a", "v"], ["getex", "a", "EX", "100"], ["getex", "a", "PERSIST"],
        ["getex", "a", "PXAT", "1"], ["set", "a", "v"], ["getdel", "a"], ["getset", "b", "x"],
        ["getex", "b"], ["getex", "b", "EX", "1", "PERSIST"],
    ],
    "numbers": [
        ["set", "n", "10"], ["incr", "n"], ["incrby", "n", I64_MAX], ["decrby", "n", I64_MIN],
        ["set", "n", "-1"], ["decrby", "n", I64_MAX], ["incrbyfloat", "n", "1e308"],
        ["incrbyfloat", "n", "1e308"], ["incrbyfloat", "n", "inf"], ["incrbyfloat", "n", "nan"],
        ["set", "f", "1.5"], ["incrbyfloat", "f", "-1.5"], ["decr", "f"], ["set", "s", "abc"],
        ["incr", "s"], ["set", "z", " 1"], ["incr", "z"], ["set", "z", I64_MAX], ["incr", "z"],
    ],
    "ranges": [
        ["set", "s", "hello"], ["getrange", "s", "0", "-1"], ["getrange", "s", "-100", "100"],
        ["substr", "s", I64_MAX, I64_MIN], ["setrange", "s", "10", "x"],
        ["setrange", "s", "1048575", "y"], ["setrange", "s", "1048576", "y"],
        ["setrange", "s", "-1", "z"], ["setrange", "t", "0", ""], ["append", "s", "tail"],
        ["strlen", "s"], ["strlen", "none"],
    ],
    "multi_key": [
        ["mset", "a", "1", "b", "2", "c", "3"], ["msetnx", "a", "1", "d", "4"],
        ["mget", "a", "b", "c", "d"], ["del", "a", "b"], ["unlink", "c"],
        ["exists", "a", "b", "c", "d", "d"], ["touch", "a", "d"],
    ],
    "keyspace": [
        ["set", "key:1", "v"], ["set", "key:2", "v"], ["keys", "*"], ["keys", "key:*"],
        ["keys", "[a-"], ["scan", "0", "MATCH", "key:*", "COUNT", "1"], ["scan", "0", "TYPE", "string"],
        ["scan", "0", "COUNT", I64_MAX], ["scan", "18446744073709551615"], ["randomkey"],
        ["dbsize"], ["type", "key:1"], ["rename", "key:1", "key:3"], ["renamenx", "key:3", "key:2"],
        ["copy", "key:2", "a", "DB", "1", "REPLACE"], ["move", "a", "1"], ["select", "1"],
        ["get", "a"], ["swapdb", "0", "1"], ["flushdb", "ASYNC"], ["flushall", "SYNC"],
    ],
    "multi_watch": [
        [0, "watch", "a"], [1, "set", "a", "x"], [0, "multi"], [0, "set", "a", "y"],
        [0, "incr", "a"], [0, "exec"], [0, "multi"], [0, "get", "a"], [0, "discard"],
        [0, "multi"], [0, "shutdown"], [0, "exec"], [1, "watch", "b"],
        [1, "multi"], [1, "watch", "c"], [1, "exec"], [1, "unwatch"],
    ],
    "clients": [
        [0, "client", "setname", "x"], [1, "client", "list"], [1, "client", "info"],
        [0, "client", "id"], [1, "client", "getname"], [1, "client", "no-evict", "ON"],
        [2, "client", "setinfo", "LIB-NAME", "x"], [2, "hello", "3", "SETNAME", "y"],
        [2, "get", "a"], [2, "hello", "2"], [1, "client", "kill", "SKIPME", "yes", "TYPE", "normal"],
        [0, "reset"], [0, "quit"], [0, "ping"], [2, "client", "kill", "SKIPME", "no"], [2, "ping"],
    ],
    # Used memory counts the whole process (some 25 MB before any key, under
    # libFuzzer): keys are stored first, then a limit under that evicts them
    # at once, by each policy in turn.
    "config_evict": [
        ["config", "set", "maxmemory-policy", "allkeys-lfu"],
        ["mset", "k0", "1", "k1", "2", "k2", "3"], ["get", "k1"], ["object", "freq", "k1"],
        ["config", "set", "maxmemory", "1mb"], ["config", "set", "maxmemory", "64mb"],
        ["config", "set", "maxmemory-policy", "volatile-ttl"],
        ["set", "t0", "v", "EX", "100"], ["set", "t1", "v", "PX", "100000"], ["set", "p", "v"],
        ["config", "set", "maxmemory", "1mb"], ["config", "set", "maxmemory", "64mb"],
        ["config", "set", "maxmemory-policy", "allkeys-random"], ["set", "r", "v"],
        ["config", "set", "maxmemory", "1mb"], ["config", "set", "maxmemory-policy", "noeviction"],
        ["set", "e", "v"], ["config", "get", "maxmemory*"], ["config", "resetstat"],
    ],
    "introspection": [
        ["set", "a", "12345"], ["set", "b", "x" * 100], ["object", "encoding", "a"],
        ["object", "encoding", "b"], ["object", "refcount", "a"], ["object", "idletime", "a"],
        ["object", "help"], ["memory", "usage", "b", "SAMPLES", "0"], ["memory", "stats"],
        ["info", "everything"], ["info", "commandstats", "errorstats"], ["command"],
        ["command", "count"], ["command", "info", "get", "config|get"], ["command", "docs", "set"],
        ["command", "getkeys", "mset", "a", "1", "b", "2"],
        ["command", "list", "FILTERBY", "PATTERN", "c*"], ["slowlog", "get", "1"],
        ["slowlog", "len"], ["slowlog", "reset"], ["time"], ["lastsave"], ["echo", "x"],
    ],
    "output_limits": [
        ["config", "set", "client-output-buffer-limit", "normal 1kb 1kb 0"],
        ["set", "big", "x" * 16385], ["get", "big"], ["ping"],
        ["config", "set", "client-output-buffer-limit", "normal 0 100 1"], ["get", "big"],
    ],
    "auth": [
        ["config", "set", "requirepass", "secret"], [1, "get", "a"], [1, "auth", "wrong"],
        [1, "auth", "secret"], [2, "auth", "default", "secret"],
        [2, "hello", "3", "AUTH", "default", "secret"], [0, "config", "set", "requirepass", ""],
    ],
    "big_args": [
        ["set", "a", "a" * 32768], ["append", "a", "b" * 32769], ["getrange", "a", "0", "-1"],
        ["set", "b", "c" * 65537], ["get", "b"],
    ],
    "globs": [
        ["set", "abc", "1"], ["set", "a*b", "2"], ["keys", "a*" * 20 + "b"], ["keys", "[^]]"],
        ["keys", "\\"], ["keys", "*?*?"], ["keys", "a\\*b"], ["config", "get", "*max*"],
        ["scan", "0", "MATCH", "*" * 1024],
    ],
    # ---- the aggregate types (issue 12)
    "hash_basic": [
        ["hset", "h", "f1", "v1", "f2", "v2", "n", "10"], ["hsetnx", "h", "f1", "x"],
        ["hget", "h", "f1"], ["hmget", "h", "f1", "nx", "f2"], ["hincrby", "h", "n", I64_MAX],
        ["hincrby", "h", "n", "1"], ["hincrbyfloat", "h", "f", "1e308"],
        ["hincrbyfloat", "h", "f", "1e308"], ["hincrbyfloat", "h", "f", "inf"],
        ["hstrlen", "h", "f1"], ["hexists", "h", "f2"], ["hkeys", "h"], ["hvals", "h"],
        ["hgetall", "h"], ["hdel", "h", "f1", "f1", "zz"], ["hlen", "h"],
        ["hrandfield", "h", "-9223372036854775807"], ["hrandfield", "h", "-5", "WITHVALUES"],
        ["hrandfield", "h", I64_MAX], ["hrandfield", "h", I64_MIN, "WITHVALUES"],
        ["hscan", "h", "0", "MATCH", "f*", "COUNT", "1", "NOVALUES"], ["hset", "h", "n", ""],
        ["hdel", "h", "f2", "n", "f"], ["exists", "h"],
    ],
    "hash_field_expiry": [
        ["hset", "h", "a", "1", "b", "2", "c", "3"], ["hexpire", "h", "1", "FIELDS", "1", "a"],
        ["hpexpire", "h", "1", "NX", "FIELDS", "2", "b", "c"],
        ["hpexpireat", "h", "1", "FIELDS", "1", "a"],
        ["hexpireat", "h", I64_MAX, "FIELDS", "1", "b"],
        ["httl", "h", "FIELDS", "3", "a", "b", "c"], ["hpttl", "h", "FIELDS", "1", "c"],
        ["hexpiretime", "h", "FIELDS", "1", "b"], ["hpexpiretime", "h", "FIELDS", "1", "c"],
        ["hpersist", "h", "FIELDS", "2", "b", "zz"], ["hgetex", "h", "PX", "1", "FIELDS", "2", "b", "c"],
        ["hgetex", "h", "PERSIST", "FIELDS", "1", "b"], ["hgetex", "h", "EXAT", "1", "FIELDS", "1", "c"],
        ["hsetex", "h", "FNX", "EX", "1", "FIELDS", "2", "x", "1", "y", "2"],
        ["hsetex", "h", "FXX", "KEEPTTL", "FIELDS", "1", "x", "3"],
        ["hsetex", "h", "PX", "0", "FIELDS", "1", "z", "1"], ["hgetdel", "h", "FIELDS", "2", "x", "y"],
        ["hlen", "h"], ["hgetall", "h"], ["hexpire", "h", "-1", "FIELDS", "1", "a"],
        ["hexpire", "h", "100", "GT", "LT", "FIELDS", "1", "a"],
        ["hexpire", "h", "100", "FIELDS", "0", "a"], ["hexpire", "h", "100", "FIELDS", I64_MAX, "a"],
        ["hpexpire", "h", I64_MAX, "FIELDS", "1", "b"], ["hrandfield", "h", "-3", "WITHVALUES"],
        ["hscan", "h", "0"], ["hsetex", "e", "PX", "1", "FIELDS", "1", "f", "v"], ["hlen", "e"],
    ],
    "hash_hashtable": [
        ["config", "set", "hash-max-listpack-entries", "1"],
        ["config", "set", "hash-max-listpack-value", "0"], ["hset", "h", "a", "1", "b", "2"],
        ["hpexpire", "h", "1", "FIELDS", "1", "a"], ["hrandfield", "h", "-100", "WITHVALUES"],
        ["hset", "h2", "x" * 65, "v"], ["object", "encoding", "h"], ["copy", "h", "h3"],
        ["rename", "h3", "h4"], ["move", "h4", "1"], ["hincrbyfloat", "h", "b", "-inf"],
        ["hscan", "h", "0", "COUNT", I64_MAX], ["hgetall", "h"], ["del", "h"],
    ],
    "list_ops": [
        ["rpush", "l", "a", "b", "c", "d", "e"], ["lpush", "l", "1", "2", "3"],
        ["linsert", "l", "BEFORE", "c", "X"], ["linsert", "l", "AFTER", "zz", "Y"],
        ["lset", "l", "-1", "Z"], ["lset", "l", I64_MAX, "x"], ["lindex", "l", I64_MIN],
        ["lrange", "l", I64_MIN, I64_MAX], ["ltrim", "l", "1", "-2"], ["lrem", "l", I64_MIN, "a"],
        ["lrem", "l", "0", "X"], ["lpos", "l", "c", "RANK", I64_MIN],
        ["lpos", "l", "c", "RANK", I64_MAX, "COUNT", "0", "MAXLEN", "0"],
        ["lpos", "l", "c", "RANK", "-1", "COUNT", I64_MAX], ["lpop", "l", I64_MAX],
        ["rpush", "l", "a", "b"], ["rpop", "l", "-1"], ["lpushx", "nx", "v"], ["rpushx", "l", "v"],
        ["llen", "l"], ["ltrim", "l", I64_MAX, I64_MIN], ["exists", "l"],
    ],
    "list_quicklist": [
        ["config", "set", "list-max-listpack-size", "1"], ["rpush", "l", "x" * 1024, "y", "z"],
        ["config", "set", "list-max-listpack-size", "-5"],
        ["rpush", "L", "a" * 32768, "b" * 32769, "c"], ["lrange", "L", "0", "-1"],
        ["lmove", "l", "L", "LEFT", "RIGHT"], ["rpoplpush", "L", "l"],
        ["lmove", "l", "l", "RIGHT", "LEFT"], ["linsert", "L", "AFTER", "c", "d" * 16384],
        ["lset", "L", "1", "e"], ["lrem", "L", "-1", "c"],
        ["lmpop", "2", "l", "L", "LEFT", "COUNT", I64_MAX], ["sadd", "s", "m"],
        ["lmove", "s", "l", "LEFT", "LEFT"], ["rpush", "l", "3", "1", "2"],
        ["sort", "l", "STORE", "l2"], ["lrange", "l2", "0", "-1"], ["object", "encoding", "l2"],
    ],
    "set_conversions": [
        ["sadd", "s", "1", "2", "3"], ["object", "encoding", "s"], ["sadd", "s", I64_MIN, I64_MAX],
        ["sadd", "s", "a"], ["object", "encoding", "s"], ["config", "set", "set-max-intset-entries", "1"],
        ["sadd", "t", "1", "2"], ["config", "set", "set-max-listpack-entries", "0"],
        ["sadd", "u", "a"], ["srem", "s", "1", "zz"], ["smove", "s", "t", "2"],
        ["sismember", "t", "2"], ["smismember", "s", "a", "b"], ["spop", "s", "-1"],
        ["srandmember", "s", "-9223372036854775807"], ["srandmember", "t", I64_MIN],
        ["srandmember", "t", I64_MAX], ["sintercard", "2", "s", "t", "LIMIT", "0"],
        ["sintercard", "3", "s", "t", "u", "LIMIT", I64_MAX], ["sinterstore", "d", "s", "t"],
        ["sunionstore", "d", "s", "t", "u"], ["sdiffstore", "d", "d", "u"], ["sunion", "s", "t"],
        ["sdiff", "t", "s"], ["sinter", "s", "s"], ["sscan", "t", "0", "MATCH", "*", "COUNT", "1"],
        ["smembers", "d"], ["scard", "d"], ["spop", "t", I64_MAX], ["spop", "u"],
    ],
    "zset_ops": [
        ["zadd", "z", "1", "a", "2", "b", "3", "c"], ["zadd", "z", "NX", "XX", "1", "a"],
        ["zadd", "z", "GT", "LT", "1", "a"], ["zadd", "z", "INCR", "1", "a"],
        ["zadd", "z", "GT", "CH", "INCR", "inf", "a"], ["zadd", "z", "nan", "x"],
        ["zadd", "z", "-inf", "m", "+inf", "n"], ["zincrby", "z", "-inf", "n"],
        ["zrange", "z", "0", "-1", "WITHSCORES"],
        ["zrange", "z", "(1", "+inf", "BYSCORE", "LIMIT", "0", "-1"],
        ["zrange", "z", "+", "-", "BYLEX", "REV", "LIMIT", I64_MAX, I64_MAX],
        ["zrange", "z", I64_MIN, I64_MAX, "REV"],
        ["zrangebyscore", "z", "-inf", "+inf", "WITHSCORES", "LIMIT", "-1", "-1"],
        ["zrevrangebylex", "z", "+", "-", "LIMIT", "0", "1"], ["zrangestore", "d", "z", "0", "-1"],
        ["zcount", "z", "(-inf", "(+inf"], ["zlexcount", "z", "-", "+"],
        ["zrank", "z", "a", "WITHSCORE"], ["zrevrank", "z", "n"], ["zmscore", "z", "a", "zz"],
        ["zscore", "z", "m"], ["zremrangebyrank", "z", I64_MIN, "0"], ["zremrangebylex", "z", "[a", "(c"],
        ["zremrangebyscore", "z", "nan", "inf"], ["zpopmin", "z", "-1"], ["zpopmax", "z", I64_MAX],
        ["zadd", "z", "1", "a"], ["zmpop", "2", "z", "d", "MAX", "COUNT", I64_MAX],
        ["zadd", "z", "1", "a", "2", "b"], ["zrandmember", "z", "-9223372036854775807", "WITHSCORES"],
        ["zrandmember", "z", I64_MIN], ["zrandmember", "z", "5", "WITHSCORES"],
        ["zscan", "z", "0", "NOSCORES"], ["zcard", "z"],
    ],
    "zset_algebra": [
        ["zadd", "z1", "1", "a", "inf", "b", "-inf", "c"], ["zadd", "z2", "2", "a", "-inf", "b"],
        ["sadd", "s", "a", "b"],
        ["zunionstore", "d", "2", "z1", "z2", "WEIGHTS", "0", "inf", "AGGREGATE", "SUM"],
        ["zinterstore", "d", "2", "z1", "z2", "WEIGHTS", "nan", "1"],
        ["zinterstore", "d", "3", "z1", "z2", "s", "WEIGHTS", "-inf", "inf", "1", "AGGREGATE", "MAX"],
        ["zunion", "2", "z1", "z2", "AGGREGATE", "MIN", "WITHSCORES"],
        ["zinter", "2", "z1", "z2", "AGGREGATE", "MAX"], ["zdiff", "2", "z1", "z2", "WITHSCORES"],
        ["zdiffstore", "d", "2", "z1", "z2"], ["zintercard", "2", "z1", "z2", "LIMIT", "1"],
        ["zunionstore", "d", "2", "z1", "s"], ["zunionstore", "d", I64_MAX, "z1"],
        ["zunionstore", "d", "0", "z1"], ["config", "set", "zset-max-listpack-entries", "0"],
        ["zadd", "z3", "1", "a"], ["zunionstore", "z3", "2", "z3", "z1"], ["zrange", "z3", "0", "-1"],
        ["zinterstore", "z3", "1", "nokey"], ["exists", "z3"],
    ],
    "sort_patterns": [
        ["rpush", "l", "3", "1", "2"], ["hset", "w_1", "f", "10"], ["hset", "w_2", "f", "20"],
        ["set", "o_1", "x"], ["sort", "l", "BY", "w_*->f", "GET", "#", "GET", "o_*", "GET", "w_*->f"],
        ["sort", "l", "BY", "nosort", "LIMIT", I64_MIN, I64_MAX],
        ["sort", "l", "ALPHA", "DESC", "STORE", "dst"], ["sort_ro", "l", "BY", "w_*"],
        ["sort", "l", "GET", "#", "GET", "#", "GET", "#", "GET", "#", "STORE", "l"],
        ["sort", "l", "GET", "#", "GET", "#", "GET", "#", "GET", "#", "STORE", "l"],
        ["sadd", "s", "b", "a"], ["sort", "s", "ALPHA"], ["zadd", "z", "1", "x"],
        ["sort", "z", "BY", "nosort", "DESC"], ["sort", "l", "BY", "*->"], ["sort", "l", "GET", "->f"],
        ["sort", "l", "BY", "w_*->", "LIMIT", "0", "0"], ["sort", "h", "ALPHA"],
        ["sort", "w_1"], ["sort", "l", "STORE", "w_1"], ["type", "w_1"],
    ],
    "config_thresholds": [
        ["config", "set", "hash-max-listpack-entries", "0"], ["hset", "h", "a", "1"],
        ["config", "set", "set-max-intset-entries", "0"], ["sadd", "s", "1"],
        ["config", "set", "set-max-listpack-entries", "0"], ["sadd", "t", "x"],
        ["config", "set", "zset-max-listpack-entries", "0"], ["zadd", "z", "1", "a"],
        ["config", "set", "list-max-listpack-size", "1"], ["rpush", "l", "a", "b", "c"],
        ["config", "set", "hash-max-listpack-value", "1"], ["hset", "h2", "f", "vv"],
        ["config", "set", "set-max-listpack-value", "1"], ["sadd", "t2", "xy"],
        ["config", "set", "zset-max-listpack-value", "1"], ["zadd", "z2", "1", "ab"],
        ["config", "set", "hash-max-listpack-entries", "9223372036854775807"],
        ["config", "set", "set-max-intset-entries", "9223372036854775807"],
        ["config", "set", "set-max-listpack-entries", "4294967296"],
        ["config", "set", "zset-max-listpack-entries", "2147483648"],
        ["config", "set", "list-max-listpack-size", "-2147483648"],
        ["config", "set", "list-compress-depth", "2147483647"],
        ["hset", "h3", "a", "1"], ["sadd", "s3", "1", "a"], ["zadd", "z3", "1", "a"],
        ["rpush", "l3", "a"], ["lrange", "l", "0", "-1"], ["object", "encoding", "z3"],
        ["config", "get", "*max-*"],
    ],
    "copy_rename_move": [
        ["rpush", "l", "a", "b"], ["sadd", "s", "a", "1"], ["zadd", "z", "1", "a"],
        ["hset", "h", "a", "1"], ["hexpire", "h", "100", "FIELDS", "1", "a"], ["copy", "l", "l2"],
        ["copy", "s", "s2", "DB", "1"], ["copy", "z", "h", "REPLACE"], ["copy", "h", "h2"],
        ["copy", "h", "h", "REPLACE"], ["rename", "l", "s"], ["renamenx", "z", "h"],
        ["move", "h", "1"], ["move", "s2", "1"], ["select", "1"], ["type", "h"],
        ["object", "encoding", "s2"], ["swapdb", "0", "1"], ["lrange", "s", "0", "-1"],
        ["object", "freq", "h"], ["memory", "usage", "h", "SAMPLES", "0"], ["dbsize"],
        ["scan", "0", "TYPE", "zset"], ["scan", "0", "TYPE", "list"],
    ],
    "streams": [
        ["config", "set", "stream-node-max-entries", "2"], ["xadd", "x", "1-1", "f", "v"],
        ["xadd", "x", "1-*", "f", "v", "g", "w"], ["xadd", "x", "MAXLEN", "~", "2", "*", "f", "v"],
        ["xadd", "x", "MINID", "=", "1-2", "LIMIT", "0", "*", "a", ""],
        ["xadd", "x", "NOMKSTREAM", "18446744073709551615-18446744073709551615", "f", "v"],
        ["xadd", "x", "*", "f", "v"], ["xrange", "x", "(1-1", "+", "COUNT", I64_MAX],
        ["xrevrange", "x", "+", "(0-0", "COUNT", "1"], ["xdel", "x", "1-2", "1-1", "0-0"],
        ["xtrim", "x", "MAXLEN", "~", "0", "LIMIT", "1"], ["xtrim", "x", "MINID", "+"],
        ["xsetid", "x", "1-9", "ENTRIESADDED", I64_MAX, "MAXDELETEDID", "1-9"],
        ["xread", "COUNT", "1", "STREAMS", "x", "y", "$", "+"],
        ["xread", "BLOCK", "1", "STREAMS", "x", "0"], ["xlen", "x"], ["copy", "x", "x2"],
        ["memory", "usage", "x"], ["config", "set", "stream-node-max-bytes", "1"],
        ["xadd", "x2", "*", "f", "v"], ["xrange", "x2", "-", "+"], ["unlink", "x2"],
    ],
    "stream_groups": [
        ["xgroup", "create", "x", "g", "$", "MKSTREAM", "ENTRIESREAD", "0"],
        ["xadd", "x", "1-1", "f", "v"], ["xadd", "x", "2-1", "f", "v"],
        [1, "xreadgroup", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "x", ">"],
        ["xreadgroup", "GROUP", "g", "d", "COUNT", "1", "NOACK", "STREAMS", "x", "x", ">", "0"],
        ["xgroup", "setid", "x", "g", "-", "ENTRIESREAD", I64_MAX], ["xdel", "x", "1-1"],
        ["xpending", "x", "g", "IDLE", I64_MIN, "(0-0", "+", I64_MAX, "c"],
        ["xclaim", "x", "g", "e", "0", "1-1", "2-1", "IDLE", I64_MIN, "RETRYCOUNT", I64_MAX,
         "FORCE", "LASTID", "9-9"],
        ["xautoclaim", "x", "g", "f", "0", "-", "COUNT", "576460752303423487", "JUSTID"],
        ["xack", "x", "g", "2-1", "1-1"], ["xinfo", "stream", "x", "FULL", "COUNT", "0"],
        ["xinfo", "groups", "x"], ["xinfo", "consumers", "x", "g"], ["copy", "x", "x2"],
        ["xgroup", "delconsumer", "x", "g", "c"], ["xgroup", "destroy", "x2", "g"],
        ["del", "x"],
    ],
    "multi_types": [
        [0, "multi"], [0, "rpush", "l", "a"], [0, "sadd", "l", "b"], [0, "zadd", "z", "1", "a"],
        [0, "hset", "h", "f", "v"], [0, "lmove", "l", "l2", "LEFT", "RIGHT"],
        [0, "srandmember", "s", "-9223372036854775807"], [0, "exec"], [1, "watch", "l2"],
        [0, "lpush", "l2", "x"], [1, "multi"], [1, "lrange", "l2", "0", "-1"], [1, "exec"],
        [2, "watch", "h"], [0, "hpexpire", "h", "1", "FIELDS", "1", "f"], [2, "multi"],
        [2, "hgetall", "h"], [2, "zunionstore", "d", "2", "z", "h"], [2, "exec"],
    ],
    # HyperLogLog values, then bytes written over them (a VAL run past the
    # registers, an appended tail, XZERO runs far past them) for every
    # command to refuse; a low hll-sparse-max-bytes promotes early.
    "hll": [
        ["pfadd", "a", "x", "y", "z"], ["pfcount", "a"], ["pfadd", "b"], ["pfmerge", "c", "a", "b"],
        ["pfdebug", "decode", "a"], ["pfdebug", "todense", "b"], ["pfcount", "a", "b", "c"],
        ["setrange", "a", "20", b"\x83"], ["pfcount", "a"], ["pfadd", "a", "w"],
        ["append", "b", "x"], ["pfmerge", "c", "b"],
        ["set", "d", b"HYLL\x01" + bytes(11) + b"\x7f\xff" * 9], ["pfadd", "d", "q"],
        ["pfdebug", "getreg", "d"], ["config", "set", "hll-sparse-max-bytes", "30"],
        ["pfadd", "c", "1", "2", "3", "4", "5", "6", "7", "8"], ["pfdebug", "encoding", "c"],
    ],
    # Streams: IDs at the edges, trimming both ways, node limits made tiny so
    # that entries span nodes, deletions and the consumer-group bookkeeping
    # (XREAD and XREADGROUP are flagged blocking and never sent).
    "streams": [
        ["config", "set", "stream-node-max-entries", "2"],
        ["xadd", "s", "1-1", "f", "v"], ["xadd", "s", "*", "f", "v", "g", "w"],
        ["xadd", "s", "MAXLEN", "~", "3", "*", "f", "v"], ["xadd", "s", "NOMKSTREAM", "5-*", "a", "b"],
        ["xadd", "s", "18446744073709551615-18446744073709551615", "f", "v"], ["xadd", "s", "*", "f", "v"],
        ["xlen", "s"], ["xrange", "s", "-", "+", "COUNT", "2"], ["xrevrange", "s", "+", "(1-1"],
        ["xdel", "s", "1-1", "5-0"], ["xtrim", "s", "MINID", "=", "2", "LIMIT", "10"],
        ["xtrim", "s", "MAXLEN", "0"], ["xsetid", "s", "9-9", "ENTRIESADDED", "100", "MAXDELETEDID", "9-0"],
        ["xinfo", "stream", "s", "FULL", "COUNT", "1"], ["xadd", "t", " +7-1", "f", "v"],
    ],
    "stream_groups": [
        ["xadd", "s", "1-1", "f", "v"], ["xadd", "s", "2-1", "f", "v"],
        ["xgroup", "create", "s", "g", "0", "ENTRIESREAD", "0"], ["xgroup", "create", "n", "g", "$", "MKSTREAM"],
        ["xgroup", "createconsumer", "s", "g", "c"], ["xgroup", "setid", "s", "g", "1-1"],
        ["xpending", "s", "g"], ["xpending", "s", "g", "IDLE", "0", "-", "+", "10", "c"],
        ["xclaim", "s", "g", "d", "0", "1-1", "2-1", "FORCE", "RETRYCOUNT", "3", "JUSTID"],
        ["xautoclaim", "s", "g", "e", "0", "0-0", "COUNT", "1", "JUSTID"], ["xack", "s", "g", "1-1", "2-1"],
        ["xinfo", "groups", "s"], ["xinfo", "consumers", "s", "g"], ["xdel", "s", "2-1"],
        ["xgroup", "delconsumer", "s", "g", "d"], ["xgroup", "destroy", "s", "g"],
    ],
    "bitops": [
        ["setbit", "b", "7", "1"], ["setbit", "b", "4294967295", "1"], ["getbit", "b", "100"],
        ["bitcount", "b", "0", "-1", "BIT"], ["bitpos", "b", "1", "1", "-1", "BYTE"],
        ["bitop", "AND", "d", "b", "none"], ["bitop", "NOT", "e", "b"], ["bitop", "XOR", "e", "b", "d"],
        ["bitfield", "f", "SET", "i8", "#1", "-128", "OVERFLOW", "SAT", "INCRBY", "u63", "0", I64_MAX],
        ["bitfield", "f", "OVERFLOW", "FAIL", "INCRBY", "i64", "7", I64_MIN, "GET", "u1", "100"],
        ["bitfield_ro", "f", "GET", "i64", "0"], ["setbit", "b", "4294967296", "1"],
    ],
    "geo": [
        ["geoadd", "g", "13.361389", "38.115556", "a", "15.087269", "37.502669", "b"],
        ["geoadd", "g", "XX", "CH", "180", "85.05112878", "c"], ["geoadd", "g", "NX", "-180", "-85.05112878", "d"],
        ["geodist", "g", "a", "b", "km"], ["geohash", "g", "a", "none"], ["geopos", "g", "a", "d"],
        ["geosearch", "g", "FROMMEMBER", "a", "BYRADIUS", "200", "km", "ASC", "COUNT", "1", "ANY", "WITHCOORD"],
        ["geosearch", "g", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "mi", "WITHDIST", "WITHHASH"],
        ["geosearchstore", "h", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "20000", "km", "STOREDIST"],
        ["georadius", "g", "15", "37", "100", "km", "STORE", "h"], ["georadiusbymember_ro", "g", "b", "1", "m"],
    ],
    "lcs_conditional": [
        ["set", "a", "ohmytext"], ["set", "b", "mynewtext"], ["lcs", "a", "b", "IDX", "MINMATCHLEN", "2", "WITHMATCHLEN"],
        ["lcs", "a", "b", "LEN"], ["set", "a", "x", "IFEQ", "ohmytext", "GET"], ["delifeq", "a", "x"],
        ["msetex", "2", "k1", "v1", "k2", "v2", "EX", "10"],
    ],
}

# Big collections (a command takes at most 72 arguments), then UNLINK and
# the asynchronous flushes that hand them to lazy freeing.
_BIG = [["config", "set", "lazyfree-lazy-user-del", "yes"]]
for i in range(12):
    members = [f"m{i}_{j}" for j in range(60)]
    _BIG += [["sadd", "s", *members], ["rpush", "l", *members], ["hset", "h", *members],
             ["zadd", "z", *[x for j, m in enumerate(members) for x in (str(j), m)][:60]]]
_BIG += [["scard", "s"], ["unlink", "s", "l"], ["del", "h"], ["copy", "z", "z2"],
         ["flushall", "ASYNC"], ["sadd", "s", "a"], ["flushdb", "ASYNC"], ["flushall"]]
SEEDS["lazyfree_big"] = _BIG


def encode(binary, literal, out):
    """Runs the literal program through the target, which writes its step form to out."""
    env = dict(os.environ, KEEL_FUZZ_ENCODE=out)
    run = subprocess.run([binary, literal], env=env, capture_output=True, text=True)
    problems = [line for line in run.stderr.splitlines() if "encode:" in line]
    if run.returncode != 0 or problems:
        sys.exit(f"{literal}: cannot encode:\n" + "\n".join(problems or [run.stderr[-2000:]]))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "corpus", "fuzz_commands")
    os.makedirs(outdir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, commands in SEEDS.items():
            literal = os.path.join(tmp, name)
            with open(literal, "wb") as f:
                f.write(program(commands))
            encode(binary, literal, os.path.join(outdir, name))
    print(f"{len(SEEDS)} seeds written to {outdir}")


if __name__ == "__main__":
    main()
