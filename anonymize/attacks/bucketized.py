"""Attacks on bucketized releases (Anatomy, MSAL): a QI table with ``group_id`` and, per sensitive
attribute, a table of ``group_id``, value, ``count``.

X. Xiao, Y. Tao, "Anatomy: simple and effective privacy preservation", VLDB 2006, §3: the adversary
who links a person to QI rows learns, for each of them, only its group's sensitive multiset. So a
released row *carries its group's histogram* in place of one value: the candidates for a person are
the union of the values of the groups of the rows that match, and the adversary's best guess weighs
each value by its count in those groups. :func:`row_histograms` gives that (rows × values) matrix,
which :func:`.linkage.link` sums per matching class like the one-hot histograms of a generalized
release; homogeneity and background knowledge then read it unchanged (Anatomy with l ≥ 2 distinct
values per group leaves no homogeneous person). Differencing needs a row-level value to subtract,
which a bucketized release does not have, so :func:`.report.run_attacks` does not run it there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from .cells import value_text

__all__ = ["GROUP_ID", "row_histograms"]

GROUP_ID = "group_id"


def row_histograms(release: pd.DataFrame, table: pd.DataFrame, sensitive: str) -> tuple[np.ndarray, np.ndarray]:
    """``(values, H)``: the distinct values of ``sensitive`` in the sensitive ``table`` and, per release row,
    its group's count of each (``H[r, v]``; a row whose group is missing from the table gets zeros).

    ``table`` has columns ``group_id``, ``sensitive`` and ``count`` (what ``ppdm anonymize --algorithm
    anatomy|msal`` writes next to the release)."""
    for frame, what, cols in (
        (release, "the release", [GROUP_ID]),
        (table, "the sensitive table", [GROUP_ID, sensitive, "count"]),
    ):
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise AnonymizeError(
                f"{what} has no column {', '.join(repr(c) for c in missing)} (a bucketized release has "
                f"'{GROUP_ID}', and its table of '{sensitive}' has {GROUP_ID}, {sensitive}, count)"
            )
    counts = pd.to_numeric(table["count"], errors="coerce")
    if counts.isna().any() or (counts < 0).any() or (counts != np.floor(counts)).any():
        raise AnonymizeError(f"the sensitive table of '{sensitive}' has a 'count' that is not a non-negative integer")
    gid_rel = release[GROUP_ID].map(value_text).to_numpy(dtype=object)
    gid_tab = table[GROUP_ID].map(value_text).to_numpy(dtype=object)
    groups, g_codes = np.unique(np.concatenate([gid_tab, gid_rel]), return_inverse=True)
    g_tab, g_rel = g_codes[: len(gid_tab)], g_codes[len(gid_tab) :]
    values, v_codes = np.unique(table[sensitive].map(value_text).to_numpy(dtype=object), return_inverse=True)
    per_group = np.zeros((len(groups), len(values)), dtype=np.float64)
    np.add.at(per_group, (g_tab, v_codes), counts.to_numpy(dtype=np.float64))
    return values, per_group[g_rel]
