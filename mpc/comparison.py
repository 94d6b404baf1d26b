"""Two-party secure comparison (the millionaires' problem) from oblivious transfer.

Model and assumptions
---------------------
* Two semi-honest parties, ``role`` 0 and ``role`` 1, of a session (others
  may be present and are not involved). Party 0 holds v_0, party 1 holds v_1:
  arrays of n unsigned ``bits``-bit integers (or signed, ``signed=True``).
* Outputs are XOR shares (uint8 0/1 arrays) of the bit [v_0 < v_1]: each share
  alone is uniformly random; :func:`compare_reveal` opens them.
* Security is that of the OT functions of :mod:`mpc.ot_extension` and
  :mod:`mpc.ot_1_of_n`; given ideal OTs and triples the parties' views are
  simulatable from their input and output (semi-honest), i.e. nothing but
  the output bit is revealed, not even equality.

Construction (Rathee et al., "CrypTFlow2: Practical 2-Party Secure Inference",
CCS 2020, §3 millionaires' protocol; J. Garay, B. Schoenmakers, J. Villegas,
"Practical and secure solutions for integer comparison", PKC 2007, for the
block tree)
-----------------------------------------------------------------------------
1. Split each ℓ-bit value into q = ⌈ℓ/4⌉ blocks of m = 4 bits, most
   significant first: v = Σ_j 16^{q−1−j} v[j].
2. Leaves: per block, party 0 draws random bits (α_j, β_j) and offers the
   1-out-of-16 OT table  T_j[k] = (α_j ⊕ [v_0[j] < k]) | (β_j ⊕ [v_0[j] = k]) << 1,
   party 1 selects k = v_1[j]. Now α ⊕ α' = lt_j = [v_0[j] < v_1[j]] and
   β ⊕ β' = eq_j = [v_0[j] = v_1[j]] are XOR-shared.
3. Tree: adjacent nodes (hi, lo) merge as
       lt = lt_hi ⊕ (eq_hi ∧ lt_lo),   eq = eq_hi ∧ eq_lo
   (⊕ is an OR here: the two terms exclude each other), ⌈log₂ q⌉ rounds; the
   lowest node's eq is never needed and not computed. The root's lt is
   [v_0 < v_1].
4. AND on XOR shares with a Beaver bit triple c = a ∧ b (D. Beaver, "Efficient
   multiparty protocols using circuit randomization", CRYPTO 1991): open d = x ⊕ a,
   e = y ⊕ b; z = c ⊕ d∧b ⊕ e∧a ⊕ (party 0 only) d∧e.
5. Triples from two random bit OTs (one per direction): from a ROT (r0, r1)
   → r_b, set a = r0 ⊕ r1, u = r0, so r_b = u ⊕ a∧b; the cross terms
   a_0 b_1 and a_1 b_0 are then XOR-shared (N. Gilboa, "Two party RSA key
   generation", CRYPTO 1999 / IKNP-style).

Everything is vectorized: per chunk of elements there is one leaf OT batch,
one triple batch (concurrent with it) and one message per tree level.
Inputs are processed in chunks of 2^16 elements to bound memory.

:func:`msb_of_shares` gives the "DReLU" of CrypTFlow2: for additive shares
a_0 + a_1 in Z_2^k, MSB = MSB(a_0) ⊕ MSB(a_1) ⊕ carry, with
carry = [low(a_0) + low(a_1) ≥ 2^(k−1)] = [2^(k−1) − 1 − low(a_0) < low(a_1)],
one (k−1)-bit millionaires' run.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import cast

import numpy as np

from .channel import Channel, agree, pack_arrays, unpack_arrays
from .errors import ProtocolError
from .ints import integer_array
from .keys import pair_channel, prg_bytes, random_bits
from .multiparty_bits import tree_and_count
from .ot_1_of_n import ot_1_of_n_recv, ot_1_of_n_send
from .ot_extension import random_bit_ot_recv, random_bit_ot_send

__all__ = ["millionaires", "msb_of_shares", "compare_reveal", "bit_triples", "and_shares", "BLOCK_BITS"]

BLOCK_BITS = 4  # m: 1-out-of-2^m OT per block
_N = 1 << BLOCK_BITS
CHUNK = 1 << 16  # elements per leaf-OT batch (16 KiB of table per 1k elements and block)
_U64 = np.uint64


# --------------------------------------------------------------------------- checks
def _check_role(role: int) -> int:
    if role not in (0, 1):
        raise ValueError(f"role must be 0 or 1, got {role!r}")
    return role


def _as_unsigned(v, bits: int, signed: bool) -> np.ndarray:
    """Flat uint64 array of ``bits``-bit values; signed inputs shifted by 2^(bits−1) (order-preserving)."""
    if not (isinstance(bits, (int, np.integer)) and 1 <= bits <= 64):
        raise ValueError(f"bits must be an integer in 1..64, got {bits!r}")
    a = integer_array(v, "comparisons").reshape(-1)
    if signed:
        if a.dtype.kind == "u" and a.size and a.max() > np.iinfo(np.int64).max:
            raise ValueError("signed comparison inputs must fit in int64")
        s = a.astype(np.int64)
        half = 1 << (bits - 1)
        if a.size and (s.min() < -half or s.max() > half - 1):
            raise ValueError(f"signed inputs must lie in [-2^{bits - 1}, 2^{bits - 1})")
        u = s.view(_U64) + _U64(half)  # v + 2^(ℓ−1) mod 2^64, then keep ℓ bits
        return u & _U64((1 << bits) - 1) if bits < 64 else u
    if a.dtype.kind == "i" and a.size and a.min() < 0:
        raise ValueError("unsigned comparison inputs must be ≥ 0 (pass signed=True for signed values)")
    u = a.astype(_U64)
    if bits < 64 and u.size and (u >> _U64(bits)).any():
        raise ValueError(f"comparison inputs must be < 2^{bits}")
    return u


def _unpack_one(payload: bytes, dtype, shape, frm: str) -> np.ndarray:
    (a,) = unpack_arrays(payload)
    if a.dtype != dtype or a.shape != tuple(shape):
        raise ProtocolError(f"{frm} sent {a.dtype}{list(a.shape)} where {np.dtype(dtype)}{list(shape)} was expected")
    return a


async def _exchange(ch: Channel, peer: str, tag: str, payload: bytes) -> bytes:
    """Send ``payload`` to ``peer`` and receive its message with the same tag, concurrently."""
    _, got = await asyncio.gather(ch.send(peer, tag, payload), ch.recv(peer, tag))
    return got


# --------------------------------------------------------------------------- AND gates
async def bit_triples(ch: Channel, peer: str, n: int, *, role: int, tag: str):
    """``n`` Beaver bit triples, XOR-shared: (a, b, c) uint8 with c₀⊕c₁ = (a₀⊕a₁)∧(b₀⊕b₁).

    Two batches of random bit OTs, one in each direction (run concurrently):
    as ROT sender a = r0 ⊕ r1, u = r0; as receiver with random choice b, v = r_b.
    c = a∧b ⊕ u ⊕ v, since u_i ⊕ v_j = a_i ∧ b_j across the pair.
    """
    _check_role(role)
    if n == 0:
        z = np.zeros(0, np.uint8)
        return z, z.copy(), z.copy()
    b = random_bits(n)
    send = random_bit_ot_send(ch, peer, n, tag=f"{tag}/rot{role}")
    recv = random_bit_ot_recv(ch, peer, b, tag=f"{tag}/rot{1 - role}")
    (r0, r1), v = await asyncio.gather(send, recv)
    r0 = np.asarray(r0, np.uint8)
    a = r0 ^ np.asarray(r1, np.uint8)
    c = (a & b) ^ r0 ^ np.asarray(v, np.uint8)
    return a, b, c


async def and_shares(ch: Channel, peer: str, x: np.ndarray, y: np.ndarray, *, role: int, tag: str, triples=None):
    """XOR share of x ∧ y from XOR shares ``x``, ``y`` (uint8 0/1, same length); one round.

    d = x ⊕ a, e = y ⊕ b are opened (bit-packed); z = c ⊕ d∧b ⊕ e∧a ⊕ [role 0] d∧e.
    ``triples`` (a, b, c) of at least len(x) triples, else fresh ones are made.
    """
    x = np.asarray(x, np.uint8).reshape(-1)
    y = np.asarray(y, np.uint8).reshape(-1)
    n = x.size
    if triples is None:
        triples = await bit_triples(ch, peer, n, role=role, tag=f"{tag}/triples")
    a, b, c = (t[:n] for t in triples)
    d, e = x ^ a, y ^ b
    mine = np.packbits(np.concatenate([d, e]))
    theirs = _unpack_one(await _exchange(ch, peer, tag, pack_arrays(mine)), np.uint8, mine.shape, peer)
    opened = np.unpackbits(theirs)[: 2 * n] ^ np.concatenate([d, e])
    d, e = opened[:n], opened[n:]
    z = c ^ (d & b) ^ (e & a)
    return z ^ (d & e) if role == 0 else z


# --------------------------------------------------------------------------- millionaires
def _blocks(u: np.ndarray, bits: int) -> np.ndarray:
    """(n, q) uint8 blocks of m bits, most significant first: v[j] = (v >> m(q−1−j)) & (2^m − 1)."""
    q = -(-bits // BLOCK_BITS)
    shifts = (BLOCK_BITS * np.arange(q - 1, -1, -1)).astype(_U64)
    return ((u[:, None] >> shifts[None, :]) & _U64(_N - 1)).astype(np.uint8)


async def _leaves(ch, peer, blk: np.ndarray, role: int, tag: str):
    """XOR shares of lt_j = [v_0[j] < v_1[j]] and eq_j = [v_0[j] = v_1[j]], each (n, q)."""
    n, q = blk.shape
    s: np.ndarray
    if role == 0:
        s = prg_bytes(os.urandom(16), n * q).reshape(n, q) & 3  # (α_j, β_j) as bits 0, 1
        k = np.arange(_N, dtype=np.uint8)
        lt = (blk[:, :, None] < k).view(np.uint8)
        eq = (blk[:, :, None] == k).view(np.uint8)
        table = (lt | (eq << 1)) ^ s[:, :, None]  # T_j[k] = (α ⊕ [x_j < k]) | (β ⊕ [x_j = k]) << 1
        await ot_1_of_n_send(ch, peer, table.reshape(n * q, _N, 1), tag=tag, bits=2)  # 2-bit messages
    else:
        got = await ot_1_of_n_recv(ch, peer, blk.reshape(-1), _N, 1, tag=tag, bits=2)
        s = np.asarray(got, np.uint8).reshape(n, q)
    return s & 1, (s >> 1) & 1


async def _tree(ch, peer, lt: np.ndarray, eq: np.ndarray, triples, role: int, tag: str) -> np.ndarray:
    """Fold (n, q) leaf shares to the root's lt share, one AND round per level."""
    n, k = lt.shape
    used, level = 0, 0
    while k > 1:
        p, odd = divmod(k, 2)
        ne = p if odd else p - 1  # pairs whose eq is needed: all but the lowest
        eq_hi, lt_lo, eq_lo = eq[:, 0 : 2 * p : 2], lt[:, 1 : 2 * p : 2], eq[:, 1 : 2 * p : 2]
        x = np.concatenate([eq_hi.reshape(-1), eq_hi[:, :ne].reshape(-1)])
        y = np.concatenate([lt_lo.reshape(-1), eq_lo[:, :ne].reshape(-1)])
        cnt = x.size
        tri = tuple(t[used : used + cnt] for t in triples)
        used += cnt
        z = await and_shares(ch, peer, x, y, role=role, tag=f"{tag}/l{level}", triples=tri)
        new_lt = lt[:, 0 : 2 * p : 2] ^ z[: n * p].reshape(n, p)  # lt = lt_hi ⊕ eq_hi ∧ lt_lo
        new_eq = np.zeros((n, p), np.uint8)
        new_eq[:, :ne] = z[n * p :].reshape(n, ne)  # eq = eq_hi ∧ eq_lo (lowest: unused)
        if odd:  # the lowest node passes up unchanged
            new_lt = np.concatenate([new_lt, lt[:, -1:]], axis=1)
            new_eq = np.concatenate([new_eq, eq[:, -1:]], axis=1)
        lt, eq, k, level = new_lt, new_eq, p + odd, level + 1
    return lt[:, 0].copy()


