"""Three-party replicated secret sharing (RSS): a vectorized, batched engine for big count vectors.

Model and assumptions
---------------------
* The session has N ≥ 3 parties (``ch.parties``). Three of them, named by the
  caller and agreed by all, are the *computing parties* ``C = (c0, c1, c2)``;
  the others only contribute inputs (:meth:`RSS3.input_sum`) and may receive
  opened outputs (:meth:`RSS3.open` with ``to="all"``, :meth:`RSS3.argmin`).
* Semi-honest parties with an *honest majority* among the computing parties:
  no two computing parties collude. A single computing party's view (its two
  shares and every message it receives) is uniformly random apart from what
  is opened; a non-computing party sees nothing but opened outputs. Two
  colluding computing parties hold all three shares and learn everything.
* Channels are authenticated and private (mTLS between daemons); the pairwise
  seeds of :mod:`mpc.keys` are agreed once per session.

Sharings
--------
A secret ``x`` is split into three *components* ``x = x_0 + x_1 + x_2``
(arithmetic, in Z_2^R with R ∈ {8, 16, 32, 64}: numpy uint8/16/32/64 with
their natural wrap-around) or ``x = x_0 ⊕ x_1 ⊕ x_2`` (boolean); computing
party ``c_i`` holds the pair ``(x_i, x_{i+1 mod 3})``, so any two of them can
reconstruct and any one alone sees two uniformly random components.
:class:`Arith` holds a party's pair of ring vectors, :class:`Bool` a pair of
bit-packed planes (``width`` planes of ``n`` bits, 64 bits per uint64 word,
element ``j`` at bit ``j % 64`` of word ``j // 64``).

Correlated randomness: zero-sharings from pairwise seeds
--------------------------------------------------------
Each pair of computing parties shares a session seed ``s_{i,i+1}``. For a
step with a fresh, never reused tag τ (a per-context counter, reserved with
:func:`mpc.keys.claim_tag`), party i derives

    α_i = F(s_{i,i+1}, τ) − F(s_{i−1,i}, τ)      (⊕ instead of ± for bits)

with ``F(s, τ) = prg_bytes(step_key(s, full_tag(τ)))`` (AES-128-CTR). Then
``α_0 + α_1 + α_2 = 0`` while α_i looks uniform to each other single party
(party i−1 lacks ``s_{i,i+1}``) — the correlated randomness of Araki et al.
below, without any communication.

Constructions
-------------
* Linear operations are local. Multiplication (:meth:`RSS3.mul`) and AND
  (:meth:`RSS3.and_`) follow T. Araki, J. Furukawa, Y. Lindell, A. Nof,
  K. Ohara, "High-throughput semi-honest secure three-party computation with
  an honest majority", ACM CCS 2016: party i computes the 3-out-of-3 share
  ``z_i = x_i y_i + x_i y_{i+1} + x_{i+1} y_i + α_i`` and sends it to party
  i−1, which then holds ``(z_{i−1}, z_i)``: one round, one ring element (one
  bit) per element and party.
* Inputs (:meth:`RSS3.input_sum`): a non-computing party splits its vector
  into three additive pieces, two of them expanded from the seeds it shares
  with two computing parties (no bandwidth) and the third sent to the last
  one; a computing party keeps its own vector as its piece. The computing
  parties then hold an additive 3-sharing ``s_0 + s_1 + s_2`` of the sum and
  turn it into RSS in one round: ``y_i = s_i + α_i`` goes to party i−1.
* Sign / comparison (:meth:`RSS3.ltz`) by bit decomposition as in
  P. Mohassel, P. Rindal, "ABY3: A mixed protocol framework for machine
  learning", ACM CCS 2018, §5.3: the low ``k`` bits of the three arithmetic
  components are three ``k``-bit numbers, each already boolean-shared for
  free (component i of the number a_i is its bits, the others are 0). A
  carry-save adder reduces them to two, ``S = a_0 ⊕ a_1 ⊕ a_2`` (local) and
  the carries ``maj(a_0, a_1, a_2) = a_0a_1 ⊕ a_1a_2 ⊕ a_2a_0`` — each
  monomial is known to one party, so this AND layer costs one reshare round;
  the top bit of ``S + 2·maj`` needs the carry into position k−1, a
  generate/propagate leaf layer ``g = S ∧ Y``, ``p = S ⊕ Y`` and a
  parallel-prefix (Kogge–Stone-style, tree-reduced to the single top carry)
  combination ``(G, P)∘(G', P') = (G ⊕ P∧G', P∧P')``.
* Bit to arithmetic (:meth:`RSS3.b2a`, :meth:`RSS3.mul_bit`), the bit
  injection of ABY3 §5.4: with ``x = x_0 ⊕ x_1 ⊕ x_2``, party c0 knows
  ``u = x_0 ⊕ x_1`` and shares it (one message to c2), and
  ``x = u + x_2 − 2·u·x_2``; ``x·a = w + u·(a − 2w)`` with ``w = x_2·a``.
* A bit times additively held values (:meth:`RSS3.mul_bit_additive`): when
  V = v_0 + v_1 + v_2 is held 3-out-of-3 (:meth:`RSS3.input_additive`), party
  i knows u = x_i ⊕ x_{i+1} and v_i, so v_i·x = v_i·u + x_{i+2}·v_i·(1 − 2u);
  it sends v_i·(1 − 2u) masked by the stream it shares with party i−1 to
  party i+1, and the two holders of x_{i+2} multiply it in — one ring element
  per element and party, the product's pieces additive again
  (:meth:`RSS3.reshare_additive` makes them replicated).
* Dot products per segment (:meth:`RSS3.segment_dot`): the local product
  terms summed over a segment before the one reshare — one ring element per
  segment. Lifting to a wider ring (:meth:`RSS3.lift`): the three components,
  added over the integers, wrap at most twice; two comparisons count the wraps.
* Boolean inputs and counting: every party's bit vector XOR-shared
  (:meth:`RSS3.input_bits`, one plane per party; a computing party's own
  vector costs one bit per element, sent by it to one party, its shares
  (x ⊕ r, r, 0) with r from the seed it shares with the next party;
  :meth:`RSS3.or_planes`), a
  carry-save popcount of planes (:meth:`RSS3.popcount`, C. S. Wallace, "A
  suggestion for a fast multiplier", IEEE Trans. Electronic Computers, 1964)
  and a ripple comparison with a public constant (:meth:`RSS3.ge_public`).
* Child engines (:meth:`RSS3.child`): the same parties and seeds in their own
  tag namespace, so two multi-round computations may run concurrently.
* Lexicographic arg-min (:meth:`RSS3.argmin`): a tournament in groups
  (:func:`argmin_plan`): within a group every pair is compared at once and
  each member's "beats every other" bits are ANDed into a one-hot winner,
  whose keys and index are selected obliviously (a bit times each value,
  summed); only the winning index is opened.

What is revealed
----------------
Nothing but the outputs of :meth:`RSS3.open` and :meth:`RSS3.argmin`. Public:
the computing parties, every vector length, ring sizes, segment offsets and
comparison widths.

Calling convention: every session party calls :meth:`RSS3.create`,
:meth:`RSS3.input_sum`, :meth:`RSS3.input_additive`, :meth:`RSS3.input_bits`,
:meth:`RSS3.open` with ``to="all"`` and :meth:`RSS3.argmin` (non-computing
parties pass ``None`` for shares); the other operations are called by the
computing parties only. Each public call
reserves its tag when it starts, so several calls may run concurrently
(e.g. under ``asyncio.gather``) as long as every party starts them in the
same order.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .channel import Channel, agree, pack_arrays, unpack_arrays
from .errors import ProtocolError
from .ints import integer_array
from .keys import claim_tag, pairwise_seed, prg_bytes, step_key

__all__ = [
    "ARGMIN_MAX_PAIRS",
    "Arith",
    "Bool",
    "RSS3",
    "RING_DTYPES",
    "argmin_plan",
    "pack_bits",
    "unpack_bits",
    "ltz_rounds",
    "ltz_and_count",
]

RING_DTYPES: dict[int, np.dtype] = {
    8: np.dtype("<u1"),
    16: np.dtype("<u2"),
    32: np.dtype("<u4"),
    64: np.dtype("<u8"),
}
"""Ring sizes R and the numpy dtypes whose wrap-around is arithmetic mod 2^R."""

_U64 = np.dtype("<u8")
_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


# --------------------------------------------------------------------------- shares
@dataclass(eq=False)
class Arith:
    """One computing party's RSS share of a vector mod 2^bits: ``(a, b) = (x_i, x_{i+1})``."""

    a: np.ndarray
    b: np.ndarray
    bits: int

    def __len__(self) -> int:
        return int(self.a.shape[0])

    @property
    def dtype(self) -> np.dtype:
        return self.a.dtype


