"""DP mechanisms over JSON queries: noise law, sensitivity, clamping, validation before any noise.

The noise of a released count/sum is checked against scipy.stats.dlaplace with the scale the
mechanism must use (Δ/ε): χ² at level 1e-6 over many independent releases.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from anonymize.dp import RandomSource, as_epsilon, dp_answer, noise_std, prepare
from anonymize.errors import AnonymizeError

DF = pd.DataFrame(
    {
        "age": [23, 35, 47, 51, 62, 38, 29, 44],
        "hours": [40.5, 38.0, 50.25, 45.0, 20.0, 60.0, 35.5, 41.0],
        "sex": ["F", "M", "F", "M", "F", "F", "M", "M"],
    }
)


def noise_of(query, eps, runs=3000, seed=1, df=DF):
    """Answers of ``runs`` independent releases of ``query``."""
    _, release = prepare(df, query, eps)
    src = RandomSource(seed)
    return np.array([release(src).value for _ in range(runs)])


def chi2_dlaplace(sample: np.ndarray, scale: float) -> float:
    dist = stats.dlaplace(1 / scale)
    support = np.arange(int(dist.ppf(0.005)), int(dist.ppf(0.995)) + 1)
    obs = np.array([np.sum(sample == v) for v in support] + [np.sum((sample < support[0]) | (sample > support[-1]))])
    exp = np.concatenate([dist.pmf(support), [1 - dist.pmf(support).sum()]]) * len(sample)
    return stats.chisquare(obs, exp).pvalue


def test_epsilon_is_exact_rational():
    assert as_epsilon("0.1") == Fraction(1, 10)
    assert as_epsilon(0.1) == Fraction(1, 10)
    assert as_epsilon("1/3") == Fraction(1, 3)
    assert sum([as_epsilon("0.1")] * 10) == 1
    for bad in ["0", "-1", "abc", float("nan"), float("inf"), True, None]:
        with pytest.raises(AnonymizeError):
            as_epsilon(bad)


def test_count_noise_is_discrete_laplace_of_scale_one_over_epsilon():
    q = {"agg": "count", "where": [["sex", "==", "F"]]}
    z = noise_of(q, "0.5", runs=3000) - 4
    assert chi2_dlaplace(z, 2.0) > 1e-6
    a = dp_answer(DF, q, "0.5", RandomSource(3))
    assert a.mechanism["sensitivity"] == 1 and a.mechanism["scale"] == 2.0
    assert math.isclose(a.mechanism["noise_std"], math.sqrt(stats.dlaplace(0.5).var()))


def test_integer_sum_has_sensitivity_max_abs_bound_and_clamps():
    q = {"agg": "sum", "column": "age", "lower": 0, "upper": 50}
    exact = int(np.clip(DF["age"], 0, 50).sum())
    z = noise_of(q, "1", runs=3000) - exact
    assert np.all(z == np.round(z))  # integer column, integer bounds: granularity 1
    assert chi2_dlaplace(z, 50.0) > 1e-6
    a = dp_answer(DF, q, 1, RandomSource(4))
    assert a.mechanism["sensitivity"] == 50 and a.mechanism["granularity"] == 1


def test_real_sum_is_fixed_point_with_explicit_granularity():
    q = {"agg": "sum", "column": "hours", "lower": 0, "upper": 64, "granularity": 0.25}
    exact = DF["hours"].sum()  # every value is a multiple of 0.25 inside the bounds
    z = noise_of(q, "2", runs=3000) - exact
    units = z / 0.25
    assert np.allclose(units, np.round(units))
    assert chi2_dlaplace(np.round(units).astype(int), 64 / 0.25 / 2) > 1e-6


def test_default_granularity_keeps_sum_close():
    q = {"agg": "sum", "column": "hours", "lower": 0, "upper": 64}
    a = dp_answer(DF, q, 1000, RandomSource(5))
    g = a.mechanism["granularity"]
    assert g == 64 / 2**24
    # rounding moves each row by at most g/2; the noise std at eps=1000 is ~0.09
    assert abs(a.value - DF["hours"].sum()) <= len(DF) * g / 2 + 6 * a.mechanism["noise_std"]


def test_mean_splits_epsilon_and_stays_in_bounds():
    q = {"agg": "mean", "column": "age", "lower": 20, "upper": 70}
    a = dp_answer(DF, q, 4, RandomSource(6))
    assert a.mechanism["split"] == {"sum": "2", "count": "2"}
    assert 20 <= a.value <= 70
    empty = {"agg": "mean", "column": "age", "lower": 20, "upper": 70, "where": [["age", ">", 100]]}
    vals = [dp_answer(DF, empty, 1, RandomSource(s)).value for s in range(30)]
    assert all(20 <= v <= 70 for v in vals)


def test_histograms_over_public_domains():
    h = dp_answer(DF, {"agg": "histogram", "column": "sex", "categories": ["F", "M", "X"]}, 1e6, RandomSource(7))
    assert h.value["bins"] == ["F", "M", "X"]
    assert h.value["counts"] == [4, 4, 0]  # scale 1e-6: P(noise != 0) = 2e^-1e6/(1 + e^-1e6), i.e. 0
    h = dp_answer(DF, {"agg": "histogram", "column": "age", "bins": [20, 40, 60, 62]}, 1e6, RandomSource(8))
    assert h.value["counts"] == [4, 3, 1]  # 62 falls in the last, closed bin
    h = dp_answer(DF, {"agg": "histogram", "column": "age", "bins": 5, "lower": 0, "upper": 100}, 1e6, RandomSource(8))
    assert h.value["counts"] == [0, 4, 3, 1, 0]


@pytest.mark.parametrize(
    "query, fragment",
    [
        ({"agg": "sum", "column": "age"}, "clamping bounds"),
        ({"agg": "mean", "column": "age", "lower": 5}, "clamping bounds"),
        ({"agg": "sum", "column": "age", "lower": 5, "upper": 5}, "must be below"),
        ({"agg": "sum", "column": "age", "lower": "x", "upper": 5}, "must be a number"),
        ({"agg": "max", "column": "age"}, "not supported"),
        ({"agg": "sum", "column": "sex", "lower": 0, "upper": 1}, "numeric column"),
        ({"agg": "histogram", "column": "sex"}, "categories"),
        ({"agg": "histogram", "column": "age"}, "bins"),
        ({"agg": "histogram", "column": "age", "bins": [3, 2]}, "increasing"),
        ({"agg": "histogram", "column": "age", "bins": 4}, "clamping bounds"),
        ({"agg": "count", "where": [["zip", "==", 1]]}, "unknown column"),
        ({"agg": "sum", "column": "age", "lower": 0, "upper": 9, "granularity": 0}, "granularity"),
    ],
)
def test_bad_queries_fail_before_any_noise(query, fragment, monkeypatch):
    import anonymize.dp.mechanisms as M

    def no_noise(*a, **k):
        raise AssertionError("noise drawn for an invalid query")

    monkeypatch.setattr(M, "discrete_laplace", no_noise)
    with pytest.raises(AnonymizeError, match=fragment) as e:
        prepare(DF, query, 1)
    assert "\n" not in str(e.value)


def test_noise_std_formula():
    for b in [0.5, 2.0, 10.0]:
        assert math.isclose(noise_std(b), stats.dlaplace(1 / b).std(), rel_tol=1e-12)


def test_neighbouring_tables_change_count_by_at_most_sensitivity():
    """The sensitivity claim itself: removing any one row moves each released statistic's exact
    value by at most Δ (checked by brute force over every row)."""
    qs = [
        ({"agg": "count", "where": [["age", ">", 30]]}, 1),
        ({"agg": "sum", "column": "hours", "lower": 0, "upper": 64, "granularity": 0.25}, 64),
    ]
    inf = 1e9  # eps so large that the noise is zero: the answer is the exact fixed-point value
    for q, delta in qs:
        full = dp_answer(DF, q, inf, RandomSource(1)).value
        for i in range(len(DF)):
            nb = dp_answer(DF.drop(index=i), q, inf, RandomSource(1)).value
            assert abs(full - nb) <= delta + 1e-9
