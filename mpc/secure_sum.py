"""Secure sum of N ≥ 2 parties' integer vectors over Z_2^64, and its threshold form.

Model and assumptions
---------------------
* Semi-honest (honest-but-curious) parties over authenticated, private
  channels (mTLS); every party of ``ch.parties`` takes part.
* Inputs are integer arrays of one agreed shape (checked with
  :func:`mpc.channel.agree`; a mismatch raises :class:`InputMismatchError` on
  every party). Arithmetic is in the ring Z_2^64 (numpy uint64 wrap-around);
  int64 inputs are read as their two's-complement residues.

Construction (pairwise masks that cancel)
-----------------------------------------
Each pair {i, j} holds a session seed s_ij (X25519 agreement, :mod:`mpc.keys`).
For one run with tag τ, party i masks its input

    y_i = x_i + Σ_{j after i} PRG(s_ij, τ) − Σ_{j before i} PRG(s_ij, τ)   (mod 2^64)

so Σ_i y_i = Σ_i x_i. The parties of ``reveal_to`` each aggregate one
contiguous segment: every party sends y_i[seg_p] to the segment's owner p,
who adds them and sends the segment total to the rest of ``reveal_to`` — one
upload round and one exchange round, one AES-CTR pass per pair, and the
traffic spread evenly instead of through a single aggregator.
This is the pairwise masking of Bonawitz et al., "Practical Secure Aggregation
for Privacy-Preserving Machine Learning" (CCS 2017), without its dropout
recovery, as a one-round replacement for the ring-passing secure sum of
Clifton et al., "Tools for Privacy Preserving Distributed Data Mining"
(SIGKDD Explorations 4(2), 2002).

Leakage: the parties in ``reveal_to`` learn the sum (mod 2^64), others learn
nothing (only parties of ``reveal_to`` aggregate, so no one else sees any
part of the sum). Each y_i is masked by PRG streams shared with every other
party, so any coalition of up to N − 2 parties sees uniformly random values
besides the sum; N − 1 colluding parties learn the last input from the sum,
which is inherent to the functionality. Public: N, the shape, ``reveal_to``.

:func:`secure_sum_shares` leaves the sum as two additive shares (each alone
uniform) and :func:`secure_sum_threshold` compares those shares with a public
threshold by a secure comparison (:mod:`mpc.comparison`), revealing only the
bit Σ_i x_i ≥ t — the "secure sum with threshold" of Kantarcioglu and
Clifton, "Privacy-Preserving Distributed Mining of Association Rules on
Horizontally Partitioned Data" (IEEE TKDE 16(9), 2004).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence

import numpy as np

from .channel import Channel, agree, broadcast, gather_from, pack_arrays, send_array, unpack_arrays
from .errors import ProtocolError
from .ints import integer_array
from .keys import claim_tag, pairwise_seeds, prg_uint64, step_key

__all__ = ["secure_sum", "secure_sum_shares", "secure_sum_threshold"]

_U64 = np.uint64


# --------------------------------------------------------------------------- ring helpers
def _as_ring(x) -> tuple[np.ndarray, np.dtype, tuple]:
    """Flatten an integer array to its uint64 residues; return (flat, out dtype, shape)."""
    a = integer_array(x, "secure sums")
    out = np.dtype(np.int64) if a.dtype.kind == "i" else np.dtype(_U64)
    flat = np.ascontiguousarray(a, dtype=out).reshape(-1).view(_U64)
    return flat, out, a.shape


def _check_received(a: np.ndarray, size: int, frm: str) -> np.ndarray:
    if a.dtype != _U64 or a.shape != (size,):
        raise ProtocolError(f"{frm} sent a {a.dtype}{list(a.shape)} array where uint64[{size}] was expected")
    return a


def _ordered(ch: Channel, names: Sequence[str] | None, what: str) -> tuple[str, ...]:
    """``names`` (default: all parties) in session order, validated."""
    if names is None:
        return tuple(ch.parties)
    if isinstance(names, str):
        names = [names]
    unknown = set(names) - set(ch.parties)
    if unknown or not names:
        raise ValueError(f"{what} must name parties of the session {list(ch.parties)}, got {list(names)}")
    return tuple(p for p in ch.parties if p in set(names))


async def _masked(ch: Channel, x: np.ndarray, ftag: str) -> np.ndarray:
    """y = x + Σ_{j after me} PRG(s_ij, τ) − Σ_{j before me} PRG(s_ij, τ)  (mod 2^64)."""
    peers = [p for p in ch.parties if p != ch.me]
    seeds = await pairwise_seeds(ch, peers)
    y = x.copy()
    mine = ch.parties.index(ch.me)
    for p in peers:
        mask = prg_uint64(step_key(seeds[p], ftag), x.size)
        if ch.parties.index(p) > mine:
            y += mask
        else:
            y -= mask
    return y


async def _start(ch: Channel, x, tag: str, **public) -> tuple[np.ndarray, np.dtype, tuple, np.ndarray]:
    """Agree on the public shape (and ``public``), then mask: returns (x, dtype, shape, y)."""
    flat, dtype, shape = _as_ring(x)
    ftag = claim_tag(ch, f"{tag}/mask")
    seeding = asyncio.ensure_future(pairwise_seeds(ch, [p for p in ch.parties if p != ch.me]))
    try:
        await agree(ch, tag, shape=list(shape), **public)
    finally:
        await seeding  # key agreement ran concurrently with the check
    return flat, dtype, shape, await _masked(ch, flat, ftag)


# --------------------------------------------------------------------------- API
def _segments(size: int, owners: Sequence[str]) -> dict[str, slice]:
    """Split ``range(size)`` into ``len(owners)`` near-equal contiguous segments."""
    k = len(owners)
    return {p: slice(size * i // k, size * (i + 1) // k) for i, p in enumerate(owners)}


async def secure_sum(ch: Channel, x, *, tag: str = "sum", reveal_to: Sequence[str] | str | None = None):
    """Elementwise Σ_i x_i (mod 2^64) of every party's integer array ``x``.

    Parties in ``reveal_to`` (default: all) get the sum with ``x``'s shape and
    dtype (int64 inputs give the signed reading of the residue); the others get
    ``None``. Reveals only the sum (module docstring).

    The aggregation is spread over the parties of ``reveal_to``: each owns one
    contiguous segment of the vector, receives every party's masked segment,
    adds them (Σ_i y_i[seg] = Σ_i x_i[seg]) and sends the segment's total to
    the other parties of ``reveal_to`` (a reduce-scatter, then an all-gather).
    Rounds: one agreement, one upload, one exchange of totals; every party
    sends and receives about 2·m words instead of one aggregator handling N·m.
    """
    reveal = _ordered(ch, reveal_to, "reveal_to")
    flat, dtype, shape, y = await _start(ch, x, tag, reveal_to=list(reveal))
    seg = _segments(flat.size, reveal)
    others = [p for p in ch.parties if p != ch.me]
    await asyncio.gather(*(send_array(ch, p, f"{tag}/masked", y[seg[p]]) for p in reveal if p != ch.me))
    if ch.me not in reveal:
        return None
    mine = seg[ch.me]
    part = y[mine]
    got = await gather_from(ch, f"{tag}/masked", frm=others)
    for p, payload in got.items():  # Σ_i y_i[seg] = Σ_i x_i[seg], one add per party
        (a,) = unpack_arrays(payload)
        part += _check_received(a, mine.stop - mine.start, p)
    total = np.empty(flat.size, _U64)
    total[mine] = part
    peers = [p for p in reveal if p != ch.me]
    await broadcast(ch, f"{tag}/total", pack_arrays(part), to=peers)
    got = await gather_from(ch, f"{tag}/total", frm=peers)
    for p, payload in got.items():
        (a,) = unpack_arrays(payload)
        total[seg[p]] = _check_received(a, seg[p].stop - seg[p].start, p)
    return total.view(dtype).reshape(shape)


async def _sum_shares(ch: Channel, x, tag: str, holders, **public):
    """Shared core of :func:`secure_sum_shares`: returns (share or None, dtype, shape)."""
    hs = tuple(holders) if holders is not None else tuple(ch.parties[:2])
    if len(hs) != 2 or hs[0] == hs[1] or not set(hs) <= set(ch.parties):
        raise ValueError(f"holders must be two distinct parties of the session, got {list(hs)}")
    flat, dtype, shape, y = await _start(ch, x, tag, holders=list(hs), **public)
    h0, h1 = hs
    if ch.me == h1:  # share_1 = y_{h1}
        return y, dtype, shape
    if ch.me != h0:  # a non-holder's masked input goes to h0
        await send_array(ch, h0, f"{tag}/masked", y)
        return None, dtype, shape
    others = [p for p in ch.parties if p not in hs]
    got = await gather_from(ch, f"{tag}/masked", frm=others)
    for p, payload in got.items():  # share_0 = y_{h0} + Σ_{non-holders} y_i
        (a,) = unpack_arrays(payload)
        y += _check_received(a, flat.size, p)
    return y, dtype, shape


async def secure_sum_shares(ch: Channel, x, *, tag: str, holders: Sequence[str] | None = None):
    """Σ_i x_i (mod 2^64) as two additive shares held by ``holders`` (default: first two parties).

    ``holders[0]`` gets share_0 = y_{h0} + Σ_{non-holders} y_i and ``holders[1]``
    gets share_1 = y_{h1} (uint64, ``x``'s shape); share_0 + share_1 = Σ_i x_i.
    Each share alone is uniformly random (it contains the PRG stream of a pair
    the holder is not in). Other parties return ``None``. With two parties
    nothing is sent besides the parameter check (and the once-per-session
    key agreement).
    """
    share, _, shape = await _sum_shares(ch, x, tag, holders)
    return None if share is None else share.reshape(shape)


async def secure_sum_threshold(
    ch: Channel, x, threshold, *, tag: str = "sum-threshold", bound_bits: int = 62
) -> np.ndarray:
    """Every party learns ``Σ_i x_i ≥ threshold`` (elementwise bool), and nothing else.

    ``x`` is each party's int64 array; ``threshold`` a public int or int64 array
    broadcastable to ``x``'s shape (the same on every party — agreed by digest).
    Assumption (public, agreed): |Σ_i x_i − threshold| < 2^bound_bits as
    integers, default 2^62 (1 ≤ bound_bits ≤ 63). Outside it the answer is
    that of Σ − t wrapped into [−2^bound_bits, 2^bound_bits). Support counts
    need far fewer bits, and the comparison's cost grows with ⌈bound_bits/4⌉
    (the number of 4-bit blocks), so pass a tight bound where one is known.

    Construction: the first two parties h0, h1 get shares a + b = Σ_i x_i − t
    (:func:`secure_sum_shares`, h0 subtracting t); reduced into Z_2^k with
    k = bound_bits + 1, the sign of Σ − t is the top bit of a + b mod 2^k,
    MSB(a + b) = MSB(a) ⊕ MSB(b) ⊕ [low(a) + low(b) ≥ 2^(k−1)], the carry by
    the millionaires' protocol (:func:`mpc.comparison.msb_of_shares`); so
    Σ ≥ t ⟺ MSB(a + b) = 0. Both holders send their XOR share of that bit to
    every party. Reveals exactly the output bits.
    """
    from .comparison import msb_of_shares  # OT stack only needed here

    flat, _, shape = _as_ring(x)
    t = np.asarray(threshold)
    if t.dtype.kind not in "iu" or (t.dtype.kind == "u" and t.size and t.max() > np.iinfo(np.int64).max):
        raise TypeError(f"threshold must be an int or int64 array, got {t.dtype}")
    try:
        t = np.ascontiguousarray(np.broadcast_to(t.astype(np.int64), shape)).reshape(-1).view(_U64)
    except ValueError:
        raise ValueError(f"threshold of shape {t.shape} does not broadcast to the inputs' shape {shape}") from None
    if not (isinstance(bound_bits, (int, np.integer)) and 1 <= bound_bits <= 63):
        raise ValueError(f"bound_bits must be an integer in 1..63, got {bound_bits!r}")
    digest = hashlib.sha256(t.tobytes()).hexdigest()
    hs = tuple(ch.parties[:2])
    share, _, _ = await _sum_shares(ch, x, f"{tag}/sum", hs, threshold_sha256=digest, bound_bits=int(bound_bits))
    if ch.me in hs:
        role = hs.index(ch.me)
        a = share - t if role == 0 else share  # a + b = Σ x_i − t
        msb = await msb_of_shares(
            ch, hs[1 - role], a, role=role, tag=f"{tag}/msb", ring_bits=int(bound_bits) + 1, check=False
        )
        await broadcast(ch, f"{tag}/bit", pack_arrays(np.packbits(msb)))
    got = await gather_from(ch, f"{tag}/bit", frm=[p for p in hs if p != ch.me])
    shares = [_unpack_bits(payload, flat.size, p) for p, payload in got.items()]
    if ch.me in hs:
        shares.append(msb)
    msb_total = shares[0] ^ shares[1]  # MSB(Σ x_i − t) = share_h0 ⊕ share_h1
    return (msb_total == 0).reshape(shape)  # Σ ≥ t ⟺ MSB = 0


def _unpack_bits(payload: bytes, size: int, frm: str) -> np.ndarray:
    (a,) = unpack_arrays(payload)
    if a.dtype != np.uint8 or a.shape != ((size + 7) // 8,):
        raise ProtocolError(f"{frm} sent a {a.dtype}{list(a.shape)} array where {size} packed bits were expected")
    return np.unpackbits(a)[:size]
