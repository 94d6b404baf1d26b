"""Hashing to edwards25519 as a random oracle: the suite ``edwards25519_XMD:SHA-512_ELL2_RO_``.

A. Faz-Hernández, S. Scott, N. Sullivan, R. S. Wahby, C. A. Wood, "Hashing to Elliptic Curves",
RFC 9380, 2023: ``hash_to_curve(msg) = clear_cofactor(map(u0) + map(u1))`` with
``(u0, u1) = hash_to_field(msg, 2)`` — two field elements from ``expand_message_xmd`` with SHA-512
(§5.3.1, 48 bytes each reduced mod p, §5.2), each sent through Elligator 2 to Curve25519
(§6.7.1, Z = 2, the sign rule of the straight-line §G.2.1 map) and the rational map to
edwards25519 (§6.8.2, Appendix D.1), added, and multiplied by the cofactor 8. Adding two
independent maps is what makes the output indifferentiable from a random oracle into the
prime-order subgroup (Brier, Coron, Icart, Madore, Randriam, Tibouchi, "Efficient
indifferentiable hashing into ordinary elliptic curves", CRYPTO 2010); one map alone (the
suite's ``_NU_`` encoding, or libsodium's ``crypto_core_ed25519_from_hash``) is not.

Checked against the RFC's test vectors (Appendix J.5.1) in ``tests/test_hash_to_curve.py``.
Field arithmetic is GMP's (gmpy2): one modular exponentiation per map (the square root of
§I.2 with the non-square test folded in); the point addition and the three doublings of the
cofactor clearing use the extended-coordinate formulas of Hisil, Wong, Carter, Dawson
("Twisted Edwards curves revisited", ASIACRYPT 2008), with one inversion at the end. Not constant time: the inputs hashed here are items a party
already holds in the clear inside its own process, and timing reveals nothing to the peers
beyond what the protocol sends.
"""

from __future__ import annotations

import hashlib

import gmpy2

__all__ = [
    "P25519",
    "expand_message_xmd",
    "hash_to_edwards25519",
    "hash_to_field",
    "hash_to_montgomery_u",
    "map_to_edwards25519",
    "map_to_edwards25519_affine",
]

