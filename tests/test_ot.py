"""Oblivious transfer: base OT, IKNP extension (random/chosen/correlated/bit), 1-out-of-N, primitives.

Every protocol is checked against the plain function it computes on the
in-memory network: the receiver gets exactly the chosen message, and (for
random OT) not the other one.
"""

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mpc.ot_extension as ote
from mpc.base_ot import base_ot_recv, base_ot_recv_chosen, base_ot_send, base_ot_send_chosen
from mpc.channel import MemoryNetwork, run_parties, scoped, unpack_arrays
from mpc.crypto_hash import aes_fixed, derive, prg, prg_rows, tccr_expand, tccr_hash, tweak64
from mpc.errors import InputMismatchError, ProtocolError
from mpc.ot_1_of_n import ot_1_of_n_recv, ot_1_of_n_send
from mpc.ot_extension import (
    correlated_ot_recv,
    correlated_ot_send,
    ot_recv,
    ot_send,
    random_bit_ot_recv,
    random_bit_ot_send,
    random_ot_recv,
    random_ot_send,
    transpose_bits,
)

AB = ["alice", "bob"]
FAST = settings(max_examples=15, deadline=None)
sizes = st.one_of(st.integers(0, 200), st.sampled_from([1, 7, 8, 9, 63, 64, 65, 127, 128, 129, 1000, 1031]))


def two(send, recv, timeout=20.0):
    """Run ``send(ch)`` on alice and ``recv(ch)`` on bob; return (alice's result, bob's result)."""

    async def fn(ch, _):
        return await (send(ch) if ch.me == "alice" else recv(ch))

    r = run_parties(AB, fn, timeout=timeout)
    return r["alice"], r["bob"]


def both_raise(send, recv, exc=InputMismatchError):
    """Both sides must raise ``exc`` (not hang, not a numpy error)."""

    async def fn(ch, _):
        try:
            await (send(ch) if ch.me == "alice" else recv(ch))
        except exc as e:
            return e
        return None

    r = run_parties(AB, fn, timeout=10.0)
    assert isinstance(r["alice"], exc) and isinstance(r["bob"], exc), r
    return r


def bits(rng, n):
    return rng.integers(0, 2, n).astype(bool)


# --------------------------------------------------------------------------- primitives
def test_transpose_matches_unpackbits():
    rng = np.random.default_rng(1)
    for B in (8, 16, 136):
        M = rng.integers(0, 256, (128, B), dtype=np.uint8)
        ref = np.packbits(np.unpackbits(M, axis=1, bitorder="little").T, axis=1, bitorder="little")
        np.testing.assert_array_equal(transpose_bits(M.copy()), ref)


def test_prg_is_deterministic_and_offsets_are_consistent():
    seed, nonce = bytes(range(16)), derive("t", "x", size=16)
    a = prg(seed, nonce, 100)
    np.testing.assert_array_equal(a, prg(seed, nonce, 100))
    np.testing.assert_array_equal(prg(seed, nonce, 48, offset_blocks=2), a[32:80])
    data = np.arange(100, dtype=np.uint8)
    np.testing.assert_array_equal(prg(seed, nonce, 100, data=data), a ^ data)
    assert (prg(seed, derive("t", "y", size=16), 100) != a).any()
    seeds = np.stack([np.frombuffer(seed, np.uint8), np.zeros(16, np.uint8)])
    rows = prg_rows(seeds, nonce, 100, data=data, data_rows=np.array([True, False]))
    np.testing.assert_array_equal(rows[0], a ^ data)
    np.testing.assert_array_equal(rows[1], prg(bytes(16), nonce, 100))


