"""Set-protocol throughput, all parties in one process (in-memory network).

    python benchmarks/bench_sets.py [--union-items 4000] [--isect-items 20000] [--parties 3] [--repeat 2]

Prints the raw primitive rates (one thread, and through the shared worker
pool), then secure set union (Kantarcioglu–Clifton) and intersection
cardinality (Vaidya–Clifton) as *items/s = Σ input items of all parties / wall
time*. Here every party shares one process and its worker pool (one thread per
core), so the figures are bounded by this machine's cores: between daemons on
separate machines each party brings its own cores.

Cost model: union needs N·P encryptions + P embeddings + |M| decryptions per
party (P the padded size, M the merged set), the decryption sequential around
the ring (pipelined in pairs); intersection needs Σ|Sᵢ| X25519 operations per
party plus hashing its own items into the prime-order group (two Elligator 2
maps and a point addition per item). Every line also prints the process CPU
time (all parties and worker threads), steadier than wall time on a shared
machine.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from cryptography.hazmat.primitives.asymmetric import x25519

from mpc.channel import run_parties
from mpc.commutative import DHHash, PohligHellmanP256, embed_items, hash_items, run_rows
from mpc.intersection import intersection_cardinality
from mpc.set_union import secure_set_union


def timed(fn, repeat: int) -> float:
    return timed_cpu(fn, repeat)[0]


def timed_cpu(fn, repeat: int) -> tuple[float, float]:
    """Best wall time and the CPU time of that run."""
    best = (float("inf"), 0.0)
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        best = min(best, (time.perf_counter() - t, time.process_time() - c))
    return best


def make_sets(n: int, m: int, shared: float, seed: int = 1) -> list[list[bytes]]:
    """n sets of m items; a fraction ``shared`` of each is drawn from one common pool."""
    rng = np.random.default_rng(seed)
    pool = [b"common-%08d" % i for i in range(m)]
    out = []
    for p in range(n):
        k = int(m * shared)
        common = [pool[i] for i in rng.choice(m, k, replace=False)]
        out.append(common + [b"party%d-%08d" % (p, i) for i in range(m - k)])
    return out


def primitives(m: int, repeat: int) -> None:
    ph, dh = PohligHellmanP256(), DHHash()
    items = [b"item-%08d" % i for i in range(m)]
    x = embed_items(items)
    u = hash_items(items)
    k = x25519.X25519PrivateKey.generate()
    pub = x25519.X25519PublicKey.from_public_bytes
    blob = u.tobytes()
    rows = [
        ("P-256 encrypt (decode + exchange), 1 thread", lambda: ph.encrypt(x)),
        ("P-256 embed + encrypt, 1 thread", lambda: ph.encrypt_items(items)),
        ("P-256 encrypt, worker pool", lambda: asyncio.run(run_rows(ph.encrypt, x))),
        ("X25519 libsodium, 1 thread", lambda: dh.apply(u)),
        ("X25519 pyca, 1 thread", lambda: [k.exchange(pub(blob[o : o + 32])) for o in range(0, len(blob), 32)]),
        ("X25519 libsodium, worker pool", lambda: asyncio.run(run_rows(dh.apply, u))),
        ("hash to prime-order group (hash_items), 1 thread", lambda: hash_items(items)),
        ("SHA-256 only (the first release's hash)", lambda: [hashlib.sha256(it).digest() for it in items]),
    ]
    print(f"primitives ({m} items, {os.cpu_count()} cores)")
    for name, fn in rows:
        print(f"  {name:<46} {m / timed(fn, repeat):>10,.0f} ops/s")


def bench(label: str, sets, proto, repeat: int, check) -> None:
    n, total = len(sets), sum(len(s) for s in sets)
    out = {}

    def go():
        out.update(run_parties(n, proto, sets, timeout=600))

    dt, cpu = timed_cpu(go, repeat)
    check(out)
    print(f"  {label:<46} {total / dt:>10,.0f} items/s  ({total} items, {dt:.2f} s wall, {cpu:.2f} s CPU)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--union-items", type=int, default=4000, help="items per party for set union")
    ap.add_argument("--isect-items", type=int, default=20000, help="items per party for intersection")
    ap.add_argument("--parties", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    primitives(4000, a.repeat)

    n, m = a.parties, a.union_items
    print(f"secure set union, {n} parties, {m} items each, pad_to={m}")
    for shared in (0.0, 0.5):
        sets = make_sets(n, m, shared)
        want = sorted(set().union(*map(set, sets)))
        bench(
            f"{shared:.0%} of each set shared (|∪|={len(want)})",
            sets,
            lambda ch, s: secure_set_union(ch, s, pad_to=m),
            a.repeat,
            lambda out: all(v == want for v in out.values()) or sys.exit("wrong union"),  # noqa: B023
        )

    m = a.isect_items
    print(f"intersection cardinality, {m} items each")
    for parties in sorted({2, n}):
        sets = make_sets(parties, m, 0.5)
        want = len(set.intersection(*map(set, sets)))
        bench(
            f"{parties} parties (|∩|={want})",
            sets,
            lambda ch, s: intersection_cardinality(ch, s),
            a.repeat,
            lambda out: set(out.values()) == {want} or sys.exit("wrong cardinality"),  # noqa: B023
        )


if __name__ == "__main__":
    main()
