"""Publishing on the engines (issue 18): the DuckDB and Spark engines give the memory engine's results.

Oracles: the memory engine (``anonymize_table`` on the rows) for the chosen node, the suppressed rows,
every metric and — per input row — the released values; pycanon for the written file; a second process
holding a DuckDB database for the locked-file failure; a closed port for an unreachable Spark master.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spark_env import spark_unavailable

from anonymize.engines import EngineError, TableInput
from anonymize.engines.duckdb_engine import DuckDBEngine
from anonymize.publish.anonymizer import anonymize_table
from anonymize.publish.io import read_hierarchies, read_table
from anonymize.publish.models import DistinctLDiversity, KAnonymity
from anonymize.publish.on_engine import anonymize_on_engine, measure_on_engine, recoding
from anonymize.publish.table import EncodedTable, Schema

DATA = Path(__file__).resolve().parent.parent / "anonymize" / "data"
ADULT_QIS = ["age", "education", "marital-status", "occupation", "race", "sex", "native-country", "workclass"]
ALGS = ["flash", "incognito", "samarati", "datafly", "mondrian"]


def _close(a, b, path="") -> None:
    """Nested dicts / lists / numbers equal up to float rounding."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), path
    else:
        assert a == b, path


def _per_row_release(df: pd.DataFrame, res_engine, qis) -> pd.DataFrame:
    """The engine's recoding applied to every input row (the release in input order, QIs as text)."""
    table = res_engine.table
    mapping = recoding(table, res_engine, "range", "star")
    keyed = df[qis].merge(mapping, on=qis, how="left", validate="many_to_one")
    return pd.DataFrame({c: keyed[f"__r{j}"].to_numpy() for j, c in enumerate(qis)})


def _compare(df: pd.DataFrame, schema: Schema, hs, alg: str, models, sup: float, out: Path, engine) -> None:
    try:
        mem = anonymize_table(df, schema, hs, algorithm=alg, models=models, max_suppression=sup, n_queries=0)
    except Exception as e:  # the memory engine refuses: the engine must refuse with the same message
        src = TableInput.file(out.with_suffix(".in.parquet"))
        with pytest.raises(type(e), match="."):
            anonymize_on_engine(engine, src, schema, hs, out, algorithm=alg, models=models, max_suppression=sup)
        assert not out.exists()
        return
    src = TableInput.file(out.with_suffix(".in.parquet"))
    res = anonymize_on_engine(engine, src, schema, hs, out, algorithm=alg, models=models, max_suppression=sup)
    assert res.levels == mem.levels
    for key in ("rows", "suppressed_rows", "classes", "dm", "cdm", "risk", "achieved"):
        _close(res.metrics[key], mem.metrics[key], key)
    assert res.metrics["ncp"]["ncp"] == pytest.approx(mem.metrics["ncp"]["ncp"])
    assert res.metrics["il_total"]["total_il"] == pytest.approx(mem.metrics["il_total"]["total_il"])
    # every input row is released as the memory engine releases it (same classes, same suppression)
    rows = _per_row_release(df, res, schema.qis)
    for c in schema.qis:
        assert rows[c].tolist() == mem.df[c].map(str).tolist(), c
    # the written file: the memory release as a multiset of rows
    written = pd.read_parquet(out) if out.suffix == ".parquet" else pd.read_csv(out, dtype=str, keep_default_na=False)
    want = mem.df.astype(str)
    got = written[list(want.columns)].astype(str)
    key = list(want.columns)
    assert got.sort_values(key).to_numpy().tolist() == want.sort_values(key).to_numpy().tolist()


@st.composite
def small_tables(draw):
    n = draw(st.integers(8, 120))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ages = rng.integers(18, 18 + draw(st.integers(2, 40)), size=n)
    colour = rng.choice(["red", "green", "blue", "grey"][: draw(st.integers(1, 4))], size=n)
    zips = rng.choice([f"130{d}{e}" for d in range(3) for e in range(4)][: draw(st.integers(1, 12))], size=n)
    sens = rng.choice(["a", "b", "c"], size=n)
    df = pd.DataFrame({"age": ages, "colour": colour, "zip": zips, "disease": sens, "note": rng.integers(0, 9, n)})
    alg = draw(st.sampled_from(ALGS))
    k = draw(st.integers(2, 4))
    ldiv = draw(st.booleans())
    sup = draw(st.sampled_from([0.0, 0.1]))
    return df, alg, k, ldiv, sup


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=small_tables())
def test_duckdb_engine_equals_memory_on_random_tables(case, tmp_path_factory):
    """Every full-domain search and strict Mondrian: same node, metrics and per-row release as in memory."""
    df, alg, k, ldiv, sup = case
    d = tmp_path_factory.mktemp("eng")
    out = d / "rel.parquet"
    df.to_parquet(out.with_suffix(".in.parquet"))
    schema = Schema(qis=["age", "colour", "zip"], sensitive=["disease"])
    models = [KAnonymity(k)] + ([DistinctLDiversity(2)] if ldiv else [])
    with DuckDBEngine(memory_limit=256 << 20) as eng:
        _compare(df, schema, {}, alg, models, sup, out, eng)


