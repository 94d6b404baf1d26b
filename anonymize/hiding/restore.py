"""Putting back deleted items that no sensitive itemset needs gone: makes a sanitization *minimal*.

A deletion-only sanitization is minimal when no deleted item can be restored
without some sensitive pattern being mined again — or, for a rule with a minimum
confidence, without changing *how* it is hidden: a rule whose X ∪ Y is below
``minc`` keeps it there, a rule hidden by confidence (X ∪ Y still frequent) keeps its
confidence below C. Restoring only raises supports, so it never loses a frequent
itemset, and keeping each rule's route keeps the set of itemsets that had to vanish
(:mod:`.metrics`) unchanged, so the misses cost never rises. The exact algorithm
(:mod:`.exact`) relies on minimality: in a minimal solution every edited transaction is
critical for a sensitive pattern — it re-completes its itemset when restored — and at most
``count(S) − minc + 1`` transactions of D(S) lose S (exactly that many when S is hidden
by support; fewer when a rule is hidden by confidence, its X ∪ Y staying ≥ ``minc``), which
bounds how far any other itemset's support can fall (Gkoulalas-Divanis & Verykios, "An
integer programming approach for frequent itemset hiding", CIKM 2006, restrict edits
to the transactions supporting sensitive itemsets for the same reason).

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
    """Restore every deleted item whose return keeps each sensitive pattern hidden *the way it is hidden
    now*, trying deletions by ascending transaction, pass after pass until none can come back. Returns
    the number of items restored.

    A pattern whose itemset (a rule's X ∪ Y) is below ``minc`` keeps it below ``minc`` (support
    semantics); a rule with a minimum confidence C whose X ∪ Y is frequent keeps its confidence below C
    (a restore that completes X ∪ Y must leave ``count(X∪Y)·q < p·count(X)``, C = p/q; one that
    completes only X lowers the confidence and is always allowed — which is why a later pass may restore
    what an earlier one could not). Keeping the route keeps H (:mod:`.metrics`: the X ∪ Y of rules hidden
    by support) as it is, so restoring never raises the number of lost itemsets."""
    t, r, added = state.net_edits()
    t, r = t[~added], r[~added]
    if t.size == 0:
        return 0
    conf = state.conf
    minc = state.min_count
    pats = list(patterns)
    rows = [frozenset(state.rows(p.items).tolist()) for p in pats]
    ante: list[frozenset | None] = [
        frozenset(state.rows(p.antecedent).tolist()) if (conf is not None and p.is_rule) else None for p in pats
    ]
    a = [state.count(sorted(s)) for s in rows]
    b = [state.count(sorted(x)) if x is not None else 0 for x in ante]
    by_conf = [x is not None and a[j] >= minc for j, x in enumerate(ante)]  # the route, fixed for the whole run
    p_, q_ = (conf.numerator, conf.denominator) if conf is not None else (0, 1)

    def hidden(j: int, aj: int, bj: int) -> bool:
        return aj * q_ < p_ * bj if by_conf[j] else aj < minc

    by_item: dict[int, list[int]] = {}
    for j, s in enumerate(rows):
        for i in s:
            by_item.setdefault(i, []).append(j)
    ut = np.unique(t)
    M = state.rowbits(ut)
    sens = np.array(sorted(by_item), dtype=np.int64)
    held = {int(u): set(sens[M[sens, c]].tolist()) for c, u in enumerate(ut.tolist())}
    back_t: list[int] = []
    back_r: list[int] = []
    todo = list(zip(t.tolist(), r.tolist()))
    while todo:
        left = []
        for tt, rr in todo:
            have = held[tt]
            da, db = [], []
            for j in by_item.get(rr, ()):
                if rows[j] - {rr} <= have:
                    da.append(j)
                else:
                    x = ante[j]
                    if x is not None and rr in x and x - {rr} <= have:
                        db.append(j)
            ok = True
            for j in da:
                x = ante[j]
                if not hidden(j, a[j] + 1, b[j] + (x is not None and rr in x)):
                    ok = False
                    break
            if not ok:
                left.append((tt, rr))
                continue
            for j in da:
                a[j] += 1
                x = ante[j]
                if x is not None and rr in x:
                    b[j] += 1
            for j in db:
                b[j] += 1
            have.add(rr)
            back_t.append(tt)
            back_r.append(rr)
        if len(left) == len(todo) or not any(by_conf):
            break  # support semantics: one pass is a fixpoint (counts only rise)
        todo = left
    if not back_t:
        return 0
    return state.apply(np.array(back_t), np.array(back_r), add=True)