async def _lt_chunk(ch, peer, u: np.ndarray, bits: int, role: int, tag: str) -> np.ndarray:
    blk = _blocks(u, bits)
    n, q = blk.shape
    leaves = _leaves(ch, peer, blk, role, f"{tag}/leaves")
    triples = bit_triples(ch, peer, n * tree_and_count(q), role=role, tag=f"{tag}/triples")
    (lt, eq), tri = await asyncio.gather(leaves, triples)
    return await _tree(ch, peer, lt, eq, tri, role, f"{tag}/tree")


async def millionaires(
    ch: Channel, peer: str, v, *, bits: int, role: int, tag: str, signed: bool = False, check: bool = True
) -> np.ndarray:
    """XOR share (uint8 0/1, length n) of [v_0 < v_1] elementwise.

    ``role`` 0 holds v_0 (the 1-out-of-16 OT sender), ``role`` 1 holds v_1;
    ``peer`` is the other party. Values are ``bits``-bit unsigned, or signed
    two's-complement in [−2^(bits−1), 2^(bits−1)) with ``signed=True``.
    ``check=False`` skips the agreement on (n, bits, signed, roles) when the
    caller has already checked them. Reveals nothing (shares are uniform).
    """
    role = _check_role(role)
    u = _as_unsigned(v, bits, signed)
    if check:
        holder0 = ch.me if role == 0 else peer  # equal on both sides iff the roles differ
        await agree(pair_channel(ch, peer), tag, n=int(u.size), bits=int(bits), signed=bool(signed), role0=holder0)
    out = [np.zeros(0, np.uint8)]
    for i, start in enumerate(range(0, u.size, CHUNK)):
        out.append(await _lt_chunk(ch, peer, u[start : start + CHUNK], bits, role, f"{tag}/c{i}"))
    return np.concatenate(out)


