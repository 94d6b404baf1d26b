"""Joint mining (horizontal KC04, vertical VC02) equals centralized mining — in-memory network.

Oracle: an exact brute force over all itemsets of the pooled data (small
universes), independent of ppdm's miners; and the FIMI reference fingerprints
for mushroom.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonymize.itemsets import TransactionDB, fingerprint, read_fimi
from mpc.channel import run_parties
from mpc.errors import InputMismatchError, ProtocolError
from parties.joint import mine_horizontal, mine_vertical
from parties.joint.partition import split_horizontal, split_vertical

REPO = Path(__file__).resolve().parents[1]


def brute_force(transactions, minsup, n_items):
    """All itemsets with count ≥ ceil(minsup·N), by enumeration (tiny universes only)."""
    N = len(transactions)
    need = max(1, math.ceil(Fraction(str(minsup)) * N))
    sets = [frozenset(t) for t in transactions]
    out = {}
    items = sorted({i for t in transactions for i in t})
    for k in range(1, len(items) + 1):
        found = False
        for c in combinations(items, k):
            cnt = sum(1 for t in sets if t.issuperset(c))
            if cnt >= need:
                out[c] = cnt
                found = True
        if not found:
            break
    return out


def brute_rules(itemsets, minconf):
    rules = {}
    for z, cz in itemsets.items():
        for r in range(1, len(z)):
            for x in combinations(z, r):
                conf = cz / itemsets[x]
                if conf >= minconf:
                    y = tuple(i for i in z if i not in x)
                    rules[(x, y)] = (cz, conf)
    return rules


def as_dict(fi):
    return {tuple(items): c for items, c in fi}


def run_h(parts, minsup, n_items, minconf=None, candidates="union"):
    async def f(ch, db):
        return await mine_horizontal(
            ch, db, min_support=minsup, min_confidence=minconf, n_items=n_items, candidates=candidates
        )

    return run_parties(len(parts), f, parts, timeout=120)


def run_v(parts, minsup, minconf=None):
    async def f(ch, db):
        return await mine_vertical(ch, db, min_support=minsup, min_confidence=minconf)

    return run_parties(len(parts), f, parts, timeout=120)


transactions_st = st.lists(
    st.lists(st.integers(0, 7), min_size=0, max_size=6).map(lambda t: sorted(set(t))), min_size=1, max_size=40
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    transactions_st,
    st.integers(2, 4),
    st.sampled_from(["0.1", "0.25", "0.5", "1"]),
    st.sampled_from(["union", "all", "auto"]),
    st.data(),
)
def test_horizontal_equals_brute_force(txs, n_parties, minsup, candidates, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(txs)), min_size=n_parties - 1, max_size=n_parties - 1)))
    bounds = [0, *cuts, len(txs)]  # uneven partitions, possibly empty
    parts = [TransactionDB.from_transactions(txs[bounds[i] : bounds[i + 1]]) for i in range(n_parties)]
    res = run_h(parts, minsup, n_items=8, minconf=0.5, candidates=candidates)
    want = brute_force(txs, minsup, 8)
    for r in res.values():
        assert as_dict(r.frequent) == want
        assert r.frequent.n_transactions == len(txs)
        assert {(x, y): (c, round(f, 12)) for (x, y, c, f) in r.rules} == {
            k: (c, round(f, 12)) for k, (c, f) in brute_rules(want, 0.5).items()
        }


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transactions_st, st.integers(2, 4), st.sampled_from(["0.1", "0.3", "0.6", "1"]), st.data())
def test_vertical_equals_brute_force(txs, n_parties, minsup, data):
    owner = data.draw(st.lists(st.integers(0, n_parties - 1), min_size=8, max_size=8))  # item i -> party
    parts = []
    for p in range(n_parties):
        mine = [i for i in range(8) if owner[i] == p]
        parts.append(TransactionDB.from_transactions([[i for i in t if owner[i] == p] for t in txs], items=mine))
    res = run_v(parts, minsup, minconf=0.6)
    want = brute_force(txs, minsup, 8)
    for r in res.values():
        assert as_dict(r.frequent) == want
        assert {(x, y): c for (x, y, c, f) in r.rules} == {k: c for k, (c, f) in brute_rules(want, 0.6).items()}


MUSHROOM_40 = "62b84f800484f4d59ebb499e2d11c768"  # ../shared/data/fimi/reference_counts.json, mushroom 40%


@pytest.fixture(scope="module")
def mushroom():
    return read_fimi(REPO / "anonymize" / "data" / "mushroom.dat")


@pytest.mark.parametrize("candidates", ["union", "all"])
def test_horizontal_mushroom_reference(mushroom, candidates):
    res = run_h(split_horizontal(mushroom, 3), "0.4", n_items=120, candidates=candidates)
    assert fingerprint(res["p0"].frequent) == MUSHROOM_40
    assert len(res["p0"].frequent) == 565
    assert ("secure_union" in res["p0"].phases) == (candidates == "union")


def test_vertical_mushroom_reference(mushroom):
    res = run_v(split_vertical(mushroom, 3), "0.4")
    assert fingerprint(res["p2"].frequent) == MUSHROOM_40
    assert all(r.bytes_sent > 0 for r in res.values())


def test_party_without_transactions():
    txs = [[0, 1], [0, 1, 2], [1, 2], [0]]
    parts = [TransactionDB.from_transactions(txs), TransactionDB.from_transactions([])]
    res = run_h(parts, "0.5", n_items=3)
    assert as_dict(res["p1"].frequent) == brute_force(txs, "0.5", 3)


def test_item_present_at_one_party_only():
    a = [[0, 1]] * 5
    b = [[0, 2]] * 3
    res = run_h([TransactionDB.from_transactions(a), TransactionDB.from_transactions(b)], "0.3", n_items=3)
    assert as_dict(res["p0"].frequent) == brute_force(a + b, "0.3", 3)


@pytest.mark.parametrize("bad", ["0", "1.5", "-0.1"])
def test_min_support_outside_unit_interval(bad):
    parts = [TransactionDB.from_transactions([[0]]), TransactionDB.from_transactions([[0]])]
    with pytest.raises(ValueError, match="min support"):
        run_h(parts, bad, n_items=1)


def test_universe_mismatch_is_one_clear_error_everywhere():
    parts = [TransactionDB.from_transactions([[0, 5]]), TransactionDB.from_transactions([[0]])]

    async def f(ch, db):
        try:
            await mine_horizontal(ch, db, min_support="0.5", n_items=3)
        except ProtocolError as e:
            return str(e)
        return "no error"

    res = run_parties(2, f, parts)
    # the refusal does not say which party: probing n_items would otherwise find each party's largest item id
    assert all("some party has item ids outside the agreed universe" in v and "p0" not in v for v in res.values())


def test_different_universe_sizes_refused():
    parts = [TransactionDB.from_transactions([[0]]), TransactionDB.from_transactions([[0]])]

    async def f(ch, db):
        n = 3 if ch.me == "p0" else 4
        try:
            await mine_horizontal(ch, db, min_support="0.5", n_items=n)
        except InputMismatchError as e:
            return str(e)

    assert all("n_items" in v for v in run_parties(2, f, parts).values())


def test_vertical_transaction_count_mismatch():
    parts = [TransactionDB.from_transactions([[0], [0]]), TransactionDB.from_transactions([[1]])]
    with pytest.raises(InputMismatchError, match="transactions"):
        run_v(parts, "0.5")


def test_vertical_overlapping_items_refused():
    parts = [TransactionDB.from_transactions([[0, 1]]), TransactionDB.from_transactions([[1]])]
    with pytest.raises(ProtocolError, match="more than one party"):
        run_v(parts, "0.5")


SHARED_FIMI = REPO.parent / "shared" / "data" / "fimi"


@pytest.mark.skipif(not (SHARED_FIMI / "retail.dat").exists(), reason="needs ../shared/data/fimi (present in CI)")
def test_horizontal_retail_reference():
    import json

    ref = next(
        lv
        for lv in json.loads((SHARED_FIMI / "reference_counts.json").read_text())["levels"]
        if lv["dataset"] == "retail" and lv["minsup"] == 0.01
    )
    db = read_fimi(SHARED_FIMI / "retail.dat")
    res = run_h(split_horizontal(db, 3), "0.01", n_items=int(db.items.max()) + 1)
    assert fingerprint(res["p0"].frequent) == ref["fingerprint_md5"]
    assert len(res["p0"].frequent) == ref["n_itemsets"]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transactions_st, st.integers(2, 3), st.sampled_from(["0.5", "0.75", "1"]))
def test_horizontal_rules_by_secure_threshold_without_counts(txs, n_parties, minconf):
    parts = split_horizontal(TransactionDB.from_transactions(txs), n_parties)

    async def f(ch, db):
        return await mine_horizontal(ch, db, min_support="0.2", min_confidence=minconf, n_items=8, reveal_counts=False)

    res = run_parties(n_parties, f, parts, timeout=120)
    want = brute_force(txs, "0.2", 8)
    for r in res.values():
        assert {items for items, c in r.frequent} == set(want)
        assert all(c == -1 for _, c in r.frequent)  # counts never computed
        assert {(x, y) for (x, y, c, f) in r.rules} == set(brute_rules(want, float(Fraction(minconf))))
