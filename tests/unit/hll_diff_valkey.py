#!/usr/bin/env python3
"""hll_diff_valkey.py -- a differential check run by hand: the same random
HyperLogLog commands (PFADD of batches, PFMERGE, PFCOUNT of one key and of
two, PFDEBUG TODENSE and ENCODING, DEL, CONFIG SET hll-sparse-max-bytes)
sent to a reference server (Valkey 8.0.1) and to Keel, failing at the first
reply that differs or the first key whose bytes (GET) differ.

Usage: hll_diff_valkey.py VALKEY_PORT KEEL_PORT [SEED [STEPS]]
(both servers on 127.0.0.1, each flushed first). Exits 1 on a difference.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_hll_fixture import Conn  # noqa: E402

KEYS = ["a", "b", "c", "d"]


def random_command(rng):
    op, key = rng.random(), rng.choice(KEYS)
    if op < 0.5:
        n = rng.choice([0, 1, 3, 10, 50, 200])
        return ("pfadd", key, *[str(rng.randrange(100000)) for _ in range(n)])
    if op < 0.6:
        return ("pfmerge", key, *rng.sample(KEYS, rng.randrange(0, 3)))
    if op < 0.75:
        return ("pfcount", key)
    if op < 0.8:
        return ("pfcount", *rng.sample(KEYS, 2))
    if op < 0.83:
        return ("pfdebug", "todense", key)
    if op < 0.86:
        return ("config", "set", "hll-sparse-max-bytes",
                rng.choice([0, 30, 100, 500, 3000, 5000]))
    if op < 0.88:
        return ("del", key)
    return ("pfdebug", "encoding", key)


def reply(conn, cmd):
    try:
        return conn.cmd(*cmd)
    except RuntimeError as e:
        return "error: " + str(e)


def main():
    ref, keel = Conn(int(sys.argv[1])), Conn(int(sys.argv[2]))
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 3000
    for c in (ref, keel):
        c.cmd("flushall")
        c.cmd("config", "set", "hll-sparse-max-bytes", 3000)
    for step in range(steps):
        cmd = random_command(rng)
        want, got = reply(ref, cmd), reply(keel, cmd)
        if want != got:
            print("step %d: %r: reference %r, keel %r" % (step, cmd[:4], want, got))
            sys.exit(1)
        for key in KEYS:
            if ref.cmd("get", key) != keel.cmd("get", key):
                print("step %d: %r: the bytes of %s differ" % (step, cmd[:4], key))
                sys.exit(1)
    print("%d steps, no difference" % steps)


if __name__ == "__main__":
    main()
