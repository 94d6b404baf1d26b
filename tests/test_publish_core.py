"""Publishing core: hierarchies, encoding, privacy models, metrics, io.

Oracles we did not write: pycanon (k, distinct l, entropy l, t-closeness; given a fresh
0..n-1 index because it selects rows by position after collecting index labels), scipy's
linear-programming solver (EMD with any ground distance), scipy.stats.entropy (KL), pandas
groupby (equivalence classes). pycanon 1.0.1's recursive (c,l) sorts the counts ascending
and returns NaN when l = 1, so (c,l) is checked against a direct transcription of eq. 20.11 of
Aggarwal, *Data Mining: The Textbook*, Springer 2015.
Textbook examples: Tables 1-1, 1-3, 1-4, 1-5 of the privacy-leakage thesis ([LeakageThesis] §1.1,
§1.2.1, docs/references.md; text tables), Aggarwal 2015 §20.3's statements about Table 20.3 (the
tables themselves are images in our copy), and the salary example of Li, Li, Venkatasubramanian,
"t-Closeness: privacy beyond k-anonymity and l-diversity", ICDE 2007.
"""

from __future__ import annotations

import glob
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
    DistinctLDiversity,
    EncodedTable,
    EntropyLDiversity,
    Hierarchy,
    KAnonymity,
    RecursiveCLDiversity,
    Schema,
    TCloseness,
    all_ok,
    class_stats,
    equivalence_classes,
)
from anonymize.publish import metrics as M
from anonymize.publish.distances import emd_hierarchical, emd_ordered, kl_divergence, variational
from anonymize.publish.io import read_hierarchies, read_table, sniff_delimiter, write_table

DATA = Path(__file__).resolve().parents[1] / "anonymize" / "data"
ARX_FILES = sorted(glob.glob(str(DATA / "adult_hierarchy_*.csv")))
QIS = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
HYP = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def subset():
    return read_table(DATA / "adult_subset.csv")


@pytest.fixture(scope="module")
def hier():
    return read_hierarchies(DATA)


@pytest.fixture(scope="module")
def table(subset, hier):
    return EncodedTable.encode(subset, Schema(QIS, ["salary-class"]), {q: hier[q] for q in QIS})


def release_frame(table, levels):
    """The released table (hierarchy labels at ``levels``) with a fresh 0..n-1 index for pycanon."""
    g = table.generalized_codes(levels)
    out = table.df.copy()
    for j, q in enumerate(table.schema.qis):
        out[q] = table.hierarchies[j].labels[levels[j]][g[:, j]].astype(str)
    return out.reset_index(drop=True)


# ------------------------------------------------------------------ hierarchies
@pytest.mark.parametrize("path", ARX_FILES, ids=lambda p: Path(p).stem)
def test_arx_roundtrip(path, tmp_path):
    h = Hierarchy.read_arx(path)
    out = tmp_path / Path(path).name
    h.write_arx(out)
    h2 = Hierarchy.read_arx(out)
    assert h == h2
    assert np.array_equal(h.maps, h2.maps) and list(h.leaves) == list(h2.leaves)
    # same leaf -> ancestor rows as the file, as sets
    rows = {tuple(line.split(";")) for line in Path(path).read_text().splitlines() if line.strip()}
    assert {tuple(r) for r in h.to_rows()} == rows
    assert all(lab == "*" for lab in h.labels[h.height])
    # every node is a contiguous run of leaf codes, maps non-decreasing
    for lv in range(h.height + 1):
        first, last = h.node_span(lv)
        assert np.all(np.diff(h.maps[lv]) >= 0)
        for node in range(h.n_nodes(lv)):
            assert set(np.flatnonzero(h.maps[lv] == node)) == set(range(first[node], last[node] + 1))
        assert h.leaves_under(lv).sum() == h.n_leaves


