"""Input coercion shared by the arithmetic protocols: integer arrays only, clear errors otherwise."""

from __future__ import annotations

import numpy as np

__all__ = ["integer_array"]


def integer_array(v, what: str) -> np.ndarray:
    """``v`` as an integer numpy array: empty lists become int64, bools uint8; anything else non-integer
    raises ``TypeError("<what> need integer ..., got <dtype>")``."""
    a = np.asarray(v)
    if a.size == 0 and a.dtype.kind == "f":  # np.asarray([]) is float64
        a = a.astype(np.int64)
    if a.dtype.kind == "b":
        a = a.astype(np.uint8)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what} need integer inputs, got {a.dtype}")
    return a
