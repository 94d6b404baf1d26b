"""Joint mining of vertically partitioned data (each party holds some items of every transaction).

Vaidya & Clifton 2002
---------------------
J. Vaidya, C. Clifton, "Privacy preserving association rule mining in
vertically partitioned data", KDD 2002. All parties hold the same N
transactions (aligned by position); each party holds some of the items (the
ownership is public, as the schema). For each candidate, each owning party
ANDs its item columns; the support is the sum over transactions of the
product of those vectors. All candidates of a level go through one batched
:func:`mpc.shared_product.product_count_shares` (Gilboa multiplication by
correlated OT, folded over the owners, so it works for any number of
parties), leaving the counts additively shared; one
:func:`mpc.secure_sum.secure_sum_threshold` decides which are frequent and
one :func:`mpc.secure_sum.secure_sum` reveals the counts of the frequent ones
only. Candidates held entirely by one party are counted locally and enter the
same threshold round, so even their owner's infrequent counts stay private.

Revealed to every party: N, the item ownership, which candidates of each
level are frequent and the counts of the frequent ones (the output). Not the
count of any infrequent candidate, nor any transaction.
"""

from __future__ import annotations

import time

import numpy as np

from anonymize.itemsets import (
    FrequentItemsets,
    TransactionDB,
    apriori_gen,
    association_rules,
    itemset_columns,
    min_count_for,
    unpack_columns,
)
from mpc.channel import Channel, agree, broadcast, gather_from
from mpc.errors import ProtocolError
from mpc.secure_sum import bound_bits_for, secure_sum, secure_sum_threshold, threshold_leakage
from mpc.shared_product import product_count_shares

from .common import JointResult, PhaseClock, ProgressFn, support_ratio

__all__ = ["mine_vertical"]


async def mine_vertical(
    ch: Channel,
    db: TransactionDB,
    *,
    min_support,
    min_confidence=None,
    max_len: int | None = None,
    progress: ProgressFn | None = None,
) -> JointResult:
    """Vaidya–Clifton joint mining of vertically partitioned data (see module docstring).

    ``db`` holds this party's items (ids disjoint from every other party's) for
    all N transactions, in the agreed transaction order. Any number of parties.
    """
    s = support_ratio(min_support)
    res = JointResult(frequent=None, rules=None)  # type: ignore[arg-type]
    clk = PhaseClock(res)
    b0 = ch.bytes_sent
    t = time.perf_counter()
    N = db.n_transactions
    await agree(
        ch,
        "v/params",
        min_support=str(s),
        transactions=int(N),
        min_confidence=None if min_confidence is None else str(min_confidence),
        max_len=max_len,
    )
    # item ownership is public (the schema of a vertical partition)
    mine_items = np.unique(db.items).astype(np.int64)
    await broadcast(ch, "v/items", mine_items.tobytes())
    got = await gather_from(ch, "v/items")
    owned = {ch.me: mine_items}
    owned.update({p: np.frombuffer(b, dtype=np.int64) for p, b in got.items()})
    all_items = np.concatenate([owned[p] for p in ch.parties])
    universe, cnt = np.unique(all_items, return_counts=True)
    dup = universe[cnt > 1]
    if dup.size:  # public information: every party raises the same error
        raise ProtocolError(
            f"item ids held by more than one party (e.g. {dup[:5].tolist()}): vertical partitions must split the items"
        )
    owner_of = np.full(int(universe.max()) + 1 if universe.size else 0, -1, dtype=np.int64)
    for pi, p in enumerate(ch.parties):
        owner_of[owned[p]] = pi
    min_count = min_count_for(s, N)
    bound = bound_bits_for(max(N, 1))  # |count − min_count| ≤ N (public)
    res.rounds += 3
    t = clk.add("setup", t)
    levels: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    cand = universe.reshape(-1, 1)
    me = ch.parties.index(ch.me)
    P = len(ch.parties)
    k = 1
    while cand.shape[0] and N > 0 and (max_len is None or k <= max_len):
        item_owner = owner_of[cand]  # (K, k)
        owners = np.zeros((cand.shape[0], P), dtype=bool)
        np.put_along_axis(owners, item_owner, True, axis=1)
        # this party's AND-vector per candidate over its own items (items it does not hold are ignored)
        if owners[:, me].any():
            vec = unpack_columns(itemset_columns(db, cand, missing="ignore"), N)
        else:
            vec = np.zeros((cand.shape[0], N), dtype=np.uint8)
        t = clk.add("local_columns", t)
        shares = await product_count_shares(ch, vec, owners, tag=f"L{k}/product")
        t = clk.add("secure_product", t)
        frequent = await secure_sum_threshold(
            ch, shares.view(np.int64), min_count, tag=f"L{k}/threshold", bound_bits=bound
        )
        t = clk.add("secure_threshold", t)
        F = np.flatnonzero(frequent)
        glob = await secure_sum(ch, shares[F], tag=f"L{k}/counts")
        t = clk.add("secure_counts", t)
        res.rounds += 3
        res.levels.append(
            {
                "k": k,
                "candidates": int(cand.shape[0]),
                "cross_party": int((owners.sum(1) > 1).sum()),
                "frequent": int(F.size),
            }
        )
        if progress:
            progress(
                f"level {k}: {cand.shape[0]} candidates ({int((owners.sum(1) > 1).sum())} across parties), "
                f"{F.size} frequent"
            )
        if F.size == 0:
            break
        levels[k] = (cand[F], glob.astype(np.int64))
        cand = apriori_gen(cand[F])
        k += 1
        t = clk.add("candidates", t)
    res.frequent = FrequentItemsets(levels, N, min_count)
    if min_confidence is not None:
        res.rules = association_rules(res.frequent, min_confidence)
    clk.add("rules", t)
    res.bytes_sent = ch.bytes_sent - b0
    res.revealed = [
        "all parties: N and which party holds which item ids (the vertical schema)",
        f"all parties, per level: which candidates are frequent ({threshold_leakage(ch.parties)}, on shared counts)",
        "all parties: the global counts of the frequent itemsets (the output; secure sum)",
        "never: the count of an infrequent candidate, or any transaction",
    ]
    return res
