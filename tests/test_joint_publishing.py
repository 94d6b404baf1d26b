"""Joint publishing of horizontally partitioned rows against the pooled search (in-memory parties).

Oracles: ppdm's pooled Flash on the pooled table (itself checked against an exhaustive scan
elsewhere) for the per-node bits, the chosen node's DM and the release; pycanon for the k and l of
every joint release; the plain cell counts for :mod:`anonymize.publish.fulldomain.cells`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from joint_helpers import record_received

from anonymize.publish import DistinctLDiversity, EncodedTable, KAnonymity, Schema
from anonymize.publish.anonymizer import anonymize_table
from anonymize.publish.fulldomain import Lattice
from anonymize.publish.fulldomain.cells import (
    CellCounter,
    cell_counts,
    cell_index,
    cell_labels,
    release_from_counts,
)
from anonymize.publish.hierarchy import Hierarchy
from mpc.channel import run_parties, unpack_arrays
from mpc.errors import ProtocolError
from parties.analyst.publishing import split_rows
from parties.joint.publishing import JointPublishSpec, LocalRows, combine_release, publish_horizontal

SLOW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _hierarchies():
    age = Hierarchy.from_rows(
        "age", [[str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "<40" if a < 40 else ">=40", "*"] for a in range(20, 60)]
    )
    zipc = Hierarchy.from_rows(
        "zip",
        [
            [z, z[:3] + "**", z[:1] + "****", "*"]
            for z in ("13053", "13068", "14850", "14853", "14855", "47677", "47602")
        ],
    )
    sex = Hierarchy.from_rows("sex", [["F", "*"], ["M", "*"]])
    return {"age": age, "zip": zipc, "sex": sex}


def _table(rng, n):
    zips = ["13053", "13068", "14850", "14853", "14855", "47677", "47602"]
    return pd.DataFrame(
        {
            "age": rng.integers(20, 60, n),
            "zip": rng.choice(zips, n),
            "sex": rng.choice(["F", "M"], n),
            "disease": rng.choice(["flu", "cancer", "hiv", "none"], n, p=[0.4, 0.2, 0.1, 0.3]),
        }
    )


def _local_rows(df, hs, qis, sens):
    codes = np.stack([hs[c].encode(df[c], column=c) for c in qis], axis=1).astype(np.int32)
    return LocalRows(codes, None if sens is None else df[sens].astype(str).tolist())


def _joint(df, spec, hs, parties=3):
    qis = list(spec.qis)
    parts = split_rows(df, parties)
    hl = [hs[c] for c in qis]

    async def f(ch, part):
        return await publish_horizontal(ch, hl, _local_rows(part, hs, qis, spec.sensitive), spec)

    out = run_parties(parties, f, parts, timeout=120)
    first = out["p0"]
    kept, sup = combine_release([v["share"] for v in out.values() if "share" in v])
    rel = release_from_counts(
        hl,
        first["levels"],
        kept,
        sup,
        sensitive=spec.sensitive,
        sens_values=first["sensitive_values"],
        suppressed_rows=spec.suppressed_rows,
    )
    return out, rel


def _pooled(df, spec, hs):
    models = [KAnonymity(spec.k)] + ([DistinctLDiversity(spec.l)] if spec.l else [])
    ncp = spec.metric == "ncp"
    schema = Schema(list(spec.qis), [spec.sensitive] if spec.sensitive else [])
    return anonymize_table(
        df[list(spec.qis) + ([spec.sensitive] if spec.sensitive else [])],
        schema,
        {c: hs[c] for c in spec.qis},
        algorithm="flash",
        models=models,
        max_suppression=spec.max_suppression,
        metric=spec.metric,
        suppressed_rows=spec.suppressed_rows,
        ncp_categorical=spec.ncp_categorical if ncp else "height",
        weights=None if spec.weights is None else dict(zip(spec.qis, spec.weights)),
        n_queries=0,
    )


def _multiset(df, cols):
    return sorted(map(tuple, df[cols].astype(str).itertuples(index=False, name=None)))


def test_cells_count_what_the_rows_say():
    hs = _hierarchies()
    rng = np.random.default_rng(1)
    df = _table(rng, 200)
    qis = ["age", "zip", "sex"]
    hl = [hs[c] for c in qis]
    codes = np.stack([hs[c].encode(df[c], column=c) for c in qis], axis=1)
    for levels in [(0, 0, 0), (1, 2, 0), (3, 3, 1)]:
        cells = cell_index(hl, codes, levels)
        labels = cell_labels(hl, levels, cells)
        # the labels of a row's cell are its generalized values (what release_levels prints)
        for j, c in enumerate(qis):
            expect = hs[c].labels[levels[j]][hs[c].maps[levels[j]][codes[:, j]]]
            assert np.array_equal(labels[j].astype(str), expect.astype(str))
        counts = cell_counts(hl, codes, levels)
        gen = pd.DataFrame({c: labels[j] for j, c in enumerate(qis)})
        assert sorted(counts[counts > 0].tolist()) == sorted(gen.value_counts().tolist())
        assert counts.sum() == len(df)


@SLOW
@given(n=st.integers(0, 80), chunk=st.sampled_from([5, 64, 1 << 20]), seed=st.integers(0, 2**16))
def test_the_batch_counter_equals_the_plain_count(n, chunk, seed):
    """CellCounter (distinct rows, all nodes of a chunk at once) against cell_counts node by node."""
    hs = _hierarchies()
    rng = np.random.default_rng(seed)
    df = _table(rng, n)
    qis = ["age", "zip", "sex"]
    hl = [hs[c] for c in qis]
    codes = np.stack([hs[c].encode(df[c], column=c) for c in qis], axis=1) if n else np.zeros((0, 3), np.int32)
    sens = rng.integers(0, 4, n)
    nodes = [tuple(int(x) for x in rng.integers(0, [h.height + 1 for h in hl])) for _ in range(6)]
    cc = CellCounter(hl, codes, sens, 4, chunk=chunk)
    plain = np.concatenate([cell_counts(hl, codes, lv) for lv in nodes])
    assert np.array_equal(cc.counts(nodes), plain.astype(np.uint64))
    per_value = np.concatenate([cell_counts(hl, codes, lv, sens, 4) for lv in nodes])
    assert np.array_equal(cc.counts(nodes, hist=True), per_value.astype(np.uint64))
    assert np.array_equal(cc.presence(nodes), (per_value > 0).astype(np.uint8))
    assert cc.sizes(nodes) == [len(cell_counts(hl, codes, lv)) for lv in nodes]


@pytest.mark.parametrize(
    "k,l,sup,rows",
    [(3, None, 0.0, "star"), (4, None, 0.05, "star"), (3, 2, 0.1, "star"), (5, None, 0.1, "arx"), (3, 2, 0.05, "drop")],
)
def test_joint_release_equals_the_pooled_one(k, l, sup, rows):
    hs = _hierarchies()
    df = _table(np.random.default_rng(k * 10 + (l or 0)), 240)
    spec = JointPublishSpec(("age", "zip", "sex"), "disease", k, l, sup, rows)
    out, rel = _joint(df, spec, hs)
    pooled = _pooled(df, spec, hs)
    cols = ["age", "zip", "sex", "disease"]
    joint_dm = None
    assert out["p0"]["n"] == len(df)
    levels = tuple(out["p0"]["levels"])
    pooled_levels = tuple(pooled.levels[c] for c in spec.qis)
    # same optimum value; the same node unless two nodes tie on DM (then both are deterministic)
    joint_dm = _dm(rel, len(df))
    assert joint_dm == pytest.approx(pooled.search.chosen.dm)
    if levels == pooled_levels:
        assert _multiset(rel, cols) == _multiset(pooled.df, cols)
    _check_pycanon(rel, spec)


@pytest.mark.parametrize(
    "k,l,sup,rows,flavour",
    [(3, None, 0.05, "star", "height"), (4, 2, 0.1, "arx", "leaves"), (5, None, 0.1, "drop", "span"),
     (2, None, 0.0, "star", "height")],
)  # fmt: skip
def test_joint_ncp_release_equals_the_pooled_ncp_search(k, l, sup, rows, flavour):
    """--metric ncp: the pooled search's NCP (the node-metric tables over public hierarchies), summed in
    fixed point on the shares; the same node as the pooled Flash and the same NCP, and the same rows."""
    hs = _hierarchies()
    df = _table(np.random.default_rng(100 + k), 300)
    spec = JointPublishSpec(("age", "zip", "sex"), "disease", k, l, sup, rows, "ncp", ncp_categorical=flavour)
    out, rel = _joint(df, spec, hs)
    pooled = _pooled(df, spec, hs)
    levels = tuple(out["p0"]["levels"])
    assert levels == tuple(pooled.levels[c] for c in spec.qis)
    cols = ["age", "zip", "sex", "disease"]
    assert _multiset(rel, cols) == _multiset(pooled.df, cols)
    _check_pycanon(rel, spec)


@pytest.mark.parametrize("weights", [(3.0, 0.5, 1.0), (0.0, 0.0, 2.0), (0.0, 0.0, 0.0)])
def test_joint_weighted_ncp_equals_the_pooled_weighted_search(weights):
    """--weights: the weighted NCP (a weighted mean of the per-attribute NCPs) is linear too; the joint
    node and rows are the pooled weighted search's, and all-zero weights are the plain mean."""
    hs = _hierarchies()
    df = _table(np.random.default_rng(7), 300)
    spec = JointPublishSpec(("age", "zip", "sex"), "disease", 3, None, 0.05, "star", "ncp", weights=weights)
    out, rel = _joint(df, spec, hs)
    pooled = _pooled(df, spec, hs)
    assert tuple(out["p0"]["levels"]) == tuple(pooled.levels[c] for c in spec.qis)
    cols = ["age", "zip", "sex", "disease"]
    assert _multiset(rel, cols) == _multiset(pooled.df, cols)


