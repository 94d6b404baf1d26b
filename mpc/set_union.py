"""Secure set union among N ≥ 2 parties (Kantarcioglu–Clifton 2004).

Model and assumptions
---------------------
Semi-honest parties; authenticated channels (the transport names the
sender). ``ch.parties`` is the ring, in that order; a party's *position* is
its index there. Hiding rests on DDH in the prime-order group of NIST P-256
(see :mod:`mpc.commutative`). Keys are fresh per call.

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
   it on. All N sets travel at once, one hop per round (N rounds, parties in
   parallel). Set ``j`` is fully encrypted at party ``j−1``.
2. *Merge.* For N ≤ 3 every fully encrypted set goes to party 0. For N ≥ 4,
   as in KC04, sets of odd positions go to party 1 and of even positions to
   party 0; party 1 removes duplicates and sends its (permuted) union to party 0,
   which merges everything into the duplicate-free set ``M``.
3. *Decryption as one batch around the ring.* ``M`` goes once around the ring
   0 → 1 → … → N−1 *as a whole*: every party removes its key (``k⁻¹``) from
   every row and permutes the **whole batch** before passing it on, as in
   KC04. (A batch travels as a stream of chunks of the already permuted batch,
   :func:`mpc.ring.stream_batch`, so the next party can start on the first
   chunk; this reveals nothing that the whole permuted batch would not.)
4. *Release.* The last party, N−1, drops the fakes and sends the real items,
   **sorted** bytewise, to everyone; every party returns that sorted union.

One message per hop for a whole set (or a few per streamed batch), never one
per item. Work per party: ``N·P`` encryptions, ``P`` embeddings (one extra
point decode each) and ``|M|`` decryptions, where
``|M| = |∪Sᵢ| + Σᵢ(P − |Sᵢ|)``. The decryption is sequential around the ring
(party ``i+1`` needs the whole batch permuted by party ``i``), pipelined in
pairs: wall time ≈ ⌈N/2⌉·|M| decryptions of one party.

What is revealed (beyond a party's own input and the output ∪Sᵢ)
-----------------------------------------------------------------
* Everyone: N and ``P``. With ``pad_to=None`` also every party's ⌈log₂|Sᵢ|⌉,
  i.e. each set size within a factor of two; pass a public bound (e.g. the
  number of candidate itemsets, as KC04 do) to avoid that.
* Everyone: ``|M|`` (the size of the decryption batch), hence the number of
  fakes ``N·P − Σ|Sᵢ|``, the total ``Σᵢ|Sᵢ|`` of the true set sizes and the
  number of duplicates ``Σᵢ|Sᵢ| − |∪Sᵢ|`` — as in KC04's decryption round.
  For N = 2 that is the other party's set size. Fakes hide the individual
  sizes (N ≥ 3) and make every message in steps 1–2 the same length ``P``.
* The merging party (party 0 for N ≤ 3) knows which fully encrypted set came
  from which party, so it learns ``|∩_{i∈T} Sᵢ|`` for every subset ``T`` of
  parties — how many items are common to each group of parties, *not which*.
  For N ≥ 4 this splits as in KC04's theorem: party 1 learns it for subsets
  of odd positions, party 0 for subsets of even positions, plus the number of
  items held by at least one odd and one even party (and the size of the odd
  union).
* Nothing links an item to the party or parties that hold it: the merging
  party's knowledge stays attached to ciphertext rows, every later party
  permutes the whole batch, and the union comes out sorted. So no party learns
  which items another party holds beyond what its own set and the union imply
  (for N = 2: an item of the union not in my set is the other's). This holds
  even for a coalition of all parties but one, ``p``: they cannot follow a row
  through ``p``'s decryption, so they learn about ``Sₚ`` only the counts above.
  ``tests/test_set_union_linking.py`` plays the linking attacks.

Items are bytes of at most 30 bytes (they are carried inside a P-256
x-coordinate and given back by the last decryption). Longer items raise a
:class:`~mpc.errors.ProtocolError` on every party: encode them through an agreed
index — horizontal mining sends candidate itemsets as their positions in the
candidate list every party knows.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Iterable

import numpy as np

from .channel import Channel, agree, broadcast, pack_arrays, recv_array, recv_arrays, scoped, send_array
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
from .ring import (
    STATUS_NOT_BYTES,
    STATUS_OK,
    STATUS_OVER_PAD,
    STATUS_TOO_LONG,
    exchange_status,
    local_set,
    recv_batch_stream,
    ring_pass,
    stream_batch,
)

__all__ = ["secure_set_union", "DEFAULT_PAD_RULE", "UNION_LEAKAGE"]

DEFAULT_PAD_RULE = "largest set size rounded up to a power of two"

UNION_LEAKAGE = (
    "secure set union (Kantarcioglu–Clifton 2004): every party learns the union, the total of the set sizes "
    "and the number of duplicates (for two parties, the other's set size); the merging party also learns how "
    "many items each group of parties has in common — never which items, nor which party holds an item"
)
"""One line for "what the parties learned" reports (see the module docstring for the details)."""

_PROBLEMS = {
    STATUS_TOO_LONG: (
        f"holds an item longer than {MAX_ITEM_BYTES} bytes, the most one P-256 point can carry; "
        "encode items through an agreed index (e.g. their positions in a candidate list all parties know) "
        "and pass those indexes as items"
    ),
    STATUS_OVER_PAD: "holds more distinct items than pad_to",
    STATUS_NOT_BYTES: "passed an item that is not bytes",
}


def _size_bucket(m: int) -> int:
    """0 for an empty set, else ``e + 1`` with ``2**e`` the smallest power of two ≥ m."""
    return 0 if m == 0 else (m - 1).bit_length() + 1


# --------------------------------------------------------------------------- steps
async def _pad_size(sc: Channel, mine: list[bytes], code: int, pad_to: int | None) -> int:
    await agree(sc, "params", pad_to=pad_to, parties=len(sc.parties), max_item_bytes=MAX_ITEM_BYTES)
    if pad_to is not None and pad_to < 0:
        raise ValueError("pad_to must be a non-negative int or None")
    if code == STATUS_OK and pad_to is not None and len(mine) > pad_to:
        code = STATUS_OVER_PAD
    bucket = _size_bucket(len(mine)) if pad_to is None and code == STATUS_OK else 0
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
    """Step 2; returns the merged set ``M`` at party 0, ``None`` elsewhere."""
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
    return union


async def _decrypt_around(sc: Channel, cipher: PohligHellmanP256, merged: np.ndarray | None, bound: int):
    """Step 3: ``M`` once around the ring 0 → … → N−1 as one batch; the plaintext rows at N−1, else ``None``.

    Every party permutes the whole batch before passing it on. Party 0 permutes
    ``M``, then decrypts and streams it chunk by chunk; odd positions decrypt
    chunks as they arrive and pass the permuted batch on; even positions ≥ 2
    take the whole batch, permute it, then decrypt and stream it — so each
    streaming party overlaps with its successor.
    """
    parties, n = sc.parties, len(sc.parties)
    i = parties.index(sc.me)
    if i == 0:
        if merged is None:  # pragma: no cover - party 0 always merges
            raise ProtocolError("secure_set_union: party 0 holds no merged set")
        await stream_batch(sc, parties[1], "dec/0", merged, cipher.decrypt)
        return None
    streams = i % 2 == 0 and i < n - 1  # take the whole batch, then decrypt while sending
    rows = await recv_batch_stream(sc, parties[i - 1], f"dec/{i - 1}", bound, None if streams else cipher.decrypt)
    if i == n - 1:
        return rows
    await stream_batch(sc, parties[i + 1], f"dec/{i}", rows, cipher.decrypt if streams else None)
    return None


async def _release(sc: Channel, plain: np.ndarray | None) -> list[bytes]:
    """Step 4: the last party sends the real items, sorted, to everyone; all return them."""
    parties = sc.parties
    last = parties[-1]
    if sc.me == last:
        assert plain is not None
        reals = unique_rows(plain[plain[:, 0] != FAKE_FLAG])  # sorted bytewise: no order from the ring
        await broadcast(sc, "out", pack_arrays(reals))
    else:
        (reals,) = await recv_arrays(sc, last, "out")
        reals = check_rows(reals, "union")
    items, fakes = decode_rows(reals)
    if fakes:
        raise ProtocolError("the released union contained padding items")
    return sorted(items)


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
    Kantarcioglu–Clifton, IEEE TKDE 16(9), 2004, Protocol 1; see the module
    docstring for the construction and exactly what it reveals.
    """
    if len(ch.parties) < 2:
        raise ProtocolError("secure_set_union needs at least 2 parties")
    sc = scoped(ch, tag)
    pad_to = None if pad_to is None else operator.index(pad_to)
    mine, code = local_set(items, MAX_ITEM_BYTES)
    pad = await _pad_size(sc, mine, code, pad_to)
    cipher = PohligHellmanP256()
    j_held, full = await ring_pass(sc, await _first_hop(cipher, mine, pad), cipher.encrypt, "enc")
    merged = await _merge(sc, j_held, full)
    plain = await _decrypt_around(sc, cipher, merged, len(sc.parties) * pad)
    return await _release(sc, plain)
