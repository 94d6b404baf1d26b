"""KACA: k-anonymity by clustering in attribute hierarchical structures (Li, Wong, Fu, Pei,
"Achieving k-anonymity by clustering in attribute hierarchical structures", DaWaK 2006, LNCS 4081,
pp. 405–416) — the baseline GAA-CP is compared with (Jiang, Zeng, Ma 2017, §1 and §4).

Algorithm (as both papers describe it): form the equivalence classes of the original data; while
some class has fewer than ``k`` tuples, pick one such class ``C`` at random, find the class ``C'``
whose merge with ``C`` costs the least distortion, and generalize the two into one class.

Every QI — numeric ones included — is generalized in its hierarchy (KACA "needs a predefined
hierarchy for every quasi-identifier", Jiang et al. §1). Distortion is Li et al.'s weighted
hierarchical distance: with levels numbered from the root (1) to the leaves (h), generalizing one
level up from level ``j`` to ``j − 1`` weighs ``w_{j,j−1} = 1/(j − 1)^β`` and
``WHD(p, q) = Σ_{j=q+1..p} w_{j,j−1} / Σ_{j=2..h} w_{j,j−1}`` (so suppression to the root costs 1
and steps near the root cost more); a tuple's distortion is the sum over its QIs; merging classes
``C`` and ``C'`` into their closest common generalization ``C''`` costs
``|C|·Distortion(t_C, t_C'') + |C'|·Distortion(t_C', t_C'')``. ``β = 1`` here.

The release goes through the shared partition code like every clustering algorithm (numeric QIs
as the class's ``[min, max]``, categorical QIs as the lowest common ancestor), so losses compare
the clusterings, not the recodings.

Vectorization: a step computes the merge cost of the chosen class with *every* live class as array
operations over per-class ``(first leaf, level)`` columns — the merged level of two nodes is
``max(l_1, l_2, lca[first_1, first_2])`` — then takes the argmin.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from ..models import PrivacyModel, check_fits
from ..registry import CLUSTERING, PartitionResult, register
from ..table import EncodedTable
from .common import CodePacker, Rng, distinct_rows, encoded, lca_levels, model_k

__all__ = ["kaca", "whd_weights"]


def whd_weights(height: int, beta: float = 1.0) -> np.ndarray:
    """Cumulative weighted hierarchical distance from a leaf up to each level ``0..height`` (our
    levels: 0 = leaf, ``height`` = root), normalized so the root costs 1 (Li et al. 2006)."""
    if height == 0:
        return np.zeros(1)
    # our step x -> x+1 is Li et al.'s step from level j = height - x + 1 to j - 1: weight 1/(height - x)^β
    steps = 1.0 / np.arange(height, 0, -1, dtype=np.float64) ** beta
    cum = np.r_[0.0, np.cumsum(steps)]
    return cum / cum[-1]


@register(
    "kaca",
    kind=CLUSTERING,
    summary="KACA: merge small classes in attribute hierarchies (Li, Wong, Fu, Pei, DaWaK 2006) — baseline",
    accepts=["k-anonymity"],
    requires=["k-anonymity"],
    options=("seed",),
)
def kaca(
    table: EncodedTable,
    models: Sequence[PrivacyModel],
    *,
    seed: int | None = 0,
    beta: float = 1.0,
    progress: Callable[[str], None] | None = None,
) -> PartitionResult:
    """Cluster ``table`` with KACA (module docstring): every class ends with ≥ k rows. ``seed``
    drives the random choice of the small class merged next."""
    t0 = time.perf_counter()
    table = encoded(table)
    k = model_k(models, "kaca")
    check_fits(models, table.n)
    q = table.q
    U, inv, cnt = distinct_rows(table.qi_codes)
    m = len(U)
    lca = [lca_levels(h) for h in table.hierarchies]
    cw = [whd_weights(h.height, beta) for h in table.hierarchies]
    first = []
    for h in table.hierarchies:
        f = np.empty((h.height + 1, h.n_leaves), dtype=np.int64)
        for lv in range(h.height + 1):
            fs, _ = h.node_span(lv)
            f[lv] = fs[h.maps[lv]]
        first.append(f)
    # per class and QI: first leaf F and level Lv of its node, packed as F·(H+1) + Lv; the merge cost
    # of class a with class b is (|a|+|b|)·S_b − |a|·Σ_j cw_j[La_j] − |b|·Σ_j cw_j[Lb_j] with
    # S_b = Σ_j cw_j[max(La_j, Lb_j, lca_j[Fa_j, Fb_j])]: one lookup table per QI over (F, L)
    H1 = [h.height + 1 for h in table.hierarchies]
    packer = CodePacker([h.n_leaves * H1[j] for j, h in enumerate(table.hierarchies)])
    F = np.ascontiguousarray(U.astype(np.int64))  # (m, q)
    Lv = np.zeros((m, q), dtype=np.int64)
    P = packer.pack(F * np.asarray(H1) + Lv)  # (g, m), columns follow `ids`
    size = cnt.astype(np.int64).copy()
    base = np.zeros(m)  # Σ_j cw_j[Lv_j] per class
    ids = np.arange(m, dtype=np.int64)  # class ids of the columns of P
    pen = np.zeros(m)
    dead = 0
    parent = np.arange(m, dtype=np.int64)
    levels = [np.arange(H1[j]) for j in range(q)]
    rng = Rng(seed)
    merges = 0
    while True:
        small = np.flatnonzero((size[ids] < k) & (pen == 0))
        if len(small) == 0 or len(ids) - dead <= 1:
            break
        a_pos = rng.choice(small)
        a = ids[a_pos]
        tabs = [
            cw[j][np.maximum(np.maximum(Lv[a, j], levels[j])[None, :], lca[j][F[a, j]][:, None])].ravel()
            for j in range(q)
        ]
        joint = packer.joint(tabs)
        S = np.take(joint[0], P[0])
        for g in range(1, len(joint)):
            S += np.take(joint[g], P[g])
        sz = size[ids]
        cost = (size[a] + sz) * S - size[a] * base[a] - sz * base[ids] + pen
        cost[a_pos] = np.inf
        b_pos = int(np.argmin(cost))
        b = ids[b_pos]
        for j in range(q):
            lm = max(int(Lv[a, j]), int(Lv[b, j]), int(lca[j][F[a, j], F[b, j]]))
            Lv[b, j] = lm
            F[b, j] = first[j][lm, F[b, j]]
        base[b] = sum(cw[j][Lv[b, j]] for j in range(q))
        P[:, b_pos] = packer.pack((F[b] * np.asarray(H1) + Lv[b])[None, :])[:, 0]
        size[b] += size[a]
        parent[a] = b
        pen[a_pos] = np.inf
        dead += 1
        if dead * 3 > len(ids):
            keep = pen == 0
            ids, P, pen, dead = ids[keep], np.ascontiguousarray(P[:, keep]), pen[keep], 0
        merges += 1
        if progress and merges % 1000 == 0:
            progress(f"kaca: {merges} merges, {len(ids) - dead} classes, {len(small) - 1} small")
    while True:  # resolve merge chains
        nxt = parent[parent]
        if np.array_equal(nxt, parent):
            break
        parent = nxt
    root_of_row = parent[inv]
    uniq, class_id = np.unique(root_of_row, return_inverse=True)
    stats = {
        "k": k,
        "merges": merges,
        "initial_classes": int(m),
        "classes": int(len(uniq)),
        "beta": beta,
        "seed": seed,
        "seconds": time.perf_counter() - t0,
    }
    return PartitionResult(class_id.astype(np.int64), int(len(uniq)), stats=stats)
