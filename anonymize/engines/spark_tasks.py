"""Functions Spark runs inside its executors (``mapInArrow``) on one partition of basket lines with the
project's numpy counters; each yields Arrow rows ``(k, data)`` of serialized results that the driver
merges (:class:`.spark_engine.SparkBaskets`). Imported by name in the executors: no Spark here.

A partition is either a hash partition of whole baskets (after ``repartition(basket)``), or — when the
input is stored in basket order, the usual form of a basket-line export — one of the input's own splits:
then only the first and last basket of a split can continue in a neighbouring split, so those lines are
set aside (*boundary* lines, returned raw) and every other basket of the split is whole. The driver
checks that the splits' basket ranges meet only at their ends (else it falls back to the hash
partitioning) and counts the boundary baskets itself.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..itemsets.db import TransactionDB, sorted_unique
from ..itemsets.engine import mine_bitsets
from ..itemsets.partitioned import _count_levels

__all__ = [
    "pass_task",
    "count_task",
    "KEPT",
    "RESULT_SCHEMA",
    "pack",
    "unpack",
    "pack_arrow",
    "unpack_arrow",
    "lines_db",
]

RESULT_SCHEMA = "k long, data binary"
"""Every task's output rows: a field number and an ``np.save`` (or Arrow IPC) blob."""

STATS, ITEMS, SUPPORT, BOUNDARY, RANGE, TINY, INDPTR, CODES, COUNTS, LOCAL = 0, 1, 2, 3, 4, 5, 6, 7, 100, 200
KEPT = (INDPTR, CODES)
"""Rows that stay on the cluster (the partition's baskets as CSR over its sorted item dictionary): the
first pass's output is persisted and later passes (:func:`count_task`) read these instead of the lines."""


def pack(a: np.ndarray) -> bytes:
    """A numpy array as ``np.save`` bytes."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


def unpack(b: bytes) -> np.ndarray:
    """Inverse of :func:`pack`."""
    return np.load(io.BytesIO(b), allow_pickle=False)


def pack_arrow(table: Any) -> bytes:
    """An Arrow table as IPC stream bytes (values of any type: text or integer items and baskets)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def unpack_arrow(b: bytes) -> Any:
    """Inverse of :func:`pack_arrow`."""
    import pyarrow as pa

    return pa.ipc.open_stream(b).read_all()


def _columns(batches: Iterator[Any]) -> tuple[Any, Any]:
    """The partition's ``t`` and ``i`` columns as two Arrow arrays."""
    import pyarrow as pa

    bs = [b for b in batches if b.num_rows]
    if not bs:
        return pa.array([], pa.int64()), pa.array([], pa.int64())
    tab = pa.Table.from_batches(bs)
    return tab.column("t").combine_chunks(), tab.column("i").combine_chunks()


def lines_db(t: Any, codes: np.ndarray, m: int) -> TransactionDB:
    """Lines ``(basket t, item code ≥ 0 or -1 for no item)`` as a :class:`TransactionDB` over ``0..m-1``:
    baskets ranked by first appearance, repeated lines once, baskets without items kept."""
    import pyarrow.compute as pc

    universe = np.arange(m, dtype=np.int64)
    if len(t) == 0:
        return TransactionDB(0, universe, np.zeros(1, np.int64), np.zeros(0, np.int32))
    r = np.asarray(pc.dictionary_encode(t).indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    n = int(r.max()) + 1
    keep = codes >= 0
    key = sorted_unique(r[keep] * m + codes[keep])
    rr = key // m
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rr, minlength=n), out=indptr[1:])
    return TransactionDB(n, universe, indptr, (key - rr * m).astype(np.int32))


def _out(rows: list[tuple[int, bytes]]) -> Iterator[Any]:
    import pyarrow as pa

    yield pa.RecordBatch.from_pydict(
        {"k": [k for k, _ in rows], "data": [d for _, d in rows]},
        schema=pa.schema([("k", pa.int64()), ("data", pa.binary())]),
    )


