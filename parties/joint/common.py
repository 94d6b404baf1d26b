"""What both joint miners share: the result type, the phase clock, the exact threshold, the all-party check."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

from anonymize.itemsets import AssociationRules, FrequentItemsets, Rule
from mpc.channel import Channel, broadcast, gather_from
from mpc.errors import ProtocolError
from parties.ratio import exact_ratio

__all__ = [
    "JointResult",
    "LevelGuard",
    "PhaseClock",
    "ProgressFn",
    "check_all",
    "support_ratio",
    "confidence_ratio",
]

ProgressFn = Callable[[str], None]  # gets one line per level (sizes every party learns anyway)
# called with (k, number of candidates) before a level is counted; raises ValueError to stop the job
# (a party's memory limit: the candidate count is public, so the message reveals nothing)
LevelGuard = Callable[[int, int], None]


@dataclass
class JointResult:
    """Output of a joint mining run on one party (identical on every party but the stats)."""

    frequent: FrequentItemsets
    rules: AssociationRules | list[Rule] | None  # list: rules decided without counts (private counts)
    phases: dict[str, float] = field(default_factory=dict)
    rounds: int = 0
    bytes_sent: int = 0
    revealed: list[str] = field(default_factory=list)
    levels: list[dict] = field(default_factory=list)
    dp: dict | None = None  # differentially private runs: epsilon, its split, sensitivities, expected errors

    def protocol(self) -> dict:
        """The JSON ``protocol`` block: per-phase seconds, rounds, bytes, leakage."""
        return {
            "phases_seconds": {k: round(v, 6) for k, v in self.phases.items()},
            "rounds": self.rounds,
            "bytes_sent": self.bytes_sent,
            "levels": self.levels,
            "revealed": self.revealed,
        }


class PhaseClock:
    """Adds the seconds since ``t0`` to ``res.phases[phase]`` and returns the new start time."""

    def __init__(self, res: JointResult):
        self.res = res

    def add(self, phase: str, t0: float) -> float:
        now = time.perf_counter()
        self.res.phases[phase] = self.res.phases.get(phase, 0.0) + now - t0
        return now


async def check_all(ch: Channel, tag: str, problem: str | None, *, anonymous: bool = False) -> None:
    """Raise on *every* party if any party reports a problem (one clear message).

    ``problem`` is a short text without private values (e.g. "its data has item
    ids outside the agreed universe"); it is shown prefixed by the party name —
    or, with ``anonymous``, as "some party ..." once, when which party it is would
    itself be a disclosure (probing ``n_items`` would find every party's largest item id).
    """
    mine = (problem or "").encode()
    await broadcast(ch, f"check/{tag}", mine)
    got = await gather_from(ch, f"check/{tag}")
    got[ch.me] = mine
    problems = [got[p].decode(errors="replace") for p in ch.parties if got[p]]
    if problems and anonymous:
        raise ProtocolError("; ".join(f"some party {x}" for x in dict.fromkeys(problems)))
    bad = [f"party {p} {got[p].decode(errors='replace')}" for p in ch.parties if got[p]]
    if bad:
        raise ProtocolError("; ".join(bad))


def support_ratio(minsup) -> Fraction:
    """The minimum support as the exact rational the user wrote (``"0.3"``, ``"1/3"``, 0.3, a Fraction).

    ``ValueError`` (one line) if it is not a number in (0, 1]; see :func:`parties.ratio.exact_ratio`.
    """
    f = exact_ratio(minsup, "min support")
    if not (0 < f <= 1):
        raise ValueError(f"min support must be in (0, 1] (got {minsup})")
    return f


def confidence_ratio(minconf) -> Fraction:
    """The minimum confidence as an exact rational in [0, 1] (as :func:`support_ratio`)."""
    f = exact_ratio(minconf, "min confidence")
    if not (0 <= f <= 1):
        raise ValueError(f"min confidence must be in [0, 1] (got {minconf})")
    return f
