"""Secure set union among N ≥ 2 parties (Kantarcioglu–Clifton 2004).

Model and assumptions
---------------------
Semi-honest parties that do not collude; authenticated channels (the
transport names the sender). ``ch.parties`` is the ring, in that order; a
party's *position* is its index there. Security of the hiding rests on DDH in
P-256 (see :mod:`mpc.commutative`). Keys are fresh per call.

Construction (M. Kantarcioglu, C. Clifton, "Privacy-preserving distributed
mining of association rules on horizontally partitioned data", IEEE TKDE 16(9),
2004, Protocol 1), batched and pipelined:

0. *Agree and pad.* ``pad_to`` (a public bound) is checked with
   :func:`mpc.channel.agree`; each party removes duplicates from its set, checks
   every item fits (≤ :data:`~mpc.commutative.MAX_ITEM_BYTES` bytes) and pads
   the set with random *fake* items to exactly ``P`` elements. With
   ``pad_to=None``, ``P`` is the largest set size rounded up to a power of two
   (each party broadcasts ⌈log₂|Sᵢ|⌉ to find it).
1. *Encryption around the ring.* Party ``i`` embeds and encrypts its padded set
   (:class:`~mpc.commutative.PohligHellmanP256`), permutes it and sends it to
   party ``i+1``; every party encrypts and permutes what it receives and passes
   it on. All N sets travel at once, one hop per round, so in every round every
   party is encrypting a different set (N rounds, parties in parallel). Set
   ``j`` is fully encrypted at party ``j−1``.
2. *Merge.* For N ≤ 3 every fully encrypted set goes to party 0. For N ≥ 4,
   as in KC04, sets of odd positions go to party 1 and of even positions to
   party 0; party 1 removes duplicates and sends its (permuted) union to party 0,
   which merges everything into the duplicate-free, permuted set ``M``.
3. *Decryption around the ring.* Party 0 cuts ``M`` into N chunks; chunk ``j``
   starts at party ``j`` and goes once around the ring, each party decrypting
   (``k⁻¹``) and permuting — again all chunks move at once. The party finishing
   a chunk drops the fakes and sends the real items to everyone.
4. Every party returns the union: real items, sorted (bytewise).

One message per hop for a whole set or chunk, never one per item. Work per
party: ``N·P`` encryptions, ``P`` embeddings (one extra point decode each) and
``|M|`` decryptions, where ``|M| = |∪Sᵢ| + Σᵢ(P − |Sᵢ|)``.

What each party learns (beyond its own input and the output ∪Sᵢ)
------------------------------------------------------------------
* Everyone: N and ``P``. With ``pad_to=None`` also every party's ⌈log₂|Sᵢ|⌉,
  i.e. each set size within a factor of two; pass a public bound (e.g. the
  number of candidate itemsets, as KC04 do) to avoid that.
* Everyone: ``|M|`` (the sizes of the decryption chunks), hence the number of
  fakes ``N·P − Σ|Sᵢ|`` and so the total ``Σᵢ|Sᵢ|`` of the true set sizes — as
  in KC04's decryption round. For N = 2 that is the other party's set size.
  Fakes hide the individual sizes (N ≥ 3) and make every message in steps 1–2
  the same length ``P``.
* The merging party (party 0 for N ≤ 3) knows which fully encrypted set came
  from which party, so it learns ``|∩_{i∈T} Sᵢ|`` for every subset ``T`` of
  parties — how many items are common to each group of parties, not which
  items (fakes never collide). For N ≥ 4 this splits as in KC04's theorem:
  party 1 learns it for subsets of odd positions, party 0 for subsets of even
  positions, plus the number of items held by at least one odd and one even
  party (and the size of the odd union).
* The party finishing decryption chunk ``j`` learns how many fakes that chunk
  held (a sample of what ``Σ|Sᵢ|`` already tells).
* Nothing about which party holds which item (the permutations of the other
  parties hide it), unless parties collude.

Items are bytes of at most 30 bytes (they are carried inside a P-256
x-coordinate and given back by the last decryption). Longer items raise a
:class:`~mpc.errors.ProtocolError` on every party: encode them through an agreed
index — horizontal mining sends candidate itemsets as their positions in the
candidate list every party knows.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable, Iterable

import numpy as np

from .channel import (
    Channel,
    agree,
    broadcast,
    gather_from,
    pack_arrays,
    recv_array,
    scoped,
    send_array,
    unpack_arrays,
)
from .commutative import (
    FAKE_FLAG,
    MAX_ITEM_BYTES,
    PohligHellmanP256,
    check_rows,
    decode_rows,
    run_rows,
    shuffle_rows,
    unique_rows,
)
from .errors import ProtocolError

__all__ = ["secure_set_union", "ring_pass", "exchange_status", "local_set", "DEFAULT_PAD_RULE"]

DEFAULT_PAD_RULE = "largest set size rounded up to a power of two"

# status codes of the input check (shared with mpc.intersection)
_OK, _TOO_LONG, _OVER_PAD, _NOT_BYTES = STATUS_OK, STATUS_TOO_LONG, STATUS_OVER_PAD, STATUS_NOT_BYTES = 0, 1, 2, 3
_PROBLEMS = {
    _TOO_LONG: (
        f"holds an item longer than {MAX_ITEM_BYTES} bytes, the most one P-256 point can carry; "
        "encode items through an agreed index (e.g. their positions in a candidate list all parties know) "
        "and pass those indexes as items"
    ),
    _OVER_PAD: "holds more distinct items than pad_to",
    _NOT_BYTES: "passed an item that is not bytes",
}


# --------------------------------------------------------------------------- shared ring helpers
async def ring_pass(ch: Channel, rows: np.ndarray, transform: Callable, step: str) -> tuple[int, np.ndarray]:
    """Pipelined pass of N batches once around the ring ``ch.parties``.

    Party ``i`` starts with batch ``i`` (``rows``, already transformed by itself),
    sends it on, and in each of the N−1 rounds receives batch ``i−r`` from its
    predecessor, applies ``transform`` (in the worker pool), permutes it and
    passes it on. Returns ``(j, rows)``: batch ``j = i+1`` after all N parties
    have transformed it. Messages are tagged ``step/j``.
    """
    parties, n = ch.parties, len(ch.parties)
    i = parties.index(ch.me)
    nxt, prv = parties[(i + 1) % n], parties[(i - 1) % n]
    cur, j = rows, i
    for r in range(1, n):
        await send_array(ch, nxt, f"{step}/{j}", cur)
        j = (i - r) % n
        got = check_rows(await recv_array(ch, prv, f"{step}/{j}"), f"{step} batch")
        cur = shuffle_rows(await run_rows(transform, got))
    return j, cur


async def exchange_status(ch: Channel, code: int, extra: int, problems: dict[int, str], what: str) -> list[int]:
    """Broadcast ``(code, extra)`` bytes; if any party reports a problem, raise it on *every* party.

    Returns every party's ``extra`` in ring order.
    """
    await broadcast(ch, "status", bytes([code, extra]))
    got = await gather_from(ch, "status")
    got[ch.me] = bytes([code, extra])
    if any(len(v) != 2 for v in got.values()):
        raise ProtocolError(f"{what}: malformed status message")
    bad = [f"party {p} {problems.get(got[p][0], f'reported error {got[p][0]}')}" for p in ch.parties if got[p][0]]
    if bad:
        raise ProtocolError(f"{what} aborted: " + "; ".join(bad))
    return [got[p][1] for p in ch.parties]


def local_set(items: Iterable, max_len: int | None = None) -> tuple[list[bytes], int]:
    """Distinct items as bytes, and a status code (non-bytes / too long)."""
    out = set()
    for it in items:
        if not isinstance(it, (bytes, bytearray, memoryview)):
            return [], _NOT_BYTES
        it = bytes(it)
        if max_len is not None and len(it) > max_len:
            return [], _TOO_LONG
        out.add(it)
    return sorted(out), _OK


def _size_bucket(m: int) -> int:
    """0 for an empty set, else ``e + 1`` with ``2**e`` the smallest power of two ≥ m."""
    return 0 if m == 0 else (m - 1).bit_length() + 1


# --------------------------------------------------------------------------- steps
async def _pad_size(sc: Channel, mine: list[bytes], code: int, pad_to: int | None) -> int:
    await agree(sc, "params", pad_to=pad_to, parties=len(sc.parties), max_item_bytes=MAX_ITEM_BYTES)
    if pad_to is not None and pad_to < 0:
        raise ValueError("pad_to must be a non-negative int or None")
    if code == _OK and pad_to is not None and len(mine) > pad_to:
        code = _OVER_PAD
    bucket = _size_bucket(len(mine)) if pad_to is None and code == _OK else 0
    buckets = await exchange_status(sc, code, bucket, _PROBLEMS, "secure_set_union")
    if pad_to is not None:
        return pad_to
    top = max(buckets)
    return 0 if top == 0 else 1 << (top - 1)


async def _first_hop(cipher: PohligHellmanP256, mine: list[bytes], pad: int) -> np.ndarray:
    real = await run_rows(cipher.encrypt_items, mine)
    fake = await run_rows(lambda chunk: cipher.encrypt_fakes(len(chunk)), range(pad - len(mine)))
    return shuffle_rows(np.concatenate([real, fake]))


def _merger(j: int, n: int) -> int:
    """Position of the party that merges fully encrypted set ``j``."""
    return j % 2 if n >= 4 else 0


async def _merge(sc: Channel, j_held: int, rows: np.ndarray) -> np.ndarray | None:
    """Step 2; returns the permuted merged set ``M`` at party 0, ``None`` elsewhere."""
    parties, n = sc.parties, len(sc.parties)
    i = parties.index(sc.me)
    if _merger(j_held, n) != i:
        await send_array(sc, parties[_merger(j_held, n)], f"full/{j_held}", rows)
    group = [j for j in range(n) if _merger(j, n) == i]
    if not group:
        return None

    async def full_set(j: int) -> np.ndarray:
        if j == j_held:
            return rows
        return check_rows(await recv_array(sc, parties[(j - 1) % n], f"full/{j}"), "fully encrypted set")

    union = unique_rows(np.concatenate(await asyncio.gather(*(full_set(j) for j in group))))
    if i == 1:
        await send_array(sc, parties[0], "odd", shuffle_rows(union))
        return None
    if n >= 4:
        odd = check_rows(await recv_array(sc, parties[1], "odd"), "odd union")
        union = unique_rows(np.concatenate([union, odd]))
    return shuffle_rows(union)


async def _my_chunk(sc: Channel, merged: np.ndarray | None) -> np.ndarray:
    """Step 3 start: party 0 cuts ``M`` into N chunks and sends chunk ``j`` to party ``j``."""
    parties, n = sc.parties, len(sc.parties)
    if sc.me != parties[0]:
        return check_rows(await recv_array(sc, parties[0], "chunk"), "decryption chunk")
    bounds = [len(merged) * j // n for j in range(n + 1)]
    await asyncio.gather(*(send_array(sc, parties[j], "chunk", merged[bounds[j] : bounds[j + 1]]) for j in range(1, n)))
    return merged[bounds[0] : bounds[1]]


async def _share_result(sc: Channel, plain: np.ndarray) -> list[bytes]:
    """Step 3 end: drop fakes from my finished chunk, send real items to all, collect theirs."""
    reals = plain[plain[:, 0] != FAKE_FLAG]
    items, _ = decode_rows(reals)
    await broadcast(sc, "out", pack_arrays(reals))
    for payload in (await gather_from(sc, "out")).values():
        (rows,) = unpack_arrays(payload)
        got, fakes = decode_rows(check_rows(rows, "result chunk"))
        if fakes:
            raise ProtocolError("a result chunk contained padding items")
        items.extend(got)
    return sorted(set(items))


# --------------------------------------------------------------------------- protocol
async def secure_set_union(
    ch: Channel, items: Iterable[bytes], *, tag: str = "union", pad_to: int | None = None
) -> list[bytes]:
    """Union of every party's set of items, given to every party (sorted, bytewise).

    ``items``: this party's items (bytes, each ≤ 30 bytes; duplicates ignored).
    ``pad_to``: public bound every party passes identically (checked); each set
    is padded with fakes to exactly this many elements, so a larger set is an
    error on every party. ``None``: the default rule (:data:`DEFAULT_PAD_RULE`),
    which reveals each party's set size within a factor of two.
    See the module docstring for the construction and its exact leakage.
    """
    if len(ch.parties) < 2:
        raise ProtocolError("secure_set_union needs at least 2 parties")
    sc = scoped(ch, tag)
    pad_to = None if pad_to is None else operator.index(pad_to)
    mine, code = local_set(items, MAX_ITEM_BYTES)
    pad = await _pad_size(sc, mine, code, pad_to)
    cipher = PohligHellmanP256()
    j_held, full = await ring_pass(sc, await _first_hop(cipher, mine, pad), cipher.encrypt, "enc")
    chunk = await _my_chunk(sc, await _merge(sc, j_held, full))
    first = shuffle_rows(await run_rows(cipher.decrypt, chunk))
    _, plain = await ring_pass(sc, first, cipher.decrypt, "dec")
    return await _share_result(sc, plain)
