"""The utility options on the engines: attribute weights (``--weights``), the categorical NCP flavours
(``--ncp-categorical height|leaves|span``), ARX's outlier semantics (``--suppressed-rows arx``) and ARX's
geometric-mean Loss in ``ppdm check``, computed by DuckDB and Spark from the weighted distinct tuples.

Oracles: the memory engine on the rows (:func:`anonymize_table`, ``ppdm check --engine memory``) for the
chosen node, every metric (to 1e-9), the released multiset of rows and the ``*`` group's verdicts; and,
for ``loss_geometric``, a pandas computation written here from ARX's definition (``MetricMDNMLoss`` with
``AggregateFunction.GEOMETRIC_MEAN``; Iyengar, "Transforming data to satisfy privacy constraints",
KDD 2002): per QI the row mean of ``(card − 1)/(|A| − 1)`` over the released cells (``card`` = leaves of
the hierarchy file under the released label), floored to 10 decimals, aggregated as
``Π_j (w_j·L_j + 1)^(1/q) − 1`` with the weights divided by the largest.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spark_env import spark_unavailable

from anonymize.engines import TableInput
from anonymize.engines.duckdb_engine import DuckDBEngine
from anonymize.errors import AnonymizeError
from anonymize.publish.anonymizer import AnonymizationResult, anonymize_table
from anonymize.publish.io import read_hierarchies, read_table
from anonymize.publish.metrics.release_utility import release_utility
from anonymize.publish.models import DistinctLDiversity, KAnonymity
from anonymize.publish.on_engine import anonymize_on_engine, measure_on_engine
from anonymize.publish.table import Schema
from parties.cli import main

DATA = Path(__file__).resolve().parent.parent / "anonymize" / "data"
ADULT_QIS = ["age", "education", "marital-status", "occupation", "race", "sex", "native-country", "workclass"]
SENS = "salary-class"
FULL_DOMAIN = ["flash", "incognito", "samarati", "datafly"]
WEIGHTS = {"age": 3.0, "education": 0.5, "sex": 0.0}  # others 1; a zero weight too
OPTIONS = {
    "weights": {"weights": WEIGHTS},
    "weights-loss-span": {"weights": WEIGHTS, "metric": "loss", "ncp_categorical": "span"},
    "leaves": {"ncp_categorical": "leaves"},
    "arx": {"suppressed_rows": "arx"},
}
needs_spark = pytest.mark.skipif(spark_unavailable() is not None, reason=spark_unavailable() or "")


def _close(a, b, path="") -> None:
    """Nested dicts / lists / numbers equal, floats to 1e-9 (relative)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (path, set(a) ^ set(b))
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), path
    else:
        assert a == b, path


def _equal_to_memory(
    df: pd.DataFrame, src: Path, schema: Schema, hs, alg: str, models, sup: float, opts: dict, out: Path, engine
) -> tuple[AnonymizationResult, AnonymizationResult] | None:
    """The engine run equals the memory run on the rows: chosen node, every metric (the ``*`` group's
    verdicts among them), the parameters and the written file as a multiset of rows. A memory refusal
    must be the engine's, word for word, with nothing written. Returns (memory, engine) results."""
    kw = {"algorithm": alg, "models": models, "max_suppression": sup, **opts}
    try:
        mem = anonymize_table(df, schema, hs, n_queries=0, **kw)
    except AnonymizeError as e:
        with pytest.raises(AnonymizeError) as info:
            anonymize_on_engine(engine, TableInput.file(src), schema, hs, out, **kw)
        assert str(info.value) == str(e)
        assert not out.exists()
        return None
    res = anonymize_on_engine(engine, TableInput.file(src), schema, hs, out, **kw)
    assert res.levels == mem.levels
    _close(res.report["chosen_node"], mem.report["chosen_node"], "chosen_node")
    _close(res.metrics, mem.metrics, "metrics")
    for p in ("metric", "suppressed_rows", "ncp_categorical", "weights", "max_suppressed_rows"):
        assert res.report["parameters"][p] == mem.report["parameters"][p], p
    written = pd.read_parquet(out)
    key = list(mem.df.columns)
    want = mem.df.astype(str).sort_values(key).to_numpy().tolist()
    assert written[key].astype(str).sort_values(key).to_numpy().tolist() == want
    remeasured = res.report["engine"]["remeasured"]
    assert remeasured["k"] == mem.metrics["achieved"]["k"] and remeasured["rows"] == len(df)
    if opts.get("suppressed_rows") == "arx" and mem.metrics["suppressed_rows"]:
        assert "suppressed_group" in mem.metrics
        n_star = int((mem.df[schema.qis].astype(str) == "*").all(axis=1).sum())
        assert remeasured["star_group_rows"] == n_star >= mem.metrics["suppressed_group"]["rows"]
    return mem, res


