"""Benchmark the clustering, bucketization and synthetic algorithms (issue 10 targets).

    python benchmarks/bench_clustering.py                # full Adult (../shared/data/adult or --adult DIR)
    python benchmarks/bench_clustering.py --rows 5000    # a prefix, for a quick look

Targets (2-core machine):

* GAA-CP on Adult (30,162 rows, 8 QIs age, sex, race, marital-status, education, native-country,
  workclass, occupation; ARX hierarchies), k = 10: ≤ 20 s, and a total information loss
  (:func:`anonymize.publish.metrics.gaacp_iloss`; H. Jiang, G. Zeng, H. Ma, "Greedy clustering-anonymity
  method for privacy preservation of table data-publishing", Journal of Software 28(2), 2017, §2.2)
  lower than Mondrian's
  and KACA's on the same input — each release measured by the same code. MDAV beside them (R and
  sdcMicro are not installed here, so sdcMicro's own ``mdav`` is not run; ppdm's follows its loop).
* LCA-FC on Adult with l = 5, occupation sensitive (QIs: the other 7 attributes + salary-class):
  ≤ 30 s; every class 5-diverse as measured by pycanon on the release.
* Condensation, k = 20 on Adult's numeric columns: this copy of Adult (ARX's) keeps one numeric
  column, ``age``; ``education-num`` is derived from ``education`` by UCI's coding (Preschool = 1 …
  Doctorate = 16) to give a 2-D covariance. Target: covariance of synthetic vs original within
  10 % (relative Frobenius norm). A correlated 6-D Gaussian table of the same size is run too.

Times are in process, from the encoded table, one run each (the greedy algorithms are
deterministic for a seed).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anonymize.publish import DistinctLDiversity, EncodedTable, KAnonymity, Schema, anonymize_table  # noqa: E402
from anonymize.publish import metrics as M  # noqa: E402
from anonymize.publish.io import read_hierarchies, read_table  # noqa: E402

QIS = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
LCA_QIS = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]
EDU = [
    "Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad",
    "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate",
]  # fmt: skip


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def bench_kanon(df, hs, k: int) -> dict:
    table = EncodedTable.encode(df, Schema(QIS, ["salary-class"]), hs)
    out = {}
    print(f"k-anonymity, k = {k}, {table.n:,} rows, 8 QIs — total information loss iloss (Jiang et al. §2.2)")
    for name in ("gaa-cp", "mondrian", "kaca", "mdav"):
        sec, r = timed(lambda: anonymize_table(table, algorithm=name, models=[KAnonymity(k)], n_queries=0))  # noqa: B023
        lo, hi = M.class_boxes(table, r.class_id, int(r.class_id.max()) + 1)
        il = M.gaacp_iloss(table, lo, hi)
        out[name] = {
            "seconds": sec,
            "algorithm_seconds": r.timings["search"],
            "iloss": il,
            "ncp": r.metrics["ncp"]["ncp"],
            "classes": r.metrics["achieved"]["classes"],
            "k": r.metrics["achieved"]["k"],
        }
        print(
            f"  {name:9s} {r.timings['search']:7.2f} s (whole call {sec:6.2f} s)  iloss {il:10.1f}  "
            f"NCP {r.metrics['ncp']['ncp']:.4f}  classes {r.metrics['achieved']['classes']:,}  k {r.metrics['achieved']['k']}"
        )
    g = out["gaa-cp"]["iloss"]
    for peer in ("mondrian", "kaca", "mdav"):
        print(f"  GAA-CP / {peer}: iloss ratio {g / out[peer]['iloss']:.3f}")
    print("  sdcMicro mdav: not run (no R on this machine)")
    return out


def bench_ldiv(df, hs, l: int) -> dict:
    from pycanon import anonymity as pycanon

    table = EncodedTable.encode(df, Schema(LCA_QIS, ["occupation"]), hs)
    out = {}
    print(f"l-diversity, l = {l}, occupation sensitive, {table.n:,} rows")
    for name in ("lca-fc", "lca-rc", "mondrian", "anatomy"):
        sec, r = timed(
            lambda: anonymize_table(table, algorithm=name, models=[DistinctLDiversity(l)], n_queries=0)  # noqa: B023
        )
        rec = {"seconds": sec, "algorithm_seconds": r.timings["search"]}
        if name == "anatomy":
            a = r.metrics["achieved"]["sensitive_attributes"]["occupation"]
            rec.update(max_posterior=a["max_posterior"], groups=r.metrics["achieved"]["groups"])
            print(
                f"  {name:9s} {r.timings['search']:7.2f} s  groups {rec['groups']:,}  max posterior {a['max_posterior']:.3f}"
            )
        else:
            pl = pycanon.l_diversity(r.df.reset_index(drop=True), LCA_QIS, ["occupation"])
            rec.update(
                pycanon_l=int(pl),
                il_total=r.metrics["il_total"]["total_il"],
                ncp=r.metrics["ncp"]["ncp"],
                classes=r.metrics["achieved"]["classes"],
            )
            print(
                f"  {name:9s} {r.timings['search']:7.2f} s (whole call {sec:6.2f} s)  pycanon l = {pl}  "
                f"IL {rec['il_total']:10.1f}  NCP {rec['ncp']:.4f}  classes {rec['classes']:,}"
            )
        out[name] = rec
    mq = ["age", "sex", "race", "marital-status", "native-country", "workclass"]
    sec, r = timed(
        lambda: anonymize_table(
            df,
            Schema(mq, ["occupation", "education"]),
            hs,
            algorithm="msal",
            models=[DistinctLDiversity(4)],
            n_queries=0,
        )
    )
    post = max(a["max_posterior"] for a in r.metrics["achieved"]["sensitive_attributes"].values())
    out["msal"] = {"seconds": sec, "suppressed_rows": r.metrics["suppressed_rows"], "max_posterior": post}
    print(
        f"  msal      {r.timings['search']:7.2f} s  occupation + education sensitive, l = 4: "
        f"{r.metrics['published_rows']:,} rows published, {r.metrics['suppressed_rows']:,} not placed, "
        f"max posterior {post:.3f}"
    )
    return out


def bench_condensation(df, k: int) -> dict:
    out = {}
    d = df.assign(**{"education-num": df["education"].map({e: i + 1 for i, e in enumerate(EDU)})})
    rng = np.random.default_rng(0)
    X6 = rng.normal(size=(len(df), 6)) @ rng.normal(size=(6, 6)) + rng.normal(size=6) * 10
    g6 = pd.DataFrame(X6, columns=[f"x{i}" for i in range(6)])
    print(f"condensation, k = {k}")
    for label, data, cols in (
        ("adult age+education-num", d, ["age", "education-num"]),
        ("gaussian 6-D", g6, list(g6.columns)),
    ):
        for variant in ("static", "dynamic"):
            sec, r = timed(
                lambda data=data, cols=cols, variant=variant: anonymize_table(
                    data, Schema(cols), algorithm="condensation", models=[KAnonymity(k)], options={"variant": variant}
                )
            )
            c = r.metrics["covariance"]
            out[f"{label} {variant}"] = {"seconds": sec, **c, "groups": r.metrics["achieved"]["groups"]}
            print(
                f"  {label:24s} {variant:7s} {sec:6.2f} s  covariance error {c['covariance_relative_frobenius_error']:.4f}"
                f"  standardized {c['standardized_covariance_relative_frobenius_error']:.4f}  groups {r.metrics['achieved']['groups']:,}"
            )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--adult", type=Path, default=ROOT.parent / "shared" / "data" / "adult")
    ap.add_argument("--rows", type=int, default=None, help="use the first N rows only")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--l", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    a = ap.parse_args()
    if not (a.adult / "adult.csv").exists():
        a.adult = Path("/work/shared/data/adult")
    df = read_table(a.adult / "adult.csv")
    if a.rows:
        df = df.head(a.rows)
    hs = read_hierarchies(a.adult, columns=set(QIS) | set(LCA_QIS))
    res = {
        "rows": len(df),
        "k_anonymity": bench_kanon(df, hs, a.k),
        "l_diversity": bench_ldiv(df, hs, a.l),
        "condensation": bench_condensation(df, 20),
    }
    if a.json:
        a.json.write_text(json.dumps(res, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