def test_joint_ncp_on_the_adult_subset_equals_the_pooled_search():
    from anonymize.publish.io import read_hierarchies, read_table

    data = __import__("pathlib").Path(__file__).resolve().parents[1] / "anonymize" / "data"
    qis = ["age", "sex", "race", "marital-status", "education"]
    hs = read_hierarchies(data, columns=set(qis))
    df = read_table(data / "adult_subset.csv")[qis + ["salary-class"]]
    spec = JointPublishSpec(tuple(qis), "salary-class", 5, None, 0.05, "star", "ncp")
    out, rel = _joint(df, spec, hs)
    pooled = _pooled(df, spec, hs)
    assert tuple(out["p0"]["levels"]) == tuple(pooled.levels[c] for c in qis)
    assert _multiset(rel, qis + ["salary-class"]) == _multiset(pooled.df, qis + ["salary-class"])


def _dm(rel, n):
    qi = rel[["age", "zip", "sex"]].astype(str)
    star = (qi == "*").all(axis=1)
    sizes = qi[~star].value_counts()
    return float((sizes.astype(float) ** 2).sum() + star.sum() * n)


def _check_pycanon(rel, spec):
    from pycanon import anonymity

    qis = list(spec.qis)
    kept = rel[~(rel[qis].astype(str) == "*").all(axis=1)]
    if spec.suppressed_rows == "star":
        kept = rel  # the '*' group is one more class the file shows, and must pass too
    if len(kept) == 0:
        return
    assert anonymity.k_anonymity(kept.astype(str), qis) >= spec.k
    if spec.l:
        assert anonymity.l_diversity(kept.astype(str), qis, [spec.sensitive]) >= spec.l