@pytest.fixture(scope="module")
def adult():
    df = read_table(DATA / "adult_subset.csv")
    hs = read_hierarchies(DATA, columns=set(ADULT_QIS) | {"salary-class"})
    return df, hs


@pytest.mark.parametrize("alg", ALGS)
def test_duckdb_engine_equals_memory_on_adult(adult, alg, tmp_path):
    df, hs = adult
    df.to_parquet(tmp_path / "rel.in.parquet")
    schema = Schema(qis=ADULT_QIS, sensitive=["salary-class"])
    with DuckDBEngine() as eng:
        _compare(df, schema, hs, alg, [KAnonymity(5), DistinctLDiversity(2)], 0.05, tmp_path / "rel.parquet", eng)


def test_written_release_remeasured_by_pycanon(adult, tmp_path):
    """The file the DuckDB engine writes (CSV this time) is k-anonymous and l-diverse for pycanon."""
    pycanon = pytest.importorskip("pycanon.anonymity")
    df, hs = adult
    out = tmp_path / "rel.csv"
    with DuckDBEngine() as eng:
        res = anonymize_on_engine(
            eng,
            TableInput.file(DATA / "adult_subset.csv"),
            Schema(qis=ADULT_QIS, sensitive=["salary-class"], identifiers=["sex"][:0]),
            hs,
            out,
            algorithm="mondrian",
            models=[KAnonymity(7), DistinctLDiversity(2)],
        )
        rel = pd.read_csv(out)
        assert pycanon.k_anonymity(rel, ADULT_QIS) == res.metrics["achieved"]["k"] >= 7
        assert pycanon.l_diversity(rel, ADULT_QIS, ["salary-class"]) >= 2
        # the engine's own measurement of the file equals the memory measurement of it
        m = measure_on_engine(eng, TableInput.file(out), ADULT_QIS, ["salary-class"])
        assert m["k"] == pycanon.k_anonymity(rel, ADULT_QIS)
    assert len(rel) == len(df)


def test_weighted_mondrian_refuses_relaxed_mode():
    df = pd.DataFrame({"a": [1, 1, 2, 2, 3], "s": list("xyxyx")})
    t = EncodedTable.encode(df, Schema(qis=["a"], sensitive=["s"]), {}, weights=np.array([2, 1, 1, 3, 1]))
    with pytest.raises(Exception, match="relaxed Mondrian"):
        anonymize_table(t, algorithm="mondrian", models=[KAnonymity(2)], mondrian_mode="relaxed")


