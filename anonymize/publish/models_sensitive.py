"""Privacy models on the sensitive-value frequencies of a class: β-likeness, δ-disclosure privacy
and (α,k)-anonymity (as ARX and pycanon have them).

Like every model of :mod:`.models` they are vectorized predicates over :class:`.classes.ClassStats`
(``(C, V)`` histograms, no per-class loop) that describe themselves to the algorithms. Notation:
``p_v`` is the table's frequency of sensitive value ``v`` (``ClassStats.global_dist``), ``q_v`` a
class's.

* :class:`BetaLikeness` — J. Cao, P. Karras, "Publishing microdata with a robust privacy
  guarantee", PVLDB 2012: *basic* β-likeness bounds the relative gain
  ``(q_v − p_v)/p_v ≤ β`` of every value with ``q_v > p_v``; *enhanced* β-likeness bounds it by
  ``min(β, −ln p_v)``.
* :class:`DeltaDisclosure` — J. Brickell, V. Shmatikov, "The cost of privacy: destruction of
  data-mining utility in anonymized data publishing", KDD 2008: ``|ln(q_v/p_v)| < δ`` for every
  value, so every value of the table must occur in every class.
* :class:`AlphaKAnonymity` — R. C.-W. Wong, J. Li, A. W.-C. Fu, K. Wang, "(α, k)-anonymity: an
  enhanced k-anonymity model for privacy preserving data publishing", KDD 2006: every class has
  ≥ k rows and ``q_v ≤ α`` for every value.

**The table distribution** ``p`` of β-likeness and δ-disclosure is that of all rows, suppressed
ones included (``ClassStats.global_dist``), as for t-closeness and as ARX does. Both models say
``uses_table_distribution``, so a release that leaves suppressed rows out (``suppressed_rows=
'drop'``) is re-checked against the distribution of the rows it keeps — the written file satisfies
the model as measured on the file itself (what pycanon or ``ppdm check`` read).

**Monotonicity** (the properties the searches prune with, :mod:`.models`):

* under generalization all three are monotone. A merged class's frequencies are the size-weighted
  average of its parts': ``q = Σ_i (n_i/n) q^(i)``. β-likeness is a per-value upper bound
  ``q_v ≤ p_v(1 + θ_v)`` with a threshold ``θ_v`` (β, or ``min(β, −ln p_v)``) fixed by the table,
  not by the class — a convex set of distributions, so the average of passing parts passes;
  δ-disclosure is the two-sided bound ``p_v e^{−δ} < q_v < p_v e^{δ}`` for every value (convex
  again; the requirement ``q_v > 0`` is part of it); (α,k) is ``n ≥ k`` (sizes add) and ``q_v ≤ α``
  (convex). ARX declares δ-disclosure non-monotone because it checks only the values present in a
  class, and a value absent from one part (ignored there) can be too rare in the merged class;
  with the paper's requirement that every value be present the property holds.
* under suppression none is: a passing class merged with a failing one can fail (a class made of
  a rare value's rows raises its frequency in the merged class above any bound; for (α,k), a class
  ``{a, b}`` passes α = ½ with k = 2, ``{a}`` fails, ``{a, a, b}`` has ``q_a = ⅔``). With a
  suppression budget the searches prune on :meth:`pruning_models` only — for (α,k) k-anonymity and
  the distinct ⌈1/α⌉-diversity it implies (frequencies ≤ α summing to 1 need ≥ 1/α values); for
  β-likeness and δ-disclosure nothing (what they imply — a number of distinct values — depends on
  the table's distribution, which a model does not know before it sees a table).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import AnonymizeError
from .models import DistinctLDiversity, KAnonymity, PrivacyModel, _attr_name, _SensitiveModel

__all__ = [
    "BetaLikeness",
    "DeltaDisclosure",
    "AlphaKAnonymity",
    "BETA_VARIANTS",
    "class_frequencies",
    "relative_gains",
    "log_ratios",
    "achieved_beta",
    "achieved_delta",
    "achieved_alpha",
]

BETA_VARIANTS = ("basic", "enhanced")
"""The two β-likeness variants of Cao & Karras 2012."""

_TOL = 1e-9


# ------------------------------------------------------------------ shared measurements
def class_frequencies(hist: np.ndarray) -> np.ndarray:
    """``(C, V)`` relative frequencies ``q_v`` of each value per class (rows of empty classes are 0)."""
    hist = np.asarray(hist, dtype=np.float64)
    n = hist.sum(axis=1, keepdims=True)
    return np.divide(hist, n, out=np.zeros_like(hist), where=n > 0)


def relative_gains(hist: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``(C, V)`` relative gains ``(q_v − p_v)/p_v`` (Cao & Karras 2012's distance D(p_v, q_v)):
    0 for a value absent from the table and the class (``p_v = q_v = 0``), ``inf`` for one present
    in the class only (possible against a reference other than the class's own table)."""
    q = class_frequencies(hist)
    p = np.asarray(p, dtype=np.float64)
    pos = p > 0
    d = np.where(q > 0, np.inf, 0.0)
    d[:, pos] = (q[:, pos] - p[pos]) / p[pos]
    return d