def test_age_hierarchy_numeric_ranges_ignore_label_quirk(hier):
    h = hier["age"]
    assert h.numeric and h.height == 4 and h.n_leaves == 100
    lv1 = h.maps[1][h.encode([17])[0]]
    lo, hi = h.node_range(1)
    assert h.labels[1][lv1] == "15-19"  # ARX's shifted label
    assert (lo[lv1], hi[lv1]) == (16, 20)  # the ages it really holds
    assert hier["education"].height == 3 and not hier["education"].numeric


def test_hierarchy_errors(tmp_path):
    ragged = tmp_path / "r.csv"
    ragged.write_text("a;x;*\nb;*\n")
    with pytest.raises(AnonymizeError, match="row 2 has 2 columns"):
        Hierarchy.read_arx(ragged)
    nontree = tmp_path / "n.csv"
    nontree.write_text("a;x;p;*\nb;x;q;*\n")
    with pytest.raises(AnonymizeError, match="several parents"):
        Hierarchy.read_arx(nontree)
    empty = tmp_path / "e.csv"
    empty.write_text("\n\n")
    with pytest.raises(AnonymizeError, match="empty"):
        Hierarchy.read_arx(empty)
    with pytest.raises(AnonymizeError, match="not found"):
        Hierarchy.read_arx(tmp_path / "missing.csv")
    dup = tmp_path / "d.csv"
    dup.write_text("a;*\na;*\n")
    with pytest.raises(AnonymizeError, match="more than one row"):
        Hierarchy.read_arx(dup)


def test_interval_masking_flat():
    h = Hierarchy.intervals("age", [17, 23, 38, 90, 45])
    assert h.numeric and h.height == 4
    assert h.labels[1][h.maps[1][h.encode([23])[0]]] == "20-24"
    assert h.labels[2][h.maps[2][h.encode([23])[0]]] == "20-29"
    assert h.labels[3][h.maps[3][h.encode([23])[0]]] == "20-39"
    with pytest.raises(AnonymizeError, match="multiple"):
        Hierarchy.intervals("x", [1, 2], widths=(5, 7))
    auto = Hierarchy.intervals("f", np.linspace(0, 1000, 50), widths=None)
    assert auto.height == 4 and auto.n_nodes(1) <= 21
    z = Hierarchy.masking("zip", ["47677", "47602", "47678"])
    chain = [z.labels[lv][z.maps[lv][z.encode(["47677"])[0]]] for lv in range(z.height + 1)]
    assert chain == ["47677", "4767*", "476**", "47***", "4****", "*"]
    f = Hierarchy.flat("sex", ["M", "F", "M"])
    assert f.height == 1 and list(f.labels[1]) == ["*"]


def test_auto_hierarchies_and_encode_errors():
    df = pd.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "age": [30, 41, 52, 30],
            "zip": ["47677", "47602", "47678", "47677"],
            "sex": ["M", "F", "M", "F"],
            "d": ["a", "b", "a", "c"],
        }
    )
    t = EncodedTable.encode(df, Schema(["age", "zip", "sex"], ["d"], identifiers=["id"]))
    assert "id" not in t.df.columns and t.n == 4
    assert [h.numeric for h in t.hierarchies] == [True, False, False]
    assert t.hierarchies[1].labels[1][0].endswith("*") and t.hierarchies[1].height == 5
    with pytest.raises(AnonymizeError, match="unknown column 'nope'"):
        EncodedTable.encode(df, Schema(["nope"], ["d"]))
    with pytest.raises(AnonymizeError, match="both as"):
        EncodedTable.encode(df, Schema(["age"], ["age"]))
    bad = df.copy()
    bad.loc[2, "age"] = np.nan
    with pytest.raises(AnonymizeError, match="column 'age' has 1 missing"):
        EncodedTable.encode(bad, Schema(["age"], ["d"]))
    h = Hierarchy.flat("sex", ["M"])
    with pytest.raises(AnonymizeError, match=r"column 'sex': value 'F' not in hierarchy"):
        EncodedTable.encode(df, Schema(["sex"], ["d"]), {"sex": h})
    with pytest.raises(AnonymizeError, match="no rows"):
        EncodedTable.encode(df.iloc[:0], Schema(["sex"], ["d"]))


