"""sdcMicro's methods (anonymize/sdc, ``ppdm sdc``): local suppression with missing values as
wildcards, top/bottom coding, invariant PRAM.

The k-anonymity checks count matches with a plain double loop written here (a missing value
matches anything, sdcMicro's ``freqCalc`` with ``alpha = 1``), independent of the library's
pattern-based count.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from anonymize.errors import AnonymizeError
from anonymize.publish.io import read_table
from anonymize.sdc import (
    estimate_original_counts,
    invariant_transition_matrix,
    local_suppression,
    missing_as_value_class_sizes,
    pram,
    top_bottom_coding,
    wildcard_frequencies,
)
from parties.cli import main

ADULT = Path(__file__).resolve().parents[1] / "anonymize" / "data" / "adult_subset.csv"
ADULT_QI = ["age", "sex", "race", "marital-status", "education"]


def _missing(x) -> bool:
    return x is None or x is pd.NA or (isinstance(x, float) and np.isnan(x))


def brute_wildcard_counts(df: pd.DataFrame, qi: list[str]) -> list[int]:
    """For every record, the number of records whose key matches its key (missing matches anything)."""
    rows = [tuple(r) for r in df[qi].astype(object).itertuples(index=False)]
    out = []
    for a in rows:
        out.append(sum(all(_missing(x) or _missing(y) or x == y for x, y in zip(a, b)) for b in rows))
    return out


def brute_exact_counts(df: pd.DataFrame, qi: list[str]) -> list[int]:
    """For every record, the number of records with the identical key, a missing value being one more value."""
    rows = [tuple("<NA>" if _missing(x) else x for x in r) for r in df[qi].astype(object).itertuples(index=False)]
    return [rows.count(a) for a in rows]


@st.composite
def small_tables(draw, *, max_rows: int = 24, max_qi: int = 4):
    n = draw(st.integers(1, max_rows))
    q = draw(st.integers(1, max_qi))
    data = {}
    for j in range(q):
        card = draw(st.integers(1, 4))
        vals = draw(st.lists(st.integers(0, card - 1), min_size=n, max_size=n))
        miss = draw(st.lists(st.booleans(), min_size=n, max_size=n)) if draw(st.booleans()) else [False] * n
        data[f"q{j}"] = [None if m and draw(st.integers(0, 4)) == 0 else f"v{v}" for v, m in zip(vals, miss)]
    data["other"] = list(range(n))
    df = pd.DataFrame(data)
    k = draw(st.integers(1, n))
    return df, [f"q{j}" for j in range(q)], k


# ---------------------------------------------------------------- local suppression


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_tables(), st.data())
def test_local_suppression_is_k_anonymous_with_wildcards_and_only_blanks_cells(case, data):
    df, qi, k = case
    importance = None
    if data.draw(st.booleans()):
        importance = {c: data.draw(st.integers(1, len(qi))) for c in qi}
    before = brute_wildcard_counts(df, qi)
    assert list(wildcard_frequencies(df, qi)) == before
    res = local_suppression(df, qi, k, importance=importance)
    out = res.table
    # k-anonymous under wildcard semantics, by the independent count
    after = brute_wildcard_counts(out, qi)
    assert min(after) >= k
    assert list(wildcard_frequencies(out, qi)) == after
    assert res.min_frequency == min(after)
    # with missing as a value of its own the counts are exact classes, a lower bound of the wildcard counts
    exact = brute_exact_counts(out, qi)
    assert list(missing_as_value_class_sizes(out, qi)) == exact
    assert all(e <= a for e, a in zip(exact, after))
    # rows, order and non-QI columns untouched; QI cells unchanged or newly missing
    assert len(out) == len(df) and list(out.columns) == list(df.columns)
    assert out["other"].tolist() == df["other"].tolist()
    newly = 0
    for c in qi:
        for i, (a, b) in enumerate(zip(df[c].astype(object), out[c].astype(object))):
            if _missing(b) and not _missing(a):
                newly += 1
                assert before[i] < k, "a record that was already k-anonymous lost a cell"
            else:
                assert _missing(a) == _missing(b) and (_missing(a) or a == b)
    assert res.suppressed_cells == newly == sum(res.suppressed_by_column.values())
    # never more than blanking every QI of the records below k
    assert newly <= len(qi) * sum(1 for f in before if f < k)


def _count_after(rows: list[tuple], r: int, blank: set[int]) -> int:
    """Records matching record r once r's QI cells at positions ``blank`` are missing (brute force)."""
    a = [None if j in blank or _missing(x) else x for j, x in enumerate(rows[r])]
    return sum(all(x is None or _missing(y) or x == y for x, y in zip(a, b)) for b in rows)


