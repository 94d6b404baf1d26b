"""N-party GMW building blocks against their plain definitions (XOR / sums of the shares)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.channel import run_parties
from mpc.multiparty_bits import and_gate, bit_triples, dabits, msb_of_sum, tree_and_count

SLOW = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def xor_all(parts):
    out = np.zeros_like(parts[0])
    for p in parts:
        out ^= p
    return out


@pytest.mark.parametrize("n_parties", [2, 3, 4])
def test_triples_and_gates(n_parties):
    n = 300
    rng = np.random.default_rng(n_parties)
    xs = [rng.integers(0, 2, n, dtype=np.uint8) for _ in range(n_parties)]
    ys = [rng.integers(0, 2, n, dtype=np.uint8) for _ in range(n_parties)]

    async def f(ch, i):
        tri = await bit_triples(ch, n, tag="t")
        z = await and_gate(ch, xs[i], ys[i], tri, tag="and")
        return tri, z

    out = run_parties(n_parties, f, list(range(n_parties)))
    a, b, c = (xor_all([out[p][0][k] for p in out]) for k in range(3))
    assert np.array_equal(c, a & b)
    assert 0.3 < a.mean() < 0.7 and 0.3 < b.mean() < 0.7  # random, not constant
    assert np.array_equal(xor_all([out[p][1] for p in out]), xor_all(xs) & xor_all(ys))


@pytest.mark.parametrize("n_parties", [2, 3, 4])
def test_dabits_agree_in_both_sharings(n_parties):
    out = run_parties(n_parties, lambda ch, _: dabits(ch, 500, tag="d"))
    bits = xor_all([v[0] for v in out.values()])
    total = np.zeros(500, np.uint64)
    for v in out.values():
        total += v[1]
    assert np.array_equal(total, bits.astype(np.uint64))
    assert 0.3 < bits.mean() < 0.7


@SLOW
@given(n_parties=st.integers(2, 4), k=st.integers(2, 64), data=st.data())
def test_msb_of_sum_equals_plain(n_parties, k, data):
    size = data.draw(st.integers(1, 6))
    shares = [
        np.array(data.draw(st.lists(st.integers(0, 2**64 - 1), min_size=size, max_size=size)), np.uint64)
        for _ in range(n_parties)
    ]

    async def f(ch, a):
        return await msb_of_sum(ch, a, ring_bits=k, tag="m", masks=lambda y: y)

    out = run_parties(n_parties, f, shares)
    want = [((sum(int(s[j]) for s in shares) % (1 << k)) >> (k - 1)) & 1 for j in range(size)]
    assert xor_all(list(out.values())).tolist() == want


def test_tree_and_count():
    assert [tree_and_count(q) for q in (1, 2, 3, 4, 5)] == [0, 1, 3, 4, 7]
