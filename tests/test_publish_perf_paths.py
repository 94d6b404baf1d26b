"""The fast paths of the publishing metrics and hierarchies give the old, row-by-row answers.

``metrics.query_error`` evaluates its queries per released cell group and per distinct original
row (64 queries per pass, one bit each); ``metrics.il_total`` counts distinct values per class
through a combined key; ``Hierarchy.intervals`` formats one label per band. Each is checked here
against the straightforward implementation it replaced (kept below as the reference), on tables
chosen to reach every branch: compressed / uncompressed original rows, dense / split sensitive
histograms, suppression, redraws of empty queries, more than one 64-query pass, flag-table /
hashing distinct counts, integer / real interval labels.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonymize.errors import AnonymizeError
from anonymize.publish import EncodedTable, Hierarchy, KAnonymity, Schema
from anonymize.publish import metrics as M
from anonymize.publish.anonymizer import anonymize_table, auto_queries
from anonymize.publish.classes import equivalence_classes
from anonymize.publish.hierarchy import SUPPRESSED, nice_step, number_label
from anonymize.publish.metrics import grouping as metrics_grouping
from anonymize.publish.metrics import query_accuracy as metrics_query_accuracy
from anonymize.publish.partition.mondrian import mondrian

ROOT = Path(__file__).resolve().parents[1]
HYP = settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ references (the replaced code)
def reference_query_error(
    table, lo, hi, suppressed=None, n_queries=500, dims=None, selectivity=0.05, seed=0, sensitive=True
):
    """Every query scans every row (the implementation before the fast path)."""
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    n, q = table.qi_codes.shape
    sup = M.suppressed_mask(n, suppressed)
    if sup.any():
        lo = lo.copy()
        hi = hi.copy()
        for j, h in enumerate(table.hierarchies):
            lo[sup, j] = 0
            hi[sup, j] = h.n_leaves - 1
    dims = min(3, q) if dims is None else max(1, min(int(dims), q))
    use_sens = bool(sensitive and table.sens_codes.shape[1] > 0)
    n_pred = dims + (1 if use_sens else 0)
    frac = float(selectivity) ** (1.0 / n_pred)
    rng = np.random.default_rng(seed)
    errs = []
    width = (hi - lo + 1).astype(np.float64)
    tries = 0
    while len(errs) < n_queries and tries < 20 * n_queries:
        tries += 1
        attrs = rng.choice(q, size=dims, replace=False)
        act_mask = np.ones(n, dtype=bool)
        est = np.ones(n)
        for j in attrs:
            h = table.hierarchies[j]
            L = h.n_leaves
            m = max(1, int(round(frac * L)))
            ind = np.zeros(L, dtype=bool)
            if h.numeric:
                s = int(rng.integers(0, L - m + 1))
                ind[s : s + m] = True
            else:
                ind[rng.choice(L, size=m, replace=False)] = True
            cum = np.r_[0, np.cumsum(ind)]
            act_mask &= ind[table.qi_codes[:, j]]
            est *= (cum[hi[:, j] + 1] - cum[lo[:, j]]) / width[:, j]
        if use_sens:
            V = len(table.sens_values[0])
            m = max(1, int(round(frac * V)))
            sv = np.zeros(V, dtype=bool)
            sv[rng.choice(V, size=m, replace=False)] = True
            s_ok = sv[table.sens_codes[:, 0]]
            act_mask &= s_ok
            est *= s_ok
        act = int(act_mask.sum())
        if act == 0:
            continue
        errs.append(abs(act - float(est.sum())) / act)
    if not errs:
        raise AnonymizeError("query_error: no query with a non-zero answer; raise the selectivity")
    e = np.asarray(errs)
    return {
        "mean_relative_error": float(e.mean()),
        "median_relative_error": float(np.median(e)),
        "n_queries": len(errs),
        "dims": dims,
        "sensitive": use_sens,
        "selectivity": selectivity,
        "seed": seed,
    }


def reference_il_total(table, class_id, n_classes, lo, hi, suppressed=None):
    """Distinct values per class through ``np.unique`` of (class, value) pairs."""
    cid = np.asarray(class_id, dtype=np.int64)
    sup = M.suppressed_mask(table.n, suppressed)
    keep = ~sup
    lo, hi = np.asarray(lo), np.asarray(hi)
    q = table.q
    total = 0.0
    sizes = np.bincount(cid[keep], minlength=n_classes)
    for j, h in enumerate(table.hierarchies):
        codes = table.qi_codes[:, j]
        if h.numeric:
            total += float(M.cell_loss(h, lo[keep, j], hi[keep, j], M.table_domain(table, j)).sum())
        else:
            n_dom = len(np.unique(codes))
            pairs = np.unique(cid[keep] * (h.n_leaves + 1) + codes[keep])
            distinct = np.bincount(pairs // (h.n_leaves + 1), minlength=n_classes)
            total += float((sizes * distinct).sum()) / n_dom
    total += float(sup.sum()) * q
    return {"total_il": total, "average_il": total / (table.n * q) if table.n and q else 0.0}


def reference_intervals(name, values, widths=(5, 10, 20)):
    """One label per leaf in a Python loop, then :meth:`Hierarchy.from_rows`."""
    vals = pd.to_numeric(pd.Series(np.asarray(values).ravel()), errors="coerce")
    leaves = np.unique(vals.to_numpy())
    integral = bool(np.all(leaves == np.round(leaves)))
    if integral:
        leaves = leaves.astype(np.int64)
    lo_v, hi_v = float(leaves.min()), float(leaves.max())
    if widths is None:
        w0 = nice_step((hi_v - lo_v) / 20.0)
        if integral:
            w0 = max(1.0, w0)
        widths = (w0, 2 * w0, 4 * w0)
    widths = [float(w) for w in widths]
    base = math.floor(lo_v / widths[-1]) * widths[-1]
    lv = leaves.astype(np.float64)
    band_cols = []
    for w in widths:
        start = base + np.floor((lv - base) / w) * w
        if integral:
            band_cols.append([f"{number_label(s)}-{number_label(s + w - 1)}" for s in start])
        else:
            band_cols.append([f"[{s:g}, {s + w:g})" for s in start])
    rows = [[number_label(v)] + [c[i] for c in band_cols] + [SUPPRESSED] for i, v in enumerate(leaves)]
    h = Hierarchy.from_rows(name, rows, numeric=True)
    h.leaves = leaves
    return h


def assert_same_result(got: dict, want: dict):
    assert got.keys() == want.keys()
    for k, v in want.items():
        if isinstance(v, float):
            assert math.isclose(got[k], v, rel_tol=1e-9, abs_tol=1e-12), (k, got[k], v)
        else:
            assert got[k] == v, (k, got[k], v)


def assert_same_hierarchy(a: Hierarchy, b: Hierarchy):
    assert (a.name, a.numeric, a.height) == (b.name, b.numeric, b.height)
    assert a.leaves.dtype == b.leaves.dtype and np.array_equal(a.leaves, b.leaves)
    assert np.array_equal(a.maps, b.maps)
    assert [list(x) for x in a.labels] == [list(x) for x in b.labels]
    assert all(isinstance(s, str) for lab in a.labels for s in lab)


# ------------------------------------------------------------------ tables
def mixed_table(n, seed=0, n_sens=5, wide=False):
    """Numeric (interval hierarchies) and categorical (masking / flat) QIs; ``wide`` adds a QI
    with ~n distinct values so nearly every original row is distinct."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "age": rng.integers(17, 91, n),
            "hours": rng.integers(1, 100, n),
            "zip": [str(10000 + 7 * int(i)) for i in rng.integers(0, 300, n)],
            "sex": rng.choice(["M", "F"], n),
            "race": rng.choice(list("abcde"), n, p=[0.6, 0.2, 0.1, 0.07, 0.03]),
            "s": rng.integers(0, n_sens, n),
        }
    )
    qis = ["age", "hours", "zip", "sex", "race"]
    if wide:
        df["income"] = rng.integers(0, 10 * n, n)
        qis.append("income")
    return EncodedTable.encode(df, Schema(qis, ["s"]), {})


