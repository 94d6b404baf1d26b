"""SoftSpoken OT extension (Roy, CRYPTO 2022): the plain random-OT function, traffic, puncturing, errors.

Oracles: the definition of random OT (the receiver's key is m_c, not m_{1−c}),
the GGM tree rebuilt from the receiver's state (every leaf but Δ_j), byte
counts derived from the construction (128/k bits per OT), and a statistical
adversary on the sender's view.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mpc.softspoken as ss
from mpc.channel import MemoryNetwork, run_parties, scoped
from mpc.errors import InputMismatchError, ProtocolError
from mpc.softspoken import random_ot_recv, random_ot_recv_slabs, random_ot_send, random_ot_send_slabs

AB = ["alice", "bob"]
sizes = st.one_of(st.integers(0, 300), st.sampled_from([1, 63, 64, 65, 127, 128, 129, 1031, 5000]))


def two(send, recv, timeout=30.0):
    async def fn(ch, _):
        return await (send(ch) if ch.me == "alice" else recv(ch))

    r = run_parties(AB, fn, timeout=timeout)
    return r["alice"], r["bob"]


@settings(max_examples=20, deadline=None)
@given(n=sizes, k=st.sampled_from([1, 2, 4, 8]), seed=st.integers(0, 2**32 - 1))
def test_random_ot_is_the_plain_function(n, k, seed):
    c = np.random.default_rng(seed).integers(0, 2, n).astype(bool)
    (m0, m1), got = two(
        lambda ch: random_ot_send(ch, "bob", n, tag="r", k=k), lambda ch: random_ot_recv(ch, "alice", c, tag="r", k=k)
    )
    assert m0.shape == m1.shape == got.shape == (n, 16) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, np.where(c[:, None], m1, m0))
    assert (got != np.where(c[:, None], m0, m1)).any(axis=1).all()  # never the other key
    assert len({r.tobytes() for r in np.concatenate([m0, m1])}) == 2 * n


def test_keys_look_uniform_and_slabs_chain():
    n = 5000
    c = np.random.default_rng(1).integers(0, 2, n).astype(bool)

    async def send(ch):
        out = []
        async for lo, hi, a, b in random_ot_send_slabs(ch, "bob", n, tag="s", slab=1024):
            out.append((lo, hi, a.copy(), b.copy()))
        return out

    async def recv(ch):
        out = []
        async for lo, hi, m in random_ot_recv_slabs(ch, "alice", c, tag="s", slab=1024):
            out.append((lo, hi, m.copy()))
        return out

    s, r = two(send, recv)
    assert (
        [(lo, hi) for lo, hi, *_ in s]
        == [(lo, hi) for lo, hi, _ in r]
        == [(i, min(n, i + 1024)) for i in range(0, n, 1024)]
    )
    m0 = np.concatenate([a for *_, a, _ in s])
    m1 = np.concatenate([b for *_, b in s])
    np.testing.assert_array_equal(np.concatenate([m for *_, m in r]), np.where(c[:, None], m1, m0))
    for m in (m0, m1, m0 ^ m1):
        assert abs(np.unpackbits(m).mean() - 0.5) < 0.01


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_traffic_is_128_over_k_bits_per_ot(k):
    n = 1 << 16

    async def fn(ch, _):
        peer = "bob" if ch.me == "alice" else "alice"
        c = np.ones(10, bool)
        # warm-up: set-up traffic (base OTs, GGM sums) happens once per pair and k
        await (
            random_ot_send(ch, peer, 10, tag="w", k=k)
            if ch.me == "alice"
            else random_ot_recv(ch, peer, c, tag="w", k=k)
        )
        b0 = ch.bytes_sent
        c = np.zeros(n, bool)
        await (
            random_ot_send(ch, peer, n, tag="x", k=k) if ch.me == "alice" else random_ot_recv(ch, peer, c, tag="x", k=k)
        )
        return ch.bytes_sent - b0

    r = run_parties(AB, fn)
    assert n * 128 // k // 8 <= r["bob"] <= n * 128 // k // 8 + 400  # corrections + salt + header
    assert r["alice"] < 200  # the sender sends only its header


def test_sender_holds_every_leaf_but_the_punctured_one():
    k = 4

    async def fn(ch, _):
        peer = "bob" if ch.me == "alice" else "alice"
        if ch.me == "alice":
            await random_ot_send(ch, peer, 10, tag="w", k=k)
        else:
            await random_ot_recv(ch, peer, np.zeros(10, bool), tag="w", k=k)
        return ch.state[ss._STATE_KEY][("alice", "bob", k)]

    r = run_parties(AB, fn)
    snd, rcv = r["alice"], r["bob"]
    delta = snd.delta.reshape(-1, k).astype(int) @ (1 << np.arange(k))
    for j in range(128 // k):
        x = np.arange(1 << k) ^ delta[j]  # the sender's row y holds leaf x = y ⊕ Δ_j
        np.testing.assert_array_equal(snd.leaves[j, 1:], rcv.leaves[j, x[1:]])
        assert not np.array_equal(snd.leaves[j, 0], rcv.leaves[j, delta[j]])  # it never learns that one


def test_sender_cannot_tell_choices_from_corrections():
    """The adversary (sender) sees d_j = r ⊕ ⊕_x ρ_{j,x}, slab after slab.

    All-zero and all-one choices must both give uniform-looking corrections, and two calls
    with the same choices in one session must not reuse pads (d ⊕ d' would then be 0).
    """
    n = 1 << 14
    seen: dict[int, list[bytes]] = {0: [], 1: []}

    async def main(choice):
        net = MemoryNetwork(AB)
        a, b = net.channel("alice"), net.channel("bob")
        orig = b.send

        async def spy(to, tag, payload):
            if tag.endswith("/d"):
                seen[choice].append(payload)
            await orig(to, tag, payload)

        b.send = spy  # type: ignore[method-assign]
        c = np.full(n, bool(choice))
        for t in ("t1", "t2"):
            await asyncio.gather(random_ot_send(a, "bob", n, tag=t), random_ot_recv(b, "alice", c, tag=t))

    for choice in (0, 1):
        asyncio.run(main(choice))
    body = n // 8 * 32  # 128/k = 32 corrections of n bits (k = 4)
    for choice, (p1, p2) in seen.items():
        d1 = np.frombuffer(p1[-body:], np.uint8)
        d2 = np.frombuffer(p2[-body:], np.uint8)
        for bits in (d1, d2, d1 ^ d2):
            frac = np.unpackbits(bits).mean()
            assert abs(frac - 0.5) < 0.01, (choice, frac)  # a biased d would give r away


def test_concurrent_calls_both_directions_share_one_setup(monkeypatch):
    calls = []
    real = ss.base_ot_send

    async def counting(*a, **kw):
        calls.append(kw["tag"])
        return await real(*a, **kw)

    monkeypatch.setattr(ss, "base_ot_send", counting)
    rng = np.random.default_rng(3)
    cs = [rng.integers(0, 2, 500).astype(bool) for _ in range(6)]

    async def fn(ch, _):
        peer = "bob" if ch.me == "alice" else "alice"
        jobs = []
        for i in range(6):
            sub = scoped(ch, f"job{i % 2}")
            if (i % 2 == 0) == (ch.me == "alice"):
                jobs.append(random_ot_send(sub, peer, 500, tag=f"t{i}"))
            else:
                jobs.append(random_ot_recv(sub, peer, cs[i], tag=f"t{i}"))
        return await asyncio.gather(*jobs)

    r = run_parties(AB, fn)
    for i in range(6):
        snd, rcv = (r["alice"][i], r["bob"][i]) if i % 2 == 0 else (r["bob"][i], r["alice"][i])
        np.testing.assert_array_equal(rcv, np.where(cs[i][:, None], snd[1], snd[0]))
    assert len(calls) == 2  # one set-up per ordered pair


@pytest.mark.parametrize(("n_send", "n_recv", "k_send", "k_recv"), [(5, 6, 4, 4), (5, 5, 4, 2)])
def test_mismatch_raises_on_both_sides(n_send, n_recv, k_send, k_recv):
    async def fn(ch, _):
        try:
            if ch.me == "alice":
                await random_ot_send(ch, "bob", n_send, tag="m", k=k_send)
            else:
                await random_ot_recv(ch, "alice", np.zeros(n_recv, bool), tag="m", k=k_recv)
        except InputMismatchError as e:
            return e

    r = run_parties(AB, fn, timeout=10.0)
    assert isinstance(r["alice"], InputMismatchError) and isinstance(r["bob"], InputMismatchError)


def test_malformed_message_and_bad_inputs():
    async def fn(ch, _):
        if ch.me == "alice":
            await random_ot_send(ch, "bob", 10, tag="warm")
            try:
                await random_ot_send(ch, "bob", 10, tag="t")
            except ProtocolError as e:
                return e
        else:
            await random_ot_recv(ch, "alice", np.ones(10, bool), tag="warm")
            await ch.send("alice", "t/hdr", b"[1]")

    assert isinstance(run_parties(AB, fn, timeout=10.0)["alice"], ProtocolError)
    ch = MemoryNetwork(AB).channel("alice")
    with pytest.raises(ValueError):
        asyncio.run(random_ot_recv(ch, "bob", [0, 2], tag="t"))
    with pytest.raises(ValueError):
        asyncio.run(random_ot_send(ch, "bob", 3, tag="t", k=3))
