"""Joint mining of horizontally partitioned data (each party holds some transactions).

Kantarcioglu & Clifton 2004
---------------------------
M. Kantarcioglu, C. Clifton, "Privacy-preserving distributed mining of
association rules on horizontally partitioned data", IEEE TKDE 16(9), 2004,
on the FDM level-wise scheme (Cheung et al. 1996). Per level k, one batched
round each:

1. candidates C_k = apriori_gen(L_{k−1}) — public, every party computes them;
   for k = 1 the agreed item universe;
2. each party finds its *locally large* candidates (count_i ≥ s·|DB_i|) — a
   globally large itemset is locally large somewhere — and the parties run
   secure set union (:func:`mpc.set_union.secure_set_union`, commutative
   encryption with fake padding) on their positions in C_k;
3. for the union U_k, one secure sum with threshold
   (:func:`mpc.secure_sum.secure_sum_threshold`) on
   x_i = D·count_i − M·|DB_i| with s = M/D exactly, so only the bit
   Σ_i count_i ≥ s·Σ_i |DB_i| comes out;
4. one secure sum (:func:`mpc.secure_sum.secure_sum`) of the counts of the
   frequent candidates only, for the output's counts and the rules'
   confidences.

Revealed to every party: N = Σ|DB_i|; per level the union of the locally
large candidates (what the secure union reveals, see its docstring: its
size and, to the merging party, how many candidates are shared by groups of
parties); which of them are globally frequent; the global counts of the
frequent itemsets (which are the output). With two parties N and those
counts give each party the other's database size and counts (minus its own),
which is why a party's policy requires three parties for this job by default
(:mod:`parties.guards.policy`). Nothing else about a party's local counts or
transactions; the collusion bound of the threshold step is that of
:func:`mpc.secure_sum.secure_sum_threshold` (:func:`_revealed`).
"""

from __future__ import annotations

import time

import numpy as np

from anonymize.itemsets import (
    FrequentItemsets,
    Rule,
    TransactionDB,
    apriori_gen,
    association_rules,
    count_support,
    min_count_for,
)
from mpc.channel import Channel, agree, scoped
from mpc.errors import ProtocolError
from mpc.secure_sum import (
    ratio_bound_bits,
    ratio_threshold_inputs,
    secure_sum,
    secure_sum_threshold,
    threshold_leakage,
)
from mpc.set_union import UNION_LEAKAGE, secure_set_union
from parties.joint.common import (
    JointResult,
    LevelGuard,
    PhaseClock,
    ProgressFn,
    check_all,
    confidence_ratio,
    support_ratio,
)

__all__ = ["mine_horizontal", "AUTO_ALL_MAX"]

AUTO_ALL_MAX = 65536  # candidates="auto": test every candidate up to this many per level, else secure union


def _encode_positions(pos: np.ndarray) -> list[bytes]:
    return [int(p).to_bytes(4, "big") for p in pos]


def _decode_positions(items: list[bytes], limit: int) -> np.ndarray:
    pos = np.array([int.from_bytes(b, "big") for b in items], dtype=np.int64)
    if pos.size and (pos.max() >= limit or len(items[0]) != 4):
        raise ProtocolError("secure union returned a candidate position outside the candidate list")
    return np.sort(pos)


async def _global_n(ch: Channel, n_local: int) -> int:
    tot = await secure_sum(ch, np.array([n_local], dtype=np.int64), tag="n")
    return int(tot[0])


