"""ε-DP joint mining vs the exact joint run, in the same run: time between real daemons, and accuracy.

    python benchmarks/bench_dp_mining.py [--repeat 3] [--runs 10] [--json]

* **Time** (target: DP at ε = 1 ≤ 1.5× the exact run): 3 local daemons (mTLS, loopback), mushroom split
  horizontally, min support 30%, both runs with ``candidates="all"`` (the only mode DP allows) and
  max_len 9 (the longest itemset at 30%). The analyst's wall time per job, daemons already started,
  median of ``--repeat`` alternating runs. The DP run usually stops earlier (noisy decisions lose the
  long itemsets), so a second DP row with ε = 10⁶ — noise-free in effect, the very same levels and
  candidates as the exact run — isolates the cost of the DP machinery itself (noise sampling, truncation,
  the noisy N, the wider comparison ring).
* **Accuracy**: over ``--runs`` runs per setting (in-memory network: the same protocol code), against the
  exact itemsets — itemsets found, false positives / negatives, and the per-level share of *tested*
  candidates whose frequent/infrequent decision differs from the exact decision on the same candidate,
  split into candidates within one noise standard deviation of the threshold and the rest.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from anonymize.itemsets import apriori_gen, count_support, frequent_itemsets, min_count_for  # noqa: E402
from mpc.channel import run_parties  # noqa: E402
from parties.analyst.local_cluster import LocalCluster  # noqa: E402
from parties.joint.dp_mining import mine_horizontal_dp  # noqa: E402
from parties.joint.partition import load_transactions, split_horizontal, write_fimi  # noqa: E402

MUSHROOM = REPO / "anonymize" / "data" / "mushroom.dat"
MINSUP = "0.3"
MAX_LEN = 9


def timing(db, repeat: int) -> dict:
    n_items = int(db.items.max()) + 1
    base = {"min_support": MINSUP, "n_items": n_items, "max_len": MAX_LEN, "candidates": "all"}
    runs = {
        "exact": dict(base),
        "dp eps=1": dict(base, epsilon="1"),
        "dp eps=1e6 (noise-free, same work)": dict(base, epsilon="1000000"),
    }
    times: dict[str, list[float]] = {k: [] for k in runs}
    found: dict[str, list[int]] = {k: [] for k in runs}
    results: dict[str, list] = {k: [] for k in runs}
    with tempfile.TemporaryDirectory(prefix="ppdm-bench-dp-") as d:
        data = {}
        for i, share in enumerate(split_horizontal(db, 3)):
            f = Path(d) / f"p{i}.dat"
            write_fimi(share, f)
            data[f"p{i}"] = {"transactions": str(f)}
        budget = {"total_epsilon": "100000000", "require": False}
        with LocalCluster(3, workdir=Path(d) / "c", data=data, dp=budget) as c:
            c.run_job("ping", {}, timeout=60)  # warm connections
            for _ in range(repeat):
                for name, params in runs.items():
                    t0 = time.perf_counter()
                    out = c.run_job("mine.horizontal", params, timeout=1800)
                    times[name].append(time.perf_counter() - t0)
                    found[name].append(len(out["p0"]["itemsets"]))
                    results[name].append(sorted((tuple(i["items"]), i["count"]) for i in out["p0"]["itemsets"]))
    exact = statistics.median(times["exact"])
    same = all(r == results["exact"][0] for r in results["dp eps=1e6 (noise-free, same work)"])
    print(f"noise-free DP run gives the exact itemsets and counts: {same}", file=sys.stderr)
    return {
        name: {
            "seconds_median": statistics.median(t),
            "seconds": [round(x, 3) for x in t],
            "ratio_to_exact": statistics.median(t) / exact,
            "itemsets": found[name],
        }
        for name, t in times.items()
    }


def accuracy(db, eps: str, m: int | None, runs: int) -> dict:
    parts = split_horizontal(db, 3)
    n_items = int(db.items.max()) + 1
    exact = frequent_itemsets(db, Fraction(MINSUP)).to_dict()
    t_exact = min_count_for(Fraction(MINSUP), db.n_transactions)
    fps, fns, found = [], [], []
    per_level: dict[int, list[tuple[int, int, int, int]]] = {}  # k -> (near, near_wrong, far, far_wrong)
    for r in range(runs):

        async def party(ch, d, r=r):
            i = ch.parties.index(ch.me)
            return await mine_horizontal_dp(
                ch, d, epsilon=eps, min_support=MINSUP, n_items=n_items, max_len=MAX_LEN, max_contributions=m,
                rng=1000 * r + i,
            )  # fmt: skip

        res = run_parties(3, party, parts, timeout=1800)["p0"]
        got = {frozenset(i): c for i, c in res.frequent}
        found.append(len(got))
        fps.append(len(set(got) - set(exact)))
        fns.append(len(set(exact) - set(got)))
        cand = np.arange(n_items, dtype=np.int64).reshape(-1, 1)
        for lv in res.dp["levels"]:
            k = lv["k"]
            true = count_support(db, cand)
            dp_yes = np.array([frozenset(row) in got for row in cand.tolist()])
            wrong = dp_yes != (true >= t_exact)
            near = np.abs(true - t_exact) <= lv["noise_std"]
            per_level.setdefault(k, []).append(
                (int(near.sum()), int((wrong & near).sum()), int((~near).sum()), int((wrong & ~near).sum()))
            )
            cand = apriori_gen(cand[dp_yes]) if dp_yes.any() else cand[:0]
    levels = {}
    for k, rows in sorted(per_level.items()):
        a = np.array(rows).sum(axis=0)
        levels[k] = {
            "runs_reaching": len(rows),
            "tested": int(a[0] + a[2]),
            "disagree": (a[1] + a[3]) / max(a[0] + a[2], 1),
            "near_threshold": int(a[0]),
            "disagree_near": a[1] / max(a[0], 1),
            "disagree_far": a[3] / max(a[2], 1),
        }
    return {
        "epsilon": eps,
        "max_contributions": m,
        "exact_itemsets": len(exact),
        "found_mean": float(np.mean(found)),
        "false_positives_mean": float(np.mean(fps)),
        "false_negatives_mean": float(np.mean(fns)),
        "levels": levels,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per job (median)")
    ap.add_argument("--runs", type=int, default=10, help="runs per accuracy setting")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-timing", action="store_true")
    a = ap.parse_args()
    db = load_transactions(MUSHROOM)
    out: dict = {}
    if not a.no_timing:
        out["timing"] = timing(db, a.repeat)
    settings = [("1", None), ("1", 100), ("10", None), ("10", 100), ("100", None)]
    out["accuracy"] = [accuracy(db, e, m, a.runs) for e, m in settings]
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    if "timing" in out:
        print(f"mushroom {MINSUP}, 3 daemons, candidates all, max_len {MAX_LEN} (median of {a.repeat})")
        print(f"{'run':<38}{'seconds':>9}{'x exact':>9}  itemsets")
        for name, t in out["timing"].items():
            print(f"{name:<38}{t['seconds_median']:>9.2f}{t['ratio_to_exact']:>8.2f}x  {t['itemsets']}")
    print(
        f"\naccuracy over {a.runs} runs each (in-memory network), exact: {out['accuracy'][0]['exact_itemsets']} itemsets"
    )
    for acc in out["accuracy"]:
        print(
            f"eps {acc['epsilon']:>4}  m {str(acc['max_contributions']):>5}: found {acc['found_mean']:7.1f}  "
            f"false+ {acc['false_positives_mean']:7.1f}  false- {acc['false_negatives_mean']:7.1f}"
        )
        for k, lv in acc["levels"].items():
            print(
                f"    level {k}: reached in {lv['runs_reaching']:>2} runs, {lv['tested']:>6} candidates tested, "
                f"decision differs {100 * lv['disagree']:5.1f}%  (within 1 sd of threshold: {lv['near_threshold']:>5} "
                f"cands, {100 * lv['disagree_near']:5.1f}% differ; farther: {100 * lv['disagree_far']:5.1f}%)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
