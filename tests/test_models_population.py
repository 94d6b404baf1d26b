"""Population-based privacy models and population-uniqueness estimators (ARX's risk models).

* the estimators of :mod:`anonymize.publish.metrics.population` against the numbers ARX's own tests
  expect (``TestRiskMetrics.testDecisionRule2`` on ARX's ``data/adult.csv``, whose class-size frequencies
  are written out below), against cases worked by hand, and by Monte-Carlo against populations drawn from
  each estimator's own model (slide negative binomial; Pitman–Yor);
* δ-presence and k-map on a worked example of the kind in Nergiz, Atzori, Clifton (SIGMOD 2007), every
  number computed by hand; then end to end through ``ppdm anonymize`` on ``adult_subset.csv`` as the
  population and a random 30 % of it as the research table, re-measured with pandas;
* the table-level risk models end to end (pycanon, pandas) and, on random small tables, the full-domain
  searches against an exhaustive scan and against a brute force in pandas;
* ``ppdm check``'s population keys and the one-line errors.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycanon import anonymity as pycanon
from scipy import optimize, stats

from anonymize.errors import AnonymizeError
from anonymize.publish.anonymizer import anonymize_table, build_models
from anonymize.publish.classes import ClassStats
from anonymize.publish.fulldomain import Lattice, exhaustive, lattice_nodes
from anonymize.publish.fulldomain.datafly import datafly
from anonymize.publish.fulldomain.flash import flash
from anonymize.publish.fulldomain.incognito import incognito
from anonymize.publish.fulldomain.samarati import samarati
from anonymize.publish.hierarchy import Hierarchy
from anonymize.publish.metrics import population as P
from anonymize.publish.models import KAnonymity
from anonymize.publish.models_population import (
    AverageRisk,
    DeltaPresence,
    KMap,
    PopulationUniqueness,
    SampleUniqueness,
)
from anonymize.publish.table import EncodedTable, Schema
from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
ADULT = DATA / "adult_subset.csv"
QIS = ["age", "sex", "race", "marital-status", "education"]
HYP = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

# Class-size frequencies of ARX's data/adult.csv (30,162 rows, all nine columns quasi-identifiers, as in
# ARX's TestRiskMetrics): size -> number of classes of that size. 15,512 / 30,162 = 0.5142895033485844
# is the sample uniqueness ARX's test expects.
ARX_ADULT = {
    1: 15512, 2: 2098, 3: 754, 4: 375, 5: 189, 6: 155, 7: 97, 8: 73, 9: 39, 10: 37, 11: 29, 12: 18,
    13: 23, 14: 14, 15: 15, 16: 9, 17: 11, 18: 10, 19: 10, 20: 5, 21: 3, 22: 4, 23: 3, 24: 2, 25: 1,
    26: 3, 27: 5, 29: 1, 30: 2, 32: 1, 34: 1, 35: 1, 36: 1, 45: 1,
}  # fmt: skip


def _adult_sizes() -> np.ndarray:
    return np.repeat(np.array(list(ARX_ADULT)), np.array(list(ARX_ADULT.values())))


def _arx_population(n: int, fraction: float) -> int:
    """ARX's ``ARXPopulationModel.create(sampleSize, samplingFraction)``: round(n / fraction)."""
    return int(round(n / fraction))


# ---------------------------------------------------------------------------------------- ARX's numbers
def test_estimators_reproduce_arx_expected_numbers():
    sizes = _adult_sizes()
    n = int(sizes.sum())
    assert n == 30162
    sample_uniqueness = ARX_ADULT[1] / n
    assert sample_uniqueness == 0.5142895033485844
    # π = 0.1: ARX's Dankar rule picks Pitman (expected 0.27684993883653597), Zayatz 0.3207402393466189
    N = _arx_population(n, 0.1)
    e = P.population_uniqueness(sizes, N)
    assert e.dankar_model == "pitman"
    assert e.pitman / N == pytest.approx(0.27684993883653597, abs=1e-6)
    assert e.zayatz / N == pytest.approx(0.3207402393466189, abs=1e-9)
    assert e.dankar / N <= sample_uniqueness
    # π = 0.01: Pitman, 0.1446083531167384
    N = _arx_population(n, 0.01)
    e = P.population_uniqueness(sizes, N)
    assert e.dankar_model == "pitman" and e.dankar / N == pytest.approx(0.1446083531167384, abs=1e-6)
    # π = 0.2: ARX expects 0.3577099234829125 — its Zayatz estimate, because ARX's SNB does not converge
    # (module docstring of metrics.population). Zayatz agrees; the SNB here does converge, is smaller, and
    # Dankar's rule (the smaller of the two) takes it.
    N = _arx_population(n, 0.2)
    e = P.population_uniqueness(sizes, N)
    assert e.zayatz / N == pytest.approx(0.3577099234829125, abs=1e-9)
    assert e.snb is not None and e.snb < e.zayatz
    assert e.dankar_model == "snb" and e.dankar == e.snb
    assert e.dankar / N <= sample_uniqueness
    # π = 1: the sample is the population: exactly the sample uniques, every estimator
    e = P.population_uniqueness(sizes, n)
    for v in (e.pitman, e.zayatz, e.snb, e.dankar):
        assert v / n == 0.5142895033485844


