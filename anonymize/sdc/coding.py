"""Top and bottom coding of numeric columns (sdcMicro's ``topBotCoding``).

Reference: M. Templ, A. Kowarik, B. Meindl, "Statistical Disclosure Control for Micro-Data Using
the R Package sdcMicro", *Journal of Statistical Software* 67(4), 2015 (``topBotCoding``; the
method itself is older practice of statistical offices).

Semantics as sdcMicro's ``topBotCodingWORK``: with ``kind = "top"`` every value strictly greater
than ``value`` becomes ``replacement``; with ``kind = "bottom"`` every value strictly less than
``value`` does. Missing values stay missing. sdcMicro requires ``replacement``; here it defaults to
``value`` itself (the usual "90 and over is reported as 90"). A threshold may also be a quantile
of the column's present values (:func:`column_quantile`, numpy's default ``linear`` method, which
is R's default ``type = 7``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AnonymizeError

__all__ = ["CodingResult", "column_quantile", "top_bottom_coding"]

KINDS = ("top", "bottom")


@dataclass(frozen=True)
class CodingResult:
    """``table`` after coding ``column``; ``recoded`` = number of values replaced."""

    table: pd.DataFrame
    column: str
    kind: str
    threshold: float
    replacement: float
    recoded: int
    quantile: float | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"threshold": _num(self.threshold), "replacement": _num(self.replacement)}
        if self.quantile is not None:
            d["quantile"] = self.quantile
        d["recoded"] = self.recoded
        return d


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


def _numeric(df: pd.DataFrame, column: str) -> pd.Series:
    if column not in df.columns:
        raise AnonymizeError(f"unknown column {column!r} (the table has: {', '.join(map(str, df.columns))})")
    s = df[column]
    if not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        raise AnonymizeError(f"column {column!r} is not numeric; top and bottom coding need numbers")
    return s


def column_quantile(df: pd.DataFrame, column: str, p: float) -> float:
    """The ``p`` quantile (0 ≤ p ≤ 1) of the present values of a numeric column (numpy ``linear`` =
    R ``type = 7``)."""
    s = _numeric(df, column)
    if not (isinstance(p, (int, float)) and math.isfinite(p) and 0 <= p <= 1):
        raise AnonymizeError(f"a quantile must be in [0, 1], got {p!r}")
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    x = x[np.isfinite(x)]
    if x.size == 0:
        raise AnonymizeError(f"column {column!r} has no values to take a quantile of")
    return float(np.quantile(x, p))


def top_bottom_coding(
    df: pd.DataFrame,
    column: str,
    value: float,
    replacement: float | None = None,
    kind: str = "top",
    *,
    quantile: float | None = None,
) -> CodingResult:
    """Replace the values of ``column`` above (``kind="top"``) or below (``kind="bottom"``)
    ``value`` by ``replacement`` (default ``value``) — sdcMicro's ``topBotCoding`` (Templ, Kowarik,
    Meindl, JSS 67(4), 2015). Comparisons are strict (``>`` / ``<``), missing values are left alone.

    An integer column stays integer when the replacement is a whole number, else it becomes float.
    ``quantile`` only records, for the report, that ``value`` was that quantile of the column.
    Raises :class:`AnonymizeError` for an unknown or non-numeric column, a non-finite value or
    replacement, or an unknown ``kind``.
    """
    if kind not in KINDS:
        raise AnonymizeError(f"kind must be 'top' or 'bottom', got {kind!r}")
    s = _numeric(df, column)
    if replacement is None:
        replacement = value
    for name, x in (("threshold", value), ("replacement", replacement)):
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)) or not math.isfinite(x):
            raise AnonymizeError(f"{kind}-coding {column!r}: the {name} must be a finite number, got {x!r}")
    mask = (s > value) if kind == "top" else (s < value)
    mask = mask.fillna(False).to_numpy(dtype=bool)
    table = df.copy()
    if mask.any():
        new = s.copy()
        if pd.api.types.is_integer_dtype(new.dtype) and not float(replacement).is_integer():
            new = new.astype("Float64" if isinstance(new.dtype, pd.api.extensions.ExtensionDtype) else np.float64)
        rep: int | float = int(replacement) if pd.api.types.is_integer_dtype(new.dtype) else float(replacement)
        new[mask] = rep
        table[column] = new
    return CodingResult(
        table=table,
        column=column,
        kind=kind,
        threshold=float(value),
        replacement=float(replacement),
        recoded=int(mask.sum()),
        quantile=quantile,
    )
