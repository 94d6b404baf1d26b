"""Three-party replicated secret sharing (mpc.replicated) against the plain numpy functions it computes."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc import replicated
from mpc.channel import run_parties, unpack_arrays
from mpc.errors import InputMismatchError, ProtocolError
from mpc.replicated import RING_DTYPES, RSS3, _to_planes, _to_ring, ltz_and_count, ltz_rounds, pack_bits, unpack_bits

SMALL = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def ring(v, bits: int) -> np.ndarray:
    """Plain residues mod 2^bits of integer values."""
    a = np.asarray(v)
    u = a.astype(np.int64).view(np.uint64) if a.dtype.kind == "i" else a.astype(np.uint64)
    return u.astype(RING_DTYPES[bits])


def split3(v, rng) -> list[np.ndarray]:
    """Three int64 vectors summing to v mod 2^64 (two of them uniformly random)."""
    v = np.asarray(v, np.int64)
    r1 = rng.integers(-(2**62), 2**62, v.shape)
    r2 = rng.integers(-(2**62), 2**62, v.shape)
    with np.errstate(over="ignore"):
        return [v - r1 - r2, r1, r2]


def run3(fn, inputs, n_parties: int = 3, computers=None):
    """Run ``fn(rss, x)`` on every party of a fresh session (computers: the first three by default)."""

    async def main(ch, x):
        rss = await RSS3.create(ch, computers or ch.parties[:3])
        return await fn(rss, x)

    return run_parties(n_parties, main, inputs, timeout=20)


async def shared(rss: RSS3, x, bits: int):
    """input_sum of every party's vector (only computing parties get a share)."""
    return await rss.input_sum(x, bits)


# --------------------------------------------------------------------------- packing helpers
@given(st.integers(0, 200), st.integers(1, 3), st.data())
def test_pack_unpack_bits_roundtrip(n, width, data):
    bits = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n * width, max_size=n * width)), np.uint8)
    bits = bits.reshape(width, n)
    w = pack_bits(bits)
    assert w.dtype == np.uint64 and w.shape == (width, (n + 63) // 64)
    assert np.array_equal(unpack_bits(w, n), bits)
    if n:
        assert int(w[0, 0]) & 1 == bits[0, 0]  # element 0 at bit 0 of word 0


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize(("n", "chunk"), [(0, 64), (1, 64), (200, 64), (1000, 128), (1000, 1 << 20)])
def test_bit_planes_of_values(dtype, n, chunk):
    v = np.random.default_rng(n).integers(0, np.iinfo(dtype).max, n, dtype=dtype, endpoint=True)
    k = 8 * np.dtype(dtype).itemsize - 3
    planes = _to_planes(v, k, chunk=chunk)
    want = np.array([(v >> dtype(j)) & dtype(1) for j in range(k)], np.uint8).reshape(k, n)
    assert np.array_equal(unpack_bits(planes, n), want)


@SMALL
@given(
    dtype=st.sampled_from([np.int8, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]),
    bits=st.sampled_from(sorted(RING_DTYPES)),
    data=st.data(),
)
def test_values_to_ring_residues_in_a_new_array(dtype, bits, data) -> None:
    """Any integer vector becomes its residues mod 2^bits (Python's own modulo of the exact values), and
    never the caller's array: shares are updated in place afterwards."""
    info = np.iinfo(dtype)
    vals = data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=1, max_size=20))
    v = np.array(vals, dtype=dtype)
    got = _to_ring(v, RING_DTYPES[bits])
    assert got.dtype == RING_DTYPES[bits] and [int(x) for x in got] == [x % (1 << bits) for x in vals]
    assert not np.shares_memory(got, v)


def test_cost_model():
    assert [ltz_rounds(k) for k in (1, 2, 3, 8, 16, 32, 64)] == [0, 1, 2, 5, 6, 7, 8]
    assert ltz_and_count(16) == 51 and ltz_and_count(32) == 114
    assert ltz_and_count(16) < 4 * 16


# --------------------------------------------------------------------------- input and open
@pytest.mark.parametrize(
    ("n_parties", "computers"), [(3, None), (4, None), (5, ("p4", "p1", "p2")), (7, ("p0", "p3", "p6"))]
)
@pytest.mark.parametrize("bits", [16, 32, 64])
def test_input_sum_and_open_to_all(n_parties, computers, bits):
    rng = np.random.default_rng(n_parties * bits)
    n = 257
    xs = [rng.integers(-1000, 1000, n) for _ in range(n_parties)]
    want = ring(np.sum(xs, axis=0), bits)
    comps = computers or tuple(f"p{i}" for i in range(3))

    async def f(rss, x):
        a = await shared(rss, x, bits)
        assert (a is None) == (rss.idx is None)
        mine = await rss.open(a)  # computing parties only
        everyone = await rss.open(a, to="all")
        return mine, everyone

    out = run3(f, xs, n_parties, computers)
    for p, (mine, everyone) in out.items():
        assert everyone.dtype == RING_DTYPES[bits] and np.array_equal(everyone, want)
        if p in comps:
            assert np.array_equal(mine, want)
        else:
            assert mine is None