def narrow_table(n, seed=0):
    """Few distinct original rows (the grouped, weighted path of the true answers)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "age": rng.integers(20, 30, n),
            "sex": rng.choice(["M", "F"], n),
            "race": rng.choice(list("abcde"), n),
            "s": rng.choice(["x", "y", "z", "w"], n),
        }
    )
    return EncodedTable.encode(
        df, Schema(["age", "sex", "race"], ["s"]), {"age": Hierarchy.intervals("age", df["age"], (2, 4, 8))}
    )


def releases(table, seed=0):
    """(name, lo, hi, suppressed) for a Mondrian partition and several full-domain nodes."""
    rng = np.random.default_rng(seed)
    r = mondrian(table, [KAnonymity(3)])
    out = [("mondrian", *M.class_boxes(table, r.class_id, r.n_classes), None)]
    for lv in ([0] * table.q, [min(1, h.height) for h in table.hierarchies], table.heights):
        lo, hi = M.boxes_from_levels(table, lv)
        out.append((f"levels {lv}", lo, hi, None))
        out.append((f"levels {lv} + suppression", lo, hi, rng.random(table.n) < 0.15))
    return out


# ------------------------------------------------------------------ query_error
@pytest.mark.parametrize(
    "make",
    [lambda: mixed_table(3000, 1), lambda: mixed_table(3000, 2, wide=True), lambda: narrow_table(5000, 3)],
    ids=["mixed", "wide", "narrow"],
)
def test_query_error_matches_row_scan(make):
    table = make()
    for _name, lo, hi, sup in releases(table):
        for kw in ({}, {"sensitive": False}, {"dims": 1, "seed": 4}, {"dims": 9, "selectivity": 0.3, "seed": 1}):
            want = reference_query_error(table, lo, hi, sup, n_queries=90, **kw)
            assert_same_result(M.query_error(table, lo, hi, sup, n_queries=90, **kw), want)


def test_query_error_several_passes_and_redraws():
    table = mixed_table(2000, 5)
    lo, hi = M.boxes_from_levels(table, [1] * table.q)
    # 200 queries: four 64-query passes (the last one partial)
    assert_same_result(
        M.query_error(table, lo, hi, n_queries=200, seed=7), reference_query_error(table, lo, hi, n_queries=200, seed=7)
    )
    # tiny selectivity: many queries have act = 0 and are redrawn, in the same order
    want = reference_query_error(table, lo, hi, n_queries=70, selectivity=1e-4, seed=2)
    got = M.query_error(table, lo, hi, n_queries=70, selectivity=1e-4, seed=2)
    assert_same_result(got, want)
    # nothing ever matches: the same error
    with pytest.raises(AnonymizeError, match="no query with a non-zero answer"):
        M.query_error(table, lo, hi, n_queries=3, selectivity=1e-12, dims=5)
    with pytest.raises(AnonymizeError, match="no query with a non-zero answer"):
        reference_query_error(table, lo, hi, n_queries=3, selectivity=1e-12, dims=5)


def test_query_error_many_sensitive_values():
    """Groups × sensitive values too many for a dense histogram: groups split by value instead."""
    table = mixed_table(5000, 6, n_sens=2500)
    assert len(table.sens_values[0]) * 4000 > metrics_grouping.DENSE_SPAN
    lo, hi = M.boxes_from_levels(table, [0] * table.q)
    for sup in (None, np.arange(table.n) % 7 == 0):
        assert_same_result(
            M.query_error(table, lo, hi, sup, n_queries=60, selectivity=0.3),
            reference_query_error(table, lo, hi, sup, n_queries=60, selectivity=0.3),
        )


@pytest.mark.parametrize(
    "make,grouped",
    [(lambda: narrow_table(70_000, 8), True), (lambda: mixed_table(70_000, 9, wide=True), False)],
    ids=["grouped", "all-distinct"],
)
def test_query_error_large_table_sampling_decision(make, grouped, monkeypatch):
    """Above 65,536 rows a sample decides whether grouping the original rows pays; both ways
    give the row scan's answers."""
    table = make()
    calls = []
    real = metrics_query_accuracy._bit_counts
    monkeypatch.setattr(
        metrics_query_accuracy,
        "_bit_counts",
        lambda mask, n_bits, weights: calls.append(weights is not None) or real(mask, n_bits, weights),
    )
    r = mondrian(table, [KAnonymity(5)])
    lo, hi = M.class_boxes(table, r.class_id, r.n_classes)
    sup = np.arange(table.n) % 11 == 0
    assert_same_result(
        M.query_error(table, lo, hi, sup, n_queries=100, seed=3),
        reference_query_error(table, lo, hi, sup, n_queries=100, seed=3),
    )
    assert calls and set(calls) == {grouped}  # weighted (grouped original rows) or not


@HYP
@given(
    n=st.integers(1, 60),
    seed=st.integers(0, 10_000),
    levels_seed=st.integers(0, 100),
    dims=st.integers(1, 4),
    sens=st.booleans(),
    sup_rate=st.sampled_from([0.0, 0.2, 1.0]),
)
def test_query_error_random_small_tables(n, seed, levels_seed, dims, sens, sup_rate):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "a": rng.integers(0, 12, n),
            "b": rng.choice(list("pqrstu"), n),
            "c": rng.integers(-5, 5, n),
            "s": rng.integers(0, 3, n),
        }
    )
    table = EncodedTable.encode(df, Schema(["a", "b", "c"], ["s"]), {"a": Hierarchy.intervals("a", df["a"], (2, 4))})
    lrng = np.random.default_rng(levels_seed)
    lv = [int(lrng.integers(0, h.height + 1)) for h in table.hierarchies]
    lo, hi = M.boxes_from_levels(table, lv)
    sup = rng.random(n) < sup_rate
    kw = dict(n_queries=25, dims=dims, seed=seed, sensitive=sens, selectivity=0.2)
    try:
        want = reference_query_error(table, lo, hi, sup, **kw)
    except AnonymizeError:
        with pytest.raises(AnonymizeError):
            M.query_error(table, lo, hi, sup, **kw)
        return
    assert_same_result(M.query_error(table, lo, hi, sup, **kw), want)


