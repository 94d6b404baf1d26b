"""The one-pass pair counting of count_support equals the bitset AND + popcount path."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import anonymize.itemsets.support as S
from anonymize.itemsets import TransactionDB, count_support


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 25), max_size=8), max_size=120),
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)).filter(lambda p: p[0] != p[1]), max_size=200),
)
def test_pair_pass_equals_bitsets(txs, pairs):
    db = TransactionDB.from_transactions(txs)
    pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    brute = np.array([sum(1 for t in txs if a in t and b in t) for a, b in pairs], dtype=np.int64)
    old = S.PAIR_PASS_MIN
    try:
        S.PAIR_PASS_MIN = -1  # force the pair pass
        fast = count_support(db, pairs)
        S.PAIR_PASS_MIN = 1 << 62  # force the bitset path
        slow = count_support(db, pairs)
    finally:
        S.PAIR_PASS_MIN = old
    np.testing.assert_array_equal(fast, brute)
    np.testing.assert_array_equal(slow, brute)
