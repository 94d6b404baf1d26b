"""Differential privacy across parties, on the in-memory network: statistics of the distributed noise,
what one party (or a coalition) sees of it, and ε-DP joint mining.

Oracles: scipy.stats.dlaplace / nbinom (exact CDFs and pmfs; the DKW band sup|F̂ − F| ≤
√(ln(2/δ)/(2n)) — the Kolmogorov–Smirnov statistic against the exact CDF, valid for discrete laws —
and χ² at δ = 1e-6), a brute-force miner, and the combinatorial bound of next_level_bound by
enumeration. Seeds are fixed; tolerances come from the math, at level 1e-6.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from anonymize.dp import RandomSource
from anonymize.itemsets import TransactionDB, count_support
from mpc.channel import run_parties
from mpc.secure_sum import secure_sum
from parties.joint import dp_counts
from parties.joint.dp_counts import clamped_counts
from parties.joint.dp_mining import check_dp_params, mine_horizontal_dp, next_level_bound
from parties.joint.dp_sum import noisy_inputs, noisy_secure_sum

LEVEL = 1e-6


def dkw(n: int) -> float:
    return math.sqrt(math.log(2 / LEVEL) / (2 * n))


def ks_to(sample: np.ndarray, cdf, lo: int, hi: int) -> float:
    """sup over integers in [lo, hi] of |empirical CDF − cdf| (the KS statistic of a discrete law)."""
    grid = np.arange(lo, hi + 1)
    ecdf = np.searchsorted(np.sort(sample), grid, side="right") / sample.size
    return float(np.max(np.abs(ecdf - cdf(grid))))


def nb_diff_pmf(r: float, alpha: float, support: np.ndarray) -> np.ndarray:
    """P(A − B = z), A, B ~ NB(r, α) independent, from scipy's nbinom pmf."""
    p = stats.nbinom(r, 1 - alpha).pmf(np.arange(0, 6000))
    K = len(p)
    return np.array([np.dot(p[z:], p[: K - z]) if z >= 0 else np.dot(p[: K + z], p[-z:]) for z in support])


def chi2_p(sample: np.ndarray, pmf_vals: np.ndarray, support: np.ndarray) -> float:
    n = len(sample)
    obs = np.array([np.sum(sample == v) for v in support] + [np.sum((sample < support[0]) | (sample > support[-1]))])
    exp = np.concatenate([pmf_vals, [max(1 - pmf_vals.sum(), 0.0)]]) * n
    keep = exp >= 5
    return stats.chisquare(obs[keep], exp[keep] * obs[keep].sum() / exp[keep].sum()).pvalue


# --------------------------------------------------------------------------- the noisy secure sum
@pytest.mark.parametrize("n, eps, sens", [(3, "0.5", 1), (4, "1", 3), (2, "1/5", 1)])
def test_revealed_total_error_is_discrete_laplace(n, eps, sens):
    R = 20000  # one secure sum of R entries = R independent noisy totals
    xs = [np.random.default_rng(i).integers(-1000, 1000, R) for i in range(n)]

    async def party(ch, i):
        return await noisy_secure_sum(ch, xs[i], epsilon=Fraction(eps), sensitivity=sens, rng=RandomSource(40 + i))

    out = run_parties(n, party, list(range(n)), timeout=120)
    totals = list(out.values())
    assert all(np.array_equal(t, totals[0]) for t in totals)  # everyone gets the same noisy total
    err = totals[0] - sum(xs)
    dist = stats.dlaplace(float(Fraction(eps)) / sens)
    lo, hi = int(dist.ppf(1e-5)) - 2, int(dist.ppf(1 - 1e-5)) + 2
    assert ks_to(err, dist.cdf, lo, hi) <= dkw(R)
    var, mu4 = dist.var(), dist.moment(4)
    assert abs(err.var() - var) <= 4.9 * math.sqrt((mu4 - var**2) / R)


def _views(n: int, eps: str, R: int, colluders: int = 0, seed: int = 0):
    """Each party's noise shares (its view of the noise) and the revealed totals, via the real secure sum."""
    xs = [np.random.default_rng(seed + i).integers(0, 500, R) for i in range(n)]

    async def party(ch, i):
        y = noisy_inputs(xs[i], n, Fraction(eps), 1, RandomSource(1000 * seed + i), colluders)
        return y - xs[i], await secure_sum(ch, y, tag="v")

    out = run_parties(n, party, list(range(n)), timeout=120)
    shares = np.stack([out[f"p{i}"][0] for i in range(n)])
    noise = out["p0"][1] - sum(xs)
    assert np.array_equal(noise, shares.sum(axis=0))  # the revealed noise is exactly the sum of the shares
    return shares, noise


