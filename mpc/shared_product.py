"""Additive shares of Σ_t Π_p v_p[t] — the support of an itemset split over parties.

Model and assumptions
---------------------
Semi-honest parties; ``ch.parties`` fixes the order. A batch holds K
candidates over N transactions; for candidate k the public *owner mask*
``owners[k, p]`` says which parties hold items of it, and owner p holds the
0/1 vector ``v_p[k] ∈ {0,1}^N`` (the AND of its own item columns; J. Vaidya,
C. Clifton, "Privacy preserving association rule mining in vertically
partitioned data", KDD 2002). The support of candidate k is

    count_k = Σ_t Π_{p ∈ owners_k} v_p[k, t].

Construction
------------
Owners are folded in one at a time under additive sharing over Z_2^64.
After owners o_1..o_{j−1} the elementwise product P_{j−1}[t] is held as
additive shares s_h[t] by those owners (o_1 starts with s = v_{o_1}). To fold
in o_j with bits c = v_{o_j}, every holder h runs one correlated OT per
element (Gilboa 1999, "Two party RSA key generation", multiplication by a bit
through OT; here IKNP correlated OT, :func:`mpc.ot_extension.correlated_ot_send`)
with correlation Δ = s_h[t] and choice c[t]:

    h keeps −r_t,  o_j receives r_t + c[t]·s_h[t],   so   Σ shares = c[t]·P_{j−1}[t].

After the last owner, each party sums its share vector over t, giving
additive shares of count_k (non-owners hold 0). Candidates whose owners are a
single party need no OT: the owner's share is its local count.

Cost: (1 + 2 + … + (m−1)) correlated OTs per transaction and candidate with m
owners — one per transaction for two owners, the Gilboa scalar product.

Leakage: nothing. Every received value is masked by a fresh OT pad; the
output stays shared (reveal it, or compare it with a threshold, with
:mod:`mpc.secure_sum`).
"""

from __future__ import annotations

import asyncio
import hashlib

import numpy as np

from .channel import Channel, agree
from .errors import InputMismatchError
from .ot_extension import correlated_ot_recv, correlated_ot_send

__all__ = ["product_count_shares"]

_CHUNK = 1 << 21  # correlated OTs per call: bounds memory and message sizes


def _groups(owners: np.ndarray) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """Candidates grouped by their owner tuple, in a deterministic order."""
    if owners.shape[0] == 0:
        return []
    keys, inv = np.unique(np.packbits(owners, axis=1, bitorder="little"), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    out = []
    for g in range(keys.shape[0]):
        rows = np.flatnonzero(inv == g)
        who = tuple(int(p) for p in np.flatnonzero(owners[rows[0]]))
        out.append((who, rows))
    return out


async def _fold(
    ch: Channel, share: np.ndarray | None, bits: np.ndarray | None, holders: tuple[str, ...], newcomer: str, tag: str
) -> np.ndarray:
    """Multiply the shared vector by ``newcomer``'s bits; return this party's new share."""
    ref = share if share is not None else bits
    assert ref is not None  # a holder passes its share, the newcomer its bits
    n = ref.size
    if ch.me in holders:
        assert share is not None
        new = np.empty(n, np.uint64)
        for s in range(0, n, _CHUNK):
            r = await correlated_ot_send(ch, newcomer, share[s : s + _CHUNK], tag=f"{tag}/{s}")
            new[s : s + _CHUNK] = -r  # h keeps −r
        return new
    if ch.me == newcomer:
        assert bits is not None
        acc = np.zeros(n, np.uint64)

        async def from_holder(h: str) -> np.ndarray:
            got = np.empty(n, np.uint64)
            for s in range(0, n, _CHUNK):
                got[s : s + _CHUNK] = await correlated_ot_recv(ch, h, bits[s : s + _CHUNK], tag=f"{tag}/{s}")
            return got

        for g in await asyncio.gather(*(from_holder(h) for h in holders)):
            acc += g
        return acc
    raise AssertionError("_fold called by a party outside the fold")


async def product_count_shares(
    ch: Channel, vectors: np.ndarray, owners: np.ndarray, *, tag: str = "prod"
) -> np.ndarray:
    """Additive shares over Z_2^64 of ``count_k = Σ_t Π_{p ∈ owners_k} v_p[k, t]`` for K candidates.

    ``vectors`` is this party's ``(K, N)`` 0/1 matrix (rows of candidates it does
    not own are ignored); ``owners`` the public ``(K, P)`` bool matrix (same on
    every party, checked). Returns this party's ``(K,)`` uint64 share; shares of
    all parties add up to the counts mod 2^64. Construction, cost and leakage:
    see the module docstring (Gilboa OT multiplication folded over owners).
    """
    owners = np.asarray(owners, dtype=bool)
    v = np.asarray(vectors)
    K = owners.shape[0]
    if owners.ndim != 2 or owners.shape[1] != len(ch.parties):
        raise InputMismatchError(f"owners must be a (K, {len(ch.parties)}) matrix, got {owners.shape}")
    if v.ndim != 2 or v.shape[0] != K:
        raise InputMismatchError(f"vectors must be a ({K}, N) matrix, got {v.shape}")
    await agree(
        ch,
        f"{tag}/shape",
        candidates=K,
        transactions=int(v.shape[1]),
        owners=hashlib.sha256(np.packbits(owners).tobytes()).hexdigest(),
    )
    me = ch.parties.index(ch.me)
    out = np.zeros(K, np.uint64)
    for gi, (who, rows) in enumerate(_groups(owners)):
        if me not in who:
            continue
        mine = v[rows].astype(np.uint64)  # (k_g, N) 0/1
        if len(who) == 1:
            out[rows] = mine.sum(axis=1, dtype=np.uint64)
            continue
        names = [ch.parties[p] for p in who]
        share = mine.reshape(-1) if me == who[0] else None
        for j in range(1, len(who)):
            holders = tuple(names[:j])
            if ch.me in holders or ch.me == names[j]:
                bits = mine.reshape(-1).astype(np.uint8) if names[j] == ch.me else None
                share = await _fold(ch, share, bits, holders, names[j], f"{tag}/g{gi}/f{j}")
        assert share is not None  # every owner took part in the last fold
        out[rows] = share.reshape(rows.size, -1).sum(axis=1, dtype=np.uint64)
    return out
