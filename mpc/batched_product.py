"""Additive shares of Σ_t Π_p v_p[t] for many candidates, with OTs batched across partners.

Model and assumptions
---------------------
Semi-honest parties; ``ch.parties`` fixes the order. Every party holds a list
of 0/1 *part* columns over N transactions (packed bits); candidate k names,
for each owner p, one of p's parts (``part_of[k, p]``, −1 for non-owners —
public, identical on every party). The support of candidate k is

    count_k = Σ_t Π_{p owner of k} part_p[part_of[k, p]][t].

Construction
------------
Gilboa's multiplication by a bit through correlated OT ("Two party RSA key
generation", CRYPTO 1999), folded over the owners (owner j multiplies the shared
product of owners 1..j−1 by its part), with two changes that cut the traffic of the
first version of this protocol (one OT per candidate, 64-bit shares):

* **One OT per (transaction, newcomer part), not per candidate.** Every
  candidate that uses the same part of the newcomer o_j takes its bit as the
  OT choice, so one random OT serves all of them — SoftSpoken OT extension
  (L. Roy, "SoftSpokenOT: quieter OT extension from small-field silent VOLE in the
  minicrypt model", CRYPTO 2022; :func:`mpc.softspoken.random_ot_send`, k = :data:`OT_K`,
  128/k bits of extension traffic per OT instead of IKNP's 128): its two keys
  are stretched by the TCCR hash (C. Guo, J. Katz, X. Wang, Y. Yu, "Efficient and secure
  multiparty computation from fixed-key block ciphers", IEEE S&P 2020) into one pad per
  candidate, and the holder sends one correction per candidate,
  τ = H(k0) − H(k1) + s (mod 2^k). The 128-bit OT-extension column is paid
  once per part instead of once per candidate ("batching across partners").
* **Shares in Z_2^k** with k = ``ring_bits`` just above log2 N, so a
  correction is k bits (sent in ⌈k/8⌉ bytes), not 64. Locally the shares
  live in 16-, 32- or 64-bit lanes (the narrowest w ≥ k): arithmetic mod 2^w
  is exact mod 2^k, and a TCCR block yields 128/w pads.

Fold step: holders h (owners already folded) hold s_h[c, t] with
Σ_h s_h = Π so far; newcomer o with bit y[c, t]: each holder keeps −H(k0),
o receives H(k_y) + y·τ = H(k0) + y·s_h. After the last owner every party
sums its shares over t; non-owners hold 0. Single-owner candidates are the
owner's local count.

Work is streamed: transactions in chunks and candidates in batches, so
memory stays near ``budget_bytes`` whatever N and K are.

Leakage: nothing. Every received value is masked by a fresh OT pad; the
output stays shared (reveal or threshold it with :mod:`mpc.secure_sum`).
Public: N, K, the owner and part structure, k.
"""

from __future__ import annotations

import asyncio
import hashlib

import numpy as np

from .channel import Channel, agree, pack_arrays, unpack_arrays
from .crypto_hash import tccr_hash, tweak64
from .errors import InputMismatchError, ProtocolError
from .softspoken import DEFAULT_K, random_ot_recv, random_ot_send

__all__ = ["batched_count_shares", "ring_bits_for", "DEFAULT_BUDGET", "OT_K"]

_U64 = np.uint64
OT_K = DEFAULT_K  #: SoftSpoken parameter: 128/k bits of OT-extension traffic per OT
DEFAULT_BUDGET = 96 << 20  #: working-memory target of one fold step (bytes)
_BYTES_PER_CELL = 48  # per (candidate, transaction) cell in one fold step: keys, pads, shares


def ring_bits_for(n_transactions: int) -> int:
    """k with N < 2^(k−2): shares of counts in Z_2^k, thresholds with bound 2^(k−1)."""
    return max(3, int(n_transactions).bit_length() + 2)


