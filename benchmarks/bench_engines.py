"""Engines beyond one machine's memory (issue 18): publishing and mining on DuckDB and Spark.

    python benchmarks/bench_engines.py publish TABLE.parquet --engine duckdb|memory|spark --algorithm flash|mondrian
    python benchmarks/bench_engines.py mine LINES.parquet --min-support S [--mllib]
    python benchmarks/bench_engines.py joint LINES.parquet [--min-support S] [--check]

Tables come from ``benchmarks/make_adult_like.py`` (Adult's columns and joint distribution, N rows) and
``benchmarks/make_baskets.py`` (FIMI files replicated R times as basket lines); nothing is stored in the
repository. Each run is a child process so that its peak RSS (``ru_maxrss``) is its own.

``publish`` runs ``ppdm anonymize`` (Flash k = 5 with 5% suppression, or Mondrian k = 5) on the 8 Adult
QIs with ARX's hierarchies and prints the wall time, peak RSS, the chosen node / class count and the
written file's k as pycanon measures it (``--pycanon``, on files that fit in memory).

``mine`` runs SON on Spark ``local[2]`` and, with ``--mllib``, Spark MLlib's ``FPGrowth`` on the same
lines in the same session (the peer), and checks the SON itemsets against the memory engine on the
un-replicated FIMI file (``--reference FILE.dat --replicas R``: replicating every basket R times
multiplies every count by R and keeps the frequent itemsets).
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

REPO = Path(__file__).resolve().parents[1]
QIS = "age,education,marital-status,occupation,race,sex,native-country,workclass"


def _child_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0


def publish(args) -> dict:
    out = Path(args.out or f"/tmp/ppdm-bench/release-{args.algorithm}-{args.engine}.parquet")
    cmd = [sys.executable, "-m", "parties.cli", "anonymize", args.table, "-o", str(out), "--qi", QIS,
           "--sensitive", "salary-class", "--hierarchies", str(REPO / "anonymize" / "data"),
           "--algorithm", args.algorithm, "--k", "5", "--engine", args.engine, "--report", str(out) + ".json"]  # fmt: skip
    if args.algorithm == "flash":
        cmd += ["--max-suppression", "0.05"]
    if args.engine == "memory":
        cmd += ["--queries", "0"]
    if args.engine == "duckdb" and args.memory_limit:
        cmd += ["--memory-limit", args.memory_limit]
    if args.engine == "spark":
        cmd += ["--spark-master", args.spark_master]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"anonymize failed: {r.stderr.strip()[-400:]}")
    rep = json.loads(Path(str(out) + ".json").read_text())
    res = {
        "engine": args.engine,
        "algorithm": args.algorithm,
        "rows": rep["metrics"]["rows"],
        "wall_s": round(wall, 1),
        "peak_rss_mb": round(_child_rss_mb(), 0),
        "levels": rep.get("levels"),
        "classes": rep["metrics"]["achieved"]["classes"],
        "k": rep["metrics"]["achieved"]["k"],
        "suppressed": rep["metrics"]["suppressed_rows"],
        "distinct_tuples": rep.get("engine", {}).get("distinct_tuples"),
    }
    if args.pycanon:
        import pandas as pd
        from pycanon import anonymity

        df = pd.read_parquet(out)
        res["pycanon_k"] = int(anonymity.k_anonymity(df, QIS.split(",")))
    return res


def mine(args) -> dict:
    from anonymize.engines import TableInput
    from anonymize.engines.spark_engine import SparkEngine
    from anonymize.itemsets import frequent_itemsets, read_fimi
    from parties.ratio import exact_ratio

    ms = exact_ratio(args.min_support, "min support")
    eng = SparkEngine(args.spark_master, {"spark.driver.memory": "6g"})
    out: dict = {"lines": args.lines, "min_support": args.min_support}
    t = time.perf_counter()
    b = eng.baskets(TableInput.file(args.lines), "basket", "item", clustered=False if args.shuffle else None)
    fi = b.mine_support(ms)
    out["partitions"] = "input splits (stored in basket order)" if b.clustered else "hash partitions by basket"
    out["son_s"] = round(time.perf_counter() - t, 1)
    out["itemsets"] = len(fi)
    if args.reference:
        ref = frequent_itemsets(read_fimi(args.reference), ms)
        names = b.item_names
        got = {frozenset(names[i] for i in s): int(c) for s, c in fi}
        want = {frozenset(s): int(c) * args.replicas for s, c in ref}
        out["equal_to_memory_engine"] = got == want
    if args.mllib:
        from pyspark.ml.fpm import FPGrowth
        from pyspark.sql import functions as F

        t = time.perf_counter()
        df = eng.spark.read.parquet(os.path.abspath(args.lines))
        baskets = df.groupBy("basket").agg(F.collect_set("item").alias("items"))
        model = FPGrowth(itemsCol="items", minSupport=float(ms), minConfidence=1.0).fit(baskets)
        n = model.freqItemsets.count()
        out["mllib_fpgrowth_s"] = round(time.perf_counter() - t, 1)
        out["mllib_itemsets"] = int(n)
        out["speedup_vs_mllib"] = round(out["mllib_fpgrowth_s"] / out["son_s"], 2)
    b.close()
    eng.close()
    return out


def joint(args) -> dict:
    """Three daemons (``ppdm mine --local``'s cluster): party p0's ``args.lines`` on DuckDB (``engine =
    "duckdb"``), p1 and p2 the FIMI file ``args.small`` as Parquet in memory; a horizontal job at
    ``--min-support``. Reports wall time and each daemon's peak RSS, and checks the itemsets against a
    centralized SON run over the three tables on DuckDB (itself checked against brute force and mlxtend
    in tests/test_engines_mining.py)."""
    import tempfile

    import numpy as np
    import pandas as pd

    from anonymize.engines import TableInput
    from anonymize.engines.duckdb_engine import DuckDBEngine
    from anonymize.itemsets import read_fimi
    from anonymize.itemsets.support import min_count_for
    from parties.analyst.local_cluster import LocalCluster
    from parties.ratio import exact_ratio

    with tempfile.TemporaryDirectory(prefix="ppdm-joint-") as d:
        db = read_fimi(args.small)
        tx = np.repeat(np.arange(db.n_transactions, dtype=np.int64), np.diff(db.indptr))
        data = [{"lines": {"path": os.path.abspath(args.lines), "transaction": "basket", "item": "item",
                           "engine": "duckdb"}}]  # fmt: skip
        files = [os.path.abspath(args.lines)]
        for p in (1, 2):
            f = Path(d) / f"p{p}.parquet"
            pd.DataFrame({"basket": tx + p * 10**12, "item": db.items[db.indices]}).to_parquet(f)
            data.append({"lines": {"path": str(f), "transaction": "basket", "item": "item"}})
            files.append(str(f))
        params = {"min_support": args.min_support, "data": "lines"}
        with LocalCluster(3, workdir=Path(d) / "c", data={f"p{i}": x for i, x in enumerate(data)},
                          policy={"min_parties": 2}, limits={"session_timeout": 7200}) as c:  # fmt: skip
            t0 = time.perf_counter()
            out = c.run_job("mine.horizontal", params, timeout=7200)
            wall = time.perf_counter() - t0
        rep = next(v for v in out.values() if "itemsets" in v)
        got = {frozenset(x["items"]): x["count"] for x in rep["itemsets"]}
        res = {
            "wall_s": round(wall, 1),
            "peak_rss_mb": {k: round(v["peak_rss_bytes"] / 2**20) for k, v in out.items()},
            "transactions": rep["transactions"],
            "itemsets": len(got),
        }
        if args.check:
            with DuckDBEngine() as eng:
                b = eng.baskets(TableInput(paths=tuple(files), fmt="parquet"), "basket", "item")
                fi = b.mine(min_count_for(exact_ratio(args.min_support, "min support"), b.n_transactions))
                want = {frozenset(b.item_names[i] for i in s): int(n) for s, n in fi}
                b.close()
            res["equal_to_centralized"] = got == want
        return res


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    a = sub.add_parser("publish")
    a.add_argument("table")
    a.add_argument("--engine", default="duckdb", choices=("memory", "duckdb", "spark"))
    a.add_argument("--algorithm", default="flash", choices=("flash", "mondrian"))
    a.add_argument("--memory-limit", default=None)
    a.add_argument("--spark-master", default="local[2]")
    a.add_argument("--out", default=None)
    a.add_argument("--pycanon", action="store_true")
    m = sub.add_parser("mine")
    m.add_argument("lines")
    m.add_argument("--min-support", required=True)
    m.add_argument("--spark-master", default="local[2]")
    m.add_argument("--mllib", action="store_true")
    m.add_argument("--shuffle", action="store_true", help="always repartition by basket (no input-order path)")
    m.add_argument("--reference", default=None)
    m.add_argument("--replicas", type=int, default=1)
    j = sub.add_parser("joint")
    j.add_argument("lines")
    j.add_argument("--small", default=str(REPO.parent / "shared" / "data" / "fimi" / "T10I4D100K.dat"))
    j.add_argument("--min-support", default="0.01")
    j.add_argument("--check", action="store_true")
    args = p.parse_args()
    res = {"publish": publish, "mine": mine, "joint": joint}[args.what](args)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
