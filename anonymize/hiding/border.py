"""Border-based hiding: keep the positive border of the non-sensitive frequent itemsets.

Reference: X. Sun, P. S. Yu, "A border-based approach for hiding sensitive frequent
itemsets", IEEE ICDM 2005. The non-sensitive frequent itemsets F' (every frequent
itemset not containing a sensitive one) are the down-closure of their *revised
positive border* Bd⁺ — the maximal members of F' — so a sanitization that keeps
every border itemset frequent loses nothing else. Deleting item i from a
transaction t that supports a sensitive itemset S lowers by one the support of
every border itemset b with i ∈ b ⊆ t; the *border impact* of the candidate
deletion (t, i) is the weighted number of such b.

Weights (our concrete choice in the spirit of Sun–Yu, who weigh a border itemset by
how close its support is to the threshold): with margin m(b) = count(b) − minc,

* w(b) = |Bd⁺| + 1 when m(b) = 0 — the deletion would lose b; this outweighs any
  number of touches of itemsets with room to spare;
* w(b) = 1/(m(b) + 1) otherwise — the closer to the threshold, the dearer.

Per sensitive itemset S (fewest required deletions first), the algorithm deletes,
one at a time, the candidate (t, i), i ∈ S, t ⊇ S, of least border impact (ties:
shortest transaction, then a seeded random tie-break), updates the weights of the
touched border itemsets incrementally, and stops when count(S) < minc. All
zero-impact candidates are taken in one batch. When a border itemset is lost the
border is recomputed (its subsets may have become maximal). Rules are hidden
through their generating itemset X ∪ Y (support), as Sun–Yu hide itemsets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from .patterns import SensitivePattern
from .state import HidingState

__all__ = ["run_border", "BorderDeadline"]


class _Impact:
    """Border impact of every candidate deletion (t, i) for one sensitive itemset."""

    def __init__(self, state: HidingState, T: np.ndarray, cand: np.ndarray) -> None:
        self.state = state
        self.T, self.cand = T, cand
        border = state.positive_border()
        sel_k, sel_i, blocks = [], [], []
        for k, idx in border:
            rows = state.fp[k][idx]
            hit = np.isin(rows, cand).any(axis=1)
            if hit.any():
                sel_k.append(k)
                sel_i.append(idx[hit])
                blocks.append(rows[hit])
        self.n_border = sum(idx.size for _, idx in border)
        self.flat = (
            np.concatenate([state.flat_index(k, i) for k, i in zip(sel_k, sel_i)]) if sel_k else np.zeros(0, np.int64)
        )
        M = state.rowbits(T)
        conts = [state.contained(M, b) for b in blocks]
        self.C = np.concatenate(conts) if conts else np.zeros((0, T.size), bool)  # (B, T) b ⊆ t
        has = [(b[:, :, None] == cand[None, None, :]).any(axis=1) for b in blocks]
        self.H = np.concatenate(has) if has else np.zeros((0, cand.size), bool)  # (B, C) i ∈ b
        self.w = self.weights()
        self.cost = self.C.T.astype(np.float64) @ (self.w[:, None] * self.H)  # (T, C)

    def counts(self) -> np.ndarray:
        return self.state.flat_count(self.flat)

    @property
    def big(self) -> float:
        return float(self.n_border + 1)

    def weights(self) -> np.ndarray:
        m = self.counts() - self.state.min_count
        big = self.big
        w = np.zeros(m.size)
        w[m == 0] = big
        pos = m > 0
        w[pos] = 1.0 / (m[pos] + 1.0)
        return w


class BorderDeadline(Exception):
    """The border algorithm ran past the deadline it was given (the state is left part-way)."""


def _hide_one(state: HidingState, p: SensitivePattern, deadline: float | None = None) -> int:
    xy = state.rows(p.items)
    edits = 0
    while True:
        if deadline is not None and time.perf_counter() > deadline:
            raise BorderDeadline
        need = state.count(xy) - state.min_count + 1
        if need <= 0:
            return edits
        T = state.tids(xy)
        T = T[state.lengths[T] >= 2]
        if T.size == 0:
            return edits
        imp = _Impact(state, T, xy)
        alive = np.ones(T.size, dtype=bool)
        rank = np.empty(T.size, dtype=np.float64)
        rank[state.order_shortest(T)] = np.arange(T.size)  # static tie-break: shortest, then seeded
        rebuild = False
        batch = 4
        while need > 0 and alive.any() and not rebuild:
            if deadline is not None and time.perf_counter() > deadline:
                raise BorderDeadline
            best = imp.cost  # rows of edited transactions are +inf
            j = np.argmin(best, axis=1)
            c = best[np.arange(T.size), j]
            zero = np.flatnonzero(c == 0)
            if zero.size:  # deletions touching no border itemset: take them together
                zero = zero[state.order_shortest(T[zero])][:need]
                done = state.apply(T[zero], xy[j[zero]])
                alive[zero] = False
                imp.cost[zero] = np.inf
                need -= done
                edits += done
                if done < zero.size:
                    rebuild = True
                continue
            # least impact first (ties: shortest, then seeded). Deletions whose touched border itemsets
            # are disjoint do not change each other's impact, so the greedy would take that prefix one by
            # one anyway: take it at once, up to the first overlap (or the first that loses a border itemset)
            n_ok = int(np.isfinite(c).sum())
            if n_ok == 0:
                break
            kk = min(batch, need, n_ok)
            part = np.argpartition(c, kk - 1)[:kk]
            sub = np.flatnonzero(c <= c[part].max() + 1e-9)
            order = sub[np.lexsort((rank[sub], c[sub]))][:kk]
            tb = imp.C[:, order].T & imp.H[:, j[order]].T  # (K, B): border itemsets each deletion touches
            clash = (tb & ((np.cumsum(tb, axis=0) - tb) > 0)).any(axis=1)
            k = int(np.argmax(clash)) if clash.any() else order.size
            lossy = (tb & (imp.w >= imp.big)[None, :]).any(axis=1)
            if lossy[:k].any():
                k = int(np.argmax(lossy)) + 1
            sel = order[: max(k, 1)]
            batch = batch * 2 if sel.size == order.size else max(1, sel.size)
            w_old = imp.w
            done = state.apply(T[sel], xy[j[sel]])
            alive[sel] = False
            imp.cost[sel] = np.inf
            need -= done
            edits += done
            if not done:
                continue
            touched = tb[: sel.size].any(axis=0)
            imp.w = imp.weights()
            if (imp.w[touched] == 0).any():  # a border itemset was lost: the border changed
                rebuild = True
                continue
            dw = imp.w - w_old
            if touched.any():
                imp.cost += imp.C[touched].T.astype(np.float64) @ (dw[touched, None] * imp.H[touched])
            imp.C[:, sel] = False
        if need <= 0 or (not rebuild and not alive.any()):
            return edits


def run_border(
    state: HidingState,
    patterns: Sequence[SensitivePattern],
    *,
    progress: Callable[[str], None] | None = None,
    deadline: float | None = None,
) -> dict:
    """Sanitize ``state`` with border-based hiding (module docstring); returns ``{"border_lost"}``,
    the number of original border itemsets no longer frequent. ``deadline`` (``time.perf_counter()``):
    raise :class:`BorderDeadline` once it passes (the exact algorithm's warm start)."""
    border0 = state.positive_border()
    counts = [state.count(state.rows(p.items)) for p in patterns]
    order = sorted(range(len(patterns)), key=lambda i: (counts[i] - state.min_count, -len(patterns[i].items)))
    for n, i in enumerate(order):
        if counts[i] < state.min_count:
            continue
        if progress:
            progress(f"border: itemset {n + 1}/{len(order)} ({patterns[i]})")
        _hide_one(state, patterns[i], deadline)
    lost = sum(int((state.fp_count[k][idx] < state.min_count).sum()) for k, idx in border0)
    return {"border_size": sum(idx.size for _, idx in border0), "border_lost": lost}
