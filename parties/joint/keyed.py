"""Laying keyed vertical partitions over one row space, privately (``--align private-id|psi``).

Each party holds records keyed by a customer id (say), some of which the others lack. Before
Vaidya–Clifton counting the parties need a common row order:

* :func:`align_private_id` — Private-ID (:func:`mpc.private_id.private_id`): rows are the
  *union* of all parties' records, in the order of their pseudonymous identifiers. Each party
  places its records at their rows and adds a *presence* item, set on the rows it holds. The
  miner appends every party's presence item to every candidate (``required``), so a candidate's
  support counts the records held by all parties (the inner join) and every candidate is a
  product over all parties: no party learns which of its records the others hold — not from
  the alignment, not from the counting (a single-owner candidate would otherwise be counted
  by its owner alone, over rows it could then tell apart).
* :func:`align_psi` — a private set intersection (:func:`mpc.psi.private_set_intersection`)
  that reveals the common keys to the parties, as SecretFlow and FATE do by default; rows are
  the common records in the order of their key digests, and counting runs on them alone.
"""

from __future__ import annotations

import numpy as np

from anonymize.itemsets import TransactionDB
from mpc.channel import Channel, agree

__all__ = ["align_private_id", "align_psi", "global_ids", "ALIGN_MODES"]

ALIGN_MODES = ("private-id", "psi")


def global_ids(db: TransactionDB, offset: int, *, presence: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(lengths, ids)`` of ``db`` with item ids shifted by ``offset``, each row ending in ``presence``."""
    lengths = np.diff(db.indptr)
    ids = db.items[db.indices] + offset
    if presence is None:
        return lengths, ids
    n = db.n_transactions
    out = np.empty(ids.size + n, np.int64)
    ends = np.cumsum(lengths + 1) - 1  # the slot of each row's presence item
    mask = np.ones(out.size, bool)
    mask[ends] = False
    out[mask] = ids
    out[ends] = presence
    return lengths + 1, out


def _scatter(n_rows: int, rows: np.ndarray, db: TransactionDB, offset: int, presence: int | None, universe: np.ndarray):
    """``db``'s records placed at ``rows`` of an ``n_rows``-row database (other rows empty)."""
    order = np.argsort(rows, kind="stable")
    sub = db.take(order)
    lengths, ids = global_ids(sub, offset, presence=presence)
    full = np.zeros(n_rows, np.int64)
    full[rows[order]] = lengths
    indptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(full, out=indptr[1:])
    return TransactionDB.from_csr(indptr, ids, items=universe)


async def align_private_id(
    ch: Channel, db: TransactionDB, key_digests: np.ndarray, *, offset: int, presence: int, universe: np.ndarray
) -> tuple[TransactionDB, int, list[str]]:
    """Private-ID alignment (module docstring): ``(db over the union's rows, |∩|, revealed lines)``.

    ``universe``: this party's global item ids plus its ``presence`` id (public schema).
    """
    from mpc.private_id import PRIVATE_ID_LEAKAGE, private_id

    await agree(ch, "align/mode", align="private-id")
    res = await private_id(ch, [bytes(r) for r in key_digests], tag="align/pid")
    rows = res.rows()
    out = _scatter(len(res.union), rows, db, offset, presence, universe)
    sizes = ", ".join(f"{p} {n:,}" for p, n in res.sizes.items())
    return (
        out,
        res.intersection,
        [
            f"all parties: {PRIVATE_ID_LEAKAGE} — here: records {sizes}; union {len(res.union):,}; held by all "
            f"{res.intersection:,}",
            "counting: every candidate includes every party's presence column (records held by all), so every "
            "count is a secure product over all parties and no single-owner count is announced",
            "the output itself: a frequent itemset of one party's own items comes with its count among the common "
            "records; set against its own count, that tells the party how many of its records holding those items "
            "are common — all of them when the two are equal (inherent in mining the inner join; the minimum "
            "support bounds how small such a group can be)",
        ],
    )


async def align_psi(
    ch: Channel, db: TransactionDB, key_digests: np.ndarray, *, offset: int, universe: np.ndarray
) -> tuple[TransactionDB, int, list[str]]:
    """PSI alignment (module docstring): ``(db of the common records in digest order, |∩|, revealed lines)``."""
    from mpc.psi import PSI_LEAKAGE, private_set_intersection

    await agree(ch, "align/mode", align="psi")
    inside = await private_set_intersection(ch, np.ascontiguousarray(key_digests[:, :16]), tag="align/psi")
    common = np.flatnonzero(inside)
    keys = np.ascontiguousarray(key_digests[common]).view(np.dtype((np.void, key_digests.shape[1]))).ravel()
    order = common[np.argsort(keys, kind="stable")]
    await agree(ch, "align/size", common=int(order.size))
    sub = db.take(order)
    lengths, ids = global_ids(sub, offset)
    indptr = np.zeros(order.size + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    out = TransactionDB.from_csr(indptr, ids, items=universe)
    return (
        out,
        int(order.size),
        [
            f"all parties: {PSI_LEAKAGE} — here {order.size:,} common records: each party learns which of its "
            "records the others hold",
        ],
    )