def test_the_revealed_bits_are_the_pooled_lattice_s():
    """Every node bit the parties open equals what the pooled lattice says of that node."""
    hs = _hierarchies()
    df = _table(np.random.default_rng(7), 300)
    spec = JointPublishSpec(("age", "zip", "sex"), "disease", 4, 2, 0.05, "star")
    qis = list(spec.qis)
    hl = [hs[c] for c in qis]
    parts = split_rows(df, 3)
    seen = {}

    async def f(ch, part):
        return await publish_horizontal(ch, hl, _local_rows(part, hs, qis, "disease"), spec)

    out = run_parties(3, f, parts, timeout=120)
    table = EncodedTable.encode(df, Schema(qis, ["disease"]), hs)
    lat = Lattice(table, [KAnonymity(4), DistinctLDiversity(2)], 0.05, suppressed_rows="star")
    g = lat.grid()
    for lv in g.levels:
        info, _ = lat.evaluate(lv, source=lat.source_for(lv))
        seen[lv] = (info.ok_monotone, info.ok)
    stats = out["p0"]["stats"]
    assert stats["satisfying_nodes"] == sum(1 for v in seen.values() if v[1])
    assert stats["within_budget"] == sum(1 for v in seen.values() if v[0])


@SLOW
@given(
    n=st.integers(30, 120),
    k=st.integers(2, 6),
    l=st.sampled_from([None, 2]),
    sup=st.sampled_from([0.0, 0.04, 0.1]),
    parties=st.sampled_from([3, 4]),
    seed=st.integers(0, 2**16),
    metric=st.sampled_from(["dm", "ncp"]),
)
def test_joint_equals_pooled_on_random_tables(n, k, l, sup, parties, seed, metric):
    hs = _hierarchies()
    df = _table(np.random.default_rng(seed), n)
    spec = JointPublishSpec(("age", "zip", "sex"), "disease", k, l, sup, "star", metric)
    try:
        pooled = _pooled(df, spec, hs)
    except Exception as e:  # no satisfying node: the joint run must say so too
        with pytest.raises(ProtocolError, match="no full-domain generalization"):
            _joint(df, spec, hs, parties)
        assert "no full-domain generalization" in str(e)
        return
    out, rel = _joint(df, spec, hs, parties)
    if metric == "dm":
        assert _dm(rel, n) == pytest.approx(pooled.search.chosen.dm)
    else:  # NCP of the joint node, by the pooled lattice, equals the pooled optimum's
        table = EncodedTable.encode(df, Schema(list(spec.qis), ["disease"]), hs)
        models = [KAnonymity(k)] + ([DistinctLDiversity(l)] if l else [])
        lat = Lattice(table, models, sup, suppressed_rows="star")
        joint_ncp = lat.node_info(tuple(out["p0"]["levels"])).ncp
        assert joint_ncp == pytest.approx(pooled.search.chosen.ncp, abs=1e-9)
    if tuple(out["p0"]["levels"]) == tuple(pooled.levels[c] for c in spec.qis):
        assert _multiset(rel, ["age", "zip", "sex", "disease"]) == _multiset(
            pooled.df, ["age", "zip", "sex", "disease"]
        )


