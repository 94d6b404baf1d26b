"""Secure sum (pairwise masks), its shared form, and secure sum with threshold."""

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.channel import MemoryNetwork, run_parties, scoped, unpack_arrays
from mpc.errors import InputMismatchError, ProtocolError
from mpc.secure_sum import secure_sum, secure_sum_shares, secure_sum_threshold

I64 = np.iinfo(np.int64)
EDGES = [0, 1, -1, I64.min, I64.max, I64.min + 1, I64.max - 1]
values = st.one_of(st.sampled_from(EDGES), st.integers(I64.min, I64.max), st.integers(-5, 5))


def plain_sum(xs) -> np.ndarray:
    """Σ_i x_i mod 2^64, read back as int64."""
    acc = np.zeros(np.shape(xs[0]), np.uint64)
    for x in xs:
        acc += np.asarray(x, np.int64).view(np.uint64)
    return acc.view(np.int64)


def run_catching(n, fn, inputs):
    """Like run_parties, but each party's exception is returned instead of raised."""

    async def wrap(ch, x):
        try:
            return await fn(ch, x)
        except Exception as e:
            return e

    return run_parties(n, wrap, inputs, timeout=10)


class Spy:
    """A channel that records every payload its party receives: what that party *sees*."""

    def __init__(self, inner):
        self.inner, self.seen = inner, []
        self.me, self.parties, self.state = inner.me, inner.parties, inner.state

    @property
    def bytes_sent(self):
        return self.inner.bytes_sent

    async def send(self, to, tag, payload):
        await self.inner.send(to, tag, payload)

    async def recv(self, frm, tag):
        payload = await self.inner.recv(frm, tag)
        self.seen.append((frm, tag, payload))
        return payload


def run_spied(n, fn, inputs):
    names = [f"p{i}" for i in range(n)]

    async def main():
        net = MemoryNetwork(names, timeout=10)
        chans = {p: Spy(net.channel(p)) for p in names}
        res = await asyncio.gather(*(fn(chans[p], x) for p, x in zip(names, inputs)))
        return dict(zip(names, res)), {p: c.seen for p, c in chans.items()}

    return asyncio.run(main())


# --------------------------------------------------------------------------- secure_sum
@settings(max_examples=100, deadline=None)
@given(st.data(), st.integers(2, 5), st.integers(0, 12), st.sampled_from([np.int64, np.uint64]))
def test_secure_sum_equals_plain_sum(data, n_parties, m, dtype):
    xs = [np.array(data.draw(st.lists(values, min_size=m, max_size=m)), np.int64).view(dtype) for _ in range(n_parties)]
    out = run_parties(n_parties, lambda ch, x: secure_sum(ch, x), xs)
    expect = plain_sum(xs).view(dtype)
    for res in out.values():
        assert res.dtype == dtype and res.shape == (m,)
        np.testing.assert_array_equal(res, expect)


def test_wraps_around_mod_2_64():
    xs = [np.array([I64.max, I64.min, -1]), np.array([1, -1, -1])]
    out = run_parties(2, lambda ch, x: secure_sum(ch, x), xs)
    np.testing.assert_array_equal(out["p0"], [I64.min, I64.max, -2])
    u = [np.array([2**64 - 1], np.uint64), np.array([2], np.uint64)]
    assert run_parties(2, lambda ch, x: secure_sum(ch, x), u)["p1"][0] == 1


def test_shape_scalar_and_list_inputs():
    out = run_parties(3, lambda ch, x: secure_sum(ch, x), [[[1, 2], [3, 4]], [[1, 1], [1, 1]], [[0, 0], [0, -4]]])
    np.testing.assert_array_equal(out["p2"], [[2, 3], [4, 1]])
    assert run_parties(2, lambda ch, x: secure_sum(ch, x), [np.int64(5), np.int64(-7)])["p0"] == -2


@pytest.mark.parametrize("reveal", [["p2"], ["p1", "p3"], "p0"])
def test_reveal_to_subset(reveal):
    xs = [np.arange(5) * (i + 1) for i in range(4)]
    out = run_parties(4, lambda ch, x: secure_sum(ch, x, reveal_to=reveal), xs)
    targets = [reveal] if isinstance(reveal, str) else reveal
    for p, res in out.items():
        if p in targets:
            np.testing.assert_array_equal(res, sum(xs))
        else:
            assert res is None


