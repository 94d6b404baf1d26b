"""The engine interface: where a table is (:class:`TableInput`) and what publishing and mining ask an
engine for (:class:`Engine`). See the package docstring."""

from __future__ import annotations

import glob
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import AnonymizeError

__all__ = ["ENGINES", "Engine", "EngineError", "TableInput", "choose_engine", "MEMORY_ENGINE_MAX"]

ENGINES = ("memory", "duckdb", "spark")
"""Engine names (``--engine``, ``engine =`` in ``party.toml``); ``auto`` picks memory or duckdb."""

MEMORY_ENGINE_MAX = 2 << 30
"""``auto`` runs in memory when the table's estimated in-memory size is at most this many bytes
(``PPDM_MEMORY_ENGINE_MAX`` overrides it), and on DuckDB beyond."""

Progress = Callable[[str], None]


class EngineError(AnonymizeError):
    """An engine cannot run: unreachable master, locked database file, failed query. One line."""


@dataclass(frozen=True)
class TableInput:
    """Where a table is: CSV or Parquet files (``paths``, globs allowed; ``fmt`` csv | parquet), or a
    DuckDB database file (``database``) and a ``query`` run in it (read-only)."""

    paths: tuple[str, ...] = ()
    fmt: str = "parquet"
    database: str | None = None
    query: str | None = None
    sep: str | None = None
    extra: dict = field(default_factory=dict, compare=False)

    @classmethod
    def file(cls, path: str | os.PathLike, sep: str | None = None) -> TableInput:
        """A CSV or Parquet file (by extension, or Parquet's magic bytes)."""
        p = str(path)
        fmt = "parquet" if Path(p).suffix.lower() in (".parquet", ".pq") or _has_parquet_magic(p) else "csv"
        return cls(paths=(p,), fmt=fmt, sep=sep)

    @property
    def kind(self) -> str:
        """``files`` or ``duckdb``."""
        return "duckdb" if self.database is not None else "files"

    def describe(self) -> str:
        """For messages: the files, or the database file (never the query's results)."""
        if self.database is not None:
            return f"DuckDB database {self.database}"
        return ", ".join(self.paths)

    def files(self) -> list[str]:
        """The files the paths match (globs expanded), sorted."""
        out: list[str] = []
        for p in self.paths:
            out.extend(sorted(glob.glob(p)) if any(c in p for c in "*?[") else [p])
        return out

    def check_exists(self) -> None:
        """A missing file or database is one line."""
        if self.database is not None:
            if not os.path.isfile(self.database):
                raise EngineError(f"DuckDB database not found: {self.database}")
            if not self.query:
                raise EngineError("a DuckDB input needs a query (--query)")
            return
        if not self.paths:
            raise EngineError("no input file given")
        for p in self.paths:
            if any(c in p for c in "*?["):
                if not glob.glob(p):
                    raise EngineError(f"no file matches {p}")
            elif not os.path.isfile(p):
                raise EngineError(f"input file not found: {p}")

    def estimated_bytes(self) -> int:
        """A rough in-memory size of the table as pandas would hold it (for ``auto``)."""
        if self.database is not None:
            return 1 << 62  # unknown: assume large
        total = 0
        for f in self.files():
            try:
                size = os.path.getsize(f)
            except OSError:
                continue
            total += size * (12 if self.fmt == "parquet" else 4)
        return total


def _has_parquet_magic(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


class Engine(ABC):
    """What publishing and mining ask of an engine. Implementations: DuckDB, Spark.

    Every method raises :class:`EngineError` (one line) when the engine cannot do it.
    """

    name: str = "engine"

    @abstractmethod
    def columns(self, src: TableInput) -> list[str]:
        """The table's column names."""

    @abstractmethod
    def group_counts(self, src: TableInput, columns: Sequence[str], progress: Progress | None = None) -> pd.DataFrame:
        """``SELECT columns, COUNT(*) AS __n GROUP BY columns``: the distinct tuples and their counts
        (NULL is a value of its own)."""

    @abstractmethod
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
        """Write the table joined to ``mapping`` on ``keys``, with column ``c`` replaced by mapping
        column ``recoded[c]`` (text), the columns ``drop`` left out and the rows whose mapping has
        ``__drop`` true left out, in a fresh random order, as Parquet or CSV (by ``out``'s extension)
        atomically (a temporary file next to ``out``, renamed at the end; nothing on failure).
        Returns the rows written."""

    def baskets(self, src: TableInput, transaction: str, item: str, *, progress: Progress | None = None) -> Any:
        """The basket lines ``(transaction, item)`` of ``src`` as partitions of whole baskets
        (:class:`anonymize.itemsets.partitioned.BasketPartitions`)."""
        raise EngineError(f"the {self.name} engine does not hold baskets")

    def frame(self, src: TableInput, progress: Progress | None = None) -> pd.DataFrame:
        """The whole table as a pandas DataFrame."""
        raise EngineError(f"the {self.name} engine does not load whole tables")

    @abstractmethod
    def close(self) -> None:
        """Release the engine's resources (idempotent)."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def choose_engine(name: str, src: TableInput, *, needs_rows: bool = False) -> str:
    """The engine to run on: ``name`` itself, or for ``auto`` memory when the table is small (or the
    algorithm needs the rows) and duckdb beyond :data:`MEMORY_ENGINE_MAX`."""
    if name != "auto":
        if name not in ENGINES:
            raise EngineError(f"unknown engine {name!r} (use auto, {', '.join(ENGINES)})")
        return name
    if needs_rows:
        return "memory"
    limit = int(os.environ.get("PPDM_MEMORY_ENGINE_MAX", MEMORY_ENGINE_MAX))
    return "memory" if src.kind == "files" and src.estimated_bytes() <= limit else "duckdb"
