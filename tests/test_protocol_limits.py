"""Parameters that would silently break a protocol are refused up front (issue 8, item 6).

* 1-of-N OT: the TCCR tweak of a pad packs the message index into 16 bits;
  a larger N made two pads of one key share a tweak (the first release ran
  on). Now refused on both sides with one clear error; N = 2^16 still works.
* Secure sum with threshold: joint mining computes D·count − M·|DB| in int64
  for a support M/D; a support with many decimals on a large database
  wrapped around (the first release capped the comparison's bound at 62 bits
  and computed a wrong answer). Now refused with :class:`InputRangeError`
  before any message, on every party.
"""

from __future__ import annotations

import asyncio
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymize.itemsets import TransactionDB
from mpc.channel import MemoryNetwork, run_parties
from mpc.errors import InputRangeError, ProtocolError
from mpc.ot_1_of_n import MAX_N, check_parameters, ot_1_of_n_recv, ot_1_of_n_send
from mpc.secure_sum import MAX_BOUND_BITS, bound_bits_for, ratio_threshold_inputs
from parties.joint import mine_horizontal

AB = ["alice", "bob"]


def _pair(send, recv):
    async def main():
        net = MemoryNetwork(AB, timeout=30)
        return await asyncio.gather(send(net.channel("alice")), recv(net.channel("bob")), return_exceptions=True)

    return asyncio.run(main())


# --------------------------------------------------------------------------- 1-of-N OT
def test_n_beyond_the_tweak_index_field_is_refused_on_both_sides():
    N = MAX_N + 1
    msgs = np.zeros((2, N, 1), np.uint8)
    s, r = _pair(
        lambda ch: ot_1_of_n_send(ch, "bob", msgs, tag="n"),
        lambda ch: ot_1_of_n_recv(ch, "alice", [0, N - 1], N, 1, tag="n"),
    )
    for e in (s, r):
        assert isinstance(e, ValueError) and f"N = {N}" in str(e) and "tweak" in str(e)


def test_largest_n_still_transfers():
    N = MAX_N
    rng = np.random.default_rng(3)
    msgs = rng.integers(0, 256, (3, N, 2), dtype=np.uint8)
    c = np.array([0, N - 1, 12345])
    _, got = _pair(
        lambda ch: ot_1_of_n_send(ch, "bob", msgs, tag="n"),
        lambda ch: ot_1_of_n_recv(ch, "alice", c, N, 2, tag="n"),
    )
    np.testing.assert_array_equal(got, msgs[np.arange(3), c])


def test_check_parameters_bounds():
    check_parameters(MAX_N, 16)
    with pytest.raises(ValueError, match="N = 65537"):
        check_parameters(MAX_N + 1, 1)
    with pytest.raises(ValueError, match="tweak"):
        check_parameters(16, 16 << 47)  # ℓ·⌈L/16⌉ = 4·2^47 > 2^48 key/block tweaks


# --------------------------------------------------------------------------- int64 ranges
def test_bound_bits_for():
    assert bound_bits_for(0) == 1
    assert bound_bits_for(1) == 1
    assert bound_bits_for(2) == 2
    assert bound_bits_for(2**63 - 1) == MAX_BOUND_BITS == 63
    with pytest.raises(InputRangeError, match="64-bit"):
        bound_bits_for(2**63)


@settings(max_examples=200, deadline=None)
@given(
    num=st.integers(0, 10**6),
    den=st.integers(1, 10**6),
    bound=st.integers(0, 10**9),
    data=st.data(),
)
def test_ratio_inputs_equal_exact_integer_arithmetic(num, den, bound, data):
    r = Fraction(num, den)
    D, M = r.denominator, r.numerator
    counts = data.draw(st.lists(st.integers(0, max(bound, 1)), max_size=5))
    total = data.draw(st.integers(0, max(bound, 1)))
    if (D + M) * max(bound, 1) >= 2**63:
        with pytest.raises(InputRangeError):
            ratio_threshold_inputs(counts, total, r, bound=bound)
        return
    x, bits = ratio_threshold_inputs(counts, total, r, bound=bound)
    assert x.dtype == np.int64
    assert x.tolist() == [D * c - M * total for c in counts]  # Python ints never wrap
    assert (D + M) * max(bound, 1) < 2**bits


def test_ratio_inputs_refuse_values_over_the_public_bound():
    with pytest.raises(ValueError, match="public bound"):
        ratio_threshold_inputs([5], 3, Fraction(1, 2), bound=4)


def test_many_decimal_support_on_joint_mining_is_one_clear_error_everywhere():
    """(D + M)·N ≥ 2^63: the first release wrapped D·count in int64; now every party refuses before any level."""
    txs = [[0, 1], [0], [1], [0, 1]] * 30  # N = 240 over two parties
    parts = [TransactionDB.from_transactions(txs[:120]), TransactionDB.from_transactions(txs[120:])]
    support = "0.30000000000000001"  # D = 10^17: (D + M)·N ≈ 3.1·10^19 > 2^63

    async def f(ch, db):
        try:
            await mine_horizontal(ch, db, min_support=support, n_items=2)
        except ProtocolError as e:
            return e
        return None

    out = run_parties(2, f, parts, timeout=60)
    for e in out.values():
        assert isinstance(e, InputRangeError), e
        assert "int64" in str(e) and "smaller denominator" in str(e)


def test_many_decimal_support_within_range_is_exact():
    """A long decimal that still fits is computed exactly (no float, no wrap)."""
    txs = [[0, 1], [0], [1], [0, 1], [0]]
    parts = [TransactionDB.from_transactions(txs[:3]), TransactionDB.from_transactions(txs[3:])]
    support = "0.59999999999"  # items 0 (4/5) and 1 (3/5 = 0.6) reach it, the pair (2/5) does not

    async def f(ch, db):
        return await mine_horizontal(ch, db, min_support=support, n_items=2)

    out = run_parties(2, f, parts, timeout=60)
    for r in out.values():
        assert {tuple(i): c for i, c in r.frequent} == {(0,): 4, (1,): 3}
