"""Condensation (anonymize.publish.condensation): covariance kept (numpy oracle), eqs. 20.6–20.9,
group sizes, what the synthetic records reveal, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pycanon import anonymity as pycanon

import anonymize.publish as P
from anonymize.errors import AnonymizeError
from anonymize.publish.clustering.common import Rng
from anonymize.publish.condensation import condensation, covariance_check
from anonymize.publish.condensation.condensation import GroupStats, dynamic_groups, static_groups


def correlated(n=4000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    X = rng.normal(size=(n, d)) @ A + rng.normal(size=d) * 5
    X[:, 0] *= 100.0  # one column on another scale
    return pd.DataFrame(X, columns=[f"x{i}" for i in range(d)])


def encode(df):
    return P.EncodedTable.encode(df, P.Schema(list(df.columns)), {})


@pytest.mark.parametrize("variant", ["static", "dynamic"])
def test_synthetic_covariance_within_10_percent(variant):
    """The synthetic table's covariance (numpy) is within 10 % of the original's in relative
    Frobenius norm, standardized too; means kept; same number of records."""
    df = correlated()
    r = condensation(encode(df), [P.KAnonymity(20)], variant=variant)
    Y = r.df.to_numpy()
    X = df.to_numpy()
    assert Y.shape == X.shape
    c0, c1 = np.cov(X, rowvar=False), np.cov(Y, rowvar=False)
    assert np.linalg.norm(c1 - c0) / np.linalg.norm(c0) < 0.10
    chk = covariance_check(X, Y)
    assert chk["covariance_relative_frobenius_error"] == pytest.approx(np.linalg.norm(c1 - c0) / np.linalg.norm(c0))
    assert chk["standardized_covariance_relative_frobenius_error"] < 0.10
    assert np.allclose(Y.mean(axis=0), X.mean(axis=0), rtol=0.02, atol=0.02 * X.std(axis=0))


def test_static_groups_have_at_least_k_and_moments_match_numpy():
    """Static groups have ≥ k records (k nearest, the rest to the nearest group); eq. 20.7 from the
    additive statistics equals numpy's population covariance of each group's records."""
    df = correlated(n=997)
    Z = (df - df.mean()) / df.std(ddof=0)
    Z = Z.to_numpy()
    gid, G = static_groups(Z, 10, Rng(1))
    sizes = np.bincount(gid, minlength=G)
    assert sizes.min() >= 10 and sizes.sum() == 997
    r = np.bincount(gid).astype(float)
    s1 = np.zeros((G, 4))
    np.add.at(s1, gid, Z)
    s2 = np.zeros((G, 4, 4))
    np.add.at(s2, gid, Z[:, :, None] * Z[:, None, :])
    gs = GroupStats(r, s1, s2)
    for g in (0, 7, G - 1):
        assert np.allclose(gs.covariances[g], np.cov(Z[gid == g], rowvar=False, ddof=0))


def test_split_keeps_the_parent_moments():
    """Eqs. 20.8–20.9: the two halves sit R/4 = √(12 λ_max)/4 either side of the mean along the
    largest eigenvector with λ_max/4; pooled, they have exactly the parent's mean and covariance
    (λ_max/4 + R²/16 = λ_max)."""
    from anonymize.publish.condensation.condensation import split_group

    rng = np.random.default_rng(3)
    Z = rng.normal(size=(40, 3)) @ rng.normal(size=(3, 3))
    r, s1, s2 = 40.0, Z.sum(axis=0), Z.T @ Z
    a, b = split_group(r, s1, s2)
    assert a[0] == b[0] == 20.0
    pooled = GroupStats(np.array([a[0] + b[0]]), (a[1] + b[1])[None], (a[2] + b[2])[None])
    assert np.allclose(pooled.means[0], Z.mean(axis=0))
    assert np.allclose(pooled.covariances[0], np.cov(Z, rowvar=False, ddof=0))


def test_dynamic_groups_between_k_and_2k():
    df = correlated(n=3000)
    Z = ((df - df.mean()) / df.std(ddof=0)).to_numpy()
    gs, info = dynamic_groups(Z, 15, Rng(0))
    assert gs.r.min() >= 15 and gs.r.max() < 30
    assert gs.r.sum() == pytest.approx(3000)
    assert info["splits"] > 0


def test_through_anonymize_table_report():
    df = correlated(n=600)
    r = P.anonymize_table(df, P.Schema(list(df.columns)), algorithm="condensation", models=[P.KAnonymity(10)])
    assert r.kind == "synthetic" and r.report["kind"] == "synthetic"
    assert r.metrics["achieved"]["group_size_min"] >= 10
    # as a table the synthetic release is what pycanon measures, not the group size
    assert r.metrics["achieved"]["k"] == pycanon.k_anonymity(r.df, list(df.columns)) == 1
    assert r.metrics["covariance"]["covariance_relative_frobenius_error"] < 0.25
    assert list(r.df.columns) == list(df.columns)


@pytest.mark.parametrize("variant", ["static", "dynamic"])
def test_the_sensitive_column_is_kept_with_its_exact_distribution_per_class(variant):
    """Aggarwal & Yu condense each class separately: the release keeps the sensitive column (issue 20: it
    was dropped, with every other column), its value counts exactly, and each class's own means."""
    rng = np.random.default_rng(3)
    n = 900
    y = rng.choice(["low", "high"], size=n, p=[0.7, 0.3])
    a = np.where(y == "high", 60.0, 30.0) + rng.normal(0, 5, n)
    b = 0.5 * a + rng.normal(0, 2, n)
    df = pd.DataFrame({"a": a, "b": b, "y": y})
    r = P.anonymize_table(
        df,
        P.Schema(["a", "b"], ["y"]),
        algorithm="condensation",
        models=[P.KAnonymity(15)],
        options={"variant": variant},
    )
    assert list(r.df.columns) == ["a", "b", "y"]
    assert r.df["y"].value_counts().to_dict() == df["y"].value_counts().to_dict()
    for cls in ("low", "high"):  # the relation between QIs and the class survives (numpy oracle)
        assert r.df.loc[r.df.y == cls, "a"].mean() == pytest.approx(df.loc[df.y == cls, "a"].mean(), abs=1.0)
    assert r.metrics["columns_not_published"] == []


