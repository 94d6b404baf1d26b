"""The vectorized bitset engine behind :func:`apriori`, :func:`eclat` and :func:`frequent_itemsets`.

Model
-----
Items are re-labelled by ascending support (rank 0 = least frequent), which
keeps prefix classes small (M. J. Zaki, "Scalable algorithms for association
mining", IEEE TKDE 12(3), 2000). Level by level, the frequent k-itemsets
are a lexicographic ``(n, k)`` matrix of ranks with one bit column each; a
candidate of size k+1 is the join of two rows of one prefix class and its bit
column is the AND of theirs (Eclat's tidset intersection), so one level costs a
few numpy calls on batches of ~1 MiB whatever the number of classes: no Python
work per itemset.

* Level 2 is counted horizontally when that is cheaper: every transaction's pairs
  of frequent items are encoded as ``a·F + b`` and counted with one ``bincount``
  (Apriori's C2 pass: R. Agrawal, R. Srikant, "Fast algorithms for mining
  association rules", VLDB 1994), instead of ANDing F²/2 columns.
* Dense data: transactions are projected on the frequent items and duplicates
  collapsed (J. Han, J. Pei, Y. Yin, "Mining frequent patterns without candidate
  generation", SIGMOD 2000, do the same in the FP-tree). A distinct projected
  transaction of multiplicity m is stored once in each *bit plane* b with bit b
  of m set; a word of plane b weighs 2^b, and a support is the weighted popcount
  ``Σ_w 2^plane(w) · popcount(word w)``, computed as a float BLAS product (exact:
  all partial sums are integers ≤ N < 2^24, or float64 beyond).
* Subset pruning (Apriori's prune step) uses 64-bit additive hashes of itemsets:
  a collision can only *keep* a candidate, which is then counted exactly, so
  results never depend on it. With ``prune="auto"`` it runs while it still
  removes enough candidates to pay for itself.
* Memory: when a level's candidate bit columns would exceed the budget, the
  frontier is split along prefix-class boundaries and the blocks are mined
  depth-first (Eclat's order); pruning is then off below the split.
"""

from __future__ import annotations

import numpy as np

from .bitset import CHUNK_WORDS, pack_columns
from .candidates import class_pairs
from .db import TransactionDB
from .result import FrequentItemsets
from .support import pair_counts

__all__ = ["mine_bitsets", "ItemsetLimitExceeded"]

_DEDUPE_MAX_ITEMS = 256  # collapse duplicates only when a projected transaction fits 4 words
_HASH_SEED = 0x5EED_1715


class _Layout:
    """Frequent items as ranks, their bit columns, and the horizontal rows for :func:`pair_counts`."""

    __slots__ = ("F", "cols", "wvec", "row_ptr", "row_ranks", "row_weight")

    def __init__(self, F, cols, wvec, row_ptr, row_ranks, row_weight):
        self.F, self.cols, self.wvec = F, cols, wvec
        self.row_ptr, self.row_ranks, self.row_weight = row_ptr, row_ranks, row_weight


def _layout(db: TransactionDB, rank_of: np.ndarray, F: int, dedupe: bool | str) -> _Layout:
    N = db.n_transactions
    r = rank_of[db.indices]
    keep = r >= 0
    tx, r = db.rows[keep], r[keep]
    W = (N + 63) // 64
    fdtype = np.float32 if N < (1 << 24) else np.float64
    if dedupe and F <= _DEDUPE_MAX_ITEMS and N:
        lay = _dedupe_layout(tx, r, N, F, W, fdtype, force=dedupe is True)
        if lay is not None:
            return lay
    cols = pack_columns(tx, r, F, N, distinct=True)
    lengths = np.bincount(tx, minlength=N)
    ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    return _Layout(F, cols, np.ones(W, dtype=fdtype), ptr, r, None)


