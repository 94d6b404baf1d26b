"""Population uniqueness: how many individuals of the *population* are unique on the quasi-identifiers,
estimated from a sample's class sizes — the estimators of ARX's risk analysis
(``RiskModelPopulationUniqueness``; Prasser, Kohlmayer, Lautenschläger, Kuhn, "ARX — a comprehensive
tool for anonymizing biomedical data", AMIA 2014), reimplemented vectorized with numpy / scipy.

Input: the sample's class sizes (their frequency counts ``f_1`` = classes of size 1, ``f_2``, …;
``u = Σ_j f_j`` classes, ``n = Σ_j j·f_j`` rows) and the population size ``N`` (sampling fraction
``π = n / N``). Output: the estimated number of population uniques (divide by ``N`` for their share).

* **Zayatz** (L. Zayatz, "Estimation of the percent of unique population elements on a microdata file
  using the sample", US Bureau of the Census, Statistical Research Division Report, 1991): the sample's
  class-size distribution stands in for the population's; with ``P_j = P(X = 1)``, ``X`` hypergeometric
  (population ``N``, ``j`` marked, ``n`` drawn), the probability that a sample unique is a population
  unique is ``P(uniq | sample uniq) = f_1·P_1 / Σ_j f_j·P_j`` and the population holds
  ``f_1 · P(uniq | sample uniq) / π`` uniques (``scipy.stats.hypergeom``).
* **Pitman** (N. Hoshino, "Applying Pitman's sampling formula to microdata disclosure risk
  assessment", Journal of Official Statistics, 2001): the partition of the sample follows Pitman's
  sampling formula with parameters ``0 < α < 1``, ``θ > −α``; its log-likelihood is
  ``ℓ = Σ_{i=1}^{u−1} log(θ + iα) − Σ_{i=1}^{n−1} log(θ + i) + Σ_j f_j Σ_{k=1}^{j−1} log(k − α)``
  (closed forms with ``log Γ``; gradient with the digamma function), maximized with
  ``scipy.optimize.minimize`` (bounded truncated Newton, TNC, over ``α`` and ``log(θ + α)``; further starts when the first does not converge); the population of
  size ``N`` then holds about ``Γ(θ + 1) / Γ(θ + α) · N^α`` uniques (Hoshino 2001). The estimate is
  void when ``α`` ends on its lower bound (the Ewens limit, where the formula does not apply) or
  outside ``[0, N]``, as in ARX.
* **SNB**, the slide negative binomial (G. Chen, S. Keller-McNulty, "Estimation of identification
  disclosure risk in microdata", Journal of Official Statistics, 1998): a population of ``K`` non-empty
  cells with sizes ``F = 1 + Y``, ``Y ~ NegBin(α, β)``, sampled by Bernoulli trials with probability
  ``π``. With ``d = (1 − π)(1 − β)`` the expected sample counts of classes of size 1 and 2 are
  ``E f_1 = K π (β / (1 − d))^α (1 + α d / (1 − d))`` and
  ``E f_2 = K α β^α π² (1 − β) (2 − (1 − α) d) / (2 (1 − d)^{α+2})`` (both follow from the probability
  generating function of the thinned ``F``); they are solved for ``(α, β)`` with ``scipy.optimize.root``
  (in ``log α``, ``logit β``, from a grid of starts), and the population holds ``K β^α`` uniques. ``K``
  is Shlosser's estimator of the number of non-empty classes in the form of P. J. Haas, L. Stokes,
  "Estimating the number of classes in a finite population", JASA, 1998:
  ``K = u + f_1 · [Σ_j j π² (1 − π²)^{j−1} f_j / Σ_j (1 − π)^j ((1 + π)^j − 1) f_j]
  · [Σ_j (1 − π)^j f_j / Σ_j j π (1 − π)^{j−1} f_j]²``.
* **Dankar's decision rule** (F. K. Dankar, K. El Emam, A. Neisa, T. Roffey, "Estimating the
  re-identification risk of clinical data sets", BMC Medical Informatics and Decision Making, 2012), as
  ARX applies it: ``π ≤ 0.1`` → Pitman (Zayatz if Pitman fails and ``zayatz_fallback``); ``π > 0.1`` →
  the smaller of Zayatz and SNB, or Zayatz when SNB fails.

Conventions (ARX's): no sample unique → every estimate is 0; a failed estimate is ``None``.
``N == n`` (``π = 1``, the sample *is* the population) → every estimator returns ``f_1`` exactly.

Checked against ARX's expected numbers (ARX ``TestRiskMetrics.testDecisionRule2`` on its ``adult.csv``):
Pitman agrees to 7 significant digits, Zayatz to 10. ARX's SNB and its ``K`` differ from the formulas
above by two operator-precedence slips (``E f_2`` multiplied by ``(1 − d)^{α+2}`` where its own Jacobian
divides; the ``−1`` of ``(1 + π)^j − 1`` outside the product); on that data, at π = 0.01, 0.1 and 0.2,
those equations have no solution from ARX's starting points (solved with scipy), so ARX's Dankar rule
falls back to Zayatz. Here SNB follows the model (a Monte-Carlo test on SNB populations recovers the
true number of uniques), and Dankar's rule may pick it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import AnonymizeError

__all__ = [
    "ESTIMATORS",
    "UNIQUENESS_ESTIMATORS",
    "UniquenessEstimates",
    "size_frequencies",
    "zayatz_uniques",
    "pitman_uniques",
    "snb_uniques",
    "shlosser_classes",
    "dankar_uniques",
    "estimate_uniques",
    "population_uniqueness",
    "kmap_derived_k",
    "release_population_report",
]

ESTIMATORS = ("pitman", "zayatz", "snb")
"""The statistical models."""
UNIQUENESS_ESTIMATORS = ("dankar", *ESTIMATORS)
"""What ``--uniqueness-estimator`` accepts: Dankar's decision rule or one model."""