@dataclass(eq=False)
class Bool:
    """One computing party's RSS share of ``width`` bit-planes of ``n`` bits, XOR-shared.

    ``a`` and ``b`` (components i and i+1) are ``(width, ceil(n/64))`` uint64,
    element j of plane w at bit ``j % 64`` of ``a[w, j // 64]``. Padding bits
    beyond n are arbitrary.
    """

    a: np.ndarray
    b: np.ndarray
    n: int

    @property
    def width(self) -> int:
        return int(self.a.shape[0])

    def __len__(self) -> int:
        return self.n


# --------------------------------------------------------------------------- bit packing
def _words(n: int) -> int:
    return (n + 63) // 64


def pack_bits(bits: np.ndarray) -> np.ndarray:
    """``(..., n)`` 0/1 values → ``(..., ceil(n/64))`` uint64 words (bit j at bit j % 64 of word j // 64)."""
    bits = np.asarray(bits)
    n = bits.shape[-1]
    by = np.packbits(bits if bits.dtype == np.bool_ else bits.astype(np.uint8, copy=False), axis=-1, bitorder="little")
    if n % 64 == 0:  # whole words: the packed bytes are the words (no padding copy)
        return np.ascontiguousarray(by).view(_U64)
    out = np.zeros(bits.shape[:-1] + (8 * _words(n),), np.uint8)
    out[..., : by.shape[-1]] = by
    return out.view(_U64)


def unpack_bits(words: np.ndarray, n: int) -> np.ndarray:
    """Inverse of :func:`pack_bits`: ``(..., W)`` uint64 → ``(..., n)`` uint8 0/1."""
    by = np.ascontiguousarray(words, dtype=_U64).view(np.uint8)
    return np.unpackbits(by, axis=-1, count=n, bitorder="little")