@pytest.mark.parametrize("reveal", [None, ["p1", "p3"]])
def test_aggregators_see_only_masked_inputs(reveal):
    m = 64
    xs = [np.zeros(m, np.int64), np.arange(m), np.full(m, 7), np.arange(m) * 3]
    out, seen = run_spied(4, lambda ch, x: secure_sum(ch, x, tag="s", reveal_to=reveal), xs)
    aggs = reveal or ["p0", "p1", "p2", "p3"]
    seg = m // len(aggs)
    for i, p in enumerate(aggs):  # p owns segment i and sees the other parties' masked segment i
        np.testing.assert_array_equal(out[p], sum(xs))
        masked = {frm: unpack_arrays(pl)[0] for frm, tag, pl in seen[p] if tag == "s/masked"}
        assert set(masked) == {f"p{j}" for j in range(4)} - {p}
        for frm, y in masked.items():
            x = xs[int(frm[1:])].view(np.uint64)[i * seg : (i + 1) * seg]
            assert y.shape == x.shape and not np.any(y == x)  # each word masked (collision: 2^-64)
            # masks are uniform: about half of all bits are set, whatever the input
            assert 0.4 < np.unpackbits(y.view(np.uint8)).mean() < 0.6
    for p in set(seen) - set(aggs):  # a party outside reveal_to receives nothing but set-up messages
        assert out[p] is None
        assert {tag for _, tag, _ in seen[p]} == {"mpc.keys/x25519", "agree/s"}


def test_masks_are_fresh_per_tag_and_reuse_is_refused():
    xs = [np.arange(8), np.arange(8), np.arange(8)]

    async def twice(ch, x):
        a = await secure_sum(ch, x, tag="a")
        b = await secure_sum(ch, x, tag="b")
        return a, b

    out, seen = run_spied(3, twice, xs)
    np.testing.assert_array_equal(out["p0"][1], 3 * np.arange(8))
    ya = [unpack_arrays(p)[0] for _, t, p in seen["p0"] if t == "a/masked"]
    yb = [unpack_arrays(p)[0] for _, t, p in seen["p0"] if t == "b/masked"]
    assert all(not np.array_equal(u, v) for u, v in zip(ya, yb))

    async def reuse(ch, x):
        await secure_sum(ch, x, tag="same")
        await secure_sum(ch, x, tag="same")

    with pytest.raises(ProtocolError, match="already used"):
        run_parties(2, reuse, xs[:2], timeout=5)


def test_concurrent_sums_in_scopes_share_one_key_exchange():
    async def many(ch, x):
        outs = await asyncio.gather(*(secure_sum(scoped(ch, f"s{i}"), x * (i + 1)) for i in range(4)))
        return outs, ch.bytes_sent

    out = run_parties(3, many, [np.arange(4)] * 3)
    for i, res in enumerate(out["p1"][0]):
        np.testing.assert_array_equal(res, 3 * (i + 1) * np.arange(4))


def test_length_mismatch_fails_on_every_party():
    out = run_catching(3, lambda ch, x: secure_sum(ch, x), [np.arange(3), np.arange(4), np.arange(3)])
    for e in out.values():
        assert isinstance(e, InputMismatchError) and "shape" in str(e)


def test_reveal_mismatch_and_bad_inputs():
    out = run_catching(2, lambda ch, r: secure_sum(ch, np.arange(2), reveal_to=r), [["p0"], ["p1"]])
    assert all(isinstance(e, InputMismatchError) for e in out.values())
    with pytest.raises(TypeError, match="integer"):
        run_parties(2, lambda ch, x: secure_sum(ch, x), [np.ones(2), np.ones(2)])
    with pytest.raises(ValueError, match="reveal_to"):
        run_parties(2, lambda ch, x: secure_sum(ch, x, reveal_to=["nobody"]), [[1], [1]])


# --------------------------------------------------------------------------- shares
@settings(max_examples=50, deadline=None)
@given(st.data(), st.integers(2, 5), st.integers(0, 10))
def test_secure_sum_shares_add_up(data, n_parties, m):
    xs = [np.array(data.draw(st.lists(values, min_size=m, max_size=m)), np.int64) for _ in range(n_parties)]
    names = [f"p{i}" for i in range(n_parties)]
    holders = tuple(data.draw(st.permutations(names))[:2])
    out = run_parties(n_parties, lambda ch, x: secure_sum_shares(ch, x, tag="sh", holders=holders), xs)
    for p, res in out.items():
        assert (res is None) == (p not in holders)
    total = (out[holders[0]] + out[holders[1]]).view(np.int64)
    np.testing.assert_array_equal(total, plain_sum(xs))