def _check_importance(df: pd.DataFrame, out: pd.DataFrame, qi: list[str], k: int, ranks: dict[str, int]) -> None:
    rows = [tuple(r) for r in df[qi].astype(object).itertuples(index=False)]
    before = [[_missing(x) for x in r] for r in rows]
    after = [[_missing(x) for x in r] for r in out[qi].astype(object).itertuples(index=False)]
    for r in range(len(rows)):
        for rho in sorted(set(ranks.values())):
            looser = {j for j, c in enumerate(qi) if ranks[c] > rho}
            if _count_after(rows, r, looser) >= k:
                # blanking only the QIs ranked after rho already reached k in the input: no cell of rank <= rho
                for j, c in enumerate(qi):
                    if ranks[c] <= rho:
                        assert after[r][j] == before[r][j], (r, c, rho)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_tables(max_qi=4), st.data())
def test_importance_a_rank_is_touched_only_when_the_less_important_ranks_cannot_suffice(case, data):
    df, qi, k = case
    ranks = {c: data.draw(st.integers(1, 3)) for c in qi}
    res = local_suppression(df, qi, k, importance=ranks)
    _check_importance(df, res.table, qi, k, ranks)


def test_many_qis_take_the_greedy_path_with_the_same_guarantees(monkeypatch):
    import importlib

    ls = importlib.import_module("anonymize.sdc.local_suppression")  # the package attribute is the function

    rng = np.random.default_rng(8)
    for _ in range(6):
        q, n, k = 15, 40, int(rng.integers(2, 5))
        df = pd.DataFrame({f"c{j}": rng.choice(["a", "b", "c"], size=n, p=[0.6, 0.3, 0.1]) for j in range(q)})
        qi = list(df.columns)
        ranks = {c: int(rng.integers(1, 4)) for c in qi}
        res = ls.local_suppression(df, qi, k, importance=ranks)
        assert res.greedy_records > 0 and res.exact_records == 0  # 15 present QIs > EXACT_MAX
        assert min(brute_wildcard_counts(res.table, qi)) >= k
        _check_importance(df, res.table, qi, k, ranks)
        # the exact search on the same table (limit raised) reaches k too
        monkeypatch.setattr(ls, "EXACT_MAX", 15)
        exact = ls.local_suppression(df, qi, k)
        monkeypatch.setattr(ls, "EXACT_MAX", 12)
        assert exact.greedy_records == 0 and min(brute_wildcard_counts(exact.table, qi)) >= k


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_importance_top_rank_untouched_when_its_values_are_frequent(data):
    # the top-ranked column repeats every value at least k times: blanking the others always suffices
    k = data.draw(st.integers(2, 4))
    groups = data.draw(st.integers(1, 4))
    top = [f"t{g}" for g in range(groups) for _ in range(k + data.draw(st.integers(0, 2)))]
    n = len(top)
    other = {
        f"q{j}": data.draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=n, max_size=n)) for j in range(3)
    }
    df = pd.DataFrame({"top": top, **other})
    qi = ["top", "q0", "q1", "q2"]
    res = local_suppression(df, qi, k, importance={"top": 1, "q0": 2, "q1": 2, "q2": 3})
    assert res.suppressed_by_column["top"] == 0
    assert min(brute_wildcard_counts(res.table, qi)) >= k


