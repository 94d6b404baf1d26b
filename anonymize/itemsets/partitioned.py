"""Baskets held as partitions on an engine, each partition a set of whole baskets: support counts are
sums of per-partition counts, and frequent itemsets come from the SON two-phase algorithm.

SON (Savasere, Omiecinski, Navathe, "An efficient algorithm for mining association rules in large
databases", VLDB 1995): split the N baskets into partitions of ``n_p`` baskets; an itemset with
``count ≥ min_count`` over all of them has ``count_p ≥ min_count·n_p / N`` in at least one partition
(else the counts would sum to less than ``min_count``). Phase 1 mines every partition at that local
threshold with the in-memory bitset miner (:func:`.engine.mine_bitsets`); the union of the local
results holds every frequent itemset. Phase 2 counts that union exactly over every partition and
keeps the itemsets with ``count ≥ min_count``: the result equals a centralized run.

A party's memory holds one partition at a time (DuckDB), or none (Spark runs both phases inside
its executors, ``mapInArrow``, and only counts come back). Joint mining asks a partitioned table
for the support counts of a level's candidates (:meth:`BasketPartitions.count_support`, which
:func:`.support.count_support` calls), so the same protocol code runs on every engine.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from .candidates import as_itemset_matrix
from .db import TransactionDB
from .engine import mine_bitsets
from .result import FrequentItemsets
from .support import count_support

__all__ = ["BasketPartitions", "LocalPartitions", "son_mine", "partition_count", "remap_db", "stack_levels"]


def partition_count(lines: int, bytes_per_line: int = 48, budget: int = 512 << 20) -> int:
    """Partitions for ``lines`` basket lines so that one partition's arrays fit ``budget`` bytes."""
    return max(1, math.ceil(lines * bytes_per_line / max(budget, 1 << 10)))


def remap_db(db: TransactionDB, pos: np.ndarray | None, n_items: int) -> TransactionDB:
    """``db`` (items ``0..m-1``) with item ``i`` renamed ``pos[i]`` (``-1`` drops it), over ``0..n_items-1``."""
    universe = np.arange(n_items, dtype=np.int64)
    if pos is None:
        return TransactionDB(db.n_transactions, universe, db.indptr, db.indices)
    new = pos[db.items[db.indices]] if db.indices.size else np.zeros(0, np.int64)
    keep = new >= 0
    lengths = np.diff(db.indptr)
    tx = np.repeat(np.arange(db.n_transactions, dtype=np.int64), lengths)
    indptr = np.zeros(db.n_transactions + 1, np.int64)
    np.cumsum(np.bincount(tx[keep], minlength=db.n_transactions), out=indptr[1:])
    return TransactionDB.from_csr(indptr, new[keep], items=universe)


def stack_levels(parts: Iterable[dict[int, np.ndarray]]) -> dict[int, np.ndarray]:
    """Union of itemset matrices per length (rows sorted, duplicates removed)."""
    acc: dict[int, list[np.ndarray]] = {}
    for levels in parts:
        for k, m in levels.items():
            if m.size:
                acc.setdefault(k, []).append(np.asarray(m, dtype=np.int64))
    return {k: np.unique(np.concatenate(ms), axis=0) for k, ms in acc.items()}


class BasketPartitions(ABC):
    """N baskets over items ``0..n_items-1`` (named ``item_names``), held as partitions of whole baskets.

    The interface joint mining uses in place of a :class:`.db.TransactionDB`: ``n_transactions``,
    ``items``, :meth:`item_support`, :meth:`count_support`, :meth:`renumbered`; and :meth:`mine`.
    """

    n_transactions: int
    n_items: int
    item_names: list
    item_kind: str = "int"
    labels = None

    @property
    def items(self) -> np.ndarray:
        """The item universe ``0..n_items-1``."""
        return np.arange(self.n_items, dtype=np.int64)

    @abstractmethod
    def item_support(self) -> np.ndarray:
        """``(n_items,)`` baskets holding each item."""

    @abstractmethod
    def count_support(self, itemsets: Iterable[Iterable[int]] | np.ndarray) -> np.ndarray:
        """Support counts of ``itemsets``: the sum of every partition's counts."""

    @abstractmethod
    def renumbered(self, pos: np.ndarray, n_items: int, names: Sequence[Any]) -> BasketPartitions:
        """The same baskets with item ``i`` renamed ``pos[i]`` (``-1`` drops it), over ``n_items`` items."""

    @abstractmethod
    def mine(
        self, min_count: int, max_len: int | None = None, progress: Callable[[str], None] | None = None
    ) -> FrequentItemsets:
        """Every itemset with ``count ≥ min_count`` (SON over the partitions; equal to a centralized run)."""

    def largest_partition_lines(self) -> int:
        """Basket lines of the largest partition (what a party's memory holds at once)."""
        return 0

    def close(self) -> None:
        """Release spill files or cached data."""
        self.closed = True