def test_input_sum_length_mismatch_raises_everywhere():
    async def f(rss, x):
        try:
            await rss.input_sum(x, 32)
        except InputMismatchError as e:
            return str(e)
        return None

    out = run3(f, [np.zeros(3, int), np.zeros(3, int), np.zeros(4, int), np.zeros(3, int)], n_parties=4)
    assert all(v is not None and "n:" in v for v in out.values())


def test_create_rejects_bad_computers():
    async def f(ch, _):
        with pytest.raises(ValueError):
            await RSS3.create(ch, ("p0", "p1"))
        with pytest.raises(ValueError):
            await RSS3.create(ch, ("p0", "p1", "p1"))
        return True

    assert all(run_parties(3, f).values())


def test_open_bool_to_all_and_wide_planes():
    rng = np.random.default_rng(5)
    n = 130
    planes = rng.integers(0, 2, (3, n), dtype=np.uint8)

    async def f(rss, _):
        x = rss.public_bool(planes) if rss.idx is not None else None
        wide = await rss.open(x, to="all")
        one = await rss.open(rss.planes(x, 1) if x is not None else None, to="all")
        return wide, one

    out = run3(f, None, n_parties=5)
    for wide, one in out.values():
        assert np.array_equal(wide, planes) and np.array_equal(one, planes[1])


# --------------------------------------------------------------------------- local operations
def test_local_linear_ops_segment_sum_take_concat():
    rng = np.random.default_rng(7)
    n, bits = 100, 16
    xs = [rng.integers(0, 2**16, n) for _ in range(3)]
    ys = [rng.integers(0, 2**16, n) for _ in range(3)]
    x, y = ring(np.sum(xs, axis=0), bits), ring(np.sum(ys, axis=0), bits)
    c = rng.integers(0, 2**16, n)
    offsets = np.array([0, 0, 5, 5, 17, 60, 99, 100])
    idx = rng.permutation(n)[:40]

    async def f(rss, xy):
        a, b = await shared(rss, xy[0], bits), await shared(rss, xy[1], bits)
        ops = [
            rss.add(a, b),
            rss.sub(a, b),
            rss.neg(a),
            rss.add_const(a, 7),
            rss.add_const(a, c),
            rss.mul_const(a, 3),
            rss.mul_const(a, c),
            rss.segment_sum(a, offsets),
            rss.take(a, idx),
            rss.concat([a, b, a]),
            rss.add_const(rss.public(c, bits), -1),
        ]
        return [await rss.open(o) for o in ops]

    got = run3(f, list(zip(xs, ys)))["p2"]
    cc = ring(c, bits)
    ends = np.append(offsets[1:], n)
    seg = np.array([x[s:e].sum(dtype=np.uint16) for s, e in zip(offsets, ends)], np.uint16)
    want = [
        x + y,
        x - y,
        np.uint16(0) - x,
        x + np.uint16(7),
        x + cc,
        x * np.uint16(3),
        x * cc,
        seg,
        x[idx],
        np.concatenate([x, y, x]),
        cc - np.uint16(1),
    ]
    for g, w in zip(got, want):
        assert g.dtype == np.uint16 and np.array_equal(g, w)


def test_segment_sum_matches_reduceat_on_nonempty_segments():
    rng = np.random.default_rng(8)
    n = 1000
    xs = [rng.integers(0, 50, n) for _ in range(3)]
    offsets = np.sort(rng.choice(np.arange(1, n), 30, replace=False))
    offsets[0] = 0

    async def f(rss, x):
        return await rss.open(rss.segment_sum(await shared(rss, x, 32), offsets))

    got = run3(f, xs)["p0"]
    assert np.array_equal(got, np.add.reduceat(np.sum(xs, axis=0), offsets).astype(np.uint32))


def test_local_boolean_ops():
    rng = np.random.default_rng(9)
    n = 150
    xb, yb = rng.integers(0, 2, (2, n), dtype=np.uint8), rng.integers(0, 2, (2, n), dtype=np.uint8)
    idx = rng.permutation(n)[:70]

    async def f(rss, _):
        x, y = rss.public_bool(xb), rss.public_bool(yb)
        x = rss.xor(x, await rss.and_(y, rss.public_bool(np.zeros((2, n), np.uint8))))  # re-randomized copy
        ops = [
            rss.xor(x, y),
            rss.not_(x),
            rss.planes(x, [1, 0]),
            rss.stack([x, y]),
            rss.bool_take(x, idx),
            rss.bool_concat([x, y]),
        ]
        return [await rss.open(o) for o in ops]

    got = run3(f, None)["p1"]
    want = [xb ^ yb, 1 - xb, xb[::-1], np.concatenate([xb, yb]), xb[:, idx], np.concatenate([xb, yb], axis=1)]
    for g, w in zip(got, want):
        assert np.array_equal(g, w)


