"""Side-effect metrics and the pattern model of rule hiding, on databases worked out by hand.

Every expected number below is derived in the comments from the transactions, not
from the code under test.
"""

from __future__ import annotations

import math
import random
import warnings
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mlxtend.frequent_patterns import association_rules as mx_rules
from mlxtend.frequent_patterns import fpgrowth

from anonymize.hiding import (
    HidingError,
    SensitivePattern,
    artifactual_patterns,
    dissimilarity,
    hiding_failure,
    is_mined,
    measure_hiding,
    misses_cost,
    parse_sensitive,
)
from anonymize.hiding.patterns import deletions_to_hide
from anonymize.itemsets import TransactionDB, frequent_itemsets

# D, N = 6, min_support 1/3 -> minc = ceil(6/3) = 2
#   t0 {1,2,3}  t1 {1,2}  t2 {1,2,4}  t3 {1,3}  t4 {2,3}  t5 {4}
# item counts: 1:4 (t0 t1 t2 t3)  2:4 (t0 t1 t2 t4)  3:3 (t0 t3 t4)  4:2 (t2 t5)   Σ = 13
# pairs: {1,2}:3  {1,3}:2  {2,3}:2  {1,4}:1  {2,4}:1  {3,4}:0   triple {1,2,3}:1
# F(D) = {1} {2} {3} {4} {1,2} {1,3} {2,3}            (7 itemsets)
D = [[1, 2, 3], [1, 2], [1, 2, 4], [1, 3], [2, 3], [4]]
MINC = 2
SENS = [SensitivePattern.itemset([1, 2])]  # F' = F(D) minus {1,2} = 6 itemsets


def db(txs):
    return TransactionDB.from_transactions(txs, items=[1, 2, 3, 4])


def test_deleting_item_2_from_t1_and_t2():
    # D': t1 {1}, t2 {1,4}. counts 1:4 2:2 3:3 4:2; {1,2}: t0 only = 1 < 2 -> hidden
    # {1,3}: t0 t3 = 2, {2,3}: t0 t4 = 2 -> kept. F(D') = {1}{2}{3}{4}{1,3}{2,3}
    # HF = 0/1; MC = 0/6; AP = 0/6; dif = (|4-4| + |4-2| + |3-3| + |2-2|)/13 = 2/13
    d2 = [[1, 2, 3], [1], [1, 4], [1, 3], [2, 3], [4]]
    m = measure_hiding(db(D), db(d2), SENS, MINC)
    assert (m.itemsets_before, m.itemsets_after, m.nonsensitive_itemsets) == (7, 6, 6)
    assert m.hiding_failure == 0 and m.sensitive_mined_before == 1 and m.sensitive_mined_after == 0
    assert (m.lost_itemsets, m.misses_cost) == (0, 0.0)
    assert (m.ghost_itemsets, m.artifactual_patterns) == (0, 0.0)
    assert m.dissimilarity == pytest.approx(2 / 13)
    s = m.sensitive[0]
    assert (s.support_before, s.support_after, s.mined_before, s.mined_after) == (3, 1, True, False)


def test_deleting_item_1_from_t0_and_t1_loses_13():
    # D'': t0 {2,3}, t1 {2}. counts 1:2 (t2 t3) 2:4 3:3 4:2; {1,2}: t2 = 1 -> hidden;
    # {1,3}: t3 only = 1 -> LOST; {2,3}: t0 t4 = 2 kept. MC = 1/6, dif = |4-2|/13 = 2/13
    d3 = [[2, 3], [2], [1, 2, 4], [1, 3], [2, 3], [4]]
    m = measure_hiding(db(D), db(d3), SENS, MINC)
    assert (m.lost_itemsets, m.misses_cost) == (1, pytest.approx(1 / 6))
    assert m.ghost_itemsets == 0 and m.hiding_failure == 0
    assert m.dissimilarity == pytest.approx(2 / 13)


def test_an_added_item_makes_a_ghost():
    # D''' = D'' with item 4 added to t3: {1,4}: t2 t3 = 2 -> frequent, absent from F(D): a ghost.
    # F(D''') = {1}{2}{3}{4}{2,3}{1,4} (6): AP = 1/6; lost {1,3} still: MC = 1/6
    # item 4: 2 -> 3, so dif = (|4-2| + |2-3|)/13 = 3/13
    d4 = [[2, 3], [2], [1, 2, 4], [1, 3, 4], [2, 3], [4]]
    m = measure_hiding(db(D), db(d4), SENS, MINC)
    assert (m.ghost_itemsets, m.artifactual_patterns) == (1, pytest.approx(1 / 6))
    assert m.lost_itemsets == 1
    assert m.dissimilarity == pytest.approx(3 / 13)


