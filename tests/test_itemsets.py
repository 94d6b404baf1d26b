"""Local frequent-itemset miners, their building blocks and association rules.

Oracles: the FIMI reference fingerprints (``shared/data/fimi/reference_counts.json``,
computed by pyfim and mlxtend and cross-checked there), an exhaustive brute force on
small random databases, and ``mlxtend.frequent_patterns`` (fpgrowth, apriori,
association_rules).
"""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonymize.itemsets import (
    TransactionDB,
    apriori,
    apriori_gen,
    association_rules,
    count_support,
    eclat,
    fingerprint,
    frequent_itemsets,
    item_columns,
    itemset_columns,
    min_count_for,
    parse_fimi,
    popcount,
    read_fimi,
    unpack_columns,
)
from anonymize.itemsets.engine import mine_bitsets

ROOT = Path(__file__).resolve().parents[1]
MUSHROOM = ROOT / "anonymize" / "data" / "mushroom.dat"
FIMI = ROOT.parent / "shared" / "data" / "fimi"  # present in CI next to the clone

# Copied from shared/data/fimi/reference_counts.json (semantics: count ≥ ceil(minsup·N);
# md5 of the sorted "i1 i2 ... ik:count" lines joined by "\n").
REFERENCE = {
    ("mushroom", 0.5): (4062, 153, "21235e4fcab19b42f2650f5048447cb5", {1: 13, 2: 41, 3: 56, 4: 35, 5: 8}),
    ("mushroom", 0.4): (
        3250,
        565,
        "62b84f800484f4d59ebb499e2d11c768",
        {1: 21, 2: 97, 3: 185, 4: 170, 5: 76, 6: 15, 7: 1},
    ),
    ("mushroom", 0.3): (
        2438,
        2735,
        "ae0edb024989451641141956d540ae07",
        {1: 28, 2: 163, 3: 455, 4: 725, 5: 712, 6: 441, 7: 169, 8: 38, 9: 4},
    ),
    ("mushroom", 0.2): (
        1625,
        53583,
        "b7f1a7eef953a4e245d2d2e5d94f698b",
        {
            1: 43,
            2: 376,
            3: 1472,
            4: 3559,
            5: 6267,
            6: 8802,
            7: 10151,
            8: 9488,
            9: 7010,
            10: 4004,
            11: 1729,
            12: 546,
            13: 119,
            14: 16,
            15: 1,
        },
    ),
    ("retail", 0.01): (882, 159, "c5b18fd01368d2c8b8c89b81daeb4cea", {1: 70, 2: 58, 3: 25, 4: 6}),
    ("T10I4D100K", 0.01): (1000, 385, "8228ae4639e9a3e25162b01acd1b11ef", {1: 375, 2: 9, 3: 1}),
}


@pytest.fixture(scope="module")
def mushroom() -> TransactionDB:
    return read_fimi(MUSHROOM)


def check_reference(result, key):
    min_count, n, md5, by_len = REFERENCE[key]
    assert result.min_count == min_count
    assert len(result) == n
    assert result.by_length() == by_len
    assert fingerprint(result) == md5


# --------------------------------------------------------------------------- reference data


@pytest.mark.parametrize("minsup", [0.5, 0.4, 0.3, 0.2])
def test_mushroom_reference_fingerprints(mushroom, minsup):
    check_reference(frequent_itemsets(mushroom, minsup), ("mushroom", minsup))


@pytest.mark.parametrize("miner", [apriori, eclat])
def test_mushroom_reference_other_miners(mushroom, miner):
    check_reference(miner(mushroom, 0.3), ("mushroom", 0.3))
    check_reference(miner(mushroom, 0.5), ("mushroom", 0.5))


