"""Named items in joint jobs: agreeing on a horizontal job's item universe, naming a vertical schema.

Horizontal jobs need every party to count the same candidates, i.e. one numbering of the items.
Without an agreed numeric universe (``n_items``) the parties agree on one of two:

* **a public catalog** the analyst names (a list of item names; items outside it are not mined):
  reveals nothing;
* **the secure union of locally large items** (the default): a globally frequent item is
  locally frequent at some party (Cheung et al. 1996, the basis of Kantarcioglu–Clifton's
  level-wise scheme), so the union of every party's items with local support ≥ the minimum
  support is a universe that loses no frequent itemset. The names travel through
  :func:`mpc.set_union.secure_set_union` cut into chunks that fit a P-256 point
  (:func:`name_chunks`). Revealed: the names locally large at some party, and what the secure
  union reveals about the number of chunks (:data:`mpc.set_union.UNION_LEAKAGE`).

Names sort the same way on every party (integers numerically, text by code point), so the
agreed universe is the same list everywhere; each party then renumbers its items into it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from anonymize.itemsets import TransactionDB
from mpc.channel import Channel, agree, broadcast, gather_from
from mpc.errors import ProtocolError
from mpc.set_union import UNION_LEAKAGE, secure_set_union

__all__ = [
    "agree_universe",
    "name_chunks",
    "names_from_chunks",
    "renumber",
    "vertical_schema",
    "MAX_NAME_BYTES",
    "CHUNK_BYTES",
]

_DIGEST = 8  # bytes of BLAKE2b of the name that tie its chunks together
CHUNK_BYTES = 30 - _DIGEST - 1  # what a P-256 point carries (30) minus digest and chunk index
MAX_NAME_BYTES = 127 * CHUNK_BYTES


def _name_bytes(name: Any) -> bytes:
    if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
        return b"i" + int(name).to_bytes(16, "big", signed=True)
    return b"s" + str(name).encode("utf-8")


def _name_of(raw: bytes) -> Any:
    if raw[:1] == b"i" and len(raw) == 17:
        return int.from_bytes(raw[1:], "big", signed=True)
    if raw[:1] == b"s":
        return raw[1:].decode("utf-8")
    raise ProtocolError("secure union returned a malformed item name")


def name_chunks(names: Sequence[Any]) -> list[bytes]:
    """Each name as chunks ``digest8 ‖ index (bit 7: last) ‖ ≤21 bytes`` (every chunk ≤ 30 bytes)."""
    out = []
    for name in names:
        raw = _name_bytes(name)
        if len(raw) > MAX_NAME_BYTES:
            raise ValueError(f"an item name is longer than {MAX_NAME_BYTES} bytes")
        dig = hashlib.blake2b(raw, digest_size=_DIGEST).digest()
        parts = [raw[i : i + CHUNK_BYTES] for i in range(0, len(raw), CHUNK_BYTES)]
        for i, part in enumerate(parts):
            out.append(dig + bytes([i | (0x80 if i == len(parts) - 1 else 0)]) + part)
    return out


def names_from_chunks(chunks: Sequence[bytes]) -> list[Any]:
    """The names back from the chunks of :func:`name_chunks` (any order), sorted."""
    by: dict[bytes, dict[int, tuple[bool, bytes]]] = {}
    for c in chunks:
        if len(c) < _DIGEST + 1:
            raise ProtocolError("secure union returned a malformed name chunk")
        idx, last = c[_DIGEST] & 0x7F, bool(c[_DIGEST] & 0x80)
        slot = by.setdefault(c[:_DIGEST], {})
        if idx in slot and slot[idx] != (last, c[_DIGEST + 1 :]):
            raise ProtocolError("two item names share a digest (choose other names)")
        slot[idx] = (last, c[_DIGEST + 1 :])
    names = []
    for dig, parts in by.items():
        n = len(parts)
        if sorted(parts) != list(range(n)) or not parts[n - 1][0] or any(parts[i][0] for i in range(n - 1)):
            raise ProtocolError("secure union returned an incomplete item name")
        raw = b"".join(parts[i][1] for i in range(n))
        if hashlib.blake2b(raw, digest_size=_DIGEST).digest() != dig:
            raise ProtocolError("secure union returned a corrupted item name")
        names.append(_name_of(raw))
    return sort_names(names)


def sort_names(names: Sequence[Any]) -> list[Any]:
    """Integers numerically, text by code point (the same order on every party)."""
    return sorted(names, key=lambda x: (isinstance(x, str), x))


def renumber(db: TransactionDB, names: Sequence[Any], universe: Sequence[Any]) -> tuple[TransactionDB, int]:
    """``db`` (``names[i]`` names ``db.items[i]``) over the ids of ``universe``; items outside are dropped.

    Returns the new database (item universe ``0..len(universe)-1``) and how many of its items were
    dropped. When the kept names keep their order (both sorted the same way, the usual case) the CSR
    is filtered in place of a re-sort: 4 bytes per line more, not a copy of the lines.
    """
    index = {n: i for i, n in enumerate(universe)}
    pos = np.array([index.get(n, -1) for n in names], dtype=np.int64) if len(names) else np.zeros(0, np.int64)
    dropped = int(np.count_nonzero(pos < 0))
    if hasattr(db, "renumbered"):  # baskets partitioned on an engine (anonymize.itemsets.partitioned)
        return db.renumbered(pos, len(universe), list(universe)), dropped
    universe_ids = np.arange(len(universe), dtype=np.int64)
    kept = pos[pos >= 0]
    if kept.size and kept.size > 1 and not (np.diff(kept) > 0).all():
        new = pos[db.indices]
        keep = new >= 0
        lengths = np.diff(db.indptr)
        tx = np.repeat(np.arange(db.n_transactions), lengths)
        indptr = np.zeros(db.n_transactions + 1, np.int64)
        np.cumsum(np.bincount(tx[keep], minlength=db.n_transactions), out=indptr[1:])
        return TransactionDB.from_csr(indptr, new[keep], items=universe_ids), dropped
    code = pos.astype(np.int32)
    new32 = code[db.indices] if db.indices.size else np.zeros(0, np.int32)
    if dropped:
        keep = new32 >= 0
        before = np.zeros(db.indices.size + 1, np.int64)
        np.cumsum(keep, out=before[1:])
        indptr = before[db.indptr]
        new32 = new32[keep]
    else:
        indptr = db.indptr
    return TransactionDB(db.n_transactions, universe_ids, indptr, new32), dropped


async def agree_universe(
    ch: Channel,
    db: TransactionDB,
    names: Sequence[Any],
    item_kind: str,
    *,
    min_support: Fraction,
    catalog: Sequence[Any] | None,
) -> tuple[TransactionDB, list[Any], list[str]]:
    """The horizontal job's universe (module docstring): ``(db renumbered, universe names, revealed lines)``."""
    await agree(ch, "names/kind", item_kind=item_kind, catalog=catalog is not None)
    if catalog is not None:
        universe = list(catalog)
        if len(set(map(_name_bytes, universe))) != len(universe):
            raise ValueError("the catalog names an item twice")
        await agree(ch, "names/catalog", digest=hashlib.sha256(json.dumps(universe).encode()).hexdigest())
        out, _ = renumber(db, names, universe)
        return out, universe, ["all parties: nothing to agree on the items (the analyst's public catalog)"]
    D, M = min_support.denominator, min_support.numerator
    sup = db.item_support()
    large = np.flatnonzero((D * sup >= M * db.n_transactions) & (sup > 0)) if db.n_transactions else np.zeros(0, int)
    mine = [names[int(i)] for i in large]  # names[i] names db.items[i]
    try:
        chunks = name_chunks(mine)
    except ValueError as e:
        chunks, problem = [], str(e)
    else:
        problem = ""
    await broadcast(ch, "names/check", problem.encode())
    got = await gather_from(ch, "names/check")
    bad = [f"party {p} {v.decode(errors='replace')}" for p, v in got.items() if v] + (
        [f"party {ch.me} {problem}"] if problem else []
    )
    if bad:
        raise ProtocolError("; ".join(bad))
    union = await secure_set_union(ch, chunks, tag="names/union")
    universe = names_from_chunks(union)
    out, _ = renumber(db, names, universe)
    return (
        out,
        universe,
        [
            "all parties: the names of the items locally frequent (support >= min_support in its own data) at some "
            f"party, {len(universe)} of them, agreed by {UNION_LEAKAGE} (counted in name chunks of "
            f"{CHUNK_BYTES} bytes)"
        ],
    )


