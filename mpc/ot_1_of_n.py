"""Batched 1-out-of-N oblivious transfer from ⌈log2 N⌉ random 1-out-of-2 OTs.

Model and assumptions
---------------------
Two parties, semi-honest (honest-but-curious), static corruption; the
assumptions of :mod:`mpc.ot_extension` (IKNP — Y. Ishai, J. Kilian, K. Nissim,
E. Petrank, "Extending oblivious transfers efficiently", CRYPTO 2003 — with the
fixed-key AES TCCR hash of C. Guo, J. Katz, X. Wang, Y. Yu, "Efficient and
secure multiparty computation from fixed-key block ciphers", IEEE S&P 2020).

Construction (Naor–Pinkas, "Oblivious Transfer and Polynomial Evaluation",
STOC 1999, §4, with the PRF instantiated by the TCCR hash ``H``). For each
transfer ``t`` with ``ℓ = ⌈log2 N⌉`` (at least 1)::

    ℓ random 1-of-2 OTs: sender gets key pairs (K_j^0, K_j^1), receiver K_j^{c_j}
        for the bits c_j of its choice c
    S: y_i = m_i ⊕ ⊕_{j<ℓ} F(K_j^{i_j}, (t, i))       for i < N        ──y──▶
    R: m_c = y_c ⊕ ⊕_{j<ℓ} F(K_j^{c_j}, (t, c))

with ``F(K, (t, i)) = H(K, tweak(t, i, j))`` truncated or TCCR-expanded to
``L`` bytes. For ``i ≠ c`` some bit ``j`` differs, so the pad of ``m_i`` has a
term keyed by a ``K_j^{1-c_j}`` the receiver does not know; as each key is
used with distinct tweaks, that term is pseudorandom (TCCR with ``x = 0`` and
the key as the secret offset).

All of it is vectorized over the batch (loops only over ``j < ℓ`` and over
16-byte output blocks) and processed in cache-sized chunks so memory stays
bounded. Cost per transfer: ``ℓ`` random OTs plus ``ℓ·2^ℓ`` fixed-key AES
blocks for the sender (pads are computed for all ``2^ℓ ≥ N`` indices) and
``ℓ`` for the receiver; the
wire carries ``16ℓ`` bytes of extension matrix and ``N·L`` bytes of masked
messages, or ``N·bits/8`` bytes when ``bits`` declares small messages (the
millionaires' protocol's 1–2-bit messages with N = 16: 2–4 bytes instead of 16).

What it reveals (semi-honest): the receiver learns ``m_{c_t}`` of each
transfer and nothing about the other ``N−1`` messages; the sender learns
nothing about the choices. Public: ``n``, ``N``, ``L`` (and ``bits``), the tag.
"""

from __future__ import annotations

import numpy as np

from .channel import Channel, pack_arrays, unpack_arrays
from .crypto_hash import aes_fixed, tweak64
from .errors import ProtocolError
from .ot_extension import SLAB, random_ot_recv_slabs, random_ot_send_slabs

__all__ = ["ot_1_of_n_send", "ot_1_of_n_recv", "MAX_N", "check_parameters"]

_CHUNK_BLOCKS = 1 << 15  # (2^ℓ × transfers) 16-byte blocks per work array: ~512 KiB, stays in L2
_M64 = (1 << 64) - 1
_INDEX_BITS = 16  # low bits of the high tweak word: the message index i < 2^ℓ
_KEY_BLOCK_BITS = 64 - _INDEX_BITS  # the rest: the key position and output block, j·nb + b

MAX_N = 1 << _INDEX_BITS
"""Largest N: message indices ``i < 2^ℓ`` must fit the 16-bit index field of the tweak."""


def _ell(N: int) -> int:
    return max(1, (N - 1).bit_length())


