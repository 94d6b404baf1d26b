"""Association-rule hiding: every algorithm side by side on mushroom, retail and T10I4D100K.

    python benchmarks/bench_hiding.py                 # the full table + the two targets
    python benchmarks/bench_hiding.py --quick         # mushroom and retail only, no exact on big data
    python benchmarks/bench_hiding.py --json

For each dataset (mushroom 30%, retail 0.5%, T10I4D100K 0.5%) five sensitive
itemsets are drawn with ``numpy.random.default_rng(--seed)`` uniformly among the
frequent 2- and 3-itemsets, and each algorithm hides them: heuristic 2.a with the
side-effect victim (ppdm's default), 2.a with the max-support victim (the paper's),
2.c (round-robin), SWA (ψ auto), border-based and exact (integer program, when its
size guard allows). Printed per run: hiding failure, non-sensitive frequent itemsets
lost (misses cost), ghost itemsets, dissimilarity dif(D, D'), items removed and
seconds — ``sanitize`` is mining D once plus the algorithm, ``measure`` re-mines D'
for the metrics (not part of hiding).

Targets (issue 9): hiding 5 itemsets on retail at 0.5% with the heuristic ≤ 10 s and
hiding failure 0; exact on mushroom 30% with 3 sensitive itemsets ≤ 60 s and misses
cost no higher than the heuristic's. No peer: no maintained Python implementation of
these algorithms exists to run in the same process (PPDM toolkits such as the
original authors' are not public); the exact solver's lower bound is the reference
for how far each heuristic is from optimal where it is proven.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anonymize.hiding import InstanceTooLarge, hide  # noqa: E402
from anonymize.itemsets import frequent_itemsets, read_fimi  # noqa: E402

DATASETS = [("mushroom", "0.3"), ("retail", "0.005"), ("T10I4D100K", "0.005")]
RUNS = [
    ("heuristic 2a", "heuristic", {"strategy": "2a"}),
    ("heuristic 2a max-sup", "heuristic", {"strategy": "2a", "victim": "max-support"}),
    ("heuristic 2c", "heuristic", {"strategy": "2c"}),
    ("swa", "swa", {}),
    ("border", "border", {}),
    ("exact", "exact", {"time_limit": 50.0}),
]


def data_path(name: str, arg: str | None) -> Path:
    if name == "mushroom":
        return ROOT / "anonymize" / "data" / "mushroom.dat"
    for cand in (arg, os.environ.get("PPDM_FIMI_DIR"), ROOT.parent / "shared" / "data" / "fimi"):
        if cand and (Path(cand) / f"{name}.dat").exists():
            return Path(cand) / f"{name}.dat"
    sys.exit(f"bench_hiding: {name}.dat not found (use --data-dir or PPDM_FIMI_DIR)")


def pick(db, minsup: str, n: int, seed: int) -> list[list[int]]:
    """``n`` distinct frequent 2- and 3-itemsets, uniformly with a seeded generator."""
    fi = frequent_itemsets(db, minsup)
    cands = [list(s) for k in (2, 3) for s in fi.itemsets(k).tolist()]
    rng = np.random.default_rng(seed)
    return [cands[i] for i in sorted(rng.choice(len(cands), size=n, replace=False).tolist())]


def run_one(db, sens, minsup, algo, kw) -> dict:
    t = time.perf_counter()
    try:
        _, rep = hide(db, sens, minsup, algorithm=algo, seed=0, **kw)
    except InstanceTooLarge as e:
        return {"skipped": f"size guard: {e.variables:,} variables, {e.constraints:,} constraints"}
    d = rep.to_dict()
    out = {
        k: d[k]
        for k in (
            "hiding_failure",
            "lost_itemsets",
            "nonsensitive_itemsets",
            "misses_cost",
            "ghost_itemsets",
            "dissimilarity",
            "items_removed",
        )
    }
    out.update(sanitize_s=round(rep.seconds, 3), measure_s=round(rep.measure_seconds, 3))
    out["wall_s"] = round(time.perf_counter() - t, 3)
    if algo == "exact":
        det = rep.details
        out["exact"] = {
            k: det.get(k) for k in ("variables", "constraints", "optimal", "lower_bound", "source", "solver_seconds")
        }
    return out


def fmt_row(name: str, r: dict) -> str:
    if "skipped" in r:
        return f"  {name:<22} {r['skipped']}"
    s = (
        f"  {name:<22} {r['hiding_failure']:>4.2g} {r['lost_itemsets']:>6,} {100 * r['misses_cost']:>7.2f}%"
        f" {r['ghost_itemsets']:>6} {r['dissimilarity']:>9.5f} {r['items_removed']:>8,} {r['sanitize_s']:>9.2f}"
        f" {r['measure_s']:>8.2f}"
    )
    if "exact" in r:
        e = r["exact"]
        s += f"   {'optimal' if e['optimal'] else 'lower bound ' + str(e['lower_bound'])} ({e['source']})"
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="mushroom and retail, no exact on retail")
    ap.add_argument("--seed", type=int, default=2026, help="seed of the sensitive itemset draw")
    ap.add_argument("--sensitive", type=int, default=5, help="sensitive itemsets per dataset")
    ap.add_argument("--data-dir")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results: dict = {"seed": args.seed, "tables": {}, "targets": {}}
    sets = DATASETS[:2] if args.quick else DATASETS
    head = (
        f"  {'algorithm':<22} {'HF':>4} {'lost':>6} {'MC':>8} {'ghosts':>6} {'dif':>9} {'removed':>8}"
        f" {'sanitize':>9} {'measure':>8}"
    )
    for name, minsup in sets:
        db = read_fimi(data_path(name, args.data_dir))
        sens = pick(db, minsup, args.sensitive, args.seed)
        table = {}
        if not args.json:
            print(f"\n{name} at {float(minsup):.1%} ({db.n_transactions:,} transactions), sensitive: {sens}")
            print(head)
        for label, algo, kw in RUNS:
            if args.quick and algo == "exact" and name != "mushroom":
                continue
            r = run_one(db, sens, minsup, algo, kw)
            table[label] = r
            if not args.json:
                print(fmt_row(label, r), flush=True)
        results["tables"][name] = {"min_support": minsup, "sensitive": sens, "runs": table}
    # target 1: retail, 5 itemsets, heuristic ≤ 10 s with hiding failure 0
    r = results["tables"]["retail"]["runs"]["heuristic 2a"]
    results["targets"]["retail_heuristic"] = {
        "seconds": r["sanitize_s"],
        "hiding_failure": r["hiding_failure"],
        "met": r["sanitize_s"] <= 10 and r["hiding_failure"] == 0,
    }
    # target 2: exact on mushroom 30% with 3 sensitive itemsets ≤ 60 s, misses ≤ the heuristic's
    db = read_fimi(data_path("mushroom", None))
    sens3 = pick(db, "0.3", 3, args.seed)
    ex = run_one(db, sens3, "0.3", "exact", {"time_limit": 50.0})
    he = run_one(db, sens3, "0.3", "heuristic", {"strategy": "2a"})
    results["targets"]["mushroom_exact_3"] = {
        "sensitive": sens3,
        "exact": ex,
        "heuristic": he,
        "met": ex["wall_s"] - ex["measure_s"] <= 60 and ex["lost_itemsets"] <= he["lost_itemsets"],
    }
    if args.json:
        print(json.dumps(results))
        return
    t1 = results["targets"]["retail_heuristic"]
    print(
        f"\ntarget: retail 0.5%, 5 itemsets, heuristic: {t1['seconds']:.2f} s (≤ 10), hiding failure "
        f"{t1['hiding_failure']} -> {'met' if t1['met'] else 'NOT met'}"
    )
    t2 = results["targets"]["mushroom_exact_3"]
    print(f"target: mushroom 30%, 3 itemsets {sens3}:")
    print(head)
    print(fmt_row("exact", ex))
    print(fmt_row("heuristic 2a", he))
    print(
        f"  exact {ex['sanitize_s']:.1f} s (≤ 60), lost {ex['lost_itemsets']} vs heuristic {he['lost_itemsets']}"
        f" -> {'met' if t2['met'] else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
