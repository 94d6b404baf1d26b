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
choice need not be secret. It is derived from a keyed pseudorandom function of the transaction's
index, the level and the candidate — AES-128 under a fresh per-job key, one block per
transaction and four candidates (:func:`choice_keys`) — not drawn from one sequential stream, so
adding or removing a transaction never shifts the choices made for the others. The price is bias: a candidate in a transaction with c > m contained
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

__all__ = ["clamped_counts", "choice_keys", "level_sensitivity", "CHUNK_CELLS"]

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


def choice_keys(key: bytes, level: int, transactions: np.ndarray, n_candidates: int) -> np.ndarray:
    """``(n_candidates, len(transactions))`` uniform 32-bit keys: AES-128 (the PRF) under ``key`` of the
    blocks ``level ‖ transaction index ‖ candidate group`` (4 + 8 + 4 bytes, little-endian), four
    candidates per block. The m smallest keys among a transaction's contained candidates are the ones
    it counts towards."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    t = np.asarray(transactions, dtype=np.int64)
    groups = -(-int(n_candidates) // 4)
    blocks = np.zeros((t.size, groups, 4), dtype="<u4")
    blocks[:, :, 0] = np.uint32(level)
    blocks[:, :, 1] = (t & 0xFFFFFFFF).astype(np.uint32)[:, None]
    blocks[:, :, 2] = (t >> 32).astype(np.uint32)[:, None]
    blocks[:, :, 3] = np.arange(groups, dtype=np.uint32)[None, :]
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    out = np.frombuffer(enc.update(blocks.tobytes()) + enc.finalize(), dtype="<u4")
    return out.reshape(t.size, groups * 4)[:, : int(n_candidates)].T


def clamped_counts(
    db: TransactionDB, cand: np.ndarray, max_contributions: int | None, key: bytes, *, level: int | None = None
) -> tuple[np.ndarray, int]:
    """Counts of the candidates ``cand`` (one k-itemset per row) with each transaction's contribution
    truncated to at most ``max_contributions`` candidates, chosen uniformly at random (module docstring).

    ``key``: 16 bytes, the job's PRF key for the choices; ``level`` (default: the itemset length)
    separates the levels' choices. Returns ``(counts int64, number of truncated transactions)``.
    ``max_contributions=None`` (or ≥ the number of candidates) is plain counting.
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
        lv = cand.shape[1] if level is None else level
        # 32 PRF bits, then the candidate's index: distinct keys, so exactly m are kept
        keys = (choice_keys(key, lv, heavy[64 * w0 + over], K).astype(np.int64) << 31) + np.arange(K)[:, None]
        keys[~Mo] = np.iinfo(np.int64).max  # never chosen
        kth = np.partition(keys, m - 1, axis=0)[m - 1]  # the m-th smallest key of each transaction
        dropped += (Mo & (keys > kth)).sum(axis=1)
    return full - dropped, truncated
