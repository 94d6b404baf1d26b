"""Disclosure probability, the privacy and quality requirements, and one measured release.

**Disclosure probability** (Xu & Guo, "Privacy protection model and parameter optimization method
for data dissemination", Computer Engineering 47(5):124–130, 2021, §3.1): the chance of inferring
an individual's sensitive value from the class she is linked to, measured as the share of the
most frequent sensitive value in the class,

    P(E) = max_s |{r ∈ E : r.S = s}| / |E|,      P(T) = max_E P(E)

(over every sensitive attribute). It is the α of (α, k)-anonymity (Wong, Li, Fu, Wang,
"(α, k)-anonymity: an enhanced k-anonymity model for privacy-preserving data publishing",
KDD 2006), which pycanon's ``alpha_k_anonymity`` measures. The data owner bounds it by
``P_max``. Since P(E) ≥ 1/|E|, a release with P ≤ P_max has classes of at least ⌈1/P_max⌉ rows —
the paper's eq. (1) with one repetition of the most frequent value, K_min = ⌈1/P_max⌉ (the
equation itself is an image missing from the text we have; its prose gives the ratio above).

**Quality** (the data user's requirement, a bound Q on a loss that grows as data get coarser):

* ``cdm`` — CDM = Σ_E |E|² / N over the N released classes: this project's reconstruction of the
  paper's CDM (its formula is missing from the text; see :data:`..metrics.CDM_DEFINITION`);
* ``ncp`` — the normalized information loss of every QI cell in [0, 1] (numeric range ratio,
  categorical hierarchy-height ratio, suppressed cells 1): Jiang, Zeng, Ma, "Greedy
  clustering-anonymity method for privacy preservation of table data-publishing", Journal of
  Software 28(2):341–351, 2017, §2.2, divided by n·d (:func:`..metrics.ncp`).

A :class:`Candidate` is one release an algorithm produced for one set of parameters, measured
once with all of the above (:func:`measure_candidate`).

**Suppressed rows** are measured as they are released (``suppressed_rows``, as ``ppdm anonymize
--suppressed-rows``): ``'star'`` — one more class with ``*`` in every QI, judged like the others;
``'drop'`` — left out; ``'arx'`` — written as ``*`` like ``'star'`` but, with ARX's outlier semantics,
**not judged**: k, l, t and P are those of the classes outside the ``*`` group (t against the whole
table's distribution), exactly the ``achieved`` of ``ppdm anonymize --suppressed-rows arx``, and the
group's own verdict is :func:`..metrics.suppressed_group.suppressed_group` (``Candidate.suppressed_group``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...errors import AnonymizeError
from .. import metrics as M
from ..classes import ClassStats, class_stats, equivalence_classes
from ..distances import t_distances
from ..fulldomain.privacy import ARX
from ..hierarchy import canonical_strings
from ..metrics.attack_resistance import attack_resistance
from ..metrics.suppressed_group import suppressed_group
from ..recode import SUPPRESSED_ROWS
from ..table import EncodedTable

__all__ = [
    "FAMILIES",
    "QUALITY_METRICS",
    "SUPPRESSED_ROWS_MODES",
    "ARX_SCOPE",
    "check_suppressed_rows",
    "measured_on",
    "star_rows",
    "Candidate",
    "PrivacyRequirement",
    "QualityRequirement",
    "class_disclosure",
    "measure_candidate",
    "k_min_for",
    "disclosure_floor",
    "frame_classes",
    "frame_disclosure",
]

FAMILIES = ("k-anonymity", "l-diversity", "t-closeness")
"""The privacy-model families of the security-level model, weakest first (Xu & Guo 2021, Table 1)."""

QUALITY_METRICS = ("ncp", "cdm")
"""Quality measures a data user may bound (module docstring)."""

SUPPRESSED_ROWS_MODES = (*SUPPRESSED_ROWS, ARX)
"""How suppressed rows are released and judged: ``star``, ``drop`` or ``arx`` (module docstring)."""

ARX_SCOPE = (
    "the classes outside the * group of suppressed rows (ARX semantics: the group is written but not judged; "
    "k, l, t and P are those of the other classes, t against the whole table; suppressed_group says which models "
    "the * group breaks)"
)
"""What ``--suppressed-rows arx`` means for the figures ``ppdm tune`` / ``ppdm publish`` report."""


def check_suppressed_rows(mode: str) -> str:
    """``mode`` if it is one of :data:`SUPPRESSED_ROWS_MODES`, else a one-line :class:`AnonymizeError`."""
    if mode not in SUPPRESSED_ROWS_MODES:
        raise AnonymizeError(f"unknown handling of suppressed rows '{mode}' (use {', '.join(SUPPRESSED_ROWS_MODES)})")
    return mode


def measured_on(suppressed_rows: str) -> str:
    """Which classes the privacy figures (k, l, t, P) of a release describe, for each handling of
    suppressed rows (what ``ppdm tune`` and ``ppdm publish`` print and record as ``measured_on``)."""
    if check_suppressed_rows(suppressed_rows) == ARX:
        return ARX_SCOPE
    if suppressed_rows == "drop":
        return "the classes written (suppressed rows are left out of the release)"
    return "every class written, the * class of suppressed rows included (judged like any class)"


def star_rows(df: pd.DataFrame, qis) -> np.ndarray:
    """Mask of the rows of a written table with ``*`` in every quasi-identifier — the group of
    suppressed rows that ``'star'`` and ``'arx'`` write (what a reader removes to see the classes
    ``'arx'`` judges)."""
    if len(df) == 0 or not len(qis):
        return np.zeros(len(df), dtype=bool)
    return np.asarray((df[list(qis)].astype(str) == "*").all(axis=1), dtype=bool)


def k_min_for(pmax: float) -> int:
    """K_min = ⌈1/P_max⌉: the smallest class size compatible with disclosure probability ≤ P_max
    (P(E) ≥ 1/|E|; Xu & Guo 2021, eq. (1) with one repetition)."""
    if not 0.0 < pmax <= 1.0:
        raise AnonymizeError(f"pmax must be in (0, 1], got {pmax:g}")
    return max(1, int(math.ceil(1.0 / pmax - 1e-9)))


def class_disclosure(stats: ClassStats) -> np.ndarray:
    """P(E) per class: the largest share of one sensitive value, over every sensitive attribute
    (0 for empty classes; 1/|E| lower bound when the table has no sensitive attribute: the
    chance of picking the target's row from its class)."""
    sizes = np.asarray(stats.sizes, dtype=np.float64)
    denom = np.where(sizes > 0, sizes, 1.0)
    if not stats.sens_hist:
        return np.where(sizes > 0, 1.0 / denom, 0.0)
    p = np.zeros(len(sizes))
    for hist in stats.sens_hist:
        if hist.shape[1]:
            p = np.maximum(p, hist.max(axis=1) / denom)
    return p


def disclosure_floor(table: EncodedTable, max_suppressed: int = 0, drop: bool = False) -> tuple[float, str, str]:
    """The smallest disclosure probability any release of ``table`` can have, with the value that
    forces it: ``(p, attribute, value)``.

    The released rows are split into classes, so some class holds value v at least at v's share of
    the released rows (a weighted mean never exceeds its largest term): P ≥ n_v / n for every v.
    When up to ``max_suppressed`` rows are left out of the release or out of its measurement
    (``drop``: suppressed rows dropped, or ``'arx'``: their ``*`` group not judged), at best they are
    rows of v: P ≥ (n_v − d) / (n − d). Suppressed rows released and judged as one ``*`` class
    (``'star'``) stay in the release and change nothing."""
    best = (0.0, "", "")
    d = max_suppressed if drop else 0
    for j, name in enumerate(table.schema.sensitive):
        counts = np.bincount(table.sens_codes[:, j], minlength=len(table.sens_values[j]))
        v = int(np.argmax(counts))
        kept = table.n - d
        p = max(int(counts[v]) - d, 0) / kept if kept > 0 else 0.0
        if p > best[0]:
            best = (float(p), str(name), str(table.sens_values[j][v]))
    return best


@dataclass(frozen=True)
class PrivacyRequirement:
    """The data owner's requirement, checked on every release: disclosure probability ≤ ``pmax``,
    and optionally a smallest class size ``k``, a distinct ``l`` and a largest ``t`` (as measured on
    the release, whatever model produced it)."""

    pmax: float
    k: int | None = None
    l: int | None = None
    t: float | None = None

    def violations(self, c: Candidate) -> list[str]:
        """What the release misses, one phrase each (empty when it meets the requirement)."""
        if not c.ok:
            return [c.error or "no release"]
        out = []
        if c.disclosure > self.pmax + 1e-12:
            out.append(f"P = {c.disclosure:.4g} > {self.pmax:g}")
        if self.k is not None and c.k_achieved < self.k:
            out.append(f"k = {c.k_achieved} < {self.k}")
        if self.l is not None and c.l_achieved < self.l:
            out.append(f"l = {c.l_achieved} < {self.l}")
        if self.t is not None and c.t_achieved > self.t + 1e-9:
            out.append(f"t = {c.t_achieved:.4g} > {self.t:g}")
        return out

    def ok(self, c: Candidate) -> bool:
        """The release meets every part of the requirement."""
        return c.ok and not self.violations(c)

    def text(self) -> str:
        """E.g. ``'P <= 0.25, l >= 3'``."""
        parts = [f"P <= {self.pmax:g}"]
        if self.k is not None:
            parts.append(f"k >= {self.k}")
        if self.l is not None:
            parts.append(f"l >= {self.l}")
        if self.t is not None:
            parts.append(f"t <= {self.t:g}")
        return ", ".join(parts)

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return {"pmax": self.pmax, "k": self.k, "l": self.l, "t": self.t}


@dataclass(frozen=True)
class QualityRequirement:
    """The data user's requirement: ``metric`` (``'ncp'`` or ``'cdm'``) of the release ≤ ``bound``."""

    metric: str
    bound: float

    def __post_init__(self):
        if self.metric not in QUALITY_METRICS:
            raise AnonymizeError(f"unknown quality metric '{self.metric}' (use {' or '.join(QUALITY_METRICS)})")
        if not (self.bound >= 0 and math.isfinite(self.bound)):
            raise AnonymizeError(f"quality bound must be a non-negative number, got {self.bound}")
        if self.metric == "ncp" and self.bound > 1:
            raise AnonymizeError(f"an NCP bound above 1 constrains nothing (NCP is in [0, 1]), got {self.bound:g}")

    def value(self, c: Candidate) -> float:
        """The release's value of the metric."""
        return c.quality(self.metric)

    def ok(self, c: Candidate) -> bool:
        """The release is within the bound."""
        return c.ok and self.value(c) <= self.bound * (1 + 1e-12) + 1e-12

    def text(self) -> str:
        """E.g. ``'NCP <= 0.4'``."""
        return f"{self.metric.upper()} <= {self.bound:g}"

    def as_dict(self) -> dict:
        """JSON-ready form (with the definition of CDM when it is the metric)."""
        out: dict = {"metric": self.metric, "bound": self.bound}
        if self.metric == "cdm":
            out["definition"] = M.CDM_DEFINITION
        return out


@dataclass
class Candidate:
    """One release an algorithm produced for one set of parameters, measured.

    ``ok`` false (with ``error``) when the algorithm found no release for these parameters.
    ``disclosure`` — P(T); ``ncp`` and ``cdm`` — quality (module docstring); ``k_achieved`` /
    ``l_achieved`` / ``t_achieved`` — smallest class, fewest distinct sensitive values in a class,
    largest t-distance of a class (the model's distance); ``sizes`` — released class sizes (the
    ``*`` class of suppressed rows included when it is released); ``class_distances`` — each
    released class's t-distance (what Algorithm 2 steps through); ``levels`` — full-domain levels.
    With ``suppressed_rows='arx'`` every privacy figure is that of the classes outside the ``*`` group
    and ``suppressed_group`` says what the group breaks (:func:`..metrics.suppressed_group.suppressed_group`;
    None in the other modes).
    """

    algorithm: str
    family: str
    params: dict
    ok: bool = True
    error: str | None = None
    ncp: float = float("nan")
    cdm: float = float("nan")
    dm: float = float("nan")
    disclosure: float = float("nan")
    classes: int = 0
    suppressed: int = 0
    k_achieved: int = 0
    l_achieved: int = 0
    t_achieved: float = float("nan")
    #: t of eq. (1) in Xu & Guo: the most rows sharing one sensitive value in the class whose P is largest
    repetitions: int = 0
    #: :func:`..metrics.attack_resistance.attack_resistance` of the release (classes as released)
    attack_resistance: dict | None = field(default=None, repr=False)
    levels: dict | None = None
    sizes: np.ndarray | None = field(default=None, repr=False)
    class_distances: np.ndarray | None = field(default=None, repr=False)
    seconds: float = 0.0
    #: ``suppressed_rows='arx'``: the ``*`` group's size and per model whether it holds (it is not judged)
    suppressed_group: dict | None = None

    def quality(self, metric: str) -> float:
        """The value of a quality metric (:data:`QUALITY_METRICS`)."""
        if metric == "ncp":
            return self.ncp
        if metric == "cdm":
            return self.cdm
        raise AnonymizeError(f"unknown quality metric '{metric}' (use {' or '.join(QUALITY_METRICS)})")

    def label(self) -> str:
        """E.g. ``'l-diversity k=7 l=5 (flash)'``."""
        ps = " ".join(f"{k}={_num(v)}" for k, v in self.params.items())
        return f"{self.family} {ps} ({self.algorithm})"

    def as_dict(self) -> dict:
        """JSON-ready summary (no per-class arrays)."""
        out = {
            "algorithm": self.algorithm,
            "model": self.family,
            "parameters": dict(self.params),
            "ok": self.ok,
        }
        if not self.ok:
            out["error"] = self.error
            return out
        out.update(
            {
                "ncp": self.ncp,
                "cdm": self.cdm,
                "dm": self.dm,
                "disclosure": self.disclosure,
                "classes": self.classes,
                "suppressed": self.suppressed,
                "k": self.k_achieved,
                "l": self.l_achieved,
                "t": self.t_achieved,
                "levels": self.levels,
            }
        )
        if self.suppressed_group is not None:
            out["suppressed_group"] = self.suppressed_group
        return out


def _num(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def measure_candidate(
    table: EncodedTable,
    class_id: np.ndarray,
    n_classes: int,
    suppressed: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    *,
    suppressed_rows: str = "star",
    t_distance: str = "emd",
    t_ground: str | None = None,
    models=None,
) -> dict:
    """Measure a release given as a class per row, the suppressed rows and each row's released cell
    ``[lo, hi]``: the fields of :class:`Candidate` as a dict.

    Suppressed rows are measured as released: with ``'star'`` one more class (``*`` in every QI)
    compared with the whole table's distribution; with ``'drop'`` left out, the classes compared with
    the distribution of the rows kept (what :meth:`.fulldomain.Lattice.release_check` and ``ppdm
    check`` do); with ``'arx'`` written as ``*`` but not judged (ARX's outliers): the classes outside
    the ``*`` group compared with the whole table's distribution — the ``achieved`` of
    :func:`..metrics.suppressed_group.achieved_outside_group` — and, given the release's ``models``,
    ``suppressed_group`` (:func:`..metrics.suppressed_group.suppressed_group`: what the group breaks).
    NCP and CDM are those of the anonymization report (:func:`..metrics.ncp`, :func:`..metrics.cdm`
    over the non-suppressed classes)."""
    check_suppressed_rows(suppressed_rows)
    sup = np.asarray(suppressed, dtype=bool)
    cid = np.asarray(class_id, dtype=np.int64)
    keep = ~sup
    kept_sizes = np.bincount(cid[keep], minlength=n_classes)
    rows = None
    nc = n_classes
    if sup.any():
        if suppressed_rows == "star":
            cid = np.where(sup, n_classes, cid)
            nc += 1
        else:
            rows = keep
    stats = class_stats(table, cid, nc, rows=rows)
    stats = stats.select(stats.sizes > 0)
    if rows is not None and stats.sens_hist and suppressed_rows == "drop":  # 'arx': the whole table's, as ARX
        ref = [h.sum(axis=0) / max(int(h.sum()), 1) for h in stats.sens_hist]
        stats = ClassStats(stats.sizes, stats.sens_hist, ref, table)
    disc = class_disclosure(stats)
    dist = np.zeros(stats.n_classes)
    for j in range(len(stats.sens_hist)):
        dist = np.maximum(dist, t_distances(stats, j, t_distance, t_ground))
    l_ach = 0
    if stats.sens_hist and stats.n_classes:
        l_ach = int(min(int((h > 0).sum(axis=1).min()) for h in stats.sens_hist))
    n_sup = int(sup.sum())
    reps = 0
    if len(disc) and stats.sens_hist:
        worst = int(np.argmax(disc))
        reps = int(max(int(h[worst].max()) if h.shape[1] else 0 for h in stats.sens_hist))
    resistance = attack_resistance(stats.sizes, [(h > 0).sum(axis=1) for h in stats.sens_hist])
    group = None
    if suppressed_rows == ARX and models is not None:
        group = suppressed_group(table, np.asarray(class_id, dtype=np.int64), n_classes, sup, list(models))
    return {
        "ncp": M.ncp(table, lo, hi, sup)["ncp"],
        "repetitions": reps,
        "attack_resistance": resistance,
        "cdm": M.cdm(kept_sizes),
        "dm": M.discernibility(kept_sizes, n_sup, table.n),
        "disclosure": float(disc.max()) if len(disc) else 0.0,
        "classes": int((kept_sizes > 0).sum()),
        "suppressed": n_sup,
        "k_achieved": int(stats.sizes.min()) if stats.n_classes else 0,
        "l_achieved": l_ach,
        "t_achieved": float(dist.max()) if len(dist) else 0.0,
        "sizes": np.asarray(stats.sizes, dtype=np.int64),
        "class_distances": dist,
        "suppressed_group": group,
    }


def frame_classes(df: pd.DataFrame, qis, sensitive) -> tuple[np.ndarray, np.ndarray]:
    """Classes of a table *as released* (identical written QI values, ``*`` included): ``(sizes,
    disclosure)`` per class, the disclosure P(E) over every sensitive attribute (module docstring)."""
    if len(df) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    codes = np.column_stack([pd.factorize(canonical_strings(df[c]))[0] for c in qis])
    cid, nc = equivalence_classes(codes)
    sizes = np.bincount(cid, minlength=nc)
    hists = []
    for s in sensitive:
        sc, vals = pd.factorize(canonical_strings(df[s]))
        V = len(vals)
        hists.append(np.bincount(cid * V + sc, minlength=nc * V).reshape(nc, V))
    return sizes, class_disclosure(ClassStats(sizes, hists, [], None))


def frame_disclosure(df: pd.DataFrame, qis, sensitive) -> float:
    """P of a table as released: the largest share of one sensitive value in a class of identical
    written QI values (pycanon's α of (α, k)-anonymity)."""
    _, d = frame_classes(df, qis, sensitive)
    return float(d.max()) if len(d) else 0.0
