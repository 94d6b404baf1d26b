"""Results an analyst uses: ``ppdm mine -o FILE.csv|.parquet|.json``, the DataFrame views of the analyst API,
and the ``--epsilon`` noise warning.

Every file is read back and compared with the ``--json`` result of the same run; the DataFrames of a
text-item job are checked against the input files' item strings and the supports, confidences and lifts
of the pooled baskets, counted here with pandas.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from parties.analyst import (
    HorizontalMining,
    MiningResult,
    itemsets_frame,
    mine_local_sources,
    noise_advice,
    noise_warning,
    rules_frame,
)
from parties.cli import main
from parties.joint.dp_sum import noise_stats
from parties.sources import source_from_flags

ROOT = Path(__file__).resolve().parents[1]
MUSHROOM = ROOT / "anonymize" / "data" / "mushroom.dat"
RETAILERS = [ROOT / "examples" / "two-retailers" / f"{n}.csv" for n in ("north", "south")]
KEYED = ["--transaction", "basket_id", "--item", "sku"]


def run(capsys, *argv):
    code = main(["mine", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ppdm: error:"), err
    assert "Traceback" not in err
    return lines[0]


def as_tuple(x) -> tuple | None:
    """A list cell read back (a JSON array from CSV, an array from Parquet) as a tuple; None for an empty cell."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    if isinstance(x, str):
        return tuple(json.loads(x))
    return tuple(x.tolist() if hasattr(x, "tolist") else x)


def result_from_table(df: pd.DataFrame) -> tuple[dict, dict]:
    """``({itemset: count}, {(antecedent, consequent): (support, confidence)})`` of a table ``-o`` wrote."""
    its, rules = {}, {}
    for row in df.itertuples(index=False):
        sup = None if pd.isna(row.support) else int(row.support)
        if row.kind == "itemset":
            assert as_tuple(row.antecedent) is None and as_tuple(row.consequent) is None
            items = as_tuple(row.items)
            assert row.length == len(items)
            its[frozenset(items)] = sup
        else:
            assert row.kind == "rule" and as_tuple(row.items) is None
            a, c = as_tuple(row.antecedent), as_tuple(row.consequent)
            assert row.length == len(a) + len(c)
            rules[(a, c)] = (sup, float(row.confidence))
    return its, rules


def result_from_json(res: dict) -> tuple[dict, dict]:
    its = {frozenset(i["items"]): i["count"] for i in res["itemsets"]}
    rules = {(tuple(r["antecedent"]), tuple(r["consequent"])): (r["support"], r["confidence"]) for r in res["rules"]}
    return its, rules


def check_fractions_and_lift(df: pd.DataFrame, res: dict) -> None:
    """support_fraction = count / N and lift = confidence · N / count(consequent), from the JSON alone."""
    n = res["transactions"]
    counts = {frozenset(i["items"]): i["count"] for i in res["itemsets"]}
    for row in df.itertuples(index=False):
        assert row.support_fraction == pytest.approx(row.support / n)
        if row.kind == "rule":
            want = row.confidence * n / counts[frozenset(as_tuple(row.consequent))]
            assert row.lift == pytest.approx(want)


@pytest.fixture(scope="module")
def central_json():
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "parties.cli", "mine", str(MUSHROOM), "--min-support", "0.4", "--min-confidence", "0.9",
         "--json"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("ext", ["csv", "parquet", "json"])
def test_output_file_equals_the_json_result(capsys, tmp_path, central_json, ext):
    out = tmp_path / f"res.{ext}"
    code, so, se = run(capsys, MUSHROOM, "--min-support", "0.4", "--min-confidence", "0.9", "--json", "-o", out)
    assert code == 0, se
    res = json.loads(so)
    timeless = {k: v for k, v in res["protocol"].items() if k != "phases_seconds"}
    assert timeless == {k: v for k, v in central_json["protocol"].items() if k != "phases_seconds"}
    assert (res["itemsets"], res["rules"]) == (central_json["itemsets"], central_json["rules"])  # -o changes no --json
    assert len(res["itemsets"]) == 565 and len(res["rules"]) > 100
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left
    if ext == "json":
        assert json.loads(out.read_text()) == res
        assert out.read_text() == json.dumps(res)  # byte for byte what --json prints
        return
    df = pd.read_csv(out) if ext == "csv" else pd.read_parquet(out)
    assert list(df.columns) == [
        "kind", "items", "antecedent", "consequent", "length", "support", "support_fraction", "confidence", "lift"
    ]  # fmt: skip
    got_its, got_rules = result_from_table(df)
    want_its, want_rules = result_from_json(res)
    assert got_its == want_its
    assert got_rules.keys() == want_rules.keys()
    for k, (sup, conf) in want_rules.items():
        assert got_rules[k][0] == sup and got_rules[k][1] == pytest.approx(conf, rel=1e-12)
    check_fractions_and_lift(df, res)
    if ext == "parquet":  # integer items stay integers; the rest of the result rides along as metadata
        assert all(isinstance(x, int) for t in df["items"].dropna() for x in t.tolist())
        meta = json.loads(pq.read_schema(out).metadata[b"ppdm.result"])
        assert meta["transactions"] == res["transactions"] and meta["protocol"]["mode"] == "centralized"


