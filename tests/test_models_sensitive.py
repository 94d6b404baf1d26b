"""β-likeness, δ-disclosure privacy and (α,k)-anonymity (``anonymize/publish/models_sensitive.py``).

Oracles we did not write: pycanon 1.0.1's ``basic_beta_likeness``, ``enhanced_beta_likeness``,
``delta_disclosure`` and ``alpha_k_anonymity`` (given a fresh 0..n-1 index), and pandas groupby.
Where pycanon's definition differs from the paper the test says so and checks the paper's
definition with an independent groupby computation:

* enhanced β-likeness (J. Cao, P. Karras, PVLDB 2012): every gain ``(q_v − p_v)/p_v`` with
  ``q_v > p_v`` is ≤ ``min(β, −ln p_v)``. The cap ``−ln p_v`` does not depend on β, so a table
  whose gain exceeds it fails at every β. pycanon returns ``max_v min(β_basic, −ln p_v)``, a
  finite number even then; when no cap is exceeded that number is the basic β, which is ours.
* δ-disclosure (J. Brickell, V. Shmatikov, KDD 2008): ``|ln(q_v/p_v)| < δ`` for every value, so
  every value of the table must occur in every class; pycanon skips the values absent from a
  class (as ARX does, which also takes log₂).
* (α,k)-anonymity (R. C.-W. Wong et al., KDD 2006): pycanon's ``alpha_k_anonymity`` is the
  definition (largest frequency of any value in a class, smallest class).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycanon import anonymity as pycanon

from anonymize.errors import AnonymizeError
from anonymize.publish import (
    AlphaKAnonymity,
    BetaLikeness,
    ClassStats,
    DeltaDisclosure,
    DistinctLDiversity,
    EncodedTable,
    KAnonymity,
    Schema,
    TCloseness,
    build_models,
    class_stats,
    equivalence_classes,
)
from anonymize.publish import metrics as M
from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
SUBSET = DATA / "adult_subset.csv"
QIS = "age,sex,race,marital-status,education"
QI_LIST = QIS.split(",")
HYP = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

small_tables = st.integers(0, 2**31 - 1).map(lambda s: np.random.default_rng(s))


def _random_table(rng) -> pd.DataFrame:
    """Few classes, 2–4 skewed sensitive values: every model passes on some tables and fails on others."""
    n = int(rng.integers(2, 50))
    V = int(rng.integers(2, 5))
    p = np.array([0.5, 0.25, 0.15, 0.1][:V])
    return pd.DataFrame(
        {
            "a": rng.choice(["x", "y", "z"][: int(rng.integers(1, 4))], n),
            "b": rng.integers(0, int(rng.integers(1, 3)), n),
            "s": rng.choice(list("pqru")[:V], n, p=p / p.sum()),
        }
    )


def _stats(df, qi=("a", "b")):
    t = EncodedTable.encode(df, Schema(list(qi), ["s"]))
    cid, C = equivalence_classes(t.qi_codes)
    return class_stats(t, cid, C)


def _groups(df, qi=("a", "b")):
    """Per class: the relative frequency of every value of the table (0 when absent); and the
    table's distribution — pandas groupby, independent of the code under test."""
    p = df["s"].value_counts(normalize=True)
    q = df.groupby(list(qi))["s"].value_counts(normalize=True).unstack(fill_value=0.0)
    return q.reindex(columns=p.index, fill_value=0.0), p


# ------------------------------------------------------------------ agreement with pycanon / the papers
@HYP
@given(small_tables, st.sampled_from([0.05, 0.25, 0.5, 1.0, 2.0, 5.0]))
def test_basic_beta_likeness_matches_pycanon(rng, beta):
    df = _random_table(rng)
    fresh = df.reset_index(drop=True)
    ref = pycanon.basic_beta_likeness(fresh, ["a", "b"], ["s"])
    assert BetaLikeness(beta, "basic").table_ok(_stats(df)) == (ref <= beta + 1e-9)
    got = M.measure_release(df, ["a", "b"], ["s"])["sensitive_attributes"]["s"]["beta_basic"]
    assert math.isclose(got, ref, rel_tol=1e-9, abs_tol=1e-12)


