"""Thresholds as exact rationals: ``"1/3"``, ``"0.3"``, ``0.3`` and ``Fraction(1, 3)`` read the same everywhere.

Support and confidence thresholds decide ``count ≥ s·N`` in exact rational
arithmetic, i.e. the minimum support count ``ceil(s·N)`` of R. Agrawal,
R. Srikant, "Fast Algorithms for Mining Association Rules", VLDB 1994. The CLI,
the daemons' jobs, the joint miners and the party policy all read a threshold
through :func:`exact_ratio`, so a value means the same in every mode
(centralized, ``--local``, ``--parties``). No heavy imports: the joint
algorithms and the runtime both use it.
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from fractions import Fraction

__all__ = ["exact_ratio"]


def exact_ratio(x: object, what: str = "threshold") -> Fraction:
    """The exact rational ``x`` denotes; ``ValueError`` (one line naming ``what``) if it is not a number.

    Strings may be decimals (``"0.3"`` → 3/10, ``"3e-1"``) or fractions
    (``"1/3"``); floats are read as the shortest decimal they print as
    (``0.3`` → 3/10, as :func:`anonymize.itemsets.exact_fraction` does);
    integers, ``Decimal`` and ``Fraction`` as they are. Booleans, NaN and
    infinities are refused.
    """
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool):
        raise ValueError(f"{what} must be a number, not a boolean")
    if isinstance(x, Decimal):
        if not x.is_finite():
            raise ValueError(f"{what} must be finite, got {x}")
        return Fraction(x)
    if isinstance(x, numbers.Integral):
        return Fraction(int(x))
    if isinstance(x, numbers.Real):
        f = float(x)
        if not math.isfinite(f):
            raise ValueError(f"{what} must be finite, got {x!r}")
        return Fraction(repr(f))
    if isinstance(x, str):
        try:
            return Fraction(x.strip())
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{what} must be a decimal (0.25) or a fraction (1/4), got {x[:40]!r}") from None
    raise ValueError(f"{what} must be a number or a string like '0.25' or '1/4', got {type(x).__name__}")
