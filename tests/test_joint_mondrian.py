"""Joint strict Mondrian of horizontally partitioned rows against the local Mondrian on the pooled
table (in-memory parties), and what the parties see.

Oracles: ppdm's local Mondrian (:func:`anonymize.publish.partition.mondrian.mondrian`, itself checked
against its own reference elsewhere) run on the pooled table for the release; pycanon for the k and
l of every joint release; the parties' own count vectors for what a party receives.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from joint_helpers import record_received

from anonymize.errors import AnonymizeError
from anonymize.publish import DistinctLDiversity, KAnonymity, Schema
from anonymize.publish.anonymizer import anonymize_table
from anonymize.publish.hierarchy import Hierarchy
from mpc.channel import run_parties
from mpc.errors import ProtocolError
from mpc.replicated import RSS3, Arith
from parties.analyst.publishing import split_rows
from parties.joint.publishing import JointPublishSpec, LocalRows, combine_release
from parties.joint.publishing_mondrian import _by_value, _children, _pairs, mondrian_release, publish_mondrian

LEAVES = [chr(97 + i) for i in range(12)]


def _hierarchies() -> dict[str, Hierarchy]:
    """A numeric QI (20 values in bands of 5) and a categorical one of fan-out 3, then 2, then the top:
    children of uneven sizes, so cuts leave remainders that pass and remainders that must merge."""
    cat = Hierarchy.from_rows("cat", [[x, f"g{i // 3}", f"h{i // 6}", "*"] for i, x in enumerate(LEAVES)])
    num = Hierarchy.from_rows("num", [[str(v), f"{v // 5 * 5}", "*"] for v in range(20)])
    sex = Hierarchy.from_rows("sex", [["F", "*"], ["M", "*"]])
    return {"cat": cat, "num": num, "sex": sex}


def _table(rng, n: int, skew: float = 0.3) -> pd.DataFrame:
    p = rng.dirichlet(np.full(len(LEAVES), skew))
    return pd.DataFrame(
        {
            "cat": rng.choice(LEAVES, n, p=p),
            "num": rng.integers(0, 20, n),
            "sex": rng.choice(["F", "M"], n),
            "s": rng.choice(list("wxyz"), n, p=[0.4, 0.3, 0.2, 0.1]),
        }
    )


def _local_rows(df, hs, qis, sens):
    codes = np.stack([hs[c].encode(df[c], column=c) for c in qis], axis=1).astype(np.int32)
    return LocalRows(codes, None if sens is None else df[sens].astype(str).tolist())


def _joint(df, spec, hs, parties=3):
    """Joint Mondrian over ``parties`` data parties (with two, a compute-only third holds no rows)."""
    qis = list(spec.qis)
    parts = split_rows(df, parties)
    if parties == 2:
        parts.append(df.iloc[:0])
    hl = [hs[c] for c in qis]

    async def f(ch, part):
        return await publish_mondrian(ch, hl, _local_rows(part, hs, qis, spec.sensitive), spec)

    out = run_parties(len(parts), f, parts, timeout=300)
    first = out["p0"]
    counts, _ = combine_release([v["share"] for v in out.values() if "share" in v])
    rel = mondrian_release(hl, qis, first["classes"], counts, spec.sensitive, first["sensitive_values"])
    return out, rel


def _pooled(df, spec, hs):
    models = [KAnonymity(spec.k)] + ([DistinctLDiversity(spec.l)] if spec.l else [])
    cols = list(spec.qis) + ([spec.sensitive] if spec.sensitive else [])
    return anonymize_table(
        df[cols],
        Schema(list(spec.qis), [spec.sensitive] if spec.sensitive else []),
        {c: hs[c] for c in spec.qis},
        algorithm="mondrian",
        models=models,
        weights=None if spec.weights is None else dict(zip(spec.qis, spec.weights)),
        n_queries=0,
    )


def _multiset(df, cols):
    return sorted(map(tuple, df[cols].astype(str).itertuples(index=False, name=None)))


def _check(df, spec, hs, parties=3):
    out, rel = _joint(df, spec, hs, parties)
    pooled = _pooled(df, spec, hs)
    cols = list(spec.qis) + ([spec.sensitive] if spec.sensitive else [])
    assert _multiset(rel, cols) == _multiset(pooled.df, cols)
    from pycanon import anonymity

    assert anonymity.k_anonymity(rel.astype(str), list(spec.qis)) >= spec.k
    if spec.l:
        assert anonymity.l_diversity(rel.astype(str), list(spec.qis), [spec.sensitive]) >= spec.l
    return out


@pytest.mark.parametrize(
    "qis, k, l, parties, weights",
    [
        (("num", "cat", "sex"), 4, None, 3, None),
        (("num", "cat", "sex"), 3, 2, 3, None),
        (("cat", "sex"), 2, 3, 4, None),  # a fourth party only contributes its counts
        (("num", "cat"), 5, 2, 2, None),  # two data parties and a compute-only third
        (("num", "cat", "sex"), 3, None, 3, (1.0, 4.0, 0.5)),  # weighted order of the QIs
    ],
)
def test_joint_mondrian_equals_the_local_mondrian_on_the_pooled_table(qis, k, l, parties, weights):
    hs = _hierarchies()
    df = _table(np.random.default_rng(k * 10 + parties), 180)
    spec = JointPublishSpec(qis=qis, sensitive="s", k=k, l=l, weights=weights)
    out = _check(df, spec, hs, parties)
    st_ = out["p0"]["stats"]
    assert st_["classes"] == len(out["p0"]["classes"]) > 1
    assert all(v["classes"] == out["p0"]["classes"] for v in out.values())  # every party holds the same boxes
    revealed = " ".join(out["p0"]["revealed"])
    assert "its box" in revealed and "no partition's size" in revealed


def test_categorical_remainders_that_pass_and_that_merge_give_the_local_partition():
    """Tables found to take both categorical paths: failing children pooled into a remainder that is
    a part of its own, and one that must merge into the smallest passing child."""
    hs = _hierarchies()
    seen = {"remainders": 0, "merges": 0}
    for seed in (2, 8, 9, 10):
        rng = np.random.default_rng(seed)
        df = _table(rng, int(rng.integers(40, 160)), skew=0.25)
        spec = JointPublishSpec(qis=("cat",) if seed % 2 else ("cat", "num"), sensitive="s", k=int(rng.integers(2, 6)))
        st_ = _check(df, spec, hs)["p0"]["stats"]
        seen["remainders"] += st_["categorical_remainders"]
        seen["merges"] += st_["categorical_merges"]
    assert seen["remainders"] >= 1 and seen["merges"] >= 1, seen


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(12, 140),
    k=st.integers(2, 6),
    l=st.sampled_from([None, 2, 3]),
    qis=st.sampled_from([("cat",), ("num",), ("cat", "num"), ("num", "sex", "cat")]),
    skew=st.sampled_from([0.2, 1.0]),
    parties=st.sampled_from([2, 3]),
)
def test_joint_equals_local_mondrian_on_random_tables(seed, n, k, l, qis, skew, parties):
    hs = _hierarchies()
    df = _table(np.random.default_rng(seed), n, skew)
    spec = JointPublishSpec(qis=qis, sensitive="s", k=k, l=l)
    try:
        _pooled(df, spec, hs)
    except AnonymizeError:  # the pooled table fails the models (k > n, fewer than l values): so does the joint run
        with pytest.raises(ProtocolError, match="whole table"):
            _joint(df, spec, hs, parties)
        return
    _check(df, spec, hs, parties)


def test_a_pooled_table_that_fails_the_models_stops_every_party():
    hs = _hierarchies()
    df = _table(np.random.default_rng(2), 30)
    with pytest.raises(ProtocolError, match="whole table"):
        _joint(df, JointPublishSpec(qis=("num", "cat"), sensitive="s", k=31), hs)
    with pytest.raises(ProtocolError, match="whole table does not satisfy distinct 5-diversity"):
        _joint(df, JointPublishSpec(qis=("num", "cat"), sensitive="s", k=2, l=5), hs)


def test_only_bits_and_n_are_opened(monkeypatch):
    """Every value the computing parties open: the pooled row count once, then only bits — no
    partition's size and no count (the release leaves as additive shares, never opened)."""
    hs = _hierarchies()
    df = _table(np.random.default_rng(5), 160)
    spec = JointPublishSpec(qis=("num", "cat", "sex"), sensitive="s", k=3, l=2)
    opened: list[str] = []
    orig = RSS3.open

    async def spy(self, x, to=None):
        if self.me == "p0":
            opened.append("arith" if isinstance(x, Arith) else "bits")
        return await orig(self, x, to)

    monkeypatch.setattr(RSS3, "open", spy)
    out, rel = _joint(df, spec, hs)
    assert opened.count("arith") == 1 and opened.count("bits") > 10  # n, then the bits of the search
    cols = ["num", "cat", "sex", "s"]
    assert _multiset(rel, cols) == _multiset(_pooled(df, spec, hs).df, cols)


