"""Privacy models as predicates over equivalence classes (like ARX's criteria).

An equivalence class is a set of rows with identical (generalized) QI codes
(seed 000 def. 20.3.1). Every model looks only at :class:`ClassStats` — class
sizes and per-class histograms of the sensitive attributes — and answers, for
all classes at once, which classes satisfy it (``class_ok``: ``(C,)`` bool,
vectorized over a ``(C, V)`` matrix, no per-class Python loop). So k, l and t
plug into every algorithm the same way; :func:`all_ok` combines several.

Empty classes (size 0, e.g. all their rows suppressed) always pass.

Monotonicity (``monotone``): merging classes that satisfy a model gives a
class that satisfies it — the property full-domain lattice search prunes on.
It holds for k-anonymity; distinct l-diversity; entropy l-diversity (entropy
is concave, seed 000 Lemma 20.3.1); recursive (c,l)-diversity (Lemma 20.3.2);
and t-closeness for every distance here (each is convex in the class
distribution P for fixed Q, so the merged distance is at most the larger one,
seed 000 Lemma 20.3.3 / eq. 20.15 — variational, KL and EMD with any ground
distance). Caveat: with a suppression budget, the number of rows in *failing*
classes is monotone only for k-anonymity (for the others a passing class can be
merged into a failing one); algorithms that prune on "suppressed ≤ MaxSup"
for l / t must re-check, not assume.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import AnonymizeError
from .hierarchy import Hierarchy
from .table import EncodedTable

__all__ = [
    "equivalence_classes",
    "ClassStats",
    "class_stats",
    "PrivacyModel",
    "KAnonymity",
    "DistinctLDiversity",
    "EntropyLDiversity",
    "RecursiveCLDiversity",
    "TCloseness",
    "all_ok",
    "t_distances",
]

_EPS = 1e-12


def equivalence_classes(codes: np.ndarray) -> tuple[np.ndarray, int]:
    """Equivalence classes of identical code rows (seed 000 def. 20.3.1).

    Vectorized: the columns are combined into one mixed-radix integer key
    (``key = key * radix_j + code_j``), re-compressed with ``np.unique`` whenever
    the next radix would overflow int64; then ``np.bincount`` (small key space) or
    ``np.unique`` gives dense class ids. Returns ``(class_id (n,) int64, n_classes)``;
    class ids follow the lexicographic order of the code rows.
    """
    codes = np.asarray(codes)
    if codes.ndim == 1:
        codes = codes[:, None]
    n, q = codes.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    if q == 0:
        return np.zeros(n, dtype=np.int64), 1
    key = codes[:, 0].astype(np.int64)
    space = int(key.max()) + 1
    for j in range(1, q):
        col = codes[:, j].astype(np.int64)
        r = int(col.max()) + 1
        if space * r >= 2**62:
            uniq, key = np.unique(key, return_inverse=True)
            key = key.astype(np.int64)
            space = len(uniq)
        key = key * r + col
        space *= r
    if space <= max(4 * n, 1 << 16):
        counts = np.bincount(key, minlength=space)
        present = counts > 0
        remap = np.cumsum(present) - 1
        return remap[key].astype(np.int64), int(present.sum())
    uniq, inv = np.unique(key, return_inverse=True)
    return inv.astype(np.int64).ravel(), len(uniq)


@dataclass
class ClassStats:
    """What privacy models look at, for ``C`` classes.

    sizes : (C,) int64 class sizes (rows counted: the ``rows`` given to :func:`class_stats`).
    sens_hist : per sensitive attribute, (C, V_s) int64 value counts per class.
    global_dist : per sensitive attribute, (V_s,) float — the whole table's distribution
        (Q in eq. 20.12; taken over all rows, suppressed ones included, as in ARX and Li et al.).
    table : the EncodedTable (value order, hierarchies for ground distances).
    """

    sizes: np.ndarray
    sens_hist: list
    global_dist: list
    table: EncodedTable | None = None

    @property
    def n_classes(self) -> int:
        return len(self.sizes)

    def select(self, idx) -> ClassStats:
        """Stats of a subset of classes (index or bool mask)."""
        return ClassStats(self.sizes[idx], [h[idx] for h in self.sens_hist], self.global_dist, self.table)

    def sens_index(self, attribute: str | None) -> list[int]:
        if self.table is None:
            if attribute is not None:
                raise AnonymizeError("ClassStats without a table: attribute names cannot be resolved")
            return list(range(len(self.sens_hist)))
        return self.table.sens_index(attribute)


def class_stats(table: EncodedTable, class_id: np.ndarray, n_classes: int, rows=None) -> ClassStats:
    """Class sizes and sensitive histograms by ``np.bincount`` over ``class_id * V + value``.

    ``rows``: optional bool mask or index array of the rows to count (e.g. the
    non-suppressed ones); classes left without rows get size 0 and pass every model.
    """
    cid = np.asarray(class_id, dtype=np.int64)
    sc = table.sens_codes
    if rows is not None:
        cid = cid[rows]
        sc = sc[rows]
    sizes = np.bincount(cid, minlength=n_classes).astype(np.int64)
    hists = []
    for j, vals in enumerate(table.sens_values):
        V = len(vals)
        hists.append(np.bincount(cid * V + sc[:, j], minlength=n_classes * V).reshape(n_classes, V).astype(np.int64))
    return ClassStats(sizes, hists, table.global_dist(), table)


class PrivacyModel:
    """Interface: a predicate over equivalence classes.

    ``class_ok(stats) -> (C,) bool``; ``monotone`` (see module docstring);
    ``describe() -> dict`` (JSON-ready parameters); ``measure(stats)`` gives
    the per-class value the threshold is compared against where that makes sense.
    """

    monotone: bool = True
    name: str = "model"

    def class_ok(self, stats: ClassStats) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> dict:  # pragma: no cover - interface
        raise NotImplementedError

    def table_ok(self, stats: ClassStats) -> bool:
        """Every class passes."""
        return bool(np.all(self.class_ok(stats)))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.describe().items() if k != "model")
        return f"{type(self).__name__}({args})"


class KAnonymity(PrivacyModel):
    """k-anonymity (seed 000 def. 20.3.1; Samarati–Sweeney 1998): every class has ≥ k rows."""

    name = "k-anonymity"

    def __init__(self, k: int):
        if int(k) != k or k < 1:
            raise AnonymizeError(f"k must be a positive integer, got {k}")
        self.k = int(k)

    def class_ok(self, stats):
        return (stats.sizes >= self.k) | (stats.sizes == 0)

    def describe(self):
        return {"model": self.name, "k": self.k}


class _SensitiveModel(PrivacyModel):
    attribute: str | None = None

    def _hists(self, stats):
        return [(j, stats.sens_hist[j]) for j in stats.sens_index(self.attribute)]

    def class_ok(self, stats):
        ok = np.ones(stats.n_classes, dtype=bool)
        for j, hist in self._hists(stats):
            ok &= self._ok(hist, stats, j)
        return ok | (stats.sizes == 0)


def _check_l(l):
    if l < 1:
        raise AnonymizeError(f"l must be at least 1, got {l}")


class DistinctLDiversity(_SensitiveModel):
    """Distinct l-diversity (seed 000 def. 20.3.2; seed 004 def. 1.8): ≥ l distinct sensitive values per class.

    ``attribute=None`` → every sensitive attribute must satisfy it.
    """

    name = "distinct-l-diversity"

    def __init__(self, l: int, attribute: str | None = None):
        _check_l(l)
        self.l, self.attribute = int(l), attribute

    def _ok(self, hist, stats, j):
        return (hist > 0).sum(axis=1) >= self.l

    def describe(self):
        return {"model": self.name, "l": self.l, "attribute": self.attribute}


def class_entropy(hist: np.ndarray) -> np.ndarray:
    """−Σ p log p per row of a (C, V) count matrix (natural log; 0 log 0 = 0; empty rows → 0)."""
    hist = np.asarray(hist, dtype=np.float64)
    tot = hist.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(tot > 0, hist / np.where(tot > 0, tot, 1), 0.0)
        plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0.0)
    return -plogp.sum(axis=1)


class EntropyLDiversity(_SensitiveModel):
    """Entropy l-diversity, seed 000 eq. 20.10: −Σ_i p_i log p_i ≥ log l (Machanavajjhala et al. 2007)."""

    name = "entropy-l-diversity"

    def __init__(self, l: float, attribute: str | None = None):
        _check_l(l)
        self.l, self.attribute = float(l), attribute

    def _ok(self, hist, stats, j):
        return class_entropy(hist) >= math.log(self.l) - 1e-9

    def describe(self):
        return {"model": self.name, "l": self.l, "attribute": self.attribute}


def sorted_desc(hist: np.ndarray) -> np.ndarray:
    """Counts of each row sorted descending: r_1 ≥ r_2 ≥ … (eq. 20.11's order)."""
    return -np.sort(-np.asarray(hist), axis=1)


class RecursiveCLDiversity(_SensitiveModel):
    """Recursive (c,l)-diversity, seed 000 eq. 20.11: r_1 < c·(r_l + r_{l+1} + … + r_m),
    with r_1 ≥ … ≥ r_m the class's sensitive value counts (Machanavajjhala et al. 2007).
    A class with fewer than l distinct values fails (its tail sum is 0)."""

    name = "recursive-cl-diversity"

    def __init__(self, c: float, l: int, attribute: str | None = None):
        _check_l(l)
        if c <= 0:
            raise AnonymizeError(f"c must be positive, got {c}")
        self.c, self.l, self.attribute = float(c), int(l), attribute

    def _ok(self, hist, stats, j):
        r = sorted_desc(hist)
        tail = r[:, self.l - 1 :].sum(axis=1)
        return r[:, 0] < self.c * tail

    def describe(self):
        return {"model": self.name, "c": self.c, "l": self.l, "attribute": self.attribute}


# ------------------------------------------------------------------ t-closeness
def _probs(hist: np.ndarray) -> np.ndarray:
    hist = np.asarray(hist, dtype=np.float64)
    tot = hist.sum(axis=1, keepdims=True)
    return hist / np.where(tot > 0, tot, 1)


def variational(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Variational distance, seed 000 eq. 20.13: Σ|p_i − q_i| / 2. Equals EMD with the equal
    ground distance (Li, Li, Venkatasubramanian 2007, §4.2)."""
    return 0.5 * np.abs(P - Q[None, :]).sum(axis=1)


def kl_divergence(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Kullback–Leibler distance, seed 000 eq. 20.14: Σ p_i (log p_i − log q_i) (natural log).
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
    EMD = Σ_N (h/H)·min(pos(N), neg(N)). Computed level by level with ``np.add.reduceat``
    over the contiguous children runs (one (C, nodes) matrix per level).
    """
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


_DISTANCES = ("emd", "variational", "kl")
_GROUNDS = ("equal", "ordered", "hierarchical")


def t_distances(
    stats: ClassStats, j: int, distance: str = "emd", ground: str | None = None, hierarchy: Hierarchy | None = None
) -> np.ndarray:
    """Per-class distance between the class's distribution of sensitive attribute ``j`` and the
    table's (seed 000 eq. 20.12–20.14; Li et al. 2007). ``ground=None`` → ``ordered`` for numeric
    attributes, ``equal`` otherwise (what ARX and pycanon do)."""
    P = _probs(stats.sens_hist[j])
    Q = np.asarray(stats.global_dist[j], dtype=np.float64)
    if distance == "variational":
        return variational(P, Q)
    if distance == "kl":
        return kl_divergence(P, Q)
    if distance != "emd":
        raise AnonymizeError(f"unknown t-closeness distance '{distance}' (use {', '.join(_DISTANCES)})")
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
        if hierarchy is None and table is not None:
            hierarchy = table.sens_hierarchies.get(table.schema.sensitive[j])
        if hierarchy is None:
            raise AnonymizeError("hierarchical ground distance needs a hierarchy for the sensitive attribute")
        values = table.sens_values[j] if table is not None else None
        if values is None:
            raise AnonymizeError("hierarchical ground distance needs the table's sensitive values")
        leaf = hierarchy.encode(values, column=hierarchy.name)
        return emd_hierarchical(P, Q, hierarchy, leaf)
    raise AnonymizeError(f"unknown EMD ground distance '{ground}' (use {', '.join(_GROUNDS)})")


class TCloseness(_SensitiveModel):
    """t-closeness (seed 000 def. 20.3.5, eq. 20.12; Li, Li, Venkatasubramanian, ICDE 2007):
    Dist(P_class, Q_table) ≤ t for every class.

    ``distance``: ``'emd'`` (ground ``'equal'`` = variational, ``'ordered'``, ``'hierarchical'``
    — the latter with ``hierarchy=`` or a hierarchy given for the attribute at encode time),
    ``'variational'`` (eq. 20.13) or ``'kl'`` (eq. 20.14). Monotone by convexity (Lemma 20.3.3).
    """

    name = "t-closeness"

    def __init__(
        self,
        t: float,
        distance: str = "emd",
        ground: str | None = None,
        attribute: str | None = None,
        hierarchy: Hierarchy | None = None,
    ):
        if not t >= 0:
            raise AnonymizeError(f"t must be non-negative, got {t}")
        if distance not in _DISTANCES:
            raise AnonymizeError(f"unknown t-closeness distance '{distance}' (use {', '.join(_DISTANCES)})")
        if ground is not None and ground not in _GROUNDS:
            raise AnonymizeError(f"unknown EMD ground distance '{ground}' (use {', '.join(_GROUNDS)})")
        if ground == "hierarchical" and distance != "emd":
            raise AnonymizeError("the hierarchical ground distance applies to distance='emd' only")
        self.t, self.distance, self.ground = float(t), distance, ground
        self.attribute, self.hierarchy = attribute, hierarchy

    def distances(self, stats: ClassStats) -> np.ndarray:
        """Per-class distance (max over the attributes the model covers)."""
        d = np.zeros(stats.n_classes)
        for j in stats.sens_index(self.attribute):
            d = np.maximum(d, t_distances(stats, j, self.distance, self.ground, self.hierarchy))
        return d

    def class_ok(self, stats):
        return (self.distances(stats) <= self.t + 1e-9) | (stats.sizes == 0)

    def describe(self):
        return {
            "model": self.name,
            "t": self.t,
            "distance": self.distance,
            "ground": self.ground,
            "attribute": self.attribute,
        }


def all_ok(models, stats: ClassStats) -> np.ndarray:
    """Classes that satisfy every model (logical AND of ``class_ok``)."""
    ok = np.ones(stats.n_classes, dtype=bool)
    for m in models:
        ok &= m.class_ok(stats)
    return ok
