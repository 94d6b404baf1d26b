"""``ppdm tune`` and ``ppdm publish`` with ``--suppressed-rows star|drop|arx`` (ARX's outlier semantics).

With ``arx`` the suppressed rows are written as one all-``*`` group that is **not judged**: every
privacy figure tune and publish decide on (k, l, P = t/|E|) is that of the classes outside the group,
as ``ppdm anonymize --suppressed-rows arx`` reports ``achieved``, and the output says which models the
group breaks (``suppressed_group``). The oracles are independent of ppdm's measurement:

* pycanon on the written file **after removing its all-``*`` rows** has the k, l and α (= P) the
  output claims (``arx``); with ``star`` the whole file, ``*`` group included, does;
* the ``*`` group's verdict is recomputed with pandas from the ``*`` rows of the file: it breaks
  ``k = K`` iff it has fewer than K rows, ``distinct l = L`` iff it has fewer than L distinct sensitive
  values, ``t = T`` iff its total-variation distance to the table's distribution exceeds T (EMD with
  the equal ground distance of a categorical attribute).

Relations between ``star`` and ``arx`` are asserted only where they are guaranteed: a node ``star``
accepts (at most MaxSup suppressed rows, and none or at least k of them) is accepted by ``arx`` (at
most MaxSup), so per k ``arx`` has a release whenever ``star`` has one and its optimal NCP is no larger;
without a suppression budget the two are the same releases.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pycanon import anonymity as pycanon

from anonymize.publish import EncodedTable, KAnonymity, Schema
from anonymize.publish.fulldomain import Lattice
from anonymize.publish.fulldomain.flash import flash
from anonymize.publish.io import read_hierarchies
from anonymize.publish.policy.engine import check_possible
from anonymize.publish.policy.evaluate import ReleaseEvaluator
from anonymize.publish.policy.measure import PrivacyRequirement, measure_candidate
from anonymize.publish.policy.policyfile import load_policy
from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
SUBSET = DATA / "adult_subset.csv"
EXAMPLE = ROOT / "examples" / "policy.toml"
QIS = "age,sex,race,marital-status,education,workclass"
QI_LIST = QIS.split(",")
SENS = "occupation"

#: a budget small enough that the * group is smaller than the larger k (so it breaks them), large enough to be used
SUP = "0.01"
TUNE = ["tune", str(SUBSET), "--qi", QIS, "--sensitive", SENS, "--hierarchies", str(DATA), "--pmax", "0.5"]
TUNE += ["--quality-bound", "0.7", "--quality-metric", "ncp", "--k-range", "2:40"]


def fresh(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep=";", dtype=str).reset_index(drop=True)


def split_star(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows outside the all-* group, the all-* rows), each with a fresh index."""
    star = (df[QI_LIST] == "*").all(axis=1)
    return df[~star].reset_index(drop=True), df[star].reset_index(drop=True)


def table_distribution() -> pd.Series:
    return pd.read_csv(SUBSET, sep=";", dtype=str)[SENS].value_counts(normalize=True)


def pandas_breaks(star: pd.DataFrame, params: dict) -> set[str]:
    """What the * rows break, computed from the file alone (module docstring)."""
    out: set[str] = set()
    if len(star) == 0:
        return out
    if "k" in params and len(star) < params["k"]:
        out.add(f"k = {params['k']}")
    if "l" in params and star[SENS].nunique() < params["l"]:
        out.add(f"distinct l = {params['l']}")
    if "t" in params:
        p = table_distribution()
        q = star[SENS].value_counts(normalize=True).reindex(p.index, fill_value=0.0)
        if 0.5 * float((q - p).abs().sum()) > params["t"] + 1e-9:
            out.add(f"t = {params['t']:g} (emd)")
    return out


def tune_json(capsys, mode: str, sup: str = SUP, *extra: str) -> dict:
    assert main([*TUNE, "--max-suppression", sup, "--suppressed-rows", mode, "--json", "--quiet", *extra]) == 0
    return json.loads(capsys.readouterr()[0])


