"""Benchmark randomization (issue 11 targets) and the DP mechanisms, with OpenDP as the DP peer.

    python benchmarks/bench_randomize_dp.py            # everything (~30 s)
    python benchmarks/bench_randomize_dp.py --json     # machine-readable
    python benchmarks/bench_randomize_dp.py --no-peer  # without OpenDP (pip install opendp)

1. Reconstruction: 100 k values from a bimodal and a uniform source on [0, 1], perturbed with
   uniform or Gaussian noise wide enough for 100% privacy at 95% confidence (Agrawal–Srikant:
   the 95% interval is as wide as the data's range), reconstructed by AS and EM on 20 intervals of
   the public range; information loss ½∫|f − f̂| (target ≤ 0.15), iterations, time, and the
   conditional-entropy privacy 2^h(X|Z) of the true distribution.
2. ByClass naive Bayes on Adult (../shared/data/adult, or --adult DIR; salary-class as class):
   age and education-num (UCI's ordinal code of education — the shared copy has no
   hours-per-week) perturbed at 100% privacy, 20,000 training rows, the other 10,162 for testing;
   accuracy of NB on reconstructed distributions vs NB on the original values with the same
   intervals (target: within 5 points), vs NB trained directly on perturbed values, vs majority.
3. DP: a histogram query (74 age bins) over 1 M rows with a predicate, ε = 0.5, exact discrete
   Laplace (target ≤ 0.5 s); count and bounded sum over 1 M rows; noise shares for 100 k counts.
   Peers in the same process: OpenDP 0.16 ``make_count_by_categories >> then_laplace`` (its
   exact sampler, Rust; the time includes converting the column to a Python list, which OpenDP
   needs), and numpy's floating-point ``histogram + Generator.laplace`` (inexact; the floor).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anonymize.dp import RandomSource, dp_answer, noise_share  # noqa: E402
from anonymize.publish.io import read_table  # noqa: E402
from anonymize.randomize import (  # noqa: E402
    HistogramNaiveBayes,
    Noise,
    ReconstructedNaiveBayes,
    conditional_privacy,
    information_loss,
    perturb,
    reconstruct,
    scale_for_privacy,
)
from anonymize.randomize.reconstruct import histogram_on  # noqa: E402

EDUCATION = [
    "Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad",
    "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate",
]  # fmt: skip


def best_of(fn, repeat=3):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def bench_reconstruction(n: int = 100_000, bins: int = 20) -> list[dict]:
    rng = np.random.default_rng(2026)
    sources = {
        "bimodal": np.clip(np.where(rng.random(n) < 0.5, rng.normal(0.25, 0.07, n), rng.normal(0.75, 0.07, n)), 0, 1),
        "uniform": rng.uniform(0, 1, n),
    }
    rows = []
    for name, x in sources.items():
        for kind in ("uniform", "gaussian"):
            noise = Noise(kind, scale_for_privacy(kind, 1.0, 0.95))
            z = perturb(x, noise, RandomSource(7))
            p_true, _ = histogram_on(x, np.linspace(0, 1, bins + 1))
            priv = conditional_privacy(np.linspace(0, 1, bins + 1), p_true, noise)
            for method in ("as", "em"):
                secs, rec = best_of(
                    lambda m=method, z=z, nz=noise: reconstruct(z, nz, bins=bins, method=m, domain=(0, 1))
                )
                rows.append(
                    {
                        "source": name,
                        "noise": kind,
                        "scale": round(noise.scale, 4),
                        "method": method,
                        "information_loss": round(information_loss(x, rec), 4),
                        "iterations": rec.iterations,
                        "converged": rec.converged,
                        "seconds": round(secs, 4),
                        "interval_width_95": round(noise.interval_width(0.95), 4),
                        "conditional_privacy": round(priv["conditional_privacy"], 4),
                        "privacy_loss": round(priv["privacy_loss"], 4),
                    }
                )
    return rows


def bench_naive_bayes(adult_dir: Path) -> dict:
    df = read_table(adult_dir / "adult.csv")
    df["education-num"] = df["education"].map({e: i + 1 for i, e in enumerate(EDUCATION)})
    perm = np.random.default_rng(0).permutation(len(df))
    train, test = df.iloc[perm[:20000]], df.iloc[perm[20000:]]
    attrs = ["age", "education-num"]
    doms = {"age": (17.0, 91.0), "education-num": (0.5, 16.5)}
    bins = 16
    out = {
        "train_rows": len(train),
        "test_rows": len(test),
        "attributes": attrs,
        "majority": round(float((test["salary-class"] == train["salary-class"].mode()[0]).mean()), 4),
    }
    for kind in ("uniform", "gaussian"):
        noise = {a: Noise(kind, scale_for_privacy(kind, doms[a][1] - doms[a][0], 0.95)) for a in attrs}
        pert = train.copy()
        for i, a in enumerate(attrs):
            pert[a] = perturb(train[a], noise[a], RandomSource(100 + i))
        for method in ("as", "em"):
            nb = ReconstructedNaiveBayes(noise, bins=bins, method=method, domains=doms).fit(pert, "salary-class", attrs)
            base = HistogramNaiveBayes(nb.edges_).fit(train, "salary-class")
            raw = HistogramNaiveBayes(nb.edges_).fit(pert, "salary-class")
            acc, acc0, acc_raw = (m.score(test, "salary-class") for m in (nb, base, raw))
            out[f"{kind}/{method}"] = {
                "reconstructed": round(acc, 4),
                "original": round(acc0, 4),
                "perturbed_no_reconstruction": round(acc_raw, 4),
                "gap_points": round(100 * (acc0 - acc), 2),
            }
    return out


def bench_dp(rows: int, peer: bool) -> dict:
    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {"age": rng.integers(17, 91, rows), "hours": rng.integers(1, 100, rows), "sex": rng.choice(["F", "M"], rows)}
    )
    q = {"agg": "histogram", "column": "age", "bins": list(range(17, 92)), "where": [["sex", "==", "F"]]}
    out: dict = {"rows": rows}
    secs, ans = best_of(lambda: dp_answer(df, q, "0.5", RandomSource()))
    out["histogram_74_bins_seconds"] = round(secs, 4)
    out["histogram_noise_std"] = round(ans.mechanism["noise_std"], 3)
    secs, _ = best_of(lambda: dp_answer(df, {"agg": "count", "where": [["age", ">=", 40]]}, "0.5", RandomSource()))
    out["count_seconds"] = round(secs, 4)
    secs, _ = best_of(
        lambda: dp_answer(df, {"agg": "sum", "column": "hours", "lower": 0, "upper": 99}, "0.5", RandomSource())
    )
    out["sum_seconds"] = round(secs, 4)
    secs, _ = best_of(lambda: noise_share(3, "1", 1, RandomSource(), size=100_000))
    out["noise_shares_100k_seconds"] = round(secs, 4)

    def numpy_float():
        sel = df["age"].to_numpy()[df["sex"].to_numpy() == "F"]
        h, _ = np.histogram(sel, bins=np.arange(17, 92))
        return h + np.random.default_rng().laplace(0, 2.0, len(h))

    secs, _ = best_of(numpy_float)
    out["peer_numpy_float_laplace_seconds"] = round(secs, 4)
    if peer:
        try:
            import opendp.prelude as odp

            odp.enable_features("contrib")
            meas = odp.t.make_count_by_categories(
                odp.vector_domain(odp.atom_domain(T=int)),
                odp.symmetric_distance(),
                categories=list(range(17, 91)),
                TOA=int,
            ) >> odp.m.then_laplace(scale=2.0)

            def opendp_run():
                sel = df["age"].to_numpy()[df["sex"].to_numpy() == "F"]
                return meas(sel.tolist())

            secs, _ = best_of(opendp_run, repeat=2)
            out["peer_opendp_seconds"] = round(secs, 4)
            out["ratio_opendp_over_ppdm"] = round(secs / out["histogram_74_bins_seconds"], 1)
        except ImportError:
            out["peer_opendp_seconds"] = None
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--adult", type=Path, default=Path(os.environ.get("PPDM_ADULT", ROOT.parent / "shared" / "data" / "adult"))
    )
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the DP benchmark table")
    ap.add_argument("--no-peer", action="store_true", help="skip OpenDP")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    rep: dict = {"reconstruction": bench_reconstruction()}
    if (args.adult / "adult.csv").exists():
        rep["naive_bayes_adult"] = bench_naive_bayes(args.adult)
    rep["dp"] = bench_dp(args.rows, not args.no_peer)
    if args.json:
        print(json.dumps(rep, indent=2))
        return 0
    print(
        "Reconstruction: 100,000 values on [0, 1], 100% privacy at 95% confidence, 20 intervals (target loss <= 0.15)"
    )
    print(
        f"  {'source':<8} {'noise':<9} {'scale':>6} {'method':<6} {'loss':>6} {'iter':>5} {'seconds':>8} {'2^h(X|Z)':>9}"
    )
    for r in rep["reconstruction"]:
        print(
            f"  {r['source']:<8} {r['noise']:<9} {r['scale']:>6} {r['method']:<6} {r['information_loss']:>6} "
            f"{r['iterations']:>5} {r['seconds']:>8} {r['conditional_privacy']:>9}"
        )
    if "naive_bayes_adult" in rep:
        nb = rep["naive_bayes_adult"]
        print(
            f"Naive Bayes on Adult ({nb['train_rows']:,} train / {nb['test_rows']:,} test, {', '.join(nb['attributes'])} "
            f"at 100% privacy; majority class {nb['majority']}):"
        )
        for k, v in nb.items():
            if isinstance(v, dict):
                print(
                    f"  {k:<14} reconstructed {v['reconstructed']}  original {v['original']}  "
                    f"(gap {v['gap_points']} points)  perturbed without reconstruction {v['perturbed_no_reconstruction']}"
                )
    d = rep["dp"]
    print(f"DP over {d['rows']:,} rows, epsilon 0.5, exact discrete Laplace (target histogram <= 0.5 s):")
    print(
        f"  histogram (74 bins, with a predicate) {d['histogram_74_bins_seconds']} s  (noise std {d['histogram_noise_std']})"
    )
    print(
        f"  count {d['count_seconds']} s, bounded sum {d['sum_seconds']} s, 100,000 noise shares {d['noise_shares_100k_seconds']} s"
    )
    print(f"  peer numpy floating-point histogram + Laplace: {d['peer_numpy_float_laplace_seconds']} s")
    if d.get("peer_opendp_seconds"):
        print(
            f"  peer OpenDP count_by_categories >> laplace: {d['peer_opendp_seconds']} s ({d['ratio_opendp_over_ppdm']}x ppdm)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
