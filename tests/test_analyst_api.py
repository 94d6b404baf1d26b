"""The analyst's Python API (parties.analyst): typed job parameters validated once, and joint mining
on real local daemons whose result equals mlxtend's centralized run of the pooled file."""

from __future__ import annotations

import math
from fractions import Fraction

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mlxtend.frequent_patterns import fpgrowth

from parties.analyst import (
    AnalystConfig,
    AnalystError,
    DPOptions,
    HorizontalMining,
    JobParamError,
    VerticalMining,
    mine_local,
)


def test_params_serialize_to_the_job_params() -> None:
    h = HorizontalMining(min_support=" 1/3", min_confidence="0.8", max_len=3, n_items=120)
    assert h.to_params() == {
        "min_support": "1/3",
        "min_confidence": "0.8",
        "max_len": 3,
        "n_items": 120,
        "reveal_counts": True,
        "candidates": "union",
        "data": "transactions",
    }
    d = HorizontalMining(min_support="0.3", max_len=2, n_items=5, dp=DPOptions(epsilon="1/2", colluders=1))
    assert d.candidates == "all"  # the only mode with epsilon
    assert d.to_params()["epsilon"] == "1/2" and d.to_params()["colluders"] == 1
    v = VerticalMining(min_support="0.5", counting="encrypted")
    assert v.to_params() == {
        "min_support": "0.5",
        "min_confidence": None,
        "max_len": None,
        "counting": "encrypted",
        "data": "transactions",
    }
    # named items: no numeric universe needed; a public catalog or the secure union of locally large names
    assert "n_items" not in HorizontalMining(min_support="0.3").to_params()
    assert HorizontalMining(min_support="0.3", catalog=("milk", 7)).to_params()["catalog"] == ["milk", 7]
    assert VerticalMining(min_support="0.3", align="psi", data="crm").to_params()["align"] == "psi"
    assert (h.job, v.job) == ("mine.horizontal", "mine.vertical")


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: HorizontalMining(min_support="0"), "min_support"),
        (lambda: HorizontalMining(min_support="1.5"), "min_support"),
        (lambda: HorizontalMining(min_support="abc"), "min_support"),
        (lambda: HorizontalMining(min_support="0.3", min_confidence="2"), "min_confidence"),
        (lambda: HorizontalMining(min_support="0.3", max_len=0), "max_len"),
        (lambda: HorizontalMining(min_support="0.3", candidates="some"), "candidates"),
        (lambda: HorizontalMining(min_support="0.3", dp=DPOptions(epsilon="1")), "max_len"),
        (lambda: HorizontalMining(min_support="0.3", max_len=2, candidates="union", dp=DPOptions("1")), "candidates"),
        (lambda: HorizontalMining(min_support="0.3", catalog=("a", "a")), "catalog"),
        (lambda: HorizontalMining(min_support="0.3", catalog=()), "catalog"),
        (lambda: HorizontalMining(min_support="0.3", catalog=("a",), n_items=3), "catalog"),
        (lambda: HorizontalMining(min_support="0.3", data="../etc"), "data"),
        (lambda: VerticalMining(min_support="0.3", align="magic"), "align"),
        (lambda: VerticalMining(min_support="0.3", counting="magic"), "counting"),
        (lambda: DPOptions(epsilon="-1"), "epsilon"),
        (lambda: DPOptions(epsilon="1", max_contributions=0), "max_contributions"),
        (lambda: DPOptions(epsilon="1", colluders=-1), "colluders"),
    ],
)
def test_bad_params_name_their_field(make, field) -> None:
    with pytest.raises(JobParamError) as e:
        make()
    assert e.value.field == field and "\n" not in str(e.value)


@given(st.fractions(min_value=Fraction(-1), max_value=Fraction(2)))
def test_threshold_accepted_exactly_in_range(f: Fraction) -> None:
    text = f"{f.numerator}/{f.denominator}"
    if 0 < f <= 1:
        assert HorizontalMining(min_support=text).min_support == text
    else:
        with pytest.raises(JobParamError):
            HorizontalMining(min_support=text)


def test_analyst_config_errors_are_one_line(tmp_path) -> None:
    with pytest.raises(AnalystError, match="cannot read"):
        AnalystConfig.load(tmp_path / "nope.toml")
    bad = tmp_path / "a.toml"
    bad.write_text('[analyst]\ncert = "c"\n')
    with pytest.raises(AnalystError, match=r"\[analyst\] needs cert, key and ca"):
        AnalystConfig.load(bad)


@pytest.mark.daemons
@pytest.mark.parametrize("kind", [HorizontalMining, VerticalMining])
def test_mine_local_equals_mlxtend_on_the_pooled_file(tmp_path, kind) -> None:
    rows = [[1, 2, 3], [1, 2], [2, 3, 4], [1, 3, 4], [1, 2, 3, 4], [2, 4], [1, 2, 4], [3, 4]] * 3
    path = tmp_path / "t.dat"
    path.write_text("".join(" ".join(map(str, r)) + "\n" for r in rows))
    res = mine_local(path, kind(min_support="1/3"), 2, progress=False, timeout=120)
    got = {frozenset(i["items"]): i["count"] for i in res["itemsets"]}
    items = sorted({x for r in rows for x in r})
    onehot = pd.DataFrame([[x in r for x in items] for r in rows], columns=items)
    ref = fpgrowth(onehot, min_support=math.ceil(len(rows) / 3) / len(rows) - 1e-9, use_colnames=True)
    want = {frozenset(s): round(p * len(rows)) for s, p in zip(ref["itemsets"], ref["support"])}
    assert got == want
    assert res["protocol"]["mode"] == kind.split and len(res["protocol"]["parties"]) == 2
