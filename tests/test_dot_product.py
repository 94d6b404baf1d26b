"""Two-party secure dot products (Gilboa multiplication with correlated OT)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.channel import run_parties
from mpc.dot_product import dot_product, dot_products
from mpc.errors import InputMismatchError

I64 = np.iinfo(np.int64)
x_values = st.one_of(st.sampled_from([0, 1, -1, I64.min, I64.max]), st.integers(I64.min, I64.max))


def two(fn, x, y, parties=2):
    """p0 (role 0) holds x, p1 (role 1) holds y; further parties are bystanders."""

    async def party(ch, v):
        if v is None:
            return "idle"
        role = ch.parties.index(ch.me)
        return await fn(ch, ch.parties[1 - role], v, role)

    return run_parties(parties, party, [x, y] + [None] * (parties - 2), timeout=20)


def plain(x, y) -> np.ndarray:
    """Σ_i x_i y_i mod 2^64 per row."""
    xu = np.asarray(x, np.int64).view(np.uint64)
    yu = np.asarray(y).astype(np.int64).view(np.uint64)
    return (xu * yu).sum(axis=-1, dtype=np.uint64)


@settings(max_examples=60, deadline=None)
@given(st.data(), st.sampled_from([1, 2, 8, 33, 63, 64]), st.integers(0, 3), st.integers(0, 20))
def test_dot_products_equal_plain(data, bits, k, n):
    x = np.array(data.draw(st.lists(x_values, min_size=k * n, max_size=k * n)), np.int64).reshape(k, n)
    hi = 2 ** min(bits, 63) - 1
    ylo = I64.min if bits == 64 else 0
    y_values = st.one_of(st.sampled_from([0, hi, ylo]), st.integers(ylo, hi))
    y = np.array(data.draw(st.lists(y_values, min_size=k * n, max_size=k * n)), np.int64).reshape(k, n)
    reveal = data.draw(st.sampled_from([True, False, "p0", "p1"]))
    out = two(lambda ch, peer, v, role: dot_products(ch, peer, v, role=role, tag="dp", bits=bits, reveal=reveal), x, y)
    expect = plain(x, y)
    if reveal is False:
        np.testing.assert_array_equal(out["p0"] + out["p1"], expect)
        return
    for p, res in out.items():
        if reveal is True or reveal == p:
            assert res.dtype == np.uint64 and res.shape == (k,)
            np.testing.assert_array_equal(res, expect)
        else:
            assert res is None


def test_binary_vectors_and_single_product():
    rng = np.random.default_rng(5)
    x, y = rng.integers(0, 2, 5000), rng.integers(0, 2, 5000).astype(bool)
    out = two(lambda ch, peer, v, role: dot_product(ch, peer, v, role=role, tag="b"), x, y, parties=3)
    assert out["p0"] == out["p1"] == int(np.sum(x & y)) and out["p2"] == "idle"


def test_signed_results_and_wrap_around():
    x = np.array([-3, I64.max, 2])
    y = np.array([5, 2, 1])
    out = two(lambda ch, peer, v, role: dot_product(ch, peer, v, role=role, tag="s", bits=3, signed=True), x, y)
    assert out["p0"] == out["p1"] == -15  # −15 + 2(2^63 − 1) + 2 wraps mod 2^64 like int64 arithmetic
    assert out["p0"].dtype == np.int64


def test_shares_alone_are_not_the_product():
    x, y = np.arange(1000), np.ones(1000, np.int64)
    out = two(
        lambda ch, peer, v, role: dot_products(ch, peer, np.tile(v, (64, 1)), role=role, tag="sh", reveal=False), x, y
    )
    assert np.all(out["p0"] + out["p1"] == 999 * 1000 // 2)
    for share in out.values():
        assert not np.any(share == 999 * 1000 // 2)
        assert 0.4 < np.unpackbits(share.view(np.uint8)).mean() < 0.6


def test_mismatches_fail_on_both_parties():
    async def dp(ch, v, bits=1, role=None):
        me = ch.parties.index(ch.me)
        try:
            return await dot_products(ch, ch.parties[1 - me], v, role=me if role is None else role, tag="m", bits=bits)
        except Exception as e:
            return e

    out = run_parties(2, dp, [np.ones((2, 3), int), np.ones((2, 4), int)], timeout=10)
    assert all(isinstance(e, InputMismatchError) and "shape" in str(e) for e in out.values())
    out = run_parties(2, lambda ch, v: dp(ch, v, bits=1 + ch.parties.index(ch.me)), [np.ones(3, int)] * 2, timeout=10)
    assert all(isinstance(e, InputMismatchError) and "bits" in str(e) for e in out.values())
    out = run_parties(2, lambda ch, v: dp(ch, v, role=1), [np.ones(3, int)] * 2, timeout=10)
    assert all(isinstance(e, InputMismatchError) and "role0" in str(e) for e in out.values())


def test_out_of_range_y_is_refused():
    with pytest.raises(ValueError, match="2\\^1"):
        two(
            lambda ch, peer, v, role: dot_product(ch, peer, v, role=role, tag="r"), np.ones(3, int), np.array([0, 2, 1])
        )
    with pytest.raises(TypeError, match="integer"):
        two(lambda ch, peer, v, role: dot_product(ch, peer, v, role=role, tag="r"), np.ones(3), np.ones(3))


@pytest.mark.parametrize("bits", [1, 3])
def test_many_candidates_across_cot_chunks(monkeypatch, bits):
    import mpc.dot_product as dpm

    monkeypatch.setattr(dpm, "COT_CHUNK", 7)  # chunk edges fall inside rows and between them
    rng = np.random.default_rng(11)
    x = rng.integers(-100, 100, (6, 5))
    y = rng.integers(0, 2**bits, (6, 5))
    out = two(lambda ch, peer, v, role: dot_products(ch, peer, v, role=role, tag="c", bits=bits), x, y)
    np.testing.assert_array_equal(out["p1"], plain(x, y))
