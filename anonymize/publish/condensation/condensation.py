"""Condensation: synthetic records from groups of at least ``k`` (Aggarwal & Yu, "A condensation
approach to privacy preserving data mining", EDBT 2004; C. C. Aggarwal, *Data Mining: The
Textbook*, Springer 2015, §20.3.1.4).

**Static** (``variant='static'``):

1. group the records into groups of at least ``k`` (Aggarwal & Yu: a random record and its ``k − 1``
   nearest records left form a group, repeated; the fewer than ``k`` records left join the group
   with the nearest mean) — distances in the standardized space, so that no column dominates;
2. per group the mean and the covariance matrix, from the additive statistics ``r``, ``Sum(i)`` and
   ``Sum(i, j)``: ``Covariance(i, j) = Sum(i, j)/r − Sum(i)·Sum(j)/r²`` (eqs. 20.6–20.7);
3. the eigenvectors ``P`` and eigenvalues ``λ`` of each covariance matrix (``C = PΣPᵀ``, eq. 20.9);
4. per group ``r`` synthetic records ``mean + P·u`` with ``u_i`` uniform on ``[−√(3λ_i), √(3λ_i)]`` —
   the uniform distribution of variance ``λ_i`` (range ``√(12λ)``, eq. 20.8), independent along the
   eigenvectors. Group sizes and means are kept; covariances are kept in expectation.

**Dynamic / stream** (``variant='dynamic'``): the first ``initial`` records (default ``10k``) are
condensed statically; every later record, in input order, is added to the group with the nearest
mean, updating ``r``, ``Sum(i)``, ``Sum(i, j)`` incrementally. A group that reaches ``2k`` records is
split along its largest eigenvector into two groups of ``k``: their means lie ``R/4`` on either side
of the parent's with ``R = √(12 λ_max)`` (eq. 20.8), their covariance is ``PΣ'Pᵀ`` with ``λ_max``
replaced by ``λ_max/4`` (eq. 20.9), and their ``Sum(i, j)`` follow from eq. 20.6. The records
themselves are not kept — only the statistics, as in a stream.

**With a sensitive attribute** (one ``--sensitive`` column), records are condensed *per value* of it,
as Aggarwal & Yu do per class for classification (§5 of the paper: each class condensed separately),
and each synthetic record carries its group's value: the release keeps the sensitive column and its
exact distribution, and the relation between the QIs and it. Every value must then occur at least
``k`` times (else one line says which does not).

The release is the synthetic table of the (numeric) quasi-identifiers, with the sensitive column as
above; other columns are not published (``columns_not_published`` in the report), since synthetic
records belong to no input row. :func:`covariance_check` reports the relative Frobenius error of the
synthetic covariance (and of the standardized one).

k here is a group size, not k-anonymity of the file: synthetic values are continuous and nearly
all distinct, so the written table is, measured as a table, 1-anonymous (pycanon agrees). The
report says both: ``group_size_min`` (every record is condensed with ≥ k − 1 others) and ``k``, the
k-anonymity measured on the released QI columns.

What it reveals: each group's size, mean and covariance (over ≥ ``k`` records) — nothing formally
bounds what those say about one record (no differential privacy); a group of nearly identical
records yields synthetic records near their values, which are then shared by ≥ ``k`` records.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...errors import AnonymizeError
from ..clustering.common import Rng, encoded, model_k
from ..models import PrivacyModel, check_fits
from ..registry import SYNTHETIC, register
from ..table import EncodedTable

__all__ = [
    "condensation",
    "SyntheticResult",
    "GroupStats",
    "covariance_check",
    "static_groups",
    "dynamic_groups",
    "split_group",
    "synthesize",
    "VARIANTS",
]

VARIANTS = ("static", "dynamic")


@dataclass
class GroupStats:
    """Additive statistics of the groups: ``r`` (G,), ``s1`` (G, d) = Sum(i), ``s2`` (G, d, d) = Sum(i, j)."""

    r: np.ndarray
    s1: np.ndarray
    s2: np.ndarray

    @property
    def means(self) -> np.ndarray:
        return self.s1 / self.r[:, None]

    @property
    def covariances(self) -> np.ndarray:
        """Eq. 20.7: Sum(i, j)/r − Sum(i)·Sum(j)/r²."""
        m = self.means
        return self.s2 / self.r[:, None, None] - m[:, :, None] * m[:, None, :]


@dataclass
class SyntheticResult:
    """A synthetic release: ``df`` the synthetic records (columns = the numeric QIs), ``groups`` the
    final group statistics (standardized space), ``group_id`` the group of each input row (static
    variant; -1 in the dynamic one, whose groups are split after the records are gone), ``stats``."""

    df: pd.DataFrame
    groups: GroupStats
    group_id: np.ndarray
    columns: list[str]
    k: int
    variant: str
    stats: dict = field(default_factory=dict)

    @property
    def n_groups(self) -> int:
        return len(self.groups.r)


def _numeric_matrix(table: EncodedTable) -> tuple[np.ndarray, list[str]]:
    cols = list(table.schema.qis)
    for j, c in enumerate(cols):
        if not table.hierarchies[j].numeric:
            raise AnonymizeError(
                f"condensation synthesizes numeric quasi-identifiers; '{c}' is not numeric "
                "(leave it out of --qi or use a clustering algorithm)"
            )
    X = table.df[cols].to_numpy(dtype=np.float64)
    return X, cols


def _stats_of(Z: np.ndarray, gid: np.ndarray, G: int) -> GroupStats:
    d = Z.shape[1]
    r = np.bincount(gid, minlength=G).astype(np.float64)
    s1 = np.zeros((G, d))
    np.add.at(s1, gid, Z)
    s2 = np.zeros((G, d, d))
    np.add.at(s2, gid, Z[:, :, None] * Z[:, None, :])
    return GroupStats(r, s1, s2)


def static_groups(Z: np.ndarray, k: int, rng: Rng) -> tuple[np.ndarray, int]:
    """Aggarwal & Yu's static grouping (module docstring): ``(group per row, number of groups)``."""
    n = len(Z)
    gid = np.full(n, -1, dtype=np.int64)
    left = np.arange(n, dtype=np.int64)
    g = 0
    while len(left) >= k:
        s = left[int(rng.gen.integers(len(left)))]
        d = ((Z[left] - Z[s]) ** 2).sum(axis=1)
        near = np.argpartition(d, k - 1)[:k] if len(left) > k else np.arange(len(left))
        gid[left[near]] = g
        g += 1
        keep = np.ones(len(left), dtype=bool)
        keep[near] = False
        left = left[keep]
    if len(left):
        st = _stats_of(Z[gid >= 0], gid[gid >= 0], g)
        m = st.means
        for i in left.tolist():
            gid[i] = int(np.argmin(((m - Z[i]) ** 2).sum(axis=1)))
    return gid, g


