"""ARX's utility options: NCP flavours, attribute weights, ARX's geometric-mean Loss, and ARX's outlier
semantics (``--suppressed-rows arx``).

Every figure is checked against a computation written here from the definitions — a hand-made
hierarchy and pandas — not against the package's own metric code; the Loss also against the numbers
ARX's own test suite publishes for Adult (``TestUtilityMetrics``, ``TestUtilityMetricsLoss`` in
arx-deidentifier/arx, ``src/test/org/deidentifier/arx/test``), when the full Adult file is present.
"""

from __future__ import annotations

import itertools
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
    DistinctLDiversity,
    EncodedTable,
    Hierarchy,
    KAnonymity,
    Schema,
    TCloseness,
    anonymize_table,
)
from anonymize.publish.fulldomain import Lattice, exhaustive, metric_key
from anonymize.publish.fulldomain.flash import flash
from anonymize.publish.fulldomain.incognito import incognito
from anonymize.publish.io import read_hierarchies, read_table
from anonymize.publish.metrics.cells import boxes_from_levels, cell_loss
from anonymize.publish.metrics.loss import attribute_weights, loss_geometric
from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
SUBSET = DATA / "adult_subset.csv"
FULL = ROOT.parent / "shared" / "data" / "adult" / "adult.csv"  # ARX's data/adult.csv, beside the clone in CI
ADULT_QIS = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]

# ----------------------------------------------------------------------------- a hand-made table
# job: 6 leaves, height 3; 'care' and 'office' are one-leaf nodes (height flavour 1/3, leaves and span 0)
JOB_ROWS = [
    ["nurse", "care", "health", "*"],
    ["doctor", "medic", "health", "*"],
    ["surgeon", "medic", "health", "*"],
    ["teacher", "edu", "other", "*"],
    ["lecturer", "edu", "other", "*"],
    ["clerk", "office", "other", "*"],
]
CITY_ROWS = [["A", "north", "*"], ["B", "north", "*"], ["C", "south", "*"], ["D", "south", "*"]]
AGE_ROWS = [
    ["20", "20-24", "*"],
    ["22", "20-24", "*"],
    ["25", "25-29", "*"],
    ["27", "25-29", "*"],
    ["30", "30-39", "*"],
    ["35", "30-39", "*"],
]
TINY_ROWS = {"job": JOB_ROWS, "city": CITY_ROWS, "age": AGE_ROWS}
TINY = pd.DataFrame(
    {
        "age": [20, 22, 25, 27, 30, 35, 20, 22, 25, 30, 35, 27, 22, 25],
        "city": ["A", "B", "C", "D", "A", "B", "C", "D", "A", "B", "C", "D", "A", "C"],
        "job": [
            "nurse",
            "doctor",
            "surgeon",
            "teacher",
            "lecturer",
            "clerk",
            "nurse",
            "doctor",
            "surgeon",
            "teacher",
            "lecturer",
            "clerk",
            "doctor",
            "teacher",
        ],
        "disease": [
            "flu",
            "cold",
            "flu",
            "hiv",
            "cold",
            "flu",
            "hiv",
            "flu",
            "cold",
            "flu",
            "hiv",
            "cold",
            "flu",
            "flu",
        ],
    }
)
TINY_QIS = ["age", "city", "job"]


def tiny_hierarchies():
    return {name: Hierarchy.from_rows(name, rows) for name, rows in TINY_ROWS.items()}


def _label_leaves(rows):
    """label -> (level, leaves under it), the lowest level a label appears at."""
    out: dict = {}
    for lv in range(len(rows[0])):
        for r in rows:
            if r[lv] not in out:
                out[r[lv]] = (lv, [x[0] for x in rows if x[lv] == r[lv]])
    return out


