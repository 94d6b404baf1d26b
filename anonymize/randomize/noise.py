"""Additive noise for privacy at collection time: uniform or Gaussian, public, independent of the data.

Model (R. Agrawal and R. Srikant, "Privacy-Preserving Data Mining", ACM SIGMOD 2000, §2;
C. C. Aggarwal, *Data Mining: The Textbook*, Springer 2015, §20.2): each value x_i is released as
z_i = x_i + y_i, with y_i drawn independently from a publicly known distribution Y — uniform on
[−a, a] or Gaussian N(0, σ²). The collector sees only z; the distribution of X is reconstructed
from z and Y (:mod:`.reconstruct`).

:class:`Noise` gives Y's density, CDF and the antiderivative of its CDF (used for exact bin
probabilities), its differential entropy, and the Agrawal–Srikant privacy of the scheme: the
width of the interval that contains x with a given confidence when z is seen.

The Gaussian CDF uses a vectorized erfc with fractional error below 1.2·10⁻⁷ (the Chebyshev
fit ``erfcc`` of W. H. Press et al., *Numerical Recipes in C*, 2nd ed., Cambridge University
Press 1992, §6.2) — ample for density reconstruction; numpy has no erf of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ..errors import AnonymizeError

__all__ = ["NOISE_KINDS", "Noise", "normal_cdf", "perturb", "scale_for_privacy"]

NOISE_KINDS = ("uniform", "gaussian")
_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _erfc(x: np.ndarray) -> np.ndarray:
    """erfc(x), fractional error < 1.2e-7 everywhere (Numerical Recipes ``erfcc``)."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = (
        -z * z
        - 1.26551223
        + t
        * (
            1.00002368
            + t
            * (
                0.37409196
                + t
                * (
                    0.09678418
                    + t
                    * (
                        -0.18628806
                        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))
                    )
                )
            )
        )
    )
    r = t * np.exp(poly)
    return np.where(x >= 0, r, 2.0 - r)


def normal_cdf(x) -> np.ndarray:
    """Φ(x) of the standard normal, vectorized (see the module docstring for the precision)."""
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * _erfc(-x / _SQRT2)