_DANKAR_FRACTION = 0.1  # Dankar et al. 2012: Pitman at sampling fractions up to 10 %


def size_frequencies(sizes) -> tuple[np.ndarray, np.ndarray]:
    """``(j, f_j)``: the distinct positive class sizes (ascending) and how many classes have each.
    Empty classes (size 0, e.g. suppressed) are ignored."""
    s = np.asarray(sizes, dtype=np.int64).ravel()
    s = s[s > 0]
    if len(s) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    j, f = np.unique(s, return_counts=True)
    return j.astype(np.int64), f.astype(np.int64)


def _totals(j, f) -> tuple[float, float, float, float]:
    """``(n, u, f_1, f_2)``."""
    n = float(np.dot(j, f))
    u = float(f.sum())
    f1 = float(f[j == 1].sum())
    f2 = float(f[j == 2].sum())
    return n, u, f1, f2


def _valid(x: float, N: float) -> float | None:
    return float(x) if math.isfinite(x) and 0.0 < x <= N * (1 + 1e-12) else None


# ---------------------------------------------------------------------------------------- Zayatz
def zayatz_uniques(j, f, N: float) -> float | None:
    """Zayatz's estimate of the number of population uniques (module docstring); ``None`` if it fails."""
    from scipy import stats  # here, not at the top: importing scipy.stats takes 1.2 s

    j, f = np.asarray(j, dtype=np.int64), np.asarray(f, dtype=np.float64)
    n, _, f1, _ = _totals(j, f)
    if f1 == 0:
        return 0.0
    M, draws = int(round(N)), int(round(n))
    p = stats.hypergeom.pmf(1, M, j, draws)  # P(one of a class of size j is drawn), vectorized over j
    denom = float(np.dot(f, p))
    p1 = draws / M  # hypergeom.pmf(1, N, 1, n)
    if not denom > 0:
        return None
    return _valid(f1 * (f1 * p1 / denom) / (n / N), N)


