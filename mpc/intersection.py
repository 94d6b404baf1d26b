"""Secure set-intersection cardinality among N ≥ 2 parties (Vaidya–Clifton 2005).

Model and assumptions
---------------------
Semi-honest parties that do not collude; authenticated channels.
``ch.parties`` is the ring. Keys are fresh per call. The commutative "DH
hashing" of Agrawal, Evfimievski and Srikant ("Information sharing across
private databases", SIGMOD 2003): security rests on the decisional
Diffie–Hellman assumption in the prime-order subgroup (order
ℓ = 2²⁵² + 277423…493) of Curve25519, with SHA-512 modelled as a random oracle
— items are hashed into that subgroup by RFC 9380's random-oracle suite
``edwards25519_XMD:SHA-512_ELL2_RO_`` (A. Faz-Hernández et al., "Hashing to
Elliptic Curves", RFC 9380, 2023: two Elligator 2 maps added, indifferentiable
from a random oracle into the group by E. Brier, J.-S. Coron, T. Icart,
D. Madore, H. Randriam, M. Tibouchi, "Efficient indifferentiable hashing into
ordinary elliptic curves", CRYPTO 2010; :func:`mpc.commutative.hash_items`),
fakes the same way from random strings, and clamped X25519 scalars keep every
value in it. Every value a party receives is checked to be a canonical
encoding of a point of order ℓ before its key is applied
(:func:`mpc.commutative.check_subgroup_points`): a twist point, a small-order
point or a non-canonical encoding ends the session with a protocol error. So every
value on the wire is a uniformly distributed-looking point of order ℓ; none
carries a bit of its item (such as whether a hash lands on the curve or on its
twist).

Construction (J. Vaidya, C. Clifton, "Secure set intersection cardinality with
application to association rule mining", Journal of Computer Security 13(4),
2005), batched and pipelined:

1. Each party removes duplicates, hashes every item into the prime-order
   group (:func:`~mpc.commutative.hash_items`), applies ``X25519(aᵢ, ·)`` with
   its own scalar (:class:`~mpc.commutative.DHHash`),
   optionally pads with random fakes to ``pad_to``, permutes, and sends the
   batch to the next party in the ring.
2. Every party applies its own key to each batch it receives, permutes it and
   passes it on; all N batches move at once (N rounds, every party busy in
   every round). Set ``j`` is fully hashed (by all N keys) at party ``j−1``,
   which sends it to the *comparing party*.
3. The comparing party — the first party of ``receivers`` in ring order —
   counts the values present in all N sets (equal items give equal values
   because the hashing commutes; different ones collide with negligible
   probability) and sends ``|∩ Sᵢ|`` to the other receivers.

Work per party: ``Σᵢ|Sᵢ|`` X25519 operations, the subgroup check of every
received value, plus hashing its own set (two Elligator 2 maps and four point
additions per item); one message per hop per set.

What each party learns (beyond its own input)
---------------------------------------------
* Receivers: ``|∩ᵢ Sᵢ|``. Other parties: nothing about it (they return ``None``).
* Everyone: every party's (deduplicated) set size ``|Sᵢ|``, since each set
  passes through every party; with ``pad_to`` only the public bound instead.
* The comparing party knows which fully hashed set came from which party, so
  it learns ``|∩_{i∈T} Sᵢ|`` for *every* subset ``T`` of the parties (with
  ``|T| ≥ 2``; and ``|Sᵢ|`` itself when no padding is used) — not which items.
* No party learns which of its items are in the intersection, nor anything
  about other parties' items beyond these counts.
"""

from __future__ import annotations

import asyncio
import operator
import secrets
from collections.abc import Iterable

import numpy as np

from .channel import Channel, agree, recv_array, scoped, send_array
from .commutative import HASH_TO_GROUP, ROW_BYTES, DHHash, check_rows, hash_items, run_rows, shuffle_rows, unique_rows
from .errors import ProtocolError
from .ring import STATUS_NOT_BYTES, STATUS_OK, STATUS_OVER_PAD, exchange_status, local_set, ring_pass

__all__ = ["intersection_cardinality", "count_common"]

_OK, _OVER_PAD, _NOT_BYTES = STATUS_OK, STATUS_OVER_PAD, STATUS_NOT_BYTES
_PROBLEMS = {_OVER_PAD: "holds more distinct items than pad_to", _NOT_BYTES: "passed an item that is not bytes"}


