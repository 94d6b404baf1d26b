"""RFC 9380's test vectors for edwards25519_XMD:SHA-512_ELL2_RO_ (Appendix J.5.1), and the random-oracle
construction in use for the DH hashing of mpc.commutative (issue 16, item 13)."""

from __future__ import annotations

import nacl.bindings
import pytest

from mpc.hash_to_curve import hash_to_edwards25519, hash_to_field, map_to_edwards25519_affine

DST = b"QUUX-V01-CS02-with-edwards25519_XMD:SHA-512_ELL2_RO_"
# (msg, u0, u1, Q0.x, Q0.y, P.x, P.y), hex big-endian, from RFC 9380 Appendix J.5.1
VECTORS = [
    (
        b"",
        "03fef4813c8cb5f98c6eef88fae174e6e7d5380de2b007799ac7ee712d203f3a",
        "780bdddd137290c8f589dc687795aafae35f6b674668d92bf92ae793e6a60c75",
        "6549118f65bb617b9e8b438decedc73c496eaed496806d3b2eb9ee60b88e09a7",
        "7315bcc8cf47ed68048d22bad602c6680b3382a08c7c5d3f439a973fb4cf9feb",
        "3c3da6925a3c3c268448dcabb47ccde5439559d9599646a8260e47b1e4822fc6",
        "09a6c8561a0b22bef63124c588ce4c62ea83a3c899763af26d795302e115dc21",
    ),
    (
        b"abc",
        "5081955c4141e4e7d02ec0e36becffaa1934df4d7a270f70679c78f9bd57c227",
        "005bdc17a9b378b6272573a31b04361f21c371b256252ae5463119aa0b925b76",
        "5c1525bd5d4b4e034512949d187c39d48e8cd84242aa4758956e4adc7d445573",
        "2bf426cf7122d1a90abc7f2d108befc2ef415ce8c2d09695a7407240faa01f29",
        "608040b42285cc0d72cbb3985c6b04c935370c7361f4b7fbdb1ae7f8c1a8ecad",
        "1a8395b88338f22e435bbd301183e7f20a5f9de643f11882fb237f88268a5531",
    ),
    (
        b"abcdef0123456789",
        "285ebaa3be701b79871bcb6e225ecc9b0b32dff2d60424b4c50642636a78d5b3",
        "2e253e6a0ef658fedb8e4bd6a62d1544fd6547922acb3598ec6b369760b81b31",
        "3ac463dd7fddb773b069c5b2b01c0f6b340638f54ee3bd92d452fcec3015b52d",
        "7b03ba1e8db9ec0b390d5c90168a6a0b7107156c994c674b61fe696cbeb46baf",
        "6d7fabf47a2dc03fe7d47f7dddd21082c5fb8f86743cd020f3fb147d57161472",
        "53060a3d140e7fbcda641ed3cf42c88a75411e648a1add71217f70ea8ec561a6",
    ),
    (
        b"q128_" + b"q" * 128,
        "4fedd25431c41f2a606952e2945ef5e3ac905a42cf64b8b4d4a83c533bf321af",
        "02f20716a5801b843987097a8276b6d869295b2e11253751ca72c109d37485a9",
        "703e69787ea7524541933edf41f94010a201cc841c1cce60205ec38513458872",
        "32bb192c4f89106466f0874f5fd56a0d6b6f101cb714777983336c159a9bec75",
        "5fb0b92acedd16f3bcb0ef83f5c7b7a9466b5f1e0d8d217421878ea3686f8524",
        "2eca15e355fcfa39d2982f67ddb0eea138e2994f5956ed37b7f72eea5e89d2f7",
    ),
    (
        b"a512_" + b"a" * 512,
        "6e34e04a5106e9bd59f64aba49601bf09d23b27f7b594e56d5de06df4a4ea33b",
        "1c1c2cb59fc053f44b86c5d5eb8c1954b64976d0302d3729ff66e84068f5fd96",
        "21091b2e3f9258c7dfa075e7ae513325a94a3d8a28e1b1cb3b5b6f5d65675592",
        "41a33d324c89f570e0682cdf7bdb78852295daf8084c669f2cc9692896ab5026",
        "0efcfde5898a839b00997fbe40d2ebe950bc81181afbd5cd6b9618aa336c1e8c",
        "6dc2fc04f266c5c27f236a80b14f92ccd051ef1ff027f26a07f8c0f327d8f995",
    ),
]


def encode(x: int, y: int) -> bytes:
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


@pytest.mark.parametrize(("msg", "u0", "u1", "q0x", "q0y", "px", "py"), VECTORS, ids=lambda v: None)
def test_rfc9380_vectors(msg, u0, u1, q0x, q0y, px, py):
    assert hash_to_field(msg, DST, 2) == [int(u0, 16), int(u1, 16)]
    assert map_to_edwards25519_affine(int(u0, 16)) == (int(q0x, 16), int(q0y, 16))
    out = hash_to_edwards25519(msg, DST)
    assert out == encode(int(px, 16), int(py, 16))
    assert nacl.bindings.crypto_core_ed25519_is_valid_point(out)  # prime-order subgroup


def test_dh_hashing_uses_the_random_oracle_suite():
    from mpc.commutative import HASH_TO_GROUP, hash_items

    assert HASH_TO_GROUP == "edwards25519_XMD:SHA-512_ELL2_RO_"
    rows = hash_items([b"x", b"y", b"x"])
    assert bytes(rows[0]) == bytes(rows[2]) != bytes(rows[1])


# --------------------------------------------------------------------------- received points (issue 16, item 14)
def _mont(edwards: bytes) -> bytes:
    from mpc.commutative import _edwards_to_montgomery

    return _edwards_to_montgomery([edwards])


def _rows(*us: bytes):
    import numpy as np

    return np.frombuffer(b"".join(us), np.uint8).reshape(-1, 32)


def _twist_u() -> bytes:
    """A u-coordinate on the twist of Curve25519: u^3 + 486662 u^2 + u is a non-square."""
    p = 2**255 - 19
    u = 2
    while pow((u**3 + 486662 * u * u + u) % p, (p - 1) // 2, p) == 1:
        u += 1
    return u.to_bytes(32, "little")


def test_received_points_must_be_canonical_on_the_curve_and_of_prime_order():
    from mpc.commutative import DEFAULT_DST, LOW_ORDER_ENCODINGS, DHHash, check_subgroup_points, hash_items
    from mpc.errors import ProtocolError

    honest = hash_items([b"a", b"b", b"c"])
    check_subgroup_points(honest)  # accepted
    h = DHHash()
    assert (h.apply_received(honest) == h.apply(honest)).all()

    p = 2**255 - 19
    u = int.from_bytes(bytes(honest[0]), "little")
    torsion = _mont(
        nacl.bindings.crypto_core_ed25519_add(
            hash_to_edwards25519(b"a", DEFAULT_DST),
            bytes.fromhex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),  # order 8
        )
    )
    bad = {
        "bit 255 set": (u | 1 << 255).to_bytes(32, "little"),
        "u >= p": (u + p).to_bytes(32, "little") if u + p < 2**255 else (p + 1).to_bytes(32, "little"),
        "twist": _twist_u(),
        "torsion component": torsion,
        **{f"low order {i}": e for i, e in enumerate(sorted(LOW_ORDER_ENCODINGS)) if e[31] < 0x80},
    }
    for what, row in bad.items():
        with pytest.raises(ProtocolError):
            check_subgroup_points(_rows(bytes(honest[1]), row))
        with pytest.raises(ProtocolError):
            h.apply_received(_rows(row))
        assert what  # every case named
