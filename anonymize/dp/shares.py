"""Noise shares for secure sums: n parties each add one share, the revealed total carries exactly
discrete-Laplace noise, and no party knows that noise.

Construction (S. Goryczka and L. Xiong, "A Comprehensive Comparison of Multiparty Secure
Additions with Differential Privacy", IEEE Transactions on Dependable and Secure Computing,
2017 — distributed noise generation from the infinite divisibility of the geometric
distribution):

    Geometric(α) = NB(1, α) = Σ_{i=1..n} NB(1/n, α)   (negative binomials with a common α add
                                                      up in their first parameter), so
    DLap(α) = G₁ − G₂ = Σ_{i=1..n} (P_i − Q_i),       P_i, Q_i ~ NB(1/n, α) independent,

where DLap(α) — the two-sided geometric distribution, P(Z = z) = (1−α)/(1+α) · α^|z| — with
α = exp(−ε/Δ) makes a sum query of sensitivity Δ ε-differentially private (Ghosh, Roughgarden,
Sundararajan, "Universally utility-maximizing privacy mechanisms", STOC 2009). Party ``i`` adds
``P_i − Q_i`` to its input of the secure sum; the sum reveals (true total + DLap(α)).

Sampling is exact: P_i and Q_i come from :func:`.exact.polya`, an integer-only sampler for
NB(r, α) with rational r = 1/n and α = exp(−ε/Δ) (ε rational, Δ a positive integer) — a
geometric variable thinned by the marked cycles of a random permutation — so there is no
floating-point side channel and no loss of privacy from approximate Gamma variates, and the
cost hardly depends on ε.

What each party learns: its own share ``s_i``. The rest of the noise, Σ_{j≠i} s_j, is
independent of ``s_i`` and distributed as the difference of two NB((n−1)/n, α) variables, so
party ``i``'s view of the total is still noised with variance (n−1)/n · 2α/(1−α)². A coalition of
``c`` parties that pool their shares faces only the honest parties' noise, the difference of two
NB((n−c)/n, α): less than the full DLap(α), so the release is *not* ε-DP against such a
coalition (Goryczka–Xiong discuss scaling the shares up to tolerate a bounded number of
colluders; this module does not). The analyst, who sees only the total, faces exactly DLap(α).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .epsilon import as_epsilon
from .exact import bounded_scale, polya
from .randomness import as_source

__all__ = ["noise_share", "share_parameters"]


def share_parameters(n_parties: int, epsilon, sensitivity: int = 1) -> tuple[Fraction, Fraction]:
    """``(r, rate)`` of each party's NB(r, exp(−rate)) draws: r = 1/n, rate = ε/Δ (rounded down
    if its terms are huge, i.e. towards more noise)."""
    if not isinstance(n_parties, (int, np.integer)) or isinstance(n_parties, bool) or n_parties < 1:
        raise ValueError(f"n_parties must be a positive integer, got {n_parties!r}")
    if not isinstance(sensitivity, (int, np.integer)) or isinstance(sensitivity, bool) or sensitivity < 1:
        raise ValueError(f"sensitivity must be a positive integer (noise is integer-valued), got {sensitivity!r}")
    eps = as_epsilon(epsilon)
    rate = 1 / bounded_scale(Fraction(int(sensitivity)) / eps)
    return Fraction(1, int(n_parties)), rate


def noise_share(n_parties: int, epsilon, sensitivity: int = 1, rng=None, size: int | None = None):
    """One party's noise share for a secure sum over ``n_parties`` parties (module docstring).

    Returns an ``int`` (``size=None``) or an ``int64`` array of ``size`` independent shares, one per
    entry of a vector of counts. The sum of the ``n_parties`` parties' shares is distributed
    exactly as the discrete Laplace distribution P(z) ∝ exp(−ε|z|/Δ). ``rng`` — a
    :class:`.randomness.RandomSource`, a seed (tests only) or None for the OS CSPRNG.
    """
    r, rate = share_parameters(n_parties, epsilon, sensitivity)
    src = as_source(rng)
    m = 1 if size is None else int(size)
    if m < 0:
        raise ValueError("size must be non-negative")
    s = polya(r, rate, m, src) - polya(r, rate, m, src)
    return int(s[0]) if size is None else s
