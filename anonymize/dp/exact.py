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
  rational r ∈ (0, 1], without any rejection whose cost grows as α → 1: draw G ~ Geometric(α)
  (= NB(1, α)), then thin it by a Beta(r, 1 − r) proportion, K | G ~ BetaBinomial(G, r, 1 − r);
  the thinned variable is NB(r, α) (below). The beta-binomial is drawn exactly as the total
  length of the cycles of a uniform random permutation of G elements that are independently
  *marked* with probability r: the cycle containing the first remaining element has a length
  uniform on {1..rem} (the Feller coupling). About ln G + 1 uniform integers per draw, whatever ε.

  Why it is NB(r, α): Geometric(α) is Poisson(θ·E) with E ~ Exp(1), θ = α/(1−α); binomial
  thinning by p turns Poisson(λ) into Poisson(pλ); and B·E ~ Gamma(r) for B ~ Beta(r, 1 − r)
  independent of E (the beta–gamma algebra), so K ~ Poisson(θ·Gamma(r)) = NB(r, α). Why the
  marked cycles are BetaBinomial(G, r, 1 − r): the Pólya urn with weights (r, 1 − r) draws a
  success with probability (r + y)/(1 + j) after j draws with y successes — Hoppe's urn with
  θ = 1 whose new colours are marked with probability r (F. M. Hoppe, "Pólya-like urns and the
  Ewens sampling formula", J. Math. Biol. 20, 1984), whose table sizes are the cycle lengths of
  a uniform permutation (R. Arratia, A. D. Barbour, S. Tavaré, "Logarithmic Combinatorial
  Structures: a Probabilistic Approach", EMS 2003, §1.1: the Chinese restaurant process and
  the Feller coupling). The infinite divisibility this serves is S. Goryczka, L. Xiong, "A
  comprehensive comparison of multiparty secure additions with differential privacy", IEEE
  TDSC 2017 (see :mod:`.shares`).

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

    Exact (module docstring): G ~ :func:`geometric`, then K = the summed lengths of the marked
    cycles of a uniform random permutation of G elements, each cycle marked with probability r:
    repeat L ~ Uniform{1..rem}, add L if a Bernoulli(r) succeeds, rem ← rem − L, until rem = 0.
    In scipy's parametrization this is ``nbinom(r, 1 − α)``. The cost is about ln(G) + 1 rounds
    of vectorized uniform draws, so it hardly depends on ε: 10,000 draws take a few milliseconds
    at rate 1 and about 0.02 s at rate 10⁻⁴ (2-core machine).
    """
    rng = as_source(rng)
    r = Fraction(r)
    if not 0 < r <= 1:
        raise ValueError("polya needs 0 < r <= 1")
    a, b = r.numerator, r.denominator
    rem = geometric(rate, size, rng)
    out = np.zeros(size, dtype=np.int64)
    active = np.flatnonzero(rem > 0)
    while active.size:
        length = rng.below(rem[active]).astype(np.int64) + 1  # the next cycle: uniform on 1..rem
        marked = bernoulli_rational(np.full(active.size, a), np.full(active.size, b, dtype=np.uint64), rng)
        out[active[marked]] += length[marked]
        rem[active] -= length
        active = active[rem[active] > 0]
    return out