def independent_cell_losses(released: pd.DataFrame, qis, flavour: str) -> dict:
    """Per QI, the mean cell loss of the released column, from the definitions:
    numeric — (max − min of the leaves under the value) / (largest − smallest leaf);
    categorical — 'height': level of the lowest common ancestor of the leaves under the value /
    hierarchy height (Jiang, Zeng, Ma 2017, §2.2.2: a one-leaf node such as 'care' is its leaf, 0); 'leaves':
    card / |A|, 0 when card = 1 (Xu, Wang, Pei, Wang, Shi, Fu, "Utility-based anonymization using
    local recoding", KDD 2006 — NCP's categorical term); 'span': (card − 1)/(|A| − 1) (Iyengar,
    "Transforming data to satisfy privacy constraints", KDD 2002; what anonymize/publish/metrics/
    cells.py calls 'span')."""
    out = {}
    for q in qis:
        rows = TINY_ROWS[q]
        lab = _label_leaves(rows)
        height = len(rows[0]) - 1
        n_leaves = len(rows)
        losses = []
        for v in released[q].astype(str):
            lv, leaves = lab[v]
            card = len(leaves)
            if q == "age":
                all_v = [float(r[0]) for r in rows]
                vals = [float(x) for x in leaves]
                losses.append((max(vals) - min(vals)) / (max(all_v) - min(all_v)))
            elif flavour == "height":
                lca = min(x for x in range(height + 1) if len({r[x] for r in rows if r[0] in leaves}) == 1)
                losses.append(lca / height)
            elif flavour == "leaves":
                losses.append(0.0 if card == 1 else card / n_leaves)
            else:
                losses.append((card - 1) / (n_leaves - 1))
        out[q] = float(np.mean(losses))
    return out


def independent_share_losses(released: pd.DataFrame, qis) -> dict:
    """Per QI, ARX's Loss before aggregation (MetricMDNMLoss with a hierarchy given as a table:
    DomainShareMaterialized share = leaves under the value / leaves of the hierarchy; per attribute
    (Σ share − n/|A|) / (n − n/|A|)), computed as ARX states it, not simplified."""
    out = {}
    n = len(released)
    for q in qis:
        rows = TINY_ROWS[q]
        lab = _label_leaves(rows)
        size = len(rows)
        total = sum(len(lab[v][1]) / size for v in released[q].astype(str))
        lo = n / size
        out[q] = max((total - lo) / (n - lo), 0.0)
    return out


def geometric(per: list[float], weights: list[float]) -> float:
    """ARX's ILMultiDimensionalGeometricMean: Π (v_i·w_i + 1)^(1/q) − 1, weights divided by the largest."""
    top = max(weights)
    w = [1.0] * len(weights) if top == 0 else [x / top for x in weights]
    prod = 1.0
    for v, x in zip(per, w):
        prod *= (v * x + 1.0) ** (1.0 / len(per))
    return prod - 1.0


def _generalize(df: pd.DataFrame, rows_by_qi: dict, levels) -> pd.DataFrame:
    out = df.copy()
    for (q, rows), lv in zip(rows_by_qi.items(), levels):
        m = {r[0]: r[lv] for r in rows}
        out[q] = df[q].astype(str).map(m)
    return out


# ----------------------------------------------------------------------------- 1. NCP flavours
@pytest.mark.parametrize("flavour", ["height", "leaves", "span"])
@pytest.mark.parametrize("max_sup", [0.0, 0.15])
def test_each_ncp_flavour_equals_its_definition(flavour, max_sup):
    res = anonymize_table(
        TINY,
        Schema(TINY_QIS, ["disease"]),
        tiny_hierarchies(),
        "flash",
        [KAnonymity(2)],
        max_sup,
        ncp_categorical=flavour,
        n_queries=0,
    )
    want = independent_cell_losses(res.df, TINY_QIS, flavour)
    ncp = res.metrics["ncp"]
    assert ncp["categorical"] == flavour and res.report["parameters"]["ncp_categorical"] == flavour
    for q in TINY_QIS:
        assert ncp["per_attribute"][q] == pytest.approx(want[q], abs=1e-12)
    assert ncp["ncp"] == pytest.approx(np.mean(list(want.values())), abs=1e-12)
    # the search measures the same NCP for the chosen node
    assert res.report["chosen_node"]["ncp"] == pytest.approx(ncp["ncp"], abs=1e-12)


