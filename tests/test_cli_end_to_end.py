"""End-to-end: ``ppdm mine``, ``ppdm bench mpc`` and ``ppdm demo`` as a user runs them (real daemons)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from anonymize.itemsets import FrequentItemsets, fingerprint

REPO = Path(__file__).resolve().parents[1]
MUSHROOM = REPO / "anonymize" / "data" / "mushroom.dat"
MUSHROOM_40 = "62b84f800484f4d59ebb499e2d11c768"  # reference_counts.json, mushroom 40%, 565 itemsets


def ppdm(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "parties.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def fp_of(res: dict) -> str:
    levels: dict = {}
    for it in res["itemsets"]:
        levels.setdefault(len(it["items"]), []).append((it["items"], it["count"]))
    import numpy as np

    lv = {
        k: (np.array([i for i, _ in v], dtype=np.int64), np.array([c for _, c in v], dtype=np.int64))
        for k, v in levels.items()
    }
    return fingerprint(FrequentItemsets(lv, res["transactions"], 1))


def rules_of(res: dict) -> dict:
    return {
        (tuple(r["antecedent"]), tuple(r["consequent"])): (r["support"], round(r["confidence"], 12))
        for r in res["rules"]
    }


@pytest.fixture(scope="module")
def central():
    r = ppdm("mine", MUSHROOM, "--min-support", "0.4", "--min-confidence", "0.9", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["transactions"] == 8124
    assert fp_of(res) == MUSHROOM_40
    return res


@pytest.mark.daemons
@pytest.mark.parametrize("split,n", [("horizontal", 3), ("vertical", 2)])
def test_mine_local_equals_centralized(central, split, n):
    r = ppdm(
        "mine", "--local", n, "--split", split, MUSHROOM, "--min-support", "0.4", "--min-confidence", "0.9", "--json"
    )
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert fp_of(res) == MUSHROOM_40
    assert rules_of(res) == rules_of(central)
    proto = res["protocol"]
    assert proto["mode"] == split and len(proto["parties"]) == n
    assert proto["rounds"] > 0 and proto["bytes_total"] > 0 and proto["revealed"]


@pytest.mark.parametrize(
    "args,needle",
    [
        (["mine", "no-such-file.dat"], "no such file"),
        (["mine", MUSHROOM, "--min-support", "0"], "(0, 1]"),
        (["mine", MUSHROOM, "--min-support", "1.5"], "(0, 1]"),
        (["mine", MUSHROOM, "--min-support", "abc"], "must be a number"),
        (["mine", "--local", "3", MUSHROOM], "--split"),
        (["mine", "--parties", "nope.toml", "--split", "horizontal"], "cannot read"),
        (["bench", "mpc", "--only", "nonsense"], "unknown operation"),
    ],
)
def test_bad_input_is_one_clear_line(args, needle):
    r = ppdm(*args)
    assert r.returncode != 0
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ppdm: error:"), r.stderr
    assert needle in lines[0]
    assert "Traceback" not in r.stderr


def test_unparsable_transactions_file(tmp_path):
    bad = tmp_path / "bad.dat"
    bad.write_text("1 2 3\n4 x 5\n")
    out = tmp_path / "out.json"
    r = ppdm("mine", bad, "-o", out)
    assert r.returncode != 0 and "line 2" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_output_file_written_atomically(tmp_path, central):
    out = tmp_path / "res.json"
    r = ppdm("mine", MUSHROOM, "--min-support", "0.4", "--min-confidence", "0.9", "-o", out)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["itemsets"] == central["itemsets"]
    assert "frequent itemsets: 565" in r.stdout


@pytest.mark.daemons
def test_bench_mpc_quick_json():
    r = ppdm("bench", "mpc", "--quick", "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["results"]
    assert {row["operation"] for row in rows} == {
        "base_ot",
        "ot_extension",
        "ot_1_of_n",
        "secure_sum",
        "secure_sum_threshold",
        "dot_product",
        "set_union",
        "intersection_cardinality",
    }
    for row in rows:
        assert row["correct"] is True, row
        assert row["seconds"] > 0 and row["per_second"] > 0 and row["bytes"] > 0
        assert isinstance(row["parties"], int) and isinstance(row["size"], int)


@pytest.mark.daemons
# `ppdm demo` runs (and its three checks are asserted) in tests/test_readme_tour.py, the tour's first line.


@pytest.mark.daemons
def test_mine_local_private_counts_all_candidates(central):
    r = ppdm(
        "mine",
        "--local",
        3,
        "--split",
        "horizontal",
        MUSHROOM,
        "--min-support",
        "0.4",
        "--min-confidence",
        "0.9",
        "--private-counts",
        "--candidates",
        "all",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert {tuple(i["items"]) for i in res["itemsets"]} == {tuple(i["items"]) for i in central["itemsets"]}
    assert all(i["count"] is None for i in res["itemsets"])
    assert {(tuple(x["antecedent"]), tuple(x["consequent"])) for x in res["rules"]} == set(rules_of(central))
    assert all(x["support"] is None and x["confidence"] is None for x in res["rules"])
    assert not any("secure union" in line and "locally large" in line for line in res["protocol"]["revealed"])