def test_each_share_alone_looks_random():
    m = 256
    xs = [np.zeros(m, np.int64), np.ones(m, np.int64), np.full(m, 2, np.int64)]
    out, seen = run_spied(3, lambda ch, x: secure_sum_shares(ch, x, tag="sh", holders=("p1", "p2")), xs)
    for h in ("p1", "p2"):
        share = out[h]
        assert not np.any(share == np.uint64(3)) and 0.4 < np.unpackbits(share.view(np.uint8)).mean() < 0.6
    # p1 (holder 0) receives p0's masked input — masked also by the p0–p2 seed p1 does not know
    (y0,) = [unpack_arrays(p)[0] for frm, t, p in seen["p1"] if t == "sh/masked"]
    assert not np.any(y0 == 0)


# --------------------------------------------------------------------------- threshold
@settings(max_examples=15, deadline=None)
@given(st.data(), st.integers(2, 4), st.integers(0, 12))
def test_threshold_equals_plain_comparison(data, n_parties, m):
    small = st.integers(-(2**58), 2**58)
    xs = [np.array(data.draw(st.lists(small, min_size=m, max_size=m)), np.int64) for _ in range(n_parties)]
    total = sum(x.astype(object) for x in xs) if m else np.zeros(0, object)
    offsets = np.array(
        data.draw(st.lists(st.sampled_from([-1, 0, 1, -(2**61), 2**61, 12345]), min_size=m, max_size=m)), object
    )
    thr = np.array(total + offsets if m else [], np.int64)  # thresholds at, just above and just below the sum
    out = run_parties(n_parties, lambda ch, x: secure_sum_threshold(ch, x, thr), xs)
    expect = np.array(total >= thr.astype(object), bool) if m else np.zeros(0, bool)
    for res in out.values():
        assert res.dtype == bool
        np.testing.assert_array_equal(res, expect)


def test_threshold_is_inclusive_and_scalar_threshold():
    xs = [np.array([3, 5, -10, 0]), np.array([4, 1, 2, 0]), np.array([3, 4, 0, 0])]
    out = run_parties(3, lambda ch, x: secure_sum_threshold(ch, x, 10), xs)  # sums 10, 10, -8, 0
    for res in out.values():
        np.testing.assert_array_equal(res, [True, True, False, False])
    out = run_parties(
        2, lambda ch, x: secure_sum_threshold(ch, x, np.array([-8, -7])), [np.array([-5, -5]), np.array([-3, -3])]
    )
    np.testing.assert_array_equal(out["p1"], [True, False])


@pytest.mark.parametrize("bound_bits", [1, 12, 40, 63])
def test_threshold_with_a_declared_bound(bound_bits):
    lim = 2 ** (bound_bits - 1)
    xs = [np.array([lim - 1, -lim, 0, 5, -3]), np.array([0, 0, 0, -5, 3])]
    thr = np.array([0, 0, 0, 1, 0])  # Σ − t = lim − 1, −lim, 0, −1, 0: all within ±2^bound_bits
    out = run_parties(2, lambda ch, x: secure_sum_threshold(ch, x, thr, bound_bits=bound_bits), xs)
    np.testing.assert_array_equal(out["p0"], [True, False, True, False, True])
    np.testing.assert_array_equal(out["p1"], out["p0"])


def test_threshold_mismatch_fails_everywhere():
    out = run_catching(3, lambda ch, t: secure_sum_threshold(ch, np.arange(3), t), [5, 5, 6])
    for e in out.values():
        assert isinstance(e, InputMismatchError) and "threshold" in str(e)
    out = run_catching(2, lambda ch, b: secure_sum_threshold(ch, np.arange(3), 0, bound_bits=b), [40, 41])
    assert all(isinstance(e, InputMismatchError) and "bound_bits" in str(e) for e in out.values())


def test_session_tags_and_pairwise_seeds():
    from mpc.keys import claim_tag, full_tag, pair_channel, pairwise_seed, root_channel

    async def party(ch, _):
        view = pair_channel(scoped(scoped(ch, "a"), "b"), "p2" if ch.me != "p2" else "p0")
        assert root_channel(view) is ch and full_tag(view, "t") == "a/b/t"
        claim_tag(view, "t")
        with pytest.raises(ProtocolError, match="already used"):
            claim_tag(scoped(ch, "a/b"), "t")
        return {p: await pairwise_seed(scoped(ch, "x"), p) for p in ch.parties if p != ch.me}

    seeds = run_parties(3, party)
    assert seeds["p0"]["p1"] == seeds["p1"]["p0"] != seeds["p0"]["p2"] == seeds["p2"]["p0"]
    assert len({seeds["p1"]["p2"], seeds["p0"]["p1"], seeds["p0"]["p2"]}) == 3
