"""SoftSpoken OT extension: random 1-out-of-2 OTs with 128/k bits of traffic per OT instead of IKNP's 128.

Model and assumptions
---------------------
Two parties, semi-honest, static corruption, computational security κ = 128.
Construction: L. Roy, "SoftSpokenOT: Quieter OT Extension from Small-Field
Silent VOLE in the Minicrypt Model", CRYPTO 2022 (ePrint 2022/192), §3.1
(small-field VOLE from a punctured PRF) with the repetition code of §4 for
semi-honest security — no consistency check, which only the malicious
variant needs. Primitives as in :mod:`mpc.ot_extension`: Chou–Orlandi base
OTs (:mod:`mpc.base_ot`), AES-128-CTR as PRG, the fixed-key AES TCCR hash of
Guo–Katz–Wang–Yu (S&P 2020) in place of a random oracle.

Roles: the extension *sender* S holds Δ ∈ {0,1}^128 and ends with two keys
per OT; the extension *receiver* R holds choice bits r ∈ {0,1}^m and ends
with the chosen key. κ = 128 bits of Δ are cut into c = 128/k chunks Δ_j of
k bits (k ∈ {1, 2, 4, 8}).

Set-up (once per session and ordered pair and k; cached in ``ch.state``):

* 128 base OTs, R the base-OT sender of random key pairs (k0_g, k1_g), S the
  base-OT receiver with choices Δ_g (bit g of Δ).
* For every chunk j, R grows a GGM tree (Goldreich–Goldwasser–Micali, J. ACM
  1986) of depth k from a random root — node children by AES-128-CTR keyed by
  the node — with leaves s_{j,x}, x ∈ {0,1}^k (bit ℓ of x decided at depth
  k − ℓ). For each depth with decided bit ℓ (base OT g = jk + ℓ) it sends
  K^b ⊕ PRG(k_{1−b,g}) for b = 0, 1, where K^b is the XOR of that depth's
  b-children. S, holding k_{Δ_g,g}, opens K^{1−Δ_g} and rebuilds every leaf
  except s_{j,Δ_j} (the punctured PRF of Kurosawa/Boyle–Gilboa–Ishai,
  (2^k − 1)-out-of-2^k OT from k base OTs: SoftSpoken §3.1).

One extension call of m OTs (per slab, with a fresh 128-bit salt from R):

* R expands every leaf to m bits, ρ_{j,x} = G(s_{j,x}), G the fixed-key AES
  TCCR hash of the leaf under distinct tweaks (a fresh 96-bit slab id, the
  leaf's index, the block number; :func:`_expand`); keeps
  t_{jk+ℓ} = ⊕_{x: x_ℓ = 1} ρ_{j,x} (ℓ < k) and sends the corrections
  d_j = r ⊕ ⊕_x ρ_{j,x} — c·m bits, 128/k per OT.
* S expands the leaves it has and computes, with y = x ⊕ Δ_j,
  q_{jk+ℓ} = ⊕_{y: y_ℓ = 1} ρ_{j,y⊕Δ_j} ⊕ Δ_{jk+ℓ}·d_j. The unknown leaf
  (y = 0) never enters, and q_g = t_g ⊕ Δ_g·r (the small-field VOLE
  w = v + u·Δ of SoftSpoken §3.1 with u corrected to r).
* Transposed, per OT: q_i = t_i ⊕ r_i·Δ, IKNP's correlation; keys
  m0_i = H(q_i, i), m1_i = H(q_i ⊕ Δ, i), R's m_{r_i} = H(t_i, i).

What it reveals (semi-honest): the sender learns nothing about r (every d_j
is r masked by ⊕_x ρ_{j,x}, which includes the PRG output of the leaf it
lacks); the receiver learns only its chosen keys (the other key needs Δ,
hidden by the base OTs and the PRG). Public: the number of OTs, k, the tag.

Cost per OT: 128/k bits sent (IKNP: 128); R expands 2^k·128/k PRG bits and S
(2^k − 1)·128/k (IKNP: 256 and 128), plus about 2^(k+1)·128/k XORed bits.
k = 4 (default) sends a quarter of IKNP's traffic for about twice its
expansion work; both hash and transpose exactly as IKNP.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import numpy as np

from .base_ot import base_ot_recv, base_ot_send
from .channel import Channel, pack_arrays, root_channel, unpack_arrays
from .crypto_hash import aes_fixed, derive, prg, prg_rows, tccr_hash
from .errors import ProtocolError
from .ot_extension import KAPPA, check_ot_header, send_ot_header, transpose_bits

__all__ = ["DEFAULT_K", "SLAB", "random_ot_send", "random_ot_recv", "random_ot_send_slabs", "random_ot_recv_slabs"]

DEFAULT_K = 4  #: bits of Δ per small-field VOLE: 128/k bits sent per OT
SLAB = 1 << 17  #: OTs per extension message
_KS = (1, 2, 4, 8)
_STATE_KEY = "mpc.softspoken"
_SETUP_TAG = "mpc.softspoken/setup"
_PROTO = "softspoken/v1"
_GGM_NONCE = derive("ppdm/softspoken/ggm-node")[:16]


# --------------------------------------------------------------------------- GGM trees
def _children(nodes: np.ndarray) -> np.ndarray:
    """``(a, 16)`` seeds → ``(2a, 16)`` children: row 2i is seed i's left child, 2i+1 its right."""
    return prg_rows(nodes, _GGM_NONCE, 32).reshape(2 * nodes.shape[0], 16)