@dataclass(frozen=True)
class Noise:
    """Public additive noise: ``kind`` uniform (on [−scale, scale]) or gaussian (σ = scale)."""

    kind: str
    scale: float

    def __post_init__(self):
        if self.kind not in NOISE_KINDS:
            raise AnonymizeError(f"unknown noise '{self.kind}' (use {' or '.join(NOISE_KINDS)})")
        s = self.scale
        if isinstance(s, bool) or not isinstance(s, (int, float, np.integer, np.floating)) or not math.isfinite(s):
            raise AnonymizeError(f"noise scale must be a finite number, got {s!r}")
        if s <= 0:
            raise AnonymizeError(f"noise scale must be positive, got {s}")
        object.__setattr__(self, "scale", float(s))

    # ---------------------------------------------------------------- distribution
    def sample(self, n: int, rng=None) -> np.ndarray:
        """``n`` draws of Y from ``rng`` (:class:`anonymize.dp.RandomSource`, a seed, or None = OS CSPRNG).

        Uniform: (2U − 1)·a; Gaussian: Box–Muller, √(−2 ln U₁)·cos(2πU₂)·σ."""
        from ..dp.randomness import as_source

        src = as_source(rng)
        if self.kind == "uniform":
            return (2.0 * src.uniform01(n) - 1.0) * self.scale
        u1, u2 = src.uniform01(n), src.uniform01(n)
        return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2) * self.scale

    def pdf(self, y) -> np.ndarray:
        """Density f_Y(y)."""
        y = np.asarray(y, dtype=np.float64)
        if self.kind == "uniform":
            return np.where(np.abs(y) <= self.scale, 0.5 / self.scale, 0.0)
        u = y / self.scale
        return np.exp(-0.5 * u * u) * (_INV_SQRT_2PI / self.scale)

    def cdf(self, y) -> np.ndarray:
        """F_Y(y)."""
        y = np.asarray(y, dtype=np.float64)
        if self.kind == "uniform":
            return np.clip((y + self.scale) / (2.0 * self.scale), 0.0, 1.0)
        return normal_cdf(y / self.scale)

    def cdf_integral(self, y) -> np.ndarray:
        """G(y) = ∫_{−∞}^{y} F_Y(t) dt, so P(c ≤ X + Y ≤ d) for X uniform on [l, u] is
        (G(d−l) − G(d−u) − G(c−l) + G(c−u)) / (u − l).

        Uniform on [−a, a]: 0 below −a, (y + a)²/(4a) inside, y above a.
        Gaussian σ: y Φ(y/σ) + σ φ(y/σ)."""
        y = np.asarray(y, dtype=np.float64)
        a = self.scale
        if self.kind == "uniform":
            inside = (y + a) ** 2 / (4.0 * a)
            return np.where(y <= -a, 0.0, np.where(y >= a, y, inside))
        u = y / a
        return y * normal_cdf(u) + a * _INV_SQRT_2PI * np.exp(-0.5 * u * u)

    def support(self) -> tuple[float, float]:
        """Interval outside which f_Y is zero (± infinity for Gaussian)."""
        if self.kind == "uniform":
            return -self.scale, self.scale
        return -math.inf, math.inf

    def entropy_bits(self) -> float:
        """Differential entropy h(Y) in bits: log₂(2a) (uniform), ½ log₂(2πe σ²) (Gaussian)."""
        if self.kind == "uniform":
            return math.log2(2.0 * self.scale)
        return 0.5 * math.log2(2.0 * math.pi * math.e * self.scale**2)

    def interval_width(self, confidence: float = 0.95) -> float:
        """Agrawal–Srikant privacy at ``confidence`` c (SIGMOD 2000, §2.2, Table 1): the width of the
        shortest interval [z − w/2, z + w/2] that holds the original x with probability c given the
        perturbed z = x + y — i.e. that holds Y with probability c, whatever the data:
        2a·c for uniform noise on [−a, a] (2a at 100% confidence), 2·z_{(1+c)/2}·σ for Gaussian
        (3.92σ at 95%; unbounded at 100%, so c = 1 is refused)."""
        if isinstance(confidence, bool) or not 0.0 < confidence <= 1.0:
            raise AnonymizeError(f"confidence must be in (0, 1], got {confidence}")
        if self.kind == "uniform":
            return 2.0 * self.scale * confidence
        if confidence == 1.0:
            raise AnonymizeError("Gaussian noise has no finite interval at 100% confidence; use a confidence below 1")
        return 2.0 * NormalDist().inv_cdf((1.0 + confidence) / 2.0) * self.scale

    def describe(self) -> dict:
        return {"kind": self.kind, "scale": self.scale, "std": self.std()}

    def std(self) -> float:
        """Standard deviation of Y: a/√3 (uniform), σ (Gaussian)."""
        return self.scale / math.sqrt(3.0) if self.kind == "uniform" else self.scale


def scale_for_privacy(kind: str, width: float, confidence: float = 0.95) -> float:
    """The noise scale whose Agrawal–Srikant privacy at ``confidence`` equals ``width``
    (e.g. the range of the data for "100% privacy"): a = w/(2c) uniform, σ = w/(2 z_{(1+c)/2}) Gaussian."""
    return width / Noise(kind, 1.0).interval_width(confidence)


def perturb(values, noise: Noise, rng=None) -> np.ndarray:
    """``values + Y`` (float64), one independent noise draw per value. Non-finite values are an error."""
    x = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise AnonymizeError("cannot perturb missing or infinite values; drop or impute them first")
    return x + noise.sample(x.size, rng).reshape(x.shape)
