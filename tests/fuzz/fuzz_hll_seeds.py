#!/usr/bin/env python3
"""fuzz_hll_seeds.py -- writes the seed corpus of fuzz_hll
(tests/fuzz/corpus/fuzz_hll/): values built from the HyperLogLog format
(ds/hll.h) in each of the target's three modes (see fuzz_hll.c), well
formed and corrupted, with raise steps in their tails.

Usage: python3 tests/fuzz/fuzz_hll_seeds.py [OUTDIR]
"""
import os
import random
import sys

HDR = 16
REGISTERS = 16384
DENSE_BYTES = REGISTERS * 6 // 8


def header(encoding):
    return b"HYLL" + bytes([encoding]) + bytes(11)


def xzero(n):
    return bytes([0x40 | (n - 1) >> 8, (n - 1) & 0xFF])


def zero(n):
    return bytes([n - 1])


def val(v, n):
    return bytes([0x80 | (v - 1) << 2 | (n - 1)])


def zeros(n):
    """Runs of n zero registers, as the server writes them."""
    out = b""
    while n:
        run = min(n, 16384)
        out += zero(run) if run <= 64 else xzero(run)
        n -= run
    return out


def sparse_of(regs):
    """The sparse opcodes of a register list (values 0..32)."""
    out, i = b"", 0
    while i < len(regs):
        j = i
        while j < len(regs) and regs[j] == regs[i] and (regs[i] == 0 or j - i < 4):
            j += 1
        out += zeros(j - i) if regs[i] == 0 else val(regs[i], j - i)
        i = j
    return out


def dense_of(regs):
    bits = 0
    for i, r in enumerate(regs):
        bits |= r << (6 * i)
    return bits.to_bytes(DENSE_BYTES, "little")


def seed(mode, value, tail=b"", sparse_max=3000):
    """An input: mode, the value part's length, the value part, the steps,
    hll-sparse-max-bytes (fuzz_hll.c)."""
    return (bytes([mode]) + len(value).to_bytes(2, "little") + value + tail +
            sparse_max.to_bytes(2, "big"))


def steps(rng, n):
    """n raise steps: 3 bytes each (fuzz_hll.c: raise_all)."""
    return bytes(rng.randrange(256) for _ in range(3 * n))


def seeds():
    rng = random.Random(16)
    few = [0] * REGISTERS
    for i in (0, 1, 2, 100, 5000, 16383):
        few[i] = rng.randrange(1, 33)
    many = [rng.randrange(0, 33) if rng.random() < 0.3 else 0 for _ in range(REGISTERS)]
    full = [rng.randrange(0, 64) for _ in range(REGISTERS)]
    # mode 0: whole values
    yield "raw_empty_sparse", seed(0, header(1) + xzero(16384), steps(rng, 40))
    yield "raw_few_sparse", seed(0, header(1) + sparse_of(few), steps(rng, 20))
    yield "raw_dense", seed(0, header(0) + dense_of(full), steps(rng, 20))
    yield "raw_dense_short", seed(0, header(0) + dense_of(full)[:-1])
    yield "raw_bad_magic", seed(0, b"HYLX" + header(1)[4:] + xzero(16384))
    yield "raw_bad_encoding", seed(0, b"HYLL\x02" + bytes(11) + xzero(16384))
    yield "raw_header_only", seed(0, header(1))
    yield "raw_runs_past_end", seed(0, header(1) + xzero(16384) * 8)
    yield "raw_val_past_end", seed(0, header(1) + xzero(16383) + val(3, 4))
    yield "raw_cut_xzero", seed(0, header(1) + xzero(16383) + b"\x40")
    yield "raw_tail_bytes", seed(0, header(1) + sparse_of(few) + b"hello")
    # mode 1: opcodes, the rest filled with XZEROs
    yield "ops_none", seed(1, b"", steps(rng, 60))
    yield "ops_vals", seed(1, val(1, 4) + val(32, 1) + zero(64) + val(5, 2), steps(rng, 30))
    yield "ops_xzero_of_one", seed(1, xzero(1) + val(2, 1), steps(rng, 10))
    yield "ops_many", seed(1, sparse_of(many)[:600], steps(rng, 200))
    yield "ops_small_max", seed(1, sparse_of(few)[:-4], steps(rng, 300), 64)
    # mode 2: dense registers
    yield "dense_zero", seed(2, b"", steps(rng, 100))
    yield "dense_full", seed(2, dense_of(full), steps(rng, 50))
    yield "dense_max", seed(2, b"\xff" * DENSE_BYTES, steps(rng, 10))

def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                            "corpus", "fuzz_hll")
    os.makedirs(out, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
