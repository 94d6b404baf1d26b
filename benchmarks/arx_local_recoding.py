"""ARX's local transformation, as its GUI runs it, side by side with ppdm's ``--local-recoding``.

ARX (``arx/ArxLocalRecoding.java``, ARX built from source): k-anonymity, the Loss with gs-factor
GS_SEARCH and a suppression limit of 1 − 1/N for the optimal search, then
``ARXResult.optimizeIterativeFast(output, 1/N, GS_STEPS)``. ppdm: the same recipe,
``anonymize_table(metric='loss', gs_factor=GS_SEARCH, max_suppression=1 − 1/N, local_recoding=True,
local_records=1/N, local_gs_factor=GS_STEPS, suppressed_rows='arx')`` with no iteration cap (ARX's
loop has none). With ``--adaption A --limit L`` the GUI's "fixpoint adaptive" mode instead: a
suppression limit L, then ``optimizeIterative(output, GS_STEPS, ∞, A)`` — ppdm:
``max_suppression=L, local_gs_factor=GS_STEPS, local_gs_adaption=A`` (each step keeps the fraction L).
Adult, the 8 QIs of ``bench_anonymize.py``. Prints both global nodes, the rows
suppressed before and after, the time of the local steps, and whether the two releases hold the same
multiset of QI tuples.

    .venv/bin/python benchmarks/arx_local_recoding.py --arx CLASSPATH [--adult DIR] [--k 5] [--iterations 100]
        [--gs-search 0] [--gs-steps 0.05] [--adaption A --limit L]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_anonymize as B
import pandas as pd

from anonymize.publish import KAnonymity, Schema
from anonymize.publish.anonymizer import anonymize_table
from anonymize.publish.io import read_hierarchies, read_table

QIS = B.QIS  # the 8 QIs of the ARX side-by-side runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arx", required=True, metavar="CLASSPATH", help="an ARX build's classpath")
    ap.add_argument(
        "--adult", type=Path, default=None, help="Adult directory (default: $PPDM_ADULT or ../shared/data/adult)"
    )
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=100, help="N: the GUI's iterations (default 100)")
    ap.add_argument("--gs-search", type=float, default=0.0, help="the search's gs-factor (GUI: 0)")
    ap.add_argument("--gs-steps", type=float, default=0.05, help="the steps' gs-factor (GUI: 0.05)")
    ap.add_argument("--adaption", type=float, default=None, help="ARX's adaption factor (the fixpoint adaptive mode)")
    ap.add_argument("--limit", type=float, default=None, help="with --adaption: the suppression limit")
    args = ap.parse_args()
    adult = args.adult or B.default_adult()
    if not (adult / "adult.csv").exists():
        raise SystemExit(f"no adult.csv in {adult} (give --adult DIR)")
    out_dir = B.compile_arx_harness(args.arx, "ArxSideBySide.java", "ArxLocalRecoding.java")
    arx_csv = out_dir / "arx.csv"
    cmd = ["java", "-Xmx3g", "-cp", f"{args.arx}:{out_dir}", "ArxLocalRecoding", str(adult), str(args.k)]
    cmd += [str(args.iterations), str(args.gs_search), str(args.gs_steps), str(arx_csv)]
    adaptive = args.adaption is not None
    if adaptive != (args.limit is not None):
        raise SystemExit("give --adaption and --limit together")
    if adaptive:
        cmd += [str(args.adaption), str(args.limit)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"ARX failed: {p.stderr.strip()[-300:]}")
    a = json.loads(next(line for line in p.stdout.splitlines() if line.startswith("{")))
    df = read_table(adult / "adult.csv")
    hs = read_hierarchies(adult, columns=set(QIS))
    t = time.perf_counter()
    recipe: dict = (
        {"max_suppression": args.limit, "local_gs_adaption": args.adaption}
        if adaptive
        else {"max_suppression": 1.0 - 1.0 / args.iterations, "local_records": 1.0 / args.iterations}
    )
    r = anonymize_table(
        df[QIS], Schema(QIS, []), hs, algorithm="flash", models=[KAnonymity(args.k)],
        metric="loss", gs_factor=args.gs_search, local_recoding=True, local_gs_factor=args.gs_steps,
        local_iterations=10**9, suppressed_rows="arx", n_queries=0, **recipe,
    )  # fmt: skip
    ppdm_s = time.perf_counter() - t
    loc = r.report["local_recoding"]
    arx_rows = pd.read_csv(arx_csv, sep=";", dtype=str, keep_default_na=False)
    same = Counter(map(tuple, arx_rows[QIS].to_numpy().tolist())) == Counter(
        map(tuple, r.df[QIS].astype(str).to_numpy().tolist())
    )
    mode = f"limit {args.limit:g}, adaption {args.adaption:g}" if adaptive else f"N = {args.iterations}"
    print(f"k = {args.k}, {mode}, gs {args.gs_search:g} (search) / {args.gs_steps:g} (steps), Adult {len(df):,} rows")
    print(f"  global node      ARX {a['levels']}\n                   ppdm {r.levels}")
    print(f"  suppressed       ARX {a['suppressed_before']:,} -> {a['suppressed_after']:,}   "
          f"ppdm {loc['suppressed_before']:,} -> {loc['suppressed_after']:,} in {loc['iterations']} steps")  # fmt: skip
    print(
        f"  time             ARX local steps {a['local_seconds']:.1f} s   ppdm search + steps + release {ppdm_s:.1f} s"
    )
    print(f"  releases         {'the same multiset of QI tuples' if same else 'DIFFERENT tuples'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