def count_common(sets: list[np.ndarray]) -> int:
    """Number of 32-byte values present in every one of ``sets``."""
    if any(len(s) == 0 for s in sets):
        return 0
    rows = np.concatenate([unique_rows(s) for s in sets])
    _, counts = np.unique(rows.view(np.dtype((np.void, ROW_BYTES))).ravel(), return_counts=True)
    return int(np.count_nonzero(counts == len(sets)))


def _receivers(parties: tuple[str, ...], names: list[str] | None) -> list[str]:
    if names is None:
        return list(parties)
    unknown = sorted(set(names) - set(parties))
    if unknown or not names:
        raise ValueError(f"receivers must be a non-empty subset of the session's parties (unknown: {unknown})")
    return [p for p in parties if p in names]


def _hash_batch(hasher: DHHash):
    return lambda chunk: hasher.apply(hash_items(chunk))


def _fake_batch(hasher: DHHash):
    return lambda chunk: hasher.apply(hash_items([secrets.token_bytes(32) for _ in chunk], domain=b"ppdm/dh-hash/fake"))


async def _first_hop(hasher: DHHash, mine: list[bytes], pad: int) -> np.ndarray:
    real = await run_rows(_hash_batch(hasher), mine)
    fake = await run_rows(_fake_batch(hasher), range(max(0, pad - len(mine))))
    return shuffle_rows(np.concatenate([real, fake]))


async def _compare(sc: Channel, j_held: int, full: np.ndarray, takers: list[str]) -> int:
    """At the comparing party: collect the N fully hashed sets, count, send the count to the receivers."""
    parties, n = sc.parties, len(sc.parties)

    async def full_set(j: int) -> np.ndarray:
        if j == j_held:
            return full
        return check_rows(await recv_array(sc, parties[(j - 1) % n], f"full/{j}"), "fully hashed set")

    count = count_common(list(await asyncio.gather(*(full_set(j) for j in range(n)))))
    payload = count.to_bytes(8, "little")
    await asyncio.gather(*(sc.send(p, "result", payload) for p in takers[1:]))
    return count


async def intersection_cardinality(
    ch: Channel,
    items: Iterable[bytes],
    *,
    tag: str = "isect",
    receivers: Iterable[str] | None = None,
    pad_to: int | None = None,
) -> int | None:
    """``|∩ᵢ Sᵢ|`` over every party's set of items (bytes of any length; duplicates ignored).

    ``receivers``: the parties that get the result (default: all); the others
    return ``None``. The first receiver in ring order does the comparison and
    so learns the intersection sizes of every subset of sets (module docstring).
    ``pad_to``: optional public bound; sets are padded with random fakes to
    exactly this size, hiding their sizes (a larger set is an error on every party).
    All parties must pass the same ``receivers`` and ``pad_to`` (checked).
    """
    if len(ch.parties) < 2:
        raise ProtocolError("intersection_cardinality needs at least 2 parties")
    sc = scoped(ch, tag)
    if isinstance(receivers, str):
        receivers = [receivers]
    names = None if receivers is None else sorted(set(receivers))
    pad_to = None if pad_to is None else operator.index(pad_to)
    mine, code = local_set(items)
    await agree(sc, "params", receivers=names, pad_to=pad_to, parties=len(ch.parties), hash=HASH_TO_GROUP)
    takers = _receivers(ch.parties, names)
    if pad_to is not None and pad_to < 0:
        raise ValueError("pad_to must be a non-negative int or None")
    if code == _OK and pad_to is not None and len(mine) > pad_to:
        code = _OVER_PAD
    await exchange_status(sc, code, 0, _PROBLEMS, "intersection_cardinality")
    hasher = DHHash()
    first = await _first_hop(hasher, mine, pad_to or 0)
    j_held, full = await ring_pass(sc, first, hasher.apply_received, "enc")
    if sc.me == takers[0]:
        return await _compare(sc, j_held, full, takers)
    await send_array(sc, takers[0], f"full/{j_held}", full)
    if sc.me in takers:
        got = await sc.recv(takers[0], "result")
        if len(got) != 8:
            raise ProtocolError("malformed intersection result")
        return int.from_bytes(got, "little")
    return None
