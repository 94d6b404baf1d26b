"""Intersection cardinality must not leak a bit per item (issue 8, item 3).

The first release hashed an item to ``u = SHA-256(…)`` and applied X25519:
half the hashes land on the quadratic twist of Curve25519, and X25519 keeps
"curve or twist" through every key, so each value on the wire told one bit of
its item. Every value must now be a point of the prime-order subgroup of
Curve25519. Oracles written here, independent of the code under test:

* on the curve, not the twist: the Legendre symbol of u³ + A·u² + u is 1
  (Euler's criterion with Python's ``pow``);
* order ℓ: a plain RFC 7748 Montgomery ladder (no clamping) gives [ℓ]P = O,
  and libsodium's ``crypto_core_ed25519_is_valid_point`` accepts the
  corresponding edwards25519 point (it checks the main subgroup).
"""

from __future__ import annotations

import asyncio
import secrets

import nacl.bindings
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.channel import MemoryNetwork, run_parties, unpack_arrays
from mpc.commutative import DHHash, hash_items
from mpc.intersection import intersection_cardinality

P = 2**255 - 19
A = 486662
L = 2**252 + 27742317777372353535851937790883648493


def on_curve(u: int) -> bool:
    """u³ + A·u² + u is a non-zero square mod p (Euler's criterion)."""
    g = (u * u * u + A * u * u + u) % P
    return g != 0 and pow(g, (P - 1) // 2, P) == 1


def ladder_is_identity(u: int, k: int) -> bool:
    """x-only Montgomery ladder (RFC 7748 §5, without clamping): is [k]P the point at infinity?"""
    x1, x2, z2, x3, z3, swap = u, 1, 0, u, 1, 0
    a24 = (A - 2) // 4
    for t in reversed(range(k.bit_length())):
        bit = (k >> t) & 1
        swap ^= bit
        if swap:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = bit
        a, b = (x2 + z2) % P, (x2 - z2) % P
        aa, bb = a * a % P, b * b % P
        e = (aa - bb) % P
        c, d = (x3 + z3) % P, (x3 - z3) % P
        da, cb = d * a % P, c * b % P
        x3, z3 = (da + cb) ** 2 % P, x1 * (da - cb) ** 2 % P
        x2, z2 = aa * bb % P, e * (aa + a24 * e) % P
    if swap:
        x2, z2 = x3, z3
    return z2 % P == 0


def edwards_valid(u: int) -> bool:
    """libsodium's main-subgroup check on the edwards25519 point y = (u − 1)/(u + 1)."""
    y = (u - 1) * pow(u + 1, P - 2, P) % P
    return bool(nacl.bindings.crypto_core_ed25519_is_valid_point(y.to_bytes(32, "little")))


def in_prime_order_group(row) -> bool:
    u = int.from_bytes(bytes(row), "little")
    return u < P and on_curve(u) and ladder_is_identity(u, L) and not ladder_is_identity(u, 1) and edwards_valid(u)


@settings(max_examples=40, deadline=None)
@given(items=st.lists(st.binary(max_size=64), min_size=1, max_size=6))
def test_every_hash_is_in_the_prime_order_group(items):
    assert all(in_prime_order_group(r) for r in hash_items(items))


def test_keyed_values_stay_in_the_prime_order_group():
    rows = hash_items([b"%d" % i for i in range(60)])
    for _ in range(3):  # three parties' keys in turn
        rows = DHHash().apply(rows)
        assert all(in_prime_order_group(r) for r in rows)


def test_the_twist_bit_is_gone():
    """The attack on the first release: the curve/twist bit of a keyed value equals that of its item's hash.

    Here every hash and every keyed value is on the curve, so the bit is the
    same for all items and tells nothing (on the first release about half were
    on the twist).
    """
    items = [secrets.token_bytes(12) for _ in range(400)]
    hashed = hash_items(items)
    keyed = DHHash().apply(DHHash().apply(hashed))
    bits = {on_curve(int.from_bytes(bytes(r), "little")) for r in np.concatenate([hashed, keyed])}
    assert bits == {True}


def test_every_value_on_the_wire_is_in_the_group_fakes_included():
    """Run the protocol with padding; every row any party sends is a point of order ℓ (fakes look like items)."""
    sets = [[b"a", b"b", b"c"], [b"b", b"c"], [b"c", b"x"]]
    rows = []

    class Spy:
        def __init__(self, inner):
            self.inner, self.me, self.parties, self.state = inner, inner.me, inner.parties, inner.state
            self.bytes_sent = 0

        async def send(self, to, tag, payload):
            if "/enc/" in tag or "/full/" in tag:
                rows.extend(unpack_arrays(payload)[0])
            await self.inner.send(to, tag, payload)

        async def recv(self, frm, tag):
            return await self.inner.recv(frm, tag)

    async def main():
        net = MemoryNetwork(["p0", "p1", "p2"], timeout=20)
        return await asyncio.gather(
            *(intersection_cardinality(Spy(net.channel(p)), s, pad_to=6) for p, s in zip(net.parties, sets))
        )

    assert asyncio.run(main()) == [1, 1, 1]
    assert len(rows) == 3 * 2 * 6 + 2 * 6  # 2 ring hops per set, 2 full sets to the comparing party
    assert all(in_prime_order_group(r) for r in rows)


@settings(max_examples=25, deadline=None)
@given(
    sets=st.lists(st.lists(st.sampled_from([b"a", b"b", b"c", b"d", b""]), max_size=5), min_size=2, max_size=4),
)
def test_cardinality_is_the_plain_intersection_size(sets):
    out = run_parties(len(sets), lambda ch, s: intersection_cardinality(ch, s), sets, timeout=20)
    want = len(set.intersection(*map(set, sets)))
    assert set(out.values()) == {want}