@pytest.mark.parametrize(
    "k,l,sup,rows,parties",
    [
        (4, None, 0.05, "star", 3),
        (3, None, 0.1, "arx", 4),
        (2, None, 0.0, "star", 3),
        (3, 2, 0.05, "star", 3),
        (40, None, 0.1, "star", 4),
    ],
)
def test_every_satisfying_node_s_dm_is_the_pooled_lattice_s(monkeypatch, k, l, sup, rows, parties):
    """The DM of every satisfying node (opened here by a spy on the arg-min, which the job never
    opens) equals the pooled lattice's: k-anonymity alone takes the 16-bit path (suppressed rows per
    cell mod 2^16, per-node sums lifted), l-diversity the 32-bit one."""
    from mpc.replicated import RSS3
    from parties.joint.publishing import _Circuit

    hs = _hierarchies()
    df = _table(np.random.default_rng(11 * k), 260)
    spec = JointPublishSpec(("age", "zip", "sex"), "disease", k, l, sup, rows)
    qis = list(spec.qis)
    hl = [hs[c] for c in qis]
    opened: dict[str, np.ndarray] = {}
    lean: dict[str, bool] = {}
    rings: dict[str, int] = {}
    orig_argmin, orig_init = RSS3.argmin, _Circuit.__init__

    async def spy(self, keys, bits):
        if keys is not None:  # the computing parties
            opened[self.ch.me] = await self.open(keys[0])
        return await orig_argmin(self, keys, bits)

    def init(self, rss, *a, **kw):
        orig_init(self, rss, *a, **kw)
        lean[rss.ch.me] = self.lean
        rings[rss.ch.me] = self.Rk

    monkeypatch.setattr(RSS3, "argmin", spy)
    monkeypatch.setattr(_Circuit, "__init__", init)

    async def f(ch, part):
        return await publish_horizontal(ch, hl, _local_rows(part, hs, qis, "disease"), spec)

    run_parties(parties, f, split_rows(df, parties), timeout=120)
    assert lean == {f"p{i}": l is None for i in range(parties)}
    assert rings == {f"p{i}": 8 if k < 16 else 16 for i in range(parties)}  # the capped counts' ring
    table = EncodedTable.encode(df, Schema(qis, ["disease"]), hs)
    models = [KAnonymity(k)] + ([DistinctLDiversity(l)] if l else [])
    lat = Lattice(table, models, sup, suppressed_rows=rows)
    sat = sorted((lv for lv in lat.grid().levels if lat.evaluate(lv, source=lat.source_for(lv))[0].ok),
                 key=lambda lv: (sum(lv), tuple(lv)))  # fmt: skip
    codes = {c: hs[c].encode(df[c], column=c) for c in qis}
    sens = df["disease"].to_numpy()

    def dm(lv):  # by hand: classes of the generalized rows, failing ones suppressed
        key = pd.DataFrame({c: (hs[c].maps[x][codes[c]] if x else codes[c]) for c, x in zip(qis, lv)})
        g = key.assign(s=sens).groupby(qis)
        size, distinct = g.size(), g["s"].nunique()
        fail = (size < k) | ((distinct < l) if l else False)
        return int((size[~fail] ** 2).sum() + size[fail].sum() * len(df))

    want = [dm(lv) for lv in sat]
    assert len(want) > 3
    for name in ("p0", "p1", "p2"):
        assert opened[name].astype(np.int64).tolist() == want