# ---------------------------------------------------------------------------------------- Pitman
def _pitman_nll(x, j, f, n, u):
    """Negative log-likelihood of Pitman's sampling formula and its gradient in ``(α, s)``,
    ``θ = e^s − α`` (so ``θ + α > 0``)."""
    from scipy import special

    a, s = float(x[0]), float(x[1])
    lam = math.exp(s)
    t = lam - a
    r = t / a  # θ/α > −1
    g = special.gammaln
    ll = (u - 1) * math.log(a) + g(r + u) - g(r + 1) - (g(t + n) - g(t + 1))
    ll += float(np.dot(f, g(j - a) - g(1 - a)))
    psi = special.digamma
    S = (psi(r + u) - psi(r + 1)) / a  # Σ_{i<u} 1/(θ + iα)
    d_t = S - (psi(t + n) - psi(t + 1))
    d_a = (u - 1) / a - r * S - float(np.dot(f, psi(j - a) - psi(1 - a)))
    grad = np.array([d_a - d_t, d_t * lam])  # chain rule to (α, s)
    return -ll, -grad


def pitman_fit(j, f) -> tuple[float, float] | None:
    """Maximum-likelihood ``(α, θ)`` of Pitman's sampling formula for the class sizes ``(j, f_j)``, or
    ``None`` when there is nothing to fit (fewer than two classes)."""
    from scipy import optimize

    j, f = np.asarray(j, dtype=np.float64), np.asarray(f, dtype=np.float64)
    n, u, _, _ = _totals(j, f)
    if u < 2 or n < 2:
        return None
    eps = 1e-9
    best = None
    # TNC: bounded truncated Newton, no BLAS threads (L-BFGS-B's stall on a loaded machine)
    for a0, lam0 in ((0.5, u), (0.2, 1.0), (0.8, n)):
        try:
            r = optimize.minimize(
                _pitman_nll,
                np.array([a0, math.log(lam0)]),
                args=(j, f, n, u),
                jac=True,
                method="TNC",
                bounds=[(eps, 1 - eps), (math.log(eps), math.log(1e12))],
            )
        except (ValueError, FloatingPointError, OverflowError):  # pragma: no cover - defensive
            continue
        if np.isfinite(r.fun) and (best is None or r.fun < best.fun - 1e-12):
            best = r
        if best is not None and best.success:  # the first start usually converges: skip the others
            break
    if best is None:
        return None
    a, s = float(best.x[0]), float(best.x[1])
    return a, math.exp(s) - a


def pitman_uniques(j, f, N: float) -> float | None:
    """Pitman's estimate (Hoshino 2001) of the number of population uniques; ``None`` if it fails."""
    from scipy import special

    j, f = np.asarray(j, dtype=np.int64), np.asarray(f, dtype=np.int64)
    _, _, f1, _ = _totals(j, f)
    if f1 == 0:
        return 0.0
    fit = pitman_fit(j, f)
    if fit is None:
        return None
    a, t = fit
    if a <= 1e-6:  # the Ewens limit (α = 0): N^α no longer grows with N — ARX rejects α = 0 too
        return None
    est = math.exp(special.gammaln(t + 1) - special.gammaln(t + a) + a * math.log(N))
    return _valid(est, N)


# ---------------------------------------------------------------------------------------- SNB
def shlosser_classes(j, f, pi: float) -> float:
    """Shlosser's estimate of the number of non-empty population classes (Haas & Stokes 1998 form,
    module docstring); ``u`` when the sample is the population or the sums vanish."""
    j, f = np.asarray(j, dtype=np.float64), np.asarray(f, dtype=np.float64)
    _, u, f1, _ = _totals(j, f)
    if pi >= 1.0:
        return u
    q = pi
    num1 = float(np.dot(j * q * q * (1 - q * q) ** (j - 1), f))
    den1 = float(np.dot((1 - q) ** j * ((1 + q) ** j - 1), f))
    num2 = float(np.dot((1 - q) ** j, f))
    den2 = float(np.dot(j * q * (1 - q) ** (j - 1), f))
    if not (den1 > 0 and den2 > 0):
        return u
    return u + f1 * (num1 / den1) * (num2 / den2) ** 2


