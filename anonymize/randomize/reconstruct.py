"""Reconstruct the distribution of X from perturbed values z = x + y and the public noise Y.

The domain of X is cut into ``bins`` equal intervals I_1..I_B (density constant inside each);
the observed z are counted on a finer grid of intervals J_1..J_Q (``z_per_bin`` per x-interval
width), so every step is a (Q × B) kernel matrix times a vector — no loop over samples.

Two estimators, the same update shape, different kernels and stopping rules:

* ``as`` — Agrawal–Srikant iterative Bayes (R. Agrawal, R. Srikant, "Privacy-Preserving Data
  Mining", ACM SIGMOD 2000, §3; C. C. Aggarwal, *Data Mining: The Textbook*, Springer 2015,
  eq. 20.5) with their partitioning approximation: each z is taken at the midpoint m(J_q) of its
  interval and f_Y is evaluated at midpoints,

      P^{j+1}(X ∈ I_p) = (1/n) Σ_q N(J_q) · f_Y(m(J_q) − m(I_p)) P^j(I_p) / Σ_t f_Y(m(J_q) − m(I_t)) P^j(I_t),

  starting from the uniform distribution. **Stopping rule** (AS 2000 §3, "stopping criterion"):
  stop when the χ² statistic between successive estimates, Σ_p n (P^{j+1}_p − P^j_p)² / P^j_p,
  falls below ``chi2_fraction`` (AS: 1%) of the 95% critical value of χ² with B − 1 degrees of
  freedom (Wilson–Hilferty approximation), or after ``max_iter`` iterations. The statistic grows
  with n, so on large samples with Gaussian noise this rule stops while the estimate is still
  moving (e.g. ½∫|f − f̂| = 0.26 on a bimodal source, 100 k values, where EM reaches 0.11); a
  smaller fraction (1e-4) follows the iteration further.
* ``em`` — expectation maximization (D. Agrawal, C. C. Aggarwal, "On the Design and
  Quantification of Privacy Preserving Data Mining Algorithms", ACM PODS 2001, §4) with the
  exact interval kernel P(z ∈ J_q | X uniform on I_p) — computed in closed form from the
  antiderivative of F_Y (:meth:`.noise.Noise.cdf_integral`) — instead of midpoint densities.
  Each step is one EM step for the multinomial likelihood Π_q (Σ_p θ_p P_qp)^{N(J_q)}, so the
  likelihood never decreases and the iterates converge to a maximum-likelihood estimate (AA 2001
  prove this for their EM). **Stopping rule**: stop when the mean log-likelihood per value gains less than
  ``tol`` (default 1e-7 nats) in one step, or after ``max_iter`` iterations.

Both report ``iterations`` and whether the rule (rather than ``max_iter``) stopped them.
:func:`information_loss` is AA 2001's measure, ½ ∫ |f_X − f̂_X| (0 = perfect, 1 = disjoint), with
f̂_X the reconstruction's step density and f_X the original density — given, or estimated from the
original sample on a grid of its own (:func:`sample_density`), never on the reconstruction's grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import AnonymizeError
from .noise import Noise

__all__ = [
    "METHODS",
    "Reconstruction",
    "reconstruct",
    "reconstruct_binned",
    "kernel_matrix",
    "z_histogram",
    "information_loss",
    "bin_mass_loss",
    "sample_density",
    "default_domain",
    "histogram_on",
]

METHODS = ("as", "em")
_MAX_Z_BINS = 16384
CHI2_FRACTION = 0.01


@dataclass
class Reconstruction:
    """A reconstructed distribution: ``probabilities[p]`` = P̂(X ∈ [edges[p], edges[p+1]))."""

    edges: np.ndarray
    probabilities: np.ndarray
    method: str
    noise: Noise
    iterations: int
    converged: bool
    stopping_rule: str
    log_likelihood: float
    n: int
    history: list = field(default_factory=list, repr=False)

    @property
    def widths(self) -> np.ndarray:
        return np.diff(self.edges)

    @property
    def densities(self) -> np.ndarray:
        """f̂_X on each interval (probability / width)."""
        return self.probabilities / self.widths

    @property
    def midpoints(self) -> np.ndarray:
        return 0.5 * (self.edges[:-1] + self.edges[1:])

    def to_json(self) -> dict:
        return {
            "method": self.method,
            "noise": self.noise.describe(),
            "n": self.n,
            "bins": [[float(a), float(b)] for a, b in zip(self.edges[:-1], self.edges[1:])],
            "densities": [float(d) for d in self.densities],
            "probabilities": [float(p) for p in self.probabilities],
            "iterations": self.iterations,
            "converged": self.converged,
            "stopping_rule": self.stopping_rule,
            "log_likelihood_per_value": self.log_likelihood,
        }


def default_domain(z: np.ndarray, noise: Noise, bins: int) -> tuple[float, float]:
    """Where X can lie when only z and Y are known.

    Uniform noise on [−a, a]: with many values, min z + a is a consistent estimate of min X (some
    x near the minimum meets noise near −a), and likewise max z − a for max X; that interval is
    padded by half a bin each side. If it is empty (noise wider than the spread of z),
    [min z, max z]. Gaussian noise: [min z, max z] (pass the attribute's public range as
    ``domain`` for a tighter grid — AS 2000 assume the domain is known)."""
    lo, hi = float(np.min(z)), float(np.max(z))
    if noise.kind == "uniform":
        a = noise.scale
        if hi - a > lo + a:
            pad = 0.5 * ((hi - a) - (lo + a)) / bins
            return lo + a - pad, hi - a + pad
    if hi <= lo:
        return lo - 0.5, hi + 0.5
    return lo, hi


def _chi2_critical_95(df: int) -> float:
    """95% quantile of χ²(df), Wilson–Hilferty: df·(1 − 2/(9df) + 1.6449·√(2/(9df)))³."""
    k = max(int(df), 1)
    c = 2.0 / (9.0 * k)
    return k * (1.0 - c + 1.6448536269514722 * math.sqrt(c)) ** 3


def z_histogram(z: np.ndarray, edges: np.ndarray, z_per_bin: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges of the z intervals (aligned with the x grid, width w/z_per_bin) and counts per interval;
    intervals with no z are dropped (they contribute nothing to either update)."""
    w = (edges[-1] - edges[0]) / (len(edges) - 1)
    wz = w / z_per_bin
    zlo, zhi = float(np.min(z)), float(np.max(z))
    k0 = math.floor((zlo - edges[0]) / wz)
    k1 = math.floor((zhi - edges[0]) / wz) + 1
    while k1 - k0 > _MAX_Z_BINS:  # very wide noise relative to the bins: coarsen the z grid
        wz *= 2.0
        k0 = math.floor((zlo - edges[0]) / wz)
        k1 = math.floor((zhi - edges[0]) / wz) + 1
    zedges = edges[0] + wz * np.arange(k0, k1 + 1, dtype=np.float64)
    idx = np.clip(np.floor((z - edges[0]) / wz).astype(np.int64) - k0, 0, k1 - k0 - 1)
    counts = np.bincount(idx, minlength=k1 - k0).astype(np.float64)
    keep = counts > 0
    lo, hi = zedges[:-1][keep], zedges[1:][keep]
    return np.stack([lo, hi], axis=1), counts[keep]