def pooled_baskets() -> list[frozenset]:
    pooled = pd.concat([pd.read_csv(p, dtype=str) for p in RETAILERS])
    return [frozenset(g) for _, g in pooled.groupby("basket_id")["sku"]]


def support(baskets: list[frozenset], items) -> int:
    s = frozenset(items)
    return sum(1 for b in baskets if s <= b)


@pytest.mark.daemons
def test_dataframes_name_the_items_of_a_text_item_job():
    srcs = [source_from_flags(str(p), transaction="basket_id", item="sku", key=p.name) for p in RETAILERS]
    res = mine_local_sources(srcs, HorizontalMining(min_support="0.1", min_confidence="0.6"), progress=False)
    assert isinstance(res, MiningResult) and type(res.raw) is dict and res.raw == dict(res)
    assert res.analyst == "analyst" and set(res.party_seconds) == {"p0", "p1"}
    assert all(s > 0 for s in res.party_seconds.values())
    baskets = pooled_baskets()
    n = len(baskets)
    names = set().union(*baskets)  # the sku strings of the input files
    its = res.itemsets
    assert list(its.columns) == ["items", "length", "support", "support_fraction"]
    assert len(its) == len(res["itemsets"]) > 20
    for items, length, sup, frac in its.itertuples(index=False):
        assert isinstance(items, tuple) and set(items) <= names and all(isinstance(x, str) for x in items)
        assert length == len(items)
        assert sup == support(baskets, items) >= math.ceil(0.1 * n)  # the pooled baskets, counted here
        assert frac == pytest.approx(sup / n)
    want = {frozenset(c) for c in _all_frequent(baskets, names, math.ceil(0.1 * n))}
    assert {frozenset(i) for i in its["items"]} == want
    rules = res.rules
    assert list(rules.columns) == ["antecedent", "consequent", "support", "support_fraction", "confidence", "lift"]
    assert len(rules) == len(res["rules"]) > 0
    for a, c, sup, frac, conf, lift in rules.itertuples(index=False):
        assert set(a) | set(c) <= names and not set(a) & set(c)
        both, ante, cons = support(baskets, a + c), support(baskets, a), support(baskets, c)
        assert sup == both and frac == pytest.approx(both / n)
        assert conf == pytest.approx(both / ante) and conf >= 0.6
        assert lift == pytest.approx((both / ante) / (cons / n))
    # the same views of the plain dict (e.g. a result read back from -o res.json)
    pd.testing.assert_frame_equal(itemsets_frame(json.loads(json.dumps(res))), its)
    assert rules_frame(res.raw).equals(rules)


def _all_frequent(baskets, names, need):
    from itertools import combinations

    out = []
    for k in range(1, 5):
        found = [c for c in combinations(sorted(names), k) if support(baskets, c) >= need]
        if not found:
            break
        out += found
    return out


@pytest.mark.daemons
def test_local_joint_run_writes_parquet_equal_to_its_json(capsys, tmp_path):
    out = tmp_path / "joint.parquet"
    code, so, se = run(capsys, "--local", "--split", "horizontal", *RETAILERS, *KEYED, "--min-support", "0.1",
                       "--min-confidence", "0.6", "--json", "-o", out)  # fmt: skip
    assert code == 0, se
    res = json.loads(so)
    df = pd.read_parquet(out)
    got_its, got_rules = result_from_table(df)
    want_its, want_rules = result_from_json(res)
    assert got_its == want_its and set(got_rules) == set(want_rules)
    assert all(isinstance(x, str) for t in df["items"].dropna() for x in t.tolist())  # text items stay text
    check_fractions_and_lift(df, res)


