"""When the noise of an ε-DP mining job drowns its support threshold: ``ppdm mine --epsilon``'s warning.

The mechanism (:mod:`parties.joint.dp_mining`, :mod:`parties.joint.dp_sum`): level k's count vector
gets discrete Laplace noise DLap(α_k) per count, α_k = exp(−ε_k/Δ_k), where ε_k is level k's share of
ε (ε/20 goes to N, the rest is split over the levels) and Δ_k = min(m, |C_k|) the level's L1
sensitivity (|C_k| candidates, m = ``max_contributions``); with c colluders the noise is a difference
of two NB(n/(n − c), α_k), √(n/(n − c)) times DLap's standard deviation. A candidate is reported iff
its noisy count reaches t = ⌈min_support · Ñ⌉ (Ñ the noisy number of transactions, ``dp.threshold``).

**Expected noise** here means the standard deviation σ_k of the noise on one count at level k — the
``noise_std`` the result reports per level: σ_k = √(n/(n − c)) · √(2α_k) / (1 − α_k). The warning is
given when σ_k > t for some level that ran. Then a candidate no transaction supports reaches the
threshold with probability P(Z ≥ σ_k) = α_k^σ_k / (1 + α_k) ≈ e^(−√2)/2 ≈ 12% (DLap, small ε_k/Δ_k),
and as most candidates of a level are infrequent, most reported itemsets are there by noise.

The suggested ε is the smallest for which every level's σ_k ≤ t when the job's split is kept (each
ε_k the same fraction of ε as in this run; a run with more ε may reach more levels, which are then
split anew): per level, σ(α) = t is solved for α (with u = √α and s = t / √(n/(n − c)):
s·u² + √2·u − s = 0), ε_k* = −Δ_k · ln α, and ε* = max_k ε · ε_k*/ε_k, rounded up to two significant
digits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["NoiseAdvice", "dlap_std", "noise_advice", "noise_warning", "required_epsilon"]


def dlap_std(epsilon: float, sensitivity: int) -> float:
    """Standard deviation of DLap(α), α = exp(−ε/Δ): √(2α) / (1 − α)."""
    a = math.exp(-float(epsilon) / int(sensitivity))
    return math.sqrt(2 * a) / (1 - a)


def required_epsilon(threshold: float, sensitivity: int, factor: float = 1.0) -> float:
    """The ε at which ``factor`` · std of DLap(exp(−ε/Δ)) equals ``threshold`` (module docstring)."""
    s = float(threshold) / float(factor)
    u = (-math.sqrt(2) + math.sqrt(2 + 4 * s * s)) / (2 * s)
    return -int(sensitivity) * math.log(u * u)


def _round_up(x: float, digits: int = 2) -> float:
    """``x`` rounded up to ``digits`` significant digits."""
    if x <= 0 or not math.isfinite(x):
        return x
    q = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return float(f"{math.ceil(x / q - 1e-9) * q:.{digits}g}")


@dataclass(frozen=True)
class NoiseAdvice:
    """The verdict on one ε-DP result: the noisiest level, its count noise, the threshold and the ε to try.

    ``minimum_epsilon``: the ε at which the noisiest level's std equals the threshold (the job's split
    kept); ``suggested_epsilon``: that, rounded up to two significant digits.
    """

    epsilon: float
    level: int
    noise_std: float
    threshold: int
    minimum_epsilon: float
    suggested_epsilon: float

    @property
    def noisy(self) -> bool:
        """Whether the noise exceeds the support threshold (the warning applies)."""
        return self.noise_std > self.threshold

    def message(self) -> str:
        """The one-line warning: ``most itemsets below are noise at this ε: try ε ≥ X`` and why."""
        return (
            f"most itemsets below are noise at this ε: try ε ≥ {self.suggested_epsilon:.6g} "
            f"(noise std of a count at level {self.level}: {self.noise_std:,.0f}, over the support threshold "
            f"{self.threshold:,} at ε = {self.epsilon:.6g})"
        )


def noise_advice(result: Mapping[str, Any]) -> NoiseAdvice | None:
    """The noise verdict of a mining result with a ``dp`` block (module docstring); None without one, or
    when no level ran or the threshold is not positive."""
    dp = result.get("dp")
    if not dp or not dp.get("levels"):
        return None
    t = int(dp.get("threshold") or 0)
    if t <= 0:
        return None
    eps = float(dp["epsilon"])
    worst, need = None, 0.0
    for lv in dp["levels"]:
        e_k, delta = float(lv["epsilon"]), int(lv["sensitivity"])
        base = dlap_std(e_k, delta)
        factor = float(lv.get("noise_std", base)) / base  # √(n/(n − c)) with colluders, else 1
        std = factor * base
        if worst is None or std > worst[1]:
            worst = (int(lv["k"]), std)
        need = max(need, eps * required_epsilon(t, delta, factor) / e_k)
    assert worst is not None
    return NoiseAdvice(eps, worst[0], worst[1], t, need, _round_up(need))


def noise_warning(result: Mapping[str, Any]) -> str | None:
    """The warning line when the expected noise of the result's counts exceeds its support threshold, else None."""
    advice = noise_advice(result)
    return advice.message() if advice is not None and advice.noisy else None