def test_what_a_party_receives_holds_no_other_party_s_counts():
    """Every message a party receives, concatenated: no other party's count vector per (partition,
    leaf) of the first round — its own rows' histogram of each QI — appears in it in any integer
    width (they travel only as masked shares)."""
    hs = _hierarchies()
    df = _table(np.random.default_rng(8), 240)
    spec = JointPublishSpec(qis=("num", "cat"), sensitive="s", k=3, l=2)
    parts = split_rows(df, 3)
    hl = [hs[c] for c in spec.qis]
    received: dict[str, list[bytes]] = {"p0": [], "p1": [], "p2": []}

    async def f(ch, part):
        record_received(ch, received)
        return await publish_mondrian(ch, hl, _local_rows(part, hs, list(spec.qis), "s"), spec)

    run_parties(3, f, parts, timeout=120)
    for q, part in enumerate(parts):
        rows = _local_rows(part, hs, list(spec.qis), "s")
        vectors = [np.bincount(rows.qi_codes[:, j], minlength=h.n_leaves) for j, h in enumerate(hl)]
        assert all(np.count_nonzero(v) >= 3 for v in vectors)
        for name in ("p0", "p1", "p2"):
            if name == f"p{q}":
                continue
            blob = b"".join(received[name])
            for v in vectors:
                for dt in (np.uint16, np.uint32, np.uint64):
                    assert v.astype(dt).tobytes() not in blob, (name, q, dt)