def test_mushroom_item_in_every_transaction(mushroom):
    # item 85 occurs in all 8,124 transactions: its singleton must be reported (pyfim drops it)
    fi = frequent_itemsets(mushroom, 0.3)
    assert fi.support([[85]])[0] == len(mushroom) == 8124
    only_all = frequent_itemsets(mushroom, 1.0)
    assert only_all.to_dict() == {frozenset([85]): 8124}


def test_memory_budget_split_is_exact(mushroom):
    # a tiny budget forces depth-first blocks of prefix classes (no pruning below a split)
    check_reference(frequent_itemsets(mushroom, 0.3, memory_budget=1 << 14), ("mushroom", 0.3))
    check_reference(eclat(mushroom, 0.4, memory_budget=1 << 12), ("mushroom", 0.4))


@pytest.mark.parametrize("dedupe", [True, False])
@pytest.mark.parametrize("level2", ["horizontal", "vertical"])
def test_engine_variants_on_mushroom(mushroom, dedupe, level2):
    fi = mine_bitsets(mushroom, 2438, dedupe=dedupe, level2=level2)
    check_reference(fi, ("mushroom", 0.3))


@pytest.mark.skipif(not FIMI.is_dir(), reason="shared FIMI data not present")
@pytest.mark.parametrize("name", ["retail", "T10I4D100K"])
def test_fimi_reference_one_percent(name):
    db = read_fimi(FIMI / f"{name}.dat")
    check_reference(frequent_itemsets(db, 0.01), (name, 0.01))


# --------------------------------------------------------------------------- thresholds


def test_min_count_is_exact_decimal():
    assert min_count_for(0.7, 3196) == 2238  # 0.7·3196 = 2237.2
    assert min_count_for(0.005, 100000) == 500  # exactly 500, not 501
    assert min_count_for(0.001, 88162) == 89
    assert min_count_for(0.2, 8124) == 1625
    assert min_count_for(1.0, 17) == 17
    assert min_count_for(1, 17) == 17
    assert min_count_for(Fraction(1, 3), 10) == 4
    assert min_count_for(1e-9, 10) == 1
    assert min_count_for(0.5, 0) == 1


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.0000001, 2, float("nan"), float("inf")])
def test_minsup_outside_unit_interval(bad):
    with pytest.raises(ValueError, match="minsup|finite"):
        min_count_for(bad, 10)
    with pytest.raises(ValueError):
        frequent_itemsets([[1, 2]], bad)


def test_threshold_arguments():
    with pytest.raises(ValueError, match="exactly one"):
        frequent_itemsets([[1]])
    with pytest.raises(ValueError, match="exactly one"):
        frequent_itemsets([[1]], 0.5, min_count=1)
    with pytest.raises(ValueError, match="at least 1"):
        frequent_itemsets([[1]], min_count=0)
    with pytest.raises(TypeError):
        frequent_itemsets([[1]], min_count=1.5)
    with pytest.raises(ValueError, match="max_len"):
        frequent_itemsets([[1]], min_count=1, max_len=0)


def test_tiny_support_on_tiny_data_gives_every_subset():
    fi = frequent_itemsets([[3, 1, 2], [2, 2]], 1e-6)
    assert fi.to_dict() == {
        frozenset(c): (2 if c == (2,) else 1) for r in (1, 2, 3) for c in itertools.combinations((1, 2, 3), r)
    }
    assert fi.by_length() == {1: 3, 2: 3, 3: 1} and fi.max_len == 3


def test_apriori_gen_small_cases():
    assert apriori_gen([[1], [3], [2]]).tolist() == [[1, 2], [1, 3], [2, 3]]
    assert apriori_gen([[1, 2], [1, 3], [2, 3], [1, 4]]).tolist() == [[1, 2, 3]]  # {1,3,4}: {3,4} missing
    assert apriori_gen([[1, 2]]).shape == (0, 3)
    with pytest.raises(ValueError, match="same size"):
        apriori_gen([[1, 2], [3]])
    with pytest.raises(ValueError, match="twice"):
        apriori_gen([[1, 1], [1, 2]])