def test_estimate_uniques_one_estimator_matches_the_full_report():
    sizes = _adult_sizes()
    N = _arx_population(int(sizes.sum()), 0.1)
    e = P.population_uniqueness(sizes, N)
    for name in P.ESTIMATORS:
        v, model = P.estimate_uniques(sizes, N, name)
        assert model == name and v == pytest.approx(getattr(e, name), rel=1e-9)
    v, model = P.estimate_uniques(sizes, N, "dankar")
    assert model == "pitman" and v == pytest.approx(e.pitman, rel=1e-9)


# ---------------------------------------------------------------------------------------- by hand
@pytest.mark.parametrize("sizes", [[1, 1, 2, 3], [1], [1, 5, 5, 1, 1], [2, 7, 1]])
def test_census_every_estimator_returns_the_sample_uniques(sizes):
    n = sum(sizes)
    f1 = sizes.count(1)
    e = P.population_uniqueness(sizes, n)
    assert (e.pitman, e.zayatz, e.snb, e.dankar) == (f1, f1, f1, f1)
    for name in P.UNIQUENESS_ESTIMATORS:
        assert P.estimate_uniques(sizes, n, name)[0] == f1


def test_no_sample_unique_means_no_population_unique_and_bad_sizes_are_refused():
    e = P.population_uniqueness([2, 3, 5], 1000)
    assert (e.pitman, e.zayatz, e.snb, e.dankar, e.dankar_model) == (0, 0, 0, 0, "none")
    with pytest.raises(AnonymizeError, match="smaller than the sample"):
        P.population_uniqueness([1, 2, 3], 5)
    with pytest.raises(AnonymizeError, match="unknown uniqueness estimator"):
        P.estimate_uniques([1, 2], 10, "chao")


def test_zayatz_by_hand():
    # sizes {1, 2}: n = 3 drawn from N = 6. P(a class of size 1 shows once) = 3/6; of size 2:
    # C(2,1)·C(4,2)/C(6,3) = 12/20. P(unique | sample unique) = 0.5 / (0.5 + 0.6); population uniques
    # = f_1 · that / π = (5/11) / 0.5 = 10/11.
    assert P.zayatz_uniques([1, 2], [1, 1], 6) == pytest.approx(10 / 11, rel=1e-12)


def test_shlosser_by_hand():
    # f_1 = 2, f_2 = 1, π = 1/2: u = 3; Σ j π²(1−π²)^{j−1} f_j = 0.5 + 0.375; Σ (1−π)^j((1+π)^j − 1) f_j
    # = 0.5 + 0.3125; Σ (1−π)^j f_j = 1.25; Σ j π (1−π)^{j−1} f_j = 1.5
    want = 3 + 2 * (0.875 / 0.8125) * (1.25 / 1.5) ** 2
    assert P.shlosser_classes([1, 2], [2, 1], 0.5) == pytest.approx(want, rel=1e-12)
    assert P.shlosser_classes([1, 2], [2, 1], 1.0) == 3


def test_snb_expectations_are_the_models():
    # E f_1 and E f_2 of K cells of size 1 + NegBin(α, β), Bernoulli-sampled at π, summed over the
    # cell size with scipy's pmfs: the closed forms the solver uses are zero at the true parameters
    for a, b, q, K in [(0.5, 0.1, 0.2, 1000.0), (2.0, 0.6, 0.05, 50.0), (0.1, 0.02, 0.5, 1e5)]:
        F = np.arange(1, 20000)
        pF = stats.nbinom.pmf(F - 1, a, b)
        Ef1 = K * float(np.dot(pF, stats.binom.pmf(1, F, q)))
        Ef2 = K * float(np.dot(pF, stats.binom.pmf(2, F, q)))
        x = [math.log(a), math.log(b / (1 - b))]
        assert np.allclose(P._snb_residuals(x, K, q, Ef1, Ef2), 0.0, atol=1e-9)
        # and the solver finds (α, β) back from these expectations (K given)
        r = optimize.root(P._snb_residuals, [0.0, 0.0], args=(K, q, Ef1, Ef2), method="hybr")
        assert r.success and math.exp(r.x[0]) == pytest.approx(a, rel=1e-6)


def test_pitman_likelihood_closed_form_and_gradient():
    j = np.array([1.0, 2.0, 3.0, 7.0])
    f = np.array([5.0, 2.0, 1.0, 1.0])
    n, u = float(j @ f), float(f.sum())
    a, t = 0.4, 3.0
    x = np.array([a, math.log(t + a)])
    nll, grad = P._pitman_nll(x, j, f, n, u)
    explicit = (
        sum(math.log(t + i * a) for i in range(1, int(u)))
        - sum(math.log(t + i) for i in range(1, int(n)))
        + sum(fj * sum(math.log(k - a) for k in range(1, int(jj))) for jj, fj in zip(j, f))
    )
    assert -nll == pytest.approx(explicit, rel=1e-12)
    h = 1e-6
    for i in range(2):
        d = np.zeros(2)
        d[i] = h
        num = (P._pitman_nll(x + d, j, f, n, u)[0] - P._pitman_nll(x - d, j, f, n, u)[0]) / (2 * h)
        assert grad[i] == pytest.approx(num, rel=1e-6, abs=1e-8)


