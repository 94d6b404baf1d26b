"""Packed bit columns: the vertical layout every miner here counts with.

Model
-----
A *bit column* over ``n`` transactions is a row of ``W = ceil(n / 64)``
``numpy.uint64`` words; transaction ``t`` is bit ``t % 64`` (least significant
first) of word ``t // 64``. Bits past ``n`` in the last word are always 0, so
``popcount`` of a column is the number of transactions it marks. The layout is
the same as ``np.packbits(x, bitorder="little").view("<u8")`` on a 0/1 vector
padded to a multiple of 64, which makes it a plain little-endian byte string on
the wire.

Support counting on bitsets is the vertical (tidset) representation of Zaki,
"Scalable Algorithms for Association Mining" (IEEE TKDE 12(3), 2000): the
support of X ∪ Y is ``popcount(bits(X) & bits(Y))``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["WORD_BITS", "CHUNK_WORDS", "n_words", "pack_columns", "popcount", "unpack_columns", "pack_rows"]

WORD_BITS = 64
#: Words of uint64 processed per batch by the column operations here and in the miners
#: (~1 MiB: a batch stays in L2 cache while it is ANDed and counted).
CHUNK_WORDS = 1 << 17


def n_words(n: int) -> int:
    """Number of uint64 words of a bit column over ``n`` transactions: ⌈n/64⌉ (bit-vector tidsets, Zaki 2000)."""
    return (int(n) + WORD_BITS - 1) // WORD_BITS


def pack_columns(rows: np.ndarray, cols: np.ndarray, n_cols: int, n_rows: int, *, distinct: bool = False) -> np.ndarray:
    """Pack occurrences ``(rows[i], cols[i])`` into ``n_cols`` bit columns over ``n_rows``.

    Returns a ``(n_cols, ceil(n_rows/64))`` uint64 array whose column ``c`` has bit
    ``r`` set iff some ``i`` has ``rows[i] == r`` and ``cols[i] == c`` (the vertical
    tidset layout of Zaki 2000). One unbuffered scatter: ``np.bitwise_or.at``, or
    the faster ``np.add.at`` when the caller guarantees ``distinct`` pairs (then
    adding the bits is OR-ing them).
    """
    rows = np.asarray(rows, dtype=np.int64).ravel()
    cols = np.asarray(cols, dtype=np.int64).ravel()
    W = n_words(n_rows)
    out = np.zeros(int(n_cols) * W, dtype=np.uint64)
    if rows.size and W:
        bit = np.left_shift(np.uint64(1), (rows & 63).astype(np.uint64))
        (np.add if distinct else np.bitwise_or).at(out, cols * W + (rows >> 6), bit)
    return out.reshape(int(n_cols), W)


def pack_rows(matrix: np.ndarray) -> np.ndarray:
    """Pack a 0/1 (or bool) matrix ``(k, n)`` into ``(k, ceil(n/64))`` uint64 bit columns.

    Row ``i`` of the result is the bit column of ``matrix[i]`` (the inverse of
    :func:`unpack_columns`); the vertical layout of Eclat (Zaki 2000).
    """
    m = np.asarray(matrix)
    if m.ndim == 1:
        m = m[None, :]
    k, n = m.shape
    W = n_words(n)
    buf = np.zeros((k, W * WORD_BITS), dtype=bool)
    buf[:, :n] = m != 0
    return np.packbits(buf, axis=1, bitorder="little").view("<u8").astype(np.uint64, copy=False)


def unpack_columns(bits: np.ndarray, n: int) -> np.ndarray:
    """Bit columns ``(k, W)`` → bool matrix ``(k, n)`` (transaction t of column i at ``[i, t]``).

    Inverse of :func:`pack_rows`; tidsets as bit vectors as in Eclat (Zaki 2000).
    """
    b = np.ascontiguousarray(np.asarray(bits, dtype="<u8"))
    squeeze = b.ndim == 1
    if squeeze:
        b = b[None, :]
    out = np.unpackbits(b.view(np.uint8), axis=1, count=int(n), bitorder="little").astype(bool)
    return out[0] if squeeze else out


def popcount(bits: np.ndarray, word_weights: np.ndarray | None = None) -> np.ndarray:
    """Number of set bits of each bit column (over the last axis), as int64.

    With ``word_weights`` (one weight per word), returns ``Σ_w weight[w] ·
    popcount(bits[..., w])`` — the weighted count used when duplicated transactions
    are collapsed into bit planes (the duplicate collapsing of FP-growth, Han et
    al. 2000). Support by popcount is Eclat's tidset count (Zaki 2000). Counts are
    summed with a BLAS float matrix-vector product in batches of about one MiB,
    exact while totals stay below 2^53.
    """
    b = np.asarray(bits, dtype=np.uint64)
    if b.ndim == 1:
        return popcount(b[None, :], word_weights)[0]
    lead = b.shape[:-1]
    W = b.shape[-1]
    if W == 0 or b.size == 0:
        return np.zeros(lead, dtype=np.int64)
    b = b.reshape(-1, W)
    n = b.shape[0]
    out = np.empty(n, dtype=np.int64)
    w = np.ones(W) if word_weights is None else np.asarray(word_weights, dtype=np.float64)
    step = max(1, CHUNK_WORDS // W)
    for s in range(0, n, step):
        pc = np.bitwise_count(b[s : s + step])
        out[s : s + step] = np.rint(pc.astype(np.float64) @ w)
    return out.reshape(lead)