def test_adult_value_missing_from_hierarchy(subset, hier):
    df = subset.copy()
    df.loc[5, "education"] = "Kindergarten"
    with pytest.raises(AnonymizeError, match="column 'education': value 'Kindergarten' not in hierarchy"):
        EncodedTable.encode(df, Schema(QIS, ["salary-class"]), {q: hier[q] for q in QIS})


# ------------------------------------------------------------------ equivalence classes
@HYP
@given(st.integers(1, 60), st.integers(1, 5), st.integers(1, 40), st.integers(0, 2**31 - 1))
def test_equivalence_classes_match_groupby(n, q, radix, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, radix, size=(n, q))
    cid, C = equivalence_classes(codes)
    ref = pd.DataFrame(codes).groupby(list(range(q)), sort=True).ngroup().to_numpy()
    assert C == ref.max() + 1
    assert np.array_equal(cid, ref)


def test_equivalence_classes_huge_radix():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 2**20, size=(500, 6))
    codes[250:] = codes[:250]
    cid, C = equivalence_classes(codes)
    assert C == len(np.unique(codes, axis=0))
    assert np.array_equal(cid[250:], cid[:250])


# ------------------------------------------------------------------ models vs pycanon
LEVELS = [[0, 0, 0, 0, 0, 0, 0, 0], [2, 0, 1, 1, 2, 1, 1, 1], [3, 1, 1, 2, 3, 2, 2, 2], [1, 1, 0, 1, 1, 1, 0, 1]]


@pytest.mark.parametrize("levels", LEVELS)
def test_adult_subset_against_pycanon(table, levels):
    rel = release_frame(table, levels)
    sa = ["salary-class"]
    k_ref = pycanon.k_anonymity(rel, QIS)
    l_ref = pycanon.l_diversity(rel, QIS, sa)
    e_ref = pycanon.entropy_l_diversity(rel, QIS, sa)
    t_ref = pycanon.t_closeness(rel, QIS, sa)
    c_ref, lc_ref = pycanon.recursive_c_l_diversity(rel, QIS, sa)
    # encoded path (what the algorithms use)
    cid, C = equivalence_classes(table.generalized_codes(levels))
    stats = class_stats(table, cid, C)
    assert int(stats.sizes.min()) == k_ref
    assert KAnonymity(k_ref).table_ok(stats) and not KAnonymity(k_ref + 1).table_ok(stats)
    assert DistinctLDiversity(l_ref).table_ok(stats) and not DistinctLDiversity(l_ref + 1).table_ok(stats)
    assert EntropyLDiversity(e_ref).table_ok(stats) and not EntropyLDiversity(e_ref + 1).table_ok(stats)
    tc = TCloseness(t_ref)
    assert math.isclose(float(tc.distances(stats).max()), t_ref, rel_tol=1e-9, abs_tol=1e-12)
    assert tc.table_ok(stats) and not TCloseness(t_ref - 1e-6).table_ok(stats)
    # released-table path (what `ppdm check` uses)
    rep = M.measure_release(rel, QIS, sa)
    a = rep["sensitive_attributes"]["salary-class"]
    assert (rep["k"], a["l_distinct"], a["l_entropy_floor"]) == (k_ref, l_ref, e_ref)
    assert math.isclose(a["t"]["emd"], t_ref, rel_tol=1e-9)
    assert lc_ref == l_ref and (math.isnan(c_ref) if l_ref == 1 else True)


small_tables = st.integers(0, 2**31 - 1).map(lambda s: np.random.default_rng(s))


def _random_table(rng):
    n = int(rng.integers(2, 40))
    df = pd.DataFrame(
        {
            "a": rng.choice(["x", "y", "z"], n),
            "b": rng.integers(0, 3, n),
            "s": rng.choice(["p", "q", "r", "u"], n, p=[0.5, 0.2, 0.2, 0.1]),
            "v": rng.integers(0, 6, n) * 10,
        }
    )
    # shuffled, non-contiguous index: must not matter to us (pycanon gets a fresh one)
    df.index = rng.permutation(np.arange(100, 100 + 3 * n, 3))
    return df