def test_query_error_rejects_cells_outside_the_hierarchy():
    table = mixed_table(50, 1)
    lo, hi = M.boxes_from_levels(table, [0] * table.q)
    hi = hi.copy()
    hi[0, 0] = table.hierarchies[0].n_leaves
    with pytest.raises(AnonymizeError, match="not leaf-code ranges"):
        M.query_error(table, lo, hi)


def test_default_query_count_is_200_at_every_size():
    assert {auto_queries(n) for n in (10, 100_000, 100_001, 1_000_000, 10_000_000)} == {200}
    rng = np.random.default_rng(0)
    n = 120_000
    df = pd.DataFrame(
        {"age": rng.integers(17, 91, n), "sex": rng.choice(["M", "F"], n), "s": rng.choice(["x", "y", "z"], n)}
    )
    res = anonymize_table(df, Schema(["age", "sex"], ["s"]), algorithm="flash", models=[KAnonymity(5)])
    assert res.metrics["query_error"]["n_queries"] == 200


# ------------------------------------------------------------------ il_total
def test_il_total_matches_pairs_unique():
    for table in (mixed_table(3000, 1), mixed_table(20_000, 2, wide=True), narrow_table(4000, 3)):
        rng = np.random.default_rng(0)
        r = mondrian(table, [KAnonymity(4)])
        lo, hi = M.class_boxes(table, r.class_id, r.n_classes)
        for sup in (None, rng.random(table.n) < 0.1, np.ones(table.n, dtype=bool)):
            want = reference_il_total(table, r.class_id, r.n_classes, lo, hi, sup)
            got = M.il_total(table, r.class_id, r.n_classes, lo, hi, sup)
            assert {k: got[k] for k in want} == want  # the plain IL (the normalized form is tested elsewhere)
        for lv in ([0] * table.q, table.heights, [min(1, h.height) for h in table.hierarchies]):
            lo, hi = M.boxes_from_levels(table, lv)
            cid, C = equivalence_classes(table.generalized_codes(lv))
            for sup in (None, rng.random(table.n) < 0.1):
                want = reference_il_total(table, cid, C, lo, hi, sup)
                got = M.il_total(table, cid, C, lo, hi, sup)
                assert {k: got[k] for k in want} == want


