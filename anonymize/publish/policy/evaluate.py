"""Run one registered algorithm for many parameter values on one table, reusing work between runs.

:class:`ReleaseEvaluator` answers "what release does algorithm A give for model family F with
parameters p, and how good and how safe is it" (a :class:`.measure.Candidate`), caching every
answer. Work is shared between parameter values:

* full-domain algorithms run on one :class:`..fulldomain.Lattice` per model family — one without
  sensitive histograms for k-anonymity, one with them for l-diversity and t-closeness — pointed
  at each parameter's models with :meth:`..fulldomain.Lattice.set_models`, so every frequency set
  rolled up for one k (or l, or t) serves the next;
* for many k at once, the algorithms that return the optimum over all satisfying nodes (Flash,
  Incognito: :func:`..fulldomain.optimum.best_node`) are answered by one lattice sweep
  (:func:`.ksweep.k_sweep`), which derives every k's optimum from each node's class sizes;
* partition and clustering algorithms (Mondrian and whatever else the registry holds) run once per
  parameter value (cached).

Which algorithms exist and which models they honour comes from :mod:`..registry` only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ...errors import AnonymizeError
from .. import metrics as M
from .. import registry
from ..classes import class_stats, equivalence_classes
from ..fulldomain.engine import Lattice
from ..models import (
    DistinctLDiversity,
    KAnonymity,
    PrivacyModel,
    TCloseness,
    check_feasible,
    check_fits,
)
from ..table import EncodedTable
from .ksweep import k_sweep
from .measure import FAMILIES, Candidate, check_suppressed_rows, measure_candidate

__all__ = ["PUBLISHABLE_KINDS", "ReleaseEvaluator", "family_models", "honours", "methods_in_registry"]

PUBLISHABLE_KINDS = (registry.FULL_DOMAIN, *registry.PARTITION_KINDS)
"""Kinds whose result is a generalized table (what :func:`..anonymize_table` publishes and the
policy engine can measure and release); bucketization and synthetic releases are another kind of
output."""

# Full-domain searches whose result is the optimum over all satisfying nodes (both end with
# optimum.best_node); for them many k are answered by one lattice sweep, tested equal.
_SWEEP_EQUIVALENT = frozenset({"flash", "incognito"})


def family_models(
    family: str, params: Mapping, *, t_distance: str = "emd", t_ground: str | None = None
) -> list[PrivacyModel]:
    """The privacy models of a family with its parameters: k-anonymity ``{k}``; l-diversity ``{k, l}``
    (k-anonymity and distinct l-diversity, the paper's "at least l sensitive values per class");
    t-closeness ``{k, t}`` (k-anonymity and t-closeness with ``t_distance`` / ``t_ground``)."""
    if family not in FAMILIES:
        raise AnonymizeError(f"unknown privacy model '{family}' (use {', '.join(FAMILIES)})")
    if "k" not in params:
        raise AnonymizeError(f"{family} needs k")
    models: list[PrivacyModel] = [KAnonymity(int(params["k"]))]
    if family == "l-diversity":
        if "l" not in params:
            raise AnonymizeError("l-diversity needs l")
        models.append(DistinctLDiversity(int(params["l"])))
    elif family == "t-closeness":
        if "t" not in params:
            raise AnonymizeError("t-closeness needs t")
        models.append(TCloseness(float(params["t"]), distance=t_distance, ground=t_ground))
    return models


def _probe_params(family: str) -> dict:
    return {"k": 2, "l": 2, "t": 0.5}


def honours(alg: registry.Algorithm, family: str) -> bool:
    """The registered algorithm can honour the family's models (:func:`..registry.check_models`)."""
    try:
        registry.check_models(alg, family_models(family, _probe_params(family)))
    except AnonymizeError:
        return False
    return True


def methods_in_registry(family: str, kinds: Sequence[str] = PUBLISHABLE_KINDS) -> list[str]:
    """Names of the registered algorithms of one of ``kinds`` that honour ``family``, in
    registration order — how the policy engine finds alternative methods."""
    return [a.name for a in registry.algorithms() if a.kind in kinds and honours(a, family)]


class ReleaseEvaluator:
    """Evaluate one registered algorithm on one :class:`EncodedTable` for any model family and
    parameters (module docstring). ``search_metric`` — how full-domain searches choose among the
    satisfying nodes (the data user's quality metric); ``options`` — options of a partition-style
    algorithm (:attr:`..registry.Algorithm.options`, e.g. Mondrian's ``mode``); ``suppressed_rows`` —
    ``'star'``, ``'drop'`` or ``'arx'``, how every release is made and measured
    (:func:`.measure.measure_candidate`: with ``'arx'`` the ``*`` group is not judged and each
    candidate carries its ``suppressed_group`` verdict)."""

    def __init__(
        self,
        table: EncodedTable,
        algorithm: str,
        *,
        max_suppression: float = 0.0,
        suppressed_rows: str = "star",
        search_metric: str = "ncp",
        t_distance: str = "emd",
        t_ground: str | None = None,
        options: Mapping | None = None,
        progress: Callable[[str], None] | None = None,
    ):
        self.table = table
        self.alg = registry.get(algorithm)
        if self.alg.kind not in PUBLISHABLE_KINDS:
            raise AnonymizeError(
                f"algorithm '{self.alg.name}' ({self.alg.kind}) does not release a generalized table; "
                f"the policy engine uses {', '.join(PUBLISHABLE_KINDS)} algorithms"
            )
        if not 0.0 <= float(max_suppression) <= 1.0:
            raise AnonymizeError(f"max suppression must be a fraction in [0, 1], got {max_suppression}")
        self.max_suppression = float(max_suppression)
        self.suppressed_rows = check_suppressed_rows(suppressed_rows)
        self.search_metric = search_metric
        self.t_distance, self.t_ground = t_distance, t_ground
        self.options = dict(options or {})
        if "mode" in self.alg.options:
            self.options.setdefault("mode", "strict")
        unknown = sorted(set(self.options) - set(self.alg.options))
        if unknown:
            raise AnonymizeError(f"algorithm '{self.alg.name}' takes no option {', '.join(unknown)}")
        self.progress = progress
        self._lattices: dict[bool, Lattice] = {}
        self._cache: dict[tuple, Candidate] = {}
        #: algorithm runs done (cache misses) and the seconds they took
        self.runs = 0
        self.seconds = 0.0

    @property
    def algorithm(self) -> str:
        """The registered name of the algorithm."""
        return self.alg.name

    def honours(self, family: str) -> bool:
        """The algorithm can honour the family's models."""
        if family != "k-anonymity" and not self.table.schema.sensitive:
            return False
        return honours(self.alg, family)

    def models(self, family: str, params: Mapping) -> list[PrivacyModel]:
        """The models of ``family`` with ``params`` (:func:`family_models`)."""
        return family_models(family, params, t_distance=self.t_distance, t_ground=self.t_ground)

    # ------------------------------------------------------------------ one run
    def evaluate(self, family: str, params: Mapping, models: Sequence[PrivacyModel] | None = None) -> Candidate:
        """The release for ``family`` with ``params`` (cached); ``ok`` false with the reason when the
        algorithm finds none (e.g. no generalization satisfies the models within the budget).
        ``models`` replaces the family's models (:func:`family_models`) — e.g. entropy l-diversity —
        with ``family`` / ``params`` as their label."""
        params = {k: (int(v) if k == "k" else round(float(v), 10)) for k, v in params.items()}
        params = {k: (int(v) if float(v).is_integer() and k == "l" else v) for k, v in params.items()}
        key: tuple = (family, tuple(sorted(params.items())))
        if models is not None:
            key += (tuple(repr(m) for m in models),)
        got = self._cache.get(key)
        if got is not None:
            return got
        t0 = time.perf_counter()
        try:
            cand = self._run(family, params, models)
        except AnonymizeError as e:
            cand = Candidate(self.algorithm, family, params, ok=False, error=str(e))
        cand.seconds = time.perf_counter() - t0
        self.runs += 1
        self.seconds += cand.seconds
        self._cache[key] = cand
        return cand

    def _lattice(self, hist: bool, models) -> Lattice:
        lat = self._lattices.get(hist)
        if lat is None:
            lat = Lattice(
                self.table, models, self.max_suppression, suppressed_rows=self.suppressed_rows, histograms=hist
            )
            self._lattices[hist] = lat
        else:
            lat.set_models(models)
        return lat

    def _run(self, family: str, params: dict, models=None) -> Candidate:
        table = self.table
        models = self.models(family, params) if models is None else list(models)
        registry.check_models(self.alg, models)
        check_fits(models, table.n)
        can_suppress = self.alg.kind == registry.FULL_DOMAIN and int(self.max_suppression * table.n + 1e-9) > 0
        check_feasible(models, class_stats(table, np.zeros(table.n, dtype=np.int64), 1), can_suppress)
        levels = None
        if self.alg.kind == registry.FULL_DOMAIN:
            lat = self._lattice(not all(m.size_only for m in models), models)
            res = self.alg.run(lat, metric=self.search_metric, progress=None)
            lv = res.levels
            class_id, fail = lat.row_classes(lv)
            n_classes = len(fail)
            suppressed = fail[class_id]
            lo, hi = M.boxes_from_levels(table, lv)
            levels = {name: int(x) for name, x in zip(table.schema.qis, lv)}
        else:
            res = self.alg.run(table, models, progress=None, **self.options)
            class_id, n_classes = np.asarray(res.class_id, dtype=np.int64), int(res.n_classes)
            suppressed = np.zeros(table.n, dtype=bool) if res.suppressed is None else np.asarray(res.suppressed, bool)
            lo, hi = M.class_boxes(table, class_id, n_classes)
        return self._candidate(family, params, class_id, n_classes, suppressed, lo, hi, levels, models)

    def _candidate(self, family, params, class_id, n_classes, suppressed, lo, hi, levels, models) -> Candidate:
        m = measure_candidate(
            self.table,
            class_id,
            n_classes,
            suppressed,
            lo,
            hi,
            suppressed_rows=self.suppressed_rows,
            t_distance=self.t_distance,
            t_ground=self.t_ground,
            models=models,
        )
        return Candidate(self.algorithm, family, dict(params), levels=levels, **m)

    # ------------------------------------------------------------------ many k
    def evaluate_k(self, ks: Sequence[int]) -> dict[int, Candidate]:
        """k-anonymous releases for every k in ``ks``: one lattice sweep for Flash / Incognito when
        choosing by NCP, DM or CDM (:func:`.ksweep.k_sweep`), else one cached run per k."""
        ks = sorted({int(k) for k in ks})
        todo = [k for k in ks if ("k-anonymity", (("k", k),)) not in self._cache]
        if len(todo) > 2 and self.algorithm in _SWEEP_EQUIVALENT and self.search_metric in ("ncp", "dm", "cdm"):
            self._sweep(todo)
        out = {}
        for i, k in enumerate(ks):
            if self.progress and len(ks) > 5 and i % 5 == 0:
                self.progress(f"{self.algorithm}: k = {k} ({i + 1} of {len(ks)})")
            out[k] = self.evaluate("k-anonymity", {"k": k})
        return out

    def _sweep(self, ks: list[int]) -> None:
        t0 = time.perf_counter()
        sw = k_sweep(
            self.table,
            ks,
            max_suppression=self.max_suppression,
            suppressed_rows=self.suppressed_rows,
            metric=self.search_metric,
            progress=self.progress,
        )
        self.sweep_stats = sw.stats
        table = self.table
        per_node: dict[tuple, tuple] = {}  # levels -> (class_id, class sizes, lo, hi): the same for every k
        for k in ks:
            lv = sw.levels(k)
            params = {"k": k}
            if lv is None:
                msg = (
                    f"k = {k} is larger than the table ({table.n} rows)"
                    if k > table.n
                    else "no full-domain generalization satisfies the privacy models within the suppression budget"
                )
                cand = Candidate(self.algorithm, "k-anonymity", params, ok=False, error=msg)
            else:
                got = per_node.get(lv)
                if got is None:
                    class_id, n_classes = equivalence_classes(table.generalized_codes(lv))
                    lo, hi = M.boxes_from_levels(table, lv)
                    got = per_node[lv] = (class_id, np.bincount(class_id, minlength=n_classes), lo, hi)
                class_id, sizes, lo, hi = got
                fail = sizes < k  # what Lattice.row_classes gives for k-anonymity
                levels = {name: int(x) for name, x in zip(table.schema.qis, lv)}
                cand = self._candidate(
                    "k-anonymity", params, class_id, len(sizes), fail[class_id], lo, hi, levels, [KAnonymity(k)]
                )
            self._cache[("k-anonymity", (("k", k),))] = cand
        self.runs += 1
        self.seconds += time.perf_counter() - t0
