"""Benchmark the publishing algorithms and, with --peers / --arx, the peers in the same run.

    python benchmarks/bench_anonymize.py                 # Adult + 1M-row synthetic Mondrian
    python benchmarks/bench_anonymize.py --peers         # + anonypy Mondrian on Adult (pip install anonypy)
    python benchmarks/bench_anonymize.py --arx CP        # + ARX's optimal search, same run (CP: an ARX classpath)
    python benchmarks/bench_anonymize.py --rows 10000000 --skip-adult   # the 10M-row run (once)

--arx compiles benchmarks/arx/ArxSideBySide.java (ppdm's own harness, calling ARX's public API)
against the classpath given (an ARX build: ARX is not part of ppdm and is not downloaded here;
benchmarks/arx/build_arx.py builds one from ARX's sources) and runs ARX and ppdm's Flash on the same
configurations (ARX_CONFIGS) — k = 5 with 5 % suppression, k = 10 with 2 %, k = 5 + distinct
2-diversity with 5 %, k = 5 without suppression, k = 5 + t = 0.2 t-closeness with the hierarchical
EMD on salary-class and on occupation (then not a QI) with 5 %, all under the discernibility metric,
ppdm with ARX's treatment of suppressed rows (suppressed_rows='arx'). Per configuration one JVM and
one Python process, --warmup untimed + --repeat timed runs each, from the loaded table; it prints
medians and minima, the ratio, each process's peak RSS, and whether both chose the same node
(levels) and DM (ARX's optimum is the reference for "optimal"). --ppdm-star also times ppdm's
default 'star' release (a stricter problem) for reference.

Adult: ../shared/data/adult next to the repository (or --adult DIR): 30,162 rows, QIs age, sex, race, marital-status,
education, native-country, workclass, occupation; sensitive salary-class; k = 5, ≤ 5 % suppression
for the full-domain searches. Times are in process, best of --repeat runs, from the encoded table
(the search alone, plus "with encode" for the whole call). Scale runs go to a child process so
that its peak RSS is the run's own.

Context figures from PERF-NOTES (not measurements of this run; use --peers / --arx for those):
checking all 6,480 lattice nodes one by one from the rows 4.6 s; anonypy Mondrian k = 5 19–24 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anonymize.publish import EncodedTable, KAnonymity, Schema, TCloseness  # noqa: E402
from anonymize.publish import metrics as M  # noqa: E402
from anonymize.publish.io import read_hierarchies, read_table  # noqa: E402

QIS = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
SENS = "salary-class"
PEER = {"all_nodes_one_by_one": 4.6, "anonypy_mondrian_k5": (19.0, 24.0)}  # context, not measured here


def best_of(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def adult_table(adult_dir: Path) -> EncodedTable:
    df = read_table(adult_dir / "adult.csv")
    hs = read_hierarchies(adult_dir, columns=set(QIS))
    return EncodedTable.encode(df, Schema(QIS, [SENS]), hs)


def bench_adult(adult_dir: Path, repeat: int) -> dict:
    from anonymize.publish.fulldomain import Lattice, exhaustive
    from anonymize.publish.fulldomain.datafly import datafly
    from anonymize.publish.fulldomain.flash import flash
    from anonymize.publish.fulldomain.incognito import incognito
    from anonymize.publish.fulldomain.samarati import samarati
    from anonymize.publish.partition.mondrian import mondrian

    t = time.perf_counter()
    table = adult_table(adult_dir)
    t_encode = time.perf_counter() - t
    out = {"rows": table.n, "encode_s": t_encode, "full_domain": {}, "mondrian": {}}
    models = [KAnonymity(5)]
    print(f"Adult: {table.n:,} rows, 8 QIs, read + encode {t_encode:.3f} s")
    print(f"  full-domain, k = 5, ≤ 5 % suppression ({6480:,}-node lattice)")
    for name, fn in [
        ("flash", flash),
        ("incognito", incognito),
        ("samarati", samarati),
        ("datafly", datafly),
        ("exhaustive", exhaustive),
    ]:
        sec, r = best_of(lambda: fn(Lattice(table, models, 0.05)), repeat if name != "exhaustive" else 1)  # noqa: B023
        row = {
            "seconds": sec,
            "checked": r.stats.get("checked"),
            "nodes_returned": len(r.nodes),
            "chosen_levels": list(r.levels),
            "chosen_ncp": r.chosen.ncp,
            "chosen_suppressed": r.chosen.suppressed,
            "rows_scanned": r.stats.get("frequency_set_rows_scanned"),
        }
        out["full_domain"][name] = row
        extra = ""
        if name == "exhaustive":
            extra = (
                f"  vs one-by-one from rows {PEER['all_nodes_one_by_one']} s: ×{PEER['all_nodes_one_by_one'] / sec:.1f}"
            )
        print(
            f"    {name:<11}{sec:7.3f} s  checked {row['checked']:>5}  returned {len(r.nodes):>4} node(s)  "
            f"chosen {tuple(r.levels)} NCP {r.chosen.ncp:.4f} suppressed {r.chosen.suppressed}{extra}"
        )
    fd = out["full_domain"]
    assert sorted(fd["flash"]["chosen_levels"]) == sorted(fd["incognito"]["chosen_levels"])
    print("  Mondrian (hierarchy-aware categorical cuts)")
    for label, ms, mode in [
        ("k=5 strict", [KAnonymity(5)], "strict"),
        ("k=5 relaxed", [KAnonymity(5)], "relaxed"),
        ("k=5 + t=0.2 (EMD)", [KAnonymity(5), TCloseness(0.2, "emd")], "strict"),
    ]:
        sec, r = best_of(lambda: mondrian(table, ms, mode=mode), repeat)  # noqa: B023
        lo, hi = M.class_boxes(table, r.class_id, r.n_classes)
        row = {
            "seconds": sec,
            "classes": r.n_classes,
            "min_class": int(r.sizes.min()),
            "ncp": M.ncp(table, lo, hi)["ncp"],
            "ncp_leaves": M.ncp(table, lo, hi, categorical="leaves")["ncp"],
        }
        if any(isinstance(m, TCloseness) for m in ms):
            row["t_measured"] = _pycanon_t(table, r)
        out["mondrian"][label] = row
        lo_p, hi_p = PEER["anonypy_mondrian_k5"]
        extra = (
            f"  vs anonypy {lo_p:g}–{hi_p:g} s: ×{lo_p / sec:.0f}–{hi_p / sec:.0f}"
            if label.startswith("k=5 strict")
            else ""
        )
        tm = f"  max t (pycanon) {row['t_measured']:.4f}" if "t_measured" in row else ""
        print(
            f"    {label:<18}{sec:7.3f} s  {r.n_classes:,} classes (min {row['min_class']})  "
            f"NCP {row['ncp']:.4f} (leaves {row['ncp_leaves']:.4f}){tm}{extra}"
        )
    return out


def _pycanon_t(table, r):
    try:
        from pycanon import anonymity as pc
    except ImportError:
        return float("nan")
    from anonymize.publish.recode import release_partition

    df = release_partition(table, r.class_id, r.n_classes).reset_index(drop=True)
    for c in QIS:
        df[c] = df[c].astype(str)
    return float(pc.t_closeness(df, QIS, [SENS]))


# ---------------------------------------------------------------- synthetic scale
SYN_QIS = ["age", "zip", "hours", "income", "sex", "race", "marital-status", "education"]


def synthetic(n: int, adult_dir: Path, seed: int = 0):
    """n rows, 8 QIs: age 17–90, 5-digit ZIP (3,000 values, masking hierarchy), hours 1–99,
    income 0–250,000 (interval hierarchies built automatically), and sex, race, marital-status,
    education drawn with Adult's frequencies (Adult's ARX hierarchies); sensitive 'disease' (5 values)."""
    rng = np.random.default_rng(seed)
    ad = pd.read_csv(adult_dir / "adult.csv", sep=";")
    df = pd.DataFrame(
        {
            "age": rng.integers(17, 91, n),
            "zip": pd.Categorical.from_codes(rng.integers(0, 3000, n), [str(10000 + 7 * i) for i in range(3000)]),
            "hours": rng.integers(1, 100, n),
            "income": rng.integers(0, 250_001, n),
        }
    )
    for c in ["sex", "race", "marital-status", "education"]:
        vc = ad[c].value_counts(normalize=True)
        df[c] = pd.Categorical.from_codes(rng.choice(len(vc), size=n, p=vc.to_numpy()), vc.index.tolist())
    df["disease"] = pd.Categorical.from_codes(rng.integers(0, 5, n), ["flu", "hiv", "cancer", "none", "cold"])
    from anonymize.publish import Hierarchy

    hs = read_hierarchies(adult_dir, columns={"sex", "race", "marital-status", "education"})
    hs["zip"] = Hierarchy.masking("zip", pd.Series(df["zip"].cat.categories))
    return df, hs


def scale_child(n: int, adult_dir: Path, k: int) -> dict:
    from anonymize.publish.partition.mondrian import mondrian

    t0 = time.perf_counter()
    df, hs = synthetic(n, adult_dir)
    t_gen = time.perf_counter() - t0
    t = time.perf_counter()
    table = EncodedTable.encode(df, Schema(SYN_QIS, ["disease"]), hs)
    t_enc = time.perf_counter() - t
    del df
    t = time.perf_counter()
    r = mondrian(table, [KAnonymity(k)])
    t_mon = time.perf_counter() - t
    t = time.perf_counter()
    lo, hi = M.class_boxes(table, r.class_id, r.n_classes)
    ncp = M.ncp(table, lo, hi)["ncp"]
    t_ncp = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {
        "rows": n,
        "generate_s": t_gen,
        "encode_s": t_enc,
        "mondrian_s": t_mon,
        "ncp_s": t_ncp,
        "encode_plus_mondrian_s": t_enc + t_mon,
        "classes": r.n_classes,
        "min_class": int(r.sizes.min()),
        "rounds": r.stats["rounds"],
        "ncp": ncp,
        "peak_rss_mb": rss,
    }


def bench_scale(n: int, adult_dir: Path, k: int) -> dict:
    cmd = [sys.executable, __file__, "--child-scale", str(n), "--adult", str(adult_dir), "--k", str(k)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"scale run failed: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}")
    row = json.loads(p.stdout.strip().splitlines()[-1])
    print(
        f"Synthetic {n:,} rows × 8 QIs, Mondrian k = {k}: encode {row['encode_s']:.2f} s + Mondrian "
        f"{row['mondrian_s']:.2f} s = {row['encode_plus_mondrian_s']:.2f} s; {row['classes']:,} classes "
        f"(min {row['min_class']}), {row['rounds']} rounds, NCP {row['ncp']:.4f}; peak RSS {row['peak_rss_mb']:,.0f} MB"
    )
    return row


# ---------------------------------------------------------------- peers
# (k, suppression, distinct l on salary-class, hierarchical-EMD t-closeness (t, attribute) or None)
ARX_CONFIGS = [
    (5, 0.05, 0, None),
    (10, 0.02, 0, None),
    (5, 0.05, 2, None),
    (5, 0.0, 0, None),
    (5, 0.05, 0, (0.2, "salary-class")),
    (5, 0.05, 0, (0.2, "occupation")),
]


def default_adult() -> Path:
    """Adult's directory: ``$PPDM_ADULT``, else ``../shared/data/adult`` beside the repository."""
    return Path(os.environ.get("PPDM_ADULT", Path(__file__).resolve().parents[1].parent / "shared" / "data" / "adult"))


