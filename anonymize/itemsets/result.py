"""The result of mining: frequent itemsets with their counts, stored per size as arrays.

Level ``k`` is a ``(n_k, k)`` int64 matrix of item ids (ascending within a row,
rows lexicographic) with an aligned int64 count vector. Python objects
(tuples, frozensets, a DataFrame) are made only when asked for.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from .candidates import RowIndex

__all__ = ["FrequentItemsets", "fingerprint"]


class FrequentItemsets:
    """Frequent itemsets and their support counts, grouped by size.

    Attributes
    ----------
    levels : dict[int, tuple[np.ndarray, np.ndarray]]
        ``k -> (itemsets (n_k, k) int64, counts (n_k,) int64)``, only non-empty sizes.
    n_transactions : int
        N of the mined database.
    min_count : int
        The threshold used: every itemset here has count ≥ min_count.
    labels : dict | None
        Item id → label, when the database came from a one-hot frame with names.
    """

    __slots__ = ("levels", "n_transactions", "min_count", "labels", "_index")

    def __init__(
        self,
        levels: dict[int, tuple[np.ndarray, np.ndarray]],
        n_transactions: int,
        min_count: int,
        labels: dict | None = None,
    ) -> None:
        self.levels = {k: v for k, v in sorted(levels.items()) if v[1].size}
        self.n_transactions = int(n_transactions)
        self.min_count = int(min_count)
        self.labels = labels
        self._index: dict[int, RowIndex] = {}

    def __len__(self) -> int:
        return sum(c.size for _, c in self.levels.values())

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}: {c.size}" for k, (_, c) in self.levels.items())
        return f"FrequentItemsets({len(self)} itemsets, min_count={self.min_count}, by size {{{sizes}}})"

    def __iter__(self) -> Iterator[tuple[tuple[int, ...], int]]:
        """Yield ``(itemset as a tuple of ids, count)``, by size then lexicographically."""
        for items, counts in self.levels.values():
            yield from zip(map(tuple, items.tolist()), counts.tolist())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FrequentItemsets):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    @property
    def max_len(self) -> int:
        """Size of the longest frequent itemset (0 if none)."""
        return max(self.levels, default=0)

    def by_length(self) -> dict[int, int]:
        """Number of frequent itemsets of each size."""
        return {k: int(c.size) for k, (_, c) in self.levels.items()}

    def itemsets(self, k: int) -> np.ndarray:
        """The ``(n_k, k)`` matrix of frequent k-itemsets (empty if none)."""
        return self.levels.get(k, (np.zeros((0, k), np.int64), None))[0]

    def counts(self, k: int) -> np.ndarray:
        """Counts aligned with :meth:`itemsets` ``(k)``."""
        return self.levels.get(k, (None, np.zeros(0, np.int64)))[1]

    def to_dict(self) -> dict[frozenset, int]:
        """``{frozenset(itemset): count}``."""
        return {frozenset(s): c for s, c in self}

    def support(self, itemsets: Iterable[Iterable[int]] | np.ndarray) -> np.ndarray:
        """Counts of the given itemsets looked up in this result (-1 where not frequent here)."""
        sets = [sorted(int(i) for i in s) for s in itemsets]
        out = np.full(len(sets), -1, dtype=np.int64)
        by_k: dict[int, list[int]] = {}
        for r, s in enumerate(sets):
            by_k.setdefault(len(s), []).append(r)
        for k, rows in by_k.items():
            if k not in self.levels:
                continue
            pos = self.lookup(k, np.array([sets[r] for r in rows], dtype=np.int64).reshape(len(rows), k))
            ok = pos >= 0
            out[np.array(rows)[ok]] = self.levels[k][1][pos[ok]]
        return out

    def lookup(self, k: int, rows: np.ndarray) -> np.ndarray:
        """Row positions in level ``k`` of sorted itemset rows ``(m, k)`` (-1 where absent)."""
        if k not in self.levels:
            return np.full(len(rows), -1, dtype=np.int64)
        if k not in self._index:
            self._index[k] = RowIndex(self.levels[k][0])
        return self._index[k].find(rows)

    def to_frame(self, use_labels: bool = True) -> Any:
        """pandas DataFrame with columns ``itemsets`` (frozenset), ``count``, ``support`` (fraction).

        Like ``mlxtend.frequent_patterns`` output plus the exact count.
        """
        import pandas as pd

        labels = self.labels if use_labels and self.labels else {}
        name = (lambda i: labels.get(i, i)) if labels else (lambda i: i)
        sets, counts = [], []
        for s, c in self:
            sets.append(frozenset(map(name, s)))
            counts.append(c)
        counts_a = np.asarray(counts, dtype=np.int64)
        sup = counts_a / self.n_transactions if self.n_transactions else np.zeros(len(counts))
        return pd.DataFrame({"itemsets": sets, "count": counts_a, "support": sup})


def _lines(levels: Iterable[tuple[np.ndarray, np.ndarray]]) -> list[str]:
    out: list[str] = []
    for items, counts in levels:
        out.extend(" ".join(map(str, s)) + ":" + str(c) for s, c in zip(items.tolist(), counts.tolist()))
    return out


def fingerprint(result: FrequentItemsets | dict | Sequence[tuple[Iterable[int], int]]) -> str:
    """md5 fingerprint of a mining result, as defined by the FIMI reference counts.

    The md5 of the UTF-8 text with one line per frequent itemset,
    ``"i1 i2 ... ik:count"`` (items as decimal ids, ascending), lines sorted as
    strings, joined with ``"\\n"``, no trailing newline (see
    ``shared/data/fimi/reference_counts.json``). Accepts a :class:`FrequentItemsets`,
    a ``{itemset: count}`` dict or ``(itemset, count)`` pairs, so results of other
    miners (Apriori: R. Agrawal, R. Srikant, "Fast algorithms for mining association rules",
    VLDB 1994; Eclat: M. J. Zaki, "Scalable algorithms for association mining", IEEE TKDE
    2000; FP-growth: J. Han, J. Pei, Y. Yin, "Mining frequent patterns without candidate
    generation", SIGMOD 2000) can be compared bit for bit.
    """
    if isinstance(result, FrequentItemsets):
        lines = _lines(result.levels.values())
    else:
        pairs = result.items() if isinstance(result, dict) else result
        lines = [" ".join(map(str, sorted(int(i) for i in s))) + ":" + str(int(c)) for s, c in pairs]
    lines.sort()
    return hashlib.md5("\n".join(lines).encode("utf-8")).hexdigest()
