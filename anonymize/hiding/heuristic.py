"""Heuristic support and confidence reduction: Verykios et al. 2004, algorithms 1.a–2.c.

Reference: V. S. Verykios, A. K. Elmagarmid, E. Bertino, Y. Saygin, E. Dasseni,
"Association rule hiding", IEEE TKDE 16(4):434–447, 2004, §4 (the algorithms of
E. Dasseni, V. S. Verykios, A. K. Elmagarmid, E. Bertino, "Hiding association rules by using
confidence and support", Information Hiding 2001, extended). Each strategy edits only the
transactions that support the pattern and stops as soon as it is hidden:

* **1.a** (rules, needs a confidence threshold) — *increase the support of the
  antecedent X*: add the missing items of X to transactions that hold neither all
  of X nor all of Y (so count(X ∪ Y) is unchanged), those already holding most of X
  first, then the shortest, until ``count(X∪Y)/count(X) < C``. Adds items, so it
  can create ghost patterns and never loses frequent itemsets.
* **1.b** (rules) — *decrease the support of the consequent Y*: delete an item of Y
  from transactions that support X ∪ Y, shortest first, until confidence < C or
  support < minsup.
* **2.a** (rules and itemsets) — *decrease the support of the generating itemset
  X ∪ Y*: delete an item of X ∪ Y from its shortest supporting transactions until
  support < minsup or (rules) confidence < C, whichever comes first.
* **2.b** (itemsets; rules through X ∪ Y) — as 2.a, support only, patterns taken
  longest first (then most frequent), so hiding a long itemset first may already
  hide a shorter one sharing its transactions.
* **2.c** — as 2.b, the victim item taken round-robin over the pattern's items.

Victim item (``victim``):

* ``"max-support"`` — the item of the pattern with the largest current support,
  the choice of the paper's 2.a/2.b (its support has most room to drop);
* ``"round-robin"`` — 2.c's rotation;
* ``"min-side-effect"`` (default for 1.b/2.a/2.b) — per transaction, the item whose
  deletion touches the fewest non-sensitive frequent itemsets, weighted by how close
  each is to the threshold (:meth:`~.state.HidingState.side_effect_cost`); the
  transactions whose best deletion costs least are edited first (then shortest).

The costs are computed once per pattern (static), which keeps the heuristic a few
numpy calls per pattern; the border-based algorithm (:mod:`.border`) updates them
after every deletion. Deletions that later raise a hidden rule's confidence again
(removing an X item elsewhere) are caught by a verification pass that re-runs the
strategy on whatever is still mined (at most ``max_passes`` passes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .errors import HidingError
from .patterns import SensitivePattern, is_mined
from .state import HidingState

__all__ = ["STRATEGIES", "VICTIMS", "run_heuristic"]

STRATEGIES = ("1a", "1b", "2a", "2b", "2c")
VICTIMS = ("min-side-effect", "max-support", "round-robin")
_DEFAULT_VICTIM = {
    "1a": None,
    "1b": "min-side-effect",
    "2a": "min-side-effect",
    "2b": "min-side-effect",
    "2c": "round-robin",
}


def default_victim(strategy: str) -> str | None:
    """The victim rule a strategy uses when none is given."""
    return _DEFAULT_VICTIM[strategy]


def _counts(state: HidingState, p: SensitivePattern, by_conf: bool) -> tuple[int, int | None]:
    a = state.count(state.rows(p.items))
    b = state.count(state.rows(p.antecedent)) if (by_conf and p.is_rule) else None
    return a, b


def pattern_mined(state: HidingState, p: SensitivePattern) -> bool:
    """Whether ``p`` is still mined in the current state (confidence used only for rules)."""
    a, b = _counts(state, p, state.conf is not None)
    return is_mined(a, b, state.min_count, state.conf)


def _reduce(state: HidingState, p: SensitivePattern, cand_ids: Sequence[int], by_conf: bool, victim: str) -> int:
    """Delete items of ``cand_ids`` from transactions supporting ``p`` until it is hidden.

    ``by_conf``: the pattern counts as hidden once its confidence drops below C (rules
    only); otherwise only support counts.
    """
    conf = state.conf if (by_conf and p.is_rule) else None
    xy = state.rows(p.items)
    a = state.count(xy)
    x = state.rows(p.antecedent) if conf is not None else None
    b = state.count(x) if x is not None else None
    if not is_mined(a, b, state.min_count, conf):
        return 0
    T = state.tids(xy)
    T = T[state.lengths[T] >= 2]
    if T.size == 0:
        return 0
    cand = state.rows(cand_ids)
    if victim == "min-side-effect":
        sup = state.item_counts(cand)
        cand = cand[np.argsort(-sup, kind="stable")]  # ties between items go to the most frequent
        cost = state.side_effect_cost(T, cand)
        j = np.argmin(cost, axis=1)
        order = state.order_shortest(T, cost[np.arange(T.size), j])
        T, j = T[order], j[order]
    else:
        order = state.order_shortest(T)
        T = T[order]
        if victim == "max-support":
            j = np.full(T.size, int(np.argmax(state.item_counts(cand))))
        elif victim == "round-robin":
            j = np.arange(T.size) % cand.size
        else:  # pragma: no cover - validated by the caller
            raise HidingError(f"unknown victim rule {victim!r}")
    r = cand[j]
    # first prefix length after which the pattern is hidden (counts drop one per deletion)
    k = np.arange(1, T.size + 1)
    a_k = a - k
    hidden = a_k < state.min_count
    if conf is not None and x is not None and b is not None:
        b_k = b - np.cumsum(np.isin(r, x))
        hidden |= a_k * conf.denominator < conf.numerator * b_k
    m = int(np.argmax(hidden)) + 1 if hidden.any() else T.size
    return state.apply(T[:m], r[:m])


def _increase_antecedent(state: HidingState, p: SensitivePattern) -> int:
    """Algorithm 1.a: add the missing items of X to transactions holding neither X nor Y."""
    conf = state.conf
    assert conf is not None  # checked by run_heuristic
    xy, x, y = state.rows(p.items), state.rows(p.antecedent), state.rows(p.consequent)
    a, b = state.count(xy), state.count(x)
    if not is_mined(a, b, state.min_count, conf):
        return 0
    need = (a * conf.denominator) // conf.numerator + 1 - b  # count(X) must exceed a/C
    X = state.rowbits_all(x)  # (|X|, N)
    nx = X.sum(axis=0)
    has_y = np.ones(state.n, dtype=bool) if y.size == 0 else state.rowbits_all(y).all(axis=0)
    cand = np.flatnonzero((nx < x.size) & ~has_y)
    if cand.size == 0 or need <= 0:
        return 0
    cand = cand[state.order_shortest(cand, -nx[cand])][:need]
    miss = ~X[:, cand]  # (|X|, n)
    ri, ci = np.nonzero(miss)
    return state.apply(cand[ci], x[ri], add=True)


def run_heuristic(
    state: HidingState,
    patterns: Sequence[SensitivePattern],
    strategy: str = "2a",
    victim: str | None = None,
    *,
    max_passes: int = 4,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Sanitize ``state`` with one of Verykios et al.'s strategies (module docstring).

    Returns ``{"strategy", "victim", "passes"}``. Raises :class:`HidingError` when the
    strategy cannot hide the given kind of pattern (1.a/1.b need rules; 1.a needs a
    minimum confidence).
    """
    if strategy not in STRATEGIES:
        raise HidingError(f"unknown heuristic strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    victim = victim or default_victim(strategy) or "max-support"
    if victim not in VICTIMS:
        raise HidingError(f"unknown victim rule {victim!r}; choose one of {', '.join(VICTIMS)}")
    if strategy in ("1a", "1b"):
        bad = [str(p) for p in patterns if not p.is_rule]
        if bad:
            raise HidingError(
                f"strategy {strategy} hides rules X => Y; {bad[0]!r} is an itemset (use 2a, 2b or 2c for itemsets)"
            )
        if strategy == "1a" and state.conf is None:
            raise HidingError("strategy 1a lowers confidence: give --min-confidence (min_confidence=)")
    pats = list(patterns)
    if strategy in ("2b", "2c"):
        counts = [state.count(state.rows(p.items)) for p in pats]
        order = sorted(range(len(pats)), key=lambda i: (-len(pats[i].items), -counts[i]))
        pats = [pats[i] for i in order]
    passes = 0
    for passes in range(1, max_passes + 1):
        todo = [p for p in pats if pattern_mined(state, p)]
        if not todo:
            passes -= 1
            break
        edits = 0
        for i, p in enumerate(todo):
            if progress:
                progress(f"heuristic {strategy}: pattern {i + 1}/{len(todo)} ({p}), pass {passes}")
            if strategy == "1a":
                edits += _increase_antecedent(state, p)
            elif strategy == "1b":
                edits += _reduce(state, p, p.consequent, True, victim)
            elif strategy == "2a":
                edits += _reduce(state, p, p.items, True, victim)
            else:
                edits += _reduce(state, p, p.items, False, victim)
        if edits == 0:
            break
    return {"strategy": strategy, "victim": None if strategy == "1a" else victim, "passes": passes}
