"""Differentially private secure sums: every party adds a noise share, nobody knows the total noise.

Construction (S. Goryczka, L. Xiong, "A comprehensive comparison of multiparty secure additions
with differential privacy", IEEE TDSC 2017, distributed noise from the infinite divisibility of
the geometric distribution): each of the n parties adds to every entry of its input of the
secure sum (:func:`mpc.secure_sum.secure_sum`, or the secure sum with threshold) its own share
P_i − Q_i, with P_i, Q_i ~ NB(1/(n − c), α) drawn exactly (:func:`anonymize.dp.noise_share`),
α = exp(−ε/Δ). The secure sum reveals only the total, so:

* ``c = 0`` (the default): the revealed total carries Σ_i (P_i − Q_i) ~ DLap(α), *exactly* the
  discrete Laplace (two-sided geometric) noise of the geometric mechanism (A. Ghosh,
  T. Roughgarden, M. Sundararajan, "Universally utility-maximizing privacy mechanisms", STOC
  2009): ε-DP for a sum of L1 sensitivity Δ against the analyst and every outsider.
  What a party learns: its own share; the rest of the noise is independent of it and is a
  difference of two NB((n − 1)/n, α) — *less* than DLap(α). No party knows the total noise, but
  the release is not ε-DP against a party: a coalition of c' ≥ 1 parties that subtracts its
  shares faces a difference of two NB(r, α), r = (n − c')/n, whose pmf ratio between
  neighbouring integers lies in [α·r, 1/(α·r)] (p_{k+1}/p_k = α(k + r)/(k + 1) ∈ [αr, α] for
  NB(r, α)), so against it the release is (ε + Δ·ln(n/(n − c')))-DP — an upper bound, nearly
  tight (n = 3, c' = 1, ε/Δ = 0.5: the exact worst per-unit loss is 0.856, the bound 0.905;
  :func:`coalition_epsilon`).
* ``c > 0`` (``colluders``): shares are NB(1/(n − c), α) differences, so any n − c parties' shares
  alone add up to a full DLap(α) (Goryczka–Xiong's collusion-tolerant variant): the total
  is ε-DP against every coalition of up to c parties (they can subtract their shares but face
  DLap(α) from the others) and against the analyst (who faces more: the noise variance is
  n/(n − c) times that of DLap(α)). ``colluders=1`` makes the release ε-DP against every single
  party at 1.5× the variance for n = 3.

The noised values live only inside the secure sums: what a party sends is masked as in the exact
protocol, so nobody sees a noised input either.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from anonymize.dp import RandomSource, noise_share
from mpc.channel import Channel, agree
from mpc.secure_sum import secure_sum

__all__ = ["noisy_inputs", "noisy_secure_sum", "noise_stats", "tail_margin", "check_colluders", "coalition_epsilon"]


def check_colluders(n_parties: int, colluders: int) -> int:
    """``colluders`` as an int in [0, n − 1] (``ValueError`` with one line otherwise)."""
    if isinstance(colluders, bool) or not isinstance(colluders, int) or not 0 <= colluders < n_parties:
        raise ValueError(f"colluders must be an integer from 0 to {n_parties - 1} (parties - 1), got {colluders!r}")
    return colluders


def noisy_inputs(
    x: np.ndarray, n_parties: int, epsilon: Fraction, sensitivity: int, rng: RandomSource, colluders: int = 0
) -> np.ndarray:
    """This party's input ``x`` (int64) plus its noise shares, one per entry (module docstring)."""
    x = np.asarray(x, dtype=np.int64)
    share = noise_share(n_parties - colluders, epsilon, int(sensitivity), rng, size=x.size)
    return x + share.reshape(x.shape)


async def noisy_secure_sum(
    ch: Channel,
    x,
    *,
    epsilon: Fraction,
    sensitivity: int,
    rng: RandomSource,
    colluders: int = 0,
    tag: str = "dp-sum",
    on_release: Callable[[Fraction], None] | None = None,
) -> np.ndarray:
    """Σ_i x_i + DLap(exp(−ε/Δ)) noise (elementwise, int64), revealed to every party; no party knows the noise.

    ``epsilon`` (exact rational), ``sensitivity`` Δ (the L1 sensitivity of the summed vector)
    and ``colluders`` are public and agreed by every party before any noise is drawn. ε-DP for
    neighbouring inputs whose sums differ by at most Δ in L1 (module docstring for coalitions).
    ``on_release(ε)`` is called once every party has agreed and before any noisy value is sent
    (a party's budget records the release; a session some party refused never gets there).
    """
    check_colluders(len(ch.parties), colluders)
    x = np.asarray(x)
    await agree(
        ch,
        f"{tag}/dp",
        epsilon=str(epsilon),
        sensitivity=int(sensitivity),
        colluders=int(colluders),
        shape=list(x.shape),
    )
    if on_release is not None:
        on_release(epsilon)
    y = noisy_inputs(x, len(ch.parties), epsilon, sensitivity, rng, colluders)
    return await secure_sum(ch, y, tag=tag)


def noise_stats(epsilon: Fraction, sensitivity: int, n_parties: int, colluders: int = 0) -> dict:
    """Scale, standard deviation and expected absolute error of the revealed noise (floats).

    DLap(α), α = e^(−ε/Δ): std = √(2α)/(1 − α), E|Z| = 2α/(1 − α²). With colluders the noise is a
    difference of two NB(n/(n − c), α): std √(n/(n − c)) times larger; its E|Z| is reported as ≤ std.
    """
    a = math.exp(-float(epsilon) / int(sensitivity))
    std = math.sqrt(2 * a) / (1 - a)
    out = {"noise_scale": float(Fraction(int(sensitivity)) / epsilon), "noise_std": std}
    if colluders:
        out["noise_std"] = std * math.sqrt(n_parties / (n_parties - colluders))
        out["expected_abs_error_at_most"] = out["noise_std"]
    else:
        out["expected_abs_error"] = 2 * a / (1 - a * a)
    return out


def tail_margin(epsilon: Fraction, sensitivity: int, n_parties: int, colluders: int = 0) -> int:
    """A bound the revealed noise exceeds in absolute value with probability below 10⁻¹⁶.

    DLap(α): P(|Z| ≥ z) ≤ 2α^z, so z = 40·Δ/ε gives 2e^(−40) < 10⁻¹⁷; the collusion-tolerant noise is
    a sum of at most ⌈n/(n − c)⌉ such differences in distribution (a sum of NB(1) variables dominates it).
    """
    copies = -(-n_parties // (n_parties - colluders))
    return int(math.ceil(40 * Fraction(int(sensitivity)) / epsilon)) * copies + 1


def coalition_epsilon(epsilon: Fraction, sensitivity: int, n_parties: int, colluders: int, coalition: int) -> float:
    """Upper bound on the privacy loss of one noisy sum against ``coalition`` parties pooling their shares.

    ε itself for coalitions of at most ``colluders`` parties (and for the analyst, ``coalition=0``);
    beyond, the others' noise is a difference of two NB(r, α), r = (n − coalition)/(n − colluders),
    and the bound is ε + Δ·ln(1/r) (module docstring); ``inf`` when no other party is left.
    """
    if coalition <= colluders:
        return float(epsilon)
    if coalition >= n_parties:
        return math.inf
    return float(epsilon) + int(sensitivity) * math.log((n_parties - colluders) / (n_parties - coalition))