def test_boundary_count_is_frequent():
    # count == ceil(minsup·N) is frequent; one below is not
    txs = [[1, 2]] * 7 + [[1]] * 3  # N = 10, {1,2} has count 7
    assert frozenset([1, 2]) in frequent_itemsets(txs, 0.7).to_dict()
    assert frozenset([1, 2]) not in frequent_itemsets(txs, 0.71).to_dict()


# --------------------------------------------------------------------------- reading


def test_parse_fimi_whitespace_blank_lines_duplicates(tmp_path):
    p = tmp_path / "x.dat"
    p.write_bytes(b"3 1 2 \n\n 5\t7\r\n2 2 2\n\n9 1")  # trailing blanks, tab, CRLF, no final newline
    db = read_fimi(p)
    assert db.n_transactions == 4
    assert db.transactions() == [[1, 2, 3], [5, 7], [2], [1, 9]]
    assert db.items.tolist() == [1, 2, 3, 5, 7, 9]
    assert db.item_support().tolist() == [2, 2, 1, 1, 1, 1]


@pytest.mark.parametrize(
    "text,line,token",
    [
        (b"1 2\n3 x4\n", 2, "x4"),
        (b"1 2\n\n3 -4\n", 3, "-4"),
        (b"1.5\n", 1, "1.5"),
        (b"1 2\n3 4\n5 1234567890123456789012\n", 3, "1234567890123456789012"),
        ("1 2\n7 \u0663\n".encode(), 2, "\u0663"),
    ],
)
def test_parse_fimi_bad_token(tmp_path, text, line, token):
    p = tmp_path / "bad.dat"
    p.write_bytes(text)
    with pytest.raises(ValueError) as err:
        read_fimi(p)
    msg = str(err.value)
    assert "bad.dat" in msg and f"line {line}" in msg and repr(token) in msg


def test_empty_inputs(tmp_path):
    p = tmp_path / "empty.dat"
    p.write_bytes(b"")
    for db in (read_fimi(p), parse_fimi("\n\n  \n"), TransactionDB.from_transactions([])):
        assert db.n_transactions == 0 and db.items.size == 0
        fi = frequent_itemsets(db, 0.5)
        assert len(fi) == 0 and fingerprint(fi) == fingerprint({})
        assert count_support(db, [[1], [], [1, 2]]).tolist() == [0, 0, 0]
        assert len(association_rules(fi, 0.1)) == 0


def test_from_transactions_and_onehot_agree():
    txs = [[5, 1], [1, 5, 5], [2], [], [9, 2, 1]]
    db = TransactionDB.from_transactions(txs)
    assert db.transactions() == [[1, 5], [1, 5], [2], [], [1, 2, 9]]
    df = db.to_onehot()
    assert list(df.columns) == [1, 2, 5, 9]
    db2 = TransactionDB.from_onehot(df.astype(int)[[9, 5, 2, 1]])  # 0/1 ints, shuffled int columns
    assert db2.transactions() == db.transactions()
    assert frequent_itemsets(db2, min_count=1) == frequent_itemsets(db, min_count=1)
    sparse = df.astype(pd.SparseDtype(bool, False))
    assert TransactionDB.from_onehot(sparse).transactions() == db.transactions()
    with pytest.raises(TypeError):
        TransactionDB.from_transactions([[1, "a"]])
    with pytest.raises(TypeError):
        TransactionDB.from_transactions([[1.5]])
    with pytest.raises(ValueError, match="non-negative"):
        TransactionDB.from_transactions([[1, -2]])


