"""``ppdm tune``: the k range, Algorithm 1's l and Algorithm 2's t for a disclosure bound, and the
trade-off tables behind them (Xu & Guo 2021, §3; :mod:`.selection`).

:func:`tune` evaluates, with one algorithm (default Flash, the optimal full-domain search):

* every k of a range (default 2 … 50) — one lattice sweep for Flash (:mod:`.ksweep`) — giving
  information loss and disclosure probability per k, and K_min, K_max and the chosen k;
* Algorithm 1 from the chosen k, every (k, l) it tries;
* Algorithm 2 on the release at the chosen k, every t step it tries.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...errors import AnonymizeError
from ..table import EncodedTable
from .evaluate import ReleaseEvaluator
from .measure import Candidate, PrivacyRequirement, QualityRequirement, k_min_for
from .selection import KSelection, LSelection, TSelection, l_upper_bound, select_k, select_l, select_t

__all__ = ["TuneResult", "tune", "default_k_values", "tradeoff_row"]


def default_k_values(pmax: float, n: int) -> list[int]:
    """k = 2 … max(50, 2·K_min), at most the number of rows."""
    top = max(50, 2 * k_min_for(pmax))
    return list(range(2, max(2, min(top, n)) + 1))


def tradeoff_row(c: Candidate, privacy: PrivacyRequirement, quality: QualityRequirement | None) -> dict:
    """One row of a trade-off table: the parameters, information loss (NCP, CDM) and disclosure
    probability of the release, and whether each requirement holds."""
    row = {**c.params, "ok": c.ok}
    if not c.ok:
        row["error"] = c.error
        return row
    row.update(
        {
            "ncp": c.ncp,
            "cdm": c.cdm,
            "disclosure": c.disclosure,
            "classes": c.classes,
            "suppressed": c.suppressed,
            "k_achieved": c.k_achieved,
            "l_achieved": c.l_achieved,
            "t_achieved": c.t_achieved,
            "privacy_ok": privacy.ok(c),
            "quality_ok": quality is None or quality.ok(c),
        }
    )
    return row


@dataclass
class TuneResult:
    """What :func:`tune` found (see :meth:`as_dict` for the JSON form ``ppdm tune --json`` prints)."""

    privacy: PrivacyRequirement
    quality: QualityRequirement | None
    algorithm: str
    k: KSelection
    l: LSelection | None
    t: TSelection | None
    table_rows: int
    quasi_identifiers: list
    sensitive: list
    timings: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)

    def k_table(self) -> list[dict]:
        """Trade-off rows, one per k evaluated."""
        return [tradeoff_row(c, self.privacy, self.quality) for _, c in sorted(self.k.candidates.items())]

    def l_table(self) -> list[dict]:
        """Trade-off rows of Algorithm 1's steps."""
        return [] if self.l is None else [tradeoff_row(c, self.privacy, self.quality) for c in self.l.steps]

    def t_table(self) -> list[dict]:
        """Trade-off rows of Algorithm 2's steps."""
        return [] if self.t is None else [tradeoff_row(c, self.privacy, self.quality) for c in self.t.steps]

    def as_dict(self) -> dict:
        """JSON-ready report: requirements, the chosen k / l / t with their ranges, the tables."""
        ks = self.k
        k_rel = ks.release
        out: dict = {
            "rows": self.table_rows,
            "quasi_identifiers": self.quasi_identifiers,
            "sensitive": self.sensitive,
            "algorithm": self.algorithm,
            "pmax": self.privacy.pmax,
            "quality": None if self.quality is None else self.quality.as_dict(),
            "k": {
                "kmin": ks.kmin,
                "kmax": ks.kmax,
                "kmax_capped": ks.kmax_capped,
                "chosen": ks.k,
                "rule": "kmin = ceil(1/pmax); kmax = largest k whose release meets the quality bound; "
                "chosen = kmin + (kmax - kmin) // 2 (kmin without a quality bound)",
                "meets_pmax": None if k_rel is None else self.privacy.ok(k_rel),
                "reason": ks.reason,
                "table": self.k_table(),
            },
        }
        if self.l is not None:
            out["l"] = {
                "k": self.l.k,
                "chosen": self.l.l,
                "ranges": {str(k): {"l_min": a, "l_max": b} for k, (a, b) in self.l.ranges.items()},
                "reason": self.l.reason,
                "table": self.l_table(),
            }
        if self.t is not None:
            out["t"] = {
                "k": self.t.k,
                "chosen": self.t.t,
                "d_min": self.t.d_min,
                "d_max": self.t.d_max,
                "step": self.t.step,
                "reason": self.t.reason,
                "table": self.t_table(),
            }
        out["timings"] = self.timings
        out["stats"] = self.stats
        return out


