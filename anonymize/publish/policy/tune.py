"""``ppdm tune``: the k range, Algorithm 1's l and Algorithm 2's t for a disclosure bound, and the
trade-off tables behind them (Xu & Guo 2021, §3; :mod:`.selection`).

:func:`tune` evaluates, with one algorithm (default Flash, the optimal full-domain search):

* every k of a range (default 2 … 50) — one lattice sweep for Flash (:mod:`.ksweep`) — giving
  information loss and disclosure probability per k, and K_min, K_max and the chosen k;
* Algorithm 1 from the chosen k, every (k, l) it tries;
* Algorithm 2 on the release at the chosen k, every t step it tries.

Every release is made and measured with one handling of suppressed rows (``suppressed_rows``, as
``ppdm anonymize --suppressed-rows``): with ``'arx'`` (ARX's outliers) the ``*`` group is not judged —
k, l, t and P, and so K_min, K_max and Algorithms 1 and 2, are those of the classes outside it — and
every release says what the group breaks (``suppressed_group``; :func:`suppressed_group_text`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import AnonymizeError
from ..table import EncodedTable
from .evaluate import ReleaseEvaluator
from .measure import (
    Candidate,
    PrivacyRequirement,
    QualityRequirement,
    check_suppressed_rows,
    k_min_for,
    measured_on,
)
from .selection import KSelection, LSelection, TSelection, l_upper_bound, select_k, select_l, select_t

__all__ = [
    "TuneResult",
    "tune",
    "default_k_values",
    "tradeoff_row",
    "parameter_curve",
    "sweep_qi",
    "sweep_methods",
    "suppressed_group_text",
]


def default_k_values(pmax: float, n: int) -> list[int]:
    """k = 2 … max(50, 2·K_min), at most the number of rows."""
    top = max(50, 2 * k_min_for(pmax))
    return list(range(2, max(2, min(top, n)) + 1))


def tradeoff_row(c: Candidate, privacy: PrivacyRequirement, quality: QualityRequirement | None) -> dict:
    """One row of a trade-off table: the parameters, information loss (NCP, CDM) and disclosure
    probability of the release, whether each requirement holds, the full-domain levels (None for other
    algorithms) and, with ``suppressed_rows='arx'``, what the ``*`` group breaks (``suppressed_group``)."""
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
            "levels": c.levels,
        }
    )
    if c.suppressed_group is not None:
        row["suppressed_group"] = c.suppressed_group
    return row


def suppressed_group_text(group: dict | None) -> str:
    """One phrase on the ``*`` group of a release made with ``suppressed_rows='arx'`` (``group`` is
    :attr:`.measure.Candidate.suppressed_group`): its size, that it is not judged, and what it breaks."""
    if group is None:
        return "no verdict on the * group"
    rows = int(group["rows"])
    if rows == 0:
        return "no * group (nothing suppressed)"
    if group["breaks"]:
        return f"the * group of {rows:,} rows is not judged and breaks {', '.join(group['breaks'])}"
    return f"the * group of {rows:,} rows is not judged and would meet every model"


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
    l_curve: list = field(default_factory=list)
    #: the lowest P any release without suppression can have: the largest share of one sensitive value in
    #: the whole table (a class's share averages to it over the classes, so some class reaches it)
    p_floor: float | None = None
    p_floor_value: str | None = None
    #: how every release made and measured its suppressed rows (``'star'``, ``'drop'`` or ``'arx'``)
    suppressed_rows: str = "star"
    #: the fraction of rows the full-domain algorithms could suppress
    max_suppression: float = 0.0

    def pmax_notes(self) -> list[str]:
        """What the data owner should know about ``pmax`` before any k: it bounds nothing (``pmax ≥ 1``), or
        no release without suppression can meet it (``pmax`` below :attr:`p_floor`)."""
        pmax = self.privacy.pmax
        if pmax >= 1:
            return [
                "pmax = 1 bounds nothing: every release meets it, the table itself included (k = 1); "
                "give the disclosure probability you accept, e.g. --pmax 0.5"
            ]
        if self.p_floor is not None and pmax < self.p_floor - 1e-12:
            return [
                f"pmax = {pmax:g} cannot be met by generalization: {self.p_floor:.4g} of the rows share "
                f"{self.p_floor_value}, and however the rows are grouped some class holds at least that share "
                f"(one class of everything is the best case); accept pmax >= {self.p_floor:.4g}, or suppress rows"
            ]
        return []

    def measured_on(self) -> str:
        """Which classes the privacy figures (k, l, t, P) of every release describe (:func:`.measure.measured_on`)."""
        return measured_on(self.suppressed_rows)

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
            "pmax_floor": self.p_floor,
            "pmax_feasible": None if self.p_floor is None else self.privacy.pmax >= self.p_floor - 1e-12,
            "pmax_notes": self.pmax_notes(),
            "quality": None if self.quality is None else self.quality.as_dict(),
            "max_suppression": self.max_suppression,
            "suppressed_rows": self.suppressed_rows,
            "measured_on": self.measured_on(),
            "k": {
                "kmin": ks.kmin,
                "kmin_bound": ks.kmin_bound,
                "repetitions": ks.repetitions,
                "kmin_note": ks.kmin_note,
                "kmax": ks.kmax,
                "kmax_capped": ks.kmax_capped,
                "chosen": ks.k,
                "rule": "kmin = the smallest k >= ceil(1/pmax) whose k-anonymous release has P = t/|E| <= pmax "
                "(eq. 1, t the repetitions of a sensitive value in a class, measured); kmax = largest k whose release meets the quality bound; "
                "chosen = kmin + (kmax - kmin) // 2 (kmin without a quality bound)",
                "meets_pmax": None if k_rel is None else self.privacy.ok(k_rel),
                "reason": ks.reason,
                "table": self.k_table(),
            },
        }
        if self.suppressed_rows == "arx":
            out["k"]["suppressed_group"] = None if k_rel is None else k_rel.suppressed_group
        if self.l is not None:
            out["l"] = {
                "k": self.l.k,
                "chosen": self.l.l,
                "ranges": {str(k): {"l_min": a, "l_max": b} for k, (a, b) in self.l.ranges.items()},
                "reason": self.l.reason,
                "table": self.l_table(),
                "curve_k": self.l_curve[0].params["k"] if self.l_curve else None,
                "curve": [tradeoff_row(c, self.privacy, self.quality) for c in self.l_curve],
            }
            if self.suppressed_rows == "arx":
                rel = self.l.release
                out["l"]["suppressed_group"] = None if rel is None else rel.suppressed_group
        if self.t is not None:
            out["t"] = {
                "k": self.t.k,
                "chosen": self.t.t,
                "d_min": self.t.d_min,
                "d_max": self.t.d_max,
                "step": self.t.step,
                "no_constraint_beyond_k": self.t.t is not None and self.t.t >= self.t.d_max,
                "reason": self.t.reason,
                "table": self.t_table(),
            }
            if self.suppressed_rows == "arx":
                rel = self.t.release
                out["t"]["suppressed_group"] = None if rel is None else rel.suppressed_group
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
    :func:`default_k_values`). l and t need a sensitive attribute (skipped without one).
    ``suppressed_rows`` — ``'star'``, ``'drop'`` or ``'arx'`` for every release (module docstring)."""
    check_suppressed_rows(suppressed_rows)
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
    l_curve: list = []
    if table.schema.sensitive and ksel.k is not None:
        if ev.honours("l-diversity"):
            t = time.perf_counter()
            if progress:
                progress(f"algorithm 1 (l) from k = {ksel.k}")
            lsel = select_l(ev, privacy, quality, ksel.k, ksel.kmax)
            # the whole l trade-off at the chosen k (Algorithm 1 stops at its first success)
            top = min(l_upper_bound(table, table.n), 20)
            l_curve = [ev.evaluate("l-diversity", {"k": ksel.k, "l": l}) for l in range(1, top + 1)]
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
    stats: dict[str, Any] = {"algorithm_runs": ev.runs}
    if getattr(ev, "sweep_stats", None):
        stats["k_sweep"] = ev.sweep_stats
    if table.schema.sensitive and ksel.k is not None:
        stats["l_max_entropy_bound"] = l_upper_bound(table, table.n)
    p_floor = p_value = None
    if table.schema.sensitive:
        shares = [(float(d.max()), j, int(d.argmax())) for j, d in enumerate(table.global_dist())]
        p_floor, j, v = max(shares)
        p_value = f"{table.schema.sensitive[j]} = {table.sens_values[j][v]!r}"
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
        l_curve,
        p_floor,
        p_value,
        suppressed_rows,
        float(max_suppression),
    )


