"""The DuckDB engine: an embedded, vectorized SQL engine that spills to disk beyond its memory limit
(Raasveldt, Mühleisen, "DuckDB: an embeddable analytical database", SIGMOD 2019), so a table larger
than the machine's memory is grouped, joined and written out of core.

A private temporary directory takes the spill files and is removed on :meth:`DuckDBEngine.close`.
Files are scanned in place (``read_parquet`` / ``read_csv``); a DuckDB database file is opened
read-only (a database another process holds for writing is one clear line, not a wait).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..itemsets.db import TransactionDB
from ..itemsets.partitioned import LocalPartitions, partition_count
from .base import Engine, EngineError, Progress, TableInput
from .progress import polled
from .sql import ident, lit, one_line

__all__ = ["DuckDBEngine", "default_memory_limit"]


def default_memory_limit() -> int:
    """Bytes DuckDB may hold before spilling: an eighth of the machine's memory, at most 2 GiB (the process's
    peak RSS stays under about 2.5 GiB; on 100 M Adult-like rows a 2 GiB limit cost no time against 4 GiB)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    return int(min(total // 8, 2 << 30))


class DuckDBEngine(Engine):
    """An embedded DuckDB connection per input. ``memory_limit`` bytes (default
    :func:`default_memory_limit`), ``threads`` (default: all cores)."""

    name = "duckdb"

    def __init__(self, memory_limit: int | None = None, threads: int | None = None) -> None:
        import duckdb  # noqa: F401  (a core dependency; fail here, not mid-job)

        self.memory_limit = int(memory_limit or default_memory_limit())
        self.threads = threads
        self._tmp: str | None = tempfile.mkdtemp(prefix="ppdm-duckdb-")
        os.chmod(self._tmp, 0o700)
        self._cons: dict[Any, Any] = {}

    # ------------------------------------------------------------------ connections and relations
    def _connect(self, src: TableInput) -> Any:
        import duckdb

        key = src.database
        con = self._cons.get(key)
        if con is not None:
            return con
        if self._tmp is None:
            raise EngineError("the DuckDB engine is closed")
        try:
            con = duckdb.connect(src.database, read_only=True) if src.database else duckdb.connect(":memory:")
        except duckdb.Error as e:
            msg = one_line(e)
            if "lock" in msg.lower():
                raise EngineError(
                    f"DuckDB database {src.database} is locked by another process (a writer holds it); "
                    "close that process or read a copy"
                ) from None
            raise EngineError(f"cannot open DuckDB database {src.database}: {msg}") from None
        con.execute("SET preserve_insertion_order = false")
        con.execute(f"SET memory_limit = '{max(64, self.memory_limit >> 20)}MB'")
        con.execute(f"SET temp_directory = {lit(self._tmp)}")
        if self.threads:
            con.execute(f"SET threads = {int(self.threads)}")
        self._cons[key] = con
        return con

    def relation(self, src: TableInput) -> str:
        """SQL text of a relation (in parentheses) reading ``src``."""
        src.check_exists()
        if src.database is not None:
            assert src.query is not None
            return f"({src.query})"
        files = "[" + ", ".join(lit(f) for f in src.files()) + "]"
        if src.fmt == "parquet":
            return f"read_parquet({files})"
        sep = src.sep or _sniff(src.files()[0])
        return f"read_csv({files}, header = true, delim = {lit(sep)})"

    def _run(self, src: TableInput, sql: str, what: str, progress: Progress | None = None, fetch: str = "df") -> Any:
        import duckdb

        con = self._connect(src)

        def poll() -> tuple[float, str] | None:
            p = con.query_progress()
            return None if p is None or p < 0 else (float(p) / 100.0, "")

        try:
            with polled(what, poll, progress):
                cur = con.execute(sql)
                if fetch == "df":
                    return cur.df()
                if fetch == "one":
                    return cur.fetchone()
                return cur.fetchall()
        except duckdb.Error as e:
            raise EngineError(f"DuckDB could not {what} ({src.describe()}): {one_line(e)}") from None

    # ------------------------------------------------------------------ Engine
    def columns(self, src: TableInput) -> list[str]:
        """The table's column names (DuckDB's ``DESCRIBE``)."""
        rows = self._run(src, f"DESCRIBE SELECT * FROM {self.relation(src)}", "read the schema", fetch="all")
        return [str(r[0]) for r in rows]

    def frame(self, src: TableInput, progress: Progress | None = None) -> pd.DataFrame:
        """The whole table as a pandas DataFrame (for the memory engine reading a database)."""
        return self._run(src, f"SELECT * FROM {self.relation(src)}", "read the table", progress)

    def row_count(self, src: TableInput, progress: Progress | None = None) -> int:
        """``COUNT(*)`` of the table."""
        return int(self._run(src, f"SELECT COUNT(*) FROM {self.relation(src)}", "count rows", progress, "one")[0])

    def group_counts(self, src: TableInput, columns: Sequence[str], progress: Progress | None = None) -> pd.DataFrame:
        """The distinct tuples of ``columns`` with their counts (``__n``), one hash aggregation."""
        cols = ", ".join(ident(c) for c in columns)
        sql = f"SELECT {cols}, COUNT(*) AS __n FROM {self.relation(src)} GROUP BY ALL"
        return self._run(src, sql, "group the distinct tuples", progress)

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
        """See :meth:`.base.Engine.write_recoded`: a hash join with the (small) mapping, ``ORDER BY
        random()`` after a fresh ``setseed`` from the OS, ``COPY`` to a temporary file, rename."""
        con = self._connect(src)
        cols = self.columns(src)
        select = []
        for c in cols:
            if c in drop:
                continue
            select.append(f"m.{ident(recoded[c])} AS {ident(c)}" if c in recoded else f"i.{ident(c)}")
        on = " AND ".join(f"i.{ident(k)} = m.{ident(k)}" for k in keys)
        out = Path(out)
        tmp = out.with_name(f".{out.name}.{os.getpid()}.part{out.suffix}")
        parquet = out.suffix.lower() in (".parquet", ".pq")
        opts = "FORMAT parquet, ROW_GROUP_SIZE 1000000" if parquet else f"FORMAT csv, HEADER, DELIMITER {lit(sep)}"
        seed = int.from_bytes(os.urandom(6), "big") / float(1 << 48) * 2.0 - 1.0
        con.register("ppdm_map", mapping)
        try:
            con.execute(f"SELECT setseed({seed!r})")
            sql = (
                f"COPY (SELECT {', '.join(select)} FROM {self.relation(src)} AS i JOIN ppdm_map AS m ON {on} "
                f"WHERE NOT m.__drop ORDER BY random()) TO {lit(str(tmp))} ({opts})"
            )
            got = self._run(src, sql, "write the release", progress, "one")
            os.replace(tmp, out)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        finally:
            con.unregister("ppdm_map")
        return int(got[0]) if got else -1

    def baskets(
        self,
        src: TableInput,
        transaction: str,
        item: str,
        *,
        budget: int | None = None,
        progress: Progress | None = None,
    ) -> LocalPartitions:
        """The basket lines ``(transaction, item)`` of ``src`` as partitions of whole baskets, spilled once
        to this engine's private directory (one ``COPY … PARTITION_BY`` pass on ``hash(transaction) % P``,
        then each partition encoded as a compact CSR ``.npy`` pair), so that joint and local mining hold
        one partition at a time (:class:`anonymize.itemsets.partitioned.LocalPartitions`).

        Items are numbered by their sorted values (text or integers: ``item_kind``); a NULL item is a
        basket without items; a NULL transaction is an error; repeated lines count once."""
        import numpy as np

        cols = self.columns(src)
        for c in (transaction, item):
            if c not in cols:
                raise EngineError(f"no column {c!r} in {src.describe()}")
        rel = self.relation(src)
        con = self._connect(src)
        t, i = ident(transaction), ident(item)
        nulls = self._run(src, f"SELECT COUNT(*) FROM {rel} WHERE {t} IS NULL", "check the keys", progress, "one")[0]
        if nulls:
            raise EngineError(f"column {transaction!r} has {nulls:,} NULL transaction id(s)")
        self._run(
            src,
            f"CREATE OR REPLACE TEMP TABLE ppdm_items AS SELECT i AS name, (row_number() OVER (ORDER BY i)) - 1 "
            f"AS code FROM (SELECT DISTINCT {i} AS i FROM {rel} WHERE {i} IS NOT NULL)",
            "number the items",
            progress,
            "all",
        )
        names_df = con.execute("SELECT name FROM ppdm_items ORDER BY code").df()
        names = names_df["name"].tolist()
        kind = "int" if pd.api.types.is_integer_dtype(names_df["name"].dtype) else "text"
        n_tx, lines = self._run(
            src, f"SELECT COUNT(DISTINCT {t}), COUNT(*) FROM {rel}", "count the baskets", progress, "one"
        )
        P = partition_count(int(lines), budget=budget or self.memory_limit // 2)
        assert self._tmp is not None
        spill = tempfile.mkdtemp(prefix="baskets-", dir=self._tmp)
        self._run(
            src,
            f"COPY (SELECT DISTINCT CAST(hash({t}) % {P} AS INTEGER) AS p, {t} AS t, c.code AS code "
            f"FROM {rel} AS r JOIN ppdm_items AS c ON r.{i} = c.name) "
            f"TO {lit(spill + '/lines')} (FORMAT parquet, PARTITION_BY (p))",
            "partition the baskets",
            progress,
            "all",
        )
        m = len(names)
        sizes: list[int] = []
        support = np.zeros(m, dtype=np.int64)
        for p in range(P):
            part = os.path.join(spill, "lines", f"p={p}")
            if not os.path.isdir(part):
                indptr, codes = np.zeros(1, np.int64), np.zeros(0, np.int32)
            else:
                got = con.execute(
                    f"SELECT (dense_rank() OVER (ORDER BY t)) - 1 AS r, code FROM read_parquet({lit(part + '/*.parquet')})"
                ).fetchnumpy()
                r, code = np.asarray(got["r"], np.int64), np.asarray(got["code"], np.int64)
                key = np.sort(r * m + code)
                rr = key // m
                n_p = int(rr[-1]) + 1 if key.size else 0
                indptr = np.zeros(n_p + 1, np.int64)
                np.cumsum(np.bincount(rr, minlength=n_p), out=indptr[1:])
                codes = (key - rr * m).astype(np.int32)
                shutil.rmtree(part, ignore_errors=True)
            np.save(os.path.join(spill, f"indptr-{p}.npy"), indptr)
            np.save(os.path.join(spill, f"codes-{p}.npy"), codes)
            support += np.bincount(codes, minlength=m)
            sizes.append(int(codes.size))
            if progress:
                progress(f"baskets: partition {p + 1} of {P} encoded ({codes.size:,} lines)")
        universe = np.arange(m, dtype=np.int64)

        def load(p: int) -> TransactionDB:
            indptr = np.load(os.path.join(spill, f"indptr-{p}.npy"), mmap_mode="r")
            codes = np.load(os.path.join(spill, f"codes-{p}.npy"))
            return TransactionDB(len(indptr) - 1, universe, np.asarray(indptr), codes)

        return LocalPartitions(
            P, load, int(n_tx), names, kind, support, sizes, on_close=lambda: shutil.rmtree(spill, ignore_errors=True)
        )

    def close(self) -> None:
        """Close the connections and remove the spill directory."""
        for con in self._cons.values():
            try:
                con.close()
            except Exception:
                pass
        self._cons.clear()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _sniff(path: str) -> str:
    """The delimiter the memory engine would use (:func:`anonymize.publish.io.sniff_delimiter`)."""
    from ..publish.io import sniff_delimiter

    try:
        with open(path, "rb") as fh:
            head = fh.read(65536)
    except OSError as e:
        raise EngineError(f"cannot read {path}: {e.strerror or e}") from None
    return sniff_delimiter(head.decode("utf-8", errors="replace"))