def test_no_single_party_knows_the_noise():
    n, eps, R = 3, "0.5", 30000
    shares, noise = _views(n, eps, R, seed=1)
    alpha = math.exp(-0.5)
    for i in range(n):
        mine, rest = shares[i], noise - shares[i]
        # (1) independent of what the party sees (χ² contingency on binned values)
        cut = lambda v: np.clip(v, -2, 2) + 2  # noqa: E731
        table = np.zeros((5, 5))
        np.add.at(table, (cut(mine), cut(rest)), 1)
        assert stats.chi2_contingency(table).pvalue > LEVEL
        # (2) what it cannot see is the difference of two NB((n-1)/n, α): (n-1)/n of the noise's variance
        support = np.arange(-10, 11)
        assert chi2_p(rest, nb_diff_pmf((n - 1) / n, alpha, support), support) > LEVEL
    # (3) the correlation of a share with the total noise is 1/√n (each share is 1/n of the variance)
    rho = np.corrcoef(shares[0], noise)[0, 1]
    assert abs(rho - 1 / math.sqrt(n)) <= 5.3 / math.sqrt(R)  # Fisher-z bound at 1e-7


def test_colluders_see_less_noise_unless_the_shares_are_sized_for_them():
    n, eps, R = 4, "0.5", 30000
    alpha = math.exp(-0.5)
    support = np.arange(-12, 13)
    shares, noise = _views(n, eps, R, seed=2)
    rest = noise - shares[0] - shares[1]  # two parties pool their shares
    assert chi2_p(rest, nb_diff_pmf(2 / 4, alpha, support), support) > LEVEL  # only NB(2/4): less than ε-DP
    assert rest.var() < 0.6 * stats.dlaplace(0.5).var()
    shares, noise = _views(n, eps, R, colluders=2, seed=3)
    rest = noise - shares[0] - shares[1]  # sized for 2 colluders: the others' shares are a full DLap(α)
    dist = stats.dlaplace(0.5)
    assert ks_to(rest, dist.cdf, -40, 40) <= dkw(R)
    assert chi2_p(rest, dist.pmf(support), support) > LEVEL
    assert abs(noise.var() - 2 * dist.var()) <= 0.1 * 2 * dist.var()  # the analyst faces n/(n-c) = 2x the variance


# --------------------------------------------------------------------------- truncated counts
def test_truncation_keeps_a_uniform_m_subset_per_transaction():
    db = TransactionDB.from_transactions([list(range(10))])
    cand = np.array(list(combinations(range(10), 2)))  # 45 candidates, all contained
    runs, m = 3000, 9
    kept = np.zeros(45)
    for r in range(runs):
        c, truncated = clamped_counts(db, cand, m, r.to_bytes(16, "little"))  # a fresh PRF key per run
        assert truncated == 1 and c.sum() == m and set(np.unique(c)) <= {0, 1}
        kept += c
    p = m / 45
    assert np.all(np.abs(kept - runs * p) <= 5.5 * math.sqrt(runs * p * (1 - p)))  # each kept w.p. m/c


txs_st = st.lists(st.lists(st.integers(0, 7), min_size=0, max_size=8, unique=True), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None)
@given(txs_st, st.integers(1, 3), st.integers(1, 12), st.booleans())
def test_each_transaction_contributes_min_of_contained_and_m(txs, k, m, tiny_chunks):
    db = TransactionDB.from_transactions(txs, items=list(range(8)))
    cand = np.array(list(combinations(range(8), k)))
    exact = count_support(db, cand)
    if tiny_chunks:
        dp_counts.CHUNK_CELLS, old = 64, dp_counts.CHUNK_CELLS
    try:
        got, _ = clamped_counts(db, cand, m, len(txs).to_bytes(16, "little"))
    finally:
        if tiny_chunks:
            dp_counts.CHUNK_CELLS = old
    contained = [sum(1 for c in cand if set(c) <= set(t)) for t in txs]
    assert np.all(got <= exact) and np.all(got >= 0)
    assert got.sum() == sum(min(c, m) for c in contained)  # so one transaction moves the vector by <= m in L1
    if max(contained, default=0) <= m:
        assert np.array_equal(got, exact)


