"""Exact grouping of rows by integer columns, shared by the metrics (vectorized, no Python loop per row)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["DENSE_SPAN", "densify", "group_rows", "distinct_per_class"]

DENSE_SPAN = 1 << 22
"""Flag / count tables up to this many entries (or a few per row) are cheaper than hashing."""


def densify(key: np.ndarray, span: int, n: int) -> tuple[np.ndarray, int]:
    """Dense ids ``0..G-1`` of the int64 ``key`` (values in ``[0, span)``): a presence table when the
    span is small, else ``pd.factorize`` (hashing, no sort)."""
    if span <= max(4 * n, DENSE_SPAN):
        present = np.zeros(span, dtype=bool)
        present[key] = True
        remap = np.cumsum(present, dtype=np.int64) - 1
        return remap[key], int(remap[-1]) + 1
    codes, uniq = pd.factorize(key, sort=False)
    return codes.astype(np.int64, copy=False), len(uniq)


def group_rows(columns, n: int) -> tuple[np.ndarray, int, np.ndarray]:
    """Exact grouping of ``n`` rows by a tuple of integer columns, given as an iterable of
    ``(values, range)`` with ``values`` in ``[0, range)`` (consumed one at a time, so a generator keeps
    only one extra column alive): mixed-radix int64 keys, re-densified before they could overflow.
    Returns ``(gid, G, rep)``: group of every row, number of groups, and some row of each group."""
    key, span = None, 1
    for c, r in columns:
        r = max(int(r), 1)
        if key is None:
            key, span = np.array(c, dtype=np.int64), r
            continue
        if span * r >= 1 << 62:
            key, span = densify(key, span, n)
        key *= r
        key += c
        span *= r
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0, np.zeros(0, dtype=np.int64)
    if key is None:
        return np.zeros(n, dtype=np.int64), 1, np.zeros(1, dtype=np.int64)
    gid, G = densify(key, span, n)
    rep = np.empty(G, dtype=np.int64)
    rep[gid] = np.arange(n, dtype=np.int64)  # any row of the group will do: all its columns agree
    return gid, G, rep


def distinct_per_class(cid: np.ndarray, n_classes: int, codes: np.ndarray, n_values: int) -> np.ndarray:
    """Number of distinct ``codes`` (in ``[0, n_values)``) among the rows of each class: presence of
    the combined key class·n_values + code — a scatter into a table of n_classes·n_values flags when
    that is small, else the distinct keys by hashing (``pd.factorize``, no sort)."""
    n_classes = max(int(n_classes), int(cid.max()) + 1 if len(cid) else 0)
    span = n_classes * int(n_values)
    key = cid * n_values + codes
    if span <= max(8 * len(key), DENSE_SPAN):
        present = np.zeros(span, dtype=bool)
        present[key] = True
        return np.count_nonzero(present.reshape(n_classes, n_values), axis=1)
    _, uniq = pd.factorize(key, sort=False)
    return np.bincount(np.asarray(uniq) // n_values, minlength=n_classes)
