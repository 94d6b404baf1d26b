"""Privacy models as self-describing predicates over equivalence classes (like ARX's criteria).

Every model looks only at :class:`.classes.ClassStats` — class sizes and per-class histograms
of the sensitive attributes — and answers, for all classes at once, which classes satisfy it
(``class_ok``: ``(C,)`` bool, vectorized over a ``(C, V)`` matrix, no per-class Python loop).
Empty classes (size 0, e.g. all their rows suppressed) always pass. :func:`all_ok` combines
several models.

Each model **describes itself**, so that searches and algorithms never ask which class a
model is (Prasser, Kohlmayer, Lautenschläger, Kuhn, "ARX — a comprehensive tool for
anonymizing biomedical data", AMIA 2014: ``isMonotonicWithGeneralization``,
``isMonotonicWithSuppression``, ``getMinimalClassSize``):

``monotone_generalization``
    merging classes that all satisfy the model gives a class that satisfies it. Holds for
    k-anonymity; distinct l-diversity; entropy l-diversity (entropy is concave; Machanavajjhala,
    Kifer, Gehrke, Venkitasubramaniam, "l-Diversity: privacy beyond k-anonymity", ACM TKDD 2007);
    recursive (c,l)-diversity (ibid.); and t-closeness for every distance here (each is convex in
    the class distribution P for fixed Q, so a merged class's distance is at most the larger of
    its parts'; Li, Li, Venkatasubramanian, "t-Closeness: privacy beyond k-anonymity and
    l-diversity", ICDE 2007) — Aggarwal, *Data Mining: The Textbook*, Springer 2015, Lemmas
    20.3.1–20.3.3 and exercises 20.8.9, 20.8.11. Full-domain searches without suppression prune on it.
``monotone_suppression``
    with a suppression budget, "the rows in failing classes" can only shrink under
    generalization: a merged class fails only if every part failed, i.e. a passing class
    merged with *any* class still passes. True for k-anonymity and distinct l-diversity; false
    for entropy and recursive (c,l)-diversity and t-closeness (a passing class merged with a
    failing one can fail). Searches with suppression prune only on models with this property
    and check the full predicate on every node they keep.
``minimal_class_size``
    the fewest rows a class that satisfies the model can have (k; l for distinct and
    recursive (c,l); ⌈l⌉ for entropy l, since e^H ≤ number of distinct values; 1 for t).
``size_only``
    the model decides on class sizes alone (``class_ok ⇔ size ≥ minimal_class_size``), so
    algorithms can skip building sensitive histograms.
``needs_sensitive``
    the model reads a sensitive attribute.
``uses_table_distribution``
    the model compares each class with the distribution of the whole release (t-closeness):
    dropping suppressed rows changes that distribution, so a release without them must be
    checked against its own.
:meth:`PrivacyModel.pruning_models`
    models that are monotone under suppression and implied by this one (entropy l-diversity
    implies distinct ⌈l⌉-diversity; recursive (c,l) implies distinct l) — what a search with
    suppression may prune on when the model itself is not monotone under suppression.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..errors import AnonymizeError
from .classes import ClassStats
from .distances import (
    DISTANCES,
    GROUNDS,
    class_entropy,
    emd_hierarchical_judge,
    emd_hierarchical_within,
    row_counts,
    sensitive_hierarchy,
    sorted_desc,
    t_distances,
)
from .hierarchy import Hierarchy

if TYPE_CHECKING:
    from .table import EncodedTable

__all__ = [
    "PrivacyModel",
    "KAnonymity",
    "DistinctLDiversity",
    "EntropyLDiversity",
    "RecursiveCLDiversity",
    "TCloseness",
    "all_ok",
    "pruning_models",
    "check_fits",
    "check_feasible",
]


class PrivacyModel:
    """Interface: a self-describing predicate over equivalence classes (module docstring).

    ``class_ok(stats) -> (C,) bool``; ``describe() -> dict`` (JSON-ready parameters);
    the class attributes below describe the model to the algorithms.
    """

    name: str = "model"
    monotone_generalization: bool = True
    monotone_suppression: bool = False
    size_only: bool = False
    needs_sensitive: bool = True
    uses_table_distribution: bool = False

    @property
    def minimal_class_size(self) -> int:
        """The fewest rows a satisfying class can have."""
        return 1

    @property
    def monotone(self) -> bool:
        """Alias of :attr:`monotone_generalization` (the property lattice pruning needs)."""
        return self.monotone_generalization

    def pruning_models(self) -> list[PrivacyModel]:
        """Models monotone under suppression that this model implies (itself when it is one)."""
        return [self] if self.monotone_suppression else []

    def requirement(self) -> str:
        """Short text of the requirement for messages, e.g. ``'k = 5'``."""
        args = ", ".join(f"{k} = {v}" for k, v in self.describe().items() if k != "model" and v is not None)
        return f"{self.name} ({args})"

    def limit(self, whole: ClassStats) -> tuple[bool, str] | None:
        """Why no release can satisfy the model, judged on ``whole`` — the whole table as one class:
        ``None`` if the whole table satisfies it; else ``(absolute, message)``, ``absolute`` true when
        no subset of the rows can satisfy it either (so suppression cannot help)."""
        if self.class_ok(whole)[0]:
            return None
        return False, f"{self.requirement()} fails even with every row in one class"

    def lane_judge(self, table: EncodedTable, columns: list[tuple[int, int, int]]):
        """A function of a frequency set's packed sensitive counts — ``(C, ≥ V)`` unsigned, one column
        per value of every sensitive attribute of ``table``, the attributes this model covers at
        ``columns`` ((attribute index, first column, number of values) each) — returning
        :meth:`class_ok` of its classes (the non-empty ones; the reference distribution is the whole
        table's); or None when the model needs more than those counts (the default)."""
        return None

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
    """k-anonymity (Samarati & Sweeney 1998; Sweeney, IJUFKS 2002; Aggarwal 2015, §20.3.1):
    every class has ≥ k rows."""

    name = "k-anonymity"
    monotone_suppression = True
    size_only = True
    needs_sensitive = False

    def __init__(self, k: int):
        if int(k) != k or k < 1:
            raise AnonymizeError(f"k must be a positive integer, got {k}")
        self.k = int(k)

    @property
    def minimal_class_size(self) -> int:
        """k."""
        return self.k

    def requirement(self) -> str:
        return f"k = {self.k}"

    def class_ok(self, stats):
        return (stats.sizes >= self.k) | (stats.sizes == 0)

    def describe(self):
        return {"model": self.name, "k": self.k}


class _SensitiveModel(PrivacyModel):
    attribute: str | None = None

    def _hists(self, stats):
        return [(j, stats.sens_hist[j]) for j in stats.sens_index(self.attribute)]

    def class_ok(self, stats):
        ok = None
        for j, hist in self._hists(stats):
            r = np.asarray(self._ok(hist, stats, j), dtype=bool)
            ok = r if ok is None else ok & r
        if ok is None:
            return np.ones(stats.n_classes, dtype=bool)
        return ok | (stats.sizes == 0)

    def _ok(self, hist, stats, j):  # pragma: no cover - interface
        raise NotImplementedError


def distinct_at_least(counts: np.ndarray, l: int) -> np.ndarray:
    """Per row of a ``(C, V)`` count matrix: at least ``l`` of its counts are non-zero. Every value
    present (``l = V``, e.g. distinct 2-diversity of a binary attribute) is a running minimum over the
    columns; few columns are added one by one (numpy reduces a short last axis slowly), more by a
    matrix-vector product (:func:`.distances.row_counts`)."""
    n_values = counts.shape[1]
    if l <= 0:
        return np.ones(len(counts), dtype=bool)
    if l > n_values:
        return np.zeros(len(counts), dtype=bool)
    if l == n_values and n_values <= 8:
        low = counts[:, 0]
        for c in range(1, n_values):
            low = np.minimum(low, counts[:, c])
        return low > 0
    if n_values <= 4:
        present = (counts[:, 0] != 0).view(np.uint8).copy()
        for c in range(1, n_values):
            present += (counts[:, c] != 0).view(np.uint8)
        return present >= l
    return row_counts(counts != 0) >= l


def _check_l(l):
    if l < 1:
        raise AnonymizeError(f"l must be at least 1, got {l}")


class DistinctLDiversity(_SensitiveModel):
    """Distinct l-diversity (Machanavajjhala et al., ACM TKDD 2007; Aggarwal 2015, §20.3.2):
    ≥ l distinct sensitive values per class. ``attribute=None`` → every sensitive attribute."""

    name = "distinct-l-diversity"
    monotone_suppression = True

    def __init__(self, l: int, attribute: str | None = None):
        _check_l(l)
        self.l, self.attribute = int(l), attribute

    @property
    def minimal_class_size(self) -> int:
        """l (one row per distinct value)."""
        return self.l

    def requirement(self) -> str:
        return f"distinct l = {self.l}"

    def limit(self, whole):
        for j, hist in self._hists(whole):
            v = int((hist[0] > 0).sum())
            if v < self.l:
                name = _attr_name(whole, j)
                return True, (
                    f"distinct l = {self.l} is impossible: '{name}' has only {v} distinct value(s), "
                    f"so l can be at most {v}"
                )
        return None

    def _ok(self, hist, stats, j):
        return row_counts(hist > 0) >= self.l  # distinct values per class

    def lane_judge(self, table, columns):
        """≥ l values present, read straight off the packed counts (no copy of the histograms)."""
        l = self.l

        def judge(lanes: np.ndarray) -> np.ndarray:
            ok = None
            for _, off, width in columns:
                r = distinct_at_least(lanes[:, off : off + width], l)
                ok = r if ok is None else ok & r
            return ok if ok is not None else np.ones(len(lanes), dtype=bool)

        return judge

    def describe(self):
        return {"model": self.name, "l": self.l, "attribute": self.attribute}


class EntropyLDiversity(_SensitiveModel):
    """Entropy l-diversity (Machanavajjhala et al. 2007; Aggarwal 2015, eq. 20.10):
    −Σ_i p_i log p_i ≥ log l."""

    name = "entropy-l-diversity"

    def __init__(self, l: float, attribute: str | None = None):
        _check_l(l)
        self.l, self.attribute = float(l), attribute

    @property
    def minimal_class_size(self) -> int:
        """⌈l⌉: e^H is at most the number of distinct values."""
        return int(math.ceil(self.l - 1e-9))

    def pruning_models(self) -> list[PrivacyModel]:
        """Distinct ⌈l⌉-diversity (implied, since e^H ≤ number of distinct values)."""
        d = self.minimal_class_size
        return [DistinctLDiversity(d, attribute=self.attribute)] if d > 1 else []

    def requirement(self) -> str:
        return f"entropy l = {self.l:g}"

    def limit(self, whole):
        for j, hist in self._hists(whole):
            v = int((hist[0] > 0).sum())
            e_h = float(math.exp(class_entropy(hist)[0]))
            name = _attr_name(whole, j)
            if v < self.l - 1e-9:
                return True, (
                    f"entropy l = {self.l:g} is impossible: '{name}' has only {v} distinct value(s), so "
                    f"e^H can be at most {v} (the whole table's e^H is {e_h:.3g})"
                )
            if e_h < self.l - 1e-9:
                return False, (
                    f"entropy l = {self.l:g} fails even on the whole table: the entropy of '{name}' allows "
                    f"at most l = e^H = {e_h:.3g} ({v} distinct values): without suppression no release can meet it"
                )
        return None

    def _ok(self, hist, stats, j):
        return class_entropy(hist) >= math.log(self.l) - 1e-9

    def describe(self):
        return {"model": self.name, "l": self.l, "attribute": self.attribute}


class RecursiveCLDiversity(_SensitiveModel):
    """Recursive (c,l)-diversity (Machanavajjhala et al. 2007; Aggarwal 2015, eq. 20.11):
    r_1 < c·(r_l + r_{l+1} + … + r_m), with r_1 ≥ … ≥ r_m the class's sensitive value counts.
    A class with fewer than l distinct values fails (its tail sum is 0)."""

    name = "recursive-cl-diversity"

    def __init__(self, c: float, l: int, attribute: str | None = None):
        _check_l(l)
        if c <= 0:
            raise AnonymizeError(f"c must be positive, got {c}")
        self.c, self.l, self.attribute = float(c), int(l), attribute

    @property
    def minimal_class_size(self) -> int:
        """l (a satisfying class has at least l distinct values)."""
        return self.l

    def pruning_models(self) -> list[PrivacyModel]:
        """Distinct l-diversity (implied)."""
        return [DistinctLDiversity(self.l, attribute=self.attribute)] if self.l > 1 else []

    def requirement(self) -> str:
        return f"recursive (c, l) = ({self.c:g}, {self.l})"

    def limit(self, whole):
        for j, hist in self._hists(whole):
            v = int((hist[0] > 0).sum())
            name = _attr_name(whole, j)
            if v < self.l:
                return True, (
                    f"recursive (c, l) = ({self.c:g}, {self.l}) is impossible: '{name}' has only {v} "
                    f"distinct value(s), so l can be at most {v}"
                )
            if not self._ok(hist, whole, j)[0]:
                r = sorted_desc(hist)[0]
                c_min = r[0] / r[self.l - 1 :].sum()
                return False, (
                    f"recursive (c, l) = ({self.c:g}, {self.l}) fails even on the whole table: '{name}' "
                    f"needs c > {c_min:.3g} at l = {self.l}: without suppression no release can meet it"
                )
        return None

    def _ok(self, hist, stats, j):
        r = sorted_desc(hist)
        tail = r[:, self.l - 1 :].sum(axis=1)
        return r[:, 0] < self.c * tail

    def describe(self):
        return {"model": self.name, "c": self.c, "l": self.l, "attribute": self.attribute}


class TCloseness(_SensitiveModel):
    """t-closeness (Li, Li, Venkatasubramanian, ICDE 2007; Aggarwal 2015, §20.3.3, eq. 20.12):
    Dist(P_class, Q_table) ≤ t for every class.

    ``distance``: ``'emd'`` (ground ``'equal'`` = variational, ``'ordered'``, ``'hierarchical'``
    — the latter with ``hierarchy=`` or a hierarchy given for the attribute at encode time),
    ``'variational'`` (eq. 20.13) or ``'kl'`` (eq. 20.14). Monotone under generalization by
    convexity of every distance; not under suppression.
    """

    name = "t-closeness"
    uses_table_distribution = True

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
        if distance not in DISTANCES:
            raise AnonymizeError(f"unknown t-closeness distance '{distance}' (use {', '.join(DISTANCES)})")
        if ground is not None and ground not in GROUNDS:
            raise AnonymizeError(f"unknown EMD ground distance '{ground}' (use {', '.join(GROUNDS)})")
        if ground == "hierarchical" and distance != "emd":
            raise AnonymizeError("the hierarchical ground distance applies to distance='emd' only")
        if distance in ("emd", "variational") and t > 1:
            raise AnonymizeError(
                f"t = {t:g} cannot constrain anything: the {distance} distance never exceeds 1 (use 0 <= t <= 1)"
            )
        self.t, self.distance, self.ground = float(t), distance, ground
        self.attribute, self.hierarchy = attribute, hierarchy

    def requirement(self) -> str:
        return f"t = {self.t:g} ({self.distance})"

    def distances(self, stats: ClassStats) -> np.ndarray:
        """Per-class distance (max over the attributes the model covers)."""
        d = np.zeros(stats.n_classes)
        for j in stats.sens_index(self.attribute):
            d = np.maximum(d, t_distances(stats, j, self.distance, self.ground, self.hierarchy))
        return d

    def class_ok(self, stats):
        if self.distance == "emd" and self.ground == "hierarchical":  # verdicts without normalizing the classes
            ok = np.ones(stats.n_classes, dtype=bool)
            for j in stats.sens_index(self.attribute):
                hierarchy, leaves = sensitive_hierarchy(stats, j, self.hierarchy)
                ok &= emd_hierarchical_within(
                    stats.sens_hist[j], stats.global_dist[j], hierarchy, leaves, self.t + 1e-9
                )
            return ok | (stats.sizes == 0)
        return (self.distances(stats) <= self.t + 1e-9) | (stats.sizes == 0)

    def lane_judge(self, table, columns):
        """The hierarchical EMD's verdicts (:func:`.distances.emd_hierarchical_within`) straight off the
        packed counts, against the table's distribution; None for the other distances."""
        if not (self.distance == "emd" and self.ground == "hierarchical"):
            return None
        ref = table.global_dist()
        stats = ClassStats(np.zeros(0, dtype=np.int64), [], ref, table)
        parts = [
            (off, width, emd_hierarchical_judge(ref[j], *sensitive_hierarchy(stats, j, self.hierarchy), self.t + 1e-9))
            for j, off, width in columns
        ]

        def judge(lanes: np.ndarray) -> np.ndarray:
            ok = np.ones(len(lanes), dtype=bool)
            for off, width, within in parts:
                ok &= within(lanes[:, off : off + width])
            return ok

        return judge

    def describe(self):
        return {
            "model": self.name,
            "t": self.t,
            "distance": self.distance,
            "ground": self.ground,
            "attribute": self.attribute,
        }


def _attr_name(stats: ClassStats, j: int) -> str:
    if stats.table is None:
        return f"sensitive attribute {j}"
    return str(stats.table.schema.sensitive[j])


def all_ok(models, stats: ClassStats) -> np.ndarray:
    """Classes that satisfy every model (logical AND of ``class_ok``; a new array)."""
    ok = None
    for m in models:
        r = np.asarray(m.class_ok(stats), dtype=bool)  # a fresh array per model (no copy when bool)
        ok = r if ok is None else ok & r
    return np.ones(stats.n_classes, dtype=bool) if ok is None else ok


def pruning_models(models) -> list[PrivacyModel]:
    """Every model's :meth:`PrivacyModel.pruning_models`, concatenated: the monotone-under-
    suppression part of ``models`` that a search with a suppression budget prunes on."""
    out: list[PrivacyModel] = []
    for m in models:
        out.extend(m.pruning_models())
    return out


def check_feasible(models, whole: ClassStats, can_suppress: bool) -> str | None:
    """Raise a one-line error naming the limit when no release can satisfy ``models``: a model
    impossible on any subset of the rows (e.g. distinct l above the number of sensitive values), or
    failing on the whole table when nothing can be suppressed (every algorithm's coarsest release
    is the whole table as one class, and the models are monotone under generalization). With a
    suppression budget a whole-table failure is returned as a hint for the message of a search
    that finds nothing."""
    hint = None
    for m in models:
        lim = m.limit(whole)
        if lim is None:
            continue
        absolute, msg = lim
        if absolute or not can_suppress:
            raise AnonymizeError(msg)
        hint = hint or msg
    return hint


def check_fits(models, n_rows: int) -> None:
    """One-line error when some model needs larger classes than the table has rows
    (e.g. ``k = 5000 is larger than the table (3016 rows)``)."""
    for m in models:
        if m.minimal_class_size > n_rows:
            raise AnonymizeError(f"{m.requirement()} is larger than the table ({n_rows} rows)")
