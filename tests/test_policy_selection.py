"""Parameter selection (Xu & Guo 2021, §3) against exhaustive search on a small table.

The oracle builds every full-domain release of a 120-row table by hand — generalizing through
hierarchy rows written here, grouping with pandas, measuring NCP, CDM and the disclosure
probability with pandas — and answers "the best release for these parameters" by trying every
node. Against it: the k range and choice, Algorithm 1's (k, l), Algorithm 2's t, and the one-pass k
sweep; every chosen release is re-measured by pycanon.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from pycanon import anonymity as pycanon

from anonymize.publish import EncodedTable, Hierarchy, KAnonymity, Schema
from anonymize.publish.fulldomain import Lattice, exhaustive
from anonymize.publish.fulldomain.flash import flash
from anonymize.publish.policy.evaluate import ReleaseEvaluator
from anonymize.publish.policy.measure import PrivacyRequirement, QualityRequirement, k_min_for
from anonymize.publish.policy.selection import select_k, select_l, select_t, t_steps

# ---------------------------------------------------------------------------------------------- table
AGES = list(range(20, 60))
AGE_ROWS = [[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "20-39" if a < 40 else "40-59", "*"] for a in AGES]
SEX_ROWS = [["F", "*"], ["M", "*"]]
ZIPS = ["1301", "1302", "1401", "1402", "1501"]
ZIP_ROWS = [[z, z[:3] + "*", z[:2] + "**", "*"] for z in ZIPS]
DISEASES = ["flu", "cold", "asthma", "diabetes", "cancer", "hiv"]
QIS = ["age", "sex", "zip"]


def make_table(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 120
    df = pd.DataFrame(
        {
            "age": rng.integers(20, 60, n),
            "sex": rng.choice(["F", "M"], n),
            "zip": rng.choice(ZIPS, n, p=[0.3, 0.25, 0.2, 0.15, 0.1]),
            "disease": rng.choice(DISEASES, n, p=[0.3, 0.25, 0.2, 0.12, 0.08, 0.05]),
        }
    )
    df.loc[0, "age"], df.loc[1, "age"] = 20, 59  # the numeric range is the hierarchy's
    return df


def hierarchies():
    return {
        "age": Hierarchy.from_rows("age", AGE_ROWS, numeric=True),
        "sex": Hierarchy.from_rows("sex", SEX_ROWS),
        "zip": Hierarchy.from_rows("zip", ZIP_ROWS),
    }


ROWS = {"age": AGE_ROWS, "sex": SEX_ROWS, "zip": ZIP_ROWS}
HEIGHTS = {c: len(r[0]) - 1 for c, r in ROWS.items()}


# ---------------------------------------------------------------------------------------------- oracle
class Oracle:
    """Every full-domain release of the table, measured with pandas (no suppression)."""

    def __init__(self, df: pd.DataFrame):
        self.df = df.reset_index(drop=True)
        self.n = len(df)
        self.global_dist = df["disease"].value_counts(normalize=True)
        self.nodes = []
        for levels in itertools.product(*(range(HEIGHTS[c] + 1) for c in QIS)):
            rel = self.release(levels)
            g = rel.groupby(QIS, sort=False)["disease"]
            sizes = g.size().to_numpy()
            top_share = g.agg(lambda s: s.value_counts().iloc[0] / len(s)).to_numpy()
            distinct = g.nunique().to_numpy()
            var = g.agg(
                lambda s: (
                    0.5
                    * (s.value_counts(normalize=True) - self.global_dist)
                    .fillna(0)
                    .abs()
                    .add(self.global_dist[~self.global_dist.index.isin(s.unique())], fill_value=0)
                    .sum()
                )
            ).to_numpy()
            self.nodes.append(
                {
                    "levels": levels,
                    "min_size": int(sizes.min()),
                    "min_distinct": int(distinct.min()),
                    "max_t": float(var.max()),
                    "P": float(top_share.max()),
                    "ncp": self.ncp(levels),
                    "cdm": float((sizes.astype(float) ** 2).sum() / len(sizes)),
                    "dm": float((sizes.astype(float) ** 2).sum()),
                    "class_t": var,
                }
            )

    def release(self, levels) -> pd.DataFrame:
        out = self.df.copy()
        for c, lv in zip(QIS, levels):
            m = {r[0]: r[lv] for r in ROWS[c]}
            out[c] = out[c].astype(str).map(m)
        return out

    def ncp(self, levels) -> float:
        per = []
        for c, lv in zip(QIS, levels):
            if c == "age":
                m = {r[0]: r[lv] for r in AGE_ROWS}
                spans = {}
                for a in AGES:
                    spans.setdefault(m[str(a)], []).append(a)
                lab = self.df["age"].astype(str).map(m)
                width = lab.map({lab_: max(v) - min(v) for lab_, v in spans.items()})
                per.append(float((width / (59 - 20)).mean()))
            else:
                per.append(lv / HEIGHTS[c])
        return float(np.mean(per))

    def best(self, k=1, l=None, t=None, metric="ncp"):
        ok = [
            x
            for x in self.nodes
            if x["min_size"] >= k and (l is None or x["min_distinct"] >= l) and (t is None or x["max_t"] <= t + 1e-9)
        ]
        if not ok:
            return None
        return min(ok, key=lambda x: (round(x[metric], 9), round(x["ncp"], 9), x["dm"], sum(x["levels"]), x["levels"]))


def oracle_entropy_bound(df) -> int:
    p = df["disease"].value_counts(normalize=True).to_numpy()
    return int(math.floor(math.exp(-(p * np.log(p)).sum()) + 1e-9))


def both(rel, pmax, q, metric):
    return rel is not None and rel["P"] <= pmax + 1e-12 and (q is None or rel[metric] <= q + 1e-12)


@pytest.fixture(scope="module", params=[3, 11])
def setup(request):
    df = make_table(request.param)
    table = EncodedTable.encode(df, Schema(QIS, ["disease"]), hierarchies())
    return df, table, Oracle(df)


CASES = [
    (0.5, 0.5, "ncp"),
    (0.34, 0.75, "ncp"),
    (0.5, 0.4, "ncp"),
    (0.4, 900.0, "cdm"),
    (0.5, 900.0, "cdm"),
    (0.25, 0.3, "ncp"),
]


@pytest.mark.parametrize("pmax,q,metric", CASES)
def test_k_range_and_choice_match_exhaustive_search(setup, pmax, q, metric):
    df, table, orc = setup
    ev = ReleaseEvaluator(table, "flash", search_metric=metric)
    ks = select_k(ev, PrivacyRequirement(pmax), QualityRequirement(metric, q))
    bound = math.ceil(1 / pmax - 1e-9)
    assert ks.kmin_bound == bound == k_min_for(pmax)
    # K_min (eq. 1 with t measured): the first k from ceil(1/pmax) whose optimal k-anonymous release, found by
    # exhaustive search, has P = t/|E| <= pmax
    kmin = next(
        (k for k in range(bound, orc.n + 1) if (b := orc.best(k, metric=metric)) and b["P"] <= pmax + 1e-12), None
    )
    if kmin is None:  # k-anonymity alone does not bound P: K_min stays ceil(1/pmax), and the selection says so
        assert ks.kmin == bound and "does not bound P" in ks.kmin_note
        kmin = bound
    else:
        assert ks.kmin == kmin and ks.kmin_note is None
    # t at K_min: P = t/|E| for a class E of the release
    c0 = ks.candidates[kmin]
    assert (
        ks.repetitions is not None
        and ks.repetitions >= 1
        and any(abs(ks.repetitions / e - c0.disclosure) < 1e-12 for e in c0.sizes)
    )
    feasible = [k for k in range(kmin, orc.n + 1) if (b := orc.best(k, metric=metric)) and b[metric] <= q + 1e-12]
    if not feasible:
        assert ks.k is None and ks.kmax is None and ks.reason
        return
    kmax = max(feasible)
    assert ks.kmax == kmax
    assert ks.k == kmin + (kmax - kmin) // 2
    # the chosen release is the exhaustive optimum, measured alike
    got, want = ks.release, orc.best(ks.k, metric=metric)
    assert got.ncp == pytest.approx(want["ncp"], abs=1e-9)
    assert got.cdm == pytest.approx(want["cdm"], rel=1e-9)
    assert got.disclosure == pytest.approx(want["P"], abs=1e-12)


@pytest.mark.parametrize("pmax,q,metric", CASES)
def test_algorithm_1_matches_exhaustive_search(setup, pmax, q, metric):
    df, table, orc = setup
    priv, qual = PrivacyRequirement(pmax), QualityRequirement(metric, q)
    ev = ReleaseEvaluator(table, "flash", search_metric=metric)
    ks = select_k(ev, priv, qual)
    if ks.k is None:  # no k range: no k-anonymous release within the quality bound, by exhaustive search
        assert not any((b := orc.best(k, metric=metric)) and b[metric] <= q + 1e-12 for k in range(ks.kmin, orc.n + 1))
        return
    res = select_l(ev, priv, qual, ks.k, ks.kmax)
    # exhaustive: the first (k, l) in Algorithm 1's order whose best release meets both
    expected = None
    for k in range(ks.k, ks.kmax + 1):
        l_min = orc.best(k, metric=metric)["min_distinct"]
        l_max = max(l_min, min(k, oracle_entropy_bound(df)))
        for l in range(l_min, l_max + 1):
            rel = orc.best(k, l=l, metric=metric)
            if both(rel, pmax, q, metric):
                expected = (k, l)
                break
        if expected:
            break
    assert (res.k, res.l) == (expected or (None, None))
    if expected is None:
        assert res.reason
        return
    # and by brute force over every pair tried before it, none meets both
    for k in range(ks.k, res.k + 1):
        top = res.l if k == res.k else min(k, oracle_entropy_bound(df))
        for l in range(1, top):
            assert (
                not both(orc.best(k, l=l, metric=metric), pmax, q, metric)
                or l < orc.best(k, metric=metric)["min_distinct"]
            )
    # pycanon on the release as published
    c = res.release
    rel = orc.release(tuple(c.levels[x] for x in QIS)).reset_index(drop=True)
    alpha, k_canon = pycanon.alpha_k_anonymity(rel, QIS, ["disease"])
    assert alpha <= pmax + 1e-12 and alpha == pytest.approx(c.disclosure)
    assert k_canon >= res.k and pycanon.l_diversity(rel, QIS, ["disease"]) >= res.l


@pytest.mark.parametrize("pmax,q,metric", CASES)
def test_algorithm_2_matches_exhaustive_search(setup, pmax, q, metric):
    df, table, orc = setup
    priv, qual = PrivacyRequirement(pmax), QualityRequirement(metric, q)
    ev = ReleaseEvaluator(table, "flash", search_metric=metric)
    ks = select_k(ev, priv, qual)
    if ks.k is None:  # no k range: no k-anonymous release within the quality bound, by exhaustive search
        assert not any((b := orc.best(k, metric=metric)) and b[metric] <= q + 1e-12 for k in range(ks.kmin, orc.n + 1))
        return
    res = select_t(ev, priv, qual, ks.k, ks.release)
    base = orc.best(ks.k, metric=metric)
    d = base["class_t"]
    assert res.d_max == pytest.approx(d.max())
    assert res.d_min == pytest.approx(d[d > 1e-12].min())
    expected = None
    for t in t_steps(d[d > 1e-12].min(), d.max()):
        rel = orc.best(ks.k, t=t, metric=metric)
        if rel is None or rel[metric] > q + 1e-12:
            continue
        if rel["P"] <= pmax + 1e-12:
            expected = t
        break
    assert res.t == expected
    if expected is not None:
        c = res.release
        rel = orc.release(tuple(c.levels[x] for x in QIS)).reset_index(drop=True)
        assert pycanon.t_closeness(rel, QIS, ["disease"]) <= expected + 1e-9
        assert pycanon.alpha_k_anonymity(rel, QIS, ["disease"])[0] <= pmax + 1e-12


def test_the_cases_are_not_vacuous():
    """On seed 3 the cases include an Algorithm 1 run that steps past its first l, and an Algorithm 2
    choice below D_max (a t that constrains more than k does), besides failures."""
    table = EncodedTable.encode(make_table(3), Schema(QIS, ["disease"]), hierarchies())
    multi_l = t_below = failed = False
    for pmax, q, metric in CASES:
        priv, qual = PrivacyRequirement(pmax), QualityRequirement(metric, q)
        ev = ReleaseEvaluator(table, "flash", search_metric=metric)
        ks = select_k(ev, priv, qual)
        if ks.k is None:
            failed = True
            continue
        ls = select_l(ev, priv, qual, ks.k, ks.kmax)
        ts = select_t(ev, priv, qual, ks.k, ks.release)
        multi_l |= ls.l is not None and len(ls.steps) > 1
        t_below |= ts.t is not None and ts.t < ts.d_max
    assert multi_l and t_below and failed


def test_t_steps_are_two_decimal_multiples_of_d_min_up_to_d_max():
    assert t_steps(0.2101, 0.5) == [0.21, 0.42, 0.63]
    assert t_steps(0.0, 0.02) == [0.01, 0.02]
    assert t_steps(0.4, 2.0)[-1] == 1.0


# ---------------------------------------------------------------------------------------------- k sweep
@pytest.mark.parametrize("sup,metric,rows", [(0.0, "ncp", "star"), (0.05, "ncp", "star"), (0.05, "cdm", "drop")])
def test_k_sweep_chooses_what_flash_and_exhaustive_choose(setup, sup, metric, rows):
    _, table, _ = setup
    ev = ReleaseEvaluator(table, "flash", max_suppression=sup, suppressed_rows=rows, search_metric=metric)
    got = ev.evaluate_k(range(2, 31))
    assert ev.sweep_stats["region_nodes"] > 0
    for k in range(2, 31):
        try:
            ref = exhaustive(Lattice(table, [KAnonymity(k)], sup, suppressed_rows=rows), metric=metric).chosen
            fl = flash(Lattice(table, [KAnonymity(k)], sup, suppressed_rows=rows), metric=metric).chosen
        except Exception:
            assert not got[k].ok
            continue
        assert got[k].ok
        assert tuple(got[k].levels.values()) == tuple(ref.levels) == tuple(fl.levels)
        assert got[k].suppressed == ref.suppressed


def test_set_models_reuses_a_lattice_without_changing_answers(setup):
    from anonymize.publish import DistinctLDiversity, TCloseness

    _, table, _ = setup
    shared = Lattice(table, [KAnonymity(2)], 0.05, histograms=True)
    for models in (
        [KAnonymity(3)],
        [KAnonymity(2), DistinctLDiversity(3)],
        [KAnonymity(4), TCloseness(0.3)],
        [KAnonymity(9)],
    ):
        shared.set_models(models)
        a = flash(shared).chosen
        b = flash(Lattice(table, models, 0.05)).chosen
        assert a.levels == b.levels and a.suppressed == b.suppressed and a.ncp == pytest.approx(b.ncp)
    size_only = Lattice(table, [KAnonymity(2)])
    with pytest.raises(Exception, match="no sensitive histograms"):
        size_only.set_models([DistinctLDiversity(2)])


def test_tune_says_when_pmax_is_infeasible_or_bounds_nothing(tmp_path, capsys):
    """No grouping of rows can bring the largest class share of a value below its share in the whole table
    (the classes' shares average to it): below that floor, pmax is infeasible and tune says so; pmax = 1
    bounds nothing, and tune says that too (it returned k = 1 without a word)."""
    import json as _json
    from pathlib import Path as _Path

    import pandas as _pd

    from parties.cli import main

    data = _Path(__file__).resolve().parents[1] / "anonymize" / "data"
    base = ["tune", str(data / "adult_subset.csv"), "--qi", "age,sex,race", "--hierarchies", str(data), "--json"]
    assert main([*base, "--sensitive", "salary-class", "--pmax", "0.5"]) == 0
    rep = _json.loads(capsys.readouterr().out)
    share = _pd.read_csv(data / "adult_subset.csv", sep=";")["salary-class"].value_counts(normalize=True).max()
    assert rep["pmax_floor"] == pytest.approx(share) and rep["pmax_feasible"] is False
    assert "cannot be met by generalization" in rep["pmax_notes"][0] and f"{share:.4g}" in rep["pmax_notes"][0]
    assert main([*base, "--sensitive", "occupation", "--pmax", "1"]) == 0
    rep = _json.loads(capsys.readouterr().out)
    assert rep["pmax_feasible"] is True and rep["pmax_notes"][0].startswith("pmax = 1 bounds nothing")
    assert main([*base, "--sensitive", "occupation", "--pmax", "0.5"]) == 0
    assert _json.loads(capsys.readouterr().out)["pmax_notes"] == []