def test_tccr_hash_vectorized_equals_definition_and_depends_on_tweak():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (50, 16), dtype=np.uint8)
    h = tccr_hash(x, 7, 100)
    px = aes_fixed(x)
    for j in (0, 17, 49):  # H(x, i) = π(π(x) ⊕ i) ⊕ π(x), i = (100 + j) + 2^64 · 7
        i = ((100 + j) + (7 << 64)).to_bytes(16, "little")
        y = np.frombuffer(bytes(a ^ b for a, b in zip(px[j].tobytes(), i)), np.uint8)
        np.testing.assert_array_equal(h[j], aes_fixed(y[None])[0] ^ px[j])
    assert (tccr_hash(x, 8, 100) != h).any(axis=1).all()
    assert (tccr_hash(x, 7, 101)[:-1] != h[:-1]).any(axis=1).all()
    np.testing.assert_array_equal(tccr_expand(x, 40, 7, 100)[:, :16], h)
    assert tccr_expand(x, 40, 7, 100).shape == (50, 40)
    assert tccr_hash(np.zeros((0, 16), np.uint8), 1).shape == (0, 16)
    assert tweak64("a") != tweak64("b") and 0 <= tweak64("a") < 2**64


# --------------------------------------------------------------------------- base OT
def test_base_ot_random_and_chosen():
    rng = np.random.default_rng(3)
    c = bits(rng, 128)
    (k0, k1), k = two(
        lambda ch: base_ot_send(ch, "bob", 128, tag="b"), lambda ch: base_ot_recv(ch, "alice", c, tag="b")
    )
    np.testing.assert_array_equal(k, np.where(c[:, None], k1, k0))
    assert (k != np.where(c[:, None], k0, k1)).any(axis=1).all()
    assert len({r.tobytes() for r in np.concatenate([k0, k1])}) == 256
    m0, m1 = (rng.integers(0, 256, (9, 37), dtype=np.uint8) for _ in range(2))
    _, got = two(
        lambda ch: base_ot_send_chosen(ch, "bob", m0, m1, tag="c"),
        lambda ch: base_ot_recv_chosen(ch, "alice", c[:9], 37, tag="c"),
    )
    np.testing.assert_array_equal(got, np.where(c[:9, None], m1, m0))


def test_base_ot_mismatch_raises_on_both_sides():
    both_raise(lambda ch: base_ot_send(ch, "bob", 5, tag="b"), lambda ch: base_ot_recv(ch, "alice", [1, 0, 1], tag="b"))


def test_128_base_ots_are_fast():
    import time

    c = bits(np.random.default_rng(4), 128)
    t = time.perf_counter()
    two(lambda ch: base_ot_send(ch, "bob", 128, tag="b"), lambda ch: base_ot_recv(ch, "alice", c, tag="b"))
    assert time.perf_counter() - t < 0.5  # ~0.03 s for both sides in one thread; loose for a busy CI box


# --------------------------------------------------------------------------- IKNP
@FAST
@given(n=sizes, seed=st.integers(0, 2**32 - 1))
def test_random_ot(n, seed):
    c = bits(np.random.default_rng(seed), n)
    (m0, m1), k = two(
        lambda ch: random_ot_send(ch, "bob", n, tag="r"), lambda ch: random_ot_recv(ch, "alice", c, tag="r")
    )
    assert m0.shape == m1.shape == k.shape == (n, 16) and k.dtype == np.uint8
    np.testing.assert_array_equal(k, np.where(c[:, None], m1, m0))
    assert (k != np.where(c[:, None], m0, m1)).any(axis=1).all()  # not the other key
    assert len({r.tobytes() for r in np.concatenate([m0, m1])}) == 2 * n  # keys look random: all distinct


def test_random_ot_keys_look_uniform():
    n = 4000
    c = bits(np.random.default_rng(5), n)
    (m0, m1), _ = two(
        lambda ch: random_ot_send(ch, "bob", n, tag="r"), lambda ch: random_ot_recv(ch, "alice", c, tag="r")
    )
    for m in (m0, m1, m0 ^ m1):
        frac = np.unpackbits(m).mean()
        assert abs(frac - 0.5) < 0.01  # 64,000 bits: ~0.002 standard deviation