# --------------------------------------------------------------------------- products
@SMALL
@given(bits=st.sampled_from([8, 16, 32, 64]), n=st.integers(0, 40), seed=st.integers(0, 2**32 - 1))
def test_mul_equals_plain(bits, n, seed):
    rng = np.random.default_rng(seed)
    xs = [rng.integers(-(2**40), 2**40, n) for _ in range(3)]
    ys = [rng.integers(-(2**40), 2**40, n) for _ in range(3)]

    async def f(rss, xy):
        a, b = await shared(rss, xy[0], bits), await shared(rss, xy[1], bits)
        return await rss.open(await rss.mul(a, b))

    with np.errstate(over="ignore"):
        want = ring(np.sum(xs, axis=0), bits) * ring(np.sum(ys, axis=0), bits)
    for got in run3(f, list(zip(xs, ys))).values():
        assert np.array_equal(got, want)


@SMALL
@given(n=st.integers(0, 200), width=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_and_equals_plain(n, width, seed):
    rng = np.random.default_rng(seed)
    xb, yb = rng.integers(0, 2, (2, width, n), dtype=np.uint8)

    async def f(rss, _):
        # public inputs, re-randomized by an AND with 1 so both operands have random components
        one = rss.public_bool(np.ones((width, n), np.uint8))
        x = await rss.and_(rss.public_bool(xb), one)
        y = await rss.and_(rss.public_bool(yb), one)
        return await rss.open(await rss.and_(x, y))

    got = run3(f, None)["p0"]
    assert np.array_equal(got.reshape(width, n), xb & yb)


# --------------------------------------------------------------------------- comparisons
def edge_values(k: int) -> np.ndarray:
    h = 2 ** (k - 1)
    return np.array([-h, -h + 1, -h + 2, -2, -1, 0, 1, 2, h - 2, h - 1], np.int64)


@pytest.mark.parametrize(("ring_bits", "k"), [(16, 8), (32, 8), (16, 16), (32, 16), (64, 16), (32, 32), (64, 32)])
def test_ltz_near_the_range_ends(ring_bits, k):
    rng = np.random.default_rng(ring_bits + k)
    v = np.concatenate([edge_values(k), rng.integers(-(2 ** (k - 1)), 2 ** (k - 1), 300)])
    junk = rng.integers(0, 2**20, v.size) << k if k < ring_bits else 0  # bits above k must be ignored
    xs = split3(v + junk, rng)

    async def f(rss, x):
        return await rss.open(await rss.ltz(await shared(rss, x, ring_bits), k))

    for got in run3(f, xs).values():
        assert got.dtype == np.uint8 and np.array_equal(got, (v < 0).astype(np.uint8))


@SMALL
@given(ring_bits=st.sampled_from([16, 32, 64]), data=st.data())
def test_ltz_property(ring_bits, data):
    k = data.draw(st.integers(1, ring_bits))
    h = 2 ** (k - 1)
    v = np.array(data.draw(st.lists(st.integers(-h, h - 1), max_size=70)), np.int64)
    xs = split3(v, np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))))

    async def f(rss, x):
        return await rss.open(await rss.ltz(await shared(rss, x, ring_bits), k))

    assert np.array_equal(run3(f, xs)["p1"], (v < 0).astype(np.uint8))


@SMALL
@given(k=st.sampled_from([8, 16, 32]), n=st.integers(1, 60), seed=st.integers(0, 2**32 - 1))
def test_less_than_scalar_and_array_constants(k, n, seed):
    rng = np.random.default_rng(seed)
    h = 2 ** (k - 2)
    v = rng.integers(0, h, n)
    c_arr = rng.integers(0, h, n)
    c_scalar = int(rng.integers(0, h))
    xs = split3(v, rng)

    async def f(rss, x):
        a = await shared(rss, x, 32)
        return await rss.open(await rss.less_than(a, c_scalar, k)), await rss.open(await rss.less_than(a, c_arr, k))

    got_s, got_a = run3(f, xs)["p2"]
    assert np.array_equal(got_s, (v < c_scalar).astype(np.uint8))
    assert np.array_equal(got_a, (v < c_arr).astype(np.uint8))