@HYP
@given(small_tables)
def test_random_tables_against_pycanon(rng):
    df = _random_table(rng)
    qi = ["a", "b"]
    fresh = df.reset_index(drop=True)
    rep = M.measure_release(df, qi, ["s", "v"])
    s, v = rep["sensitive_attributes"]["s"], rep["sensitive_attributes"]["v"]
    assert rep["k"] == pycanon.k_anonymity(fresh, qi)
    assert s["l_distinct"] == pycanon.l_diversity(fresh, qi, ["s"])
    e_ref = pycanon.entropy_l_diversity(fresh, qi, ["s"])  # int(exp(H)): 1.9999999999999998 -> 1
    assert s["l_entropy_floor"] == e_ref or (
        e_ref == s["l_entropy_floor"] - 1 and abs(s["l_entropy"] - s["l_entropy_floor"]) < 1e-9
    )
    assert math.isclose(s["t"]["emd"], pycanon.t_closeness(fresh, qi, ["s"]), abs_tol=1e-12)
    if v["distinct_values"] > 1:  # pycanon divides by m - 1
        assert math.isclose(v["t"]["emd"], pycanon.t_closeness(fresh, qi, ["v"]), abs_tol=1e-12)
    # encoded path agrees with the released-table path
    t = EncodedTable.encode(df, Schema(qi, ["s", "v"]))
    cid, C = equivalence_classes(t.qi_codes)
    stats = class_stats(t, cid, C)
    assert int(stats.sizes.min()) == rep["k"]
    assert math.isclose(TCloseness(1, attribute="v").distances(stats).max(), v["t"]["emd"], abs_tol=1e-12)
    assert math.isclose(TCloseness(1, "kl", attribute="s").distances(stats).max(), s["t"]["kl"], abs_tol=1e-12)


def _recursive_ref(groups, c, l):
    """Eq. 20.11 transcribed: every class has r_1 < c * (r_l + ... + r_m), counts sorted descending."""
    for counts in groups:
        r = sorted(counts, reverse=True)
        if not r[0] < c * sum(r[l - 1 :]):
            return False
    return True


@HYP
@given(small_tables, st.sampled_from([0.5, 1, 1.5, 2, 3]), st.integers(1, 4))
def test_recursive_cl_matches_eq_20_11(rng, c, l):
    df = _random_table(rng)
    t = EncodedTable.encode(df, Schema(["a"], ["s"]))
    cid, C = equivalence_classes(t.qi_codes)
    stats = class_stats(t, cid, C)
    groups = [list(g.value_counts()) for _, g in df.groupby("a")["s"]]
    assert RecursiveCLDiversity(c, l).table_ok(stats) == _recursive_ref(groups, c, l)


@HYP
@given(small_tables)
def test_models_monotone_under_generalization(rng):
    """Merging classes that pass gives a class that passes (the property lattice pruning uses)."""
    df = _random_table(rng)
    t = EncodedTable.encode(df, Schema(["a", "b"], ["s", "v"]))
    fine_id, Cf = equivalence_classes(t.qi_codes)
    coarse_id, Cc = equivalence_classes(t.qi_codes[:, :1])  # drop b = generalize it to *
    models = [
        KAnonymity(2),
        DistinctLDiversity(2),
        EntropyLDiversity(1.7),
        RecursiveCLDiversity(2, 2),
        TCloseness(0.3),
        TCloseness(0.3, "variational"),
        TCloseness(0.5, "kl"),
        TCloseness(0.3, attribute="v"),
    ]
    fine, coarse = class_stats(t, fine_id, Cf), class_stats(t, coarse_id, Cc)
    parent = np.zeros(Cf, dtype=np.int64)
    parent[fine_id] = coarse_id
    for m in models:
        ok_f = m.class_ok(fine)
        all_children_ok = np.ones(Cc, dtype=bool)
        np.logical_and.at(all_children_ok, parent, ok_f)
        assert np.all(m.class_ok(coarse)[all_children_ok]), m


