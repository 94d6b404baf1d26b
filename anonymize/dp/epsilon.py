"""ε (and other privacy parameters) as exact rationals: read without loading pandas, so the party
daemons' budget guard (:mod:`parties.guards.dp_budget`) starts light."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..errors import AnonymizeError

__all__ = ["EPSILON_RANGE", "as_epsilon"]

EPSILON_RANGE = (Fraction(1, 10**6), Fraction(10**12))
"""The ε a mechanism or a budget accepts: below it the noise scale overflows a float (``1e-400``
crashed the Laplace sampler after creating its budget file), above it a budget never runs out."""


def as_epsilon(x, what: str = "epsilon", *, bounds: tuple[Fraction, Fraction] | None = EPSILON_RANGE) -> Fraction:
    """Parse ε (or another privacy parameter) as an exact positive rational.

    Strings are read as written (``"0.1"`` → 1/10, ``"1/3"``); floats by their shortest decimal
    repr (0.1 → 1/10), so the accountant adds up exactly what the user typed. ``bounds``: the
    accepted range (default :data:`EPSILON_RANGE`; None for any positive value, e.g. δ).
    """
    try:
        if isinstance(x, Fraction):
            f = x
        elif isinstance(x, bool):
            raise ValueError
        elif isinstance(x, (int, np.integer)):
            f = Fraction(int(x))
        elif isinstance(x, (float, np.floating)):
            if not math.isfinite(x):
                raise ValueError
            f = Fraction(repr(float(x)))
        elif isinstance(x, str):
            f = Fraction(x.strip())
        else:
            raise ValueError
    except (ValueError, ZeroDivisionError, TypeError):
        raise AnonymizeError(f"{what} must be a positive number, got {x!r}") from None
    if f <= 0:
        raise AnonymizeError(f"{what} must be positive, got {x}")
    if bounds is not None and not bounds[0] <= f <= bounds[1]:
        raise AnonymizeError(f"{what} must be between {float(bounds[0]):g} and {float(bounds[1]):g}, got {x}")
    return f
