#!/usr/bin/env python3
"""large_free_stall.py -- does freeing a large value stall small requests?

For each server binary given, in alternating rounds: start it pinned to
CPU 0 (this script runs on CPU 1), SET a value of --size-mb, wait 1.5 s,
DEL it, then PING one request at a time for 2.5 s and keep the slowest;
then PING for another 2.5 s with nothing freed (the idle noise floor of the
machine). Prints the median over the rounds of both maxima per server, in
milliseconds. A server that gives a freed value's pages back on its main
thread shows a "after DEL" maximum well above its "idle" one.

    bench/large_free_stall.py build/release/keel-server /usr/bin/redis-server
    bench/large_free_stall.py --size-mb 200 --rounds 5 A B ...

Standard library only; the servers get --save "" and a free port.
"""
import argparse
import os
import socket
import statistics
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(port):
    deadline = time.time() + 10
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)


def command(s, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(out)
    reply = b""
    while not reply.endswith(b"\r\n"):
        reply += s.recv(65536)
    return reply


def slowest_ping(s, seconds):
    worst, end = 0.0, time.time() + seconds
    while time.time() < end:
        t = time.perf_counter()
        command(s, "PING")
        worst = max(worst, time.perf_counter() - t)
    return worst * 1000


def one_round(server, value):
    port = free_port()
    proc = subprocess.Popen(["taskset", "-c", "0", server, "--port", str(port), "--save", ""],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        big, probe = connect(port), connect(port)
        command(big, "SET", "big", value)
        time.sleep(1.5)
        command(big, "DEL", "big")
        after = slowest_ping(probe, 2.5)
        idle = slowest_ping(probe, 2.5)
        return after, idle
    finally:
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("servers", nargs="+")
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.sched_setaffinity(0, {1})
    value = b"x" * (args.size_mb * 1024 * 1024)
    results = {s: [] for s in args.servers}
    for _ in range(args.rounds):
        for server in args.servers:  # alternate servers between rounds
            results[server].append(one_round(server, value))
    print("| server | max PING after DEL of %d MB (ms) | max PING idle (ms) |" % args.size_mb)
    print("| --- | ---: | ---: |")
    for server, rows in results.items():
        after = statistics.median(r[0] for r in rows)
        idle = statistics.median(r[1] for r in rows)
        print("| %s | %.1f | %.1f |" % (server, after, idle))


if __name__ == "__main__":
    main()