def split_group(r: float, s1: np.ndarray, s2: np.ndarray) -> tuple[tuple, tuple]:
    """Split a group of ``r = 2k`` along its largest eigenvector (eqs. 20.6, 20.8, 20.9)."""
    mean = s1 / r
    cov = s2 / r - np.outer(mean, mean)
    lam, P = np.linalg.eigh(cov)
    lam = np.clip(lam, 0.0, None)
    i = int(np.argmax(lam))
    R = np.sqrt(12.0 * lam[i])
    e = P[:, i]
    lam2 = lam.copy()
    lam2[i] = lam[i] / 4.0
    C = (P * lam2) @ P.T
    half = r / 2.0
    out = []
    for sign in (-1.0, 1.0):
        m = mean + sign * (R / 4.0) * e
        out.append((half, half * m, half * (C + np.outer(m, m))))
    return out[0], out[1]


def dynamic_groups(Z: np.ndarray, k: int, rng: Rng, initial: int | None = None) -> tuple[GroupStats, dict]:
    """Stream condensation (module docstring): statistics of the final groups and counters."""
    n, d = Z.shape
    n0 = min(n, max(k, int(initial) if initial is not None else 10 * k))
    gid0, g0 = static_groups(Z[:n0], k, rng)
    st = _stats_of(Z[:n0], gid0, g0)
    r = list(st.r)
    s1 = list(st.s1)
    s2 = list(st.s2)
    means = st.means.copy()
    splits = 0
    for x in Z[n0:]:
        g = int(np.argmin(((means - x) ** 2).sum(axis=1)))
        r[g] += 1.0
        s1[g] = s1[g] + x
        s2[g] = s2[g] + np.outer(x, x)
        if r[g] >= 2 * k:
            a, b = split_group(r[g], s1[g], s2[g])
            r[g], s1[g], s2[g] = a
            r.append(b[0])
            s1.append(b[1])
            s2.append(b[2])
            means = np.vstack([means, b[1] / b[0]])
            splits += 1
        means[g] = s1[g] / r[g]
    stats = GroupStats(np.asarray(r), np.asarray(s1), np.asarray(s2))
    return stats, {"initial_records": n0, "initial_groups": g0, "splits": splits}


def synthesize(groups: GroupStats, rng: Rng) -> np.ndarray:
    """``r`` records per group: ``mean + P·u``, ``u_i ~ U[−√(3λ_i), √(3λ_i)]`` (module docstring)."""
    cov = groups.covariances
    lam, P = np.linalg.eigh(cov)
    lam = np.clip(lam, 0.0, None)
    sizes = np.rint(groups.r).astype(np.int64)
    g_of = np.repeat(np.arange(len(sizes)), sizes)
    d = cov.shape[1]
    u = rng.gen.uniform(-1.0, 1.0, size=(len(g_of), d)) * np.sqrt(3.0 * lam[g_of])
    return groups.means[g_of] + np.einsum("nij,nj->ni", P[g_of], u)


