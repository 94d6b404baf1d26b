"""Security-level policies and ``ppdm publish`` / ``ppdm tune`` end to end.

Releases are re-measured by pycanon (α of (α, k)-anonymity = the disclosure probability, k, l) on the
file as written; bad policies, unknown users or purposes, impossible and conflicting requirements
must each give one line ``ppdm: error: ...``, exit 2 and no output file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pycanon import anonymity as pycanon

from anonymize.publish import registry
from anonymize.publish.policy.engine import candidate_methods
from anonymize.publish.policy.policyfile import load_policy
from anonymize.publish.registry import PartitionResult
from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
SUBSET = DATA / "adult_subset.csv"
EXAMPLE = ROOT / "examples" / "policy.toml"
QIS = "age,sex,race,marital-status,education,workclass"
QI_LIST = QIS.split(",")
SENS = "occupation"


def publish(capsys, tmp_path, policy, user, purpose, *extra):
    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    code = main(
        [
            "publish",
            str(SUBSET),
            "-o",
            str(out),
            "--policy",
            str(policy),
            "--user",
            user,
            "--purpose",
            purpose,
            "--qi",
            QIS,
            "--sensitive",
            SENS,
            "--hierarchies",
            str(DATA),
            "--report",
            str(rep),
            "--queries",
            "0",
            "--quiet",
            *extra,
        ]
    )
    so, se = capsys.readouterr()
    return code, so, se, out, rep


def fresh(path) -> pd.DataFrame:
    return pd.read_csv(path, sep=";", dtype=str).reset_index(drop=True)


POLICY = """
version = 1
[owner]
pmax = {pmax}
[release]
max_suppression = 0.02
[quality]
metric = "ncp"
bound = {bound}
[purposes]
research = "studies"
statistics = "internal statistics"
[users.bob]
levels = {{ research = "r" }}
[levels.r]
model = "l-diversity"
algorithm = "flash"
k = 5
l = 3
kinds = []
escalate = false
"""


def write_policy(tmp_path, text: str) -> Path:
    p = tmp_path / "policy.toml"
    p.write_text(text)
    return p


# ---------------------------------------------------------------------------------------------- end to end
@pytest.mark.parametrize(
    "user,purpose,model",
    [
        ("analyst", "statistics", "k-anonymity"),
        ("partner", "research", "l-diversity"),
        ("public", "publication", "t-closeness"),
    ],
)
def test_publish_example_policy_meets_both_requirements_as_pycanon_measures(capsys, tmp_path, user, purpose, model):
    code, so, se, out, rep = publish(capsys, tmp_path, EXAMPLE, user, purpose)
    assert code == 0, se
    pol = load_policy(EXAMPLE)
    r = json.loads(rep.read_text())
    dec = r["decision"]
    assert dec["user"] == user and dec["purpose"] == purpose
    assert dec["level"]["name"] == pol.users[user].levels[purpose]
    chosen = dec["chosen"]
    assert chosen["model"] in ("k-anonymity", "l-diversity", "t-closeness")
    # never weaker than the level's model
    order = ["k-anonymity", "l-diversity", "t-closeness"]
    assert order.index(chosen["model"]) >= order.index(model)
    assert dec["steps"] and all({"phase", "privacy_ok", "quality_ok"} <= set(s) for s in dec["steps"])
    # the file as written, measured by pycanon
    df = fresh(out)
    alpha, k = pycanon.alpha_k_anonymity(df, QI_LIST, [SENS])
    assert alpha <= pol.owner.pmax + 1e-12
    assert alpha == pytest.approx(r["measured"]["disclosure"])
    assert k == r["measured"]["k"] >= chosen["parameters"]["k"]
    if chosen["model"] == "l-diversity":
        assert pycanon.l_diversity(df, QI_LIST, [SENS]) >= chosen["parameters"]["l"]
    if chosen["model"] == "t-closeness":
        assert pycanon.t_closeness(df, QI_LIST, [SENS]) <= chosen["parameters"]["t"] + 1e-9
    quality = pol.quality_for(user)
    assert r["measured"][quality.metric] <= quality.bound
    assert r["release"]["metrics"]["ncp"]["ncp"] == pytest.approx(r["measured"]["ncp"])


def test_homogeneity_attack_on_the_published_file_succeeds_at_most_pmax(capsys, tmp_path):
    """The adversary knows a target's QIs and that she is in the release; she guesses the most common
    sensitive value of the target's class. Her success probability, for every target, is at most pmax."""
    code, _, se, out, _ = publish(capsys, tmp_path, EXAMPLE, "partner", "research")
    assert code == 0, se
    df = fresh(out)
    guess = df.groupby(QI_LIST)[SENS].transform(lambda s: s.value_counts().iloc[0] / len(s))
    assert guess.max() <= load_policy(EXAMPLE).owner.pmax + 1e-12


