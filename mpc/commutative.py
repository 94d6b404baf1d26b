"""Commutative encryption for the ring-based set protocols.

Model and assumptions
---------------------
Semi-honest parties. Every key is drawn fresh for one protocol run and never
leaves its party. Both primitives are deterministic, which is what the set
protocols need (equal items must collide after everyone has encrypted them)
and also what limits them: a party that sees a ciphertext twice knows it is
the same item.

1. :class:`PohligHellmanP256` — an *invertible* commutative cipher (for set
   union). Pohlig–Hellman/SRA exponentiation moved to the prime-order group of
   NIST P-256 (order ``n``, cofactor 1):

   * ``E_k(P) = k·P`` and ``D_k(Q) = k⁻¹·Q`` (``k⁻¹`` mod ``n``), so
     ``E_a(E_b(P)) = E_b(E_a(P)) = ab·P`` and decryption works in any order.
   * Only the x-coordinate travels. A value ``x`` is rebuilt as the compressed
     point ``02‖x``, which is ``±Q``; since ``x(k·(−Q)) = x(−k·Q) = x(k·Q)`` the
     lost sign never matters. ``k·Q`` is computed as a pyca/cryptography ECDH
     ``exchange`` (which returns exactly ``x(k·Q)``), ``k⁻¹`` is a second cached
     key object from ``ec.derive_private_key``.
   * Items are *embedded*, not hashed, so the last decryption gives the item
     back (see :func:`embed_items`): the x-coordinate is
     ``header ‖ counter ‖ payload`` (1 + 1 + 30 bytes, big-endian); ``header`` is
     the item length (0..30) or :data:`FAKE_FLAG` for padding items, whose
     payload is random; ``counter`` is the first value (try-and-increment) for
     which ``02‖x`` is a curve point, so the encoding is deterministic.
   * Security: hiding which item a ciphertext holds rests on DDH in P-256.
     Because items are embedded rather than hashed to random points the
     standard random-oracle argument does not apply verbatim; no discrete-log
     relation between embedded points is known (the usual heuristic for
     SRA-style embedding).

2. :class:`DHHash` — a *non-invertible* commutative hash (for intersection
   cardinality; Agrawal–Evfimievski–Srikant 2003, Vaidya–Clifton 2005): an item
   is hashed into the prime-order subgroup of Curve25519 (:func:`hash_items`:
   RFC 9380's random-oracle suite ``edwards25519_XMD:SHA-512_ELL2_RO_``, two Elligator 2
   maps (D. J. Bernstein, M. Hamburg, A. Krasnova, T. Lange, "Elligator: elliptic-curve
   points indistinguishable from uniform random strings", ACM CCS 2013) of independent
   field elements, added — indifferentiable from a random oracle into the group by
   E. Brier, J.-S. Coron, T. Icart, D. Madore, H. Randriam, M. Tibouchi, "Efficient
   indifferentiable hashing into ordinary elliptic curves", CRYPTO 2010; SHA-512 as
   the random oracle) and then ``u ↦ X25519(a, u) = x(clamp(a)·U)``; every value
   received from another party is first checked to be a canonical encoding of a point
   of that subgroup (:func:`check_subgroup_points`). Scalar
   multiplications commute, so ``X25519(a, X25519(b, u)) = X25519(b, X25519(a, u))``,
   and a clamped scalar (a multiple of 8, nonzero mod ℓ) maps the subgroup onto
   itself: every value that travels is a point of order ℓ, so hiding rests on
   DDH in that group for *every* value. (Hashing with plain SHA-256 into a
   u-coordinate, as the first release did, lands on the twist for half the
   items and X25519 keeps that curve/twist bit through every key: one bit of
   each item leaked.) A peer that sends one of the 14 encodings of low-order
   points (X25519 would output zero) gets a :class:`~mpc.errors.ProtocolError`.

Speed (2-core CI machine, one thread): P-256 ``from_encoded_point``
(compressed) ~60 k/s plus ``exchange`` ~25 k/s, so ~19 k encryptions/s; pyca
releases the GIL inside ``exchange`` (2 threads: ~37 k/s). X25519: pyca
~39 k/s but holds the GIL; ``nacl.bindings.crypto_scalarmult`` ~35 k/s and
releases it (2 threads: ~68 k/s), so :class:`DHHash` uses libsodium with
several threads and pyca with one. Every batch runs in a shared thread pool
split into per-core chunks (:func:`run_rows`) so the event loop stays
responsive and parties in one process overlap; the environment variable
``PPDM_CRYPTO_THREADS`` overrides the thread count
(:class:`parties.analyst.local_cluster.LocalCluster` gives each of its daemons its
share of the machine's cores).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import nacl.bindings
import nacl.exceptions
import numpy as np
from cryptography.hazmat.primitives.asymmetric import ec

from .errors import ProtocolError
from .hash_to_curve import hash_to_montgomery_u

__all__ = [
    "P256_ORDER",
    "MAX_ITEM_BYTES",
    "FAKE_FLAG",
    "ROW_BYTES",
    "PohligHellmanP256",
    "DHHash",
    "embed_items",
    "fake_rows",
    "decode_rows",
    "hash_items",
    "LOW_ORDER_ENCODINGS",
    "ED25519_ORDER",
    "HASH_TO_GROUP",
    "check_rows",
    "shuffle_rows",
    "unique_rows",
    "run_rows",
]

P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
"""Order ``n`` of the P-256 group (cofactor 1)."""

ROW_BYTES = 32
"""Every ciphertext is one 32-byte row: a P-256 x-coordinate or an X25519 u-coordinate."""

MAX_ITEM_BYTES = 30
"""Longest item :class:`PohligHellmanP256` can carry: 32 bytes of x minus a header and a counter byte."""

FAKE_FLAG = 0x80
"""Header byte of a padding (fake) item; real items have header = length ≤ 30."""

_CURVE = ec.SECP256R1()
_ECDH = ec.ECDH()
_from_point = ec.EllipticCurvePublicKey.from_encoded_point
_MIN_CHUNK = 256  # rows per worker task; below this the thread hand-off costs more than it saves


# --------------------------------------------------------------------------- worker pool
_pool: ThreadPoolExecutor | None = None


def _workers() -> int:
    env = os.environ.get("PPDM_CRYPTO_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=_workers(), thread_name_prefix="ppdm-commutative")
    return _pool


async def run_rows(fn: Callable[[Any], np.ndarray], rows: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Apply the batch function ``fn`` to ``rows`` in the worker pool, one chunk per core.

    ``fn`` maps a slice of ``rows`` (array rows or a list) to an ``(k, 32)`` array;
    the results are concatenated in order. The pyca P-256 ``exchange`` and
    libsodium's ``crypto_scalarmult`` release the GIL, so chunks run in parallel.
    """
    m = len(rows)
    parts = max(1, min(_workers(), m // _MIN_CHUNK))
    if m == 0:
        return np.empty((0, ROW_BYTES), np.uint8)
    loop = asyncio.get_running_loop()
    bounds = [m * i // parts for i in range(parts + 1)]
    futs = [loop.run_in_executor(_executor(), fn, rows[a:b]) for a, b in zip(bounds, bounds[1:])]
    out = await asyncio.gather(*futs)
    return out[0] if len(out) == 1 else np.concatenate(out)


# --------------------------------------------------------------------------- row helpers
def _as_rows(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, np.uint8).reshape(-1, ROW_BYTES)


def check_rows(rows: np.ndarray, what: str = "message") -> np.ndarray:
    """Validate a received ciphertext array: ``uint8`` of shape ``(k, 32)``."""
    if rows.dtype != np.uint8 or rows.ndim != 2 or rows.shape[1] != ROW_BYTES:
        raise ProtocolError(
            f"malformed {what}: expected uint8 rows of {ROW_BYTES} bytes, got {rows.dtype} {rows.shape}"
        )
    return rows


def shuffle_rows(rows: np.ndarray) -> np.ndarray:
    """A uniformly random permutation of ``rows`` (keys from the OS CSPRNG, argsort).

    Sorting 64-bit random keys is uniform up to key collisions (probability
    ≤ m²/2⁶⁵), and needs no seeded PRNG whose state could be guessed.
    """
    m = len(rows)
    if m < 2:
        return np.array(rows, copy=True)
    keys = np.frombuffer(secrets.token_bytes(8 * m), dtype="<u8")
    return rows[np.argsort(keys, kind="stable")]


def unique_rows(rows: np.ndarray) -> np.ndarray:
    """Distinct 32-byte rows (sorted bytewise)."""
    if len(rows) == 0:
        return np.empty((0, ROW_BYTES), np.uint8)
    v = np.ascontiguousarray(rows).view(np.dtype((np.void, ROW_BYTES))).ravel()
    return np.unique(v).view(np.uint8).reshape(-1, ROW_BYTES)


# --------------------------------------------------------------------------- P-256 embedding
def _embed_point(header: int, payload: bytes):
    """Try-and-increment: the first counter for which ``02‖header‖ctr‖payload`` is on P-256.

    Each counter succeeds with probability ~1/2, so 256 failures (≈2⁻²⁵⁶) mean a bug.
    Returns ``(x, public_key)`` so the caller can encrypt without decoding again.
    """
    buf = bytearray(33)
    buf[0], buf[1] = 2, header
    buf[3 : 3 + len(payload)] = payload
    for ctr in range(256):
        buf[2] = ctr
        enc = bytes(buf)
        try:
            return enc[1:], _from_point(_CURVE, enc)
        except ValueError:
            continue
    raise ProtocolError("could not embed an item in a P-256 point (256 counters failed)")  # pragma: no cover


def _check_item(item) -> bytes:
    if not isinstance(item, (bytes, bytearray, memoryview)):
        raise TypeError(f"set items must be bytes, not {type(item).__name__}")
    item = bytes(item)
    if len(item) > MAX_ITEM_BYTES:
        raise ProtocolError(
            f"an item is {len(item)} bytes; secure set union carries at most {MAX_ITEM_BYTES} bytes per item "
            "— encode items through an agreed index (e.g. positions in a candidate list all parties know) "
            "and pass the indexes as items"
        )
    return item


def embed_items(items: Sequence[bytes]) -> np.ndarray:
    """The ``(m, 32)`` x-coordinates that :class:`PohligHellmanP256` uses for ``items`` (real items)."""
    return np.array(
        [np.frombuffer(_embed_point(len(it), it)[0], np.uint8) for it in map(_check_item, items)], dtype=np.uint8
    ).reshape(-1, ROW_BYTES)


def _fake_payloads(count: int) -> list[bytes]:
    blob = secrets.token_bytes(MAX_ITEM_BYTES * count)
    return [blob[i * MAX_ITEM_BYTES : (i + 1) * MAX_ITEM_BYTES] for i in range(count)]


def fake_rows(count: int) -> np.ndarray:
    """``count`` padding items (header :data:`FAKE_FLAG`, 30 random bytes), as x-coordinates."""
    xs = [_embed_point(FAKE_FLAG, p)[0] for p in _fake_payloads(count)]
    return _as_rows(b"".join(xs))


def decode_rows(rows: np.ndarray) -> tuple[list[bytes], int]:
    """Fully decrypted x-coordinates → ``(real items, number of fakes)``.

    Raises :class:`ProtocolError` on a row that is no valid embedding (a party
    used a wrong key, or data was corrupted).
    """
    items, fakes = [], 0
    for row in np.asarray(rows, np.uint8):
        x = row.tobytes()
        head = x[0]
        if head == FAKE_FLAG:
            fakes += 1
        elif head <= MAX_ITEM_BYTES and not any(x[2 + head :]):
            items.append(x[2 : 2 + head])
        else:
            raise ProtocolError("a decrypted value is not an item encoding (wrong key or corrupted data)")
    return items, fakes


# --------------------------------------------------------------------------- P-256 cipher
class PohligHellmanP256:
    """Invertible commutative cipher ``E_k(P) = k·P`` on P-256, over 32-byte x-coordinate rows.

    ``key`` (1 ≤ key < n) is drawn with :mod:`secrets` when not given. Both key
    objects (``k`` and ``k⁻¹ mod n``) are built once; per row the work is one
    ``from_encoded_point`` (compressed) and one ``exchange``.
    Batch methods are synchronous; the protocols run them through :func:`run_rows`.
    """

    def __init__(self, key: int | None = None):
        k = secrets.randbelow(P256_ORDER - 1) + 1 if key is None else int(key)
        if not 0 < k < P256_ORDER:
            raise ValueError("key must be in [1, n-1]")
        self._enc = ec.derive_private_key(k, _CURVE)
        self._dec = ec.derive_private_key(pow(k, -1, P256_ORDER), _CURVE)

    @staticmethod
    def _mul(priv: ec.EllipticCurvePrivateKey, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, np.uint8)
        buf = np.empty((len(rows), 33), np.uint8)
        buf[:, 0] = 2
        buf[:, 1:] = rows
        blob, ex = buf.tobytes(), priv.exchange
        try:
            out = b"".join([ex(_ECDH, _from_point(_CURVE, blob[o : o + 33])) for o in range(0, len(blob), 33)])
        except ValueError:
            raise ProtocolError("received a value that is not the x-coordinate of a P-256 point") from None
        return _as_rows(out)

    def encrypt(self, rows: np.ndarray) -> np.ndarray:
        """``x(k·P)`` for every row ``x(P)``."""
        return self._mul(self._enc, rows)

    def decrypt(self, rows: np.ndarray) -> np.ndarray:
        """``x(k⁻¹·Q)`` for every row ``x(Q)``: undoes :meth:`encrypt` whatever other keys were applied."""
        return self._mul(self._dec, rows)

    def encrypt_items(self, items: Sequence[bytes]) -> np.ndarray:
        """Embed real items (≤ :data:`MAX_ITEM_BYTES` bytes) and encrypt them; one decode per row saved."""
        ex = self._enc.exchange
        pts = (_embed_point(len(it), it)[1] for it in map(_check_item, items))
        return _as_rows(b"".join([ex(_ECDH, pub) for pub in pts]))

    def encrypt_fakes(self, count: int) -> np.ndarray:
        """``count`` fresh padding items, embedded and encrypted."""
        ex = self._enc.exchange
        return _as_rows(b"".join([ex(_ECDH, _embed_point(FAKE_FLAG, p)[1]) for p in _fake_payloads(count)]))


# --------------------------------------------------------------------------- X25519 DH hashing
_P25519 = 2**255 - 19
ED25519_ORDER = 2**252 + 27742317777372353535851937790883648493
"""Order ℓ of the prime-order subgroup of Curve25519 / edwards25519 (cofactor 8)."""
_LOW_ORDER_U = (  # u-coordinates of the points of order 1, 2, 4, 8 on Curve25519 and its twist
    0,
    1,
    325606250916557431795983626356110631294008115727848805560023387167927233504,
    39382357235489614581723060781553021112529911719440698176882885853963445705823,
    _P25519 - 1,
    _P25519,  # non-canonical 0
    _P25519 + 1,  # non-canonical 1
)
LOW_ORDER_ENCODINGS = frozenset((u | top).to_bytes(32, "little") for u in _LOW_ORDER_U for top in (0, 1 << 255))
"""The 14 32-byte strings X25519 maps to zero whatever the scalar (bit 255 is ignored)."""

_Y_MASK = (1 << 255) - 1


def _ratios(nums: list[int], dens: list[int]) -> list[int]:
    """``nums[k] / dens[k] mod p`` for every k, with one field inversion for the whole batch
    (Montgomery's trick: prefix products, one ``pow``, then back-substitution). No den may be 0."""
    p = _P25519
    prefix = [1] * (len(dens) + 1)
    for k, d in enumerate(dens):
        prefix[k + 1] = prefix[k] * d % p
    inv = pow(prefix[-1], p - 2, p)
    out = [0] * len(dens)
    for k in range(len(dens) - 1, -1, -1):
        out[k] = nums[k] * inv % p * prefix[k] % p
        inv = inv * dens[k] % p
    return out


def _edwards_to_montgomery(points: list[bytes]) -> bytes:
    """Montgomery u = (1 + y)/(1 − y) mod p of compressed edwards25519 points (RFC 7748 §4.1), 32 bytes LE
    each (:func:`_ratios`: a few multiplications per point). Callers exclude the identity (y = 1)."""
    ys = [int.from_bytes(pt, "little") & _Y_MASK for pt in points]
    us = _ratios([(1 + y) % _P25519 for y in ys], [(1 - y) % _P25519 for y in ys])
    return b"".join(u.to_bytes(32, "little") for u in us)


HASH_TO_GROUP = "edwards25519_XMD:SHA-512_ELL2_RO_"
"""Which map :func:`hash_items` uses (RFC 9380's suite); protocols agree on it so that parties never mix two maps."""

DEFAULT_DST = b"ppdm/dh-hash/v4/edwards25519_XMD:SHA-512_ELL2_RO_"


def hash_items(items: Sequence[bytes], domain: bytes = DEFAULT_DST) -> np.ndarray:
    """Hash items into the prime-order subgroup of Curve25519, as ``(m, 32)`` u-coordinates.

    Each item goes through RFC 9380's random-oracle suite ``edwards25519_XMD:SHA-512_ELL2_RO_``
    with ``domain`` as its domain-separation tag (:mod:`mpc.hash_to_curve`: two Elligator 2 maps of
    independent field elements, added, cofactor cleared — indifferentiable from a random oracle
    into the group, Brier et al., CRYPTO 2010), then mapped to the Montgomery u-coordinate X25519
    works on. Every output is on Curve25519 — never on its twist — and has order ℓ
    (:data:`ED25519_ORDER`). The identity (probability ≈ 2⁻²⁵²) is re-hashed deterministically, so
    every party maps an item the same way.
    """
    us = []
    for it in items:
        msg = bytes(it)
        u = hash_to_montgomery_u(msg, domain)
        while u is None:  # pragma: no cover - the identity, probability 2^-252
            msg = hashlib.sha512(b"again/" + msg).digest()
            u = hash_to_montgomery_u(msg, domain)
        us.append(u.to_bytes(32, "little"))
    if not us:
        return np.empty((0, ROW_BYTES), np.uint8)
    return _as_rows(b"".join(us))


def check_subgroup_points(rows: np.ndarray) -> None:
    """Refuse received X25519 u-coordinates that are not canonical encodings of points of the
    prime-order subgroup of Curve25519 (:class:`ProtocolError`; an honest party never sends one).

    Canonical: bit 255 clear and ``u < p`` (checked on the bytes, vectorized). On the curve — not
    on its twist — and of order ℓ: ``u`` maps to the edwards25519 y-coordinate ``(u − 1)/(u + 1)``
    (RFC 7748 §4.1; one field inversion for the batch, Montgomery's trick), and libsodium's
    ``crypto_core_ed25519_is_valid_point`` accepts that point only if it decompresses (u on
    Curve25519, not the twist), is canonical, not of small order, and in the main subgroup
    (ℓ·P = O). ``u = −1`` (no Edwards image) is a point of order 2 and is refused.
    """
    if len(rows) == 0:
        return
    check_canonical_points(rows)
    p = _P25519
    blob = np.ascontiguousarray(rows, np.uint8).tobytes()
    us = [int.from_bytes(blob[o : o + 32], "little") for o in range(0, len(blob), 32)]
    den = [(u + 1) % p for u in us]
    if not all(den):
        raise ProtocolError("received a low-order X25519 point (an honest party never sends one)")
    ys = _ratios([(u - 1) % p for u in us], den)
    valid = nacl.bindings.crypto_core_ed25519_is_valid_point
    for y in ys:
        if not valid(y.to_bytes(32, "little")):
            raise ProtocolError("received an X25519 point outside the prime-order subgroup of Curve25519")


def check_canonical_points(rows: np.ndarray) -> None:
    """Refuse received X25519 u-coordinates that are not canonically encoded (bit 255, ``u ≥ p``).

    Enough for values a party only applies its *clamped* key to (:class:`DHHash`) and then compares
    or passes on: the clamped scalar is a multiple of the cofactor 8, so ``X25519(a, P + T) =
    X25519(a, P)`` for any small-order ``T`` — a torsion component carries no bit of the key into
    the reply (the reason RFC 7748 clamps) — a point of small order gives the all-zero output,
    which :meth:`DHHash.apply` refuses, and Curve25519 is twist-secure (its twist has order 4·p′,
    p′ prime; D. J. Bernstein, "Curve25519: new Diffie-Hellman speed records", PKC 2006), so a
    twist point's reply says nothing useful about the key either. Values compared *without* any
    key of the receiver's applied need the full :func:`check_subgroup_points`.
    """
    if len(rows) == 0:
        return
    top = rows[:, 31]
    if (top & 0x80).any():
        raise ProtocolError("received a non-canonical X25519 point (bit 255 set)")
    at_least_p = (top == 0x7F) & (rows[:, 1:31] == 0xFF).all(axis=1) & (rows[:, 0] >= 0xED)
    if at_least_p.any():
        raise ProtocolError("received a non-canonical X25519 point (u >= 2^255 - 19)")


class DHHash:
    """Commutative, non-invertible keyed hash ``u ↦ X25519(a, u)`` on 32-byte rows (libsodium).

    Fed with :func:`hash_items` values (prime-order subgroup of Curve25519), the
    clamped scalar ``clamp(a)`` — a multiple of 8, nonzero mod ℓ — permutes that
    subgroup, so every keyed value stays in it and hides its item under DDH there.
    """

    def __init__(self, key: bytes | None = None):
        self._key = secrets.token_bytes(32) if key is None else bytes(key)
        if len(self._key) != 32:
            raise ValueError("key must be 32 bytes")

    def apply_received(self, rows: np.ndarray) -> np.ndarray:
        """:meth:`apply` to rows another party sent, each first checked (:func:`check_subgroup_points`)."""
        check_subgroup_points(rows)
        return self.apply(rows)

    def apply_received_clamped(self, rows: np.ndarray) -> np.ndarray:
        """:meth:`apply` to received rows whose encoding is checked (:func:`check_canonical_points`:
        enough for values this clamped key is applied to, see there)."""
        check_canonical_points(rows)
        return self.apply(rows)

    def apply(self, rows: np.ndarray) -> np.ndarray:
        """``X25519(a, u)`` for every row ``u``; :class:`ProtocolError` on a low-order input."""
        blob, f, k = np.ascontiguousarray(rows, np.uint8).tobytes(), nacl.bindings.crypto_scalarmult, self._key
        if _workers() == 1:  # one thread: pyca's X25519 is ~15% faster per call (it holds the GIL)
            from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

            ex, load = X25519PrivateKey.from_private_bytes(k).exchange, X25519PublicKey.from_public_bytes
            try:
                return _as_rows(b"".join([ex(load(blob[o : o + 32])) for o in range(0, len(blob), 32)]))
            except ValueError:
                raise ProtocolError("received a low-order X25519 point (an honest party never sends one)") from None
        try:
            out = b"".join([f(k, blob[o : o + 32]) for o in range(0, len(blob), 32)])
        except nacl.exceptions.CryptoError:
            raise ProtocolError("received a low-order X25519 point (an honest party never sends one)") from None
        return _as_rows(out)
