"""N-party XOR-shared bits: AND gates, daBits, and the sign of an additively shared sum.

Model and assumptions
---------------------
All N ≥ 2 parties of ``ch.parties`` take part; semi-honest, *dishonest
majority*: a value shared here is the XOR (or the sum mod 2^64) of one share
per party, so any coalition of up to N − 1 parties sees uniformly random
shares. Security is that of the random OTs of :mod:`mpc.ot_extension` (IKNP —
Y. Ishai, J. Kilian, K. Nissim, E. Petrank, "Extending oblivious transfers
efficiently", CRYPTO 2003 — with the TCCR hash of C. Guo, J. Katz, X. Wang, Y. Yu,
"Efficient and secure multiparty computation from fixed-key block ciphers", IEEE
S&P 2020) and of the pairwise-seed masks of :mod:`mpc.keys`.

Constructions
-------------
* AND gates in the GMW protocol (O. Goldreich, S. Micali, A. Wigderson, "How
  to play any mental game", STOC 1987) with Beaver triples (D. Beaver,
  "Efficient multiparty protocols using circuit randomization", CRYPTO 1991):
  open ``d = x ⊕ a``, ``e = y ⊕ b``; ``z = c ⊕ d∧b ⊕ e∧a ⊕ [party 0] d∧e``.
* Triples (:func:`bit_triples`): party p draws ``a_p``, ``b_p``;
  ``c = (⊕a)(⊕b)`` needs the cross terms ``a_p b_q`` of every ordered pair,
  each from one random bit OT (p sends, q chooses with ``b_q``; p corrects the
  random OT to its own ``a_p`` with one bit per triple) — the OT-based triple
  generation of GMW, as in Ishai–Kilian–Nissim–Petrank (CRYPTO 2003).
* daBits (:func:`dabits`): a random bit ``r = ⊕_p β_p`` held both as XOR
  shares ``β_p`` and as additive shares mod 2^64 (after Rotaru–Wood, "MArBled
  circuits", INDOCRYPT 2019). The XOR is folded in party by party,
  ``A ⊕ β = A + β − 2·A·β``, the product by Gilboa's correlated-OT
  multiplication (N. Gilboa, "Two party RSA key generation", CRYPTO 1999).
* Sign of a sum (:func:`msb_of_sum`): each party holds ``a_p``; the parties
  build ``r`` from ``k`` daBits, open ``c = Σ a_p + r mod 2^k`` (masked
  pairwise so no single contribution shows) and compute
  ``MSB(c − r) = c_{k−1} ⊕ r_{k−1} ⊕ [low(c) < low(r)]`` with a comparison
  tree over the XOR-shared bits of ``r`` and the public bits of ``c`` (the
  block tree of J. Garay, B. Schoenmakers, J. Villegas, "Practical and secure
  solutions for integer comparison", PKC 2007, with one-bit leaves,
  which need no gate because ``c`` is public). Since ``r`` is uniform mod
  2^k, ``c`` reveals nothing; only the output bit is opened.

Cost for n values of k bits: ``n·k·N(N−1)/2`` correlated OTs (daBits) and
``n·T(k−1)·N(N−1)`` random bit OTs (triples), with ``T(q) < 2q`` the AND
gates of the tree (:func:`tree_and_count`), ⌈log₂(k−1)⌉ AND rounds; about
16 bytes on the wire per OT. Everything is vectorized over the n values.
"""

from __future__ import annotations

import asyncio

import numpy as np

from .channel import Channel, broadcast, gather_from, pack_arrays, unpack_arrays
from .errors import ProtocolError
from .keys import random_bits
from .ot_extension import correlated_ot_recv, correlated_ot_send, random_bit_ot_recv, random_bit_ot_send

__all__ = ["bit_triples", "and_gate", "dabits", "msb_of_sum", "tree_and_count"]

_U64 = np.uint64


def _others(ch: Channel) -> list[str]:
    return [p for p in ch.parties if p != ch.me]


