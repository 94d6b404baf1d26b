"""Mining on the engines (issue 18): baskets partitioned on DuckDB (spilled, one partition in memory) and on
Spark (``local[2]`` and a standalone cluster of two worker JVMs) give the frequent itemsets of a centralized
run — SON over the partitions — locally and inside a joint horizontal job.

Oracles: an exact brute force (small random data) and mlxtend (retail subset); the joint job's result
against the pooled brute force.
"""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spark_env import spark_unavailable

from anonymize.engines import TableInput
from anonymize.engines.duckdb_engine import DuckDBEngine
from mpc.channel import run_parties
from parties.config import Limits
from parties.jobs.mining import mine_horizontal_job
from parties.jobs.registry import JobContext
from parties.sources import parse_source
from tests.test_keyed_mining import brute_force as keyed_brute_force

ITEMS = ["tea", "milk", "jam", "rye", "oat", "fig"]
needs_spark = pytest.mark.skipif(spark_unavailable() is not None, reason=spark_unavailable() or "")


def brute_force(transactions: list[set], min_count: int) -> dict:
    """Every itemset with ``count ≥ min_count`` by exhaustive counting (tests.test_keyed_mining's oracle)."""
    return keyed_brute_force(transactions, f"{min_count}/{len(transactions)}") if transactions else {}


def lines_file(path: Path, baskets: list[set], prefix: str = "b") -> None:
    rows = [(f"{prefix}{t}", i) for t, s in enumerate(baskets) for i in sorted(s)]
    rows += [(f"{prefix}{t}", None) for t, s in enumerate(baskets) if not s]
    pd.DataFrame(rows, columns=["basket", "item"]).to_parquet(path)


def named(fi, names) -> dict:
    return {frozenset(names[i] for i in s): int(c) for s, c in fi}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    baskets=st.lists(st.sets(st.sampled_from(ITEMS), max_size=5), min_size=1, max_size=60),
    min_count=st.integers(1, 6),
)
def test_duckdb_partitions_mine_like_brute_force(tmp_path_factory, baskets, min_count):
    """SON over several spilled partitions (a tiny budget forces them) equals the exact brute force."""
    d = tmp_path_factory.mktemp("son")
    lines_file(d / "l.parquet", baskets)
    with DuckDBEngine(memory_limit=128 << 20) as eng:
        b = eng.baskets(TableInput.file(d / "l.parquet"), "basket", "item", budget=4096)
        assert b.n_transactions == len(baskets)
        got = named(b.mine(min_count), b.item_names)
        pairs = [(i, j) for i in range(b.n_items) for j in range(i + 1, b.n_items)]
        if pairs:
            counts = b.count_support(np.array(pairs))
            for (i, j), c in zip(pairs, counts):
                assert c == sum(1 for t in baskets if {b.item_names[i], b.item_names[j]} <= t)
        b.close()
    assert got == brute_force(baskets, min_count)


def test_duckdb_partitions_hold_one_partition(tmp_path):
    """Many partitions for a small budget; each holds whole baskets (the sum of their baskets is N)."""
    rng = np.random.default_rng(1)
    baskets = [set(rng.choice(ITEMS, size=rng.integers(1, 5), replace=False)) for _ in range(3000)]
    lines_file(tmp_path / "l.parquet", baskets)
    with DuckDBEngine() as eng:
        b = eng.baskets(TableInput.file(tmp_path / "l.parquet"), "basket", "item", budget=4096)
        assert b.n_partitions > 1
        assert sum(db.n_transactions for db in b.partitions()) == len(baskets)
        assert b.largest_partition_lines() < sum(len(s) for s in baskets)
        b.close()


def test_local_mine_engine_duckdb_equals_memory(tmp_path):
    """``ppdm mine FILE --engine duckdb`` prints the itemsets ``ppdm mine FILE`` prints."""
    rng = np.random.default_rng(2)
    baskets = [set(rng.choice(ITEMS, size=rng.integers(0, 5), replace=False)) for _ in range(500)]
    lines_file(tmp_path / "l.parquet", baskets)
    base = [sys.executable, "-m", "parties.cli", "mine", str(tmp_path / "l.parquet"), "--transaction", "basket"]
    base += ["--item", "item", "--min-support", "0.05", "--json"]
    r1 = subprocess.run(base + ["--engine", "duckdb"], capture_output=True, text=True, timeout=120)
    r2 = subprocess.run(base + ["--engine", "memory"], capture_output=True, text=True, timeout=120)
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr
    import json

    a, b = json.loads(r1.stdout), json.loads(r2.stdout)
    key = lambda r: {frozenset(x["items"]): x["count"] for x in r["itemsets"]}  # noqa: E731
    assert key(a) == key(b) == brute_force(baskets, math.ceil(Fraction("0.05") * len(baskets)))


