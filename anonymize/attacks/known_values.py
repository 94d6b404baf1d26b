"""Re-identification from B known attribute values (C. C. Aggarwal, *Data Mining: The Textbook*,
Springer 2015, §20.8, exercises 14–16; A. Narayanan, V. Shmatikov, "Robust De-anonymization of
Large Sparse Datasets", IEEE S&P 2008).

The adversary knows B of the victim's attribute values — items in a basket, movie ratings,
sensitive attributes — and looks for records that agree on all B. If each of the other n people
agrees on one known value independently with probability 1/R (R equally likely values; R = 2
for a bought/not-bought item), at least one of them agrees on all B with probability

    1 − (1 − R^{−B})^n ≤ n / R^B        (union bound; exercise 14: n = 10⁴, B = 20 → 0.0095),

so with B ≈ log_R n known values the victim is almost surely unique (exercise 15). These
functions give the bound, the exact value, and the attack itself (exercise 16), on a matrix of
codes (:func:`reidentify`) or on a release joined to an external table (:func:`known_values_attack`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from ..publish.hierarchy import Hierarchy
from .disclosure import AttackResult
from .linkage import link

__all__ = ["match_probability_bound", "match_probability", "reidentify", "known_values_attack", "choose_known"]


def match_probability_bound(n: int, B: int, R: int = 2) -> float:
    """Union bound n / R^B on P(another of ``n`` people agrees on the victim's B known values)."""
    return n / float(R) ** B


def match_probability(n: int, B: int, R: int = 2) -> float:
    """Exact 1 − (1 − R^{−B})^n for independent, uniformly distributed values."""
    return float(-np.expm1(n * np.log1p(-(float(R) ** -B))))


def choose_known(candidates: np.ndarray, B: int, rng: np.random.Generator) -> np.ndarray:
    """For each row of the bool matrix ``candidates`` (people × columns), pick ``B`` of its True
    columns uniformly at random (all of them when fewer): a bool matrix of the chosen ones."""
    cand = np.asarray(candidates, dtype=bool)
    keys = rng.random(cand.shape)
    keys[~cand] = np.inf
    order = np.argsort(keys, axis=1)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(cand.shape[1])[None, :].repeat(cand.shape[0], 0), axis=1)
    return cand & (rank < B)


def reidentify(
    data: np.ndarray, victims: Sequence[int] | np.ndarray, B: int, rng=None, known: str = "any"
) -> np.ndarray:
    """Exercise 16 on a code matrix ``data`` (people × attributes): for each victim row, pick B
    known attributes at random (``known="nonzero"``: only among the victim's non-zero entries —
    items bought, movies rated) and return, per victim, how many rows agree on all of them
    (1 = unique: re-identified). Vectorized over blocks of victims."""
    data = np.asarray(data)
    victims = np.asarray(victims, dtype=np.int64)
    rng = np.random.default_rng(rng)
    if B < 1:
        raise AnonymizeError("B must be at least 1")
    cand = np.ones((len(victims), data.shape[1]), dtype=bool)
    if known == "nonzero":
        cand = data[victims] != 0
    elif known != "any":
        raise AnonymizeError("known must be 'any' or 'nonzero'")
    chosen = choose_known(cand, B, rng)
    out = np.empty(len(victims), dtype=np.int64)
    block = max(1, (1 << 24) // max(1, data.size))
    for b0 in range(0, len(victims), block):
        v = victims[b0 : b0 + block]
        ch = chosen[b0 : b0 + block]  # (b, m)
        agree = (data[None, :, :] == data[v][:, None, :]) | ~ch[:, None, :]  # (b, n, m)
        out[b0 : b0 + block] = agree.all(axis=2).sum(axis=1)
    return out


def known_values_attack(
    release: pd.DataFrame,
    external: pd.DataFrame,
    B: int,
    columns: Sequence[str] | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    seed: int = 0,
) -> AttackResult:
    """Each external person reveals B random values among ``columns`` (default: every column the
    two tables share — QIs *and* sensitive ones); re-identified when exactly one released record
    covers all B (generalized cells read as in :mod:`.cells`)."""
    if B < 1:
        raise AnonymizeError("--known B must be at least 1")
    cols = list(columns) if columns else [c for c in external.columns if c in release.columns]
    if not cols:
        raise AnonymizeError("the release and the external table share no column")
    rng = np.random.default_rng(seed)
    mask = choose_known(np.ones((len(external), len(cols)), dtype=bool), B, rng)
    lk = link(release, external, cols, (), hierarchies, mask=mask)
    hit = lk.n_records == 1
    return AttackResult(
        "known_values",
        len(external),
        int(hit.sum()),
        f"{min(B, len(cols))} random known values of the person (of {len(cols)} shared columns) match one record",
        None,
        {"B": B, "columns": cols},
        hit,
    )