async def msb_of_shares(
    ch: Channel, peer: str, a, *, role: int, tag: str, ring_bits: int = 64, check: bool = True
) -> np.ndarray:
    """XOR share of the MSB of a_0 + a_1 in Z_2^k (k = ``ring_bits``, 2..64) from additive shares ``a``.

    ``a`` is uint64/int64; only its low k bits are used, since reducing mod 2^k
    is a ring homomorphism. With h = 2^(k−1) and low(a) = a mod h:

        MSB(a_0 + a_1) = MSB(a_0) ⊕ MSB(a_1) ⊕ [h − 1 − low(a_0) < low(a_1)],

    the carry bit from :func:`millionaires` on k − 1 bits. For a shared signed
    value s with |s| < 2^(k−1), MSB = [s < 0] (CrypTFlow2's DReLU is its
    negation); a smaller k is proportionally cheaper.
    """
    role = _check_role(role)
    if not (isinstance(ring_bits, (int, np.integer)) and 2 <= ring_bits <= 64):
        raise ValueError(f"ring_bits must be an integer in 2..64, got {ring_bits!r}")
    arr = np.asarray(a)
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(_U64)
    if arr.dtype.kind not in "iu" or arr.dtype.itemsize != 8:
        raise TypeError(f"msb_of_shares needs uint64/int64 shares, got {arr.dtype}")
    s = np.ascontiguousarray(arr).reshape(-1).view(_U64)
    top = _U64(ring_bits - 1)
    h1 = _U64((1 << (ring_bits - 1)) - 1)  # h − 1
    low = s & h1
    mine = h1 - low if role == 0 else low
    carry = await millionaires(ch, peer, mine, bits=ring_bits - 1, role=role, tag=tag, check=check)
    return ((s >> top) & _U64(1)).astype(np.uint8) ^ carry


