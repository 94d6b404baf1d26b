"""How much privacy additive noise gives: interval width (AS 2000) and conditional entropy (AA 2001).

* **Interval privacy** (R. Agrawal, R. Srikant, "Privacy-Preserving Data Mining", SIGMOD 2000,
  §2.2): if x can be estimated with c% confidence to lie in an interval of width W given the
  perturbed z, the privacy at c% is W — a property of the noise alone, [z − W/2, z + W/2] with
  W = 2a·c for uniform noise on [−a, a] and 2·z_{(1+c)/2}·σ for Gaussian (:func:`privacy_interval`).
  Relative to the **range of the attribute** (its public domain, or the original column's
  max − min) it is a percentage ("100% privacy at 95% confidence": the 95% interval is as wide as
  the attribute's whole range). It never depends on a reconstruction's grid.
* **Conditional-entropy privacy** (D. Agrawal, C. C. Aggarwal, "On the Design and Quantification
  of Privacy Preserving Data Mining Algorithms", PODS 2001, §3): the privacy inherent in X is
  Π(X) = 2^{h(X)} (the width of a uniform variable with the same differential entropy); after
  seeing Z = X + Y it is Π(X|Z) = 2^{h(X|Z)}, and the fraction of privacy lost is
  P(X|Z) = 1 − 2^{−I(X;Z)} = 1 − Π(X|Z)/Π(X). Since Y is independent of X,
  h(X|Z) = h(X) + h(Y) − h(Z).

:func:`conditional_privacy` evaluates these for a distribution of X given as a histogram
(normally the reconstructed one — the collector never sees X): h(X) exactly for the
piecewise-constant density, h(Y) in closed form, h(Z) by integrating −f_Z log₂ f_Z on a fine grid,
where f_Z = f_X ∗ f_Y is exact for a histogram f_X: f_Z(z) = Σ_p P_p (F_Y(z − l_p) − F_Y(z − u_p))/w_p.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import AnonymizeError
from .noise import Noise

__all__ = ["conditional_privacy", "interval_privacy", "privacy_interval", "estimate_range", "histogram_entropy_bits"]


def histogram_entropy_bits(edges, probabilities) -> float:
    """Differential entropy (bits) of the piecewise-constant density with these interval masses."""
    p = np.asarray(probabilities, dtype=np.float64)
    w = np.diff(np.asarray(edges, dtype=np.float64))
    nz = p > 0
    return float(-np.sum(p[nz] * np.log2(p[nz] / w[nz])))


def privacy_interval(z, noise: Noise, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The Agrawal–Srikant interval for each perturbed value: ``(z − W/2, z + W/2)`` with
    W = :meth:`.noise.Noise.interval_width` — it holds the original value with probability
    ``confidence`` (exactly: P(|Y| ≤ W/2) = c for both noise laws)."""
    z = np.asarray(z, dtype=np.float64)
    half = 0.5 * noise.interval_width(confidence)
    return z - half, z + half


def estimate_range(z, noise: Noise) -> float | None:
    """The attribute's range estimated from perturbed values alone, or None when z cannot tell.

    Uniform noise on [−a, a]: (max z − a) − (min z + a), a consistent estimate from inside (with
    few values near the extremes it is too short, so the relative privacy is overstated; give
    the public domain when it is known). Gaussian noise: None — z's spread mixes the range with
    the unbounded noise."""
    z = np.asarray(z, dtype=np.float64)
    if noise.kind != "uniform" or z.size == 0:
        return None
    r = float(z.max() - z.min()) - 2.0 * noise.scale
    return r if r > 0 else None


def interval_privacy(
    noise: Noise, confidence: float = 0.95, data_range: float | None = None, range_source: str | None = None
) -> dict:
    """AS 2000 privacy at ``confidence``: ``{"confidence", "interval_width"}``, and with the
    attribute's range ``data_range`` (its public domain or the original column's max − min —
    never a reconstruction grid) also ``"relative"`` = width / range (1.0 = "100% privacy"),
    ``"data_range"`` and ``"range_source"`` (where the range came from, when given).
    ``"width_at_full_confidence"``: 2a for uniform noise, None (unbounded) for Gaussian."""
    w = noise.interval_width(confidence)
    out: dict = {
        "confidence": confidence,
        "interval_width": w,
        "width_at_full_confidence": noise.interval_width(1.0) if noise.kind == "uniform" else None,
    }
    if data_range is not None and math.isfinite(data_range) and data_range > 0:
        out["relative"] = w / data_range
        out["data_range"] = float(data_range)
        if range_source is not None:
            out["range_source"] = range_source
    return out


def conditional_privacy(edges, probabilities, noise: Noise, grid: int = 8192) -> dict:
    """AA 2001 privacy of X (histogram ``edges``/``probabilities``) perturbed by ``noise``.

    Returns ``{"h_x_bits", "h_y_bits", "h_z_bits", "h_x_given_z_bits", "inherent_privacy" (Π(X)),
    "conditional_privacy" (Π(X|Z)), "privacy_loss" (P(X|Z))}``.
    """
    edges = np.asarray(edges, dtype=np.float64)
    p = np.asarray(probabilities, dtype=np.float64)
    if edges.ndim != 1 or len(edges) != len(p) + 1 or np.any(np.diff(edges) <= 0):
        raise AnonymizeError("conditional_privacy needs increasing edges, one more than probabilities")
    if np.any(p < 0) or not math.isclose(float(p.sum()), 1.0, rel_tol=1e-6):
        raise AnonymizeError("probabilities must be non-negative and sum to 1")
    lo_y, hi_y = noise.support()
    if not math.isfinite(lo_y):
        lo_y, hi_y = -9.0 * noise.scale, 9.0 * noise.scale  # Gaussian tails beyond 9σ: < 1e-18 of mass
    zs = np.linspace(edges[0] + lo_y, edges[-1] + hi_y, int(grid))
    lo, hi = edges[:-1][None, :], edges[1:][None, :]
    fz = ((noise.cdf(zs[:, None] - lo) - noise.cdf(zs[:, None] - hi)) / (hi - lo)) @ p
    with np.errstate(divide="ignore", invalid="ignore"):
        integrand = np.where(fz > 0, -fz * np.log2(fz), 0.0)
    h_z = float(np.trapezoid(integrand, zs))
    h_x = histogram_entropy_bits(edges, p)
    h_y = noise.entropy_bits()
    h_xz = h_x + h_y - h_z
    return {
        "h_x_bits": h_x,
        "h_y_bits": h_y,
        "h_z_bits": h_z,
        "h_x_given_z_bits": h_xz,
        "inherent_privacy": 2.0**h_x,
        "conditional_privacy": 2.0**h_xz,
        "privacy_loss": 1.0 - 2.0 ** (h_xz - h_x),
    }
