"""Online auditing of max and min queries together, for full disclosure (duplicates allowed).

With both kinds answered, record ``i`` lies in ``[λ_i, µ_i]`` (``λ`` from min answers, ``µ`` from
max answers; F. Y. Chin, "Security problems on inference control for SUM, MAX, and MIN
queries", JACM 33(3), 1986). A max query is attained by one of ``E_j = {i ∈ Q_j : µ_i = a_j}``,
a min query by one of ``F_k = {i ∈ P_k : λ_i = b_k}``. A record with ``λ_i < µ_i`` can attain
max queries (at ``µ_i``) or min queries (at ``λ_i``), never both; so a consistent data set is a
choice, per record, of *high* (at ``µ_i``), *low* (at ``λ_i``) or strictly between, such that
every max query has a high extreme and every min query a low one. ``x_i`` is determined iff
``λ_i = µ_i``, or every such choice makes ``i`` high (``x_i = µ_i``), or every one makes it low.

Only *conflict* records — extreme of some max query and of some min query, ``λ_i < µ_i`` — have
a real choice; all others take their only useful role. The choice among conflict records is a
monotone satisfiability problem (max queries are clauses of "high" literals, min queries of
"low" ones) and deciding it is NP-hard in general: any monotone CNF is such an instance, with
every positive clause a max query answered 1 and every negative one a min query answered 0
over records in ``[0, 1]``. This module decides it exactly with a small DPLL solver under a
node budget; when the budget runs out the record is *treated as disclosed* (a denial, never a
silent answer). Without conflict records the test reduces to single extremes on either side.

Each check recomputes the analysis over all answered queries: ``O(Σ|Q_j|)`` numpy work plus
the SAT search, which only ever involves conflict records. :class:`MaxMinAuditor` reads the
true answer and so, like :class:`~anonymize.audit.extremes.MaxAuditor`, is not simulatable.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

import numpy as np

from .base import AuditError, Auditor

__all__ = ["MaxMinAuditor", "minmax_disclosed", "SAT_BUDGET"]

SAT_BUDGET = 20_000  # DPLL nodes per record test


def _bounds(n: int, queries: list[tuple[np.ndarray, float]], fold) -> np.ndarray:
    b = np.full(n, -fold(-np.inf, np.inf))  # +inf for max (minimum of answers), -inf for min
    for idx, a in queries:
        b[idx] = fold(b[idx], a)
    return b


def _sat(clauses: list[tuple[list[int], bool]], fixed: dict[int, bool], budget: list[int]) -> bool | None:
    """Monotone SAT: each clause ``(vars, want)`` needs one var equal to ``want``. None: budget exhausted."""
    assign = dict(fixed)
    stack: list[tuple[int, bool | None, int]] = []  # (var, value, trail length) of decisions; None: flipped
    trail: list[int] = []

    def propagate() -> bool:
        changed = True
        while changed:
            changed = False
            for vars_, want in clauses:
                free = -1
                n_free = 0
                for v in vars_:
                    val = assign.get(v)
                    if val is None:
                        n_free += 1
                        free = v
                        if n_free > 1:
                            break
                    elif val == want:
                        break
                else:
                    if n_free == 0:
                        return False
                    assign[free] = want  # unit clause
                    trail.append(free)
                    changed = True
        return True

    while True:
        budget[0] -= 1
        if budget[0] < 0:
            return None
        ok = propagate()
        if ok:
            branch = None
            for vars_, want in clauses:
                if not any(assign.get(v) == want for v in vars_):
                    branch = next(v for v in vars_ if v not in assign)
                    value = want
                    break
            if branch is None:
                return True
            stack.append((branch, value, len(trail)))
            assign[branch] = value
            trail.append(branch)
            continue
        # conflict: undo to the last decision not yet flipped
        while stack:
            var, tried, mark = stack.pop()
            for v in trail[mark:]:
                del assign[v]
            del trail[mark:]
            if tried is not None:
                stack.append((var, None, mark))  # flipped: no further alternative
                assign[var] = not tried
                trail.append(var)
                break
        else:
            return False


def minmax_disclosed(
    n: int,
    max_queries: list[tuple[np.ndarray, float]],
    min_queries: list[tuple[np.ndarray, float]],
    budget: int = SAT_BUDGET,
) -> np.ndarray:
    """Boolean mask of the records whose values the answered max and min queries determine.

    ``max_queries`` / ``min_queries``: ``(record positions, answer)`` pairs. Raises
    :class:`AuditError` if the answers are inconsistent. Undecided SAT tests count as disclosed.
    """
    mu = _bounds(n, max_queries, np.minimum)
    lam = _bounds(n, min_queries, np.maximum)
    if (lam > mu).any():
        raise AuditError("the max and min answers are inconsistent (a lower bound exceeds an upper bound)")
    pinned = np.isfinite(mu) & (lam == mu)
    disclosed = pinned.copy()
    E = [idx[mu[idx] == a] for idx, a in max_queries]
    F = [idx[lam[idx] == b] for idx, b in min_queries]
    if any(e.size == 0 for e in E) or any(f.size == 0 for f in F):
        raise AuditError("the answers are inconsistent (some query cannot attain its answer)")
    for s in (*E, *F):
        if s.size == 1:
            disclosed[s[0]] = True
    in_E = np.zeros(n, dtype=bool)
    in_F = np.zeros(n, dtype=bool)
    for e in E:
        in_E[e] = True
    for f in F:
        in_F[f] = True
    conflict = in_E & in_F & ~pinned
    if not conflict.any():
        return disclosed
    # A clause with a non-conflict member is attained by that member's only useful role, so only
    # clauses whose members are all conflict records (the core) constrain the choice -- plus, when
    # record i is denied a role, the clauses of that kind in which i was the one exception.
    clauses = [(e, True) for e in E] + [(f, False) for f in F]
    nonconf = np.array([np.count_nonzero(~conflict[m]) for m, _ in clauses])
    core = [c for c, k in zip(clauses, nonconf) if k == 0]
    near = [c for c, k in zip(clauses, nonconf) if k == 1]
    cand: set[tuple[int, bool]] = set()  # (record, role) whose denial may be unsatisfiable
    for m, kind in core:
        cand.update((int(i), kind) for i in m)
    for m, kind in near:
        cand.update((int(i), kind) for i in m[~conflict[m]])
    for i, role in sorted(cand):
        if disclosed[i]:
            continue
        sub = []
        for m, kind in core:
            if (m == i).any():
                if kind != role:
                    continue  # i, in its other role, attains it
                m = m[m != i]
            sub.append((m.tolist(), kind))
        if not conflict[i]:
            sub += [(m[m != i].tolist(), kind) for m, kind in near if kind == role and (m == i).any()]
        if any(not m for m, _ in sub) or _sat(sub, {}, [budget]) is not True:
            disclosed[i] = True  # unsatisfiable (or undecided within the budget): i is pinned to its role
    return disclosed


class MaxMinAuditor(Auditor):
    """Online full-disclosure auditor for max and min queries on one column (not simulatable)."""

    name = "minmax"
    aggregates = ("max", "min")
    needs_answer = True
    simulatable = False

    def __init__(self, records: int | Iterable[Hashable] = 0, *, budget: int = SAT_BUDGET):
        super().__init__(records)
        self.budget = budget
        self.maxq: list[tuple[np.ndarray, float]] = []
        self.minq: list[tuple[np.ndarray, float]] = []
        self._disc = np.zeros(self.n, dtype=bool)

    def _options(self) -> dict:
        return {"budget": self.budget}

    def needs_answers_to_commit(self) -> bool:
        return True

    def _grow(self, k: int) -> None:
        self._disc = np.concatenate([self._disc, np.zeros(k, dtype=bool)])

    def _newly(self, mask: np.ndarray, answer: float, agg: str) -> np.ndarray:
        idx = np.flatnonzero(mask)
        if not idx.size:
            return np.zeros(0, dtype=np.int64)
        mx = self.maxq + [(idx, answer)] if agg == "max" else self.maxq
        mn = self.minq + [(idx, answer)] if agg == "min" else self.minq
        d = minmax_disclosed(self.n, mx, mn, self.budget)
        return np.flatnonzero(d & ~self._disc)

    def _check(self, mask, answer, agg):
        newly = self._newly(mask, answer, agg)
        if newly.size:
            return False, newly, f"with the max/min answers already given it would determine {newly.size} value(s)"
        return True, [], "every value stays undetermined"

    def _commit(self, mask, answer, agg):
        newly = self._newly(mask, answer, agg)
        idx = np.flatnonzero(mask)
        if idx.size:
            (self.maxq if agg == "max" else self.minq).append((idx, answer))
        self._disc[newly] = True
        return newly

    def _disclosed_mask(self) -> np.ndarray:
        return self._disc.copy()