@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    df = read_table(DATA / "adult_subset.csv")
    hs = read_hierarchies(DATA, columns=set(ADULT_QIS) | {SENS})
    src = tmp_path_factory.mktemp("adult") / "adult.parquet"
    df.to_parquet(src)
    return df, hs, src


# ---------------------------------------------------------------------------------------------- DuckDB
@pytest.mark.parametrize("option", list(OPTIONS))
@pytest.mark.parametrize("alg", FULL_DOMAIN)
def test_duckdb_equals_memory_with_each_option_on_adult(adult, alg, option, tmp_path):
    df, hs, src = adult
    schema = Schema(qis=ADULT_QIS, sensitive=[SENS])
    models = [KAnonymity(5), DistinctLDiversity(2)]
    with DuckDBEngine() as eng:
        both = _equal_to_memory(df, src, schema, hs, alg, models, 0.05, OPTIONS[option], tmp_path / "r.parquet", eng)
    assert both is not None
    mem, _ = both
    if option == "arx":  # the * group is there and is what ARX exempts
        assert mem.metrics["suppressed_group"]["rows"] == mem.metrics["suppressed_rows"] > 0
    if "weights" in OPTIONS[option]:
        assert mem.report["parameters"]["weights"]["age"] == 3.0


def test_duckdb_refuses_a_weight_on_no_quasi_identifier_as_memory_does(adult, tmp_path):
    df, hs, src = adult
    schema = Schema(qis=ADULT_QIS, sensitive=[SENS])
    with DuckDBEngine() as eng:
        both = _equal_to_memory(
            df, src, schema, hs, "flash", [KAnonymity(5)], 0.05, {"weights": {"agex": 2.0}}, tmp_path / "r.parquet", eng
        )
    assert both is None


def test_duckdb_arx_with_a_released_class_written_as_star(tmp_path, monkeypatch):
    """A hierarchy whose level 1 labels red and pink ``*``: at that node the released class {red, pink}
    (3 rows) is written like the suppressed teal row, so the file's ``*`` group holds 4 rows. The engine
    still gives the memory release and its check of the file accounts for both; a miscount fails the
    run and leaves no file."""
    import anonymize.publish.on_engine as on_engine
    from anonymize.publish.hierarchy import Hierarchy

    rows = [["red", "*", "*"], ["pink", "*", "*"], ["blue", "cool", "*"], ["green", "cool", "*"], ["teal", "teal", "*"]]
    hs = {"colour": Hierarchy.from_rows("colour", rows)}
    df = pd.DataFrame(
        {"colour": ["red", "pink", "pink"] + ["blue"] * 3 + ["green"] * 3 + ["teal"], "s": list("ab") * 5}
    )
    df.to_parquet(tmp_path / "in.parquet")
    schema, models, opts = Schema(["colour"], ["s"]), [KAnonymity(3), DistinctLDiversity(2)], {"suppressed_rows": "arx"}
    with DuckDBEngine() as eng:
        both = _equal_to_memory(
            df, tmp_path / "in.parquet", schema, hs, "flash", models, 0.1, opts, tmp_path / "r.parquet", eng
        )
        assert both is not None
        mem, res = both
        assert mem.levels == {"colour": 1} and mem.metrics["suppressed_group"]["rows"] == 1
        assert res.report["engine"]["remeasured"] == {"rows": 10, "star_group_rows": 4, "k": 3, "l_distinct[s]": 2}
        monkeypatch.setattr(on_engine, "_all_star_rows", lambda *a: 0)
        out = tmp_path / "bad.parquet"
        with pytest.raises(AnonymizeError, match=r"the '\*' group has 4 rows where 1 were expected"):
            anonymize_on_engine(eng, TableInput.file(tmp_path / "in.parquet"), schema, hs, out, algorithm="flash",
                                models=models, max_suppression=0.1, suppressed_rows="arx")  # fmt: skip
        assert not out.exists()