def _snb_residuals(x, K, q, f1, f2):
    """log E f_1 − log f_1 and log E f_2 − log f_2 at ``α = e^{x0}``, ``β = logistic(x1)``."""
    a = math.exp(min(x[0], 50.0))
    lb = -math.log1p(math.exp(-x[1])) if x[1] > -700 else x[1]  # log β
    l1b = -math.log1p(math.exp(x[1])) if x[1] < 700 else -x[1]  # log(1 − β)
    d = (1 - q) * math.exp(l1b)
    l1d = math.log1p(-d)
    e1 = math.log(K) + math.log(q) + a * (lb - l1d) + math.log1p(a * d / (1 - d))
    e2 = (
        math.log(K)
        + math.log(a)
        + a * lb
        + 2 * math.log(q)
        + l1b
        + math.log(2 - (1 - a) * d)
        - math.log(2.0)
        - (a + 2) * l1d
    )
    return [e1 - math.log(f1), e2 - math.log(f2)]


def snb_fit(j, f, pi: float) -> tuple[float, float, float] | None:
    """``(α, β, K)`` of the slide negative binomial for the class sizes at sampling fraction ``pi``,
    or ``None`` when the equations have no solution (or ``f_2 = 0``)."""
    from scipy import optimize

    j, f = np.asarray(j, dtype=np.int64), np.asarray(f, dtype=np.int64)
    _, _, f1, f2 = _totals(j, f)
    if f1 == 0 or f2 == 0 or not 0 < pi < 1:
        return None
    K = shlosser_classes(j, f, pi)
    for a0 in (0.33, 0.66, 0.99, 2.0):
        for b0 in (0.01, 0.33, 0.66, 0.99):
            x0 = [math.log(a0), math.log(b0 / (1 - b0))]
            try:
                with np.errstate(all="ignore"):
                    r = optimize.root(_snb_residuals, x0, args=(K, pi, f1, f2), method="hybr")
            except (ValueError, OverflowError, ZeroDivisionError):
                continue
            if r.success and np.all(np.isfinite(r.x)) and np.max(np.abs(r.fun)) < 1e-8:
                a = math.exp(r.x[0])
                b = 1.0 / (1.0 + math.exp(-r.x[1]))
                if a > 0 and 0 < b < 1:
                    return a, b, K
    return None


def snb_uniques(j, f, N: float) -> float | None:
    """The slide-negative-binomial estimate (Chen & Keller-McNulty 1998) of the number of population
    uniques; ``None`` if the equations have no admissible solution."""
    j, f = np.asarray(j, dtype=np.int64), np.asarray(f, dtype=np.int64)
    n, _, f1, _ = _totals(j, f)
    if f1 == 0:
        return 0.0
    fit = snb_fit(j, f, n / N)
    if fit is None:
        return None
    a, b, K = fit
    return _valid(K * b**a, N)


# ---------------------------------------------------------------------------------------- Dankar
def dankar_uniques(j, f, N: float, zayatz_fallback: bool = True) -> tuple[float | None, str]:
    """Dankar et al.'s decision rule as ARX applies it (module docstring): ``(estimate, model used)``."""
    n, _, f1, _ = _totals(np.asarray(j), np.asarray(f))
    if f1 == 0:
        return 0.0, "none"
    if n / N <= _DANKAR_FRACTION:
        p = pitman_uniques(j, f, N)
        if p is not None or not zayatz_fallback:
            return p, "pitman"
        return zayatz_uniques(j, f, N), "zayatz"
    z = zayatz_uniques(j, f, N)
    s = snb_uniques(j, f, N)
    if s is not None and (z is None or s < z):
        return s, "snb"
    return z, "zayatz"