@pytest.mark.parametrize("flavour", ["height", "leaves", "span"])
def test_search_minimizes_the_chosen_ncp_flavour(flavour):
    """Without suppression the chosen node has the smallest NCP (in that flavour) of every node
    whose classes all have ≥ k rows — every node checked here with pandas."""
    k = 3
    rows_by_qi = {q: TINY_ROWS[q] for q in TINY_QIS}
    best = math.inf
    for levels in itertools.product(*(range(len(r[0])) for r in rows_by_qi.values())):
        g = _generalize(TINY, rows_by_qi, levels)
        if g.groupby(TINY_QIS).size().min() >= k:
            best = min(best, float(np.mean(list(independent_cell_losses(g, TINY_QIS, flavour).values()))))
    res = anonymize_table(
        TINY, Schema(TINY_QIS, []), tiny_hierarchies(), "flash", [KAnonymity(k)], ncp_categorical=flavour, n_queries=0
    )
    assert res.metrics["ncp"]["ncp"] == pytest.approx(best, abs=1e-12)


def test_the_three_flavours_on_hand_made_values():
    """'care' and 'office' hold one leaf (no loss in any flavour), 'medic' two of six leaves one level
    up, 'health' three leaves two levels up, '*' everything."""
    rel = pd.DataFrame({"job": ["care", "office", "medic", "health", "*"]})
    h = independent_cell_losses(rel, ["job"], "height")["job"]
    lv = independent_cell_losses(rel, ["job"], "leaves")["job"]
    sp = independent_cell_losses(rel, ["job"], "span")["job"]
    assert h == pytest.approx((0 + 0 + 1 / 3 + 2 / 3 + 1) / 5)
    assert lv == pytest.approx((0 + 0 + 2 / 6 + 3 / 6 + 1) / 5)
    assert sp == pytest.approx((0 + 0 + 1 / 5 + 2 / 5 + 1) / 5)
    table = EncodedTable.encode(TINY, Schema(TINY_QIS, []), tiny_hierarchies())
    for flavour, want in (("height", h), ("leaves", lv), ("span", sp)):
        codes = {name: i for i, name in enumerate(table.hierarchies[2].leaves)}
        cells = [
            ("nurse", "nurse"),
            ("clerk", "clerk"),
            ("doctor", "surgeon"),
            ("nurse", "surgeon"),
            ("nurse", "clerk"),
        ]
        lo = np.array([codes[a] for a, _ in cells])
        hi = np.array([codes[b] for _, b in cells])
        assert float(np.mean(cell_loss(table.hierarchies[2], lo, hi, None, flavour))) == pytest.approx(want)


@pytest.mark.parametrize("flavour", ["height", "leaves", "span"])
def test_cli_reports_the_flavour_and_check_measures_the_same(capsys, tmp_path, flavour):
    src, out, rep = tmp_path / "in.csv", tmp_path / "out.csv", tmp_path / "rep.json"
    TINY.to_csv(src, index=False)
    hdir = tmp_path / "h"
    hdir.mkdir()
    for name, h in tiny_hierarchies().items():
        h.write_arx(hdir / f"{name}.csv")
    args = ["--qi", ",".join(TINY_QIS), "--sensitive", "disease", "--hierarchies", hdir]
    code = main(
        ["anonymize", str(src), "-o", str(out), *map(str, args), "--algorithm", "flash", "--k", "2"]
        + ["--max-suppression", "0.15", "--ncp-categorical", flavour, "--report", str(rep), "--quiet"]
    )
    assert code == 0, capsys.readouterr().err
    report = json.loads(rep.read_text())
    assert report["parameters"]["ncp_categorical"] == flavour
    assert report["metrics"]["ncp"]["categorical"] == flavour
    written = pd.read_csv(out, dtype=str)
    want = independent_cell_losses(written, TINY_QIS, flavour)
    assert report["metrics"]["ncp"]["ncp"] == pytest.approx(np.mean(list(want.values())), abs=1e-12)
    capsys.readouterr()
    code = main(["check", str(out), *map(str, args), "--ncp-categorical", flavour, "--json"])
    got = json.loads(capsys.readouterr().out)
    assert code == 0
    assert got["ncp"]["categorical"] == flavour
    assert got["ncp"]["ncp"] == pytest.approx(report["metrics"]["ncp"]["ncp"], abs=1e-12)
    assert got["loss_geometric"]["loss"] == pytest.approx(report["metrics"]["loss_geometric"]["loss"], abs=1e-9)


