"""A party's (key, item) rows as a transaction database with item names and key digests.

The encoding runs inside an embedded DuckDB connection that spills to disk beyond its memory
limit: distinct (key, item) pairs, a dense rank of the keys (the records, in key order) and of
the items (in name order), then each line as one integer (record · items + item) fetched as
Arrow batches into a preallocated array and sorted there. What this process keeps is the compact CSR of
:class:`~anonymize.itemsets.TransactionDB` (4 bytes per distinct line), the item names and one
32-byte digest per key (for private alignment) — never the lines themselves.

Repeated lines are dropped after the sort (a repeated ``t·m + c`` is a repeated (key, item) line).

Rules (stated in ``docs/data-sources.md``):

* duplicate (key, item) rows count once;
* a row whose item is NULL makes its key a record without items (it still counts in N);
* a NULL key is an error;
* integer item columns stay integers; any other item type is read as text;
* keys are compared as text (``CAST(key AS VARCHAR)``), so 42 and "42" are the same customer.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from anonymize.itemsets import TransactionDB
from parties.sources.reader import duckdb_connection, one_line, source_relation
from parties.sources.spec import SourceError, TableSource

__all__ = ["KeyedTransactions", "load_source", "item_kind_of"]

_INT_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "HUGEINT"}
BATCH_ROWS = 1 << 20


@dataclass
class KeyedTransactions:
    """Transactions (records) with named items.

    ``db`` holds item ids ``0..m-1``; ``names[c]`` is item ``c``'s name (``str`` or ``int``,
    ascending), or None for a legacy FIMI/CSR file whose integer ids are their own names.
    ``key_digests`` is an ``(N, 32)`` uint8 array, SHA-256 of each record's key as text, in
    record order (None for legacy files, which have no keys). ``lines`` is the number of
    distinct (key, item) rows read.
    """

    db: TransactionDB
    names: list[Any] | None = None
    key_digests: np.ndarray | None = None
    item_kind: str = "int"  # "int" or "text"
    lines: int = 0

    @property
    def keyed(self) -> bool:
        return self.key_digests is not None

    def item_names(self) -> list[Any]:
        """The name of every item id of ``db`` (legacy files: the ids themselves)."""
        return [int(x) for x in self.db.items] if self.names is None else list(self.names)


def item_kind_of(duck_type: str) -> str:
    """``"int"`` for DuckDB's integer types, else ``"text"``."""
    return "int" if duck_type.upper() in _INT_TYPES else "text"


def load_source(
    src: TableSource,
    *,
    memory_limit: int | None = None,
    progress: Callable[[str], None] | None = None,
    who: str = "",
) -> KeyedTransactions:
    """Read ``src`` into :class:`KeyedTransactions` (see the module docstring for the rules).

    ``memory_limit`` bounds DuckDB's memory (bytes; it spills to a private temporary directory
    beyond it). ``progress`` gets a few public lines (rows read, seconds). ``who`` (a party name)
    prefixes every error. Raises :class:`SourceError` (one line) on any problem.
    """
    prefix = f"party {who!r}, " if who else ""
    if src.kind == "legacy":
        from parties.joint.partition import load_transactions

        if not os.path.isfile(src.location):
            raise SourceError(f"{prefix}data {src.key!r}: no such file", src.location)

        try:
            return KeyedTransactions(load_transactions(src.location))
        except ValueError as e:
            raise SourceError(f"{prefix}data {src.key!r}: cannot read its file", str(e)) from None
    try:
        return _load_keyed(src, memory_limit, progress)
    except SourceError as e:
        raise SourceError(f"{prefix}{e}", e.detail) from None


def _load_keyed(src: TableSource, memory_limit: int | None, progress) -> KeyedTransactions:
    import duckdb

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ppdm-duckdb-") as tmp, duckdb_connection(memory_limit, tmp) as con:
        try:
            with source_relation(con, src) as rel:
                kinds = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {rel})").fetchall())
                item_kind = item_kind_of(str(kinds["i"]))
                item_expr = "i" if item_kind == "int" else "CAST(i AS VARCHAR)"
                # Parquet files are scanned again by each step below (columnar, cheap); CSV text and a
                # query's rows (a PostgreSQL stream can be read once) are kept in a temporary table,
                # which spills to disk beyond the memory limit
                kind = "VIEW" if src.kind == "file" and src.format == "parquet" else "TABLE"
                con.execute(f"CREATE TEMP {kind} ppdm_lines AS SELECT k, {item_expr} AS i FROM {rel}")
            return _encode(con, src, item_kind, progress, t0)
        except duckdb.Error as e:
            raise SourceError(
                f"data {src.key!r}: reading its rows failed", f"{src.describe()}: {one_line(e)}"
            ) from None


