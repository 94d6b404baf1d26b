"""The pooled audit's blind spot (issue 16, item 1): sessions none of a new session's parties saw.

Oracle: an exact rank computation of the tests (Gaussian elimination over fractions.Fraction in
tests/test_audit_guard.py, not the auditor's row spaces): after every admitted session, no unit vector lies in the row space of
the admitted party sets. The deciders of a session know exactly the admitted sessions that share a
party with it (the pooled views), as on real daemons.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from parties.guards.audit_blindspot import blind_spot_disclosures
from tests.test_audit_guard import determined


def admit_sequence(requests, parties, m):
    admitted: list[frozenset[str]] = []
    refused = []
    for q in requests:
        known = [s for s in admitted if s & q]  # what the session's parties pool
        why = blind_spot_disclosures(known, q, parties, m)
        if why:
            refused.append((q, why))
        else:
            admitted.append(q)
    return admitted, refused


@st.composite
def sequences(draw):
    n = draw(st.integers(3, 8))
    parties = [chr(ord("a") + i) for i in range(n)]
    m = draw(st.integers(2, min(3, n)))
    sets = st.sets(st.sampled_from(parties), min_size=m, max_size=n).map(frozenset)
    return parties, m, draw(st.lists(sets, min_size=1, max_size=14))


@settings(max_examples=300, deadline=None)
@given(sequences())
def test_no_sequence_of_admitted_sessions_determines_an_input(case):
    parties, m, requests = case
    admitted, _ = admit_sequence(requests, parties, m)
    assert determined(admitted, parties) == set(), (admitted, m)


def test_the_six_and_five_party_attacks_are_refused():
    six = [frozenset(s) for s in ("abc", "abd", "abe", "abf", "acd", "bef")]
    admitted, refused = admit_sequence(six, list("abcdef"), 3)
    assert refused and determined(admitted, list("abcdef")) == set()
    assert determined(six, list("abcdef")) == set("abcdef")  # all of them together solve every input
    five = [frozenset(s) for s in ("ab", "ac", "ad", "be", "cde")]
    admitted, refused = admit_sequence(five, list("abcde"), 2)
    assert refused and determined(admitted, list("abcde")) == set()
    assert determined(five, list("abcde")) == set("abcde")


def test_harmless_sessions_are_admitted():
    """Repeating a set, or sets whose sum follows from answered ones, reveals nothing new."""
    p = list("abcdef")
    admitted, refused = admit_sequence([frozenset("abc"), frozenset("abc"), frozenset("def")], p, 3)
    assert not refused
    admitted, refused = admit_sequence([frozenset("abcdef"), frozenset("abc")], p, 3)
    assert not refused  # {d,e,f} follows, and three parties may be summed