def test_kmap_derived_k_by_hand():
    # k = 5 at π = 0.1: X ~ Poisson(0.5); P(X ≥ 3) = 0.0144 > 0.01 ≥ P(X ≥ 4) = 0.00175 → k' = 4
    lam = 0.5
    cdf = [sum(math.exp(-lam) * lam**i / math.factorial(i) for i in range(m + 1)) for m in range(6)]
    assert 1 - cdf[2] > 0.01 >= 1 - cdf[3]
    kp, err = P.kmap_derived_k(5, 0.1, 0.01, "poisson")
    assert kp == 4 and err == pytest.approx(1 - cdf[3], rel=1e-9)
    # zero-truncated: P(X ≥ m | X ≥ 1) — the same k' here (and ARX's loop gives 4 too)
    kp, err = P.kmap_derived_k(5, 0.1, 0.01, "ztp")
    assert kp == 4 and err == pytest.approx((1 - cdf[3]) / (1 - cdf[0]), rel=1e-9)
    # a class of k rows in the sample certainly has ≥ k in the population: the cap
    assert P.kmap_derived_k(3, 0.9, 1e-9, "poisson") == (3, 0.0)


# ---------------------------------------------------------------------------------------- Monte-Carlo
def _snb_population(rng, K, a, b):
    return 1 + rng.negative_binomial(a, b, size=K)


def _pitman_yor_population(seed, N, alpha, theta):
    """Class sizes of N individuals seated by the Pitman–Yor Chinese restaurant process: a new class
    with probability (θ + Kα)/(θ + i), else class k with probability (n_k − α)/(θ + i) (drawn as the
    class of a random earlier individual, kept with probability (n_k − α)/n_k)."""
    r = random.Random(seed)
    sizes: list[int] = []
    owner = [0] * N
    for i in range(N):
        if r.random() * (theta + i) < theta + len(sizes) * alpha:
            owner[i] = len(sizes)
            sizes.append(1)
            continue
        while True:
            k = owner[r.randrange(i)]
            if r.random() * sizes[k] < sizes[k] - alpha:
                break
        owner[i] = k
        sizes[k] += 1
    return np.array(sizes)


def test_monte_carlo_snb_and_zayatz_on_snb_populations():
    """20,000 cells of size 1 + NegBin(0.5, 0.1) (about 110,000 individuals, 6,300 unique), Bernoulli
    samples: averaged over 8 draws, SNB — the population's own model — is within 6 % of the true number
    of population uniques at π = 0.3 and 2 % at π = 0.5; Zayatz within 3 % at π = 0.5 (it needs large
    fractions: the sample's class sizes stand in for the population's); Dankar's rule, which takes the
    smaller of the two above π = 0.1, within 6 %."""
    rng = np.random.default_rng(11)
    for q, tol_snb, tol_z in ((0.3, 0.06, None), (0.5, 0.02, 0.03)):
        rel = []
        for _ in range(8):
            F = _snb_population(rng, 20000, 0.5, 0.1)
            s = rng.binomial(F, q)
            e = P.population_uniqueness(s[s > 0], int(F.sum()))
            true = int((F == 1).sum())
            rel.append([e.snb / true, e.zayatz / true, e.dankar / true])
        mean = np.mean(rel, axis=0)
        assert abs(mean[0] - 1) < tol_snb, mean
        assert abs(mean[2] - 1) < 0.06, mean
        if tol_z is not None:
            assert abs(mean[1] - 1) < tol_z, mean


def test_monte_carlo_pitman_on_pitman_yor_populations():
    """Populations of 20,000 seated by the Pitman–Yor process (α = 0.6, θ = 50: about 1,850 uniques),
    simple random samples: averaged over 30 draws (one draw's estimate scatters by about 12 % at π = 0.05)
    Pitman's estimate is within 6 % of the true number at π = 0.05 and 0.1, and Dankar's rule (which uses Pitman at π ≤ 0.1) with it; SNB and Zayatz, whose
    models have finitely many classes, are far off at π = 0.05 (more than 20 %)."""
    rng = np.random.default_rng(5)
    for q in (0.05, 0.1):
        rel = []
        for seed in range(30):
            F = _pitman_yor_population(1000 * seed + int(q * 100), 20000, 0.6, 50.0)
            members = np.repeat(np.arange(len(F)), F)
            s = np.bincount(rng.choice(members, size=int(round(q * F.sum())), replace=False))
            e = P.population_uniqueness(s[s > 0], int(F.sum()))
            true = int((F == 1).sum())
            rel.append([e.pitman / true, e.dankar / true, e.zayatz / true, e.snb / true])
        mean = np.mean(rel, axis=0)
        assert abs(mean[0] - 1) < 0.06 and mean[1] == mean[0], mean
        if q == 0.05:
            assert abs(mean[2] - 1) > 0.2 and abs(mean[3] - 1) > 0.2, mean


# ---------------------------------------------------------------------------------------- the models
def _stats(sizes, pop=None) -> ClassStats:
    return ClassStats(np.asarray(sizes, dtype=np.int64), [], [], None, None if pop is None else np.asarray(pop))


def test_table_level_models_by_hand():
    s = _stats([1, 1, 2, 4, 0])  # 8 rows in 4 released classes; the empty class is not released
    assert AverageRisk(0.5).table_ok(s) and not AverageRisk(0.49).table_ok(s)  # 4 / 8
    assert SampleUniqueness(0.25).table_ok(s) and not SampleUniqueness(0.24).table_ok(s)  # 2 / 8
    assert AverageRisk(0.5).class_ok(s).all() and SampleUniqueness(0.0).class_ok(s).all()
    assert AverageRisk(0.0).table_ok(_stats([0, 0]))  # nothing released
    for bad in (-0.1, 1.5):
        with pytest.raises(AnonymizeError, match="fraction"):
            AverageRisk(bad)
    with pytest.raises(AnonymizeError, match="population size"):
        PopulationUniqueness(0.1, "zayatz", 0)
    with pytest.raises(AnonymizeError, match="smaller than the table"):
        PopulationUniqueness(0.1, "zayatz", 10).bind(11)


