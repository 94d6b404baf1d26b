"""Joint publishing of vertically partitioned columns against the pooled search (in-memory parties).

Oracles: ppdm's pooled Flash on the joined table (itself checked against an exhaustive scan
elsewhere) for the chosen node and the release; pycanon for the k and l of every joint release. The
views tests record every message a party receives and check what it can read there.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.channel import MemoryNetwork, unpack_arrays
from mpc.errors import ProtocolError
from parties.analyst.publishing import JointPublishing, split_columns
from parties.joint.publishing import JointPublishSpec
from parties.joint.publishing_vertical import VerticalLayout, VerticalRows, decrypt_release, publish_vertical
from tests.test_joint_publishing import _check_pycanon, _hierarchies, _multiset, _pooled, _table

SLOW = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
QIS = ("age", "zip", "sex")


def _run(df, spec, hs, parties=2, *, present=None, record=None):
    """``parties`` data parties (QIs in turn, the sensitive column with the last) and a helper, in
    memory; returns (replies, release rows, node codes). ``present``: per data party, rows it holds."""
    params = JointPublishing(tuple(spec.qis), hs, spec.sensitive, split="vertical")
    parts = split_columns(df, params, parties)
    names = [f"p{i}" for i in range(parties)]
    owners = tuple(names[j % parties] for j in range(len(spec.qis)))
    layout = VerticalLayout(owners, names[-1] if spec.sensitive else None, "helper")
    hl = [hs[c] for c in spec.qis]

    def rows(i, part):
        mine = [c for c in spec.qis if c in part.columns]
        codes = np.stack([hs[c].encode(part[c], column=c) for c in mine], axis=1).astype(np.int32) if mine else None
        if codes is None:
            codes = np.zeros((len(part), 0), np.int32)
        sens = part[spec.sensitive].astype(str).tolist() if spec.sensitive in part.columns else None
        return VerticalRows(codes, sens, None if present is None else present[i])

    async def main():
        net = MemoryNetwork([*names, "helper"], timeout=120)
        chans = {p: net.channel(p) for p in [*names, "helper"]}
        if record is not None:
            for p, ch in chans.items():
                inner = ch.recv

                async def recv(frm, tag, _inner=inner, _p=p):
                    data = await _inner(frm, tag)
                    record.setdefault(_p, []).append((frm, tag, bytes(data)))
                    return data

                ch.recv = recv  # type: ignore[method-assign]
        coros = [publish_vertical(chans[p], hl, rows(i, parts[i]), spec, layout) for i, p in enumerate(names)]
        coros.append(publish_vertical(chans["helper"], hl, None, spec, layout))
        res = await asyncio.gather(*coros)
        return dict(zip([*names, "helper"], res))

    out = asyncio.run(main())
    for p in names:
        out[p]["keys"] = out[p]["keys"]
    rel, codes = decrypt_release(hl, spec, layout, out)
    return out, rel, codes


@pytest.mark.parametrize(
    "k,l,sup,rows,metric",
    [
        (3, None, 0.0, "star", "dm"),
        (4, None, 0.05, "star", "ncp"),
        (3, 2, 0.1, "star", "ncp"),
        (5, None, 0.1, "arx", "dm"),
        (3, 2, 0.05, "drop", "ncp"),
    ],
)
def test_vertical_release_equals_the_pooled_one(k, l, sup, rows, metric):
    hs = _hierarchies()
    df = _table(np.random.default_rng(k * 10 + (l or 0)), 240)
    spec = JointPublishSpec(QIS, "disease", k, l, sup, rows, metric)
    out, rel, _ = _run(df, spec, hs)
    pooled = _pooled(df, spec, hs)
    assert out["helper"]["n"] == len(df)
    levels = tuple(out["helper"]["levels"])
    assert all(tuple(v["levels"]) == levels for v in out.values())
    pooled_levels = tuple(pooled.levels[c] for c in spec.qis)
    if metric == "ncp":
        assert levels == pooled_levels
    cols = [*QIS, "disease"]
    if levels == pooled_levels:
        assert _multiset(rel, cols) == _multiset(pooled.df, cols)
    else:  # a DM tie: the same optimum value
        assert _dm(rel, len(df)) == pytest.approx(pooled.search.chosen.dm)
    _check_pycanon(rel, spec)


def _dm(rel, n):
    star = (rel[list(QIS)] == "*").all(axis=1)
    sizes = rel[~star].groupby(list(QIS)).size()
    return float((sizes**2).sum() + (n - int((~star).sum())) * n)


@SLOW
@given(
    n=st.integers(12, 90),
    k=st.integers(2, 5),
    l=st.sampled_from([None, 2]),
    sup=st.sampled_from([0.0, 0.05, 0.2]),
    rows=st.sampled_from(["star", "arx", "drop"]),
    parties=st.sampled_from([2, 3]),
    seed=st.integers(0, 2**16),
)
def test_vertical_equals_pooled_on_random_tables(n, k, l, sup, rows, parties, seed):
    """NCP (ties are rare): the joint node and rows equal the pooled search's, or both find nothing."""
    hs = _hierarchies()
    df = _table(np.random.default_rng(seed), n)
    spec = JointPublishSpec(QIS, "disease", k, l, sup, rows, "ncp")
    try:
        pooled = _pooled(df, spec, hs)
    except Exception:
        pooled = None
    if pooled is None:
        with pytest.raises(ProtocolError):
            _run(df, spec, hs, parties)
        return
    out, rel, _ = _run(df, spec, hs, parties)
    assert tuple(out["helper"]["levels"]) == tuple(pooled.levels[c] for c in spec.qis)
    cols = [*QIS, "disease"]
    assert _multiset(rel, cols) == _multiset(pooled.df, cols)