def remake(capsys, tmp_path: Path, name: str, mode: str, params: dict, sup: str = SUP) -> tuple[pd.DataFrame, dict]:
    """The release tune measured for ``params``, made again by ``ppdm anonymize`` (same algorithm, metric,
    budget and handling of suppressed rows): the written file and its report."""
    out, rep = tmp_path / f"{name}.csv", tmp_path / f"{name}.json"
    argv = ["anonymize", str(SUBSET), "-o", str(out), "--qi", QIS, "--sensitive", SENS, "--hierarchies", str(DATA)]
    argv += ["--algorithm", "flash", "--metric", "ncp", "--max-suppression", sup, "--suppressed-rows", mode]
    argv += ["--k", str(params["k"]), "--quiet", "--queries", "0", "--report", str(rep)]
    if "l" in params:
        argv += ["--l", str(params["l"])]
    if "t" in params:
        argv += ["--t", str(params["t"])]
    assert main(argv) == 0, capsys.readouterr()[1]
    capsys.readouterr()
    return fresh(out), json.loads(rep.read_text())


def row_for(table: list[dict], **params) -> dict:
    return next(r for r in table if all(r.get(k) == v for k, v in params.items()))


# ---------------------------------------------------------------------------------------------- ppdm tune
@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """``ppdm tune`` with arx and with star (JSON), same settings: run once for the module."""
    import contextlib
    import io

    out = {}
    for mode in ("arx", "star"):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main([*TUNE, "--max-suppression", SUP, "--suppressed-rows", mode, "--json", "--quiet"]) == 0
        out[mode] = json.loads(buf.getvalue())
    return out


def test_tune_records_the_mode_and_says_the_star_group_is_not_judged(tuned):
    arx, star = tuned["arx"], tuned["star"]
    assert arx["suppressed_rows"] == "arx" and star["suppressed_rows"] == "star"
    assert arx["max_suppression"] == star["max_suppression"] == pytest.approx(0.01)
    assert "not judged" in arx["measured_on"] and "outside the * group" in arx["measured_on"]
    assert "not judged" not in star["measured_on"]
    # every arx release carries the group's verdict; star releases have none (their * class is judged)
    assert all("suppressed_group" in r for r in arx["k"]["table"] if r["ok"])
    assert not any("suppressed_group" in r for r in star["k"]["table"])
    assert "suppressed_group" in arx["k"] and "suppressed_group" not in star["k"]
    # the case is not vacuous: some arx release suppresses rows and its * group breaks its k
    assert any(r["suppressed_group"]["breaks"] for r in arx["k"]["table"] if r["ok"])


def test_tune_arx_verdicts_in_the_k_table_are_the_group_size_against_k(tuned):
    for r in tuned["arx"]["k"]["table"]:
        if not r["ok"]:
            continue
        g = r["suppressed_group"]
        assert g["rows"] == r["suppressed"]
        assert (f"k = {r['k']}" in g["breaks"]) == (0 < g["rows"] < r["k"])
        assert g["holds"] == (not g["breaks"])


def test_tune_arx_chosen_k_release_is_what_pycanon_measures_outside_the_star_group(capsys, tmp_path, tuned):
    rep = tuned["arx"]
    k = rep["k"]["chosen"]
    row = row_for(rep["k"]["table"], k=k)
    df, arep = remake(capsys, tmp_path, "k", "arx", {"k": k})
    assert arep["levels"] == row["levels"]  # the same release tune measured
    kept, star = split_star(df)
    assert len(star) == row["suppressed"] == rep["k"]["suppressed_group"]["rows"] > 0
    alpha, k_file = pycanon.alpha_k_anonymity(kept, QI_LIST, [SENS])
    assert k_file == row["k_achieved"] >= k
    assert alpha == pytest.approx(row["disclosure"])
    assert pycanon.l_diversity(kept, QI_LIST, [SENS]) == row["l_achieved"]
    # consistent with ppdm anonymize --suppressed-rows arx: its achieved and its * group verdict
    assert arep["metrics"]["achieved"]["k"] == row["k_achieved"]
    assert arep["metrics"]["suppressed_group"] == rep["k"]["suppressed_group"]
    # the verdict, recomputed from the file's * rows
    assert set(rep["k"]["suppressed_group"]["breaks"]) == pandas_breaks(star, {"k": k})
    # here the group breaks k (so the star file, read whole, is weaker than the claim — the claim is outside it)
    assert rep["k"]["suppressed_group"]["breaks"] == [f"k = {k}"]
    assert pycanon.k_anonymity(df, QI_LIST) == len(star) < k