def test_locked_duckdb_database_is_one_line_and_no_output(tmp_path):
    """A DuckDB file another process holds for writing: one clear line, nothing written."""
    import duckdb

    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT range % 50 AS age, 'x' || (range % 3) AS c FROM range(500)")
    con.close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import duckdb, sys, time
                con = duckdb.connect({str(db)!r})
                print("held", flush=True)
                time.sleep(120)
            """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        out = tmp_path / "rel.csv"
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "parties.cli",
                "anonymize",
                "--duckdb",
                str(db),
                "--query",
                "SELECT * FROM t",
                "-o",
                str(out),
                "--qi",
                "age,c",
                "--algorithm",
                "flash",
                "--k",
                "5",
                "--engine",
                "duckdb",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "locked by another process" in lines[0], r.stderr
        assert not out.exists() and not list(tmp_path.glob(".rel.csv*"))
    finally:
        holder.kill()
        holder.wait()


def test_duckdb_database_and_cli_equal_memory(tmp_path, adult):
    """``--duckdb DB --query`` on the DuckDB engine writes what the memory engine writes from the CSV."""
    import duckdb

    df, _ = adult
    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE adult AS SELECT * FROM read_csv('{DATA / 'adult_subset.csv'}', header = true)")
    con.close()
    common = [
        "--qi",
        ",".join(ADULT_QIS),
        "--sensitive",
        "salary-class",
        "--hierarchies",
        str(DATA),
        "--algorithm",
        "flash",
        "--k",
        "5",
        "--max-suppression",
        "0.05",
        "--quiet",
        "--out-sep",
        ",",
    ]
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    r1 = subprocess.run(
        [
            sys.executable,
            "-m",
            "parties.cli",
            "anonymize",
            "--duckdb",
            str(db),
            "--query",
            "SELECT * FROM adult",
            "-o",
            str(a),
            "--engine",
            "duckdb",
            *common,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r1.returncode == 0, r1.stderr
    r2 = subprocess.run(
        [
            sys.executable,
            "-m",
            "parties.cli",
            "anonymize",
            str(DATA / "adult_subset.csv"),
            "-o",
            str(b),
            "--engine",
            "memory",
            *common,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r2.returncode == 0, r2.stderr
    ra, rb = sorted(a.read_text().splitlines()[1:]), sorted(b.read_text().splitlines()[1:])
    assert a.read_text().splitlines()[0] == b.read_text().splitlines()[0]
    assert ra == rb and len(ra) == len(df)


def test_engine_only_flags_refused(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "parties.cli",
            "anonymize",
            str(DATA / "adult_subset.csv"),
            "-o",
            str(tmp_path / "o.csv"),
            "--qi",
            "age",
            "--algorithm",
            "flash",
            "--k",
            "2",
            "--engine",
            "duckdb",
            "--keep-order",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "--keep-order needs the rows in memory" in r.stderr
    assert not (tmp_path / "o.csv").exists()


# ---------------------------------------------------------------------------------------------- Spark
needs_spark = pytest.mark.skipif(spark_unavailable() is not None, reason=spark_unavailable() or "")


@needs_spark
@pytest.mark.parametrize("alg", ["flash", "mondrian"])
def test_spark_local_equals_memory_on_adult(adult, alg, tmp_path, spark_local):
    from anonymize.engines.spark_engine import SparkEngine

    df, hs = adult
    df.to_parquet(tmp_path / "rel.in.parquet")
    schema = Schema(qis=ADULT_QIS, sensitive=["salary-class"])
    eng = SparkEngine(session=spark_local)
    _compare(df, schema, hs, alg, [KAnonymity(5), DistinctLDiversity(2)], 0.05, tmp_path / "rel.parquet", eng)


@needs_spark
def test_spark_master_unreachable_is_one_line(tmp_path):
    out = tmp_path / "o.csv"
    t = time.monotonic()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "parties.cli",
            "anonymize",
            str(DATA / "adult_subset.csv"),
            "-o",
            str(out),
            "--qi",
            "age",
            "--algorithm",
            "flash",
            "--k",
            "2",
            "--engine",
            "spark",
            "--spark-master",
            "spark://127.0.0.1:1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and time.monotonic() - t < 60
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Spark master spark://127.0.0.1:1 is unreachable" in lines[0], r.stderr
    assert not out.exists()
    with pytest.raises(EngineError, match="unknown Spark master"):
        from anonymize.engines.spark_engine import SparkEngine

        SparkEngine("yarn")


@needs_spark
def test_spark_cluster_worker_loss(adult, tmp_path, spark_cluster):
    """On a standalone cluster (a master, two worker JVMs): one worker killed during a release still
    gives the memory engine's release (Spark re-runs the lost tasks on the other); with every worker
    gone the job is cancelled after the engine's timeout with one line, and no output file is left."""
    import threading

    from anonymize.engines.spark_engine import SparkEngine

    df, hs = adult
    df.to_parquet(tmp_path / "rel.in.parquet")
    schema = Schema(qis=ADULT_QIS, sensitive=["salary-class"])
    spark = spark_cluster.session("worker-loss")
    eng = SparkEngine(spark_cluster.master_url, session=spark)
    eng.lost_workers_timeout = 4.0
    killer = threading.Timer(1.0, spark_cluster.kill_worker, args=(0,))
    killer.start()
    try:
        _compare(df, schema, hs, "mondrian", [KAnonymity(5)], 0.0, tmp_path / "rel.parquet", eng)
    finally:
        killer.cancel()
    try:
        for i in (0, 1):  # every worker gone (killing a dead one again is a no-op)
            spark_cluster.kill_worker(i)
        out = tmp_path / "gone.parquet"
        t = time.monotonic()
        with pytest.raises(EngineError, match="no live worker for 4 s"):
            anonymize_on_engine(
                eng, TableInput.file(tmp_path / "rel.in.parquet"), schema, hs, out, algorithm="flash",
                models=[KAnonymity(5)],
            )  # fmt: skip
        assert time.monotonic() - t < 90
        assert not out.exists() and not list(tmp_path.glob(".gone*"))
    finally:  # the cluster as the next test expects it: two live workers
        for i, proc in enumerate(spark_cluster.workers):
            if proc is None or proc.poll() is not None:
                spark_cluster.start_worker(i, wait=False)
        spark_cluster.wait_for_workers()


