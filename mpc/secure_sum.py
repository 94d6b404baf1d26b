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
from .errors import InputRangeError, ProtocolError
from .ints import integer_array
from .keys import claim_tag, pairwise_seeds, prg_uint64, step_key

__all__ = [
    "secure_sum",
    "secure_sum_shares",
    "secure_sum_threshold",
    "MAX_BOUND_BITS",
    "bound_bits_for",
    "ratio_bound_bits",
    "ratio_threshold_inputs",
    "FULL_THRESHOLD_LEAKAGE",
    "TWO_HOLDER_LEAKAGE",
    "threshold_leakage",
    "sum_leakage",
]

_U64 = np.uint64

MAX_BOUND_BITS = 63
"""Largest ``bound_bits`` of :func:`secure_sum_threshold`: |Σ − t| < 2^63 is the int64 range."""

FULL_THRESHOLD_LEAKAGE = (
    "secure sum with threshold: every party learns only whether each sum reaches its threshold; "
    "the sum stays additively shared among all parties, so any coalition of all parties but one learns "
    "nothing more than those bits"
)
"""What :func:`secure_sum_threshold` reveals with N ≥ 3 and ``full_threshold=True`` (the default)."""

TWO_HOLDER_LEAKAGE = (
    "secure sum with threshold (two share holders {h0} and {h1}): every party learns whether each sum reaches "
    "its threshold; {h0} and {h1} together can reconstruct the sums themselves, any other coalition learns "
    "nothing more than the bits"
)
"""Template of what :func:`secure_sum_threshold` reveals with ``full_threshold=False`` (fill in h0, h1)."""


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


def _mask(ch: Channel, seeds: dict[str, bytes], x: np.ndarray, ftag: str) -> np.ndarray:
    """y = x + Σ_{j after me} PRG(s_ij, τ) − Σ_{j before me} PRG(s_ij, τ)  (mod 2^64); the masks sum to 0."""
    y = x.copy()
    mine = ch.parties.index(ch.me)
    for p, seed in seeds.items():
        mask = prg_uint64(step_key(seed, ftag), x.size)
        if ch.parties.index(p) > mine:
            y += mask
        else:
            y -= mask
    return y


async def _masked(ch: Channel, x: np.ndarray, ftag: str) -> np.ndarray:
    """:func:`_mask` with this session's pairwise seeds."""
    return _mask(ch, await pairwise_seeds(ch, [p for p in ch.parties if p != ch.me]), x, ftag)


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


# --------------------------------------------------------------------------- leakage statements
def threshold_leakage(parties: Sequence[str], full_threshold: bool = True) -> str:
    """The line a "what the parties learned" report prints for :func:`secure_sum_threshold` in this session."""
    parties = list(parties)
    if len(parties) == 2:
        return (
            "secure sum with threshold (two parties): each party learns only whether each sum reaches its "
            "threshold — nothing about the other's values beyond that bit"
        )
    if full_threshold:
        return FULL_THRESHOLD_LEAKAGE
    return TWO_HOLDER_LEAKAGE.format(h0=parties[0], h1=parties[1])


def sum_leakage(n_parties: int, what: str = "the inputs") -> str:
    """What :func:`secure_sum` reveals: the sum, and with two parties each other's input (sum minus one's own)."""
    line = f"the sum of {what} (secure sum)"
    if n_parties == 2:
        line += "; with two parties each learns the other's value, since the sum minus its own gives it"
    return line


# --------------------------------------------------------------------------- int64 range checks
def bound_bits_for(max_abs: int) -> int:
    """Smallest ``bound_bits`` with ``max_abs < 2^bound_bits`` for :func:`secure_sum_threshold`.

    ``max_abs`` is a public bound on |Σ − t| (any int ≥ 0). Raises
    :class:`~mpc.errors.InputRangeError` when the bound needs more than
    :data:`MAX_BOUND_BITS` bits — the sum would wrap in int64 and the
    comparison would answer for a wrong value.
    """
    m = int(max_abs)
    if m < 0:
        raise ValueError("max_abs must be ≥ 0")
    bits = max(1, m.bit_length())
    if bits > MAX_BOUND_BITS:
        raise InputRangeError(
            f"secure sum with threshold: values up to {m} (2^{bits - 1} or more) do not fit the "
            f"{MAX_BOUND_BITS + 1}-bit signed range of the comparison"
        )
    return bits


