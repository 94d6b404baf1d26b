"""``ppdm anonymize`` with the clustering, bucketization and synthetic algorithms: the same options and
report, the extra tables next to OUT, one-line errors and nothing left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from pycanon import anonymity as pycanon

from parties.cli import main
from parties.cli.anonymize import table_path, write_tables

DATA = Path(__file__).resolve().parents[1] / "anonymize" / "data"
QIS = "age,sex,race,marital-status,education,native-country,workclass"


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    p = tmp_path_factory.mktemp("in") / "adult600.csv"
    pd.read_csv(DATA / "adult_subset.csv", sep=";").head(600).to_csv(p, sep=";", index=False)
    return p


def run(capsys, *argv):
    code = main(["anonymize", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "alg,flags",
    [
        ("gaa-cp", ["--k", 5, "--seed", 2]),
        ("kaca", ["--k", 5]),
        ("mdav", ["--k", 5]),
        ("lca-fc", ["--k", 4, "--l", 3]),
        ("lca-rc", ["--l", 3]),
    ],
)
def test_clustering_algorithms_through_the_cli(capsys, tmp_path, small, alg, flags):
    out, rep = tmp_path / "rel.csv", tmp_path / "rep.json"
    code, so, se = run(
        capsys, small, "-o", out, "--qi", QIS, "--sensitive", "occupation", "--hierarchies", DATA,
        "--algorithm", alg, *flags, "--report", rep, "--queries", 10,
    )  # fmt: skip
    assert code == 0, se
    assert so.startswith(f"wrote {out}: {alg}:")
    r = json.loads(rep.read_text())
    assert r["algorithm"] == alg and r["kind"] == "clustering"
    assert {"ncp", "il_total", "achieved", "dm", "cdm"} <= set(r["metrics"])
    rel = pd.read_csv(out, sep=";", dtype=str)
    qis = QIS.split(",")
    k = flags[flags.index("--k") + 1] if "--k" in flags else 1
    assert pycanon.k_anonymity(rel, qis) >= k and r["metrics"]["achieved"]["k"] >= k
    if "--l" in flags:
        assert pycanon.l_diversity(rel, qis, ["occupation"]) >= 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rel.csv", "rep.json"]


def test_anatomy_writes_qi_and_sensitive_tables(capsys, tmp_path, small):
    out, rep = tmp_path / "rel.csv", tmp_path / "rep.json"
    code, so, se = run(
        capsys, small, "-o", out, "--qi", QIS, "--sensitive", "occupation", "--algorithm", "anatomy",
        "--l", 4, "--report", rep,
    )  # fmt: skip
    assert code == 0, se
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rel.csv", "rel.sensitive.csv", "rep.json"]
    qi = pd.read_csv(out, sep=";")
    sens = pd.read_csv(tmp_path / "rel.sensitive.csv", sep=";")
    assert list(sens.columns) == ["group_id", "occupation", "count"]
    assert "occupation" not in qi.columns and len(qi) == 600
    r = json.loads(rep.read_text())
    assert r["kind"] == "bucketization"
    assert r["outputs"] == {"qi": str(out), "sensitive": str(tmp_path / "rel.sensitive.csv")}
    a = r["metrics"]["achieved"]["sensitive_attributes"]["occupation"]
    assert a["max_posterior"] <= 0.25 and a["posterior_bound"] == 0.25
    size = qi.groupby("group_id").size()
    assert (sens.groupby("group_id")["count"].max() / size).max() <= 0.25


def test_msal_writes_one_table_per_sensitive_attribute(capsys, tmp_path, small):
    out = tmp_path / "rel.csv"
    code, so, se = run(
        capsys, small, "-o", out, "--qi", "age,sex,race", "--sensitive", "occupation,education",
        "--algorithm", "msal", "--l", 3, "--quiet",
    )  # fmt: skip
    assert code == 0, se
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rel.csv", "rel.education.csv", "rel.occupation.csv"]


def test_condensation_through_the_cli(capsys, tmp_path, small):
    out, rep = tmp_path / "syn.csv", tmp_path / "rep.json"
    code, so, se = run(
        capsys, small, "-o", out, "--qi", "age", "--algorithm", "condensation", "--k", 10,
        "--condensation", "dynamic", "--report", rep,
    )  # fmt: skip
    assert code == 0, se
    r = json.loads(rep.read_text())
    assert r["kind"] == "synthetic" and r["metrics"]["achieved"]["group_size_min"] >= 10
    assert r["parameters"]["options"] == {"variant": "dynamic"}
    assert list(pd.read_csv(out, sep=";").columns) == ["age"]


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["--qi", QIS, "--algorithm", "gaa-cp", "--k", 601], "k = 601 is larger than the table"),
        (["--qi", "age", "--sensitive", "occupation", "--algorithm", "anatomy", "--l", 20], "only 13 distinct"),
        (["--qi", "age", "--sensitive", "occupation", "--algorithm", "anatomy", "--k", 3, "--l", 2], "cannot honour k"),
        (["--qi", "age,sex", "--algorithm", "condensation", "--k", 5], "'sex' is not numeric"),
        (["--qi", QIS, "--sensitive", "occupation", "--algorithm", "gaa-cp", "--k", 3, "--l", 2], "cannot honour"),
        (["--qi", QIS, "--algorithm", "mdav", "--k", 3, "--seed", 1], "takes no option seed"),
        (["--qi", QIS, "--algorithm", "kaca"], "no privacy model given"),
    ],
)
def test_bad_input_one_line_nothing_written(capsys, tmp_path, small, argv, msg):
    out = tmp_path / "rel.csv"
    code, so, se = run(capsys, small, "-o", out, *argv)
    assert code == 2
    lines = se.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppdm: error: ") and msg in lines[0], se
    assert list(tmp_path.iterdir()) == []


def test_a_table_path_that_is_a_directory_stops_before_writing(capsys, tmp_path, small):
    (tmp_path / "rel.sensitive.csv").mkdir()
    code, so, se = run(
        capsys, small, "-o", tmp_path / "rel.csv", "--qi", "age", "--sensitive", "occupation",
        "--algorithm", "anatomy", "--l", 2,
    )  # fmt: skip
    assert code == 2 and "is a directory" in se
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rel.sensitive.csv"]


def test_write_tables_leaves_nothing_when_one_fails(tmp_path, monkeypatch):
    """The set is written atomically: if the second table fails, neither file nor a temporary one
    remains, and an existing OUT keeps its content."""
    import anonymize.publish.io as io_

    (tmp_path / "a.csv").write_text("old\n")
    real = io_.write_table
    calls = []

    def flaky(df, path, sep=","):
        calls.append(path)
        if len(calls) == 2:
            raise OSError("disk full")
        real(df, path, sep=sep)

    monkeypatch.setattr(io_, "write_table", flaky)
    df = pd.DataFrame({"x": [1, 2]})
    with pytest.raises(OSError):
        write_tables([(df, tmp_path / "a.csv"), (df, tmp_path / "a.sensitive.csv")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]
    assert (tmp_path / "a.csv").read_text() == "old\n"


def test_table_path_names():
    assert table_path(Path("d/rel.csv"), "sensitive") == Path("d/rel.sensitive.csv")
    assert table_path(Path("rel.parquet"), "blood/type x") == Path("rel.blood_type_x.parquet")
