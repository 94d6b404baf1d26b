"""The Spark engine: a party's table on a Spark cluster (Zaharia et al., "Spark: cluster computing with
working sets", HotCloud 2010; Armbrust et al., "Spark SQL: relational data processing in Spark",
SIGMOD 2015), through PySpark against the master the party names — ``local[N]`` or a standalone
``spark://host:port``.

Grouping is Spark SQL's hash aggregation; the release is a broadcast join with the (small) recoding;
mining runs the project's numpy counters inside the executors (``mapInArrow``) and sums their counts
(:mod:`anonymize.itemsets.partitioned`). The executors must import this package: by default they get
this installation's directory on their ``PYTHONPATH`` and this Python as their interpreter (right for
``local[N]`` and for a cluster on the same hosts as this installation); a cluster elsewhere needs ppdm
installed on its workers.

A master that does not answer is one line at once (a TCP probe before the driver starts); a Java
runtime that is missing or too old is one line saying how to get one.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..itemsets.partitioned import BasketPartitions
from .base import Engine, EngineError, Progress, TableInput
from .progress import polled
from .spark_tasks import unpack

__all__ = ["SparkEngine", "spark_available", "default_conf"]

# PySpark 4.3 warns on every Arrow conversion that it "does not yet fully support pandas >= 3"; the
# conversions ppdm makes (integers, text, booleans) are checked against the other engines by the tests
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)

_PKG_ROOT = Path(__file__).resolve().parent.parent.parent
_ENABLE = "pip install 'ppdm[spark]' and a JDK 17 (apt install openjdk-17-jre-headless)"


def spark_available() -> str | None:
    """None when pyspark imports and a Java 17+ runtime runs; else one line saying what is missing."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return f"the spark engine needs pyspark: {_ENABLE}"
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        return f"the spark engine needs a Java runtime (JAVA_HOME or java on PATH): {_ENABLE}"
    try:
        r = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return f"{java} -version fails: {_ENABLE}"
    m = re.search(r'version "(\d+)(?:\.(\d+))?', r.stderr + r.stdout)
    major = (int(m.group(2) or 0) if m.group(1) == "1" else int(m.group(1))) if m else 0
    if major < 17:
        return f"{java} is Java {major or '?'}; Spark 4 needs Java 17 or newer: {_ENABLE}"
    return None


def default_conf(master: str) -> dict[str, str]:
    """Settings ppdm gives a session unless the party's ``[spark] conf`` says otherwise."""
    conf = {
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": "ERROR",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.executorEnv.PYTHONPATH": str(_PKG_ROOT),
        "spark.sql.shuffle.partitions": str(max(2, 2 * (os.cpu_count() or 2))),
    }
    host = _master_host(master)
    if master.startswith("local") or host in ("127.0.0.1", "localhost", "::1"):
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    return conf


def _master_host(master: str) -> str | None:
    m = re.fullmatch(r"spark://\[?([^\]/]+?)\]?:(\d+)", master.strip())
    return m.group(1) if m else None


def _probe_master(master: str, timeout: float = 3.0) -> None:
    """A standalone master that does not accept connections is an error now, not after the driver's
    minute of registration retries."""
    if master.startswith("local"):
        if not re.fullmatch(r"local(\[(\*|\d+)(,\s*\d+)?\])?", master):
            raise EngineError(f"unknown Spark master {master!r} (use local[N] or spark://host:port)")
        return
    m = re.fullmatch(r"spark://\[?([^\]/]+?)\]?:(\d+)", master.strip())
    if not m:
        raise EngineError(f"unknown Spark master {master!r} (use local[N] or spark://host:port)")
    try:
        with socket.create_connection((m.group(1), int(m.group(2))), timeout=timeout):
            pass
    except OSError as e:
        raise EngineError(f"Spark master {master} is unreachable: {e.strerror or e}") from None


def spark_error(e: BaseException) -> str:
    """A Py4J / Spark exception as one line (the first line of its message, without the JVM stack)."""
    text = str(e).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "Traceback", "File ")):
            return re.sub(r"\s+", " ", line)[:300]
    return type(e).__name__