def check_parameters(N: int, L: int) -> None:
    """Refuse ``(N, L)`` whose tweak fields would overlap (``ValueError``, before any message).

    The high tweak word of ``F(K_j^{i_j}, (t, i))``, output block ``b``, is
    ``tw ⊕ (j·nb + b) << 16 ⊕ i`` (``nb = ⌈L/16⌉``). Distinct ``(j, b, i)`` give
    distinct tweaks — which the TCCR security argument needs — only while
    ``i < 2^ℓ ≤ 2^16`` and ``ℓ·nb ≤ 2^48``; beyond that two pads of one key
    would repeat. Both sides call this with the same public ``N``, ``L``.
    """
    if N > MAX_N:
        raise ValueError(
            f"1-of-N OT with N = {N} is not supported: message indices need {_ell(N)} bits but the tweak "
            f"holds {_INDEX_BITS} (N ≤ {MAX_N}); split a larger choice into digits of several OTs"
        )
    nb = -(-L // 16)
    if _ell(N) * nb > 1 << _KEY_BLOCK_BITS:
        raise ValueError(
            f"1-of-N OT with {L}-byte messages is not supported: ℓ·⌈L/16⌉ = {_ell(N) * nb} tweak blocks "
            f"exceed the 2^{_KEY_BLOCK_BITS} of the tweak's key/block field"
        )


def _check_bits(bits, L: int) -> int | None:
    if bits is None:
        return None
    bits = int(bits)
    if not 1 <= bits <= 8 or L != 1:
        raise ValueError("bits must be 1..8 and requires msg_len == 1")
    return bits


def _params(n: int, N: int, L: int, bits: int | None) -> dict:
    return {"kind": "1-of-N/naor-pinkas", "transfers": n, "N": N, "L": L, "bits": bits}


def _tweak_hi(tw: int, j: int, b: int, nb: int, i) -> np.ndarray:
    """High tweak word of F(K_j^{i_j}, (t, i)), output block b: distinct per (j, b, i) for one key."""
    return np.uint64(tw ^ (((j * nb + b) << 16) & _M64)) ^ np.asarray(i, np.uint64)


def _sender_pads(P: np.ndarray, t0: int, ell: int, nb: int, tw: int) -> np.ndarray:
    """Pads of all 2^ℓ messages of m transfers: ``(2^ℓ, m, 16·nb)``, row i = ⊕_j F(K_j^{i_j}, (t, i)).

    ``P[v, j, t] = π(K_j^v)`` of transfer ``t0 + t`` (``(2, ℓ, m, 16)``). With
    ``F(K, i) = π(π(K) ⊕ i) ⊕ π(K)`` (GKWY20 TCCR), the pad is
    ``⊕_j π(π(K_j^{i_j}) ⊕ i_{t,i,j}) ⊕ S_i`` with ``S_i = ⊕_j π(K_j^{i_j})``.
    Laid out message-major so every numpy loop runs over m contiguous blocks.
    """
    m = P.shape[2]
    Np = 1 << ell
    # tweak low word = global transfer index, the same for every key position and message
    Q = P.copy()
    Q.view(np.uint64)[..., 0] ^= np.arange(t0, t0 + m, dtype=np.uint64)
    acc = np.empty((Np, m, nb * 16), np.uint8)
    # S_i by doubling: rows [2^j, 2^{j+1}) = rows [0, 2^j) ⊕ π(K_j^1); rows [0, 2^j) ⊕= π(K_j^0)
    S = np.empty((Np, m, 16), np.uint8)
    S[0] = P[0, 0]
    S[1] = P[1, 0]
    for j in range(1, ell):
        half = 1 << j
        np.bitwise_xor(S[:half], P[1, j], out=S[half : 2 * half])
        S[:half] ^= P[0, j]
    y = np.empty((Np, m, 16), np.uint8)
    for j in range(ell):
        yv = y.reshape(Np >> (j + 1), 2, 1 << j, m, 16)  # i = (a, v = bit j of i, low bits)
        yv[:, 0] = Q[0, j]
        yv[:, 1] = Q[1, j]
        for b in range(nb):
            if b:
                yv[:, 0] = Q[0, j]
                yv[:, 1] = Q[1, j]
            y.view(np.uint64)[:, :, 1] ^= _tweak_hi(tw, j, b, nb, np.arange(Np))[:, None]
            h = aes_fixed(y.reshape(-1, 16)).reshape(Np, m, 16)
            dst = acc[:, :, 16 * b : 16 * b + 16]
            if j == 0:
                np.bitwise_xor(h, S, out=dst)
            else:
                dst ^= h
    return acc


def _receiver_pad(P: np.ndarray, t0: int, c: np.ndarray, ell: int, nb: int, tw: int) -> np.ndarray:
    """The pad of the chosen message: ``(m, 16·nb)``, ⊕_j F(K_j^{c_j}, (t, c)); ``P[j, t] = π(K_j^{c_j})``."""
    m = P.shape[1]
    acc = np.zeros((m, nb * 16), np.uint8)
    cu = c.astype(np.uint64)
    for j in range(ell):
        for b in range(nb):
            y = P[j].copy()
            yw = y.view(np.uint64)
            yw[:, 0] ^= np.arange(t0, t0 + m, dtype=np.uint64)
            yw[:, 1] ^= _tweak_hi(tw, j, b, nb, cu)
            h = aes_fixed(y)
            h ^= P[j]
            acc[:, 16 * b : 16 * b + 16] ^= h
    return acc


async def ot_1_of_n_send(ch: Channel, peer: str, messages: np.ndarray, *, tag: str, bits: int | None = None) -> None:
    """Sender of ``n`` 1-out-of-N OTs (Naor–Pinkas 1999 from ⌈log2 N⌉ IKNP random OTs per transfer).

    ``messages``: ``(n, N, L) uint8``; the receiver gets ``messages[t, c_t]``.
    ``bits`` (1..8, with ``L == 1``): every message is a value below
    ``2**bits`` and travels as ``bits`` bits; both sides must pass the same.
    Reveals (semi-honest): to the receiver only ``messages[t, c_t]``; nothing
    about the choices to the sender. Public: ``n``, ``N``, ``L``, ``bits``, tag.
    """
    msgs = np.asarray(messages)
    if msgs.ndim != 3 or msgs.shape[1] < 1 or msgs.shape[2] < 1:
        raise ValueError("messages must be (n, N, L) with N ≥ 1 and L ≥ 1")
    msgs = msgs.astype(np.uint8, copy=False)
    n, N, L = msgs.shape
    check_parameters(N, L)
    bits = _check_bits(bits, L)
    if bits is not None and msgs.size and int(msgs.max()) >> bits:
        raise ValueError(f"messages must be below 2**{bits} when bits={bits}")
    ell = _ell(N)
    nb = -(-L // 16)
    tw = tweak64(tag, "1-of-N")
    chunk = max(1, _CHUNK_BLOCKS >> ell)
    async for lo, hi, a, b in random_ot_send_slabs(
        ch, peer, n * ell, tag=tag, params=_params(n, N, L, bits), slab=_slab(ell)
    ):
        t0, t1 = lo // ell, hi // ell
        # P[v, j, t] = π(K_j^v) for transfer t (random-OT keys are laid out transfer-major, ℓ per transfer)
        K = np.stack([a.reshape(t1 - t0, ell, 16), b.reshape(t1 - t0, ell, 16)]).transpose(0, 2, 1, 3)
        P = aes_fixed(np.ascontiguousarray(K).reshape(-1, 16)).reshape(2, ell, t1 - t0, 16)
        y = np.empty((t1 - t0, N, L), np.uint8)
        for c0 in range(0, t1 - t0, chunk):  # cache-sized chunks of transfers
            c1 = min(t1 - t0, c0 + chunk)
            pads = _sender_pads(np.ascontiguousarray(P[:, :, c0:c1]), t0 + c0, ell, nb, tw)
            np.bitwise_xor(pads[:N, :, :L].transpose(1, 0, 2), msgs[t0 + c0 : t0 + c1], out=y[c0:c1])
        if bits is None:
            await ch.send(peer, f"{tag}/y", pack_arrays(y))
        else:
            m = t1 - t0
            v = y[:, :, 0] & np.uint8((1 << bits) - 1)
            vb = np.unpackbits(v[:, :, None], axis=2, count=bits, bitorder="little")
            await ch.send(
                peer, f"{tag}/y", pack_arrays(np.packbits(vb.reshape(m, N * bits), axis=1, bitorder="little"))
            )


def _slab(ell: int) -> int:
    return ell * max(1, SLAB // ell)


async def ot_1_of_n_recv(
    ch: Channel, peer: str, choices, N: int, msg_len: int, *, tag: str, bits: int | None = None
) -> np.ndarray:
    """Receiver of 1-out-of-N OTs (Naor–Pinkas 1999 over IKNP); returns ``(n, msg_len) uint8``.

    ``choices``: ``(n,)`` integers in ``[0, N)``; row ``t`` of the result is the
    sender's ``messages[t, choices[t]]``. ``bits`` as for :func:`ot_1_of_n_send`.
    Reveals (semi-honest): nothing about ``choices`` to the sender; only the
    chosen messages to the receiver. Public: ``n``, ``N``, ``L``, ``bits``, tag.
    """
    c = np.asarray(choices)
    if c.ndim != 1 or (c.size and not np.issubdtype(c.dtype, np.integer)):
        raise ValueError("choices must be a 1-D integer array")
    N, L = int(N), int(msg_len)
    if N < 1 or L < 1:
        raise ValueError("N and msg_len must be ≥ 1")
    check_parameters(N, L)
    if c.size and (c.min() < 0 or c.max() >= N):
        raise ValueError(f"choices must be in [0, {N})")
    bits = _check_bits(bits, L)
    c = c.astype(np.int64)
    n = c.size
    ell = _ell(N)
    nb = -(-L // 16)
    tw = tweak64(tag, "1-of-N")
    cbits = ((c[:, None] >> np.arange(ell)) & 1).astype(bool).reshape(-1)  # (n·ℓ,), ℓ bits per transfer
    out = np.empty((n, L), np.uint8)
    slabs = []
    async for lo, hi, h in random_ot_recv_slabs(
        ch, peer, cbits, tag=tag, params=_params(n, N, L, bits), slab=_slab(ell)
    ):
        t0, t1 = lo // ell, hi // ell
        P = aes_fixed(h).reshape(t1 - t0, ell, 16).transpose(1, 0, 2)  # P[j, t] = π(K_j^{c_j})
        out[t0:t1] = _receiver_pad(np.ascontiguousarray(P), t0, c[t0:t1], ell, nb, tw)[:, :L]
        slabs.append((t0, t1))
    rows = np.arange(n)
    for t0, t1 in slabs:
        m = t1 - t0
        y = unpack_arrays(await ch.recv(peer, f"{tag}/y"))
        if bits is None:
            if len(y) != 1 or y[0].shape != (m, N, L):
                raise ProtocolError(f"1-of-N OT {tag!r}: malformed message from {peer}")
            out[t0:t1] ^= y[0][rows[:m], c[t0:t1]]
        else:
            if len(y) != 1 or y[0].shape != (m, -(-N * bits // 8)):
                raise ProtocolError(f"1-of-N OT {tag!r}: malformed message from {peer}")
            vb = np.unpackbits(y[0], axis=1, count=N * bits, bitorder="little").reshape(m, N, bits)
            v = np.packbits(vb[rows[:m], c[t0:t1]], axis=1, bitorder="little")  # (m, 1)
            out[t0:t1] ^= v
            out[t0:t1] &= np.uint8((1 << bits) - 1)
    return out