def test_onehot_with_names_keeps_labels():
    df = pd.DataFrame({"milk": [1, 1, 0, 1], "bread": [1, 1, 1, 0], "beer": [0, 0, 0, 0]})
    db = TransactionDB.from_onehot(df)
    assert db.items.tolist() == [0, 1, 2] and db.labels == ("milk", "bread", "beer")
    fi = frequent_itemsets(df, 0.5)
    frame = fi.to_frame()
    got = dict(zip(frame["itemsets"], frame["count"]))
    assert got == {frozenset({"milk"}): 3, frozenset({"bread"}): 3, frozenset({"milk", "bread"}): 2}
    rules = association_rules(fi, 0.6).to_frame()
    assert set(zip(rules["antecedents"], rules["consequents"])) == {
        (frozenset({"milk"}), frozenset({"bread"})),
        (frozenset({"bread"}), frozenset({"milk"})),
    }
    with pytest.raises(ValueError, match="0/1"):
        TransactionDB.from_onehot(pd.DataFrame({"a": [0, 2]}))


def test_take_splits_horizontally(mushroom):
    a, b = mushroom.take(np.arange(0, 8124, 2)), mushroom.take(np.arange(1, 8124, 2))
    cands = [[85], [34, 85], [2, 39, 85, 86], [1, 3], [1000]]
    assert (count_support(a, cands) + count_support(b, cands)).tolist() == count_support(mushroom, cands).tolist()


def test_vertical_partition_columns(mushroom):
    # two parties hold disjoint item columns of the same transactions (Vaidya & Clifton 2002):
    # the support of an itemset is the popcount of the AND of the parties' vectors
    rng = np.random.default_rng(7)
    items = mushroom.items
    mine = rng.random(items.size) < 0.5
    txs = mushroom.transactions()
    a = TransactionDB.from_transactions(
        [[i for i in t if i in set(items[mine].tolist())] for t in txs], items=items[mine]
    )
    b = TransactionDB.from_transactions(
        [[i for i in t if i not in set(items[mine].tolist())] for t in txs], items=items[~mine]
    )
    cands = [list(s) for s, _ in frequent_itemsets(mushroom, 0.4)] + [[1, 2], []]
    va = itemset_columns(a, cands, missing="ignore")
    vb = itemset_columns(b, cands, missing="ignore")
    want = count_support(mushroom, cands)
    assert popcount(va & vb).tolist() == want.tolist()
    assert want[-2] == 0 and want[-1] == len(mushroom)
    # an item nobody holds: empty by default
    assert popcount(itemset_columns(mushroom, [[85, 1000], [85]])).tolist() == [0, 8124]
    with pytest.raises(ValueError):
        itemset_columns(a, cands, missing="nope")


# --------------------------------------------------------------------------- brute force oracles


def brute_force(txs, min_count, max_len=None):
    sets = [frozenset(t) for t in txs]
    universe = sorted(set().union(*sets)) if sets else []
    out = {}
    for k in range(1, (max_len or len(universe)) + 1):
        for combo in itertools.combinations(universe, k):
            c = sum(1 for t in sets if t.issuperset(combo))
            if c >= min_count:
                out[frozenset(combo)] = c
    return out


def brute_rules(freq, min_conf):
    out = {}
    for z, cz in freq.items():
        for r in range(1, len(z)):
            for ante in itertools.combinations(sorted(z), r):
                a = frozenset(ante)
                if Fraction(cz, freq[a]) >= Fraction(repr(min_conf)):
                    out[(a, z - a)] = (cz, cz / freq[a])
    return out


ITEM_IDS = [0, 1, 3, 7, 12, 64, 65, 200, 1000]
databases = st.lists(st.lists(st.sampled_from(ITEM_IDS), max_size=9), max_size=90)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(txs=databases, frac=st.floats(0.01, 1.0))
def test_miners_match_brute_force(txs, frac):
    n = len(txs)
    min_count = max(1, math.ceil(frac * n))
    want = brute_force(txs, min_count)
    db = TransactionDB.from_transactions(txs)
    for got in (
        frequent_itemsets(db, min_count=min_count),
        apriori(db, min_count=min_count),
        eclat(db, min_count=min_count, memory_budget=256),
        mine_bitsets(db, min_count, dedupe=True, level2="vertical"),
        mine_bitsets(db, min_count, dedupe=False, level2="horizontal", memory_budget=64),
    ):
        assert got.to_dict() == want
        assert fingerprint(got) == fingerprint(want)
    capped = frequent_itemsets(db, min_count=min_count, max_len=2).to_dict()
    assert capped == {s: c for s, c in want.items() if len(s) <= 2}