# ----------------------------------------------------------------------------- 2. attribute weights
def test_weighted_ncp_is_the_weighted_mean_over_the_quasi_identifiers():
    weights = {"age": 3.0, "job": 0.5}  # city: 1
    res = anonymize_table(
        TINY, Schema(TINY_QIS, []), tiny_hierarchies(), "flash", [KAnonymity(2)], 0.15, weights=weights, n_queries=0
    )
    per = independent_cell_losses(res.df, TINY_QIS, "height")
    w = {"age": 3.0, "city": 1.0, "job": 0.5}
    want = sum(w[q] * per[q] for q in TINY_QIS) / sum(w.values())
    assert res.metrics["ncp"]["ncp"] == pytest.approx(want, abs=1e-12)
    assert res.report["chosen_node"]["ncp"] == pytest.approx(want, abs=1e-12)
    assert res.report["parameters"]["weights"] == w
    # scaling every weight leaves the weighted mean (and ARX's normalized weights) unchanged
    res2 = anonymize_table(
        TINY,
        Schema(TINY_QIS, []),
        tiny_hierarchies(),
        "flash",
        [KAnonymity(2)],
        0.15,
        weights={q: 10 * x for q, x in w.items()},
        n_queries=0,
    )
    assert res2.levels == res.levels
    assert res2.metrics["ncp"]["ncp"] == pytest.approx(want, abs=1e-12)


def _fan_hierarchy(name, n_values, fan):
    rows = [[f"v{v}", f"g{v // fan}", f"h{v // (fan * fan)}", "*"] for v in range(n_values)]
    return Hierarchy.from_rows(name, rows, numeric=False)


@st.composite
def weighted_cases(draw):
    n = draw(st.integers(8, 40))
    q = draw(st.integers(1, 3))
    nvals = [draw(st.integers(2, 9)) for _ in range(q)]
    fans = [draw(st.integers(2, 3)) for _ in range(q)]
    rows = {f"a{j}": [f"v{draw(st.integers(0, nvals[j] - 1))}" for _ in range(n)] for j in range(q)}
    rows["s"] = [draw(st.sampled_from(["x", "y", "z"])) for _ in range(n)]
    models = [KAnonymity(draw(st.integers(2, 4)))]
    if draw(st.booleans()):
        models.append(DistinctLDiversity(2))
    weights = {f"a{j}": draw(st.sampled_from([0.0, 0.25, 1.0, 2.0, 7.0])) for j in range(q)}
    sup = draw(st.sampled_from([0.0, 0.1, 0.3]))
    mode = draw(st.sampled_from(["star", "drop", "arx"]))
    metric = draw(st.sampled_from(["ncp", "loss"]))
    flavour = draw(st.sampled_from(["height", "leaves", "span"]))
    return pd.DataFrame(rows), nvals, fans, models, weights, sup, mode, metric, flavour


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(weighted_cases())
def test_weighted_flash_and_incognito_pick_the_exhaustive_optimum(case):
    df, nvals, fans, models, weights, sup, mode, metric, flavour = case
    qis = [c for c in df.columns if c != "s"]
    hs = {c: _fan_hierarchy(c, nv, f) for c, nv, f in zip(qis, nvals, fans)}
    table = EncodedTable.encode(df, Schema(qis, ["s"]), hs)
    w = attribute_weights(qis, weights)

    def lattice():
        return Lattice(table, models, sup, suppressed_rows=mode, ncp_categorical=flavour, weights=w)

    try:
        ex = exhaustive(lattice(), metric)
    except AnonymizeError:
        return
    want = metric_key(ex.chosen, metric, table.n)
    for search in (flash, incognito):
        got = search(lattice(), metric)
        assert metric_key(got.chosen, metric, table.n) == want, search.__name__
    # the exhaustive optimum's value is the weighted metric of its release, computed from the cells
    lat = lattice()
    sup_mask = lat.suppressed_mask(ex.chosen.levels)
    lo, hi = boxes_from_levels(table, ex.chosen.levels)
    if metric == "loss":
        assert ex.chosen.loss == pytest.approx(loss_geometric(table, lo, hi, sup_mask, weights=w)["loss"], abs=1e-9)


