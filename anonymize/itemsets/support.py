"""Support thresholds and batch support counting of given itemsets on bit columns.

These are the building blocks the joint-mining protocols call on each party's
local data: horizontal partitions (M. Kantarcioglu, C. Clifton, "Privacy-preserving
distributed mining of association rules on horizontally partitioned data", IEEE
TKDE 16(9), 2004) need the local counts of a globally agreed list of candidates
(:func:`count_support`); vertical partitions (J. Vaidya, C. Clifton, "Privacy
preserving association rule mining in vertically partitioned data", KDD 2002)
need, per candidate, the 0/1
vector of transactions that hold all of the party's items of it
(:func:`itemset_columns`), whose scalar products across parties give the
support.

Threshold rule: X is frequent iff ``count(X) >= ceil(minsup · N)``, with
``minsup`` read as the decimal it was written as (``0.7 · 3196`` is 2237.2 →
2238; ``0.005 · 100000`` is exactly 500), never through binary float noise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from fractions import Fraction

import numpy as np

from .bitset import CHUNK_WORDS, popcount
from .db import TransactionDB, as_transaction_db

__all__ = [
    "Threshold",
    "exact_fraction",
    "min_count_for",
    "resolve_min_count",
    "count_support",
    "pair_counts",
    "item_columns",
    "itemset_columns",
]


#: A support or confidence threshold as a user gives it: 0.3, "0.3", Fraction(3, 10), Decimal("0.3").
Threshold = float | str | Fraction | Decimal


def exact_fraction(x: Threshold) -> Fraction:
    """The rational a user meant by a threshold: floats through their shortest repr (0.7 → 7/10).

    Strings and Decimals are read exactly (``"0.3"`` → 3/10), integers and
    Fractions as they are; a bool is a ``TypeError``, a non-finite float a
    ``ValueError``. Support and confidence thresholds go through this, so that
    ``count ≥ minsup·N`` is decided in exact rational arithmetic (the minimum
    support count of Agrawal & Srikant, VLDB 1994) — the same on every party of
    a joint run and in the centralized miner.
    """
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (bool, np.bool_)):
        raise TypeError("a support/confidence threshold must be a number, not a bool")
    if isinstance(x, (float, np.floating)):
        if not math.isfinite(float(x)):
            raise ValueError(f"threshold must be finite (got {x!r})")
        return Fraction(repr(float(x)))
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    return Fraction(Decimal(str(x)))


def min_count_for(minsup: Threshold, n_transactions: int) -> int:
    """``ceil(minsup · N)`` computed exactly, for ``minsup`` in (0, 1].

    The minimum support count of Agrawal & Srikant (1994), "Fast Algorithms for
    Mining Association Rules" (VLDB): an itemset is frequent iff its count is at
    least this. Floats are taken as the decimal they print as. Raises
    ``ValueError`` for ``minsup`` outside (0, 1]. Never below 1.
    """
    f = exact_fraction(minsup)
    if not (0 < f <= 1):
        raise ValueError(f"minsup must be in (0, 1] (got {minsup!r}); use min_count= for an absolute count")
    return max(1, math.ceil(f * int(n_transactions)))


def resolve_min_count(n_transactions: int, minsup: Threshold | None = None, min_count: int | None = None) -> int:
    """The absolute threshold from exactly one of ``minsup`` (fraction) or ``min_count`` (≥ 1).

    Minimum support as in Agrawal & Srikant (1994); see :func:`min_count_for`.
    """
    if (minsup is None) == (min_count is None):
        raise ValueError("give exactly one of minsup (a fraction in (0, 1]) or min_count (an integer ≥ 1)")
    if minsup is not None:
        return min_count_for(minsup, n_transactions)
    if isinstance(min_count, (bool, np.bool_)) or not isinstance(min_count, (int, np.integer)):
        raise TypeError(f"min_count must be an integer (got {min_count!r})")
    if min_count < 1:
        raise ValueError(f"min_count must be at least 1 (got {min_count})")
    return int(min_count)


def _as_itemset_list(itemsets: Iterable[Iterable[int]] | np.ndarray) -> list[np.ndarray] | np.ndarray:
    if isinstance(itemsets, np.ndarray):
        if itemsets.ndim != 2:
            raise ValueError("an itemset array must be 2-D (one itemset per row)")
        return itemsets.astype(np.int64, copy=False)
    return [
        np.fromiter(s, dtype=np.int64) if not isinstance(s, np.ndarray) else s.astype(np.int64).ravel()
        for s in itemsets
    ]


def _grouped(db: TransactionDB, itemsets) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """Yield (row numbers, (n, k) matrix of item positions, -1 if absent) per itemset length."""
    sets = _as_itemset_list(itemsets)
    if isinstance(sets, np.ndarray):
        yield np.arange(sets.shape[0]), db.item_positions(sets.ravel()).reshape(sets.shape)
        return
    lengths = np.fromiter(map(len, sets), dtype=np.int64, count=len(sets))
    flat = np.concatenate(sets) if sets else np.zeros(0, np.int64)
    pos = db.item_positions(flat)
    offs = np.concatenate(([0], np.cumsum(lengths)))
    for k in np.unique(lengths):
        rows = np.flatnonzero(lengths == k)
        idx = offs[rows][:, None] + np.arange(k)
        yield rows, pos[idx]


def _and_reduce(cols: np.ndarray, idx: np.ndarray, n: int, W: int, step: int):
    """Yield (slice, AND of cols[idx[r]] over each row r) in batches."""
    full = np.full(W, np.uint64(0xFFFFFFFFFFFFFFFF))
    if n % 64 and W:
        full[-1] = np.uint64((1 << (n % 64)) - 1)
    for s in range(0, idx.shape[0], step):
        block = idx[s : s + step]
        if block.shape[1] == 0:
            yield slice(s, s + block.shape[0]), np.broadcast_to(full, (block.shape[0], W)).copy()
            continue
        X = cols[block[:, 0]]
        for c in range(1, block.shape[1]):
            X &= cols[block[:, c]]
        yield slice(s, s + block.shape[0]), X


def itemset_columns(
    db: TransactionDB | object, itemsets: Iterable[Iterable[int]] | np.ndarray, *, missing: str = "empty"
) -> np.ndarray:
    """Bit column of every itemset: AND of its items' columns, ``(len(itemsets), W)`` uint64.

    Bit t of row i is 1 iff transaction t contains every item of ``itemsets[i]``
    (the empty itemset: every transaction). An item the database does not hold
    makes the row all 0 with ``missing="empty"`` (default), or is skipped with
    ``missing="ignore"`` — the vertical-partition case, where another party holds
    that item's column (declare a party's items, e.g. one-hot columns or
    ``from_transactions(..., items=...)``, so its never-occurring items are not
    mistaken for someone else's). This is the vector a party contributes to the
    scalar-product support of Vaidya & Clifton (2002); its popcount is the count
    (Zaki 2000's tidset intersection on bit vectors).
    """
    if missing not in ("empty", "ignore"):
        raise ValueError("missing must be 'empty' or 'ignore'")
    db = as_transaction_db(db)
    if missing == "ignore":
        held = set(db.items.tolist())
        itemsets = [[i for i in s if i in held] for s in _as_itemset_list(itemsets)]
    W = db.n_words
    groups = list(_grouped(db, itemsets))
    n_sets = sum(r.size for r, _ in groups)
    out = np.zeros((n_sets, W), dtype=np.uint64)
    for rows, idx in groups:
        cols, idx2, dead = _needed_columns(db, idx)
        for sl, X in _and_reduce(cols, idx2, db.n_transactions, W, max(1, CHUNK_WORDS // max(W, 1))):
            X[dead[sl]] = 0
            out[rows[sl]] = X
    return out


def _needed_columns(db: TransactionDB, idx: np.ndarray):
    """Pack only the columns the itemsets use; absent items map to an all-zero column."""
    dead = (idx < 0).any(axis=1) if idx.shape[1] else np.zeros(idx.shape[0], bool)
    used, inv = np.unique(np.where(idx < 0, 0, idx), return_inverse=True)
    cols = db.columns(used) if used.size else np.zeros((1, db.n_words), np.uint64)
    return cols, inv.reshape(idx.shape), dead


def count_support(db: TransactionDB | object, itemsets: Iterable[Iterable[int]] | np.ndarray) -> np.ndarray:
    """Support counts of many given itemsets at once, as ``int64`` aligned with ``itemsets``.

    ``itemsets`` is a sequence of iterables of item ids (any lengths) or a 2-D
    array (one itemset per row). Items absent from the database give count 0; the
    empty itemset has count N. Counting is the support-counting pass of Apriori
    (Agrawal & Srikant 1994) done vertically: per batch of candidates of one
    length, the AND of their items' bit columns is pop-counted (Zaki 2000).
    """
    counter = getattr(db, "count_support", None)
    if counter is not None:  # baskets partitioned on an engine (.partitioned): sum of per-partition counts
        return counter(itemsets)
    db = as_transaction_db(db)
    W = db.n_words
    groups = list(_grouped(db, itemsets))
    n_sets = sum(r.size for r, _ in groups)
    out = np.zeros(n_sets, dtype=np.int64)
    for rows, idx in groups:
        if idx.shape[1] == 0:
            out[rows] = db.n_transactions
            continue
        if idx.shape[1] == 1:
            sup = np.append(db.item_support(), 0)
            out[rows] = sup[idx[:, 0]]  # -1 (absent) picks the appended 0
            continue
        if idx.shape[1] == 2 and rows.size > PAIR_PASS_MIN:
            out[rows] = _pair_support(db, idx)
            continue
        cols, idx2, dead = _needed_columns(db, idx)
        for sl, X in _and_reduce(cols, idx2, db.n_transactions, W, max(1, CHUNK_WORDS // max(W, 1))):
            c = popcount(X)
            c[dead[sl]] = 0
            out[rows[sl]] = c
    return out


PAIR_PASS_MIN = 50_000  # above this many 2-itemsets, count them in one pass over the transactions


def _pair_support(db: TransactionDB, pos: np.ndarray) -> np.ndarray:
    """Counts of many 2-itemsets (``(n, 2)`` item positions, −1 = absent) in one pass over the rows.

    Every transaction's pairs of the items involved are enumerated and counted
    (the pair-counting pass of the miner's engine, Agrawal & Srikant 1994's C_2
    special case), then the asked pairs are looked up — instead of n AND +
    popcount operations over N-bit columns, which dominate for millions of
    candidate pairs on sparse data.
    """
    used = np.unique(pos[pos >= 0])
    F = int(used.size)
    out = np.zeros(pos.shape[0], dtype=np.int64)
    if F < 2:
        return out
    rank_of = np.full(db.items.size, -1, dtype=np.int64)
    rank_of[used] = np.arange(F)
    r = rank_of[db.indices]
    keep = r >= 0
    tx, r = db.rows[keep], r[keep]
    ptr = np.zeros(db.n_transactions + 1, dtype=np.int64)
    np.cumsum(np.bincount(tx, minlength=db.n_transactions), out=ptr[1:])
    a, b, cnt = pair_counts(F, ptr, r)
    codes = a * F + b  # ascending, a < b
    if codes.size == 0:  # no two of these items ever occur together
        return out
    ok = (pos >= 0).all(axis=1)
    ra, rb = rank_of[np.where(pos[:, 0] >= 0, pos[:, 0], 0)], rank_of[np.where(pos[:, 1] >= 0, pos[:, 1], 0)]
    q = np.minimum(ra, rb) * F + np.maximum(ra, rb)
    at = np.minimum(np.searchsorted(codes, q), codes.size - 1)
    hit = ok & (codes[at] == q) & (ra != rb)
    out[hit] = cnt[at[hit]]
    return out


def pair_counts(
    F: int, row_ptr: np.ndarray, row_ranks: np.ndarray, row_weight: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts of all pairs of ranks ``0..F-1`` over horizontal rows: ``(a, b, count)``, a < b, count > 0.

    Row ``t`` holds the ranks ``row_ranks[row_ptr[t]:row_ptr[t+1]]`` (distinct;
    ascending when ``row_weight`` is given) and, if ``row_weight`` is given,
    stands for that many identical rows. This is Apriori's second pass, the
    counting of the candidate pairs C_2 over the transactions (R. Agrawal,
    R. Srikant, "Fast Algorithms for Mining Association Rules", VLDB 1994),
    vectorized.

    Each row's pairs (a < b) are encoded ``a·F + b`` — rows of one length at a time,
    as an ``(n, L)`` matrix indexed by ``triu_indices(L, 1)`` — and counted in
    batches of ~16 M pairs: with a weighted ``bincount`` over the F² bins when F is
    small, else by sorting the codes (numpy's SIMD sort) and measuring the runs.
    """
    lengths = np.diff(row_ptr)
    weighted = row_weight is not None
    dense = weighted or F * F <= (1 << 16)
    code_t = np.uint32 if F * F < (1 << 32) else np.uint64
    total = np.zeros(F * F if dense else 0, dtype=np.float64)  # dense: counts per code a·F + b
    runs_u: list[np.ndarray] = []
    runs_c: list[np.ndarray] = []
    pend_c: list[np.ndarray] = []
    pend_w: list[np.ndarray] = []
    pend_n = 0

    def flush():
        nonlocal total
        codes = np.concatenate(pend_c)
        w = np.concatenate(pend_w) if weighted else None
        pend_c.clear()
        pend_w.clear()
        if dense:
            total += np.bincount(codes, weights=w, minlength=F * F)
        else:
            codes.sort()
            start = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))
            runs_u.append(codes[start])
            runs_c.append(np.diff(np.append(start, codes.size)))

    by_len = np.argsort(lengths, kind="stable")
    sorted_len = lengths[by_len]
    uniq_len = np.unique(sorted_len)
    bounds = np.searchsorted(sorted_len, uniq_len, side="left").tolist() + [sorted_len.size]
    for g, L in enumerate(uniq_len.tolist()):
        if L < 2:
            continue
        rows = by_len[bounds[g] : bounds[g + 1]]
        a, b = np.triu_indices(L, 1)
        step = max(1, (1 << 22) // a.size)
        for s in range(0, rows.size, step):
            sel = rows[s : s + step]
            M = row_ranks[row_ptr[sel][:, None] + np.arange(L)].astype(code_t)
            if not weighted:
                M.sort(axis=1)
            pend_c.append((M[:, a] * code_t(F) + M[:, b]).ravel())
            if weighted:
                pend_w.append(np.repeat(row_weight[sel], a.size))  # type: ignore[index]  # weighted
            pend_n += sel.size * a.size
            if pend_n >= (1 << 24):
                flush()
                pend_n = 0
    if pend_c:
        flush()
    if dense:
        codes = np.flatnonzero(total)
        cnt = np.rint(total[codes]).astype(np.int64)
    elif len(runs_u) > 1:
        u = np.concatenate(runs_u)
        c = np.concatenate(runs_c)
        o = np.argsort(u, kind="stable")
        u, c = u[o], c[o]
        start = np.flatnonzero(np.concatenate(([True], u[1:] != u[:-1])))
        codes, cnt = u[start], np.add.reduceat(c, start)
    elif runs_u:
        codes, cnt = runs_u[0], runs_c[0]
    else:
        codes, cnt = np.zeros(0, np.int64), np.zeros(0, np.int64)
    codes = codes.astype(np.int64)
    return codes // F, codes % F, cnt.astype(np.int64)


def item_columns(db: TransactionDB | object, items: Sequence[int] | np.ndarray) -> np.ndarray:
    """Packed bit columns ``(len(items), W)`` uint64 of the given item ids.

    Row i marks the transactions containing ``items[i]`` (all zero for an id the
    database does not hold). Bit layout as in :mod:`anonymize.itemsets.bitset`.
    These are the per-party item columns of vertical mining (Vaidya & Clifton
    2002) and Eclat's tidsets as bit vectors (Zaki 2000).
    """
    db = as_transaction_db(db)
    pos = db.item_positions(np.asarray(items, dtype=np.int64).ravel())
    out = np.zeros((pos.size, db.n_words), dtype=np.uint64)
    ok = pos >= 0
    if ok.any():
        out[ok] = db.columns(pos[ok])
    return out