def _encode(con, src: TableSource, item_kind: str, progress, t0: float) -> KeyedTransactions:
    nulls = _scalar(con, "SELECT count(*) FROM ppdm_lines WHERE k IS NULL")  # rows, not distinct rows
    if nulls:
        raise SourceError(
            f"data {src.key!r}: rows with a NULL key ({src.transaction!r}); every row needs one",
            f"{nulls:,} rows in {src.describe()}",
        )
    # records in the order DuckDB meets their keys (any fixed order will do), items by name
    con.execute(
        "CREATE TEMP TABLE ppdm_keys AS SELECT k, (row_number() OVER () - 1)::BIGINT AS t "
        "FROM (SELECT DISTINCT k FROM ppdm_lines)"
    )
    con.execute(
        "CREATE TEMP TABLE ppdm_items AS SELECT i, (row_number() OVER (ORDER BY i) - 1)::BIGINT AS c "
        "FROM (SELECT DISTINCT i FROM ppdm_lines WHERE i IS NOT NULL)"
    )
    n = int(_scalar(con, "SELECT count(*) FROM ppdm_keys"))
    m = int(_scalar(con, "SELECT count(*) FROM ppdm_items"))
    nnz = int(_scalar(con, "SELECT count(*) FROM ppdm_lines WHERE i IS NOT NULL"))  # with repeated lines
    names_tab = con.sql("SELECT i FROM ppdm_items ORDER BY c").to_arrow_table()
    names = names_tab.column(0).to_pylist()
    # every line as one integer t·m + c, sorted: records in order, items ascending within each
    code = np.empty(nnz, np.int64)
    at = [0]

    def put(b) -> None:
        col = b.column(0).to_numpy()
        code[at[0] : at[0] + col.size] = col
        at[0] += col.size

    _fill(
        con,
        f"SELECT t * {max(m, 1)} + c FROM ppdm_lines JOIN ppdm_keys USING (k) JOIN ppdm_items USING (i)",
        put,
    )
    if at[0] != nnz:  # pragma: no cover - DuckDB returned fewer rows than it counted
        raise SourceError(f"data {src.key!r}: read {at[0]} of {nnz} lines")
    code.sort()
    if code.size > 1:  # a repeated (key, item) line counts once
        fresh = np.empty(code.size, bool)
        fresh[0] = True
        np.not_equal(code[1:], code[:-1], out=fresh[1:])
        if not fresh.all():
            code = code[fresh]
        del fresh
    if progress:
        progress(
            f"data {src.key}: {nnz:,} lines ({code.size:,} distinct), {n:,} records, {m:,} items "
            f"({time.perf_counter() - t0:.1f} s)"
        )
    nnz = int(code.size)
    indptr = np.searchsorted(code, np.arange(n + 1, dtype=np.int64) * max(m, 1)).astype(np.int64)
    np.remainder(code, max(m, 1), out=code)
    indices = code.astype(np.int32)
    digests = np.empty((n, 32), np.uint8)
    at = [0]

    def put_digest(b) -> None:
        col = b.column(0)
        wide = str(col.type).startswith("large_")
        raw = np.frombuffer(col.buffers()[2], np.uint8)  # 32-byte blobs, contiguous in the data buffer
        offs = np.frombuffer(col.buffers()[1], np.int64 if wide else np.int32)[col.offset : col.offset + len(col) + 1]
        blk = raw[offs[0] : offs[-1]].reshape(-1, 32)
        digests[at[0] : at[0] + blk.shape[0]] = blk
        at[0] += blk.shape[0]

    _fill(con, "SELECT unhex(sha256(CAST(k AS VARCHAR))) FROM ppdm_keys ORDER BY t", put_digest)
    db = TransactionDB(n, np.arange(m, dtype=np.int64), indptr, indices)
    if progress:
        progress(f"data {src.key}: encoded in {time.perf_counter() - t0:.1f} s")
    return KeyedTransactions(db, names, digests, item_kind, nnz)


def _scalar(con, sql: str) -> Any:
    return con.execute(sql).fetchall()[0][0]


def _fill(con, sql: str, sink: Callable[[Any], None]) -> None:
    reader = con.sql(sql).to_arrow_reader(BATCH_ROWS)
    for batch in reader:
        if batch.num_rows:
            sink(batch)
