"""Online sum auditing: textbook cases, exactness against independent solvers, engines, state."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from anonymize.audit import (
    AuditError,
    Auditor,
    ModularRowSpace,
    RationalRowSpace,
    SimulatableSumAuditor,
    SumAuditor,
    make_auditor,
    modular_error_bound,
)
from anonymize.audit.rowspace import is_prime, random_prime

ENGINES = [{"exact": True}, {"exact": False, "primes": 1}, {"exact": False, "primes": 3}]


# --------------------------------------------------------------------------- oracles (not ours)
def rank_q(rows: list[list[int]]) -> int:
    """Rank over Q by plain Gaussian elimination on Fractions (a second, independent implementation)."""
    m = [[Fraction(x) for x in r] for r in rows]
    rank, col, ncols = 0, 0, len(m[0]) if m else 0
    while rank < len(m) and col < ncols:
        piv = next((i for i in range(rank, len(m)) if m[i][col] != 0), None)
        if piv is None:
            col += 1
            continue
        m[rank], m[piv] = m[piv], m[rank]
        for i in range(len(m)):
            if i != rank and m[i][col] != 0:
                f = m[i][col] / m[rank][col]
                m[i] = [a - f * b for a, b in zip(m[i], m[rank])]
        rank += 1
        col += 1
    return rank


def pinned_by_rank(n: int, rows: list[list[int]]) -> set[int]:
    """x_i is determined iff appending e_i does not raise the rank."""
    if not rows:
        return set()
    r = rank_q(rows)
    return {i for i in range(n) if rank_q([*rows, [int(j == i) for j in range(n)]]) == r}


def pinned_by_lp(rows: list[list[int]], x: np.ndarray) -> set[int]:
    """scipy/HiGHS: minimise and maximise each x_i subject to the answered sums; pinned iff both are finite."""
    n = len(x)
    if not rows:
        return set()
    A = np.array(rows, dtype=float)
    b = A @ x
    out = set()
    for i in range(n):
        c = np.zeros(n)
        c[i] = 1.0
        lo = linprog(c, A_eq=A, b_eq=b, bounds=[(None, None)] * n, method="highs")
        hi = linprog(-c, A_eq=A, b_eq=b, bounds=[(None, None)] * n, method="highs")
        assert lo.status in (0, 3) and hi.status in (0, 3)  # optimal or unbounded, never infeasible
        if lo.status == 0 and hi.status == 0:
            assert abs(lo.fun + hi.fun) < 1e-6 * (1 + abs(lo.fun))
            assert abs(lo.fun - x[i]) < 1e-6 * (1 + abs(x[i]))
            out.add(i)
    return out


# --------------------------------------------------------------------------- textbook cases
@pytest.mark.parametrize("opts", ENGINES)
def test_difference_of_nested_sums_is_denied(opts):
    a = SumAuditor(3, **opts)
    assert a.submit([0, 1]).allowed
    d = a.submit([0, 1, 2])
    assert not d.allowed and d.discloses == (2,)


@pytest.mark.parametrize("opts", ENGINES)
def test_three_pairwise_sums_are_denied(opts):
    a = SumAuditor(3, **opts)
    assert a.submit([0, 1]).allowed and a.submit([1, 2]).allowed
    d = a.submit([0, 2])
    assert not d.allowed and d.discloses == (0, 1, 2)


@pytest.mark.parametrize("opts", ENGINES)
def test_complement_already_implied_is_answered(opts):
    a = SumAuditor(4, **opts)
    assert a.submit([0, 1, 2, 3]).allowed and a.submit([0, 1]).allowed
    d = a.submit([2, 3])  # = {0,1,2,3} - {0,1}: in the row space, tells nothing new
    assert d.allowed and d.discloses == ()
    assert a.rank == 2


@pytest.mark.parametrize("opts", ENGINES)
def test_singleton_is_denied_and_empty_is_answered(opts):
    a = SumAuditor(5, **opts)
    assert not a.check([3]).allowed
    assert a.check([]).allowed


def test_simulatable_sum_makes_no_use_of_answers():
    a = SimulatableSumAuditor(3)
    assert a.simulatable and not a.needs_answer
    assert a.submit([0, 1], answer=1e9).allowed
    assert not a.check([0, 1, 2], answer=-5).allowed  # the answer is ignored


# --------------------------------------------------------------------------- what it cannot prevent
def test_limitation_a_known_domain_can_pin_values_the_row_space_does_not():
    """Documented limitation: with non-negative values known, a zero sum pins every summand."""
    x = np.array([0.0, 0.0, 7.0])
    a = SumAuditor(3)
    assert a.submit([0, 1]).allowed  # the row space holds no unit vector...
    A = np.array([[1.0, 1.0, 0.0]])
    hi = linprog(-np.eye(3)[0], A_eq=A, b_eq=A @ x, bounds=[(0, None)] * 3, method="highs")
    assert hi.status == 0 and -hi.fun == 0.0  # ...but 0 <= x0 <= 0: x0 is disclosed by the domain


def test_limitation_a_denial_reveals_the_size_of_a_selection_when_where_columns_are_secret():
    """Documented limitation: the decision reads the row set, so it leaks facts about the filter columns."""
    import pandas as pd

    from anonymize.audit import TableAuditor

    df = pd.DataFrame({"zip": ["A", "A", "B"], "age": [37, 50, 37], "salary": [10, 20, 30]})
    ta = TableAuditor(df, "sum")
    out = ta.ask({"agg": "sum", "column": "salary", "where": [["zip", "==", "B"], ["age", "==", 37]]})
    assert not out.allowed  # denied ⇔ exactly one person in zip B is 37: known to the analyst now


# --------------------------------------------------------------------------- exactness (property)
@st.composite
def query_runs(draw):
    n = draw(st.integers(1, 7))
    qs = draw(st.lists(st.integers(0, 2**n - 1), min_size=1, max_size=12))
    x = draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n))
    return n, [[(q >> i) & 1 for i in range(n)] for q in qs], np.array(x, dtype=float)


@settings(max_examples=40, deadline=None)
@given(query_runs(), st.sampled_from(ENGINES))
def test_online_auditor_is_exact_and_answers_never_pin_a_value(run, opts):
    n, qs, x = run
    a = SumAuditor(n, **opts)
    answered: list[list[int]] = []
    for q in qs:
        before = pinned_by_rank(n, answered)
        assert not before  # the answered set discloses nothing (online invariant)
        would = pinned_by_rank(n, [*answered, q])
        d = a.submit([i for i in range(n) if q[i]])
        assert d.allowed == (not would), (answered, q)
        assert set(d.discloses) == would
        if d.allowed:
            answered.append(q)
    # an LP solver we did not write cannot pin any value from the answers released
    assert pinned_by_lp(answered, x) == set()


@settings(max_examples=15, deadline=None)
@given(query_runs())
def test_offline_commit_reports_exactly_what_each_answer_disclosed(run):
    n, qs, x = run
    for opts in ENGINES:
        a = SumAuditor(n, **opts)
        rows: list[list[int]] = []
        seen: set[int] = set()
        for q in qs:
            rows.append(q)
            newly = set(a.commit([i for i in range(n) if q[i]]))
            now = pinned_by_rank(n, rows)
            assert newly == now - seen
            seen = now
        assert set(a.disclosed()) == seen == pinned_by_lp(rows, x)


def test_engines_agree_on_larger_random_runs_with_folds_and_growth():
    rng = np.random.default_rng(7)
    for n, t, dens in [(40, 90, 0.3), (33, 70, 0.08)]:
        qs = [rng.random(n) < dens for _ in range(t)]
        for k in range(0, t, 3):  # differencing-style queries: subsets of the previous one
            qs[k] = qs[k - 1] & (rng.random(n) < 0.85)
        exact, mod = RationalRowSpace(n), ModularRowSpace(n)
        for q in qs:
            s1, s2 = exact.check(q), mod.check(q)
            assert s1.in_rowspace == s2.in_rowspace and s1.newly.tolist() == s2.newly.tolist()
            exact.commit(s1)
            mod.commit(s2)
        assert exact.rank == mod.rank and (exact.disclosed == mod.disclosed).all()


def test_modular_engine_matches_exact_rank_of_a_dense_matrix():
    rng = np.random.default_rng(3)
    n, t = 30, 70  # rank saturates at n: every later query is in the row space
    A = rng.random((t, n)) < 0.5
    mod = ModularRowSpace(n)
    for q in A:
        mod.commit(mod.check(q))
    assert mod.rank == rank_q(A.astype(int).tolist()) == n
    assert mod.disclosed.all()  # full rank: every value is determined


# --------------------------------------------------------------------------- records, growth, state
def test_keyed_records_grow_and_state_round_trips():
    a = SumAuditor(["alice", "bob"])
    assert a.submit(["alice", "bob"]).allowed
    a.add_records(["carol"])
    assert a.submit(["alice", "bob", "carol"]).allowed is False  # carol = total - (alice+bob)
    assert a.submit(["bob", "carol"]).allowed
    state = a.dumps()
    b = Auditor.from_json(state)
    assert isinstance(b, SumAuditor) and b.records == ("alice", "bob", "carol")
    assert b.check(["alice", "bob", "carol"]).discloses == ("alice", "bob", "carol")
    assert not b.check(["carol"]).allowed and b.check(["bob", "carol"]).allowed
    assert b.to_json() == a.to_json()


def test_modular_state_reloads_with_fresh_primes_and_same_decisions():
    rng = np.random.default_rng(11)
    n = 80
    a = SumAuditor(n, exact=False, primes=3)
    for _ in range(40):
        a.submit(np.flatnonzero(rng.random(n) < 0.2).tolist())
    b = SumAuditor.from_json(a.to_json())
    assert [e.p for e in b.engines] != [e.p for e in a.engines]
    for _ in range(30):
        q = np.flatnonzero(rng.random(n) < 0.2).tolist()
        assert a.check(q) == b.check(q)
    assert 0 < a.error_bound() < 1e-6


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: SumAuditor(3).check([3]), "unknown record 3"),
        (lambda: SumAuditor(["a"]).check(["b"]), "unknown record 'b'"),
        (lambda: SumAuditor(["a", "a"]), "listed twice"),
        (lambda: SumAuditor(3, primes=2), "odd number"),
        (lambda: SumAuditor(3).check([0], agg="max"), "audits sum/mean/count"),
        (lambda: make_auditor("median", 3), "unknown auditor 'median'"),
        (lambda: Auditor.from_json("{"), "not valid JSON"),
        (lambda: Auditor.from_json({"format": "x"}), "not an audit state"),
    ],
)
def test_bad_input_is_one_line(call, fragment):
    with pytest.raises(AuditError, match=fragment) as e:
        call()
    assert "\n" not in str(e.value)


# --------------------------------------------------------------------------- primes and the bound
def test_primes_and_error_bound():
    sieve = np.ones(10_000, dtype=bool)
    sieve[:2] = False
    for i in range(2, 100):
        sieve[i * i :: i] = False
    assert [i for i in range(10_000) if is_prime(i)] == np.flatnonzero(sieve).tolist()
    assert is_prime(2**31 - 1) and not is_prime(2**31 + 1) and not is_prime(3215031751)  # a strong pseudoprime
    p = random_prime()
    assert 2**30 <= p < 2**31 and is_prime(p)
    assert modular_error_bound(10, 10, 3) < modular_error_bound(1000, 10, 3) < modular_error_bound(1000, 10, 1)
    assert modular_error_bound(1000, 10_000, 3) < 1e-6
