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

from ..itemsets.db import TransactionDB
from ..itemsets.partitioned import BasketPartitions
from .base import Engine, EngineError, Progress, TableInput
from .progress import polled
from .spark_tasks import BOUNDARY, COUNTS, ITEMS, LOCAL, RANGE, STATS, SUPPORT, TINY, lines_db, unpack, unpack_arrow

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
        if src.fmt == "parquet":
            return self._run(f"read {src.describe()}", lambda: self.spark.read.parquet(*files))
        from .duckdb_engine import _sniff

        sep = src.sep or _sniff(files[0])
        return self._run(
            f"read {src.describe()}", lambda: self.spark.read.csv(files, header=True, inferSchema=True, sep=sep)
        )

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
        clustered: bool | None = None,
        progress: Progress | None = None,
    ) -> SparkBaskets:
        """The basket lines of ``src`` on the cluster (:class:`SparkBaskets`): read where they are and
        counted in the executors; only counts come back to the driver. ``clustered`` — None: use the
        input's own splits when the baskets are stored in order (checked, see :mod:`.spark_tasks`), else
        repartition by basket; False: always repartition."""
        from pyspark.sql import functions as F

        df = self.dataframe(src)
        for c in (transaction, item):
            if c not in df.columns:
                raise EngineError(f"no column {c!r} in {src.describe()}")
        lines = df.select(F.col(transaction).alias("t"), F.col(item).alias("i"))
        return SparkBaskets(self, lines, transaction, n_partitions, clustered, progress)

    def close(self) -> None:
        """Stop the session this engine started (not one it was given)."""
        if self._own and getattr(self, "spark", None) is not None:
            try:
                self.spark.stop()
            except Exception:
                pass
        self.spark = None


