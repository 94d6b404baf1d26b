"""IKNP OT extension: millions of 1-out-of-2 OTs from 128 base OTs.

Model and assumptions
---------------------
Two parties, semi-honest (honest-but-curious), static corruption, computational
security parameter κ = 128. Construction: Ishai, Kilian, Nissim, Petrank,
"Extending Oblivious Transfers Efficiently", CRYPTO 2003, with

* base OTs: Chou–Orlandi 2015 (:mod:`mpc.base_ot`), 128 per *ordered* pair
  (extension sender, extension receiver), run once per session lazily on the
  first call in that direction and cached in ``ch.state`` (guarded by an
  :class:`asyncio.Lock`, on the unscoped session channel under a fixed tag);
* PRG: AES-128-CTR (:func:`mpc.crypto_hash.prg_rows`);
* hash: the fixed-key AES TCCR hash of Guo–Katz–Wang–Yu 2020
  (:func:`mpc.crypto_hash.tccr_hash`), which replaces IKNP's random oracle.

One extension call, for ``m`` OTs with receiver choices ``r ∈ {0,1}^m``::

    base:  receiver holds seed pairs (k0_i, k1_i), sender holds s ∈ {0,1}^128 and k{s_i}_i
    R: t_i = G(k0_i), u_i = t_i ⊕ G(k1_i) ⊕ r      (i < 128, m-bit rows)   ──u──▶
    S: q_i = G(k{s_i}_i) ⊕ s_i·u_i  (= t_i ⊕ s_i·r); transpose: q_j = t_j ⊕ r_j·s
    S: m0_j = H(q_j, j),  m1_j = H(q_j ⊕ s, j);     R: m{r_j}_j = H(t_j, j)

PRG streams are per call and per slab: the receiver draws a fresh 128-bit salt
for every slab and sends it with ``u``; the AES-CTR counter block and the
TCCR tweaks are SHA-256(tag, salt). So no position counter is shared between
calls, concurrent calls (different tags) on one pair are safe, and a stream
is never reused even if a caller repeats a tag. Large batches run in slabs of
:data:`SLAB` OTs (one ~2 MiB ``u`` message each); the sender hashes slab ``k``
while the receiver is already expanding slab ``k+1``.

Every call first exchanges a small header (kind, ``n``, message length, role)
with the peer; any difference makes *both* sides raise
:class:`~mpc.errors.InputMismatchError` instead of hanging. The receiver
sends its ``u`` slabs without waiting for that header (checked before it
returns), so a random OT costs one message flight.

What every function here reveals (semi-honest): the receiver learns exactly
its chosen messages (for random OT: its chosen keys, and nothing about the
other key of each pair); the sender learns nothing about the choice bits.
Public: the number of OTs, message lengths, the tag, and that two named
parties ran OTs.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator

import numpy as np

from .base_ot import base_ot_recv, base_ot_send
from .channel import Channel, pack_arrays, root_channel, unpack_arrays
from .crypto_hash import derive, prg_rows, tccr_expand, tccr_hash, tweak64
from .errors import InputMismatchError, ProtocolError

__all__ = [
    "KAPPA",
    "send_ot_header",
    "check_ot_header",
    "SLAB",
    "random_ot_send",
    "random_ot_recv",
    "ot_send",
    "ot_recv",
    "correlated_ot_send",
    "correlated_ot_recv",
    "random_bit_ot_send",
    "random_bit_ot_recv",
    "transpose_bits",
    "random_ot_send_slabs",
    "random_ot_recv_slabs",
]

KAPPA = 128  #: base OTs per ordered pair = computational security parameter
SLAB = 1 << 17  #: OTs per extension message (u slab = 128 × SLAB bits = 2 MiB)

_STATE_KEY = "mpc.ot_extension"
_BASE_TAG = "mpc.ot_extension/base-ot"
_PROTO = "iknp/v1"


# --------------------------------------------------------------------------- bit matrix transpose
_SWAPS = [
    (32, np.uint64(0x00000000FFFFFFFF)),
    (16, np.uint64(0x0000FFFF0000FFFF)),
    (8, np.uint64(0x00FF00FF00FF00FF)),
    (4, np.uint64(0x0F0F0F0F0F0F0F0F)),
    (2, np.uint64(0x3333333333333333)),
    (1, np.uint64(0x5555555555555555)),
]


def transpose_bits(M: np.ndarray) -> np.ndarray:
    """Transpose a ``(128, B)`` uint8 bit matrix (bits LSB-first) into ``(8·B, 16)``; ``B % 8 == 0``.

    Row ``j`` of the result holds column ``j`` of ``M``: bit ``i`` (byte ``i//8``,
    bit ``i%8``) is ``M``'s bit ``(i, j)``. Works on 64 × 64 blocks of
    ``uint64`` words with six delta swaps (the recursive block transpose of
    Hacker's Delight §7-3, vectorized over all blocks): stage ``s`` exchanges
    the high ``s``-bit halves of rows ``r`` with the low halves of rows ``r+s``.
    ``M`` is overwritten (it is scratch for the caller). ~85 M columns/s here.
    """
    R, B = M.shape
    if R != 128 or B % 8 or not M.flags.c_contiguous or M.dtype != np.uint8:
        raise ValueError("expected a C-contiguous (128, 8k) uint8 matrix")
    W = B // 8
    A = M.view(np.uint64).reshape(2, 64, W)
    tmp = np.empty(2 * 32 * W, np.uint64)
    for s, mask in _SWAPS:
        V = A.reshape(2, 32 // s, 2, s, W)
        lo, hi = V[:, :, 0], V[:, :, 1]  # rows with bit s clear / set
        t = tmp.reshape(2, 32 // s, s, W)
        np.right_shift(lo, np.uint64(s), out=t)
        t ^= hi
        t &= mask
        hi ^= t
        t <<= np.uint64(s)
        lo ^= t
    # A[g, c, w] is column 64w + c, rows 64g..64g+63
    return np.ascontiguousarray(A.transpose(2, 1, 0)).view(np.uint8).reshape(64 * W, 16)


def _row_bytes(m: int) -> int:
    return ((m + 63) // 64) * 8


# --------------------------------------------------------------------------- session state
class _Pair:
    """Base-OT material of one ordered pair (extension sender → receiver), one side of it."""

    __slots__ = ("lock", "failed", "seeds", "s_bits", "s_block", "seeds0", "seeds1")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.failed: str | None = None  # a half-done set-up cannot be retried on the same tag
        self.seeds: np.ndarray | None = None  # extension sender's side
        self.s_bits: np.ndarray | None = None
        self.s_block: np.ndarray | None = None
        self.seeds0: np.ndarray | None = None  # extension receiver's side
        self.seeds1: np.ndarray | None = None


def _pair(ch: Channel, sender: str, receiver: str) -> _Pair:
    pairs = ch.state.setdefault(_STATE_KEY, {})
    p = pairs.get((sender, receiver))
    if p is None:
        p = pairs[(sender, receiver)] = _Pair()
    return p


async def _setup_as_sender(ch: Channel, peer: str) -> _Pair:
    """Extension sender: be the base-OT *receiver* with a random 128-bit ``s``."""
    p = _pair(ch, ch.me, peer)
    if p.seeds is None:
        async with p.lock:
            _raise_if_failed(p, ch.me, peer)
            if p.seeds is None:
                s = np.frombuffer(os.urandom(16), np.uint8).copy()
                s_bits = np.unpackbits(s, bitorder="little").astype(bool)
                try:
                    seeds = await base_ot_recv(root_channel(ch), peer, s_bits, tag=f"{_BASE_TAG}/{ch.me}>{peer}")
                except BaseException as e:
                    p.failed = f"{type(e).__name__}: {e}"
                    raise
                p.s_block, p.s_bits, p.seeds = s, s_bits, seeds
    return p


def _raise_if_failed(p: _Pair, sender: str, receiver: str) -> None:
    if p.failed is not None:
        raise ProtocolError(f"OT set-up {sender}→{receiver} failed earlier in this session ({p.failed})")


async def _setup_as_receiver(ch: Channel, peer: str) -> _Pair:
    """Extension receiver: be the base-OT *sender* of 128 random seed pairs."""
    p = _pair(ch, peer, ch.me)
    if p.seeds0 is None:
        async with p.lock:
            _raise_if_failed(p, peer, ch.me)
            if p.seeds0 is None:
                try:
                    k0, k1 = await base_ot_send(root_channel(ch), peer, KAPPA, tag=f"{_BASE_TAG}/{peer}>{ch.me}")
                except BaseException as e:
                    p.failed = f"{type(e).__name__}: {e}"
                    raise
                p.seeds0, p.seeds1 = k0, k1
    return p


# --------------------------------------------------------------------------- parameter check
async def send_ot_header(ch: Channel, peer: str, tag: str, role: str, params: dict) -> None:
    """Send this side's role (``"send"``/``"recv"``) and public parameters of the OT run ``tag``.

    With :func:`check_ot_header` on the other side, a mismatch (both parties sending, different
    counts or widths) is one clear :class:`InputMismatchError` before any OT message, rather
    than a garbled result. The header carries public parameters only."""
    await ch.send(peer, f"{tag}/hdr", json.dumps({"role": role, **params}, sort_keys=True).encode())


async def check_ot_header(ch: Channel, peer: str, tag: str, role: str, params: dict, protocol: str = "OT") -> None:
    """Receive the peer's header of the OT run ``tag`` (:func:`send_ot_header`) and check that it
    plays the other role with the same parameters; ``protocol`` names the run in errors."""
    raw = await ch.recv(peer, f"{tag}/hdr")
    try:
        theirs = json.loads(raw)
        if not isinstance(theirs, dict):
            raise ValueError
    except ValueError:
        raise ProtocolError(f"{protocol} {tag!r}: malformed header from {peer}") from None
    other = "recv" if role == "send" else "send"
    if theirs.get("role") != other:
        raise InputMismatchError(
            f"{protocol} {tag!r}: both {ch.me} and {peer} called the {role} side (one must send, one receive)"
        )
    if {k: v for k, v in theirs.items() if k != "role"} != params:
        keys = sorted(set(theirs) | set(params) - {"role"})
        diffs = [
            f"{k}: {ch.me}={params.get(k)!r}, {peer}={theirs.get(k)!r}"
            for k in keys
            if k != "role" and params.get(k) != theirs.get(k)
        ]
        raise InputMismatchError(f"{protocol} {tag!r}: {ch.me} ({role}) and {peer} disagree ({'; '.join(diffs)})")


def _choice_bits(choices) -> np.ndarray:
    c = np.asarray(choices)
    if c.ndim != 1:
        raise ValueError("choices must be a 1-D array of bits")
    if c.dtype == np.bool_:
        return c
    if c.size and (c.min() < 0 or c.max() > 1):
        raise ValueError("choices must be 0/1")
    return c.astype(bool)


def _slab_keys(tag: str, salt: bytes) -> tuple[bytes, int, int]:
    """AES-CTR counter block and the 128-bit TCCR tweak base ``(hi, lo)`` of one slab."""
    d = derive("ppdm/iknp/slab", tag, salt)
    return d[:16], int.from_bytes(d[16:24], "little"), int.from_bytes(d[24:32], "little")


# --------------------------------------------------------------------------- IKNP core
async def random_ot_send_slabs(
    ch: Channel,
    peer: str,
    n: int,
    *,
    tag: str,
    params: dict,
    slab: int = SLAB,
    into: tuple[np.ndarray, np.ndarray] | None = None,
) -> AsyncIterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """Sender of ``n`` IKNP random OTs as a stream of slabs (IKNP 2003; GKWY 2020 TCCR hash).

    The building block for protocols that derandomize random OTs themselves
    (chosen-message, correlated and bit OT here; 1-out-of-N in
    :mod:`mpc.ot_1_of_n`). Yields ``(lo, hi, m0, m1)`` for OTs ``lo:hi`` (at
    most ``slab`` per step): the two pseudorandom 128-bit keys of each OT as
    ``(hi − lo, 16) uint8`` arrays. ``params`` (JSON-able) names the caller's
    construction and public sizes; the peer's
    :func:`random_ot_recv_slabs` must pass the same ``params`` and ``slab``
    (checked: both sides raise :class:`~mpc.errors.InputMismatchError`).
    With ``into = (out0, out1)`` (``(n, 16)`` arrays) the keys are hashed
    straight into them. Every key may be used with distinct TCCR tweaks only;
    the caller owns the tweak space of its derandomization.
    Reveals (semi-honest): nothing about the receiver's choices.
    """
    params = {"proto": _PROTO, "n": n, "slab": slab, **params}
    await send_ot_header(ch, peer, tag, "send", params)
    await check_ot_header(ch, peer, tag, "send", params)
    if n == 0:
        return
    p = await _setup_as_sender(ch, peer)
    seeds, s_bits, s_block = p.seeds, p.s_bits, p.s_block
    assert seeds is not None and s_bits is not None and s_block is not None  # set by _setup_as_sender
    for lo in range(0, n, slab):
        hi = min(n, lo + slab)
        m, B = hi - lo, _row_bytes(hi - lo)
        msg = unpack_arrays(await ch.recv(peer, f"{tag}/u"))
        if len(msg) != 2 or msg[0].shape != (16,) or msg[1].shape != (KAPPA, B) or msg[1].dtype != np.uint8:
            raise ProtocolError(f"OT {tag!r}: malformed extension message from {peer}")
        salt, U = msg
        nonce, tw, tw_lo = _slab_keys(tag, salt.tobytes())
        Q = prg_rows(seeds, nonce, B, data=U, data_rows=s_bits)
        q = transpose_bits(Q)[:m]  # q_j = t_j ⊕ r_j·s
        m0 = tccr_hash(q, tw, tw_lo, out=None if into is None else into[0][lo:hi])
        q ^= s_block
        m1 = tccr_hash(q, tw, tw_lo, out=None if into is None else into[1][lo:hi])
        yield lo, hi, m0, m1


async def random_ot_recv_slabs(
    ch: Channel,
    peer: str,
    c: np.ndarray,
    *,
    tag: str,
    params: dict,
    slab: int = SLAB,
    into: np.ndarray | None = None,
) -> AsyncIterator[tuple[int, int, np.ndarray]]:
    """Receiver of IKNP random OTs with choice bits ``c`` (``(n,) bool``) as a stream of slabs.

    The counterpart of :func:`random_ot_send_slabs` (same ``params`` and
    ``slab``). Yields ``(lo, hi, m_c)``: the chosen key ``m{c_j}[j]`` of each
    OT ``lo:hi`` as a ``(hi − lo, 16) uint8`` array (hashed into
    ``into[lo:hi]`` if given). Reveals (semi-honest): nothing about the other
    key of each pair.
    """
    n = c.size
    params = {"proto": _PROTO, "n": n, "slab": slab, **params}
    await send_ot_header(ch, peer, tag, "recv", params)
    checked = False
    if n == 0 or _pair(ch, peer, ch.me).seeds0 is None:
        # Before the (interactive) base-OT set-up, make sure the peer is really running this call.
        await check_ot_header(ch, peer, tag, "recv", params)
        checked = True
    seeds0: np.ndarray | None = None
    seeds1: np.ndarray | None = None
    if n:
        p = await _setup_as_receiver(ch, peer)
        seeds0, seeds1 = p.seeds0, p.seeds1
    for lo in range(0, n, slab):
        hi = min(n, lo + slab)
        m, B = hi - lo, _row_bytes(hi - lo)
        r = np.zeros(B, np.uint8)
        packed = np.packbits(c[lo:hi], bitorder="little")
        r[: packed.size] = packed
        salt = os.urandom(16)
        nonce, tw, tw_lo = _slab_keys(tag, salt)
        assert seeds0 is not None and seeds1 is not None  # set by _setup_as_receiver (n > 0 here)
        T = prg_rows(seeds0, nonce, B)
        U = prg_rows(seeds1, nonce, B, data=r)  # G(k1_i) ⊕ r
        U ^= T  # u_i = t_i ⊕ G(k1_i) ⊕ r
        await ch.send(peer, f"{tag}/u", pack_arrays(np.frombuffer(salt, np.uint8), U))
        t = transpose_bits(T)[:m]
        yield lo, hi, tccr_hash(t, tw, tw_lo, out=None if into is None else into[lo:hi])
    if not checked:
        await check_ot_header(ch, peer, tag, "recv", params)


# --------------------------------------------------------------------------- random OT
async def random_ot_send(ch: Channel, peer: str, n: int, *, tag: str) -> tuple[np.ndarray, np.ndarray]:
    """Sender of ``n`` random 1-out-of-2 OTs (IKNP 2003 extension, GKWY 2020 TCCR hash).

    Returns ``(m0, m1)``, each ``(n, 16) uint8``, pseudorandom 128-bit keys;
    the receiver (``peer``) gets ``m{c_j}[j]`` for its choice bits.
    Reveals (semi-honest): nothing about the choices to the sender; to the
    receiver, ``m{1-c_j}[j]`` stays pseudorandom. Public: ``n``, ``tag``.
    """
    n = _count(n)
    m0 = np.empty((n, 16), np.uint8)
    m1 = np.empty((n, 16), np.uint8)
    async for _ in random_ot_send_slabs(ch, peer, n, tag=tag, params={"kind": "random"}, into=(m0, m1)):
        pass
    return m0, m1


async def random_ot_recv(ch: Channel, peer: str, choices, *, tag: str) -> np.ndarray:
    """Receiver of random 1-out-of-2 OTs (IKNP 2003) with choice bits ``choices`` (``(n,)`` bool/0-1).

    Returns ``(n, 16) uint8``: row ``j`` equals the sender's ``m{choices[j]}[j]``.
    Reveals (semi-honest): nothing about ``choices`` to the sender; only the
    chosen keys to the receiver. Public: ``n``, ``tag``.
    """
    c = _choice_bits(choices)
    out = np.empty((c.size, 16), np.uint8)
    async for _ in random_ot_recv_slabs(ch, peer, c, tag=tag, params={"kind": "random"}, into=out):
        pass
    return out


def _count(n) -> int:
    n = int(n)
    if n < 0:
        raise ValueError("n must be ≥ 0")
    return n


# --------------------------------------------------------------------------- chosen-message OT
def _pad(keys: np.ndarray, L: int, tag: str, lo: int) -> np.ndarray:
    if L <= 16:
        return keys[:, :L]
    return tccr_expand(keys, L, tweak64(tag, "iknp/chosen"), lo)


async def ot_send(ch: Channel, peer: str, m0: np.ndarray, m1: np.ndarray, *, tag: str) -> None:
    """Sender of ``n`` chosen-message 1-out-of-2 OTs: the receiver gets ``m{c_j}[j]``.

    ``m0``, ``m1``: ``(n, L) uint8``, any ``L ≥ 1``. IKNP 2003 random OT, then
    one message ``y_b = m_b ⊕ pad(k_b)`` (pad = key prefix for ``L ≤ 16``, else
    its TCCR expansion) — two message flights in all.
    Reveals (semi-honest): to the receiver only ``m{c_j}[j]``; nothing about
    the choices to the sender. Public: ``n``, ``L``, ``tag``.
    """
    m0 = np.asarray(m0, np.uint8)
    m1 = np.asarray(m1, np.uint8)
    if m0.ndim != 2 or m0.shape != m1.shape or m0.shape[1] < 1:
        raise ValueError("m0 and m1 must be (n, L) uint8 arrays of the same shape, L ≥ 1")
    n, L = m0.shape
    async for lo, hi, a, b in random_ot_send_slabs(ch, peer, n, tag=tag, params={"kind": "chosen", "L": L}):
        y0 = _pad(a, L, tag, lo) ^ m0[lo:hi]
        y1 = _pad(b, L, tag, lo) ^ m1[lo:hi]
        await ch.send(peer, f"{tag}/y", pack_arrays(y0, y1))


async def ot_recv(ch: Channel, peer: str, choices, msg_len: int, *, tag: str) -> np.ndarray:
    """Receiver of chosen-message 1-out-of-2 OTs (IKNP 2003); returns ``(n, msg_len) uint8``.

    Row ``j`` is the sender's ``m{choices[j]}[j]``.
    Reveals (semi-honest): only the chosen messages to the receiver; nothing
    about ``choices`` to the sender. Public: ``n``, ``msg_len``, ``tag``.
    """
    c = _choice_bits(choices)
    L = int(msg_len)
    if L < 1:
        raise ValueError("msg_len must be ≥ 1")
    out = np.empty((c.size, L), np.uint8)
    slabs = []
    async for lo, hi, h in random_ot_recv_slabs(ch, peer, c, tag=tag, params={"kind": "chosen", "L": L}):
        out[lo:hi] = _pad(h, L, tag, lo)
        slabs.append((lo, hi))
    for lo, hi in slabs:
        y = unpack_arrays(await ch.recv(peer, f"{tag}/y"))
        if len(y) != 2 or y[0].shape != (hi - lo, L) or y[1].shape != (hi - lo, L):
            raise ProtocolError(f"OT {tag!r}: malformed message from {peer}")
        out[lo:hi] ^= np.where(c[lo:hi, None], y[1], y[0])
    return out


# --------------------------------------------------------------------------- correlated OT over Z_2^64
def _word(k: np.ndarray) -> np.ndarray:
    return k.view(np.uint64)[:, 0]


async def correlated_ot_send(ch: Channel, peer: str, deltas: np.ndarray, *, tag: str) -> np.ndarray:
    """Sender of ``n`` arithmetic correlated OTs over Z_2^64 (IKNP 2003 COT, as in Gilboa 1999 products).

    ``deltas``: ``(n,) uint64``. Returns the sender's ``r`` (``(n,) uint64``,
    pseudorandom); the receiver gets ``r + c_j·delta_j mod 2^64``. The sender
    sends one 64-bit correction ``τ_j = r_j + delta_j − H(q_j ⊕ s)`` per OT
    (with ``r_j = H(q_j)``).
    Reveals (semi-honest): to the receiver only ``r_j + c_j·delta_j`` (with
    ``c_j = 0`` it learns nothing about ``delta_j``); nothing about ``c`` to
    the sender. Public: ``n``, ``tag``.
    """
    d = np.asarray(deltas)
    if d.ndim != 1:
        raise ValueError("deltas must be a 1-D uint64 array")
    d = d.astype(np.uint64, copy=False)
    n = d.size
    r = np.empty(n, np.uint64)
    async for lo, hi, a, b in random_ot_send_slabs(ch, peer, n, tag=tag, params={"kind": "cot64"}):
        ra = _word(a)
        tau = ra + d[lo:hi]
        tau -= _word(b)
        r[lo:hi] = ra
        await ch.send(peer, f"{tag}/tau", pack_arrays(tau))
    return r


async def correlated_ot_recv(ch: Channel, peer: str, choices, *, tag: str) -> np.ndarray:
    """Receiver of arithmetic correlated OTs over Z_2^64 (IKNP 2003 COT); returns ``(n,) uint64``.

    Entry ``j`` is ``r_j + choices[j]·delta_j mod 2^64`` for the sender's ``r``
    and ``delta``. Reveals (semi-honest): nothing about ``choices`` to the
    sender; the receiver learns ``r_j + c_j·delta_j`` only. Public: ``n``, ``tag``.
    """
    c = _choice_bits(choices)
    out = np.empty(c.size, np.uint64)
    slabs = []
    async for lo, hi, h in random_ot_recv_slabs(ch, peer, c, tag=tag, params={"kind": "cot64"}):
        out[lo:hi] = _word(h)
        slabs.append((lo, hi))
    for lo, hi in slabs:
        tau = unpack_arrays(await ch.recv(peer, f"{tag}/tau"))
        if len(tau) != 1 or tau[0].shape != (hi - lo,) or tau[0].dtype != np.uint64:
            raise ProtocolError(f"OT {tag!r}: malformed message from {peer}")
        mask = np.negative(c[lo:hi].astype(np.uint64))  # all-ones where c = 1
        out[lo:hi] += tau[0] & mask
    return out


# --------------------------------------------------------------------------- random bit OT
async def random_bit_ot_send(ch: Channel, peer: str, n: int, *, tag: str) -> tuple[np.ndarray, np.ndarray]:
    """Sender of ``n`` random bit OTs (IKNP 2003 random OT, keys truncated to one bit).

    Returns ``(b0, b1)``, ``(n,) uint8`` uniformly random bits; the receiver
    gets ``b{c_j}[j]``. (Two such OTs, one each way, give a Beaver AND triple.)
    Reveals (semi-honest): nothing about ``c`` to the sender; ``b{1-c_j}[j]``
    stays hidden from the receiver. Public: ``n``, ``tag``.
    """
    n = _count(n)
    b0 = np.empty(n, np.uint8)
    b1 = np.empty(n, np.uint8)
    async for lo, hi, a, b in random_ot_send_slabs(ch, peer, n, tag=tag, params={"kind": "bit"}):
        np.bitwise_and(a[:, 0], 1, out=b0[lo:hi])
        np.bitwise_and(b[:, 0], 1, out=b1[lo:hi])
    return b0, b1


async def random_bit_ot_recv(ch: Channel, peer: str, choices, *, tag: str) -> np.ndarray:
    """Receiver of random bit OTs (IKNP 2003); returns ``(n,) uint8`` bits ``b{choices[j]}[j]``.

    Reveals (semi-honest): nothing about ``choices`` to the sender; only the
    chosen bits to the receiver. Public: ``n``, ``tag``.
    """
    c = _choice_bits(choices)
    out = np.empty(c.size, np.uint8)
    async for lo, hi, h in random_ot_recv_slabs(ch, peer, c, tag=tag, params={"kind": "bit"}):
        np.bitwise_and(h[:, 0], 1, out=out[lo:hi])
    return out
