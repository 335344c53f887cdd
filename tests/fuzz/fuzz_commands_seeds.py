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
}


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
