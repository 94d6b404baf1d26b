"""Full-domain generalization lattice: the frequency-set engine its searches evaluate nodes with.

Model (Aggarwal, *Data Mining: The Textbook*, Springer 2015, §20.3.1.1–20.3.1.2;
Samarati, "Protecting respondents' identities in microdata release", IEEE TKDE 2001;
LeFevre, DeWitt, Ramakrishnan, "Incognito: efficient full-domain k-anonymity",
SIGMOD 2005). A node is a vector of levels ``(l_1, …, l_q)``, one per
quasi-identifier, ``0 ≤ l_j ≤ h_j``; it stands for the table in which every
value of QI ``j`` is replaced by its ancestor at level ``l_j``. Its height is
``Σ l_j``. A node *satisfies* the privacy models within the suppression budget
``MaxSup = ⌊max_suppression · n⌋`` if the rows of the equivalence classes that
fail some model number at most ``MaxSup`` (those rows are suppressed, i.e.
released with every QI ``*``).

:class:`Lattice` composes three parts, one module each:

* :mod:`.frequency` — :class:`~.frequency.FrequencySets`: the compact encoding, frequency sets
  computed from the rows once, rolled up node to node (Incognito §3.2) and cached;
* :mod:`.privacy` — :class:`~.privacy.PrivacyCheck`: the models and the suppression budget checked
  on a frequency set, and what the searches may prune with (monotonicity under suppression);
* :mod:`.node_metrics` — :class:`~.node_metrics.NodeMetrics`: DM and NCP of satisfying nodes,
  prepared when a node is evaluated and filled in for the nodes a search returns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..classes import class_stats, equivalence_classes
from ..metrics.loss import DEFAULT_GS_FACTOR
from ..models import PrivacyModel
from ..table import EncodedTable
from .frequency import DROPPED, FrequencySet, FrequencySets
from .grid import LatticeGrid, lattice_nodes
from .node_metrics import NodeMetrics
from .privacy import PrivacyCheck
from .result import NodeInfo

__all__ = ["DROPPED", "FrequencySet", "Lattice"]


class Lattice:
    """The full-domain lattice of an :class:`EncodedTable` and its frequency-set engine.

    ``models`` — the privacy models (any :class:`PrivacyModel`); ``max_suppression`` — fraction of
    rows that may be suppressed (Samarati's MaxSup = ⌊fraction·n⌋ rows); ``histograms`` — roll up
    sensitive histograms even when ``models`` do not read them (default: only when they do);
    ``ncp_categorical`` — the categorical NCP flavour (:data:`..metrics.cells.CATEGORICAL_LOSSES`);
    ``weights`` — a weight per QI for NCP and Loss (:func:`..metrics.loss.attribute_weights`; None:
    equal); ``suppressed_rows`` — ``'star'``, ``'drop'`` or ``'arx'`` (:class:`.privacy.PrivacyCheck`);
    ``gs_factor`` — ARX's generalization/suppression factor of the Loss metric
    (:func:`..metrics.loss.gs_factors`; 0.5, the default, weighs both the same).

    Main methods: :meth:`evaluate` (a node → :class:`NodeInfo`, rolled up from the best cached
    specialization), :meth:`rollup`, :meth:`suppressed_mask` (rows to suppress at a node),
    :meth:`set_models` (check other models against the same cached frequency sets).
    Counters ``n_evaluated`` and ``rows_scanned`` measure the work done.

    Parts: :attr:`freq` (:class:`.frequency.FrequencySets`: encoding, roll-up, cache),
    :attr:`privacy` (:class:`.privacy.PrivacyCheck`: models, budget, pruning) and
    :attr:`node_metrics` (:class:`.node_metrics.NodeMetrics`: DM and NCP). The parts' methods the
    searches use are the lattice's own too (:meth:`rollup`, :meth:`source_for`, :meth:`remember`,
    :meth:`check`, :meth:`complete`, …), bound in the constructor.
    """

    def __init__(
        self,
        table: EncodedTable,
        models: Sequence[PrivacyModel],
        max_suppression: float = 0.0,
        *,
        wide: bool | None = None,
        ncp_categorical: str = "height",
        suppressed_rows: str = "star",
        histograms: bool | None = None,
        weights: np.ndarray | None = None,
        gs_factor: float = DEFAULT_GS_FACTOR,
    ):
        self.privacy = PrivacyCheck(
            table, models, max_suppression, suppressed_rows=suppressed_rows, histograms=histograms
        )
        self.table = table
        self.n = table.n
        self.q = table.q
        self.max_suppression = self.privacy.max_suppression
        self.max_sup = self.privacy.max_sup
        self.suppressed_rows = suppressed_rows
        self.need_hist = self.privacy.need_hist
        self.freq = FrequencySets(table, need_hist=self.need_hist, wide=wide)
        self.privacy.attach(self.freq)  # population counts for δ-presence / k-map, if a model brings a table
        self.heights = self.freq.heights
        self.n_nodes = self.freq.n_nodes
        self.wide = self.freq.wide
        self.base = self.freq.base
        self.ncp_categorical = ncp_categorical
        self.node_metrics = NodeMetrics(self.freq, ncp_categorical, weights, gs_factor)
        self.n_evaluated = 0
        self._grid: LatticeGrid | None = None
        # The parts' methods, bound once: the searches call several per node, and a delegating
        # method would add a Python call each time. Each is documented on its part.
        freq, privacy, node_metrics = self.freq, self.privacy, self.node_metrics
        # frequency sets: encoding, roll-up, cache (:class:`.frequency.FrequencySets`)
        self.internal = freq.internal
        self.up = freq.up
        self.rollup = freq.rollup
        self.cached = freq.cached
        self.frequency_set = freq.frequency_set
        self.best_child = freq.best_child
        self.best_cached = freq.best_cached
        self.source_for = freq.source_for
        self.hub = freq.hub
        self.remember = freq.remember
        self.forget = freq.forget
        self.tuple_codes = freq.tuple_codes
        # the privacy check (:class:`.privacy.PrivacyCheck`)
        self.set_models = privacy.set_models
        self.class_stats = privacy.class_stats
        self.failing = privacy.failing
        self.release_check = privacy.release_check
        self.check = privacy.check
        # the metrics (:class:`.node_metrics.NodeMetrics`)
        self.loss_tables = node_metrics.loss_tables
        self.complete = node_metrics.complete
        self._prepare_metrics = node_metrics.prepare

    # ------------------------------------------------------------------ the models (:attr:`privacy`)
    @property
    def models(self) -> list[PrivacyModel]:
        """The privacy models checked."""
        return self.privacy.models

    @property
    def size_only(self) -> bool:
        """Every model reads class sizes only (k-anonymity)."""
        return self.privacy.size_only

    @property
    def release_checks(self) -> bool:
        """Whether a node must also pass :meth:`release_check`."""
        return self.privacy.release_checks

    @property
    def exact_monotone(self) -> bool:
        """The predicate used for pruning is the predicate itself (see :attr:`.privacy.PrivacyCheck.exact_monotone`)."""
        return self.privacy.exact_monotone

    @property
    def monotone_models(self) -> list[PrivacyModel]:
        """The models the searches prune with."""
        return self.privacy.monotone_models

    @property
    def models_prune(self) -> bool:
        """Every model is monotone under suppression."""
        return self.privacy.models_prune

    # ------------------------------------------------------------------ frequency sets (:attr:`freq`)
    @property
    def rows_scanned(self) -> int:
        """Frequency-set rows read by roll-ups so far (:attr:`.frequency.FrequencySets.rows_scanned`)."""
        return self.freq.rows_scanned

    # ------------------------------------------------------------------ nodes
    def evaluate(
        self,
        levels,
        *,
        keep: bool = True,
        metrics: bool = True,
        source: FrequencySet | None = None,
        exact_failing: bool = True,
    ) -> tuple[NodeInfo, FrequencySet]:
        """Evaluate a node (internal levels): roll its frequency set up from the best cached
        specialization, check the models, and (``metrics``, for satisfying full-lattice nodes)
        compute DM and NCP. ``keep`` caches the frequency set as a later roll-up source.
        ``exact_failing=False`` — the search needs only the verdicts: a node whose too-small classes
        (or, when the predicate is not monotone, largest classes) already fail more rows than the
        budget fails without the models being run on the rest, and its ``suppressed`` is those
        classes' rows, a lower bound (:meth:`.privacy.PrivacyCheck.check`)."""
        levels = tuple(levels)
        fs = self.frequency_set(levels, source)
        self.n_evaluated += 1
        ok, okm, fail, sup = self.check(fs, exact_failing)
        info = NodeInfo(levels, ok, okm, sup)
        if ok and metrics and all(levels[j] <= self.heights[j] for j in range(self.q)):
            self._prepare_metrics(info, fs, fail)
        if keep:
            self.remember(fs)
        return info, fs

    def node_info(self, levels) -> NodeInfo:
        """Evaluate a full-lattice node from scratch-or-cache and always fill its metrics."""
        levels = self.internal(levels)
        fs = self.cached(levels) or self.rollup(self.best_cached(levels), levels)
        ok, okm, fail, sup = self.check(fs)
        info = NodeInfo(levels, ok, okm, sup)
        self._prepare_metrics(info, fs, fail)
        return self.complete(info)

    # ------------------------------------------------------------------ rows
    def row_classes(self, levels) -> tuple[np.ndarray, np.ndarray]:
        """``(class_id per row, failing per class)`` of a full-lattice node, computed from the rows."""
        levels = self.internal(levels)
        codes = self.freq.row_codes(levels)
        cid, nc = equivalence_classes(codes)
        stats = class_stats(self.table, cid, nc)
        if self.privacy.population is not None:
            first = np.full(nc, len(cid), dtype=np.int64)
            np.minimum.at(first, cid, np.arange(len(cid), dtype=np.int64))
            stats.population_sizes = self.privacy.population.counts(levels, codes[first])
        return cid, self.privacy.failing_classes(stats)

    def suppressed_mask(self, levels) -> np.ndarray:
        """Rows in classes that fail some model at ``levels`` (the rows a full-domain release suppresses)."""
        cid, fail = self.row_classes(levels)
        return fail[cid]

    def grid(self) -> LatticeGrid:
        """The :class:`.grid.LatticeGrid` of this lattice, built once: searches run again on the same
        lattice (:meth:`set_models`) share its successor / predecessor lists."""
        if self._grid is None:
            self._grid = LatticeGrid(self.heights)
        return self._grid

    def full_index(self) -> np.ndarray:
        """All nodes of the full lattice, ``(N, q)`` (see :func:`lattice_nodes`)."""
        return lattice_nodes(self.heights)
