"""The attack-resistance ratio (Xu & Guo 2021, Fig. 6) and ``ppdm tune --sweep-qi``.

Oracles: a pandas groupby on the table as written (class sizes, distinct sensitive values), and the
attacks themselves (:func:`anonymize.attacks.run_attacks`): everyone in a class flagged homogeneous is a
victim of the homogeneity attack when the adversary's table is the input.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymize.attacks import run_attacks
from anonymize.publish.io import read_hierarchies
from anonymize.publish.metrics.attack_resistance import attack_resistance, frame_attack_resistance
from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
SUBSET = DATA / "adult_subset.csv"
QIS = ["age", "sex", "race", "marital-status", "education"]


def oracle(df: pd.DataFrame, qis, sensitive, rule_out=1) -> dict:
    g = df.astype(str).groupby(list(qis), dropna=False)
    sizes = g.size()
    link = sizes == 1
    out = {"classes": len(sizes), "linkage": int(link.sum())}
    bad = link.copy()
    if sensitive:
        d = pd.concat([g[s].nunique() for s in sensitive], axis=1).min(axis=1)
        out["homogeneity"] = int((d <= 1).sum())
        out["background_knowledge"] = int((d <= rule_out + 1).sum())
        bad |= d <= rule_out + 1
    out["vulnerable"] = int(bad.sum())
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=40
    ),
    st.integers(0, 3),
)
def test_ratio_matches_a_pandas_groupby(rows, rule_out):
    df = pd.DataFrame(rows, columns=["a", "b", "s", "u"]).astype(str)
    for sens in ([], ["s"], ["s", "u"]):
        got = frame_attack_resistance(df, ["a", "b"], sens, rule_out=rule_out)
        want = oracle(df, ["a", "b"], sens, rule_out)
        assert got["classes"] == want["classes"] and got["vulnerable"] == want["vulnerable"]
        assert got["share_vulnerable"] == pytest.approx(want["vulnerable"] / want["classes"])
        for a, v in got["by_attack"].items():
            assert v["classes"] == want[a]
        assert set(got["by_attack"]) == (
            {"linkage"} if not sens else {"linkage", "homogeneity", "background_knowledge"}
        )


def test_empty_classes_are_ignored_and_bad_rule_out_refused():
    ar = attack_resistance(np.array([0, 1, 3]), [np.array([0, 1, 3])])
    assert ar["classes"] == 2 and ar["vulnerable"] == 1
    with pytest.raises(ValueError):
        attack_resistance(np.array([1]), [], rule_out=-1)


def anonymize(tmp_path, qis, *model) -> Path:
    out = tmp_path / "rel.csv"
    args = ["anonymize", str(SUBSET), "-o", str(out), "--qi", ",".join(qis), "--sensitive", "occupation"]
    args += ["--hierarchies", str(DATA), "--algorithm", "flash", "--quiet", "--queries", "0", *model]
    rest = [c for c in pd.read_csv(SUBSET, sep=";", nrows=1).columns if c not in qis and c != "occupation"]
    assert main([*args, "--insensitive", ",".join(rest)]) == 0
    return out


def test_flagged_classes_are_the_homogeneity_attacks_victims(tmp_path):
    out = anonymize(tmp_path, QIS, "--k", "2")  # no suppression: each person matches exactly their class
    rel = pd.read_csv(out, sep=";", dtype=str)
    ext = pd.read_csv(SUBSET, sep=";", dtype=str)
    ar = frame_attack_resistance(rel, QIS, ["occupation"])
    hs = read_hierarchies(str(DATA), [], columns=set(QIS))
    res = {r.name: r for r in run_attacks(rel, ext, QIS, ["occupation"], hs)}
    g = rel.groupby(QIS)
    homog_rows = int(g["occupation"].transform("nunique").eq(1).sum())
    assert ar["by_attack"]["homogeneity"]["classes"] > 0
    assert res["homogeneity"].victims == homog_rows
    bk_rows = int(g["occupation"].transform("nunique").le(2).sum())
    assert res["background_knowledge"].victims == bk_rows


def test_check_and_attack_report_attack_resistance(capsys, tmp_path):
    out = anonymize(tmp_path, QIS, "--k", "2")
    rel = pd.read_csv(out, sep=";", dtype=str)
    want = oracle(rel, QIS, ["occupation"])
    assert main(["attack", str(out), "--external", str(SUBSET), "--qi", ",".join(QIS), "--sensitive", "occupation",
                 "--hierarchies", str(DATA), "--json"]) == 0  # fmt: skip
    ar = json.loads(capsys.readouterr()[0])["attack_resistance"]
    assert ar["vulnerable"] == want["vulnerable"] and ar["classes"] == want["classes"]
    assert main(["check", str(out), "--qi", ",".join(QIS), "--sensitive", "occupation", "--json"]) == 0
    ar = json.loads(capsys.readouterr()[0])["attack_resistance"]
    assert ar["vulnerable"] == want["vulnerable"] and ar["by_attack"]["homogeneity"]["classes"] == want["homogeneity"]
    assert main(["check", str(out), "--qi", ",".join(QIS), "--sensitive", "occupation"]) == 0
    assert "attack resistance:" in capsys.readouterr()[0]


def test_sweep_qi_rows_are_the_releases_ppdm_anonymize_writes(capsys, tmp_path):
    args = ["tune", str(SUBSET), "--qi", ",".join(QIS), "--sensitive", "occupation", "--hierarchies", str(DATA)]
    args += ["--pmax", "0.5", "--k-range", "2:12", "--sweep-qi", "--json", "--quiet"]
    assert main(args) == 0
    rep = json.loads(capsys.readouterr()[0])
    rows = rep["sweep_qi"]
    models = sorted({r["model"] for r in rows})
    assert "k-anonymity" in models
    assert [r["n_qis"] for r in rows if r["model"] == "k-anonymity"] == list(range(1, len(QIS) + 1))
    # one row re-made with ppdm anonymize on the prefix, measured by pandas on the written file
    r = next(r for r in rows if r["model"] == "k-anonymity" and r["n_qis"] == 3)
    out = anonymize(tmp_path, r["qis"], "--k", str(r["parameters"]["k"]), "--report", str(tmp_path / "rep.json"))
    written = pd.read_csv(out, sep=";", dtype=str)
    want = oracle(written, r["qis"], ["occupation"])
    assert r["classes"] == want["classes"] and r["attack_resistance"]["vulnerable"] == want["vulnerable"]
    assert r["ncp"] == pytest.approx(json.loads((tmp_path / "rep.json").read_text())["metrics"]["ncp"]["ncp"])


def test_sweep_qi_plot_is_written_next_to_the_tune_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib", reason="the plots extra: pip install 'ppdm[plots]'")
    plot = tmp_path / "t.png"
    args = ["tune", str(SUBSET), "--qi", "age,sex,race", "--sensitive", "occupation", "--hierarchies", str(DATA)]
    assert main([*args, "--pmax", "0.5", "--k-range", "2:6", "--sweep-qi", "--plot", str(plot), "--quiet"]) == 0
    so = capsys.readouterr()[0]
    assert "adding quasi-identifiers one at a time" in so
    for p in (plot, tmp_path / "t.sweep-qi.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {p}" in so


def test_check_on_duckdb_gives_the_same_ratio_as_in_memory(capsys, tmp_path):
    pytest.importorskip("duckdb", reason="the DuckDB engine: pip install duckdb")
    out = anonymize(tmp_path, QIS, "--k", "2")
    got = {}
    for engine in ("memory", "duckdb"):
        args = ["check", str(out), "--qi", ",".join(QIS), "--sensitive", "occupation", "--json", "--engine", engine]
        assert main(args) == 0
        got[engine] = json.loads(capsys.readouterr()[0])["attack_resistance"]
    assert got["memory"] == got["duckdb"] and got["memory"]["vulnerable"] > 0
