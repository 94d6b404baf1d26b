"""Distances and class statistics the privacy models and the release measurement share.

* :func:`class_entropy`, :func:`sorted_desc` — per-class entropy and sorted counts
  (entropy and recursive (c,l)-diversity, Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam,
  "l-Diversity: privacy beyond k-anonymity", ACM TKDD 1(1), 2007; Aggarwal, *Data Mining: The
  Textbook*, Springer 2015, eqs. 20.10–20.11);
* :func:`probabilities` — per-class distributions of a ``(C, V)`` count matrix;
* t-closeness distances between a class distribution P and the table's Q (Li, Li,
  Venkatasubramanian, "t-Closeness: privacy beyond k-anonymity and l-diversity", ICDE 2007;
  Aggarwal 2015, eqs. 20.12–20.14): :func:`variational`, :func:`kl_divergence`,
  :func:`emd_ordered`, :func:`emd_hierarchical`, and :func:`t_distances` which picks one.
"""

from __future__ import annotations

import numpy as np

from ..errors import AnonymizeError
from .classes import ClassStats
from .hierarchy import Hierarchy

__all__ = [
    "row_counts",
    "class_entropy",
    "sorted_desc",
    "probabilities",
    "variational",
    "kl_divergence",
    "emd_ordered",
    "emd_hierarchical",
    "emd_hierarchical_judge",
    "emd_hierarchical_levels",
    "emd_hierarchical_within",
    "sensitive_hierarchy",
    "t_distances",
    "DISTANCES",
    "GROUNDS",
]


def row_counts(counts: np.ndarray) -> np.ndarray:
    """Σ of every row of a ``(C, V)`` matrix of counts (or 0/1 flags), as float64, by one
    matrix-vector product: numpy's reduction along a short last axis costs several times more
    ((521, 2): 9 µs against 2). Exact — whole numbers below 2^53 add up the same in any order — so
    it equals ``counts.sum(axis=1)`` for every count matrix here (at most n rows each)."""
    c = np.asarray(counts, dtype=np.float64)
    return c @ np.ones(c.shape[1])


def class_entropy(hist: np.ndarray) -> np.ndarray:
    """−Σ p log p per row of a (C, V) count matrix (natural log; 0 log 0 = 0; empty rows → 0)."""
    hist = np.asarray(hist, dtype=np.float64)
    tot = row_counts(hist)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(tot > 0, hist / np.where(tot > 0, tot, 1), 0.0)
        plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0.0)
    return -plogp.sum(axis=1)


def sorted_desc(hist: np.ndarray) -> np.ndarray:
    """Counts of each row sorted descending: r_1 ≥ r_2 ≥ … (eq. 20.11's order)."""
    return -np.sort(-np.asarray(hist), axis=1)


def probabilities(hist: np.ndarray) -> np.ndarray:
    """Rows of a ``(C, V)`` count matrix as distributions (empty rows stay 0)."""
    hist = np.asarray(hist, dtype=np.float64)
    tot = row_counts(hist)[:, None]
    return hist / np.where(tot > 0, tot, 1)