def test_distinct_per_class_both_ways():
    rng = np.random.default_rng(4)
    n = 30_000
    cid = rng.integers(0, 5000, n)
    for n_values in (7, 3000):  # 35,000 flags; 15 M (> 8n and the dense cap): hashing
        codes = rng.integers(0, n_values, n)
        want = np.bincount(np.unique(cid * n_values + codes) // n_values, minlength=5000)
        assert np.array_equal(metrics_grouping.distinct_per_class(cid, 5000, codes, n_values), want)


# ------------------------------------------------------------------ Hierarchy.intervals
@pytest.mark.parametrize(
    "values,widths",
    [
        ([17, 23, 38, 90, 45], (5, 10, 20)),
        (np.linspace(0, 1000, 50), None),
        (np.random.default_rng(1).integers(-500, 500, 2000), None),
        (np.random.default_rng(2).integers(0, 250_001, 50_000), None),
        (np.random.default_rng(3).normal(0, 1e6, 3000), None),
        (np.random.default_rng(4).random(1000) * 7, (0.5, 1.0, 2.0)),
        (np.random.default_rng(5).integers(0, 100, 500), (3, 9, 27)),
        ([5], None),
        ([0, 1], (7,)),
        ([1.5, 2.5, 1e7 + 0.5, 1e7 + 1.5], (1, 2)),
        (np.random.default_rng(6).integers(0, 2**40, 500), None),
        ([1.0, 2.0, 3.0], (1.5, 3)),
    ],
)
def test_intervals_same_as_per_leaf_labels(values, widths):
    assert_same_hierarchy(Hierarchy.intervals("x", values, widths=widths), reference_intervals("x", values, widths))


def test_intervals_label_collision_same_error():
    """``%g`` labels that collide make the same tree error as before."""
    vals = np.arange(1_000_000, 1_000_100, dtype=float) + 0.25
    with pytest.raises(AnonymizeError) as new:
        Hierarchy.intervals("x", vals, widths=(1, 2, 4))
    with pytest.raises(AnonymizeError) as old:
        reference_intervals("x", vals, (1, 2, 4))
    assert str(new.value) == str(old.value)


def test_numeric_groups_that_are_not_intervals_stay_categorical():
    h = Hierarchy.from_rows("n", [["1", "odd", "*"], ["2", "even", "*"], ["3", "odd", "*"], ["4", "even", "*"]])
    assert not h.numeric
    h = Hierarchy.from_rows("n", [["1", "lo", "*"], ["2", "lo", "*"], ["3", "hi", "*"], ["4", "hi", "*"]])
    assert h.numeric


# ------------------------------------------------------------------ package exports
def test_public_api_exports():
    import types

    import anonymize.publish as pub
    from anonymize.publish.anonymizer import AnonymizationResult, build_models

    assert len(pub.__all__) == len(set(pub.__all__))
    for name in pub.__all__:
        assert hasattr(pub, name), name
    for name in (
        "anonymize_table",
        "build_models",
        "AnonymizationResult",
        "KAnonymity",
        "DistinctLDiversity",
        "EntropyLDiversity",
        "RecursiveCLDiversity",
        "TCloseness",
        "Schema",
        "EncodedTable",
        "Hierarchy",
        "read_table",
        "write_table",
        "read_hierarchies",
        "measure_release",
        "Lattice",
    ):
        assert name in pub.__all__, name
    assert (pub.anonymize_table, pub.build_models, pub.AnonymizationResult) == (
        anonymize_table,
        build_models,
        AnonymizationResult,
    )
    # the algorithm modules stay modules (their functions are not re-exported under the same names)
    import anonymize.publish.partition.mondrian  # noqa: F401

    for pkg, mod in [(pub.fulldomain, m) for m in ("flash", "incognito", "samarati", "datafly")] + [
        (pub.partition, "mondrian")
    ]:
        assert isinstance(getattr(pkg, mod), types.ModuleType), mod


@pytest.mark.parametrize(
    "module",
    [
        "anonymize.publish",
        "anonymize.publish.anonymizer",
        "anonymize.publish.partition.mondrian",
        "anonymize.publish.fulldomain.flash",
        "anonymize.publish.metrics",
        "anonymize.publish.table",
        "anonymize.publish.io",
        "parties.cli.anonymize",
    ],
)
def test_no_import_cycle(module):
    """Each module imports first in a fresh interpreter, then the package's star import works."""
    code = f"import {module}\nfrom anonymize.publish import *\nprint(len(anonymize_table.__name__))"
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr


@settings(max_examples=25, deadline=None)
@given(heights=st.lists(st.integers(0, 3), min_size=1, max_size=5), data=st.data())
def test_vectorized_tagging_equals_the_closure_through_neighbours(heights, data):
    """LatticeGrid.tag (a box of the node array above / below) against tag_closure's walk through
    succ / pred, on taggings as Flash makes them: a monotone predicate (a weighted level sum over a
    threshold), PASS tagged upward from passing nodes, FAIL downward from failing ones."""
    from anonymize.publish.fulldomain.grid import LatticeGrid, tag_closure

    g = LatticeGrid(heights)
    w = [data.draw(st.integers(0, 3)) for _ in heights]
    t = data.draw(st.integers(0, 12))
    a, b = bytearray(g.N), bytearray(g.N)
    cut_a, cut_b = bytearray(g.N), bytearray(g.N)  # a second array tagged in turn, as Flash's cut is
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, g.N - 1))
        up = sum(x * y for x, y in zip(w, g.levels[i])) >= t
        tag_closure(a, i, 1 if up else 2, g.succ if up else g.pred)
        g.tag(b, i, 1 if up else 2, up)
        assert a == b
        if data.draw(st.booleans()):
            tag_closure(cut_a, i, 1, g.succ)
            g.tag(cut_b, i, 1, up=True)
            assert cut_a == cut_b and a == b


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(0, 300),
    cols=st.integers(0, 40),
    top=st.sampled_from([1, 5, 30_162, 2**40]),
    kind=st.sampled_from(["int", "float", "bool"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_row_counts_equal_numpys_row_sums_exactly(rows, cols, top, kind, seed):
    """distances.row_counts (a matrix-vector product) equals ``sum(axis=1)`` bit for bit on count
    matrices — integers, their float64 copies and 0/1 flags — of any shape, empty ones included."""
    from anonymize.publish.distances import row_counts

    a = np.random.default_rng(seed).integers(0, top, (rows, cols), endpoint=True)
    a = {"int": a, "float": a.astype(np.float64), "bool": a > top // 2}[kind]
    got = row_counts(a)
    assert got.dtype == np.float64 and got.shape == (rows,)
    assert np.array_equal(got, a.sum(axis=1).astype(np.float64))


@settings(max_examples=25, deadline=None)
@given(heights=st.lists(st.integers(0, 3), min_size=1, max_size=6), data=st.data())
def test_indices_of_many_nodes_equal_index_of_each(heights, data):
    """LatticeGrid.indices_of (one product with the strides) against index_of node by node, and the
    same KeyError for a level outside the lattice."""
    from anonymize.publish.fulldomain.grid import LatticeGrid

    g = LatticeGrid(heights)
    nodes = [g.levels[data.draw(st.integers(0, g.N - 1))] for _ in range(data.draw(st.integers(0, 6)))]
    assert g.indices_of(nodes) == [g.index_of(x) for x in nodes]
    bad = list(nodes[0] if nodes else g.levels[0])
    bad[data.draw(st.integers(0, len(heights) - 1))] = data.draw(st.sampled_from([-1, 4]))
    with pytest.raises(KeyError):
        g.index_of(bad)
    with pytest.raises(KeyError):
        g.indices_of([*nodes, bad])


@settings(max_examples=25, deadline=None)
@given(q=st.integers(1, 11), seed=st.integers(0, 2**32 - 1))
def test_smallest_cached_specialization_equals_a_scan_of_the_cache(q, seed):
    """FrequencySets.best_cached (eight level comparisons read as one word, QIs padded to whole
    words) against a plain scan of the cached nodes: the smallest frequency set whose levels are all
    at most the node's, else the bottom node — for 1 to 11 QIs (one and two words per node)."""
    from anonymize.publish.fulldomain import Lattice

    rng = np.random.default_rng(seed)
    rows = [[f"v{v}", f"g{v // 2}", "*"] for v in range(4)]
    qis = [f"a{j}" for j in range(q)]
    hs = {c: Hierarchy.from_rows(c, rows, numeric=False) for c in qis}
    # mostly v0, so that generalizing merges rows and the frequency sets' sizes differ
    df = pd.DataFrame({c: [f"v{x}" for x in rng.choice(4, 60, p=[0.85, 0.05, 0.05, 0.05])] for c in qis})
    lat = Lattice(EncodedTable.encode(df, Schema(qis, []), hs), [KAnonymity(1)])
    cached = []
    for _ in range(int(rng.integers(1, 12))):
        fs = lat.rollup(lat.base, tuple(int(x) for x in rng.integers(0, 3, q)))
        lat.remember(fs)
        cached.append(fs)
    for _ in range(10):
        probe = tuple(int(x) for x in rng.integers(0, 3, q))
        below = [f for f in cached if all(a <= b for a, b in zip(f.levels, probe))]
        got = lat.best_cached(probe)
        want = min([f.size for f in below if f.size < lat.base.size], default=lat.base.size)
        assert got.size == want
        assert all(a <= b for a, b in zip(got.levels, probe))


def _random_emd_cases(columns, seed, classes, empty):
    """Per Adult hierarchy of ``columns``: ``(hierarchy, leaves of a random subset of values, random
    (classes, values) histograms — the first class empty with ``empty`` —, a random distribution Q)``."""
    from anonymize.publish.io import read_hierarchies

    data = Path(__file__).resolve().parents[1] / "anonymize" / "data"
    rng = np.random.default_rng(seed)
    for h in read_hierarchies(data, columns=set(columns)).values():
        v = int(rng.integers(1, h.n_leaves + 1))
        leaf = np.sort(rng.choice(h.n_leaves, v, replace=False))
        hist = rng.integers(0, 6, (classes, v)).astype(float)
        if empty:
            hist[0] = 0
        q = rng.random(v) + 1e-3
        yield h, leaf, hist, q / q.sum()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), classes=st.integers(1, 40), empty=st.booleans())
def test_hierarchical_emd_by_one_product_equals_the_level_by_level_closed_form(seed, classes, empty):
    """The telescoped EMD (one matrix product over the value-to-node matrix) against the per-level
    pos/neg form of Li, Li, Venkatasubramanian 2007, on Adult's occupation and education hierarchies
    with random subsets of values, random class histograms and (optionally) an empty class."""
    from anonymize.publish.distances import emd_hierarchical, emd_hierarchical_levels

    for h, leaf, hist, Q in _random_emd_cases({"occupation", "education"}, seed, classes, empty):
        tot = hist.sum(axis=1, keepdims=True)
        P = hist / np.where(tot > 0, tot, 1)
        assert np.allclose(emd_hierarchical(P, Q, h, leaf), emd_hierarchical_levels(P, Q, h, leaf), atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), classes=st.integers(1, 40), empty=st.booleans(), t=st.floats(0.0, 1.0))
