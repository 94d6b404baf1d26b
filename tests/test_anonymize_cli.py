"""End-to-end tests of ``ppdm anonymize`` (in process through ``parties.cli.main``, once as a subprocess).

The release is re-measured by pycanon (k, l, t) and by ``ppdm check``; bad input must give one
line ``ppdm: error: ...``, a non-zero exit and no output file (an existing one stays untouched).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from pycanon import anonymity as pycanon

from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
SUBSET = DATA / "adult_subset.csv"
QIS = "age,sex,race,marital-status,education,native-country,workclass,occupation"
QI_LIST = QIS.split(",")


def run(capsys, *argv):
    code = main(["anonymize", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def fresh(path, sep=";"):
    return pd.read_csv(path, sep=sep, dtype=str).reset_index(drop=True)


@pytest.mark.parametrize("algorithm", ["samarati", "incognito", "flash", "datafly", "mondrian"])
def test_anonymize_report_and_release(capsys, tmp_path, algorithm):
    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    code, so, se = run(
        capsys,
        SUBSET,
        "-o",
        out,
        "--qi",
        QIS,
        "--sensitive",
        "salary-class",
        "--hierarchies",
        DATA,
        "--algorithm",
        algorithm,
        "--k",
        4,
        "--l",
        2,
        "--max-suppression",
        0.05,
        "--report",
        rep,
        "--queries",
        20,
    )
    assert code == 0, se
    assert so.startswith(f"wrote {out}")
    df = fresh(out)
    r = json.loads(rep.read_text())
    assert r["algorithm"] == algorithm
    assert {"parameters", "levels", "metrics", "timings", "search"} <= set(r)
    assert r["parameters"]["models"] == [
        {"model": "k-anonymity", "k": 4},
        {"model": "distinct-l-diversity", "l": 2, "attribute": None},
    ]
    for key in ("ncp", "dm", "cdm", "c_avg", "risk", "query_error", "il_total", "achieved", "suppressed_rows"):
        assert key in r["metrics"]
    assert {"encode", "search", "recode", "metrics", "total", "write"} <= set(r["timings"])
    if algorithm == "mondrian":
        assert r["levels"] is None and r["metrics"]["suppressed_rows"] == 0
    else:
        assert set(r["levels"]) == set(QI_LIST) and r["chosen_node"]["levels"] == [r["levels"][q] for q in QI_LIST]
    assert len(df) == 3016
    kept = df[~(df[QI_LIST] == "*").all(axis=1)].reset_index(drop=True)
    assert len(kept) == 3016 - r["metrics"]["suppressed_rows"]
    assert pycanon.k_anonymity(kept, QI_LIST) >= 4
    assert pycanon.l_diversity(kept, QI_LIST, ["salary-class"]) >= 2
    assert r["metrics"]["achieved"]["k"] == pycanon.k_anonymity(kept, QI_LIST)


def test_t_closeness_mean_output_and_check_agree(capsys, tmp_path):
    out = tmp_path / "t.csv"
    code, so, se = run(
        capsys,
        SUBSET,
        "-o",
        out,
        "--qi",
        QIS,
        "--sensitive",
        "salary-class",
        "--hierarchies",
        DATA,
        "--algorithm",
        "mondrian",
        "--k",
        3,
        "--t",
        0.2,
        "--t-distance",
        "emd",
        "--numeric-output",
        "mean",
        "--mondrian-mode",
        "relaxed",
        "--out-sep",
        ",",
        "--quiet",
    )
    assert code == 0, se
    assert so == ""
    df = fresh(out, sep=",")
    assert pycanon.t_closeness(df, QI_LIST, ["salary-class"]) <= 0.2 + 1e-9
    float(df["age"].iloc[0])  # class means are numbers
    code = main(["check", str(out), "--qi", QIS, "--sensitive", "salary-class", "--json"])
    rep = json.loads(capsys.readouterr()[0])
    assert code == 0 and rep["k"] >= 3 and rep["sensitive_attributes"]["salary-class"]["t"]["emd"] <= 0.2 + 1e-9


def test_hierarchy_pairs_and_auto_hierarchies(capsys, tmp_path):
    out = tmp_path / "o.csv"
    code, so, se = run(
        capsys,
        SUBSET,
        "-o",
        out,
        "--qi",
        "age,sex,education",
        "--hierarchy",
        f"education={DATA / 'adult_hierarchy_education.csv'}",
        "--algorithm",
        "incognito",
        "--k",
        5,
        "--id",
        "native-country",
        "--quiet",
    )
    assert code == 0, se
    df = fresh(out)
    assert "native-country" not in df.columns
    assert pycanon.k_anonymity(df, ["age", "sex", "education"]) >= 5


# ---------------------------------------------------------------- bad input
def _bad(capsys, tmp_path, *argv, existing=False, match=None):
    out = tmp_path / "out.csv"
    if existing:
        out.write_text("keep me\n")
    code, so, se = run(capsys, *argv[:1], "-o", out, *argv[1:])
    assert code != 0
    lines = [ln for ln in se.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ppdm: error: "), se
    if match:
        assert match in lines[0], lines[0]
    if existing:
        assert out.read_text() == "keep me\n"
    else:
        assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.csv")]  # no temp files left
    return lines[0]


BASE = ["--qi", QIS, "--sensitive", "salary-class", "--hierarchies", str(DATA), "--algorithm", "flash"]


@pytest.mark.parametrize("existing", [False, True])
def test_k_larger_than_table(capsys, tmp_path, existing):
    _bad(capsys, tmp_path, SUBSET, *BASE, "--k", 5000, existing=existing, match="larger than the table")


def test_unknown_column(capsys, tmp_path):
    _bad(
        capsys, tmp_path, SUBSET, "--qi", "age,nope", "--algorithm", "mondrian", "--k", 2, match="unknown column 'nope'"
    )


def test_value_missing_from_hierarchy(capsys, tmp_path):
    h = tmp_path / "edu.csv"
    rows = [
        ln
        for ln in (DATA / "adult_hierarchy_education.csv").read_text().splitlines()
        if not ln.startswith("Bachelors;")
    ]
    h.write_text("\n".join(rows) + "\n")
    msg = _bad(
        capsys,
        tmp_path,
        SUBSET,
        "--qi",
        "age,education",
        "--hierarchy",
        f"education={h}",
        "--algorithm",
        "samarati",
        "--k",
        2,
        existing=True,
    )
    assert "education" in msg and "Bachelors" in msg


def test_nan_in_qi(capsys, tmp_path):
    src = tmp_path / "nan.csv"
    df = pd.read_csv(SUBSET, sep=";")
    df.loc[7, "age"] = None
    df.to_csv(src, sep=";", index=False)
    _bad(capsys, tmp_path, src, "--qi", "age,sex", "--algorithm", "mondrian", "--k", 2, match="missing value")


@pytest.mark.parametrize("content", ["", "sex;age\n"])
def test_empty_file(capsys, tmp_path, content):
    src = tmp_path / "empty.csv"
    src.write_text(content)
    _bad(capsys, tmp_path, src, "--qi", "age", "--algorithm", "datafly", "--k", 2)


def test_unreadable_hierarchy(capsys, tmp_path):
    binary = tmp_path / "bin.csv"
    binary.write_bytes(b"\x00\x01\x02garbage")
    _bad(
        capsys,
        tmp_path,
        SUBSET,
        "--qi",
        "age,sex",
        "--hierarchy",
        f"sex={binary}",
        "--algorithm",
        "incognito",
        "--k",
        2,
        match="hierarchy",
    )
    _bad(
        capsys,
        tmp_path,
        SUBSET,
        "--qi",
        "age,sex",
        "--hierarchy",
        f"sex={tmp_path / 'missing.csv'}",
        "--algorithm",
        "incognito",
        "--k",
        2,
        match="not found",
    )
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("Male;*\nFemale\n")
    _bad(
        capsys,
        tmp_path,
        SUBSET,
        "--qi",
        "age,sex",
        "--hierarchy",
        f"sex={ragged}",
        "--algorithm",
        "incognito",
        "--k",
        2,
        match="columns",
    )


def test_unsatisfiable_and_bad_options(capsys, tmp_path):
    _bad(
        capsys, tmp_path, SUBSET, *BASE, "--k", 2, "--l", 3, match="has only 2 distinct value"
    )  # the limit, not a generic message (issue 8)
    _bad(capsys, tmp_path, SUBSET, *BASE, "--k", 2, "--l", 2, "--l-variant", "recursive", match="--c")
    _bad(capsys, tmp_path, SUBSET, "--qi", "age", "--algorithm", "mondrian", "--k", 2, "--t", 0.1, match="sensitive")


def test_missing_output_directory(capsys, tmp_path):
    code, so, se = run(capsys, SUBSET, "-o", tmp_path / "no" / "out.csv", *BASE, "--k", 2)
    assert code == 2 and se.startswith("ppdm: error: output directory does not exist")


def test_subprocess_exit_codes(tmp_path):
    exe = [sys.executable, "-m", "parties.cli"]
    out = tmp_path / "o.csv"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    ok = subprocess.run(
        exe
        + [
            "anonymize",
            str(SUBSET),
            "-o",
            str(out),
            "--qi",
            "age,sex,race",
            "--algorithm",
            "flash",
            "--k",
            "3",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert ok.returncode == 0, ok.stderr
    assert out.exists()
    bad = subprocess.run(
        exe
        + [
            "anonymize",
            str(SUBSET),
            "-o",
            str(tmp_path / "x.csv"),
            "--qi",
            "age",
            "--algorithm",
            "flash",
            "--k",
            "99999",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "larger than the table" in bad.stderr
    assert not (tmp_path / "x.csv").exists()


def test_two_releases_cannot_be_joined_row_by_row(capsys, tmp_path):
    """Adversary: two releases of the same table written in the input's order can be paired by row
    position (each pair = one person, generalized twice: the intersection of the two cells). The
    default is a fresh random order; --keep-order keeps the input's order when asked."""
    df = pd.read_csv(SUBSET, sep=None, engine="python")
    df["rowid"] = range(len(df))  # insensitive: released as it is, so it shows where each row went
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    outs = []
    for k in (5, 10):
        out = tmp_path / f"k{k}.csv"
        code, _, err = run(capsys, src, "-o", out, *BASE, "--k", k, "--max-suppression", 0.02, "--queries", 0)
        assert code == 0, err
        outs.append(pd.read_csv(out)["rowid"].to_numpy())
    n = len(df)
    assert sorted(outs[0].tolist()) == list(range(n))  # every row released once
    # pairing the two releases by position finds the same person about once (1 expected), not n times
    assert (outs[0] == outs[1]).sum() <= 10
    assert (outs[0] == range(n)).sum() <= 10
    out = tmp_path / "kept.csv"
    code, _, err = run(capsys, src, "-o", out, *BASE, "--k", 5, "--keep-order", "--queries", 0)
    assert code == 0, err
    assert pd.read_csv(out)["rowid"].tolist() == list(range(n))
