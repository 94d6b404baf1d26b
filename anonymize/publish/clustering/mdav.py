"""MDAV — maximum distance to average vector — fixed-size microaggregation (Domingo-Ferrer &
Mateo-Sanz, "Practical data-oriented microaggregation for statistical disclosure control", IEEE
TKDE 14(1), 2002; Domingo-Ferrer & Torra, "Ordinal, continuous and heterogeneous k-anonymity
through microaggregation", Data Mining and Knowledge Discovery 11(2), 2005) — baseline.

The loop is sdcMicro's ``mdav`` (``microaggregation(method = "mdav")``, C++ ``Mdav.cpp``):

* distances are squared Euclidean with every numeric variable weighted by 1/variance (the
  population variance over the table; weight 1 for a constant column);
* while at least ``2k`` records are left: one group if fewer than ``3k`` are left, else two.
  ``x_r`` = the record farthest from the centroid of those left; the ``k`` records nearest to
  ``x_r`` (itself included) form a group; ``x_s`` = the record farthest from ``x_r`` (over the
  records left *before* ``x_r``'s group is removed, as sdcMicro does) and its ``k`` nearest form the
  second group;
* the ``k ≤ r < 2k`` records left form the last group.

Ties (equal distances) are broken by code order here where sdcMicro's hash sort breaks them by
bucket order, so group membership may differ on ties, not sizes.

sdcMicro's ``mdav`` takes numeric variables only. Categorical QIs are handled as nominal
attributes as in Domingo-Ferrer & Torra 2005: distance 0 for equal values and 1 otherwise (one
standard deviation of a numeric variable weighs as much as one mismatch), the centroid's value
being the mode. Every group has ``k`` rows except the last (``k .. 2k−1``), so k-anonymity holds
on the released classes (shared partition release; with ``--numeric-output mean`` numeric QIs are
the group means, i.e. microaggregation proper).

Vectorization: each distance pass scores all remaining distinct rows as ``Σ_j tab_j[codes_j]``
(per-leaf tables: ``w_j (v − c_j)²`` or ``[v ≠ c_j]``); O(n/k) passes of O(m·q).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from ..models import PrivacyModel, check_fits
from ..registry import CLUSTERING, PartitionResult, register
from ..table import EncodedTable
from .common import CodePacker, Remaining, TakeLog, distinct_rows, encoded, model_k, numeric_values

__all__ = ["mdav"]


class _Space:
    """Per-QI distance tables of the MDAV metric."""

    def __init__(self, table: EncodedTable):
        self.numeric = [bool(h.numeric) for h in table.hierarchies]
        self.vals: list[np.ndarray] = [numeric_values(h) if h.numeric else np.zeros(0) for h in table.hierarchies]
        self.L = [h.n_leaves for h in table.hierarchies]
        self.w = []
        for j, h in enumerate(table.hierarchies):
            if h.numeric:
                x = self.vals[j][table.qi_codes[:, j]]
                var = float(np.mean(x * x) - np.mean(x) ** 2)
                self.w.append(1.0 / var if var > 0 else 1.0)
            else:
                self.w.append(1.0)

    def tables_to(self, point: list) -> list[np.ndarray]:
        """Tables of the distance to a point given per QI as a value (numeric) or a leaf code."""
        out = []
        for j, p in enumerate(point):
            if self.numeric[j]:
                out.append(self.w[j] * (self.vals[j] - p) ** 2)
            else:
                t = np.ones(self.L[j])
                t[int(p)] = 0.0
                out.append(t)
        return out

    def point_of(self, codes: np.ndarray) -> list:
        """The point of one code row."""
        return [self.vals[j][c] if self.numeric[j] else int(c) for j, c in enumerate(codes)]


@register(
    "mdav",
    kind=CLUSTERING,
    summary="MDAV microaggregation as in sdcMicro (Domingo-Ferrer & Mateo-Sanz 2002; Domingo-Ferrer & Torra 2005) "
    "— baseline",
    accepts=["k-anonymity"],
    requires=["k-anonymity"],
)
def mdav(
    table: EncodedTable,
    models: Sequence[PrivacyModel],
    *,
    progress: Callable[[str], None] | None = None,
) -> PartitionResult:
    """Group ``table`` with MDAV (module docstring): groups of exactly ``k`` rows and a last group
    of ``k .. 2k−1``."""
    t0 = time.perf_counter()
    table = encoded(table)
    k = model_k(models, "mdav")
    check_fits(models, table.n)
    sp = _Space(table)
    U, inv, cnt = distinct_rows(table.qi_codes)
    rem = Remaining(U, cnt, CodePacker(sp.L))
    hist = [np.bincount(table.qi_codes[:, j], minlength=sp.L[j]).astype(np.float64) for j in range(table.q)]
    log = TakeLog()
    groups = 0

    def take_nearest(d: np.ndarray) -> None:
        nonlocal groups
        if len(d) > k:  # the k nearest tuples lie among the k nearest distinct rows
            kth = np.partition(d, k - 1)[k - 1]
            cand = np.flatnonzero(d <= kth)
            order = cand[np.argsort(d[cand], kind="stable")]
        else:
            order = np.argsort(d, kind="stable")
        c = rem.cnt[order]
        before = np.cumsum(c) - c
        t = np.minimum(c, np.maximum(0, k - before))
        sel = t > 0
        pos, t = order[sel], t[sel]
        log.add(rem.ids[pos], groups, t)
        for j in range(table.q):
            np.subtract.at(hist[j], U[rem.ids[pos], j], t)
        rem.take(pos, t)
        groups += 1

    while rem.tuples >= 2 * k:
        ngroups = 1 if rem.tuples < 3 * k else 2
        total = hist[0].sum()
        center = [
            float(hist[j] @ sp.vals[j]) / total if sp.numeric[j] else int(np.argmax(hist[j])) for j in range(table.q)
        ]
        d = rem.score(sp.tables_to(center))
        d[np.isinf(d)] = -np.inf
        cur = U[rem.ids[int(np.argmax(d))]]
        for _ in range(ngroups):
            d = rem.score(sp.tables_to(sp.point_of(cur)))
            dd = np.where(np.isinf(d), -np.inf, d)
            far = U[rem.ids[int(np.argmax(dd))]]
            take_nearest(d)
            cur = far
        if progress and groups % 200 < 2:
            progress(f"mdav: {groups} groups, {rem.tuples} records left")
    if rem.tuples:
        live = rem.live()
        log.add(rem.ids[live], groups, rem.cnt[live])
        groups += 1
    class_id = log.labels(inv)
    stats = {"k": k, "groups": groups, "weights": sp.w, "seconds": time.perf_counter() - t0}
    return PartitionResult(class_id, groups, stats=stats)
