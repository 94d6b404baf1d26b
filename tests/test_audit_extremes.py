"""Max / min / max-and-min auditing and simulatability, against a brute-force enumeration oracle.

Oracle: data values are even integers 2..8 and every data set over the grid 0..10 is enumerated.
In the real-valued model a value that is not determined can move to its bound, to a midpoint
between two bounds or past the outermost ones — all grid points when the bounds are even (or,
for hypothetical answers, in 1..9) — so "determined over the grid" equals "determined over the
reals" here.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymize.audit import (
    AuditError,
    Auditor,
    MaxAuditor,
    MaxMinAuditor,
    MinAuditor,
    SimulatableMaxAuditor,
    SimulatableMinAuditor,
    minmax_disclosed,
)

GRID = np.arange(0, 11)


def datasets(n: int) -> np.ndarray:
    return np.array(list(itertools.product(GRID, repeat=n)))


def consistent(D: np.ndarray, answered) -> np.ndarray:
    ok = np.ones(len(D), dtype=bool)
    for idx, a, agg in answered:
        sub = D[:, idx]
        ok &= (sub.max(axis=1) if agg == "max" else sub.min(axis=1)) == a
    return ok


def pinned(D: np.ndarray, answered) -> set[int]:
    c = D[consistent(D, answered)]
    assert len(c), "the oracle found no consistent data set"
    return {i for i in range(D.shape[1]) if (c[:, i] == c[0, i]).all()}


def true_answer(x, idx, agg):
    return int(x[idx].max() if agg == "max" else x[idx].min())


@st.composite
def runs(draw, aggs=("max",)):
    n = draw(st.integers(1, 4))
    x = np.array(draw(st.lists(st.sampled_from([2, 4, 6, 8]), min_size=n, max_size=n)))
    qs = draw(
        st.lists(
            st.tuples(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True), st.sampled_from(aggs)),
            min_size=1,
            max_size=7,
        )
    )
    return n, x, [(np.array(sorted(q)), agg) for q, agg in qs]


# --------------------------------------------------------------------------- textbook cases
def test_max_textbook_case_is_denied():
    a = MaxAuditor(3)
    assert a.submit([0, 1, 2], 10).allowed
    d = a.submit([0, 1], 7)  # then x2 = 10
    assert not d.allowed and d.discloses == (2,)


def test_simulatable_max_denies_the_subset_whatever_the_data():
    for x in ([3, 5, 10], [10, 5, 3], [10, 10, 10], [1, 9, 4]):
        a = SimulatableMaxAuditor(3)
        assert a.check([0, 1, 2]).allowed
        a.commit([0, 1, 2], max(x))
        d = a.check([0, 1])  # no answer is given: the decision cannot depend on it
        assert not d.allowed and d.discloses == (2,)


def test_min_is_max_mirrored():
    a = MinAuditor(3)
    assert a.submit([0, 1, 2], 1).allowed
    d = a.submit([0, 1], 4)
    assert not d.allowed and d.discloses == (2,)
    s = SimulatableMinAuditor(3)
    s.commit([0, 1, 2], 1)
    assert not s.check([0, 1]).allowed


def test_denials_of_the_plain_max_auditor_leak_and_the_simulatable_ones_do_not():
    """Kenthapadi–Mishra–Nissim's attack: read x2 off the plain auditor's denial of max{0,1}."""
    worlds = [(3, 5, 10), (10, 5, 3), (4, 10, 10)]  # all with max(x) = 10

    def transcript(cls, x):
        a = cls(3)
        out = []
        for q in ([0, 1, 2], [0, 1]):
            v = max(x[i] for i in q)
            out.append(v if a.submit(q, v).allowed else "denied")
        assert a.disclosed() == ()  # no answer ever determined a value
        return tuple(out)

    def attacker(t):  # denial of max{0,1} after max{0,1,2} = a  ⇒  only x2 can attain a
        return t[0] if t[1] == "denied" else None

    plain = {x: transcript(MaxAuditor, x) for x in worlds}
    assert plain[(3, 5, 10)] == (10, "denied") and attacker(plain[(3, 5, 10)]) == 10  # learned x2, correctly
    assert all(attacker(t) in (None, x[2]) for x, t in plain.items())  # the inference is never wrong
    simul = {x: transcript(SimulatableMaxAuditor, x) for x in worlds}
    # the simulatable auditor gives the same transcript in worlds with different x2: nothing to learn
    assert len(set(simul.values())) == 1 and simul[(3, 5, 10)] == (10, "denied")


# --------------------------------------------------------------------------- exactness (properties)
@settings(max_examples=80, deadline=None)
@given(runs(("max",)))
def test_max_auditor_is_exact(run):
    n, x, qs = run
    D = datasets(n)
    a, answered = MaxAuditor(n), []
    for idx, agg in qs:
        v = true_answer(x, idx, agg)
        would = pinned(D, [*answered, (idx, v, agg)]) - pinned(D, answered)
        d = a.submit(idx.tolist(), v)
        assert d.allowed == (not would) and set(d.discloses) == would
        if d.allowed:
            answered.append((idx, v, agg))
    assert pinned(D, answered) == set()


@settings(max_examples=50, deadline=None)
@given(runs(("max",)))
def test_simulatable_max_denies_iff_some_consistent_answer_discloses(run):
    n, x, qs = run
    D = datasets(n)
    a, answered = SimulatableMaxAuditor(n), []
    for idx, agg in qs:
        c = D[consistent(D, answered)]
        risky = set()
        for v in np.unique(c[:, idx].max(axis=1)).clip(1, 9):  # answers with room below and above
            risky |= pinned(D, [*answered, (idx, int(v), agg)])
        d = a.check(idx.tolist())
        assert d.allowed == (not risky), (answered, idx)
        assert set(d.discloses) == risky
        if d.allowed:
            v = true_answer(x, idx, agg)
            a.commit(idx.tolist(), v)
            answered.append((idx, v, agg))
    assert pinned(D, answered) == set()


@settings(max_examples=80, deadline=None)
@given(runs(("max", "min")))
def test_max_and_min_auditor_is_exact(run):
    n, x, qs = run
    D = datasets(n)
    a, answered = MaxMinAuditor(n), []
    for idx, agg in qs:
        v = true_answer(x, idx, agg)
        would = pinned(D, [*answered, (idx, v, agg)]) - pinned(D, answered)
        d = a.submit(idx.tolist(), v, agg=agg)
        assert d.allowed == (not would), (answered, (idx, v, agg))
        assert set(d.discloses) == would
        if d.allowed:
            answered.append((idx, v, agg))
    assert pinned(D, answered) == set()


@settings(max_examples=60, deadline=None)
@given(runs(("max", "min")))
def test_offline_max_and_min_reports_what_the_answers_disclose(run):
    n, x, qs = run
    D = datasets(n)
    answered = [(idx, true_answer(x, idx, agg), agg) for idx, agg in qs]
    got = minmax_disclosed(
        n, [(i, v) for i, v, g in answered if g == "max"], [(i, v) for i, v, g in answered if g == "min"]
    )
    assert set(np.flatnonzero(got)) == pinned(D, answered)


def test_max_and_min_bounds_meet():
    a = MaxMinAuditor(3)
    assert a.submit([0, 1], 5, agg="max").allowed  # one of x0, x1 is 5, both ≤ 5
    assert a.submit([0, 1], 1, agg="min").allowed  # one of them is 1: {x0, x1} = {1, 5}
    d = a.submit([0, 2], 5, agg="min")  # x0 ≥ 5 ⇒ x0 = 5, x1 = 1
    assert not d.allowed and set(d.discloses) == {0, 1}


def test_max_and_min_disclosure_that_only_the_search_finds():
    # x = (8, 6, 2, 8). No query below has a single extreme record and no bounds meet, yet after
    # the last one x2 = 2: if x2 > 2, min{0,2} and min{2,3} need x0 = x3 = 2, and then max{0,3} = 8
    # has no record left to attain it.
    a = MaxMinAuditor(4)
    assert a.submit([1, 3], 8, agg="max").allowed
    assert a.submit([0, 3], 8, agg="max").allowed
    assert a.submit([0, 2], 2, agg="min").allowed
    d = a.submit([2, 3], 2, agg="min")
    assert not d.allowed and d.discloses == (2,)
    # offline: x = (4, 2, 6, 8); min{0,1} = 2 leaves x1 alone at its bound, so x1 = 2 cannot attain
    # max{1,3} = 8 and x3 = 8
    got = minmax_disclosed(4, [(np.array([1, 3]), 8)], [(np.array([0, 1]), 2), (np.array([0, 2]), 4)])
    assert np.flatnonzero(got).tolist() == [1, 3]


def test_an_exhausted_search_denies_rather_than_answers():
    a = MaxMinAuditor(4, budget=0)  # no search at all: every open case counts as a disclosure
    assert a.submit([1, 3], 8, agg="max").allowed and a.submit([0, 3], 8, agg="max").allowed
    d = a.submit([0, 2], 2, agg="min")  # safe (the default budget answers it), but undecided here
    assert not d.allowed


# --------------------------------------------------------------------------- state, errors
def test_max_state_round_trips_with_answers():
    a = SimulatableMaxAuditor(["a", "b", "c"])
    a.commit(["a", "b", "c"], 10)
    b = Auditor.from_json(a.dumps())
    assert isinstance(b, SimulatableMaxAuditor)
    assert not b.check(["a", "b"]).allowed and b.to_json() == a.to_json()


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: MaxAuditor(3).check([0, 1]), "needs the query's true answer"),
        (lambda: MaxAuditor(3).check([0], float("nan")), "must be finite"),
        (lambda: MaxAuditor(3).commit([0, 1], None), "needs the answer"),
        (lambda: (a := MaxAuditor(2), a.commit([0, 1], 5), a.check([0, 1], 9))[-1], "inconsistent"),
        (lambda: MaxMinAuditor(2).check([0], 1, agg="sum"), "audits max/min"),
    ],
)
def test_bad_input_is_one_line(call, fragment):
    with pytest.raises(AuditError, match=fragment) as e:
        call()
    assert "\n" not in str(e.value)


def test_thousand_max_queries_stay_consistent_with_a_recount():
    """The incremental extreme-set counts equal a recount from scratch after a long random run."""
    rng = np.random.default_rng(5)
    n = 400
    x = rng.integers(0, 60, n)  # many duplicates
    a = MaxAuditor(n)
    answered = []
    for _ in range(600):
        idx = np.flatnonzero(rng.random(n) < rng.choice([0.01, 0.05, 0.3]))
        if not idx.size:
            continue
        v = int(x[idx].max())
        if a.submit(idx.tolist(), v).allowed:
            answered.append((idx, v))
    mu = np.full(n, np.inf)
    for idx, v in answered:
        mu[idx] = np.minimum(mu[idx], v)
    assert (a.bounds.mu == mu).all()
    sizes = [int((mu[idx] == v).sum()) for idx, v in answered]
    assert min(sizes) >= 2  # no answered query has a single extreme record
    assert not minmax_disclosed(n, answered, []).any()
