"""The pooled audit's blind spot, closed: sessions that none of a new session's parties took part in.

The parties of a new session ``Q`` pool the party sets of every session any of them contributed to
(:mod:`parties.guards.audit_pool`): that is every earlier session that *intersects* ``Q``. The
sessions they cannot see are exactly those over sets disjoint from ``Q`` — sets of the parties
``C`` outside ``Q``, each of at least ``min_parties`` parties (the policy refuses smaller ones).
Sums over {a,b,c}, {a,b,d}, {a,b,e}, {a,b,f}, {a,c,d} and then {b,e,f} solve every input of six
parties, though b, e and f never saw {a,c,d}; with ``min_parties = 2`` five parties suffice:
{a,b}, {a,c}, {a,d}, {b,e}, {c,d,e}.

Rule (sound whatever the unseen sessions were): let ``K`` be the pooled sessions and ``W`` the
space every unseen session lies in — all vectors on ``C`` when ``|C| > m``, the single vector
``1_C`` when ``|C| = m``, nothing when ``|C| < m`` (``m`` = ``min_parties``). The sessions answered
after ``Q`` lie in ``span(K ∪ {1_Q} ∪ W)``, and a unit vector ``e_p`` there that the earlier
answers did not already give must use ``1_Q`` with a nonzero coefficient. So ``Q`` is refused iff

* ``1_Q`` is not already in ``span(K)`` (then it reveals nothing new: admitted), and
* either ``1_Q ∈ A = span(K ∪ W)`` and ``A`` holds some unit vector (``1_Q`` then combines with
  anything in ``A``), or ``span(A ∪ {1_Q})`` holds a unit vector ``A`` does not.

Proof sketch: if after ``Q`` the answered sets determine ``e_p``, write
``e_p = Σ λ_k 1_{K_k} + μ 1_Q + w`` with ``w`` in the span of the unseen sets (⊆ ``W``). ``μ = 0``
would mean the earlier answers already determined ``e_p``, which earlier decisions prevented; so
``μ ≠ 0``, and the two cases above are exactly when such a representation exists in
``span(K ∪ {1_Q} ∪ W)``. The rule over-approximates the unseen sessions (any sums on ``C``, not
only those their own audits admitted), so it refuses some harmless sessions; it never admits a
disclosing one, provided the auditing parties know every party of the federation (``universe``:
their configured peers and the parties of the sessions they know) and no party's ``min_parties``
is below ``m``. ``tests/test_audit_blindspot.py`` checks the invariant — no admitted set of
sessions determines an input — against an exact rank oracle over random sequences of 3 to 8 parties.

Exact rational arithmetic (:class:`anonymize.audit.rowspace.RationalRowSpace`); the matrices have
one column per party and at most one row per distinct party set.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from anonymize.audit.rowspace import RationalRowSpace

__all__ = ["blind_spot_disclosures", "unseen_space"]


def _indicator(members: Iterable[str], pos: dict[str, int]) -> np.ndarray:
    v = np.zeros(len(pos), dtype=np.int64)
    v[[pos[p] for p in members]] = 1
    return v


def unseen_space(outside: list[str], min_parties: int) -> list[list[str]]:
    """Generators of the space of sums over sets of at least ``min_parties`` of ``outside`` (as party lists)."""
    if len(outside) > min_parties:
        return [[p] for p in outside]  # differences of such sets give every unit vector on them
    if len(outside) == min_parties:
        return [list(outside)]
    return []


def blind_spot_disclosures(
    known: Iterable[frozenset[str]], q: Iterable[str], universe: Iterable[str], min_parties: int
) -> list[str]:
    """Parties whose input a session over ``q`` could help determine, given the pooled sessions ``known``.

    Empty: admit. ``universe``: every party the auditors know of; ``min_parties``: the smallest party set
    a session may have (at least 2).
    """
    qs = frozenset(q)
    sets = list(dict.fromkeys(frozenset(s) for s in known))
    names = sorted(set(universe) | qs | {p for s in sets for p in s})
    pos = {p: i for i, p in enumerate(names)}
    k_space = RationalRowSpace(len(names))
    for s in sets:
        k_space.commit(k_space.check(_indicator(s, pos)))
    target = _indicator(qs, pos)
    if k_space.check(target).in_rowspace:
        return []  # Q's sum follows from sums already answered: nothing new
    a_space = RationalRowSpace(len(names))
    for s in sets:
        a_space.commit(a_space.check(_indicator(s, pos)))
    outside = [p for p in names if p not in qs]
    for gen in unseen_space(outside, max(2, min_parties)):
        a_space.commit(a_space.check(_indicator(gen, pos)))
    step = a_space.check(target)
    if step.in_rowspace:
        return [names[i] for i in np.flatnonzero(a_space.disclosed)]
    return [names[i] for i in step.newly]