def ratio_bound_bits(ratio, bound: int) -> int:
    """``bound_bits`` for the test ``Σ counts ≥ ratio · Σ totals`` when both sums are at most ``bound``.

    For ``ratio = M/D`` in lowest terms, |Σ (D·counts − M·totals)| ≤ (D + M)·bound.
    Raises :class:`~mpc.errors.InputRangeError` when that reaches 2^63 (a
    ratio with a large denominator — e.g. a support written with many
    decimals — on a large database): ``D·count`` would wrap in int64.
    Public values only, so every party raises the same error.
    """
    from fractions import Fraction

    r = Fraction(ratio)
    if r < 0:
        raise ValueError(f"ratio must be ≥ 0, got {ratio}")
    D, M = r.denominator, r.numerator
    b = max(int(bound), 1)
    if (D + M) * b >= 1 << MAX_BOUND_BITS:
        raise InputRangeError(
            f"the threshold test Σ count ≥ {r}·Σ total needs ({D} + {M})·{b} < 2^{MAX_BOUND_BITS} to stay in "
            f"int64, but it is {(D + M) * b}: give the ratio with a smaller denominator (fewer decimals)"
        )
    return bound_bits_for((D + M) * b)


def ratio_threshold_inputs(counts, totals, ratio, *, bound: int) -> tuple[np.ndarray, int]:
    """Inputs of the threshold test ``Σ_i counts_i ≥ ratio · Σ_i totals_i`` in integers, checked for int64.

    For ``ratio = M/D`` (a :class:`fractions.Fraction` or anything it takes)
    this party's input is ``x_i = D·counts_i − M·totals_i`` and the test is
    ``Σ_i x_i ≥ 0`` — Kantarcioglu–Clifton's support test (IEEE TKDE 16(9),
    2004, §3.2) without rounding. ``counts`` and ``totals`` are non-negative
    integers (arrays of one shape, or ``totals`` a scalar) whose sums over all
    parties are at most ``bound`` (public, e.g. the total number of
    transactions). Returns ``(x as int64, bound_bits)`` for
    :func:`secure_sum_threshold`; raises as :func:`ratio_bound_bits` does.
    """
    from fractions import Fraction

    bits = ratio_bound_bits(ratio, bound)
    r = Fraction(ratio)
    D, M = r.denominator, r.numerator
    b = max(int(bound), 1)
    c = integer_array(counts, "threshold tests")
    n = integer_array(totals, "threshold tests")
    for name, v in (("counts", c), ("totals", n)):
        if v.size and (int(v.min()) < 0 or int(v.max()) > b):
            raise ValueError(f"{name} must lie in [0, {b}] (the public bound)")
    x = np.int64(D) * c.astype(np.int64) - np.int64(M) * n.astype(np.int64)  # |x| ≤ (D + M)·b < 2^63
    return x, bits


def _threshold_vector(t, shape: tuple) -> np.ndarray:
    t = np.asarray(t)
    if t.dtype.kind not in "iu" or (t.dtype.kind == "u" and t.size and t.max() > np.iinfo(np.int64).max):
        raise TypeError(f"threshold must be an int or int64 array, got {t.dtype}")
    try:
        return np.ascontiguousarray(np.broadcast_to(t.astype(np.int64), shape)).reshape(-1).view(_U64)
    except ValueError:
        raise ValueError(f"threshold of shape {t.shape} does not broadcast to the inputs' shape {shape}") from None


async def secure_sum_threshold(
    ch: Channel,
    x,
    threshold,
    *,
    tag: str = "sum-threshold",
    bound_bits: int = 62,
    full_threshold: bool = True,
) -> np.ndarray:
    """Every party learns ``Σ_i x_i ≥ threshold`` (elementwise bool), and nothing else.

    ``x`` is each party's int64 array; ``threshold`` a public int or int64 array
    broadcastable to ``x``'s shape (the same on every party — agreed by digest).
    Assumption (public, agreed): |Σ_i x_i − threshold| < 2^bound_bits as
    integers, default 2^62 (1 ≤ bound_bits ≤ 63; :func:`bound_bits_for` picks
    it from a bound and refuses what does not fit). Outside it the answer is
    that of Σ − t wrapped into [−2^bound_bits, 2^bound_bits). The cost grows
    with bound_bits, so pass a tight bound where one is known. Sign
    extraction in Z_2^k, k = bound_bits + 1: Σ ≥ t ⟺ MSB(Σ − t mod 2^k) = 0.
    The "secure sum with threshold" of Kantarcioglu and Clifton (IEEE TKDE
    16(9), 2004, §3.2), with one of two constructions (all parties pass the
    same ``full_threshold``, checked):

    * ``full_threshold=True`` (default; used whenever N ≥ 3): Σ − t stays
      additively shared among *all* N parties (party 0's share is x_0 − t) and
      the sign is computed on those shares with N-party GMW gates
      (:func:`mpc.multiparty_bits.msb_of_sum`). Any coalition of up to N − 1
      parties learns only the output bits (:data:`FULL_THRESHOLD_LEAKAGE`).
    * ``full_threshold=False``: the first two parties h0, h1 get shares
      a + b = Σ − t (:func:`secure_sum_shares`) and compare them by the
      two-party millionaires' protocol (:func:`mpc.comparison.msb_of_shares`,
      MSB(a + b) = MSB(a) ⊕ MSB(b) ⊕ carry). Faster, but h0 and h1 *together*
      reconstruct Σ (:data:`TWO_HOLDER_LEAKAGE`); other coalitions learn only
      the bits. With N = 2 both constructions have the same collusion bound
      (the two parties are everyone), and the two-party one runs.
    """
    flat, _, shape = _as_ring(x)
    t = _threshold_vector(threshold, shape)
    if not (isinstance(bound_bits, (int, np.integer)) and 1 <= bound_bits <= 63):
        raise ValueError(f"bound_bits must be an integer in 1..63, got {bound_bits!r}")
    digest = hashlib.sha256(t.tobytes()).hexdigest()
    if len(ch.parties) >= 3 and full_threshold:
        return await _threshold_all_parties(ch, flat, t, shape, tag, int(bound_bits), digest)
    hs = tuple(ch.parties[:2])
    share, _, _ = await _sum_shares(
        ch, x, f"{tag}/sum", hs, threshold_sha256=digest, bound_bits=int(bound_bits), full=bool(full_threshold)
    )
    return await _threshold_two_holders(ch, share, t, hs, shape, tag, int(bound_bits), flat.size)


