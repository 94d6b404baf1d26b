"""Benchmark ``ppdm tune`` on full Adult over k = 2 … 50 (issue 10 target: ≤ 10 s on 2 cores).

    python benchmarks/bench_tune.py              # three configurations + the per-k Flash peer on the first
    python benchmarks/bench_tune.py --peers      # the peer on every configuration (slow: ~10–60 s each)
    python benchmarks/bench_tune.py --adult DIR  # Adult elsewhere (default ../shared/data/adult)

Each configuration times :func:`anonymize.publish.policy.tune.tune` in process from the encoded
table (read + encode shown apart): the k table (one lattice sweep), Algorithm 1 (l) and Algorithm 2
(t), with the quality bound given. The peer, run in the same process on the same table, is the
direct way to get the same k table: one Flash search (``anonymize.publish.fulldomain.flash``,
fresh lattice) per k — the sweep must choose the same node for every k (checked here).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anonymize.publish import EncodedTable, KAnonymity, Schema  # noqa: E402
from anonymize.publish.fulldomain import Lattice  # noqa: E402
from anonymize.publish.fulldomain.flash import flash  # noqa: E402
from anonymize.publish.io import read_hierarchies, read_table  # noqa: E402
from anonymize.publish.policy.measure import PrivacyRequirement, QualityRequirement  # noqa: E402
from anonymize.publish.policy.tune import tune  # noqa: E402

QIS = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
CONFIGS = [
    # name, sensitive, QIs, max suppression, pmax, quality (metric, bound)
    ("8 QIs, salary-class, no suppression", "salary-class", QIS, 0.0, 0.8, ("ncp", 0.85)),
    ("8 QIs, salary-class, 5% suppression", "salary-class", QIS, 0.05, 0.8, ("ncp", 0.6)),
    (
        "7 QIs, occupation, 5% suppression",
        "occupation",
        [q for q in QIS if q != "occupation"],
        0.05,
        0.25,
        ("cdm", 5e4),
    ),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--adult", type=Path, default=ROOT.parent / "shared" / "data" / "adult")
    ap.add_argument("--peers", action="store_true", help="run the per-k Flash peer on every configuration")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    t = time.perf_counter()
    df = read_table(args.adult / "adult.csv")
    hs = read_hierarchies(args.adult, columns=set(QIS) | {"salary-class"})
    print(f"Adult: {len(df):,} rows, read {time.perf_counter() - t:.2f} s; k = 2 … 50")
    for i, (name, sens, qis, sup, pmax, (metric, bound)) in enumerate(CONFIGS):
        t = time.perf_counter()
        table = EncodedTable.encode(df, Schema(qis, [sens]), hs)
        t_enc = time.perf_counter() - t
        best = None
        for _ in range(max(1, args.repeat)):
            t = time.perf_counter()
            res = tune(
                table,
                PrivacyRequirement(pmax),
                QualityRequirement(metric, bound),
                k_values=range(2, 51),
                max_suppression=sup,
            )
            sec = time.perf_counter() - t
            best = sec if best is None else min(best, sec)
        tm, st = res.timings, res.stats
        sw = st.get("k_sweep", {})
        print(f"\n{name}: encode {t_enc:.2f} s")
        print(
            f"  tune total {best:.2f} s  (k table {tm['k']:.2f} s: {sw.get('region_nodes', 0):,} of "
            f"{sw.get('nodes_in_lattice', 0):,} lattice nodes; l {tm.get('l', 0):.2f} s; t {tm.get('t', 0):.2f} s; "
            f"{st['algorithm_runs']} algorithm runs)"
        )
        ks, ls, ts = res.k, res.l, res.t
        print(
            f"  k range [{ks.kmin}, {ks.kmax}] → k = {ks.k}; l → {None if ls is None else (ls.k, ls.l)}; "
            f"t → {None if ts is None else ts.t}"
        )
        if i == 0 or args.peers:
            t = time.perf_counter()
            same = 0
            for k in range(2, 51):
                r = flash(Lattice(table, [KAnonymity(k)], sup), metric=metric)
                c = res.k.candidates[k]
                same += c.ok and tuple(c.levels.values()) == r.levels
            peer = time.perf_counter() - t
            print(
                f"  peer: one Flash search per k, fresh lattice: {peer:.2f} s for the k table alone "
                f"(tune's k table {tm['k']:.2f} s, {peer / tm['k']:.1f}x faster); same node for {same} of 49 k"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
