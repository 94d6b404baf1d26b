"""Secure comparison (CrypTFlow2 millionaires), MSB of shares, Beaver bit triples."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.channel import run_parties
from mpc.comparison import and_shares, bit_triples, compare_reveal, millionaires, msb_of_shares
from mpc.errors import InputMismatchError


def two(fn, a, b, parties=2):
    """Run ``fn(ch, peer, v, role)`` on p0 (role 0, input a) and p1 (role 1, input b)."""

    async def party(ch, v):
        if v is None:  # a bystander of a larger session
            return None
        role = ch.parties.index(ch.me)
        return await fn(ch, ch.parties[1 - role], v, role)

    return run_parties(parties, party, [a, b] + [None] * (parties - 2), timeout=20)


def run_catching(fn, a, b):
    async def party(ch, v):
        role = ch.parties.index(ch.me)
        try:
            return await fn(ch, ch.parties[1 - role], v, role)
        except Exception as e:
            return e

    return run_parties(2, party, [a, b], timeout=10)


def operand(bits, signed):
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    return st.one_of(
        st.sampled_from([lo, hi, lo + 1 if lo < hi else lo, hi - 1 if hi > lo else hi, 0]), st.integers(lo, hi)
    )


def as_array(vals, bits, signed):
    return np.array(vals, np.int64 if signed else np.uint64) if vals else np.zeros(0, np.uint64)


@settings(max_examples=30, deadline=None)
@given(st.data(), st.integers(1, 64), st.booleans(), st.integers(0, 40))
def test_compare_reveal_equals_less_than(data, bits, signed, n):
    pairs = data.draw(st.lists(st.tuples(operand(bits, signed), operand(bits, signed)), min_size=n, max_size=n))
    pairs += [(v, v) for v, _ in pairs[:3]]  # equality is never "less"
    a = as_array([p[0] for p in pairs], bits, signed)
    b = as_array([p[1] for p in pairs], bits, signed)
    out = two(
        lambda ch, peer, v, role: compare_reveal(ch, peer, v, bits=bits, role=role, tag="cmp", signed=signed), a, b
    )
    expect = np.array([x < y for x, y in pairs], bool)
    for res in out.values():
        assert res.dtype == bool
        np.testing.assert_array_equal(res, expect)


@pytest.mark.parametrize("bits", [1, 4, 5, 32, 63, 64])
def test_extremes_of_the_bit_width(bits):
    top = 2**bits - 1
    vals = [0, 1, top - 1, top, top // 2, top // 2 + 1]
    a = np.array([x for x in vals for _ in vals], np.uint64)
    b = np.array([y for _ in vals for y in vals], np.uint64)
    out = two(lambda ch, peer, v, role: compare_reveal(ch, peer, v, bits=bits, role=role, tag="e"), a, b)
    np.testing.assert_array_equal(out["p0"], a < b)


def test_shares_alone_are_uniform_and_reveal_to_one_party():
    n = 4000
    a = np.arange(n, dtype=np.uint64)
    b = np.full(n, n, np.uint64)  # the answer is always 1
    out = two(lambda ch, peer, v, role: millionaires(ch, peer, v, bits=20, role=role, tag="m"), a, b)
    assert np.all(out["p0"] ^ out["p1"] == 1)
    for share in out.values():
        assert 0.45 < share.mean() < 0.55  # each share alone says nothing
    out = two(lambda ch, peer, v, role: compare_reveal(ch, peer, v, bits=20, role=role, tag="r", reveal_to="p1"), a, b)
    assert out["p0"] is None and out["p1"].all()


def test_more_than_chunk_elements_and_a_bystander(monkeypatch):
    import mpc.comparison as cmp

    monkeypatch.setattr(cmp, "CHUNK", 1000)
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 2**40, 2500).astype(np.uint64), rng.integers(0, 2**40, 2500).astype(np.uint64)
    b[::5] = a[::5]
    out = two(lambda ch, peer, v, role: compare_reveal(ch, peer, v, bits=40, role=role, tag="big"), a, b, parties=3)
    np.testing.assert_array_equal(out["p1"], a < b)
    assert out["p2"] is None


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)), max_size=30))
def test_msb_of_additive_shares(pairs):
    pairs += [(0, 0), (2**63, 0), (2**63 - 1, 1), (2**64 - 1, 1), (2**63 - 1, 0)]
    a = np.array([p[0] for p in pairs], np.uint64)
    b = np.array([p[1] for p in pairs], np.uint64)
    out = two(lambda ch, peer, v, role: msb_of_shares(ch, peer, v, role=role, tag="msb"), a, b)
    np.testing.assert_array_equal(out["p0"] ^ out["p1"], [((x + y) % 2**64) >> 63 for x, y in pairs])


@pytest.mark.parametrize("k", [2, 3, 17, 41, 63])
def test_msb_in_smaller_rings(k):
    rng = np.random.default_rng(k)
    a = rng.integers(0, 2**64 - 1, 500, dtype=np.uint64, endpoint=True)
    b = rng.integers(0, 2**64 - 1, 500, dtype=np.uint64, endpoint=True)
    b[:4] = [0, 1, 2**64 - 1, 2 ** (k - 1)]
    out = two(lambda ch, peer, v, role: msb_of_shares(ch, peer, v, role=role, tag="r", ring_bits=k), a, b)
    expect = [((int(x) + int(y)) % 2**k) >> (k - 1) for x, y in zip(a, b)]
    np.testing.assert_array_equal(out["p0"] ^ out["p1"], expect)


def test_bit_triples_and_and_gates():
    n = 3000
    out = two(lambda ch, peer, v, role: bit_triples(ch, peer, n, role=role, tag="t"), 0, 0)
    (a0, b0, c0), (a1, b1, c1) = out["p0"], out["p1"]
    np.testing.assert_array_equal(c0 ^ c1, (a0 ^ a1) & (b0 ^ b1))
    assert 0.4 < (a0 ^ a1).mean() < 0.6 and 0.4 < (b0 ^ b1).mean() < 0.6
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 2, (2, n), dtype=np.uint8)
    mx, my = rng.integers(0, 2, (2, n), dtype=np.uint8)
    out = two(lambda ch, peer, v, role: and_shares(ch, peer, *v, role=role, tag="and"), (x ^ mx, y ^ my), (mx, my))
    np.testing.assert_array_equal(out["p0"] ^ out["p1"], x & y)


def test_mismatches_fail_on_both_parties():
    cmp = lambda bits: lambda ch, peer, v, role: compare_reveal(ch, peer, v, bits=bits, role=role, tag="x")  # noqa: E731
    out = run_catching(cmp(8), np.arange(3, dtype=np.uint64), np.arange(4, dtype=np.uint64))
    assert all(isinstance(e, InputMismatchError) for e in out.values())
    same_role = lambda ch, peer, v, role: compare_reveal(ch, peer, v, bits=8, role=0, tag="x")  # noqa: E731
    out = run_catching(same_role, np.arange(3), np.arange(3))
    assert all(isinstance(e, InputMismatchError) and "role0" in str(e) for e in out.values())


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="< 2\\^4"):
        two(
            lambda ch, peer, v, role: millionaires(ch, peer, v, bits=4, role=role, tag="b"),
            np.array([16]),
            np.array([1]),
        )
    with pytest.raises(ValueError, match="signed"):
        two(
            lambda ch, peer, v, role: millionaires(ch, peer, v, bits=8, role=role, tag="b"),
            np.array([-1]),
            np.array([1]),
        )
    with pytest.raises(ValueError, match="role"):
        two(lambda ch, peer, v, role: millionaires(ch, peer, v, bits=8, role=2, tag="b"), np.array([1]), np.array([1]))