async def mine_horizontal(
    ch: Channel,
    db: TransactionDB,
    *,
    min_support,
    min_confidence=None,
    n_items: int,
    max_len: int | None = None,
    reveal_counts: bool = True,
    candidates: str = "union",
    progress: ProgressFn | None = None,
    level_guard: LevelGuard | None = None,
) -> JointResult:
    """Kantarcioglu–Clifton joint mining of horizontally partitioned data (see module docstring).

    ``db`` is this party's transactions over the agreed universe of item ids
    ``0 .. n_items−1`` (checked: every party must pass the same ``n_items`` and
    hold no id outside it). Returns the global frequent itemsets with counts and,
    with ``min_confidence``, the association rules.

    With ``reveal_counts=False`` the global counts are never computed: the
    itemsets come without counts (``-1``) and each candidate rule X → Y is
    decided, as in KC04, by one more secure sum with threshold on
    ``Dc·count_i(X∪Y) − Mc·count_i(X)`` (confidence c = Mc/Dc), so only the
    yes/no of every rule is revealed (:func:`_rules_by_threshold`).

    ``candidates="union"`` is KC04: only candidates locally large somewhere
    (found by secure union) go to the threshold. ``candidates="all"`` skips the
    union and tests every candidate of the public list C_k: it reveals less (no
    union, no padded sizes) and is faster on dense data, where nearly every
    candidate is locally large somewhere, but costs one secure comparison per
    candidate on sparse data with large C_k. ``candidates="auto"`` decides per
    level from the public |C_k|: all up to :data:`AUTO_ALL_MAX` candidates,
    union above.
    """
    if candidates not in ("union", "all", "auto"):
        raise ValueError(f"candidates must be 'union', 'all' or 'auto' (got {candidates!r})")
    s = support_ratio(min_support)
    min_confidence = None if min_confidence is None else confidence_ratio(min_confidence)
    res = JointResult(frequent=None, rules=None)  # type: ignore[arg-type]
    clk = PhaseClock(res)
    b0 = ch.bytes_sent
    t = time.perf_counter()
    await agree(
        ch,
        "h/params",
        min_support=str(s),
        n_items=int(n_items),
        reveal_counts=bool(reveal_counts),
        candidates=candidates,
        min_confidence=None if min_confidence is None else str(min_confidence),
        max_len=max_len,
    )
    outside = db.items.size and (int(db.items.max()) >= n_items or int(db.items.min()) < 0)
    await check_all(
        ch,
        "h/universe",
        f"has item ids outside the agreed universe 0..{n_items - 1}" if outside else None,
        anonymous=True,
    )
    n_local = db.n_transactions
    N = await _global_n(ch, n_local)
    res.rounds += 3
    t = clk.add("setup", t)
    D, M = s.denominator, s.numerator
    # |Σ_i (D·count_i − M·|DB_i|)| ≤ (D + M)·N: compare in the smallest ring that holds it (public);
    # refused on every party (InputRangeError) if D·count could wrap in int64
    bound = ratio_bound_bits(s, N)
    levels: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    cand = np.arange(n_items, dtype=np.int64).reshape(-1, 1)
    k = 1
    while cand.shape[0] and N > 0 and (max_len is None or k <= max_len):
        if level_guard is not None:
            level_guard(k, int(cand.shape[0]))  # raises (ValueError) before a level too large to count
        counts = count_support(db, cand) if cand.shape[0] else np.zeros(0, np.int64)
        # locally large: count_i ≥ s·|DB_i|, i.e. D·count_i ≥ M·|DB_i|, and present at all
        local = np.flatnonzero((D * counts >= M * n_local) & (counts > 0)) if n_local else np.zeros(0, np.int64)
        t = clk.add("local_counts", t)
        use_union = candidates == "union" or (candidates == "auto" and cand.shape[0] > AUTO_ALL_MAX)
        if use_union:
            union = await secure_set_union(scoped(ch, f"L{k}"), _encode_positions(local), tag="union")
            U = _decode_positions(union, cand.shape[0])
            t = clk.add("secure_union", t)
        else:
            U = np.arange(cand.shape[0], dtype=np.int64)
        x, _ = ratio_threshold_inputs(counts[U], n_local, s, bound=N)  # Σ_i x_i ≥ 0 ⟺ Σ count_i ≥ s·N
        frequent = await secure_sum_threshold(ch, x.astype(np.int64), 0, tag=f"L{k}/threshold", bound_bits=bound)
        t = clk.add("secure_threshold", t)
        F = U[frequent]
        if reveal_counts:
            glob = await secure_sum(ch, counts[F].astype(np.int64), tag=f"L{k}/counts")
            t = clk.add("secure_counts", t)
        else:
            glob = np.full(F.size, -1, dtype=np.int64)
        res.rounds += 3
        res.levels.append({"k": k, "candidates": int(cand.shape[0]), "union": int(U.size), "frequent": int(F.size)})
        if progress:
            progress(f"level {k}: {cand.shape[0]} candidates, {U.size} locally large somewhere, {F.size} frequent")
        if F.size == 0:
            break
        levels[k] = (cand[F], glob.astype(np.int64))
        cand = apriori_gen(cand[F])
        k += 1
        t = clk.add("candidates", t)
    res.frequent = FrequentItemsets(levels, N, min_count_for(s, N))
    if min_confidence is not None and reveal_counts:
        res.rules = association_rules(res.frequent, min_confidence)
    elif min_confidence is not None:
        res.rules = await _rules_by_threshold(ch, db, levels, min_confidence, N)
        res.rounds += 1
    clk.add("rules", t)
    res.bytes_sent = ch.bytes_sent - b0
    res.revealed = _revealed(ch.parties, candidates, reveal_counts, min_confidence is not None)
    return res