def test_children_pairs_and_value_order_are_the_plain_loops():
    """The vectorized layouts against the per-partition loops they replace."""
    h = _hierarchies()["cat"]
    level = np.array([3, 2, 1, 2, 1])
    node = np.array([0, 1, 3, 0, 0])
    ch = _children(h, level, node)
    for i, (lam, nd) in enumerate(zip(level, node)):
        first, last = h.node_span(lam)
        leaves = np.arange(first[nd], last[nd] + 1)
        kids = h.maps[lam - 1][leaves] if lam > 1 else leaves
        starts = np.flatnonzero(np.r_[True, kids[1:] != kids[:-1]])
        sel = ch.gp == i
        assert ch.node[sel].tolist() == kids[starts].tolist()
        assert ch.leaf[sel].tolist() == leaves[starts].tolist()
        assert ch.length[sel].tolist() == np.diff(np.r_[starts, len(leaves)]).tolist()
        assert ch.gi[sel].tolist() == list(range(len(starts)))
    per_p = np.array([3, 0, 1, 2])
    p_off = np.array([0, 3, 3, 4])
    pa, pb = _pairs(per_p, p_off)
    ref = [(o + a, o + b) for c, o in zip(per_p, p_off) for a in range(c) for b in range(c) if a != b]
    assert list(zip(pa.tolist(), pb.tolist())) == ref
    V = 3
    ref_v = [(o + g) * V + s for c, o in zip(per_p, p_off) for s in range(V) for g in range(c)]
    assert _by_value(per_p, p_off, V).tolist() == ref_v


def test_a_round_split_into_chunks_of_partitions_gives_the_same_release(monkeypatch):
    """With the per-step bound so small that every round's partitions go in chunks of a few, each
    counted, boxed and cut on its own: the same release as the local Mondrian (l-diversity on, so
    the per-value counts are chunked too)."""
    import parties.joint.publishing_mondrian as pm

    hs = _hierarchies()
    per = sum(hs[c].n_leaves for c in ("num", "cat", "sex")) * 4 + hs["cat"].n_leaves ** 2 + hs["sex"].n_leaves ** 2
    monkeypatch.setattr(pm, "MAX_ROUND_ELEMENTS", 3 * per)
    calls = []
    orig = pm._boxes

    async def spy(eng, C, off, P, hs_, L):
        calls.append(P)
        return await orig(eng, C, off, P, hs_, L)

    monkeypatch.setattr(pm, "_boxes", spy)
    df = _table(np.random.default_rng(11), 200)
    out = _check(df, JointPublishSpec(qis=("num", "cat", "sex"), sensitive="s", k=3, l=2), hs)
    assert out["p0"]["stats"]["classes"] > 6 and max(calls) <= 3 and len(calls) > out["p0"]["stats"]["rounds"] * 3


def test_the_analyst_refuses_a_malformed_or_inconsistent_partition():
    """The analyst's assembly of joint Mondrian replies: a box outside the hierarchies, parties that
    disagree on the partition, or shares that do not add up are one-line errors, never a release."""
    from parties.analyst.publishing import JointPublishing, assemble

    hs = _hierarchies()
    df = _table(np.random.default_rng(4), 90)
    spec = JointPublishSpec(qis=("num", "cat"), sensitive="s", k=3)
    out, rel = _joint(df, spec, hs)
    params = JointPublishing(qi=("num", "cat"), hierarchies=hs, sensitive="s", k=3, algorithm="mondrian")
    good = assemble(params, out, 0.0)
    assert _multiset(good.release, ["num", "cat", "s"]) == _multiset(rel, ["num", "cat", "s"])
    import copy

    bad = copy.deepcopy(out)
    for v in bad.values():
        v["classes"][0]["hi"][0] = 99  # no such leaf
    with pytest.raises(ValueError, match="malformed partition"):
        assemble(params, bad, 0.0)
    bad = copy.deepcopy(out)
    bad["p1"]["classes"] = bad["p1"]["classes"][1:]
    with pytest.raises(ValueError, match="disagree on the partition"):
        assemble(params, bad, 0.0)
    bad = copy.deepcopy(out)
    bad["p2"]["share"]["kept"][0] = (bad["p2"]["share"]["kept"][0] + 1) % (1 << 32)
    with pytest.raises(ValueError, match="do not add up"):
        assemble(params, bad, 0.0)
