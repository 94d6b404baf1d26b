"""Exact samplers for integer-valued DP noise: no floating point anywhere on the sampling path.

A sampler that computes ``-scale * log(U)`` in floating point leaks through the pattern of
representable outputs: some doubles can only be produced from some true answers (Mironov,
"On significance of the least significant bits for differential privacy", ACM CCS 2012). The
samplers here draw only uniform integers (:meth:`.randomness.RandomSource.below`) and compare
integers, so every output probability is exactly what the formula says.

* :func:`bernoulli_exp_unit` — Bernoulli(exp(−γ)) for rational γ ∈ [0, 1]
  (C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential Privacy",
  NeurIPS 2020, Algorithm 1: count the Bernoulli(γ/k) successes; the output is 1 iff their
  number is even, P = Σ_k (−γ)^k / k! = exp(−γ)).
* :func:`geometric` — P(Y = y) = (1 − α) α^y, y ≥ 0, α = exp(−s/t) (the same paper, Algorithm 2,
  steps 1–7: U uniform in {0..t−1} kept with probability exp(−U/t), V ~ Geometric(exp(−1)),
  Y = ⌊(U + tV)/s⌋).
* :func:`discrete_laplace` — P(Z = z) ∝ exp(−|z|/scale) on the integers (Algorithm 2 whole:
  a random sign, rejecting "−0").
* :func:`polya` — the negative binomial NB(r, α), P(K = k) = Γ(k+r)/(Γ(r) k!) (1−α)^r α^k, for
  rational r ∈ (0, 1]: propose K ~ Geometric(α) and accept with probability
  w_K = Π_{j=1..K} (j − 1 + r)/j ≤ 1 — a product of rational Bernoulli trials, stopped at the
  first failure. The accepted K has P ∝ α^k w_k, which is NB(r, α); the acceptance rate is
  (1 − α)^(1 − r). This is exact, unlike the usual Gamma–Poisson mixture, which needs
  floating-point Gamma variates. (The rejection step is ours; the divisibility it serves is in
  S. Goryczka, L. Xiong, "A comprehensive comparison of multiparty secure additions with
  differential privacy", IEEE TDSC 2017; see :mod:`.shares`.)

All samplers are vectorized: ``size`` outputs are produced by numpy loops over the *still
undecided* entries, never by a Python loop per output. Parameters are exact rationals
(:class:`fractions.Fraction`); numerators and denominators are kept below 2**40 so that every
bound passed to :meth:`RandomSource.below` fits in 63 bits (:func:`bounded_scale` rounds a scale
*up*, i.e. towards more noise, when it has to).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .randomness import RandomSource, as_source

__all__ = [
    "MAX_TERM",
    "bernoulli_rational",
    "bernoulli_exp_unit",
    "bernoulli_exp",
    "geometric",
    "discrete_laplace",
    "polya",
    "bounded_scale",
]

MAX_TERM = 2**40  # numerators/denominators of sampler parameters stay below this


def bounded_scale(scale: Fraction) -> Fraction:
    """``scale`` itself if its numerator and denominator are below :data:`MAX_TERM`, else the
    smallest multiple of 2**−20 that is ≥ ``scale`` (more noise, never less: the mechanism stays
    ε-DP for the ε asked). Raises ``ValueError`` for scales ≥ 2**39 or ≤ 0."""
    scale = Fraction(scale)
    if scale <= 0:
        raise ValueError("the noise scale must be positive")
    if scale.numerator < MAX_TERM and scale.denominator < MAX_TERM:
        return scale
    if scale >= 2**39:
        raise ValueError(f"noise scale {float(scale):.3g} is too large (epsilon too small)")
    up = Fraction(math.ceil(scale * 2**20), 2**20)
    return up if up.numerator < MAX_TERM else Fraction(math.ceil(scale))


def bernoulli_rational(num, den, rng: RandomSource) -> np.ndarray:
    """Bernoulli(num/den) for integer arrays ``0 ≤ num ≤ den``, ``1 ≤ den < 2**63``: ``below(den) < num``."""
    num = np.asarray(num, dtype=np.uint64)
    return rng.below(den) < num


def bernoulli_exp_unit(num, den, rng: RandomSource) -> np.ndarray:
    """Bernoulli(exp(−num/den)) for integer arrays with ``0 ≤ num ≤ den`` (γ ∈ [0, 1]).

    Canonne–Kamath–Steinke 2020, Algorithm 1: K ← 1; while Bernoulli(γ/K) = 1: K ← K + 1;
    return [K odd]. P[K > k] = γ^k/k!, so P[K odd] = Σ_k (−γ)^k/k! = exp(−γ).
    """
    num = np.atleast_1d(np.asarray(num, dtype=np.uint64))
    den = np.broadcast_to(np.asarray(den, dtype=np.uint64), num.shape)
    if np.any(num > den):
        raise ValueError("bernoulli_exp_unit needs num <= den")
    k = np.ones(num.shape, dtype=np.uint64)
    active = np.arange(num.size)
    while active.size:
        a = rng.below(den[active] * k[active]) < num[active]  # Bernoulli(γ / k)
        k[active[a]] += np.uint64(1)
        active = active[a]
    return (k & np.uint64(1)).astype(bool)


def bernoulli_exp(gamma: Fraction, size: int, rng=None) -> np.ndarray:
    """``size`` Bernoulli(exp(−γ)) draws for one rational γ ≥ 0 (Algorithm 1 of Canonne et al.:
    ⌊γ⌋ independent Bernoulli(exp(−1)) trials, then one Bernoulli(exp(−(γ − ⌊γ⌋))))."""
    rng = as_source(rng)
    gamma = Fraction(gamma)
    if gamma < 0:
        raise ValueError("gamma must be non-negative")
    out = np.ones(size, dtype=bool)
    for _ in range(math.floor(gamma)):
        idx = np.flatnonzero(out)
        if not idx.size:
            return out
        out[idx] = bernoulli_exp_unit(np.ones(idx.size), 1, rng)
    frac = gamma - math.floor(gamma)
    idx = np.flatnonzero(out)
    if idx.size and frac:
        out[idx] = bernoulli_exp_unit(np.full(idx.size, frac.numerator), frac.denominator, rng)
    return out


def _geometric_e1(m: int, rng: RandomSource) -> np.ndarray:
    """V with P(V = v) = (1 − e^−1) e^−v: the number of Bernoulli(e^−1) successes before a failure."""
    v = np.zeros(m, dtype=np.int64)
    active = np.arange(m)
    while active.size:
        a = bernoulli_exp_unit(np.ones(active.size), 1, rng)
        v[active[a]] += 1
        active = active[a]
    return v


def _parts(x: Fraction, what: str) -> tuple[int, int]:
    x = Fraction(x)
    if x <= 0:
        raise ValueError(f"{what} must be positive")
    if x.numerator >= MAX_TERM or x.denominator >= MAX_TERM:
        raise ValueError(f"{what} {x} has terms of 2**40 or more; pass it through bounded_scale()")
    return x.numerator, x.denominator


def geometric(rate: Fraction, size: int, rng=None) -> np.ndarray:
    """``size`` draws of Y with P(Y = y) = (1 − α) α^y, y = 0, 1, …, α = exp(−rate), rate = s/t > 0.

    Canonne–Kamath–Steinke 2020, Algorithm 2 (steps before the sign): U uniform in {0..t−1}
    accepted with probability exp(−U/t); V ~ Geometric(exp(−1)); X = U + tV has
    P(X = x) ∝ exp(−x/t); Y = ⌊X/s⌋ has P(Y = y) ∝ exp(−y s/t).
    """
    rng = as_source(rng)
    s, t = _parts(rate, "rate")
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        u = rng.below(np.full(todo.size, t, dtype=np.uint64))
        keep = bernoulli_exp_unit(u, t, rng)
        done = todo[keep]
        x = u[keep].astype(np.int64) + t * _geometric_e1(done.size, rng)
        out[done] = x // s
        todo = todo[~keep]
    return out


def discrete_laplace(scale: Fraction, size: int, rng=None) -> np.ndarray:
    """``size`` draws of Z with P(Z = z) = tanh(1/(2·scale)) · exp(−|z|/scale) on the integers.

    Canonne–Kamath–Steinke 2020, Algorithm 2: Y ~ :func:`geometric` with rate 1/scale, a fair sign
    B, reject (B = 1, Y = 0) so that 0 is not counted twice, return (1 − 2B)·Y. Adding it to an
    integer query of sensitivity Δ with scale = Δ/ε is ε-DP (the geometric mechanism of A. Ghosh,
    T. Roughgarden, M. Sundararajan, "Universally utility-maximizing privacy mechanisms",
    STOC 2009).
    """
    rng = as_source(rng)
    rate = 1 / bounded_scale(Fraction(scale))
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        y = geometric(rate, todo.size, rng)
        b = rng.below(np.full(todo.size, 2, dtype=np.uint64)).astype(bool)
        ok = ~(b & (y == 0))
        out[todo[ok]] = np.where(b[ok], -y[ok], y[ok])
        todo = todo[~ok]
    return out


def polya(r: Fraction, rate: Fraction, size: int, rng=None) -> np.ndarray:
    """``size`` draws of NB(r, α), α = exp(−rate): P(K = k) = Γ(k+r)/(Γ(r) k!) (1−α)^r α^k, r ∈ (0, 1].

    Exact rejection sampler (module docstring): K ~ :func:`geometric`, accepted with probability
    Π_{j=1..K} (j − 1 + r)/j, tested one rational Bernoulli factor at a time and stopped at the
    first failure. In scipy's parametrization this is ``nbinom(r, 1 − α)``. The expected number of
    proposals is (1 − α)^(r − 1) ≈ rate^(r − 1) for small rates, so the cost grows as ε/Δ shrinks:
    10,000 draws with r = 1/3 take ~0.06 s at rate 1, ~0.25 s at 0.1, ~2.4 s at 0.01 (2-core machine).
    """
    rng = as_source(rng)
    r = Fraction(r)
    if not 0 < r <= 1:
        raise ValueError("polya needs 0 < r <= 1")
    a, b = r.numerator, r.denominator
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        k = geometric(rate, todo.size, rng)
        alive = np.ones(todo.size, dtype=bool)
        j = np.ones(todo.size, dtype=np.int64)
        active = np.flatnonzero(k >= 1)
        while active.size:
            jj = j[active]
            ok = bernoulli_rational((jj - 1) * b + a, jj * b, rng)  # P = (j − 1 + r)/j
            alive[active[~ok]] = False
            j[active] += 1
            active = active[ok & (j[active] <= k[active])]
        out[todo[alive]] = k[alive]
        todo = todo[~alive]
    return out
