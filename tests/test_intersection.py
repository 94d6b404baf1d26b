"""X25519 DH hashing and Vaidya–Clifton secure set-intersection cardinality."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.channel import run_parties
from mpc.commutative import LOW_ORDER_ENCODINGS, DHHash, hash_items
from mpc.errors import InputMismatchError, ProtocolError
from mpc.intersection import count_common, intersection_cardinality

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
item = st.binary(max_size=40)


def plain(sets) -> int:
    return len(set.intersection(*map(set, sets)))


def isect_all(sets, **kw) -> dict:
    return run_parties(len(sets), lambda ch, s: intersection_cardinality(ch, s, **kw), sets, timeout=20)


def run_catching(sets, fn):
    async def wrap(ch, s):
        try:
            return await fn(ch, s)
        except Exception as e:
            return e

    return run_parties(len(sets), wrap, sets, timeout=10)


@st.composite
def party_sets(draw):
    n = draw(st.integers(2, 5))
    pool = draw(st.lists(item, max_size=8, unique=True))
    picks = st.lists(st.sampled_from(pool), max_size=8) if pool else st.just([])
    return [draw(picks) + draw(st.lists(item, max_size=3)) for _ in range(n)]


# --------------------------------------------------------------------------- DH hashing
def test_dh_hash_commutes():
    a, b, c = DHHash(), DHHash(), DHHash()
    u = hash_items([b"x", b"", os.urandom(100)])
    assert np.array_equal(a.apply(b.apply(c.apply(u))), c.apply(a.apply(b.apply(u))))
    assert not np.array_equal(a.apply(u), b.apply(u))


@pytest.mark.parametrize("threads", ["1", "2"])  # 1: pyca's X25519; more: libsodium in a thread pool
def test_low_order_inputs_raise_protocol_error(threads, monkeypatch):
    monkeypatch.setenv("PPDM_CRYPTO_THREADS", threads)
    h = DHHash()
    for enc in LOW_ORDER_ENCODINGS:
        with pytest.raises(ProtocolError, match="low-order"):
            h.apply(np.frombuffer(enc, np.uint8).reshape(1, 32))
    assert len(LOW_ORDER_ENCODINGS) == 14


def test_pyca_and_libsodium_paths_agree(monkeypatch):
    h = DHHash()
    u = hash_items([os.urandom(i) for i in range(50)])
    monkeypatch.setenv("PPDM_CRYPTO_THREADS", "1")
    one = h.apply(u)
    monkeypatch.setenv("PPDM_CRYPTO_THREADS", "2")
    assert np.array_equal(one, h.apply(u))


def test_hash_items_deterministic_and_length_prefixed():
    assert np.array_equal(hash_items([b"a", b"b"]), hash_items([b"a", b"b"]))
    assert not np.array_equal(hash_items([b"ab"]), hash_items([b"a"]))


def test_count_common():
    r = hash_items([b"1", b"2", b"3"])
    assert count_common([r, r[:2], r[1:]]) == 1
    assert count_common([r, r[:0]]) == 0


# --------------------------------------------------------------------------- protocol
@FAST
@given(sets=party_sets())
def test_cardinality_equals_plain_property(sets):
    out = isect_all(sets)
    assert list(out.values()) == [plain(sets)] * len(sets)


@pytest.mark.parametrize(
    "sets",
    [
        [[], []],
        [[b"a"], []],
        [[b"x", b"y"]] * 4,
        [[b"1"], [b"2"], [b"3"]],
        [[b""], [b"", b"z"], [b"", b"w" * 1000]],
        [[bytes([i]) for i in range(200)], [bytes([i]) for i in range(100, 300 % 256)] + [b"\x00"]],
    ],
    ids=["empty", "one-empty", "all-equal", "disjoint", "empty-item-and-long", "bytes"],
)
def test_cardinality_edge_cases(sets):
    out = isect_all(sets)
    assert list(out.values()) == [plain(sets)] * len(sets)


def test_result_only_to_some_parties():
    sets = [[b"a", b"b", b"c"], [b"b", b"c"], [b"c", b"b", b"q"], [b"b", b"c", b"d"]]
    out = isect_all(sets, receivers=["p2", "p3"])
    assert out == {"p0": None, "p1": None, "p2": 2, "p3": 2}
    out = isect_all(sets, receivers="p1")
    assert out == {"p0": None, "p1": 2, "p2": None, "p3": None}


def test_padding_keeps_the_result():
    sets = [[b"a", b"b"], [b"b"], [b"b", b"c", b"d"]]
    assert set(isect_all(sets, pad_to=6).values()) == {1}


def test_set_larger_than_pad_fails_everywhere():
    res = run_catching([[b"a", b"b"], [b"a"]], lambda ch, s: intersection_cardinality(ch, s, pad_to=1))
    assert all(isinstance(e, ProtocolError) and "party p0" in str(e) for e in res.values())


def test_receivers_mismatch_everywhere():
    res = run_catching([[b"a"], [b"a"]], lambda ch, s: intersection_cardinality(ch, s, receivers=[ch.me]))
    assert all(isinstance(e, InputMismatchError) for e in res.values())


def test_unknown_receiver_rejected():
    res = run_catching([[b"a"], [b"a"]], lambda ch, s: intersection_cardinality(ch, s, receivers=["nobody"]))
    assert all(isinstance(e, ValueError) for e in res.values())


def test_non_bytes_item_fails_everywhere():
    res = run_catching([[b"a"], [3]], lambda ch, s: intersection_cardinality(ch, s))
    assert all(isinstance(e, ProtocolError) and "not bytes" in str(e) for e in res.values())


def test_larger_sets():
    for n in (2, 3, 5):
        sets = [[b"%d-%d" % (p, i) for i in range(300)] + [b"c%d" % i for i in range(77)] for p in range(n)]
        assert set(isect_all(sets).values()) == {77}
