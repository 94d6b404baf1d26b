"""Self-describing privacy models and the algorithm registry.

The properties a model states about itself are checked against its own predicate on random
classes (hypothesis): a model that says it is monotone under generalization / suppression must
never contradict it on merged classes, and no satisfying class is smaller than the minimal
class size it states.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymize.errors import AnonymizeError
from anonymize.publish import (
    ClassChecker,
    ClassStats,
    DistinctLDiversity,
    EncodedTable,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    Schema,
    TCloseness,
    anonymize_table,
    registry,
)

V = 4
Q = np.full(V, 1.0 / V)
MODELS = [
    KAnonymity(3),
    DistinctLDiversity(2),
    EntropyLDiversity(1.8),
    RecursiveCLDiversity(2.0, 2),
    TCloseness(0.3, "variational"),
    TCloseness(0.4, "kl"),
]


def stats_of(hists):
    h = np.asarray(hists, dtype=np.int64)
    return ClassStats(h.sum(axis=1), [h], [Q], None)


hist = st.lists(st.integers(0, 6), min_size=V, max_size=V).filter(lambda h: sum(h) > 0)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(MODELS), hist, hist)
def test_models_keep_their_stated_monotonicity(model, a, b):
    ok_a, ok_b = model.class_ok(stats_of([a]))[0], model.class_ok(stats_of([b]))[0]
    merged = model.class_ok(stats_of([np.add(a, b)]))[0]
    if model.monotone_generalization and ok_a and ok_b:
        assert merged
    if model.monotone_suppression and (ok_a or ok_b):
        assert merged  # a passing class merged with any class still passes


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(MODELS), hist)
def test_no_satisfying_class_is_below_the_stated_minimal_size(model, a):
    if model.class_ok(stats_of([a]))[0]:
        assert sum(a) >= model.minimal_class_size
    if model.size_only:
        assert model.class_ok(stats_of([a]))[0] == (sum(a) >= model.minimal_class_size)


def test_pruning_models_are_implied_and_monotone_under_suppression():
    for m in MODELS:
        for p in m.pruning_models():
            assert p.monotone_suppression
    # entropy l = 1.8 implies distinct 2; recursive (c, 2) implies distinct 2; t implies nothing
    assert [p.describe()["l"] for p in EntropyLDiversity(1.8).pruning_models()] == [2]
    assert [p.describe()["l"] for p in RecursiveCLDiversity(2.0, 2).pruning_models()] == [2]
    assert TCloseness(0.3).pruning_models() == []


def test_class_checker_agrees_with_the_models_on_a_labelling():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.integers(0, 5, 200), "s": rng.integers(0, 3, 200)})
    table = EncodedTable.encode(df, Schema(["a"], ["s"]))
    cid = rng.integers(0, 30, 200)
    for models in ([KAnonymity(6)], [KAnonymity(2), DistinctLDiversity(3)]):
        ok = ClassChecker(table, models).ok_labels(cid, 30)
        for c in range(30):
            rows = cid == c
            want = rows.sum() >= 6 if len(models) == 1 else rows.sum() >= 2 and len(set(df.s[rows])) >= 3
            assert ok[c] == bool(want), c


def test_registry_lists_every_builtin_algorithm_with_its_kind():
    kinds = {a.name: a.kind for a in registry.algorithms()}
    assert kinds == {
        "flash": registry.FULL_DOMAIN,
        "incognito": registry.FULL_DOMAIN,
        "samarati": registry.FULL_DOMAIN,
        "datafly": registry.FULL_DOMAIN,
        "mondrian": registry.PARTITION,
        "gaa-cp": registry.CLUSTERING,
        "kaca": registry.CLUSTERING,
        "mdav": registry.CLUSTERING,
        "lca-fc": registry.CLUSTERING,
        "lca-rc": registry.CLUSTERING,
        "anatomy": registry.BUCKETIZATION,
        "msal": registry.BUCKETIZATION,
        "condensation": registry.SYNTHETIC,
    }
    with pytest.raises(AnonymizeError, match="unknown algorithm 'nope'.*flash"):
        registry.get("nope")


def test_a_model_an_algorithm_cannot_honour_is_one_clear_error():
    df = pd.DataFrame({"a": [1, 2, 3, 4] * 5, "s": ["x", "y"] * 10})

    @registry.register("test-k-only", kind=registry.PARTITION, summary="one class", accepts=["k-anonymity"])
    def one_class(table, models, progress=None):
        return registry.PartitionResult(np.zeros(table.n, dtype=np.int64), 1)

    try:
        out = anonymize_table(df, Schema(["a"], ["s"]), algorithm="test-k-only", models=[KAnonymity(2)], n_queries=0)
        assert out.report["metrics"]["achieved"]["k"] == 20  # released through the shared partition code
        with pytest.raises(AnonymizeError, match="'test-k-only' cannot honour t-closeness"):
            anonymize_table(df, Schema(["a"], ["s"]), algorithm="test-k-only", models=[KAnonymity(2), TCloseness(0.2)])
    finally:
        registry.unregister("test-k-only")
