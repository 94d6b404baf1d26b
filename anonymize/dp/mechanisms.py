"""ε-differentially private answers to count, sum, mean and histogram queries, with exact noise.

Definition (C. Dwork, F. McSherry, K. Nissim, A. Smith, "Calibrating Noise to Sensitivity in
Private Data Analysis", TCC 2006): a mechanism M is ε-DP if for every pair of tables differing in
one row (one row added or removed — the "unbounded" neighbouring relation used throughout) and
every set S of outputs, P[M(D) ∈ S] ≤ e^ε · P[M(D') ∈ S]. Adding Laplace noise of scale Δ/ε to a
query of L1 sensitivity Δ is ε-DP; on integer-valued queries the discrete Laplace (two-sided
geometric) distribution does the same (A. Ghosh, T. Roughgarden, M. Sundararajan, "Universally
utility-maximizing privacy mechanisms", STOC 2009).

**How the noise is drawn.** Every answer is an integer plus discrete-Laplace noise sampled
exactly (:func:`.exact.discrete_laplace`; C. Canonne, G. Kamath, T. Steinke, "The discrete
Gaussian for differential privacy", NeurIPS 2020, Algorithm 2): no floating-point sampling, hence
no least-significant-bit side channel (I. Mironov, "On significance of the least significant bits
for differential privacy", ACM CCS 2012).
Real-valued queries use **fixed point**, not the snapping mechanism: each value is clamped to
``[lower, upper]``, rounded to a multiple of a granularity ``g`` (``options["granularity"]``;
default 1 for integer columns with integer bounds, else ``max(|lower|, |upper|) / 2**24``) and
clipped so that one row moves the integer sum by at most Δ = round(max(|lower|, |upper|)/g); the
noisy integer sum is multiplied by ``g`` afterwards (post-processing). Rounding is a per-row
transformation, so it costs no privacy; it costs at most ``g/2`` of accuracy per row.

Queries (the JSON of :mod:`anonymize.query`; options in the same object):

* ``count`` — Δ = 1.
* ``sum`` — needs ``"lower"`` and ``"upper"`` (clamping bounds); Δ = max(|lower|, |upper|).
* ``mean`` — noisy sum (ε/2) divided by noisy count (ε/2), clamped to ``[lower, upper]``; 0 rows
  give the midpoint. Biased for tiny counts; the bounds are required.
* ``histogram`` — counts over a **public** domain: numeric columns need ``"bins"`` as a list of
  increasing edges, or an integer with ``"lower"``/``"upper"``; text columns need
  ``"categories"``. Rows outside the domain are not counted. One row changes one count by one,
  so every bin gets independent noise of scale 1/ε (parallel composition). Counts are released
  as noised (they may be negative; clip them yourself — post-processing is free).
* ``max``/``min`` — refused: their sensitivity is the whole range of the column.

Missing values (NaN) in the aggregated column contribute nothing (a per-row transformation).
Errors in the query or the table are :class:`~anonymize.errors.AnonymizeError` raised by
:func:`prepare` *before* any noise is drawn, so an accountant spends nothing on them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from ..query import Query, parse_query
from .epsilon import as_epsilon
from .exact import bounded_scale, discrete_laplace
from .randomness import as_source

__all__ = ["DPAnswer", "as_epsilon", "prepare", "dp_answer", "noise_std", "DEFAULT_GRANULARITY_BITS"]

DEFAULT_GRANULARITY_BITS = 24


def noise_std(scale: Fraction | float) -> float:
    """Standard deviation of the discrete Laplace distribution of scale ``b``: √(2α)/(1−α), α = e^(−1/b)."""
    alpha = math.exp(-1.0 / float(scale))
    return math.sqrt(2 * alpha) / (1 - alpha)


@dataclass(frozen=True)
class DPAnswer:
    """A released answer: ``value`` (number, or ``{"bins", "counts"}`` for a histogram), the ε it
    cost, and ``mechanism`` — what was done (noise, sensitivity, scale, granularity, noise std)."""

    value: Any
    epsilon: Fraction
    mechanism: dict = field(default_factory=dict)


def _number(options: Mapping, key: str, agg: str) -> Fraction:
    v = options.get(key)
    if v is None:
        raise AnonymizeError(
            f'dp: \'{agg}\' needs clamping bounds "lower" and "upper" in the query '
            "(the sensitivity of an unbounded sum is infinite)"
        )
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise AnonymizeError(f'dp: "{key}" must be a number, got {v!r}')
    try:
        f = Fraction(repr(float(v))) if isinstance(v, float) else Fraction(v)
    except (ValueError, ZeroDivisionError):
        raise AnonymizeError(f'dp: "{key}" must be a number, got {v!r}') from None
    return f


def _bounds(q: Query) -> tuple[Fraction, Fraction]:
    lo, hi = _number(q.options, "lower", q.agg), _number(q.options, "upper", q.agg)
    if not lo < hi:
        raise AnonymizeError(f'dp: "lower" ({lo}) must be below "upper" ({hi})')
    return lo, hi


def _granularity(q: Query, col: pd.Series, lo: Fraction, hi: Fraction) -> Fraction:
    if "granularity" in q.options:
        g = as_epsilon(q.options["granularity"], 'dp: "granularity"', bounds=None)
        return g
    m = max(abs(lo), abs(hi))
    if lo.denominator == 1 and hi.denominator == 1 and pd.api.types.is_integer_dtype(col):
        return Fraction(1)
    return m / 2**DEFAULT_GRANULARITY_BITS


def _fixed_point(values: np.ndarray, lo: Fraction, hi: Fraction, g: Fraction) -> tuple[int, int]:
    """(Σ round(clamp(x)/g) clipped to ±Δ, Δ): the integer sum and its sensitivity."""
    delta = max(1, round(max(abs(lo), abs(hi)) / g))
    x = values[~np.isnan(values)]
    x = np.clip(x, float(lo), float(hi)) / float(g)
    xi = np.clip(np.rint(x), -delta, delta).astype(np.int64)
    return int(xi.sum()), int(delta)


def _noisy(total: int, sensitivity: int, eps: Fraction, rng) -> tuple[int, Fraction]:
    scale = bounded_scale(Fraction(sensitivity) / eps)
    return total + int(discrete_laplace(scale, 1, rng)[0]), scale


def _histogram_domain(q: Query, col: pd.Series):
    numeric = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
    opts = q.options
    if not numeric:
        cats = opts.get("categories", opts.get("bins"))
        if not isinstance(cats, list) or not cats or not all(isinstance(c, (str, int, float)) for c in cats):
            raise AnonymizeError(
                f"dp: a histogram of text column '{q.column}' needs \"categories\": a list of the public "
                "values to count (a domain read from the data would itself leak)"
            )
        labels = [str(c) for c in cats]
        if len(set(labels)) != len(labels):
            raise AnonymizeError('dp: "categories" has duplicates')
        return "categorical", labels
    bins = opts.get("bins")
    if isinstance(bins, list):
        try:
            edges = np.array([float(b) for b in bins], dtype=np.float64)
        except (TypeError, ValueError):
            raise AnonymizeError('dp: "bins" must be a list of numbers (edges) or a count') from None
        if len(edges) < 2 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
            raise AnonymizeError('dp: "bins" edges must be at least two finite, strictly increasing numbers')
    elif isinstance(bins, int) and not isinstance(bins, bool):
        if not 1 <= bins <= 1_000_000:
            raise AnonymizeError(f'dp: "bins" must be between 1 and 1000000, got {bins}')
        lo, hi = _bounds(q)
        edges = np.linspace(float(lo), float(hi), bins + 1)
    else:
        raise AnonymizeError(
            f"dp: a histogram of numeric column '{q.column}' needs \"bins\": a list of edges, or a count "
            'with "lower" and "upper"'
        )
    return "numeric", edges


def _edge_label(a: float, b: float, last: bool) -> str:
    return f"[{a:g}, {b:g}{']' if last else ')'}"


def prepare(df: pd.DataFrame, query, epsilon) -> tuple[Fraction, Callable[[Any], DPAnswer]]:
    """Validate ``query`` against ``df`` and compute the exact statistic; return ``(ε, release)``.

    ``release(rng)`` draws the noise and returns the :class:`DPAnswer`. Every error (unknown
    column, missing bounds, max/min, non-numeric column, bad ε) is raised here, before any
    noise exists — the accountant spends nothing on a query that fails.
    """
    eps = as_epsilon(epsilon)
    q = query if isinstance(query, Query) else parse_query(query)
    if q.agg in ("max", "min"):
        raise AnonymizeError(f"dp: '{q.agg}' is not supported (its sensitivity is the whole range of the column)")
    mask = q.rows(df)
    base = {"noise": "discrete Laplace, exact (Canonne-Kamath-Steinke 2020, Alg. 2)", "epsilon": str(eps)}

    if q.agg == "count":
        n = int(mask.sum())

        def release_count(rng) -> DPAnswer:
            v, scale = _noisy(n, 1, eps, rng)
            return DPAnswer(v, eps, {**base, "sensitivity": 1, "scale": float(scale), "noise_std": noise_std(scale)})

        return eps, release_count

    col = df[q.column]
    if q.agg in ("sum", "mean"):
        values = q.values(df)  # raises for a text column
        lo, hi = _bounds(q)
        g = _granularity(q, col, lo, hi)
        total, delta = _fixed_point(values, lo, hi, g)
        if q.agg == "sum":

            def release_sum(rng) -> DPAnswer:
                v, scale = _noisy(total, delta, eps, rng)
                return DPAnswer(
                    float(v * g),
                    eps,
                    {
                        **base,
                        "sensitivity": float(delta * g),
                        "granularity": float(g),
                        "scale": float(scale * g),
                        "noise_std": noise_std(scale) * float(g),
                        "clamp": [float(lo), float(hi)],
                    },
                )

            return eps, release_sum
        n = int((~np.isnan(values)).sum())

        def release_mean(rng) -> DPAnswer:
            s, s_scale = _noisy(total, delta, eps / 2, rng)
            c, c_scale = _noisy(n, 1, eps / 2, rng)
            mean = float(s * g) / c if c >= 1 else float(lo + hi) / 2
            mean = min(max(mean, float(lo)), float(hi))
            return DPAnswer(
                mean,
                eps,
                {
                    **base,
                    "split": {"sum": str(eps / 2), "count": str(eps / 2)},
                    "sum_scale": float(s_scale * g),
                    "count_scale": float(c_scale),
                    "granularity": float(g),
                    "clamp": [float(lo), float(hi)],
                },
            )

        return eps, release_mean

    # histogram
    kind, domain = _histogram_domain(q, col)
    sel = col.to_numpy()[mask]
    if kind == "categorical":
        fcodes, uniq = pd.factorize(sel)  # convert each distinct value to text once
        ucodes = pd.Index(domain).get_indexer(pd.Index(uniq).astype(str))
        codes = ucodes[fcodes[fcodes >= 0]]
        counts = np.bincount(codes[codes >= 0], minlength=len(domain)).astype(np.int64)
        labels = list(domain)
    else:
        x = np.asarray(sel, dtype=np.float64)
        edges = domain
        idx = np.searchsorted(edges, x, side="right") - 1
        idx[x == edges[-1]] = len(edges) - 2  # the last bin is closed
        ok = (idx >= 0) & (idx < len(edges) - 1)
        counts = np.bincount(idx[ok], minlength=len(edges) - 1).astype(np.int64)
        labels = [_edge_label(a, b, i == len(edges) - 2) for i, (a, b) in enumerate(zip(edges[:-1], edges[1:]))]

    def release_histogram(rng) -> DPAnswer:
        scale = bounded_scale(1 / eps)
        noisy = counts + discrete_laplace(scale, len(counts), rng)
        return DPAnswer(
            {"bins": labels, "counts": noisy.tolist()},
            eps,
            {**base, "sensitivity": 1, "scale": float(scale), "noise_std": noise_std(scale), "per_bin": True},
        )

    return eps, release_histogram


def dp_answer(df: pd.DataFrame, query, epsilon, rng=None) -> DPAnswer:
    """One ε-DP answer to ``query`` on ``df`` (no accounting; see :class:`.accountant.BudgetAccountant`).

    ``rng`` — a :class:`.randomness.RandomSource`, a seed (tests only) or None (OS CSPRNG)."""
    _, release = prepare(df, query, epsilon)
    return release(as_source(rng))
