"""Population-based privacy models (ARX's risk-based criteria, δ-presence and k-map).

Two families, both :class:`.models.PrivacyModel` objects:

**Table-level risk models** (``table_level = True``) judge the release as a whole, not each class:
``class_ok`` passes every class (so per-class logic is untouched) and :meth:`TableModel.table_ok`
decides on the released class sizes. They read class sizes only (``size_only``). The full-domain
searches (:mod:`.fulldomain`) check them on every node they evaluate, after the per-class models and the
suppression budget: the released classes — with ``suppressed_rows='star'`` including the one all-``*``
class of the suppressed rows, as the written file is measured — must pass, and with a suppression budget
left the classes smaller than some size ``s`` are suppressed too, for the smallest ``s`` that makes
them pass (ARX's risk-based criteria suppress the smallest classes first; Prasser, Kohlmayer,
Lautenschläger, Kuhn, "ARX — a comprehensive tool for anonymizing biomedical data", AMIA 2014).
Other algorithms refuse them (:func:`check_algorithm`).

* :class:`AverageRisk` — the mean over released rows of ``1 / class size`` (= classes / rows, the
  prosecutor's average risk; ARX ``AverageReidentificationRisk``; K. El Emam, F. K. Dankar, "Protecting
  privacy using k-anonymity", JAMIA 2008) is at most the threshold.
* :class:`SampleUniqueness` — the share of released rows in classes of size 1 is at most the threshold
  (ARX ``SampleUniqueness``).
* :class:`PopulationUniqueness` — the share of the *population* (size ``N``) estimated to be unique on
  the QIs, by Dankar's rule or one model of :mod:`.metrics.population` (Pitman, Zayatz, SNB), is at most
  the threshold (ARX ``PopulationUniqueness``); a failed estimate fails the release unless it has no
  sample unique. Dankar's rule here has no Zayatz fallback at sampling fractions ≤ 10 %, as in ARX's
  criterion (ARX's risk *report* has one, and so does ``ppdm check``).

**Population-count models** compare each class with the number of population rows in the same
generalized class — ``ClassStats.population_sizes``, which the full-domain lattice fills from a
population table given to the model (``population=``; the research subset is part of the population,
as in ARX). Other algorithms refuse them.

* :class:`DeltaPresence` — ``δmin ≤ (rows of the class) / (population rows of the class) ≤ δmax`` for
  every released class (M. E. Nergiz, M. Atzori, C. Clifton, "Hiding the presence of individuals from
  shared databases", SIGMOD 2007; ARX ``DPresence``). The paper bounds P(t ∈ T | T*) for every tuple t
  of the *population*: a population tuple in a generalized class that holds no row of the table (a
  *population-only* class) is certainly absent, P = 0, so with ``δmin > 0`` a node with any such class
  fails as a whole — suppression cannot fix it, there is no row to suppress (ARX's ``HashGroupify``
  fails the node the same way; ARX skips the rule once any k-anonymity is added, since its check
  returns at the class-size test first — ppdm follows the paper with or without k;
  ``tests/test_arx_population_models.py``). A node's count of such population rows is
  :meth:`.fulldomain.population.PopulationCounts.absent`.
* :class:`KMap` — every released class matches at least ``k`` population rows (k-map: L. Sweeney's
  generalization of k-anonymity to a population; El Emam & Dankar, JAMIA 2008; ARX ``KMap``). Without a
  population table, with only its size ``N``: the class-size threshold ``k'`` of
  :func:`.metrics.population.kmap_derived_k` (Poisson or zero-truncated Poisson cell-size estimator at a
  significance level), i.e. k'-anonymity.

Monotonicity (the properties searches prune with, :mod:`.models`):

* average risk and sample uniqueness are monotone under generalization (merging classes lowers
  classes/rows and cannot create a class of size 1; ARX declares both monotone); not declared monotone
  under suppression here — that property is a per-class one in this package and these are not per-class;
* population uniqueness is **not** monotone under generalization for any estimator: ARX declares the
  Zayatz criterion monotone, but merging two classes of size 10 can *raise* Zayatz's estimate (the
  weight ``Σ_j f_j P_j`` of the non-unique classes falls while ``f_1`` stays; a test shows it), and the
  fitted Pitman and SNB models have no such property either;
* δ-presence is monotone under generalization (as ARX declares): a merged class's ratio Σ rows / Σ
  population rows lies between its parts' ratios, and with ``δmin > 0`` a node with a population-only
  class fails, as do all its specializations (the class only splits into population-only classes).
  Without that node rule the lower bound would not be monotone — a population-only class merged into
  a released class dilutes its ratio below δmin. It is not monotone under suppression (ARX: the same). k-map with a population table is monotone under both
  (population counts only add up); k-map with an estimator is k'-anonymity.
"""