def test_parameters_are_adjusted_when_the_level_s_initial_ones_miss_pmax(capsys, tmp_path):
    # the internal level asks k = 5, whose release has P = 0.8 > 0.5: the engine must move k
    code, so, se, out, rep = publish(capsys, tmp_path, EXAMPLE, "analyst", "statistics")
    assert code == 0, se
    dec = json.loads(rep.read_text())["decision"]
    first = dec["steps"][0]
    assert first["phase"] == "initial" and first["parameters"] == {"k": 5} and not first["privacy_ok"]
    assert dec["adjusted_parameters"] and dec["chosen"]["parameters"]["k"] != 5


# ---------------------------------------------------------------------------------------------- errors
def one_line_error(capsys, tmp_path, policy_text, user="bob", purpose="research", match=""):
    p = write_policy(tmp_path, policy_text)
    code, so, se, out, rep = publish(capsys, tmp_path, p, user, purpose)
    assert code == 2, (so, se)
    lines = [ln for ln in se.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ppdm: error: "), se
    assert match in lines[0], lines[0]
    assert not out.exists() and not rep.exists()
    return lines[0]


GOOD = POLICY.format(pmax=0.5, bound=0.6)


@pytest.mark.parametrize(
    "edit,match",
    [
        (lambda s: s.replace("l = 3\n", "l = 3\nkk = 1\n"), "unknown key 'levels.r.kk'"),
        (lambda s: s.replace("version = 1\n", "version = 1\nextra = 2\n"), "unknown key 'extra'"),
        (lambda s: s.replace("pmax = 0.5", "pmax = 0"), "'owner.pmax' must be in (0, 1]"),
        (lambda s: s.replace("pmax = 0.5", "pmax = 1.5"), "'owner.pmax' must be in (0, 1]"),
        (lambda s: s.replace("pmax = 0.5", 'pmax = "half"'), "'owner.pmax' must be a number"),
        (lambda s: s.replace("k = 5", "k = 0"), "'levels.r.k' must be at least 1"),
        (lambda s: s.replace("l = 3\n", ""), "missing key 'levels.r.l'"),
        (lambda s: s.replace("l = 3\n", "l = 3\nt = 0.2\n"), "'levels.r.t' is a parameter of t-closeness"),
        (
            lambda s: s.replace('model = "l-diversity"', 'model = "t-closeness"').replace("l = 3", "t = 1.5"),
            "'levels.r.t' must be in [0, 1]",
        ),
        (lambda s: s.replace('model = "l-diversity"', 'model = "delta-presence"'), "'levels.r.model' must be one of"),
        (lambda s: s.replace('algorithm = "flash"', 'algorithm = "magic"'), "unknown algorithm 'magic'"),
        (lambda s: s.replace("bound = 0.6", "bound = 2"), "an NCP bound above 1"),
        (lambda s: s.replace('metric = "ncp"', 'metric = "accuracy"'), "'quality.metric' must be one of"),
        (lambda s: s.replace('research = "r"', 'research = "nope"'), "unknown level 'nope'"),
        (lambda s: s.replace('research = "r"', 'marketing = "r"'), "unknown purpose 'marketing'"),
        (lambda s: s.replace("max_suppression = 0.02", "max_suppression = 2"), "'release.max_suppression'"),
        (lambda s: s.replace("[owner]", "[owner"), "not valid TOML"),
    ],
)
def test_bad_policy_files_give_one_line_naming_the_key(capsys, tmp_path, edit, match):
    one_line_error(capsys, tmp_path, edit(GOOD), match=match)


def test_unknown_user_and_purpose_and_purpose_not_allowed(capsys, tmp_path):
    assert "unknown user 'eve'" in one_line_error(capsys, tmp_path, GOOD, user="eve")
    assert "unknown purpose 'marketing'" in one_line_error(capsys, tmp_path, GOOD, purpose="marketing")
    line = one_line_error(capsys, tmp_path, GOOD, purpose="statistics")
    assert "user 'bob' may not receive data for purpose 'statistics' (allowed: research)" in line


def test_pmax_below_the_most_frequent_value_is_impossible_for_the_table(capsys, tmp_path):
    line = one_line_error(capsys, tmp_path, POLICY.format(pmax=0.1, bound=0.6), match="impossible for this table")
    assert "'occupation' = 'Craft-repair'" in line and "pmax must be >= 0.1446" in line


def test_conflicting_requirements_say_which_and_by_how_much(capsys, tmp_path):
    text = POLICY.format(pmax=0.3, bound=0.45).replace("escalate = false", "escalate = true")
    line = one_line_error(capsys, tmp_path, text, match="conflicts with")
    assert "the owner's privacy requirement (P <= 0.3)" in line
    assert "the quality requirement of user 'bob' (NCP <= 0.45)" in line
    assert "over the bound" in line and "P = " in line


def test_requirements_unreachable_on_one_side_name_that_side(capsys, tmp_path):
    line = one_line_error(capsys, tmp_path, POLICY.format(pmax=0.9, bound=0.01), match="cannot be met")
    assert line.startswith("ppdm: error: the quality requirement of user 'bob' (NCP <= 0.01) cannot be met")
    assert "over the bound" in line
    # pmax 0.5 is reachable (K_min's walk finds a k-anonymous release with P <= 0.5): only quality is out of reach,
    # and the message must not blame privacy (it said "neither ... nor" when the search stopped at quality)
    line = one_line_error(capsys, tmp_path, POLICY.format(pmax=0.5, bound=0.01), match="cannot be met")
    assert line.startswith("ppdm: error: the quality requirement of user 'bob' (NCP <= 0.01) cannot be met")
    assert "privacy requirement" not in line
    line = one_line_error(capsys, tmp_path, POLICY.format(pmax=0.15, bound=0.01), match="neither")
    assert "the owner's privacy requirement (P <= 0.15)" in line and "NCP <= 0.01" in line


def test_the_evaluation_budget_is_reported(capsys, tmp_path):
    text = POLICY.format(pmax=0.3, bound=0.45).replace(
        "max_suppression = 0.02", "max_suppression = 0.02\nmax_evaluations = 2"
    )
    one_line_error(capsys, tmp_path, text, match="stopped after 2 algorithm runs")


def test_a_level_whose_algorithm_cannot_honour_its_model_is_refused(capsys, tmp_path):
    @registry.register("test-k-only-policy", kind=registry.PARTITION, summary="one class", accepts=["k-anonymity"])
    def one_class(table, models, progress=None):
        return PartitionResult(np.zeros(table.n, dtype=np.int64), 1)

    try:
        text = GOOD.replace('algorithm = "flash"', 'algorithm = "test-k-only-policy"')
        one_line_error(capsys, tmp_path, text, match="test-k-only-policy cannot honour l-diversity")
    finally:
        registry.unregister("test-k-only-policy")


# ---------------------------------------------------------------------------------------------- registry
def test_methods_come_from_the_registry_so_a_new_algorithm_is_used_without_code_changes(capsys, tmp_path):
    """A clustering algorithm registered at run time (as the clustering package will) is found by kind and
    accepted model; when the level's algorithm cannot meet the quality bound, the engine switches to it."""

    @registry.register(
        "test-clustering", kind=registry.CLUSTERING, summary="Mondrian in disguise", accepts=["k-anonymity"]
    )
    def clusters(table, models, progress=None):
        return registry.get("mondrian").run(table, models, mode="strict")

    try:
        text = (
            POLICY.format(pmax=0.9, bound=0.35)
            .replace('model = "l-diversity"', 'model = "k-anonymity"')
            .replace("l = 3\n", "")
            .replace("kinds = []", 'kinds = ["clustering"]')
        )
        pol = load_policy(write_policy(tmp_path, text))
        methods = candidate_methods(pol.levels["r"])
        assert methods[0] == ("k-anonymity", "flash") and ("k-anonymity", "test-clustering") in methods
        assert all(registry.get(a).kind in ("full-domain", "clustering") for _, a in methods)
        code, so, se, out, rep = publish(capsys, tmp_path, tmp_path / "policy.toml", "bob", "research")
        assert code == 0, se
        dec = json.loads(rep.read_text())["decision"]
        # the engine switched to a clustering algorithm it found in the registry (the built-in ones are
        # registered too now, and one of them may meet the bound before the test's own is tried)
        assert registry.get(dec["chosen"]["algorithm"]).kind == "clustering" and dec["changed_method"]
        assert any(s["algorithm"] == "flash" and not s["quality_ok"] for s in dec["steps"])
        df = fresh(out)
        alpha, k = pycanon.alpha_k_anonymity(df, QI_LIST, [SENS])
        assert alpha <= 0.9 and k >= dec["chosen"]["parameters"]["k"]
    finally:
        registry.unregister("test-clustering")


# ---------------------------------------------------------------------------------------------- tune
def test_tune_end_to_end_json_and_text(capsys, tmp_path):
    args = ["tune", str(SUBSET), "--qi", QIS, "--sensitive", SENS, "--hierarchies", str(DATA), "--pmax", "0.5"]
    args += ["--quality-bound", "0.55", "--quality-metric", "ncp", "--max-suppression", "0.02", "--k-range", "2:20"]
    assert main([*args, "--json", "--quiet"]) == 0
    rep = json.loads(capsys.readouterr()[0])
    k = rep["k"]
    assert [r["k"] for r in k["table"]] == list(range(2, 21))
    # K_min: the first k from ceil(1/pmax) = 2 whose release has P <= pmax (eq. 1 with t measured)
    assert k["kmin_bound"] == 2 and k["kmin"] == next(r["k"] for r in k["table"] if r["disclosure"] <= 0.5)
    ok = [r["k"] for r in k["table"] if r["quality_ok"]]
    assert k["kmax"] == max(ok) and k["chosen"] == k["kmin"] + (k["kmax"] - k["kmin"]) // 2
    for r in k["table"]:
        assert {"ncp", "cdm", "disclosure", "privacy_ok", "quality_ok"} <= set(r)
        assert r["privacy_ok"] == (r["disclosure"] <= 0.5)
    assert rep["l"]["chosen"] is not None and rep["l"]["curve"]
    assert rep["t"]["step"] == pytest.approx(max(round(rep["t"]["d_min"], 2), 0.01))
    # the release at the chosen k, re-made with ppdm anonymize and measured by pycanon, has the reported P
    out = tmp_path / "k.csv"
    code = main(
        ["anonymize", str(SUBSET), "-o", str(out), "--qi", QIS, "--sensitive", SENS, "--hierarchies", str(DATA)]
        + ["--algorithm", "flash", "--k", str(k["chosen"]), "--max-suppression", "0.02", "--quiet", "--queries", "0"]
    )
    assert code == 0
    row = next(r for r in k["table"] if r["k"] == k["chosen"])
    assert pycanon.alpha_k_anonymity(fresh(out), QI_LIST, [SENS])[0] == pytest.approx(row["disclosure"])
    assert main([*args, "--quiet"]) == 0
    text = capsys.readouterr()[0]
    assert (
        f"k: range [{k['kmin']}," in text
        and "K_min = " in text
        and "trade-off over k" in text
        and "Algorithm 2" in text
    )


@pytest.mark.parametrize(
    "extra,match",
    [
        (["--pmax", "0"], "must be in (0, 1]"),
        (["--pmax", "0.5", "--quality-bound", "-1"], "non-negative"),
        (["--pmax", "0.5", "--k-range", "9:3"], "LO <= HI"),
    ],
)
def test_tune_bad_arguments(capsys, extra, match):
    with pytest.raises(SystemExit) as e:
        main(["tune", str(SUBSET), "--qi", QIS, "--sensitive", SENS, *extra])
    assert e.value.code == 2 and match in capsys.readouterr()[1]


def test_tune_needs_a_sensitive_attribute(capsys):
    assert main(["tune", str(SUBSET), "--qi", QIS, "--pmax", "0.5"]) == 2
    assert "--sensitive needs at least one column" in capsys.readouterr()[1]


def test_two_releases_to_one_user_cannot_be_paired_by_row_position(capsys, tmp_path):
    """The complementary-release attack: the analyst gets the table for two purposes (two levels) and
    pairs the rows of both files by position, to intersect their classes. Released rows are shuffled
    afresh, so aligned rows agree on the sensitive value only at the chance rate Σ p_v², and the paired
    QIs would not narrow anyone's class."""
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir(), b_dir.mkdir()
    code, _, se, a, _ = publish(capsys, a_dir, EXAMPLE, "analyst", "statistics")
    assert code == 0, se
    code, _, se, b, _ = publish(capsys, b_dir, EXAMPLE, "analyst", "research")
    assert code == 0, se
    da, db = fresh(a), fresh(b)
    assert len(da) == len(db) == 3016
    agree = float((da[SENS].to_numpy() == db[SENS].to_numpy()).mean())
    p = da[SENS].value_counts(normalize=True)
    chance = float((p**2).sum())
    assert agree < chance + 0.05  # in input order every row would agree (agree = 1)
    # and the original order is not kept: the input's sensitive column is not the release's
    src = pd.read_csv(SUBSET, sep=";", dtype=str)
    assert float((src[SENS].to_numpy() == da[SENS].to_numpy()).mean()) < chance + 0.05


def test_a_security_levels_parameters_are_minimums_whatever_pmax_allows(tmp_path, capsys):
    """With pmax = 1 the owner accepts anything, but the 'restricted' level (k = 5, l = 3) still applies:
    the release must not be adjusted below it (issue 20: it was published as k = 2, l = 1, classes
    homogeneous). pycanon measures the written file."""
    from pathlib import Path as _Path

    import pandas as _pd
    from pycanon import anonymity as _pycanon

    from parties.cli import main

    repo = _Path(__file__).resolve().parents[1]
    text = (repo / "examples" / "policy.toml").read_text()
    policy = tmp_path / "policy.toml"
    # a quality bound the level's initial release misses (NCP 0.4565), so the engine must adjust
    policy.write_text(text.replace("pmax = 0.5 ", "pmax = 1.0 ", 1).replace("bound = 0.6\n", "bound = 0.45\n", 1))
    assert "pmax = 1.0" in policy.read_text() and "bound = 0.45" in policy.read_text()
    qis = "age,sex,race,marital-status,education,workclass"
    out = tmp_path / "release.csv"
    argv = ["publish", str(repo / "anonymize" / "data" / "adult_subset.csv"), "-o", str(out), "--policy",
            str(policy), "--user", "partner", "--purpose", "research", "--qi", qis, "--sensitive", "occupation",
            "--hierarchies", str(repo / "anonymize" / "data"), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    df = _pd.read_csv(out, sep=None, engine="python")
    q = qis.split(",")
    kept = df[~(df[q] == "*").all(axis=1)].reset_index(drop=True)
    assert _pycanon.k_anonymity(kept, q) >= 5
    assert _pycanon.l_diversity(kept, q, ["occupation"]) >= 3


def test_tune_and_publish_agree_on_k_and_k_min_is_measured(capsys, tmp_path):
    """K_min is the first k from ceil(1/pmax) whose release has P = t/|E| <= pmax (eq. 1 with t measured):
    ``ppdm tune`` chose ceil(1/pmax) = 2 here ("misses pmax") while ``ppdm publish`` walked on to a larger k."""
    text = POLICY.format(pmax=0.5, bound=0.6).replace('model = "l-diversity"', 'model = "k-anonymity"')
    policy = write_policy(tmp_path, text.replace("k = 5\nl = 3\n", "k = 2\n"))
    code, _, se, out, rep = publish(capsys, tmp_path, policy, "bob", "research")
    assert code == 0, se
    published_k = json.loads(rep.read_text())["decision"]["chosen"]["parameters"]["k"]
    args = ["tune", str(SUBSET), "--qi", QIS, "--sensitive", SENS, "--hierarchies", str(DATA), "--pmax", "0.5"]
    args += ["--quality-bound", "0.6", "--quality-metric", "ncp", "--max-suppression", "0.02"]
    assert main([*args, "--json", "--quiet"]) == 0
    k = json.loads(capsys.readouterr()[0])["k"]
    assert k["kmin_bound"] == 2 and k["meets_pmax"] and k["kmin_note"] is None
    rows = {r["k"]: r for r in k["table"]}
    # K_min by the table itself: every k below it misses pmax, K_min meets it
    assert rows[k["kmin"]]["disclosure"] <= 0.5 and all(rows[j]["disclosure"] > 0.5 for j in range(2, k["kmin"]))
    assert k["kmin"] > 2
    assert k["chosen"] == published_k
    # and pycanon measures P = alpha <= pmax on the published file, with t = alpha * |E| repetitions
    alpha, kk = pycanon.alpha_k_anonymity(fresh(out), QI_LIST, [SENS])
    assert alpha <= 0.5 and kk >= published_k


def test_a_t_violation_is_reported_as_a_distance_to_t_not_to_pmax(capsys, tmp_path):
    text = POLICY.format(pmax=0.9, bound=0.9).replace("pmax = 0.9\n", "pmax = 0.9\nt = 0.01\n")
    line = one_line_error(capsys, tmp_path, text, match="cannot be met")
    assert "the owner's privacy requirement (P <= 0.9, t <= 0.01)" in line
    m = re.search(r"t = ([0-9.]+) > 0.01 \(\+([0-9.]+), [0-9]+% over t\)", line)
    assert m, line
    assert float(m.group(2)) == pytest.approx(float(m.group(1)) - 0.01, abs=1e-3)
    assert "over pmax" not in line  # P = 0.9 is met: the old message gave P's distance to pmax instead