# --------------------------------------------------------------------------- bit injection
@SMALL
@given(bits=st.sampled_from([8, 16, 32, 64]), n=st.integers(0, 80), seed=st.integers(0, 2**32 - 1))
def test_b2a_and_mul_bit_equal_plain(bits, n, seed):
    rng = np.random.default_rng(seed)
    v = rng.integers(-50, 50, n)
    xs = split3(v, rng)

    async def f(rss, x):
        a = await shared(rss, x, bits)
        b = await rss.less_than(a, 0, 8)
        return await rss.open(await rss.b2a(b, bits)), await rss.open(await rss.mul_bit(b, a))

    got_b, got_m = run3(f, xs)["p0"]
    neg = v < 0
    assert got_b.dtype == RING_DTYPES[bits] and np.array_equal(got_b, neg.astype(got_b.dtype))
    assert np.array_equal(got_m, ring(v * neg, bits))


@SMALL
@given(
    bits=st.sampled_from([8, 16, 32, 64]),
    n=st.integers(0, 80),
    n_parties=st.sampled_from([3, 4, 5]),
    seed=st.integers(0, 2**32 - 1),
)
def test_mul_bit_additive_equals_plain(bits, n, n_parties, seed):
    """mul_bit_additive: the pieces of x·Σ_p v_p (every party's vector, non-computing ones through
    input_additive) add up to the plain product; input_additive's pieces add up to the plain sum, and
    reshared (reshare_additive) they open to it."""
    rng = np.random.default_rng(seed)
    vs = [rng.integers(0, 1 << 20, n) for _ in range(n_parties)]
    signs = rng.integers(-50, 50, n)
    xs = split3(signs, rng) + [np.zeros(n, np.int64)] * (n_parties - 3)

    async def f(rss, both):
        v, x = both
        pieces = await rss.input_additive(v, bits)
        a = await shared(rss, x, bits)
        if rss.idx is None:
            assert pieces is None
            return None
        bit = await rss.less_than(a, 0, 8)
        prod = await rss.mul_bit_additive(bit, pieces, bits)
        return pieces, prod, await rss.open(await rss.reshare_additive(pieces, bits))

    out = run3(f, list(zip(vs, xs)), n_parties=n_parties)
    total = sum(vs)
    comp = [out[p] for p in ("p0", "p1", "p2")]
    dt = RING_DTYPES[bits]
    add = lambda arrs: sum(a.astype(dt) for a in arrs).astype(dt)  # noqa: E731 (wraps mod 2^bits)
    assert all(out[p] is None for p in out if p not in ("p0", "p1", "p2"))
    assert np.array_equal(add([c[0] for c in comp]), ring(total, bits))
    assert np.array_equal(add([c[1] for c in comp]), ring(total * (signs < 0), bits))
    assert all(c[1].dtype == RING_DTYPES[bits] for c in comp)
    assert np.array_equal(comp[0][2], ring(total, bits))


def test_mul_bit_additive_sends_one_masked_element_per_bit_to_the_next_party():
    """Each computing party sends one ring element per element, to the next party only, and what the
    next party receives of a party's vector v·(1 − 2u) is masked: the same statistics for v = 0 and
    v = 2^31 (an attack that sent w unmasked fails here); the party before it receives nothing."""
    n = 4096
    got: dict[tuple[str, str, int], np.ndarray] = {}
    sent: dict[str, int] = {}
    current = [0]

    async def f(ch, v):
        orig = ch.recv

        async def recv(frm, tag):
            payload = await orig(frm, tag)
            if tag.endswith("/e"):
                got[(ch.me, frm, current[0])] = unpack_arrays(payload)[0]
            return payload

        ch.recv = recv
        rss = await RSS3.create(ch, ch.parties[:3])
        pieces = await rss.input_additive(v, 32)
        bit = await rss.less_than(await rss.input_sum(np.zeros(n, np.int64), 8), 1, 4)  # all ones
        before = ch.bytes_sent
        await rss.mul_bit_additive(bit, pieces, 32)
        sent[ch.me] = ch.bytes_sent - before

    for value in (0, 1 << 31):
        current[0] = value
        run_parties(3, f, [np.full(n, value, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)], timeout=20)
        e = got[("p1", "p0", value)].astype(np.float64)  # p0's masked vector, at its next party
        assert 0.45 < e.mean() / 2**32 < 0.55 and len(np.unique(e)) > n - 10
        assert ("p2", "p0", value) not in got  # p0 sends to p1 only (p2 hears from p1)
    assert all(4 * n <= b < 4 * n + 200 for b in sent.values())


