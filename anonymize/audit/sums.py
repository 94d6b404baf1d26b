"""Online auditing of sum queries for full disclosure (Chin and Özsoyoğlu 1982).

Model. The data are real numbers ``x_1..x_n``, one per record; the analyst knows which
records every query aggregates (for table queries: the ``where`` columns are public, as
quasi-identifiers are) and learns the answer ``Σ_{i∈Q} x_i`` of every answered query. Answered
queries are rows ``1_Q`` of a matrix ``A``; the answers fix ``A x`` and nothing else, so
``x_i`` is *fully disclosed* iff ``e_i`` is in the row space of ``A`` (otherwise ``x_i`` can
take any real value consistent with the answers). The auditor answers a query iff adding its
row puts no new ``e_i`` into the row space — F. Y. Chin and G. Özsoyoğlu, "Auditing and
inference control in statistical databases", IEEE Trans. Software Engineering 8(6):574–582,
1982; surveyed in S. U. Nabar, K. Kenthapadi, N. Mishra and R. Motwani, "A survey of query
auditing techniques for data privacy", in C. C. Aggarwal and P. S. Yu (eds.),
*Privacy-Preserving Data Mining: Models and Algorithms*, Springer, 2008, ch. 17.

Simulatable. The decision reads the query sets only, never an answer, so the auditor is
*simulatable* (K. Kenthapadi, N. Mishra and K. Nissim, "Simulatable auditing", PODS 2005,
§2): the analyst could compute every denial himself, and a denial tells him nothing about the
data. ``sum`` and ``simulatable-sum`` therefore make the same decisions; both names exist so
that a log says which guarantee was asked for.

What it prevents: exact disclosure of any single value by any combination of answered sums
(differencing ``{0,1,2} − {0,1}``, systems of equations, ...), also across analysts *if they
share one auditor* (the party service does: one state for every analyst).

What it cannot prevent (documented in docs/auditing.md):

* partial disclosure — answers still narrow values: ``x_0 + x_1 = 10`` with ``x ≥ 0`` known
  bounds both; a known domain (non-negative salaries, 0/1 attributes) can even pin values the
  row-space test calls safe (a sum of 0 over non-negative values). Intervals need the
  probabilistic auditors of Kenthapadi et al. or noise (DP);
* disclosure of *which* records a query selects: if the ``where`` columns are secret, a denial
  (``sum salary where zip == X and age == 37`` denied ⇔ one person matches) reveals it;
* collusion of analysts audited by *separate* auditors; data that change between queries.

Arithmetic: exact. Small record sets (≤ :data:`EXACT_UP_TO`) use rationals; larger ones the
GF(p) engine of :mod:`anonymize.audit.rowspace` with ``primes`` independent secret random
31-bit primes and a majority vote per record, whose chance of ever deciding differently from
exact arithmetic is bounded by :meth:`SumAuditor.error_bound`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

import numpy as np

from .base import AuditError, Auditor
from .rowspace import ModularRowSpace, RationalRowSpace, Step, modular_error_bound, single_threaded_blas

__all__ = ["SumAuditor", "SimulatableSumAuditor", "EXACT_UP_TO"]

EXACT_UP_TO = 48  # records; above this the modular engine is used unless exact=True


class SumAuditor(Auditor):
    """Online full-disclosure auditor for sum queries (``sum``; ``mean`` and ``count`` too).

    ``mean`` over a public record set is its sum divided by a public count, and ``count``
    reveals nothing about the audited values, so both are audited as the sum over the set.

    Parameters: ``records`` (a count ``n`` for records ``0..n-1``, or the keys), ``exact``
    (``True``: rationals; ``False``: modular; ``None``: rationals up to :data:`EXACT_UP_TO`
    records), ``primes`` (odd number of independent primes for the modular engine).
    """

    name = "sum"
    aggregates = ("sum", "mean", "count")
    needs_answer = False
    simulatable = True

    def __init__(self, records: int | Iterable[Hashable] = 0, *, exact: bool | None = None, primes: int = 3):
        super().__init__(records)
        if not isinstance(primes, int) or isinstance(primes, bool) or primes < 1 or primes % 2 == 0:
            raise AuditError(f"primes must be an odd number >= 1, got {primes!r}")
        self.exact = (self.n <= EXACT_UP_TO) if exact is None else bool(exact)
        self.primes = primes
        if self.exact:
            self.engines: list = [RationalRowSpace(self.n)]
        else:
            self.engines = [ModularRowSpace(self.n) for _ in range(primes)]
        self._bound = 0.0
        self._cache: tuple | None = None  # (mask, steps, newly) of the last check, valid until a commit

    def _options(self) -> dict:
        return {"exact": self.exact, "primes": self.primes}

    @property
    def rank(self) -> int:
        """Rank of the answered query matrix (the largest rank any engine sees)."""
        return max(e.rank for e in self.engines)

    def error_bound(self) -> float:
        """Bound on the chance that some decision so far differed from exact rational auditing (0 if exact)."""
        return min(1.0, self._bound)

    def _grow(self, k: int) -> None:
        self._cache = None
        for e in self.engines:
            e.add_columns(k)

    def _steps(self, mask: np.ndarray) -> tuple[list[Step], np.ndarray]:
        c = self._cache
        if c is not None and c[0].shape == mask.shape and np.array_equal(c[0], mask):
            return c[1], c[2]
        with single_threaded_blas():
            steps = [e.check(mask) for e in self.engines]
        if not self.exact:
            self._bound += modular_error_bound(self.rank + 1, self.n, len(self.engines))
        if len(steps) == 1:
            newly = steps[0].newly
        else:
            votes = np.zeros(self.n, dtype=np.int64)
            for s in steps:
                votes[s.newly] += 1
            newly = np.flatnonzero(votes * 2 > len(steps))
        self._cache = (mask.copy(), steps, newly)
        return steps, newly

    def _check(self, mask, answer, agg):
        _, newly = self._steps(mask)
        if newly.size:
            shown = ", ".join(map(repr, self.index.keys_of(newly[:5]))) + (" ..." if newly.size > 5 else "")
            return False, newly, f"with the answers already given it would determine the value of {shown}"
        return True, newly, "no single value follows from the answers"

    def _commit(self, mask, answer, agg):
        steps, newly = self._steps(mask)
        self._cache = None
        with single_threaded_blas():
            for e, s in zip(self.engines, steps):
                e.commit(s)
        return newly

    def _disclosed_mask(self) -> np.ndarray:
        votes = np.sum([e.disclosed for e in self.engines], axis=0)
        return votes * 2 > len(self.engines)


class SimulatableSumAuditor(SumAuditor):
    """The sum auditor under its simulatable name (Kenthapadi, Mishra, Nissim, PODS 2005).

    Deny iff the new query, with the answered ones, would determine some ``x_i`` whatever the
    answers are. For sums over unbounded reals that is the row-space test of
    :class:`SumAuditor`, which never reads an answer; the two classes make identical decisions.
    """

    name = "simulatable-sum"