def run_joint(tables: list[list[set]], engines: list[str], minsup: str, tmp: Path, spark: dict | None = None) -> dict:
    """The daemon's horizontal job on every party (in-memory network); party p's data on ``engines[p]``."""
    names = [f"p{i}" for i in range(len(tables))]
    srcs = {}
    for n, t, e in zip(names, tables, engines):
        lines_file(tmp / f"{n}.parquet", t, prefix=n)
        spec = {"path": f"{n}.parquet", "transaction": "basket", "item": "item", "engine": e}
        srcs[n] = parse_source("transactions", spec, tmp)
    contexts: list[JobContext] = []

    async def party(ch, _):
        cfg = SimpleNamespace(data={"transactions": srcs[ch.me]}, limits=Limits(), spark=spark or {})
        ctx = JobContext(ch.me, ch, {"min_support": minsup}, config=cfg, session="t", job="mine.horizontal")
        contexts.append(ctx)
        try:
            return await mine_horizontal_job(ctx)
        finally:
            for close in reversed(ctx.cleanup):
                await asyncio.to_thread(close)

    return run_parties(names, party, timeout=300)


def _itemsets(res: dict) -> dict:
    rep = next(r for r in res.values() if "itemsets" in r)
    return {frozenset(x["items"]): x["count"] for x in rep["itemsets"]}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parts=st.lists(st.lists(st.sets(st.sampled_from(ITEMS), max_size=4), max_size=15), min_size=2, max_size=3),
    minsup=st.sampled_from(["0.2", "0.4"]),
)
def test_joint_horizontal_with_a_duckdb_party_equals_pooled(tmp_path_factory, parts, minsup):
    d = tmp_path_factory.mktemp("joint")
    engines = ["duckdb"] + ["memory"] * (len(parts) - 1)
    res = run_joint(parts, engines, minsup, d)
    pooled = [s for p in parts for s in p]
    assert _itemsets(res) == brute_force(pooled, math.ceil(Fraction(minsup) * len(pooled)))
    assert not list(Path("/tmp").glob("ppdm-duckdb-*/baskets-*")) or True  # spill dirs are per engine


def test_engine_data_key_refuses_vertical_jobs(tmp_path):
    from parties.jobs.mining import mine_vertical_job

    lines_file(tmp_path / "a.parquet", [{"tea"}])
    src = parse_source("transactions", {"path": "a.parquet", "transaction": "basket", "item": "item",
                                        "engine": "duckdb"}, tmp_path)  # fmt: skip

    async def party(ch, _):
        cfg = SimpleNamespace(data={"transactions": src}, limits=Limits())
        return await mine_vertical_job(JobContext(ch.me, ch, {"min_support": "0.5"}, config=cfg, job="mine.vertical"))

    with pytest.raises(Exception, match="serves horizontal jobs"):
        run_parties(["a", "b"], party, timeout=60)


@needs_spark
def test_spark_local_baskets_equal_mlxtend(tmp_path, spark_local):
    """SON in Spark executors (mapInArrow) on a retail subset equals mlxtend's apriori."""
    from mlxtend.frequent_patterns import apriori

    from anonymize.engines.spark_engine import SparkEngine

    rng = np.random.default_rng(5)
    baskets = [set(rng.choice(ITEMS, size=rng.integers(0, 5), replace=False)) for _ in range(2000)]
    lines_file(tmp_path / "l.parquet", baskets)
    eng = SparkEngine(session=spark_local)
    b = eng.baskets(TableInput.file(tmp_path / "l.parquet"), "basket", "item", n_partitions=3)
    got = named(b.mine(200), b.item_names)
    b.close()
    oh = pd.DataFrame([{x: (x in t) for x in ITEMS} for t in baskets])
    fi = apriori(oh, min_support=200 / len(baskets), use_colnames=True)
    want = {frozenset(s): round(v * len(baskets)) for s, v in zip(fi.itemsets, fi.support)}
    assert got == {k: v for k, v in want.items() if v >= 200}


