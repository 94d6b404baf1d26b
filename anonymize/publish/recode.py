"""Writing the release: generalized values, ranges, ``*`` or class means.

Generalization, suppression and Mondrian's class summaries as in Aggarwal, *Data Mining: The
Textbook*, Springer 2015, §20.3.1.

A release replaces every quasi-identifier cell by what the algorithm decided, and leaves the other
columns as they are (identifiers are already dropped by :class:`.table.EncodedTable`):

* **full-domain** (Samarati, Incognito, Flash, Datafly): QI ``j`` at level ``l_j`` becomes the
  label of its ancestor at that level in the user's hierarchy (ARX semantics — the hierarchy's own
  text, e.g. ``20-24`` or ``Higher education``);
* **partitions** (Mondrian): a numeric QI becomes the range ``lo-hi`` of the values in the class
  (a single value when they are all equal); a categorical QI becomes the label of the lowest
  hierarchy node covering the class's values (generalization along the value hierarchy,
  Aggarwal 2015, §20.3.1);
* ``numeric_output='mean'`` replaces numeric QIs by the class mean instead (Aggarwal 2015, §20.3.1.3,
  "the mean of each dimension can be reported for each anonymized group");
* **suppressed rows** (full-domain searches' tuple suppression) get ``*`` in every QI
  (``suppressed_rows='star'``, what ARX publishes) or are left out (``'drop'``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from .classes import equivalence_classes
from .hierarchy import number_label
from .table import EncodedTable

__all__ = ["release_levels", "release_partition", "range_labels", "NUMERIC_OUTPUTS", "SUPPRESSED_ROWS"]

NUMERIC_OUTPUTS = ("range", "mean")
SUPPRESSED_ROWS = ("star", "drop")
STAR = "*"


def _check_options(numeric_output: str, suppressed_rows: str) -> None:
    if numeric_output not in NUMERIC_OUTPUTS:
        raise AnonymizeError(f"unknown numeric output '{numeric_output}' (use {' or '.join(NUMERIC_OUTPUTS)})")
    if suppressed_rows not in SUPPRESSED_ROWS:
        raise AnonymizeError(
            f"unknown handling of suppressed rows '{suppressed_rows}' (use {' or '.join(SUPPRESSED_ROWS)})"
        )


def range_labels(values_lo: np.ndarray, values_hi: np.ndarray) -> np.ndarray:
    """``'lo-hi'`` labels (``'v'`` when lo == hi) of numeric ranges, as an object array."""
    out = np.empty(len(values_lo), dtype=object)
    for i, (a, b) in enumerate(zip(values_lo.tolist(), values_hi.tolist())):
        out[i] = number_label(a) if a == b else f"{number_label(a)}-{number_label(b)}"
    return out


def _class_means(table: EncodedTable, j: int, class_id: np.ndarray, n_classes: int) -> np.ndarray:
    vals = np.asarray(table.hierarchies[j].leaves, dtype=np.float64)[table.qi_codes[:, j]]
    w = table.weights
    sums = np.bincount(class_id, weights=vals if w is None else vals * w, minlength=n_classes)
    cnt = np.bincount(class_id, weights=w, minlength=n_classes)
    return np.round(sums / np.maximum(cnt, 1), 6)


def _assemble(table: EncodedTable, columns: dict, suppressed: np.ndarray, suppressed_rows: str) -> pd.DataFrame:
    out = table.df.copy()
    for name, col in columns.items():
        if suppressed.any():
            col = np.asarray(col, dtype=object).copy()
            col[suppressed] = STAR
        out[name] = col
    if suppressed_rows == "drop" and suppressed.any():
        out = out.loc[~suppressed].reset_index(drop=True)
    return out


def _full_domain_classes(table: EncodedTable, levels) -> tuple[np.ndarray, int]:
    return equivalence_classes(table.generalized_codes(levels))


def release_levels(
    table: EncodedTable,
    levels,
    suppressed: np.ndarray | None = None,
    *,
    numeric_output: str = "range",
    suppressed_rows: str = "star",
) -> pd.DataFrame:
    """Release of a full-domain node: QI ``j`` → hierarchy label at ``levels[j]``; numeric QIs with
    ``numeric_output='mean'`` → mean of the original values over the row's equivalence class;
    ``suppressed`` rows → ``*`` everywhere (or dropped)."""
    _check_options(numeric_output, suppressed_rows)
    n = table.n_tuples
    suppressed = np.zeros(n, dtype=bool) if suppressed is None else np.asarray(suppressed, dtype=bool)
    cols = {}
    cid = None
    for j, (name, h) in enumerate(zip(table.schema.qis, table.hierarchies)):
        lv = int(levels[j])
        if h.numeric and numeric_output == "mean":
            if cid is None:
                cid, nc = _full_domain_classes(table, levels)
            cols[name] = _class_means(table, j, cid, nc)[cid]
        elif lv == 0:
            cols[name] = table.df[name].to_numpy()
        else:
            cols[name] = h.labels[lv][h.maps[lv][table.qi_codes[:, j]]]
    return _assemble(table, cols, suppressed, suppressed_rows)


def release_partition(
    table: EncodedTable,
    class_id: np.ndarray,
    n_classes: int,
    *,
    numeric_output: str = "range",
    suppressed: np.ndarray | None = None,
    suppressed_rows: str = "star",
) -> pd.DataFrame:
    """Release of a partition (one class id per row): numeric QIs as ``lo-hi`` ranges of the class's
    values (or class means), categorical QIs as the label of the lowest hierarchy node covering the
    class's values; labels are built once per class and gathered per row."""
    _check_options(numeric_output, suppressed_rows)
    n = table.n_tuples
    cid = np.asarray(class_id, dtype=np.int64)
    suppressed = np.zeros(n, dtype=bool) if suppressed is None else np.asarray(suppressed, dtype=bool)
    order = np.argsort(cid, kind="stable")
    sc = cid[order]
    starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]]) if n else np.zeros(0, dtype=np.int64)
    present = sc[starts]
    cols = {}
    for j, (name, h) in enumerate(zip(table.schema.qis, table.hierarchies)):
        if h.numeric and numeric_output == "mean":
            cols[name] = _class_means(table, j, cid, n_classes)[cid]
            continue
        col = table.qi_codes[order, j].astype(np.int64)
        mn = np.minimum.reduceat(col, starts)
        mx = np.maximum.reduceat(col, starts)
        labels = np.empty(n_classes, dtype=object)
        if h.numeric:
            vals = np.asarray(h.leaves)
            labels[present] = range_labels(vals[mn], vals[mx])
        else:
            lev = h.level_of_span(mn, mx)
            lab = np.empty(len(mn), dtype=object)
            for lv in np.unique(lev).tolist():
                sel = lev == lv
                lab[sel] = h.labels[lv][h.maps[lv][mn[sel]]]
            labels[present] = lab
        cols[name] = labels[cid]
    return _assemble(table, cols, suppressed, suppressed_rows)