def _level_mask(key: np.ndarray, g: int) -> np.ndarray:
    return prg(key.tobytes(), derive("ppdm/softspoken/ggm-mask", g)[:16], 16)


def _grow(root: np.ndarray, k: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Leaves ``(2^k, 16)`` of the GGM tree of ``root`` and, per depth 1..k, ``(2, 16)`` XORs of its b-children."""
    level = root.reshape(1, 16)
    sums = []
    for _ in range(k):
        level = _children(level)
        sums.append(np.stack([np.bitwise_xor.reduce(level[b::2], axis=0) for b in (0, 1)]))
    return level, sums


def _punctured(k: int, point: int, opened: list[np.ndarray]) -> np.ndarray:
    """Leaves ``(2^k, 16)`` of a GGM tree from its depth sums off the path to ``point`` (that leaf: zeros).

    ``opened[i]`` is the XOR of the depth-(i+1) children on the side *not* taken by ``point``.
    """
    level = np.zeros((1, 16), np.uint8)
    known = np.zeros(1, bool)  # the path node is unknown
    path = 0
    for i in range(k):
        bit = (point >> (k - 1 - i)) & 1
        nxt = np.zeros((2 * level.shape[0], 16), np.uint8)
        if known.any():
            nxt[np.repeat(known, 2)] = _children(level[known])
        off = 2 * path + (1 - bit)  # the path node's child off the path: from the opened sum
        others = np.bitwise_xor.reduce(nxt[1 - bit :: 2], axis=0)  # its slot is still zero
        nxt[off] = opened[i] ^ others
        known = np.repeat(known, 2)
        known[off] = True
        path = 2 * path + bit
        level = nxt
    return level


# --------------------------------------------------------------------------- session state
class _Pair:
    """Set-up of one ordered pair (extension sender → receiver) and one k, one side of it."""

    __slots__ = ("lock", "failed", "delta", "delta_block", "leaves", "index")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.failed: str | None = None
        self.delta: np.ndarray | None = None  # sender: (128,) bool
        self.delta_block: np.ndarray | None = None  # sender: (16,) uint8
        self.leaves: np.ndarray | None = None  # π(leaf) (c, 2^k, 16): receiver by x, sender by y = x ⊕ Δ_j
        self.index: np.ndarray | None = None  # (c, 2^k): j·2^k + x of each row (the expansion tweak)


def _pair(ch: Channel, sender: str, receiver: str, k: int) -> _Pair:
    pairs = ch.state.setdefault(_STATE_KEY, {})
    p = pairs.get((sender, receiver, k))
    if p is None:
        p = pairs[(sender, receiver, k)] = _Pair()
    return p


def _chunks(bits: np.ndarray, k: int) -> np.ndarray:
    """The c = 128/k chunks Δ_j = Σ_ℓ bit(jk+ℓ)·2^ℓ of a ``(128,)`` bit vector."""
    return (bits.reshape(-1, k).astype(np.int64) << np.arange(k)).sum(axis=1)


async def _setup(ch: Channel, peer: str, k: int, as_sender: bool) -> _Pair:
    sender, receiver = (ch.me, peer) if as_sender else (peer, ch.me)
    p = _pair(ch, sender, receiver, k)
    if p.leaves is not None:
        return p
    async with p.lock:
        if p.failed is not None:
            raise ProtocolError(f"SoftSpoken set-up {sender}→{receiver} failed earlier in this session ({p.failed})")
        if p.leaves is not None:
            return p
        root = root_channel(ch)
        tag = f"{_SETUP_TAG}/{sender}>{receiver}/k{k}"
        c = KAPPA // k
        try:
            if as_sender:
                block = np.frombuffer(os.urandom(16), np.uint8).copy()
                delta = np.unpackbits(block, bitorder="little").astype(bool)
                keys = await base_ot_recv(root, peer, delta, tag=f"{tag}/base")
                (masked,) = unpack_arrays(await root.recv(peer, f"{tag}/ggm"))
                if masked.shape != (c, k, 2, 16) or masked.dtype != np.uint8:
                    raise ProtocolError(f"SoftSpoken set-up: malformed GGM message from {peer}")
                points = _chunks(delta, k)
                leaves = np.empty((c, 1 << k, 16), np.uint8)
                for j in range(c):
                    opened = []
                    for i in range(k):  # depth i+1 decides bit ℓ = k−1−i, base OT g = jk + ℓ
                        g = j * k + (k - 1 - i)
                        opened.append(masked[j, i, int(delta[g])] ^ _level_mask(keys[g], g))
                    by_x = _punctured(k, int(points[j]), opened)
                    leaves[j] = by_x[np.arange(1 << k) ^ points[j]]  # index y = x ⊕ Δ_j
                p.delta, p.delta_block = delta, block
                index = np.arange(c)[:, None] * (1 << k) + (np.arange(1 << k)[None, :] ^ points[:, None])
            else:
                k0, k1 = await base_ot_send(root, peer, KAPPA, tag=f"{tag}/base")
                leaves = np.empty((c, 1 << k, 16), np.uint8)
                masked = np.empty((c, k, 2, 16), np.uint8)
                for j in range(c):
                    leaves[j], sums = _grow(np.frombuffer(os.urandom(16), np.uint8), k)
                    for i in range(k):
                        g = j * k + (k - 1 - i)
                        # entry b opens for Δ_g = b: the sum of the side off that path, 1 − b
                        masked[j, i, 0] = sums[i][1] ^ _level_mask(k0[g], g)
                        masked[j, i, 1] = sums[i][0] ^ _level_mask(k1[g], g)
                await root.send(peer, f"{tag}/ggm", pack_arrays(masked))
                index = np.arange(c)[:, None] * (1 << k) + np.arange(1 << k)[None, :]
        except BaseException as e:
            p.failed = f"{type(e).__name__}: {e}"
            raise
        p.index = index
        p.leaves = aes_fixed(leaves.reshape(-1, 16)).reshape(leaves.shape)  # π(leaf), reused by every slab
    return p


# --------------------------------------------------------------------------- small-field VOLE
def _subset_xors(rho: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For ``rho`` ``(c, 2^k, W)``: ``(⊕_x rho[:, x], [⊕_{x: bit ℓ of x} rho[:, x] for ℓ < k])``.

    Halving from the top bit: about 2^(k+1) row XORs instead of k·2^(k−1).
    """
    c, _, W = rho.shape
    v = np.empty((c, k, W), rho.dtype)
    cur = rho
    for ell in range(k - 1, -1, -1):
        half = cur.reshape(c, 2, -1, W)
        v[:, ell] = np.bitwise_xor.reduce(half[:, 1], axis=1)
        cur = half[:, 0] ^ half[:, 1]
    return cur[:, 0], v


def _expand(pl: np.ndarray, index: np.ndarray, slab_id: tuple[int, int], B: int) -> np.ndarray:
    """``(c, L, B)`` pseudorandom bytes from leaves given as ``pl = π(leaf)`` ``(c, L, 16)``.

    Block b of leaf (j, x) is the TCCR hash H(leaf, i) = π(π(leaf) ⊕ i) ⊕ π(leaf) with the
    128-bit tweak i = h·2^64 + g·2^32 + (j·2^k + x)·2^20 + b, where (h, g) is the slab's
    96-bit pseudorandom id (``slab_id``) and ``index[j, l]`` = j·2^k + x of row l (< 2^12).
    A leaf the adversary lacks is uniform and every tweak it is hashed with is distinct
    (two slabs share an id with probability 2^-96 per pair), which makes the blocks
    pseudorandom (Guo–Katz–Wang–Yu, S&P 2020, §7) — one fixed-key AES call per slab instead
    of one keyed AES-CTR context per leaf.
    """
    c, L, _ = pl.shape
    nb = -(-B // 16)
    if nb > 1 << 20:
        raise ValueError("slab too large for the expansion tweaks (at most 2^27 OTs)")
    px = np.repeat(pl.reshape(-1, 16), nb, axis=0)
    base = (np.uint64(slab_id[1] & 0xFFFFFFFF) << np.uint64(32)) | (index.astype(np.uint64) << np.uint64(20))
    lo = (base[..., None] + np.arange(nb, dtype=np.uint64)).reshape(-1)
    out = tccr_hash(px, slab_id[0], lo, px=px)  # (not out=px: the hash XORs px into its output)
    return out.reshape(c, L, nb * 16)[:, :, :B]


def _slab_keys(tag: str, salt: bytes) -> tuple[tuple[int, int], int, int]:
    """Per slab: the leaf-expansion id (64 + 32 bits), and the OT-key hash's tweak high word and low base."""
    d = derive("ppdm/softspoken/slab", tag, salt)
    w = [int.from_bytes(d[8 * i : 8 * i + 8], "little") for i in range(4)]
    return (w[0], w[3]), w[1], w[2]


def _check_k(k: int, slab: int) -> int:
    if k not in _KS:
        raise ValueError(f"k must be one of {_KS}, got {k!r}")
    if not 1 <= slab <= 1 << 27:
        raise ValueError(f"slab must be in 1..2^27 OTs, got {slab!r}")
    return int(k)


def _row_bytes(m: int) -> int:
    return ((m + 63) // 64) * 8


async def random_ot_send_slabs(
    ch: Channel,
    peer: str,
    n: int,
    *,
    tag: str,
    k: int = DEFAULT_K,
    slab: int = SLAB,
    into: tuple[np.ndarray, np.ndarray] | None = None,
) -> AsyncIterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """Sender of ``n`` SoftSpoken random OTs (Roy, CRYPTO 2022) as a stream of slabs.

    Yields ``(lo, hi, m0, m1)``: the two pseudorandom 128-bit keys of OTs
    ``lo:hi`` as ``(hi − lo, 16) uint8`` (hashed into ``into`` if given). The
    peer runs :func:`random_ot_recv_slabs` with the same ``k`` and ``slab``
    (checked). Reveals (semi-honest): nothing about the receiver's choices.
    """
    k = _check_k(k, slab)
    n = int(n)
    if n < 0:
        raise ValueError("n must be ≥ 0")
    params = {"proto": _PROTO, "n": n, "k": k, "slab": slab}
    await send_ot_header(ch, peer, tag, "send", params)
    await check_ot_header(ch, peer, tag, "send", params, "SoftSpoken OT")
    if n == 0:
        return
    p = await _setup(ch, peer, k, as_sender=True)
    assert p.delta is not None and p.delta_block is not None and p.leaves is not None and p.index is not None
    c = KAPPA // k
    delta_rows = p.delta.reshape(c, k)
    for lo in range(0, n, slab):
        hi = min(n, lo + slab)
        m, B = hi - lo, _row_bytes(hi - lo)
        msg = unpack_arrays(await ch.recv(peer, f"{tag}/d"))
        if len(msg) != 2 or msg[0].shape != (16,) or msg[1].shape != (c, B) or msg[1].dtype != np.uint8:
            raise ProtocolError(f"SoftSpoken OT {tag!r}: malformed extension message from {peer}")
        salt, d = msg
        slab_id, tw, tw_lo = _slab_keys(tag, salt.tobytes())
        rho = np.zeros((c, 1 << k, B), np.uint8)  # y = 0 (the leaf it lacks) never enters a subset XOR
        rho[:, 1:] = _expand(p.leaves[:, 1:], p.index[:, 1:], slab_id, B)
        rho = rho.view(np.uint64)
        _, w = _subset_xors(rho, k)  # (c, k, B/8): ⊕_{y: y_ℓ} ρ_{y ⊕ Δ_j}
        w ^= d.view(np.uint64)[:, None, :] & np.negative(delta_rows.astype(np.uint64))[:, :, None]
        q = transpose_bits(w.view(np.uint8).reshape(KAPPA, B))[:m]  # q_i = t_i ⊕ r_i·Δ
        m0 = tccr_hash(q, tw, tw_lo, out=None if into is None else into[0][lo:hi])
        q ^= p.delta_block
        m1 = tccr_hash(q, tw, tw_lo, out=None if into is None else into[1][lo:hi])
        yield lo, hi, m0, m1


async def random_ot_recv_slabs(
    ch: Channel,
    peer: str,
    choices: np.ndarray,
    *,
    tag: str,
    k: int = DEFAULT_K,
    slab: int = SLAB,
    into: np.ndarray | None = None,
) -> AsyncIterator[tuple[int, int, np.ndarray]]:
    """Receiver of SoftSpoken random OTs with choice bits ``choices`` (``(n,)`` bool), as a stream of slabs.

    Yields ``(lo, hi, m_c)``: the chosen key of each OT ``lo:hi`` (hashed into
    ``into[lo:hi]`` if given). Reveals (semi-honest): nothing about the other key.
    """
    k = _check_k(k, slab)
    c_bits = np.asarray(choices, dtype=bool).reshape(-1)
    n = c_bits.size
    params = {"proto": _PROTO, "n": n, "k": k, "slab": slab}
    await send_ot_header(ch, peer, tag, "recv", params)
    checked = False
    if n == 0 or _pair(ch, peer, ch.me, k).leaves is None:
        await check_ot_header(
            ch, peer, tag, "recv", params, "SoftSpoken OT"
        )  # the peer really runs this call before the set-up
        checked = True
    if n:
        p = await _setup(ch, peer, k, as_sender=False)
        assert p.leaves is not None and p.index is not None
        for lo in range(0, n, slab):
            hi = min(n, lo + slab)
            m, B = hi - lo, _row_bytes(hi - lo)
            r = np.zeros(B, np.uint8)
            packed = np.packbits(c_bits[lo:hi], bitorder="little")
            r[: packed.size] = packed
            salt = os.urandom(16)
            slab_id, tw, tw_lo = _slab_keys(tag, salt)
            rho = np.ascontiguousarray(_expand(p.leaves, p.index, slab_id, B)).view(np.uint64)
            u, t = _subset_xors(rho, k)
            u ^= r.view(np.uint64)  # d_j = r ⊕ ⊕_x ρ_{j,x}
            await ch.send(peer, f"{tag}/d", pack_arrays(np.frombuffer(salt, np.uint8), u.view(np.uint8)))
            tt = transpose_bits(t.view(np.uint8).reshape(KAPPA, B))[:m]
            yield lo, hi, tccr_hash(tt, tw, tw_lo, out=None if into is None else into[lo:hi])
    if not checked:
        await check_ot_header(ch, peer, tag, "recv", params, "SoftSpoken OT")


async def random_ot_send(
    ch: Channel, peer: str, n: int, *, tag: str, k: int = DEFAULT_K
) -> tuple[np.ndarray, np.ndarray]:
    """Sender of ``n`` random 1-out-of-2 OTs by SoftSpoken OT extension (Roy, CRYPTO 2022).

    Returns ``(m0, m1)``, each ``(n, 16) uint8`` pseudorandom keys; the
    receiver gets ``m{c_j}[j]``. The drop-in counterpart of
    :func:`mpc.ot_extension.random_ot_send` with 128/k bits of traffic per OT.
    Reveals (semi-honest): nothing about the choices. Public: ``n``, ``k``, ``tag``.
    """
    m0 = np.empty((int(n), 16), np.uint8)
    m1 = np.empty((int(n), 16), np.uint8)
    async for _ in random_ot_send_slabs(ch, peer, n, tag=tag, k=k, into=(m0, m1)):
        pass
    return m0, m1


async def random_ot_recv(ch: Channel, peer: str, choices, *, tag: str, k: int = DEFAULT_K) -> np.ndarray:
    """Receiver of SoftSpoken random OTs (Roy, CRYPTO 2022) with choice bits ``choices`` (0/1 or bool).

    Returns ``(n, 16) uint8``: row ``j`` equals the sender's ``m{choices[j]}[j]``.
    Reveals (semi-honest): only the chosen keys. Public: ``n``, ``k``, ``tag``.
    """
    c = np.asarray(choices)
    if c.ndim != 1 or (c.size and c.dtype != np.bool_ and (c.min() < 0 or c.max() > 1)):
        raise ValueError("choices must be a 1-D array of bits")
    out = np.empty((c.size, 16), np.uint8)
    async for _ in random_ot_recv_slabs(ch, peer, c.astype(bool), tag=tag, k=k, into=out):
        pass
    return out