@st.composite
def small_cases(draw):
    n = draw(st.integers(8, 120))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ages = rng.integers(18, 18 + draw(st.integers(2, 40)), size=n)
    colour = rng.choice(["red", "green", "blue", "grey"][: draw(st.integers(1, 4))], size=n)
    zips = rng.choice([f"130{d}{e}" for d in range(3) for e in range(4)][: draw(st.integers(1, 12))], size=n)
    sens = rng.choice(["a", "b", "c"], size=n)
    df = pd.DataFrame({"age": ages, "colour": colour, "zip": zips, "disease": sens})
    w = st.sampled_from([0.0, 0.5, 1.0, 2.0, 7.0])
    opts = {
        "weights": draw(st.none() | st.fixed_dictionaries({}, optional={"age": w, "colour": w, "zip": w})),
        "ncp_categorical": draw(st.sampled_from(["height", "leaves", "span"])),
        "metric": draw(st.sampled_from(["ncp", "loss"])),
        "suppressed_rows": draw(st.sampled_from(["star", "arx"])),
    }
    alg = draw(st.sampled_from(FULL_DOMAIN))
    models = [KAnonymity(draw(st.integers(2, 5)))] + ([DistinctLDiversity(2)] if draw(st.booleans()) else [])
    sup = draw(st.sampled_from([0.0, 0.1, 0.3]))
    return df, alg, models, sup, opts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=small_cases())
def test_duckdb_equals_memory_with_random_options_on_random_tables(case, tmp_path_factory):
    """Any mix of the options, any full-domain search, automatic hierarchies: the memory engine's result."""
    df, alg, models, sup, opts = case
    d = tmp_path_factory.mktemp("opt")
    df.to_parquet(d / "in.parquet")
    schema = Schema(qis=["age", "colour", "zip"], sensitive=["disease"])
    with DuckDBEngine(memory_limit=256 << 20) as eng:
        _equal_to_memory(df, d / "in.parquet", schema, {}, alg, models, sup, opts, d / "r.parquet", eng)


# ------------------------------------------------------------------------------------------ ppdm check
def _hierarchy_cards(qi: str) -> tuple[dict[str, int], int]:
    """From the ARX hierarchy file of ``qi`` alone: leaves under each label (a label at several levels
    counts at the lowest, where it covers the fewest leaves) and the number of leaves |A|."""
    h = pd.read_csv(DATA / f"adult_hierarchy_{qi}.csv", sep=";", header=None, dtype=str, keep_default_na=False)
    cards: dict[str, int] = {}
    for col in h.columns:
        for label, count in h[col].value_counts().items():
            cards[label] = min(cards.get(label, count), int(count))
    return cards, len(h)


def independent_loss(released: pd.DataFrame, qis, weights: dict[str, float] | None) -> tuple[float, dict]:
    """ARX's Loss of a released table, from its definition (module docstring), in pandas."""
    per = {}
    for q in qis:
        cards, n_leaves = _hierarchy_cards(q)
        card = released[q].astype(str).map(cards)
        assert card.notna().all(), q
        per[q] = math.floor(float(((card - 1) / (n_leaves - 1)).mean()) * 1e10) / 1e10
    w = np.array([1.0 if weights is None else float(weights.get(q, 1.0)) for q in qis])
    w = w / w.max()
    return float(np.prod([(wj * per[q] + 1.0) ** (1.0 / len(qis)) for wj, q in zip(w, qis)]) - 1.0), per


@pytest.fixture(scope="module")
def adult_release(adult, tmp_path_factory):
    """The memory release of Adult (Flash, k = 5, 2-diverse, 5% suppressed with ARX's semantics) as Parquet."""
    df, hs, _ = adult
    mem = anonymize_table(
        df, Schema(ADULT_QIS, [SENS]), hs, "flash", [KAnonymity(5), DistinctLDiversity(2)], 0.05,
        suppressed_rows="arx", n_queries=0,
    )  # fmt: skip
    path = tmp_path_factory.mktemp("release") / "release.parquet"
    mem.df.astype(str).to_parquet(path)
    return path