@pytest.mark.daemons
def test_parties_run_writes_csv_equal_to_its_json(capsys, tmp_path, make_cluster):
    data = {
        f"p{i}": {"transactions": {"path": str(p), "transaction": "basket_id", "item": "sku"}}
        for i, p in enumerate(RETAILERS)
    }
    c = make_cluster(2, workdir=tmp_path / "cluster", data=data, policy={"min_parties": 2})
    wd = c.workdir
    lines = ["[analyst]", f'cert = "{wd / "analyst" / "analyst.pem"}"', f'key = "{wd / "analyst" / "analyst.key"}"',
             f'ca = "{wd / "ca" / "ca.pem"}"']  # fmt: skip
    for p in c.peers:
        lines += [f"[parties.{p.name}]", f'address = "{p.address}"']
    toml = tmp_path / "analyst.toml"
    toml.write_text("\n".join(lines) + "\n")
    out = tmp_path / "res.csv"
    code, so, se = run(capsys, "--parties", toml, "--split", "horizontal", "--min-support", "0.1", "--min-confidence",
                       "0.6", "--json", "-o", out)  # fmt: skip
    assert code == 0, se
    res = json.loads(so)
    assert res["protocol"]["parties"] == ["p0", "p1"]
    got_its, got_rules = result_from_table(pd.read_csv(out))
    assert (got_its, set(got_rules)) == (result_from_json(res)[0], set(result_from_json(res)[1]))


@pytest.mark.parametrize(
    "argv",
    [
        [MUSHROOM, "-o", "{d}/res.txt"],
        [MUSHROOM, "-o", "{d}/res"],
        ["--local", "2", "--split", "horizontal", MUSHROOM, "-o", "{d}/res.xlsx"],
    ],
)
def test_bad_output_extension_is_one_line_before_any_work(capsys, tmp_path, argv):
    code, so, se = run(capsys, *(str(a).format(d=tmp_path) for a in argv))
    assert code == 2 and so == ""
    line = one_error_line(se)  # nothing else on stderr: no daemon was started, nothing mined
    assert ".csv, .parquet or .json" in line
    assert list(tmp_path.iterdir()) == []


def test_no_partial_file_when_the_job_fails(capsys, tmp_path):
    bad = tmp_path / "bad.dat"
    bad.write_text("1 2 3\n4 x 5\n")
    out = tmp_path / "res.parquet"
    code, _, se = run(capsys, bad, "-o", out)
    assert code != 0 and "line 2" in one_error_line(se)
    assert not out.exists()
    old = tmp_path / "old.csv"
    old.write_text("precious\n")
    code, _, se = run(capsys, bad, "-o", old)
    assert code != 0 and old.read_text() == "precious\n"  # an existing file keeps its content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.dat", "old.csv"]  # no temporary file left


def test_report_failure_leaves_no_output_file(capsys, tmp_path, monkeypatch):
    """Both files are made in memory first: a report that cannot be made leaves no -o file either."""
    import parties.analyst.report as report

    def broken(*a, **k):
        raise RuntimeError("report broke")

    monkeypatch.setattr(report, "mining_page", broken)
    out, rep = tmp_path / "res.csv", tmp_path / "r.html"
    code, _, se = run(capsys, MUSHROOM, "--min-support", "0.5", "-o", out, "--report", rep)
    assert code == 1 and "report broke" in one_error_line(se)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------- the ε noise warning
def dp_block(epsilon: float, fractions, sensitivities, threshold: int, n: int = 3, colluders: int = 0) -> dict:
    """A result's ``dp`` block as :func:`parties.joint.dp_mining.mine_horizontal_dp` reports it (noise_stats)."""
    levels = []
    for k, (f, d) in enumerate(zip(fractions, sensitivities), start=1):
        e = Fraction(epsilon) * Fraction(f)
        levels.append({"k": k, "sensitivity": d, "epsilon": float(e)} | noise_stats(e, d, n, colluders))
    return {"dp": {"epsilon": float(epsilon), "threshold": threshold, "colluders": colluders, "levels": levels}}


@pytest.mark.parametrize("colluders", [0, 1])
@pytest.mark.parametrize(
    "fractions,sensitivities,threshold",
    [
        ([0.2375] * 4, [120, 465, 548, 83], 2435),  # the README's line: mushroom 30%, max-len 4
        ([0.475, 0.475], [12, 66], 160),  # two retailers 10%, max-len 2
        ([0.95], [3], 5),  # a tiny threshold: little noise is already too much
    ],
)
def test_noise_warning_threshold_both_ways(fractions, sensitivities, threshold, colluders):
    eps = 1.0
    adv = noise_advice(dp_block(eps, fractions, sensitivities, threshold, colluders=colluders))
    assert adv is not None
    lo = adv.minimum_epsilon
    assert lo <= adv.suggested_epsilon <= lo * 1.1 and float(f"{adv.suggested_epsilon:.2g}") == adv.suggested_epsilon

    def worst_std(e: float) -> float:  # the mechanism's own numbers (noise_stats), at ε = e with the same split
        levels = dp_block(e, fractions, sensitivities, threshold, 3, colluders)["dp"]["levels"]
        return max(lv["noise_std"] for lv in levels)

    assert worst_std(lo) == pytest.approx(threshold, rel=1e-6)
    for e, noisy in ((lo * 0.99, True), (lo * 1.01, False), (adv.suggested_epsilon, False)):
        assert (worst_std(e) > threshold) is noisy
        verdict = noise_warning(dp_block(e, fractions, sensitivities, threshold, colluders=colluders))
        assert (verdict is not None) is noisy, (e, verdict)
        if noisy:
            assert verdict.startswith("most itemsets below are noise at this ε: try ε ≥ ")


