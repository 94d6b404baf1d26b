"""Local recoding after the full-domain search (``anonymize/publish/fulldomain/local_recoding.py``;
ARX's local transformation, ``ARXResult.optimizeIterative``).

Oracles we did not write:

* pycanon measures k and distinct l on the *written* Adult release (read back as text, so each
  distinct released tuple is one class — "20-29" and "20-24" are two classes, as in ARX);
* on random small tables, a pandas ``groupby`` over the written QI text checks every class against
  the models (k, distinct / entropy l, variational t against the distribution of the rows in the
  file), independent of the engine's checks.

Properties: local recoding never has a larger NCP than the global optimum it starts from (the same
function, :func:`anonymize.publish.metrics.ncp`, on both releases; suppressed cells cost 1) and never
suppresses more rows.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycanon import anonymity as pycanon

from anonymize.errors import AnonymizeError
from anonymize.publish import EncodedTable, Hierarchy, Schema
from anonymize.publish import metrics as M
from anonymize.publish.anonymizer import anonymize_table, build_models
from anonymize.publish.fulldomain.local_recoding import (
    SubTable,
    boxes_from_row_levels,
    local_recoding,
    release_local,
    released_classes,
)
from anonymize.publish.io import read_hierarchies, read_table
from anonymize.publish.metrics import measure_release
from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
SUBSET = DATA / "adult_subset.csv"
QIS = ["age", "sex", "race", "marital-status", "education"]
HYP = settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- random small tables
def _small_hierarchy(name, n_values, fan):
    rows = [[f"v{v}", f"g{v // fan}", f"h{v // (fan * fan)}", "*"] for v in range(n_values)]
    return Hierarchy.from_rows(name, rows, numeric=False)


@st.composite
def small_tables(draw):
    n = draw(st.integers(8, 50))
    q = draw(st.integers(1, 3))
    fans = [draw(st.integers(2, 3)) for _ in range(q)]
    nvals = [draw(st.integers(2, 9)) for _ in range(q)]
    rows = {f"a{j}": [f"v{draw(st.integers(0, nvals[j] - 1))}" for _ in range(n)] for j in range(q)}
    rows["s"] = [draw(st.sampled_from(["x", "y", "z"])) for _ in range(n)]
    kind = draw(st.sampled_from(["k", "distinct", "entropy", "t"]))
    k = draw(st.integers(2, 4))
    sup = draw(st.sampled_from([0.1, 0.25, 0.4]))
    mode = draw(st.sampled_from(["star", "drop"]))
    algorithm = draw(st.sampled_from(["flash", "incognito", "samarati"]))
    budget = draw(st.sampled_from(["fraction", "records", "all"]))
    if budget == "records":  # ARX's optimizeIterativeFast: each step releases this share of all rows
        budget = ("records", draw(st.sampled_from([0.02, 0.1, 0.5, 1.0])))
    return pd.DataFrame(rows), nvals, fans, kind, k, sup, mode, algorithm, budget


def _models(kind, k):
    return build_models(
        k=k,
        l={"distinct": 2, "entropy": 1.6}.get(kind),
        l_variant="entropy" if kind == "entropy" else "distinct",
        t=0.35 if kind == "t" else None,
        t_distance="variational",
    )


def _written_ok(df, qis, sens, kind, k, t=0.35) -> bool:
    """Every class of the written table (its QI text, one class per distinct tuple) passes; t against
    the distribution of the rows in the file (all rows with 'star', the kept ones with 'drop')."""
    text = df[qis].astype(str)
    ref = df[sens].value_counts(normalize=True)
    for _, g in df[sens].groupby([text[c] for c in qis]):
        vc = g.value_counts(normalize=True)
        if len(g) < k:
            return False
        if kind == "distinct" and len(vc) < 2:
            return False
        if kind == "entropy" and -sum(p * math.log(p) for p in vc) < math.log(1.6) - 1e-9:
            return False
        if kind == "t" and 0.5 * (vc.reindex(ref.index, fill_value=0) - ref).abs().sum() > t + 1e-9:
            return False
    return True


@HYP
@given(small_tables())
def test_local_recoding_never_worse_than_global_and_private(case):
    df, nvals, fans, kind, k, sup, mode, algorithm, budget = case
    qis = [c for c in df.columns if c != "s"]
    hs = {c: _small_hierarchy(c, nv, f) for c, nv, f in zip(qis, nvals, fans)}
    table = EncodedTable.encode(df, Schema(qis, ["s"]), hs)
    models = _models(kind, k)
    try:
        glob = anonymize_table(table, algorithm=algorithm, models=models, max_suppression=sup, suppressed_rows=mode)
    except AnonymizeError:
        with pytest.raises(AnonymizeError):
            local_recoding(table, models, sup, algorithm=algorithm, suppressed_rows=mode)
        return
    budget, records = budget if isinstance(budget, tuple) else (budget, None)
    res = local_recoding(table, models, sup, algorithm=algorithm, budget=budget, suppressed_rows=mode, records=records)
    if records is not None:  # every kept step released at least records·n rows (or all it was given)
        for run in res.iterations:
            if run["recovered"] and not run.get("discarded"):
                assert run["recovered"] >= min(run["rows"], records * len(df)) - 1e-9
    # the global search is the one anonymize_table runs, and its node is iteration 0
    assert res.nodes[0] == tuple(glob.levels.values())
    assert res.suppressed_before == glob.metrics["suppressed_rows"]
    assert res.suppressed_after <= res.suppressed_before
    assert res.recovered_rows == res.suppressed_before - res.suppressed_after
    assert int(res.suppressed.sum()) == res.suppressed_after
    # the same NCP function on both releases, suppressed cells costing 1
    rl = res.row_levels(table.heights)
    lo, hi = boxes_from_row_levels(table, rl)
    ncp_local = M.ncp(table, lo, hi, res.suppressed)["ncp"]
    ncp_global = glob.metrics["ncp"]["ncp"]
    assert ncp_local <= ncp_global + 1e-12
    # rows of the global release that were not suppressed keep the global node
    assert (res.node_of_row[~glob.suppressed_mask] == 0).all()
    # the written release: every class (distinct released tuple) satisfies the models
    written = release_local(table, rl, res.suppressed, suppressed_rows=mode)
    assert len(written) == (len(df) if mode == "star" else len(df) - res.suppressed_after)
    assert _written_ok(written, qis, "s", kind, k)
    if mode == "star":  # the NCP read off the written file is the same number
        assert measure_release(written, qis, hierarchies=hs)["ncp"]["ncp"] == pytest.approx(ncp_local, abs=1e-12)


@HYP
@given(small_tables())
def test_anonymize_table_local_report_matches_written_file(case):
    df, nvals, fans, kind, k, sup, mode, algorithm, _ = case
    qis = [c for c in df.columns if c != "s"]
    hs = {c: _small_hierarchy(c, nv, f) for c, nv, f in zip(qis, nvals, fans)}
    models = _models(kind, k)
    kw = dict(algorithm=algorithm, models=models, max_suppression=sup, suppressed_rows=mode, n_queries=0)
    try:
        glob = anonymize_table(df, Schema(qis, ["s"]), hs, **kw)
    except AnonymizeError:
        return
    loc = anonymize_table(df, Schema(qis, ["s"]), hs, local_recoding=True, **kw)
    lr = loc.report["local_recoding"]
    assert lr["suppressed_before"] == glob.metrics["suppressed_rows"]
    assert lr["suppressed_after"] == loc.metrics["suppressed_rows"] <= glob.metrics["suppressed_rows"]
    assert loc.metrics["ncp"]["ncp"] <= glob.metrics["ncp"]["ncp"] + 1e-12
    assert sum(x["rows"] for x in lr["nodes"]) == len(df) - lr["suppressed_after"]
    # "achieved" is the written file's: pycanon's k on the text of the release
    written = loc.df.copy()
    for c in qis:
        written[c] = written[c].astype(str)
    ach = loc.metrics["achieved"]
    assert ach["k"] == pycanon.k_anonymity(written.reset_index(drop=True), qis) >= k
    assert ach["classes"] == len(written[qis].drop_duplicates())
    assert _written_ok(written, qis, "s", kind, k)


# ---------------------------------------------------------------- parts
def test_subtable_compares_with_the_whole_table_distribution():
    df = pd.DataFrame({"a": ["v0", "v1", "v2", "v3"] * 3, "s": ["x"] * 9 + ["y"] * 3})
    table = EncodedTable.encode(df, Schema(["a"], ["s"]), {"a": _small_hierarchy("a", 4, 2)})
    sub = SubTable(table, np.array([9, 10, 11]))  # only 'y' rows
    assert sub.n == 3 and list(sub.sens_codes[:, 0]) == [1, 1, 1]
    assert np.allclose(sub.global_dist()[0], [0.75, 0.25])  # the whole table's, as in ARX


def test_overlapping_cells_are_different_classes():
    """Rows at two nodes: 'g0' (level 1) and 'v0' (level 0) overlap but are two classes."""
    df = pd.DataFrame({"a": ["v0", "v0", "v1", "v1"], "s": ["x", "y", "x", "y"]})
    hs = {"a": _small_hierarchy("a", 2, 2)}
    table = EncodedTable.encode(df, Schema(["a"], ["s"]), hs)
    rl = np.array([[0], [0], [1], [1]])
    sup = np.zeros(4, dtype=bool)
    cid, nc = released_classes(table, rl, sup)
    assert nc == 2 and cid[0] == cid[1] != cid[2] == cid[3]
    out = release_local(table, rl, sup)
    assert out["a"].tolist() == ["v0", "v0", "g0", "g0"]
    # suppressed rows read '*' and are one class with a generalized tuple that reads '*'
    rl2 = np.array([[3], [3], [0], [0]])
    sup2 = np.array([False, False, True, True])
    cid2, nc2 = released_classes(table, rl2, sup2)
    assert nc2 == 1


def test_drop_mode_union_checked_against_the_rows_kept():
    """With 'drop' the file's t reference is the kept rows' distribution, which moves as rows come
    back: here the first re-search's classes pass against the whole table, but the union would have
    t = 0.318 > 0.3 against the file — the iteration is discarded and the global release stays."""
    a0 = "v5 v6 v6 v2 v0 v6 v1 v1 v5 v4 v3 v4 v6 v1 v0 v5 v1 v0 v3 v6 v5 v0 v6 v6 v4 v0 v3 v5 v1 v1 v5 v0 v6 v2 v3 v0"
    s = "xxxzzxyxxyyyxxyxxzyxxxyzxxxzzxxxxyxx"
    df = pd.DataFrame({"a0": a0.split(), "s": list(s)})
    table = EncodedTable.encode(df, Schema(["a0"], ["s"]), {"a0": _small_hierarchy("a0", 7, 2)})
    models = build_models(k=2, t=0.3, t_distance="variational")
    res = local_recoding(table, models, 0.4, suppressed_rows="drop")
    assert res.iterations[-1].get("discarded") and "discarded" in res.stopped
    assert res.recovered_rows == 0 and len(res.nodes) == 1
    written = release_local(table, res.row_levels(table.heights), res.suppressed, suppressed_rows="drop")
    assert _written_ok(written, ["a0"], "s", "t", 2, t=0.3)
    # the discarded union: the rows the re-search released, at its node
    rl = res.row_levels(table.heights)
    sub = SubTable(table, np.flatnonzero(res.suppressed))
    again = local_recoding(sub, models, 0.4, max_iterations=1, suppressed_rows="drop")  # the same re-search
    back = np.flatnonzero(res.suppressed)[~again.suppressed]
    assert len(back) == res.iterations[-1]["recovered"]
    rl[back] = again.nodes[0]
    sup = res.suppressed.copy()
    sup[back] = False
    union = release_local(table, rl, sup, suppressed_rows="drop")
    assert not _written_ok(union, ["a0"], "s", "t", 2, t=0.3)


def test_arx_mode_judges_the_classes_outside_the_star_group():
    """``suppressed_rows='arx'``: the '*' rows are ARX's outliers (not judged); every other written
    class has k rows and t ≤ 0.3 against the whole table's distribution."""
    qis = [*QIS, "native-country", "workclass", "occupation"]
    df = read_table(SUBSET)
    table = EncodedTable.encode(df, Schema(qis, ["salary-class"]), read_hierarchies(DATA, columns=set(qis)))
    res = local_recoding(table, build_models(k=5, t=0.3), 0.05, suppressed_rows="arx")
    assert res.recovered_rows > 0
    written = release_local(table, res.row_levels(table.heights), res.suppressed, suppressed_rows="arx")
    assert len(written) == len(df) and (written.loc[res.suppressed, qis] == "*").all(axis=None)
    kept = written.loc[~res.suppressed]
    ref = df["salary-class"].value_counts(normalize=True)
    for _, g in kept.groupby([kept[c].astype(str) for c in qis])["salary-class"]:
        assert len(g) >= 5
        assert 0.5 * (g.value_counts(normalize=True).reindex(ref.index, fill_value=0) - ref).abs().sum() <= 0.3 + 1e-9