@pytest.fixture(scope="module")
def adult():
    df = read_table(SUBSET)
    hs = read_hierarchies(DATA, columns=set(ADULT_QIS) | {"salary-class"})
    return df, hs


@pytest.mark.parametrize("metric", ["ncp", "loss"])
@pytest.mark.parametrize("column", ["age", "education"])
def test_a_heavy_weight_keeps_its_column_less_generalized(adult, metric, column):
    df, hs = adult

    def levels(weights):
        return anonymize_table(
            df,
            Schema(ADULT_QIS, []),
            hs,
            "flash",
            [KAnonymity(5)],
            0.02,
            metric=metric,
            weights=weights,
            n_queries=0,
        ).levels

    equal, heavy = levels(None), levels({column: 20.0})
    assert heavy[column] < equal[column], (equal, heavy)
    # equal weights given explicitly are the unweighted run
    assert levels({q: 1.0 for q in ADULT_QIS}) == equal


def test_weights_are_refused_where_they_would_be_ignored(capsys, tmp_path):
    out = tmp_path / "o.csv"
    base = ["anonymize", str(SUBSET), "-o", str(out), "--qi", "age,sex", "--hierarchies", str(DATA), "--k", "5"]
    for extra, msg in (
        (["--algorithm", "kaca", "--weights", "age=2"], "kaca"),
        (["--algorithm", "flash", "--weights", "agex=2"], "no quasi-identifier"),
        (["--algorithm", "flash", "--weights", "agex=2", "--engine", "duckdb"], "no quasi-identifier"),
    ):
        code = main(base + extra)
        err = capsys.readouterr().err
        assert code == 2 and msg in err and err.count("\n") == 1, err
        assert not out.exists()
    with pytest.raises(SystemExit):
        main(base + ["--algorithm", "flash", "--weights", "age=-1"])
    capsys.readouterr()


# ----------------------------------------------------------------------------- 3. ARX's Loss
def test_loss_equals_arx_formula_on_a_tiny_table():
    weights = {"age": 2.0, "city": 0.0}  # job: 1
    for w in (None, weights):
        res = anonymize_table(
            TINY,
            Schema(TINY_QIS, []),
            tiny_hierarchies(),
            "flash",
            [KAnonymity(2)],
            0.15,
            metric="loss",
            weights=w,
            n_queries=0,
        )
        per = independent_share_losses(res.df, TINY_QIS)
        lg = res.metrics["loss_geometric"]
        for q in TINY_QIS:
            assert lg["per_attribute"][q] == pytest.approx(per[q], abs=1e-9)
        ws = [1.0] * 3 if w is None else [w.get(q, 1.0) for q in TINY_QIS]
        assert lg["loss"] == pytest.approx(geometric([per[q] for q in TINY_QIS], ws), abs=1e-9)
        assert res.report["chosen_node"]["loss"] == pytest.approx(lg["loss"], abs=1e-9)
        assert res.report["parameters"]["metric"] == "loss"


def test_loss_handles_zero_loss_attributes_by_the_shift():
    """ARX adds 1 before the product: an ungeneralized attribute contributes the factor 1, so the
    aggregate is 0 only when nothing is generalized, and not 0 when only some attributes are."""
    hs = tiny_hierarchies()
    table = EncodedTable.encode(TINY, Schema(TINY_QIS, []), hs)
    bottom = boxes_from_levels(table, (0, 0, 0))
    assert loss_geometric(table, *bottom)["loss"] == 0.0
    some = boxes_from_levels(table, (0, 0, 1))  # only job generalized, to care/medic/edu/office
    got = loss_geometric(table, *some)
    job = independent_share_losses(_generalize(TINY, {q: TINY_ROWS[q] for q in TINY_QIS}, (0, 0, 1)), ["job"])["job"]
    assert got["per_attribute"] == pytest.approx({"age": 0.0, "city": 0.0, "job": job})
    assert got["loss"] == pytest.approx((1 + job) ** (1 / 3) - 1)
    assert got["loss"] > 0 and math.prod(got["per_attribute"].values()) == 0  # a plain geometric mean would be 0