def test_no_warning_without_dp_or_levels():
    assert noise_warning({"itemsets": [], "rules": []}) is None
    assert noise_warning({"dp": {"epsilon": 1.0, "threshold": 0, "levels": [{"k": 1}]}}) is None
    assert noise_advice({"dp": {"epsilon": 1.0, "threshold": 10, "levels": []}}) is None


@pytest.mark.daemons
@pytest.mark.parametrize("epsilon,warned", [("0.5", True), ("5", False)])
def test_epsilon_run_warns_when_noise_exceeds_the_threshold(capsys, tmp_path, epsilon, warned):
    catalog = tmp_path / "catalog.txt"
    catalog.write_text("\n".join(sorted(set(pd.concat([pd.read_csv(p) for p in RETAILERS])["sku"]))) + "\n")
    code, so, se = run(capsys, "--local", "--split", "horizontal", *RETAILERS, *KEYED, "--min-support", "0.1",
                       "--catalog", catalog, "--max-len", "2", "--epsilon", epsilon, "--json", "--report",
                       tmp_path / "dp.html")  # fmt: skip
    assert code == 0, se
    res = json.loads(so)
    hits = [ln for ln in se.splitlines() if "most itemsets below are noise" in ln]
    page = (tmp_path / "dp.html").read_text()
    assert ("most itemsets below are noise at this ε" in page) is warned  # the report says it too
    std = max(lv["noise_std"] for lv in res["dp"]["levels"])
    assert (std > res["dp"]["threshold"]) is warned  # what the job itself reports
    assert len(hits) == (1 if warned else 0)
    if warned:
        assert hits[0].startswith("ppdm: warning: most itemsets below are noise at this ε: try ε ≥ ")
        x = float(re.search(r"try ε ≥ ([0-9.]+)", hits[0]).group(1))
        assert x == noise_advice(res).suggested_epsilon > float(epsilon)
        # at x, with this run's split, every level's noise (noise_stats) is within the threshold
        for lv in res["dp"]["levels"]:
            e_k = Fraction(x) * Fraction(lv["epsilon"]) / Fraction(res["dp"]["epsilon"])
            assert noise_stats(e_k, lv["sensitivity"], 2)["noise_std"] <= res["dp"]["threshold"]


def test_hidden_counts_and_mixed_names_round_trip(tmp_path):
    """A --private-counts result (counts and confidences null) and a catalog mixing text and integer names:
    every format keeps the nulls; Parquet writes mixed names as text."""
    from parties.analyst import write_result

    res = {
        "transactions": 10,
        "itemsets": [{"items": ["milk"], "count": None}, {"items": [7], "count": None},
                     {"items": [7, "milk"], "count": None}],
        "rules": [{"antecedent": [7], "consequent": ["milk"], "support": None, "confidence": None}],
        "protocol": {"mode": "horizontal", "revealed": []},
    }  # fmt: skip
    its, rules = itemsets_frame(res), rules_frame(res)
    assert its["support"].isna().all() and its["support_fraction"].isna().all()
    assert rules["lift"].isna().all() and list(its["items"]) == [("milk",), (7,), (7, "milk")]
    for ext in ("csv", "parquet", "json"):
        write_result(res, tmp_path / f"r.{ext}")
    assert json.loads((tmp_path / "r.json").read_text()) == res
    df = pd.read_csv(tmp_path / "r.csv")
    assert df["support"].isna().all() and as_tuple(df["items"][2]) == (7, "milk")
    pq_df = pd.read_parquet(tmp_path / "r.parquet")
    assert pq_df["support"].isna().all() and pq_df["confidence"].isna().all()
    assert as_tuple(pq_df["items"][2]) == ("7", "milk") and as_tuple(pq_df["antecedent"][3]) == ("7",)
    with pytest.raises(ValueError, match=r"\.csv, \.parquet or \.json"):
        write_result(res, tmp_path / "r.xlsx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.json", "r.parquet"]