@pytest.mark.parametrize(
    ("flavour", "weights"), [("height", None), ("span", "age=3,education=0.5,sex=0"), ("leaves", "race=2")]
)
def test_check_on_duckdb_reports_loss_geometric_of_memory_and_of_arx_definition(
    adult_release, capsys, flavour, weights
):
    args = ["check", str(adult_release), "--qi", ",".join(ADULT_QIS), "--sensitive", SENS, "--hierarchies", str(DATA)]
    args += ["--ncp-categorical", flavour, "--json"] + (["--weights", weights] if weights else [])
    reports = {}
    for engine in ("memory", "duckdb"):
        code = main(args + ["--engine", engine])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        reports[engine] = json.loads(captured.out)
    mem, eng = reports["memory"], reports["duckdb"]
    assert eng["engine"]["name"] == "duckdb"
    _close(eng["loss_geometric"], mem["loss_geometric"], "loss_geometric")
    _close(eng["ncp"], mem["ncp"], "ncp")
    for key in ("rows", "k", "dm", "cdm", "classes", "risk", "sensitive_attributes"):
        _close(eng[key], mem[key], key)
    w = None if weights is None else {k: float(v) for k, v in (x.split("=") for x in weights.split(","))}
    loss, per = independent_loss(pd.read_parquet(adult_release), ADULT_QIS, w)
    assert eng["loss_geometric"]["loss"] == pytest.approx(loss, rel=1e-9, abs=1e-12)
    _close(eng["loss_geometric"]["per_attribute"], per, "per_attribute")
    assert 0.0 < loss < 1.0 and eng["ncp"]["categorical"] == flavour and eng["ncp"]["weighted"] == (w is not None)


def test_check_on_duckdb_refuses_a_weight_on_no_quasi_identifier(adult_release, capsys):
    code = main(
        ["check", str(adult_release), "--qi", "age,sex", "--hierarchies", str(DATA), "--weights", "agex=2"]
        + ["--engine", "duckdb"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "no quasi-identifier" in err and err.count("\n") == 1, err


# ----------------------------------------------------------------------------------------------- Spark
@needs_spark
@pytest.mark.parametrize(
    ("alg", "opts"),
    [
        ("flash", {"weights": WEIGHTS, "metric": "loss", "ncp_categorical": "span", "suppressed_rows": "arx"}),
        ("samarati", {"weights": {"race": 4.0}, "ncp_categorical": "leaves"}),
    ],
)
def test_spark_local_equals_memory_with_the_options_on_adult(adult, alg, opts, tmp_path, spark_local):
    """Spark ``local[2]``: the memory engine's node, metrics, release and ``*`` group; and ``ppdm check``'s
    measurement of that release on Spark (NCP in the flavour and weights asked, ARX's Loss) equals memory's."""
    from anonymize.engines.spark_engine import SparkEngine

    df, hs, src = adult
    eng = SparkEngine(session=spark_local)
    out = tmp_path / "r.parquet"
    schema = Schema(qis=ADULT_QIS, sensitive=[SENS])
    both = _equal_to_memory(df, src, schema, hs, alg, [KAnonymity(5), DistinctLDiversity(2)], 0.05, opts, out, eng)
    assert both is not None
    mem, _ = both
    cat, w = opts.get("ncp_categorical", "height"), opts.get("weights")
    got = measure_on_engine(
        eng, TableInput.file(out), ADULT_QIS, [SENS], hierarchies=hs, ncp_categorical=cat, weights=w
    )
    want = release_utility(pd.read_parquet(out), ADULT_QIS, hs, categorical=cat, weights=w)
    _close(got["loss_geometric"], want["loss_geometric"], "loss_geometric")
    _close(got["ncp"], want["ncp"], "ncp")
    assert got["loss_geometric"]["loss"] == pytest.approx(independent_loss(mem.df, ADULT_QIS, w)[0], rel=1e-9)
