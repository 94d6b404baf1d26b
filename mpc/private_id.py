"""Private-ID among N ≥ 2 parties: pseudonymous ids over the union of keyed records, no membership.

Model and assumptions
---------------------
Semi-honest parties that do not collude; authenticated pairwise channels.
``ch.parties`` is the ring; its first party is the *merger*. Security rests on
DDH in the prime-order subgroup of Curve25519 with keys hashed into it by
RFC 9380's random-oracle suite (:func:`mpc.commutative.hash_items`), and the
clamped X25519 scalars of :class:`mpc.commutative.DHHash` (commutative keyed
hashing, no inverse needed). Every received point is checked to lie in that
encoding: every received value has a key of the receiver applied before
anything is compared, and the clamped keys clear any small-order component
while Curve25519 is twist-secure (:func:`mpc.commutative.check_canonical_points`).

What it computes
----------------
P. Buddhavarapu, A. Knox, P. Mohassel, S. Sengupta, E. Taubeneck,
V. Vlaskin, "Private Matching for Compute", Cryptology ePrint Archive
2020/599: every party learns a pseudonymous identifier for each of its own
records and the list of identifiers of the *union* of all parties' records —
so the parties can lay their columns over one common row space — but not
which of its records the others hold. Identifiers are
``id(x) = H(x)^(k₀…k_{N−1}·s₀…s_{N−1})`` (two keys per party: ``k`` for
matching, ``s`` for identifiers), 32 bytes.

Construction (the two-key structure of Private-ID; the N-party ring of
J. Vaidya, C. Clifton, "Secure set intersection cardinality with
application to association rule mining", J. Computer Security 13(4), 2005):

1. *Pass A, keys ``k``, forwards.* Each party ``j`` sends its ``H(x)^(k_j)``
   values in a private random order ``π_j`` around the ring; every other party
   applies its ``k`` and passes them on *in order*. The last one, ``j − 1``,
   holds the matching form ``H(x)^K`` of ``j``'s records (in ``π_j`` order,
   which it cannot link to any record) and sends a permuted copy to the merger.
2. *Pass B, keys ``s``, backwards.* From ``j − 1`` the same array goes back
   round the ring (``j − 2``, …, ``j + 1``), every party applying its ``s``; at
   ``j``, which applies ``s_j`` and undoes ``π_j``: the identifiers of its
   records, in its own order. ``j`` applies the last key, so no other party
   ever holds ``j``'s identifiers. (For two parties this is Private-ID's own
   message flow: each applies both its keys to the other's values once.)
3. *Union.* The merger de-duplicates the matching forms, counts the records
   held by every party, applies ``s₀`` and permutes; the batch goes once around
   the ring, every party applying its ``s`` and permuting; the last party sorts
   the identifiers and sends the union to everyone, with the size of the full
   intersection.

Work per party (n records each, union U): n hashes into the group, 2n + 2(N−1)·n + |U|
X25519 operations (two parties, half shared: 5.5n).

What each party learns (beyond its own input)
---------------------------------------------
* Everyone: every party's number of records, the union's size |U| and the number of
  records all parties hold, |∩|; the union's identifiers (pseudonyms: random-looking
  32-byte strings), and the identifiers of its own records.
* The merger: how many records each group of parties has in common (|∩_T| for every
  subset T), as in Vaidya–Clifton's intersection cardinality — not which.
* Never: which of a party's own records another party holds (its identifiers are all
  in the union, which carries no party labels), nor any other party's keys. With two
  parties, the sizes give each party the other's number of records and |∩|, nothing more.
* The forms a party handles could only be compared with values that carry the same keys.
  The matching forms ``H^K`` of a set are held in order only by the last party of its
  pass A, in the owner's private random order; the merger gets them permuted (when the
  merger is that last party, it learns which *positions* of a random order it cannot
  invert are shared — nothing about a record). No pass-B form ``H^(K·s_S)`` equals a
  union form ``H^(K·s_0…s_i)`` at the same party except at the merger for the set of
  party 1, which it already knows as above; the union is permuted at every hop and
  published sorted. ``tests/test_private_id.py`` inspects a party's view.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field

import numpy as np

from .channel import Channel, agree, recv_array, scoped, send_array
from .commutative import (
    HASH_TO_GROUP,
    ROW_BYTES,
    DHHash,
    check_canonical_points,
    check_rows,
    hash_items,
    run_rows,
    shuffle_rows,
    unique_rows,
)
from .errors import ProtocolError
from .ring import recv_batch_stream, stream_batch

__all__ = ["PrivateIdResult", "private_id", "PRIVATE_ID_LEAKAGE"]

PRIVATE_ID_LEAKAGE = (
    "Private-ID (Buddhavarapu et al. 2020, on the Vaidya–Clifton ring): every party learns each party's "
    "number of records, the union's size and the number of records held by all parties, and pseudonymous "
    "identifiers for its own records and for the union; the first party also learns how many records each "
    "group of parties has in common; no party learns which of its records another party holds"
)

_DOMAIN = b"ppdm/private-id/v1/edwards25519_XMD:SHA-512_ELL2_RO_"


@dataclass(frozen=True)
class PrivateIdResult:
    """One party's output: ``own[r]`` is the identifier of its ``r``-th record; ``union`` sorted."""

    own: np.ndarray  # (n, 32) uint8, in the caller's record order
    union: np.ndarray  # (|U|, 32) uint8, sorted bytewise, identical on every party
    intersection: int  # records held by every party
    sizes: dict[str, int]  # every party's number of records
    _rows: np.ndarray | None = field(default=None, repr=False, compare=False)

    def rows(self) -> np.ndarray:
        """Row of each own record in the union (the common row space), as int64; computed once."""
        if self._rows is None:
            object.__setattr__(self, "_rows", self._find_rows())
        assert self._rows is not None
        return self._rows

    def _find_rows(self) -> np.ndarray:
        u = np.ascontiguousarray(self.union).view(np.dtype((np.void, ROW_BYTES))).ravel()
        o = np.ascontiguousarray(self.own).view(np.dtype((np.void, ROW_BYTES))).ravel()
        pos = np.searchsorted(u, o)
        if o.size and (u.size == 0 or (pos >= u.size).any() or not np.array_equal(u[np.minimum(pos, u.size - 1)], o)):
            raise ProtocolError("an own identifier is missing from the union (a party deviated from the protocol)")
        return pos.astype(np.int64)