from __future__ import annotations

import copy

import numpy as np

from ..errors import AnonymizeError
from .classes import ClassStats
from .metrics.population import UNIQUENESS_ESTIMATORS, estimate_uniques, kmap_derived_k
from .models import PrivacyModel

__all__ = [
    "TableModel",
    "AverageRisk",
    "SampleUniqueness",
    "PopulationUniqueness",
    "DeltaPresence",
    "KMap",
    "KMAP_ESTIMATORS",
    "table_models",
    "population_of",
    "bind_models",
    "check_algorithm",
    "population_models",
]

KMAP_ESTIMATORS = ("poisson", "ztp")
"""Cell-size estimators of k-map without a population table (ARX: Poisson, zero-truncated Poisson)."""


def _fraction(name: str, x) -> float:
    x = float(x)
    if not 0.0 <= x <= 1.0:
        raise AnonymizeError(f"{name} must be a fraction in [0, 1], got {x:g}")
    return x


def _population_size(N) -> int:
    if N is None or int(N) != N or N < 1:
        raise AnonymizeError(f"the population size must be a positive integer, got {N}")
    return int(N)


class TableModel(PrivacyModel):
    """A table-level model: ``class_ok`` passes every class, :meth:`table_ok` judges the release."""

    table_level = True
    monotone_generalization = True
    monotone_suppression = False
    size_only = True
    needs_sensitive = False
    threshold: float = 1.0

    def class_ok(self, stats: ClassStats) -> np.ndarray:
        """Every class passes (the model is judged on the whole release by :meth:`table_ok`)."""
        return np.ones(stats.n_classes, dtype=bool)

    def value(self, sizes: np.ndarray) -> float | None:  # pragma: no cover - interface
        """The measured quantity on the released class sizes (``None``: it cannot be measured)."""
        raise NotImplementedError

    def table_ok(self, stats: ClassStats) -> bool:
        """The released classes (size > 0) meet the threshold; an empty release passes."""
        sizes = np.asarray(stats.sizes, dtype=np.int64)
        sizes = sizes[sizes > 0]
        if len(sizes) == 0:
            return True
        v = self.value(sizes)
        return v is not None and v <= self.threshold + 1e-12

    def limit(self, whole: ClassStats) -> tuple[bool, str] | None:
        """Fails on the whole table as one class: generalization cannot help (suppression might)."""
        if self.table_ok(whole):
            return None
        return False, f"{self.requirement()} fails even with every row in one class"


class AverageRisk(TableModel):
    """Average re-identification risk: mean over released rows of 1 / class size ≤ ``threshold``
    (= classes / rows; ARX ``AverageReidentificationRisk``; El Emam & Dankar, JAMIA 2008)."""

    name = "average-risk"

    def __init__(self, threshold: float):
        self.threshold = _fraction("the average risk threshold", threshold)

    def requirement(self) -> str:
        return f"average risk ≤ {self.threshold:g}"

    def value(self, sizes):
        return len(sizes) / float(sizes.sum())

    def describe(self):
        return {"model": self.name, "threshold": self.threshold}


class SampleUniqueness(TableModel):
    """Sample uniqueness: share of released rows in classes of size 1 ≤ ``threshold`` (ARX
    ``SampleUniqueness``)."""

    name = "sample-uniqueness"

    def __init__(self, threshold: float):
        self.threshold = _fraction("the sample uniqueness threshold", threshold)

    def requirement(self) -> str:
        return f"sample uniques ≤ {self.threshold:g}"

    def value(self, sizes):
        return float((sizes == 1).sum()) / float(sizes.sum())

    def describe(self):
        return {"model": self.name, "threshold": self.threshold}


