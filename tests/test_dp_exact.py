"""Exact DP samplers against scipy's distributions (independent oracles).

Thresholds come from the math, not from runs: a χ² goodness-of-fit test must not reject at
level 1e-6 (scipy.stats.chisquare), and the empirical CDF must stay within the
Dvoretzky–Kiefer–Wolfowitz band sqrt(ln(2/α) / (2n)) at α = 1e-6 (valid for any distribution,
discrete ones included). Seeds are fixed, so every run is the same run.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from anonymize.dp import RandomSource
from anonymize.dp.exact import bernoulli_exp, bounded_scale, discrete_laplace, geometric, polya

ALPHA = 1e-6


def dkw(n: int) -> float:
    return math.sqrt(math.log(2 / ALPHA) / (2 * n))


def chi2_ok(sample: np.ndarray, pmf, support: np.ndarray) -> float:
    """p-value of a χ² test on ``support`` (tails pooled into the end cells, each cell ≥ 5 expected)."""
    n = len(sample)
    lo, hi = support[0], support[-1]
    inner = np.arange(lo + 1, hi)
    exp = np.concatenate([[pmf_cdf_lo(pmf, lo)], pmf(inner), [1 - pmf_cdf_lo(pmf, lo) - pmf(inner).sum()]]) * n
    obs = np.concatenate([[np.sum(sample <= lo)], [np.sum(sample == v) for v in inner], [np.sum(sample >= hi)]])
    assert exp.min() >= 5
    return stats.chisquare(obs, exp).pvalue


def pmf_cdf_lo(pmf, lo):
    # P(X <= lo) for the distributions used here (support bounded below by -200)
    vals = np.arange(-200, lo + 1)
    return pmf(vals).sum()


def test_below_is_uniform_and_handles_large_bounds():
    src = RandomSource(1)
    x = src.below(np.full(60000, 6, dtype=np.uint64))
    assert x.min() >= 0 and x.max() <= 5
    assert stats.chisquare(np.bincount(x.astype(np.int64), minlength=6)).pvalue > ALPHA
    big = np.uint64(2**62 + 12345)
    y = src.below(np.full(2000, big, dtype=np.uint64))
    assert (y < big).all()
    # the top bit of values below 2**62+12345 is set with probability ~ 12345/2**62 ≈ 0; bit 61 half the time
    frac = np.mean((y >> np.uint64(61)) & np.uint64(1))
    assert abs(frac - 0.5) < 5 * math.sqrt(0.25 / 2000)
    with pytest.raises(ValueError):
        src.below(np.array([0], dtype=np.uint64))


def test_seeded_sources_repeat_and_os_source_does_not():
    a, b = RandomSource(7).words(8), RandomSource(7).words(8)
    assert (a == b).all()
    assert not (RandomSource(8).words(8) == a).all()
    assert not (RandomSource().words(8) == RandomSource().words(8)).all()


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(7, 3)])
def test_bernoulli_exp_probability(gamma):
    n = 40000
    x = bernoulli_exp(gamma, n, RandomSource(2))
    p = math.exp(-float(gamma))
    # binomial: |mean - p| <= z sqrt(p(1-p)/n) with z for two-sided 1e-6 (4.89)
    assert abs(x.mean() - p) <= 4.9 * math.sqrt(p * (1 - p) / n) + 1e-12


@pytest.mark.parametrize("rate", [Fraction(1, 2), Fraction(3), Fraction(1, 10)])
def test_geometric_matches_scipy(rate):
    n = 50000
    y = geometric(rate, n, RandomSource(3))
    alpha = math.exp(-float(rate))
    dist = stats.geom(1 - alpha, loc=-1)  # P(Y = y) = (1 - α) α^y, y >= 0
    assert y.min() >= 0
    top = int(dist.ppf(0.995))
    support = np.arange(0, max(top, 2) + 1)
    if len(support) >= 3:
        assert chi2_ok(y, dist.pmf, support) > ALPHA
    grid = np.arange(0, top + 1)
    ecdf = np.searchsorted(np.sort(y), grid, side="right") / n
    assert np.max(np.abs(ecdf - dist.cdf(grid))) <= dkw(n)


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(2), Fraction(10, 3)])
def test_discrete_laplace_matches_scipy_dlaplace(scale):
    n = 60000
    z = discrete_laplace(scale, n, RandomSource(4))
    assert z.dtype == np.int64
    dist = stats.dlaplace(1 / float(scale))  # pmf tanh(a/2) exp(-a|k|)
    lo, hi = int(dist.ppf(0.003)), int(dist.ppf(0.997))
    assert chi2_ok(z, dist.pmf, np.arange(lo, hi + 1)) > ALPHA
    grid = np.arange(lo - 3, hi + 4)
    ecdf = np.searchsorted(np.sort(z), grid, side="right") / n
    assert np.max(np.abs(ecdf - dist.cdf(grid))) <= dkw(n)
    # sample variance against the exact variance, 4th-moment CLT bound (z = 4.9)
    var, mu4 = dist.var(), dist.moment(4)
    assert abs(z.var() - var) <= 4.9 * math.sqrt((mu4 - var**2) / n)


@pytest.mark.parametrize(
    "r, rate", [(Fraction(1, 3), Fraction(1, 10)), (Fraction(1, 2), Fraction(1)), (Fraction(1), Fraction(1, 2))]
)
def test_polya_matches_scipy_nbinom(r, rate):
    n = 40000
    k = polya(r, rate, n, RandomSource(5))
    alpha = math.exp(-float(rate))
    dist = stats.nbinom(float(r), 1 - alpha)
    top = int(dist.ppf(0.99))
    support = np.arange(0, top + 1)
    exp = dist.pmf(support[:-1]) * n
    keep = support[:-1][exp >= 5]
    hi = int(keep[-1]) + 1
    obs = np.concatenate([[np.sum(k == v) for v in range(hi)], [np.sum(k >= hi)]])
    expct = np.concatenate([dist.pmf(np.arange(hi)), [dist.sf(hi - 1)]]) * n
    assert stats.chisquare(obs, expct).pvalue > ALPHA
    assert abs(k.mean() - dist.mean()) <= 4.9 * dist.std() / math.sqrt(n)


@pytest.mark.parametrize("r, rate", [(Fraction(1, 3), Fraction(1, 2000)), (Fraction(2, 5), Fraction(1, 50))])
def test_polya_small_rates_match_scipy_cdf(r, rate):
    """The regime of distributed noise for large sensitivity/ε (α close to 1): DKW band on the whole CDF."""
    n = 20000
    k = polya(r, rate, n, RandomSource(11))
    dist = stats.nbinom(float(r), 1 - math.exp(-float(rate)))
    grid = np.unique(np.linspace(0, dist.ppf(0.999), 400).astype(np.int64))
    ecdf = np.searchsorted(np.sort(k), grid, side="right") / n
    assert np.max(np.abs(ecdf - dist.cdf(grid))) <= dkw(n)
    assert abs(k.mean() - dist.mean()) <= 4.9 * dist.std() / math.sqrt(n)


def test_bounded_scale_rounds_up_never_down():
    s = Fraction(3**30 + 1, 3**30)  # about 1, with terms above 2**40
    b = bounded_scale(s)
    assert b >= s and b.numerator < 2**40 and b.denominator < 2**40
    t = Fraction(10**13 + 1, 7 * 10**12)
    assert bounded_scale(t) >= t
    assert bounded_scale(Fraction(3, 2)) == Fraction(3, 2)
    with pytest.raises(ValueError):
        bounded_scale(Fraction(0))
    with pytest.raises(ValueError, match="too large"):
        bounded_scale(Fraction(3**30 + 1, 3))


def test_samplers_never_touch_floating_point(monkeypatch):
    """The DP path draws only uniform integers: forbid the float helper and sample anyway."""

    def boom(self, size):
        raise AssertionError("a DP sampler used floating-point uniforms")

    monkeypatch.setattr(RandomSource, "uniform01", boom)
    src = RandomSource(9)
    discrete_laplace(Fraction(5, 2), 1000, src)
    polya(Fraction(1, 4), Fraction(1, 3), 1000, src)