def _to_planes(v: np.ndarray, k: int, chunk: int = 1 << 20) -> np.ndarray:
    """Bits 0..k−1 of the unsigned vector ``v`` as ``(k, ceil(n/64))`` packed planes.

    Works byte column by byte column on chunks of ``chunk`` (a multiple of 64)
    elements: eight planes at a time from one contiguous byte column, packed
    along the elements, so no large transpose is needed.
    """
    n = v.shape[0]
    out = np.zeros((k, 8 * _words(n)), np.uint8)
    by = np.ascontiguousarray(v).view(np.uint8).reshape(n, v.dtype.itemsize)
    shifts = np.arange(8, dtype=np.uint8)[:, None]
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        for c in range((k + 7) // 8):
            col = np.ascontiguousarray(by[s:e, c])
            packed = np.packbits((col[None, :] >> shifts) & 1, axis=1, bitorder="little")
            hi = min(8, k - 8 * c)
            out[8 * c : 8 * c + hi, s // 8 : s // 8 + packed.shape[1]] = packed[:hi]
    return out.view(_U64)


# --------------------------------------------------------------------------- cost model
def _tree_ands(m: int) -> int:
    """AND gates to fold m (G, P) nodes to the top carry: 2 per merge, 1 for merges with the lowest node."""
    total = 0
    while m > 1:
        p = m // 2
        total += 2 * p - 1
        m -= p
    return total


def ltz_rounds(bits: int) -> int:
    """Communication rounds of :meth:`RSS3.ltz` for ``bits``-bit values: 1 + 1 + ceil(log2(bits − 2))."""
    if bits <= 1:
        return 0
    if bits == 2:
        return 1
    return 2 + math.ceil(math.log2(bits - 2))


def ltz_and_count(bits: int) -> int:
    """AND gates (bits sent per computing party) per element of :meth:`RSS3.ltz`, about 4·bits."""
    if bits <= 1:
        return 0
    return (bits - 1) + (bits - 2) + _tree_ands(bits - 2)


ARGMIN_MAX_PAIRS = 1 << 16
"""Comparisons a level of :meth:`RSS3.argmin` may batch (its groups' pairs)."""


def argmin_plan(n: int, keys: int = 1, bits: int = 32) -> list[int]:
    """Group sizes, level by level, of :meth:`RSS3.argmin` on ``n`` candidates: the fewest rounds
    (per level of groups of g: :func:`ltz_rounds`, the keys' fold, ceil(log2(g − 1)) AND rounds and
    two of selection), each level comparing at most :data:`ARGMIN_MAX_PAIRS` pairs (pairs of 2 always
    allowed); among plans of equal rounds the fewest comparisons. Public: depends on n only."""
    fold = math.ceil(math.log2(keys)) if keys > 1 else 0
    per = ltz_rounds(bits) + fold + 2

    @functools.cache
    def best(m: int) -> tuple[int, int, tuple[int, ...]]:  # (rounds, pairs, plan) for m candidates
        if m <= 1:
            return 0, 0, ()
        out: tuple[int, int, tuple[int, ...]] | None = None
        for g in range(2, m + 1):
            groups = -(-m // g)
            pairs = groups * g * (g - 1) // 2
            if g > 2 and pairs > ARGMIN_MAX_PAIRS:
                break
            r, p, plan = best(groups)
            cand = (per + (math.ceil(math.log2(g - 1)) if g > 2 else 0) + r, pairs + p, (g, *plan))
            if out is None or cand[:2] < out[:2]:
                out = cand
        assert out is not None
        return out

    return list(best(n)[2])


# --------------------------------------------------------------------------- helpers
def _ring(bits: int) -> np.dtype:
    if bits not in RING_DTYPES:
        raise ValueError(f"ring size must be one of {sorted(RING_DTYPES)}, got {bits!r}")
    return RING_DTYPES[bits]


def _to_ring(v: Any, dt: np.dtype) -> np.ndarray:
    """Integer values (array or scalar, any sign) as their residues mod 2^R in dtype ``dt``."""
    a = integer_array(v, "RSS3 values")
    if a.dtype.kind == "i":  # two's complement: the residue mod 2^64, then mod 2^R
        a = a.astype(np.int64, copy=False).view(np.uint64)
    # unsigned to unsigned widens exactly and truncates mod 2^R; always a new array (callers change it)
    return a.astype(dt)


def _segment_summer(offsets: Any, n: int) -> Callable[[np.ndarray], np.ndarray]:
    """The function summing an n-element vector over the segments ``[offsets[s], offsets[s+1])``
    (the last one ends at n; offsets non-decreasing in [0, n], checked; an empty segment sums to 0),
    in the vector's ring (its dtype wraps)."""
    off = integer_array(offsets, "segment offsets").reshape(-1).astype(np.int64)
    if off.size and (off[0] < 0 or off[-1] > n or (np.diff(off) < 0).any()):
        raise ValueError(f"segment offsets must be non-decreasing within [0, {n}]")
    ends = np.append(off[1:], n)
    if off.size and (ends > off).all():  # no empty segment: reduceat (no running-sum array)
        return lambda v: np.add.reduceat(v, off, dtype=v.dtype)

    def seg(v: np.ndarray) -> np.ndarray:
        cs = np.zeros(n + 1, v.dtype)
        np.cumsum(v, dtype=v.dtype, out=cs[1:])
        return cs[ends] - cs[off]

    return seg


def _pad8(nbytes: int) -> int:
    return (nbytes + 7) // 8 * 8


class RSS3:
    """A session's three-party RSS engine; see the module docstring for the model.

    Attributes: ``computers`` (c0, c1, c2), ``me``, ``idx`` (0..2, or ``None``
    on a non-computing party), ``tag`` (this context's tag namespace).
    """

    def __init__(self, ch: Channel, computers: tuple[str, str, str], tag: str, seeds: dict[str, bytes]):
        self.ch = ch
        self.computers = computers
        self.me = ch.me
        self.tag = tag
        self.idx: int | None = computers.index(ch.me) if ch.me in computers else None
        self._noncomp = tuple(p for p in ch.parties if p not in computers)
        self._seeds = seeds
        self._cctr = 0  # steps among the computing parties
        self._sctr = 0  # steps every session party takes part in
        self._rot = 0  # bit injections so far (the "c0" role rotates, see _rotation)
        if self.idx is not None:
            self._next = computers[(self.idx + 1) % 3]
            self._prev = computers[(self.idx - 1) % 3]

    @classmethod
    async def create(cls, ch: Channel, computers: Sequence[str], tag: str = "rss") -> RSS3:
        """Set up the engine; every session party calls it with the same ``computers``.

        Checks that all parties agree on ``computers`` (one small message per
        pair) and agrees the pairwise seeds needed (computing ↔ every party;
        once per session, shared with other protocols). Reveals nothing.
        """
        comps = tuple(computers)
        if len(comps) != 3 or len(set(comps)) != 3 or not set(comps) <= set(ch.parties):
            raise ValueError(f"computers must be three distinct parties of the session, got {list(comps)}")
        if len(ch.parties) < 3:
            raise ValueError("RSS3 needs a session of at least three parties")
        await agree(ch, f"{tag}/create", computers=list(comps))
        peers = [p for p in ch.parties if p != ch.me] if ch.me in comps else list(comps)
        got = await asyncio.gather(*(pairwise_seed(ch, p) for p in peers))
        return cls(ch, (comps[0], comps[1], comps[2]), tag, dict(zip(peers, got)))

    def child(self, name: str) -> RSS3:
        """An engine over the same parties and seeds in the tag namespace ``tag/name``: its steps
        are counted apart, so a computation on it may run concurrently with one on this engine (or
        another child) — every party must make the same children and, within each, the same calls in
        the same order. Fresh names only (a reused name would reuse mask tags, which
        :func:`mpc.keys.claim_tag` refuses). Local."""
        if not name or "/" in name:
            raise ValueError(f"a child engine's name is one non-empty path segment, got {name!r}")
        return RSS3(self.ch, self.computers, f"{self.tag}/{name}", self._seeds)

    # ----------------------------------------------------------------------- tags, masks, rounds
    def _step(self, session: bool = False) -> str:
        if session:
            self._sctr += 1
            return f"{self.tag}/s{self._sctr}"
        self._require_computing()
        self._cctr += 1
        return f"{self.tag}/c{self._cctr}"

    def _rotation(self) -> int:
        """Which computing party plays "c0" in the next bit injection (B2A, mul_bit): it sends one
        ring element more than the others, so the role rotates, evenly spreading the load. Every
        party counts its calls in the same order, so all agree."""
        r = self._rot % 3
        self._rot += 1
        return r

    def _require_computing(self) -> int:
        if self.idx is None:
            raise ValueError(f"{self.me} is not a computing party of this RSS3 context")
        return self.idx

    def _pair_streams(self, t: str, what: str, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
        """F(s_{i,i+1}, τ) and F(s_{i−1,i}, τ) for the fresh tag τ = t/what (``nbytes`` each)."""
        ft = claim_tag(self.ch, f"{t}/{what}")
        nxt = prg_bytes(step_key(self._seeds[self._next], ft), nbytes)
        prv = prg_bytes(step_key(self._seeds[self._prev], ft), nbytes)
        return nxt, prv

    def _zero_shares(self, t: str, like: list[np.ndarray], xor: bool) -> list[np.ndarray]:
        """This party's α for each array shape/dtype of ``like``: Σ_i α_i = 0 (or ⊕_i α_i = 0)."""
        sizes = [_pad8(x.nbytes) for x in like]
        nxt, prv = self._pair_streams(t, "zero", sum(sizes))
        out, off = [], 0
        for x, sz in zip(like, sizes):
            f1 = nxt[off : off + x.nbytes].view(x.dtype).reshape(x.shape)
            f2 = prv[off : off + x.nbytes].view(x.dtype).reshape(x.shape)
            out.append(f1 ^ f2 if xor else f1 - f2)
            off += sz
        return out

    async def _round(self, t: str, send: list[np.ndarray], expect: list[np.ndarray]) -> list[np.ndarray]:
        """Send ``send`` (one message) to the previous party; receive arrays shaped like ``expect`` from the next."""
        if send:
            await self.ch.send(self._prev, t, pack_arrays(*send))
        if not expect:
            return []
        got = unpack_arrays(await self.ch.recv(self._next, t))
        if len(got) != len(expect) or any(g.dtype != e.dtype or g.shape != e.shape for g, e in zip(got, expect)):
            want = ", ".join(f"{e.dtype}{list(e.shape)}" for e in expect)
            have = ", ".join(f"{g.dtype}{list(g.shape)}" for g in got)
            raise ProtocolError(f"{self._next} sent [{have}] where [{want}] was expected")
        return got

    async def _reshare(
        self, t: str, shares: list[np.ndarray], xor: bool, extra: tuple[int, np.ndarray] | None = None
    ) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray | None]:
        """3-out-of-3 shares → RSS in one round (z_i = s_i + α_i to party i−1).

        ``extra = (k, arr)``: party k also sends ``arr`` to party k−1 in the
        same message (every party passes an array of the right shape/dtype;
        only party k's is sent); party k−1 gets it back as the second result.
        """
        alphas = self._zero_shares(t, shares, xor)
        mine = [s ^ al if xor else s + al for s, al in zip(shares, alphas)]
        send, expect = list(mine), list(mine)
        if extra is not None:
            if self.idx == extra[0]:
                send.append(extra[1])
            if self.idx == (extra[0] - 1) % 3:
                expect.append(extra[1])
        got = await self._round(t, send, expect)
        pairs = [(m, g) for m, g in zip(mine, got)]
        return pairs, (got[len(mine)] if len(got) > len(mine) else None)

    async def _and_raw(
        self, t: str, xa: np.ndarray, xb: np.ndarray, ya: np.ndarray, yb: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """RSS AND on packed words: z_i = x_i y_i ⊕ x_i y_{i+1} ⊕ x_{i+1} y_i ⊕ α_i, one round."""
        s = (xa & (ya ^ yb)) ^ (xb & ya)
        ((za, zb),), _ = await self._reshare(t, [s], xor=True)
        return za, zb

    @staticmethod
    def _mul_local(x: Arith, y: Arith) -> np.ndarray:
        return x.a * (y.a + y.b) + x.b * y.a

    # ----------------------------------------------------------------------- local arithmetic
    @staticmethod
    def _same(x: Arith, y: Arith) -> None:
        if x.bits != y.bits or len(x) != len(y):
            raise ValueError(f"operands differ: {len(x)} elements mod 2^{x.bits} vs {len(y)} mod 2^{y.bits}")

    def public(self, values: Any, bits: int) -> Arith:
        """The sharing of a public vector (component 0 = values, the others 0); local."""
        idx = self._require_computing()
        v = _to_ring(values, _ring(bits)).reshape(-1)
        z = np.zeros_like(v)
        return Arith(v if idx == 0 else z, v.copy() if idx == 2 else z.copy(), bits)

    def add(self, x: Arith, y: Arith) -> Arith:
        """x + y; local."""
        self._same(x, y)
        return Arith(x.a + y.a, x.b + y.b, x.bits)

    def sub(self, x: Arith, y: Arith) -> Arith:
        """x − y; local."""
        self._same(x, y)
        return Arith(x.a - y.a, x.b - y.b, x.bits)

    def neg(self, x: Arith) -> Arith:
        """−x; local."""
        z = np.zeros_like(x.a)
        return Arith(z - x.a, z - x.b, x.bits)

    def add_const(self, x: Arith, c: Any) -> Arith:
        """x + c for a public scalar or per-element array c (added to component 0 once); local."""
        idx = self._require_computing()
        cc = _to_ring(c, x.dtype)
        return Arith(x.a + cc if idx == 0 else x.a.copy(), x.b + cc if idx == 2 else x.b.copy(), x.bits)

    def mul_const(self, x: Arith, c: Any) -> Arith:
        """c·x for a public scalar or per-element array c; local."""
        cc = _to_ring(c, x.dtype)
        return Arith(x.a * cc, x.b * cc, x.bits)

    def segment_sum(self, x: Arith, offsets: Any) -> Arith:
        """Sums over the contiguous segments ``[offsets[s], offsets[s+1])`` (the last one ends at len(x)).

        ``offsets`` (public) are non-decreasing in [0, len(x)]; an empty
        segment sums to 0 (unlike ``np.add.reduceat``). Local.
        """
        seg = _segment_summer(offsets, len(x))
        return Arith(seg(x.a), seg(x.b), x.bits)

    def take(self, x: Arith, idx: Any) -> Arith:
        """Elements ``idx`` (public indices, slice or mask) of x; local."""
        return Arith(x.a[idx], x.b[idx], x.bits)

    def concat(self, xs: Sequence[Arith]) -> Arith:
        """The vectors of ``xs`` (same ring) one after the other; local."""
        if not xs or len({x.bits for x in xs}) != 1:
            raise ValueError("concat needs at least one vector, all in the same ring")
        return Arith(np.concatenate([x.a for x in xs]), np.concatenate([x.b for x in xs]), xs[0].bits)

    # ----------------------------------------------------------------------- local boolean
    @staticmethod
    def _same_bool(x: Bool, y: Bool) -> None:
        if x.n != y.n or x.width != y.width:
            raise ValueError(f"operands differ: {x.width}×{x.n} vs {y.width}×{y.n} bits")

    def xor(self, x: Bool, y: Bool) -> Bool:
        """x ⊕ y; local."""
        self._same_bool(x, y)
        return Bool(x.a ^ y.a, x.b ^ y.b, x.n)

    def not_(self, x: Bool) -> Bool:
        """¬x (component 0 flipped); local."""
        idx = self._require_computing()
        return Bool(x.a ^ _ONES if idx == 0 else x.a.copy(), x.b ^ _ONES if idx == 2 else x.b.copy(), x.n)

    def public_bool(self, bits: Any) -> Bool:
        """The sharing of public bits (``(n,)`` or ``(width, n)``, 0/1); local."""
        idx = self._require_computing()
        arr = np.asarray(bits, np.uint8)
        arr = arr.reshape(1, -1) if arr.ndim == 1 else arr
        w = pack_bits(arr & 1)
        z = np.zeros_like(w)
        return Bool(w if idx == 0 else z, w.copy() if idx == 2 else z.copy(), int(arr.shape[1]))

    def planes(self, x: Bool, sel: Any) -> Bool:
        """Bit-planes ``sel`` (int, slice or index list) of x as a Bool; local."""
        s: Any = [sel] if isinstance(sel, (int, np.integer)) else sel
        return Bool(np.ascontiguousarray(x.a[s]), np.ascontiguousarray(x.b[s]), x.n)

    def stack(self, xs: Sequence[Bool]) -> Bool:
        """The planes of ``xs`` (same n) stacked into one Bool of summed width; local."""
        if not xs or len({x.n for x in xs}) != 1:
            raise ValueError("stack needs at least one Bool, all of the same length")
        return Bool(np.concatenate([x.a for x in xs]), np.concatenate([x.b for x in xs]), xs[0].n)

    def bool_take(self, x: Bool, idx: Any) -> Bool:
        """Elements ``idx`` (public) of every plane of x (unpacks and repacks); local."""
        a = unpack_bits(x.a, x.n)[:, idx]
        b = unpack_bits(x.b, x.n)[:, idx]
        return Bool(pack_bits(a), pack_bits(b), int(a.shape[1]))

    def bool_concat(self, xs: Sequence[Bool]) -> Bool:
        """The elements of ``xs`` (same width) one after the other (unpacks and repacks); local."""
        if not xs or len({x.width for x in xs}) != 1:
            raise ValueError("bool_concat needs at least one Bool, all of the same width")
        a = np.concatenate([unpack_bits(x.a, x.n) for x in xs], axis=1)
        b = np.concatenate([unpack_bits(x.b, x.n) for x in xs], axis=1)
        return Bool(pack_bits(a), pack_bits(b), int(a.shape[1]))

    # ----------------------------------------------------------------------- input
    async def input_bits(self, x_local: Any) -> Bool | None:
        """Every session party's 0/1 vector ``x_local`` XOR-shared, one plane per party (session
        order): computing parties get a Bool of width P, the others ``None``.

        A computing party c_i's own vector x is shared as x_{i+1} = F(s_{i,i+1}, τ), x_{i+2} = 0,
        x_i = x ⊕ x_{i+1}: c_i holds (x_i, x_{i+1}), c_{i+1} holds (x_{i+1}, 0) from the seed alone,
        c_{i+2} holds (0, x_i) and receives x_i — one bit per element, from the owner to one party.
        Each view is independent of x: c_{i+1} sees a PRG stream and 0, c_{i+2} sees 0 and x masked by
        a stream it does not know. (Any later step reshares with fresh zero-sharings, so the fixed 0
        component is never sent.) A non-computing party's vector is split 3-out-of-3 among the
        computing parties — the pieces for the computing parties it shares a seed with are PRG
        streams, the last piece is the vector XOR them, sent to ``c_{j mod 3}`` — and one reshare
        (fresh zero-sharing) makes it replicated. Rounds: one agreement, one upload (non-computing
        parties only), one exchange among the computing parties (their own vectors and the reshares
        in one message). Bits per element: one from each non-computing party; from each computing
        party one, plus one per non-computing party.
        """
        x = np.asarray(x_local).reshape(-1)
        if x.dtype != np.bool_ and x.dtype != np.uint8:  # packbits packs bytes as nonzero / zero as they are
            x = x != 0
        n = int(x.size)
        t = self._step(session=True)
        await agree(self.ch, t, n=n, bits=1)
        nc = self._noncomp
        nbytes = 8 * _words(n)

        def piece(p: str, c: str) -> np.ndarray:  # F(s_{p,c}, τ) as packed words
            ft = claim_tag(self.ch, f"{t}/bits/{p}>{c}")
            return prg_bytes(step_key(self._seeds[c if p == self.me else p], ft), nbytes).view(_U64)

        mine = pack_bits(x[None, :])[0]
        if self.idx is None:
            j0 = nc.index(self.me) % 3
            e = mine.copy()
            for j, c in enumerate(self.computers):
                if j != j0:
                    e ^= piece(self.me, c)
            await self.ch.send(self.computers[j0], f"{t}/bits", pack_arrays(e))
            return None
        uploads = [p for j, p in enumerate(nc) if j % 3 == self.idx]
        got = dict(zip(uploads, await asyncio.gather(*(self.ch.recv(p, f"{t}/bits") for p in uploads))))
        pieces = []  # this party's 3-out-of-3 piece of each non-computing party's vector
        for p in nc:
            if p in got:
                arrs = unpack_arrays(got[p])
                if len(arrs) != 1 or arrs[0].dtype != _U64 or arrs[0].shape != (nbytes // 8,):
                    raise ProtocolError(f"{p} sent a malformed bit input ({n} bits expected)")
                pieces.append(arrs[0])
            else:
                pieces.append(piece(p, self.me))
        ft_own = claim_tag(self.ch, f"{t}/own/{self.me}")
        r_own = prg_bytes(step_key(self._seeds[self._next], ft_own), nbytes).view(_U64)
        ft_prev = claim_tag(self.ch, f"{t}/own/{self._prev}")
        r_prev = prg_bytes(step_key(self._seeds[self._prev], ft_prev), nbytes).view(_U64)
        x_own = mine ^ r_own  # x_i of this party's own vector, for c_{i+2} = c_{i−1}
        alphas = self._zero_shares(f"{t}/conv", pieces, xor=True) if pieces else []
        z = [s ^ al for s, al in zip(pieces, alphas)]
        got_next = await self._round(f"{t}/conv", [x_own, *z], [x_own, *z])
        zero = np.zeros_like(mine)
        share: dict[str, tuple[np.ndarray, np.ndarray]] = {
            self.me: (x_own, r_own),
            self._next: (zero, got_next[0]),  # (x_{j+2}, x_j) of the next party's vector
            self._prev: (r_prev, zero),  # (x_{j+1}, x_{j+2}) of the previous party's vector
        }
        for p, zi, zn in zip(nc, z, got_next[1:]):
            share[p] = (zi, zn)
        a = np.stack([share[p][0] for p in self.ch.parties])
        b = np.stack([share[p][1] for p in self.ch.parties])
        return Bool(a, b, n)

    async def or_planes(self, x: Bool) -> Bool:
        """Width-1 OR of the planes of x: a tree of ANDs on the negations (⌈log2 width⌉ rounds,
        width − 1 AND bits per element). Reveals nothing."""
        while x.width > 1:
            h = x.width // 2
            lo, hi = self.planes(x, slice(0, h)), self.planes(x, slice(h, 2 * h))
            both = self.not_(await self.and_(self.not_(lo), self.not_(hi)))
            x = self.stack([both, self.planes(x, slice(2 * h, x.width))]) if x.width % 2 else both
        return x

    async def input_sum(self, x_local: Any, bits: int) -> Arith | None:
        """RSS of ``Σ_p x_p mod 2^bits`` over every session party's vector ``x_local``.

        Every session party calls it; all vectors must have the same length
        (checked with :func:`mpc.channel.agree`, then :class:`InputMismatchError`
        everywhere). Computing parties get the :class:`Arith` share, the others
        ``None``.

        Rounds: one agreement, one upload (non-computing party j, in session
        order among the non-computing parties, sends one piece to
        ``c_{j mod 3}``; its other two pieces are PRG-expanded from seeds), one
        reshare. Bytes per element: R/8 from each non-computing party and R/8
        from each computing party. Reveals nothing: every message is masked by
        a PRG stream its receiver does not know.
        """
        t, s = await self._input_pieces(x_local, bits)
        if s is None:
            return None
        ((ya, yb),), _ = await self._reshare(f"{t}/conv", [s], xor=False)
        return Arith(ya, yb, bits)

    async def input_additive(self, x_local: Any, bits: int) -> np.ndarray | None:
        """``Σ_p x_p mod 2^bits`` over every session party's vector as a 3-out-of-3 *additive* sharing:
        computing party c_i gets its piece s_i in the clear (its own vector plus its pieces of the
        non-computing parties' vectors; s_0 + s_1 + s_2 = Σ_p x_p), the others ``None`` — the first
        half of :meth:`input_sum`, without the reshare, for :meth:`mul_bit_additive`. Every session
        party calls it. Rounds: one agreement, one upload (non-computing parties only); nothing sent
        by a computing party. Reveals nothing (a piece received is masked by PRG streams its
        receiver does not know)."""
        return (await self._input_pieces(x_local, bits))[1]

    async def _input_pieces(self, x_local: Any, bits: int) -> tuple[str, np.ndarray | None]:
        """The step's tag and this computing party's additive piece of Σ_p x_p (None elsewhere)."""
        dt = _ring(bits)
        x = _to_ring(x_local, dt).reshape(-1)
        n = x.size
        t = self._step(session=True)
        await agree(self.ch, t, n=int(n), bits=int(bits))
        nc = self._noncomp

        def piece(p: str, c: str) -> np.ndarray:  # F(s_{p,c}, τ) as n ring elements
            ft = claim_tag(self.ch, f"{t}/in/{p}>{c}")
            return prg_bytes(step_key(self._seeds[c if p == self.me else p], ft), n * dt.itemsize).view(dt)

        if self.idx is None:
            j0 = nc.index(self.me) % 3
            e = x.copy()
            for j, c in enumerate(self.computers):
                if j != j0:
                    e -= piece(self.me, c)
            await self.ch.send(self.computers[j0], f"{t}/in", pack_arrays(e))
            return t, None

        s = x.copy()
        senders = []
        for j, p in enumerate(nc):
            if j % 3 == self.idx:
                senders.append(p)
            else:
                s += piece(p, self.me)
        for p, payload in zip(senders, await asyncio.gather(*(self.ch.recv(p, f"{t}/in") for p in senders))):
            got = unpack_arrays(payload)
            if len(got) != 1 or got[0].dtype != dt or got[0].shape != (n,):
                raise ProtocolError(f"{p} sent a malformed input piece ({n} elements mod 2^{bits} expected)")
            s += got[0]
        return t, s

    async def reshare_additive(self, pieces: Any, bits: int) -> Arith:
        """A 3-out-of-3 additive sharing (this computing party's piece ``pieces``, s_0 + s_1 + s_2 = x)
        as RSS of x mod 2^bits: one round, ``y_i = s_i + α_i`` to party i−1 with a fresh zero-sharing
        α (Araki et al., CCS 2016). R/8 bytes per element from each computing party. Reveals
        nothing."""
        self._require_computing()
        s = _to_ring(pieces, _ring(bits)).reshape(-1)
        t = self._step()
        ((ya, yb),), _ = await self._reshare(t, [s], xor=False)
        return Arith(ya, yb, bits)

    async def mul_bit_additive(self, x: Bool, v: np.ndarray, bits: int) -> np.ndarray:
        """Per element, this computing party's 3-out-of-3 additive piece of x·V mod 2^bits, where x is
        a width-1 replicated Bool and V = v_0 + v_1 + v_2 is held additively (c_i knows its piece
        v_i in the clear: its own counts, :meth:`input_additive`). One round; R/8 bytes per element
        sent by each computing party, to the next one — a third of what injecting x into the ring
        (:meth:`b2a`) and inputting V (:meth:`input_sum`) for a product cost.

        Construction. c_i holds (x_i, x_{i+1}), so it knows u_i = x_i ⊕ x_{i+1}; the missing
        component m = x_{i+2} is held by both other parties. With the bit-injection identity of
        ABY3 (Mohassel & Rindal, CCS 2018, §5.4) x = u_i ⊕ m = u_i + m·(1 − 2u_i), so
        v_i·x = v_i·u_i + m·w_i with w_i = v_i·(1 − 2u_i) known to c_i. c_i keeps v_i·u_i and sends
        e_i = w_i + r_i to c_{i+1}, r_i = F(s_{i−1,i}, τ) the PRG stream it shares with c_{i−1};
        c_{i+1} (which holds m as its second component) takes m·e_i and c_{i−1} (which holds m as
        its first) takes −m·r_i: the three add up to v_i·x. Summed over i: x·V.

        Reveals nothing: c_{i+1} sees w_i masked by r_i, a stream it does not know; c_{i−1} sees no
        message. The output pieces are not uniform on their own — reshare them
        (:meth:`reshare_additive`, fresh zero-sharing) or sum them per segment first, never open them
        directly."""
        self._require_computing()
        if x.width != 1:
            raise ValueError(f"expected a width-1 Bool, got width {x.width}")
        dt = _ring(bits)
        vi = _to_ring(v, dt).reshape(-1)
        if vi.shape[0] != x.n:
            raise ValueError(f"mul_bit_additive operands differ in length: {x.n} bits vs {vi.shape[0]} values")
        t = self._step()
        xa, xb = self._unpacked(x)  # 0/1 bytes: products with them stay in the ring's dtype
        own = vi * (xa ^ xb)  # v_i·u_i
        r_mine, r_prev = self._pair_streams(t, "mask", x.n * dt.itemsize)  # F(s_{i,i+1}), F(s_{i−1,i})
        # c_i's mask is F(s_{i−1,i}) (known to c_{i−1}); the next party's mask F(s_{i,i+1}) is known here
        e = vi - own
        e -= own  # w_i = v_i·(1 − 2u_i)
        e += r_prev.view(dt)
        await self.ch.send(self._next, f"{t}/e", pack_arrays(e))
        got = unpack_arrays(await self.ch.recv(self._prev, f"{t}/e"))
        if len(got) != 1 or got[0].dtype != dt or got[0].shape != (x.n,):
            raise ProtocolError(f"{self._prev} sent a malformed masked vector ({x.n} elements mod 2^{bits} expected)")
        # from c_{i−1}: its missing component is x_{i+1} (xb here); for c_{i+1}: its missing x_{i+3} = x_i (xa)
        out = got[0] * xb
        out += own
        out -= r_mine.view(dt) * xa
        return out

    # ----------------------------------------------------------------------- products
    async def mul(self, x: Arith, y: Arith) -> Arith:
        """x·y elementwise mod 2^R. One round; R/8 bytes per element sent by each computing party.

        Reveals nothing (the reshared value is masked by a fresh zero-sharing).
        """
        self._same(x, y)
        t = self._step()
        ((za, zb),), _ = await self._reshare(t, [self._mul_local(x, y)], xor=False)
        return Arith(za, zb, x.bits)

    async def segment_dot(self, x: Arith, y: Arith, offsets: Any) -> Arith:
        """Σ x·y over each contiguous segment ``[offsets[s], offsets[s+1])`` (public offsets, as
        :meth:`segment_sum`), mod 2^R. One round; R/8 bytes per *segment* sent by each computing
        party, whatever the segments' lengths: each party sums its local product terms over a
        segment before the one reshare — the dot product of replicated sharing (Araki et al., CCS
        2016; ABY3, Mohassel & Rindal, CCS 2018). Reveals nothing."""
        self._same(x, y)
        part = _segment_summer(offsets, len(x))(self._mul_local(x, y))
        t = self._step()
        ((za, zb),), _ = await self._reshare(t, [part], xor=False)
        return Arith(za, zb, x.bits)

    async def and_(self, x: Bool, y: Bool) -> Bool:
        """x ∧ y on every plane. One round; one bit per element and plane sent by each computing party
        (packed: 8·width·ceil(n/64) bytes). Reveals nothing."""
        self._same_bool(x, y)
        t = self._step()
        za, zb = await self._and_raw(t, x.a, x.b, y.a, y.b)
        return Bool(za, zb, x.n)

    # ----------------------------------------------------------------------- boolean counting
    async def popcount(self, x: Bool) -> Bool:
        """Per element, the number of its planes that are 1, as a Bool of ``w = width.bit_length()``
        planes (plane j = bit j of the count).

        A carry-save (Wallace/Dadda) reduction: per layer, three bits of one weight go through a full
        adder (sum a ⊕ b ⊕ c, carry ((a ⊕ c) ∧ (b ⊕ c)) ⊕ c: one AND), two through a half adder, all
        of a layer's ANDs in one :meth:`and_` (Wallace, "A suggestion for a fast multiplier", IEEE
        Trans. Electronic Computers, 1964). About ``width`` ANDs per element in O(log width) rounds —
        one bit each, where injecting every plane into a ring (:meth:`b2a`) to add them would send
        a ring element per plane. Reveals nothing."""
        self._require_computing()
        cols: dict[int, list[Bool]] = {0: [self.planes(x, j) for j in range(x.width)]}
        while any(len(v) >= 2 for v in cols.values()):
            xs: list[Bool] = []
            ys: list[Bool] = []
            plan: list[tuple[int, Bool | None]] = []
            nxt: dict[int, list[Bool]] = {}
            for w in sorted(cols):
                vs, i = cols[w], 0
                out = nxt.setdefault(w, [])
                while len(vs) - i >= 3:
                    a, b, c = vs[i : i + 3]
                    i += 3
                    out.append(self.xor(self.xor(a, b), c))
                    xs.append(self.xor(a, c))
                    ys.append(self.xor(b, c))
                    plan.append((w + 1, c))
                if len(vs) - i == 2:
                    a, b = vs[i : i + 2]
                    i += 2
                    out.append(self.xor(a, b))
                    xs.append(a)
                    ys.append(b)
                    plan.append((w + 1, None))
                out.extend(vs[i:])
            z = await self.and_(self.stack(xs), self.stack(ys))
            for j, (w, cin) in enumerate(plan):
                carry = self.planes(z, j)
                nxt.setdefault(w, []).append(carry if cin is None else self.xor(carry, cin))
            cols = {w: v for w, v in nxt.items() if v}
        width = max(int(x.width).bit_length(), 1)
        zero = self.public_bool(np.zeros(x.n, np.uint8))
        return self.stack([cols[w][0] if cols.get(w) else zero for w in range(width)])

    async def ge_public(self, x: Bool, c: int) -> Bool:
        """Width-1 ``[v ≥ c]`` for the unsigned numbers v of the planes of x (plane j = bit j) and a
        public c ≥ 0: the carry out of v + (2^w − c), rippled through the w bits (one AND per bit where
        a carry can occur, so at most w rounds of one AND). Reveals nothing."""
        self._require_computing()
        w = x.width
        ones = self.public_bool(np.ones(x.n, np.uint8))
        if c <= 0:
            return ones
        if c >= 1 << w:
            return self.not_(ones)
        k = (1 << w) - int(c)
        carry: Bool | None = None  # None: the public 0
        for j in range(w):
            xj = self.planes(x, j)
            if (k >> j) & 1:
                # x_j + 1 + carry ≥ 2 ⟺ x_j ∨ carry
                carry = xj if carry is None else self.not_(await self.and_(self.not_(xj), self.not_(carry)))
            elif carry is not None:
                carry = await self.and_(xj, carry)
        return carry if carry is not None else self.not_(ones)

    # ----------------------------------------------------------------------- comparison
    async def ltz(self, a: Arith, bits: int) -> Bool:
        """Width-1 Bool of ``[v < 0]`` where v is ``a mod 2^bits`` read as a ``bits``-bit two's-complement number.

        The caller guarantees |v| < 2^(bits−1) where the sign should mean "v
        negative" (e.g. differences of values below 2^(bits−1)). Rounds:
        :func:`ltz_rounds` (6 for bits = 16, 7 for 32); bits sent per element
        by each computing party: :func:`ltz_and_count` (51 for 16 bits, 114
        for 32), all elements of a round in one message. Reveals nothing.
        """
        return (await self._ltz_many(self._step(), [(a, bits)]))[0]

    async def less_than(self, a: Arith, c: Any, bits: int) -> Bool:
        """``[v < c]`` for a public scalar or per-element ``c``: :meth:`ltz` of ``a − c`` (needs |v − c| < 2^(bits−1)).

        Same rounds and bytes as :meth:`ltz`; reveals nothing.
        """
        cc = _to_ring(c, a.dtype)
        return await self.ltz(self.add_const(a, np.zeros_like(cc) - cc), bits)

    async def _ltz_many(self, t: str, items: Sequence[tuple[Arith, int]]) -> list[Bool]:
        """Sign bits of several vectors (own widths) in ONE circuit of the widest width K.

        A k-bit item's components are shifted left by K − k (mod 2^K), so bit
        K − 1 of their sum is bit k − 1 of the k-bit sum. Items are laid out
        word-aligned side by side, so the results split without bit shifting.
        """
        if not items:
            return []
        for x, b in items:
            if not (isinstance(b, (int, np.integer)) and 1 <= b <= x.bits):
                raise ValueError(f"comparison width must be in 1..{x.bits} for a ring of {x.bits} bits, got {b!r}")
        K = int(max(b for _, b in items))
        pa, pb, widths = [], [], []
        for x, b in items:
            dt = x.dtype if K <= x.bits else _U64  # shift in the narrowest dtype that holds K bits
            sh, mask = dt.type(K - int(b)), dt.type((1 << K) - 1)
            pa.append(_to_planes((x.a.astype(dt, copy=False) << sh) & mask, K))
            pb.append(_to_planes((x.b.astype(dt, copy=False) << sh) & mask, K))
            widths.append(pa[-1].shape[1])
        A, B = np.concatenate(pa, axis=1), np.concatenate(pb, axis=1)
        # S = a_0 ⊕ a_1 ⊕ a_2: party i's pair (bits of a_i, bits of a_{i+1}) already is its share of S
        top_a, top_b = A[K - 1].copy(), B[K - 1].copy()
        if K >= 2:
            # carries maj(a_0, a_1, a_2) = a_0a_1 ⊕ a_1a_2 ⊕ a_2a_0: party i knows the monomial a_i a_{i+1}
            ((ca, cb),), _ = await self._reshare(f"{t}/maj", [A[: K - 1] & B[: K - 1]], xor=True)
            top_a ^= ca[K - 2]
            top_b ^= cb[K - 2]
            if K >= 3:
                # carry into bit K−1 of S + 2·maj over positions 1..K−2 (position 0 has no carry-in)
                sa, sb, ya, yb = A[1 : K - 1], B[1 : K - 1], ca[: K - 2], cb[: K - 2]
                ga, gb = await self._and_raw(f"{t}/gen", sa, sb, ya, yb)
                qa, qb = sa ^ ya, sb ^ yb
                level = 0
                while ga.shape[0] > 1:
                    m = ga.shape[0]
                    p = m // 2
                    lo, hi = slice(0, 2 * p, 2), slice(1, 2 * p, 2)
                    # (G, P)_hi ∘ (G, P)_lo = (G_hi ⊕ P_hi∧G_lo, P_hi∧P_lo); the lowest node's P is never needed
                    xa = np.concatenate([qa[hi], qa[hi][1:]])
                    xb = np.concatenate([qb[hi], qb[hi][1:]])
                    za_, zb_ = await self._and_raw(
                        f"{t}/pp{level}",
                        xa,
                        xb,
                        np.concatenate([ga[lo], qa[lo][1:]]),
                        np.concatenate([gb[lo], qb[lo][1:]]),
                    )
                    nga, ngb = ga[hi] ^ za_[:p], gb[hi] ^ zb_[:p]
                    zero = np.zeros((1, ga.shape[1]), _U64)
                    nqa, nqb = np.concatenate([zero, za_[p:]]), np.concatenate([zero, zb_[p:]])
                    if m % 2:
                        nga, ngb = np.concatenate([nga, ga[-1:]]), np.concatenate([ngb, gb[-1:]])
                        nqa, nqb = np.concatenate([nqa, qa[-1:]]), np.concatenate([nqb, qb[-1:]])
                    ga, gb, qa, qb = nga, ngb, nqa, nqb
                    level += 1
                top_a ^= ga[0]
                top_b ^= gb[0]
        out, off = [], 0
        for (x, _), w in zip(items, widths):
            out.append(Bool(top_a[None, off : off + w].copy(), top_b[None, off : off + w].copy(), len(x)))
            off += w
        return out

    # ----------------------------------------------------------------------- bit injection
    def _unpacked(self, x: Bool) -> tuple[np.ndarray, np.ndarray]:
        if x.width != 1:
            raise ValueError(f"expected a width-1 Bool, got width {x.width}")
        return unpack_bits(x.a[0], x.n), unpack_bits(x.b[0], x.n)

    def _u_share(self, t: str, xa: np.ndarray, xb: np.ndarray, dt: np.dtype, v: int) -> tuple[np.ndarray, np.ndarray]:
        """c0's local part of the RSS of u = x_0 ⊕ x_1: (u − σ, σ) on c0, (σ, 0) on c1, (·, 0) on c2.

        σ = F(s_{01}, τ). Returns (first half, second half); c2's first half
        (u − σ) arrives in the next round.
        """
        n = xa.shape[0]
        z = np.zeros(n, dt)
        if v == 0:
            sigma = self._pair_streams(t, "sigma", n * dt.itemsize)[0].view(dt)
            return (xa ^ xb).astype(dt) - sigma, sigma.copy()
        if v == 1:
            sigma = self._pair_streams(t, "sigma", n * dt.itemsize)[1].view(dt)
            return sigma.copy(), z
        return z, z.copy()

    @staticmethod
    def _x2_share(idx: int, xa: np.ndarray, xb: np.ndarray, dt: np.dtype) -> tuple[np.ndarray, np.ndarray]:
        """RSS of x_2 (known to c1 and c2) in the ring: components (0, 0, x_2)."""
        z = np.zeros(xa.shape[0], dt)
        if idx == 1:
            return z, xb.astype(dt)
        if idx == 2:
            return xa.astype(dt), z
        return z, z.copy()

    async def b2a(self, x: Bool, bits: int) -> Arith:
        """The 0/1 value of a width-1 Bool as an arithmetic sharing mod 2^bits.

        ``x = u + x_2 − 2·u·x_2`` with ``u = x_0 ⊕ x_1`` known to c0. Rounds: 2
        (c0 sends ``u − σ`` to c2, then one multiplication). Bytes per element:
        2·R/8 from c0, R/8 from c1 and c2 — "c0" is a role that rotates over the three computing
        parties from call to call (:meth:`_rotation`). Reveals nothing.
        """
        idx = self._require_computing()
        dt = _ring(bits)
        t = self._step()
        r = self._rotation()
        v = (idx - r) % 3  # this party's role: the role of "c0" rotates from call to call
        xa, xb = self._unpacked(x)
        ua, ub = self._u_share(t, xa, xb, dt, v)
        got = await self._round(f"{t}/u", [ua] if v == 0 else [], [ua] if v == 2 else [])
        if v == 2:
            ub = got[0]  # the role-2 party holds (u_2, u_0) = (0, u − σ)
            ua, ub = np.zeros_like(ub), ub.copy()
        u = Arith(ua, ub, bits)
        x2a, x2b = self._x2_share(v, xa, xb, dt)
        x2 = Arith(x2a, x2b, bits)
        ((pa, pb),), _ = await self._reshare(f"{t}/mul", [self._mul_local(u, x2)], xor=False)
        two = dt.type(2)
        return Arith(ua + x2a - two * pa, ub + x2b - two * pb, bits)

    async def lift(self, x: Arith, bits: int) -> Arith:
        """x mod 2^r (read as unsigned, r = x.bits) as a sharing mod 2^bits, for bits ≥ r + 3.

        The three components x_0, x_1, x_2 < 2^r are added over the integers, locally, in the
        wider ring: X = x + 2^r·w with the wrap count w = [X ≥ 2^r] + [X ≥ 2^(r+1)] ∈ {0, 1, 2}.
        Both comparisons run in one :meth:`ltz` circuit of r + 3 bits and their bits are injected
        (:meth:`b2a`), so x = X − 2^(r+1) + 2^r·([X < 2^r] + [X < 2^(r+1)]). This is the
        comparison-based share conversion of ABY3 (Mohassel, Rindal, CCS 2018) for the
        three-component case. Rounds: :func:`ltz_rounds` (r + 3) + 2; per element about
        :func:`ltz_and_count` (r + 3) bits and 2·3·bits/8 bytes per computing party, for two
        elements. Meant for short vectors (per-node sums), not per cell. Reveals nothing.
        """
        self._require_computing()
        r = x.bits
        if bits < r + 3 or bits not in RING_DTYPES:
            raise ValueError(f"lifting a {r}-bit ring needs a ring of at least {r + 3} bits, got {bits}")
        dt = _ring(bits)
        wide = Arith(x.a.astype(dt), x.b.astype(dt), bits)  # the components, now summed without wrapping
        m = len(x)
        consts = np.concatenate([np.full(m, 1 << r), np.full(m, 1 << (r + 1))]).astype(np.int64)
        below = await self.less_than(self.concat([wide, wide]), consts, r + 3)
        inj = await self.b2a(below, bits)
        both = Arith(inj.a[:m] + inj.a[m:], inj.b[:m] + inj.b[m:], bits)
        return self.add_const(self.add(wide, self.mul_const(both, 1 << r)), -(1 << (r + 1)))

    async def mul_bit(self, x: Bool, a: Arith) -> Arith:
        """x·a for a width-1 Bool x and an arithmetic vector a (same length).

        ``x·a = w + u·(a − 2w)`` with ``w = x_2·a``: round 1 computes w and
        shares u (in the same message), round 2 one multiplication. Rounds: 2.
        Bytes per element: 2·R/8 from each computing party (+R/8 from the party in the rotating
        role c0, :meth:`_rotation`).
        Reveals nothing.
        """
        return (await self._mul_bit_many(self._step(), x, [a]))[0]

    async def _mul_bit_many(self, t: str, x: Bool, arrs: Sequence[Arith]) -> list[Arith]:
        """x·a for every a of ``arrs`` (any rings, each of length x.n), two rounds in all."""
        idx = self._require_computing()
        for a in arrs:
            if len(a) != x.n:
                raise ValueError(f"mul_bit operands differ in length: {x.n} bits vs {len(a)} values")
        wide = RING_DTYPES[max(a.bits for a in arrs)]
        r = self._rotation()
        v = (idx - r) % 3  # this party's role: the role of "c0" rotates from call to call
        xa, xb = self._unpacked(x)
        ua, ub = self._u_share(t, xa, xb, wide, v)
        x2s = [self._x2_share(v, xa, xb, a.dtype) for a in arrs]
        w_local = [self._mul_local(Arith(c[0], c[1], a.bits), a) for c, a in zip(x2s, arrs)]
        ws, got_u = await self._reshare(f"{t}/w", w_local, xor=False, extra=(r, ua))
        if v == 2:
            assert got_u is not None
            ua, ub = np.zeros_like(got_u), got_u.copy()
        round2 = []
        for (wa, wb), a in zip(ws, arrs):
            two = a.dtype.type(2)
            d = Arith(a.a - two * wa, a.b - two * wb, a.bits)
            round2.append(self._mul_local(Arith(ua.astype(a.dtype), ub.astype(a.dtype), a.bits), d))
        prods, _ = await self._reshare(f"{t}/ud", round2, xor=False)
        return [Arith(wa + pa, wb + pb, a.bits) for (wa, wb), (pa, pb), a in zip(ws, prods, arrs)]

    # ----------------------------------------------------------------------- opening
    async def _reconstruct(self, t: str, x: Arith | Bool) -> np.ndarray:
        """Each computing party gets its missing component x_{i+2} from party i+1 (which holds it second)."""
        got = (await self._round(t, [x.b], [x.b]))[0]
        if isinstance(x, Arith):
            return x.a + x.b + got
        v = unpack_bits(x.a ^ x.b ^ got, x.n)
        return v[0] if x.width == 1 else v

    async def open(self, x: Arith | Bool | None, to: str | None = None) -> np.ndarray | None:
        """Reveal x: to the computing parties (``to=None``) or to every session party (``to="all"``).

        Returns the plain vector (ring dtype for :class:`Arith`; uint8 0/1 of
        shape (n,) for a width-1 :class:`Bool`, (width, n) otherwise) on the
        parties that receive it, ``None`` elsewhere. With ``to=None`` only
        computing parties need to call (others get ``None`` at once); with
        ``to="all"`` every session party calls, non-computing ones with
        ``x=None``. Rounds: 1 (+1 to reach non-computing parties). Bytes per
        element: R/8 (or width/8) from each computing party, plus the value
        to each non-computing party ``p_j`` from ``c_{j mod 3}``.
        Reveals exactly the value of x.
        """
        if to not in (None, "all"):
            raise ValueError(f"to must be None or 'all', got {to!r}")
        if to is None:
            if self.idx is None:
                return None
            if x is None:
                raise ValueError("a computing party must pass its share to open")
            return await self._reconstruct(self._step(), x)
        t = self._step(session=True)
        if self.idx is None:
            frm = self.computers[self._noncomp.index(self.me) % 3]
            got = unpack_arrays(await self.ch.recv(frm, f"{t}/out"))
            if len(got) == 1:
                return got[0]
            if len(got) == 2 and got[0].dtype == _U64 and got[0].ndim == 2 and got[1].shape == (1,):
                n = int(got[1][0])
                if got[0].shape[1] != _words(n):
                    raise ProtocolError(f"{frm} sent a malformed bit vector")
                v = unpack_bits(got[0], n)
                return v[0] if v.shape[0] == 1 else v
            raise ProtocolError(f"{frm} sent a malformed opened value")
        if x is None:
            raise ValueError("a computing party must pass its share to open")
        value = await self._reconstruct(f"{t}/rec", x)
        if isinstance(x, Arith):
            payload = pack_arrays(value)
        else:
            payload = pack_arrays(pack_bits(value.reshape(x.width, x.n)), np.array([x.n], np.uint64))
        dests = [p for j, p in enumerate(self._noncomp) if j % 3 == self.idx]
        await asyncio.gather(*(self.ch.send(p, f"{t}/out", payload) for p in dests))
        return value

    # ----------------------------------------------------------------------- arg-min
    async def argmin(self, keys: Sequence[Arith] | None, bits: Sequence[int]) -> int:
        """Index of the lexicographically smallest ``(keys[0][i], keys[1][i], ...)``; ties → smallest i.

        Key values must be non-negative and below 2^(bits[j]−1) (so that
        differences keep their sign). Every session party calls it;
        non-computing parties pass ``keys=None``. A tournament in groups
        (:func:`argmin_plan`: as few levels as keep each level's comparisons
        below :data:`ARGMIN_MAX_PAIRS`, two on a thousand keys, where pairs took
        ten): per level, every pair of a group is compared in one batched
        :meth:`ltz` circuit of the widest key (both directions with several
        keys, folded by ceil(log2 #keys) AND rounds), each member's "beats
        every other member" bits are ANDed by a tree (ceil(log2(g − 1))
        rounds) into a one-hot winner per group, and two rounds of oblivious
        selection (:meth:`mul_bit` of the one-hot bits, summed per group) carry
        every key and the index up. Opens ONLY the winning index, to all
        session parties.
        """
        t_open = self._step(session=True)  # taken first, on every party, so concurrent calls stay aligned
        if self.idx is None:
            frm = self.computers[self._noncomp.index(self.me) % 3]
            got = unpack_arrays(await self.ch.recv(frm, f"{t_open}/out"))
            if len(got) != 1 or got[0].shape != (1,) or got[0].dtype.kind != "u":
                raise ProtocolError(f"{frm} sent a malformed arg-min index")
            return int(got[0][0])
        if not keys or len(keys) != len(bits) or len({len(k) for k in keys}) != 1 or len(keys[0]) == 0:
            raise ValueError("argmin needs one bit width per key and non-empty keys of equal length")
        t = self._step()
        n = len(keys[0])
        cur = list(keys) + [self.public(np.arange(n), 32 if n < 2**31 else 64)]
        nk = len(keys)
        # a key's largest allowed value pads the last group: it never wins (ties go to the lower index)
        top = [(1 << (int(b) - 1)) - 1 for b in bits] + [n]
        for level, g in enumerate(argmin_plan(n, nk, max(int(b) for b in bits))):
            m = len(cur[0])
            pad = -m % g
            if pad:
                cur = [self.concat([k, self.public(np.full(pad, v), k.bits)]) for k, v in zip(cur, top)]
            groups = (m + pad) // g
            lo, hi = np.triu_indices(g, 1)  # the pairs (lo < hi) of a group
            base = (np.arange(groups, dtype=np.int64) * g)[:, None]
            left, right = (base + lo[None, :]).ravel(), (base + hi[None, :]).ravel()
            items: list[tuple[Arith, int]] = []
            for j in range(nk):
                kl, kr = self.take(cur[j], left), self.take(cur[j], right)
                items.append((self.sub(kr, kl), bits[j]))  # [R < L]
                if nk > 1:
                    items.append((self.sub(kl, kr), bits[j]))  # [L < R], for the keys' equality
            cmp = await self._ltz_many(f"{t}/v{level}/cmp", items)
            if nk > 1:
                lt = [cmp[2 * j] for j in range(nk)]
                eq = [self.not_(self.xor(cmp[2 * j], cmp[2 * j + 1])) for j in range(nk)]
                later = await self._lex(f"{t}/v{level}/lex", lt, eq)  # the later member comes first
            else:
                later = cmp[0]
            win = await self._group_winners(f"{t}/v{level}/all", later, groups, g)
            sel = await self._mul_bit_many(f"{t}/v{level}/mux", win, cur)
            cur = [self._group_sums(x, g) for x in sel]
        winner = await self._reconstruct(f"{t_open}/rec", cur[-1])
        payload = pack_arrays(winner.astype(np.uint64))
        dests = [q for j, q in enumerate(self._noncomp) if j % 3 == self.idx]
        await asyncio.gather(*(self.ch.send(q, f"{t_open}/out", payload) for q in dests))
        return int(winner[0])

    async def _group_winners(self, t: str, later: Bool, groups: int, g: int) -> Bool:
        """One-hot winners of ``groups`` groups of ``g``: member i wins iff it beats every other member,
        where ``later`` holds, per pair (lo < hi) of a group in :func:`numpy.triu_indices` order, the bit
        "hi comes first" (so lo beats hi on its negation). The g − 1 bits of each member are ANDed by
        a tree, ceil(log2(g − 1)) rounds."""
        npairs = g * (g - 1) // 2
        neg = self.not_(later)
        a = np.concatenate([unpack_bits(later.a[0], later.n), unpack_bits(neg.a[0], neg.n)])
        b = np.concatenate([unpack_bits(later.b[0], later.n), unpack_bits(neg.b[0], neg.n)])
        pair = np.zeros((g, g), dtype=np.int64)  # the pair number of (i, j) within a group
        lo, hi = np.triu_indices(g, 1)
        pair[lo, hi] = pair[hi, lo] = np.arange(npairs)
        other = np.array([[j for j in range(g) if j != i] for i in range(g)], dtype=np.int64).reshape(g, g - 1)
        member = np.arange(g)[:, None]
        # member i against other j: "i beats j" is later[(j, i)] when i > j, else ¬later[(i, j)]
        idx = pair[member, other] + np.where(member > other, 0, groups * npairs)  # (g, g − 1)
        full = (np.arange(groups, dtype=np.int64) * npairs)[None, None, :] + idx[:, :, None]  # (g, g − 1, groups)
        sel = full.transpose(1, 2, 0).reshape(g - 1, groups * g)  # plane: the t-th other; element: group·g + i
        x = Bool(pack_bits(a[sel]), pack_bits(b[sel]), groups * g)
        level = 0
        while x.width > 1:
            h = x.width // 2
            both = Bool(*(await self._and_raw(f"{t}/{level}", x.a[:h], x.b[:h], x.a[h : 2 * h], x.b[h : 2 * h])), x.n)
            x = self.stack([both, self.planes(x, slice(2 * h, x.width))]) if x.width % 2 else both
            level += 1
        return x

    @staticmethod
    def _group_sums(x: Arith, g: int) -> Arith:
        """Sums over consecutive groups of ``g`` elements (the selected member's value); local."""
        return Arith(
            x.a.reshape(-1, g).sum(axis=1, dtype=x.dtype), x.b.reshape(-1, g).sum(axis=1, dtype=x.dtype), x.bits
        )

    async def _lex(self, t: str, lt: list[Bool], eq: list[Bool]) -> Bool:
        """Fold per-key (lt, eq), most significant key first: lt = lt_hi ⊕ eq_hi∧lt_lo, eq = eq_hi∧eq_lo."""
        la = np.concatenate([x.a for x in lt])
        lb = np.concatenate([x.b for x in lt])
        ea = np.concatenate([x.a for x in eq])
        eb = np.concatenate([x.b for x in eq])
        level = 0
        while la.shape[0] > 1:
            m = la.shape[0]
            p = m // 2
            hi, lo = slice(0, 2 * p, 2), slice(1, 2 * p, 2)
            last = m == 2  # the root's eq is never needed
            xa = ea[hi] if last else np.concatenate([ea[hi], ea[hi]])
            xb = eb[hi] if last else np.concatenate([eb[hi], eb[hi]])
            ya = la[lo] if last else np.concatenate([la[lo], ea[lo]])
            yb = lb[lo] if last else np.concatenate([lb[lo], eb[lo]])
            za, zb = await self._and_raw(f"{t}/{level}", xa, xb, ya, yb)
            nla, nlb = la[hi] ^ za[:p], lb[hi] ^ zb[:p]
            nea, neb = (za[p:], zb[p:]) if not last else (nla, nlb)
            if m % 2:
                nla, nlb = np.concatenate([nla, la[-1:]]), np.concatenate([nlb, lb[-1:]])
                nea, neb = np.concatenate([nea, ea[-1:]]), np.concatenate([neb, eb[-1:]])
            la, lb, ea, eb = nla, nlb, nea, neb
            level += 1
        return Bool(la, lb, lt[0].n)
