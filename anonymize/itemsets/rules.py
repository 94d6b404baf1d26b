"""Association rules X → Y from frequent itemsets and their counts.

For a frequent itemset Z and a non-empty proper subset Y ⊂ Z, the rule
(Z∖Y) → Y has support ``count(Z)`` and confidence ``count(Z) / count(Z∖Y)``;
both counts are in the mining result because every subset of a frequent
itemset is frequent. Generation follows ap-genrules of Agrawal & Srikant
(1994), "Fast Algorithms for Mining Association Rules", §3: consequents grow
one item at a time, and a consequent is tried only if all its one-smaller
subsets gave confident rules (confidence can only drop as the consequent
grows, since the antecedent shrinks and its count rises). It runs for all
itemsets of one size at once: a rule is (itemset row, bit mask of the
consequent's positions), and antecedent counts come from one exact
``searchsorted`` lookup per batch.

``confidence ≥ min_confidence`` is decided exactly: ``min_confidence`` is read as
the decimal it prints as (p/q) and ``count(Z)·q ≥ p·count(X)`` is compared in
integers, so 0.7 admits 7/10.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from .candidates import RowIndex
from .result import FrequentItemsets
from .support import Threshold, exact_fraction

__all__ = ["association_rules", "AssociationRules", "Rule"]


class Rule(NamedTuple):
    """One rule: ``antecedent → consequent`` with the count of their union and its confidence."""

    antecedent: tuple[int, ...]
    consequent: tuple[int, ...]
    count: int | None  # type: ignore[assignment]  # a field named count shadows tuple.count (public API)
    confidence: float | None  # None only for rules decided without counts (joint mining, private counts)


class AssociationRules:
    """A set of association rules, stored as columns.

    A rule is identified by the frequent itemset Z = X ∪ Y (``size``, ``row`` in
    that level of :attr:`frequent`) and ``mask``, the bit mask of the positions of
    Z (ascending items) that form the consequent Y. Aligned arrays: ``count``
    (of Z), ``antecedent_count``, ``consequent_count`` (int64), ``confidence``,
    ``lift`` (float64). Rules are ordered by size of Z, then Z, then mask.
    """

    __slots__ = (
        "frequent",
        "size",
        "row",
        "mask",
        "count",
        "antecedent_count",
        "consequent_count",
        "confidence",
        "lift",
        "min_confidence",
    )

    def __init__(self, frequent: FrequentItemsets, size, row, mask, ante_count, cons_count, min_confidence):
        self.frequent = frequent
        self.size = np.asarray(size, dtype=np.int64)
        self.row = np.asarray(row, dtype=np.int64)
        self.mask = np.asarray(mask, dtype=np.int64)
        self.count = np.empty(self.size.size, dtype=np.int64)
        for k in np.unique(self.size):
            sel = self.size == k
            self.count[sel] = frequent.counts(int(k))[self.row[sel]]
        self.antecedent_count = np.asarray(ante_count, dtype=np.int64)
        self.consequent_count = np.asarray(cons_count, dtype=np.int64)
        self.confidence = self.count / np.maximum(self.antecedent_count, 1)
        n = frequent.n_transactions
        self.lift = self.confidence * n / np.maximum(self.consequent_count, 1)
        self.min_confidence = min_confidence

    def __len__(self) -> int:
        return int(self.size.size)

    def __repr__(self) -> str:
        return f"AssociationRules({len(self)} rules, min_confidence={self.min_confidence})"

    def _sides(self) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
        ante: list = [None] * len(self)
        cons: list = [None] * len(self)
        for k in np.unique(self.size).tolist():
            sel = np.flatnonzero(self.size == k)
            Z = self.frequent.itemsets(k)[self.row[sel]]
            inY = ((self.mask[sel][:, None] >> np.arange(k)) & 1).astype(bool)
            for r, z, y in zip(sel.tolist(), Z.tolist(), inY.tolist()):
                ante[r] = tuple(i for i, b in zip(z, y) if not b)
                cons[r] = tuple(i for i, b in zip(z, y) if b)
        return ante, cons

    @property
    def antecedents(self) -> list[tuple[int, ...]]:
        """Antecedent X of every rule (ascending item ids)."""
        return self._sides()[0]

    @property
    def consequents(self) -> list[tuple[int, ...]]:
        """Consequent Y of every rule (ascending item ids)."""
        return self._sides()[1]

    def __iter__(self) -> Iterator[Rule]:
        ante, cons = self._sides()
        return iter([Rule(a, c, n, f) for a, c, n, f in zip(ante, cons, self.count.tolist(), self.confidence.tolist())])

    def to_dict(self) -> dict[tuple[frozenset, frozenset], tuple[int, float]]:
        """``{(frozenset(X), frozenset(Y)): (count, confidence)}``."""
        ante, cons = self._sides()
        return {
            (frozenset(a), frozenset(c)): (n, f)
            for a, c, n, f in zip(ante, cons, self.count.tolist(), self.confidence.tolist())
        }

    def to_frame(self, use_labels: bool = True) -> Any:
        """pandas DataFrame like ``mlxtend.frequent_patterns.association_rules`` (plus counts).

        Columns: ``antecedents``, ``consequents`` (frozensets), ``count``, ``support``,
        ``antecedent_support``, ``consequent_support`` (fractions), ``confidence``, ``lift``.
        """
        import pandas as pd

        labels = self.frequent.labels if use_labels else None
        name = (lambda i: labels.get(i, i)) if labels else (lambda i: i)
        ante, cons = self._sides()
        n = max(self.frequent.n_transactions, 1)
        return pd.DataFrame(
            {
                "antecedents": [frozenset(map(name, a)) for a in ante],
                "consequents": [frozenset(map(name, c)) for c in cons],
                "count": self.count,
                "support": self.count / n,
                "antecedent_support": self.antecedent_count / n,
                "consequent_support": self.consequent_count / n,
                "confidence": self.confidence,
                "lift": self.lift,
            }
        )


def _confident(cz: np.ndarray, ca: np.ndarray, frac, limit: int) -> np.ndarray:
    p, q = frac.numerator, frac.denominator
    if q * limit < (1 << 62) and p * limit < (1 << 62):
        return cz * q >= ca * p
    return cz / ca >= float(frac)  # pragma: no cover - absurdly fine-grained thresholds only


def _subset_rows(Z: np.ndarray, masks: np.ndarray, keep_bits: bool) -> np.ndarray:
    """Rows of Z restricted to positions whose mask bit equals ``keep_bits`` (order kept)."""
    k = Z.shape[1]
    bits = ((masks[:, None] >> np.arange(k)) & 1).astype(bool)
    sel = bits if keep_bits else ~bits
    width = int(sel[0].sum()) if sel.shape[0] else 0
    return Z[sel].reshape(-1, width)


def association_rules(frequent: FrequentItemsets, min_confidence: Threshold = 0.5) -> AssociationRules:
    """All rules X → Y (X, Y non-empty, disjoint, X ∪ Y frequent) with confidence ≥ ``min_confidence``.

    ap-genrules of Agrawal & Srikant (1994), §3, vectorized over all frequent
    itemsets of a size; see the module docstring. ``frequent`` must be a complete
    mining result (every subset of an itemset in it is in it), such as the output
    of :func:`~.miners.frequent_itemsets`. Support is the count of X ∪ Y;
    confidence ``count(X ∪ Y) / count(X)``.
    """
    frac = exact_fraction(min_confidence)
    if not (0 <= frac <= 1):
        raise ValueError(f"min_confidence must be in [0, 1] (got {min_confidence!r})")
    limit = max(frequent.n_transactions, 1)
    out_size, out_row, out_mask, out_ca, out_cc = [], [], [], [], []
    for k in sorted(frequent.levels):
        if k < 2:
            continue
        if k > 62:
            raise ValueError("itemsets longer than 62 items are not supported for rule generation")
        Z, cz = frequent.levels[k]
        n = Z.shape[0]
        z = np.repeat(np.arange(n, dtype=np.int64), k)
        top = np.tile(np.arange(k, dtype=np.int64), n)  # highest consequent position
        mask = np.left_shift(1, top)
        m = 1
        while z.size:
            ante = _subset_rows(Z[z], mask, keep_bits=False)
            pos = frequent.lookup(k - m, ante)
            if (pos < 0).any():
                raise ValueError("the frequent itemsets are not closed under subsets (is this a complete result?)")
            ca = frequent.counts(k - m)[pos]
            ok = _confident(cz[z], ca, frac, limit)
            z, top, mask, ca = z[ok], top[ok], mask[ok], ca[ok]
            if z.size:
                cons = _subset_rows(Z[z], mask, keep_bits=True)
                cpos = frequent.lookup(m, cons)
                out_size.append(np.full(z.size, k))
                out_row.append(z)
                out_mask.append(mask)
                out_ca.append(ca)
                out_cc.append(frequent.counts(m)[cpos])
            if m + 1 >= k or z.size == 0:
                break
            # grow consequents by one position above their highest, keep those whose every
            # one-smaller sub-consequent passed (Apriori's prune on consequents)
            ext = k - 1 - top
            zz = np.repeat(z, ext)
            first = np.cumsum(ext) - ext
            newtop = np.repeat(top + 1, ext) + (np.arange(int(ext.sum())) - np.repeat(first, ext))
            newmask = np.repeat(mask, ext) | np.left_shift(1, newtop)
            passed = RowIndex(np.stack([z, mask], axis=1))
            keep = np.ones(zz.size, dtype=bool)
            for t in range(k - 1):
                has = ((newmask >> t) & 1).astype(bool) & (newtop != t)
                if has.any():
                    q = np.stack([zz[has], newmask[has] & ~(1 << t)], axis=1)
                    keep[np.flatnonzero(has)[passed.find(q) < 0]] = False
            z, top, mask = zz[keep], newtop[keep], newmask[keep]
            m += 1
    if out_size:
        size, row, mask = (np.concatenate(a) for a in (out_size, out_row, out_mask))
        ca, cc = np.concatenate(out_ca), np.concatenate(out_cc)
        o = np.lexsort((mask, row, size))
        return AssociationRules(frequent, size[o], row[o], mask[o], ca[o], cc[o], min_confidence)
    e = np.zeros(0, np.int64)
    return AssociationRules(frequent, e, e, e, e, e, min_confidence)
