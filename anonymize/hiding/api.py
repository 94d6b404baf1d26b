"""``hide()``: one entry point for every hiding algorithm, returning the sanitized data and a report.

Which algorithm hides what, and how
-----------------------------------
===============  =========================================================================
``heuristic``    Verykios et al., IEEE TKDE 16(4), 2004 (:mod:`.heuristic`). Strategy
                 ``2a`` (default) lowers the support of X ∪ Y and, for a rule with a
                 confidence threshold, stops as soon as support *or* confidence is below
                 its threshold; ``1b`` deletes consequent items (confidence and support);
                 ``1a`` adds antecedent items (confidence only; rules only); ``2b``/``2c``
                 lower support only (itemsets, rules through X ∪ Y).
``swa``          Oliveira & Zaïane, ICDM 2003 (:mod:`.swa`): support of each pattern's
                 itemset (a rule's X ∪ Y), window by window, with disclosure threshold ψ.
``border``       Sun & Yu, ICDM 2005 (:mod:`.border`): support of each itemset (a rule's
                 X ∪ Y), deletions weighed by their impact on the positive border.
``exact``        Gkoulalas-Divanis & Verykios, CIKM 2006 (:mod:`.exact`): support of each
                 itemset (a rule's X ∪ Y), fewest non-sensitive frequent itemsets lost,
                 proven optimal by HiGHS within the size guard and time limit.
===============  =========================================================================

Titles: V. S. Verykios, A. K. Elmagarmid, E. Bertino, Y. Saygin, E. Dasseni, "Association rule
hiding"; S. R. M. Oliveira, O. R. Zaïane, "Protecting sensitive knowledge by data sanitization";
X. Sun, P. S. Yu, "A border-based approach for hiding sensitive frequent itemsets";
A. Gkoulalas-Divanis, V. S. Verykios, "An integer programming approach for frequent itemset
hiding" (full entries in ``docs/references.md``).

All four only delete items (except 1.a, which only adds), never empty a
transaction, and never touch the input object: a new database is returned.

A sensitive pattern that is not mined from D — an itemset below the support threshold,
a rule whose generating itemset is infrequent or whose confidence is below the minimum
confidence — is already hidden: no algorithm edits the data for it, and it is listed in
:attr:`HidingReport.already_hidden`. Only the patterns mined from D are handed to the
algorithm (and only their itemsets' supersets are excluded from the tracked non-sensitive
itemsets). Edits made for one pattern can make another sensitive rule mined (deleting an
item of its antecedent raises its confidence); such a rule is then hidden in turn (by the
same algorithm; by ``border`` under ``exact``), listed in ``details["resurfaced"]`` and not in
``already_hidden``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..itemsets import TransactionDB, as_transaction_db, count_support, frequent_itemsets, min_count_for
from ..itemsets.engine import ItemsetLimitExceeded
from .border import run_border
from .errors import HidingError
from .exact import run_exact
from .fimi import read_fimi
from .heuristic import pattern_mined, run_heuristic
from .ip_model import MAX_CONSTRAINTS, MAX_VARIABLES
from .metrics import HidingMetrics, measure_hiding
from .patterns import SensitivePattern, as_patterns, exact_fraction, is_mined
from .state import HidingState
from .swa import DEFAULT_WINDOW, run_swa

__all__ = ["ALGORITHMS", "HidingReport", "hide", "hide_db", "mined_in", "MAX_ITEMSETS"]

ALGORITHMS = ("heuristic", "swa", "border", "exact")

#: default cap on the frequent itemsets of D mined for hiding (every algorithm tracks all of them)
MAX_ITEMSETS = 1_000_000


@dataclass
class HidingReport:
    """What a hiding run did and what it cost (metric definitions: :mod:`.metrics`).

    ``seconds`` is the sanitization time (mining D once plus the algorithm);
    ``measure_seconds`` the time spent re-mining D' to measure it. ``already_hidden``
    lists the sensitive patterns not mined from D (the data was not edited for them).
    """

    algorithm: str
    parameters: dict
    transactions: int
    min_count: int
    min_support: str | None
    min_confidence: str | None
    metrics: HidingMetrics
    items_removed: int = 0
    items_added: int = 0
    transactions_modified: int = 0
    seconds: float = 0.0
    measure_seconds: float = 0.0
    details: dict = field(default_factory=dict)
    already_hidden: list[str] = field(default_factory=list)

    @property
    def hiding_failure(self) -> float:
        return self.metrics.hiding_failure

    @property
    def misses_cost(self) -> float:
        return self.metrics.misses_cost

    @property
    def lost_itemsets(self) -> int:
        return self.metrics.lost_itemsets

    @property
    def dissimilarity(self) -> float:
        return self.metrics.dissimilarity

    def to_dict(self) -> dict:
        """Flat JSON-ready dict: run description, every metric at top level, edit counts, seconds."""
        m = self.metrics.to_dict()
        return {
            "algorithm": self.algorithm,
            "parameters": self.parameters,
            "transactions": self.transactions,
            "min_support": self.min_support,
            "min_count": self.min_count,
            "min_confidence": self.min_confidence,
            **m,
            "items_removed": self.items_removed,
            "items_added": self.items_added,
            "transactions_modified": self.transactions_modified,
            "already_hidden": list(self.already_hidden),
            "seconds": round(self.seconds, 6),
            "measure_seconds": round(self.measure_seconds, 6),
            "details": self.details,
        }


def _threshold(db: TransactionDB, min_support: Any, min_count: Any) -> tuple[int, str | None]:
    if (min_support is None) == (min_count is None):
        raise HidingError("give exactly one of min_support (a fraction in (0, 1]) or min_count (an integer ≥ 1)")
    if min_support is not None:
        f = exact_fraction(min_support, "min_support")
        return min_count_for(f, db.n_transactions), str(min_support)
    if isinstance(min_count, (bool, np.bool_)) or not isinstance(min_count, (int, np.integer)) or min_count < 1:
        raise HidingError(f"min_count must be an integer ≥ 1 (got {min_count!r})")
    return int(min_count), None


def _validate(db: TransactionDB, patterns: list[SensitivePattern]) -> None:
    for p in patterns:
        pos = db.item_positions(list(p.items))
        if (pos < 0).any():
            bad = p.items[int(np.argmax(pos < 0))]
            raise HidingError(f"item {bad} of sensitive pattern '{p}' does not occur in the database")


def _positive_int(x: Any, name: str) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < 1:
        raise HidingError(f"{name} must be a positive integer (got {x!r})")
    return int(x)


def mined_in(db: TransactionDB, patterns: list[SensitivePattern], min_count: int, conf: Fraction | None) -> list[bool]:
    """Whether each pattern is mined from ``db`` (:func:`.patterns.is_mined`; confidence only for rules)."""
    sets = [list(p.items) for p in patterns] + [list(p.antecedent) for p in patterns if p.is_rule]
    cnt = count_support(db, sets) if sets else np.zeros(0, np.int64)
    out, j = [], len(patterns)
    for i, p in enumerate(patterns):
        xb = None
        if p.is_rule:
            xb, j = int(cnt[j]), j + 1
        out.append(is_mined(int(cnt[i]), xb, min_count, conf if p.is_rule else None))
    return out


def hide_db(
    db: TransactionDB,
    patterns: list[SensitivePattern],
    min_count: int,
    *,
    min_confidence: Fraction | None = None,
    algorithm: str = "heuristic",
    strategy: str | None = None,
    victim: str | None = None,
    psi: float | str | None = "auto",
    window: int = DEFAULT_WINDOW,
    seed: int | None = None,
    time_limit: float = 60.0,
    max_variables: int = MAX_VARIABLES,
    max_constraints: int = MAX_CONSTRAINTS,
    max_itemsets: int = MAX_ITEMSETS,
    progress: Callable[[str], None] | None = None,
    measure: bool = True,
) -> tuple[TransactionDB, HidingReport]:
    """Sanitize a :class:`TransactionDB` given validated patterns and an absolute threshold.

    The workhorse of :func:`hide` (which coerces inputs); see it for the parameters.
    """
    if algorithm not in ALGORITHMS:
        raise HidingError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
    if algorithm != "heuristic" and (strategy is not None or victim is not None):
        raise HidingError("strategy and victim apply to the heuristic algorithm only")
    if algorithm != "swa" and not (psi is None or psi == "auto"):
        raise HidingError("psi applies to the swa algorithm only")
    max_variables = _positive_int(max_variables, "max_variables")
    max_constraints = _positive_int(max_constraints, "max_constraints")
    max_itemsets = _positive_int(max_itemsets, "max_itemsets")
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float, np.integer, np.floating)):
        raise HidingError(f"time_limit must be a positive number of seconds (got {time_limit!r})")
    if not (0 < float(time_limit) < float("inf")):
        raise HidingError(f"time_limit must be a positive number of seconds (got {time_limit!r})")
    t0 = time.perf_counter()
    if progress:
        progress(f"mining {db.n_transactions:,} transactions at min count {min_count:,}")
    try:
        fi = frequent_itemsets(db, min_count=min_count, max_itemsets=max_itemsets)
    except ItemsetLimitExceeded as e:  # stopped as soon as the count passed the cap: seconds, bounded memory
        raise HidingError(
            f"too many frequent itemsets to hide against: mining stopped at {e.count:,} itemsets (at size "
            f"{e.level}) at min count {min_count:,}, over the cap of {e.limit:,}; raise --min-support, or "
            "--max-itemsets"
        ) from None
    mined = mined_in(db, patterns, min_count, min_confidence)
    live = [p for p, m in zip(patterns, mined) if m]
    already = [str(p) for p, m in zip(patterns, mined) if not m]
    if progress and already:
        progress(f"not mined from the input, left alone: {'; '.join(already)}")
    state = HidingState(db, min_count, live, fi, conf=min_confidence, seed=seed)
    params: dict[str, Any] = {"seed": seed}
    if algorithm == "heuristic":
        info = run_heuristic(state, live, strategy or "2a", victim, progress=progress)
        params.update(strategy=info["strategy"], victim=info["victim"])
    elif algorithm == "swa":
        info = run_swa(state, live, psi, window, progress=progress)
        params.update(psi=info["psi"], window=info["window"])
    elif algorithm == "border":
        info = run_border(state, live, progress=progress)
    else:
        info = run_exact(
            state,
            live,
            time_limit=time_limit,
            max_variables=max_variables,
            max_constraints=max_constraints,
            progress=progress,
        )
        params.update(time_limit=time_limit)
    # an edit made for one pattern can raise the confidence of a sensitive rule that was not mined
    # (deleting an item of its antecedent elsewhere): such a rule is hidden in turn, by the same
    # algorithm (exact: by border, the program being built for the patterns mined from D)
    resurfaced: list[str] = []
    for _ in range(4):
        up = [p for p in patterns if str(p) in already and pattern_mined(state, p)]
        if not up:
            break
        resurfaced += [str(p) for p in up if str(p) not in resurfaced]
        if progress:
            progress(f"hiding again, mined after the edits: {'; '.join(map(str, up))}")
        if algorithm == "heuristic":
            run_heuristic(state, up, strategy or "2a", victim)
        elif algorithm == "swa":
            run_swa(state, up, psi, window)
        else:
            run_border(state, up)
    if resurfaced:
        info = {**info, "resurfaced": resurfaced}
        already = [a for a in already if a not in resurfaced]
    out, stats = state.result()
    t1 = time.perf_counter()
    if measure:
        if progress:
            progress("measuring: mining the sanitized database")
        metrics = measure_hiding(db, out, patterns, min_count, min_confidence, frequent_before=fi)
    else:
        metrics = HidingMetrics()
    t2 = time.perf_counter()
    report = HidingReport(
        algorithm=algorithm,
        parameters=params,
        transactions=db.n_transactions,
        min_count=min_count,
        min_support=None,
        min_confidence=None if min_confidence is None else str(min_confidence),
        metrics=metrics,
        seconds=t1 - t0,
        measure_seconds=t2 - t1,
        details=info,
        already_hidden=already,
        **stats,
    )
    return out, report


def _like_input(data: Any, db: TransactionDB, out: TransactionDB) -> Any:
    if isinstance(data, TransactionDB) or isinstance(data, str) or hasattr(data, "__fspath__"):
        return out
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        pd = None
    if pd is not None and isinstance(data, pd.DataFrame):
        frame = out.to_onehot()[list(data.columns)]
        frame.index = data.index
        try:
            return frame.astype(data.dtypes.to_dict())
        except (TypeError, ValueError):  # pragma: no cover - exotic dtypes stay bool
            return frame
    return out.transactions()


def hide(
    data: Any,
    sensitive: Any,
    min_support: float | str | Fraction | None = None,
    *,
    min_count: int | None = None,
    min_confidence: float | str | Fraction | None = None,
    algorithm: str = "heuristic",
    strategy: str | None = None,
    victim: str | None = None,
    psi: float | str | None = "auto",
    window: int = DEFAULT_WINDOW,
    seed: int | None = None,
    time_limit: float = 60.0,
    max_variables: int = MAX_VARIABLES,
    max_constraints: int = MAX_CONSTRAINTS,
    max_itemsets: int = MAX_ITEMSETS,
    progress: Callable[[str], None] | None = None,
) -> tuple[Any, HidingReport]:
    """Hide sensitive itemsets and rules from a transaction database; return ``(sanitized, report)``.

    Parameters
    ----------
    data
        A :class:`~anonymize.itemsets.TransactionDB`, a FIMI file path, a list of
        transactions (lists of int ids) or a pandas one-hot DataFrame. Never modified;
        the sanitized data comes back in the same form (a path gives a TransactionDB).
    sensitive
        ``"1 2; 3 4 => 5"``, or a list of itemsets / strings / :class:`SensitivePattern`
        (with a labelled one-hot frame, itemsets may name columns).
    min_support, min_count
        Exactly one: a fraction in (0, 1] (frequent iff count ≥ ceil(min_support·N)) or
        an absolute count.
    min_confidence
        In (0, 1]: rules are mined only at this confidence, so a sensitive rule may be
        hidden by confidence, and rule side effects are measured.
    algorithm
        ``"heuristic"`` (Verykios et al. 2004), ``"swa"`` (Oliveira & Zaïane 2003),
        ``"border"`` (Sun & Yu 2005) or ``"exact"`` (Gkoulalas-Divanis & Verykios 2006).
    strategy, victim
        Heuristic only: ``"1a" "1b" "2a" "2b" "2c"`` and ``"min-side-effect"
        "max-support" "round-robin"`` (see :mod:`.heuristic`).
    psi, window
        SWA only: disclosure threshold ψ in [0, 1] or ``"auto"`` (largest ψ that hides),
        and the window size K.
    seed
        Seeds the random tie-break among equally good transactions (None: fresh
        entropy, so which equal-length transactions were edited is unpredictable).
    time_limit, max_variables, max_constraints
        Exact only: seconds per run, and the size guard.
    max_itemsets
        Every algorithm: the most frequent itemsets of D mined (default 1,000,000). Mining stops as
        soon as the count passes it — before the next level's candidates are built — and
        :class:`HidingError` says how many were reached at which size: raise ``min_support``.
    progress
        Called with one-line progress messages.
    """
    db = read_fimi(data) if isinstance(data, (str, os.PathLike)) else as_transaction_db(data)
    if db.n_transactions == 0 or db.indices.size == 0:
        raise HidingError("the database has no transactions with items")
    minc, sup_text = _threshold(db, min_support, min_count)
    conf = None if min_confidence is None else exact_fraction(min_confidence, "min_confidence")
    patterns = as_patterns(sensitive, labels=db.labels)
    _validate(db, patterns)
    out, report = hide_db(
        db,
        patterns,
        minc,
        min_confidence=conf,
        algorithm=algorithm,
        strategy=strategy,
        victim=victim,
        psi=psi,
        window=window,
        seed=seed,
        time_limit=time_limit,
        max_variables=max_variables,
        max_constraints=max_constraints,
        max_itemsets=max_itemsets,
        progress=progress,
    )
    report.min_support = sup_text
    if conf is not None:
        report.min_confidence = str(min_confidence)
    return _like_input(data, db, out), report
