"""Differential privacy with exact noise: mechanisms, a persisted budget, noise shares for secure sums.

* :mod:`.randomness` — :class:`RandomSource`: the OS CSPRNG (``os.urandom``, as :mod:`secrets`),
  or a seeded AES-CTR stream for tests; exactly uniform bounded integers.
* :mod:`.exact` — integer-only samplers: Bernoulli(exp(−γ)), geometric, discrete Laplace
  (C. Canonne, G. Kamath, T. Steinke, "The discrete Gaussian for differential privacy",
  NeurIPS 2020, Algorithms 1–2) and the negative binomial NB(r, α) for r ≤ 1.
* :mod:`.mechanisms` — ε-DP count, sum, mean and histogram over the JSON queries of
  :mod:`anonymize.query` (fixed-point for real values; explicit clamping bounds).
* :mod:`.accountant` — :class:`BudgetAccountant`, basic or advanced composition, a JSON file
  under ``fcntl.flock``; refuses a query that would overspend and then spends nothing.
* :mod:`.shares` — :func:`noise_share`: each of n parties adds a difference of two NB(1/n, α)
  draws inside a secure sum; the total carries exactly discrete-Laplace noise (S. Goryczka,
  L. Xiong, "A comprehensive comparison of multiparty secure additions with differential
  privacy", IEEE TDSC 2017).
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .accountant import COMPOSITIONS, BudgetAccountant, BudgetExceeded, compose
    from .epsilon import as_epsilon
    from .exact import bernoulli_exp, discrete_laplace, geometric, polya
    from .mechanisms import DPAnswer, dp_answer, noise_std, prepare
    from .randomness import RandomSource
    from .shares import noise_share, share_parameters

# loaded on first use (PEP 562): the party daemons read budgets without the mechanisms' pandas
_WHERE = {
    "COMPOSITIONS": "accountant",
    "BudgetAccountant": "accountant",
    "BudgetExceeded": "accountant",
    "compose": "accountant",
    "as_epsilon": "epsilon",
    "bernoulli_exp": "exact",
    "discrete_laplace": "exact",
    "geometric": "exact",
    "polya": "exact",
    "DPAnswer": "mechanisms",
    "dp_answer": "mechanisms",
    "noise_std": "mechanisms",
    "prepare": "mechanisms",
    "RandomSource": "randomness",
    "noise_share": "shares",
    "share_parameters": "shares",
}


def __getattr__(name: str):
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{mod}", __name__), name)


__all__ = [
    "RandomSource",
    "bernoulli_exp",
    "geometric",
    "discrete_laplace",
    "polya",
    "DPAnswer",
    "as_epsilon",
    "prepare",
    "dp_answer",
    "noise_std",
    "BudgetAccountant",
    "BudgetExceeded",
    "compose",
    "COMPOSITIONS",
    "noise_share",
    "share_parameters",
]