def test_search_minimizes_the_loss():
    k = 3
    rows_by_qi = {q: TINY_ROWS[q] for q in TINY_QIS}
    best = math.inf
    for levels in itertools.product(*(range(len(r[0])) for r in rows_by_qi.values())):
        g = _generalize(TINY, rows_by_qi, levels)
        if g.groupby(TINY_QIS).size().min() >= k:
            per = independent_share_losses(g, TINY_QIS)
            best = min(best, geometric([per[q] for q in TINY_QIS], [1.0, 1.0, 1.0]))
    res = anonymize_table(TINY, Schema(TINY_QIS, []), tiny_hierarchies(), "flash", [KAnonymity(k)], metric="loss")
    assert res.metrics["loss_geometric"]["loss"] == pytest.approx(best, abs=1e-9)


# ARX's published per-attribute losses on its data/adult.csv (30,162 rows; occupation is neither
# quasi-identifier nor sensitive there, so the eight QIs below, in the file's column order), printed
# by AggregateFunction.RANK as the weighted per-attribute values sorted descending:
# TestUtilityMetrics (Loss, k = 5; a node's loss counts the rows of classes under 5 as suppressed) and
# TestUtilityMetricsLoss case 51 (k = 5, suppression limit 100 %, attribute i of the file weighted i + 1).
ARX_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]
ARX_LOSS = {
    (0, 0, 0, 0, 0, 0, 0, 0): [0.5090179696] * 8,
    (0, 0, 0, 2, 0, 0, 0, 0): [1.0] + [0.3843909555] * 7,
    (0, 3, 1, 1, 1, 1, 0, 0): [1.0, 0.4535066198, 0.299545786, 0.220264444, 0.2196339765] + [0.0350772495] * 3,
    (1, 4, 1, 0, 1, 2, 2, 1): [1.0] * 6 + [0.1899012001, 6.63086e-5],
    (0, 4, 1, 2, 1, 2, 2, 1): [1.0] * 6 + [0.1898437327, 0.0],
}
ARX_WEIGHTED = (
    (1, 3, 0, 0, 0, 0, 0, 0),
    [
        0.1485312645,
        0.11552431683333335,
        0.1111111111111111,
        0.099020843,
        0.08251736916666667,
        0.06932099024444444,
        0.06601389533333334,
        0.0495104215,
    ],
)


@pytest.mark.skipif(not FULL.exists(), reason="full Adult not present")
def test_loss_matches_arx_published_numbers_on_adult():
    df = read_table(FULL)
    hs = read_hierarchies(DATA, columns=set(ARX_QIS))
    table = EncodedTable.encode(df, Schema(ARX_QIS, []), hs)
    lat = Lattice(table, [KAnonymity(5)], 1.0, suppressed_rows="arx")  # every class under 5 rows suppressed
    for levels, want in ARX_LOSS.items():
        got = loss_geometric(table, *boxes_from_levels(table, levels), lat.suppressed_mask(levels))
        assert sorted(got["per_attribute"].values(), reverse=True) == pytest.approx(want, abs=1e-9), levels
    order = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
    weights = {c: float(i + 1) for i, c in enumerate(order + ["salary-class"]) if c in ARX_QIS}
    w = attribute_weights(ARX_QIS, weights)
    levels, want = ARX_WEIGHTED
    got = loss_geometric(table, *boxes_from_levels(table, levels), lat.suppressed_mask(levels), weights=w)
    scaled = [got["per_attribute"][q] * w[j] / w.max() for j, q in enumerate(ARX_QIS)]  # ARX: weight / max
    assert sorted(scaled, reverse=True) == pytest.approx(want, abs=1e-9)
    assert got["loss"] == pytest.approx(geometric(list(got["per_attribute"].values()), list(w)), abs=1e-12)


# ----------------------------------------------------------------------------- 4. ARX's outlier semantics
def _star_rows(df: pd.DataFrame, qis) -> np.ndarray:
    return (df[qis] == "*").all(axis=1).to_numpy()


