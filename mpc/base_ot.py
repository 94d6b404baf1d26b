"""Base oblivious transfer: Chou–Orlandi "The Simplest Protocol for Oblivious Transfer".

Model and assumptions
---------------------
Two parties, semi-honest (honest-but-curious), static corruption. Security
rests on the computational Diffie–Hellman problem in the prime-order
(ℓ ≈ 2^252) subgroup of edwards25519 (libsodium through PyNaCl's
``nacl.bindings``), ~128-bit security, with SHA-256 as a random oracle for key
derivation. Reference: T. Chou, C. Orlandi, LATINCRYPT 2015, ePrint 2015/267.
(The paper's UC claim for malicious parties was later found to be flawed;
this module only claims semi-honest security, where the protocol is sound.)

Protocol, batched for ``n`` OTs in one message each way::

    S: a ← Z_ℓ,  A = a·G                       ──A──▶
    R: b_i ← Z_ℓ, B_i = b_i·G + c_i·A          ◀──B_1..B_n──
    S: k0_i = KDF(i, B_i, a·B_i),  k1_i = KDF(i, B_i, a·B_i − a·A)
    R: k_i  = KDF(i, B_i, b_i·A)               (= k{c_i}_i)

``KDF`` is SHA-256 over (protocol label, tag, sender, receiver, A, i, B_i,
point), truncated to 128 bits. Cost: sender n+2 scalar multiplications,
receiver 2n; 128 OTs take ~20 ms here.

What it reveals (semi-honest): the sender learns nothing about ``c``
(``B_i`` is a uniformly random point whatever ``c_i``); the receiver learns
``k{c_i}_i`` and nothing about ``k{1-c_i}_i`` (CDH in the random-oracle
model). Public: ``n`` and the tag.

The chosen-message wrappers :func:`base_ot_send_chosen` /
:func:`base_ot_recv_chosen` mask each message with a TCCR-hash expansion of
the random key (one extra message from sender to receiver).
"""

from __future__ import annotations

import os

import numpy as np
from nacl import bindings as nb

from .channel import Channel, pack_arrays, unpack_arrays
from .crypto_hash import derive, tccr_expand, tweak64
from .errors import InputMismatchError, ProtocolError

__all__ = ["base_ot_send", "base_ot_recv", "base_ot_send_chosen", "base_ot_recv_chosen"]

_LABEL = "ppdm/base-ot/chou-orlandi-2015/ed25519/v1"
_PT = 32  # bytes per compressed ed25519 point


def _random_scalar() -> bytes:
    # Uniform in Z_ℓ: reduce 512 random bits mod ℓ (bias < 2^-250); never zero in practice.
    return nb.crypto_core_ed25519_scalar_reduce(os.urandom(64))


def _kdf(tag: str, sender: str, receiver: str, A: bytes, i: int, B: bytes, P: bytes) -> bytes:
    return derive(_LABEL, tag, sender, receiver, A, i, B, P, size=16)


def _check_point(p: bytes, what: str) -> None:
    if len(p) != _PT or not nb.crypto_core_ed25519_is_valid_point(p):
        raise ProtocolError(f"base OT: peer sent an invalid ed25519 point ({what})")


async def base_ot_send(ch: Channel, peer: str, n: int, *, tag: str) -> tuple[np.ndarray, np.ndarray]:
    """Sender of ``n`` random 1-out-of-2 base OTs (Chou–Orlandi 2015).

    Returns ``(k0, k1)``, each ``(n, 16) uint8`` uniformly random keys. The
    receiver gets ``k{c_i}[i]`` for its choice bits ``c``.
    Reveals (semi-honest): to the receiver only ``k{c_i}[i]``; to the sender
    nothing about ``c``. Public: ``n``, ``tag``. A receiver with a different
    ``n`` makes both sides raise :class:`InputMismatchError`.
    """
    return await _co_send(ch, peer, n, tag=tag, msg_len=0)


async def _co_send(ch: Channel, peer: str, n: int, *, tag: str, msg_len: int) -> tuple[np.ndarray, np.ndarray]:
    n = int(n)
    if n < 0:
        raise ValueError("n must be ≥ 0")
    mine = np.array([n, msg_len], np.int64)
    a = _random_scalar()
    A = nb.crypto_scalarmult_ed25519_base_noclamp(a)
    await ch.send(peer, f"{tag}/A", pack_arrays(mine, np.frombuffer(A, np.uint8)))
    hdr, Bs = unpack_arrays(await ch.recv(peer, f"{tag}/B"))
    _compare(tag, hdr, mine, peer, sender=ch.me, receiver=peer)
    if Bs.shape != (n, _PT):
        raise ProtocolError(f"base OT {tag!r}: malformed receiver message")
    aA = nb.crypto_scalarmult_ed25519_noclamp(a, A)
    k0 = np.empty((n, 16), np.uint8)
    k1 = np.empty((n, 16), np.uint8)
    raw = Bs.tobytes()
    for i in range(n):  # n public-key operations; base OTs are few (128 per pair per session)
        B = raw[_PT * i : _PT * (i + 1)]
        _check_point(B, f"B[{i}]")
        try:
            P0 = nb.crypto_scalarmult_ed25519_noclamp(a, B)
            P1 = nb.crypto_core_ed25519_sub(P0, aA)
        except Exception as e:  # libsodium rejects small-order / identity results
            raise ProtocolError(f"base OT {tag!r}: bad receiver point B[{i}] ({e})") from None
        k0[i] = np.frombuffer(_kdf(tag, ch.me, peer, A, i, B, P0), np.uint8)
        k1[i] = np.frombuffer(_kdf(tag, ch.me, peer, A, i, B, P1), np.uint8)
    return k0, k1


