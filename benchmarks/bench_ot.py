"""Oblivious-transfer throughput, both parties in one process (in-memory network).

    python benchmarks/bench_ot.py [--n 1000000] [--repeat 3]

Prints one table: 128 Chou–Orlandi base OTs, IKNP random / chosen (16-byte)
/ correlated (Z_2^64) / random-bit OT, and Naor–Pinkas 1-out-of-16 with 2-bit
messages. Both sides run in ONE thread here, so each figure is the combined
cost of sender + receiver; between two daemons the sides overlap (the lead
measures that over gRPC). "wire" is the bytes both parties sent per OT.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mpc.base_ot import base_ot_recv, base_ot_send
from mpc.channel import MemoryNetwork
from mpc.ot_1_of_n import ot_1_of_n_recv, ot_1_of_n_send
from mpc.ot_extension import (
    correlated_ot_recv,
    correlated_ot_send,
    ot_recv,
    ot_send,
    random_bit_ot_recv,
    random_bit_ot_send,
    random_ot_recv,
    random_ot_send,
)


def cases(n: int, rng: np.random.Generator):
    c = rng.integers(0, 2, n).astype(bool)
    m0, m1 = (rng.integers(0, 256, (n, 16), dtype=np.uint8) for _ in range(2))
    d = rng.integers(0, 2**63, n, dtype=np.uint64)
    n16 = max(1, n // 4)
    msgs = rng.integers(0, 4, (n16, 16, 1), dtype=np.uint8)
    c16 = rng.integers(0, 16, n16)
    cb = rng.integers(0, 2, 128).astype(bool)
    return [
        (
            "base OT (Chou–Orlandi)",
            128,
            lambda ch, t: base_ot_send(ch, "r", 128, tag=t),
            lambda ch, t: base_ot_recv(ch, "s", cb, tag=t),
        ),
        (
            "IKNP random OT",
            n,
            lambda ch, t: random_ot_send(ch, "r", n, tag=t),
            lambda ch, t: random_ot_recv(ch, "s", c, tag=t),
        ),
        (
            "IKNP chosen OT, 16 B",
            n,
            lambda ch, t: ot_send(ch, "r", m0, m1, tag=t),
            lambda ch, t: ot_recv(ch, "s", c, 16, tag=t),
        ),
        (
            "IKNP correlated OT, Z_2^64",
            n,
            lambda ch, t: correlated_ot_send(ch, "r", d, tag=t),
            lambda ch, t: correlated_ot_recv(ch, "s", c, tag=t),
        ),
        (
            "IKNP random bit OT",
            n,
            lambda ch, t: random_bit_ot_send(ch, "r", n, tag=t),
            lambda ch, t: random_bit_ot_recv(ch, "s", c, tag=t),
        ),
        (
            "1-of-16 OT, 2-bit msgs (NP99)",
            n16,
            lambda ch, t: ot_1_of_n_send(ch, "r", msgs, tag=t, bits=2),
            lambda ch, t: ot_1_of_n_recv(ch, "s", c16, 16, 1, tag=t, bits=2),
        ),
    ]


async def measure(net: MemoryNetwork, send, recv, tag: str) -> tuple[float, int]:
    s, r = net.channel("s"), net.channel("r")
    b0 = s.bytes_sent + r.bytes_sent
    t = time.perf_counter()
    await asyncio.gather(send(s, tag), recv(r, tag))
    return time.perf_counter() - t, s.bytes_sent + r.bytes_sent - b0


async def main(n: int, repeat: int) -> None:
    net = MemoryNetwork(["s", "r"], timeout=600)
    rng = np.random.default_rng(1)
    # Session set-up (base OTs for the pair, done once per session) is excluded from IKNP rows.
    await asyncio.gather(
        random_ot_send(net.channel("s"), "r", 1, tag="warm"), random_ot_recv(net.channel("r"), "s", [1], tag="warm")
    )
    print(f"OT benchmark, both parties in one thread (sender + receiver CPU), {os.cpu_count()} cores, best of {repeat}")
    print(f"{'protocol':32} {'count':>9} {'time':>10} {'rate':>14} {'wire/OT':>10}")
    for name, count, send, recv in cases(n, rng):
        best, wire = float("inf"), 0
        for i in range(repeat):
            dt, wire = await measure(net, send, recv, f"{name}/{i}")
            best = min(best, dt)
        rate = f"{count / best / 1e6:.2f} M/s" if count > 1000 else f"{count / best:,.0f} /s"
        print(f"{name:32} {count:>9,} {best * 1e3:>8.1f}ms {rate:>14} {wire / max(count, 1):>8.1f} B")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="OTs per IKNP run (1-of-16 uses n/4 transfers)")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    asyncio.run(main(a.n, a.repeat))