def test_population_uniqueness_is_not_monotone_under_generalization():
    """Why PopulationUniqueness declares ``monotone_generalization = False`` even with Zayatz (which ARX
    declares monotone): merging two classes of 10 rows into one of 20 keeps the unique and removes weight
    from the denominator Σ_j f_j P_j, so the estimate rises, from 1/(0.5 + 2·P_10) to 1/(0.5 + P_20)."""
    N = 42  # n = 21, π = 0.5
    fine = P.zayatz_uniques([1, 10], [1, 2], N)
    coarse = P.zayatz_uniques([1, 20], [1, 1], N)
    assert coarse > fine
    m = PopulationUniqueness((fine + coarse) / 2 / N, "zayatz", N)
    assert m.table_ok(_stats([1, 10, 10])) and not m.table_ok(_stats([1, 20]))
    assert m.monotone_generalization is False and m.monotone_suppression is False
    assert AverageRisk(0.1).monotone_generalization and SampleUniqueness(0.1).monotone_generalization


# ---------------------------------------------------------------------------------------- worked example
# A population of 20 (age, sex) and a research subset of 8 of them, in the manner of Nergiz et al.'s
# example: ages in decades at level 1, '*' at level 2; sex, '*'.
_POP_ROWS = [
    (21, "M"), (23, "M"), (25, "F"), (27, "F"), (29, "F"),
    (31, "M"), (33, "F"), (35, "M"), (37, "F"),
    (41, "M"), (42, "M"), (43, "M"), (44, "F"), (45, "F"), (46, "F"),
    (51, "M"), (52, "F"), (53, "M"), (54, "F"), (55, "M"),
]  # fmt: skip
_SUBSET = [(21, "M"), (25, "F"), (31, "M"), (35, "M"), (41, "M"), (44, "F"), (51, "M"), (53, "M")]


