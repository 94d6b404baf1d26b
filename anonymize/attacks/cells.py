"""Does a released (generalized) cell cover a raw value? The adversary's reading of a release.

A release shows quasi-identifiers as plain values (``39``), suppressed cells (``*``), ranges
(``20-29``, ``[20, 30)``, ``20..29``), masked codes (``476**``) or hierarchy labels
(``North America``, ``spouse present``). An adversary holding an external table with raw values
(a voter list, L. Sweeney, "k-anonymity: a model for protecting privacy", IJUFKS 10(5), 2002;
C. C. Aggarwal, *Data Mining: The Textbook*, Springer 2015, §20.3) decides per column whether a
released cell can hold the raw value:

1. ``*`` (or an empty cell) covers everything;
2. with a hierarchy for the column, a label of the hierarchy covers the leaves under it (the
   lowest level where the label occurs). ARX's Adult age file labels its bands off by one
   (``40-44`` holds 41–45) while a Mondrian release writes the true range ``40-44``; a label that
   is both is ambiguous, and the adversary takes the union of both readings (never missing the
   true record);
3. on a numeric column, a range covers the numbers inside it (inclusive ``a-b``; ``[a, b)``
   half-open);
4. a masked code ``476**`` covers codes of the same length starting with ``476``;
5. otherwise the cell covers the values equal to it (numerically on numeric columns).

:func:`cover_matrix` evaluates this for every (distinct cell, distinct value) pair, one numpy
comparison per distinct cell — never per row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..publish.hierarchy import Hierarchy

__all__ = ["cover_matrix", "parse_range", "value_text"]

_NUM = r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_RANGE = re.compile(r"^\s*([\[(]?)\s*" + _NUM + r"\s*(?:-|,|\.\.|~)\s*" + _NUM + r"\s*([\])]?)\s*$")


def parse_range(text: str) -> tuple[float, float, bool, bool] | None:
    """``'20-29'`` → (20, 29, lo_open=False, hi_open=False); ``'[20, 30)'`` → (20, 30, False, True);
    ``'(1.5, 2]'``, ``'20..29'``, ``'20~29'``; None if ``text`` is not a range with lo ≤ hi."""
    m = _RANGE.match(text)
    if not m:
        return None
    lo, hi = float(m.group(2)), float(m.group(3))
    if lo > hi:
        return None
    return lo, hi, m.group(1) == "(", m.group(4) == ")"


def value_text(v) -> str:
    """Canonical text of a value: strings stripped, integral floats without ``.0``."""
    if isinstance(v, str):
        return v.strip()
    if isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer():
        return str(int(v))
    return str(v)


def _numeric_values(values: Sequence) -> np.ndarray | None:
    """``values`` as float64 if every one is a number (or numeric text), else None."""
    try:
        x = np.array([float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return x if np.all(np.isfinite(x)) else None


def _hierarchy_levels(h: Hierarchy) -> list[pd.Index]:
    return [pd.Index(np.asarray(h.labels[lv]).astype(str)) for lv in range(h.height + 1)]


def cover_matrix(cells: Sequence, values: Sequence, hierarchy: Hierarchy | None = None) -> np.ndarray:
    """``M[i, j]`` = released cell ``cells[i]`` covers raw value ``values[j]`` (module docstring).

    ``cells`` and ``values`` are the *distinct* entries of one column in the release and in the
    external table; the result is a ``(len(cells), len(values))`` bool matrix.
    """
    cell_txt = [value_text(c) if not (isinstance(c, float) and math.isnan(c)) else "" for c in cells]
    val_txt = np.array([value_text(v) for v in values], dtype=object)
    val_num = _numeric_values(values)
    out = np.zeros((len(cell_txt), len(val_txt)), dtype=bool)

    leaf_codes = np.full(len(val_txt), -1, dtype=np.int64)
    levels: list[pd.Index] = []
    if hierarchy is not None:
        levels = _hierarchy_levels(hierarchy)
        if hierarchy.numeric and val_num is not None:
            leaf_vals = hierarchy.leaves.astype(np.float64)
            pos = np.clip(np.searchsorted(leaf_vals, val_num), 0, len(leaf_vals) - 1)
            leaf_codes = np.where(leaf_vals[pos] == val_num, pos, -1)
        else:
            leaf_codes = pd.Index(np.asarray(hierarchy.leaves).astype(str)).get_indexer(val_txt)

    val_series: pd.Series | None = None
    lengths = np.zeros(0, dtype=np.int64)
    for i, c in enumerate(cell_txt):
        if c in ("", "*"):
            out[i] = True
            continue
        r = parse_range(c) if val_num is not None else None
        in_range = None
        if r is not None and val_num is not None:
            lo, hi, lo_open, hi_open = r
            above = val_num > lo if lo_open else val_num >= lo
            below = val_num < hi if hi_open else val_num <= hi
            in_range = above & below
        if hierarchy is not None:
            done = False
            for lv, idx in enumerate(levels):
                node = idx.get_indexer([c])[0]
                if node >= 0:
                    ok = leaf_codes >= 0
                    row = np.zeros(len(val_txt), dtype=bool)
                    row[ok] = hierarchy.maps[lv][leaf_codes[ok]] == node
                    out[i] = row | (val_txt == c)
                    if in_range is not None:  # ambiguous text: a hierarchy label that also reads as a range
                        out[i] |= in_range
                    done = True
                    break
            if done:
                continue
        if in_range is not None:
            out[i] = in_range
            continue
        if val_num is not None:
            try:
                out[i] = val_num == float(c)
                continue
            except ValueError:
                pass
        stem = c.rstrip("*")
        if stem != c and stem:
            if val_series is None:
                val_series = pd.Series(val_txt, dtype=object)
                lengths = val_series.str.len().to_numpy()
            out[i] = val_series.str.startswith(stem).to_numpy(dtype=bool) & (lengths == len(c))
            continue
        out[i] = val_txt == c
    return out