def parameter_curve(
    table: EncodedTable,
    algorithm: str,
    models,
    *,
    max_suppression: float = 0.0,
    suppressed_rows: str = "star",
    metric: str = "ncp",
    options=None,
    progress: Callable[[str], None] | None = None,
) -> tuple[str, list[Candidate]]:
    """The trade-off of one anonymization run around its parameters — what ``ppdm anonymize --plot``
    draws: the strongest model's parameter (t if t-closeness is asked for, else l, else k) over a
    grid holding the other models fixed, each value's release measured. Returns ``(parameter,
    releases)``.

    Grids: k = 2 … max(2k, 20) (every k for Flash / Incognito, one lattice sweep; ~12 values spread
    geometrically for other algorithms); l = 1 … min(max(2l, l + 4), distinct values); t = 0.1, 0.2, … 1
    and the given t."""
    import numpy as np

    from ..models import (
        DistinctLDiversity,
        EntropyLDiversity,
        KAnonymity,
        PrivacyModel,
        RecursiveCLDiversity,
        TCloseness,
    )

    models = list(models)
    t_model = next((m for m in models if isinstance(m, TCloseness)), None)
    l_model = next(
        (m for m in models if isinstance(m, (DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity))), None
    )
    k_model = next((m for m in models if isinstance(m, KAnonymity)), None)
    ev = ReleaseEvaluator(
        table,
        algorithm,
        max_suppression=max_suppression,
        suppressed_rows=suppressed_rows,
        search_metric=metric,
        t_distance=t_model.distance if t_model else "emd",
        t_ground=t_model.ground if t_model else None,
        options=options,
        progress=progress,
    )
    k = k_model.k if k_model else 1
    others = [m for m in models if m is not t_model and m is not l_model and m is not k_model]

    def run(family, params, swap_in):
        ms = [KAnonymity(params["k"])] if params.get("k", 1) > 1 else []
        ms += [m for m in (l_model, t_model) if m is not None and m is not swap_in.get("replaces")]
        ms += [swap_in["model"]] if swap_in.get("model") is not None else []
        return ev.evaluate(family, params, models=ms + others or [KAnonymity(1)])

    if t_model is not None:
        values = sorted({round(x, 2) for x in np.arange(0.1, 1.0001, 0.1)} | {t_model.t})
        out = []
        for t in values:
            tm: PrivacyModel = TCloseness(
                t, distance=t_model.distance, ground=t_model.ground, attribute=t_model.attribute
            )
            out.append(run("t-closeness", {"k": k, "t": t}, {"replaces": t_model, "model": tm}))
        return "t", out
    if l_model is not None:
        distinct = min(len(np.unique(table.sens_codes[:, j])) for j in table.sens_index(l_model.attribute))
        top = int(min(max(2 * l_model.l, l_model.l + 4), distinct))
        values = sorted({float(x) for x in range(1, top + 1)} | {float(l_model.l)})
        out = []
        for l in values:
            nm: PrivacyModel
            if isinstance(l_model, RecursiveCLDiversity):
                nm = RecursiveCLDiversity(l_model.c, int(l), attribute=l_model.attribute)
            elif isinstance(l_model, EntropyLDiversity):
                nm = EntropyLDiversity(l, attribute=l_model.attribute)
            else:
                nm = DistinctLDiversity(int(l), attribute=l_model.attribute)
            out.append(run("l-diversity", {"k": k, "l": l}, {"replaces": l_model, "model": nm}))
        return "l", out
    top = min(max(2 * k, 20), table.n)
    if ev.algorithm in ("flash", "incognito") and not others:
        cands = ev.evaluate_k(range(2, top + 1))
        return "k", [cands[x] for x in sorted(cands)]
    grid = sorted({int(x) for x in np.unique(np.round(np.geomspace(2, max(top, 2), 12)))} | {k} if top >= 2 else {k})
    return "k", [run("k-anonymity", {"k": x}, {}) for x in grid]


