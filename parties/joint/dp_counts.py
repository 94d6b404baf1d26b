"""Candidate counts with a bounded contribution per transaction: the sensitivity of a level's count vector.

One transaction adds 1 to the count of *every* candidate it contains, so the L1 sensitivity of
the vector of a level's candidate counts (neighbouring databases differ by one transaction added
or removed) is the largest number of candidates one transaction can contain — up to |C_k|, or
C(|t|, k) for a transaction t, which is data-dependent and unbounded. :func:`clamped_counts`
bounds it by *contribution truncation*: a transaction that contains more than ``m`` candidates
of the level counts towards a uniformly random ``m`` of them only (the per-level analogue of the
transaction truncation of C. Zeng, J. F. Naughton, J.-Y. Cai, "On differentially private frequent
itemset mining", PVLDB 6(1), 2012). The truncated count vector then changes by a 0/1 vector of at
most ``m`` ones when one transaction is added or removed: L1 sensitivity ``min(m, |C_k|)``.

The random choice is made independently per transaction, so the argument holds for every fixed
choice of the other transactions' subsets (the mechanism is a mixture of ε-DP mechanisms); the
choice need not be secret. The price is bias: a candidate in a transaction with c > m contained
candidates is counted with probability m/c, so truncated counts are lower than the true counts —
reported as ``truncated_transactions`` (this party's number of truncated transactions stays
local: only the sum over parties' noisy counts is ever revealed).

Cost: transactions that cannot contain more than ``m`` candidates (C(f, k) ≤ m, f = number of
their items that occur in some candidate, read from the CSR arrays) are counted by the ordinary
bit-column popcount; only the others are unpacked to a candidates × transactions bit matrix, in
chunks of at most :data:`CHUNK_CELLS` cells.
"""

from __future__ import annotations

import math

import numpy as np

from anonymize.itemsets import TransactionDB, count_support, itemset_columns
from anonymize.itemsets.bitset import unpack_columns

__all__ = ["clamped_counts", "level_sensitivity", "CHUNK_CELLS"]

CHUNK_CELLS = 1 << 24  # candidates × transactions cells unpacked at once (16 MB of bools)


def level_sensitivity(n_candidates: int, max_contributions: int | None) -> int:
    """L1 sensitivity of one level's (truncated) count vector: ``min(m, |C_k|)``, or |C_k| without truncation."""
    k = int(n_candidates)
    return max(1, k if max_contributions is None else min(int(max_contributions), k))


def _possible_containment(db: TransactionDB, cand: np.ndarray) -> np.ndarray:
    """Per transaction, C(f, k): an upper bound on how many k-candidates it can contain."""
    k = cand.shape[1]
    used = np.isin(db.items, np.unique(cand))
    f = np.bincount(db.rows, weights=used[db.indices], minlength=db.n_transactions).astype(np.int64)
    top = int(f.max()) if f.size else 0
    table = np.array([min(math.comb(x, k), 2**62) for x in range(top + 1)], dtype=np.int64)
    return table[f]


def clamped_counts(
    db: TransactionDB, cand: np.ndarray, max_contributions: int | None, rng: np.random.Generator
) -> tuple[np.ndarray, int]:
    """Counts of the candidates ``cand`` (one k-itemset per row) with each transaction's contribution
    truncated to at most ``max_contributions`` candidates, chosen uniformly at random (module docstring).

    Returns ``(counts int64, number of truncated transactions)``. ``max_contributions=None`` (or
    ≥ the number of candidates) is plain counting.
    """
    K = cand.shape[0]
    full = count_support(db, cand) if K else np.zeros(0, np.int64)
    m = max_contributions
    if m is None or K == 0 or m >= K or db.n_transactions == 0:
        return full, 0
    if m < 1:
        raise ValueError("max_contributions must be at least 1")
    heavy = np.flatnonzero(_possible_containment(db, cand) > m)
    if not heavy.size:
        return full, 0
    sub = db.take(heavy)
    cols = itemset_columns(sub, cand)  # (K, W) bit columns over the heavy transactions
    words = max(1, CHUNK_CELLS // (64 * K))
    dropped = np.zeros(K, np.int64)
    truncated = 0
    for w0 in range(0, cols.shape[1], words):
        w1 = min(cols.shape[1], w0 + words)
        n = min(sub.n_transactions, 64 * w1) - 64 * w0
        M = unpack_columns(cols[:, w0:w1], 64 * (w1 - w0))[:, :n]  # (K, n): candidate ⊆ transaction
        over = np.flatnonzero(M.sum(axis=0) > m)
        if not over.size:
            continue
        truncated += int(over.size)
        Mo = M[:, over]
        keys = rng.random(Mo.shape)
        keys[~Mo] = 2.0  # never chosen
        kth = np.partition(keys, m - 1, axis=0)[m - 1]  # the m-th smallest key of each transaction
        dropped += (Mo & (keys > kth)).sum(axis=1)
    return full - dropped, truncated