def _worked():
    pop = pd.DataFrame(_POP_ROWS, columns=["age", "sex"])
    sub = pd.DataFrame(_SUBSET, columns=["age", "sex"])
    h_age = Hierarchy.from_rows(
        "age", [[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*"] for a, _ in _POP_ROWS], numeric=True
    )
    h_sex = Hierarchy.from_rows("sex", [["M", "*"], ["F", "*"]], numeric=False)
    return pop, sub, {"age": h_age, "sex": h_sex}


def _node_stats(lat, levels):
    fs = lat.frequency_set(lat.internal(levels))
    st_ = lat.class_stats(fs)
    return sorted(zip(st_.sizes.tolist(), st_.population_sizes.tolist()))


def test_worked_example_population_counts_delta_and_kmap_by_hand():
    pop, sub, hs = _worked()
    table = EncodedTable.encode(sub, Schema(["age", "sex"], []), hs)
    lat = Lattice(table, [DeltaPresence(0.3, 0.5, population=pop)])
    # (decade, sex): 20s-M 1 of 2, 20s-F 1 of 3, 30s-M 2 of 2, 40s-M 1 of 3, 40s-F 1 of 3, 50s-M 2 of 3;
    # 30s-F and 50s-F hold population rows only and are not released
    assert _node_stats(lat, (1, 0)) == sorted([(1, 2), (1, 3), (2, 2), (1, 3), (1, 3), (2, 3)])
    # (decade, *): 2 of 5, 2 of 4, 2 of 6, 2 of 5 → δ = 0.4, 0.5, 1/3, 0.4
    assert _node_stats(lat, (1, 1)) == sorted([(2, 5), (2, 4), (2, 6), (2, 5)])
    # (*, sex): M 6 of 10, F 2 of 10; (*, *): 8 of 20; exact ages: 1 of 1 each
    assert _node_stats(lat, (2, 0)) == [(2, 10), (6, 10)]
    assert _node_stats(lat, (2, 1)) == [(8, 20)]
    assert _node_stats(lat, (0, 0)) == [(1, 1)] * 8
    # δ ∈ [0.3, 0.5] holds at (1, 1) (δ from 1/3 to 0.5) and (2, 1) (0.4) only: (1, 0) has 30s-M at δ = 1,
    # (2, 0) has M at 0.6 — flash and the exhaustive scan find the one minimal node (1, 1)
    ex = exhaustive(lat)
    assert sorted(ex.stats["satisfying"]) == [(1, 1), (2, 1)]
    assert [x.levels for x in flash(Lattice(table, [DeltaPresence(0.3, 0.5, population=pop)])).nodes] == [(1, 1)]
    # k-map, k = 3: (1, 0) fails (20s-M has 2 population rows), (1, 1) passes (4 and more), (2, 0) too
    km = exhaustive(Lattice(table, [KMap(3, population=pop)]))
    assert sorted(x.levels for x in km.nodes) == [(1, 1), (2, 0)]
    # δ ≥ 0.45: exact ages give every released class 1 of 1, but the 12 population rows whose ages are
    # not in the subset fall in no released class — the release shows they are absent, P(t ∈ T | T*) = 0
    # (Nergiz et al. bound it for every population tuple; ARX fails such nodes too), so no node passes
    fs = lat.frequency_set(lat.internal((0, 0)))
    assert lat.privacy.population.absent(fs) == 12
    with pytest.raises(AnonymizeError, match="no full-domain generalization satisfies"):
        anonymize_table(
            sub, Schema(["age", "sex"], []), hs, algorithm="flash", models=[DeltaPresence(0.45, 1.0, population=pop)]
        )
    # without a lower bound the absent rows are allowed: δ ≤ 1 holds at exact ages
    res = anonymize_table(
        sub, Schema(["age", "sex"], []), hs, algorithm="flash", models=[DeltaPresence(0.0, 1.0, population=pop)]
    )
    assert res.levels == {"age": 0, "sex": 0}
    # while 2-anonymity of the subset alone also accepts (1, 1) and (2, 0)
    assert sorted(x.levels for x in exhaustive(Lattice(table, [KAnonymity(2)])).nodes) == [(1, 1), (2, 0)]


def test_worked_example_release_and_errors():
    pop, sub, hs = _worked()
    res = anonymize_table(
        sub, Schema(["age", "sex"], []), hs, algorithm="samarati", models=[DeltaPresence(0.3, 0.5, population=pop)]
    )
    assert res.levels == {"age": 1, "sex": 1}
    assert sorted(res.df["age"].unique()) == ["20-29", "30-39", "40-49", "50-59"] and set(res.df["sex"]) == {"*"}
    schema = Schema(["age", "sex"], [])
    with pytest.raises(AnonymizeError, match="lacks quasi-identifier column"):
        anonymize_table(sub, schema, hs, models=[KMap(2, population=pop[["age"]])])
    with pytest.raises(AnonymizeError, match="fewer rows"):
        anonymize_table(sub, schema, hs, models=[KMap(2, population=pop.head(5))])
    with pytest.raises(AnonymizeError, match="does not contain the table"):
        anonymize_table(sub, schema, hs, models=[KMap(2, population=pop.iloc[1:])])  # 21-M dropped
    with pytest.raises(AnonymizeError, match="population table: column 'age'"):
        bad = pop.copy()
        bad.loc[0, "age"] = 99
        anonymize_table(sub, schema, hs, models=[KMap(2, population=bad)])
    with pytest.raises(AnonymizeError, match="cannot honour delta-presence"):
        anonymize_table(sub, schema, hs, algorithm="mondrian", models=[DeltaPresence(0.3, 0.5, population=pop)])
    with pytest.raises(AnonymizeError, match="cannot honour average-risk"):
        anonymize_table(sub, schema, hs, algorithm="mondrian", models=[AverageRisk(0.3)])
    with pytest.raises(AnonymizeError, match="impossible"):
        anonymize_table(sub, schema, hs, models=[KMap(21, population=pop)])
    with pytest.raises(AnonymizeError, match="δmin must not exceed"):
        DeltaPresence(0.6, 0.5)
    with pytest.raises(AnonymizeError, match="population table or the population size"):
        KMap(3)


def test_estimated_kmap_is_derived_k_anonymity():
    pop, sub, hs = _worked()
    # N = 20, n = 8: π = 0.4, k = 3: λ = 1.2, P(X ≥ 3) = 0.12 > 0.05 ≥ P(X ≥ 4) = 0.034 → k' = 3 = k
    m = KMap(3, population_size=20, significance=0.05).bind(8)
    assert (m.derived_k, m.minimal_class_size, m.size_only) == (3, 3, True)
    m = KMap(5, population_size=200, significance=0.05).bind(8)  # π = 0.04, λ = 0.2: P(X ≥ 2) = 0.0175
    assert m.derived_k == 2
    res = anonymize_table(sub, Schema(["age", "sex"], []), hs, algorithm="flash", models=[m])
    assert res.df.groupby(["age", "sex"]).size().min() >= 2
    assert res.report["parameters"]["models"][0]["derived_k"] == 2
    with pytest.raises(AnonymizeError, match="smaller than the table"):
        KMap(5, population_size=7).bind(8)


# ---------------------------------------------------------------------------------------- end to end
def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse's own errors (one line too: parties.cli.OneLineParser)
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def research(tmp_path_factory):
    """adult_subset.csv is the population; a seeded random 30 % of it is the research table."""
    d = tmp_path_factory.mktemp("research")
    pop = pd.read_csv(ADULT, sep=";")
    sub = pop.sample(frac=0.3, random_state=7)
    path = d / "research.csv"
    sub.to_csv(path, sep=";", index=False)
    return path, pop, sub


def _hier_maps():
    """Each QI's hierarchy file read with pandas: leaf value (as text) -> label per level."""
    out = {}
    for c in QIS:
        h = pd.read_csv(DATA / f"adult_hierarchy_{c}.csv", sep=";", header=None, dtype=str)
        out[c] = {lv: dict(zip(h[0], h[lv])) for lv in range(h.shape[1])}
    return out


def _generalize(df, levels, maps):
    return pd.DataFrame({c: df[c].astype(str).map(maps[c][levels[c]]) for c in QIS})


def _anonymize(capsys, tmp_path, research_path, *extra):
    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    code, stdout, err = run(
        capsys, "anonymize", research_path, "-o", out, "--qi", ",".join(QIS), "--hierarchies", DATA,
        "--algorithm", "flash", "--report", rep, "--keep-order", *extra,
    )  # fmt: skip
    assert code == 0, err
    return pd.read_csv(out, sep=";", dtype=str), json.loads(rep.read_text())


@pytest.mark.parametrize(
    "extra",
    [
        ("--delta-presence", "0.1,0.5"),
        ("--delta-presence", "0.2,0.45", "--max-suppression", "0.05", "--suppressed-rows", "drop"),
    ],
)
def test_delta_presence_end_to_end(capsys, tmp_path, research, extra):
    path, pop, sub = research
    rel, rep = _anonymize(capsys, tmp_path, path, "--population", ADULT, *extra)
    dmin, dmax = map(float, extra[1].split(","))
    maps = _hier_maps()
    gpop = _generalize(pop, rep["levels"], maps)
    pcount = gpop.groupby(QIS).size().rename("pop")
    counts = rel.groupby(QIS).size().rename("n").to_frame().join(pcount, how="left")
    assert counts["pop"].notna().all()  # every released class is a class of the population
    delta = counts["n"] / counts["pop"]
    assert delta.min() >= dmin - 1e-12 and delta.max() <= dmax + 1e-12
    # the research rows generalized the same way are exactly the release (nothing suppressed in drop
    # mode is written; what is written is unchanged)
    assert len(rel) == len(sub) - rep["metrics"]["suppressed_rows"]
    assert rep["parameters"]["models"][0] == {
        "model": "delta-presence",
        "dmin": dmin,
        "dmax": dmax,
        "population_rows": len(pop),
    }


def test_k_map_end_to_end(capsys, tmp_path, research):
    path, pop, sub = research
    rel, rep = _anonymize(capsys, tmp_path, path, "--population", ADULT, "--k-map", "5")
    gpop = _generalize(pop, rep["levels"], _hier_maps())
    pcount = gpop.groupby(QIS).size()
    released = rel.groupby(QIS).size().index
    assert pcount.reindex(released).min() >= 5
    # ppdm check with the population generalized the same way reports the same k-map and δ
    gp = tmp_path / "gpop.csv"
    gpop.to_csv(gp, sep=";", index=False)
    code, out, err = run(
        capsys, "check", tmp_path / "out.csv", "--qi", ",".join(QIS), "--population", gp, "--json"
    )  # fmt: skip
    assert code == 0, err
    chk = json.loads(out)
    assert chk["k_map"] == int(pcount.reindex(released).min()) and chk["population_unmatched_classes"] == 0
    d = rel.groupby(QIS).size() / pcount.reindex(released)
    assert chk["delta_presence"] == pytest.approx([d.min(), d.max()])
    assert chk["population_uniques"]["population_size"] == len(pop)
    assert "journalist_avg" in chk["risk"] and chk["population_rows"] == len(pop) and "k" in chk


def test_sample_uniques_and_average_risk_end_to_end(capsys, tmp_path, research):
    path, pop, sub = research
    rel, rep = _anonymize(capsys, tmp_path, path, "--max-sample-uniques", "0.0")
    assert pycanon.k_anonymity(rel, QIS) >= 2
    rel, rep = _anonymize(capsys, tmp_path, path, "--max-avg-risk", "0.1")
    size = rel.groupby(QIS)[QIS[0]].transform("size")
    assert (1.0 / size).mean() <= 0.1
    # the optimum: flash's node is the lowest-NCP node of the exhaustive scan on the same table
    hs = {c: Hierarchy.read_arx(DATA / f"adult_hierarchy_{c}.csv", name=c) for c in QIS}
    table = EncodedTable.encode(sub, Schema(QIS, []), hs)
    ex = exhaustive(Lattice(table, [AverageRisk(0.1)]))
    assert tuple(rep["levels"][c] for c in QIS) == ex.chosen.levels
    # with a suppression budget the smallest classes are suppressed until the risk holds
    rel, rep = _anonymize(
        capsys, tmp_path, path, "--max-sample-uniques", "0.0", "--max-suppression", "0.05", "--suppressed-rows", "drop"
    )
    assert pycanon.k_anonymity(rel, QIS) >= 2 and 0 < rep["metrics"]["suppressed_rows"] <= 0.05 * len(sub)


def test_population_uniqueness_end_to_end_and_check(capsys, tmp_path, research):
    path, pop, sub = research
    N = 10 * len(pop)
    rel, rep = _anonymize(
        capsys, tmp_path, path, "--max-population-uniques", "0.01", "--population-size", N,
        "--uniqueness-estimator", "zayatz",
    )  # fmt: skip
    sizes = rel.groupby(QIS).size().to_numpy()
    assert P.zayatz_uniques(*P.size_frequencies(sizes), N) / N <= 0.01
    code, out, err = run(capsys, "check", tmp_path / "out.csv", "--qi", ",".join(QIS), "--population-size", N, "--json")
    assert code == 0, err
    pu = json.loads(out)["population_uniques"]
    assert set(pu) >= {"pitman", "zayatz", "snb", "dankar", "population_size", "sampling_fraction"}
    assert pu["zayatz"]["fraction"] <= 0.01
    code, out, err = run(capsys, "check", path, "--qi", ",".join(QIS), "--population-size", N)
    assert code == 0, err
    assert "population uniques" in out and "Pitman" in out and "Dankar (pitman)" in out


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--delta-presence", "0.1,0.5"), "needs the population table"),
        (("--delta-presence", "0.6,0.5", "--population", ADULT), "DMIN must not exceed DMAX"),
        (("--max-avg-risk", "1.5"), "between 0 and 1"),
        (("--max-population-uniques", "0.1", "--population-size", "10"), "smaller than the table"),
        (("--max-population-uniques", "0.1"), "needs the population size"),
        (("--k-map", "5"), "k-map needs"),
        (("--k-map", "5", "--population", "MISSINGQI"), "lacks quasi-identifier"),
        (("--k-map", "5", "--population", "SMALL"), "fewer rows"),
        (("--population", ADULT, "--k", "2"), "--population is read by"),
        (("--max-sample-uniques", "0", "--algorithm", "mondrian"), "cannot honour sample-uniqueness"),
    ],
)
def test_cli_errors_one_line_no_output(capsys, tmp_path, research, extra, message):
    path, pop, sub = research
    files = {"MISSINGQI": pop.drop(columns=["race"]), "SMALL": pop.head(100)}
    extra = list(extra)
    for i, a in enumerate(extra):
        if a in files:
            extra[i] = tmp_path / f"{a}.csv"
            files[a].to_csv(extra[i], sep=";", index=False)
    if "--algorithm" not in extra:
        extra += ["--algorithm", "flash"]
    out = tmp_path / "out.csv"
    code, stdout, err = run(
        capsys, "anonymize", path, "-o", out, "--qi", ",".join(QIS), "--hierarchies", DATA, *extra
    )  # fmt: skip
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("ppdm: error:") and message in err, err
    assert "Traceback" not in err and not out.exists()