@HYP
@given(small_tables, st.sampled_from([0.05, 0.25, 0.5, 1.0, 2.0, 5.0]))
def test_enhanced_beta_likeness_matches_the_paper(rng, beta):
    df = _random_table(rng)
    q, p = _groups(df)
    gain = (q - p) / p  # Cao & Karras 2012, D(p, q), per class and value
    cap = -np.log(p)
    ref_ok = bool(((gain <= np.minimum(beta, cap) + 1e-9) | (q <= p)).to_numpy().all())
    assert BetaLikeness(beta, "enhanced").table_ok(_stats(df)) == ref_ok
    got = M.measure_release(df, ["a", "b"], ["s"])["sensitive_attributes"]["s"]["beta_enhanced"]
    capped = bool(((gain <= cap + 1e-9) | (q <= p)).to_numpy().all())
    if not capped:
        assert got is None  # no beta satisfies it: the cap -ln p does not depend on beta
    else:
        # pycanon's max_v min(beta_basic, -ln p_v) equals the basic beta, the smallest beta that holds
        fresh = df.reset_index(drop=True)
        assert math.isclose(got, pycanon.enhanced_beta_likeness(fresh, ["a", "b"], ["s"]), rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(got, pycanon.basic_beta_likeness(fresh, ["a", "b"], ["s"]), rel_tol=1e-9, abs_tol=1e-12)
        assert BetaLikeness(got + 1e-6, "enhanced").table_ok(_stats(df))


@HYP
@given(small_tables, st.sampled_from([0.1, 0.3, 0.7, 1.0, 2.0]))
def test_delta_disclosure_matches_pycanon_and_the_paper(rng, delta):
    df = _random_table(rng)
    fresh = df.reset_index(drop=True)
    q, _ = _groups(df)
    every_value_everywhere = bool((q > 0).to_numpy().all())
    ref = pycanon.delta_disclosure(fresh, ["a", "b"], ["s"])  # over the values present in each class only
    assert DeltaDisclosure(delta).table_ok(_stats(df)) == (every_value_everywhere and ref < delta)
    got = M.measure_release(df, ["a", "b"], ["s"])["sensitive_attributes"]["s"]["delta_disclosure"]
    if every_value_everywhere:
        assert math.isclose(got, ref, rel_tol=1e-9, abs_tol=1e-12)
    else:
        assert got is None


@HYP
@given(small_tables, st.sampled_from([0.34, 0.5, 0.6, 0.75, 1.0]), st.integers(1, 5))
def test_alpha_k_anonymity_matches_pycanon(rng, alpha, k):
    df = _random_table(rng)
    fresh = df.reset_index(drop=True)
    a_ref, k_ref = pycanon.alpha_k_anonymity(fresh, ["a", "b"], ["s"])
    assert AlphaKAnonymity(alpha, k).table_ok(_stats(df)) == (a_ref <= alpha + 1e-9 and k_ref >= k)
    got = M.measure_release(df, ["a", "b"], ["s"])["sensitive_attributes"]["s"]["alpha"]
    assert math.isclose(got, a_ref, rel_tol=1e-12)


# ------------------------------------------------------------------ self-description
counts = st.lists(st.integers(0, 6), min_size=4, max_size=4)


def _merge_stats(h1, h2, p):
    h = np.array([h1, h2, np.add(h1, h2)], dtype=np.int64)
    return ClassStats(h.sum(axis=1), [h], [np.asarray(p, dtype=np.float64) / np.sum(p)])


MONOTONE = [
    BetaLikeness(0.3, "basic"),
    BetaLikeness(1.0, "basic"),
    BetaLikeness(0.5, "enhanced"),
    BetaLikeness(3.0, "enhanced"),
    DeltaDisclosure(0.5),
    DeltaDisclosure(1.5),
    AlphaKAnonymity(0.5, 2),
    AlphaKAnonymity(0.4, 3),
    AlphaKAnonymity(0.75, 1),
]


noise = st.lists(st.integers(-3, 3), min_size=4, max_size=4)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.lists(st.integers(1, 9), min_size=4, max_size=4),
    st.integers(0, 3),
    noise,
    st.integers(0, 3),
    noise,
)
def test_merging_two_passing_classes_passes(p, m1, e1, m2, e2):
    """monotone_generalization: the class merged from two passing classes passes (any table distribution).
    The classes are multiples of the table's counts plus noise, so that both often pass."""
    h1 = np.maximum(np.multiply(p, m1) + e1, 0)
    h2 = np.maximum(np.multiply(p, m2) + e2, 0)
    stats = _merge_stats(h1, h2, p)
    for m in MONOTONE:
        assert m.monotone_generalization
        ok = m.class_ok(stats)
        if ok[0] and ok[1] and stats.sizes[0] and stats.sizes[1]:
            assert ok[2], (m, h1, h2, p)