class PopulationUniqueness(TableModel):
    """Population uniqueness: estimated population uniques / ``population_size`` ≤ ``threshold``
    (ARX ``PopulationUniqueness``; estimators in :mod:`.metrics.population`). Not monotone under
    generalization (module docstring)."""

    name = "population-uniqueness"
    monotone_generalization = False

    def __init__(self, threshold: float, estimator: str = "dankar", population_size: int | None = None):
        self.threshold = _fraction("the population uniqueness threshold", threshold)
        if estimator not in UNIQUENESS_ESTIMATORS:
            raise AnonymizeError(f"unknown uniqueness estimator '{estimator}' (use {', '.join(UNIQUENESS_ESTIMATORS)})")
        self.estimator = estimator
        self.population_size = _population_size(population_size)

    def requirement(self) -> str:
        return f"population uniques ≤ {self.threshold:g} ({self.estimator}, N = {self.population_size:,})"

    def bind(self, n_rows: int) -> PopulationUniqueness:
        """Check the model against a table of ``n_rows`` rows (the population holds the table)."""
        if self.population_size < n_rows:
            raise AnonymizeError(
                f"the population size N = {self.population_size:,} is smaller than the table ({n_rows:,} rows)"
            )
        return self

    def value(self, sizes):
        est, _ = estimate_uniques(sizes, self.population_size, self.estimator, zayatz_fallback=False)
        if est is None:  # a failed estimate: only a release without sample uniques passes (ARX)
            return None if (sizes == 1).any() else 0.0
        return float(est) / self.population_size

    def describe(self):
        return {
            "model": self.name,
            "threshold": self.threshold,
            "estimator": self.estimator,
            "population_size": self.population_size,
        }


class _PopulationModel(PrivacyModel):
    """A per-class model that reads ``ClassStats.population_sizes`` (from the table ``population``)."""

    needs_sensitive = False
    population = None

    def _pop(self, stats: ClassStats) -> np.ndarray:
        if stats.population_sizes is None:
            raise AnonymizeError(f"{self.name} needs the population count of every class (a population table)")
        return np.asarray(stats.population_sizes, dtype=np.int64)

    def _whole(self, whole: ClassStats) -> ClassStats:
        """``whole`` (the table as one class) with the population's row count when it has none."""
        if whole.population_sizes is None and self.population is not None:
            whole = ClassStats(whole.sizes, whole.sens_hist, whole.global_dist, whole.table)
            whole.population_sizes = np.array([len(self.population)], dtype=np.int64)
        return whole

    def _population_text(self) -> dict:
        return {} if self.population is None else {"population_rows": int(len(self.population))}


class DeltaPresence(_PopulationModel):
    """δ-presence (Nergiz, Atzori, Clifton, SIGMOD 2007; ARX ``DPresence``): every released class has
    ``δmin ≤ rows / population rows ≤ δmax``. ``population`` — the population table (a DataFrame with
    the QI columns; the table anonymized is a subset of it)."""

    name = "delta-presence"
    monotone_suppression = False

    def __init__(self, dmin: float, dmax: float, population=None):
        self.dmin = _fraction("δmin", dmin)
        self.dmax = _fraction("δmax", dmax)
        if self.dmin > self.dmax:
            raise AnonymizeError(f"δmin must not exceed δmax, got {self.dmin:g} > {self.dmax:g}")
        self.population = population
        #: a merged class's ratio lies between its parts'; with δmin > 0 population-only classes fail the
        #: node (:attr:`judges_absent`), so a population-only class never dilutes a released one
        self.monotone_generalization = True

    @property
    def judges_absent(self) -> bool:
        """With δmin > 0 a population row in a class with no table row (P(t ∈ T | T*) = 0) fails the node."""
        return self.dmin > 0

    def requirement(self) -> str:
        return f"δ-presence [{self.dmin:g}, {self.dmax:g}]"

    def deltas(self, stats: ClassStats) -> np.ndarray:
        """Per class: rows / population rows (``inf`` for a class with rows and no population row)."""
        pop = self._pop(stats).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(pop > 0, stats.sizes / np.where(pop > 0, pop, 1.0), np.inf)
        return np.where(stats.sizes == 0, 0.0, d)

    def class_ok(self, stats):
        d = self.deltas(stats)
        return ((d >= self.dmin - 1e-12) & (d <= self.dmax + 1e-12)) | (stats.sizes == 0)

    def limit(self, whole):
        """Only δ ≤ δmax can be judged on the whole table: a class's ratio is at most the largest of its
        parts', so the whole table above δmax means some class is above it in every release. δ ≥ δmin
        can fail on the whole table and hold on finer classes (population-only classes dilute it)."""
        w = self._whole(whole)
        if w.population_sizes is None or self.deltas(w)[0] <= self.dmax + 1e-12:
            return None
        return False, f"{self.requirement()} fails even with every row in one class (δ = {self.deltas(w)[0]:.3g})"

    def describe(self):
        return {"model": self.name, "dmin": self.dmin, "dmax": self.dmax, **self._population_text()}