async def base_ot_recv(ch: Channel, peer: str, choices, *, tag: str) -> np.ndarray:
    """Receiver of random 1-out-of-2 base OTs (Chou–Orlandi 2015) with choice bits ``choices``.

    ``choices``: ``(n,)`` bool/0-1 ints. Returns ``(n, 16) uint8``: row ``i`` is
    the sender's ``k{choices[i]}[i]``.
    Reveals (semi-honest): nothing about ``choices`` to the sender; only the
    chosen keys to the receiver. Public: ``n``, ``tag``.
    """
    return await _co_recv(ch, peer, _bits(choices), tag=tag, msg_len=0)


async def _co_recv(ch: Channel, peer: str, c: np.ndarray, *, tag: str, msg_len: int) -> np.ndarray:
    n = c.size
    mine = np.array([n, msg_len], np.int64)
    hdr, Ab = unpack_arrays(await ch.recv(peer, f"{tag}/A"))
    try:
        _compare(tag, hdr, mine, peer, sender=peer, receiver=ch.me)
    except ProtocolError:
        # Tell the sender our parameters (with no points) so it raises too, then raise.
        await ch.send(peer, f"{tag}/B", pack_arrays(mine, np.zeros((0, _PT), np.uint8)))
        raise
    A = Ab.tobytes()
    _check_point(A, "A")
    Bs = np.empty((n, _PT), np.uint8)
    Bb: list[bytes] = []
    bs: list[bytes] = []
    for i in range(n):
        b = _random_scalar()
        B = nb.crypto_scalarmult_ed25519_base_noclamp(b)
        if c[i]:
            B = nb.crypto_core_ed25519_add(B, A)
        bs.append(b)
        Bb.append(B)
    if n:
        Bs[:] = np.frombuffer(b"".join(Bb), np.uint8).reshape(n, _PT)
    await ch.send(peer, f"{tag}/B", pack_arrays(mine, Bs))
    k = np.empty((n, 16), np.uint8)
    for i in range(n):
        try:
            P = nb.crypto_scalarmult_ed25519_noclamp(bs[i], A)
        except Exception as e:
            raise ProtocolError(f"base OT {tag!r}: bad sender point ({e})") from None
        k[i] = np.frombuffer(_kdf(tag, peer, ch.me, A, i, Bb[i], P), np.uint8)
    return k


def _compare(tag: str, theirs: np.ndarray, mine: np.ndarray, peer: str, *, sender: str, receiver: str) -> None:
    if theirs.shape != mine.shape or theirs.dtype != mine.dtype:
        raise ProtocolError(f"base OT {tag!r}: malformed header from {peer}")
    if not np.array_equal(theirs, mine):
        s, r = (mine, theirs) if sender != peer else (theirs, mine)
        raise InputMismatchError(
            f"base OT {tag!r}: sender {sender} has n={s[0]}, msg_len={s[1]}; "
            f"receiver {receiver} has n={r[0]}, msg_len={r[1]}"
        )


def _bits(choices) -> np.ndarray:
    c = np.asarray(choices)
    if c.ndim != 1:
        raise ValueError("choices must be a 1-D array of bits")
    if c.dtype != np.bool_:
        if c.size and (c.min() < 0 or c.max() > 1):
            raise ValueError("choices must be 0/1")
    return c.astype(bool)


def _pad(keys: np.ndarray, L: int, tag: str) -> np.ndarray:
    # k0, k1 are independent random keys, so one tweak for both is fine.
    return tccr_expand(keys, L, tweak64(tag, "base-ot/chosen"))


async def base_ot_send_chosen(ch: Channel, peer: str, m0: np.ndarray, m1: np.ndarray, *, tag: str) -> None:
    """Chosen-message base OT: the receiver gets ``m{c_i}[i]`` (rows of ``(n, L) uint8``).

    Random base OT (Chou–Orlandi 2015), then ``y_b = m_b ⊕ H(k_b)`` with ``H``
    the TCCR expansion of :mod:`mpc.crypto_hash`. Reveals: only ``m{c_i}[i]``
    to the receiver; nothing about ``c`` to the sender. Public: ``n``, ``L``.
    """
    m0 = np.ascontiguousarray(m0, np.uint8)
    m1 = np.ascontiguousarray(m1, np.uint8)
    if m0.ndim != 2 or m0.shape != m1.shape:
        raise ValueError("m0 and m1 must be (n, L) uint8 of the same shape")
    n, L = m0.shape
    if L < 1:
        raise ValueError("messages must be at least 1 byte")
    k0, k1 = await _co_send(ch, peer, n, tag=tag, msg_len=L)
    await ch.send(peer, f"{tag}/y", pack_arrays(m0 ^ _pad(k0, L, tag), m1 ^ _pad(k1, L, tag)))


async def base_ot_recv_chosen(ch: Channel, peer: str, choices, msg_len: int, *, tag: str) -> np.ndarray:
    """Receiver side of :func:`base_ot_send_chosen`; returns ``(n, msg_len) uint8``.

    Reveals: only the chosen messages to the receiver; nothing about
    ``choices`` to the sender. Public: ``n``, ``msg_len``.
    """
    c = _bits(choices)
    L = int(msg_len)
    if L < 1:
        raise ValueError("msg_len must be ≥ 1")
    k = await _co_recv(ch, peer, c, tag=tag, msg_len=L)
    y0, y1 = unpack_arrays(await ch.recv(peer, f"{tag}/y"))
    if y0.shape != (c.size, L) or y1.shape != y0.shape:
        raise ProtocolError(f"base OT {tag!r}: malformed sender message")
    return np.where(c[:, None], y1, y0) ^ _pad(k, L, tag)
