"""Parquet in and out (pyarrow is a test dependency and the ``parquet`` extra)."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow  # noqa: F401  (required: the Parquet path is part of the product)

from anonymize.publish.io import read_table, write_table

REPO = Path(__file__).resolve().parents[1]
QIS = "age,sex,race,marital-status,education,native-country,workclass,occupation"


def test_parquet_roundtrip(tmp_path):
    df = read_table(REPO / "anonymize" / "data" / "adult_subset.csv")
    write_table(df, tmp_path / "a.parquet")
    back = read_table(tmp_path / "a.parquet")
    pd.testing.assert_frame_equal(back, df)


def test_anonymize_parquet_in_and_out(tmp_path):
    df = read_table(REPO / "anonymize" / "data" / "adult_subset.csv")
    write_table(df, tmp_path / "in.parquet")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "parties.cli",
            "anonymize",
            str(tmp_path / "in.parquet"),
            "-o",
            str(tmp_path / "out.parquet"),
            "--qi",
            QIS,
            "--sensitive",
            "salary-class",
            "--hierarchies",
            str(REPO / "anonymize" / "data"),
            "--algorithm",
            "mondrian",
            "--k",
            "4",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    out = read_table(tmp_path / "out.parquet")
    assert len(out) == len(df)
    assert out.groupby(QIS.split(","), dropna=False).size().min() >= 4


def test_corrupt_parquet_is_one_clear_error(tmp_path):
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    r = subprocess.run(
        [sys.executable, "-m", "parties.cli", "check", str(tmp_path / "bad.parquet"), "--qi", "a", "--sensitive", "b"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode != 0 and r.stderr.startswith("ppdm: error:") and "Traceback" not in r.stderr