def kernel_matrix(method: str, noise: Noise, edges: np.ndarray, z_intervals: np.ndarray) -> np.ndarray:
    """The (Q × B) kernel of ``method`` for z intervals ``z_intervals`` (Q × 2: lo, hi) and x
    intervals ``edges``: AS — f_Y(m(J_q) − m(I_p)); EM — P(z ∈ J_q | X uniform on I_p) =
    (G(d−l) − G(d−u) − G(c−l) + G(c−u)) / (u − l) with G = :meth:`.noise.Noise.cdf_integral`."""
    zint = np.asarray(z_intervals, dtype=np.float64)
    c, d = zint[:, 0:1], zint[:, 1:2]
    if method == "as":
        mz = 0.5 * (c + d)
        mx = 0.5 * (edges[:-1] + edges[1:])[None, :]
        return noise.pdf(mz - mx)
    lo, hi = edges[:-1][None, :], edges[1:][None, :]
    G = noise.cdf_integral
    k = (G(d - lo) - G(d - hi) - G(c - lo) + G(c - hi)) / (hi - lo)
    return np.clip(k, 0.0, None)


def _check_int(x, name: str, lo: int, hi: int) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not lo <= x <= hi:
        raise AnonymizeError(f"{name} must be an integer between {lo} and {hi}, got {x!r}")
    return int(x)