def _dedupe_layout(tx, r, N, F, W, fdtype, force):
    """Collapse identical projected transactions into weighted bit planes (None if not worth it)."""
    nw = (F + 63) // 64
    bit = np.left_shift(np.uint64(1), (r & 63).astype(np.uint64))
    masks = np.zeros(N * nw, dtype=np.uint64)
    if nw == 1:  # tx ascending: OR each transaction's run of bits
        if tx.size:
            start = np.flatnonzero(np.concatenate(([True], tx[1:] != tx[:-1])))
            masks[tx[start]] = np.bitwise_or.reduceat(bit, start)
        uniq, mult = np.unique(masks, return_counts=True)
        uniq = uniq[:, None]
    else:
        np.bitwise_or.at(masks, tx * nw + (r >> 6), bit)
        uniq, mult = np.unique(masks.reshape(N, nw), axis=0, return_counts=True)
    planes = int(mult.max()).bit_length()
    members = [np.flatnonzero((mult >> b) & 1) for b in range(planes)]
    words = [(m.size + 63) // 64 for m in members]
    if not force and sum(words) > 0.8 * W:
        return None
    onehot = np.unpackbits(np.ascontiguousarray(uniq, dtype="<u8").view(np.uint8), axis=1, bitorder="little")[:, :F]
    V = 64 * sum(words)
    virt = np.zeros((V, F), dtype=np.uint8)
    wvec = np.empty(sum(words), dtype=fdtype)
    off = 0
    for b, m in enumerate(members):
        virt[64 * off : 64 * off + m.size] = onehot[m]
        wvec[off : off + words[b]] = float(1 << b)
        off += words[b]
    packed = np.packbits(np.ascontiguousarray(virt.T), axis=1, bitorder="little")
    cols = packed.view("<u8").astype(np.uint64, copy=False)
    rr, cc = np.nonzero(onehot)  # row-major: ranks ascending within a distinct transaction
    ptr = np.zeros(uniq.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rr, minlength=uniq.shape[0]), out=ptr[1:])
    return _Layout(F, cols, wvec, ptr, cc.astype(np.int64), mult.astype(np.float64))


class ItemsetLimitExceeded(RuntimeError):
    """More than ``limit`` frequent itemsets: :func:`mine_bitsets` stopped when ``count`` of them had been
    found, the last ``level`` items long (``count > limit``; the full result would be larger still)."""

    def __init__(self, count: int, level: int, limit: int) -> None:
        self.count, self.level, self.limit = int(count), int(level), int(limit)
        super().__init__(
            f"more than {self.limit:,} frequent itemsets: {self.count:,} found when mining stopped at size {self.level}"
        )