def pass_task(
    batches: Iterator[Any],
    clustered: bool,
    names: Any = None,
    fraction: tuple[int, int] | None = None,
    max_len: int | None = None,
    cands: Any = None,
) -> Iterator[Any]:
    """One pass over a partition. Always: ``STATS`` = [baskets, NULL baskets], and for ``clustered``
    splits the ``RANGE`` (first and last basket) and the ``BOUNDARY`` lines. Without ``names`` (the first
    pass): the partition's own item dictionary (``ITEMS``), their supports (``SUPPORT``) and with
    ``fraction = (M, D)`` SON's phase 1: the itemsets with ``count ≥ ⌈(M·n_p − (D − M)·b_p) / D⌉`` in local
    codes (``LOCAL + length``; ``b_p`` the baskets set aside at the split's ends), or ``TINY`` for a split
    too small to mine (the driver then repartitions by basket). With ``names`` (the sorted global item values, broadcast) and ``cands``
    (length → itemsets in global codes, broadcast): their counts (``COUNTS + length``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t, i = _columns(batches)
    rows: list[tuple[int, bytes]] = []
    nulls = int(t.null_count)
    if nulls:
        keep = pc.is_valid(t)
        t, i = pc.filter(t, keep), pc.filter(i, keep)
    b_p = 0  # baskets set aside at this split's ends
    if clustered and len(t):
        mm = pc.min_max(t)
        lo, hi = mm["min"], mm["max"]
        edge = pc.or_(pc.equal(t, lo), pc.equal(t, hi))
        rows.append((BOUNDARY, pack_arrow(pa.table({"t": pc.filter(t, edge), "i": pc.filter(i, edge)}))))
        rows.append(
            (
                RANGE,
                pack_arrow(
                    pa.table({"v": pa.concat_arrays([pa.array([lo.as_py()], t.type), pa.array([hi.as_py()], t.type)])})
                ),
            )
        )
        b_p = 1 if mm["min"] == mm["max"] else 2
        inner = pc.invert(edge)
        t, i = pc.filter(t, inner), pc.filter(i, inner)
    if names is None:
        enc = pc.dictionary_encode(i)
        order = np.asarray(pc.sort_indices(enc.dictionary).to_numpy(), dtype=np.int64)  # a sorted dictionary:
        dictionary = pc.take(enc.dictionary, pa.array(order))  # its codes map to global codes in order
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order), dtype=np.int64)
        raw = np.asarray(enc.indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
        codes = np.where(raw >= 0, rank[np.maximum(raw, 0)], -1) if len(order) else raw
        db = lines_db(t, codes, len(dictionary))
        rows.append((STATS, pack(np.array([db.n_transactions, nulls], np.int64))))
        rows.append((ITEMS, pack_arrow(pa.table({"v": dictionary}))))
        rows.append((SUPPORT, pack(db.item_support())))
        rows.append((INDPTR, pack(db.indptr)))
        rows.append((CODES, pack(db.indices)))
        if fraction is not None and db.n_transactions:
            # SON's local threshold with the set-aside baskets as slack: θ_p = s·n_p − (1 − s)·b_p, so that
            # Σ_p θ_p + (boundary baskets) ≤ s·N and a globally frequent itemset is locally frequent somewhere
            M, D = fraction
            local = -(-(M * db.n_transactions - (D - M) * b_p) // D)
            if local < 2 and clustered:  # a sliver of a split: mining it at 1 would list every subset
                rows.append((TINY, pack(np.array([db.n_transactions], np.int64))))
            else:
                fi = mine_bitsets(db, max(1, local), max_len=max_len)
                rows.extend((LOCAL + k, pack(fi.itemsets(k))) for k in fi.levels)
    else:
        vs = names.value
        if len(i):
            codes = np.asarray(pc.index_in(i, value_set=vs).fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
        else:  # an empty partition (its columns carry no type)
            codes = np.zeros(0, np.int64)
        db = lines_db(t, codes, len(vs))
        rows.append((STATS, pack(np.array([db.n_transactions, nulls], np.int64))))
        if cands is not None:
            rows.extend((COUNTS + k, pack(c)) for k, c in _count_levels(db, cands.value).items())
    yield from _out(sorted(rows, key=lambda r: r[0] != STATS))  # STATS first: it starts a partition's rows


def count_task(batches: Iterator[Any], names: Any, cands: Any) -> Iterator[Any]:
    """A later pass over a partition of the persisted first-pass output: its baskets (``INDPTR``,
    ``CODES`` over its sorted dictionary ``ITEMS``) mapped to the broadcast global ``names`` (positions;
    items outside them dropped), and the counts of the broadcast candidates (``COUNTS + length``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    fields: dict[int, bytes] = {}
    for b in batches:
        for k, d in zip(b.column("k").to_pylist(), b.column("data").to_pylist()):
            fields[int(k)] = d
    vs = names.value
    m = len(vs)
    universe = np.arange(m, dtype=np.int64)
    if STATS not in fields:
        return
    rows: list[tuple[int, bytes]] = [(STATS, fields[STATS])]
    local = unpack_arrow(fields[ITEMS]).column("v").combine_chunks() if ITEMS in fields else pa.array([])
    indptr, codes = unpack(fields[INDPTR]), unpack(fields[CODES]).astype(np.int64)
    n = len(indptr) - 1
    if len(local) and m:
        gmap = np.asarray(pc.index_in(local, value_set=vs).fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
    else:
        gmap = np.full(len(local), -1, np.int64)
    g = gmap[codes] if codes.size else codes
    kept = gmap[gmap >= 0]
    if (g >= 0).all() and (kept.size < 2 or bool((np.diff(kept) > 0).all())):
        db = TransactionDB(n, universe, indptr, g.astype(np.int32))
    else:
        keep = g >= 0
        tx = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        ip = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(tx[keep], minlength=n), out=ip[1:])
        db = TransactionDB.from_csr(ip, g[keep], items=universe)
    rows.extend((COUNTS + k, pack(c)) for k, c in _count_levels(db, cands.value).items())
    yield from _out(rows)