def reconstruct(
    z,
    noise: Noise,
    bins: int = 20,
    method: str = "em",
    domain: tuple[float, float] | None = None,
    max_iter: int = 2000,
    tol: float = 1e-7,
    z_per_bin: int = 4,
    chi2_fraction: float = CHI2_FRACTION,
) -> Reconstruction:
    """Reconstruct the distribution of X from perturbed values ``z`` (module docstring).

    ``bins`` equal intervals over ``domain`` (default :func:`default_domain`); ``method`` "as" or
    "em"; ``max_iter`` caps the iterations; ``tol`` is EM's log-likelihood stopping threshold and
    ``chi2_fraction`` AS's; ``z_per_bin`` — z intervals per x-interval width.
    """
    bins = _check_int(bins, "bins", 2, 10000)
    z_per_bin = _check_int(z_per_bin, "z_per_bin", 1, 1000)
    z = np.asarray(z, dtype=np.float64).ravel()
    if z.size == 0:
        raise AnonymizeError("no values to reconstruct from")
    if not np.all(np.isfinite(z)):
        raise AnonymizeError("perturbed values contain missing or infinite entries")
    if domain is None:
        domain = default_domain(z, noise, bins)
    lo, hi = float(domain[0]), float(domain[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise AnonymizeError(f"domain must be two finite numbers LO < HI, got {domain}")
    edges = np.linspace(lo, hi, bins + 1)
    zint, nq = z_histogram(z, edges, z_per_bin)
    return reconstruct_binned(zint, nq, noise, edges, method, max_iter, tol, chi2_fraction)


def reconstruct_binned(
    z_intervals,
    counts,
    noise: Noise,
    edges,
    method: str = "em",
    max_iter: int = 2000,
    tol: float = 1e-7,
    chi2_fraction: float = CHI2_FRACTION,
) -> Reconstruction:
    """The iteration itself, from perturbed values already counted on intervals: ``z_intervals``
    (Q × 2, lo/hi) holding ``counts[q]`` values each; x intervals ``edges`` (module docstring)."""
    if method not in METHODS:
        raise AnonymizeError(f"unknown reconstruction method '{method}' (use {' or '.join(METHODS)})")
    max_iter = _check_int(max_iter, "max_iter", 1, 10**7)
    if not 0 <= chi2_fraction < 1 or not tol >= 0:
        raise AnonymizeError("stopping thresholds must be non-negative (chi2_fraction below 1)")
    edges = np.asarray(edges, dtype=np.float64)
    nq = np.asarray(counts, dtype=np.float64)
    K = kernel_matrix(method, noise, edges, z_intervals)
    n = float(nq.sum())
    observable = K.sum(axis=1) > 0
    if not observable.all():  # z intervals no x-interval can produce (midpoint kernel of AS)
        K, nq = K[observable], nq[observable]
    if nq.sum() == 0:
        if method == "as":
            w = float(np.min(np.diff(edges)))
            raise AnonymizeError(
                f"the AS midpoint kernel is zero everywhere: the noise (scale {noise.scale:g}) is narrower than "
                f"the interval grid (width {w:.3g}); use fewer --bins or --method em"
            )
        raise AnonymizeError(
            "no perturbed value is consistent with the noise and the domain; check --scale and --domain"
        )
    n_used = float(nq.sum())
    B = len(edges) - 1
    pi = np.full(B, 1.0 / B)
    crit = chi2_fraction * _chi2_critical_95(B - 1)

    def loglik(dn: np.ndarray) -> float:
        return float(np.sum(nq * np.log(np.where(dn > 0, dn, 1.0)))) / n_used

    denom = K @ pi
    prev_ll = loglik(denom) if method == "em" else -math.inf
    converged = False
    history = []
    iterations = 0
    for step in range(1, max_iter + 1):
        iterations = step
        ratio = np.divide(nq, denom, out=np.zeros_like(nq), where=denom > 0)
        new = pi * (K.T @ ratio) / n_used
        s = new.sum()
        if s <= 0:
            raise AnonymizeError("reconstruction collapsed (no mass left); check --scale and --domain")
        new /= s  # a no-op for EM (Σ_p new_p = 1 exactly); AS's midpoint kernel can drop rows
        old, pi = pi, new
        denom = K @ pi
        if method == "as":
            with np.errstate(divide="ignore", invalid="ignore"):
                stat = float(np.sum(np.where(old > 0, n_used * (pi - old) ** 2 / old, 0.0)))
            history.append(stat)
            if stat < crit:
                converged = True
                break
        else:
            ll = loglik(denom)
            history.append(ll)
            if ll - prev_ll < tol:
                converged = True
                break
            prev_ll = ll
    if method == "em":
        ll = loglik(denom)
        rule = f"log-likelihood gain per value < {tol:g} nats, at most {max_iter} iterations"
    else:
        ll = float("nan")
        rule = (
            f"chi-square between successive estimates < {chi2_fraction:g} of chi2_0.95({B - 1}) = {crit:.4g}, "
            f"at most {max_iter} iterations"
        )
    return Reconstruction(edges, pi, method, noise, iterations, converged, rule, ll, int(n), history)


def histogram_on(values, edges: np.ndarray) -> tuple[np.ndarray, float]:
    """Fractions of ``values`` in each interval of ``edges`` (last one closed) and the fraction outside."""
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    if x.size == 0:
        raise AnonymizeError("no original values to compare with")
    idx = np.searchsorted(edges, x, side="right") - 1
    idx[x == edges[-1]] = len(edges) - 2
    ok = (idx >= 0) & (idx < len(edges) - 1)
    counts = np.bincount(idx[ok], minlength=len(edges) - 1)
    return counts / x.size, float((~ok).sum()) / x.size


def bin_mass_loss(original, rec: Reconstruction) -> float:
    """½ Σ_p |P(I_p) − P̂(I_p)| on the reconstruction's own intervals, plus ½ the fraction of original
    values outside its domain: the distance between the two *bin masses*. It is a lower bound of
    :func:`information_loss` that depends on the grid (it tends to 0 as the bins get coarser:
    with 2 bins any reconstruction with the right split looks perfect) — kept for comparison only."""
    p, outside = histogram_on(original, rec.edges)
    return 0.5 * float(np.abs(p - rec.probabilities).sum()) + 0.5 * outside


def sample_density(values, bin_width: float | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """A histogram estimate of the density of ``values`` whose grid depends on the values only
    (never on a reconstruction): ``(edges, densities, description)``.

    Bin width: ``bin_width`` if given, else the Freedman–Diaconis rule 2·IQR·n^{−1/3}
    (D. Freedman, P. Diaconis, Z. Wahrscheinlichkeitstheorie verw. Gebiete 57, 1981) — the
    width that balances the estimate's bias against its sampling noise. Integer-valued data
    (ages, counts) are read as a continuity-corrected density: each integer k spreads over
    [k − ½, k + ½), and the width is rounded to a whole number ≥ 1 so that every bin holds the
    same number of integers (otherwise the estimate would alternate between 2 and 3 integers per bin)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    if x.size == 0:
        raise AnonymizeError("no original values to compare with")
    n = x.size
    lo, hi = float(x.min()), float(x.max())
    integer = bool(np.all(x == np.round(x)))
    if bin_width is None:
        q25, q75 = np.percentile(x, [25, 75])
        h = 2.0 * float(q75 - q25) * n ** (-1.0 / 3.0)
        if not h > 0:  # more than half the values tied: fall back on range / √n
            h = (hi - lo) / math.sqrt(n)
        rule = "Freedman-Diaconis"
    else:
        h = float(bin_width)
        if not (math.isfinite(h) and h > 0):
            raise AnonymizeError(f"bin width must be a positive number, got {bin_width!r}")
        rule = "given"
    if integer:
        h = float(max(1, round(h)))
        start = lo - 0.5
        m = max(1, math.ceil((hi + 0.5 - start) / h - 1e-9))
    else:
        if not h > 0:  # all values equal
            h = 1e-9 * max(1.0, abs(lo))
        start = lo
        m = max(1, math.floor((hi - lo) / h) + 1)
    edges = start + h * np.arange(m + 1, dtype=np.float64)
    idx = np.clip(np.floor((x - start) / h).astype(np.int64), 0, m - 1)
    dens = np.bincount(idx, minlength=m) / (n * h)
    return edges, dens, {"estimator": "histogram", "rule": rule, "bin_width": h, "bins": m, "integer_valued": integer}


def _step_values(edges: np.ndarray, dens: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The piecewise-constant density (0 outside ``edges``) at points ``at``."""
    i = np.searchsorted(edges, at, side="right") - 1
    ok = (i >= 0) & (i < len(dens))
    out = np.zeros(at.shape, dtype=np.float64)
    out[ok] = dens[i[ok]]
    return out


def information_loss(
    original,
    rec: Reconstruction,
    support: tuple[float, float] | None = None,
    bin_width: float | None = None,
    points: int = 1 << 16,
) -> float:
    """Agrawal–Aggarwal's information loss ½ ∫ |f_X(x) − f̂_X(x)| dx (PODS 2001, §3; 0 = perfect,
    1 = disjoint), where f̂_X is the reconstruction's piecewise-constant density (P̂_p / width on
    each interval, 0 outside the domain) and f_X the original density, taken independently of the
    reconstruction's grid:

    * ``original`` callable — f_X itself (vectorized); ``support`` = (lo, hi) outside which it is
      zero is then required. The integral is a midpoint sum over ``points`` nodes spread over the
      union of ``support`` and the domain, with every interval edge a node boundary (so f̂_X's
      jumps cost nothing).
    * ``original`` a sample — f_X estimated by :func:`sample_density` (Freedman–Diaconis grid,
      or ``bin_width``); both densities are then step functions, and the integral is exact on the
      union of the two grids. The estimate's own sampling noise adds to the loss (it is an upper
      estimate for small samples); :func:`bin_mass_loss` is the grid-dependent lower bound.
    """
    e_rec, d_rec = rec.edges, rec.densities
    if callable(original):
        if support is None:
            raise AnonymizeError("information_loss with a density function needs its support (lo, hi)")
        a, b = float(support[0]), float(support[1])
        if not (math.isfinite(a) and math.isfinite(b) and a < b):
            raise AnonymizeError(f"support must be two finite numbers LO < HI, got {support}")
        bps = np.unique(np.concatenate([[a, b], e_rec]))
        lengths = np.diff(bps)
        per = np.maximum(16, np.ceil(points * lengths / lengths.sum()).astype(np.int64))
        total = 0.0
        for l0, ln, k in zip(bps[:-1], lengths, per):
            mids = l0 + ln * (np.arange(k) + 0.5) / k
            f = np.where((mids >= a) & (mids <= b), np.asarray(original(mids), dtype=np.float64), 0.0)
            total += float(np.abs(f - _step_values(e_rec, d_rec, mids)).sum()) * ln / k
        return 0.5 * total
    e_org, d_org, _ = sample_density(original, bin_width)
    bps = np.unique(np.concatenate([e_org, e_rec]))
    mids = 0.5 * (bps[:-1] + bps[1:])
    diff = np.abs(_step_values(e_org, d_org, mids) - _step_values(e_rec, d_rec, mids))
    return 0.5 * float(np.sum(diff * np.diff(bps)))
