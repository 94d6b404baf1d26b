"""Invariant PRAM: post-randomisation of categorical columns (sdcMicro's ``pram``).

References: J. M. Gouweleeuw, P. Kooiman, L. C. R. J. Willenborg, P.-P. de Wolf, "Post Randomisation
for Statistical Disclosure Control: Theory and Implementation", *Journal of Official Statistics*
14(4):463–478, 1998 (PRAM, the invariant matrix ``R = P·Q``, the unbiased moment estimator of the
original frequencies); M. Templ, A. Kowarik, B. Meindl, *Journal of Statistical Software* 67(4),
2015 (sdcMicro's ``pram`` with ``pd`` and ``alpha``).

Every present value of a column is replaced independently: true category ``i`` is released as
``j`` with probability ``P[i, j]`` (rows sum to 1). Missing values stay missing. The matrix is
built as sdcMicro builds its default (``R/pram.R``, ``calcTransitionMatrix``), with the category
proportions ``p`` of the column:

1. a base matrix ``B`` whose diagonal ``B[i, i]`` is drawn uniformly from ``[pd, 1)`` per category
   and whose off-diagonal entries spread the rest evenly, ``(1 − B[i, i]) / (L − 1)``;
2. the backward matrix ``Q[k, j] = B[j, k]·p_j / Σ_l p_l·B[l, k]`` (the probability that a
   released ``k`` came from ``j``) and ``R = B·Q``, which is invariant: ``pᵀR = pᵀ``;
3. ``P = α·R + (1 − α)·I`` — still invariant, ``α`` in [0, 1] scales the perturbation.

**Where it differs from sdcMicro.** sdcMicro's ``pd`` bounds the diagonal of ``B`` only; the
diagonal of its final matrix can fall below ``pd`` for rare categories (their ``Q[i, i]`` is
small). Here ``pd`` is the minimum probability of keeping a value in the *released* matrix: when
a diagonal entry of step 3 is below ``pd``, ``α`` is lowered to the largest value that lifts every
diagonal entry to ``pd`` (mixing with ``I`` keeps the matrix invariant), and the lowered value is
reported as ``alpha_effective``. Strata and user-supplied matrices are not implemented.

**Estimation.** With ``T`` the original counts and ``T*`` the released ones, ``E[T*] = PᵀT``, so
``T̂ = P⁻ᵀ·T*`` is unbiased (Gouweleeuw et al. 1998, §3). Its covariance given ``T`` is
``P⁻ᵀ·V·P⁻¹`` with ``V = Σ_i T_i·(diag(P_i) − P_iᵀP_i)`` (multinomial rows); the reported standard
errors plug ``max(T̂, 0)`` in for ``T``.

Randomness comes from :class:`anonymize.dp.RandomSource`: the OS CSPRNG by default, or a seeded
AES-CTR stream (tests only: anyone who knows the seed can undo the randomisation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas

from ..dp.randomness import RandomSource, as_source
from ..errors import AnonymizeError

__all__ = ["PramColumn", "PramResult", "estimate_original_counts", "invariant_transition_matrix", "pram"]

#: PRAM is for categorical columns: more distinct values than this is refused
MAX_CATEGORIES = 1000


@dataclass(frozen=True)
class PramColumn:
    """One column's PRAM: its categories (row/column order of ``matrix``), the matrix, the counts."""

    column: str
    categories: list[Any]
    matrix: np.ndarray
    pd: float
    alpha: float
    alpha_effective: float
    released_counts: np.ndarray
    changed: int
    estimated_counts: np.ndarray | None
    standard_errors: np.ndarray | None

    def to_json(self) -> dict[str, Any]:
        def py(v):
            return v.item() if isinstance(v, np.generic) else v

        cats = [py(c) for c in self.categories]
        return {
            "categories": [c if isinstance(c, (int, float, str, bool)) else str(c) for c in cats],
            "transition_matrix": [[float(x) for x in row] for row in self.matrix],
            "pd": self.pd,
            "alpha": self.alpha,
            "alpha_effective": self.alpha_effective,
            "changed": self.changed,
            "released_counts": [int(x) for x in self.released_counts],
            "estimated_original_counts": None
            if self.estimated_counts is None
            else [float(x) for x in self.estimated_counts],
            "standard_errors": None if self.standard_errors is None else [float(x) for x in self.standard_errors],
        }


