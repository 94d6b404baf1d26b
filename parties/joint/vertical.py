"""Joint mining of vertically partitioned data (each party holds some items of every transaction).

Vaidya & Clifton 2002, with two ways to count
---------------------------------------------
J. Vaidya, C. Clifton, "Privacy preserving association rule mining in
vertically partitioned data", KDD 2002. All parties hold the same N
transactions (aligned by position); each party holds some of the items (the
ownership is public, as the schema). A candidate's support is
Σ_t Π_{owners p} v_p[t], v_p the AND of owner p's items of it (its *part*).
Per level, every candidate is counted by one of:

* **local** — one owner: it counts the candidate itself and announces the
  frequent ones with their counts (exactly what the output reveals; the
  counts of its infrequent ones stay with it);
* **encrypted** (two owners) — :func:`mpc.lwe_product.encrypted_count_shares`:
  the owner with fewer distinct parts encrypts its part columns under LWE,
  the other adds the ciphertext rows of its own transaction-id sets,
  re-randomizes and masks (B. Goethals, S. Laur, H. Lipmaa, T. Mielikäinen,
  "On private scalar product computation for privacy-preserving data mining",
  ICISC 2004, with LWE). Traffic is
  8 bytes per transaction and encrypted column plus 16 KiB per selecting
  column — not per candidate — and the selector's work follows the sizes of
  its tid sets. The shares of Δ·count + noise are rounded to shares of the
  count inside the shares (:func:`mpc.lwe_product.round_shares`);
* **product** — :func:`mpc.batched_product.batched_count_shares`: Gilboa
  products by correlated OT folded over the owners, one SoftSpoken OT
  (Roy, CRYPTO 2022; 32 bits on the wire) per transaction and newcomer part
  for all the candidates that share it, corrections of ⌈log2 N⌉+2 bits (any
  number of owners).

``counting="auto"`` picks per level and owner pair the path with the smaller
estimated cost (bytes and compute, :func:`choose_path`); ``"product"`` or
``"encrypted"`` forces one for two-owner candidates (three or more owners
always use products). Then one :func:`mpc.secure_sum.secure_sum_threshold`
over the shares of all multi-owner candidates decides which are frequent,
and the counts of the frequent ones only are revealed
(:func:`mpc.secure_sum.secure_sum`).

Revealed to every party: N, the item ownership, which candidates of each
level are frequent and the counts of the frequent ones (the output), and
which counting path each level used (a function of public sizes). Not the
count of any infrequent candidate, nor any transaction, nor the size of any
party's transaction-id sets: both paths send messages whose sizes depend only
on public sizes, and every value a party receives is masked or encrypted.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from anonymize.itemsets import (
    FrequentItemsets,
    TransactionDB,
    apriori_gen,
    association_rules,
    count_support,
    itemset_columns,
    min_count_for,
)
from mpc.batched_product import OT_K, batched_count_shares, ring_bits_for
from mpc.channel import Channel, agree, broadcast, gather_from, pack_arrays, unpack_arrays
from mpc.errors import ProtocolError
from mpc.lwe_product import LWE_N, delta_bits_for, encrypted_count_shares, round_shares
from mpc.secure_sum import secure_sum, secure_sum_threshold, threshold_leakage
from parties.joint.common import JointResult, LevelGuard, PhaseClock, ProgressFn, confidence_ratio, support_ratio

__all__ = ["mine_vertical", "choose_path", "assign_encryptors", "COUNTING"]

COUNTING = ("auto", "product", "encrypted")
_U64 = np.uint64


def choose_path(n: int, cands: int, m_first: int, m_second: int, counting: str = "auto") -> str:
    """``"encrypted"`` or ``"product"`` for ``cands`` two-owner candidates over ``n`` transactions.

    ``m_first``/``m_second``: distinct parts of the earlier/later owner (public).
    Estimated seconds on a 2-core machine at ~150 MB/s between parties: the
    product path sends n·(16/k_ss·m_second + ⌈k/8⌉·cands) bytes (SoftSpoken
    OT with k_ss = :data:`mpc.batched_product.OT_K`) and hashes n·cands cells;
    the encrypted path sends 8·n·m_enc + 8·LWE_N·m_sel bytes and does
    n·LWE_N·m_enc exact multiply-adds (~4·10^9/s as float64 limb products) plus
    n·LWE_N work per party to expand the public matrix. Only public sizes
    enter, so every party decides alike.
    """
    if counting != "auto":
        return counting
    nbytes = -(-ring_bits_for(n) // 8)
    product = n * (16 / OT_K * m_second + nbytes * cands) / 150e6 + n * cands * 2e-8
    m_enc, m_sel = min(m_first, m_second), max(m_first, m_second)
    encrypted = (8 * n * m_enc + 8 * LWE_N * m_sel) / 150e6 + n * LWE_N * m_enc / 4e9 + 3 * n * LWE_N / 1e9 + 0.15
    return "encrypted" if encrypted < product else "product"


def assign_encryptors(pairs: list[tuple[int, int]], sizes: list[tuple[int, int]], n_parties: int) -> list[bool]:
    """For each encrypted owner pair (p, q) with (m_p, m_q) distinct parts: does q encrypt?

    The encryptor's work is N·n·m_enc (the selector's follows its private set
    sizes, so it cannot enter), and a party in several pairs does all its
    encryptions one after the other: choose the assignment that minimizes the
    largest per-party sum of m_enc, then the total, then prefers the later
    owner (exhaustive up to 12 pairs, else each pair's smaller side). Public
    sizes only, so every party decides alike.
    """
    if len(pairs) > 12:
        return [mq <= mp for mp, mq in sizes]
    best: tuple[tuple[int, int, int], list[bool]] | None = None
    for mask in range(1 << len(pairs)):
        choice = [bool((mask >> i) & 1) for i in range(len(pairs))]
        load = [0] * n_parties
        for (p, q), (mp, mq), by_q in zip(pairs, sizes, choice):
            if by_q:
                load[q] += mq
            else:
                load[p] += mp
        key = (max(load), sum(load), -sum(choice))
        if best is None or key < best[0]:
            best = (key, choice)
    return best[1] if best else []


def _parts(cand: np.ndarray, item_owner: np.ndarray, P: int, rows: np.ndarray):
    """Per party, the distinct parts of the candidates ``rows`` and each candidate's part index (−1: not owner)."""
    part_of = np.full((cand.shape[0], P), -1, dtype=np.int64)
    lists: list[list[list[int]]] = []
    for p in range(P):
        sub = np.where(item_owner[rows] == p, cand[rows], -1)
        has = (sub >= 0).any(axis=1)
        uniq, inv = np.unique(sub[has], axis=0, return_inverse=True)
        part_of[rows[has], p] = inv.reshape(-1)
        lists.append([[int(i) for i in r if i >= 0] for r in uniq.tolist()])
    return part_of, lists


async def mine_vertical(
    ch: Channel,
    db: TransactionDB,
    *,
    min_support,
    min_confidence=None,
    max_len: int | None = None,
    counting: str = "auto",
    progress: ProgressFn | None = None,
    level_guard: LevelGuard | None = None,
    required: np.ndarray | None = None,
    n_counted: int | None = None,
) -> JointResult:
    """Vaidya–Clifton joint mining of vertically partitioned data (see module docstring).

    ``db`` holds this party's items (ids disjoint from every other party's) for
    all N transactions, in the agreed transaction order. Any number of parties.
    ``counting``: ``"auto"`` (default), ``"product"`` or ``"encrypted"`` (two-owner candidates).

    ``required`` (public item ids, one per party, e.g. the presence columns of a keyed
    alignment, :mod:`parties.joint.keyed`) are appended to every candidate when it is counted
    and never mined themselves: supports count the rows where all of them are set, and every
    candidate becomes a product over the owners of the required items. ``n_counted`` is then
    the number of such rows (the support's denominator and the output's N).
    """
    if counting not in COUNTING:
        raise ValueError(f"counting must be one of {', '.join(COUNTING)} (got {counting!r})")
    s = support_ratio(min_support)
    min_confidence = None if min_confidence is None else confidence_ratio(min_confidence)
    res = JointResult(frequent=None, rules=None)  # type: ignore[arg-type]
    clk = PhaseClock(res)
    b0 = ch.bytes_sent
    t = time.perf_counter()
    N = db.n_transactions
    req = np.zeros(0, np.int64) if required is None else np.unique(np.asarray(required, np.int64))
    n_out = N if n_counted is None else int(n_counted)
    await agree(
        ch,
        "v/params",
        min_support=str(s),
        transactions=int(N),
        counted=n_out,
        required=req.tolist(),
        min_confidence=None if min_confidence is None else str(min_confidence),
        max_len=max_len,
        counting=counting,
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
    if req.size and (req.max() >= owner_of.size or (owner_of[req] < 0).any()):
        raise ProtocolError("a required item is held by no party")
    min_count = min_count_for(s, n_out)
    res.rounds += 3
    t = clk.add("setup", t)
    levels: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    paths_used: set[str] = set()
    cand = np.setdiff1d(universe, req).reshape(-1, 1)
    k = 1
    while cand.shape[0] and n_out > 0 and (max_len is None or k <= max_len):
        if level_guard is not None:
            level_guard(k, int(cand.shape[0]))  # raises (ValueError) before a level too large to count
        counted = np.hstack([cand, np.broadcast_to(req, (cand.shape[0], req.size))]) if req.size else cand
        F, glob, info = await _count_level(ch, db, counted, owner_of[counted], N, min_count, counting, k, clk)
        paths_used.update(info["paths"])
        res.rounds += info["rounds"]
        res.levels.append({"k": k, "candidates": int(cand.shape[0]), **info["sizes"], "frequent": int(F.size)})
        if progress:
            progress(
                f"level {k}: {cand.shape[0]} candidates ({info['sizes']['cross_party']} across parties"
                + (f"; {', '.join(sorted(info['paths']))}" if info["paths"] else "")
                + f"), {F.size} frequent"
            )
        t = time.perf_counter()
        if F.size == 0:
            break
        levels[k] = (cand[F], glob)
        cand = apriori_gen(cand[F])
        k += 1
        t = clk.add("candidates", t)
    res.frequent = FrequentItemsets(levels, n_out, min_count)
    if min_confidence is not None:
        res.rules = association_rules(res.frequent, min_confidence)
    clk.add("rules", t)
    res.bytes_sent = ch.bytes_sent - b0
    res.revealed = [
        "all parties: N and which party holds which item ids (the vertical schema): each party's declared universe "
        "(the universe array of a CSR .npz share), or for a FIMI .dat file every item id occurring in it at least "
        "once — so the others learn that those items occur in its data, frequent or not",
        "all parties, per level: which single-owner candidates are frequent and their counts, announced by the "
        "owner (part of the output; the counts of its infrequent ones stay with it)"
        if not req.size
        else "no single-owner candidate: the required (presence) items of every party are part of every "
        f"candidate, so all are counted by secure products over the {len(ch.parties)} parties",
        f"all parties, per level: which multi-owner candidates are frequent ({threshold_leakage(ch.parties)}, "
        "on shared counts)",
        "all parties: the global counts of the frequent itemsets (the output; secure sum)",
        "all parties: which counting path each level used (" + (", ".join(sorted(paths_used)) or "none") + "), "
        "chosen from public sizes only",
        "never: the count of an infrequent candidate, any transaction, or the size of a party's transaction-id sets "
        "(encrypted path: LWE ciphertexts and masked sums; product path: OT-masked values)",
    ]
    return res


async def _count_level(ch, db, cand, item_owner, N, min_count, counting, k, clk):
    """Shares, threshold and reveal for one level; returns (frequent rows, their counts, info)."""
    t = time.perf_counter()
    P = len(ch.parties)
    me = ch.parties.index(ch.me)
    K = cand.shape[0]
    owners = np.zeros((K, P), dtype=bool)
    np.put_along_axis(owners, item_owner, True, axis=1)
    n_own = owners.sum(axis=1)
    kr = ring_bits_for(N)
    d = delta_bits_for(N)
    multi = np.flatnonzero(n_own > 1)
    part_of, part_lists = _parts(cand, item_owner, P, multi)
    # two-owner candidates, per owner pair: encrypted or product
    enc_groups: list[tuple[int, int, np.ndarray]] = []
    enc_sizes: list[tuple[int, int]] = []
    is_enc = np.zeros(K, dtype=bool)
    two = multi[n_own[multi] == 2]
    if two.size:
        pairs_of = np.sort(np.argwhere(owners[two])[:, 1].reshape(-1, 2), axis=1)
        keys, inv = np.unique(pairs_of, axis=0, return_inverse=True)
        for g, (p, q) in enumerate(keys.tolist()):
            rows = two[inv.reshape(-1) == g]
            mp, mq = np.unique(part_of[rows, p]).size, np.unique(part_of[rows, q]).size
            if choose_path(N, rows.size, mp, mq, counting) == "encrypted":
                enc_groups.append((p, q, rows))
                enc_sizes.append((mp, mq))
                is_enc[rows] = True
    q_encrypts = assign_encryptors([(p, q) for p, q, _ in enc_groups], enc_sizes, P)
    dense = multi[~is_enc[multi]]
    paths = ({"encrypted"} if enc_groups else set()) | ({"product"} if dense.size else set())
    # this party's part columns (only parts of multi-owner candidates)
    my_parts = part_lists[me]
    cols = itemset_columns(db, my_parts, missing="ignore") if my_parts else np.zeros((0, db.n_words), _U64)
    # single-owner candidates: the owner decides them alone and announces the frequent ones with
    # their counts — exactly what the output reveals, so no protocol is needed
    local_mine = np.flatnonzero((n_own == 1) & owners[:, me])
    local_counts = count_support(db, cand[local_mine]).astype(np.int64) if local_mine.size else np.zeros(0, np.int64)
    keep = local_counts >= min_count
    t = clk.add("local_counts", t)

    async def announce_local() -> dict[str, tuple[np.ndarray, np.ndarray]]:
        await broadcast(ch, f"L{k}/local", pack_arrays(local_mine[keep], local_counts[keep]))
        got = await gather_from(ch, f"L{k}/local")
        out = {ch.me: (local_mine[keep], local_counts[keep])}
        for p, raw in got.items():
            arrs = unpack_arrays(raw)
            pi = ch.parties.index(p)
            if (
                len(arrs) != 2
                or arrs[0].dtype != np.int64
                or arrs[1].dtype != np.int64
                or arrs[0].shape != arrs[1].shape
            ):
                raise ProtocolError(f"vertical mining level {k}: malformed local result from {p}")
            rows, cnt = arrs
            if rows.size and (
                rows.min() < 0
                or rows.max() >= K
                or (np.diff(rows) <= 0).any()
                or not (owners[rows, pi] & (n_own[rows] == 1)).all()
                or cnt.min() < min_count
                or cnt.max() > N
            ):
                raise ProtocolError(
                    f"vertical mining level {k}: {p} announced candidates it does not own alone, "
                    "or counts outside [min count, N]"
                )
            out[p] = (rows, cnt)
        return out

    shares = np.zeros(K, _U64)  # shares mod 2^kr of every multi-owner candidate's count
    X = np.zeros(K, _U64)

    async def dense_part() -> None:
        if dense.size:
            shares[dense] = await batched_count_shares(
                ch, cols, part_of[dense], n_transactions=N, ring_bits=kr, tag=f"L{k}/product"
            )

    async def enc_part(p: int, q: int, rows: np.ndarray, enc_is_q: bool) -> None:
        if me not in (p, q):
            return
        peer = ch.parties[q if me == p else p]
        up, ip = np.unique(part_of[rows, p], return_inverse=True)
        uq, iq = np.unique(part_of[rows, q], return_inverse=True)
        sel_cols, enc_cols = (up, uq) if enc_is_q else (uq, up)
        pairs = np.stack([ip.reshape(-1), iq.reshape(-1)] if enc_is_q else [iq.reshape(-1), ip.reshape(-1)], axis=1)
        i_enc = (me == q) == enc_is_q
        own_cols = cols[enc_cols if i_enc else sel_cols]
        X[rows] = await encrypted_count_shares(
            ch,
            peer,
            role="encrypt" if i_enc else "select",
            columns=own_cols,
            n_columns_peer=(sel_cols if i_enc else enc_cols).size,
            pairs=pairs,
            n_transactions=N,
            delta_bits=d,
            tag=f"L{k}/enc/{p}-{q}",
        )
        # round inside the shares (Δ·count + noise → count mod 2^(64−d) ⊇ mod 2^kr)
        shares[rows] = await round_shares(
            ch, peer, X[rows], role=0 if me == p else 1, delta_bits=d, tag=f"L{k}/round/{p}-{q}"
        )

    announced, *_ = await asyncio.gather(
        announce_local(), dense_part(), *(enc_part(p, q, r, e) for (p, q, r), e in zip(enc_groups, q_encrypts))
    )
    t = clk.add("secure_product", t)
    shares &= _U64((1 << kr) - 1)
    f_multi = np.zeros(0, bool)
    if multi.size:
        f_multi = await secure_sum_threshold(
            ch, shares[multi].view(np.int64), min_count, tag=f"L{k}/threshold", bound_bits=kr - 1
        )
    t = clk.add("secure_threshold", t)
    F_multi = multi[f_multi]
    counts = np.zeros(K, np.int64)
    if F_multi.size:
        v = await secure_sum(ch, (shares[F_multi] << _U64(64 - kr)).view(np.int64), tag=f"L{k}/counts")
        counts[F_multi] = (v.view(_U64) >> _U64(64 - kr)).astype(np.int64)
    clk.add("secure_counts", t)
    F_loc = [F_multi]
    for rows, cnt in announced.values():
        counts[rows] = cnt
        F_loc.append(rows)
    F = np.sort(np.concatenate(F_loc))
    info = {
        "paths": paths,
        "rounds": 3 + (2 if enc_groups else 0),
        "sizes": {
            "cross_party": int(multi.size),
            "encrypted": int(is_enc.sum()),
            "product": int(dense.size),
        },
    }
    return F, counts[F], info