def tune(
    table: EncodedTable,
    privacy: PrivacyRequirement,
    quality: QualityRequirement | None = None,
    *,
    k_values: Sequence[int] | None = None,
    algorithm: str = "flash",
    max_suppression: float = 0.0,
    suppressed_rows: str = "star",
    t_distance: str = "emd",
    t_ground: str | None = None,
    options=None,
    progress: Callable[[str], None] | None = None,
) -> TuneResult:
    """Choose k, l and t for ``privacy`` (P ≤ P_max) and ``quality`` on ``table`` with ``algorithm``
    (module docstring). ``k_values`` — the k evaluated for the table (default
    :func:`default_k_values`). l and t need a sensitive attribute (skipped without one)."""
    t_all = time.perf_counter()
    if table.n < 2:
        raise AnonymizeError("the table needs at least 2 rows to tune k")
    ev = ReleaseEvaluator(
        table,
        algorithm,
        max_suppression=max_suppression,
        suppressed_rows=suppressed_rows,
        search_metric=quality.metric if quality is not None else "ncp",
        t_distance=t_distance,
        t_ground=t_ground,
        options=options,
        progress=progress,
    )
    ks = list(k_values) if k_values is not None else default_k_values(privacy.pmax, table.n)
    ks = [k for k in ks if 1 <= k <= table.n]
    if not ks:
        raise AnonymizeError(f"no k to evaluate between 1 and the table's {table.n} rows")
    timings = {}
    t = time.perf_counter()
    ksel = select_k(ev, privacy, quality, ks)
    timings["k"] = time.perf_counter() - t
    lsel = tsel = None
    if table.schema.sensitive and ksel.k is not None:
        if ev.honours("l-diversity"):
            t = time.perf_counter()
            if progress:
                progress(f"algorithm 1 (l) from k = {ksel.k}")
            lsel = select_l(ev, privacy, quality, ksel.k, ksel.kmax)
            timings["l"] = time.perf_counter() - t
        if ev.honours("t-closeness"):
            t = time.perf_counter()
            if progress:
                progress(f"algorithm 2 (t) at k = {ksel.k}")
            tsel = select_t(ev, privacy, quality, ksel.k, ksel.release)
            timings["t"] = time.perf_counter() - t
    elif table.schema.sensitive and ksel.k is None:
        lsel = LSelection(None, None, reason=f"no k to start from: {ksel.reason}")
        tsel = TSelection(None, None, reason=f"no k to start from: {ksel.reason}")
    timings["total"] = time.perf_counter() - t_all
    stats = {"algorithm_runs": ev.runs}
    if getattr(ev, "sweep_stats", None):
        stats["k_sweep"] = ev.sweep_stats
    if table.schema.sensitive and ksel.k is not None:
        stats["l_max_entropy_bound"] = l_upper_bound(table, table.n)
    return TuneResult(
        privacy,
        quality,
        ev.algorithm,
        ksel,
        lsel,
        tsel,
        table.n,
        list(table.schema.qis),
        list(table.schema.sensitive),
        timings,
        stats,
    )