def compile_arx_harness(classpath: str, *sources: str) -> Path:
    """Compile ppdm's ARX harness files ``sources`` (in ``benchmarks/arx``) against the ARX build on
    ``classpath``; the directory of the classes. Exits with one line without a JDK or on a failed compile."""
    import shutil
    import tempfile

    if not shutil.which("javac") or not shutil.which("java"):
        raise SystemExit("the ARX side-by-side runs need a JDK (javac and java on PATH)")
    here = Path(__file__).resolve().parent / "arx"
    out_dir = Path(tempfile.mkdtemp(prefix="ppdm-arx-"))
    p = subprocess.run(
        ["javac", "-nowarn", "-d", str(out_dir), "-cp", classpath, *(str(here / f) for f in sources)],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        raise SystemExit(
            f"compiling the ARX harness failed (is {classpath!r} an ARX build?): {p.stderr.strip()[-300:]}"
        )
    return out_dir


def arx_spec(cfg) -> str:
    """A configuration as ArxSideBySide's argument ``k:SUP:dm[:lL][:tT@ATTR]`` (also the ppdm child's)."""
    k, sup, l, tc = cfg
    return f"{k}:{sup}:dm" + (f":l{l}" if l else "") + (f":t{tc[0]}@{tc[1]}" if tc else "")


def parse_spec(spec: str):
    p = spec.split(":")
    k, sup, l, tc = int(p[0]), float(p[1]), 0, None
    for opt in p[3:]:
        if opt.startswith("l"):
            l = int(opt[1:])
        elif opt.startswith("t"):
            t, attr = opt[1:].split("@")
            tc = (float(t), attr)
    return k, sup, l, tc


def config_label(cfg) -> str:
    k, sup, l, tc = cfg
    return (
        f"k={k}" + (f" + l={l}" if l else "") + (f" + t={tc[0]:g} hier-EMD {tc[1]}" if tc else "") + f", {sup:.0%} sup"
    )


def config_roles(cfg):
    """QIs, sensitive attributes, hierarchy columns and privacy models of a configuration — the same
    roles ArxSideBySide gives ARX: a t-closeness attribute is the sensitive one and leaves the QIs;
    salary-class is sensitive only for l-diversity or its own t-closeness (else not used)."""
    from anonymize.publish import DistinctLDiversity

    k, sup, l, tc = cfg
    sens = tc[1] if tc else (SENS if l else None)
    qis = [q for q in QIS if q != sens]
    hier_cols = set(qis) | ({sens} if tc else set())
    models = [KAnonymity(k)]
    if l:
        models.append(DistinctLDiversity(l))
    if tc:
        models.append(TCloseness(tc[0], "emd", ground="hierarchical", attribute=tc[1]))
    return qis, ([sens] if sens else []), hier_cols, models


def ppdm_child(spec: str, adult_dir: Path, warmup: int, repeat: int, suppressed_rows: str = "arx") -> dict:
    """ppdm's side of one ARX configuration, in its own process (peak RSS is the run's own): every run
    starts from a freshly read table and hierarchies (not timed, like ARX's freshly loaded Data);
    the clock covers encode + lattice + Flash with the DM optimum — what ARXAnonymizer.anonymize does.

    ``suppressed_rows='arx'`` (the comparison): ARX's semantics — the suppressed rows' '*' group is
    not judged and t-closeness compares with the whole table, the problem ARX solves. ppdm's default
    ``'star'`` also requires the '*' group to satisfy every model: a stricter problem, timed only
    for reference (``--ppdm-star``)."""
    from anonymize.publish.fulldomain import Lattice
    from anonymize.publish.fulldomain.flash import flash

    cfg = parse_spec(spec)
    qis, sens, hier_cols, models = config_roles(cfg)
    total, search, r = [], [], None
    for i in range(warmup + repeat):
        df = read_table(adult_dir / "adult.csv")
        hs = read_hierarchies(adult_dir, columns=hier_cols)
        t0 = time.perf_counter()
        table = EncodedTable.encode(df, Schema(qis, sens), hs)
        t1 = time.perf_counter()
        r = flash(Lattice(table, models, cfg[1], suppressed_rows=suppressed_rows), "dm")
        t2 = time.perf_counter()
        if i >= warmup:
            total.append(t2 - t0)
            search.append(t2 - t1)
    return {
        "spec": spec,
        "suppressed_rows": suppressed_rows,
        "seconds": total,
        "search_seconds": search,
        "levels": dict(zip(qis, (int(x) for x in r.levels))),
        "dm": float(r.chosen.dm),
        "checked": r.stats.get("checked"),
        "minimal_nodes": r.stats.get("minimal_nodes"),
        "optimum_search": r.stats.get("optimum_search"),
    }


def _run_measured(cmd: list[str]) -> tuple[int, str, str, float]:
    """Run ``cmd``; return (exit code, stdout, stderr, the child's own peak RSS in MB via wait4)."""
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return p.returncode, out.read(), err.read(), ru.ru_maxrss / 1024.0


def bench_arx(
    adult_dir: Path, classpath: str, repeat: int, warmup: int = 1, configs=None, ppdm_star: bool = False
) -> list[dict]:
    """ARX's optimal search and ppdm's Flash on the same configurations, in this run (DM metric).

    Symmetric: for each configuration one JVM (ARX) and one Python process (ppdm), each loading the
    table once per run outside the clock, ``warmup`` untimed runs then ``repeat`` timed ones; the
    clock covers ARX's ``anonymize`` and ppdm's encode + lattice + Flash. Median and minimum of both,
    the ratio of the medians, whether both chose the same node (levels) and the same DM, and each
    process's peak RSS. ppdm solves ARX's problem (``suppressed_rows='arx'``, see :func:`ppdm_child`);
    ``ppdm_star`` also times ppdm's default 'star' release for reference."""
    import shutil
    import statistics

    configs = configs or ARX_CONFIGS
    out_dir = compile_arx_harness(classpath, "ArxSideBySide.java")
    rows = []
    print(
        f"ARX vs ppdm Flash, DM metric, {adult_dir / 'adult.csv'}; per configuration one JVM and one Python process, "
        f"{warmup} warm-up + {repeat} timed runs each, from the loaded table"
    )
    print(
        f"    {'configuration':<40}{'ARX med':>9}{'min':>8}{'ppdm med':>10}{'min':>8}{'ARX/ppdm':>10}"
        f"{'ARX RSS':>9}{'ppdm RSS':>10}  optimum"
    )
    for cfg in configs:
        spec = arx_spec(cfg)
        cmd = ["java", "-Xmx2g", "-cp", f"{classpath}:{out_dir}", "ArxSideBySide", str(adult_dir), str(warmup)]
        rc, out, err, arx_rss = _run_measured([*cmd, str(repeat), spec])
        if rc != 0:
            raise SystemExit(f"ARX run failed ({spec}): {err.strip()[-300:]}")
        a = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
        cmd = [sys.executable, __file__, "--child-arx-ppdm", spec, "--adult", str(adult_dir)]
        cmd += ["--warmup", str(warmup), "--repeat", str(repeat)]
        rc, out, err, ppdm_rss = _run_measured(cmd)
        if rc != 0:
            raise SystemExit(f"ppdm run failed ({spec}): {err.strip()[-300:]}")
        b = json.loads(out.strip().splitlines()[-1])
        star = None
        if ppdm_star:
            rc, out, err, _ = _run_measured([*cmd, "--suppressed-rows", "star"])
            if rc != 0:
                raise SystemExit(f"ppdm run failed ({spec}, star): {err.strip()[-300:]}")
            star = json.loads(out.strip().splitlines()[-1])
        arx_med, arx_min = statistics.median(a["seconds"]), min(a["seconds"])
        pp_med, pp_min = statistics.median(b["seconds"]), min(b["seconds"])
        arx_dm = float(a["score"]) if a.get("levels") is not None else float("nan")
        same_dm = abs(arx_dm - b["dm"]) <= 1e-6 * max(arx_dm, 1.0)
        same_node = a.get("levels") == b["levels"]
        row = {
            "config": config_label(cfg),
            "spec": spec,
            "arx_seconds": a["seconds"],
            "arx_median": arx_med,
            "arx_min": arx_min,
            "ppdm_seconds": b["seconds"],
            "ppdm_median": pp_med,
            "ppdm_min": pp_min,
            "ppdm_search_median": statistics.median(b["search_seconds"]),
            "ratio_median": arx_med / pp_med,
            "ratio_min": arx_min / pp_min,
            "arx_levels": a.get("levels"),
            "ppdm_levels": b["levels"],
            "arx_dm": arx_dm,
            "ppdm_dm": b["dm"],
            "arx_checked": a.get("checked"),
            "ppdm_checked": b["checked"],
            "same_node": same_node,
            "same_dm": same_dm,
            "arx_peak_rss_mb": arx_rss,
            "ppdm_peak_rss_mb": ppdm_rss,
        }
        if star:
            row["ppdm_star"] = {
                "seconds": star["seconds"],
                "median": statistics.median(star["seconds"]),
                "levels": star["levels"],
                "dm": star["dm"],
            }
        rows.append(row)
        verdict = "same node" if same_node else ("same DM, other node (tie)" if same_dm else "DIFFERENT")
        print(
            f"    {row['config']:<40}{arx_med:8.3f}s{arx_min:7.3f}s{pp_med:9.3f}s{pp_min:7.3f}s"
            f"{row['ratio_median']:9.2f}×{arx_rss:7.0f}MB{ppdm_rss:8.0f}MB  {verdict}, DM {b['dm']:,.0f}"
            + ("" if same_dm else f" (ARX {arx_dm:,.0f})")
        )
        if star:
            print(
                f"    {'':<40}ppdm with its default 'star' release: median {row['ppdm_star']['median']:.3f} s, "
                f"DM {star['dm']:,.0f}"
            )
    shutil.rmtree(out_dir, ignore_errors=True)
    return rows


def bench_anonypy(adult_dir: Path) -> dict:
    try:
        from anonypy import anonypy as ap_mod
        from anonypy import mondrian as ap_mondrian
    except ImportError:
        print("anonypy not installed (pip install anonypy): peer skipped")
        return {}
    table = adult_table(adult_dir)
    df = pd.read_csv(adult_dir / "adult.csv", sep=";")
    for c in QIS + [SENS]:
        if c != "age":
            df[c] = df[c].astype("category")
    t = time.perf_counter()
    m = ap_mondrian.Mondrian(df, QIS, SENS)
    parts = m.partition(5)
    rows = ap_mod.anonymize(df, parts, QIS, SENS)
    sec = time.perf_counter() - t
    cid = np.empty(len(df), dtype=np.int64)
    for i, p in enumerate(parts):
        cid[np.asarray(p)] = i
    lo, hi = M.class_boxes(table, cid, len(parts))
    row = {
        "seconds": sec,
        "classes": len(parts),
        "output_rows": len(rows),
        "ncp_as_hierarchy_nodes": M.ncp(table, lo, hi)["ncp"],
        "ncp_leaves": M.ncp(table, lo, hi, categorical="leaves")["ncp"],
    }
    print(
        f"anonypy 0.2.1 Mondrian k = 5 on Adult: {sec:.2f} s, {len(parts):,} classes; its partition published as "
        f"hierarchy nodes: NCP {row['ncp_as_hierarchy_nodes']:.4f} (leaves {row['ncp_leaves']:.4f})"
    )
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--adult",
        type=Path,
        default=default_adult(),
    )
    ap.add_argument("--rows", type=int, default=1_000_000, help="synthetic rows for the Mondrian scale run (0: skip)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-adult", action="store_true")
    ap.add_argument("--peers", action="store_true", help="also run anonypy's Mondrian on Adult")
    ap.add_argument(
        "--arx", metavar="CLASSPATH", help="also run ARX's optimal search on Adult (an ARX build's classpath)"
    )
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs before the timed ones (ARX comparison)")
    ap.add_argument("--json", type=Path, help="write all figures here")
    ap.add_argument("--child-scale", type=int, help=argparse.SUPPRESS)
    ap.add_argument(
        "--ppdm-star", action="store_true", help="with --arx: also time ppdm's default 'star' release (reference)"
    )
    ap.add_argument("--child-arx-ppdm", metavar="SPEC", help=argparse.SUPPRESS)
    ap.add_argument("--suppressed-rows", default="arx", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child_scale:
        print(json.dumps(scale_child(a.child_scale, a.adult, a.k)))
        return 0
    if a.child_arx_ppdm:
        print(json.dumps(ppdm_child(a.child_arx_ppdm, a.adult, a.warmup, a.repeat, a.suppressed_rows)))
        return 0
    res = {}
    if not a.skip_adult:
        res["adult"] = bench_adult(a.adult, a.repeat)
    if a.rows:
        res["scale"] = bench_scale(a.rows, a.adult, a.k)
    if a.peers:
        res["anonypy"] = bench_anonypy(a.adult)
        if res["anonypy"] and "adult" in res:
            ours = res["adult"]["mondrian"]["k=5 strict"]["seconds"]
            print(f"  ratio anonypy / ppdm Mondrian: ×{res['anonypy']['seconds'] / ours:.0f}")
            res["anonypy"]["ratio_vs_ppdm"] = res["anonypy"]["seconds"] / ours
    if a.arx:
        res["arx"] = bench_arx(a.adult, a.arx, a.repeat, a.warmup, ppdm_star=a.ppdm_star)
    if a.json:
        a.json.write_text(json.dumps(res, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