async def compare_reveal(
    ch: Channel,
    peer: str,
    v,
    *,
    bits: int,
    role: int,
    tag: str,
    signed: bool = False,
    reveal_to: Sequence[str] | str | None = None,
) -> np.ndarray | None:
    """[v_0 < v_1] elementwise (bool) to the parties in ``reveal_to`` (default: both).

    Runs :func:`millionaires`, then each party sends its share to the other
    if that one is to learn the result. A party not in ``reveal_to`` returns None.
    Reveals exactly the comparison bits to ``reveal_to``, nothing else.
    """
    targets = {ch.me, peer} if reveal_to is None else ({reveal_to} if isinstance(reveal_to, str) else set(reveal_to))
    if not targets or not targets <= {ch.me, peer}:
        raise ValueError(f"reveal_to must name {ch.me!r} and/or {peer!r}, got {reveal_to!r}")
    role = _check_role(role)
    u = _as_unsigned(v, bits, signed)
    holder0 = ch.me if role == 0 else peer
    await agree(
        pair_channel(ch, peer),
        tag,
        n=int(u.size),
        bits=int(bits),
        signed=bool(signed),
        role0=holder0,
        reveal_to=sorted(targets),
    )
    share = await millionaires(ch, peer, u, bits=bits, role=role, tag=tag, check=False)
    packed = np.packbits(share)
    sends = [ch.send(peer, f"{tag}/open", pack_arrays(packed))] if peer in targets else []
    if ch.me in targets:
        got, *_ = await asyncio.gather(ch.recv(peer, f"{tag}/open"), *sends)
        theirs = np.unpackbits(_unpack_one(cast(bytes, got), np.uint8, packed.shape, peer))[: u.size]
        return (share ^ theirs).astype(bool)
    await asyncio.gather(*sends)
    return None
