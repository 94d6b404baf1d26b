"""Publishing algorithms: Samarati, Incognito, Flash, Datafly, Mondrian.

Background: Aggarwal, *Data Mining: The Textbook*, Springer 2015, §20.3.1; each algorithm's own
paper is named in its module.

Oracles we did not write:

* pycanon measures k, distinct l, entropy l and t on every release (given a fresh 0..n-1 index:
  it selects rows by position after collecting index labels). pycanon 1.0.1's recursive (c,l)
  sorts the counts ascending and is NaN when l = 1, so (c,l) is also checked against a pandas
  transcription of eq. 20.11.
* exhaustive lattice search (every node checked from the rows by pandas groupby, not by the
  frequency-set engine) for "same minimal nodes / same lowest height" on random small tables.

Textbook examples: Aggarwal 2015, Tables 20.1–20.3 (medical records, voter list, 3-anonymous
release; the tables are images in our copy of the book, the values here are reconstructed from
its text: rows 1, 3, 6 share age band and ZIP prefix and all have HIV; William is the only voter
matching the Hepatitis C record; the release is <A1, Z2>).
"""

from __future__ import annotations

import itertools
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
)
from anonymize.publish import metrics as M
from anonymize.publish.anonymizer import anonymize_table, build_models
from anonymize.publish.fulldomain import Lattice, exhaustive, lattice_nodes
from anonymize.publish.fulldomain.datafly import datafly
from anonymize.publish.fulldomain.flash import flash
from anonymize.publish.fulldomain.incognito import incognito
from anonymize.publish.fulldomain.samarati import samarati
from anonymize.publish.io import read_hierarchies, read_table
from anonymize.publish.partition.mondrian import mondrian

DATA = Path(__file__).resolve().parents[1] / "anonymize" / "data"
QIS = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
SENS = "salary-class"
HYP = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def adult():
    df = read_table(DATA / "adult_subset.csv")
    hs = read_hierarchies(DATA, columns=set(QIS))
    return EncodedTable.encode(df, Schema(QIS, [SENS]), hs)


# ---------------------------------------------------------------- oracles
def released(res, qis):
    """Non-suppressed rows of a release with a fresh index, QIs as text (what pycanon sees)."""
    df = (
        res.df.loc[~res.suppressed_mask].reset_index(drop=True)
        if len(res.df) == len(res.suppressed_mask)
        else res.df.reset_index(drop=True)
    )
    df = df.copy()
    for c in qis:
        df[c] = df[c].astype(str)
    return df


def recursive_ok(df, qis, sens, c, l):
    """Eq. 20.11 transcribed: in every class r_1 < c (r_l + … + r_m), counts sorted descending."""
    for _, g in df.groupby(qis):
        r = sorted(g[sens].value_counts().tolist(), reverse=True)
        if not r[0] < c * sum(r[l - 1 :]):
            return False
    return True


def assert_models(df, qis, sens, models):
    for m in models:
        if isinstance(m, KAnonymity):
            assert pycanon.k_anonymity(df, qis) >= m.k
        elif isinstance(m, DistinctLDiversity):
            assert pycanon.l_diversity(df, qis, [sens]) >= m.l
        elif isinstance(m, EntropyLDiversity):
            got = pycanon.entropy_l_diversity(df, qis, [sens])
            # pycanon floors exp(H); a class exactly at the bound may floor one below l
            if got < math.floor(m.l):
                ent = min(
                    -sum(p * math.log(p) for p in g[sens].value_counts(normalize=True)) for _, g in df.groupby(qis)
                )
                assert math.exp(ent) >= m.l - 1e-9
        elif isinstance(m, RecursiveCLDiversity):
            c_p, l_p = pycanon.recursive_c_l_diversity(df, qis, [sens])
            assert l_p >= m.l
            assert recursive_ok(df, qis, sens, m.c, m.l)
        elif isinstance(m, TCloseness):
            assert pycanon.t_closeness(df, qis, [sens]) <= m.t + 1e-9


MODELS = {
    "k": [KAnonymity(5)],
    "distinct-l": [KAnonymity(3), DistinctLDiversity(2)],
    "entropy-l": [KAnonymity(3), EntropyLDiversity(1.6)],
    "recursive-cl": [KAnonymity(3), RecursiveCLDiversity(4, 2)],
    "t": [KAnonymity(3), TCloseness(0.2)],
}


