"""``ppdm attack`` on bucketized releases (Anatomy, MSAL): each released row carries its group's values.

The oracle is a plain pandas join written here: a person matches the QI rows equal to theirs on every
quasi-identifier (Anatomy publishes QIs exactly); the values they may have are the union of those rows'
groups' values; homogeneity hits when one value is left, background knowledge (ruling out B) when at most
B + 1 are left.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
SUBSET = DATA / "adult_subset.csv"
QIS = ["age", "sex", "race", "marital-status", "education"]


def anonymize(tmp_path, algorithm: str, sensitive: str, l: int) -> Path:
    out = tmp_path / "rel.csv"
    args = ["anonymize", str(SUBSET), "-o", str(out), "--qi", ",".join(QIS), "--sensitive", sensitive]
    args += ["--hierarchies", str(DATA), "--algorithm", algorithm, "--l", str(l), "--quiet", "--queries", "0"]
    args += ["--insensitive", "native-country,workclass,salary-class" if "," not in sensitive else "native-country"]
    assert main(args) == 0
    return out


def attack(capsys, *argv) -> tuple[int, str, str]:
    code = main(["attack", *map(str, argv)])
    so, se = capsys.readouterr()
    return code, so, se


def oracle(release: pd.DataFrame, table: pd.DataFrame, external: pd.DataFrame, s: str) -> pd.Series:
    """Per external person: the number of values of ``s`` among the groups of the QI rows that match."""
    rel = release.astype({c: str for c in QIS}).astype({"group_id": str})
    tab = table.astype({"group_id": str})
    ext = external[QIS].astype(str).reset_index().rename(columns={"index": "person"})
    m = ext.merge(rel[[*QIS, "group_id"]], on=QIS, how="left")
    m = m.merge(tab[["group_id", s]], on="group_id", how="left")
    n = m.groupby("person")[s].nunique()
    return n.reindex(range(len(external)), fill_value=0)


@pytest.mark.parametrize("rule_out", [1, 2])
def test_anatomy_release_is_attacked_through_its_sensitive_table(capsys, tmp_path, rule_out):
    out = anonymize(tmp_path, "anatomy", "occupation", 3)
    table_file = tmp_path / "rel.sensitive.csv"
    assert table_file.is_file()
    code, so, se = attack(
        capsys, out, "--external", SUBSET, "--qi", ",".join(QIS), "--sensitive", "occupation",
        "--hierarchies", DATA, "--rule-out", rule_out, "--json",
    )  # fmt: skip
    assert code == 0, se
    rep = json.loads(so)
    assert rep["sensitive_tables"] == {"occupation": str(table_file)}
    by = {a["name"]: a for a in rep["attacks"]}
    assert "differencing" not in by  # no row-level value to subtract
    release = pd.read_csv(out, sep=";", dtype=str)
    table = pd.read_csv(table_file, sep=";", dtype=str)
    external = pd.read_csv(SUBSET, sep=";", dtype=str)
    n_values = oracle(release, table, external, "occupation")
    assert by["homogeneity"]["victims"] == int((n_values == 1).sum()) == 0  # Anatomy, l = 3: never one value
    want = int(((n_values >= 1) & (n_values <= rule_out + 1)).sum())
    assert by["background_knowledge"]["victims"] == want
    if rule_out == 2:
        assert want > 0  # groups of exactly 3 values fall to an adversary who rules out 2
    # re-identification: people matching exactly one QI row, by the same join
    sizes = release.groupby(QIS).size().rename("n").reset_index()
    n_rows = external[QIS].merge(sizes, on=QIS, how="left")["n"].fillna(0)
    assert by["linkage"]["victims"] == int((n_rows == 1).sum()) > 0
    assert by["linkage"]["matched"] == int((n_rows >= 1).sum()) == len(external)  # everyone is in the release


def test_msal_release_reads_one_table_per_sensitive_attribute(capsys, tmp_path):
    out = anonymize(tmp_path, "msal", "occupation,salary-class", 2)
    code, so, se = attack(
        capsys, out, "--external", SUBSET, "--qi", ",".join(QIS), "--sensitive", "occupation,salary-class", "--json"
    )
    assert code == 0, se
    rep = json.loads(so)
    assert set(rep["sensitive_tables"]) == {"occupation", "salary-class"}
    release = pd.read_csv(out, sep=";", dtype=str)
    external = pd.read_csv(SUBSET, sep=";", dtype=str)
    for a in rep["attacks"]:
        if a["name"] == "homogeneity":
            s = a["sensitive"]
            table = pd.read_csv(rep["sensitive_tables"][s], sep=";", dtype=str)
            n_values = oracle(release, table, external, s)
            # MSAL leaves some rows unplaced (not released): people who match none of the released rows count 0
            assert a["victims"] == int((n_values == 1).sum())


def test_bucketized_release_without_its_table_is_one_line(capsys, tmp_path):
    out = anonymize(tmp_path, "anatomy", "occupation", 3)
    (tmp_path / "rel.sensitive.csv").unlink()
    code, so, se = attack(capsys, out, "--external", SUBSET, "--qi", ",".join(QIS), "--sensitive", "occupation")
    assert code == 2
    lines = [ln for ln in se.splitlines() if ln.strip()]
    assert len(lines) == 1 and "bucketized release" in lines[0] and "--sensitive-table occupation=FILE" in lines[0]
    code, so, se = attack(
        capsys, out, "--external", SUBSET, "--qi", ",".join(QIS), "--sensitive", "occupation",
        "--sensitive-table", "occupation",
    )  # fmt: skip
    assert code == 2 and "COL=FILE" in se and len(se.strip().splitlines()) == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("group_id;occupation;count\n1;Sales;two\n")
    code, so, se = attack(
        capsys, out, "--external", SUBSET, "--qi", ",".join(QIS), "--sensitive", "occupation",
        "--sensitive-table", f"occupation={bad}",
    )  # fmt: skip
    assert code == 2 and "not a non-negative integer" in se and len(se.strip().splitlines()) == 1