class SparkBaskets(BasketPartitions):
    """Basket lines on a Spark cluster, counted in the executors (:func:`.spark_tasks.pass_task`).

    Partitions are the input's own splits when its baskets are stored in order — the first pass checks
    that the splits' basket ranges meet only at their ends, sets the split baskets aside and counts them
    in the driver (``boundary``) — or else hash partitions of whole baskets (``repartition`` by basket,
    persisted on the cluster). Items are numbered by their sorted values. The first pass also runs SON's
    phase 1 when :meth:`mine_support` asks for it, so local mining reads the lines twice."""

    def __init__(self, engine: SparkEngine, lines: Any, key: str, n_partitions, clustered, progress=None):
        self.engine = engine
        self.lines = lines
        self.key = key
        self.progress = progress
        self.n_parts = n_partitions or max(2 * engine.spark.sparkContext.defaultParallelism, 2)
        self.clustered = clustered is not False
        self.data = lines if self.clustered else self._hashed()
        self._ready = False
        self._local: dict[int, Any] = {}
        self.boundary: TransactionDB | None = None
        self.csr: Any = None

    def _hashed(self) -> Any:
        from pyspark import StorageLevel

        return self.lines.repartition(self.n_parts, "t").persist(StorageLevel.MEMORY_AND_DISK)

    def _pass(self, what: str, **kw) -> list[list[tuple[int, bytes]]]:
        """The first ``mapInArrow`` pass over the lines; its output is persisted on the cluster (the
        baskets as CSR, :data:`.spark_tasks.KEPT`) and the rest collected: the rows of every partition,
        each starting with its STATS row."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        from .spark_tasks import KEPT, RESULT_SCHEMA, pass_task

        fn = functools.partial(pass_task, clustered=self.clustered, **kw)
        if self.csr is not None:
            self.csr.unpersist()
        self.csr = self.data.mapInArrow(fn, RESULT_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
        small = self.csr.where(~F.col("k").isin(*KEPT))
        return self._split(self.engine._run(what, small.collect, self.progress))

    def _later(self, what: str, fn: Any) -> list[list[tuple[int, bytes]]]:
        """A pass over the persisted first-pass output (``fn`` from :mod:`.spark_tasks`)."""
        from .spark_tasks import RESULT_SCHEMA

        assert self.csr is not None
        return self._split(self.engine._run(what, self.csr.mapInArrow(fn, RESULT_SCHEMA).collect, self.progress))

    @staticmethod
    def _split(rows: list) -> list[list[tuple[int, bytes]]]:
        parts: list[list[tuple[int, bytes]]] = []
        for r in rows:
            k, d = int(r["k"]), bytes(r["data"])
            if k == STATS:
                parts.append([])
            parts[-1].append((k, d))
        return parts

    # ------------------------------------------------------------------ the first pass
    def _first(self, fraction: tuple[int, int] | None = None, max_len: int | None = None) -> None:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        parts = self._pass("read the baskets" if fraction is None else "mine the partitions (SON phase 1)",
                           fraction=fraction, max_len=max_len)  # fmt: skip
        tiny = any(k == TINY for p in parts for k, _ in p)
        if self.clustered and (tiny or not _ranges_meet_at_ends(parts)):
            self.clustered = False  # not stored in basket order: hash partitions of whole baskets
            self.data = self._hashed()
            parts = self._pass("mine the partitions (SON phase 1)", fraction=fraction, max_len=max_len)
        nulls = sum(int(unpack(p[0][1])[1]) for p in parts)
        if nulls:
            raise EngineError(f"column {self.key!r} has {nulls:,} NULL transaction id(s)")
        dicts = [unpack_arrow(d).column("v").combine_chunks() for p in parts for k, d in p if k == ITEMS]
        bnd = [unpack_arrow(d) for p in parts for k, d in p if k == BOUNDARY]
        btab = pa.concat_tables(bnd) if bnd else None
        allv = [x for x in dicts if len(x)]
        if btab is not None and btab.num_rows:
            allv.append(pc.drop_null(btab.column("i").combine_chunks()))
        if allv:
            uniq = pc.unique(pa.chunked_array(allv).combine_chunks())
            names_arr = pc.take(uniq, pc.sort_indices(uniq))
        else:
            names_arr = pa.array([], pa.int64())
        self.names_arr = names_arr
        self.item_names = names_arr.to_pylist()
        self.n_items = len(self.item_names)
        self.item_kind = "int" if pa.types.is_integer(names_arr.type) else "text"
        m = self.n_items
        support = np.zeros(m, np.int64)
        n = 0
        cands: dict[int, list] = {}
        for p in parts:
            fields = dict(p)
            n += int(unpack(fields[STATS])[0])
            if ITEMS not in fields:
                continue
            local = unpack_arrow(fields[ITEMS]).column("v").combine_chunks()
            if len(local) == 0:
                continue
            gmap = np.asarray(pc.index_in(local, value_set=names_arr).to_numpy(zero_copy_only=False), np.int64)
            np.add.at(support, gmap, unpack(fields[SUPPORT]))
            for k, d in p:
                if k >= LOCAL:
                    cands.setdefault(k - LOCAL, []).append(np.sort(gmap[unpack(d)], axis=1))
        self.boundary = None
        if btab is not None and btab.num_rows:
            codes = pc.index_in(btab.column("i").combine_chunks(), value_set=names_arr).fill_null(-1)
            self.boundary = lines_db(
                btab.column("t").combine_chunks(), np.asarray(codes.to_numpy(zero_copy_only=False), np.int64), m
            )
            n += self.boundary.n_transactions
            support += self.boundary.item_support()
            # not mined: the splits' thresholds hold these baskets as slack (spark_tasks.pass_task)
        self.n_transactions = n
        self._support = support
        self._local = {k: np.unique(np.concatenate(v), axis=0) for k, v in cands.items()}
        self._ready = True

    def _ensure(self) -> None:
        if not self._ready:
            self._first()

    def __getattr__(self, name: str) -> Any:  # n_transactions, item_names, n_items, item_kind: after the first pass
        if name in ("n_transactions", "item_names", "n_items", "item_kind") and not self.__dict__.get("_ready"):
            self._first()
            return self.__dict__[name]
        raise AttributeError(name)

    # ------------------------------------------------------------------ BasketPartitions
    def item_support(self) -> Any:
        """Item supports summed over the partitions (and the boundary baskets)."""
        self._ensure()
        return self._support

    def count_support(self, itemsets) -> Any:
        """Per-partition counts summed (``mapInArrow`` with the candidates broadcast)."""
        import numpy as np

        from ..itemsets.candidates import as_itemset_matrix
        from ..itemsets.support import count_support

        self._ensure()
        mat = np.asarray(itemsets, dtype=np.int64)
        if mat.ndim != 2:
            mat = as_itemset_matrix(itemsets)
        if mat.shape[0] == 0:
            return np.zeros(0, np.int64)
        if mat.shape[1] == 1:
            return self._support[mat[:, 0]]
        out = self._count({mat.shape[1]: mat})[mat.shape[1]]
        if self.boundary is not None:
            out += count_support(self.boundary, mat)
        return out

    def _count(self, cands: dict) -> dict:
        import numpy as np

        sc = self.engine.spark.sparkContext
        names, bc = sc.broadcast(self.names_arr), sc.broadcast(cands)
        try:
            counts = {k: np.zeros(m.shape[0], np.int64) for k, m in cands.items()}
            from .spark_tasks import count_task

            for p in self._later("count the candidates", functools.partial(count_task, names=names, cands=bc)):
                for k, d in p:
                    if k >= COUNTS and k < LOCAL:
                        counts[k - COUNTS] += unpack(d)
            return counts
        finally:
            names.unpersist()
            bc.unpersist()

    def renumbered(self, pos, n_items: int, names) -> BasketPartitions:
        """The same lines with the agreed item names: items outside ``names`` dropped, the rest numbered by
        their position in ``names`` (the executors map values to positions with ``index_in``)."""
        import numpy as np
        import pyarrow as pa

        self._ensure()
        b = SparkBaskets.__new__(SparkBaskets)
        b.__dict__.update(self.__dict__)
        pos = np.asarray(pos, dtype=np.int64)
        b.names_arr = pa.array(list(names), type=self.names_arr.type) if len(names) else self.names_arr[:0]
        b.item_names = list(names)
        b.n_items = n_items
        support = np.zeros(n_items, np.int64)
        ok = pos >= 0
        np.add.at(support, pos[ok], self._support[ok])
        b._support = support
        if self.boundary is not None:
            from ..itemsets.partitioned import remap_db

            b.boundary = remap_db(self.boundary, pos, n_items)
        return b

    def mine_support(self, min_support, max_len: int | None = None) -> Any:
        """Frequent itemsets at the fraction ``min_support`` (a Fraction): SON with phase 1 in the first
        pass (local threshold ⌈s·n_p⌉) and phase 2 in the second."""

        self._first(fraction=(min_support.numerator, min_support.denominator), max_len=max_len)
        min_count = max(1, -(-min_support.numerator * self.n_transactions // min_support.denominator))
        return self._phase2(min_count)

    def mine(self, min_count: int, max_len: int | None = None, progress=None) -> Any:
        """SON at an integer ``min_count`` (phase 1 at ⌈min_count·n_p/N⌉ needs N: a first pass more)."""
        self._ensure()
        self._first(fraction=(min_count, max(self.n_transactions, 1)), max_len=max_len)
        return self._phase2(min_count)

    def _phase2(self, min_count: int) -> Any:
        from ..itemsets.partitioned import frequent_from_counts
        from ..itemsets.support import count_support

        cands = {k: v for k, v in self._local.items() if v.size}
        multi = {k: v for k, v in cands.items() if k >= 2}
        counts = self._count(multi) if multi else {}
        if 1 in cands:
            counts[1] = self._support[cands[1][:, 0]].copy()
        if self.boundary is not None:
            for k, m in multi.items():
                counts[k] += count_support(self.boundary, m)
        return frequent_from_counts(cands, counts, self.n_transactions, min_count)

    def close(self) -> None:
        """Unpersist the first pass's output and the hash partitions (when made)."""
        if self.csr is not None:
            try:
                self.csr.unpersist()
            except Exception:
                pass
        if not self.clustered:
            try:
                self.data.unpersist()
            except Exception:
                pass


def _ranges_meet_at_ends(parts: list) -> bool:
    """The splits' basket ranges ``[lo, hi]`` overlap at most at their ends (input stored in basket order)."""
    ranges = []
    for p in parts:
        for k, d in p:
            if k == RANGE:
                v = unpack_arrow(d).column("v").to_pylist()
                ranges.append((v[0], v[1]))
    ranges.sort()
    return all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:]))