class KMap(_PopulationModel):
    """k-map: every released class matches ≥ ``k`` population rows.

    With ``population`` (a table): the exact population counts (ARX ``KMap`` with a research subset).
    With ``population_size`` instead: ARX's estimated k-map — a class needs ``k'`` rows, ``k'`` from
    :func:`.metrics.population.kmap_derived_k` (``estimator`` poisson | ztp at ``significance``) once the
    sample size is known (:meth:`bind`, called by :func:`.anonymizer.anonymize_table`)."""

    name = "k-map"
    monotone_generalization = True
    monotone_suppression = True

    def __init__(
        self,
        k: int,
        population=None,
        *,
        population_size: int | None = None,
        estimator: str = "poisson",
        significance: float = 0.01,
    ):
        if int(k) != k or k < 1:
            raise AnonymizeError(f"k of k-map must be a positive integer, got {k}")
        self.k = int(k)
        self.population = population
        self.population_size = None if population_size is None else _population_size(population_size)
        if population is None and self.population_size is None:
            raise AnonymizeError("k-map needs a population table or the population size")
        if estimator not in KMAP_ESTIMATORS:
            raise AnonymizeError(f"unknown k-map estimator '{estimator}' (use {', '.join(KMAP_ESTIMATORS)})")
        if not 0.0 < float(significance) < 1.0:
            raise AnonymizeError(f"the k-map significance level must be in (0, 1), got {significance}")
        self.estimator, self.significance = estimator, float(significance)
        self.derived_k: int | None = None
        self.type1_error: float | None = None
        self.size_only = population is None

    @property
    def estimated(self) -> bool:
        """No population table: the class-size estimator stands in for the counts."""
        return self.population is None

    @property
    def minimal_class_size(self) -> int:
        """``k'`` for the estimated k-map (once bound), else 1 (population rows, not table rows, count)."""
        return self.derived_k or 1 if self.estimated else 1

    def bind(self, n_rows: int) -> KMap:
        """A copy for a table of ``n_rows`` rows: ``k'`` derived at sampling fraction ``n_rows / N``."""
        if not self.estimated:
            return self
        assert self.population_size is not None
        if self.population_size < n_rows:
            raise AnonymizeError(
                f"the population size N = {self.population_size:,} is smaller than the table ({n_rows:,} rows)"
            )
        out = copy.copy(self)
        kp, err = kmap_derived_k(self.k, n_rows / self.population_size, self.significance, self.estimator)
        out.derived_k, out.type1_error = min(kp, n_rows), err
        return out

    def requirement(self) -> str:
        if self.estimated:
            kp = "" if self.derived_k is None else f", k' = {self.derived_k}"
            return f"k-map k = {self.k} ({self.estimator}, N = {self.population_size:,}{kp})"
        return f"k-map k = {self.k}"

    def class_ok(self, stats):
        if self.estimated:
            if self.derived_k is None:
                raise AnonymizeError("estimated k-map needs the table size: call bind(n_rows) first")
            return (stats.sizes >= self.derived_k) | (stats.sizes == 0)
        return (self._pop(stats) >= self.k) | (stats.sizes == 0)

    def limit(self, whole):
        if self.estimated and self.derived_k is None:
            return None
        if self.class_ok(self._whole(whole))[0]:
            return None
        where = "the table" if self.estimated else f"the population ({len(self.population):,} rows)"
        return True, f"{self.requirement()} is impossible: {where} is smaller than k"

    def describe(self):
        d = {"model": self.name, "k": self.k, **self._population_text()}
        if self.estimated:
            d |= {
                "population_size": self.population_size,
                "estimator": self.estimator,
                "significance": self.significance,
                "derived_k": self.derived_k,
                "type1_error": self.type1_error,
            }
        return d


