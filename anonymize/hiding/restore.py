"""Putting back deleted items that no sensitive itemset needs gone: makes a sanitization *minimal*.

A deletion-only sanitization is minimal when no deleted item can be restored
without some sensitive itemset becoming frequent again. Restoring only raises
supports, so it never loses a pattern and never un-hides one if every sensitive
itemset it re-supports stays at most ``minc − 1``. The exact algorithm (:mod:`.exact`)
relies on minimality: in a minimal solution every edited transaction is critical for
a sensitive itemset, which bounds how far any other itemset's support can fall
(Gkoulalas-Divanis & Verykios, "An integer programming approach for frequent
itemset hiding", CIKM 2006, restrict edits to the transactions supporting
sensitive itemsets for the same reason).

Decisions are taken in Python over small per-transaction sets (only edited
transactions are visited), then applied to the state in one batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .patterns import SensitivePattern
from .state import HidingState

__all__ = ["restore_unneeded"]


def restore_unneeded(state: HidingState, patterns: Sequence[SensitivePattern]) -> int:
    """Restore every deleted item whose return keeps each sensitive itemset below ``minc``
    (support semantics; a rule counts through its generating itemset), trying deletions by
    ascending transaction. Returns the number of items restored."""
    t, r, added = state.net_edits()
    t, r = t[~added], r[~added]
    if t.size == 0:
        return 0
    rows = [frozenset(state.rows(p.items).tolist()) for p in patterns]
    slack = [state.min_count - 1 - state.count(sorted(s)) for s in rows]
    by_item: dict[int, list[int]] = {}
    for j, s in enumerate(rows):
        for i in s:
            by_item.setdefault(i, []).append(j)
    ut, inv = np.unique(t, return_inverse=True)
    M = state.rowbits(ut)
    sens = np.array(sorted(by_item), dtype=np.int64)
    held = {int(u): set(sens[M[sens, c]].tolist()) for c, u in enumerate(ut.tolist())}
    back_t, back_r = [], []
    for tt, rr in zip(t.tolist(), r.tolist()):
        have = held[tt]
        hit = [j for j in by_item.get(rr, ()) if rows[j] - {rr} <= have]
        if all(slack[j] >= 1 for j in hit):
            for j in hit:
                slack[j] -= 1
            have.add(rr)
            back_t.append(tt)
            back_r.append(rr)
    if not back_t:
        return 0
    return state.apply(np.array(back_t), np.array(back_r), add=True)