def test_arx_release_holds_outside_the_star_group_and_reports_what_the_group_breaks(capsys, tmp_path):
    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    code = main(
        ["anonymize", str(SUBSET), "-o", str(out), "--qi", ",".join(ADULT_QIS), "--sensitive", "salary-class"]
        + ["--hierarchies", str(DATA), "--algorithm", "flash", "--k", "10", "--l", "2"]
        + ["--t", "0.2", "--t-distance", "variational", "--max-suppression", "0.003"]
        + ["--suppressed-rows", "arx", "--report", str(rep)]
    )
    so, se = capsys.readouterr()
    assert code == 0, se
    report = json.loads(rep.read_text())
    written = pd.read_csv(out, sep=";", dtype=str, keep_default_na=False).reset_index(drop=True)
    star = _star_rows(written, ADULT_QIS)
    n_star = int(star.sum())
    assert len(written) == 3016  # every row is written
    assert n_star == report["metrics"]["suppressed_rows"] > 0
    rest = written[~star].reset_index(drop=True)
    k_rest = pycanon.k_anonymity(rest, ADULT_QIS)
    assert k_rest == report["metrics"]["achieved"]["k"] and k_rest >= 10
    assert pycanon.l_diversity(rest, ADULT_QIS, ["salary-class"]) >= 2
    # the whole file's salary distribution (= the input's): ARX's t-closeness reference
    whole = written["salary-class"].value_counts(normalize=True)
    for _, grp in rest.groupby(ADULT_QIS):
        p = grp["salary-class"].value_counts(normalize=True).reindex(whole.index, fill_value=0.0)
        assert 0.5 * float((p - whole).abs().sum()) <= 0.2 + 1e-12
    # the '*' group alone, measured with pandas
    g = written[star]
    p = g["salary-class"].value_counts(normalize=True).reindex(whole.index, fill_value=0.0)
    expect = {
        "k = 10": n_star >= 10,
        "distinct l = 2": g["salary-class"].nunique() >= 2,
        "t = 0.2 (variational)": 0.5 * float((p - whole).abs().sum()) <= 0.2 + 1e-12,
    }
    group = report["metrics"]["suppressed_group"]
    assert group["rows"] == n_star
    verdicts = {v["requirement"]: v["holds"] for v in group["models"]}
    assert verdicts == expect
    assert verdicts["k = 10"] is False  # a group of at most 9 rows breaks k = 10
    assert group["breaks"] == [r for r, h in verdicts.items() if not h]
    assert "breaks k = 10" in so  # the summary line says so
    # pycanon on the whole file sees the '*' group: k is its size
    assert pycanon.k_anonymity(written, ADULT_QIS) == n_star


def test_star_drop_and_arx_differ_as_documented(adult):
    """Budget of 9 rows at k = 10: 'star' cannot suppress 1–9 rows (that '*' class would break k),
    'arx' and 'drop' can — so ARX semantics never generalize more than star."""
    df, hs = adult
    qis = ["age", "sex", "race", "marital-status", "education"]

    def run(mode):
        return anonymize_table(
            df, Schema(qis, ["salary-class"]), hs, "flash", [KAnonymity(10)], 0.003, suppressed_rows=mode, n_queries=0
        )

    star, drop, arx = run("star"), run("drop"), run("arx")
    assert arx.report["chosen_node"]["ncp"] <= star.report["chosen_node"]["ncp"]
    assert star.metrics["suppressed_rows"] == 0 or star.metrics["suppressed_rows"] >= 10
    assert 0 < arx.metrics["suppressed_rows"] < 10
    assert arx.levels == drop.levels  # for k alone drop and arx check the same classes
    assert len(arx.df) == len(df) and len(drop.df) == len(df) - drop.metrics["suppressed_rows"]
    assert "suppressed_group" in arx.metrics and "suppressed_group" not in star.metrics