def test_importance_concrete_case():
    # (t1,a1,b1) (t2,a1,b1) (t1,a2,b2), k = 2. Without ranks: fewest cells. With top=1: 'top' is blanked
    # only in the record whose 'top' value is unique (no suppression of the others alone can reach 2)
    df = pd.DataFrame({"top": ["t1", "t2", "t1"], "a": ["a1", "a1", "a2"], "b": ["b1", "b1", "b2"]})
    qi = ["top", "a", "b"]
    plain = local_suppression(df, qi, 2)
    assert min(brute_wildcard_counts(plain.table, qi)) >= 2
    ranked = local_suppression(df, qi, 2, importance={"top": 1, "a": 2, "b": 2})
    assert min(brute_wildcard_counts(ranked.table, qi)) >= 2
    assert ranked.table["top"].isna().tolist() == [False, True, False]


def test_local_suppression_bad_input():
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    for kwargs, frag in [
        ({"qi": ["a", "zz"], "k": 2}, "unknown column"),
        ({"qi": ["a"], "k": 0}, "positive integer"),
        ({"qi": ["a"], "k": 4}, "larger than the number of records"),
        ({"qi": [], "k": 2}, "at least one QI"),
        ({"qi": ["a"], "k": 2, "importance": {"b": 1}}, "not a quasi-identifier"),
        ({"qi": ["a"], "k": 2, "importance": {"a": 0}}, "positive integer rank"),
    ]:
        with pytest.raises(AnonymizeError, match=frag):
            local_suppression(df, **kwargs)


def test_integer_qi_stays_integer_with_blanks():
    df = pd.DataFrame({"age": [30, 30, 41], "sex": ["m", "m", "f"]})
    res = local_suppression(df, ["age", "sex"], 3)
    assert str(res.table["age"].dtype) == "Int64"
    assert min(brute_wildcard_counts(res.table, ["age", "sex"])) >= 3


def _naive_baseline_cells(df: pd.DataFrame, qi: list[str], k: int) -> int:
    """Blank every QI of every record whose exact class is smaller than k."""
    sizes = df.groupby(qi, dropna=False)[qi[0]].transform("size")
    return int((sizes < k).sum()) * len(qi)


def _vector_wildcard_counts(df: pd.DataFrame, qi: list[str]) -> np.ndarray:
    """All-pairs count in chunks (numpy, independent of the library): for the 3,016 adult records."""
    codes = np.stack([pd.factorize(df[c])[0] for c in qi], axis=1)  # -1 = missing
    n = len(codes)
    out = np.zeros(n, dtype=np.int64)
    for s in range(0, n, 256):
        a = codes[s : s + 256, None, :]
        ok = (a == codes[None, :, :]) | (a < 0) | (codes[None, :, :] < 0)
        out[s : s + 256] = ok.all(axis=2).sum(axis=1)
    return out


def test_adult_k3_fewer_cells_than_the_naive_baseline(capsys):
    from pycanon import anonymity

    df = read_table(ADULT)
    res = local_suppression(df, ADULT_QI, 3)
    baseline = _naive_baseline_cells(df, ADULT_QI, 3)
    counts = _vector_wildcard_counts(res.table, ADULT_QI)
    assert counts.min() >= 3
    assert res.suppressed_cells < baseline
    # pyCANON drops the records with a missing QI (pandas groupby) and counts exact classes of the rest
    complete = res.table[ADULT_QI].notna().all(axis=1)
    k_complete = int(res.table[complete].groupby(ADULT_QI).size().min())
    k_pycanon = int(anonymity.k_anonymity(res.table, ADULT_QI))
    assert k_pycanon == k_complete
    k_value = int(missing_as_value_class_sizes(res.table, ADULT_QI).min())
    with capsys.disabled():
        print(
            f"\nadult k=3 on {','.join(ADULT_QI)}: {res.suppressed_cells} cells suppressed "
            f"({res.suppressed_by_column}) in {res.records_suppressed} records; naive baseline {baseline} cells; "
            f"records below k before: {res.records_below_k}; wildcard min count {counts.min()}; "
            f"k with missing as a value {k_value}; pyCANON k {k_pycanon}"
        )


# ---------------------------------------------------------------- top / bottom coding


