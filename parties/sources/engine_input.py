"""A :class:`~parties.sources.spec.TableSource` as an engine's :class:`anonymize.engines.TableInput`:
files and DuckDB queries as they are; a PostgreSQL query's rows streamed once into a private Parquet
file (removed when the context ends), since the engines read their input more than once."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from anonymize.engines import TableInput
from parties.sources.reader import spill_to_parquet
from parties.sources.spec import SourceError, TableSource

__all__ = ["table_input"]


@contextmanager
def table_input(src: TableSource, memory_limit: int | None = None) -> Iterator[TableInput]:
    """The engine input of ``src`` (see the module docstring)."""
    if src.kind == "file":
        yield TableInput(paths=(src.location,), fmt=src.format or "csv")
        return
    if src.kind == "duckdb":
        yield TableInput(database=src.location, query=src.query)
        return
    if src.kind != "postgresql":
        raise SourceError(f"data {src.key!r}: a FIMI/CSR file has no columns for an engine", src.location)
    tmp = tempfile.mkdtemp(prefix="ppdm-spill-")
    try:
        path = str(Path(tmp) / "table.parquet")
        spill_to_parquet(src, path, memory_limit=memory_limit)
        yield TableInput(paths=(path,), fmt="parquet")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