@FAST
@given(n=sizes, L=st.sampled_from([1, 2, 15, 16, 17, 33, 64]), seed=st.integers(0, 2**32 - 1))
def test_chosen_ot(n, L, seed):
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 2, n, dtype=np.uint8)
    m0, m1 = (rng.integers(0, 256, (n, L), dtype=np.uint8) for _ in range(2))
    _, got = two(lambda ch: ot_send(ch, "bob", m0, m1, tag="c"), lambda ch: ot_recv(ch, "alice", c, L, tag="c"))
    assert got.shape == (n, L)
    np.testing.assert_array_equal(got, np.where(c[:, None] == 1, m1, m0))


@FAST
@given(n=sizes, seed=st.integers(0, 2**32 - 1))
def test_correlated_ot(n, seed):
    rng = np.random.default_rng(seed)
    c = bits(rng, n)
    d = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    r, got = two(
        lambda ch: correlated_ot_send(ch, "bob", d, tag="x"), lambda ch: correlated_ot_recv(ch, "alice", c, tag="x")
    )
    assert r.dtype == got.dtype == np.uint64 and r.shape == got.shape == (n,)
    np.testing.assert_array_equal(got, r + c.astype(np.uint64) * d)  # wraps mod 2^64


@FAST
@given(n=sizes, seed=st.integers(0, 2**32 - 1))
def test_random_bit_ot(n, seed):
    c = bits(np.random.default_rng(seed), n)
    (b0, b1), got = two(
        lambda ch: random_bit_ot_send(ch, "bob", n, tag="t"), lambda ch: random_bit_ot_recv(ch, "alice", c, tag="t")
    )
    assert b0.dtype == got.dtype == np.uint8 and set(np.unique(np.concatenate([b0, b1, got]))) <= {0, 1}
    np.testing.assert_array_equal(got, np.where(c, b1, b0))


def test_several_slabs():
    n = ote.SLAB + 77
    rng = np.random.default_rng(6)
    c = bits(rng, n)
    d = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    r, got = two(
        lambda ch: correlated_ot_send(ch, "bob", d, tag="x"), lambda ch: correlated_ot_recv(ch, "alice", c, tag="x")
    )
    np.testing.assert_array_equal(got, r + c.astype(np.uint64) * d)
    m0, m1 = (rng.integers(0, 256, (n, 17), dtype=np.uint8) for _ in range(2))
    _, got = two(lambda ch: ot_send(ch, "bob", m0, m1, tag="c"), lambda ch: ot_recv(ch, "alice", c, 17, tag="c"))
    np.testing.assert_array_equal(got, np.where(c[:, None], m1, m0))
    t = ote.SLAB // 4 + 5  # 1-of-16: 4 random OTs per transfer, so this spans two extension slabs
    msgs = rng.integers(0, 4, (t, 16, 1), dtype=np.uint8)
    c16 = rng.integers(0, 16, t)
    for b in (None, 2):
        _, got = two(
            lambda ch: ot_1_of_n_send(ch, "bob", msgs, tag="n", bits=b),  # noqa: B023
            lambda ch: ot_1_of_n_recv(ch, "alice", c16, 16, 1, tag="n", bits=b),  # noqa: B023
        )
        np.testing.assert_array_equal(got, msgs[np.arange(t), c16])