async def _threshold_two_holders(ch, share, t, hs, shape, tag: str, bound_bits: int, size: int) -> np.ndarray:
    from .comparison import msb_of_shares  # OT stack only needed here

    if ch.me in hs:
        role = hs.index(ch.me)
        a = share - t if role == 0 else share  # a + b = Σ x_i − t
        msb = await msb_of_shares(
            ch, hs[1 - role], a, role=role, tag=f"{tag}/msb", ring_bits=bound_bits + 1, check=False
        )
        await broadcast(ch, f"{tag}/bit", pack_arrays(np.packbits(msb)))
    got = await gather_from(ch, f"{tag}/bit", frm=[p for p in hs if p != ch.me])
    shares = [_unpack_bits(payload, size, p) for p, payload in got.items()]
    if ch.me in hs:
        shares.append(msb)
    msb_total = shares[0] ^ shares[1]  # MSB(Σ x_i − t) = share_h0 ⊕ share_h1
    return (msb_total == 0).reshape(shape)  # Σ ≥ t ⟺ MSB = 0


_THRESHOLD_CHUNK = 1 << 15  # elements per N-party sign computation: bounds the OT batches' memory


async def _threshold_all_parties(ch, flat, t, shape, tag: str, bound_bits: int, digest: str) -> np.ndarray:
    """Σ − t shared by all N parties; sign by :func:`mpc.multiparty_bits.msb_of_sum`; the bits opened to all."""
    from .multiparty_bits import msb_of_sum  # OT stack only needed here

    ftag = claim_tag(ch, f"{tag}/mask")
    seeding = asyncio.ensure_future(pairwise_seeds(ch, [p for p in ch.parties if p != ch.me]))
    try:
        await agree(ch, tag, shape=list(shape), threshold_sha256=digest, bound_bits=bound_bits, full=True)
    finally:
        seeds = await seeding
    a = flat - t if ch.me == ch.parties[0] else flat.copy()  # Σ_p a_p = Σ x − t
    out = np.empty(flat.size, bool)
    for c, lo in enumerate(range(0, max(flat.size, 1), _THRESHOLD_CHUNK)):
        hi = min(flat.size, lo + _THRESHOLD_CHUNK)
        part = a[lo:hi]
        ctag = f"{ftag}/c{c}"
        msb = await msb_of_sum(
            ch, part, ring_bits=bound_bits + 1, tag=f"{tag}/c{c}", masks=lambda y, ctag=ctag: _mask(ch, seeds, y, ctag)
        )
        await broadcast(ch, f"{tag}/c{c}/bit", pack_arrays(np.packbits(msb)))
        total = msb.copy()
        for p, payload in (await gather_from(ch, f"{tag}/c{c}/bit")).items():
            total ^= _unpack_bits(payload, hi - lo, p)
        out[lo:hi] = total == 0  # Σ ≥ t ⟺ MSB = 0
    return out.reshape(shape)


def _unpack_bits(payload: bytes, size: int, frm: str) -> np.ndarray:
    (a,) = unpack_arrays(payload)
    if a.dtype != np.uint8 or a.shape != ((size + 7) // 8,):
        raise ProtocolError(f"{frm} sent a {a.dtype}{list(a.shape)} array where {size} packed bits were expected")
    return np.unpackbits(a)[:size]
