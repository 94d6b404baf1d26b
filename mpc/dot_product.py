"""Two-party secure scalar (dot) product over Z_2^64 from correlated OT.

Model and assumptions
---------------------
* Two semi-honest parties of a session (others may be present, uninvolved).
  ``role`` 0 holds x (any integers, read mod 2^64), ``role`` 1 holds y with
  entries in [0, 2^bits): 0/1 vectors with ``bits=1`` (item columns in
  vertical mining), ℓ-bit integers with ``bits=ℓ`` (``bits=64`` takes any
  uint64/int64 residue).
* Shapes, ``bits``, the reveal target and the roles are checked with
  :func:`mpc.channel.agree` (a mismatch raises :class:`InputMismatchError` on
  both parties).
* Security is that of :func:`mpc.ot_extension.correlated_ot_send` /
  ``correlated_ot_recv``.

Construction (Gilboa, "Two Party RSA Key Generation", CRYPTO 1999)
-----------------------------------------------------------------
Write y_i = Σ_k 2^k y_ik. For every (i, k) one correlated OT with
correlation Δ_ik = 2^k x_i: party 0 gets a random r_ik, party 1 with choice
bit y_ik gets t_ik = r_ik + y_ik Δ_ik (mod 2^64). Then

    share_0 = −Σ_{i,k} r_ik,   share_1 = Σ_{i,k} t_ik,
    share_0 + share_1 = Σ_i x_i Σ_k 2^k y_ik = Σ_i x_i y_i  (mod 2^64),

so n·ℓ COTs (one per element for 0/1 vectors) and no other message; with
``reveal`` one share goes to the party (or both) that learns the product.
This is the OT-based scalar product used for vertical itemset support
(Vaidya–Clifton, "Privacy Preserving Association Rule Mining in Vertically
Partitioned Data", KDD 2002, with Gilboa's multiplication in place of their
linear-algebra masking).

Leakage: the shares are uniformly random on their own; with ``reveal`` the
product goes to the named parties and nothing else is revealed (not y's
weight, not x). A revealed product is itself information about the other
party's vector (e.g. ⟨x, e_i⟩ = x_i): choosing what to compute is the
caller's privacy decision.
"""

from __future__ import annotations

import asyncio
from typing import cast

import numpy as np

from .channel import Channel, agree, pack_arrays, unpack_arrays
from .errors import ProtocolError
from .ints import integer_array
from .keys import pair_channel
from .ot_extension import correlated_ot_recv, correlated_ot_send

__all__ = ["dot_product", "dot_products"]

_U64 = np.uint64
COT_CHUNK = 1 << 22  # correlated OTs per batch (32 MiB of uint64 outputs), bounds memory for k × n × bits


def _as_matrix(v) -> np.ndarray:
    """(k, n) integer array from a vector (k = 1) or a matrix."""
    a = integer_array(v, "dot products")
    if a.ndim not in (1, 2):
        raise ValueError(f"dot products take a vector (n,) or a matrix (k, n), got shape {a.shape}")
    return a[None, :] if a.ndim == 1 else a


def _x_ring(a: np.ndarray) -> np.ndarray:
    """x mod 2^64 as uint64 (int64 two's complement)."""
    return a.astype(np.int64).view(_U64) if a.dtype.kind == "i" else a.astype(_U64)


def _check_y(a: np.ndarray, bits: int) -> None:
    """Refuse y outside [0, 2^bits) (bits = 64: any residue mod 2^64), without copying ``a``."""
    if bits == 64 or a.size == 0:
        return
    if int(a.min()) < 0 or int(a.max()) >> bits:
        raise ValueError(f"y must lie in [0, 2^{bits}) (pass a larger bits=, or bits=64 for any residue mod 2^64)")