def test_errors():
    df = read_table(SUBSET)
    hs = read_hierarchies(DATA, columns=set(QIS))
    models = build_models(k=5)
    for alg in ("datafly", "mondrian"):
        with pytest.raises(AnonymizeError, match="local recoding runs on"):
            anonymize_table(df, Schema(QIS, []), hs, alg, models, 0.05, local_recoding=True)
    with pytest.raises(AnonymizeError, match="numeric output"):
        anonymize_table(df, Schema(QIS, []), hs, "flash", models, 0.05, local_recoding=True, numeric_output="mean")
    with pytest.raises(AnonymizeError, match="give local recoding"):
        anonymize_table(df, Schema(QIS, []), hs, "flash", models, 0.05, local_iterations=3)
    with pytest.raises(AnonymizeError, match="local recoding cannot honour sample-uniqueness"):
        anonymize_table(
            df, Schema(QIS, []), hs, "flash", build_models(k=5, max_sample_uniques=0.01), 0.05, local_recoding=True
        )


@pytest.mark.parametrize("records", [0.002, 0.01, 0.05])
def test_records_budget_is_arx_s_optimize_iterative_fast(records):
    """budget='records' (ARX's optimizeIterativeFast): each step's suppression limit is
    1 − min(1, records·n / rows left), ARX's ``1 − relativeRecords``; each kept step releases at least
    records·n rows; the written release stays 5-anonymous (pycanon) and never loses to the global one."""
    df = read_table(SUBSET)
    hs = read_hierarchies(DATA, columns=set(QIS))
    table = EncodedTable.encode(df, Schema(QIS, []), hs)
    models = build_models(k=5)
    res = local_recoding(table, models, 0.05, budget="records", records=records)
    n = len(df)
    assert res.iterations and res.recovered_rows > 0
    for run in res.iterations:
        assert run["suppression_limit"] == pytest.approx(1.0 - min(1.0, records * n / run["rows"]))
        if run["recovered"] and not run.get("discarded"):
            assert run["recovered"] >= min(run["rows"], records * n)
    assert res.report(QIS)["records"] == records and res.report(QIS)["budget"] == "records"
    rl = res.row_levels(table.heights)
    written = release_local(table, rl, res.suppressed, suppressed_rows="star").astype(str).reset_index(drop=True)
    assert pycanon.k_anonymity(written, QIS) >= 5
    glob = anonymize_table(table, algorithm="flash", models=models, max_suppression=0.05)
    lo, hi = boxes_from_row_levels(table, rl)
    assert M.ncp(table, lo, hi, res.suppressed)["ncp"] <= glob.metrics["ncp"]["ncp"] + 1e-12