def _unpack_bits(payload: bytes, nbits: int, frm: str) -> np.ndarray:
    arrs = unpack_arrays(payload)
    if len(arrs) != 1 or arrs[0].dtype != np.uint8 or arrs[0].shape != ((nbits + 7) // 8,):
        raise ProtocolError(f"{frm} sent a malformed bit vector ({nbits} bits expected)")
    return np.unpackbits(arrs[0])[:nbits]


async def _broadcast_bits(ch: Channel, tag: str, bits: np.ndarray) -> np.ndarray:
    """XOR of every party's ``bits`` (each party sends its vector, packed, to every other)."""
    await broadcast(ch, tag, pack_arrays(np.packbits(bits)))
    total = bits.copy()
    for p, payload in (await gather_from(ch, tag)).items():
        total ^= _unpack_bits(payload, bits.size, p)
    return total


# --------------------------------------------------------------------------- triples and AND
async def bit_triples(ch: Channel, n: int, *, tag: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` Beaver bit triples XOR-shared among all parties: this party's ``(a, b, c)`` shares (uint8 0/1).

    ``⊕_p c_p = (⊕_p a_p) ∧ (⊕_p b_p)``. Per ordered pair (p, q), one random bit
    OT with p as sender and ``b_q`` as q's choice, plus one correction bit per
    triple from p; all pairs run concurrently.
    """
    me, others = ch.me, _others(ch)
    a, b = random_bits(n), random_bits(n)
    c = a & b
    if n == 0 or not others:
        return a, b, c

    async def as_sender(q: str) -> np.ndarray:
        r0, r1 = await random_bit_ot_send(ch, q, n, tag=f"{tag}/rot/{me}>{q}")
        corr = a ^ r0 ^ r1  # turns the random Δ = r0 ⊕ r1 into a_p
        await ch.send(q, f"{tag}/corr/{me}>{q}", pack_arrays(np.packbits(corr)))
        return np.asarray(r0, np.uint8)  # my share of a_me ∧ b_q

    async def as_receiver(q: str) -> np.ndarray:
        v = np.asarray(await random_bit_ot_recv(ch, q, b, tag=f"{tag}/rot/{q}>{me}"), np.uint8)
        corr = _unpack_bits(await ch.recv(q, f"{tag}/corr/{q}>{me}"), n, q)
        return v ^ (b & corr)  # my share of a_q ∧ b_me

    for s in await asyncio.gather(*(as_sender(q) for q in others), *(as_receiver(q) for q in others)):
        c ^= s
    return a, b, c


async def and_gate(
    ch: Channel, x: np.ndarray, y: np.ndarray, triples: tuple[np.ndarray, np.ndarray, np.ndarray], *, tag: str
) -> np.ndarray:
    """XOR share of ``x ∧ y`` from XOR shares (uint8 0/1, same length) and as many triples; one round."""
    n = x.size
    a, b, c = (t[:n] for t in triples)
    de = await _broadcast_bits(ch, tag, np.concatenate([x ^ a, y ^ b]))
    d, e = de[:n], de[n:]
    z = c ^ (d & b) ^ (e & a)
    return z ^ (d & e) if ch.me == ch.parties[0] else z


# --------------------------------------------------------------------------- daBits
async def dabits(ch: Channel, n: int, *, tag: str) -> tuple[np.ndarray, np.ndarray]:
    """``n`` random bits ``r = ⊕_p β_p``: this party's XOR share ``β`` (uint8) and additive share (uint64).

    ``Σ_p share_p = r (mod 2^64)``. Folded in party order: after parties
    0..p−1 hold additive shares ``s_h`` of ``A = β_0 ⊕ … ⊕ β_{p−1}``, party p
    joins with ``A ⊕ β_p = A + β_p − 2·A·β_p``; each holder h runs one
    correlated OT per bit with p (Δ = s_h, choice β_p), keeps ``s_h + 2·r_h``,
    and p takes ``β_p − 2·Σ_h (r_h + β_p·s_h)``.
    """
    parties, me = ch.parties, ch.parties.index(ch.me)
    beta = random_bits(n)
    share: np.ndarray = beta.astype(_U64) if me == 0 else np.zeros(n, _U64)
    two = _U64(2)
    for p in range(1, len(parties)):
        holders = parties[:p]
        if me < p:
            r = await correlated_ot_send(ch, parties[p], share, tag=f"{tag}/fold{p}/{ch.me}")
            share = share + two * r
        elif me == p:
            got = await asyncio.gather(*(correlated_ot_recv(ch, h, beta, tag=f"{tag}/fold{p}/{h}") for h in holders))
            prod = np.zeros(n, _U64)
            for g in got:
                prod += g
            share = beta.astype(_U64) - two * prod
    return beta, share


# --------------------------------------------------------------------------- comparison tree
def tree_and_count(q: int) -> int:
    """AND gates of the comparison tree over q leaves (lt for every pair, eq for all but the lowest)."""
    total, k = 0, q
    while k > 1:
        p, odd = divmod(k, 2)
        total += p + (p if odd else p - 1)
        k = p + odd
    return total


async def _lt_tree(ch: Channel, lt: np.ndarray, eq: np.ndarray, triples, tag: str) -> np.ndarray:
    """Fold (n, q) XOR-shared leaves, most significant first, to the root's ``lt``; one AND round per level.

    Merge of (hi, lo): ``lt = lt_hi ⊕ eq_hi ∧ lt_lo``, ``eq = eq_hi ∧ eq_lo``
    (⊕ is an OR: the two terms exclude each other); the lowest node's eq is never needed.
    """
    n, k = lt.shape
    used, level = 0, 0
    while k > 1:
        p, odd = divmod(k, 2)
        ne = p if odd else p - 1
        eq_hi, lt_lo, eq_lo = eq[:, 0 : 2 * p : 2], lt[:, 1 : 2 * p : 2], eq[:, 1 : 2 * p : 2]
        x = np.concatenate([eq_hi.reshape(-1), eq_hi[:, :ne].reshape(-1)])
        y = np.concatenate([lt_lo.reshape(-1), eq_lo[:, :ne].reshape(-1)])
        tri = tuple(t[used : used + x.size] for t in triples)
        used += x.size
        z = await and_gate(ch, x, y, tri, tag=f"{tag}/l{level}")
        new_lt = lt[:, 0 : 2 * p : 2] ^ z[: n * p].reshape(n, p)
        new_eq = np.zeros((n, p), np.uint8)
        new_eq[:, :ne] = z[n * p :].reshape(n, ne)
        if odd:
            new_lt = np.concatenate([new_lt, lt[:, -1:]], axis=1)
            new_eq = np.concatenate([new_eq, eq[:, -1:]], axis=1)
        lt, eq, k, level = new_lt, new_eq, p + odd, level + 1
    return lt[:, 0].copy()


async def msb_of_sum(ch: Channel, a: np.ndarray, *, ring_bits: int, tag: str, masks) -> np.ndarray:
    """XOR share of ``MSB(Σ_p a_p mod 2^k)`` (k = ``ring_bits``, 2..64) from every party's ``a`` (uint64).

    ``masks(y)`` returns ``y`` plus this party's pairwise zero-sum mask (the
    masks of all parties add up to 0 mod 2^64, :mod:`mpc.secure_sum`), so the
    value each party sends to open ``c`` is uniformly random on its own.
    Reveals nothing: ``c = Σ a_p + r mod 2^k`` is uniform because ``r`` is.
    """
    k = int(ring_bits)
    if not 2 <= k <= 64:
        raise ValueError(f"ring_bits must be in 2..64, got {k}")
    a = np.ascontiguousarray(a, _U64).reshape(-1)
    n = a.size
    q = k - 1
    mask_k = _U64((1 << k) - 1) if k < 64 else _U64(2**64 - 1)
    (beta, rshare), triples = await asyncio.gather(
        dabits(ch, n * k, tag=f"{tag}/dabits"), bit_triples(ch, n * tree_and_count(q), tag=f"{tag}/triples")
    )
    beta = beta.reshape(n, k)  # bit j of r (j = 0 least significant)
    weights = _U64(1) << np.arange(k, dtype=_U64)
    rho = (rshare.reshape(n, k) * weights).sum(axis=1, dtype=_U64)  # additive share of r = Σ_j 2^j r_j
    y = (masks(a + rho)) & mask_k
    await broadcast(ch, f"{tag}/open", pack_arrays(y))
    c = y.copy()
    for p, payload in (await gather_from(ch, f"{tag}/open")).items():
        arrs = unpack_arrays(payload)
        if len(arrs) != 1 or arrs[0].dtype != _U64 or arrs[0].shape != (n,):
            raise ProtocolError(f"{p} sent a malformed opening")
        c += arrs[0]
    c &= mask_k
    cbits = ((c[:, None] >> np.arange(k, dtype=_U64)) & _U64(1)).astype(np.uint8)
    first = ch.me == ch.parties[0]
    low_c, low_r = cbits[:, q - 1 :: -1], beta[:, q - 1 :: -1]  # low k−1 bits, most significant first
    lt = low_r & (1 - low_c)  # [c_j < r_j] = ¬c_j ∧ r_j (c public: a local gate)
    eq = low_r ^ (1 - low_c) if first else low_r.copy()  # [c_j = r_j] = r_j ⊕ c_j ⊕ 1
    borrow = await _lt_tree(ch, lt, eq, triples, f"{tag}/tree") if q else np.zeros(n, np.uint8)
    top = beta[:, k - 1] ^ borrow
    return top ^ cbits[:, k - 1] if first else top
