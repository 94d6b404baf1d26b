"""Where a party's local work runs: in memory (numpy), in an embedded DuckDB (out of core) or on Spark.

The expensive parts of publishing and mining are aggregations an engine can do where the data is
(LeFevre, DeWitt, Ramakrishnan, "Incognito: efficient full-domain k-anonymity", SIGMOD 2005, ran its
frequency sets as ``GROUP BY`` queries for this reason): the distinct quasi-identifier tuples of a
table with their counts, the support counts of candidate itemsets over a partition of the baskets,
the release written with a recoding. Every algorithm runs once, in :mod:`anonymize.publish` and
:mod:`anonymize.itemsets`, on what the engine returns; only counts leave the engine.

* :mod:`.base` — :class:`~.base.TableInput` (files, or a DuckDB database and a query), the
  :class:`~.base.Engine` interface, :class:`~.base.EngineError`, :func:`~.base.choose_engine`;
* :mod:`.duckdb_engine` — :class:`~.duckdb_engine.DuckDBEngine` (embedded, spills to disk);
* :mod:`.spark_engine` — :class:`~.spark_engine.SparkEngine` (PySpark, ``local[N]`` or a
  standalone master);
* :mod:`.progress` — stages, rows and an ETA polled from the engine while a query runs.
"""

from .base import ENGINES, Engine, EngineError, TableInput, choose_engine
from .opening import open_engine

__all__ = ["ENGINES", "Engine", "EngineError", "TableInput", "choose_engine", "open_engine"]