@pytest.mark.parametrize("algorithm", ["samarati", "incognito", "flash", "datafly", "mondrian"])
@pytest.mark.parametrize("model", list(MODELS))
def test_every_algorithm_and_model_checked_by_pycanon(adult, algorithm, model):
    models = MODELS[model]
    sup = 0.0 if model == "t" else 0.04  # t against the released distribution needs no suppression
    res = anonymize_table(adult, algorithm=algorithm, models=models, max_suppression=sup, n_queries=0)
    assert res.suppressed_mask.sum() <= math.floor(sup * adult.n + 1e-9)
    df = released(res, QIS)
    assert len(df) == adult.n - res.suppressed_mask.sum()
    assert_models(df, QIS, SENS, models)
    # the report's achieved privacy agrees with pycanon
    assert res.metrics["achieved"]["k"] == pycanon.k_anonymity(df, QIS)
    assert res.metrics["achieved"]["sensitive_attributes"][SENS]["l_distinct"] == pycanon.l_diversity(df, QIS, [SENS])


def test_chosen_node_metrics_match_core_metrics(adult):
    lat = Lattice(adult, [KAnonymity(5)], 0.05)
    r = flash(lat, metric="ncp")
    lo, hi = M.boxes_from_levels(adult, r.levels)
    sup = lat.suppressed_mask(r.levels)
    assert sup.sum() == r.chosen.suppressed
    assert r.chosen.ncp == pytest.approx(M.ncp(adult, lo, hi, sup)["ncp"], abs=1e-12)
    cid, fail = lat.row_classes(r.levels)
    sizes = np.bincount(cid[~sup])
    assert r.chosen.dm == pytest.approx(M.discernibility(sizes, int(sup.sum()), adult.n))
    # every returned node minimizes nothing better: the chosen one has the least NCP
    assert r.chosen.ncp == min(x.ncp for x in r.nodes)


def test_full_domain_searches_agree_on_adult_subset(adult):
    for models, sup in [
        ([KAnonymity(5)], 0.05),
        ([KAnonymity(2), EntropyLDiversity(1.5)], 0.03),
        ([KAnonymity(2), TCloseness(0.2)], 0.04),
    ]:
        ex = exhaustive(Lattice(adult, models, sup))
        want = sorted(x.levels for x in ex.nodes)
        assert sorted(x.levels for x in incognito(Lattice(adult, models, sup)).nodes) == want
        assert sorted(x.levels for x in flash(Lattice(adult, models, sup), prune=False).nodes) == want
        # by default Flash skips nodes its NCP bound rules out (k alone): the same choice
        pruned = flash(Lattice(adult, models, sup))
        assert pruned.chosen.levels == ex.chosen.levels and set(x.levels for x in pruned.nodes) <= set(want)
        s = samarati(Lattice(adult, models, sup))
        assert s.stats["lowest_height"] == min(sum(x) for x in want)