def test_what_a_party_receives_holds_no_other_party_s_counts():
    """Every message a party receives, concatenated: no other party's local count vector of any
    evaluated node appears in it, in any integer width, nor its presence bits per (cell, value) as a
    run of bits at any offset, cell-major or one value's run over a node's cells (they travel only as
    masked shares; a clear send of them fails this)."""
    hs = _hierarchies()
    df = _table(np.random.default_rng(3), 150)
    spec = JointPublishSpec(("age", "zip", "sex"), "disease", 3, 2, 0.05, "star")
    qis = list(spec.qis)
    hl = [hs[c] for c in qis]
    parts = split_rows(df, 3)
    received: dict[str, list[bytes]] = {"p0": [], "p1": [], "p2": []}

    async def f(ch, part):
        record_received(ch, received)
        return await publish_horizontal(ch, hl, _local_rows(part, hs, qis, "disease"), spec)

    out = run_parties(3, f, parts, timeout=120)
    assert out["p0"]["stats"]["evaluated"] > 10
    chosen = tuple(out["p0"]["levels"])
    for q, part in enumerate(parts):
        rows = _local_rows(part, hs, qis, "disease")
        codes = rows.qi_codes
        sens = np.searchsorted(out["p0"]["sensitive_values"], rows.sensitive)
        vectors = [cell_counts(hl, codes, lv) for lv in [chosen, (1, 1, 0), (2, 2, 1)]]
        n_sens = len(out["p0"]["sensitive_values"])
        vectors.append(cell_counts(hl, codes, chosen, sens, n_sens))
        # the presence bits per (cell, value) the search inputs: their run of bits, at any bit offset
        presence = [(cell_counts(hl, codes, lv, sens, n_sens) > 0) for lv in [chosen, (1, 1, 0), (2, 2, 1)]]
        patterns = [p.astype(np.uint8).tobytes() for p in presence if p.sum() >= 3 and p.size >= 64]
        # the search lays them out value-major: each value's run over a node's cells (large nodes,
        # so that a run is long enough never to match by chance)
        for lv in [(0, 0, 0), (0, 1, 0), (1, 0, 0)]:
            for col in (cell_counts(hl, codes, lv, sens, n_sens) > 0).reshape(-1, n_sens).T:
                if col.sum() >= 3 and col.size >= 64:
                    patterns.append(col.astype(np.uint8).tobytes())
        assert len(patterns) > 3
        for name in ("p0", "p1", "p2"):
            if name == f"p{q}":
                continue
            blob = b"".join(received[name])
            for v in vectors:
                if np.count_nonzero(v) < 3:
                    continue
                for dt in (np.uint16, np.uint32, np.uint64):
                    assert v.astype(dt).tobytes() not in blob, (name, q, dt)
            bitstream = np.unpackbits(np.frombuffer(blob, np.uint8), bitorder="little").tobytes()
            for bits in patterns:
                assert bits not in bitstream, (name, q)


def test_the_masked_counts_a_party_receives_look_uniform():
    """S = Σ c·fail from the counts' additive pieces: each computing party sends the next one its
    counts times ±1, masked by a stream the receiver does not know. Most cells are empty, so an
    unmasked send would be mostly zero words; what arrives looks uniform in every batch (an attack
    that sent the pieces unmasked, or the counts themselves, fails here)."""
    hs = _hierarchies()
    df = _table(np.random.default_rng(4), 200)
    spec = JointPublishSpec(("age", "zip", "sex"), "disease", 3, 2, 0.05, "star")
    qis = list(spec.qis)
    hl = [hs[c] for c in qis]
    got: list[np.ndarray] = []

    async def f(ch, part):
        orig = ch.recv

        async def recv(frm, tag):
            b = await orig(frm, tag)
            if tag.endswith("/e"):
                got.append(unpack_arrays(b)[0])
            return b

        ch.recv = recv
        return await publish_horizontal(ch, hl, _local_rows(part, hs, qis, "disease"), spec)

    out = run_parties(3, f, split_rows(df, 3), timeout=120)
    assert len(got) == 3 * out["p0"]["stats"]["batches"]  # one masked vector per batch and party
    words = np.concatenate(got).astype(np.float64)
    assert words.size > 2000
    assert np.count_nonzero(words == 0) < 5 and 0.45 < words.mean() / 2**32 < 0.55


def test_the_job_refuses_a_release_that_would_be_the_pooled_table():
    """k = 1 without l: every node passes and the bottom node's release is the pooled QI table — the
    analyst would receive the parties' rows. The job refuses it (a policy refusal, before any data)."""
    from parties.jobs.publishing import spec_from_params
    from parties.jobs.registry import JobContext, PolicyRefusal

    base = {"qi": ["age", "zip"], "sensitive": "disease", "max_suppression": 0.0}
    with pytest.raises(PolicyRefusal, match="at least 2 rows"):
        spec_from_params(JobContext("p0", None, {**base, "k": 1}))  # type: ignore[arg-type]
    assert spec_from_params(JobContext("p0", None, {**base, "k": 1, "l": 2})).l == 2  # type: ignore[arg-type]
    assert spec_from_params(JobContext("p0", None, {**base, "k": 2})).k == 2  # type: ignore[arg-type]


