"""ppdm's frequent-itemset miner against mlxtend's fpgrowth on FIMI benchmark files.

    python benchmarks/bench_miner.py                    # retail 0.1%, T10I4D100K 0.2%, mushroom 20%
    python benchmarks/bench_miner.py --quick            # mushroom 20% and T10I4D100K 1%, one run each
    python benchmarks/bench_miner.py --datasets retail:0.005 mushroom:0.3 --repeat 5
    python benchmarks/bench_miner.py --no-mlxtend --json

For each dataset and minimum support it times, in one process:

* ppdm: ``read_fimi`` (parse + CSR) and ``frequent_itemsets`` (mining, bit columns
  included); "total" is the two together;
* mlxtend 0.25 (``pip install mlxtend``), used as its documentation shows: read the
  lines into lists, ``TransactionEncoder`` → dense bool DataFrame ("read+encode"),
  then ``fpgrowth(df, min_support, use_colnames=True)`` ("mine");

and prints seconds, the ratio mlxtend/ppdm (higher = ppdm faster) for the total and
for mining alone, and whether each result's md5 fingerprint equals
``reference_counts.json`` next to the data. ppdm's figures are the best of
``--repeat`` runs; mlxtend runs once (seconds, and ~1.7 GB for retail). The FIMI
files are looked up in ``--data-dir``, ``$PPDM_FIMI_DIR`` or ``../shared/data/fimi``
next to the repository. pyfim (Borgelt, C) does these in 0.02–0.16 s: the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anonymize.itemsets import TransactionDB, fingerprint, frequent_itemsets, read_fimi  # noqa: E402

DEFAULT = ["retail:0.001", "T10I4D100K:0.002", "mushroom:0.2"]
QUICK = ["mushroom:0.2", "T10I4D100K:0.01"]


def data_dir(arg: str | None) -> Path:
    for cand in (arg, os.environ.get("PPDM_FIMI_DIR"), ROOT.parent / "shared" / "data" / "fimi"):
        if cand and Path(cand).is_dir():
            return Path(cand)
    sys.exit("bench_miner: FIMI data not found (use --data-dir or PPDM_FIMI_DIR)")


def reference(ddir: Path) -> dict:
    p = ddir / "reference_counts.json"
    if not p.exists():
        return {}
    return {(lv["dataset"], lv["minsup"]): lv["fingerprint_md5"] for lv in json.loads(p.read_text())["levels"]}


def best_of(repeat: int, fn):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def bench_ppdm(path: Path, minsup: float, repeat: int) -> dict:
    t_read, db = best_of(repeat, lambda: read_fimi(path))
    # a fresh TransactionDB per run (same arrays, no cached supports or bit columns)
    t_mine, fi = best_of(
        repeat, lambda: frequent_itemsets(TransactionDB(db.n_transactions, db.items, db.indptr, db.indices), minsup)
    )
    t_total, _ = best_of(repeat, lambda: frequent_itemsets(read_fimi(path), minsup))
    return {"read": t_read, "mine": t_mine, "total": t_total, "n_itemsets": len(fi), "fingerprint": fingerprint(fi)}


def bench_mlxtend(path: Path, minsup: float) -> dict:
    import pandas as pd
    from mlxtend.frequent_patterns import fpgrowth
    from mlxtend.preprocessing import TransactionEncoder

    t0 = time.perf_counter()
    with open(path) as f:
        txs = [[int(x) for x in line.split()] for line in f]
    txs = [t for t in txs if t]
    te = TransactionEncoder()
    df = pd.DataFrame(te.fit(txs).transform(txs), columns=te.columns_)
    t1 = time.perf_counter()
    res = fpgrowth(df, min_support=minsup, use_colnames=True)
    t2 = time.perf_counter()
    n = len(df)
    counts = {s: int(round(p * n)) for s, p in zip(res["itemsets"], res["support"])}
    return {
        "read": t1 - t0,
        "mine": t2 - t1,
        "total": t2 - t0,
        "n_itemsets": len(res),
        "fingerprint": fingerprint(counts),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", metavar="NAME:MINSUP", help=f"default: {' '.join(DEFAULT)}")
    ap.add_argument("--quick", action="store_true", help=f"{' '.join(QUICK)}, one run each")
    ap.add_argument("--repeat", type=int, default=3, help="ppdm runs per figure (best is kept)")
    ap.add_argument("--no-mlxtend", action="store_true", help="time ppdm only")
    ap.add_argument("--data-dir", help="directory with the FIMI .dat files")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    args = ap.parse_args(argv)
    specs = args.datasets or (QUICK if args.quick else DEFAULT)
    repeat = 1 if args.quick else max(1, args.repeat)
    ddir = data_dir(args.data_dir)
    ref = reference(ddir)
    rows = []
    for spec in specs:
        name, _, ms = spec.partition(":")
        minsup = float(ms or 0.01)
        path = ddir / f"{name}.dat"
        row = {"dataset": name, "minsup": minsup, "reference": ref.get((name, minsup))}
        row["ppdm"] = bench_ppdm(path, minsup, repeat)
        if not args.no_mlxtend:
            try:
                row["mlxtend"] = bench_mlxtend(path, minsup)
            except ImportError:
                print("bench_miner: mlxtend not installed (pip install mlxtend); timing ppdm only", file=sys.stderr)
                args.no_mlxtend = True
        for who in ("ppdm", "mlxtend"):
            if who in row:
                r = row[who]
                r["matches_reference"] = None if row["reference"] is None else r["fingerprint"] == row["reference"]
        if "mlxtend" in row:
            row["ratio_total"] = row["mlxtend"]["total"] / row["ppdm"]["total"]
            row["ratio_mine"] = row["mlxtend"]["mine"] / row["ppdm"]["mine"]
        rows.append(row)
        if not args.json:
            print_row(row)
    if args.json:
        print(json.dumps(rows, indent=1))
    ok = all(r[w]["matches_reference"] is not False for r in rows for w in ("ppdm", "mlxtend") if w in r)
    return 0 if ok else 1


def print_row(row: dict) -> None:
    p = row["ppdm"]
    mark = {True: "ok", False: "MISMATCH", None: "no reference"}
    print(f"{row['dataset']} minsup {row['minsup']:g}: {p['n_itemsets']} itemsets")
    print(
        f"  ppdm     read {p['read']:7.3f} s  mine {p['mine']:7.3f} s  total {p['total']:7.3f} s  "
        f"fingerprint {mark[p['matches_reference']]}"
    )
    if "mlxtend" in row:
        m = row["mlxtend"]
        print(
            f"  mlxtend  read+encode {m['read']:7.3f} s  fpgrowth {m['mine']:7.3f} s  total {m['total']:7.3f} s  "
            f"fingerprint {mark[m['matches_reference']]}"
        )
        print(f"  ratio mlxtend/ppdm: total {row['ratio_total']:.1f}x, mining alone {row['ratio_mine']:.1f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