def test_records_budget_errors():
    df = read_table(SUBSET)
    hs = read_hierarchies(DATA, columns=set(QIS))
    table = EncodedTable.encode(df, Schema(QIS, []), hs)
    for bad in (None, 0.0, 1.5):
        with pytest.raises(AnonymizeError, match="share of records"):
            local_recoding(table, build_models(k=5), 0.05, budget="records", records=bad)
    with pytest.raises(AnonymizeError, match="needs the budget 'records'"):
        local_recoding(table, build_models(k=5), 0.05, records=0.1)
    with pytest.raises(AnonymizeError, match="give local recoding too"):
        anonymize_table(df, Schema(QIS, []), hs, "flash", build_models(k=5), 0.05, local_records=0.1)


def test_iteration_limit():
    df = read_table(SUBSET)
    hs = read_hierarchies(DATA, columns=set(QIS))
    table = EncodedTable.encode(df, Schema(QIS, []), hs)
    res = local_recoding(table, build_models(k=5), 0.05, budget="all", max_iterations=1)
    assert len(res.iterations) == 1 and res.stopped == "iteration limit" and res.recovered_rows > 0


# ---------------------------------------------------------------- ppdm anonymize on Adult
def _cli(capsys, out, rep, *extra):
    code = main(
        [
            "anonymize",
            str(SUBSET),
            "-o",
            str(out),
            "--qi",
            ",".join(QIS),
            "--hierarchies",
            str(DATA),
            "--k",
            "5",
            "--max-suppression",
            "0.05",
            "--report",
            str(rep),
            "--queries",
            "0",
            "--quiet",
            *map(str, extra),
        ]
    )
    _, err = capsys.readouterr()
    return code, err


