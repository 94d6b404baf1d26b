"""Commutative P-256 cipher and Kantarcioglu–Clifton secure set union."""

import asyncio
import itertools
import random

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.channel import MemoryNetwork, run_parties, unpack_arrays
from mpc.commutative import (
    FAKE_FLAG,
    MAX_ITEM_BYTES,
    PohligHellmanP256,
    decode_rows,
    embed_items,
    fake_rows,
    shuffle_rows,
    unique_rows,
)
from mpc.errors import InputMismatchError, ProtocolError
from mpc.set_union import secure_set_union

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
item = st.binary(max_size=MAX_ITEM_BYTES)


def plain_union(sets) -> list[bytes]:
    return sorted(set().union(*map(set, sets)))


def union_all(sets, **kw) -> dict:
    return run_parties(len(sets), lambda ch, s: secure_set_union(ch, s, **kw), sets, timeout=20)


def run_catching(sets, fn):
    """Each party's exception is returned instead of raised (to check *every* party fails)."""

    async def wrap(ch, s):
        try:
            return await fn(ch, s)
        except Exception as e:
            return e

    return run_parties(len(sets), wrap, sets, timeout=10)


@st.composite
def party_sets(draw, min_parties=2, max_parties=5, max_items=6):
    """2–5 sets drawn from a shared pool (so items repeat across parties) plus private items."""
    n = draw(st.integers(min_parties, max_parties))
    pool = draw(st.lists(item, max_size=6, unique=True))
    picks = st.lists(st.sampled_from(pool), max_size=max_items) if pool else st.just([])
    return [draw(picks) + draw(st.lists(item, max_size=3)) for _ in range(n)]


# --------------------------------------------------------------------------- cipher
@FAST
@given(items=st.lists(item, min_size=1, max_size=5, unique=True), nkeys=st.integers(1, 4), seed=st.integers(0, 2**32))
def test_cipher_round_trip_any_key_order(items, nkeys, seed):
    rng = random.Random(seed)
    keys = [PohligHellmanP256() for _ in range(nkeys)]
    x = embed_items(items)
    c = x
    for k in rng.sample(keys, nkeys):
        c = k.encrypt(c)
    for k in rng.sample(keys, nkeys):
        c = k.decrypt(c)
    assert np.array_equal(c, x)
    assert decode_rows(c) == (list(items), 0)


def test_cipher_commutes_and_encrypt_items_matches_embedding():
    a, b = PohligHellmanP256(), PohligHellmanP256()
    x = embed_items([b"", b"a", bytes(range(30)), b"\xff" * 30])
    assert np.array_equal(a.encrypt(b.encrypt(x)), b.encrypt(a.encrypt(x)))
    assert np.array_equal(a.encrypt_items([b"", b"a", bytes(range(30)), b"\xff" * 30]), a.encrypt(x))
    assert not np.array_equal(a.encrypt(x), x)


def test_known_key_small_cases():
    one = PohligHellmanP256(1)
    x = embed_items([b"abc"])
    assert np.array_equal(one.encrypt(x), x) and np.array_equal(one.decrypt(x), x)
    with pytest.raises(ValueError):
        PohligHellmanP256(0)


def test_embedding_is_deterministic_and_distinguishes_lengths():
    x1, x2 = embed_items([b"", b"\x00"]), embed_items([b"", b"\x00"])
    assert np.array_equal(x1, x2) and not np.array_equal(x1[0], x1[1])
    assert decode_rows(x1)[0] == [b"", b"\x00"]


def test_fakes_are_flagged_distinct_and_dropped():
    f = fake_rows(50)
    assert np.all(f[:, 0] == FAKE_FLAG) and len(unique_rows(f)) == 50
    k = PohligHellmanP256()
    enc = k.encrypt_fakes(10)
    assert decode_rows(k.decrypt(enc)) == ([], 10)


def _on_curve(x: int) -> bool:
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x02" + x.to_bytes(32, "big"))
        return True
    except ValueError:
        return False


def test_over_long_item_and_non_points_rejected():
    with pytest.raises(ProtocolError, match="agreed index"):
        embed_items([b"x" * (MAX_ITEM_BYTES + 1)])
    bad = np.zeros((1, 32), np.uint8)
    bad[0, -1] = next(x for x in range(1, 64) if not _on_curve(x))  # 02‖x is not a P-256 point
    with pytest.raises(ProtocolError, match="P-256"):
        PohligHellmanP256().encrypt(bad)
    garbage = np.full((1, 32), 0x42, np.uint8)  # header 0x42 is neither a length nor the fake flag
    with pytest.raises(ProtocolError, match="not an item encoding"):
        decode_rows(garbage)


def test_shuffle_is_a_permutation():
    rows = np.arange(32 * 300, dtype=np.uint32).astype(np.uint8).reshape(-1, 32)
    rows[:, 0] = np.arange(300) % 256
    rows[:, 1] = np.arange(300) // 256
    s = shuffle_rows(rows)
    assert sorted(map(bytes, s)) == sorted(map(bytes, rows)) and not np.array_equal(s, rows)


# --------------------------------------------------------------------------- protocol
def test_union_three_parties_matches_plain_set_union():
    sets = [[b"bread", b"milk", b"17"], [b"milk", b"eggs"], [b"17", b"tea", b"milk"]]
    out = union_all(sets)
    assert all(v == plain_union(sets) for v in out.values())


@FAST
@given(sets=party_sets())
def test_union_equals_plain_union_property(sets):
    out = union_all(sets)
    assert list(out.values()) == [plain_union(sets)] * len(sets)