def test_check_population_size_smaller_than_table_is_one_line(capsys, research):
    path, pop, sub = research
    code, out, err = run(capsys, "check", path, "--qi", ",".join(QIS), "--population-size", 10)
    assert code == 2 and err.count("\n") == 1 and "smaller than the sample" in err


def test_build_models_population_options():
    pop = pd.DataFrame({"a": [1]})
    ms = build_models(max_avg_risk=0.2, max_sample_uniques=0.1, max_population_uniques=0.05, population_size=100)
    assert [m.name for m in ms] == ["average-risk", "sample-uniqueness", "population-uniqueness"]
    ms = build_models(k_map=3, population=pop, max_population_uniques=0.1)  # N defaults to the table's rows
    assert ms[0].population is pop and ms[1].population_size == 1
    with pytest.raises(AnonymizeError, match="--population-size is read by"):
        build_models(k=2, population_size=100)


# ---------------------------------------------------------------------------------------- vs exhaustive
def _small_hierarchy(name, n_values, fan):
    return Hierarchy.from_rows(
        name, [[f"v{v}", f"g{v // fan}", f"h{v // (fan * fan)}", "*"] for v in range(n_values)], numeric=False
    )


def _release_sizes(sizes: list[int], bad: list[bool], mode: str) -> list[int]:
    kept = [s for s, b in zip(sizes, bad) if not b]
    sup = sum(s for s, b in zip(sizes, bad) if b)
    return kept + ([sup] if sup and mode == "star" else [])