class _Miner:
    def __init__(self, cols, wvec, minc, max_len, prune, budget, limit=None, found=0):
        self.cols, self.wvec, self.minc, self.max_len = cols, wvec, minc, max_len
        self.prune, self.budget = prune, budget
        self.limit, self.found = limit, found  # itemset cap (None: none) and itemsets found so far
        self.W = cols.shape[1]
        self.out: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        rng = np.random.default_rng(_HASH_SEED)
        odd = rng.integers(0, 2**63, size=max(cols.shape[0], 1), dtype=np.int64).astype(np.uint64)
        self.rnd = odd * np.uint64(2) + np.uint64(1)  # random odd 64-bit value per item rank
        self.gain = 1.0  # fraction of candidates the last pruning removed

    def emit(self, items, counts):
        self.out.setdefault(items.shape[1], []).append((items, counts))
        self.found += items.shape[0]
        if self.limit is not None and self.found > self.limit:
            raise ItemsetLimitExceeded(self.found, items.shape[1], self.limit)

    def extend(self, B, i, j, cand, keep_bits):
        """Counts of joins (i, j) and, if asked, the bit columns of the frequent ones.

        ``B`` holds the frontier's bit columns; ``None`` means "AND the item columns
        of each candidate" (used for the pair frontier, so its columns are never stored).
        """
        W = self.W
        step = max(1, CHUNK_WORDS // max(W, 1))
        counts = np.empty(i.size, dtype=np.int64)
        kept = []
        minc = self.minc
        cols = self.cols
        for s in range(0, i.size, step):
            if B is None:
                rows = cand[s : s + step]
                X = cols[rows[:, 0]]
                for c in range(1, rows.shape[1]):
                    X &= cols[rows[:, c]]
            else:
                X = B[i[s : s + step]]
                X &= B[j[s : s + step]]
            c = np.bitwise_count(X).astype(self.wvec.dtype) @ self.wvec
            counts[s : s + step] = c
            if keep_bits:
                f = c >= minc
                kept.append(X if f.all() else X[f])
        bits = np.concatenate(kept) if len(kept) > 1 else (kept[0] if kept else np.zeros((0, W), np.uint64))
        return counts, bits

    def want_prune(self, k, can_prune):
        if not can_prune or self.prune is False or k < 2:
            return False
        if self.prune is True:
            return True
        # a lookup of k-1 hashed subsets vs a popcount of W words
        return self.gain * self.W >= 2.0 * (k - 1)

    def prune_mask(self, items, i, j, cand):
        k = items.shape[1]
        rnd = self.rnd
        keys = rnd[items].sum(axis=1, dtype=np.uint64)
        table = np.sort(keys)
        ck = keys[i] + rnd[cand[:, k]]
        sub = ck[:, None] - rnd[cand[:, : k - 1]]
        pos = np.minimum(np.searchsorted(table, sub), table.size - 1)
        return (table[pos] == sub).all(axis=1)

    def run(self, items, bits):
        """Mine every extension of a lexicographic frontier ``items`` (with bit columns ``bits``)."""
        # entry: (items, bits, prune_here, prune_children, i, j); i/j None = all class joins
        stack = [(items, bits, True, True, None, None)]
        max_rows = max(1, self.budget // (self.W * 8 + 1))
        while stack:
            items, bits, prune_here, prune_children, i, j = stack.pop()
            n, k = items.shape
            if i is None:
                if n < 2 or (self.max_len is not None and k >= self.max_len):
                    continue
                i, j = class_pairs(items)
                if i.size > max_rows:
                    # over budget: split the joins by their first row (each row's joins form one
                    # child class), mine the blocks depth-first; children lose whole-level pruning
                    cuts = np.unique(np.searchsorted(i, i[np.arange(max_rows, i.size, max_rows)], side="left"))
                    bounds = [0, *cuts[cuts > 0].tolist(), i.size]
                    for lo, hi in reversed(list(zip(bounds[:-1], bounds[1:]))):
                        stack.append((items, bits, prune_here, False, i[lo:hi], j[lo:hi]))
                    continue
            if i.size == 0:
                continue
            cand = np.empty((i.size, k + 1), dtype=items.dtype)
            cand[:, :k] = items[i]
            cand[:, k] = items[j, -1]
            if self.want_prune(k, prune_here):
                ok = self.prune_mask(items, i, j, cand)
                self.gain = 1.0 - float(ok.mean())
                if not ok.all():
                    i, j, cand = i[ok], j[ok], cand[ok]
            keep_bits = self.max_len is None or k + 1 < self.max_len
            counts, newbits = self.extend(bits, i, j, cand, keep_bits)
            f = counts >= self.minc
            if not f.any():
                continue
            new_items = cand[f]
            self.emit(new_items, counts[f])
            if keep_bits and new_items.shape[0] > 1:
                stack.append((new_items, newbits, prune_children, prune_children, None, None))


def mine_bitsets(
    db: TransactionDB,
    min_count: int,
    *,
    max_len: int | None = None,
    prune: bool | str = "auto",
    dedupe: bool | str = "auto",
    level2: str = "auto",
    memory_budget: int = 256 << 20,
    max_itemsets: int | None = None,
) -> FrequentItemsets:
    """All itemsets with count ≥ ``min_count``, by the level-wise bitset engine (see module docstring).

    ``max_itemsets``: raise :class:`ItemsetLimitExceeded` as soon as more frequent itemsets than that
    have been found (counted as each batch is counted, before the next level's candidates are
    generated), so a threshold that would yield millions fails in bounded time and memory.
    """
    N = db.n_transactions
    sup = db.item_support()
    freq = np.flatnonzero(sup >= min_count)
    order = freq[np.argsort(sup[freq], kind="stable")]  # rank -> item position, ascending support
    F = order.size
    if max_itemsets is not None and F > max_itemsets:
        raise ItemsetLimitExceeded(F, 1, max_itemsets)
    ids_of_rank = db.items[order]
    raw: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    if F:
        raw[1] = [(np.arange(F, dtype=np.int64)[:, None], sup[order].astype(np.int64))]
    if F >= 2 and (max_len is None or max_len >= 2):
        rank_of = np.full(db.items.size, -1, dtype=np.int64)
        rank_of[order] = np.arange(F)
        lay = _layout(db, rank_of, F, dedupe)
        miner = _Miner(lay.cols, lay.wvec, min_count, max_len, prune, memory_budget, max_itemsets, F)
        W = lay.cols.shape[1]
        horizontal_pairs = float((np.diff(lay.row_ptr) * (np.diff(lay.row_ptr) - 1) // 2).sum())
        vertical_words = F * (F - 1) / 2 * W
        use_h = level2 == "horizontal" or (level2 == "auto" and 5 * horizontal_pairs < vertical_words)
        if use_h:
            a, b, c = pair_counts(lay.F, lay.row_ptr, lay.row_ranks, lay.row_weight)
            f = c >= min_count
            a, b, c = a[f], b[f], c[f]
            if a.size:
                items2 = np.stack([a, b], axis=1)
                miner.emit(items2, c)
                if (max_len is None or max_len >= 3) and a.size >= 2:
                    miner.run(items2, None)  # triples AND three item columns: pair columns never stored
        else:
            miner.run(np.arange(F, dtype=np.int64)[:, None], lay.cols)
        for k, parts in miner.out.items():
            raw.setdefault(k, []).extend(parts)
    levels = {}
    for k, parts in raw.items():
        items = np.concatenate([p[0] for p in parts])
        counts = np.concatenate([p[1] for p in parts])
        ids = np.sort(ids_of_rank[items], axis=1)
        o = np.lexsort(ids.T[::-1]) if ids.shape[0] > 1 else np.arange(ids.shape[0])
        levels[k] = (ids[o], counts[o])
    labels = dict(zip(db.items.tolist(), db.labels)) if db.labels is not None else None
    return FrequentItemsets(levels, N, min_count, labels)