async def _gilboa(ch: Channel, peer: str, mat: np.ndarray, role: int, bits: int, tag: str) -> np.ndarray:
    """Each row's additive share: party 0 −Σ r_ik, party 1 Σ t_ik, over COT chunks.

    COT j of the flat (k, n, bits) index space is element e = j // bits, bit
    b = j % bits of its row j // (n·bits): Δ_j = 2^b x_e, choice_j = bit b of y_e.
    Inputs are widened to uint64 one chunk at a time (memory stays O(chunk)).
    """
    k, n = mat.shape
    width = n * bits  # COTs per row
    flat = mat.reshape(-1)
    share = np.zeros(k, _U64)
    for i, start in enumerate(range(0, k * width, COT_CHUNK)):
        stop = min(start + COT_CHUNK, k * width)
        if bits == 1:
            b: np.uint64 | np.ndarray
            v, b = flat[start:stop], _U64(0)
        else:
            j = np.arange(start, stop, dtype=np.int64)
            v, b = flat[j // bits], (j % bits).astype(_U64)
        if role == 0:  # Δ_j = 2^b x_e
            out = await correlated_ot_send(ch, peer, _x_ring(v) << b, tag=f"{tag}/cot{i}")
        else:  # t_j = r_j + y_eb Δ_j
            c = v.astype(np.uint8) if bits == 1 else ((_x_ring(v) >> b) & _U64(1)).astype(np.uint8)
            out = await correlated_ot_recv(ch, peer, c, tag=f"{tag}/cot{i}")
        rows = np.arange(start // width, (stop - 1) // width + 1)
        cuts = np.maximum(rows * width, start) - start  # where each row's COTs begin in this chunk
        share[rows] += np.add.reduceat(np.asarray(out, _U64), cuts, dtype=_U64)
    return np.zeros(k, _U64) - share if role == 0 else share  # share_0 = −Σ r


def _parse_reveal(ch: Channel, peer: str, reveal) -> list[str]:
    if reveal is True:
        return sorted((ch.me, peer))
    if reveal is False or reveal is None:
        return []
    names = [reveal] if isinstance(reveal, str) else list(reveal)
    if not set(names) <= {ch.me, peer}:
        raise ValueError(f"reveal must be True, False or a name among {ch.me!r}, {peer!r}; got {reveal!r}")
    return sorted(set(names))


async def dot_products(
    ch: Channel,
    peer: str,
    v,
    *,
    role: int,
    tag: str,
    bits: int = 1,
    reveal: bool | str | list[str] = True,
    signed: bool = False,
) -> np.ndarray | None:
    """⟨x_c, y_c⟩ mod 2^64 for each row c of two (k, n) matrices, in one batch.

    ``role`` 0 passes X (any integers), ``role`` 1 passes Y (entries in
    [0, 2^bits)); ``peer`` is the other party. ``reveal``: True — both get the
    k products; a party name (or list) — only those do, the other gets None;
    False — each gets its uint64 additive share (share_0 + share_1 = product).
    Revealed values are uint64, or int64 (two's complement) with ``signed=True``.
    Cost: k·n·bits correlated OTs, plus one k-word message per revealing party.
    """
    if role not in (0, 1):
        raise ValueError(f"role must be 0 or 1, got {role!r}")
    if not (isinstance(bits, (int, np.integer)) and 1 <= bits <= 64):
        raise ValueError(f"bits must be an integer in 1..64, got {bits!r}")
    mat = _as_matrix(v)
    if role == 1:
        _check_y(mat, bits)
    targets = _parse_reveal(ch, peer, reveal)
    holder0 = ch.me if role == 0 else peer  # equal on both sides iff the roles differ
    public = dict(shape=list(mat.shape), bits=int(bits), reveal=targets, signed=bool(signed), role0=holder0)
    await agree(pair_channel(ch, peer), tag, **public)
    share = await _gilboa(ch, peer, mat, role, bits, tag)
    if not targets:
        return share
    return await _open(ch, peer, share, targets, tag, signed)


async def _open(ch: Channel, peer: str, share: np.ndarray, targets: list[str], tag: str, signed: bool):
    """Send my share to ``peer`` if it learns the product; add the peer's if I do."""
    sends = [ch.send(peer, f"{tag}/open", pack_arrays(share))] if peer in targets else []
    if ch.me not in targets:
        await asyncio.gather(*sends)
        return None
    got, *_ = await asyncio.gather(ch.recv(peer, f"{tag}/open"), *sends)
    (theirs,) = unpack_arrays(cast(bytes, got))
    if theirs.dtype != _U64 or theirs.shape != share.shape:
        raise ProtocolError(
            f"{peer} sent {theirs.dtype}{list(theirs.shape)} where uint64{list(share.shape)} was expected"
        )
    total = share + theirs  # share_0 + share_1 = Σ x_i y_i
    return total.view(np.int64) if signed else total


async def dot_product(
    ch: Channel,
    peer: str,
    v,
    *,
    role: int,
    tag: str,
    bits: int = 1,
    reveal: bool | str | list[str] = True,
    signed: bool = False,
):
    """⟨x, y⟩ mod 2^64 of party 0's vector x and party 1's vector y (see :func:`dot_products`).

    Returns a numpy uint64 scalar (int64 with ``signed=True``), the party's
    uint64 share when ``reveal=False``, or None for a party not revealed to.
    """
    a = np.asarray(v)
    if a.ndim != 1:
        raise ValueError(f"dot_product takes a vector, got shape {a.shape}; use dot_products for matrices")
    out = await dot_products(ch, peer, a, role=role, tag=tag, bits=bits, reveal=reveal, signed=signed)
    return None if out is None else out[0]