def _bits(cols: np.ndarray, rows: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``(len(rows), hi−lo)`` uint8 0/1 of packed columns ``rows`` over transactions lo..hi−1 (lo % 64 == 0)."""
    part = np.ascontiguousarray(cols[rows][:, lo // 64 : -(-hi // 64)])
    return np.unpackbits(part.view(np.uint8), axis=1, bitorder="little")[:, : hi - lo]


def _lane(ring_bits: int) -> type[np.unsignedinteger]:
    """The narrowest unsigned dtype holding k bits: arithmetic wraps mod 2^w, which is exact mod 2^k."""
    return np.uint16 if ring_bits <= 16 else np.uint32 if ring_bits <= 32 else np.uint64


def _pack_k(v: np.ndarray, nbytes: int) -> np.ndarray:
    """The low ``nbytes`` bytes of every entry of ``v`` (little-endian lanes), as one flat uint8 array."""
    v = np.ascontiguousarray(v).reshape(-1)
    if nbytes == v.itemsize:
        return v.view(np.uint8)
    return np.ascontiguousarray(v.view(np.uint8).reshape(-1, v.itemsize)[:, :nbytes]).reshape(-1)


def _unpack_k(b: np.ndarray, n: int, nbytes: int, lane) -> np.ndarray:
    width = np.dtype(lane).itemsize
    if nbytes == width:
        return b.view(lane).reshape(n).copy()
    out = np.zeros((n, width), np.uint8)
    out[:, :nbytes] = b.reshape(n, nbytes)
    return out.view(lane).reshape(n)


def _groups(part_of: np.ndarray) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """Candidates grouped by their owner tuple, in a deterministic order."""
    owners = part_of >= 0
    if owners.shape[0] == 0:
        return []
    keys, inv = np.unique(np.packbits(owners, axis=1, bitorder="little"), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    out = []
    for g in range(keys.shape[0]):
        rows = np.flatnonzero(inv == g)
        out.append((tuple(int(p) for p in np.flatnonzero(owners[rows[0]])), rows))
    return out


class _PadPlan:
    """Which hash block and lane gives each cell (c, t) its pad.

    The candidates sharing newcomer part u get ranks 0..L_u−1; one TCCR block
    (128 bits) holds 128/w pads of w-bit lanes (w = 16, 32 or 64 ≥ k), so rank
    r uses lane r mod (128/w) of block r // (128/w) of OT (u, t) — one
    AES-based hash per block of candidates, not per candidate.
    """

    def __init__(self, inv: np.ndarray, n_parts: int, T: int, lane):
        self.lane = np.dtype(lane)
        self.per = per = 16 // self.lane.itemsize
        order = np.argsort(inv, kind="stable")
        counts = np.bincount(inv, minlength=n_parts)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.empty(inv.size, np.int64)
        rank[order] = np.arange(inv.size) - np.repeat(starts, counts)
        blocks = -(-counts // per)  # hash blocks per part
        block_start = np.concatenate([[0], np.cumsum(blocks)[:-1]])
        self.n_blocks = int(blocks.sum())
        self.part_of_block = np.repeat(np.arange(n_parts), blocks)
        self.row = (block_start[inv] + rank // per) * per + rank % per  # (K,) row of the (blocks·per, T) pad table
        self.T = T

    def pads(self, keys: np.ndarray, hi_tweak: int) -> np.ndarray:
        """``(K, T)`` pads (lanes) from the ``(n_parts·T, 16)`` OT keys (key of OT (u, t) at row u·T + t)."""
        T = self.T
        rows = (self.part_of_block[:, None] * T + np.arange(T)[None, :]).reshape(-1)
        h = tccr_hash(keys[rows], hi_tweak, 0).view(self.lane).reshape(self.n_blocks, T, self.per)
        table = np.ascontiguousarray(h.transpose(0, 2, 1)).reshape(self.n_blocks * self.per, T)
        return table[self.row]


async def _fold_holder(ch, newcomer, s, plan, n_parts, T, tag, nbytes):
    """Holder side of one fold over a chunk: returns the new share (K_b, T) (lanes, mod 2^w)."""
    m0, m1 = await random_ot_send(ch, newcomer, n_parts * T, tag=f"{tag}/ot", k=OT_K)
    tw = tweak64(tag, "pad")
    r0 = plan.pads(m0, tw)
    tau = r0 - plan.pads(m1, tw)
    tau += s
    await ch.send(newcomer, f"{tag}/tau", pack_arrays(_pack_k(tau, nbytes)))
    np.negative(r0, out=r0)
    return r0


async def _fold_newcomer(ch, holder, y, inv, plan, T, tag, nbytes):
    """Newcomer side: y is (n_parts, T) choice bits; returns its share from this holder (K_b, T)."""
    K = inv.size
    k = await random_ot_recv(ch, holder, y.reshape(-1), tag=f"{tag}/ot", k=OT_K)
    r = plan.pads(k, tweak64(tag, "pad"))
    (b,) = unpack_arrays(await ch.recv(holder, f"{tag}/tau"))
    if b.dtype != np.uint8 or b.size != K * T * nbytes:
        raise ProtocolError(f"batched product {tag!r}: malformed correction from {holder}")
    tau = _unpack_k(b, K * T, nbytes, plan.lane).reshape(K, T)
    tau *= y[inv]
    r += tau
    return r


async def batched_count_shares(
    ch: Channel,
    parts: np.ndarray,
    part_of: np.ndarray,
    *,
    n_transactions: int,
    ring_bits: int,
    tag: str,
    budget_bytes: int = DEFAULT_BUDGET,
) -> np.ndarray:
    """This party's ``(K,)`` uint64 share (mod 2^``ring_bits``) of every candidate's support.

    ``parts``: this party's packed part columns ``(m, ⌈N/64⌉)`` uint64;
    ``part_of``: the public ``(K, P)`` int matrix (column p: index into party
    p's parts, −1 where p is not an owner). Shares of all parties add up to the
    counts mod 2^k. Construction, cost and leakage: module docstring.
    """
    N = int(n_transactions)
    W = -(-N // 64)
    part_of = np.asarray(part_of, dtype=np.int64)
    P = len(ch.parties)
    if part_of.ndim != 2 or part_of.shape[1] != P:
        raise InputMismatchError(f"part_of must be a (K, {P}) matrix, got {part_of.shape}")
    cols = np.ascontiguousarray(parts, dtype=_U64).reshape(-1, W) if N else np.zeros((0, 0), _U64)
    me = ch.parties.index(ch.me)
    mine = part_of[:, me]
    if mine.size and mine.max() >= cols.shape[0]:
        raise InputMismatchError("part_of names a part this party does not have")
    if not (3 <= ring_bits <= 64):
        raise ValueError(f"ring_bits must be in 3..64, got {ring_bits}")
    await agree(
        ch,
        f"{tag}/shape",
        candidates=int(part_of.shape[0]),
        transactions=N,
        ring_bits=int(ring_bits),
        parts=hashlib.sha256(part_of.tobytes()).hexdigest(),
    )
    mask = _U64((1 << ring_bits) - 1) if ring_bits < 64 else _U64(0xFFFFFFFFFFFFFFFF)
    nbytes = -(-ring_bits // 8)
    lane = _lane(ring_bits)
    out = np.zeros(part_of.shape[0], _U64)
    for gi, (who, rows) in enumerate(_groups(part_of)):
        if me not in who:
            continue
        # fold order: the owner with most distinct parts holds first; later newcomers (more holders
        # each) have fewer parts, so fewer OTs (public: depends on part_of only)
        who = tuple(sorted(who, key=lambda p: (-np.unique(part_of[rows, p]).size, p)))
        if len(who) == 1:
            out[rows] = np.bitwise_count(cols[mine[rows]]).sum(axis=1, dtype=_U64) & mask
            continue
        cells = max(1, budget_bytes // _BYTES_PER_CELL)
        kb = max(1, min(rows.size, cells // 64))
        for bi, b0 in enumerate(range(0, rows.size, kb)):
            brow = rows[b0 : b0 + kb]
            T = max(64, (cells // brow.size) // 64 * 64)
            acc = np.zeros(brow.size, _U64)
            for ci, lo in enumerate(range(0, N, T)):
                hi = min(N, lo + T)
                acc += await _fold_chunk(ch, cols, part_of[brow], who, lo, hi, f"{tag}/g{gi}/b{bi}/c{ci}", nbytes, lane)
            out[brow] = acc & mask
    return out


async def _fold_chunk(ch, cols, pof, who, lo, hi, tag, nbytes, lane) -> np.ndarray:
    """All folds of one candidate batch over transactions lo..hi−1; returns this party's summed share."""
    me = ch.parties.index(ch.me)
    T = hi - lo
    names = [ch.parties[p] for p in who]
    share = _bits(cols, pof[:, me], lo, hi).astype(lane) if me == who[0] else None
    for j in range(1, len(who)):
        holders, newcomer = names[:j], names[j]
        uniq, inv = np.unique(pof[:, who[j]], return_inverse=True)
        inv = inv.reshape(-1)
        ftag = f"{tag}/f{j}"
        plan = _PadPlan(inv, uniq.size, T, lane)
        if ch.me in holders:
            share = await _fold_holder(ch, newcomer, share, plan, uniq.size, T, f"{ftag}/{ch.me}", nbytes)
        elif ch.me == newcomer:
            y = _bits(cols, uniq, lo, hi)
            got = await asyncio.gather(
                *(_fold_newcomer(ch, h, y, inv, plan, T, f"{ftag}/{h}", nbytes) for h in holders)
            )
            share = got[0]
            for g in got[1:]:
                share += g
    assert share is not None
    return share.sum(axis=1, dtype=_U64)