def test_hierarchical_emd_verdicts_without_normalizing_equal_the_per_level_distances(seed, classes, empty, t):
    """t-closeness's check compares each class's scaled sum with 2H·t·|E| (no class is normalized):
    its verdicts equal ``distance ≤ t`` by the per-level pos/neg form of Li, Li, Venkatasubramanian
    2007 for every class not within 1e-9 of the threshold, and an empty class passes — also with the
    reference folded into the matrix (``emd_hierarchical_judge``, the lattice searches' form), on
    counts as the packed lanes hold them (uint16, a strided view)."""
    from anonymize.publish.distances import emd_hierarchical_judge, emd_hierarchical_levels, emd_hierarchical_within

    for h, leaf, hist, Q in _random_emd_cases({"occupation", "education", "salary-class"}, seed, classes, empty):
        tot = hist.sum(axis=1, keepdims=True)
        dist = emd_hierarchical_levels(hist / np.where(tot > 0, tot, 1), Q, h, leaf)
        lanes = np.zeros((len(hist), hist.shape[1] + 3), dtype=np.uint16)
        lanes[:, 2 : 2 + hist.shape[1]] = hist
        judge = emd_hierarchical_judge(Q, h, leaf, t)
        clear = np.abs(dist - t) > 1e-9
        want = (dist <= t) | (tot[:, 0] == 0)
        for got in (
            emd_hierarchical_within(hist.astype(np.int64), Q, h, leaf, t),
            judge(lanes[:, 2 : 2 + hist.shape[1]]),
        ):
            assert np.array_equal(got[clear], want[clear])
            if empty:
                assert got[0]


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    q=st.integers(1, 4),
    n=st.integers(8, 60),
    k=st.integers(2, 4),
    sup=st.sampled_from([0.0, 0.1, 0.3]),
    metric=st.sampled_from(["dm", "ncp", "loss"]),
    weighted=st.booleans(),
    gs=st.sampled_from([0.5, 0.0, 0.2, 0.8, 1.0]),
)
def test_optimum_search_shortcuts_choose_what_completing_every_node_chooses(seed, q, n, k, sup, metric, weighted, gs):
    """The optimum search's shortcuts — every node's NCP / Loss bound at once (``bounds_all``), and
    under DM completing NCP only for nodes whose DM can still win — against the plain ways: each
    bound equals :meth:`NodeMetrics.bounds` exactly, and Flash's chosen node is the exhaustive scan's
    (every satisfying node completed, :func:`choose`), with the same key — also under ARX's
    gs-factor (the Loss bound then scales the generalization part by g)."""
    from anonymize.publish.fulldomain import Lattice, exhaustive
    from anonymize.publish.fulldomain.flash import flash
    from anonymize.publish.fulldomain.result import metric_key

    rng = np.random.default_rng(seed)
    cols = {f"a{j}": rng.integers(0, int(rng.integers(2, 9)), n) for j in range(q)}
    df = pd.DataFrame({c: [f"v{x}" for x in v] for c, v in cols.items()})
    hs = {}
    for c in df.columns:
        leaves = sorted(set(df[c]), key=lambda s: int(s[1:]))
        fan = int(rng.integers(2, 4))
        rows = [[v, f"g{i // fan}", "*"] for i, v in enumerate(leaves)]
        hs[c] = Hierarchy.from_rows(c, rows)
    weights = rng.integers(0, 4, q).astype(np.float64) if weighted else None
    table = EncodedTable.encode(df, Schema(list(df.columns), []), hs)

    def lattice():
        return Lattice(table, [KAnonymity(k)], sup, suppressed_rows="drop", weights=weights, gs_factor=gs)

    lat = lattice()
    g = lat.grid()
    ncp, loss = lat.node_metrics.bounds_all(g.lv)
    for i, lv in enumerate(g.levels):
        assert (float(ncp[i]), float(loss[i])) == lat.node_metrics.bounds(lv)
    try:
        ref = exhaustive(lattice(), metric=metric).chosen
    except AnonymizeError:
        return
    got = flash(lattice(), metric=metric).chosen
    assert got.levels == ref.levels
    assert metric_key(got, metric, len(df)) == metric_key(ref, metric, len(df))


def test_a_dm_search_reports_every_candidate_nodes_ncp_and_loss():
    """Under DM the optimum search leaves NCP and Loss pending where they cannot decide; the report still
    gives every candidate node's NCP and Loss (strict JSON, no NaN), equal to the exhaustive scan's."""
    import json

    from anonymize.publish.fulldomain import Lattice, exhaustive
    from anonymize.publish.fulldomain.flash import flash

    rng = np.random.default_rng(7)
    n = 400
    df = pd.DataFrame({f"a{j}": [f"v{x}" for x in rng.integers(0, 8, n)] for j in range(3)})
    hs = {c: Hierarchy.from_rows(c, [[f"v{i}", f"g{i // 2}", f"h{i // 4}", "*"] for i in range(8)]) for c in df.columns}
    res = anonymize_table(
        df, Schema(list(df.columns), []), hs, algorithm="flash", models=[KAnonymity(6)], max_suppression=0.05,
        metric="dm", n_queries=0,
    )  # fmt: skip
    json.dumps(res.report, allow_nan=False)
    table = EncodedTable.encode(df, Schema(list(df.columns), []), hs)
    ex = exhaustive(Lattice(table, [KAnonymity(6)], 0.05), metric="dm")
    want = {tuple(x.levels): (x.ncp, x.loss) for x in ex.nodes}
    got = {tuple(x["levels"]): (x["ncp"], x["loss"]) for x in res.report["candidate_nodes"]}
    # Flash's DM bound leaves out minimal nodes that cannot be optimal, and the report says so
    assert res.report["search"]["pruned_by_bound"] > 0 and "lower bound" in res.report["candidate_nodes_kind"]
    assert tuple(res.report["chosen_node"]["levels"]) in got and got.keys() <= want.keys()
    # without the bound the report lists every minimal node, each with the exhaustive scan's NCP / Loss
    lat = Lattice(table, [KAnonymity(6)], 0.05)
    unpruned = flash(lat, metric="dm", prune=False)
    assert len(unpruned.nodes) > 3 and {tuple(x.levels) for x in unpruned.nodes} == want.keys()
    got |= {tuple(x.levels): (x.ncp, x.loss) for x in map(lat.complete, unpruned.nodes)}
    for lv, (ncp, loss) in got.items():
        assert ncp == pytest.approx(want[lv][0], abs=1e-12) and loss == pytest.approx(want[lv][1], abs=1e-12)