def _check(j, f, N) -> tuple[np.ndarray, np.ndarray, float]:
    j, f = np.asarray(j, dtype=np.int64), np.asarray(f, dtype=np.int64)
    n = float(np.dot(j, f))
    if not N >= 1 or not math.isfinite(N):
        raise AnonymizeError(f"the population size must be a positive number, got {N}")
    if N < n:
        raise AnonymizeError(f"the population size N = {N:,.0f} is smaller than the sample ({n:,.0f} rows)")
    return j, f, float(N)


def estimate_uniques(sizes, population_size: float, estimator: str = "dankar", zayatz_fallback: bool = True):
    """``(estimated population uniques or None, model used)`` for class ``sizes`` and one estimator of
    :data:`UNIQUENESS_ESTIMATORS` — what a privacy model evaluates per lattice node (only the asked-for
    model is fitted). With ``N == n`` every estimator returns ``f_1`` (model ``'census'``)."""
    if estimator not in UNIQUENESS_ESTIMATORS:
        raise AnonymizeError(f"unknown uniqueness estimator '{estimator}' (use {', '.join(UNIQUENESS_ESTIMATORS)})")
    j, f, N = _check(*size_frequencies(sizes), population_size)
    n, _, f1, _ = _totals(j, f)
    if f1 == 0:
        return 0.0, "none"
    if n >= N:
        return f1, "census"
    if estimator == "dankar":
        return dankar_uniques(j, f, N, zayatz_fallback)
    fn = {"pitman": pitman_uniques, "zayatz": zayatz_uniques, "snb": snb_uniques}[estimator]
    return fn(j, f, N), estimator


@dataclass
class UniquenessEstimates:
    """Every estimate for one sample (counts of population uniques; ``None`` = the model failed)."""

    population_size: float
    sample_size: int
    sample_uniques: int
    pitman: float | None
    zayatz: float | None
    snb: float | None
    dankar: float | None
    dankar_model: str

    def as_dict(self) -> dict:
        """JSON-ready: per estimator ``{"uniques", "fraction"}`` (None when it failed) and Dankar's choice."""
        N = self.population_size

        def one(x):
            return None if x is None else {"uniques": float(x), "fraction": float(x) / N}

        return {
            "population_size": N,
            "sampling_fraction": self.sample_size / N,
            "sample_uniques": self.sample_uniques,
            "pitman": one(self.pitman),
            "zayatz": one(self.zayatz),
            "snb": one(self.snb),
            "dankar": one(self.dankar) | {"model": self.dankar_model} if self.dankar is not None else None,
        }


def population_uniqueness(sizes, population_size: float) -> UniquenessEstimates:
    """Every estimator and Dankar's choice (with ARX's Zayatz fallback) for class ``sizes``."""
    j, f, N = _check(*size_frequencies(sizes), population_size)
    n, _, f1, _ = _totals(j, f)
    if f1 == 0 or n >= N:
        v = float(f1)
        return UniquenessEstimates(N, int(n), int(f1), v, v, v, v, "none" if f1 == 0 else "census")
    p, z, s = pitman_uniques(j, f, N), zayatz_uniques(j, f, N), snb_uniques(j, f, N)
    if n / N <= _DANKAR_FRACTION:
        d, model = (p, "pitman") if p is not None else (z, "zayatz")
    elif s is not None and (z is None or s < z):
        d, model = s, "snb"
    else:
        d, model = z, "zayatz"
    return UniquenessEstimates(N, int(n), int(f1), p, z, s, d, model)