def test_tune_arx_algorithm_1_and_2_releases_have_the_claimed_l_and_verdicts(capsys, tmp_path, tuned):
    rep = tuned["arx"]
    lv, tv = rep["l"], rep["t"]
    assert lv["chosen"] is not None and tv["chosen"] is not None
    lrow = row_for(lv["table"], k=lv["k"], l=lv["chosen"])
    df, arep = remake(capsys, tmp_path, "l", "arx", {"k": lv["k"], "l": lv["chosen"]})
    assert arep["levels"] == lrow["levels"]
    kept, star = split_star(df)
    assert len(star) == lv["suppressed_group"]["rows"] == lrow["suppressed"]
    l_file = pycanon.l_diversity(kept, QI_LIST, [SENS])
    assert l_file == lrow["l_achieved"] >= lv["chosen"]
    assert pycanon.k_anonymity(kept, QI_LIST) == lrow["k_achieved"] >= lv["k"]
    alpha = pycanon.alpha_k_anonymity(kept, QI_LIST, [SENS])[0]
    assert alpha == pytest.approx(lrow["disclosure"]) and alpha <= 0.5
    assert set(lv["suppressed_group"]["breaks"]) == pandas_breaks(star, {"k": lv["k"], "l": lv["chosen"]})
    assert arep["metrics"]["suppressed_group"] == lv["suppressed_group"]
    # Algorithm 2's t: the group's verdict on t too (total variation to the whole table)
    trow = row_for(tv["table"], k=tv["k"], t=tv["chosen"])
    df, arep = remake(capsys, tmp_path, "t", "arx", {"k": tv["k"], "t": tv["chosen"]})
    kept, star = split_star(df)
    assert len(star) == tv["suppressed_group"]["rows"] == trow["suppressed"]
    assert pycanon.k_anonymity(kept, QI_LIST) == trow["k_achieved"] >= tv["k"]
    assert set(tv["suppressed_group"]["breaks"]) == pandas_breaks(star, {"k": tv["k"], "t": tv["chosen"]})
    assert arep["metrics"]["achieved"]["k"] == trow["k_achieved"]


def test_tune_star_chosen_release_meets_the_claim_on_the_whole_file(capsys, tmp_path, tuned):
    rep = tuned["star"]
    k = rep["k"]["chosen"]
    row = row_for(rep["k"]["table"], k=k)
    df, arep = remake(capsys, tmp_path, "star", "star", {"k": k})
    assert arep["levels"] == row["levels"]
    alpha, k_file = pycanon.alpha_k_anonymity(df, QI_LIST, [SENS])  # the * class included
    assert k_file == row["k_achieved"] >= k
    assert alpha == pytest.approx(row["disclosure"])
    assert pycanon.l_diversity(df, QI_LIST, [SENS]) == row["l_achieved"]
    _, star = split_star(df)
    assert len(star) == row["suppressed"] and (len(star) == 0 or len(star) >= k)


def test_arx_accepts_every_release_star_accepts_and_loses_no_more(tuned):
    """Guaranteed per k: the nodes star accepts are a subset of those arx accepts, so arx has a release
    whenever star does and its optimal NCP is no larger (and the quality bound holds at least as often)."""
    arx = {r["k"]: r for r in tuned["arx"]["k"]["table"]}
    star = {r["k"]: r for r in tuned["star"]["k"]["table"]}
    assert arx.keys() == star.keys()
    for k, s in star.items():
        if s["ok"]:
            assert arx[k]["ok"]
            assert arx[k]["ncp"] <= s["ncp"] + 1e-12
            assert arx[k]["quality_ok"] or not s["quality_ok"]
    assert any(arx[k]["ncp"] < star[k]["ncp"] - 1e-9 for k in star if star[k]["ok"])  # not vacuous


def test_without_a_budget_arx_and_star_are_the_same_releases(capsys):
    arx = tune_json(capsys, "arx", "0", "--k-range", "2:12")
    star = tune_json(capsys, "star", "0", "--k-range", "2:12")
    assert arx["k"]["chosen"] == star["k"]["chosen"] and arx["l"]["chosen"] == star["l"]["chosen"]
    for a, s in zip(arx["k"]["table"], star["k"]["table"], strict=True):
        assert a["levels"] == s["levels"] and a["suppressed"] == s["suppressed"] == 0
        assert (a["k_achieved"], a["l_achieved"], a["disclosure"]) == (
            s["k_achieved"],
            s["l_achieved"],
            s["disclosure"],
        )
        assert a["suppressed_group"]["rows"] == 0 and a["suppressed_group"]["breaks"] == []