def _brute_force(df, pop, qis, hs, levels_list, k, sup_rows, kind, param, mode, N):
    """Satisfying nodes judged in pandas: k-anonymity per class (failing classes suppressed, in star mode
    the suppressed rows form one more class that must be k-anonymous); then the table-level model on the
    released sizes, and if it fails, the classes smaller than s are suppressed too for the smallest s
    (a linear scan) within the budget; δ-presence / k-map per class against the population's counts."""

    def table_ok(sizes):
        sizes = [s for s in sizes if s > 0]
        if not sizes:
            return True
        n = sum(sizes)
        if kind == "avg":
            return len(sizes) / n <= param + 1e-12
        if kind == "uniq":
            return sum(1 for s in sizes if s == 1) / n <= param + 1e-12
        est = P.zayatz_uniques(*P.size_frequencies(sizes), N) if sum(sizes) < N else sizes.count(1)
        return (est if est is not None else 1e9) / N <= param + 1e-12

    out = []
    for levels in levels_list:
        g = pd.DataFrame({c: hs[c].labels[lv][hs[c].maps[lv][hs[c].encode(df[c])]] for c, lv in zip(qis, levels)})
        sizes_s = g.groupby(qis).size()
        sizes = sizes_s.tolist()
        bad = [s < k for s in sizes]
        if kind in ("delta", "kmap"):
            gp = pd.DataFrame({c: hs[c].labels[lv][hs[c].maps[lv][hs[c].encode(pop[c])]] for c, lv in zip(qis, levels)})
            pc = gp.groupby(qis).size().reindex(sizes_s.index).to_numpy()
            if kind == "delta":
                bad = [b or not (param[0] - 1e-12 <= s / p <= param[1] + 1e-12) for b, s, p in zip(bad, sizes, pc)]
            else:
                bad = [b or p < param for b, p in zip(bad, pc)]
        # δ-presence with δmin > 0: a population row in a class with no table row is certainly absent
        # (P = 0 < δmin), whatever is suppressed (the suppressed rows' classes count as classes)
        absent = (
            kind == "delta" and param[0] > 0 and not set(map(tuple, gp.to_numpy())) <= set(map(tuple, g.to_numpy()))
        )
        ok = not absent and sum(s for s, b in zip(sizes, bad) if b) <= sup_rows
        star = sum(s for s, b in zip(sizes, bad) if b)
        if ok and star and mode == "star":
            ok = star >= k and (kind != "kmap" or len(pop) >= param)
            if kind == "delta":
                ok = ok and param[0] - 1e-12 <= star / len(pop) <= param[1] + 1e-12
        if ok and kind in ("avg", "uniq", "popu"):
            if not table_ok(_release_sizes(sizes, bad, mode)):
                ok = False
                for s_ in sorted({s for s, b in zip(sizes, bad) if not b}):
                    b2 = [b or s <= s_ for s, b in zip(sizes, bad)]
                    sup = sum(s for s, b in zip(sizes, b2) if b)
                    if sup > sup_rows:
                        break
                    if mode == "star" and sup < k:
                        continue
                    if table_ok(_release_sizes(sizes, b2, mode)):
                        ok = True
                        break
        if ok:
            out.append(tuple(levels))
    return out