P25519 = 2**255 - 19
_P = gmpy2.mpz(P25519)
_J = gmpy2.mpz(486662)  # Curve25519: v^2 = s^3 + J s^2 + s
_Z = gmpy2.mpz(2)
_SQRT_M1 = gmpy2.powmod(2, (P25519 - 1) // 4, _P)  # a square root of -1 (2 is a non-square mod p)
_EXP = gmpy2.mpz((P25519 + 3) // 8)
_SQRT_Z_FACTOR = gmpy2.powmod(_Z, _EXP, _P)  # (Z·a)^((p+3)/8) = Z^((p+3)/8) · a^((p+3)/8)
# sqrt(-486664) with sgn0 = 0 (RFC 9380, Appendix D.1: the rational map to edwards25519)
_C1 = gmpy2.mpz(6853475219497561581579357271197624642482790079785650197046958215289687604742)
assert _C1 * _C1 % _P == (-486664) % P25519 and _C1 % 2 == 0


def expand_message_xmd(msg: bytes, dst: bytes, length: int) -> bytes:
    """RFC 9380 §5.3.1 with SHA-512 (b = 64, s = 128 bytes)."""
    if len(dst) > 255:
        raise ValueError("dst longer than 255 bytes")
    ell = -(-length // 64)
    if ell > 255 or length > 65535:
        raise ValueError("requested output too long")
    dst_prime = dst + bytes([len(dst)])
    b0 = hashlib.sha512(bytes(128) + msg + length.to_bytes(2, "big") + b"\x00" + dst_prime).digest()
    b = hashlib.sha512(b0 + b"\x01" + dst_prime).digest()
    out = [b]
    b0_int = int.from_bytes(b0, "big")
    for i in range(2, ell + 1):
        mixed = (b0_int ^ int.from_bytes(b, "big")).to_bytes(64, "big")
        b = hashlib.sha512(mixed + bytes([i]) + dst_prime).digest()
        out.append(b)
    return b"".join(out)[:length]


def hash_to_field(msg: bytes, dst: bytes, count: int = 2) -> list[int]:
    """``count`` elements of GF(p), 48 bytes of :func:`expand_message_xmd` each (RFC 9380 §5.2, L = 48)."""
    uniform = expand_message_xmd(msg, dst, 48 * count)
    return [int.from_bytes(uniform[48 * i : 48 * (i + 1)], "big") % P25519 for i in range(count)]


def _sqrt_from(r, a):
    """A square root of ``a`` from ``r = a^((p+3)/8)`` if ``a`` has one, else None (p ≡ 5 mod 8: RFC 9380 §I.2)."""
    r2 = r * r % _P
    if r2 == a:
        return r
    if r2 == (-a) % _P:
        return r * _SQRT_M1 % _P
    return None


def map_to_edwards25519(u: int):
    """Elligator 2 to Curve25519 (RFC 9380 §6.7.1, sign per §G.2.1), then the rational map to
    edwards25519 (§6.8.2): the point in extended coordinates ``(X : Y : Z : T)``."""
    u = gmpy2.mpz(u)
    tv = (1 + _Z * u * u) % _P
    x1 = (-_J * gmpy2.invert(tv, _P)) % _P if tv else (-_J) % _P
    gx1 = (x1 * x1 % _P * x1 + _J * x1 % _P * x1 + x1) % _P
    r1 = gmpy2.powmod(gx1, _EXP, _P)  # the one exponentiation of the map
    y = _sqrt_from(r1, gx1)
    if y is not None:  # gx1 square: x = x1, y with sgn0(y) = 1
        s = x1
        if y % 2 == 0:
            y = (-y) % _P
    else:  # x = x2 = -x1 - J, gx2 = Z·u²·gx1: y = u·sqrt(Z·gx1), sgn0(y) = 0
        s = (-x1 - _J) % _P
        r = _SQRT_Z_FACTOR * r1 % _P  # (Z·gx1)^((p+3)/8) = Z^((p+3)/8) · gx1^((p+3)/8)
        zg = _Z * gx1 % _P
        r2 = r * r % _P
        if r2 != zg:
            r = r * _SQRT_M1 % _P
        y = u * r % _P
        if y % 2 == 1:
            y = (-y) % _P
    return _rational_map(s, y)


def _rational_map(s, t):
    """(s, t) on Curve25519 -> the edwards25519 point (v, w) = (sqrt(-486664)·s/t, (s − 1)/(s + 1))
    in extended coordinates ``(X : Y : Z : T)`` with no inversion (RFC 9380 §6.8.2; the exceptional
    cases t = 0 or s = −1 map to the identity)."""
    sp1 = (s + 1) % _P
    if t == 0 or sp1 == 0:
        return gmpy2.mpz(0), gmpy2.mpz(1), gmpy2.mpz(1), gmpy2.mpz(0)
    x, y, z = _C1 * s % _P * sp1 % _P, (s - 1) * t % _P, t * sp1 % _P  # v = x/z, w = y/z
    return x * z % _P, y * z % _P, z * z % _P, x * y % _P  # scaled by z, so that T = X·Y/Z


def map_to_edwards25519_affine(u: int) -> tuple[int, int]:
    """:func:`map_to_edwards25519` as an affine point ``(x, y)`` (two inversions; tests and callers
    that want coordinates)."""
    x, y, z, _ = map_to_edwards25519(u)
    zi = gmpy2.invert(z, _P)
    return int(x * zi % _P), int(y * zi % _P)


# edwards25519: -x² + y² = 1 + d·x²·y²; extended coordinates (X : Y : Z : T), x = X/Z, y = Y/Z, T = X·Y/Z
_D2 = gmpy2.mpz(2 * (-121665 * pow(121666, -1, P25519)) % P25519)


def _add(x1, y1, z1, t1, x2, y2, z2, t2):
    """Point addition, a = −1 (Hisil, Wong, Carter, Dawson, "Twisted Edwards curves revisited",
    ASIACRYPT 2008, add-2008-hwcd-3)."""
    a = (y1 - x1) * (y2 - x2) % _P
    b = (y1 + x1) * (y2 + x2) % _P
    c = t1 * _D2 % _P * t2 % _P
    d = 2 * z1 * z2 % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return e * f % _P, g * h % _P, f * g % _P, e * h % _P


def _double(x1, y1, z1):
    """Point doubling, a = −1 (same paper, dbl-2008-hwcd); T is not needed as input."""
    a = x1 * x1 % _P
    b = y1 * y1 % _P
    c = 2 * z1 * z1 % _P
    h = a + b
    e = h - (x1 + y1) * (x1 + y1) % _P
    g = a - b
    f = c + g
    return e * f % _P, g * h % _P, f * g % _P, e * h % _P


def _hash_projective(msg: bytes, dst: bytes):
    """``clear_cofactor(map(u0) + map(u1))`` in extended coordinates (RFC 9380 §3)."""
    u0, u1 = hash_to_field(msg, dst, 2)
    x, y, z, _ = _add(*map_to_edwards25519(u0), *map_to_edwards25519(u1))
    for _ in range(3):  # clear_cofactor: [8]R
        x, y, z, _ = _double(x, y, z)
    return x, y, z


def _encode(x: int, y: int) -> bytes:
    """Compressed edwards25519 encoding: y little-endian, the sign of x in bit 255."""
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def hash_to_edwards25519(msg: bytes, dst: bytes) -> bytes:
    """``hash_to_curve`` of the suite (RFC 9380 §3, §8.5): a compressed point of the prime-order subgroup."""
    x, y, z = _hash_projective(msg, dst)
    zi = gmpy2.invert(z, _P)
    return _encode(int(x * zi % _P), int(y * zi % _P))


def hash_to_montgomery_u(msg: bytes, dst: bytes) -> int | None:
    """The Curve25519 u-coordinate ``(1 + y)/(1 − y)`` (RFC 7748 §4.1) of :func:`hash_to_edwards25519`'s
    point, straight from its projective form (one inversion); None for the identity."""
    _, y, z = _hash_projective(msg, dst)
    den = (z - y) % _P
    if den == 0:
        return None
    return int((z + y) * gmpy2.invert(den, _P) % _P)