# ------------------------------------------------------------------------------------ helpers
def table_models(models) -> list[TableModel]:
    """The table-level models among ``models``."""
    return [m for m in models if getattr(m, "table_level", False)]


def population_of(models):
    """The one population table the models read (``None`` if none does); one-line error when two models
    were given different tables."""
    pops = [m.population for m in models if getattr(m, "population", None) is not None]
    if not pops:
        return None
    if any(p is not pops[0] for p in pops[1:]):
        raise AnonymizeError("the models were given different population tables: use one population per release")
    return pops[0]


def bind_models(models, n_rows: int) -> list:
    """Every model with a :meth:`bind` hook bound to a table of ``n_rows`` rows (estimated k-map derives
    ``k'``; population sizes smaller than the table are refused)."""
    return [m.bind(n_rows) if hasattr(m, "bind") else m for m in models]


def check_algorithm(alg, models) -> None:
    """One-line error when an algorithm other than a full-domain search is given a table-level or a
    population-count model (only the full-domain searches honour them)."""
    from .registry import FULL_DOMAIN

    if alg.kind == FULL_DOMAIN:
        return
    for m in models:
        if getattr(m, "table_level", False) or getattr(m, "population", None) is not None:
            raise AnonymizeError(
                f"algorithm '{alg.name}' cannot honour {m.name}: only the full-domain searches "
                "(flash, incognito, samarati, datafly) check table-level and population-based models"
            )


def population_models(
    *,
    population=None,
    population_size: int | None = None,
    delta_presence: tuple[float, float] | None = None,
    k_map: int | None = None,
    k_map_estimator: str = "poisson",
    k_map_significance: float = 0.01,
    max_avg_risk: float | None = None,
    max_sample_uniques: float | None = None,
    max_population_uniques: float | None = None,
    uniqueness_estimator: str = "dankar",
) -> list[PrivacyModel]:
    """The models of ``ppdm anonymize``'s population options (:func:`.anonymizer.build_models`):
    ``delta_presence=(δmin, δmax)`` and ``k_map`` with the ``population`` table (k-map with
    ``population_size`` instead: the estimator variant); ``max_avg_risk``, ``max_sample_uniques``;
    ``max_population_uniques`` with ``population_size`` (default: the population table's rows).
    One-line errors for an option without what it needs, or a population nothing reads."""
    out: list[PrivacyModel] = []
    if population_size is not None:
        population_size = _population_size(population_size)
    if delta_presence is not None:
        if population is None:
            raise AnonymizeError("δ-presence needs the population table (--population FILE)")
        dmin, dmax = delta_presence
        out.append(DeltaPresence(dmin, dmax, population=population))
    if k_map is not None:
        if population is not None:
            out.append(KMap(k_map, population=population))
        elif population_size is not None:
            out.append(
                KMap(k_map, population_size=population_size, estimator=k_map_estimator, significance=k_map_significance)
            )
        else:
            raise AnonymizeError(
                "k-map needs the population table (--population FILE) or its size (--population-size N)"
            )
    if max_avg_risk is not None:
        out.append(AverageRisk(max_avg_risk))
    if max_sample_uniques is not None:
        out.append(SampleUniqueness(max_sample_uniques))
    if max_population_uniques is not None:
        N = population_size if population_size is not None else (None if population is None else len(population))
        if N is None:
            raise AnonymizeError("population uniqueness needs the population size (--population-size N)")
        out.append(PopulationUniqueness(max_population_uniques, uniqueness_estimator, N))
    if population is not None and delta_presence is None and k_map is None and max_population_uniques is None:
        raise AnonymizeError("--population is read by --delta-presence, --k-map and --max-population-uniques: give one")
    if population_size is not None and not (
        max_population_uniques is not None or (k_map is not None and population is None)
    ):
        raise AnonymizeError(
            "--population-size is read by --max-population-uniques and by --k-map without --population: give one"
        )
    return out