@dataclass(frozen=True)
class PramResult:
    table: pandas.DataFrame
    columns: dict[str, PramColumn] = field(default_factory=dict)
    seeded: bool = False

    def to_json(self) -> dict[str, Any]:
        return {c: r.to_json() for c, r in self.columns.items()}


def _check_params(pd_: float, alpha: float) -> None:
    if not (isinstance(pd_, (int, float)) and math.isfinite(pd_) and 0 < pd_ <= 1):
        raise AnonymizeError(f"pd (the minimum probability of keeping a value) must be in (0, 1], got {pd_!r}")
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and 0 <= alpha <= 1):
        raise AnonymizeError(f"alpha (the amount of perturbation) must be in [0, 1], got {alpha!r}")


def invariant_transition_matrix(
    counts, pd: float = 0.8, alpha: float = 0.5, rng: RandomSource | int | None = None
) -> tuple[np.ndarray, float]:
    """The invariant transition matrix of sdcMicro's ``pram`` for category ``counts`` (all > 0),
    with every diagonal entry ≥ ``pd``; returns ``(P, alpha_effective)``.

    Gouweleeuw, Kooiman, Willenborg, de Wolf, JOS 14(4), 1998 (``R = P·Q``); sdcMicro ``pram.R``
    (random base diagonal in ``[pd, 1)``, ``α·R + (1 − α)·I``). See the module docstring for the
    steps and for how ``pd`` differs from sdcMicro's.
    """
    _check_params(pd, alpha)
    t = np.asarray(counts, dtype=np.float64)
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise AnonymizeError("category counts must be a non-empty list of positive numbers")
    L = t.size
    if L == 1:
        return np.ones((1, 1)), float(alpha)
    src = as_source(rng)
    p = t / t.sum()
    diag = pd + (1.0 - pd) * src.uniform01(L)
    base = np.repeat(((1.0 - diag) / (L - 1))[:, None], L, axis=1)
    np.fill_diagonal(base, diag)
    s = p @ base  # s_k = Σ_l p_l B[l, k]
    back = (base * p[:, None]).T / s[:, None]  # Q[k, j] = B[j, k] p_j / s_k
    r = base @ back
    eye = np.eye(L)
    m = alpha * r + (1.0 - alpha) * eye
    a_eff = float(alpha)
    dmin = float(np.diag(m).min())
    if dmin < pd:
        beta = (1.0 - pd) / (1.0 - dmin) * (1.0 - 1e-12)
        m = beta * m + (1.0 - beta) * eye
        a_eff = float(alpha * beta)
    m = np.clip(m, 0.0, None)
    m /= m.sum(axis=1, keepdims=True)
    return m, a_eff


def estimate_original_counts(released_counts, matrix) -> tuple[np.ndarray, np.ndarray] | None:
    """``(T̂, standard errors)`` with ``T̂ = P⁻ᵀ·T*`` the unbiased estimate of the original counts from
    the released counts ``T*`` (Gouweleeuw et al., JOS 1998, §3); None when ``P`` is (numerically)
    singular."""
    ts = np.asarray(released_counts, dtype=np.float64)
    P = np.asarray(matrix, dtype=np.float64)
    if np.linalg.cond(P) > 1e10:
        return None
    est = np.linalg.solve(P.T, ts)
    t = np.clip(est, 0.0, None)
    v = np.diag(t @ P) - (P.T * t) @ P  # Σ_i t_i (diag(P_i) − P_iᵀ P_i)
    pinv = np.linalg.inv(P)
    cov = pinv.T @ v @ pinv
    return est, np.sqrt(np.clip(np.diag(cov), 0.0, None))