def test_frequency_set_rollup_equals_rows(adult):
    """Frequency sets rolled up along any path equal the classes computed from the rows."""
    lat = Lattice(adult, [KAnonymity(4)], 0.1)
    rng = np.random.default_rng(1)
    nodes = lattice_nodes(lat.heights)
    for node in nodes[rng.choice(len(nodes), 12, replace=False)]:
        node = tuple(int(x) for x in node)
        fs = lat.rollup(lat.base, node)
        cid, _ = lat.row_classes(node)
        assert sorted(fs.counts.tolist()) == sorted(np.bincount(cid).tolist())
        # two-step roll-up through a specialization gives the same set
        mid = tuple(x // 2 for x in node)
        fs2 = lat.rollup(lat.rollup(lat.base, mid), node)
        assert np.array_equal(fs.keys, fs2.keys) and np.array_equal(fs.counts, fs2.counts)


@pytest.mark.parametrize("qis", [QIS, QIS[:2]])
def test_radix_grouping_equals_the_comparison_sort(adult, qis):
    """Roll-ups grouped by the LSD radix sort (16-bit digits; two passes for Adult's 8 QIs, one for 2)
    equal those grouped by the comparison sort of packed keys: keys, counts and histograms, at
    random nodes rolled up from the bottom and through a specialization."""
    table = EncodedTable.encode(
        adult.df, Schema(qis, [SENS]), {c: h for c, h in zip(adult.schema.qis, adult.hierarchies)}
    )
    rng = np.random.default_rng(3)
    lats = []
    for radix_min in (0, 10**9):
        lat = Lattice(table, [KAnonymity(3), DistinctLDiversity(2)], 0.05)
        lat.freq.radix_min = radix_min
        lats.append(lat)
    radix, comparison = lats
    assert radix.freq.key_bits > 16 if len(qis) == 8 else radix.freq.key_bits <= 16
    nodes = lattice_nodes(radix.heights)
    for node in nodes[rng.choice(len(nodes), min(10, len(nodes)), replace=False)]:
        node = tuple(int(x) for x in node)
        mid = tuple(x // 2 for x in node)
        for path in ([node], [mid, node]):
            a, b = radix.base, comparison.base
            for lv in path:
                a, b = radix.rollup(a, lv), comparison.rollup(b, lv)
            assert np.array_equal(a.keys, b.keys) and np.array_equal(a.counts, b.counts)
            assert np.array_equal(a.hist, b.hist)


def test_wide_mode_matches_packed_keys(adult):
    models = [KAnonymity(3), DistinctLDiversity(2)]
    a = flash(Lattice(adult, models, 0.02))
    b = flash(Lattice(adult, models, 0.02, wide=True))
    assert sorted(x.levels for x in a.nodes) == sorted(x.levels for x in b.nodes)
    assert a.chosen.levels == b.chosen.levels and a.chosen.ncp == pytest.approx(b.chosen.ncp)


# ---------------------------------------------------------------- random small tables vs exhaustive
def _small_hierarchy(name, n_values, fan):
    rows = []
    for v in range(n_values):
        rows.append([f"v{v}", f"g{v // fan}", f"h{v // (fan * fan)}", "*"])
    return Hierarchy.from_rows(name, rows, numeric=False)


def _group_fails(grp_s, k, kind, param, ref_p):
    """Does one class (its sensitive values) fail the models, with ``ref_p`` the t reference?"""
    fails = len(grp_s) < k
    vc = grp_s.value_counts(normalize=True)
    if kind == "distinct":
        fails |= len(vc) < param
    elif kind == "entropy":
        fails |= -sum(p * math.log(p) for p in vc) < math.log(param) - 1e-9
    elif kind == "t":
        fails |= 0.5 * (vc.reindex(ref_p.index, fill_value=0) - ref_p).abs().sum() > param + 1e-9
    return bool(fails)


def _brute_force(df, qis, sens, hs, levels_list, k, sup_rows, kind, param, mode="star"):
    """Satisfying nodes by pandas groupby over the generalized rows (independent of the engine),
    judged on the release as written: in ``star`` mode the suppressed rows form one more class that
    must pass too; in ``drop`` mode t is measured against the distribution of the rows kept
    (classes failing it are suppressed too, until nothing changes)."""
    out = []
    glob_p = df[sens].value_counts(normalize=True)
    for levels in levels_list:
        g = pd.DataFrame({c: hs[c].labels[lv][hs[c].maps[lv][hs[c].encode(df[c])]] for c, lv in zip(qis, levels)})
        g[sens] = df[sens].to_numpy()
        groups = [grp[sens] for _, grp in g.groupby(qis)]
        bad = [_group_fails(s_, k, kind, param, glob_p) for s_ in groups]
        ok = sum(len(s_) for s_, b in zip(groups, bad) if b) <= sup_rows
        if ok and any(bad):
            if mode == "star":
                star = pd.concat([s_ for s_, b in zip(groups, bad) if b])
                ok = not _group_fails(star, k, kind, param, glob_p)
            else:
                while ok:
                    kept = [s_ for s_, b in zip(groups, bad) if not b]
                    if not kept:
                        ok = False
                        break
                    ref = pd.concat(kept).value_counts(normalize=True)
                    new = [b or _group_fails(s_, 0, kind, param, ref) for s_, b in zip(groups, bad)]
                    if new == bad:
                        break
                    bad = new
                    ok = sum(len(s_) for s_, b in zip(groups, bad) if b) <= sup_rows
        if ok:
            out.append(tuple(levels))
    return out


@st.composite
def small_tables(draw):
    n = draw(st.integers(6, 40))
    q = draw(st.integers(1, 3))
    fans = [draw(st.integers(2, 3)) for _ in range(q)]
    nvals = [draw(st.integers(2, 9)) for _ in range(q)]
    rows = {f"a{j}": [f"v{draw(st.integers(0, nvals[j] - 1))}" for _ in range(n)] for j in range(q)}
    rows["s"] = [draw(st.sampled_from(["x", "y", "z"])) for _ in range(n)]
    kind = draw(st.sampled_from(["k", "distinct", "entropy", "t"]))
    k = draw(st.integers(1, 4))
    sup = draw(st.sampled_from([0.0, 0.1, 0.25]))
    param = {"k": None, "distinct": 2, "entropy": 1.6, "t": 0.35}[kind]
    mode = draw(st.sampled_from(["star", "drop"]))
    return pd.DataFrame(rows), nvals, fans, kind, k, sup, param, mode


@HYP
@given(small_tables())
def test_searches_equal_exhaustive_on_random_tables(case):
    df, nvals, fans, kind, k, sup, param, mode = case
    qis = [c for c in df.columns if c != "s"]
    hs = {c: _small_hierarchy(c, nv, f) for c, nv, f in zip(qis, nvals, fans)}
    table = EncodedTable.encode(df, Schema(qis, ["s"]), hs)
    models = [KAnonymity(k)]
    if kind == "distinct":
        models.append(DistinctLDiversity(param))
    elif kind == "entropy":
        models.append(EntropyLDiversity(param))
    elif kind == "t":
        models.append(TCloseness(param, distance="variational"))
    sup_rows = math.floor(sup * len(df) + 1e-9)
    all_nodes = [tuple(int(x) for x in r) for r in lattice_nodes(table.heights)]
    sat = _brute_force(df, qis, "s", hs, all_nodes, k, sup_rows, kind, param, mode)
    want = sorted(n for n in sat if not any(m != n and all(a <= b for a, b in zip(m, n)) for m in sat))

    def lattice():
        return Lattice(table, models, sup, suppressed_rows=mode)

    if not want:
        with pytest.raises(AnonymizeError):
            incognito(lattice())
        return
    lat = lattice()
    ex = exhaustive(lat)
    assert sorted(ex.stats["satisfying"]) == sorted(sat)
    assert sorted(x.levels for x in ex.nodes) == want
    assert sorted(x.levels for x in incognito(lattice()).nodes) == want
    assert sorted(x.levels for x in flash(lattice()).nodes) == want
    s = samarati(lattice())
    if lat.exact_monotone:
        assert s.stats["lowest_height"] == min(sum(x) for x in want)
    assert all(x.levels in sat for x in s.nodes)
    d = datafly(lattice())
    assert d.chosen.levels in sat


@HYP
@given(small_tables())
def test_verdict_only_checks_agree_with_the_exact_check_on_every_node(case):
    """PrivacyCheck.check with exact_failing=False (what Flash asks: a node whose too-small classes
    alone exceed the budget fails without its l / t checks) gives the exact check's verdicts,
    ``ok`` and ``ok_monotone``, on every node; its failing mask is a subset of the exact one and its
    count a lower bound, equal whenever the node passes."""
    df, nvals, fans, kind, k, sup, param, mode = case
    qis = [c for c in df.columns if c != "s"]
    hs = {c: _small_hierarchy(c, nv, f) for c, nv, f in zip(qis, nvals, fans)}
    table = EncodedTable.encode(df, Schema(qis, ["s"]), hs)
    extra = {"k": [], "distinct": [DistinctLDiversity(2)], "entropy": [EntropyLDiversity(1.6)],
             "t": [TCloseness(0.35, distance="variational")]}[kind]  # fmt: skip
    lat = Lattice(table, [KAnonymity(max(k, 2)), *extra], sup, suppressed_rows=mode)
    for node in lattice_nodes(lat.heights):
        fs = lat.rollup(lat.base, tuple(int(x) for x in node))
        ok, okm, fail, n_sup = lat.privacy.check(fs)
        ok2, okm2, fail2, n_sup2 = lat.privacy.check(fs, exact_failing=False)
        assert (ok2, okm2) == (ok, okm)
        assert not (fail2 & ~fail).any() and n_sup2 <= n_sup
        assert not ok or (n_sup2 == n_sup and np.array_equal(fail2, fail))


@pytest.mark.parametrize("mode", ["arx", "star"])
def test_verdicts_judged_on_the_largest_classes_first_agree_on_adult(adult, mode):
    """With t-closeness and suppression (not monotone) a verdict-only check judges the largest
    quarter of the classes first and fails a node whose failing rows there already exceed the budget
    (PrivacyCheck._fails_early): on Adult nodes it gives the exact check's ok and ok_monotone, a
    subset of its failing classes, and takes that shortcut on some of them."""
    lat = Lattice(adult, [KAnonymity(2), TCloseness(0.05, distance="variational")], 0.05, suppressed_rows=mode)
    assert not lat.exact_monotone
    nodes = lattice_nodes(lat.heights)
    shortcut = 0
    for node in nodes[np.random.default_rng(5).choice(len(nodes), 600, replace=False)]:
        fs = lat.rollup(lat.base, tuple(int(x) for x in node))
        ok, okm, fail, n_sup = lat.privacy.check(fs)
        ok2, okm2, fail2, n_sup2 = lat.privacy.check(fs, exact_failing=False)
        assert (ok2, okm2) == (ok, okm)
        assert not (fail2 & ~fail).any() and n_sup2 <= n_sup
        shortcut += bool((fail2 & (fs.counts >= 2)).any() and not np.array_equal(fail2, fail))
    assert shortcut > 0


# ---------------------------------------------------------------- Mondrian
@pytest.mark.parametrize("mode", ["strict", "relaxed"])
def test_mondrian_k_anonymity_classes_and_ncp(adult, mode):
    r = mondrian(adult, [KAnonymity(5)], mode=mode)
    assert r.sizes.min() >= 5 and r.sizes.sum() == adult.n
    lo, hi = M.class_boxes(adult, r.class_id, r.n_classes)
    assert M.ncp(adult, lo, hi)["ncp"] < 0.2
    if mode == "strict":
        # strict partitioning: any two classes are disjoint in some QI — numeric value ranges
        # do not meet, or categorical value sets (bit masks of leaf codes) do not intersect
        C = r.n_classes
        parts = []
        for j, h in enumerate(adult.hierarchies):
            codes = adult.qi_codes[:, j].astype(np.int64)
            if h.numeric:
                mn = np.full(C, 10**9)
                mx = np.full(C, -1)
                np.minimum.at(mn, r.class_id, codes)
                np.maximum.at(mx, r.class_id, codes)
                parts.append(("num", mn, mx))
            else:
                mask = np.zeros(C, dtype=np.int64)
                np.bitwise_or.at(mask, r.class_id, np.left_shift(1, codes))
                parts.append(("cat", mask, None))
        for a, b in itertools.islice(itertools.combinations(range(C), 2), 30000):
            meet = True
            for kind, x, y in parts:
                if kind == "num":
                    meet &= bool(x[a] <= y[b] and x[b] <= y[a])
                else:
                    meet &= bool(x[a] & x[b])
                if not meet:
                    break
            assert not meet


def test_mondrian_t_closeness_emd_within_t_by_pycanon(adult):
    res = anonymize_table(adult, algorithm="mondrian", models=[KAnonymity(2), TCloseness(0.2, "emd")], n_queries=0)
    df = released(res, QIS)
    assert pycanon.t_closeness(df, QIS, [SENS]) <= 0.2 + 1e-9


def test_mondrian_numeric_sensitive_t_ordered_emd():
    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame(
        {
            "age": rng.integers(20, 70, n),
            "zip": rng.integers(0, 30, n).astype(str),
            "salary": rng.integers(1, 10, n) * 1000,
        }
    )
    table = EncodedTable.encode(df, Schema(["age", "zip"], ["salary"]))
    res = anonymize_table(table, algorithm="mondrian", models=[KAnonymity(4), TCloseness(0.15)], n_queries=0)
    out = released(res, ["age", "zip"])
    assert pycanon.k_anonymity(out, ["age", "zip"]) >= 4
    assert pycanon.t_closeness(out, ["age", "zip"], ["salary"]) <= 0.15 + 1e-9


def test_mondrian_mean_output_and_whole_table_failure(adult):
    res = anonymize_table(adult, algorithm="mondrian", models=[KAnonymity(10)], numeric_output="mean", n_queries=0)
    ages = adult.df["age"].to_numpy(dtype=float)
    means = pd.Series(ages).groupby(res.class_id).transform("mean").to_numpy()
    assert np.allclose(res.df["age"].to_numpy(dtype=float), means)
    with pytest.raises(AnonymizeError, match="whole table"):
        mondrian(adult, [DistinctLDiversity(3)])  # salary-class has only 2 values


def test_mondrian_hierarchy_labels(adult):
    res = anonymize_table(adult, algorithm="mondrian", models=[KAnonymity(5)], n_queries=0)
    h = {x.name: x for x in adult.hierarchies}
    for c in QIS[1:]:
        allowed = set(itertools.chain.from_iterable(map(str, lab) for lab in h[c].labels))
        assert set(res.df[c].astype(str)) <= allowed
    for v in res.df["age"].astype(str):
        lo, _, hi = v.partition("-")
        assert 17 <= int(lo) <= int(hi or lo) <= 90


# ---------------------------------------------------------------- textbook (Aggarwal 2015, §20.3)
def _textbook():
    """Aggarwal 2015, Table 20.1 (reconstructed): SSN, Age, ZIP, Disease; Fig. 20.1 hierarchies."""
    df = pd.DataFrame(
        {
            "SSN": ["012-345-6789", "823-627-9231", "987-654-3210", "382-827-8264", "847-872-7276", "422-061-0089"],
            "Age": [24, 37, 26, 38, 36, 25],
            "ZIP": ["10598", "90210", "10547", "90345", "90127", "10503"],
            "Disease": ["HIV", "Hepatitis C", "HIV", "Diabetes", "Diabetes", "HIV"],
        }
    )
    age = Hierarchy.from_rows(
        "Age", [[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "0-49", "*"] for a in range(20, 50)], numeric=True
    )
    zips = Hierarchy.from_rows(
        "ZIP", [[z, z[:4] + "*", ("105**" if z.startswith("105") else "90***"), "*"] for z in df["ZIP"]]
    )
    return df, {"Age": age, "ZIP": zips}


def test_textbook_table_20_3_is_the_minimal_3_anonymous_release():
    df, hs = _textbook()
    schema = Schema(["Age", "ZIP"], ["Disease"], identifiers=["SSN"])
    for alg in ("incognito", "flash", "samarati"):
        res = anonymize_table(df, schema, hs, algorithm=alg, models=[KAnonymity(3)], n_queries=0)
        assert res.levels == {"Age": 1, "ZIP": 2}  # <A1, Z2>
        assert [x.levels for x in res.search.nodes] == [(1, 2)]  # the only minimal node
        assert "SSN" not in res.df.columns  # identifiers are dropped
        assert res.df[["Age", "ZIP"]].values.tolist() == [  # Table 20.3
            ["20-29", "105**"],
            ["30-39", "90***"],
            ["20-29", "105**"],
            ["30-39", "90***"],
            ["30-39", "90***"],
            ["20-29", "105**"],
        ]
        classes = res.class_id
        assert classes[0] == classes[2] == classes[5] and classes[1] == classes[3] == classes[4]


def test_textbook_linkage_attack_and_homogeneity():
    """Table 20.2 (voter list, reconstructed): before release William is the only voter matching the
    Hepatitis C record on (Age, ZIP); after <A1, Z2> every record matches ≥ 3 voters. Rows 1, 3, 6
    all have HIV (§20.3.2): the release is 3-anonymous but only 1-diverse; 2-diversity forces a
    coarser release."""
    df, hs = _textbook()
    voters = pd.DataFrame(
        {
            "Name": ["Joy", "Sue", "William", "Ann", "Bob", "Carl", "Dee"],
            "Age": [24, 26, 37, 38, 36, 25, 29],
            "ZIP": ["10598", "10547", "90210", "90345", "90127", "10503", "10598"],
        }
    )
    raw = df.merge(voters, on=["Age", "ZIP"])
    assert raw.loc[raw["Disease"] == "Hepatitis C", "Name"].tolist() == ["William"]
    schema = Schema(["Age", "ZIP"], ["Disease"], identifiers=["SSN"])
    res = anonymize_table(df, schema, hs, algorithm="incognito", models=[KAnonymity(3)], n_queries=0)
    gen_v = voters.assign(
        Age=[f"{a // 10 * 10}-{a // 10 * 10 + 9}" for a in voters["Age"]],
        ZIP=[("105**" if z.startswith("105") else "90***") for z in voters["ZIP"]],
    )
    linked = res.df.reset_index().merge(gen_v, on=["Age", "ZIP"])
    assert linked.groupby("index")["Name"].nunique().min() >= 3
    assert res.metrics["achieved"]["sensitive_attributes"]["Disease"]["l_distinct"] == 1
    res2 = anonymize_table(
        df, schema, hs, algorithm="incognito", models=[KAnonymity(3), DistinctLDiversity(2)], n_queries=0
    )
    assert sum(res2.levels.values()) > 3
    assert pycanon.l_diversity(released(res2, ["Age", "ZIP"]), ["Age", "ZIP"], ["Disease"]) >= 2


# ---------------------------------------------------------------- details
def test_suppression_budget_and_star_rows(adult):
    res = anonymize_table(adult, algorithm="flash", models=[KAnonymity(5)], max_suppression=0.05, n_queries=0)
    n_sup = int(res.suppressed_mask.sum())
    assert 0 < n_sup <= int(0.05 * adult.n)
    assert (res.df.loc[res.suppressed_mask, QIS] == "*").all().all()
    assert (res.df[SENS] == adult.df[SENS]).all()  # sensitive values are released as they are
    dropped = anonymize_table(
        adult, algorithm="flash", models=[KAnonymity(5)], max_suppression=0.05, suppressed_rows="drop", n_queries=0
    )
    assert len(dropped.df) == adult.n - n_sup


def test_datafly_generalizes_most_distinct_first(adult):
    lat = Lattice(adult, [KAnonymity(5)], 0.02)
    d = datafly(lat)
    assert d.stats["steps"][0]["attribute"] == "age"  # 72 distinct ages, the most
    assert d.chosen.ok and d.chosen.suppressed <= lat.max_sup


def test_non_monotone_models_are_flagged_and_still_exact(adult):
    lat = Lattice(adult, [KAnonymity(2), EntropyLDiversity(1.5)], 0.03)
    assert not lat.exact_monotone
    assert Lattice(adult, [KAnonymity(2), DistinctLDiversity(2)], 0.03, suppressed_rows="drop").exact_monotone
    # released with '*', the suppressed rows form one more class that must pass too: not monotone
    assert not Lattice(adult, [KAnonymity(2), DistinctLDiversity(2)], 0.03).exact_monotone
    assert Lattice(adult, [KAnonymity(2), EntropyLDiversity(1.5)], 0.0).exact_monotone


def test_errors(adult):
    with pytest.raises(AnonymizeError, match="larger than the table"):
        anonymize_table(adult, algorithm="incognito", models=[KAnonymity(adult.n + 1)])
    with pytest.raises(AnonymizeError, match="unknown algorithm"):
        anonymize_table(adult, algorithm="ola", models=[KAnonymity(2)])
    with pytest.raises(AnonymizeError, match="no full-domain|no generalization"):
        flash(Lattice(adult, [RecursiveCLDiversity(1.01, 2)], 0.0))
    with pytest.raises(AnonymizeError):
        build_models(k=2, l=2, l_variant="recursive")  # needs c


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 300), max_size=200),
    st.sampled_from([np.int16, np.int32, np.int64, np.uint8]),
)
def test_compact_codes_equal_numpy_unique(values, dtype):
    """The frequency sets' compact codes (by counting, not sorting) are ``np.unique``'s, values and
    inverse, for any integer dtype, with or without a known bound of the codes; a code range far wider
    than the column falls back to sorting."""
    from anonymize.publish.fulldomain.frequency import _compact, _compact_counted, _leaf_lookup

    col = np.asarray(values, dtype=np.int64).clip(0, np.iinfo(dtype).max).astype(dtype)
    for c in (col, np.concatenate([col, np.array([10**6], np.int64)]) if dtype is np.int64 else col):
        want_p, want_inv = np.unique(c, return_inverse=True)
        # without a bound, and with the bound a hierarchy gives (every code below it; a strided column)
        for present, inv in (_compact(c), _compact(c, int(c.max(initial=0)) + 1 + len(values) % 3), _compact(c[::1])):
            assert present.dtype == c.dtype and np.array_equal(present, want_p)
            assert np.array_equal(inv, want_inv.reshape(-1))
        strided = np.stack([c, c]).T[:, 1]  # a column of a row-major matrix, as the QI codes are read
        present, inv, counts = _compact_counted(strided, int(c.max(initial=0)) + 1)
        assert np.array_equal(present, want_p) and np.array_equal(inv, want_inv.reshape(-1))
        assert np.array_equal(counts, np.unique(c, return_counts=True)[1])  # rows per value present
        assert np.array_equal(_compact_counted(c)[2], np.unique(c, return_counts=True)[1])
        present, lookup, counts = _leaf_lookup(strided, int(c.max(initial=0)) + 1 + len(values) % 3)
        assert np.array_equal(present, want_p) and np.array_equal(lookup[c], want_inv.reshape(-1))
        assert np.array_equal(counts, np.unique(c, return_counts=True)[1])


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    st.integers(1, 60),
    st.lists(st.integers(1, 12), min_size=1, max_size=3),
    st.sampled_from([None, 1, 300, 70_000]),
    st.integers(0, 2**32 - 1),
)
def test_packed_histograms_equal_a_pandas_count_of_the_generalized_rows(n, widths, weight, seed):
    """Sensitive histograms roll up packed, several counts to a word (``HistogramLayout``: 8-bit lanes
    below 256 rows, 16-bit below 65,536, 32-bit beyond; sensitive attributes whose values straddle a
    word). At random nodes, reached directly and through a specialization, they equal a pandas count
    of the rows' generalized QI tuples and sensitive values (weights counted as multiplicities)."""
    rng = np.random.default_rng(seed)
    qis = ["a0", "a1"]
    df = pd.DataFrame({c: [f"v{x}" for x in rng.integers(0, 7, n)] for c in qis})
    sens = [f"s{i}" for i in range(len(widths))]
    for s, w in zip(sens, widths):
        df[s] = [f"x{x}" for x in rng.integers(0, w, n)]
    w = None if weight is None else rng.integers(1, weight + 1, n)
    hs = {c: _small_hierarchy(c, 7, 2) for c in qis}
    table = EncodedTable.encode(df, Schema(qis, sens), hs, weights=w)
    lat = Lattice(table, [KAnonymity(1)], 0.0, histograms=True)
    total = int(n if w is None else w.sum())
    assert lat.freq.hist_layout.lane == next(b for b in (8, 16, 32, 64) if total < 1 << b)
    weights = np.ones(n, dtype=np.int64) if w is None else w
    for node in [(0, 0), (1, 0), (1, 2), (3, 3), (2, 1)]:
        fs = lat.rollup(lat.rollup(lat.base, (min(node[0], 1), 0)), node)
        codes = lat.tuple_codes(fs)
        g = {c: hs[c].maps[lv][hs[c].encode(df[c])] for c, lv in zip(qis, node)}
        for s, got in zip(sens, lat.freq.histograms(fs)):
            j = table.schema.sensitive.index(s)
            vals = list(table.sens_values[j])
            want = (
                pd.DataFrame({**g, "v": df[s].map({v: i for i, v in enumerate(vals)}), "w": weights})
                .groupby(qis + ["v"])["w"]
                .sum()
            )
            node_codes = [lat.freq.node_of[i][lv][codes[:, i]] for i, lv in enumerate(node)]
            have = {
                (int(a), int(b), v): int(got[r, v])
                for r, (a, b) in enumerate(zip(*node_codes))
                for v in range(len(vals))
                if got[r, v]
            }
            assert have == {tuple(int(x) for x in key): int(c) for key, c in want.items()}
            assert np.array_equal(got.sum(axis=1), fs.counts)
            assert fs.counts.dtype == np.int64