def test_unchanged_database_is_a_full_hiding_failure():
    m = measure_hiding(db(D), db(D), SENS, MINC)
    assert m.hiding_failure == 1.0 and m.dissimilarity == 0 and m.lost_itemsets == 0


def test_rule_metrics_and_a_ghost_rule_from_deletions():
    # C = 0.6 on D: 1->2 3/4 ok; 2->1 3/4 ok; 1->3 2/4 no; 3->1 2/3 ok; 2->3 2/4 no; 3->2 2/3 ok
    # rules(D) = {1->2, 2->1, 3->1, 3->2}; sensitive 1->2, non-sensitive {2->1, 3->1, 3->2}
    # D' (item 2 out of t1 and t2): {1,2} = 1 < minc, so 1->2 and 2->1 vanish; 3->1 2/3 ok;
    # count(2) = 2 now, so 2->3 = 2/2 = 1 ok (a ghost rule); 3->2 2/3 ok.
    # 1->2 was hidden by support ({1,2} infrequent in D'), so {1,2} and every rule it generates (2->1)
    # had to go: non-sensitive rules {3->1, 3->2}, none lost; ghosts 1 of 3 rules of D'
    d2 = [[1, 2, 3], [1], [1, 4], [1, 3], [2, 3], [4]]
    rule = [SensitivePattern.rule([1], [2])]
    m = measure_hiding(db(D), db(d2), rule, MINC, Fraction(3, 5))
    assert (m.rules_before, m.rules_after, m.nonsensitive_rules) == (4, 3, 2)
    assert m.hiding_failure == 0
    assert (m.lost_rules, m.misses_cost_rules) == (0, 0.0)
    assert (m.ghost_rules, m.artifactual_rules) == (1, pytest.approx(1 / 3))
    s = m.sensitive[0]
    assert s.kind == "rule" and s.confidence_before == pytest.approx(3 / 4) and s.mined_after is False


def test_metric_functions_directly():
    assert hiding_failure(0, 0) == 0.0 and hiding_failure(4, 1) == 0.25
    assert misses_cost({"a", "b", "c", "d"}, {"a", "x"}) == (3, 0.75)
    assert misses_cost(set(), {"a"}) == (0, 0.0)
    assert artifactual_patterns({"a", "b"}, {"a", "x", "y", "z"}) == (3, 0.75)
    assert artifactual_patterns({"a"}, set()) == (0, 0.0)
    # dif over the union of items: D {1}:2 {2}:1, D' {1}:1 {3}:1 -> (1 + 1 + 1)/3
    a = TransactionDB.from_transactions([[1, 2], [1]])
    b = TransactionDB.from_transactions([[1], [3]])
    assert dissimilarity(a, b) == pytest.approx(3 / 3)


def test_parse_sensitive_syntax():
    ps = parse_sensitive(" 1 2 ; 3,4 => 5 ;; 2 1")
    assert ps == [SensitivePattern.itemset([1, 2]), SensitivePattern.rule([3, 4], [5])]  # repeat dropped
    assert str(ps[1]) == "3 4 => 5" and ps[1].items == (3, 4, 5) and ps[1].is_rule
    for bad, msg in [
        ("", "empty"),
        (" ; ", "empty"),
        ("1 x", "not an item id"),
        ("1 => ", "empty side"),
        ("=> 2", "empty side"),
        ("1 => 2 => 3", "more than one"),
        ("1 2 => 2", "share"),
        ("-1", "not an item id"),
        ("1.5", "not an item id"),
    ]:
        with pytest.raises(HidingError, match=msg):
            parse_sensitive(bad)


def test_is_mined_and_deletions_to_hide_are_exact():
    # rule with a = count(XY) = 7, b = count(X) = 10, C = 7/10: 7·10 >= 7·10 -> mined (ties count)
    c = Fraction(7, 10)
    assert is_mined(7, 10, 5, c) and not is_mined(6, 10, 5, c) and not is_mined(4, None, 5, None)
    # support route: 7 - d < 5  ->  d = 3
    # victim in Y: (7 - d)·10 < 7·10 -> d = 1;   victim in X: (7-d)·10 < 7·(10-d) -> 3d > 0 -> d = 1
    assert deletions_to_hide(7, 10, 5, c, victim_in_antecedent=False) == 1
    assert deletions_to_hide(7, 10, 5, c, victim_in_antecedent=True) == 1
    # a = 9, b = 10, C = 1/2, minc 2: Y: (9-d)·2 < 10 -> d > 4 -> 5; X: (9-d)·2 < 10-d -> d > 8 -> 9;
    # support: 9 - d < 2 -> d = 8
    h = Fraction(1, 2)
    assert deletions_to_hide(9, 10, 2, h, victim_in_antecedent=False) == 5
    assert deletions_to_hide(9, 10, 2, h, victim_in_antecedent=True) == 8
    # C = 1: deleting an X item keeps confidence 1, only support helps
    assert deletions_to_hide(5, 5, 2, Fraction(1), victim_in_antecedent=True) == 4
    assert deletions_to_hide(1, None, 2, None, victim_in_antecedent=False) == 0