@SMALL
@given(
    pair=st.sampled_from([(8, 16), (8, 32), (16, 32), (16, 64), (32, 64)]),
    n=st.integers(0, 60),
    seed=st.integers(0, 2**32 - 1),
)
def test_lift_equals_the_unsigned_residue_in_the_wider_ring(pair, n, seed):
    """lift: shares of x mod 2^r become shares of the same unsigned value mod 2^bits, whatever the
    components (random splits wrap around 2^r up to twice); the ring ends (0, 2^r − 1) always drawn."""
    r, bits = pair
    rng = np.random.default_rng(seed)
    v = np.concatenate([[0, (1 << r) - 1], rng.integers(0, 1 << r, n)]).astype(np.int64)
    xs = split3(v, rng)

    async def f(rss, x):
        return await rss.open(await rss.lift(await shared(rss, x, r), bits))

    got = run3(f, xs)["p0"]
    assert got.dtype == RING_DTYPES[bits] and np.array_equal(got, ring(v, bits))


@SMALL
@given(
    bits=st.sampled_from([8, 16, 32, 64]), sizes=st.lists(st.integers(0, 9), max_size=8), seed=st.integers(0, 2**32 - 1)
)
def test_segment_dot_equals_plain_and_costs_one_element_per_segment(bits, sizes, seed):
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    x, y = rng.integers(-1000, 1000, n), rng.integers(-1000, 1000, n)
    off = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if sizes else np.zeros(0, np.int64)
    sent: dict[str, int] = {}

    async def f(rss, xy):
        a, b = await shared(rss, xy[0], bits), await shared(rss, xy[1], bits)
        before = rss.ch.bytes_sent
        d = await rss.segment_dot(a, b, off)
        sent[rss.ch.me] = rss.ch.bytes_sent - before
        return await rss.open(d)

    xs, ys = split3(x, rng), split3(y, rng)
    got = run3(f, list(zip(xs, ys)))["p0"]
    want = [int(np.dot(x[o : o + s], y[o : o + s])) for o, s in zip(off, sizes)]
    assert np.array_equal(got, ring(np.array(want, dtype=np.int64), bits))
    assert len(sent) == 3
    for v in sent.values():  # one ring element per segment (and the message's framing), not per element
        assert v <= len(sizes) * bits // 8 + 256


def test_child_engines_run_concurrently_and_a_reused_name_is_refused():
    """Two children compute at once (their steps interleave differently on each party) and both
    results equal the plain ones; a child's name used twice reuses mask tags, which is refused."""
    rng = np.random.default_rng(4)
    v = rng.integers(0, 1000, 50)
    xs = split3(v, rng)

    async def f(rss, x):
        a = await shared(rss, x, 32)
        one, two = rss.child("one"), rss.child("two")
        got = await asyncio.gather(one.mul(a, a), two.less_than(a, 500, 12), rss.mul(a, a))
        return await rss.open(got[0]), await rss.open(got[1]), await rss.open(got[2])

    sq, lt, sq2 = run3(f, xs)["p0"]
    assert np.array_equal(sq, ring(v * v, 32)) and np.array_equal(sq2, sq)
    assert np.array_equal(lt, (v < 500).astype(lt.dtype))

    async def g(rss, x):
        a = await shared(rss, x, 32)
        await rss.child("same").mul(a, a)
        return await rss.child("same").mul(a, a)

    with pytest.raises(Exception, match="already used"):
        run3(g, xs)
    with pytest.raises(ValueError, match="one non-empty path segment"):
        run3(lambda rss, x: asyncio.sleep(0, rss.child("a/b")), xs)


