"""Secure sum with threshold: the N-party construction against the two-holder one, in the same run.

    python benchmarks/bench_threshold.py [--size 10000] [--parties 3,4] [--bits 20,62] [--repeat 2]

All parties in one process (in-memory network). ``full`` keeps Σ − t shared
among all N parties and extracts the sign with N-party GMW gates (any N − 1
colluders learn only the bits; the default); ``two-holder`` gives Σ − t to
the first two parties as two shares and runs the two-party millionaires'
protocol (faster; those two together can rebuild Σ). Times are steady state:
the session's base OTs and key agreement are done by a warm-up call first.
Printed: best wall time, the CPU time of all parties in that run (steadier on
a shared machine), and full / two-holder ratios.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mpc.channel import run_parties
from mpc.secure_sum import secure_sum_threshold


def one(n_parties: int, size: int, bits: int, full: bool, repeat: int) -> tuple[float, float]:
    rng = np.random.default_rng(7)
    lim = (1 << (bits - 1)) // n_parties
    xs = [rng.integers(-min(lim, 10**6), min(lim, 10**6) + 1, size) for _ in range(n_parties)]
    want = sum(xs) >= 0
    marks: list[tuple[float, float]] = []

    async def party(ch, x):
        await secure_sum_threshold(ch, x[:8], 0, tag="warm", bound_bits=bits, full_threshold=full)
        out = None
        for r in range(repeat):
            if ch.me == "p0":
                marks.append((time.perf_counter(), time.process_time()))
            out = await secure_sum_threshold(ch, x, 0, tag=f"r{r}", bound_bits=bits, full_threshold=full)
        if ch.me == "p0":
            marks.append((time.perf_counter(), time.process_time()))
        return out

    res = run_parties(n_parties, party, xs, timeout=1200)
    if not all((v == want).all() for v in res.values()):
        sys.exit("wrong threshold result")
    runs = [(b[0] - a[0], b[1] - a[1]) for a, b in zip(marks, marks[1:])]
    return min(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--parties", default="3,4")
    ap.add_argument("--bits", default="20,62", help="bound_bits values (|Σ − t| < 2^bits)")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    print(f"secure sum with threshold, {a.size:,} elements, steady state (load {os.getloadavg()[0]:.1f})")
    print(f"{'parties':>7}{'bits':>6}{'two-holder s':>14}{'CPU':>7}{'full s':>9}{'CPU':>7}{'ratio (CPU)':>13}")
    for n in map(int, a.parties.split(",")):
        for bits in map(int, a.bits.split(",")):
            w2, c2 = one(n, a.size, bits, False, a.repeat)
            wf, cf = one(n, a.size, bits, True, a.repeat)
            print(f"{n:>7}{bits:>6}{w2:>14.3f}{c2:>7.2f}{wf:>9.3f}{cf:>7.2f}{wf / w2:>7.1f}× ({cf / c2:.1f}×)")


if __name__ == "__main__":
    main()