def test_tune_text_says_the_group_is_not_judged_and_what_it_breaks(capsys, tuned):
    assert main([*TUNE, "--max-suppression", SUP, "--suppressed-rows", "arx", "--quiet"]) == 0
    text = capsys.readouterr()[0]
    k = tuned["arx"]["k"]["chosen"]
    g = tuned["arx"]["k"]["suppressed_group"]
    assert "suppressed rows: arx" in text and "not judged" in text
    line = next(ln for ln in text.splitlines() if ln.strip().startswith(f"* group at k = {k}:"))
    assert f"the * group of {g['rows']:,} rows is not judged and breaks k = {k}" in line


def test_tune_sweep_qi_passes_the_mode_through(capsys):
    rep = tune_json(capsys, "arx", SUP, "--k-range", "2:8", "--sweep-qi")
    assert rep["suppressed_rows"] == "arx"
    rows = [r for r in rep["sweep_qi"] if r["ok"]]
    assert rows and all("suppressed_group" in r and r["suppressed_group"]["rows"] == r["suppressed"] for r in rows)


# ---------------------------------------------------------------------------------------------- library
def test_k_sweep_under_arx_chooses_what_flash_chooses():
    """The one-pass k sweep asks nothing of the suppressed rows under arx (ARX's outliers), as the lattice does."""
    df = pd.read_csv(SUBSET, sep=";", dtype=str)
    qis = ["age", "sex", "race", "education"]
    table = EncodedTable.encode(df, Schema(qis, [SENS]), read_hierarchies(DATA, columns=qis))
    ev = ReleaseEvaluator(table, "flash", max_suppression=0.01, suppressed_rows="arx", search_metric="ncp")
    got = ev.evaluate_k(range(2, 41))
    assert ev.sweep_stats["region_nodes"] > 0
    broken = 0
    for k in range(2, 41):
        fl = flash(Lattice(table, [KAnonymity(k)], 0.01, suppressed_rows="arx"), metric="ncp").chosen
        assert got[k].ok and tuple(got[k].levels.values()) == tuple(fl.levels)
        assert got[k].suppressed == fl.suppressed
        assert got[k].suppressed_group is not None and got[k].suppressed_group["rows"] == fl.suppressed
        broken += bool(got[k].suppressed_group["breaks"])
    assert broken  # some * group is smaller than its k: star would have refused that node


def test_measure_candidate_under_arx_uses_the_whole_table_as_t_reference():
    """arx measures t against the whole table (as ARX and the lattice check), drop against the rows kept."""
    df = pd.read_csv(SUBSET, sep=";", dtype=str)
    table = EncodedTable.encode(df, Schema(QI_LIST, [SENS]), read_hierarchies(DATA, columns=QI_LIST))
    rng = np.random.default_rng(0)
    cid = rng.integers(0, 40, table.n)
    sup = np.zeros(table.n, dtype=bool)
    sup[np.flatnonzero(table.sens_codes[:, 0] == 0)[:80]] = True  # skew what is kept
    lo = hi = np.zeros((table.n, len(QI_LIST)))
    arx = measure_candidate(table, cid, 40, sup, lo, hi, suppressed_rows="arx", models=[KAnonymity(100)])
    drop = measure_candidate(table, cid, 40, sup, lo, hi, suppressed_rows="drop")
    assert arx["k_achieved"] == drop["k_achieved"] and arx["l_achieved"] == drop["l_achieved"]
    assert arx["disclosure"] == drop["disclosure"]
    assert arx["t_achieved"] != pytest.approx(drop["t_achieved"])
    assert arx["suppressed_group"]["rows"] == 80 and arx["suppressed_group"]["breaks"] == ["k = 100"]
    assert drop["suppressed_group"] is None
    with pytest.raises(Exception, match="unknown handling of suppressed rows 'foo'"):
        measure_candidate(table, cid, 40, sup, lo, hi, suppressed_rows="foo")