def _permutation(n: int) -> np.ndarray:
    keys = np.frombuffer(secrets.token_bytes(8 * n), dtype="<u8") if n else np.zeros(0, "<u8")
    return np.argsort(keys, kind="stable")


async def private_id(ch: Channel, items: list[bytes], *, tag: str = "pid") -> PrivateIdResult:
    """Private-ID over ``ch.parties`` (module docstring): identifiers for ``items`` and the union's.

    ``items`` are this party's record keys as bytes, distinct (a repeated key raises
    ``ValueError`` before anything is sent). Every party must call it with the same ``tag``.
    """
    if len(ch.parties) < 2:
        raise ProtocolError("private_id needs at least 2 parties")
    if len(set(items)) != len(items):
        raise ValueError("private_id: record keys must be distinct")
    sc = scoped(ch, tag)
    parties, n_par = sc.parties, len(sc.parties)
    me = parties.index(sc.me)
    nxt, prv = parties[(me + 1) % n_par], parties[(me - 1) % n_par]
    await agree(sc, "params", parties=n_par, hash=HASH_TO_GROUP, proto="private-id/v1")
    k, s = DHHash(), DHHash()
    hashed = await run_rows(lambda chunk: k.apply(hash_items(chunk, _DOMAIN)), items)  # H(x)^k, record order
    n = len(items)
    pi = _permutation(n)

    j_last = (me + 1) % n_par  # the set whose k-pass ends at me: I hand its matching form to the merger
    held: dict[str, np.ndarray] = {}
    seen = {me: n}  # every set's size passes through every party in pass A (public)

    async def through_me(j: int) -> None:
        """Party ``j``'s set passing through me: ``k`` in pass A (forwards), ``s`` in pass B (backwards)."""
        r = (me - j) % n_par  # my hop in pass A
        got = check_rows(await recv_array(sc, prv, f"A/{j}/{r - 1}"), "identifier batch")
        seen[j] = len(got)
        cur = await run_rows(k.apply_received_clamped, got)
        if r < n_par - 1:
            await send_array(sc, nxt, f"A/{j}/{r}", cur)
            cur = check_rows(await recv_array(sc, nxt, f"B/{j}/{(me + 1) % n_par}"), "identifier batch")
            cur = await run_rows(s.apply_received_clamped, cur)
        else:  # the matching form H(x)^K of j's set, in j's private order: a permuted copy to the merger
            if sc.me == parties[0]:
                held["full"] = shuffle_rows(cur)
            else:
                await send_array(sc, parties[0], f"full/{j}", shuffle_rows(cur))
            cur = await run_rows(s.apply, cur)
        await send_array(sc, prv, f"B/{j}/{me}", cur)

    async def own_ids() -> np.ndarray:
        """Steps 1-2: my set forwards with every k, backwards with every other s, then my s, in order π."""
        await send_array(sc, nxt, f"A/{me}/0", hashed[pi])
        back = check_rows(await recv_array(sc, nxt, f"B/{me}/{(me + 1) % n_par}"), "identifier batch")
        if len(back) != n:
            raise ProtocolError(f"{nxt} returned {len(back)} identifiers for {n} records")
        ids = await run_rows(s.apply_received_clamped, back)
        own = np.empty_like(ids)
        own[pi] = ids
        return own

    own, *_ = await asyncio.gather(own_ids(), *(through_me(j) for j in range(n_par) if j != me))
    if sc.me == parties[0]:
        j_held, full = j_last, held["full"]
    else:
        j_held, full = j_last, np.empty((0, ROW_BYTES), np.uint8)
    # step 3: the merger de-duplicates, counts the common records, and starts the union pass
    merger = parties[0]
    if sc.me != merger:
        sizes = None
    else:
        sets = {j_held: full}
        for j in range(n_par):
            if j != j_held:
                sets[j] = check_rows(await recv_array(sc, parties[(j - 1) % n_par], f"full/{j}"), "matching set")
                check_canonical_points(sets[j])
        stacked = np.concatenate([unique_rows(sets[j]) for j in range(n_par)])
        uniq, counts = np.unique(stacked.view(np.dtype((np.void, ROW_BYTES))).ravel(), return_counts=True)
        common = int(np.count_nonzero(counts == n_par))
        sizes = np.array([len(sets[j]) for j in range(n_par)] + [common], np.int64)
        union = uniq.view(np.uint8).reshape(-1, ROW_BYTES)
        # permuted as a whole, then keyed and sent chunk by chunk: the next party works on chunk c
        # while this one keys chunk c + 1 (mpc.ring.stream_batch)
        await stream_batch(sc, nxt, "union/0", union, s.apply)
    if me != 0:
        bound = sum(seen.values())
        cur = await recv_batch_stream(sc, prv, f"union/{me - 1}", bound, s.apply_received_clamped)
        if me < n_par - 1:
            await stream_batch(sc, nxt, f"union/{me}", cur)  # permuted as a whole before the first chunk
    if me == n_par - 1:
        final = unique_rows(cur)
        if len(final) != len(cur):
            raise ProtocolError("the union batch holds repeated identifiers (a party deviated from the protocol)")
        if sizes is None:
            sizes = (await recv_array(sc, merger, "sizes")).astype(np.int64)
        for p in parties[:-1]:
            await send_array(sc, p, "union/final", final)
            if p != merger:
                await send_array(sc, p, "sizes", sizes)
    else:
        if sizes is not None:  # the merger
            await send_array(sc, parties[-1], "sizes", sizes)
        else:
            sizes = await recv_array(sc, parties[-1], "sizes")
        final = check_rows(await recv_array(sc, parties[-1], "union/final"), "union")
        check_canonical_points(final)
    assert sizes is not None
    if sizes.shape != (n_par + 1,) or sizes.dtype != np.int64:
        raise ProtocolError("malformed size announcement")
    if int(sizes[me]) != n:
        raise ProtocolError("the merger saw a different number of my records than I sent")
    res = PrivateIdResult(own, final, int(sizes[-1]), {p: int(sizes[i]) for i, p in enumerate(parties)})
    res.rows()  # every own identifier is in the union
    return res