class SparkEngine(Engine):
    """A SparkSession against ``master`` with ``conf`` (over :func:`default_conf`). ``session`` — use an
    existing session instead (it is not stopped by :meth:`close`)."""

    name = "spark"

    #: seconds a job may run while the cluster has no live executor before it is cancelled (Spark itself
    #: would wait for a worker forever); ``ppdm.lost_workers_timeout`` in ``conf`` sets it
    lost_workers_timeout = 120.0

    def __init__(self, master: str = "local[2]", conf: Mapping[str, str] | None = None, *, session: Any = None):
        self.master = master
        self._own = session is None
        conf = dict(conf or {})
        if "ppdm.lost_workers_timeout" in conf:
            try:
                self.lost_workers_timeout = float(conf.pop("ppdm.lost_workers_timeout"))
            except ValueError:
                raise EngineError("ppdm.lost_workers_timeout must be a number of seconds") from None
        if session is not None:
            self.spark = session
            return
        problem = spark_available()
        if problem:
            raise EngineError(problem)
        _probe_master(master)
        from pyspark.sql import SparkSession

        settings = default_conf(master) | dict(conf or {})
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        if settings.get("spark.driver.bindAddress") == "127.0.0.1":
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = SparkSession.builder.master(master).appName("ppdm")
        for k, v in settings.items():
            builder = builder.config(k, v)
        try:
            self.spark = builder.getOrCreate()
            self.spark.sparkContext.setLogLevel("ERROR")
        except Exception as e:  # Py4J and JVM start-up errors
            raise EngineError(f"cannot start Spark against {master}: {spark_error(e)}") from None

    # ------------------------------------------------------------------ relations
    def dataframe(self, src: TableInput) -> Any:
        """``src`` as a Spark DataFrame (files only: Parquet, or CSV with a header)."""
        src.check_exists()
        if src.database is not None:
            raise EngineError("the spark engine reads files (Parquet or CSV); export the query or use --engine duckdb")
        files = [os.path.abspath(f) for f in src.files()]
        try:
            if src.fmt == "parquet":
                return self.spark.read.parquet(*files)
            from .duckdb_engine import _sniff

            sep = src.sep or _sniff(files[0])
            return self.spark.read.csv(files, header=True, inferSchema=True, sep=sep)
        except Exception as e:
            raise EngineError(f"Spark cannot read {src.describe()}: {spark_error(e)}") from None

    def _run(self, what: str, action, progress: Progress | None = None) -> Any:
        sc = self.spark.sparkContext

        def poll() -> tuple[float, str] | None:
            tracker = sc.statusTracker()
            ids = tracker.getActiveStageIds()
            if not ids:
                return None
            done = total = 0
            for sid in ids:
                info = tracker.getStageInfo(sid)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            return (done / total if total else 0.0, f"stage {max(ids)}, {done} of {total} tasks")

        group = f"ppdm-{os.getpid()}-{threading.get_ident()}-{time.monotonic_ns()}"
        sc.setJobGroup(group, what, interruptOnCancel=True)
        lost = threading.Event()
        stop = threading.Event()

        def watch() -> None:  # a standalone cluster without live executors: Spark would wait forever
            since = None
            while not stop.wait(1.0):
                try:
                    live = sc._jsc.sc().getExecutorMemoryStatus().size() - 1  # the driver is listed too
                except Exception:
                    return
                now = time.monotonic()
                since = None if live > 0 else (since or now)
                if since is not None and now - since >= self.lost_workers_timeout:
                    lost.set()
                    sc.cancelJobGroup(group)
                    return

        th = None
        if not self.master.startswith("local"):
            th = threading.Thread(target=watch, name="ppdm-spark-watch", daemon=True)
            th.start()
        try:
            with polled(what, poll, progress):
                return action()
        except EngineError:
            raise
        except Exception as e:
            if lost.is_set():
                raise EngineError(
                    f"Spark could not {what}: no live worker for {self.lost_workers_timeout:g} s, the job was cancelled"
                ) from None
            raise EngineError(f"Spark could not {what}: {spark_error(e)}") from None
        finally:
            stop.set()
            if th is not None:
                th.join(timeout=5)
            sc.setLocalProperty("spark.jobGroup.id", None)

    # ------------------------------------------------------------------ Engine
    def columns(self, src: TableInput) -> list[str]:
        """The table's column names."""
        return list(self.dataframe(src).columns)

    def group_counts(self, src: TableInput, columns: Sequence[str], progress: Progress | None = None) -> pd.DataFrame:
        """``groupBy(columns).count()`` collected as pandas (Arrow)."""
        df = self.dataframe(src)
        return self._run(
            "group the distinct tuples",
            lambda: df.groupBy(*columns).count().withColumnRenamed("count", "__n").toPandas(),
            progress,
        )

    def write_recoded(
        self,
        src: TableInput,
        mapping: pd.DataFrame,
        keys: Sequence[str],
        recoded: Mapping[str, str],
        drop: Sequence[str],
        out: Path,
        sep: str = ",",
        progress: Progress | None = None,
    ) -> int:
        """See :meth:`.base.Engine.write_recoded`: a broadcast join, ``orderBy(rand(seed))`` with a seed from
        the OS, one output file written by Spark into a private directory and moved into place."""
        from pyspark.sql import functions as F

        df = self.dataframe(src)
        cols = list(df.columns)
        m = self.spark.createDataFrame(mapping)
        joined = df.join(F.broadcast(m), on=list(keys), how="inner").where(~F.col("__drop"))
        select = [F.col(recoded[c]).alias(c) if c in recoded else F.col(c) for c in cols if c not in drop]
        seed = int.from_bytes(os.urandom(7), "big")
        rel = joined.select(*select).orderBy(F.rand(seed)).coalesce(1)
        out = Path(out)
        parquet = out.suffix.lower() in (".parquet", ".pq")
        tmpdir = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=str(out.parent)))
        try:
            target = str(tmpdir / "part")

            def write() -> None:
                w = rel.write.mode("overwrite")
                if parquet:
                    w.parquet(target)
                else:
                    w.option("header", True).option("sep", sep).option("escape", '"').csv(target)

            self._run("write the release", write, progress)
            parts = sorted(p for p in Path(target).iterdir() if p.name.startswith("part-"))
            if len(parts) != 1:
                raise EngineError(f"Spark wrote {len(parts)} files where one was expected")
            os.replace(parts[0], out)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        if parquet:
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(out).metadata.num_rows)
        return -1

    def baskets(
        self,
        src: TableInput,
        transaction: str,
        item: str,
        *,
        n_partitions: int | None = None,
        progress: Progress | None = None,
    ) -> SparkBaskets:
        """The basket lines of ``src`` repartitioned by basket on the cluster and persisted there
        (memory and disk); items numbered by their sorted values; only counts come back to the driver."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        df = self.dataframe(src)
        for c in (transaction, item):
            if c not in df.columns:
                raise EngineError(f"no column {c!r} in {src.describe()}")
        lines = df.select(F.col(transaction).alias("t"), F.col(item).alias("i"))
        nulls = self._run("check the keys", lambda: lines.where(F.col("t").isNull()).count(), progress)
        if nulls:
            raise EngineError(f"column {transaction!r} has {nulls:,} NULL transaction id(s)")
        names_pd = self._run(
            "number the items",
            lambda: lines.where(F.col("i").isNotNull()).select("i").distinct().orderBy("i").toPandas(),
            progress,
        )
        names = names_pd["i"].tolist()
        import numpy as np

        kind = "int" if pd.api.types.is_integer_dtype(names_pd["i"].dtype) else "text"
        codes = self.spark.createDataFrame(names_pd.assign(code=np.arange(len(names), dtype=np.int64)))
        P = n_partitions or max(2 * self.spark.sparkContext.defaultParallelism, 2)
        coded = (
            lines.join(F.broadcast(codes), on="i", how="inner")
            .select("t", "code")
            .repartition(P, "t")
            .persist(StorageLevel.MEMORY_AND_DISK)
        )
        n_tx = self._run("count the baskets", lambda: lines.select("t").distinct().count(), progress)
        b = SparkBaskets(self, coded, int(n_tx), names, kind, progress)
        b.item_support()
        return b

    def close(self) -> None:
        """Stop the session this engine started (not one it was given)."""
        if self._own and getattr(self, "spark", None) is not None:
            try:
                self.spark.stop()
            except Exception:
                pass
        self.spark = None


class SparkBaskets(BasketPartitions):
    """Basket lines persisted on a Spark cluster, partitioned by basket; counting and SON's two phases
    run in the executors (:mod:`.spark_tasks`) and only per-partition counts come back."""

    def __init__(self, engine: SparkEngine, coded: Any, n_tx: int, names: list, kind: str, progress=None):
        self.engine = engine
        self.coded = coded
        self.n_transactions = n_tx
        self.item_names = list(names)
        self.n_items = len(self.item_names)
        self.item_kind = kind
        self.progress = progress
        self._support: Any = None
        self._m = self.n_items

    def _collect(self, what: str, fn) -> list:
        from .spark_tasks import RESULT_SCHEMA

        rows = self.engine._run(what, lambda: self.coded.mapInArrow(fn, RESULT_SCHEMA).collect(), self.progress)
        return [(int(r["k"]), unpack(r["data"])) for r in rows]

    def item_support(self) -> Any:
        """Item supports summed over the partitions (computed once)."""
        import numpy as np

        if self._support is None:
            from .spark_tasks import stats_task

            sup = np.zeros(self._m, np.int64)
            for k, a in self._collect("count the items", functools.partial(stats_task, m=self._m)):
                if k == 1:
                    sup += a
            self._support = sup
        return self._support

    def count_support(self, itemsets) -> Any:
        """Per-partition counts summed (``mapInArrow`` with the candidates broadcast)."""
        import numpy as np

        from .spark_tasks import count_task

        mat = np.asarray(itemsets, dtype=np.int64)
        if mat.ndim != 2:
            from ..itemsets.candidates import as_itemset_matrix

            mat = as_itemset_matrix(itemsets)
        if mat.shape[0] == 0:
            return np.zeros(0, np.int64)
        if mat.shape[1] == 1:
            return self.item_support()[mat[:, 0]]
        bc = self.engine.spark.sparkContext.broadcast({mat.shape[1]: mat})
        try:
            out = np.zeros(mat.shape[0], np.int64)
            for _k, a in self._collect("count the candidates", functools.partial(count_task, m=self._m, cands=bc)):
                out += a
            return out
        finally:
            bc.unpersist()

    def renumbered(self, pos, n_items: int, names) -> BasketPartitions:
        """Renumbering on the cluster: a join with the new codes (items mapped to -1 dropped)."""
        import numpy as np
        from pyspark.sql import functions as F

        pos = np.asarray(pos, dtype=np.int64)
        mp = self.engine.spark.createDataFrame(
            pd.DataFrame({"code": np.arange(pos.size, dtype=np.int64), "new": pos})
        ).where(F.col("new") >= 0)
        coded = self.coded.join(F.broadcast(mp), on="code").select("t", F.col("new").alias("code"))
        b = SparkBaskets(self.engine, coded, self.n_transactions, list(names), self.item_kind, self.progress)
        b._m = n_items
        return b

    def mine(self, min_count: int, max_len: int | None = None, progress=None):
        """SON with both phases in the executors."""
        import numpy as np

        from ..itemsets.partitioned import frequent_from_counts, stack_levels
        from .spark_tasks import count_task, local_frequent_task

        phase1 = self._collect(
            "mine the partitions (SON phase 1)",
            functools.partial(
                local_frequent_task, m=self._m, min_count=min_count, n_total=self.n_transactions, max_len=max_len
            ),
        )
        cands = stack_levels({k: a} for k, a in phase1)
        counts = {k: np.zeros(m.shape[0], np.int64) for k, m in cands.items()}
        bc = self.engine.spark.sparkContext.broadcast(cands)
        try:
            for k, a in self._collect(
                "count the candidates (SON phase 2)", functools.partial(count_task, m=self._m, cands=bc)
            ):
                counts[k] += a
        finally:
            bc.unpersist()
        return frequent_from_counts(cands, counts, self.n_transactions, min_count)

    def close(self) -> None:
        """Unpersist the cached lines."""
        try:
            self.coded.unpersist()
        except Exception:
            pass