def test_pmax_floor_under_arx_counts_the_unjudged_rows_like_drop():
    df = pd.read_csv(SUBSET, sep=";", dtype=str)
    table = EncodedTable.encode(df, Schema(QI_LIST, [SENS]), read_hierarchies(DATA, columns=QI_LIST))
    share = df[SENS].value_counts().iloc[0]
    d = int(0.05 * table.n)
    just_below_star = share / table.n - 1e-6  # refused under star, possible when up to d rows are not judged
    with pytest.raises(Exception, match="impossible for this table"):
        check_possible(table, PrivacyRequirement(just_below_star), 0.05, "star")
    assert (share - d) / (table.n - d) < just_below_star
    check_possible(table, PrivacyRequirement(just_below_star), 0.05, "arx")
    check_possible(table, PrivacyRequirement(just_below_star), 0.05, "drop")


# ---------------------------------------------------------------------------------------------- ppdm publish
POLICY = """
version = 1
[owner]
pmax = 0.5
[release]
max_suppression = 0.01
suppressed_rows = "{rows}"
[quality]
metric = "ncp"
bound = 0.7
[purposes]
research = "studies"
[users.bob]
levels = {{ research = "r" }}
[levels.r]
model = "{model}"
algorithm = "flash"
{params}
kinds = []
escalate = false
"""


def write_policy(tmp_path: Path, rows: str = "star", model: str = "k-anonymity", params: str = "k = 9") -> Path:
    p = tmp_path / "policy.toml"
    p.write_text(POLICY.format(rows=rows, model=model, params=params))
    return p


def publish(capsys, tmp_path: Path, policy: Path, *extra: str, user: str = "bob", purpose: str = "research"):
    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    argv = ["publish", str(SUBSET), "-o", str(out), "--policy", str(policy), "--user", user, "--purpose", purpose]
    argv += ["--qi", QIS, "--sensitive", SENS, "--hierarchies", str(DATA), "--report", str(rep), "--queries", "0"]
    code = main([*argv, *extra])
    so, se = capsys.readouterr()
    return code, so, se, out, rep


def test_publish_arx_adjusts_above_the_level_and_measures_outside_the_star_group(capsys, tmp_path):
    """Level k = 9 misses pmax (P = 0.6 outside the group), so the engine adjusts k; the release's k, l and
    P hold on the classes outside the * group (pycanon), the level's k is a minimum there, and the group's
    verdict — it breaks the chosen k — is what pandas finds on the * rows."""
    code, so, se, out, rep = publish(capsys, tmp_path, write_policy(tmp_path), "--suppressed-rows", "arx")
    assert code == 0, se
    r = json.loads(rep.read_text())
    assert r["suppressed_rows"] == "arx" and r["policy_suppressed_rows"] == "star"
    assert r["suppressed_rows_from"] == "--suppressed-rows"
    assert r["release"]["parameters"]["suppressed_rows"] == "arx"
    dec, m = r["decision"], r["measured"]
    assert dec["suppressed_rows"] == "arx" and "not judged" in dec["measured_on"] == m["measured_on"]
    chosen = dec["chosen"]
    k = chosen["parameters"]["k"]
    assert dec["adjusted_parameters"] and k >= 9  # the level's k is a minimum through the adjustment
    assert dec["steps"][0]["parameters"] == {"k": 9} and not dec["steps"][0]["privacy_ok"]
    kept, star = split_star(fresh(out))
    alpha, k_file = pycanon.alpha_k_anonymity(kept, QI_LIST, [SENS])
    assert k_file == m["k"] == chosen["k"] >= k >= 9
    assert alpha == pytest.approx(m["disclosure"]) and alpha <= 0.5
    assert pycanon.l_diversity(kept, QI_LIST, [SENS]) == m["l"] == chosen["l"]
    g = m["suppressed_group"]
    assert g == chosen["suppressed_group"] == r["release"]["metrics"]["suppressed_group"]
    assert len(star) == g["rows"] > 0
    assert set(g["breaks"]) == pandas_breaks(star, {"k": k}) == {f"k = {k}"}  # not vacuous: the group breaks k
    assert f"P = {m['disclosure']:.3g} <= 0.5 outside the * group" in so
    assert f"the * group of {g['rows']:,} rows is not judged and breaks k = {k}" in so