@pytest.mark.parametrize("values", [7, 8, 15, 16])
def test_counts_ride_in_a_free_lane_and_equal_the_plain_count(values):
    """When the packed histograms' last word has a free lane it carries each tuple's count (7 or 15
    values in 8-bit lanes), else the counts roll up apart (8 or 16: the words are full); either way
    every node's counts equal a pandas count of the generalized rows."""
    rng = np.random.default_rng(values)
    n = 200
    qis = ["a0", "a1"]
    df = pd.DataFrame({c: [f"v{x}" for x in rng.integers(0, 7, n)] for c in qis})
    df["s"] = [f"x{x}" for x in np.arange(n) % values]
    hs = {c: _small_hierarchy(c, 7, 2) for c in qis}
    table = EncodedTable.encode(df, Schema(qis, ["s"]), hs)
    lat = Lattice(table, [KAnonymity(1)], 0.0, histograms=True)
    layout = lat.freq.hist_layout
    assert layout.lane == 8 and (layout.count_lane is None) == (values % 8 == 0)
    for node in [(0, 0), (1, 0), (1, 2), (3, 3), (2, 1), (0, 3)]:
        fs = lat.rollup(lat.rollup(lat.base, (min(node[0], 1), 0)), node)
        codes = lat.tuple_codes(fs)
        g = pd.DataFrame({c: hs[c].maps[lv][hs[c].encode(df[c])] for c, lv in zip(qis, node)})
        want = g.groupby(qis).size()
        node_codes = [lat.freq.node_of[i][lv][codes[:, i]] for i, lv in enumerate(node)]
        have = {(int(a), int(b)): int(c) for a, b, c in zip(*node_codes, fs.counts)}
        assert have == {tuple(int(x) for x in key): int(c) for key, c in want.items()}