@st.composite
def patterned_databases(draw):
    """Dense data with long frequent itemsets: each transaction is a union of patterns plus noise."""
    items = list(range(10))
    patterns = draw(st.lists(st.lists(st.sampled_from(items), min_size=2, max_size=7), min_size=1, max_size=4))
    n = draw(st.integers(1, 120))
    txs = []
    for _ in range(n):
        chosen = draw(st.lists(st.sampled_from(range(len(patterns))), max_size=3))
        noise = draw(st.lists(st.sampled_from(items), max_size=2))
        txs.append(sorted({i for c in chosen for i in patterns[c]} | set(noise)))
    return txs


def subset_counts(txs):
    counts = {}
    for t in txs:
        for r in range(1, len(set(t)) + 1):
            for combo in itertools.combinations(sorted(set(t)), r):
                counts[combo] = counts.get(combo, 0) + 1
    return counts


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(txs=patterned_databases(), frac=st.floats(0.01, 1.0))
def test_miners_match_brute_force_on_dense_data(txs, frac):
    min_count = max(1, math.ceil(frac * len(txs)))
    want = {frozenset(s): c for s, c in subset_counts(txs).items() if c >= min_count}
    db = TransactionDB.from_transactions(txs)
    for got in (
        frequent_itemsets(db, min_count=min_count),
        apriori(db, min_count=min_count),
        eclat(db, min_count=min_count, memory_budget=128),
        mine_bitsets(db, min_count, dedupe=True, level2="horizontal", memory_budget=64),
        mine_bitsets(db, min_count, dedupe=False, level2="vertical"),
    ):
        assert got.to_dict() == want