def test_rows_mask_and_empty_classes(table):
    cid, C = equivalence_classes(table.generalized_codes([0] * 8))
    rows = np.zeros(table.n, dtype=bool)
    rows[:10] = True
    stats = class_stats(table, cid, C, rows=rows)
    assert stats.sizes.sum() == 10
    assert np.all(KAnonymity(50).class_ok(stats)[stats.sizes == 0])
    assert all_ok([KAnonymity(1), DistinctLDiversity(1)], stats).all()


# ------------------------------------------------------------------ t-closeness distances
def test_li_et_al_ordered_emd_example():
    """Li, Li, Venkatasubramanian (ICDE 2007) §4: salaries 3K..11K, one record each;
    {3K,4K,5K} is 0.375 from the table, {6K,8K,11K} is 0.167."""
    Q = np.full(9, 1 / 9)
    P1 = np.array([[1, 1, 1, 0, 0, 0, 0, 0, 0]]) / 3
    P2 = np.array([[0, 0, 0, 1, 0, 1, 0, 0, 1]]) / 3
    assert math.isclose(emd_ordered(P1, Q)[0], 0.375)
    assert math.isclose(emd_ordered(P2, Q)[0], 1 / 6)
    assert math.isclose(variational(P1, Q)[0], 2 / 3)  # eq. 20.13


def _lp_emd(p, q, D):
    from scipy.optimize import linprog

    m = len(p)
    A = []
    b = []
    for i in range(m):  # outflow of i = p_i
        row = np.zeros((m, m))
        row[i, :] = 1
        A.append(row.ravel())
        b.append(p[i])
    for j in range(m):  # inflow of j = q_j
        row = np.zeros((m, m))
        row[:, j] = 1
        A.append(row.ravel())
        b.append(q[j])
    res = linprog(D.ravel(), A_eq=np.array(A), b_eq=np.array(b), bounds=(0, None), method="highs")
    return res.fun


@pytest.mark.parametrize("name", ["education", "native-country", "workclass", "age"])
def test_hierarchical_emd_against_linear_program(hier, name):
    import scipy  # noqa: F401  (oracle: required)

    h = hier[name]
    rng = np.random.default_rng(7)
    leaf = np.sort(rng.choice(h.n_leaves, size=min(h.n_leaves, 9), replace=False))
    m = len(leaf)
    # ground distance: level of the lowest common ancestor / height (Li et al. 2007)
    D = np.array(
        [[h.level_of_span(np.array([min(a, b)]), np.array([max(a, b)]))[0] / h.height for b in leaf] for a in leaf]
    )
    Q = rng.dirichlet(np.ones(m))
    P = rng.dirichlet(np.ones(m) * 0.5, size=4)
    ours = emd_hierarchical(P, Q, h, leaf)
    for i in range(4):
        assert math.isclose(ours[i], _lp_emd(P[i], Q, D), abs_tol=1e-7)


def test_ordered_emd_against_linear_program():
    import scipy  # noqa: F401  (oracle: required)

    rng = np.random.default_rng(3)
    m = 7
    D = np.abs(np.subtract.outer(np.arange(m), np.arange(m))) / (m - 1)
    Q = rng.dirichlet(np.ones(m))
    P = rng.dirichlet(np.ones(m), size=3)
    for i, d in enumerate(emd_ordered(P, Q)):
        assert math.isclose(d, _lp_emd(P[i], Q, D), abs_tol=1e-7)
    Deq = 1.0 - np.eye(m)
    for i, d in enumerate(variational(P, Q)):
        assert math.isclose(d, _lp_emd(P[i], Q, Deq), abs_tol=1e-7)