@pytest.mark.parametrize("algorithm", ["flash", "incognito", "samarati"])
@pytest.mark.parametrize("l_div", [False, True])
def test_adult_written_release_is_private_and_recovers_rows(capsys, tmp_path, algorithm, l_div):
    extra = ["--l", "3", "--sensitive", "occupation"] if l_div else []
    sens = ["occupation"] if l_div else []
    runs = {}
    for local in (False, True):
        out, rep = tmp_path / f"out{local}.csv", tmp_path / f"rep{local}.json"
        flags = ["--local-recoding"] if local else []
        code, err = _cli(capsys, out, rep, "--algorithm", algorithm, *extra, *flags)
        assert code == 0, err
        written = pd.read_csv(out, sep=";", dtype=str).reset_index(drop=True)
        runs[local] = (written, json.loads(rep.read_text()))
    written, r = runs[True]
    _, g = runs[False]
    assert len(written) == 3016
    k = pycanon.k_anonymity(written, QIS)
    assert k >= 5 and r["metrics"]["achieved"]["k"] == k
    assert r["metrics"]["achieved"]["classes"] == len(written[QIS].drop_duplicates())
    if l_div:
        l_got = pycanon.l_diversity(written, QIS, sens)
        assert l_got >= 3 and r["metrics"]["achieved"]["sensitive_attributes"]["occupation"]["l_distinct"] == l_got
    lr = r["local_recoding"]
    assert lr["suppressed_before"] == g["metrics"]["suppressed_rows"] > 0
    assert lr["recovered_rows"] > 0 and lr["suppressed_after"] < lr["suppressed_before"]
    assert r["metrics"]["suppressed_rows"] == lr["suppressed_after"] == int((written[QIS] == "*").all(axis=1).sum())
    assert r["metrics"]["ncp"]["ncp"] < g["metrics"]["ncp"]["ncp"]
    assert lr["nodes"][0]["levels"] == g["levels"] and len(lr["nodes"]) >= 2
    # rows at different nodes: some QI is written at two levels (overlapping cells, separate classes)
    assert any(len({n["levels"][c] for n in lr["nodes"]}) > 1 for c in QIS)
    print(
        f"\nAdult subset, {algorithm}, k=5{', l=3' if l_div else ''}, 5% suppression: suppressed "
        f"{lr['suppressed_before']} -> {lr['suppressed_after']} (recovered {lr['recovered_rows']}), NCP "
        f"{g['metrics']['ncp']['ncp']:.4f} -> {r['metrics']['ncp']['ncp']:.4f}, search "
        f"{g['timings']['search']:.2f} s -> {r['timings']['search']:.2f} s, {lr['iterations']} iteration(s)"
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--algorithm", "mondrian", "--local-recoding"], "--local-recoding runs on the full-domain searches"),
        (["--algorithm", "datafly", "--local-recoding"], "--local-recoding runs on the full-domain searches"),
        (["--algorithm", "flash", "--local-iterations", "3"], "--local-iterations needs --local-recoding"),
        (
            ["--algorithm", "flash", "--local-recoding", "--engine", "duckdb"],
            "--local-recoding needs the rows in memory",
        ),
        (["--algorithm", "flash", "--local-recoding", "--local-iterations", "0"], None),
        (["--algorithm", "flash", "--local-records", "0.1"], "--local-records needs --local-recoding"),
        (["--algorithm", "flash", "--local-recoding", "--local-records", "0"], "--local-records must be a fraction"),
        (["--algorithm", "flash", "--local-recoding", "--local-records", "1.5"], "--local-records must be a fraction"),
    ],
)
def test_cli_refusals(capsys, tmp_path, argv, message):
    out = tmp_path / "out.csv"
    if message is None:  # argparse: a positive integer
        with pytest.raises(SystemExit) as e:
            _cli(capsys, out, tmp_path / "r.json", *argv)
        assert e.value.code == 2
        return
    code, err = _cli(capsys, out, tmp_path / "r.json", *argv)
    assert code == 2 and err.startswith("ppdm: error: ") and message in err and err.count("\n") == 1
    assert not out.exists()