def _local_frequent(db: TransactionDB, min_count: int, n_total: int, max_len: int | None) -> dict[int, np.ndarray]:
    """Phase 1 of SON on one partition: itemsets with ``count ≥ ⌈min_count·n_p/N⌉`` (at least 1)."""
    local = max(1, -(-min_count * db.n_transactions // max(n_total, 1)))
    fi = mine_bitsets(db, local, max_len=max_len)
    return {k: fi.itemsets(k) for k in fi.levels}


def _count_levels(db: TransactionDB, cands: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    return {k: count_support(db, m) for k, m in cands.items()}


def son_mine(
    partitions: Callable[[], Iterator[TransactionDB]],
    n_transactions: int,
    min_count: int,
    max_len: int | None,
    progress: Callable[[str], None] | None = None,
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """SON over partitions produced (twice) by ``partitions()``: ``(candidates, counts)`` per length."""
    t0 = time.perf_counter()
    locals_: list[dict[int, np.ndarray]] = []
    for i, db in enumerate(partitions()):
        locals_.append(_local_frequent(db, min_count, n_transactions, max_len))
        if progress:
            progress(f"SON phase 1: partition {i + 1} mined ({time.perf_counter() - t0:.1f} s)")
    cands = stack_levels(locals_)
    counts = {k: np.zeros(m.shape[0], np.int64) for k, m in cands.items()}
    for i, db in enumerate(partitions()):
        for k, c in _count_levels(db, cands).items():
            counts[k] += c
        if progress:
            progress(f"SON phase 2: partition {i + 1} counted ({time.perf_counter() - t0:.1f} s)")
    return cands, counts


def frequent_from_counts(
    cands: dict[int, np.ndarray], counts: dict[int, np.ndarray], n_transactions: int, min_count: int
) -> FrequentItemsets:
    """Keep the candidates with ``count ≥ min_count``."""
    levels = {}
    for k, m in cands.items():
        keep = counts[k] >= min_count
        if keep.any():
            levels[k] = (m[keep], counts[k][keep].astype(np.int64))
    return FrequentItemsets(levels, n_transactions, min_count)


class LocalPartitions(BasketPartitions):
    """Partitions this process loads one at a time (``load(p)`` → a :class:`TransactionDB` over the raw
    item codes ``0..n_raw-1``), renamed by ``pos`` when renumbered. The DuckDB engine's spill."""

    def __init__(
        self,
        n_partitions: int,
        load: Callable[[int], TransactionDB],
        n_transactions: int,
        item_names: list,
        item_kind: str,
        support: np.ndarray,
        lines: Sequence[int],
        pos: np.ndarray | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.n_partitions = n_partitions
        self._load = load
        self.n_transactions = int(n_transactions)
        self.item_names = list(item_names)
        self.n_items = len(self.item_names)
        self.item_kind = item_kind
        self._support = np.asarray(support, dtype=np.int64)
        self._lines = list(lines)
        self._pos = pos
        self._on_close = on_close

    def partitions(self) -> Iterator[TransactionDB]:
        """Every partition in turn (one in memory at a time), items renamed by the current numbering."""
        for p in range(self.n_partitions):
            db = self._load(p)
            yield remap_db(db, self._pos, self.n_items)

    def item_support(self) -> np.ndarray:
        """From the engine's item counts (no partition is loaded)."""
        return self._support

    def count_support(self, itemsets: Iterable[Iterable[int]] | np.ndarray) -> np.ndarray:
        """Sum over the partitions of :func:`.support.count_support`."""
        groups: dict[int, list[int]] = {}
        if isinstance(itemsets, np.ndarray) and itemsets.ndim == 2:
            mats = {itemsets.shape[1]: (np.arange(itemsets.shape[0]), itemsets.astype(np.int64))}
            total = itemsets.shape[0]
        else:
            lst = [np.asarray(sorted(set(s)), dtype=np.int64) for s in itemsets]
            total = len(lst)
            for i, s in enumerate(lst):
                groups.setdefault(s.size, []).append(i)
            mats = {
                k: (np.asarray(ix), np.stack([lst[i] for i in ix]) if k else np.zeros((len(ix), 0), np.int64))
                for k, ix in groups.items()
            }
        out = np.zeros(total, dtype=np.int64)
        if total == 0:
            return out
        for k, (ix, m) in mats.items():
            if k == 0:
                out[ix] = self.n_transactions
            elif k == 1:
                out[ix] = self._support[m[:, 0]]
        multi = {k: v for k, v in mats.items() if k >= 2}
        if multi:
            for db in self.partitions():
                for k, (ix, m) in multi.items():
                    out[ix] += count_support(db, as_itemset_matrix(m, k))
        return out

    def renumbered(self, pos: np.ndarray, n_items: int, names: Sequence[Any]) -> LocalPartitions:
        """A view with a new numbering (composed with this one's)."""
        pos = np.asarray(pos, dtype=np.int64)
        comp = pos if self._pos is None else np.where(self._pos >= 0, pos[np.maximum(self._pos, 0)], -1)
        support = np.zeros(n_items, dtype=np.int64)
        ok = pos >= 0
        np.add.at(support, pos[ok], self._support[ok])
        return LocalPartitions(
            self.n_partitions,
            self._load,
            self.n_transactions,
            list(names),
            self.item_kind,
            support,
            self._lines,
            comp if self._pos is not None else pos,
            None,
        )

    def mine(
        self, min_count: int, max_len: int | None = None, progress: Callable[[str], None] | None = None
    ) -> FrequentItemsets:
        """SON, one partition in memory at a time."""
        cands, counts = son_mine(self.partitions, self.n_transactions, min_count, max_len, progress)
        return frequent_from_counts(cands, counts, self.n_transactions, min_count)

    def largest_partition_lines(self) -> int:
        """Basket lines of the largest partition."""
        return max(self._lines, default=0)

    def close(self) -> None:
        """Remove the spill (once)."""
        if self._on_close is not None:
            self._on_close()
            self._on_close = None