def test_kl_matches_scipy():
    import scipy.stats as stats_mod  # oracle: required

    rng = np.random.default_rng(5)
    Q = rng.dirichlet(np.ones(5))
    P = rng.dirichlet(np.ones(5), size=3)
    P[0, 2] = 0
    P[0] /= P[0].sum()
    for i, d in enumerate(kl_divergence(P, Q)):
        assert math.isclose(d, stats_mod.entropy(P[i], Q), rel_tol=1e-9)


def test_tcloseness_hierarchical_with_sensitive_hierarchy(subset, hier):
    t = EncodedTable.encode(
        subset, Schema(["age", "sex"], ["education"]), {"age": hier["age"], "education": hier["education"]}
    )
    cid, C = equivalence_classes(t.generalized_codes([3, 1]))
    stats = class_stats(t, cid, C)
    d = TCloseness(0.2, ground="hierarchical").distances(stats)
    assert d.shape == (C,) and np.all(d >= 0) and np.all(d <= 1 + 1e-12)
    assert np.all(d <= TCloseness(0.2, ground="equal").distances(stats) + 1e-12)
    with pytest.raises(AnonymizeError, match="hierarchy"):
        t2 = EncodedTable.encode(subset, Schema(["sex"], ["education"]))
        TCloseness(0.2, ground="hierarchical").class_ok(class_stats(t2, *equivalence_classes(t2.qi_codes)))


# ------------------------------------------------------------------ textbook examples
T11 = pd.DataFrame(
    {  # [LeakageThesis] Table 1-1 (medical table; disease is sensitive)
        "id": [f"t{i}" for i in range(1, 10)],
        "age": [41, 40, 41, 44, 44, 45, 41, 42, 43],
        "sex": ["F", "F", "M", "M", "M", "M", "M", "M", "F"],
        "zip": ["734562", "734552", "734532", "734555", "734555", "734532", "734561", "734533", "734553"],
        "disease": ["insomnia", "heart", "insomnia", "heart", "insomnia", "heart", "flu", "flu", "flu"],
    }
)


def _thesis_release(groups):
    rows = []
    for (age, sex, zp), ids in groups:
        for i in ids:
            rows.append({"id": i, "age": age, "sex": sex, "zip": zp, "disease": T11.set_index("id").loc[i, "disease"]})
    return pd.DataFrame(rows)


def test_leakage_thesis_tables_1_1_to_1_5():
    """[LeakageThesis] Tables 1-1 (k = 1: the linkage attack), 1-3 (3-anonymous, 2-diverse), 1-4
    (3-anonymous, 1-diverse: the homogeneity attack) and 1-5 (3-anonymous, 3-diverse)."""
    q = ["age", "sex", "zip"]
    rep = M.measure_release(T11, q, ["disease"], ["id"])
    assert rep["k"] == 1  # Frank (45, M, 734532) is unique: linkage attack
    t13 = _thesis_release(
        [
            (("40-41", "*", "7345*"), ["t1", "t2", "t7"]),
            (("44-45", "M", "7345*"), ["t4", "t5", "t6"]),
            (("41-43", "*", "7345*"), ["t3", "t8", "t9"]),
        ]
    )
    t14 = _thesis_release(
        [
            (("40-41", "*", "7345*"), ["t1", "t2", "t3"]),
            (("44-45", "M", "7345*"), ["t4", "t5", "t6"]),
            (("41-43", "*", "7345*"), ["t7", "t8", "t9"]),
        ]
    )
    t15 = _thesis_release(
        [
            (("40-41", "*", "7345*"), ["t1", "t2", "t7"]),
            (("43-44", "*", "73455*"), ["t4", "t5", "t9"]),
            (("41-45", "M", "73453*"), ["t3", "t6", "t8"]),
        ]
    )
    for tab, k, l in [(t13, 3, 2), (t14, 3, 1), (t15, 3, 3)]:
        r = M.measure_release(tab, q, ["disease"], ["id"])
        assert (r["k"], r["sensitive_attributes"]["disease"]["l_distinct"]) == (k, l)
        assert r["classes"]["classes"] == 3
        fresh = tab.drop(columns="id").reset_index(drop=True)
        assert pycanon.l_diversity(fresh, q, ["disease"]) == l
    # Table 1-4: Jack's class (t7, t8, t9) is all avian flu -> homogeneity attack
    assert M.measure_release(t14, q, ["disease"], ["id"])["sensitive_attributes"]["disease"]["l_entropy"] == 1.0