def test_keyed_rows_some_parties_lack_are_left_out():
    """Private-ID alignment leaves absent rows in the row space: the joined table is the rows every
    party holds, and the release equals the pooled search on that inner join."""
    hs = _hierarchies()
    df = _table(np.random.default_rng(7), 200)
    rng = np.random.default_rng(8)
    present = [rng.random(len(df)) < 0.9, rng.random(len(df)) < 0.85]
    spec = JointPublishSpec(QIS, "disease", 3, 2, 0.05, "star", "ncp")
    out, rel, _ = _run(df, spec, hs, present=present)
    both = present[0] & present[1]
    inner = df[both].reset_index(drop=True)
    assert out["helper"]["n"] == len(inner)
    pooled = _pooled(inner, spec, hs)
    assert tuple(out["helper"]["levels"]) == tuple(pooled.levels[c] for c in spec.qis)
    assert _multiset(rel, [*QIS, "disease"]) == _multiset(pooled.df, [*QIS, "disease"])


def test_what_each_party_receives():
    """The helper receives labels and ciphertexts only: no hierarchy code of any row, no value; a
    data party receives from the helper requests only (node numbers), nothing of the other's columns."""
    hs = _hierarchies()
    df = _table(np.random.default_rng(3), 240)
    spec = JointPublishSpec(QIS, "disease", 3, 2, 0.05, "star", "ncp")
    record: dict = {}
    out, rel, _ = _run(df, spec, hs, record=record)
    n = len(df)
    # the helper's label columns: per node a relabelling, in a row order no party published
    pi_orders = []
    for frm, tag, data in record["helper"]:
        if tag.endswith("pubv/labels"):
            lab, sens, counts, _ = unpack_arrays(data)
            lab = lab.reshape(-1, n)
            for t in range(lab.shape[0]):
                assert sorted(set(lab[t].tolist())) == list(range(int(counts[t])))
            if frm == "p0":
                pi_orders.append(lab)
        if tag.endswith("pubv/cipher"):
            # ciphertexts of the cells: not the plain cell numbers of the chosen node
            ct = unpack_arrays(data)[0].reshape(n, 8).copy().view("<i8").reshape(-1)
            assert (ct < 0).any() or ct.max() > 10**6
    assert pi_orders
    # the rows come in an order no record can be linked to: no label column with several labels is a
    # function of p0's own columns (age, sex) taken in the table's order
    own = hs["age"].encode(df["age"], column="age") * 2 + hs["sex"].encode(df["sex"], column="sex")
    multi = [lab[t] for lab in pi_orders for t in range(lab.shape[0]) if lab[t].max() > 0]
    assert multi
    for col in multi:
        pairs = pd.DataFrame({"own": own, "label": col})
        assert (pairs.groupby("own")["label"].nunique() > 1).any()
    # data parties hear only requests from the helper and each other's seed contribution
    for p in ("p0", "p1"):
        tags = {tag.rsplit("/", 2)[-2] + "/" + tag.rsplit("/", 1)[-1] for _, tag, _ in record[p]}
        assert {t for t in tags if t.startswith("pubv/")} <= {"pubv/req", "pubv/seed", "pubv/rows", "pubv/params"}
        other = {frm for frm, tag, _ in record[p] if tag.endswith("pubv/seed")}
        assert other == ({"p1"} if p == "p0" else {"p0"})


def test_a_party_with_a_different_row_count_stops_every_party():
    hs = _hierarchies()
    df = _table(np.random.default_rng(5), 60)
    spec = JointPublishSpec(QIS, "disease", 3, None, 0.0, "star", "dm")
    names = ["p0", "p1"]
    layout = VerticalLayout(("p0", "p1", "p0"), "p1", "helper")
    hl = [hs[c] for c in QIS]

    async def main():
        net = MemoryNetwork([*names, "helper"], timeout=20)
        c0 = np.stack([hs[c].encode(df[c], column=c) for c in ("age", "sex")], axis=1)
        c1 = hs["zip"].encode(df["zip"], column="zip")[:50, None]
        return await asyncio.gather(
            publish_vertical(net.channel("p0"), hl, VerticalRows(c0), spec, layout),
            publish_vertical(net.channel("p1"), hl, VerticalRows(c1, df["disease"].tolist()[:50]), spec, layout),
            publish_vertical(net.channel("helper"), hl, None, spec, layout),
            return_exceptions=True,
        )

    res = asyncio.run(main())
    assert all(isinstance(r, Exception) for r in res[:2])
    assert "disagree" in str(res[0]) or "rows" in str(res[0])


def test_release_rows_are_labelled_like_the_pooled_release():
    """decrypt_release: every kept row's labels are its cell's hierarchy labels at the chosen node."""
    hs = _hierarchies()
    df = _table(np.random.default_rng(11), 150)
    spec = JointPublishSpec(QIS, None, 4, None, 0.1, "star", "ncp")
    out, rel, codes = _run(df, spec, hs)
    levels = out["helper"]["levels"]
    kept = rel[~(rel[list(QIS)] == "*").all(axis=1)]
    for j, c in enumerate(QIS):
        assert kept[c].astype(str).tolist() == [str(x) for x in hs[c].labels[levels[j]][codes[:, j]]]
    assert isinstance(rel, pd.DataFrame)