def _factorize(s: pandas.Series) -> tuple[np.ndarray, list[Any]]:
    try:
        codes, uniques = pandas.factorize(s, sort=True, use_na_sentinel=True)
    except TypeError:  # mixed types that do not sort
        codes, uniques = pandas.factorize(s, sort=False, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64), list(uniques)


def pram(
    df: pandas.DataFrame, columns, pd: float = 0.8, alpha: float = 0.5, rng: RandomSource | int | None = None
) -> PramResult:
    """Invariant PRAM of the categorical ``columns`` — sdcMicro's ``pram`` (Templ, Kowarik, Meindl,
    JSS 67(4), 2015) after Gouweleeuw, Kooiman, Willenborg, de Wolf (JOS 14(4), 1998).

    One matrix per column (:func:`invariant_transition_matrix`, from that column's counts), then
    every present value is redrawn from its matrix row; missing values stay missing. Returns the
    table and, per column, the matrix, the released counts, the number of values changed and the
    unbiased estimate of the original counts with standard errors. ``rng``: a
    :class:`~anonymize.dp.RandomSource`, a seed (tests only) or None (the OS CSPRNG).
    """
    _check_params(pd, alpha)
    cols = [str(c) for c in columns]
    if not cols:
        raise AnonymizeError("no columns given for PRAM")
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        raise AnonymizeError(f"PRAM column listed twice: {', '.join(dup)}")
    unknown = [c for c in cols if c not in df.columns]
    if unknown:
        raise AnonymizeError(
            f"unknown column(s) {', '.join(repr(c) for c in unknown)} (the table has: {', '.join(map(str, df.columns))})"
        )
    prepared = []
    for c in cols:
        codes, cats = _factorize(df[c])
        if len(cats) > MAX_CATEGORIES:
            raise AnonymizeError(
                f"column {c!r} has {len(cats)} distinct values; PRAM is for categorical columns "
                f"(at most {MAX_CATEGORIES} categories)"
            )
        prepared.append((c, codes, cats))
    src = as_source(rng)
    table = df.copy()
    out: dict[str, PramColumn] = {}
    for c, codes, cats in prepared:
        present = codes >= 0
        L = len(cats)
        if L == 0:
            out[c] = PramColumn(c, [], np.zeros((0, 0)), pd, alpha, alpha, np.zeros(0, np.int64), 0, None, None)
            continue
        counts = np.bincount(codes[present], minlength=L)
        P, a_eff = invariant_transition_matrix(counts, pd, alpha, src)
        cum = np.cumsum(P, axis=1)
        cum[:, -1] = 1.0
        new = codes.copy()
        idx = np.flatnonzero(present)
        u = src.uniform01(len(idx))
        for i in range(L):
            sel = codes[idx] == i
            new[idx[sel]] = np.minimum(np.searchsorted(cum[i], u[sel], side="right"), L - 1)
        released = np.bincount(new[present], minlength=L)
        changed = int((new[present] != codes[present]).sum())
        est = estimate_original_counts(released, P)
        if changed:
            s = table[c].copy()
            values = np.empty(len(idx), dtype=object)
            values[:] = [cats[j] for j in new[idx]]
            s.iloc[idx] = values
            table[c] = s.astype(df[c].dtype) if not isinstance(df[c].dtype, pandas.CategoricalDtype) else s
        out[c] = PramColumn(
            column=c,
            categories=cats,
            matrix=P,
            pd=float(pd),
            alpha=float(alpha),
            alpha_effective=a_eff,
            released_counts=released,
            changed=changed,
            estimated_counts=None if est is None else est[0],
            standard_errors=None if est is None else est[1],
        )
    return PramResult(table=table, columns=out, seeded=src.seeded)