@st.composite
def small_cases(draw):
    n = draw(st.integers(6, 36))
    q = draw(st.integers(1, 3))
    fans = [draw(st.integers(2, 3)) for _ in range(q)]
    nvals = [draw(st.integers(2, 8)) for _ in range(q)]
    rows = {f"a{j}": [f"v{draw(st.integers(0, nvals[j] - 1))}" for _ in range(n)] for j in range(q)}
    m = draw(st.integers(0, 30))  # population rows beyond the table's
    extra = {f"a{j}": [f"v{draw(st.integers(0, nvals[j] - 1))}" for _ in range(m)] for j in range(q)}
    kind = draw(st.sampled_from(["avg", "uniq", "popu", "delta", "kmap"]))
    k = draw(st.integers(1, 3))
    sup = draw(st.sampled_from([0.0, 0.1, 0.25]))
    mode = draw(st.sampled_from(["star", "drop"]))
    param = {
        "avg": draw(st.sampled_from([0.2, 0.34, 0.5])),
        "uniq": draw(st.sampled_from([0.0, 0.1, 0.3])),
        "popu": draw(st.sampled_from([0.02, 0.1, 0.3])),
        "delta": draw(st.sampled_from([(0.0, 0.5), (0.2, 0.7), (0.3, 1.0)])),
        "kmap": draw(st.integers(2, 6)),
    }[kind]
    return pd.DataFrame(rows), pd.DataFrame(extra), nvals, fans, kind, k, sup, param, mode


@HYP
@given(small_cases())
def test_table_level_and_population_models_flash_equals_exhaustive(case):
    df, extra, nvals, fans, kind, k, sup, param, mode = case
    qis = list(df.columns)
    hs = {c: _small_hierarchy(c, nv, f) for c, nv, f in zip(qis, nvals, fans)}
    pop = pd.concat([df, extra], ignore_index=True)  # the table is part of its population
    N = 3 * len(df)
    table = EncodedTable.encode(df, Schema(qis, []), hs)
    model = {
        "avg": lambda: AverageRisk(param),
        "uniq": lambda: SampleUniqueness(param),
        "popu": lambda: PopulationUniqueness(param, "zayatz", N),
        "delta": lambda: DeltaPresence(*param, population=pop),
        "kmap": lambda: KMap(param, population=pop),
    }[kind]()
    models = [KAnonymity(k), model]
    sup_rows = math.floor(sup * len(df) + 1e-9)
    all_nodes = [tuple(int(x) for x in r) for r in lattice_nodes(table.heights)]
    sat = _brute_force(df, pop, qis, hs, all_nodes, k, sup_rows, kind, param, mode, N)
    want = sorted(x for x in sat if not any(m != x and all(a <= b for a, b in zip(m, x)) for m in sat))

    def lattice():
        return Lattice(table, models, sup, suppressed_rows=mode)

    if not want:
        with pytest.raises(AnonymizeError):
            flash(lattice())
        return
    ex = exhaustive(lattice())
    assert sorted(ex.stats["satisfying"]) == sorted(sat)
    assert sorted(x.levels for x in ex.nodes) == want
    fl = flash(lattice(), prune=False)  # every minimal node (the NCP bound would skip the worse ones)
    assert sorted(x.levels for x in fl.nodes) == want
    assert fl.chosen.ncp == pytest.approx(ex.chosen.ncp) and fl.chosen.levels in sat  # the same optimum
    pruned = flash(lattice())
    assert pruned.chosen.levels == fl.chosen.levels and {x.levels for x in pruned.nodes} <= set(want)
    assert sorted(x.levels for x in incognito(lattice()).nodes) == want
    assert all(x.levels in sat for x in samarati(lattice()).nodes)
    assert datafly(lattice()).chosen.levels in sat


def test_check_reports_the_population_rows_a_release_shows_absent():
    """``ppdm check``'s population report counts population rows in no released class (P(t ∈ T | T*) = 0),
    checked against a pandas anti-join."""
    from anonymize.publish.metrics.population import release_population_report

    pop, sub, _ = _worked()
    rep = release_population_report(sub, ["age", "sex"], population=pop)
    merged = pop.merge(sub.drop_duplicates(), on=["age", "sex"], how="left", indicator=True)
    assert rep["population_absent_rows"] == int((merged["_merge"] == "left_only").sum()) == 12
    everyone = release_population_report(pop, ["age", "sex"], population=pop)
    assert everyone["population_absent_rows"] == 0