@pytest.mark.parametrize(
    "send, recv",
    [
        (lambda ch: random_ot_send(ch, "bob", 10, tag="t"), lambda ch: random_ot_recv(ch, "alice", [1] * 12, tag="t")),
        (lambda ch: random_ot_send(ch, "bob", 0, tag="t"), lambda ch: random_ot_recv(ch, "alice", [1] * 3, tag="t")),
        (lambda ch: random_ot_send(ch, "bob", 3, tag="t"), lambda ch: random_ot_recv(ch, "alice", [], tag="t")),
        (
            lambda ch: ot_send(ch, "bob", np.zeros((4, 3), np.uint8), np.ones((4, 3), np.uint8), tag="t"),
            lambda ch: ot_recv(ch, "alice", [0, 1, 0, 1], 5, tag="t"),
        ),
        (
            lambda ch: correlated_ot_send(ch, "bob", np.arange(4, dtype=np.uint64), tag="t"),
            lambda ch: random_ot_recv(ch, "alice", [0, 1, 0, 1], tag="t"),
        ),
        (lambda ch: random_bit_ot_send(ch, "bob", 4, tag="t"), lambda ch: random_bit_ot_send(ch, "alice", 4, tag="t")),
        (
            lambda ch: ot_1_of_n_send(ch, "bob", np.zeros((4, 16, 1), np.uint8), tag="t"),
            lambda ch: ot_1_of_n_recv(ch, "alice", [0, 1, 2, 3], 8, 1, tag="t"),
        ),
        (
            lambda ch: ot_1_of_n_send(ch, "bob", np.zeros((4, 16, 1), np.uint8), tag="t", bits=2),
            lambda ch: ot_1_of_n_recv(ch, "alice", [0, 1, 2, 3], 16, 1, tag="t"),
        ),
    ],
)
def test_mismatch_is_a_clear_error_on_both_sides(send, recv):
    both_raise(send, recv)


def test_mismatch_after_base_ots_are_set_up():
    async def fn(ch, _):
        peer = "bob" if ch.me == "alice" else "alice"
        if ch.me == "alice":
            await random_ot_send(ch, peer, 5, tag="ok")
        else:
            await random_ot_recv(ch, peer, [1, 0, 1, 0, 1], tag="ok")
        try:
            if ch.me == "alice":
                await ot_send(ch, peer, np.zeros((6, 2), np.uint8), np.zeros((6, 2), np.uint8), tag="bad")
            else:
                await ot_recv(ch, peer, [1] * 7, 2, tag="bad")
        except InputMismatchError as e:
            assert "n" in str(e)
            return "raised"

    assert run_parties(AB, fn, timeout=10.0) == {"alice": "raised", "bob": "raised"}


def test_concurrent_calls_both_directions_scopes_and_base_ot_reuse(monkeypatch):
    calls = []
    real_send = ote.base_ot_send

    async def counting_send(*a, **k):
        calls.append(k["tag"])
        return await real_send(*a, **k)

    monkeypatch.setattr(ote, "base_ot_send", counting_send)
    rng = np.random.default_rng(7)
    n = 300
    cs = [bits(rng, n) for _ in range(6)]

    async def fn(ch, _):
        peer = "bob" if ch.me == "alice" else "alice"
        jobs = []
        for i in range(6):  # alice sends in even jobs, bob in odd ones; all run at once
            sub = scoped(ch, f"job{i % 2}")  # scopes share the session's base OTs
            sending = (i % 2 == 0) == (ch.me == "alice")
            if sending:
                jobs.append(random_ot_send(sub, peer, n, tag=f"t{i}"))
            else:
                jobs.append(random_ot_recv(sub, peer, cs[i], tag=f"t{i}"))
        return await asyncio.gather(*jobs)

    r = run_parties(AB, fn)
    for i in range(6):
        snd, rcv = (r["alice"][i], r["bob"][i]) if i % 2 == 0 else (r["bob"][i], r["alice"][i])
        np.testing.assert_array_equal(rcv, np.where(cs[i][:, None], snd[1], snd[0]))
    assert sorted(calls) == sorted(
        [f"{ote._BASE_TAG}/alice>bob", f"{ote._BASE_TAG}/bob>alice"]
    )  # once per ordered pair


def test_three_parties_pairwise_without_the_third():
    rng = np.random.default_rng(8)
    c = bits(rng, 50)
    d = rng.integers(0, 2**64, 50, dtype=np.uint64, endpoint=False)

    async def fn(ch, _):
        if ch.me == "p0":
            return await correlated_ot_send(ch, "p1", d, tag="x")
        if ch.me == "p1":
            return await correlated_ot_recv(ch, "p0", c, tag="x")
        return None

    r = run_parties(3, fn)
    np.testing.assert_array_equal(r["p1"], r["p0"] + c.astype(np.uint64) * d)


