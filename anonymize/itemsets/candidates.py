"""Candidate generation: Apriori's join + prune, and exact lookup of itemsets.

Itemsets of one size k are rows of a ``(n, k)`` integer matrix, items ascending
within a row, rows in lexicographic order. Rows sharing their first k−1 items
form a *prefix class* (Zaki 2000's equivalence class); in lexicographic order a
class is a run of consecutive rows, so all class-internal pairs are generated
with a few ``repeat``/``arange`` calls and no Python loop over rows.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["apriori_gen", "class_pairs", "RowIndex", "as_itemset_matrix"]


def as_itemset_matrix(itemsets: Iterable[Iterable[int]] | np.ndarray, k: int | None = None) -> np.ndarray:
    """Itemsets of one size → ``(n, k)`` int64 matrix, rows sorted and distinct, lexicographic.

    Raises ``ValueError`` if the itemsets differ in size or one holds an item twice.
    Lexicographic order is the order Apriori's join assumes (Agrawal & Srikant 1994).
    """
    if isinstance(itemsets, np.ndarray) and itemsets.ndim == 2:
        m = np.sort(itemsets.astype(np.int64), axis=1)
    else:
        rows = [sorted(int(i) for i in s) for s in itemsets]
        sizes = {len(r) for r in rows}
        if len(sizes) > 1:
            raise ValueError(f"itemsets must all have the same size (got sizes {sorted(sizes)})")
        width = sizes.pop() if sizes else (k or 0)
        m = np.array(rows, dtype=np.int64).reshape(len(rows), width)
    if k is not None and m.shape[1] != k:
        raise ValueError(f"expected itemsets of size {k}, got size {m.shape[1]}")
    if m.shape[1] > 1 and (m[:, 1:] == m[:, :-1]).any():
        raise ValueError("an itemset holds the same item twice")
    if m.shape[0] > 1:
        m = np.unique(m, axis=0)
    return m


def class_pairs(items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All pairs (i, j), i < j, of rows of a lexicographic ``(n, k)`` matrix sharing the first k−1 items.

    Returns two int64 arrays; the joins ``items[i] ∪ {items[j, -1]}`` are then in
    lexicographic order. This is the join step of Apriori (Agrawal & Srikant
    1994) and the class extension of Eclat (Zaki 2000).
    """
    n, k = items.shape
    if n < 2:
        e = np.zeros(0, np.int64)
        return e, e
    new = np.ones(n, dtype=bool)
    if k > 1:
        new[1:] = (items[1:, :-1] != items[:-1, :-1]).any(axis=1)
    else:
        new[1:] = False
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n)
    class_end = np.repeat(ends, ends - starts)
    partners = class_end - np.arange(n) - 1
    total = int(partners.sum())
    i = np.repeat(np.arange(n, dtype=np.int64), partners)
    first = np.cumsum(partners) - partners
    j = np.arange(total, dtype=np.int64) - np.repeat(first - np.arange(n) - 1, partners)
    return i, j


class RowIndex:
    """Exact lookup of integer rows (itemsets) in a fixed table.

    Rows become one sortable key each: a mixed-radix int64 (base = largest entry
    + 1) when that fits in 63 bits, else the row as a big-endian byte string
    (byte order = numeric lexicographic order for non-negative entries). A batch of
    lookups is one ``searchsorted`` over the sorted table keys.
    """

    __slots__ = ("_keys", "_order", "_width", "_base")

    def __init__(self, table: np.ndarray) -> None:
        table = np.asarray(table, dtype=np.int64)
        self._width = table.shape[1]
        top = int(table.max()) + 1 if table.size else 1
        self._base = top if table.size and table.min() >= 0 and top**self._width < (1 << 63) else None
        keys = self._key(table)
        self._order = np.argsort(keys, kind="stable")
        self._keys = keys[self._order]

    def _key(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, self._width)
        if self._base is not None:
            key = np.zeros(rows.shape[0], dtype=np.int64)
            for c in range(self._width):
                key *= self._base
                key += rows[:, c]
            return key
        b = np.ascontiguousarray(rows.astype(">i8"))
        return b.view(np.dtype((np.void, 8 * self._width))).ravel()

    def find(self, rows: np.ndarray) -> np.ndarray:
        """Index in the table of every query row, or -1 where absent."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, self._width)
        if self._keys.size == 0 or rows.shape[0] == 0:
            return np.full(rows.shape[0], -1, dtype=np.int64)
        valid = None
        if self._base is not None and rows.size:
            valid = np.asarray(((rows >= 0) & (rows < self._base)).all(axis=1))
            rows = np.where(valid[:, None], rows, 0)
        q = self._key(rows)
        pos = np.minimum(np.searchsorted(self._keys, q), self._keys.size - 1)
        hit = self._keys[pos] == q
        if valid is not None:
            hit &= valid
        return np.where(hit, self._order[pos], -1)


def _drop_column(m: np.ndarray, t: int) -> np.ndarray:
    return np.delete(m, t, axis=1)


def apriori_gen(frequent_k: Iterable[Iterable[int]] | np.ndarray) -> np.ndarray:
    """Candidate (k+1)-itemsets from frequent k-itemsets: Apriori's join and prune.

    Agrawal & Srikant (1994), "Fast Algorithms for Mining Association Rules",
    §2.1.1: join two frequent k-itemsets that agree on their first k−1 items,
    then delete every candidate having a k-subset that is not frequent. Input:
    itemsets of one size (sequences or an ``(n, k)`` array; rows are sorted and
    deduplicated here). Output: ``(m, k+1)`` int64 matrix in lexicographic order —
    deterministic, so every party of a joint protocol derives the same list.
    """
    fk = as_itemset_matrix(frequent_k)
    n, k = fk.shape
    if n < 2 or k == 0:
        return np.zeros((0, k + 1), dtype=np.int64)
    i, j = class_pairs(fk)
    cand = np.empty((i.size, k + 1), dtype=np.int64)
    cand[:, :k] = fk[i]
    cand[:, k] = fk[j, -1]
    if k >= 2 and cand.shape[0]:
        index = RowIndex(fk)
        keep = np.ones(cand.shape[0], dtype=bool)
        for t in range(k - 1):  # subsets without the last two items are the joined parents
            keep &= index.find(_drop_column(cand, t)) >= 0
        cand = cand[keep]
    return cand