def test_top_and_bottom_coding_exact_counts():
    df = read_table(ADULT)
    top = top_bottom_coding(df, "age", 70, kind="top")
    assert top.recoded == int((df["age"] > 70).sum())
    assert top.table["age"].tolist() == df["age"].where(df["age"] <= 70, 70).tolist()
    assert top.table["age"].dtype == df["age"].dtype
    bot = top_bottom_coding(df, "age", 20, 18, kind="bottom")
    assert bot.recoded == int((df["age"] < 20).sum())
    assert bot.table["age"].tolist() == df["age"].where(df["age"] >= 20, 18).tolist()
    q = float(np.quantile(df["age"].to_numpy(dtype=float), 0.95))
    from anonymize.sdc import column_quantile

    assert column_quantile(df, "age", 0.95) == q
    tq = top_bottom_coding(df, "age", q, kind="top", quantile=0.95)
    assert tq.recoded == int((df["age"] > q).sum()) and tq.to_json()["quantile"] == 0.95
    # untouched columns and rows
    assert top.table.drop(columns="age").equals(df.drop(columns="age"))


def test_coding_leaves_missing_values_and_checks_input():
    df = pd.DataFrame({"x": [1.0, np.nan, 5.0, 9.0], "s": ["a", "b", "c", "d"]})
    res = top_bottom_coding(df, "x", 4, 4.5, kind="top")
    assert res.recoded == 2 and res.table["x"].isna().tolist() == [False, True, False, False]
    assert res.table["x"].tolist()[2:] == [4.5, 4.5]
    res = top_bottom_coding(pd.DataFrame({"x": [1, 5, 9]}), "x", 4, 4.5)
    assert res.table["x"].tolist() == [1.0, 4.5, 4.5]  # an integer column turns float for a fractional replacement
    with pytest.raises(AnonymizeError, match="not numeric"):
        top_bottom_coding(df, "s", 1)
    with pytest.raises(AnonymizeError, match="unknown column"):
        top_bottom_coding(df, "nope", 1)
    with pytest.raises(AnonymizeError, match="kind"):
        top_bottom_coding(df, "x", 1, kind="middle")