def test_aggarwal_table_20_3_facts():
    """Aggarwal 2015, §20.3.1/§20.3.2: Table 20.3 has two classes, rows {1,3,6} and {2,4,5}, so
    k = 3; rows 1, 3, 6 all have HIV, so the table is only 1-diverse. (The tables are images in our
    copy of the book; only these facts are stated in its text, the other diseases here are
    placeholders.)"""
    rel = pd.DataFrame(
        {
            "index": [1, 2, 3, 4, 5, 6],
            "age": ["A", "B", "A", "B", "B", "A"],
            "zip": ["Z", "W", "Z", "W", "W", "Z"],
            "disease": ["HIV", "other-1", "HIV", "other-2", "other-3", "HIV"],
        }
    )
    r = M.measure_release(rel, ["age", "zip"], ["disease"], ["index"])
    assert r["k"] == 3 and r["classes"]["classes"] == 2
    assert r["sensitive_attributes"]["disease"]["l_distinct"] == 1


# ------------------------------------------------------------------ metrics
def test_full_domain_metrics_bottom_and_top(table):
    n = table.n
    bottom = M.boxes_from_levels(table, [0] * 8)
    top = M.boxes_from_levels(table, table.heights)
    assert M.ncp(table, *bottom)["ncp"] == 0.0
    assert M.ncp(table, *top)["ncp"] == 1.0
    for cat in ("leaves", "span"):
        assert M.ncp(table, *top, categorical=cat)["ncp"] == 1.0
    assert M.gaacp_iloss(table, *top) == n * 8
    assert M.query_error(table, *bottom, n_queries=50)["mean_relative_error"] < 1e-12
    qe = M.query_error(table, *top, n_queries=50, seed=3)
    assert qe["mean_relative_error"] > 0 and qe["n_queries"] == 50
    assert qe == M.query_error(table, *top, n_queries=50, seed=3)  # seeded
    cid, C = equivalence_classes(table.generalized_codes(table.heights))
    il = M.il_total(table, cid, C, *top)
    assert il["total_il"] > 0
    sup = np.ones(n, dtype=bool)
    assert M.ncp(table, *bottom, suppressed=sup)["ncp"] == 1.0


def test_il_total_by_hand():
    df = pd.DataFrame({"age": [20, 30, 40, 50], "sex": ["M", "F", "M", "M"], "s": list("abab")})
    t = EncodedTable.encode(
        df, Schema(["age", "sex"], ["s"]), {"age": Hierarchy.intervals("age", df["age"], (10, 20, 40))}
    )
    cid = np.array([0, 0, 1, 1])
    lo, hi = M.class_boxes(t, cid, 2)
    # class 0: ages 20..30 -> 10/30, sex {M,F} -> 2/2; class 1: ages 40..50 -> 10/30, sex {M} -> 1/2
    expect = 2 * (10 / 30 + 2 / 2) + 2 * (10 / 30 + 1 / 2)
    assert math.isclose(M.il_total(t, cid, 2, lo, hi)["total_il"], expect)


def test_class_size_and_risk_metrics():
    sizes = np.array([2, 3, 5, 0])
    assert M.discernibility(sizes) == 4 + 9 + 25
    assert M.discernibility(sizes, n_suppressed=2) == 38 + 2 * 12
    assert math.isclose(M.cdm(sizes), 38 / 3)
    assert math.isclose(M.average_class_size(sizes, 2), (10 / 3) / 2)
    r = M.reidentification_risk(sizes)
    assert r["prosecutor_max"] == 0.5 and math.isclose(r["prosecutor_avg"], 3 / 10)
    assert r["journalist_max"] == 0.5 and math.isclose(r["marketer"], 3 / 10)
    r2 = M.reidentification_risk(sizes, population_sizes=[4, 3, 10, 0])
    assert r2["journalist_max"] == 1 / 3 and math.isclose(r2["marketer"], (2 / 4 + 1 + 5 / 10) / 10)
    assert r2["prosecutor_max"] == 0.5