def test_publish_star_meets_the_claim_on_the_whole_file(capsys, tmp_path):
    code, so, se, out, rep = publish(capsys, tmp_path, write_policy(tmp_path))
    assert code == 0, se
    r = json.loads(rep.read_text())
    assert r["suppressed_rows"] == "star" and r["suppressed_rows_from"] == "policy"
    assert "suppressed_group" not in r["measured"] and "not judged" not in r["measured"]["measured_on"]
    df = fresh(out)
    alpha, k_file = pycanon.alpha_k_anonymity(df, QI_LIST, [SENS])  # the * class included
    k = r["decision"]["chosen"]["parameters"]["k"]
    assert k_file == r["measured"]["k"] >= k >= 9
    assert alpha == pytest.approx(r["measured"]["disclosure"]) and alpha <= 0.5
    assert pycanon.l_diversity(df, QI_LIST, [SENS]) == r["measured"]["l"]
    _, star = split_star(df)
    assert len(star) == 0 or len(star) >= k
    assert "not judged" not in so


def test_publish_arx_from_the_policy_file_keeps_the_l_diversity_level_minimums(capsys, tmp_path):
    policy = write_policy(tmp_path, rows="arx", model="l-diversity", params="k = 5\nl = 3")
    assert load_policy(policy).release.suppressed_rows == "arx"
    code, so, se, out, rep = publish(capsys, tmp_path, policy)
    assert code == 0, se
    r = json.loads(rep.read_text())
    assert r["suppressed_rows"] == "arx" and r["suppressed_rows_from"] == "policy"
    chosen = r["decision"]["chosen"]
    assert chosen["parameters"]["k"] >= 5 and chosen["parameters"]["l"] >= 3
    kept, star = split_star(fresh(out))
    assert pycanon.k_anonymity(kept, QI_LIST) == r["measured"]["k"] >= chosen["parameters"]["k"]
    assert pycanon.l_diversity(kept, QI_LIST, [SENS]) == r["measured"]["l"] >= chosen["parameters"]["l"]
    assert pycanon.alpha_k_anonymity(kept, QI_LIST, [SENS])[0] <= 0.5
    g = r["measured"]["suppressed_group"]
    assert len(star) == g["rows"]
    assert set(g["breaks"]) == pandas_breaks(star, chosen["parameters"])


def test_publish_arx_with_the_example_policy_for_every_level(capsys, tmp_path):
    for user, purpose in (("analyst", "statistics"), ("partner", "research"), ("public", "publication")):
        d = tmp_path / user
        d.mkdir()
        code, so, se, out, rep = publish(capsys, d, EXAMPLE, "--suppressed-rows", "arx", user=user, purpose=purpose)
        assert code == 0, se
        r = json.loads(rep.read_text())
        chosen, level = r["decision"]["chosen"], r["decision"]["level"]["parameters"]
        kept, star = split_star(fresh(out))
        alpha, k_file = pycanon.alpha_k_anonymity(kept, QI_LIST, [SENS])
        assert k_file == r["measured"]["k"] >= chosen["parameters"]["k"] >= level["k"]
        assert alpha == pytest.approx(r["measured"]["disclosure"]) and alpha <= load_policy(EXAMPLE).owner.pmax
        if "l" in chosen["parameters"]:
            assert pycanon.l_diversity(kept, QI_LIST, [SENS]) >= chosen["parameters"]["l"] >= level.get("l", 1)
        g = r["measured"]["suppressed_group"]
        assert len(star) == g["rows"] and set(g["breaks"]) == pandas_breaks(star, chosen["parameters"])


# ---------------------------------------------------------------------------------------------- bad values
def test_bad_suppressed_rows_values_are_one_line_errors_and_write_nothing(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main([*TUNE, "--suppressed-rows", "foo"])
    err = capsys.readouterr()[1]
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("ppdm: error: argument --suppressed-rows: invalid choice: 'foo'")

    out = tmp_path / "out.csv"
    with pytest.raises(SystemExit) as e:
        publish(capsys, tmp_path, write_policy(tmp_path), "--suppressed-rows", "foo")
    err = capsys.readouterr()[1]
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1 and "invalid choice: 'foo'" in err
    assert not out.exists() and not (tmp_path / "rep.json").exists()

    policy = write_policy(tmp_path, rows="foo")
    code, so, se, out, rep = publish(capsys, tmp_path, policy)
    lines = [ln for ln in se.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("ppdm: error: ")
    assert "'release.suppressed_rows' must be one of star, drop, arx, got 'foo'" in lines[0]
    assert not out.exists() and not rep.exists()
