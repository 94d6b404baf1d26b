"""Opening an engine by name (kept apart from :mod:`.base`, which the engines import)."""

from __future__ import annotations

from collections.abc import Mapping

from .base import Engine, EngineError

__all__ = ["open_engine"]


def open_engine(
    name: str,
    *,
    spark_master: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    memory_limit: int | None = None,
    threads: int | None = None,
) -> Engine:
    """An engine by name (duckdb | spark); memory is not an :class:`Engine` (the numpy code runs directly)."""
    if name == "duckdb":
        from .duckdb_engine import DuckDBEngine

        return DuckDBEngine(memory_limit=memory_limit, threads=threads)
    if name == "spark":
        from .spark_engine import SparkEngine

        return SparkEngine(spark_master or "local[2]", dict(spark_conf or {}))
    raise EngineError(f"engine {name!r} has no engine object (use duckdb or spark)")