def sweep_qi(
    df,
    qis: Sequence[str],
    sensitive: Sequence[str],
    hierarchies,
    methods: Sequence[tuple[str, dict]],
    *,
    algorithm: str = "flash",
    max_suppression: float = 0.0,
    suppressed_rows: str = "star",
    t_distance: str = "emd",
    t_ground: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict]:
    """The curse of dimensionality made visible (C. C. Aggarwal, *Data Mining: The Textbook*, Springer
    2015, §20.3.4; Xu & Guo 2021, Fig. 6): the quasi-identifiers are added one at a time, in the order
    given, and for each prefix every method in ``methods`` — ``(family, params)``, e.g. ``("l-diversity",
    {"k": 5, "l": 3})`` — is run with ``algorithm`` and measured: information loss (NCP, CDM), disclosure
    probability, classes, suppressed rows, and the share of classes that cannot resist a linkage,
    homogeneity or background-knowledge attack (:mod:`..metrics.attack_resistance`).

    One row per (prefix, method): ``{"qis", "n_qis", "model", "parameters", "ok", "ncp", "cdm",
    "disclosure", "classes", "suppressed", "attack_resistance"}`` (``error`` instead when no release);
    with ``suppressed_rows='arx'`` the figures are those of the classes outside the ``*`` group and
    ``suppressed_group`` says what the group breaks."""
    from ..table import EncodedTable, Schema

    rows: list[dict] = []
    qis = list(qis)
    for i in range(1, len(qis) + 1):
        prefix = qis[:i]
        table = EncodedTable.encode(df, Schema(prefix, list(sensitive)), hierarchies)
        ev = ReleaseEvaluator(
            table,
            algorithm,
            max_suppression=max_suppression,
            suppressed_rows=suppressed_rows,
            t_distance=t_distance,
            t_ground=t_ground,
        )
        for family, params in methods:
            if progress:
                progress(f"sweep: {i} of {len(qis)} QIs, {family} {params}")
            if not ev.honours(family):
                raise AnonymizeError(f"{algorithm} cannot honour {family}: choose another --algorithm for the sweep")
            c = ev.evaluate(family, dict(params))
            row: dict[str, Any] = {
                "qis": prefix,
                "n_qis": i,
                "model": family,
                "parameters": dict(params),
                "ok": c.ok,
            }
            if c.ok:
                row.update(
                    {
                        "ncp": c.ncp,
                        "cdm": c.cdm,
                        "disclosure": c.disclosure,
                        "classes": c.classes,
                        "suppressed": c.suppressed,
                        "attack_resistance": c.attack_resistance,
                    }
                )
                if c.suppressed_group is not None:
                    row["suppressed_group"] = c.suppressed_group
            else:
                row["error"] = c.error
            rows.append(row)
    return rows


def sweep_methods(result: TuneResult) -> list[tuple[str, dict]]:
    """The methods a ``--sweep-qi`` compares: k-anonymity at the chosen k, l-diversity at Algorithm 1's
    (k, l) and t-closeness at Algorithm 2's t (each only when the tune chose it)."""
    out: list[tuple[str, dict]] = []
    if result.k.k is not None:
        out.append(("k-anonymity", {"k": result.k.k}))
    if result.l is not None and result.l.l is not None:
        out.append(("l-diversity", {"k": result.l.k, "l": result.l.l}))
    if result.t is not None and result.t.t is not None:
        out.append(("t-closeness", {"k": result.t.k if result.t.k is not None else result.k.k, "t": result.t.t}))
    return out
