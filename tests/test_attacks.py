"""Attacks: generalized-cell matching, linkage against a brute-force oracle, the attack suite on
releases made by ``anonymize_table`` (checked by pycanon), differencing, B known values, and the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycanon import anonymity as pycanon

from anonymize.attacks import (
    AggregateServer,
    cover_matrix,
    differencing_attack,
    differencing_exposed,
    link,
    match_probability,
    match_probability_bound,
    reidentify,
    run_attacks,
)
from anonymize.attacks.linkage import unique_rows
from anonymize.publish import Schema, anonymize_table, build_models
from anonymize.publish.hierarchy import Hierarchy
from anonymize.publish.io import read_hierarchies, read_table
from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
SUBSET = DATA / "adult_subset.csv"
QIS = ["age", "sex", "race", "marital-status", "education"]


# ---------------------------------------------------------------- reading cells
def test_cover_matrix_reads_ranges_masks_stars_and_values():
    cells = ["*", "20-29", "[20, 30)", "(20, 30]", "30", "4767*", "47***"]
    vals = [20, 29, 30, 47677]
    m = cover_matrix(cells, vals)
    assert m.tolist() == [
        [True, True, True, True],
        [True, True, False, False],
        [True, True, False, False],
        [False, True, True, False],
        [False, False, True, False],
        [False, False, False, True],
        [False, False, False, True],
    ]
    assert cover_matrix(["M", "F"], ["F", "M", "X"]).tolist() == [[False, True, False], [True, False, False]]


def test_cover_matrix_with_an_arx_hierarchy_and_its_off_by_one_labels():
    h = read_hierarchies(DATA, columns={"age", "native-country"})
    # ARX labels ages 41-45 as "40-44": with the hierarchy 45 is covered; the literal range adds 40
    m = cover_matrix(["40-44"], [40, 41, 45, 46], h["age"])
    assert m.tolist() == [[True, True, True, False]]
    m = cover_matrix(["Europe", "North America"], ["Germany", "United-States", "Canada"], h["native-country"])
    assert m.tolist() == [[True, False, False], [False, True, True]]


# ---------------------------------------------------------------- link vs brute force
@st.composite
def generalized_tables(draw):
    """A raw table, a release whose cells each cover a known interval of raw values, and an
    external table of raw people. Returns (release, external, covers) with covers[c] = (lo, hi)."""
    n = draw(st.integers(1, 12))
    rows, truth = [], []
    for _ in range(n):
        cells, spans = [], []
        for _col in range(2):
            kind = draw(st.sampled_from(["raw", "range", "star"]))
            v = draw(st.integers(0, 9))
            if kind == "raw":
                cells.append(str(v))
                spans.append((v, v))
            elif kind == "range":
                w = draw(st.integers(1, 4))
                cells.append(f"{v}-{v + w}")
                spans.append((v, v + w))
            else:
                cells.append("*")
                spans.append((-1e9, 1e9))
        rows.append(cells)
        truth.append(spans)
    m = draw(st.integers(1, 10))
    people = [[draw(st.integers(0, 12)), draw(st.integers(0, 12))] for _ in range(m)]
    sens = [draw(st.sampled_from(["a", "b", "c"])) for _ in range(n)]
    rel = pd.DataFrame(rows, columns=["x", "y"]).assign(s=sens)
    ext = pd.DataFrame(people, columns=["x", "y"])
    return rel, ext, truth


@settings(max_examples=80, deadline=None)
@given(generalized_tables(), st.randoms(use_true_random=False))
def test_link_matches_brute_force(data, rnd):
    rel, ext, truth = data
    use_mask = rnd.random() < 0.5  # half the time, each person uses a random subset of the columns
    mask = np.array([[rnd.random() < 0.6 for _ in range(2)] for _ in range(len(ext))]) if use_mask else None
    lk = link(rel, ext, ["x", "y"], ["s"], mask=mask)
    for i, (px, py) in enumerate(ext.to_numpy()):
        ux, uy = (True, True) if mask is None else mask[i]
        hits = [
            r
            for r, (sx, sy) in enumerate(truth)
            if (not ux or sx[0] <= px <= sx[1]) and (not uy or sy[0] <= py <= sy[1])
        ]
        assert lk.n_records[i] == len(hits)
        want = {v: sum(1 for r in hits if rel["s"][r] == v) for v in set(rel["s"])}
        got = dict(zip(lk.sensitive_values["s"], lk.sensitive_counts["s"][i]))
        assert {k: v for k, v in want.items() if v} == {k: int(v) for k, v in got.items() if v}
        assert lk.single_record[i] == (hits[0] if len(hits) == 1 else -1)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 300), st.integers(0, 2)), min_size=1, max_size=40))
def test_unique_rows_is_numpys_unique(rows):
    codes = np.array(rows, dtype=np.int64)
    u, inv, cnt = unique_rows(codes)
    nu, ninv, ncnt = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    assert (u == nu).all() and (inv == ninv.ravel()).all() and (cnt == ncnt).all()


# ---------------------------------------------------------------- the suite on real releases
@pytest.fixture(scope="module")
def adult():
    df = read_table(SUBSET)
    hs = read_hierarchies(DATA, columns=set(QIS) | {"salary-class", "occupation"})
    return df, hs


def by_name(results):
    out = {}
    for r in results:
        out.setdefault(r.name, r)
    return out


def test_attacks_succeed_on_the_plain_release(adult):
    df, hs = adult
    res = by_name(run_attacks(df, df, QIS, ["salary-class"], hs))
    assert res["linkage"].success_rate > 0.2
    assert res["homogeneity"].success_rate >= res["linkage"].success_rate  # a unique record is homogeneous
    assert res["differencing"].victims > 0
    for name in ("linkage", "homogeneity", "differencing"):
        assert res[name].correct == res[name].victims  # the external table is the truth here


def test_k_anonymity_stops_linkage_but_not_homogeneity(adult):
    df, hs = adult
    r = anonymize_table(df, Schema(QIS, ["salary-class"]), hs, "mondrian", build_models(k=5))
    rel = r.df.reset_index(drop=True)
    assert pycanon.k_anonymity(rel, QIS) >= 5
    assert pycanon.l_diversity(rel, QIS, ["salary-class"]) == 1  # some classes are homogeneous
    res = by_name(run_attacks(rel, df, QIS, ["salary-class"], hs))
    assert res["linkage"].victims == 0 and res["differencing"].victims == 0
    assert res["linkage"].extra["expected_rate"] <= 1 / 5 + 1e-12
    assert res["homogeneity"].success_rate > 0.1
    assert res["homogeneity"].correct == res["homogeneity"].victims  # every disclosed value is right


def test_l_diversity_stops_homogeneity_and_background_knowledge(adult):
    df, hs = adult
    r = anonymize_table(df, Schema(QIS, ["occupation"]), hs, "mondrian", build_models(k=5, l=3))
    rel = r.df.reset_index(drop=True)
    assert pycanon.k_anonymity(rel, QIS) >= 5
    assert pycanon.l_diversity(rel, QIS, ["occupation"]) >= 3
    res = run_attacks(rel, df, QIS, ["occupation"], hs, rule_out=1)  # l = 3 resists rule_out <= l - 2
    assert all(a.victims == 0 for a in res), [(a.name, a.victims) for a in res]
    # a stronger adversary (rule out 2 values) wins against some of the same people
    strong = by_name(run_attacks(rel, df, QIS, ["occupation"], hs, rule_out=2))
    assert strong["background_knowledge"].victims > 0
    assert strong["background_knowledge"].correct == strong["background_knowledge"].victims


def test_full_domain_release_with_suppression_is_read_correctly(adult):
    df, hs = adult
    r = anonymize_table(df, Schema(QIS, ["salary-class"]), hs, "flash", build_models(k=4), 0.05)
    rel = r.df.reset_index(drop=True)
    lk = link(rel, df, QIS, ["salary-class"], hs)
    assert (lk.n_records >= 4).all()  # everyone matches at least their own class (or the suppressed rows)


# ---------------------------------------------------------------- differencing
def small_table(seed=0, n=60):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "zip": rng.choice(["10001", "10002", "10003"], n),
            "age": rng.integers(30, 36, n),
            "sex": rng.choice(["F", "M"], n),
            "disease": rng.choice(["flu", "hiv", "none"], n),
            "salary": rng.integers(1, 100, n) * 1000,
        }
    )


@pytest.mark.parametrize("min_size", [1, 2, 4, 8])
def test_differencing_attack_through_queries_agrees_with_group_counts(min_size):
    df = small_table()
    qis = ["zip", "age", "sex"]
    exposed = differencing_exposed(df, qis, min_size)
    for i in range(len(df)):
        victim = df.iloc[i][qis].to_dict()
        srv = AggregateServer(df, min_size)
        found = differencing_attack(srv.answer, victim, qis, "disease")
        assert (found is not None) == exposed[i]
        if found is not None:
            assert found["value"] == df["disease"][i]
            num = differencing_attack(AggregateServer(df, min_size).answer, victim, qis, "salary", numeric=True)
            assert num["value"] == df["salary"][i]
            # every query the attacker used was answerable under the restriction
            for q in found["queries"]:
                assert srv.answer(q) is not None


def test_query_set_size_restriction_does_not_stop_differencing():
    df = small_table(1)
    qis = ["zip", "age", "sex"]
    unique = differencing_exposed(df, qis, 1)
    assert unique.sum() > 0
    # refusing every query on fewer than 3 rows still leaves unique people exposed
    assert differencing_exposed(df, qis, 3).sum() > 0


# ---------------------------------------------------------------- B known values (ex. 14–16)
def test_exercise_14_numbers():
    assert math.isclose(match_probability_bound(10**4, 20), 10**4 / 2**20)
    assert round(match_probability_bound(10**4, 20), 4) == 0.0095
    assert match_probability(10**4, 20) <= match_probability_bound(10**4, 20)
    assert math.isclose(match_probability(10**4, 20, 2), 1 - (1 - 2**-20) ** 10**4, rel_tol=1e-9)


def test_reidentification_rate_matches_the_formula():
    rng = np.random.default_rng(7)
    n, m, B, victims = 2000, 30, 12, 400
    data = rng.integers(0, 2, (n, m))
    counts = reidentify(data, np.arange(victims), B, rng=8)
    assert (counts >= 1).all()  # the victim always matches itself
    p_unique = 1 - match_probability(n - 1, B, 2)
    rate = np.mean(counts == 1)
    assert abs(rate - p_unique) <= 4.9 * math.sqrt(p_unique * (1 - p_unique) / victims)
    # ratings with R = 5 values: 5 known ratings make almost everyone unique among 2000
    ratings = rng.integers(1, 6, (n, m))
    c5 = reidentify(ratings, np.arange(victims), 5, rng=9)
    p5 = 1 - match_probability(n - 1, 5, 5)
    assert abs(np.mean(c5 == 1) - p5) <= 4.9 * math.sqrt(p5 * (1 - p5) / victims)


# ---------------------------------------------------------------- CLI
def cli(capsys, *argv):
    code = main(["attack", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_shows_k_anonymity_failing_where_l_diversity_holds(capsys, tmp_path, adult):
    df, hs = adult
    rel_k = anonymize_table(df, Schema(QIS, ["salary-class"]), hs, "mondrian", build_models(k=5)).df
    rel_l = anonymize_table(df, Schema(QIS, ["salary-class"]), hs, "mondrian", build_models(k=5, l=2)).df
    rates = {}
    for name, rel in [("k", rel_k), ("l", rel_l)]:
        path = tmp_path / f"{name}.csv"
        rel.to_csv(path, sep=";", index=False)
        code, out, err = cli(
            capsys, path, "--external", SUBSET, "--qi", ",".join(QIS), "--sensitive", "salary-class",
            "--hierarchies", DATA, "--known", 3, "--json",
        )  # fmt: skip
        assert code == 0, err
        doc = json.loads(out)
        for a in doc["attacks"]:
            assert set(a) >= {"name", "success_rate", "victims"}
        rates[name] = {a["name"]: a["success_rate"] for a in doc["attacks"]}
    assert rates["k"]["homogeneity"] > 0 and rates["l"]["homogeneity"] == 0
    assert rates["k"]["linkage"] == rates["l"]["linkage"] == 0
    code, out, err = cli(capsys, SUBSET, "--external", SUBSET, "--qi", "age,sex", "--sensitive", "salary-class")
    assert code == 0 and "homogeneity" in out and "linkage" in out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--qi", "age,zip"], "no column 'zip'"),
        (["--qi", ""], "--qi needs"),
        (["--qi", "age", "--sensitive", "age"], "both quasi-identifier and sensitive"),
        (["--qi", "age", "--known", "0"], "--known must be"),
        (["--qi", "age", "--rule-out", "-1"], "--rule-out"),
        (["--qi", "age", "--hierarchy", "age=/nonexistent.csv"], "nonexistent"),
    ],
)
def test_cli_bad_input(capsys, argv, fragment):
    code, out, err = cli(capsys, SUBSET, "--external", SUBSET, *argv)
    assert code == 2 and out == "" and err.startswith("ppdm: error: ") and err.count("\n") == 1 and fragment in err


def test_cli_missing_external(capsys, tmp_path):
    code, out, err = cli(capsys, SUBSET, "--external", tmp_path / "none.csv", "--qi", "age")
    assert code == 2 and "not found" in err


def test_hierarchy_object_is_used_not_parsed():
    h = Hierarchy.from_rows("zip", [["47677", "4767*", "*"], ["47602", "4760*", "*"], ["47678", "4767*", "*"]])
    m = cover_matrix(["4767*"], ["47677", "47602", "47678"], h)
    assert m.tolist() == [[True, False, True]]