def log_ratios(hist: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``(C, V)`` ``|ln(q_v/p_v)|`` (Brickell & Shmatikov 2008): ``inf`` where a value of the table
    is missing from the class (``q_v = 0 < p_v``) or present in the class only; 0 where absent from
    both."""
    q = class_frequencies(hist)
    p = np.asarray(p, dtype=np.float64)
    pos = p > 0
    r = np.where(q > 0, np.inf, 0.0)
    qp = q[:, pos]
    with np.errstate(divide="ignore"):
        r[:, pos] = np.abs(np.log(qp) - np.log(p[pos]))
    return r


def _nonempty(hist: np.ndarray) -> np.ndarray:
    hist = np.asarray(hist)
    return hist[hist.sum(axis=1) > 0]


def _enhanced_cap(p: np.ndarray) -> np.ndarray:
    """``−ln p_v`` (``inf`` for ``p_v = 0``): the bound enhanced β-likeness puts on the gain at any β."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return -np.log(p)


def achieved_beta(hist: np.ndarray, p: np.ndarray, variant: str) -> float | None:
    """The smallest β for which every class of ``hist`` satisfies ``variant`` β-likeness against
    ``p``: the largest relative gain (basic); the same if no gain exceeds its cap ``−ln p_v``, else
    ``None`` — no β satisfies enhanced β-likeness (enhanced). Empty classes are left out."""
    d = relative_gains(_nonempty(hist), p)
    if d.size == 0:
        return 0.0
    beta = max(float(d.max()), 0.0)
    if variant == "enhanced" and np.any(d > _enhanced_cap(p)[None, :] + _TOL):
        return None
    return beta if math.isfinite(beta) else None


def achieved_delta(hist: np.ndarray, p: np.ndarray) -> float | None:
    """The δ-disclosure of the classes: ``max |ln(q_v/p_v)|`` over classes and values (every class
    satisfies δ-disclosure privacy for every δ above it); ``None`` when a value of the table is
    missing from some class (no δ holds). Empty classes are left out."""
    r = log_ratios(_nonempty(hist), p)
    if r.size == 0:
        return 0.0
    delta = float(r.max())
    return delta if math.isfinite(delta) else None


def achieved_alpha(hist: np.ndarray) -> float:
    """The largest relative frequency of a value in a class (the α of (α,k)-anonymity)."""
    q = class_frequencies(hist)
    return float(q.max()) if q.size else 0.0


# ------------------------------------------------------------------ the models
def _without_sensitive(model: _SensitiveModel, whole) -> tuple[bool, str] | None:
    """The refusal of a model that reads a sensitive attribute on a table without one."""
    if not model._hists(whole):
        return True, f"{model.name} needs a sensitive attribute (--sensitive)"
    return None


def _positive(name: str, x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise AnonymizeError(f"{name} must be a positive number, got {x!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise AnonymizeError(f"{name} must be a positive number, got {x}")
    return v


class BetaLikeness(_SensitiveModel):
    """β-likeness (J. Cao, P. Karras, "Publishing microdata with a robust privacy guarantee",
    PVLDB 2012; ARX's ``BasicBLikeness`` / ``EnhancedBLikeness``): for every class and
    every sensitive value with ``q_v > p_v``, the relative gain ``(q_v − p_v)/p_v`` is at most β
    (``variant='basic'``) or ``min(β, −ln p_v)`` (``'enhanced'``, the default, as ``ppdm
    anonymize``). Values whose class frequency does not exceed the table's are unconstrained.

    ``p`` is the whole table's distribution, suppressed rows included (module docstring). The
    enhanced cap ``−ln p_v`` does not depend on β: a class with ``q_v > p_v(1 − ln p_v)`` fails at
    every β (so ``ppdm check`` reports no enhanced β for it).

    Self-description: ``monotone_generalization`` — the bound is linear in ``q`` with a threshold
    fixed by the table, so averages of passing classes pass; not ``monotone_suppression`` (a
    passing class merged with a class of a rare value fails); ``minimal_class_size`` 1 (one row of
    value ``v`` passes when ``1 ≤ p_v(1 + θ_v)``); ``uses_table_distribution``; no
    :meth:`pruning_models` (what it implies depends on the table). The whole table as one class
    always passes (``q = p``), so :meth:`limit` refuses only a table without a sensitive attribute.
    """

    name = "beta-likeness"
    uses_table_distribution = True

    def __init__(self, beta: float, variant: str = "enhanced", attribute: str | None = None):
        if variant not in BETA_VARIANTS:
            raise AnonymizeError(f"unknown beta-likeness variant '{variant}' (use {' or '.join(BETA_VARIANTS)})")
        self.beta = _positive("beta", beta)
        self.variant, self.attribute = variant, attribute

    def requirement(self) -> str:
        return f"{self.variant} beta-likeness, beta = {self.beta:g}"

    def limit(self, whole):
        return _without_sensitive(self, whole) or super().limit(whole)

    def thresholds(self, p: np.ndarray) -> np.ndarray:
        """``(V,)`` the largest relative gain allowed per value: β, or ``min(β, −ln p_v)``."""
        thr = np.full(len(p), self.beta)
        return np.minimum(thr, _enhanced_cap(p)) if self.variant == "enhanced" else thr

    def _ok(self, hist, stats, j):
        p = np.asarray(stats.global_dist[j], dtype=np.float64)
        return np.all(relative_gains(hist, p) <= self.thresholds(p)[None, :] + _TOL, axis=1)

    def describe(self):
        return {"model": self.name, "beta": self.beta, "variant": self.variant, "attribute": self.attribute}


class DeltaDisclosure(_SensitiveModel):
    """δ-disclosure privacy (J. Brickell, V. Shmatikov, "The cost of privacy: destruction of
    data-mining utility in anonymized data publishing", KDD 2008, def. of δ-disclosure privacy;
    ARX's ``DDisclosurePrivacy``): ``|ln(q_v/p_v)| < δ`` for every class and every value of the
    table — strictly, as in the paper and ARX. The logarithm of 0 is unbounded, so every value of
    the table must occur in every class (the paper says so); ARX and pycanon skip the values absent
    from a class instead, and ARX takes log₂ where the paper and pycanon take ln (ppdm: ln).

    Self-description: ``monotone_generalization`` — the set ``p_v e^{−δ} < q_v < p_v e^{δ}`` (all
    ``v``) is convex; not ``monotone_suppression``; ``minimal_class_size`` 1 in general (the number of
    values a class needs is the table's number of values, unknown to the model); ``uses_table_
    distribution``; no :meth:`pruning_models`. The whole table as one class has ``q = p`` and always
    passes (every δ > 0), so :meth:`limit` refuses only a table without a sensitive attribute.
    """

    name = "delta-disclosure"
    uses_table_distribution = True

    def __init__(self, delta: float, attribute: str | None = None):
        self.delta = _positive("delta", delta)
        self.attribute = attribute

    def requirement(self) -> str:
        return f"delta-disclosure, delta = {self.delta:g}"

    def limit(self, whole):
        return _without_sensitive(self, whole) or super().limit(whole)

    def _ok(self, hist, stats, j):
        return np.all(log_ratios(hist, stats.global_dist[j]) < self.delta, axis=1)

    def describe(self):
        return {"model": self.name, "delta": self.delta, "attribute": self.attribute}


class AlphaKAnonymity(_SensitiveModel):
    """(α,k)-anonymity (R. C.-W. Wong, J. Li, A. W.-C. Fu, K. Wang, "(α, k)-anonymity: an enhanced
    k-anonymity model for privacy preserving data publishing", KDD 2006): every class has ≥ k rows
    (k-anonymity) and the relative frequency of every sensitive value in it is ≤ α (the paper's
    α-deassociation, stated there for designated sensitive values; here, as in pycanon's
    ``alpha_k_anonymity``, for every value of the attribute).

    Self-description: ``monotone_generalization`` — sizes add and ``q_v ≤ α`` is convex; not
    ``monotone_suppression`` (``{a, b}`` passes α = ½, k = 2; merged with the failing ``{a}`` it
    fails); ``minimal_class_size`` max(k, ⌈1/α⌉) (frequencies ≤ α summing to 1 need ≥ 1/α
    values); :meth:`pruning_models` k-anonymity and distinct ⌈1/α⌉-diversity, both implied and
    monotone under suppression. :meth:`limit`: fewer than ⌈1/α⌉ values in the table is absolute; a
    value more frequent than α in the whole table fails every release without suppression.
    """

    name = "alpha-k-anonymity"

    def __init__(self, alpha: float, k: int = 1, attribute: str | None = None):
        try:
            a = float(alpha)
        except (TypeError, ValueError):
            raise AnonymizeError(f"alpha must be a fraction in (0, 1], got {alpha!r}") from None
        if not 0 < a <= 1:
            raise AnonymizeError(f"alpha must be a fraction in (0, 1], got {alpha}")
        self.k = KAnonymity(k).k
        self.alpha, self.attribute = a, attribute

    @property
    def distinct_needed(self) -> int:
        """⌈1/α⌉: the fewest distinct values a class with every frequency ≤ α has."""
        return max(1, math.ceil(1.0 / self.alpha - 1e-6))

    @property
    def minimal_class_size(self) -> int:
        """max(k, ⌈1/α⌉)."""
        return max(self.k, self.distinct_needed)

    def pruning_models(self) -> list[PrivacyModel]:
        """k-anonymity and distinct ⌈1/α⌉-diversity (implied; both monotone under suppression)."""
        out: list[PrivacyModel] = [KAnonymity(self.k)] if self.k > 1 else []
        d = self.distinct_needed
        return out + ([DistinctLDiversity(d, attribute=self.attribute)] if d > 1 else [])

    def requirement(self) -> str:
        return f"(alpha, k) = ({self.alpha:g}, {self.k})"

    def limit(self, whole):
        missing = _without_sensitive(self, whole)
        if missing:
            return missing
        d = self.distinct_needed
        for j, hist in self._hists(whole):
            v = int((hist[0] > 0).sum())
            name = _attr_name(whole, j)
            if v < d:
                return True, (
                    f"(alpha, k) = ({self.alpha:g}, {self.k}) is impossible: '{name}' has only {v} distinct "
                    f"value(s), so every class has a value with frequency >= 1/{v}: alpha must be at least "
                    f"{1 / max(v, 1):.3g}"
                )
            top = achieved_alpha(hist)
            if top > self.alpha + _TOL:
                return False, (
                    f"(alpha, k) = ({self.alpha:g}, {self.k}) fails even on the whole table: the most frequent value "
                    f"of '{name}' has frequency {top:.3g} > alpha: without suppression no release can meet it"
                )
        return None

    def class_ok(self, stats):
        return super().class_ok(stats) & ((stats.sizes >= self.k) | (stats.sizes == 0))

    def _ok(self, hist, stats, j):
        return np.all(class_frequencies(hist) <= self.alpha + _TOL, axis=1)

    def describe(self):
        return {"model": self.name, "alpha": self.alpha, "k": self.k, "attribute": self.attribute}