def variational(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Variational distance (Aggarwal 2015, eq. 20.13): Σ|p_i − q_i| / 2. Equals EMD with the equal
    ground distance (Li, Li, Venkatasubramanian 2007, §4.2)."""
    return 0.5 * np.abs(P - Q[None, :]).sum(axis=1)


def kl_divergence(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Kullback–Leibler distance (Aggarwal 2015, eq. 20.14): Σ p_i (log p_i − log q_i) (natural log).
    Q is the whole table's distribution, so q_i > 0 wherever p_i > 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(P > 0, P * (np.log(np.where(P > 0, P, 1)) - np.log(np.where(Q > 0, Q, 1))[None, :]), 0.0)
    return term.sum(axis=1)


def emd_ordered(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """EMD with the ordered distance |i − j|/(m − 1) (Li et al. 2007, §4.2):
    Σ_i |Σ_{j≤i} (p_j − q_j)| / (m − 1); 0 when m = 1."""
    m = P.shape[1]
    if m <= 1:
        return np.zeros(P.shape[0])
    cum = np.cumsum(P - Q[None, :], axis=1)
    return np.abs(cum[:, :-1]).sum(axis=1) / (m - 1)


def emd_hierarchical(P: np.ndarray, Q: np.ndarray, hierarchy: Hierarchy, leaf_of_value: np.ndarray) -> np.ndarray:
    """EMD with the hierarchical ground distance level(v_i, v_j)/H (Li et al. 2007, §4.2).

    Closed form: for every internal node N at level h, extra(N) = Σ_{leaves under N}(p − q),
    pos(N)/neg(N) = sum of the positive / |negative| extras of N's children, and
    EMD = Σ_N (h/H)·min(pos(N), neg(N)). Since pos − neg = extra(N) and pos + neg = Σ_children
    |extra(child)|, min(pos, neg) = (Σ_children |extra(child)| − |extra(N)|)/2, and summing over the
    levels telescopes to EMD = (Σ_{g<H} A_g − H·A_H) / (2H) with A_g = Σ_{nodes at level g} |extra|.
    So one product of the (C, V) differences with the (V, Σ_g nodes_g) value-to-node matrix of every
    level below the root, then absolute values and a row sum (:func:`_node_matrix`)."""
    H = hierarchy.height
    C = P.shape[0]
    if H == 0:
        return np.zeros(C)
    M = _node_matrix(hierarchy, leaf_of_value)
    E = P - Q[None, :]
    A = np.abs(E @ M).sum(axis=1)
    root = np.abs(E.sum(axis=1))  # A_H: 0 for a class distribution, 1 for an empty class
    return (A - H * root) / (2 * H)


def emd_hierarchical_within(
    hist: np.ndarray, Q: np.ndarray, hierarchy: Hierarchy, leaf_of_value: np.ndarray, t: float
) -> np.ndarray:
    """Per row of a ``(C, V)`` count matrix: whether its distribution's hierarchical EMD to ``Q`` is at
    most ``t`` (an empty row passes) — :func:`emd_hierarchical`'s closed form scaled by each row's
    total c, so no row is normalized: with P = h/c, Σ_N |((P − Q)·M)_N| ≤ 2H·t ⟺
    Σ_N |(h·M)_N − c·(Q·M)_N| ≤ 2H·t·c (the root term H·|Σ(P − Q)| is 0 for a distribution), computed
    by :func:`emd_hierarchical_judge`."""
    return emd_hierarchical_judge(Q, hierarchy, leaf_of_value, t)(hist)


def emd_hierarchical_judge(Q: np.ndarray, hierarchy: Hierarchy, leaf_of_value: np.ndarray, t: float):
    """:func:`emd_hierarchical_within` against one reference ``Q``, as a function of the ``(C, V)``
    count matrix alone, with the reference folded into the matrix once: c·(Q·M) = h·(1 ⊗ Q·M) for
    c = h·1, so D = h·(M − 1 ⊗ Q·M), and a column of ones appended gives c in the same product — one
    product, an absolute value and a row sum per check (what a lattice search runs per node)."""
    H = hierarchy.height
    if H == 0:
        return lambda hist: np.ones(len(hist), dtype=bool)
    M = _node_matrix(hierarchy, leaf_of_value)
    folded = M - np.asarray(Q, dtype=np.float64) @ M  # every row: M's row minus Q·M
    folded = np.concatenate([folded, np.ones((M.shape[0], 1))], axis=1)
    weights = np.ones(folded.shape[1])
    weights[-1] = -2.0 * H * t  # Σ|D| − 2H·t·c ≤ 0, with c the last column (non-negative)
    n_nodes = M.shape[1]

    def judge(hist: np.ndarray) -> np.ndarray:
        D = np.asarray(hist, dtype=np.float64) @ folded
        np.abs(D[:, :n_nodes], out=D[:, :n_nodes])
        return D @ weights <= 0.0

    return judge


#: (id(hierarchy), id(leaf codes)) -> (hierarchy, leaf codes, matrix)
_NODE_MATRIX: dict[tuple[int, int], tuple] = {}


def _node_matrix(hierarchy: Hierarchy, leaf_of_value: np.ndarray) -> np.ndarray:
    """``(V, Σ_{g<H} nodes_g)`` 0/1 matrix: value ``v`` is under node ``N`` at level ``g`` (levels
    0 … H−1; value v's leaf is ``leaf_of_value[v]``), remembered for the same two objects."""
    key = (id(hierarchy), id(leaf_of_value))
    hit = _NODE_MATRIX.get(key)
    if hit is not None and hit[0] is hierarchy and hit[1] is leaf_of_value:
        return hit[2]
    leaves = np.asarray(leaf_of_value, dtype=np.int64)
    blocks = []
    for g in range(hierarchy.height):
        node = hierarchy.maps[g][leaves] if g else leaves
        block = np.zeros((len(leaves), hierarchy.n_nodes(g)))
        block[np.arange(len(leaves)), node] = 1.0
        blocks.append(block[:, np.flatnonzero(block.any(axis=0))])  # nodes without a value add 0
    M = np.concatenate(blocks, axis=1)
    if len(_NODE_MATRIX) >= 32:
        _NODE_MATRIX.pop(next(iter(_NODE_MATRIX)))
    _NODE_MATRIX[key] = (hierarchy, leaf_of_value, M)
    return M


def emd_hierarchical_levels(
    P: np.ndarray, Q: np.ndarray, hierarchy: Hierarchy, leaf_of_value: np.ndarray
) -> np.ndarray:
    """The same EMD computed level by level with ``np.add.reduceat`` over the children runs (the
    closed form as stated, before the telescoping): kept as the reference the tests compare with."""
    H = hierarchy.height
    C = P.shape[0]
    if H == 0:
        return np.zeros(C)
    extra = np.zeros((C, hierarchy.n_leaves))
    extra[:, leaf_of_value] = P - Q[None, :]
    cost = np.zeros(C)
    for h in range(1, H + 1):
        parents = hierarchy.parents(h - 1)  # (n_{h-1},) non-decreasing
        starts = np.flatnonzero(np.r_[True, parents[1:] != parents[:-1]])
        pos = np.add.reduceat(np.maximum(extra, 0.0), starts, axis=1)
        neg = np.add.reduceat(np.maximum(-extra, 0.0), starts, axis=1)
        cost += (h / H) * np.minimum(pos, neg).sum(axis=1)
        extra = np.add.reduceat(extra, starts, axis=1)
    return cost


#: (id(hierarchy), id(values)) -> (hierarchy, values, leaf codes): the same table is checked class by class,
#: node after node, with the same sensitive values; encoding them through the hierarchy (pandas) cost more than
#: the distance itself (ARX side by side, benchmarks/README.md)
_LEAF_CACHE: dict[tuple[int, int], tuple] = {}
_LEAF_CACHE_MAX = 32


def _leaf_codes(hierarchy: Hierarchy, values) -> np.ndarray:
    """``hierarchy.encode(values)``, remembered for the same two objects (checked by identity, not by id alone)."""
    key = (id(hierarchy), id(values))
    hit = _LEAF_CACHE.get(key)
    if hit is not None and hit[0] is hierarchy and hit[1] is values:
        return hit[2]
    leaf = hierarchy.encode(values, column=hierarchy.name)
    if len(_LEAF_CACHE) >= _LEAF_CACHE_MAX:
        _LEAF_CACHE.pop(next(iter(_LEAF_CACHE)))
    _LEAF_CACHE[key] = (hierarchy, values, leaf)
    return leaf


DISTANCES = ("emd", "variational", "kl")
GROUNDS = ("equal", "ordered", "hierarchical")


def t_distances(
    stats: ClassStats, j: int, distance: str = "emd", ground: str | None = None, hierarchy: Hierarchy | None = None
) -> np.ndarray:
    """Per-class distance between the class's distribution of sensitive attribute ``j`` and the
    table's (Aggarwal 2015, eqs. 20.12–20.14; Li, Li, Venkatasubramanian 2007). ``ground=None`` →
    ``ordered`` for numeric attributes, ``equal`` otherwise (what ARX and pycanon do)."""
    P = probabilities(stats.sens_hist[j])
    Q = np.asarray(stats.global_dist[j], dtype=np.float64)
    if distance == "variational":
        return variational(P, Q)
    if distance == "kl":
        return kl_divergence(P, Q)
    if distance != "emd":
        raise AnonymizeError(f"unknown t-closeness distance '{distance}' (use {', '.join(DISTANCES)})")
    table = stats.table
    if ground is None:
        ground = "equal"
        if table is not None and np.issubdtype(np.asarray(table.sens_values[j]).dtype, np.number):
            ground = "ordered"
    if ground == "equal":
        return variational(P, Q)
    if ground == "ordered":
        return emd_ordered(P, Q)
    if ground == "hierarchical":
        return emd_hierarchical(P, Q, *sensitive_hierarchy(stats, j, hierarchy))
    raise AnonymizeError(f"unknown EMD ground distance '{ground}' (use {', '.join(GROUNDS)})")


def sensitive_hierarchy(stats: ClassStats, j: int, hierarchy: Hierarchy | None = None) -> tuple[Hierarchy, np.ndarray]:
    """``(hierarchy, leaf of each sensitive value)`` of sensitive attribute ``j`` for the hierarchical
    ground distance: ``hierarchy``, else the one given for the attribute at encode time."""
    table = stats.table
    if hierarchy is None and table is not None:
        hierarchy = table.sens_hierarchies.get(table.schema.sensitive[j])
    if hierarchy is None:
        raise AnonymizeError("hierarchical ground distance needs a hierarchy for the sensitive attribute")
    values = table.sens_values[j] if table is not None else None
    if values is None:
        raise AnonymizeError("hierarchical ground distance needs the table's sensitive values")
    return hierarchy, _leaf_codes(hierarchy, values)