def test_postgresql_table_on_duckdb_engine_equals_memory(adult, tmp_path, pg_server):
    """``ppdm anonymize --postgresql URL --password-file F --query SQL --engine duckdb``: the rows come from a
    real PostgreSQL server (streamed once to a private Parquet file, removed afterwards) and the release is
    the memory engine's on the same table."""
    import pyarrow as pa

    df, _ = adult
    pg_server.ingest("adult_pub", pa.Table.from_pandas(df, preserve_index=False))
    pw = pg_server.password_file(tmp_path / "pw")
    common = ["--qi", ",".join(ADULT_QIS), "--sensitive", "salary-class", "--hierarchies", str(DATA),
              "--algorithm", "mondrian", "--k", "5", "--quiet", "--out-sep", ","]  # fmt: skip
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    r1 = subprocess.run(
        [sys.executable, "-m", "parties.cli", "anonymize", "--postgresql", pg_server.url, "--password-file", str(pw),
         "--query", "SELECT * FROM adult_pub", "-o", str(a), "--engine", "duckdb", *common],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r1.returncode == 0, r1.stderr
    r2 = subprocess.run(
        [sys.executable, "-m", "parties.cli", "anonymize", str(DATA / "adult_subset.csv"), "-o", str(b),
         "--engine", "memory", *common],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r2.returncode == 0, r2.stderr
    assert sorted(a.read_text().splitlines()[1:]) == sorted(b.read_text().splitlines()[1:])
    # a wrong password: one line, nothing written, the password never printed
    bad = tmp_path / "bad"
    bad.write_text("not-the-password\n")
    bad.chmod(0o600)
    c = tmp_path / "c.csv"
    r3 = subprocess.run(
        [sys.executable, "-m", "parties.cli", "anonymize", "--postgresql", pg_server.url, "--password-file", str(bad),
         "--query", "SELECT * FROM adult_pub", "-o", str(c), "--engine", "duckdb", *common],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r3.returncode == 2 and len(r3.stderr.strip().splitlines()) == 1, r3.stderr
    assert "not-the-password" not in r3.stderr and not c.exists()


@needs_spark
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=small_tables())
def test_spark_engine_equals_memory_on_random_tables(case, tmp_path_factory, spark_local):
    """The Spark engine (``local[2]``) on random tables: the memory engine's node, metrics and per-row release."""
    from anonymize.engines.spark_engine import SparkEngine

    df, alg, k, ldiv, sup = case
    d = tmp_path_factory.mktemp("spk")
    out = d / "rel.parquet"
    df.to_parquet(out.with_suffix(".in.parquet"))
    schema = Schema(qis=["age", "colour", "zip"], sensitive=["disease"])
    models = [KAnonymity(k)] + ([DistinctLDiversity(2)] if ldiv else [])
    _compare(df, schema, {}, alg, models, sup, out, SparkEngine(session=spark_local))


def test_engine_release_is_not_in_input_order(tmp_path):
    """A reader must not be able to join the release to a copy of the input row by row (Sweeney's
    complementary-release attack): the DuckDB engine writes the rows in a fresh random order, different
    from one release to the next."""
    rng = np.random.default_rng(4)
    n = 2000
    df = pd.DataFrame(
        {"age": rng.integers(20, 60, n), "zip": rng.choice(["13053", "13068", "14850"], n), "row_no": np.arange(n)}
    )
    df.to_parquet(tmp_path / "in.parquet")
    orders = []
    with DuckDBEngine() as eng:
        for j in range(2):
            out = tmp_path / f"r{j}.parquet"
            anonymize_on_engine(
                eng, TableInput.file(tmp_path / "in.parquet"), Schema(qis=["age", "zip"]), {}, out,
                algorithm="mondrian", models=[KAnonymity(10)],
            )  # fmt: skip
            orders.append(pd.read_parquet(out)["row_no"].to_numpy())
    for o in orders:
        assert sorted(o.tolist()) == list(range(n))
        assert abs(np.corrcoef(o, np.arange(n))[0, 1]) < 0.1  # no trace of the input order
    assert (orders[0] != orders[1]).mean() > 0.9  # and a fresh order each time


def test_automatic_hierarchies_do_not_depend_on_row_order():
    """An engine's GROUP BY returns the distinct values in any order, so the automatic hierarchies (ZIP-like
    masking among them) must not follow the order of appearance: the same table in another row order gets
    the same release, row for row."""
    rng = np.random.default_rng(8)
    n = 300
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 40, n),
            "zip": rng.choice([f"130{d}{e}" for d in range(3) for e in range(4)], n),
            "disease": rng.choice(list("abc"), n),
        }
    )
    schema = Schema(qis=["age", "zip"], sensitive=["disease"])
    base = anonymize_table(df, schema, {}, algorithm="mondrian", models=[KAnonymity(3)], n_queries=0)
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(n)
        other = anonymize_table(
            df.iloc[perm].reset_index(drop=True), schema, {}, algorithm="mondrian", models=[KAnonymity(3)], n_queries=0
        )
        assert other.df["zip"].tolist() == base.df["zip"].iloc[perm].tolist()
        assert other.df["age"].tolist() == base.df["age"].iloc[perm].tolist()
