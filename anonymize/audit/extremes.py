"""Online auditing of max (or min) queries for full disclosure, plain and simulatable.

Model (F. Y. Chin, "Security problems on inference control for SUM, MAX, and MIN queries",
JACM 33(3):451–464, 1986; K. Kenthapadi, N. Mishra and K. Nissim, "Simulatable auditing",
PODS 2005, §4). Values are reals, duplicates allowed, and the analyst knows every query's record
set. After answered max queries ``max(Q_j) = a_j`` the analyst knows, for each record, the upper
bound ``µ_i = min{a_j : i ∈ Q_j}`` (``+∞`` if never queried), and that each query is attained by
one of its *extreme* records ``E_j = {i ∈ Q_j : µ_i = a_j}``. Record ``i`` is fully disclosed
iff it is the only extreme record of some query, ``E_j = {i}`` (then ``x_i = a_j``); otherwise
setting every record to its bound and lowering ``x_i`` a little is consistent with every answer.
Min queries are the same with signs flipped.

:class:`MaxAuditor` answers iff the *true* answer discloses nothing. Its denials depend on the
data and leak it — the textbook attack (Kenthapadi et al. 2005, §1): after ``max{0,1,2} = 10``,
the query ``max{0,1}`` is denied exactly when ``max(x_0, x_1) < 10``, i.e. exactly when
``x_2 = 10``; a denial tells the attacker ``x_2``. :class:`SimulatableMaxAuditor` fixes this:
it denies iff *some* answer consistent with the past would disclose a value, so its decision is
a function of past queries and answers only and a denial reveals nothing new.

The simulatable test, from the structure above: with ``c_j = |E_j ∩ Q|``, an answer ``a`` to the
new query ``Q`` lowers to ``a`` every bound in ``Q`` above ``a``; old query ``j`` keeps ``|E_j| − c_j``
extremes when ``a < a_j``. Consistent answers are ``L ≤ a ≤ m1`` with ``L = max{a_j : |E_j| = c_j}``
and ``m1 ≥ m2`` the two largest bounds in ``Q``. Some consistent answer discloses iff ``L < B``
with ``B = max{a_j : |E_j| − c_j = 1}`` (an old query left with one extreme) or ``m1 > m2`` (the
answer ``m1`` has one extreme). ``O(|Q| + size of the touched extreme sets)`` per query.

Bookkeeping: records with the same bound ``v`` form a group holding the 0/1 matrix of answered
queries with answer ``v`` against those records; a record leaves its group (its column dies)
when its bound drops. Every check is a few vectorized column sums per distinct bound in ``Q``.

What these auditors cannot prevent: interval disclosure (bounds ``µ_i`` and ``λ_i`` are public
and may be tight); inference when the analyst knows the values are distinct (then two queries
with the same answer share their maximum — outside this model); mixing aggregates (sum and max
together are NP-hard to audit, Chin 1986: a max auditor only audits max queries); collusion of
analysts with separate auditors.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

import numpy as np

from .base import AuditError, Auditor

__all__ = ["MaxAuditor", "MinAuditor", "SimulatableMaxAuditor", "SimulatableMinAuditor", "ExtremeBounds"]


class _Group:
    """Records whose bound is one value ``v`` and the answered queries whose answer is ``v``."""

    __slots__ = ("recs", "alive", "M", "cnt", "rows", "cols")

    def __init__(self):
        self.recs = np.zeros(8, dtype=np.int64)
        self.alive = np.zeros(8, dtype=bool)
        self.M = np.zeros((4, 8), dtype=bool)  # M[j, c]: query j contains record recs[c]
        self.cnt = np.zeros(4, dtype=np.int64)  # live extremes per query
        self.rows = 0
        self.cols = 0

    def add_cols(self, recs: np.ndarray) -> np.ndarray:
        k = recs.size
        need = self.cols + k
        if need > self.recs.size:
            cap = max(need, 2 * self.recs.size)
            self.recs = np.resize(self.recs, cap)
            self.alive = np.concatenate([self.alive, np.zeros(cap - self.alive.size, dtype=bool)])
            M = np.zeros((self.M.shape[0], cap), dtype=bool)
            M[:, : self.cols] = self.M[:, : self.cols]
            self.M = M
        cols = np.arange(self.cols, need)
        self.recs[cols] = recs
        self.alive[cols] = True
        self.cols = need
        return cols

    def add_row(self, cols: np.ndarray) -> None:
        if self.rows == self.M.shape[0]:
            cap = 2 * self.rows
            M = np.zeros((cap, self.M.shape[1]), dtype=bool)
            M[: self.rows] = self.M[: self.rows]
            self.M = M
            self.cnt = np.resize(self.cnt, cap)
        self.M[self.rows, : self.cols] = False
        self.M[self.rows, cols] = True
        self.cnt[self.rows] = cols.size
        self.rows += 1

    def remaining(self, cols: np.ndarray) -> np.ndarray:
        """Live extremes per query if the records at ``cols`` left the group."""
        if not self.rows:
            return self.cnt[:0]
        return self.cnt[: self.rows] - self.M[: self.rows][:, cols].sum(axis=1)

    def sole_left(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """For each query in ``rows`` the one record still extreme once ``cols`` leave."""
        gone = np.zeros(self.cols, dtype=bool)
        gone[cols] = True
        live = self.M[rows][:, : self.cols] & self.alive[: self.cols] & ~gone
        return self.recs[np.argmax(live, axis=1)]


class ExtremeBounds:
    """Upper bounds and extreme sets of answered max queries (values already sign-folded)."""

    def __init__(self, n: int):
        self.mu = np.full(n, np.inf)
        self.col = np.full(n, -1, dtype=np.int64)
        self.groups: dict[float, _Group] = {}
        self.disclosed = np.zeros(n, dtype=bool)

    def grow(self, k: int) -> None:
        self.mu = np.concatenate([self.mu, np.full(k, np.inf)])
        self.col = np.concatenate([self.col, np.full(k, -1, dtype=np.int64)])
        self.disclosed = np.concatenate([self.disclosed, np.zeros(k, dtype=bool)])

    def _by_group(self, recs: np.ndarray, vals: np.ndarray):
        """Yield ``(v, group, cols)`` for the records ``recs`` (all with finite bounds ``vals``)."""
        if not recs.size:
            return
        order = np.argsort(vals, kind="stable")
        vs, starts = np.unique(vals[order], return_index=True)
        ends = np.append(starts[1:], order.size)
        for v, s, e in zip(vs.tolist(), starts, ends):
            g = self.groups.get(v)
            if g is not None:
                yield v, g, self.col[recs[order[s:e]]]

    def effect(self, idx: np.ndarray, a: float) -> tuple[list[int], list]:
        """What the answer ``a`` to ``max(idx)`` would disclose; raises if it is inconsistent."""
        mu_q = self.mu[idx]
        ext = mu_q >= a
        n_ext = int(np.count_nonzero(ext))
        if n_ext == 0:
            raise AuditError(f"answer {a:g} is inconsistent with the answers already given (no record can attain it)")
        newly = [int(idx[np.argmax(ext)])] if n_ext == 1 else []
        drop = (mu_q > a) & np.isfinite(mu_q)
        changes = []
        for v, g, cols in self._by_group(idx[drop], mu_q[drop]):
            rem = g.remaining(cols)
            if (rem == 0).any():
                raise AuditError(f"answer {a:g} is inconsistent with an earlier answer {v:g}")
            ones = np.flatnonzero(rem == 1)
            if ones.size:
                newly.extend(int(x) for x in g.sole_left(ones, cols))
            changes.append((g, cols, rem))
        newly = sorted({i for i in newly if not self.disclosed[i]})
        return newly, changes

    def apply(self, idx: np.ndarray, a: float) -> list[int]:
        """Record ``max(idx) = a`` as answered; return the records it newly disclosed."""
        if not idx.size:
            return []
        newly, changes = self.effect(idx, a)
        for g, cols, rem in changes:
            g.cnt[: g.rows] = rem
            g.alive[cols] = False
        mu_q = self.mu[idx]
        down = idx[mu_q > a]
        self.mu[down] = a
        g = self.groups.get(a)
        if g is None:
            g = self.groups[a] = _Group()
        self.col[down] = g.add_cols(down)
        g.add_row(self.col[idx[mu_q >= a]])
        self.disclosed[newly] = True
        return newly

    def simulate(self, idx: np.ndarray) -> tuple[bool, list[int]]:
        """Kenthapadi–Mishra–Nissim: can *some* consistent answer to ``max(idx)`` disclose a value?

        Returns ``(safe, at_risk)``; ``at_risk`` lists records some consistent answer would disclose.
        """
        if not idx.size:
            return True, []
        mu_q = self.mu[idx]
        top = np.sort(mu_q)[::-1]
        m1 = top[0]
        m2 = top[1] if top.size > 1 else -np.inf
        fin = np.isfinite(mu_q)
        lo = -np.inf  # answers below lo would leave an old query without an extreme
        singles: list[tuple[float, np.ndarray]] = []
        for v, g, cols in self._by_group(idx[fin], mu_q[fin]):
            rem = g.remaining(cols)
            if (rem == 0).any():
                lo = max(lo, v)
            ones = np.flatnonzero(rem == 1)
            if ones.size:
                singles.append((v, g.sole_left(ones, cols)))
        at_risk = sorted({int(i) for v, recs in singles if v > lo for i in recs})
        if m1 > m2:
            at_risk = sorted({*at_risk, int(idx[np.argmax(mu_q)])})
        return not at_risk, at_risk


class MaxAuditor(Auditor):
    """Online full-disclosure auditor for max queries; reads the true answer (not simulatable).

    Its denials leak (module docstring): use :class:`SimulatableMaxAuditor` when the analyst
    may be adversarial. Kept because it denies less, and as the textbook contrast.
    """

    name = "max"
    aggregates = ("max",)
    needs_answer = True
    simulatable = False
    sign = 1.0

    def __init__(self, records: int | Iterable[Hashable] = 0):
        super().__init__(records)
        self.bounds = ExtremeBounds(self.n)

    def needs_answers_to_commit(self) -> bool:
        return True

    def _grow(self, k: int) -> None:
        self.bounds.grow(k)

    def disclosure(self, query, answer: float) -> tuple:
        """Records the answer ``answer`` to ``query`` would disclose (no state change, any auditor flavour)."""
        idx = np.flatnonzero(self.index.mask(query))
        if not idx.size:
            return ()
        newly, _ = self.bounds.effect(idx, self.sign * float(answer))
        return self.index.keys_of(newly)

    def _check(self, mask, answer, agg):
        idx = np.flatnonzero(mask)
        if not idx.size:
            return True, [], "the query selects no record"
        newly, _ = self.bounds.effect(idx, self.sign * answer)
        if newly:
            return False, newly, f"its answer would be attained by a single possible record ({self.name} query)"
        return True, [], "every value stays undetermined"

    def _commit(self, mask, answer, agg):
        return self.bounds.apply(np.flatnonzero(mask), self.sign * answer)

    def _disclosed_mask(self) -> np.ndarray:
        return self.bounds.disclosed.copy()


class MinAuditor(MaxAuditor):
    """Online full-disclosure auditor for min queries (the max auditor on negated values)."""

    name = "min"
    aggregates = ("min",)
    sign = -1.0


class SimulatableMaxAuditor(MaxAuditor):
    """Simulatable max auditor (Kenthapadi, Mishra, Nissim, PODS 2005, §4).

    ``check`` never reads the answer: it denies iff some answer consistent with the answers
    already given would disclose a value, so a denial is computable by the analyst himself.
    ``Decision.discloses`` lists the records some consistent answer would disclose.
    """

    name = "simulatable-max"
    needs_answer = False
    simulatable = True

    def _check(self, mask, answer, agg):
        safe, at_risk = self.bounds.simulate(np.flatnonzero(mask))
        if safe:
            return True, [], "no answer consistent with the past would determine a value"
        return False, at_risk, "some answer consistent with the past would determine a value"


class SimulatableMinAuditor(SimulatableMaxAuditor):
    """Simulatable min auditor (the simulatable max auditor on negated values)."""

    name = "simulatable-min"
    aggregates = ("min",)
    sign = -1.0