@st.composite
def _dm_cases(draw):
    """A random table with 2–3 QIs (3-level hierarchies), k, maybe distinct 2-diversity or
    t-closeness, a suppression budget and a treatment of the suppressed rows."""
    n, q = draw(st.integers(30, 160)), draw(st.integers(2, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"a{j}": [f"v{x}" for x in rng.integers(0, 8, n)] for j in range(q)})
    df["s"] = [f"s{x}" for x in rng.integers(0, 3, n)]
    hs = {f"a{j}": Hierarchy.from_rows(f"a{j}", [[f"v{i}", f"g{i // 2}", f"h{i // 4}", "*"] for i in range(8)])
          for j in range(q)}  # fmt: skip
    from publish_strategies import draw_models

    models = draw_models(draw, st, 6, 0.35)
    sup = draw(st.sampled_from([0.02, 0.05, 0.1, 0.3]))
    mode = draw(st.sampled_from(["star", "drop", "arx"]))
    metric = draw(st.sampled_from(["dm", "ncp", "loss"]))
    gs = draw(st.sampled_from([None, 0.0, 0.3, 0.7])) if metric == "loss" else None  # ARX's gs-factor
    table = EncodedTable.encode(df, Schema([f"a{j}" for j in range(q)], ["s"]), hs)
    return table, models, sup, mode, metric, gs


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_dm_cases())
def test_flash_s_metric_bounds_keep_the_exhaustive_optimum(case):
    """Flash with pruning by a lower bound of the metric (the default under DM — ARX's — and under NCP
    and Loss, with or without ARX's gs-factor) chooses the node the exhaustive scan of every node chooses, the node Flash without the
    bound chooses; the minimal nodes it returns are minimal nodes of the exhaustive scan, and those it
    leaves out are worse than its choice under the metric."""
    from anonymize.publish.fulldomain import Lattice, exhaustive
    from anonymize.publish.fulldomain.flash import flash
    from anonymize.publish.fulldomain.result import metric_key

    table, models, sup, mode, metric, gs = case

    def lattice():
        if gs is None:
            return Lattice(table, models, sup, suppressed_rows=mode)
        return Lattice(table, models, sup, suppressed_rows=mode, gs_factor=gs)

    ex_lat = lattice()
    try:
        ex = exhaustive(ex_lat, metric=metric)
    except AnonymizeError:
        with pytest.raises(AnonymizeError):
            flash(lattice(), metric=metric)
        return
    pruned, plain = flash(lattice(), metric=metric), flash(lattice(), metric=metric, prune=False)
    want = metric_key(ex.chosen, metric, table.n)
    assert metric_key(pruned.chosen, metric, table.n) == want == metric_key(plain.chosen, metric, table.n)
    assert pruned.chosen.levels == ex.chosen.levels
    got = {tuple(x.levels) for x in pruned.nodes}
    assert got <= {tuple(x.levels) for x in ex.nodes}
    # a minimal node the bound skipped is strictly worse than the choice (a tie would be kept)
    left_out = [ex_lat.complete(x) for x in ex.nodes if tuple(x.levels) not in got]
    assert all(metric_key(x, metric, table.n)[0] > want[0] for x in left_out)
    if pruned.stats["pruned_by_bound"]:
        assert "lower bound" in pruned.nodes_kind


@pytest.mark.parametrize("metric", ["ncp", "loss"])
def test_flash_skips_the_checks_of_nodes_the_ncp_or_loss_bound_rules_out(metric):
    """Under NCP or Loss with a suppression budget, the nodes whose bound exceeds a satisfying node's
    value are tagged before they are reached: Flash checks fewer nodes than without the bound (4 QIs,
    k = 4, 5 %), and chooses the same node; the report says the bound skipped minimal nodes."""
    from anonymize.publish.fulldomain import Lattice
    from anonymize.publish.fulldomain.flash import flash

    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"a{j}": [f"v{x}" for x in rng.integers(0, 8, 600)] for j in range(4)})
    hs = {c: Hierarchy.from_rows(c, [[f"v{i}", f"g{i // 2}", f"h{i // 4}", "*"] for i in range(8)]) for c in df.columns}
    table = EncodedTable.encode(df, Schema(list(df.columns), []), hs)
    pruned = flash(Lattice(table, [KAnonymity(4)], 0.05), metric=metric)
    plain = flash(Lattice(table, [KAnonymity(4)], 0.05), metric=metric, prune=False)
    assert pruned.chosen.levels == plain.chosen.levels
    assert pruned.stats["checked"] < plain.stats["checked"] and pruned.stats["pruned_by_bound"] > 0
    assert {"ncp": "NCP", "loss": "Loss"}[metric] + " lower bound" in pruned.nodes_kind


def test_a_dm_tie_among_non_minimal_nodes_is_broken_by_ncp_as_the_exhaustive_scan_does():
    """A table (found by search over random seeds) where two satisfying non-minimal nodes have the same
    DM and the NCP tie-break decides: the optimum search must still complete NCP for a node whose DM
    only ties the best so far (``<=``, not ``<``) to choose the exhaustive scan's node."""
    from anonymize.publish.fulldomain import Lattice, exhaustive
    from anonymize.publish.fulldomain.flash import flash

    rng = np.random.default_rng(18)
    q, n = int(rng.integers(2, 4)), int(rng.integers(20, 80))
    df = pd.DataFrame({f"a{j}": [f"v{x}" for x in rng.integers(0, 6, n)] for j in range(q)})
    hs = {c: Hierarchy.from_rows(c, [[f"v{i}", f"g{i // 2}", f"h{i // 4}", "*"] for i in range(6)]) for c in df.columns}
    k, sup = int(rng.integers(2, 5)), float(rng.choice([0.1, 0.2, 0.3]))
    table = EncodedTable.encode(df, Schema(list(df.columns), []), hs)

    def lattice():
        return Lattice(table, [KAnonymity(k)], sup, suppressed_rows="drop")

    ex = exhaustive(lattice(), metric="dm")
    got = flash(lattice(), metric="dm").chosen
    assert got.levels == ex.chosen.levels and got.dm == ex.chosen.dm and got.ncp == pytest.approx(ex.chosen.ncp)
    lat = lattice()  # the tie this table holds: another satisfying node of the same DM, worse NCP
    others = [lat.complete(lat.evaluate(lv)[0]) for lv in ex.stats["satisfying"] if tuple(lv) != tuple(got.levels)]
    assert any(o.dm == got.dm and o.ncp > got.ncp for o in others)