def test_bad_local_inputs_are_value_errors():
    ch = MemoryNetwork(AB).channel("alice")
    with pytest.raises(ValueError):
        asyncio.run(random_ot_recv(ch, "bob", [0, 2], tag="t"))
    with pytest.raises(ValueError):
        asyncio.run(ot_send(ch, "bob", np.zeros((2, 3), np.uint8), np.zeros((2, 4), np.uint8), tag="t"))
    with pytest.raises(ValueError):
        asyncio.run(ot_1_of_n_recv(ch, "bob", [0, 5], 5, 1, tag="t"))
    with pytest.raises(ValueError):
        asyncio.run(ot_1_of_n_send(ch, "bob", np.full((2, 4, 1), 4, np.uint8), tag="t", bits=2))


def test_malformed_extension_message_is_a_protocol_error():
    async def fn(ch, _):
        if ch.me == "alice":
            await random_ot_send(ch, "bob", 10, tag="warm")
            try:
                await random_ot_send(ch, "bob", 10, tag="t")
            except ProtocolError as e:
                return e
        else:
            await random_ot_recv(ch, "alice", [1] * 10, tag="warm")
            await ch.send("alice", "t/hdr", b"not json")

    assert isinstance(run_parties(AB, fn, timeout=10.0)["alice"], ProtocolError)


# --------------------------------------------------------------------------- 1-out-of-N
@settings(max_examples=25, deadline=None)
@given(
    n=st.one_of(st.integers(0, 40), st.sampled_from([1, 129])),
    N=st.integers(1, 40),
    L=st.sampled_from([1, 2, 16, 17, 40]),
    seed=st.integers(0, 2**32 - 1),
)
def test_1_of_n(n, N, L, seed):
    rng = np.random.default_rng(seed)
    msgs = rng.integers(0, 256, (n, N, L), dtype=np.uint8)
    c = rng.integers(0, N, n)
    _, got = two(
        lambda ch: ot_1_of_n_send(ch, "bob", msgs, tag="n"), lambda ch: ot_1_of_n_recv(ch, "alice", c, N, L, tag="n")
    )
    assert got.shape == (n, L) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, msgs[np.arange(n), c])


@settings(max_examples=10, deadline=None)
@given(n=st.integers(0, 300), N=st.sampled_from([2, 3, 16, 17]), b=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_1_of_n_small_messages(n, N, b, seed):
    rng = np.random.default_rng(seed)
    msgs = rng.integers(0, 1 << b, (n, N, 1), dtype=np.uint8)
    c = rng.integers(0, N, n).astype(np.uint8)
    _, got = two(
        lambda ch: ot_1_of_n_send(ch, "bob", msgs, tag="n", bits=b),
        lambda ch: ot_1_of_n_recv(ch, "alice", c, N, 1, tag="n", bits=b),
    )
    np.testing.assert_array_equal(got, msgs[np.arange(n), c])


def test_1_of_n_other_messages_stay_masked():
    """The receiver's pads for the messages it did not choose do not reveal those messages."""
    n, N = 2000, 16
    rng = np.random.default_rng(9)
    zeros = np.zeros((n, N, 1), np.uint8)
    c = rng.integers(0, N, n)

    async def spy(ch, _):
        if ch.me == "alice":
            await ot_1_of_n_send(ch, "bob", zeros, tag="n")
            return None
        inner_recv = ch.recv
        seen = []

        async def rec(frm, tag):
            p = await inner_recv(frm, tag)
            if tag == "n/y":
                seen.append(p)
            return p

        ch.recv = rec
        out = await ot_1_of_n_recv(ch, "alice", c, N, 1, tag="n")
        return out, seen

    out, seen = run_parties(AB, spy)["bob"]
    (y,) = unpack_arrays(seen[0])
    assert (out == 0).all()
    others = y[:, :, 0][np.arange(N)[None, :] != c[:, None]]
    assert abs(np.unpackbits(others).mean() - 0.5) < 0.01  # the unchosen y are uniformly random bytes
