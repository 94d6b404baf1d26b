"""The privacy check of full-domain lattice nodes: does a node's frequency set satisfy the
privacy models within the suppression budget, and what may a search prune with.

A node *satisfies* the privacy models within the suppression budget
``MaxSup = ⌊max_suppression · n⌋`` if the rows of the equivalence classes that fail some model
number at most ``MaxSup`` (those rows are suppressed, i.e. released with every QI ``*``, or left
out), and, when rows are suppressed, the release itself passes (:meth:`PrivacyCheck.release_check`).

Monotonicity and suppression. The searches prune with what the privacy models say of
themselves (:mod:`..models`): without suppression every model here is monotone under
generalization, so pruning is exact; with suppression, "rows in failing classes ≤ MaxSup" is
monotone only for models that are monotone under suppression (k-anonymity, distinct
l-diversity). Otherwise the searches prune with the models' :meth:`pruning_models` (e.g. the
distinct ⌈l⌉-diversity an entropy l-diversity implies) and check the full predicate on every
node they keep — see :attr:`PrivacyCheck.exact_monotone`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...errors import AnonymizeError
from ..classes import ClassStats
from ..models import PrivacyModel, all_ok, check_fits, pruning_models
from ..recode import SUPPRESSED_ROWS
from ..table import EncodedTable
from .frequency import FrequencySet, sensitive_offsets

__all__ = ["PrivacyCheck"]


class PrivacyCheck:
    """The predicate of a full-domain search: the privacy models, the suppression budget and how
    suppressed rows are released, checked on frequency sets (:meth:`check`) or on the classes of
    the rows (:meth:`failing_classes`).

    ``models`` — the privacy models (any :class:`PrivacyModel`); ``max_suppression`` — fraction of
    rows that may be suppressed (Samarati's MaxSup = ⌊fraction·n⌋ rows); ``suppressed_rows`` —
    ``'star'`` or ``'drop'`` (:meth:`release_check`); ``histograms`` — roll up sensitive
    histograms even when ``models`` do not read them (default: only when they do).
    """

    def __init__(
        self,
        table: EncodedTable,
        models: Sequence[PrivacyModel],
        max_suppression: float = 0.0,
        *,
        suppressed_rows: str = "star",
        histograms: bool | None = None,
    ):
        if suppressed_rows not in SUPPRESSED_ROWS:
            raise AnonymizeError(
                f"unknown handling of suppressed rows '{suppressed_rows}' (use {' or '.join(SUPPRESSED_ROWS)})"
            )
        if not 0.0 <= float(max_suppression) <= 1.0:
            raise AnonymizeError(f"max suppression must be a fraction in [0, 1], got {max_suppression}")
        if not models:
            raise AnonymizeError("no privacy model given (e.g. k-anonymity with --k)")
        self.table = table
        self.models = list(models)
        self.n = table.n
        self.max_suppression = float(max_suppression)
        self.max_sup = int(math.floor(self.max_suppression * self.n + 1e-9))
        self.suppressed_rows = suppressed_rows
        #: sensitive histograms are rolled up with the counts: when some model reads them, or when
        #: ``histograms=True`` asks for them (a lattice that :meth:`set_models` will later point at
        #: l-diversity / t-closeness); fixed at construction
        wanted = not all(m.size_only for m in self.models) if histograms is None else bool(histograms)
        self.need_hist = wanted and len(table.sens_values) > 0
        self.sens_offsets, _ = sensitive_offsets(table)
        self.set_models(self.models)

    def set_models(self, models: Sequence[PrivacyModel]) -> None:
        """Check nodes against other privacy models from now on, keeping every cached frequency set.

        A node's frequency set (its distinct generalized tuples, their counts and sensitive
        histograms) does not depend on the models, so one lattice serves a sweep over parameters
        (e.g. k = 2 … 50, or several l): only the predicate and its pruning properties change. The
        lattice must have been built with sensitive histograms (:attr:`need_hist`) if ``models``
        read a sensitive attribute. :class:`NodeInfo` objects from before describe the old models.
        """
        models = list(models)
        if not models:
            raise AnonymizeError("no privacy model given (e.g. k-anonymity with --k)")
        check_fits(models, self.n)
        size_only = all(m.size_only for m in models)
        if not size_only and len(self.table.sens_values) == 0:
            raise AnonymizeError("l-diversity / t-closeness need at least one sensitive attribute (--sensitive)")
        if not size_only and not self.need_hist:
            raise AnonymizeError(
                "this lattice keeps no sensitive histograms: build it with a model that reads the sensitive "
                "attribute to check l-diversity / t-closeness on it"
            )
        self.models = models
        # --- which predicate prunes (the models describe themselves, see :mod:`..models`)
        self.size_only = size_only
        #: whether a node must also pass the release checks of :meth:`release_check` — how
        #: suppressed rows are released ('star': one all-``*`` class; 'drop': left out)
        self.release_checks = self.max_sup > 0 and (
            self.suppressed_rows == "star" or any(m.uses_table_distribution for m in self.models)
        )
        #: True when the predicate used for pruning is the predicate itself: no suppression (every
        #: model is monotone under generalization), or every model is monotone under suppression
        #: (k-anonymity, distinct l-diversity). Lattice searches are then exact with full pruning.
        self.exact_monotone = not self.release_checks and (
            (self.max_sup == 0 and all(m.monotone_generalization for m in self.models))
            or all(m.monotone_suppression for m in self.models)
        )
        self.monotone_models = self.models if self.exact_monotone else pruning_models(self.models)
        #: every model is monotone under suppression, so "failing rows within the budget" (before the
        #: release checks) is itself the monotone part used for pruning
        self.models_prune = all(m.monotone_suppression for m in self.models)

    # ------------------------------------------------------------------ checking
    def class_stats(self, fs: FrequencySet) -> ClassStats:
        """:class:`ClassStats` of a frequency set (one class per distinct tuple)."""
        hists = []
        if fs.hist is not None:
            for s, off in enumerate(self.sens_offsets):
                hists.append(fs.hist[:, off : off + len(self.table.sens_values[s])])
        return ClassStats(fs.counts, hists, self.table.global_dist(), self.table)

    def failing(self, fs: FrequencySet, models=None) -> np.ndarray:
        """Bool per tuple: its class fails some model (so its rows would be suppressed)."""
        models = self.models if models is None else models
        if all(m.size_only for m in models):
            return fs.counts < max((m.minimal_class_size for m in models), default=1)
        return ~all_ok(models, self.class_stats(fs))

    def release_check(self, counts: np.ndarray, hists: list, fail: np.ndarray) -> tuple[np.ndarray, bool]:
        """What the written file must also satisfy when rows are suppressed: ``(fail, ok)``.

        * ``'star'`` — the suppressed rows are published as one class with ``*`` in every QI; that
          class (if not empty) must satisfy every model too, as pycanon or ``ppdm check`` will
          measure it on the file.
        * ``'drop'`` — the suppressed rows are left out, so the file's own sensitive distribution
          is the reference of models that compare classes with it (t-closeness): classes are
          re-checked against the distribution of the rows kept, failing ones suppressed too,
          until no class changes (``fail`` only grows, so this ends).

        ``counts`` (C,) and ``hists`` (per sensitive attribute (C, V)) describe the classes;
        ``ok`` is false when the budget is exceeded or the release would be empty."""
        sup = int(counts[fail].sum())
        if sup == 0:
            return fail, True
        if self.suppressed_rows == "star":
            star = ClassStats(
                np.array([sup], dtype=np.int64),
                [h[fail].sum(axis=0, keepdims=True) for h in hists],
                self.table.global_dist(),
                self.table,
            )
            return fail, bool(all_ok(self.models, star)[0])
        dist_models = [m for m in self.models if m.uses_table_distribution]
        while True:
            keep = ~fail
            kept = int(counts[keep].sum())
            if kept == 0 or sup > self.max_sup:
                return fail, False
            ref = [h[keep].sum(axis=0) / kept for h in hists]
            stats = ClassStats(counts, hists, ref, self.table)
            new_fail = fail | ~all_ok(dist_models, stats)
            if np.array_equal(new_fail, fail):
                return fail, True
            fail = new_fail
            sup = int(counts[fail].sum())

    def check(self, fs: FrequencySet) -> tuple[bool, bool, np.ndarray]:
        """``(ok, ok_monotone, failing mask)`` of a frequency set against the budget and, when
        rows are suppressed, the release checks (:meth:`release_check`)."""
        fail = self.failing(fs)
        sup = int(fs.counts[fail].sum())
        ok = sup <= self.max_sup
        within_budget = ok
        if ok and sup and self.release_checks:
            fail, ok = self.release_check(fs.counts, self.class_stats(fs).sens_hist, fail)
        if self.exact_monotone:
            return ok, ok, fail
        if ok:
            return True, True, fail
        if self.models_prune:  # the models themselves are the monotone part: no second pass
            return False, within_budget, fail
        mfail = self.failing(fs, self.monotone_models)
        return False, int(fs.counts[mfail].sum()) <= self.max_sup, fail

    def failing_classes(self, stats: ClassStats) -> np.ndarray:
        """Bool per class of ``stats`` (classes computed from the rows): it fails some model, or
        the release checks (:meth:`release_check`) suppress it too."""
        fail = ~all_ok(self.models, stats)
        if self.release_checks and fail.any():
            fail, _ = self.release_check(stats.sizes, stats.sens_hist, fail)
        return fail