async def vertical_schema(ch: Channel, names: Sequence[Any], item_kind: str) -> tuple[list[int], list[Any]]:
    """Every party's item names (the public schema of a vertical job): ``(offsets, global names)``.

    Party ``p``'s item ``c`` gets the global id ``offsets[p] + c``. A name held by two parties is
    shown as ``party:name`` (both), so an output never mixes two items.
    """
    mine = json.dumps({"kind": item_kind, "names": list(names)}).encode()
    await broadcast(ch, "schema/names", mine)
    got = await gather_from(ch, "schema/names")
    got[ch.me] = mine
    per: list[list[Any]] = []
    for p in ch.parties:
        try:
            doc = json.loads(got[p])
            lst = doc["names"]
        except (ValueError, KeyError, TypeError):
            raise ProtocolError(f"vertical schema: malformed item names from {p}") from None
        if not isinstance(lst, list) or not all(isinstance(x, (int, str)) and not isinstance(x, bool) for x in lst):
            raise ProtocolError(f"vertical schema: malformed item names from {p}")
        per.append(lst)
    offsets = list(np.cumsum([0] + [len(x) for x in per[:-1]]).astype(int))
    seen: dict[Any, int] = {}
    for lst in per:
        for n in lst:
            seen[n] = seen.get(n, 0) + 1
    glob: list[Any] = []
    for p, lst in zip(ch.parties, per):
        glob.extend(n if seen[n] == 1 else f"{p}:{n}" for n in lst)
    return [int(o) for o in offsets], glob