def covariance_check(original: np.ndarray, synthetic: np.ndarray) -> dict:
    """How well the synthetic data keep the covariance structure: relative Frobenius error
    ``‖C_syn − C_orig‖_F / ‖C_orig‖_F`` of the covariance matrices (numpy), of the covariances of the
    columns standardized by the original's mean and deviation, and the largest relative error of a
    column mean."""
    X, Y = np.asarray(original, dtype=np.float64), np.asarray(synthetic, dtype=np.float64)
    c0 = np.atleast_2d(np.cov(X, rowvar=False))
    c1 = np.atleast_2d(np.cov(Y, rowvar=False))
    sd = X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    mu = X.mean(axis=0)
    z0 = np.atleast_2d(np.cov((X - mu) / sd, rowvar=False))
    z1 = np.atleast_2d(np.cov((Y - mu) / sd, rowvar=False))
    nrm = float(np.linalg.norm(c0))
    mean_err = np.abs(Y.mean(axis=0) - mu) / np.where(np.abs(mu) > 0, np.abs(mu), 1.0)
    return {
        "covariance_relative_frobenius_error": float(np.linalg.norm(c1 - c0) / nrm) if nrm > 0 else 0.0,
        "standardized_covariance_relative_frobenius_error": float(np.linalg.norm(z1 - z0) / np.linalg.norm(z0))
        if np.linalg.norm(z0) > 0
        else 0.0,
        "max_relative_mean_error": float(mean_err.max()) if len(mean_err) else 0.0,
    }


@register(
    "condensation",
    kind=SYNTHETIC,
    summary="condensation: synthetic records from groups of >= k, static or stream (Aggarwal & Yu, EDBT 2004)",
    accepts=["k-anonymity"],
    requires=["k-anonymity"],
    options=("seed", "variant", "initial"),
)
def condensation(
    table: EncodedTable,
    models: Sequence[PrivacyModel],
    *,
    variant: str = "static",
    seed: int | None = 0,
    initial: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> SyntheticResult:
    """Condense the numeric QIs of ``table`` into groups of ≥ k — per value of its sensitive column when it
    has one — and synthesize a table of the same size (module docstring). ``variant`` static | dynamic;
    ``initial`` records condensed statically before the stream starts (dynamic; default ``10k``)."""
    if variant not in VARIANTS:
        raise AnonymizeError(f"unknown condensation variant '{variant}' (use static or dynamic)")
    t0 = time.perf_counter()
    table = encoded(table)
    k = model_k(models, "condensation")
    check_fits(models, table.n)
    X, cols = _numeric_matrix(table)
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    Z = (X - mu) / sd
    rng = Rng(seed)
    extra: dict = {}
    sens = list(table.schema.sensitive)
    if len(sens) > 1:
        raise AnonymizeError("condensation keeps one sensitive column (it condenses per value of it); give one")
    if sens:
        codes = table.sens_codes[:, 0]
        classes = np.unique(codes)
        counts = np.bincount(codes)
        small = [c for c in classes if counts[c] < k]
        if small:
            v = table.sens_values[0][small[0]]
            raise AnonymizeError(
                f"condensation per value of '{sens[0]}' needs k = {k} records of each value; '{v}' has "
                f"{int(counts[small[0]])} (lower k, or leave --sensitive out to condense all records together)"
            )
        parts = [np.flatnonzero(codes == c) for c in classes]
    else:
        parts = [np.arange(table.n)]
    gid = np.full(table.n, -1, dtype=np.int64)
    stats_parts: list[GroupStats] = []
    labels: list[np.ndarray] = []
    extras: list[dict] = []
    for rows in parts:
        if variant == "static":
            g, G = static_groups(Z[rows], k, rng)
            gid[rows] = g + sum(len(p.r) for p in stats_parts)
            st = _stats_of(Z[rows], g, G)
        else:
            st, ex = dynamic_groups(Z[rows], k, rng, initial)
            extras.append(ex)
        stats_parts.append(st)
        labels.append(np.full(len(st.r), rows[0], dtype=np.int64))
    groups = GroupStats(
        np.concatenate([p.r for p in stats_parts]),
        np.concatenate([p.s1 for p in stats_parts]),
        np.concatenate([p.s2 for p in stats_parts]),
    )
    if extras:
        extra = {key: int(sum(e[key] for e in extras)) for key in extras[0]}
    if progress:
        progress(f"condensation: {len(groups.r)} groups")
    Y = synthesize(groups, rng) * sd + mu
    df = pd.DataFrame(np.round(Y, 6), columns=cols)
    if sens:  # each synthetic record carries its group's sensitive value (groups are per value)
        first_row = np.repeat(np.concatenate(labels), np.rint(groups.r).astype(np.int64))
        df[sens[0]] = table.df[sens[0]].to_numpy()[first_row]
    stats = {
        "k": k,
        "variant": variant,
        "groups": int(len(groups.r)),
        "seed": seed,
        **extra,
        "seconds": time.perf_counter() - t0,
    }
    return SyntheticResult(df, groups, gid, cols, k, variant, stats)