# ------------------------------------------------------------------ encoding and the lattice's fixed costs
def _general_encode(h: Hierarchy, values: pd.Series) -> np.ndarray:
    """Hierarchy.encode's general path (factorize, strip, match against the labels), the reference
    of its integer-lookup and Arrow fast paths: the same values as a plain object column."""
    plain = pd.Series(values.to_numpy(dtype=object), dtype=object)
    assert plain.dtype == object  # pandas would infer a pyarrow string column from the bare array
    return h.encode(plain)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    leaves=st.lists(st.integers(-50, 200), min_size=1, max_size=30, unique=True),
    fractions=st.lists(st.sampled_from([0.5, 0.25]), max_size=3),
    data=st.data(),
)
def test_integer_columns_encode_by_lookup_as_by_search(leaves, fractions, data):
    """The integer lookup gives the codes the searchsorted path gives; a value that is not a leaf
    still takes the general path and fails naming it. Leaves with a fraction (40.5) are skipped by
    the lookup, as the search never matches an integer to them."""
    labels = sorted({float(x) for x in leaves} | {leaves[0] + f for f in fractions})
    h = Hierarchy.from_rows("a", [[number_label(v), "*"] for v in labels], numeric=True)
    ints = [int(x) for x in labels if x == int(x)]
    col = pd.Series(data.draw(st.lists(st.sampled_from(ints), min_size=1, max_size=60)), dtype="int64")
    got = h.encode(col)
    assert got.dtype == np.int32
    assert np.array_equal(got, _general_encode(h, col))
    assert np.array_equal(h.leaves[got].astype(np.float64), col.to_numpy(dtype=np.float64))
    missing = max(ints) + 1
    with pytest.raises(AnonymizeError, match=f"value {missing!r}|value '{missing}'"):
        h.encode(pd.concat([col, pd.Series([missing])], ignore_index=True))


def test_arrow_string_columns_encode_as_the_general_path_does():
    """pyarrow-backed strings go through Arrow's index_in; padded values (which the general path
    strips) and values missing from the hierarchy fall back to the general path, so every case
    gives its codes or its one-line error."""
    h = Hierarchy.flat("c", ["a", "b", "c d"])
    arrow = pd.Series(["c d", "a", "b", "a"], dtype="string[pyarrow]")
    assert h._encode_arrow(arrow) is not None  # the fast path is taken
    assert np.array_equal(h.encode(arrow), _general_encode(h, arrow))
    padded = pd.Series([" a", "b ", "c d"], dtype="string[pyarrow]")
    assert h._encode_arrow(padded) is None
    assert h.encode(padded).tolist() == [0, 1, 2]
    with pytest.raises(AnonymizeError, match="value 'z' not in hierarchy"):
        h.encode(pd.Series(["a", "z"], dtype="string[pyarrow]"))


def _qi_table(n: int, seed: int) -> tuple[pd.DataFrame, dict[str, Hierarchy]]:
    """Three pyarrow text QIs (one padded, so its lookup misses and the general path strips it), an
    integer and an object QI, over ``n`` rows."""
    rng = np.random.default_rng(seed)
    hs = {
        "a": Hierarchy.flat("a", ["x", "y", "z w"]),
        "b": Hierarchy.flat("b", [f"v{i}" for i in range(40)]),
        "p": Hierarchy.flat("p", ["s", "t"]),
        "age": Hierarchy.from_rows("age", [[number_label(v), "*"] for v in range(17, 91)], numeric=True),
        "o": Hierarchy.flat("o", ["m", "f"]),
    }
    df = pd.DataFrame(
        {
            "a": pd.Series(rng.choice(["x", "y", "z w"], n), dtype="string[pyarrow]"),
            "b": pd.Series(rng.choice([f"v{i}" for i in range(40)], n), dtype="string[pyarrow]"),
            "p": pd.Series(rng.choice([" s", "t "], n), dtype="string[pyarrow]"),
            "age": rng.integers(17, 91, n),
            "o": pd.Series(rng.choice(["m", "f"], n), dtype=object),
        }
    )
    return df, hs


def test_qi_columns_encoded_on_threads_equal_each_columns_own_encoding(monkeypatch):
    """From PARALLEL_ENCODE_ROWS rows the text QIs' Arrow lookups run on threads: every column's codes
    equal Hierarchy.encode's general path on it; values missing from two hierarchies name the first
    of them in QI order, as encoding one column after another does."""
    import anonymize.publish.table as T

    df, hs = _qi_table(T.PARALLEL_ENCODE_ROWS + 5, 1)
    qis = ["a", "b", "p", "age", "o"]
    got = EncodedTable.encode(df, Schema(qis), hs).qi_codes
    for j, c in enumerate(qis):
        assert np.array_equal(got[:, j], _general_encode(hs[c], df[c])), c
    monkeypatch.setattr(T, "PARALLEL_ENCODE_ROWS", 10**9)  # one column after another
    assert np.array_equal(EncodedTable.encode(df, Schema(qis), hs).qi_codes, got)
    monkeypatch.undo()
    bad = df.copy()
    bad.loc[7, "b"] = "nope"
    bad.loc[3, "a"] = "gone"
    with pytest.raises(AnonymizeError, match="column 'a': value 'gone' not in hierarchy"):
        EncodedTable.encode(bad, Schema(qis), hs)
    with pytest.raises(AnonymizeError, match="column 'b': value 'nope' not in hierarchy"):
        EncodedTable.encode(bad, Schema(["b", "a"]), hs)


def _encode_in_child(df, hs, out):
    from anonymize.publish import EncodedTable, Schema

    out.put(EncodedTable.encode(df, Schema(["a", "b"]), hs).qi_codes.sum())


def test_a_forked_child_encodes_on_threads_of_its_own():
    """After the parent has made its encoding threads, a child forked from it (as the exact rule hiding
    forks its solver) encodes a large table too: it makes threads of its own, it does not wait on the
    parent's, which it does not have."""
    import multiprocessing

    import anonymize.publish.table as T

    df, hs = _qi_table(T.PARALLEL_ENCODE_ROWS + 5, 2)
    want = EncodedTable.encode(df, Schema(["a", "b"]), hs).qi_codes.sum()
    assert T._POOL is not None  # the parent's threads exist
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_encode_in_child, args=(df, hs, out))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung encoding the table")
    assert child.exitcode == 0 and out.get(timeout=5) == want


_MISSING_DTYPES = [
    "object",
    "string[pyarrow]",
    "string[python]",
    "str",
    "float64",
    "Int64",
    "category",
    "int64",
    "bool",
]


@settings(max_examples=120, deadline=None, derandomize=True)
@given(
    dtype=st.sampled_from(_MISSING_DTYPES),
    values=st.lists(st.one_of(st.none(), st.integers(0, 3)), max_size=12),
    offset=st.integers(0, 2),
)
def test_has_missing_says_what_isna_says(dtype, values, offset):
    """``has_missing`` (the dtype, or Arrow's null count, instead of a pass of ``isna``) agrees with
    ``isna().any()`` for every dtype a table column comes in, with and without missing values,
    also on a slice of a column (an Arrow array with an offset)."""
    from anonymize.publish.hierarchy import has_missing

    if dtype in ("int64", "bool"):
        values = [0 if v is None else v for v in values]
    raw = [
        None
        if v is None
        else (bool(v) if dtype == "bool" else str(v) if "str" in dtype or dtype in ("object", "category") else v)
        for v in values
    ]
    try:
        col = pd.Series(raw, dtype=dtype)
    except (TypeError, ValueError):
        return
    col = col.iloc[offset:]
    assert has_missing(col) == bool(col.isna().any())


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    values=st.lists(
        st.sampled_from(["a", "a ", " b", "b", "10", "9", "x y", 3, 3.0, 2.5, "é"]), min_size=1, max_size=30
    ),
    dtype=st.sampled_from(["object", "string[pyarrow]"]),
)
def test_sensitive_text_codes_equal_factorizing_the_canonical_texts(values, dtype):
    """A sensitive text column's codes and values (one factorize, texts made per distinct value) are
    ``pd.factorize(canonical_strings(col), sort=True)``'s — values that read the same ('a ' and 'a')
    merge, numbers read as their canonical text."""
    from anonymize.publish.hierarchy import canonical_strings
    from anonymize.publish.table import _text_codes

    if dtype != "object":
        values = [str(v) for v in values]
    col = pd.Series(values, dtype=dtype)
    want_codes, want_values = pd.factorize(canonical_strings(col), sort=True)
    try:
        codes, got_values = _text_codes("s", col)
    except AnonymizeError as e:  # a mostly numeric column is refused, as before
        assert "looks numeric" in str(e)
        return
    assert np.array_equal(codes, want_codes) and list(got_values) == list(want_values)