def test_a_node_too_large_to_share_is_one_clear_error_on_every_party(monkeypatch):
    import parties.joint.publishing as P

    monkeypatch.setattr(P, "MAX_NODE_CELLS", 3)
    hs = _hierarchies()
    df = _table(np.random.default_rng(5), 90)
    spec = JointPublishSpec(("age", "zip", "sex"), "disease", 2, None, 0.0, "star")
    with pytest.raises(ProtocolError, match=r"cells \(more than 3\): use coarser hierarchies"):
        _joint(df, spec, hs)


def test_the_analyst_refuses_shares_that_do_not_add_up():
    """A computing party that returns a wrong (or altered) share: the analyst's sum no longer
    matches the n rows, and no release is assembled."""
    from parties.analyst.publishing import JointPublishing, assemble

    hs = _hierarchies()
    df = _table(np.random.default_rng(11), 120)
    spec = JointPublishSpec(("age", "zip", "sex"), "disease", 3, None, 0.05, "star")
    out, rel = _joint(df, spec, hs)
    params = JointPublishing(qi=spec.qis, hierarchies={c: hs[c] for c in spec.qis}, sensitive="disease", k=3,
                             max_suppression=0.05)  # fmt: skip
    good = assemble(params, out, 0.0)
    assert _multiset(good.release, list(df.columns)) == _multiset(rel, list(df.columns))
    bad = {p: dict(v) for p, v in out.items()}
    share = list(bad["p1"]["share"]["kept"])
    share[0] = (share[0] + 1) % (1 << bad["p1"]["share"]["bits"])
    bad["p1"]["share"] = {**bad["p1"]["share"], "kept": share}
    with pytest.raises(ValueError, match="do not add up"):
        assemble(params, bad, 0.0)


