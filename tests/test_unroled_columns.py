"""Columns given no role go out unchanged: ``ppdm anonymize`` and ``ppdm publish`` say so, and why it matters
(pycanon re-measures a release with such a column counted as a quasi-identifier)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from pycanon import anonymity

from parties.cli import main

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "anonymize" / "data"
QIS = "age,sex,race,marital-status,education,workclass"


def test_publish_warns_of_a_column_with_no_role_and_pycanon_shows_the_linkage_it_allows(tmp_path, capsys):
    out, rep = tmp_path / "release.csv", tmp_path / "report.json"
    argv = ["publish", str(DATA / "adult_subset.csv"), "-o", str(out), "--policy", str(REPO / "examples" / "policy.toml"),
            "--user", "partner", "--purpose", "research", "--qi", QIS, "--sensitive", "occupation",
            "--hierarchies", str(DATA), "--report", str(rep), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "published unchanged with no role: native-country, salary-class" in err
    assert json.loads(rep.read_text())["unroled_columns"] == ["native-country", "salary-class"]
    df = pd.read_csv(out, sep=None, engine="python")
    qis = QIS.split(",")
    released = df[~(df[qis] == "*").all(axis=1)]  # the suppressed rows aside
    k = anonymity.k_anonymity(released, qis)
    k_linked = anonymity.k_anonymity(released, [*qis, "native-country"])
    assert k >= 2 and k_linked < k  # the unchanged column breaks the classes the report speaks of


def test_anonymize_is_silent_when_every_column_has_a_role(tmp_path, capsys):
    out, rep = tmp_path / "out.csv", tmp_path / "r.json"
    base = ["anonymize", str(DATA / "adult_subset.csv"), "-o", str(out), "--qi", QIS, "--sensitive", "occupation",
            "--hierarchies", str(DATA), "--algorithm", "flash", "--k", "5", "--max-suppression", "0.05",
            "--report", str(rep)]  # fmt: skip
    assert main([*base, "--insensitive", "native-country,salary-class"]) == 0
    assert "no role" not in capsys.readouterr().err
    assert json.loads(rep.read_text())["unroled_columns"] == []
    assert main([*base, "--id", "native-country", "--insensitive", "salary-class"]) == 0
    assert "no role" not in capsys.readouterr().err
    assert main(base) == 0
    assert "published unchanged with no role: native-country, salary-class" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["duckdb"])
def test_the_engine_path_warns_too(tmp_path, capsys, engine):
    out = tmp_path / "out.csv"
    argv = ["anonymize", str(DATA / "adult_subset.csv"), "-o", str(out), "--qi", QIS, "--sensitive", "occupation",
            "--hierarchies", str(DATA), "--algorithm", "flash", "--k", "5", "--engine", engine]  # fmt: skip
    assert main(argv) == 0
    assert "published unchanged with no role: native-country, salary-class" in capsys.readouterr().err
