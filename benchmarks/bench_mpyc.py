"""ppdm vs MPyC on the same secure sum and dot product, in the same run.

    python benchmarks/bench_mpyc.py [--sizes 100000,1000000] [--repeat 3]

ppdm: real party daemons on loopback (mTLS gRPC), pairwise-mask secure sum
among 3 parties, Gilboa/IKNP dot product between 2 parties.
MPyC (Schoenmakers; ``pip install mpyc gmpy2``): 3 parties on loopback
(``-M3``), Shamir sharing over a prime field with 64-bit secure integers;
its dot product also runs among 3 parties (MPyC needs an honest majority).
Both read the very same vectors (:mod:`parties.jobs.bench_inputs`) and both
outputs are checked against the plain result. Times are protocol times after
a start barrier (MPyC: party 0's time from ``mpc.input`` to ``mpc.output``;
ppdm: the slowest party's time from the common barrier to its output).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from parties.analyst.local_cluster import LocalCluster
from parties.jobs.bench_inputs import expected, inputs_for

HERE = Path(__file__).resolve().parent


def mpyc_run(op: str, size: int, seed: int) -> tuple[float, bool]:
    cmd = [sys.executable, str(HERE / "mpyc_party.py"), "-M3", "--op", op, "--size", str(size), "--seed", str(seed)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    m = re.search(r"RESULT seconds=([\d.]+) digest=(\w+)", r.stdout)
    if not m:
        raise RuntimeError(f"MPyC run failed: {r.stdout[-500:]} {r.stderr[-500:]}")
    name = "secure_sum" if op == "sum" else "dot_product"
    ins = [inputs_for(name, seed, i, 3, size)["x"].astype(np.int64) for i in range(3)]
    want = sum(ins) if op == "sum" else np.array(int(np.dot(ins[0], ins[1])), dtype=np.int64)
    return float(m.group(1)), hashlib.sha256(want.tobytes()).hexdigest()[:16] == m.group(2)


def ppdm_run(cluster, op: str, size: int, seed: int) -> tuple[float, bool]:
    name, parties = ("secure_sum", cluster.names[:3]) if op == "sum" else ("dot_product", cluster.names[:2])
    out = cluster.run_job("bench.mpc", {"operation": name, "size": size, "seed": seed}, timeout=1800, parties=parties)
    want = expected(name, seed, len(parties), size)
    ok = all(v["output"] == want for v in out.values() if v["output"] is not None)
    return max(v["seconds"] for v in out.values()), ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--repeat", type=int, default=3, help="best of N for each side")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    rows = []
    with LocalCluster(3, log_level="WARNING") as cluster:
        for op in ("sum", "dot"):
            for size in sizes:
                p = [ppdm_run(cluster, op, size, a.seed) for _ in range(a.repeat)]
                m = [mpyc_run(op, size, a.seed) for _ in range(a.repeat)]
                tp, okp = min(t for t, _ in p), all(ok for _, ok in p)
                tm, okm = min(t for t, _ in m), all(ok for _, ok in m)
                rows.append((op, size, tp, okp, tm, okm))
                print(f"  {op} {size}: ppdm {tp:.3f} s, MPyC {tm:.3f} s", file=sys.stderr, flush=True)
    print(
        f"{'operation':<12}{'size':>10}{'ppdm s':>10}{'ppdm el/s':>13}{'MPyC s':>10}{'MPyC el/s':>13}"
        f"{'ratio':>9}  correct"
    )
    for op, size, tp, okp, tm, okm in rows:
        label = "secure_sum" if op == "sum" else "dot_product"
        print(
            f"{label:<12}{size:>10,}{tp:>10.3f}{size / tp / 1e6:>11.2f} M{tm:>10.3f}{size / tm / 1e6:>11.2f} M"
            f"{tm / tp:>8.1f}x  ppdm={'yes' if okp else 'NO'} mpyc={'yes' if okm else 'NO'}"
        )
    return 0 if all(r[3] and r[5] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