def mlxtend_patterns(txs, minc, conf):
    frame = TransactionDB.from_transactions(txs, items=range(6)).to_onehot()
    res = fpgrowth(frame, min_support=(minc - 0.5) / len(txs), use_colnames=True)
    items = set(res["itemsets"])
    if len(res) == 0:
        return items, set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = mx_rules(res, num_itemsets=len(txs), metric="confidence", min_threshold=conf - 1e-9)
    exact = [
        (a, c)
        for a, c, s, sa in zip(r["antecedents"], r["consequents"], r["support"], r["antecedent support"])
        if Fraction(round(s * len(txs)), round(sa * len(txs))) >= Fraction(str(conf))  # exact ties, as ours
    ]
    return items, set(exact)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    txs=st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=6, unique=True), min_size=3, max_size=30),
    frac=st.sampled_from([0.1, 0.2, 0.3]),
    conf=st.sampled_from([0.3, 0.5, 0.8]),
    seed=st.integers(0, 100),
)
def test_metrics_match_set_arithmetic_on_mlxtend_patterns(txs, frac, conf, seed):
    # D' = D with random deletions (never emptying a transaction); every count recomputed from mlxtend
    rnd = random.Random(seed)
    d2 = [[i for i in t if rnd.random() > 0.3] or t[:1] for t in txs]
    minc = max(1, math.ceil(frac * len(txs)))
    fi = frequent_itemsets(TransactionDB.from_transactions(txs), min_count=minc)
    multi = [s for s, _ in fi if len(s) >= 2]
    sens = [SensitivePattern.itemset(multi[0])] if multi else [SensitivePattern.itemset([0, 1])]
    if len(multi) > 1:
        s = multi[-1]
        sens.append(SensitivePattern.rule(s[:1], s[1:]))
    items_b, rules_b = mlxtend_patterns(txs, minc, conf)
    items_a, rules_a = mlxtend_patterns(d2, minc, conf)
    m = measure_hiding(
        TransactionDB.from_transactions(txs, items=range(6)),
        TransactionDB.from_transactions(d2, items=range(6)),
        sens,
        minc,
        Fraction(str(conf)),
    )
    # H: supersets of the sensitive itemsets, and of the X ∪ Y of a rule of D hidden by support
    sens_sets = [
        frozenset(p.items)
        for p in sens
        if not p.is_rule
        or ((frozenset(p.antecedent), frozenset(p.consequent)) in rules_b and frozenset(p.items) not in items_a)
    ]
    nonsens = {f for f in items_b if not any(s <= f for s in sens_sets)}
    assert (m.itemsets_before, m.itemsets_after, m.nonsensitive_itemsets) == (len(items_b), len(items_a), len(nonsens))
    assert m.lost_itemsets == len(nonsens - items_a) and m.ghost_itemsets == len(items_a - items_b)
    sens_rules = {(frozenset(p.antecedent), frozenset(p.consequent)) for p in sens if p.is_rule}
    ns_rules = {r for r in rules_b if r not in sens_rules and not any(s <= r[0] | r[1] for s in sens_sets)}
    assert (m.rules_before, m.rules_after, m.nonsensitive_rules) == (len(rules_b), len(rules_a), len(ns_rules))
    assert m.lost_rules == len(ns_rules - rules_a) and m.ghost_rules == len(rules_a - rules_b)
    mined_b = [
        frozenset(p.items) in items_b
        if not p.is_rule
        else (frozenset(p.antecedent), frozenset(p.consequent)) in rules_b
        for p in sens
    ]
    mined_a = [
        frozenset(p.items) in items_a
        if not p.is_rule
        else (frozenset(p.antecedent), frozenset(p.consequent)) in rules_a
        for p in sens
    ]
    assert [s.mined_before for s in m.sensitive] == mined_b
    assert m.sensitive_mined_after == sum(b and a for b, a in zip(mined_b, mined_a))