@settings(max_examples=30, deadline=None)
@given(txs_st, st.integers(1, 2), st.integers(1, 4))
def test_adding_a_transaction_never_shifts_the_others_choices(txs, k, m):
    """The choices are a keyed PRF of each transaction's index (issue 16, item 16): with one more
    transaction at the end, the counts move by exactly its own truncated contribution — a 0/1 vector
    of at most m ones. (With one sequential random stream, every later draw shifted.)"""
    cand = np.array(list(combinations(range(8), k)))
    key = b"k" * 16
    dense = list(range(8))
    before, _ = clamped_counts(TransactionDB.from_transactions(txs, items=dense), cand, m, key)
    after, _ = clamped_counts(TransactionDB.from_transactions([*txs, dense], items=dense), cand, m, key)
    diff = after - before
    assert set(np.unique(diff)) <= {0, 1} and diff.sum() == min(len(cand), m)


# --------------------------------------------------------------------------- ε-DP mining
def brute_force(txs, minsup: Fraction):
    need = max(1, math.ceil(minsup * len(txs)))
    sets = [frozenset(t) for t in txs]
    items = sorted({i for t in txs for i in t})
    out = {}
    for k in range(1, len(items) + 1):
        found = False
        for c in combinations(items, k):
            cnt = sum(1 for t in sets if t.issuperset(c))
            if cnt >= need:
                out[c], found = cnt, True
        if not found:
            break
    return out


def run_dp(parts, **kw):
    async def party(ch, db):
        i = ch.parties.index(ch.me)
        seen: list[Fraction] = []
        res = await mine_horizontal_dp(ch, db, rng=kw.pop("seed", 0) * 10 + i, on_release=seen.append, **kw)
        return res, seen

    return run_parties(len(parts), party, parts, timeout=300)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(txs_st, st.integers(2, 3), st.sampled_from(["0.2", "0.4"]))