def test_class_boxes_hierarchy_aware(table, hier):
    cid, C = equivalence_classes(table.qi_codes[:, [1]])  # classes by sex only
    lo, hi = M.class_boxes(table, cid, C)
    j = QIS.index("native-country")
    h = hier["native-country"]
    assert np.all(lo[:, j] == 0) and np.all(hi[:, j] == h.n_leaves - 1)  # spans several continents -> '*'
    j = QIS.index("age")
    ages = table.hierarchies[0].leaves
    assert ages[lo[:, j]].min() == table.df["age"].min() and ages[hi[:, j]].max() == table.df["age"].max()


# ------------------------------------------------------------------ io
def test_read_table_delimiters_and_errors(tmp_path):
    for sep in [";", ",", "\t", "|"]:
        p = tmp_path / f"t{ord(sep)}.csv"
        p.write_bytes(f"a{sep}b{sep}c\r\n1{sep}x{sep}2.5\r\n3{sep}y{sep}4\r\n".encode())
        df = read_table(p)
        assert list(df.columns) == ["a", "b", "c"] and df["b"].tolist() == ["x", "y"] and df["a"].dtype.kind == "i"
    assert sniff_delimiter("sex;age;race\nM;3;w\n") == ";"
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(AnonymizeError, match="empty"):
        read_table(tmp_path / "empty.csv")
    (tmp_path / "bin.csv").write_bytes(b"\x00\x01\x02")
    with pytest.raises(AnonymizeError, match="binary"):
        read_table(tmp_path / "bin.csv")
    with pytest.raises(AnonymizeError, match="not found"):
        read_table(tmp_path / "missing.csv")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        (tmp_path / "x.parquet").write_bytes(b"PAR1....PAR1")
        with pytest.raises(AnonymizeError, match="pip install pyarrow"):
            read_table(tmp_path / "x.parquet")


def test_bundled_subset_reads(subset):
    assert subset.shape == (3016, 9) and subset["salary-class"].isin(["<=50K", ">50K"]).all()


def test_write_table_atomic(tmp_path):
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y;z"]})
    out = tmp_path / "out.csv"
    write_table(df, out, sep=";")
    assert read_table(out).equals(df)
    out.write_text("keep me")

    class Boom:
        def to_csv(self, *a, **k):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_table(Boom(), out)
    assert out.read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]
    with pytest.raises(AnonymizeError, match="does not exist"):
        write_table(df, tmp_path / "nodir" / "x.csv")


def test_numeric_hierarchy_with_non_interval_groups_is_categorical(tmp_path):
    p = tmp_path / "n.csv"
    p.write_text("1;odd;*\n2;even;*\n3;odd;*\n4;even;*\n")
    h = Hierarchy.read_arx(p)
    assert not h.numeric
    first, last = h.node_span(1)
    assert list(last - first + 1) == [2, 2]
    assert list(h.encode([3, 1, "2"])) == [1, 0, 2]


def test_measure_release_reads_ranges_and_labels(hier):
    df = pd.DataFrame({"age": ["[20, 30)", "20-29", "17", "*"], "sex": ["*", "Male", "Female", "*"], "s": list("abab")})
    r = M.measure_release(df, ["age", "sex"], ["s"], hierarchies=hier)
    assert r["ncp"]["per_attribute"]["sex"] == 0.5
    assert 0 < r["ncp"]["per_attribute"]["age"] < 1
    df.loc[0, "age"] = "37.5"  # a class mean: not measurable as a cell, no error
    assert M.measure_release(df, ["age", "sex"], ["s"], hierarchies=hier)["ncp"]["per_attribute"]["age"] is None