@HYP
@given(small_tables)
def test_generalizing_a_qi_keeps_passing_classes_passing(rng):
    """The lattice property: classes of (a) are unions of classes of (a, b)."""
    df = _random_table(rng)
    t = EncodedTable.encode(df, Schema(["a", "b"], ["s"]))
    fine_id, Cf = equivalence_classes(t.qi_codes)
    coarse_id, Cc = equivalence_classes(t.qi_codes[:, :1])
    fine, coarse = class_stats(t, fine_id, Cf), class_stats(t, coarse_id, Cc)
    parent = np.zeros(Cf, dtype=np.int64)
    parent[fine_id] = coarse_id
    for m in MONOTONE:
        children_ok = np.ones(Cc, dtype=bool)
        np.logical_and.at(children_ok, parent, m.class_ok(fine))
        assert np.all(m.class_ok(coarse)[children_ok]), m


@settings(max_examples=200, deadline=None, derandomize=True)
@given(counts, st.sampled_from([0.3, 0.5, 0.6, 1.0]), st.integers(1, 4))
def test_alpha_k_pruning_models_are_implied(h, alpha, k):
    """(α,k) implies k-anonymity and distinct ⌈1/α⌉-diversity, its pruning models under suppression."""
    m = AlphaKAnonymity(alpha, k)
    hist = np.array([h], dtype=np.int64)
    stats = ClassStats(hist.sum(axis=1), [hist], [np.full(4, 0.25)])
    assert all(pm.monotone_suppression for pm in m.pruning_models())
    if m.class_ok(stats)[0] and stats.sizes[0]:
        assert all(pm.class_ok(stats)[0] for pm in m.pruning_models())
        assert stats.sizes[0] >= m.minimal_class_size


def test_not_monotone_under_suppression_counterexamples():
    """A passing class merged with a failing one can fail: none is monotone under suppression."""
    p = [0.9, 0.1]
    # the rare value's rows: the merged class has q = 0.5 against p = 0.1
    beta = _merge_stats([9, 1], [0, 9], p)
    for m in (BetaLikeness(1.0, "basic"), BetaLikeness(1.0, "enhanced"), DeltaDisclosure(1.0)):
        assert not m.monotone_suppression and m.pruning_models() == []
        assert list(m.class_ok(beta)) == [True, False, False], m
    # Wong et al.'s α: {a, b} passes α = 1/2, k = 2; {a} fails; {a, a, b} has q_a = 2/3
    ak = AlphaKAnonymity(0.5, 2)
    assert not ak.monotone_suppression
    assert list(ak.class_ok(_merge_stats([1, 1], [1, 0], [0.5, 0.5]))) == [True, False, False]