# ---------------------------------------------------------------------------------------- k-map
def kmap_derived_k(
    k: int, sampling_fraction: float, significance: float, estimator: str = "poisson"
) -> tuple[int, float]:
    """The class size ``k'`` that stands for k-map when only the population size is known (ARX's
    ``KMap`` with a cell-size estimator): a population class of ``k`` individuals shows up in the
    sample about ``X ~ Poisson(λ = π·k)`` times (J. Pannekoek, "Statistical methods for some simple
    disclosure limitation rules", Statistica Neerlandica, 1999), or zero-truncated Poisson for a class
    known to be in the sample (El Emam & Dankar, JAMIA 2008); ``k'`` is the smallest ``m ≥ 1`` with
    ``P(X ≥ m) ≤ significance`` — a sample class of ``k'`` rows or more is unlikely to come from a
    population class of at most ``k`` — capped at ``k``. Returns ``(k', P(X ≥ k'))`` (the type-I
    error; 0 when the cap applies)."""
    from scipy import stats

    if estimator not in ("poisson", "ztp"):
        raise AnonymizeError(f"unknown k-map estimator '{estimator}' (use poisson or ztp)")
    lam = float(sampling_fraction) * int(k)
    m = np.arange(1, int(k) + 1)
    tail = stats.poisson.sf(m - 1, lam)  # P(X ≥ m)
    if estimator == "ztp":
        tail = tail / -math.expm1(-lam)  # P(X ≥ m | X ≥ 1)
    hit = np.flatnonzero(tail <= significance)
    if len(hit) == 0:
        return int(k), 0.0
    return int(m[hit[0]]), float(tail[hit[0]])


# ---------------------------------------------------------------------------------------- a release
def release_population_report(df, qis, population=None, population_size: float | None = None) -> dict:
    """What ``ppdm check`` adds about the population of a table *as released* (generalized values are
    plain categories, as in :func:`.release.measure_release`):

    * ``population_uniques`` — :func:`population_uniqueness` of the release's class sizes, with
      ``population_size`` (default: the population table's rows);
    * with a ``population`` table in the same released form: ``delta_presence`` ``[min, max]`` of
      rows / population rows over the released classes found in the population (Nergiz, Atzori,
      Clifton, SIGMOD 2007), ``k_map`` the fewest population rows any released class matches (0 when a
      class matches none), ``population_unmatched_classes`` and ``population_absent_rows`` — population
      rows whose class holds no row of the release, so the release shows they are absent
      (P(t ∈ T | T*) = 0: δ-presence with δmin > 0 fails whatever the released classes' ratios).
    """
    import pandas as pd

    from ..classes import equivalence_classes
    from ..hierarchy import canonical_strings

    qis = list(qis)
    out: dict = {}
    frames = [df[qis]]
    if population is not None:
        missing = [c for c in qis if c not in population.columns]
        if missing:
            raise AnonymizeError(f"population table lacks quasi-identifier column(s): {', '.join(missing)}")
        frames.append(population[qis])
    both = pd.concat([f.apply(canonical_strings) for f in frames], ignore_index=True)
    codes = np.empty((len(both), len(qis)), dtype=np.int64)
    for j, c in enumerate(qis):
        codes[:, j] = pd.factorize(both[c], use_na_sentinel=False)[0]
    cid, C = equivalence_classes(codes)
    n = len(df)
    sizes = np.bincount(cid[:n], minlength=C)
    released = sizes > 0
    N = population_size if population_size is not None else (None if population is None else len(population))
    if N is not None:
        out["population_uniques"] = population_uniqueness(sizes[released], N).as_dict()
    if population is not None:
        pop_all = np.bincount(cid[n:], minlength=C)
        out["population_absent_rows"] = int(pop_all[~released].sum())
        pop = pop_all[released]
        f = sizes[released]
        matched = pop > 0
        d = f[matched] / pop[matched]
        out["delta_presence"] = [float(d.min()), float(d.max())] if len(d) else None
        out["k_map"] = int(pop.min()) if len(pop) else 0
        out["population_unmatched_classes"] = int((~matched).sum())
    return out