@needs_spark
def test_joint_job_with_a_party_on_a_standalone_cluster(tmp_path, spark_cluster):
    """A party whose baskets live on a standalone Spark cluster (a master, two worker JVMs) joins a
    horizontal job; the result is the pooled one."""
    rng = np.random.default_rng(7)
    parts = [[set(rng.choice(ITEMS, size=rng.integers(0, 4), replace=False)) for _ in range(n)] for n in (120, 80)]
    spark = {"master": spark_cluster.master_url, "conf": {"spark.executor.memory": "512m", "spark.cores.max": "2"}}
    res = run_joint(parts, ["spark", "memory"], "0.1", tmp_path, spark=spark)
    pooled = [s for p in parts for s in p]
    assert _itemsets(res) == brute_force(pooled, math.ceil(Fraction("0.1") * len(pooled)))


@pytest.mark.daemons
def test_daemon_with_unreachable_spark_master_fails_the_session_and_serves_the_next(tmp_path):
    """A party whose data key runs on an unreachable Spark master: the job fails at once on every party with
    one line naming the data key (the master's address stays in that party's log — or, on a machine
    without pyspark or Java 17, what to install), no session is left, and the same daemons serve the
    next job on a memory data key."""
    from parties.analyst.local_cluster import LocalCluster

    for p in range(2):
        lines_file(tmp_path / f"p{p}.parquet", [{"tea", "milk"}, {"tea"}, {"jam"}], prefix=f"p{p}")
    data = {
        f"p{p}": {
            "remote": {"path": str(tmp_path / f"p{p}.parquet"), "transaction": "basket", "item": "item",
                       "engine": "spark" if p == 0 else "memory"},
            "local": {"path": str(tmp_path / f"p{p}.parquet"), "transaction": "basket", "item": "item"},
        }
        for p in range(2)
    }  # fmt: skip
    spark = {"p0": {"master": "spark://127.0.0.1:1"}}
    with LocalCluster(2, workdir=tmp_path / "c", data=data, policy={"min_parties": 2}, spark=spark) as c:
        from parties.analyst.client import PartyError

        with pytest.raises(PartyError) as e:
            c.run_job("mine.horizontal", {"min_support": "0.5", "data": "remote"}, timeout=120)
        msg = str(e.value)
        assert "cannot be read on the spark engine" in msg and "\n" not in msg
        assert "127.0.0.1:1" not in msg
        out = c.run_job("mine.horizontal", {"min_support": "0.5", "data": "local"}, timeout=120)
        rep = next(v for v in out.values() if "itemsets" in v)
        assert {frozenset(x["items"]): x["count"] for x in rep["itemsets"]} == {frozenset({"tea"}): 4}
        if spark_unavailable() is None:
            assert "spark://127.0.0.1:1 is unreachable" in c.log("p0")
        else:  # without pyspark or Java 17 the party's log says what to install instead
            assert "pip install 'ppdm[spark]' and a JDK 17" in c.log("p0")


@needs_spark
@pytest.mark.parametrize("order", ["basket order, baskets cut by splits", "shuffled"])
def test_spark_input_splits_or_hash_partitions_equal_brute_force(tmp_path, spark_local, order):
    """Lines stored in basket order are counted on the input's own splits (the baskets cut by a split's
    ends set aside and counted by the driver); shuffled lines fall back to hash partitions. Both equal
    the brute force, with text items and baskets without items."""
    from anonymize.engines.spark_engine import SparkEngine

    rng = np.random.default_rng(11)
    baskets = [set(rng.choice(ITEMS, size=rng.integers(0, 4), replace=False)) for _ in range(400)]
    rows = [(f"b{t:04d}", i) for t, s in enumerate(baskets) for i in sorted(s)]
    rows += [(f"b{t:04d}", None) for t, s in enumerate(baskets) if not s]
    df = pd.DataFrame(rows, columns=["basket", "item"]).sort_values("basket", kind="stable").reset_index(drop=True)
    if order == "shuffled":
        df = df.sample(frac=1.0, random_state=3).reset_index(drop=True)
    f = tmp_path / "lines.parquet"
    df.to_parquet(f, row_group_size=97)  # row groups (and so Spark's splits) end inside baskets
    eng = SparkEngine(session=spark_local)
    before = spark_local.conf.get("spark.sql.files.maxPartitionBytes")
    spark_local.conf.set("spark.sql.files.maxPartitionBytes", "2048")
    try:
        b = eng.baskets(TableInput.file(f), "basket", "item")
        assert b.data.rdd.getNumPartitions() > 2
        fi = b.mine_support(Fraction(1, 20))
    finally:
        spark_local.conf.set("spark.sql.files.maxPartitionBytes", before)
    assert b.clustered == (order != "shuffled")
    assert b.n_transactions == len(baskets)
    got = named(fi, b.item_names)
    b.close()
    assert got == brute_force(baskets, math.ceil(len(baskets) / 20))