def test_a_class_smaller_than_k_is_one_clear_error():
    df = pd.DataFrame({"a": np.arange(30.0), "y": ["x"] * 27 + ["z"] * 3})
    with pytest.raises(AnonymizeError, match="'z' has 3"):
        P.anonymize_table(df, P.Schema(["a"], ["y"]), algorithm="condensation", models=[P.KAnonymity(5)])


def test_what_the_synthetic_records_reveal():
    """An adversary holding the synthetic table: for continuous data no synthetic record equals an
    input record; but a group whose records are identical has covariance 0 and its synthetic
    records repeat that value — shared by ≥ k input records, as the module docstring says."""
    df = correlated(n=500)
    r = condensation(encode(df), [P.KAnonymity(5)])
    orig = {tuple(np.round(x, 6)) for x in df.to_numpy()}
    assert not any(tuple(y) in orig for y in r.df.to_numpy())
    same = pd.DataFrame(
        {"a": [7.0] * 5 + list(np.linspace(100, 200, 20)), "b": [1.0] * 5 + list(np.linspace(0, 1, 20))}
    )
    r2 = condensation(encode(same), [P.KAnonymity(5)], seed=4)
    hits = (np.isclose(r2.df["a"], 7.0) & np.isclose(r2.df["b"], 1.0)).sum()
    assert hits == 5


def test_bad_input():
    df = pd.DataFrame({"age": [30, 40, 50, 60], "sex": ["M", "F", "M", "F"]})
    with pytest.raises(AnonymizeError, match="'sex' is not numeric"):
        P.anonymize_table(df, P.Schema(["age", "sex"]), algorithm="condensation", models=[P.KAnonymity(2)])
    with pytest.raises(AnonymizeError, match="larger than the table"):
        P.anonymize_table(df, P.Schema(["age"]), algorithm="condensation", models=[P.KAnonymity(5)])
    with pytest.raises(AnonymizeError, match="unknown condensation variant"):
        P.anonymize_table(
            df, P.Schema(["age"]), algorithm="condensation", models=[P.KAnonymity(2)], options={"variant": "x"}
        )
    with pytest.raises(AnonymizeError, match="'condensation' cannot honour distinct-l-diversity"):
        P.anonymize_table(
            df, P.Schema(["age"], ["sex"]), algorithm="condensation", models=[P.KAnonymity(2), P.DistinctLDiversity(2)]
        )