def test_noise_free_limit_equals_brute_force(txs, n_parties, minsup):
    """With ε so large that P(noise ≠ 0) < e^-10^8, the DP protocol must give the exact answer."""
    cut = [len(txs) * i // n_parties for i in range(n_parties + 1)]
    parts = [TransactionDB.from_transactions(txs[cut[i] : cut[i + 1]], items=list(range(8))) for i in range(n_parties)]
    out = run_dp(parts, epsilon=10**9, min_support=minsup, n_items=8, max_len=8)
    want = brute_force(txs, Fraction(minsup))
    for res, _ in out.values():
        assert {tuple(i): c for i, c in res.frequent} == want
        assert res.frequent.n_transactions == len(txs)


def test_mined_counts_carry_exactly_the_stated_noise():
    """Level 1 with every candidate far above the threshold: revealed − exact ~ DLap(Δ_1/ε_1) (KS, variance)."""
    rng = np.random.default_rng(7)
    n_items, n_tx = 300, 1200
    txs = [list(np.flatnonzero(rng.random(n_items) < 0.5)) for _ in range(n_tx)]
    parts = [TransactionDB.from_transactions(txs[i::3], items=list(range(n_items))) for i in range(3)]
    exact = count_support(TransactionDB.from_transactions(txs, items=list(range(n_items))), np.arange(n_items)[:, None])
    eps = Fraction(20 * n_items, 19) / 4  # ε_N = ε/20, ε_1 = 19ε/20 = n_items/4: scale Δ_1/ε_1 = 4
    errs = []
    for run in range(12):
        out = run_dp(parts, epsilon=eps, min_support="0.01", n_items=n_items, max_len=1, seed=run + 1)
        res, seen = out["p0"]
        level = res.dp["levels"][0]
        assert level["sensitivity"] == n_items and Fraction(level["epsilon_exact"]) == Fraction(n_items, 4)
        items, counts = res.frequent.levels[1]
        assert items.shape[0] == n_items  # all far above the threshold
        errs.append(counts - exact)
    err = np.concatenate(errs)
    dist = stats.dlaplace(1 / 4)
    assert ks_to(err, dist.cdf, -80, 80) <= dkw(err.size)
    var, mu4 = dist.var(), dist.moment(4)
    assert abs(err.var() - var) <= 4.9 * math.sqrt((mu4 - var**2) / err.size)
    assert abs(res.dp["levels"][0]["expected_abs_error"] - np.mean(np.abs(err))) <= 5 * math.sqrt(var / err.size)


def test_budget_split_and_accounting():
    rng = np.random.default_rng(3)
    txs = [sorted(set(rng.integers(0, 12, 6).tolist())) for _ in range(300)]
    parts = [TransactionDB.from_transactions(txs[i::3], items=list(range(12))) for i in range(3)]
    out = run_dp(parts, epsilon="2", min_support="0.1", n_items=12, max_len=6, max_contributions=5, seed=4)
    for res, seen in out.values():
        dp = res.dp
        assert seen[0] == Fraction(1, 10)  # ε/20 for N, announced before it is released
        assert [float(e) for e in seen[1:]] == dp["split"]["levels"]
        assert sum(seen) == Fraction(dp["epsilon_spent_exact"]) <= 2
        assert math.isclose(dp["epsilon_unspent"], 2 - float(sum(seen)))
        assert all(lv["sensitivity"] == min(5, lv["candidates"]) for lv in dp["levels"])
        # the split re-spreads what is left over the levels still possible (never more than ε in total)
        left, bound = Fraction(19, 10), 6
        for j, lv in enumerate(dp["levels"], start=1):
            assert Fraction(lv["epsilon_exact"]) == left / (bound - j + 1)
            left -= Fraction(lv["epsilon_exact"])
            if j < len(dp["levels"]):
                bound = next_level_bound(j, res.levels[j - 1]["frequent"], bound)
        assert all(c >= dp["threshold"] for _, c in res.frequent)  # decided on the same noisy counts


@pytest.mark.parametrize(
    "k, n_frequent, current", [(1, 5, 9), (2, 10, 9), (3, 4, 9), (2, 1, 9), (7, 169, 9), (3, 1, 3)]
)
def test_next_level_bound_is_the_combinatorial_bound(k, n_frequent, current):
    brute = max(K for K in range(k, current + 1) if K == k or math.comb(K, k) <= n_frequent)
    assert next_level_bound(k, n_frequent, current) == brute


@pytest.mark.parametrize(
    "args, text",
    [
        (("-1", 3, None, "all"), "epsilon must be positive"),
        (("1", None, None, "all"), "epsilon needs max_len"),
        (("1", 3, None, "union"), "secure union of locally large itemsets is not differentially private"),
        (("1", 3, 0, "all"), "max_contributions must be a positive integer"),
    ],
)
def test_bad_dp_parameters_are_one_line(args, text):
    with pytest.raises(ValueError, match=text):
        check_dp_params(*args)


@pytest.mark.parametrize(
    "n, coalition, colluders, eps", [(3, 1, 0, 0.5), (4, 2, 0, 1.0), (5, 1, 0, 0.2), (4, 2, 1, 0.5)]
)
def test_privacy_loss_against_a_coalition_is_worse_than_epsilon_and_within_the_bound(n, coalition, colluders, eps):
    """A coalition that subtracts its shares faces NB(r)-differences: its worst per-unit privacy loss, from
    scipy's exact pmfs, exceeds ε (so the doc must not claim ε-DP against parties) and stays within the bound."""
    from parties.joint.dp_sum import coalition_epsilon

    alpha = math.exp(-eps)
    r = (n - coalition) / (n - colluders)
    support = np.arange(-40, 41)
    pmf = nb_diff_pmf(r, alpha, support)
    loss = float(np.max(np.abs(np.diff(np.log(pmf)))))
    bound = coalition_epsilon(Fraction(eps), 1, n, colluders, coalition)
    assert eps < loss <= bound + 1e-9
    assert coalition_epsilon(Fraction(eps), 1, n, coalition, coalition) == eps  # shares sized for it: exactly ε
    full = nb_diff_pmf(1.0, alpha, support)  # the rest is a full DLap(α): the loss is exactly ε per unit
    assert math.isclose(float(np.max(np.abs(np.diff(np.log(full))))), eps, rel_tol=1e-6)


def test_release_permutations_come_from_the_csprng():
    """Release shuffles (ppdm anonymize, ppdm publish) use RandomSource().permutation: OS randomness."""
    from scipy import stats

    from anonymize.dp.randomness import RandomSource

    src = RandomSource()
    perms = np.array([src.permutation(5) for _ in range(6000)])
    assert all(sorted(p) == list(range(5)) for p in perms[:50])
    counts = np.bincount(perms[:, 0], minlength=5)  # the first position is uniform
    assert stats.chisquare(counts).pvalue > 1e-4
    seeded = RandomSource(7)
    assert np.array_equal(seeded.permutation(100), RandomSource(7).permutation(100))  # tests may seed it