def _revealed(parties, candidates: str, reveal_counts: bool, rules: bool) -> list[str]:
    """The "what the parties learned" lines of one run (``protocol.revealed`` in the job report).

    Exact for the run's party list: with two parties, N and every revealed
    global count minus a party's own give it the other party's database size
    and counts. The threshold steps reveal what
    :func:`mpc.secure_sum.threshold_leakage` says for this party list (its
    collusion bound).
    """
    two = len(parties) == 2
    threshold = threshold_leakage(parties)
    lines = [
        "all parties: the total number of transactions N (secure sum)"
        + ("; with two parties, N minus its own size is the other party's database size" if two else ""),
        f"all parties, per level: the set of candidates locally large at some party — {UNION_LEAKAGE}"
        + ("; with these two parties, each learns the other's exact number of locally large candidates" if two else "")
        if candidates == "union"
        else "no secure union: every candidate of the public list goes to the threshold"
        if candidates == "all"
        else f"levels with more than {AUTO_ALL_MAX} candidates: the union of locally large candidates — "
        f"{UNION_LEAKAGE}; smaller levels: nothing beyond the threshold bits",
        f"all parties: which of those are globally frequent ({threshold})",
    ]
    if reveal_counts:
        lines.append(
            "all parties: the global counts of the frequent itemsets (the output; secure sum)"
            + ("; with two parties, a global count minus its own is the other party's count" if two else "")
        )
    else:
        lines.append("all parties: no global counts are computed (private counts)")
        if rules:
            lines.append(f"all parties: which candidate rules reach the confidence ({threshold})")
    lines.append(
        "nothing else about any party's transactions, local counts or database size"
        if not two
        else "nothing else about the other party's transactions"
    )
    return lines


def _candidate_rules(levels: dict[int, tuple[np.ndarray, np.ndarray]]):
    """Every split X → Z∖X (X non-empty, proper) of every frequent Z, grouped for vectorized counting.

    Yields ``(Z, sel)`` per itemset size k and antecedent mask group: ``Z`` the
    ``(n, k)`` frequent itemsets, ``sel`` a ``(m, k)`` bool matrix of antecedent
    positions (all masks with the same number j of antecedent items), so the
    ``n·m`` antecedents are ``Z[:, pos]`` with ``pos`` the j set positions of
    each mask — one array operation per (k, j), no loop over itemsets.
    """
    for k, (Z, _) in sorted(levels.items()):
        if k < 2:
            continue
        masks = np.arange(1, (1 << k) - 1, dtype=np.int64)  # antecedent = positions whose bit is set
        inside = ((masks[:, None] >> np.arange(k)) & 1).astype(bool)  # (m, k)
        sizes = inside.sum(axis=1)
        for j in range(1, k):
            yield Z, inside[sizes == j]


async def _rules_by_threshold(ch: Channel, db: TransactionDB, levels, min_confidence, N: int) -> list:
    """KC04 rule confidence by secure sum with threshold: Σ_i (Dc·count_i(Z) − Mc·count_i(X)) ≥ 0.

    All candidate rules of all sizes go in one batched threshold round. Reveals
    to every party only which candidate rules reach the confidence. Returns
    ``Rule``-like tuples ``(antecedent, consequent, None, None)``.
    """
    c = confidence_ratio(min_confidence)
    bound = ratio_bound_bits(c, N)  # refuses what would wrap in int64
    groups, xs = [], []
    for Z, sel in _candidate_rules(levels):
        n, k = Z.shape
        m, j = sel.shape[0], int(sel[0].sum())
        pos = np.nonzero(sel)[1].reshape(m, j)  # antecedent positions, ascending
        rest = np.nonzero(~sel)[1].reshape(m, k - j)  # consequent positions
        ante = Z[:, pos].reshape(n * m, j)  # row-major: itemset r, mask q → r·m + q
        cz = np.repeat(count_support(db, Z), m)
        xs.append(ratio_threshold_inputs(cz, count_support(db, ante), c, bound=N)[0])
        groups.append((ante, Z[:, rest].reshape(n * m, k - j)))
    if not groups:
        return []
    x = np.concatenate(xs)
    ok = await secure_sum_threshold(ch, x.astype(np.int64), 0, tag="rules/threshold", bound_bits=bound)
    out: list[Rule] = []
    at = 0
    for ante, cons in groups:
        keep = np.flatnonzero(ok[at : at + ante.shape[0]])
        at += ante.shape[0]
        out.extend(Rule(tuple(a), tuple(b), None, None) for a, b in zip(ante[keep].tolist(), cons[keep].tolist()))
    return out