@FAST
@given(sets=party_sets(max_items=4), extra=st.integers(0, 6))
def test_padded_union_never_returns_fakes(sets, extra):
    pad = max(len(set(s)) for s in sets) + extra
    out = union_all(sets, pad_to=pad)
    assert list(out.values()) == [plain_union(sets)] * len(sets)


@pytest.mark.parametrize(
    "sets",
    [
        [[], []],
        [[], [], [], []],
        [[b"a", b"b"], []],
        [[b"same", b"x"]] * 5,
        [[b"p0"], [b"p1"], [b"p2"], [b"p3"]],
        [[b""], [b"x" * MAX_ITEM_BYTES], [b"", b"x" * MAX_ITEM_BYTES]],
        [[bytes([i]) for i in range(256)], [bytes([i, i]) for i in range(40)]],
    ],
    ids=["all-empty-2", "all-empty-4", "one-empty", "all-equal-5", "disjoint-4", "lengths-0-and-max", "many"],
)
def test_union_edge_cases(sets):
    out = union_all(sets)
    assert list(out.values()) == [plain_union(sets)] * len(sets)


def test_union_ignores_duplicates_within_a_party():
    out = union_all([[b"a", b"a", b"b"], [b"b", bytearray(b"c"), memoryview(b"c")]])
    assert out["p0"] == [b"a", b"b", b"c"]


def test_over_long_item_is_a_clear_error_on_every_party():
    sets = [[b"ok"], [b"y" * (MAX_ITEM_BYTES + 1)], [b"fine"]]
    res = run_catching(sets, lambda ch, s: secure_set_union(ch, s))
    for e in res.values():
        assert isinstance(e, ProtocolError)
        assert "party p1" in str(e) and "agreed index" in str(e) and str(MAX_ITEM_BYTES) in str(e)


def test_set_larger_than_pad_to_fails_everywhere():
    res = run_catching([[b"a", b"b", b"c"], [b"a"]], lambda ch, s: secure_set_union(ch, s, pad_to=2))
    assert all(isinstance(e, ProtocolError) and "party p0" in str(e) and "pad_to" in str(e) for e in res.values())


def test_non_bytes_item_fails_everywhere():
    res = run_catching([[b"a"], ["text"]], lambda ch, s: secure_set_union(ch, s))
    assert all(isinstance(e, ProtocolError) and "not bytes" in str(e) for e in res.values())


def test_pad_to_mismatch_is_an_input_mismatch_everywhere():
    res = run_catching([[b"a"], [b"b"]], lambda ch, s: secure_set_union(ch, s, pad_to=4 if ch.me == "p0" else 8))
    assert all(isinstance(e, InputMismatchError) and "pad_to" in str(e) for e in res.values())


def test_needs_two_parties():
    with pytest.raises(ProtocolError):
        run_parties(1, lambda ch, s: secure_set_union(ch, s), [[b"a"]])


def test_concurrent_unions_with_distinct_tags():
    sets = [[b"a", b"b"], [b"c"], [b"a", b"d"]]

    async def both(ch, s):
        return await asyncio.gather(secure_set_union(ch, s, tag="u1"), secure_set_union(ch, s[:1], tag="u2"))

    out = run_parties(3, both, sets)
    assert all(v == [plain_union(sets), plain_union([s[:1] for s in sets])] for v in out.values())


def test_ring_messages_all_have_the_padded_size():
    """With pad_to, every set travels as exactly pad_to rows, whatever its true size."""
    sets = [[b"a"], [b"b", b"c", b"d"], []]
    seen = []

    class Spy:
        def __init__(self, inner):
            self.inner, self.me, self.parties, self.state = inner, inner.me, inner.parties, inner.state
            self.bytes_sent = 0

        async def send(self, to, tag, payload):
            if "/enc/" in tag or "/full/" in tag:
                seen.append(unpack_arrays(payload)[0].shape)
            await self.inner.send(to, tag, payload)

        async def recv(self, frm, tag):
            return await self.inner.recv(frm, tag)

    async def main():
        net = MemoryNetwork(["p0", "p1", "p2"], timeout=10)
        runs = [secure_set_union(Spy(net.channel(p)), s, pad_to=5) for p, s in zip(net.parties, sets)]
        return await asyncio.gather(*runs)

    out = asyncio.run(main())
    assert all(v == plain_union(sets) for v in out)
    assert seen and set(seen) == {(5, 32)}


def test_default_pad_is_power_of_two_of_largest_set():
    sets = [[b"a"], [bytes([i]) for i in range(5)], []]
    sizes = []

    async def go(ch, s):
        orig = ch.send

        async def send(to, tag, payload):
            if "/enc/" in tag:
                sizes.append(unpack_arrays(payload)[0].shape[0])
            await orig(to, tag, payload)

        ch.send = send
        return await secure_set_union(ch, s)

    out = run_parties(3, go, sets)
    assert all(v == plain_union(sets) for v in out.values())
    assert set(sizes) == {8}


def test_larger_sets_all_party_counts():
    for n in (2, 3, 4, 5):
        sets = [[b"%d/%d" % (p, i) for i in range(40)] + [b"common%d" % i for i in range(20)] for p in range(n)]
        out = union_all(sets, pad_to=64)
        assert all(v == plain_union(sets) for v in out.values()), n


def test_every_key_order_pairs():
    """Three keys: every encryption order and every decryption order round-trips."""
    keys = [PohligHellmanP256() for _ in range(3)]
    x = embed_items([b"k", b"order"])
    for enc in itertools.permutations(keys):
        c = x
        for k in enc:
            c = k.encrypt(c)
        for dec in itertools.permutations(keys):
            d = c
            for k in dec:
                d = k.decrypt(d)
            assert np.array_equal(d, x)
