"""Functions Spark runs inside its executors (``mapInArrow``) on one partition of basket lines — whole
baskets, since the lines are repartitioned by basket — with the project's numpy counters; each yields
one Arrow batch of serialized numpy results that the driver sums (:mod:`.spark_engine`). Imported by
name in the executors, so this module imports no Spark."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..itemsets.db import TransactionDB
from ..itemsets.partitioned import _count_levels, _local_frequent

__all__ = ["stats_task", "count_task", "local_frequent_task", "pack", "unpack", "RESULT_SCHEMA"]

RESULT_SCHEMA = "k long, data binary"
"""Every task's output rows: a key (itemset length, or a field number) and an ``np.save`` blob."""


def pack(a: np.ndarray) -> bytes:
    """A numpy array as ``np.save`` bytes."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


def unpack(b: bytes) -> np.ndarray:
    """Inverse of :func:`pack`."""
    return np.load(io.BytesIO(b), allow_pickle=False)


def _partition_db(batches: Iterator[Any], m: int) -> TransactionDB:
    """The partition's lines ``(t, code)`` as a :class:`TransactionDB` over ``0..m-1`` (repeats once)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    universe = np.arange(m, dtype=np.int64)
    if not tables:
        return TransactionDB(0, universe, np.zeros(1, np.int64), np.zeros(0, np.int32))
    tab = pa.concat_tables(tables)
    t = pc.dictionary_encode(tab.column("t").combine_chunks()).indices
    r = np.asarray(t.to_numpy(zero_copy_only=False), dtype=np.int64)
    code = np.asarray(tab.column("code").to_numpy(), dtype=np.int64)
    key = np.unique(r * m + code)
    rr = key // m
    n = int(r.max()) + 1 if r.size else 0
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rr, minlength=n), out=indptr[1:])
    return TransactionDB(n, universe, indptr, (key - rr * m).astype(np.int32))


def _out(rows: list[tuple[int, np.ndarray]]) -> Iterator[Any]:
    import pyarrow as pa

    yield pa.RecordBatch.from_pydict(
        {"k": [k for k, _ in rows], "data": [pack(a) for _, a in rows]},
        schema=pa.schema([("k", pa.int64()), ("data", pa.binary())]),
    )


def stats_task(batches: Iterator[Any], m: int) -> Iterator[Any]:
    """``k=0``: [baskets, lines] of the partition; ``k=1``: its item supports."""
    db = _partition_db(batches, m)
    yield from _out([(0, np.array([db.n_transactions, db.indices.size], np.int64)), (1, db.item_support())])


def count_task(batches: Iterator[Any], m: int, cands: Any) -> Iterator[Any]:
    """Support counts of the broadcast candidates (``cands.value``: length → itemset matrix), per length."""
    db = _partition_db(batches, m)
    counts = _count_levels(db, cands.value)
    yield from _out(sorted(counts.items()))


def local_frequent_task(batches: Iterator[Any], m: int, min_count: int, n_total: int, max_len: int | None):
    """SON phase 1 on the partition: its locally frequent itemsets, per length."""
    db = _partition_db(batches, m)
    got = _local_frequent(db, min_count, n_total, max_len)
    yield from _out(sorted(got.items()))
