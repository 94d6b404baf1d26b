"""End-to-end tests of ``ppdm check`` (in process through ``parties.cli.main`` and once as a subprocess)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pycanon import anonymity as pycanon

from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
SUBSET = DATA / "adult_subset.csv"
FULL = ROOT.parent / "shared" / "data" / "adult" / "adult.csv"  # beside the clone in CI
QIS = "age,sex,race,marital-status,education,native-country,workclass,occupation"


def run(capsys, *argv):
    code = main(["check", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_check_json_matches_pycanon(capsys, tmp_path):
    # a released version: age in 10-year bands, country -> continent, marital-status -> '*'
    df = pd.read_csv(SUBSET, sep=";")
    df["age"] = (df["age"] // 10 * 10).astype(str) + "-" + (df["age"] // 10 * 10 + 9).astype(str)
    df["marital-status"] = "*"
    df.index = np.arange(len(df))[::-1] * 7  # an index pycanon would trip over; we must not
    rel = tmp_path / "rel.csv"
    df.to_csv(rel, sep=",", index=False)
    code, out, err = run(
        capsys,
        rel,
        "--qi",
        "age,sex,race,marital-status",
        "--sensitive",
        "salary-class,occupation",
        "--json",
        "--c",
        "2",
    )
    assert code == 0, err
    rep = json.loads(out)
    fresh = df.reset_index(drop=True)
    qi = ["age", "sex", "race", "marital-status"]
    assert rep["k"] == pycanon.k_anonymity(fresh, qi)
    for sa in ["salary-class", "occupation"]:
        a = rep["sensitive_attributes"][sa]
        assert a["l_distinct"] == pycanon.l_diversity(fresh, qi, [sa])
        assert a["l_entropy_floor"] == pycanon.entropy_l_diversity(fresh, qi, [sa])
        assert math.isclose(a["t"]["emd"], pycanon.t_closeness(fresh, qi, [sa]), rel_tol=1e-9)
        assert a["recursive"]["l"] == a["l_distinct"] and "l_at_c" in a["recursive"]
    assert rep["rows"] == len(df) and rep["risk"]["prosecutor_max"] == 1 / rep["k"]


def test_check_table_output_and_hierarchies(capsys):
    code, out, err = run(capsys, SUBSET, "--qi", QIS, "--sensitive", "salary-class", "--hierarchies", DATA)
    assert code == 0, err
    assert "k = 1" in out and "l distinct = 1" in out and "EMD(hierarchical)" in out and "NCP" in out
    code, out, _ = run(
        capsys,
        SUBSET,
        "--qi",
        "sex,race",
        "--sensitive",
        "education",
        "--hierarchy",
        f"education={DATA / 'adult_hierarchy_education.csv'}",
        "--json",
    )
    rep = json.loads(out)
    t = rep["sensitive_attributes"]["education"]["t"]
    assert code == 0 and 0 <= t["emd_hierarchical"] <= t["emd_equal"] + 1e-12


def test_check_population_journalist_risk(capsys, tmp_path):
    df = pd.read_csv(SUBSET, sep=";")
    sample = tmp_path / "sample.csv"
    df.iloc[:500].to_csv(sample, index=False)
    code, out, err = run(capsys, sample, "--qi", "sex,race", "--population", SUBSET, "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["risk"]["journalist_max"] <= rep["risk"]["prosecutor_max"]
    assert rep["population_rows"] == len(df)


@pytest.mark.skipif(not FULL.exists(), reason="full Adult not present")
def test_check_full_adult_is_fast(capsys):
    code, out, err = run(capsys, FULL, "--qi", QIS, "--sensitive", "salary-class", "--hierarchies", DATA, "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["rows"] == 30162 and rep["k"] == 1
    assert rep["seconds"] < 1.0  # measured ~0.1 s on the 2-core CI machine


@pytest.mark.parametrize(
    "case", ["unknown_column", "empty_file", "nan_in_qi", "bad_hierarchy", "missing_file", "value_not_in_hierarchy"]
)
def test_check_bad_input_one_line(capsys, tmp_path, case):
    args = [SUBSET, "--qi", "age,sex", "--sensitive", "salary-class"]
    if case == "unknown_column":
        args[2] = "age,nope"
        expect = "unknown column 'nope'"
    elif case == "empty_file":
        p = tmp_path / "empty.csv"
        p.write_text("")
        args[0] = p
        expect = "empty"
    elif case == "nan_in_qi":
        p = tmp_path / "nan.csv"
        p.write_text("age;sex;salary-class\n30;Male;<=50K\n;Female;>50K\n")
        args[0] = p
        expect = "column 'age' has 1 missing"
    elif case == "bad_hierarchy":
        h = tmp_path / "h.csv"
        h.write_text("Male;*\nFemale\n")
        args += ["--hierarchy", f"sex={h}"]
        expect = "row 2 has 1 columns"
    elif case == "missing_file":
        args[0] = tmp_path / "nope.csv"
        expect = "not found"
    else:
        h = tmp_path / "h.csv"
        h.write_text("Male;*\n")
        args += ["--hierarchy", f"sex={h}"]
        expect = "value 'Female' not in hierarchy"
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppdm: error:") and expect in lines[0], err


def test_check_subprocess():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "parties.cli",
            "check",
            str(SUBSET),
            "--qi",
            "sex,race",
            "--sensitive",
            "salary-class",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["rows"] == 3016
    p = subprocess.run(
        [sys.executable, "-m", "parties.cli", "check", str(SUBSET), "--qi", "nope"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "unknown column" in p.stderr