def test_descriptions_and_parameters():
    b = BetaLikeness(2, "basic", attribute="s")
    assert b.describe() == {"model": "beta-likeness", "beta": 2.0, "variant": "basic", "attribute": "s"}
    assert BetaLikeness(1).variant == "enhanced" and BetaLikeness(1).uses_table_distribution
    assert DeltaDisclosure(1).describe() == {"model": "delta-disclosure", "delta": 1.0, "attribute": None}
    ak = AlphaKAnonymity(0.3, 2)
    assert ak.describe() == {"model": "alpha-k-anonymity", "alpha": 0.3, "k": 2, "attribute": None}
    assert ak.minimal_class_size == 4 and not ak.uses_table_distribution  # ⌈1/0.3⌉ = 4 values
    assert AlphaKAnonymity(1 / 3, 1).minimal_class_size == 3
    pm = ak.pruning_models()
    assert [type(x) for x in pm] == [KAnonymity, DistinctLDiversity] and (pm[0].k, pm[1].l) == (2, 4)
    for m in (b, DeltaDisclosure(1), ak):
        assert m.needs_sensitive and not m.size_only and m.monotone_generalization
    assert [type(m) for m in build_models(k=3, alpha=0.5)] == [KAnonymity, AlphaKAnonymity]
    assert [m.describe()["model"] for m in build_models(beta=1, beta_variant="basic", delta=2)] == [
        "beta-likeness",
        "delta-disclosure",
    ]


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: BetaLikeness(0), "beta must be a positive number"),
        (lambda: BetaLikeness(-1), "beta must be a positive number"),
        (lambda: BetaLikeness(float("nan")), "beta must be a positive number"),
        (lambda: BetaLikeness(1, "strong"), "unknown beta-likeness variant"),
        (lambda: DeltaDisclosure(0), "delta must be a positive number"),
        (lambda: DeltaDisclosure(float("inf")), "delta must be a positive number"),
        (lambda: AlphaKAnonymity(0, 2), "alpha must be a fraction in (0, 1]"),
        (lambda: AlphaKAnonymity(1.01, 2), "alpha must be a fraction in (0, 1]"),
        (lambda: AlphaKAnonymity(0.5, 0), "k must be a positive integer"),
        (lambda: build_models(alpha=0.5), "needs k"),
    ],
)
def test_invalid_parameters(make, match):
    with pytest.raises(AnonymizeError, match=match.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_delta_needs_every_value_in_every_class():
    p = [0.5, 0.3, 0.2]
    h = np.array([[5, 3, 2], [5, 5, 0]], dtype=np.int64)
    stats = ClassStats(h.sum(axis=1), [h], [np.array(p)])
    assert list(DeltaDisclosure(100.0).class_ok(stats)) == [True, False]
    # the whole table as one class always passes: the default limit never refuses
    assert DeltaDisclosure(0.01).limit(ClassStats(np.array([10]), [np.array([[5, 3, 2]])], [np.array(p)])) is None


# ------------------------------------------------------------------ searches
@pytest.fixture(scope="module")
def subset_tables():
    from anonymize.publish import read_hierarchies, read_table

    df, hs = read_table(SUBSET), read_hierarchies(DATA)
    return {
        s: EncodedTable.encode(df, Schema(QI_LIST, [s]), {q: hs[q] for q in QI_LIST})
        for s in ("salary-class", "occupation")
    }


@pytest.mark.parametrize("sup", [0.0, 0.03])
@pytest.mark.parametrize(
    "sensitive, model",
    [
        ("salary-class", BetaLikeness(0.4, "basic")),
        ("occupation", BetaLikeness(1.5, "enhanced")),
        ("salary-class", DeltaDisclosure(0.8)),
        ("occupation", AlphaKAnonymity(0.45, 2)),
    ],
    ids=["beta-basic", "beta-enhanced", "delta", "alpha-k"],
)
def test_flash_and_incognito_find_the_exhaustive_minimal_nodes(subset_tables, sensitive, model, sup):
    """The pruning the models allow (monotone under generalization; with suppression only on their
    pruning models) loses no minimal satisfying node."""
    from anonymize.publish.fulldomain import Lattice, exhaustive
    from anonymize.publish.fulldomain.flash import flash
    from anonymize.publish.fulldomain.incognito import incognito

    table = subset_tables[sensitive]
    models = [KAnonymity(2), model]
    want = sorted(x.levels for x in exhaustive(Lattice(table, models, sup)).nodes)
    assert want
    assert sorted(x.levels for x in flash(Lattice(table, models, sup)).nodes) == want
    assert sorted(x.levels for x in incognito(Lattice(table, models, sup)).nodes) == want
    assert Lattice(table, models, sup).privacy.exact_monotone == (sup == 0.0)


# ------------------------------------------------------------------ end to end
def run(capsys, *argv):
    code = main(["anonymize", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def _anonymize(capsys, tmp_path, algorithm, sensitive, *extra):
    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    others = ",".join(c for c in ("native-country", "workclass", "occupation", "salary-class") if c != sensitive)
    code, so, se = run(
        capsys,
        SUBSET,
        "-o",
        out,
        "--qi",
        QIS,
        "--sensitive",
        sensitive,
        "--insensitive",
        others,
        "--hierarchies",
        DATA,
        "--algorithm",
        algorithm,
        "--report",
        rep,
        "--queries",
        0,
        "--quiet",
        *extra,
    )
    assert code == 0, se
    return pd.read_csv(out, sep=";", dtype=str).reset_index(drop=True), json.loads(rep.read_text()), out


def _class_frequencies(df, sa):
    q = df.groupby(QI_LIST)[sa].value_counts(normalize=True).unstack(fill_value=0.0)
    p = df[sa].value_counts(normalize=True)
    return q.reindex(columns=p.index, fill_value=0.0), p


CASES = [
    ("salary-class", ["--k", 2, "--beta", 0.5, "--beta-variant", "basic"], "beta-likeness"),
    ("occupation", ["--k", 2, "--beta", 2], "beta-likeness"),
    ("salary-class", ["--k", 2, "--delta", 1], "delta-disclosure"),
    ("occupation", ["--k", 2, "--alpha", 0.5], "alpha-k-anonymity"),
]


@pytest.mark.parametrize("algorithm", ["flash", "mondrian"])
@pytest.mark.parametrize("sensitive, extra, model", CASES, ids=["beta-basic", "beta-enhanced", "delta", "alpha-k"])
def test_anonymize_then_pycanon_on_the_written_file(capsys, tmp_path, algorithm, sensitive, extra, model):
    df, rep, _ = _anonymize(capsys, tmp_path, algorithm, sensitive, *extra)
    assert len(df) == 3016
    models = rep["parameters"]["models"]
    assert models[0] == {"model": "k-anonymity", "k": 2} and models[1]["model"] == model
    ach = rep["metrics"]["achieved"]["sensitive_attributes"][sensitive]
    assert {"beta_basic", "beta_enhanced", "delta_disclosure", "alpha", "l_distinct", "t"} <= set(ach)
    assert pycanon.k_anonymity(df, QI_LIST) >= 2
    if model == "beta-likeness":
        beta = models[1]["beta"]
        basic = pycanon.basic_beta_likeness(df, QI_LIST, [sensitive])
        assert basic <= beta + 1e-9 and math.isclose(ach["beta_basic"], basic, rel_tol=1e-9)
        if models[1]["variant"] == "enhanced":  # the cap -ln p, checked by groupby (pycanon's enhanced is not it)
            q, p = _class_frequencies(df, sensitive)
            assert (((q - p) / p <= np.log(1 / p) + 1e-9) | (q <= p)).to_numpy().all()
            assert ach["beta_enhanced"] is not None and ach["beta_enhanced"] <= beta + 1e-9
    elif model == "delta-disclosure":
        delta = models[1]["delta"]
        d = pycanon.delta_disclosure(df, QI_LIST, [sensitive])
        q, _ = _class_frequencies(df, sensitive)
        assert d < delta and (q > 0).to_numpy().all()  # every value in every class (pycanon skips absent ones)
        assert math.isclose(ach["delta_disclosure"], d, rel_tol=1e-9)
    else:
        a, k = pycanon.alpha_k_anonymity(df, QI_LIST, [sensitive])
        assert a <= models[1]["alpha"] + 1e-9 and k >= 2 and math.isclose(ach["alpha"], a, rel_tol=1e-12)


def test_dropped_rows_release_meets_delta_against_its_own_distribution(capsys, tmp_path):
    """With suppressed rows left out, the file's own distribution is the reference (uses_table_distribution)."""
    df, rep, _ = _anonymize(
        capsys,
        tmp_path,
        "flash",
        "salary-class",
        "--k",
        2,
        "--delta",
        0.5,
        "--max-suppression",
        0.1,
        "--suppressed-rows",
        "drop",
    )
    assert len(df) == 3016 - rep["metrics"]["suppressed_rows"] and rep["metrics"]["suppressed_rows"] > 0
    q, _ = _class_frequencies(df, "salary-class")
    assert pycanon.delta_disclosure(df, QI_LIST, ["salary-class"]) < 0.5 and (q > 0).to_numpy().all()


def test_check_reports_beta_delta_alpha(capsys, tmp_path):
    _, _, out = _anonymize(capsys, tmp_path, "mondrian", "salary-class", "--k", 3, "--delta", 1.2)
    code = main(["check", str(out), "--qi", QIS, "--sensitive", "salary-class,occupation", "--json"])
    so, se = capsys.readouterr()
    assert code == 0, se
    rep = json.loads(so)
    df = pd.read_csv(out, sep=";", dtype=str)
    for sa in ("salary-class", "occupation"):
        a = rep["sensitive_attributes"][sa]
        assert {"l_distinct", "l_entropy", "recursive", "t", "ground_for_emd"} <= set(a)  # existing keys kept
        assert math.isclose(a["beta_basic"], pycanon.basic_beta_likeness(df, QI_LIST, [sa]), rel_tol=1e-9)
        assert math.isclose(a["alpha"], pycanon.alpha_k_anonymity(df, QI_LIST, [sa])[0], rel_tol=1e-12)
    s = rep["sensitive_attributes"]["salary-class"]
    assert s["delta_disclosure"] < 1.2
    assert math.isclose(s["delta_disclosure"], pycanon.delta_disclosure(df, QI_LIST, ["salary-class"]), rel_tol=1e-9)
    assert rep["sensitive_attributes"]["occupation"]["delta_disclosure"] is None  # some class lacks a value
    code = main(["check", str(out), "--qi", QIS, "--sensitive", "salary-class,occupation"])
    so, _ = capsys.readouterr()
    assert code == 0 and "beta basic" in so and "delta-disclosure none (a value is missing" in so


# ------------------------------------------------------------------ refusals: one line, exit 2
def _refused(capsys, tmp_path, *argv, sensitive=("--sensitive", "salary-class")):
    out = tmp_path / "out.csv"
    code, so, se = run(capsys, SUBSET, "-o", out, "--qi", QIS, *sensitive, "--hierarchies", DATA, *argv)
    lines = [ln for ln in se.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("ppdm: error: "), se
    assert not out.exists()
    return lines[0]


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--algorithm", "anatomy", "--l", 2, "--beta", 1], "algorithm 'anatomy' cannot honour beta-likeness"),
        (["--algorithm", "condensation", "--k", 3, "--delta", 1], "cannot honour delta-disclosure"),
        (["--algorithm", "mdav", "--k", 3, "--alpha", 0.9], "cannot honour alpha-k-anonymity"),
        (["--algorithm", "lca-fc", "--k", 3, "--beta", 1], "cannot honour beta-likeness"),
        (["--algorithm", "flash", "--k", 3, "--beta", 0], "beta must be a positive number"),
        (["--algorithm", "flash", "--k", 3, "--beta", -0.5], "beta must be a positive number"),
        (["--algorithm", "mondrian", "--k", 3, "--delta", 0], "delta must be a positive number"),
        (["--algorithm", "flash", "--k", 3, "--delta", -1], "delta must be a positive number"),
        (["--algorithm", "flash", "--k", 3, "--alpha", 0], "alpha must be a fraction in (0, 1]"),
        (["--algorithm", "flash", "--k", 3, "--alpha", 1.5], "alpha must be a fraction in (0, 1]"),
        (["--algorithm", "flash", "--alpha", 0.5], "needs k"),
        (["--algorithm", "flash", "--k", 2, "--alpha", 0.3], "is impossible: 'salary-class' has only 2"),
        (["--algorithm", "mondrian", "--k", 2, "--alpha", 0.6], "fails even on the whole table"),
    ],
)
def test_refusals_are_one_line(capsys, tmp_path, argv, match):
    assert match in _refused(capsys, tmp_path, *argv)


@pytest.mark.parametrize("algorithm", ["flash", "mondrian"])
@pytest.mark.parametrize("flag", [["--beta", 1], ["--delta", 1], ["--alpha", 0.5]], ids=["beta", "delta", "alpha"])
def test_refused_without_a_sensitive_attribute(capsys, tmp_path, algorithm, flag):
    line = _refused(capsys, tmp_path, "--algorithm", algorithm, "--k", 2, *flag, sensitive=())
    assert line.endswith("needs a sensitive attribute (--sensitive)"), line


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    n_values=st.integers(1, 12),
    l=st.integers(0, 13),
    rows=st.integers(0, 40),
    dtype=st.sampled_from([np.uint8, np.uint16, np.uint32, np.int64]),
    seed=st.integers(0, 2**32 - 1),
)
def test_distinct_at_least_counts_the_values_present(n_values, l, rows, dtype, seed):
    """``distinct_at_least`` (a running minimum, column sums or a product, by shape) says what counting
    the non-zero entries of every row one by one says, for any width, l and lane type."""
    from anonymize.publish.models import distinct_at_least

    rng = np.random.default_rng(seed)
    counts = (rng.integers(0, 3, size=(rows, n_values)) * rng.integers(0, 2, size=(rows, n_values))).astype(dtype)
    want = np.array([sum(1 for v in row if v != 0) >= l for row in counts.tolist()], dtype=bool)
    assert np.array_equal(distinct_at_least(counts, l), want)
    assert np.array_equal(distinct_at_least(counts[:, ::-1], l), want)  # a strided view of the lanes


@pytest.mark.parametrize("model", ["l2", "l3", "t0.2", "t0.35"])
@pytest.mark.parametrize("sensitive", [["salary-class"], ["occupation"], ["salary-class", "occupation"]])
def test_models_judged_on_the_packed_counts_as_on_the_class_stats(sensitive, model):
    """Distinct l-diversity and hierarchical-EMD t-closeness judged straight off a frequency set's packed
    counts (the search's path) fail exactly the classes they fail through ClassStats and class_ok, on
    nodes all over a lattice (one or two sensitive attributes, each model on every one)."""
    from anonymize.publish import read_hierarchies, read_table
    from anonymize.publish.fulldomain import Lattice
    from anonymize.publish.models import all_ok

    df, hs = read_table(SUBSET), read_hierarchies(DATA)
    qis = [q for q in QI_LIST if q not in sensitive]
    table = EncodedTable.encode(df, Schema(qis, sensitive), hs)  # sensitive hierarchies: the EMD's ground
    judge = (
        DistinctLDiversity(int(model[1:])) if model[0] == "l" else TCloseness(float(model[1:]), "emd", "hierarchical")
    )
    models = [KAnonymity(2), judge]
    lat = Lattice(table, models, 0.05)
    priv = lat.privacy
    assert priv._judges_on_lanes(), "the packed path is taken"
    verdicts = set()
    for levels in lat.grid().levels[:: max(1, lat.grid().N // 60)]:
        fs = lat.frequency_set(lat.internal(levels))
        stats = priv.class_stats(fs)
        want = (fs.counts < 2) | ~all_ok(models, stats)
        assert np.array_equal(priv.failing(fs), want)
        verdicts |= set(want[fs.counts >= 2].tolist())
        rows = np.flatnonzero(fs.counts >= 3)[::2]  # a part of the tuples, as the early verdict judges
        assert np.array_equal(priv._judged_ok(fs, rows), all_ok(models[1:], priv.class_stats(fs, rows)))
    # both verdicts occur among the classes large enough (salary-class has 2 values: l = 3 fails all)
    assert verdicts == ({True} if model == "l3" and "salary-class" in sensitive else {True, False})