def test_cli_iteration_limit_in_report(capsys, tmp_path):
    rep = tmp_path / "r.json"
    code, err = _cli(
        capsys, tmp_path / "o.csv", rep, "--algorithm", "flash", "--local-recoding", "--local-iterations", 1
    )
    assert code == 0, err
    lr = json.loads(rep.read_text())["local_recoding"]
    assert lr["iterations"] <= 1 and lr["max_iterations"] == 1
    assert {"iterations", "recovered_rows", "suppressed_before", "suppressed_after", "nodes"} <= set(lr)


def test_cli_local_records_written_release(capsys, tmp_path):
    """``--local-records`` on the CLI: the report names the budget and share, pycanon measures k ≥ 5 on
    the written file, and rows are recovered."""
    out, rep = tmp_path / "o.csv", tmp_path / "r.json"
    code, err = _cli(capsys, out, rep, "--algorithm", "flash", "--local-recoding", "--local-records", "0.005")
    assert code == 0, err
    lr = json.loads(rep.read_text())["local_recoding"]
    assert lr["budget"] == "records" and lr["records"] == 0.005 and lr["recovered_rows"] > 0
    written = pd.read_csv(out, sep=";", dtype=str).reset_index(drop=True)
    assert pycanon.k_anonymity(written, QIS) >= 5