def test_encoding_without_a_copy_leaves_the_input_as_it_is():
    """A table without identifier columns and with a plain index is encoded from a shallow copy (pandas
    copies on write): writing into the encoded table's frame does not change the caller's frame, and a
    missing value is still found and named."""
    df = pd.DataFrame({"a": pd.Series(["x", "y", "x"], dtype="string[pyarrow]"), "s": ["p", "q", "p"]})
    t = EncodedTable.encode(df, Schema(["a"], ["s"]), {"a": Hierarchy.flat("a", ["x", "y"])})
    t.df.loc[0, "a"] = "y"
    t.df.loc[1, "s"] = "changed"
    assert df["a"].tolist() == ["x", "y", "x"] and df["s"].tolist() == ["p", "q", "p"]
    holes = pd.DataFrame({"a": pd.Series(["x", None, "x"], dtype="string[pyarrow]"), "s": ["p", "q", "p"]})
    with pytest.raises(AnonymizeError, match="column 'a' has 1 missing value.*first at data row 2"):
        EncodedTable.encode(holes, Schema(["a"], ["s"]), {"a": Hierarchy.flat("a", ["x", "y"])})


@settings(max_examples=25, deadline=None)
@given(heights=st.lists(st.integers(0, 3), min_size=1, max_size=5))
def test_lazy_lattice_levels_and_index_of_are_row_major(heights):
    """LatticeGrid.levels (made on first use) equals the row-major enumeration of the lattice
    (lattice_nodes), and index_of inverts it; a vector outside the lattice is a KeyError; the order
    Flash visits the nodes in is (height, norm, index), and its rank list inverts that order."""
    from anonymize.publish.fulldomain.grid import LatticeGrid, lattice_nodes

    g = LatticeGrid(heights)
    ref = [tuple(int(x) for x in row) for row in lattice_nodes(heights)]
    assert len(g.levels) == len(ref) == g.N
    for i in (g.N - 1, 0, g.N // 2):
        assert g.levels[i] == ref[i] and all(type(x) is int for x in g.levels[i])
    assert list(g.levels) == ref and g.levels[-1:] == ref[-1:]
    assert [g.index_of(lv) for lv in ref] == list(range(g.N))
    with pytest.raises(KeyError):
        g.index_of(tuple(h + 1 for h in heights))
    # Flash's order of visits: height, then Σ l_j / h_j, then the index
    norm = [sum(v / max(h, 1) for v, h in zip(lv, heights)) for lv in ref]
    assert g.by_height_norm == sorted(range(g.N), key=lambda i: (sum(ref[i]), norm[i], i))
    # Flash's key: each node's place in that order (ranks compare as the (height, norm, index) keys)
    assert sorted(g.rank) == list(range(g.N)) and all(g.by_height_norm[r] == i for i, r in enumerate(g.rank))
    assert g.norm == pytest.approx(norm) and g.height == [sum(lv) for lv in ref]


def test_node_metric_tables_filled_on_demand_equal_the_rows_totals():
    """The per-level NCP column totals, now computed when first read, equal an independent
    recomputation from the rows: Σ over rows of the loss of the row's generalized value
    (metrics.ncp's per-attribute sum on the generalized table), per QI and level, weighted or not."""
    from anonymize.publish.fulldomain import Lattice
    from anonymize.publish.metrics.cells import node_loss_tables

    rng = np.random.default_rng(3)
    df = pd.DataFrame(
        {"age": rng.integers(20, 60, 300), "sex": rng.choice(["m", "f"], 300), "z": rng.choice(list("abcd"), 300)}
    )
    hs = {
        "age": Hierarchy.from_rows(
            "age", [[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*"] for a in range(20, 60)], numeric=True
        ),
        "z": Hierarchy.from_rows("z", [["a", "ab", "*"], ["b", "ab", "*"], ["c", "cd", "*"], ["d", "cd", "*"]]),
    }
    for weights in (None, rng.integers(1, 5, 300)):
        t = EncodedTable.encode(df, Schema(["age", "sex", "z"], []), hs, weights=weights)
        lat = Lattice(t, [KAnonymity(2)], 0.0)
        raw = node_loss_tables(t, "height")
        w = t.row_weights().astype(np.float64)
        per_node, totals = lat.loss_tables()
        for j, h in enumerate(t.hierarchies):
            for lv in (h.height, 0, 1 if h.height else 0):
                node = h.maps[lv][t.qi_codes[:, j]]
                assert totals[j][lv] == pytest.approx(float(np.dot(raw[j][lv][node], w)), rel=1e-12, abs=1e-12)
            assert len(totals[j]) == h.height + 1
            assert np.array_equal(np.asarray(totals[j]), np.array([totals[j][x] for x in range(h.height + 1)]))


def test_a_searched_lattice_is_freed_without_the_cycle_collector():
    """After a search (NCP filled, so the lazily filled metric tables exist) nothing keeps a lattice's
    frequency sets alive once the lattice and the result are dropped, with the cyclic garbage
    collector off: a reference cycle there kept each run's roll-up cache (hundreds of MB on Adult)
    until the next collection, and the benchmark's peak RSS doubled."""
    import gc
    import weakref

    from anonymize.publish.fulldomain import Lattice
    from anonymize.publish.fulldomain.flash import flash

    rng = np.random.default_rng(5)
    df = pd.DataFrame({"a": rng.integers(0, 40, 400), "b": rng.choice(list("pqrs"), 400)})
    hs = {"a": Hierarchy.from_rows("a", [[str(x), f"{x // 10}", "*"] for x in range(40)], numeric=True)}
    t = EncodedTable.encode(df, Schema(["a", "b"], []), hs)
    was = gc.isenabled()
    gc.disable()
    try:
        lat = Lattice(t, [KAnonymity(3)], 0.05)
        res = flash(lat, "ncp")
        assert res.chosen.ncp == res.chosen.ncp  # filled (not NaN): the tables were built
        ref = weakref.ref(lat.freq)
        del lat, res
        assert ref() is None
    finally:
        if was:
            gc.enable()
