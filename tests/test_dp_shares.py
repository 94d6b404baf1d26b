"""Noise shares for secure sums: the total is exactly discrete Laplace; one party's view is not.

Oracles: scipy.stats.dlaplace (the total's law) and scipy.stats.nbinom (a share is a difference
of two NB(1/n, α); the rest of the noise a difference of two NB((n−1)/n, α)), with χ² at level
1e-6 and the DKW band at α = 1e-6 (exact for discrete distributions too).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from anonymize.dp import RandomSource, noise_share, share_parameters
from anonymize.errors import AnonymizeError

LEVEL = 1e-6
N_RUNS = 30000


def dkw(n: int) -> float:
    return math.sqrt(math.log(2 / LEVEL) / (2 * n))


def nb_difference_pmf(r: float, alpha: float, support: np.ndarray) -> np.ndarray:
    """P(A − B = z) = Σ_k P(A = k + z) P(B = k) for A, B ~ NB(r, α) independent (scipy's pmfs)."""
    p = stats.nbinom(r, 1 - alpha).pmf(np.arange(0, 4000))
    K = len(p)
    return np.array([np.dot(p[z:], p[: K - z]) if z >= 0 else np.dot(p[: K + z], p[-z:]) for z in support])


def chi2_p(sample: np.ndarray, pmf_vals: np.ndarray, support: np.ndarray) -> float:
    """χ² p-value on the cells of ``support`` plus one pooled cell for everything outside it."""
    n = len(sample)
    obs = np.array([np.sum(sample == v) for v in support] + [np.sum((sample < support[0]) | (sample > support[-1]))])
    exp = np.concatenate([pmf_vals, [max(1 - pmf_vals.sum(), 0.0)]]) * n
    keep = exp >= 5
    obs_k, exp_k = obs[keep], exp[keep]
    exp_k = exp_k * obs_k.sum() / exp_k.sum()  # pooled cells dropped below 5 expected
    return stats.chisquare(obs_k, exp_k).pvalue


def shares(n_parties, eps, sens, runs, seed):
    # each party draws its own shares from its own source; row = one secure-sum run
    return np.stack(
        [noise_share(n_parties, eps, sens, RandomSource(seed * 100 + i), size=runs) for i in range(n_parties)]
    )


@pytest.mark.parametrize("n_parties, eps, sens", [(3, "0.5", 1), (5, "1", 2), (2, "0.3", 1)])
def test_sum_of_shares_is_discrete_laplace(n_parties, eps, sens):
    s = shares(n_parties, eps, sens, N_RUNS, seed=1)
    total = s.sum(axis=0)
    a = float(eps) / sens  # α = exp(−ε/Δ): scipy's dlaplace(a)
    dist = stats.dlaplace(a)
    grid = np.arange(int(dist.ppf(1e-4)) - 2, int(dist.ppf(1 - 1e-4)) + 3)
    ecdf = np.searchsorted(np.sort(total), grid, side="right") / N_RUNS
    assert np.max(np.abs(ecdf - dist.cdf(grid))) <= dkw(N_RUNS)
    support = np.arange(int(dist.ppf(0.005)), int(dist.ppf(0.995)) + 1)
    assert chi2_p(total, dist.pmf(support), support) > LEVEL


def test_one_party_does_not_know_the_noise():
    n, eps = 3, "0.5"
    s = shares(n, eps, 1, N_RUNS, seed=2)
    total = s.sum(axis=0)
    mine, rest = s[0], total - s[0]
    alpha = math.exp(-0.5)
    # (1) the rest of the noise, what party 0 cannot see, is a difference of two NB((n-1)/n, α)
    support = np.arange(-12, 13)
    assert chi2_p(rest, nb_difference_pmf((n - 1) / n, alpha, support), support) > LEVEL
    # (2) it is independent of party 0's share: χ² independence on a contingency table
    cut = lambda v: np.clip(v, -2, 2)  # noqa: E731
    table = np.zeros((5, 5))
    np.add.at(table, (cut(mine) + 2, cut(rest) + 2), 1)
    assert stats.chi2_contingency(table).pvalue > LEVEL
    # (3) so party 0's uncertainty about the total noise keeps (n-1)/n of its variance
    var_total = 2 * alpha / (1 - alpha) ** 2
    var_rest = (n - 1) / n * var_total
    mu4 = np.sum(np.arange(-200, 201) ** 4 * nb_difference_pmf((n - 1) / n, alpha, np.arange(-200, 201)))
    assert abs(rest.var() - var_rest) <= 4.9 * math.sqrt((mu4 - var_rest**2) / N_RUNS)
    # (4) a single share is a difference of two NB(1/n, α), far narrower than the total's law
    support = np.arange(-6, 7)
    assert chi2_p(mine, nb_difference_pmf(1 / n, alpha, support), support) > LEVEL


def test_scalar_and_vector_shapes_and_validation():
    assert isinstance(noise_share(3, 1, 1, RandomSource(1)), int)
    v = noise_share(3, 1, 1, RandomSource(1), size=7)
    assert v.shape == (7,) and v.dtype == np.int64
    r, rate = share_parameters(4, "0.25", 2)
    assert (r, rate) == (Fraction(1, 4), Fraction(1, 8))
    for bad in [dict(n_parties=0), dict(n_parties=2.5), dict(sensitivity=0), dict(sensitivity=1.5)]:
        kw = dict(n_parties=3, epsilon=1, sensitivity=1) | bad
        with pytest.raises(ValueError):
            noise_share(**kw, rng=RandomSource(1))
    with pytest.raises(AnonymizeError):
        noise_share(3, -1, 1, RandomSource(1))