@settings(max_examples=40, deadline=None)
@given(txs=databases, cands=st.lists(st.lists(st.sampled_from(ITEM_IDS + [5, 99999]), max_size=4), max_size=30))
def test_count_support_and_columns_match_brute_force(txs, cands):
    db = TransactionDB.from_transactions(txs)
    sets = [frozenset(t) for t in txs]
    want = [sum(1 for t in sets if t.issuperset(c)) for c in cands]
    assert count_support(db, cands).tolist() == want
    cols = itemset_columns(db, cands)
    assert cols.shape == (len(cands), (len(txs) + 63) // 64)
    assert popcount(cols).tolist() == want
    dense = unpack_columns(cols, len(txs))
    for c, row in zip(cands, dense):
        assert row.tolist() == [t.issuperset(c) for t in sets]
    singles = sorted({i for c in cands for i in c})
    ic = unpack_columns(item_columns(db, singles), len(txs))
    for i, row in zip(singles, ic):
        assert row.tolist() == [i in t for t in sets]


@settings(max_examples=40, deadline=None)
@given(sets=st.lists(st.lists(st.integers(0, 9), min_size=3, max_size=3, unique=True), max_size=40))
def test_apriori_gen_matches_definition(sets):
    fk = {tuple(sorted(s)) for s in sets}
    got = apriori_gen(list(fk)) if fk else apriori_gen(np.zeros((0, 3), np.int64))
    universe = sorted({i for s in fk for i in s})
    want = [c for c in itertools.combinations(universe, 4) if all(tuple(x for x in c if x != d) in fk for d in c)]
    assert [tuple(r) for r in got.tolist()] == sorted(want)


@settings(max_examples=40, deadline=None)
@given(txs=databases, frac=st.floats(0.05, 0.6), conf=st.sampled_from([0.0, 0.3, 0.5, 0.7, 0.9, 1.0]))
def test_rules_match_brute_force(txs, frac, conf):
    min_count = max(1, math.ceil(frac * len(txs)))
    fi = frequent_itemsets(txs, min_count=min_count)
    got = association_rules(fi, conf)
    want = brute_rules(fi.to_dict(), conf)
    assert {k: v[0] for k, v in got.to_dict().items()} == {k: v[0] for k, v in want.items()}
    for k, (_, c) in got.to_dict().items():
        assert c == pytest.approx(want[k][1], rel=1e-12)
    for r in got:
        assert set(r.antecedent).isdisjoint(r.consequent) and r.antecedent and r.consequent


def test_rule_confidence_threshold_is_exact():
    txs = [[1, 2]] * 7 + [[1]] * 3
    fi = frequent_itemsets(txs, min_count=1)
    assert association_rules(fi, 0.7).to_dict()[(frozenset([1]), frozenset([2]))] == (7, 0.7)
    assert (frozenset([1]), frozenset([2])) not in association_rules(fi, 0.71).to_dict()
    with pytest.raises(ValueError):
        association_rules(fi, 1.5)


# --------------------------------------------------------------------------- mlxtend oracle

from mlxtend.frequent_patterns import apriori as mx_apriori  # noqa: E402
from mlxtend.frequent_patterns import association_rules as mx_rules  # noqa: E402
from mlxtend.frequent_patterns import fpgrowth as mx_fpgrowth  # noqa: E402


def mlxtend_itemsets(db, min_count, algo):
    df = db.to_onehot()
    # (min_count − ½)/N: an integer count passes iff count ≥ min_count, whatever the float rounding
    res = algo(df, min_support=(min_count - 0.5) / len(db), use_colnames=True)
    return res, {s: int(round(p * len(db))) for s, p in zip(res["itemsets"], res["support"])}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    txs=st.lists(st.lists(st.sampled_from(ITEM_IDS), max_size=9), min_size=1, max_size=90),
    frac=st.floats(0.02, 0.7),
    conf=st.sampled_from([0.25, 0.5, 0.6, 0.8]),
)
def test_itemsets_and_rules_match_mlxtend(txs, frac, conf):
    db = TransactionDB.from_transactions(txs)
    if db.items.size == 0:
        return
    min_count = max(1, math.ceil(frac * len(txs)))
    ours = frequent_itemsets(db, min_count=min_count)
    res, theirs = mlxtend_itemsets(db, min_count, mx_fpgrowth)
    assert ours.to_dict() == theirs
    assert mlxtend_itemsets(db, min_count, mx_apriori)[1] == theirs
    if len(res) == 0:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mr = mx_rules(res, num_itemsets=len(db), metric="confidence", min_threshold=conf)
    near = lambda c: abs(c - conf) < 1e-9  # noqa: E731 - float ties decided differently by mlxtend
    theirs_r = {(a, c): cf for a, c, cf in zip(mr["antecedents"], mr["consequents"], mr["confidence"]) if not near(cf)}
    ours_r = {k: v[1] for k, v in association_rules(ours, conf).to_dict().items() if not near(v[1])}
    assert set(ours_r) == set(theirs_r)
    for k, c in ours_r.items():
        assert c == pytest.approx(theirs_r[k], rel=1e-9)


def test_mushroom_rules_match_mlxtend(mushroom):
    fi = frequent_itemsets(mushroom, 0.4)
    res, theirs = mlxtend_itemsets(mushroom, fi.min_count, mx_fpgrowth)
    assert fi.to_dict() == theirs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mr = mx_rules(res, num_itemsets=len(mushroom), metric="confidence", min_threshold=0.85)
    ours = association_rules(fi, 0.85)
    assert len(ours) == len(mr) > 1000
    assert set(zip(mr["antecedents"], mr["consequents"])) == set(ours.to_dict())