@SMALL
@given(width=st.integers(1, 20), n=st.integers(0, 150), c=st.integers(-1, 24), seed=st.integers(0, 2**32 - 1))
def test_popcount_and_ge_public_equal_plain(width, n, c, seed):
    """popcount: per element the number of its planes that are 1 (a Bool number); ge_public: [v ≥ c]."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, (width, n)).astype(np.uint8)
    want = bits.sum(axis=0)

    async def f(rss, x):
        b = await shared(rss, x, 8)
        planes = rss.stack([await rss.less_than(rss.take(b, slice(j * n, (j + 1) * n)), 1, 4) for j in range(width)])
        count = await rss.popcount(rss.not_(planes))  # [b ≥ 1] per plane
        return await rss.open(count), await rss.open(await rss.ge_public(count, c))

    xs = split3(bits.reshape(-1).astype(np.int64), rng)
    got, ge = run3(f, xs)["p0"]
    w = max(width.bit_length(), 1)
    got = np.asarray(got).reshape(w, n)
    assert np.array_equal((got * (1 << np.arange(w))[:, None]).sum(axis=0), want)
    assert np.array_equal(np.asarray(ge).reshape(-1), (want >= c).astype(np.uint8))


@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool"])
@pytest.mark.parametrize("n_parties", [3, 4, 5])
def test_input_bits_one_plane_per_party_and_their_or(n_parties, dtype):
    """input_bits: every party's 0/1 vector XOR-shared, one plane each (session order), also from
    parties that do not compute; or_planes: their OR. Any nonzero entry is a 1 (bytes are packed as
    they are: 7 and 255 too)."""
    rng = np.random.default_rng(n_parties)
    n = 130
    raw = [rng.choice(np.array([0, 1, 7, 255]), n).astype(dtype) for _ in range(n_parties)]
    bits = [(x != 0).astype(np.int64) for x in raw]

    async def f(rss, x):
        planes = await rss.input_bits(x)
        if planes is None:  # a party that only contributes
            return None
        return await rss.open(planes), await rss.open(await rss.or_planes(planes))

    got = run3(f, raw, n_parties=n_parties)
    planes, ored = got["p0"]
    assert np.array_equal(np.asarray(planes).reshape(n_parties, n), np.stack(bits))
    assert np.array_equal(np.asarray(ored).reshape(-1), np.stack(bits).max(axis=0))
    assert all(got[f"p{i}"] is None for i in range(3, n_parties))


def test_input_bits_each_view_of_a_computing_party_s_vector_is_independent_of_it():
    """A computing party's own vector costs one message (x ⊕ a stream, to the party before it). What
    each other party receives, and each share it holds, of that vector is the same whether the
    vector is all ones or all zeros: balanced bits, never the vector (an attack that sent x, or a
    share equal to x, fails here)."""
    n = 4096
    seen: dict[tuple[str, int], list[np.ndarray]] = {}
    current = [0]  # the bit p0's vector holds in this run

    async def f(ch, x):
        orig = ch.recv

        async def recv(frm, tag):
            payload = await orig(frm, tag)
            if "/conv" in tag:
                seen.setdefault((ch.me, current[0]), []).append(unpack_bits(unpack_arrays(payload)[0], n))
            return payload

        ch.recv = recv
        rss = await RSS3.create(ch, ch.parties[:3])
        planes = await rss.input_bits(x)
        own = ch.parties.index("p0")
        return unpack_bits(planes.a[own], n), unpack_bits(planes.b[own], n), await rss.open(planes, to="all")

    for bit in (0, 1):
        current[0] = bit
        x0 = np.full(n, bit, np.uint8)
        zeros = np.zeros(n, np.uint8)
        out = run_parties(3, f, [x0, zeros, zeros], timeout=20)
        assert np.array_equal(np.asarray(out["p1"][2]).reshape(3, n)[0], x0)  # the sharing is right
        for p in ("p1", "p2"):  # p0's vector as p1 and p2 hold it: a stream and 0, or 0 and x ⊕ a stream
            a, b = out[p][0], out[p][1]
            assert (not a.any()) or 0.45 < a.mean() < 0.55
            assert (not b.any()) or 0.45 < b.mean() < 0.55
            assert a.any() != b.any()  # exactly one component is the masked one
        got = seen[("p2", bit)][0]  # p0 → p2 (its predecessor): x ⊕ F(s_{0,1}), never x
        assert 0.45 < got.mean() < 0.55 and not np.array_equal(got, x0)


def test_lift_refuses_a_ring_too_narrow():
    async def f(rss, x):
        return await rss.lift(await shared(rss, x, 16), 16)

    with pytest.raises(Exception, match="at least 19 bits"):
        run3(f, [np.zeros(2, np.int64)] * 3)


def test_count_pipeline_with_non_computing_party():
    """The k-anonymity shape: sum counts, keep c·[c < k] per cell, sum per segment, compare with budgets."""
    rng = np.random.default_rng(11)
    n, k = 5000, 5
    xs = [rng.integers(0, 3, n) for _ in range(4)]
    offsets = np.arange(0, n, 250)
    budgets = rng.integers(0, 400, offsets.size)
    c = np.sum(xs, axis=0)
    small = np.add.reduceat(c * (c < k), offsets)

    async def f(rss, x):
        a = await rss.input_sum(x, 16)
        over = None
        if rss.idx is not None:
            s = rss.segment_sum(await rss.mul_bit(await rss.less_than(a, k, 16), a), offsets)
            over = await rss.less_than(s, budgets, 16)
        return await rss.open(over, to="all")

    for got in run3(f, xs, n_parties=4).values():
        assert np.array_equal(got, (small < budgets).astype(np.uint8))


# --------------------------------------------------------------------------- arg-min
def plain_argmin(keys: list[np.ndarray]) -> int:
    return min(range(len(keys[0])), key=lambda i: (tuple(int(k[i]) for k in keys), i))


@pytest.mark.parametrize("n_parties", [3, 4])
def test_argmin_ties_go_to_the_smallest_index(n_parties):
    keys = [np.array([5, 3, 7, 3, 3, 9, 3]), np.array([1, 4, 0, 2, 2, 0, 2])]
    xs = [[k if p == 0 else np.zeros_like(k) for k in keys] for p in range(n_parties)]

    async def f(rss, x):
        ks = [await rss.input_sum(v, 16) for v in x]
        one = await rss.argmin(ks[:1] if rss.idx is not None else None, [8])
        two = await rss.argmin(ks if rss.idx is not None else None, [8, 8])
        return one, two

    assert set(run3(f, xs, n_parties).values()) == {(1, 3)}


@SMALL
@given(n=st.integers(1, 20), nk=st.integers(1, 3), hi=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_argmin_property(n, nk, hi, seed):
    rng = np.random.default_rng(seed)
    keys = [rng.integers(0, hi, n) for _ in range(nk)]
    bits = [int(b) for b in rng.choice([4, 8, 16], nk)]
    rings = [max(16, b) for b in bits]
    xs = [[s for s in split3(k, rng)] for k in keys]
    inputs = [[xs[j][p] for j in range(nk)] for p in range(3)]

    async def f(rss, x):
        ks = [await rss.input_sum(v, r) for v, r in zip(x, rings)]
        return await rss.argmin([k for k in ks if k is not None], bits)

    assert set(run3(f, inputs).values()) == {plain_argmin(keys)}


@SMALL
@given(
    n=st.integers(2, 120),
    nk=st.integers(1, 2),
    hi=st.integers(1, 6),
    cap=st.sampled_from([3, 10, 40, 1 << 16]),
    seed=st.integers(0, 2**32 - 1),
)
def test_argmin_in_groups_over_several_levels(n, nk, hi, cap, seed):
    """Small pair budgets force several levels of groups (and padded last groups): the winner is still
    the plain lexicographic arg-min with ties to the smallest index, keys up to the largest allowed
    value (the padding's) included."""
    rng = np.random.default_rng(seed)
    keys = [rng.integers(0, hi, n) for _ in range(nk)]
    if rng.random() < 0.5:
        keys = [np.full(n, 127) if j == 0 else k for j, k in enumerate(keys)]  # every key at the top
    xs = [split3(k, rng) for k in keys]
    inputs = [[xs[j][p] for j in range(nk)] for p in range(3)]

    async def f(rss, x):
        ks = [await rss.input_sum(v, 16) for v in x]
        return await rss.argmin(ks, [8] * nk)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(replicated, "ARGMIN_MAX_PAIRS", cap)
        assert set(run3(f, inputs).values()) == {plain_argmin(keys)}


@pytest.mark.parametrize("n", [1, 2, 7, 362, 363, 1297, 6480, 100_000])
def test_argmin_plan_covers_every_candidate_within_the_pair_budget(n):
    plan = replicated.argmin_plan(n)
    m = n
    for g in plan:
        groups = -(-m // g)
        assert g == 2 or groups * g * (g - 1) // 2 <= replicated.ARGMIN_MAX_PAIRS
        m = groups
    assert m == 1
    rounds = sum(ltz_rounds(32) + 2 + (int(np.ceil(np.log2(g - 1))) if g > 2 else 0) for g in plan)
    pairwise = (ltz_rounds(32) + 2) * max(0, (n - 1).bit_length())  # the tournament of pairs it replaced
    assert rounds <= pairwise and (n < 300 or rounds <= pairwise // 2)


# --------------------------------------------------------------------------- what a party sees and sends
class Recorder:
    """A channel that records every message its party receives."""

    def __init__(self, inner):
        self._inner = inner
        self.received: list[tuple[str, str, bytes]] = []

    me = property(lambda self: self._inner.me)
    parties = property(lambda self: self._inner.parties)
    state = property(lambda self: self._inner.state)
    bytes_sent = property(lambda self: self._inner.bytes_sent)

    async def send(self, to, tag, payload):
        await self._inner.send(to, tag, payload)

    async def recv(self, frm, tag):
        payload = await self._inner.recv(frm, tag)
        self.received.append((frm, tag, payload))
        return payload


def test_one_computing_partys_view_looks_uniform():
    rng = np.random.default_rng(12)
    n = 4096
    xs = [rng.integers(0, 4, n) for _ in range(4)]  # small inputs: a leak would show as small values

    async def f(ch, x):
        rec = Recorder(ch)
        rss = await RSS3.create(rec, ("p0", "p1", "p2"))
        a = await rss.input_sum(x, 32)
        if rss.idx is not None:
            await rss.mul_bit(await rss.less_than(a, 5, 16), a)
        return rec.received

    seen = run_parties(4, f, xs)["p0"]
    rss_msgs = [(frm, tag, unpack_arrays(p)) for frm, tag, p in seen if tag.startswith("rss/") and "agree" not in tag]
    assert {frm for frm, tag, _ in rss_msgs if tag.endswith("/in")} == {"p3"}  # p3's explicit piece goes to c0
    values = [a for _, _, arrs in rss_msgs for a in arrs if a.dtype == np.uint32]
    bits = [a for _, _, arrs in rss_msgs for a in arrs if a.dtype == np.uint64]
    assert values and bits
    for v in values:  # uniform mod 2^32: no input, no sum, hardly any small value
        assert v.size == n
        assert not any(np.array_equal(v, ring(x, 32)) for x in xs)
        assert not np.array_equal(v, ring(np.sum(xs, axis=0), 32))
        assert (v < 2**20).mean() < 0.01
        assert 0.45 < (v >> 31).mean() < 0.55
    ones = np.mean([unpack_bits(b, 64 * b.shape[-1]).mean() for b in bits])
    assert 0.45 < ones < 0.55


def test_bytes_per_element():
    n = 64 * 100
    xs = [np.zeros(n, np.int64)] * 3

    async def f(rss, x):
        a = await rss.input_sum(x, 32)
        ch = rss.ch
        b0 = ch.bytes_sent
        await rss.mul(a, a)
        b1 = ch.bytes_sent
        lt = await rss.ltz(a, 16)
        b2 = ch.bytes_sent
        await rss.mul_bit(lt, a)
        b3 = ch.bytes_sent
        return rss.idx, b1 - b0, b2 - b1, b3 - b2

    for idx, mul, ltz, mul_bit in run3(f, xs).values():
        assert 4 * n <= mul < 4 * n + 100  # one uint32 per element (+ header)
        assert n * ltz_and_count(16) / 8 <= ltz < n * ltz_and_count(16) / 8 + 100 * ltz_rounds(16)
        assert 8 * n + (4 * n if idx == 0 else 0) <= mul_bit < 8 * n + (4 * n if idx == 0 else 0) + 300


def test_the_extra_element_of_bit_injection_rotates_over_the_parties():
    """mul_bit / b2a cost the party in role "c0" one ring element more; three calls in a row give
    every computing party that role once, so each sends the same."""
    n = 64 * 50
    xs = [np.zeros(n, np.int64)] * 3

    async def f(rss, x):
        a = await rss.input_sum(x, 32)
        lt = await rss.ltz(a, 16)
        b0 = rss.ch.bytes_sent
        out = []
        for _ in range(3):
            got = await rss.mul_bit(lt, a)
            out.append(got)
        sent = rss.ch.bytes_sent - b0
        b1 = rss.ch.bytes_sent
        for _ in range(3):
            await rss.b2a(lt, 32)
        return sent, rss.ch.bytes_sent - b1, [await rss.open(v) for v in out]

    res = run3(f, xs)
    sent = [v[0] for v in res.values()]
    b2a = [v[1] for v in res.values()]
    assert max(sent) - min(sent) < 200 and 3 * 8 * n + 4 * n <= min(sent)  # 8 B each, +4 B once as c0
    assert max(b2a) - min(b2a) < 200 and 3 * 4 * n + 4 * n <= min(b2a)
    for v in res.values():
        assert all(not np.any(o) for o in v[2])  # 0 · 0 on every call, whichever party played c0


def test_mask_tags_are_never_reused():
    async def f(ch, x):
        first = await RSS3.create(ch, ch.parties[:3])
        await first.input_sum(x, 16)
        second = await RSS3.create(ch, ch.parties[:3])  # same tag namespace: its first mask would repeat
        with pytest.raises(ProtocolError, match="already used"):
            await second.input_sum(x, 16)
        other = await RSS3.create(ch, ch.parties[:3], tag="rss2")
        return await other.open(await other.input_sum(x, 16))

    out = run_parties(3, f, [np.arange(4)] * 3, timeout=20)
    assert all(np.array_equal(v, 3 * np.arange(4)) for v in out.values())


def test_concurrent_calls_started_in_the_same_order():
    keys = np.array([4, 2, 9, 2])
    xs = [keys if p == 3 else np.zeros(4, np.int64) for p in range(4)]

    async def f(rss, x):
        a = await rss.input_sum(x, 16)
        comp = rss.idx is not None
        return await asyncio.gather(
            rss.argmin([a] if comp else None, [8]),
            rss.open(a, to="all"),
            rss.open(await rss.ltz(rss.add_const(a, -3), 8) if comp else None, to="all"),
        )

    for idx, opened, small in run3(f, xs, n_parties=4).values():
        assert idx == 1 and np.array_equal(opened, keys) and np.array_equal(small, keys < 3)
