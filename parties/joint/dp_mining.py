"""ε-differentially private joint mining of horizontally partitioned data.

What is protected, and how
--------------------------
Neighbouring databases differ by **one transaction added or removed**, at any party. The whole
job — N, every level's frequent/infrequent decisions, the counts of the frequent itemsets and the
rules derived from them — is ε-DP against the analyst, and against every coalition of up to
``colluders`` parties. Against a coalition of one party more, which can subtract its own noise
shares, it is only (ε + (1 + Σ_k Δ_k)·ln((n − c)/(n − c − 1)))-DP (:func:`.dp_sum.coalition_epsilon`,
stated in the result): with the default ``colluders=0`` every single party faces less noise than
the analyst, and for large Δ_k the bound says little — ask for ``colluders=1`` to make the job
ε-DP against each party too. The job runs the Kantarcioglu–Clifton level-wise scheme
(:mod:`.horizontal`: M. Kantarcioglu, C. Clifton, IEEE TKDE 16(9), 2004) with three changes:

1. **N is noised.** Ñ = N + DLap(ε_N), ε_N = ε/20, by a noisy secure sum (sensitivity 1); the
   support threshold is t = ⌈s·Ñ⌉, public.
2. **Every level is one noisy count vector.** The candidates C_k are public (C_1 = the agreed item
   universe, C_k = apriori_gen of the previous level's frequent itemsets — a function of earlier
   releases only). Each party counts its transactions with each transaction's contribution
   truncated to at most m candidates (:func:`.dp_counts.clamped_counts`), so the L1 sensitivity
   of the level's count vector is Δ_k = min(m, |C_k|) (Δ_k = |C_k| without ``max_contributions``:
   no truncation, no bias, more noise). Each party adds its noise shares for (ε_k, Δ_k) to its
   counts (:func:`.dp_sum.noisy_inputs`): the sum over parties is the noisy vector c̃ = c + DLap
   per entry, ε_k-DP. It is never opened whole: a secure sum with threshold
   (:func:`mpc.secure_sum.secure_sum_threshold`) reveals only the bits c̃_X ≥ t, then a secure sum
   reveals c̃_X for the frequent X (the *same* noise). Both are functions of c̃, so the level
   costs ε_k however much of it is revealed (post-processing).
3. **No secure union.** The union of locally large itemsets is not DP — whether X is locally large
   at one party can hinge on one transaction, and the union reveals it exactly — so only the
   public candidate list is used (``candidates="all"``); asking for the union is refused.

Budget split (all public): ε_N = ε/20; the rest is spread over the levels still possible. Before
level k, with ε_left unspent and K_max an upper bound on the longest frequent itemset,
ε_k = ε_left / (K_max − k + 1). K_max starts at ``max_len`` (required) and after each level k
drops to the largest K with C(K, k) ≤ |F_k| (a K-itemset has C(K, k) frequent k-subsets) — so a
run whose itemsets turn out shorter than ``max_len`` spends more on the levels it has. Levels never
run spend nothing (reported as ``epsilon_unspent``). The total is Σ ε_k + ε_N ≤ ε by basic
composition, which holds for adaptively chosen ε_k (C. Dwork, A. Roth, "The algorithmic
foundations of differential privacy", FnT-TCS 2014, Thm 3.16 and §3.5; for pure DP the realized
sum is also a valid filter: R. Rogers, A. Roth, J. Ullman, S. Vadhan, "Privacy odometers and
filters: pay-as-you-go composition", NeurIPS 2016).

Effect on the output: counts carry DLap(Δ_k/ε_k) noise and are biased downwards by truncation;
decisions of itemsets whose count is within a few noise scales of t may differ from the exact
run, and an itemset wrongly found infrequent removes its supersets from later levels. The result
states ε, the split, Δ_k and the expected error per level (``dp`` block).

Not covered: the running time of each party's local counting (the protocol's phase timings, and
how long a party takes to answer, depend on its data) — as for every DP implementation, answers
should not be timed at fine resolution.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from anonymize.dp import RandomSource, as_epsilon
from anonymize.itemsets import FrequentItemsets, TransactionDB, apriori_gen, association_rules, min_count_for
from mpc.channel import Channel, agree
from mpc.secure_sum import bound_bits_for, secure_sum, secure_sum_threshold
from parties.joint.common import (
    JointResult,
    LevelGuard,
    PhaseClock,
    ProgressFn,
    check_all,
    confidence_ratio,
    support_ratio,
)
from parties.joint.dp_counts import clamped_counts, level_sensitivity
from parties.joint.dp_sum import check_colluders, coalition_epsilon, noise_stats, noisy_inputs, tail_margin

__all__ = ["mine_horizontal_dp", "N_SHARE", "check_dp_params", "next_level_bound"]

N_SHARE = Fraction(1, 20)  #: share of ε spent on N
ReleaseFn = Callable[[Fraction], None]


def _fmt(x: Fraction) -> str:
    """An exact rational as text that Fraction() reads back: a decimal when it has one (``0.05``), else ``19/180``."""
    d = x.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    if d != 1:
        return f"{x.numerator}/{x.denominator}"
    places = 0
    while (x * 10**places).denominator != 1:
        places += 1
    if not places:
        return str(x.numerator)
    whole, frac = divmod(abs(x.numerator * 10**places // x.denominator), 10**places)
    return f"{'-' if x < 0 else ''}{whole}.{frac:0{places}d}"


def check_dp_params(epsilon, max_len, max_contributions, candidates: str = "all") -> tuple[Fraction, int, int | None]:
    """Validate the DP parameters of a joint horizontal job; ``ValueError`` with one line."""
    try:
        eps = as_epsilon(epsilon)
    except ValueError as e:
        raise ValueError(str(e)) from None
    if candidates != "all":
        raise ValueError(
            f"candidates={candidates!r} cannot run with epsilon: the secure union of locally large itemsets is not "
            "differentially private (use candidates 'all')"
        )
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1:
        raise ValueError(
            "epsilon needs max_len (a positive integer): the budget is split over at most that many levels"
        )
    if max_contributions is not None and (
        isinstance(max_contributions, bool) or not isinstance(max_contributions, int) or max_contributions < 1
    ):
        raise ValueError(f"max_contributions must be a positive integer, got {max_contributions!r}")
    return eps, max_len, max_contributions


def next_level_bound(k: int, n_frequent: int, current: int) -> int:
    """Upper bound on the longest frequent itemset after level ``k`` found ``n_frequent`` itemsets.

    A frequent K-itemset has C(K, k) frequent k-subsets, so K ≤ max{K : C(K, k) ≤ |F_k|}.
    """
    K = k
    while K < current and math.comb(K + 1, k) <= n_frequent:
        K += 1
    return min(current, K)


async def mine_horizontal_dp(
    ch: Channel,
    db: TransactionDB,
    *,
    epsilon,
    min_support,
    n_items: int,
    max_len: int,
    min_confidence=None,
    reveal_counts: bool = True,
    max_contributions: int | None = None,
    colluders: int = 0,
    rng: RandomSource | int | None = None,
    on_release: ReleaseFn | None = None,
    progress: ProgressFn | None = None,
    level_guard: LevelGuard | None = None,
) -> JointResult:
    """ε-DP Kantarcioglu–Clifton mining (module docstring). Returns the result with its ``dp`` block.

    ``on_release(ε_i)`` is called before each noisy release (the daemon's budget keeps the ε
    actually spent, see :mod:`parties.guards.dp_budget`). ``rng``: a :class:`RandomSource`, a seed
    (tests; each party needs its own) or None for the OS CSPRNG. ``reveal_counts=False`` reveals
    only which itemsets are frequent; rules then cannot be derived (``min_confidence`` is refused:
    the rules-by-threshold step of the exact protocol would use exact counts).
    """
    s = support_ratio(min_support)
    eps, max_len, m = check_dp_params(epsilon, max_len, max_contributions)
    c = check_colluders(len(ch.parties), colluders)
    if min_confidence is not None and not reveal_counts:
        raise ValueError("rules need the noisy counts: with epsilon, min_confidence cannot go with private counts")
    conf = None if min_confidence is None else confidence_ratio(min_confidence)
    src = rng if isinstance(rng, RandomSource) else RandomSource(rng)
    trunc_key = src.bytes(16)  # the PRF key of this job's truncation choices (parties.joint.dp_counts)
    n = len(ch.parties)
    released: list[Fraction] = []

    def release(e: Fraction) -> None:
        released.append(e)
        if on_release is not None:
            on_release(e)

    res = JointResult(frequent=None, rules=None)  # type: ignore[arg-type]
    clk = PhaseClock(res)
    b0 = ch.bytes_sent
    t = time.perf_counter()
    await agree(
        ch,
        "hdp/params",
        epsilon=str(eps),
        min_support=str(s),
        n_items=int(n_items),
        max_len=max_len,
        max_contributions=m,
        colluders=c,
        reveal_counts=bool(reveal_counts),
        min_confidence=None if conf is None else str(conf),
    )
    outside = db.items.size and (int(db.items.max()) >= n_items or int(db.items.min()) < 0)
    await check_all(
        ch,
        "hdp/universe",
        f"has item ids outside the agreed universe 0..{n_items - 1}" if outside else None,
        anonymous=True,
    )
    eps_n = eps * N_SHARE
    release(eps_n)
    y = noisy_inputs(np.array([db.n_transactions]), n, eps_n, 1, src, c)
    n_noisy = int((await secure_sum(ch, y, tag="hdp/n"))[0])
    res.rounds += 3
    t = clk.add("setup", t)
    t_min = min_count_for(s, max(n_noisy, 0))
    left = eps - eps_n
    bound = max_len
    levels: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    dp_levels: list[dict] = []
    cand = np.arange(n_items, dtype=np.int64).reshape(-1, 1)
    k = 1
    while cand.shape[0] and n_noisy > 0 and k <= bound:
        if level_guard is not None:
            level_guard(k, int(cand.shape[0]))  # raises (ValueError) before a level too large to count
        eps_k = left / (bound - k + 1)
        delta = level_sensitivity(cand.shape[0], m)
        counts, _truncated = clamped_counts(db, cand, m, trunc_key, level=k)  # how many were truncated stays here
        t = clk.add("local_counts", t)
        release(eps_k)
        y = noisy_inputs(counts, n, eps_k, delta, src, c)
        # |Σ y − t| ≤ N + |noise| + t; N ≤ Ñ + |N's noise|: a bound the noise breaks with probability < 1e-16
        # (and then only that bit is wrong: it is still a function of the noisy count alone)
        span = max(n_noisy, 0) + tail_margin(eps_n, 1, n, c) + tail_margin(eps_k, delta, n, c) + t_min
        frequent = await secure_sum_threshold(ch, y, t_min, tag=f"hdp/L{k}/threshold", bound_bits=bound_bits_for(span))
        t = clk.add("secure_threshold", t)
        F = np.flatnonzero(frequent)
        if reveal_counts:
            glob = await secure_sum(ch, y[F], tag=f"hdp/L{k}/counts")
            t = clk.add("secure_counts", t)
        else:
            glob = np.full(F.size, -1, dtype=np.int64)
        left -= eps_k
        res.rounds += 2 + int(reveal_counts)
        res.levels.append({"k": k, "candidates": int(cand.shape[0]), "frequent": int(F.size)})
        dp_levels.append(
            {"k": k, "candidates": int(cand.shape[0]), "sensitivity": delta, "epsilon": float(eps_k)}
            | {"epsilon_exact": _fmt(eps_k)}
            | noise_stats(eps_k, delta, n, c)
        )
        if progress:
            progress(f"level {k}: {cand.shape[0]} candidates, {F.size} frequent (noisy, epsilon {float(eps_k):.4g})")
        if F.size == 0:
            break
        levels[k] = (cand[F], glob.astype(np.int64))
        bound = next_level_bound(k, int(F.size), bound)
        cand = apriori_gen(cand[F])
        k += 1
        t = clk.add("candidates", t)
    res.frequent = FrequentItemsets(levels, max(n_noisy, 0), t_min)
    if conf is not None:
        res.rules = association_rules(res.frequent, conf)
    clk.add("rules", t)
    res.bytes_sent = ch.bytes_sent - b0
    spent = sum(released, Fraction(0))
    res.dp = {
        "epsilon": float(eps),
        "epsilon_exact": _fmt(eps),
        "epsilon_spent": float(spent),
        "epsilon_spent_exact": _fmt(spent),
        "epsilon_unspent": float(eps - spent),
        "neighbouring": "one transaction added or removed",
        "mechanism": "discrete Laplace noise from one noise share per party inside each secure sum "
        "(Goryczka-Xiong); decisions and counts are taken on the noisy counts",
        "colluders": c,
        "against_parties": _against_parties(
            eps_n, [(Fraction(lv["epsilon_exact"]), lv["sensitivity"]) for lv in dp_levels], n, c
        ),
        "max_contributions": m,
        "split": {
            "rule": "epsilon/20 for N; the rest evenly over the levels still possible, re-split after each level "
            "(bound: max_len, then the largest K with C(K, k) <= frequent k-itemsets)",
            "n_transactions": float(eps_n),
            "levels": [lv["epsilon"] for lv in dp_levels],
        },
        "n_transactions": {"epsilon": float(eps_n), "sensitivity": 1} | noise_stats(eps_n, 1, n, c),
        "threshold": t_min,
        "levels": dp_levels,
        "note": "counts are noisy (and biased down when max_contributions truncates transactions); "
        "itemsets within a few noise standard deviations of the threshold may be decided differently "
        "from the exact run, and a missed itemset removes its supersets",
    }
    res.revealed = _revealed_dp(n, c, reveal_counts, conf is not None)
    return res


def _against_parties(eps_n: Fraction, levels: list[tuple[Fraction, int]], n: int, c: int) -> dict:
    """What the run's privacy is against coalitions of parties that pool their noise shares."""
    spent = eps_n + sum((e for e, _ in levels), Fraction(0))
    worse = coalition_epsilon(eps_n, 1, n, c, c + 1) + sum(coalition_epsilon(e, d, n, c, c + 1) for e, d in levels)
    return {
        "epsilon_dp_against_coalitions_up_to": c,
        "epsilon": float(spent),
        "one_more_party_epsilon_at_most": None if math.isinf(worse) else worse,
    }


def _revealed_dp(n: int, c: int, reveal_counts: bool, rules: bool) -> list[str]:
    """The "what the parties learned" lines of a DP run."""
    who = (
        "the analyst; NOT against a party, which can subtract its own noise shares and faces only "
        f"NB({n - 1}/{n}) noise differences (dp.against_parties bounds its epsilon; use colluders=1)"
        if c == 0
        else f"the analyst and every coalition of up to {c} parties"
    )
    lines = [
        f"everything below is epsilon-differentially private against {who}",
        "all parties: the noisy number of transactions (noisy secure sum)",
        "all parties, per level: which public candidates have a noisy count at least the threshold "
        "(secure sum with threshold on the noisy counts; no secure union)",
    ]
    if reveal_counts:
        lines.append("all parties: the noisy counts of the frequent itemsets (the output; secure sum)")
    else:
        lines.append("all parties: no counts")
    if rules:
        lines.append("all parties: the rules, derived from the noisy counts (post-processing)")
    lines.append("nothing else about any party's transactions, its local counts, its noise shares or its database size")
    return lines