@settings(max_examples=25, deadline=None)
@given(
    cells=st.lists(st.integers(1, 40), min_size=1, max_size=6),
    S=st.integers(1, 5),
    levels=st.integers(0, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_or_over_groups_of_cells_and_per_value_sums_equal_a_loop_over_nodes(cells, S, levels, seed):
    """The '*' group's per-value OR (:func:`_or_cells` on shares between three parties, value-major
    bits, nodes padded with empty cells to a multiple of the group width and the batch to whole
    words) and the per-node sums equal a plain loop per node: the OR of each value over a node's
    cells, once its groups are ORed again."""
    from mpc.replicated import RSS3, Arith
    from parties.joint.publishing import _or_cells, _or_width, _padded, _sum_value_major

    rng = np.random.default_rng(seed)
    width = _or_width(cells, levels)
    assert width <= 1 << levels and (width == 1 or width < 2 * max(cells))
    sizes = _padded(cells, width, 64)
    assert all(p % width == 0 and d <= p for d, p in zip(cells, sizes)) and sum(sizes) % 64 == 0
    assert all(p < d + width for d, p in zip(cells[:-1], sizes[:-1]))  # only the last node takes the tail
    total = sum(sizes)
    grid = np.zeros((S, total), np.uint8)  # value-major: value·total + cell
    off, want = 0, []
    for d, p in zip(cells, sizes):  # a node's own cells random, its padding empty
        blk = rng.integers(0, 2, (S, d)).astype(np.uint8)
        grid[:, off : off + d] = blk
        off += p
        want.append(blk.max(axis=1))
    u = grid.reshape(-1)

    async def f(ch, _):
        rss = await RSS3.create(ch, ch.parties[:3])
        x = await rss.input_bits(u if ch.me == "p0" else np.zeros_like(u))  # p0's bits, one plane each
        x = rss.planes(x, slice(0, 1))
        red, groups = await _or_cells(rss, x, sizes, S, width)
        return await rss.open(red, to="all"), groups

    out = run_parties(3, f, [None] * 3, timeout=60)
    opened, groups = out["p0"]
    assert groups == [p // width for p in sizes]
    v = np.asarray(opened, dtype=np.uint32).reshape(-1)
    got = _sum_value_major(Arith(v, v.copy(), 32), groups, S)  # per node and value: groups where it occurs
    assert np.array_equal(got.a.reshape(len(cells), S) > 0, np.stack(want) > 0)


@pytest.mark.parametrize("w", [64, 32, 16, 8, 4, 2])
@pytest.mark.parametrize("fields", [1, 2, 3, 7, 64, 129])
def test_field_halves_by_views_equal_the_halves_of_the_unpacked_bits(w, fields):
    """:func:`_field_halves` (word views, no unpacking) against the plain rearrangement of the bits."""
    from mpc.replicated import Bool, pack_bits, unpack_bits
    from parties.joint.publishing import _field_halves

    rng = np.random.default_rng(w * fields)
    a = rng.integers(0, 2, fields * w).astype(np.uint8)
    b = rng.integers(0, 2, fields * w).astype(np.uint8)
    lo, hi = _field_halves(Bool(pack_bits(a[None, :]), pack_bits(b[None, :]), fields * w), w)
    for x, part in ((a, 0), (b, 1)):
        g = x.reshape(fields, w)
        for half, want in ((lo, g[:, : w // 2]), (hi, g[:, w // 2 :])):
            words = half.a if part == 0 else half.b
            assert half.n == fields * w // 2
            assert np.array_equal(unpack_bits(words, half.n).reshape(-1), want.reshape(-1))


def test_value_major_planes_and_tiles_are_the_plain_rearrangements():
    """The zero-copy views of value-major bits equal the plain reshapes of the unpacked bits."""
    from mpc.replicated import Bool, pack_bits, unpack_bits
    from parties.joint.publishing import _planes_of, _tiled

    rng = np.random.default_rng(1)
    S, m = 5, 128
    bits = rng.integers(0, 2, S * m).astype(np.uint8)
    x = Bool(pack_bits(bits[None, :]), pack_bits(bits[None, :]), S * m)
    p = _planes_of(x, S)
    assert p.width == S and np.array_equal(unpack_bits(p.a, m), bits.reshape(S, m))
    f = rng.integers(0, 2, m).astype(np.uint8)
    t = _tiled(Bool(pack_bits(f[None, :]), pack_bits(f[None, :]), m), S)
    assert np.array_equal(unpack_bits(t.a, S * m).reshape(-1), np.tile(f, S))
    with pytest.raises(ValueError):
        _planes_of(Bool(pack_bits(bits[None, :-S]), pack_bits(bits[None, :-S]), S * (m - 1)), S)


def test_the_counter_pads_every_node_with_empty_cells():
    """``CellCounter`` with a layout: each node's own counts first, then zeros up to its positions."""
    hs = _hierarchies()
    df = _table(np.random.default_rng(3), 90)
    qis = ["age", "zip", "sex"]
    hl = [hs[c] for c in qis]
    codes = np.stack([hs[c].encode(df[c], column=c) for c in qis], axis=1)
    sens = pd.factorize(df["disease"], sort=True)[0]
    counter = CellCounter(hl, codes, sens, 4)
    nodes = [(0, 0, 0), (1, 2, 1), (3, 3, 1)]
    real = counter.sizes(nodes)
    layout = [d + e for d, e in zip(real, (5, 0, 64))]
    plain, pres = counter.counts(nodes), counter.presence(nodes)
    both = counter.presence(nodes, sizes=layout)
    cnt, vm = counter.counts_and_presence(nodes, layout)
    vm = vm.reshape(4, sum(layout)).T.reshape(-1)  # value-major back to cell-major
    assert np.array_equal(vm, both)
    off = poff = 0
    for d, p in zip(real, layout):
        assert np.array_equal(cnt[off : off + d], plain[poff : poff + d]) and not cnt[off + d : off + p].any()
        assert np.array_equal(both[off * 4 : (off + d) * 4], pres[poff * 4 : (poff + d) * 4])
        assert not both[(off + d) * 4 : (off + p) * 4].any()
        off, poff = off + p, poff + d
    with pytest.raises(Exception, match="at least as many positions"):
        counter.counts(nodes, sizes=[1, 1, 1])


@settings(max_examples=30, deadline=None)
@given(
    heights=st.lists(st.integers(1, 3), min_size=2, max_size=4),
    seed=st.integers(0, 2**16),
    cap=st.integers(1, 400),
)
def test_a_batch_takes_whole_levels_of_nodes_whose_bits_are_unknown(heights, seed, cap):
    """:func:`_next_layers` against its definition, on a lattice where the top levels are settled
    at random (monotone): the first layer is exactly the next level's candidates; every later node
    has all its direct generalizations within or in the batch, and no node that has is left out of
    its level; the batch stays within ``cap`` unless its first level alone exceeds it."""
    from anonymize.publish.fulldomain.grid import LatticeGrid
    from parties.joint.publishing import _next_layers, _successors

    rng = np.random.default_rng(seed)
    g = LatticeGrid(heights)
    size = {i: int(rng.integers(1, 60)) for i in range(g.N)}
    by_height: dict[int, list[int]] = {}
    for i in range(g.N):
        by_height.setdefault(g.height[i], []).append(i)
    hs = sorted(by_height, reverse=True)
    settled = int(rng.integers(0, len(hs)))  # levels above this one were evaluated
    within = np.zeros(g.N, dtype=bool)
    for h in hs[:settled]:
        for i in by_height[h]:
            if all(within[s] for s in g.succ[i]):
                within[i] = bool(rng.random() < 0.85)
    layers = _next_layers(hs[settled:], by_height, _successors(g.succ, g.N), within, size.__getitem__, cap)
    first = [i for i in by_height[hs[settled]] if all(within[s] for s in g.succ[i])]
    if not first:
        assert layers == []
        return
    assert layers[0] == (hs[settled], first)
    inside = set(first)
    for h, nodes in layers[1:]:
        want = [i for i in by_height[h] if all(within[s] or s in inside for s in g.succ[i])]
        assert nodes == want and nodes
        inside.update(nodes)
    total = sum(size[i] for i in inside)
    assert total <= cap or len(layers) == 1
    assert [h for h, _ in layers] == hs[settled : settled + len(layers)]


@pytest.mark.parametrize("cap", [40, 1 << 23])
def test_every_opened_node_bit_is_the_pooled_lattice_s(monkeypatch, cap):
    """Each node's opened bits equal the pooled lattice's for that node, whether its level is
    evaluated alone or in one batch with the levels above it (small ``cap``: many batches; large:
    one). A node evaluated beside a failing generalization opens 0, the bit monotonicity implies —
    so taking levels early reveals nothing the level-by-level search would not."""
    import parties.joint.publishing as pub

    monkeypatch.setattr(pub, "MAX_BATCH_CELLS", cap)
    monkeypatch.setattr(pub, "MAX_BATCH_ELEMENTS", cap * 4)
    hs = _hierarchies()
    df = _table(np.random.default_rng(5), 240)
    spec = JointPublishSpec(("age", "zip", "sex"), "disease", 4, 2, 0.05, "star")
    qis = list(spec.qis)
    hl = [hs[c] for c in qis]
    seen: dict[str, list] = {"levels": [], "bits": []}
    orig_inputs, orig_eval, orig_star = pub._Circuit.inputs, pub._Circuit.evaluate, pub._Circuit.star_ok
    deferred: dict[int, list] = {}  # the '*' group checks still running, by their shares' id

    async def inputs(self, counter, nodes, *a, **kw):
        if self.rss.ch.me == "p0" and kw.get("presence"):
            seen["levels"].append([tuple(int(x) for x in lv) for lv in nodes])
        return await orig_inputs(self, counter, nodes, *a, **kw)

    async def evaluate(self, batch, sizes):
        w, o, kept, star = await orig_eval(self, batch, sizes)
        if self.rss.ch.me == "p0":
            seen["bits"].append([np.asarray(w).tolist(), None if o is None else np.asarray(o).tolist()])
            if o is None:  # opened later, for the nodes within only (star_ok)
                deferred[id(star)] = seen["bits"][-1]
        return w, o, kept, star

    async def star_ok(self, rss, check, sizes, within):
        o = await orig_star(self, rss, check, sizes, within)
        if self.rss.ch.me == "p0":
            deferred.pop(id(check))[1] = np.asarray(o).tolist()
        return o

    monkeypatch.setattr(pub._Circuit, "inputs", inputs)
    monkeypatch.setattr(pub._Circuit, "evaluate", evaluate)
    monkeypatch.setattr(pub._Circuit, "star_ok", star_ok)

    async def f(ch, part):
        return await publish_horizontal(ch, hl, _local_rows(part, hs, qis, "disease"), spec)

    out = run_parties(3, f, split_rows(df, 3), timeout=120)
    table = EncodedTable.encode(df, Schema(qis, ["disease"]), hs)
    lat = Lattice(table, [KAnonymity(4), DistinctLDiversity(2)], 0.05, suppressed_rows="star")
    g = lat.grid()
    opened = {}
    for lvs, (w, o) in zip(seen["levels"], seen["bits"]):
        for lv, wi, oi in zip(lvs, w, o):
            info, _ = lat.evaluate(lv, source=lat.source_for(lv))
            assert (wi, oi) == (info.ok_monotone, info.ok), lv
            opened[lv] = wi
    assert len(seen["bits"]) == out["p0"]["stats"]["batches"]
    assert (len(seen["bits"]) > 3) == (cap == 40)
    implied = 0
    for i, lv in enumerate(g.levels):  # a node opened beside a failing generalization opened 0
        up = [tuple(int(x) for x in g.levels[s]) for s in g.succ[i]]
        if lv in opened and any(u in opened and not opened[u] for u in up):
            assert not opened[lv]
            implied += 1
    assert implied > 0 or cap == 40