# ---------------------------------------------------------------- PRAM


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 500), min_size=1, max_size=12),
    st.floats(0.05, 1.0),
    st.floats(0.0, 1.0),
    st.integers(0, 2**32),
)
def test_transition_matrix_is_stochastic_invariant_and_keeps_at_least_pd(counts, pd_, alpha, seed):
    P, a_eff = invariant_transition_matrix(counts, pd_, alpha, rng=seed)
    t = np.asarray(counts, dtype=float)
    p = t / t.sum()
    assert P.shape == (len(counts), len(counts))
    assert np.all(P >= 0)
    assert np.allclose(P.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(np.diag(P) >= pd_ - 1e-12)
    assert np.allclose(p @ P, p, atol=1e-12)  # invariance: pi^T P = pi^T
    assert 0 <= a_eff <= alpha + 1e-15


def _pram_case(pd_: float, alpha: float, seed: int):
    df = read_table(ADULT)
    res = pram(df, ["occupation"], pd=pd_, alpha=alpha, rng=seed)
    col = res.columns["occupation"]
    cats = col.categories
    index = {c: i for i, c in enumerate(cats)}
    orig = df["occupation"].map(index).to_numpy()
    rel = res.table["occupation"].map(index).to_numpy()
    return df, res, col, orig, rel


@pytest.mark.parametrize("pd_,alpha,seed", [(0.8, 0.5, 11), (0.5, 1.0, 12)])
def test_pram_on_adult_occupation_follows_its_matrix(pd_, alpha, seed):
    df, res, col, orig, rel = _pram_case(pd_, alpha, seed)
    P = col.matrix
    L = len(col.categories)
    n_i = np.bincount(orig, minlength=L)
    released = np.bincount(rel, minlength=L)
    assert released.tolist() == col.released_counts.tolist()
    assert col.changed == int((orig != rel).sum()) > 0
    # the released marginal against its expectation sum_i n_i P[i, j]
    expected = n_i @ P
    assert stats.chisquare(released, expected).pvalue > 0.001
    # per true category: released categories against n_i P[i, .], cells with expected < 5 pooled
    for i in range(L):
        obs = np.bincount(rel[orig == i], minlength=L)
        exp = n_i[i] * P[i]
        big = exp >= 5
        o = np.append(obs[big], obs[~big].sum())
        e = np.append(exp[big], exp[~big].sum())
        if e[-1] == 0 or (~big).sum() == 0:
            o, e = o[:-1], e[:-1]
        if len(o) >= 2 and e.min() >= 5:
            assert stats.chisquare(o, e).pvalue > 0.001, col.categories[i]
        else:  # too few records for chi-square: exact binomial test of keeping the value
            assert stats.binomtest(int(obs[i]), int(n_i[i]), P[i, i]).pvalue > 0.001, col.categories[i]
    # invariance on the real marginal, and the unbiased estimate within 3 standard errors
    p = n_i / n_i.sum()
    assert np.allclose(p @ P, p, atol=1e-12)
    est, se_plugin = estimate_original_counts(released, P)
    Pinv = np.linalg.inv(P)
    V = sum(n_i[i] * (np.diag(P[i]) - np.outer(P[i], P[i])) for i in range(L))
    se = np.sqrt(np.diag(Pinv.T @ V @ Pinv))
    assert np.all(np.abs(est - n_i) <= 3 * se)
    assert np.allclose(col.estimated_counts, est) and np.allclose(col.standard_errors, se_plugin)
    # other columns and rows untouched
    assert res.table.drop(columns="occupation").equals(df.drop(columns="occupation"))


def test_pram_estimator_is_unbiased_over_many_runs():
    rng = np.random.default_rng(5)
    t = np.array([400, 250, 90, 30, 8])
    x = pd.DataFrame({"c": np.repeat(np.array(list("abcde"), dtype=object), t)})
    P, _ = invariant_transition_matrix(t, 0.5, 1.0, rng=1)
    from anonymize.dp import RandomSource

    src = RandomSource(int(rng.integers(2**31)))
    ests = []
    codes = np.repeat(np.arange(5), t)
    cum = np.cumsum(P, axis=1)
    for _ in range(300):
        u = src.uniform01(len(codes))
        rel = np.empty_like(codes)
        for i in range(5):
            sel = codes == i
            rel[sel] = np.minimum(np.searchsorted(cum[i], u[sel], side="right"), 4)
        ests.append(estimate_original_counts(np.bincount(rel, minlength=5), P)[0])
    ests = np.array(ests)
    assert np.all(np.abs(ests.mean(axis=0) - t) <= 4 * ests.std(axis=0) / np.sqrt(len(ests)))
    assert len(x) == t.sum()


def test_pram_keeps_missing_values_and_is_reproducible_with_a_seed():
    df = pd.DataFrame({"c": ["a", "b", None, "a", "c", None, "b"] * 30, "n": range(210)})
    r1 = pram(df, ["c"], pd=0.3, alpha=1.0, rng=3)
    r2 = pram(df, ["c"], pd=0.3, alpha=1.0, rng=3)
    assert r1.table.equals(r2.table)
    assert r1.table["c"].isna().tolist() == df["c"].isna().tolist()
    assert set(r1.table["c"].dropna()) <= {"a", "b", "c"}
    assert r1.columns["c"].categories == ["a", "b", "c"]
    for bad, frag in [({"pd": 0}, "pd"), ({"pd": 1.5}, "pd"), ({"alpha": 2}, "alpha")]:
        with pytest.raises(AnonymizeError, match=frag):
            pram(df, ["c"], **bad)
    with pytest.raises(AnonymizeError, match="unknown column"):
        pram(df, ["zz"])


# ---------------------------------------------------------------- CLI


def cli(capsys, *argv):
    try:
        code = main([*map(str, argv)])
    except SystemExit as e:  # argparse's own errors (one line, exit 2)
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_report(capsys, tmp_path):
    out = tmp_path / "out.csv"
    rep = tmp_path / "rep.json"
    code, so, se = cli(
        capsys, "sdc", ADULT, "-o", out, "--qi", ",".join(ADULT_QI), "--k", 3, "--importance", "sex=1,race=2",
        "--top-code", "age=q0.95", "--bottom-code", "age=18:17", "--pram", "occupation,workclass", "--seed", 4,
        "--report", rep, "--json",
    )  # fmt: skip
    assert code == 0, se
    rj = json.loads(so)
    assert json.loads(rep.read_text()) == rj
    for key in ("suppressed_cells", "suppressed_by_column", "top_coded", "bottom_coded", "pram"):
        assert key in rj
    assert set(rj["pram"]) == {"occupation", "workclass"}
    for d in rj["pram"].values():
        P = np.array(d["transition_matrix"])
        assert P.shape == (len(d["categories"]),) * 2 and np.allclose(P.sum(axis=1), 1)
        assert len(d["estimated_original_counts"]) == len(d["categories"])
    src = read_table(ADULT)
    released = read_table(out)
    assert len(released) == len(src)
    assert rj["top_coded"]["age"]["recoded"] == int((src["age"] > np.quantile(src["age"], 0.95)).sum())
    assert rj["bottom_coded"]["age"]["recoded"] == int((src["age"] < 18).sum())
    assert rj["suppressed_cells"] == int(released[ADULT_QI].isna().sum().sum())
    assert rj["suppressed_by_column"] == {c: int(released[c].isna().sum()) for c in ADULT_QI}
    assert rj["suppressed_by_column"]["sex"] == 0
    assert _vector_wildcard_counts(released, ADULT_QI).min() >= 3
    assert rj["local_suppression"]["min_wildcard_frequency_released"] >= 3
    # the human summary prints the matrix
    code, so, se = cli(capsys, "sdc", ADULT, "-o", tmp_path / "o2.csv", "--pram", "race", "--seed", 4)
    assert code == 0 and "transition matrix" in so and "Amer-Indian-Eskimo" in so


def test_cli_pram_on_a_qi_warns(capsys, tmp_path):
    code, so, se = cli(
        capsys, "sdc", ADULT, "-o", tmp_path / "o.csv", "--qi", "sex,race", "--k", 2, "--pram", "race", "--seed", 1,
        "--json",
    )  # fmt: skip
    assert code == 0
    assert "ppdm: warning: PRAM on quasi-identifier(s) race" in se
    assert json.loads(so)["warnings"]


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["--qi", "age,nope", "--k", "3"], "unknown column"),
        (["--top-code", "sex=40"], "not numeric"),
        (["--top-code", "nope=40"], "unknown column"),
        (["--top-code", "age"], "COL=VALUE"),
        (["--top-code", "age=q1.5"], "quantile"),
        (["--bottom-code", "age=x"], "expected a number"),
        (["--qi", "age", "--k", "0"], "at least 1"),
        (["--qi", "age", "--k", "99999"], "larger than the number of records"),
        (["--qi", "age"], "--qi needs --k"),
        (["--k", "3"], "--k needs --qi"),
        (["--qi", "age,sex", "--k", "2", "--importance", "race=1"], "not a quasi-identifier"),
        (["--qi", "age", "--k", "2", "--importance", "age=x"], "positive integer"),
        (["--pram", "occupation", "--pd", "0"], "(0, 1]"),
        (["--pram", "occupation", "--pd", "1.5"], "(0, 1]"),
        (["--pram", "occupation", "--alpha", "-1"], "--alpha"),
        (["--pram", "nope"], "unknown column"),
        (["--pd", "0.7"], "need --pram"),
        ([], "nothing to do"),
    ],
)
def test_cli_bad_input_one_line_no_output(capsys, tmp_path, argv, fragment):
    out = tmp_path / "out.csv"
    rep = tmp_path / "rep.json"
    code, so, se = cli(capsys, "sdc", ADULT, "-o", out, "--report", rep, *argv)
    assert code == 2
    lines = se.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppdm: error: ") and fragment in lines[0], se
    assert "Traceback" not in se
    assert not out.exists() and not rep.exists()
    assert list(tmp_path.iterdir()) == []


def test_cli_error_leaves_an_existing_output_untouched(capsys, tmp_path):
    out = tmp_path / "out.csv"
    out.write_text("keep me\n")
    code, so, se = cli(capsys, "sdc", ADULT, "-o", out, "--qi", "age", "--k", 99999)
    assert code == 2 and out.read_text() == "keep me\n"
    code, so, se = cli(capsys, "sdc", ADULT, "-o", ADULT, "--qi", "age", "--k", 2)
    assert code == 2 and "input file" in se
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]  # no temporary file left