def test_arx_chosen_node_is_the_brute_force_optimum_under_arx_semantics(adult):
    """Every node checked with pandas: classes under k are suppressed, the rest must be k-anonymous
    (nothing asked of the suppressed rows), at most the budget suppressed; the smallest DM
    (Σ|E|² + suppressed·n) wins — the same node as flash and the exhaustive scan with 'arx'."""
    df, hs = adult
    qis = ["age", "sex", "race", "marital-status", "education"]
    k, frac = 10, 0.003
    budget = math.floor(frac * len(df) + 1e-9)
    maps = {}
    for q in qis:
        h = hs[q]
        maps[q] = [dict(zip(map(str, h.leaves), h.labels[lv][h.maps[lv]])) for lv in range(h.height + 1)]
    n = len(df)
    scores = {}
    for levels in itertools.product(*(range(hs[q].height + 1) for q in qis)):
        g = pd.DataFrame({q: df[q].astype(str).map(maps[q][lv]) for q, lv in zip(qis, levels)})
        sizes = g.groupby(qis).size().to_numpy()
        sup = int(sizes[sizes < k].sum())
        if sup <= budget:
            kept = sizes[sizes >= k].astype(np.float64)
            scores[levels] = float(np.dot(kept, kept)) + sup * n
    best = min(scores.values())
    winners = [lv for lv, s in scores.items() if s == best]
    res = anonymize_table(
        df, Schema(qis, []), hs, "flash", [KAnonymity(k)], frac, metric="dm", suppressed_rows="arx", n_queries=0
    )
    table = EncodedTable.encode(df, Schema(qis, []), hs)
    ex = exhaustive(Lattice(table, [KAnonymity(k)], frac, suppressed_rows="arx"), "dm")
    assert res.report["chosen_node"]["dm"] == best == ex.chosen.dm
    assert tuple(res.levels[q] for q in qis) in winners and tuple(ex.chosen.levels) in winners


def test_arx_with_t_closeness_checks_against_the_whole_table(adult):
    """ARX's t-closeness reference is the input's distribution, '*' rows included: the released
    classes are within t of it (as the report's achieved t, measured that way, says)."""
    df, hs = adult
    qis = ["age", "sex", "race", "education"]
    res = anonymize_table(
        df,
        Schema(qis, ["salary-class"]),
        hs,
        "flash",
        [KAnonymity(3), TCloseness(0.15, distance="variational")],
        0.01,
        suppressed_rows="arx",
        n_queries=0,
    )
    ach = res.metrics["achieved"]
    assert ach["reference_distribution"] == "whole table"
    assert ach["sensitive_attributes"]["salary-class"]["t"]["variational"] <= 0.15 + 1e-12
    rel = res.df.astype(str)
    star = _star_rows(rel, qis)
    whole = rel["salary-class"].value_counts(normalize=True)
    worst = 0.0
    for _, grp in rel[~star].groupby(qis):
        p = grp["salary-class"].value_counts(normalize=True).reindex(whole.index, fill_value=0.0)
        worst = max(worst, 0.5 * float((p - whole).abs().sum()))
    assert worst == pytest.approx(ach["sensitive_attributes"]["salary-class"]["t"]["variational"], abs=1e-12)


@pytest.mark.parametrize("metric", ["ncp", "loss"])
def test_grouped_table_gives_the_lattice_the_same_metrics(adult, metric):
    """A table of distinct tuples with counts (what the database engines hand the search) has the
    NCP and Loss of the rows it stands for, node by node, and the same chosen node."""
    df, hs = adult
    qis = ["age", "sex", "race", "education"]
    grouped = df.groupby(qis).size().reset_index(name="n")
    rows = EncodedTable.encode(df[qis], Schema(qis, []), hs)
    tuples = EncodedTable.encode(grouped[qis], Schema(qis, []), hs, weights=grouped["n"].to_numpy())
    w = attribute_weights(qis, {"age": 3.0})
    a = Lattice(rows, [KAnonymity(10)], 0.02, weights=w)
    b = Lattice(tuples, [KAnonymity(10)], 0.02, weights=w)
    for levels in [(3, 0, 1, 1), (4, 0, 0, 2), (1, 1, 1, 3)]:
        x, y = a.node_info(levels), b.node_info(levels)
        assert (x.ncp, x.loss) == pytest.approx((y.ncp, y.loss), abs=1e-12)
    assert flash(Lattice(rows, [KAnonymity(10)], 0.02, weights=w), metric).levels == flash(b, metric).levels
